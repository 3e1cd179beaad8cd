/*
 * The outbound stage on a real libuv loop with a test port: the order of the
 * steps (a denied send never reaches dedup or the port; a dedup drop is
 * still an audited attempt), pacing, the bounded queue, platform limits, the
 * courtesy notice and the marker alone at the limit, the GitHub marker in
 * the text, port failures, close with queued and in-flight sends.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/fsx.h"
#include "common/xalloc.h"
#include "modules/outbound/audit.h"
#include "modules/outbound/outbound.h"
#include "modules/outbound/perms.h"
#include "testutil.h"

#define MAX_SENDS     64
#define MAX_DECISIONS 512

struct sent {
	char *target, *text, *key;
	size_t len;
	int64_t chain;
	uint64_t at; /* uv_now when the port was called */
	char extra[64];
};

struct completion {
	uv_timer_t timer;
	outbound_port_done_fn done;
	void *done_ud;
	int ok;
	int n;
};

struct fixture {
	uv_loop_t loop;
	char *dir;
	struct outbound *ob;
	/* the port */
	struct sent sends[MAX_SENDS];
	int nsends;
	int fail_all;      /* done(ok = 0) */
	int refuse_start;  /* send returns -1 */
	uint64_t delay_ms; /* how long a send takes */
	/* what the stage said */
	struct {
		const char *rule;
		enum decision_verdict v;
		char reason[DECISION_REASON_MAX];
	} dec[MAX_DECISIONS];
	int ndec;
	int nfinal;
	struct decision last_final;
	char last_artifact[64];
	bool closed;
};

static void on_completion_closed(uv_handle_t *h)
{
	free(h->data);
}

static void complete(uv_timer_t *t)
{
	struct completion *c = t->data;
	char artifact[32];
	snprintf(artifact, sizeof artifact, "artifact-%d", c->n);
	c->done(c->done_ud, c->ok, c->ok ? artifact : NULL,
	        c->ok ? NULL : "HTTP 502 from the test");
	uv_close((uv_handle_t *)t, on_completion_closed);
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct fixture *f = ud;
	if (f->refuse_start)
		return -1;
	assert_true(f->nsends < MAX_SENDS);
	struct sent *r = &f->sends[f->nsends++];
	r->target = xstrdup(s->target);
	r->text = xstrndup(s->text, s->text_len);
	r->len = s->text_len;
	r->key = xstrdup(s->idem_key);
	r->chain = s->chain;
	r->at = uv_now(&f->loop);
	const cJSON *ref = s->extra ? cJSON_GetObjectItem(s->extra, "ref") : NULL;
	snprintf(r->extra, sizeof r->extra, "%s", cJSON_IsString(ref) ? ref->valuestring : "");
	struct completion *c = xcalloc(1, sizeof *c);
	c->done = done;
	c->done_ud = done_ud;
	c->ok = !f->fail_all;
	c->n = f->nsends;
	uv_timer_init(&f->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, complete, f->delay_ms, 0);
	return 0;
}

static void on_decision(void *ud, const struct outbound_msg *m, const struct decision *d)
{
	(void)m;
	struct fixture *f = ud;
	assert_true(f->ndec < MAX_DECISIONS);
	f->dec[f->ndec].rule = d->rule;
	f->dec[f->ndec].v = d->verdict;
	snprintf(f->dec[f->ndec].reason, DECISION_REASON_MAX, "%s", d->reason);
	f->ndec++;
}

static void on_final(void *ud, const struct decision *d, const char *artifact)
{
	struct fixture *f = ud;
	f->nfinal++;
	f->last_final = *d;
	snprintf(f->last_artifact, sizeof f->last_artifact, "%s", artifact ? artifact : "");
}

