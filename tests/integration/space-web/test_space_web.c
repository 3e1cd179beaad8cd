/*
 * The room's read-only web page (space/web.h) over real sockets against the
 * built agent-space: the page and its files, /api/room, the event stream
 * (live chat, joins, presence, claims; the stream is never a member), the
 * members' profiles (identity, last reflection, last workspace state) and
 * a test for each of their bounds (space/web_state.h), the
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

#include "common/timeutil.h"
#include "tests/integration/space/harness.h"
#include "testutil.h"

/* The acceptance bound of issue 14: the page shows a chat within a second.
 * A sanitizer build (ASan+UBSan, several times slower on a loaded CI
 * machine) gets 3 s; the bound the room answers within after a stream is
 * dropped (w06) is 2 s, 6 s there. The measured times are printed. */
#ifdef GA_TEST_SANITIZED
#define LIVE_WITHIN_MS   3000
#define ANSWER_WITHIN_MS 6000
#else
#define LIVE_WITHIN_MS   1000
#define ANSWER_WITHIN_MS 2000
#endif

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
	const cJSON *join = event_with(room, "join", NULL);
	assert_non_null(join);
	h_assert_timestamp(h_str(join, "at")); /* the room's time: the protocol sends none */
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
	printf("chat on the stream %lld ms after it was sent\n", (long long)took);
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
	const char *const env[] = {"SPACE_CLAIM_TTL_MS=3000", NULL};
	struct space *s = space_start(env);
	struct ws_client *a = h_join(s, "Ada", "a1");
	h_send(a, "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"bug-9\"}");
	h_expect(s, a, "claim");
	for (int i = 0; i < 4; i++) {
		usleep(1000 * 1000);
		h_send(a, "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"bug-9\"}");
		h_expect_none(s, a, "claim", 100); /* silent, as the room does */
	}
	/* 4.4 s after the claim (past its 3 s TTL), renewed every 1.1 s: still held */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(api_room(s), "claims")), 1);
	/* 3.3 s after the last renewal: expired */
	usleep(3200 * 1000);
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
	int64_t answered = ws_now_ms() - t0;
	printf("the room answered %lld ms after a stream was dropped\n", (long long)answered);
	if (answered >= ANSWER_WITHIN_MS)
		fail_msg("the room answered after %lld ms (under %d)", (long long)answered,
		         ANSWER_WITHIN_MS);
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

/* --- members' identities, reflections and workspace states (space/web_state.h) --- */

static const cJSON *profile_named(const cJSON *room, const char *name)
{
	const cJSON *p;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(room, "profiles"))
	{
		if (h_str(p, "name") && strcmp(h_str(p, "name"), name) == 0)
			return p;
	}
	return NULL;
}

/* UTF-16 units of UTF-8 text (as the room counts). */
static size_t js_units(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p & 0xC0) != 0x80)
			n++;
		if (*p >= 0xF0)
			n++;
	}
	return n;
}

static const char ADA_IDENTITY[] =
        "{\"type\":\"identity\",\"summary\":{\"coreValues\":[\"curiosity\",\"care\"],"
        "\"currentInterests\":[\"type systems\"],\"voice\":\"Plain and warm\","
        "\"expertise\":[\"C\"],\"recentWork\":\"No recent completed work\","
        "\"soulEssence\":\"Builds small tools.\"}}";

/* A member's identity, last reflection and last workspace state: in the
 * snapshot and, live, as a "profile" event within a second; a member that
 * leaves takes its profile along, one that comes back starts without. */
