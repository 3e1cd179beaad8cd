/*
 * Fuzz target for the room's web page (space/web.c): the request
 * classifier over outside bytes, and the mirror the page reads, fed by a
 * real room (space/room.c) whose every queued message goes through
 * space_web_tap, as server.c does.
 *
 * The whole input is first parsed as an HTTP request head (common/ws.c) and
 * classified; a refusal must carry a 4xx status and a sentence, a file an
 * actual content. Then it is read as a script like tests/fuzz/
 * space_msg_fuzz.c: records separated by 0xFF bytes, the first byte picking
 * one of three connections and an action (a message from it, a host line,
 * a close and reopen, a tick), the rest the payload. Every event the page
 * would be sent must be "event: <name>\ndata: <JSON object>\n\n" blocks,
 * and the snapshot must be a JSON object.
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

#define NCONN 3

struct fake_conn {
	struct space_conn *c;
	struct space_web_presence p;
};

static struct fake_conn conns[NCONN];
static struct space_store *store;
static struct space_web *web;
static struct fake_conn *sender;

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
		cJSON *v = json_parse_nul(data, (size_t)(stop - data), NULL);
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
	check_events(space_web_tap(web, msg, sender ? &sender->p : NULL, 1700000000000));
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
	int64_t now = 1700000000000;
	for (int i = 0; i < NCONN; i++) {
		memset(&conns[i].p, 0, sizeof conns[i].p);
		conns[i].c = space_room_conn_new(r, &conns[i]);
	}
	static const char join[] = "{\"type\":\"join\",\"name\":\"Ada\",\"id\":\"a1\","
	                           "\"version\":\"1\",\"capabilities\":[\"x\",1]}";
	sender = &conns[0];
	space_room_input(r, conns[0].c, join, sizeof join - 1, now);
	sender = NULL;

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
				if (f->c->member)
					space_web_input(web, f->c->name, msg, mlen, now);
				sender = f;
				space_room_input(r, f->c, msg, mlen, now);
				sender = NULL;
				break;
			case 2: {
				bool empty = space_room_member_count(r) == 0;
				space_room_host_chat(r, msg, mlen, now);
				if (empty)
					check_events(space_web_host_chat(web, store));
				break;
			}
			default:
				if (plen && payload[0] & 1) {
					space_room_heartbeat(r, now);
					space_room_sweep(r, now + 70000);
				} else {
					char *name = f->c->member ? strdup(f->c->name) : NULL;
					char *id = f->c->member ? strdup(f->c->id) : NULL;
					space_room_conn_closed(r, f->c, now);
					if (name && space_room_member_count(r) == 0)
						check_events(space_web_left(web, name, id, now));
					free(name);
					free(id);
					space_web_presence_clear(&f->p);
					f->c = space_room_conn_new(r, f);
				}
			}
			free(fixed);
			space_room_flush(r);
			if (space_web_take_members_dirty(web))
				check_events(space_web_members_event(web, r, now));
		}
		i = j + 1;
	}
	size_t len = 0;
	struct space_web_stats st = {0};
	char *snap = space_web_room_json(web, r, &st, now, &len);
	cJSON *v = json_parse_nul(snap, len, NULL);
	if (!cJSON_IsObject(v)) {
		fprintf(stderr, "snapshot is not a JSON object: %s\n", snap);
		abort();
	}
	cJSON_Delete(v);
	free(snap);
	/* the stream's start: an HTTP head, then events */
	struct space_buf *start = space_web_stream_start(web, r, &st, now);
	const char *ev = strstr(space_buf_data(start), "\r\n\r\nretry: 1000\n\n");
	if (!ev)
		abort();
	ev += 17;
	check_events(space_buf_new(ev, start->len - (size_t)(ev - space_buf_data(start)), 0));
	space_buf_unref(start);
	check_events(space_web_members_event(web, r, now));
	space_room_free(r);
	for (int k = 0; k < NCONN; k++)
		space_web_presence_clear(&conns[k].p);
	space_web_free(web);
	return 0;
}
