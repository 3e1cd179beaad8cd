/*
 * commitment: §8.3 alias map and merge rule, the commitment schema, the
 * social-only filter, the §8.2 decision parse and its text fallback, the
 * §8.4 extraction parse — the §15.2 / §15.4 vectors as tables, with the
 * deliberate departures of commitment.h marked "fixed".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json.h"
#include "modules/participation/decision.h"

static cJSON *J(const char *s)
{
	struct ga_err err = {{0}};
	cJSON *j = json_parse(s, strlen(s), &err);
	if (!j)
		fail_msg("bad test JSON %s: %s", s, err.msg);
	return j;
}

static char *normalized(const char *in)
{
	cJSON *j = J(in);
	cJSON *n = cmt_normalize(j);
	char *s = n ? cJSON_PrintUnformatted(n) : strdup("NULL");
	cJSON_Delete(n);
	cJSON_Delete(j);
	return s;
}

static const struct {
	const char *in, *out;
} norm_cases[] = {
        /* every alias alone (§8.3 step 1, the 14 entries) */
        {"{\"action\":\"create_issue\"}", "{\"type\":\"create_issue\"}"},
        {"{\"commitmentType\":\"create_plan\"}", "{\"type\":\"create_plan\"}"},
        {"{\"kind\":\"post_bluesky\"}", "{\"type\":\"post_bluesky\"}"},
        {"{\"repository\":\"o/r\"}", "{\"repo\":\"o/r\"}"},
        {"{\"name\":\"t\"}", "{\"title\":\"t\"}"},
        {"{\"subject\":\"t\"}", "{\"title\":\"t\"}"},
        {"{\"body\":\"b\"}", "{\"description\":\"b\"}"},
        {"{\"details\":\"b\"}", "{\"description\":\"b\"}"},
        {"{\"text\":\"c\"}", "{\"content\":\"c\"}"},
        {"{\"message\":\"c\"}", "{\"content\":\"c\"}"},
        {"{\"post\":\"c\"}", "{\"content\":\"c\"}"},
        {"{\"issueNumber\":4}", "{\"issue_number\":4}"},
        {"{\"issue\":42}", "{\"issue_number\":42}"},
        {"{\"number\":7}", "{\"issue_number\":7}"},
        /* case-sensitive keys: not aliases */
        {"{\"Action\":\"x\",\"TITLE\":\"y\"}", "{\"Action\":\"x\",\"TITLE\":\"y\"}"},
        /* canonical first keeps its value */
        {"{\"type\":\"create_issue\",\"action\":\"post_bluesky\",\"title\":\"a\",\"name\":\"b\"}",
         "{\"type\":\"create_issue\",\"title\":\"a\"}"},
        /* alias overwrites a canonical "" or null */
        {"{\"title\":\"\",\"name\":\"n\"}", "{\"title\":\"n\"}"},
        {"{\"title\":null,\"subject\":\"s\"}", "{\"title\":\"s\"}"},
        /* first non-empty wins in key order, even over a later canonical */
        {"{\"action\":\"create_issue\",\"type\":\"post_bluesky\",\"title\":\"t\"}",
         "{\"type\":\"create_issue\",\"title\":\"t\"}"},
        {"{\"text\":\"from text\",\"message\":\"m\",\"post\":\"p\"}",
         "{\"content\":\"from text\"}"},
        {"{\"type\":null,\"action\":\"\"}", "{\"type\":\"\"}"},
        /* unknown keys pass through */
        {"{\"customField\":\"x\",\"anotherKey\":42}", "{\"customField\":\"x\",\"anotherKey\":42}"},
        {"{}", "{}"},
        {"[1]", "NULL"},
};

static void test_normalize(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof norm_cases / sizeof norm_cases[0]; i++) {
		char *s = normalized(norm_cases[i].in);
		if (strcmp(s, norm_cases[i].out) != 0)
			fail_msg("normalize %s: got %s want %s", norm_cases[i].in, s,
			         norm_cases[i].out);
		free(s);
	}
}

/* One commitment: valid (and the fields it reads as) or dropped with a
 * reason containing `why`. */
