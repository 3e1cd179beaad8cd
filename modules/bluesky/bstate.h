/*
 * bluesky state — what the agent remembers about Bluesky across restarts
 * (runtime-bluesky.md §3, §6.1, §7.3, §7.4; §11.8, §11.21, §11.23).
 *
 * Two state files (modules/state: versioned envelope, written atomically):
 *   "bluesky"           the notification cursor (seen_until_ms: every
 *                       notification indexed at or before it is handled),
 *                       the processed set (URIs handled out of order, newer
 *                       than the cursor), the conversations by root URI,
 *                       the identity post, expression timing, ritual
 *                       runs, the relationships (below). Kept across
 *                       versions (a version bump must not
 *                       re-answer old notifications nor re-post a ritual).
 *   "discovered_peers"  the peers: handle, DID, GitHub name, followed,
 *                       announced. MIGRATED across versions (§3.1): an
 *                       upgrade never repeats an announcement. Its shape
 *                       is {peers: {key: {githubUsername, blueskyHandle,
 *                       followedOnBluesky, announcedOnBluesky, ...}}},
 *                       keyed by the GitHub name, else the handle.
 *
 * Bounds (what happens at the limit):
 *   BSKY_PROCESSED_MAX processed URIs (kept as 128-bit SHA-256 prefixes; the
 *     oldest is forgotten — it is older than the cursor by then in practice,
 *     and the outbound journal still refuses a second reply);
 *   BSKY_CONVS_MAX conversations (a concluded or stale one first, else the
 *     least recently active, is dropped);
 *   BSKY_REL_MAX relationships (the least recently interacted one is
 *     dropped for a new person), each with its last BSKY_REL_RECENT
 *     interactions (the oldest dropped);
 *   BSKY_PEERS_MAX peers (a new one is refused when full, logged by the
 *     caller); SELF_MAX_RITUALS rituals with BSKY_RITUAL_HISTORY_MAX runs each
 *     (the oldest run dropped).
 *
 * Relationships (runtime-bluesky.md "Relationship" records, used by the §6.2
 * priority): one per person we got a notification from, KEYED BY DID (a
 * handle can change; the person and their history stay one); the handle is
 * kept as a field, updated to the newest seen. Each holds the last BSKY_REL_RECENT interactions
 * {type, uri, time = the notification's indexedAt, responded}, the interactions counted in all,
 * first seen, last interaction, sentiment (bsky_sentiment_of over the recent ones) and whether we
 * ever answered them. Pruned by bsky_state_prune_rels (policy bsky_rel_expired: idle > 60 days, >
 * 90 if positive or >= 5 interactions): the engine prunes right after loading and before every
 * save. A file without "relationships" (older) loads with none.
 *
 * Ownership: struct bsky_state is allocated by bsky_state_new and freed by
 * bsky_state_free (NULL ok). Pointers returned point into it and stay valid
 * until the next call that adds or drops an entry.
 */
#ifndef GA_MODULES_BLUESKY_BSTATE_H
#define GA_MODULES_BLUESKY_BSTATE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "modules/bluesky/policy.h"
#include "modules/identity/self.h"
#include "modules/state/state.h"

#define BSKY_STATE_NAME         "bluesky"
#define BSKY_PEERS_STATE_NAME   "discovered_peers"
#define BSKY_PROCESSED_MAX      512
#define BSKY_CONVS_MAX          256
#define BSKY_PEERS_MAX          128
#define BSKY_RITUAL_HISTORY_MAX 30
#define BSKY_URI_MAX            512
#define BSKY_HANDLE_MAX         254
#define BSKY_DID_MAX            256
#define BSKY_REL_MAX            512
#define BSKY_REL_RECENT         10

struct bsky_conv_entry {
	char root[BSKY_URI_MAX];
	struct bsky_conv c;
};

struct bsky_ritual_run {
	char date[11];
	char thread_uri[BSKY_URI_MAX];
};

struct bsky_ritual_state {
	char name[128];
	char last_initiated[11]; /* local date, "" never */
	char last_participated[11];
	char today_thread[BSKY_URI_MAX];
	struct bsky_ritual_run runs[BSKY_RITUAL_HISTORY_MAX];
	size_t nruns;
};

struct bsky_peer {
	char handle[BSKY_HANDLE_MAX];
	char did[BSKY_DID_MAX];
	char github[BSKY_GITHUB_NAME_MAX]; /* "" until the identity post is found */
	char via[16];                      /* owner_mention, thread, social, workspace */
	int64_t discovered_ms;
	int64_t verified_ms;
	bool followed;
	bool announced;
};

struct bsky_interaction {
	enum bsky_reason type; /* like, reply, mention, follow, repost, quote */
	char uri[BSKY_URI_MAX];
	int64_t at_ms;
	bool responded; /* our reply to it was sent */
};

