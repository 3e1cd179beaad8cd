/*
 * The pull requests of the work loop (modules/workspace wsp_pr.c, the
 * merge rule of policy.h), agents in one process against the GitHub fake
 * with real git and a scripted coder; the reviews are the test's, posted
 * through the reviewer agent's own GitHub client:
 *
 *   approve → merge: each PR squash-merged by its creator with the §3.12
 *     title, its branch deleted, the task done in the plan the PR names,
 *     after the last one the plan completed (its comments, labels plan +
 *     plan:complete, closed) and the room told once; the review callback
 *     asked of the designated reviewer;
 *   a restart after a merge the engine did not follow through (the merge
 *     made, then the agent gone): the next start finishes it, and further
 *     cycles and restarts add nothing — no comment, issue, merge or PR
 *     twice; then github_merge_pr: refused to an agent that did not open
 *     the PR, and the creator's merges it and completes the plan;
 *   changes requested → the coder again on the same branch with the
 *     review (its body and inline comment reach the prompt) → the reviewer
 *     asked again for the new head → approved → merged;
 *   a conflict (mergeable_state dirty) → the task rebuilt on a fresh branch
 *     from the default branch, the new PR replacing the old one (closed
 *     with a comment naming the new one) → merged;
 *   a conflict after the plan was closed → the PR closed with a comment,
 *     once, its branch kept (no rebuild will come);
 *   no review within the timeout → the next reviewer by the hash order,
 *     then the owner (one comment on the PR), whose approval merges it.
 *
 * Exits 77 without git.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "adapters/github/gh_work.h"
#include "common/json.h"
#include "modules/conversation/store.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/wsp_int.h"
#include "support_loop.h"
#include "testutil.h"
#include "wsfix.h"

#define O WSFIX_OWNER
#define R WSFIX_REPO

static int g_plan;

/* A coder that revises: on a revision the review's words must be in its
 * prompt, and it adds a heading to the task's file. */
static const char REVISER[] = "set -e\n"
                              "n=$(sed -n 's/^### Task \\([0-9]*\\):.*/\\1/p' \"$1\" | head -1)\n"
                              "if grep -q 'Review to address' \"$1\"; then\n"
                              "  grep -q 'needs a heading' \"$1\"\n"
                              "  grep -q 'line 1: start with a title' \"$1\"\n"
                              "  echo '# heading' >> \"task-$n.txt\"\n"
                              "else\n"
                              "  echo \"task $n by $GIT_AUTHOR_NAME\" > \"task-$n.txt\"\n"
                              "fi\n"
                              "git add \"task-$n.txt\"\n"
                              "git commit -q -m \"task($n): the task's file\"\n";

static bool two_prs(struct wsfix *fx)
{
	return ghfake_pull_count(fx->fake, O, R, "open") >= 2;
}

static bool plan_closed(struct wsfix *fx)
{
	cJSON *is = ghfake_issue(fx->fake, O, R, g_plan);
	bool closed = is && strcmp(json_string_or(is, "state", ""), "closed") == 0;
	cJSON_Delete(is);
	return closed;
}

static int agent_of(struct wsfix *fx, const char *login)
{
	for (int i = 0; i < fx->n; i++)
		if (strcasecmp(fx->a[i].login, login) == 0)
			return i;
	return -1;
}

/* The PR of task t (any state): its number, head sha, author, requested. */
struct pr_info {
	int64_t number;
	char head[41], author[40], ref[128], state[16];
	bool merged;
	char requested[4][40];
	int n_requested;
};

static bool pr_of_task(struct wsfix *fx, int t, bool open_only, struct pr_info *out)
{
	bool found = false;
	for (int64_t n = 1; n < 60; n++) {
		cJSON *pr = ghfake_pull(fx->fake, O, R, n);
		if (!pr)
			continue;
		const cJSON *head = cJSON_GetObjectItem(pr, "head");
		const char *ref = json_string_or(head, "ref", "");
		char want[16];
		snprintf(want, sizeof want, "task-%d-", t);
		const char *st = json_string_or(pr, "state", "");
		if (strncmp(ref, want, strlen(want)) == 0 &&
		    (!open_only || strcmp(st, "open") == 0)) {
			memset(out, 0, sizeof *out);
			out->number = n;
			snprintf(out->head, sizeof out->head, "%s",
			         json_string_or(head, "sha", ""));
			snprintf(out->ref, sizeof out->ref, "%s", ref);
			snprintf(out->state, sizeof out->state, "%s", st);
			snprintf(out->author, sizeof out->author, "%s",
			         json_string_or(cJSON_GetObjectItem(pr, "user"), "login", ""));
			out->merged = cJSON_IsTrue(cJSON_GetObjectItem(pr, "merged"));
			const cJSON *rq;
			cJSON_ArrayForEach(rq, cJSON_GetObjectItem(pr, "requested_reviewers"))
			{
				if (out->n_requested < 4)
					snprintf(out->requested[out->n_requested++], 40, "%s",
					         json_string_or(rq, "login", ""));
			}
			found = true; /* the newest wins */
		}
		cJSON_Delete(pr);
	}
	return found;
}

