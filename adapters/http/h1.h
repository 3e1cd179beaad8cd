/*
 * h1 — the HTTP/1.1 codec of the native transport: the request head it
 * writes, and an incremental parser for the response (status line,
 * headers, then a body delimited by Content-Length, chunked coding or the
 * connection's close).
 *
 * Rules of use:
 * - h1_write_head() appends the whole request head to a strbuf; the body
 *   follows it as given (Content-Length framing, never chunked).
 * - The parser is fed bytes as they arrive (h1_feed) and told when the
 *   peer closed (h1_eof). Headers and body go straight into the request
 *   (transport.h's http_req): the headers within http.h's bounds, the body
 *   bounded by r->max_body (H1_TOO_LARGE past it, or as soon as a
 *   Content-Length announces more).
 * - Interim 1xx responses are skipped (their headers dropped); HEAD, 204,
 *   304 and a 2xx answer to CONNECT have no body.
 * - Bounds: a status or header line is at most H1_MAX_LINE_BYTES and the
 *   head at most H1_MAX_HEAD_BYTES; more is an H1_ERROR.
 * - Errors are sentences in p->err (no host: the caller adds it).
 */
#ifndef GA_ADAPTERS_HTTP_H1_H
#define GA_ADAPTERS_HTTP_H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "adapters/http/transport.h"
#include "common/strbuf.h"

#define H1_MAX_LINE_BYTES (100u * 1024u)
#define H1_MAX_HEAD_BYTES (300u * 1024u)

enum h1_result { H1_MORE, H1_DONE, H1_ERROR, H1_TOO_LARGE };

enum h1_state {
	H1_STATUS,
	H1_HEADERS,
	H1_BODY_LENGTH,
	H1_CHUNK_SIZE,
	H1_CHUNK_DATA,
	H1_CHUNK_END,
	H1_TRAILERS,
	H1_BODY_CLOSE,
	H1_COMPLETE,
};

struct h1_parser {
	struct http_req *r;
	bool no_body;    /* HEAD, or the answer to CONNECT */
	bool is_connect; /* a 2xx ends at its head */
	enum h1_state state;
	struct strbuf line; /* the line being assembled, bounded */
	size_t head_bytes;
	long status;
	int minor; /* HTTP/1.x */
	bool chunked;
	bool has_length;
	uint64_t remaining; /* of Content-Length or of the current chunk */
	bool conn_close;    /* "Connection: close", or HTTP/1.0 without keep-alive */
	bool keep_alive_10;
	bool any_byte; /* at least one byte of a response arrived */
	char err[160];
};

/* Appends "METHOD target HTTP/1.1", then Host (host_port as given), the
 * User-Agent of http.h and an Accept of any media type, each unless the caller sent its
 * own, the caller's header lines (libcurl's rules: "Name:" alone sends
 * nothing, "Name;" an empty value), extra (already "\r\n"-terminated
 * lines, or NULL) and, for a body, Content-Type (when the caller sent none,
 * libcurl's application/x-www-form-urlencoded) and Content-Length. */
void h1_write_head(struct strbuf *out, const struct http_req *r, const char *target,
                   const char *host_port, const char *extra);

void h1_init(struct h1_parser *p, struct http_req *r, bool no_body, bool is_connect);
void h1_free(struct h1_parser *p);

/* Consumes up to len bytes (*used says how many: after H1_DONE the rest
 * belongs to no response). */
enum h1_result h1_feed(struct h1_parser *p, const char *data, size_t len, size_t *used);

/* The peer closed: H1_DONE for a close-delimited body, else H1_ERROR. */
enum h1_result h1_eof(struct h1_parser *p);

/* After H1_DONE: may the connection carry another request? */
bool h1_reusable(const struct h1_parser *p);

/* An HTTP-date (IMF-fixdate, RFC 850, asctime) to seconds since the epoch,
 * or -1. */
time_t h1_parse_date(const char *value);

#endif
