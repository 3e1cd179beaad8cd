/*
 * wsp_int — what the files of modules/workspace share (not for use outside
 * it): the engine's struct, the anchor that outlives it for late answers,
 * the view of one polled plan, the send helper and the decision log.
 *
 *   workspace.c  the engine: life, watch list, discovery, the cycle, status
 *   wsp_task.c    a claim and the run of one task to its PR and report
 *   wsp_repo.c    find and create a workspace
 *   wsp_recover.c recovery that is not the creator's (stuck, orphans)
 *   wsp_life.c    the workspace's lifecycle (sentinel, hygiene)
 *   wsp_sentinel.c the finished sentinel verified by its creator
 *   wsp_pr.c      the pull requests: the merge rule applied to ours, the
 *                review asked of us, what follows a merge
 *   wsp_send.c    one outbound send that ends once (reconciled when unsure),
 *                the plan's comments read and folded
 */
#ifndef GA_MODULES_WORKSPACE_WSP_INT_H
#define GA_MODULES_WORKSPACE_WSP_INT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/github/github.h"
#include "modules/decisions/decision.h"
#include "modules/plan/plan.h"
#include "modules/plan/taskstate.h"
#include "modules/reflection/voice.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/watch.h"
#include "modules/workspace/workspace.h"

#define LOG_COMP         "workspace"
#define WSP_SENT_MAX     64 /* remembered workspace_state broadcasts */
#define WSP_REREAD_TRIES 5  /* reads that look for our own claim comment */
#define WSP_REREAD_MS    2000
#define WSP_LIFE_SAID    8 /* sentinel verdicts remembered so each is noted once */

/* Answers that arrive after wsp_free find a NULL w here. */
struct wsp_anchor {
	struct wsp *w;
	int refs;
};
struct wsp_anchor *wsp_hold(struct wsp *w);
/* The engine, or NULL when it is gone (the anchor is freed with its last
 * reference). */
struct wsp *wsp_drop(struct wsp_anchor *a);

/* One plan as the last poll saw it. */
struct wsp_plan {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
	int number;
	char *title; /* the issue's title */
	char *url;
	char author[PLAN_LOGIN_MAX];
	char *body;
	struct plan plan;
	struct plan_task_state *st; /* plan.n_tasks */
	struct wsp_counts counts;
	struct wsp_agents agents;         /* marker authors */
	char last_author[PLAN_LOGIN_MAX]; /* of the latest applied marker; "" none */
	bool touched;                     /* a marker applied */
	int64_t polled_ms;
};
void wsp_plan_free(struct wsp_plan *p); /* NULL ok */

/* The comments of a plan read as events (authors copied). */
struct wsp_events {
	struct plan_event *ev;
	char (*author)[PLAN_LOGIN_MAX];
	size_t n;
	/* our own claim comment for (task, attempt) when asked: its id */
	int64_t own_claim_id;
};
/* Reads a comments array (GitHub's JSON): every comment with a valid
 * marker. Malformed markers are logged. */
void wsp_events_read(struct wsp_events *e, const cJSON *comments);
void wsp_events_free(struct wsp_events *e);
/* The id of a comment of login carrying a claim marker for task/attempt,
 * or 0. */
int64_t wsp_events_claim_of(const struct wsp_events *e, const char *login, int task, int attempt);

/* Folds the plan (body + number) with the events into p->st, the counts,
 * the agents and the latest applied marker's author. */
void wsp_plan_fold(struct wsp_plan *p, const struct wsp_events *e);
/* A new view of a plan issue (GitHub's JSON) folded with e, or NULL when
 * the issue is not a plan or its body does not read (d says why). */
struct wsp_plan *wsp_plan_new(const char *owner, const char *repo, const cJSON *issue,
                              const struct wsp_events *e, int64_t now_ms, struct decision *d);

struct compose_run;
struct wsp_run; /* wsp_task.c */
struct wsp_sent {
	char key[WSP_REPO_FULL_MAX + 16];
	struct wsp_counts c;
	uint64_t pulls; /* wsp_view_pulls_hash of the pulls sent with it */
	int64_t at_ms;
};

/* One pull request as the last cycle saw it (wsp_status()["pulls"]). */
struct wsp_pull {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
	int64_t number;
	char title[160];
	char url[GH_URL_MAX];
	int plan, task, revisions;
	char author[PLAN_LOGIN_MAX], reviewer[PLAN_LOGIN_MAX], next[PLAN_LOGIN_MAX];
	enum wsp_pr_state state;
	int64_t since_ms, seen_ms;
};

