/*
 * test_ratelimit — the GitHub rate limiter and response classification,
 * driven by a clock the test sets: spacing, primary limits that end at
 * their reset (the reference's permanent lockout, spec §1.2 [BUG], must not
 * happen, whatever the headers said), bogus resets clamped, low-budget
 * pacing that never refuses, secondary limits with retry-after or doubling,
 * separate buckets; and how 401/403/404/410/422/429/5xx/HTML are told apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "adapters/github/github.h"
#include "adapters/github/ratelimit.h"

#define T0 ((int64_t)1800000000000) /* 2027-01-15, epoch ms */

static char sbuf[32];
static const char *secs(int64_t ms)
{
	snprintf(sbuf, sizeof sbuf, "%lld", (long long)(ms / 1000));
	return sbuf;
}

static void test_spacing(void **state)
{
	(void)state;
	struct gh_rate r;
	gh_rate_init(&r, 1000, 5000, 100);
	enum gh_wait_reason why;
	assert_int_equal(gh_rate_wait_ms(&r, NULL, true, T0, &why), 0);
	gh_rate_started(&r, NULL, true, T0);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, T0 + 200, &why), 800);
	assert_int_equal(why, GH_WAIT_SPACING);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, true, T0 + 200, &why), 4800);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, T0 + 1000, &why), 0);
	assert_int_equal(why, GH_WAIT_NONE);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, true, T0 + 5000, &why), 0);
}

static void test_primary_limit_ends_at_reset(void **state)
{
	(void)state;
	struct gh_rate r;
	gh_rate_init(&r, 0, 0, 100);
	int64_t reset = T0 + 1800 * 1000;
	char rst[32];
	snprintf(rst, sizeof rst, "%s", secs(reset));
	gh_rate_observe(&r, "core", "5000", "0", rst, T0);
	enum gh_wait_reason why;
	assert_int_equal(gh_rate_wait_ms(&r, "core", false, T0, &why), 1800 * 1000);
	assert_int_equal(why, GH_WAIT_PRIMARY);
	assert_int_equal(gh_rate_wait_ms(&r, "core", false, reset - 1, &why), 1);
	/* Another bucket is not held. */
	assert_int_equal(gh_rate_wait_ms(&r, "search", false, T0, &why), 0);
	/* At the reset, whatever was booked is forgotten: requests resume. */
	assert_int_equal(gh_rate_wait_ms(&r, "core", false, reset, &why), 0);
	struct gh_bucket b;
	assert_int_equal(gh_rate_bucket(&r, "core", reset, &b), 0);
	assert_int_equal(b.remaining, -1);
	/* And a stale answer arriving later with reset in the past cannot
	 * lock it again. */
	gh_rate_observe(&r, "core", "5000", "0", rst, reset + 10);
	assert_int_equal(gh_rate_wait_ms(&r, "core", false, reset + 10, &why), 0);
}

static void test_bogus_reset_is_clamped(void **state)
{
	(void)state;
	struct gh_rate r;
	gh_rate_init(&r, 0, 0, 100);
	/* Ten years ahead: a broken header or a clock far behind. */
	gh_rate_observe(&r, NULL, "5000", "0", secs(T0 + (int64_t)10 * 365 * 86400 * 1000), T0);
	int64_t w = gh_rate_wait_ms(&r, NULL, false, T0, NULL);
	assert_int_equal(w, GH_PRIMARY_WINDOW_MAX_MS);
	/* Looking again later does not push it further. */
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, T0 + 60000, NULL),
	                 GH_PRIMARY_WINDOW_MAX_MS - 60000);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, T0 + GH_PRIMARY_WINDOW_MAX_MS, NULL), 0);
	/* Garbage headers are ignored. */
	gh_rate_observe(&r, NULL, "x", "-5", "soon", T0);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, T0 + GH_PRIMARY_WINDOW_MAX_MS, NULL), 0);
}

static void test_primary_403_with_skewed_clock(void **state)
{
	(void)state;
	struct gh_rate r;
	gh_rate_init(&r, 0, 0, 100);
	/* Our clock is ahead of GitHub's: its reset is already past for us. */
	gh_rate_observe(&r, NULL, "5000", "0", secs(T0 - 5000), T0);
	int64_t w = gh_rate_limited(&r, NULL, true, -1, T0);
	assert_int_equal(w, GH_CLOCK_SKEW_FALLBACK_MS);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, T0 + 1000, NULL),
	                 GH_CLOCK_SKEW_FALLBACK_MS - 1000);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, T0 + GH_CLOCK_SKEW_FALLBACK_MS, NULL), 0);
}

