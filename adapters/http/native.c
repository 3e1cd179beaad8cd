/*
 * native — the HTTP/1.1 and HTTP/2 transport of transport.h over libuv and
 * GnuTLS (HTTP/2 when the server chooses it by ALPN, h2.h): one request at
 * a time per connection, kept-alive connections pooled per (scheme, host,
 * port, proxy), a total timeout per request, and one retry on a fresh
 * connection for idempotent methods when a reused one fails before any
 * byte of the answer (the server closed it while idle) or an HTTP/2 server
 * did not process the stream (GOAWAY, REFUSED_STREAM).
 *
 * Bounds: at most NATIVE_POOL_MAX idle connections (the oldest is closed
 * to make room), each kept at most NATIVE_IDLE_MS; connections in use are
 * bounded by the requests in flight (HTTP_MAX_REQUESTS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/http/conn.h"
#include "adapters/http/h1.h"
#include "adapters/http/h2.h"
#include "adapters/http/proxy.h"
#include "adapters/http/tls.h"
#include "adapters/http/transport.h"
#include "adapters/http/url.h"
#include "common/log.h"
#include "common/xalloc.h"

#define LOG_COMP        "http"
#define NATIVE_POOL_MAX 8
#define NATIVE_IDLE_MS  60000u
#define NATIVE_KEY_MAX  (2 * HTTP_HOST_MAX + PROXY_AUTH_MAX + PROXY_SOCKS_CRED_MAX + 40)

struct idle {
	struct idle *next;
	struct http_transport *t;
	struct conn *conn;
	char key[NATIVE_KEY_MAX];
	uint64_t since_ms;
};

/* A request's wire state (r->tr). Freed once its timer has closed. */
struct nreq {
	struct http_transport *t;
	struct http_req *r; /* NULL once reported or cancelled */
	struct url u;
	struct proxy px;
	char key[NATIVE_KEY_MAX];
	struct conn *conn;
	bool reused, retried, sent;
	bool connect_timed_out; /* the connection's connect deadline, not the total */
	bool answered;          /* a byte of the answer arrived (set when the exchange fails) */
	bool h2_refused;        /* the HTTP/2 server did not process the stream */
	struct h1_parser parser;
	struct h2 *h2;    /* the connection's HTTP/2 session when it speaks h2 (conn owns it) */
	uv_timer_t timer; /* the total timeout; also defers early failures */
	enum http_error early_kind;
	char early_msg[GA_ERR_MSG_MAX];
};

struct http_transport {
	uv_loop_t *loop;
	struct idle *pool; /* most recently parked first */
	size_t n_idle;
	uv_timer_t sweep; /* closes connections idle too long */
	int open;         /* the sweep timer plus request timers not yet closed */
	bool closing;
	void (*done)(void *ud);
	void *done_ud;
};

static void send_request(struct nreq *q);
static void retry_or_fail(struct nreq *q, enum http_error kind, const char *msg);
static void on_nreq_timer(uv_timer_t *timer);

int transport_url_host(const char *url, char *out, size_t cap, struct ga_err *err)
{
	struct url u;
	if (url_parse(url, &u, err) != 0)
		return -1;
	url_free(&u);
	if (strlen(u.host) >= cap)
		return err_set(err, "the host name in '%s' is too long", url);
	snprintf(out, cap, "%s", u.host);
	return 0;
}

time_t transport_parse_date(const char *value)
{
	return h1_parse_date(value);
}

/* --- lifetime of the transport's parts ---------------------------------------------------- */

static void part_closed(struct http_transport *t)
{
	if (--t->open == 0 && t->closing) {
		void (*done)(void *) = t->done;
		void *ud = t->done_ud;
		free(t);
		if (done)
			done(ud);
	}
}

static void on_nreq_timer_closed(uv_handle_t *h)
{
	struct nreq *q = h->data;
	struct http_transport *t = q->t;
	h1_free(&q->parser);
	url_free(&q->u);
	free(q);
	part_closed(t);
}