struct wsp {
	struct wsp_config c;
	char *login, *agent_name, *api_url, *token, *work_root, *prefix, *template_repo,
	        *default_org;
	char owner_login[PLAN_LOGIN_MAX]; /* "" unknown */
	struct wsp_anchor *anchor;
	struct wsp_watchlist watch;
	struct wsp_plan *plans[WSP_MAX_PLANS];
	size_t nplans;
	size_t plans_dropped;
	struct wsp_sent sent[WSP_SENT_MAX];
	size_t nsent;
	int64_t scanned_ms; /* discovery: messages up to here were read */
	bool quiescing;
	bool cycling;
	struct wsp_run *run; /* the task of ours that runs, or NULL */
	cJSON *life;         /* wsp_life.c's state file, read at its first use; NULL before */
	struct compose_run *life_run; /* wsp_life.c's model run in flight, or NULL */
	/* wsp_sentinel.c: hashes of the latest verdicts noted (a ring) */
	uint64_t life_said[WSP_LIFE_SAID];
	size_t nlife_said;
	int tool_calls; /* find/create in flight */
	struct wsp_pull pulls[WSP_MAX_PULLS];
	size_t npulls;
	size_t pulls_dropped;
	bool pr_stepping; /* a PR step runs */
	/* figures */
	struct {
		uint64_t cycles, claims, claims_won, claims_lost, prs, failed, blocked, resumed,
		        resets, superseded, body_syncs, states_sent, budget_skips, merged,
		        revisions, rebuilds, handed_over, reviews_asked, plans_completed;
	} n;
	struct {
		int64_t at_ms, ms;
		uint64_t requests, not_modified;
		size_t plans;
		char skipped[DECISION_REASON_MAX]; /* why the latest cycle did not run; "" it ran */
	} last;
	char last_error[GA_ERR_MSG_MAX];
};

/* Records d in the decision log (platform github, conversation
 * "plan:<owner>/<repo>#<plan>" or "workspace:<owner>/<repo>" when plan is
 * 0, message id "task-<n>" or "plan") and logs it. */
void wsp_note(struct wsp *w, const char *owner, const char *repo, int plan, int task,
              enum decision_stage stage, const struct decision *d);
/* wsp_note of a decision made here: {v, rule (static), the formatted
 * reason}. */
void wsp_notef(struct wsp *w, const char *owner, const char *repo, int plan, int task,
               enum decision_stage stage, enum decision_verdict v, const char *rule,
               const char *fmt, ...) __attribute__((format(printf, 9, 10)));
