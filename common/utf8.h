/*
 * utf8 — UTF-8 validation, grapheme counting and truncation, normalisation.
 *
 * Graphemes are extended grapheme clusters as utf8proc defines them (so a
 * family emoji or a flag is one). Truncation never cuts a cluster.
 * Normalisation for comparison: NFKC + Unicode case folding (utf8proc's
 * UTF8PROC_COMPAT | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD), which maps
 * full-width letters, ligatures and the like to their plain forms.
 */
#ifndef GA_COMMON_UTF8_H
#define GA_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Strict: rejects overlongs, surrogates (U+D800..DFFF), > U+10FFFF, truncated
 * sequences. Embedded NUL bytes are valid UTF-8 (callers decide). */
bool utf8_valid(const char *s, size_t len);

/* Number of extended grapheme clusters; invalid input counts each invalid
 * byte as one grapheme. */
size_t utf8_graphemes(const char *s, size_t len);

/* Byte length of the longest prefix of s that holds at most max_graphemes
 * whole clusters. */
size_t utf8_truncate_graphemes(const char *s, size_t len, size_t max_graphemes);

/* NFKC + case fold. Caller frees. NULL if s is not valid UTF-8. */
char *utf8_nfkc_casefold(const char *s, size_t len);

/* Decodes one code point at s[0..len); returns bytes consumed (1..4) and sets
 * *cp, or returns -1 on an invalid sequence (consume 1 byte to resync). */
int utf8_decode(const char *s, size_t len, unsigned int *cp);

/* JavaScript's WhiteSpace and LineTerminator set: what \s matches and
 * String.prototype.trim strips (TAB, LF, VT, FF, CR, SPACE, NBSP, U+1680,
 * U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, BOM). Peers written
 * in TypeScript judge blank and trimmed text by it. */
bool utf8_js_space(unsigned int cp);

/* The longest prefix of s[0..len) of at most max bytes that does not end
 * inside a UTF-8 sequence: the one byte cut. It looks at most 3 bytes back
 * for the sequence s[max] belongs to (a sequence is at most 4 bytes); a
 * longer run of continuation bytes is invalid anyway and is cut at max, so
 * garbage never costs more than 3 bytes of what was kept. */
size_t utf8_cut(const char *s, size_t len, size_t max);

/* s (NULL = "") copied into dst, cut with utf8_cut to at most cap - 1
 * bytes, NUL-terminated (cap > 0). Returns the bytes copied. */
size_t utf8_copy(char *dst, size_t cap, const char *s);

/* For text already cut where no following byte is known (a transformed
 * copy that hit its bound): the longest prefix of s[0..len) that does not
 * end with an incomplete sequence — a lead byte followed by fewer
 * continuation bytes than it announces — nor with an invalid lead byte
 * (0xF8..0xFF); such an end is dropped, again until the end is whole. */
size_t utf8_trim_partial(const char *s, size_t len);

/* JavaScript's view of a string (what a TypeScript peer's .length and
 * .slice count): its length in UTF-16 code units (a code point above
 * U+FFFF is two, an invalid byte one), and the byte length of its longest
 * prefix of at most max_units units that does not split a code point. */
size_t utf8_utf16_length(const char *s, size_t len);
size_t utf8_utf16_prefix(const char *s, size_t len, size_t max_units);

#endif
