/*
 * The work loop end to end with real binaries: three general-agent
 * processes in a real agent-space room, ghfake-server (real git behind
 * it), llmfake-server, a scripted coder in the sandbox.
 *
 *   - the host asks in the room for a small feature in the workspace
 *     (its link in the message: every agent watches it); the owner of the
 *     request (the room's ownership rule) commits to a plan; the plan issue
 *     appears, its three tasks from the request's list; each task is claimed
 *     by one agent (through the room's claims and a marker), becomes one
 *     pushed branch and one pull request whose diff is the coder's change;
 *     the plan shows every task in_progress with its PR (the markers, and
 *     the body rendered from them); the room heard workspace_state;
 *   - the agent working on task 2 is SIGKILLed while its coder runs, and
 *     started again: the task is resumed (same attempt, same branch, the
 *     clone reused), never lost, and there is no second branch or PR for it;
 *   - the owner at the terminal says "work on the plan in acme/…": the
 *     model calls workspace_watch, the agent claims the task; while its
 *     coder runs (held by the test) `general-agent status` names the task
 *     and its phase; then the PR is opened and the owner is told. "Stop
 *     the work in acme/…": the model calls workspace_unwatch, the owner is
 *     told, and status shows no workspace watched.
 *
 * Skips (77) without git (ghfake-server serves real repositories); without
 * bubblewrap's namespaces the coder runs with CODER_SANDBOX=off and the
 * rest is the same.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "adapters/github/gh_work.h"
#include "common/json.h"
#include "modules/plan/taskstate.h"
#include "modules/workspace/wsp_int.h"
#include "proc.h"
#include "support_fake.h"
#include "support_wait.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/integration/space-client/harness.h"
#include "testutil.h"

#define OWNER   "acme"
#define REPO    "www-lil-intdev-demo"
#define WAIT_MS 20000
#define VAR_MAX 600    /* one variable of an agent's environment */
#define WORK_MS 240000 /* three tasks through a loaded machine */

static const char *const NAMES[3] = {"Ada", "Bob", "Cal"};
static const char *const LOGINS[3] = {"ada-bot", "bob-bot", "cal-bot"};

static bool g_sandbox;

/* The coder: the task's file, committed. While <dir>/gate/hold exists it
 * waits (the gate directory is bound read-only into the sandbox: the test
 * holds a run to look at it). Task 2's first run commits a first part and
 * stops for a long while (the test kills its agent then); a run after
 * that finds that commit (a resumed run keeps the commits) and goes on at
 * once. */
static const char CODER[] =
        "set -e\n"
        "i=0; while [ -e \"$GATE/hold\" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
        "n=$(sed -n 's/^### Task \\([0-9]*\\):.*/\\1/p' \"$1\" | head -1)\n"
        "if [ \"$n\" = 2 ] && ! git log --format=%s | grep -q wip; then\n"
        "  echo wip > wip.txt; git add wip.txt; git commit -q -m \"task(2): wip\"; sleep 300\n"
        "fi\n"
        "echo \"task $n by $GIT_AUTHOR_NAME\" > \"task-$n.txt\"\n"
        "git add \"task-$n.txt\"\n"
        "git commit -q -m \"task($n): the task's file\"\n";

struct world {
	char dir[256];
	struct th_room room;
	struct support_fake gh, llm;
	char homes[3][256];
	struct proc a[3];
	bool running[3];
	struct ws_client *obs;
};

static void token_of(int i, char *out, size_t cap)
{
	snprintf(out, cap, "tok-%s-0123456789abcdef", LOGINS[i]);
}

