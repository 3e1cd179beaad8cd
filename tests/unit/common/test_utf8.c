/* utf8: strict validation, decoding, grapheme clusters, NFKC + case fold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

struct vec {
	const char *s;
	size_t len;
	bool valid;
	const char *what;
};

#define V(lit, ok, what)                                                                           \
	{                                                                                          \
		lit, sizeof(lit) - 1, ok, what                                                     \
	}

static const struct vec vectors[] = {
        V("", true, "empty"),
        V("hello", true, "ASCII"),
        V("a\0b", true, "embedded NUL"),
        V("\xc2\x80", true, "U+0080, smallest 2-byte"),
        V("\xdf\xbf", true, "U+07FF"),
        V("\xe0\xa0\x80", true, "U+0800, smallest 3-byte"),
        V("\xed\x9f\xbf", true, "U+D7FF, just below surrogates"),
        V("\xee\x80\x80", true, "U+E000, just above surrogates"),
        V("\xef\xbf\xbf", true, "U+FFFF"),
        V("\xf0\x90\x80\x80", true, "U+10000"),
        V("\xf4\x8f\xbf\xbf", true, "U+10FFFF"),
        V("caf\xc3\xa9 \xf0\x9f\x98\x80 long ASCII tail to pass the fast path", true, "mixed"),
        V("\xc0\x80", false, "overlong NUL"),
        V("\xc1\xbf", false, "overlong 2-byte"),
        V("\xe0\x80\xaf", false, "overlong 3-byte '/'"),
        V("\xe0\x9f\xbf", false, "overlong 3-byte U+07FF"),
        V("\xf0\x80\x80\xaf", false, "overlong 4-byte"),
        V("\xf0\x8f\xbf\xbf", false, "overlong 4-byte U+FFFF"),
        V("\xed\xa0\x80", false, "surrogate U+D800"),
        V("\xed\xbf\xbf", false, "surrogate U+DFFF"),
        V("\xed\xa0\xbd\xed\xb8\x80", false, "CESU-8 surrogate pair"),
        V("\xf4\x90\x80\x80", false, "U+110000"),
        V("\xf5\x80\x80\x80", false, "lead F5"),
        V("\xff", false, "byte FF"),
        V("\xfe", false, "byte FE"),
        V("\x80", false, "lone continuation"),
        V("abc\xbf", false, "trailing lone continuation"),
        V("\xc3", false, "truncated 2-byte"),
        V("\xe2\x82", false, "truncated 3-byte"),
        V("\xf0\x9f\x98", false, "truncated 4-byte"),
        V("\xc3\x28", false, "bad continuation"),
        V("\xe2\x28\xa1", false, "bad 2nd byte of 3"),
        V("\xe2\x82\x28", false, "bad 3rd byte of 3"),
        V("\xf0\x9f\x98\x28", false, "bad 4th byte of 4"),
        V("0123456789abcdef\x80", false, "invalid after the fast path"),
};

static void test_valid_vectors(void **state)
{
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vec *v = &vectors[i];
		if (utf8_valid(v->s, v->len) != v->valid)
			fail_msg("%s: expected %s", v->what, v->valid ? "valid" : "invalid");
	}
}

static void test_decode(void **state)
{
	unsigned cp = 0;
	assert_int_equal(utf8_decode("A", 1, &cp), 1);
	assert_int_equal(cp, 'A');
	assert_int_equal(utf8_decode("\xc3\xa9", 2, &cp), 2);
	assert_int_equal(cp, 0xE9);
	assert_int_equal(utf8_decode("\xe2\x82\xac", 3, &cp), 3);
	assert_int_equal(cp, 0x20AC);
	assert_int_equal(utf8_decode("\xf0\x9f\x98\x80", 4, &cp), 4);
	assert_int_equal(cp, 0x1F600);
	assert_int_equal(utf8_decode("\xf0\x9f\x98\x80", 3, &cp), -1); /* len cuts it */
	assert_int_equal(utf8_decode("\xed\xa0\x80", 3, &cp), -1);
	assert_int_equal(utf8_decode("", 0, &cp), -1);
	assert_int_equal(utf8_decode("\x80", 1, &cp), -1);
}

#define G(lit) lit, sizeof(lit) - 1

