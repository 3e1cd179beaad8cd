/*
 * participation — what one agent does in the agent-space on one tick
 * (space-validation.md §1, §2–§7, §14; seed 004 "Agent Space", "Stale
 * Host Request Escalation", "Conversation Saturation"). The policy only:
 * pure functions of (state, members, new events, now). No I/O, no clock,
 * no model call. The wiring (the tick job, the composer, the send path)
 * feeds it and carries out what it decides.
 *
 * One tick (part_tick), in the spec's order with the §16 fixes:
 *   1. idle reset FIRST (§16.1): more than PART_IDLE_RESET_MS since the last
 *      activity wipes the conversation state before the batch is ingested
 *      (the batch refreshes the clock, so checking after it would never fire);
 *   2. ingest the batch into the rolling history (PART_HISTORY_MAX, oldest
 *      dropped). Who is the host is fixed when a message arrives (§16.13):
 *      the room's own host flag, else "not a present or previously seen
 *      agent", so an agent that leaves does not become a host afterwards.
 *      Replayed history is context, never a new request (§16.12). Peer
 *      claims after the request mark it fulfilled by a peer (§16.5);
 *   3. cooldown after speaking: nothing else happens, but the new messages
 *      are remembered so the next tick still answers them;
 *   4. no new messages and no open request → silent (spec step 5);
 *   5. classify host messages (§2.2; Layer 2 answers come from the intent
 *      cache, part_intent_learn), derive the tracked request, the
 *      follow-up and the mode (§3);
 *   6. ownership and role (§4, §5; policy.h);
 *   7. request bookkeeping and escalation (§6): a new request resets the
 *      counters; every tick while open counts a cycle (1 info, ≥ 2
 *      critical); a host follow-up boosts straight to critical and never
 *      changes the owner (§4.2/§16.4); a follow-up about a fulfilled
 *      request asks the owner to answer it; the same request repeated
 *      after fulfilment is a new request (§6.1);
 *   8. saturation and budgets (§5.3, §5.4, §7), budgets per host turn
 *      (§16.1: own messages since the host last spoke);
 *   9. verdict: call the model (PASS "compose") or stay silent (BLOCK with
 *      the rule that decided), and which §14 context pieces the prompt
 *      needs. A tick without new messages makes no model call
 *      ("escalation_only") but may find forced action due (§11.3 with the
 *      §16.8 cap).
 * The model is not asked when the validator could only reject what it
 * would say (§16.26: cost): saturated, observer past its threshold, budget
 * spent — unless this agent owns an open request (a commitment is still
 * wanted) — and a non-owner at critical escalation that was not addressed.
 * Nor, for PART_DECLINE_QUIET_MS after the model declined, on peers' words
 * alone (§16.26: cost): a host message ends the quiet, and what was said
 * meanwhile is answered after.
 *
 * Every choice comes with a struct decision {verdict, rule, reason}.
 *
 * Around the tick, for the wiring (all pure as well):
 *   part_intent_unknown / part_intent_learn   Layer 2 of §2.2 via the model;
 *   part_validator_context                    the tick's facts for §9;
 *   part_salvage, part_owner_retry_accept,
 *   part_forced_decision                      §11 when the decision is silent;
 *   part_note_sent / _fulfilled / _commitment_failed / _owner_declined /
 *   _forced                                   what the send path reports back;
 *   part_points_made, part_peer_commitments   data for two §14 pieces;
 *   part_jittered_interval_ms (policy.h)      the tick's period (§13.1).
 *
 * Bounds: history PART_HISTORY_MAX entries of at most PART_TEXT_MAX_BYTES
 * each (longer texts are cut on a UTF-8 boundary); the Layer-2 intent cache
 * PART_INTENT_CACHE_MAX entries (FIFO, keyed by SHA-256 of the text);
 * PART_MEMBERS_MAX remembered agent names (FIFO); at most PART_LAYER2_MAX
 * messages reported for Layer 2 per tick; request text ≤ PART_TEXT_MAX_BYTES.
 * A state is about 45 KiB plus its strings (≤ 31 × 16 KiB); a tick's
 * output about 3 KiB (seven decisions).
 *
 * Ownership: part_state_init / part_state_free; strings in a tick's output
 * are borrowed from the state or the input and valid until the next call
 * that changes the state.
 */
