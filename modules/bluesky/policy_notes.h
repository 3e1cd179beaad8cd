/*
 * policy_notes — the pure rules of notifications and replies (bsky_notes.c;
 * runtime-bluesky.md §6; seed 004 "Conversation Management", "Graceful
 * Exit"): which posts deserve an answer, in what order, the chain of an
 * incoming post, circular threads, a thread's conversation state (Social
 * Mechanics), the replies already under a post, a ritual thread's role and
 * the commitments a reply promises.
 *
 * Pure functions of their arguments (policy.h's rules). Bounds:
 * BSKY_CONV_MAX_PARTICIPANTS participants per conversation (the least
 * recently active is replaced), at most BSKY_CIRCULAR_WINDOW posts looked
 * at by the circular detector.
 */
#ifndef GA_MODULES_BLUESKY_POLICY_NOTES_H
#define GA_MODULES_BLUESKY_POLICY_NOTES_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules/decisions/decision.h"
#include "modules/identity/self.h"

#define BSKY_SHORT_TEXT_BYTES          15  /* §6.4 rule 4: "shorter than 15 chars" */
#define BSKY_CLOSING_GRATITUDE_MAX     200 /* §6.5: gratitude-only under 200 chars */
#define BSKY_CLOSING_SUBSTANTIVE_BYTES 120 /* §6.5 C: longer = substantive */
#define BSKY_CIRCULAR_WINDOW           4   /* §6.7: the last 4 posts */
#define BSKY_CONV_MAX_PARTICIPANTS     8
#define BSKY_QUICK_ACK_MS              (5LL * 60 * 1000) /* §6.6 rapid back-and-forth */
#define BSKY_QUICK_ACKS_TO_CONCLUDE    2
#define BSKY_CASUAL_REENGAGEMENTS      1
#define BSKY_STALE_AFTER_MS            (7LL * 24 * 60 * 60 * 1000)
/* Project-thread mechanics (§2.3: not SELF-configurable). */
#define BSKY_PROJECT_MAX_REPLIES    10
#define BSKY_PROJECT_MAX_DEPTH      50
#define BSKY_PROJECT_SILENCE_MS     (4LL * 60 * 60 * 1000)
#define BSKY_PROJECT_NO_RESPONSE_MS (8LL * 60 * 60 * 1000)

/* ---- incoming posts ---------------------------------------------------------- */

enum bsky_reason {
	BSKY_REASON_MENTION,
	BSKY_REASON_REPLY,
	BSKY_REASON_QUOTE,
	BSKY_REASON_LIKE,
	BSKY_REASON_REPOST,
	BSKY_REASON_FOLLOW,
	BSKY_REASON_OTHER,
};
/* "mention", "reply", ... → the enum (unknown → BSKY_REASON_OTHER). */
enum bsky_reason bsky_reason_parse(const char *s);
/* The enum → its name ("other" for BSKY_REASON_OTHER). */
const char *bsky_reason_name(enum bsky_reason r);

/* §6.5 with the C fixes above. NULL is not a closing. */
bool bsky_is_low_value_closing(const char *text);

/* Only emoji (and whitespace / joiners / variation selectors); at least one
 * emoji. Digits, '#' and '*' are not emoji here. */
bool bsky_is_emoji_only(const char *text);

/* §6.4 rule 4's short acknowledgements ("thanks!", "lol", "💯💯"): whole
 * text, case-insensitive, trailing '!' / '.' ignored. */
bool bsky_is_short_ack(const char *text);

enum bsky_response {
	BSKY_RESPOND, /* hand it to the model */
	BSKY_LIKE,    /* a warm, invisible exit: like it, conclude (for this author) */
	BSKY_SKIP,    /* nothing to do (a like, a follow, an empty post) */
};

/* §6.4 shouldRespondTo, first match wins. d gets PASS / REACT / BLOCK with
 * the rule ("owner", "acknowledgment_only", "empty", "emoji_reaction",
 * "low_value_ack", "closing", "question", "direct", "quote", "long",
 * "borderline"). */
