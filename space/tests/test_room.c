/* Unit tests for space/room: the rules of space-protocol.md §3, driven
 * through fake I/O ops that record what each connection receives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "space/room.h"

#define MAXC 4
#define MAXM 64

struct fake {
	struct space_conn *c;
	struct space_buf *bufs[MAXM]; /* referenced: a placeholder gets its bytes later */
	int n;
	int close_code;
	bool dropped;
	int pings;
};

static struct fake f[MAXC];
static struct space_room *room;
static struct space_store *store;
static char dir[64];
static const int64_t T0 = 1736000000000;

static void op_send(void *ud, struct space_conn *c, struct space_buf *b)
{
	struct fake *x = c->io;
	assert_true(x->n < MAXM);
	x->bufs[x->n++] = space_buf_ref(b);
}
static void op_close(void *ud, struct space_conn *c, int code, const char *reason)
{
	((struct fake *)c->io)->close_code = code;
}
static void op_drop(void *ud, struct space_conn *c)
{
	((struct fake *)c->io)->dropped = true;
}
static void op_ping(void *ud, struct space_conn *c)
{
	((struct fake *)c->io)->pings++;
}
static const struct space_room_ops ops = {op_send, op_close, op_drop, op_ping, NULL};

/* Message k of connection i, as it is on the wire by now. */
static const char *M(int i, int k)
{
	return space_buf_data(f[i].bufs[k]);
}

static void clear(void)
{
	for (int i = 0; i < MAXC; i++) {
		for (int j = 0; j < f[i].n; j++)
			space_buf_unref(f[i].bufs[j]);
		f[i].n = 0;
	}
}

static int setup(void **state)
{
	log_init(LOG_LEVEL_ERROR, 0, NULL);
	snprintf(dir, sizeof dir, "/tmp/space-room-XXXXXX");
	assert_non_null(mkdtemp(dir));
	store = space_store_open(dir, 0, 0, NULL);
	room = space_room_new(NULL, store, &ops, NULL, T0);
	memset(f, 0, sizeof f);
	for (int i = 0; i < MAXC; i++)
		f[i].c = space_room_conn_new(room, &f[i]);
	return 0;
}

