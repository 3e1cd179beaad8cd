/*
 * The labelled echo set (tests/data/echo) meets the quality
 * targets: recall ≥ 0.95 with false-positive rate ≤ 0.03, for the echo
 * decision the validator makes without a judge (ensemble + band). Quality is
 * deterministic, so this is a test; speed is bench/echo's business.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "echo_cases.h"
#include "modules/validator/echo.h"

static struct echo_cases cases;

static int setup(void **state)
{
	const char *src = getenv("GA_SOURCE_DIR");
	char dir[4096], err[512];
	snprintf(dir, sizeof dir, "%s/tests/data/echo", src ? src : GA_SOURCE_DIR);
	if (echo_cases_load_dir(dir, &cases, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	echo_cases_free(&cases);
	echo_shutdown();
	return 0;
}

static void test_set_is_big_and_varied(void **state)
{
	assert_true(cases.ncases >= 400);
	static const char *const kinds[] = {"restatement", "agreement_prefix", "reorder",
					    "synonym", "quote_agree", "summary", "new_fact",
					    "disagreement", "question", "ack_plus", "code", "link"};
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		size_t n = 0;
		for (size_t i = 0; i < cases.ncases; i++)
			n += strcmp(cases.cases[i].kind, kinds[k]) == 0;
		assert_true(n >= 5);
	}
}

static void test_quality_targets(void **state)
{
	struct echo_quality q;
	echo_cases_evaluate(&cases, false, stderr, &q);
	fprintf(stderr, "echo quality: recall %.3f fpr %.3f precision %.3f (%zu cases)\n",
		echo_quality_recall(&q), echo_quality_fpr(&q), echo_quality_precision(&q),
		cases.ncases);
	assert_true(echo_quality_recall(&q) >= 0.95);
	assert_true(echo_quality_fpr(&q) <= 0.03);
}

static void test_validator_agrees(void **state)
{
	/* The validator's own decision (checks 4 and 5) must be at least as
	 * good: the opener check can only add true echoes here. */
	struct echo_quality q;
	echo_cases_evaluate(&cases, true, NULL, &q);
	assert_true(echo_quality_recall(&q) >= 0.95);
	assert_true(echo_quality_fpr(&q) <= 0.03);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_is_big_and_varied),
		cmocka_unit_test(test_quality_targets),
		cmocka_unit_test(test_validator_agrees),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
