/*
 * Fuzz target for the room's web page (space/web.c, space/web_state.c):
 * the request classifier over outside bytes, and the mirror the page
 * reads, fed by a real room (space/room.c) through its observer, as
 * server_sse.c does: every broadcast to space_web_tap and to the sender's
 * profile (space_web_profile_apply), every silent renewal to
 * space_web_input.
 *
 * The whole input is first parsed as an HTTP request head (common/ws.c) and
 * classified; a refusal must carry a 4xx status and a sentence, a file an
 * actual content. Then it is read as a script like tests/fuzz/
 * space_msg_fuzz.c: records separated by 0xFF bytes, the first byte picking
 * one of three connections and an action (a message from it, a host line,
 * a close and reopen, a tick), the rest the payload. Every event the page
 * would be sent must be "event: <name>\ndata: <JSON object>\n\n" blocks,
 * the snapshot must be a JSON object, and every profile must keep the
 * bounds of space/web_state.h.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonnul.h"
#include "common/log.h"
#include "common/ws.h"
#include "space/proto.h"
#include "space/room.h"
#include "space/store.h"
#include "space/web.h"
#include "space/web_state.h"

#define NCONN 3

struct fake_conn {
	struct space_conn *c;
	struct space_web_presence p;
	struct space_web_profile prof;
};

static struct fake_conn conns[NCONN];
static struct space_store *store;
static struct space_web *web;

static void check_events(struct space_buf *b)
{
	if (!b)
		return;
	const char *d = space_buf_data(b), *end = d + b->len;
	while (d < end) {
		if (strncmp(d, "event: ", 7) != 0)
			abort();
		const char *data = strstr(d, "\ndata: ");
		const char *stop = data ? strstr(data, "\n\n") : NULL;
		if (!data || !stop || stop > end)
			abort();
		data += 7;
		cJSON *v = json_parse_js(data, (size_t)(stop - data), NULL);
		if (!cJSON_IsObject(v)) {
			fprintf(stderr, "not a JSON object: %.*s\n", (int)(stop - data), data);
			abort();
		}
		cJSON_Delete(v);
		d = stop + 2;
	}
	space_buf_unref(b);
}

static void op_send(void *ud, struct space_conn *c, struct space_buf *msg)
{
}

/* A profile within its bounds: the event at most SPACE_WEB_PROFILE_MAX_BYTES,
 * its identity's summary at most SPACE_WEB_IDENTITY_MAX_BYTES. */
static void check_profile(const struct space_web_profile *p, const char *name, const char *id)
{
	struct space_buf *ev = space_web_profile_event(p, name, id);
	if (ev->len > SPACE_WEB_PROFILE_MAX_BYTES) {
		fprintf(stderr, "profile event of %zu bytes\n", ev->len);
		abort();
	}
	if (p->identity && strlen(p->identity) > SPACE_WEB_IDENTITY_MAX_BYTES + 64)
		abort();
	check_events(ev);
}

/* Each plan's pull requests (space_web_plans_apply): a "plan" event is
 * one bounded entry, and the list never holds more than its bound. */
static struct space_web_plans plans;

static void check_plan(struct space_buf *ev)
{
	if (!ev)
		return;
	if (ev->len > SPACE_WEB_PULLS_MAX_BYTES + 2048 || plans.n > SPACE_WEB_PLANS_MAX) {
		fprintf(stderr, "plan event of %zu bytes, %zu plans\n", ev->len, plans.n);
		abort();
	}
	check_events(ev);
}

static void on_event(void *ud, const struct space_room_event *ev)
{
	struct fake_conn *f = ev->who ? ev->who->io : NULL;
	if (ev->kind == SPACE_ROOM_EV_CLAIM_RENEWED) {
		if (!f || !ev->action || !ev->target)
			abort();
		return;
	}
	check_events(space_web_tap(web, ev->msg, f ? &f->p : NULL, ev->now));
	if (f && space_web_profile_apply(&f->prof, space_buf_data(ev->msg), ev->msg->len))
		check_profile(&f->prof, ev->who->name, ev->who->id);
	if (f)
		check_plan(space_web_plans_apply(&plans, space_buf_data(ev->msg), ev->msg->len,
		                                 ev->who->name, ev->now));
}

static void op_close(void *ud, struct space_conn *c, int code, const char *reason)
{
}

static void op_drop(void *ud, struct space_conn *c)
{
}

static void op_ping(void *ud, struct space_conn *c)
{
}

static const struct space_room_ops ops = {op_send, op_close, op_drop, op_ping, NULL};

static struct space_web_presence *presence_of(const struct space_conn *m)
{
	struct fake_conn *f = m->io;
	return &f->p;
}

static const struct space_web_profile *profile_of(const struct space_conn *m)
{
	const struct fake_conn *f = m->io;
	return &f->prof;
}

