/*
 * space/server_http — plain HTTP before the upgrade: the request head (at
 * most WS_HEAD_MAX bytes, complete within the head timeout), the checks ws
 * makes before upgrading, the routes that answer without a WebSocket
 * (GET /healthz, the read-only web page: its files, /api/room and
 * /api/events, space/web.h), 426 for anything else (§1 item 3), and the
 * connection limit. See server_int.h.
 *
 * Every plain response closes the connection once it is sent
 * (CONN_REPLY); /api/events turns the connection into an event stream
 * (server_sse.c) and a valid upgrade hands it to the WebSocket side
 * (srv_upgrade).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "space/proto.h"
#include "space/server_int.h"

/* Queues a complete HTTP response and hangs up once it is sent; head_only
 * (HEAD) leaves the body out. */
static void http_reply_ex(struct conn *p, unsigned status, const char *reason, const char *ctype,
                          const char *body, size_t len, const char *extra, const char *extra2,
                          bool head_only)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_printf(&sb,
	          "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s"
	          "Connection: close\r\n\r\n",
	          status, reason, ctype, len, extra ? extra : "", extra2 ? extra2 : "");
	if (!head_only)
		sb_append(&sb, body, len);
	struct space_buf *b = space_buf_from_sb(&sb, SPACE_BUF_RAW);
	sb_free(&sb);
	p->state = CONN_REPLY;
	srv_q_push(p, b);
	srv_mark_dirty(p);
}

static void http_reply(struct conn *p, unsigned status, const char *reason, const char *ctype,
                       const char *body, size_t len, const char *extra)
{
	http_reply_ex(p, status, reason, ctype, body, len, extra, NULL, false);
}

static void http_error(struct conn *p, unsigned status, const char *reason, const char *why)
{
	log_debug(LOG_COMP, "HTTP %u: %s", status, why);
	http_reply(p, status, reason, "text/plain", why, strlen(why), NULL);
}

static void healthz(struct server *s, struct conn *p)
{
	/* An extension: a liveness probe for supervisors. */
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"name\":");
	space_put_str(&sb, s->cfg->name);
	sb_printf(&sb, ",\"agents\":%zu,\"uptime\":%" PRIu64 "}", space_room_member_count(s->room),
	          (time_mono_ms() - s->started_mono) / 1000);
	http_reply(p, 200, "OK", "application/json", sb_cstr(&sb), sb.len, NULL);
	sb_free(&sb);
}

/* The room's read-only web page (space/web.h): its files, the snapshot
 * and the event stream. Nothing here reaches the room. */
static void web_request(struct server *s, struct conn *p, const struct space_web_req *r)
{
	static const char api_headers[] = "Cache-Control: no-store\r\n";
	static const char file_headers[] = "Cache-Control: no-cache\r\n";
	if (r->route == SPACE_WEB_REFUSED) {
		char allow[64] = "";
		if (r->allow)
			snprintf(allow, sizeof allow, "Allow: %s\r\n", r->allow);
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "web request refused", "status",
		       LOG_INT(r->status), "why", r->why);
		http_reply_ex(p, r->status, r->reason, "text/plain; charset=utf-8", r->why,
		              strlen(r->why), SPACE_WEB_SECURITY_HEADERS, allow, false);
		return;
	}
	if (r->route == SPACE_WEB_FILE) {
		http_reply_ex(p, 200, "OK", r->ctype, r->data, r->len, SPACE_WEB_SECURITY_HEADERS,
		              file_headers, r->head_only);
		return;
	}
	struct space_web_stats st;
	srv_web_stats(s, &st);
	if (r->route == SPACE_WEB_ROOM) {
		size_t len = 0;
		char *json = space_web_room_json(s->web, s->room, &st, time_now_ms(), &len);
		json = space_web_snapshot_add_profiles(json, len, s->room, srv_web_profile_of,
		                                       &s->webplans, &len);
		http_reply_ex(p, 200, "OK", "application/json", json, len,
		              SPACE_WEB_SECURITY_HEADERS, api_headers, r->head_only);
		free(json);
		return;
	}
	/* SPACE_WEB_EVENTS */
	if (s->nsse >= SPACE_WEB_MAX_CLIENTS || s->phase >= PHASE_CLOSING) {
		static const char why[] = "too many web page streams: at most 16 browsers watch "
		                          "the room at once (SPACE_WEB_MAX_CLIENTS)\n";
		if (s->phase < PHASE_CLOSING)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "web page stream refused: too many",
			       "limit", LOG_INT(SPACE_WEB_MAX_CLIENTS));
		http_reply_ex(p, 503, "Service Unavailable", "text/plain; charset=utf-8", why,
		              sizeof why - 1, SPACE_WEB_SECURITY_HEADERS, "Retry-After: 5\r\n",
		              false);
		return;
	}
	srv_sse_open(s, p);
}

