/* The decision log: the exact line on disk, rotation and reading back in
 * order, torn and foreign lines skipped, subscribers (also changed from
 * inside a callback), the ring's bound, a write failure that is not fatal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "modules/decisions/log.h"
#include "testutil.h"

#define T0 1795428062345LL /* 2026-11-23T10:01:02.345Z */

struct fx {
	char *dir;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	f->dir = tu_tempdir();
	log_set_level(LOG_LEVEL_OFF);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static struct decision_log *open_log(struct fx *f, size_t max)
{
	struct ga_err err = {{0}};
	struct decision_log *log = decision_log_open_sized(f->dir, max, &err);
	assert_non_null(log);
	return log;
}

/* Appends decision number n about message "space:m<n % ids>". */
static void add_n(struct decision_log *log, int n, int ids)
{
	char mid[32];
	snprintf(mid, sizeof mid, "space:m%d", ids ? n % ids : n);
	struct decision d;
	decision_set(&d, VERDICT_PASS, "seq", "decision %d", n);
	assert_int_equal(decision_log_add(log, T0 + n, "space", "space:room", mid, STAGE_GATE, &d),
	                 0);
}

static void test_line_exact(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = open_log(f, 0);
	struct decision d;
	decision_set(&d, VERDICT_BLOCK, "chain_length",
	             "chain 5 > MAX_ACL 4: blocked, \"not\" even\na reaction");
	struct decision_record r = {.time_ms = T0,
	                            .platform = "space",
	                            .conversation = "space:room",
	                            .message_id = "space:ab12",
	                            .stage = STAGE_GATE,
	                            .decision = d};
	assert_int_equal(decision_log_append(log, &r), 0);
	/* invalid UTF-8 becomes U+FFFD; NULL strings become "" */
	struct decision_record r2 = {.time_ms = T0 + 1000,
	                             .platform = "owner",
	                             .conversation = "owner:\xFFterm",
	                             .message_id = NULL,
	                             .stage = STAGE_RECORD};
	decision_set(&r2.decision, VERDICT_SENT, NULL, "ok");
	assert_int_equal(decision_log_append(log, &r2), 0);
	decision_log_close(log);
	char *text = tu_read(f->dir, "decisions.jsonl");
	assert_non_null(text);
	assert_string_equal(
	        text,
	        "{\"time\":\"2026-11-23T10:01:02.345Z\",\"platform\":\"space\",\"conversation\":"
	        "\"space:room\",\"messageId\":\"space:ab12\",\"stage\":\"gate\",\"verdict\":"
	        "\"block\",\"rule\":\"chain_length\",\"reason\":\"chain 5 > MAX_ACL 4: blocked, "
	        "\\\"not\\\" even\\na reaction\"}\n"
	        "{\"time\":\"2026-11-23T10:01:03.345Z\",\"platform\":\"owner\",\"conversation\":"
	        "\"owner:\xEF\xBF\xBDterm\",\"messageId\":\"\",\"stage\":\"record\",\"verdict\":"
	        "\"sent\",\"rule\":\"\",\"reason\":\"ok\"}\n");
	free(text);
}

struct collected {
	int seq[4096];
	int n;
	char mids[8][32];
};

static int collect(void *ud, const struct decision_record *r)
{
	struct collected *c = ud;
	int n = -1;
	sscanf(r->decision.reason, "decision %d", &n);
	assert_true(n >= 0);
	assert_int_equal(r->time_ms, T0 + n);
	assert_string_equal(r->platform, "space");
	assert_string_equal(r->decision.rule, "seq");
	assert_int_equal(r->stage, STAGE_GATE);
	if (c->n < 8)
		snprintf(c->mids[c->n], sizeof c->mids[0], "%s", r->message_id);
	c->seq[c->n++] = n;
	return 0;
}

static off_t file_size(const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	struct stat st;
	return stat(p, &st) == 0 ? st.st_size : -1;
}

static void test_rotation_keeps_backups_in_order(void **state)
{
	struct fx *f = *state;
	const size_t max = 600; /* a line is ~190 bytes: 3 per file */
	struct decision_log *log = open_log(f, max);
	for (int i = 0; i < 40; i++)
		add_n(log, i, 0);
	decision_log_close(log);
	assert_true(file_size(f->dir, "decisions.jsonl") > 0);
	assert_true(file_size(f->dir, "decisions.jsonl") <= (off_t)max);
	for (int k = 1; k <= DECISION_LOG_KEEP; k++) {
		char name[64];
		snprintf(name, sizeof name, "decisions.jsonl.%d", k);
		off_t sz = file_size(f->dir, name);
		assert_true(sz > 0 && sz <= (off_t)max);
	}
	assert_int_equal(file_size(f->dir, "decisions.jsonl.4"), -1);

	struct collected c = {0};
	struct ga_err err = {{0}};
	assert_int_equal(decision_log_read(f->dir, NULL, collect, &c, &err), 0);
	/* what is kept is a contiguous run ending at the last decision */
	assert_true(c.n >= 4 * 2 && c.n < 40);
	for (int i = 0; i < c.n; i++)
		assert_int_equal(c.seq[i], 40 - c.n + i);
}

static void test_read_filters_by_message(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = open_log(f, 0);
	for (int i = 0; i < 9; i++)
		add_n(log, i, 3); /* m0 m1 m2 m0 m1 m2 ... */
	decision_log_close(log);
	struct collected c = {0};
	assert_int_equal(decision_log_read(f->dir, "space:m1", collect, &c, NULL), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.seq[0], 1);
	assert_int_equal(c.seq[1], 4);
	assert_int_equal(c.seq[2], 7);
	c.n = 0;
	assert_int_equal(decision_log_read(f->dir, "space:m", collect, &c, NULL), 0);
	assert_int_equal(c.n, 0); /* exact, not a prefix */
}

static int stop_after_two(void *ud, const struct decision_record *r)
{
	return ++*(int *)ud == 2;
}

static void test_read_skips_torn_and_foreign_lines(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = open_log(f, 0);
	add_n(log, 0, 0);
	decision_log_close(log);
	char *good = tu_read(f->dir, "decisions.jsonl");
	char *content = NULL;
	/* good; not JSON; JSON but not a record; unknown verdict; good; torn */
	char *good2 = strdup(good);
	char *p = strstr(good2, "decision 0");
	p[9] = '1';
	p = strstr(good2, ".345Z");
	p[3] = '6'; /* time +1 ms to match decision 1 */
	char *bad_verdict = strdup(good);
	p = strstr(bad_verdict, "\"pass\"");
	memcpy(p + 1, "pas!", 4);
	assert_true(asprintf(&content, "%s{not json\n{\"a\":1}\n%s\n%s{\"time\":\"2026-11", good,
	                     bad_verdict, good2) > 0);
	tu_write(f->dir, "decisions.jsonl", content);
	struct collected c = {0};
	assert_int_equal(decision_log_read(f->dir, NULL, collect, &c, NULL), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.seq[0], 0);
	assert_int_equal(c.seq[1], 1);
	/* the callback can stop the walk */
	int seen = 0;
	assert_int_equal(decision_log_read(f->dir, NULL, stop_after_two, &seen, NULL), 0);
	assert_int_equal(seen, 2);
	free(content);
	free(good);
	free(good2);
	free(bad_verdict);
}

static void test_read_missing_dir_is_empty(void **state)
{
	struct fx *f = *state;
	char p[1024];
	snprintf(p, sizeof p, "%s/nope", f->dir);
	struct collected c = {0};
	assert_int_equal(decision_log_read(p, NULL, collect, &c, NULL), 0);
	assert_int_equal(c.n, 0);
}

/* ---- subscribers ---- */

struct sub {
	struct decision_log *log;
	int id;
	int calls;
	int last_seq;
	int unsubscribe_id; /* unsubscribe this id when called (0: none) */
	bool subscribe_new;
	struct sub *new_sub;
	bool close_log;
};

static void on_decision(void *ud, const struct decision_record *r)
{
	struct sub *s = ud;
	s->calls++;
	sscanf(r->decision.reason, "decision %d", &s->last_seq);
	if (s->unsubscribe_id) {
		decision_log_unsubscribe(s->log, s->unsubscribe_id);
		s->unsubscribe_id = 0;
	}
	if (s->subscribe_new) {
		s->subscribe_new = false;
		s->new_sub->id = decision_log_subscribe(s->log, on_decision, s->new_sub);
	}
	if (s->close_log)
		decision_log_close(s->log);
}

static void test_subscribers(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = open_log(f, 0);
	struct sub a = {.log = log}, b = {.log = log}, c = {.log = log}, d = {.log = log},
	           e = {.log = log};
	a.id = decision_log_subscribe(log, on_decision, &a);
	b.id = decision_log_subscribe(log, on_decision, &b);
	c.id = decision_log_subscribe(log, on_decision, &c);
	assert_true(a.id >= 1 && b.id >= 1 && c.id >= 1 && a.id != b.id && b.id != c.id);
	add_n(log, 1, 0);
	assert_int_equal(a.calls, 1);
	assert_int_equal(b.calls, 1);
	assert_int_equal(c.calls, 1);
	assert_int_equal(a.last_seq, 1);

	/* b unsubscribes c, which comes after it, before c is reached */
	b.unsubscribe_id = c.id;
	add_n(log, 2, 0);
	assert_int_equal(b.calls, 2);
	assert_int_equal(c.calls, 1);

	/* a unsubscribes itself from inside its callback; b still called */
	a.unsubscribe_id = a.id;
	add_n(log, 3, 0);
	assert_int_equal(a.calls, 3);
	assert_int_equal(b.calls, 3);
	add_n(log, 4, 0);
	assert_int_equal(a.calls, 3);
	assert_int_equal(b.calls, 4);
	assert_int_equal(b.last_seq, 4);

	/* subscribing from inside a callback: from the next decision on, even
	 * when the new one takes a slot the walk has not reached yet (e takes
	 * the free slot before b, so d gets the one after it) */
	e.id = decision_log_subscribe(log, on_decision, &e);
	b.subscribe_new = true;
	b.new_sub = &d;
	add_n(log, 5, 0);
	assert_true(d.id >= 1);
	assert_int_equal(e.calls, 1);
	assert_int_equal(d.calls, 0);
	add_n(log, 6, 0);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.last_seq, 6);
	assert_int_equal(c.calls, 1);