void wsp_error(struct wsp *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wsp_tell_owner(struct wsp *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One outbound send that ends once: SENT → ok with the artifact; a key the
 * journal holds as done → ok with its artifact (a restart: made before);
 * an unresolved key or a send that may have happened → reconciled first
 * (exists → ok; not made → sent again, once). cb(ud, ok, artifact, why). */
typedef void (*wsp_sent_fn)(void *ud, bool ok, const char *artifact, const char *why);
struct wsp_send {
	const char *target;
	const char *text;
	const char *key;
	const cJSON *extra; /* may be NULL */
	const char *conversation;
	const char *message_id;
};
void wsp_send(struct wsp *w, const struct wsp_send *s, wsp_sent_fn cb, void *ud);

/* A comment with a marker on a plan: the phrase of k rendered with number,
 * title, details (may be NULL), the marker m below it. cb may be NULL. */
void wsp_send_comment(struct wsp *w, const char *owner, const char *repo, int plan,
                      enum voice_key k, const char *phrase_override, const char *title,
                      const char *details, const struct plan_marker *m, const char *key,
                      wsp_sent_fn cb, void *ud);

/* The plan's body made to show its state, when it differs and this agent
 * is the one to write it (wsp_int: the latest marker's author, else the
 * plan's author; force: we just changed it). */
void wsp_sync_body(struct wsp *w, const struct wsp_plan *p, bool force);

/* wsp_task.c */
/* Claims (task, attempt) of plan p (a copy is taken) and runs it when won.
 * done_cb: when the claim is settled (won: the run started). */
void wsp_claim(struct wsp *w, const struct wsp_plan *p, int task, int attempt, bool resume,
               void (*done)(void *ud), void *ud);
void wsp_run_cancel(struct wsp *w);
cJSON *wsp_run_status(const struct wsp *w);
/* Requests a review of owner/repo#pr from its designated reviewer (its
 * name into who) through outbound, once (the journal's key
 * "ws-review-rq:…#<pr>"); cb gets the outcome. -1 (cb not called) when no
 * agent but us is known. */
int wsp_request_review(struct wsp *w, const char *owner, const char *repo, int plan, int task,
                       int64_t pr, char *who, size_t cap, wsp_sent_fn cb, void *ud);
/* The coordination key of a task. */
void wsp_task_lock(char *out, size_t cap, const char *owner, const char *repo, int plan, int task);
struct coord *wsp_coord(struct wsp *w);
/* Known agents of a workspace: us, all its plans' marker authors (plan
 * order), then the room's agents (wsp_config.room_agents, sorted so the
 * set does not hang on member order), at most WSP_MAX_AGENTS valid logins
 * (plan_valid_login), each once. The room's part follows its membership:
 * an agent that leaves the room and has no marker is no longer known. */
void wsp_workspace_agents(struct wsp *w, const char *owner, const char *repo,
                          struct wsp_agents *out);

/* The cycle's steps after the poll: each calls next(ud, acted) once, on
 * the loop (acted: it changed a plan, the cycle ends without a claim). */
typedef void (*wsp_step_fn)(void *ud, bool acted);

/* wsp_recover.c: recovery that is not the creator's (spec §3.13.1–2), on
 * the plans the poll just read:
 *   notice  a task that failed PLAN_MAX_RETRIES times and has no abandon
 *           marker gets one (the owner is told), once across agents: the
 *           coordination lock "abandon:…" and the comments read again;
 *   stuck   another agent's claim without a PR marker whose latest marker
 *           (GitHub's created_at, so the time survives restarts and every
 *           agent reads the same) is older than the orphan time, whose
 *           task lock is free (a shared backend only: the in-process one
 *           cannot see another agent's lock) and for which no open PR
 *           carries the task's branch → a reset marker, under the lock;
 *   orphan  a claimable task with a task branch on the remote that never
 *           had a PR (any state) → under the task lock: a claim marker,
 *           the comments read again (ours must be the accepted claim), the
 *           PR (outbound new-pr, the body says it was recovered), a pr
 *           marker (the task is in progress, ours), the designated
 *           reviewer asked. A PR once opened for the branch (even closed)
 *           means never again; a recovery cut by a restart after its
 *           claim is finished by the next cycle.
 * One reset or recovery per cycle (acted). Nothing while paused. */
void wsp_recover_step(struct wsp *w, wsp_step_fn next, void *ud);

/* wsp_life.c: the lifecycle (spec §3.14.2–5), per watched workspace
 * whose plans were read, from its open issues (one list, least recently
 * updated first, LIFE_MAX_ISSUES):
 *   sentinel  the open issues labelled "finished" are the sentinels (any
 *             agent's: found by label, so no agent makes a second one);
 *             the oldest is kept, others are closed as duplicates; a plan
 *             or a person's issue opened after it reactivates the
 *             workspace (a comment naming it, the sentinel closed);
 *   finished  no sentinel, no open plan, issue or PR, and a closed plan
 *             (work was done here) → under the lock "life:<o>/<r>#0",
 *             the sentinels listed again, the health check (with a model
 *             and the ledger, once a day: README.md and the last closed
 *             plans; the model may promise one issue, github_create_issue
 *             → a commitment) → one sentinel (new-issue, label finished)
 *             carrying the model's words;
 *   synthesis open issues, no open plan, no sentinel (with a model and
 *             the ledger, once an hour, lock "life:<o>/<r>#synth"): the
 *             model gets the issues (wsp_synthesis_prompt) and plan_create
 *             only → a create_plan commitment; the issues it was given are
 *             kept in the state file "workspace_life" until a newer plan
 *             is open, then those the plan names (wsp_plan_covers) are
 *             closed "Rolled into plan #N", the others left open;
 *   hygiene   an issue (not a PR, plan, sentinel or discussion) quiet for
 *             stale_ms (memo: 3/7 of it) is closed; one quiet for
 *             handled_ms whose latest comment is ours is closed;
 *   engage    no sentinel: the issues a person opened (wsp_engage) go to
 *             config consider, newest first, WSP_ENGAGE_PER_CYCLE queued
 *             at most; the GitHub conversations walk and answer them (no
 *             lock here: the stagger orders agents, each reads the others'
 *             comments first; the reply decision and outbound's key keep
 *             cycles and restarts from answering twice).
 * Every act under a coordination lock "life:<o>/<r>#<n>" left to lapse,
 * through outbound with a key; a decision each. Never acted (next gets
 * false): the plans are not changed. Nothing while paused. */
void wsp_life_step(struct wsp *w, wsp_step_fn next, void *ud);
/* Cancels a model run of the lifecycle (wsp_quiesce). */
void wsp_life_quiesce(struct wsp *w);

/* wsp_sentinel.c: the finished sentinel verified (spec §3.14.4), from
 * what GitHub holds, each write through outbound under a key of the
 * sentinel's number ("life-feedback", "life-say", "life-close",
 * "life-reopen"), so agents, cycles and restarts make it once:
 *   verify   b[s] is the open sentinel (wsp_sentinel_pick); when we
 *            created it, under the lock "life:<o>/<r>#<s>:verify"
 *            (released at the end): its first WSP_SENTINEL_COMMENTS
 *            comments judged (wsp_sentinel_judge): agreement → finished;
 *            remaining work → the issue "Feedback from #s: remaining work
 *            identified" (wsp_feedback_body), a comment naming it, the
 *            sentinel closed; nobody spoke → the comments of the open
 *            issues updated since it was made (wsp_activity_issues, at
 *            most WSP_SCAN_ISSUES) read, a person's comment → a comment
 *            naming that issue and the sentinel closed. Not ours: nothing
 *            (its creator verifies it). A read that fails leaves it as is;
 *   closed   no sentinel open and nothing open: the most recently closed
 *            sentinel and its closed_by read (wsp_sentinel_closed): ours,
 *            closed by someone else → reopened once, with a comment;
 *            closed by its creator → done(ud, true, its number): a new one
 *            may be made; else done(ud, false, …). done is called once,
 *            also when the engine is stopping (ud's own anchor tells). */
void wsp_sentinel_verify(struct wsp *w, const char *owner, const char *repo,
                         const struct wsp_issue_brief *b, size_t n, int s);
typedef void (*wsp_closed_fn)(void *ud, bool go, int closed);
void wsp_sentinel_closed_check(struct wsp *w, const char *owner, const char *repo,
                               wsp_closed_fn done, void *ud);
/* A lifecycle act on owner/repo#number: the comment text (NULL: none;
 * WSP_LIFE_MARK added below it, key "life-say"), then the close with
 * state_reason reason (key "life-close"). what names the act in the
 * outbound text. cb(ud, ok, the close's artifact, why). */
void wsp_life_close(struct wsp *w, const char *owner, const char *repo, int number,
                    const char *text, const char *reason, const char *what, wsp_sent_fn cb,
                    void *ud);

/* A revision of PR pr (ours, task of p at attempt) on its branch, the
 * review as input: -1 when a task of ours runs already (the next cycle
 * asks again). */
int wsp_revise(struct wsp *w, const struct wsp_plan *p, int task, int attempt, int64_t pr,
               const char *revision);
/* Whether the run of ours revises owner/repo#pr now. */
bool wsp_run_revising(const struct wsp *w, const char *owner, const char *repo, int64_t pr);

/* wsp_pr.c */
/* The PR step of the cycle: every open PR of the watched workspaces read
 * once; ours through the merge rule (policy.h), the ones whose review is
 * asked of us to the review callback; our PRs merged and not yet followed
 * through (a restart between the merge and the plan's marker) finished.
 * done(ud) once, from the loop or before returning. */
void wsp_pr_step(struct wsp *w, void (*done)(void *ud), void *ud);
/* A revision run ended (wsp_task.c): pushed → the review is asked again
 * by the next step; otherwise the PR is left to the owner. */
void wsp_pr_revised(struct wsp *w, const char *owner, const char *repo, int plan, int task,
                    int64_t pr, bool pushed, const struct decision *d);
/* github_merge_pr {owner, repo, pull_number}: our PR of a watched
 * workspace merged through the step's path (the same keys: never twice)
 * and followed through (the task done in the plan the PR names, the plan
 * completed). answer once, later. -1 with err when refused at once. */
int wsp_merge_pr(struct wsp *w, const char *owner, const char *repo, int64_t pr,
                 wsp_answer_fn answer, void *ud, struct ga_err *err);
/* The "pulls" array of the status (wsp_status). */
cJSON *wsp_pulls_json(const struct wsp *w);

/* wsp_repo.c */
void wsp_tool_done(struct wsp *w);

#endif
