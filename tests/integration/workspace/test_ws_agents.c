/*
 * Several agents on one plan (modules/workspace), in one process on one
 * loop, against the GitHub fake with real git and a scripted coder in the
 * sandbox: each of three tasks is claimed by exactly one agent and becomes
 * one pushed branch and one pull request whose diff is the coder's change,
 * reported on the plan with its marker, the plan's body showing it, the
 * designated reviewer — only that one — requested. Across start orders
 * (together, reversed, one agent first), with the in-process coordination
 * (the markers alone decide) and with Redis (tests/support/support_redis.h).
 *
 * And an agent killed while it holds a task (a real SIGKILL: the test runs
 * itself as a child with --child): its Redis lock lapses after the TTL,
 * another agent resets the claim, takes the task (attempt 2) and opens its
 * pull request — one PR for the task in the end.
 *
 * Exits 77 without git.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/json.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/wsp_int.h"
#include "support_loop.h"
#include "support_redis.h"
#include "testutil.h"
#include "wsfix.h"

static char g_self[600];
static int g_plan;

/* Open PRs of the workspace. */
static bool three_prs(struct wsfix *fx)
{
	return ghfake_pull_count(fx->fake, WSFIX_OWNER, WSFIX_REPO, "open") >= 3;
}

static int task_of_branch(const char *b)
{
	return strncmp(b, "task-", 5) == 0 ? atoi(b + 5) : 0;
}

/* The plan as the markers say, read as the engine reads it. */
struct folded {
	struct plan plan;
	struct plan_task_state st[8];
	int claims[8]; /* claim comments per task (not deleted) */
	char claimers[8][8][PLAN_LOGIN_MAX];
	char *body;
};

static void fold_plan(struct wsfix *fx, int number, struct folded *f)
{
	memset(f, 0, sizeof *f);
	cJSON *issue = ghfake_issue(fx->fake, WSFIX_OWNER, WSFIX_REPO, number);
	assert_non_null(issue);
	f->body = strdup(json_string_or(issue, "body", ""));
	struct ga_err e = {{0}};
	assert_int_equal(plan_parse(json_string_or(issue, "title", ""), f->body, &f->plan, &e), 0);
	cJSON_Delete(issue);
	cJSON *comments = wsfix_comments(fx, number);
	struct wsp_events ev;
	wsp_events_read(&ev, comments);
	assert_true(f->plan.n_tasks <= 8);
	plan_state_fold(&f->plan, number, ev.ev, ev.n, f->st, NULL, NULL);
	for (size_t i = 0; i < ev.n; i++) {
		int t = ev.ev[i].m.task;
		if (ev.ev[i].m.kind == PLAN_MARK_CLAIM && t >= 1 && t < 8 && f->claims[t] < 8)
			snprintf(f->claimers[t][f->claims[t]++], PLAN_LOGIN_MAX, "%s",
			         ev.ev[i].author);
	}
	wsp_events_free(&ev);
	cJSON_Delete(comments);
}

static void folded_free(struct folded *f)
{
	plan_free(&f->plan);
	free(f->body);
}

