/*
 * space/proto — the agent-space wire format: message classification and the
 * JavaScript semantics the TypeScript reference applies to it.
 *
 * The reference server is Node: it measures lengths in UTF-16 code units,
 * trims with String.prototype.trim, tests "truthiness", and re-serialises
 * everything with JSON.stringify. Peers compare bytes in golden tests and
 * clients of both languages share one room, so these helpers reproduce those
 * semantics exactly (space-protocol.md §1.1, §2.2). Everything here is pure:
 * no I/O, no clock, no global state, so it is unit-tested and fuzzed directly.
 *
 * NUL: "\u0000" in a string is valid JSON that TypeScript peers relay, but
 * cJSON strings end at NUL. space_msg_parse therefore parses with
 * json_parse_js (common/jsonnul.h): a U+0000 is the byte JSON_NUL_MARK
 * (0xFF, never in UTF-8) inside the tree's strings. Every helper here treats
 * the marker as the one character U+0000 (one UTF-16 unit, not blank,
 * truthy), and every string written out goes through space_put_str/strn,
 * which write it back as "\u0000". So a NUL is relayed, logged and replayed
 * exactly; internally it is the marker throughout (log lines are read back
 * with json_parse_js too).
 *
 * Lone surrogates: "\ud800" (a JavaScript string cut inside an emoji) is
 * valid JSON to JSON.parse, and TypeScript peers relay it; json_parse_js
 * keeps it as the three WTF-8 bytes of its code point, which the helpers
 * count as one UTF-16 unit, not blank, and space_put_str writes back as
 * "\ud800". A message is never refused for one.
 *
 * Memory: cJSON trees returned by space_msg_parse are owned by the caller
 * (cJSON_Delete). Strings passed in are borrowed. strbuf outputs are
 * appended to; the caller owns the strbuf.
 */
#ifndef GA_SPACE_PROTO_H
#define GA_SPACE_PROTO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

/* The protocol's limits (space-protocol.md §6.2), in UTF-16 units. */
#define SPACE_NAME_MAX_UNITS       100
#define SPACE_ID_MAX_UNITS         100
#define SPACE_VERSION_MAX_UNITS    50
#define SPACE_CHAT_MAX_UNITS       100000
#define SPACE_DETAIL_CUT_UNITS     1000
#define SPACE_REFLECTION_CUT_UNITS 5000
/* Inbound WebSocket message limit, bytes after reassembly (§1 item 9). */
#define SPACE_MAX_PAYLOAD_BYTES 1048576

/* Extra bounds (§9 items 17, 18): presence repeats every member's
 * capabilities and identity in every broadcast, so both are capped. Normal
 * agents send 1–3 capabilities and an identity under 2 KiB, so real values
 * pass unchanged. Extra capability elements are dropped; an oversized
 * identity is rejected with an "Invalid identity" error. */
#define SPACE_CAPS_MAX_COUNT     64
#define SPACE_CAP_MAX_UNITS      200
#define SPACE_IDENTITY_MAX_BYTES (16 * 1024)

/* Integer `chain` on chat (an extension): relayed only when it is
 * an integral JSON number in [0, SPACE_CHAIN_MAX]. */
#define SPACE_CHAIN_MAX 1000000

enum space_msg_type {
	SPACE_MSG_INVALID_JSON = 0, /* unparseable, or JSON null (§3.1 step 3) */
	SPACE_MSG_IGNORED,          /* non-object, no/unknown/server-only type */
	SPACE_MSG_JOIN,
	SPACE_MSG_CHAT,
	SPACE_MSG_TYPING,
	SPACE_MSG_IDENTITY,
	SPACE_MSG_CLAIM,
	SPACE_MSG_STATE,
	SPACE_MSG_ACTION_RESULT,
	SPACE_MSG_REFLECTION,
	SPACE_MSG_WORKSPACE_STATE,
};

/* Parses one inbound payload (valid UTF-8, at most SPACE_MAX_PAYLOAD_BYTES)
 * and classifies it. *root receives the tree for every type except
 * INVALID_JSON and IGNORED (then NULL); the caller frees it. */
enum space_msg_type space_msg_parse(const char *buf, size_t len, cJSON **root);

/* JSON.parse keeps the LAST of duplicate keys; cJSON's lookup finds the
 * first. Case-sensitive. NULL when absent or obj is not an object. */
