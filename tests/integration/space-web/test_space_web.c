/*
 * The room's read-only web page (space/web.h) over real sockets against the
 * built agent-space: the page and its files, /api/room, the event stream
 * (live chat, joins, presence, claims; the stream is never a member), the
 * bounds (16 streams, a browser that stops reading is dropped while the
 * room goes on), hostile requests (path traversal, bad methods, bodies,
 * huge heads → clear 4xx), and after all of it the room unharmed: the
 * WebSocket side still works and nothing from the web reached the log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/space/harness.h"

/* The acceptance bound of issue 14: the page shows a chat within a second. */
#define LIVE_WITHIN_MS 1000

/* --- a tiny Server-Sent Events reader ------------------------------------------ */

struct sse {
	int fd;
	char *buf;
	size_t len, cap, seen; /* seen: bytes already matched */
	int status;
};

static void sse_fill(struct sse *e, int timeout_ms)
{
	struct pollfd p = {.fd = e->fd, .events = POLLIN};
	if (poll(&p, 1, timeout_ms) <= 0)
		return;
	if (e->cap - e->len < 65536) {
		e->cap = e->cap ? e->cap * 2 : 262144;
		e->buf = realloc(e->buf, e->cap);
		assert_non_null(e->buf);
	}
	ssize_t r = read(e->fd, e->buf + e->len, e->cap - e->len - 1);
	if (r > 0)
		e->len += (size_t)r;
	e->buf[e->len] = '\0';
}

/* Opens GET /api/events; rcvbuf > 0 shrinks the socket's receive buffer. */
static struct sse *sse_open(struct space *s, int rcvbuf)
{
	struct sse *e = calloc(1, sizeof *e);
	e->fd = ws_tcp_connect("127.0.0.1", s->port, rcvbuf, H_TIMEOUT_MS);
	assert_true(e->fd >= 0);
	const char req[] = "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	                   "Accept: text/event-stream\r\n\r\n";
	assert_int_equal(write(e->fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
	return e;
}

/* Reads the response head; returns the status. */
static int sse_head(struct sse *e)
{
	int64_t end = ws_now_ms() + H_TIMEOUT_MS;
	while (!(e->buf && strstr(e->buf, "\r\n\r\n")) && ws_now_ms() < end)
		sse_fill(e, 100);
	assert_non_null(e->buf);
	sscanf(e->buf, "HTTP/1.1 %d", &e->status);
	return e->status;
}

/* Waits for an event block "event: <type>\ndata: ...<needle>..." after
 * what was matched before; returns its data line (into e->buf) or NULL. */
static const char *sse_wait(struct sse *e, const char *type, const char *needle, int timeout_ms)
{
	char head[64];
	snprintf(head, sizeof head, "event: %s\ndata: ", type);
	int64_t end = ws_now_ms() + timeout_ms;
	for (;;) {
		if (e->buf) {
			char *p = e->buf + e->seen;
			while ((p = strstr(p, head))) {
				char *data = p + strlen(head);
				char *eol = strstr(data, "\n\n");
				if (!eol)
					break;
				*eol = '\0';
				bool hit = !needle || strstr(data, needle);
				*eol = '\n';
				if (hit) {
					e->seen = (size_t)(eol + 2 - e->buf);
					return data;
				}
				p = eol;
			}
		}
		if (ws_now_ms() >= end)
			return NULL;
		sse_fill(e, 50);
	}
}

static void sse_close(struct sse *e)
{
	if (!e)
		return;
	close(e->fd);
	free(e->buf);
	free(e);
}

static char *get(struct space *s, const char *path, const char *extra, int *status)
{
	char req[4096];
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", path,
	         extra ? extra : "");
	char *resp = NULL;
	*status = h_http(s, req, &resp);
	return resp;
}

static const char *body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");
	assert_non_null(b);
	return b + 4;
}

static cJSON *api_room(struct space *s)
{
	int st = 0;
	char *r = get(s, "/api/room", NULL, &st);
	assert_int_equal(st, 200);
	assert_non_null(strcasestr(r, "content-type: application/json"));
	cJSON *j = h_parse(s, body_of(r));
	free(r);
	return j;
}

static const cJSON *member_named(const cJSON *room, const char *name)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(room, "members")) if (h_str(m, "name") &&
	                                                                strcmp(h_str(m, "name"),
	                                                                       name) == 0) return m;
	return NULL;
}

