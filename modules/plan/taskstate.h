/*
 * taskstate — who holds which task of a plan, decided by machine markers in
 * the plan issue's comments. Pure functions: no I/O, time enters as data.
 *
 * Why markers: GitHub has no conditional write for an issue body, so two
 * agents that each read the body, change their own task and write it back
 * lose one of the changes. Comments are append-only and GitHub numbers them
 * in the order it accepted them, so a state computed from the comments in
 * id order never loses a writer. The body stays what people read: any
 * agent renders the computed state into it (plan_state_sync_body), and
 * rendering again after a concurrent overwrite repairs it.
 *
 * A marker is an HTML comment (invisible on GitHub) in a comment whose
 * visible text is the agent's own words:
 *   <!-- ga:claim plan=12 task=3 agent=ada attempt=1 -->
 *   <!-- ga:pr plan=12 task=3 agent=ada attempt=1 pr=45 branch=task-3-login -->
 * Kinds and what they do to the task (plan_state_fold):
 *   claim    pending/blocked, unassigned, dependencies done, not abandoned →
 *            claimed by agent, attempt = number of claims accepted so far;
 *            otherwise ignored: the FIRST valid claim by comment id wins;
 *   start    → in_progress          } only from the agent holding the task;
 *   pr       → in_progress, pr=N    } anyone else's is ignored, so a loser
 *   release  → pending, unassigned  } can never erase the winner's claim
 *   blocked  → blocked, unassigned, one more failure }
 *   failed   → blocked, unassigned, one more failure }
 *   reset    → pending, unassigned (stuck or conflicting work; any agent)
 *   done     → completed, unassigned (after the merge; any agent)
 *   abandon  → the "failed too often" notice was given (any agent; once)
 *   reopen   → pending, unassigned, failures and notice forgotten (the owner
 *              asked for another try)
 * A marker counts only when its agent= is the comment's author (any case):
 * nobody can speak for another account. Markers for another plan number are
 * ignored. Every ignored marker is reported with a reason (note callback).
 * A task without markers keeps the state its body lines show; a task the
 * markers speak of starts pending and unassigned (its body lines are the
 * view agents render from those markers — a person's edit of them is not
 * read), and the markers alone decide it.
 *
 * Bounds: a marker is at most PLAN_MARKER_MAX bytes; plan_state_fold reads
 * at most PLAN_MAX_EVENTS events (the rest are ignored and reported).
 */
#ifndef GA_MODULES_PLAN_TASKSTATE_H
#define GA_MODULES_PLAN_TASKSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "modules/decisions/decision.h"
#include "modules/plan/plan.h"

#define PLAN_MARKER_MAX     256
#define PLAN_MAX_EVENTS     2000
#define PLAN_MAX_RETRIES    3 /* failures after which a task is left to the owner */
#define PLAN_MAX_NOTICES    8
#define PLAN_MAX_CANDIDATES 64 /* open plans plan_choose considers */

enum plan_mark {
	PLAN_MARK_CLAIM,
	PLAN_MARK_START,
	PLAN_MARK_PR,
	PLAN_MARK_RELEASE,
	PLAN_MARK_BLOCKED,
	PLAN_MARK_FAILED,
	PLAN_MARK_RESET,
	PLAN_MARK_DONE,
	PLAN_MARK_ABANDON,
	PLAN_MARK_REOPEN,
	PLAN_MARK_COUNT,
};

struct plan_marker {
	enum plan_mark kind;
	int plan; /* plan issue number, >= 1 */
	int task; /* >= 1 */
	char agent[PLAN_LOGIN_MAX];
	int attempt;                      /* 0 = not given */
	int pr;                           /* 0 = not given */
	char branch[PLAN_BRANCH_MAX + 1]; /* "" = not given */
};

const char *plan_mark_name(enum plan_mark k); /* "claim", "start", ... */

/* Writes the marker as an HTML comment into buf. 0, or -1 when a field is
 * out of range (agent not a login, branch with characters outside
 * [A-Za-z0-9._/-], numbers < 1) or buf is too small. */
int plan_marker_format(const struct plan_marker *m, char *buf, size_t cap);

