/*
 * conn — a native-transport connection (see conn.h): resolve, connect,
 * tunnel, handshake, then plaintext. Each address gets an equal share of
 * the connect time that is left, so one address that swallows SYNs does
 * not use the whole connect timeout of the others.
 */
#include "adapters/http/conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/http/h1.h"
#include "adapters/http/h2.h"
#include "adapters/http/socks.h"
#include "adapters/http/tls.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define LOG_COMP "http"

enum phase { P_RESOLVE, P_CONNECT, P_SOCKS, P_TUNNEL, P_HANDSHAKE, P_OPEN, P_DEAD };

struct conn {
	uv_loop_t *loop;
	const struct conn_events *ev;
	void *ud;
	enum phase phase;
	bool closing;   /* conn_close called */
	int handles;    /* libuv handles and requests not yet released */
	bool resolving; /* getaddrinfo in flight */
	uv_getaddrinfo_t gai;
	struct addrinfo *ai, *next_ai;
	struct addrinfo *dest_ai; /* socks5: the destination, resolved here */
	uv_tcp_t *tcp;            /* the current attempt's socket; NULL between attempts */
	uv_timer_t timer;         /* the connect deadline and each address's share */
	uint64_t deadline_ms;
	char last_err[96];
	struct tls *tls;
	bool h2;                     /* TLS chose "h2" by ALPN */
	void *proto;                 /* the owner's protocol state (conn_set_proto) */
	void (*proto_free)(void *p); /* frees it with the connection */
	/* For the tunnel: a throwaway request whose parser reads the proxy's
	 * answer to CONNECT. */
	struct http_req tunnel_req;
	struct h1_parser tunnel;
	struct socks5 socks;
	struct proxy px; /* the proxy's kind and SOCKS credentials */
	/* Copied from the target. */
	char host[HTTP_HOST_MAX];
	bool ipv6, https;
	char authority[HTTP_HOST_MAX + 16];
	char proxy_host[HTTP_HOST_MAX];
	unsigned port, proxy_port;
	char proxy_auth[PROXY_AUTH_MAX];
	bool via_proxy;
};

struct wreq {
	uv_write_t w;
	char data[];
};

static void fail(struct conn *c, enum http_error kind, const char *msg);

static void maybe_free(struct conn *c)
{
	if (c->closing && c->handles == 0 && !c->resolving) {
		if (c->ai)
			uv_freeaddrinfo(c->ai);
		if (c->dest_ai)
			uv_freeaddrinfo(c->dest_ai);
		tls_free(c->tls);
		if (c->proto_free)
			c->proto_free(c->proto);
		h1_free(&c->tunnel);
		sb_free(&c->tunnel_req.resp_body);
		http_req_reset_headers(&c->tunnel_req);
		free(c);
	}
}

static void on_handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if ((void *)h != (void *)&c->timer)
		free(h);
	c->handles--;
	maybe_free(c);
}

static void drop_tcp(struct conn *c)
{
	if (c->tcp) {
		uv_close((uv_handle_t *)c->tcp, on_handle_closed);
		c->tcp = NULL;
	}
}

bool conn_dead(const struct conn *c)
{
	return c->phase == P_DEAD || c->closing;
}

void conn_close(struct conn *c)
{
	if (!c || c->closing)
		return;
	c->closing = true;
	c->phase = P_DEAD;
	drop_tcp(c);
	uv_close((uv_handle_t *)&c->timer, on_handle_closed);
	maybe_free(c);
}

void conn_set_owner(struct conn *c, const struct conn_events *ev, void *ud)
{
	c->ev = ev;
	c->ud = ud;
}

/* Reports the end once; the owner then calls conn_close. */
static void fail(struct conn *c, enum http_error kind, const char *msg)
{
	if (conn_dead(c))
		return;
	c->phase = P_DEAD;
	drop_tcp(c);
	uv_timer_stop(&c->timer);
	c->ev->closed(c->ud, c, kind, msg);
}

/* --- writing ---------------------------------------------------------------------- */

static void on_written(uv_write_t *w, int status)
{
	struct conn *c = w->data;
	free(w);
	if (status < 0 && status != UV_ECANCELED && !conn_dead(c)) {
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "sending failed (%s)", uv_strerror(status));
		fail(c, HTTP_ERR_TRANSPORT, msg);
	}
	c->handles--;
	maybe_free(c);
}

static void raw_write(struct conn *c, const char *data, size_t len)
{
	if (!c->tcp || !len)
		return;
	struct wreq *w = xmalloc(sizeof *w + len);
	memcpy(w->data, data, len);
	uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
	w->w.data = c;
	c->handles++;
	int rc = uv_write(&w->w, (uv_stream_t *)c->tcp, &b, 1, on_written);
	if (rc < 0) {
		c->handles--;
		free(w);
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "sending failed (%s)", uv_strerror(rc));
		fail(c, HTTP_ERR_TRANSPORT, msg);
	}
}