/* Every check of a finished three-task run. */
static void check_three(struct wsfix *fx)
{
	assert_int_equal(ghfake_pull_count(fx->fake, WSFIX_OWNER, WSFIX_REPO, NULL), 3);
	int seen[4] = {0};
	int64_t pr_of[4] = {0};
	char author_of[4][PLAN_LOGIN_MAX] = {{0}};
	for (int64_t n = 1; n < 40; n++) {
		cJSON *pr = ghfake_pull(fx->fake, WSFIX_OWNER, WSFIX_REPO, n);
		if (!pr)
			continue;
		const char *head = json_string_or(cJSON_GetObjectItem(pr, "head"), "ref", "");
		const char *user = json_string_or(cJSON_GetObjectItem(pr, "user"), "login", "");
		int t = task_of_branch(head);
		assert_true(t >= 1 && t <= 3);
		seen[t]++;
		pr_of[t] = n;
		snprintf(author_of[t], PLAN_LOGIN_MAX, "%s", user);
		/* the diff is the coder's change, made by the PR's author */
		char file[32], want[64];
		snprintf(file, sizeof file, "task-%d.txt", t);
		snprintf(want, sizeof want, "task %d by %s\n", t, user);
		char *got = ghfake_file_at(fx->fake, WSFIX_OWNER, WSFIX_REPO, head, file, NULL);
		assert_non_null(got);
		assert_string_equal(got, want);
		free(got);
		/* the §3.9 body and the designated reviewer, only that one */
		const char *body = json_string_or(pr, "body", "");
		char part[32];
		snprintf(part, sizeof part, "Part of #%d", g_plan);
		assert_non_null(strstr(body, part));
		assert_non_null(strstr(body, "**Tests:** Passed"));
		const cJSON *rq = cJSON_GetObjectItem(pr, "requested_reviewers");
		assert_int_equal(cJSON_GetArraySize(rq), 1);
		const char *rv = json_string_or(cJSON_GetArrayItem(rq, 0), "login", "");
		assert_true(strcasecmp(rv, user) != 0);
		/* one of the agents: a person is never asked by the loop */
		bool agent = false;
		for (int i = 0; i < fx->n; i++)
			agent = agent || strcasecmp(rv, fx->a[i].login) == 0;
		assert_true(agent);
		cJSON_Delete(pr);
	}
	for (int t = 1; t <= 3; t++)
		assert_int_equal(seen[t], 1);
	struct folded f;
	fold_plan(fx, g_plan, &f);
	for (int t = 1; t <= 3; t++) {
		const struct plan_task_state *s = plan_state_find(f.st, f.plan.n_tasks, t);
		assert_non_null(s);
		assert_int_equal(s->status, PLAN_IN_PROGRESS);
		assert_int_equal(s->pr, pr_of[t]);
		assert_string_equal(s->assignee, author_of[t]);
		/* exactly one claim left standing, the holder's */
		assert_int_equal(f.claims[t], 1);
		assert_string_equal(f.claimers[t][0], author_of[t]);
	}
	/* the body shows it (re-rendered from the markers) */
	size_t inprog = 0;
	for (const char *p = f.body; (p = strstr(p, "**Status:** in_progress")); p++)
		inprog++;
	assert_int_equal(inprog, 3);
	folded_free(&f);
	int won = 0, prs = 0;
	for (int i = 0; i < fx->n; i++) {
		cJSON *st = wsp_status(fx->a[i].ws);
		const cJSON *c = cJSON_GetObjectItem(st, "counters");
		won += (int)json_int_or(c, "claimsWon", 0);
		prs += (int)json_int_or(c, "prs", 0);
		cJSON_Delete(st);
	}
	assert_int_equal(won, 3);
	assert_int_equal(prs, 3);
}

static void run_three(struct wsfix *fx, const int *order, int n)
{
	g_plan = wsfix_plan(fx, "Greetings", 3);
	if (!wsfix_run(fx, order, n, three_prs, 240000))
		fail_msg("three PRs were not opened");
	assert_true(wsfix_settle(fx, 60000));
	/* one more cycle each: the body shows the last reports */
	for (int i = 0; i < fx->n; i++)
		wsfix_cycle(fx, i);
	assert_true(wsfix_settle(fx, 60000));
	check_three(fx);
}

static void test_together(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	wsfix_agents(&fx, 3, 0, 0);
	const int order[] = {0, 1, 2};
	run_three(&fx, order, 3);
	/* the room heard of the plan */
	assert_true(fx.a[0].room_states > 0);
	wsfix_close(&fx);
}

static void test_reversed(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	wsfix_agents(&fx, 3, 0, 0);
	const int order[] = {2, 1, 0};
	run_three(&fx, order, 3);
	wsfix_close(&fx);
}

static bool one_pr(struct wsfix *fx)
{
	return ghfake_pull_count(fx->fake, WSFIX_OWNER, WSFIX_REPO, "open") >= 1;
}

static void test_one_first(void **state)
{
	(void)state;
	struct wsfix fx;
	wsfix_open(&fx);
	wsfix_agents(&fx, 3, 0, 0);
	g_plan = wsfix_plan(&fx, "Greetings", 3);
	const int first[] = {1};
	assert_true(wsfix_run(&fx, first, 1, one_pr, 60000));
	const int all[] = {1, 0, 2};
	if (!wsfix_run(&fx, all, 3, three_prs, 240000))
		fail_msg("three PRs were not opened");
	assert_true(wsfix_settle(&fx, 60000));
	for (int i = 0; i < 3; i++)
		wsfix_cycle(&fx, i);
	assert_true(wsfix_settle(&fx, 60000));
	check_three(&fx);
	wsfix_close(&fx);
}

/* A redis-server of the test's own; skips the test without one. */
static void test_redis(void **state)
{
	(void)state;
	struct support_redis r;
	char url[64];
	wsfix_redis(&r, url, sizeof url);
	struct wsfix fx;
	wsfix_open(&fx);
	fx.redis_url = url;
	wsfix_agents(&fx, 3, 0, 0);
	const int order[] = {0, 1, 2};
	run_three(&fx, order, 3);
	/* with the lock first, losers never even comment */
	int lost = 0;
	for (int i = 0; i < 3; i++) {
		cJSON *st = wsp_status(fx.a[i].ws);
		lost += (int)json_int_or(cJSON_GetObjectItem(st, "counters"), "claimsLost", 0);
		cJSON_Delete(st);
	}
	assert_int_equal(lost, 0);
	wsfix_close(&fx);
	support_redis_free(&r);
}

