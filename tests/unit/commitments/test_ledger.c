/*
 * The commitment ledger (modules/commitments): intake and duplicates, the
 * status transitions of specs/github-commitments.md §2.5, replay (the last
 * status wins; lines from before statuses existed; torn and invalid lines),
 * the bound on open commitments, a failed write, and compaction that never
 * drops an open commitment and never rotates the file away.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/xalloc.h"
#include "modules/commitments/ledger.h"
#include "testutil.h"

struct fx {
	char *dir;
	struct ledger l;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	f->dir = tu_tempdir();
	assert_non_null(f->dir);
	struct ga_err e = {{0}};
	assert_int_equal(ledger_open(&f->l, f->dir, &e), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	ledger_close(&f->l);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void reopen(struct fx *f)
{
	ledger_close(&f->l);
	struct ga_err e = {{0}};
	assert_int_equal(ledger_open(&f->l, f->dir, &e), 0);
}

static int add(struct fx *f, const char *title, int64_t ms, char id[LEDGER_ID_MAX])
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "owner", "acme");
	cJSON_AddStringToObject(p, "repo", "widgets");
	cJSON_AddStringToObject(p, "title", title);
	struct ga_err e = {{0}};
	int rc = ledger_add(&f->l, "create_issue", "owner", p, ms, id, &e);
	cJSON_Delete(p);
	return rc;
}

static int set(struct fx *f, const char *id, enum ledger_status s, int64_t ms, const char *err)
{
	struct ga_err e = {{0}};
	return ledger_set_status(&f->l, id, s, ms, err, &e);
}

static enum ledger_status status_of(struct fx *f, const char *id)
{
	struct ledger_entry le;
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	return le.status;
}

static int lines_of(struct fx *f)
{
	char *s = tu_read(f->dir, LEDGER_FILE);
	assert_non_null(s);
	int n = 0;
	for (char *p = s; *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

static void test_add_and_duplicates(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX], id2[LEDGER_ID_MAX], id3[LEDGER_ID_MAX];
	assert_int_equal(add(f, "Fix the flaky test", 1000, id), LEDGER_ADDED);
	assert_int_equal(strncmp(id, "commitment-1000-", 16), 0);
	assert_int_equal(strlen(id), 16 + 16);
	struct ledger_entry le;
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	assert_string_equal(le.action, "create_issue");
	assert_string_equal(le.source, "owner");
	assert_int_equal(le.status, LEDGER_PENDING);
	assert_int_equal(le.created_ms, 1000);
	assert_int_equal(le.attempts, 0);
	assert_null(le.error);
	assert_string_equal(cJSON_GetObjectItem(le.params, "title")->valuestring,
	                    "Fix the flaky test");
	char *text = tu_read(f->dir, LEDGER_FILE);
	assert_non_null(strstr(text, "\"createdAt\":\"1970-01-01T00:00:01.000Z\",\"action\":"
	                             "\"create_issue\",\"source\":\"owner\",\"status\":\"pending\","
	                             "\"params\":{\"owner\":\"acme\""));
	free(text);

	/* the idempotency key its fulfilment gives the journal */
	char key[LEDGER_IDEM_KEY_MAX];
	ledger_idem_key(id, key);
	char want[128];
	snprintf(want, sizeof want, "commitment:%s", id);
	assert_string_equal(key, want);

	/* the same commitment while it is open: a duplicate, not written */
	assert_int_equal(add(f, "Fix the flaky test", 2000, id2), LEDGER_DUPLICATE);
	assert_string_equal(id2, id);
	assert_int_equal(set(f, id, LEDGER_IN_PROGRESS, 2100, NULL), 0);
	assert_int_equal(add(f, "Fix the flaky test", 2200, id2), LEDGER_DUPLICATE);
	assert_int_equal(set(f, id, LEDGER_FAILED, 2300, "HTTP 502"), 0);
	assert_int_equal(add(f, "Fix the flaky test", 2400, id2), LEDGER_DUPLICATE);
	assert_int_equal(lines_of(f), 3);
	/* a different one is not */
	assert_int_equal(add(f, "Another issue", 2500, id3), LEDGER_ADDED);
	assert_string_not_equal(id3, id);
	/* once closed, the same commitment may be queued again (§2.4) */
	assert_int_equal(set(f, id, LEDGER_ABANDONED, 2600, "owner said stop"), 0);
	assert_int_equal(add(f, "Fix the flaky test", 2600, id2), LEDGER_ADDED);
	assert_string_not_equal(id2, id);
	assert_int_equal(strcmp(id2 + strlen(id2) - 16, id + strlen(id) - 16), 0);
	/* the same key in the same millisecond still gets its own id */
	assert_int_equal(set(f, id2, LEDGER_ABANDONED, 2600, NULL), 0);
	char id4[LEDGER_ID_MAX];
	assert_int_equal(add(f, "Fix the flaky test", 2600, id4), LEDGER_ADDED);
	assert_string_not_equal(id4, id2);
	assert_int_equal(ledger_count(&f->l, LEDGER_PENDING), 2);
	assert_int_equal(ledger_count(&f->l, LEDGER_ABANDONED), 2);
}

