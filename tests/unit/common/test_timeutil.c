/* timeutil: ISO-8601 formatting and strict parsing, clocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <string.h>

#include "common/timeutil.h"

static void check_fmt(int64_t ms, const char *want)
{
	char buf[TIME_ISO_LEN + 1];
	assert_string_equal(time_format_iso(ms, buf), want);
	assert_int_equal(strlen(buf), TIME_ISO_LEN);
}

static int64_t parse(const char *s)
{
	int64_t ms = -12345;
	if (time_parse_iso(s, &ms) != 0)
		fail_msg("expected '%s' to parse", s);
	return ms;
}

static void bad(const char *s)
{
	int64_t ms = 777;
	if (time_parse_iso(s, &ms) == 0)
		fail_msg("expected '%s' to be rejected", s);
	assert_int_equal(ms, 777); /* untouched on failure */
}

static void test_format(void **state)
{
	check_fmt(0, "1970-01-01T00:00:00.000Z");
	check_fmt(1, "1970-01-01T00:00:00.001Z");
	check_fmt(-1, "1969-12-31T23:59:59.999Z");
	check_fmt(951782400000LL, "2000-02-29T00:00:00.000Z");
	check_fmt(1709164800000LL, "2024-02-29T00:00:00.000Z");
	check_fmt(1795341600123LL, "2026-11-22T10:00:00.123Z");
	check_fmt(253402300799999LL, "9999-12-31T23:59:59.999Z");
	check_fmt(-62167219200000LL, "0000-01-01T00:00:00.000Z");
	/* out of the four-digit range: clamped, never overflowing the buffer */
	check_fmt(INT64_MAX, "9999-12-31T23:59:59.999Z");
	check_fmt(INT64_MIN, "0000-01-01T00:00:00.000Z");
	char d[11];
	assert_string_equal(time_format_date(1709164800000LL + 86399999, d), "2024-02-29");
	assert_string_equal(time_format_date(0, d), "1970-01-01");
}

static void test_parse_round_trips(void **state)
{
	const int64_t samples[] = {0,
	                           1,
	                           -1,
	                           999,
	                           951782400000LL,
	                           1709164800000LL,
	                           1795341600123LL,
	                           4102444799999LL,
	                           -62167219200000LL,
	                           253402300799999LL};
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		char buf[TIME_ISO_LEN + 1];
		time_format_iso(samples[i], buf);
		assert_int_equal(parse(buf), samples[i]);
	}
}

static void test_parse_variants(void **state)
{
	assert_int_equal(parse("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(parse("2024-02-29T12:00:00Z"), 1709208000000LL);
	assert_int_equal(parse("1970-01-01T00:00:00.5Z"), 500);
	assert_int_equal(parse("1970-01-01T00:00:00.12Z"), 120);
	assert_int_equal(parse("1970-01-01T00:00:00.123456789Z"), 123); /* truncated */
	assert_int_equal(parse("1970-01-01T00:00:00.999999999Z"), 999);
	assert_int_equal(parse("1970-01-01T02:00:00+02:00"), 0);
	assert_int_equal(parse("1969-12-31T19:30:00-04:30"), 0);
	assert_int_equal(parse("1970-01-01T00:00:00.250+00:00"), 250);
	assert_int_equal(parse("2000-02-29T00:00:00Z"), 951782400000LL); /* /400 leap */
}

static void test_parse_rejects(void **state)
{
	bad("2023-02-29T00:00:00Z"); /* not a leap year */
	bad("1900-02-29T00:00:00Z"); /* /100, not /400 */
	bad("2024-02-30T00:00:00Z");
	bad("2024-04-31T00:00:00Z");
	bad("2024-13-01T00:00:00Z");
	bad("2024-00-01T00:00:00Z");
	bad("2024-01-00T00:00:00Z");
	bad("2024-01-01T24:00:00Z");
	bad("2024-01-01T00:60:00Z");
	bad("2024-01-01T00:00:60Z");
	bad("2024-01-01T00:00:00");             /* no zone */
	bad("2024-01-01T00:00:00Zjunk");        /* trailing junk */
	bad("2024-01-01T00:00:00.Z");           /* empty fraction */
	bad("2024-01-01T00:00:00.1234567890Z"); /* 10 digits */
	bad("2024-01-01 00:00:00Z");
	bad("2024-1-01T00:00:00Z");
	bad("2024-01-01T00:00:00+0200");
	bad("2024-01-01T00:00:00+24:00");
	bad("2024-01-01T00:00:00+02:60");
	bad("garbage");
	bad("");
	bad("2024-01-01T00:00:00.000z");
	bad("+2024-01-01T00:00:00Z");
	bad("2024-01-01");
	int64_t ms;
	assert_int_equal(time_parse_iso(NULL, &ms), -1);
}

static void test_clocks_move_forward(void **state)
{
	int64_t now = time_now_ms();
	assert_true(now > 1600000000000LL); /* after 2020 */
	uint64_t a = time_mono_ms();
	uint64_t b = time_mono_ms();
	assert_true(b >= a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_format),
	        cmocka_unit_test(test_parse_round_trips),
	        cmocka_unit_test(test_parse_variants),
	        cmocka_unit_test(test_parse_rejects),
	        cmocka_unit_test(test_clocks_move_forward),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
