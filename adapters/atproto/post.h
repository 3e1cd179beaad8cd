/*
 * atproto post — building app.bsky.feed.post records (pure functions, no
 * I/O). Spec runtime-bluesky §5.5; lexicons app.bsky.feed.post and
 * app.bsky.richtext.facet.
 *
 * Limits (the lexicon's): text at most ATP_POST_MAX_GRAPHEMES extended
 * grapheme clusters (utf8proc, common/utf8.h) AND ATP_POST_MAX_BYTES bytes;
 * langs at most ATP_POST_MAX_LANGS. An over-long text is REFUSED with a
 * sentence ("the post is 301 graphemes; Bluesky allows 300"), never cut:
 * what to drop is the writer's decision.
 *
 * Facets: detection (atp_facets_detect) finds, in this order:
 *   1. links  http:// or https:// up to whitespace or < > " ], with trailing
 *             . , ; : ! ? ) trimmed;
 *   2. bare links  at the start or after whitespace or '(': github.com/,
 *             gitlab.com/, bitbucket.org/, npmjs.com/, crates.io/, pypi.org/
 *             followed by a path, not inside a link of pass 1; the facet's
 *             uri gets "https://" (the text is unchanged);
 *   3. mentions  at the start or after whitespace or '(': '@' + a handle
 *             (labels of letters, digits, '-', at most 63 bytes each, at
 *             least one dot, a TLD starting with a letter); the range covers
 *             the '@'; the DID is filled in later (atp_facets_set_did, from
 *             resolveHandle); a mention whose DID is still unknown is left
 *             out of the record (Bluesky refuses a mention facet without a
 *             valid DID);
 *   4. cashtags  '$' + 1–6 uppercase ASCII letters → #tag without '$';
 *   5. hashtags  '#' + an ASCII letter + [A-Za-z0-9_-]* → #tag without '#';
 *             both followed by whitespace, the end, or one of ).,!?;:-
 *             (tags over 64 graphemes / 640 bytes are skipped: the lexicon's
 *             limit).
 * Every range is a UTF-8 BYTE range [byte_start, byte_end) of the text as
 * sent — not UTF-16 code units, not code points — so text with emoji or
 * CJK before a facet gets the offsets the AppView expects. The record's
 * facets are emitted sorted by byte_start (overlaps cannot occur: later
 * passes skip what earlier ones covered).
 *
 * Extra fields (open records: the lexicon allows fields it does not name,
 * and the PDS keeps them):
 *   ATP_FIELD_CHAIN ("gaChain")  the agent chain length of this post (seed
 *                                000, DESIGN.md gate rule 3), an integer;
 *                                absent for chain < 0;
 *   ATP_FIELD_KEY   ("gaKey")    the outbound idempotency key, so a crash
 *                                between createRecord and the journal's
 *                                "done" is reconciled by finding the record.
 * atp_record_chain() / atp_record_key() read them back from any record.
 *
 * Memory: functions returning cJSON * or char * hand ownership to the caller;
 * struct atp_facets owns its values (free with atp_facets_free).
 */
#ifndef GA_ADAPTERS_ATPROTO_POST_H
#define GA_ADAPTERS_ATPROTO_POST_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define ATP_POST_MAX_GRAPHEMES 300
#define ATP_POST_MAX_BYTES     3000
#define ATP_POST_MAX_LANGS     3
#define ATP_LANG_MAX           16 /* "en", "pt-BR", "zh-Hant" */
#define ATP_TAG_MAX_GRAPHEMES  64
#define ATP_TAG_MAX_BYTES      640
#define ATP_FACETS_MAX         64 /* more candidates than this are ignored */
#define ATP_HANDLE_MAX         253
#define ATP_URI_MAX            512 /* at:// URIs we accept */
#define ATP_CID_MAX            128
#define ATP_DID_MAX            256
#define ATP_RKEY_MAX           512

#define ATP_COLL_POST   "app.bsky.feed.post"
#define ATP_COLL_LIKE   "app.bsky.feed.like"
#define ATP_COLL_FOLLOW "app.bsky.graph.follow"
#define ATP_FIELD_CHAIN "gaChain"
#define ATP_FIELD_KEY   "gaKey"

enum atp_facet_kind {
	ATP_FACET_LINK,    /* value: the URI */
	ATP_FACET_MENTION, /* value: the handle without '@'; did once resolved */
	ATP_FACET_TAG,     /* value: the tag without '#' / '$' */
};

struct atp_facet {
	enum atp_facet_kind kind;
	size_t byte_start, byte_end; /* UTF-8 byte offsets into the text */
	char *value;                 /* owned */
	char *did;                   /* mentions: owned, NULL until resolved */
};