#ifndef GA_MODULES_PARTICIPATION_PARTICIPATION_H
#define GA_MODULES_PARTICIPATION_PARTICIPATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules/commitments/commitment.h"
#include "modules/decisions/decision.h"
#include "modules/participation/decision.h"
#include "modules/participation/intent.h"
#include "modules/participation/policy.h"

#define PART_HISTORY_MAX      30
#define PART_TEXT_MAX_BYTES   (16 * 1024)
#define PART_IDLE_RESET_MS    (5 * 60 * 1000)
#define PART_INTENT_CACHE_MAX 200
#define PART_LAYER2_MAX       4
#define PART_OWNER_RETRY_MAX  2 /* §11.2: retries while rejections ≤ 2 */
#define PART_FORCE_REJECTIONS 3 /* §11.3: or cycles ≥ 2 */
#define PART_FORCED_MAX       2 /* §16.8: forced issues per request, at most */
#define PART_REPO_MAX         202
#define PART_DECLINE_QUIET_MS 10000 /* §16.26: after a decline, no new call for this long */

/* How the adapter saw the author. UNKNOWN: decide by presence. */
enum part_author_kind { PART_AUTHOR_UNKNOWN, PART_AUTHOR_HOST, PART_AUTHOR_AGENT };

enum part_event_kind {
	PART_EV_CHAT,  /* a chat message */
	PART_EV_CLAIM, /* a peer claimed an action (space-protocol claim frame) */
};

struct part_event {
	enum part_event_kind kind;
	const char *author;
	const char *text; /* chat: the words; claim: the claimed target (may be NULL) */
	size_t len;
	int64_t time_ms;
	enum part_author_kind author_kind;
	/* §14.7 @mention routing. addressed_known: the adapter had the room's
	 * `addressed` list and set the two flags from it; otherwise a host
	 * message is searched for the agents' names (case-insensitive, whole
	 * words: "al" is not named in "also"). */
	bool addressed_known;
	bool addressed_me;     /* the host named this agent */
	bool addressed_others; /* ... named other agents but not this one */
	bool from_history;     /* replayed history: context only */
	/* a live chat the gate did not make a trigger (another agent's words
	 * to someone else): in the history as what was said, not a reason
	 * to speak */
	bool context;
	/* a trigger whose words an earlier tick already took in as context
	 * (its walk arrived later: a peer's claim settled meanwhile): new,
	 * but not appended to the history twice */
	bool noted;
};

struct part_tick_in {
	const char *self;
	bool social_only;
	const struct part_member *members; /* present agents; self may be listed */
	size_t nmembers;
	const struct part_event *events;
	size_t nevents;
	int64_t now_ms;
};

struct part_entry {
	char author[PART_NAME_MAX];
	char *text;
	size_t len;
	int64_t time_ms;
	uint64_t seq; /* monotonic over the state's life */
	bool self, host, live, addressed_me, addressed_others;
	int intent; /* enum part_intent, -1 = not settled (Layer 2 pending) */
	const char *intent_rule;
};

struct part_cache_entry {
	unsigned char key[32];
	int intent;
};

#define PART_DEFAULTED_MAX 8 /* members noted as having dropped the request */

struct part_state {
	struct part_entry hist[PART_HISTORY_MAX]; /* ring */
	size_t hist_start, hist_n;
	uint64_t next_seq;
	int64_t last_activity_ms;
	int64_t cooldown_until_ms;
	bool pending_new; /* new messages arrived during cooldown */