static const struct {
	const char *item;
	bool social_only;
	bool valid;
	const char *why_or_title; /* valid: expected title ("" = none) */
	const char *repo;         /* valid: expected repo (NULL none) */
	int64_t issue;
} items[] = {
        {"{\"type\":\"create_issue\",\"title\":\"T\"}", false, true, "T", NULL, 0},
        {"{\"type\":\"create_plan\",\"description\":\"D\"}", false, true, "", NULL, 0},
        {"{\"type\":\"post_bluesky\",\"content\":\"C\"}", false, true, "", NULL, 0},
        {"{\"type\":\"comment_issue\",\"title\":\"T\",\"repo\":\"o/r\",\"issue_number\":12,"
         "\"extra\":1}",
         false, true, "T", "o/r", 12},
        {"{\"action\":\"create_issue\",\"name\":\"N\"}", false, true, "N", NULL, 0},
        {"{\"type\":\"comment_issue\",\"issue\":42,\"body\":\"b\"}", false, true, "", NULL, 42},
        {"{\"title\":\"T\"}", false, false, "type: required", NULL, 0},
        {"{\"type\":\"send_email\",\"title\":\"T\"}", false, false, "not one of", NULL, 0},
        {"{\"type\":\"Create_Issue\",\"title\":\"T\"}", false, false, "not one of", NULL, 0},
        {"{\"type\":\"create_issue\"}", false, false, "At least one content field", NULL, 0},
        {"{\"type\":\"create_issue\",\"repo\":\"o/r\"}", false, false, "At least one content", NULL,
         0},
        {"{\"type\":\"create_issue\",\"title\":\"\",\"content\":\"\"}", false, false,
         ": At least one content field (title, description, or content) required", NULL, 0},
        {"{\"type\":\"create_issue\",\"title\":\"  \\n \"}", false, false, "At least one", NULL, 0},
        {"{\"type\":\"create_issue\",\"title\":5}", false, false, "title must be a string", NULL,
         0},
        /* fixed: null is absent, not a reason to drop (§8.3 🐞) */
        {"{\"type\":\"create_issue\",\"title\":\"T\",\"repo\":null}", false, true, "T", NULL, 0},
        /* fixed: issue numbers as the model writes them; 3.5 and 0 are not issues */
        {"{\"type\":\"comment_issue\",\"title\":\"T\",\"issue_number\":\"42\"}", false, true, "T",
         NULL, 42},
        {"{\"type\":\"comment_issue\",\"title\":\"T\",\"issue_number\":\"#7\"}", false, true, "T",
         NULL, 7},
        {"{\"type\":\"comment_issue\",\"title\":\"T\",\"issue_number\":3.5}", false, false,
         "positive whole number", NULL, 0},
        {"{\"type\":\"comment_issue\",\"title\":\"T\",\"issue_number\":0}", false, false,
         "positive whole number", NULL, 0},
        {"{\"type\":\"comment_issue\",\"title\":\"T\",\"issue_number\":\"4x\"}", false, false,
         "positive whole number", NULL, 0},
        /* fixed: repo URLs cleaned (§16.9); junk refused with the value */
        {"{\"type\":\"create_issue\",\"title\":\"T\",\"repo\":\"https://github.com/o/r.git/\"}",
         false, true, "T", "o/r", 0},
        {"{\"type\":\"create_issue\",\"title\":\"T\",\"repo\":\"github.com/o-1/r.x\"}", false, true,
         "T", "o-1/r.x", 0},
        {"{\"type\":\"create_issue\",\"title\":\"T\",\"repo\":\"the main repo\"}", false, false,
         "\"the main repo\" is not owner/name", NULL, 0},
        {"{\"type\":\"create_issue\",\"title\":\"T\",\"repo\":\"a/b/c\"}", false, false,
         "not owner/name", NULL, 0},
        /* social-only (§8.3 step 4) */
        {"{\"type\":\"create_issue\",\"title\":\"T\"}", true, false, "Social-only", NULL, 0},
        {"{\"type\":\"create_plan\",\"title\":\"T\"}", true, false, "create_plan", NULL, 0},
        {"{\"type\":\"comment_issue\",\"title\":\"T\"}", true, false, "comment_issue", NULL, 0},
        {"{\"type\":\"post_bluesky\",\"content\":\"hi\"}", true, true, "", NULL, 0},
};

