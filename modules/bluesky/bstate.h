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
 *                       runs. Kept across versions (a version bump must not
 *                       re-answer old notifications nor re-post a ritual).
 *   "discovered_peers"  the peers: handle, DID, GitHub name, followed,
 *                       announced. MIGRATED across versions (§3.1): an
 *                       upgrade never repeats an announcement. Entries
 *                       from the reference's shape ({peers: {key: {
 *                       githubUsername, blueskyHandle, followedOnBluesky,
 *                       announcedOnBluesky, ...}}}) are read too.
 *
 * Bounds (what happens at the limit):
 *   BSKY_PROCESSED_MAX processed URIs (kept as 128-bit SHA-256 prefixes; the
 *     oldest is forgotten — it is older than the cursor by then in practice,
 *     and the outbound journal still refuses a second reply);
 *   BSKY_CONVS_MAX conversations (a concluded or stale one first, else the
 *     least recently active, is dropped);
 *   BSKY_PEERS_MAX peers (a new one is refused when full, logged by the
 *     caller); SELF_MAX_RITUALS rituals with BSKY_RITUAL_HISTORY_MAX runs each
 *     (the oldest run dropped).
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