static void test_transitions(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX], other[LEDGER_ID_MAX];
	struct ga_err e = {{0}};
	assert_int_equal(add(f, "t", 1, id), LEDGER_ADDED);
	/* pending cannot complete or fail without being started */
	assert_int_equal(ledger_set_status(&f->l, id, LEDGER_COMPLETED, 2, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "is pending; it cannot become completed"));
	assert_int_equal(set(f, id, LEDGER_FAILED, 2, "x"), -1);
	assert_int_equal(set(f, id, LEDGER_PENDING, 2, NULL), 0); /* the same: a no-op */
	assert_int_equal(set(f, id, LEDGER_IN_PROGRESS, 3, NULL), 0);
	assert_int_equal(set(f, id, LEDGER_PENDING, 3, NULL), -1);
	assert_int_equal(set(f, id, LEDGER_FAILED, 4, "HTTP 502"), 0);
	struct ledger_entry le;
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	assert_int_equal(le.attempts, 1);
	assert_string_equal(le.error, "HTTP 502");
	assert_int_equal(le.updated_ms, 4);
	assert_int_equal(set(f, id, LEDGER_COMPLETED, 5, NULL), -1);
	assert_int_equal(set(f, id, LEDGER_IN_PROGRESS, 6, NULL), 0);
	assert_int_equal(set(f, id, LEDGER_COMPLETED, 7, NULL), 0);
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	assert_int_equal(le.status, LEDGER_COMPLETED);
	assert_int_equal(le.attempts, 2);
	assert_null(le.error);
	/* final */
	for (int s = 0; s < LEDGER_STATUS_COUNT; s++)
		if (s != LEDGER_COMPLETED)
			assert_int_equal(set(f, id, (enum ledger_status)s, 8, NULL), -1);
	/* abandoned from pending: no attempt counted */
	assert_int_equal(add(f, "u", 9, other), LEDGER_ADDED);
	assert_int_equal(set(f, other, LEDGER_ABANDONED, 10, "Stale: exceeded 24h threshold"), 0);
	assert_int_equal(ledger_get(&f->l, other, &le), 0);
	assert_int_equal(le.attempts, 0);
	assert_int_equal(set(f, other, LEDGER_IN_PROGRESS, 11, NULL), -1);
	/* unknown ids and statuses */
	assert_int_equal(
	        ledger_set_status(&f->l, "commitment-1-nope", LEDGER_IN_PROGRESS, 1, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "no commitment commitment-1-nope"));
	assert_int_equal(set(f, id, (enum ledger_status)99, 1, NULL), -1);
	assert_int_equal(ledger_get(&f->l, "commitment-1-nope", &le), -1);

	/* every change is a line; replay applies them in order */
	reopen(f);
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	assert_int_equal(le.status, LEDGER_COMPLETED);
	assert_int_equal(le.attempts, 2);
	assert_int_equal(le.updated_ms, 7);
	assert_int_equal(status_of(f, other), LEDGER_ABANDONED);
	assert_int_equal(ledger_get(&f->l, other, &le), 0);
	assert_string_equal(le.error, "Stale: exceeded 24h threshold");

	for (int s = 0; s < LEDGER_STATUS_COUNT; s++) {
		assert_int_equal(ledger_status_parse(ledger_status_name((enum ledger_status)s)), s);
		assert_int_equal(ledger_status_open((enum ledger_status)s),
		                 s == LEDGER_PENDING || s == LEDGER_IN_PROGRESS ||
		                         s == LEDGER_FAILED);
	}
	assert_int_equal(ledger_status_parse("done"), -1);
	assert_int_equal(ledger_status_parse(NULL), -1);
	assert_string_equal(ledger_status_name(LEDGER_IN_PROGRESS), "in_progress");
}

