/*
 * Black-box conformance: the extra observable behaviours of
 * space-protocol.md §8.4, the C server's improvements over the reference
 * (healthz, chain, client limit, claim expiry, host input on a pipe), and
 * the command line.
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/integration/space/harness.h"

static int one = 1, two = 2;

static struct ws_client *join_as(struct space *s, const char *name)
{
	char id[64];
	snprintf(id, sizeof id, "%s-id", name);
	return h_join(s, name, id);
}

static void msleep(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0)
		;
}

static const char *type_of(const cJSON *m)
{
	return m ? h_str(m, "type") : "(nothing)";
}

/* The next message, which must be of `type`. */
static cJSON *next_is(struct space *s, struct ws_client *c, const char *type)
{
	cJSON *m = h_next(s, c, H_TIMEOUT_MS);
	if (!m || strcmp(type_of(m), type) != 0)
		fail_msg("%s: expected next message '%s', got '%s'", c->label, type, type_of(m));
	return m;
}

/* ---- §8.4: join timeout, invalid join, replacement, join sequence ------------------ */

/* Join timeout: error text + close 4001 "Join timeout"; messages before it
 * (chat, typing, invalid JSON, identity) do not reset it. */
static void e01_join_timeout(void **state)
{
	const char *env[] = {"SPACE_JOIN_TIMEOUT_MS=1000", NULL};
	struct space *s = space_start(env);
	int64_t t0 = ws_now_ms(); /* before the server can start its timer */
	struct ws_client *c = h_connect(s);
	int code = -1;
	/* Keep talking (never a join) until the server gives up on us. */
	for (int i = 0; i < 100 && code == -1; i++) {
		ws_send_text(c, i % 2 ? "{\"type\":\"typing\"}" : "nonsense{");
		ws_send_text(c, "{\"type\":\"identity\",\"summary\":{}}");
		cJSON *m;
		while ((m = h_next(s, c, 100)) != NULL) {
			const char *msg = h_str(m, "message");
			assert_string_equal(type_of(m), "error");
			if (strncmp(msg, "Join timeout", 12) == 0) {
				/* The 5-second text belongs to the default timeout. */
				code = h_wait_close(c, H_TIMEOUT_MS);
				break;
			}
			assert_string_equal(msg, "Invalid JSON");
		}
		if (c->got_close || c->eof)
			code = h_wait_close(c, 0);
	}
	assert_int_equal(code, 4001);
	assert_string_equal(c->close_reason, "Join timeout");
	assert_true(ws_now_ms() - t0 >= 900); /* not before the timeout */
	space_pass(s);
}

/* The default timeout's exact error text. */
static void e02_join_timeout_text(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	cJSON *e = h_expect_error(s, c, "Join timeout");
	assert_string_equal(h_str(e, "message"),
	                    "Join timeout: must send join message within 5 seconds");
	assert_int_equal(h_wait_close(c, H_TIMEOUT_MS), 4001);
	space_pass(s);
}

/* Invalid join closes with 4003 "Invalid join message" after the exact error. */
static void e03_invalid_join(void **state)
{
	struct space *s = space_start(NULL);
	static const char *bad[] = {
	        "{\"type\":\"join\"}",
	        "{\"type\":\"join\",\"name\":\"   \",\"id\":\"x\",\"version\":\"1\"}",
	        "{\"type\":\"join\",\"name\":\"A\",\"id\":\"\\t\\n\",\"version\":\"1\"}",
	        "{\"type\":\"join\",\"name\":\"\xe3\x80\x80\",\"id\":\"x\",\"version\":\"1\"}",
	        "{\"type\":\"join\",\"name\":5,\"id\":\"x\",\"version\":\"1\"}",
	        "{\"type\":\"join\",\"name\":\"A\",\"id\":\"x\",\"version\":1}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct ws_client *c = h_connect(s);
		h_send(c, "%s", bad[i]);
		cJSON *e = h_expect_error(s, c, "Invalid join");
		assert_string_equal(
		        h_str(e, "message"),
		        "Invalid join: name (1-100 chars), id (1-100 chars), and version "
		        "(1-50 chars) are required");
		assert_int_equal(h_wait_close(c, H_TIMEOUT_MS), 4003);
		assert_string_equal(c->close_reason, "Invalid join message");
	}
	/* Limits count UTF-16 units: 100 × U+1F600 is 200 units (too long), 100 × 'é' is fine. */
	char *emoji = h_repeat("\xf0\x9f\x98\x80", 100);
	struct ws_client *c = h_connect(s);
	h_send(c, "{\"type\":\"join\",\"name\":\"%s\",\"id\":\"x\",\"version\":\"1\"}", emoji);
	h_expect_error(s, c, "Invalid join");
	free(emoji);
	char *eacute = h_repeat("\xc3\xa9", 100);
	c = h_connect(s);
	h_send(c, "{\"type\":\"join\",\"name\":\"%s\",\"id\":\"x\",\"version\":\"1\"}", eacute);
	h_expect(s, c, "history_response");
	free(eacute);
	space_pass(s);
}

/* Whitespace-only version is accepted; whitespace-only name/id are not (above). */
static void e04_whitespace_version(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	h_send(c, "{\"type\":\"join\",\"name\":\"Spacey\",\"id\":\"s1\",\"version\":\"   \"}");
	cJSON *p = h_expect(s, c, "presence");
	assert_string_equal(
	        h_str(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "agents"), 0), "version"), "   ");
	space_pass(s);
}

/* Replacement: old connection closed 4002; third parties see leave(old id) →
 * presence → join(new) → presence; the newcomer does not see the leave. */
