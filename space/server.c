/*
 * space/server — the agent-space process: the WebSocket connections on one
 * libuv loop (common/ws.c does the RFC 6455 parsing), the room's I/O,
 * the log, mDNS, timers, shutdown and startup. See server.h for the
 * contract and server_int.h for how the process is split into files
 * (HTTP routing, the web page's event streams and the host's commands
 * live beside this one).
 *
 * Per connection: a libuv TCP handle and one timer (HTTP head deadline,
 * then the join deadline, then the close-handshake deadline). Until the
 * upgrade the request head is collected; after it, bytes go through the
 * frame parser to the room.
 *
 * Outbound, the room queues shared, pre-framed buffers (space/buf.h) on a
 * connection and marks it dirty; nothing is written there. At the end of
 * each loop turn (uv_check, and uv_prepare for what timers produced) every
 * dirty connection is flushed with one writev of all its queued frames.
 * Under load this is what keeps a 1000-member room cheap: one syscall per
 * member per turn however many messages the turn produced, no per-message
 * copy, and the poll set is touched only when a socket's kernel buffer is
 * full (then a uv_write holds the rest and the connection waits for it).
 *
 * Teardown is asynchronous: a connection is closed with uv_close and the
 * room learns that it is gone in the close callback, never from inside a
 * room call, so the room may drop or close members while it iterates them.
 */
#include "space/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
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
#include "common/sdnotify.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/ws.h"
#include "common/xalloc.h"
#include "space/buf.h"
#include "space/host.h"
#include "space/proto.h"
#include "space/room.h"
#include "space/server_int.h"
#include "space/store.h"
#include "space/web.h"

/* One read buffer serves every connection: reads are handled to the end
 * before the next one starts. */
#define SPACE_READ_BUF_BYTES (64 * 1024)
/* A client must finish its HTTP request head within this. */
#define SPACE_HEAD_TIMEOUT_MS 10000
/* After the server's close frame, how long the peer has to answer with its
 * own close (§9 item 30: bound the closing state) before the socket is cut. */
#define SPACE_CLOSE_HANDSHAKE_MS 5000
/* Frames gathered into one writev. */
#define SPACE_FLUSH_IOV_MAX   128
#define SPACE_FLUSH_BYTES_MAX ((size_t)256 * 1024)
/* TCP connections accepted beyond SPACE_MAX_CLIENTS (they can still ask
 * /healthz or get the 503); more are closed at once. */
#define SPACE_TCP_SLACK      64
#define SPACE_LISTEN_BACKLOG 511
/* After a plain HTTP response, how long the client has to hang up. */
#define SPACE_REPLY_LINGER_MS 2000

/* A uv_write holding the tail of a flush that the kernel did not take. */
struct wreq {
	uv_write_t req;
	struct conn *p;
	size_t bytes;
	size_t nrefs;
	uint8_t ctl[2 * (WS_HDR_MAX + WS_CONTROL_MAX) + 4];
	struct space_buf *refs[];
};

static int64_t now_ms(void)
{
	return time_now_ms();
}

static void flush_conn(struct conn *p);
static void on_conn_timer(uv_timer_t *t);

/* --- dirty list ---------------------------------------------------------------- */

static void dirty_unlink(struct conn *p);

/* Connections waiting for their first answer — an HTTP response, the 101,
 * a newcomer's join sequence — are written first in the turn, the members
 * receiving broadcasts after them. In a join storm a flush of thousands of
 * members takes tens of milliseconds; newcomers at its end would wait for
 * all of it before they can join, so joiners would arrive in small
 * batches and each batch cost a whole flush. */
void srv_mark_dirty(struct conn *p)
{
	struct server *s = p->s;
	if (p->state == CONN_GONE)
		return;
	bool first = !(p->room && p->room->member && p->greeted);
	if (p->dirty) {
		if (!first || p->dirty_urgent)
			return;
		dirty_unlink(p);
	}
	p->dirty = true;
	p->dirty_urgent = first;
	if (first) {
		/* after the other urgent ones: first come, first served */
		struct conn *after = s->dirty_urgent_last;
		p->dirty_prev = after;
		p->dirty_next = after ? after->dirty_next : s->dirty_first;
		if (p->dirty_next)
			p->dirty_next->dirty_prev = p;
		else
			s->dirty_last = p;
		if (after)
			after->dirty_next = p;
		else
			s->dirty_first = p;
		s->dirty_urgent_last = p;
		return;
	}
	p->dirty_next = NULL;
	p->dirty_prev = s->dirty_last;
	if (s->dirty_last)
		s->dirty_last->dirty_next = p;
	else
		s->dirty_first = p;
	s->dirty_last = p;
}