struct walk {
	int n;
	char ids[8][LEDGER_ID_MAX];
	enum ledger_status st[8];
};

static void walk_fn(void *ud, const struct ledger_entry *e)
{
	struct walk *w = ud;
	assert_true(w->n < 8);
	snprintf(w->ids[w->n], LEDGER_ID_MAX, "%s", e->id);
	w->st[w->n++] = e->status;
}

/* What a completed commitment made (its link) is kept: read back after a
 * reopen (the status line's replay) and after a compaction (the item line). */
static void test_link_kept(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX];
	assert_int_equal(add(f, "Login timeout", 1000, id), LEDGER_ADDED);
	struct ga_err e = {{0}};
	assert_int_equal(set(f, id, LEDGER_IN_PROGRESS, 2000, NULL), 0);
	assert_int_equal(ledger_set_result(&f->l, id, LEDGER_COMPLETED, 3000, NULL,
	                                   "https://github.com/acme/widgets/issues/4", &e),
	                 0);
	struct ledger_entry le;
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	assert_string_equal(le.link, "https://github.com/acme/widgets/issues/4");
	reopen(f);
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	assert_string_equal(le.link, "https://github.com/acme/widgets/issues/4");
	assert_int_equal(ledger_compact(&f->l, &e), 0);
	reopen(f);
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	assert_string_equal(le.link, "https://github.com/acme/widgets/issues/4");
	/* a status change without a link keeps the one recorded */
	char id2[LEDGER_ID_MAX];
	assert_int_equal(add(f, "Another", 4000, id2), LEDGER_ADDED);
	assert_int_equal(ledger_get(&f->l, id2, &le), 0);
	assert_null(le.link);
}

