/*
 * plan — the plan issue: a GitHub issue whose body lists the tasks of a piece
 * of work, as text people read and agents parse. Pure functions: no I/O, no
 * clock, no globals.
 *
 *   drafts       plan_draft_from_json reads the plan_create tool's arguments;
 *                plan_draft_add_docs prepends the required documentation
 *                tasks of a workspace and renumbers every "Task k"
 *                dependency of the tasks it shifts;
 *   generation   plan_format_title / plan_draft_format write the issue title
 *                "[PLAN] <title>" and the body line by line (labels
 *                PLAN_LABEL / PLAN_LABEL_ACTIVE);
 *   parsing      plan_is_plan and plan_parse read a body back, whoever wrote
 *                it (the generator, a person in the web editor with CRLF line
 *                ends, another agent);
 *   updating     plan_body_update sets tasks' Status and Assignee lines in the
 *                latest body, inserting a line that is missing;
 *   branches     plan_branch_name: "task-<n>-<slug>" (at most 50 bytes), with
 *                "-a<k>" for attempt k >= 2 so a retry never collides with an
 *                earlier attempt's remote branch; plan_branch_legacy: the
 *                older naming, for finding branches pushed by it.
 *
 * The body format (generated exactly so; blank lines matter to people only):
 *
 *   # [PLAN] <title>
 *
 *   ## Goal
 *   <goal>
 *
 *   ## Context
 *   <context>
 *
 *   ## Tasks
 *
 *   ### Task <k>: <task title>
 *   **Status:** pending
 *   **Assignee:** (empty if unclaimed)
 *   **Estimate:** <estimate>          (only when given)
 *   **Dependencies:** <Task 1, Task 2 | none>
 *   **Files:**                        (only when given)
 *   - `<path>`
 *
 *   **Description:**
 *   <description>
 *
 *   ---
 *
 *   ## Verification
 *   - [ ] <item>
 *
 * Reading rules that keep text intact (a model writes descriptions):
 *   - a task's metadata lines (Status, Assignee, Estimate, Dependencies,
 *     Files and its "- `path`" items) count only before its
 *     "**Description:**" line; after it every line is description, so a
 *     "- `file`" or "**Status:**" inside a description is kept as text;
 *   - a "---" line is the task separator only when the next non-blank line
 *     starts the next task, a known section (## Goal, Context, Tasks,
 *     Verification) or ends the body; any other "---" is description text;
 *   - a description line that would read as structure (a task header, a
 *     known section heading, the "# [PLAN]" heading) is written with a
 *     leading backslash (Markdown shows it unchanged) and read back without
 *     it; likewise in the goal and the context;
 *   - an assignee of "none", "unassigned", "-", "n/a", the placeholder, or
 *     anything that is not a GitHub login is no assignee (reported when it
 *     is not one of the known empty words);
 *   - a dependency that names no task of the plan (by number, title, or
 *     ';'-separated titles) is reported in plan.problems and does NOT hold
 *     the task back (it could never be satisfied); a task depending on
 *     itself or a cycle of tasks is reported too (a cycle does hold its
 *     tasks back: they cannot all go first);
 *   - a body is a plan when the title starts with "[PLAN]" or a line of the
 *     body is the heading "# [PLAN] ..." (not when the text merely contains
 *     "# [PLAN]").
 *
 * Task state in the body is a view: the machine markers in the issue's
 * comments (taskstate.h) are what agents trust, so two agents updating
 * different tasks never lose each other's change. plan_body_update is the
 * transform that renders a state into the body.
 *
 * Bounds: a body of at most PLAN_MAX_BODY_BYTES (larger: an error), at most
 * PLAN_MAX_TASKS tasks (more: the rest are ignored and reported), per task
 * PLAN_MAX_DEPS dependencies and PLAN_MAX_FILES files (the rest reported),
 * PLAN_MAX_CHECKS verification items, PLAN_MAX_PROBLEMS problem sentences
 * (the rest counted in problems_dropped).
 *
 * Ownership: struct plan and struct plan_draft own every string in them;
 * plan_free / plan_draft_free release them (a zeroed struct is fine).
 * Functions returning char * say "caller frees".
 */
