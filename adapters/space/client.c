/*
 * adapters/space/client — the agent-space connection. See client.h.
 *
 * Handles and their lifetimes: five uv timers live as long as the client
 * and are closed by the stop sequence. A connection (struct conn: the TCP
 * handle, the upgrade, the frame parser) is heap-allocated and detached by
 * conn_close(): from then on it belongs to its handle's close callback,
 * which frees it after libuv has cancelled its pending writes. A pending
 * uv_getaddrinfo request is heap-allocated and orphaned (its callback frees
 * it) when the client no longer wants the answer.
 *
 * A connection attempt ends in exactly one call of conn_end() (connect
 * error, a refused upgrade, close, read error, our own kill), or
 * attempt_failed() when it failed before a connection existed. Both lead to
 * next_attempt(), which applies the backoff and the duplicate-name rule.
 *
 * The transport is plain ws:// over libuv TCP with common/ws's framing
 * (client role: our frames masked, the room's unmasked): libwebsockets
 * mapped libssl and libcrypto and cost ~2 MB of resident memory at idle,
 * half of the daemon's budget, for a connection that never uses TLS.
 */
#include "adapters/space/client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/ws.h"
#include "common/xalloc.h"

#define LOG_COMP   "space"
#define SPC_TIMERS 5
/* One read from the socket; a message larger than this is reassembled by
 * the parser (up to SPC_MAX_INBOUND_BYTES). */
#define SPC_READ_BYTES   (64 * 1024)
#define SPC_CLOSE_REASON "Client disconnecting"

struct gai_req {
	uv_getaddrinfo_t req;
	struct spc_client *c; /* NULL once nobody waits for the answer */
};

/* One TCP connection and its WebSocket state. */
struct conn {
	uv_tcp_t tcp;
	uv_connect_t creq;
	struct spc_client *c; /* NULL once detached (conn_close) */
	bool upgraded;        /* the 101 arrived and checked out */
	char key[25];         /* our Sec-WebSocket-Key */
	char *head;           /* the server's answer so far, until upgraded */
	size_t head_len;
	struct ws_parser parser;
	char rbuf[SPC_READ_BYTES];
};

/* One write: the frame follows the request. */
struct wreq {
	uv_write_t req;
	struct conn *conn;
	uv_buf_t buf;
	char data[];
};

struct qmsg {
	size_t len;
	char buf[];
};

struct spc_client {
	uv_loop_t *loop;
	char last_why[160]; /* why the last attempt or connection ended, for status */
	char *name, *id, *version, *space_url, *identity_json;
	char *caps[SPC_MAX_CAPS];
	size_t ncaps;
	bool has_caps;
	struct spc_tunables t;
	struct spc_client_events ev;
	void *ud;

	enum spc_state state;
	char url[SPC_URL_MAX];
	enum spc_disc_source url_src;
	struct spc_url u;
	struct spc_disc *disc;
	struct gai_req *gai;

	struct conn *conn;
	bool established;   /* the WebSocket upgrade completed */
	char kill_why[256]; /* why we dropped the connection ourselves */
	bool closing_by_us;
	bool close_sent;
	uint64_t last_rx_ms; /* uv_now of the last bytes received */
	int close_code;      /* from the server's close frame, 0 if none */
	char close_reason[124];
	bool server_shutdown; /* a `shutdown` message arrived */

	union {
		uv_timer_t all[SPC_TIMERS];
		struct {
			uv_timer_t connect; /* connect + upgrade + join deadline */
			uv_timer_t retry;   /* backoff before the next attempt */
			uv_timer_t rediscover;
			uv_timer_t ping;
			uv_timer_t stop; /* the close wait */
		} t;
	} timers;
	int open_timers;

	unsigned attempt; /* failed attempts since the last join */
	uint64_t replaced_at[SPC_REPLACED_MEMORY];
	size_t nreplaced;
	char dup_id[128]; /* the other same-name connection's id, when seen */

	struct qmsg *q[SPC_SENDQ_MAX_MSGS];
	size_t qhead, qn, qbytes;

	struct spc_roster roster;
	struct spc_client_stats stats;

	void (*done)(void *);
	void *done_ud;
	bool free_when_stopped;
	bool timers_closing;
};

static void pump(struct spc_client *c);

const char *spc_state_name(enum spc_state s)
{
	static const char *const names[] = {"idle",    "discovering", "connecting", "joined",
	                                    "waiting", "gave-up",     "stopping",   "stopped"};
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

/* --- send queue -------------------------------------------------------------------- */

static void q_clear(struct spc_client *c)
{
	for (size_t i = 0; i < c->qn; i++)
		free(c->q[(c->qhead + i) % SPC_SENDQ_MAX_MSGS]);
	c->qhead = c->qn = c->qbytes = 0;
}

/* Takes ownership of json. */
static int q_push(struct spc_client *c, char *json)
{
	if (!json)
		return -1;
	size_t len = strlen(json);
	if (c->qn == SPC_SENDQ_MAX_MSGS || c->qbytes + len > SPC_SENDQ_MAX_BYTES) {
		c->stats.dropped_sends++;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "send queue full; message dropped", "queued",
		       LOG_INT(c->qn), "bytes", LOG_INT(c->qbytes));
		free(json);
		return -1;
	}
	struct qmsg *m = xmalloc(sizeof *m + len);
	m->len = len;
	memcpy(m->buf, json, len);
	free(json);
	c->q[(c->qhead + c->qn) % SPC_SENDQ_MAX_MSGS] = m;
	c->qn++;
	c->qbytes += len;
	pump(c);
	return 0;
}
static struct qmsg *q_pop(struct spc_client *c)
{
	if (!c->qn)
		return NULL;
	struct qmsg *m = c->q[c->qhead];
	c->qhead = (c->qhead + 1) % SPC_SENDQ_MAX_MSGS;
	c->qn--;
	c->qbytes -= m->len;
	return m;
}

