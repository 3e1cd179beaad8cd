/*
 * fulfil — the commitment fulfilment pipeline (specs/github-commitments.md
 * §2.6): what the ledger (modules/commitments) says
 * the agent promised becomes an issue, a plan, a comment or a post —
 * exactly once, across crashes too.
 *
 * The cycle, a scheduler job every FULFIL_INTERVAL_MS (±12 %) in every
 * mode, never two at once (the scheduler's guard):
 *   1. sweep: stale (24 h) → abandoned; in_progress too long (10 min) →
 *      failed / abandoned (policy.h); repo cooldowns recomputed;
 *   2. pending work, oldest first, SEQUENTIALLY. For each:
 *      wait (untouched, no attempt) when its platform has no outbound port
 *      (post_bluesky until the Bluesky client exists; GitHub without a
 *      token), when the agent is social-only (GitHub types), or its repo is
 *      on cooldown;
 *      the journal first (the exactly-once part): key "commitment:<id>"
 *        DONE   → completed with the journal's artifact (a crash came
 *                 between done and the ledger), announced;
 *        INTENT → never resent blindly: outbound_reconcile_key asks GitHub
 *                 for the hidden key; exists → completed; does not → sent
 *                 now; cannot tell → left for a later cycle;
 *      the claim "<type>:<id>" through the coordination backend (held by a
 *      peer → left for later), renewed every FULFIL_CLAIM_RENEW_MS while
 *      fulfilling, released after with the attempt's outcome
 *      (coord_release_result: in a room, the action_result — success with
 *      the link, failure with the reason; §12.4);
 *      ledger in_progress, then outbound_submit with the idempotency key
 *      (create_plan first looks for an open plan with the same title:
 *      found → completed, "deduplicated", no second plan; create_workspace
 *      goes to the workspace module's create instead — it finds the
 *      organisation's workspace first and creates one, through outbound,
 *      only when there is none: created → completed and announced with its
 *      link; it existed → completed, and the room is told it exists, with
 *      the link; the journal then holds the link under the commitment's
 *      key);
 *      the outcome: sent → completed + the announcement; refused → failed
 *      (attemptCount + 1; abandoned at 3) and SILENT (§2.9: no chat; the
 *      owner's terminal hears of an owner's commitment abandoned; every
 *      abandonment goes to config.abandoned); may have
 *      been made (port_unknown) → failed, and the next try reconciles first.
 *   An attempt of ours that runs past the in-progress timeout is failed by a
 *   watchdog and its late answer ignored.
 * Announcements (§2.8): source "space" → "Done — <description>: <url>"
 * through pipeline_say into the room; out of the room for a moment (a
 * reconnect, the first seconds after start) it is held (FULFIL_HELD_MAX,
 * FULFIL_HELD_MS, in memory) and said at the first cycle back in the
 * room; source "bluesky" (§6.12) → for an issue or a plan, a follow-up
 * reply with the link under the post the promise answered (its refs from
 * the params sourceThreadUri/Cid, sourceRootUri/Cid; pipeline_say_with);
 * source "owner" → the
 * owner is told; other sources → the log only.
 * Every decision goes to the decision log: platform of the type,
 * conversation "commitment:<id>", message id the commitment id, so
 * `general-agent why <id>` tells its story.
 *
 * Lifetime: fulfil_quiesce stops the timers and takes no new work (an
 * attempt in flight finishes through outbound's callbacks); the owner then
 * closes outbound (which answers every submit) and calls fulfil_free.
 * Requests to the coordination backend carry a detachable anchor, so a late
 * answer after fulfil_free is harmless. Single-threaded, one loop.
 */
#ifndef GA_MODULES_FULFIL_FULFIL_H
#define GA_MODULES_FULFIL_FULFIL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"
#include "modules/fulfil/policy.h"

struct coord;
struct decision_log;
struct gh_client;
struct journal;
struct ledger;
struct ledger_entry;
struct outbound;
struct pipeline;
struct sched;

