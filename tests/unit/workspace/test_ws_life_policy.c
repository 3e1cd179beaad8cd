/*
 * The pure rules of recovery and the lifecycle (modules/workspace/policy.h):
 * which branches are a task's, which PR carries a task's work, the body of
 * a recovered PR, an issue read from GitHub's JSON, hygiene (stale, memo,
 * handled, what is never touched), the sentinel picked and what reactivates
 * a finished workspace, a plan's coverage of an issue, and the synthesis
 * request (bounded, PRs and plans left out, bodies cut on UTF-8); the
 * sentinel verified: agreement, feedback (its issue's body, bounded),
 * activity elsewhere, a closed sentinel reopened once; the open-issue
 * scan (which issues are handed, newest first, the bound, what was decided
 * not handed again until it changes, a full queue).
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
#include "common/utf8.h"
#include "modules/workspace/policy.h"

#define HOUR (3600LL * 1000)
#define DAY  (24 * HOUR)

static void test_task_branch(void **state)
{
	(void)state;
	char b[PLAN_BRANCH_MAX + 1];
	assert_int_equal(plan_branch_name(3, "Add the map", 1, b, sizeof b), 0);
	assert_true(wsp_task_branch(b, 3, "Add the map"));
	assert_int_equal(plan_branch_name(3, "Add the map", 4, b, sizeof b), 0);
	assert_true(wsp_task_branch(b, 3, "Add the map"));
	assert_int_equal(plan_branch_legacy(3, "Add the map!", b, sizeof b), 0);
	assert_true(wsp_task_branch(b, 3, "Add the map!"));
	/* another task, another title, a suffix that is not an attempt */
	assert_false(wsp_task_branch("task-3-add-the-map", 4, "Add the map"));
	assert_false(wsp_task_branch("task-3-add-the-mapping", 3, "Add the map"));
	assert_false(wsp_task_branch("task-3-add-the-map-ax", 3, "Add the map"));
	assert_false(wsp_task_branch("task-3-add-the-map-a", 3, "Add the map"));
	assert_false(wsp_task_branch("main", 3, "Add the map"));
	assert_false(wsp_task_branch(NULL, 3, "Add the map"));
}

static void test_pr_of_task(void **state)
{
	(void)state;
	assert_true(wsp_pr_of_task("task-2-x", "Body\n---\nPart of #7\n", 7, 2));
	assert_true(wsp_pr_of_task("task-2-x-a2", "no plan named", 7, 2));
	assert_false(wsp_pr_of_task("task-2-x", "Part of #70", 7, 2));
	assert_false(wsp_pr_of_task("task-2-x", "Part of #8", 7, 2));
	assert_true(wsp_pr_of_task("task-2-x", "Part of #8, Part of #7", 7, 2));
	assert_false(wsp_pr_of_task("task-20-x", "Part of #7", 7, 2));
	assert_false(wsp_pr_of_task("feature", "Part of #7", 7, 2));
}

static void test_recovered_body(void **state)
{
	(void)state;
	char *b = wsp_recovered_pr_body(7, 2, "Add the map", "task-2-add-the-map", "ada-bot", 2);
	assert_non_null(b);
	assert_non_null(strstr(b, "Recovered"));
	assert_non_null(strstr(b, "`task-2-add-the-map`"));
	assert_non_null(strstr(b, "Part of #7"));
	struct plan_marker m;
	struct ga_err e = {{0}};
	assert_int_equal(plan_marker_parse(b, &m, &e), 1);
	assert_int_equal(m.kind, PLAN_MARK_PR);
	assert_int_equal(m.plan, 7);
	assert_int_equal(m.task, 2);
	assert_int_equal(m.attempt, 2);
	assert_string_equal(m.agent, "ada-bot");
	assert_string_equal(m.branch, "task-2-add-the-map");
	free(b);
	/* a branch the marker cannot carry: no body */
	assert_null(wsp_recovered_pr_body(7, 2, "x", "bad branch", "ada-bot", 1));
}

