/*
 * The agent-space wire format, client side (adapters/space/wire): parsing
 * every server message type and bad input, building every client message
 * byte for byte (keys in the reference's order, JavaScript escapes), UTF-16
 * lengths, URLs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* after stdarg, stddef, setjmp */

#include "adapters/space/discover.h"
#include "adapters/space/roster.h"
#include "adapters/space/wire.h"
#include "common/json.h"
#include "common/jsonnul.h"
#include "common/xalloc.h"

static struct spc_msg parse_ok(const char *text)
{
	struct spc_msg m;
	struct ga_err err = {{0}};
	if (spc_msg_parse(text, strlen(text), &m, &err) != 0)
		fail_msg("parse failed for %s: %s", text, err.msg);
	return m;
}

static void parse_bad(const char *text, const char *needle)
{
	struct spc_msg m;
	struct ga_err err = {{0}};
	assert_int_equal(spc_msg_parse(text, strlen(text), &m, &err), -1);
	assert_null(m.root);
	if (!strstr(err.msg, needle))
		fail_msg("error for %s was '%s', expected it to mention '%s'", text, err.msg,
		         needle);
	spc_msg_free(&m); /* safe on an empty message */
}

static void test_parse_chat(void **state)
{
	(void)state;
	struct spc_msg m =
	        parse_ok("{\"type\":\"chat\",\"name\":\"Ada\",\"id\":\"ada-1\",\"content\":\"hi "
	                 "\xf0\x9f\x8e\xa8\",\"timestamp\":\"2025-05-14T09:03:27.131Z\","
	                 "\"threadId\":\"t-7\","
	                 "\"chain\":2}");
	assert_int_equal(m.type, SPC_T_CHAT);
	assert_string_equal(m.name, "Ada");
	assert_string_equal(m.id, "ada-1");
	assert_string_equal(m.content, "hi \xf0\x9f\x8e\xa8");
	assert_int_equal(m.time_ms, 1747213407131LL);
	assert_string_equal(m.thread_id->valuestring, "t-7");
	assert_true(m.has_chain);
	assert_int_equal(m.chain, 2);
	assert_null(m.addressed);
	spc_msg_free(&m);

	/* host chat: addressed list; a threadId of 0 or "" is not a thread */
	m = parse_ok(
	        "{\"type\":\"chat\",\"name\":\"host\",\"id\":\"host-m4b7q2zk\",\"content\":\"@ada "
	        "go\",\"timestamp\":\"2025-05-14T09:03:30.002Z\",\"addressed\":[\"Ada\"],"
	        "\"threadId\":0}");
	assert_non_null(m.addressed);
	assert_int_equal(cJSON_GetArraySize(m.addressed), 1);
	assert_null(m.thread_id);
	assert_false(m.has_chain);
	spc_msg_free(&m);

	/* threadId relayed verbatim when truthy, even a number */
	m = parse_ok(
	        "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":\"x\",\"threadId\":7}");
	assert_true(cJSON_IsNumber(m.thread_id));
	assert_int_equal(m.time_ms, 0); /* no timestamp */
	spc_msg_free(&m);

	/* a chain that is not a non-negative integer is ignored */
	m = parse_ok(
	        "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":\"x\",\"chain\":1.5}");
	assert_false(m.has_chain);
	spc_msg_free(&m);
	m = parse_ok(
	        "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":\"x\",\"chain\":-1}");
	assert_false(m.has_chain);
	spc_msg_free(&m);
}

