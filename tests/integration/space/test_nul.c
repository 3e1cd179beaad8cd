/*
 * Control characters in chat content through the real agent-space:
 * every U+0000–U+001F and U+007F sent by one member (as the JSON escapes a
 * client writes, "\u0000" included — valid JSON the reference relays) must
 * reach another member as exactly the same code points, in JSON.stringify's
 * form, and the log and the history replay (live, and read back from the
 * log after a restart) must keep them. Messages are compared as raw text:
 * the test's cJSON, like the server's, cannot hold a NUL.
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
	case 0x08: esc = "\\b"; break;
	case 0x09: esc = "\\t"; break;
	case 0x0A: esc = "\\n"; break;
	case 0x0C: esc = "\\f"; break;
	case 0x0D: esc = "\\r"; break;
	default: break;
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
	s->keep_dir = true;
	space_pass(s);
	assert_int_equal(space_stop(s), 0);
	s = space_start_in(dir, no_rate);
	free(dir);
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

#define T(f) cmocka_unit_test_teardown(f, space_teardown)

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        T(test_controls_relayed_logged_replayed),
	        T(test_nul_elsewhere_and_invalid_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
