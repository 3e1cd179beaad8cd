/*
 * ws_int — what the files of modules/workspace share (not for use outside
 * it): the engine's struct, the anchor that outlives it for late answers,
 * the view of one polled plan, the send helper and the decision log.
 *
 *   workspace.c  the engine: life, watch list, discovery, the cycle, status
 *   ws_task.c    a claim and the run of one task to its PR and report
 *   ws_repo.c    find and create a workspace
 *   ws_send.c    one outbound send that ends once (reconciled when unsure),
 *                the plan's comments read and folded
 */
#ifndef GA_MODULES_WORKSPACE_WS_INT_H
#define GA_MODULES_WORKSPACE_WS_INT_H

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

#define LOG_COMP        "workspace"
#define WS_SENT_MAX     64 /* remembered workspace_state broadcasts */
#define WS_REREAD_TRIES 5  /* reads that look for our own claim comment */
#define WS_REREAD_MS    2000

/* Answers that arrive after ws_free find a NULL w here. */
struct ws_anchor {
	struct ws *w;
	int refs;
};
struct ws_anchor *ws_hold(struct ws *w);
/* The engine, or NULL when it is gone (the anchor is freed with its last
 * reference). */
struct ws *ws_drop(struct ws_anchor *a);

/* One plan as the last poll saw it. */
struct ws_plan {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
	int number;
	char *title; /* the issue's title */
	char *url;
	char author[PLAN_LOGIN_MAX];
	char *body;
	struct plan plan;
	struct plan_task_state *st; /* plan.n_tasks */
	struct ws_counts counts;
	struct ws_agents agents;          /* marker authors */
	char last_author[PLAN_LOGIN_MAX]; /* of the latest applied marker; "" none */
	bool touched;                     /* a marker applied */
	int64_t polled_ms;
};
void ws_plan_free(struct ws_plan *p); /* NULL ok */

/* The comments of a plan read as events (authors copied). */
struct ws_events {
	struct plan_event *ev;
	char (*author)[PLAN_LOGIN_MAX];
	size_t n;
	/* our own claim comment for (task, attempt) when asked: its id */
	int64_t own_claim_id;
};
/* Reads a comments array (GitHub's JSON): every comment with a valid
 * marker. Malformed markers are logged. */
void ws_events_read(struct ws_events *e, const cJSON *comments);
void ws_events_free(struct ws_events *e);
/* The id of a comment of login carrying a claim marker for task/attempt,
 * or 0. */
int64_t ws_events_claim_of(const struct ws_events *e, const char *login, int task, int attempt);

/* Folds the plan (body + number) with the events into p->st, the counts,
 * the agents and the latest applied marker's author. */
void ws_plan_fold(struct ws_plan *p, const struct ws_events *e);
/* A new view of a plan issue (GitHub's JSON) folded with e, or NULL when
 * the issue is not a plan or its body does not read (d says why). */
struct ws_plan *ws_plan_new(const char *owner, const char *repo, const cJSON *issue,
                            const struct ws_events *e, int64_t now_ms, struct decision *d);

struct ws_run; /* ws_task.c */
struct ws_sent {
	char key[WS_REPO_FULL_MAX + 16];
	struct ws_counts c;
	int64_t at_ms;
};

struct ws {
	struct ws_config c;
	char *login, *agent_name, *api_url, *token, *work_root, *prefix, *template_repo,
	        *default_org;
	struct ws_anchor *anchor;
	struct ws_watchlist watch;
	struct ws_plan *plans[WS_MAX_PLANS];
	size_t nplans;
	size_t plans_dropped;
	struct ws_sent sent[WS_SENT_MAX];
	size_t nsent;
	int64_t scanned_ms; /* discovery: messages up to here were read */
	bool quiescing;
	bool cycling;
	struct ws_run *run; /* the task of ours that runs, or NULL */
	int tool_calls;     /* find/create in flight */
	/* figures */
	struct {
		uint64_t cycles, claims, claims_won, claims_lost, prs, failed, blocked, resumed,
		        resets, superseded, body_syncs, states_sent;
	} n;
	struct {
		int64_t at_ms, ms;
		uint64_t requests, not_modified;
		size_t plans;
	} last;
	char last_error[GA_ERR_MSG_MAX];
};

/* Records d in the decision log (platform github, conversation
 * "plan:<owner>/<repo>#<plan>" or "workspace:<owner>/<repo>" when plan is
 * 0, message id "task-<n>" or "plan") and logs it. */
void ws_note(struct ws *w, const char *owner, const char *repo, int plan, int task,
             enum decision_stage stage, const struct decision *d);
void ws_error(struct ws *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ws_tell_owner(struct ws *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One outbound send that ends once: SENT → ok with the artifact; a key the
 * journal holds as done → ok with its artifact (a restart: made before);
 * an unresolved key or a send that may have happened → reconciled first
 * (exists → ok; not made → sent again, once). cb(ud, ok, artifact, why). */
typedef void (*ws_sent_fn)(void *ud, bool ok, const char *artifact, const char *why);
struct ws_send {
	const char *target;
	const char *text;
	const char *key;
	const cJSON *extra; /* may be NULL */
	const char *conversation;
	const char *message_id;
};
void ws_send(struct ws *w, const struct ws_send *s, ws_sent_fn cb, void *ud);

/* A comment with a marker on a plan: the phrase of k rendered with number,
 * title, details (may be NULL), the marker m below it. cb may be NULL. */
void ws_send_comment(struct ws *w, const char *owner, const char *repo, int plan, enum voice_key k,
                     const char *phrase_override, const char *title, const char *details,
                     const struct plan_marker *m, const char *key, ws_sent_fn cb, void *ud);

/* The plan's body made to show its state, when it differs and this agent
 * is the one to write it (ws_int: the latest marker's author, else the
 * plan's author; force: we just changed it). */
void ws_sync_body(struct ws *w, const struct ws_plan *p, bool force);

/* ws_task.c */
/* Claims (task, attempt) of plan p (a copy is taken) and runs it when won.
 * done_cb: when the claim is settled (won: the run started). */
void ws_claim(struct ws *w, const struct ws_plan *p, int task, int attempt, bool resume,
              void (*done)(void *ud), void *ud);
void ws_run_cancel(struct ws *w);
cJSON *ws_run_status(const struct ws *w);
/* Requests a review of owner/repo#pr from its designated reviewer (its
 * name into who) through outbound, once (the journal's key
 * "ws-review-rq:…#<pr>"); cb gets the outcome. -1 (cb not called) when no
 * agent but us is known. */
int ws_request_review(struct ws *w, const char *owner, const char *repo, int plan, int task,
                      int64_t pr, char *who, size_t cap, ws_sent_fn cb, void *ud);
/* The coordination key of a task. */
void ws_task_lock(char *out, size_t cap, const char *owner, const char *repo, int plan, int task);
struct coord *ws_coord(struct ws *w);
/* Known agents of a workspace (all its plans' marker authors, and us). */
void ws_workspace_agents(struct ws *w, const char *owner, const char *repo, struct ws_agents *out);

/* ws_repo.c */
void ws_tool_done(struct ws *w);

#endif
