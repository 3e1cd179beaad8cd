/*
 * The room server's terminal, black-box
 * against the real agent-space: `/help` (and `/?`) print the host's
 * commands on the server's output and say nothing to the room; a mistyped
 * `/command` is refused the same way, naming /help; `//text` says "/text";
 * a plain line is still the host's chat.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/space/harness.h"

static void test_help_lists_commands(void **state)
{
	(void)state;
	struct space *s = space_start(NULL);
	struct ws_client *ada = h_join(s, "Ada", "ada-id");

	size_t before = space_log_size(s);
	space_host(s, "/help");
	assert_true(space_wait_log_from(s, before, "host commands:", H_TIMEOUT_MS));
	char *log = space_read_log(s);
	const char *help = strstr(log + before, "host commands:");
	assert_non_null(help);
	static const char *const listed[] = {"/who", "/help", "/quit", "/exit", "//text", NULL};
	for (int i = 0; listed[i]; i++)
		if (!strstr(help, listed[i]))
			fail_msg("/help does not list %s:\n%s", listed[i], help);
	free(log);
	h_expect_none(s, ada, "chat", H_QUIET_MS); /* not said to the room */

	before = space_log_size(s);
	space_host(s, "  /?  ");
	assert_true(space_wait_log_from(s, before, "host commands:", H_TIMEOUT_MS));
	h_expect_none(s, ada, "chat", H_QUIET_MS);

	/* a mistyped command: refused, pointing at /help */
	before = space_log_size(s);
	space_host(s, "/hlep me");
	assert_true(space_wait_log_from(s, before, "unknown command /hlep", H_TIMEOUT_MS));
	assert_true(space_wait_log_from(s, before, "/help lists the commands", H_TIMEOUT_MS));
	h_expect_none(s, ada, "chat", H_QUIET_MS);

	/* "//" says a line that starts with "/" */
	space_host(s, "//shrug");
	cJSON *m = h_expect(s, ada, "chat");
	assert_string_equal(h_str(m, "content"), "/shrug");
	assert_string_equal(h_str(m, "name"), "host");

	/* plain lines are still chat */
	space_host(s, "help, anyone?");
	m = h_expect(s, ada, "chat");
	assert_string_equal(h_str(m, "content"), "help, anyone?");

	/* and the commands still work after it */
	space_host(s, "/quit");
	h_expect(s, ada, "shutdown");
	assert_int_equal(space_wait_exit(s, H_TIMEOUT_MS), 0);
	space_pass(s);
}

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_help_lists_commands, space_teardown),
	};
	return cmocka_run_group_tests_name("agent-space host /help", tests, NULL, NULL);
}