struct bsky_rel {
	char did[BSKY_DID_MAX]; /* the key */
	char handle[BSKY_HANDLE_MAX];
	struct bsky_interaction recent[BSKY_REL_RECENT]; /* oldest first */
	size_t nrecent;
	uint32_t total; /* interactions counted in all */
	int64_t first_seen_ms;
	int64_t last_ms; /* the newest interaction */
	enum bsky_sentiment sentiment;
	bool responded; /* we ever answered them */
};

struct bsky_state {
	int64_t seen_until_ms;
	unsigned char processed[BSKY_PROCESSED_MAX][16];
	size_t nprocessed, processed_next;
	struct bsky_conv_entry *convs; /* BSKY_CONVS_MAX slots */
	size_t nconvs;
	char identity_uri[BSKY_URI_MAX];
	int64_t last_post_ms;       /* our newest top-level post */
	int64_t next_expression_ms; /* 0 = not scheduled */
	char expr_date[11];
	int expr_today;
	struct bsky_ritual_state rituals[SELF_MAX_RITUALS];
	size_t nrituals;
	struct bsky_peer peers[BSKY_PEERS_MAX];
	size_t npeers;
	uint64_t handled_total; /* notifications handled since the file began */
	struct bsky_rel *rels;  /* BSKY_REL_MAX slots */
	size_t nrels;
};

struct bsky_state *bsky_state_new(void);
void bsky_state_free(struct bsky_state *s);

/* Processed set. */
bool bsky_state_processed(const struct bsky_state *s, const char *uri);
void bsky_state_mark_processed(struct bsky_state *s, const char *uri);

/* The conversation of root (NULL when unknown / when add is false). A new
 * one is initialised at now_ms; at the limit one is dropped (see above). */
struct bsky_conv *bsky_state_conv(struct bsky_state *s, const char *root, bool add, int64_t now_ms);

/* The ritual entry for name (added when missing, NULL when full). */
struct bsky_ritual_state *bsky_state_ritual(struct bsky_state *s, const char *name);
/* Records an initiation or a participation on date. */
void bsky_state_ritual_run(struct bsky_ritual_state *r, const char *date, const char *thread,
                           bool initiated);
/* Is root a ritual thread (today's or one of the recorded runs)? The
 * ritual's name, or NULL. */
const char *bsky_state_ritual_thread(const struct bsky_state *s, const char *root);

/* Peers, by handle (case-insensitive) or DID. */
struct bsky_peer *bsky_state_peer(struct bsky_state *s, const char *handle, const char *did);
/* Adds a peer (or returns the existing one). NULL when full. */
struct bsky_peer *bsky_state_peer_add(struct bsky_state *s, const char *handle, const char *did,
                                      const char *via, int64_t now_ms);
/* True when did is a known peer SOUL (its identity post was found). */
bool bsky_state_is_peer(const struct bsky_state *s, const char *did);

/* The relationship of did (NULL when unknown or did is empty). */
struct bsky_rel *bsky_state_rel(struct bsky_state *s, const char *did);
/* Records an interaction of did (handle refreshed when given) of type at
 * at_ms with uri: the person is added when new (at the limit the least
 * recently interacted one is dropped), the interaction appended unless uri
 * is already among the recent ones (a notification seen again is not
 * counted twice), the sentiment recomputed. NULL when did is empty or too
 * long (nothing recorded). */
struct bsky_rel *bsky_state_rel_note(struct bsky_state *s, const char *did, const char *handle,
                                     enum bsky_reason type, const char *uri, int64_t at_ms);
/* Our reply to did's post uri was sent: the person is marked responded (and
 * the interaction, when still among the recent ones). False when did has no
 * record. */
bool bsky_state_rel_responded(struct bsky_state *s, const char *did, const char *uri);
/* Drops the expired relationships (bsky_rel_expired); returns how many. */
size_t bsky_state_prune_rels(struct bsky_state *s, int64_t now_ms);
/* The §6.2 relationship facts of did (known, positive, interactions,
 * ever_responded) into f; the rest of f is left as it is. */
void bsky_state_rel_facts(const struct bsky_state *s, const char *did, struct bsky_prio_facts *f);

/* JSON (the "data" of the two state files). */
cJSON *bsky_state_to_json(const struct bsky_state *s);
int bsky_state_from_json(struct bsky_state *s, const cJSON *data, struct ga_err *err);
cJSON *bsky_peers_to_json(const struct bsky_state *s);
int bsky_peers_from_json(struct bsky_state *s, const cJSON *data, struct ga_err *err);

/* Loads both files (missing → empty; another version → kept, the peers
 * migrated and re-saved); -1 only when st is NULL. info_* (may be NULL)
 * receive the load statuses. */
int bsky_state_load(struct bsky_state *s, const struct state_store *st,
                    struct state_load_info *info_main, struct state_load_info *info_peers);
int bsky_state_save(const struct bsky_state *s, const struct state_store *st, int64_t now_ms,
                    struct ga_err *err);

#endif
