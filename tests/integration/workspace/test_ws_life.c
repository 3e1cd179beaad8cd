/*
 * Recovery that is not the creator's and the workspace's lifecycle
 * (modules/workspace: wsp_recover.c, wsp_life.c), agents in one process
 * against the GitHub fake with real git (wsfix.h):
 *   - an orphaned branch (pushed, never given a PR) is recovered once: one
 *     PR for it, whose body says so, and the task in progress with a pr
 *     marker; more cycles of two agents make no second PR; a branch with
 *     nothing to merge is given back (failed) until the owner has it;
 *   - a claim whose latest marker is old but whose task has an open PR
 *     (no pr marker) is not reset;
 *   - a task that failed three times gets exactly one abandon notice from
 *     two agents (Redis);
 *   - all planned work done → exactly one finished sentinel from two
 *     agents (Redis); a person's new issue reactivates the workspace;
 *   - the sentinel verified by its creator: agreement (a person's
 *     "LGTM!", a peer's "Agreed.") keeps it; a comment naming work
 *     becomes one Feedback issue quoting it, one comment and the sentinel
 *     closed, nothing more after more cycles and a restart; closed by a
 *     person while nothing is open → reopened exactly once; a person's
 *     comment on an agent's issue closes it ("Human activity on #k");
 *   - hygiene: a stale issue and a handled one closed, a fresh one kept;
 *   - plan synthesis (the model, llmfake): open issues and no plan → the
 *     model's plan_create is a create_plan commitment; once that plan is
 *     open (made here as the commitment pipeline makes it) only the issue
 *     it names is closed "Rolled into plan #N";
 *   - the health check: all work done, the model reads the README and
 *     finds nothing → the sentinel carries its words.
 * The fake's clock is moved back to make comments and issues old.
 *
 * Exits 77 without git; the Redis variants skip without redis-server.
 */
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
#include "common/timeutil.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/wsp_int.h"
#include "support_loop.h"
#include "support_redis.h"
#include "tests/fakes/llm/llmfake.h"
#include "testutil.h"
#include "wsfix.h"

static int64_t g_back_ms; /* the fake's clock runs this far behind */

static int64_t fake_clock(void *ud)
{
	(void)ud;
	return time_now_ms() - g_back_ms;
}

static bool flag_set(void *ctx, const void *arg)
{
	(void)arg;
	return *(bool *)ctx;
}

struct call {
	bool done;
	int number;
	char msg[600];
};

static void on_call(void *ud, const struct gh_result *r)
{
	struct call *c = ud;
	c->done = true;
	c->number = r->kind == GH_OK && r->json ? (int)json_int_or(r->json, "number", 0) : 0;
	snprintf(c->msg, sizeof c->msg, "%s", r->msg);
}

/* An issue by the host ("a person" to the agents), with labels. */
static int host_issue(struct wsfix *fx, const char *title, const char *label)
{
	const char *labels[] = {label};
	struct gh_issue_new in = {.title = title,
	                          .body = "Please look at this.",
	                          .labels = labels,
	                          .n_labels = label ? 1 : 0};
	struct call c = {0};
	struct ga_err e = {{0}};
	assert_true(gh_issue_create(fx->host, WSFIX_OWNER, WSFIX_REPO, &in, on_call, &c, &e) > 0);
	assert_true(support_run_until(&fx->loop, flag_set, &c.done, NULL, 10000));
	assert_true(c.number > 0);
	return c.number;
}

static void host_close(struct wsfix *fx, int number)
{
	struct gh_issue_update in = {.state = "closed", .state_reason = "completed"};
	struct call c = {0};
	struct ga_err e = {{0}};
	assert_true(gh_issue_update(fx->host, WSFIX_OWNER, WSFIX_REPO, number, &in, on_call, &c,
	                            &e) > 0);
	assert_true(support_run_until(&fx->loop, flag_set, &c.done, NULL, 10000));
}