static void dirty_unlink(struct conn *p)
{
	struct server *s = p->s;
	if (!p->dirty)
		return;
	if (s->dirty_urgent_last == p)
		s->dirty_urgent_last = p->dirty_prev; /* urgent ones come first */
	if (p->dirty_prev)
		p->dirty_prev->dirty_next = p->dirty_next;
	else
		s->dirty_first = p->dirty_next;
	if (p->dirty_next)
		p->dirty_next->dirty_prev = p->dirty_prev;
	else
		s->dirty_last = p->dirty_prev;
	p->dirty = false;
	p->dirty_prev = p->dirty_next = NULL;
}

static void on_wake_timer(uv_timer_t *t);

/* A join or a member's departure: counted per second to tell a storm. */
void srv_churn(struct server *s)
{
	uint64_t now = uv_now(&s->loop);
	if (now - s->churn_since >= 1000) {
		s->churn_prev = now - s->churn_since < 2000 ? s->churn_now : 0;
		s->churn_now = 0;
		s->churn_since = now;
	}
	s->churn_now++;
}

/* In a join or leave storm (SPACE_STORM_CHURN_PER_S joins and departures
 * within about a second) the members that only receive broadcasts are
 * written at most every SPACE_STORM_FLUSH_MS instead of every turn: a turn
 * of a storm brings a few joins, and writing thousands of members for each
 * few is what made a storm slow; now each write carries the joins of several
 * turns. Connections waiting for their first answer (srv_mark_dirty) are
 * still written every turn, so joiners never wait for the room. */
static bool storm(struct server *s)
{
	uint64_t now = uv_now(&s->loop);
	unsigned recent = now - s->churn_since < 1000   ? s->churn_now + s->churn_prev
	                  : now - s->churn_since < 2000 ? s->churn_now
	                                                : 0;
	return recent >= SPACE_STORM_CHURN_PER_S;
}

/* Writes what every dirty connection has queued. Runs once per loop turn
 * (twice, counting uv_prepare); this is also where the room emits the
 * presence it deferred (room.h: per turn and paced), and where the timers
 * for a paced presence and a held-back storm write are set. */
static void flush_all(struct server *s)
{
	uint64_t wake = UINT64_MAX;
	if (s->phase != PHASE_DONE) {
		int64_t now = now_ms();
		space_room_flush(s->room, now);
		int64_t due = space_room_presence_due(s->room);
		if (due >= 0)
			wake = due > now ? (uint64_t)(due - now) : 0;
		if (s->web)
			srv_web_flush(s);
	}
	uint64_t mono = uv_now(&s->loop);
	bool hold = s->phase == PHASE_RUNNING && mono < s->bulk_next && storm(s);
	struct conn *p;
	bool bulk = false;
	while ((p = s->dirty_first)) {
		if (hold && !p->dirty_urgent)
			break;
		bulk |= !p->dirty_urgent;
		dirty_unlink(p);
		flush_conn(p);
	}
	if (bulk) {
		uv_update_time(&s->loop);
		s->bulk_next = uv_now(&s->loop) + SPACE_STORM_FLUSH_MS;
	}
	if (hold && s->dirty_first && s->bulk_next - mono < wake)
		wake = s->bulk_next - mono;
	if (wake != UINT64_MAX && s->phase != PHASE_DONE &&
	    (!uv_is_active((uv_handle_t *)&s->wake_timer) ||
	     uv_timer_get_due_in(&s->wake_timer) > wake))
		uv_timer_start(&s->wake_timer, on_wake_timer, wake, 0);
	s->turn++;
}

static void on_wake_timer(uv_timer_t *t)
{
	flush_all(t->data);
}

static void on_prepare(uv_prepare_t *h)
{
	flush_all(h->data);
}

static void on_check(uv_check_t *h)
{
	flush_all(h->data);
}

/* --- send queue ------------------------------------------------------------------ */

static struct qent *q_at(struct conn *p, size_t i)
{
	return &p->q[(p->qhead + i) & (p->qcap - 1)];
}

static void q_clear(struct conn *p)
{
	for (size_t i = 0; i < p->qcount; i++)
		space_buf_unref(q_at(p, i)->b);
	free(p->q);
	p->q = NULL;
	p->qhead = p->qcount = p->qcap = p->qbytes = 0;
}

void srv_q_push(struct conn *p, struct space_buf *b)
{
	if (p->qcount == p->qcap) {
		/* Doubles in place: the slots before the head move after the old
		 * end, so the ring is contiguous again. No zeroing, no copy of
		 * the rest: a member that fell behind can hold many slots, and
		 * growing them must not cost more than queuing them. */
		size_t ncap = p->qcap ? p->qcap * 2 : 8;
		p->q = xreallocarray(p->q, ncap, sizeof *p->q);
		if (p->qhead)
			memcpy(p->q + p->qcap, p->q, p->qhead * sizeof *p->q);
		p->qcap = ncap;
	}
	struct qent *e = q_at(p, p->qcount);
	e->b = b;
	e->turn = (uint32_t)p->s->turn;
	e->bytes = (uint32_t)(b->hdr_len + b->len);
	p->qcount++;
	p->qbytes += e->bytes;
}

/* Removes the first n entries; unref says whether their references are
 * dropped (written) or were handed to a uv_write. */