/* --- attempts ---------------------------------------------------------------------- */

static void begin_discovery(struct spc_client *c);
static void begin_connect(struct spc_client *c);
/* Drops a discovery or a name lookup in flight: their callbacks will find
 * no client to report to. */
static void cancel_lookups(struct spc_client *c)
{
	spc_disc_cancel(c->disc);
	c->disc = NULL;
	if (c->gai) {
		c->gai->c = NULL;
		uv_cancel((uv_req_t *)&c->gai->req);
		c->gai = NULL;
	}
}

static void stop_step(struct spc_client *c);
static void free_now(struct spc_client *c);

static struct spc_who who(const struct spc_client *c)
{
	return (struct spc_who){.name = c->name, .id = c->id};
}

static uint64_t jitter_rnd(void)
{
	uint64_t r;
	random_bytes(&r, sizeof r);
	return r;
}

static void on_rediscover(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->state != SPC_WAITING)
		return; /* an attempt is under way; it will re-arm the timer */
	uv_timer_stop(&c->timers.t.retry);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "still not in the room; discovering again", "every_ms",
	       LOG_INT(c->t.discovery_retry_ms));
	begin_discovery(c);
}

static void arm_rediscovery(struct spc_client *c)
{
	if (!uv_is_active((uv_handle_t *)&c->timers.t.rediscover))
		uv_timer_start(&c->timers.t.rediscover, on_rediscover, c->t.discovery_retry_ms,
		               c->t.discovery_retry_ms);
}

static void on_retry(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->state == SPC_WAITING)
		begin_connect(c);
}

static void wait_then_retry(struct spc_client *c, uint64_t delay)
{
	c->state = SPC_WAITING;
	uv_timer_start(&c->timers.t.retry, on_retry, delay, 0);
	arm_rediscovery(c);
}

/* 4002: somebody joined with our name. See client.h for the rule. */
static bool replaced_too_often(struct spc_client *c)
{
	uint64_t now = uv_now(c->loop);
	c->stats.replaced++;
	size_t keep = 0;
	for (size_t i = 0; i < c->nreplaced; i++)
		if (now - c->replaced_at[i] < c->t.replaced_window_ms)
			c->replaced_at[keep++] = c->replaced_at[i];
	c->nreplaced = keep;
	if (c->nreplaced == SPC_REPLACED_MEMORY) {
		memmove(c->replaced_at, c->replaced_at + 1,
		        (SPC_REPLACED_MEMORY - 1) * sizeof c->replaced_at[0]);
		c->nreplaced--;
	}
	c->replaced_at[c->nreplaced++] = now;
	return c->nreplaced >= c->t.replaced_limit;
}

/* What to do once an attempt or a connection is over. */
static void next_attempt(struct spc_client *c, bool was_joined, const char *why)
{
	if (c->state == SPC_STOPPING) {
		stop_step(c);
		return;
	}
	if (c->close_code == 4002) {
		bool give_up = replaced_too_often(c);
		if (give_up) {
			c->state = SPC_GAVE_UP;
			uv_timer_stop(&c->timers.t.rediscover);
			log_kv(LOG_LEVEL_ERROR, LOG_COMP,
			       "another agent keeps joining the room with this agent's name and "
			       "replacing it; stopped rejoining so the two stop knocking each "
			       "other out. Give one of them a different AGENT_NAME and restart it",
			       "name", c->name, "other_id", c->dup_id[0] ? c->dup_id : "(unknown)",
			       "our_id", c->id, "replaced", LOG_INT(c->nreplaced), "window_ms",
			       LOG_INT(c->t.replaced_window_ms));
			return;
		}
		/* The longest step: give the other agent time to settle. */
		unsigned last = c->t.nbackoff ? (unsigned)c->t.nbackoff - 1 : 0;
		uint64_t delay = spc_backoff_delay(&c->t, last, jitter_rnd());
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "replaced by another connection using this agent's name (close 4002); "
		       "waiting before rejoining",
		       "name", c->name, "other_id", c->dup_id[0] ? c->dup_id : "(unknown)",
		       "retry_in_ms", LOG_INT(delay), "replaced", LOG_INT(c->nreplaced), "limit",
		       LOG_INT(c->t.replaced_limit));
		wait_then_retry(c, delay);
		return;
	}
	if (c->server_shutdown || was_joined)
		c->attempt = 0; /* a fresh start: the room itself went away */
	uint64_t delay = spc_backoff_delay(&c->t, c->attempt, jitter_rnd());
	snprintf(c->last_why, sizeof c->last_why, "%s", why ? why : "");
	/* the first failure of a run is a warning (the owner's terminal shows
	 * it: a wrong SPACE_URL); the retries after it are not */
	bool first = c->attempt == 0;
	if (c->attempt < 1000)
		c->attempt++;
	log_kv(was_joined || first ? LOG_LEVEL_WARN : LOG_LEVEL_INFO, LOG_COMP,
	       was_joined ? "left the room; reconnecting after a pause"
	                  : "could not join the room; retrying after a pause",
	       "url", c->url, "why", why, "retry_in_ms", LOG_INT(delay));
	wait_then_retry(c, delay);
}

