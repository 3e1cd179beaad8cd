/*
 * http — asynchronous HTTP(S) on the libuv loop, over libcurl's multi-socket
 * API or the native HTTP/1.1 and HTTP/2 transport (GA_HTTP_BACKEND; transport.h).
 *
 * One http_client is bound to one uv loop. Requests are queued, started
 * through curl's multi interface, and completed by a callback on the loop
 * thread; nothing blocks. Every request:
 *   - verifies TLS (peer and host name) — there is deliberately no way to
 *     turn verification off;
 *   - sends "User-Agent: general-agent/<version>";
 *   - never follows redirects (an Authorization header must not travel to a
 *     host the caller did not name);
 *   - speaks http or https only;
 *   - has a connect timeout and a total timeout;
 *   - bounds the response body (default HTTP_DEFAULT_MAX_BODY_BYTES): a
 *     larger body is an HTTP_ERR_TOO_LARGE error whose message reads
 *     "response body larger than 8 MiB from <host>".
 *
 * Per-host pacing: a host may have a minimum interval between request
 * starts (http_set_host_spacing) and may be held until a moment
 * (http_hold_host, e.g. after a 429 with Retry-After). Requests that may not
 * start yet wait in the queue in FIFO order per host; they are never
 * rejected for pacing. The on_response hook sees every response that has a
 * status before its callback runs, which is where rate-limit headers
 * (ratelimit-remaining, ratelimit-reset, retry-after) are booked.
 *
 * Bounds: at most HTTP_MAX_REQUESTS requests queued plus in flight (more is
 * an error from http_request, never a silent drop); HTTP_MAX_HOSTS pacing
 * entries (least recently used unconfigured entries are recycled); at most
 * HTTP_MAX_RESPONSE_HEADERS response headers of HTTP_MAX_HEADER_BYTES each
 * are kept (the rest are ignored); HTTP_MAX_REQUEST_HEADERS request headers.
 *
 * Memory: http_request copies everything it is given. The response passed
 * to a callback is borrowed for the duration of the call. Callbacks are
 * never called from inside http_request or http_cancel.
 *
 * Lifetime: http_client_close() calls the callback of every unfinished
 * request with HTTP_ERR_CANCELLED, closes the uv handles and frees the
 * client once the loop has run their close callbacks (so run the loop after
 * closing, as with any libuv handle).
 */
#ifndef GA_ADAPTERS_HTTP_HTTP_H
#define GA_ADAPTERS_HTTP_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"

#define HTTP_USER_AGENT                 "general-agent/" GA_VERSION
#define HTTP_DEFAULT_MAX_BODY_BYTES     ((size_t)8 * 1024 * 1024)
#define HTTP_DEFAULT_CONNECT_TIMEOUT_MS 10000u
#define HTTP_DEFAULT_TIMEOUT_MS         60000u
#define HTTP_MAX_REQUESTS               256
#define HTTP_MAX_HOSTS                  64
#define HTTP_MAX_RESPONSE_HEADERS       64
#define HTTP_MAX_HEADER_BYTES           8192
#define HTTP_MAX_REQUEST_HEADERS        32
#define HTTP_HOST_MAX                   256

struct http_client;

enum http_error {
	HTTP_OK = 0,        /* a response arrived (any status) */
	HTTP_ERR_TIMEOUT,   /* connect or total timeout */
	HTTP_ERR_CONNECT,   /* DNS failure, refused, unreachable */
	HTTP_ERR_TLS,       /* certificate or handshake failure */
	HTTP_ERR_TOO_LARGE, /* body over the request's limit */
	HTTP_ERR_TRANSPORT, /* connection reset, empty reply, partial body, ... */
	HTTP_ERR_CANCELLED, /* http_client_close() */
};

struct http_header {
	char *name;
	char *value;
};

struct http_response {
	enum http_error error;
	char error_msg[GA_ERR_MSG_MAX]; /* a sentence naming the host; "" when HTTP_OK */
	long status;                    /* 0 when no status line arrived */
	const struct http_header *headers;
	size_t n_headers;
	const char *body; /* NUL-terminated (body_len excludes it); "" when none */
	size_t body_len;
	const char *url;
	const char *host;
	uint64_t id;
	uint64_t elapsed_ms; /* from start (not queueing) to completion */
};

typedef void (*http_done_fn)(void *ud, const struct http_response *resp);
/* Called for every response with a status, before its callback. */
typedef void (*http_observe_fn)(void *ud, struct http_client *c, const struct http_response *resp);

struct http_request {
	const char *method;         /* "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD" */
	const char *url;            /* http:// or https:// */
	const char *const *headers; /* "Name: value" lines, NULL-terminated; may be NULL */
	const char *body;           /* may be NULL */
	size_t body_len;
	unsigned connect_timeout_ms; /* 0 = HTTP_DEFAULT_CONNECT_TIMEOUT_MS */
	unsigned timeout_ms;         /* 0 = HTTP_DEFAULT_TIMEOUT_MS */
	size_t max_body_bytes;       /* 0 = HTTP_DEFAULT_MAX_BODY_BYTES */
};

struct http_client_opts {
	unsigned default_spacing_ms; /* minimum gap between starts to one host; 0 = none */
	http_observe_fn on_response; /* rate-limit bookkeeping; may be NULL */
	void *observe_ud;
};

/* opts may be NULL. Returns NULL (and fills err) only when the transport's
 * library (libcurl, or GnuTLS for the native one) cannot be loaded or
 * initialised. */
struct http_client *http_client_new(uv_loop_t *loop, const struct http_client_opts *opts,
                                    struct ga_err *err);

/* Starts or queues a request. Returns its id (> 0), or 0 with err filled:
 * bad URL or scheme, too many headers, queue full, client closing. */
uint64_t http_request(struct http_client *c, const struct http_request *req, http_done_fn cb,
                      void *ud, struct ga_err *err);

/* Drops a queued or running request without calling its callback. Returns
 * 0, or -1 when the id is unknown (already finished). */
int http_cancel(struct http_client *c, uint64_t id);

/* Minimum interval between request starts for host (the URL's host name,
 * e.g. "api.github.com"). 0 removes the spacing. */
void http_set_host_spacing(struct http_client *c, const char *host, unsigned spacing_ms);
/* No new request to host starts for delay_ms from now (a longer existing
 * hold is kept). */
void http_hold_host(struct http_client *c, const char *host, uint64_t delay_ms);

/* The loop the client runs on. */
uv_loop_t *http_client_loop(const struct http_client *c);

/* Requests queued plus in flight. */
size_t http_pending(const struct http_client *c);

/* See the header paragraph. NULL accepted. */
void http_client_close(struct http_client *c);

/* First response header with that name (case-insensitive), or NULL. */
const char *http_response_header(const struct http_response *resp, const char *name);

/* Parses a Retry-After value: delta-seconds ("120") or an HTTP-date, which
 * is measured against now_ms. Returns 0 and the delay in ms (never
 * negative), or -1 when the value is neither. */
int http_parse_retry_after(const char *value, int64_t now_ms, int64_t *delay_ms);

/* The host name of an http(s) URL into out (at most HTTP_HOST_MAX bytes).
 * Returns 0, or -1 with err naming the URL problem. */
int http_url_host(const char *url, char *out, size_t cap, struct ga_err *err);

const char *http_error_name(enum http_error e);

#endif