static void q_drop_front(struct conn *p, size_t n, bool unref)
{
	for (size_t i = 0; i < n; i++) {
		struct qent *e = q_at(p, 0);
		if (e->b) {
			p->qbytes -= e->bytes;
			if (unref)
				space_buf_unref(e->b);
		}
		e->b = NULL;
		p->qhead = (p->qhead + 1) & (p->qcap - 1);
		p->qcount--;
	}
	if (!p->qcount && p->qcap > 64) {
		/* A queue that grew during a burst shrinks back when idle. */
		free(p->q);
		p->q = NULL;
		p->qhead = p->qcap = 0;
	}
}

/* A presence still unsent from an earlier turn means this member is not
 * keeping up; the newer snapshot makes it useless (clients rebuild their
 * member list from each presence, §7.4). Within one turn nothing is ever
 * merged, so normal traffic keeps the exact reference sequence. */
static void q_coalesce_presence(struct conn *p)
{
	for (size_t i = p->qcount; i-- > 0;) {
		struct qent *e = q_at(p, i);
		if (e->b && (e->b->flags & SPACE_BUF_PRESENCE) && e->turn != (uint32_t)p->s->turn) {
			p->qbytes -= e->bytes;
			space_buf_unref(e->b);
			e->b = NULL;
			return;
		}
	}
}

/* --- writing ------------------------------------------------------------------------ */

static size_t put_control(uint8_t *out, unsigned opcode, const void *payload, size_t len)
{
	size_t n = ws_frame_header(out, opcode, len);
	if (len)
		memcpy(out + n, payload, len);
	return n + len;
}

static void on_written(uv_write_t *req, int status)
{
	struct wreq *w = req->data;
	struct conn *p = w->p;
	for (size_t i = 0; i < w->nrefs; i++)
		space_buf_unref(w->refs[i]);
	p->inflight -= w->bytes;
	p->writing = false;
	free(w);
	if (status < 0) {
		if (status != UV_ECANCELED)
			log_debug(LOG_COMP, "write failed: %s", uv_strerror(status));
		srv_conn_abort(p);
		return;
	}
	flush_conn(p);
}

/* The kernel took `done` of `total` bytes: the rest goes into a uv_write,
 * which keeps the buffers referenced and copies the control frames. */
static void write_rest(struct conn *p, uv_buf_t *iov, struct space_buf **owner, size_t n,
                       size_t done, size_t total)
{
	struct wreq *w = xcalloc(1, sizeof *w + n * sizeof w->refs[0]);
	uv_buf_t rest[SPACE_FLUSH_IOV_MAX + 2];
	size_t nrest = 0, ctl_used = 0, skip = done;
	w->p = p;
	w->bytes = total - done;
	for (size_t i = 0; i < n; i++) {
		if (skip >= iov[i].len) {
			skip -= iov[i].len;
			if (owner[i])
				space_buf_unref(owner[i]);
			continue;
		}
		uv_buf_t b = uv_buf_init(iov[i].base + skip, (unsigned)(iov[i].len - skip));
		skip = 0;
		if (owner[i]) {
			w->refs[w->nrefs++] = owner[i];
		} else {
			memcpy(w->ctl + ctl_used, b.base, b.len);
			b.base = (char *)w->ctl + ctl_used;
			ctl_used += b.len;
		}
		rest[nrest++] = b;
	}
	w->req.data = w;
	p->inflight += w->bytes;
	p->writing = true;
	int rc = uv_write(&w->req, (uv_stream_t *)&p->tcp, rest, (unsigned)nrest, on_written);
	if (rc < 0) {
		p->writing = false;
		p->inflight -= w->bytes;
		for (size_t i = 0; i < w->nrefs; i++)
			space_buf_unref(w->refs[i]);
		free(w);
		srv_conn_abort(p);
	}
}

/* What to do once everything queued has left. */
static void after_flush(struct conn *p)
{
	if (p->state == CONN_GONE || p->writing || p->qcount)
		return;
	if (p->state == CONN_REPLY) {
		/* The response is in the kernel. A FIN rather than a close, so
		 * that unread request bytes cannot turn into a reset that
		 * destroys the response; the client's EOF (or a short timer)
		 * ends it. */
		if (!p->shut_started) {
			p->shut_started = true;
			uv_timer_start(&p->timer, on_conn_timer, SPACE_REPLY_LINGER_MS, 0);
			if (uv_shutdown(&p->shut, (uv_stream_t *)&p->tcp, NULL) < 0)
				srv_conn_abort(p);
		}
		return;
	}
	if (p->close_sent && p->close_received) {
		srv_conn_abort(p); /* close handshake complete: the server hangs up first */
	} else if (p->close_sent && !p->shut_started) {
		/* Our close frame has left and nothing follows it; the FIN also
		 * tells a peer that never answers close frames that we are done.
		 * Its close, its EOF or the handshake timer ends the connection. */
		p->shut_started = true;
		if (uv_shutdown(&p->shut, (uv_stream_t *)&p->tcp, NULL) < 0)
			srv_conn_abort(p);
	}
}