enum bsky_response bsky_should_respond(enum bsky_reason reason, bool from_owner, const char *text,
                                       struct decision *d);

/* §6.2 priority (ordering only). */
struct bsky_prio_facts {
	enum bsky_reason reason;
	bool to_our_content; /* replies to / quotes one of our posts */
	bool from_owner;
	bool known;          /* we have a relationship record */
	bool positive;       /* ... with positive sentiment */
	int interactions;    /* ... count */
	bool ever_responded; /* ... we ever answered them */
	bool unread;
};
int bsky_priority(const struct bsky_prio_facts *f);

/* ---- relationships (runtime-bluesky.md "Relationship" records) ---------------- */

enum bsky_sentiment {
	BSKY_SENTIMENT_UNKNOWN, /* where every person starts */
	BSKY_SENTIMENT_NEUTRAL,
	BSKY_SENTIMENT_POSITIVE,
};
/* "unknown" / "neutral" / "positive"; parse: -1 for anything else. */
const char *bsky_sentiment_name(enum bsky_sentiment s);
int bsky_sentiment_parse(const char *s);

/* The spec's rule over the last (at most 10) interactions, types[0..n):
 * 3 or more likes/reposts/follows → positive; 1 or 2 → neutral; none →
 * prev unchanged. (The spec's "≥1 → neutral" is read as ≥1 of the same
 * kinds: a person who only replies keeps what they had.) */
enum bsky_sentiment bsky_sentiment_of(const enum bsky_reason *types, size_t n,
                                      enum bsky_sentiment prev);

#define BSKY_REL_IDLE_MS      (60LL * 24 * 3600 * 1000) /* 60 days */
#define BSKY_REL_IDLE_LONG_MS (90LL * 24 * 3600 * 1000) /* positive or >= 5 */
/* Is a relationship idle long enough to forget? Idle (now - last) strictly
 * more than 60 days, or more than 90 when positive or with 5 or more
 * interactions in all. */
bool bsky_rel_expired(int64_t last_ms, bool positive, uint32_t interactions, int64_t now_ms);

/* ---- chain (seed 000) -------------------------------------------------------- */

/* The chain of an incoming post: a person's post (not an agent) is 0; an
 * agent's is max(1, carried, derived) — carried = the chain field of its
 * record (-1 none), derived = consecutive agent posts ending with it in
 * the thread's parent chain (-1 unknown). */
int64_t bsky_chain_in(bool is_agent, int64_t carried, int64_t derived);

/* Counts the agent posts at the end of a parent chain (root first, the
 * post itself last): is_agent[i] for each post. */
int64_t bsky_derived_chain(const bool *is_agent, size_t n);

/* ---- circular conversations (§6.7) ---------------------------------------- */

enum bsky_circular { BSKY_CIRC_NONE, BSKY_CIRC_LOW, BSKY_CIRC_MEDIUM, BSKY_CIRC_HIGH };
struct bsky_thread_post {
	const char *author; /* DID */
	const char *text;
};
/* posts: the parent chain root→newest; only the last BSKY_CIRCULAR_WINDOW
 * are looked at; fewer than that → NONE. Medium and high are hard blocks:
 * the caller concludes the conversation with a like and records why
 * (§11.27). */
enum bsky_circular bsky_circular_level(const struct bsky_thread_post *posts, size_t n);
const char *bsky_circular_name(enum bsky_circular c);

/* ---- conversations (§6.6) ------------------------------------------------- */

enum bsky_conv_state {
	BSKY_CONV_NEW,
	BSKY_CONV_ACTIVE,
	BSKY_CONV_AWAITING,
	BSKY_CONV_CONCLUDED,
	BSKY_CONV_STALE,
};
const char *bsky_conv_state_name(enum bsky_conv_state s);
int bsky_conv_state_parse(const char *s); /* -1 unknown */

struct bsky_participant {
	char did[128];
	int replies;
	int64_t last_ms;
	bool concluded; /* this participant closed with us (§11.28) */
};

