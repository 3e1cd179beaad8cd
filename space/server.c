/*
 * space/server — libwebsockets + libuv glue for the agent-space room.
 * See server.h for the contract.
 *
 * One protocol handles both plain HTTP (426 / healthz) and the WebSocket,
 * so any path upgrades (§1 item 2). Per connection:
 *   - inbound fragments are reassembled into at most 1 MiB (→ 1009);
 *     text must be valid UTF-8 (→ 1007); binary is decoded like Node;
 *   - outbound messages wait in a bounded queue of shared buffers, written
 *     one per WRITEABLE callback; a close requested by the room is sent
 *     after what is already queued;
 *   - the join timer is an lws wsi timer, so its lifetime is the wsi's.
 */
#include "space/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <libwebsockets.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "adapters/mdns/mdns.h"
#include "common/fsx.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "space/buf.h"
#include "space/host.h"
#include "space/proto.h"
#include "space/room.h"
#include "space/store.h"

#define LOG_COMP "space"
/* Small messages queued for one member are sent together up to this. */
#define SPACE_WRITE_BATCH_BYTES (16 * 1024)

_Static_assert(LWS_PRE <= SPACE_BUF_PRE, "space_buf headroom must cover LWS_PRE");

enum phase {
	PHASE_RUNNING,  /* normal service */
	PHASE_DRAINING, /* shutdown sent; still serving for the grace period */
	PHASE_CLOSING,  /* 1001 sent to members; waiting for close handshakes */
	PHASE_DONE,     /* lws context being destroyed */
};

struct server {
	const struct space_server_config *cfg;
	uv_loop_t loop;
	struct lws_context *ctx;
	struct lws_vhost *vh;
	struct space_store *store;
	struct space_room *room;
	struct space_host *host;
	struct mdns_publisher *mdns;
	uv_timer_t heartbeat, sweep, phase_timer;
	uv_signal_t sigint, sigterm;
	enum phase phase;
	int64_t started_ms;
	uint64_t started_mono;
	uint64_t close_deadline;
	unsigned nconns;    /* established WebSocket connections */
	unsigned nclosing;  /* of which a close was requested */
	bool tty_out;       /* stdout is a terminal: show room events there */
	unsigned char batch[LWS_PRE + SPACE_WRITE_BATCH_BYTES]; /* write_batch */
};

/* Per-session data (lws allocates and zeroes it). */
struct pss {
	struct lws *wsi;
	struct space_conn *conn;
	/* send queue: ring of buffer pointers (NULL = coalesced away) */
	struct space_buf **q;
	size_t qhead, qcount, qcap, qbytes;
	/* inbound reassembly */
	struct strbuf rx;
	bool rx_active, rx_binary;
	/* state */
	bool ping_pending;
	bool close_pending;
	bool close_ready; /* queue flushed: send the close frame next */
	bool dead; /* dropped: queue freed, socket shut down */
	int close_code;
	char close_reason[64];
	/* plain HTTP response body (LWS_PRE headroom) */
	unsigned char *http_body;
	size_t http_len;
};

static int64_t now_ms(void)
{
	return time_now_ms();
}

/* --- send queue ------------------------------------------------------------ */

static void q_clear(struct pss *p)
{
	for (size_t i = 0; i < p->qcount; i++)
		space_buf_unref(p->q[(p->qhead + i) % p->qcap]);
	free(p->q);
	p->q = NULL;
	p->qhead = p->qcount = p->qcap = p->qbytes = 0;
}

static void q_push(struct pss *p, struct space_buf *b)
{
	if (p->qcount == p->qcap) {
		size_t ncap = p->qcap ? p->qcap * 2 : 8;
		struct space_buf **nq = xcalloc(ncap, sizeof *nq);
		for (size_t i = 0; i < p->qcount; i++)
			nq[i] = p->q[(p->qhead + i) % p->qcap];
		free(p->q);
		p->q = nq;
		p->qhead = 0;
		p->qcap = ncap;
	}
	p->q[(p->qhead + p->qcount) % p->qcap] = b;
	p->qcount++;
	if (b)
		p->qbytes += b->len;
}