/* Writes control frames, queued messages and a pending close frame, in
 * that order, with as few writev calls as the kernel allows. */
static void flush_conn(struct conn *p)
{
	while (p->state != CONN_GONE && !p->writing) {
		uv_buf_t iov[SPACE_FLUSH_IOV_MAX + 2];
		struct space_buf *owner[SPACE_FLUSH_IOV_MAX + 2];
		uint8_t ctl[2 * (WS_HDR_MAX + WS_CONTROL_MAX)];
		uint8_t closef[WS_HDR_MAX + WS_CONTROL_MAX];
		size_t n = 0, total = 0, ctl_len = 0, taken = 0;

		/* Pongs and pings may go between messages (RFC 6455 §5.4). */
		if (p->pong_pending)
			ctl_len += put_control(ctl, WS_OP_PONG, p->pong, p->pong_len);
		if (p->ping_pending && !p->close_sent)
			ctl_len += put_control(ctl + ctl_len, WS_OP_PING, NULL, 0);
		if (ctl_len) {
			owner[n] = NULL;
			iov[n++] = uv_buf_init((char *)ctl, (unsigned)ctl_len);
			total += ctl_len;
		}
		while (taken < p->qcount && n < SPACE_FLUSH_IOV_MAX &&
		       total < SPACE_FLUSH_BYTES_MAX) {
			struct space_buf *b = q_at(p, taken)->b;
			/* The newcomers' snapshot gets its bytes at the end of
			 * the turn (space/room.h); a write completing before that
			 * stops here, and the end-of-turn flush goes on. */
			if (b && !space_buf_ready(b))
				break;
			taken++;
			if (!b)
				continue;
			size_t len;
			const char *wire = space_buf_wire(b, &len);
			owner[n] = b;
			iov[n++] = uv_buf_init((char *)wire, (unsigned)len);
			total += len;
		}
		bool with_close = false;
		if (taken == p->qcount && p->close_queued && !p->close_sent) {
			uint8_t payload[WS_CONTROL_MAX];
			size_t plen = 0;
			if (!p->close_empty) {
				payload[0] = (uint8_t)(p->close_code >> 8);
				payload[1] = (uint8_t)p->close_code;
				memcpy(payload + 2, p->close_reason, p->close_reason_len);
				plen = 2u + p->close_reason_len;
			}
			size_t cl = put_control(closef, WS_OP_CLOSE, payload, plen);
			owner[n] = NULL;
			iov[n++] = uv_buf_init((char *)closef, (unsigned)cl);
			total += cl;
			with_close = true;
		}
		if (n == 0) {
			if (taken)
				q_drop_front(p, taken, true); /* only coalesced slots */
			break;
		}
		int r = uv_try_write((uv_stream_t *)&p->tcp, iov, (unsigned)n);
		if (r == UV_EAGAIN)
			r = 0;
		if (r < 0) {
			log_debug(LOG_COMP, "write failed: %s", uv_strerror(r));
			srv_conn_abort(p);
			return;
		}
		p->pong_pending = false;
		p->ping_pending = false;
		if (with_close)
			p->close_sent = true;
		if ((size_t)r == total) {
			q_drop_front(p, taken, true);
			continue;
		}
		/* The references move into the uv_write (or are dropped there for
		 * the frames that did leave). */
		q_drop_front(p, taken, false);
		write_rest(p, iov, owner, n, (size_t)r, total);
		break;
	}
	if (p->room && p->room->member)
		p->greeted = true;
	after_flush(p);
}

/* --- connection lifetime ------------------------------------------------------------ */

static void conn_free(struct conn *p)
{
	struct server *s = p->s;
	if (p->room) {
		if (p->room->member && s->phase == PHASE_RUNNING)
			srv_churn(s);
		/* The leave goes to the page through the room's observer. */
		space_room_conn_closed(s->room, p->room, now_ms());
		p->room = NULL;
		s->nconns--;
	}
	srv_sse_forget(s, p);
	space_web_presence_clear(&p->webp);
	space_web_profile_clear(&p->webprof);
	if (p->close_queued && s->nclosing)
		s->nclosing--;
	q_clear(p);
	ws_parser_free(&p->parser);
	sb_free(&p->head);
	dirty_unlink(p);
	if (p->prev)
		p->prev->next = p->next;
	else
		s->conns = p->next;
	if (p->next)
		p->next->prev = p->prev;
	s->ntcp--;
	free(p);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct conn *p = h->data;
	if (--p->handles == 0)
		conn_free(p);
}

/* Closes the socket now, without a close frame (a transport error, a
 * heartbeat drop, the end of a close handshake). */
void srv_conn_abort(struct conn *p)
{
	if (p->state == CONN_GONE)
		return;
	p->state = CONN_GONE;
	dirty_unlink(p);
	uv_timer_stop(&p->timer);
	uv_close((uv_handle_t *)&p->tcp, on_handle_closed);
	uv_close((uv_handle_t *)&p->timer, on_handle_closed);
}