static int teardown(void **state)
{
	clear();
	space_room_free(room);
	space_store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

/* One message per I/O turn, as the server calls the room. */
static void in(int i, const char *msg, int64_t t)
{
	space_room_input(room, f[i].c, msg, strlen(msg), t);
	space_room_flush(room, t);
}

/* The same, within the current I/O turn (no flush). */
static void in_turn(int i, const char *msg, int64_t t)
{
	space_room_input(room, f[i].c, msg, strlen(msg), t);
}

/* A fresh room whose presence is paced by bytes_per_ms, at most max_ms. */
static void paced_room(int64_t bytes_per_ms, int64_t max_ms)
{
	struct space_room_config cfg;
	space_room_config_init(&cfg);
	cfg.presence_bytes_per_ms = bytes_per_ms;
	cfg.presence_delay_max_ms = max_ms;
	space_room_free(room);
	room = space_room_new(&cfg, store, &ops, NULL, T0);
	for (int i = 0; i < MAXC; i++)
		f[i].c = space_room_conn_new(room, &f[i]);
}

/* A join within the current turn; join() ends the turn after it. */
static void join_turn(int i, const char *name, const char *id, int64_t t)
{
	char buf[256];
	snprintf(buf, sizeof buf,
	         "{\"type\":\"join\",\"name\":\"%s\",\"id\":\"%s\",\"version\":\"1.0.0\"}", name,
	         id);
	in_turn(i, buf, t);
}

static void join(int i, const char *name, const char *id, int64_t t)
{
	join_turn(i, name, id, t);
	space_room_flush(room, t);
}

/* Asserts message k of connection i starts with prefix. */
static void expect(int i, int k, const char *prefix)
{
	assert_true(k < f[i].n);
	if (strncmp(M(i, k), prefix, strlen(prefix)) != 0)
		fail_msg("conn %d msg %d: %s\nexpected prefix: %s", i, k, M(i, k), prefix);
}

static void test_join_sequence(void **state)
{
	in(0,
	   "{\"type\":\"join\",\"name\":\"A\",\"id\":\"a1\",\"version\":\"1\",\"capabilities\":"
	   "[\"social\",5,\"github\"],\"extra\":1}",
	   T0);
	assert_int_equal(f[0].n, 4);
	assert_string_equal(M(0, 0), "{\"type\":\"join\",\"name\":\"A\",\"id\":\"a1\","
	                             "\"version\":\"1\",\"capabilities\":[\"social\",\"github\"]}");
	assert_string_equal(M(0, 1),
	                    "{\"type\":\"presence\",\"agents\":[{\"name\":\"A\",\"id\":\"a1\","
	                    "\"version\":\"1\",\"joinedAt\":\"2025-01-04T14:13:20.000Z\","
	                    "\"lastSeen\":\"2025-01-04T14:13:20.000Z\",\"capabilities\":"
	                    "[\"social\",\"github\"]}]}");
	assert_string_equal(M(0, 2),
	                    "{\"type\":\"history_response\",\"entries\":[{\"timestamp\":"
	                    "\"2025-01-04T14:13:20.000Z\",\"agentName\":\"A\",\"agentId\":\"a1\","
	                    "\"type\":\"join\",\"content\":\"\"}]}");
	assert_string_equal(M(0, 3), M(0, 1));
	clear();
	/* A cached workspace_state is replayed to the next joiner. */
	in(0,
	   "{\"type\":\"workspace_state\",\"workspace\":\"o/r\",\"totalTasks\":5,"
	   "\"completedTasks\":2}",
	   T0 + 10);
	join(1, "B", "b1", T0 + 20);
	expect(0, 1, "{\"type\":\"join\",\"name\":\"B\"");
	expect(0, 2, "{\"type\":\"presence\",\"agents\":[{\"name\":\"A\"");
	assert_int_equal(f[1].n, 5);
	expect(1, 0, "{\"type\":\"join\",\"name\":\"B\"");
	expect(1, 1, "{\"type\":\"presence\"");
	expect(1, 2, "{\"type\":\"history_response\"");
	assert_string_equal(M(1, 3), M(0, 0));
	expect(1, 4, "{\"type\":\"presence\"");
	/* A second valid join is ignored completely. */
	clear();
	join(1, "B2", "b2", T0 + 30);
	assert_int_equal(f[0].n + f[1].n, 0);
}

static void test_bad_join_and_pending(void **state)
{
	in(0, "{\"type\":\"typing\"}", T0);
	in(0, "{\"type\":\"chat\",\"content\":\"x\"}", T0);
	assert_int_equal(f[0].n, 1);
	assert_string_equal(M(0, 0),
	                    "{\"type\":\"error\",\"message\":\"Must join before sending chat\"}");
	in(0, "{\"type\":\"join\",\"name\":\" \",\"id\":\"x\",\"version\":\"1\"}", T0);
	expect(0, 1, "{\"type\":\"error\",\"message\":\"Invalid join:");
	assert_int_equal(f[0].close_code, 4003);
	/* Whitespace-only version is accepted; 51 units is not. */
	in(1, "{\"type\":\"join\",\"name\":\"V\",\"id\":\"v\",\"version\":\"  \"}", T0);
	assert_int_equal(f[1].close_code, 0);
	in(2,
	   "{\"type\":\"join\",\"name\":\"W\",\"id\":\"w\",\"version\":"
	   "\"123456789012345678901234567890123456789012345678901\"}",
	   T0);
	assert_int_equal(f[2].close_code, 4003);
	/* Join timeout only for connections that never sent a join. */
	space_room_join_timeout(room, f[3].c, T0 + 5000);
	assert_int_equal(f[3].close_code, 4001);
	expect(3, 0,
	       "{\"type\":\"error\",\"message\":\"Join timeout: must send join message "
	       "within 5 seconds\"}");
}

static void test_replacement_order(void **state)
{
	join(0, "A", "a1", T0);
	join(1, "B", "b1", T0);
	clear();
	join(2, "A", "a2", T0 + 5);
	assert_int_equal(f[0].close_code, 4002);
	assert_int_equal(f[0].n, 0);
	assert_int_equal(f[1].n, 4);
	expect(1, 0, "{\"type\":\"leave\",\"name\":\"A\",\"id\":\"a1\"");
	expect(1, 1, "{\"type\":\"presence\",\"agents\":[{\"name\":\"B\"");
	expect(1, 2, "{\"type\":\"join\",\"name\":\"A\",\"id\":\"a2\"");
	expect(1, 3, "{\"type\":\"presence\",\"agents\":[{\"name\":\"B\"");
	assert_non_null(strstr(M(1, 3), "\"id\":\"a2\""));
	expect(2, 0, "{\"type\":\"join\",\"name\":\"A\",\"id\":\"a2\"");
	/* The replaced connection's close later is a no-op. */
	clear();
	space_room_conn_closed(room, f[0].c, T0 + 6);
	space_room_flush(room, T0 + 6);
	f[0].c = space_room_conn_new(room, &f[0]);
	assert_int_equal(f[1].n, 0);
	assert_int_equal(space_room_member_count(room), 2);
}

static void test_chat_rules(void **state)
{
	join(0, "A", "a1", T0);
	join(1, "B", "b1", T0);
	clear();
	in(1,
	   "{\"type\":\"chat\",\"name\":\"X\",\"id\":\"x\",\"content\":\"hi\",\"threadId\":7,"
	   "\"addressed\":[\"A\"],\"chain\":2}",
	   T0 + 1);
	assert_string_equal(M(0, 0),
	                    "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b1\","
	                    "\"content\":\"hi\",\"timestamp\":\"2025-01-04T14:13:20.001Z\","
	                    "\"threadId\":7,\"chain\":2}");
	assert_string_equal(M(1, 0), M(0, 0));
	in(1, "{\"type\":\"chat\",\"content\":\"again\"}", T0 + 2999);
	assert_string_equal(M(1, 1), "{\"type\":\"error\",\"message\":\"Rate limited \xE2\x80\x94"
	                             " wait before sending another message\"}");
	in(1, "{\"type\":\"chat\",\"content\":\"   \"}", T0 + 3001);
	expect(1, 2, "{\"type\":\"error\",\"message\":\"Invalid chat: content must be");
	in(1, "{\"type\":\"chat\",\"content\":\"ok\",\"threadId\":\"\",\"chain\":1.5}", T0 + 3001);
	assert_string_equal(M(1, 3),
	                    "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b1\","
	                    "\"content\":\"ok\",\"timestamp\":\"2025-01-04T14:13:23.001Z\"}");
	/* 100,000 units pass, 100,001 do not. */
	char *big = malloc(100100);
	strcpy(big, "{\"type\":\"chat\",\"content\":\"");
	size_t o = strlen(big);
	memset(big + o, 'z', 100001);
	strcpy(big + o + 100001, "\"}");
	in(0, big, T0 + 10);
	expect(0, f[0].n - 1, "{\"type\":\"error\",\"message\":\"Invalid chat: content exceeds");
	memmove(big + o + 100000, big + o + 100001, 3);
	in(0, big, T0 + 10);
	expect(0, f[0].n - 1, "{\"type\":\"chat\",\"name\":\"A\"");
	free(big);
}

static void test_claims(void **state)
{
	join(0, "Alice", "a", T0);
	join(1, "Bob", "b", T0);
	clear();
	const char *claim = "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"o/r#1\"}";
	in(0, claim, T0 + 1);
	expect(0, 0, "{\"type\":\"claim\",\"name\":\"Alice\"");
	expect(1, 0, "{\"type\":\"claim\",\"name\":\"Alice\"");
	in(0, claim, T0 + 2); /* silent renewal */
	assert_int_equal(f[0].n, 1);
	in(1, claim, T0 + 3);
	assert_string_equal(M(1, 1), "{\"type\":\"error\",\"message\":\"Claim conflict \xE2\x80\x94"
	                             " Alice and Bob both claimed o/r#1. Alice claimed first.\"}");
	in(1, "{\"type\":\"claim\",\"action\":5}", T0 + 3);
	assert_string_equal(
	        M(1, 2), "{\"type\":\"error\",\"message\":\"Invalid claim: action and target must "
	                 "be non-empty strings (got action=5, target=undefined)\"}");
	/* Expired (age >= TTL) entries are absent: Bob claims it fresh. */
	in(1, claim, T0 + 2 + 60000);
	expect(0, 1, "{\"type\":\"claim\",\"name\":\"Bob\"");
	/* Released by an action_result from anyone. */
	in(0,
	   "{\"type\":\"action_result\",\"action\":\"create_issue\",\"target\":\"o/r#1\","
	   "\"success\":true,\"link\":5}",
	   T0 + 70000);
	assert_string_equal(
	        M(1, f[1].n - 1),
	        "{\"type\":\"action_result\",\"name\":\"Alice\",\"id\":\"a\",\"action\":"
	        "\"create_issue\",\"target\":\"o/r#1\",\"success\":true,\"timestamp\":"
	        "\"2025-01-04T14:14:30.000Z\"}");
	assert_int_equal(space_room_claim_count(room), 0);
}

/* The optional "since" of a new claim (room.h SPACE_CLAIM_SINCE_MAX_AGE_MS):
 * kept and relayed when it is an ISO-8601 time before now and at most 24 h
 * old, also for a claim made again after its owner left and rejoined;
 * ignored otherwise (no error, the claim's time is now, the broadcast has
 * the usual shape). The TTL counts from the claim, whatever since says. */
static void test_claim_since(void **state)
{
	join(0, "Alice", "a", T0);
	join(1, "Bob", "b", T0);
	clear();
	/* T0 is 2025-01-04T14:13:20.000Z */
	in(0,
	   "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"o/r#1\",\"since\":"
	   "\"2025-01-04T14:03:20.000Z\"}",
	   T0 + 1000);
	assert_string_equal(M(1, 0),
	                    "{\"type\":\"claim\",\"name\":\"Alice\",\"id\":\"a\",\"action\":"
	                    "\"create_issue\",\"target\":\"o/r#1\",\"since\":"
	                    "\"2025-01-04T14:03:20.000Z\",\"timestamp\":"
	                    "\"2025-01-04T14:13:21.000Z\"}");
	/* a renewal is silent, whatever it says */
	in(0,
	   "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"o/r#1\",\"since\":"
	   "\"2025-01-04T14:13:00.000Z\"}",
	   T0 + 2000);
	assert_int_equal(f[1].n, 1);
	/* Alice leaves (the room forgets her claim) and rejoins; her claim
	 * again, with its own time, is a new one and says since when */
	space_room_conn_closed(room, f[0].c, T0 + 3000);
	space_room_flush(room, T0 + 3000);
	f[0].c = space_room_conn_new(room, &f[0]);
	assert_int_equal(space_room_claim_count(room), 0);
	join(0, "Alice", "a", T0 + 4000);
	clear();
	in(0,
	   "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"o/r#1\",\"since\":"
	   "\"2025-01-04T16:03:20+02:00\"}",
	   T0 + 5000);
	assert_string_equal(M(1, 0),
	                    "{\"type\":\"claim\",\"name\":\"Alice\",\"id\":\"a\",\"action\":"
	                    "\"create_issue\",\"target\":\"o/r#1\",\"since\":"
	                    "\"2025-01-04T14:03:20.000Z\",\"timestamp\":"
	                    "\"2025-01-04T14:13:25.000Z\"}");
	assert_int_equal(space_room_claim_count(room), 1);
	/* the TTL counts from the claim, not from since: still Alice's 59 s on */
	in(1, "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"o/r#1\"}",
	   T0 + 5000 + 59999);
	expect(1, 1, "{\"type\":\"error\",\"message\":\"Claim conflict");

	/* ignored: not a string, not ISO-8601, too old; taken as now: now and
	 * any time ahead of it; each claim is new, none an error */
	static const char *const bad[] = {
	        "5",
	        "null",
	        "{\"t\":1}",
	        "\"yesterday\"",
	        "\"2025-01-04\"",
	        "\"2025-01-04T14:13:9Z\"",
	        "\"\"",
	        "\"2025-01-04T14:15:00.001Z\"", /* now + 20.001 s */
	        "\"2025-01-03T14:14:39.999Z\"", /* now - 24 h - 1 ms */
	        "\"2025-01-04T14:14:40.000Z\"", /* now */
	        "\"2025-01-04T14:14:40.001Z\"", /* now + 1 ms */
	};
	const int64_t now = T0 + 80000; /* 2025-01-04T14:14:40.000Z */
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char msg[256], want[256];
		snprintf(msg, sizeof msg,
		         "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"bug-%zu\",\"since\":%"
		         "s}",
		         i, bad[i]);
		int before = f[1].n;
		in(0, msg, now);
		assert_int_equal(f[1].n, before + 1);
		snprintf(want, sizeof want,
		         "{\"type\":\"claim\",\"name\":\"Alice\",\"id\":\"a\",\"action\":\"fix\","
		         "\"target\":\"bug-%zu\",\"timestamp\":\"2025-01-04T14:14:40.000Z\"}",
		         i);
		if (strcmp(M(1, before), want) != 0)
			fail_msg("since %s: %s\nexpected: %s", bad[i], M(1, before), want);
	}
	/* the oldest kept: exactly 24 h */
	in(0,
	   "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"old\",\"since\":"
	   "\"2025-01-03T14:14:40.000Z\"}",
	   now);
	assert_non_null(strstr(M(1, f[1].n - 1), ",\"since\":\"2025-01-03T14:14:40.000Z\","));
	/* the log entries are the usual ones: since is not logged */
	struct space_buf *h = space_store_history(store, 100);
	const char *hist = space_buf_data(h);
	assert_non_null(strstr(hist, "\"type\":\"claim\",\"content\":\"create_issue:o/r#1\"}"));
	assert_null(strstr(hist, "since"));
	space_buf_unref(h);
}