static cJSON *issue(int n, const char *author, const char *label, const char *updated)
{
	char buf[512];
	snprintf(buf, sizeof buf,
	         "{\"number\":%d,\"title\":\"t%d\",\"body\":\"b\",\"user\":{\"login\":\"%s\"},"
	         "\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"%s\",\"labels\":[%s%s%s]"
	         "}",
	         n, n, author, updated, label ? "{\"name\":\"" : "", label ? label : "",
	         label ? "\"}" : "");
	cJSON *o = cJSON_Parse(buf);
	assert_non_null(o);
	return o;
}

static void brief(int n, const char *author, const char *label, const char *updated,
                  struct wsp_issue_brief *b)
{
	cJSON *o = issue(n, author, label, updated);
	assert_int_equal(wsp_issue_brief(o, b), 0);
	cJSON_Delete(o);
}

static void test_hygiene(void **state)
{
	(void)state;
	struct wsp_issue_brief b;
	struct decision d;
	brief(1, "carol", NULL, "2026-01-01T00:00:00Z", &b);
	int64_t t0 = b.updated_ms;
	assert_int_equal(wsp_issue_hygiene(&b, "ada-bot", t0 + 7 * DAY - 1, DAY, 7 * DAY, &d),
	                 WSP_HYG_KEEP);
	assert_int_equal(wsp_issue_hygiene(&b, "ada-bot", t0 + 7 * DAY, DAY, 7 * DAY, &d),
	                 WSP_HYG_STALE);
	assert_string_equal(d.rule, "issue_stale");
	/* a memo goes after three days */
	brief(2, "carol", "memo", "2026-01-01T00:00:00Z", &b);
	assert_true(b.memo);
	assert_int_equal(wsp_issue_hygiene(&b, "ada-bot", t0 + 3 * DAY, DAY, 7 * DAY, &d),
	                 WSP_HYG_STALE);
	/* handled: our word is the latest, a day of quiet */
	brief(3, "carol", NULL, "2026-01-01T00:00:00Z", &b);
	snprintf(b.last_commenter, sizeof b.last_commenter, "ADA-bot");
	assert_int_equal(wsp_issue_hygiene(&b, "ada-bot", t0 + DAY - 1, DAY, 7 * DAY, &d),
	                 WSP_HYG_KEEP);
	assert_int_equal(wsp_issue_hygiene(&b, "ada-bot", t0 + DAY, DAY, 7 * DAY, &d),
	                 WSP_HYG_HANDLED);
	snprintf(b.last_commenter, sizeof b.last_commenter, "carol");
	assert_int_equal(wsp_issue_hygiene(&b, "ada-bot", t0 + 2 * DAY, DAY, 7 * DAY, &d),
	                 WSP_HYG_KEEP);
	/* plans, sentinels, discussions and PRs are never touched */
	const char *kept[] = {"plan", "finished", "discussion"};
	for (size_t i = 0; i < 3; i++) {
		brief(4, "carol", kept[i], "2026-01-01T00:00:00Z", &b);
		assert_int_equal(wsp_issue_hygiene(&b, "ada-bot", t0 + 100 * DAY, DAY, 7 * DAY, &d),
		                 WSP_HYG_KEEP);
		assert_string_equal(d.rule, "issue_kept");
	}
	cJSON *pr = issue(5, "carol", NULL, "2026-01-01T00:00:00Z");
	cJSON_AddObjectToObject(pr, "pull_request");
	assert_int_equal(wsp_issue_brief(pr, &b), 0);
	cJSON_Delete(pr);
	assert_true(b.pull);
	assert_int_equal(wsp_issue_hygiene(&b, "ada-bot", t0 + 100 * DAY, DAY, 7 * DAY, &d),
	                 WSP_HYG_KEEP);
	/* no number: not an issue */
	cJSON *bad = cJSON_Parse("{\"title\":\"x\"}");
	assert_int_equal(wsp_issue_brief(bad, &b), -1);
	cJSON_Delete(bad);
}