/* The workspace module's answer (same shape as workspace.h's
 * wsp_answer_fn); text borrowed for the call. */
typedef void (*fulfil_ws_answer_fn)(void *ud, bool ok, const char *text);

struct fulfil_config {
	uv_loop_t *loop;
	struct sched *sched;       /* required */
	struct ledger *ledger;     /* required */
	struct journal *journal;   /* required: no exactly-once without it */
	struct outbound *outbound; /* required */
	struct gh_client *github;  /* may be NULL: create_plan then skips its dedup read */
	struct pipeline *pipeline; /* may be NULL: no announcement in the room */
	struct decision_log *dlog; /* may be NULL */
	const char *agent_name;    /* our holder name in claims (copied) */
	bool social_only;
	uint64_t interval_ms;                                /* 0 = FULFIL_INTERVAL_MS */
	int64_t in_progress_timeout_ms;                      /* 0 = FULFIL_IN_PROGRESS_TIMEOUT_MS */
	uint64_t claim_renew_ms;                             /* 0 = FULFIL_CLAIM_RENEW_MS */
	int (*room_target)(void *ud, char *buf, size_t cap); /* may be NULL */
	struct coord *(*coord)(void *ud);                    /* may be NULL */
	void (*notify_owner)(void *ud, const char *text);    /* may be NULL */
	/* The room's announcement in the agent's voice (voice-phrases.json,
	 * modules/reflection/voice.h): a heap text, or NULL for the built-in
	 * "Done — <description>: <url>" (what the owner always gets). May be
	 * NULL. */
	char *(*phrase)(void *ud, enum fulfil_type t, const char *description, const char *url);
	/* A commitment was abandoned — its third failed attempt, or stale
	 * (24 h) — after the ledger recorded it (e is the ledger's entry,
	 * borrowed for the call). For source "space" the participation engine
	 * opens the host's request again (space-validation.md §6.3 → false).
	 * May be NULL. */
	void (*abandoned)(void *ud, const struct ledger_entry *e);
	/* Another agent reported action+target done (the room's
	 * action_result, either of the work's names — workkey.h): true with
	 * who and link filled (link "" when none). May be NULL. */
	bool (*peer_done)(void *ud, const char *action, const char *target, char *who,
	                  size_t who_cap, char *link, size_t link_cap);
	/* create_workspace: whether the workspace module runs in this agent
	 * now (NULL or false: such commitments wait, pending, untouched), and
	 * its create (workspace.h wsp_create: the organisation's workspace
	 * found first, under the coordination lock "workspace:<org>", created
	 * from the template through outbound only when there is none, then
	 * watched). org "" = the default organisation; description and
	 * thread may be NULL. 0 and done called once later with the module's
	 * answer ({"found","name","fullName","url","created","note"} or a
	 * sentence when !ok); -1 with err when refused at once. */
	bool (*workspaces_on)(void *ud);
	int (*create_workspace)(void *ud, const char *org, const char *name,
	                        const char *description, const char *thread,
	                        fulfil_ws_answer_fn done, void *done_ud, struct ga_err *err);
	void *ud;
};

struct fulfil;

/* Adds the "commitments" job to the scheduler (first run on the next loop
 * turn). NULL with err when a required part is missing or the job cannot
 * be added. */
struct fulfil *fulfil_new(const struct fulfil_config *c, struct ga_err *err);
/* Stop timers; no new work. Idempotent. */
void fulfil_quiesce(struct fulfil *f);
/* After outbound_close. NULL ok. */
void fulfil_free(struct fulfil *f);

/* Counts by ledger status, what this run did, cooldowns, the last error.
 * Caller frees. */
cJSON *fulfil_status(const struct fulfil *f);

struct fulfil_stats {
	uint64_t cycles, completed, failed, abandoned, reconciled, deferred;
	char last_error[GA_ERR_MSG_MAX];
};
void fulfil_stats(const struct fulfil *f, struct fulfil_stats *out);

#endif
