/*
 * h2 — the HTTP/2 codec of the native transport, over libnghttp2 (loaded
 * by nghttp2_shim.h): one client session per TLS connection that chose
 * "h2" by ALPN, carrying one request (one stream) at a time.
 *
 * Rules of use:
 * - h2_new() queues the connection preface and SETTINGS; every byte the
 *   session wants to send goes out through the h2_out_fn at once (the
 *   caller copies it into a write), after each h2_request and h2_feed.
 * - h2_request() opens a stream for an http_req: the request headers are
 *   h1_write_head's (same defaults, same caller rules), as HTTP/2 fields
 *   (lower-case names, :authority for Host, connection-specific fields
 *   dropped); the body is sent as DATA. The response goes into the request
 *   as the HTTP/1.1 parser would put it: headers within http.h's bounds
 *   (interim 1xx and trailers dropped), the body bounded by r->max_body.
 * - Every byte from the server goes to h2_feed(), also while no stream is
 *   open (SETTINGS, PING, GOAWAY arrive on an idle connection).
 * - Bounds: the response head of a stream at most H1_MAX_HEAD_BYTES, the
 *   body r->max_body (H2_TOO_LARGE past it, or when content-length
 *   announces more).
 * - Errors are sentences in h2_err() (no host: the caller adds it).
 */
#ifndef GA_ADAPTERS_HTTP_H2_H
#define GA_ADAPTERS_HTTP_H2_H

#include <stdbool.h>
#include <stddef.h>

#include "adapters/http/transport.h"
#include "common/err.h"

enum h2_result {
	H2_MORE,      /* nothing final yet */
	H2_DONE,      /* the stream's response is complete */
	H2_ERROR,     /* the stream or the session failed (h2_err) */
	H2_TOO_LARGE, /* the body passed r->max_body */
	H2_REFUSED,   /* the server did not process the stream (GOAWAY or
	               * REFUSED_STREAM): safe to send again elsewhere */
};

struct h2;

typedef void (*h2_out_fn)(void *ud, const char *data, size_t len);

/* Loads libnghttp2 (idempotent, sticky). 0, or -1 with err. */
int h2_load(struct ga_err *err);

/* A client session; NULL with err. Free with h2_free (NULL ok). */
struct h2 *h2_new(h2_out_fn out, void *ud, struct ga_err *err);
void h2_free(struct h2 *h);

/* Opens the stream for r to https://authority/path. 0, or -1 with err.
 * One stream at a time: the previous one must have ended. */
int h2_request(struct h2 *h, struct http_req *r, const char *authority, const char *path,
               struct ga_err *err);

/* Bytes from the server. With no stream open only H2_MORE or H2_ERROR. */
enum h2_result h2_feed(struct h2 *h, const char *p, size_t n);

/* The open stream's final status (0 before it). */
long h2_status(const struct h2 *h);
/* Did any frame of the open stream's response arrive? */
bool h2_any_byte(const struct h2 *h);
/* May the connection carry another request (no GOAWAY, no error)? */
bool h2_reusable(const struct h2 *h);
const char *h2_err(const struct h2 *h);

#endif