static void e05_replacement_order(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *b = join_as(s, "B");
	struct ws_client *a1 = h_join(s, "A", "old-id");
	next_is(s, b, "join");
	next_is(s, b, "presence");
	struct ws_client *a2 = h_connect(s);
	snprintf(a2->label, sizeof a2->label, "A(new)");
	h_send(a2, "{\"type\":\"join\",\"name\":\"A\",\"id\":\"new-id\",\"version\":\"1.0.0\"}");
	char names[128];
	cJSON *m = next_is(s, b, "leave");
	assert_string_equal(h_str(m, "name"), "A");
	assert_string_equal(h_str(m, "id"), "old-id");
	m = next_is(s, b, "presence");
	assert_string_equal(h_presence_names(m, names, sizeof names), "B");
	m = next_is(s, b, "join");
	assert_string_equal(h_str(m, "id"), "new-id");
	m = next_is(s, b, "presence");
	assert_string_equal(h_presence_names(m, names, sizeof names), "B,A");
	/* Newcomer: join(self) → presence → history → presence, no leave. */
	m = next_is(s, a2, "join");
	assert_string_equal(h_str(m, "id"), "new-id");
	next_is(s, a2, "presence");
	cJSON *h = next_is(s, a2, "history_response");
	m = next_is(s, a2, "presence");
	assert_string_equal(h_presence_names(m, names, sizeof names), "B,A");
	/* The replaced connection's leave precedes the newcomer's join in history. */
	cJSON *entries = cJSON_GetObjectItem(h, "entries");
	int n = cJSON_GetArraySize(entries);
	assert_string_equal(h_str(cJSON_GetArrayItem(entries, n - 2), "type"), "leave");
	assert_string_equal(h_str(cJSON_GetArrayItem(entries, n - 2), "agentId"), "old-id");
	assert_string_equal(h_str(cJSON_GetArrayItem(entries, n - 1), "type"), "join");
	assert_int_equal(h_wait_close(a1, H_TIMEOUT_MS), 4002);
	assert_string_equal(a1->close_reason, "Replaced by new connection");
	h_expect_none(s, b, NULL, H_QUIET_MS); /* the old connection's close is a no-op */
	space_pass(s);
}

/* Full join sequence for a newcomer with a cached workspace_state (§3.3):
 * join(self) → presence → history_response → workspace_state×N (original
 * reporter and timestamp) → presence; existing members: join → presence.
 * The join broadcast has no timestamp; extra fields and non-string
 * capabilities are dropped. */
static void e06_join_sequence(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = join_as(s, "A");
	h_send(a, "{\"type\":\"workspace_state\",\"workspace\":\"acme/widgets\",\"totalTasks\":9,"
	          "\"completedTasks\":3}");
	cJSON *ws = h_expect(s, a, "workspace_state");
	h_assert_keys(ws,
	              "type,name,id,workspace,planNumber,totalTasks,completedTasks,blockedTasks,"
	              "inProgressTasks,timestamp");
	assert_int_equal(cJSON_GetObjectItem(ws, "planNumber")->valueint, 0);
	assert_int_equal(cJSON_GetObjectItem(ws, "blockedTasks")->valueint, 0);
	assert_int_equal(cJSON_GetObjectItem(ws, "inProgressTasks")->valueint, 0);
	struct ws_client *b = h_connect(s);
	snprintf(b->label, sizeof b->label, "B");
	h_send(b,
	       "{\"type\":\"join\",\"name\":\"B\",\"id\":\"b1\",\"version\":\"2.0\",\"extra\":true,"
	       "\"capabilities\":[\"social\",5,\"github\",null,\"\"],\"timestamp\":\"junk\"}");
	cJSON *j = next_is(s, b, "join");
	h_assert_keys(j, "type,name,id,version,capabilities");
	const char *caps = h_print(s, cJSON_GetObjectItem(j, "capabilities"));
	assert_string_equal(caps, "[\"social\",\"github\",\"\"]");
	next_is(s, b, "presence");
	next_is(s, b, "history_response");
	cJSON *replay = next_is(s, b, "workspace_state");
	const char *t1 = h_print(s, ws), *t2 = h_print(s, replay);
	assert_string_equal(t1, t2); /* exactly as broadcast, original timestamp */
	cJSON *p = next_is(s, b, "presence");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "agents")), 2);
	h_expect_none(s, b, NULL, H_QUIET_MS);
	/* Existing member: join → presence. */
	j = next_is(s, a, "join");
	assert_string_equal(h_str(j, "name"), "B");
	next_is(s, a, "presence");
	/* Join without capabilities: no capabilities key anywhere. */
	struct ws_client *c = h_connect(s);
	h_send(c, "{\"type\":\"join\",\"name\":\"C\",\"id\":\"c1\",\"version\":\"1\","
	          "\"capabilities\":\"social\"}");
	j = next_is(s, c, "join");
	h_assert_keys(j, "type,name,id,version");
	/* The cache entry goes when its reporter disconnects. */
	h_close(s, a);
	h_expect_where(s, b, "leave", h_pred_name, "A");
	struct ws_client *d = h_connect(s);
	h_send(d, "{\"type\":\"join\",\"name\":\"D\",\"id\":\"d1\",\"version\":\"1\"}");
	next_is(s, d, "join");
	next_is(s, d, "presence");
	next_is(s, d, "history_response");
	next_is(s, d, "presence");
	space_pass(s);
}

/* Chat echo to the sender; the server overrides name/id/timestamp; client
 * `addressed` is dropped; the chat is logged unmodified. */