/* The next message without removing it (skips coalesced slots). */
static struct space_buf *q_peek(struct pss *p)
{
	while (p->qcount && !p->q[p->qhead]) {
		p->qhead = (p->qhead + 1) % p->qcap;
		p->qcount--;
	}
	return p->qcount ? p->q[p->qhead] : NULL;
}

static struct space_buf *q_pop(struct pss *p)
{
	while (p->qcount) {
		struct space_buf *b = p->q[p->qhead];
		p->qhead = (p->qhead + 1) % p->qcap;
		p->qcount--;
		if (b) {
			p->qbytes -= b->len;
			return b;
		}
	}
	return NULL;
}

/* Under backpressure a newer presence makes an unsent older one useless:
 * clients rebuild their member list from each presence (§7.4). Only then,
 * so that normal traffic keeps the exact reference sequence. */
static void q_coalesce_presence(struct pss *p, const struct space_buf *newer)
{
	for (size_t i = p->qcount; i-- > 0;) {
		size_t at = (p->qhead + i) % p->qcap;
		struct space_buf *b = p->q[at];
		/* The same buffer queued twice is the joiner's deliberate pair
		 * (presence → history → presence, §3.3): never merged. */
		if (b == newer)
			return;
		if (b && (b->flags & SPACE_BUF_PRESENCE)) {
			p->qbytes -= b->len;
			space_buf_unref(b);
			p->q[at] = NULL;
			return;
		}
	}
}

/* Drops a connection at once: no close frame (heartbeat, §3.14) or none
 * possible (a reader that stopped reading). */
static void kill_conn(struct pss *p)
{
	if (p->dead)
		return;
	p->dead = true;
	q_clear(p);
	int fd = lws_get_socket_fd(p->wsi);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	lws_set_timeout(p->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

/* --- room ops ------------------------------------------------------------------ */

static void op_send(void *ud, struct space_conn *c, struct space_buf *msg)
{
	struct server *s = ud;
	struct pss *p = c->io;
	if (!p || p->dead || p->close_pending || s->phase == PHASE_DONE)
		return;
	if ((msg->flags & SPACE_BUF_PRESENCE) && p->qbytes >= SPACE_PRESENCE_COALESCE_BYTES)
		q_coalesce_presence(p, msg);
	if (p->qbytes + msg->len > s->cfg->sendq_max_bytes) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "send queue over its limit: dropping a connection that stopped reading",
		       "name", c->name ? c->name : "(pending)", "queued", LOG_INT(p->qbytes),
		       "limit", LOG_INT(s->cfg->sendq_max_bytes));
		kill_conn(p);
		return;
	}
	q_push(p, space_buf_ref(msg));
	lws_callback_on_writable(p->wsi);
}

static void op_close(void *ud, struct space_conn *c, int code, const char *reason)
{
	struct server *s = ud;
	struct pss *p = c->io;
	if (!p || p->dead || p->close_pending || s->phase == PHASE_DONE)
		return;
	p->close_pending = true;
	p->close_code = code;
	snprintf(p->close_reason, sizeof p->close_reason, "%s", reason ? reason : "");
	s->nclosing++;
	lws_callback_on_writable(p->wsi);
}

static void op_drop(void *ud, struct space_conn *c)
{
	struct pss *p = c->io;
	if (p)
		kill_conn(p);
}

static void op_ping(void *ud, struct space_conn *c)
{
	struct pss *p = c->io;
	if (!p || p->dead || p->close_pending)
		return;
	p->ping_pending = true;
	lws_callback_on_writable(p->wsi);
}

static void op_show(void *ud, const char *line)
{
	struct server *s = ud;
	if (s->tty_out) {
		fputs(line, stdout);
		fputc('\n', stdout);
		fflush(stdout);
	}
}