/* Detaches q from its request and releases it (asynchronously). */
static void nreq_release(struct nreq *q)
{
	if (q->r)
		q->r->tr = NULL;
	q->r = NULL;
	uv_timer_stop(&q->timer);
	uv_close((uv_handle_t *)&q->timer, on_nreq_timer_closed);
}

/* Reports the outcome and releases q. The connection is the caller's to
 * park or close first: the callback may close the whole client. */
static void finish(struct nreq *q, enum http_error kind, long status, const char *msg)
{
	struct http_req *r = q->r;
	char full[GA_ERR_MSG_MAX] = "";
	if (kind == HTTP_ERR_TOO_LARGE)
		http_req_too_large_msg(r, full, sizeof full);
	else if (kind == HTTP_ERR_TIMEOUT)
		err_fmt(full, sizeof full, "%s did not answer within %u ms (%s)", r->host,
		        q->connect_timed_out ? r->connect_timeout_ms : r->timeout_ms, msg);
	else if (kind == HTTP_ERR_CONNECT)
		err_fmt(full, sizeof full, "cannot connect to %s: %s", r->host, msg);
	else if (kind == HTTP_ERR_TLS)
		err_fmt(full, sizeof full, "TLS with %s failed: %s", r->host, msg);
	else if (kind != HTTP_OK)
		err_fmt(full, sizeof full, "request to %s failed: %s", r->host, msg);
	q->conn = NULL;
	nreq_release(q);
	http_req_done(r, kind, status, full);
}

/* --- the pool ------------------------------------------------------------------------------ */

static void on_sweep(uv_timer_t *timer);

static void arm_sweep(struct http_transport *t)
{
	if (!t->pool || t->closing) {
		uv_timer_stop(&t->sweep);
		return;
	}
	uint64_t oldest = UINT64_MAX;
	for (struct idle *i = t->pool; i; i = i->next)
		if (i->since_ms < oldest)
			oldest = i->since_ms;
	uint64_t now = uv_now(t->loop), due = oldest + NATIVE_IDLE_MS;
	uv_timer_start(&t->sweep, on_sweep, due > now ? due - now : 0, 0);
}

static void pool_unlink(struct http_transport *t, struct idle *victim)
{
	for (struct idle **p = &t->pool; *p; p = &(*p)->next) {
		if (*p == victim) {
			*p = victim->next;
			t->n_idle--;
			return;
		}
	}
}

static void pool_drop(struct http_transport *t, struct idle *i)
{
	pool_unlink(t, i);
	conn_close(i->conn);
	free(i);
}

static void on_sweep(uv_timer_t *timer)
{
	struct http_transport *t = timer->data;
	uint64_t now = uv_now(t->loop);
	struct idle *i = t->pool;
	while (i) {
		struct idle *next = i->next;
		if (i->since_ms + NATIVE_IDLE_MS <= now)
			pool_drop(t, i);
		i = next;
	}
	arm_sweep(t);
}

/* An idle connection that speaks, or closes, is done for: an answer
 * nobody asked for, or the server's idle timeout. */
static void idle_ready(void *ud, struct conn *c)
{
	(void)ud;
	(void)c;
}

static void idle_data(void *ud, struct conn *c, const char *p, size_t n)
{
	struct idle *i = ud;
	/* HTTP/2 servers send SETTINGS, PING and WINDOW_UPDATE while idle. */
	struct h2 *h = conn_h2(c) ? conn_proto(c) : NULL;
	if (h && p && h2_feed(h, p, n) == H2_MORE && h2_reusable(h))
		return;
	struct http_transport *t = i->t;
	pool_drop(t, i);
	arm_sweep(t);
}

static void idle_closed(void *ud, struct conn *c, enum http_error kind, const char *msg)
{
	(void)kind;
	(void)msg;
	idle_data(ud, c, NULL, 0);
}

