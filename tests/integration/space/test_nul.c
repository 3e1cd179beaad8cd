/*
 * Control characters in chat content through the real agent-space:
 * every U+0000–U+001F and U+007F sent by one member (as the JSON escapes a
 * client writes, "\u0000" included — valid JSON the reference relays) must
 * reach another member as exactly the same code points, in JSON.stringify's
 * form, and the log and the history replay (live, and read back from the
 * log after a restart) must keep them. The same for lone UTF-16 surrogate
 * escapes. Messages are compared as raw text: the test's cJSON, like the
 * server's, cannot hold a NUL or a lone surrogate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/space/harness.h"

#define NCASES 33 /* U+0000..U+001F and U+007F */

/* Many chats in a row from one member: no rate limit. */
static const char *const no_rate[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};

static unsigned case_cp(int i)
{
	return i < 32 ? (unsigned)i : 0x7F;
}

/* The content as the test sends it: "<cp>" written as \u00xx escapes
 * around the character, e.g. x\u0000y. */
static void sent_literal(unsigned cp, char *out, size_t n)
{
	snprintf(out, n, "\"content\":\"c%02x:x\\u%04xy\"", cp, cp);
}

/* The content as JSON.stringify writes it (space-protocol.md §1.1): the
 * two-letter escapes for \b \t \n \f \r, \u00xx (lowercase) for the other
 * C0 controls, U+007F as the raw byte. */
static void expected_literal(unsigned cp, char *out, size_t n)
{
	const char *esc = NULL;
	switch (cp) {
	case 0x08:
		esc = "\\b";
		break;
	case 0x09:
		esc = "\\t";
		break;
	case 0x0A:
		esc = "\\n";
		break;
	case 0x0C:
		esc = "\\f";
		break;
	case 0x0D:
		esc = "\\r";
		break;
	default:
		break;
	}
	char mid[8];
	if (esc)
		snprintf(mid, sizeof mid, "%s", esc);
	else if (cp < 0x20)
		snprintf(mid, sizeof mid, "\\u%04x", cp);
	else
		snprintf(mid, sizeof mid, "%c", (char)cp);
	snprintf(out, n, "\"content\":\"c%02x:x%sy\"", cp, mid);
}

/* The next raw text message of c containing needle; fails after the
 * timeout. Caller frees. */
static char *recv_raw_with(struct ws_client *c, const char *needle)
{
	int64_t end = ws_now_ms() + H_TIMEOUT_MS;
	for (;;) {
		int left = (int)(end - ws_now_ms());
		struct ws_msg m = {0};
		int r = left > 0 ? ws_recv(c, &m, left) : WS_RECV_TIMEOUT;
		if (r != WS_RECV_MSG)
			h_fail("%s: no message containing %s (receive status %d)", c->label, needle,
			       r);
		if (m.len == strlen(m.data) && strstr(m.data, needle))
			return m.data;
		if (getenv("NUL_DEBUG"))
			fprintf(stderr, "%s skips: %s\n", c->label, m.data);
		free(m.data);
	}
}

static void send_all(struct ws_client *from)
{
	for (int i = 0; i < NCASES; i++) {
		char lit[64], msg[128];
		sent_literal(case_cp(i), lit, sizeof lit);
		snprintf(msg, sizeof msg, "{\"type\":\"chat\",%s}", lit);
		assert_int_equal(ws_send_text(from, msg), 0);
	}
}

/* Every case's expected literal occurs in text, in order. */
static void assert_all_in_order(const char *what, const char *text)
{
	const char *at = text;
	for (int i = 0; i < NCASES; i++) {
		char exp[64];
		expected_literal(case_cp(i), exp, sizeof exp);
		const char *hit = strstr(at, exp);
		if (!hit)
			h_fail("%s lacks %s (U+%04X) in order", what, exp, case_cp(i));
		at = hit + strlen(exp);
	}
}