static void start_fakes(struct world *w, const char *llm_script)
{
	char seed[300], err[4096];
	snprintf(seed, sizeof seed, "%s/seed", w->dir);
	mkdir(seed, 0700);
	tu_write(seed, "README.md", "# Demo\n");
	tu_write(seed, "Makefile", "test:\n\t@echo tests pass\n");
	tu_write(seed, "LIL-INTDEV-AGENTS.md", "# Agents\n");
	tu_write(seed, "SCENARIOS.md", "# Scenarios\n");
	char t[3][80], seedarg[400];
	const char *argv[16];
	int k = 0;
	for (int i = 0; i < 3; i++) {
		char tok[64];
		token_of(i, tok, sizeof tok);
		snprintf(t[i], sizeof t[i], "%s:%s", tok, LOGINS[i]);
		argv[k++] = "--token";
		argv[k++] = t[i];
	}
	snprintf(seedarg, sizeof seedarg, OWNER "/" REPO "=%s", seed);
	argv[k++] = "--org";
	argv[k++] = OWNER;
	argv[k++] = "--repo";
	argv[k++] = OWNER "/" REPO;
	argv[k++] = "--seed";
	argv[k++] = seedarg;
	argv[k] = NULL;
	if (support_fake_start(&w->gh, "tests/fakes/github/ghfake-server", w->dir, argv, err,
	                       sizeof err) != 0)
		fail_msg("%s", err);
	tu_write(w->dir, "llm-script.json", llm_script);
	char script[300];
	snprintf(script, sizeof script, "%s/llm-script.json", w->dir);
	if (support_fake_start(&w->llm, "tests/fakes/llm/llmfake-server", w->dir,
	                       (const char *const[]){"--script", script, NULL}, err,
	                       sizeof err) != 0)
		fail_msg("%s", err);
	char gate[300], coder[sizeof CODER + 400];
	snprintf(gate, sizeof gate, "%s/gate", w->dir);
	mkdir(gate, 0700);
	snprintf(coder, sizeof coder, "GATE='%s'\n%s", gate, CODER);
	tu_write(w->dir, "coder.sh", coder);
}

/* The agent's variables (as a .env would give them). */
static void agent_env(struct world *w, int i, bool in_room, char vars[20][VAR_MAX],
                      const char *env[21])
{
	char tok[64];
	token_of(i, tok, sizeof tok);
	int k = 0;
	snprintf(vars[k++], VAR_MAX, "AGENT_NAME=%s", NAMES[i]);
	snprintf(vars[k++], VAR_MAX, "AGENT_GITHUB_USERNAME=%s", LOGINS[i]);
	snprintf(vars[k++], VAR_MAX, "AGENT_GITHUB_TOKEN=%s", tok);
	snprintf(vars[k++], VAR_MAX, "GITHUB_API_URL=%s", w->gh.url);
	snprintf(vars[k++], VAR_MAX, "LLM_BASE_URL=%s/v1", w->llm.url);
	snprintf(vars[k++], VAR_MAX, "LLM_MODEL=fake-model");
	snprintf(vars[k++], VAR_MAX, "LLM_API_KEY=test-key-0123456789");
	snprintf(vars[k++], VAR_MAX, "CODER_COMMAND=sh %s/coder.sh {prompt_file}", w->dir);
	snprintf(vars[k++], VAR_MAX, "CODER_RO_PATHS=%s/coder.sh:%s/gate", w->dir, w->dir);
	snprintf(vars[k++], VAR_MAX, "CODER_SANDBOX=%s", g_sandbox ? "on" : "off");
	snprintf(vars[k++], VAR_MAX, "GA_WS_CYCLE_MS=2000");
	snprintf(vars[k++], VAR_MAX, "GA_FULFIL_INTERVAL_MS=1000");
	snprintf(vars[k++], VAR_MAX, "GA_GITHUB_SPACING_MS=10");
	snprintf(vars[k++], VAR_MAX, "GA_GITHUB_WRITE_SPACING_MS=50");
	snprintf(vars[k++], VAR_MAX, "GA_GITHUB_POLL_MS=86400000");
	snprintf(vars[k++], VAR_MAX, "DASHBOARD_ADDR=off");
	if (in_room)
		snprintf(vars[k++], VAR_MAX, "SPACE_URL=ws://127.0.0.1:%d", w->room.port);
	for (int j = 0; j < k; j++)
		env[j] = vars[j];
	env[k] = NULL;
}