/* One thread, keyed by its root at-uri (kept by the caller). A value. */
struct bsky_conv {
	enum bsky_conv_state state;
	bool project; /* project mechanics apply */
	/* our replies in this round: our messages in the conversation store
	 * (bsky_conv_sync_replies) since the last re-engagement */
	int our_replies;
	int replies_base; /* the store's count when this round began */
	int stored;       /* the store's count at the last sync */
	int64_t our_last_reply_ms;
	int depth;      /* deepest depth seen (root = 0) */
	int quick_acks; /* their low-value answers within BSKY_QUICK_ACK_MS of ours, in a row */
	int reengagements;
	int64_t first_seen_ms;
	int64_t last_activity_ms; /* anyone's */
	int64_t concluded_ms;
	char concluded_reason[96];
	bool concluded_by_timeout; /* no-response: a late answer reopens it freely */
	struct bsky_participant who[BSKY_CONV_MAX_PARTICIPANTS];
	size_t nwho;
};

void bsky_conv_init(struct bsky_conv *c, int64_t now_ms);
/* A post by someone else arrived (author DID, depth in the thread, whether
 * it is a low-value acknowledgement). */
void bsky_conv_note_incoming(struct bsky_conv *c, const char *author, int depth, bool low_value,
                             int64_t now_ms);
/* We replied. */
void bsky_conv_note_our_reply(struct bsky_conv *c, int depth, int64_t now_ms);
/* Our messages in the thread as the conversation store counts them (each
 * reply once, however it was learnt: the record, a thread read, a reply
 * found under a post after a crash): our_replies becomes at least the
 * count since this round began. */
void bsky_conv_sync_replies(struct bsky_conv *c, int stored);
/* We ended it (like, graceful exit, self-check). author (may be NULL):
 * only this participant closed — the thread stays open for the others while
 * someone else in it is still active. */
void bsky_conv_conclude(struct bsky_conv *c, const char *author, const char *reason,
                        int64_t now_ms);

/* The mechanics that apply: SELF.md's, or the project values. */
void bsky_conv_mechanics(const struct bsky_conv *c, const struct self_mechanics *self,
                         struct self_mechanics *out);

/* Should we answer a new post by `author` (after bsky_conv_note_incoming)?
 *   PASS   rule "conversation"          answer;
 *   PASS   rule "reengage"              concluded, but a genuine new post
 *                                        reopens it (casual once, project
 *                                        always, owner always; a timeout
 *                                        conclusion reopens freely);
 *   PASS   rule "owner"                 the owner, whatever the limits
 *                                        (reason names the limit passed);
 *   REACT  rule "replies_per_thread"    our replies ≥ max: end with a like;
 *   REACT  rule "thread_depth"          depth ≥ max: end with a like;
 *   REACT  rule "back_and_forth"        ≥ 2 quick acks from them;
 *   BLOCK  rule "concluded"             concluded and no re-engagement left.
 * Returns true for PASS. Does not change c (the caller applies
 * bsky_conv_reengage when it acts on "reengage"). */
bool bsky_conv_should_respond(const struct bsky_conv *c, const char *author, bool from_owner,
                              bool genuine, const struct self_mechanics *self, int64_t now_ms,
                              struct decision *d);
void bsky_conv_reengage(struct bsky_conv *c, bool counted);

/* The periodic sweep (§6.6 silence / no-response, evaluated when nobody
 * is talking — never against a post that just arrived):
 *   awaiting, our last reply older than no_response → concluded quietly
 *     (concluded_by_timeout: a late answer reopens it);
 *   active, everybody else silent longer than silence → concluded quietly;
 *   any non-concluded thread idle past BSKY_STALE_AFTER_MS → stale.
 * Returns true when the state changed (d says why). */
bool bsky_conv_sweep(struct bsky_conv *c, const struct self_mechanics *self, int64_t now_ms,
                     struct decision *d);

