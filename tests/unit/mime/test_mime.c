/* mime: the content-type table, the page-file name rule, the lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/mime.h"
#include "common/xalloc.h"

static void test_types_by_extension(void **state)
{
	(void)state;
	assert_string_equal(mime_type("index.html"), "text/html; charset=utf-8");
	assert_string_equal(mime_type("style.css"), "text/css; charset=utf-8");
	assert_string_equal(mime_type("app.min.js"), "text/javascript; charset=utf-8");
	assert_string_equal(mime_type("logo.svg"), "image/svg+xml");
	assert_string_equal(mime_type("a.png"), "image/png");
	assert_string_equal(mime_type("favicon.ico"), "image/x-icon");
	assert_string_equal(mime_type("notes.txt"), "text/plain; charset=utf-8");
	assert_string_equal(mime_type("data.json"), "application/json");
	/* the last dot decides, exactly and case-sensitively */
	assert_string_equal(mime_type("x.txt.html"), "text/html; charset=utf-8");
	assert_null(mime_type("x.html.bak"));
	assert_null(mime_type("INDEX.HTML"));
	assert_null(mime_type("Makefile"));
	assert_null(mime_type("x.htm"));
	assert_null(mime_type("x.html5"));
	assert_null(mime_type(""));
	assert_null(mime_type(NULL));
}

static void test_name_rule(void **state)
{
	(void)state;
	const char *ok[] = {"index.html", "app-2.min.js", "a_b.css", "X", "a..b"};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		assert_true(mime_name_ok(ok[i], strlen(ok[i]), 64));
	const char *bad[] = {"",      ".env", "..",   ".",      "a/b.js", "a\\b.js",
	                     "a%2fb", "a b",  "a\nb", "é.html", "a:b",    "a?b"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_false(mime_name_ok(bad[i], strlen(bad[i]), 64));
	assert_false(mime_name_ok(NULL, 3, 64));
	/* the bound is inclusive */
	char name[80];
	memset(name, 'a', sizeof name);
	assert_true(mime_name_ok(name, 64, 64));
	assert_false(mime_name_ok(name, 65, 64));
	assert_true(mime_name_ok(name, 63, 63));
	assert_false(mime_name_ok(name, 64, 63));
	/* only len bytes count: a request path is not NUL-terminated */
	assert_true(mime_name_ok("app.js/../x", 6, 64));
	assert_false(mime_name_ok("app.js/../x", 7, 64));
}

static void test_find_and_clear(void **state)
{
	(void)state;
	struct mime_file files[3] = {
	        {xstrdup("index.html"), xstrdup("<p>"), 3, NULL},
	        {xstrdup("app.js"), xstrdup("x"), 1, NULL},
	        {xstrdup("app.json"), xstrdup("{}"), 2, NULL},
	};
	for (size_t i = 0; i < 3; i++)
		files[i].type = mime_type(files[i].name);
	assert_ptr_equal(mime_file_find(files, 3, "index.html", 10), &files[0]);
	assert_ptr_equal(mime_file_find(files, 3, "app.js", 6), &files[1]);
	/* exact length: a prefix or an extension of a name is another name */
	assert_ptr_equal(mime_file_find(files, 3, "app.json", 8), &files[2]);
	assert_ptr_equal(mime_file_find(files, 3, "app.jsonx", 8), &files[2]);
	assert_null(mime_file_find(files, 3, "app.j", 5));
	assert_null(mime_file_find(files, 3, "index.htm", 9));
	assert_null(mime_file_find(files, 3, "missing.html", 12));
	assert_null(mime_file_find(files, 0, "index.html", 10));
	assert_null(mime_file_find(files, 3, NULL, 0));
	for (size_t i = 0; i < 3; i++) {
		mime_file_clear(&files[i]);
		assert_null(files[i].name);
		assert_null(files[i].data);
		assert_int_equal(files[i].len, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_types_by_extension),
	        cmocka_unit_test(test_name_rule),
	        cmocka_unit_test(test_find_and_clear),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
