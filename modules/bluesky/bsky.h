/*
 * bsky — the agent's life on Bluesky (runtime-bluesky.md §6, §7.1, §7.3,
 * §7.4): it reads its notifications and answers like a person, and leaves
 * conversations well. The rules are policy.h's; the memory is bstate.h's;
 * this engine (bsky.c and its bsky_*.c files, bsky_int.h) is the wiring on
 * the loop.
 *
 * Every notification walks the message pipeline (pipeline.h) as its
 * Bluesky source: event → gate → the source's gate → [claim] → compose →
 * validator → outbound → record. Nothing is posted around it: replies
 * leave through the pipeline's outbound stage, likes, follows, prunes and
 * identity posts through outbound_submit / pipeline_say, so the send
 * permissions, the audit, the journal, dedup and pacing see every side
 * effect.
 *
 * Awareness check (job "bluesky-awareness", 45 s ± 12 %; §6.1, §11.8):
 *   1. listNotifications, newest first, paging with the cursor (at most
 *      BSKY_MAX_PAGES pages of 50) back to the persisted cursor
 *      (seen_until_ms);
 *   2. likes, follows, reposts and our own posts are handled at once;
 *      replies, mentions and quotes are ordered (the owner's first, then
 *      §6.2's priority) and at most BSKY_MAX_INFLIGHT of them walk at once
 *      — the rest wait for the next check, they are not skipped;
 *   3. for each: the thread (getPostThread, depth 1) — its parent chain (the
 *      branch) gives the depth, the chain derived from the agents' posts on
 *      it (ours, known peers', any carrying the gaChain field) and the
 *      circular detection; the chain is max(carried gaChain, derived); its
 *      direct replies tell whether we answered this post already and
 *      whether a known peer did in the last 30 s (§6.8 steps 2 and 6); what
 *      outbound's journal knows of our reply to it counts as well (made: it
 *      is ours under the post, whatever the AppView shows yet; sent without
 *      an answer: nothing is said until the platform was asked). The
 *      branch's posts and a reply of ours join the conversation store (so
 *      our replies are counted there, each once, however learnt), then
 *      pipeline_event();
 *   4. the source's gate (after the shared one): already replied (BLOCK,
 *      already_replied) → a reply whose fate is unknown (BLOCK,
 *      reply_unresolved, asked again at the next check) → shouldRespondTo
 *      (§6.4) → the conversation state (SELF.md Social Mechanics, our
 *      replies from the store) → circular → rituals → a peer's reply within
 *      30 s (a like, rule peer_replied; not on the owner's posts). REACT is
 *      a like;
 *   5. compose (the model with the bluesky-reply skill and the
 *      bluesky_reply / graceful_exit tools) → the output self-check →
 *      per-type pacing → the replies under the post read again (both
 *      checks once more: the model took its time; unreadable → the reply
 *      goes on) → §6.12's promise extraction → pipeline_reply() with the
 *      reply refs (reply_extra). A like instead of a reply (closing, emoji,
 *      limit, circular, peer replied, self-check, graceful exit) is
 *      pipeline_react(): the like is made through outbound on the walk;
 *   6. a notification is HANDLED when the pipeline tells how its walk
 *      ended (the source's done() hook, after the record stage; a SENT
 *      final is the reply or the like): it joins the processed set, the
 *      cursor advances over every handled notification, and the state
 *      file is written (atomically) — so a crash loses none (not yet
 *      recorded → handled again; the journal then refuses a second reply
 *      to the same post: key "reply:<uri>") and answers none twice. A send
 *      that failed at the platform, or that outbound's journal held back,
 *      is asked again at the next check, at most BSKY_MAX_ATTEMPTS times.
 *
 * Owner (OWNER_BLUESKY_SOCIAL_HANDLE_DID): author kind OWNER in the event,
 * so the gate lets it past the budgets (never past "self" and "paused");
 * first in every batch; never stopped by conversation limits; the model's
 * token budget is asked with owner=true.
 *
 * Feed hygiene (job "bluesky-feed": at start, then every 15 min; §6.10):
 * one getAuthorFeed of our own feed serves the identity post check (posted
 * once, remembered by URI: not re-posted when it scrolls out, §11.11), the
 * expression schedule (measured from our last top-level post) and pruning
 * (policy.h's plan). A deletion goes through outbound (target
 * "bluesky:delete", text the record's URI, key "prune:<uri>": permission,
 * audit, journal intent → done, reconciled after a crash by asking whether
 * the record still exists), at most BSKY_PRUNE_PER_RUN per run; a refusal
 * is a decision with outbound's rule and reason on "bluesky:feed". Our
 * identity post and any record whose outbound intent is still unresolved
 * are never deleted.
 *
 * Peers (§7.4): @handles in our notifications are registered; a handle
 * becomes a peer SOUL only when its identity post (🔗—) is found in its
 * feed; then it is followed (through outbound: target
 * "bluesky:follow:<did>", key "follow:<did>"; a refusal is a decision on
 * "bluesky:peers" and the follow is asked again on a later run) and
 * announced once, in the agent's voice (voice-phrases.json
 * bluesky.peer_announcement; the built-in phrase without one) (state
 * "discovered_peers", migrated across versions). Job "bluesky-peers"
 * (every 3 min), its own loop so it runs in social-only mode and without a
 * workspace.
 *
 * Rituals (§7.3; job "bluesky-rituals", first after 10 min then 30 min):
 * initiator rituals due today (policy.h bsky_ritual_due, one local clock,
 * persisted dedup) are posted with the ritual-initiation skill; a reply in
 * a recognised ritual thread gets the ritual context and the role
 * SHA-256(agent name + root URI) % 3.
 *
 * Expression (§7.1; job "bluesky-expression", every 5 min): when due (3–4 h
 * after our last top-level post, not in quiet hours, under the daily cap),
 * the model writes one post with the expression skill (bluesky_post forced)
 * from one SELF.md item. Its invitation is classified (policy.h
 * bsky_invitation_classify): strong → on; weak or none → the model is
 * asked ONCE to revise (decision "invitation_revise", "Revising post —
 * adding stronger invitation", with a random choice / bounded / direct
 * example); a revision still not strong is discarded (REJECT rule
 * "invitation", next try in an hour). It goes out through pipeline_say_ctx
 * with our recent posts as the validator's echo window, then outbound.
 * Without the skill nothing is posted (one decision says so).
 *
 * Commitments (§6.12): a composed reply whose words promise
 * (cmt_extract_wanted) is read by the extraction prompt (no tools,
 * CMT_EXTRACT_MAX_TOKENS, temperature 0; cmt_extract_parse keeps high /
 * medium) BEFORE it is sent; each is checked by bsky_commitment_params.
 * The reply then goes on its walk with n_commitments in the validator's
 * context (its empty_promise check knows whether the promise is backed);
 * once it is SENT, each commitment is added to the ledger (source
 * "bluesky", params with sourceThreadUri/Cid and sourceRootUri/Cid), each
 * in its own story ("commitment:<id>"). Without a valid one the validator
 * refuses the unbacked promise.
 *
 * Reply refs: every reply of a walk gets them from the source's
 * reply_extra hook (root and parent: the post answered) as
 * outbound_send.extra.
 *
 * Bounds: BSKY_MAX_INFLIGHT notifications in flight, BSKY_BATCH_MAX
 * notifications per check, BSKY_THREAD_MAX posts of a parent chain,
 * BSKY_LIKES_MAX likes waiting for their pacing, plus bstate.h's.
 *
 * Lifetime: bsky_new, then bsky_port_init (the outbound port with the post
 * pacing), bsky_start; bsky_quiesce stops the jobs and takes no new work;
 * bsky_free after the outbound closed.
 */
