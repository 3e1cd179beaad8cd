/*
 * validator — post-generation checks every outgoing message passes
 * (spec space-validation.md §9, §10; DESIGN "the path every message walks").
 *
 * validator_validate(candidate, context) is pure: no I/O, no clock, no
 * globals beyond the echo detector's read-only tables. It returns a
 * decision {verdict, rule, reason}:
 *
 *   accept  send the candidate as is;
 *   reject  do not send; `rule` names the check, `salvage` says whether the
 *           caller may still enqueue the commitments (§11.1);
 *   trim    send decision.text instead (discussion-mode auto-trim, check 1b);
 *   refer   the echo ensemble is undecided (the borderline band of §9.1 check
 *           6) and a judge is configured: ask it (validator_refer) and finish
 *           with validator_resume. Without a judge the ensemble decides and
 *           refer never happens: the band is then rejected as an echo
 *           (rule semantic_echo) — when unsure, silence.
 *
 * Checks, in the spec's order; the first rejection wins (§9):
 *   0  precondition: empty / invalid UTF-8 / larger than
 *      VALIDATOR_INPUT_MAX_BYTES (like the §8.2 schema gate, before all)
 *   1  too_long            1b trim (discussion, no commitments)
 *   1c own_instructions (ctx->own set): quotes or restates the agent's own
 *      prompt, skills or tool descriptions (echo_own.h); salvages
 *      commitments — the words are what must not reach the room
 *   2  list                3  empty_promise (no commitments)
 *   4  echo_opener (what follows restates, or nothing follows; without a
 *      window the opener alone)
 *   5  semantic_echo (ensemble; no commitments)
 *   6  semantic_echo_judge (refer; no commitments)
 *   7  role_budget (≥ 1 peer; no commitments)
 *   8  deference (action)  9  repo_amnesia (action, repo known)
 *   10 meta_discussion (action, no commitments)
 *   11 scope_inflation (action, no commitments)
 *   12 non_owner_action (action, pending request, not owner; never salvages)
 *   13 saturated (no commitments)
 *   14 observer_silence (no commitments)
 * From §16: phrases match after normalisation (’ = '), the named false
 * positives are excused (see validator_phrases.def), later checks inspect
 * the trimmed text (§16.10), an unterminated last sentence is kept by the
 * trim, indented bullets are lists.
 *
 * One validator serves the agent-space, Bluesky replies and GitHub comments:
 * validator_limits_for() gives each platform's length unit, maximum and list
 * policy. The echo window is the conversation's recent messages
 * (echo_window, see echo.h), owned by the caller.
 *
 * Memory: a decision owns `text` (trim only); validator_decision_clear()
 * frees it. Everything else in a decision is inline or static.
 */
#ifndef GA_MODULES_VALIDATOR_VALIDATOR_H
#define GA_MODULES_VALIDATOR_VALIDATOR_H

#include <stdbool.h>
#include <stddef.h>

#include "modules/validator/echo.h"
#include "modules/validator/echo_own.h"

/* Candidates larger than this are rejected as too long without being read:
 * bounds the work one message can cause. */
#define VALIDATOR_INPUT_MAX_BYTES (1024 * 1024)
#define VALIDATOR_REASON_MAX      256

/* §9.1 check 1 limits (UTF-16 units, as TypeScript peers count them). */
#define VALIDATOR_SPACE_MAX_UNITS       50000
#define VALIDATOR_SPACE_MAX_SENTENCES   1000
#define VALIDATOR_BLUESKY_MAX_GRAPHEMES 300
#define VALIDATOR_GITHUB_MAX_CHARS      65536

enum validator_platform {
	VALIDATOR_PLATFORM_SPACE,
	VALIDATOR_PLATFORM_BLUESKY,
	VALIDATOR_PLATFORM_GITHUB,
};

enum validator_unit {
	VALIDATOR_UNIT_UTF16,      /* JS .length, the agent-space */
	VALIDATOR_UNIT_GRAPHEMES,  /* Bluesky's 300 */
	VALIDATOR_UNIT_CODEPOINTS, /* GitHub's 65536 characters */
};

struct validator_limits {
	size_t max_len; /* in `unit` */
	enum validator_unit unit;
	size_t max_sentences;
	bool allow_lists; /* GitHub markdown may have lists; chat may not */
};

enum validator_mode { VALIDATOR_MODE_DISCUSSION, VALIDATOR_MODE_ACTION };
enum validator_role { VALIDATOR_ROLE_ACTOR, VALIDATOR_ROLE_REVIEWER, VALIDATOR_ROLE_OBSERVER };