/* Queues a close frame after what is already queued; nothing more is
 * queued after it, and the peer has SPACE_CLOSE_HANDSHAKE_MS to answer. */
static void queue_close(struct conn *p, int code, const char *reason, size_t reason_len)
{
	if (p->state != CONN_OPEN || p->close_queued)
		return;
	p->close_queued = true;
	p->s->nclosing++;
	p->close_empty = code == WS_CLOSE_NO_STATUS;
	p->close_code = (uint16_t)code;
	if (reason_len > sizeof p->close_reason)
		reason_len = sizeof p->close_reason;
	memcpy(p->close_reason, reason, reason_len);
	p->close_reason_len = (uint8_t)reason_len;
	uv_timer_start(&p->timer, on_conn_timer, SPACE_CLOSE_HANDSHAKE_MS, 0);
	srv_mark_dirty(p);
}

/* --- room ops -------------------------------------------------------------------------- */

static void op_send(void *ud, struct space_conn *c, struct space_buf *msg)
{
	struct server *s = ud;
	struct conn *p = c->io;
	if (!p || p->state != CONN_OPEN || p->close_queued)
		return;
	if (msg->flags & SPACE_BUF_PRESENCE)
		q_coalesce_presence(p);
	size_t len = msg->hdr_len + msg->len;
	if (p->qbytes + p->inflight + len > s->cfg->sendq_max_bytes) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "send queue over its limit: dropping a connection that stopped reading",
		       "name", c->name ? c->name : "(pending)", "queued",
		       LOG_INT(p->qbytes + p->inflight), "limit", LOG_INT(s->cfg->sendq_max_bytes));
		srv_conn_abort(p);
		return;
	}
	srv_q_push(p, space_buf_ref(msg));
	srv_mark_dirty(p);
}

static void op_close(void *ud, struct space_conn *c, int code, const char *reason)
{
	struct conn *p = c->io;
	if (!p)
		return;
	if (!reason)
		reason = "";
	queue_close(p, code, reason, strlen(reason));
}

static void op_drop(void *ud, struct space_conn *c)
{
	struct conn *p = c->io;
	if (p)
		srv_conn_abort(p);
}

static void op_ping(void *ud, struct space_conn *c)
{
	struct conn *p = c->io;
	if (!p || p->state != CONN_OPEN || p->close_queued)
		return;
	/* §3.14: an empty payload, as peers send it. */
	p->ping_pending = true;
	srv_mark_dirty(p);
}

