/*
 * reflection — the agent grows: EXPRESS → OBSERVE → INTEGRATE → EVOLVE
 * (seed 004 "How the SOUL Develops"; runtime-bluesky.md §7.2, §2.2–§2.4).
 *
 * OBSERVE: experiences (experience.h) and peer relationships (peers.h) are
 * fed from the decision log (reflection_observe, one call per record) and
 * from explicit calls (reflection_add_experience, reflection_peers).
 *
 * INTEGRATE (reflection_tick, called by the scheduler every
 * REFLECT_CHECK_MS): a cycle starts when reflect_due() says so —
 *   - never without a new experience: an idle agent spends nothing;
 *   - else when REFLECT_INTERVAL_MS passed since the last attempt (the
 *     time is persisted, so a restart does not reflect again at once), or
 *     REFLECT_EARLY_PENDING experiences wait and REFLECT_EARLY_MIN_GAP_MS
 *     passed;
 *   - and only within the daily token budget (budget_check; a refusal is
 *     logged and recorded in the decision log, rule daily_token_budget).
 * Before the call SOUL.md is checked against its pin (soul_check): a
 * changed SOUL stops reflection (logged, the owner told).
 * One model call: SOUL + SELF + the `reflection` skill, the experiences
 * grouped by type (owner guidance first) and what is remembered of peers;
 * the model must call self_update {self_md, summary, consistent_with_soul,
 * peers?}. reflect_check_output() (pure) decides what happens:
 *   REFLECT_CHANGED    SELF.md is written (history.h keeps the previous
 *                      version; atomic), re-parsed with the clamps of
 *                      modules/identity/self.h (each warning logged), the
 *                      experiences of the prompt marked integrated;
 *   REFLECT_UNCHANGED  the same text: nothing written, experiences
 *                      integrated;
 *   REFLECT_REFUSED    SOUL.md would be touched or contradicted — an
 *                      argument other than the four (e.g. "soul_md"), a
 *                      `# SOUL` heading in the new text, or the model's own
 *                      consistent_with_soul = false — or the text drops
 *                      every `##` section or shrinks by more than
 *                      REFLECT_MAX_SHRINK_PCT %: nothing written, logged
 *                      (WARN and a decision, rule "soul" or "shrink");
 *   REFLECT_GARBAGE    no self_update call, arguments that are not JSON,
 *                      self_md missing, blank or not UTF-8: nothing written,
 *                      logged, rule "garbage".
 * Refused and garbage cycles, and a SELF.md that could not be written,
 * leave the experiences pending (the next cycle,
 * REFLECT_INTERVAL_MS later, sees them again).
 *
 * EVOLVE (after REFLECT_CHANGED): voice-phrases.json is regenerated from
 * `## Voice` (voice.h; one call, no tools, within the budget; a failure
 * keeps the previous file); the room gets the 1–2 sentence summary
 * (opts.broadcast) and the identity again (opts.identity); opts.self_changed
 * tells the process to re-read SELF.md.
 *
 * SOUL.md is never written by this module; after a write its digest is
 * compared again and a change is logged as an error.
 *
 * State (modules/state "reflection"): last attempt, last change, last
 * summary and outcome, counts, tokens spent — for status and the schedule.
 *
 * Threads: everything on the caller's loop. Lifetime: reflection_free()
 * cancels a call in flight (its completion is not reported).
 */
#ifndef GA_MODULES_REFLECTION_REFLECTION_H
#define GA_MODULES_REFLECTION_REFLECTION_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/llm/llm.h"
#include "common/err.h"
#include "modules/budget/budget.h"
#include "modules/decisions/log.h"
#include "modules/reflection/experience.h"
#include "modules/reflection/peers.h"
#include "modules/reflection/voice.h"
#include "modules/skills/skills.h"
#include "modules/state/state.h"

#define REFLECT_INTERVAL_MS      (6LL * 60 * 60 * 1000)
#define REFLECT_CHECK_MS         (30LL * 60 * 1000)
#define REFLECT_EARLY_PENDING    10
#define REFLECT_EARLY_MIN_GAP_MS (60LL * 60 * 1000)
#define REFLECT_MAX_SHRINK_PCT   80
#define REFLECT_PROMPT_MAX       50  /* experiences in one prompt */
#define REFLECT_SUMMARY_MAX      600 /* bytes of the room summary */
#define REFLECT_SKILL            "reflection"
#define REFLECT_VOICE_SECTION    "Voice Phrases"
#define REFLECT_TOOL             "self_update"
#define REFLECT_STATE_NAME       "reflection"
#define REFLECT_VOICE_MAX_TOKENS 1000

/* ---- policy (pure) ----------------------------------------------------------- */

