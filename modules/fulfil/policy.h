/*
 * fulfil policy — the pure half of the commitment fulfilment pipeline
 * (specs/github-commitments.md §2.4–§2.10): what each commitment type
 * sends where, the stale / in-progress timeouts, the 3-attempt rule, repo
 * cooldowns and how an outbound outcome is read. No I/O, no clock of its
 * own: time enters as now_ms, so tests drive it with a table.
 *
 * Rules:
 *   - pending work = pending, failed (attemptCount < 3) and in_progress that
 *     no attempt of this process holds (a crash left it: resumed without
 *     burning an attempt, the journal says whether the side effect happened);
 *   - stale: an open commitment created more than FULFIL_STALE_MS ago is
 *     abandoned ("Stale: exceeded 24h threshold", no attempt counted);
 *   - in-progress timeout: in_progress for more than
 *     FULFIL_IN_PROGRESS_TIMEOUT_MS → failed with attemptCount + 1 ("Timed
 *     out: in_progress for >10m"), abandoned when that makes 3;
 *   - a failed attempt → failed, or abandoned at FULFIL_MAX_ATTEMPTS;
 *   - repo cooldown: ≥ FULFIL_COOLDOWN_FAILURES commitments of one type in
 *     one repo failed or abandoned within FULFIL_COOLDOWN_WINDOW_MS put that
 *     repo on cooldown until FULFIL_COOLDOWN_MS after the latest of them.
 *     Keyed on the resolved owner/repo (§7.2 item 13), and a cooled repo
 *     DEFERS its commitments instead of failing them (no attempt burnt);
 *     derived from the ledger, so a restart recomputes the same answer;
 *   - social-only agents never fulfil GitHub types (they wait, untouched);
 *     a type whose platform has no outbound port waits, pending (post_bluesky
 *     until the Bluesky client exists; GitHub types without a token).
 *
 * Ownership: struct fulfil_plan owns its text, extra and draft
 * (fulfil_plan_free). Everything else is by value or borrowed.
 */
#ifndef GA_MODULES_FULFIL_POLICY_H
#define GA_MODULES_FULFIL_POLICY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules/commitments/ledger.h"
#include "modules/conversation/event.h"
#include "modules/decisions/decision.h"
#include "modules/plan/plan.h"

#define FULFIL_INTERVAL_MS            15000
#define FULFIL_JITTER_PCT             0.12
#define FULFIL_MAX_ATTEMPTS           3
#define FULFIL_STALE_MS               ((int64_t)24 * 3600 * 1000)
#define FULFIL_IN_PROGRESS_TIMEOUT_MS ((int64_t)10 * 60 * 1000)
#define FULFIL_CLAIM_TTL_MS           60000
#define FULFIL_CLAIM_RENEW_MS         30000
#define FULFIL_COOLDOWN_WINDOW_MS     ((int64_t)7 * 24 * 3600 * 1000)
#define FULFIL_COOLDOWN_FAILURES      5
#define FULFIL_COOLDOWN_MS            ((int64_t)48 * 3600 * 1000)
#define FULFIL_COOLDOWN_MAX           64          /* repos on cooldown tracked at once */
#define FULFIL_RECHECK_MS             1000        /* a deferred commitment is looked at again */
#define FULFIL_TEXT_MAX               (60 * 1024) /* GitHub takes 65,536 characters */
#define FULFIL_DESC_MAX               120         /* bytes of the description in an announcement */
#define FULFIL_HELD_MAX               16          /* room announcements waiting for the room */
#define FULFIL_HELD_MS                ((int64_t)30 * 60 * 1000) /* … at most this long */
#define FULFIL_TARGET_MAX             256
#define FULFIL_REPO_MAX               200 /* "owner/repo" */

enum fulfil_type {
	FULFIL_CREATE_ISSUE,
	FULFIL_CREATE_PLAN,
	FULFIL_COMMENT_ISSUE,
	FULFIL_POST_BLUESKY,
	FULFIL_CREATE_WORKSPACE, /* the organisation's workspace (§3.1), through modules/workspace
	                          */
	FULFIL_TYPE_COUNT,
};

/* "create_issue", ...; -1 for an action that is not a commitment type. */
int fulfil_type_parse(const char *action);
const char *fulfil_type_name(enum fulfil_type t);
bool fulfil_type_is_github(enum fulfil_type t);
enum conv_platform fulfil_type_platform(enum fulfil_type t);

/* --- the ledger's clock rules ------------------------------------------- */

enum fulfil_sweep {
	FULFIL_SWEEP_NONE,
	FULFIL_SWEEP_STALE,   /* → abandoned, no attempt counted */
	FULFIL_SWEEP_TIMEOUT, /* in_progress too long → failed/abandoned, +1 */
};
/* What the cycle's sweep does with one commitment. active: an attempt of
 * this process holds it (its own watchdog times it out). d gets the
 * reason when not NONE. */
enum fulfil_sweep fulfil_sweep_of(const struct ledger_entry *e, int64_t now_ms, bool active,
                                  int64_t in_progress_timeout_ms, struct decision *d);
/* The status after a failed attempt that leaves `attempts_after` finished
 * attempts: FAILED, or ABANDONED at FULFIL_MAX_ATTEMPTS. */
enum ledger_status fulfil_after_failure(int attempts_after);
/* Is e pending work (pending, failed under the limit, in_progress not held
 * by an attempt of ours)? */
bool fulfil_is_work(const struct ledger_entry *e, bool active);

