/*
 * test_ghurl — GitHub links (spec github-commitments §1.5): what is an issue
 * or PR link, what is refused and how the refusal reads, links found in
 * free text, notification API URLs, and the Link header of paginated
 * answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/github/ghurl.h"

static void parses(const char *url, const char *owner, const char *repo, int64_t n,
                   enum gh_ref_kind kind)
{
	struct gh_ref r;
	struct ga_err err = {{0}};
	if (gh_parse_url(url, &r, &err) != 0)
		fail_msg("'%s' refused: %s", url, err.msg);
	assert_string_equal(r.owner, owner);
	assert_string_equal(r.repo, repo);
	assert_int_equal(r.number, n);
	assert_int_equal(r.kind, kind);
}

static void refused(const char *url, const char *needle)
{
	struct gh_ref r;
	struct ga_err err = {{0}};
	if (gh_parse_url(url, &r, &err) == 0)
		fail_msg("'%s' was accepted", url);
	if (!strstr(err.msg, needle))
		fail_msg("refusal of '%s' reads '%s', without '%s'", url, err.msg, needle);
}

static void test_issue_and_pull_links(void **state)
{
	(void)state;
	parses("https://github.com/internet-development/www-lil-intdev-x/issues/12",
	       "internet-development", "www-lil-intdev-x", 12, GH_REF_ISSUE);
	parses("http://github.com/a/b/pull/7", "a", "b", 7, GH_REF_PULL);
	parses("github.com/a/b.c_d-e/pulls/7", "a", "b.c_d-e", 7, GH_REF_PULL);
	parses("HTTPS://WWW.GitHub.com/Ada/Repo/ISSUES/3", "Ada", "Repo", 3, GH_REF_ISSUE);
	parses("  https://github.com/a/b/issues/5#issuecomment-99 \n", "a", "b", 5, GH_REF_ISSUE);
	parses("https://github.com/a/b/pull/5/files", "a", "b", 5, GH_REF_PULL);
	parses("https://github.com/a/b/issues/5?x=1", "a", "b", 5, GH_REF_ISSUE);
	parses("https://github.com/a/b/issues/2147483647", "a", "b", 2147483647, GH_REF_ISSUE);
}

static void test_refusals_say_what_was_expected(void **state)
{
	(void)state;
	refused("https://github.com/a/b/discussions/4", "discussion");
	refused("https://github.com/a/b", "is a repository");
	refused("https://github.com/a/b/commit/abc", "not an issue or pull request");
	refused("https://gitlab.com/a/b/issues/1", "not a github.com link");
	refused("https://github.com.evil.org/a/b/issues/1", "not a github.com link");
	refused("https://github.com/a/b/issues/", "no issue or pull request number");
	refused("https://github.com/a/b/issues/0", "no issue or pull request number");
	refused("https://github.com/a/b/issues/99999999999", "too large");
	refused("https://github.com/a/b/issues/5x", "glued");
	refused("https://github.com/-a/b/issues/5", "owner");
	refused("https://github.com/a/../issues/5", "repository");
	refused("https://github.com/a/b c/issues/5", "repository");
	refused("", "empty");
	refused(NULL, "no GitHub link");
	char longname[64];
	memset(longname, 'x', 40);
	longname[40] = '\0';
	char url[128];
	snprintf(url, sizeof url, "https://github.com/%s/b/issues/1", longname);
	refused(url, "owner");
}

static void test_links_in_text(void **state)
{
	(void)state;
	struct gh_ref r[8];
	const char *text = "see https://github.com/a/b/issues/1, and (github.com/a/b/pull/2). "
	                   "Again: HTTPS://github.com/A/B/issues/1 and notgithub.com/x/y/issues/9 "
	                   "and https://github.com/a/b/discussions/3 or github.com/c/d/issues/4.";
	size_t n = gh_find_urls(text, r, 8);
	assert_int_equal(n, 3);
	assert_string_equal(r[0].owner, "a");
	assert_int_equal(r[0].number, 1);
	assert_int_equal(r[1].kind, GH_REF_PULL);
	assert_int_equal(r[1].number, 2);
	assert_string_equal(r[2].owner, "c");
	assert_int_equal(r[2].number, 4);
	assert_int_equal(gh_find_urls(text, r, 1), 1); /* bounded */
	assert_int_equal(gh_find_urls("nothing here", r, 8), 0);
	assert_int_equal(gh_find_urls(NULL, r, 8), 0);
}