static void add_port(struct fixture *f, enum conv_platform p, uint64_t interval, bool marker)
{
	struct outbound_port port = {.platform = p,
	                             .send = port_send,
	                             .min_interval_ms = interval,
	                             .marker_in_text = marker,
	                             .ud = f};
	struct ga_err e;
	assert_int_equal(outbound_add_port(f->ob, &port, &e), 0);
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof *f);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->dir = tu_tempdir();
	struct outbound_config cfg = {
	        .memory_dir = f->dir, .agent_name = "ada", .on_decision = on_decision, .ud = f};
	struct ga_err e;
	f->ob = outbound_new(&f->loop, &cfg, &e);
	assert_non_null(f->ob);
	add_port(f, CONV_PLATFORM_SPACE, 0, false);
	add_port(f, CONV_PLATFORM_BLUESKY, 0, false);
	add_port(f, CONV_PLATFORM_GITHUB, 0, true);
	*state = f;
	return 0;
}

static void on_closed(void *ud)
{
	((struct fixture *)ud)->closed = true;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->ob)
		outbound_close(f->ob, on_closed, f);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_true(f->closed);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	for (int i = 0; i < f->nsends; i++) {
		free(f->sends[i].target);
		free(f->sends[i].text);
		free(f->sends[i].key);
	}
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void submit(struct fixture *f, enum conv_platform p, const char *target, const char *text,
                   int64_t chain, bool courtesy)
{
	struct outbound_msg m = {.platform = p,
	                         .target = target,
	                         .source = conv_platform_name(p),
	                         .conversation = "space:room",
	                         .message_id = "space:m1",
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = chain,
	                         .courtesy = courtesy};
	outbound_submit(f->ob, &m, on_final, f);
}

static void run(struct fixture *f)
{
	uv_run(&f->loop, UV_RUN_DEFAULT);
}

static void set_allowlist(struct fixture *f, const char *pattern)
{
	struct perms *p = perms_new();
	struct ga_err e;
	perms_set_mode(p, PERMS_ALLOWLIST);
	assert_int_equal(perms_add(p, PERMS_LIST_ALLOW, pattern, &e), 1);
	char *path = fsx_join(f->dir, PERMS_FILE_NAME);
	assert_int_equal(perms_save(p, path, &e), 0);
	free(path);
	perms_free(p);
}

static void test_order_of_a_sent_message(void **state)
{
	struct fixture *f = *state;
	submit(f, CONV_PLATFORM_SPACE, "space:room", "hello there", -1, false);
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->sends[0].text, "hello there");
	assert_int_equal(f->sends[0].chain, -1);
	static const char *const want[] = {"send_permission", "dedup",    "pacing",
	                                   "platform_limit",  "courtesy", "sent"};
	assert_int_equal(f->ndec, 6);
	for (int i = 0; i < 6; i++)
		assert_string_equal(f->dec[i].rule, want[i]);
	for (int i = 0; i < 5; i++)
		assert_int_equal(f->dec[i].v, VERDICT_PASS);
	assert_int_equal(f->dec[5].v, VERDICT_SENT);
	assert_int_equal(f->nfinal, 1);
	assert_int_equal(f->last_final.verdict, VERDICT_SENT);
	assert_string_equal(f->last_artifact, "artifact-1");
}

static void test_denied_never_reaches_dedup_or_port(void **state)
{
	struct fixture *f = *state;
	set_allowlist(f, "space:*");
	submit(f, CONV_PLATFORM_GITHUB, "github:acme:secret:issue:3", "psst", -1, false);
	/* an immediate drop: the final decision came before submit returned */
	assert_int_equal(f->nfinal, 1);
	run(f);
	assert_int_equal(f->nsends, 0);
	assert_int_equal(f->ndec, 1);
	assert_string_equal(f->dec[0].rule, "send_permission");
	assert_int_equal(f->dec[0].v, VERDICT_DROP);
	assert_int_equal(f->last_final.verdict, VERDICT_DROP);
	const char *denial = outbound_last_denial(f->ob);
	assert_non_null(denial);
	assert_non_null(strstr(denial,
	                       "Permission denied: agent \"ada\" cannot send to "
	                       "\"github:acme:secret:issue:3\"\nSend permissions: allowlist "
	                       "mode\nAllowed patterns:\n  - space:*\n"));

	/* allowed twice with the same text: the second is a dedup drop, and
	 * both attempts are in the audit */
	submit(f, CONV_PLATFORM_SPACE, "space:room", "hi", -1, false);
	submit(f, CONV_PLATFORM_SPACE, "space:room", "Hi ", -1, false);
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_int_equal(f->nfinal, 3);
	bool saw_dedup_drop = false;
	for (int i = 0; i < f->ndec; i++)
		if (!strcmp(f->dec[i].rule, "dedup") && f->dec[i].v == VERDICT_DROP)
			saw_dedup_drop = true;
	assert_true(saw_dedup_drop);
	cJSON *tail = audit_tail(f->dir, 10);
	assert_int_equal(cJSON_GetArraySize(tail), 3);
	const char *verdicts[] = {"deny", "allow", "allow"};
	const char *targets[] = {"github:acme:secret:issue:3", "space:room", "space:room"};
	for (int i = 0; i < 3; i++) {
		cJSON *it = cJSON_GetArrayItem(tail, i);
		assert_string_equal(cJSON_GetObjectItem(it, "verdict")->valuestring, verdicts[i]);
		assert_string_equal(cJSON_GetObjectItem(it, "target")->valuestring, targets[i]);
	}
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(tail, 0), "pattern")));
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetArrayItem(tail, 1), "pattern")->valuestring,
	        "space:*");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(tail, 1), "source")->valuestring,
	                    "space");
	cJSON_Delete(tail);
}

