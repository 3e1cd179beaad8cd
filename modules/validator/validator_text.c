/*
 * validator_text — normalisation and phrase matching. See validator_text.h.
 *
 * The matcher is a tiny backtracking interpreter over the pattern language
 * documented in validator_phrases.def. It is deliberately not a general
 * regex engine: the only unbounded construct, <*>, is capped at
 * VALIDATOR_PHRASE_GAP_MAX bytes and one line, so a hostile 1 MiB candidate
 * costs O(len × phrases × gap) at worst.
 */
#include "modules/validator/validator_text.h"

#include <string.h>
#include <utf8proc.h>

#include "common/strbuf.h"
#include "common/xalloc.h"

struct phrase {
	enum validator_list list;
	bool except;
	const char *pattern;
};

static const struct phrase phrases[] = {
#define VPHRASE(id, pat) {VALIDATOR_LIST_##id, false, pat},
#define VEXCEPT(id, pat) {VALIDATOR_LIST_##id, true, pat},
#include "modules/validator/validator_phrases.def"
};

static const bool list_anchored[VALIDATOR_LIST_COUNT] = {
#define VLIST(id, anchored) [VALIDATOR_LIST_##id] = (anchored),
#include "modules/validator/validator_phrases.def"
};

static const char *const list_names[VALIDATOR_LIST_COUNT] = {
#define VLIST(id, anchored) [VALIDATOR_LIST_##id] = #id,
#include "modules/validator/validator_phrases.def"
};

const char *validator_list_name(enum validator_list list)
{
	return (unsigned)list < VALIDATOR_LIST_COUNT ? list_names[list] : "?";
}

/* --- normalisation ----------------------------------------------------- */

/* The JS \s set (§0) minus LF, which stays a line break for <*> and the
 * list check. */
static bool is_js_space_cp(utf8proc_int32_t cp)
{
	switch (cp) {
	case 0x09:
	case 0x0B:
	case 0x0C:
	case 0x0D:
	case 0x20:
	case 0xA0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202F:
	case 0x205F:
	case 0x3000:
	case 0xFEFF:
		return true;
	default:
		return cp >= 0x2000 && cp <= 0x200A;
	}
}

static utf8proc_int32_t typographic_to_ascii(utf8proc_int32_t cp)
{
	switch (cp) {
	case 0x2018:
	case 0x2019:
	case 0x201A:
	case 0x201B:
	case 0x02BC:
	case 0x2032:
	case 0xFF07:
		return '\'';
	case 0x201C:
	case 0x201D:
	case 0x201E:
	case 0x201F:
	case 0x00AB:
	case 0x00BB:
	case 0x2033:
	case 0xFF02:
		return '"';
	case 0x2010:
	case 0x2011:
	case 0x2012:
	case 0x2013:
	case 0x2014:
	case 0x2015:
	case 0x2212:
	case 0xFE58:
	case 0xFE63:
	case 0xFF0D:
		return '-';
	default:
		return is_js_space_cp(cp) ? ' ' : cp;
	}
}

char *validator_text_normalize(const char *s, size_t len, size_t *out_len)
{
	/* 1. Invalid bytes → ' ' so utf8proc_map (which refuses invalid input)
	 *    always succeeds and one bad byte cannot hide the whole message. */
	struct strbuf clean = {0};
	sb_init(&clean, 0);
	size_t i = 0;
	while (i < len) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
		                                      (utf8proc_ssize_t)(len - i), &cp);
		if (n <= 0 || cp == 0) {
			sb_putc(&clean, ' ');
			i++;
			continue;
		}
		sb_append(&clean, s + i, (size_t)n);
		i += (size_t)n;
	}

	/* 2. NFKC + case fold. */
	utf8proc_uint8_t *mapped = NULL;
	utf8proc_ssize_t mlen = utf8proc_map(
	        (const utf8proc_uint8_t *)sb_cstr(&clean), (utf8proc_ssize_t)clean.len, &mapped,
	        UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD);
	const utf8proc_uint8_t *src = mapped;
	if (mlen < 0) {
		/* Cannot happen on cleaned input short of OOM; fall back to the
		 * cleaned bytes rather than failing the validation. */
		src = (const utf8proc_uint8_t *)sb_cstr(&clean);
		mlen = (utf8proc_ssize_t)clean.len;
	}

	/* 3. Typographic punctuation and spaces → ASCII. */
	struct strbuf out = {0};
	sb_init(&out, 0);
	for (utf8proc_ssize_t j = 0; j < mlen;) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t n = utf8proc_iterate(src + j, mlen - j, &cp);
		if (n <= 0) {
			j++;
			continue;
		}
		utf8proc_int32_t m = typographic_to_ascii(cp);
		if (m != cp)
			sb_putc(&out, (char)m);
		else
			sb_append(&out, src + j, (size_t)n);
		j += n;
	}
	free(mapped);
	sb_free(&clean);
	if (out_len)
		*out_len = out.len;
	return sb_detach(&out);
}

