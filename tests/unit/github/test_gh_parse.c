/*
 * test_gh_parse — the work loop's parsers of GitHub JSON (gh_work.h) on
 * answers shaped like GitHub's, and on what GitHub or a proxy may send
 * instead: missing and null fields, wrong types, values longer than the
 * field, arrays with a bad item, broken base64, an HTML error page (which
 * is not JSON at all). Every refusal names what was wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"

#define SHA_A "6dcb09b5b57875f334f61aebed695e2e4193db5e"
#define SHA_B "e5bd3914e2e596debea16f433f57875b5b90bcd6"

static cJSON *J(const char *s)
{
	cJSON *o = cJSON_Parse(s);
	if (!o)
		fail_msg("test JSON does not parse: %s", s);
	return o;
}

static const char *PULL =
        "{\"url\":\"https://api.github.com/repos/octo/hi/pulls/1347\",\"id\":1,\"number\":1347,"
        "\"state\":\"open\",\"locked\":false,\"title\":\"Amazing new feature\","
        "\"user\":{\"login\":\"octocat\",\"id\":1},\"body\":\"Please pull these awesome changes "
        "in!\",\"labels\":[],\"created_at\":\"2011-01-26T19:01:12Z\",\"updated_at\":\"2011-01-"
        "26T19:01:12Z\",\"closed_at\":null,\"merged_at\":null,\"merge_commit_sha\":null,"
        "\"requested_reviewers\":[{\"login\":\"other_user\"}],\"head\":{\"label\":"
        "\"octocat:new-topic\",\"ref\":\"new-topic\",\"sha\":\"" SHA_A "\"},\"base\":{\"label\":"
        "\"octocat:master\",\"ref\":\"master\",\"sha\":\"" SHA_B "\"},\"draft\":false,"
        "\"merged\":false,\"mergeable\":true,\"mergeable_state\":\"clean\",\"comments\":10,"
        "\"commits\":3,\"additions\":100,\"deletions\":3,\"changed_files\":5,"
        "\"html_url\":\"https://github.com/octo/hi/pull/1347\"}";

static void test_pull(void **state)
{
	(void)state;
	cJSON *o = J(PULL);
	struct gh_pull p;
	struct ga_err err = {{0}};
	assert_int_equal(gh_pull_parse(o, &p, &err), 0);
	assert_int_equal(p.number, 1347);
	assert_true(p.open);
	assert_false(p.merged);
	assert_string_equal(p.title, "Amazing new feature");
	assert_string_equal(p.user, "octocat");
	assert_string_equal(p.head_ref, "new-topic");
	assert_string_equal(p.head_sha, SHA_A);
	assert_string_equal(p.base_ref, "master");
	assert_int_equal(p.mergeable, GH_MERGEABLE_YES);
	assert_string_equal(p.mergeable_state, "clean");
	assert_int_equal(p.n_requested, 1);
	assert_string_equal(p.requested[0], "other_user");
	assert_int_equal(p.commits, 3);
	assert_int_equal(p.changed_files, 5);
	assert_true(p.created_ms > 0);
	assert_int_equal(p.closed_ms, 0);
	assert_string_equal(p.merge_commit_sha, "");
	gh_pull_clear(&p);
	gh_pull_clear(&p); /* twice is harmless */

	/* mergeable null: not computed yet; a merged_at alone means merged
	 * (list entries carry no "merged"). */
	cJSON_ReplaceItemInObject(o, "mergeable", cJSON_CreateNull());
	cJSON_DeleteItemFromObject(o, "merged");
	cJSON_ReplaceItemInObject(o, "merged_at", cJSON_CreateString("2011-01-27T10:00:00Z"));
	cJSON_ReplaceItemInObject(o, "title", cJSON_CreateNull());
	assert_int_equal(gh_pull_parse(o, &p, &err), 0);
	assert_int_equal(p.mergeable, GH_MERGEABLE_UNKNOWN);
	assert_true(p.merged);
	assert_string_equal(p.title, "");
	gh_pull_clear(&p);

	/* The required fields, one by one. */
	const char *required[] = {"number", "state", "head", "base"};
	for (size_t i = 0; i < 4; i++) {
		cJSON *x = J(PULL);
		cJSON_DeleteItemFromObject(x, required[i]);
		memset(&err, 0, sizeof err);
		assert_int_equal(gh_pull_parse(x, &p, &err), -1);
		assert_true(strlen(err.msg) > 0);
		gh_pull_clear(&p);
		cJSON_Delete(x);
	}
	cJSON *x = J(PULL);
	cJSON_ReplaceItemInObject(x, "number", cJSON_CreateString("1347"));
	assert_int_equal(gh_pull_parse(x, &p, &err), -1);
	assert_non_null(strstr(err.msg, "number"));
	cJSON_ReplaceItemInObject(x, "number", cJSON_CreateNumber(5));
	cJSON_ReplaceItemInObject(x, "state", cJSON_CreateString("merged"));
	assert_int_equal(gh_pull_parse(x, &p, &err), -1);
	assert_non_null(strstr(err.msg, "merged"));
	cJSON_ReplaceItemInObject(x, "state", cJSON_CreateString("open"));
	char longref[400];
	memset(longref, 'r', sizeof longref - 1);
	longref[sizeof longref - 1] = '\0';
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(x, "head"), "ref",
	                          cJSON_CreateString(longref));
	assert_int_equal(gh_pull_parse(x, &p, &err), -1);
	assert_non_null(strstr(err.msg, "'ref'"));
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(x, "head"), "ref", cJSON_CreateString("t"));
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(x, "head"), "sha", cJSON_CreateString("xyz"));
	assert_int_equal(gh_pull_parse(x, &p, &err), -1);
	assert_non_null(strstr(err.msg, "sha"));
	cJSON_Delete(x);

	/* More requested reviewers than GitHub keeps: capped, not overrun. */
	x = J(PULL);
	cJSON *rr = cJSON_GetObjectItem(x, "requested_reviewers");
	for (int i = 0; i < 40; i++) {
		cJSON *u = cJSON_CreateObject();
		cJSON_AddStringToObject(u, "login", "someone");
		cJSON_AddItemToArray(rr, u);
	}
	assert_int_equal(gh_pull_parse(x, &p, &err), 0);
	assert_int_equal(p.n_requested, GH_REVIEWERS_MAX);
	gh_pull_clear(&p);
	cJSON_Delete(x);
	cJSON_Delete(o);

	/* Not an object at all: an HTML error page does not even parse. */
	assert_null(cJSON_Parse("<!DOCTYPE html><html><body>Unicorn!</body></html>"));
	assert_int_equal(gh_pull_parse(NULL, &p, &err), -1);
	assert_non_null(strstr(err.msg, "not a JSON object"));
	x = J("[1,2]");
	assert_int_equal(gh_pull_parse(x, &p, &err), -1);
	cJSON_Delete(x);
}