static void test_sentinel(void **state)
{
	(void)state;
	struct wsp_issue_brief b[5];
	const char *t = "2026-01-01T00:00:00Z";
	brief(3, "carol", NULL, t, &b[0]);
	brief(9, "bob-bot", "finished", t, &b[1]);
	brief(6, "ada-bot", "finished", t, &b[2]);
	brief(10, "bob-bot", NULL, t, &b[3]);
	brief(11, "ada-bot", "plan", t, &b[4]);
	assert_int_equal(wsp_sentinel_pick(b, 3), 2); /* the oldest, #6 */
	assert_int_equal(wsp_sentinel_pick(b, 1), -1);
	struct wsp_agents ag = {0};
	wsp_agents_add(&ag, "ada-bot");
	wsp_agents_add(&ag, "bob-bot");
	int by = 0;
	/* #3 is older than the sentinel; #10 is an agent's issue */
	assert_false(wsp_sentinel_reactivated(b, 4, 2, &ag, &by));
	/* a plan opened after it, by anyone */
	assert_true(wsp_sentinel_reactivated(b, 5, 2, &ag, &by));
	assert_int_equal(by, 11);
	/* a person's issue opened after it */
	brief(12, "carol", NULL, t, &b[4]);
	assert_true(wsp_sentinel_reactivated(b, 5, 2, &ag, &by));
	assert_int_equal(by, 12);
	assert_false(wsp_sentinel_reactivated(b, 5, -1, &ag, &by));
}

static void test_covers(void **state)
{
	(void)state;
	assert_true(wsp_plan_covers("Covers #12.", 12));
	assert_true(wsp_plan_covers("(#12)", 12));
	assert_true(wsp_plan_covers("#1, #12", 1));
	assert_false(wsp_plan_covers("Covers #123", 12));
	assert_false(wsp_plan_covers("Covers #1234 and x#12 and &#12;", 12));
	assert_false(wsp_plan_covers("Covers 12", 12));
	assert_false(wsp_plan_covers(NULL, 12));
	assert_false(wsp_plan_covers("#0", 0));
}

static void test_synthesis_prompt(void **state)
{
	(void)state;
	cJSON *arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, issue(1, "carol", "bug", "2026-01-01T00:00:00Z"));
	cJSON_AddItemToArray(arr, issue(2, "carol", "plan", "2026-01-01T00:00:00Z"));
	cJSON *pr = issue(3, "carol", NULL, "2026-01-01T00:00:00Z");
	cJSON_AddObjectToObject(pr, "pull_request");
	cJSON_AddItemToArray(arr, pr);
	cJSON_AddItemToArray(arr, issue(4, "carol", "discussion", "2026-01-01T00:00:00Z"));
	/* a long body with a multi-byte character where it is cut */
	cJSON *big = issue(5, "carol", NULL, "2026-01-01T00:00:00Z");
	char *body = malloc(WSP_SYNTH_BODY_MAX + 100);
	memset(body, 'x', WSP_SYNTH_BODY_MAX + 99);
	memcpy(body + WSP_SYNTH_BODY_MAX - 1, "é", 2);
	body[WSP_SYNTH_BODY_MAX + 99] = '\0';
	cJSON_ReplaceItemInObject(big, "body", cJSON_CreateString(body));
	free(body);
	cJSON_AddItemToArray(arr, big);
	int nums[WSP_SYNTH_MAX_ISSUES];
	size_t n = 0;
	char *p = wsp_synthesis_prompt("acme", "www-x", arr, nums, WSP_SYNTH_MAX_ISSUES, &n);
	assert_non_null(p);
	assert_int_equal(n, 2);
	assert_int_equal(nums[0], 1);
	assert_int_equal(nums[1], 5);
	assert_non_null(strstr(p, "### #1: t1\nLabels: bug\nb"));
	assert_null(strstr(p, "#2:"));
	assert_null(strstr(p, "#3:"));
	assert_null(strstr(p, "#4:"));
	assert_non_null(strstr(p, "plan_create"));
	assert_non_null(strstr(p, "[…]"));
	assert_true(utf8_valid(p, strlen(p)));
	free(p);
	/* bounded: the rest is counted */
	n = 0;
	p = wsp_synthesis_prompt("acme", "www-x", arr, nums, 1, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(p, "1 more open issues"));
	free(p);
	cJSON_Delete(arr);
	/* nothing to roll up */
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, issue(2, "carol", "plan", "2026-01-01T00:00:00Z"));
	assert_null(wsp_synthesis_prompt("acme", "www-x", arr, nums, WSP_SYNTH_MAX_ISSUES, &n));
	assert_int_equal(n, 0);
	cJSON_Delete(arr);
}