#ifndef GA_MODULES_PLAN_PLAN_H
#define GA_MODULES_PLAN_PLAN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define PLAN_MAX_BODY_BYTES    (256 * 1024)
#define PLAN_MAX_TASKS         64
#define PLAN_MAX_DEPS          16
#define PLAN_MAX_FILES         64
#define PLAN_MAX_CHECKS        32
#define PLAN_MAX_PROBLEMS      32
#define PLAN_TITLE_MAX         256 /* bytes of a plan or task title */
#define PLAN_LOGIN_MAX         40  /* GitHub logins are at most 39 bytes (+ "[bot]") */
#define PLAN_BRANCH_MAX        50  /* bytes of a task branch name */
#define PLAN_LEGACY_SLUG_MAX   40
#define PLAN_TASK_NUMBER_MAX   9999
#define PLAN_REQUEST_TITLE_MAX 100 /* bytes of a task title taken from a request's item */

#define PLAN_TITLE_PREFIX     "[PLAN]"
#define PLAN_ASSIGNEE_EMPTY   "(empty if unclaimed)"
#define PLAN_LABEL            "plan"
#define PLAN_LABEL_ACTIVE     "plan:active"
#define PLAN_LABEL_BLOCKED    "plan:blocked"
#define PLAN_LABEL_COMPLETE   "plan:complete"
#define PLAN_LABEL_SUPERSEDED "plan:superseded"
#define PLAN_DOCS_REPO_PREFIX "www-lil-intdev-"
#define PLAN_DOC_AGENTS       "LIL-INTDEV-AGENTS.md"
#define PLAN_DOC_SCENARIOS    "SCENARIOS.md"

enum plan_status {
	PLAN_PENDING,
	PLAN_CLAIMED,
	PLAN_IN_PROGRESS,
	PLAN_COMPLETED,
	PLAN_BLOCKED,
	PLAN_STATUS_COUNT,
};

/* The plan as a whole: complete when every task is completed, blocked when
 * any task is blocked, active otherwise (also with no tasks). */
enum plan_overall {
	PLAN_ACTIVE,
	PLAN_OVERALL_BLOCKED,
	PLAN_COMPLETE,
};

struct plan_dep {
	int task;   /* the task it names, 0 when it names none (see problems) */
	char *text; /* as written (one fragment of a ';' list resolves alone) */
};

struct plan_task {
	int number; /* from the header, not the position */
	char *title;
	enum plan_status status;
	char *assignee; /* login without '@'; NULL = unassigned */
	char *estimate; /* NULL when not given */
	struct plan_dep *deps;
	size_t n_deps;
	char **files;
	size_t n_files;
	char *description; /* trimmed; "" when none */
	bool has_status_line;
	bool has_assignee_line;
	bool in_cycle; /* part of a dependency cycle (never claimable) */
};

struct plan_check {
	bool done;
	char *text;
};

struct plan {
	char *title;             /* issue title without "[PLAN]", trimmed */
	char *goal;              /* non-empty lines joined with single spaces */
	char *context;           /* non-empty lines joined with '\n' */
	struct plan_task *tasks; /* in body order */
	size_t n_tasks;
	struct plan_check *checks;
	size_t n_checks;
	char *problems[PLAN_MAX_PROBLEMS]; /* sentences naming the task and the text */
	size_t n_problems;
	size_t problems_dropped;
};

const char *plan_status_name(enum plan_status s); /* "pending", "in_progress", ... */
/* Accepts the five names (any case, '-' or ' ' for '_') and the words
 * "done"/"complete" (completed) and "in progress". 0, or -1 when unknown. */
int plan_status_parse(const char *s, enum plan_status *out);
const char *plan_overall_name(enum plan_overall o); /* "active", "blocked", "complete" */

/* True when title starts with "[PLAN]" or the body has a line that is the
 * heading "# [PLAN] ..."; false for an empty or NULL body. */
bool plan_is_plan(const char *title, const char *body);

/* Reads a plan body. title: the issue title (may be NULL: then the
 * "# [PLAN]" heading's text). 0, or -1 with err when the body is NULL, too
 * large, or not UTF-8; oddities inside a readable body are problems, not
 * errors. Free with plan_free. */
int plan_parse(const char *title, const char *body, struct plan *out, struct ga_err *err);
void plan_free(struct plan *p);

/* The task with that number, or NULL. */
const struct plan_task *plan_task_find(const struct plan *p, int number);
enum plan_overall plan_overall_status(const struct plan *p);

/* ---- generation ----------------------------------------------------------- */

struct plan_draft_task {
	char *title;
	char *description;
	char *estimate; /* NULL when none */
	char **deps;    /* "Task 1", or a task title */
	size_t n_deps;
	char **files;
	size_t n_files;
};

struct plan_draft {
	char *title;
	char *goal;
	char *context;
	struct plan_draft_task *tasks;
	size_t n_tasks;
	char **verification; /* none given: the three default items */
	size_t n_verification;
};

