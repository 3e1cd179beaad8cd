/*
 * phrase — see phrase.h. A tiny backtracking interpreter over the pattern
 * language; deliberately not a general regex engine.
 */
#include "common/phrase.h"

#include <string.h>

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static bool mid_word(const char *t, size_t n, size_t i)
{
	return i > 0 && i < n && phrase_is_word_byte((unsigned char)t[i - 1]) &&
	       phrase_is_word_byte((unsigned char)t[i]);
}

/* Matches p[0..pe) then the continuation k[0..ke) (the rest of the pattern
 * after an alternative group; groups do not nest, so it is one level deep)
 * against t from i. The end boundary is checked where the whole pattern
 * ends, so a failed boundary backtracks into the alternatives and the gap.
 * Returns the end offset or -1. */
static long match_here(const char *p, const char *pe, const char *k, const char *ke, const char *t,
                       size_t n, size_t i)
{
	for (;;) {
		if (p == pe) {
			if (k) {
				p = k;
				pe = ke;
				k = ke = NULL;
				continue;
			}
			return mid_word(t, n, i) ? -1 : (long)i;
		}
		char c = *p;
		if (c == ' ') {
			if (i >= n || !is_space((unsigned char)t[i]))
				return -1;
			while (i < n && is_space((unsigned char)t[i]))
				i++;
			p++;
		} else if (c == '~') {
			while (i < n && is_space((unsigned char)t[i]))
				i++;
			p++;
		} else if (c == '{') {
			const char *q = memchr(p, '}', (size_t)(pe - p));
			if (!q || k)
				return -1; /* unclosed or nested: never matches */
			const char *a = p + 1;
			for (;;) {
				const char *b = a;
				while (b < q && *b != '|')
					b++;
				long r = match_here(a, b, q + 1, pe, t, n, i);
				if (r >= 0)
					return r;
				if (b >= q)
					return -1;
				a = b + 1;
			}
		} else if (c == '<' && pe - p >= 3 && p[1] == 'w' && p[2] == '>') {
			if (i >= n || !phrase_is_word_byte((unsigned char)t[i]))
				return -1;
			while (i < n && phrase_is_word_byte((unsigned char)t[i]))
				i++;
			p += 3;
		} else if (c == '<' && pe - p >= 3 && p[1] == '*' && p[2] == '>') {
			for (size_t j = i; j <= n && j - i <= PHRASE_GAP_MAX; j++) {
				long r = match_here(p + 3, pe, k, ke, t, n, j);
				if (r >= 0)
					return r;
				if (j < n && t[j] == '\n')
					break;
			}
			return -1;
		} else {
			if (i >= n || t[i] != c)
				return -1;
			i++;
			p++;
		}
	}
}

long phrase_match_at(const char *pattern, const char *t, size_t n, size_t i)
{
	if (i > n || mid_word(t, n, i))
		return -1;
	return match_here(pattern, pattern + strlen(pattern), NULL, NULL, t, n, i);
}

static size_t first_non_space(const char *t, size_t n)
{
	size_t i = 0;
	while (i < n && is_space((unsigned char)t[i]))
		i++;
	return i;
}

bool phrase_find(const char *pattern, const char *t, size_t n, bool anchored)
{
	size_t start = first_non_space(t, n);
	size_t end = anchored ? start + 1 : n + 1;
	if (end > n + 1)
		end = n + 1;
	for (size_t i = start; i < end; i++)
		if (phrase_match_at(pattern, t, n, i) >= 0)
			return true;
	return false;
}

static bool excused(const struct phrase_entry *table, size_t n_table, int list, const char *t,
                    size_t n, size_t i)
{
	for (size_t x = 0; x < n_table; x++)
		if (table[x].list == list && table[x].except &&
		    phrase_match_at(table[x].pattern, t, n, i) >= 0)
			return true;
	return false;
}

/* Cheap pre-filter: can a pattern start with byte c? */
static bool may_start(const char *pattern, unsigned char c)
{
	unsigned char p0 = (unsigned char)pattern[0];
	if (p0 == '{' || p0 == '<' || p0 == '~' || p0 == ' ')
		return true;
	return p0 == c;
}

const char *phrase_table_find(const struct phrase_entry *table, size_t n_table, int list,
                              bool anchored, const char *t, size_t n, size_t *at, size_t *end)
{
	if (!t)
		return NULL;
	size_t start = 0, stop = n;
	if (anchored) {
		start = first_non_space(t, n);
		stop = start < n ? start + 1 : start;
	}
	for (size_t i = start; i < stop; i++) {
		if (mid_word(t, n, i))
			continue; /* no phrase can start mid-word */
		for (size_t x = 0; x < n_table; x++) {
			const struct phrase_entry *ph = &table[x];
			if (ph->list != list || ph->except ||
			    !may_start(ph->pattern, (unsigned char)t[i]))
				continue;
			long e = phrase_match_at(ph->pattern, t, n, i);
			if (e < 0 || excused(table, n_table, list, t, n, i))
				continue;
			if (at)
				*at = i;
			if (end)
				*end = (size_t)e;
			return ph->pattern;
		}
	}
	return NULL;
}