static const cJSON *event_with(const cJSON *room, const char *type, const char *content)
{
	const cJSON *e;
	cJSON_ArrayForEach(
	        e, cJSON_GetObjectItem(room, "events")) if (strcmp(h_str(e, "type"), type) == 0 &&
	                                                    (!content ||
	                                                     (h_str(e, "content") &&
	                                                      strcmp(h_str(e, "content"),
	                                                             content) == 0))) return e;
	return NULL;
}

static const char *const fast_env[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};

/* --- the page -------------------------------------------------------------------- */

/* A browser gets the page at /, everything else that asks for / keeps the
 * reference's 426; the page's files; HEAD; the upgrade on / still works. */
static void w01_page(void **state)
{
	struct space *s = space_start(NULL);
	int st = 0;
	char *r = get(s, "/", NULL, &st);
	assert_int_equal(st, 426);
	assert_non_null(strstr(r, "\r\n\r\nUpgrade Required"));
	free(r);
	r = get(s, "/", "Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\n", &st);
	assert_int_equal(st, 200);
	assert_non_null(strcasestr(r, "content-type: text/html"));
	assert_non_null(strcasestr(r, "content-security-policy: default-src 'self'"));
	assert_non_null(strcasestr(r, "x-content-type-options: nosniff"));
	assert_non_null(strstr(r, "<ol id=\"chat\""));
	assert_non_null(strstr(r, "app.js"));
	free(r);
	r = get(s, "/app.js", NULL, &st);
	assert_int_equal(st, 200);
	assert_non_null(strcasestr(r, "content-type: text/javascript"));
	assert_non_null(strstr(r, "EventSource('api/events')"));
	free(r);
	r = get(s, "/style.css", NULL, &st);
	assert_int_equal(st, 200);
	assert_non_null(strcasestr(r, "content-type: text/css"));
	free(r);
	/* HEAD: the length of the body, not the body */
	char *resp = NULL;
	st = h_http(s, "HEAD /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", &resp);
	assert_int_equal(st, 200);
	const char *cl = strcasestr(resp, "content-length: ");
	assert_non_null(cl);
	assert_true(atoi(cl + 16) > 1000);
	assert_string_equal(body_of(resp), "");
	free(resp);
	/* a name that is not a file of the page: the reference's answer */
	r = get(s, "/nosuch.js", NULL, &st);
	assert_int_equal(st, 426);
	free(r);
	/* the WebSocket on / as before */
	struct ws_client *c = h_connect_ex(s, "/", NULL, 0, &st);
	assert_non_null(c);
	h_send(c, "{\"type\":\"join\",\"name\":\"Pagey\",\"id\":\"p\",\"version\":\"1\"}");
	h_expect(s, c, "history_response");
	r = get(s, "/healthz", NULL, &st);
	assert_int_equal(st, 200);
	free(r);
	space_pass(s);
}

/* /api/room: members with their state, the chat with its chain, claims
 * until released, and the log's history from before the start. */