/* Finds the first "<!-- ga:KIND ... -->" with one of the kinds above in
 * text (a comment body; other "ga:" comments such as outbound's chain
 * marker are skipped) and reads it: 1 found and valid, 0 no marker, -1 a
 * marker that is malformed (err says what: a missing plan/task/agent, a bad
 * value, a key given twice, no "-->"). Keys may come in any order; unknown
 * keys are ignored (a newer agent may add some). */
int plan_marker_parse(const char *text, struct plan_marker *out, struct ga_err *err);

/* One comment of the plan issue that carried a valid marker. */
struct plan_event {
	int64_t comment_id; /* GitHub's id: the order */
	const char *author; /* the comment's author login */
	int64_t at_ms;      /* created_at */
	struct plan_marker m;
};

/* What the fold knows of one task. */
struct plan_task_state {
	int task;
	enum plan_status status;
	char assignee[PLAN_LOGIN_MAX]; /* "" = nobody */
	int attempt;                   /* claims accepted so far (the current one's number) */
	int failures;                  /* blocked + failed markers */
	bool abandoned;                /* the abandon notice was given */
	int pr;                        /* last pr= of the current attempt, 0 none */
	char branch[PLAN_BRANCH_MAX + 1];
	int64_t since_ms;         /* when status/assignee last changed by a marker */
	int64_t claim_comment_id; /* the accepted claim of the current holder */
	bool from_markers;        /* false: the body's lines, no marker touched it */
};

/* A marker the fold did not apply, and why. */
typedef void (*plan_note_fn)(void *ud, const struct plan_event *ev, const struct decision *d);

/* Computes out[i] for each task of p (out holds p->n_tasks entries, in the
 * order of p->tasks): the body's state, then every event for plan_number in
 * comment-id order (events need not be sorted). note (may be NULL) hears
 * every ignored event. Returns the number of events applied. */
size_t plan_state_fold(const struct plan *p, int plan_number, const struct plan_event *ev, size_t n,
                       struct plan_task_state *out, plan_note_fn note, void *ud);

/* The body with every task's Status and Assignee lines made to show st
 * (p->n_tasks entries, as plan_state_fold filled them). *changed says
 * whether anything differs. Caller frees; NULL with err as
 * plan_body_update. */
char *plan_state_sync_body(const char *body, const struct plan_task_state *st, size_t n,
                           bool *changed, struct ga_err *err);

/* The state of one task, or NULL. */
const struct plan_task_state *plan_state_find(const struct plan_task_state *st, size_t n, int task);

/* Whether an agent may claim the task now: pending or blocked, nobody holds
 * it, every dependency that names a task is completed (one naming nothing
 * does not count), not in a cycle, fewer than PLAN_MAX_RETRIES failures and
 * not abandoned. The decision says which rule answered (rule
 * "task_claimable" with verdict pass, or the failing rule with block). */
bool plan_task_claimable(const struct plan *p, const struct plan_task_state *st, size_t n, int task,
                         struct decision *why);

/* One open plan as the chooser sees it. */
struct plan_candidate {
	int number; /* the issue number */
	const struct plan *plan;
	const struct plan_task_state *state; /* plan->n_tasks entries */
};

struct plan_notice {
	size_t candidate; /* index into the candidates */
	int task;
	int failures;
};

struct plan_choice {
	bool found;
	size_t candidate; /* index into the candidates */
	int task;
	int next_attempt; /* the attempt a claim now would start */
	struct decision d;
	/* Tasks that reached PLAN_MAX_RETRIES without an abandon notice: the
	 * caller posts one (an abandon marker) for each. */
	struct plan_notice notices[PLAN_MAX_NOTICES];
	size_t n_notices;
};

/* Which task to claim: plans with fewer claimable tasks first (closer to
 * done), ties by issue number; within a plan the lowest task number.
 * Tasks held back by their failures are skipped and listed in notices
 * when they have no abandon notice yet (at most PLAN_MAX_NOTICES). At most
 * PLAN_MAX_CANDIDATES plans are considered; the rest wait for a later
 * cycle. */
void plan_choose(const struct plan_candidate *c, size_t n, struct plan_choice *out);

#endif
