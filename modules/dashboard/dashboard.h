/*
 * dashboard — the agent's web dashboard: a small HTTP server on
 * the agent's one libuv loop that serves the static pages shipped in
 * web/dashboard/ and a JSON API, so a person can watch every decision the
 * agent makes, live, and pause it.
 *
 * dashboard_new binds and listens itself (a bad or busy address fails
 * the start, as before); libmicrohttpd — and GnuTLS, which Debian's build
 * brings along (~2.5 MB RSS, bench/footprint.md) — is loaded when the
 * first connection arrives and takes over the listening socket, so an
 * agent nobody watches never pays for it. A library that cannot be loaded
 * or started then is logged (ERROR) and the socket closed: connections
 * are refused, never left hanging.
 *
 * libmicrohttpd runs in "external polling" mode with epoll: MHD starts no
 * thread; its one epoll descriptor is watched by a uv_poll (readable →
 * MHD_run) and a uv_timer is re-armed after every MHD_run with
 * MHD_get_timeout (libmicrohttpd's rule: MHD_run must be called no later
 * than that, whatever the sockets say). Everything, the access handler
 * included, runs on the loop thread. The one large read, why over
 * decisions.jsonl and its backups (DECISION_LOG_MAX_BYTES each, what
 * `general-agent why` reads), runs on libuv's thread pool while its
 * connection is suspended; what remains on the loop are two small bounded
 * reads on a person's request: permissions (PERMS_FILE_MAX_BYTES) and the
 * audit's current file (AUDIT_MAX_BYTES).
 *
 * API (all JSON; errors are {"error": "<a sentence>"} with a 4xx/5xx):
 *   GET  /api/status               the caller's status object (status_json)
 *                                  with agent, paused, jobsInFlight,
 *                                  lastActivityBy, tokenBudget (today's
 *                                  tokens, calls, refusals and the limit)
 *                                  and "dashboard" (SSE clients, drops)
 *                                  set by the dashboard
 *   GET  /api/decisions?limit=&platform=&verdict=&rule=&stage=
 *                                  the recent decisions (the log's ring,
 *                                  at most DECISION_LOG_RECENT), oldest first
 *   GET  /api/events               Server-Sent Events: the last
 *                                  DASHBOARD_SSE_BACKLOG decisions, then
 *                                  each new one ("event: decision"), pause
 *                                  changes ("event: paused") and a comment
 *                                  every DASHBOARD_SSE_KEEPALIVE_MS
 *   GET  /api/why/<message id>     the message's whole story: every
 *                                  decision about it (decisions.jsonl and
 *                                  its backups, at most DASHBOARD_WHY_MAX,
 *                                  the last kept) and the message itself
 *                                  when the conversation store holds it
 *   GET  /api/conversations        keys, message counts, last activity
 *   GET  /api/conversations/<key>  one conversation (conv_store_to_json)
 *   GET  /api/commitments          the ledger: state, attempts, artifact
 *   GET  /api/permissions          send permissions (mode, patterns, broken)
 *                                  and the last DASHBOARD_AUDIT_TAIL audit
 *                                  lines
 *   POST /api/pause, /api/resume   the kill switch: control_save (by
 *                                  "dashboard") + pipeline_set_paused, then
 *                                  on_paused; {"paused": bool}
 *   GET  /, /<file>                the files of web_dir (loaded at start)
 *
 * Protection:
 *   - the address: a loopback address (127.0.0.0/8, ::1, "localhost") by
 *     default; any other address is refused at start unless a token is
 *     configured (DASHBOARD_TOKEN, at least DASHBOARD_TOKEN_MIN bytes);
 *   - the token: when set, every /api request needs
 *     "Authorization: Bearer <token>" (compared in constant time) → 401;
 *     the pages themselves hold nothing secret and load without it (the
 *     page reads the token from the URL fragment, which no server sees);
 *   - DNS rebinding: without a token, a request whose Host is not a
 *     loopback name is refused (403): a web page cannot rebind its own
 *     name to 127.0.0.1 to read the API;
 *   - CSRF: pause/resume are POST only (405 otherwise) and need the header
 *     "X-Dashboard: 1" (a cross-origin page cannot send a custom header
 *     without a CORS preflight, which is never granted) and, when an
 *     Origin header is present, an Origin equal to http://<Host> (403);
 *   - secrets: every API body goes through log_redact (the registered
 *     secrets, DASHBOARD_TOKEN among them, become "[redacted]").
 *
 * Bounds: DASHBOARD_MAX_CONNECTIONS connections (MHD's limit), request
 * headers within DASHBOARD_CONNECTION_MEMORY bytes, bodies of at most
 * DASHBOARD_MAX_BODY_BYTES (413 beyond), at most DASHBOARD_MAX_SSE_CLIENTS
 * event streams (503 beyond); each stream queues at most
 * DASHBOARD_SSE_QUEUE_MAX_BYTES not yet taken by its socket — a client
 * that falls further behind is dropped (its queue freed, its socket shut
 * down) and counted, never waited for. Static files: at most
 * DASHBOARD_STATIC_MAX_FILES of DASHBOARD_STATIC_MAX_BYTES each.
 *
 * Lifetime: the strings of the config (addr, token, memory_dir,
 * agent_name) are copied and web_dir is read during dashboard_new only;
 * the modules (loop, dlog, pipeline, st, ledger) are borrowed and must
 * outlive the dashboard: close it before the decision log, the pipeline
 * and the ledger. dashboard_close() unsubscribes, ends the streams, stops
 * MHD and closes its handles; the struct is freed once libuv has closed
 * them (the loop must run again, as for any handle).
 */