static void test_parse_room_messages(void **state)
{
	(void)state;
	struct spc_msg m =
	        parse_ok("{\"type\":\"join\",\"name\":\"Ada\",\"id\":\"a\",\"version\":\"1\","
	                 "\"capabilities\":[\"social\"]}");
	assert_int_equal(m.type, SPC_T_JOIN);
	assert_string_equal(m.version, "1");
	assert_int_equal(cJSON_GetArraySize(m.capabilities), 1);
	spc_msg_free(&m);

	m = parse_ok("{\"type\":\"join\",\"name\":\"Ada\",\"id\":\"a\",\"version\":\"1\"}");
	assert_null(m.capabilities);
	spc_msg_free(&m);

	m = parse_ok("{\"type\":\"presence\",\"agents\":[]}");
	assert_int_equal(m.type, SPC_T_PRESENCE);
	assert_int_equal(cJSON_GetArraySize(m.agents), 0);
	spc_msg_free(&m);

	m = parse_ok("{\"type\":\"history_response\",\"entries\":[{\"type\":\"join\"}]}");
	assert_int_equal(m.type, SPC_T_HISTORY);
	spc_msg_free(&m);

	m = parse_ok("{\"type\":\"identity\",\"name\":\"A\",\"id\":\"a\",\"summary\":[1]}");
	assert_int_equal(m.type, SPC_T_IDENTITY); /* arrays pass, §2.2 */
	spc_msg_free(&m);

	m = parse_ok("{\"type\":\"claim\",\"name\":\"A\",\"id\":\"a\",\"action\":\"x\",\"target\":"
	             "\"y\"}");
	assert_string_equal(m.action, "x");
	assert_string_equal(m.target, "y");
	spc_msg_free(&m);

	m = parse_ok("{\"type\":\"action_result\",\"name\":\"A\",\"id\":\"a\",\"action\":\"x\","
	             "\"target\":\"y\",\"success\":false,\"error\":\"boom\"}");
	assert_false(m.success);
	assert_string_equal(m.error, "boom");
	assert_null(m.link);
	spc_msg_free(&m);

	m = parse_ok("{\"type\":\"state\",\"name\":\"A\",\"id\":\"a\",\"state\":\"acting\","
	             "\"detail\":42}");
	assert_string_equal(m.state, "acting");
	assert_true(cJSON_IsNumber(m.detail));
	spc_msg_free(&m);

	m = parse_ok("{\"type\":\"error\",\"message\":\"Rate limited\"}");
	assert_string_equal(m.message, "Rate limited");
	spc_msg_free(&m);

	m = parse_ok(
	        "{\"type\":\"shutdown\",\"reason\":\"Server shutting down\",\"timestamp\":\"x\"}");
	assert_int_equal(m.type, SPC_T_SHUTDOWN);
	assert_string_equal(m.reason, "Server shutting down");
	assert_int_equal(m.time_ms, 0); /* a bad timestamp is just unknown */
	spc_msg_free(&m);

	/* unknown and absent types are not errors: ignored by the caller */
	m = parse_ok("{\"type\":\"unknown_type\",\"data\":1}");
	assert_int_equal(m.type, SPC_T_UNKNOWN);
	spc_msg_free(&m);
	m = parse_ok("{}");
	assert_int_equal(m.type, SPC_T_UNKNOWN);
	spc_msg_free(&m);
	m = parse_ok("{\"type\":5}");
	assert_int_equal(m.type, SPC_T_UNKNOWN);
	spc_msg_free(&m);
}