static void test_grapheme_counts(void **state)
{
	assert_int_equal(utf8_graphemes(G("")), 0);
	assert_int_equal(utf8_graphemes(G("abc")), 3);
	assert_int_equal(utf8_graphemes(G("\r\n")), 1); /* CRLF is one cluster */
	/* family: man ZWJ woman ZWJ girl ZWJ boy */
	const char family[] = "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d"
	                      "\xf0\x9f\x91\xa7\xe2\x80\x8d\xf0\x9f\x91\xa6";
	assert_int_equal(utf8_graphemes(G(family)), 1);
	/* flags: FR then DE (regional indicator pairs) */
	const char flags[] = "\xf0\x9f\x87\xab\xf0\x9f\x87\xb7\xf0\x9f\x87\xa9\xf0\x9f\x87\xaa";
	assert_int_equal(utf8_graphemes(G(flags)), 2);
	/* three regional indicators: a flag and a lone one */
	assert_int_equal(utf8_graphemes(G("\xf0\x9f\x87\xab\xf0\x9f\x87\xb7\xf0\x9f\x87\xa9")), 2);
	/* e + combining acute + combining diaeresis, then x */
	assert_int_equal(utf8_graphemes(G("e\xcc\x81\xcc\x88x")), 2);
	/* Hangul: precomposed 한, and conjoining jamo ᄒ ᅡ ᆫ form one cluster */
	assert_int_equal(utf8_graphemes(G("\xed\x95\x9c")), 1);
	assert_int_equal(utf8_graphemes(G("\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab")), 1);
	assert_int_equal(utf8_graphemes(G("\xed\x95\x9c\xea\xb8\x80")), 2); /* 한글 */
	/* thumbs up + skin tone modifier */
	assert_int_equal(utf8_graphemes(G("\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd")), 1);
	/* invalid bytes count one each, and do not glue to neighbours */
	assert_int_equal(utf8_graphemes(G("a\xff\xfe"
	                                  "b")),
	                 4);
	assert_int_equal(utf8_graphemes(G("\xff\xcc\x81")), 2);
	assert_int_equal(utf8_graphemes(G("\xc3")), 1);
}

static void test_truncate_never_splits_cluster(void **state)
{
	const char s[] = "a\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9" /* a, couple */
	                 "e\xcc\x81"                                     /* é decomposed */
	                 "\xf0\x9f\x87\xab\xf0\x9f\x87\xb7";             /* flag */
	size_t len = sizeof(s) - 1;
	assert_int_equal(utf8_graphemes(s, len), 4);
	assert_int_equal(utf8_truncate_graphemes(s, len, 0), 0);
	assert_int_equal(utf8_truncate_graphemes(s, len, 1), 1);
	assert_int_equal(utf8_truncate_graphemes(s, len, 2), 1 + 11);
	assert_int_equal(utf8_truncate_graphemes(s, len, 3), 1 + 11 + 3);
	assert_int_equal(utf8_truncate_graphemes(s, len, 4), len);
	assert_int_equal(utf8_truncate_graphemes(s, len, 100), len);
	/* every prefix length agrees with the cluster count */
	for (size_t k = 0; k <= 4; k++) {
		size_t cut = utf8_truncate_graphemes(s, len, k);
		assert_int_equal(utf8_graphemes(s, cut), k);
		assert_true(utf8_valid(s, cut));
	}
	assert_int_equal(utf8_truncate_graphemes("", 0, 3), 0);
}

static void check_fold(const char *in, const char *want)
{
	char *out = utf8_nfkc_casefold(in, strlen(in));
	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void test_nfkc_casefold(void **state)
{
	check_fold("\xef\xbc\xa6\xef\xbd\x95\xef\xbd\x8c\xef\xbd\x8c", "full"); /* Ｆｕｌｌ */
	check_fold("\xef\xac\x81", "fi");                                       /* ﬁ */
	check_fold("Stra\xc3\x9f"
	           "e",
	           "strasse"); /* Straße */
	check_fold("HeLLo", "hello");
	check_fold("e\xcc\x81", "\xc3\xa9"); /* composed to é */
	check_fold("", "");
	check_fold("\xe2\x91\xa0", "1"); /* ① */
	/* The typographic apostrophe U+2019 is NOT folded to ASCII "'": NFKC
	 * keeps it distinct, so "don’t" and "don't" compare unequal. Callers
	 * that want them equal must map punctuation themselves. */
	check_fold("don\xe2\x80\x99t", "don\xe2\x80\x99t");
	char *bad = utf8_nfkc_casefold("\xff", 1);
	assert_null(bad);
	bad = utf8_nfkc_casefold("ok\xed\xa0\x80", 5);
	assert_null(bad);
}

/* utf8_cut: the one byte cut (never ends inside a sequence it keeps; a
 * run of stray continuation bytes costs at most 3 bytes). */
static const struct {
	const char *s;
	size_t len, max, want;
} cuts[] = {
        {"abc", 3, 3, 3},
        {"abc", 3, 2, 2},
        {"abc", 3, 0, 0},
        {"a\xC3\xA9", 3, 2, 1},         /* é straddles */
        {"a\xC3\xA9z", 4, 3, 3},        /* é ends at the limit */
        {"\xF0\x9F\x98\x80z", 5, 3, 0}, /* 😀 straddles from byte 0 */
        {"\xF0\x9F\x98\x80z", 5, 4, 4},
        {"a\x80\x80\x80\x80\x80z", 7, 5, 5}, /* invalid: more than 3 continuation bytes */
        {"a\x80z", 3, 1, 1},
        {"\xE2\x82\xAC\xE2\x82\xAC", 6, 5, 3},
};

static void test_cut_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
		if (utf8_cut(cuts[i].s, cuts[i].len, cuts[i].max) != cuts[i].want)
			fail_msg("case %zu: %zu, want %zu", i,
			         utf8_cut(cuts[i].s, cuts[i].len, cuts[i].max), cuts[i].want);
}