struct posted {
	bool done;
	bool ok;
};

static void on_posted(void *ud, const struct gh_result *r)
{
	struct posted *p = ud;
	p->done = true;
	p->ok = r->kind == GH_OK;
}

static bool flag(void *ctx, const void *arg)
{
	(void)arg;
	return ((struct posted *)ctx)->done;
}

/* A review of PR pr by gh (the reviewer's client). */
static void review(struct wsfix *fx, struct gh_client *gh, const struct pr_info *pr,
                   const char *event, const char *body, const char *inline_path)
{
	struct gh_review_comment c = {.path = inline_path, .line = 1, .body = "start with a title"};
	struct gh_review_new in = {.event = event,
	                           .body = body,
	                           .commit_id = pr->head,
	                           .comments = inline_path ? &c : NULL,
	                           .n_comments = inline_path ? 1 : 0};
	struct posted p = {0};
	struct ga_err e = {{0}};
	assert_true(gh_review_create(gh, O, R, pr->number, &in, on_posted, &p, &e) > 0);
	assert_true(support_run_until(&fx->loop, flag, &p, NULL, 20000));
	assert_true(p.ok);
}

/* The designated reviewer (the one requested) approves t's open PR with
 * body. */
static void approve_with(struct wsfix *fx, int t, const char *body)
{
	struct pr_info pr;
	assert_true(pr_of_task(fx, t, true, &pr));
	assert_int_equal(pr.n_requested, 1);
	int who = agent_of(fx, pr.requested[0]);
	assert_true(who >= 0);
	assert_true(strcasecmp(pr.requested[0], pr.author) != 0);
	review(fx, fx->a[who].gh, &pr, "APPROVE", body, NULL);
}

static void approve(struct wsfix *fx, int t)
{
	approve_with(fx, t, "LGTM");
}

static size_t comments_with(struct wsfix *fx, int64_t n, const char *s)
{
	cJSON *cs = wsfix_comments(fx, (int)n);
	size_t k = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cs)
	{
		if (strstr(json_string_or(c, "body", ""), s))
			k++;
	}
	cJSON_Delete(cs);
	return k;
}

/* Everything of a completed two-task plan. */
static void check_complete(struct wsfix *fx)
{
	cJSON *is = ghfake_issue(fx->fake, O, R, g_plan);
	assert_non_null(is);
	assert_string_equal(json_string_or(is, "state", ""), "closed");
	bool plan = false, complete = false;
	const cJSON *l;
	cJSON_ArrayForEach(l, cJSON_GetObjectItem(is, "labels"))
	{
		plan = plan || strcmp(json_string_or(l, "name", ""), "plan") == 0;
		complete = complete || strcmp(json_string_or(l, "name", ""), "plan:complete") == 0;
	}
	assert_true(plan && complete);
	cJSON_Delete(is);
	assert_int_equal(comments_with(fx, g_plan, "Plan Complete"), 1);
	assert_int_equal(comments_with(fx, g_plan, "Quality Loop"), 1);
	assert_int_equal(comments_with(fx, g_plan, "ga:done"), 2);
	for (int t = 1; t <= 2; t++) {
		struct pr_info pr;
		assert_true(pr_of_task(fx, t, false, &pr));
		assert_true(pr.merged);
		char sha[41];
		assert_int_equal(ghfake_branch_sha(fx->fake, O, R, pr.ref, sha), -1);
		char file[32];
		snprintf(file, sizeof file, "task-%d.txt", t);
		char *got = ghfake_file_at(fx->fake, O, R, "main", file, NULL);
		assert_non_null(got);
		free(got);
	}
	/* the room heard of the completed plan from one agent, once */
	int said = 0;
	for (int i = 0; i < fx->n; i++)
		for (int k = 0; k < fx->a[i].n_said; k++)
			said += strstr(fx->a[i].said[k], "ws-say-plan") != NULL;
	assert_int_equal(said, 1);
}

