/* The dashboard's pure parts: the address and what counts as loopback,
 * the constant-time token compare, the Host check against DNS rebinding,
 * static file names; and DASHBOARD_TOKEN in the configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "modules/dashboard/dashboard.h"

static void test_parse_addr(void **state)
{
	(void)state;
	struct dashboard_addr a;
	struct ga_err err = {{0}};
	assert_int_equal(dashboard_parse_addr("127.0.0.1:7780", &a, &err), 0);
	assert_string_equal(a.host, "127.0.0.1");
	assert_int_equal(a.port, 7780);
	assert_true(a.loopback);
	assert_false(a.ipv6);
	assert_int_equal(dashboard_parse_addr("127.8.9.10:0", &a, &err), 0);
	assert_true(a.loopback);
	assert_int_equal(dashboard_parse_addr("localhost:80", &a, &err), 0);
	assert_string_equal(a.host, "127.0.0.1");
	assert_true(a.loopback);
	assert_int_equal(dashboard_parse_addr("[::1]:7780", &a, &err), 0);
	assert_true(a.ipv6);
	assert_true(a.loopback);
	assert_int_equal(dashboard_parse_addr("0.0.0.0:7780", &a, &err), 0);
	assert_false(a.loopback);
	assert_int_equal(dashboard_parse_addr("192.168.1.5:7780", &a, &err), 0);
	assert_false(a.loopback);
	assert_int_equal(dashboard_parse_addr("[::]:7780", &a, &err), 0);
	assert_false(a.loopback);

	static const struct {
		const char *in, *says;
	} bad[] = {
	        {"", "empty"},
	        {"127.0.0.1", "has no port"},
	        {":7780", "host is empty"},
	        {"127.0.0.1:", "the port must be a number"},
	        {"127.0.0.1:70000", "the port must be a number"},
	        {"127.0.0.1:-1", "the port must be a number"},
	        {"127.0.0.1:80x", "the port must be a number"},
	        {"example.com:80", "not a numeric IPv4 address"},
	        {"::1:7780", "not a numeric IPv4 address"},
	        {"[::1]7780", "written [addr]:port"},
	        {"[nonsense]:1", "not an IPv6 address"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err_clear(&err);
		assert_int_equal(dashboard_parse_addr(bad[i].in, &a, &err), -1);
		if (!strstr(err.msg, bad[i].says))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].in, err.msg, bad[i].says);
	}
}

static void test_token_equal(void **state)
{
	(void)state;
	assert_true(dashboard_token_equal("correct-horse-battery", "correct-horse-battery"));
	assert_false(dashboard_token_equal("correct-horse-batterx", "correct-horse-battery"));
	assert_false(dashboard_token_equal("correct-horse", "correct-horse-battery"));
	assert_false(
	        dashboard_token_equal("correct-horse-battery-staple", "correct-horse-battery"));
	assert_false(dashboard_token_equal("", "correct-horse-battery"));
	assert_false(dashboard_token_equal(NULL, "x"));
	assert_false(dashboard_token_equal("x", NULL));
}

static void test_host_is_loopback(void **state)
{
	(void)state;
	static const char *const yes[] = {"127.0.0.1:7780", "127.0.0.1",  "localhost:7780",
	                                  "LOCALHOST",      "[::1]:7780", "[::1]",
	                                  "127.1.2.3:1",    NULL};
	static const char *const no[] = {"evil.example",
	                                 "evil.example:7780",
	                                 "127.0.0.1.evil.example",
	                                 "localhost.evil.example:7780",
	                                 "192.168.0.1:7780",
	                                 "[::2]:7780",
	                                 "127.0.0.1:",
	                                 "127.0.0.1:80a",
	                                 "[::1",
	                                 "[::1]x",
	                                 "",
	                                 NULL};
	for (const char *const *h = yes; *h; h++)
		if (!dashboard_host_is_loopback(*h))
			fail_msg("'%s' should be loopback", *h);
	for (const char *const *h = no; *h; h++)
		if (dashboard_host_is_loopback(*h))
			fail_msg("'%s' should not be loopback", *h);
	assert_false(dashboard_host_is_loopback(NULL));
}

static void test_static_names(void **state)
{
	(void)state;
	assert_true(dashboard_static_name_ok("index.html"));
	assert_true(dashboard_static_name_ok("app-2.min.js"));
	assert_false(dashboard_static_name_ok(".env"));
	assert_false(dashboard_static_name_ok(".."));
	assert_false(dashboard_static_name_ok("a/b.js"));
	assert_false(dashboard_static_name_ok("a\\b.js"));
	assert_false(dashboard_static_name_ok("a%2fb"));
	assert_false(dashboard_static_name_ok(""));
	assert_false(dashboard_static_name_ok(NULL));
}

static void test_config_token(void **state)
{
	(void)state;
	unsetenv("DASHBOARD_TOKEN");
	log_clear_secrets();
	struct env_file f;
	struct ga_err err = {{0}};
	const char *text = "DASHBOARD_TOKEN=short\n";
	assert_int_equal(env_parse(text, strlen(text), &f, &err), 0);
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, &f, "/h", NULL, &p), 1);
	assert_string_equal(p.items[0].var, "DASHBOARD_TOKEN");
	assert_non_null(strstr(p.items[0].msg, "at least 16 characters"));
	assert_null(c.dashboard_token);
	config_free(&c);
	env_file_free(&f);

	text = "DASHBOARD_TOKEN=a-long-enough-dashboard-token\n";
	assert_int_equal(env_parse(text, strlen(text), &f, &err), 0);
	assert_int_equal(config_load(&c, &f, "/h", NULL, &p), 0);
	assert_string_equal(c.dashboard_token, "a-long-enough-dashboard-token");
	assert_true(config_is_known_var("DASHBOARD_TOKEN"));
	/* a secret: redacted wherever it would be shown */
	char *r = log_redact("token a-long-enough-dashboard-token here");
	assert_string_equal(r, "token [redacted] here");
	free(r);
	config_free(&c);
	env_file_free(&f);
	log_clear_secrets();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_addr),       cmocka_unit_test(test_token_equal),
	        cmocka_unit_test(test_host_is_loopback), cmocka_unit_test(test_static_names),
	        cmocka_unit_test(test_config_token),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