static void e07_chat_override(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = join_as(s, "A");
	h_send(a, "{\"type\":\"chat\",\"name\":\"Mallory\",\"id\":\"evil\",\"timestamp\":\"1999-01-"
	          "01T00:00:00.000Z\","
	          "\"content\":\"mine \\\"quoted\\\" "
	          "\\u00e9\\n/\",\"addressed\":[\"B\"],\"extra\":1}");
	cJSON *m = h_expect(s, a, "chat");
	assert_string_equal(h_str(m, "name"), "A");
	assert_string_equal(h_str(m, "id"), "A-id");
	assert_string_not_equal(h_str(m, "timestamp"), "1999-01-01T00:00:00.000Z");
	h_assert_timestamp(h_str(m, "timestamp"));
	h_assert_keys(m, "type,name,id,content,timestamp");
	assert_string_equal(h_str(m, "content"), "mine \"quoted\" \xc3\xa9\n/");
	h_wait_log_entry(s, "chat", "A", "mine \"quoted\" \xc3\xa9\n/");
	space_pass(s);
}

/* Second valid join on a joined connection: no reply at all, no rename. A
 * bad second join: error, close 4003, leave to the others. */
static void e08_second_join(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *b = join_as(s, "B");
	h_expect_where(s, obs, "presence", h_pred_nagents, &two);
	h_send(b, "{\"type\":\"join\",\"name\":\"Renamed\",\"id\":\"r\",\"version\":\"1\"}");
	h_expect_none(s, b, NULL, H_QUIET_MS);
	h_expect_none(s, obs, NULL, 50);
	h_send(b, "{\"type\":\"join\",\"name\":\"\"}");
	h_expect_error(s, b, "Invalid join");
	assert_int_equal(h_wait_close(b, H_TIMEOUT_MS), 4003);
	cJSON *l = next_is(s, obs, "leave");
	assert_string_equal(h_str(l, "name"), "B");
	cJSON *p = next_is(s, obs, "presence");
	char names[64];
	assert_string_equal(h_presence_names(p, names, sizeof names), "Observer");
	space_pass(s);
}

/* `null` → Invalid JSON; 5, [], "x", {} → nothing; a BOM makes text invalid. */
static void e09_json_values(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	h_send(c, "null");
	cJSON *e = h_expect_error(s, c, "Invalid JSON");
	assert_string_equal(h_str(e, "message"), "Invalid JSON");
	h_send(c, "5");
	h_send(c, "[]");
	h_send(c, "\"x\"");
	h_send(c, "{}");
	h_send(c, " \t\n{\"type\":\"typing\"}\r\n");
	h_expect_none(s, c, NULL, H_QUIET_MS);
	h_send(c, "\xef\xbb\xbf{\"type\":\"typing\"}");
	h_expect_error(s, c, "Invalid JSON");
	/* Duplicate keys: the last one wins. */
	struct ws_client *m = join_as(s, "Dup");
	h_send(m, "{\"type\":\"chat\",\"content\":\"first\",\"content\":\"last\"}");
	cJSON *chat = h_expect(s, m, "chat");
	assert_string_equal(h_str(chat, "content"), "last");
	space_pass(s);
}

/* A pending connection's typing/identity/claim/state/action_result/
 * reflection/workspace_state are ignored silently, and not broadcast. */
static void e10_pending_ignored(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = join_as(s, "Observer");
	struct ws_client *c = h_connect(s);
	h_send(c, "{\"type\":\"typing\"}");
	h_send(c, "{\"type\":\"identity\",\"summary\":null}");
	h_send(c, "{\"type\":\"identity\",\"summary\":{}}");
	h_send(c, "{\"type\":\"claim\",\"action\":\"\",\"target\":\"\"}");
	h_send(c, "{\"type\":\"claim\",\"action\":\"a\",\"target\":\"t\"}");
	h_send(c, "{\"type\":\"state\",\"state\":\"flying\"}");
	h_send(c,
	       "{\"type\":\"action_result\",\"action\":\"a\",\"target\":\"t\",\"success\":true}");
	h_send(c, "{\"type\":\"reflection\",\"summary\":\"\"}");
	h_send(c, "{\"type\":\"workspace_state\",\"workspace\":\"w\",\"totalTasks\":1,"
	          "\"completedTasks\":0}");
	h_expect_none(s, c, NULL, H_QUIET_MS);
	h_expect_none(s, obs, NULL, 50);
	space_pass(s);
}

/* ---- §8.4: content limits and message normalisation --------------------------------- */

/* Exactly 100,000 UTF-16 units accepted; 100,001 rejected; limits count
 * units, not bytes (50,000 × U+1F600 = 100,000 units; 'é' is one unit). */
