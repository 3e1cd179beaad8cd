/* Word matching for the Bluesky policy's phrase lists. See policy_text.h. */
#include "modules/bluesky/policy_text.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

bool bsky_word_byte(unsigned char c)
{
	return isalnum(c) || c == '_' || c >= 0x80;
}

const char *bsky_skip_space(const char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

/* Case-insensitive: does s start with the ASCII word w, followed by a word
 * boundary (end, or a byte that cannot continue a word)? */
bool bsky_starts_with_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	if (strncasecmp(s, w, n) != 0)
		return false;
	return !bsky_word_byte((unsigned char)s[n]);
}

/* Case-insensitive word-bounded search of phrase w in s. */
bool bsky_contains_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = s; *p; p++) {
		if (p != s && bsky_word_byte((unsigned char)p[-1]))
			continue;
		if (strncasecmp(p, w, n) == 0 && !bsky_word_byte((unsigned char)p[n]))
			return true;
	}
	return false;
}

/* Case-insensitive search without boundary at the end (for prefixes like
 * "loop" in "looping"). */
bool bsky_contains_word_prefix(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = s; *p; p++) {
		if (p != s && bsky_word_byte((unsigned char)p[-1]))
			continue;
		if (strncasecmp(p, w, n) == 0)
			return true;
	}
	return false;
}