/* One cycle of every agent, to the end of what it started. */
static void cycle_all(struct wsfix *fx)
{
	for (int i = 0; i < fx->n; i++)
		wsfix_cycle(fx, i);
	assert_true(wsfix_settle(fx, 60000));
}

static void setup_two(struct wsfix *fx, const char *coder)
{
	wsfix_open(fx);
	if (coder)
		wsfix_coder(fx, coder);
	wsfix_agents(fx, 2, 0, 0);
	g_plan = wsfix_plan(fx, "Greetings", 2);
	const int order[] = {0, 1};
	if (!wsfix_run(fx, order, 2, two_prs, 240000))
		fail_msg("two PRs were not opened");
	assert_true(wsfix_settle(fx, 60000));
	/* one more cycle each: the late review requests, the review callback */
	cycle_all(fx);
}

static void add_msg(struct conv_store *cs, const char *conv, const char *id, int64_t t)
{
	struct conv_event_src src = {.platform = CONV_PLATFORM_GITHUB,
	                             .conversation = conv,
	                             .message_id = id,
	                             .author_id = "someone",
	                             .author_name = "someone",
	                             .author_kind = CONV_AUTHOR_HUMAN,
	                             .text = "text",
	                             .text_len = 4,
	                             .time_ms = t};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	assert_int_equal(conv_store_add(cs, &ev), 1);
	conv_event_free(&ev);
}

static void test_approve_merge_complete(void **state)
{
	(void)state;
	struct wsfix fx;
	setup_two(&fx, NULL);
	/* each agent was asked (once per cycle at most) to review the other's */
	assert_true(fx.a[0].reviews_asked > 0);
	assert_true(fx.a[1].reviews_asked > 0);
	approve(&fx, 1);
	approve(&fx, 2);
	const int order[] = {0, 1};
	if (!wsfix_run(&fx, order, 2, plan_closed, 120000))
		fail_msg("the plan was not completed");
	assert_true(wsfix_settle(&fx, 60000));
	check_complete(&fx);
	/* the squash title and the status */
	struct pr_info pr;
	assert_true(pr_of_task(&fx, 1, false, &pr));
	cJSON *st = wsp_status(fx.a[agent_of(&fx, pr.author)].ws);
	const cJSON *p;
	bool shown = false;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(st, "pulls"))
	{
		if (json_int_or(p, "number", 0) == pr.number) {
			shown = true;
			assert_string_equal(json_string_or(p, "state", ""), "merged");
			assert_int_equal(json_int_or(p, "task", 0), 1);
			assert_int_equal(json_int_or(p, "plan", 0), g_plan);
		}
	}
	assert_true(shown);
	cJSON_Delete(st);
	/* the merged PR's conversations are concluded by the next cycles: its
	 * review's is dropped; its thread, said something after the merge, is
	 * kept; another PR's is left alone */
	struct conv_store *cs = conv_store_new();
	fx.a[0].store = cs;
	char rkey[128], tkey[128], okey[128];
	snprintf(rkey, sizeof rkey, "github:%s/%s#%" PRId64 ":review", O, R, pr.number);
	snprintf(tkey, sizeof tkey, "github:%s/%s#%" PRId64, O, R, pr.number);
	snprintf(okey, sizeof okey, "github:%s/%s#%d:review", O, R, 999);
	add_msg(cs, rkey, "r1", 1000);
	add_msg(cs, tkey, "t1", INT64_MAX / 2);
	add_msg(cs, okey, "o1", 1000);
	/* more cycles change nothing: the workspace may then be found finished
	 * (no open plan, issue or PR: at most one sentinel issue, wsp_life.c,
	 * made by whichever cycle sees it first); after that, two passes in a
	 * row write nothing */
	struct ghfake_stats s0, s1;
	int quiet = 0;
	for (int k = 0; k < 12 && quiet < 2; k++) {
		ghfake_stats(fx.fake, &s0);
		cycle_all(&fx);
		ghfake_stats(fx.fake, &s1);
		quiet = s1.writes == s0.writes ? quiet + 1 : 0;
	}
	assert_int_equal(quiet, 2);
	int sentinels = 0;
	for (int64_t n = 1; n <= 64; n++) {
		cJSON *is = ghfake_issue(fx.fake, O, R, n);
		/* two agents without a shared lock may both make one: the later
		 * is closed as a duplicate (wsp_life.c), one stays open */
		if (is &&
		    strncmp(json_string_or(is, "title", ""), "LIL INTDEV FINISHED", 19) == 0 &&
		    strcmp(json_string_or(is, "state", ""), "open") == 0)
			sentinels++;
		cJSON_Delete(is);
	}
	assert_true(sentinels <= 1);
	assert_int_equal(conv_store_message_count(cs, rkey), 0);
	assert_int_equal(conv_store_message_count(cs, tkey), 1);
	assert_int_equal(conv_store_message_count(cs, okey), 1);
	fx.a[0].store = NULL;
	conv_store_free(cs);
	wsfix_close(&fx);
}