static void e11_chat_length_limit(void **state)
{
	struct space *s = space_start(NULL);
	struct {
		const char *unit;
		size_t count;
		const char *suffix;
		bool ok;
	} cases[] = {
	        {"a", 100000, "", true},
	        {"a", 100001, "", false},
	        {"\xf0\x9f\x98\x80", 50000, "", true},
	        {"\xf0\x9f\x98\x80", 50000, "a", false},
	        {"\xc3\xa9", 100000, "", true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char name[32];
		snprintf(name, sizeof name, "Len%zu", i);
		struct ws_client *c = join_as(s, name);
		char *body = h_repeat(cases[i].unit, cases[i].count);
		h_send(c, "{\"type\":\"chat\",\"content\":\"%s%s\"}", body, cases[i].suffix);
		if (cases[i].ok) {
			cJSON *m = h_expect(s, c, "chat");
			assert_string_equal(h_str(m, "content"), body);
		} else {
			cJSON *e = h_expect_error(s, c, "Invalid chat");
			assert_string_equal(h_str(e, "message"),
			                    "Invalid chat: content exceeds 100KB limit");
		}
		free(body);
		h_close(s, c);
	}
	/* Blank and non-string content. */
	struct ws_client *c = join_as(s, "Blank");
	h_send(c, "{\"type\":\"chat\",\"content\":\" \\t\\n\\u00a0\\u3000\\ufeff\"}");
	h_expect_error(s, c, "Invalid chat: content must be a non-empty string");
	h_send(c, "{\"type\":\"chat\",\"content\":42}");
	h_expect_error(s, c, "Invalid chat: content must be a non-empty string");
	h_send(c, "{\"type\":\"chat\"}");
	h_expect_error(s, c, "Invalid chat: content must be a non-empty string");
	/* Validation errors do not consume the rate-limit window. */
	h_send(c, "{\"type\":\"chat\",\"content\":\"after errors\"}");
	h_expect_where(s, c, "chat", h_pred_content, "after errors");
	space_pass(s);
}

/* Rate limit: the window starts at the last accepted chat; a rate-limited chat
 * is not logged and does not restart it; a new connection has a fresh window. */
static void e12_rate_limit_window(void **state)
{
	/* 2 s: the second chat is sent right after the first is echoed, well
	 * inside the window even on a loaded (sanitizer) run */
	const char *env[] = {"SPACE_CHAT_INTERVAL_MS=2000", NULL};
	struct space *s = space_start(env);
	struct ws_client *c = join_as(s, "Chatty");
	h_send(c, "{\"type\":\"chat\",\"content\":\"one\"}");
	h_expect_where(s, c, "chat", h_pred_content, "one");
	h_send(c, "{\"type\":\"chat\",\"content\":\"two\"}");
	h_expect_error(s, c, "Rate limited");
	msleep(2100); /* wait out the 2 s window */
	h_send(c, "{\"type\":\"chat\",\"content\":\"three\"}");
	h_expect_where(s, c, "chat", h_pred_content, "three");
	assert_int_equal(h_count_log_entries(s, "chat", "Chatty", "two"), 0);
	/* Typing, claims and other messages are not rate-limited. */
	h_send(c, "{\"type\":\"typing\"}");
	h_expect(s, c, "typing");
	h_send(c, "{\"type\":\"typing\"}");
	h_expect(s, c, "typing");
	assert_int_equal(h_count_log_entries(s, "typing", NULL, NULL), 0);
	space_pass(s);
}

/* Identity: array summary accepted; null/missing/string rejected; extra
 * keys kept verbatim; logged as compact JSON. */
static void e13_identity_shapes(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = join_as(s, "Ida");
	h_send(c, "{\"type\":\"identity\",\"summary\":[1,\"two\"]}");
	cJSON *m = h_expect(s, c, "identity");
	const char *t = h_print(s, cJSON_GetObjectItem(m, "summary"));
	assert_string_equal(t, "[1,\"two\"]");
	h_send(c, "{\"type\":\"identity\",\"summary\":null}");
	h_expect_error(s, c, "Invalid identity: summary must be an object");
	h_send(c, "{\"type\":\"identity\"}");
	h_expect_error(s, c, "Invalid identity");
	h_send(c, "{\"type\":\"identity\",\"summary\":{\"voice\":\"warm\",\"custom\":{\"k\":[true]}"
	          "}}");
	m = h_expect(s, c, "identity");
	t = h_print(s, cJSON_GetObjectItem(m, "summary"));
	assert_string_equal(t, "{\"voice\":\"warm\",\"custom\":{\"k\":[true]}}");
	h_wait_log_entry(s, "identity", "Ida", "{\"voice\":\"warm\",\"custom\":{\"k\":[true]}}");
	space_pass(s);
}

/* State: numeric and null detail relayed as-is; string detail cut to 1,000
 * UTF-16 units at a code-point boundary (§9.7); full detail in the log. */
static void e14_state_detail(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = join_as(s, "Stater");
	h_send(c, "{\"type\":\"state\",\"state\":\"acting\",\"detail\":42}");
	cJSON *m = h_expect(s, c, "state");
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(m, "detail")));
	assert_int_equal(cJSON_GetObjectItem(m, "detail")->valueint, 42);
	h_send(c, "{\"type\":\"state\",\"state\":\"blocked\",\"detail\":null}");
	m = h_expect(s, c, "state");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(m, "detail")));
	h_assert_keys(m, "type,name,id,state,detail,timestamp");
	char *long_detail = h_repeat("d", 1500);
	h_send(c, "{\"type\":\"state\",\"state\":\"thinking\",\"detail\":\"%s\"}", long_detail);
	m = h_expect(s, c, "state");
	assert_int_equal(strlen(h_str(m, "detail")), 1000);
	char want[1600];
	snprintf(want, sizeof want, "thinking: %s", long_detail);
	h_wait_log_entry(s, "state", "Stater", want);
	free(long_detail);
	/* 999 units then a surrogate pair: the pair must not be split. */
	char *a999 = h_repeat("a", 999);
	h_send(c, "{\"type\":\"state\",\"state\":\"idle\",\"detail\":\"%s\xf0\x9f\x98\x80zz\"}",
	       a999);
	m = h_expect(s, c, "state"); /* h_next fails on a lone surrogate (invalid JSON) */
	assert_string_equal(h_str(m, "detail"), a999);
	free(a999);
	h_send(c, "{\"type\":\"state\",\"state\":\"idle\"}");
	h_wait_log_entry(s, "state", "Stater", "idle");
	h_wait_log_entry(s, "state", "Stater", "acting: 42");
	space_pass(s);
}

/* action_result: non-string link omitted from the broadcast (kept in the
 * log), error relayed, success false; reflection cut to 5,000 units. */
