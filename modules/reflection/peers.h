/*
 * peers — what the agent remembers of each peer agent it works with
 * (runtime-bluesky.md §7.4 "Relationship memory"; seed 004 "Peer
 * Relationship Memory").
 *
 * Per peer (key: the name lower-cased): conversations, issues co-created,
 * PRs reviewed, productive disagreements, agreements, the last interaction,
 * memorable exchanges (at most PEER_MEMORABLE_MAX, the newest kept) and
 * complementary strengths (at most PEER_STRENGTHS_MAX, newest kept, no
 * duplicates). Every field has a writer: conversations from the decision
 * log (a peer's live message after PEER_CONVERSATION_GAP_MS of quiet with
 * that peer starts a new one), issues co-created from commitments made in
 * a peer's conversation, the rest from reflection (the model names memorable
 * exchanges, strengths and disagreements it saw in the experiences) and
 * from explicit calls (the GitHub side: PRs reviewed).
 *
 * Persistence: the state file "peer_relationships" (modules/state,
 * atomic) holds {"format": PEERS_FORMAT, "peers": [...]}. A file written
 * by another agent version is migrated, not reset (a relationship is not
 * runtime state): format 1 — ts-general-agent's {relationships: {name:
 * {peerName, spaceConversations, ...}}} — is converted; an unknown, newer
 * format is reset (logged).
 *
 * Bounds: PEERS_MAX peers (the least recently met is forgotten), names of
 * PEER_NAME_MAX bytes, texts of PEER_TEXT_MAX bytes, a rendered paragraph of
 * at most PEERS_RENDER_MAX bytes.
 */
#ifndef GA_MODULES_REFLECTION_PEERS_H
#define GA_MODULES_REFLECTION_PEERS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "modules/state/state.h"

#define PEERS_STATE_NAME         "peer_relationships"
#define PEERS_FORMAT             2
#define PEERS_MAX                64
#define PEER_NAME_MAX            64
#define PEER_TEXT_MAX            300
#define PEER_MEMORABLE_MAX       5
#define PEER_STRENGTHS_MAX       3
#define PEER_CONVERSATION_GAP_MS (30LL * 60 * 1000)
#define PEERS_RENDER_MAX         4096

struct peer_rel {
	char name[PEER_NAME_MAX]; /* as first seen */
	int64_t conversations;
	int64_t issues_co_created;
	int64_t prs_reviewed;
	int64_t productive_disagreements;
	int64_t agreements;
	int64_t first_seen_ms;
	int64_t last_interaction_ms;
	char *memorable[PEER_MEMORABLE_MAX]; /* oldest first */
	size_t n_memorable;
	char *strengths[PEER_STRENGTHS_MAX]; /* oldest first */
	size_t n_strengths;
};

struct peer_memory {
	struct peer_rel items[PEERS_MAX];
	size_t n;
	bool dirty;
};

enum peer_counter {
	PEER_ISSUE_CO_CREATED,
	PEER_PR_REVIEWED,
	PEER_DISAGREEMENT,
	PEER_AGREEMENT,
};

void peers_init(struct peer_memory *pm);
void peers_free(struct peer_memory *pm);

/* The peer (created when new; the least recently met is dropped at
 * PEERS_MAX). NULL for a blank name. */
struct peer_rel *peers_get(struct peer_memory *pm, const char *name, int64_t now_ms);
const struct peer_rel *peers_find(const struct peer_memory *pm, const char *name);

/* A live message from the peer: counts a conversation when the last
 * interaction is older than PEER_CONVERSATION_GAP_MS (or there was none). */
void peers_note_message(struct peer_memory *pm, const char *name, int64_t now_ms);
void peers_count(struct peer_memory *pm, const char *name, enum peer_counter c, int64_t now_ms);
void peers_add_memorable(struct peer_memory *pm, const char *name, const char *text,
                         int64_t now_ms);
void peers_add_strength(struct peer_memory *pm, const char *name, const char *text, int64_t now_ms);

/* Reflection's notes: an array of {"name", "memorable"?, "strength"?,
 * "disagreement"?: bool, "agreement"?: bool}; malformed entries are skipped.
 * Returns how many entries were used. */
size_t peers_apply_notes(struct peer_memory *pm, const cJSON *notes, int64_t now_ms);

/* The data object (format, peers) and back. from_json replaces pm's
 * content; -1 when data is not a known format. */
cJSON *peers_to_json(const struct peer_memory *pm);
int peers_from_json(struct peer_memory *pm, const cJSON *data);
/* The state_migrate_fn: converts format 1 in place. */
int peers_migrate(void *ud, cJSON *data, const char *from_version);

int peers_load(struct peer_memory *pm, const struct state_store *st);
int peers_save(struct peer_memory *pm, const struct state_store *st, int64_t now_ms,
               struct ga_err *err);

/* A short paragraph for a prompt about these peers (all peers when names
 * is NULL), most recently met first, one line each:
 *   "Ada: 3 conversations · 1 issue co-created · 0 PRs reviewed ·
 *    Notable: … · Strengths: …"
 * "" when none is known. Caller frees. */
char *peers_render(const struct peer_memory *pm, const char *const *names, size_t n_names);

/* For a prompt built outside the reflection service (the room's, Bluesky's):
 * loads the state file and renders it as peers_render does. Reads a file of
 * at most PEERS_MAX entries; "" when none is known. Caller frees. */
char *peers_render_from_store(const struct state_store *st, const char *const *names,
                              size_t n_names);

#endif