static void w11_profiles(void **state)
{
	struct space *s = space_start(fast_env);
	struct sse *e = sse_open(s, 0);
	assert_int_equal(sse_head(e), 200);
	assert_non_null(sse_wait(e, "room", "\"profiles\":[]", H_TIMEOUT_MS));
	struct ws_client *a = h_join(s, "Ada", "a1");
	struct ws_client *b = h_join(s, "Bob", "b1");
	int64_t t0 = ws_now_ms();
	h_send(a, "%s", ADA_IDENTITY);
	const char *d = sse_wait(e, "profile", "Builds small tools.", H_TIMEOUT_MS);
	int64_t took = ws_now_ms() - t0;
	assert_non_null(d);
	if (took > LIVE_WITHIN_MS)
		fail_msg("the identity reached the stream after %lld ms (at most %d)",
		         (long long)took, LIVE_WITHIN_MS);
	h_send(a, "{\"type\":\"reflection\",\"summary\":\"Short replies land better.\"}");
	assert_non_null(sse_wait(e, "profile", "Short replies land better.", H_TIMEOUT_MS));
	h_send(a,
	       "{\"type\":\"workspace_state\",\"workspace\":\"acme/widgets\",\"planNumber\":4,"
	       "\"totalTasks\":9,\"completedTasks\":3,\"blockedTasks\":1,\"inProgressTasks\":2}");
	d = sse_wait(e, "profile", "acme/widgets", H_TIMEOUT_MS);
	assert_non_null(d);
	/* the event carries the whole profile: the identity is still there */
	assert_non_null(strstr(d, "Builds small tools."));
	h_expect(s, b, "workspace_state");

	cJSON *room = api_room(s);
	assert_int_equal(cJSON_GetObjectItem(room, "profilesOmitted")->valueint, 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(room, "profiles")), 1);
	const cJSON *p = profile_named(room, "Ada");
	assert_non_null(p);
	h_assert_keys(p, "name,id,identity,reflection,workspaceState");
	assert_string_equal(h_str(p, "id"), "a1");
	const cJSON *id = cJSON_GetObjectItem(p, "identity");
	h_assert_keys(id, "summary,at");
	assert_string_equal(h_print(s, cJSON_GetObjectItem(id, "summary")),
	                    "{\"coreValues\":[\"curiosity\",\"care\"],\"currentInterests\":[\"type "
	                    "systems\"],\"voice\":\"Plain and warm\",\"expertise\":[\"C\"],"
	                    "\"recentWork\":\"No recent completed work\",\"soulEssence\":\"Builds "
	                    "small tools.\"}");
	h_assert_timestamp(h_str(id, "at"));
	const cJSON *r = cJSON_GetObjectItem(p, "reflection");
	assert_string_equal(h_str(r, "summary"), "Short replies land better.");
	assert_null(cJSON_GetObjectItem(r, "cut"));
	const cJSON *w = cJSON_GetObjectItem(p, "workspaceState");
	h_assert_keys(w, "workspace,planNumber,totalTasks,completedTasks,blockedTasks,"
	                 "inProgressTasks,at");
	assert_string_equal(h_str(w, "workspace"), "acme/widgets");
	assert_int_equal(cJSON_GetObjectItem(w, "planNumber")->valueint, 4);
	assert_int_equal(cJSON_GetObjectItem(w, "totalTasks")->valueint, 9);
	assert_int_equal(cJSON_GetObjectItem(w, "completedTasks")->valueint, 3);
	assert_int_equal(cJSON_GetObjectItem(w, "inProgressTasks")->valueint, 2);
	/* Bob sent nothing of the three: not listed */
	assert_null(profile_named(room, "Bob"));
	/* a second workspace_state replaces the first (the last one per member) */
	h_send(a, "{\"type\":\"workspace_state\",\"workspace\":\"acme/gadgets\",\"totalTasks\":1,"
	          "\"completedTasks\":1}");
	assert_non_null(sse_wait(e, "profile", "acme/gadgets", H_TIMEOUT_MS));
	w = cJSON_GetObjectItem(profile_named(api_room(s), "Ada"), "workspaceState");
	assert_string_equal(h_str(w, "workspace"), "acme/gadgets");
	assert_int_equal(cJSON_GetObjectItem(w, "planNumber")->valueint, 0);

	/* a new stream's snapshot carries it */
	struct sse *e2 = sse_open(s, 0);
	assert_int_equal(sse_head(e2), 200);
	assert_non_null(sse_wait(e2, "room", "Builds small tools.", H_TIMEOUT_MS));
	sse_close(e2);

	/* Ada leaves: her profile goes with her; back again, she has none */
	h_close(s, a);
	h_expect(s, b, "leave");
	assert_null(profile_named(api_room(s), "Ada"));
	a = h_join(s, "Ada", "a2");
	assert_null(profile_named(api_room(s), "Ada"));
	/* nothing of this reached the log but the members' own messages */
	assert_int_equal(h_count_log_entries(s, "identity", NULL, NULL), 1);
	assert_int_equal(h_count_log_entries(s, "reflection", NULL, NULL), 1);
	sse_close(e);
	space_pass(s);
}