	/* §6 request state */
	char *req_content; /* NUL-terminated; may hold NULs (req_len counts them) */
	size_t req_len;
	uint64_t req_seq;
	int64_t req_at_ms;
	bool fulfilled;
	const char *fulfilled_by; /* static: "self", "peer_claim", "commitment", "idle" */
	unsigned cycles, owner_rejections, forced_attempts;
	uint64_t boosted_seq;     /* the follow-up already boosted */
	uint64_t claim_seq;       /* a peer's latest claim, as the seq the next entry gets */
	int64_t decline_until_ms; /* §16.26 */
	uint64_t decline_seq;     /* host messages from this seq on end the quiet */

	/* latest repository mentioned (github.com/o/n, or a bare o/n after
	 * "in", "to", "repo", …), "" none */
	char repo[PART_REPO_MAX];

	struct part_cache_entry cache[PART_INTENT_CACHE_MAX];
	size_t cache_n, cache_next;

	char known[PART_MEMBERS_MAX][PART_NAME_MAX]; /* agents seen present */
	size_t known_n, known_next;

	/* Members who claimed the open request and let the claim lapse with
	 * nothing reported done: not this request's owner any more (the
	 * ranking skips them). Cleared with the request; at the bound a
	 * further name is not noted. */
	char defaulted[PART_DEFAULTED_MAX][PART_NAME_MAX];
	size_t defaulted_n;
	/* The latest peers' claims as who and when (the seq the next entry
	 * got): a ring of PART_DEFAULTED_MAX, the oldest overwritten. */
	struct part_claimer {
		char name[PART_NAME_MAX];
		uint64_t seq;
	} claimers[PART_DEFAULTED_MAX];
	size_t claimers_next;

	uint64_t own_total; /* messages sent since init (story only) */
};

/* §14 context pieces for the decision prompt. */
enum part_context {
	PART_CTX_IDENTITY = 1u << 0,        /* SOUL/SELF of this agent */
	PART_CTX_PEER_IDENTITIES = 1u << 1, /* peers' identities and latest reflections */
	PART_CTX_WORKSPACES = 1u << 2,      /* peers' workspace states */
	PART_CTX_HISTORY = 1u << 3,         /* the rolling history */
	PART_CTX_OWN_MESSAGES = 1u << 4,
	PART_CTX_POINTS_MADE = 1u << 5,
	PART_CTX_PEER_COMMITS = 1u << 6, /* peers' promises in the history */
	PART_CTX_ECHO_CHAIN = 1u << 7,
	PART_CTX_COMMITMENTS = 1u << 8, /* own pending and recently completed */
	PART_CTX_CONFIG = 1u << 9,      /* runtime pacing */
	PART_CTX_TYPING = 1u << 10,
	PART_CTX_MODE = 1u << 11,
	PART_CTX_REPO = 1u << 12,      /* "USE THIS REPO" */
	PART_CTX_OWNERSHIP = 1u << 13, /* only with a request (§16.3) */
	PART_CTX_ESCALATION = 1u << 14,
	PART_CTX_ROLE = 1u << 15, /* reviewer / observer note */
	PART_CTX_SATURATION = 1u << 16,
	PART_CTX_ADDRESSED = 1u << 17, /* @mention routing note */
	PART_CTX_FOLLOW_UP = 1u << 18, /* the host asks about a request */
};
#define PART_CTX_COUNT 19

enum part_saturation {
	PART_SAT_NONE,
	PART_SAT_WARN,      /* agent messages ≥ T_warn */
	PART_SAT_CIRCLING,  /* I spoke ≥ 2 times since the host */
	PART_SAT_SATURATED, /* agent messages ≥ T_sat */
};

struct part_tick_out {
	struct decision verdict; /* PASS compose | BLOCK silent | INFO escalation only */
	bool call_model;         /* make the §8 decision call */
	bool has_new;
	bool idle_reset;
	bool force_action_due; /* §11.3 conditions but the repo (caller checks it) */
	bool social_only;      /* the tick's input: this agent runs --social-only */