static void test_replay_old_torn_and_invalid(void **state)
{
	struct fx *f = *state;
	ledger_close(&f->l);
	/* a ledger written before statuses changed (one line per commitment),
	 * then status lines, junk, and a line cut short by a crash */
	tu_write(f->dir, LEDGER_FILE,
	         "{\"id\":\"commitment-5-aaaaaaaaaaaaaaaa\",\"createdAt\":\"2026-11-22T10:00:00."
	         "000Z\","
	         "\"action\":\"create_issue\",\"source\":\"owner\",\"status\":\"pending\","
	         "\"params\":{\"title\":\"a\"}}\n"
	         "{\"id\":\"commitment-6-bbbbbbbbbbbbbbbb\",\"createdAt\":\"2026-11-22T10:00:01."
	         "000Z\","
	         "\"action\":\"comment_issue\",\"source\":\"owner\",\"status\":\"pending\","
	         "\"params\":{}}\n"
	         "{\"id\":\"commitment-6-bbbbbbbbbbbbbbbb\",\"status\":\"in_progress\",\"ms\":7}\n"
	         "{\"id\":\"commitment-6-bbbbbbbbbbbbbbbb\",\"status\":\"completed\",\"ms\":8}\n"
	         "{\"id\":\"commitment-5-aaaaaaaaaaaaaaaa\",\"status\":\"completed\",\"ms\":9}\n"
	         "{\"id\":\"commitment-5-aaaaaaaaaaaaaaaa\",\"status\":\"exploded\"}\n"
	         "{\"id\":\"has space\",\"action\":\"x\",\"status\":\"pending\"}\n"
	         "{\"status\":\"pending\"}\n"
	         "not json\n"
	         "{\"id\":\"commitment-9-cccccccccccccccc\",\"action\":\"post_bl");
	struct ga_err e = {{0}};
	assert_int_equal(ledger_open(&f->l, f->dir, &e), 0);
	struct walk w = {0};
	assert_int_equal(ledger_each(&f->l, walk_fn, &w), 2);
	assert_string_equal(w.ids[0], "commitment-5-aaaaaaaaaaaaaaaa");
	assert_string_equal(w.ids[1], "commitment-6-bbbbbbbbbbbbbbbb");
	/* pending → completed directly is refused on replay as in the API */
	assert_int_equal(w.st[0], LEDGER_PENDING);
	assert_int_equal(w.st[1], LEDGER_COMPLETED);
	struct ledger_entry le;
	assert_int_equal(ledger_get(&f->l, "commitment-6-bbbbbbbbbbbbbbbb", &le), 0);
	assert_int_equal(le.attempts, 1);
	assert_int_equal(le.updated_ms, 8);
	assert_int_equal(le.created_ms, 1795341601000LL);
	/* duplicates are checked against what was replayed */
	char id[LEDGER_ID_MAX];
	cJSON *p = cJSON_Parse("{\"title\":\"a\"}");
	/* (the old key is not this content's hash, so this is a new one) */
	assert_int_equal(ledger_add(&f->l, "create_issue", "owner", p, 10, id, &e), LEDGER_ADDED);
	assert_int_equal(ledger_add(&f->l, "create_issue", "owner", p, 11, id, &e),
	                 LEDGER_DUPLICATE);
	cJSON_Delete(p);
	/* the cut line was ended: the new line survives a replay */
	char *text = tu_read(f->dir, LEDGER_FILE);
	assert_non_null(strstr(text, "\"post_bl\n{\"id\":\"commitment-10-"));
	free(text);
	reopen(f);
	assert_int_equal(ledger_count(&f->l, LEDGER_PENDING), 2);
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
}

static void test_open_bound(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX], first[LEDGER_ID_MAX], title[32];
	for (int i = 0; i < LEDGER_MAX_OPEN; i++) {
		snprintf(title, sizeof title, "t%d", i);
		assert_int_equal(add(f, title, i, i ? id : first), LEDGER_ADDED);
	}
	struct ga_err e = {{0}};
	cJSON *p = cJSON_CreateObject();
	assert_int_equal(ledger_add(&f->l, "create_issue", "owner", p, 5000, id, &e), -1);
	assert_non_null(strstr(e.msg, "1024 commitments are already open"));
	assert_string_equal(id, "");
	/* a duplicate of an open one is still recognised */
	assert_int_equal(add(f, "t5", 5000, id), LEDGER_DUPLICATE);
	/* closing one makes room */
	assert_int_equal(set(f, first, LEDGER_ABANDONED, 5001, NULL), 0);
	assert_int_equal(ledger_add(&f->l, "create_issue", "owner", p, 5002, id, &e), LEDGER_ADDED);
	cJSON_Delete(p);
	reopen(f);
	assert_int_equal(ledger_count(&f->l, LEDGER_PENDING), LEDGER_MAX_OPEN);
	assert_int_equal(ledger_count(&f->l, LEDGER_ABANDONED), 1);
}

