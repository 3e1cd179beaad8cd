/*
 * adapters/space/wire — the agent-space wire format, client side: parse what
 * the server sends, build what the client sends (space-protocol.md §2).
 *
 * Parsing: spc_msg_parse() takes one WebSocket text message and fills a
 * struct spc_msg whose string fields point into the parsed JSON it owns
 * (m->root); spc_msg_free() releases it. Only the fields a client needs are
 * lifted out, each checked for its JSON type. A message of a known type with
 * a required field missing or mistyped is an error (err names the type and
 * the field); an unknown or absent type is not an error, it is SPC_T_UNKNOWN
 * (the protocol tells both sides to ignore what they do not know, §3.1).
 *
 * Building: every spc_build_* returns a compact JSON text (caller frees), with
 * keys in the order the TypeScript client emits them, including the
 * client-side name/id/timestamp the server ignores and replaces (§2.2) —
 * so that a server that does look at them (none today) sees the truth.
 * Inputs are not validated beyond what JSON needs; the caller enforces the
 * protocol's limits (spc_js_length, SPC_* below). A message that would pass
 * SPC_BUILD_MAX_BYTES is not built (NULL), never sent with a field cut.
 *
 * U+0000: "\u0000" in a string is valid JSON, and the server relays it (a
 * chat may hold any character). cJSON strings end at NUL, so the parser
 * (json_parse_nul, common/jsonnul.h) keeps each U+0000 as the one byte
 * JSON_NUL_MARK (0xFF, never part of UTF-8; the input is checked to be
 * valid UTF-8, so a 0xFF in a parsed string is exactly a U+0000 and nothing
 * else). Every string of a struct spc_msg, of its root, and of what is
 * copied from them stays NUL-terminated and distinct ("a\u0000b" is never
 * read as "a"), and its length in bytes is the length of the text. A
 * string's text with real NUL bytes, for a user that takes (pointer,
 * length), is spc_text_dup. The builders take strings in the same form
 * (UTF-8, JSON_NUL_MARK for U+0000) and write every 0xFF as "\u0000", so a
 * parsed string sent back (a thread id, a claim target) arrives unchanged;
 * other invalid UTF-8 is sent as it is (the room closes with 1007).
 *
 * URLs: spc_url_parse() splits ws://host:port/path (and wss://).
 */
#ifndef GA_ADAPTERS_SPACE_WIRE_H
#define GA_ADAPTERS_SPACE_WIRE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Server limits a client must respect, in UTF-16 code units (§2.2). */
#define SPC_NAME_MAX_UNITS    100
#define SPC_ID_MAX_UNITS      100
#define SPC_VERSION_MAX_UNITS 50
#define SPC_CHAT_MAX_UNITS    100000
#define SPC_DETAIL_MAX_UNITS  1000
/* The bounds of the identity summary the room shows (§7.3). */
#define SPC_IDENTITY_MAX_ITEMS    5
#define SPC_VOICE_MAX_BYTES       120
#define SPC_RECENT_WORK_MAX_BYTES 100
#define SPC_URL_MAX               512
/* The largest message a builder makes; the server accepts 1 MiB (§1). */
#define SPC_BUILD_MAX_BYTES (1024 * 1024 - 1)

enum spc_type {
	SPC_T_UNKNOWN = 0,
	SPC_T_JOIN,
	SPC_T_LEAVE,
	SPC_T_PRESENCE,
	SPC_T_HISTORY,
	SPC_T_CHAT,
	SPC_T_TYPING,
	SPC_T_IDENTITY,
	SPC_T_CLAIM,
	SPC_T_STATE,
	SPC_T_ACTION_RESULT,
	SPC_T_REFLECTION,
	SPC_T_WORKSPACE_STATE,
	SPC_T_ERROR,
	SPC_T_SHUTDOWN,
};

/* One server message. Pointers are borrowed from root. Fields that a type
 * does not carry are NULL / false / 0. */
struct spc_msg {
	enum spc_type type;
	cJSON *root; /* owned */
	const char *name;
	const char *id;
	const char *timestamp; /* server time, ISO-8601, or NULL */
	int64_t time_ms;       /* timestamp parsed, 0 when absent or bad */
	/* chat */
	const char *content;    /* U+0000 as JSON_NUL_MARK (see above) */
	const cJSON *thread_id; /* any truthy JSON value, relayed verbatim */
	bool has_chain;         /* our server's extension: integer chain length */
	int64_t chain;
	const cJSON *addressed; /* host chats: array of names, or NULL */
	/* join, presence, history, identity */
	const char *version;
	const cJSON *capabilities; /* array, or NULL when absent */
	const cJSON *agents;       /* presence: array of AgentPresence */
	const cJSON *entries;      /* history_response: array of log entries */
	const cJSON *summary;      /* identity: object (or array, §2.2) */
	/* claim, action_result */
	const char *action;
	const char *target;
	bool success;
	const char *link;
	const char *error;
	/* state */
	const char *state;
	const cJSON *detail; /* any JSON value the server relayed, or NULL */
	/* error, shutdown */
	const char *message;
	const char *reason;
};