	enum part_mode mode;
	struct part_ownership own; /* owner, is_owner, role, n_agents */
	const char *request;       /* the open or last request (state), NULL none */
	bool request_open;         /* !fulfilled */
	bool follow_up;            /* a new host follow-up this tick */
	const char *repo;          /* NULL none */
	enum part_escalation escalation;
	unsigned cycles;
	int64_t waiting_ms; /* now − request time while open */

	size_t agent_msgs_since_host, own_msgs_since_host;
	unsigned t_sat, t_warn, t_obs, budget;
	enum part_saturation saturation;
	bool addressed_me, addressed_others;

	unsigned context;                    /* enum part_context bits */
	const char *layer2[PART_LAYER2_MAX]; /* host texts Layer 1 found ambiguous */
	size_t nlayer2;

	struct decision why_idle, why_mode, why_owner, why_role, why_escalation, why_saturation,
	        why_budget;

	/* §11's fixed words in the agent's voice (voice-phrases.json
	 * space.on_it with {{type}}, space.creating); NULL or "" = the
	 * built-in PART_SALVAGE_MESSAGE / PART_FORCED_MESSAGE. Not set by
	 * part_tick: the caller fills them after it (no
	 * operational text hard-coded). */
	const char *salvage_lead;
	const char *forced_lead;
};

void part_state_init(struct part_state *st);
void part_state_free(struct part_state *st);

/* One tick; see the header comment. st changes; out is overwritten. */
void part_tick(struct part_state *st, const struct part_tick_in *in, struct part_tick_out *out);

/* The message this agent just sent (the send path, §12.1 step 5): joins the
 * history; speaking starts the cooldown until cooldown_until_ms (the caller
 * draws it from the runtime config). A later chat event with the same author
 * and text (the room echoing it back) is not added twice. */
void part_note_sent(struct part_state *st, const char *self, const char *text, size_t len,
                    int64_t now_ms, int64_t cooldown_until_ms);

/* A commitment for the open request was enqueued (§6.3 → fulfilled). */
void part_note_fulfilled(struct part_state *st, const char *how);
/* The commitment for the request failed for good (§6.3 → open again). The
 * forced-action cap still holds (§16.8), so no create/fail loop. */
void part_note_commitment_failed(struct part_state *st);

/* The request a peer's claim took is open again (the claim lapsed with
 * nothing done): not fulfilled, and the claims read so far take it no
 * more (§16.5's mark cleared). */
void part_request_reopen(struct part_state *st);
/* The model chose not to speak (§16.26): no new call on peers' words for
 * PART_DECLINE_QUIET_MS; a new host message ends that at once. */
void part_note_declined(struct part_state *st, int64_t now_ms);
/* The owner did not speak on a tick with new messages (§11.2): counts a
 * rejection; returns true when one retry call is still allowed. */
bool part_note_owner_declined(struct part_state *st);
/* name claimed the open request and let the claim lapse with nothing done:
 * the ownership ranking of this request skips it from now on. Returns
 * false when it was noted already, there is no request, or the list is
 * full. */
bool part_note_defaulted(struct part_state *st, const char *name);

/* Every peer that claimed something since the open request arrived (the
 * claims the tick has read) is noted with part_note_defaulted; returns how
 * many were noted now and lists them, comma-separated, in names (cut at
 * cap). 0 without an open or taken request. */
size_t part_note_claimers_defaulted(struct part_state *st, char *names, size_t cap);

/* A forced action was carried out (§11.3): counts against PART_FORCED_MAX. */
void part_note_forced(struct part_state *st);

/* Layer 2 answered for this text (§2.2): remembered until the idle reset
 * (FIFO beyond PART_INTENT_CACHE_MAX). Do not call for a failed or
 * unreadable answer (§16.15): the next tick asks again. */
void part_intent_learn(struct part_state *st, const char *text, size_t len,
                       enum part_intent intent);

