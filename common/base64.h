/*
 * base64 — standard base64 (RFC 4648 §4, the '+' '/' alphabet with '='
 * padding): encoding, optionally wrapped in lines as GitHub's contents API
 * sends file content, and decoding that skips line breaks and spaces.
 *
 * Encoded output is NUL-terminated; base64_encoded_len says how large the
 * buffer must be. Decoding refuses any other character, a '=' anywhere but
 * at the end, a truncated group and non-zero padding bits, with a sentence
 * naming the offset.
 */
#ifndef GA_COMMON_BASE64_H
#define GA_COMMON_BASE64_H

#include <stddef.h>

#include "err.h"

/* Bytes the encoding of n bytes takes, line breaks ('\n' after every
 * `line` characters and after the last partial line; 0 = one line without
 * a break) and the NUL included. */
size_t base64_encoded_len(size_t n, size_t line);
/* Encodes n bytes of data into out (base64_encoded_len(n, line) bytes).
 * Returns the length written, NUL excluded. */
size_t base64_encode(const void *data, size_t n, size_t line, char *out);
/* Decodes len characters of s (NUL-terminated or not) into out, which
 * needs at least len / 4 * 3 + 3 bytes; a NUL is written after the data so
 * text can be used as a string. Returns the number of bytes decoded, or
 * -1 with err. */
long base64_decode(const char *s, size_t len, unsigned char *out, struct ga_err *err);

#endif