static void test_items(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
		char arr[1024];
		snprintf(arr, sizeof arr, "[%s]", items[i].item);
		cJSON *j = J(arr);
		struct cmt_list c = {0};
		cmt_validate(j, items[i].social_only, &c);
		if (items[i].valid) {
			if (c.n != 1)
				fail_msg("item %zu %s: dropped: %s", i, items[i].item,
				         c.ndropped ? c.dropped[0].reason : "?");
			const struct cmt_item *x = &c.item[0];
			assert_string_equal(x->title ? x->title : "", items[i].why_or_title);
			if (items[i].repo)
				assert_string_equal(x->repo, items[i].repo);
			else
				assert_null(x->repo);
			assert_int_equal(x->issue_number, items[i].issue);
		} else {
			if (c.n != 0 || c.ndropped != 1)
				fail_msg("item %zu %s: expected a drop", i, items[i].item);
			if (!strstr(c.dropped[0].reason, items[i].why_or_title))
				fail_msg("item %zu: reason \"%s\" lacks \"%s\"", i,
				         c.dropped[0].reason, items[i].why_or_title);
			assert_true(c.dropped[0].raw[0] == '{');
		}
		cmt_list_clear(&c);
		cJSON_Delete(j);
	}
}

static void test_batches(void **state)
{
	(void)state;
	/* [valid, bad type, no content] → 1 valid, 2 dropped, order kept */
	cJSON *j =
	        J("[{\"type\":\"create_issue\",\"title\":\"a\"},{\"type\":\"x\",\"title\":\"b\"},"
	          "{\"type\":\"create_plan\"},[1],null]");
	struct cmt_list c = {0};
	cmt_validate(j, false, &c);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.ndropped, 4); /* fixed: [1] and null are dropped, not fatal */
	assert_string_equal(c.dropped[2].raw, "[1]");
	assert_string_equal(c.dropped[3].reason, "a commitment must be an object");
	cmt_list_clear(&c);
	cJSON_Delete(j);
	/* mixed batch under social-only: only post_bluesky survives */
	j = J("[{\"type\":\"create_issue\",\"title\":\"a\"},{\"type\":\"post_bluesky\","
	      "\"content\":\"b\"},{\"type\":\"comment_issue\",\"title\":\"c\"}]");
	cmt_validate(j, true, &c);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.item[0].type, CMT_POST_BLUESKY);
	assert_int_equal(c.ndropped, 2);
	cmt_list_clear(&c);
	cJSON_Delete(j);
	/* bound: CMT_MAX valid, the rest dropped, drops counted */
	char big[4096] = "[";
	for (int i = 0; i < CMT_MAX + 12; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big),
		         "%s{\"type\":\"create_issue\",\"title\":\"t%d\"}", i ? "," : "", i);
	strcat(big, "]");
	j = J(big);
	cmt_validate(j, false, &c);
	assert_int_equal(c.n, CMT_MAX);
	assert_int_equal(c.ndropped, CMT_MAX);
	assert_int_equal(c.ndropped_total, 12);
	assert_non_null(strstr(c.dropped[0].reason, "more than 8"));
	cmt_list_clear(&c);
	cmt_list_clear(&c); /* twice is fine */
	cJSON_Delete(j);
	/* the type names */
	assert_int_equal(cmt_type_parse("post_bluesky"), CMT_POST_BLUESKY);
	assert_int_equal(cmt_type_parse("email"), -1);
	assert_string_equal(cmt_type_name(CMT_CREATE_PLAN), "create_plan");
}

