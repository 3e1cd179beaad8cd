/*
 * The reviewer's prompt and review (modules/ghconv/review.h): the tests
 * line of a PR body; the diff in the prompt bounded (largest file first,
 * a file cut at a line, the rest counted), the new side numbered; which
 * lines are on the diff; the model's github_review_pr arguments checked,
 * inline comments kept or folded into the body.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strbuf.h"
#include "modules/ghconv/review.h"

#define SHA "0123456789abcdef0123456789abcdef01234567"

static void test_tests_line(void **state)
{
	(void)state;
	char t[64];
	ghconv_review_tests_line("## Task 1\n\n**Tests:** Passed (3 tests)\n\nPart of #1", t,
	                         sizeof t);
	assert_string_equal(t, "Passed (3 tests)");
	ghconv_review_tests_line("Tests: make test fails\r\nmore", t, sizeof t);
	assert_string_equal(t, "make test fails");
	/* a label inside a line is not the tests line */
	ghconv_review_tests_line("See **Tests:** below\n", t, sizeof t);
	assert_string_equal(t, "");
	ghconv_review_tests_line(NULL, t, sizeof t);
	assert_string_equal(t, "");
	/* cut to the buffer, never past it */
	char small[8];
	ghconv_review_tests_line("**Tests:** 0123456789", small, sizeof small);
	assert_string_equal(small, "0123456");
}

/* A patch adding n lines "line <k> of <name> ..." (a hunk of the new file). */
static char *adding(const char *name, int n)
{
	struct strbuf sb = {0};
	sb_printf(&sb, "@@ -0,0 +1,%d @@\n", n);
	for (int k = 1; k <= n; k++)
		sb_printf(&sb, "+line %d of %s, some code here\n", k, name);
	return sb_detach(&sb);
}

static struct gh_pull_file file(const char *name, char *patch, int64_t add)
{
	struct gh_pull_file f = {
	        .filename = (char *)name, .patch = patch, .additions = add, .changes = add};
	snprintf(f.status, sizeof f.status, "added");
	return f;
}

static struct gh_pull pull(const char *body)
{
	struct gh_pull p = {
	        .number = 7, .open = true, .title = (char *)"task(1): Greet", .body = (char *)body};
	snprintf(p.user, sizeof p.user, "bea-bot");
	snprintf(p.head_ref, sizeof p.head_ref, "task-1-greet");
	snprintf(p.base_ref, sizeof p.base_ref, "main");
	snprintf(p.head_sha, sizeof p.head_sha, SHA);
	return p;
}

/* Bytes of patch text the prompt shows: the lines between ```diff and ```. */
static size_t shown_patch(const char *prompt)
{
	size_t n = 0;
	for (const char *s = strstr(prompt, "```diff\n"); s; s = strstr(s, "```diff\n")) {
		s += 8;
		const char *e = strstr(s, "```\n");
		assert_non_null(e);
		n += (size_t)(e - s);
		s = e + 4;
	}
	return n;
}

