/*
 * Discovery and connection tunables (adapters/space/tunables): the
 * reference's defaults, GA_SPACE_* overrides from .env through the
 * configuration, rejected values named as configuration problems, the
 * backoff list and its jitter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* after stdarg, stddef, setjmp */

#include "adapters/space/tunables.h"
#include "common/config.h"
#include "common/env.h"
#include "common/log.h"

static const char *const VARS[] = {"GA_SPACE_MDNS_TIMEOUT_MS",
                                   "GA_SPACE_DISCOVERY_RETRY_MS",
                                   "GA_SPACE_CONNECT_TIMEOUT_MS",
                                   "GA_SPACE_PING_MS",
                                   "GA_SPACE_CLOSE_WAIT_MS",
                                   "GA_SPACE_REPLACED_WINDOW_MS",
                                   "GA_SPACE_JITTER_PCT",
                                   "GA_SPACE_REPLACED_LIMIT",
                                   "GA_SPACE_BACKOFF_MS",
                                   "GA_SPACE_MDNS",
                                   "GA_SPACE_LOCALHOST_URL",
                                   "GA_SPACE_MDNS_NAME",
                                   NULL};

static int clean_env(void **state)
{
	(void)state;
	for (int i = 0; VARS[i]; i++)
		unsetenv(VARS[i]);
	log_set_level(LOG_LEVEL_OFF);
	return 0;
}

/* Loads the configuration from a .env text (the process environment is
 * cleaned first, so the file is what counts) and applies it. Returns the
 * number of configuration problems. */
static int load(const char *dotenv, struct spc_tunables *t, struct config_problems *p)
{
	struct env_file f;
	struct ga_err err = {{0}};
	if (env_parse(dotenv, strlen(dotenv), &f, &err) != 0)
		fail_msg("%s", err.msg);
	struct ga_config c;
	int n = config_load(&c, &f, "/h", NULL, p);
	spc_tunables_default(t);
	spc_tunables_from_config(t, &c.space);
	config_free(&c);
	env_file_free(&f);
	return n;
}

static int has_problem(const struct config_problems *p, const char *var)
{
	for (int i = 0; i < p->count; i++)
		if (strcmp(p->items[i].var, var) == 0 && strstr(p->items[i].msg, var))
			return 1;
	return 0;
}

static void test_defaults(void **state)
{
	(void)state;
	struct spc_tunables t;
	struct config_problems p;
	assert_int_equal(load("", &t, &p), 0);
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
	/* NULL configuration: nothing set */
	spc_tunables_from_config(&t, NULL);
	assert_int_equal(t.ping_ms, 30000);
	assert_string_equal(t.mdns_name, "");
}

/* The values come from .env as well as from the process environment;
 * the process environment wins. */
static void test_overrides(void **state)
{
	(void)state;
	setenv("GA_SPACE_REPLACED_LIMIT", "5", 1);
	struct spc_tunables t;
	struct config_problems p;
	assert_int_equal(load("GA_SPACE_MDNS_TIMEOUT_MS=250\n"
	                      "GA_SPACE_BACKOFF_MS=100, 200 ,400\n"
	                      "GA_SPACE_CONNECT_TIMEOUT_MS=300\n"
	                      "GA_SPACE_DISCOVERY_RETRY_MS=1500\n"
	                      "GA_SPACE_LOCALHOST_URL=ws://127.0.0.1:4567\n"
	                      "GA_SPACE_MDNS=0\n"
	                      "GA_SPACE_MDNS_NAME=lab-room\n"
	                      "GA_SPACE_JITTER_PCT=0\n"
	                      "GA_SPACE_REPLACED_LIMIT=9\n",
	                      &t, &p),
	                 0);
	assert_string_equal(t.mdns_name, "lab-room");
	assert_int_equal(t.mdns_timeout_ms, 250);
	assert_int_equal(t.nbackoff, 3);
	assert_int_equal(t.backoff_ms[2], 400);
	assert_int_equal(t.connect_timeout_ms, 300);
	assert_int_equal(t.discovery_retry_ms, 1500);
	assert_string_equal(t.localhost_url, "ws://127.0.0.1:4567");
	assert_false(t.mdns);
	assert_int_equal(t.jitter_pct, 0);
	assert_int_equal(t.replaced_limit, 5); /* the environment's, not the file's 9 */
	/* no jitter: the steps exactly, the last one repeating */
	assert_int_equal(spc_backoff_delay(&t, 0, 12345), 100);
	assert_int_equal(spc_backoff_delay(&t, 1, 12345), 200);
	assert_int_equal(spc_backoff_delay(&t, 2, 12345), 400);
	assert_int_equal(spc_backoff_delay(&t, 50, 12345), 400);
	/* boundaries accepted */
	assert_int_equal(load("GA_SPACE_CLOSE_WAIT_MS=0\nGA_SPACE_JITTER_PCT=100\n"
	                      "GA_SPACE_PING_MS=86400000\n",
	                      &t, &p),
	                 0);
	assert_int_equal(t.close_wait_ms, 0);
	assert_int_equal(t.jitter_pct, 100);
	assert_int_equal(t.ping_ms, 86400000);
}

/* A bad value is a configuration error naming the variable; the default
 * stays in place. */
static void test_bad_values_are_named(void **state)
{
	(void)state;
	struct spc_tunables t;
	struct config_problems p;
	assert_int_equal(
	        load("GA_SPACE_MDNS_TIMEOUT_MS=ten seconds\n"
	             "GA_SPACE_BACKOFF_MS=100,,x\n"
	             "GA_SPACE_CONNECT_TIMEOUT_MS=0\n"
	             "GA_SPACE_DISCOVERY_RETRY_MS=-5\n"
	             "GA_SPACE_LOCALHOST_URL=http://localhost:7777\n"
	             "GA_SPACE_MDNS=yes\n"
	             "GA_SPACE_JITTER_PCT=101\n"
	             "GA_SPACE_PING_MS=86400001\n"
	             "GA_SPACE_MDNS_NAME=a-name-longer-than-the-sixty-three-bytes-of-one-dns-label-"
	             "so-it-is-refused\n",
	             &t, &p),
	        9);
	static const char *const bad[] = {
	        "GA_SPACE_MDNS_TIMEOUT_MS",    "GA_SPACE_BACKOFF_MS",
	        "GA_SPACE_CONNECT_TIMEOUT_MS", "GA_SPACE_DISCOVERY_RETRY_MS",
	        "GA_SPACE_LOCALHOST_URL",      "GA_SPACE_MDNS",
	        "GA_SPACE_JITTER_PCT",         "GA_SPACE_PING_MS",
	        "GA_SPACE_MDNS_NAME"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (!has_problem(&p, bad[i]))
			fail_msg("no problem named %s", bad[i]);
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
	        cmocka_unit_test_setup(test_bad_values_are_named, clean_env),
	        cmocka_unit_test_setup(test_backoff_parse_and_jitter, clean_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