static void test_permissions_change_without_restart(void **state)
{
	struct fixture *f = *state;
	submit(f, CONV_PLATFORM_BLUESKY, "bluesky:post", "first", -1, false);
	set_allowlist(f, "space:*"); /* as `cross` would, while the daemon runs */
	submit(f, CONV_PLATFORM_BLUESKY, "bluesky:post", "second", -1, false);
	assert_string_equal(f->last_final.rule, "send_permission"); /* dropped at once */
	assert_int_equal(f->last_final.verdict, VERDICT_DROP);
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->sends[0].text, "first");
	assert_int_equal(f->nfinal, 2);
}

static void test_pacing_spaces_sends(void **state)
{
	struct fixture *f = *state;
	outbound_close(f->ob, NULL, NULL);
	run(f);
	struct outbound_config cfg = {
	        .memory_dir = f->dir, .agent_name = "ada", .on_decision = on_decision, .ud = f};
	f->ob = outbound_new(&f->loop, &cfg, NULL);
	add_port(f, CONV_PLATFORM_SPACE, 100, false);
	add_port(f, CONV_PLATFORM_BLUESKY, 0, false);
	submit(f, CONV_PLATFORM_SPACE, "space:room", "one", -1, false);
	submit(f, CONV_PLATFORM_SPACE, "space:room", "two", -1, false);
	submit(f, CONV_PLATFORM_BLUESKY, "bluesky:post", "other platform", -1, false);
	/* the first goes at once, the second waits; Bluesky is not held up */
	assert_int_equal(f->nsends, 2);
	assert_string_equal(f->sends[1].text, "other platform");
	run(f);
	assert_int_equal(f->nsends, 3);
	assert_string_equal(f->sends[2].text, "two");
	uint64_t gap = f->sends[2].at - f->sends[0].at;
	if (gap < 100 || gap > 5000)
		fail_msg("the second space send came %llu ms after the first (want >= 100)",
		         (unsigned long long)gap);
	assert_int_equal(f->nfinal, 3);
}

static void test_queue_bound_and_close_with_queued(void **state)
{
	struct fixture *f = *state;
	outbound_close(f->ob, NULL, NULL);
	run(f);
	struct outbound_config cfg = {
	        .memory_dir = f->dir, .agent_name = "ada", .on_decision = on_decision, .ud = f};
	f->ob = outbound_new(&f->loop, &cfg, NULL);
	add_port(f, CONV_PLATFORM_SPACE, 60000, false);
	f->delay_ms = 50; /* the first send is still in flight at close */
	char text[32];
	for (int i = 0; i < OUTBOUND_QUEUE_MAX + 2; i++) {
		snprintf(text, sizeof text, "message %d", i);
		submit(f, CONV_PLATFORM_SPACE, "space:room", text, -1, false);
	}
	assert_int_equal(f->nsends, 1);
	/* one sent, QUEUE_MAX waiting, the last dropped at once */
	assert_int_equal(f->nfinal, 1);
	assert_string_equal(f->last_final.rule, "pacing");
	assert_int_equal(f->last_final.verdict, VERDICT_DROP);
	outbound_close(f->ob, on_closed, f);
	f->ob = NULL;
	/* the waiting ones are dropped at once; the one in flight completes */
	assert_int_equal(f->nfinal, 1 + OUTBOUND_QUEUE_MAX);
	assert_string_equal(f->last_final.rule, "shutdown");
	assert_non_null(strstr(f->last_final.reason, "shutting down"));
	assert_false(f->closed);
	run(f);
	assert_true(f->closed);
	assert_int_equal(f->nfinal, 2 + OUTBOUND_QUEUE_MAX);
	assert_int_equal(f->last_final.verdict, VERDICT_SENT);
	assert_int_equal(f->nsends, 1);
}

