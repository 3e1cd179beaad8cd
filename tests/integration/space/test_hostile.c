/*
 * Hostile input against agent-space: invalid UTF-8,
 * oversized and malformed frames, binary frames, deeply nested and huge JSON,
 * unknown types, 500 connections that never join, a member that never reads,
 * abrupt disconnects mid-frame, protocol violations.
 *
 * After each hostile case the server must still serve well-behaved members
 * correctly (assert_healthy: two fresh members join, one chats, the other
 * receives it) and, at teardown, exit 0 on SIGTERM (no crash, no sanitizer
 * report).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/integration/space/harness.h"

#define MIB ((size_t)1024 * 1024)

static int health_round;
static int two = 2;

/* Two fresh members join; one chats; both receive it. */
static void assert_healthy(struct space *s)
{
	assert_true(space_alive(s));
	char a[32], b[32], ida[32], idb[32];
	health_round++;
	snprintf(a, sizeof a, "Healthy%dA", health_round);
	snprintf(b, sizeof b, "Healthy%dB", health_round);
	snprintf(ida, sizeof ida, "h%da", health_round);
	snprintf(idb, sizeof idb, "h%db", health_round);
	struct ws_client *ca = h_join(s, a, ida);
	struct ws_client *cb = h_join(s, b, idb);
	h_send(ca, "{\"type\":\"chat\",\"content\":\"still healthy\"}");
	cJSON *m = h_expect_where(s, cb, "chat", h_pred_content, "still healthy");
	assert_string_equal(h_str(m, "name"), a);
	h_expect_where(s, ca, "chat", h_pred_content, "still healthy");
	h_close(s, ca);
	h_close(s, cb);
}

static struct ws_client *join_as(struct space *s, const char *name)
{
	char id[64];
	snprintf(id, sizeof id, "%s-id", name);
	return h_join(s, name, id);
}

/* The observer sees `name` leave. */
static void expect_leave(struct space *s, struct ws_client *observer, const char *name)
{
	h_expect_where(s, observer, "leave", h_pred_name, name);
}

/* ---- UTF-8 ------------------------------------------------------------------- */

/* §1.8: invalid UTF-8 in a text message closes 1007, no JSON error; a member's
 * disconnect runs the leave path. */
static void h01_invalid_utf8_text(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	static const char *bad[] = {
	        "{\"type\":\"chat\",\"content\":\"\xff\xfe\"}",         /* invalid bytes */
	        "{\"type\":\"chat\",\"content\":\"\xc0\xaf\"}",         /* overlong '/' */
	        "{\"type\":\"chat\",\"content\":\"\xed\xa0\x80\"}",     /* UTF-16 surrogate */
	        "{\"type\":\"chat\",\"content\":\"\xf4\x90\x80\x80\"}", /* above U+10FFFF */
	        "{\"type\":\"chat\",\"content\":\"\xe2\x82\"}",         /* truncated sequence */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char name[32];
		snprintf(name, sizeof name, "Bad%zu", i);
		struct ws_client *c = join_as(s, name);
		ws_send_text(c, bad[i]);
		cJSON *m = h_try_expect(s, c, "error", NULL, NULL, H_QUIET_MS);
		assert_null(m);
		assert_int_equal(h_wait_close(c, H_TIMEOUT_MS), 1007);
		expect_leave(s, obs, name);
	}
	assert_healthy(s);
	space_pass(s);
}

/* Invalid UTF-8 split across fragments (each fragment alone is a valid
 * prefix) is still invalid: 1007. A pending connection gets the same. */
static void h02_invalid_utf8_fragmented(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	ws_send_frame(c, 0, WS_OP_TEXT, "{\"type\":\"chat\",\"content\":\"\xe2\x82", 28);
	ws_send_frame(c, 1, WS_OP_CONT, "(\"}", 3);
	assert_int_equal(h_wait_close(c, H_TIMEOUT_MS), 1007);
	/* A valid code point split across fragments is fine. */
	struct ws_client *ok = join_as(s, "Splitter");
	const char *msg = "{\"type\":\"chat\",\"content\":\"\xe2\x82\xac split\"}";
	ws_send_frame(ok, 0, WS_OP_TEXT, msg, 28);
	ws_send_frame(ok, 0, WS_OP_CONT, msg + 28, 1);
	ws_send_frame(ok, 1, WS_OP_CONT, msg + 29, strlen(msg) - 29);
	h_expect_where(s, ok, "chat", h_pred_content, "\xe2\x82\xac split");
	assert_healthy(s);
	space_pass(s);
}

