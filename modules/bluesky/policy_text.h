/*
 * policy_text — word matching for the phrase lists of the Bluesky policy
 * files (policy_*.c); not an API. ASCII case-insensitive; a word byte is a
 * letter, a digit, '_' or any byte >= 0x80 (so a phrase never matches
 * inside a non-ASCII word).
 */
#ifndef GA_MODULES_BLUESKY_POLICY_TEXT_H
#define GA_MODULES_BLUESKY_POLICY_TEXT_H

#include <stdbool.h>

bool bsky_word_byte(unsigned char c);
const char *bsky_skip_space(const char *s);
/* Does s start with the word w, followed by a word boundary (the end, or a
 * byte that cannot continue a word)? */
bool bsky_starts_with_word(const char *s, const char *w);
/* Does the phrase w occur in s, bounded by word boundaries on both sides? */
bool bsky_contains_word(const char *s, const char *w);
/* The same, bounded at the start only (a prefix: "loop" in "looping"). */
bool bsky_contains_word_prefix(const char *s, const char *w);

#endif