static void test_parse_bad_input(void **state)
{
	(void)state;
	parse_bad("", "not JSON");
	parse_bad("{\"type\":\"chat\"", "not JSON");                           /* truncated */
	parse_bad("{\"type\":\"chat\",\"content\":\"\xc3\x28\"}", "not JSON"); /* invalid UTF-8 */
	parse_bad("<html><body>502 Bad Gateway</body></html>", "not JSON");
	parse_bad("[1,2]", "not a JSON object");
	parse_bad("null", "not a JSON object");
	parse_bad("\"chat\"", "not a JSON object");
	parse_bad("{\"type\":\"chat\",\"name\":\"A\",\"id\":\"a\"}", "content");
	parse_bad("{\"type\":\"chat\",\"name\":\"A\",\"id\":\"a\",\"content\":5}", "content");
	parse_bad("{\"type\":\"chat\",\"name\":7,\"id\":\"a\",\"content\":\"x\"}", "name");
	parse_bad("{\"type\":\"join\",\"name\":\"A\"}", "id");
	parse_bad("{\"type\":\"presence\",\"agents\":{}}", "agents");
	parse_bad("{\"type\":\"history_response\"}", "entries");
	parse_bad("{\"type\":\"identity\",\"name\":\"A\",\"id\":\"a\",\"summary\":null}",
	          "summary");
	parse_bad("{\"type\":\"claim\",\"name\":\"A\",\"id\":\"a\",\"action\":\"x\"}", "target");
	parse_bad("{\"type\":\"action_result\",\"name\":\"A\",\"id\":\"a\",\"action\":\"x\","
	          "\"target\":\"y\",\"success\":\"yes\"}",
	          "success");
	parse_bad("{\"type\":\"state\",\"name\":\"A\",\"id\":\"a\"}", "state");
	parse_bad("{\"type\":\"error\"}", "message");

	/* deep nesting is refused rather than recursed into */
	char deep[600];
	size_t n = 0;
	n += (size_t)snprintf(deep, sizeof deep, "{\"type\":\"chat\",\"x\":");
	for (int i = 0; i < 200; i++)
		deep[n++] = '[';
	deep[n] = '\0';
	parse_bad(deep, "not JSON");
}

/* "\u00xx" as JSON.stringify (and so the server) writes U+00xx. */
static const char *stringify_form(unsigned c, char *buf, size_t n)
{
	switch (c) {
	case 0x08:
		return "\\b";
	case 0x09:
		return "\\t";
	case 0x0A:
		return "\\n";
	case 0x0C:
		return "\\f";
	case 0x0D:
		return "\\r";
	default:
		snprintf(buf, n, "\\u%04x", c);
		return buf;
	}
}

/* Every control character U+0000..U+001F in chat content, as the server
 * relays it: parsed (U+0000 included: valid JSON, no longer "not JSON"),
 * given to the user as the exact bytes with their length (spc_text_dup),
 * measured as JS does, and written back by the builder in the same form. */
static void test_control_characters(void **state)
{
	(void)state;
	struct spc_who w = {.name = "Ada", .id = "ada-1"};
	for (unsigned c = 0; c < 0x20; c++) {
		char esc[8], msg[160], lit[32];
		const char *form = stringify_form(c, esc, sizeof esc);
		snprintf(lit, sizeof lit, "\"content\":\"x%sy%s\"", form, form);
		snprintf(msg, sizeof msg,
		         "{\"type\":\"chat\",\"name\":\"Bo\",\"id\":\"bo-1\",%s,"
		         "\"timestamp\":\"2025-05-14T09:03:27.131Z\"}",
		         lit);
		struct spc_msg m = parse_ok(msg);
		assert_int_equal(m.type, SPC_T_CHAT);
		assert_int_equal(strlen(m.content), 4);
		assert_int_equal(json_has_nul_mark(m.content), c == 0);
		assert_int_equal(spc_js_length(m.content, strlen(m.content)), 4);

		size_t len = 99;
		char *text = spc_text_dup(m.content, &len);
		assert_int_equal(len, 4);
		const char want[5] = {'x', (char)c, 'y', (char)c, '\0'};
		assert_memory_equal(text, want, 5);
		free(text);

		char *out = spc_build_chat(&w, m.content, NULL, -1, 0);
		assert_non_null(out);
		if (!strstr(out, lit))
			fail_msg("U+%04X: built %s, expected %s in it", c, out, lit);
		free(out);
		spc_msg_free(&m);
	}
}

/* U+0000 anywhere else: names, ids, thread ids, presence, history. The
 * strings stay distinct from their cut-short forms, and what is sent back
 * (a thread id) arrives as it came. */
/* Chats handed up by the roster, their content copied. */
struct nul_chats {
	char *content[8];
	size_t n;
};