static const struct space_room_ops room_ops = {
	.send = op_send,
	.close = op_close,
	.drop = op_drop,
	.ping = op_ping,
	.show = op_show,
};

/* --- plain HTTP -------------------------------------------------------------------- */

static int http_respond(struct lws *wsi, struct pss *p, unsigned status, const char *ctype,
			const char *body, size_t len)
{
	unsigned char hdr[LWS_PRE + 512];
	unsigned char *start = hdr + LWS_PRE, *pos = start, *end = hdr + sizeof hdr - 1;
	if (lws_add_http_common_headers(wsi, status, ctype, (lws_filepos_t)len, &pos, end) ||
	    lws_finalize_write_http_header(wsi, start, &pos, end))
		return 1;
	free(p->http_body);
	p->http_body = xmalloc(LWS_PRE + len + 1);
	memcpy(p->http_body + LWS_PRE, body, len);
	p->http_len = len;
	lws_callback_on_writable(wsi);
	return 0;
}

static int http_request(struct server *s, struct lws *wsi, struct pss *p, const char *path)
{
	bool get = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0;
	if (get && path && strcmp(path, "/healthz") == 0) {
		/* Beyond the reference: a liveness probe for supervisors. */
		struct strbuf sb;
		sb_init(&sb, 0);
		sb_puts(&sb, "{\"name\":");
		space_put_str(&sb, s->cfg->name);
		sb_printf(&sb, ",\"agents\":%zu,\"uptime\":%" PRIu64 "}",
			  space_room_member_count(s->room),
			  (time_mono_ms() - s->started_mono) / 1000);
		int rc = http_respond(wsi, p, HTTP_STATUS_OK, "application/json", sb_cstr(&sb),
				      sb.len);
		sb_free(&sb);
		return rc;
	}
	/* §1 item 3: anything else without an upgrade. */
	return http_respond(wsi, p, 426, "text/plain", "Upgrade Required", 16);
}