static void test_state_identity_reflection(void **state)
{
	join(0, "A", "a", T0);
	clear();
	in(0, "{\"type\":\"state\",\"state\":\"flying\"}", T0);
	assert_string_equal(M(0, 0),
	                    "{\"type\":\"error\",\"message\":\"Invalid state: must be one of idle, "
	                    "thinking, acting, blocked (got \\\"flying\\\")\"}");
	in(0, "{\"type\":\"state\",\"state\":\"acting\",\"detail\":null}", T0);
	expect(0, 1,
	       "{\"type\":\"state\",\"name\":\"A\",\"id\":\"a\",\"state\":\"acting\","
	       "\"detail\":null,");
	in(0, "{\"type\":\"identity\",\"summary\":null}", T0);
	expect(0, 2, "{\"type\":\"error\",\"message\":\"Invalid identity");
	in(0, "{\"type\":\"identity\",\"summary\":[1]}", T0 + 5);
	expect(0, 3, "{\"type\":\"identity\",\"name\":\"A\",\"id\":\"a\",\"summary\":[1],");
	expect(0, 4, "{\"type\":\"presence\"");
	assert_non_null(strstr(M(0, 4), "\"identity\":[1]"));
	in(0, "{\"type\":\"reflection\",\"summary\":\"\"}", T0);
	expect(0, 5, "{\"type\":\"error\",\"message\":\"Invalid reflection");
}