static void attempt_failed(struct spc_client *c, const char *why)
{
	uv_timer_stop(&c->timers.t.connect);
	c->established = false;
	next_attempt(c, false, why);
}

/* --- the socket ------------------------------------------------------------------------ */

static void conn_closed(uv_handle_t *h)
{
	struct conn *k = h->data;
	ws_parser_free(&k->parser);
	free(k->head);
	free(k);
}

/* Detaches the client's connection and closes its socket; libuv cancels
 * the writes still pending (their callbacks see UV_ECANCELED and a conn
 * without client). Nothing is reported to the client. */
static void conn_close(struct spc_client *c)
{
	struct conn *k = c->conn;
	if (!k)
		return;
	c->conn = NULL;
	k->c = NULL;
	uv_close((uv_handle_t *)&k->tcp, conn_closed);
}

/* The one exit of a connection: closes the socket, resets the
 * connection's state, tells the client's user (when it was joined) and
 * moves on to the next attempt. what says why, unless we dropped it
 * ourselves (kill_why) or the room closed it (close_code). */
static void conn_end(struct spc_client *c, const char *what)
{
	if (!c->conn)
		return;
	conn_close(c);
	bool was_joined = c->state == SPC_JOINED;
	uv_timer_stop(&c->timers.t.connect);
	q_clear(c);
	c->established = false;
	spc_roster_reset(&c->roster);

	char why[300];
	if (c->kill_why[0])
		snprintf(why, sizeof why, "%s", c->kill_why);
	else if (c->close_code)
		snprintf(why, sizeof why, "closed by the server (%d%s%s)", c->close_code,
		         c->close_reason[0] ? " " : "", c->close_reason);
	else
		snprintf(why, sizeof why, "%s", what);
	if (was_joined && c->ev.on_left && c->state != SPC_STOPPING)
		c->ev.on_left(c->ud, why);
	if (c->state == SPC_JOINED || c->state == SPC_CONNECTING)
		c->state = SPC_WAITING;
	next_attempt(c, was_joined, why);
}

/* Drops the connection now, without a close frame (the room is silent or
 * too slow: nothing would answer one). */
static void kill_conn(struct spc_client *c, const char *why)
{
	snprintf(c->kill_why, sizeof c->kill_why, "%s", why);
	conn_end(c, why);
}

static void on_written(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct conn *k = w->conn;
	free(w);
	struct spc_client *c = k->c;
	if (!c)
		return; /* detached: the write was cancelled or is moot */
	if (status < 0) {
		char why[160];
		snprintf(why, sizeof why, "connection lost: %s", uv_strerror(status));
		conn_end(c, why);
		return;
	}
	pump(c);
}

/* Writes len bytes of frame built by the caller into a fresh request.
 * Returns 0, or -1 (logged) when libuv refused the write; a broken socket
 * is reported by on_written or the read side, which end the connection. */
static int conn_write(struct conn *k, struct wreq *w, size_t len)
{
	w->conn = k;
	w->buf = uv_buf_init(w->data, (unsigned)len);
	int rc = uv_write(&w->req, (uv_stream_t *)&k->tcp, &w->buf, 1, on_written);
	if (rc != 0) {
		free(w);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "could not write to the room", "error",
		       uv_strerror(rc));
		return -1;
	}
	return 0;
}

/* Sends one frame, masked with fresh random bytes (RFC 6455 §5.3: every
 * client frame, so a proxy cannot be made to cache attacker-chosen bytes). */
static int conn_send(struct conn *k, unsigned opcode, const char *data, size_t len)
{
	struct wreq *w = xmalloc(sizeof *w + WS_HDR_MASKED_MAX + len);
	uint8_t mask[4];
	random_bytes(mask, sizeof mask);
	size_t h = ws_frame_header_masked((uint8_t *)w->data, opcode, len, mask);
	if (len)
		memcpy(w->data + h, data, len);
	ws_mask(w->data + h, len, mask, 0);
	return conn_write(k, w, h + len);
}