/* Before a tick: the host messages among st's history and `events` that
 * Layer 1 finds ambiguous and the cache does not know (at most max,
 * newest first; borrowed pointers into st or events). No state change. */
size_t part_intent_unknown(const struct part_state *st, const struct part_tick_in *in,
                           const char **out, size_t max);

/* The history, oldest first: i < st->hist_n. */
const struct part_entry *part_history_at(const struct part_state *st, size_t i);

/* The tick's facts as the validator's context (modules/validator): platform
 * space, mode, role, is_action_owner, pending_request (only while open),
 * detected_repo, connected_agents, agent_msgs_since_host, own_msgs (this
 * host turn, §16.1) and n_commitments. limits, window, judge and echo are
 * left as they are (the caller owns the echo window). Pointers borrow
 * from t, valid as long as the tick's output is. */
struct validator_context;
void part_validator_context(const struct part_tick_out *t, size_t n_commitments,
                            struct validator_context *ctx);

/* --- §11: when the decision did not speak ------------------------------ */

#define PART_FORCED_MESSAGE     "Creating that now."
#define PART_SALVAGE_MESSAGE    "On it \xE2\x80\x94 {{type}} incoming."
#define PART_FORCED_TITLE_UNITS 120

/* The fixed words of §11 (salvage, the owner retry, forced action) name
 * the work: "<lead without its final period>: <the first
 * PART_WORDS_WHAT_CHARS characters of the first commitment's title, else
 * its description, first line, no markdown heading mark>." (a longer one
 * is cut at its last word boundary before the limit and ends in "…"
 * instead of the period) — lead alone
 * when there is neither. Without it the second "Creating that now." within
 * the outbound dedup window (300 s) was dropped as a duplicate and the
 * owner's commitment never reached the ledger (loop-sim: host requests
 * nobody took; with 80 characters, "… in acme/widgets (round 15)" lost its
 * round and was round 7's text again). Caller frees. */
#define PART_WORDS_WHAT_CHARS 120 /* a forced title fits (PART_FORCED_TITLE_UNITS) */
char *part_words_naming(const char *lead, const struct cmt_list *c);

/* §11.1 salvage. After validation (validator_ran: it ran on the words and
 * rejected them; validator_salvage: its salvage flag) or after a silent
 * decision (validator_ran false): when valid commitments remain, the words
 * become "On it — <type> incoming: <title>." (part_words_naming) and the
 * decision speaks. A silent decision's commitments are salvaged too
 * (§16.7) — except when another agent owns the open request (§16.16). For a
 * social-only agent (t->social_only) create_issue, create_plan and
 * comment_issue are removed from d first (seed 004 level 4). Returns true
 * when d was changed; why says what happened either way. */
bool part_salvage(struct part_decision *d, const struct part_tick_out *t, bool validator_ran,
                  bool validator_salvage, struct decision *why);

/* §4 action ownership, whatever the words (§9 check 12 only reads the
 * phrases, §16.16): when another agent owns the open request
 * (t->request_open, t->own.owner set, not us), create_issue, create_plan
 * and comment_issue are removed from c — before validation and before
 * anything reaches the ledger; post_bluesky stays. Returns how many were
 * removed; when > 0, why is a DROP with rule "action_owner" ("Ada owns the
 * request: …"), otherwise why is untouched. The words are then validated
 * without them (an empty promise is refused then, as it should be). */
size_t part_drop_foreign_commitments(struct cmt_list *c, const struct part_tick_out *t,
                                     struct decision *why);

/* --- claims (§12.1 step 4, claims.c) ------------------------------------ */

/* The claim keys of a commitment (modules/commitments/workkey.h: the
 * promise form "<repo>#<what, 50 UTF-16 units>" and the work form
 * "<what>"), repo = c->repo, else detected_repo, else "unknown"; what =
 * c->title, else c->description. part_claim_target writes the promise
 * form's target, cut at a character boundary to cap − 1 bytes (cap ≥
 * PART_CLAIM_TARGET_MAX never cuts). Returns the bytes written. */
