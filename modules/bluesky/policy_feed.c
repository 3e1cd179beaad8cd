/* The pure rules of feed hygiene. See policy_feed.h. */
#include "modules/bluesky/policy_feed.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/bluesky/policy_notes.h"
#include "modules/bluesky/policy_text.h"

/* ---- feed hygiene -------------------------------------------------------------------------- */

static bool bare_url_at(const char *p)
{
	/* domain.tld/path: letters/digits/-/. then a dot-label, then '/' */
	const char *q = p;
	bool dot = false;
	while (*q && (isalnum((unsigned char)*q) || *q == '-' || *q == '.')) {
		if (*q == '.')
			dot = true;
		q++;
	}
	return dot && *q == '/' && q > p;
}

size_t bsky_normalize(const char *text, char *out)
{
	size_t o = 0;
	bool space = true; /* collapse leading whitespace */
	const char *p = text ? text : "";
	while (*p && o < BSKY_NORM_MAX_BYTES) {
		unsigned char c = (unsigned char)*p;
		bool at_start = p == text || isspace((unsigned char)p[-1]) || p[-1] == '(';
		if (c == '@' && (isalnum((unsigned char)p[1]) || p[1] == '_')) {
			p++;
			while (*p &&
			       (isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == '-'))
				p++;
			continue;
		}
		if ((strncasecmp(p, "http://", 7) == 0 || strncasecmp(p, "https://", 8) == 0) ||
		    (at_start && bare_url_at(p))) {
			while (*p && !isspace((unsigned char)*p))
				p++;
			continue;
		}
		if (isspace(c)) {
			if (!space) {
				out[o++] = ' ';
				space = true;
			}
			p++;
			continue;
		}
		out[o++] = (char)tolower(c);
		space = false;
		p++;
	}
	while (o && out[o - 1] == ' ')
		o--;
	/* do not end inside a UTF-8 sequence (nor on a stray lead byte of
	 * invalid input) */
	o = utf8_trim_partial(out, o);
	out[o] = 0;
	return o;
}

static int cmp_created(const struct bsky_feed_item *items, size_t a, size_t b)
{
	if (items[a].created_ms != items[b].created_ms)
		return items[a].created_ms < items[b].created_ms ? -1 : 1;
	return a < b ? -1 : (a > b);
}

static bool same_scope(const struct bsky_feed_item *x, const struct bsky_feed_item *y)
{
	if (!x->root_uri || !y->root_uri)
		return !x->root_uri && !y->root_uri;
	return strcmp(x->root_uri, y->root_uri) == 0;
}

size_t bsky_prune_plan(const struct bsky_feed_item *items, size_t n, enum bsky_prune_why *why)
{
	size_t lim = n < BSKY_PRUNE_MAX_ITEMS ? n : BSKY_PRUNE_MAX_ITEMS;
	char(*norm)[BSKY_NORM_MAX_BYTES + 1] = xcalloc(lim ? lim : 1, sizeof *norm);
	for (size_t i = 0; i < n; i++)
		why[i] = BSKY_PRUNE_KEEP;
	for (size_t i = 0; i < lim; i++)
		bsky_normalize(items[i].text, norm[i]);
	size_t del = 0;
	/* pass 1: exact duplicates, keep the oldest of each group */
	for (size_t i = 0; i < lim; i++) {
		if (items[i].is_repost || !norm[i][0])
			continue;
		for (size_t j = 0; j < lim; j++) {
			if (j == i || items[j].is_repost || !same_scope(&items[i], &items[j]) ||
			    strcmp(norm[i], norm[j]) != 0)
				continue;
			if (cmp_created(items, j, i) < 0) { /* an older copy exists */
				why[i] = BSKY_PRUNE_DUPLICATE;
				del++;
				break;
			}
		}
	}
	/* pass 2: thank-you chains per root, keep the first closing */
	for (size_t i = 0; i < lim; i++) {
		if (why[i] != BSKY_PRUNE_KEEP || items[i].is_repost || !items[i].root_uri ||
		    !bsky_is_low_value_closing(items[i].text))
			continue;
		for (size_t j = 0; j < lim; j++) {
			if (j == i || items[j].is_repost || !items[j].root_uri ||
			    why[j] == BSKY_PRUNE_DUPLICATE || !same_scope(&items[i], &items[j]) ||
			    !bsky_is_low_value_closing(items[j].text))
				continue;
			if (cmp_created(items, j, i) < 0) {
				why[i] = BSKY_PRUNE_THANKS_CHAIN;
				del++;
				break;
			}
		}
	}
	free(norm);
	return del;
}

const char *bsky_prune_why_name(enum bsky_prune_why w)
{
	switch (w) {
	case BSKY_PRUNE_DUPLICATE:
		return "duplicate";
	case BSKY_PRUNE_THANKS_CHAIN:
		return "thank-you-chain";
	default:
		return "keep";
	}
}