static int http_writeable(struct lws *wsi, struct pss *p)
{
	if (!p->http_body)
		return 0;
	int n = lws_write(wsi, p->http_body + LWS_PRE, p->http_len, LWS_WRITE_HTTP_FINAL);
	free(p->http_body);
	p->http_body = NULL;
	if (n < (int)p->http_len)
		return -1;
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* --- WebSocket ------------------------------------------------------------------------ */

static int close_now(struct lws *wsi, enum lws_close_status code)
{
	lws_close_reason(wsi, code, NULL, 0);
	return -1;
}

/* A complete message: §1 items 7–9, then the room. */
static int deliver(struct server *s, struct pss *p, const char *data, size_t len, bool binary)
{
	if (!binary) {
		/* lws validates text frames too (LWS_SERVER_OPTION_VALIDATE_UTF8);
		 * this check keeps the rule independent of that option. */
		if (!utf8_valid(data, len))
			return close_now(p->wsi, LWS_CLOSE_STATUS_INVALID_PAYLOAD);
		space_room_input(s->room, p->conn, data, len, now_ms());
		return 0;
	}
	size_t fixed_len = 0;
	char *fixed = space_utf8_repair(data, len, &fixed_len);
	if (fixed) {
		space_room_input(s->room, p->conn, fixed, fixed_len, now_ms());
		free(fixed);
	} else {
		space_room_input(s->room, p->conn, data, len, now_ms());
	}
	return 0;
}

static int ws_receive(struct server *s, struct pss *p, const char *in, size_t len)
{
	if (p->dead || !p->conn)
		return 0;
	bool done = lws_is_final_fragment(p->wsi) && !lws_remaining_packet_payload(p->wsi);
	if (!p->rx_active) {
		p->rx_binary = lws_frame_is_binary(p->wsi);
		if (done) {
			if (len > SPACE_MAX_PAYLOAD_BYTES)
				return close_now(p->wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE);
		}
		if (!done && len + lws_remaining_packet_payload(p->wsi) > SPACE_MAX_PAYLOAD_BYTES)
			return close_now(p->wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE);
		if (done) {
			if (len > SPACE_MAX_PAYLOAD_BYTES)
				return close_now(p->wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE);
			return deliver(s, p, in, len, p->rx_binary);
		}
		p->rx_active = true;
		sb_init(&p->rx, SPACE_MAX_PAYLOAD_BYTES);
	}
	/* Exactly 1,048,576 bytes pass; one more closes 1009 (§1 item 9). The
	 * rest of the frame announced in its header counts at once, like ws's
	 * maxPayload check, so a huge frame is refused before it arrives. */
	if (p->rx.len + len + lws_remaining_packet_payload(p->wsi) > SPACE_MAX_PAYLOAD_BYTES ||
	    sb_append(&p->rx, in, len) < 0) {
		sb_free(&p->rx);
		p->rx_active = false;
		return close_now(p->wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE);
	}
	if (!done)
		return 0;
	p->rx_active = false;
	int rc = deliver(s, p, p->rx.buf ? p->rx.buf : "", p->rx.len, p->rx_binary);
	sb_free(&p->rx);
	return rc;
}

/* Appends one unmasked, unfragmented text frame (RFC 6455 §5.2) holding b. */
static size_t put_frame(unsigned char *out, const struct space_buf *b)
{
	size_t n = 0, len = b->len;
	out[n++] = 0x81; /* FIN | text */
	if (len < 126) {
		out[n++] = (unsigned char)len;
	} else if (len <= 0xFFFF) {
		out[n++] = 126;
		out[n++] = (unsigned char)(len >> 8);
		out[n++] = (unsigned char)len;
	} else {
		out[n++] = 127;
		for (int i = 7; i >= 0; i--)
			out[n++] = (unsigned char)(len >> (8 * i));
	}
	memcpy(out + n, space_buf_data((struct space_buf *)b), len);
	return n + len;
}

/* Several small queued messages leave in one send(): under load this is
 * what keeps 1000 members fed (one syscall and one writeable callback per
 * batch instead of per message). The frames are built here and written
 * raw, since lws_write() frames exactly one message per call. first has
 * already been popped; the batch takes ownership of it. */
static int write_batch(struct server *s, struct pss *p, struct space_buf *first)
{
	unsigned char *out = s->batch + LWS_PRE;
	size_t used = put_frame(out, first);
	space_buf_unref(first);
	struct space_buf *b;
	while ((b = q_peek(p)) && used + b->len + 10 <= SPACE_WRITE_BATCH_BYTES) {
		b = q_pop(p);
		used += put_frame(out + used, b);
		space_buf_unref(b);
	}
	return lws_write(p->wsi, out, used, LWS_WRITE_RAW);
}

static int ws_writeable(struct server *s, struct pss *p)
{
	if (p->dead)
		return -1;
	if (p->ping_pending) {
		/* The reference pings with an empty payload, but lws swallows
		 * empty pongs before the RECEIVE_PONG callback; a 2-byte
		 * payload comes back in the pong and is seen. */
		unsigned char ping[LWS_PRE + 2];
		memcpy(ping + LWS_PRE, "hb", 2);
		p->ping_pending = false;
		if (lws_write(p->wsi, ping + LWS_PRE, 2, LWS_WRITE_PING) < 0)
			return -1;
		if (p->qcount || p->close_pending)
			lws_callback_on_writable(p->wsi);
		return 0;
	}
	struct space_buf *b = q_pop(p);
	if (b) {
		int n;
		if (b->len > SPACE_WRITE_BATCH_BYTES / 2 || !q_peek(p)) {
			n = lws_write(p->wsi, (unsigned char *)space_buf_data(b), b->len,
				      LWS_WRITE_TEXT);
			space_buf_unref(b);
		} else {
			n = write_batch(s, p, b);
		}
		if (n < 0)
			return -1;
		if (p->qcount || p->close_pending)
			lws_callback_on_writable(p->wsi);
		return 0;
	}
	if (p->close_pending && !p->close_ready) {
		/* Returning -1 from WRITEABLE makes lws drop the socket without
		 * a close frame. The close handshake starts from a close call
		 * outside the write path instead: the wsi timer fires next. */
		lws_close_reason(p->wsi, (enum lws_close_status)p->close_code,
				 (unsigned char *)p->close_reason, strlen(p->close_reason));
		p->close_ready = true;
		lws_set_timer_usecs(p->wsi, 1);
	}
	return 0;
}

static void ws_closed(struct server *s, struct pss *p)
{
	if (p->rx_active)
		sb_free(&p->rx);
	q_clear(p);
	if (p->close_pending && s->nclosing)
		s->nclosing--;
	if (p->conn) {
		space_room_conn_closed(s->room, p->conn, now_ms());
		p->conn = NULL;
		s->nconns--;
	}
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		    size_t len)
{
	struct server *s = lws_context_user(lws_get_context(wsi));
	struct pss *p = user;

	switch (reason) {
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		/* Beyond the reference: a connection limit, applied before the
		 * upgrade so an over-capacity client gets no WebSocket at all. */
		if (s->nconns >= s->cfg->max_clients) {
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "connection refused: room is full",
			       "limit", LOG_INT(s->cfg->max_clients));
			lws_return_http_status(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE,
					       "agent-space is full (SPACE_MAX_CLIENTS)");
			return 1;
		}
		if (s->phase >= PHASE_CLOSING)
			return 1;
		return 0;

	case LWS_CALLBACK_ESTABLISHED:
		memset(p, 0, sizeof *p);
		p->wsi = wsi;
		p->conn = space_room_conn_new(s->room, p);
		s->nconns++;
		lws_set_timer_usecs(wsi, (lws_usec_t)s->cfg->join_timeout_ms * 1000);
		return 0;

	case LWS_CALLBACK_TIMER:
		/* One wsi timer serves two purposes: the join deadline, and the
		 * hop that starts a close handshake (see ws_writeable). */
		if (p && p->close_ready && !p->dead) {
			/* Sends the close frame with the reason set earlier, then
			 * waits (bounded by lws) for the peer's close. */
			lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
			return 0;
		}
		if (p && p->conn)
			space_room_join_timeout(s->room, p->conn, now_ms());
		return 0;

	case LWS_CALLBACK_RECEIVE:
		return ws_receive(s, p, in, len);

	case LWS_CALLBACK_RECEIVE_PONG:
		log_debug(LOG_COMP, "pong (%zu bytes)", len);
		if (p->conn)
			space_room_pong(s->room, p->conn, now_ms());
		return 0;

	case LWS_CALLBACK_SERVER_WRITEABLE:
		return ws_writeable(s, p);

	case LWS_CALLBACK_CLOSED:
		ws_closed(s, p);
		return 0;

	case LWS_CALLBACK_HTTP:
		return http_request(s, wsi, p, in);

	case LWS_CALLBACK_HTTP_WRITEABLE:
		return http_writeable(wsi, p);

	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (p) {
			free(p->http_body);
			p->http_body = NULL;
		}
		return 0;

	default:
		return 0;
	}
}

