/*
 * strbuf — a growable, bounded, always NUL-terminated byte buffer.
 *
 * Every strbuf has a maximum size (`max`, bytes, not counting the NUL). An
 * append that would pass it fails with -1 and leaves the buffer unchanged, so
 * a runaway producer cannot grow memory without bound. max == 0 means
 * STRBUF_DEFAULT_MAX.
 *
 * A zero-initialised struct (`struct strbuf sb = {0};`) is a valid empty
 * buffer with the default maximum. `buf` is NULL until the first append;
 * sb_cstr() always returns a valid string.
 */
#ifndef GA_COMMON_STRBUF_H
#define GA_COMMON_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#define STRBUF_DEFAULT_MAX ((size_t)64 * 1024 * 1024)

struct strbuf {
	char *buf;
	size_t len;
	size_t cap;
	size_t max;
};

void sb_init(struct strbuf *sb, size_t max);
int sb_append(struct strbuf *sb, const void *data, size_t len);
int sb_puts(struct strbuf *sb, const char *s);
int sb_putc(struct strbuf *sb, char c);
int sb_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap);
/* Appends s as a JSON string literal, quotes included, escaped the way
 * JavaScript's JSON.stringify does (\" \\ \b \f \n \r \t, other control
 * characters as \u00XX, everything else verbatim including non-ASCII). */
int sb_put_json_string(struct strbuf *sb, const char *s, size_t len);
/* The same, with the byte nul_mark (0..255; -1: none) written as \u0000
 * (common/jsonnul.h's marked NUL). */
int sb_put_json_string_marked(struct strbuf *sb, const char *s, size_t len, int nul_mark);
/* The inside of that literal: s escaped the same way, without the quotes
 * (for a caller that writes a string in pieces). Unchanged on error. */
int sb_put_json_chars_marked(struct strbuf *sb, const char *s, size_t len, int nul_mark);
/* The JSON escape of byte c into out (2 or 6 bytes, returned), or 0 when c
 * stands as it is (the escapes JSON.stringify writes). */
size_t sb_json_escape_byte(unsigned char c, char out[6]);
/* Appends tmpl with every {{names[i]}} replaced by values[i] (NULL = ""),
 * literally; an unknown {{…}} stays as written. -1 when the bound was hit. */
int sb_fill(struct strbuf *sb, const char *tmpl, const char *const *names,
            const char *const *values, size_t n);
/* "" when empty, never NULL. Borrowed. */
const char *sb_cstr(const struct strbuf *sb);
/* Keeps the allocation, len = 0. */
void sb_reset(struct strbuf *sb);
/* Keeps the first len bytes (len >= sb->len changes nothing): a writer
 * that appends in several steps rolls back to where it started with it. */
void sb_truncate(struct strbuf *sb, size_t len);
/* Drops the first n bytes (n >= len empties it). */
void sb_consume(struct strbuf *sb, size_t n);
/* Returns the heap string (caller frees; never NULL) and resets sb. */
char *sb_detach(struct strbuf *sb);
void sb_free(struct strbuf *sb);

#endif
