/*
 * h2 — HTTP/2 over libnghttp2 for the native transport (see h2.h).
 */
#include "adapters/http/h2.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/http/h1.h"
#include "adapters/http/nghttp2_shim.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

/* The flow-control window the client grants per stream: the body bound is
 * what limits memory, this only how much may be in flight. */
#define H2_WINDOW (1u << 20)

struct h2 {
	nghttp2_session *s;
	h2_out_fn out;
	void *ud;
	struct http_req *r; /* the open stream's request; NULL between streams */
	int32_t stream;
	long status;
	bool final;    /* a final (non-1xx) header block began */
	bool trailers; /* the header block being read came after the final one */
	bool any;      /* a frame of the stream arrived */
	bool closed;   /* the stream closed */
	uint32_t close_code;
	bool too_large; /* the body bound was passed */
	bool head_too_big;
	size_t head_bytes;
	bool goaway;
	int32_t goaway_last;
	uint32_t goaway_code;
	bool broken; /* the session failed */
	size_t body_off;
	char err[GA_ERR_MSG_MAX];
};

int h2_load(struct ga_err *err)
{
	return nghttp2_shim_load(err);
}

static void flush(struct h2 *h)
{
	const uint8_t *data;
	ssize_t n;
	while (!h->broken && (n = ng.mem_send(h->s, &data)) != 0) {
		if (n < 0) {
			h->broken = true;
			snprintf(h->err, sizeof h->err, "HTTP/2 send failed (%s)",
			         ng.strerror((int)n));
			return;
		}
		h->out(h->ud, (const char *)data, (size_t)n);
	}
}

static bool ours(const struct h2 *h, int32_t stream)
{
	return h->r && stream == h->stream;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	(void)s;
	struct h2 *h = ud;
	if (ours(h, f->hd.stream_id))
		h->trailers = h->final;
	return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
	(void)s;
	(void)flags;
	struct h2 *h = ud;
	if (!ours(h, f->hd.stream_id))
		return 0;
	h->any = true;
	h->head_bytes += nl + vl + 4;
	if (h->head_bytes > H1_MAX_HEAD_BYTES) {
		h->head_too_big = true;
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	if (nl == 7 && memcmp(name, ":status", 7) == 0 && !h->trailers) {
		char num[8];
		snprintf(num, sizeof num, "%.*s", (int)(vl < 7 ? vl : 7), (const char *)value);
		h->status = strtol(num, NULL, 10);
		if (h->status >= 200) {
			h->final = true;
			http_req_reset_headers(h->r);
		}
		return 0;
	}
	/* Pseudo-headers, an interim answer's fields, trailers: not kept. */
	if ((nl && name[0] == ':') || !h->final || h->trailers)
		return 0;
	if (nl == 14 && strncasecmp((const char *)name, "content-length", 14) == 0) {
		char num[24];
		snprintf(num, sizeof num, "%.*s", (int)(vl < 23 ? vl : 23), (const char *)value);
		if (strtoull(num, NULL, 10) > h->r->max_body) {
			h->too_large = true;
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		}
	}
	http_req_add_header(h->r, (const char *)name, nl, (const char *)value, vl);
	return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t stream, const uint8_t *data,
                   size_t len, void *ud)
{
	(void)s;
	(void)flags;
	struct h2 *h = ud;
	if (!ours(h, stream))
		return 0;
	h->any = true;
	struct http_req *r = h->r;
	if (len > r->max_body - r->resp_body.len || sb_append(&r->resp_body, data, len) != 0) {
		h->too_large = true;
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	(void)s;
	struct h2 *h = ud;
	if (f->hd.type == NGHTTP2_GOAWAY) {
		h->goaway = true;
		h->goaway_last = f->goaway.last_stream_id;
		h->goaway_code = f->goaway.error_code;
	}
	return 0;
}

static int on_close(nghttp2_session *s, int32_t stream, uint32_t code, void *ud)
{
	(void)s;
	struct h2 *h = ud;
	if (ours(h, stream)) {
		h->closed = true;
		h->close_code = code;
	}
	return 0;
}

struct h2 *h2_new(h2_out_fn out, void *ud, struct ga_err *err)
{
	if (h2_load(err) != 0)
		return NULL;
	struct h2 *h = xcalloc(1, sizeof *h);
	h->out = out;
	h->ud = ud;
	nghttp2_session_callbacks *cb;
	if (ng.callbacks_new(&cb) != 0) {
		free(h);
		err_set(err, "out of memory for an HTTP/2 session");
		return NULL;
	}
	ng.set_on_begin_headers(cb, on_begin_headers);
	ng.set_on_header(cb, on_header);
	ng.set_on_data_chunk_recv(cb, on_data);
	ng.set_on_frame_recv(cb, on_frame);
	ng.set_on_stream_close(cb, on_close);
	int rc = ng.client_new(&h->s, cb, h);
	ng.callbacks_del(cb);
	if (rc != 0) {
		free(h);
		err_set(err, "cannot start an HTTP/2 session (%s)", ng.strerror(rc));
		return NULL;
	}
	const nghttp2_settings_entry iv[] = {
	        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1},
	        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
	        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW},
	        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H1_MAX_HEAD_BYTES},
	};
	ng.submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]);
	flush(h);
	return h;
}

void h2_free(struct h2 *h)
{
	if (!h)
		return;
	ng.session_del(h->s);
	free(h);
}