static void test_agreement(void **state)
{
	(void)state;
	assert_true(wsp_agreement("LGTM!"));
	assert_true(wsp_agreement("Done."));
	assert_true(wsp_agreement("  Looks Good  "));
	assert_false(wsp_agreement("Looks good to me"));
	assert_true(wsp_agreement("+1"));
	assert_true(wsp_agreement("Ship it!!?"));
	assert_true(wsp_agreement("no additional work"));
	/* a peer's chain marker is hidden, not words */
	assert_true(wsp_agreement("Agreed.\n\n<!-- ga:chain=1 key=ws-x -->"));
	assert_false(wsp_agreement("done, but also fix X"));
	assert_false(wsp_agreement("Done. Also the map is missing."));
	assert_false(wsp_agreement("not done"));
	assert_false(wsp_agreement("lgtm lgtm"));
	assert_false(wsp_agreement(""));
	assert_false(wsp_agreement(NULL));
	assert_false(wsp_agreement("<!-- only a marker -->"));
	/* over 120 characters is never agreement, even padded phrases */
	char longer[200];
	memset(longer, ' ', sizeof longer);
	memcpy(longer, "done", 4);
	memset(longer + 4, '!', 130);
	longer[134] = '\0';
	assert_true(wsp_agreement(longer)); /* trailing '!' stripped: "done" */
	char words[200];
	snprintf(words, sizeof words, "%s", "done ");
	for (int i = 0; i < 25; i++)
		strcat(words, "more ");
	assert_true(strlen(words) > 120);
	assert_false(wsp_agreement(words));
}

static void test_sentinel_judge(void **state)
{
	(void)state;
	struct wsp_agents ag = {0};
	wsp_agents_add(&ag, "ada-bot");
	wsp_agents_add(&ag, "bob-bot");
	struct decision d;
	size_t fb = 99;
	/* nobody but the creator (and a peer's bookkeeping) */
	struct wsp_sentinel_comment quiet[] = {
	        {"ada-bot", "Anything else?", 1},
	        {"bob-bot", "closing the duplicate\n\n" WSP_LIFE_MARK, 2},
	};
	assert_int_equal(wsp_sentinel_judge(quiet, 2, false, "ada-bot", &ag, &fb, &d),
	                 WSP_SENTINEL_SCAN);
	assert_int_equal(fb, 0);
	assert_int_equal(wsp_sentinel_judge(NULL, 0, false, "ada-bot", &ag, &fb, &d),
	                 WSP_SENTINEL_SCAN);
	/* agreement by a person and a peer */
	struct wsp_sentinel_comment agreed[] = {
	        {"ada-bot", "Finished, as far as I can see.", 1},
	        {"host", "LGTM!", 2},
	        {"bob-bot", "Agreed.\n\n<!-- ga:chain=1 key=k -->", 3},
	};
	assert_int_equal(wsp_sentinel_judge(agreed, 3, false, "ADA-bot", &ag, &fb, &d),
	                 WSP_SENTINEL_KEEP);
	assert_string_equal(d.rule, "sentinel_agreed");
	assert_non_null(strstr(d.reason, "all 2 comments"));
	/* one feedback among agreement */
	struct wsp_sentinel_comment mixed[] = {
	        {"host", "Done.", 1},
	        {"carol", "done, but also fix X", 2},
	        {"bob-bot", "The footer is still grey.", 3},
	};
	assert_int_equal(wsp_sentinel_judge(mixed, 3, true, "ada-bot", &ag, &fb, &d),
	                 WSP_SENTINEL_FEEDBACK);
	assert_int_equal(fb, 2);
	assert_non_null(strstr(d.reason, "@carol"));
	assert_non_null(strstr(d.reason, "only the first 100"));
	char *body = wsp_feedback_body(9, mixed, 3, "ada-bot", &ag, WSP_FEEDBACK_BODY_MAX);
	assert_non_null(body);
	assert_non_null(strstr(body, "#9"));
	assert_non_null(strstr(body, "**@carol:**\n\ndone, but also fix X"));
	assert_non_null(strstr(body, "**@bob-bot:**\n\nThe footer is still grey."));
	assert_non_null(strstr(body, "\n---\n"));
	assert_null(strstr(body, "@host"));
	free(body);
	assert_null(wsp_feedback_body(9, agreed, 3, "ada-bot", &ag, WSP_FEEDBACK_BODY_MAX));
}