static const struct lws_protocols protocols[] = {
	{"agent-space", callback, sizeof(struct pss), 0, 0, NULL, 0},
	{NULL, NULL, 0, 0, 0, NULL, 0},
};

/* --- host input ------------------------------------------------------------------------- */

static void begin_shutdown(struct server *s, const char *why);

static void print_who(struct server *s)
{
	size_t n = space_room_member_count(s->room);
	printf("%zu agent%s in the room\n", n, n == 1 ? "" : "s");
	for (const struct space_conn *m = space_room_first_member(s->room); m; m = m->next) {
		char ts[TIME_ISO_LEN + 1];
		printf("  %s (%s) v%s, joined %s\n", m->name, m->id, m->version,
		       time_format_iso(m->joined_at, ts));
	}
	fflush(stdout);
}

static void host_line(void *ud, const char *line, size_t len)
{
	struct server *s = ud;
	size_t off, n;
	space_js_trim(line, len, &off, &n);
	if (!n)
		return;
	const char *t = line + off;
	if ((n == 4 && strncasecmp(t, "exit", 4) == 0) || (n == 4 && strncasecmp(t, "quit", 4) == 0) ||
	    (n == 5 && strncasecmp(t, "/quit", 5) == 0) || (n == 5 && strncasecmp(t, "/exit", 5) == 0)) {
		begin_shutdown(s, "host asked to quit");
		return;
	}
	if (n == 4 && strncmp(t, "/who", 4) == 0) {
		print_who(s);
		return;
	}
	if (!utf8_valid(t, n)) {
		log_warn(LOG_COMP, "host line is not valid UTF-8: ignored");
		return;
	}
	space_room_host_chat(s->room, t, n, now_ms());
}

