/*
 * etag — the GitHub client's cache of conditional GETs: for each URL it
 * fetched with an ETag, the tag, the body and the Link header of that
 * answer. The next GET of the URL sends If-None-Match with the tag; a 304
 * (which GitHub does not count against the rate limit) is answered from
 * the stored body, so polling something that did not change costs nothing.
 *
 * Bounds: at most `entries` URLs and `max_bytes` of stored answers (bodies,
 * links, tags and URLs counted); an answer larger than max_bytes / 4 is not
 * stored. At a bound the least recently used entries go first. Lookups
 * refresh recency.
 *
 * Idle entries: an entry not found or stored during the cache's last
 * `max_idle` operations (finds and puts; a GET makes two) is dropped at the
 * next operation. Only a URL asked for again saves anything, and the URLs
 * asked for again are the polled ones, each asked once per round of polls;
 * the one-off reads (a closed PR's files, a finished task's issue) would
 * otherwise stay until `entries` newer URLs push them out, holding memory
 * for nothing. max_idle = 0: no idle bound.
 *
 * Pointers returned by gh_etag_find stay valid until the next call that
 * changes the cache (put, drop, free). Pure data structure: no I/O, no
 * clock; one thread.
 */
#ifndef GA_ADAPTERS_GITHUB_ETAG_H
#define GA_ADAPTERS_GITHUB_ETAG_H

#include <stdbool.h>
#include <stddef.h>

#define GH_ETAG_ENTRIES   256
#define GH_ETAG_MAX_BYTES ((size_t)8 * 1024 * 1024)
#define GH_ETAG_TAG_MAX   256 /* longer ETag headers are not stored */
/* 512 GETs: a round of polls over 256 URLs twice over. */
#define GH_ETAG_MAX_IDLE ((size_t)1024)

struct gh_etags;

struct gh_etag_entry {
	const char *tag;
	const char *body;
	size_t body_len;
	const char *link; /* NULL when the answer had none */
};

struct gh_etags *gh_etags_new(size_t entries, size_t max_bytes, size_t max_idle);
void gh_etags_free(struct gh_etags *c); /* NULL accepted */
/* The entry for url, or false. */
bool gh_etag_find(struct gh_etags *c, const char *url, struct gh_etag_entry *out);
/* Stores (or replaces) the answer for url. Returns false when it was not
 * stored (too large, a tag over GH_ETAG_TAG_MAX, an empty tag); a previous
 * entry for url is dropped then. */
bool gh_etag_put(struct gh_etags *c, const char *url, const char *tag, const char *body,
                 size_t body_len, const char *link);
void gh_etag_drop(struct gh_etags *c, const char *url);
size_t gh_etag_count(const struct gh_etags *c);
size_t gh_etag_bytes(const struct gh_etags *c);

#endif
