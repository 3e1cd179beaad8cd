/* space/buf — see buf.h. */
#include "space/buf.h"

#include <stdlib.h>
#include <string.h>

#include "common/ws.h"
#include "common/xalloc.h"

_Static_assert(SPACE_BUF_PRE >= WS_HDR_MAX, "headroom must hold a frame header");

struct space_buf *space_buf_alloc(size_t len, unsigned flags)
{
	struct space_buf *b = xmalloc(sizeof *b + SPACE_BUF_PRE + len + 1);
	b->refs = 1;
	b->flags = flags;
	b->len = len;
	b->hdr_len = 0;
	b->target = NULL;
	if (!(flags & SPACE_BUF_RAW)) {
		uint8_t hdr[WS_HDR_MAX];
		size_t n = ws_frame_header(hdr, WS_OP_TEXT, len);
		memcpy(b->mem + SPACE_BUF_PRE - n, hdr, n);
		b->hdr_len = (unsigned char)n;
	}
	b->mem[SPACE_BUF_PRE + len] = '\0';
	return b;
}

struct space_buf *space_buf_new(const char *data, size_t len, unsigned flags)
{
	struct space_buf *b = space_buf_alloc(len, flags);
	if (len)
		memcpy(b->mem + SPACE_BUF_PRE, data, len);
	return b;
}

struct space_buf *space_buf_from_sb(struct strbuf *sb, unsigned flags)
{
	struct space_buf *b = space_buf_new(sb_cstr(sb), sb->len, flags);
	sb_reset(sb);
	return b;
}

struct space_buf *space_buf_deferred(unsigned flags)
{
	return space_buf_alloc(0, flags | SPACE_BUF_DEFERRED | SPACE_BUF_RAW);
}

void space_buf_resolve(struct space_buf *ph, struct space_buf *real)
{
	if (ph->target)
		return;
	ph->target = space_buf_ref(real);
	ph->len = real->len;
	ph->hdr_len = real->hdr_len;
}

struct space_buf *space_buf_ref(struct space_buf *b)
{
	b->refs++;
	return b;
}

void space_buf_unref(struct space_buf *b)
{
	if (b && --b->refs == 0) {
		space_buf_unref(b->target);
		free(b);
	}
}
