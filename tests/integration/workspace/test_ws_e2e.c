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
#include "e2efix.h"
#include "modules/plan/taskstate.h"
#include "support_wait.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/integration/space-client/harness.h"
#include "testutil.h"

#define OWNER   E2E_OWNER
#define REPO    E2E_REPO
#define WAIT_MS E2E_WAIT_MS
#define WORK_MS 240000 /* three tasks through a loaded machine */

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
	struct e2e_world w;
	e2e_world_init(&w);
	e2e_fakes(&w, ROOM_SCRIPT, CODER);
	e2e_room(&w);
	for (int i = 0; i < 3; i++)
		e2e_agent_start(&w, i, false);
	th_room_host(&w.room, "Please build greeting pages in https://github.com/" OWNER "/" REPO
	                      ": a page that says hello, one that says goodbye, and the day's "
	                      "schedule.");
	/* one plan */
	int plan = 0;
	int64_t end = th_now_ms() + 60000;
	while (!(plan = e2e_plan_number(&w)) && th_now_ms() < end)
		th_msleep(300);
	if (!plan) {
		for (int i = 0; i < 3; i++)
			e2e_dump(&w, i);
		fail_msg("no plan was created");
	}
	/* task 2's coder starts: its agent is killed, and started again */
	int victim = -1;
	end = th_now_ms() + WORK_MS;
	while ((victim = e2e_coding_task(&w, plan, 2)) < 0 && th_now_ms() < end)
		th_msleep(200);
	if (victim < 0) {
		for (int i = 0; i < 3; i++)
			e2e_dump(&w, i);
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
	e2e_agent_kill(&w, victim);
	assert_int_equal(e2e_prs_of_task(&w, 2, NULL, 0), 0);
	e2e_agent_start(&w, victim, false);
	/* every task in progress with its PR */
	end = th_now_ms() + WORK_MS;
	while (!e2e_all_with_pr(&w, plan) && th_now_ms() < end)
		th_msleep(500);
	if (!e2e_all_with_pr(&w, plan)) {
		for (int i = 0; i < 3; i++)
			e2e_dump(&w, i);
		fail_msg("not every task has its PR");
	}
	struct e2e_plan ps;
	assert_true(e2e_read_plan(&w, plan, &ps));
	assert_int_equal(ps.plan.n_tasks, 3);
	assert_string_equal(ps.plan.tasks[1].title, "Add the farewell");
	for (int t = 1; t <= 3; t++) {
		const struct plan_task_state *s = plan_state_find(ps.st, 3, t);
		char head[300] = "";
		/* one PR, one branch per task: the coder's change by its agent */
		assert_int_equal(e2e_prs_of_task(&w, t, head, sizeof head), 1);
		char prefix[16];
		snprintf(prefix, sizeof prefix, "task-%d-", t);
		assert_int_equal(e2e_branches(&w, prefix), 1);
		assert_int_equal(ps.claims[t], 1);
		char path[400];
		snprintf(path, sizeof path, "/repos/" OWNER "/" REPO "/contents/task-%d.txt?ref=%s",
		         t, head);
		cJSON *c = e2e_get(&w, "%s", path);
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
	assert_string_equal(s2->assignee, E2E_LOGINS[victim]);
	assert_int_equal(s2->attempt, 1);
	e2e_plan_free(&ps);
	/* the body shows it (rendered from the markers), soon */
	end = th_now_ms() + 30000;
	int shown = 0;
	while (th_now_ms() < end) {
		assert_true(e2e_read_plan(&w, plan, &ps));
		shown = 0;
		for (size_t i = 0; i < ps.plan.n_tasks; i++)
			shown += ps.plan.tasks[i].status == PLAN_IN_PROGRESS;
		e2e_plan_free(&ps);
		if (shown == 3)
			break;
		th_msleep(500);
	}
	assert_int_equal(shown, 3);
	/* the room heard the plan's state */
	cJSON *m = th_expect(w.obs, "workspace_state", pred_ws_state, NULL, WAIT_MS);
	assert_non_null(m);
	cJSON_Delete(m);
	e2e_stop(&w);
}

/* `general-agent status` of agent 0 contains want (asked again, after a
 * /status that writes the status file now, until it does). */
static bool status_says(struct e2e_world *w, const char *want)
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
	struct e2e_world w;
	e2e_world_init(&w);
	e2e_fakes(&w, OWNER_SCRIPT, CODER);
	/* a plan of one task (the slow task is task 2: not this one) */
	char body[2000];
	snprintf(body, sizeof body,
	         "# [PLAN] One page\n\n## Goal\nOne page.\n\n## Context\n\n## Tasks\n\n### Task 1: "
	         "Add the page\n**Status:** pending\n**Assignee:** (empty if unclaimed)\n"
	         "**Dependencies:** none\n\n**Description:**\nWrite it.\n\n---\n\n## Verification\n"
	         "- [ ] All tasks completed\n");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "title", "[PLAN] One page");
	cJSON_AddStringToObject(o, "body", body);
	cJSON *l = cJSON_AddArrayToObject(o, "labels");
	cJSON_AddItemToArray(l, cJSON_CreateString("plan"));
	char *js = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	cJSON *made = e2e_post(&w, 0, "/repos/" OWNER "/" REPO "/issues", js);
	free(js);
	assert_int_equal(json_int_or(made, "number", 0), 1);
	cJSON_Delete(made);
	/* the coder waits at the gate until the test has seen the status */
	tu_write(w.dir, "gate/hold", "");
	e2e_agent_start(&w, 0, true);
	assert_int_equal(proc_write_stdin(&w.a[0], "work on the plan in " OWNER "/" REPO "\n"), 0);
	int64_t end = th_now_ms() + WORK_MS;
	while (e2e_coding_task(&w, 1, 1) != 0 && th_now_ms() < end)
		th_msleep(200);
	if (e2e_coding_task(&w, 1, 1) != 0) {
		e2e_dump(&w, 0);
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
	while (!e2e_all_with_pr(&w, 1) && th_now_ms() < end)
		th_msleep(500);
	if (!e2e_all_with_pr(&w, 1)) {
		e2e_dump(&w, 0);
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
	e2e_stop(&w);
}

int main(void)
{
	if (ghfake_git_missing("test_ws_e2e"))
		return 77;
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_owner_at_terminal),
	        cmocka_unit_test(test_room_to_prs),
	};
	return cmocka_run_group_tests(tests, NULL, th_teardown);
}
