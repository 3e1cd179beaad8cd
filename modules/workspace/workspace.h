/*
 * workspace — the work loop of an agent on GitHub (spec github-commitments
 * §3.1–§3.10): the workspaces it watches, the plans in them, the task it
 * claims, the coder's run on it (modules/taskexec) and the pull request
 * that comes out of it. Every write to GitHub — comments, body and label
 * edits, the branch push, the PR, the review request, a new repository —
 * is an outbound send (modules/outbound: permission, audit, journal; the
 * port is modules/github/port.h), with an idempotency key that makes it
 * happen once across restarts and kill -9.
 *
 * The cycle (wsp_cycle; the daemon's "plan-awareness" job every
 * WSP_CYCLE_MS ±12 %, never in --social-only mode, never two at once, not
 * while fewer than WSP_LOW_BUDGET GitHub requests are left). It
 * runs on the loop between network answers, so Bluesky, the room and the
 * commitments go on while it waits; the coder's run is not part of the
 * cycle (it goes on in its own job, one task at a time per agent):
 *   1. discovery: new messages in the conversation store (the room, the
 *      owner, Bluesky; from the owner, the room's host, peers) naming a
 *      workspace (watch.h) → watched;
 *   2. per watched workspace: the open issues labelled "plan" (a
 *      conditional request: an unchanged list is a free 304), each plan's
 *      comments (the same), parsed (modules/plan) and its task state
 *      folded from the machine markers (taskstate.h);
 *   3. duplicates (policy.h): an untouched plan with the title of another
 *      is closed as superseded (a comment naming the plan kept, labels
 *      plan + plan:superseded), under a coordination claim so one agent
 *      does it;
 *   4. the body of a plan is re-rendered from the markers when it differs
 *      (plan_state_sync_body) by the agent whose marker is the latest (or
 *      the plan's author when no marker applies);
 *   5. the room hears a workspace_state per plan whose counts changed
 *      (space-protocol.md; through outbound);
 *   6. the lifecycle (wsp_life.c): the finished sentinel found by label,
 *      made or reactivated; plan synthesis from open issues and the
 *      closing of the issues the new plan names; the health check; stale
 *      and handled issues closed; the open issues a person opened handed
 *      to the GitHub conversations to answer (config consider);
 *   7. recovery (wsp_recover.c): the notice of a task that failed too
 *      often; a claim that lapsed (another agent's, no PR marker and no
 *      open PR of its branch, its latest marker older than the orphan
 *      time by GitHub's clock, its lock free) reset; an orphaned branch
 *      given its PR — one reset or recovery per cycle, which ends it;
 *   8. when no task of ours runs, the coder is configured and the agent is
 *      not paused: a task of ours left unfinished by a restart is resumed;
 *      else plan_choose picks one, and it is claimed (below); at most one
 *      claim per cycle.
 *
 * A claim (§3.7, per task, race-free):
 *   a. the coordination backend's lock "task:<owner>/<repo>#<plan>/task-<n>"
 *      (local, the room's claims, or Redis), WSP_CLAIM_TTL_MS, renewed while
 *      the agent works on the task and released when it is done — so an
 *      agent killed mid-claim holds nothing past the TTL. Held by another
 *      agent: stand down; the backend cannot answer (the room down, Redis
 *      away): go on, the markers alone decide;
 *   b. the plan's comments read again: still claimable?
 *   c. the claim comment: the agent's phrase (github.task_claim) with the
 *      marker <!-- ga:claim plan=P task=N agent=LOGIN attempt=K -->;
 *   d. the comments read again: the first valid claim by comment id holds
 *      the task; a loser deletes its comment and releases its lock.
 * Then the run (§3.9): taskexec with ports that go through outbound (the
 * push) and re-read the plan (GATE 5); on a pushed branch the PR is opened
 * (outbound, new-pr; the §3.9 body with its marker), the designated
 * reviewer — only that one — is requested (policy.h: the rule the review
 * uses), and the report comment is posted (github.task_complete with the
 * marker <!-- ga:pr … pr=M branch=B -->: the task is in progress with its
 * PR). A blocked or failed run is reported (github.task_blocked /
 * github.task_failed with a blocked / failed marker: the task is free
 * again, one failure more). After a restart a task we hold without a PR is
 * resumed: taskexec's record continues the same attempt (no second branch)
 * and the PR's key finds a PR opened before the kill.
 *
 * Workspaces (§3.1): wsp_find lists an organisation's repositories for the
 * first one with the prefix (the oldest); wsp_create does the same under
 * the coordination lock "workspace:<org>" (WSP_CREATE_TTL_MS; a second agent
 * asked at once waits for it, then finds the first one's) and creates the
 * repository from the template (outbound, create-repo) when there is none:
 * one workspace per organisation. Created and found workspaces are watched.
 *
 * Decisions: every step is {verdict, rule, reason} in the decision log
 * under platform "github", conversation "plan:<owner>/<repo>#<n>" and
 * message id "task-<n>" (the plan's own steps: "plan").
 *
 * Bounds: WSP_MAX_WATCHED workspaces (watch.h), WSP_MAX_PLANS_SEEN open
 * plans read per workspace (the newest), WSP_MAX_PLANS plans in the status
 * (the rest counted), PLAN_MAX_EVENTS markers per plan (taskstate.h),
 * WSP_MAX_COMMENTS comments read per plan, WSP_MAX_TOOL_CALLS find/create
 * requests in flight (more are refused with a sentence).
 *
 * Lifetime: wsp_quiesce stops new work and cancels a running task at its
 * next step (its record is kept: the next start resumes it); calls in
 * flight finish through an anchor, so answers after wsp_free are dropped.
 * Free after outbound_close and before the GitHub client. One loop.
 */