/* --- timers and shutdown ------------------------------------------------------------------ */

static void on_heartbeat(uv_timer_t *t)
{
	struct server *s = t->data;
	space_room_heartbeat(s->room, now_ms());
}

static void on_sweep(uv_timer_t *t)
{
	struct server *s = t->data;
	space_room_sweep(s->room, now_ms());
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void finish(struct server *s)
{
	s->phase = PHASE_DONE;
	log_info(LOG_COMP, "room closed");
	uv_timer_stop(&s->phase_timer);
	close_handle((uv_handle_t *)&s->phase_timer);
	close_handle((uv_handle_t *)&s->heartbeat);
	close_handle((uv_handle_t *)&s->sweep);
	close_handle((uv_handle_t *)&s->sigint);
	close_handle((uv_handle_t *)&s->sigterm);
	space_host_stop(s->host);
	s->host = NULL;
	/* With a foreign loop, lws closes its handles asynchronously; the
	 * loop then runs dry and space_server_run returns. */
	if (s->ctx)
		lws_context_destroy(s->ctx);
}

static void on_close_wait(uv_timer_t *t)
{
	struct server *s = t->data;
	if (s->nclosing == 0 || time_mono_ms() >= s->close_deadline)
		finish(s);
}

static void on_grace_over(uv_timer_t *t)
{
	struct server *s = t->data;
	s->phase = PHASE_CLOSING;
	uv_timer_stop(&s->heartbeat);
	uv_timer_stop(&s->sweep);
	mdns_publish_stop(s->mdns);
	s->mdns = NULL;
	space_room_shutdown_close(s->room);
	s->close_deadline = time_mono_ms() + SPACE_CLOSE_WAIT_MS;
	uv_timer_start(&s->phase_timer, on_close_wait, 10, 10);
}

/* §3.17: once; shutdown message now, 1001 after the grace period. */
static void begin_shutdown(struct server *s, const char *why)
{
	if (s->phase != PHASE_RUNNING)
		return;
	s->phase = PHASE_DRAINING;
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "shutting down", "why", why, "members",
	       LOG_INT(space_room_member_count(s->room)), "grace_ms",
	       LOG_INT(s->cfg->shutdown_grace_ms));
	space_room_shutdown_notice(s->room, now_ms());
	uv_timer_start(&s->phase_timer, on_grace_over, (uint64_t)s->cfg->shutdown_grace_ms, 0);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct server *s = h->data;
	begin_shutdown(s, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* --- startup ---------------------------------------------------------------------------- */

static void lws_log_emit(int level, const char *line)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", line);
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	log_write(level & LLL_ERR ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN, "lws", buf, NULL);
}

/* Room for every client plus the listener, the log, stdin and avahi. */
static void raise_fd_limit(unsigned max_clients)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	rlim_t want = (rlim_t)max_clients + 64;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
		log_warn(LOG_COMP, "open-file limit %llu is below SPACE_MAX_CLIENTS + 64 (%llu)",
			 (unsigned long long)rl.rlim_cur, (unsigned long long)want);
}