static void keep_content(void *ud, const struct spc_chat *c)
{
	struct nul_chats *nc = ud;
	if (nc->n < 8)
		nc->content[nc->n++] = xstrdup(c->content);
}

static void test_nul_outside_content(void **state)
{
	(void)state;
	struct spc_msg m =
	        parse_ok("{\"type\":\"chat\",\"name\":\"Ada\\u0000x\",\"id\":\"a\\u0000\","
	                 "\"content\":\"\\u0000\",\"threadId\":\"t\\u0000\"}");
	assert_string_equal(m.name, "Ada\xFFx");
	assert_string_equal(m.id, "a\xFF");
	assert_string_equal(m.content, "\xFF");
	assert_string_equal(m.thread_id->valuestring, "t\xFF");
	size_t len;
	char *name = spc_text_dup(m.name, &len);
	assert_int_equal(len, 5);
	assert_memory_equal(name, "Ada\0x", 6);
	free(name);
	struct spc_who w = {.name = "Me", .id = "me"};
	char *out = spc_build_chat(&w, "re", m.thread_id->valuestring, -1, 0);
	assert_non_null(strstr(out, "\"threadId\":\"t\\u0000\""));
	free(out);
	out = spc_build_claim(&w, "a\xFF", "t", 0, 0);
	assert_non_null(strstr(out, "\"action\":\"a\\u0000\""));
	free(out);

	/* The roster hands up all three chats, as they were parsed: "\u0000"
	 * is not an empty string and "a\u0000" is not "a" (the digests that
	 * keep them apart see the marker byte). */
	struct spc_roster r;
	spc_roster_init(&r);
	struct nul_chats nc = {0};
	spc_roster_apply(&r, &m, 0, keep_content, &nc);
	spc_msg_free(&m);
	m = parse_ok("{\"type\":\"history_response\",\"entries\":["
	             "{\"type\":\"chat\",\"agentName\":\"Ada\",\"agentId\":\"a\",\"content\":\"a\","
	             "\"timestamp\":\"2025-05-14T09:03:27.131Z\"},"
	             "{\"type\":\"chat\",\"agentName\":\"Ada\",\"agentId\":\"a\",\"content\":"
	             "\"a\\u0000\",\"timestamp\":\"2025-05-14T09:03:27.131Z\"},"
	             "{\"type\":\"chat\",\"agentName\":\"Ada\",\"agentId\":\"a\",\"content\":"
	             "\"a\\u0000\",\"timestamp\":\"2025-05-14T09:03:27.131Z\"}]}");
	spc_roster_apply(&r, &m, 0, keep_content, &nc);
	spc_msg_free(&m);
	assert_int_equal(nc.n, 3); /* the second "a\u0000" is the same chat */
	assert_string_equal(nc.content[0], "\xFF");
	assert_string_equal(nc.content[1], "a");
	assert_string_equal(nc.content[2], "a\xFF");
	size_t tl;
	char *t = spc_text_dup(nc.content[2], &tl);
	assert_int_equal(tl, 2);
	assert_memory_equal(t, "a\0", 3);
	free(t);
	for (size_t i = 0; i < nc.n; i++)
		free(nc.content[i]);
	spc_roster_free(&r);

	m = parse_ok("{\"type\":\"presence\",\"agents\":[{\"name\":\"\\u0000\",\"id\":\"z\"}]}");
	assert_string_equal(cJSON_GetArrayItem(m.agents, 0)->child->valuestring, "\xFF");
	spc_msg_free(&m);

	/* Still strict: a NUL escape does not make broken JSON acceptable,
	 * and a raw 0xFF (which would look like the marker) is invalid UTF-8;
	 * an escaped backslash before u0000 is text. */
	parse_bad("{\"type\":\"chat\",\"content\":\"\\u0000\",}", "not JSON");
	parse_bad("{\"type\":\"chat\",\"content\":\"\xFF\"}", "not JSON");
	m = parse_ok("{\"type\":\"chat\",\"name\":\"A\",\"id\":\"a\",\"content\":\"\\\\u0000\"}");
	assert_string_equal(m.content, "\\u0000");
	spc_msg_free(&m);
}