void srv_http_input(struct server *s, struct conn *p, const char *buf, size_t len)
{
	if (sb_append(&p->head, buf, len) < 0) {
		http_error(p, 431, "Request Header Fields Too Large", "Request head too large");
		return;
	}
	struct ws_request req;
	enum ws_head_result r = ws_parse_request(p->head.buf, p->head.len, &req);
	if (r == WS_HEAD_INCOMPLETE) {
		if (p->head.len > WS_HEAD_MAX)
			http_error(p, 431, "Request Header Fields Too Large",
			           "Request head too large");
		return;
	}
	if (r != WS_HEAD_BAD && req.head_len > WS_HEAD_MAX) {
		/* a complete head that arrived in one read is as refused as one
		 * that did not end in time (Node's 431 too) */
		http_error(p, 431, "Request Header Fields Too Large", "Request head too large");
		return;
	}
	if (r == WS_HEAD_BAD) {
		http_error(p, 400, "Bad Request", "Bad Request");
		return;
	}
	bool get = req.method_len == 3 && memcmp(req.method, "GET", 3) == 0;
	if (!req.upgrade) {
		size_t pl = req.path_len;
		const char *q = memchr(req.path, '?', pl);
		if (q)
			pl = (size_t)(q - req.path);
		if (get && pl == 8 && memcmp(req.path, "/healthz", 8) == 0) {
			healthz(s, p);
			return;
		}
		if (s->web) {
			struct space_web_req wr;
			space_web_classify(s->web, p->head.buf, req.head_len, req.method,
			                   req.method_len, req.path, req.path_len, &wr);
			if (wr.route != SPACE_WEB_NOT_MINE) {
				web_request(s, p, &wr);
				return;
			}
		}
		/* §1 item 3: anything else without an upgrade. */
		http_reply(p, 426, "Upgrade Required", "text/plain", "Upgrade Required", 16, NULL);
		return;
	}
	/* The checks ws makes before upgrading (§1 item 2: any path). */
	if (!get) {
		http_error(p, 405, "Method Not Allowed", "Invalid HTTP method");
		return;
	}
	if (!req.upgrade_websocket) {
		http_error(p, 400, "Bad Request", "Invalid Upgrade header");
		return;
	}
	if (!req.key || !ws_key_valid(req.key, req.key_len)) {
		http_error(p, 400, "Bad Request", "Missing or invalid Sec-WebSocket-Key header");
		return;
	}
	if (req.version != 13 && req.version != 8) {
		http_reply(p, 400, "Bad Request", "text/plain",
		           "Missing or invalid Sec-WebSocket-Version header", 46,
		           "Sec-WebSocket-Version: 13\r\n");
		return;
	}
	/* The connection limit, applied before the upgrade so an
	 * over-capacity client gets no WebSocket at all. */
	if (s->nconns >= s->max_clients || s->phase >= PHASE_CLOSING) {
		if (s->phase < PHASE_CLOSING)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "connection refused: room is full",
			       "limit", LOG_INT(s->max_clients));
		http_error(p, 503, "Service Unavailable",
		           "agent-space is full (SPACE_MAX_CLIENTS)");
		return;
	}
	srv_upgrade(s, p, &req);
}
