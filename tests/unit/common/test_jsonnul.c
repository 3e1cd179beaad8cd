/* jsonnul: "\u0000" carried as JSON_NUL_MARK through cJSON, exactly; every
 * other input judged as json_parse judges it; the writer and unmarker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonnul.h"

static cJSON *parse_ok(const char *s)
{
	struct ga_err e = {{0}};
	cJSON *v = json_parse_nul(s, strlen(s), &e);
	if (!v)
		fail_msg("expected %s to parse, got: %s", s, e.msg);
	return v;
}

static void parse_bad(const char *s, size_t len, const char *prefix)
{
	struct ga_err e = {{0}};
	cJSON *v = json_parse_nul(s, len, &e);
	if (v) {
		cJSON_Delete(v);
		fail_msg("expected %.*s to be rejected", (int)len, s);
	}
	if (strncmp(e.msg, prefix, strlen(prefix)) != 0)
		fail_msg("input %.*s: error '%s' does not start with '%s'", (int)len, s, e.msg,
		         prefix);
}

static char *put(const char *s, size_t len)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	assert_int_equal(json_put_string_nul(&sb, s, len), 0);
	return sb_detach(&sb);
}

/* Every C0 control character, U+007F and U+00FF as escapes around text:
 * the tree holds the character itself (U+0000 as the marker), and the
 * writer gives JSON.stringify's form back. */
static void test_every_control_character(void **state)
{
	for (unsigned cp = 0; cp <= 0x21; cp++) {
		unsigned c = cp == 0x20 ? 0x7F : cp == 0x21 ? 0xFF : cp;
		char in[64];
		snprintf(in, sizeof in, "{\"k\":\"a\\u%04Xb\",\"l\":[\"\\u%04x\"]}", c, c);
		cJSON *v = parse_ok(in);
		const char *k = cJSON_GetObjectItemCaseSensitive(v, "k")->valuestring;
		const char *l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v, "l"), 0)
		                        ->valuestring;
		char want[8];
		if (c == 0)
			snprintf(want, sizeof want, "a%cb", JSON_NUL_MARK);
		else if (c == 0xFF)
			snprintf(want, sizeof want,
			         "a\xC3\xBF"
			         "b"); /* UTF-8, no marker */
		else
			snprintf(want, sizeof want, "a%cb", (char)c);
		assert_string_equal(k, want);
		assert_int_equal(strlen(l), c == 0xFF ? 2 : 1);
		assert_int_equal(json_has_nul_mark(k), c == 0);

		char *out = put(k, strlen(k));
		char exp[32];
		const char *mid;
		char hex[8];
		switch (c) {
		case 0x08:
			mid = "\\b";
			break;
		case 0x09:
			mid = "\\t";
			break;
		case 0x0A:
			mid = "\\n";
			break;
		case 0x0C:
			mid = "\\f";
			break;
		case 0x0D:
			mid = "\\r";
			break;
		case 0x7F:
			mid = "\x7F";
			break;
		case 0xFF:
			mid = "\xC3\xBF";
			break;
		default:
			snprintf(hex, sizeof hex, "\\u%04x", c);
			mid = hex;
		}
		snprintf(exp, sizeof exp, "\"a%sb\"", mid);
		assert_string_equal(out, exp);
		free(out);

		char copy[8];
		memcpy(copy, k, strlen(k) + 1);
		size_t n = json_unmark_nul(copy);
		assert_int_equal(n, strlen(want));
		assert_int_equal(copy[1], c == 0 ? 0 : c == 0xFF ? (char)0xC3 : (char)c);
		cJSON_Delete(v);
	}
}

/* Where a "\u0000" can be and what only looks like one. */
static void test_places_and_lookalikes(void **state)
{
	cJSON *v = parse_ok("{\"a\\u0000\":1,\"a\":2,\"\\u0000\\u0000\":\"\\\\u0000\","
	                    "\"x\":\"\\u0000\\u00000\",\"y\":\"\\u0000\\\"\\u0000\"}");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(v, "a\xFF")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(v, "a")->valueint, 2);
	/* An escaped backslash before u0000 is six characters of text. */
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(v, "\xFF\xFF")->valuestring,
	                    "\\u0000");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(v, "x")->valuestring, "\xFF\xFF"
	                                                                           "0");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(v, "y")->valuestring, "\xFF\"\xFF");
	cJSON_Delete(v);
	/* At the top level, and without any NUL: the same as json_parse. */
	v = parse_ok(" \"\\u0000\" ");
	assert_string_equal(v->valuestring, "\xFF");
	cJSON_Delete(v);
	v = parse_ok("[1,{\"\\u00e9\":\"\xC3\xA9\"}]");
	assert_string_equal(cJSON_GetArrayItem(v, 1)->child->string, "\xC3\xA9");
	cJSON_Delete(v);
}