static void test_bad_input(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX];
	struct ga_err e = {{0}};
	assert_int_equal(ledger_add(&f->l, "", "owner", NULL, 1, id, &e), -1);
	assert_non_null(strstr(e.msg, "action"));
	assert_int_equal(ledger_add(&f->l, "create_issue", NULL, NULL, 1, id, &e), -1);
	assert_non_null(strstr(e.msg, "source"));
	assert_int_equal(ledger_add(&f->l, "create\xff", "owner", NULL, 1, id, &e), -1);
	assert_non_null(strstr(e.msg, "UTF-8"));
	char *big = xmalloc(LEDGER_PARAMS_MAX + 1);
	memset(big, 'b', LEDGER_PARAMS_MAX);
	big[LEDGER_PARAMS_MAX] = '\0';
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "body", big);
	assert_int_equal(ledger_add(&f->l, "create_issue", "owner", p, 1, id, &e), -1);
	assert_non_null(strstr(e.msg, "byte limit"));
	cJSON_Delete(p);
	/* an error text is cut at LEDGER_ERROR_MAX */
	assert_int_equal(ledger_add(&f->l, "create_issue", "owner", NULL, 1, id, &e), LEDGER_ADDED);
	assert_int_equal(set(f, id, LEDGER_ABANDONED, 2, big), 0);
	struct ledger_entry le;
	assert_int_equal(ledger_get(&f->l, id, &le), 0);
	assert_int_equal(strlen(le.error), LEDGER_ERROR_MAX);
	free(big);
	assert_int_equal(lines_of(f), 2);

	/* a ledger that could not be opened refuses, naming why */
	struct ledger broken;
	char *path = xasprintf("%s/plain", f->dir);
	tu_write(f->dir, "plain", "x");
	assert_int_equal(ledger_open(&broken, path, &e), -1);
	assert_int_equal(ledger_add(&broken, "create_issue", "owner", NULL, 1, id, &e), -1);
	assert_non_null(strstr(e.msg, "could not be opened"));
	assert_int_equal(ledger_set_status(&broken, id, LEDGER_IN_PROGRESS, 1, NULL, &e), -1);
	ledger_close(&broken);
	ledger_close(NULL);
	free(path);
}

static void test_compaction_keeps_open(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX], title[32];
	char open_ids[20][LEDGER_ID_MAX];
	int nopen = 0;
	int total = LEDGER_KEEP_CLOSED + 200;
	for (int i = 0; i < total; i++) {
		snprintf(title, sizeof title, "c%d", i);
		assert_int_equal(add(f, title, i, id), LEDGER_ADDED);
		if (i % 25 == 0) {
			/* every 25th stays open (pending, in progress or failed) */
			if (i % 75 == 25) {
				assert_int_equal(set(f, id, LEDGER_IN_PROGRESS, i, NULL), 0);
			} else if (i % 75 == 50) {
				assert_int_equal(set(f, id, LEDGER_IN_PROGRESS, i, NULL), 0);
				assert_int_equal(set(f, id, LEDGER_FAILED, i, "boom"), 0);
			}
			snprintf(open_ids[nopen++], LEDGER_ID_MAX, "%s", id);
			continue;
		}
		assert_int_equal(set(f, id, LEDGER_IN_PROGRESS, i, NULL), 0);
		assert_int_equal(set(f, id, LEDGER_COMPLETED, i, NULL), 0);
	}
	/* memory holds every open one and the newest closed ones */
	size_t closed = ledger_count(&f->l, LEDGER_COMPLETED);
	assert_int_equal(closed, LEDGER_KEEP_CLOSED);
	size_t before = ledger_file_bytes(&f->l);
	struct ga_err e = {{0}};
	assert_int_equal(ledger_compact(&f->l, &e), 0);
	assert_true(ledger_file_bytes(&f->l) < before);
	assert_int_equal(lines_of(f), nopen + LEDGER_KEEP_CLOSED);
	reopen(f);
	for (int i = 0; i < nopen; i++) {
		struct ledger_entry le;
		assert_int_equal(ledger_get(&f->l, open_ids[i], &le), 0);
		assert_true(ledger_status_open(le.status));
	}
	assert_int_equal(ledger_count(&f->l, LEDGER_IN_PROGRESS), 6);
	assert_int_equal(ledger_count(&f->l, LEDGER_FAILED), 6);
	assert_int_equal(ledger_count(&f->l, LEDGER_PENDING), nopen - 12);
	assert_int_equal(ledger_count(&f->l, LEDGER_COMPLETED), LEDGER_KEEP_CLOSED);
	struct ledger_entry le;
	assert_int_equal(ledger_get(&f->l, open_ids[2], &le), 0);
	assert_int_equal(le.status, LEDGER_FAILED);
	assert_int_equal(le.attempts, 1);
	assert_string_equal(le.error, "boom");
	/* a retry of the compacted failed one continues from there */
	assert_int_equal(set(f, open_ids[2], LEDGER_IN_PROGRESS, 9000, NULL), 0);
	assert_int_equal(set(f, open_ids[2], LEDGER_COMPLETED, 9001, NULL), 0);
	assert_int_equal(ledger_get(&f->l, open_ids[2], &le), 0);
	assert_int_equal(le.attempts, 2);
}

