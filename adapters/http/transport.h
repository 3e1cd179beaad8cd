/*
 * transport — what http.c (the queue, per-host pacing, holds, the observe
 * hook and the public API of http.h) asks of the code that moves bytes.
 *
 * Two transports implement it, one per library: curl_transport.c (libcurl's
 * multi-socket interface) and native.c (HTTP/1.1 and HTTP/2 over libuv and GnuTLS).
 * The CMake option GA_HTTP_BACKEND chooses which one `ga_http` links; both
 * libraries are always built so the tests of each run in every build.
 *
 * Rules of use:
 * - http.c owns every struct http_req. It hands a request to
 *   transport_start() once pacing allows; from then on the transport owns
 *   the request's wire state (r->tr) and reports the outcome exactly once
 *   with http_req_done(), from a libuv callback (never from inside
 *   transport_start or transport_cancel). After http_req_done the request
 *   is freed: the transport must not touch it again.
 * - transport_cancel() drops an active request without a callback; the
 *   transport releases r->tr and may keep or close the connection.
 * - transport_close() is called once, with no active request left; the
 *   transport closes its handles and calls done(ud) when the last close
 *   callback has run (possibly later, from the loop).
 */
#ifndef GA_ADAPTERS_HTTP_TRANSPORT_H
#define GA_ADAPTERS_HTTP_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "adapters/http/http.h"
#include "common/err.h"
#include "common/strbuf.h"

struct http_transport;

/* One request, shared by http.c and the transport. */
struct http_req {
	struct http_req *prev, *next; /* in the client's queued or active list */
	bool active;
	uint64_t id;
	struct http_client *c;
	char host[HTTP_HOST_MAX];
	char *url;
	char *method;
	char *body; /* NUL-terminated copy; NULL when none */
	size_t body_len;
	char **headers; /* "Name: value" copies, n_headers of them */
	size_t n_headers;
	unsigned connect_timeout_ms, timeout_ms;
	size_t max_body;
	struct strbuf resp_body; /* bounded by max_body */
	struct http_header resp_headers[HTTP_MAX_RESPONSE_HEADERS];
	size_t n_resp_headers;
	uint64_t started_ms; /* uv_now at transport_start */
	http_done_fn cb;
	void *ud;
	void *tr; /* the transport's per-request state */
};

/* Reports the outcome of an active request and frees it (http.c).
 * status 0 = no status line; msg is the error sentence ("" or NULL when
 * kind is HTTP_OK). */
void http_req_done(struct http_req *r, enum http_error kind, long status, const char *msg);

/* Forgets the response headers collected so far (a new status line). */
void http_req_reset_headers(struct http_req *r);

/* Appends one response header within the bounds of http.h (extra or
 * oversized headers are ignored). name and value need not be terminated. */
void http_req_add_header(struct http_req *r, const char *name, size_t name_len, const char *value,
                         size_t value_len);

/* "response body larger than 8 MiB from <host>" into msg. */
void http_req_too_large_msg(const struct http_req *r, char *msg, size_t cap);

struct http_transport *transport_new(uv_loop_t *loop, struct ga_err *err);
int transport_start(struct http_transport *t, struct http_req *r);
void transport_cancel(struct http_transport *t, struct http_req *r);
void transport_close(struct http_transport *t, void (*done)(void *ud), void *ud);

/* The host name of an http(s) URL; the contract of http_url_host. */
int transport_url_host(const char *url, char *out, size_t cap, struct ga_err *err);
/* An HTTP-date to seconds since the epoch; -1 when it is not one. */
time_t transport_parse_date(const char *value);

#endif
