/* Configuration: defaults, validation messages naming the variable, the
 * environment winning over .env, feature detection, secret registration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

static const char *const VARS[] = {"AGENT_NAME",
                                   "AI_GATEWAY_API_KEY",
                                   "AI_GATEWAY_MODEL",
                                   "AI_GATEWAY_BASE_URL",
                                   "LLM_BASE_URL",
                                   "LLM_API_KEY",
                                   "LLM_MODEL",
                                   "LLM_DAILY_TOKEN_BUDGET",
                                   "OWNER_BLUESKY_SOCIAL_HANDLE",
                                   "OWNER_BLUESKY_SOCIAL_HANDLE_DID",
                                   "AGENT_BLUESKY_USERNAME",
                                   "AGENT_BLUESKY_PASSWORD",
                                   "BLUESKY_SERVICE",
                                   "AGENT_GITHUB_USERNAME",
                                   "AGENT_GITHUB_TOKEN",
                                   "GITHUB_API_URL",
                                   "OWNER_GITHUB_USERNAME",
                                   "SPACE_URL",
                                   "MAX_ACL",
                                   "MEMORY_DIR",
                                   "DASHBOARD_ADDR",
                                   "DASHBOARD_TOKEN",
                                   "REDIS_URL",
                                   "LOG_LEVEL",
                                   "LOG_FORMAT",
                                   "MAX_BOT_CHAIN_LENGTH",
                                   "GATE_MAX_EVENTS",
                                   "GATE_WINDOW_MS",
                                   "GATE_COOLDOWN_MS",
                                   "GA_SPACE_TYPING_BASE_MS",
                                   "GA_SPACE_CLAIM_RENEW_MS",
                                   "GA_SPACE_TYPING_MAX_MS",
                                   "GA_SPACE_BACKOFF_MS",
                                   "GA_SPACE_PING_MS",
                                   NULL};

static int clear_env(void **state)
{
	(void)state;
	for (const char *const *v = VARS; *v; v++)
		unsetenv(*v);
	log_clear_secrets();
	return 0;
}

static struct env_file envf(const char *text)
{
	struct env_file f;
	struct ga_err err = {{0}};
	if (env_parse(text, strlen(text), &f, &err) != 0)
		fail_msg("%s", err.msg);
	return f;
}

static int has_problem(const struct config_problems *p, const char *var, const char *needle)
{
	for (int i = 0; i < p->count; i++)
		if (strcmp(p->items[i].var, var) == 0 && strstr(p->items[i].msg, needle))
			return 1;
	return 0;
}

static void test_defaults(void **state)
{
	(void)state;
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, NULL, "/srv/agent", NULL, &p), 0);
	assert_null(c.owner_github);
	assert_string_equal(c.home, "/srv/agent");
	assert_string_equal(c.memory_dir, "/srv/agent/memory");
	assert_string_equal(c.agent_name, CONFIG_DEFAULT_AGENT_NAME);
	assert_true(c.agent_name_defaulted);
	assert_string_equal(c.ai_gateway_model, "openai/gpt-5.2");
	assert_string_equal(c.bluesky_service, "https://bsky.social");
	assert_string_equal(c.github_api_url, "https://api.github.com");
	assert_string_equal(c.dashboard_addr, "127.0.0.1:7780");
	assert_int_equal(c.max_acl, 4);
	assert_null(c.space_url);
	assert_int_equal(c.log_level, LOG_LEVEL_INFO);

	struct config_feature f[CONFIG_FEATURE_COUNT];
	config_features(&c, f);
	assert_false(f[CONFIG_FEATURE_MODEL].enabled);
	assert_non_null(strstr(f[CONFIG_FEATURE_MODEL].detail, "AI_GATEWAY_API_KEY"));
	assert_false(f[CONFIG_FEATURE_BLUESKY].enabled);
	assert_non_null(strstr(f[CONFIG_FEATURE_BLUESKY].detail, "AGENT_BLUESKY_PASSWORD"));
	assert_false(f[CONFIG_FEATURE_GITHUB].enabled);
	assert_true(f[CONFIG_FEATURE_SPACE].enabled);
	config_free(&c);
}

static void test_file_and_env(void **state)
{
	(void)state;
	struct env_file f = envf("AGENT_NAME=Ada\n"
	                         "AGENT_BLUESKY_USERNAME=ada.bsky.social\n"
	                         "AGENT_BLUESKY_PASSWORD=app-pass-1234\n"
	                         "BLUESKY_SERVICE=http://127.0.0.1:9999/\n"
	                         "MAX_ACL=2\n"
	                         "MEMORY_DIR=state\n"
	                         "LLM_BASE_URL=http://127.0.0.1:11434/v1\n"
	                         "LLM_MODEL=llama3\n"
	                         "OWNER_GITHUB_USERNAME= olive \n");
	setenv("MAX_ACL", "6", 1);
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, &f, "/home/a", NULL, &p), 0);
	assert_string_equal(c.agent_name, "Ada");
	assert_int_equal(c.max_acl, 6); /* the process environment wins */
	assert_string_equal(c.bluesky_service, "http://127.0.0.1:9999"); /* slash dropped */
	assert_string_equal(c.memory_dir, "/home/a/state");              /* relative to home */
	assert_string_equal(c.owner_github, "olive");
	struct config_feature feats[CONFIG_FEATURE_COUNT];
	config_features(&c, feats);
	assert_true(feats[CONFIG_FEATURE_BLUESKY].enabled);
	assert_true(feats[CONFIG_FEATURE_MODEL].enabled);
	assert_non_null(strstr(feats[CONFIG_FEATURE_MODEL].detail, "llama3"));
	config_free(&c);

	/* --memory beats MEMORY_DIR */
	assert_int_equal(config_load(&c, &f, "/home/a", "/var/lib/ga", &p), 0);
	assert_string_equal(c.memory_dir, "/var/lib/ga");
	config_free(&c);
	env_file_free(&f);
}