static void print_space_url(int port)
{
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs) < 0)
		return;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof ip);
		log_info(LOG_COMP, "SPACE_URL ws://%s:%d", ip, port);
		break;
	}
	freeifaddrs(ifs);
}

static bool is_ipv4_literal(const char *a)
{
	struct in_addr x;
	return inet_pton(AF_INET, a, &x) == 1;
}

static struct lws_context *create_context(struct server *s, bool ipv6)
{
	struct lws_context_creation_info info;
	void *loops[1] = {&s->loop};
	const struct space_server_config *cfg = s->cfg;
	bool any = !cfg->bind || !*cfg->bind || strcmp(cfg->bind, "0.0.0.0") == 0;

	memset(&info, 0, sizeof info);
	info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_VALIDATE_UTF8 |
		       LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	if (!ipv6 || (!any && is_ipv4_literal(cfg->bind)))
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info.foreign_loops = loops;
	info.user = s;
	info.pcontext = &s->ctx;
	info.fd_limit_per_thread = cfg->max_clients + 64;
	info.count_threads = 1;
	info.max_http_header_pool = 64;
	info.server_string = "agent-space";
	struct lws_context *ctx = lws_create_context(&info);
	if (!ctx)
		return NULL;

	memset(&info, 0, sizeof info);
	info.options = LWS_SERVER_OPTION_VALIDATE_UTF8;
	if (!ipv6 || (!any && is_ipv4_literal(cfg->bind)))
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info.port = cfg->port;
	info.iface = any ? NULL : cfg->bind;
	info.protocols = protocols;
	info.vhost_name = "agent-space";
	s->vh = lws_create_vhost(ctx, &info);
	if (!s->vh) {
		lws_context_destroy(ctx);
		return NULL;
	}
	return ctx;
}

static int write_port_file(const char *path, int port, struct ga_err *err)
{
	char buf[16];
	int n = snprintf(buf, sizeof buf, "%d\n", port);
	return fsx_write_atomic(path, buf, (size_t)n, err);
}

void space_server_config_init(struct space_server_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->name = SPACE_DEFAULT_NAME;
	cfg->port = SPACE_DEFAULT_PORT;
	cfg->bind = SPACE_DEFAULT_BIND;
	cfg->data_dir = SPACE_DEFAULT_DATA_DIR;
	cfg->max_clients = SPACE_DEFAULT_MAX_CLIENTS;
	cfg->mdns = true;
	cfg->host_input = true;
	cfg->join_timeout_ms = SPACE_JOIN_TIMEOUT_MS_DEFAULT;
	cfg->heartbeat_ms = SPACE_HEARTBEAT_MS_DEFAULT;
	cfg->claim_ttl_ms = SPACE_CLAIM_TTL_MS_DEFAULT;
	cfg->chat_interval_ms = SPACE_CHAT_INTERVAL_MS_DEFAULT;
	cfg->shutdown_grace_ms = SPACE_SHUTDOWN_GRACE_MS_DEFAULT;
	cfg->sweep_ms = SPACE_SWEEP_MS_DEFAULT;
	cfg->workspace_ttl_ms = SPACE_WORKSPACE_TTL_MS_DEFAULT;
	cfg->log_max_bytes = SPACE_LOG_ROTATE_BYTES_DEFAULT;
	cfg->history_max_bytes = SPACE_HISTORY_MAX_BYTES_DEFAULT;
	cfg->sendq_max_bytes = SPACE_SENDQ_MAX_BYTES_DEFAULT;
}

static void drain_loop(uv_loop_t *loop)
{
	uv_run(loop, UV_RUN_DEFAULT);
}