struct answer {
	bool done, ok;
	char text[600];
};

static void on_answer(void *ud, bool ok, const char *text)
{
	struct answer *a = ud;
	a->done = true;
	a->ok = ok;
	snprintf(a->text, sizeof a->text, "%s", text ? text : "");
}

static bool answered(void *ctx, const void *arg)
{
	(void)arg;
	return ((struct answer *)ctx)->done;
}

/* The merge was made and the agent went away before anything followed:
 * the next start finishes it, and nothing is made twice. */
static void test_restart_after_merge(void **state)
{
	(void)state;
	struct wsfix fx;
	setup_two(&fx, NULL);
	approve(&fx, 1);
	struct pr_info pr;
	assert_true(pr_of_task(&fx, 1, true, &pr));
	int author = agent_of(&fx, pr.author);
	wsfix_agent_close(&fx, author);
	struct gh_merge m = {.method = "squash", .sha = pr.head};
	struct posted p = {0};
	struct ga_err e = {{0}};
	assert_true(gh_pull_merge(fx.host, O, R, pr.number, &m, on_posted, &p, &e) > 0);
	assert_true(support_run_until(&fx.loop, flag, &p, NULL, 20000));
	assert_true(p.ok);
	wsfix_agent_open(&fx, author, 0, 0);
	wsfix_cycle(&fx, author);
	assert_true(wsfix_settle(&fx, 60000));
	assert_int_equal(comments_with(&fx, g_plan, "ga:done"), 1);
	char sha[41];
	assert_int_equal(ghfake_branch_sha(fx.fake, O, R, pr.ref, sha), -1);
	/* again, and across another restart: nothing twice */
	size_t comments = ghfake_comment_count(fx.fake, O, R, g_plan);
	size_t issues = ghfake_issue_count(fx.fake, O, R);
	size_t pulls = ghfake_pull_count(fx.fake, O, R, NULL);
	for (int k = 0; k < 2; k++) {
		wsfix_agent_close(&fx, author);
		wsfix_agent_open(&fx, author, 0, 0);
		cycle_all(&fx);
	}
	assert_int_equal(ghfake_comment_count(fx.fake, O, R, g_plan), comments);
	assert_int_equal(ghfake_issue_count(fx.fake, O, R), issues);
	assert_int_equal(ghfake_pull_count(fx.fake, O, R, NULL), pulls);
	/* the other task is merged by github_merge_pr: refused to the one
	 * who did not open it, its creator's completes the task and the plan */
	approve(&fx, 2);
	struct pr_info p2;
	assert_true(pr_of_task(&fx, 2, true, &p2));
	int a2 = agent_of(&fx, p2.author);
	struct answer an = {0};
	assert_int_equal(wsp_merge_pr(fx.a[1 - a2].ws, O, R, p2.number, on_answer, &an, &e), 0);
	assert_true(support_run_until(&fx.loop, answered, &an, NULL, 30000));
	assert_false(an.ok);
	assert_non_null(strstr(an.text, "only its creator merges"));
	memset(&an, 0, sizeof an);
	assert_int_equal(wsp_merge_pr(fx.a[a2].ws, O, R, p2.number, on_answer, &an, &e), 0);
	assert_true(support_run_until(&fx.loop, answered, &an, NULL, 60000));
	assert_true(an.ok);
	assert_true(plan_closed(&fx));
	assert_true(wsfix_settle(&fx, 60000));
	check_complete(&fx);
	assert_int_equal(ghfake_endpoint_count(fx.fake, "PUT /repos/{o}/{r}/pulls/{n}/merge", NULL),
	                 2);
	wsfix_close(&fx);
}