/* utf8_copy: the cut into a buffer of cap bytes, NUL included. */
static void test_copy(void **state)
{
	(void)state;
	char out[4];
	assert_int_equal(utf8_copy(out, sizeof out, "abc"), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(utf8_copy(out, sizeof out, "abcd"), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(utf8_copy(out, sizeof out, "ab\xC3\xA9"), 2); /* é would straddle */
	assert_string_equal(out, "ab");
	assert_int_equal(utf8_copy(out, sizeof out, "a\xC3\xA9"), 3); /* é fits whole */
	assert_string_equal(out, "a\xC3\xA9");
	assert_int_equal(utf8_copy(out, 1, "abc"), 0);
	assert_string_equal(out, "");
	assert_int_equal(utf8_copy(out, sizeof out, NULL), 0);
	assert_string_equal(out, "");
}

/* utf8_trim_partial: an end cut elsewhere loses its incomplete sequence
 * (and stray lead bytes), nothing whole. */
static void test_trim_partial(void **state)
{
	(void)state;
	assert_int_equal(utf8_trim_partial("", 0), 0);
	assert_int_equal(utf8_trim_partial("abc", 3), 3);
	assert_int_equal(utf8_trim_partial("a\xC3\xA9", 3), 3);         /* é whole */
	assert_int_equal(utf8_trim_partial("a\xC3", 2), 1);             /* é cut */
	assert_int_equal(utf8_trim_partial("a\xF0\x9F\x98", 4), 1);     /* 😀 cut */
	assert_int_equal(utf8_trim_partial("a\xF0\x9F\x98\x80", 5), 5); /* 😀 whole */
	assert_int_equal(utf8_trim_partial("a\xC3\xE2\x82", 4), 1);     /* two cut ends */
	assert_int_equal(utf8_trim_partial("a\xFF", 2), 1);             /* invalid lead */
	assert_int_equal(utf8_trim_partial("a\x80\x80", 3), 3);         /* stray: kept */
	assert_int_equal(utf8_trim_partial("\xC3\xA9\x80", 3), 3);
}

/* JavaScript's view: a code point above U+FFFF is two units, and a prefix
 * never splits one (where .slice would leave half a surrogate pair). */
static void test_utf16(void **state)
{
	(void)state;
	assert_int_equal(utf8_utf16_length("", 0), 0);
	assert_int_equal(utf8_utf16_length("abc", 3), 3);
	assert_int_equal(utf8_utf16_length("\xC3\xA9", 2), 1);         /* é */
	assert_int_equal(utf8_utf16_length("\xE2\x82\xAC", 3), 1);     /* € */
	assert_int_equal(utf8_utf16_length("\xF0\x9F\x98\x80", 4), 2); /* 😀 */
	assert_int_equal(utf8_utf16_length("a\x80z", 3), 3);           /* a stray byte: one */
	const char *s = "ab\xF0\x9F\x98\x80"
	                "c"; /* units: a b [😀 😀] c */
	assert_int_equal(utf8_utf16_prefix(s, 7, 0), 0);
	assert_int_equal(utf8_utf16_prefix(s, 7, 2), 2);
	assert_int_equal(utf8_utf16_prefix(s, 7, 3), 2); /* would split 😀 */
	assert_int_equal(utf8_utf16_prefix(s, 7, 4), 6);
	assert_int_equal(utf8_utf16_prefix(s, 7, 5), 7);
	assert_int_equal(utf8_utf16_prefix(s, 7, 99), 7);
	assert_int_equal(utf8_utf16_prefix("\xC3\xA9\xC3\xA9", 4, 1), 2);
}

/* The set TypeScript peers trim by: every member, and its neighbours out. */
static void test_js_space(void **state)
{
	(void)state;
	const unsigned int in[] = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0xA0,   0x1680,
	                           0x2000, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF};
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
		assert_true(utf8_js_space(in[i]));
	const unsigned int out[] = {0x08,   0x0E,   0x1F,   0x21,   'a',    0x85,  0x180E,
	                            0x200B, 0x2027, 0x202A, 0x2060, 0x3001, 0xFEFE};
	for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
		assert_false(utf8_js_space(out[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_valid_vectors),
	        cmocka_unit_test(test_decode),
	        cmocka_unit_test(test_grapheme_counts),
	        cmocka_unit_test(test_truncate_never_splits_cluster),
	        cmocka_unit_test(test_nfkc_casefold),
	        cmocka_unit_test(test_cut_table),
	        cmocka_unit_test(test_copy),
	        cmocka_unit_test(test_trim_partial),
	        cmocka_unit_test(test_utf16),
	        cmocka_unit_test(test_js_space),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