static void start_agent(struct world *w, int i, bool in_room, bool terminal)
{
	char vars[20][VAR_MAX];
	const char *env[21];
	agent_env(w, i, in_room, vars, env);
	const char *argv[] = {terminal ? NULL : "--no-terminal", NULL};
	if (proc_start(&w->a[i], w->homes[i], argv, env) != 0)
		fail_msg("cannot start %s", NAMES[i]);
	w->running[i] = true;
	th_track_pid(w->a[i].pid);
	if (!proc_wait_output(&w->a[i], "ready and listening", WAIT_MS))
		fail_msg("%s did not start", NAMES[i]);
}

static void dump_agent(struct world *w, int i)
{
	char *e = proc_stderr(&w->a[i]);
	fprintf(stderr, "---- %s ----\n%s\n", NAMES[i], e ? e : "(nothing)");
	free(e);
}

static void stop_world(struct world *w)
{
	for (int i = 0; i < 3; i++) {
		if (!w->running[i])
			continue;
		proc_signal(&w->a[i], SIGTERM);
		int rc = proc_wait(&w->a[i], WAIT_MS);
		th_untrack_pid(w->a[i].pid);
		if (rc != 0 && rc != 128 + SIGKILL) {
			dump_agent(w, i);
			fail_msg("%s exited %d", NAMES[i], rc);
		}
		proc_cleanup(&w->a[i]);
		tu_rmrf(w->homes[i]);
	}
	if (w->obs)
		th_observer_free(w->obs);
	support_fake_stop(&w->gh);
	support_fake_stop(&w->llm);
}

/* --- reading the fake ------------------------------------------------------------------------ */

/* GET on the fake with a token (ghfake-server's control endpoints need
 * none); the JSON answer or NULL. */
static cJSON *fake_get(struct world *w, const char *path)
{
	char cmd[1024], tok[64];
	token_of(0, tok, sizeof tok);
	snprintf(cmd, sizeof cmd, "curl -s -m 10 -H 'Authorization: Bearer %s' '%s%s'", tok,
	         w->gh.url, path);
	FILE *f = popen(cmd, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	size_t r;
	while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (n + 1 >= cap)
			buf = realloc(buf, cap *= 2);
	}
	pclose(f);
	buf[n] = '\0';
	cJSON *j = cJSON_Parse(buf);
	free(buf);
	return j;
}

/* The plan issue's number, 0 while there is none. */
static int plan_number(struct world *w)
{
	cJSON *is = fake_get(w, "/repos/" OWNER "/" REPO "/issues?labels=plan&state=all");
	int n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, is)
	{
		if (strncmp(json_string_or(it, "title", ""), "[PLAN]", 6) == 0)
			n = (int)json_int_or(it, "number", 0);
	}
	cJSON_Delete(is);
	return n;
}

struct plan_seen {
	struct plan plan;
	struct plan_task_state st[PLAN_MAX_TASKS];
	int claims[PLAN_MAX_TASKS + 1];
	char *body;
};

static bool read_plan(struct world *w, int number, struct plan_seen *ps)
{
	memset(ps, 0, sizeof *ps);
	char path[200];
	snprintf(path, sizeof path, "/repos/" OWNER "/" REPO "/issues/%d", number);
	cJSON *is = fake_get(w, path);
	snprintf(path, sizeof path, "/repos/" OWNER "/" REPO "/issues/%d/comments?per_page=100",
	         number);
	cJSON *cs = fake_get(w, path);
	bool ok = is && cs &&
	          plan_parse(json_string_or(is, "title", ""), json_string_or(is, "body", ""),
	                     &ps->plan, NULL) == 0;
	if (ok) {
		ps->body = strdup(json_string_or(is, "body", ""));
		struct wsp_events e;
		wsp_events_read(&e, cs);
		plan_state_fold(&ps->plan, number, e.ev, e.n, ps->st, NULL, NULL);
		for (size_t i = 0; i < e.n; i++)
			if (e.ev[i].m.kind == PLAN_MARK_CLAIM && e.ev[i].m.task >= 1 &&
			    e.ev[i].m.task <= PLAN_MAX_TASKS)
				ps->claims[e.ev[i].m.task]++;
		wsp_events_free(&e);
	}
	cJSON_Delete(is);
	cJSON_Delete(cs);
	return ok;
}