static void test_disconnect_and_heartbeat(void **state)
{
	join(0, "A", "a", T0);
	join(1, "B", "b", T0);
	in(1, "{\"type\":\"claim\",\"action\":\"x\",\"target\":\"y\"}", T0);
	clear();
	space_room_conn_closed(room, f[1].c, T0 + 1);
	space_room_flush(room, T0 + 1);
	f[1].c = space_room_conn_new(room, &f[1]);
	expect(0, 0, "{\"type\":\"leave\",\"name\":\"B\",\"id\":\"b\"");
	expect(0, 1, "{\"type\":\"presence\",\"agents\":[{\"name\":\"A\"");
	assert_int_equal(space_room_claim_count(room), 0);
	/* A answers nothing: pinged on the first tick, dropped on the next. */
	space_room_heartbeat(room, T0 + 30000);
	assert_int_equal(f[0].pings, 1);
	assert_false(f[0].dropped);
	space_room_heartbeat(room, T0 + 60000);
	assert_true(f[0].dropped);
	assert_int_equal(space_room_member_count(room), 0);
}

static void test_host_addressing(void **state)
{
	join(0, "Marvin", "m", T0);
	join(1, "Bob", "b", T0);
	clear();
	const char *t = "@marvin what do you think, @MARVIN?";
	space_room_host_chat(room, t, strlen(t), T0);
	assert_non_null(strstr(M(0, 0), "\"addressed\":[\"Marvin\",\"Marvin\"]"));
	assert_true(strncmp(M(0, 0), "{\"type\":\"chat\",\"name\":\"host\",\"id\":\"host-m5i",
	                    42) == 0);
	t = "I went bobsledding yesterday";
	space_room_host_chat(room, t, strlen(t), T0);
	assert_null(strstr(M(0, 1), "addressed"));
	t = "Hey Marvin, and bob?";
	space_room_host_chat(room, t, strlen(t), T0);
	assert_non_null(strstr(M(0, 2), "\"addressed\":[\"Marvin\",\"Bob\"]"));
}