#ifndef GA_MODULES_BLUESKY_BSKY_H
#define GA_MODULES_BLUESKY_BSKY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"
#include "modules/bluesky/bstate.h"
#include "modules/bluesky/policy.h"
#include "modules/outbound/outbound.h"

#define BSKY_AWARENESS_MS      45000
#define BSKY_FEED_MS           (15 * 60 * 1000)
#define BSKY_EXPRESSION_MS     (5 * 60 * 1000)
#define BSKY_PEERS_MS          (3 * 60 * 1000)
#define BSKY_PEER_RESCAN_MS    (10 * 60 * 1000)
#define BSKY_RITUAL_FIRST_MS   (10 * 60 * 1000)
#define BSKY_RITUAL_MS         (30 * 60 * 1000)
#define BSKY_RITUAL_EARLIEST_H 9
#define BSKY_MAX_PAGES         4
#define BSKY_PAGE_LIMIT        50
#define BSKY_BATCH_MAX         (BSKY_MAX_PAGES * BSKY_PAGE_LIMIT)
#define BSKY_MAX_INFLIGHT      8
#define BSKY_MAX_ATTEMPTS      3
#define BSKY_THREAD_MAX        32
#define BSKY_LIKES_MAX         32
#define BSKY_COMPOSE_ROUNDS    2 /* the reply (or the exit), then the final word */
#define BSKY_FEED_LIMIT        50
#define BSKY_RECENT_POSTS      20
#define BSKY_REPLY_SKILL       "bluesky-reply"
#define BSKY_EXPRESSION_SKILL  "expression"
#define BSKY_RITUAL_SKILL      "ritual-initiation"

