/*
 * The GitHub outbound port (modules/github/port.h) behind the real outbound
 * stage and journal, against the in-process GitHub fake on a real uv loop:
 *   - a new issue and a comment carry exactly one hidden key marker, the
 *     artifact is the html_url, the journal says done;
 *   - a 404 is a clean failure (journal failed: may be retried);
 *   - a 502 on the POST is "unknown": the intent stays unresolved, a resubmit
 *     is dropped (rule journal), outbound_reconcile_key asks GitHub (nothing
 *     there → failed) and only then the resend makes the one issue;
 *   - an intent whose issue exists (found by its key) reconciles to done
 *     with the issue's URL, and a resubmit is "already sent";
 *   - the target parser and the marker helpers.
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

#include "adapters/github/github.h"
#include "adapters/http/http.h"
#include "modules/github/port.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/unit/llm/testloop.h"
#include "testutil.h"

#define TOKEN "tok-0123456789abcdef"
#define KEY1  "commitment:commitment-1-0123456789abcdef"
#define KEY2  "commitment:commitment-2-0123456789abcdef"

struct fx {
	uv_loop_t loop;
	char *dir;
	struct ghfake *fake;
	struct http_client *http;
	struct gh_client *gh;
	struct gh_port *port;
	struct journal *j;
	struct outbound *ob;
	/* the last final decision */
	bool got;
	struct decision final;
	char artifact[256];
	/* the last reconcile answer */
	bool rec_got;
	int exists;
	char rec_artifact[256];
	int auth_calls;
};

static void on_auth(void *ud, const char *msg)
{
	(void)msg;
	((struct fx *)ud)->auth_calls++;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	uv_loop_init(&f->loop);
	f->dir = tu_tempdir();
	char err[256];
	f->fake = ghfake_new(err, sizeof err);
	assert_non_null(f->fake);
	ghfake_add_token(f->fake, TOKEN, "ada-agent");
	ghfake_add_repo(f->fake, "acme", "widgets", 0);
	struct ga_err e = {{0}};
	f->http = http_client_new(&f->loop, NULL, &e);
	assert_non_null(f->http);
	struct gh_config cfg;
	gh_config_init(&cfg, ghfake_base_url(f->fake), TOKEN, "ada-agent");
	cfg.spacing_ms = 0;
	cfg.write_spacing_ms = 0;
	cfg.backoff_base_ms = 1;
	cfg.backoff_cap_ms = 10;
	cfg.recheck_ms = 5;
	cfg.timeout_ms = 5000;
	f->gh = gh_client_new(f->http, &cfg);
	gh_config_free(&cfg);
	f->j = journal_open(f->dir, &e);
	assert_non_null(f->j);
	struct outbound_config oc = {.memory_dir = f->dir, .agent_name = "ada", .journal = f->j};
	f->ob = outbound_new(&f->loop, &oc, &e);
	assert_non_null(f->ob);
	f->port = gh_port_new(f->gh, on_auth, f);
	struct outbound_port p;
	gh_port_describe(f->port, &p);
	assert_int_equal(outbound_add_port(f->ob, &p, &e), 0);
	assert_true(outbound_has_port(f->ob, CONV_PLATFORM_GITHUB));
	assert_false(outbound_has_port(f->ob, CONV_PLATFORM_BLUESKY));
	*state = f;
	return 0;
}