static void op_show(void *ud, const char *line)
{
	struct server *s = ud;
	if (s->tty_out) {
		srv_show(line);
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

/* --- WebSocket input --------------------------------------------------------------------- */

/* A complete message: §1 items 7 and 8, then the room. Text frames were
 * checked for UTF-8 by the parser; binary ones are decoded like Node. */
static void deliver(struct server *s, struct conn *p, const char *data, size_t len, bool binary)
{
	if (s->phase >= PHASE_CLOSING)
		return;
	char *fixed = NULL;
	if (binary) {
		size_t fixed_len = 0;
		fixed = space_utf8_repair(data, len, &fixed_len);
		if (fixed) {
			data = fixed;
			len = fixed_len;
		}
	}
	space_room_input(s->room, p->room, data, len, now_ms());
	free(fixed);
}

static void ws_input(struct server *s, struct conn *p, char *buf, size_t len)
{
	while (len && p->state == CONN_OPEN && !p->input_done) {
		struct ws_event ev;
		size_t n = ws_parse(&p->parser, buf, len, &ev);
		buf += n;
		len -= n;
		switch (ev.type) {
		case WS_EV_NONE:
			return;
		case WS_EV_MESSAGE:
			if (!p->close_queued)
				deliver(s, p, ev.data, ev.len, ev.binary);
			break;
		case WS_EV_PING:
			/* §1 item 10: echo the payload. An unanswered earlier ping
			 * is superseded (RFC 6455 §5.5.3 allows answering the most
			 * recent only), which bounds what a ping flood can queue. */
			if (!p->close_sent) {
				memcpy(p->pong, ev.data, ev.len);
				p->pong_len = (uint8_t)ev.len;
				p->pong_pending = true;
				srv_mark_dirty(p);
			}
			break;
		case WS_EV_PONG:
			/* Any pong counts as liveness, solicited or not (§1 item 10). */
			if (p->room)
				space_room_pong(s->room, p->room, now_ms());
			break;
		case WS_EV_CLOSE:
			/* Echo the peer's code and reason (what ws does); the socket
			 * closes once the echo has left. */
			p->close_received = true;
			p->input_done = true;
			queue_close(p, ev.code, ev.data, ev.len);
			srv_mark_dirty(p);
			return;
		case WS_EV_ERROR:
			/* §1 items 8, 9, 11: 1007, 1009, 1002 with an empty reason,
			 * no JSON error; the leave follows when the socket closes.
			 * The parser goes on looking for the peer's close only. */
			log_debug(LOG_COMP, "closing a connection: protocol error %d", ev.code);
			if (ev.peer_closed) {
				p->close_received = true;
				p->input_done = true;
			}
			queue_close(p, ev.code, "", 0);
			srv_mark_dirty(p);
			break;
		}
	}
}

/* --- the upgrade ------------------------------------------------------------------------ */

void srv_upgrade(struct server *s, struct conn *p, const struct ws_request *req)
{
	char accept[29];
	ws_accept(req->key, req->key_len, accept);
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_printf(&sb,
	          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	          "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
	          accept);
	/* §1 item 4: the first offered sub-protocol is selected, whatever it
	 * is, as TypeScript servers (ws without handleProtocols) do. */
	if (req->protocol) {
		sb_puts(&sb, "Sec-WebSocket-Protocol: ");
		sb_append(&sb, req->protocol, req->protocol_len);
		sb_puts(&sb, "\r\n");
	}
	sb_puts(&sb, "\r\n");
	p->state = CONN_OPEN;
	srv_q_push(p, space_buf_from_sb(&sb, SPACE_BUF_RAW));
	sb_free(&sb);
	srv_mark_dirty(p);
	ws_parser_init(&p->parser, SPACE_MAX_PAYLOAD_BYTES, WS_ROLE_SERVER);
	p->room = space_room_conn_new(s->room, p);
	s->nconns++;
	srv_churn(s);
	uv_timer_start(&p->timer, on_conn_timer, (uint64_t)s->cfg->join_timeout_ms, 0);
	/* Frames may have come in the same packets as the head. */
	size_t extra = p->head.len - req->head_len;
	if (extra) {
		char *rest = xmalloc(extra);
		memcpy(rest, p->head.buf + req->head_len, extra);
		sb_free(&p->head);
		ws_input(s, p, rest, extra);
		free(rest);
	} else {
		sb_free(&p->head);
	}
}

/* --- libuv callbacks ------------------------------------------------------------------------ */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *p = h->data;
	*buf = uv_buf_init(p->s->rbuf, SPACE_READ_BUF_BYTES);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *p = st->data;
	if (nread == 0)
		return;
	if (nread < 0) {
		/* EOF or a reset: the peer is gone (§3.13 follows for a member). */
		srv_conn_abort(p);
		return;
	}
	if (p->state == CONN_HTTP)
		srv_http_input(p->s, p, buf->base, (size_t)nread);
	else if (p->state == CONN_OPEN)
		ws_input(p->s, p, buf->base, (size_t)nread);
}

static void on_conn_timer(uv_timer_t *t)
{
	struct conn *p = t->data;
	struct server *s = p->s;
	switch (p->state) {
	case CONN_HTTP:
	case CONN_REPLY:
		srv_conn_abort(p); /* no complete request head, or a response never read */
		break;
	case CONN_OPEN:
		if (p->close_queued) {
			log_debug(LOG_COMP, "close handshake timed out");
			srv_conn_abort(p);
		} else if (p->room) {
			space_room_join_timeout(s->room, p->room, now_ms());
		}
		break;
	case CONN_SSE:
	case CONN_GONE:
		break;
	}
}

static void on_connection(uv_stream_t *ls, int status)
{
	struct server *s = ls->data;
	if (status < 0) {
		log_warn(LOG_COMP, "accept failed: %s", uv_strerror(status));
		return;
	}
	struct conn *p = xcalloc(1, sizeof *p);
	p->s = s;
	uv_tcp_init(&s->loop, &p->tcp);
	uv_timer_init(&s->loop, &p->timer);
	p->tcp.data = p->timer.data = p;
	p->handles = 2;
	p->state = CONN_HTTP;
	sb_init(&p->head, WS_HEAD_MAX + SPACE_READ_BUF_BYTES);
	p->next = s->conns;
	if (s->conns)
		s->conns->prev = p;
	s->conns = p;
	s->ntcp++;
	if (uv_accept(ls, (uv_stream_t *)&p->tcp) < 0) {
		srv_conn_abort(p);
		return;
	}
	if (s->ntcp > s->max_clients + SPACE_TCP_SLACK || s->phase >= PHASE_CLOSING) {
		srv_conn_abort(p);
		return;
	}
	/* Frames are batched per turn already; Nagle would only add delay. */
	uv_tcp_nodelay(&p->tcp, 1);
	uv_timer_start(&p->timer, on_conn_timer, SPACE_HEAD_TIMEOUT_MS, 0);
	uv_read_start((uv_stream_t *)&p->tcp, on_alloc, on_read);
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

/* Closes everything; the loop then runs dry and space_server_run returns. */
static void finish(struct server *s)
{
	if (s->phase == PHASE_DONE)
		return;
	s->phase = PHASE_DONE;
	log_info(LOG_COMP, "room closed");
	for (struct conn *p = s->conns; p; p = p->next)
		srv_conn_abort(p);
	if (s->listener_open) {
		close_handle((uv_handle_t *)&s->listener);
		s->listener_open = false;
	}
	close_handle((uv_handle_t *)&s->phase_timer);
	close_handle((uv_handle_t *)&s->wake_timer);
	close_handle((uv_handle_t *)&s->heartbeat);
	close_handle((uv_handle_t *)&s->sweep);
	close_handle((uv_handle_t *)&s->sigint);
	close_handle((uv_handle_t *)&s->sigterm);
	close_handle((uv_handle_t *)&s->prepare);
	close_handle((uv_handle_t *)&s->check);
	srv_web_stop(s);
	space_host_stop(s->host);
	s->host = NULL;
	mdns_publish_stop(s->mdns);
	s->mdns = NULL;
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
void srv_begin_shutdown(struct server *s, const char *why)
{
	if (s->phase != PHASE_RUNNING)
		return;
	s->phase = PHASE_DRAINING;
	sdnotify_stopping();
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "shutting down", "why", why, "members",
	       LOG_INT(space_room_member_count(s->room)), "grace_ms",
	       LOG_INT(s->cfg->shutdown_grace_ms));
	space_room_shutdown_notice(s->room, now_ms());
	uv_timer_start(&s->phase_timer, on_grace_over, (uint64_t)s->cfg->shutdown_grace_ms, 0);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct server *s = h->data;
	srv_begin_shutdown(s, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* --- startup ---------------------------------------------------------------------------- */

/* Descriptors beyond the connections: the listener, the log, stdin, the
 * loop's own, avahi's. */
#define SPACE_FD_RESERVE 64

/* Raises the soft open-file limit to hold every connection (the default
 * soft limit, 1,024, would refuse a large room at accept, where a client
 * gets no answer). When the hard limit is lower, the connection bound
 * comes down to what fits, so a refused client still gets the 503. */
static unsigned fit_fd_limit(unsigned max_clients)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return max_clients;
	rlim_t want = (rlim_t)max_clients + SPACE_TCP_SLACK + SPACE_FD_RESERVE;
	if (rl.rlim_cur < want) {
		struct rlimit up = rl;
		up.rlim_cur =
		        rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl = up;
	}
	if (rl.rlim_cur >= want)
		return max_clients;
	rlim_t fit = rl.rlim_cur > SPACE_TCP_SLACK + SPACE_FD_RESERVE + 1
	                     ? rl.rlim_cur - SPACE_TCP_SLACK - SPACE_FD_RESERVE
	                     : 1;
	log_kv(LOG_LEVEL_WARN, LOG_COMP,
	       "the open-file limit cannot hold SPACE_MAX_CLIENTS connections: fewer admitted "
	       "(raise the hard limit, e.g. LimitNOFILE= or ulimit -Hn)",
	       "open_files", LOG_INT(rl.rlim_cur), "wanted", LOG_INT(want), "SPACE_MAX_CLIENTS",
	       LOG_INT(max_clients), "admitted", LOG_INT(fit));
	return (unsigned)fit;
}

static void print_space_url(int port)
{
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs) < 0)
		return;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof ip);
		log_info(LOG_COMP, "SPACE_URL ws://%s:%d", ip, port);
		break;
	}
	freeifaddrs(ifs);
}