static void tls_out(void *ud, const char *data, size_t len)
{
	raw_write(ud, data, len);
}

void conn_send(struct conn *c, const char *data, size_t len)
{
	char msg[GA_ERR_MSG_MAX];
	if (conn_dead(c))
		return;
	if (!c->tls)
		raw_write(c, data, len);
	else if (tls_send(c->tls, data, len, msg, sizeof msg) != 0)
		fail(c, HTTP_ERR_TRANSPORT, msg);
}

/* --- reading ----------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	static char rbuf[CONN_READ_BYTES];
	*buf = uv_buf_init(rbuf, sizeof rbuf);
}

static void start_tls(struct conn *c);
static void became_ready(struct conn *c);
static void tunnel_open(struct conn *c);

static void tunnel_read(struct conn *c, const char *p, size_t n)
{
	size_t used = 0;
	enum h1_result res = h1_feed(&c->tunnel, p, n, &used);
	if (res == H1_MORE)
		return;
	char msg[GA_ERR_MSG_MAX];
	if (res != H1_DONE || used != n) {
		err_fmt(msg, sizeof msg, "the proxy %s:%u answered CONNECT badly: %s",
		        c->proxy_host, c->proxy_port,
		        res == H1_DONE ? "extra bytes" : c->tunnel.err);
		fail(c, HTTP_ERR_CONNECT, msg);
		return;
	}
	if (c->tunnel.status / 100 != 2) {
		err_fmt(msg, sizeof msg, "the proxy %s:%u refused the tunnel to %s (status %ld%s)",
		        c->proxy_host, c->proxy_port, c->authority, c->tunnel.status,
		        c->tunnel.status == 407 ? ": proxy authentication required" : "");
		fail(c, HTTP_ERR_CONNECT, msg);
		return;
	}
	tunnel_open(c);
}

/* After the tunnel (CONNECT or SOCKS5): TLS for https, else ready. */
static void tunnel_open(struct conn *c)
{
	if (c->https)
		start_tls(c);
	else
		became_ready(c);
}

static void socks_fail(struct conn *c, const char *why)
{
	char msg[GA_ERR_MSG_MAX];
	err_fmt(msg, sizeof msg, "the SOCKS5 proxy %s:%u %s", c->proxy_host, c->proxy_port, why);
	fail(c, HTTP_ERR_CONNECT, msg);
}

static void socks_read(struct conn *c, const char *p, size_t n)
{
	const unsigned char *out;
	size_t out_len;
	char why[GA_ERR_MSG_MAX];
	enum socks5_step st = socks5_feed(&c->socks, p, n, &out, &out_len, why, sizeof why);
	if (st == SOCKS5_FAIL)
		socks_fail(c, why);
	else if (st == SOCKS5_DONE)
		tunnel_open(c);
	else if (out_len)
		raw_write(c, (const char *)out, out_len);
}

static void socks_greet(struct conn *c, const struct sockaddr *dest)
{
	char why[GA_ERR_MSG_MAX];
	if (socks5_start(&c->socks, &c->px, c->host, c->port, dest, why, sizeof why) != 0) {
		socks_fail(c, why);
		return;
	}
	unsigned char hello[4];
	size_t n = socks5_greeting(&c->socks, hello);
	c->phase = P_SOCKS;
	raw_write(c, (const char *)hello, n);
}

static void on_dest_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct conn *c = req->data;
	c->resolving = false;
	c->dest_ai = res;
	if (conn_dead(c)) {
		maybe_free(c);
		return;
	}
	if (status < 0 || !res) {
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "cannot resolve %s (%s)", c->host,
		        uv_strerror(status < 0 ? status : UV_EAI_NONAME));
		fail(c, HTTP_ERR_CONNECT, msg);
		return;
	}
	socks_greet(c, res->ai_addr);
}

/* socks5 resolves the destination here, once the proxy has taken the
 * connection; socks5h sends the name as it is. */
static void socks_begin(struct conn *c)
{
	c->phase = P_SOCKS;
	if (c->px.kind == PROXY_SOCKS5H) {
		socks_greet(c, NULL);
		return;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	c->resolving = true;
	int rc = uv_getaddrinfo(c->loop, &c->gai, on_dest_resolved, c->host, NULL, &hints);
	if (rc < 0) {
		c->resolving = false;
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "cannot resolve %s (%s)", c->host, uv_strerror(rc));
		fail(c, HTTP_ERR_CONNECT, msg);
	}
}