static void e15_action_result_and_reflection(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = join_as(s, "Actor");
	h_send(c, "{\"type\":\"action_result\",\"action\":\"create_issue\",\"target\":\"acme/w#x\","
	          "\"success\":false,\"link\":5,\"error\":\"rate limited by GitHub\"}");
	cJSON *m = h_expect(s, c, "action_result");
	h_assert_keys(m, "type,name,id,action,target,success,error,timestamp");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(m, "success")));
	assert_string_equal(h_str(m, "error"), "rate limited by GitHub");
	h_wait_log_entry(s, "action_result", "Actor",
	                 "{\"action\":\"create_issue\",\"target\":\"acme/w#x\",\"success\":false,"
	                 "\"link\":5,\"error\":\"rate limited by GitHub\"}");
	char *big = h_repeat("r", 6000);
	h_send(c, "{\"type\":\"reflection\",\"summary\":\"%s\"}", big);
	m = h_expect(s, c, "reflection");
	assert_int_equal(strlen(h_str(m, "summary")), 5000);
	h_wait_log_entry(s, "reflection", "Actor", big);
	free(big);
	/* workspace_state log content uses the short key names with raw values. */
	h_send(c,
	       "{\"type\":\"workspace_state\",\"workspace\":\"acme/widgets\",\"planNumber\":4,"
	       "\"totalTasks\":9,\"completedTasks\":3,\"blockedTasks\":1,\"inProgressTasks\":2}");
	h_expect(s, c, "workspace_state");
	h_wait_log_entry(s, "workspace_state", "Actor",
	                 "{\"workspace\":\"acme/widgets\",\"plan\":4,\"total\":9,\"completed\":3,"
	                 "\"blocked\":1,\"inProgress\":2}");
	space_pass(s);
}

/* Claims: released by the owner's disconnect; an expired claim (shortened
 * TTL) can be taken by another member; §9.8: the same member's re-claim after
 * expiry is a fresh, broadcast claim. */
static void e16_claim_lifecycle(void **state)
{
	const char *env[] = {"SPACE_CLAIM_TTL_MS=300", NULL};
	struct space *s = space_start(env);
	struct ws_client *a = join_as(s, "A");
	struct ws_client *b = join_as(s, "B");
	const char *claim = "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"repo#1\"}";
	h_send(a, "%s", claim);
	h_expect(s, b, "claim");
	/* B may take it once it has expired: retry until it is broadcast. */
	int64_t deadline = ws_now_ms() + H_TIMEOUT_MS;
	bool taken = false;
	while (!taken && ws_now_ms() < deadline) {
		h_send(b, "%s", claim);
		cJSON *m;
		while ((m = h_next(s, b, 200)) != NULL) {
			if (strcmp(type_of(m), "claim") == 0 &&
			    strcmp(h_str(m, "name"), "B") == 0) {
				taken = true;
				break;
			}
			if (strcmp(type_of(m), "error") == 0) {
				assert_non_null(strstr(h_str(m, "message"), "Claim conflict"));
				msleep(50);
				break;
			}
		}
	}
	assert_true(taken);
	/* Released on the owner's disconnect: C claims B's target at once. */
	const char *claim2 = "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"repo#2\"}";
	h_send(b, "%s", claim2);
	h_expect_where(s, a, "claim", h_pred_name, "B");
	h_close(s, b);
	h_expect_where(s, a, "leave", h_pred_name, "B");
	struct ws_client *c = join_as(s, "C");
	h_send(c, "%s", claim2);
	h_expect_where(s, a, "claim", h_pred_name, "C");
	space_pass(s);
}

/* §9.8 (recommended fix): a member's own re-claim after expiry is a fresh,
 * broadcast claim, not a silent renewal. */
static void e16b_reclaim_after_expiry(void **state)
{
	const char *env[] = {"SPACE_CLAIM_TTL_MS=300", NULL};
	struct space *s = space_start(env);
	struct ws_client *a = join_as(s, "A");
	const char *claim = "{\"type\":\"claim\",\"action\":\"fix\",\"target\":\"repo#1\"}";
	h_send(a, "%s", claim);
	h_expect(s, a, "claim");
	msleep(400); /* past the 300 ms TTL */
	h_send(a, "%s", claim);
	h_expect(s, a, "claim");
	assert_int_equal(h_count_log_entries(s, "claim", "A", "fix:repo#1"), 2);
	space_pass(s);
}

/* Typing is relayed to everyone including the sender and never logged. */
static void e17_typing(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = join_as(s, "A");
	struct ws_client *b = join_as(s, "B");
	h_send(a, "{\"type\":\"typing\",\"name\":\"fake\"}");
	cJSON *m = h_expect(s, b, "typing");
	h_assert_keys(m, "type,name,id,timestamp");
	assert_string_equal(h_str(m, "name"), "A");
	h_expect(s, a, "typing");
	assert_int_equal(h_count_log_entries(s, "typing", NULL, NULL), 0);
	space_pass(s);
}

/* ---- §8.4: heartbeat, shutdown, HTTP ---------------------------------------------- */

/* Heartbeat (shortened): a member that never answers pings is dropped
 * abruptly (leave to the others); one that answers stays. Mute joins
 * first: Good answers pings only while the test reads it, so it joins
 * last and is read from then on (a 1 s tick leaves room for a loaded run). */
static void e18_heartbeat(void **state)
{
	const char *env[] = {"SPACE_HEARTBEAT_MS=1000", NULL};
	struct space *s = space_start(env);
	struct ws_client *mute = join_as(s, "Mute");
	mute->auto_pong = 0;
	struct ws_client *good = join_as(s, "Good");
	/* The mute member is dropped within a few ticks; keep Good reading. */
	h_expect_where(s, good, "leave", h_pred_name, "Mute");
	int code = h_wait_close(mute, H_TIMEOUT_MS);
	assert_int_not_equal(code, -1);
	assert_true(mute->pings_received >= 1);
	/* Good answered every ping and stays through several more ticks. */
	int64_t deadline = ws_now_ms() + H_TIMEOUT_MS;
	int pings0 = good->pings_received;
	while (good->pings_received < pings0 + 3 && ws_now_ms() < deadline)
		h_expect_none(s, good, "leave", 100);
	assert_true(good->pings_received >= pings0 + 3);
	assert_false(good->got_close || good->eof);
	h_wait_log_entry(s, "leave", "Mute", "");
	space_pass(s);
}