/* Binds and listens on addr; 0 or a libuv error. */
static int listen_at(struct server *s, const struct sockaddr *addr)
{
	uv_tcp_init(&s->loop, &s->listener);
	s->listener.data = s;
	s->listener_open = true;
	int rc = uv_tcp_bind(&s->listener, addr, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&s->listener, SPACE_LISTEN_BACKLOG, on_connection);
	if (rc < 0) {
		uv_close((uv_handle_t *)&s->listener, NULL);
		s->listener_open = false;
		uv_run(&s->loop, UV_RUN_NOWAIT); /* let the handle close */
	}
	return rc;
}

/* §1 item 1, §9 item 27: all interfaces means dual-stack when the host has
 * IPv6 ("::" accepts IPv4 too), else IPv4 only. A literal address is used
 * as given. */
static int start_listening(struct server *s, const char **why)
{
	const struct space_server_config *cfg = s->cfg;
	const char *bind = cfg->bind && *cfg->bind ? cfg->bind : SPACE_DEFAULT_BIND;
	struct sockaddr_in a4;
	struct sockaddr_in6 a6;
	int rc;
	*why = NULL;
	if (strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0) {
		uv_ip6_addr("::", cfg->port, &a6);
		rc = listen_at(s, (const struct sockaddr *)&a6);
		if (rc == UV_EAFNOSUPPORT || rc == UV_EADDRNOTAVAIL) {
			uv_ip4_addr("0.0.0.0", cfg->port, &a4);
			rc = listen_at(s, (const struct sockaddr *)&a4);
		}
	} else if (uv_ip4_addr(bind, cfg->port, &a4) == 0) {
		rc = listen_at(s, (const struct sockaddr *)&a4);
	} else if (uv_ip6_addr(bind, cfg->port, &a6) == 0) {
		rc = listen_at(s, (const struct sockaddr *)&a6);
	} else {
		*why = "not an IPv4 or IPv6 address";
		return -1;
	}
	if (rc < 0)
		*why = uv_strerror(rc);
	return rc;
}