static void test_bad_values(void **state)
{
	(void)state;
	struct env_file f = envf("MAX_ACL=four\n"
	                         "BLUESKY_SERVICE=bsky.social\n"
	                         "SPACE_URL=http://localhost:7777\n"
	                         "OWNER_BLUESKY_SOCIAL_HANDLE_DID=alice.bsky.social\n"
	                         "DASHBOARD_ADDR=7780\n"
	                         "LOG_LEVEL=loud\n"
	                         "LOG_FORMAT=xml\n"
	                         "LLM_BASE_URL=http://127.0.0.1:8080\n"
	                         "LLM_DAILY_TOKEN_BUDGET=-5\n"
	                         "REDIS_URL=localhost:6379\n");
	struct ga_config c;
	struct config_problems p;
	int n = config_load(&c, &f, "/h", NULL, &p);
	assert_int_equal(n, p.count);
	assert_true(
	        has_problem(&p, "MAX_ACL", "MAX_ACL must be an integer from 0 to 100, got 'four'"));
	assert_true(has_problem(&p, "BLUESKY_SERVICE", "must be a URL starting with http://"));
	assert_true(has_problem(&p, "SPACE_URL", "ws://"));
	assert_true(has_problem(&p, "OWNER_BLUESKY_SOCIAL_HANDLE_DID", "must be a DID"));
	assert_true(has_problem(&p, "DASHBOARD_ADDR", "host:port"));
	assert_true(has_problem(&p, "LOG_LEVEL", "'loud'"));
	assert_true(has_problem(&p, "LOG_FORMAT", "'xml'"));
	assert_true(has_problem(&p, "LLM_MODEL", "LLM_MODEL is not"));
	assert_true(has_problem(&p, "LLM_DAILY_TOKEN_BUDGET", "got '-5'"));
	assert_true(has_problem(&p, "REDIS_URL", "redis://"));
	assert_int_equal(n, 10);
	/* Bad values fall back to defaults so a report can still be printed. */
	assert_int_equal(c.max_acl, 4);
	assert_string_equal(c.bluesky_service, "https://bsky.social");
	config_free(&c);
	env_file_free(&f);
}

static void test_max_acl_bounds(void **state)
{
	(void)state;
	const char *bad[] = {"-1", "101", "4.5", "4x", " ", "99999999999999999999", NULL};
	for (const char **b = bad; *b; b++) {
		char text[64];
		snprintf(text, sizeof text, "MAX_ACL='%s'\n", *b);
		struct env_file f = envf(text);
		struct ga_config c;
		struct config_problems p;
		int n = config_load(&c, &f, "/h", NULL, &p);
		if (strcmp(*b, " ") == 0)
			assert_int_equal(n, 0); /* blank = unset */
		else if (n != 1)
			fail_msg("MAX_ACL=%s gave %d problems", *b, n);
		config_free(&c);
		env_file_free(&f);
	}
}

static void test_agent_name(void **state)
{
	(void)state;
	struct env_file f = envf("AGENT_NAME=\"a\\tb\"\n");
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, &f, "/h", NULL, &p), 1);
	assert_true(has_problem(&p, "AGENT_NAME", "control characters"));
	config_free(&c);
	env_file_free(&f);
}