static const struct {
	const char *json;
	int rc;
	const char *err_or_reason;
	bool speak;
	size_t ncommit;
} decisions[] = {
        {"{\"shouldSpeak\":true}", 0, "", true, 0},
        {"{\"shouldSpeak\":false}", 0, "", false, 0},
        {"{\"shouldSpeak\":true,\"reason\":\"r\",\"message\":\"m\",\"commitments\":[{\"type\":"
         "\"create_issue\",\"title\":\"t\"}],\"adjustBehavior\":{\"cooldown\":30},\"zzz\":1}",
         0, "r", true, 1},
        {"{\"reason\":\"r\"}", -1, "shouldSpeak: required", false, 0},
        {"{\"shouldSpeak\":\"yes\"}", -1, "must be a boolean", false, 0},
        {"\"hello\"", -1, "must be a JSON object", false, 0},
        {"null", -1, "must be a JSON object", false, 0},
        {"42", -1, "must be a JSON object", false, 0},
        {"[]", -1, "must be a JSON object", false, 0},
        {"{\"shouldSpeak\":true,\"message\":5}", -1, "message must be a string", false, 0},
        {"{\"shouldSpeak\":true,\"reason\":[]}", -1, "reason must be a string", false, 0},
        {"{\"shouldSpeak\":true,\"commitments\":{}}", -1, "commitments: must be an array", false,
         0},
        /* fixed: null optional fields are absent (§8.2 🐞) */
        {"{\"shouldSpeak\":true,\"message\":null,\"reason\":null,\"commitments\":null}", 0, "",
         true, 0},
        {"{\"shouldSpeak\":false,\"commitments\":[[1]]}", 0, "", false, 0},
        {"{\"shouldSpeak\":true,\"commitments\":[],\"adjustBehavior\":{\"cooldownMinMs\":\"x\"}}",
         0, "", true, 0},
};

static void test_decision(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof decisions / sizeof decisions[0]; i++) {
		cJSON *j = J(decisions[i].json);
		struct part_decision d = {0};
		struct ga_err err = {{0}};
		int rc = part_decision_from_json(j, false, &d, &err);
		if (rc != decisions[i].rc)
			fail_msg("decision %zu %s: rc %d (%s)", i, decisions[i].json, rc, err.msg);
		if (rc == 0) {
			assert_string_equal(d.reason, decisions[i].err_or_reason);
			assert_int_equal(d.should_speak, decisions[i].speak);
			assert_int_equal(d.commitments.n, decisions[i].ncommit);
			assert_false(d.from_text);
		} else if (!strstr(err.msg, decisions[i].err_or_reason)) {
			fail_msg("decision %zu: error \"%s\" lacks \"%s\"", i, err.msg,
			         decisions[i].err_or_reason);
		}
		part_decision_clear(&d);
		cJSON_Delete(j);
	}
	/* the full decision keeps its parts */
	cJSON *j = J(decisions[2].json);
	struct part_decision d = {0};
	assert_int_equal(part_decision_from_json(j, false, &d, NULL), 0);
	assert_string_equal(d.message, "m");
	assert_non_null(d.adjust);
	assert_int_equal(cJSON_GetObjectItem(d.adjust, "cooldown")->valueint, 30);
	assert_null(cJSON_GetObjectItem(d.adjust, "zzz"));
	part_decision_clear(&d);
	cJSON_Delete(j);
	/* a 5000-character message is fine; one past the bound is refused */
	size_t n = PART_MESSAGE_MAX_BYTES + 1;
	char *big = malloc(n + 64);
	strcpy(big, "{\"shouldSpeak\":true,\"message\":\"");
	size_t at = strlen(big);
	memset(big + at, 'a', 5000);
	strcpy(big + at + 5000, "\"}");
	j = J(big);
	assert_int_equal(part_decision_from_json(j, false, &d, NULL), 0);
	assert_int_equal(strlen(d.message), 5000);
	part_decision_clear(&d);
	cJSON_Delete(j);
	memset(big + at, 'a', n);
	strcpy(big + at + n, "\"}");
	j = J(big);
	struct ga_err err = {{0}};
	assert_int_equal(part_decision_from_json(j, false, &d, &err), -1);
	assert_non_null(strstr(err.msg, "more than"));
	cJSON_Delete(j);
	free(big);
	/* invalid UTF-8 in the message (json_parse refuses it, cJSON built
	 * by hand or by another parser may not) */
	j = J("{\"shouldSpeak\":true}");
	cJSON_AddStringToObject(j, "message", "a\xff");
	assert_int_equal(part_decision_from_json(j, false, &d, &err), -1);
	assert_non_null(strstr(err.msg, "UTF-8"));
	cJSON_Delete(j);
	j = J("[{\"type\":\"create_issue\"}]");
	cJSON_AddStringToObject(cJSON_GetArrayItem(j, 0), "title", "\xc3(");
	struct cmt_list c = {0};
	cmt_validate(j, false, &c);
	assert_int_equal(c.n, 0);
	assert_non_null(strstr(c.dropped[0].reason, "title is not valid UTF-8"));
	cJSON_Delete(j);
	/* social-only drops GitHub commitments inside the decision */
	j = J("{\"shouldSpeak\":true,\"message\":\"m\",\"commitments\":[{\"type\":\"create_issue\","
	      "\"title\":\"t\"}]}");
	assert_int_equal(part_decision_from_json(j, true, &d, NULL), 0);
	assert_int_equal(d.commitments.n, 0);
	assert_int_equal(d.commitments.ndropped, 1);
	part_decision_clear(&d);
	cJSON_Delete(j);
}

