/* json: parser strictness and errors, typed getters, JS number formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

static cJSON *parse_ok(const char *s)
{
	struct ga_err e = {{0}};
	cJSON *v = json_parse(s, strlen(s), &e);
	if (!v)
		fail_msg("expected %s to parse, got: %s", s, e.msg);
	return v;
}

/* Asserts that parsing fails and that the error starts with `prefix`. */
static void parse_bad_len(const char *s, size_t len, const char *prefix)
{
	struct ga_err e = {{0}};
	cJSON *v = json_parse(s, len, &e);
	if (v) {
		cJSON_Delete(v);
		fail_msg("expected %.*s to be rejected", (int)len, s);
	}
	if (strncmp(e.msg, prefix, strlen(prefix)) != 0)
		fail_msg("input %.*s: error '%s' does not start with '%s'", (int)len, s, e.msg,
		         prefix);
}

static void parse_bad(const char *s, const char *prefix)
{
	parse_bad_len(s, strlen(s), prefix);
}

static void test_parse_valid_values(void **state)
{
	const char *ok[] = {"{}",
	                    "[]",
	                    "0",
	                    "-0",
	                    "1.5e3",
	                    "-1E-2",
	                    "\"\"",
	                    "true",
	                    "false",
	                    "null",
	                    " \t\r\n{\"a\" : [1, {\"b\": null}]} \n",
	                    "\"\\u00e9\\ud83d\\ude00\\/\"",
	                    "\"caf\xc3\xa9\""};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cJSON_Delete(parse_ok(ok[i]));
	cJSON *v = parse_ok("\"\\ud83d\\ude00\"");
	assert_string_equal(v->valuestring, "\xf0\x9f\x98\x80");
	cJSON_Delete(v);
}

static void test_parse_reads_only_len_bytes(void **state)
{
	/* Not NUL-terminated: the byte after the value must not be read as
	 * part of it. */
	const char buf[] = "{\"a\":1}GARBAGE";
	struct ga_err e = {{0}};
	cJSON *v = json_parse(buf, 7, &e);
	assert_non_null(v);
	assert_int_equal(json_int_or(v, "a", 0), 1);
	cJSON_Delete(v);
	char exact[3] = {'[', '7', ']'}; /* no NUL anywhere */
	v = json_parse(exact, sizeof(exact), &e);
	assert_non_null(v);
	assert_true(cJSON_IsArray(v));
	cJSON_Delete(v);
}

static void test_parse_errors_name_the_offset(void **state)
{
	parse_bad("", "invalid JSON at byte 0");
	parse_bad_len(NULL, 0, "invalid JSON at byte 0");
	parse_bad("   ", "invalid JSON at byte 3");
	parse_bad("{\"a\":1", "invalid JSON at byte 6");     /* truncated */
	parse_bad("{\"a\":1}x", "invalid JSON at byte 7");   /* trailing garbage */
	parse_bad("{\"a\":1} {}", "invalid JSON at byte 8"); /* second value */
	parse_bad("[1,]", "invalid JSON at byte 3");
	parse_bad("{\"a\" 1}", "invalid JSON at byte 5");
	parse_bad("{a:1}", "invalid JSON at byte 1");
	parse_bad("\"abc", "invalid JSON at byte 4");
	parse_bad("tru", "invalid JSON at byte 3");
	parse_bad("nul1", "invalid JSON at byte 3");
	/* cJSON alone would accept these */
	parse_bad("+1", "invalid JSON at byte 0");
	parse_bad("01", "invalid JSON at byte 1");
	parse_bad(".5", "invalid JSON at byte 0");
	parse_bad("1.", "invalid JSON at byte 2");
	parse_bad("1e", "invalid JSON at byte 2");
	parse_bad("\"a\tb\"", "invalid JSON at byte 2"); /* raw control char */
	parse_bad("\"\\x\"", "invalid JSON at byte 2");
	parse_bad("\"\\u12\"", "invalid JSON at byte 5");
	parse_bad("\"\\ud800\"", "invalid JSON at byte 1");        /* lone high */
	parse_bad("\"\\udc00\"", "invalid JSON at byte 1");        /* lone low */
	parse_bad("\"\\ud800\\u0041\"", "invalid JSON at byte 1"); /* bad pair */
	parse_bad("\"a\\u0000b\"", "invalid JSON at byte 2");
	parse_bad("\"\xc3\x28\"", "invalid JSON at byte 1");     /* invalid UTF-8 */
	parse_bad("\"\xed\xa0\x80\"", "invalid JSON at byte 1"); /* CESU surrogate */
	parse_bad("NaN", "invalid JSON at byte 0");
	parse_bad("[1 2]", "invalid JSON at byte 3");
}