static bool issue_open(struct wsfix *fx, int number)
{
	cJSON *is = ghfake_issue(fx->fake, WSFIX_OWNER, WSFIX_REPO, number);
	assert_non_null(is);
	bool open = strcmp(json_string_or(is, "state", ""), "open") == 0;
	cJSON_Delete(is);
	return open;
}

/* Open issues labelled finished. */
static int sentinels(struct wsfix *fx, int *first)
{
	int n = 0;
	for (int k = 1; k < 60; k++) {
		cJSON *is = ghfake_issue(fx->fake, WSFIX_OWNER, WSFIX_REPO, k);
		if (!is)
			continue;
		bool fin = strstr(json_string_or(is, "title", ""), "FINISHED") &&
		           strcmp(json_string_or(is, "state", ""), "open") == 0;
		cJSON_Delete(is);
		if (fin) {
			if (first && n == 0)
				*first = k;
			n++;
		}
	}
	return n;
}

/* n rounds of cycles of the agents in order, each to its end. */
static void rounds(struct wsfix *fx, const int *order, int n_order, int n)
{
	for (int k = 0; k < n; k++) {
		for (int i = 0; i < n_order; i++)
			wsfix_cycle(fx, order[i]);
		assert_true(wsfix_settle(fx, 60000));
	}
}

/* The plan's first task title and its branch of attempt 1. */
static void task_branch(struct wsfix *fx, int plan, char *branch, size_t cap)
{
	cJSON *is = ghfake_issue(fx->fake, WSFIX_OWNER, WSFIX_REPO, plan);
	struct plan p;
	struct ga_err e = {{0}};
	assert_int_equal(
	        plan_parse(json_string_or(is, "title", ""), json_string_or(is, "body", ""), &p, &e),
	        0);
	assert_int_equal(plan_branch_name(1, p.tasks[0].title, 1, branch, cap), 0);
	plan_free(&p);
	cJSON_Delete(is);
}

static void fold(struct wsfix *fx, int plan, struct plan_task_state *st)
{
	cJSON *is = ghfake_issue(fx->fake, WSFIX_OWNER, WSFIX_REPO, plan);
	struct plan p;
	struct ga_err e = {{0}};
	assert_int_equal(
	        plan_parse(json_string_or(is, "title", ""), json_string_or(is, "body", ""), &p, &e),
	        0);
	cJSON *comments = wsfix_comments(fx, plan);
	struct wsp_events ev;
	wsp_events_read(&ev, comments);
	assert_true(p.n_tasks <= 8);
	plan_state_fold(&p, plan, ev.ev, ev.n, st, NULL, NULL);
	wsp_events_free(&ev);
	cJSON_Delete(comments);
	plan_free(&p);
	cJSON_Delete(is);
}

/* dan's claim of task 1 (attempt 1), and cal's reset of it. */
static void claimed_and_reset(struct wsfix *fx, int plan)
{
	char body[256];
	snprintf(body, sizeof body,
	         "Claiming.\n\n<!-- ga:claim plan=%d task=1 agent=dan-bot attempt=1 -->", plan);
	ghfake_add_comment(fx->fake, WSFIX_OWNER, WSFIX_REPO, plan, "dan-bot", body);
	snprintf(body, sizeof body,
	         "Reset.\n\n<!-- ga:reset plan=%d task=1 agent=cal-bot attempt=1 -->", plan);
	ghfake_add_comment(fx->fake, WSFIX_OWNER, WSFIX_REPO, plan, "cal-bot", body);
}

static bool one_pr(struct wsfix *fx)
{
	return ghfake_pull_count(fx->fake, WSFIX_OWNER, WSFIX_REPO, NULL) >= 1;
}

