/*
 * Discovery and connection tunables (adapters/space/tunables): the
 * reference's defaults, GA_SPACE_* overrides, rejected values keep the
 * default, the backoff list and its jitter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* after stdarg, stddef, setjmp */

#include "adapters/space/tunables.h"
#include "common/log.h"

static const char *const VARS[] = {"GA_SPACE_MDNS_TIMEOUT_MS",    "GA_SPACE_DISCOVERY_RETRY_MS",
                                   "GA_SPACE_CONNECT_TIMEOUT_MS", "GA_SPACE_PING_MS",
                                   "GA_SPACE_CLOSE_WAIT_MS",      "GA_SPACE_REPLACED_WINDOW_MS",
                                   "GA_SPACE_JITTER_PCT",         "GA_SPACE_REPLACED_LIMIT",
                                   "GA_SPACE_BACKOFF_MS",         "GA_SPACE_MDNS",
                                   "GA_SPACE_LOCALHOST_URL",      NULL};

static int clean_env(void **state)
{
	(void)state;
	for (int i = 0; VARS[i]; i++)
		unsetenv(VARS[i]);
	log_set_level(LOG_LEVEL_OFF);
	return 0;
}

static void test_defaults(void **state)
{
	(void)state;
	struct spc_tunables t;
	spc_tunables_default(&t);
	assert_int_equal(spc_tunables_from_env(&t), 0);
	/* space-protocol.md §6.3 */
	assert_int_equal(t.mdns_timeout_ms, 10000);
	assert_true(t.mdns);
	assert_string_equal(t.localhost_url, "ws://localhost:7777");
	assert_int_equal(t.discovery_retry_ms, 300000);
	assert_int_equal(t.nbackoff, 4);
	assert_int_equal(t.backoff_ms[0], 5000);
	assert_int_equal(t.backoff_ms[1], 10000);
	assert_int_equal(t.backoff_ms[2], 20000);
	assert_int_equal(t.backoff_ms[3], 60000);
	assert_int_equal(t.connect_timeout_ms, 10000);
	assert_int_equal(t.replaced_limit, 3);
}

static void test_overrides(void **state)
{
	(void)state;
	setenv("GA_SPACE_MDNS_TIMEOUT_MS", "250", 1);
	setenv("GA_SPACE_BACKOFF_MS", "100, 200 ,400", 1);
	setenv("GA_SPACE_CONNECT_TIMEOUT_MS", "300", 1);
	setenv("GA_SPACE_DISCOVERY_RETRY_MS", "1500", 1);
	setenv("GA_SPACE_LOCALHOST_URL", "ws://127.0.0.1:4567", 1);
	setenv("GA_SPACE_MDNS", "0", 1);
	setenv("GA_SPACE_JITTER_PCT", "0", 1);
	setenv("GA_SPACE_REPLACED_LIMIT", "5", 1);
	struct spc_tunables t;
	spc_tunables_default(&t);
	assert_int_equal(spc_tunables_from_env(&t), 0);
	assert_int_equal(t.mdns_timeout_ms, 250);
	assert_int_equal(t.nbackoff, 3);
	assert_int_equal(t.backoff_ms[2], 400);
	assert_int_equal(t.connect_timeout_ms, 300);
	assert_int_equal(t.discovery_retry_ms, 1500);
	assert_string_equal(t.localhost_url, "ws://127.0.0.1:4567");
	assert_false(t.mdns);
	assert_int_equal(t.jitter_pct, 0);
	assert_int_equal(t.replaced_limit, 5);
	/* no jitter: the steps exactly, the last one repeating */
	assert_int_equal(spc_backoff_delay(&t, 0, 12345), 100);
	assert_int_equal(spc_backoff_delay(&t, 1, 12345), 200);
	assert_int_equal(spc_backoff_delay(&t, 2, 12345), 400);
	assert_int_equal(spc_backoff_delay(&t, 50, 12345), 400);
}

static void test_bad_values_keep_defaults(void **state)
{
	(void)state;
	setenv("GA_SPACE_MDNS_TIMEOUT_MS", "ten seconds", 1);
	setenv("GA_SPACE_BACKOFF_MS", "100,,x", 1);
	setenv("GA_SPACE_CONNECT_TIMEOUT_MS", "0", 1);
	setenv("GA_SPACE_DISCOVERY_RETRY_MS", "-5", 1);
	setenv("GA_SPACE_LOCALHOST_URL", "http://localhost:7777", 1);
	setenv("GA_SPACE_MDNS", "yes", 1);
	setenv("GA_SPACE_JITTER_PCT", "101", 1);
	setenv("GA_SPACE_PING_MS", "99999999999999999999", 1);
	struct spc_tunables t;
	spc_tunables_default(&t);
	assert_int_equal(spc_tunables_from_env(&t), 8);
	assert_int_equal(t.mdns_timeout_ms, 10000);
	assert_int_equal(t.nbackoff, 4);
	assert_int_equal(t.connect_timeout_ms, 10000);
	assert_int_equal(t.discovery_retry_ms, 300000);
	assert_string_equal(t.localhost_url, "ws://localhost:7777");
	assert_true(t.mdns);
	assert_int_equal(t.jitter_pct, 20);
	assert_int_equal(t.ping_ms, 30000);
}

static void test_backoff_parse_and_jitter(void **state)
{
	(void)state;
	struct spc_tunables t;
	spc_tunables_default(&t);
	assert_int_equal(spc_tunables_parse_backoff(&t, ""), -1);
	assert_int_equal(spc_tunables_parse_backoff(&t, "1,2,3,4,5,6,7,8,9"), -1); /* too many */
	assert_int_equal(spc_tunables_parse_backoff(&t, "0"), -1);
	assert_int_equal(spc_tunables_parse_backoff(&t, "100000000000"), -1); /* over a day */
	assert_int_equal(t.nbackoff, 4);                                      /* unchanged */
	spc_tunables_default(&t);
	/* default jitter: 5000 + 0..20 % */
	for (uint64_t rnd = 0; rnd < 5000; rnd += 7) {
		uint64_t d = spc_backoff_delay(&t, 0, rnd * 2654435761u);
		assert_true(d >= 5000 && d <= 6000);
	}
	assert_int_equal(spc_backoff_delay(&t, 0, 1000), 6000);
	assert_int_equal(spc_backoff_delay(&t, 3, 0), 60000);
	assert_int_equal(spc_backoff_delay(&t, 9, 12000), 72000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup(test_defaults, clean_env),
	        cmocka_unit_test_setup(test_overrides, clean_env),
	        cmocka_unit_test_setup(test_bad_values_keep_defaults, clean_env),
	        cmocka_unit_test_setup(test_backoff_parse_and_jitter, clean_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