/* Every C0 control character and U+007F in chat content, "\u0000"
 * included (valid JSON, relayed by the reference), reaches the other
 * member in JSON.stringify's form; a NUL byte of a host line goes out as
 * "\u0000" too, and a name holding U+0000 is a name like any other. */
static void test_control_characters_relayed(void **state)
{
	join(0, "A", "a", T0);
	join(1, "B", "b", T0);
	clear();
	int64_t t = T0;
	for (unsigned cp = 0; cp <= 0x20; cp++) {
		unsigned c = cp == 0x20 ? 0x7F : cp;
		char msg[96], exp[64];
		snprintf(msg, sizeof msg, "{\"type\":\"chat\",\"content\":\"x\\u%04xy\"}", c);
		t += 10000; /* beyond the chat interval */
		in(0, msg, t);
		assert_int_equal(f[1].n, (int)cp + 1);
		/* JSON.stringify's form, as test_common_strbuf checks it */
		char mid[7] = {0};
		if (!sb_json_escape_byte((unsigned char)c, mid))
			mid[0] = (char)c;
		snprintf(exp, sizeof exp, "\"content\":\"x%sy\"", mid);
		if (!strstr(M(1, cp), exp))
			fail_msg("U+%04X: %s lacks %s", c, M(1, cp), exp);
	}
	clear();
	space_room_host_chat(room, "a\0b\x01", 4, t);
	assert_non_null(strstr(M(0, 0), "\"content\":\"a\\u0000b\\u0001\""));
	clear();
	in(2, "{\"type\":\"join\",\"name\":\"N\\u0000\",\"id\":\"n\\u0000\",\"version\":\"1\"}", t);
	expect(0, 0, "{\"type\":\"join\",\"name\":\"N\\u0000\",\"id\":\"n\\u0000\"");
	in(2, "{\"type\":\"chat\",\"content\":\"\\u0000\"}", t);
	expect(0, 2,
	       "{\"type\":\"chat\",\"name\":\"N\\u0000\",\"id\":\"n\\u0000\",\"content\":"
	       "\"\\u0000\"");
}