static char *repeat(const char *unit, int n)
{
	size_t ul = strlen(unit);
	char *s = xmalloc(ul * (size_t)n + 1);
	for (int i = 0; i < n; i++)
		memcpy(s + ul * (size_t)i, unit, ul);
	s[ul * (size_t)n] = '\0';
	return s;
}

static int find_rule(const struct fixture *f, const char *rule)
{
	for (int i = f->ndec - 1; i >= 0; i--)
		if (!strcmp(f->dec[i].rule, rule))
			return i;
	return -1;
}

static void test_courtesy_and_limits_bluesky(void **state)
{
	struct fixture *f = *state;
	submit(f, CONV_PLATFORM_BLUESKY, "bluesky:post", "short", 3, true);
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->sends[0].text,
	                    "short\n\nFor your information only. Replies to this message will not "
	                    "be processed.");
	assert_int_equal(f->sends[0].chain, 3);
	int c = find_rule(f, "courtesy");
	assert_int_equal(f->dec[c].v, VERDICT_EDIT);

	/* 290 graphemes (each a family emoji of several code points): the
	 * notice does not fit 300, so the text goes unchanged, chain in the field */
	char *near = repeat(
	        "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7", 290);
	submit(f, CONV_PLATFORM_BLUESKY, "bluesky:post", near, 3, true);
	run(f);
	assert_int_equal(f->nsends, 2);
	assert_string_equal(f->sends[1].text, near);
	c = find_rule(f, "courtesy");
	assert_int_equal(f->dec[c].v, VERDICT_PASS);
	assert_non_null(strstr(f->dec[c].reason, "marker alone"));
	free(near);

	/* exactly 300 passes, 301 is dropped before the port */
	char *at = repeat("a", 300);
	submit(f, CONV_PLATFORM_BLUESKY, "bluesky:post", at, -1, false);
	free(at);
	run(f);
	assert_int_equal(f->last_final.verdict, VERDICT_SENT);
	char *over = repeat("\xc3\xa9", 301);
	submit(f, CONV_PLATFORM_BLUESKY, "bluesky:post", over, -1, false);
	free(over);
	run(f);
	assert_int_equal(f->nsends, 3);
	assert_int_equal(f->last_final.verdict, VERDICT_DROP);
	assert_string_equal(f->last_final.rule, "platform_limit");
	assert_non_null(strstr(f->last_final.reason, "301 graphemes"));
}