static void w02_api_room(void **state)
{
	char *dir = space_mkdtemp();
	const char seed[] = "{\"timestamp\":\"2026-01-02T03:04:05.000Z\",\"agentName\":\"Old\","
	                    "\"agentId\":\"o\","
	                    "\"type\":\"chat\",\"content\":\"said before the restart\"}\n";
	space_seed_file(dir, "chat.jsonl", seed, sizeof seed - 1);
	struct space *s = space_start_in(dir, fast_env);
	free(dir);
	struct ws_client *a = h_join(s, "Ada", "a1");
	struct ws_client *b = h_join(s, "Bob", "b1");
	h_send(a, "{\"type\":\"state\",\"state\":\"thinking\",\"detail\":\"reading the issue\"}");
	h_expect(s, b, "state");
	h_send(a, "{\"type\":\"chat\",\"content\":\"I will take the README\",\"chain\":2}");
	h_expect(s, b, "chat");
	h_send(a, "{\"type\":\"claim\",\"action\":\"edit\",\"target\":\"README.md\"}");
	h_expect(s, b, "claim");

	cJSON *room = api_room(s);
	assert_string_equal(h_str(room, "name"), "space-test");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(room, "members")), 2);
	const cJSON *ada = member_named(room, "Ada");
	assert_non_null(ada);
	assert_string_equal(h_str(ada, "id"), "a1");
	assert_string_equal(h_str(ada, "state"), "thinking");
	assert_string_equal(h_str(ada, "detail"), "reading the issue");
	h_assert_timestamp(h_str(ada, "joinedAt"));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(member_named(room, "Bob"), "state")));
	const cJSON *chat = event_with(room, "chat", "I will take the README");
	assert_non_null(chat);
	assert_int_equal(cJSON_GetObjectItem(chat, "chain")->valueint, 2);
	assert_string_equal(h_str(chat, "name"), "Ada");
	const cJSON *old = event_with(room, "chat", "said before the restart");
	assert_non_null(old);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(old, "history")));
	assert_non_null(event_with(room, "join", NULL));
	const cJSON *claims = cJSON_GetObjectItem(room, "claims");
	assert_int_equal(cJSON_GetArraySize(claims), 1);
	const cJSON *cl = cJSON_GetArrayItem(claims, 0);
	assert_string_equal(h_str(cl, "action"), "edit");
	assert_string_equal(h_str(cl, "target"), "README.md");
	assert_string_equal(h_str(cl, "owner"), "Ada");
	h_assert_timestamp(h_str(cl, "expiresAt"));
	const cJSON *web = cJSON_GetObjectItem(room, "web");
	assert_int_equal(cJSON_GetObjectItem(web, "maxClients")->valueint, 16);

	/* a result releases the claim */
	h_send(a, "{\"type\":\"action_result\",\"action\":\"edit\",\"target\":\"README.md\","
	          "\"success\":true,\"link\":\"https://example.org/pr/1\"}");
	h_expect(s, b, "action_result");
	room = api_room(s);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(room, "claims")), 0);
	assert_non_null(event_with(room, "action_result", NULL));
	/* a leave releases the leaver's claims and the list shrinks */
	h_send(b, "{\"type\":\"claim\",\"action\":\"review\",\"target\":\"pr-1\"}");
	h_expect(s, a, "claim");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(api_room(s), "claims")), 1);
	h_close(s, b);
	h_expect(s, a, "leave");
	room = api_room(s);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(room, "claims")), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(room, "members")), 1);
	space_pass(s);
}

/* The stream: a snapshot, then the room live. A chat reaches it within a
 * second; a join brings the new member list; typing and state; the last
 * member's leave (broadcast to nobody) and the host talking to an empty
 * room still show. The stream is never a member. */
static void w03_stream_live(void **state)
{
	struct space *s = space_start(fast_env);
	struct sse *e = sse_open(s, 0);
	assert_int_equal(sse_head(e), 200);
	assert_non_null(strcasestr(e->buf, "content-type: text/event-stream"));
	assert_non_null(sse_wait(e, "room", "\"members\":[]", H_TIMEOUT_MS));

	struct ws_client *a = h_join(s, "Ada", "a1");
	assert_non_null(sse_wait(e, "join", "\"name\":\"Ada\"", H_TIMEOUT_MS));
	assert_non_null(sse_wait(e, "members", "\"name\":\"Ada\"", H_TIMEOUT_MS));
	struct ws_client *b = h_join(s, "Bob", "b1");
	/* Bob's presence lists two agents: the stream is not one */
	cJSON *pres = h_expect(s, a, "presence");
	int two = 2;
	while (!h_pred_nagents(pres, &two))
		pres = h_expect(s, a, "presence");
	assert_non_null(sse_wait(e, "members", "\"name\":\"Bob\"", H_TIMEOUT_MS));

	int64_t t0 = ws_now_ms();
	h_send(a, "{\"type\":\"chat\",\"content\":\"hello, page\",\"chain\":1}");
	const char *d = sse_wait(e, "chat", "hello, page", H_TIMEOUT_MS);
	int64_t took = ws_now_ms() - t0;
	assert_non_null(d);
	assert_non_null(strstr(d, "\"chain\":1"));
	if (took > LIVE_WITHIN_MS)
		fail_msg("the chat reached the stream after %lld ms (at most %d)", (long long)took,
		         LIVE_WITHIN_MS);
	h_send(b, "{\"type\":\"typing\"}");
	assert_non_null(sse_wait(e, "typing", "\"name\":\"Bob\"", H_TIMEOUT_MS));
	h_send(b, "{\"type\":\"state\",\"state\":\"blocked\",\"detail\":{\"on\":\"review\"}}");
	assert_non_null(sse_wait(e, "state", "\"state\":\"blocked\"", H_TIMEOUT_MS));
	const cJSON *bob = member_named(api_room(s), "Bob");
	assert_string_equal(h_str(bob, "state"), "blocked");
	assert_string_equal(h_print(s, cJSON_GetObjectItem(bob, "detail")), "{\"on\":\"review\"}");
	h_assert_timestamp(h_str(bob, "typingAt"));
	h_send(a, "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"bug-7\"}");
	assert_non_null(sse_wait(e, "claim", "bug-7", H_TIMEOUT_MS));
	assert_non_null(sse_wait(e, "claims", "\"owner\":\"Ada\"", H_TIMEOUT_MS));

	h_close(s, b);
	assert_non_null(sse_wait(e, "leave", "\"name\":\"Bob\"", H_TIMEOUT_MS));
	h_close(s, a); /* the last one: its leave reaches no member */
	assert_non_null(sse_wait(e, "leave", "\"name\":\"Ada\"", H_TIMEOUT_MS));
	assert_non_null(sse_wait(e, "claims", "\"claims\":[]", H_TIMEOUT_MS));
	assert_non_null(sse_wait(e, "members", "\"members\":[]", H_TIMEOUT_MS));
	space_host(s, "anyone there?");
	assert_non_null(sse_wait(e, "chat", "anyone there?", H_TIMEOUT_MS));
	assert_non_null(event_with(api_room(s), "chat", "anyone there?"));
	/* nothing of the stream in the log: two joins, two leaves, a chat, a
	 * state, a claim, the host's line */
	assert_int_equal(h_count_log_entries(s, "join", NULL, NULL), 2);
	assert_int_equal(h_count_log_entries(s, "chat", NULL, NULL), 2);
	sse_close(e);
	space_pass(s);
}

