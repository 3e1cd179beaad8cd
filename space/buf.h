/*
 * space/buf — immutable, reference-counted serialised server messages,
 * already framed for the wire.
 *
 * A broadcast is serialised once and the same buffer is queued for every
 * member (1000 members share one copy, which is what keeps the server's RSS
 * flat under load). The WebSocket frame header (an unmasked, unfragmented
 * text frame, RFC 6455 §5.2) is written once into the SPACE_BUF_PRE bytes
 * of headroom in front of the JSON, so every recipient's frame is one
 * contiguous slice (space_buf_wire) that the server hands to writev as is.
 * A SPACE_BUF_RAW buffer has no header (the HTTP responses before the
 * upgrade). Every holder of a pointer owns one reference.
 */
#ifndef GA_SPACE_BUF_H
#define GA_SPACE_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

/* Room for the longest server frame header (common/ws.h WS_HDR_MAX). */
#define SPACE_BUF_PRE 10

/* A presence snapshot supersedes an older one still waiting in a slow
 * member's queue (server.c coalesces under backpressure only). */
#define SPACE_BUF_PRESENCE 1u
/* Bytes sent as they are, without a frame header. */
#define SPACE_BUF_RAW 2u
/* A placeholder (space_buf_deferred): its bytes are another buffer's,
 * named later in the same loop turn by space_buf_resolve. */
#define SPACE_BUF_DEFERRED 4u

struct space_buf {
	unsigned refs;
	unsigned flags;
	size_t len;               /* JSON (or raw) bytes, without the header */
	unsigned char hdr_len;    /* frame header bytes just before the data */
	struct space_buf *target; /* DEFERRED: the buffer it stands for, once resolved */
	unsigned char mem[];      /* SPACE_BUF_PRE headroom, len bytes, NUL */
};

/* A buffer for len bytes of message that the caller writes at
 * space_buf_data() before anyone else sees it (the header and the NUL
 * after them are in place); refs = 1. For messages whose size is known
 * before they are written: one allocation, no copy. Never NULL. */
struct space_buf *space_buf_alloc(size_t len, unsigned flags);
/* Copies len bytes; refs = 1. Never NULL (aborts on OOM). */
struct space_buf *space_buf_new(const char *data, size_t len, unsigned flags);
/* Takes the strbuf's content (the strbuf is reset). */
struct space_buf *space_buf_from_sb(struct strbuf *sb, unsigned flags);
/* A placeholder for a message that will be known later in the same loop
 * turn (the room's snapshot for the newcomers of a turn, room.h): queued
 * like any buffer, its bytes are those of the buffer space_buf_resolve
 * names (it takes a reference). Until then it has none (len 0, data "")
 * and must not be written (space_buf_ready). refs = 1. */
struct space_buf *space_buf_deferred(unsigned flags);
void space_buf_resolve(struct space_buf *ph, struct space_buf *real);
struct space_buf *space_buf_ref(struct space_buf *b);
/* Drops one reference; frees on the last. NULL accepted. */
void space_buf_unref(struct space_buf *b);

/* False for a placeholder not yet resolved. */
static inline bool space_buf_ready(const struct space_buf *b)
{
	return !(b->flags & SPACE_BUF_DEFERRED) || b->target;
}

/* The message itself (NUL-terminated). */
static inline char *space_buf_data(struct space_buf *b)
{
	if (b->target)
		b = b->target;
	return (char *)b->mem + SPACE_BUF_PRE;
}

/* The bytes to send: frame header and message. */
static inline const char *space_buf_wire(const struct space_buf *b, size_t *len)
{
	if (b->target)
		b = b->target;
	*len = b->hdr_len + b->len;
	return (const char *)b->mem + SPACE_BUF_PRE - b->hdr_len;
}

#endif