/* §3.14: the server's pings carry an empty payload [observed on the
 * reference]. Cosmetic for clients, but part of the observed wire. */
static void e18b_ping_payload(void **state)
{
	const char *env[] = {"SPACE_HEARTBEAT_MS=200", NULL};
	struct space *s = space_start(env);
	struct ws_client *c = join_as(s, "Pinged");
	int64_t deadline = ws_now_ms() + H_TIMEOUT_MS;
	while (c->pings_received == 0 && ws_now_ms() < deadline)
		h_expect_none(s, c, "leave", 50);
	assert_true(c->pings_received >= 1);
	if (c->last_ping_len != 0)
		fail_msg("server ping payload is %zu bytes; the reference sends empty pings",
		         c->last_ping_len);
	space_pass(s);
}

/* Shutdown: shutdown message, close 1001 after the grace period, no leave
 * logged or broadcast, exit 0. */
static void e19_shutdown(void **state)
{
	const char *env[] = {"SPACE_SHUTDOWN_GRACE_MS=500", NULL};
	struct space *s = space_start(env);
	struct ws_client *a = join_as(s, "A");
	struct ws_client *b = join_as(s, "B");
	int64_t t0 = ws_now_ms();
	kill(s->pid, SIGTERM);
	kill(s->pid, SIGTERM); /* further triggers are ignored */
	h_expect(s, a, "shutdown");
	cJSON *m;
	while ((m = h_next(s, b, H_TIMEOUT_MS)) != NULL)
		assert_string_not_equal(type_of(m), "leave");
	assert_true(b->got_close);
	assert_int_equal(b->close_code, 1001);
	assert_int_equal(h_wait_close(a, H_TIMEOUT_MS), 1001);
	assert_true(ws_now_ms() - t0 >= 400); /* not before the grace period */
	assert_int_equal(space_wait_exit(s, H_TIMEOUT_MS), 0);
	assert_int_equal(s->exit_status, 0);
	assert_int_equal(h_count_log_entries(s, "leave", NULL, NULL), 0);
	space_pass(s);
}

/* HTTP without upgrade → 426 "Upgrade Required" (text/plain); any path and
 * query string is accepted for the upgrade. */
static void e20_http(void **state)
{
	struct space *s = space_start(NULL);
	char *resp = NULL;
	int st = h_http(s, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", &resp);
	assert_int_equal(st, 426);
	assert_non_null(strcasestr(resp, "content-type: text/plain"));
	assert_non_null(strstr(resp, "\r\n\r\nUpgrade Required"));
	free(resp);
	struct ws_client *c = h_connect_ex(s, "/anything?x=1", NULL, 0, &st);
	assert_non_null(c);
	h_send(c, "{\"type\":\"join\",\"name\":\"Pathy\",\"id\":\"p\",\"version\":\"1\"}");
	h_expect(s, c, "history_response");
	space_pass(s);
}

/* §1.4: an offered sub-protocol is accepted (the first offered value). */
static void e21_subprotocol(void **state)
{
	struct space *s = space_start(NULL);
	int st = 0;
	struct ws_client *c =
	        h_connect_ex(s, "/", "Sec-WebSocket-Protocol: chat-v1, other\r\n", 0, &st);
	if (!c)
		fail_msg("handshake offering a sub-protocol failed (HTTP status %d)", st);
	assert_non_null(strcasestr(c->http_head, "sec-websocket-protocol: chat-v1"));
	h_send(c, "{\"type\":\"join\",\"name\":\"Proto\",\"id\":\"p\",\"version\":\"1\"}");
	h_expect(s, c, "history_response");
	space_pass(s);
}

/* ---- beyond the reference ------------------------------------------------------------ */

/* GET /healthz → 200 JSON {name, agents, uptime}. */
static void e22_healthz(void **state)
{
	struct space *s = space_start(NULL);
	join_as(s, "A");
	join_as(s, "B");
	h_connect(s); /* pending: not an agent */
	char *resp = NULL;
	int st = h_http(s, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", &resp);
	assert_int_equal(st, 200);
	assert_non_null(strcasestr(resp, "content-type: application/json"));
	char *body = strstr(resp, "\r\n\r\n");
	assert_non_null(body);
	cJSON *j = h_parse(s, body + 4);
	assert_string_equal(h_str(j, "name"), "space-test");
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "agents")));
	assert_int_equal(cJSON_GetObjectItem(j, "agents")->valueint, 2);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "uptime")));
	assert_true(cJSON_GetObjectItem(j, "uptime")->valuedouble >= 0);
	free(resp);
	space_pass(s);
}

/* An optional integer `chain` on chat is relayed. */
static void e23_chain(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = join_as(s, "A");
	struct ws_client *b = join_as(s, "B");
	h_send(a, "{\"type\":\"chat\",\"content\":\"reply\",\"chain\":3}");
	cJSON *m = h_expect(s, b, "chat");
	cJSON *ch = cJSON_GetObjectItem(m, "chain");
	assert_true(cJSON_IsNumber(ch));
	assert_int_equal(ch->valueint, 3);
	/* A non-integer chain is not relayed as such. */
	h_send(b, "{\"type\":\"chat\",\"content\":\"odd\",\"chain\":\"7\"}");
	m = h_expect(s, a, "chat");
	assert_false(cJSON_IsString(cJSON_GetObjectItem(m, "chain")));
	/* A chat without chain has none. */
	struct ws_client *c = join_as(s, "C");
	h_send(c, "{\"type\":\"chat\",\"content\":\"plain\"}");
	m = h_expect_where(s, a, "chat", h_pred_content, "plain");
	assert_null(cJSON_GetObjectItem(m, "chain"));
	space_pass(s);
}