static void test_build_messages(void **state)
{
	(void)state;
	struct spc_who w = {.name = "Ada \"A\"", .id = "ada-1"};
	int64_t t = 1747213407000LL; /* 2025-05-14T09:03:27.000Z */
	const char *caps[] = {"social"};

	char *s = spc_build_join(&w, "0.1.0", caps, 1);
	assert_string_equal(s, "{\"type\":\"join\",\"name\":\"Ada \\\"A\\\"\",\"id\":\"ada-1\","
	                       "\"version\":\"0.1.0\",\"capabilities\":[\"social\"]}");
	free(s);
	s = spc_build_join(&w, "0.1.0", NULL, 0);
	assert_string_equal(s, "{\"type\":\"join\",\"name\":\"Ada \\\"A\\\"\",\"id\":\"ada-1\","
	                       "\"version\":\"0.1.0\"}");
	free(s);
	s = spc_build_join(&w, "0.1.0", caps, 0); /* an empty list is a list */
	assert_non_null(strstr(s, "\"capabilities\":[]}"));
	free(s);

	w.name = "Ada";
	s = spc_build_chat(&w, "line1\nline2\t\x01 caf\xc3\xa9 / \xe2\x80\xa8", "t-7", 3, t);
	assert_string_equal(s,
	                    "{\"type\":\"chat\",\"name\":\"Ada\",\"id\":\"ada-1\",\"content\":"
	                    "\"line1\\nline2\\t\\u0001 caf\xc3\xa9 / \xe2\x80\xa8\",\"timestamp\":"
	                    "\"2025-05-14T09:03:27.000Z\",\"threadId\":\"t-7\",\"chain\":3}");
	free(s);
	s = spc_build_chat(&w, "hi", NULL, -1, t);
	assert_string_equal(s, "{\"type\":\"chat\",\"name\":\"Ada\",\"id\":\"ada-1\",\"content\":"
	                       "\"hi\",\"timestamp\":\"2025-05-14T09:03:27.000Z\"}");
	free(s);

	s = spc_build_typing(&w, t);
	assert_string_equal(s, "{\"type\":\"typing\",\"name\":\"Ada\",\"id\":\"ada-1\","
	                       "\"timestamp\":\"2025-05-14T09:03:27.000Z\"}");
	free(s);
	s = spc_build_claim(&w, "create_issue", "acme/widgets#Add", 0, t);
	assert_string_equal(s, "{\"type\":\"claim\",\"name\":\"Ada\",\"id\":\"ada-1\",\"action\":"
	                       "\"create_issue\",\"target\":\"acme/widgets#Add\",\"timestamp\":"
	                       "\"2025-05-14T09:03:27.000Z\"}");
	free(s);
	/* a renewal says since when it is held */
	s = spc_build_claim(&w, "create_issue", "acme/widgets#Add", t - 61000, t);
	assert_string_equal(s, "{\"type\":\"claim\",\"name\":\"Ada\",\"id\":\"ada-1\",\"action\":"
	                       "\"create_issue\",\"target\":\"acme/widgets#Add\",\"since\":"
	                       "\"2025-05-14T09:02:26.000Z\",\"timestamp\":"
	                       "\"2025-05-14T09:03:27.000Z\"}");
	free(s);
	s = spc_build_state(&w, "acting", "fulfilling x", t);
	assert_string_equal(s, "{\"type\":\"state\",\"name\":\"Ada\",\"id\":\"ada-1\",\"state\":"
	                       "\"acting\",\"detail\":\"fulfilling x\",\"timestamp\":"
	                       "\"2025-05-14T09:03:27.000Z\"}");
	free(s);
	s = spc_build_state(&w, "idle", NULL, t);
	assert_null(strstr(s, "detail"));
	free(s);
	s = spc_build_action_result(&w, "create_issue", "x", true, "https://e/1", NULL, t);
	assert_string_equal(s,
	                    "{\"type\":\"action_result\",\"name\":\"Ada\",\"id\":\"ada-1\","
	                    "\"action\":\"create_issue\",\"target\":\"x\",\"success\":true,"
	                    "\"link\":\"https://e/1\",\"timestamp\":\"2025-05-14T09:03:27.000Z\"}");
	free(s);
	s = spc_build_action_result(&w, "a", "x", false, NULL, "rate limited", t);
	assert_non_null(strstr(s, "\"success\":false,\"error\":\"rate limited\",\"timestamp\""));
	free(s);
	s = spc_build_reflection(&w, "Short replies land better.", t);
	assert_non_null(strstr(s, "\"summary\":\"Short replies land better.\""));
	free(s);
	s = spc_build_identity(&w, "{\"coreValues\":[]}", t);
	assert_string_equal(s,
	                    "{\"type\":\"identity\",\"name\":\"Ada\",\"id\":\"ada-1\",\"summary\":"
	                    "{\"coreValues\":[]},\"timestamp\":\"2025-05-14T09:03:27.000Z\"}");
	free(s);

	/* every built message parses back as JSON */
	char *big = xmalloc(400001);
	memset(big, 'x', 400000);
	big[400000] = '\0';
	s = spc_build_chat(&w, big, NULL, -1, t);
	assert_non_null(s);
	struct ga_err err = {{0}};
	cJSON *v = json_parse(s, strlen(s), &err);
	assert_non_null(v);
	cJSON_Delete(v);
	free(s);
	/* past the build limit (1 MiB) the builder refuses rather than cut */
	big = xrealloc(big, 1100001);
	memset(big, 'y', 1100000);
	big[1100000] = '\0';
	assert_null(spc_build_chat(&w, big, NULL, -1, t));
	free(big);
}

