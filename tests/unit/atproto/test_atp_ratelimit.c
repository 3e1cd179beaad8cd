/*
 * test_atp_ratelimit — the Bluesky rate limiter on a clock the test sets
 * (spec runtime-bluesky §5.4, §11.6): spacing, a spent budget that ends at
 * its reset (never a lockout once remaining < 20), low-budget pacing that never refuses, a 429 hold
 * until ratelimit-reset, separate read / write / session budgets, the write-points estimate, and
 * bogus resets clamped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/atproto/ratelimit.h"

#define T0 ((int64_t)1800000000000)

static const char *secs(int64_t ms, char buf[32])
{
	snprintf(buf, 32, "%lld", (long long)(ms / 1000));
	return buf;
}

static void test_spacing(void **state)
{
	(void)state;
	struct atp_rate r;
	atp_rate_init(&r, 5000, 20);
	enum atp_wait_reason why;
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0, &why), 0);
	assert_int_equal(why, ATP_WAIT_NONE);
	atp_rate_started(&r, ATP_RL_READ, 0, T0);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_WRITE, 3, T0 + 1000, &why), 4000);
	assert_int_equal(why, ATP_WAIT_SPACING);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0 + 5000, &why), 0);
}

static void test_spent_budget_resumes_after_reset(void **state)
{
	(void)state;
	struct atp_rate r;
	atp_rate_init(&r, 0, 20);
	char b[32];
	int64_t reset = T0 + 300 * 1000;
	atp_rate_observe(&r, ATP_RL_READ, "3000", "0", secs(reset, b), "3000;w=300", T0);
	enum atp_wait_reason why;
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0, &why), 300 * 1000);
	assert_int_equal(why, ATP_WAIT_EXHAUSTED);
	/* writes are another budget */
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_WRITE, 3, T0, &why), 0);
	struct atp_budget bu;
	assert_int_equal(atp_rate_budget(&r, ATP_RL_READ, T0, &bu), 0);
	assert_int_equal(bu.remaining, 0);
	assert_string_equal(bu.policy, "3000;w=300");
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, reset - 1, &why), 1);
	/* after the reset the budget is forgotten and requests go, although no
	 * response has refreshed the header: never a lockout */
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, reset, &why), 0);
	assert_int_equal(why, ATP_WAIT_NONE);
	assert_int_equal(atp_rate_budget(&r, ATP_RL_READ, reset, &bu), 0);
	assert_int_equal(bu.remaining, -1);
}

static void test_low_budget_paces_never_refuses(void **state)
{
	(void)state;
	struct atp_rate r;
	atp_rate_init(&r, 0, 20);
	char b[32];
	int64_t reset = T0 + 100 * 1000;
	atp_rate_started(&r, ATP_RL_READ, 0, T0);
	atp_rate_observe(&r, ATP_RL_READ, "3000", "9", secs(reset, b), NULL, T0);
	enum atp_wait_reason why;
	/* 9 left over 100 s: one every 10 s */
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0, &why), 10 * 1000);
	assert_int_equal(why, ATP_WAIT_LOW_BUDGET);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0 + 10 * 1000, &why), 0);
	/* remaining 19 < 20 is pacing too, not a refusal */
	atp_rate_observe(&r, ATP_RL_READ, "3000", "19", secs(reset, b), NULL, T0);
	assert_true(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0, &why) > 0);
	assert_int_equal(why, ATP_WAIT_LOW_BUDGET);
	/* 20 is plenty */
	atp_rate_observe(&r, ATP_RL_READ, "3000", "20", secs(reset, b), NULL, T0);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0, &why), 0);
}

static void test_429_holds_until_reset(void **state)
{
	(void)state;
	struct atp_rate r;
	atp_rate_init(&r, 0, 20);
	enum atp_wait_reason why;
	int64_t w = atp_rate_limited(&r, ATP_RL_SESSION, T0 + 42 * 1000, -1, T0);
	assert_int_equal(w, 42 * 1000);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_SESSION, 0, T0 + 1000, &why), 41 * 1000);
	assert_int_equal(why, ATP_WAIT_HOLD);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0 + 1000, &why), 0);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_SESSION, 0, T0 + 42 * 1000, &why), 0);
	/* no reset: retry-after, else the default */
	assert_int_equal(atp_rate_limited(&r, ATP_RL_WRITE, 0, 7000, T0), 7000);
	assert_int_equal(atp_rate_limited(&r, ATP_RL_READ, 0, -1, T0), ATP_RATE_HOLD_DEFAULT_MS);
	/* a reset years away is clamped */
	assert_int_equal(atp_rate_limited(&r, ATP_RL_READ, T0 + (int64_t)1e12, -1, T0),
	                 ATP_RATE_RESET_MAX_MS);
	char b[32];
	atp_rate_observe(&r, ATP_RL_WRITE, "5000", "0", secs(T0 + (int64_t)1e12, b), NULL, T0);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_WRITE, 3, T0, &why), ATP_RATE_RESET_MAX_MS);
}

static void test_write_points(void **state)
{
	(void)state;
	struct atp_rate r;
	atp_rate_init(&r, 0, 20);
	enum atp_wait_reason why;
	int64_t t = T0;
	/* 1666 creates = 4998 points: the next create (3) would pass 5000 */
	for (int i = 0; i < 1666; i++)
		atp_rate_started(&r, ATP_RL_WRITE, ATP_WRITE_POINTS_CREATE, t);
	assert_int_equal(
	        atp_rate_wait_ms(&r, ATP_RL_WRITE, ATP_WRITE_POINTS_CREATE, t + 1000, &why),
	        3600 * 1000 - 1000);
	assert_int_equal(why, ATP_WAIT_POINTS);
	/* a delete (1) still fits; reads are not points */
	assert_int_equal(
	        atp_rate_wait_ms(&r, ATP_RL_WRITE, ATP_WRITE_POINTS_DELETE, t + 1000, &why), 0);
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, t + 1000, &why), 0);
	/* the next hour starts over */
	assert_int_equal(
	        atp_rate_wait_ms(&r, ATP_RL_WRITE, ATP_WRITE_POINTS_CREATE, t + 3600 * 1000, &why),
	        0);
}

static void test_clock_going_back_does_not_stall(void **state)
{
	(void)state;
	struct atp_rate r;
	atp_rate_init(&r, 5000, 20);
	enum atp_wait_reason why;
	atp_rate_started(&r, ATP_RL_READ, 0, T0 + (int64_t)2 * 3600 * 1000);
	/* the clock is set back two hours: at most one spacing, not two hours */
	assert_true(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0, &why) <= 5000);
}

static void test_garbage_headers_ignored(void **state)
{
	(void)state;
	struct atp_rate r;
	atp_rate_init(&r, 0, 20);
	atp_rate_observe(&r, ATP_RL_READ, "x", "-3", "soon", NULL, T0);
	struct atp_budget b;
	assert_int_equal(atp_rate_budget(&r, ATP_RL_READ, T0, &b), -1);
	enum atp_wait_reason why;
	assert_int_equal(atp_rate_wait_ms(&r, ATP_RL_READ, 0, T0, &why), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_spacing),
	        cmocka_unit_test(test_spent_budget_resumes_after_reset),
	        cmocka_unit_test(test_low_budget_paces_never_refuses),
	        cmocka_unit_test(test_429_holds_until_reset),
	        cmocka_unit_test(test_write_points),
	        cmocka_unit_test(test_clock_going_back_does_not_stall),
	        cmocka_unit_test(test_garbage_headers_ignored),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