/* More than SPACE_MAX_CLIENTS connections (joined or not) are refused
 * before the upgrade; a freed slot can be used again. */
static void e24_max_clients(void **state)
{
	const char *env[] = {"SPACE_MAX_CLIENTS=3", NULL};
	struct space *s = space_start(env);
	struct ws_client *a = join_as(s, "A");
	struct ws_client *p1 = h_connect(s);
	h_connect(s);
	int st = 0;
	struct ws_client *x = h_connect_ex(s, "/", NULL, 0, &st);
	if (x)
		fail_msg("a 4th connection was upgraded with SPACE_MAX_CLIENTS=3");
	assert_int_not_equal(st, 101);
	h_drop(s, p1);
	int64_t deadline = ws_now_ms() + H_TIMEOUT_MS;
	while (!x && ws_now_ms() < deadline) {
		x = h_connect_ex(s, "/", NULL, 0, &st);
		if (!x)
			msleep(50);
	}
	assert_non_null(x);
	/* The room kept working throughout. */
	h_send(a, "{\"type\":\"chat\",\"content\":\"ok\"}");
	h_expect(s, a, "chat");
	space_pass(s);
}

/* The default connection bound (8,192) is more than a low hard open-file
 * limit holds: the server admits what fits, says so, and a client beyond
 * that still gets the clear 503 rather than a connection that is never
 * answered. 140 descriptors hold 12 connections (server.c: the TCP slack
 * and the reserve). */
static void e24b_max_clients_fit_fd_limit(void **state)
{
	if (access("/usr/bin/prlimit", X_OK) != 0) {
		print_message("SKIPPED: /usr/bin/prlimit (util-linux) is missing\n");
		skip();
	}
	struct space *s = space_start_nofile(NULL, 140);
	assert_true(space_wait_log(s, "fewer admitted", H_TIMEOUT_MS));
	assert_true(space_wait_log(s, "admitted=12", H_TIMEOUT_MS));
	struct ws_client *a = join_as(s, "A");
	for (int i = 1; i < 12; i++)
		h_connect(s);
	char *resp = NULL;
	int st = h_http(s,
	                "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
	                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	                "Sec-WebSocket-Version: 13\r\n\r\n",
	                &resp);
	assert_int_equal(st, 503);
	assert_non_null(strstr(resp, "agent-space is full (SPACE_MAX_CLIENTS)"));
	free(resp);
	h_send(a, "{\"type\":\"chat\",\"content\":\"still here\"}");
	h_expect_where(s, a, "chat", h_pred_content, "still here");
	space_pass(s);
}

/* Host input on a pipe: @mentions (duplicates kept), trimming, empty lines
 * ignored, /who, content cut to 100,000 units, EOF does not stop the server. */
static void e25_host_input(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *ada = join_as(s, "Ada");
	join_as(s, "Bob");
	space_host(s, "   ");
	space_host(s, "");
	space_host(s, "  @ada @Ada and bob  ");
	cJSON *m = h_expect(s, ada, "chat");
	assert_string_equal(h_str(m, "content"), "@ada @Ada and bob");
	const char *t = h_print(s, cJSON_GetObjectItem(m, "addressed"));
	assert_string_equal(t, "[\"Ada\",\"Ada\",\"Bob\"]");
	const char *id = h_str(m, "id");
	assert_true(strncmp(id, "host-", 5) == 0 && strlen(id) > 5);
	for (const char *p = id + 5; *p; p++)
		assert_true((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z'));
	/* /who lists the members on the operator's output. */
	size_t before = space_log_size(s);
	space_host(s, "/who");
	assert_true(space_wait_log_from(s, before, "Ada", H_TIMEOUT_MS));
	assert_true(space_wait_log_from(s, before, "Bob", H_TIMEOUT_MS));
	h_expect_none(s, ada, "chat", H_QUIET_MS); /* not sent into the room */
	/* Long host text is cut to 100,000 units. */
	char *big = h_repeat("h", 100100);
	space_host(s, big);
	free(big);
	m = h_expect(s, ada, "chat");
	assert_int_equal(strlen(h_str(m, "content")), 100000);
	/* EOF on stdin does not stop the server. */
	space_host_eof(s);
	h_expect_none(s, ada, NULL, H_QUIET_MS);
	assert_true(space_alive(s));
	join_as(s, "AfterEof");
	space_pass(s);
}

/* Host `/quit` shuts down: shutdown message, grace, close 1001, exit 0. */
static void e26_host_quit(void **state)
{
	const char *env[] = {"SPACE_SHUTDOWN_GRACE_MS=300", NULL};
	struct space *s = space_start(env);
	struct ws_client *a = join_as(s, "A");
	space_host(s, "/quit");
	next_is(s, a, "shutdown");
	assert_int_equal(h_wait_close(a, H_TIMEOUT_MS), 1001);
	assert_int_equal(space_wait_exit(s, H_TIMEOUT_MS), 0);
	assert_int_equal(s->exit_status, 0);
	space_pass(s);
}

/* §3.16: `exit` / `quit` in any case also start the shutdown. */
static void e27_host_exit_word(void **state)
{
	const char *env[] = {"SPACE_SHUTDOWN_GRACE_MS=300", NULL};
	struct space *s = space_start(env);
	struct ws_client *a = join_as(s, "A");
	space_host(s, "  QuIt ");
	next_is(s, a, "shutdown");
	assert_int_equal(h_wait_close(a, H_TIMEOUT_MS), 1001);
	assert_int_equal(space_wait_exit(s, H_TIMEOUT_MS), 0);
	space_pass(s);
}

/* The presence after a chat carries the refreshed lastSeen, and joinedAt
 * matches the join entry's timestamp. */
static void e28_presence_fields(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = h_connect(s);
	h_send(a, "{\"type\":\"join\",\"name\":\"A\",\"id\":\"a\",\"version\":\"1\","
	          "\"capabilities\":[]}");
	cJSON *p = h_expect(s, a, "presence");
	cJSON *ag = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "agents"), 0);
	h_assert_keys(ag, "name,id,version,joinedAt,lastSeen,capabilities");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(ag, "capabilities")), 0);
	cJSON *h = h_expect(s, a, "history_response");
	cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(h, "entries"), 0);
	assert_string_equal(h_str(e, "timestamp"), h_str(ag, "joinedAt"));
	assert_string_equal(h_str(ag, "joinedAt"), h_str(ag, "lastSeen"));
	h_expect(s, a, "presence");
	h_send(a, "{\"type\":\"identity\",\"summary\":{\"voice\":\"v\"}}");
	cJSON *idm = h_expect(s, a, "identity");
	p = h_expect(s, a, "presence");
	ag = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "agents"), 0);
	h_assert_keys(ag, "name,id,version,joinedAt,lastSeen,identity,capabilities");
	/* ISO timestamps order lexicographically. */
	assert_true(strcmp(h_str(ag, "lastSeen"), h_str(ag, "joinedAt")) >= 0);
	assert_true(strcmp(h_str(ag, "lastSeen"), h_str(idm, "timestamp")) <= 0);
	(void)one;
	space_pass(s);
}

