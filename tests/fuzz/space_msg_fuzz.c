/*
 * Fuzz target for the agent-space message parser, normaliser and room
 * rules (space/proto.c, space/room.c).
 *
 * The input is a script of records separated by 0xFF bytes. The first byte
 * of a record picks one of three connections and an action (deliver the
 * rest as a message, host line, heartbeat/sweep tick, or close and reopen
 * the connection); the rest is the payload. Connection 0 is joined before
 * the script so member-only paths are reached at once. The fake ops check
 * what the room emits: every queued message must be a JSON object that
 * re-serialises to the same bytes (compact, JS key order and escapes), and
 * no message is sent on a connection after its close was requested. A
 * record that lets time pass ends an I/O turn (space_room_flush).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/jsonnul.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "space/proto.h"
#include "space/room.h"
#include "space/store.h"

#define NCONN 3

struct fake_conn {
	struct space_conn *c;
	bool closed_req;
};

static struct fake_conn conns[NCONN];

static void check_message(const struct space_buf *b)
{
	const char *data = (const char *)b->mem + SPACE_BUF_PRE;
	/* "\u0000" is relayed (space/proto.h): parse as the room does */
	cJSON *v = json_parse_js(data, b->len, NULL);
	if (!cJSON_IsObject(v)) {
		fprintf(stderr, "room emitted a non-object: %.*s\n", (int)b->len, data);
		abort();
	}
	struct strbuf sb;
	sb_init(&sb, 0);
	space_js_stringify(&sb, v);
	if (sb.len != b->len || memcmp(sb.buf, data, b->len) != 0) {
		fprintf(stderr, "not in JSON.stringify form:\n%.*s\n%s\n", (int)b->len, data,
		        sb_cstr(&sb));
		abort();
	}
	sb_free(&sb);
	cJSON_Delete(v);
}

/* The newcomers' snapshot of a turn (space/buf.h, a placeholder) gets its
 * bytes at the end of the turn: checked then. */
#define MAX_PENDING 256
static struct space_buf *pending[MAX_PENDING];
static size_t npending;

static void check_pending(void)
{
	for (size_t i = 0; i < npending; i++) {
		if (!space_buf_ready(pending[i])) {
			fprintf(stderr, "a placeholder left unresolved after the turn\n");
			abort();
		}
		check_message(pending[i]->target);
		space_buf_unref(pending[i]);
	}
	npending = 0;
}

static void op_send(void *ud, struct space_conn *c, struct space_buf *msg)
{
	struct fake_conn *f = c->io;
	if (f->closed_req) {
		fprintf(stderr, "send after close\n");
		abort();
	}
	if (space_buf_ready(msg))
		check_message(msg);
	else if (npending < MAX_PENDING)
		pending[npending++] = space_buf_ref(msg);
}

static void op_close(void *ud, struct space_conn *c, int code, const char *reason)
{
	struct fake_conn *f = c->io;
	f->closed_req = true;
}

static void op_drop(void *ud, struct space_conn *c)
{
	struct fake_conn *f = c->io;
	f->closed_req = true;
}

static void op_ping(void *ud, struct space_conn *c)
{
}

static const struct space_room_ops ops = {op_send, op_close, op_drop, op_ping, NULL};

static struct space_store *store;

static void setup(void)
{
	if (store)
		return;
	log_init(LOG_LEVEL_OFF, 0, NULL);
	char tmpl[] = "/tmp/space-fuzz-XXXXXX";
	char *dir = mkdtemp(tmpl);
	if (!dir)
		abort();
	/* Small rotation threshold and history budget: bounded disk use. */
	store = space_store_open(dir, 1 << 20, 1 << 16, NULL);
	if (!store)
		abort();
}

static void helpers(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t fixed_len;
	char *fixed = space_utf8_repair(s, size, &fixed_len);
	const char *t = fixed ? fixed : s;
	size_t n = fixed ? fixed_len : size;
	size_t units = space_js_units(t, n);
	size_t cut = space_js_cut(t, n, units / 2);
	if (cut > n || space_js_units(t, cut) > units / 2)
		abort();
	size_t off, len;
	space_js_trim(t, n, &off, &len);
	if (off + len > n || (len == 0) != space_js_blank(t, n))
		abort();
	free(fixed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	helpers(data, size);

	struct space_room *r = space_room_new(NULL, store, &ops, NULL, 1700000000000);
	int64_t now = 1700000000000;
	for (int i = 0; i < NCONN; i++) {
		conns[i].closed_req = false;
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
			if (op >> 4) {
				/* time passes: a new I/O turn */
				space_room_flush(r, now);
				check_pending();
			}
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
					f->closed_req = false;
					f->c = space_room_conn_new(r, f);
				}
			}
			free(fixed);
		}
		i = j + 1;
	}
	if (size && data[0] == 's') {
		space_room_shutdown_notice(r, now);
		space_room_shutdown_close(r);
	} else {
		space_room_flush(r, now);
	}
	check_pending();
	space_room_free(r);
	return 0;
}