/* --- killed while holding a task ----------------------------------------------------------------
 */

static const char SLEEPER[] = "sleep 600\n";

static int child_main(char **argv)
{
	/* --child DIR BASE REDIS */
	struct wsfix fx;
	wsfix_open_child(&fx, argv[2], argv[3]);
	fx.redis_url = argv[4];
	fx.n = 4;
	wsfix_agent_open(&fx, 3, 3000, 4000);
	for (;;) {
		wsfix_cycle(&fx, 3);
		support_run_until(&fx.loop, NULL, NULL, NULL, 200);
	}
	return 3;
}

static bool coder_running(const char *memory)
{
	char *rec = tu_read(memory, "taskexec.json");
	bool yes = rec && strstr(rec, "\"phase\":\"coding\"");
	free(rec);
	return yes;
}

struct kill_wait {
	struct wsfix *fx;
	char memory[700];
};

static bool child_coding(void *ctx, const void *arg)
{
	(void)arg;
	return coder_running(((struct kill_wait *)ctx)->memory);
}

static bool reset_and_pr(struct wsfix *fx)
{
	return ghfake_pull_count(fx->fake, WSFIX_OWNER, WSFIX_REPO, "open") >= 1;
}

static void test_killed_holder(void **state)
{
	(void)state;
	struct support_redis r;
	char url[64];
	wsfix_redis(&r, url, sizeof url);
	struct wsfix fx;
	wsfix_open(&fx);
	fx.redis_url = url;
	g_plan = wsfix_plan(&fx, "Greetings", 1);
	/* dan (the child) takes the task; its coder never ends */
	wsfix_coder(&fx, SLEEPER);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(g_self, g_self, "--child", fx.dir, fx.base, url, (char *)NULL);
		_exit(127);
	}
	struct kill_wait kw = {&fx, ""};
	wsfix_path(kw.memory, sizeof kw.memory, "%s/dan/memory", fx.dir);
	bool coding = support_run_until(&fx.loop, child_coding, &kw, NULL, 60000);
	kill(pid, SIGKILL);
	int status = 0;
	waitpid(pid, &status, 0);
	assert_true(coding);
	/* the claim is dan's on GitHub */
	struct folded f;
	fold_plan(&fx, g_plan, &f);
	assert_string_equal(f.st[0].assignee, "dan-bot");
	assert_int_equal(f.st[0].attempt, 1);
	folded_free(&f);
	/* ada, with the same short TTL: the lock lapses, the claim is reset,
	 * ada takes it and the coder (a working one now) makes the PR */
	wsfix_coder(&fx, WSFIX_CODER);
	fx.n = 1;
	wsfix_agent_open(&fx, 0, 3000, 4000);
	const int order[] = {0};
	if (!wsfix_run(&fx, order, 1, reset_and_pr, 90000))
		fail_msg("the lapsed claim was not taken over");
	assert_true(wsfix_settle(&fx, 60000));
	wsfix_cycle(&fx, 0);
	assert_true(wsfix_settle(&fx, 60000));
	fold_plan(&fx, g_plan, &f);
	assert_string_equal(f.st[0].assignee, "ada-bot");
	assert_int_equal(f.st[0].attempt, 2);
	assert_int_equal(f.st[0].status, PLAN_IN_PROGRESS);
	assert_true(f.st[0].pr > 0);
	folded_free(&f);
	assert_int_equal(ghfake_pull_count(fx.fake, WSFIX_OWNER, WSFIX_REPO, NULL), 1);
	cJSON *pr = ghfake_pull(fx.fake, WSFIX_OWNER, WSFIX_REPO, 2);
	assert_non_null(pr);
	/* attempt 2 has its own branch */
	assert_non_null(strstr(json_string_or(cJSON_GetObjectItem(pr, "head"), "ref", ""), "-a2"));
	cJSON_Delete(pr);
	assert_true(ghfake_count_body(fx.fake, "ga:reset plan=") >= 1);
	/* dan's lock is gone from Redis: a fresh claim of it wins */
	wsfix_close(&fx);
	support_redis_free(&r);
}

int main(int argc, char **argv)
{
	if (argc > 4 && strcmp(argv[1], "--child") == 0)
		return child_main(argv);
	if (ghfake_git_missing("test_ws_agents"))
		return 77;
	wsfix_path(g_self, sizeof g_self, "%s", argv[0]);
	if (argv[0][0] != '/') {
		char cwd[400];
		if (getcwd(cwd, sizeof cwd))
			wsfix_path(g_self, sizeof g_self, "%s/%s", cwd, argv[0]);
	}
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_together),      cmocka_unit_test(test_reversed),
	        cmocka_unit_test(test_one_first),     cmocka_unit_test(test_redis),
	        cmocka_unit_test(test_killed_holder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
