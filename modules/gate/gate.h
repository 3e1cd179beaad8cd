/*
 * gate — loop prevention: may stop a message before any model call
 * (DESIGN.md "The gate"; seeds 000, 001, 003).
 *
 * gate_check() is a pure function of (state, input, now, config): no I/O, no
 * clock, no globals, and it never changes the state. What changes over time
 * (windows, counters, duplicate memory) lives in struct gate_state and is
 * changed only by the gate_note_* functions. The caller's order for each
 * incoming event:
 *
 *     gate_check(st, &in, now, &cfg, &r);      the event itself counts as +1
 *     gate_note_incoming(st, ev, now);          whatever the verdict
 *     ... compose, validate, send ...
 *     gate_note_reply(st, conv, peer_id, now);  only when a reply was sent
 *
 * Noting blocked events too is deliberate: a flood is a flood, and a peer
 * that keeps sending while cooling down keeps its cooldown going.
 *
 * Rules, in this order; the decision names its rule ("rule" strings below):
 *
 *  1 "self"          author kind SELF, or author_id == cfg->self_id: BLOCK.
 *    "history"       a replayed history event (ev->from_history): CONTEXT.
 *  2 "paused"        the kill switch is on: BLOCK — except the owner's
 *                    /resume and /status (gate_is_owner_control):
 *    "owner_control" PASS.
 *  3 "chain_length"  seed 000. A person's message (owner, host, human, not
 *                    is_bot) has chain 0. An agent's message (kind PEER, or
 *                    is_bot) has the chain max(1, ev->chain, derived_chain):
 *                    at least 1 because it answers something; the carried
 *                    marker and the history both count and the larger wins,
 *                    so a peer that omits or rewrites its marker cannot reset
 *                    the chain. chain > max_acl: BLOCK (not even a reaction);
 *                    == max_acl: REACT; == max_acl - 1: PASS, courtesy=true
 *                    (the reply carries GATE_COURTESY_NOTICE). chain_out =
 *                    chain_in + 1. The owner's message is chain 0 and never
 *                    stopped here (a reply to the owner is no agent chain);
 *                    it still gets courtesy when max_acl is 1.
 *                    REACT does not end the walk: a later rule that says
 *                    CONTEXT or BLOCK wins (a reaction to a message not
 *                    addressed to us, or during a flood, is still speaking),
 *                    and a REACT needs no claim.
 *  4 "response_only" seed 003. An agent's message is a trigger only when it
 *                    addresses us (ev->addressed_me, our name or id among
 *                    ev->addressed — case-insensitive, a leading '@'
 *                    ignored — or in->replies_to_us); otherwise CONTEXT.
 *                    Skipped when in->platform_decides (the platform's own
 *                    gate reads the whole thread for it).
 *  5 budgets, in this order:
 *    "banlist"             author_id or author_name in cfg->banlist
 *                          (case-insensitive): BLOCK;
 *    "duplicate_payload"   an agent sent the same text (whitespace collapsed,
 *                          NFKC case-folded) in the same conversation within
 *                          duplicate_window_ms: BLOCK. Agents only: people
 *                          repeat themselves legitimately ("yes", "thanks",
 *                          asking again); a person's flood is the budgets' job;
 *    "bot_chain"           seed 003's MAX_BOT_CHAIN_LENGTH: agent messages in
 *                          a row in this conversation (theirs and our
 *                          replies) before this one, the run broken by a
 *                          person's message or by a gap of bot_chain_quiet_ms;
 *                          an agent's message when that count >= max_bot_chain:
 *                          BLOCK;
 *    "conversation_budget" more than max_events incoming events in the
 *                          conversation within window_ms (this one counted):
 *                          BLOCK; and BLOCK until cooldown_ms after the last
 *                          event that exceeded it;
 *    "pair_budget"         the same for the pair (us, author): the author's
 *                          events in every conversation plus our replies to
 *                          the author (both directions);
 *    "social_mechanics"    SELF.md thresholds where the caller sets them (0 =
 *                          off; only on the platforms of mechanics_platforms
 *                          when that is not 0): in->our_replies (our messages
 *                          in the conversation store: each reply counted once,
 *                          however it was learnt) >= max_replies_per_conversation,
 *                          or the event's thread_depth > max_thread_depth:
 *                          REACT (we have said enough here; a like is still
 *                          fine).
 *    Persons (host, human) meet banlist, the budgets and social mechanics;
 *    bot_chain and duplicate_payload concern agents.
 *  6 "claim"         an agent's message that passed everything: PASS with
 *                    claim_needed; the caller claims claim_key
 *                    ("respond:<message id>") for claim_ttl_ms through the
 *                    coordination backend and stands down if another agent
 *                    holds it.
 *    "pass"          everything else that got this far: PASS.
 *  The owner bypasses 4-6, never 1-2. "invalid" (BLOCK) when in or in->ev is
 *  NULL.
 *
 * "Within" is strict everywhere: an event exactly window_ms old is out of the
 * window; a cooldown ends exactly cooldown_ms after the event that started
 * it. Limits <= 0 in struct gate_config switch that check off (max_acl
 * excepted: 0 is a valid MAX_ACL). Time is the caller's epoch ms; it should
 * not go backwards (an entry from the future counts as inside any window).
 *
 * Bounds (memory is bounded whatever the input; the least useful is dropped):
 *   GATE_MAX_CONVERSATIONS conversations and GATE_MAX_PAIRS peers — the one
 *     noted least recently is dropped whole when a new one arrives;
 *   per conversation / pair, the last GATE_RATE_SLOTS event times and the
 *     last GATE_RATE_SLOTS times of the current run of agent messages (rings
 *     that grow from 4 slots only as needed). A max_events or max_bot_chain
 *     above GATE_RATE_SLOTS is treated as GATE_RATE_SLOTS (the config's
 *     documented range should stay below it); a cooldown whose exceeding
 *     event has more than GATE_RATE_SLOTS - max_events events after it is
 *     judged on what is still in the ring (may end early, never late);
 *   GATE_DUP_SLOTS duplicate-payload digests — the oldest is overwritten.
 *   Keys and texts are kept only as 128-bit SHA-256 prefixes. Worst case
 *   about 3.2 MiB (every ring full), a few KiB when idle.
 *
 * Ownership: gate_state_new() returns a state the caller frees with
 * gate_state_free() (NULL is fine). gate_check() borrows everything; struct
 * gate_result is a value (no pointers into the input).
 */