static void test_low_budget_paces_and_never_refuses(void **state)
{
	(void)state;
	struct gh_rate r;
	gh_rate_init(&r, 0, 0, 100);
	int64_t reset = T0 + 100 * 1000;
	char rst[32];
	snprintf(rst, sizeof rst, "%s", secs(reset));
	gh_rate_started(&r, NULL, false, T0);
	gh_rate_observe(&r, NULL, "5000", "9", rst, T0);
	enum gh_wait_reason why;
	/* 9 left for 100 s: one every 10 s. */
	int64_t w = gh_rate_wait_ms(&r, NULL, false, T0, &why);
	assert_int_equal(w, 10000);
	assert_int_equal(why, GH_WAIT_LOW_BUDGET);
	int64_t t = T0 + w;
	int sent = 0;
	while (t < reset) {
		assert_int_equal(gh_rate_wait_ms(&r, NULL, false, t, NULL), 0);
		gh_rate_started(&r, NULL, false, t);
		sent++;
		int64_t next = gh_rate_wait_ms(&r, NULL, false, t, NULL);
		assert_true(next > 0);
		t += next;
	}
	assert_true(sent >= 8 && sent <= 9);
	/* Past the reset nothing paces any more. */
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, reset, NULL), 0);
	/* Plenty left: no pacing at all. */
	gh_rate_observe(&r, NULL, "5000", "4000", secs(reset + 3600000), reset);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, reset, NULL), 0);
}

static void test_secondary_limits(void **state)
{
	(void)state;
	struct gh_rate r;
	gh_rate_init(&r, 0, 0, 100);
	enum gh_wait_reason why;
	assert_int_equal(gh_rate_limited(&r, NULL, false, 30000, T0), 30000);
	assert_int_equal(gh_rate_wait_ms(&r, "search", false, T0, &why), 30000);
	assert_int_equal(why, GH_WAIT_HOLD);
	assert_int_equal(gh_rate_wait_ms(&r, NULL, false, T0 + 30000, NULL), 0);
	/* Without retry-after: 60 s doubling per consecutive hit, capped. */
	int64_t t = T0 + 30000;
	gh_rate_success(&r);
	int64_t expect[] = {60000, 120000, 240000, 480000, 900000, 900000};
	for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
		assert_int_equal(gh_rate_limited(&r, NULL, false, -1, t), expect[i]);
		assert_int_equal(gh_rate_wait_ms(&r, NULL, false, t, NULL), expect[i]);
		t += expect[i];
		assert_int_equal(gh_rate_wait_ms(&r, NULL, false, t, NULL), 0);
	}
	gh_rate_success(&r);
	assert_int_equal(gh_rate_limited(&r, NULL, false, -1, t), 60000);
	/* A retry-after of a day is not believed for more than the window. */
	assert_int_equal(gh_rate_limited(&r, NULL, false, (int64_t)86400 * 1000, t),
	                 GH_PRIMARY_WINDOW_MAX_MS);
}

static void test_buckets_are_bounded(void **state)
{
	(void)state;
	struct gh_rate r;
	gh_rate_init(&r, 0, 0, 100);
	const char *names[] = {"core",        "search",
	                       "graphql",     "integration_manifest",
	                       "code_search", "dependency_snapshots"};
	for (size_t i = 0; i < 6; i++)
		gh_rate_observe(&r, names[i], "10", "5", secs(T0 + 60000), T0);
	assert_int_equal(r.n_buckets, GH_RATE_BUCKETS_MAX);
	struct gh_bucket b;
	assert_int_equal(gh_rate_bucket(&r, "core", T0, &b), 0);
	assert_int_equal(b.remaining, 5);
	assert_int_equal(gh_rate_bucket(&r, "dependency_snapshots", T0, &b), 0);
	assert_int_equal(gh_rate_bucket(&r, "nothing", T0, &b), -1);
}

/* --- classification ------------------------------------------------------------ */

struct hdrs {
	const char *remaining;
	const char *retry_after;
};

static const char *hdr(void *ud, const char *name)
{
	const struct hdrs *h = ud;
	if (strcasecmp(name, "x-ratelimit-remaining") == 0)
		return h->remaining;
	if (strcasecmp(name, "retry-after") == 0)
		return h->retry_after;
	return NULL;
}

static enum gh_error_kind classify(long status, const char *ct, const char *body, struct hdrs h,
                                   bool token, bool *primary, int64_t *ra, char *msg)
{
	return gh_classify(status, ct, body, strlen(body), hdr, &h, "create an issue in o/r", token,
	                   T0, primary, ra, msg, GA_ERR_MSG_MAX);
}