/* A renewal is silent in the room (§3.7); the page's claim lives on. */
static void w04_claim_renewal(void **state)
{
	const char *const env[] = {"SPACE_CLAIM_TTL_MS=1500", NULL};
	struct space *s = space_start(env);
	struct ws_client *a = h_join(s, "Ada", "a1");
	h_send(a, "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"bug-9\"}");
	h_expect(s, a, "claim");
	for (int i = 0; i < 4; i++) {
		usleep(600 * 1000);
		h_send(a, "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"bug-9\"}");
		h_expect_none(s, a, "claim", 100); /* silent, as the room does */
	}
	/* 2.8 s after the claim, renewed every 0.7 s: still held */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(api_room(s), "claims")), 1);
	usleep(1700 * 1000);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(api_room(s), "claims")), 0);
	space_pass(s);
}

/* --- bounds ------------------------------------------------------------------------- */

/* At most SPACE_WEB_MAX_CLIENTS (16) streams; the 17th gets 503; a closed
 * one frees its place. */
static void w05_stream_limit(void **state)
{
	struct space *s = space_start(NULL);
	struct sse *e[17];
	for (int i = 0; i < 16; i++) {
		e[i] = sse_open(s, 0);
		assert_int_equal(sse_head(e[i]), 200);
	}
	e[16] = sse_open(s, 0);
	assert_int_equal(sse_head(e[16]), 503);
	assert_non_null(strstr(e[16]->buf, "at most 16"));
	sse_close(e[16]);
	assert_int_equal(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(api_room(s), "web"), "clients")->valueint,
	        16);
	sse_close(e[0]);
	int64_t end = ws_now_ms() + H_TIMEOUT_MS;
	struct sse *again = NULL;
	for (;;) {
		again = sse_open(s, 0);
		if (sse_head(again) == 200)
			break;
		sse_close(again);
		if (ws_now_ms() > end)
			fail_msg("a closed stream did not free its place");
		usleep(50 * 1000);
	}
	sse_close(again);
	for (int i = 1; i < 16; i++)
		sse_close(e[i]);
	space_pass(s);
}

/* A browser that stops reading is dropped; the room and a browser that
 * reads go on at full speed. */