/* Our close frame: code and a reason (at most 123 bytes). */
static void send_close(struct spc_client *c, int code, const char *reason)
{
	if (!c->conn || c->close_sent)
		return;
	char p[WS_CONTROL_MAX];
	size_t rl = strlen(reason);
	if (rl > WS_CONTROL_MAX - 2)
		rl = WS_CONTROL_MAX - 2;
	p[0] = (char)(code >> 8);
	p[1] = (char)(code & 0xFF);
	memcpy(p + 2, reason, rl);
	c->close_sent = true;
	conn_send(c->conn, WS_OP_CLOSE, p, 2 + rl);
}

/* Hands queued messages to the socket while everything handed earlier has
 * reached the kernel: the bounded queue (SPC_SENDQ_*) stays the only place
 * where messages wait, and a slow room fills it instead of libuv's
 * unbounded write queue. Once we are closing and it is empty, the close
 * frame follows what was queued (a last state or action_result). */
static void pump(struct spc_client *c)
{
	struct conn *k = c->conn;
	if (!k || !k->upgraded || c->close_sent)
		return;
	while (c->qn && uv_stream_get_write_queue_size((uv_stream_t *)&k->tcp) == 0) {
		struct qmsg *m = q_pop(c);
		int rc = conn_send(k, WS_OP_TEXT, m->buf, m->len);
		free(m);
		if (rc != 0)
			return;
	}
	if (c->closing_by_us && !c->qn &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&k->tcp) == 0)
		/* A polite close is 1000 "Client disconnecting" (§7.3);
		 * then we wait for the room's close (spc_client_stop). */
		send_close(c, WS_CLOSE_NORMAL, SPC_CLOSE_REASON);
}

static void on_connect_timeout(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->state != SPC_CONNECTING)
		return;
	if (c->gai) {
		/* Still resolving: abandon the lookup. */
		c->gai->c = NULL;
		uv_cancel((uv_req_t *)&c->gai->req);
		c->gai = NULL;
		char why[128];
		snprintf(why, sizeof why, "the host name did not resolve within %llu ms",
		         (unsigned long long)c->t.connect_timeout_ms);
		attempt_failed(c, why);
		return;
	}
	if (c->conn) {
		char why[128];
		snprintf(why, sizeof why, "no answer within %llu ms",
		         (unsigned long long)c->t.connect_timeout_ms);
		kill_conn(c, why);
		return;
	}
	attempt_failed(c, "no answer");
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *k = h->data;
	(void)suggested;
	*buf = uv_buf_init(k->rbuf, sizeof k->rbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* TCP is up: send the upgrade request (no sub-protocol: the
 * TypeScript client offers none and the room expects none, §1; no
 * extensions). */
static void on_connected(uv_connect_t *req, int status)
{
	struct conn *k = req->data;
	struct spc_client *c = k->c;
	if (!c)
		return; /* detached: the handle is closing */
	if (status < 0) {
		char why[256];
		snprintf(why, sizeof why, "connection failed: %s", uv_strerror(status));
		conn_end(c, why);
		return;
	}
	uv_tcp_nodelay(&k->tcp, 1);
	ws_client_key(k->key);
	char host_hdr[300];
	bool v6 = strchr(c->u.host, ':') != NULL;
	if (c->u.port == 80)
		snprintf(host_hdr, sizeof host_hdr, v6 ? "[%s]" : "%s", c->u.host);
	else
		snprintf(host_hdr, sizeof host_hdr, v6 ? "[%s]:%d" : "%s:%d", c->u.host, c->u.port);
	size_t cap = 1024;
	struct wreq *w = xmalloc(sizeof *w + cap);
	int n = snprintf(w->data, cap,
	                 "GET %s HTTP/1.1\r\n"
	                 "Host: %s\r\n"
	                 "Upgrade: websocket\r\n"
	                 "Connection: Upgrade\r\n"
	                 "Sec-WebSocket-Key: %s\r\n"
	                 "Sec-WebSocket-Version: 13\r\n"
	                 "\r\n",
	                 c->u.path[0] ? c->u.path : "/", host_hdr, k->key);
	if (n < 0 || (size_t)n >= cap) {
		free(w);
		conn_end(c, "the upgrade request does not fit 1024 bytes (path and host too long)");
		return;
	}
	if (conn_write(k, w, (size_t)n) != 0) {
		conn_end(c, "could not send the upgrade request");
		return;
	}
	int rc = uv_read_start((uv_stream_t *)&k->tcp, on_alloc, on_read);
	if (rc != 0) {
		char why[160];
		snprintf(why, sizeof why, "cannot read from the room: %s", uv_strerror(rc));
		conn_end(c, why);
	}
}

static void connect_to(struct spc_client *c, const char *ip)
{
	struct sockaddr_storage sa;
	memset(&sa, 0, sizeof sa);
	if (uv_ip4_addr(ip, c->u.port, (struct sockaddr_in *)&sa) != 0 &&
	    uv_ip6_addr(ip, c->u.port, (struct sockaddr_in6 *)&sa) != 0) {
		attempt_failed(c, "the room's address is not a usable IP address");
		return;
	}
	struct conn *k = xcalloc(1, sizeof *k);
	int rc = uv_tcp_init(c->loop, &k->tcp);
	if (rc != 0) {
		free(k);
		char why[160];
		snprintf(why, sizeof why, "connection failed: %s", uv_strerror(rc));
		attempt_failed(c, why);
		return;
	}
	k->tcp.data = k;
	k->creq.data = k;
	k->c = c;
	ws_parser_init(&k->parser, SPC_MAX_INBOUND_BYTES, WS_ROLE_CLIENT);
	c->conn = k;
	rc = uv_tcp_connect(&k->creq, &k->tcp, (const struct sockaddr *)&sa, on_connected);
	if (rc != 0) {
		conn_close(c);
		char why[160];
		snprintf(why, sizeof why, "connection failed: %s", uv_strerror(rc));
		attempt_failed(c, why);
	}
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct gai_req *g = req->data;
	struct spc_client *c = g->c;
	if (!c) {
		uv_freeaddrinfo(res);
		free(g);
		return;
	}
	c->gai = NULL;
	free(g);
	if (status != 0 || !res) {
		char why[300];
		snprintf(why, sizeof why, "cannot resolve host '%s': %s", c->u.host,
		         uv_strerror(status));
		uv_freeaddrinfo(res);
		attempt_failed(c, why);
		return;
	}
	/* Prefer IPv4 (the server listens on 0.0.0.0 at minimum, §1). */
	const struct addrinfo *pick = res;
	for (const struct addrinfo *a = res; a; a = a->ai_next)
		if (a->ai_family == AF_INET) {
			pick = a;
			break;
		}
	char ip[INET6_ADDRSTRLEN] = "";
	if (pick->ai_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)pick->ai_addr)->sin_addr, ip, sizeof ip);
	else if (pick->ai_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)pick->ai_addr)->sin6_addr, ip,
		          sizeof ip);
	uv_freeaddrinfo(res);
	if (!ip[0]) {
		attempt_failed(c, "the host name resolved to no usable address");
		return;
	}
	connect_to(c, ip);
}

