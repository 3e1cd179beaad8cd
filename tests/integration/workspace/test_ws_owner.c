/*
 * The owner's hold on the work loop (modules/workspace), with one agent
 * against the GitHub fake with real git:
 *   - unwatch: the workspace's plans are no longer read and no task of it
 *     is claimed; a peer's link in the room does not bring it back, the
 *     owner's does (and then the task is claimed and becomes a PR);
 *   - unwatch while the cycle waits for the workspace's plans: what comes
 *     back is dropped and the next watched workspace is still read;
 *   - the rate budget: with fewer than WSP_LOW_BUDGET core requests left
 *     the cycle asks GitHub nothing, and runs again once the reset has
 *     passed (no request needed to learn it).
 *
 * Exits 77 without git.
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
#include "modules/conversation/store.h"
#include "support_loop.h"
#include "testutil.h"
#include "wsfix.h"

#define OTHER_REPO "www-lil-intdev-other"

static cJSON *status_of(struct wsfix *fx)
{
	return wsp_status(fx->a[0].ws);
}

static int64_t counter(struct wsfix *fx, const char *name)
{
	cJSON *st = status_of(fx);
	int64_t v = json_int_or(cJSON_GetObjectItem(st, "counters"), name, -1);
	cJSON_Delete(st);
	return v;
}

static int watched_count(struct wsfix *fx)
{
	cJSON *st = status_of(fx);
	int n = cJSON_GetArraySize(cJSON_GetObjectItem(st, "watched"));
	cJSON_Delete(st);
	return n;
}

static int plans_count(struct wsfix *fx)
{
	cJSON *st = status_of(fx);
	int n = cJSON_GetArraySize(cJSON_GetObjectItem(st, "plans"));
	cJSON_Delete(st);
	return n;
}

static bool cycle_over(void *ctx, const void *arg)
{
	(void)arg;
	return !((struct wsfix *)ctx)->a[0].cycling;
}

/* One cycle of the agent, waited for (a task it starts runs on). */
static void one_cycle(struct wsfix *fx)
{
	int before = fx->a[0].cycles;
	wsfix_cycle(fx, 0);
	assert_true(support_run_until(&fx->loop, cycle_over, fx, NULL, 30000));
	assert_int_equal(fx->a[0].cycles, before + 1);
}

static void say(struct wsfix *fx, const char *conversation, enum conv_platform platform,
                enum conv_author_kind kind, const char *id, const char *text)
{
	struct conv_event ev;
	struct conv_event_src src = {.platform = platform,
	                             .conversation = conversation,
	                             .message_id = id,
	                             .author_id = kind == CONV_AUTHOR_OWNER ? "owner" : "bob",
	                             .author_name = kind == CONV_AUTHOR_OWNER ? "owner" : "bob",
	                             .author_kind = kind,
	                             .text = text,
	                             .text_len = strlen(text),
	                             .time_ms = time_now_ms() + 1};
	conv_event_init(&ev, &src);
	assert_int_equal(conv_store_add(fx->a[0].store, &ev), 1);
	conv_event_free(&ev);
}

static bool one_pr(struct wsfix *fx)
{
	return ghfake_pull_count(fx->fake, WSFIX_OWNER, WSFIX_REPO, "open") >= 1;
}

static void test_unwatch(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	wsfix_agents(&fx, 1, 0, 0);
	fx.a[0].store = conv_store_new();
	assert_int_equal(watched_count(&fx), 1);
	assert_int_equal(wsp_unwatch(fx.a[0].ws, "ACME", "www-lil-intdev-DEMO"), 1);
	assert_int_equal(wsp_unwatch(fx.a[0].ws, WSFIX_OWNER, WSFIX_REPO), 0);
	assert_int_equal(watched_count(&fx), 0);
	/* a plan now: watched, its task would be claimed at once */
	int plan = wsfix_plan(&fx, "Greetings", 1);
	size_t listed = ghfake_count(fx.fake, "GET", "/repos/acme/" WSFIX_REPO "/issues", 0);
	one_cycle(&fx);
	/* a peer names it in the room: not watched again */
	say(&fx, "space:room", CONV_PLATFORM_SPACE, CONV_AUTHOR_PEER, "m1",
	    "The plan is in https://github.com/acme/" WSFIX_REPO " — take a task!");
	one_cycle(&fx);
	assert_int_equal(watched_count(&fx), 0);
	assert_int_equal(plans_count(&fx), 0);
	assert_int_equal(counter(&fx, "claims"), 0);
	assert_false(wsp_busy(fx.a[0].ws));
	assert_int_equal(ghfake_count(fx.fake, "GET", "/repos/acme/" WSFIX_REPO "/issues", 0),
	                 listed);
	assert_int_equal(ghfake_comment_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, plan), 0);
	/* the owner names it: watched, the task is claimed and becomes a PR */
	say(&fx, "owner:terminal", CONV_PLATFORM_OWNER, CONV_AUTHOR_OWNER, "m2",
	    "work on github.com/acme/" WSFIX_REPO " again");
	const int order[] = {0};
	if (!wsfix_run(&fx, order, 1, one_pr, 120000))
		fail_msg("the task of the workspace watched again was not done");
	assert_int_equal(watched_count(&fx), 1);
	assert_true(wsfix_settle(&fx, 60000));
	wsfix_close(&fx);
	conv_store_free(fx.a[0].store);
}

