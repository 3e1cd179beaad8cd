/* Unit tests for space/proto: the JavaScript semantics of the wire format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonnul.h"
#include "space/proto.h"

static char *stringify(const char *json)
{
	cJSON *v = json_parse(json, strlen(json), NULL);
	assert_non_null(v);
	struct strbuf sb;
	sb_init(&sb, 0);
	assert_int_equal(space_js_stringify(&sb, v), 0);
	cJSON_Delete(v);
	return sb_detach(&sb);
}

static void test_units_and_cut(void **state)
{
	const char *s = "a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x8E\xA8"; /* a é 日 🎨 */
	assert_int_equal(space_js_units(s, strlen(s)), 5);
	/* 4 units would split the surrogate pair of 🎨: cut before it. */
	assert_int_equal(space_js_cut(s, strlen(s), 4), 6);
	assert_int_equal(space_js_cut(s, strlen(s), 5), strlen(s));
	assert_int_equal(space_js_cut(s, strlen(s), 0), 0);
}

static void test_blank_and_trim(void **state)
{
	assert_true(space_js_blank("", 0));
	assert_true(space_js_blank(" \t\n\r\v\f", 6));
	/* U+00A0, U+2003, U+3000, U+FEFF are all trimmed by JS. */
	const char *ws = "\xC2\xA0\xE2\x80\x83\xE3\x80\x80\xEF\xBB\xBF";
	assert_true(space_js_blank(ws, strlen(ws)));
	/* U+200B (zero width space) is not JS whitespace. */
	assert_false(space_js_blank("\xE2\x80\x8B", 3));
	size_t off, n;
	space_js_trim("  hi there \xC2\xA0", 13, &off, &n);
	assert_int_equal(off, 2);
	assert_int_equal(n, 8);
}

static void test_truthy(void **state)
{
	const char *falsy[] = {"0", "-0", "false", "null", "\"\""};
	const char *truthy[] = {"1", "\"0\"", "true", "[]", "{}", "\" \""};
	for (size_t i = 0; i < 5; i++) {
		cJSON *v = json_parse(falsy[i], strlen(falsy[i]), NULL);
		assert_false(space_js_truthy(v));
		cJSON_Delete(v);
	}
	for (size_t i = 0; i < 6; i++) {
		cJSON *v = json_parse(truthy[i], strlen(truthy[i]), NULL);
		assert_true(space_js_truthy(v));
		cJSON_Delete(v);
	}
	assert_false(space_js_truthy(NULL));
}

static void test_stringify_js_order_and_numbers(void **state)
{
	char *s = stringify("{ \"b\": 1.0, \"2\": 2, \"a\": [1e3, -0, 0.1, 1e21], \"1\": \"x\" }");
	assert_string_equal(s, "{\"1\":\"x\",\"2\":2,\"b\":1,\"a\":[1000,0,0.1,1e+21]}");
	free(s);
	/* Duplicate keys: first position, last value (JSON.parse semantics). */
	s = stringify("{\"a\":1,\"b\":2,\"a\":3}");
	assert_string_equal(s, "{\"a\":3,\"b\":2}");
	free(s);
	/* Escapes as JSON.stringify: \u001f lowercase, / and U+2028 raw. */
	s = stringify("\"a/\\u001f\\u2028\\t\"");
	assert_string_equal(s, "\"a/\\u001f\xE2\x80\xA8\\t\"");
	free(s);
	/* "01" and "4294967295" are not array indices: insertion order. */
	s = stringify("{\"z\":0,\"01\":1,\"4294967295\":2,\"4294967294\":3}");
	assert_string_equal(s, "{\"4294967294\":3,\"z\":0,\"01\":1,\"4294967295\":2}");
	free(s);
}

static void test_string_of(void **state)
{
	const char *in[] = {"\"s\"",    "42", "1.5", "true", "null", "[1,[2,null],\"x\"]",
	                    "{\"a\":1}"};
	const char *out[] = {"s", "42", "1.5", "true", "null", "1,2,,x", "[object Object]"};
	for (size_t i = 0; i < 7; i++) {
		cJSON *v = json_parse(in[i], strlen(in[i]), NULL);
		struct strbuf sb;
		sb_init(&sb, 0);
		space_js_string_of(&sb, v);
		assert_string_equal(sb_cstr(&sb), out[i]);
		sb_free(&sb);
		cJSON_Delete(v);
	}
}

