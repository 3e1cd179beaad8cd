/*
 * adapters/space/roster — what a client knows about the room: who is
 * present (name, id, version, capabilities, identity), who is typing, each
 * member's last announced state, the claims seen, and which chats were
 * already handed up.
 *
 * It is a pure state machine: spc_roster_apply(r, msg, now_ms, on_chat, ud)
 * folds one server message in (space-protocol.md §7.4; a `leave` also
 * forgets that member's claims). Time enters as a parameter; nothing here does I/O.
 *
 * Chats are not kept here: the conversation store owns the history
 * (modules/conversation/store.h). A chat — live, or an entry of a
 * history_response — is handed to on_chat once, as a struct spc_chat whose
 * strings are borrowed from the parsed message, and forgotten. "Once" is
 * kept by a set of the digests of the last SPC_SEEN_CHATS chats handed up:
 * the first SPC_SEEN_DIGEST_BYTES bytes of SHA-256(sender id "\n" time
 * "\n" content) — the same input as the link's message id, so two chats
 * that would get one message id are one chat here too. A chat whose digest
 * is in the set (a history entry already seen live, after a reconnect's
 * replay; a live chat relayed twice) is counted in r->repeated_chats and
 * not handed up. The set is a ring: when full, the oldest digest is
 * dropped. SPC_SEEN_CHATS is at least the room's largest history answer
 * (1,000 entries, space/proto.c space_history_limit), so a reconnect's
 * replay of chats this client handed up is recognised in full.
 *
 * Bounds (and what happens at the limit):
 *   SPC_MAX_MEMBERS members — further presence entries are ignored, counted
 *     in r->dropped_members;
 *   SPC_MAX_MEMBER_CAPS capabilities of at most SPC_CAP_MAX_BYTES each —
 *     the rest are ignored;
 *   an identity summary above SPC_IDENTITY_MAX_BYTES is not kept; its
 *     "githubLogin" (a string of 1..SPC_LOGIN_MAX_BYTES bytes, else none)
 *     is kept beside it, so nobody parses the summary again to ask;
 *   SPC_SEEN_CHATS chat digests of SPC_SEEN_DIGEST_BYTES each (16 KiB) —
 *     the oldest is dropped;
 *   SPC_MAX_CLAIMS claims — the oldest is dropped; claims expire after
 *     SPC_CLAIM_TTL_MS (the server's TTL);
 *   typing marks expire after SPC_TYPING_TTL_MS (10 s, as peers expect).
 *
 * Memory: everything is owned by the roster; pointers returned are valid
 * until the next spc_roster_apply / spc_roster_reset / spc_roster_free. A
 * struct spc_chat and its strings are valid during the on_chat call only.
 */
#ifndef GA_ADAPTERS_SPACE_ROSTER_H
#define GA_ADAPTERS_SPACE_ROSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/space/wire.h"

#define SPC_MAX_MEMBERS        256
#define SPC_MAX_MEMBER_CAPS    32
#define SPC_CAP_MAX_BYTES      100
#define SPC_IDENTITY_MAX_BYTES (16 * 1024)
#define SPC_LOGIN_MAX_BYTES    39 /* GitHub's longest login */
#define SPC_SEEN_CHATS         1024
#define SPC_SEEN_DIGEST_BYTES  16
#define SPC_MAX_CLAIMS         256
#define SPC_CLAIM_TTL_MS       60000
#define SPC_TYPING_TTL_MS      10000

struct spc_member {
	char *name;
	char *id;
	char *version;
	char *caps[SPC_MAX_MEMBER_CAPS];
	size_t ncaps;
	bool has_caps;       /* the member sent a capability list (maybe empty) */
	char *identity_json; /* compact JSON of its summary, or NULL */
	/* the summary's githubLogin, "" when none */
	char github_login[SPC_LOGIN_MAX_BYTES + 1];
	int64_t joined_at_ms, last_seen_ms; /* server clock, 0 when unknown */
	int64_t typing_until_ms;            /* local clock; 0 = not typing */
	char state[12];                     /* idle|thinking|acting|blocked, "" = unknown */
	char *state_detail;                 /* NULL when none */
};

