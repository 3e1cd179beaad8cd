/*
 * The labelled echo sets meet their quality targets, for the echo decision
 * the validator makes without a judge (opener, ensemble, band):
 *   tests/data/echo            recall ≥ 0.95 at false-positive rate ≤ 0.03;
 *   tests/data/echo/chat/dev   room conversations, the half tuned on, and
 *   tests/data/echo/chat/test  the half never tuned on: accuracy ≥ 0.85 at
 *                              false-positive rate ≤ 0.10.
 * Quality is deterministic, so this is a test; speed is bench/echo's
 * business.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "echo_cases.h"
#include "modules/validator/echo.h"

static struct echo_cases cases, chat_dev, chat_test;

static int setup(void **state)
{
	const char *src = getenv("GA_SOURCE_DIR");
	char dir[4096], err[512];
	snprintf(dir, sizeof dir, "%s/tests/data/echo", src ? src : GA_SOURCE_DIR);
	if (echo_cases_load_dir(dir, &cases, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	snprintf(dir, sizeof dir, "%s/tests/data/echo/chat/dev", src ? src : GA_SOURCE_DIR);
	if (echo_cases_load_dir(dir, &chat_dev, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	snprintf(dir, sizeof dir, "%s/tests/data/echo/chat/test", src ? src : GA_SOURCE_DIR);
	if (echo_cases_load_dir(dir, &chat_test, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	echo_cases_free(&cases);
	echo_cases_free(&chat_dev);
	echo_cases_free(&chat_test);
	echo_shutdown();
	return 0;
}

static void test_set_is_big_and_varied(void **state)
{
	assert_true(cases.ncases >= 400);
	static const char *const kinds[] = {
	        "restatement", "agreement_prefix", "reorder",  "synonym",  "quote_agree", "summary",
	        "new_fact",    "disagreement",     "question", "ack_plus", "code",        "link"};
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

static size_t count_kind(const struct echo_cases *c, const char *kind)
{
	size_t n = 0;
	for (size_t i = 0; i < c->ncases; i++)
		n += strcmp(c->cases[i].kind, kind) == 0;
	return n;
}

static void test_chat_set_shape(void **state)
{
	/* At least 400 room cases, both halves with the kinds. */
	assert_true(chat_dev.ncases + chat_test.ncases >= 400);
	static const char *const kinds[] = {
	        "synonym",        "restated_agreement",    "repeated_question", "number_format",
	        "changed_number", "changed_owner",         "negation",          "opener_new",
	        "opener_echo",    "same_words_new_meaning"};
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		assert_true(count_kind(&chat_dev, kinds[k]) >= 5);
		assert_true(count_kind(&chat_test, kinds[k]) >= 5);
	}
	/* Histories have roles: some host, some self lines. */
	size_t host = 0, self = 0;
	for (size_t i = 0; i < chat_test.nmsgs; i++) {
		host += !chat_test.msgs[i].agent;
		self += chat_test.msgs[i].self;
	}
	assert_true(host > 0 && self > 0);
}

/* The goal, without a judge: accuracy ≥ 0.85 at false-positive rate
 * ≤ 0.10 on room conversations — on the half never tuned on, and on the
 * one tuned on. */
static void test_chat_goals(void **state)
{
	const struct echo_cases *halves[] = {&chat_dev, &chat_test};
	for (size_t h = 0; h < 2; h++) {
		struct echo_quality q;
		echo_cases_evaluate_judge(halves[h], ECHO_JUDGE_NONE, NULL, &q);
		fprintf(stderr, "chat %s: accuracy %.3f F1 %.3f FPR %.3f\n", h ? "test" : "dev",
		        echo_quality_accuracy(&q), echo_quality_f1(&q), echo_quality_fpr(&q));
		assert_true(echo_quality_accuracy(&q) >= 0.85);
		assert_true(echo_quality_fpr(&q) <= 0.10);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_set_is_big_and_varied),
	        cmocka_unit_test(test_quality_targets),
	        cmocka_unit_test(test_validator_agrees),
	        cmocka_unit_test(test_chat_set_shape),
	        cmocka_unit_test(test_chat_goals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