static void handshake_step(struct conn *c)
{
	char msg[GA_ERR_MSG_MAX];
	int rc = tls_handshake(c->tls, msg, sizeof msg);
	if (rc < 0)
		fail(c, HTTP_ERR_TLS, msg);
	else if (rc > 0)
		became_ready(c);
}

static void tls_read(struct conn *c, const char *p, size_t n, bool eof)
{
	if (n && tls_feed(c->tls, p, n) != 0) {
		fail(c, HTTP_ERR_TRANSPORT, "the TLS input overflowed its bound");
		return;
	}
	if (eof)
		tls_feed_eof(c->tls);
	if (c->phase == P_HANDSHAKE) {
		handshake_step(c);
		if (c->phase != P_OPEN)
			return;
	}
	static char plain[CONN_READ_BYTES];
	char msg[GA_ERR_MSG_MAX];
	while (!conn_dead(c)) {
		long got = tls_recv(c->tls, plain, sizeof plain, msg, sizeof msg);
		if (got > 0)
			c->ev->data(c->ud, c, plain, (size_t)got);
		else if (got == 0)
			return;
		else
			fail(c, got == -2 ? HTTP_OK : HTTP_ERR_TRANSPORT,
			     got == -2 ? "the server closed the connection" : msg);
	}
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	if (conn_dead(c) || nread == 0)
		return;
	bool eof = nread == UV_EOF;
	if (nread < 0 && !eof) {
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "the connection failed (%s)", uv_strerror((int)nread));
		fail(c, c->phase == P_OPEN ? HTTP_ERR_TRANSPORT : HTTP_ERR_CONNECT, msg);
		return;
	}
	size_t n = nread > 0 ? (size_t)nread : 0;
	if (c->phase == P_TUNNEL && !eof)
		tunnel_read(c, buf->base, n);
	else if (c->phase == P_SOCKS && !eof)
		socks_read(c, buf->base, n);
	else if (c->phase == P_SOCKS)
		socks_fail(c, "closed the connection during the handshake");
	else if (c->tls && (c->phase == P_HANDSHAKE || c->phase == P_OPEN))
		tls_read(c, buf->base, n, eof);
	else if (!eof)
		c->ev->data(c->ud, c, buf->base, n);
	else
		fail(c, c->phase == P_OPEN ? HTTP_OK : HTTP_ERR_CONNECT,
		     "the server closed the connection");
}

/* --- connecting ---------------------------------------------------------------------------- */

static void became_ready(struct conn *c)
{
	c->h2 = c->tls && tls_alpn_h2(c->tls);
	c->phase = P_OPEN;
	uv_timer_stop(&c->timer);
	c->ev->ready(c->ud, c);
}

static void start_tls(struct conn *c)
{
	struct ga_err err = {{0}};
	/* h2 is offered only when libnghttp2 loads: a server that chose it
	 * must be spoken to in it. */
	struct ga_err h2err = {{0}};
	bool offer_h2 = h2_load(&h2err) == 0;
	c->tls = tls_new(c->host, c->ipv6 || strspn(c->host, "0123456789.") == strlen(c->host),
	                 offer_h2, tls_out, c, &err);
	if (!c->tls) {
		fail(c, HTTP_ERR_TLS, err.msg);
		return;
	}
	c->phase = P_HANDSHAKE;
	handshake_step(c);
}

static void send_connect(struct conn *c)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_printf(&sb,
	          "CONNECT %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: " HTTP_USER_AGENT "\r\n%s\r\n",
	          c->authority, c->authority, c->proxy_auth);
	c->phase = P_TUNNEL;
	c->tunnel_req.max_body = 0;
	h1_init(&c->tunnel, &c->tunnel_req, false, true);
	raw_write(c, sb.buf, sb.len);
	sb_free(&sb);
}

static void try_next(struct conn *c);
static void on_timer(uv_timer_t *t);

static void on_connected(uv_connect_t *req, int status)
{
	struct conn *c = req->data;
	bool stale = !c->tcp || req->handle != (uv_stream_t *)c->tcp;
	free(req);
	c->handles--;
	if (conn_dead(c) || stale) { /* closed, or an attempt given up on */
		maybe_free(c);
		return;
	}
	if (status < 0) {
		snprintf(c->last_err, sizeof c->last_err, "%s", uv_strerror(status));
		drop_tcp(c);
		try_next(c);
		return;
	}
	uint64_t now = uv_now(c->loop);
	uv_timer_start(&c->timer, on_timer, c->deadline_ms > now ? c->deadline_ms - now : 0, 0);
	uv_read_start((uv_stream_t *)c->tcp, on_alloc, on_read);
	if (c->via_proxy && c->px.kind != PROXY_HTTP)
		socks_begin(c);
	else if (c->via_proxy && c->https)
		send_connect(c);
	else if (c->https)
		start_tls(c);
	else
		became_ready(c);
}