static void plan_seen_free(struct plan_seen *ps)
{
	plan_free(&ps->plan);
	free(ps->body);
}

/* Every task in progress with its PR. */
static bool all_with_pr(struct world *w, int number)
{
	struct plan_seen ps;
	if (!read_plan(w, number, &ps))
		return false;
	bool all = ps.plan.n_tasks > 0;
	for (size_t i = 0; i < ps.plan.n_tasks; i++)
		all = all && ps.st[i].status == PLAN_IN_PROGRESS && ps.st[i].pr > 0;
	plan_seen_free(&ps);
	return all;
}

/* Branches of the workspace whose name starts with prefix. */
static int branches(struct world *w, const char *prefix)
{
	cJSON *b = fake_get(w, "/repos/" OWNER "/" REPO "/branches?per_page=100");
	int n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, b)
	{
		if (strncmp(json_string_or(it, "name", ""), prefix, strlen(prefix)) == 0)
			n++;
	}
	cJSON_Delete(b);
	return n;
}

static int prs_of_task(struct world *w, int task, char *head, size_t cap)
{
	cJSON *p = fake_get(w, "/repos/" OWNER "/" REPO "/pulls?state=all&per_page=100");
	int n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, p)
	{
		const char *h = json_string_or(cJSON_GetObjectItem(it, "head"), "ref", "");
		char want[16];
		snprintf(want, sizeof want, "task-%d-", task);
		if (strncmp(h, want, strlen(want)) == 0) {
			n++;
			if (head)
				snprintf(head, cap, "%s", h);
		}
	}
	cJSON_Delete(p);
	return n;
}

/* The agent whose task record says task 2's coder runs, or -1. */
static int coding_task(struct world *w, int plan, int task)
{
	char key[200];
	snprintf(key, sizeof key, "\"" OWNER "/" REPO "#%d/task-%d\"", plan, task);
	for (int i = 0; i < 3; i++) {
		char *rec = home_read(w->homes[i], "memory/taskexec.json");
		const char *at = rec ? strstr(rec, key) : NULL;
		const char *ph = at ? strstr(at, "\"phase\"") : NULL;
		bool coding = ph && strncmp(ph, "\"phase\":\"coding\"", 16) == 0;
		free(rec);
		if (coding)
			return i;
	}
	return -1;
}

/* --- the room end to end ---------------------------------------------------------------------- */

#define ROOM_SCRIPT                                                                                \
	"[{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"              \
	"\"space_decision\",\"arguments\":{\"shouldSpeak\":true,\"reason\":\"I can plan it\","     \
	"\"message\":\"I'll write the plan for the greeting pages in " OWNER "/" REPO " now.\","   \
	"\"commitments\":[{\"type\":\"create_plan\",\"repo\":\"" OWNER "/" REPO "\",\"title\":"    \
	"\"Greeting pages\",\"description\":\"Greeting pages for the demo site.\\n1. Add the "     \
	"greeting: a page that says hello\\n2. Add the farewell: a page that says goodbye\\n3. "   \
	"Add the schedule: a page with the day's times\"}]}}]},"                                   \
	"{\"match\":{\"no_tools\":true,\"last_user_contains\":\"Message:\"},\"content\":"          \
	"\"ACTION_REQUEST\"},"                                                                     \
	"{\"content\":\"OK.\"}]"

static bool pred_ws_state(const cJSON *m, const void *arg)
{
	(void)arg;
	return strcmp(json_string_or(m, "workspace", ""), OWNER "/" REPO) == 0;
}