/* ---- command line --------------------------------------------------------------------- */

static int run_binary(const char *arg, char **out)
{
	const char *bd = getenv("GA_BUILD_DIR");
	char bin[512];
	snprintf(bin, sizeof bin, "%s/agent-space", bd && *bd ? bd : ".");
	const char *override = getenv("SPACE_BIN");
	if (override && *override)
		snprintf(bin, sizeof bin, "%s", override);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		int devnull = open("/dev/null", 0);
		dup2(devnull, 0);
		setenv("SPACE_PORT", "0", 1);
		setenv("SPACE_BIND", "127.0.0.1", 1);
		execl(bin, bin, arg, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	int64_t deadline = ws_now_ms() + H_TIMEOUT_MS;
	for (;;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		int64_t left = deadline - ws_now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t r = read(pfd[0], buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n + 1 >= cap)
			break;
	}
	buf[n] = '\0';
	close(pfd[0]);
	int st = 0;
	int64_t wdl = ws_now_ms() + H_TIMEOUT_MS;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (ws_now_ms() > wdl) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		msleep(10);
	}
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void e29_command_line(void **state)
{
	char *out = NULL;
	assert_int_equal(run_binary("--help", &out), 0);
	assert_non_null(strstr(out, "SPACE_PORT"));
	free(out);
	assert_int_equal(run_binary("--version", &out), 0);
	assert_true(strlen(out) > 0);
	free(out);
	assert_int_equal(run_binary("--no-such-flag", &out), 64);
	free(out);
}

#define T(f) cmocka_unit_test_teardown(f, space_teardown)

/* SPACE_SHOW_CHAT: the room's chats reach the host's stdout when it is on
 * (whatever stdout is: here a pipe, as in `agent-space | tee room.log`);
 * with the default (auto) and neither stdout nor stdin a terminal — the
 * harness's pipes — they do not. */
static void e30_show_chat(void **state)
{
	for (int on = 0; on < 2; on++) {
		const char *env[] = {on ? "SPACE_SHOW_CHAT=on" : "SPACE_SHOW_CHAT=auto", NULL};
		struct space *s = space_start(env);
		struct ws_client *a = join_as(s, "Ada");
		h_send(a, "{\"type\":\"chat\",\"content\":\"hello through the pipe\"}");
		h_expect(s, a, "chat");
		h_wait_log_entry(s, "chat", "Ada", "hello through the pipe");
		if (on) {
			assert_true(space_wait_log(s, "Ada: hello through the pipe", H_TIMEOUT_MS));
			assert_true(space_wait_log(s, ">> Ada joined", H_TIMEOUT_MS));
		} else {
			char *out = space_read_log(s);
			assert_null(strstr(out, "Ada: hello through the pipe"));
			free(out);
		}
		space_pass(s);
		assert_int_equal(space_stop(s), 0);
	}
}

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        T(e01_join_timeout),
	        T(e02_join_timeout_text),
	        T(e03_invalid_join),
	        T(e04_whitespace_version),
	        T(e05_replacement_order),
	        T(e06_join_sequence),
	        T(e07_chat_override),
	        T(e08_second_join),
	        T(e09_json_values),
	        T(e10_pending_ignored),
	        T(e11_chat_length_limit),
	        T(e12_rate_limit_window),
	        T(e13_identity_shapes),
	        T(e14_state_detail),
	        T(e15_action_result_and_reflection),
	        T(e16_claim_lifecycle),
	        T(e16b_reclaim_after_expiry),
	        T(e17_typing),
	        T(e18_heartbeat),
	        T(e18b_ping_payload),
	        T(e19_shutdown),
	        T(e20_http),
	        T(e21_subprotocol),
	        T(e22_healthz),
	        T(e23_chain),
	        T(e24_max_clients),
	        T(e24b_max_clients_fit_fd_limit),
	        T(e25_host_input),
	        T(e26_host_quit),
	        T(e27_host_exit_word),
	        T(e28_presence_fields),
	        cmocka_unit_test(e29_command_line),
	        T(e30_show_chat),
	};
	return cmocka_run_group_tests_name("space conformance: extras (spec 8.4 and beyond)", tests,
	                                   NULL, NULL);
}