/* --- repo cooldown ------------------------------------------------------- */

struct fulfil_fact {
	enum fulfil_type type;
	const char *repo; /* "owner/repo" resolved, or NULL */
	enum ledger_status status;
	int64_t created_ms;
	int64_t updated_ms;
};

struct fulfil_cooldown {
	char repo[FULFIL_REPO_MAX]; /* lower-cased "owner/repo" */
	enum fulfil_type type;      /* the type whose failures put it there */
	int failures;
	int64_t until_ms;
};

/* The cooldowns in force at now_ms (until_ms > now_ms), at most cap.
 * Returns how many were written. */
size_t fulfil_cooldowns(const struct fulfil_fact *facts, size_t n, int64_t now_ms,
                        struct fulfil_cooldown *out, size_t cap);
/* The cooldown of repo ("owner/repo", any case), or NULL. */
const struct fulfil_cooldown *fulfil_cooled(const struct fulfil_cooldown *cd, size_t n,
                                            const char *repo);

/* --- what a commitment sends ---------------------------------------------- */

/* "owner/repo" of a GitHub commitment's params (owner + repo, or a repo
 * "owner/repo"): 0, or -1 when either is missing. */
int fulfil_repo_of(const cJSON *params, char out[FULFIL_REPO_MAX]);

/* create_workspace: the workspace's name (the prefix is the workspace
 * module's) from the commitment's title: ASCII letters and digits
 * lower-cased, every other run one '-', none at either end, at most
 * FULFIL_WS_NAME_MAX bytes (cut at a '-' when there is one in the second
 * half); FULFIL_WS_NAME_DEFAULT when the title is absent or nothing is
 * left. Pure. */
#define FULFIL_WS_NAME_MAX     40
#define FULFIL_WS_NAME_DEFAULT "workspace"
void fulfil_workspace_name(const char *title, char out[FULFIL_WS_NAME_MAX + 1]);

/* What the fulfilment of commitment e does. For create_workspace: repo is
 * the organisation ("" = the agent's default), title the workspace's name
 * (fulfil_workspace_name), text the description or NULL, target
 * "workspace:<org or <default>>/<name>" (a label for the decision log: the
 * workspace module sends to github:<org>:<repo>:create-repo itself). */
struct fulfil_plan {
	enum fulfil_type type;
	struct plan_draft draft; /* create_plan: the plan (modules/plan) */
	bool has_draft;
	enum conv_platform platform;
	char target[FULFIL_TARGET_MAX]; /* the outbound target key */
	char repo[FULFIL_REPO_MAX];     /* "owner/repo" ("" for Bluesky) */
	char title[FULFIL_TARGET_MAX];  /* a new issue's title (plan: "[PLAN] …") */
	char *text;                     /* the body / the post */
	cJSON *extra;                   /* {"title":…,"labels":[…]} for a new issue */
};

/* Builds the send of commitment e (§2.7). -1 with d (FAIL, rule
 * "commitment_params") naming what is missing — that is a failed attempt.
 * The issue body ends with the provenance line for e->source; the key
 * marker is added by outbound/the port, never here. */
int fulfil_prepare(const struct ledger_entry *e, struct fulfil_plan *out, struct decision *d);
void fulfil_plan_free(struct fulfil_plan *p);
/* create_plan in a workspace repository (PLAN_DOCS_REPO_PREFIX): the
 * required documentation tasks prepended (§3.5, plan_draft_add_docs; the
 * dependencies of the tasks shifted renumbered) for the files the
 * repository lacks, and the text written again. The number prepended (d
 * says which, EDIT), 0 when none, -1 with d on failure. */
int fulfil_plan_docs(struct fulfil_plan *p, bool has_agents, bool has_scenarios,
                     struct decision *d);

/* The human summary: params title, description, body, text or content
 * (the first non-empty), cut at FULFIL_DESC_MAX bytes on a UTF-8 boundary. */
void fulfil_description(const struct ledger_entry *e, char *out, size_t cap);
/* "Done — <description>: <url>" (§2.8), or without ": <url>". */
void fulfil_announcement(const char *description, const char *url, char *out, size_t cap);
/* A create_workspace whose organisation had one: "The workspace
 * <owner/name> already exists: <url>". */
void fulfil_workspace_exists(const char *full_name, const char *url, char *out, size_t cap);

/* --- work that already exists -------------------------------------------- */

/* An issue with this title is already the one promised: the same words
 * once case, punctuation and spacing are set aside, or, for titles of at
 * least FULFIL_SAME_MIN_WORDS words, at least FULFIL_SAME_WORDS_PCT % of
 * their words shared (Jaccard). Pure. */
#define FULFIL_SAME_MIN_WORDS 3
#define FULFIL_SAME_WORDS_PCT 80
#define FULFIL_SAME_RECENT_MS (24LL * 60 * 60 * 1000)
bool fulfil_same_title(const char *a, const char *b);

/* --- reading outbound's final decision ----------------------------------- */

enum fulfil_outcome {
	FULFIL_OUT_SENT,    /* made: completed */
	FULFIL_OUT_ALREADY, /* the journal says it was made before: completed */
	FULFIL_OUT_UNKNOWN, /* it may have been made: a failed attempt, reconciled before any retry
	                     */
	FULFIL_OUT_DEFER,   /* not attempted (unresolved intent, shutdown): try later, no attempt */
	FULFIL_OUT_FAILED,  /* refused: a failed attempt */
};
enum fulfil_outcome fulfil_outcome_of(const struct decision *final);

#endif
