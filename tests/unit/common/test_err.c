/* err + xalloc: the small helpers everything else leans on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/xalloc.h"

static void test_err_set_formats_and_returns_minus_one(void **state)
{
	struct ga_err e = {{0}};
	assert_int_equal(err_set(&e, "field '%s' is missing", "name"), -1);
	assert_string_equal(e.msg, "field 'name' is missing");
	err_clear(&e);
	assert_string_equal(e.msg, "");
	assert_int_equal(err_set(NULL, "ignored %d", 1), -1);
	err_clear(NULL);
}

static void test_err_truncates_long_messages(void **state)
{
	struct ga_err e;
	char big[GA_ERR_MSG_MAX * 2];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	err_set(&e, "%s", big);
	assert_int_equal(strlen(e.msg), GA_ERR_MSG_MAX - 1);
}

static void test_xalloc_helpers(void **state)
{
	char *s = xstrdup("hello");
	assert_string_equal(s, "hello");
	free(s);
	s = xstrndup("hello", 3);
	assert_string_equal(s, "hel");
	free(s);
	s = xstrndup("hi", 10);
	assert_string_equal(s, "hi");
	free(s);
	s = xasprintf("%d-%s", 42, "x");
	assert_string_equal(s, "42-x");
	free(s);
	int *a = xcalloc(4, sizeof(int));
	for (int i = 0; i < 4; i++)
		assert_int_equal(a[i], 0);
	a = xreallocarray(a, 1000, sizeof(int));
	a[999] = 7;
	assert_int_equal(a[999], 7);
	free(a);
	void *z = xmalloc(0);
	assert_non_null(z);
	free(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_err_set_formats_and_returns_minus_one),
	        cmocka_unit_test(test_err_truncates_long_messages),
	        cmocka_unit_test(test_xalloc_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