static void test_automatic_compaction_never_rotates(void **state)
{
	struct fx *f = *state;
	char *body = xmalloc(60001);
	memset(body, 'b', 60000);
	body[60000] = '\0';
	char id[LEDGER_ID_MAX], first[LEDGER_ID_MAX];
	struct ga_err e = {{0}};
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "title", "the first promise");
	assert_int_equal(ledger_add(&f->l, "create_issue", "owner", p, 0, first, &e), LEDGER_ADDED);
	cJSON_Delete(p);
	int i = 0;
	size_t last = ledger_file_bytes(&f->l);
	bool shrank = false;
	/* large commitments, each completed: past LEDGER_MAX_BYTES the file is
	 * compacted (it shrinks), and the open one is still there */
	while (!shrank) {
		assert_true(i < 400);
		p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "n", i);
		cJSON_AddStringToObject(p, "body", body);
		assert_int_equal(ledger_add(&f->l, "post_bluesky", "owner", p, ++i, id, &e),
		                 LEDGER_ADDED);
		cJSON_Delete(p);
		assert_int_equal(set(f, id, LEDGER_IN_PROGRESS, i, NULL), 0);
		assert_int_equal(set(f, id, LEDGER_COMPLETED, i, NULL), 0);
		shrank = ledger_file_bytes(&f->l) < last;
		last = ledger_file_bytes(&f->l);
	}
	free(body);
	assert_true(i * 60000 > LEDGER_MAX_BYTES);
	assert_true(ledger_file_bytes(&f->l) <= (size_t)(LEDGER_KEEP_CLOSED + 2) * 61000);
	char *rotated = xasprintf("%s/%s.1", f->dir, LEDGER_FILE);
	struct stat st;
	assert_int_equal(stat(rotated, &st), -1);
	free(rotated);
	reopen(f);
	assert_int_equal(status_of(f, first), LEDGER_PENDING);
	assert_int_equal(ledger_count(&f->l, LEDGER_PENDING), 1);
}

/* A write that fails records nothing and leaves no partial line behind.
 * RLIMIT_FSIZE makes write(2) fail with EFBIG, even for root. */
static void test_failed_write(void **state)
{
	struct fx *f = *state;
	char id[LEDGER_ID_MAX], lost[LEDGER_ID_MAX];
	assert_int_equal(add(f, "kept", 1, id), LEDGER_ADDED);
	size_t bytes = ledger_file_bytes(&f->l);
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = bytes + 20; /* room for part of the next line */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int rc = add(f, "lost", 2, lost);
	struct ga_err e = {{0}};
	int rc2 = ledger_set_status(&f->l, id, LEDGER_IN_PROGRESS, 3, NULL, &e);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, -1);
	assert_int_equal(rc2, -1);
	assert_non_null(strstr(e.msg, LEDGER_FILE));
	assert_int_equal(ledger_count(&f->l, LEDGER_PENDING), 1);
	assert_int_equal(status_of(f, id), LEDGER_PENDING);
	assert_int_equal(ledger_file_bytes(&f->l), bytes);
	assert_int_equal(add(f, "after", 4, lost), LEDGER_ADDED);
	reopen(f);
	assert_int_equal(ledger_count(&f->l, LEDGER_PENDING), 2);
	assert_int_equal(lines_of(f), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_link_kept, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_add_and_duplicates, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_transitions, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_replay_old_torn_and_invalid, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_open_bound, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_compaction_keeps_open, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_failed_write, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_automatic_compaction_never_rotates, setup,
	                                        teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