/* -1 with err for invalid JSON, a non-object, or a known type with a bad
 * field; *out is then empty (nothing to free, but spc_msg_free is safe). */
int spc_msg_parse(const char *buf, size_t len, struct spc_msg *out, struct ga_err *err);
void spc_msg_free(struct spc_msg *m);
const char *spc_type_name(enum spc_type t);

/* The text of a parsed string s (content, a name, ...): a heap copy in
 * which every U+0000 is a NUL byte; *len is its length in bytes (the
 * terminator follows it). Caller frees. */
char *spc_text_dup(const char *s, size_t *len);

/* The JS length of UTF-8 text: UTF-16 code units (a code point above
 * U+FFFF counts 2). Invalid bytes count 1 each, so a parsed string's
 * U+0000 (the marker) counts 1, as in JS. */
size_t spc_js_length(const char *s, size_t len);
/* Byte length of the longest prefix of s holding at most max_units UTF-16
 * units, cut at a code point boundary (never inside a surrogate pair). */
size_t spc_js_prefix(const char *s, size_t len, size_t max_units);

/* The identity summary (§2.2 IdentitySummary). Strings owned; free with
 * spc_identity_free. soul_essence NULL = omitted. github_login: the
 * agent's GitHub login, an extra key ("githubLogin") the room relays
 * verbatim and peers that do not know it ignore; NULL = omitted. */
struct spc_identity {
	char *core_values[SPC_IDENTITY_MAX_ITEMS];
	size_t n_core_values;
	char *interests[SPC_IDENTITY_MAX_ITEMS];
	size_t n_interests;
	char *voice;
	char *expertise[SPC_IDENTITY_MAX_ITEMS];
	size_t n_expertise;
	char *recent_work;
	char *soul_essence;
	char *github_login;
};
void spc_identity_free(struct spc_identity *id);
/* {"coreValues":[...],"currentInterests":[...],"voice":...,"expertise":[...],
 * "recentWork":...,"soulEssence"?,"githubLogin"?} — caller frees. */
char *spc_identity_json(const struct spc_identity *id);

/* Who is speaking: the registered name and id (the server overrides them,
 * but clients send them, §2.2). */
struct spc_who {
	const char *name;
	const char *id;
};

/* caps NULL = no "capabilities" key at all (ncaps ignored). */
char *spc_build_join(const struct spc_who *w, const char *version, const char *const *caps,
                     size_t ncaps);
/* summary_json: an object's compact JSON text (spc_identity_json). */
char *spc_build_identity(const struct spc_who *w, const char *summary_json, int64_t now_ms);
/* thread_id NULL = omitted; chain < 0 = omitted. */
char *spc_build_chat(const struct spc_who *w, const char *content, const char *thread_id,
                     int64_t chain, int64_t now_ms);
char *spc_build_typing(const struct spc_who *w, int64_t now_ms);
/* since_ms > 0: the claim renews one this agent has held since then, and
 * carries "since" (ISO-8601 UTC) so that a room that lost it (a rejoin)
 * can show its own time; our room keeps it within bounds, a TypeScript
 * room drops it. since_ms <= 0 = a fresh claim, no "since". */
char *spc_build_claim(const struct spc_who *w, const char *action, const char *target,
                      int64_t since_ms, int64_t now_ms);
/* state: idle | thinking | acting | blocked. detail NULL = omitted. */
char *spc_build_state(const struct spc_who *w, const char *state, const char *detail,
                      int64_t now_ms);
/* link / error NULL = omitted. */
char *spc_build_action_result(const struct spc_who *w, const char *action, const char *target,
                              bool success, const char *link, const char *error, int64_t now_ms);
char *spc_build_reflection(const struct spc_who *w, const char *summary, int64_t now_ms);

/* ws://host[:port][/path]; wss:// too. host may be a [v6] literal (brackets
 * removed in host). Default port 80 (ws) / 443 (wss); default path "/".
 * -1 with err naming the URL when it is not one. */
struct spc_url {
	bool tls;
	char host[256];
	int port;
	char path[256];
};
int spc_url_parse(const char *url, struct spc_url *out, struct ga_err *err);

#endif