static const struct conn_events idle_events = {idle_ready, idle_data, idle_closed};

static void pool_put(struct http_transport *t, struct conn *c, const char *key)
{
	if (t->closing) {
		conn_close(c);
		return;
	}
	if (t->n_idle >= NATIVE_POOL_MAX) {
		struct idle *oldest = t->pool;
		for (struct idle *i = t->pool; i; i = i->next)
			if (i->since_ms < oldest->since_ms)
				oldest = i;
		pool_drop(t, oldest);
	}
	struct idle *i = xcalloc(1, sizeof *i);
	i->t = t;
	i->conn = c;
	snprintf(i->key, sizeof i->key, "%s", key);
	i->since_ms = uv_now(t->loop);
	i->next = t->pool;
	t->pool = i;
	t->n_idle++;
	conn_set_owner(c, &idle_events, i);
	arm_sweep(t);
}

static struct conn *pool_take(struct http_transport *t, const char *key)
{
	for (struct idle *i = t->pool; i; i = i->next) {
		if (strcmp(i->key, key) == 0 && !conn_dead(i->conn)) {
			struct conn *c = i->conn;
			pool_unlink(t, i);
			free(i);
			arm_sweep(t);
			return c;
		}
	}
	return NULL;
}

/* --- one exchange ---------------------------------------------------------------------------- */

static void on_h2_answer(struct nreq *q, struct conn *c, const char *p, size_t n)
{
	enum h2_result res = h2_feed(q->h2, p, n);
	if (res == H2_MORE)
		return;
	if (res == H2_DONE) {
		if (h2_reusable(q->h2))
			pool_put(q->t, c, q->key);
		else
			conn_close(c);
		finish(q, HTTP_OK, h2_status(q->h2), NULL);
		return;
	}
	char msg[GA_ERR_MSG_MAX];
	snprintf(msg, sizeof msg, "%s", h2_err(q->h2));
	long status = h2_status(q->h2);
	q->answered = h2_any_byte(q->h2);
	q->h2_refused = res == H2_REFUSED;
	conn_close(c);
	q->conn = NULL;
	if (res == H2_REFUSED)
		retry_or_fail(q, HTTP_ERR_TRANSPORT, msg);
	else
		finish(q, res == H2_TOO_LARGE ? HTTP_ERR_TOO_LARGE : HTTP_ERR_TRANSPORT,
		       res == H2_TOO_LARGE ? 0 : status, msg);
}

static void on_answer(struct nreq *q, struct conn *c, const char *p, size_t n)
{
	if (q->h2) {
		on_h2_answer(q, c, p, n);
		return;
	}
	size_t used = 0;
	enum h1_result res = h1_feed(&q->parser, p, n, &used);
	if (res == H1_MORE)
		return;
	if (res == H1_DONE) {
		if (h1_reusable(&q->parser) && used == n)
			pool_put(q->t, c, q->key);
		else
			conn_close(c);
		finish(q, HTTP_OK, q->parser.status, NULL);
		return;
	}
	conn_close(c);
	finish(q, res == H1_TOO_LARGE ? HTTP_ERR_TOO_LARGE : HTTP_ERR_TRANSPORT,
	       res == H1_TOO_LARGE ? 0 : q->parser.status, q->parser.err);
}

static void ex_ready(void *ud, struct conn *c)
{
	(void)c;
	send_request(ud);
}

static void ex_data(void *ud, struct conn *c, const char *p, size_t n)
{
	on_answer(ud, c, p, n);
}