static bool closed_flag;
static void on_closed(void *ud)
{
	(void)ud;
	closed_flag = true;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	closed_flag = false;
	outbound_close(f->ob, on_closed, NULL);
	testloop_run_until(&f->loop, &closed_flag);
	gh_port_free(f->port);
	gh_client_free(f->gh);
	http_client_close(f->http);
	testloop_drain(&f->loop);
	uv_loop_close(&f->loop);
	journal_close(f->j);
	ghfake_free(f->fake);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void on_final(void *ud, const struct decision *d, const char *artifact)
{
	struct fx *f = ud;
	f->final = *d;
	snprintf(f->artifact, sizeof f->artifact, "%s", artifact ? artifact : "");
	f->got = true;
}

static void submit(struct fx *f, const char *target, const char *text, const char *key,
                   const char *title)
{
	cJSON *extra = NULL;
	if (title) {
		extra = cJSON_CreateObject();
		cJSON_AddStringToObject(extra, "title", title);
		cJSON *l = cJSON_AddArrayToObject(extra, "labels");
		cJSON_AddItemToArray(l, cJSON_CreateString("memo"));
	}
	struct outbound_msg m = {.platform = CONV_PLATFORM_GITHUB,
	                         .target = target,
	                         .source = "commitment",
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = -1,
	                         .idem_key = key,
	                         .extra = extra};
	f->got = false;
	outbound_submit(f->ob, &m, on_final, f);
	cJSON_Delete(extra);
	if (testloop_run_until(&f->loop, &f->got) != 0)
		fail_msg("no final decision for %s", target);
}

static void on_rec(void *ud, int exists, const char *artifact)
{
	struct fx *f = ud;
	f->exists = exists;
	snprintf(f->rec_artifact, sizeof f->rec_artifact, "%s", artifact ? artifact : "");
	f->rec_got = true;
}

static void reconcile(struct fx *f, const char *key)
{
	struct ga_err e = {{0}};
	f->rec_got = false;
	if (outbound_reconcile_key(f->ob, key, on_rec, f, &e) != 0)
		fail_msg("reconcile %s: %s", key, e.msg);
	/* one question per key at a time */
	struct ga_err e2 = {{0}};
	assert_int_equal(outbound_reconcile_key(f->ob, key, on_rec, f, &e2), -1);
	assert_non_null(strstr(e2.msg, "right now"));
	if (testloop_run_until(&f->loop, &f->rec_got) != 0)
		fail_msg("no reconcile answer for %s", key);
}

static void test_new_issue_and_comment(void **state)
{
	struct fx *f = *state;
	submit(f, "github:acme:widgets:new-issue", "The CI fails one run in ten.", KEY1,
	       "Flaky test");
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	assert_string_equal(f->artifact, "https://github.com/acme/widgets/issues/1");
	assert_int_equal(journal_state_of(f->j, KEY1), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, KEY1), f->artifact);
	cJSON *is = ghfake_issue(f->fake, "acme", "widgets", 1);
	const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(is, "body"));
	assert_non_null(strstr(body, "The CI fails one run in ten."));
	assert_true(gh_port_body_has_key(body, KEY1));
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(is, "title")), "Flaky test");
	cJSON_Delete(is);
	/* exactly one marker: outbound's, not a second one from the port */
	assert_int_equal(ghfake_count_body(f->fake, "key=" KEY1 " -->"), 1);
	assert_int_equal(ghfake_count_body(f->fake, "<!--"), 1);

	submit(f, "github:acme:widgets:issue:1", "Found it: a race in the setup.", KEY2, NULL);
	assert_int_equal(f->final.verdict, VERDICT_SENT);
	assert_non_null(
	        strstr(f->artifact, "https://github.com/acme/widgets/issues/1#issuecomment-"));
	assert_int_equal(ghfake_comment_count(f->fake, "acme", "widgets", 1), 1);
	assert_int_equal(ghfake_count_body(f->fake, "key=" KEY2 " -->"), 1);

	/* the same key again: the journal says done, GitHub is not asked */
	uint64_t before = ghfake_requests(f->fake);
	submit(f, "github:acme:widgets:issue:1", "Found it: a race in the setup.", KEY2, NULL);
	assert_int_equal(f->final.verdict, VERDICT_DROP);
	assert_string_equal(f->final.rule, "journal");
	assert_int_equal(ghfake_requests(f->fake), before);
}

static void test_refusal_is_clean_failure(void **state)
{
	struct fx *f = *state;
	submit(f, "github:acme:widgets:issue:99", "hello", KEY1, NULL);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	assert_string_equal(f->final.rule, "port");
	assert_non_null(strstr(f->final.reason, "404"));
	assert_int_equal(journal_state_of(f->j, KEY1), JOURNAL_FAILED);
	/* a new issue without a title never leaves: the port refuses to start */
	submit(f, "github:acme:widgets:new-issue", "body", KEY2, NULL);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	assert_int_equal(journal_state_of(f->j, KEY2), JOURNAL_FAILED);
	assert_int_equal(ghfake_issue_count(f->fake, "acme", "widgets"), 0);
	assert_int_equal(f->auth_calls, 0);
}

static void test_unknown_then_reconciled(void **state)
{
	struct fx *f = *state;
	/* the fake answers 502 before its route: nothing is made, but the
	 * client cannot know — the POST left */
	ghfake_fail_next(f->fake, 1, 502, false);
	submit(f, "github:acme:widgets:new-issue", "body one", KEY1, "One");
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	assert_string_equal(f->final.rule, "port_unknown");
	assert_int_equal(journal_state_of(f->j, KEY1), JOURNAL_INTENT);
	/* never resent blindly */
	submit(f, "github:acme:widgets:new-issue", "body one", KEY1, "One");
	assert_int_equal(f->final.verdict, VERDICT_DROP);
	assert_string_equal(f->final.rule, "journal");
	assert_int_equal(ghfake_issue_count(f->fake, "acme", "widgets"), 0);
	reconcile(f, KEY1);
	assert_int_equal(f->exists, 0);
	assert_int_equal(journal_state_of(f->j, KEY1), JOURNAL_FAILED);
	submit(f, "github:acme:widgets:new-issue", "body one", KEY1, "One");
	assert_int_equal(f->final.verdict, VERDICT_SENT);
	assert_int_equal(ghfake_issue_count(f->fake, "acme", "widgets"), 1);
	/* no intent left: nothing to reconcile */
	struct ga_err e = {{0}};
	assert_int_equal(outbound_reconcile_key(f->ob, KEY1, on_rec, f, &e), -1);
	assert_non_null(strstr(e.msg, "no unresolved intent"));
}