static struct pr_info g_revised;

static bool revised(struct wsfix *fx)
{
	struct pr_info pr;
	return pr_of_task(fx, 1, true, &pr) && strcmp(pr.head, g_revised.head) != 0 &&
	       pr.n_requested == 1;
}

static void test_changes_requested(void **state)
{
	(void)state;
	struct wsfix fx;
	setup_two(&fx, REVISER);
	struct pr_info pr;
	assert_true(pr_of_task(&fx, 1, true, &pr));
	int who = agent_of(&fx, pr.requested[0]);
	assert_true(who >= 0);
	review(&fx, fx.a[who].gh, &pr, "REQUEST_CHANGES", "The file needs a heading.",
	       "task-1.txt");
	approve(&fx, 2);
	g_revised = pr;
	const int order[] = {0, 1};
	if (!wsfix_run(&fx, order, 2, revised, 180000))
		fail_msg("PR #%lld was not revised and its review asked again",
		         (long long)pr.number);
	struct pr_info now;
	assert_true(pr_of_task(&fx, 1, true, &now));
	assert_int_equal(now.number, pr.number); /* the same PR, the same branch */
	assert_string_equal(now.ref, pr.ref);
	assert_string_equal(now.requested[0], pr.requested[0]);
	approve_with(&fx, 1, "Approved. Consider a test for an empty file later.");
	if (!wsfix_run(&fx, order, 2, plan_closed, 120000))
		fail_msg("the plan was not completed");
	assert_true(wsfix_settle(&fx, 60000));
	check_complete(&fx);
	char *got = ghfake_file_at(fx.fake, O, R, "main", "task-1.txt", NULL);
	assert_non_null(got);
	assert_non_null(strstr(got, "# heading"));
	free(got);
	/* the follow-up issue: the approval's suggestion, not the change
	 * request the revision answered */
	assert_int_equal(ghfake_count_body(fx.fake, "Feedback from @"), 1);
	assert_int_equal(ghfake_count_body(fx.fake, "> Approved. Consider a test for an empty"), 1);
	assert_int_equal(ghfake_count_body(fx.fake, "> The file needs a heading."), 0);
	wsfix_close(&fx);
}

static bool replaced(struct wsfix *fx)
{
	struct pr_info pr;
	return pr_of_task(fx, 1, true, &pr) && pr.number != g_revised.number &&
	       pr.n_requested == 1 && ghfake_pull_count(fx->fake, O, R, "open") == 1;
}

/* Two PRs open, then the default branch moves under PR 1 (the same file,
 * other words); old: PR 1. */
static void setup_conflict(struct wsfix *fx, struct pr_info *old)
{
	setup_two(fx, NULL);
	assert_true(pr_of_task(fx, 1, true, old));
	struct ghfake_file f = {.path = "task-1.txt", .content = "someone else's\n"};
	ghfake_commit(fx->fake, O, R, "main", &f, 1, "a conflicting change", "host", NULL);
}

static void test_conflict_rebuild(void **state)
{
	(void)state;
	struct wsfix fx;
	struct pr_info old;
	setup_conflict(&fx, &old);
	approve(&fx, 1);
	approve(&fx, 2);
	g_revised = old;
	const int order[] = {0, 1};
	if (!wsfix_run(&fx, order, 2, replaced, 180000))
		fail_msg("PR #%lld was not rebuilt and replaced", (long long)old.number);
	assert_true(wsfix_settle(&fx, 60000));
	struct pr_info now;
	assert_true(pr_of_task(&fx, 1, true, &now));
	cJSON *o = ghfake_pull(fx.fake, O, R, old.number);
	assert_string_equal(json_string_or(o, "state", ""), "closed");
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(o, "merged")));
	cJSON_Delete(o);
	char want[32];
	snprintf(want, sizeof want, "Replaced by #%lld", (long long)now.number);
	assert_int_equal(comments_with(&fx, old.number, want), 1);
	assert_true(strstr(now.ref, "-a2") != NULL); /* a fresh branch: the next attempt */
	approve(&fx, 1);
	if (!wsfix_run(&fx, order, 2, plan_closed, 120000))
		fail_msg("the plan was not completed");
	assert_true(wsfix_settle(&fx, 60000));
	check_complete(&fx);
	wsfix_close(&fx);
}

