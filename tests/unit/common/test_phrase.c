/* phrase: the pattern language (literals, whitespace, alternatives, <w>,
 * the bounded gap), word boundaries at both ends with backtracking when the
 * end boundary fails, malformed patterns, and table searches with
 * exceptions and anchored lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/phrase.h"

static long at(const char *pattern, const char *t, size_t i)
{
	return phrase_match_at(pattern, t, strlen(t), i);
}

static bool find(const char *pattern, const char *t)
{
	return phrase_find(pattern, t, strlen(t), false);
}

static void test_language(void **state)
{
	(void)state;
	assert_int_equal(at("let me", "let me  see", 0), 6);
	assert_int_equal(at("let me", "letme", 0), -1); /* ' ' needs whitespace */
	assert_int_equal(at("a~,~b", "a , b", 0), 5);   /* ~: zero or more */
	assert_int_equal(at("a~,~b", "a,b", 0), 3);
	assert_int_equal(at("{i will|i'll} go", "i'll go", 0), 7);
	assert_int_equal(at("{|so~,~}in", "so, in", 0), 6); /* optional group */
	assert_int_equal(at("{|so~,~}in", "in", 0), 2);
	assert_int_equal(at("w<w>", "w123_x!", 0), 6); /* "w" then a word: "123_x" */
	assert_int_equal(at("w<w>", "w!", 0), -1);
	assert_int_equal(at("x <w>", "x 123_y!", 0), 7);
	assert_int_equal(at("once <*> is up", "once the fix is up", 0), 18);
	assert_false(find("does<*>work", "does it\nwork")); /* the gap stays on one line */
	assert_true(find("does<*>work", "does it work"));
}

static void test_gap_is_bounded(void **state)
{
	(void)state;
	char t[PHRASE_GAP_MAX + 8];
	/* "a", a gap of PHRASE_GAP_MAX bytes, "b" */
	t[0] = 'a';
	memset(t + 1, ' ', PHRASE_GAP_MAX);
	t[PHRASE_GAP_MAX + 1] = 'b';
	t[PHRASE_GAP_MAX + 2] = '\0';
	assert_true(phrase_find("a<*>b", t, strlen(t), false));
	/* one byte more */
	memset(t + 1, ' ', PHRASE_GAP_MAX + 1);
	t[PHRASE_GAP_MAX + 2] = 'b';
	t[PHRASE_GAP_MAX + 3] = '\0';
	assert_false(phrase_find("a<*>b", t, strlen(t), false));
}

static void test_boundaries(void **state)
{
	(void)state;
	assert_false(find("do", "does it"));   /* end boundary */
	assert_false(find("it", "edit this")); /* start boundary, end boundary */
	assert_true(find("it", "edit it now"));
	assert_true(find("how {do|does}", "how does it work")); /* "do" fails, "does" wins */
	assert_true(find("can you share <*>{repo|link}", "can you share the repository link"));
	assert_false(find("can you share <*>{repo|link}", "can you share the repository"));
	/* a pattern that ends on a non-word byte needs no boundary after it */
	assert_true(find("on \"<*>\"{:|~-}", "on \"x\":y"));
}

static void test_malformed_never_matches(void **state)
{
	(void)state;
	assert_false(find("{how {do|does}}", "how does"));
	assert_false(find("{how|why", "how"));
	assert_int_equal(at("how", "how", 4), -1); /* past the end */
}

static void test_anchored(void **state)
{
	(void)state;
	assert_true(phrase_find("it", "  it is", 7, true));
	assert_false(phrase_find("is", "  it is", 7, true));
	assert_true(phrase_find("is", "  it is", 7, false));
}

enum { L_PROMISE, L_OPENER };

static const struct phrase_entry table[] = {
        {L_PROMISE, false, "i'll"},
        {L_PROMISE, false, "let me"},
        {L_PROMISE, true, "let me know"},
        {L_OPENER, false, "great {point|question}"},
};
#define N (sizeof table / sizeof table[0])

static void test_table(void **state)
{
	(void)state;
	const char *t = "ok, let me know. then let me check; i'll see";
	size_t a = 0, e = 0;
	const char *p = phrase_table_find(table, N, L_PROMISE, false, t, strlen(t), &a, &e);
	/* "let me know" is excused; the next "let me" is the hit */
	assert_non_null(p);
	assert_string_equal(p, "let me");
	assert_int_equal(a, 22);
	assert_int_equal(e, 28);
	t = "let me know when";
	assert_null(phrase_table_find(table, N, L_PROMISE, false, t, strlen(t), NULL, NULL));
	/* anchored: only at the first non-space byte */
	t = "  great point, and";
	p = phrase_table_find(table, N, L_OPENER, true, t, strlen(t), &a, &e);
	assert_non_null(p);
	assert_int_equal(a, 2);
	t = "a great point";
	assert_null(phrase_table_find(table, N, L_OPENER, true, t, strlen(t), NULL, NULL));
	assert_non_null(phrase_table_find(table, N, L_OPENER, false, t, strlen(t), NULL, NULL));
	assert_null(phrase_table_find(table, N, L_OPENER, true, "", 0, NULL, NULL));
	assert_null(phrase_table_find(table, N, L_OPENER, false, NULL, 0, NULL, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_language),   cmocka_unit_test(test_gap_is_bounded),
	        cmocka_unit_test(test_boundaries), cmocka_unit_test(test_malformed_never_matches),
	        cmocka_unit_test(test_anchored),   cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
