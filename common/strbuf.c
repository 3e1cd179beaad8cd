/*
 * strbuf — see strbuf.h.
 *
 * Growth doubles the capacity but never past max + 1 (the NUL), so the
 * allocation itself is bounded by the same limit as the content. Every
 * append either succeeds completely or leaves the buffer exactly as it was.
 */
#include "common/strbuf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define STRBUF_MIN_CAP 64

static size_t sb_max(const struct strbuf *sb)
{
	size_t max = sb->max ? sb->max : STRBUF_DEFAULT_MAX;
	/* "no limit" (SIZE_MAX) still has to leave room for the capacity
	 * arithmetic below not to wrap */
	return max > SIZE_MAX / 2 ? SIZE_MAX / 2 : max;
}

void sb_init(struct strbuf *sb, size_t max)
{
	sb->buf = NULL;
	sb->len = 0;
	sb->cap = 0;
	sb->max = max;
}

/* Makes room for `extra` more bytes plus the NUL; -1 if that passes max. */
static int sb_reserve(struct strbuf *sb, size_t extra)
{
	size_t max = sb_max(sb);
	if (extra > max || sb->len > max - extra)
		return -1;
	size_t need = sb->len + extra + 1;
	if (need <= sb->cap)
		return 0;
	size_t cap = sb->cap ? sb->cap : STRBUF_MIN_CAP;
	while (cap < need)
		cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
	if (cap > max + 1)
		cap = max + 1;
	if (cap < need)
		cap = need;
	sb->buf = xrealloc(sb->buf, cap);
	sb->cap = cap;
	return 0;
}

int sb_append(struct strbuf *sb, const void *data, size_t len)
{
	if (sb_reserve(sb, len) < 0)
		return -1;
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int sb_puts(struct strbuf *sb, const char *s)
{
	return sb_append(sb, s, strlen(s));
}

int sb_putc(struct strbuf *sb, char c)
{
	return sb_append(sb, &c, 1);
}

/* The attribute lets clang's -Wformat-nonliteral see that fmt is checked at
 * the callers (sb_printf and its users). */
__attribute__((format(printf, 2, 0))) int sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	char probe[1];
	int n = vsnprintf(probe, sizeof(probe), fmt, ap2);
	va_end(ap2);
	if (n < 0 || sb_reserve(sb, (size_t)n) < 0)
		return -1;
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
	return 0;
}

int sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = sb_vprintf(sb, fmt, ap);
	va_end(ap);
	return rc;
}

size_t sb_json_escape_byte(unsigned char c, char out[6])
{
	static const char hex[] = "0123456789abcdef";
	/* the two-character escapes JSON.stringify uses, pairwise */
	static const char short_from[] = "\"\\\b\f\n\r\t";
	static const char short_to[] = "\"\\bfnrt";
	if (c >= 0x20 && c != '"' && c != '\\')
		return 0;
	out[0] = '\\';
	const char *hit = c ? memchr(short_from, c, sizeof(short_from) - 1) : NULL;
	if (hit) {
		out[1] = short_to[hit - short_from];
		return 2;
	}
	memcpy(out, "\\u00", 4);
	out[4] = hex[c >> 4];
	out[5] = hex[c & 15];
	return 6;
}

int sb_put_json_chars_marked(struct strbuf *sb, const char *s, size_t len, int nul_mark)
{
	size_t start = sb->len;
	/* Rolling back on failure keeps the "unchanged on error" promise
	 * without a second pass to measure the escaped length. */
	size_t run = 0; /* start of the pending verbatim run */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (nul_mark >= 0 && c == (unsigned char)nul_mark)
			c = 0;
		char esc[6];
		size_t n = sb_json_escape_byte(c, esc);
		if (!n)
			continue;
		if (sb_append(sb, s + run, i - run) < 0 || sb_append(sb, esc, n) < 0)
			goto fail;
		run = i + 1;
	}
	if (sb_append(sb, s + run, len - run) < 0)
		goto fail;
	return 0;
fail:
	sb_truncate(sb, start);
	return -1;
}

int sb_put_json_string_marked(struct strbuf *sb, const char *s, size_t len, int nul_mark)
{
	size_t start = sb->len;
	if (sb_putc(sb, '"') < 0 || sb_put_json_chars_marked(sb, s, len, nul_mark) < 0 ||
	    sb_putc(sb, '"') < 0) {
		sb_truncate(sb, start);
		return -1;
	}
	return 0;
}

int sb_put_json_string(struct strbuf *sb, const char *s, size_t len)
{
	return sb_put_json_string_marked(sb, s, len, -1);
}

const char *sb_cstr(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void sb_truncate(struct strbuf *sb, size_t len)
{
	if (len >= sb->len)
		return;
	sb->len = len;
	sb->buf[len] = '\0';
}

void sb_consume(struct strbuf *sb, size_t n)
{
	if (n >= sb->len) {
		sb_reset(sb);
		return;
	}
	memmove(sb->buf, sb->buf + n, sb->len - n);
	sb->len -= n;
	sb->buf[sb->len] = '\0';
}

char *sb_detach(struct strbuf *sb)
{
	char *p = sb->buf ? sb->buf : xstrdup("");
	sb->buf = NULL;
	sb->len = 0;
	sb->cap = 0;
	return p;
}

void sb_free(struct strbuf *sb)
{
	if (!sb)
		return;
	free(sb->buf);
	sb->buf = NULL;
	sb->len = 0;
	sb->cap = 0;
}

int sb_fill(struct strbuf *sb, const char *tmpl, const char *const *names,
            const char *const *values, size_t n)
{
	int rc = 0;
	for (const char *p = tmpl; *p;) {
		bool done = false;
		if (p[0] == '{' && p[1] == '{') {
			for (size_t i = 0; i < n; i++) {
				size_t nl = strlen(names[i]);
				if (strncmp(p + 2, names[i], nl) == 0 &&
				    strncmp(p + 2 + nl, "}}", 2) == 0) {
					rc |= sb_puts(sb, values[i] ? values[i] : "");
					p += nl + 4;
					done = true;
					break;
				}
			}
		}
		if (!done)
			rc |= sb_putc(sb, *p++);
	}
	return rc ? -1 : 0;
}