static void test_secrets_registered(void **state)
{
	(void)state;
	struct env_file f = envf("AGENT_GITHUB_TOKEN=ghp_supersecretvalue\n"
	                         "MY_SERVICE_API_KEY=sk-abcdef123456\n"
	                         "REDIS_URL=redis://user:redispass99@127.0.0.1:6379/0\n"
	                         "LLM_BASE_URL=https://bob:llmbasicpw77@llm.example/v1\n"
	                         "LLM_MODEL=m\n"
	                         "AGENT_NAME=visible-name\n");
	setenv("AGENT_BLUESKY_PASSWORD", "env-only-password", 1);
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, &f, "/h", NULL, &p), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	log_init(LOG_LEVEL_DEBUG, 0, mem);
	log_kv(LOG_LEVEL_INFO, "test", "token ghp_supersecretvalue in message", "key",
	       "sk-abcdef123456", "url", "redis://user:redispass99@127.0.0.1:6379/0", "pw",
	       "env-only-password", "name", "visible-name", "base",
	       "https://bob:llmbasicpw77@llm.example/v1");
	fclose(mem);
	log_init(LOG_LEVEL_INFO, 0, stderr);
	assert_null(strstr(buf, "ghp_supersecretvalue"));
	assert_null(strstr(buf, "sk-abcdef123456"));
	assert_null(strstr(buf, "redispass99"));
	assert_null(strstr(buf, "env-only-password"));
	assert_null(strstr(buf, "llmbasicpw77"));
	assert_non_null(strstr(buf, "visible-name"));
	free(buf);
	/* text for the terminal goes through the same redaction */
	char *r = log_redact("key ghp_supersecretvalue and llmbasicpw77 but visible-name");
	assert_string_equal(r, "key [redacted] and [redacted] but visible-name");
	free(r);
	unsetenv("AGENT_BLUESKY_PASSWORD");
	config_free(&c);
	env_file_free(&f);
	assert_true(config_is_secret_name("AGENT_GITHUB_TOKEN"));
	assert_true(config_is_secret_name("LLM_API_KEY"));
	assert_false(config_is_secret_name("AGENT_NAME"));
	assert_false(config_is_secret_name("KEY"));
}

/* A .env name that looks like ours but is not gets a warning with the
 * closest known name; it is not an error, and other programs' names stay
 * quiet. */
static void test_unknown_variables_named(void **state)
{
	(void)state;
	struct env_file f = envf("AGENT_NAM=Ada\n"
	                         "LLM_BASE_ULR=http://x/v1\n"
	                         "GA_SPACE_PING=5\n"
	                         "MAX_ACLS=3\n"
	                         "PATH_EXTRA=/opt\n"
	                         "EDITOR=vi\n"
	                         "AGENT_NAME=Ada\n");
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, &f, "/h", NULL, &p), 0);
	assert_int_equal(p.nwarnings, 4);
	static const struct {
		const char *var, *near;
	} want[] = {{"AGENT_NAM", "AGENT_NAME"},
	            {"LLM_BASE_ULR", "LLM_BASE_URL"},
	            {"GA_SPACE_PING", "GA_SPACE_PING_MS"},
	            {"MAX_ACLS", "MAX_ACL"}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		assert_string_equal(p.warnings[i].var, want[i].var);
		char needle[80];
		snprintf(needle, sizeof needle, "did you mean %s?", want[i].near);
		assert_non_null(strstr(p.warnings[i].msg, needle));
		assert_non_null(strstr(p.warnings[i].msg, want[i].var));
	}
	config_free(&c);
	env_file_free(&f);

	assert_true(config_is_known_var("GATE_COOLDOWN_MS"));
	assert_false(config_is_known_var("AGENT_NAM"));
	assert_null(config_suggest_var("AGENT_NAME", NULL));   /* known */
	assert_null(config_suggest_var("EDITOR", NULL));       /* not ours */
	assert_null(config_suggest_var("GA_BUILD_DIR", NULL)); /* the test suite's */
	int d = -1;
	assert_string_equal(config_suggest_var("REDIS_ULR", &d), "REDIS_URL");
	assert_int_equal(d, 2);
	/* far from any name but in a family of ours: still the closest */
	assert_non_null(config_suggest_var("LOG_COLOUR", NULL));
	assert_int_equal(config_edit_distance("kitten", "sitting", 10), 3);
	assert_int_equal(config_edit_distance("", "abc", 10), 3);
	assert_int_equal(config_edit_distance("abcdef", "uvwxyz", 2), 2); /* capped */
}

