/* .env parsing: the grammar of common/env.h, and malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/env.h"

static struct env_file parse_ok(const char *text)
{
	struct env_file f;
	struct ga_err err = {{0}};
	int rc = env_parse(text, strlen(text), &f, &err);
	if (rc != 0)
		fail_msg("unexpected parse error: %s", err.msg);
	return f;
}

static void parse_bad(const char *text, const char *expect_in_error)
{
	struct env_file f;
	struct ga_err err = {{0}};
	/* An exact-size heap copy without a NUL, so ASan sees any read past
	 * the end (a string literal's NUL would hide it). */
	size_t n = strlen(text);
	char *exact = malloc(n ? n : 1);
	memcpy(exact, text, n);
	int rc = env_parse(exact, n, &f, &err);
	free(exact);
	assert_int_equal(rc, -1);
	assert_int_equal(f.count, 0);
	if (!strstr(err.msg, expect_in_error))
		fail_msg("error '%s' lacks '%s'", err.msg, expect_in_error);
}

static void test_basic(void **state)
{
	(void)state;
	struct env_file f = parse_ok("# a comment\n"
	                             "A=1\n"
	                             "  B = two  \n"
	                             "\n"
	                             "export C=three\n"
	                             "D=\n"
	                             "E=value # trailing comment\n"
	                             "F=a#b\n"
	                             "G=x\r\n");
	assert_string_equal(env_file_get(&f, "A"), "1");
	assert_string_equal(env_file_get(&f, "B"), "two");
	assert_string_equal(env_file_get(&f, "C"), "three");
	assert_string_equal(env_file_get(&f, "D"), "");
	assert_string_equal(env_file_get(&f, "E"), "value");
	assert_string_equal(env_file_get(&f, "F"), "a#b");
	assert_string_equal(env_file_get(&f, "G"), "x");
	assert_null(env_file_get(&f, "H"));
	env_file_free(&f);
}

static void test_quotes(void **state)
{
	(void)state;
	struct env_file f = parse_ok("S='lit $HOME \\n # not a comment'\n"
	                             "D=\"a\\nb \\\"q\\\" \\\\ \\t end\"\n"
	                             "M=\"line1\nline2\"\n"
	                             "U=\"keep \\x unknown\"\n"
	                             "Q='' # empty\n"
	                             "AFTER=ok\n");
	assert_string_equal(env_file_get(&f, "S"), "lit $HOME \\n # not a comment");
	assert_string_equal(env_file_get(&f, "D"), "a\nb \"q\" \\ \t end");
	assert_string_equal(env_file_get(&f, "M"), "line1\nline2");
	assert_string_equal(env_file_get(&f, "U"), "keep \\x unknown");
	assert_string_equal(env_file_get(&f, "Q"), "");
	assert_string_equal(env_file_get(&f, "AFTER"), "ok");
	/* The multi-line value counts its lines: AFTER is on line 7. */
	for (size_t i = 0; i < f.count; i++)
		if (strcmp(f.entries[i].key, "AFTER") == 0)
			assert_int_equal(f.entries[i].line, 7);
	env_file_free(&f);
}

static void test_later_wins(void **state)
{
	(void)state;
	struct env_file f = parse_ok("A=1\nA=2\n");
	assert_int_equal(f.count, 1);
	assert_string_equal(env_file_get(&f, "A"), "2");
	env_file_free(&f);
}

static void test_malformed(void **state)
{
	(void)state;
	parse_bad("A=1\nNOT AN ASSIGNMENT\n", "line 2: expected KEY=VALUE");
	parse_bad("1ABC=x\n", "line 1");
	parse_bad("A='open\n", "line 1: unterminated single quote in A");
	parse_bad("A=1\nB=\"never closed\nC=3\n", "line 2: unterminated double quote in B");
	parse_bad("A='x' trailing\n", "unexpected text after the value of A");
	parse_bad("=novalue\n", "line 1");
	parse_bad("export\n", "line 1");
	parse_bad("A-B=1\n", "line 1");
	/* found by fuzz_identity: "export" and blanks at the very end */
	parse_bad("A=1\nexport\t\t\t", "line 2");
	parse_bad("export ", "line 1");
}

static void test_env_wins(void **state)
{
	(void)state;
	struct env_file f = parse_ok("GA_TEST_ENV_WINS=file\nGA_TEST_ONLY_FILE=file\n");
	setenv("GA_TEST_ENV_WINS", "process", 1);
	unsetenv("GA_TEST_ONLY_FILE");
	assert_string_equal(env_lookup(&f, "GA_TEST_ENV_WINS"), "process");
	assert_string_equal(env_lookup(&f, "GA_TEST_ONLY_FILE"), "file");
	setenv("GA_TEST_ONLY_FILE", "", 1);
	assert_string_equal(env_lookup(&f, "GA_TEST_ONLY_FILE"), "");
	unsetenv("GA_TEST_ENV_WINS");
	unsetenv("GA_TEST_ONLY_FILE");
	assert_null(env_lookup(NULL, "GA_TEST_ENV_WINS"));
	env_file_free(&f);
}

static void test_missing_file(void **state)
{
	(void)state;
	struct env_file f;
	int missing = 0;
	struct ga_err err = {{0}};
	assert_int_equal(env_load_file("/nonexistent/dir/.env", &f, &missing, &err), 0);
	assert_int_equal(missing, 1);
	assert_int_equal(f.count, 0);
	env_file_free(&f);
}

static void test_too_large(void **state)
{
	(void)state;
	size_t n = ENV_MAX_FILE_BYTES + 10;
	char *big = malloc(n + 1);
	memset(big, '#', n);
	big[n] = '\0';
	struct env_file f;
	struct ga_err err = {{0}};
	assert_int_equal(env_parse(big, n, &f, &err), -1);
	assert_non_null(strstr(err.msg, "larger than"));
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_basic),      cmocka_unit_test(test_quotes),
	        cmocka_unit_test(test_later_wins), cmocka_unit_test(test_malformed),
	        cmocka_unit_test(test_env_wins),   cmocka_unit_test(test_missing_file),
	        cmocka_unit_test(test_too_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