static void test_files_reviews_comments(void **state)
{
	(void)state;
	cJSON *o =
	        J("[{\"sha\":\"" SHA_A "\",\"filename\":\"file1.txt\",\"status\":\"added\","
	          "\"additions\":103,\"deletions\":21,\"changes\":124,\"patch\":\"@@ -132,7 +132,7 "
	          "@@ module Test\"},{\"filename\":\"logo.png\",\"status\":\"modified\","
	          "\"additions\":0,\"deletions\":0,\"changes\":0},{\"filename\":\"new.md\","
	          "\"previous_filename\":\"old.md\",\"status\":\"renamed\"}]");
	struct gh_pull_file *f;
	size_t n;
	struct ga_err err = {{0}};
	assert_int_equal(gh_pull_files_parse(o, &f, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(f[0].filename, "file1.txt");
	assert_string_equal(f[0].status, "added");
	assert_int_equal(f[0].changes, 124);
	assert_non_null(f[0].patch);
	assert_null(f[1].patch); /* binary */
	assert_string_equal(f[2].previous_filename, "old.md");
	gh_pull_files_free(f, n);
	cJSON_Delete(o);
	o = J("[{\"filename\":\"a\"},\"oops\"]");
	assert_int_equal(gh_pull_files_parse(o, &f, &n, &err), -1);
	assert_non_null(strstr(err.msg, "item 2"));
	assert_null(f);
	cJSON_Delete(o);
	o = J("[{\"status\":\"added\"}]");
	assert_int_equal(gh_pull_files_parse(o, &f, &n, &err), -1);
	assert_non_null(strstr(err.msg, "filename"));
	cJSON_Delete(o);
	o = J("{\"message\":\"Not Found\"}");
	assert_int_equal(gh_pull_files_parse(o, &f, &n, &err), -1);
	assert_non_null(strstr(err.msg, "not a JSON array"));
	cJSON_Delete(o);

	o = J("[{\"id\":80,\"user\":{\"login\":\"octocat\"},\"body\":null,\"state\":\"APPROVED\","
	      "\"commit_id\":\"" SHA_A "\",\"submitted_at\":\"2019-11-17T17:43:43Z\"},{\"id\":81,"
	      "\"user\":null,\"body\":\"x\",\"state\":\"COMMENTED\"}]");
	struct gh_review *r;
	assert_int_equal(gh_reviews_parse(o, &r, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(r[0].user, "octocat");
	assert_string_equal(r[0].body, "");
	assert_true(r[0].submitted_ms > 0);
	assert_string_equal(r[1].user, ""); /* a deleted account */
	gh_reviews_free(r, n);
	cJSON_Delete(o);
	o = J("[{\"id\":80,\"user\":{\"login\":\"octocat\"}}]");
	assert_int_equal(gh_reviews_parse(o, &r, &n, &err), -1);
	assert_non_null(strstr(err.msg, "state"));
	cJSON_Delete(o);

	o = J("[{\"id\":10,\"pull_request_review_id\":42,\"path\":\"file1.txt\",\"line\":null,"
	      "\"side\":\"RIGHT\",\"body\":\"Great stuff!\",\"user\":{\"login\":\"octocat\"}}]");
	struct gh_review_comment_info *c;
	assert_int_equal(gh_review_comments_parse(o, &c, &n, &err), 0);
	assert_int_equal(c[0].review_id, 42);
	assert_int_equal(c[0].line, 0);
	assert_string_equal(c[0].side, "RIGHT");
	gh_review_comments_free(c, n);
	cJSON_Delete(o);
}

static void test_contents(void **state)
{
	(void)state;
	/* GitHub's base64 comes in lines of 60 characters. */
	cJSON *o =
	        J("{\"type\":\"file\",\"encoding\":\"base64\",\"size\":30,\"name\":\"README.md\","
	          "\"path\":\"README.md\",\"content\":\"IyBIZWxsbwoKVGhpcyBpcyB0aGUgd29ya3Nw\\n"
	          "YWNlLgo=\\n\",\"sha\":\"" SHA_A "\"}");
	struct gh_content ct;
	struct ga_err err = {{0}};
	assert_int_equal(gh_content_parse(o, &ct, &err), 0);
	assert_int_equal(ct.type, GH_CONTENT_FILE);
	assert_string_equal((char *)ct.data, "# Hello\n\nThis is the workspace.\n");
	assert_int_equal(ct.len, 32);
	gh_content_clear(&ct);
	cJSON_ReplaceItemInObject(o, "content", cJSON_CreateString("not base64!"));
	assert_int_equal(gh_content_parse(o, &ct, &err), -1);
	assert_non_null(strstr(err.msg, "base64"));
	gh_content_clear(&ct);
	cJSON_ReplaceItemInObject(o, "encoding", cJSON_CreateString("none"));
	cJSON_ReplaceItemInObject(o, "content", cJSON_CreateString(""));
	assert_int_equal(gh_content_parse(o, &ct, &err), 0);
	assert_true(ct.too_large);
	assert_null(ct.data);
	gh_content_clear(&ct);
	cJSON_ReplaceItemInObject(o, "type", cJSON_CreateString("blob"));
	assert_int_equal(gh_content_parse(o, &ct, &err), -1);
	cJSON_Delete(o);

	o = J("[{\"type\":\"file\",\"size\":625,\"name\":\"octokit.rb\",\"path\":\"lib/"
	      "octokit.rb\","
	      "\"sha\":\"" SHA_A "\"},{\"type\":\"dir\",\"size\":0,\"name\":\"octokit\",\"path\":"
	      "\"lib/octokit\",\"sha\":\"" SHA_B "\"}]");
	assert_int_equal(gh_content_parse(o, &ct, &err), 0);
	assert_int_equal(ct.type, GH_CONTENT_DIR);
	assert_int_equal(ct.n_entries, 2);
	assert_string_equal(ct.entries[1].path, "lib/octokit");
	assert_int_equal(ct.entries[1].type, GH_CONTENT_DIR);
	gh_content_clear(&ct);
	cJSON_Delete(o);
	o = J("[{\"type\":\"file\",\"name\":\"a\",\"path\":\"a\"},{\"type\":\"weird\",\"name\":"
	      "\"b\","
	      "\"path\":\"b\"}]");
	assert_int_equal(gh_content_parse(o, &ct, &err), -1);
	assert_non_null(strstr(err.msg, "item 2"));
	cJSON_Delete(o);
}

static void test_repo_branch_events_merge(void **state)
{
	(void)state;
	struct ga_err err = {{0}};
	cJSON *o = J("{\"id\":1,\"name\":\"www-lil-intdev-x\",\"owner\":{\"login\":\"acme\"},"
	             "\"default_branch\":\"main\",\"is_template\":false,\"private\":false,"
	             "\"clone_url\":\"https://github.com/acme/www-lil-intdev-x.git\","
	             "\"permissions\":{\"admin\":false,\"push\":true},\"pushed_at\":null}");
	struct gh_repo_info ri;
	assert_int_equal(gh_repo_parse(o, &ri, &err), 0);
	assert_string_equal(ri.owner, "acme");
	assert_true(ri.can_push);
	assert_false(ri.can_admin);
	assert_int_equal(ri.pushed_ms, 0);
	cJSON_DeleteItemFromObject(o, "owner");
	assert_int_equal(gh_repo_parse(o, &ri, &err), -1);
	assert_non_null(strstr(err.msg, "owner"));
	cJSON_Delete(o);

	struct gh_branch_info b;
	o = J("{\"ref\":\"refs/heads/feature/x\",\"object\":{\"sha\":\"" SHA_A "\",\"type\":"
	      "\"commit\"}}");
	assert_int_equal(gh_branch_parse(o, &b, &err), 0);
	assert_string_equal(b.name, "feature/x");
	cJSON_Delete(o);
	o = J("{\"ref\":\"refs/tags/v1\",\"object\":{\"sha\":\"" SHA_A "\"}}");
	assert_int_equal(gh_branch_parse(o, &b, &err), -1);
	cJSON_Delete(o);
	o = J("{\"name\":\"main\",\"commit\":{\"sha\":\"" SHA_B "\"},\"protected\":false}");
	assert_int_equal(gh_branch_parse(o, &b, &err), 0);
	assert_string_equal(b.sha, SHA_B);
	cJSON_Delete(o);
	o = J("{\"name\":\"main\",\"commit\":{}}");
	assert_int_equal(gh_branch_parse(o, &b, &err), -1);
	cJSON_Delete(o);

	o = J("[{\"id\":1,\"event\":\"assigned\",\"actor\":{\"login\":\"ada\"},\"assignee\":"
	      "{\"login\":\"bob\"},\"created_at\":\"2026-11-28T10:00:00Z\"},{\"id\":2,\"event\":"
	      "\"labeled\",\"actor\":null,\"label\":{\"name\":\"plan\"}},{\"id\":3,\"event\":"
	      "\"merged\",\"commit_id\":\"" SHA_A "\"}]");
	struct gh_issue_event *ev;
	size_t n;
	assert_int_equal(gh_issue_events_parse(o, &ev, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(ev[0].subject, "bob");
	assert_true(ev[0].created_ms > 0);
	assert_string_equal(ev[1].subject, "plan");
	assert_string_equal(ev[1].actor, "");
	assert_string_equal(ev[2].commit_id, SHA_A);
	free(ev);
	cJSON_Delete(o);
	o = J("[{\"event\":\"assigned\"}]");
	assert_int_equal(gh_issue_events_parse(o, &ev, &n, &err), -1);
	assert_non_null(strstr(err.msg, "id"));
	cJSON_Delete(o);

	struct gh_merge_result m;
	o = J("{\"sha\":\"" SHA_A "\",\"merged\":true,\"message\":\"Pull Request successfully "
	      "merged\"}");
	assert_int_equal(gh_merge_parse(o, &m, &err), 0);
	assert_true(m.merged);
	assert_string_equal(m.sha, SHA_A);
	cJSON_Delete(o);
	o = J("{\"merged\":true}");
	assert_int_equal(gh_merge_parse(o, &m, &err), -1);
	cJSON_Delete(o);
	o = J("{\"merged\":\"yes\"}");
	assert_int_equal(gh_merge_parse(o, &m, &err), -1);
	assert_non_null(strstr(err.msg, "merged"));
	cJSON_Delete(o);

	struct gh_collaborator *cv;
	o = J("[{\"login\":\"ada\",\"permissions\":{\"push\":true,\"admin\":true}},{\"login\":"
	      "\"bob\"}]");
	assert_int_equal(gh_collaborators_parse(o, &cv, &n, &err), 0);
	assert_true(cv[0].admin);
	assert_false(cv[1].push);
	free(cv);
	cJSON_Delete(o);
}

static void test_branch_names(void **state)
{
	(void)state;
	const char *good[] = {"main", "task-1-add-a-page", "feature/x", "a.b", "UPPER_case-1"};
	const char *bad[] = {"",     "-x",   "/x",  "x/",   "a..b", "a b",    "a~b",      "a^b",
	                     "a:b",  "a?b",  "a*b", "a[b",  "a\\b", "x.lock", "x.lock/y", ".x",
	                     "a/.b", "a//b", "@",   "a@{b", "x.",   "a\tb"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		assert_true(gh_valid_branch(good[i]));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (gh_valid_branch(bad[i]))
			fail_msg("'%s' passed as a branch name", bad[i]);
	char big[300];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_false(gh_valid_branch(big));
	big[GH_REF_MAX] = '\0';
	assert_true(gh_valid_branch(big));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pull),
	        cmocka_unit_test(test_files_reviews_comments),
	        cmocka_unit_test(test_contents),
	        cmocka_unit_test(test_repo_branch_events_merge),
	        cmocka_unit_test(test_branch_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