/* Sends an identity with the given summary, waits for its echo, returns
 * the page's copy of Ada's identity object. */
static const cJSON *identity_via_page(struct space *s, struct ws_client *a, cJSON *summary)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "type", "identity");
	cJSON_AddItemToObject(m, "summary", summary);
	h_send_json(a, m);
	cJSON_Delete(m);
	h_expect(s, a, "identity");
	const cJSON *p = profile_named(api_room(s), "Ada");
	assert_non_null(p);
	return cJSON_GetObjectItem(p, "identity");
}

/* Each bound of the identity (web_state.h), one at a time: a string, a
 * key, an array, an object, the nesting, the whole summary. */
static void w12_identity_bounds(void **state)
{
	struct space *s = space_start(fast_env);
	struct ws_client *a = h_join(s, "Ada", "a1");

	/* a string: cut to 300 units, on a code-point boundary */
	char *big = h_repeat("\xF0\x9F\x98\x80", 1000); /* 2,000 units */
	cJSON *sum = cJSON_CreateObject();
	cJSON_AddStringToObject(sum, "soulEssence", big);
	const cJSON *id = identity_via_page(s, a, sum);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(id, "cut")));
	const char *got = h_str(cJSON_GetObjectItem(id, "summary"), "soulEssence");
	assert_non_null(got);
	assert_int_equal(js_units(got), 300);
	assert_int_equal(strlen(got), 600); /* 150 whole emoji */
	free(big);

	/* a key: cut to 64 units */
	char *key = h_repeat("k", 200);
	sum = cJSON_CreateObject();
	cJSON_AddStringToObject(sum, key, "v");
	id = identity_via_page(s, a, sum);
	const cJSON *k = cJSON_GetObjectItem(id, "summary")->child;
	assert_non_null(k);
	assert_int_equal(strlen(k->string), 64);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(id, "cut")));
	free(key);

	/* an array: at most 16 entries */
	sum = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(sum, "coreValues");
	for (int i = 0; i < 40; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString("value"));
	id = identity_via_page(s, a, sum);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(id, "summary"),
	                                                        "coreValues")),
	                 16);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(id, "cut")));

	/* an object: at most 16 keys */
	sum = cJSON_CreateObject();
	for (int i = 0; i < 40; i++) {
		char kn[16];
		snprintf(kn, sizeof kn, "key%02d", i);
		cJSON_AddNumberToObject(sum, kn, i);
	}
	id = identity_via_page(s, a, sum);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(id, "summary")), 16);
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(id, "summary"), "key15"));
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(id, "summary"), "key16"));

	/* nesting: at most 4 levels of containers; deeper values are left out */
	sum = cJSON_CreateObject();
	cJSON *at = sum;
	for (int i = 0; i < 10; i++)
		at = cJSON_AddObjectToObject(at, "in");
	cJSON_AddStringToObject(sum, "voice", "plain");
	id = identity_via_page(s, a, sum);
	assert_string_equal(h_print(s, cJSON_GetObjectItem(id, "summary")),
	                    "{\"in\":{\"in\":{\"in\":{}}},\"voice\":\"plain\"}");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(id, "cut")));

	/* the whole summary: at most 2,048 bytes of JSON, whatever fits */
	sum = cJSON_CreateObject();
	char *line = h_repeat("\x01", 300); /* 300 units, 1,800 bytes escaped */
	for (int i = 0; i < 8; i++) {       /* 12.6 KB: within the room's 16 KB */
		char kn[16];
		snprintf(kn, sizeof kn, "f%02d", i);
		cJSON_AddStringToObject(sum, kn, i == 0 ? "first" : line);
	}
	id = identity_via_page(s, a, sum);
	const char *text = h_print(s, cJSON_GetObjectItem(id, "summary"));
	assert_true(strlen(text) > 0);
	/* what the server sent (escaped \u0001 is 6 bytes): reprinted by cJSON the
	 * same way, so the length is the server's */
	if (strlen(text) > 2048)
		fail_msg("identity summary of %zu bytes on the page (at most 2048)", strlen(text));
	assert_string_equal(h_str(cJSON_GetObjectItem(id, "summary"), "f00"), "first");
	assert_non_null(h_str(cJSON_GetObjectItem(id, "summary"), "f01"));
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(id, "summary"), "f07"));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(id, "cut")));
	free(line);

	/* an array summary passes the room (§3.6) and the page */
	id = identity_via_page(s, a, cJSON_Parse("[\"<b>x</b>\",1,null,true]"));
	assert_string_equal(h_print(s, cJSON_GetObjectItem(id, "summary")),
	                    "[\"<b>x</b>\",1,null,true]");
	assert_null(cJSON_GetObjectItem(id, "cut"));
	/* the room itself relays the whole identity */
	assert_int_equal(h_count_log_entries(s, "identity", "Ada", NULL), 7);
	space_pass(s);
}