struct atp_client;
struct budget;
struct journal;
struct ledger;
struct llm_client;
struct pipeline;
struct sched;
struct self_doc;
struct skills;
struct state_store;

struct bsky_config {
	uv_loop_t *loop;
	struct atp_client *atp;    /* borrowed; required */
	struct pipeline *pipeline; /* borrowed; required */
	struct outbound *outbound; /* borrowed; required (likes) */
	struct journal *journal;   /* borrowed; NULL: pruning deletes nothing */
	struct ledger *ledger;     /* borrowed; NULL: promises are recorded, not kept */
	struct llm_client *llm;    /* NULL: nothing is composed (recorded) */
	struct budget *budget;     /* may be NULL */
	const struct skills *skills;
	const struct self_doc *self; /* the pointer stays across SIGHUP */
	const char *soul_text;
	const char *self_path;
	/* voice-phrases.json (the peer announcement's text, hot-reloaded);
	 * NULL: beside self_path, where reflection writes it; neither: the
	 * built-in phrases */
	const char *voice_path;
	const struct state_store *st; /* NULL: nothing persisted (tests) */
	struct sched *sched;          /* NULL: no jobs (tests call bsky_check_now) */
	const char *agent_name;
	const char *owner_did;       /* may be NULL */
	const char *owner_handle;    /* may be NULL */
	const char *github_username; /* NULL: no identity post */
	bool social_only;
	/* tunables; 0 = the defaults above */
	uint64_t awareness_ms;
	uint64_t feed_ms;
	uint64_t expression_ms;
	uint64_t peers_ms;
	uint64_t ritual_ms; /* also the first delay */
	int64_t pace_ms;    /* > 0: every per-type pacing gap is this (tests) */
};

struct bsky;

/* Copies the strings. NULL with err naming what is missing. */
struct bsky *bsky_new(const struct bsky_config *c, struct ga_err *err);
/* The outbound port to add for CONV_PLATFORM_BLUESKY: inner (atp_port_init's,
 * port.h) wrapped so a post counts for the engine's post pacing. */
void bsky_port_init(struct bsky *b, struct outbound_port *out, const struct outbound_port *inner);
/* Loads the state, adds the pipeline source (gate, compose, reply_target,
 * react, done, reply_extra, sent_id), logs in and starts the jobs once the
 * session is there. 0, or -1 with err. */
int bsky_start(struct bsky *b, struct ga_err *err);
/* Runs an awareness check now (tests, `--once`); false when one is running. */
bool bsky_check_now(struct bsky *b);
/* Says text in a thread the agent knows, as a reply (a plan that came from
 * Bluesky, announced where it was asked for): thread is the post that
 * asked or the thread's root ("at://…"), or the conversation key
 * ("bluesky:at://…"); policy_thread.h picks the post answered — the asking
 * person's latest post in the thread — and cuts the text to
 * BSKY_POST_MAX_GRAPHEMES with its links whole. The post answered is read
 * with getPosts (its CID and its root's), then the reply walks the
 * pipeline (validator, outbound: permission bluesky:reply:<did>, audit,
 * journal key "say:<key>": said once, across a crash and a restart too;
 * source names the sender in the audit, NULL "bluesky").
 * 0: on its way, or said already under key (what becomes of it is a
 * decision on the thread's story); -1 with the reason logged (a decision)
 * when the thread is unknown, nobody but us posted in it, the text does
 * not fit, the key is empty or too long, BSKY_SAYS_MAX replies are on their
 * way, or the engine is shutting down. */
int bsky_thread_say(struct bsky *b, const char *source, const char *thread, const char *text,
                    const char *key);
void bsky_quiesce(struct bsky *b);
void bsky_free(struct bsky *b);
/* {session, did, handle, lastCheck, handled, inFlight, cursor, rate{…},
 * conversations, peers} — caller frees. */
cJSON *bsky_status(struct bsky *b);

#endif
