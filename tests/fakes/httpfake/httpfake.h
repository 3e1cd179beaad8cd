/*
 * httpfake — a scriptable HTTP server on 127.0.0.1 for tests.
 *
 * A fake is a libmicrohttpd daemon bound to 127.0.0.1 (port 0 = ephemeral)
 * that answers from routes the test registers, records every request, and
 * lets the test wait for requests instead of sleeping. The protocol fakes
 * (XRPC, GitHub REST, OpenAI chat completions) are built on it.
 *
 * Threads: the fake runs on libmicrohttpd's own threads (one per
 * connection), because the code under test runs its event loop on the
 * test's main thread. Every public function may be called from any thread;
 * route tables and the request record are guarded by one mutex. Handlers
 * (httpfake_handle) run on a connection thread, one at a time (they are
 * serialised by a lock of their own), so a handler's userdata needs no lock
 * as long as the test reads it only after httpfake_wait_count() has seen the
 * request: the request is recorded after its handler returns.
 *
 * Matching: a route matches on exact method ("*" = any) and exact path
 * without the query (a path ending in '*' matches by prefix), plus every
 * optional matcher added to it. Routes are tried in registration order and
 * the first match wins, so register specific routes before general ones.
 * A request no route matches is answered 404 with a JSON body naming the
 * method and the path, and is recorded like any other.
 *
 * Sequences: a scripted route holds a sequence of responses; each matching
 * request consumes the next one and the last one repeats.
 *
 * Bounds: request bodies are recorded up to HTTPFAKE_BODY_LIMIT_BYTES
 * (settable per fake; longer bodies are read to the end, truncated and
 * flagged); the record keeps the last HTTPFAKE_RECORD_MAX requests (older
 * ones are dropped, the count keeps growing); HTTPFAKE_MAX_CONNECTIONS
 * connections at once; a sequence holds at most HTTPFAKE_SEQUENCE_MAX
 * responses and a route HTTPFAKE_MATCHERS_MAX matchers. Exceeding a
 * configuration bound, or passing NULL where a value is required, is a bug
 * in the test: the function prints a sentence to stderr and aborts.
 *
 * Memory: the fake owns its routes and the responses added to them; pointers
 * to them stay valid until httpfake_reset_routes() or httpfake_free().
 * Requests returned by the accessors are copies the caller frees with
 * httpfake_request_free().
 */
#ifndef GA_TESTS_FAKES_HTTPFAKE_HTTPFAKE_H
#define GA_TESTS_FAKES_HTTPFAKE_HTTPFAKE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTPFAKE_BODY_LIMIT_BYTES (1024u * 1024u)
#define HTTPFAKE_RECORD_MAX       1024u
#define HTTPFAKE_MAX_CONNECTIONS  128u
#define HTTPFAKE_SEQUENCE_MAX     1024u
#define HTTPFAKE_MATCHERS_MAX     16u
#define HTTPFAKE_HEADERS_MAX      64u

struct httpfake;
struct httpfake_route;

struct httpfake_header {
	char *name;
	char *value;
};

/* One recorded request. All strings are NUL-terminated and owned by the
 * request; body is NUL-terminated too (body_len excludes the NUL). */
struct httpfake_request {
	uint64_t seq; /* 0 for the first request; not yet set (0) in handlers */
	char *method;
	char *path;                      /* decoded, without the query */
	char *query;                     /* raw query string without '?', "" when none */
	struct httpfake_header *headers; /* as received, in order */
	size_t n_headers;
	struct httpfake_header *params; /* decoded query arguments */
	size_t n_params;
	char *body;
	size_t body_len;     /* bytes kept, at most the body limit */
	size_t body_total;   /* bytes the client sent */
	bool body_truncated; /* body_total > body_len */
	bool matched;        /* false when answered by the 404 fallback */
	int status;          /* status answered; 0 when dropped or hung */
};

/* What to do with a request once its delay has passed. */
enum httpfake_action {
	HTTPFAKE_RESPOND = 0, /* send the response */
	HTTPFAKE_DROP,        /* close the connection without answering */
	HTTPFAKE_HANG,        /* never answer; released when the fake stops */
};

/* A response. Handlers fill the one they are given (status 200, no headers,
 * empty body on entry); fields may be set directly or with the helpers
 * below, which own the header and body memory. */
struct httpfake_response {
	int status;
	enum httpfake_action action;
	unsigned delay_ms; /* wait before answering; other connections go on */
	struct httpfake_header *headers;
	size_t n_headers;
	char *body;
	size_t body_len;
	struct httpfake *owner; /* set for responses held by a route */
};

/* Called on a connection thread for each request its route matches. req is
 * borrowed for the call. Must not block: use resp->delay_ms or
 * HTTPFAKE_HANG to hold a request. */
typedef void (*httpfake_handler_fn)(const struct httpfake_request *req,
                                    struct httpfake_response *resp, void *userdata);

/* Called for every request (matched or not) after it is recorded and
 * before it is answered, so whatever it writes exists by the time the client
 * has its answer. Calls are serialised; req is borrowed for the call. */
typedef void (*httpfake_observer_fn)(const struct httpfake_request *req, void *userdata);

/* Starts a fake on 127.0.0.1:port (0 = ephemeral). Returns NULL and fills
 * err on failure. Free with httpfake_free(). */
struct httpfake *httpfake_new(uint16_t port, char *err, size_t errlen);

/* Stops the daemon (requests held by a delay or HANG are released and their
 * connections closed without an answer), then frees everything. NULL is
 * accepted. */
void httpfake_free(struct httpfake *fake);