static int listen_port(struct server *s)
{
	struct sockaddr_storage ss;
	int len = sizeof ss;
	if (uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
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
	cfg->presence_bytes_per_ms = SPACE_PRESENCE_BYTES_PER_MS_DEFAULT;
	cfg->presence_delay_max_ms = SPACE_PRESENCE_DELAY_MAX_MS_DEFAULT;
	cfg->web = true;
}

enum space_run_result space_server_run(const struct space_server_config *cfg, struct ga_err *err)
{
	struct server *s = xcalloc(1, sizeof *s);
	enum space_run_result rc = SPACE_RUN_CANNOT_LISTEN;
	s->cfg = cfg;
	s->started_ms = now_ms();
	s->started_mono = time_mono_ms();
	s->tty_out = cfg->show_chat == SPACE_SHOW_ON ||
	             (cfg->show_chat == SPACE_SHOW_AUTO &&
	              (isatty(STDOUT_FILENO) || (cfg->host_input && isatty(STDIN_FILENO))));
	signal(SIGPIPE, SIG_IGN);
	s->max_clients = fit_fd_limit(cfg->max_clients);

	struct ga_err serr = {{0}};
	s->store =
	        space_store_open(cfg->data_dir, cfg->log_max_bytes, cfg->history_max_bytes, &serr);
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
	rcfg.presence_bytes_per_ms = cfg->presence_bytes_per_ms;
	rcfg.presence_delay_max_ms = cfg->presence_delay_max_ms;
	s->room = space_room_new(&rcfg, s->store, &room_ops, s, s->started_ms);
	uv_loop_init(&s->loop);

	/* SIGINT/SIGTERM stay pending until their handlers are installed
	 * below: whoever read the port file (or got READY=1) may stop us at
	 * once, and must get the clean shutdown, never the default action. */
	sigset_t stop_sigs, old_mask;
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_sigs, &old_mask);
	const char *why;
	if (start_listening(s, &why) < 0) {
		err_set(err, "cannot listen on %s port %d (SPACE_BIND / SPACE_PORT): %s", cfg->bind,
		        cfg->port, why);
		goto out;
	}
	int port = listen_port(s);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "listening", "name", cfg->name, "bind", cfg->bind, "port",
	       LOG_INT(port), "data", space_store_path(s->store), "max_clients",
	       LOG_INT(s->max_clients));
	print_space_url(port);
	if (cfg->port_file && write_port_file(cfg->port_file, port, err) < 0)
		goto out;
	sdnotify_ready(); /* systemd Type=notify: listening */

	s->rbuf = xmalloc(SPACE_READ_BUF_BYTES);
	uv_prepare_init(&s->loop, &s->prepare);
	uv_check_init(&s->loop, &s->check);
	s->prepare.data = s->check.data = s;
	uv_prepare_start(&s->prepare, on_prepare);
	uv_check_start(&s->check, on_check);
	uv_timer_init(&s->loop, &s->heartbeat);
	uv_timer_init(&s->loop, &s->sweep);
	uv_timer_init(&s->loop, &s->phase_timer);
	uv_timer_init(&s->loop, &s->wake_timer);
	s->heartbeat.data = s->sweep.data = s->phase_timer.data = s->wake_timer.data = s;
	uv_timer_start(&s->heartbeat, on_heartbeat, (uint64_t)cfg->heartbeat_ms,
	               (uint64_t)cfg->heartbeat_ms);
	uv_timer_start(&s->sweep, on_sweep, (uint64_t)cfg->sweep_ms, (uint64_t)cfg->sweep_ms);
	uv_signal_init(&s->loop, &s->sigint);
	uv_signal_init(&s->loop, &s->sigterm);
	s->sigint.data = s->sigterm.data = s;
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL); /* a pending one is handled now */

	if (cfg->web)
		srv_web_start(s);
	if (cfg->host_input)
		s->host = space_host_start(&s->loop, STDIN_FILENO, srv_host_line, s);
	if (cfg->mdns)
		s->mdns = mdns_publish_start(&s->loop, cfg->name, MDNS_SPACE_SERVICE_TYPE, port,
		                             NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	log_debug(LOG_COMP, "event loop finished");
	rc = SPACE_RUN_OK;
out:
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (s->phase != PHASE_DONE && s->listener_open) {
		uv_close((uv_handle_t *)&s->listener, NULL);
		s->listener_open = false;
	}
	s->phase = PHASE_DONE;
	uv_run(&s->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&s->loop) != 0)
		log_warn(LOG_COMP, "event loop closed with handles still open");
	space_room_free(s->room);
	space_web_free(s->web);
	space_web_plans_clear(&s->webplans);
	space_store_free(s->store);
	free(s->rbuf);
	free(s);
	return rc;
}
