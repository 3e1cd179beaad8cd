/*
 * utf8 — see utf8.h.
 *
 * utf8_valid() runs on every inbound WebSocket message, so it is a
 * hand-written decoder following the well-formed byte sequence table of
 * Unicode 15 §3.9 (Table 3-7) with an 8-bytes-at-a-time ASCII fast path.
 * Graphemes and normalisation are delegated to utf8proc.
 */
#include "common/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "common/xalloc.h"

bool utf8_js_space(unsigned int cp)
{
	return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0xA0 || cp == 0x1680 ||
	       (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
	       cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

int utf8_decode(const char *s, size_t len, unsigned int *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	if (len == 0)
		return -1;
	unsigned c = p[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	int n;
	unsigned lo = 0x80, hi = 0xBF, v;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0; /* overlong below U+0800 */
		else if (c == 0xED)
			hi = 0x9F; /* surrogates U+D800..DFFF */
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90; /* overlong below U+10000 */
		else if (c == 0xF4)
			hi = 0x8F; /* above U+10FFFF */
	} else {
		return -1; /* continuation byte, C0/C1 overlong lead, F5..FF */
	}
	if (len < (size_t)n)
		return -1;
	unsigned c1 = p[1];
	if (c1 < lo || c1 > hi)
		return -1;
	v = (v << 6) | (c1 & 0x3F);
	for (int i = 2; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return -1;
		v = (v << 6) | (p[i] & 0x3F);
	}
	*cp = v;
	return n;
}

bool utf8_valid(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		/* ASCII fast path: most chat text is mostly ASCII. */
		while (i + 8 <= len) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if (w & 0x8080808080808080ULL)
				break;
			i += 8;
		}
		if (i >= len)
			break;
		if ((unsigned char)s[i] < 0x80) {
			i++;
			continue;
		}
		unsigned cp;
		int n = utf8_decode(s + i, len - i, &cp);
		if (n < 0)
			return false;
		i += (size_t)n;
	}
	return true;
}

/*
 * Walks clusters: calls back with the byte offset of each cluster start.
 * An invalid byte is a cluster of its own (and breaks before and after), as
 * utf8.h promises. Returns the number of clusters seen before `stop_at`
 * clusters (or all of them), and in *end_off the byte offset where cluster
 * number `stop_at` would begin.
 */
static size_t walk_clusters(const char *s, size_t len, size_t stop_at, size_t *end_off)
{
	size_t count = 0;
	size_t i = 0;
	utf8proc_int32_t state = 0;
	utf8proc_int32_t prev = -1; /* -1: at start or after an invalid byte */
	while (i < len) {
		unsigned cp;
		int n = utf8_decode(s + i, len - i, &cp);
		bool brk;
		if (n < 0) {
			brk = true;
			n = 1;
		} else if (prev < 0) {
			brk = true;
		} else {
			brk = utf8proc_grapheme_break_stateful(prev, (utf8proc_int32_t)cp, &state);
		}
		if (brk) {
			if (count == stop_at) {
				*end_off = i;
				return count;
			}
			count++;
		}
		if (n == 1 && (unsigned char)s[i] >= 0x80) {
			/* invalid byte: force a break before whatever follows */
			prev = -1;
			state = 0;
		} else {
			if (prev < 0)
				state = 0;
			prev = (utf8proc_int32_t)cp;
		}
		i += (size_t)n;
	}
	*end_off = len;
	return count;
}

size_t utf8_graphemes(const char *s, size_t len)
{
	size_t end;
	return walk_clusters(s, len, SIZE_MAX, &end);
}

size_t utf8_truncate_graphemes(const char *s, size_t len, size_t max_graphemes)
{
	size_t end;
	walk_clusters(s, len, max_graphemes, &end);
	return end;
}

char *utf8_nfkc_casefold(const char *s, size_t len)
{
	if (!utf8_valid(s, len))
		return NULL;
	if (len == 0)
		return xstrdup("");
	if (len > (size_t)PTRDIFF_MAX)
		return NULL;
	utf8proc_uint8_t *out = NULL;
	utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &out,
	                                  UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE |
	                                          UTF8PROC_CASEFOLD);
	if (n < 0) {
		free(out);
		return NULL;
	}
	return (char *)out;
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	/* the lead byte of the sequence s[max] belongs to (at most 3 back) */
	for (size_t back = 0; back < 4 && back <= max; back++) {
		unsigned char c = (unsigned char)s[max - back];
		if ((c & 0xC0) == 0x80)
			continue;
		size_t seq = c < 0x80             ? 1
		             : (c & 0xE0) == 0xC0 ? 2
		             : (c & 0xF0) == 0xE0 ? 3
		             : (c & 0xF8) == 0xF0 ? 4
		                                  : 1;
		/* a sequence that would run past max is left out whole */
		return max - back + seq > max ? max - back : max;
	}
	return max;
}

size_t utf8_copy(char *dst, size_t cap, const char *s)
{
	if (!s)
		s = "";
	size_t n = utf8_cut(s, strnlen(s, cap), cap - 1);
	memcpy(dst, s, n);
	dst[n] = '\0';
	return n;
}

size_t utf8_trim_partial(const char *s, size_t len)
{
	for (;;) {
		size_t k = len;
		while (k && ((unsigned char)s[k - 1] & 0xC0) == 0x80)
			k--;
		if (k == 0)
			return len;
		unsigned char lead = (unsigned char)s[k - 1];
		if (lead < 0x80)
			return len;
		size_t need = lead >= 0xF8 ? SIZE_MAX : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
		if (len - (k - 1) >= need)
			return len;
		len = k - 1;
	}
}

size_t utf8_utf16_length(const char *s, size_t len)
{
	size_t units = 0, i = 0;
	while (i < len) {
		unsigned int cp;
		int n = utf8_decode(s + i, len - i, &cp);
		if (n < 0) {
			units++;
			i++;
			continue;
		}
		units += cp > 0xFFFF ? 2 : 1;
		i += (size_t)n;
	}
	return units;
}

size_t utf8_utf16_prefix(const char *s, size_t len, size_t max_units)
{
	size_t units = 0, i = 0;
	while (i < len) {
		unsigned int cp;
		int n = utf8_decode(s + i, len - i, &cp);
		size_t u = 1, step = 1;
		if (n > 0) {
			u = cp > 0xFFFF ? 2 : 1;
			step = (size_t)n;
		}
		if (units + u > max_units)
			break;
		units += u;
		i += step;
	}
	return i;
}