	/* unknown ids are ignored */
	decision_log_unsubscribe(log, 9999);
	decision_log_unsubscribe(log, -1);
	decision_log_unsubscribe(NULL, 1);
	add_n(log, 7, 0);
	assert_int_equal(b.calls, 7);
	assert_int_equal(d.calls, 2);
	decision_log_close(log);
}

static void test_subscriber_limit(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = open_log(f, 0);
	struct sub s[DECISION_LOG_MAX_SUBSCRIBERS + 1];
	memset(s, 0, sizeof s);
	for (int i = 0; i < DECISION_LOG_MAX_SUBSCRIBERS; i++)
		assert_true(decision_log_subscribe(log, on_decision, &s[i]) >= 1);
	assert_int_equal(decision_log_subscribe(log, on_decision, &s[DECISION_LOG_MAX_SUBSCRIBERS]),
	                 -1);
	assert_int_equal(decision_log_subscribe(log, NULL, NULL), -1);
	assert_int_equal(decision_log_subscribe(NULL, on_decision, NULL), -1);
	decision_log_unsubscribe(log, 3);
	int id = decision_log_subscribe(log, on_decision, &s[DECISION_LOG_MAX_SUBSCRIBERS]);
	assert_true(id > DECISION_LOG_MAX_SUBSCRIBERS);
	add_n(log, 1, 0);
	for (int i = 0; i <= DECISION_LOG_MAX_SUBSCRIBERS; i++)
		assert_int_equal(s[i].calls, i == 2 ? 0 : 1);
	decision_log_close(log);
}