static void test_wss_says_why(void **state)
{
	(void)state;
	struct env_file f = envf("SPACE_URL=wss://room.example:443\n");
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, &f, "/h", NULL, &p), 1);
	assert_true(has_problem(&p, "SPACE_URL", "plain WebSocket"));
	assert_true(has_problem(&p, "SPACE_URL", "TLS-terminating proxy"));
	assert_null(c.space_url);
	config_free(&c);
	env_file_free(&f);
}

/* The gate's variables: defaults, bounds, errors naming the variable. */
static void test_gate_variables(void **state)
{
	(void)state;
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, NULL, "/h", NULL, &p), 0);
	assert_int_equal(c.max_bot_chain_length, 5);
	assert_int_equal(c.gate_max_events, 20);
	assert_int_equal(c.gate_window_ms, 60000);
	assert_int_equal(c.gate_cooldown_ms, 60000);
	assert_int_equal(c.space.ping_ms, -1); /* not set: the module default */
	assert_int_equal(c.space.nbackoff, 0);
	config_free(&c);

	static const struct {
		const char *text;
		int problems;
		const char *var;
	} cases[] = {
	        {"MAX_BOT_CHAIN_LENGTH=1\nGATE_MAX_EVENTS=128\nGATE_COOLDOWN_MS=0\n", 0, NULL},
	        {"MAX_BOT_CHAIN_LENGTH=100\nGATE_MAX_EVENTS=1\nGATE_WINDOW_MS=1\n", 0, NULL},
	        {"MAX_BOT_CHAIN_LENGTH=0\n", 1, "MAX_BOT_CHAIN_LENGTH"},
	        {"MAX_BOT_CHAIN_LENGTH=101\n", 1, "MAX_BOT_CHAIN_LENGTH"},
	        {"GATE_MAX_EVENTS=0\n", 1, "GATE_MAX_EVENTS"},
	        {"GATE_MAX_EVENTS=129\n", 1, "GATE_MAX_EVENTS"},
	        {"GATE_WINDOW_MS=0\n", 1, "GATE_WINDOW_MS"},
	        {"GATE_WINDOW_MS=1m\n", 1, "GATE_WINDOW_MS"},
	        {"GATE_COOLDOWN_MS=-1\n", 1, "GATE_COOLDOWN_MS"},
	        {"GA_SPACE_TYPING_BASE_MS=x\n", 1, "GA_SPACE_TYPING_BASE_MS"},
	        {"GA_SPACE_CLAIM_RENEW_MS=0\n", 1, "GA_SPACE_CLAIM_RENEW_MS"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct env_file f = envf(cases[i].text);
		int n = config_load(&c, &f, "/h", NULL, &p);
		if (n != cases[i].problems)
			fail_msg("case %zu (%s): %d problems", i, cases[i].text, n);
		if (cases[i].var && !has_problem(&p, cases[i].var, cases[i].var))
			fail_msg("case %zu: no problem naming %s", i, cases[i].var);
		config_free(&c);
		env_file_free(&f);
	}
	struct env_file f = envf("MAX_BOT_CHAIN_LENGTH=7\nGATE_WINDOW_MS=1000\n"
	                         "GA_SPACE_TYPING_MAX_MS=0\nGA_SPACE_BACKOFF_MS=1,2\n");
	assert_int_equal(config_load(&c, &f, "/h", NULL, &p), 0);
	assert_int_equal(c.max_bot_chain_length, 7);
	assert_int_equal(c.gate_window_ms, 1000);
	assert_int_equal(c.space.typing_max_ms, 0);
	assert_int_equal(c.space.nbackoff, 2);
	assert_int_equal(c.space.backoff_ms[1], 2);
	config_free(&c);
	env_file_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup(test_defaults, clear_env),
	        cmocka_unit_test_setup(test_file_and_env, clear_env),
	        cmocka_unit_test_setup(test_bad_values, clear_env),
	        cmocka_unit_test_setup(test_max_acl_bounds, clear_env),
	        cmocka_unit_test_setup(test_agent_name, clear_env),
	        cmocka_unit_test_setup(test_secrets_registered, clear_env),
	        cmocka_unit_test_setup(test_unknown_variables_named, clear_env),
	        cmocka_unit_test_setup(test_wss_says_why, clear_env),
	        cmocka_unit_test_setup(test_gate_variables, clear_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