/* One chat as the room sent it, borrowed from the parsed message (valid
 * during the on_chat call). Strings hold U+0000 as JSON_NUL_MARK (wire.h);
 * spc_text_dup gives the text with its NULs. */
struct spc_chat {
	const char *name;
	const char *id;
	const char *content;
	const cJSON *thread_id; /* any JSON value the room relayed, or NULL */
	bool has_chain;         /* the chat carried a chain field */
	int64_t chain;
	const cJSON *addressed; /* host chats: the room's list of names, or NULL */
	int64_t time_ms;        /* server time; 0 when unknown */
	bool from_history;      /* an entry of a history_response (no thread, no chain) */
	/* The sender was not a present member when the chat arrived and
	 * looks like the operator (name "host", id "host-…"): §3.16, §9 item 12. */
	bool host;
};

typedef void (*spc_chat_fn)(void *ud, const struct spc_chat *chat);

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
	struct spc_claim claims[SPC_MAX_CLAIMS];
	size_t nclaims;
	uint64_t handed_chats;   /* chats handed to on_chat, in all */
	uint64_t repeated_chats; /* chats not handed up: already in the set */
	size_t seen_head, nseen;
	/* Digests of the chats handed up, a ring (oldest at seen_head once
	 * full). Last, and only its first nseen entries are ever read, so
	 * init leaves it untouched: its pages become resident as chats come. */
	unsigned char seen[SPC_SEEN_CHATS][SPC_SEEN_DIGEST_BYTES];
};

/* What an apply changed (bit set). */
enum {
	SPC_CHANGED_MEMBERS = 1, /* join, leave, presence, identity */
	SPC_CHANGED_CHAT = 2,    /* at least one chat handed up */
	SPC_CHANGED_TYPING = 4,
	SPC_CHANGED_STATE = 8,
	SPC_CHANGED_CLAIMS = 16,
};

void spc_roster_init(struct spc_roster *r);
/* Forgets members, typing, states and claims (a connection ended); keeps
 * the set of chats handed up, so the next connection's history replay is
 * not handed up again. */
void spc_roster_reset(struct spc_roster *r);
void spc_roster_free(struct spc_roster *r);

/* Folds msg in; returns SPC_CHANGED_* bits. Each chat of a `chat` or a
 * `history_response` not handed up before is passed to on_chat (may be
 * NULL: then it is only recorded), in the message's order, after the
 * roster took in everything else the message says. on_chat may read r
 * but must not change it. */
unsigned spc_roster_apply(struct spc_roster *r, const struct spc_msg *m, int64_t now_ms,
                          spc_chat_fn on_chat, void *ud);

const struct spc_member *spc_roster_find_id(const struct spc_roster *r, const char *id);
const struct spc_member *spc_roster_find_name(const struct spc_roster *r, const char *name);
bool spc_member_typing(const struct spc_member *m, int64_t now_ms);
bool spc_member_has_cap(const struct spc_member *m, const char *cap);

/* The digest a chat is known by (see above); out gets SPC_SEEN_DIGEST_BYTES. */
void spc_chat_digest(const char *id, int64_t time_ms, const char *content,
                     unsigned char out[SPC_SEEN_DIGEST_BYTES]);
/* Whether a chat with this digest was handed up and is still in the set. */
bool spc_roster_chat_seen(const struct spc_roster *r,
                          const unsigned char digest[SPC_SEEN_DIGEST_BYTES]);

/* The live (not expired) claim on action+target, or NULL. */
const struct spc_claim *spc_roster_claim(const struct spc_roster *r, const char *action,
                                         const char *target, int64_t now_ms);

#endif
