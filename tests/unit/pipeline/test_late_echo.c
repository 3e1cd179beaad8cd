/*
 * pipeline_late_echo — §9 checks 5–6 once more just before the send (loop-sim
 * finding 3, run G round 44): the candidate was approved against the window
 * of its validation; a peer's restatement arrived during the reply and
 * typing delays. Against the window as it is now the candidate is an echo
 * of that message and is withdrawn, with a decision naming it. Nothing
 * fresh, a candidate with commitments (the validator's exemption) and a
 * fresh message that says something else leave it alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "modules/validator/validator_text.h"

#include "modules/pipeline/pipeline.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

static const char *HOST = "How should we handle retries when GitHub rate limits us? (round 44)";
static const char *ADA = "Ada: the dashboard needs a latency panel for the webhook queue, per "
                         "region.";
static const char *CAL = "Ben, How should we handle retries when GitHub rate limits us? (round "
                         "44).";
static const char *MINE = "Cal, How should we handle retries when GitHub rate limits us? (round "
                          "44).";

/* The room as the validator saw it (host, Ada), then Cal's restatement. */
static struct echo_window *room(bool with_cal)
{
	struct echo_window *w = echo_window_new(20);
	echo_window_push(w, "host", false, HOST);
	echo_window_push(w, "Ada", true, ADA);
	if (with_cal)
		echo_window_push(w, "Cal", true, CAL);
	return w;
}

static void before_of(struct echo_result *out)
{
	/* what the validator found then: not an echo */
	struct echo_window *w = room(false);
	struct validator_context ctx = {.platform = VALIDATOR_PLATFORM_SPACE, .window = w};
	struct validator_decision vd;
	memset(&vd, 0, sizeof vd);
	assert_int_equal(validator_validate(MINE, &ctx, &vd), VALIDATOR_ACCEPT);
	assert_true(vd.echo_ran);
	*out = vd.echo;
	validator_decision_clear(&vd);
	echo_window_free(w);
}

static void test_restatement_during_delay(void **state)
{
	(void)state;
	struct echo_result before;
	before_of(&before);
	struct echo_window *now = room(true);
	struct pipeline_fresh fresh[1] = {{"Cal", CAL}};
	struct decision why;
	memset(&why, 0, sizeof why);
	assert_true(pipeline_late_echo(MINE, 0, now, &before, fresh, 1, &why));
	assert_int_equal(why.verdict, VERDICT_DROP);
	assert_string_equal(why.rule, "echo_late");
	assert_non_null(strstr(why.reason, "echo of Cal's \"Ben, How should we handle retries"));
	assert_non_null(strstr(why.reason, "arrived during the send delay"));
	/* the validator on the window of now agrees: the same thresholds */
	struct validator_context ctx = {.platform = VALIDATOR_PLATFORM_SPACE, .window = now};
	struct validator_decision vd;
	memset(&vd, 0, sizeof vd);
	assert_int_equal(validator_validate(MINE, &ctx, &vd), VALIDATOR_REJECT);
	assert_string_equal(vd.rule, "semantic_echo");
	validator_decision_clear(&vd);
	echo_window_free(now);
}

static void test_left_alone(void **state)
{
	(void)state;
	struct echo_result before;
	before_of(&before);
	struct echo_window *now = room(true);
	struct pipeline_fresh fresh[1] = {{"Cal", CAL}};
	struct decision why;
	memset(&why, 0, sizeof why);
	/* nothing arrived since the validation */
	assert_false(pipeline_late_echo(MINE, 0, now, &before, fresh, 0, &why));
	/* the commitment exemption of checks 5–6 */
	assert_false(pipeline_late_echo(MINE, 1, now, &before, fresh, 1, &why));
	assert_null(why.rule);
	echo_window_free(now);
	/* a peer said something else meanwhile */
	static const char *DEE = "Dee, the staging database needs a new index on orders before "
	                         "Friday's load test.";
	now = room(false);
	echo_window_push(now, "Dee", true, DEE);
	struct pipeline_fresh other[1] = {{"Dee", DEE}};
	assert_false(pipeline_late_echo(MINE, 0, now, &before, other, 1, &why));
	assert_null(why.rule);
	echo_window_free(now);
}

static int teardown(void **state)
{
	(void)state;
	echo_shutdown();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_restatement_during_delay),
	        cmocka_unit_test(test_left_alone),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