static void test_github_marker_in_text(void **state)
{
	struct fixture *f = *state;
	submit(f, CONV_PLATFORM_GITHUB, "GitHub:Acme:Widgets:issue:03", "hello", 2, false);
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->sends[0].target, "github:acme:widgets:issue:3");
	char key[65];
	outbound_idem_key(CONV_PLATFORM_GITHUB, "github:acme:widgets:issue:3", "hello", 5, key);
	assert_string_equal(f->sends[0].key, key);
	char want[256];
	snprintf(want, sizeof want, "hello\n\n<!-- ga:chain=2 key=%s -->", key);
	assert_string_equal(f->sends[0].text, want);
	assert_int_equal(f->dec[find_rule(f, "courtesy")].v, VERDICT_EDIT);

	/* with the notice: the notice, then the marker */
	submit(f, CONV_PLATFORM_GITHUB, "github:acme:widgets:issue:3", "again", 3, true);
	run(f);
	assert_int_equal(f->nsends, 2);
	outbound_idem_key(CONV_PLATFORM_GITHUB, "github:acme:widgets:issue:3", "again", 5, key);
	snprintf(want, sizeof want,
	         "again\n\nFor your information only. Replies to this message will not be "
	         "processed.\n\n<!-- ga:chain=3 key=%s -->",
	         key);
	assert_string_equal(f->sends[1].text, want);

	/* near 65,536 characters: no room for the notice → the marker alone */
	size_t marker_len = strlen("\n\n<!-- ga:chain=3 key= -->") + 64;
	char *big = repeat("x", (int)(65536 - marker_len - 10));
	submit(f, CONV_PLATFORM_GITHUB, "github:acme:widgets:issue:3", big, 3, true);
	run(f);
	assert_int_equal(f->nsends, 3);
	outbound_idem_key(CONV_PLATFORM_GITHUB, "github:acme:widgets:issue:3", big, strlen(big),
	                  key);
	assert_int_equal(strncmp(f->sends[2].text, big, strlen(big)), 0);
	snprintf(want, sizeof want, "\n\n<!-- ga:chain=3 key=%s -->", key);
	assert_string_equal(f->sends[2].text + strlen(big), want);
	assert_non_null(strstr(f->dec[find_rule(f, "courtesy")].reason, "marker alone"));
	free(big);

	/* 65,536 characters of text: with the marker it is over → dropped */
	big = repeat("y", 65536);
	submit(f, CONV_PLATFORM_GITHUB, "github:acme:widgets:issue:3", big, 3, false);
	free(big);
	run(f);
	assert_int_equal(f->nsends, 3);
	assert_string_equal(f->last_final.rule, "platform_limit");
	assert_non_null(strstr(f->last_final.reason, "with the chain marker"));
}

static void test_port_failure_is_fail_and_can_retry(void **state)
{
	struct fixture *f = *state;
	f->fail_all = 1;
	submit(f, CONV_PLATFORM_SPACE, "space:room", "try me", -1, false);
	run(f);
	assert_int_equal(f->last_final.verdict, VERDICT_FAIL);
	assert_string_equal(f->last_final.rule, "port");
	assert_non_null(strstr(f->last_final.reason, "HTTP 502"));
	/* a failed send is forgotten by dedup: the retry goes */
	f->fail_all = 0;
	submit(f, CONV_PLATFORM_SPACE, "space:room", "try me", -1, false);
	run(f);
	assert_int_equal(f->nsends, 2);
	assert_int_equal(f->last_final.verdict, VERDICT_SENT);

	f->refuse_start = 1;
	submit(f, CONV_PLATFORM_SPACE, "space:room", "cannot start", -1, false);
	run(f);
	assert_int_equal(f->last_final.verdict, VERDICT_FAIL);
	assert_int_equal(f->nfinal, 3);

	submit(f, CONV_PLATFORM_OWNER, "space:room", "no port", -1, false);
	assert_int_equal(f->last_final.verdict, VERDICT_FAIL);
	assert_non_null(strstr(f->last_final.reason, "no outbound port for owner"));
}

static void test_extra_passed_through(void **state)
{
	struct fixture *f = *state;
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "ref", "at://did:plc:x/app.bsky.feed.post/1");
	struct outbound_msg m = {.platform = CONV_PLATFORM_BLUESKY,
	                         .target = "bluesky:reply:did:plc:x",
	                         .source = "bluesky",
	                         .text = "hi",
	                         .text_len = 2,
	                         .chain = 1,
	                         .idem_key = "my-key",
	                         .extra = extra};
	outbound_submit(f->ob, &m, on_final, f);
	cJSON_Delete(extra); /* copied by submit */
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->sends[0].extra, "at://did:plc:x/app.bsky.feed.post/1");
	assert_string_equal(f->sends[0].key, "my-key");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_order_of_a_sent_message, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_denied_never_reaches_dedup_or_port, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_permissions_change_without_restart, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_pacing_spaces_sends, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_queue_bound_and_close_with_queued, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_courtesy_and_limits_bluesky, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_github_marker_in_text, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_port_failure_is_fail_and_can_retry, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_extra_passed_through, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
