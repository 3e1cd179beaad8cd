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

static const char *const VARS[] = {
	"AGENT_NAME", "AI_GATEWAY_API_KEY", "AI_GATEWAY_MODEL", "AI_GATEWAY_BASE_URL",
	"LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL", "LLM_DAILY_TOKEN_BUDGET",
	"OWNER_BLUESKY_SOCIAL_HANDLE", "OWNER_BLUESKY_SOCIAL_HANDLE_DID", "AGENT_BLUESKY_USERNAME",
	"AGENT_BLUESKY_PASSWORD", "BLUESKY_SERVICE", "AGENT_GITHUB_USERNAME", "AGENT_GITHUB_TOKEN",
	"GITHUB_API_URL", "SPACE_URL", "MAX_ACL", "MEMORY_DIR", "DASHBOARD_ADDR", "REDIS_URL",
	"LOG_LEVEL", "LOG_FORMAT", NULL};

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
				 "LLM_MODEL=llama3\n");
	setenv("MAX_ACL", "6", 1);
	struct ga_config c;
	struct config_problems p;
	assert_int_equal(config_load(&c, &f, "/home/a", NULL, &p), 0);
	assert_string_equal(c.agent_name, "Ada");
	assert_int_equal(c.max_acl, 6); /* the process environment wins */
	assert_string_equal(c.bluesky_service, "http://127.0.0.1:9999"); /* slash dropped */
	assert_string_equal(c.memory_dir, "/home/a/state"); /* relative to home */
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
	assert_true(has_problem(&p, "MAX_ACL", "MAX_ACL must be an integer from 0 to 100, got 'four'"));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults, clear_env),
		cmocka_unit_test_setup(test_file_and_env, clear_env),
		cmocka_unit_test_setup(test_bad_values, clear_env),
		cmocka_unit_test_setup(test_max_acl_bounds, clear_env),
		cmocka_unit_test_setup(test_agent_name, clear_env),
		cmocka_unit_test_setup(test_secrets_registered, clear_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