static void test_parse_classification(void **state)
{
	cJSON *root;
	assert_int_equal(space_msg_parse("not-valid-json{{{", 17, &root), SPACE_MSG_INVALID_JSON);
	assert_int_equal(space_msg_parse("null", 4, &root), SPACE_MSG_INVALID_JSON);
	assert_null(root);
	const char *ignored[] = {"5",
	                         "[]",
	                         "\"x\"",
	                         "{}",
	                         "{\"type\":\"leave\"}",
	                         "{\"type\":\"presence\"}",
	                         "{\"type\":5}",
	                         "true"};
	for (size_t i = 0; i < 8; i++) {
		assert_int_equal(space_msg_parse(ignored[i], strlen(ignored[i]), &root),
		                 SPACE_MSG_IGNORED);
		assert_null(root);
	}
	/* Leading BOM makes the text invalid JSON (§1.1). */
	assert_int_equal(space_msg_parse("\xEF\xBB\xBF{}", 5, &root), SPACE_MSG_INVALID_JSON);
	/* Duplicate "type": the last one wins. */
	const char *dup = "{\"type\":\"chat\",\"type\":\"typing\"}";
	assert_int_equal(space_msg_parse(dup, strlen(dup), &root), SPACE_MSG_TYPING);
	cJSON_Delete(root);
}

static void test_utf8_repair(void **state)
{
	size_t n;
	assert_null(space_utf8_repair("ok \xC3\xA9", 5, &n));
	/* Maximal subparts: E2 82 (truncated) is one U+FFFD, FF is one. */
	char *r = space_utf8_repair("a\xE2\x82"
	                            "b\xFF",
	                            5, &n);
	assert_non_null(r);
	assert_int_equal(n, 8);
	assert_memory_equal(r,
	                    "a\xEF\xBF\xBD"
	                    "b\xEF\xBF\xBD",
	                    8);
	free(r);
}

/* U+0000 in a string is valid JSON and relayed (proto.h): the parser keeps
 * it as JSON_NUL_MARK, every JS helper counts it as one non-blank, truthy
 * character, and the writers put it back as "\u0000". */
static void test_nul_marker(void **state)
{
	cJSON *root;
	const char *chat = "{\"type\":\"chat\",\"content\":\"a\\u0000b\",\"k\\u0000\":\"\\u0000\"}";
	assert_int_equal(space_msg_parse(chat, strlen(chat), &root), SPACE_MSG_CHAT);
	const cJSON *c = space_js_get(root, "content");
	assert_string_equal(c->valuestring, "a\xFF"
	                                    "b");
	assert_true(space_js_nonblank_string(c));
	assert_int_equal(space_js_units(c->valuestring, 3), 3);
	assert_int_equal(space_js_cut(c->valuestring, 3, 2), 2);
	assert_null(space_js_get(root, "k"));
	const cJSON *k = space_js_get(root, "k\xFF");
	assert_non_null(k);
	assert_true(space_js_truthy(k)); /* "\u0000" is a non-empty string */
	assert_false(space_js_blank(k->valuestring, 1));
	struct strbuf sb;
	sb_init(&sb, 0);
	assert_int_equal(space_js_stringify(&sb, root), 0);
	assert_string_equal(sb_cstr(&sb), chat);
	sb.len = 0;
	assert_int_equal(space_js_string_of(&sb, k), 0);
	assert_int_equal(sb.len, 1);
	sb.len = 0;
	assert_int_equal(space_put_strn(&sb, "\xFF\x01\x1F\x7F", 4), 0);
	assert_string_equal(sb_cstr(&sb), "\"\\u0000\\u0001\\u001f\x7F\"");
	sb_free(&sb);
	cJSON_Delete(root);

	/* A NUL outside a chat: still a message of its type. */
	const char *join =
	        "{\"type\":\"join\",\"name\":\"\\u0000\",\"id\":\"x\",\"version\":\"1\"}";
	assert_int_equal(space_msg_parse(join, strlen(join), &root), SPACE_MSG_JOIN);
	cJSON_Delete(root);
	/* "type" with a NUL is another type: ignored, as in JS. */
	const char *t = "{\"type\":\"chat\\u0000\",\"content\":\"x\"}";
	assert_int_equal(space_msg_parse(t, strlen(t), &root), SPACE_MSG_IGNORED);
	/* Invalid JSON stays invalid with a NUL escape in it. */
	const char *bad[] = {"{\"type\":\"chat\",\"content\":\"\\u0000\",}",
	                     "{\"content\":\"\\u0000\xFF\"}", "{\"content\":\"\\u000\"}",
	                     "\"\\u0000"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(space_msg_parse(bad[i], strlen(bad[i]), &root),
		                 SPACE_MSG_INVALID_JSON);
		assert_null(root);
	}
}