#ifndef GA_MODULES_DASHBOARD_DASHBOARD_H
#define GA_MODULES_DASHBOARD_DASHBOARD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"

#define DASHBOARD_MAX_CONNECTIONS      32
#define DASHBOARD_CONNECTION_MEMORY    (64 * 1024)
#define DASHBOARD_CONNECTION_TIMEOUT_S 30
#define DASHBOARD_MAX_BODY_BYTES       4096
#define DASHBOARD_MAX_SSE_CLIENTS      8
#define DASHBOARD_SSE_BACKLOG          100
#define DASHBOARD_SSE_QUEUE_MAX_BYTES  ((size_t)256 * 1024)
#define DASHBOARD_SSE_KEEPALIVE_MS     15000
#define DASHBOARD_WHY_MAX              500
#define DASHBOARD_AUDIT_TAIL           50
#define DASHBOARD_STATIC_MAX_FILES     32
#define DASHBOARD_STATIC_MAX_BYTES     ((size_t)512 * 1024)
#define DASHBOARD_STATIC_NAME_MAX      64 /* bytes of a page file name */
#define DASHBOARD_TOKEN_MIN            16

struct budget;
struct decision_log;
struct ledger;
struct pipeline;
struct state_store;

struct dashboard_config {
	uv_loop_t *loop;
	const char *addr;          /* "127.0.0.1:7780", "[::1]:7780", "0.0.0.0:7780"; port 0: any */
	const char *token;         /* DASHBOARD_TOKEN, or NULL/"" for none */
	const char *web_dir;       /* the static pages (web/dashboard of the data directory) */
	struct decision_log *dlog; /* may be NULL: no decisions */
	struct pipeline *pipeline; /* may be NULL: no pause, no conversations */
	const struct state_store *st; /* where control.json is saved (pause) */
	const struct ledger *ledger;  /* may be NULL */
	const struct budget *budget;  /* the daily token budget; may be NULL */
	const char *memory_dir;       /* decisions.jsonl (why), permissions, audit */
	const char *agent_name;
	int64_t started_ms; /* the agent's start (uptime); 0 unknown */
	/* A new status object (the daemon's status file content), or NULL.
	 * May be NULL. The dashboard deletes what it returns. */
	cJSON *(*status_json)(void *ud);
	/* Called after a pause or resume from the page was saved and applied
	 * (the daemon tells its control watch and rewrites its status).
	 * May be NULL. */
	void (*on_paused)(void *ud, bool paused);
	void *ud;
};

struct dashboard;

/* Binds and starts serving on c->loop. NULL with err naming the problem:
 * an address that cannot be parsed, a non-loopback address without a token
 * (or a token shorter than DASHBOARD_TOKEN_MIN), a web_dir that cannot be
 * read, a port that cannot be bound. */
struct dashboard *dashboard_new(const struct dashboard_config *c, struct ga_err *err);
/* The bound port (useful with port 0). */
int dashboard_port(const struct dashboard *d);
/* "http://127.0.0.1:7780/" — what to open (never with the token). */
const char *dashboard_url(const struct dashboard *d);
/* Sends "event: paused" to every stream (a change made elsewhere: the
 * terminal's /pause, `general-agent pause`). */
void dashboard_paused_changed(struct dashboard *d, bool paused);
/* NULL ok. See "Lifetime". Not from inside status_json or on_paused (they
 * run inside libmicrohttpd, which this stops). */
void dashboard_close(struct dashboard *d);

/* --- pure parts, exposed for tests ------------------------------------------- */

struct dashboard_addr {
	char host[64]; /* numeric, without brackets */
	int port;
	bool ipv6;
	bool loopback;
};
/* Parses host:port ("localhost" is 127.0.0.1; IPv6 in brackets). 0, or -1
 * with err naming the value. */
int dashboard_parse_addr(const char *s, struct dashboard_addr *out, struct ga_err *err);
/* Constant-time (in the length of want) equality of a presented token. */
bool dashboard_token_equal(const char *got, const char *want);
/* Is the Host header a loopback name (127.x, localhost, [::1], any port)? */
bool dashboard_host_is_loopback(const char *host);
/* Is a request path a safe static file name ("app.js": one segment of
 * [A-Za-z0-9._-], not starting with '.', at most DASHBOARD_STATIC_NAME_MAX
 * bytes; common/mime.h's rule)? */
bool dashboard_static_name_ok(const char *name);

#endif