#ifndef GA_MODULES_GATE_GATE_H
#define GA_MODULES_GATE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules/conversation/event.h"
#include "modules/decisions/decision.h"

#define GATE_COURTESY_NOTICE                                                                       \
	"For your information only. Replies to this message will not be processed."

#define GATE_MAX_CONVERSATIONS   1024
#define GATE_MAX_PAIRS           1024
#define GATE_RATE_SLOTS          128
#define GATE_DUP_SLOTS           512
#define GATE_CLAIM_TTL_MS        60000
#define GATE_BOT_CHAIN_QUIET_MS  (5 * 60 * 1000)
#define GATE_DUPLICATE_WINDOW_MS (5 * 60 * 1000)
#define GATE_CLAIM_KEY_MAX       200

struct gate_config {
	int max_acl;                 /* MAX_ACL, default 4 */
	int max_events;              /* per window, default 20 */
	int64_t window_ms;           /* default 60000 */
	int64_t cooldown_ms;         /* default 60000 */
	int max_bot_chain;           /* MAX_BOT_CHAIN_LENGTH, default 5 */
	int64_t bot_chain_quiet_ms;  /* the bot chain run breaks after this much quiet: 5 min */
	int64_t duplicate_window_ms; /* same payload, same author, same conversation: 5 min */
	const char *const *banlist;  /* author ids / names refused (case-insensitive);
	                                NULL-terminated, or NULL for none */
	/* Social Mechanics (SELF.md) where they apply; 0 = off (the default) */
	int max_replies_per_conversation;
	int max_thread_depth;
	/* Where those apply: bits (1u << enum conv_platform); 0 = on every
	 * platform. An agent's gate applies them to GitHub only
	 * (modules/gate/policy.h says why). */
	unsigned mechanics_platforms;
	const char *self_id;   /* our author id (may be NULL) */
	const char *self_name; /* our display name (may be NULL) */
};