/* The same over TLS (libmicrohttpd's GnuTLS) with that certificate chain
 * and key (PEM text the caller keeps until httpfake_free); the base URL is
 * https://. */
struct httpfake *httpfake_new_tls(uint16_t port, const char *cert_pem, const char *key_pem,
                                  char *err, size_t errlen);

uint16_t httpfake_port(const struct httpfake *fake);
/* "http://127.0.0.1:NNNNN", owned by the fake. */
const char *httpfake_base_url(const struct httpfake *fake);

/* Bytes of each request body to record (default HTTPFAKE_BODY_LIMIT_BYTES). */
void httpfake_set_body_limit(struct httpfake *fake, size_t bytes);
void httpfake_set_observer(struct httpfake *fake, httpfake_observer_fn fn, void *userdata);

/* --- routes ------------------------------------------------------------- */

/* A scripted route; add responses with httpfake_route_respond(). Until it
 * has one it answers 500 naming itself. */
struct httpfake_route *httpfake_route(struct httpfake *fake, const char *method, const char *path);
/* A route answered by a C handler. */
struct httpfake_route *httpfake_handle(struct httpfake *fake, const char *method, const char *path,
                                       httpfake_handler_fn fn, void *userdata);

/* Matchers; a route matches only when all of its matchers do. */
void httpfake_route_match_query(struct httpfake_route *route, const char *substring);
void httpfake_route_match_param(struct httpfake_route *route, const char *name, const char *value);
void httpfake_route_match_body(struct httpfake_route *route, const char *substring);
/* Header names compare case-insensitively, values exactly. */
void httpfake_route_match_header(struct httpfake_route *route, const char *name, const char *value);

/* Appends a response to the route's sequence and returns it (owned by the
 * route) so headers or a delay can be added. content_type and body may be
 * NULL. */
struct httpfake_response *httpfake_route_respond(struct httpfake_route *route, int status,
                                                 const char *content_type, const char *body);

/* How many requests this route has answered. */
uint64_t httpfake_route_hits(const struct httpfake_route *route);

/* Removes every route (in-flight requests keep the response they chose). */
void httpfake_reset_routes(struct httpfake *fake);

/* --- responses ------------------------------------------------------------ */

/* Appends a header (several with one name are allowed). */
void httpfake_response_header(struct httpfake_response *resp, const char *name, const char *value);
/* Replaces the body with a copy of data. */
void httpfake_response_body(struct httpfake_response *resp, const void *data, size_t len);
/* Sets status, Content-Type: application/json and the body. */
void httpfake_response_json(struct httpfake_response *resp, int status, const char *json);
/* Sets status, Content-Type: application/json and the body to json printed
 * unformatted; takes json (a cJSON tree) and deletes it. The stateful fakes
 * answer their protocol and their control endpoints with it. */
struct cJSON;
void httpfake_response_cjson(struct httpfake_response *resp, int status, struct cJSON *json);
void httpfake_response_delay(struct httpfake_response *resp, unsigned delay_ms);
void httpfake_response_action(struct httpfake_response *resp, enum httpfake_action action);

/* --- recorded requests ----------------------------------------------------- */

/* Requests seen since start (or the last clear), including dropped ones. */
uint64_t httpfake_request_count(struct httpfake *fake);
/* Copy of the request with that seq, or NULL when not seen yet or dropped
 * from the record. Caller frees. */
struct httpfake_request *httpfake_request_get(struct httpfake *fake, uint64_t seq);
/* Copy of the oldest / newest recorded request with that method and path
 * (exact; method "*" or NULL = any, path NULL = any), or NULL. Caller frees. */
struct httpfake_request *httpfake_request_find(struct httpfake *fake, const char *method,
                                               const char *path);
struct httpfake_request *httpfake_request_find_last(struct httpfake *fake, const char *method,
                                                    const char *path);
/* Waits until at least n requests have been seen. Returns 0, or -1 when
 * timeout_ms passed first. */
int httpfake_wait_count(struct httpfake *fake, uint64_t n, unsigned timeout_ms);
/* For a fake built on this one that counts what it served under its own
 * lock: waits on cond (initialised with the default clock, CLOCK_REALTIME)
 * under mu, which the caller does not hold, until *counter >= n. Returns
 * 0, or -1 when timeout_ms passed first. */
int httpfake_wait_counter(pthread_mutex_t *mu, pthread_cond_t *cond, const uint64_t *counter,
                          uint64_t n, unsigned timeout_ms);
/* Forgets the record and restarts the count at 0. */
void httpfake_clear_requests(struct httpfake *fake);

void httpfake_request_free(struct httpfake_request *req);
/* First header / query argument with that name (headers case-insensitive),
 * or NULL. Borrowed from req. */
const char *httpfake_request_header(const struct httpfake_request *req, const char *name);
const char *httpfake_request_param(const struct httpfake_request *req, const char *name);
/* One-line JSON object {seq, method, path, query, headers, body,
 * body_truncated, body_total, status, matched}; a body that is not valid
 * UTF-8 is written as "body_base64" instead. Caller frees. */
char *httpfake_request_to_json(const struct httpfake_request *req);

/* --- scripts ------------------------------------------------------------------ */

/* Adds the routes described by a JSON script (format: README.md in this
 * folder). On error returns -1, adds nothing, and fills err with a sentence
 * naming the bad value by its place in the script. */
int httpfake_load_script(struct httpfake *fake, const char *json, char *err, size_t errlen);
/* Same, reading the script from a file. */
int httpfake_load_script_file(struct httpfake *fake, const char *path, char *err, size_t errlen);

#endif