/* A raw join; returns the raw history_response. */
static char *join_raw_history(struct space *s, const char *name, const char *id)
{
	struct ws_client *c = h_connect(s);
	char msg[200];
	snprintf(msg, sizeof msg,
	         "{\"type\":\"join\",\"name\":\"%s\",\"id\":\"%s\",\"version\":\"1.0.0\"}", name,
	         id);
	assert_int_equal(ws_send_text(c, msg), 0);
	return recv_raw_with(c, "\"type\":\"history_response\"");
}

/* Stops s cleanly and starts a server again on the same data directory
 * (dir, which it frees). */
static struct space *restart_in(struct space *s, char *dir)
{
	s->keep_dir = true;
	space_pass(s);
	assert_int_equal(space_stop(s), 0);
	s = space_start_in(dir, no_rate);
	free(dir);
	return s;
}

static void test_controls_relayed_logged_replayed(void **state)
{
	(void)state;
	char *dir = space_mkdtemp();
	struct space *s = space_start_in(dir, no_rate);
	struct ws_client *a = h_join(s, "Sender", "sender-1");
	struct ws_client *b = h_join(s, "Reader", "reader-1");

	send_all(a);
	/* Relay: each chat reaches the other member exactly. */
	for (int i = 0; i < NCASES; i++) {
		char exp[64];
		expected_literal(case_cp(i), exp, sizeof exp);
		char *raw = recv_raw_with(b, "\"type\":\"chat\"");
		if (!strstr(raw, exp))
			h_fail("U+%04X: relayed %s, expected %s", case_cp(i), raw, exp);
		free(raw);
	}
	/* No error for any of them. */
	h_expect_none(s, a, "error", H_QUIET_MS);

	/* Live history replay. */
	char *hist = join_raw_history(s, "Late", "late-1");
	assert_all_in_order("live history_response", hist);
	free(hist);

	/* Persistence: the log holds them the same way. */
	char log_path[600];
	space_log_file(s, "chat.jsonl", log_path, sizeof log_path);
	size_t n = 0;
	char *log = h_read_file(log_path, &n);
	assert_non_null(log);
	assert_int_equal(strlen(log), n); /* no raw NUL written */
	assert_all_in_order("chat.jsonl", log);
	free(log);

	/* Replay after a restart: read back from the log. */
	s = restart_in(s, dir);
	hist = join_raw_history(s, "After", "after-1");
	assert_all_in_order("history_response after restart", hist);
	free(hist);
	space_pass(s);
}

/* "\u0000" is valid JSON: a name or any other string holding it is no
 * longer "Invalid JSON", and a message that is really invalid still is. */
static void test_nul_elsewhere_and_invalid_json(void **state)
{
	(void)state;
	struct space *s = space_start(no_rate);
	struct ws_client *a = h_join(s, "Sender", "sender-1");
	struct ws_client *b = h_join(s, "Reader", "reader-1");
	assert_int_equal(ws_send_text(a, "{\"type\":\"chat\",\"content\":\"\\u0000\"}"), 0);
	char *raw = recv_raw_with(b, "\"type\":\"chat\"");
	assert_non_null(strstr(raw, "\"content\":\"\\u0000\""));
	free(raw);
	/* An escaped backslash before u0000 is not a NUL. */
	assert_int_equal(ws_send_text(a, "{\"type\":\"chat\",\"content\":\"a\\\\u0000b\"}"), 0);
	raw = recv_raw_with(b, "\"type\":\"chat\"");
	assert_non_null(strstr(raw, "\"content\":\"a\\\\u0000b\""));
	free(raw);
	/* A NUL escape does not make broken JSON acceptable. */
	assert_int_equal(ws_send_text(a, "{\"type\":\"chat\",\"content\":\"\\u0000\",}"), 0);
	h_expect_error(s, a, "Invalid JSON");
	space_pass(s);
}

/* Lone UTF-16 surrogates: a TypeScript agent's .slice() inside an emoji
 * sends "a\ud83d", valid JSON that the reference relays. The room relays
 * it exactly (JSON.stringify writes it back as "\ud83d"), never refuses
 * the message, logs it, replays it from the log after a restart, and shows
 * it on the web page's snapshot; a whole pair stays the character. */