enum validator_verdict {
	VALIDATOR_ACCEPT,
	VALIDATOR_REJECT,
	VALIDATOR_TRIM,
	VALIDATOR_REFER,
};

/* The model judge (§10.6), asynchronous. ask() must call done exactly once,
 * now or later; verdict 1 = echo, 0 = not echo, -1 = error (treated as not
 * echo: the judge fails open). candidate and window are valid only during
 * ask(): copy what you keep. */
struct validator_judge {
	void (*ask)(void *ud, const char *candidate, const char *const *window, size_t n,
	            void (*done)(void *done_ud, int verdict, const char *reason), void *done_ud);
	void *ud;
};

struct validator_context {
	enum validator_platform platform;
	const struct validator_limits *limits; /* NULL → validator_limits_for(platform) */
	enum validator_mode mode;
	enum validator_role role;
	bool is_action_owner;
	/* The host's pending (unfulfilled) action request, NULL if none. */
	const char *pending_request;
	/* owner/repo detected in the conversation, NULL if none (check 9). */
	const char *detected_repo;
	/* Recent messages of this conversation; NULL skips the echo checks. */
	const struct echo_window *window;
	/* Agents connected to the room, self included (N of §7); ≤ 1 = alone. */
	size_t connected_agents;
	/* Agent messages since the host last spoke (§7). */
	size_t agent_msgs_since_host;
	/* Own messages in the current host turn (§5.3, budget per turn §16.1). */
	size_t own_msgs;
	/* Valid commitments carried by the decision (§8.3). */
	size_t n_commitments;
	const struct validator_judge *judge; /* NULL → the ensemble decides */
	const struct echo_params *echo;      /* NULL → production thresholds */
	/* The agent's own instructions (its skill's prompt and rules, tool
	 * descriptions: echo_own_new); NULL skips check 1c. Borrowed. */
	const struct echo_own *own;
	/* The room's members by name (the agents present, people), beside
	 * the window's authors; NULL/0: the authors only. Borrowed. */
	const char *const *members;
	size_t n_members;
};

struct validator_decision {
	enum validator_verdict verdict;
	const char *rule; /* static: "ok", "too_long", ... (validator.h list) */
	char reason[VALIDATOR_REASON_MAX];
	char *text;    /* trim (and refer after a trim): the text to send; owned */
	bool salvage;  /* §11.1: commitments may still be enqueued */
	int resume_at; /* refer: next check for validator_resume */
	bool echo_ran; /* echo scores below are meaningful */
	struct echo_result echo;
	size_t length;    /* check 1: length in the limit's unit */
	size_t sentences; /* check 1: sentence count */
};

const struct validator_limits *validator_limits_for(enum validator_platform p);
const char *validator_verdict_name(enum validator_verdict v);
const char *validator_platform_name(enum validator_platform p);
const char *validator_mode_name(enum validator_mode m);
const char *validator_role_name(enum validator_role r);

/* Runs the checks. d is overwritten (call validator_decision_clear on a
 * reused decision first). Returns d->verdict. */
enum validator_verdict validator_validate(const char *candidate,
                                          const struct validator_context *ctx,
                                          struct validator_decision *d);

/* For a refer decision: hands the candidate and the pairwise window to
 * ctx->judge. done fires once with the judge's verdict. Returns -1 (and
 * calls nothing) if there is no judge. */
int validator_refer(const struct validator_context *ctx, const char *candidate,
                    void (*done)(void *done_ud, int verdict, const char *reason), void *done_ud);

/* Finishes a refer decision once the judge answered: verdict 1 rejects
 * (semantic_echo_judge); 0 or -1 continues with the checks after 6 against
 * ctx as it is now (the conversation may have moved on: fresher is right).
 * d must be the refer decision; it is updated in place. */
enum validator_verdict validator_resume(const char *candidate, const struct validator_context *ctx,
                                        int verdict, const char *judge_reason,
                                        struct validator_decision *d);

void validator_decision_clear(struct validator_decision *d);

/* The validator's outcome as the one decision of every stage
 * (modules/decisions): accept → APPROVE, trim → EDIT, reject → REJECT,
 * refer → REJECT (a borderline candidate with no judge to ask), with the
 * validator's rule and reason. */
struct decision;
void validator_to_decision(const struct validator_decision *vd, struct decision *out);

/* §9.1 check 1 measurements, exposed for tests and the CLI. */
size_t validator_count_sentences(const char *s, size_t len);
size_t validator_measure(const char *s, size_t len, enum validator_unit unit);

#endif