static bool is_ip_literal(const char *h)
{
	unsigned char buf[sizeof(struct in6_addr)];
	return inet_pton(AF_INET, h, buf) == 1 || inet_pton(AF_INET6, h, buf) == 1;
}

static void begin_connect(struct spc_client *c)
{
	c->state = SPC_CONNECTING;
	c->stats.attempts++;
	c->kill_why[0] = '\0';
	c->close_code = 0;
	c->close_reason[0] = '\0';
	c->server_shutdown = false;
	c->closing_by_us = false;
	c->close_sent = false;
	struct ga_err err = {{0}};
	if (spc_url_parse(c->url, &c->u, &err) != 0) {
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "the room's URL is unusable", "url", c->url,
		       "problem", err.msg);
		attempt_failed(c, err.msg);
		return;
	}
	if (c->u.tls) {
		/* The room serves plain ws:// (space-protocol.md §1); TLS would
		 * also bring back libssl's resident memory. */
		static const char msg[] = "wss:// is not supported: the agent-space speaks ws://";
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, msg, "url", c->url);
		attempt_failed(c, msg);
		return;
	}
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "connecting", "url", c->url, "attempt",
	       LOG_INT(c->attempt + 1));
	uv_timer_start(&c->timers.t.connect, on_connect_timeout, c->t.connect_timeout_ms, 0);
	if (is_ip_literal(c->u.host)) {
		connect_to(c, c->u.host);
		return;
	}
	struct gai_req *g = xcalloc(1, sizeof *g);
	g->c = c;
	g->req.data = g;
	struct addrinfo hints;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int rc = uv_getaddrinfo(c->loop, &g->req, on_resolved, c->u.host, NULL, &hints);
	if (rc != 0) {
		free(g);
		char why[300];
		snprintf(why, sizeof why, "cannot resolve host '%s': %s", c->u.host,
		         uv_strerror(rc));
		attempt_failed(c, why);
		return;
	}
	c->gai = g;
}

static void on_discovered(void *ud, const char *url, enum spc_disc_source src)
{
	struct spc_client *c = ud;
	spc_disc_cancel(c->disc);
	c->disc = NULL;
	if (c->state != SPC_DISCOVERING)
		return;
	snprintf(c->url, sizeof c->url, "%s", url);
	c->url_src = src;
	begin_connect(c);
}

static void begin_discovery(struct spc_client *c)
{
	c->state = SPC_DISCOVERING;
	c->stats.discoveries++;
	c->disc = spc_disc_start(c->loop, c->space_url, &c->t, on_discovered, c);
}

/* --- the connection ------------------------------------------------------------------- */

static void joined(struct spc_client *c)
{
	c->state = SPC_JOINED;
	c->attempt = 0;
	c->stats.joins++;
	uv_timer_stop(&c->timers.t.connect);
	uv_timer_stop(&c->timers.t.rediscover);
	c->last_rx_ms = uv_now(c->loop);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "joined the room", "url", c->url, "via",
	       spc_disc_source_name(c->url_src), "name", c->name, "id", c->id, "members",
	       LOG_INT(c->roster.nmembers));
	if (c->ev.on_joined)
		c->ev.on_joined(c->ud);
}