static void test_classification(void **state)
{
	(void)state;
	bool primary;
	int64_t ra;
	char msg[GA_ERR_MSG_MAX];
	const char *json = "application/json; charset=utf-8";

	assert_int_equal(classify(201, json, "{}", (struct hdrs){0}, true, &primary, &ra, msg),
	                 GH_OK);

	assert_int_equal(classify(401, json, "{\"message\":\"Bad credentials\"}", (struct hdrs){0},
	                          true, &primary, &ra, msg),
	                 GH_ERR_AUTH);
	assert_non_null(strstr(msg, "AGENT_GITHUB_TOKEN"));
	assert_non_null(strstr(msg, "Bad credentials"));
	assert_non_null(strstr(msg, "create an issue in o/r"));
	assert_true(gh_error_is_fatal(GH_ERR_AUTH));
	assert_int_equal(classify(401, json, "{\"message\":\"Requires authentication\"}",
	                          (struct hdrs){0}, false, &primary, &ra, msg),
	                 GH_ERR_AUTH);
	assert_non_null(strstr(msg, "set AGENT_GITHUB_TOKEN"));

	/* 403: primary by header, secondary by retry-after or by body, else
	 * permission. */
	assert_int_equal(classify(403, json, "{\"message\":\"API rate limit exceeded\"}",
	                          (struct hdrs){"0", NULL}, true, &primary, &ra, msg),
	                 GH_ERR_RATE_LIMITED);
	assert_true(primary);
	assert_non_null(strstr(msg, "primary rate limit"));
	assert_int_equal(classify(403, json, "{\"message\":\"slow\"}", (struct hdrs){"12", "30"},
	                          true, &primary, &ra, msg),
	                 GH_ERR_RATE_LIMITED);
	assert_false(primary);
	assert_int_equal(ra, 30000);
	assert_int_equal(classify(403, json,
	                          "{\"message\":\"You have exceeded a secondary rate limit.\","
	                          "\"documentation_url\":\"https://docs.github.com/rest/overview/"
	                          "rate-limits-for-the-rest-api#about-secondary-rate-limits\"}",
	                          (struct hdrs){"4000", NULL}, true, &primary, &ra, msg),
	                 GH_ERR_RATE_LIMITED);
	assert_false(primary);
	assert_int_equal(ra, -1);
	assert_non_null(strstr(msg, "secondary rate limit"));
	assert_int_equal(classify(403, json,
	                          "{\"message\":\"Resource not accessible by personal access "
	                          "token\",\"documentation_url\":\"https://docs.github.com/rest/"
	                          "issues/issues#create-an-issue\"}",
	                          (struct hdrs){"4000", NULL}, true, &primary, &ra, msg),
	                 GH_ERR_FORBIDDEN);
	assert_non_null(strstr(msg, "Resource not accessible"));
	assert_non_null(strstr(msg, "permission"));
	assert_false(gh_error_is_fatal(GH_ERR_FORBIDDEN));
	assert_int_equal(classify(429, json, "{}", (struct hdrs){0}, true, &primary, &ra, msg),
	                 GH_ERR_RATE_LIMITED);

	assert_int_equal(classify(404, json, "{\"message\":\"Not Found\"}", (struct hdrs){0}, true,
	                          &primary, &ra, msg),
	                 GH_ERR_NOT_FOUND);
	assert_non_null(strstr(msg, "does not exist"));
	assert_int_equal(classify(410, json, "{\"message\":\"Issues are disabled for this repo\"}",
	                          (struct hdrs){0}, true, &primary, &ra, msg),
	                 GH_ERR_GONE);
	assert_non_null(strstr(msg, "Issues are disabled"));
	assert_int_equal(
	        classify(422, json,
	                 "{\"message\":\"Validation Failed\",\"errors\":[{\"resource\":\"Issue\","
	                 "\"code\":\"missing_field\",\"field\":\"title\"},{\"message\":\"body is "
	                 "too long\"},\"plain\"]}",
	                 (struct hdrs){0}, true, &primary, &ra, msg),
	        GH_ERR_INVALID);
	assert_non_null(strstr(msg, "Validation Failed: field 'title' of Issue is missing_field; "
	                            "body is too long; plain"));
	assert_int_equal(classify(400, json, "{\"message\":\"Problems parsing JSON\"}",
	                          (struct hdrs){0}, true, &primary, &ra, msg),
	                 GH_ERR_REFUSED);
	assert_int_equal(classify(301, json, "{}", (struct hdrs){0}, true, &primary, &ra, msg),
	                 GH_ERR_REFUSED);
	assert_non_null(strstr(msg, "redirect"));

	/* 5xx, and HTML where JSON was expected, are transient. */
	assert_int_equal(classify(502, "text/html", "<html><body>Unicorn!</body></html>",
	                          (struct hdrs){0}, true, &primary, &ra, msg),
	                 GH_ERR_TRANSIENT);
	assert_non_null(strstr(msg, "HTML page instead of JSON"));
	assert_int_equal(classify(500, json, "{\"message\":\"Server Error\"}", (struct hdrs){0},
	                          true, &primary, &ra, msg),
	                 GH_ERR_TRANSIENT);
	assert_int_equal(classify(200, NULL, "  <!DOCTYPE html>", (struct hdrs){0}, true, &primary,
	                          &ra, msg),
	                 GH_ERR_TRANSIENT);
	assert_int_equal(
	        classify(503, json, "not json {", (struct hdrs){0}, true, &primary, &ra, msg),
	        GH_ERR_TRANSIENT);
	assert_non_null(strstr(msg, "no message"));

	/* A quoted message is bounded and keeps no control characters. */
	char big[2048] = "{\"message\":\"";
	size_t n = strlen(big);
	for (int i = 0; i < 1000; i++)
		big[n++] = i % 50 == 0 ? '\t' : 'x';
	strcpy(big + n, "\"}");
	classify(404, json, big, (struct hdrs){0}, true, &primary, &ra, msg);
	assert_null(strchr(msg, '\t'));
	assert_true(strlen(msg) < 400);
}

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(gh_backoff_ms(2000, 60000, 1, 0, -1), 2000);
	assert_int_equal(gh_backoff_ms(2000, 60000, 2, 0, -1), 4000);
	assert_int_equal(gh_backoff_ms(2000, 60000, 3, 1, -1), 10400);
	assert_int_equal(gh_backoff_ms(2000, 60000, 10, 0, -1), 60000);
	assert_int_equal(gh_backoff_ms(2000, 60000, 1, 0, 30000), 30000);
	assert_int_equal(gh_backoff_ms(2000, 60000, 1, 0, 600000), 60000);
}