static void test_identity_json(void **state)
{
	(void)state;
	struct spc_identity id = {0};
	char *s = spc_identity_json(&id);
	assert_string_equal(s,
	                    "{\"coreValues\":[],\"currentInterests\":[],\"voice\":\"unique voice\","
	                    "\"expertise\":[],\"recentWork\":\"No recent completed work\"}");
	free(s);
	id.core_values[id.n_core_values++] = xstrdup("curiosity");
	id.core_values[id.n_core_values++] = xstrdup("care");
	id.interests[id.n_interests++] = xstrdup("type systems");
	id.voice = xstrdup("Plain and warm");
	id.expertise[id.n_expertise++] = xstrdup("C");
	id.recent_work = xstrdup("No recent completed work");
	id.soul_essence = xstrdup("Builds small tools.");
	s = spc_identity_json(&id);
	/* the example of space-protocol.md §2.4 */
	assert_string_equal(s,
	                    "{\"coreValues\":[\"curiosity\",\"care\"],\"currentInterests\":"
	                    "[\"type systems\"],\"voice\":\"Plain and warm\",\"expertise\":[\"C\"],"
	                    "\"recentWork\":\"No recent completed work\",\"soulEssence\":"
	                    "\"Builds small tools.\"}");
	free(s);
	spc_identity_free(&id);
	spc_identity_free(NULL);
}