static const struct {
	const char *text;
	int rc;
	const char *msg;
} texts[] = {
        {"Sure! {\"shouldSpeak\": false, \"reason\": \"quiet\"} thanks", 0, "quiet"},
        {"```json\n{\"shouldSpeak\":true,\"message\":\"hi\",\"reason\":\"x\"}\n```", 0, "x"},
        {"{\"shouldSpeak\":true,\"reason\":\"{nested}\"}", 0, "{nested}"},
        {"I would rather not say anything.", -1, "no decision object"},
        {"{broken", -1, "no decision object"},
        {"{\"a\":1} and then {\"b\":2}", -1, "not JSON"},
        {"{\"reason\":\"no speak\"}", -1, "shouldSpeak: required"},
        {"", -1, "no decision object"},
};

static void test_text_fallback(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		struct part_decision d = {0};
		struct ga_err err = {{0}};
		int rc = part_decision_from_text(texts[i].text, strlen(texts[i].text), false, &d,
		                                 &err);
		if (rc != texts[i].rc)
			fail_msg("text %zu: rc %d (%s)", i, rc, err.msg);
		if (rc == 0) {
			assert_true(d.from_text);
			assert_string_equal(d.reason, texts[i].msg);
		} else if (!strstr(err.msg, texts[i].msg)) {
			fail_msg("text %zu: error \"%s\" lacks \"%s\"", i, err.msg, texts[i].msg);
		}
		part_decision_clear(&d);
	}
	struct part_decision d = {0};
	assert_int_equal(part_decision_from_text(NULL, 0, false, &d, NULL), -1);
}