static void test_lone_surrogates_relayed_logged_replayed(void **state)
{
	(void)state;
	static const struct {
		const char *sent, *relayed;
	} cases[] = {
	        {"a\\ud83d", "a\\ud83d"},             /* "a😀".slice(0, 2) */
	        {"\\uDE00b", "\\ude00b"},             /* the other half, upper-case hex */
	        {"\\ud800\\ud800", "\\ud800\\ud800"}, /* two highs */
	        {"\\ud83d\\ude00!", "😀!"},            /* a pair is the character */
	};
	char *dir = space_mkdtemp();
	struct space *s = space_start_in(dir, no_rate);
	struct ws_client *a = h_join(s, "Sender", "sender-1");
	struct ws_client *b = h_join(s, "Reader", "reader-1");
	char *raw;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char msg[128], exp[128];
		snprintf(msg, sizeof msg, "{\"type\":\"chat\",\"content\":\"s%zu:%s\"}", i,
		         cases[i].sent);
		snprintf(exp, sizeof exp, "\"content\":\"s%zu:%s\"", i, cases[i].relayed);
		assert_int_equal(ws_send_text(a, msg), 0);
		raw = recv_raw_with(b, "\"type\":\"chat\"");
		if (!strstr(raw, exp))
			h_fail("relayed %s, expected %s", raw, exp);
		free(raw);
	}
	/* The sender got its echoes and no error (read raw: the test's cJSON
	 * cannot hold a lone surrogate). */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char exp[128];
		snprintf(exp, sizeof exp, "\"content\":\"s%zu:%s\"", i, cases[i].relayed);
		do {
			raw = recv_raw_with(a, "\"type\":");
			if (strstr(raw, "\"type\":\"error\""))
				h_fail("the sender got %s", raw);
			if (strstr(raw, "\"type\":\"chat\"")) {
				if (!strstr(raw, exp))
					h_fail("the sender got %s, expected its echo with %s", raw,
					       exp);
				free(raw);
				break;
			}
			free(raw);
		} while (1);
	}

	/* A name holding one joins too (2 UTF-16 units), and is in presence. */
	struct ws_client *c = h_connect(s);
	assert_int_equal(ws_send_text(c, "{\"type\":\"join\",\"name\":\"N\\ud800\",\"id\":\"n-1\","
	                                 "\"version\":\"1.0.0\"}"),
	                 0);
	raw = recv_raw_with(b, "\"type\":\"join\"");
	assert_non_null(strstr(raw, "\"name\":\"N\\ud800\""));
	free(raw);

	/* The web page's snapshot carries it as JSON.stringify writes it. */
	char *resp = NULL;
	assert_int_equal(h_http(s, "GET /api/room HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", &resp),
	                 200);
	assert_non_null(strstr(resp, "s0:a\\ud83d"));
	free(resp);

	/* The log, and the history replay after a restart. */
	char log_path[600];
	space_log_file(s, "chat.jsonl", log_path, sizeof log_path);
	char *log = h_read_file(log_path, NULL);
	assert_non_null(log);
	assert_non_null(strstr(log, "\"content\":\"s0:a\\ud83d\""));
	assert_non_null(strstr(log, "\"agentName\":\"N\\ud800\""));
	free(log);
	s = restart_in(s, dir);
	char *hist = join_raw_history(s, "After", "after-1");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char exp[128];
		snprintf(exp, sizeof exp, "\"content\":\"s%zu:%s\"", i, cases[i].relayed);
		if (!strstr(hist, exp))
			h_fail("history after restart lacks %s", exp);
	}
	free(hist);
	space_pass(s);
}

#define T(f) cmocka_unit_test_teardown(f, space_teardown)

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        T(test_controls_relayed_logged_replayed),
	        T(test_nul_elsewhere_and_invalid_json),
	        T(test_lone_surrogates_relayed_logged_replayed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