static void test_js_length(void **state)
{
	(void)state;
	assert_int_equal(spc_js_length("", 0), 0);
	assert_int_equal(spc_js_length("abc", 3), 3);
	assert_int_equal(spc_js_length("caf\xc3\xa9", 5), 4);
	assert_int_equal(spc_js_length("\xf0\x9f\x8e\xa8", 4), 2); /* surrogate pair */
	assert_int_equal(spc_js_length("\xff\xfe", 2), 2);         /* invalid bytes: 1 each */
	/* prefixes never split a pair */
	const char *s = "a\xf0\x9f\x8e\xa8"
	                "b";
	assert_int_equal(spc_js_prefix(s, strlen(s), 0), 0);
	assert_int_equal(spc_js_prefix(s, strlen(s), 1), 1);
	assert_int_equal(spc_js_prefix(s, strlen(s), 2), 1); /* the pair needs 2 more */
	assert_int_equal(spc_js_prefix(s, strlen(s), 3), 5);
	assert_int_equal(spc_js_prefix(s, strlen(s), 100), 6);
}

static void test_url(void **state)
{
	(void)state;
	struct spc_url u;
	struct ga_err err = {{0}};
	assert_int_equal(spc_url_parse("ws://localhost:7777", &u, &err), 0);
	assert_false(u.tls);
	assert_string_equal(u.host, "localhost");
	assert_int_equal(u.port, 7777);
	assert_string_equal(u.path, "/");
	assert_int_equal(spc_url_parse("WSS://room.example/space?x=1", &u, &err), 0);
	assert_true(u.tls);
	assert_int_equal(u.port, 443);
	assert_string_equal(u.path, "/space?x=1");
	assert_int_equal(spc_url_parse("ws://[fd00::2]:9000", &u, &err), 0);
	assert_string_equal(u.host, "fd00::2");
	assert_int_equal(u.port, 9000);
	assert_int_equal(spc_url_parse("ws://h?q", &u, &err), 0);
	assert_string_equal(u.path, "/?q");
	assert_int_equal(u.port, 80);

	const char *bad[] = {"http://x:1",   "ws://",        "ws://:80",     "ws://h:0",
	                     "ws://h:65536", "ws://h:12ab",  "ws://[::1",    "ws://h x:1",
	                     "ws://u@h:1",   "ws://h:1/a b", "ws://h:1junk", NULL};
	for (int i = 0; bad[i]; i++) {
		err.msg[0] = '\0';
		if (spc_url_parse(bad[i], &u, &err) != -1)
			fail_msg("'%s' was accepted", bad[i]);
		assert_non_null(strstr(err.msg, bad[i][0] == 'h' ? "http" : "ws"));
	}
	assert_int_equal(spc_url_parse(NULL, &u, &err), -1);
}

/* The URL made from an mDNS answer (adapters/space/discover.c): the resolved address
 * first (§9 item 24), brackets for IPv6, the host name for link-local. */
static void test_discovery_url(void **state)
{
	(void)state;
	char url[SPC_URL_MAX];
	assert_string_equal(spc_disc_url_for("box.local", "192.0.2.7", 7777, url),
	                    "ws://192.0.2.7:7777");
	assert_string_equal(spc_disc_url_for("box.local", "fd00::2", 7777, url),
	                    "ws://[fd00::2]:7777");
	assert_string_equal(spc_disc_url_for("box.local", "fe80::1", 7777, url),
	                    "ws://box.local:7777");
	assert_string_equal(spc_disc_url_for("box.local", "", 9, url), "ws://box.local:9");
	assert_string_equal(spc_disc_url_for("", NULL, 9, url), "ws://localhost:9");
	struct spc_url u;
	assert_int_equal(spc_url_parse(spc_disc_url_for("h", "fd00::2", 80, url), &u, NULL), 0);
	assert_string_equal(u.host, "fd00::2");
	assert_string_equal(spc_disc_source_name(SPC_DISC_MDNS), "mDNS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_chat),
	        cmocka_unit_test(test_parse_room_messages),
	        cmocka_unit_test(test_parse_bad_input),
	        cmocka_unit_test(test_control_characters),
	        cmocka_unit_test(test_nul_outside_content),
	        cmocka_unit_test(test_build_messages),
	        cmocka_unit_test(test_identity_json),
	        cmocka_unit_test(test_js_length),
	        cmocka_unit_test(test_url),
	        cmocka_unit_test(test_discovery_url),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
