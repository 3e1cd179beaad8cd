/*
 * validator_text — normalisation and phrase matching. See validator_text.h.
 *
 * The matcher is common/phrase.h (the pattern language is documented in
 * validator_phrases.def): its only unbounded construct, <*>, is capped at
 * PHRASE_GAP_MAX bytes and one line, so a hostile 1 MiB candidate costs
 * O(len × phrases × gap) at worst.
 */
#include "modules/validator/validator_text.h"

#include <string.h>
#include <utf8proc.h>

#include "common/phrase.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

static const struct phrase_entry phrases[] = {
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
		/* JS \s but LF, which stays a line break for the patterns */
		return cp != 0x0A && utf8_js_space((unsigned int)cp) ? ' ' : cp;
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

/* --- matcher (common/phrase.h) ------------------------------------------ */

bool validator_phrase_find(enum validator_list list, const char *norm, size_t len,
                           const char **pattern, size_t *at)
{
	return validator_phrase_match(list, norm, len, pattern, at, NULL);
}

bool validator_phrase_match(enum validator_list list, const char *norm, size_t len,
                            const char **pattern, size_t *at, size_t *hit_end)
{
	if ((unsigned)list >= VALIDATOR_LIST_COUNT)
		return false;
	const char *p = phrase_table_find(phrases, sizeof phrases / sizeof phrases[0], (int)list,
	                                  list_anchored[list], norm, len, at, hit_end);
	if (p && pattern)
		*pattern = p;
	return p != NULL;
}