static void test_prompt_bounded(void **state)
{
	(void)state;
	struct gh_pull_file f[4];
	f[0] = file("small.c", adding("small.c", 3), 3);
	f[1] = file("huge.c", adding("huge.c", 1000), 1000); /* ~40 KB rendered */
	f[2] = file("medium.c", adding("medium.c", 100), 100);
	f[3] = file("logo.png", NULL, 0);
	struct gh_pull pr = pull("Adds a greeting.\n\n**Tests:** Passed\n<!-- ga:key=x -->");
	struct ghconv_review_prior prior = {"cleo-bot", "CHANGES_REQUESTED", "Use digits.", SHA};
	struct ghconv_review_in in = {.owner = "acme",
	                              .repo = "web",
	                              .pr = &pr,
	                              .files = f,
	                              .nfiles = 4,
	                              .files_unlisted = 2,
	                              .prior = &prior,
	                              .nprior = 1,
	                              .source = "review requested"};
	char *p = ghconv_review_prompt(&in);
	assert_non_null(strstr(p, "Review pull request #7 in acme/web: task(1): Greet"));
	assert_non_null(strstr(p, "Author: bea-bot. Branches: task-1-greet → main."));
	assert_non_null(strstr(p, "Tests, as the description reports them: Passed"));
	assert_null(strstr(p, "ga:key")); /* markers removed */
	assert_non_null(strstr(p, "cleo-bot, CHANGES_REQUESTED, on commit 0123456: Use digits."));
	/* the largest first, cut at a line, numbered on the new side */
	const char *huge = strstr(p, "### huge.c");
	assert_non_null(huge);
	assert_null(strstr(p, "### medium.c"));
	assert_null(strstr(p, "### small.c"));
	assert_non_null(strstr(p, "    1 +line 1 of huge.c"));
	assert_non_null(strstr(p, "more lines of this file's diff not shown"));
	assert_null(strstr(p, "line 1000 of huge.c"));
	/* the binary file named, not counted as hidden */
	assert_non_null(strstr(p, "### logo.png (added, +0 -0, no text diff"));
	/* the rest counted: medium, small and the two GitHub did not list */
	assert_non_null(strstr(p, "And 4 more files, 103 changed lines, not shown (medium.c, "
	                          "small.c, …)."));
	assert_non_null(strstr(p, "bounded to 24 KB"));
	size_t shown = shown_patch(p);
	assert_true(shown <= GHCONV_REVIEW_PATCH_BYTES);
	assert_true(shown > GHCONV_REVIEW_PATCH_BYTES - 200);
	free(p);
	/* without the huge file everything fits, whole, largest first */
	char *huge_patch = f[1].patch;
	f[1] = f[3];
	in.nfiles = 3;
	in.files_unlisted = 0;
	p = ghconv_review_prompt(&in);
	const char *m = strstr(p, "### medium.c"), *s = strstr(p, "### small.c");
	assert_non_null(m);
	assert_non_null(s);
	assert_true(m < s);
	assert_non_null(strstr(p, "  100 +line 100 of medium.c"));
	assert_null(strstr(p, "not shown"));
	free(p);
	free(f[0].patch);
	free(f[2].patch);
	free(huge_patch);
}

static void test_numbering_and_diff_lines(void **state)
{
	(void)state;
	char patch[] =
	        "@@ -1,3 +1,4 @@\n one\n-two\n+2\n+2b\n three\n@@ -10,2 +11,2 @@\n ten\n-x\n+y\n"
	        "\\ No newline at end of file\n";
	struct gh_pull_file f = file("a.txt", patch, 3);
	struct gh_pull pr = pull("");
	struct ghconv_review_in in = {
	        .owner = "acme", .repo = "web", .pr = &pr, .files = &f, .nfiles = 1};
	char *p = ghconv_review_prompt(&in);
	assert_non_null(
	        strstr(p, "@@ -1,3 +1,4 @@\n    1  one\n      -two\n    2 +2\n    3 +2b\n"
	                  "    4  three\n@@ -10,2 +11,2 @@\n   11  ten\n      -x\n   12 +y\n"));
	assert_non_null(strstr(p, "Tests, as the description reports them: the description names "
	                          "no tests"));
	free(p);
	for (int l = 1; l <= 4; l++)
		assert_true(ghconv_review_line_in_diff(&f, 1, "a.txt", l));
	assert_false(ghconv_review_line_in_diff(&f, 1, "a.txt", 5));
	assert_false(ghconv_review_line_in_diff(&f, 1, "a.txt", 10));
	assert_true(ghconv_review_line_in_diff(&f, 1, "a.txt", 11));
	assert_true(ghconv_review_line_in_diff(&f, 1, "a.txt", 12));
	assert_false(ghconv_review_line_in_diff(&f, 1, "a.txt", 13));
	assert_false(ghconv_review_line_in_diff(&f, 1, "b.txt", 1));
	assert_false(ghconv_review_line_in_diff(&f, 1, "a.txt", 0));
}

static cJSON *args(const char *json)
{
	cJSON *a = cJSON_Parse(json);
	assert_non_null(a);
	return a;
}

