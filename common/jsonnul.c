/*
 * jsonnul — see jsonnul.h.
 */
#include "common/jsonnul.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/xalloc.h"

/* The code unit of the escape "\\uXXXX" at buf[i], or -1 when there is
 * none there. */
static long escape_unit(const char *buf, size_t len, size_t i)
{
	if (i + 6 > len || buf[i] != '\\' || buf[i + 1] != 'u')
		return -1;
	char hex4[5] = {0};
	for (size_t k = 0; k < 4; k++) {
		if (!isxdigit((unsigned char)buf[i + 2 + k]))
			return -1;
		hex4[k] = buf[i + 2 + k];
	}
	return strtol(hex4, NULL, 16);
}

static bool is_high(long u)
{
	return u >= 0xD800 && u <= 0xDBFF;
}

static bool is_low(long u)
{
	return u >= 0xDC00 && u <= 0xDFFF;
}

/* One escape cJSON cannot take as it is: "\u0000", or (lone_too) a UTF-16
 * surrogate escape that is not half of a high-low pair. */
struct special {
	size_t at;     /* offset of its backslash */
	unsigned unit; /* 0, or the surrogate */
};

/* Finds the special escapes inside strings of buf; returns how many, and
 * fills at most cap of them into out (may be NULL). Only the string
 * structure is followed: for valid JSON this finds exactly those escapes,
 * and invalid JSON is refused by the validation pass whatever was found. */
static size_t find_specials(const char *buf, size_t len, bool lone_too, struct special *out,
                            size_t cap)
{
	size_t n = 0;
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		if (!in_string) {
			if (c == '"')
				in_string = true;
			continue;
		}
		if (c == '"') {
			in_string = false;
			continue;
		}
		if (c != '\\' || i + 1 >= len)
			continue;
		long u = escape_unit(buf, len, i);
		if (u < 0) {
			i++; /* a two-character escape (or broken JSON) */
			continue;
		}
		if (is_high(u) && is_low(escape_unit(buf, len, i + 6))) {
			i += 11; /* a pair: cJSON decodes it */
			continue;
		}
		if (u == 0 || (lone_too && (is_high(u) || is_low(u)))) {
			if (out && n < cap)
				out[n] = (struct special){.at = i, .unit = (unsigned)u};
			n++;
		}
		i += 5;
	}
	return n;
}

static cJSON *parse_special(const char *buf, size_t len, bool lone_too, struct ga_err *err)
{
	size_t n = buf ? find_specials(buf, len, lone_too, NULL, 0) : 0;
	if (n == 0)
		return json_parse(buf, len, err);

	struct special *sp = xcalloc(n, sizeof *sp);
	find_specials(buf, len, lone_too, sp, n);
	/* Pass 1: the same text with "\u0001" for each special escape must be
	 * strictly valid (same structure, same UTF-8 check). */
	char *check = xmalloc(len);
	memcpy(check, buf, len);
	for (size_t k = 0; k < n; k++)
		memcpy(check + sp[k].at + 2, "0001", 4);
	cJSON *v = json_parse(check, len, err);
	free(check);
	if (!v) {
		free(sp);
		return NULL;
	}
	cJSON_Delete(v);

	/* Pass 2: each six-byte escape becomes its marker (one byte for U+0000,
	 * the three WTF-8 bytes of a lone surrogate), which cJSON copies into
	 * the string like any byte above 0x7F. */
	char *marked = xmalloc(len + 1);
	size_t out = 0, from = 0;
	for (size_t k = 0; k < n; k++) {
		memcpy(marked + out, buf + from, sp[k].at - from);
		out += sp[k].at - from;
		unsigned u = sp[k].unit;
		if (u == 0) {
			marked[out++] = JSON_NUL_MARK;
		} else {
			marked[out++] = (char)0xED;
			marked[out++] = (char)(0x80 | ((u >> 6) & 0x3F));
			marked[out++] = (char)(0x80 | (u & 0x3F));
		}
		from = sp[k].at + 6;
	}
	memcpy(marked + out, buf + from, len - from);
	out += len - from;
	marked[out] = '\0';
	free(sp);
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(marked, out, &end, 0);
	free(marked);
	if (!root)
		err_set(err, "invalid JSON: cJSON could not parse this value");
	return root;
}

cJSON *json_parse_nul(const char *buf, size_t len, struct ga_err *err)
{
	return parse_special(buf, len, false, err);
}

cJSON *json_parse_js(const char *buf, size_t len, struct ga_err *err)
{
	return parse_special(buf, len, true, err);
}

bool json_has_nul_mark(const char *s)
{
	return s && strchr(s, JSON_NUL_MARK) != NULL;
}

size_t json_unmark_nul(char *s)
{
	size_t len = strlen(s);
	for (char *p = s; (p = memchr(p, JSON_NUL_MARK, len - (size_t)(p - s))); p++)
		*p = '\0';
	return len;
}

int json_put_string_nul(struct strbuf *sb, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t start = sb->len;
	if (sb_putc(sb, '"') < 0)
		goto fail;
	size_t run = 0; /* start of the part not yet written */
	for (size_t i = 0; i + 2 < len; i++) {
		if ((unsigned char)s[i] != 0xED || ((unsigned char)s[i + 1] & 0xE0) != 0xA0)
			continue;
		/* a lone surrogate (WTF-8, json_parse_js): "\udxxx" */
		unsigned u = 0xD000 | (((unsigned char)s[i + 1] & 0x3Fu) << 6) |
		             ((unsigned char)s[i + 2] & 0x3Fu);
		char esc[6] = {'\\', 'u'};
		for (int k = 0; k < 4; k++)
			esc[2 + k] = hex[(u >> (12 - 4 * k)) & 15];
		if (sb_put_json_chars_marked(sb, s + run, i - run, (unsigned char)JSON_NUL_MARK) <
		            0 ||
		    sb_append(sb, esc, 6) < 0)
			goto fail;
		i += 2;
		run = i + 1;
	}
	if (sb_put_json_chars_marked(sb, s + run, len - run, (unsigned char)JSON_NUL_MARK) < 0 ||
	    sb_putc(sb, '"') < 0)
		goto fail;
	return 0;
fail:
	sb_truncate(sb, start);
	return -1;
}