/* The output self-check (§6.8 step 4): our candidate reply is a low-value
 * closing and we already replied here once → convert it to a like. */
bool bsky_self_check_to_like(const struct bsky_conv *c, const char *text);

/* ---- the replies already under a post (§6.8 steps 2 and 6, §6.14) ------------- */

/* A known peer's direct reply this recent (either side of now: the peer's
 * AppView clock may run ahead) means the peer answered: a like instead. */
#define BSKY_PEER_REPLY_WINDOW_MS (30LL * 1000)

/* What the direct replies to the post we are about to answer say (from
 * getPostThread depth 1), reduced by the caller. */
struct bsky_reply_facts {
	const char *own_reply_uri; /* a direct reply of ours, or NULL / "" */
	const char *peer_handle;   /* the known peer whose direct reply is newest, or NULL */
	int64_t peer_reply_ms;     /* its indexedAt (epoch ms) */
};
enum bsky_reply_check { BSKY_REPLY_GO, BSKY_REPLY_ALREADY, BSKY_REPLY_PEER_LIKE };
/* First match wins:
 *   a reply of ours is there        → ALREADY (BLOCK, rule already_replied):
 *                                     never a second reply to one post;
 *   a known peer replied within
 *   BSKY_PEER_REPLY_WINDOW_MS, not
 *   the owner's post                → PEER_LIKE (REACT, rule peer_replied):
 *                                     like it, do not repeat the peer (the
 *                                     owner asked us: answered anyway);
 *   else                            → GO (PASS, rule thread_replies). */
enum bsky_reply_check bsky_reply_check(const struct bsky_reply_facts *f, bool from_owner,
                                       int64_t now_ms, struct decision *d);

/* ---- rituals (§7.3) ------------------------------------------------------------ */

enum bsky_ritual_role { BSKY_ROLE_ANALYST, BSKY_ROLE_CRITIC, BSKY_ROLE_OBSERVER };
/* SHA-256(agent_name + thread_uri): first 8 hex digits as an unsigned
 * integer, mod 3. */
enum bsky_ritual_role bsky_ritual_role(const char *agent_name, const char *thread_uri);
const char *bsky_ritual_role_name(enum bsky_ritual_role r);
/* ---- commitments from our replies (§6.12) ------------------------------------------ */

#define BSKY_POST_MAX_GRAPHEMES 300
/* A promise the extraction found in one of our sent replies (borrowed). */
struct bsky_promise {
	const char *type; /* create_issue, create_plan, comment_issue, post_bluesky */
	const char *repo; /* "owner/name" or NULL */
	const char *title;
	const char *description;
	const char *content;
	int64_t issue_number; /* 0: none */
};
/* The post we replied to (the promise's thread) and its root. */
struct bsky_promise_source {
	const char *uri, *cid;
	const char *root_uri, *root_cid; /* NULL or "": the post is the root */
};
/* The ledger params of a promise, or NULL with d REJECT and the rule:
 *   "commitment_source"   the post has no at:// URI or no CID;
 *   "commitment_type"     not one of the four types;
 *   "social_only"         a GitHub type in social-only mode (§11.13);
 *   "commitment_no_repo"  a GitHub type without owner/name (it could never
 *                         be fulfilled: Bluesky has no workspace repo);
 *   "commitment_no_issue" comment_issue without an issue number;
 *   "commitment_empty"    no title, description or content;
 *   "commitment_too_long" post_bluesky over BSKY_POST_MAX_GRAPHEMES (§11.10).
 * Params (caller frees): owner + repo for GitHub types; create_issue title,
 * body; create_plan title, goal, context, tasks []; comment_issue
 * issue_number, body; post_bluesky text; always sourceThreadUri/Cid (the
 * post we replied to: the follow-up reply goes under it) and
 * sourceRootUri/Cid. PASS rule "commitment" otherwise. */
cJSON *bsky_commitment_params(const struct bsky_promise *p, const struct bsky_promise_source *src,
                              bool social_only, struct decision *d);

#endif