/* --- matcher ----------------------------------------------------------- */

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Matches pattern p[0..pe) then continuation k[0..ke) (the rest of the
 * pattern after an alternative group) against t from i. Returns the end
 * offset or -1. Alternative groups do not nest, so the continuation is at
 * most one level deep. */
static long match_here(const char *p, const char *pe, const char *k, const char *ke, const char *t,
                       size_t n, size_t i)
{
	for (;;) {
		if (p == pe) {
			if (!k)
				return (long)i;
			p = k;
			pe = ke;
			k = ke = NULL;
			continue;
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
				return -1; /* malformed table entry: never matches */
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
			if (i >= n || !validator_is_word_byte((unsigned char)t[i]))
				return -1;
			while (i < n && validator_is_word_byte((unsigned char)t[i]))
				i++;
			p += 3;
		} else if (c == '<' && pe - p >= 3 && p[1] == '*' && p[2] == '>') {
			for (size_t j = i; j <= n && j - i <= VALIDATOR_PHRASE_GAP_MAX; j++) {
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

/* A hit needs an ASCII word boundary on both sides (§0: \b ... \b). */
static long match_at(const char *pattern, const char *t, size_t n, size_t i)
{
	if (i > 0 && i < n && validator_is_word_byte((unsigned char)t[i - 1]) &&
	    validator_is_word_byte((unsigned char)t[i]))
		return -1;
	long r = match_here(pattern, pattern + strlen(pattern), NULL, NULL, t, n, i);
	if (r < 0)
		return -1;
	size_t e = (size_t)r;
	if (e > i && e < n && validator_is_word_byte((unsigned char)t[e - 1]) &&
	    validator_is_word_byte((unsigned char)t[e]))
		return -1;
	return r;
}

static bool excused(enum validator_list list, const char *t, size_t n, size_t i)
{
	for (size_t x = 0; x < sizeof phrases / sizeof phrases[0]; x++) {
		if (phrases[x].list == list && phrases[x].except &&
		    match_at(phrases[x].pattern, t, n, i) >= 0)
			return true;
	}
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

bool validator_phrase_find(enum validator_list list, const char *norm, size_t len,
                           const char **pattern, size_t *at)
{
	return validator_phrase_match(list, norm, len, pattern, at, NULL);
}

bool validator_phrase_match(enum validator_list list, const char *norm, size_t len,
                            const char **pattern, size_t *at, size_t *hit_end)
{
	if ((unsigned)list >= VALIDATOR_LIST_COUNT || !norm)
		return false;
	size_t start = 0, end = len;
	if (list_anchored[list]) {
		while (start < len && is_space((unsigned char)norm[start]))
			start++;
		end = start + 1 <= len ? start + 1 : len;
	}
	for (size_t i = start; i < end; i++) {
		if (i > 0 && validator_is_word_byte((unsigned char)norm[i - 1]) &&
		    validator_is_word_byte((unsigned char)norm[i]))
			continue; /* mid-word: no phrase can start here */
		for (size_t x = 0; x < sizeof phrases / sizeof phrases[0]; x++) {
			const struct phrase *ph = &phrases[x];
			if (ph->list != list || ph->except ||
			    !may_start(ph->pattern, (unsigned char)norm[i]))
				continue;
			long e = match_at(ph->pattern, norm, len, i);
			if (e < 0)
				continue;
			if (excused(list, norm, len, i))
				continue;
			if (pattern)
				*pattern = ph->pattern;
			if (at)
				*at = i;
			if (hit_end)
				*hit_end = (size_t)e;
			return true;
		}
	}
	return false;
}
