/*
 * taskexec — one claimed task of a plan, from "claimed" to "branch pushed
 * and verified" (spec github-commitments §3.9), as a state machine on the
 * loop:
 *
 *   clone    the repository's mirror fetched (adapters/git), the default
 *            branch read from the remote, the task branch looked up on the
 *            remote, a fresh clone on branch task-<n>-<slug>[-a<k>] (k = the
 *            attempt, from the claim), the coder's settings kept out of git;
 *   coder    the task-execution skill rendered into the prompt, the coder
 *            run in its sandbox (modules/coder);
 *   gates    PRE-GATE the clone is still on the task branch; the branch
 *            imported into the mirror (no git runs in the tree the coder
 *            changed); GATE 1 at least one commit and one file against
 *            origin/<default branch> (commits only, never the working tree);
 *            GATE 2 the repository's tests in the sandbox (a failure stops,
 *            a runner that is not installed does not); GATE 3 the push,
 *            through the caller's port; GATE 4 ls-remote shows the pushed
 *            commit; GATE 5 the claim is still ours (the caller's port
 *            re-reads the plan);
 *   PR       the pull request's title and body (§3.9 step 6) are produced;
 *            opening it is the caller's (through outbound).
 *
 * Every step that has an effect outside the clone goes through a port the
 * caller provides: the push (so outbound can check permission, audit and
 * journal it), and the plan's re-read. Every step ends in a decision
 * {verdict, rule, reason}, reported through ports.step as it happens and
 * kept in the result.
 *
 * Outcome (§3.9): PUSHED (the branch is on the remote and the PR can be
 * opened), BLOCKED (the coder said something the task needs is missing),
 * FAILED (anything else: the caller reports it and the task goes back to
 * blocked), STOPPED (the task was completed meanwhile: no report), or
 * CANCELLED.
 *
 * Restarts: a small record per task (state file "taskexec", versioned,
 * written atomically at every phase) lets a run after a crash or kill -9
 * continue the same attempt without a second branch: a branch already
 * pushed for this attempt is verified and reported again (the PR is opened
 * once by the caller's journal); a clone the coder finished in is not
 * coded again; a clone the coder was killed in is reused (its commits
 * kept) and the coder runs again; otherwise the clone starts afresh on the
 * same branch name. A branch on the remote without a record of ours (our
 * record lost) is adopted: cloned from, never replaced. A revision
 * (taskexec_task.revision) adopts the pushed branch the same way and runs
 * the coder on it again, the review as input; it pushes on top (never
 * forced). At most
 * TASKEXEC_MAX_RECORDS records are kept (the oldest dropped). A failed,
 * blocked or stopped attempt is over: its record and clone are removed (a
 * retry is a new attempt); a pushed one keeps its record until
 * taskexec_forget; a cancelled one keeps both, to be resumed.
 *
 * One task at a time per repository mirror (the caller's plan worker runs
 * one task at a time). Strings of struct taskexec_task are copied at
 * start. The result is borrowed for the callback; the job frees itself
 * after it.
 */
#ifndef GA_MODULES_TASKEXEC_TASKEXEC_H
#define GA_MODULES_TASKEXEC_TASKEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/git/git.h"
#include "common/err.h"
#include "modules/coder/coder.h"
#include "modules/decisions/decision.h"
#include "modules/skills/skills.h"
#include "modules/state/state.h"

#define TASKEXEC_SKILL        "task-execution"
#define TASKEXEC_STATE_NAME   "taskexec"
#define TASKEXEC_MAX_RECORDS  32
#define TASKEXEC_MAX_STEPS    24
#define TASKEXEC_MAX_PR_FILES 100 /* files listed in a PR body (the rest counted) */
#define TASKEXEC_KEY_MAX      300

enum taskexec_outcome {
	TASKEXEC_PUSHED,
	TASKEXEC_BLOCKED,
	TASKEXEC_FAILED,
	TASKEXEC_STOPPED,
	TASKEXEC_CANCELLED,
};

const char *taskexec_outcome_name(enum taskexec_outcome o);

/* GATE 3, asked of the caller. */
struct taskexec_push {
	const char *key; /* idempotency key: "push:<owner>/<repo>:<branch>:<sha>" */
	const char *owner;
	const char *repo;
	const char *mirror; /* the repository to push from (git_push's mirror) */
	const char *remote_url;
	const char *branch; /* pushes refs/ga/tasks/<branch> to refs/heads/<branch> */
	const char *sha;    /* the commit being pushed */
};

/* GATE 5, asked of the caller. */
struct taskexec_claim {
	const char *owner;
	const char *repo;
	int plan_number;
	int task_number;
	int attempt;
	const char *agent; /* who must still hold the task */
};

enum taskexec_claim_state {
	TASKEXEC_CLAIM_OURS,
	TASKEXEC_CLAIM_STOLEN,    /* someone else holds the task now */
	TASKEXEC_CLAIM_COMPLETED, /* the task is completed: stop without a report */
	TASKEXEC_CLAIM_UNKNOWN,   /* the plan could not be read: the gate passes */
};

