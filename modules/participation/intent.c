/*
 * intent — the host-intent classifier's Layer 1 and the matcher behind it.
 * See intent.h for the contract, intent_phrases.def for the data.
 */
#include "modules/participation/intent.h"

#include <string.h>
#include <utf8proc.h>

#include "common/phrase.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

enum intent_list {
#define ILIST(id, anchored) INTENT_LIST_##id,
#include "modules/participation/intent_phrases.def"
	INTENT_LIST_COUNT
};

static const bool list_anchored[INTENT_LIST_COUNT] = {
#define ILIST(id, anchored) [INTENT_LIST_##id] = (anchored),
#include "modules/participation/intent_phrases.def"
};

static const struct phrase_entry phrases[] = {
#define IPHRASE(id, p) {INTENT_LIST_##id, false, p},
#define IEXCEPT(id, p) {INTENT_LIST_##id, true, p},
#include "modules/participation/intent_phrases.def"
};

/* --- normalisation ----------------------------------------------------- */

static utf8proc_int32_t apostrophe_to_ascii(utf8proc_int32_t cp)
{
	switch (cp) {
	case 0x2018:
	case 0x2019:
	case 0x201B:
	case 0x02BC:
	case 0x2032:
	case 0xFF07:
		return '\'';
	default:
		/* JS \s but LF, which stays a line break for the patterns */
		return cp != 0x0A && utf8_js_space((unsigned int)cp) ? ' ' : cp;
	}
}

char *part_text_normalize(const char *s, size_t len, size_t *out_len)
{
	if (!s)
		len = 0;
	len = utf8_cut(s, len, INTENT_MAX_BYTES); /* the bound, on a code-point boundary */
	/* Invalid bytes and NULs → ' ' so utf8proc_map (which refuses invalid
	 * input) always succeeds and one bad byte cannot hide the message. */
	struct strbuf clean = {0};
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
	utf8proc_uint8_t *mapped = NULL;
	utf8proc_ssize_t mlen = utf8proc_map(
	        (const utf8proc_uint8_t *)sb_cstr(&clean), (utf8proc_ssize_t)clean.len, &mapped,
	        UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD);
	const utf8proc_uint8_t *src = mapped;
	if (mlen < 0) {
		src = (const utf8proc_uint8_t *)sb_cstr(&clean);
		mlen = (utf8proc_ssize_t)clean.len;
	}
	struct strbuf out = {0};
	for (utf8proc_ssize_t j = 0; j < mlen;) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t n = utf8proc_iterate(src + j, mlen - j, &cp);
		if (n <= 0) {
			j++;
			continue;
		}
		utf8proc_int32_t m = apostrophe_to_ascii(cp);
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
	if (!out.buf)
		return xstrdup("");
	return sb_detach(&out);
}

/* --- matcher (common/phrase.h) ------------------------------------------ */

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

bool part_pattern_match_at(const char *pattern, const char *t, size_t n, size_t i)
{
	return phrase_match_at(pattern, t, n, i) >= 0;
}

bool part_pattern_find(const char *pattern, const char *t, size_t n, bool anchored)
{
	return phrase_find(pattern, t, n, anchored);
}

/* First phrase of `list` that matches t (at the first non-space byte for
 * anchored lists) and is not excused; NULL if none. */
static const char *list_find(enum intent_list list, const char *t, size_t n)
{
	return phrase_table_find(phrases, sizeof phrases / sizeof phrases[0], (int)list,
	                         list_anchored[list], t, n, NULL, NULL);
}

/* --- classifier -------------------------------------------------------- */

static void set(struct part_intent_result *out, enum part_intent in, bool ambiguous,
                const char *rule, const char *pattern)
{
	out->intent = in;
	out->ambiguous = ambiguous;
	out->rule = rule;
	out->pattern = pattern ? pattern : "";
}