static void test_extract(void **state)
{
	(void)state;
	struct cmt_list c = {0};
	struct ga_err err = {{0}};
	const char *reply =
	        "```json\n[{\"description\":\"Open an issue about "
	        "caching\",\"type\":\"create_issue\","
	        "\"params\":{\"title\":\"Caching\",\"repo\":\"o/r\"},\"confidence\":\"high\"},"
	        "{\"description\":\"Post about it\",\"type\":\"post_bluesky\",\"confidence\":"
	        "\"medium\"},"
	        "{\"description\":\"maybe later\",\"type\":\"create_plan\",\"confidence\":\"low\"},"
	        "{\"description\":\"email\",\"type\":\"send_email\",\"confidence\":\"high\"},"
	        "{\"type\":\"create_issue\",\"confidence\":\"high\"},"
	        "{\"description\":\"x\",\"type\":\"create_issue\",\"confidence\":\"sure\"}]\n```";
	assert_int_equal(cmt_extract_parse(reply, strlen(reply), false, &c, &err), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.item[0].type, CMT_CREATE_ISSUE);
	assert_string_equal(c.item[0].title, "Caching");
	assert_string_equal(c.item[0].repo, "o/r");
	assert_string_equal(c.item[0].description, "Open an issue about caching");
	assert_int_equal(c.item[1].type, CMT_POST_BLUESKY);
	assert_string_equal(c.item[1].content, "Post about it");
	/* fixed (§16.6): the schema applies to extracted items too */
	assert_int_equal(c.ndropped, 3);
	assert_non_null(strstr(c.dropped[0].reason, "not one of"));
	assert_non_null(strstr(c.dropped[1].reason, "description"));
	assert_non_null(strstr(c.dropped[2].reason, "confidence"));
	cmt_list_clear(&c);
	/* social-only */
	assert_int_equal(cmt_extract_parse(reply, strlen(reply), true, &c, &err), 0);
	assert_int_equal(c.n, 1);
	cmt_list_clear(&c);
	/* empty, not an array, not JSON */
	assert_int_equal(cmt_extract_parse("[]", 2, false, &c, &err), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(cmt_extract_parse("{\"a\":1}", 7, false, &c, &err), -1);
	assert_non_null(strstr(err.msg, "array"));
	assert_int_equal(cmt_extract_parse("None found.", 11, false, &c, &err), -1);
	assert_non_null(strstr(err.msg, "not JSON"));
	assert_int_equal(cmt_extract_parse("```\n[]\n```", 10, false, &c, &err), 0);
}

/* create_workspace: the organisation (org, its aliases, the owner of
 * repo), no content field needed, a bad organisation name refused, the
 * social-only filter, the extraction's params.org / params.name. */
static void test_workspace(void **state)
{
	(void)state;
	assert_int_equal(cmt_type_parse("create_workspace"), CMT_CREATE_WORKSPACE);
	assert_string_equal(cmt_type_name(CMT_CREATE_WORKSPACE), "create_workspace");
	cJSON *arr = J("[{\"type\":\"create_workspace\",\"org\":\"acme\",\"name\":\"site\"},"
	               "{\"type\":\"create_workspace\"},"
	               "{\"kind\":\"create_workspace\",\"owner\":\"Acme-Labs\"},"
	               "{\"type\":\"create_workspace\",\"repo\":\"https://github.com/beta/x\"},"
	               "{\"type\":\"create_workspace\",\"organization\":\"gamma\","
	               "\"repo\":\"beta/x\"},"
	               "{\"type\":\"create_workspace\",\"org\":\"bad org\"},"
	               "{\"type\":\"create_workspace\",\"org\":\"-acme\"},"
	               "{\"type\":\"create_workspace\",\"org\":7}]");
	struct cmt_list c = {0};
	cmt_validate(arr, false, &c);
	assert_int_equal(c.n, 5);
	assert_string_equal(c.item[0].org, "acme");
	assert_string_equal(c.item[0].title, "site");
	assert_null(c.item[1].org); /* the agent's default organisation */
	assert_null(c.item[1].title);
	assert_string_equal(c.item[2].org, "Acme-Labs");
	assert_string_equal(c.item[3].org, "beta");
	assert_string_equal(c.item[4].org, "gamma"); /* org wins over repo */
	assert_int_equal(c.ndropped, 3);
	assert_non_null(strstr(c.dropped[0].reason, "\"bad org\" is not a GitHub organisation"));
	assert_non_null(strstr(c.dropped[1].reason, "is not a GitHub organisation"));
	assert_non_null(strstr(c.dropped[2].reason, "org must be a string"));
	cmt_list_clear(&c);
	/* social-only: GitHub work */
	cmt_validate(arr, true, &c);
	assert_int_equal(c.n, 0);
	assert_non_null(strstr(c.dropped[0].reason, "Social-only"));
	cmt_list_clear(&c);
	cJSON_Delete(arr);
	/* an unknown type names the five */
	arr = J("[{\"type\":\"create_repo\",\"title\":\"x\"}]");
	cmt_validate(arr, false, &c);
	assert_non_null(strstr(c.dropped[0].reason, "create_workspace"));
	cmt_list_clear(&c);
	cJSON_Delete(arr);
	/* §8.4 extraction */
	const char *reply =
	        "[{\"description\":\"set up the acme workspace\",\"type\":\"create_workspace\","
	        "\"params\":{\"owner\":\"acme\",\"name\":\"site\"},\"confidence\":\"high\"}]";
	struct ga_err err = {{0}};
	assert_int_equal(cmt_extract_parse(reply, strlen(reply), false, &c, &err), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.item[0].type, CMT_CREATE_WORKSPACE);
	assert_string_equal(c.item[0].org, "acme");
	assert_string_equal(c.item[0].title, "site");
	cmt_list_clear(&c);
	assert_non_null(strstr(cmt_extract_system(), "create_workspace"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_normalize),     cmocka_unit_test(test_items),
	        cmocka_unit_test(test_batches),       cmocka_unit_test(test_decision),
	        cmocka_unit_test(test_text_fallback), cmocka_unit_test(test_extract),
	        cmocka_unit_test(test_workspace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