static void test_reconcile_finds_existing(void **state)
{
	struct fx *f = *state;
	/* a crash after GitHub made the issue, before the journal said done */
	struct ga_err e = {{0}};
	assert_int_equal(
	        journal_intent(f->j, KEY1, "github", "github:acme:widgets:new-issue", NULL, 1, &e),
	        0);
	ghfake_add_issue(f->fake, "acme", "widgets", "ada-agent", "Made before the crash",
	                 "text\n\n<!-- ga:key=" KEY1 " -->");
	ghfake_add_issue(f->fake, "acme", "widgets", "someone", "Unrelated", "no key here");
	reconcile(f, KEY1);
	assert_int_equal(f->exists, 1);
	assert_string_equal(f->rec_artifact, "https://github.com/acme/widgets/issues/1");
	assert_int_equal(journal_state_of(f->j, KEY1), JOURNAL_DONE);
	submit(f, "github:acme:widgets:new-issue", "text", KEY1, "Made before the crash");
	assert_int_equal(f->final.verdict, VERDICT_DROP);
	assert_non_null(strstr(f->final.reason, "already sent"));
	assert_int_equal(ghfake_issue_count(f->fake, "acme", "widgets"), 2);

	/* a comment intent: the issue's comments are read */
	assert_int_equal(
	        journal_intent(f->j, KEY2, "github", "github:acme:widgets:issue:2", NULL, 1, &e),
	        0);
	reconcile(f, KEY2);
	assert_int_equal(f->exists, 0);
	assert_int_equal(journal_state_of(f->j, KEY2), JOURNAL_FAILED);
	assert_int_equal(
	        journal_intent(f->j, KEY2, "github", "github:acme:widgets:issue:2", NULL, 2, &e),
	        0);
	ghfake_add_comment(f->fake, "acme", "widgets", 2, "ada-agent",
	                   "done\n\n<!-- ga:chain=1 key=" KEY2 " -->");
	reconcile(f, KEY2);
	assert_int_equal(f->exists, 1);
	assert_non_null(strstr(f->rec_artifact, "issuecomment-"));
	/* a search that fails is "unknown": the intent stays */
	const char *key3 = "commitment:commitment-3-0123456789abcdef";
	assert_int_equal(
	        journal_intent(f->j, key3, "github", "github:acme:widgets:new-issue", NULL, 3, &e),
	        0);
	ghfake_fail_next(f->fake, GH_DEFAULT_MAX_RETRIES + 1, 503, true); /* reads are retried */
	reconcile(f, key3);
	assert_int_equal(f->exists, -1);
	assert_int_equal(journal_state_of(f->j, key3), JOURNAL_INTENT);
}

static void test_targets_and_markers(void **state)
{
	(void)state;
	struct gh_port_target t;
	struct ga_err e = {{0}};
	assert_int_equal(gh_port_parse_target("github:acme:widgets:new-issue", &t, &e), 0);
	assert_string_equal(t.owner, "acme");
	assert_string_equal(t.repo, "widgets");
	assert_int_equal(t.number, 0);
	assert_int_equal(gh_port_parse_target("github:acme:widgets:issue:42", &t, &e), 0);
	assert_int_equal(t.number, 42);
	assert_int_equal(gh_port_parse_target("github:acme:widgets:pr:7", &t, &e), 0);
	assert_int_equal(t.number, 7);
	const char *bad[] = {"github:acme:widgets",
	                     "github:acme:widgets:issue:",
	                     "github:acme:widgets:issue:x",
	                     "github:acme:widgets:issue:0",
	                     "bluesky:post",
	                     "github::widgets:new-issue",
	                     "github:ac me:widgets:new-issue",
	                     NULL};
	for (int i = 0; bad[i]; i++) {
		err_clear(&e);
		if (gh_port_parse_target(bad[i], &t, &e) != -1 || !strstr(e.msg, "github"))
			fail_msg("'%s' accepted (%s)", bad[i], e.msg);
	}
	assert_true(gh_port_body_has_key("x <!-- ga:key=K1 -->", "K1"));
	assert_true(gh_port_body_has_key("x <!-- ga:chain=2 key=K1 -->", "K1"));
	assert_false(gh_port_body_has_key("x <!-- ga:key=K10 -->", "K1"));
	assert_false(gh_port_body_has_key("key=K1", "K1"));
	assert_false(gh_port_body_has_key(NULL, "K1"));
	char *b = gh_port_body("hello", 5, "K1");
	assert_string_equal(b, "hello\n\n<!-- ga:key=K1 -->");
	free(b);
	b = gh_port_body("hello <!-- ga:key=K1 -->", 24, "K1");
	assert_string_equal(b, "hello <!-- ga:key=K1 -->");
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_new_issue_and_comment, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_refusal_is_clean_failure, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unknown_then_reconciled, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_reconcile_finds_existing, setup, teardown),
	        cmocka_unit_test(test_targets_and_markers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