#ifndef GA_MODULES_WORKSPACE_WORKSPACE_H
#define GA_MODULES_WORKSPACE_WORKSPACE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/watch.h"

#define WSP_CYCLE_MS         180000 /* plan awareness (§3.6) */
#define WSP_CYCLE_JITTER     0.12
#define WSP_CLAIM_TTL_MS     120000                   /* the task lock; renewed every third of it */
#define WSP_ORPHAN_MS        (15 * 60 * 1000)         /* a claim without progress lapses */
#define WSP_HANDLED_MS       (24LL * 3600 * 1000)     /* §3.14.5: our last word, quiet this long */
#define WSP_STALE_MS         (7LL * 24 * 3600 * 1000) /* §3.14.5: any issue quiet this long */
#define WSP_CREATE_TTL_MS    120000
#define WSP_CREATE_WAIT_MS   60000 /* how long a second creator waits for the first */
#define WSP_MAX_PLANS        64
#define WSP_MAX_COMMENTS     1000
#define WSP_MAX_TOOL_CALLS   8
#define WSP_STATE_RESEND_MS  (30 * 60 * 1000) /* workspace_state again, unchanged */
#define WSP_LOW_BUDGET       200 /* §3.6: no cycle below this many core requests left */
#define WSP_DEFAULT_TEMPLATE "internet-development/www-sacred"
#define WSP_DEFAULT_ORG      "internet-development"
#define WSP_DEFAULT_DESC     "Collaborative development workspace"
#define WSP_WORK_DIR         "tasks" /* the task clones, under the memory directory */

struct budget;
struct coder_config;
struct compose_call;
struct conv_store;
struct coord;
struct decision_log;
struct gh_client;
struct git_ctx;
struct journal;
struct ledger;
struct llm_client;
struct outbound;
struct skills;
struct state_store;
struct voice;