static void test_room_to_prs(void **state)
{
	(void)state;
	struct world w;
	memset(&w, 0, sizeof w);
	char *d = tu_tempdir();
	snprintf(w.dir, sizeof w.dir, "%s", d);
	free(d);
	th_track_dir(w.dir);
	const char *room_env[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};
	th_room_start(&w.room, 0, room_env, false);
	start_fakes(&w, ROOM_SCRIPT);
	for (int i = 0; i < 3; i++) {
		th_home_new(w.homes[i], sizeof w.homes[i]);
		start_agent(&w, i, true, false);
		if (!proc_wait_output(&w.a[i], "joined the room", WAIT_MS))
			fail_msg("%s did not join the room", NAMES[i]);
	}
	w.obs = th_observe(&w.room, "Obs");
	th_room_host(&w.room, "Please build greeting pages in https://github.com/" OWNER "/" REPO
	                      ": a page that says hello, one that says goodbye, and the day's "
	                      "schedule.");
	/* one plan */
	int plan = 0;
	int64_t end = th_now_ms() + 60000;
	while (!(plan = plan_number(&w)) && th_now_ms() < end)
		th_msleep(300);
	if (!plan) {
		for (int i = 0; i < 3; i++)
			dump_agent(&w, i);
		fail_msg("no plan was created");
	}
	/* task 2's coder starts: its agent is killed, and started again */
	int victim = -1;
	end = th_now_ms() + WORK_MS;
	while ((victim = coding_task(&w, plan, 2)) < 0 && th_now_ms() < end)
		th_msleep(200);
	if (victim < 0) {
		for (int i = 0; i < 3; i++)
			dump_agent(&w, i);
		fail_msg("nobody ran task 2's coder");
	}
	/* its first part committed: the kill comes in the middle of the work */
	char cmd[800];
	snprintf(cmd, sizeof cmd,
	         "git -C %s/memory/tasks/" OWNER "-" REPO "-plan%d-task2-a1 log --format=%%s "
	         "2>/dev/null | grep -q wip",
	         w.homes[victim], plan);
	end = th_now_ms() + 60000;
	while (system(cmd) != 0 && th_now_ms() < end)
		th_msleep(200);
	assert_int_equal(system(cmd), 0);
	proc_signal(&w.a[victim], SIGKILL);
	assert_int_equal(proc_wait(&w.a[victim], WAIT_MS), 128 + SIGKILL);
	th_untrack_pid(w.a[victim].pid);
	proc_cleanup(&w.a[victim]);
	assert_int_equal(prs_of_task(&w, 2, NULL, 0), 0);
	start_agent(&w, victim, true, false);
	/* every task in progress with its PR */
	end = th_now_ms() + WORK_MS;
	while (!all_with_pr(&w, plan) && th_now_ms() < end)
		th_msleep(500);
	if (!all_with_pr(&w, plan)) {
		for (int i = 0; i < 3; i++)
			dump_agent(&w, i);
		fail_msg("not every task has its PR");
	}
	struct plan_seen ps;
	assert_true(read_plan(&w, plan, &ps));
	assert_int_equal(ps.plan.n_tasks, 3);
	assert_string_equal(ps.plan.tasks[1].title, "Add the farewell");
	for (int t = 1; t <= 3; t++) {
		const struct plan_task_state *s = plan_state_find(ps.st, 3, t);
		char head[300] = "";
		/* one PR, one branch per task: the coder's change by its agent */
		assert_int_equal(prs_of_task(&w, t, head, sizeof head), 1);
		char prefix[16];
		snprintf(prefix, sizeof prefix, "task-%d-", t);
		assert_int_equal(branches(&w, prefix), 1);
		assert_int_equal(ps.claims[t], 1);
		char path[400];
		snprintf(path, sizeof path, "/repos/" OWNER "/" REPO "/contents/task-%d.txt?ref=%s",
		         t, head);
		cJSON *c = fake_get(&w, path);
		assert_non_null(c);
		struct gh_content content;
		assert_int_equal(gh_content_parse(c, &content, NULL), 0);
		char want[64];
		snprintf(want, sizeof want, "task %d by %s\n", t, s->assignee);
		assert_string_equal((const char *)content.data, want);
		gh_content_clear(&content);
		cJSON_Delete(c);
	}
	/* the killed agent's task: resumed, the same attempt */
	const struct plan_task_state *s2 = plan_state_find(ps.st, 3, 2);
	assert_string_equal(s2->assignee, LOGINS[victim]);
	assert_int_equal(s2->attempt, 1);
	plan_seen_free(&ps);
	/* the body shows it (rendered from the markers), soon */
	end = th_now_ms() + 30000;
	int shown = 0;
	while (th_now_ms() < end) {
		assert_true(read_plan(&w, plan, &ps));
		shown = 0;
		for (size_t i = 0; i < ps.plan.n_tasks; i++)
			shown += ps.plan.tasks[i].status == PLAN_IN_PROGRESS;
		plan_seen_free(&ps);
		if (shown == 3)
			break;
		th_msleep(500);
	}
	assert_int_equal(shown, 3);
	/* the room heard the plan's state */
	cJSON *m = th_expect(w.obs, "workspace_state", pred_ws_state, NULL, WAIT_MS);
	assert_non_null(m);
	cJSON_Delete(m);
	stop_world(&w);
	th_room_stop(&w.room, SIGTERM);
}