static void test_feedback_bound(void **state)
{
	(void)state;
	/* a first comment longer than the bound is cut on a UTF-8 boundary;
	 * the next ones are counted */
	size_t big = 5000;
	char *long_body = malloc(big + 1);
	for (size_t i = 0; i + 1 < big; i += 2)
		memcpy(long_body + i, "\xc3\xa9", 2); /* é */
	long_body[big] = '\0';
	struct wsp_sentinel_comment c[] = {
	        {"carol", long_body, 1},
	        {"dave", "Also the map.", 2},
	        {"erin", "And the search.", 3},
	};
	char *b = wsp_feedback_body(4, c, 3, "ada-bot", NULL, 1000);
	assert_non_null(b);
	assert_true(strlen(b) <= 1000);
	assert_true(utf8_valid(b, strlen(b)));
	assert_non_null(strstr(b, "2 more comments left out"));
	assert_null(strstr(b, "Also the map."));
	free(b);
	/* all fit */
	b = wsp_feedback_body(4, c + 1, 2, "ada-bot", NULL, 1000);
	assert_non_null(strstr(b, "Also the map."));
	assert_non_null(strstr(b, "And the search."));
	assert_null(strstr(b, "left out"));
	free(b);
	free(long_body);
}

static void test_activity(void **state)
{
	(void)state;
	struct wsp_issue_brief b[5] = {0};
	b[0] = (struct wsp_issue_brief){.number = 3, .updated_ms = 50}; /* older */
	b[1] = (struct wsp_issue_brief){.number = 5, .finished = true, .created_ms = 100};
	b[2] = (struct wsp_issue_brief){.number = 6, .updated_ms = 300};
	b[3] = (struct wsp_issue_brief){.number = 7, .pull = true, .updated_ms = 400};
	b[4] = (struct wsp_issue_brief){.number = 8, .updated_ms = 500};
	int out[WSP_SCAN_ISSUES];
	size_t k = wsp_activity_issues(b, 5, 1, out, WSP_SCAN_ISSUES);
	assert_int_equal(k, 2);
	assert_int_equal(b[out[0]].number, 8);
	assert_int_equal(b[out[1]].number, 6);
	assert_int_equal(wsp_activity_issues(b, 5, 1, out, 1), 1);
	assert_int_equal(wsp_activity_issues(b, 5, -1, out, WSP_SCAN_ISSUES), 0);
	struct wsp_agents ag = {0};
	wsp_agents_add(&ag, "ada-bot");
	wsp_agents_add(&ag, "bob-bot");
	struct decision d;
	struct wsp_sentinel_comment c[] = {
	        {"carol", "old words", 90},
	        {"bob-bot", "a peer", 200},
	        {"ada-bot", "me", 210},
	        {"Carol", "new words", 220},
	};
	assert_int_equal(wsp_human_activity(c, 4, "ada-bot", &ag, 100, &d), 3);
	assert_non_null(strstr(d.reason, "@Carol"));
	assert_int_equal(wsp_human_activity(c, 3, "ada-bot", &ag, 100, &d), -1);
	assert_int_equal(wsp_human_activity(c, 4, "ada-bot", &ag, 300, &d), -1);
}