const cJSON *space_js_get(const cJSON *obj, const char *key);

/* Length in UTF-16 code units of valid UTF-8. */
size_t space_js_units(const char *s, size_t len);

/* Bytes of the longest prefix of s that is at most max_units UTF-16 units,
 * never splitting a code point (a character outside the BMP that would
 * straddle the limit is left out: §9 item 7, no lone surrogates). */
size_t space_js_cut(const char *s, size_t len, size_t max_units);

/* True when String.prototype.trim would leave nothing (§0 "blank"). */
bool space_js_blank(const char *s, size_t len);

/* String.prototype.trim: *off and *out_len describe the trimmed span. */
void space_js_trim(const char *s, size_t len, size_t *off, size_t *out_len);

/* JavaScript truthiness of a JSON value; NULL (absent) is false. */
bool space_js_truthy(const cJSON *v);

/* True when v is a string that is not blank. */
bool space_js_nonblank_string(const cJSON *v);

/* Appends JSON.stringify(v): compact, JS number format, JS escapes, and JS
 * object key order (array-index keys ascending first, then insertion order;
 * a duplicated key keeps its first position and its last value). v NULL
 * appends "undefined" (only used in error texts, §3.20). Returns 0 or -1
 * when sb's maximum is reached. */
int space_js_stringify(struct strbuf *sb, const cJSON *v);

/* Appends String(v): strings verbatim, numbers in JS format, "true",
 * "false", "null", arrays joined with "," (null elements empty), objects
 * "[object Object]". Used for the state log content (§3.8). */
int space_js_string_of(struct strbuf *sb, const cJSON *v);

/* Appends s as a JSON string literal (JSON.stringify escaping; the NUL
 * marker as "\u0000"). */
int space_put_str(struct strbuf *sb, const char *s);
/* The same for s[0..len). */
int space_put_strn(struct strbuf *sb, const char *s, size_t len);

/* A plan's tasks as a workspace_state may carry them (an extra field of
 * ours, for the room's page): ,"tasks":[{number, title, status, assignee?,
 * pr?, prUrl?}] with only those fields, strings cut to their bounds
 * (title SPACE_TASK_TITLE_UNITS, the others SPACE_TASK_FIELD_UNITS; a
 * prUrl that is not https:// is left out), at most max_tasks entries and
 * max_bytes of JSON (the rest left out). Appends nothing when tasks is not
 * an array. True when something was left out or cut. */
#define SPACE_TASK_TITLE_UNITS 120
#define SPACE_TASK_FIELD_UNITS 200
bool space_put_tasks(struct strbuf *sb, const cJSON *tasks, size_t max_tasks, size_t max_bytes);

/* A plan's open pull requests as a workspace_state may carry them (an
 * extra field of ours, for the room's page): ,"pulls":[{number, state,
 * repo?, title?, url?, task?, author?, reviewer?, next?, since?,
 * revisions?}] with only those fields. An entry is kept when it is an
 * object with "number" a positive integer and "state" a word of at most
 * SPACE_PULL_STATE_MAX lowercase letters and '_' (awaiting_review,
 * approved, …); other entries are left out and counted in *rejected. In a
 * kept entry: strings cut to their bounds (title SPACE_TASK_TITLE_UNITS,
 * the others SPACE_TASK_FIELD_UNITS), a url that is not https:// left out,
 * "since" only when it is an ISO time, task and revisions only when
 * non-negative numbers. At most max_pulls entries and max_bytes of JSON.
 * Appends nothing when pulls is not an array. True when something was
 * left out or cut. */
#define SPACE_PULL_STATE_MAX 32
bool space_put_pulls(struct strbuf *sb, const cJSON *pulls, size_t max_pulls, size_t max_bytes,
                     size_t *rejected);

/* Node decodes binary frames with Buffer#toString('utf8'), which replaces
 * every invalid sequence by U+FFFD. Returns a heap copy so repaired (caller
 * frees), or NULL when s is already valid UTF-8. */
char *space_utf8_repair(const char *s, size_t len, size_t *out_len);

/* History replay limit for a room of member_count members (§4.4):
 * min(200 + max(0, n - 2) * 50, 1000). */
size_t space_history_limit(size_t member_count);

#endif