static void test_close_from_callback(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = open_log(f, 0);
	struct sub a = {.log = log, .close_log = true}, b = {.log = log};
	decision_log_subscribe(log, on_decision, &a);
	decision_log_subscribe(log, on_decision, &b);
	add_n(log, 1, 0); /* freed when this returns (ASan checks) */
	assert_int_equal(a.calls, 1);
	assert_int_equal(b.calls, 0); /* closed: the walk stops */
	decision_log_close(NULL);
	assert_int_equal(decision_log_append(NULL, NULL), 0);
}

/* ---- the ring ---- */

static void ring_collect(void *ud, const struct decision_record *r)
{
	struct collected *c = ud;
	sscanf(r->decision.reason, "decision %d", &c->seq[c->n]);
	assert_int_equal(r->time_ms, T0 + c->seq[c->n]);
	c->n++;
}

static void test_ring_bound(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = open_log(f, 0);
	struct collected c = {0};
	assert_int_equal(decision_log_recent(log, 0, ring_collect, &c), 0);
	for (int i = 0; i < 5; i++)
		add_n(log, i, 0);
	assert_int_equal(decision_log_recent(log, 0, ring_collect, &c), 5);
	assert_int_equal(c.seq[0], 0);
	assert_int_equal(c.seq[4], 4);
	for (int i = 5; i < DECISION_LOG_RECENT + 44; i++)
		add_n(log, i, 0);
	c.n = 0;
	assert_int_equal(decision_log_recent(log, 0, ring_collect, &c), DECISION_LOG_RECENT);
	for (int i = 0; i < DECISION_LOG_RECENT; i++)
		assert_int_equal(c.seq[i], 44 + i);
	c.n = 0;
	assert_int_equal(decision_log_recent(log, 10, ring_collect, &c), 10);
	assert_int_equal(c.seq[0], DECISION_LOG_RECENT + 34);
	assert_int_equal(c.seq[9], DECISION_LOG_RECENT + 43);
	c.n = 0;
	assert_int_equal(decision_log_recent(log, 100000, ring_collect, &c), DECISION_LOG_RECENT);
	decision_log_close(log);
}

/* A failed write is reported, not fatal: subscribers and the ring still
 * have the decision, and the log works again once the file can be written. */