static void test_sentinel_closed(void **state)
{
	(void)state;
	struct decision d;
	struct wsp_closed_sentinel s = {.number = 5, .creator = "ada-bot", .closer = "host"};
	assert_int_equal(wsp_sentinel_closed(&s, "ada-bot", &d), WSP_CLOSED_REOPEN);
	assert_non_null(strstr(d.reason, "@host"));
	s.reopened = true;
	assert_int_equal(wsp_sentinel_closed(&s, "ada-bot", &d), WSP_CLOSED_LEAVE);
	s.reopened = false;
	/* another agent's: its creator judges it */
	assert_int_equal(wsp_sentinel_closed(&s, "bob-bot", &d), WSP_CLOSED_LEAVE);
	/* work open: active, for anyone */
	s.open_work = true;
	assert_int_equal(wsp_sentinel_closed(&s, "ada-bot", &d), WSP_CLOSED_ACTIVE);
	assert_int_equal(wsp_sentinel_closed(&s, "bob-bot", &d), WSP_CLOSED_ACTIVE);
	s.open_work = false;
	/* closed by its creator (GitHub says so, or our journal) */
	s.closer = "ADA-bot";
	assert_int_equal(wsp_sentinel_closed(&s, "ada-bot", &d), WSP_CLOSED_NEW);
	assert_int_equal(wsp_sentinel_closed(&s, "bob-bot", &d), WSP_CLOSED_NEW);
	s.closer = NULL;
	assert_int_equal(wsp_sentinel_closed(&s, "ada-bot", &d), WSP_CLOSED_REOPEN);
	s.closed_by_us = true;
	assert_int_equal(wsp_sentinel_closed(&s, "ada-bot", &d), WSP_CLOSED_NEW);
	assert_int_equal(wsp_sentinel_closed(&s, "bob-bot", &d), WSP_CLOSED_LEAVE);
}

/* The GitHub conversations as the scan sees them: a memory of decided
 * issue states (number, updated_at) and a queue that may fill up. */
struct consider_fake {
	int handed[32];
	size_t nhanded;
	struct {
		int number;
		int64_t updated_ms;
	} decided[32];
	size_t ndecided;
	size_t room; /* queued answers left before LATER */
};

static enum wsp_consider fake_consider(void *ud, const char *owner, const char *repo,
                                       int64_t number, int64_t updated_ms)
{
	struct consider_fake *f = ud;
	assert_string_equal(owner, "acme");
	assert_string_equal(repo, "www-x");
	for (size_t i = 0; i < f->ndecided; i++)
		if (f->decided[i].number == number && f->decided[i].updated_ms == updated_ms)
			return WSP_CONSIDER_DECIDED;
	if (f->room == 0)
		return WSP_CONSIDER_LATER;
	f->room--;
	f->handed[f->nhanded++] = (int)number;
	return WSP_CONSIDER_QUEUED;
}

/* The handed issues: a walk decides each (its state is remembered). */
static void fake_decide_all(struct consider_fake *f, const struct wsp_issue_brief *b, size_t n)
{
	for (size_t i = 0; i < f->nhanded; i++)
		for (size_t j = 0; j < n; j++)
			if (b[j].number == f->handed[i]) {
				f->decided[f->ndecided].number = b[j].number;
				f->decided[f->ndecided++].updated_ms = b[j].updated_ms;
			}
	f->nhanded = 0;
}