/* §1.7: binary frames are decoded as UTF-8 and processed like text; binary
 * garbage must not hurt the server. */
static void h03_binary_frames(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *c = h_connect(s);
	const char *join =
	        "{\"type\":\"join\",\"name\":\"Binary\",\"id\":\"bin\",\"version\":\"1.0.0\"}";
	ws_send_binary(c, join, strlen(join));
	h_expect(s, c, "history_response");
	const char *chat = "{\"type\":\"chat\",\"content\":\"sent as binary\"}";
	ws_send_binary(c, chat, strlen(chat));
	cJSON *m = h_expect_where(s, obs, "chat", h_pred_content, "sent as binary");
	assert_string_equal(h_str(m, "name"), "Binary");
	/* Random bytes, NULs, and invalid UTF-8 in a binary frame. */
	uint8_t junk[4096];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	ws_send_binary(c, junk, sizeof junk);
	ws_send_binary(c, "\0\0\0", 3);
	assert_healthy(s);
	space_pass(s);
}

/* ---- size limits ---------------------------------------------------------------- */

/* Builds a valid chat message of exactly `total` bytes (padding in an
 * ignored field). Caller frees. */
static char *chat_of_size(size_t total, const char *content)
{
	const char *pre = "{\"type\":\"chat\",\"content\":\"";
	const char *mid = "\",\"pad\":\"";
	const char *post = "\"}";
	size_t fixed = strlen(pre) + strlen(content) + strlen(mid) + strlen(post);
	assert_true(total > fixed);
	char *m = malloc(total + 1);
	assert_non_null(m);
	size_t o = 0;
	memcpy(m + o, pre, strlen(pre));
	o += strlen(pre);
	memcpy(m + o, content, strlen(content));
	o += strlen(content);
	memcpy(m + o, mid, strlen(mid));
	o += strlen(mid);
	memset(m + o, 'p', total - fixed);
	o += total - fixed;
	memcpy(m + o, post, strlen(post));
	o += strlen(post);
	m[o] = '\0';
	assert_int_equal(o, total);
	return m;
}

/* §1.9: exactly 1 MiB is accepted; 1 MiB + 1 closes 1009 (no JSON error
 * first) and the others see the leave. */
static void h04_oversized_message(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *c = join_as(s, "Big");
	char *m = chat_of_size(MIB, "exactly one mebibyte");
	assert_int_equal(ws_send_text(c, m), 0);
	free(m);
	h_expect_where(s, obs, "chat", h_pred_content, "exactly one mebibyte");

	struct ws_client *d = join_as(s, "Bigger");
	m = chat_of_size(MIB + 1, "one byte too many");
	ws_send_text(d, m);
	free(m);
	cJSON *e = h_try_expect(s, d, "error", NULL, NULL, H_QUIET_MS);
	assert_null(e);
	assert_int_equal(h_wait_close(d, H_TIMEOUT_MS), 1009);
	expect_leave(s, obs, "Bigger");
	h_expect_none(s, obs, "chat", H_QUIET_MS);
	assert_healthy(s);
	space_pass(s);
}

/* The limit applies after reassembly: two 600 KB fragments close 1009. */
static void h05_oversized_fragments(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *c = join_as(s, "Fragger");
	char *m = chat_of_size(1200 * 1024, "fragmented");
	ws_send_frame(c, 0, WS_OP_TEXT, m, 600 * 1024);
	ws_send_frame(c, 1, WS_OP_CONT, m + 600 * 1024, 600 * 1024);
	free(m);
	assert_int_equal(h_wait_close(c, H_TIMEOUT_MS), 1009);
	expect_leave(s, obs, "Fragger");
	/* Many tiny fragments of a normal message are reassembled. */
	struct ws_client *t = join_as(s, "Tiny");
	const char *chat = "{\"type\":\"chat\",\"content\":\"in many pieces\"}";
	size_t n = strlen(chat);
	for (size_t i = 0; i < n; i++)
		ws_send_frame(t, i == n - 1, i == 0 ? WS_OP_TEXT : WS_OP_CONT, chat + i, 1);
	h_expect_where(s, obs, "chat", h_pred_content, "in many pieces");
	assert_healthy(s);
	space_pass(s);
}

/* A frame header announcing 2^62 bytes must not make the server allocate or
 * wait forever: it closes (1009, or 1002) and keeps serving. */