/* The answer to our join (§3.3 step 9) ends with our own join entry, and
 * when that join replaced a connection with our name, its `leave` comes
 * right before it. Only that entry names the rival: an older `leave` with
 * our name is some earlier connection (one that left hours ago, another
 * process since gone), and naming it in the 4002 warning sent people after
 * the wrong agent. A join that replaced nobody forgets
 * the last rival; another history_response (not the answer to our join)
 * changes nothing. */
static void note_duplicate(struct spc_client *c, const cJSON *entries)
{
	int n = cJSON_GetArraySize(entries), ours = -1;
	for (int i = n - 1; i >= 0 && ours < 0; i--) {
		const cJSON *e = cJSON_GetArrayItem(entries, i);
		if (strcmp(json_string_or(e, "type", ""), "join") == 0 &&
		    strcmp(json_string_or(e, "agentName", ""), c->name) == 0 &&
		    strcmp(json_string_or(e, "agentId", ""), c->id) == 0)
			ours = i;
	}
	if (ours < 0)
		return;
	c->dup_id[0] = '\0';
	if (ours == 0)
		return;
	const cJSON *prev = cJSON_GetArrayItem(entries, ours - 1);
	const char *id = json_string_or(prev, "agentId", "");
	if (strcmp(json_string_or(prev, "type", ""), "leave") == 0 &&
	    strcmp(json_string_or(prev, "agentName", ""), c->name) == 0 && *id &&
	    strcmp(id, c->id) != 0)
		snprintf(c->dup_id, sizeof c->dup_id, "%s", id);
}

/* The roster calls this once per chat not handed up before (roster.h). */
static void hand_up_chat(void *ud, const struct spc_chat *chat)
{
	struct spc_client *c = ud;
	if (c->ev.on_chat && c->state != SPC_STOPPING && c->state != SPC_STOPPED)
		c->ev.on_chat(c->ud, chat);
}

static void handle_text(struct spc_client *c, const char *buf, size_t len)
{
	struct spc_msg m;
	struct ga_err err = {{0}};
	if (spc_msg_parse(buf, len, &m, &err) != 0) {
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "ignoring a message from the room", "why",
		       err.msg);
		return;
	}
	unsigned changed = spc_roster_apply(&c->roster, &m, time_now_ms(), hand_up_chat, c);
	switch (m.type) {
	case SPC_T_JOIN:
		if (c->state == SPC_CONNECTING && strcmp(m.id, c->id) == 0 &&
		    strcmp(m.name, c->name) == 0)
			joined(c);
		break;
	case SPC_T_HISTORY:
		note_duplicate(c, m.entries);
		break;
	case SPC_T_ERROR:
		if (strncmp(m.message, "Invalid join", 12) == 0)
			log_kv(LOG_LEVEL_ERROR, LOG_COMP, "the room refused our join", "message",
			       m.message, "name", c->name, "id", c->id, "version", c->version);
		else
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "the room reported an error", "message",
			       m.message);
		break;
	case SPC_T_SHUTDOWN:
		c->server_shutdown = true;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "the room is shutting down; will reconnect",
		       "reason", m.reason ? m.reason : "");
		break;
	default:
		break;
	}
	if (c->ev.on_message && c->state != SPC_STOPPING)
		c->ev.on_message(c->ud, &m, changed);
	spc_msg_free(&m);
}

static void on_ping_timer(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	if (c->state != SPC_JOINED || !c->conn)
		return;
	uint64_t idle = uv_now(c->loop) - c->last_rx_ms;
	if (idle >= 2 * c->t.ping_ms) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "the room went silent; dropping the connection",
		       "silent_ms", LOG_INT(idle), "url", c->url);
		char why[128];
		snprintf(why, sizeof why, "no frame from the room for %llu ms",
		         (unsigned long long)idle);
		kill_conn(c, why);
		return;
	}
	/* An empty ping; its pong, like any bytes, proves the room alive. */
	if (!c->closing_by_us && !c->close_sent)
		conn_send(c->conn, WS_OP_PING, "", 0);
}

/* The upgrade succeeded: join, then identity at once without waiting
 * (§7.3). */
static void upgraded(struct spc_client *c, struct conn *k)
{
	k->upgraded = true;
	c->established = true;
	c->last_rx_ms = uv_now(c->loop);
	struct spc_who w = who(c);
	q_push(c, spc_build_join(&w, c->version, c->has_caps ? (const char *const *)c->caps : NULL,
	                         c->ncaps));
	if (c->identity_json)
		q_push(c, spc_build_identity(&w, c->identity_json, time_now_ms()));
}