static void test_engage(void **state)
{
	(void)state;
	struct wsp_issue_brief b[9];
	struct decision d;
	brief(1, "carol", NULL, "2026-01-01T00:00:00Z", &b[0]);       /* a person's */
	brief(2, "carol", "plan", "2026-01-01T00:00:00Z", &b[1]);     /* a plan */
	brief(3, "carol", "finished", "2026-01-01T00:00:00Z", &b[2]); /* a sentinel */
	brief(4, "carol", "discussion", "2026-01-01T00:00:00Z", &b[3]);
	brief(5, "ADA-bot", NULL, "2026-01-01T00:00:00Z", &b[4]); /* ours */
	brief(6, "bea-bot", NULL, "2026-01-01T00:00:00Z", &b[5]); /* a known agent's */
	brief(7, "dave", NULL, "2026-01-01T00:00:00Z", &b[6]);    /* a person's */
	brief(8, "erin", NULL, "2026-01-01T00:00:00Z", &b[7]);    /* a person's, PR */
	b[7].pull = true;
	brief(9, "frank", NULL, "2026-01-01T00:00:00Z", &b[8]); /* our comment is the latest */
	snprintf(b[8].last_commenter, sizeof b[8].last_commenter, "ada-bot");
	struct wsp_agents ag = {0};
	wsp_agents_add(&ag, "bea-bot");
	/* which: people's plain issues only, each with a reason */
	assert_true(wsp_engage_candidate(&b[0], "ada-bot", &ag, &d));
	assert_string_equal(d.rule, "workspace_issue");
	for (int i = 1; i < 4; i++) {
		assert_false(wsp_engage_candidate(&b[i], "ada-bot", &ag, &d));
		assert_string_equal(d.rule, "not_an_issue");
	}
	assert_false(wsp_engage_candidate(&b[4], "ada-bot", &ag, &d));
	assert_string_equal(d.rule, "agent_issue");
	assert_false(wsp_engage_candidate(&b[5], "ada-bot", &ag, &d));
	assert_string_equal(d.rule, "agent_issue");
	assert_true(wsp_engage_candidate(&b[5], "ada-bot", NULL, &d)); /* not known: a person */
	assert_false(wsp_engage_candidate(&b[7], "ada-bot", &ag, &d));
	assert_false(wsp_engage_candidate(&b[8], "ada-bot", &ag, &d));
	assert_string_equal(d.rule, "awaiting_others");
	assert_true(wsp_engage_candidate(&b[6], "ada-bot", &ag, NULL));

	/* the bound: newest first, at most max queued a cycle */
	struct consider_fake f = {.room = 100};
	assert_int_equal(wsp_engage(b, 9, "acme", "www-x", "ada-bot", &ag, 1, fake_consider, &f),
	                 1);
	assert_int_equal(f.nhanded, 1);
	assert_int_equal(f.handed[0], 7);
	fake_decide_all(&f, b, 9);
	/* the memory: #7 unchanged is decided, #1 is reached behind it */
	assert_int_equal(wsp_engage(b, 9, "acme", "www-x", "ada-bot", &ag, 1, fake_consider, &f),
	                 1);
	assert_int_equal(f.handed[0], 1);
	fake_decide_all(&f, b, 9);
	/* nothing changed: nothing queued */
	assert_int_equal(wsp_engage(b, 9, "acme", "www-x", "ada-bot", &ag, 3, fake_consider, &f),
	                 0);
	assert_int_equal(f.nhanded, 0);
	/* #1 changed (a new comment): handed again, #7 not */
	b[0].updated_ms += 60000;
	assert_int_equal(wsp_engage(b, 9, "acme", "www-x", "ada-bot", &ag, 3, fake_consider, &f),
	                 1);
	assert_int_equal(f.handed[0], 1);
	f.nhanded = 0;
	/* a full queue stops the cycle: LATER is not counted, nothing after it */
	struct consider_fake g = {.room = 1};
	assert_int_equal(wsp_engage(b, 9, "acme", "www-x", "ada-bot", &ag, 3, fake_consider, &g),
	                 1);
	assert_int_equal(g.nhanded, 1);
	assert_int_equal(g.handed[0], 7);
	/* more candidates than the bound: the newest WSP_ENGAGE_PER_CYCLE */
	struct wsp_issue_brief many[6];
	for (int i = 0; i < 6; i++)
		brief(20 + i, "carol", NULL, "2026-01-01T00:00:00Z", &many[i]);
	struct consider_fake h = {.room = 100};
	assert_int_equal(wsp_engage(many, 6, "acme", "www-x", "ada-bot", &ag, WSP_ENGAGE_PER_CYCLE,
	                            fake_consider, &h),
	                 WSP_ENGAGE_PER_CYCLE);
	assert_int_equal(h.handed[0], 25);
	assert_int_equal(h.handed[1], 24);
	assert_int_equal(h.handed[2], 23);
	/* nothing to hand to, or a bound of 0: nothing */
	assert_int_equal(wsp_engage(many, 6, "acme", "www-x", "ada-bot", &ag, 3, NULL, NULL), 0);
	assert_int_equal(wsp_engage(many, 6, "acme", "www-x", "ada-bot", &ag, 0, fake_consider, &h),
	                 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_task_branch),      cmocka_unit_test(test_pr_of_task),
	        cmocka_unit_test(test_recovered_body),   cmocka_unit_test(test_hygiene),
	        cmocka_unit_test(test_sentinel),         cmocka_unit_test(test_covers),
	        cmocka_unit_test(test_synthesis_prompt), cmocka_unit_test(test_agreement),
	        cmocka_unit_test(test_sentinel_judge),   cmocka_unit_test(test_feedback_bound),
	        cmocka_unit_test(test_activity),         cmocka_unit_test(test_sentinel_closed),
	        cmocka_unit_test(test_engage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