/* `general-agent status` of agent 0 contains want (asked again, after a
 * /status that writes the status file now, until it does). */
static bool status_says(struct world *w, const char *want)
{
	int64_t end = th_now_ms() + WAIT_MS;
	char *last = NULL;
	while (th_now_ms() < end) {
		assert_int_equal(proc_write_stdin(&w->a[0], "/status\n"), 0);
		free(last);
		last = NULL;
		char *serr = NULL;
		int rc = proc_run(w->homes[0], (const char *const[]){"status", NULL}, NULL, &last,
		                  &serr);
		free(serr);
		if (rc == 0 && last && strstr(last, want)) {
			free(last);
			return true;
		}
		th_msleep(300);
	}
	fprintf(stderr, "status said:\n%s\n", last ? last : "(nothing)");
	free(last);
	return false;
}

/* --- the owner at the terminal ------------------------------------------------------------------
 */

#define OWNER_SCRIPT                                                                               \
	"[{\"match\":{\"tools\":[\"workspace_watch\"],\"last_user_contains\":\"work on the "       \
	"plan\",\"call\":0},\"tool_calls\":[{\"name\":\"workspace_watch\",\"arguments\":{"         \
	"\"owner\":\"" OWNER "\",\"repo\":\"" REPO "\"}}]},"                                       \
	"{\"match\":{\"tools\":[\"workspace_unwatch\"],\"last_user_contains\":\"stop the work\"}," \
	"\"times\":1,\"tool_calls\":[{\"name\":\"workspace_unwatch\",\"arguments\":{\"owner\":"    \
	"\"" OWNER "\",\"repo\":\"" REPO "\"}}]},"                                                 \
	"{\"match\":{\"last_user_contains\":\"stop the work\"},\"content\":\"Stopped.\"},"         \
	"{\"match\":{\"tools\":[\"workspace_watch\"]},\"content\":\"I am on it: I watch " OWNER    \
	"/" REPO " and take its open task.\"},"                                                    \
	"{\"content\":\"OK.\"}]"

