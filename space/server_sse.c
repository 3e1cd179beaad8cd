/*
 * space/server_sse — the read-only web page's event streams (Server-Sent
 * Events, GET /api/events; space/web.h says what they carry) and the room
 * observer that feeds them. See server_int.h.
 *
 * A stream is a connection in CONN_SSE that is only written: its queue is
 * the same ring of shared buffers as a member's, flushed with the rest at
 * the end of each loop turn. A browser that stops reading is dropped once
 * SPACE_WEB_SSE_QUEUE_MAX_BYTES wait for it; the room never waits for one.
 */
#include <stdint.h>
#include <string.h>
#include <uv.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "space/proto.h"
#include "space/server_int.h"

void srv_web_stats(const struct server *s, struct space_web_stats *st)
{
	st->clients = s->nsse;
	st->dropped = s->sse_dropped;
}

/* Queues b on a stream. A stream that has not taken what it was sent is
 * dropped: the room never waits for a browser. */
static void sse_send(struct conn *p, struct space_buf *b)
{
	struct server *s = p->s;
	if (p->state != CONN_SSE)
		return;
	if (p->qbytes + p->inflight > SPACE_WEB_SSE_QUEUE_MAX_BYTES) {
		s->sse_dropped++;
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "web page stream over its limit: dropping a browser that stopped reading",
		       "queued", LOG_INT(p->qbytes + p->inflight), "limit",
		       LOG_INT(SPACE_WEB_SSE_QUEUE_MAX_BYTES));
		srv_conn_abort(p);
		return;
	}
	srv_q_push(p, space_buf_ref(b));
	srv_mark_dirty(p);
}

/* Sends ev (the caller keeps its reference) to every stream. */
static void web_fanout(struct server *s, struct space_buf *ev)
{
	for (unsigned i = 0; i < s->nsse; i++)
		sse_send(s->sse[i], ev);
}

static void web_fanout_take(struct server *s, struct space_buf *ev)
{
	if (!ev)
		return;
	web_fanout(s, ev);
	space_buf_unref(ev);
}

static void on_web_members_timer(uv_timer_t *t)
{
	srv_web_flush(t->data);
}

/* The member list after a join, leave or identity: at most one per
 * SPACE_WEB_MEMBERS_MIN_MS, so a join storm in a large room sends the
 * browsers a few lists, not one per turn (each is up to ~250 bytes per
 * member, and a stream holds at most SPACE_WEB_SSE_QUEUE_MAX_BYTES). */
void srv_web_flush(struct server *s)
{
	if (space_web_take_members_dirty(s->web))
		s->web_members_pending = true;
	if (!s->web_members_pending || !s->nsse || s->phase == PHASE_DONE)
		return;
	uint64_t now = time_mono_ms(), next = s->web_members_last + SPACE_WEB_MEMBERS_MIN_MS;
	if (now < next) {
		if (!uv_is_active((uv_handle_t *)&s->web_members_timer))
			uv_timer_start(&s->web_members_timer, on_web_members_timer, next - now, 0);
		return;
	}
	s->web_members_pending = false;
	s->web_members_last = now;
	web_fanout_take(s, space_web_members_event(s->web, s->room, time_now_ms()));
}

static void on_web_keepalive(uv_timer_t *t)
{
	struct server *s = t->data;
	if (s->nsse)
		web_fanout_take(s, space_web_keepalive());
}

static struct space_web_presence *web_presence_of(const struct space_conn *m)
{
	struct conn *p = m->io;
	return p ? &p->webp : NULL;
}

const struct space_web_profile *srv_web_profile_of(const struct space_conn *m)
{
	const struct conn *p = m->io;
	return p ? &p->webprof : NULL;
}

/* The room's observer (room.h): every broadcast once, also those that
 * reach no member (the last leave, the host talking to an empty room), and
 * the silent claim renewals, for the page's mirror (space/web.h) and the
 * members' profiles (space/web_state.h). */
static void on_room_event(void *ud, const struct space_room_event *ev)
{
	struct server *s = ud;
	struct conn *p = ev->who ? ev->who->io : NULL;
	if (ev->kind == SPACE_ROOM_EV_CLAIM_RENEWED) {
		/* space_web_input renews the page's copy from the claim as
		 * the member sent it; the room has just accepted it. */
		struct strbuf sb;
		sb_init(&sb, 0);
		sb_puts(&sb, "{\"type\":\"claim\",\"action\":");
		space_put_str(&sb, ev->action);
		sb_puts(&sb, ",\"target\":");
		space_put_str(&sb, ev->target);
		sb_putc(&sb, '}');
		space_web_input(s->web, ev->who->name, sb.buf, sb.len, ev->now);
		sb_free(&sb);
		return;
	}
	web_fanout_take(s, space_web_tap(s->web, ev->msg, p ? &p->webp : NULL, ev->now));
	if (p && space_web_profile_apply(&p->webprof, space_buf_data(ev->msg), ev->msg->len))
		web_fanout_take(s,
		                space_web_profile_event(&p->webprof, ev->who->name, ev->who->id));
	if (p)
		web_fanout_take(s, space_web_plans_apply(&s->webplans, space_buf_data(ev->msg),
		                                         ev->msg->len, ev->who->name, ev->now));
}

void srv_web_start(struct server *s)
{
	const struct space_server_config *cfg = s->cfg;
	s->web = space_web_new(cfg->web_dir, cfg->name, cfg->claim_ttl_ms, web_presence_of);
	space_web_seed(s->web, s->store);
	space_room_set_observer(s->room, on_room_event, s);
	uv_timer_init(&s->loop, &s->web_keepalive);
	uv_timer_init(&s->loop, &s->web_members_timer);
	s->web_keepalive.data = s->web_members_timer.data = s;
	uv_timer_start(&s->web_keepalive, on_web_keepalive, SPACE_WEB_KEEPALIVE_MS,
	               SPACE_WEB_KEEPALIVE_MS);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "web page (read-only)", "path", "/", "files",
	       space_web_dir(s->web) ? space_web_dir(s->web) : "(not installed)");
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

void srv_web_stop(struct server *s)
{
	if (!s->web)
		return;
	close_handle((uv_handle_t *)&s->web_keepalive);
	close_handle((uv_handle_t *)&s->web_members_timer);
}

void srv_sse_open(struct server *s, struct conn *p)
{
	struct space_web_stats st;
	p->state = CONN_SSE;
	uv_timer_stop(&p->timer);
	sb_free(&p->head);
	s->sse[s->nsse++] = p;
	srv_web_stats(s, &st);
	struct space_buf *b = space_web_stream_add_profiles(
	        space_web_stream_start(s->web, s->room, &st, time_now_ms()), s->room,
	        srv_web_profile_of, &s->webplans);
	srv_q_push(p, b);
	srv_mark_dirty(p);
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "web page stream opened", "streams", LOG_INT(s->nsse));
}

void srv_sse_forget(struct server *s, struct conn *p)
{
	for (unsigned i = 0; i < s->nsse; i++)
		if (s->sse[i] == p) {
			s->sse[i] = s->sse[--s->nsse];
			break;
		}
}