/* Several presence broadcasts in one I/O turn: the first goes out at once,
 * the rest become one snapshot at the end of the turn (space/room.h). */
static void test_presence_per_turn(void **state)
{
	join(0, "A", "a", T0);
	clear();
	const char *jb = "{\"type\":\"join\",\"name\":\"B\",\"id\":\"b\",\"version\":\"1\"}";
	const char *jc = "{\"type\":\"join\",\"name\":\"C\",\"id\":\"c\",\"version\":\"1\"}";
	const char *id = "{\"type\":\"identity\",\"summary\":{\"voice\":\"v\"}}";
	in_turn(1, jb, T0 + 1);
	in_turn(2, jc, T0 + 1);
	in_turn(1, id, T0 + 2);
	/* A: join B, presence [A,B], join C, identity B; nothing else yet. */
	assert_int_equal(f[0].n, 4);
	expect(0, 0, "{\"type\":\"join\",\"name\":\"B\"");
	expect(0, 1, "{\"type\":\"presence\"");
	expect(0, 2, "{\"type\":\"join\",\"name\":\"C\"");
	expect(0, 3, "{\"type\":\"identity\",\"name\":\"B\"");
	/* C, a newcomer in the same turn: join, its direct presence, history;
	 * that presence is the turn's newcomer snapshot, whose bytes come at
	 * the end of the turn (room.h). */
	assert_int_equal(f[2].n, 4);
	assert_false(space_buf_ready(f[2].bufs[1]));
	expect(2, 2, "{\"type\":\"history_response\"");
	space_room_flush(room, T0 + 2);
	/* One snapshot with everything, to everyone, at the end of the turn. */
	assert_int_equal(f[0].n, 5);
	expect(0, 4, "{\"type\":\"presence\",\"agents\":[{\"name\":\"A\"");
	assert_non_null(strstr(M(0, 4), "\"name\":\"C\""));
	assert_non_null(strstr(M(0, 4), "\"identity\":{\"voice\":\"v\"}"));
	assert_string_equal(M(2, 1), M(0, 4));
	assert_string_equal(M(2, f[2].n - 1), M(0, 4));
	assert_string_equal(M(1, f[1].n - 1), M(0, 4));
	/* The next turn starts afresh: its first presence is immediate. */
	clear();
	space_room_conn_closed(room, f[2].c, T0 + 3);
	f[2].c = space_room_conn_new(room, &f[2]);
	expect(0, 0, "{\"type\":\"leave\",\"name\":\"C\"");
	expect(0, 1, "{\"type\":\"presence\"");
	assert_null(strstr(M(0, 1), "\"name\":\"C\""));
	space_room_flush(room, T0 + 3);
	assert_int_equal(f[0].n, 2);
}