enum space_run_result space_server_run(const struct space_server_config *cfg,
				       struct ga_err *err)
{
	struct server *s = xcalloc(1, sizeof *s);
	enum space_run_result rc = SPACE_RUN_CANNOT_LISTEN;
	s->cfg = cfg;
	s->started_ms = now_ms();
	s->started_mono = time_mono_ms();
	s->tty_out = isatty(STDOUT_FILENO);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit(cfg->max_clients);

	struct ga_err serr = {{0}};
	s->store = space_store_open(cfg->data_dir, cfg->log_max_bytes, cfg->history_max_bytes,
				    &serr);
	if (!s->store) {
		err_set(err, "SPACE_DATA_DIR=%s is unusable: %s", cfg->data_dir, serr.msg);
		free(s);
		return SPACE_RUN_BAD_DATA_DIR;
	}
	struct space_room_config rcfg;
	space_room_config_init(&rcfg);
	rcfg.claim_ttl_ms = cfg->claim_ttl_ms;
	rcfg.chat_interval_ms = cfg->chat_interval_ms;
	rcfg.workspace_ttl_ms = cfg->workspace_ttl_ms;
	rcfg.join_timeout_ms = cfg->join_timeout_ms;
	s->room = space_room_new(&rcfg, s->store, &room_ops, s, s->started_ms);

	uv_loop_init(&s->loop);
	lws_set_log_level(LLL_ERR | LLL_WARN, lws_log_emit);
	s->ctx = create_context(s, true);
	if (!s->ctx && !(cfg->bind && is_ipv4_literal(cfg->bind) &&
			 strcmp(cfg->bind, "0.0.0.0") != 0)) {
		/* No IPv6 on this host: fall back to IPv4 only. */
		drain_loop(&s->loop);
		s->ctx = create_context(s, false);
	}
	if (!s->ctx) {
		err_set(err, "cannot listen on %s port %d (SPACE_BIND / SPACE_PORT): "
			"the address may be in use or not assigned to this host",
			cfg->bind, cfg->port);
		goto out;
	}
	int port = lws_get_vhost_listen_port(s->vh);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "listening", "name", cfg->name, "bind", cfg->bind,
	       "port", LOG_INT(port), "data", space_store_path(s->store), "max_clients",
	       LOG_INT(cfg->max_clients));
	print_space_url(port);
	if (cfg->port_file && write_port_file(cfg->port_file, port, err) < 0)
		goto out;

	uv_timer_init(&s->loop, &s->heartbeat);
	uv_timer_init(&s->loop, &s->sweep);
	uv_timer_init(&s->loop, &s->phase_timer);
	s->heartbeat.data = s->sweep.data = s->phase_timer.data = s;
	uv_timer_start(&s->heartbeat, on_heartbeat, (uint64_t)cfg->heartbeat_ms,
		       (uint64_t)cfg->heartbeat_ms);
	uv_timer_start(&s->sweep, on_sweep, (uint64_t)cfg->sweep_ms, (uint64_t)cfg->sweep_ms);
	uv_signal_init(&s->loop, &s->sigint);
	uv_signal_init(&s->loop, &s->sigterm);
	s->sigint.data = s->sigterm.data = s;
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);

	if (cfg->host_input)
		s->host = space_host_start(&s->loop, STDIN_FILENO, host_line, s);
	if (cfg->mdns)
		s->mdns = mdns_publish_start(&s->loop, cfg->name, MDNS_SPACE_SERVICE_TYPE, port,
					     NULL);
	drain_loop(&s->loop);
	log_debug(LOG_COMP, "event loop finished");
	rc = SPACE_RUN_OK;
out:
	s->phase = PHASE_DONE;
	if (s->ctx) {
		lws_context_destroy(s->ctx);
		drain_loop(&s->loop);
	}
	mdns_publish_stop(s->mdns);
	s->mdns = NULL;
	drain_loop(&s->loop);
	if (uv_loop_close(&s->loop) != 0)
		log_warn(LOG_COMP, "event loop closed with handles still open");
	space_room_free(s->room);
	space_store_free(s->store);
	free(s);
	return rc;
}