/* A workspace_state's pulls: only pulls pass (a positive integer number and
 * a state word), only their fields, within the count and the bytes. */
static char *pulls_of(const char *json, size_t max, size_t max_bytes, size_t *rejected, bool *cut)
{
	cJSON *v = json_parse(json, strlen(json), NULL);
	struct strbuf sb;
	sb_init(&sb, 0);
	*cut = space_put_pulls(&sb, v, max, max_bytes, rejected);
	cJSON_Delete(v);
	return sb_detach(&sb);
}

static void test_pulls(void **state)
{
	(void)state;
	size_t rej;
	bool cut;
	char *o = pulls_of("[{\"number\":12,\"state\":\"approved\",\"next\":\"bob\",\"x\":1,"
	                   "\"url\":\"http://a\",\"since\":\"2026-11-28T14:02:00Z\",\"task\":-2},"
	                   "{\"number\":0,\"state\":\"approved\"},{\"number\":3,\"state\":\"\"},"
	                   "{\"number\":4,\"state\":\"a-b\"},{\"number\":1e300,\"state\":\"x\"},"
	                   "7,{\"number\":5,\"state\":\"merged\",\"revisions\":2}]",
	                   8, 4096, &rej, &cut);
	assert_string_equal(o, ",\"pulls\":[{\"number\":12,\"state\":\"approved\",\"next\":"
	                       "\"bob\",\"since\":\"2026-11-28T14:02:00Z\"},{\"number\":5,"
	                       "\"state\":\"merged\",\"revisions\":2}]");
	assert_int_equal(rej, 5);
	assert_true(cut);
	free(o);
	/* not an array: nothing */
	o = pulls_of("{\"number\":1}", 8, 4096, &rej, &cut);
	assert_string_equal(o, "");
	assert_false(cut);
	free(o);
	/* the count, then the bytes */
	o = pulls_of("[{\"number\":1,\"state\":\"a\"},{\"number\":2,\"state\":\"b\"}]", 1, 4096,
	             &rej, &cut);
	assert_string_equal(o, ",\"pulls\":[{\"number\":1,\"state\":\"a\"}]");
	assert_true(cut);
	assert_int_equal(rej, 0);
	free(o);
	o = pulls_of("[{\"number\":1,\"state\":\"a\"},{\"number\":2,\"state\":\"b\"}]", 8, 40, &rej,
	             &cut);
	assert_string_equal(o, ",\"pulls\":[{\"number\":1,\"state\":\"a\"}]");
	assert_true(cut);
	free(o);
}

static void test_history_limit(void **state)
{
	/* config.test.ts dynamicHistoryLimit cases (§8.3). */
	size_t in[] = {0, 1, 2, 3, 6, 10, 18, 100, 1000};
	size_t out[] = {200, 200, 200, 250, 400, 600, 1000, 1000, 1000};
	for (size_t i = 0; i < 9; i++)
		assert_int_equal(space_history_limit(in[i]), out[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_units_and_cut),
	        cmocka_unit_test(test_blank_and_trim),
	        cmocka_unit_test(test_truthy),
	        cmocka_unit_test(test_stringify_js_order_and_numbers),
	        cmocka_unit_test(test_string_of),
	        cmocka_unit_test(test_parse_classification),
	        cmocka_unit_test(test_utf8_repair),
	        cmocka_unit_test(test_nul_marker),
	        cmocka_unit_test(test_history_limit),
	        cmocka_unit_test(test_pulls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