struct atp_facets {
	struct atp_facet items[ATP_FACETS_MAX];
	size_t n;
};

/* Finds the facets of text (see the header paragraph). out is initialised
 * here. Never fails: text that is not valid UTF-8 yields no facets inside
 * the invalid bytes. Free with atp_facets_free. */
void atp_facets_detect(const char *text, size_t len, struct atp_facets *out);
/* Sets the DID of every mention of handle (case-insensitive). Returns how
 * many were set. */
size_t atp_facets_set_did(struct atp_facets *f, const char *handle, const char *did);
void atp_facets_free(struct atp_facets *f);

/* The facets as the record's "facets" array (sorted by byte_start;
 * unresolved mentions left out), or NULL when there are none. */
cJSON *atp_facets_json(const struct atp_facets *f);

/* A strong reference {uri, cid}. */
struct atp_strong_ref {
	char uri[ATP_URI_MAX];
	char cid[ATP_CID_MAX];
};

struct atp_reply_ref {
	struct atp_strong_ref root;
	struct atp_strong_ref parent;
};

struct atp_post_in {
	const char *text; /* UTF-8, non-empty (no embeds here, so "" is refused) */
	size_t text_len;
	const struct atp_reply_ref *reply; /* NULL = top-level post */
	const struct atp_facets *facets;   /* NULL = none */
	const char *const *langs;          /* BCP-47 tags; may be NULL */
	size_t n_langs;
	int64_t created_at_ms; /* epoch ms → createdAt "YYYY-MM-DDTHH:MM:SS.mmmZ" */
	int64_t chain;         /* -1 = no ATP_FIELD_CHAIN */
	const char *idem_key;  /* NULL = no ATP_FIELD_KEY; at most 128 bytes */
};

/* Checks the text against the limits: 0, or -1 with err naming the count
 * and the limit (invalid UTF-8 and an empty text are refused too). */
int atp_post_check_text(const char *text, size_t len, struct ga_err *err);

/* The app.bsky.feed.post record ({"$type", "text", "createdAt", "reply"?,
 * "facets"?, "langs"?, "gaChain"?, "gaKey"?}). NULL with err when the text
 * is refused, a reply ref is not an at:// URI with a CID, a lang is not a
 * plausible BCP-47 tag, or there are more than ATP_POST_MAX_LANGS. */
cJSON *atp_post_record(const struct atp_post_in *in, struct ga_err *err);

/* {"$type": "app.bsky.feed.like", "subject": {uri, cid}, "createdAt"} with
 * the optional key field (idem_key may be NULL). */
cJSON *atp_like_record(const struct atp_strong_ref *subject, int64_t created_at_ms,
                       const char *idem_key, struct ga_err *err);
/* {"$type": "app.bsky.graph.follow", "subject": did, "createdAt"}. */
cJSON *atp_follow_record(const char *did, int64_t created_at_ms, struct ga_err *err);

/* The reply refs of a post that answers parent: root = the parent's own
 * record.reply.root when it has one (parent_record may be NULL), else the
 * parent itself. -1 with err when a URI or CID is missing or malformed. */
int atp_reply_ref_for(const struct atp_strong_ref *parent, const cJSON *parent_record,
                      struct atp_reply_ref *out, struct ga_err *err);

/* Reads {"reply": {"root": {uri, cid}, "parent": {uri, cid}}} (the outbound
 * extra for bluesky:reply:<did>, see port.h) or a record's "reply". -1 with
 * err naming the missing or malformed field. */
int atp_reply_ref_from_json(const cJSON *reply, struct atp_reply_ref *out, struct ga_err *err);

/* The chain in a record (ATP_FIELD_CHAIN), or -1 when absent or not a
 * non-negative integer. */
int64_t atp_record_chain(const cJSON *record);
/* The key in a record (ATP_FIELD_KEY), borrowed, or NULL. */
const char *atp_record_key(const cJSON *record);

/* --- identifiers ----------------------------------------------------------- */

/* Splits "at://<did>/<collection>/<rkey>" into its parts (each buffer may be
 * NULL; sizes ATP_DID_MAX, 128, ATP_RKEY_MAX). 0, or -1 with err. */
int atp_uri_parse(const char *uri, char *did, size_t did_cap, char *collection, size_t coll_cap,
                  char *rkey, size_t rkey_cap, struct ga_err *err);
/* Syntax checks (the atproto identifier rules, loosely): "did:<method>:…",
 * a domain-like handle, a record key. */
bool atp_valid_did(const char *s);
bool atp_valid_handle(const char *s);
bool atp_valid_rkey(const char *s);
/* "https://bsky.app/profile/<did>/post/<rkey>" for a post URI, or NULL.
 * Caller frees. */
char *atp_post_web_url(const char *uri);

#endif