struct wsp_config {
	uv_loop_t *loop;
	struct gh_client *gh;         /* required: every read */
	struct outbound *outbound;    /* required: every write */
	struct journal *journal;      /* required: the artifacts of sends made before */
	const struct state_store *st; /* required: the watch list, taskexec's records */
	struct decision_log *dlog;    /* may be NULL */
	/* The backend claims go through now (the room's once joined, else
	 * Redis or local). NULL, or answering NULL: the markers alone decide. */
	struct coord *(*coord)(void *ud);
	/* Task work: all four, and a configured coder, or plans are only read. */
	struct git_ctx *git;              /* the mirrors (the port pushes from them) */
	const char *work_root;            /* absolute: the task clones */
	const struct coder_config *coder; /* CODER_COMMAND */
	const struct skills *skills;      /* holds "task-execution" */
	struct voice *voice;              /* voice-phrases.json; NULL: the defaults */
	const char *login;                /* AGENT_GITHUB_USERNAME: required */
	const char *agent_name;           /* our holder name in coordination claims */
	const char *api_url;              /* GITHUB_API_URL (the git host follows it) */
	const char *token;                /* for git's fetches; NULL: none */
	const char *prefix;               /* NULL: WSP_DEFAULT_PREFIX */
	const char *template_repo;        /* "owner/name"; NULL: WSP_DEFAULT_TEMPLATE */
	const char *default_org;          /* NULL: WSP_DEFAULT_ORG */
	int64_t claim_ttl_ms;             /* 0: WSP_CLAIM_TTL_MS */
	int64_t orphan_ms;                /* 0: WSP_ORPHAN_MS */
	int64_t handled_ms;               /* 0: WSP_HANDLED_MS */
	int64_t stale_ms;                 /* 0: WSP_STALE_MS */
	/* Plan synthesis and the health check (wsp_int.h, wsp_life_step):
	 * the model, its budget (may be NULL) and the commitment ledger its
	 * plan_create / github_create_issue go to. Without llm and ledger
	 * neither runs (a finished workspace gets its sentinel directly). */
	struct llm_client *llm;
	struct budget *budget;
	struct ledger *ledger;
	/* Discovery reads the conversations (may be NULL). */
	struct conv_store *(*store)(void *ud);
	/* The kill switch: no claim while paused (may be NULL). */
	bool (*paused)(void *ud);
	/* A workspace_state for the room: {workspace, plan, total, completed,
	 * blocked, inProgress, tasks[]} (borrowed). -1 when not in a room.
	 * May be NULL. */
	int (*room_state)(void *ud, const cJSON *state);
	/* Tell the owner (the terminal). May be NULL. */
	void (*notify_owner)(void *ud, const char *text);
	/* Ask for a cycle soon (after the owner named a workspace). May be NULL. */
	void (*poke)(void *ud);
	/* Review owner/repo#pr (ghconv_review): called for an open PR of a
	 * watched workspace whose review is requested of us (the designated
	 * reviewer, or the next one after a timeout) and that has no review
	 * of ours on its head. The callee dedups. May be NULL. */
	void (*review)(void *ud, const char *owner, const char *repo, int64_t pr, const char *head);
	/* The open-issue scan (§3.14.5, plan step 12; wsp_life_step): the
	 * open issues of a workspace that is not finished that a person
	 * opened (policy.h wsp_engage_candidate) go here, newest first, at
	 * most WSP_ENGAGE_PER_CYCLE queued per workspace a cycle — to the
	 * GitHub conversations (ghconv_consider_issue), which remember what
	 * they decided per updated_at. May be NULL: no open-issue
	 * engagement. */
	wsp_consider_fn consider;
	/* Say text in the room (a merge, a plan complete), through outbound
	 * under key (the same key: said once). -1 when not in a room. May be
	 * NULL. */
	int (*room_say)(void *ud, const char *text, const char *key);
	/* Reply text in the Bluesky thread a workspace was found in (the
	 * watch's thread), through outbound under key. May be NULL. */
	int (*thread_say)(void *ud, const char *thread, const char *text, const char *key);
	/* The GitHub logins the room's other agents said in their identities
	 * (the room's peers that do GitHub work): into out, borrowed until the
	 * next call; how many, at most cap. They are known agents of every
	 * workspace (wsp_int.h wsp_workspace_agents) — reviewers besides the
	 * plans' marker authors. May be NULL (no room: the markers alone). */
	size_t (*room_agents)(void *ud, const char **out, size_t cap);
	/* OWNER_GITHUB_USERNAME: the owner's login, named as the one to act
	 * where a PR is left to the owner (wsp_status "pulls"[].next). NULL or
	 * "": "owner". Must be a GitHub login. */
	const char *owner_login;
	int64_t review_timeout_ms; /* 0: WSP_REVIEW_TIMEOUT_MS */
	int max_revisions;         /* 0: WSP_MAX_REVISIONS; < 0: none */
	void *ud;
};