static unsigned addresses_left(const struct conn *c)
{
	unsigned n = 0;
	for (const struct addrinfo *a = c->next_ai; a; a = a->ai_next)
		n++;
	return n;
}

/* Arms the timer for this address's share of the connect time left. */
static void arm_attempt(struct conn *c)
{
	uint64_t now = uv_now(c->loop);
	uint64_t left = c->deadline_ms > now ? c->deadline_ms - now : 0;
	unsigned n = addresses_left(c) + 1;
	uv_timer_start(&c->timer, on_timer, left / n + (n > 1 ? 0 : 1), 0);
}

static void try_next(struct conn *c)
{
	const struct addrinfo *a = c->next_ai;
	if (!a) {
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "%s:%u: %s", c->via_proxy ? c->proxy_host : c->host,
		        c->via_proxy ? c->proxy_port : c->port,
		        c->last_err[0] ? c->last_err : "no address");
		fail(c, HTTP_ERR_CONNECT, msg);
		return;
	}
	c->next_ai = a->ai_next;
	c->tcp = xcalloc(1, sizeof *c->tcp);
	uv_tcp_init(c->loop, c->tcp);
	c->tcp->data = c;
	c->handles++;
	uv_tcp_nodelay(c->tcp, 1);
	uv_connect_t *req = xcalloc(1, sizeof *req);
	req->data = c;
	c->phase = P_CONNECT;
	int rc = uv_tcp_connect(req, c->tcp, a->ai_addr, on_connected);
	if (rc < 0) {
		free(req);
		snprintf(c->last_err, sizeof c->last_err, "%s", uv_strerror(rc));
		drop_tcp(c);
		try_next(c);
		return;
	}
	c->handles++;
	arm_attempt(c);
}

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	if (conn_dead(c))
		return;
	if (uv_now(c->loop) >= c->deadline_ms || c->phase != P_CONNECT) {
		fail(c, HTTP_ERR_TIMEOUT, "no connection within the connect timeout");
		return;
	}
	snprintf(c->last_err, sizeof c->last_err, "connection timed out");
	drop_tcp(c); /* its connect callback sees UV_ECANCELED */
	try_next(c);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct conn *c = req->data;
	c->resolving = false;
	c->ai = res;
	c->next_ai = res;
	if (conn_dead(c)) {
		maybe_free(c);
		return;
	}
	if (status < 0) {
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "cannot resolve %s%s (%s)",
		        c->via_proxy ? "the proxy " : "", c->via_proxy ? c->proxy_host : c->host,
		        uv_strerror(status));
		fail(c, HTTP_ERR_CONNECT, msg);
		return;
	}
	try_next(c);
}

static void copy_target(struct conn *c, const struct conn_target *tg)
{
	snprintf(c->host, sizeof c->host, "%s", tg->u->host);
	c->ipv6 = tg->u->ipv6;
	c->https = tg->u->https;
	c->port = tg->u->port;
	url_authority(tg->u, true, c->authority, sizeof c->authority);
	c->via_proxy = tg->px && tg->px->used;
	if (c->via_proxy) {
		snprintf(c->proxy_host, sizeof c->proxy_host, "%s", tg->px->host);
		c->proxy_port = tg->px->port;
		snprintf(c->proxy_auth, sizeof c->proxy_auth, "%s", tg->px->auth);
		c->px = *tg->px;
	}
	c->deadline_ms = tg->connect_deadline_ms;
}

struct conn *conn_open(uv_loop_t *loop, const struct conn_target *tg, const struct conn_events *ev,
                       void *ud)
{
	struct conn *c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->ev = ev;
	c->ud = ud;
	copy_target(c, tg);
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->handles = 1;
	c->gai.data = c;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	char port[8];
	snprintf(port, sizeof port, "%u", c->via_proxy ? c->proxy_port : c->port);
	c->phase = P_RESOLVE;
	c->resolving = true;
	int rc = uv_getaddrinfo(loop, &c->gai, on_resolved, c->via_proxy ? c->proxy_host : c->host,
	                        port, &hints);
	if (rc < 0) {
		c->resolving = false;
		conn_close(c);
		return NULL;
	}
	uint64_t now = uv_now(loop);
	uv_timer_start(&c->timer, on_timer, c->deadline_ms > now ? c->deadline_ms - now : 0, 0);
	return c;
}

bool conn_h2(const struct conn *c)
{
	return c->h2;
}

void conn_set_proto(struct conn *c, void *proto, void (*proto_free)(void *p))
{
	c->proto = proto;
	c->proto_free = proto_free;
}

void *conn_proto(const struct conn *c)
{
	return c->proto;
}