/* The defaults above (config.h's CONFIG_DEFAULT_* values); self_id,
 * self_name and banlist NULL, social mechanics off. */
void gate_config_defaults(struct gate_config *c);

struct gate_state;
struct gate_state *gate_state_new(void);
void gate_state_free(struct gate_state *s);

struct gate_input {
	const struct conv_event *ev;
	/* The chain of THIS message by history: consecutive agent messages since
	 * the last person's, this one included. With the event already in the
	 * store: conv_store_derived_chain(store, conv, ev->message_id); not yet
	 * in it: conv_store_derived_chain(store, conv, NULL) + 1 for an agent's
	 * message. -1: unknown. */
	int64_t derived_chain;
	bool replies_to_us;  /* ev->parent_id is a message of ours */
	bool paused;         /* the kill switch */
	int thread_depth;    /* the event's; -1 unknown */
	int64_t our_replies; /* our messages in the conversation (the store); -1 unknown */
	/* the platform decides which messages are triggers from the whole
	 * thread (GitHub's reply decision): rule 4 is left to it */
	bool platform_decides;
};

struct gate_result {
	struct decision d; /* verdict PASS / BLOCK / REACT / CONTEXT, rule, reason */
	bool courtesy;     /* the reply must carry GATE_COURTESY_NOTICE */
	int64_t chain_in;  /* the effective incoming chain */
	int64_t chain_out; /* the chain our reply carries: chain_in + 1 */
	bool claim_needed; /* rule 6: claim claim_key before answering */
	/* "respond:<message id>"; an id that does not fit, or none:
	 * "respond:sha256:<hex>" (the same for every agent that sees it) */
	char claim_key[GATE_CLAIM_KEY_MAX];
	int64_t claim_ttl_ms; /* GATE_CLAIM_TTL_MS when claim_needed, else 0 */
};

void gate_check(const struct gate_state *st, const struct gate_input *in, int64_t now_ms,
                const struct gate_config *cfg, struct gate_result *out);

/* Records that an event arrived: the conversation's and the author's (pair)
 * windows, the run of agent messages (a person's message ends it), and the
 * duplicate memory (agents' texts). Ignores NULL, our own events (kind SELF:
 * our messages are counted once, by gate_note_reply) and history replays
 * (they happened before; counting them on a reconnect would fire the
 * budgets). */
void gate_note_incoming(struct gate_state *st, const struct conv_event *ev, int64_t now_ms);

/* Records that we replied in conversation (to peer_id, or NULL): the pair
 * window in our direction and the run of agent messages (our reply is
 * one). Our replies per conversation are counted from the store
 * (gate_input.our_replies). */
void gate_note_reply(struct gate_state *st, const char *conversation, const char *peer_id,
                     int64_t now_ms);

/* "/resume" or "/status", surrounding whitespace ignored, any case: what a
 * paused agent still answers from its owner. */
bool gate_is_owner_control(const char *text, size_t len);

/* The rule names, in order, comma-separated (for documentation and help). */
const char *gate_rule_names(void);

/* What the state holds (for tests and `status`). */
struct gate_stats {
	size_t conversations; /* <= GATE_MAX_CONVERSATIONS */
	size_t pairs;         /* <= GATE_MAX_PAIRS */
	size_t duplicates;    /* <= GATE_DUP_SLOTS */
	size_t bytes;         /* heap bytes the state owns */
};
void gate_state_stats(const struct gate_state *s, struct gate_stats *out);

#endif