/* The reflection (1,000 units) and the workspace name (200 units) are cut
 * for the page; the room relays them as before. A whole profile at its
 * largest stays within 12 KiB on the stream. */
static void w13_reflection_workspace_bounds(void **state)
{
	struct space *s = space_start(fast_env);
	struct ws_client *a = h_join(s, "Ada", "a1");
	char *refl = h_repeat("\xC3\xA9", 4000);
	h_send(a, "{\"type\":\"reflection\",\"summary\":\"%s\"}", refl);
	cJSON *m = h_expect(s, a, "reflection");
	assert_int_equal(js_units(h_str(m, "summary")), 4000); /* the room: whole */
	const cJSON *r = cJSON_GetObjectItem(profile_named(api_room(s), "Ada"), "reflection");
	assert_int_equal(js_units(h_str(r, "summary")), 1000);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "cut")));
	free(refl);
	/* a pair of surrogates is never split */
	refl = h_repeat("\xF0\x9F\x98\x80", 700);
	h_send(a, "{\"type\":\"reflection\",\"summary\":\"a%s\"}", refl);
	h_expect(s, a, "reflection");
	r = cJSON_GetObjectItem(profile_named(api_room(s), "Ada"), "reflection");
	assert_int_equal(js_units(h_str(r, "summary")), 999);
	free(refl);

	char *ws = h_repeat("w", 5000);
	h_send(a,
	       "{\"type\":\"workspace_state\",\"workspace\":\"%s\",\"totalTasks\":5,"
	       "\"completedTasks\":2}",
	       ws);
	m = h_expect(s, a, "workspace_state");
	assert_int_equal(strlen(h_str(m, "workspace")), 5000);
	const cJSON *w = cJSON_GetObjectItem(profile_named(api_room(s), "Ada"), "workspaceState");
	assert_int_equal(strlen(h_str(w, "workspace")), 200);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(w, "cut")));
	assert_int_equal(cJSON_GetObjectItem(w, "totalTasks")->valueint, 5);
	free(ws);

	/* the largest profile: a name, id, identity, reflection and workspace of
	 * control characters (6 bytes each escaped) */
	struct sse *e = sse_open(s, 0);
	assert_int_equal(sse_head(e), 200);
	assert_non_null(sse_wait(e, "room", NULL, H_TIMEOUT_MS));
	cJSON *join = cJSON_CreateObject();
	char *name = h_repeat("\x02", 100);
	cJSON_AddStringToObject(join, "type", "join");
	cJSON_AddStringToObject(join, "name", name);
	cJSON_AddStringToObject(join, "id", name);
	cJSON_AddStringToObject(join, "version", "1");
	char *jt = cJSON_PrintUnformatted(join);
	struct ws_client *z = h_join_json(s, jt, NULL);
	free(jt);
	cJSON_Delete(join);
	char *ctl = h_repeat("\x01", 5000);
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "reflection");
	cJSON_AddStringToObject(msg, "summary", ctl);
	h_send_json(z, msg);
	cJSON_Delete(msg);
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "workspace_state");
	cJSON_AddStringToObject(msg, "workspace", ctl);
	cJSON_AddNumberToObject(msg, "totalTasks", -1.7976931348623157e308);
	cJSON_AddNumberToObject(msg, "completedTasks", 1e-300);
	h_send_json(z, msg);
	cJSON_Delete(msg);
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "identity");
	cJSON *sum = cJSON_AddObjectToObject(msg, "summary");
	ctl[400] = '\0'; /* six of 2,400 bytes: within the room's 16 KB */
	for (int i = 0; i < 6; i++) {
		char kn[8];
		snprintf(kn, sizeof kn, "%c", 'a' + i);
		cJSON_AddStringToObject(sum, kn, ctl);
	}
	h_send_json(z, msg);
	cJSON_Delete(msg);
	const char *d = sse_wait(e, "profile", "\"identity\":{", H_TIMEOUT_MS);
	assert_non_null(d);
	size_t n = (size_t)(strstr(d, "\n\n") - d);
	printf("the largest profile event: %zu bytes\n", n);
	if (n > 12 * 1024)
		fail_msg("a profile event of %zu bytes (at most 12 KiB)", n);
	assert_true(n > 8000); /* it did carry the long parts */
	free(ctl);
	free(name);
	sse_close(e);
	space_pass(s);
}

