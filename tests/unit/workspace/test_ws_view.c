/*
 * Pull requests as people read them (modules/workspace/wsp_view.h): the
 * line per pull request (state, who acts next, since when), what an agent
 * waits for from each side of a pull (author, reviewer, neither), the
 * pulls of one plan for the room (only that plan's, bounded, times in
 * ISO) and their fingerprint; bad pulls are not rendered; the owner's
 * /status (status_console) with what the agent waits for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "modules/status/status.h"
#include "modules/workspace/wsp_view.h"

/* 2026-11-28T14:40:00Z, and a request 38 minutes before */
static int64_t now_ms(void)
{
	int64_t t;
	assert_int_equal(time_parse_iso("2026-11-28T14:40:00.000Z", &t), 0);
	return t;
}
#define MINUTE_MS ((int64_t)60000)

static cJSON *pull(const char *state, const char *next, int64_t since_ms, int revisions)
{
	char buf[1024];
	snprintf(buf, sizeof buf,
	         "{\"repo\":\"acme/www-x\",\"number\":12,\"title\":\"Add the page\","
	         "\"url\":\"https://github.com/acme/www-x/pull/12\",\"plan\":7,\"task\":3,"
	         "\"author\":\"alice\",\"reviewer\":\"bob\",\"state\":\"%s\",\"next\":\"%s\","
	         "\"since_ms\":%lld,\"revisions\":%d}",
	         state, next, (long long)since_ms, revisions);
	cJSON *p = cJSON_Parse(buf);
	assert_non_null(p);
	return p;
}

static void test_since(void **state)
{
	(void)state;
	char out[64];
	int64_t now = now_ms();
	wsp_view_since(now - 38 * MINUTE_MS, now, out, sizeof out);
	assert_string_equal(out, "14:02 UTC (38 min)");
	wsp_view_since(now - 125 * MINUTE_MS, now, out, sizeof out);
	assert_string_equal(out, "12:35 UTC (2 h 5 min)");
	wsp_view_since(now - (26 * 60 + 3) * MINUTE_MS, now, out, sizeof out);
	assert_string_equal(out, "2026-11-27 12:37 UTC (1 d 2 h)");
	wsp_view_since(now + MINUTE_MS, now, out, sizeof out);
	assert_string_equal(out, "14:41 UTC");
}

static void test_line(void **state)
{
	(void)state;
	int64_t now = now_ms();
	char out[400];
	cJSON *p = pull("awaiting_review", "bob", now - 38 * MINUTE_MS, 0);
	assert_true(wsp_view_pull_line(p, now, out, sizeof out));
	assert_string_equal(out,
	                    "acme/www-x#12 awaiting review \xe2\x80\x94 bob to act, since "
	                    "14:02 UTC (38 min); task 3 of plan #7, by alice: \"Add the page\"");
	cJSON_Delete(p);

	p = pull("owner", "carol", now - 5 * MINUTE_MS, 2);
	assert_true(wsp_view_pull_line(p, now, out, sizeof out));
	assert_string_equal(out, "acme/www-x#12 left to the owner \xe2\x80\x94 carol to act, "
	                         "since 14:35 UTC (5 min), 2 revisions; task 3 of plan #7, by "
	                         "alice: \"Add the page\"");
	/* a small buffer: cut with an ellipsis, still a C string */
	char small[24];
	assert_true(wsp_view_pull_line(p, now, small, sizeof small));
	assert_true(strlen(small) < sizeof small);
	assert_non_null(strstr(small, "\xe2\x80\xa6"));
	assert_int_equal(strncmp(small, "acme/www-x#12 left", 18), 0);
	cJSON_Delete(p);

	/* merged: nobody to act, whatever next says */
	p = pull("merged", "owner", now - 5 * MINUTE_MS, 0);
	assert_true(wsp_view_pull_line(p, now, out, sizeof out));
	assert_string_equal(out, "acme/www-x#12 merged since 14:35 UTC (5 min); task 3 of plan #7, "
	                         "by alice: \"Add the page\"");
	cJSON_Delete(p);

	/* the least a pull needs: repo and number; an unknown state by name */
	p = cJSON_Parse("{\"repo\":\"a/b\",\"number\":3,\"state\":\"frozen\"}");
	assert_true(wsp_view_pull_line(p, now, out, sizeof out));
	assert_string_equal(out, "a/b#3 frozen");
	cJSON_Delete(p);

	/* not renderable: no repo, a number that is no PR's, not an object */
	const char *bad[] = {"{\"number\":3,\"state\":\"merged\"}",
	                     "{\"repo\":\"a/b\",\"number\":0}",
	                     "{\"repo\":\"a/b\",\"number\":\"3\"}", "[1,2]", "null"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = cJSON_Parse(bad[i]);
		strcpy(out, "x");
		assert_false(wsp_view_pull_line(p, now, out, sizeof out));
		assert_string_equal(out, "");
		cJSON_Delete(p);
	}
	assert_false(wsp_view_pull_line(NULL, now, out, sizeof out));
}

