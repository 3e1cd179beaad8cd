/*
 * e2efix — the work loop's end-to-end world with real binaries: up to
 * three general-agent processes (Ada, Bob, Cal; logins ada-bot, bob-bot,
 * cal-bot), a real agent-space room, ghfake-server (real git behind it,
 * the workspace acme/www-lil-intdev-demo seeded with a README, a Makefile
 * whose test target passes and the workspace's two documents),
 * llmfake-server with the test's script, and the test's coder script
 * (sh, in the bubblewrap sandbox where it works, else CODER_SANDBOX=off).
 *
 * The coder script gets GATE='<dir>/gate' prepended (a directory bound
 * read-only into the sandbox: a test holds a run with a file there).
 * Everything listens on 127.0.0.1; e2e_stop stops what was started (the
 * harness's teardown kills what a failed test left).
 *
 * Reading the fake: e2e_get (REST with Ada's token, or the control
 * endpoints), and helpers for the plan, its markers, PRs and branches.
 */
#ifndef GA_TESTS_INTEGRATION_WORKSPACE_E2EFIX_H
#define GA_TESTS_INTEGRATION_WORKSPACE_E2EFIX_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "modules/plan/plan.h"
#include "modules/plan/taskstate.h"
#include "proc.h"
#include "support_fake.h"
#include "tests/integration/space-client/harness.h"

#define E2E_OWNER   "acme"
#define E2E_REPO    "www-lil-intdev-demo"
#define E2E_WAIT_MS 20000
#define E2E_VAR_MAX 600 /* one variable of an agent's environment */
#define E2E_VARS    32  /* variables of an agent, the extra ones included */
#define E2E_EXTRA   8   /* extra variables a test adds (e2e_world.extra) */

extern const char *const E2E_NAMES[3];
extern const char *const E2E_LOGINS[3];

struct e2e_world {
	char dir[256];
	struct th_room room;
	bool in_room;
	struct support_fake gh, llm;
	char homes[3][256];
	struct proc a[3];
	bool running[3];
	struct ws_client *obs;
	bool sandbox;
	/* extra "K=V" variables for every agent (set before e2e_agent_start) */
	const char *extra[E2E_EXTRA];
	/* agents started without CODER_COMMAND: they claim no task (no marker
	 * on any plan) and still review */
	bool no_coder[3];
	char cycle_ms[16]; /* GA_WS_CYCLE_MS (default "2000") */
};

/* A fresh world in a temporary directory (tracked by the harness). */
void e2e_world_init(struct e2e_world *w);
/* ghfake-server (recording its requests to <dir>/gh-record.jsonl),
 * llmfake-server with llm_script, the coder script. */
void e2e_fakes(struct e2e_world *w, const char *llm_script, const char *coder);
/* The room (SPACE_CHAT_INTERVAL_MS=0) and an observer. */
void e2e_room(struct e2e_world *w);
/* Agent i (a new home unless it has one: a restart keeps its memory);
 * in the room when the world has one; at the terminal when terminal. */
void e2e_agent_start(struct e2e_world *w, int i, bool terminal);
/* SIGKILL agent i and reap it (its home kept). */
void e2e_agent_kill(struct e2e_world *w, int i);
/* SIGTERM agent i, fails the test on an unclean exit (home kept). */
void e2e_agent_stop(struct e2e_world *w, int i);
void e2e_dump(struct e2e_world *w, int i);
void e2e_dump_all(struct e2e_world *w);
/* Stops the agents (cleanly, SIGTERM), the fakes, the room. */
void e2e_stop(struct e2e_world *w);

/* GET on the fake (REST with a token; /_ghfake/... too): the JSON or NULL.
 * path is printf-formatted. */
cJSON *e2e_get(struct e2e_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* POST body (JSON text) to the fake as agent i: the JSON answer or NULL. */
cJSON *e2e_post(struct e2e_world *w, int as, const char *path, const char *body);

/* The plan issue's number ([PLAN] title), 0 while there is none. */
int e2e_plan_number(struct e2e_world *w);

struct e2e_plan {
	struct plan plan;
	struct plan_task_state st[PLAN_MAX_TASKS];
	int claims[PLAN_MAX_TASKS + 1]; /* claim markers per task */
	int dones[PLAN_MAX_TASKS + 1];  /* done markers per task */
	char *body;
	bool closed;
	bool complete_label; /* labels plan and plan:complete */
	cJSON *comments;     /* the plan's comments (GitHub's JSON) */
};
/* The plan issue as every agent reads it (the markers folded). */
bool e2e_read_plan(struct e2e_world *w, int number, struct e2e_plan *ps);
void e2e_plan_free(struct e2e_plan *ps);

/* Every task in progress with its PR. */
bool e2e_all_with_pr(struct e2e_world *w, int number);
/* Branches whose name starts with prefix. */
int e2e_branches(struct e2e_world *w, const char *prefix);
/* PRs (any state) whose head branch is task-<task>-…; head gets the last's. */
int e2e_prs_of_task(struct e2e_world *w, int task, char *head, size_t cap);
/* The agent whose task record says the task's coder runs, or -1. */
int e2e_coding_task(struct e2e_world *w, int plan, int task);
/* Does the workspace have the branch? Asked with git (ls-remote): git
 * requests are never slowed by the fake's REST delay. */
bool e2e_git_has_branch(struct e2e_world *w, const char *branch);
/* The fake's REST answers wait ms (0: none) from now on. */
void e2e_fake_delay(struct e2e_world *w, int ms);
/* Lines of <dir>/gh-record.jsonl (the fake's request log) whose method is
 * method and whose path ends with suffix (NULL: any). */
int e2e_recorded(struct e2e_world *w, const char *method, const char *path_part,
                 const char *suffix);

#endif