/* The snapshot carries at most 64 KiB of profiles; the members past that
 * are counted in profilesOmitted and still come live. */
static void w14_profiles_budget(void **state)
{
	struct space *s = space_start(fast_env);
	char *line = h_repeat("z", 280);
	struct ws_client *last = NULL;
	for (int i = 0; i < 40; i++) {
		char name[16];
		snprintf(name, sizeof name, "M%02d", i);
		last = h_join(s, name, name);
		cJSON *msg = cJSON_CreateObject();
		cJSON_AddStringToObject(msg, "type", "identity");
		cJSON *sum = cJSON_AddObjectToObject(msg, "summary");
		for (int k = 0; k < 6; k++) {
			char kn[8];
			snprintf(kn, sizeof kn, "k%d", k);
			cJSON_AddStringToObject(sum, kn, line);
		}
		h_send_json(last, msg);
		cJSON_Delete(msg);
		h_expect(s, last, "identity");
	}
	free(line);
	int st = 0;
	char *resp = get(s, "/api/room", NULL, &st);
	assert_int_equal(st, 200);
	const char *from = strstr(resp, ",\"profiles\":[");
	const char *to = strstr(resp, "],\"profilesOmitted\":");
	assert_non_null(from);
	assert_non_null(to);
	size_t bytes = (size_t)(to - from) + 1;
	cJSON *room = h_parse(s, body_of(resp));
	free(resp);
	int listed = cJSON_GetArraySize(cJSON_GetObjectItem(room, "profiles"));
	int omitted = cJSON_GetObjectItem(room, "profilesOmitted")->valueint;
	printf("40 profiles of ~1.8 KB: %d in the snapshot (%zu bytes), %d omitted\n", listed,
	       bytes, omitted);
	assert_true(bytes <= 64 * 1024);
	assert_int_equal(listed + omitted, 40);
	assert_true(omitted > 0 && listed > 20);
	/* in member order: the first ones are there */
	assert_non_null(profile_named(room, "M00"));
	assert_null(profile_named(room, "M39"));
	/* the last member's profile still comes live */
	struct sse *e = sse_open(s, 0);
	assert_int_equal(sse_head(e), 200);
	assert_non_null(sse_wait(e, "room", "\"profilesOmitted\":", H_TIMEOUT_MS));
	h_send(last, "{\"type\":\"reflection\",\"summary\":\"still here\"}");
	assert_non_null(sse_wait(e, "profile", "\"name\":\"M39\"", H_TIMEOUT_MS));
	sse_close(e);
	space_pass(s);
}

/* A workspace_state's "pulls" (the plan's pull requests with their review
 * state and who acts next): relayed to the members and kept on the
 * member's card, only the pulls' own fields; entries that are not pulls
 * are left out with a line in the server's log and the rest of the
 * message stands; the page lists each plan's latest report, whoever sent
 * it (also after the reporter left; an empty list removes it; at most 16
 * plans); bounded in the relay and on the page. */
