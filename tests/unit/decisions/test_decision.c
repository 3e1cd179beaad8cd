/* The decision value: names both ways, decision_set's formatting and its cut
 * on a UTF-8 boundary, and which verdicts let a message go on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <string.h>

#include "modules/decisions/decision.h"

static void test_verdict_names_round_trip(void **state)
{
	for (int v = 0; v < VERDICT_COUNT; v++) {
		const char *n = decision_verdict_name((enum decision_verdict)v);
		assert_string_not_equal(n, "unknown");
		assert_int_equal(decision_verdict_parse(n), v);
	}
	assert_string_equal(decision_verdict_name(VERDICT_BLOCK), "block");
	assert_string_equal(decision_verdict_name(VERDICT_COUNT), "unknown");
	assert_string_equal(decision_verdict_name((enum decision_verdict) - 1), "unknown");
	assert_int_equal(decision_verdict_parse("Block"), -1);
	assert_int_equal(decision_verdict_parse(""), -1);
	assert_int_equal(decision_verdict_parse("unknown"), -1);
	assert_int_equal(decision_verdict_parse(NULL), -1);
}

static void test_stage_names_round_trip(void **state)
{
	for (int s = 0; s < STAGE_COUNT; s++) {
		const char *n = decision_stage_name((enum decision_stage)s);
		assert_string_not_equal(n, "unknown");
		assert_int_equal(decision_stage_parse(n), s);
	}
	assert_string_equal(decision_stage_name(STAGE_VALIDATOR), "validator");
	assert_string_equal(decision_stage_name(STAGE_COUNT), "unknown");
	assert_int_equal(decision_stage_parse("gate "), -1);
	assert_int_equal(decision_stage_parse(NULL), -1);
}

static void test_set_formats(void **state)
{
	struct decision d;
	assert_ptr_equal(decision_set(&d, VERDICT_BLOCK, "chain_length",
	                              "chain %d > MAX_ACL %d: blocked, not even a reaction", 5, 4),
	                 &d);
	assert_int_equal(d.verdict, VERDICT_BLOCK);
	assert_string_equal(d.rule, "chain_length");
	assert_string_equal(d.reason, "chain 5 > MAX_ACL 4: blocked, not even a reaction");
	decision_set(&d, VERDICT_PASS, NULL, NULL);
	assert_string_equal(d.rule, "");
	assert_string_equal(d.reason, "");
}

/* prefix of `fill` ASCII bytes, then `tail`; the expected kept length. */
static const struct {
	size_t fill;
	const char *tail;
	size_t want;
} cuts[] = {
        {DECISION_REASON_MAX - 1, "", DECISION_REASON_MAX - 1},         /* exactly fits */
        {DECISION_REASON_MAX, "", DECISION_REASON_MAX - 1},             /* one over */
        {DECISION_REASON_MAX - 3, "\xC3\xA9", DECISION_REASON_MAX - 1}, /* é ends at the limit */
        {DECISION_REASON_MAX - 2, "\xC3\xA9", DECISION_REASON_MAX - 2}, /* é straddles */
        {DECISION_REASON_MAX - 4, "\xE2\x82\xAC", DECISION_REASON_MAX - 1}, /* € fits */
        {DECISION_REASON_MAX - 3, "\xE2\x82\xAC", DECISION_REASON_MAX - 3}, /* € straddles */
        {DECISION_REASON_MAX - 2, "\xE2\x82\xAC", DECISION_REASON_MAX - 2},
        {DECISION_REASON_MAX - 4, "\xF0\x9F\x98\x80", DECISION_REASON_MAX - 4}, /* 😀 straddles */
        {DECISION_REASON_MAX - 5, "\xF0\x9F\x98\x80", DECISION_REASON_MAX - 1}, /* 😀 fits */
        {1000, "", DECISION_REASON_MAX - 1}, /* longer than the formatting buffer */
};

static void test_set_cuts_on_utf8_boundary(void **state)
{
	char in[1100];
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		memset(in, 'a', cuts[i].fill);
		strcpy(in + cuts[i].fill, cuts[i].tail);
		strcat(in, "zzzz"); /* always something after the interesting part */
		struct decision d;
		decision_set(&d, VERDICT_INFO, "r", "%s", in);
		if (strlen(d.reason) != cuts[i].want)
			fail_msg("case %zu: kept %zu bytes, want %zu", i, strlen(d.reason),
			         cuts[i].want);
		assert_memory_equal(d.reason, in, cuts[i].want);
	}
	/* no cut when it all fits */
	struct decision d;
	decision_set(&d, VERDICT_INFO, "r", "%s", "h\xC3\xA9llo");
	assert_string_equal(d.reason, "h\xC3\xA9llo");
}

static void test_goes_on(void **state)
{
	static const bool want[VERDICT_COUNT] = {
	        [VERDICT_PASS] = true,
	        [VERDICT_APPROVE] = true,
	        [VERDICT_EDIT] = true,
	        [VERDICT_SENT] = true,
	};
	for (int v = 0; v < VERDICT_COUNT; v++)
		assert_int_equal(decision_goes_on((enum decision_verdict)v), want[v]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_verdict_names_round_trip),
	        cmocka_unit_test(test_stage_names_round_trip),
	        cmocka_unit_test(test_set_formats),
	        cmocka_unit_test(test_set_cuts_on_utf8_boundary),
	        cmocka_unit_test(test_goes_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
