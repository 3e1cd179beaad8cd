/*
 * test_budget — daily token accounting: allow/deny decisions, the owner
 * exception, the UTC day boundary, persistence across a restart, damaged
 * state files, history bounds and the status line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fsx.h"
#include "modules/budget/budget.h"

#define DAY_MS INT64_C(86400000)
/* 2026-11-22T23:59:00Z and one minute later */
#define LATE     INT64_C(1795391940000)
#define NEXT_DAY (LATE + 60000)

struct fx {
	char dir[64];
	struct state_store st;
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	strcpy(fx->dir, "/tmp/ga-budget-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	assert_int_equal(state_store_init(&fx->st, fx->dir, "0.1.0", NULL), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
	assert_int_equal(system(cmd), 0);
	state_store_free(&fx->st);
	free(fx);
	return 0;
}

static void test_no_budget_always_allows(void **state)
{
	struct budget b;
	budget_init(&b, NULL, 0);
	budget_record(&b, LATE, 1000000, 1000000, 0, NULL);
	struct decision d;
	assert_true(budget_check(&b, LATE, false, &d));
	assert_int_equal(d.verdict, VERDICT_PASS);
	assert_string_equal(d.rule, "daily_token_budget");
	assert_non_null(strstr(d.reason, "LLM_DAILY_TOKEN_BUDGET unset"));
}

static void test_deny_past_budget_but_owner_may_talk(void **state)
{
	struct budget b;
	budget_init(&b, NULL, 1000);
	struct decision d;
	assert_true(budget_check(&b, LATE, false, &d));
	budget_record(&b, LATE, 600, 300, 900, NULL);
	assert_true(budget_check(&b, LATE, false, &d));
	assert_non_null(strstr(d.reason, "900 of 1000"));
	budget_record(&b, LATE, 80, 20, 100, NULL);
	assert_false(budget_check(&b, LATE, false, &d));
	assert_int_equal(d.verdict, VERDICT_BLOCK);
	assert_non_null(strstr(d.reason, "1000 of 1000 tokens used today (UTC 2026-11-22)"));
	assert_non_null(strstr(d.reason, "only owner conversations"));
	assert_true(budget_check(&b, LATE, true, &d));
	assert_int_equal(d.verdict, VERDICT_PASS);
	assert_non_null(strstr(d.reason, "owner"));
	/* a new UTC day starts from zero */
	assert_true(budget_check(&b, NEXT_DAY, false, &d));
	assert_non_null(strstr(d.reason, "0 of 1000"));
}

static void test_total_is_derived_when_missing(void **state)
{
	struct budget b;
	budget_init(&b, NULL, 0);
	budget_record(&b, LATE, 7, 5, 0, NULL);
	budget_record(&b, LATE, -3, 0, 0, NULL); /* nonsense from a provider is not subtracted */
	struct budget_day t;
	budget_today(&b, LATE, &t);
	assert_int_equal(t.total_tokens, 12);
	assert_int_equal(t.prompt_tokens, 7);
	assert_int_equal(t.calls, 2);
}

static void test_persists_across_restart(void **state)
{
	struct fx *fx = *state;
	struct budget b;
	budget_init(&b, &fx->st, 500);
	assert_int_equal(budget_record(&b, LATE, 100, 50, 150, NULL), 0);
	assert_int_equal(budget_record(&b, NEXT_DAY, 10, 5, 15, NULL), 0);

	struct budget again;
	budget_init(&again, &fx->st, 500);
	assert_int_equal(again.n_days, 2);
	struct budget_day t;
	budget_today(&again, NEXT_DAY, &t);
	assert_int_equal(t.total_tokens, 15);
	budget_today(&again, LATE, &t);
	assert_int_equal(t.total_tokens, 150);
	assert_int_equal(t.calls, 1);

	char line[256];
	budget_status_from_store(&fx->st, 500, NEXT_DAY, line, sizeof line);
	assert_string_equal(line, "15 of 500 tokens today (3%), 1 calls");
}

static void test_damaged_state_starts_from_zero(void **state)
{
	struct fx *fx = *state;
	char *path = fsx_join(fx->dir, "llm_usage.json");
	const char *bad[] = {
	        "not json at all",
	        "{\"version\":\"0.1.0\",\"savedAt\":\"x\",\"data\":{\"days\":[{\"date\":"
	        "\"yesterday\"},"
	        "{\"date\":\"2026-11-22\",\"total_tokens\":-5},{\"date\":\"2026-11-22\","
	        "\"total_tokens\":\"many\"}]}}",
	};
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(fsx_write_atomic(path, bad[i], strlen(bad[i]), NULL), 0);
		struct budget b;
		budget_init(&b, &fx->st, 100);
		struct budget_day t;
		budget_today(&b, LATE, &t);
		assert_int_equal(t.total_tokens, 0);
		assert_true(budget_check(&b, LATE, false, NULL));
	}
	free(path);
}

static void test_history_is_bounded(void **state)
{
	struct budget b;
	budget_init(&b, NULL, 0);
	for (int i = 0; i < 40; i++)
		budget_record(&b, LATE + i * DAY_MS, 1, 1, 2, NULL);
	assert_int_equal(b.n_days, BUDGET_HISTORY_DAYS);
	struct budget_day t;
	budget_today(&b, LATE + 39 * DAY_MS, &t);
	assert_int_equal(t.total_tokens, 2);
}

static void test_status_lines(void **state)
{
	struct budget b;
	budget_init(&b, NULL, 200000);
	budget_record(&b, LATE, 10000, 2345, 12345, NULL);
	char line[256];
	budget_status_line(&b, LATE, line, sizeof line);
	assert_string_equal(line, "12,345 of 200,000 tokens today (6%), 1 calls");
	budget_record(&b, LATE, 0, 0, 200000, NULL);
	budget_note_denied(&b, LATE);
	budget_status_line(&b, LATE, line, sizeof line);
	assert_string_equal(line, "212,345 of 200,000 tokens today (106%), 2 calls, 1 refused; "
	                          "budget spent: only owner conversations may call the model");
	struct budget none;
	budget_init(&none, NULL, 0);
	budget_status_line(&none, LATE, line, sizeof line);
	assert_string_equal(line,
	                    "0 tokens today, 0 calls (no daily budget: LLM_DAILY_TOKEN_BUDGET "
	                    "unset)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_no_budget_always_allows),
	        cmocka_unit_test(test_deny_past_budget_but_owner_may_talk),
	        cmocka_unit_test(test_total_is_derived_when_missing),
	        cmocka_unit_test_setup_teardown(test_persists_across_restart, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_damaged_state_starts_from_zero, setup,
	                                        teardown),
	        cmocka_unit_test(test_history_is_bounded),
	        cmocka_unit_test(test_status_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