static void w15_pulls(void **state)
{
	struct space *s = space_start(fast_env);
	struct sse *e = sse_open(s, 0);
	assert_int_equal(sse_head(e), 200);
	assert_non_null(sse_wait(e, "room", NULL, H_TIMEOUT_MS));
	struct ws_client *a = h_join(s, "Ada", "a1");
	struct ws_client *b = h_join(s, "Bob", "b1");
	size_t log_at = space_log_size(s);
	h_send(a, "{\"type\":\"workspace_state\",\"workspace\":\"acme/www-x\",\"planNumber\":7,"
	          "\"totalTasks\":3,\"completedTasks\":1,\"pulls\":["
	          "{\"repo\":\"acme/www-x\",\"number\":12,\"title\":\"Add the page\","
	          "\"url\":\"https://github.com/acme/www-x/pull/12\",\"task\":3,"
	          "\"author\":\"alice\",\"reviewer\":\"bob\",\"state\":\"awaiting_review\","
	          "\"next\":\"bob\",\"since\":\"2026-11-28T14:02:00.000Z\",\"revisions\":0,"
	          "\"secret\":\"not a pull's\"},"
	          "{\"number\":13,\"state\":\"Not A State!\"},"
	          "{\"state\":\"approved\"},"
	          "\"#14\","
	          "{\"number\":15.5,\"state\":\"approved\"},"
	          "{\"number\":16,\"state\":\"changes_requested\",\"url\":\"javascript:x\","
	          "\"since\":\"yesterday\",\"revisions\":-1,\"next\":\"alice\"}]}");
	/* Bob hears the message with the two pulls, nothing else of them */
	cJSON *m = h_expect(s, b, "workspace_state");
	assert_int_equal(cJSON_GetObjectItem(m, "totalTasks")->valueint, 3);
	const cJSON *pl = cJSON_GetObjectItem(m, "pulls");
	assert_int_equal(cJSON_GetArraySize(pl), 2);
	assert_string_equal(h_print(s, cJSON_GetArrayItem(pl, 0)),
	                    "{\"number\":12,\"state\":\"awaiting_review\",\"title\":\"Add the "
	                    "page\",\"repo\":\"acme/www-x\",\"author\":\"alice\",\"reviewer\":"
	                    "\"bob\",\"next\":\"bob\",\"url\":\"https://github.com/acme/www-x/"
	                    "pull/12\",\"since\":\"2026-11-28T14:02:00.000Z\",\"task\":3,"
	                    "\"revisions\":0}");
	assert_string_equal(h_print(s, cJSON_GetArrayItem(pl, 1)),
	                    "{\"number\":16,\"state\":\"changes_requested\",\"next\":\"alice\"}");
	assert_true(space_wait_log_from(s, log_at, "pulls entries left out", H_TIMEOUT_MS));
	assert_true(space_wait_log_from(s, log_at, "rejected=4", H_TIMEOUT_MS));

	/* the page: on Ada's card, live and in the snapshot */
	assert_non_null(sse_wait(e, "profile", "awaiting_review", H_TIMEOUT_MS));
	const cJSON *w = cJSON_GetObjectItem(profile_named(api_room(s), "Ada"), "workspaceState");
	pl = cJSON_GetObjectItem(w, "pulls");
	assert_int_equal(cJSON_GetArraySize(pl), 2);
	assert_string_equal(h_str(cJSON_GetArrayItem(pl, 0), "next"), "bob");
	/* the room relayed only pulls: nothing more to leave out here */
	assert_null(cJSON_GetObjectItem(w, "cut"));

	/* the plan's latest report, whoever sent it: in the snapshot's plans */
	cJSON *room = api_room(s);
	const cJSON *plans = cJSON_GetObjectItem(room, "plans");
	assert_int_equal(cJSON_GetArraySize(plans), 1);
	const cJSON *pe = cJSON_GetArrayItem(plans, 0);
	h_assert_keys(pe, "workspace,planNumber,reporter,pulls,at");
	assert_string_equal(h_str(pe, "reporter"), "Ada");
	assert_int_equal(cJSON_GetObjectItem(pe, "planNumber")->valueint, 7);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(pe, "pulls")), 2);
	/* Bob reports the same plan: his report replaces Ada's, live as a
	 * "plan" event */
	h_send(b, "{\"type\":\"workspace_state\",\"workspace\":\"acme/www-x\",\"planNumber\":7,"
	          "\"totalTasks\":3,\"completedTasks\":1,\"pulls\":[{\"repo\":\"acme/www-x\","
	          "\"number\":12,\"state\":\"approved\",\"next\":\"alice\"}]}");
	assert_non_null(sse_wait(e, "plan", "\"reporter\":\"Bob\"", H_TIMEOUT_MS));
	room = api_room(s);
	plans = cJSON_GetObjectItem(room, "plans");
	assert_int_equal(cJSON_GetArraySize(plans), 1);
	pe = cJSON_GetArrayItem(plans, 0);
	assert_string_equal(h_str(pe, "reporter"), "Bob");
	assert_string_equal(h_str(cJSON_GetArrayItem(cJSON_GetObjectItem(pe, "pulls"), 0), "state"),
	                    "approved");
	/* Bob leaves: the plan's report stays */
	h_close(s, b);
	h_expect(s, a, "leave");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(api_room(s), "plans")), 1);
	b = h_join(s, "Bob", "b2");

	/* no pulls any more: the plan leaves the list, live */
	h_send(a, "{\"type\":\"workspace_state\",\"workspace\":\"acme/www-x\",\"planNumber\":7,"
	          "\"totalTasks\":3,\"completedTasks\":3,\"pulls\":[]}");
	assert_non_null(sse_wait(e, "plan", "\"pulls\":[]", H_TIMEOUT_MS));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(api_room(s), "plans")), 0);
	h_expect(s, b, "workspace_state");

	/* at most 16 plans: the one reported longest ago goes, counted */
	for (int i = 0; i < 18; i++) {
		h_send(a,
		       "{\"type\":\"workspace_state\",\"workspace\":\"acme/"
		       "www-x\",\"planNumber\":%d,"
		       "\"totalTasks\":1,\"completedTasks\":0,\"pulls\":[{\"number\":%d,\"state\":"
		       "\"awaiting_review\"}]}",
		       100 + i, 200 + i);
		h_expect(s, b, "workspace_state");
	}
	room = api_room(s);
	plans = cJSON_GetObjectItem(room, "plans");
	assert_int_equal(cJSON_GetArraySize(plans), 16);
	assert_int_equal(cJSON_GetObjectItem(room, "plansEvicted")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(plans, 0), "planNumber")->valueint,
	                 117);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(plans, 15), "planNumber")->valueint,
	                 102);

	/* not an array: the message stands without pulls */
	h_send(a, "{\"type\":\"workspace_state\",\"workspace\":\"acme/www-x\",\"planNumber\":7,"
	          "\"totalTasks\":3,\"completedTasks\":2,\"pulls\":\"#12\"}");
	m = h_expect(s, b, "workspace_state");
	assert_int_equal(cJSON_GetObjectItem(m, "completedTasks")->valueint, 2);
	assert_null(cJSON_GetObjectItem(m, "pulls"));

	/* bounds: 40 pulls with long titles → the room relays 32, the page 16
	 * within its bytes */
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "type", "workspace_state");
	cJSON_AddStringToObject(msg, "workspace", "acme/www-x");
	cJSON_AddNumberToObject(msg, "planNumber", 8);
	cJSON_AddNumberToObject(msg, "totalTasks", 40);
	cJSON_AddNumberToObject(msg, "completedTasks", 0);
	cJSON *arr = cJSON_AddArrayToObject(msg, "pulls");
	char *title = h_repeat("t", 300);
	for (int i = 0; i < 40; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "number", 100 + i);
		cJSON_AddStringToObject(p, "state", "awaiting_review");
		cJSON_AddStringToObject(p, "title", title);
		cJSON_AddStringToObject(p, "next", "bob");
		cJSON_AddItemToArray(arr, p);
	}
	free(title);
	h_send_json(a, msg);
	cJSON_Delete(msg);
	m = h_expect(s, b, "workspace_state");
	pl = cJSON_GetObjectItem(m, "pulls");
	assert_int_equal(cJSON_GetArraySize(pl), 32);
	assert_int_equal(strlen(h_str(cJSON_GetArrayItem(pl, 0), "title")), 120);
	assert_non_null(sse_wait(e, "profile", "\"number\":115", H_TIMEOUT_MS));
	w = cJSON_GetObjectItem(profile_named(api_room(s), "Ada"), "workspaceState");
	int listed = cJSON_GetArraySize(cJSON_GetObjectItem(w, "pulls"));
	char *wt = cJSON_PrintUnformatted(cJSON_GetObjectItem(w, "pulls"));
	printf("40 pulls sent: 32 relayed, %d on the page (%zu bytes)\n", listed, strlen(wt));
	assert_true(listed > 0 && listed <= 16);
	assert_true(strlen(wt) <= 6 * 1024);
	free(wt);
	sse_close(e);
	space_pass(s);
}