static void test_parse_embedded_nul(void **state)
{
	parse_bad_len("{\"a\":1}\0", 8, "invalid JSON at byte 7");
	parse_bad_len("{\"a\"\0:1}", 8, "invalid JSON at byte 4");
	parse_bad_len("\"a\0b\"", 5, "invalid JSON at byte 2");
	parse_bad_len("\0", 1, "invalid JSON at byte 0");
}

static char *nested(int depth, char open, char close)
{
	char *s = malloc((size_t)depth * 2 + 1);
	for (int i = 0; i < depth; i++) {
		s[i] = open;
		s[depth * 2 - 1 - i] = close;
	}
	s[depth * 2] = '\0';
	return s;
}

static void test_parse_depth_limit(void **state)
{
	char *s = nested(JSON_MAX_DEPTH, '[', ']');
	cJSON_Delete(parse_ok(s));
	free(s);
	s = nested(JSON_MAX_DEPTH + 1, '[', ']');
	parse_bad(s, "JSON nested deeper than 128 levels");
	free(s);
	/* far deeper than cJSON's own limit, and unterminated */
	s = nested(100000, '[', ']');
	s[100000] = '\0';
	parse_bad(s, "JSON nested deeper than 128 levels");
	free(s);
	/* objects count too; brackets inside strings do not */
	struct ga_err e = {{0}};
	char buf[8192];
	size_t o = 0;
	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "{\"k\":");
	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "1");
	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		buf[o++] = '}';
	assert_null(json_parse(buf, o, &e));
	assert_non_null(strstr(e.msg, "nested deeper than 128"));
	cJSON_Delete(
	        parse_ok("[\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	                 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	                 "[[[[[[[[\"]"));
}

static const char *doc = "{\"s\":\"str\",\"i\":42,\"neg\":-7,\"big\":9007199254740992,"
                         "\"toobig\":9007199254740994,\"f\":1.5,\"huge\":1e300,\"b\":true,"
                         "\"o\":{\"x\":1},\"a\":[1,2],\"n\":null,\"Case\":1}";

static void test_getters_success(void **state)
{
	cJSON *v = parse_ok(doc);
	struct ga_err e = {{0}};
	const char *s;
	int64_t i;
	double d;
	bool b;
	const cJSON *c;
	assert_int_equal(json_get_string(v, "s", &s, &e), 0);
	assert_string_equal(s, "str");
	assert_int_equal(json_get_int(v, "i", &i, &e), 0);
	assert_int_equal(i, 42);
	assert_int_equal(json_get_int(v, "neg", &i, &e), 0);
	assert_int_equal(i, -7);
	assert_int_equal(json_get_int(v, "big", &i, &e), 0);
	assert_int_equal(i, 9007199254740992LL);
	assert_int_equal(json_get_double(v, "f", &d, &e), 0);
	assert_true(d == 1.5);
	assert_int_equal(json_get_double(v, "i", &d, &e), 0);
	assert_true(d == 42.0);
	assert_int_equal(json_get_bool(v, "b", &b, &e), 0);
	assert_true(b);
	assert_int_equal(json_get_object(v, "o", &c, &e), 0);
	assert_int_equal(json_int_or(c, "x", 0), 1);
	assert_int_equal(json_get_array(v, "a", &c, &e), 0);
	assert_int_equal(cJSON_GetArraySize(c), 2);
	cJSON_Delete(v);
}

static void expect_err(int rc, const struct ga_err *e, const char *want)
{
	assert_int_equal(rc, -1);
	assert_string_equal(e->msg, want);
}

static void test_getters_missing_and_wrong_type(void **state)
{
	cJSON *v = parse_ok(doc);
	struct ga_err e = {{0}};
	const char *s = "untouched";
	int64_t i = 5;
	double d;
	bool b;
	const cJSON *c;
	expect_err(json_get_string(v, "nope", &s, &e), &e, "field 'nope' is missing");
	assert_string_equal(s, "untouched");
	expect_err(json_get_string(v, "i", &s, &e), &e, "field 'i' must be a string");
	expect_err(json_get_string(v, "n", &s, &e), &e, "field 'n' must be a string");
	expect_err(json_get_string(v, "case", &s, &e), &e, "field 'case' is missing");
	expect_err(json_get_int(v, "nope", &i, &e), &e, "field 'nope' is missing");
	expect_err(json_get_int(v, "s", &i, &e), &e, "field 's' must be an integer");
	expect_err(json_get_int(v, "f", &i, &e), &e, "field 'f' must be an integer");
	expect_err(json_get_int(v, "huge", &i, &e), &e, "field 'huge' must be an integer");
	expect_err(json_get_int(v, "toobig", &i, &e), &e, "field 'toobig' must be an integer");
	expect_err(json_get_int(v, "b", &i, &e), &e, "field 'b' must be an integer");
	assert_int_equal(i, 5);
	expect_err(json_get_double(v, "nope", &d, &e), &e, "field 'nope' is missing");
	expect_err(json_get_double(v, "s", &d, &e), &e, "field 's' must be a number");
	expect_err(json_get_bool(v, "nope", &b, &e), &e, "field 'nope' is missing");
	expect_err(json_get_bool(v, "i", &b, &e), &e, "field 'i' must be a boolean");
	expect_err(json_get_object(v, "nope", &c, &e), &e, "field 'nope' is missing");
	expect_err(json_get_object(v, "a", &c, &e), &e, "field 'a' must be an object");
	expect_err(json_get_array(v, "nope", &c, &e), &e, "field 'nope' is missing");
	expect_err(json_get_array(v, "o", &c, &e), &e, "field 'o' must be an array");
	/* NULL and non-object containers are "missing" */
	expect_err(json_get_string(NULL, "s", &s, &e), &e, "field 's' is missing");
	const cJSON *arr = cJSON_GetObjectItem(v, "a");
	expect_err(json_get_int(arr, "0", &i, &e), &e, "field '0' is missing");
	/* a NULL err is fine */
	assert_int_equal(json_get_string(v, "nope", &s, NULL), -1);
	cJSON_Delete(v);
}

static void test_or_getters(void **state)
{
	cJSON *v = parse_ok(doc);
	assert_string_equal(json_string_or(v, "s", "d"), "str");
	assert_string_equal(json_string_or(v, "i", "d"), "d");
	assert_string_equal(json_string_or(v, "nope", "d"), "d");
	assert_null(json_string_or(NULL, "s", NULL));
	assert_int_equal(json_int_or(v, "i", 0), 42);
	assert_int_equal(json_int_or(v, "f", -1), -1);
	assert_int_equal(json_int_or(v, "s", -1), -1);
	assert_int_equal(json_int_or(v, "toobig", -1), -1);
	assert_true(json_double_or(v, "f", 0) == 1.5);
	assert_true(json_double_or(v, "s", 2.5) == 2.5);
	assert_true(json_bool_or(v, "b", false));
	assert_false(json_bool_or(v, "i", false));
	assert_true(json_bool_or(v, "nope", true));
	assert_true(json_bool_or(NULL, "b", true));
	cJSON_Delete(v);
}

static void test_print_roundtrip(void **state)
{
	cJSON *v = parse_ok("{ \"a\" : [1, \"x\\ny\", true, null] }");
	char *s = json_print(v);
	assert_string_equal(s, "{\"a\":[1,\"x\\ny\",true,null]}");
	free(s);
	cJSON_Delete(v);
	s = json_print(NULL);
	assert_string_equal(s, "null");
	free(s);
}

static void check_js(double v, const char *want)
{
	char buf[32];
	assert_string_equal(json_number_js(v, buf), want);
}

/* Expected values are String(x) in JavaScript. */
static void test_number_js_vectors(void **state)
{
	check_js(0, "0");
	check_js(-0.0, "0");
	check_js(1, "1");
	check_js(-1, "-1");
	check_js(-1.5, "-1.5");
	check_js(0.1, "0.1");
	check_js(0.1 + 0.2, "0.30000000000000004");
	check_js(1e21, "1e+21");
	check_js(1e20, "100000000000000000000");
	check_js(123456789012345680000.0, "123456789012345680000");
	check_js(1e-7, "1e-7");
	check_js(1.5e-7, "1.5e-7");
	check_js(0.000001, "0.000001");
	check_js(1.2345e-6, "0.0000012345");
	check_js(123456789012, "123456789012");
	check_js(9007199254740992.0, "9007199254740992");
	check_js(NAN, "null");
	check_js(INFINITY, "null");
	check_js(-INFINITY, "null");
	check_js(1.7976931348623157e308, "1.7976931348623157e+308");
	check_js(5e-324, "5e-324");
	check_js(-2.5e25, "-2.5e+25");
	check_js(100, "100");
	check_js(3.14159, "3.14159");
	check_js(-0.5, "-0.5");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_valid_values),
	        cmocka_unit_test(test_parse_reads_only_len_bytes),
	        cmocka_unit_test(test_parse_errors_name_the_offset),
	        cmocka_unit_test(test_parse_embedded_nul),
	        cmocka_unit_test(test_parse_depth_limit),
	        cmocka_unit_test(test_getters_success),
	        cmocka_unit_test(test_getters_missing_and_wrong_type),
	        cmocka_unit_test(test_or_getters),
	        cmocka_unit_test(test_print_roundtrip),
	        cmocka_unit_test(test_number_js_vectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
