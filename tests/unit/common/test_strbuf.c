/* strbuf: growth, the max bound, printf, consume/detach, JSON escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"

static void test_zero_init_is_empty(void **state)
{
	struct strbuf sb = {0};
	assert_string_equal(sb_cstr(&sb), "");
	assert_int_equal(sb.len, 0);
	char *s = sb_detach(&sb);
	assert_string_equal(s, "");
	free(s);
	sb_free(&sb);
	sb_free(NULL);
}

static void test_growth_keeps_content(void **state)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(sb_putc(&sb, (char)('a' + i % 26)), 0);
	assert_int_equal(sb.len, 10000);
	assert_int_equal(strlen(sb_cstr(&sb)), 10000);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(sb.buf[i], 'a' + i % 26);
	assert_true(sb.cap > sb.len);
	sb_free(&sb);
}

static void test_max_bound_rejects_and_leaves_unchanged(void **state)
{
	struct strbuf sb;
	sb_init(&sb, 10);
	assert_int_equal(sb_puts(&sb, "12345678"), 0);
	assert_int_equal(sb_puts(&sb, "abc"), -1); /* would be 11 */
	assert_string_equal(sb_cstr(&sb), "12345678");
	assert_int_equal(sb.len, 8);
	assert_int_equal(sb_printf(&sb, "%d", 123), -1);
	assert_string_equal(sb_cstr(&sb), "12345678");
	assert_int_equal(sb_put_json_string(&sb, "x", 1), -1); /* needs 3 */
	assert_string_equal(sb_cstr(&sb), "12345678");
	assert_int_equal(sb_puts(&sb, "90"), 0); /* exactly max */
	assert_string_equal(sb_cstr(&sb), "1234567890");
	assert_int_equal(sb_putc(&sb, 'x'), -1);
	assert_true(sb.cap <= 11);
	sb_free(&sb);
}

static void test_huge_max_does_not_wrap(void **state)
{
	struct strbuf sb;
	sb_init(&sb, SIZE_MAX);
	assert_int_equal(sb_puts(&sb, "abc"), 0);
	assert_string_equal(sb_cstr(&sb), "abc");
	assert_int_equal(sb_append(&sb, "x", SIZE_MAX), -1);
	assert_int_equal(sb_append(&sb, "x", SIZE_MAX - 2), -1);
	assert_string_equal(sb_cstr(&sb), "abc");
	sb_free(&sb);
}

static void test_json_string_rollback_midway(void **state)
{
	struct strbuf sb;
	sb_init(&sb, 8);
	assert_int_equal(sb_puts(&sb, "ab"), 0);
	/* "\"a\\nb\"" is 6 bytes: fits; the longer one fails in the middle */
	assert_int_equal(sb_put_json_string(&sb, "a\nb\nc", 5), -1);
	assert_string_equal(sb_cstr(&sb), "ab");
	assert_int_equal(sb.len, 2);
	assert_int_equal(sb_put_json_string(&sb, "a\nb", 3), 0);
	assert_string_equal(sb_cstr(&sb), "ab\"a\\nb\"");
	sb_free(&sb);
}

/* The inside of a literal, written in pieces (what common/jsonnul does
 * around a lone surrogate): no quotes, the marker as \u0000, and a piece
 * that does not fit leaves what came before it. */
static void test_json_chars_in_pieces_and_truncate(void **state)
{
	(void)state;
	struct strbuf sb;
	sb_init(&sb, 12);
	assert_int_equal(sb_putc(&sb, '"'), 0);
	assert_int_equal(sb_put_json_chars_marked(&sb, "a\xFF\n", 3, 0xFF), 0);
	assert_string_equal(sb_cstr(&sb), "\"a\\u0000\\n");
	assert_int_equal(sb_put_json_chars_marked(&sb, "bc\x01", 3, -1), -1); /* needs 8 */
	assert_string_equal(sb_cstr(&sb), "\"a\\u0000\\n");
	sb_truncate(&sb, 2);
	assert_string_equal(sb_cstr(&sb), "\"a");
	sb_truncate(&sb, 5); /* beyond: nothing changes */
	assert_int_equal(sb.len, 2);
	sb_free(&sb);
}