/* Reads {title*, goal*, context*, tasks*: [{title*, description*, estimate,
 * dependencies: [], files: []}], verification: []} (the plan_create tool's
 * arguments). 0, or -1 with err naming the field ("tasks[2].title must be a
 * non-empty string"). Titles lose line breaks; bounds are enforced here
 * (more than PLAN_MAX_TASKS tasks is an error, not a silent cut). */
int plan_draft_from_json(const cJSON *args, struct plan_draft *out, struct ga_err *err);
void plan_draft_free(struct plan_draft *d);

/* A plan from a request in words (a commitment made in the room: a title
 * and a description, no task list): each top-level list item of text ("-
 * …", "* …", "1. …", "1) …"; a checklist "- [ ] …" is not one) is a task,
 * its title the item's words before the first ": " / " — " / " - " (at
 * most PLAN_REQUEST_TITLE_MAX bytes, cut on a word), its description the
 * whole item with the indented lines under it; the other lines are the
 * goal (the title when there are none). Items past PLAN_MAX_TASKS stay
 * out. Without any item the whole request is one task. context may be
 * NULL. 0, or -1 with err (no title, text too large or not UTF-8). */
int plan_draft_from_request(const char *title, const char *text, const char *context,
                            struct plan_draft *out, struct ga_err *err);

/* The required documentation tasks of a workspace repository (name starting
 * with PLAN_DOCS_REPO_PREFIX; any other repository: returns 0, unchanged).
 * For LIL-INTDEV-AGENTS.md then SCENARIOS.md: when the repository does not
 * have the file (repo_has_* false; a failed listing counts as "missing")
 * and no task of the draft already covers it (a title containing
 * "lil-intdev-agents" / "scenarios", or a description naming the file,
 * case-insensitive), a task creating it is prepended. Every dependency of
 * the shifted tasks that names a task by number is renumbered by the count
 * prepended. Returns the number of tasks prepended (0..2), or -1 with err
 * when the draft would exceed PLAN_MAX_TASKS. */
int plan_draft_add_docs(struct plan_draft *d, const char *repo_name, bool repo_has_agents,
                        bool repo_has_scenarios, struct ga_err *err);

/* "[PLAN] <title>". Caller frees. */
char *plan_format_title(const char *title);
/* The body above. NULL with err when a required field is empty or the body
 * would exceed PLAN_MAX_BODY_BYTES. Caller frees. */
char *plan_draft_format(const struct plan_draft *d, struct ga_err *err);

/* ---- updating the body ------------------------------------------------------ */

struct plan_update {
	int task;
	bool set_status;
	enum plan_status status;
	bool set_assignee;
	const char *assignee; /* login (a leading '@' is fine), NULL = unassigned */
};

/* The latest body with each update applied to its task's Status and
 * Assignee lines (a missing line is inserted after the header, Status
 * first). Only lines before the task's "**Description:**" are touched; the
 * rest of the body is kept byte for byte (CRLF stays CRLF). Caller frees;
 * NULL with err when a task is not in the body, an assignee is not a
 * GitHub login, or the body cannot be read (plan_parse's errors). */
char *plan_body_update(const char *body, const struct plan_update *u, size_t n, struct ga_err *err);

/* ---- logins and branch names ------------------------------------------------ */

/* A GitHub login: 1..39 of [A-Za-z0-9-], not starting or ending with '-',
 * optionally followed by "[bot]". */
bool plan_valid_login(const char *s);

/* "task-<n>-<slug>" for attempt 1, "task-<n>-<slug>-a<attempt>" for a
 * retry, at most PLAN_BRANCH_MAX bytes. The slug: lower case, accents
 * dropped (é → e), whitespace and / _ , : ; · become '-', & becomes "-and-",
 * other characters dropped, dashes collapsed and trimmed ("untitled" when
 * nothing is left); a slug too long is cut and loses its last (possibly
 * partial) word. 0, or -1 when n or attempt is out of range (1..9999) or
 * out is too small (PLAN_BRANCH_MAX + 1 is enough). */
int plan_branch_name(int task, const char *title, int attempt, char *out, size_t cap);
/* The older naming: "task-<n>-" + the lower-case title with each run of
 * other characters than [a-z0-9] made one '-', trimmed, first 40 bytes.
 * Only for finding branches pushed under it. 0 or -1 as above. */
int plan_branch_legacy(int task, const char *title, char *out, size_t cap);
/* The task number of a branch named "task-<n>-...", or 0. */
int plan_branch_task(const char *branch);

#endif