static void test_unwatch_mid_cycle(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	ghfake_add_repo(fx.fake, WSFIX_OWNER, OTHER_REPO, 0);
	wsfix_agents(&fx, 1, 0, 0);
	int plan = wsfix_plan(&fx, "Greetings", 1);
	struct ga_err e = {{0}};
	assert_int_equal(wsp_watch(fx.a[0].ws, WSFIX_OWNER, OTHER_REPO, WSP_SOURCE_OWNER, NULL, &e),
	                 1);
	/* the cycle asks for the demo's plans first; unwatched before the
	 * answer comes */
	wsfix_cycle(&fx, 0);
	assert_true(fx.a[0].cycling);
	assert_int_equal(wsp_unwatch(fx.a[0].ws, WSFIX_OWNER, WSFIX_REPO), 1);
	assert_true(wsfix_settle(&fx, 30000));
	/* the other workspace was read all the same, the demo's plan dropped */
	size_t issues = ghfake_count(fx.fake, "GET", "/repos/acme/" OTHER_REPO "/issues", 200);
	size_t below = ghfake_count(fx.fake, "GET", "/repos/acme/" OTHER_REPO "/issues/", 0);
	assert_int_equal(below, 0);
	/* its plans, then the lifecycle's open issues (and its closed plans
	 * when nothing is open: a finished workspace is looked for) */
	assert_true(issues >= 2 && issues <= 3);
	assert_int_equal(ghfake_count(fx.fake, NULL, NULL, 404), 0);
	assert_int_equal(watched_count(&fx), 1);
	assert_int_equal(plans_count(&fx), 0);
	assert_int_equal(counter(&fx, "claims"), 0);
	assert_int_equal(ghfake_comment_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, plan), 0);
	cJSON *st = status_of(&fx);
	assert_string_equal(
	        json_string_or(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "watched"), 0), "repo",
	                       ""),
	        WSFIX_OWNER "/" OTHER_REPO);
	cJSON_Delete(st);
	wsfix_close(&fx);
}

struct fetched {
	bool done;
	bool ok;
};

static void on_fetched(void *ud, const struct gh_result *r)
{
	struct fetched *f = ud;
	f->done = true;
	f->ok = r->kind == GH_OK;
}

static bool fetched_done(void *ctx, const void *arg)
{
	(void)arg;
	return ((struct fetched *)ctx)->done;
}

/* A request of the agent's own client: it learns the rate headers. */
static void agent_request(struct wsfix *fx)
{
	struct fetched f = {0};
	struct ga_err e = {{0}};
	assert_true(gh_comments_list(fx->a[0].gh, WSFIX_OWNER, WSFIX_REPO, 1, 10, on_fetched, &f,
	                             &e) > 0);
	assert_true(support_run_until(&fx->loop, fetched_done, &f, NULL, 10000));
	assert_true(f.ok);
}

static bool cycled(void *ctx, const void *arg)
{
	(void)arg;
	struct wsfix *fx = ctx;
	if (counter(fx, "cycles") > 0)
		return true;
	wsfix_cycle(fx, 0);
	return false;
}

static void test_budget_gate(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	wsfix_agents(&fx, 1, 0, 0);
	wsfix_plan(&fx, "Greetings", 1);
	/* 150 requests left until a reset 2 s from now */
	ghfake_rate_limit(fx.fake, "core", 5000, 3600 * 1000);
	int64_t reset = time_now_ms() + 2000;
	ghfake_set_remaining(fx.fake, "core", 150, reset);
	agent_request(&fx);
	uint64_t before = ghfake_requests(fx.fake);
	one_cycle(&fx);
	assert_int_equal(ghfake_requests(fx.fake), before);
	assert_int_equal(counter(&fx, "cycles"), 0);
	assert_int_equal(counter(&fx, "budgetSkips"), 1);
	cJSON *st = status_of(&fx);
	const char *why = json_string_or(cJSON_GetObjectItem(st, "lastCycle"), "skipped", "");
	assert_non_null(strstr(why, "requests left"));
	cJSON_Delete(st);
	/* after the reset the cycle runs, without a request to learn it */
	assert_true(support_run_until(&fx.loop, cycled, &fx, NULL, 15000));
	assert_true(time_now_ms() >= reset);
	assert_true(wsfix_settle(&fx, 60000));
	assert_true(ghfake_requests(fx.fake) > before);
	assert_int_equal(plans_count(&fx), 1);
	assert_int_equal(counter(&fx, "claims"), 1);
	st = status_of(&fx);
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "lastCycle"), "skipped"));
	cJSON_Delete(st);
	wsfix_close(&fx);
}

int main(void)
{
	if (ghfake_git_missing("test_ws_owner"))
		return 77;
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_unwatch),
	        cmocka_unit_test(test_unwatch_mid_cycle),
	        cmocka_unit_test(test_budget_gate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