/* Pacing: after a snapshot of L bytes to M members the next waits L × M /
 * presence_bytes_per_ms; what falls in the wait is one fresh snapshot when
 * it is over. Joins and leaves themselves are never held back. */
static void test_presence_paced(void **state)
{
	paced_room(1, 50); /* each snapshot waits its bytes × members in ms */
	assert_int_equal(space_room_presence_due(room), -1);
	join(0, "A", "a", T0);
	/* A's own join: the snapshot goes at once; the next may follow at
	 * T0 + 50 (its cost is over the maximum wait). */
	assert_int_equal(f[0].n, 4);
	expect(0, 3, "{\"type\":\"presence\"");
	clear();
	join(1, "B", "b", T0 + 10);
	/* A gets B's join at once, no presence yet; B its join, its own
	 * snapshot (the member list before any chat) and its history. */
	assert_int_equal(f[0].n, 1);
	expect(0, 0, "{\"type\":\"join\",\"name\":\"B\"");
	assert_int_equal(f[1].n, 3);
	expect(1, 1, "{\"type\":\"presence\",\"agents\":[{\"name\":\"A\"");
	expect(1, 2, "{\"type\":\"history_response\"");
	assert_int_equal(space_room_presence_due(room), T0 + 50);
	join(2, "C", "c", T0 + 20);
	in(1, "{\"type\":\"chat\",\"content\":\"hi\"}", T0 + 30);
	space_room_conn_closed(room, f[2].c, T0 + 40);
	f[2].c = space_room_conn_new(room, &f[2]);
	space_room_flush(room, T0 + 49);
	assert_int_equal(f[0].n, 4); /* joins of B and C, the chat, C's leave */
	expect(0, 1, "{\"type\":\"join\",\"name\":\"C\"");
	expect(0, 2, "{\"type\":\"chat\",\"name\":\"B\"");
	expect(0, 3, "{\"type\":\"leave\",\"name\":\"C\"");
	/* The wait is over: one snapshot of the room as it is now, to all. */
	space_room_flush(room, T0 + 50);
	assert_int_equal(f[0].n, 5);
	const char *p0 = M(0, 4);
	assert_int_equal(strncmp(p0, "{\"type\":\"presence\"", 18), 0);
	assert_non_null(strstr(p0, "\"name\":\"A\""));
	assert_non_null(strstr(p0, "\"name\":\"B\""));
	assert_null(strstr(p0, "\"name\":\"C\""));
	assert_string_equal(M(1, f[1].n - 1), p0);
	assert_int_equal(space_room_presence_due(room), -1);
	/* A clock that went back: the wait counts as over, never longer. */
	clear();
	join(2, "D", "d", T0 - 3600000);
	expect(0, 1, "{\"type\":\"presence\"");
}