static void test_parse(void **state)
{
	(void)state;
	char patch[] = "@@ -1,2 +1,3 @@\n one\n+two\n three\n";
	struct gh_pull_file f = file("a.txt", patch, 1);
	struct ghconv_review_out o;
	struct ga_err e = {{0}};
	cJSON *a = args("{\"owner\":\"ACME\",\"repo\":\"web\",\"pull_number\":7,\"event\":"
	                "\"REQUEST_CHANGES\",\"body\":\"Two problems.\",\"comments\":["
	                "{\"path\":\"a.txt\",\"line\":2,\"body\":\"two should be 2\"},"
	                "{\"path\":\"a.txt\",\"line\":40,\"body\":\"and forty?\"},"
	                "{\"path\":\"gone.txt\",\"line\":1,\"body\":\"not in this PR\"}]}");
	assert_int_equal(ghconv_review_parse(a, "acme", "web", 7, SHA, &f, 1, &o, &e), 0);
	assert_string_equal(o.event, "REQUEST_CHANGES");
	assert_int_equal(o.inline_n, 1);
	assert_int_equal(o.folded_n, 2);
	assert_non_null(strstr(o.text, "Two problems.\n\nOn lines outside the diff:\n"
	                               "- `a.txt` line 40: and forty?\n"
	                               "- `gone.txt` line 1: not in this PR\n"));
	const cJSON *cs = cJSON_GetObjectItem(o.extra, "comments");
	assert_int_equal(cJSON_GetArraySize(cs), 1);
	const cJSON *c0 = cJSON_GetArrayItem(cs, 0);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(c0, "path")), "a.txt");
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(c0, "line")), 2);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(c0, "side")), "RIGHT");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o.extra, "commit_id")), SHA);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o.extra, "event")),
	                    "REQUEST_CHANGES");
	ghconv_review_out_clear(&o);
	ghconv_review_out_clear(&o); /* twice is fine */
	cJSON_Delete(a);

	static const struct {
		const char *json, *err;
	} bad[] = {
	        {"{\"owner\":\"acme\",\"repo\":\"web\",\"pull_number\":8,\"event\":\"APPROVE\","
	         "\"body\":\"ok\"}",
	         "is not under review now"},
	        {"{\"owner\":\"acme\",\"repo\":\"web\",\"pull_number\":7,\"event\":\"LGTM\","
	         "\"body\":\"ok\"}",
	         "is not APPROVE, REQUEST_CHANGES or COMMENT"},
	        {"{\"owner\":\"acme\",\"repo\":\"web\",\"pull_number\":7,\"event\":\"APPROVE\","
	         "\"body\":\"  \\n\"}",
	         "say why you approve"},
	        {"{\"owner\":\"acme\",\"repo\":\"web\",\"pull_number\":7,\"event\":\"COMMENT\","
	         "\"body\":\"x\",\"comments\":[{\"line\":2,\"body\":\"b\"}]}",
	         "inline comment 1 needs a path"},
	        {"{\"owner\":\"acme\",\"repo\":\"web\",\"pull_number\":7,\"event\":\"COMMENT\","
	         "\"body\":\"x\",\"comments\":[{\"path\":\"a.txt\",\"line\":2.5,\"body\":\"b\"}]}",
	         "a whole number"},
	        {"{\"owner\":\"acme\",\"repo\":\"web\",\"pull_number\":7,\"event\":\"COMMENT\","
	         "\"body\":\"x\",\"comments\":{\"path\":\"a.txt\"}}",
	         "must be an array"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		a = args(bad[i].json);
		e.msg[0] = '\0';
		assert_int_equal(ghconv_review_parse(a, "acme", "web", 7, SHA, &f, 1, &o, &e), -1);
		if (!strstr(e.msg, bad[i].err))
			fail_msg("case %zu: '%s'", i, e.msg);
		assert_null(o.text);
		assert_null(o.extra);
		cJSON_Delete(a);
	}
	/* more inline comments than one review takes */
	a = args("{\"owner\":\"acme\",\"repo\":\"web\",\"pull_number\":7,\"event\":\"COMMENT\","
	         "\"body\":\"x\",\"comments\":[]}");
	cJSON *arr = cJSON_GetObjectItem(a, "comments");
	for (int i = 0; i <= GHCONV_REVIEW_MAX_COMMENTS; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "path", "a.txt");
		cJSON_AddNumberToObject(c, "line", 2);
		cJSON_AddStringToObject(c, "body", "b");
		cJSON_AddItemToArray(arr, c);
	}
	assert_int_equal(ghconv_review_parse(a, "acme", "web", 7, SHA, &f, 1, &o, &e), -1);
	assert_non_null(strstr(e.msg, "at most 20"));
	cJSON_Delete(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tests_line),
	        cmocka_unit_test(test_prompt_bounded),
	        cmocka_unit_test(test_numbering_and_diff_lines),
	        cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
