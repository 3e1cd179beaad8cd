/*
 * space/server_int — what the files of the agent-space process share. One
 * concern per file:
 *   server.c       the WebSocket connections (accept, read, frames, the
 *                  bounded send queues flushed once per loop turn, close
 *                  handshakes), the room's I/O ops, timers, shutdown and
 *                  startup;
 *   server_http.c  plain HTTP before the upgrade: the request head, its
 *                  checks, the routes (/healthz, the web page's files and
 *                  snapshot, 426) and the connection limit;
 *   server_sse.c   the read-only web page's event streams (Server-Sent
 *                  Events) and the room observer that feeds them;
 *   server_host.c  the host's commands and chat on stdin, and what the
 *                  terminal shows.
 * Internal to space/server*.c; nothing else includes it. Shared names carry
 * the srv_ prefix. Everything runs on the one loop thread.
 */
#ifndef GA_SPACE_SERVER_INT_H
#define GA_SPACE_SERVER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/strbuf.h"
#include "common/ws.h"
#include "space/buf.h"
#include "space/room.h"
#include "space/server.h"
#include "space/web.h"
#include "space/web_state.h"

#define LOG_COMP "space"

/* Join and leave storms (server.c: storm()): joins and departures per
 * second from which broadcasts to members are written every
 * SPACE_STORM_FLUSH_MS rather than every loop turn. */
#define SPACE_STORM_CHURN_PER_S 100
#define SPACE_STORM_FLUSH_MS    50

enum phase {
	PHASE_RUNNING,  /* normal service */
	PHASE_DRAINING, /* shutdown sent; still serving for the grace period */
	PHASE_CLOSING,  /* 1001 sent to members; waiting for close handshakes */
	PHASE_DONE,     /* handles being closed */
};

enum conn_state {
	CONN_HTTP,  /* reading the request head */
	CONN_REPLY, /* a plain HTTP response is queued; hang up once it is sent */
	CONN_OPEN,  /* WebSocket */
	CONN_SSE,   /* the web page's event stream (space/web.h): written only */
	CONN_GONE,  /* handles closing; the room is told in the close callback */
};

/* 16 bytes: a member that cannot keep up holds one per message queued for
 * it, so under backlog these slots are much of the server's memory. */
struct qent {
	struct space_buf *b; /* NULL: coalesced away */
	uint32_t turn;       /* flush turn in which it was queued (low 32 bits) */
	uint32_t bytes;      /* counted in qbytes (0 for a placeholder, space/buf.h) */
};

struct conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct server *s;
	struct conn *prev, *next;             /* every connection */
	struct conn *dirty_prev, *dirty_next; /* waiting for the next flush */
	bool dirty;
	bool dirty_urgent; /* in the head part of the dirty list (srv_mark_dirty) */
	bool greeted;      /* a member whose join sequence has been written */
	enum conn_state state;
	int handles; /* open libuv handles; freed at 0 */

	struct strbuf head; /* request head until the upgrade */
	struct ws_parser parser;
	struct space_conn *room;
	bool input_done; /* the peer's close arrived: ignore the rest */

	/* send queue: ring of shared buffers; qcap is 0 or a power of two */
	struct qent *q;
	size_t qhead, qcount, qcap, qbytes;
	size_t inflight; /* bytes held by the uv_write in flight */
	bool writing;    /* a uv_write is in flight: wait for it */

	bool ping_pending;
	bool pong_pending;
	uint8_t pong_len;
	uint8_t pong[WS_CONTROL_MAX];

	uv_shutdown_t shut;
	bool shut_started;
	bool close_queued;   /* send a close frame after the queue */
	bool close_sent;     /* it has left (or sits in the uv_write) */
	bool close_received; /* the peer's close frame arrived */
	bool close_empty;    /* echo of a close without status: no payload */
	uint16_t close_code;
	uint8_t close_reason_len;
	char close_reason[WS_CONTROL_MAX - 2];

	struct space_web_presence webp;   /* a member's state and typing, for the page */
	struct space_web_profile webprof; /* its identity, reflection, workspace */
};

