/*
 * policy_feed — the pure rules of feed hygiene (bsky_feed.c; §6.9, §6.10):
 * the normalised text two posts are compared by, and which of our posts a
 * pruning pass deletes.
 *
 * Pure functions of their arguments (policy.h's rules). Bounds: texts are
 * compared on their first BSKY_NORM_MAX_BYTES bytes after normalisation;
 * at most BSKY_PRUNE_MAX_ITEMS feed items per pruning pass.
 */
#ifndef GA_MODULES_BLUESKY_POLICY_FEED_H
#define GA_MODULES_BLUESKY_POLICY_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BSKY_NORM_MAX_BYTES  200 /* §6.9: normalised prefix */
#define BSKY_PRUNE_MAX_ITEMS 100

/* ---- feed hygiene (§6.9, §6.10) ---------------------------------------------- */

/* §6.9 normalisation: lower-case ASCII, @handles, http(s) URLs and bare
 * domain/path URLs removed, whitespace collapsed, trimmed, first
 * BSKY_NORM_MAX_BYTES bytes (cut on a UTF-8 boundary). out must hold
 * BSKY_NORM_MAX_BYTES + 1. Returns the length. */
size_t bsky_normalize(const char *text, char *out);

struct bsky_feed_item {
	const char *uri;
	const char *text;
	int64_t created_ms;
	const char *root_uri; /* NULL: a top-level post */
	bool is_repost;       /* ignored by pruning */
};
enum bsky_prune_why { BSKY_PRUNE_KEEP, BSKY_PRUNE_DUPLICATE, BSKY_PRUNE_THANKS_CHAIN };
/* §6.10: exact duplicates (same normalised text in the same scope: top
 * level or one root) keep the oldest; own low-value closings in one root
 * keep the first. Items whose normalised text is empty are never pruned as
 * duplicates (a mention-only post is not a copy of another). why[i] gets
 * the verdict per item (n ≤ BSKY_PRUNE_MAX_ITEMS; beyond, KEEP). Returns the
 * number to delete. */
size_t bsky_prune_plan(const struct bsky_feed_item *items, size_t n, enum bsky_prune_why *why);
const char *bsky_prune_why_name(enum bsky_prune_why w);

#endif
