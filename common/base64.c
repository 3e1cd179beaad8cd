/* base64 — see base64.h. */
#include "common/base64.h"

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_len(size_t n, size_t line)
{
	size_t chars = (n + 2) / 3 * 4;
	size_t breaks = line ? (chars + line - 1) / line : 0;
	return chars + breaks + 1;
}

size_t base64_encode(const void *data, size_t n, size_t line, char *out)
{
	const unsigned char *s = data;
	char *o = out;
	size_t col = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		char q[4] = {ALPHABET[(v >> 18) & 63], ALPHABET[(v >> 12) & 63],
		             i + 1 < n ? ALPHABET[(v >> 6) & 63] : '=',
		             i + 2 < n ? ALPHABET[v & 63] : '='};
		for (int k = 0; k < 4; k++) {
			*o++ = q[k];
			if (line && ++col == line) {
				*o++ = '\n';
				col = 0;
			}
		}
	}
	if (line && col)
		*o++ = '\n';
	*o = '\0';
	return (size_t)(o - out);
}

static int digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long base64_decode(const char *s, size_t len, unsigned char *out, struct ga_err *err)
{
	size_t n = 0;
	unsigned acc = 0;
	int q = 0;    /* digits in the group being read */
	int pads = 0; /* '=' seen at the end */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
			continue;
		if (c == '=') {
			if (q < 2 || q + pads >= 4) {
				err_set(err, "base64: '=' at offset %zu is not padding", i);
				return -1;
			}
			pads++;
			continue;
		}
		int d = digit(c);
		if (d < 0) {
			err_set(err, "base64: byte 0x%02x at offset %zu is not a base64 character",
			        c, i);
			return -1;
		}
		if (pads) {
			err_set(err, "base64: data after the padding at offset %zu", i);
			return -1;
		}
		acc = (acc << 6) | (unsigned)d;
		if (++q == 4) {
			out[n++] = (unsigned char)(acc >> 16);
			out[n++] = (unsigned char)(acc >> 8);
			out[n++] = (unsigned char)acc;
			q = 0;
			acc = 0;
		}
	}
	if (q == 1 || (pads && q + pads != 4)) {
		err_set(err, "base64: the input ends in the middle of a group");
		return -1;
	}
	/* A short last group: 2 digits carry one byte, 3 carry two; the bits
	 * left over must be zero (RFC 4648 §3.5). */
	if ((q == 2 && (acc & 0xf)) || (q == 3 && (acc & 0x3))) {
		err_set(err, "base64: the last group has stray bits");
		return -1;
	}
	if (q == 2) {
		out[n++] = (unsigned char)(acc >> 4);
	} else if (q == 3) {
		out[n++] = (unsigned char)(acc >> 10);
		out[n++] = (unsigned char)(acc >> 2);
	}
	out[n] = '\0';
	return (long)n;
}