/* While pacing holds presence back, the newcomers of a turn share one
 * snapshot written at the end of the turn — but never one taken after a
 * member left: a member that chats and leaves later in the turn is in the
 * newcomer's snapshot, so its chat never comes from a stranger. */
static void test_newcomer_snapshot_before_leave(void **state)
{
	paced_room(1, 1000);
	join(0, "A", "a", T0);
	join(1, "X", "x", T0 + 1);
	clear();
	join_turn(2, "N", "n", T0 + 2);
	in_turn(1, "{\"type\":\"chat\",\"content\":\"bye\"}", T0 + 2);
	assert_false(space_buf_ready(f[2].bufs[1]));
	space_room_conn_closed(room, f[1].c, T0 + 2);
	f[1].c = space_room_conn_new(room, &f[1]);
	/* X's leave gave N's snapshot its bytes: A, X and N. */
	assert_true(space_buf_ready(f[2].bufs[1]));
	assert_non_null(strstr(M(2, 1), "\"name\":\"X\""));
	assert_non_null(strstr(M(2, 1), "\"name\":\"N\""));
	/* A newcomer after the leave gets a snapshot of its own, without X. */
	join_turn(3, "M", "m", T0 + 2);
	assert_false(space_buf_ready(f[3].bufs[1]));
	space_room_flush(room, T0 + 3);
	assert_null(strstr(M(3, 1), "\"name\":\"X\""));
	assert_non_null(strstr(M(3, 1), "\"name\":\"M\""));
	/* N saw: join(N), its snapshot, history, X's chat, X's leave, join(M). */
	expect(2, 0, "{\"type\":\"join\",\"name\":\"N\"");
	expect(2, 2, "{\"type\":\"history_response\"");
	expect(2, 3, "{\"type\":\"chat\",\"name\":\"X\"");
	expect(2, 4, "{\"type\":\"leave\",\"name\":\"X\"");
	expect(2, 5, "{\"type\":\"join\",\"name\":\"M\"");
}

static void test_shutdown(void **state)
{
	join(0, "A", "a", T0);
	clear();
	space_room_shutdown_notice(room, T0);
	assert_string_equal(M(0, 0), "{\"type\":\"shutdown\",\"reason\":\"Server shutting "
	                             "down\",\"timestamp\":\"2025-01-04T14:13:20.000Z\"}");
	space_room_shutdown_close(room);
	assert_int_equal(f[0].close_code, 1001);
	assert_int_equal(space_room_member_count(room), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_join_sequence, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bad_join_and_pending, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_replacement_order, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_chat_rules, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_claims, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_claim_since, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_state_identity_reflection, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_disconnect_and_heartbeat, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_host_addressing, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_control_characters_relayed, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_presence_per_turn, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_presence_paced, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_newcomer_snapshot_before_leave, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_shutdown, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