static void setup(void)
{
	if (store)
		return;
	log_init(LOG_LEVEL_OFF, 0, NULL);
	char tmpl[] = "/tmp/space-web-fuzz-XXXXXX";
	char *dir = mkdtemp(tmpl);
	if (!dir)
		abort();
	store = space_store_open(dir, 1 << 20, 1 << 16, NULL);
	if (!store)
		abort();
}

static void classify(const uint8_t *data, size_t size)
{
	struct ws_request req;
	if (ws_parse_request((const char *)data, size, &req) != WS_HEAD_DONE)
		return;
	struct space_web_req r;
	space_web_classify(web, (const char *)data, req.head_len, req.method, req.method_len,
	                   req.path, req.path_len, &r);
	if (r.route == SPACE_WEB_REFUSED && (r.status < 400 || r.status > 499 || !r.why))
		abort();
	if (r.route == SPACE_WEB_FILE && (!r.data || !r.ctype))
		abort();
	size_t vl;
	const char *v = space_web_header((const char *)data, req.head_len, "Accept", &vl);
	if (v && (v < (const char *)data || v + vl > (const char *)data + req.head_len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	web = space_web_new(GA_SOURCE_DIR "/web/space", "fuzz", 60000, presence_of);
	classify(data, size);

	struct space_room *r = space_room_new(NULL, store, &ops, NULL, 1700000000000);
	space_room_set_observer(r, on_event, NULL);
	int64_t now = 1700000000000;
	for (int i = 0; i < NCONN; i++) {
		memset(&conns[i].p, 0, sizeof conns[i].p);
		memset(&conns[i].prof, 0, sizeof conns[i].prof);
		conns[i].c = space_room_conn_new(r, &conns[i]);
	}
	static const char join[] = "{\"type\":\"join\",\"name\":\"Ada\",\"id\":\"a1\","
	                           "\"version\":\"1\",\"capabilities\":[\"x\",1]}";
	space_room_input(r, conns[0].c, join, sizeof join - 1, now);

	size_t i = 0;
	while (i < size) {
		size_t j = i;
		while (j < size && data[j] != 0xFF)
			j++;
		if (j > i) {
			uint8_t op = data[i];
			struct fake_conn *f = &conns[op % NCONN];
			const char *payload = (const char *)data + i + 1;
			size_t plen = j - i - 1;
			now += (op >> 4) * 500;
			size_t fl;
			char *fixed = space_utf8_repair(payload, plen, &fl);
			const char *msg = fixed ? fixed : payload;
			size_t mlen = fixed ? fl : plen;
			switch ((op / NCONN) % 4) {
			case 0:
			case 1:
				space_room_input(r, f->c, msg, mlen, now);
				break;
			case 2:
				space_room_host_chat(r, msg, mlen, now);
				break;
			default:
				if (plen && payload[0] & 1) {
					space_room_heartbeat(r, now);
					space_room_sweep(r, now + 70000);
				} else {
					space_room_conn_closed(r, f->c, now);
					space_web_presence_clear(&f->p);
					space_web_profile_clear(&f->prof);
					f->c = space_room_conn_new(r, f);
				}
			}
			free(fixed);
			space_room_flush(r, now);
			if (space_web_take_members_dirty(web))
				check_events(space_web_members_event(web, r, now));
		}
		i = j + 1;
	}
	size_t len = 0;
	struct space_web_stats st = {0};
	char *snap = space_web_room_json(web, r, &st, now, &len);
	snap = space_web_snapshot_add_profiles(snap, len, r, profile_of, &plans, &len);
	cJSON *v = json_parse_js(snap, len, NULL);
	if (!cJSON_IsObject(v)) {
		fprintf(stderr, "snapshot is not a JSON object: %s\n", snap);
		abort();
	}
	if (!cJSON_IsArray(cJSON_GetObjectItem(v, "profiles")) ||
	    !cJSON_IsArray(cJSON_GetObjectItem(v, "plans")))
		abort();
	cJSON_Delete(v);
	free(snap);
	/* the stream's start: an HTTP head, then events */
	struct space_buf *start = space_web_stream_add_profiles(
	        space_web_stream_start(web, r, &st, now), r, profile_of, &plans);
	const char *ev = strstr(space_buf_data(start), "\r\n\r\nretry: 1000\n\n");
	if (!ev)
		abort();
	ev += 17;
	check_events(space_buf_new(ev, start->len - (size_t)(ev - space_buf_data(start)), 0));
	space_buf_unref(start);
	check_events(space_web_members_event(web, r, now));
	space_room_free(r);
	for (int k = 0; k < NCONN; k++) {
		space_web_presence_clear(&conns[k].p);
		space_web_profile_clear(&conns[k].prof);
	}
	space_web_plans_clear(&plans);
	space_web_free(web);
	return 0;
}