struct wsp;

/* Loads the watch list. NULL with err when a required part is missing. */
struct wsp *wsp_new(const struct wsp_config *c, struct ga_err *err);
/* No new work; a running task is cancelled at its next step (resumed at
 * the next start). Idempotent. */
void wsp_quiesce(struct wsp *w);
void wsp_free(struct wsp *w); /* NULL ok */

/* One plan-awareness cycle; done (may be NULL) is called once, from the
 * loop, when the cycle is over (a task it started runs on). */
void wsp_cycle(struct wsp *w, void (*done)(void *ud), void *ud);

/* Watches owner/repo (the owner's "work on acme/www-…", a tool) and asks
 * for a cycle. 1 added, 0 already watched, -1 with err. */
int wsp_watch(struct wsp *w, const char *owner, const char *repo, enum wsp_source src,
              const char *thread, struct ga_err *err);

/* The owner's "stop working on owner/repo": no longer watched (its plans
 * are no longer read, no new task of it is claimed; a task of it that
 * runs goes on to its PR), and remembered as unwatched so that discovery
 * does not bring it back — only the owner's own watch does. 1 removed, 0
 * not watched. */
int wsp_unwatch(struct wsp *w, const char *owner, const char *repo);

/* The answer of a find or a create: ok, and a short text for the model
 * ({"found":…,"name":…,"url":…} or a sentence). Borrowed for the call. */
typedef void (*wsp_answer_fn)(void *ud, bool ok, const char *text);
/* The workspace of org (NULL: the default organisation). -1 with err when
 * refused at once (bad name, too many calls). */
int wsp_find(struct wsp *w, const char *org, wsp_answer_fn done, void *ud, struct ga_err *err);
/* Creates <prefix><name> in org from the template unless org has a
 * workspace already (then that one is the answer, {"created":false}).
 * Either way the workspace is watched (source src: who asked; a found one
 * the owner unwatched is watched again only when src is the owner).
 * thread: the conversation that asked (kept with the watch), may be
 * NULL. */
int wsp_create(struct wsp *w, const char *org, const char *name, const char *description,
               enum wsp_source src, const char *thread, wsp_answer_fn done, void *ud,
               struct ga_err *err);

/* The model's workspace tools (local-tools/tools_workspace.c), answered
 * on call when done: workspace_find {org?}, workspace_create {name,
 * description?, org?}, workspace_watch / workspace_unwatch {owner, repo} (source: who asked,
 * thread: the conversation, may be NULL). 1 when action is one of them
 * (the call is answered, now or later), 0 otherwise. */
int wsp_tool_call(struct wsp *w, const char *action, const cJSON *params, enum wsp_source source,
                  const char *thread, struct compose_call *call);

/* {"watched":[…], "plans":[{repo, number, title, url, counts…, tasks:[{number,
 * title, status, assignee, pr, prUrl}]}], "task": {…} | null, "lastCycle":
 * {ms, requests, notModified, plans}, "counters": {…}, "lastError"}.
 * Caller frees. */
cJSON *wsp_status(const struct wsp *w);
/* One line on the workspaces from a wsp_status object: "2 watched, 3 open
 * plans (5 of 9 tasks completed, 2 in progress), last cycle 4 requests (3
 * not modified)". */
void wsp_status_summary(const cJSON *status, char *out, size_t cap);
/* One line naming the task in progress ("task 2 of acme/www-x#4: Add the
 * page (coder, attempt 1)") from a wsp_status object; false when none. */
bool wsp_status_task_line(const cJSON *status, char *out, size_t cap);
/* True while a task of ours runs. */
bool wsp_busy(const struct wsp *w);

#endif