static bool old_closed(struct wsfix *fx)
{
	cJSON *o = ghfake_pull(fx->fake, O, R, g_revised.number);
	bool closed = o && strcmp(json_string_or(o, "state", ""), "closed") == 0;
	cJSON_Delete(o);
	return closed;
}

/* A conflict after its plan was closed: no rebuild will come, so the PR is
 * closed with a comment, once, and its branch kept. */
static void test_conflict_plan_closed(void **state)
{
	(void)state;
	struct wsfix fx;
	struct pr_info old;
	setup_conflict(&fx, &old);
	struct gh_issue_update up = {.state = "closed", .state_reason = "not_planned"};
	struct posted p = {0};
	struct ga_err e = {{0}};
	assert_true(gh_issue_update(fx.host, O, R, g_plan, &up, on_posted, &p, &e) > 0);
	assert_true(support_run_until(&fx.loop, flag, &p, NULL, 20000));
	assert_true(p.ok);
	g_revised = old;
	const int order[] = {0, 1};
	if (!wsfix_run(&fx, order, 2, old_closed, 120000))
		fail_msg("PR #%lld of a closed plan was left open", (long long)old.number);
	assert_true(wsfix_settle(&fx, 60000));
	cJSON *o = ghfake_pull(fx.fake, O, R, old.number);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(o, "merged")));
	cJSON_Delete(o);
	char want[64];
	snprintf(want, sizeof want, "its plan #%d is closed", g_plan);
	assert_int_equal(comments_with(&fx, old.number, want), 1);
	char sha[41];
	assert_int_equal(ghfake_branch_sha(fx.fake, O, R, old.ref, sha), 0);
	cycle_all(&fx);
	cycle_all(&fx);
	assert_int_equal(comments_with(&fx, old.number, want), 1);
	wsfix_close(&fx);
}

static bool owner_told(struct wsfix *fx)
{
	struct pr_info pr;
	return pr_of_task(fx, 1, true, &pr) &&
	       comments_with(fx, pr.number, "left to the workspace's owner") == 1;
}

static void test_review_timeout(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	fx.review_timeout_ms = 1500;
	fx.owner_login = "host";
	wsfix_agents(&fx, 3, 0, 0);
	g_plan = wsfix_plan(&fx, "Greetings", 3);
	const int order[] = {0, 1, 2};
	if (!wsfix_run(&fx, order, 3, owner_told, 300000))
		fail_msg("the owner was not told of an unreviewed PR");
	struct pr_info pr;
	assert_true(pr_of_task(&fx, 1, true, &pr));
	/* both other agents were asked, one after the other */
	assert_int_equal(pr.n_requested, 2);
	assert_true(strcasecmp(pr.requested[0], pr.requested[1]) != 0);
	/* more cycles: the owner is told once */
	for (int k = 0; k < 2; k++) {
		cycle_all(&fx);
	}
	assert_int_equal(comments_with(&fx, pr.number, "left to the workspace's owner"), 1);
	/* the owner is mentioned by login, so GitHub notifies them */
	assert_int_equal(comments_with(&fx, pr.number, "left to the workspace's owner @host: "), 1);
	/* the owner's approval merges it */
	review(&fx, fx.host, &pr, "APPROVE", "LGTM", NULL);
	for (int k = 0; k < 40; k++) {
		cycle_all(&fx);
		assert_true(pr_of_task(&fx, 1, false, &pr));
		if (pr.merged)
			break;
	}
	assert_true(pr.merged);
	wsfix_close(&fx);
}

int main(int argc, char **argv)
{
	if (ghfake_git_missing("test_ws_pr"))
		return 77;
	if (argc > 1)
		cmocka_set_test_filter(argv[1]); /* one test by name, by hand */
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_approve_merge_complete),
	        cmocka_unit_test(test_restart_after_merge),
	        cmocka_unit_test(test_changes_requested),
	        cmocka_unit_test(test_conflict_rebuild),
	        cmocka_unit_test(test_conflict_plan_closed),
	        cmocka_unit_test(test_review_timeout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