static void test_printf_and_append(void **state)
{
	struct strbuf sb = {0};
	assert_int_equal(sb_printf(&sb, "%s=%d;", "a", 1), 0);
	assert_int_equal(sb_printf(&sb, "%05.1f", 2.5), 0);
	assert_int_equal(sb_append(&sb, "\0z", 2), 0);
	assert_int_equal(sb.len, 11);
	assert_memory_equal(sb.buf, "a=1;002.5\0z", 12);
	/* a long printf forces growth inside sb_vprintf */
	char big[500];
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(sb_printf(&sb, "[%s]", big), 0);
	assert_int_equal(sb.len, 11 + 501);
	assert_int_equal(sb.buf[sb.len - 1], ']');
	sb_free(&sb);
}

static void test_consume_reset_detach(void **state)
{
	struct strbuf sb = {0};
	sb_puts(&sb, "hello world");
	sb_consume(&sb, 6);
	assert_string_equal(sb_cstr(&sb), "world");
	assert_int_equal(sb.len, 5);
	sb_consume(&sb, 0);
	assert_string_equal(sb_cstr(&sb), "world");
	sb_consume(&sb, 99);
	assert_string_equal(sb_cstr(&sb), "");
	assert_int_equal(sb.len, 0);
	sb_puts(&sb, "again");
	sb_reset(&sb);
	assert_string_equal(sb_cstr(&sb), "");
	assert_non_null(sb.buf); /* allocation kept */
	sb_puts(&sb, "kept");
	char *s = sb_detach(&sb);
	assert_string_equal(s, "kept");
	assert_null(sb.buf);
	assert_int_equal(sb.len, 0);
	assert_string_equal(sb_cstr(&sb), "");
	free(s);
}

static void check_json(const char *in, size_t len, const char *want)
{
	struct strbuf sb = {0};
	assert_int_equal(sb_put_json_string(&sb, in, len), 0);
	assert_string_equal(sb_cstr(&sb), want);
	sb_free(&sb);
}

/* Expected strings are what JSON.stringify produces in node. */
static void test_json_string_escaping_matches_js(void **state)
{
	check_json("", 0, "\"\"");
	check_json("plain", 5, "\"plain\"");
	check_json("q\"b\\s", 5, "\"q\\\"b\\\\s\"");
	check_json("\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
	check_json("\x01\x1f", 2, "\"\\u0001\\u001f\"");
	check_json("\x0b", 1, "\"\\u000b\"");
	check_json("a\0b", 3, "\"a\\u0000b\"");
	check_json("a/b", 3, "\"a/b\"");                   /* '/' not escaped */
	check_json("\x7f", 1, "\"\x7f\"");                 /* DEL verbatim */
	check_json("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");   /* non-ASCII verbatim */
	check_json("\xe2\x80\xa8", 3, "\"\xe2\x80\xa8\""); /* U+2028 verbatim */
	check_json("\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\"");
}

static void test_fill(void **state)
{
	(void)state;
	struct strbuf sb;
	sb_init(&sb, 0);
	const char *names[] = {"type", "url"};
	const char *values[] = {"create issue", NULL};
	assert_int_equal(
	        sb_fill(&sb, "On it: {{type}} ({{type}}) {{url}}|{{other}} {{", names, values, 2),
	        0);
	assert_string_equal(sb_cstr(&sb), "On it: create issue (create issue) |{{other}} {{");
	sb_free(&sb);
	/* at its bound: -1 */
	sb_init(&sb, 8);
	assert_int_equal(sb_fill(&sb, "{{type}} and more", names, values, 2), -1);
	sb_free(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_zero_init_is_empty),
	        cmocka_unit_test(test_growth_keeps_content),
	        cmocka_unit_test(test_max_bound_rejects_and_leaves_unchanged),
	        cmocka_unit_test(test_huge_max_does_not_wrap),
	        cmocka_unit_test(test_json_string_rollback_midway),
	        cmocka_unit_test(test_json_chars_in_pieces_and_truncate),
	        cmocka_unit_test(test_printf_and_append),
	        cmocka_unit_test(test_consume_reset_detach),
	        cmocka_unit_test(test_json_string_escaping_matches_js),
	        cmocka_unit_test(test_fill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