static void w06_slow_stream_dropped(void **state)
{
	struct space *s = space_start(fast_env);
	struct sse *slow = sse_open(s, 4096);
	assert_int_equal(sse_head(slow), 200);
	struct sse *good = sse_open(s, 0);
	assert_int_equal(sse_head(good), 200);
	struct ws_client *a = h_join(s, "Ada", "a1");
	char *big = h_repeat("x", 15000);
	char msg[15100];
	int dropped = 0;
	for (int i = 0; i < 3000 && !dropped; i++) {
		snprintf(msg, sizeof msg, "{\"type\":\"chat\",\"content\":\"%d %s\"}", i, big);
		h_send(a, "%s", msg);
		h_expect(s, a, "chat");
		/* the reading browser keeps up */
		char needle[32];
		snprintf(needle, sizeof needle, "\"content\":\"%d x", i);
		if (!sse_wait(good, "chat", needle, H_TIMEOUT_MS))
			fail_msg("the reading stream missed chat %d", i);
		/* keep its buffer small */
		memmove(good->buf, good->buf + good->seen, good->len - good->seen);
		good->len -= good->seen;
		good->seen = 0;
		if (i % 50 == 49) {
			cJSON *room = api_room(s);
			dropped = cJSON_GetObjectItem(cJSON_GetObjectItem(room, "web"), "dropped")
			                  ->valueint;
		}
	}
	free(big);
	if (!dropped)
		fail_msg("a stream that never reads was not dropped");
	assert_true(space_wait_log(s, "dropping a browser that stopped reading", H_TIMEOUT_MS));
	/* the room still answers at once */
	int64_t t0 = ws_now_ms();
	h_send(a, "{\"type\":\"chat\",\"content\":\"still here\"}");
	h_expect_where(s, a, "chat", h_pred_content, "still here");
	assert_true(ws_now_ms() - t0 < 2000);
	/* the dropped one is closed once its kernel buffers drain */
	int64_t end = ws_now_ms() + H_TIMEOUT_MS;
	bool eof = false;
	while (!eof && ws_now_ms() < end) {
		char tmp[65536];
		struct pollfd p = {.fd = slow->fd, .events = POLLIN};
		if (poll(&p, 1, 100) > 0) {
			ssize_t r = read(slow->fd, tmp, sizeof tmp);
			eof = r <= 0;
		}
	}
	assert_true(eof);
	sse_close(slow);
	sse_close(good);
	space_pass(s);
}

/* --- hostile input ------------------------------------------------------------------- */

struct bad {
	const char *label;
	const char *request;
	int status;
	const char *says; /* in the body */
};

static void w07_hostile(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = h_join(s, "Ada", "a1");
	static const struct bad bad[] = {
	        {"dot-dot", "GET /../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", 400,
	         "path not allowed"},
	        {"encoded dot-dot", "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
	         400, "path not allowed"},
	        {"dot-dot after a file", "GET /app.js/../../space/server.c HTTP/1.1\r\n\r\n", 400,
	         "path not allowed"},
	        {"double slash", "GET //etc/passwd HTTP/1.1\r\n\r\n", 400, "path not allowed"},
	        {"backslash", "GET /..\\..\\etc\\passwd HTTP/1.1\r\n\r\n", 400, "path not allowed"},
	        {"dot file", "GET /.env HTTP/1.1\r\n\r\n", 426, "Upgrade Required"},
	        {"POST to the API", "POST /api/room HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 405,
	         "read-only"},
	        {"PUT the page", "PUT / HTTP/1.1\r\nAccept: text/html\r\n\r\n", 405, "read-only"},
	        {"DELETE the stream", "DELETE /api/events HTTP/1.1\r\n\r\n", 405, "GET only"},
	        {"HEAD the stream", "HEAD /api/events HTTP/1.1\r\n\r\n", 405, "GET only"},
	        {"a chat API", "POST /api/chat HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 404,
	         "no such API"},
	        {"a body on GET", "GET /api/room HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 413,
	         "no request body"},
	        {"chunked", "GET /app.js HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	         413, "no request body"},
	        {"garbage", "\x01\x02 nonsense\r\n\r\n", 400, "Bad Request"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *resp = NULL;
		int st = h_http(s, bad[i].request, &resp);
		if (st != bad[i].status || !resp || !strstr(resp, bad[i].says))
			fail_msg("%s: expected %d saying \"%s\", got %d:\n%s", bad[i].label,
			         bad[i].status, bad[i].says, st, resp ? resp : "(nothing)");
		if (bad[i].status == 405)
			assert_non_null(strcasestr(resp, "\r\nallow: GET"));
		free(resp);
	}
	/* huge: a head past 8 KiB, a path of 100 KB */
	char *pad = h_repeat("a", 20000);
	char *req = malloc(40100);
	snprintf(req, 40100, "GET /api/room HTTP/1.1\r\nX-Pad: %s\r\n\r\n", pad);
	char *resp = NULL;
	assert_int_equal(h_http(s, req, &resp), 431);
	free(resp);
	char *longpath = h_repeat("/a", 20000);
	snprintf(req, 40100, "GET %s HTTP/1.1\r\n\r\n", longpath);
	assert_int_equal(h_http(s, req, &resp), 431);
	free(resp);
	free(req);
	free(pad);
	free(longpath);

	/* the room unharmed: members, chat, health; nothing reached the log */
	struct ws_client *b = h_join(s, "Bob", "b1");
	h_send(b, "{\"type\":\"chat\",\"content\":\"after the storm\"}");
	h_expect_where(s, a, "chat", h_pred_content, "after the storm");
	assert_int_equal(h_count_log_entries(s, "chat", NULL, NULL), 1);
	assert_int_equal(h_count_log_entries(s, NULL, NULL, NULL), 3); /* 2 joins, 1 chat */
	int st = 0;
	char *r = get(s, "/healthz", NULL, &st);
	assert_int_equal(st, 200);
	assert_non_null(strstr(r, "\"agents\":2"));
	free(r);
	assert_true(space_alive(s));
	space_pass(s);
}

/* A long chat reaches the page cut, with "cut": true; the room relays it whole. */
static void w08_long_chat_cut(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = h_join(s, "Ada", "a1");
	char *big = h_repeat("y", 90000);
	h_send(a, "{\"type\":\"chat\",\"content\":\"%s\"}", big);
	cJSON *m = h_expect(s, a, "chat");
	assert_int_equal(strlen(h_str(m, "content")), 90000);
	cJSON *room = api_room(s);
	const cJSON *e = event_with(room, "chat", NULL);
	assert_non_null(e);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(e, "cut")));
	size_t n = strlen(h_str(e, "content"));
	assert_true(n > 100 && n <= 2000);
	free(big);
	space_pass(s);
}