/* A NUL escape never makes invalid JSON acceptable, and a marker byte can
 * only come from "\u0000": a raw 0xFF is invalid UTF-8. */
static void test_still_strict(void **state)
{
	parse_bad("{\"a\":\"\\u0000\",}", 15, "");
	parse_bad("[\"\\u0000\"", 9, "");
	parse_bad("\"\\u0000\xFF\"", 9, "");
	parse_bad("\"\xFF\"", 3, "");
	parse_bad("\"\\u000\"", 7, "");
	parse_bad("\"\\u0000", 7, "");
	parse_bad("\"\\u0000\" x", 10, "");
	parse_bad("\"\\u0000\x01\"", 9, ""); /* raw control character */
	parse_bad("\"\\ud800\\u0000\"", 14, "");
	parse_bad("{\"\\u0000\" 1}", 12, "");
	parse_bad("[01,\"\\u0000\"]", 13, ""); /* the change to \u0001 cannot fix a number */
	parse_bad("", 0, "");
	/* The error of the strict pass, with its offset, is passed on. */
	struct ga_err e = {{0}};
	assert_null(json_parse_nul("[\"\\u0000\",]", 11, &e));
	assert_non_null(strstr(e.msg, "10"));
	/* Not NUL-terminated: exactly len bytes are read. */
	const char buf[] = "\"\\u0000\"garbage";
	cJSON *v = json_parse_nul(buf, 8, NULL);
	assert_non_null(v);
	assert_string_equal(v->valuestring, "\xFF");
	cJSON_Delete(v);
	/* Deep nesting is bounded as in json_parse. */
	char deep[2 * (JSON_MAX_DEPTH + 2) + 16];
	size_t n = 0;
	for (int i = 0; i < JSON_MAX_DEPTH + 2; i++)
		deep[n++] = '[';
	memcpy(deep + n, "\"\\u0000\"", 8);
	n += 8;
	for (int i = 0; i < JSON_MAX_DEPTH + 2; i++)
		deep[n++] = ']';
	parse_bad(deep, n, "");
}

/* The writer: a real NUL byte is "\u0000" as well, the rest is
 * sb_put_json_string's; at the strbuf's maximum it leaves sb unchanged. */
static void test_writer(void **state)
{
	char *out = put("q\"\\/\0\xFF\xE2\x80\xA8", 9);
	assert_string_equal(out, "\"q\\\"\\\\/\\u0000\\u0000\xE2\x80\xA8\"");
	free(out);
	struct strbuf sb;
	sb_init(&sb, 10);
	assert_int_equal(sb_puts(&sb, "ab"), 0);
	assert_int_equal(json_put_string_nul(&sb, "\xFF", 1), 0); /* "\u0000" */
	assert_int_equal(sb.len, 10);
	assert_int_equal(json_put_string_nul(&sb, "", 0), -1);
	assert_string_equal(sb_cstr(&sb), "ab\"\\u0000\"");
	sb_free(&sb);
	sb_init(&sb, 10);
	assert_int_equal(sb_puts(&sb, "ab"), 0);
	assert_int_equal(json_put_string_nul(&sb, "\xFF\xFF", 2), -1);
	assert_string_equal(sb_cstr(&sb), "ab");
	sb_free(&sb);
	assert_false(json_has_nul_mark(NULL));
	assert_false(json_has_nul_mark("plain"));
	char s[] = "\xFF"
	           "a\xFF";
	assert_int_equal(json_unmark_nul(s), 3);
	assert_memory_equal(s, "\0a\0", 4);
}

/* Random strings of code points (NUL, controls, ASCII, 2-, 3- and 4-byte
 * characters, written raw or escaped): parse, write, parse again. */
static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 63));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 63));
		o[2] = (char)(0x80 | (cp & 63));
		return 3;
	}
	o[0] = (char)(0xF0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 63));
	o[2] = (char)(0x80 | (cp >> 6 & 63));
	o[3] = (char)(0x80 | (cp & 63));
	return 4;
}