static void test_orphan(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	int plan = wsfix_plan(&fx, "Greetings", 1);
	char branch[PLAN_BRANCH_MAX + 1];
	task_branch(&fx, plan, branch, sizeof branch);
	/* dan claimed task 1, pushed its branch and stopped before its PR;
	 * cal reset the lapsed claim */
	claimed_and_reset(&fx, plan);
	struct ghfake_file f = {.path = "task-1.txt", .content = "task 1 by dan-bot\n"};
	ghfake_commit(fx.fake, WSFIX_OWNER, WSFIX_REPO, branch, &f, 1, "task 1", "dan-bot", NULL);
	wsfix_agents(&fx, 2, 3000, 600000);
	const int ada[] = {0};
	assert_true(wsfix_run(&fx, ada, 1, one_pr, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	cJSON *pr = ghfake_pull(fx.fake, WSFIX_OWNER, WSFIX_REPO, 2);
	assert_non_null(pr);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(pr, "head"), "ref", ""), branch);
	assert_non_null(strstr(json_string_or(pr, "body", ""), "Recovered"));
	char part[32];
	snprintf(part, sizeof part, "Part of #%d", plan);
	assert_non_null(strstr(json_string_or(pr, "body", ""), part));
	cJSON_Delete(pr);
	struct plan_task_state st[8];
	fold(&fx, plan, st);
	assert_int_equal(st[0].status, PLAN_IN_PROGRESS);
	assert_string_equal(st[0].assignee, "ada-bot");
	assert_int_equal(st[0].pr, 2);
	assert_int_equal(st[0].attempt, 2);
	/* never a second recovery, by either agent */
	const int both[] = {0, 1};
	rounds(&fx, both, 2, 3);
	assert_int_equal(ghfake_pull_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, NULL), 1);
	assert_true(ghfake_count_body(fx.fake, "orphaned branch") >= 1);
	wsfix_close(&fx);
}

static bool abandoned(struct wsfix *fx);

/* A branch that can never be a PR (nothing to merge): each recovery gives
 * the task back with a failed marker; after three it waits for the owner. */
static void test_orphan_refused(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	int plan = wsfix_plan(&fx, "Greetings", 1);
	char branch[PLAN_BRANCH_MAX + 1];
	task_branch(&fx, plan, branch, sizeof branch);
	claimed_and_reset(&fx, plan);
	/* the branch is main's tip: no commit of its own */
	char sha[41];
	assert_int_equal(ghfake_branch_sha(fx.fake, WSFIX_OWNER, WSFIX_REPO, "main", sha), 0);
	struct call c = {0};
	struct ga_err e = {{0}};
	assert_true(gh_ref_create(fx.host, WSFIX_OWNER, WSFIX_REPO, branch, sha, on_call, &c, &e) >
	            0);
	assert_true(support_run_until(&fx.loop, flag_set, &c.done, NULL, 10000));
	wsfix_agents(&fx, 1, 3000, 600000);
	const int ada[] = {0};
	assert_true(wsfix_run(&fx, ada, 1, abandoned, 60000));
	rounds(&fx, ada, 1, 2);
	assert_int_equal(ghfake_pull_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, NULL), 0);
	struct plan_task_state st[8];
	fold(&fx, plan, st);
	assert_int_equal(st[0].failures, PLAN_MAX_RETRIES);
	assert_true(st[0].abandoned);
	assert_int_equal(ghfake_count_body(fx.fake, "ga:abandon plan="), 1);
	wsfix_close(&fx);
}