static void on_frame(struct spc_client *c, struct conn *k, const struct ws_event *ev)
{
	switch (ev->type) {
	case WS_EV_MESSAGE:
		handle_text(c, ev->data, ev->len);
		break;
	case WS_EV_PING:
		if (!c->close_sent)
			conn_send(k, WS_OP_PONG, ev->data, ev->len);
		break;
	case WS_EV_PONG:
		break; /* liveness: last_rx_ms was set on the read */
	case WS_EV_CLOSE: {
		/* 4001/4002/4003/1001 and the rest reach next_attempt through
		 * close_code, as with libwebsockets before. */
		if (ev->code != WS_CLOSE_NO_STATUS) {
			c->close_code = ev->code;
			size_t rl = ev->len < sizeof c->close_reason - 1
			                    ? ev->len
			                    : sizeof c->close_reason - 1;
			memcpy(c->close_reason, ev->data, rl);
			c->close_reason[rl] = '\0';
		}
		if (!c->close_sent) {
			/* Echo the code (RFC 6455 §5.5.1); none when it gave none. */
			if (ev->code == WS_CLOSE_NO_STATUS) {
				c->close_sent = true;
				conn_send(k, WS_OP_CLOSE, "", 0);
			} else {
				send_close(c, ev->code, "");
			}
		}
		conn_end(c, "the connection closed");
		break;
	}
	case WS_EV_ERROR: {
		char why[128];
		if (ev->code == WS_CLOSE_TOO_BIG) {
			c->stats.dropped_inbound++;
			snprintf(why, sizeof why,
			         "a message from the room is larger than %zu bytes (closed 1009)",
			         SPC_MAX_INBOUND_BYTES);
		} else {
			snprintf(why, sizeof why,
			         "the room broke the WebSocket protocol (closed %d)", ev->code);
		}
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "dropping the connection", "why", why, "url",
		       c->url);
		if (!ev->peer_closed)
			send_close(c, ev->code, "");
		kill_conn(c, why);
		break;
	}
	case WS_EV_NONE:
		break;
	}
}

/* Feeds frames to the parser until the input ends, the connection ends, or
 * a callback stopped or freed the client (it is then detached from k). */
static void feed(struct spc_client *c, struct conn *k, char *data, size_t len)
{
	size_t used = 0;
	while (k->c == c) {
		struct ws_event ev;
		used += ws_parse(&k->parser, data + used, len - used, &ev);
		if (ev.type == WS_EV_NONE)
			break;
		on_frame(c, k, &ev);
	}
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *k = s->data;
	struct spc_client *c = k->c;
	(void)buf;
	if (!c || nread == 0)
		return;
	if (nread < 0) {
		char why[160];
		if (nread == UV_EOF)
			snprintf(why, sizeof why, "the connection closed");
		else
			snprintf(why, sizeof why, "connection lost: %s", uv_strerror((int)nread));
		conn_end(c, why);
		return;
	}
	c->last_rx_ms = uv_now(c->loop);
	char *data = k->rbuf;
	size_t len = (size_t)nread;
	if (!k->upgraded) {
		if (k->head_len + len > WS_HEAD_MAX) {
			snprintf(c->kill_why, sizeof c->kill_why,
			         "the server's answer to the WebSocket upgrade exceeds %d bytes",
			         WS_HEAD_MAX);
			conn_end(c, c->kill_why);
			return;
		}
		k->head = xrealloc(k->head, k->head_len + len);
		memcpy(k->head + k->head_len, data, len);
		k->head_len += len;
		size_t hl = 0;
		char why[200];
		enum ws_head_result r =
		        ws_parse_response(k->head, k->head_len, k->key, &hl, why, sizeof why);
		if (r == WS_HEAD_INCOMPLETE)
			return;
		if (r == WS_HEAD_BAD) {
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "the room's WebSocket upgrade failed",
			       "url", c->url, "why", why);
			conn_end(c, why);
			return;
		}
		/* Bytes after the head are frames already (at most
		 * WS_HEAD_MAX, so they fit the read buffer). */
		len = k->head_len - hl;
		memcpy(k->rbuf, k->head + hl, len);
		free(k->head);
		k->head = NULL;
		k->head_len = 0;
		upgraded(c, k);
		if (k->c != c)
			return;
	}
	feed(c, k, data, len);
}

/* --- stopping --------------------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t *h)
{
	struct spc_client *c = h->data;
	if (--c->open_timers > 0)
		return;
	c->state = SPC_STOPPED;
	void (*done)(void *) = c->done;
	void *done_ud = c->done_ud;
	bool free_it = c->free_when_stopped;
	c->done = NULL;
	if (done)
		done(done_ud);
	if (free_it)
		free_now(c);
}

static void close_timers(struct spc_client *c)
{
	if (c->timers_closing)
		return;
	c->timers_closing = true;
	for (int i = 0; i < SPC_TIMERS; i++) {
		uv_timer_stop(&c->timers.all[i]);
		uv_close((uv_handle_t *)&c->timers.all[i], on_timer_closed);
	}
}

/* The close wait ran out, or there was nothing to wait for. */
static void on_stop_timer(uv_timer_t *h)
{
	struct spc_client *c = h->data;
	conn_close(c);
	close_timers(c);
}

static void stop_step(struct spc_client *c)
{
	if (!c->timers_closing)
		uv_timer_start(&c->timers.t.stop, on_stop_timer, 0, 0);
}