static void ex_closed(void *ud, struct conn *c, enum http_error kind, const char *msg)
{
	struct nreq *q = ud;
	if (q->sent && kind == HTTP_OK && !q->h2) {
		enum h1_result res = h1_eof(&q->parser);
		if (res == H1_DONE) {
			conn_close(c);
			finish(q, HTTP_OK, q->parser.status, NULL);
			return;
		}
		kind = HTTP_ERR_TRANSPORT;
		msg = q->parser.err;
	}
	q->answered = q->h2 ? h2_any_byte(q->h2) : q->parser.any_byte;
	conn_close(c);
	q->conn = NULL;
	q->connect_timed_out = kind == HTTP_ERR_TIMEOUT;
	retry_or_fail(q, kind, msg);
}

static const struct conn_events ex_events = {ex_ready, ex_data, ex_closed};

static bool no_body_method(const struct http_req *r)
{
	return strcmp(r->method, "HEAD") == 0;
}

/* Fails q from its timer: never from inside transport_start. */
static void fail_soon(struct nreq *q, enum http_error kind, const char *msg)
{
	q->early_kind = kind;
	snprintf(q->early_msg, sizeof q->early_msg, "%s", msg);
	uv_timer_start(&q->timer, on_nreq_timer, 0, 0);
}

static void h2_out(void *ud, const char *data, size_t len)
{
	conn_send(ud, data, len);
}

static void h2_free_proto(void *p)
{
	h2_free(p);
}

static void send_h2(struct nreq *q)
{
	struct conn *c = q->conn;
	struct h2 *h = conn_proto(c);
	struct ga_err err = {{0}};
	if (!h) {
		h = h2_new(h2_out, c, &err);
		if (h)
			conn_set_proto(c, h, h2_free_proto);
	}
	char authority[HTTP_HOST_MAX + 16];
	url_authority(&q->u, false, authority, sizeof authority);
	http_req_reset_headers(q->r);
	sb_reset(&q->r->resp_body);
	q->sent = true;
	q->h2 = h;
	if (!h || h2_request(h, q->r, authority, q->u.target, &err) != 0) {
		q->h2 = NULL;
		conn_close(c);
		q->conn = NULL;
		fail_soon(q, HTTP_ERR_TRANSPORT, err.msg);
	}
}

static void send_request(struct nreq *q)
{
	if (conn_h2(q->conn)) {
		send_h2(q);
		return;
	}
	struct http_req *r = q->r;
	bool absolute = q->px.used && q->px.kind == PROXY_HTTP && !q->u.https;
	char authority[HTTP_HOST_MAX + 16];
	url_authority(&q->u, false, authority, sizeof authority);
	struct strbuf head;
	sb_init(&head, 0);
	if (absolute) {
		char *target = xasprintf("http://%s%s", authority, q->u.target);
		h1_write_head(&head, r, target, authority, q->px.auth);
		free(target);
	} else {
		h1_write_head(&head, r, q->u.target, authority, NULL);
	}
	h1_free(&q->parser);
	h1_init(&q->parser, r, no_body_method(r), false);
	http_req_reset_headers(r);
	sb_reset(&r->resp_body);
	q->sent = true;
	struct conn *c = q->conn;
	conn_send(c, head.buf, head.len);
	sb_free(&head);
	if (r->body_len && !conn_dead(c))
		conn_send(c, r->body, r->body_len);
}

static void make_key(struct nreq *q)
{
	snprintf(q->key, sizeof q->key, "%s|%s|%u|%s|%u|%d|%s|%s", q->u.https ? "https" : "http",
	         q->u.host, q->u.port, q->px.used ? q->px.host : "", q->px.used ? q->px.port : 0,
	         (int)q->px.kind, q->px.auth, q->px.user);
}

static int open_exchange(struct nreq *q, bool may_reuse)
{
	struct http_transport *t = q->t;
	struct conn *c = may_reuse ? pool_take(t, q->key) : NULL;
	q->reused = c != NULL;
	q->sent = false;
	q->h2 = NULL;
	q->answered = false;
	if (c) {
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "connection reused", "host", q->u.host);
		q->conn = c;
		conn_set_owner(c, &ex_events, q);
		send_request(q);
		return 0;
	}
	struct conn_target tg = {
	        .u = &q->u,
	        .px = &q->px,
	        .connect_deadline_ms = uv_now(t->loop) + q->r->connect_timeout_ms,
	};
	q->conn = conn_open(t->loop, &tg, &ex_events, q);
	return q->conn ? 0 : -1;
}