struct commit_work;
void part_claim_work(const struct cmt_item *c, const char *detected_repo, struct commit_work *out);
#define PART_CLAIM_TARGET_CHARS 50
#define PART_CLAIM_TARGET_MAX   (PART_REPO_MAX + 1 + 4 * PART_CLAIM_TARGET_CHARS + 1)
#define PART_CLAIM_ACTION_MAX   32
#define PART_CLAIM_TTL_MS       60000 /* peers record a claim this long (§12.1) */
#define PART_PEER_CLAIMS_MAX    32
size_t part_claim_target(const struct cmt_item *c, const char *detected_repo, char *buf,
                         size_t cap);

/* The peers' live claims as the room relayed them, consulted before acting
 * (§16.5). Bounded: PART_PEER_CLAIMS_MAX,
 * the oldest goes first; a claim lives PART_CLAIM_TTL_MS after it was last
 * seen; the first claimant of action:target keeps it (the room answers a
 * later claimant "Claim conflict"), its own renewals extend it. */
struct part_peer_claim {
	char holder[PART_NAME_MAX];
	char action[PART_CLAIM_ACTION_MAX];
	char target[PART_CLAIM_TARGET_MAX];
	int64_t seen_ms;
};
struct part_peer_claims {
	struct part_peer_claim item[PART_PEER_CLAIMS_MAX];
	size_t n;
};
/* false (nothing kept) when a field is blank or longer than its bound (a
 * target that long can never be one of ours). */
bool part_peer_claims_note(struct part_peer_claims *t, const char *holder, const char *action,
                           const char *target, int64_t now_ms);
/* An action_result for it (the claim ends), or the holder left the room. */
void part_peer_claims_release(struct part_peer_claims *t, const char *action, const char *target);
void part_peer_claims_forget(struct part_peer_claims *t, const char *holder);
/* The holder of a live claim on action:target, else NULL (borrowed). */
const char *part_peer_claims_holder(const struct part_peer_claims *t, const char *action,
                                    const char *target, int64_t now_ms);

/* Beside §4 ownership, a second line of defence against a duplicate action:
 * every commitment whose claim target (part_claim_target with
 * detected_repo) another member holds — holder(ud, type name, target)
 * returns its name, NULL when nobody else does — is removed from c. Returns
 * how many; when > 0, why is a DROP with rule "claimed_by_peer" naming the
 * (first) holder and action:target; otherwise why is untouched. */
typedef const char *(*part_claim_holder_fn)(void *ud, const char *action, const char *target);
size_t part_drop_claimed_commitments(struct cmt_list *c, const char *detected_repo,
                                     part_claim_holder_fn holder, void *ud, struct decision *why);

/* §11.2–§11.3 after a silent outcome that salvage did not rescue: what
 * the owner does next. RETRY when this agent owns the open request, the
 * tick had new messages, no retry was made on this tick yet (`retried`),
 * and part_note_owner_declined() — called here, it counts the decline —
 * still allows one; else FORCE when cycles ≥ 2 or declines ≥
 * PART_FORCE_REJECTIONS and fewer than PART_FORCED_MAX forced actions were
 * made; else NONE. A social-only agent: always NONE (seed 004 levels 2,
 * 3). why says which and why. */
enum part_recovery { PART_RECOVER_NONE, PART_RECOVER_RETRY, PART_RECOVER_FORCE };
enum part_recovery part_recover_next(struct part_state *st, const struct part_tick_out *t,
                                     bool retried, struct decision *why);

/* Liveness beside §11: the host asked a question (discussion mode) and the
 * validator refused this agent's answer. When no agent has spoken since
 * the host's latest message (live, in the history) and this agent is the
 * first of the SHA-256 ranking over it (part_ownership_compute, as for a
 * request: one agent per question, the same for every agent), one more
 * decision call is due — once per host message (done_seq: the seq last
 * retried). Returns that message's seq (> 0) when due, else 0; why says
 * which (rule "discussion_retry" or "no_discussion_retry"). Without it a
 * room whose every candidate was refused left the host unanswered. */