static void test_stuck_open_pr(void **state)
{
	(void)state;
	struct support_redis r;
	char url[64];
	wsfix_redis(&r, url, sizeof url);
	struct wsfix fx;
	wsfix_open(&fx);
	fx.redis_url = url;
	int plan = wsfix_plan(&fx, "Greetings", 1);
	char branch[PLAN_BRANCH_MAX + 1];
	task_branch(&fx, plan, branch, sizeof branch);
	/* dan claimed task 1 an hour ago, pushed and opened its PR, and
	 * stopped before the pr marker */
	g_back_ms = 3600 * 1000;
	ghfake_set_clock(fx.fake, fake_clock, NULL);
	char body[256];
	snprintf(body, sizeof body,
	         "Claiming.\n\n<!-- ga:claim plan=%d task=1 agent=dan-bot "
	         "attempt=1 -->",
	         plan);
	ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, plan, "dan-bot", body);
	g_back_ms = 0;
	struct ghfake_file f = {.path = "task-1.txt", .content = "task 1 by dan-bot\n"};
	ghfake_commit(fx.fake, WSFIX_OWNER, WSFIX_REPO, branch, &f, 1, "task 1", "dan-bot", NULL);
	char prbody[128];
	snprintf(prbody, sizeof prbody, "Task 1.\n\n---\nPart of #%d\n", plan);
	struct gh_pull_new in = {
	        .title = "task(1)", .body = prbody, .head = branch, .base = "main"};
	struct call c = {0};
	struct ga_err e = {{0}};
	assert_true(gh_pull_create(fx.host, WSFIX_OWNER, WSFIX_REPO, &in, on_call, &c, &e) > 0);
	assert_true(support_run_until(&fx.loop, flag_set, &c.done, NULL, 10000));
	assert_true(c.number > 0);
	wsfix_agents(&fx, 1, 3000, 4000);
	const int ada[] = {0};
	rounds(&fx, ada, 1, 3);
	assert_int_equal(ghfake_count_body(fx.fake, "ga:reset plan="), 0);
	struct plan_task_state st[8];
	fold(&fx, plan, st);
	assert_string_equal(st[0].assignee, "dan-bot");
	assert_int_equal(ghfake_pull_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, NULL), 1);
	ghfake_set_clock(fx.fake, NULL, NULL);
	wsfix_close(&fx);
	support_redis_free(&r);
}

static bool abandoned(struct wsfix *fx)
{
	return ghfake_count_body(fx->fake, "ga:abandon plan=") >= 1;
}

static void test_abandon_once(void **state)
{
	(void)state;
	struct support_redis r;
	char url[64];
	wsfix_redis(&r, url, sizeof url);
	struct wsfix fx;
	wsfix_open(&fx);
	fx.redis_url = url;
	int plan = wsfix_plan(&fx, "Greetings", 1);
	for (int k = 1; k <= PLAN_MAX_RETRIES; k++) {
		char body[256];
		snprintf(body, sizeof body,
		         "Claiming.\n\n<!-- ga:claim plan=%d task=1 agent=dan-bot attempt=%d -->",
		         plan, k);
		ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, plan, "dan-bot", body);
		snprintf(body, sizeof body,
		         "Failed.\n\n<!-- ga:failed plan=%d task=1 agent=dan-bot attempt=%d -->",
		         plan, k);
		ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, plan, "dan-bot", body);
	}
	wsfix_agents(&fx, 2, 3000, 600000);
	const int both[] = {0, 1};
	assert_true(wsfix_run(&fx, both, 2, abandoned, 60000));
	rounds(&fx, both, 2, 3);
	assert_int_equal(ghfake_count_body(fx.fake, "ga:abandon plan="), 1);
	struct plan_task_state st[8];
	fold(&fx, plan, st);
	assert_true(st[0].abandoned);
	assert_int_equal(st[0].assignee[0], '\0');
	wsfix_close(&fx);
	support_redis_free(&r);
}

static bool one_sentinel(struct wsfix *fx)
{
	return sentinels(fx, NULL) >= 1;
}

static void test_sentinel(void **state)
{
	(void)state;
	struct support_redis r;
	char url[64];
	wsfix_redis(&r, url, sizeof url);
	struct wsfix fx;
	wsfix_open(&fx);
	fx.redis_url = url;
	int plan = wsfix_plan(&fx, "Greetings", 1);
	host_close(&fx, plan);
	wsfix_agents(&fx, 2, 3000, 600000);
	const int both[] = {0, 1};
	assert_true(wsfix_run(&fx, both, 2, one_sentinel, 60000));
	rounds(&fx, both, 2, 3);
	int s = 0;
	assert_int_equal(sentinels(&fx, &s), 1);
	/* a person's new issue reactivates the workspace */
	int asked = host_issue(&fx, "The map is missing", NULL);
	rounds(&fx, both, 2, 3);
	assert_false(issue_open(&fx, s));
	assert_true(issue_open(&fx, asked));
	assert_int_equal(sentinels(&fx, NULL), 0);
	char say[64];
	snprintf(say, sizeof say, "New activity on #%d", asked);
	assert_int_equal(ghfake_count_body(fx.fake, say), 1);
	wsfix_close(&fx);
	support_redis_free(&r);
}