static ssize_t read_body(nghttp2_session *s, int32_t stream, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	(void)s;
	(void)stream;
	(void)src;
	struct h2 *h = ud;
	const struct http_req *r = h->r;
	size_t left = r ? r->body_len - h->body_off : 0;
	size_t n = left < len ? left : len;
	if (n)
		memcpy(buf, r->body + h->body_off, n);
	h->body_off += n;
	if (h->body_off >= (r ? r->body_len : 0))
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* Fields a request over HTTP/2 must not carry (RFC 9113, 8.2.2), and Host,
 * which becomes :authority. */
static bool dropped(const char *name, size_t n)
{
	static const char *const names[] = {"host",    "connection",       "keep-alive",
	                                    "upgrade", "proxy-connection", "transfer-encoding"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i]) == n && strncasecmp(name, names[i], n) == 0)
			return true;
	return false;
}

/* The HTTP/1.1 head h1_write_head wrote, as HTTP/2 fields after the
 * pseudo-headers already in nv; returns the count. Lower-cases the names
 * in place; nv points into head. */
static size_t fields_of(char *head, nghttp2_nv *nv, size_t n, size_t cap)
{
	char *line = strstr(head, "\r\n");
	while (line && n < cap) {
		line += 2;
		char *end = strstr(line, "\r\n");
		if (!end || end == line)
			break;
		char *colon = memchr(line, ':', (size_t)(end - line));
		if (colon && colon > line && !dropped(line, (size_t)(colon - line))) {
			for (char *c = line; c < colon; c++)
				*c = (char)tolower((unsigned char)*c);
			char *v = colon + 1;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			nv[n++] =
			        (nghttp2_nv){(uint8_t *)line, (uint8_t *)v, (size_t)(colon - line),
			                     (size_t)(end - v), NGHTTP2_NV_FLAG_NONE};
		}
		line = end;
	}
	return n;
}

int h2_request(struct h2 *h, struct http_req *r, const char *authority, const char *path,
               struct ga_err *err)
{
	struct strbuf head;
	sb_init(&head, 0);
	h1_write_head(&head, r, path, authority, NULL);
	size_t cap = r->n_headers + 16;
	nghttp2_nv *nv = xcalloc(cap, sizeof *nv);
#define PSEUDO(k, v)                                                                               \
	(nghttp2_nv){(uint8_t *)(k), (uint8_t *)(v), sizeof(k) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}
	nv[0] = PSEUDO(":method", r->method);
	nv[1] = PSEUDO(":scheme", "https");
	nv[2] = PSEUDO(":authority", authority);
	nv[3] = PSEUDO(":path", path);
#undef PSEUDO
	size_t n = fields_of(head.buf, nv, 4, cap);
	h->r = r;
	h->status = 0;
	h->final = h->trailers = h->any = h->closed = h->too_large = h->head_too_big = false;
	h->head_bytes = 0;
	h->body_off = 0;
	h->err[0] = '\0';
	nghttp2_data_provider body = {.read_callback = read_body};
	int32_t id = ng.submit_request(h->s, NULL, nv, n, r->body_len ? &body : NULL, NULL);
	free(nv);
	sb_free(&head);
	if (id < 0) {
		h->r = NULL;
		return err_set(err, "cannot open an HTTP/2 stream (%s)", ng.strerror(id));
	}
	h->stream = id;
	flush(h);
	if (h->broken) {
		h->r = NULL;
		return err_set(err, "%s", h->err);
	}
	return 0;
}

/* The open stream ended: what it came to. */
static enum h2_result stream_end(struct h2 *h)
{
	uint32_t code = h->close_code;
	h->r = NULL;
	if (code == NGHTTP2_NO_ERROR && h->final)
		return H2_DONE;
	if (code == NGHTTP2_REFUSED_STREAM ||
	    (h->goaway && h->stream > h->goaway_last && !h->any)) {
		snprintf(h->err, sizeof h->err,
		         "the server did not process the request (HTTP/2 %s%s)",
		         h->goaway ? "GOAWAY, " : "", ng.http2_strerror(code));
		return H2_REFUSED;
	}
	if (code == NGHTTP2_NO_ERROR)
		snprintf(h->err, sizeof h->err, "the HTTP/2 stream ended without a response");
	else
		snprintf(h->err, sizeof h->err, "the server reset the HTTP/2 stream (%s%s)",
		         h->goaway ? "GOAWAY, " : "", ng.http2_strerror(code));
	return H2_ERROR;
}

enum h2_result h2_feed(struct h2 *h, const char *p, size_t n)
{
	if (h->broken)
		return H2_ERROR;
	ssize_t rv = ng.mem_recv(h->s, (const uint8_t *)p, n);
	if (rv < 0) {
		h->broken = true;
		bool open = h->r != NULL;
		h->r = NULL;
		if (open && h->too_large)
			return H2_TOO_LARGE;
		if (open && h->head_too_big)
			snprintf(h->err, sizeof h->err, "the response head is over %u bytes",
			         H1_MAX_HEAD_BYTES);
		else
			snprintf(h->err, sizeof h->err, "HTTP/2 protocol error (%s)",
			         ng.strerror((int)rv));
		return H2_ERROR;
	}
	flush(h);
	if (h->r && h->closed)
		return stream_end(h);
	if (h->broken) {
		h->r = NULL;
		return H2_ERROR;
	}
	if (!h->r && h->goaway) {
		snprintf(h->err, sizeof h->err, "the server sent GOAWAY (%s)",
		         ng.http2_strerror(h->goaway_code));
		return H2_ERROR;
	}
	return H2_MORE;
}

long h2_status(const struct h2 *h)
{
	return h->status;
}

bool h2_any_byte(const struct h2 *h)
{
	return h->any;
}

bool h2_reusable(const struct h2 *h)
{
	return !h->broken && !h->goaway && ng.want_read(h->s);
}

const char *h2_err(const struct h2 *h)
{
	return h->err;
}