struct wait_case {
	const char *state, *next, *login;
	int revisions;
	const char *want; /* NULL: nothing to wait for */
};

static void test_wait(void **state)
{
	(void)state;
	int64_t now = now_ms();
	const struct wait_case cases[] = {
	        {"awaiting_review", "bob", "alice", 0,
	         "waiting for bob's review of acme/www-x#12 since 14:02 UTC (38 min)"},
	        {"awaiting_review", "bob", "bob", 0,
	         "reviewing acme/www-x#12 by alice, requested since 14:02 UTC (38 min)"},
	        {"changes_requested", "alice", "alice", 1,
	         "revising acme/www-x#12 after changes requested (revision 1) since 14:02 UTC "
	         "(38 min)"},
	        {"revising", "alice", "bob", 1,
	         "waiting for alice to revise acme/www-x#12 after changes requested (revision 1) "
	         "since 14:02 UTC (38 min)"},
	        {"approved", "alice", "alice", 0, "merging acme/www-x#12 since 14:02 UTC (38 min)"},
	        {"merging", "alice", "bob", 0,
	         "waiting for alice to merge acme/www-x#12 since 14:02 UTC (38 min)"},
	        {"conflict", "alice", "alice", 0,
	         "rebuilding acme/www-x#12 after a merge conflict since 14:02 UTC (38 min)"},
	        {"owner", "carol", "alice", 2,
	         "waiting for the owner carol on acme/www-x#12 (left to the owner) since 14:02 UTC "
	         "(38 min)"},
	        {"owner", "owner", "alice", 2,
	         "waiting for the owner on acme/www-x#12 (left to the owner) since 14:02 UTC "
	         "(38 min)"},
	        /* the second reviewer after a timeout: next is dave, who waits on nobody */
	        {"awaiting_review", "dave", "dave", 0,
	         "reviewing acme/www-x#12 by alice, requested since 14:02 UTC (38 min)"},
	        /* done, or not this agent's concern */
	        {"merged", "", "alice", 0, NULL},
	        {"closed", "", "alice", 0, NULL},
	        {"awaiting_review", "bob", "erin", 0, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct wait_case *c = &cases[i];
		cJSON *p = pull(c->state, c->next, now - 38 * MINUTE_MS, c->revisions);
		char out[400];
		bool got = wsp_view_pull_wait(p, c->login, now, out, sizeof out);
		if (c->want) {
			assert_true(got);
			assert_string_equal(out, c->want);
		} else {
			assert_false(got);
			assert_string_equal(out, "");
		}
		cJSON_Delete(p);
	}
	char out[64];
	assert_false(wsp_view_pull_wait(NULL, "alice", now, out, sizeof out));
	cJSON *p = pull("awaiting_review", "bob", now, 0);
	assert_false(wsp_view_pull_wait(p, NULL, now, out, sizeof out));
	cJSON_Delete(p);
}

static void test_plan_pulls(void **state)
{
	(void)state;
	int64_t now = now_ms();
	/* a wsp_status object: pulls of two plans and two repositories, and
	 * one without a state */
	cJSON *st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "login", "alice");
	cJSON *arr = cJSON_AddArrayToObject(st, "pulls");
	cJSON_AddItemToArray(arr, pull("awaiting_review", "bob", now - 38 * MINUTE_MS, 0));
	cJSON *other_plan = pull("approved", "alice", now, 0);
	cJSON_ReplaceItemInObject(other_plan, "plan", cJSON_CreateNumber(8));
	cJSON_AddItemToArray(arr, other_plan);
	cJSON *other_repo = pull("approved", "alice", now, 0);
	cJSON_ReplaceItemInObject(other_repo, "repo", cJSON_CreateString("acme/www-y"));
	cJSON_AddItemToArray(arr, other_repo);
	cJSON_AddItemToArray(arr,
	                     cJSON_Parse("{\"repo\":\"acme/www-x\",\"number\":13,\"plan\":7}"));

	cJSON *got = wsp_view_plan_pulls(st, "acme/www-x", 7);
	assert_int_equal(cJSON_GetArraySize(got), 1);
	char *text = cJSON_PrintUnformatted(got);
	assert_string_equal(text,
	                    "[{\"repo\":\"acme/www-x\",\"number\":12,\"title\":\"Add the page\","
	                    "\"url\":\"https://github.com/acme/www-x/pull/12\",\"task\":3,"
	                    "\"author\":\"alice\",\"reviewer\":\"bob\",\"state\":\"awaiting_"
	                    "review\",\"next\":\"bob\",\"since\":\"2026-11-28T14:02:00.000Z\"}]");
	cJSON_free(text);
	uint64_t h = wsp_view_pulls_hash(got);
	assert_true(h != 0);
	/* the state moves on: another fingerprint */
	cJSON *moved = wsp_view_plan_pulls(st, "acme/www-x", 8);
	assert_true(wsp_view_pulls_hash(moved) != h);
	cJSON_Delete(moved);
	cJSON_Delete(got);

	/* none, and no status at all */
	got = wsp_view_plan_pulls(st, "acme/www-x", 99);
	assert_int_equal(cJSON_GetArraySize(got), 0);
	assert_int_equal(wsp_view_pulls_hash(got), 0);
	cJSON_Delete(got);
	got = wsp_view_plan_pulls(NULL, "acme/www-x", 7);
	assert_int_equal(cJSON_GetArraySize(got), 0);
	cJSON_Delete(got);

	/* bounded: the first WSP_VIEW_ROOM_PULLS_MAX */
	for (int i = 0; i < WSP_VIEW_ROOM_PULLS_MAX + 5; i++) {
		cJSON *p = pull("awaiting_review", "bob", now, 0);
		cJSON_ReplaceItemInObject(p, "number", cJSON_CreateNumber(100 + i));
		cJSON_AddItemToArray(arr, p);
	}
	got = wsp_view_plan_pulls(st, "acme/www-x", 7);
	assert_int_equal(cJSON_GetArraySize(got), WSP_VIEW_ROOM_PULLS_MAX);
	assert_int_equal(json_int_or(cJSON_GetArrayItem(got, 0), "number", 0), 12);
	cJSON_Delete(got);
	cJSON_Delete(st);
}

/* The owner's /status says what the agent waits for, one line a pull. */
static void test_console(void **state)
{
	(void)state;
	int64_t now = now_ms();
	cJSON *s = cJSON_CreateObject();
	cJSON *ws = cJSON_AddObjectToObject(cJSON_AddObjectToObject(s, "services"), "workspace");
	cJSON_AddStringToObject(ws, "login", "alice");
	cJSON *arr = cJSON_AddArrayToObject(ws, "pulls");
	cJSON_AddItemToArray(arr, pull("awaiting_review", "bob", now - 38 * MINUTE_MS, 0));
	cJSON_AddItemToArray(arr, pull("merged", "", now - MINUTE_MS, 0));
	struct strbuf out;
	sb_init(&out, 0);
	status_console(&out, s, now);
	assert_non_null(strstr(sb_cstr(&out), "\n  now            waiting for bob's review of "
	                                      "acme/www-x#12 since 14:02 UTC (38 min)"));
	assert_null(strstr(strstr(sb_cstr(&out), "  now "), "\n  now "));
	sb_free(&out);
	cJSON_Delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_since),   cmocka_unit_test(test_line),
	        cmocka_unit_test(test_wait),    cmocka_unit_test(test_plan_pulls),
	        cmocka_unit_test(test_console),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
