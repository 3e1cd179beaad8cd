/*
 * phrase — the phrase-pattern matcher behind the phrase tables of the
 * intent classifier (modules/participation/intent_phrases.def) and the
 * validator (modules/validator/validator_phrases.def): one pattern
 * language, one matcher, one way to search a table with exceptions.
 *
 * Pattern language (matched against text the caller normalised: case
 * folded, typographic apostrophes mapped to ', Unicode spaces to ' '):
 *   a b      literal text; one space matches one or more whitespace
 *   ~        zero or more whitespace
 *   {a|b|c}  one of the alternatives (may contain spaces; {|x } = optional
 *            x); groups do not nest (a nested or unclosed group never
 *            matches)
 *   <w>      one ASCII word [A-Za-z0-9_]+
 *   <*>      anything on the same line, at most PHRASE_GAP_MAX bytes (lazy)
 * A match needs an ASCII word boundary where it starts and where it ends
 * (JavaScript's \b ... \b): "do" is not found in "does". A boundary that
 * fails at the end backtracks into the alternatives and the gap, as a
 * regular expression would ("how {do|does}" matches "how does it").
 *
 * Tables: an entry belongs to a list (the caller's enum) and is a phrase
 * or an exception. A phrase's hit is discarded when an exception of its
 * list matches at the same position ("let me" stays a promise, "let me
 * know" is excused). An anchored list is searched only at the first
 * non-space byte.
 *
 * Bounds: the only unbounded construct, <*>, is capped at PHRASE_GAP_MAX
 * bytes and one line, so a search costs at most O(len × phrases × gap).
 * Nothing allocates; texts need not be NUL-terminated.
 */
#ifndef GA_COMMON_PHRASE_H
#define GA_COMMON_PHRASE_H

#include <stdbool.h>
#include <stddef.h>

/* Longest stretch "<*>" may cover, in bytes; it never crosses a newline. */
#define PHRASE_GAP_MAX 120

struct phrase_entry {
	int list;    /* the caller's list id */
	bool except; /* an exception of the list, not a phrase */
	const char *pattern;
};

/* ASCII word character as JavaScript's \w: [A-Za-z0-9_]. */
static inline bool phrase_is_word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Does pattern match t[0..n) starting at byte i, with word boundaries?
 * Returns the byte offset just past the match, or -1. */
long phrase_match_at(const char *pattern, const char *t, size_t n, size_t i);

/* Does pattern match anywhere in t[0..n) (anchored: only at the first
 * non-space byte)? */
bool phrase_find(const char *pattern, const char *t, size_t n, bool anchored);

/* The first phrase of `list` in table[0..n_table) (in text order, then
 * table order) that matches t[0..n) and is not excused by an exception of
 * the list at the same position. Returns the phrase's pattern and sets
 * *at / *end (each may be NULL) to where the hit starts and ends; NULL
 * when there is none. */
const char *phrase_table_find(const struct phrase_entry *table, size_t n_table, int list,
                              bool anchored, const char *t, size_t n, size_t *at, size_t *end);

#endif