static void test_write_failure_not_fatal(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = open_log(f, 0);
	struct sub a = {.log = log};
	decision_log_subscribe(log, on_decision, &a);
	char p[1024];
	snprintf(p, sizeof p, "%s/decisions.jsonl", f->dir);
	assert_int_equal(mkdir(p, 0700), 0); /* the file is a directory: open fails */
	FILE *logf = tmpfile();
	log_init(LOG_LEVEL_DEBUG, 0, logf);
	struct decision d;
	decision_set(&d, VERDICT_INFO, "seq", "decision 1");
	assert_int_equal(decision_log_add(log, T0 + 1, "space", "c", "m", STAGE_GATE, &d), -1);
	assert_int_equal(decision_log_add(log, T0 + 1, "space", "c", "m", STAGE_GATE, &d), -1);
	assert_int_equal(decision_log_add(log, T0 + 1, "space", "c", "m", STAGE_GATE, &d), -1);
	log_init(LOG_LEVEL_OFF, 0, NULL);
	/* one warning for three failures (at most one a minute); every
	 * decision at DEBUG */
	fflush(logf);
	rewind(logf);
	char line[4096];
	int warnings = 0, debug = 0;
	while (fgets(line, sizeof line, logf)) {
		warnings += strstr(line, "cannot write the decision log") != NULL;
		debug += strstr(line, "DEBUG") && strstr(line, "decision 1") &&
		         strstr(line, "rule=seq");
	}
	fclose(logf);
	assert_int_equal(warnings, 1);
	assert_int_equal(debug, 3);
	assert_int_equal(a.calls, 3);
	struct collected c = {0};
	assert_int_equal(decision_log_recent(log, 0, ring_collect, &c), 3);
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(decision_log_add(log, T0 + 1, "space", "c", "m", STAGE_GATE, &d), 0);
	decision_log_close(log);
	char *text = tu_read(f->dir, "decisions.jsonl");
	assert_non_null(strstr(text, "decision 1"));
	free(text);
}

static void test_open_errors(void **state)
{
	struct ga_err err = {{0}};
	assert_null(decision_log_open(NULL, &err));
	assert_true(err.msg[0] != '\0');
	err.msg[0] = '\0';
	assert_null(decision_log_open("/proc/no/such/dir", &err));
	assert_true(err.msg[0] != '\0');
}

static void test_record_json_round_trip(void **state)
{
	struct decision_record r = {.time_ms = T0,
	                            .platform = "github",
	                            .conversation = "github:o/r#1",
	                            .message_id = "github:o/r#1/c9",
	                            .stage = STAGE_VALIDATOR};
	decision_set(&r.decision, VERDICT_EDIT, "courtesy",
	             "trimmed \xE2\x80\x94 and courtesy added");
	cJSON *j = decision_record_to_json(&r);
	struct decision_record back;
	assert_int_equal(decision_record_from_json(j, &back), 0);
	assert_int_equal(back.time_ms, T0);
	assert_string_equal(back.platform, "github");
	assert_string_equal(back.conversation, "github:o/r#1");
	assert_string_equal(back.message_id, "github:o/r#1/c9");
	assert_int_equal(back.stage, STAGE_VALIDATOR);
	assert_int_equal(back.decision.verdict, VERDICT_EDIT);
	assert_string_equal(back.decision.rule, "courtesy");
	assert_string_equal(back.decision.reason, r.decision.reason);
	/* each field missing or mistyped → not a record */
	static const char *const fields[] = {"time",  "platform", "conversation", "messageId",
	                                     "stage", "verdict",  "rule",         "reason"};
	for (size_t i = 0; i < 8; i++) {
		cJSON *k = cJSON_Duplicate(j, 1);
		cJSON_DeleteItemFromObject(k, fields[i]);
		assert_int_equal(decision_record_from_json(k, &back), -1);
		cJSON_AddNumberToObject(k, fields[i], 1);
		assert_int_equal(decision_record_from_json(k, &back), -1);
		cJSON_Delete(k);
	}
	cJSON *k = cJSON_Duplicate(j, 1);
	cJSON_ReplaceItemInObject(k, "time", cJSON_CreateString("yesterday"));
	assert_int_equal(decision_record_from_json(k, &back), -1);
	cJSON_Delete(k);
	assert_int_equal(decision_record_from_json(NULL, &back), -1);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_line_exact, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_rotation_keeps_backups_in_order, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_read_filters_by_message, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_read_skips_torn_and_foreign_lines, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_read_missing_dir_is_empty, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_subscribers, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_subscriber_limit, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_close_from_callback, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_ring_bound, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_write_failure_not_fatal, setup, teardown),
	        cmocka_unit_test(test_open_errors),
	        cmocka_unit_test(test_record_json_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