static void test_config_from_ga(void **state)
{
	(void)state;
	struct ga_config ga;
	memset(&ga, 0, sizeof ga);
	/* unset, as config_load leaves them: the adapter's defaults */
	ga.github_spacing_ms = ga.github_write_spacing_ms = -1;
	struct gh_config cfg;
	struct ga_err err = {{0}};
	assert_int_equal(gh_config_from_ga(&ga, &cfg, &err), -1);
	assert_non_null(strstr(err.msg, "AGENT_GITHUB_TOKEN"));
	ga.github_token = (char *)"ghp_x";
	ga.github_username = (char *)"ada";
	ga.github_api_url = (char *)"https://ghe.example/api/v3/";
	assert_int_equal(gh_config_from_ga(&ga, &cfg, &err), 0);
	assert_string_equal(cfg.api_url, "https://ghe.example/api/v3");
	assert_string_equal(cfg.token, "ghp_x");
	assert_string_equal(cfg.username, "ada");
	assert_int_equal(cfg.spacing_ms, GH_DEFAULT_SPACING_MS);
	assert_int_equal(cfg.write_spacing_ms, GH_DEFAULT_WRITE_SPACING_MS);
	assert_int_equal(cfg.low_budget, GH_DEFAULT_LOW_BUDGET);
	gh_config_free(&cfg);
	/* GA_GITHUB_SPACING_MS / GA_GITHUB_WRITE_SPACING_MS (tests against a fake) */
	ga.github_spacing_ms = 20;
	ga.github_write_spacing_ms = 0;
	assert_int_equal(gh_config_from_ga(&ga, &cfg, &err), 0);
	assert_int_equal(cfg.spacing_ms, 20);
	assert_int_equal(cfg.write_spacing_ms, 0);
	gh_config_free(&cfg);
	ga.github_spacing_ms = ga.github_write_spacing_ms = -1;
	ga.github_api_url = NULL;
	assert_int_equal(gh_config_from_ga(&ga, &cfg, &err), 0);
	assert_string_equal(cfg.api_url, CONFIG_DEFAULT_GITHUB_API_URL);
	gh_config_free(&cfg);
	gh_config_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_spacing),
	        cmocka_unit_test(test_primary_limit_ends_at_reset),
	        cmocka_unit_test(test_bogus_reset_is_clamped),
	        cmocka_unit_test(test_primary_403_with_skewed_clock),
	        cmocka_unit_test(test_low_budget_paces_and_never_refuses),
	        cmocka_unit_test(test_secondary_limits),
	        cmocka_unit_test(test_buckets_are_bounded),
	        cmocka_unit_test(test_classification),
	        cmocka_unit_test(test_backoff),
	        cmocka_unit_test(test_config_from_ga),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
