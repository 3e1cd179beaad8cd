/*
 * event — one message, platform-neutral (DESIGN.md "The path every message
 * walks"). Every adapter turns what it reads (a room chat,
 * a Bluesky notification, a GitHub comment, an owner line) into this shape
 * once, and every stage after it (gate, compose, validator, outbound,
 * record, the conversation store, the dashboard) reads only this.
 *
 * Fields:
 *   platform       CONV_PLATFORM_*; its name ("space", "bluesky", ...) is
 *                  what decisions.jsonl and send targets use;
 *   conversation   the key of the conversation the message belongs to,
 *                  prefixed with the platform: "space:room",
 *                  "space:<threadId>", "bluesky:<root at-uri>",
 *                  "github:<owner>/<repo>#<n>", "owner:terminal";
 *   message_id     stable and unique within the platform, prefixed the same
 *                  way ("space:<32 hex>", "owner:<n>", an at-uri, ...);
 *   parent_id      the message this one replies to (NULL: none / unknown);
 *   thread_id      the thread within the conversation (NULL: none);
 *   author_id, author_name, author_kind (self|owner|host|human|peer);
 *   is_bot         the author is an agent (self or peer; a human on a
 *                  platform that marks bots counts as a bot);
 *   chain          the chain length the message carries or was derived
 *                  (seed 000: a human's, the host's or the owner's message
 *                  has chain 0; an agent's reply = chain of what it answers
 *                  + 1); chain_explicit: it came with a chain marker;
 *   text, text_len the words; text_len counts bytes and the text may hold
 *                  NUL bytes (a room chat may carry "\u0000"); text is
 *                  always NUL-terminated after text_len as well;
 *   addressed      the names the message addresses (mentions), at most
 *                  CONV_MAX_ADDRESSED; addressed_me: one of them is us, or
 *                  the message replies to one of ours;
 *   time_ms        when it was said (the platform's clock; 0 unknown);
 *   from_history   replayed history rather than live: context only;
 *   thread_depth   how many posts this one answers up its thread's branch
 *                  (0: a root post; -1: unknown or not threaded) — SELF.md's
 *                  Social Mechanics read it.
 *
 * Ownership: a struct conv_event owns every string in it (conv_event_init
 * copies). conv_event_free() accepts NULL fields and releases them.
 */
#ifndef GA_MODULES_CONVERSATION_EVENT_H
#define GA_MODULES_CONVERSATION_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONV_MAX_ADDRESSED  16
#define CONV_TEXT_MAX_BYTES (256 * 1024) /* longer texts are cut on a UTF-8 boundary */

enum conv_platform {
	CONV_PLATFORM_SPACE,
	CONV_PLATFORM_BLUESKY,
	CONV_PLATFORM_GITHUB,
	CONV_PLATFORM_OWNER,
	CONV_PLATFORM_COUNT,
};

enum conv_author_kind {
	CONV_AUTHOR_SELF,
	CONV_AUTHOR_OWNER,
	CONV_AUTHOR_HOST,
	CONV_AUTHOR_HUMAN,
	CONV_AUTHOR_PEER,
	CONV_AUTHOR_COUNT,
};

struct conv_event {
	enum conv_platform platform;
	char *conversation;
	char *message_id;
	char *parent_id;
	char *thread_id;
	char *author_id;
	char *author_name;
	enum conv_author_kind author_kind;
	bool is_bot;
	int64_t chain;
	bool chain_explicit;
	char *text;
	size_t text_len;
	char *addressed[CONV_MAX_ADDRESSED];
	size_t naddressed;
	bool addressed_me;
	int64_t time_ms;
	bool from_history;
	int thread_depth;
};

/* What an adapter fills (all borrowed) to make an event. */
struct conv_event_src {
	enum conv_platform platform;
	const char *conversation;
	const char *message_id;
	const char *parent_id; /* may be NULL */
	const char *thread_id; /* may be NULL */
	const char *author_id;
	const char *author_name;
	enum conv_author_kind author_kind;
	bool is_bot;
	int64_t chain;
	bool chain_explicit;
	const char *text;
	size_t text_len; /* bytes; text may hold NULs */
	const char *const *addressed;
	size_t naddressed;
	bool addressed_me;
	int64_t time_ms;
	bool from_history;
	int thread_depth; /* -1 unknown; 0 when not set: a root */
};

/* Copies src into ev (ev is overwritten, not freed first). NULL strings
 * other than parent_id/thread_id become "". */
void conv_event_init(struct conv_event *ev, const struct conv_event_src *src);
/* A deep copy. */
void conv_event_copy(struct conv_event *dst, const struct conv_event *src);
void conv_event_free(struct conv_event *ev);

const char *conv_platform_name(enum conv_platform p);
int conv_platform_parse(const char *s); /* -1 when unknown */
const char *conv_author_kind_name(enum conv_author_kind k);
int conv_author_kind_parse(const char *s); /* -1 when unknown */

/* True when the author is a person: owner, host or human. */
bool conv_author_is_person(enum conv_author_kind k);

/* A NUL-terminated heap copy of at most max bytes of s (cut on a character
 * boundary: utf8_cut in common/utf8.h; s may
 * hold NULs; NULL s is ""); *kept (may be NULL) receives its length. */
char *conv_text_dup(const char *s, size_t len, size_t max, size_t *kept);

#endif