struct reflect_due_in {
	int64_t now_ms;
	int64_t last_attempt_ms; /* 0 = never */
	size_t pending;          /* experiences not integrated */
};
/* True when a cycle should start now; d says why (rule "reflection_due" /
 * "idle" / "interval"). */
bool reflect_due(const struct reflect_due_in *in, struct decision *d);

enum reflect_outcome {
	REFLECT_CHANGED,
	REFLECT_UNCHANGED,
	REFLECT_REFUSED,
	REFLECT_GARBAGE,
};
const char *reflect_outcome_name(enum reflect_outcome o);

struct reflect_result {
	enum reflect_outcome outcome;
	char *self_md; /* owned: the new SELF.md (CHANGED) */
	char *summary; /* owned: 1–2 sentences (CHANGED), "" otherwise */
	cJSON *peers;  /* owned: the peers notes, or NULL */
	struct decision why;
};
/* Decides on the model's answer (see the header). old_self: SELF.md as
 * sent. */
void reflect_check_output(const struct llm_response *resp, const char *old_self,
                          struct reflect_result *out);
void reflect_result_free(struct reflect_result *r);

/* The first two sentences of s, at most REFLECT_SUMMARY_MAX bytes (cut on
 * a UTF-8 boundary), white space collapsed. Caller frees. */
char *reflect_summary_cut(const char *s);

/* The user message: experiences grouped by type (owner guidance first),
 * what is remembered of peers, and how long the agent has been running.
 * ids (cap REFLECT_PROMPT_MAX) receive the ids of the experiences put in.
 * Caller frees. */
char *reflect_user_message(const struct exp_store *exps, const char *peers_text, int64_t running_ms,
                           const char **ids, size_t *n_ids);

/* The self_update tool definition. */
const struct llm_tool_def *reflect_tool(void);

/* ---- the running module ------------------------------------------------------ */

struct reflection_opts {
	uv_loop_t *loop;
	struct llm_client *llm;       /* borrowed; required */
	struct budget *budget;        /* borrowed; NULL = no budget */
	const struct skills *skills;  /* borrowed; must hold `reflection` */
	const struct state_store *st; /* borrowed; required */
	struct decision_log *dlog;    /* borrowed; may be NULL */
	const char *memory_dir;       /* copied */
	const char *self_path;        /* copied */
	const char *soul_path;        /* copied */
	const char *voice_path;       /* copied; NULL = <dir of self_path>/voice-phrases.json */
	/* The clock (tests, the bench); NULL = time_now_ms. */
	int64_t (*clock)(void *ud);
	/* After REFLECT_CHANGED: the room's `reflection` message (-1: not in a
	 * room), the identity again, and "re-read SELF.md". Each may be NULL. */
	int (*broadcast)(void *ud, const char *summary);
	int (*identity)(void *ud);
	void (*self_changed)(void *ud);
	/* Something the owner must know (SOUL changed). May be NULL. */
	void (*notify_owner)(void *ud, const char *text);
	void *ud;
};

struct reflection;

struct reflection *reflection_new(const struct reflection_opts *opts, struct ga_err *err);
void reflection_free(struct reflection *r);

/* A decision from the log (decision_log_fn shape, plus what the
 * conversation store knows of the message: may be NULL/-1). Records
 * experiences (experience.h's rule) and peer conversations. */
void reflection_observe(struct reflection *r, const struct exp_source *src);

/* An experience from a module that knows more (fulfilled commitment,
 * Bluesky). 1 added, 0 duplicate, -1 with err. */
int reflection_add_experience(struct reflection *r, const struct exp_in *in, struct ga_err *err);

/* Starts a cycle when due. done (may be NULL) is called once when the
 * cycle ends (also when none started: at once, before returning false).
 * Returns true when a cycle started. */
typedef void (*reflection_done_fn)(void *ud, enum reflect_outcome outcome, bool ran);
bool reflection_tick(struct reflection *r, reflection_done_fn done, void *ud);
bool reflection_running(const struct reflection *r);
/* Cancels the cycle in flight (the daemon is stopping): its done callback
 * is called at once with ran = true. Nothing is written after this. */
void reflection_cancel(struct reflection *r);

/* The stores (for other modules: prompts, phrases). Borrowed. */
struct peer_memory *reflection_peers(struct reflection *r);
struct voice *reflection_voice(struct reflection *r);
struct exp_store *reflection_experiences(struct reflection *r);
/* Saves the peers if they changed. */
void reflection_flush(struct reflection *r);

/* {"lastReflection", "lastChange", "lastOutcome", "lastSummary",
 *  "reflections", "changes", "experiencesPending", "tokensSpent",
 *  "running", "peers"}. Caller frees. */
cJSON *reflection_status(struct reflection *r);

#endif