static void test_round_trip_random(void **state)
{
	static const unsigned pool[] = {0,   0,   0,    1,    0x1F,  '"',    '\\',   'u',
	                                '0', 'a', 0x7F, 0xFF, 0x100, 0x2028, 0xFFFD, 0x1F3A8};
	for (int round = 0; round < 2000; round++) {
		char json[512], want[256], real[256];
		size_t jn = 0, wn = 0;
		json[jn++] = '"';
		int len = (int)(rnd() % 20);
		for (int i = 0; i < len; i++) {
			unsigned cp = pool[rnd() % (sizeof pool / sizeof pool[0])];
			bool escape = cp < 0x20 || cp == '"' || cp == '\\' || rnd() % 2;
			if (!escape) {
				jn += put_utf8(json + jn, cp);
			} else if (cp > 0xFFFF) {
				unsigned v = cp - 0x10000;
				jn += (size_t)sprintf(json + jn, "\\u%04X\\u%04x",
				                      0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
			} else {
				jn += (size_t)sprintf(json + jn, "\\u%04x", cp);
			}
			if (cp == 0)
				want[wn++] = JSON_NUL_MARK;
			else
				wn += put_utf8(want + wn, cp);
		}
		json[jn++] = '"';
		want[wn] = '\0';
		cJSON *v = json_parse_nul(json, jn, NULL);
		if (!v)
			fail_msg("rejected: %.*s", (int)jn, json);
		assert_string_equal(v->valuestring, want);
		char *out = put(v->valuestring, strlen(v->valuestring));
		cJSON *w = json_parse_nul(out, strlen(out), NULL);
		assert_non_null(w);
		assert_string_equal(w->valuestring, want);
		/* Without a NUL the writer's text is json_parse's too. */
		cJSON *x = json_parse(out, strlen(out), NULL);
		assert_int_equal(x != NULL, !json_has_nul_mark(want));
		cJSON_Delete(x);
		memcpy(real, want, wn + 1);
		assert_int_equal(json_unmark_nul(real), wn);
		for (size_t i = 0; i < wn; i++)
			assert_int_equal(real[i], want[i] == JSON_NUL_MARK ? 0 : want[i]);
		free(out);
		cJSON_Delete(w);
		cJSON_Delete(v);
	}
}

/* json_parse_js: lone UTF-16 surrogate escapes — what a JavaScript string
 * cut inside an emoji serialises to — are kept as WTF-8 and written back
 * as JSON.stringify writes them; pairs stay ordinary characters; the rest
 * is judged as json_parse_nul judges it, which still refuses them. */
static void test_lone_surrogates(void **state)
{
	static const struct {
		const char *in, *tree, *out;
	} cases[] = {
	        {"\"\\ud800\"", "\xED\xA0\x80", "\"\\ud800\""},
	        {"\"a\\uD83D\"", "a\xED\xA0\xBD", "\"a\\ud83d\""}, /* "a😀".slice(0, 2) */
	        {"\"\\ude00b\"",
	         "\xED\xB8\x80"
	         "b",
	         "\"\\ude00b\""},
	        {"\"\\udfff\\udbff\"", "\xED\xBF\xBF\xED\xAF\xBF",
	         "\"\\udfff\\udbff\""},                              /* low, high */
	        {"\"\\ud83d\\ude00\"", "\xF0\x9F\x98\x80", "\"😀\""}, /* a pair */
	        {"\"\\ud800\\ud83d\\ude00\"", "\xED\xA0\x80\xF0\x9F\x98\x80", "\"\\ud800😀\""},
	        {"\"\\ud800\\u0000\"", "\xED\xA0\x80\xFF", "\"\\ud800\\u0000\""},
	        {"\"\\\\ud800\"", "\\ud800", "\"\\\\ud800\""}, /* an escaped backslash */
	        {"\"\\ud800\\n\"", "\xED\xA0\x80\n", "\"\\ud800\\n\""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct ga_err e = {{0}};
		cJSON *v = json_parse_js(cases[i].in, strlen(cases[i].in), &e);
		if (!v)
			fail_msg("%s: %s", cases[i].in, e.msg);
		assert_true(cJSON_IsString(v));
		assert_string_equal(v->valuestring, cases[i].tree);
		char *out = put(v->valuestring, strlen(v->valuestring));
		assert_string_equal(out, cases[i].out);
		free(out);
		cJSON_Delete(v);
	}
	/* In keys and nested values too. */
	struct ga_err e = {{0}};
	const char *obj = "{\"k\\udc00\":[{\"c\":\"x\\ud800\"}]}";
	cJSON *v = json_parse_js(obj, strlen(obj), &e);
	assert_non_null(v);
	assert_string_equal(v->child->string, "k\xED\xB0\x80");
	assert_string_equal(v->child->child->child->valuestring, "x\xED\xA0\x80");
	cJSON_Delete(v);
	/* Invalid JSON stays invalid; bad hex is not a surrogate. */
	static const char *const bad[] = {"\"\\ud800", "\"\\ud800\",", "[\"\\ud800\",]",
	                                  "\"\\ud80g\"", "\"\\ud800\xff\""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		v = json_parse_js(bad[i], strlen(bad[i]), &e);
		if (v)
			fail_msg("expected %s to be rejected", bad[i]);
	}
	/* json_parse_nul (the daemon's client) still refuses a lone one. */
	parse_bad("\"\\ud800\"", 8, "invalid JSON");
	v = json_parse_nul("\"\\ud83d\\ude00\"", 14, &e);
	assert_non_null(v);
	cJSON_Delete(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_every_control_character),
	        cmocka_unit_test(test_places_and_lookalikes),
	        cmocka_unit_test(test_still_strict),
	        cmocka_unit_test(test_writer),
	        cmocka_unit_test(test_round_trip_random),
	        cmocka_unit_test(test_lone_surrogates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
