/*
 * err — a small error carrier.
 *
 * Functions that can fail take a `struct ga_err *` (may be NULL) and, on
 * failure, write one sentence a user can act on into it ("field 'name' must
 * be a string"). The buffer is fixed-size: messages longer than
 * GA_ERR_MSG_MAX are truncated, never overflowed.
 */
#ifndef GA_COMMON_ERR_H
#define GA_COMMON_ERR_H

#include <stddef.h>

#define GA_ERR_MSG_MAX 512

struct ga_err {
	char msg[GA_ERR_MSG_MAX];
};

/* printf-style; a NULL `err` is accepted and ignored. Always returns -1 so a
 * caller can write `return err_set(err, "...")`. */
int err_set(struct ga_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* snprintf into any buffer for a message that may be cut (the bound is the
 * point; -Wformat-truncation would otherwise object to every such call). */
void err_fmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Clears the message (msg[0] = '\0'). NULL accepted. */
void err_clear(struct ga_err *err);

#endif
