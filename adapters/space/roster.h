/*
 * adapters/space/roster — what a client knows about the room: who is
 * present (name, id, version, capabilities, identity), who is typing, each
 * member's last announced state, the claims seen, and the recent chat.
 *
 * It is a pure state machine: spc_roster_apply(r, msg, now_ms) folds one
 * server message in (space-protocol.md §7.4, with the reference client's
 * defects fixed: a `leave` also forgets that member's claims, §9 item 28;
 * history chats already seen live are not added twice). Time enters as a
 * parameter; nothing here does I/O.
 *
 * Bounds (and what happens at the limit):
 *   SPC_MAX_MEMBERS members — further presence entries are ignored, counted
 *     in r->dropped_members;
 *   SPC_MAX_MEMBER_CAPS capabilities of at most SPC_CAP_MAX_BYTES each —
 *     the rest are ignored;
 *   an identity summary above SPC_IDENTITY_MAX_BYTES is not kept;
 *   SPC_HISTORY_MAX_ENTRIES chats and SPC_HISTORY_MAX_BYTES of their text —
 *     the oldest are dropped;
 *   SPC_MAX_CLAIMS claims — the oldest is dropped; claims expire after
 *     SPC_CLAIM_TTL_MS (the server's TTL);
 *   typing marks expire after SPC_TYPING_TTL_MS (the reference's 10 s).
 *
 * Every chat entry gets a sequence number (1, 2, …) so a consumer can ask
 * for "what is new since seq N" after each apply.
 *
 * Memory: everything is owned by the roster; pointers returned are valid
 * until the next spc_roster_apply / spc_roster_reset / spc_roster_free.
 */
#ifndef GA_ADAPTERS_SPACE_ROSTER_H
#define GA_ADAPTERS_SPACE_ROSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/space/wire.h"

#define SPC_MAX_MEMBERS         256
#define SPC_MAX_MEMBER_CAPS     32
#define SPC_CAP_MAX_BYTES       100
#define SPC_IDENTITY_MAX_BYTES  (16 * 1024)
#define SPC_HISTORY_MAX_ENTRIES 200
#define SPC_HISTORY_MAX_BYTES   (512 * 1024)
#define SPC_MAX_CLAIMS          256
#define SPC_CLAIM_TTL_MS        60000
#define SPC_TYPING_TTL_MS       10000
#define SPC_MAX_ADDRESSED       16

struct spc_member {
	char *name;
	char *id;
	char *version;
	char *caps[SPC_MAX_MEMBER_CAPS];
	size_t ncaps;
	bool has_caps;                      /* the member sent a capability list (maybe empty) */
	char *identity_json;                /* compact JSON of its summary, or NULL */
	int64_t joined_at_ms, last_seen_ms; /* server clock, 0 when unknown */
	int64_t typing_until_ms;            /* local clock; 0 = not typing */
	char state[12];                     /* idle|thinking|acting|blocked, "" = unknown */
	char *state_detail;                 /* NULL when none */
};

struct spc_chat {
	uint64_t seq;
	char *name;
	char *id;
	char *content;
	char *thread_id; /* threadId as text (a non-string is its JSON), or NULL */
	bool has_chain;
	int64_t chain;
	char *addressed[SPC_MAX_ADDRESSED]; /* the server's list (host chats) */
	size_t naddressed;
	int64_t time_ms; /* server time; 0 when unknown */
	bool from_history;
	/* The sender was not a present member when the chat arrived and
	 * looks like the operator (name "host", id "host-…"): §3.16, §9 item 12. */
	bool host;
};

struct spc_claim {
	char *action;
	char *target;
	char *owner;     /* name (the server keys ownership by name, §3.7) */
	int64_t seen_ms; /* local clock */
};

struct spc_roster {
	struct spc_member members[SPC_MAX_MEMBERS];
	size_t nmembers;
	size_t dropped_members;
	struct spc_chat *chats; /* ring of SPC_HISTORY_MAX_ENTRIES */
	size_t chat_head, nchats, chat_bytes;
	uint64_t next_seq;
	struct spc_claim claims[SPC_MAX_CLAIMS];
	size_t nclaims;
};

/* What an apply changed (bit set). */
enum {
	SPC_CHANGED_MEMBERS = 1, /* join, leave, presence, identity */
	SPC_CHANGED_CHAT = 2,    /* at least one chat entry added */
	SPC_CHANGED_TYPING = 4,
	SPC_CHANGED_STATE = 8,
	SPC_CHANGED_CLAIMS = 16,
};

void spc_roster_init(struct spc_roster *r);
/* Forgets members, typing, states and claims (a connection ended); keeps
 * the chat history and its sequence numbers. */
void spc_roster_reset(struct spc_roster *r);
void spc_roster_free(struct spc_roster *r);

/* Folds msg in; returns SPC_CHANGED_* bits. */
unsigned spc_roster_apply(struct spc_roster *r, const struct spc_msg *m, int64_t now_ms);

const struct spc_member *spc_roster_find_id(const struct spc_roster *r, const char *id);
const struct spc_member *spc_roster_find_name(const struct spc_roster *r, const char *name);
bool spc_member_typing(const struct spc_member *m, int64_t now_ms);
bool spc_member_has_cap(const struct spc_member *m, const char *cap);

/* Chats, oldest first: i in [0, spc_roster_chat_count). */
size_t spc_roster_chat_count(const struct spc_roster *r);
const struct spc_chat *spc_roster_chat_at(const struct spc_roster *r, size_t i);

/* The live (not expired) claim on action+target, or NULL. */
const struct spc_claim *spc_roster_claim(const struct spc_roster *r, const char *action,
                                         const char *target, int64_t now_ms);

#endif