void part_intent_classify(const char *text, size_t len, struct part_intent_result *out)
{
	size_t n;
	char *t = part_text_normalize(text, len, &n);
	/* Trim both ends: D6 and D9 look at the last character. */
	size_t s = 0;
	while (s < n && is_space((unsigned char)t[s]))
		s++;
	while (n > s && is_space((unsigned char)t[n - 1]))
		n--;
	const char *tt = t + s;
	size_t tn = n - s;
	bool has_q = memchr(tt, '?', tn) != NULL;
	bool ends_q = tn > 0 && tt[tn - 1] == '?';
	const char *p;
	bool a0 = list_find(INTENT_LIST_A0, tt, tn) != NULL;

	if ((p = list_find(INTENT_LIST_F, tt, tn))) {
		set(out, PART_INTENT_FOLLOW_UP, false, "F", p);
	} else if ((p = list_find(INTENT_LIST_F_WEAK, tt, tn)) && !a0 &&
	           !list_find(INTENT_LIST_A1, tt, tn) && !list_find(INTENT_LIST_A2, tt, tn)) {
		set(out, PART_INTENT_FOLLOW_UP, false, "F", p);
	} else if ((p = list_find(INTENT_LIST_A2, tt, tn))) {
		/* before the questions: a polite request ends in '?' too */
		set(out, PART_INTENT_ACTION, false, "A2", p);
	} else if (has_q && (p = list_find(INTENT_LIST_D1, tt, tn))) {
		set(out, PART_INTENT_DISCUSSION, false, "D1", p);
	} else if ((p = list_find(INTENT_LIST_D2, tt, tn))) {
		set(out, PART_INTENT_DISCUSSION, false, "D2", p);
	} else if ((p = list_find(INTENT_LIST_D3, tt, tn))) {
		set(out, PART_INTENT_DISCUSSION, false, "D3", p);
	} else if (has_q && (p = list_find(INTENT_LIST_D4, tt, tn))) {
		set(out, PART_INTENT_DISCUSSION, false, "D4", p);
	} else if (has_q && (p = list_find(INTENT_LIST_D5, tt, tn))) {
		set(out, PART_INTENT_DISCUSSION, false, "D5", p);
	} else if (ends_q && (p = list_find(INTENT_LIST_D6, tt, tn))) {
		set(out, PART_INTENT_DISCUSSION, false, "D6", p);
	} else if (has_q && (p = list_find(INTENT_LIST_D7, tt, tn))) {
		set(out, PART_INTENT_DISCUSSION, false, "D7", p);
	} else if ((p = list_find(INTENT_LIST_D8, tt, tn))) {
		set(out, PART_INTENT_DISCUSSION, false, "D8", p);
	} else if (ends_q && !a0) {
		set(out, PART_INTENT_DISCUSSION, false, "D9", NULL);
	} else if (!a0 && (part_pattern_find("http://", tt, tn, false) ||
	                   part_pattern_find("https://", tt, tn, false))) {
		set(out, PART_INTENT_DISCUSSION, false, "D10", NULL);
	} else if ((p = list_find(INTENT_LIST_A0, tt, tn))) {
		set(out, PART_INTENT_ACTION, false, "A0", p);
	} else if ((p = list_find(INTENT_LIST_A1, tt, tn))) {
		set(out, PART_INTENT_ACTION, false, "A1", p);
	} else if ((p = list_find(INTENT_LIST_A3, tt, tn))) {
		set(out, PART_INTENT_ACTION, false, "A3", p);
	} else {
		set(out, PART_INTENT_DISCUSSION, true, "none", NULL);
	}
	free(t);
}

bool part_text_promises(const char *text, size_t len)
{
	size_t n;
	char *t = part_text_normalize(text, len, &n);
	bool hit = list_find(INTENT_LIST_PROMISE, t, n) != NULL;
	free(t);
	return hit;
}

/* --- Layer 2 ----------------------------------------------------------- */

int part_intent_parse_reply(const char *reply, enum part_intent *out)
{
	static const struct {
		const char *w1, *w2;
		enum part_intent in;
	} labels[] = {
	        {"action", "request", PART_INTENT_ACTION},
	        {"follow", "up", PART_INTENT_FOLLOW_UP},
	        {"discussion", NULL, PART_INTENT_DISCUSSION},
	};
	if (!reply)
		return -1;
	size_t n;
	char *t = part_text_normalize(reply, strlen(reply), &n);
	int rc = -1;
	for (size_t i = 0; i < n && rc < 0; i++) {
		if (i > 0 && phrase_is_word_byte((unsigned char)t[i - 1]))
			continue;
		for (size_t l = 0; l < sizeof labels / sizeof labels[0]; l++) {
			size_t a = strlen(labels[l].w1);
			if (i + a > n || memcmp(t + i, labels[l].w1, a) != 0)
				continue;
			size_t j = i + a;
			if (labels[l].w2) {
				if (j >= n || (t[j] != '_' && t[j] != ' ' && t[j] != '-'))
					continue;
				j++;
				size_t b = strlen(labels[l].w2);
				if (j + b > n || memcmp(t + j, labels[l].w2, b) != 0)
					continue;
				j += b;
			}
			if (j < n && phrase_is_word_byte((unsigned char)t[j]))
				continue;
			*out = labels[l].in;
			rc = 0;
			break;
		}
	}
	free(t);
	return rc;
}

const char *part_intent_name(enum part_intent i)
{
	switch (i) {
	case PART_INTENT_ACTION:
		return "action_request";
	case PART_INTENT_FOLLOW_UP:
		return "follow_up";
	case PART_INTENT_DISCUSSION:
		break;
	}
	return "discussion";
}