struct server {
	const struct space_server_config *cfg;
	uv_loop_t loop;
	uv_tcp_t listener;
	bool listener_open;
	struct space_store *store;
	struct space_room *room;
	struct space_host *host;
	struct mdns_publisher *mdns;
	uv_timer_t heartbeat, sweep, phase_timer;
	uv_timer_t wake_timer;          /* a paced presence, a held-back storm write */
	uint64_t churn_since;           /* loop ms: joins and departures counted since */
	unsigned churn_now, churn_prev; /* in this second, in the one before */
	uint64_t bulk_next;             /* storm: members' next write, loop ms */
	uv_signal_t sigint, sigterm;
	uv_prepare_t prepare;
	uv_check_t check;
	enum phase phase;
	int64_t started_ms;
	uint64_t started_mono;
	uint64_t close_deadline;
	uint64_t turn;
	unsigned max_clients; /* cfg's, or fewer when the open-file limit is lower */
	unsigned ntcp;        /* TCP connections */
	unsigned nconns;      /* upgraded WebSocket connections */
	unsigned nclosing;    /* of which a close frame was queued */
	struct conn *conns;
	struct conn *dirty_first, *dirty_last;
	struct conn *dirty_urgent_last; /* the urgent part's end (srv_mark_dirty) */
	bool tty_out;                   /* show room events on stdout (show_chat) */
	char *rbuf;

	/* The read-only web page (space/web.h); NULL when cfg->web is off. */
	struct space_web *web;
	struct space_web_plans webplans;         /* each plan's pull requests */
	struct conn *sse[SPACE_WEB_MAX_CLIENTS]; /* its event streams */
	unsigned nsse;
	uint64_t sse_dropped;
	uv_timer_t web_keepalive;
	uv_timer_t web_members_timer; /* the next members event, when throttled */
	bool web_members_pending;
	uint64_t web_members_last; /* monotonic ms of the last members event */
};

/* --- server.c ------------------------------------------------------------- */

/* Puts p on the list written at the end of the loop turn. */
void srv_mark_dirty(struct conn *p);
/* Queues b (the queue takes the caller's reference) without a check. */
void srv_q_push(struct conn *p, struct space_buf *b);
/* A join or a member's departure happened (storm detection). */
void srv_churn(struct server *s);
/* Closes the socket now, without a close frame. */
void srv_conn_abort(struct conn *p);
/* Answers the upgrade (101), hands the connection to the room with its join
 * timer, and feeds it the frames that came with the request head. */
void srv_upgrade(struct server *s, struct conn *p, const struct ws_request *req);
/* §3.17: once; the shutdown message now, 1001 after the grace period. */
void srv_begin_shutdown(struct server *s, const char *why);

/* --- server_http.c -------------------------------------------------------- */

/* Bytes of a connection that has not upgraded: collects the request head
 * and routes it once complete. */
void srv_http_input(struct server *s, struct conn *p, const char *buf, size_t len);

/* --- server_sse.c --------------------------------------------------------- */

/* Creates the page (cfg->web), its timers and the room observer. */
void srv_web_start(struct server *s);
/* Closes its timers (the streams close with every connection). */
void srv_web_stop(struct server *s);
/* End of a loop turn: the member list event, at most one per
 * SPACE_WEB_MEMBERS_MIN_MS. */
void srv_web_flush(struct server *s);
/* Turns p into an event stream (GET /api/events): its first event is the
 * snapshot. The caller checked the stream limit. */
void srv_sse_open(struct server *s, struct conn *p);
/* p is being freed: no more events for it. */
void srv_sse_forget(struct server *s, struct conn *p);
void srv_web_stats(const struct server *s, struct space_web_stats *st);
const struct space_web_profile *srv_web_profile_of(const struct space_conn *m);

/* --- server_host.c -------------------------------------------------------- */

/* One line typed by the host (space/host.h callback; ud is the server). */
void srv_host_line(void *ud, const char *line, size_t len);
/* Writes text received from members to the terminal (stdout). */
void srv_show(const char *text);

#endif