uint64_t part_discussion_retry_due(const struct part_state *st, const struct part_tick_out *t,
                                   const char *self, bool social_only,
                                   const struct part_member *members, size_t nmembers,
                                   uint64_t done_seq, struct decision *why);

/* §11.2 the owner retry's answer, read with part_decision_from_json/_text
 * (so normalised and schema-checked, §16.6): accepted only with at least
 * one valid commitment; empty words, or the template's PART_FORCED_MESSAGE,
 * become part_words_naming(PART_FORCED_MESSAGE, …). 0 accepted,
 * -1 not. Ask for a retry only while part_note_owner_declined() says so. */
/* t (may be NULL) gives the voiced forced lead (forced_lead). */
int part_owner_retry_accept(struct part_decision *d, const struct part_tick_out *t,
                            struct decision *why);

/* §11.3 forced action: when t->force_action_due (or due, due_now: what
 * part_recover_next said after this tick's declines), the agent is not
 * social-only (seed 004 level 2) and a repository is known,
 * out becomes "Creating that now: <title>." with one create_issue {repo, title = the
 * request's first 120 UTF-16 units, description = body, or
 * part_forced_body() when body is NULL/blank}. -1 (why says which
 * condition failed) otherwise. Call part_note_forced() once it is sent. */
int part_forced_decision(const struct part_state *st, const struct part_tick_out *t, bool due_now,
                         const char *body, struct part_decision *out, struct decision *why);
/* The default forced issue body: the request as a heading, a line saying
 * where it came from, and the history as "name: text" lines. Caller frees. */
char *part_forced_body(const struct part_state *st);

/* §14.6 points made: the last PART_POINTS_MAX history entries, one line
 * each, "name: first PART_POINT_WORDS words without punctuation". */
#define PART_POINTS_MAX        15
#define PART_POINT_WORDS       10
#define PART_PEER_COMMIT_UNITS 120
char *part_points_made(const struct part_state *st);
/* §14.4 peers' promises: "name: \"first 120 UTF-16 units\"" for each peer
 * message in the history that promises work (never a host message,
 * §16.25). Both return a new string ("" when there is nothing; caller
 * frees); the prompt's wording lives in the skill, not here. */
char *part_peer_commitments(const struct part_state *st);

/* §14.10 peers: who the other agents say they are (the identity summary
 * of presence: voice, currentInterests, expertise, soulEssence), their
 * latest reflection, and the workspaces reported in the room. Strings are
 * borrowed; identity_json / reflection may be NULL. */
struct part_peer_note {
	const char *name;
	const char *identity_json;
	const char *reflection;
};
struct part_workspace_note {
	const char *workspace;
	const char *reporter;
	int64_t plan, total, completed, blocked, in_progress;
};
#define PART_PEERS_CONTEXT_MAX_BYTES 8192 /* past it: "(k more not shown)" */
#define PART_PEER_FIELD_MAX_BYTES    300  /* each field of a peer, cut here */
/* One line per peer other than self ("- Name — voice: …; interests: …;
 * expertise: …; essence: …; latest reflection: \"…\""), then one per
 * workspace ("- owner/repo: plan 4, 3 of 9 tasks done, 1 blocked, 2 in
 * progress (reported by Ada)"), under "Peers:" and "Workspaces:". An
 * identity that is not a JSON object is left out of that peer's line.
 * Returns "" when there is nothing; caller frees. */
char *part_peers_context(const char *self, const struct part_peer_note *peers, size_t n,
                         const struct part_workspace_note *ws, size_t nws);

const char *part_context_name(enum part_context bit);
const char *part_saturation_name(enum part_saturation s);

#endif
