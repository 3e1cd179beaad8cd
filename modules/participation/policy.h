/*
 * policy — who acts on a host request and how much each agent may say
 * (space-validation.md §4, §5, §6.2, §7). Pure functions of their inputs.
 *
 * Action ownership (§4): every agent in the room computes, for the host's
 * latest action request, SHA-256(name ‖ key) for each eligible agent, where
 * key = the first 100 UTF-16 units of the request (what ts-general-agent
 * peers hash, so mixed rooms agree), and the lowest hex digest owns
 * the action. Eligible = can do GitHub work: self unless social-only; a
 * peer that advertised no capability list, or one containing "github".
 * Nobody eligible → no owner ("none"): nobody falls back to acting.
 * The result depends only on the set of names, never on their order (the
 * peers are sorted by digest), so two agents agree on the owner.
 *
 * Roles (§5.1, §16.14) come from the same ranking as ownership, so a room
 * always has an actor and the owner is never an observer with a budget of
 * one message: the owner is the actor, the next agent in digest order the
 * reviewer, everyone else an observer (no owner: the first-ranked agent is
 * the actor, to say so). Roles exist only in action mode with a request and
 * at least one peer; otherwise actor. part_role_reference() computes the
 * independent per-agent role a ts-general-agent peer takes, for mixed-room
 * tests.
 *
 * Budgets (§5.3), observer threshold (§5.4), saturation (§7) and
 * escalation levels (§6.2) are the spec's tables, as functions.
 *
 * Bounds: at most PART_MEMBERS_MAX peers are considered — the room's own
 * bound (SPC_MAX_MEMBERS), so every agent ranks the same set; a list
 * longer than that has its extra entries ignored and the decision says so
 * (agents could then disagree). Names longer than PART_NAME_MAX - 1 bytes
 * are ignored as peers (the room refuses them anyway).
 */
#ifndef GA_MODULES_PARTICIPATION_POLICY_H
#define GA_MODULES_PARTICIPATION_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules/decisions/decision.h"

#define PART_MEMBERS_MAX     256
#define PART_NAME_MAX        128
#define PART_OWNER_KEY_UNITS 100 /* §4 step 4 */
#define PART_ROLE_KEY_UNITS  50  /* §5.1, the key of part_role_reference */
#define PART_REQUIRED_CAP    "github"

enum part_mode { PART_MODE_DISCUSSION, PART_MODE_ACTION };
enum part_role { PART_ROLE_ACTOR, PART_ROLE_REVIEWER, PART_ROLE_OBSERVER };
enum part_escalation { PART_ESC_NONE, PART_ESC_INFO, PART_ESC_CRITICAL };

/* A room member as presence describes it (borrowed). has_caps = false: it
 * sent no capability list (eligible, §4 step 2). */
struct part_member {
	const char *name;
	const char *const *caps;
	size_t ncaps;
	bool has_caps;
	bool typing; /* a `typing` mark of theirs is live (the prompt's typingAgents) */
};

struct part_ownership {
	bool computed;             /* false: no request or no peers (§4 defaults) */
	char owner[PART_NAME_MAX]; /* "" when none eligible */
	bool is_owner;
	size_t n_agents; /* self + distinct peers considered */
	size_t n_eligible;
	size_t rank; /* self's place in the digest ranking, 0-based */
	enum part_role role;
	char self_digest[17]; /* first 16 hex of self's digest, for the story */
};

/* The first `units` UTF-16 code units of UTF-8 s[0..len), as UTF-8; a
 * surrogate pair cut in half becomes U+FFFD, as Node encodes a lone
 * surrogate (§0). Invalid bytes count as one unit each and become U+FFFD.
 * Caller frees. Never NULL. */
char *part_utf16_prefix(const char *s, size_t len, size_t units);

/* Ownership and role for `self` among `peers` (self may appear among them;
 * duplicates count once). request = the tracked host action request (NULL:
 * none; a C string: a NUL inside it ends the key). mode = the conversation
 * mode (§3). why gets {INFO, rule, reason}:
 * rule "action_owner", "not_action_owner", "no_eligible_owner",
 * "no_request" or "alone". */
void part_ownership_compute(const char *self, bool self_social_only,
                            const struct part_member *peers, size_t npeers, const char *request,
                            enum part_mode mode, struct part_ownership *out, struct decision *why);

/* True when the member can take GitHub/code work (§4 step 2). */
bool part_member_eligible(const struct part_member *m);

/* The role a ts-general-agent peer takes (§5.1): SHA-256(self ‖ first 50
 * units) → first 8 hex as uint32 mod 3. For mixed-room tests only. */
enum part_role part_role_reference(const char *self, const char *request);

/* §5.3: actor 3 / reviewer 2 / observer 1 in action mode, ×2 in discussion. */
unsigned part_role_budget(enum part_role role, enum part_mode mode);
/* §5.4: 3 in action mode, 5 in discussion. */
unsigned part_observer_threshold(enum part_mode mode);
/* §7: T_sat = 4 + n_agents + (discussion ? 4 : 0); *warn = ceil(T_sat / 2). */
unsigned part_saturation_threshold(size_t n_agents, enum part_mode mode, unsigned *warn);
/* §6.2: cycles 0 → none, 1 → info, ≥ 2 → critical. */
enum part_escalation part_escalation_level(unsigned cycles);

/* §13.1: a job's interval with a fixed per-agent offset, so a room's agents
 * do not tick in lockstep: djb2 over the UTF-16 units of "<name>:<job>"
 * (h0 = 5381, h = h*33 + unit, int32),
 * n = ((|h| mod 2001) - 1000) / 1000 in [-1, 1], interval = base +
 * round(base * spread_pct/100 * n). The participation tick is
 * ("space-participation", 5000, 40): marvin 6834 ms; the commitment loop
 * ("commitment-fulfillment", 15000, 12): marvin 13209 ms. */
int64_t part_jittered_interval_ms(const char *name, const char *job, int64_t base_ms,
                                  unsigned spread_pct);

const char *part_mode_name(enum part_mode m);
const char *part_role_name(enum part_role r);
const char *part_escalation_name(enum part_escalation e);

#endif