static void test_hygiene(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	ghfake_set_clock(fx.fake, fake_clock, NULL);
	g_back_ms = 8LL * 24 * 3600 * 1000;
	int stale = host_issue(&fx, "An old idea", NULL);
	g_back_ms = 4LL * 24 * 3600 * 1000;
	int memo = host_issue(&fx, "A note to self", WSP_LABEL_MEMO);
	g_back_ms = 2LL * 24 * 3600 * 1000;
	int handled = host_issue(&fx, "A question", NULL);
	ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, handled, "ada-bot", "Answered: yes.");
	int asked = host_issue(&fx, "Another question", NULL);
	ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, asked, "ada-bot", "Which page?");
	ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, asked, "host", "The map page.");
	int discussion = host_issue(&fx, "Long talk", WSP_LABEL_DISCUSSION);
	g_back_ms = 0;
	int fresh = host_issue(&fx, "A new request", NULL);
	wsfix_agents(&fx, 1, 3000, 600000);
	const int ada[] = {0};
	rounds(&fx, ada, 1, 3);
	assert_false(issue_open(&fx, stale));
	assert_false(issue_open(&fx, memo));
	assert_false(issue_open(&fx, handled));
	assert_true(issue_open(&fx, asked));
	assert_true(issue_open(&fx, discussion));
	assert_true(issue_open(&fx, fresh));
	ghfake_set_clock(fx.fake, NULL, NULL);
	wsfix_close(&fx);
}

static struct llmfake *llm_up(struct wsfix *fx, const char *script)
{
	char err[256];
	struct llmfake *m = llmfake_new(err, sizeof err);
	if (!m)
		fail_msg("llmfake: %s", err);
	llmfake_script(m, script);
	fx->llm_url = llmfake_base_url(m);
	return m;
}

static bool promised(struct wsfix *fx)
{
	return ledger_count(&fx->a[0].ledger, LEDGER_PENDING) >= 1;
}

struct found {
	const cJSON *params;
};

static void find_plan(void *ud, const struct ledger_entry *e)
{
	struct found *f = ud;
	if (strcmp(e->action, "create_plan") == 0)
		f->params = e->params;
}

/* The plan of the commitment, made as the commitment pipeline makes it
 * (plan_draft_from_json → plan_draft_format, labels plan + plan:active). */
static int make_promised_plan(struct wsfix *fx)
{
	struct found f = {0};
	ledger_each(&fx->a[0].ledger, find_plan, &f);
	assert_non_null(f.params);
	struct plan_draft d;
	struct ga_err e = {{0}};
	assert_int_equal(plan_draft_from_json(f.params, &d, &e), 0);
	char *body = plan_draft_format(&d, &e);
	char *title = plan_format_title(d.title);
	const char *labels[] = {PLAN_LABEL, PLAN_LABEL_ACTIVE};
	struct gh_issue_new in = {.title = title, .body = body, .labels = labels, .n_labels = 2};
	struct call c = {0};
	assert_true(gh_issue_create(fx->host, WSFIX_OWNER, WSFIX_REPO, &in, on_call, &c, &e) > 0);
	assert_true(support_run_until(&fx->loop, flag_set, &c.done, NULL, 10000));
	assert_true(c.number > 0);
	free(body);
	free(title);
	plan_draft_free(&d);
	return c.number;
}