void spc_client_stop(struct spc_client *c, void (*done)(void *ud), void *ud)
{
	if (!c || c->state == SPC_STOPPING || c->state == SPC_STOPPED)
		return;
	c->state = SPC_STOPPING;
	c->done = done;
	c->done_ud = ud;
	cancel_lookups(c);
	uv_timer_stop(&c->timers.t.connect);
	uv_timer_stop(&c->timers.t.retry);
	uv_timer_stop(&c->timers.t.rediscover);
	uv_timer_stop(&c->timers.t.ping);
	if (c->conn && c->established) {
		c->closing_by_us = true;
		/* conn_end → stop_step when the room answers our close; this
		 * timer bounds the wait. */
		uv_timer_start(&c->timers.t.stop, on_stop_timer, c->t.close_wait_ms, 0);
		pump(c);
		return;
	}
	stop_step(c);
}

/* --- public ------------------------------------------------------------------------------ */

static int check_units(const char *what, const char *v, size_t max, struct ga_err *err)
{
	if (!v || !*v)
		return err_set(err, "the agent-space %s must not be empty", what);
	size_t u = spc_js_length(v, strlen(v));
	if (u > max)
		return err_set(err,
		               "the agent-space %s '%s' is %zu UTF-16 units long; the room "
		               "accepts at most %zu",
		               what, v, u, max);
	return 0;
}

struct spc_client *spc_client_new(uv_loop_t *loop, const struct spc_client_config *cfg,
                                  const struct spc_client_events *ev, void *ud, struct ga_err *err)
{
	if (check_units("name", cfg->name, SPC_NAME_MAX_UNITS, err) ||
	    check_units("id", cfg->id, SPC_ID_MAX_UNITS, err) ||
	    check_units("version", cfg->version, SPC_VERSION_MAX_UNITS, err))
		return NULL;
	if (cfg->caps && cfg->ncaps > SPC_MAX_CAPS) {
		err_set(err, "at most %d capabilities, got %zu", SPC_MAX_CAPS, cfg->ncaps);
		return NULL;
	}
	struct spc_client *c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->name = xstrdup(cfg->name);
	c->id = xstrdup(cfg->id);
	c->version = xstrdup(cfg->version);
	c->space_url = cfg->space_url && *cfg->space_url ? xstrdup(cfg->space_url) : NULL;
	c->identity_json = cfg->identity_json ? xstrdup(cfg->identity_json) : NULL;
	c->has_caps = cfg->caps != NULL;
	for (size_t i = 0; c->has_caps && i < cfg->ncaps; i++)
		c->caps[c->ncaps++] = xstrdup(cfg->caps[i]);
	c->t = cfg->t;
	if (ev)
		c->ev = *ev;
	c->ud = ud;
	for (int i = 0; i < SPC_TIMERS; i++) {
		uv_timer_init(loop, &c->timers.all[i]);
		c->timers.all[i].data = c;
	}
	c->open_timers = SPC_TIMERS;
	spc_roster_init(&c->roster);
	c->state = SPC_IDLE;
	return c;
}

void spc_client_start(struct spc_client *c)
{
	if (c->state != SPC_IDLE)
		return;
	uv_timer_start(&c->timers.t.ping, on_ping_timer, c->t.ping_ms, c->t.ping_ms);
	begin_discovery(c);
}

int spc_client_send(struct spc_client *c, char *json)
{
	if (c->state != SPC_JOINED || !c->conn) {
		free(json);
		c->stats.dropped_sends++;
		return -1;
	}
	return q_push(c, json);
}

void spc_client_set_identity(struct spc_client *c, const char *identity_json)
{
	free(c->identity_json);
	c->identity_json = identity_json ? xstrdup(identity_json) : NULL;
	if (c->identity_json && c->state == SPC_JOINED) {
		struct spc_who w = who(c);
		spc_client_send(c, spc_build_identity(&w, c->identity_json, time_now_ms()));
	}
}

static void free_now(struct spc_client *c)
{
	q_clear(c);
	spc_roster_free(&c->roster);
	free(c->name);
	free(c->id);
	free(c->version);
	free(c->space_url);
	free(c->identity_json);
	for (size_t i = 0; i < c->ncaps; i++)
		free(c->caps[i]);
	free(c);
}

void spc_client_free(struct spc_client *c)
{
	if (!c)
		return;
	if (c->state == SPC_STOPPED) {
		free_now(c);
		return;
	}
	/* Not stopped: tear down now, without the polite close. Every handle
	 * of the client is closing when this returns (so a caller that then
	 * closes whatever is left on the loop cannot close ours twice); the
	 * memory goes when the last close callback has run, so this is safe
	 * from inside one of the client's callbacks too. */
	c->free_when_stopped = true;
	c->done = NULL;
	c->state = SPC_STOPPING;
	cancel_lookups(c);
	conn_close(c);
	close_timers(c);
}

enum spc_state spc_client_state(const struct spc_client *c)
{
	return c->state;
}

const char *spc_client_url(const struct spc_client *c)
{
	return c->url;
}

const char *spc_client_last_error(const struct spc_client *c)
{
	return c->last_why;
}

const struct spc_roster *spc_client_roster(const struct spc_client *c)
{
	return &c->roster;
}

const char *spc_client_name(const struct spc_client *c)
{
	return c->name;
}

const char *spc_client_id(const struct spc_client *c)
{
	return c->id;
}

void spc_client_stats(const struct spc_client *c, struct spc_client_stats *out)
{
	*out = c->stats;
}
