/*
 * space/host — stdin lines on the loop. See host.h.
 */
#include "space/host.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define LOG_COMP   "space.host"
#define FILE_CHUNK 65536

struct space_host {
	union {
		uv_handle_t handle;
		uv_stream_t stream;
		uv_tty_t tty;
		uv_pipe_t pipe;
	} h;
	bool is_stream; /* tty or pipe; otherwise a regular file via uv_fs_read */
	bool reading;
	bool stopping;
	bool fs_busy; /* a uv_fs_read is in flight: free after it lands */
	int fd;
	uv_loop_t *loop;
	uv_fs_t req;
	char *chunk; /* FILE_CHUNK bytes for stream and file reads */
	struct strbuf line;
	bool discarding; /* past SPACE_HOST_LINE_MAX: drop until '\n' */
	space_host_line_cb cb;
	void *ud;
};

static void emit(struct space_host *h)
{
	size_t n = h->line.len;
	const char *s = sb_cstr(&h->line);
	if (n && s[n - 1] == '\r')
		n--;
	h->cb(h->ud, s, n);
	sb_reset(&h->line);
}

static void feed(struct space_host *h, const char *buf, size_t n)
{
	while (n && !h->stopping) {
		const char *nl = memchr(buf, '\n', n);
		size_t take = nl ? (size_t)(nl - buf) : n;
		if (!h->discarding) {
			size_t room = SPACE_HOST_LINE_MAX - h->line.len;
			if (take > room) {
				log_warn(LOG_COMP, "host line longer than %zu bytes: cut",
				         SPACE_HOST_LINE_MAX);
				sb_append(&h->line, buf, room);
				h->discarding = true;
			} else {
				sb_append(&h->line, buf, take);
			}
		}
		if (!nl)
			return;
		h->discarding = false;
		emit(h);
		buf += take + 1;
		n -= take + 1;
	}
}

static void at_eof(struct space_host *h)
{
	if (h->line.len && !h->stopping)
		emit(h);
	log_info(LOG_COMP, "stdin closed: host input is off, the room keeps serving");
}

static void free_host(struct space_host *h)
{
	sb_free(&h->line);
	free(h->chunk);
	free(h);
}

static void on_close(uv_handle_t *handle)
{
	free_host(handle->data);
}

static void alloc_cb(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	struct space_host *h = handle->data;
	buf->base = h->chunk;
	buf->len = FILE_CHUNK;
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct space_host *h = stream->data;
	if (nread > 0) {
		feed(h, buf->base, (size_t)nread);
		return;
	}
	if (nread == 0)
		return;
	if (nread != UV_EOF)
		log_warn(LOG_COMP, "reading stdin: %s", uv_strerror((int)nread));
	uv_read_stop(stream);
	h->reading = false;
	at_eof(h);
}

static void fs_read_next(struct space_host *h);

static void fs_cb(uv_fs_t *req)
{
	struct space_host *h = req->data;
	ssize_t r = req->result;
	uv_fs_req_cleanup(req);
	h->fs_busy = false;
	if (h->stopping) {
		free_host(h);
		return;
	}
	if (r > 0) {
		feed(h, h->chunk, (size_t)r);
		if (!h->stopping)
			fs_read_next(h);
		return;
	}
	if (r < 0)
		log_warn(LOG_COMP, "reading stdin: %s", uv_strerror((int)r));
	h->reading = false;
	at_eof(h);
}

static void fs_read_next(struct space_host *h)
{
	uv_buf_t b = uv_buf_init(h->chunk, FILE_CHUNK);
	h->req.data = h;
	if (uv_fs_read(h->loop, &h->req, h->fd, &b, 1, -1, fs_cb) == 0)
		h->fs_busy = true;
	else
		h->reading = false;
}

struct space_host *space_host_start(uv_loop_t *loop, int fd, space_host_line_cb cb, void *ud)
{
	struct space_host *h = xcalloc(1, sizeof *h);
	h->loop = loop;
	h->fd = fd;
	h->cb = cb;
	h->ud = ud;
	h->chunk = xmalloc(FILE_CHUNK);
	sb_init(&h->line, SPACE_HOST_LINE_MAX + 1);

	uv_handle_type t = uv_guess_handle(fd);
	int rc = -1;
	if (t == UV_TTY) {
		rc = uv_tty_init(loop, &h->h.tty, fd, 1);
		h->is_stream = rc == 0;
	} else if (t == UV_NAMED_PIPE || t == UV_TCP) {
		rc = uv_pipe_init(loop, &h->h.pipe, 0);
		if (rc == 0) {
			h->is_stream = true;
			rc = uv_pipe_open(&h->h.pipe, fd);
		}
	} else if (t == UV_FILE) {
		/* Regular files and character devices such as /dev/null: reads
		 * never block for long, so the threadpool read is safe. */
		h->reading = true;
		fs_read_next(h);
		return h;
	} else {
		log_warn(LOG_COMP, "stdin is not a terminal, pipe or file: host input is off");
		free_host(h);
		return NULL;
	}
	if (h->is_stream)
		h->h.handle.data = h;
	if (rc == 0)
		rc = uv_read_start(&h->h.stream, alloc_cb, read_cb);
	if (rc != 0) {
		log_warn(LOG_COMP, "cannot read stdin (%s): host input is off", uv_strerror(rc));
		if (h->is_stream)
			uv_close(&h->h.handle, on_close);
		else
			free_host(h);
		return NULL;
	}
	h->reading = true;
	return h;
}

void space_host_stop(struct space_host *h)
{
	if (!h || h->stopping)
		return;
	h->stopping = true;
	if (h->is_stream) {
		if (h->reading)
			uv_read_stop(&h->h.stream);
		if (h->h.handle.type == UV_TTY)
			uv_tty_reset_mode();
		uv_close(&h->h.handle, on_close);
	} else if (h->fs_busy) {
		/* Freed by fs_cb when the read in flight lands; try to cancel
		 * it if it has not started yet. */
		uv_cancel((uv_req_t *)&h->req);
	} else {
		free_host(h);
	}
}