static void test_owner_at_terminal(void **state)
{
	(void)state;
	struct world w;
	memset(&w, 0, sizeof w);
	char *d = tu_tempdir();
	snprintf(w.dir, sizeof w.dir, "%s", d);
	free(d);
	th_track_dir(w.dir);
	start_fakes(&w, OWNER_SCRIPT);
	/* a plan of one task (the slow task is task 2: not this one) */
	char body[2000];
	snprintf(body, sizeof body,
	         "# [PLAN] One page\n\n## Goal\nOne page.\n\n## Context\n\n## Tasks\n\n### Task 1: "
	         "Add the page\n**Status:** pending\n**Assignee:** (empty if unclaimed)\n"
	         "**Dependencies:** none\n\n**Description:**\nWrite it.\n\n---\n\n## Verification\n"
	         "- [ ] All tasks completed\n");
	char cmd[4000];
	char tok[64];
	token_of(0, tok, sizeof tok);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "title", "[PLAN] One page");
	cJSON_AddStringToObject(o, "body", body);
	cJSON *l = cJSON_AddArrayToObject(o, "labels");
	cJSON_AddItemToArray(l, cJSON_CreateString("plan"));
	char *js = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	tu_write(w.dir, "plan.json", js);
	free(js);
	snprintf(cmd, sizeof cmd,
	         "curl -s -m 10 -o /dev/null -H 'Authorization: Bearer %s' -H 'Content-Type: "
	         "application/json' --data @%s/plan.json '%s/repos/" OWNER "/" REPO "/issues'",
	         tok, w.dir, w.gh.url);
	assert_int_equal(system(cmd), 0);
	/* the coder waits at the gate until the test has seen the status */
	tu_write(w.dir, "gate/hold", "");
	th_home_new(w.homes[0], sizeof w.homes[0]);
	start_agent(&w, 0, false, true);
	assert_int_equal(proc_write_stdin(&w.a[0], "work on the plan in " OWNER "/" REPO "\n"), 0);
	int64_t end = th_now_ms() + WORK_MS;
	while (coding_task(&w, 1, 1) != 0 && th_now_ms() < end)
		th_msleep(200);
	if (coding_task(&w, 1, 1) != 0) {
		dump_agent(&w, 0);
		fail_msg("the owner's task was not taken");
	}
	/* `general-agent status` names the task while its coder runs */
	if (!status_says(&w, "task         task 1 of " OWNER "/" REPO "#1: Add the page (coder, "
	                     "attempt 1)"))
		fail_msg("status did not name the task in progress");
	char gate[300];
	snprintf(gate, sizeof gate, "%s/gate/hold", w.dir);
	assert_int_equal(unlink(gate), 0);
	/* the task's PR, and the owner told */
	end = th_now_ms() + WORK_MS;
	while (!all_with_pr(&w, 1) && th_now_ms() < end)
		th_msleep(500);
	if (!all_with_pr(&w, 1)) {
		dump_agent(&w, 0);
		fail_msg("the owner's plan was not worked on");
	}
	assert_true(proc_wait_output(&w.a[0], "pull request", WAIT_MS));
	char *out = proc_stdout(&w.a[0]);
	assert_non_null(strstr(out, "claimed task 1 of " OWNER "/" REPO "#1"));
	free(out);
	if (!status_says(&w, "workspaces   1 watched, 1 open plans"))
		fail_msg("status did not show the watched workspace");
	/* the owner stops it */
	assert_int_equal(proc_write_stdin(&w.a[0], "stop the work in " OWNER "/" REPO "\n"), 0);
	assert_true(proc_wait_output(&w.a[0], "Stopped.", WAIT_MS));
	if (!status_says(&w, "workspaces   0 watched, 0 open plans"))
		fail_msg("status still shows the workspace");
	char *mem = home_read(w.homes[0], "memory/watched_workspaces.json");
	assert_non_null(mem);
	const char *un = strstr(mem, "\"unwatched\"");
	assert_non_null(un);
	assert_non_null(strstr(un, REPO));
	free(mem);
	stop_world(&w);
}

int main(void)
{
	if (ghfake_git_missing("test_ws_e2e"))
		return 77;
	g_sandbox = !getenv("GA_TEST_NO_SANDBOX") &&
	            system("bwrap --unshare-all --ro-bind / / true >/dev/null 2>&1") == 0;
	if (!g_sandbox)
		fprintf(stderr,
		        "bubblewrap unusable here: the coder runs with CODER_SANDBOX=off\n");
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_owner_at_terminal),
	        cmocka_unit_test(test_room_to_prs),
	};
	return cmocka_run_group_tests(tests, NULL, th_teardown);
}
