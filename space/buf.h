/*
 * space/buf — immutable, reference-counted serialised server messages.
 *
 * A broadcast is serialised once and the same buffer is queued for every
 * member (1000 members share one copy, which is what keeps the server's RSS
 * flat under load). The bytes are preceded by SPACE_BUF_PRE bytes of
 * headroom that the WebSocket layer may overwrite with a frame header
 * (libwebsockets' LWS_PRE contract; server.c checks the size at compile
 * time). Every holder of a pointer owns one reference.
 */
#ifndef GA_SPACE_BUF_H
#define GA_SPACE_BUF_H

#include <stddef.h>

#include "common/strbuf.h"

#define SPACE_BUF_PRE 16

/* A presence snapshot supersedes an older one still waiting in a slow
 * member's queue (server.c coalesces under backpressure only). */
#define SPACE_BUF_PRESENCE 1u

struct space_buf {
	unsigned refs;
	unsigned flags;
	size_t len;
	unsigned char mem[]; /* SPACE_BUF_PRE headroom, len bytes, NUL */
};

/* Copies len bytes; refs = 1. Never NULL (aborts on OOM). */
struct space_buf *space_buf_new(const char *data, size_t len, unsigned flags);
/* Takes the strbuf's content (the strbuf is reset). */
struct space_buf *space_buf_from_sb(struct strbuf *sb, unsigned flags);
struct space_buf *space_buf_ref(struct space_buf *b);
/* Drops one reference; frees on the last. NULL accepted. */
void space_buf_unref(struct space_buf *b);

static inline char *space_buf_data(struct space_buf *b)
{
	return (char *)b->mem + SPACE_BUF_PRE;
}

#endif