/* A join storm sends the browsers a few member lists, not one per join,
 * and the last one is complete. */
static void w09_join_storm(void **state)
{
	struct space *s = space_start(NULL);
	struct sse *e = sse_open(s, 0);
	assert_int_equal(sse_head(e), 200);
	assert_non_null(sse_wait(e, "room", NULL, H_TIMEOUT_MS));
	int64_t t0 = ws_now_ms();
	char name[16];
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "M%02d", i);
		h_join(s, name, name);
	}
	const char *d = sse_wait(e, "members", "\"name\":\"M39\"", H_TIMEOUT_MS);
	assert_non_null(d);
	int64_t took = ws_now_ms() - t0;
	/* the list that names M39 names all forty */
	char *text = strndup(d, (size_t)(strstr(d, "\n\n") - d));
	cJSON *list = h_parse(s, text);
	free(text);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(list, "members")), 40);
	int lists = 0;
	for (const char *p = e->buf; (p = strstr(p, "event: members\n")); p++)
		lists++;
	printf("40 joins in %lld ms: %d member lists\n", (long long)took, lists);
	if (lists > took / 250 + 2)
		fail_msg("%d member lists for 40 joins in %lld ms (at most one per 250 ms)", lists,
		         (long long)took);
	sse_close(e);
	space_pass(s);
}

/* SPACE_WEB=off: no page, no API — the reference's 426 for every plain
 * request but /healthz. */
static void w10_web_off(void **state)
{
	const char *const env[] = {"SPACE_WEB=off", NULL};
	struct space *s = space_start(env);
	int st = 0;
	char *r = get(s, "/", "Accept: text/html\r\n", &st);
	assert_int_equal(st, 426);
	free(r);
	r = get(s, "/api/room", NULL, &st);
	assert_int_equal(st, 426);
	free(r);
	r = get(s, "/healthz", NULL, &st);
	assert_int_equal(st, 200);
	free(r);
	space_pass(s);
}

#define T(f) cmocka_unit_test_teardown(f, space_teardown)

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        T(w01_page),          T(w02_api_room),      T(w03_stream_live),
	        T(w04_claim_renewal), T(w05_stream_limit),  T(w06_slow_stream_dropped),
	        T(w07_hostile),       T(w08_long_chat_cut), T(w09_join_storm),
	        T(w10_web_off),
	};
	return cmocka_run_group_tests_name("agent-space web page", tests, NULL, NULL);
}