static bool idempotent(const struct http_req *r)
{
	return strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0 ||
	       strcmp(r->method, "PUT") == 0 || strcmp(r->method, "DELETE") == 0;
}

/* A reused connection the server had closed fails before any byte of
 * the answer: that is not the request's fault, so once, on a new one. */
static void retry_or_fail(struct nreq *q, enum http_error kind, const char *msg)
{
	bool stale = (q->reused && q->sent && !q->answered) || q->h2_refused;
	if (stale && !q->retried && idempotent(q->r) &&
	    (kind == HTTP_ERR_TRANSPORT || kind == HTTP_OK)) {
		q->retried = true;
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "kept connection was closed; retrying", "host",
		       q->u.host);
		if (open_exchange(q, false) == 0)
			return;
	}
	if (kind == HTTP_OK)
		kind = HTTP_ERR_TRANSPORT;
	finish(q, kind, 0, msg);
}

/* --- the request timer --------------------------------------------------------------------- */

static void on_nreq_timer(uv_timer_t *timer)
{
	struct nreq *q = timer->data;
	if (!q->r)
		return;
	if (q->early_kind != HTTP_OK) {
		finish(q, q->early_kind, 0, q->early_msg);
		return;
	}
	if (q->conn)
		conn_close(q->conn);
	finish(q, HTTP_ERR_TIMEOUT, 0, q->sent ? "no complete answer" : "no connection");
}

/* --- transport.h ----------------------------------------------------------------------------- */

int transport_start(struct http_transport *t, struct http_req *r)
{
	struct nreq *q = xcalloc(1, sizeof *q);
	q->t = t;
	q->r = r;
	r->tr = q;
	uv_timer_init(t->loop, &q->timer);
	q->timer.data = q;
	t->open++;
	h1_init(&q->parser, r, false, false);
	struct ga_err err = {{0}};
	if (url_parse(r->url, &q->u, &err) != 0 || proxy_pick(&q->u, &q->px, &err) != 0 ||
	    (q->u.https && tls_load(&err) != 0)) {
		fail_soon(q, HTTP_ERR_CONNECT, err.msg);
		return 0;
	}
	make_key(q);
	uv_timer_start(&q->timer, on_nreq_timer, r->timeout_ms, 0);
	if (open_exchange(q, true) != 0) {
		nreq_release(q);
		return -1;
	}
	return 0;
}

void transport_cancel(struct http_transport *t, struct http_req *r)
{
	(void)t;
	struct nreq *q = r->tr;
	if (!q)
		return;
	if (q->conn)
		conn_close(q->conn);
	q->conn = NULL;
	nreq_release(q);
}

struct http_transport *transport_new(uv_loop_t *loop, struct ga_err *err)
{
	/* GnuTLS is loaded here, as libcurl is by the other transport: an agent
	 * that creates an HTTP client is about to make requests. */
	if (tls_load(err) != 0)
		return NULL;
	struct http_transport *t = xcalloc(1, sizeof *t);
	t->loop = loop;
	uv_timer_init(loop, &t->sweep);
	t->sweep.data = t;
	t->open = 1;
	return t;
}

static void on_sweep_closed(uv_handle_t *h)
{
	part_closed(h->data);
}

void transport_close(struct http_transport *t, void (*done)(void *ud), void *ud)
{
	t->closing = true;
	t->done = done;
	t->done_ud = ud;
	while (t->pool)
		pool_drop(t, t->pool);
	uv_timer_stop(&t->sweep);
	uv_close((uv_handle_t *)&t->sweep, on_sweep_closed);
}