static void h06_absurd_length_header(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = join_as(s, "Liar");
	uint8_t hdr[14] = {0x81, 0x80 | 127, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
	ws_send_raw(c, hdr, sizeof hdr);
	ws_send_raw(c, "abcdefgh", 8);
	int code = h_wait_close(c, H_TIMEOUT_MS);
	if (code != 1009 && code != 1002)
		fail_msg("expected close 1009 (or 1002) for a 2^62-byte frame, got %d", code);
	assert_healthy(s);
	space_pass(s);
}

/* ---- JSON shapes ---------------------------------------------------------------------- */

/* Deeply nested JSON must not exhaust the server's stack: it is either
 * rejected as Invalid JSON or ignored, the connection stays usable. */
static void h07_deeply_nested_json(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *c = join_as(s, "Nester");
	size_t depth = 200000;
	char *open = h_repeat("[", depth), *close = h_repeat("]", depth);
	size_t len = 2 * depth;
	char *m = malloc(len + 1);
	memcpy(m, open, depth);
	memcpy(m + depth, close, depth);
	m[len] = '\0';
	ws_send_textn(c, m, len);
	free(m);
	/* Deep nesting inside a chat's threadId. */
	char *o2 = h_repeat("{\"a\":", 100000), *c2 = h_repeat("}", 100000);
	char *m2 = NULL;
	assert_true(asprintf(&m2, "{\"type\":\"chat\",\"content\":\"deep\",\"threadId\":%s1%s}", o2,
	                     c2) > 0);
	ws_send_text(c, m2);
	free(m2);
	free(o2);
	free(c2);
	free(open);
	free(close);
	/* Whatever was answered, only Invalid JSON errors (or a relayed chat)
	 * may come back, and the connection is still open. */
	for (;;) {
		cJSON *r = h_next(s, c, H_QUIET_MS * 2);
		if (!r)
			break;
		const char *t = h_str(r, "type");
		if (strcmp(t, "error") == 0)
			assert_string_equal(h_str(r, "message"), "Invalid JSON");
		else
			assert_string_equal(t, "chat");
	}
	assert_false(c->got_close || c->eof);
	/* Reading resumes normally on this connection (a chat after a possibly
	 * relayed one would hit the rate limit, so use a claim). */
	h_send(c, "{\"type\":\"claim\",\"action\":\"a\",\"target\":\"after nesting\"}");
	h_expect(s, obs, "claim");
	assert_healthy(s);
	space_pass(s);
}

/* Huge but valid JSON near the 1 MiB limit: a 1 MiB array, an object with
 * 60,000 keys, a string of 500,000 escapes. */
static void h08_huge_json(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *c = join_as(s, "Huge");
	/* [0,0,0,...] */
	size_t n = 500000;
	char *arr = malloc(2 * n + 2);
	arr[0] = '[';
	for (size_t i = 0; i < n; i++) {
		arr[1 + 2 * i] = '0';
		arr[2 + 2 * i] = ',';
	}
	arr[2 * n] = ']';
	arr[2 * n + 1] = '\0';
	ws_send_text(c, arr);
	free(arr);
	/* {"type":"typing","k0":0,...} — typing is relayed without its extras. */
	size_t cap = 2 * MIB, o = 0;
	char *obj = malloc(cap);
	o += (size_t)sprintf(obj, "{\"type\":\"typing\"");
	for (int i = 0; i < 60000; i++)
		o += (size_t)snprintf(obj + o, cap - o, ",\"k%d\":%d", i, i);
	o += (size_t)snprintf(obj + o, cap - o, "}");
	assert_true(o < MIB);
	ws_send_text(c, obj);
	free(obj);
	cJSON *t = h_expect(s, obs, "typing");
	h_assert_keys(t, "type,name,id,timestamp");
	/* A chat whose content is 50,000 escaped newlines (100,000 bytes). */
	char *esc = h_repeat("\\n", 50000);
	h_send(c, "{\"type\":\"chat\",\"content\":\"x%s\"}", esc);
	free(esc);
	cJSON *m = h_expect(s, obs, "chat");
	assert_int_equal(strlen(h_str(m, "content")), 50001);
	h_expect_none(s, c, "error", H_QUIET_MS);
	assert_healthy(s);
	space_pass(s);
}

/* §3.1 step 4: unknown, missing or server-only types and non-object values are
 * silently ignored, never relayed (a fake shutdown or presence must not
 * reach anyone). */
static void h09_unknown_types(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *c = join_as(s, "Prankster");
	h_expect_where(s, obs, "presence", h_pred_nagents, &two);
	static const char *msgs[] = {
	        "{\"type\":\"unknown_type\",\"data\":\"test\"}",
	        "{\"type\":5}",
	        "{\"type\":null}",
	        "{\"type\":[\"chat\"]}",
	        "{\"type\":\"CHAT\",\"content\":\"case\"}",
	        "{\"type\":\"chat \",\"content\":\"space\"}",
	        "{\"type\":\"leave\",\"name\":\"Observer\"}",
	        "{\"type\":\"presence\",\"agents\":[]}",
	        "{\"type\":\"history_response\",\"entries\":[]}",
	        "{\"type\":\"error\",\"message\":\"fake\"}",
	        "{\"type\":\"shutdown\",\"reason\":\"fake\"}",
	        "{\"content\":\"no type\"}",
	        "{}",
	        "[]",
	        "5",
	        "\"x\"",
	        "true",
	        "  {\"type\":\"nope\"}  ",
	};
	for (size_t i = 0; i < sizeof msgs / sizeof *msgs; i++)
		ws_send_text(c, msgs[i]);
	h_expect_none(s, c, NULL, H_QUIET_MS);
	h_expect_none(s, obs, NULL, 50);
	assert_healthy(s);
	space_pass(s);
}

/* ---- connection abuse --------------------------------------------------------------- */

/* 500 connections that never join: a well-behaved member still joins and
 * chats meanwhile; then every one of them gets the timeout error and close
 * 4001 after the (shortened) join timeout. */
static void h10_500_never_join(void **state)
{
	const char *env[] = {"SPACE_JOIN_TIMEOUT_MS=4000", "SPACE_MAX_CLIENTS=1000", NULL};
	struct space *s = space_start(env);
	enum { N = 500 };
	struct ws_client *idle[N];
	int64_t t0 = ws_now_ms();
	for (int i = 0; i < N; i++) {
		int status = 0;
		idle[i] = h_connect_ex(s, "/", NULL, 0, &status);
		if (!idle[i])
			fail_msg("idle connection %d failed (HTTP status %d)", i, status);
		snprintf(idle[i]->label, sizeof idle[i]->label, "idle#%d", i);
	}
	int64_t opened = ws_now_ms() - t0;
	struct ws_client *a = join_as(s, "Alice");
	struct ws_client *b = join_as(s, "Bob");
	h_send(a, "{\"type\":\"chat\",\"content\":\"among the idle\"}");
	h_expect_where(s, b, "chat", h_pred_content, "among the idle");
	if (ws_now_ms() - t0 > 4000)
		fprintf(stderr,
		        "note: opening %d connections took %lld ms; the member joined after "
		        "the join timeout\n",
		        N, (long long)opened);
	for (int i = 0; i < N; i++) {
		cJSON *e = h_try_expect(s, idle[i], "error", NULL, NULL, H_TIMEOUT_MS);
		if (!e)
			fail_msg("%s: no join-timeout error", idle[i]->label);
		assert_non_null(strstr(h_str(e, "message"), "Join timeout"));
		int code = h_wait_close(idle[i], H_TIMEOUT_MS);
		if (code != 4001)
			fail_msg("%s: expected close 4001, got %d", idle[i]->label, code);
		assert_string_equal(idle[i]->close_reason, "Join timeout");
		h_drop(s, idle[i]);
	}
	/* The members were never disturbed. */
	h_expect_none(s, a, "leave", 50);
	assert_healthy(s);
	space_pass(s);
}

/* A member that never reads is disconnected once its send queue passes
 * 8 MiB, and nobody else loses a message. 200 host messages of 100,000 bytes
 * (20 MB) go out while "Sink" reads nothing (small SO_RCVBUF, so the kernel
 * buffers only a few MB); the observer must receive every one in order. */
static void h11_member_never_reads(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	int status = 0;
	struct ws_client *sink = h_connect_ex(s, "/", NULL, 4096, &status);
	assert_non_null(sink);
	snprintf(sink->label, sizeof sink->label, "Sink");
	h_send(sink, "{\"type\":\"join\",\"name\":\"Sink\",\"id\":\"sink\",\"version\":\"1.0.0\"}");
	h_expect_where(s, obs, "join", h_pred_name, "Sink");
	char *body = h_repeat("z", 99990);
	bool sink_gone = false;
	for (int i = 0; i < 200; i++) {
		char *line = NULL;
		assert_true(asprintf(&line, "%03d %s", i, body) > 0);
		space_host(s, line);
		for (;;) {
			cJSON *m = h_next(s, obs, H_TIMEOUT_MS);
			if (!m)
				fail_msg("observer: host message %d not delivered (sink gone: %d)",
				         i, sink_gone);
			const char *t = h_str(m, "type");
			if (strcmp(t, "leave") == 0 && strcmp(h_str(m, "name"), "Sink") == 0)
				sink_gone = true;
			if (strcmp(t, "chat") == 0) {
				assert_int_equal(strncmp(h_str(m, "content"), line, 4), 0);
				break;
			}
		}
		free(line);
	}
	free(body);
	if (!sink_gone)
		h_expect_where(s, obs, "leave", h_pred_name, "Sink");
	/* The sink's socket is closed by the server (it may have read a part). */
	int code = h_wait_close(sink, 30000);
	assert_int_not_equal(code, -1);
	assert_healthy(s);
	space_pass(s);
}

/* Abrupt disconnects mid-frame (FIN and RST, member and pending, and half an
 * HTTP handshake): the member's leave is broadcast, nothing hangs. */
static void h12_abrupt_disconnects(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");

	/* Member: header announcing 1000 bytes, 10 sent, then FIN. */
	struct ws_client *c = join_as(s, "HalfFrame");
	uint8_t hdr[8] = {0x81, 0x80 | 126, 0x03, 0xe8, 1, 2, 3, 4};
	ws_send_raw(c, hdr, sizeof hdr);
	ws_send_raw(c, "0123456789", 10);
	h_drop(s, c);
	expect_leave(s, obs, "HalfFrame");

	/* Member: half a header, then RST. */
	c = join_as(s, "HalfHeader");
	ws_send_raw(c, "\x81", 1);
	h_drop_reset(s, c);
	expect_leave(s, obs, "HalfHeader");

	/* Member: mid-way through a fragmented message, then RST. */
	c = join_as(s, "MidFragment");
	ws_send_frame(c, 0, WS_OP_TEXT, "{\"type\":\"chat\",", 15);
	h_drop_reset(s, c);
	expect_leave(s, obs, "MidFragment");

	/* Pending connection mid-frame. */
	c = h_connect(s);
	ws_send_raw(c, hdr, 4);
	h_drop(s, c);

	/* Half an HTTP upgrade request, then close; and one that stalls. */
	int fd = ws_tcp_connect("127.0.0.1", s->port, 0, H_TIMEOUT_MS);
	assert_true(fd >= 0);
	const char *half = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websoc";
	assert_true(write(fd, half, strlen(half)) > 0);
	close(fd);
	int stall = ws_tcp_connect("127.0.0.1", s->port, 0, H_TIMEOUT_MS);
	assert_true(stall >= 0);
	assert_true(write(stall, half, strlen(half)) > 0);

	h_expect_none(s, obs, "chat", 50);
	assert_healthy(s);
	close(stall);
	space_pass(s);
}

/* §1.11: protocol violations close with 1002 (unmasked frame, RSV bits,
 * reserved opcodes, oversized or fragmented control frames, a continuation
 * without a start, a new message inside a fragmented one). */
static void h13_protocol_violations(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	const char *chat = "{\"type\":\"chat\",\"content\":\"x\"}";
	uint8_t big_ping[126];
	memset(big_ping, 'p', sizeof big_ping);
	static const char *what[] = {
	        "unmasked frame",
	        "RSV bits set",
	        "reserved data opcode 0x3",
	        "reserved control opcode 0xB",
	        "126-byte ping",
	        "fragmented ping",
	        "continuation without a start",
	};
	char failures[1024] = "";
	for (int k = 0; k < 7; k++) {
		char name[32];
		snprintf(name, sizeof name, "Violator%d", k);
		struct ws_client *c = join_as(s, name);
		switch (k) {
		case 0:
			ws_send_frame_ex(c, 1, 0, WS_OP_TEXT, 0, chat, strlen(chat));
			break;
		case 1:
			ws_send_frame_ex(c, 1, 4, WS_OP_TEXT, 1, chat, strlen(chat));
			break;
		case 2:
			ws_send_frame_ex(c, 1, 0, 0x3, 1, chat, strlen(chat));
			break;
		case 3:
			ws_send_frame_ex(c, 1, 0, 0xB, 1, "", 0);
			break;
		case 4:
			ws_send_frame(c, 1, WS_OP_PING, big_ping, sizeof big_ping);
			break;
		case 5:
			ws_send_frame(c, 0, WS_OP_PING, "x", 1);
			break;
		case 6:
			ws_send_frame(c, 1, WS_OP_CONT, chat, strlen(chat));
			break;
		}
		/* Every violation is tried; the failures are reported together. */
		int code = h_wait_close(c, 3000);
		if (code != 1002) {
			size_t l = strlen(failures);
			snprintf(failures + l, sizeof failures - l, "%s%s: got %d", l ? "; " : "",
			         what[k], code);
			h_drop(s, c);
		}
		expect_leave(s, obs, name);
	}
	/* A text frame inside an unfinished fragmented message. */
	struct ws_client *c = join_as(s, "Interleaver");
	ws_send_frame(c, 0, WS_OP_TEXT, "{\"type\":", 8);
	ws_send_frame(c, 1, WS_OP_TEXT, chat, strlen(chat));
	int code = h_wait_close(c, 3000);
	if (code != 1002) {
		size_t l = strlen(failures);
		snprintf(failures + l, sizeof failures - l,
		         "%snew message inside a fragmented one: got %d", l ? "; " : "", code);
		h_drop(s, c);
	}
	expect_leave(s, obs, "Interleaver");
	assert_healthy(s);
	if (failures[0])
		fail_msg("expected close 1002 for: %s (-1 = not closed within 3 s)", failures);
	space_pass(s);
}

/* §1.10: client pings are answered with a pong echoing the payload, also
 * between the fragments of a message and before joining. */
static void h14_ping_pong(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	ws_send_frame(c, 1, WS_OP_PING, "hello-ping", 10);
	int64_t deadline = ws_now_ms() + H_TIMEOUT_MS;
	struct ws_msg m;
	while (c->pongs_received == 0 && ws_now_ms() < deadline) {
		if (ws_recv(c, &m, 100) == WS_RECV_MSG)
			free(m.data);
	}
	assert_int_equal(c->pongs_received, 1);
	assert_int_equal(c->last_pong_len, 10);
	assert_memory_equal(c->last_pong, "hello-ping", 10);
	const char *join =
	        "{\"type\":\"join\",\"name\":\"Pinger\",\"id\":\"p\",\"version\":\"1.0.0\"}";
	ws_send_frame(c, 0, WS_OP_TEXT, join, 10);
	ws_send_frame(c, 1, WS_OP_PING, "mid", 3);
	ws_send_frame(c, 1, WS_OP_CONT, join + 10, strlen(join) - 10);
	h_expect(s, c, "history_response");
	assert_int_equal(c->pongs_received, 2);
	assert_memory_equal(c->last_pong, "mid", 3);
	assert_healthy(s);
	space_pass(s);
}

/* A member flooding typing, claims and identities (no rate limit in the
 * reference) does not take the server down; others keep being served. */
static void h15_flood(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *c = join_as(s, "Flooder");
	for (int i = 0; i < 3000; i++) {
		char m[160];
		switch (i % 3) {
		case 0:
			snprintf(m, sizeof m, "{\"type\":\"typing\"}");
			break;
		case 1:
			snprintf(m, sizeof m,
			         "{\"type\":\"claim\",\"action\":\"a\",\"target\":\"t%d\"}", i);
			break;
		default:
			snprintf(m, sizeof m, "{\"type\":\"identity\",\"summary\":{\"n\":%d}}", i);
			break;
		}
		if (ws_send_text(c, m) < 0)
			break; /* a server may cut a flooder off: fine */
		/* Keep the flooder's own inbound queue drained. */
		struct ws_msg msg;
		while (ws_recv(c, &msg, 0) == WS_RECV_MSG)
			free(msg.data);
		while (ws_recv(obs, &msg, 0) == WS_RECV_MSG)
			free(msg.data);
	}
	h_drop(s, c);
	h_expect_where(s, obs, "leave", h_pred_name, "Flooder");
	assert_healthy(s);
	space_pass(s);
}

#define T(f) cmocka_unit_test_teardown(f, space_teardown)

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        T(h01_invalid_utf8_text),
	        T(h02_invalid_utf8_fragmented),
	        T(h03_binary_frames),
	        T(h04_oversized_message),
	        T(h05_oversized_fragments),
	        T(h06_absurd_length_header),
	        T(h07_deeply_nested_json),
	        T(h08_huge_json),
	        T(h09_unknown_types),
	        T(h10_500_never_join),
	        T(h11_member_never_reads),
	        T(h12_abrupt_disconnects),
	        T(h13_protocol_violations),
	        T(h14_ping_pong),
	        T(h15_flood),
	};
	return cmocka_run_group_tests_name("space conformance: hostile input", tests, NULL, NULL);
}