static void test_synthesis(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	int map = host_issue(&fx, "Add a map page", NULL);
	int footer = host_issue(&fx, "Why is the footer grey?", NULL);
	struct llmfake *m = llm_up(
	        &fx, "[{\"match\":{\"call\":0,\"tools\":[\"plan_create\"]},\"tool_calls\":[{"
	             "\"name\":\"plan_create\",\"arguments\":{\"owner\":\"acme\",\"repo\":\"www-"
	             "lil-intdev-demo\",\"title\":\"Roll-up of the open issues\",\"goal\":\"The "
	             "map.\",\"context\":\"Open issues.\",\"tasks\":[{\"title\":\"Add the map "
	             "page\",\"description\":\"Covers #1: a page with the map.\"}]}}]},"
	             "{\"match\":{\"call\":1},\"content\":\"One plan for the map; the footer is a "
	             "question.\"}]");
	wsfix_agents(&fx, 1, 3000, 600000);
	const int ada[] = {0};
	assert_true(wsfix_run(&fx, ada, 1, promised, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	/* the model read both issues, the bodies included */
	cJSON *req = llmfake_request(m, 0);
	char *txt = cJSON_PrintUnformatted(req);
	assert_non_null(strstr(txt, "#2: Why is the footer grey?"));
	assert_non_null(strstr(txt, "Please look at this."));
	free(txt);
	cJSON_Delete(req);
	/* no issue is closed before the plan exists */
	rounds(&fx, ada, 1, 2);
	assert_true(issue_open(&fx, map));
	assert_true(issue_open(&fx, footer));
	int plan = make_promised_plan(&fx);
	rounds(&fx, ada, 1, 2);
	assert_false(issue_open(&fx, map));
	assert_true(issue_open(&fx, footer));
	char rolled[64];
	snprintf(rolled, sizeof rolled, "Rolled into plan #%d", plan);
	assert_int_equal(ghfake_count_body(fx.fake, rolled), 1);
	/* one model run: the cooldown and the open plan keep it at that */
	assert_int_equal(llmfake_calls(m), 2);
	wsfix_close(&fx);
	llmfake_free(m);
}

static void test_health(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	int plan = wsfix_plan(&fx, "Greetings", 1);
	host_close(&fx, plan);
	struct llmfake *m = llm_up(
	        &fx, "[{\"match\":{\"tools\":[\"github_create_issue\"],\"last_user_contains\":"
	             "\"README.md\"},\"content\":\"The README's promises are all kept.\"}]");
	wsfix_agents(&fx, 1, 3000, 600000);
	const int ada[] = {0};
	assert_true(wsfix_run(&fx, ada, 1, one_sentinel, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	rounds(&fx, ada, 1, 2);
	assert_int_equal(sentinels(&fx, NULL), 1);
	assert_int_equal(ghfake_count_body(fx.fake, "The README's promises are all kept."), 1);
	assert_int_equal(llmfake_calls(m), 1);
	wsfix_close(&fx);
	llmfake_free(m);
}

/* What the lifecycle and recovery add to an idle cycle: one list of the
 * open issues, a free 304 when nothing changed (no PR or branch list for
 * a task nobody left behind). */
static void test_idle_cost(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	wsfix_plan(&fx, "Greetings", 1);
	wsfix_agents(&fx, 1, 3000, 600000);
	const int ada[] = {0};
	assert_true(wsfix_run(&fx, ada, 1, one_pr, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	/* the cycle after the last change still sees it once */
	rounds(&fx, ada, 1, 3);
	cJSON *st = wsp_status(fx.a[0].ws);
	const cJSON *lc = cJSON_GetObjectItem(st, "lastCycle");
	/* the plans, the plan's comments, the open issues; the open PRs and,
	 * for the one open PR, what the merge rule reads (wsp_pr.c): every one
	 * a free 304 */
	assert_int_equal(json_int_or(lc, "requests", -1), 8);
	assert_int_equal(json_int_or(lc, "notModified", -1), 8);
	cJSON_Delete(st);
	wsfix_close(&fx);
}

/* Requests for owner/repo/issues/<n><rest> (GET) the fake has seen. */
static size_t gets_of(struct wsfix *fx, int n, const char *rest)
{
	char path[128];
	snprintf(path, sizeof path, "/repos/%s/%s/issues/%d%s", WSFIX_OWNER, WSFIX_REPO, n, rest);
	return ghfake_count(fx->fake, "GET", path, 0);
}

/* Issues whose title starts "Feedback from #"; the first's number. */
static int feedback_issues(struct wsfix *fx, int *first)
{
	int n = 0;
	for (int k = 1; k < 60; k++) {
		cJSON *is = ghfake_issue(fx->fake, WSFIX_OWNER, WSFIX_REPO, k);
		if (!is)
			continue;
		if (strncmp(json_string_or(is, "title", ""), "Feedback from #", 15) == 0) {
			if (first && n == 0)
				*first = k;
			n++;
		}
		cJSON_Delete(is);
	}
	return n;
}

static bool feedback_made(struct wsfix *fx)
{
	return feedback_issues(fx, NULL) >= 1;
}

static int g_watched; /* the issue a condition looks at */
static size_t g_gets; /* its reads so far */

static bool reopened_said(struct wsfix *fx)
{
	return ghfake_count_body(fx->fake, "Reopened: no issue is open") >= 1;
}

static bool watched_closed(struct wsfix *fx)
{
	return !issue_open(fx, g_watched);
}

static bool watched_read(struct wsfix *fx)
{
	return gets_of(fx, g_watched, "") > g_gets + 1;
}

static bool comments_read(struct wsfix *fx)
{
	return gets_of(fx, g_watched, "/comments") > g_gets + 1;
}

/* All planned work done; ada (alone, short locks) makes the sentinel. */
static int finished_by_ada(struct wsfix *fx)
{
	int plan = wsfix_plan(fx, "Greetings", 1);
	host_close(fx, plan);
	wsfix_agents(fx, 1, 1000, 600000);
	const int ada[] = {0};
	assert_true(wsfix_run(fx, ada, 1, one_sentinel, 60000));
	assert_true(wsfix_settle(fx, 60000));
	int s = 0;
	assert_int_equal(sentinels(fx, &s), 1);
	return s;
}

/* Agreement on the sentinel keeps it; a comment naming work becomes one
 * Feedback issue, one comment and the sentinel closed — once, also after
 * more cycles and a restart on the same home. */
static void test_sentinel_feedback(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	int s = finished_by_ada(&fx);
	const int ada[] = {0};
	ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, s, "host", "LGTM!");
	/* a peer's agreement carries its chain marker */
	ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, s, "bob-bot",
	                   "Agreed.\n\n<!-- ga:chain=1 key=ws-x:1 -->");
	size_t issues = ghfake_issue_count(fx.fake, WSFIX_OWNER, WSFIX_REPO);
	g_watched = s;
	g_gets = gets_of(&fx, s, "/comments");
	assert_true(wsfix_run(&fx, ada, 1, comments_read, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	assert_true(issue_open(&fx, s));
	assert_int_equal(ghfake_comment_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, s), 2);
	assert_int_equal(ghfake_issue_count(fx.fake, WSFIX_OWNER, WSFIX_REPO), issues);
	/* a person names remaining work */
	ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, s, "host",
	                   "Done, but the map page is still missing.");
	assert_true(wsfix_run(&fx, ada, 1, feedback_made, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	rounds(&fx, ada, 1, 2);
	int k = 0;
	assert_int_equal(feedback_issues(&fx, &k), 1);
	cJSON *is = ghfake_issue(fx.fake, WSFIX_OWNER, WSFIX_REPO, k);
	char title[64];
	snprintf(title, sizeof title, "Feedback from #%d: remaining work identified", s);
	assert_string_equal(json_string_or(is, "title", ""), title);
	const char *body = json_string_or(is, "body", "");
	assert_non_null(strstr(body, "**@host:**"));
	assert_non_null(strstr(body, "Done, but the map page is still missing."));
	assert_null(strstr(body, "LGTM"));
	assert_null(strstr(body, "Agreed"));
	cJSON_Delete(is);
	assert_false(issue_open(&fx, s));
	assert_true(issue_open(&fx, k));
	char said[64];
	snprintf(said, sizeof said, "gathered in #%d", k);
	assert_int_equal(ghfake_count_body(fx.fake, said), 1);
	assert_int_equal(ghfake_comment_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, s), 4);
	/* a restart on the same home: nothing more */
	wsfix_agent_close(&fx, 0);
	wsfix_agent_open(&fx, 0, 1000, 600000);
	rounds(&fx, ada, 1, 3);
	assert_int_equal(ghfake_issue_count(fx.fake, WSFIX_OWNER, WSFIX_REPO), issues + 1);
	assert_int_equal(ghfake_comment_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, s), 4);
	assert_int_equal(sentinels(&fx, NULL), 0);
	wsfix_close(&fx);
}

/* Closed by a person while nothing is open: reopened once; closed again,
 * it stays closed and no new sentinel is made. */
static void test_sentinel_reopen(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	int s = finished_by_ada(&fx);
	const int ada[] = {0};
	host_close(&fx, s);
	g_watched = s;
	assert_true(wsfix_run(&fx, ada, 1, reopened_said, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	assert_true(issue_open(&fx, s));
	assert_int_equal(ghfake_count_body(fx.fake, "Reopened: no issue is open"), 1);
	host_close(&fx, s);
	g_gets = gets_of(&fx, s, "");
	assert_true(wsfix_run(&fx, ada, 1, watched_read, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	assert_false(issue_open(&fx, s));
	assert_int_equal(sentinels(&fx, NULL), 0);
	assert_int_equal(ghfake_count_body(fx.fake, "Reopened: no issue is open"), 1);
	wsfix_close(&fx);
}

/* Nobody spoke on the sentinel; a person comments on an agent's issue
 * opened since: the sentinel is closed naming it, once. */
static void test_sentinel_activity(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	int s = finished_by_ada(&fx);
	const int ada[] = {0};
	/* an agent's issue does not reactivate by itself */
	int note = (int)ghfake_add_issue(fx.fake, WSFIX_OWNER, WSFIX_REPO, "ada-bot", "A note",
	                                 "Something to remember.");
	g_watched = note;
	g_gets = gets_of(&fx, note, "/comments");
	assert_true(wsfix_run(&fx, ada, 1, comments_read, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	assert_true(issue_open(&fx, s));
	ghfake_add_comment(fx.fake, WSFIX_OWNER, WSFIX_REPO, note, "host", "Please do it now.");
	g_watched = s;
	assert_true(wsfix_run(&fx, ada, 1, watched_closed, 60000));
	assert_true(wsfix_settle(&fx, 60000));
	rounds(&fx, ada, 1, 2);
	char said[64];
	snprintf(said, sizeof said, "Human activity on #%d", note);
	assert_int_equal(ghfake_count_body(fx.fake, said), 1);
	assert_int_equal(feedback_issues(&fx, NULL), 0);
	wsfix_close(&fx);
}

int main(void)
{
	if (ghfake_git_missing("test_ws_life"))
		return 77;
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_orphan),          cmocka_unit_test(test_orphan_refused),
	        cmocka_unit_test(test_stuck_open_pr),   cmocka_unit_test(test_abandon_once),
	        cmocka_unit_test(test_sentinel),        cmocka_unit_test(test_hygiene),
	        cmocka_unit_test(test_synthesis),       cmocka_unit_test(test_health),
	        cmocka_unit_test(test_idle_cost),       cmocka_unit_test(test_sentinel_feedback),
	        cmocka_unit_test(test_sentinel_reopen), cmocka_unit_test(test_sentinel_activity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
