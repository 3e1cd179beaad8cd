/*
 * workkey — the two claim keys of one piece of work, the same whichever
 * agent computes them: the promise form (repo#what, 50 UTF-16 units, as a
 * TypeScript agent's .slice(0, 50) cuts) and the work form (the bare
 * title); from a commitment's parts and from a ledger entry's params alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "modules/commitments/workkey.h"

static void test_forms(void **state)
{
	(void)state;
	struct commit_work w;
	commit_work_of("create_issue", "acme/widgets", "Follow-up from the room", NULL, NULL, &w);
	assert_string_equal(w.promise_target, "acme/widgets#Follow-up from the room");
	assert_string_equal(w.work_target, "Follow-up from the room");
	char key[COMMIT_WORK_KEY_MAX];
	commit_work_key(&w, true, key, sizeof key);
	assert_string_equal(key, "create_issue:acme/widgets#Follow-up from the room");
	commit_work_key(&w, false, key, sizeof key);
	assert_string_equal(key, "create_issue:Follow-up from the room");
	assert_true(commit_work_is(&w, "create_issue", "Follow-up from the room"));
	assert_true(commit_work_is(&w, "create_issue", "acme/widgets#Follow-up from the room"));
	assert_false(commit_work_is(&w, "create_plan", "Follow-up from the room"));
	assert_false(commit_work_is(&w, "create_issue", "Follow-up"));
}

static void test_no_repo_no_title(void **state)
{
	(void)state;
	struct commit_work w;
	commit_work_of("create_issue", NULL, "", "Login times out", NULL, &w);
	assert_string_equal(w.promise_target, "unknown#Login times out");
	assert_string_equal(w.work_target, "Login times out");
	commit_work_of("post_bluesky", NULL, NULL, NULL, NULL, &w);
	assert_string_equal(w.promise_target, "unknown#");
	assert_false(w.has_work);
}

/* 50 UTF-16 units: an emoji counts two, and is never split. */
static void test_utf16_cut(void **state)
{
	(void)state;
	char title[256] = "";
	for (int i = 0; i < 49; i++)
		strcat(title, "a");
	strcat(title, "\xF0\x9F\x98\x80 tail"); /* U+1F600: two units at 49..50 */
	struct commit_work w;
	commit_work_of("create_issue", "o/r", title, NULL, NULL, &w);
	char want[128] = "o/r#";
	for (int i = 0; i < 49; i++)
		strcat(want, "a");
	assert_string_equal(w.promise_target, want);
	assert_string_equal(w.work_target, title);
	/* exactly 50 ASCII characters stay whole */
	char fifty[64];
	memset(fifty, 'b', 50);
	fifty[50] = '\0';
	commit_work_of("create_issue", "o/r", fifty, NULL, NULL, &w);
	assert_int_equal(strlen(w.promise_target), 4 + 50);
}

static void test_from_params(void **state)
{
	(void)state;
	cJSON *p = cJSON_Parse("{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Flaky test\","
	                       "\"body\":\"It flakes.\"}");
	struct commit_work w;
	commit_work_of_params("create_issue", p, &w);
	assert_string_equal(w.promise_target, "acme/widgets#Flaky test");
	assert_string_equal(w.work_target, "Flaky test");
	cJSON_Delete(p);
	/* a plan names its goal when it has no title; a post its text */
	p = cJSON_Parse("{\"repo\":\"acme/widgets\",\"goal\":\"Ship dark mode\"}");
	commit_work_of_params("create_plan", p, &w);
	assert_string_equal(w.promise_target, "acme/widgets#Ship dark mode");
	cJSON_Delete(p);
	p = cJSON_Parse("{\"text\":\"We shipped it.\"}");
	commit_work_of_params("post_bluesky", p, &w);
	assert_string_equal(w.work_target, "We shipped it.");
	cJSON_Delete(p);
}

/* create_workspace: one key per organisation, whatever the name. */
static void test_workspace(void **state)
{
	(void)state;
	struct commit_work a, b, d;
	commit_work_of_workspace("Acme", &a);
	cJSON *p = cJSON_Parse("{\"owner\":\"acme\",\"title\":\"another name\"}");
	commit_work_of_params("create_workspace", p, &b);
	cJSON_Delete(p);
	char ka[COMMIT_WORK_KEY_MAX], kb[COMMIT_WORK_KEY_MAX];
	commit_work_key(&a, true, ka, sizeof ka);
	commit_work_key(&b, true, kb, sizeof kb);
	assert_string_equal(ka, "create_workspace:acme");
	assert_string_equal(ka, kb);
	assert_false(a.has_work);
	assert_true(commit_work_is(&b, "create_workspace", "acme"));
	commit_work_of_workspace(NULL, &d);
	assert_string_equal(d.promise_target, COMMIT_WORKSPACE_DEFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_forms),     cmocka_unit_test(test_no_repo_no_title),
	        cmocka_unit_test(test_utf16_cut), cmocka_unit_test(test_from_params),
	        cmocka_unit_test(test_workspace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