/* The claim of api_room's "claims" on target, or NULL. */
static const cJSON *claim_on(const cJSON *room, const char *target)
{
	const cJSON *c;
	cJSON_ArrayForEach(c,
	                   cJSON_GetObjectItem(room, "claims")) if (h_str(c, "target") &&
	                                                            strcmp(h_str(c, "target"),
	                                                                   target) == 0) return c;
	return NULL;
}

/* A claim keeps its own time across its owner's leave and rejoin: the
 * claim made again with "since" is broadcast with it and the page's claim
 * says since then (its expiry counts from the new claim); a since in the
 * future or that is no time is ignored — the claim's time is now and the
 * broadcast has its usual shape. */
static void w16_claim_since_after_rejoin(void **state)
{
	struct space *s = space_start(fast_env);
	struct ws_client *a = h_join(s, "Ada", "a1");
	struct ws_client *b = h_join(s, "Bob", "b1");
	h_send(a, "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"bug-3\"}");
	cJSON *m = h_expect_where(s, b, "claim", h_pred_name, "Ada");
	h_assert_keys(m, "type,name,id,action,target,timestamp");
	char first[TIME_ISO_LEN + 1];
	snprintf(first, sizeof first, "%s", h_str(m, "timestamp"));
	const cJSON *c = claim_on(api_room(s), "bug-3");
	assert_non_null(c);
	assert_string_equal(h_str(c, "since"), h_str(c, "at"));

	/* Ada drops out: the room forgets her claim */
	h_close(s, a);
	h_expect_where(s, b, "leave", h_pred_name, "Ada");
	assert_null(claim_on(api_room(s), "bug-3"));
	/* she is back and claims it again, saying since when she holds it */
	a = h_join(s, "Ada", "a1");
	h_send(a, "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"bug-3\",\"since\":\"%s\"}",
	       first);
	m = h_expect_where(s, b, "claim", h_pred_name, "Ada");
	h_assert_keys(m, "type,name,id,action,target,since,timestamp");
	assert_string_equal(h_str(m, "since"), first);
	assert_string_not_equal(h_str(m, "timestamp"), first);
	c = claim_on(api_room(s), "bug-3");
	assert_non_null(c);
	assert_string_equal(h_str(c, "since"), first);
	assert_string_equal(h_str(c, "at"), h_str(m, "timestamp")); /* expiry from the claim */
	int64_t at = 0, exp = 0;
	assert_int_equal(time_parse_iso(h_str(c, "at"), &at), 0);
	assert_int_equal(time_parse_iso(h_str(c, "expiresAt"), &exp), 0);
	assert_int_equal(exp - at, 60000);

	/* a since to come, no time, not a string: ignored (no error) */
	static const char *const bad[] = {"\"2999-01-01T00:00:00.000Z\"", "\"soon\"", "17"};
	for (int i = 0; i < 3; i++) {
		char target[16];
		snprintf(target, sizeof target, "bug-%d", 10 + i);
		h_send(a, "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"%s\",\"since\":%s}",
		       target, bad[i]);
		m = h_expect_where(s, b, "claim", h_pred_name, "Ada");
		assert_string_equal(h_str(m, "target"), target);
		h_assert_keys(m, "type,name,id,action,target,timestamp");
		c = claim_on(api_room(s), target);
		assert_non_null(c);
		assert_string_equal(h_str(c, "since"), h_str(c, "at"));
	}
	h_expect_none(s, a, "error", 100);
	space_pass(s);
}

#define T(f) cmocka_unit_test_teardown(f, space_teardown)

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        T(w01_page),
	        T(w02_api_room),
	        T(w03_stream_live),
	        T(w04_claim_renewal),
	        T(w05_stream_limit),
	        T(w06_slow_stream_dropped),
	        T(w07_hostile),
	        T(w08_long_chat_cut),
	        T(w09_join_storm),
	        T(w10_web_off),
	        T(w11_profiles),
	        T(w12_identity_bounds),
	        T(w13_reflection_workspace_bounds),
	        T(w14_profiles_budget),
	        T(w15_pulls),
	        T(w16_claim_since_after_rejoin),
	};
	return cmocka_run_group_tests_name("agent-space web page", tests, NULL, NULL);
}