typedef void (*taskexec_push_done_fn)(void *done_ud, bool ok, const char *reason);
typedef void (*taskexec_claim_done_fn)(void *done_ud, enum taskexec_claim_state st,
                                       const char *detail);

struct taskexec_step {
	const char *phase; /* "clone", "coder", "pre-gate", "gate1" ... "gate5", "pr" */
	struct decision d;
};

struct taskexec_ports {
	void *ud;
	/* Push; call done exactly once (later, from the loop). Return -1 to
	 * refuse at once (the gate fails with that reason in err). */
	int (*push)(void *ud, const struct taskexec_push *req, taskexec_push_done_fn done,
	            void *done_ud, struct ga_err *err);
	/* Re-read the plan; call done exactly once. NULL: the gate passes. */
	int (*claim_check)(void *ud, const struct taskexec_claim *req, taskexec_claim_done_fn done,
	                   void *done_ud, struct ga_err *err);
	/* Each step's decision as it happens; may be NULL. */
	void (*step)(void *ud, const struct taskexec_step *s);
};

struct taskexec_config {
	uv_loop_t *loop;
	struct git_ctx *git;   /* the mirrors' cache */
	const char *work_root; /* absolute: the task clones live here */
	const struct coder_config *coder;
	const struct skills *skills;     /* holds "task-execution" */
	const struct state_store *state; /* the restart records */
	struct taskexec_ports ports;
};

struct taskexec_task {
	const char *owner;
	const char *repo;
	const char *remote_url;      /* "https://github.com/<owner>/<repo>.git"; no credentials */
	const struct git_cred *cred; /* NULL: none (public, or a local test remote) */
	int plan_number;
	const char *plan_title;
	const char *plan_goal;
	int task_number;
	const char *task_title;
	const char *task_description;
	const char *const *files; /* NULL-terminated, may be NULL */
	const char *deps_done;    /* "Task 1 (Schema), Task 2 (API)"; NULL: "none" */
	int attempt;              /* >= 1, from the claim */
	const char *agent;        /* the agent's GitHub login (commit author name) */
	const char *email;        /* NULL: <agent>@users.noreply.github.com */
	/* A revision after a review (the review's body and inline comments):
	 * the branch of this attempt, already pushed with its PR, is cloned
	 * and the coder runs again with this text below the task's prompt;
	 * a revision that leaves the branch where it was fails
	 * ("revision_no_change"). NULL: a first run. */
	const char *revision;
};

struct taskexec_result {
	enum taskexec_outcome outcome;
	struct decision d; /* the one that ended it */
	struct taskexec_step steps[TASKEXEC_MAX_STEPS];
	size_t n_steps;
	bool resumed; /* continued an earlier run of this attempt */
	const char *branch;
	const char *base; /* the remote's default branch */
	const char *sha;  /* the pushed commit ("" before the import) */
	const char *work; /* the clone; removed once the attempt ended (kept when cancelled) */
	size_t commits;
	const char *shortstat;
	const struct git_file *files;
	size_t n_files;
	size_t files_dropped;
	const char *tests_line;    /* "Passed", "No tests ran", "None found" */
	const char *tests_command; /* "" when none */
	const char *tests_tail;    /* the end of a failing run's output */
	const char *coder_tail;    /* the end of the coder's error output */
	uint64_t ms_clone, ms_coder, ms_tests, ms_push, ms_total;
	const char *pr_title; /* on PUSHED */
	const char *pr_body;
};

typedef void (*taskexec_done_fn)(void *ud, const struct taskexec_result *r);

struct taskexec;

/* Starts the pipeline. NULL with err when the task or configuration is
 * unusable (names, attempt, a relative work root, the skill missing). */
struct taskexec *taskexec_start(const struct taskexec_config *cfg, const struct taskexec_task *t,
                                taskexec_done_fn done, void *ud, struct ga_err *err);

/* Stops at the next step boundary (a running coder or test is killed);
 * done is called with CANCELLED. Only before done was called. */
void taskexec_cancel(struct taskexec *x);

/* The record key of a task: "<owner>/<repo>#<plan>/task-<n>". */
void taskexec_key(const char *owner, const char *repo, int plan, int task, char *out, size_t cap);

/* Drops the restart record of a task and its clone, if one is left (after
 * the caller opened its PR or gave the task up). 0, or -1 with err. */
int taskexec_forget(const struct state_store *st, const char *key, int64_t now_ms,
                    struct ga_err *err);

/* "task(<n>): <title>". Caller frees. */
char *taskexec_pr_title(int task, const char *title);

/* The pull request body of §3.9 step 6 plus a machine marker naming the
 * plan and the task. Caller frees. */
char *taskexec_pr_body(const struct taskexec_task *t, const char *branch, const char *shortstat,
                       const struct git_file *files, size_t n_files, size_t files_dropped,
                       const char *tests_line);

#endif