static void test_repo_in_text(void **state)
{
	(void)state;
	struct gh_repo_ref r;
	assert_int_equal(gh_find_repo("let's work in github.com/octo/www-lil-intdev-garden.", &r),
	                 1);
	assert_string_equal(r.owner, "octo");
	assert_string_equal(r.repo, "www-lil-intdev-garden");
	assert_int_equal(gh_find_repo("clone https://github.com/a/b.git then", &r), 1);
	assert_string_equal(r.repo, "b");
	assert_int_equal(gh_find_repo("see https://github.com/orgs/x/people and "
	                              "https://github.com/a/b/issues/4",
	                              &r),
	                 1);
	assert_string_equal(r.owner, "a");
	assert_string_equal(r.repo, "b");
	assert_int_equal(gh_find_repo("https://github.com/a", &r), 0);
	assert_int_equal(gh_find_repo("notgithub.com/a/b", &r), 0);
	assert_int_equal(gh_find_repo("github.com/a/..", &r), 0);
	assert_int_equal(gh_find_repo(NULL, &r), 0);
}

static void test_api_urls(void **state)
{
	(void)state;
	struct gh_ref r;
	struct ga_err err = {{0}};
	assert_int_equal(gh_parse_api_url("https://api.github.com/",
	                                  "https://api.github.com/repos/o/r/issues/42", &r, &err),
	                 0);
	assert_string_equal(r.repo, "r");
	assert_int_equal(r.number, 42);
	assert_int_equal(r.kind, GH_REF_ISSUE);
	assert_int_equal(gh_parse_api_url("http://127.0.0.1:9",
	                                  "http://127.0.0.1:9/repos/o/r/pulls/7", &r, &err),
	                 0);
	assert_int_equal(r.kind, GH_REF_PULL);
	assert_int_equal(gh_parse_api_url("https://api.github.com",
	                                  "https://api.github.com/repos/o/r/commits/abc", &r, &err),
	                 -1);
	assert_non_null(strstr(err.msg, "not an issue or pull request"));
	assert_int_equal(gh_parse_api_url("https://api.github.com",
	                                  "https://evil.example/repos/o/r/issues/1", &r, &err),
	                 -1);
	assert_non_null(strstr(err.msg, "not an API URL"));
	assert_int_equal(gh_parse_api_url("https://api.github.com",
	                                  "https://api.github.com/repos/o/r/issues/1/comments", &r,
	                                  &err),
	                 -1);
	char html[256];
	struct gh_ref pr = {.owner = "o", .repo = "r", .number = 3, .kind = GH_REF_PULL};
	gh_ref_html_url(&pr, html, sizeof html);
	assert_string_equal(html, "https://github.com/o/r/pull/3");
}

static void test_link_header(void **state)
{
	(void)state;
	char out[256];
	const char *gh = "<https://api.github.com/repositories/1/issues?page=2>; rel=\"next\", "
	                 "<https://api.github.com/repositories/1/issues?page=5>; rel=\"last\"";
	assert_int_equal(gh_link_next(gh, out, sizeof out), 1);
	assert_string_equal(out, "https://api.github.com/repositories/1/issues?page=2");
	const char *last_first = "<https://x/a?page=1>; rel=\"prev\", <https://x/a?page=3>; "
	                         "rel=\"next\"";
	assert_int_equal(gh_link_next(last_first, out, sizeof out), 1);
	assert_string_equal(out, "https://x/a?page=3");
	assert_int_equal(gh_link_next("<https://x/a?page=1>; rel=\"prev\"", out, sizeof out), 0);
	assert_int_equal(gh_link_next("<https://x/a>; rel=next", out, sizeof out), 1);
	assert_int_equal(gh_link_next("<https://x/a>; rel=\"prev next\"", out, sizeof out), 1);
	assert_int_equal(gh_link_next(NULL, out, sizeof out), 0);
	assert_int_equal(gh_link_next("", out, sizeof out), 0);
	assert_int_equal(gh_link_next("https://x/a; rel=\"next\"", out, sizeof out), -1);
	assert_int_equal(gh_link_next("<https://x/a; rel=\"next\"", out, sizeof out), -1);
	assert_int_equal(gh_link_next("<https://x/a>; rel=\"next", out, sizeof out), -1);
	assert_int_equal(gh_link_next("<https://x/a/very/long>; rel=\"next\"", out, 8), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_issue_and_pull_links),
	        cmocka_unit_test(test_refusals_say_what_was_expected),
	        cmocka_unit_test(test_links_in_text),
	        cmocka_unit_test(test_repo_in_text),
	        cmocka_unit_test(test_api_urls),
	        cmocka_unit_test(test_link_header),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
