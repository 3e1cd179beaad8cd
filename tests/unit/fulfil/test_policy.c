/*
 * The fulfilment policy (modules/fulfil/policy.h), pure: tables of
 * transitions on an injected clock (stale, in-progress timeout, the
 * 3-attempt rule), repo cooldowns, what each commitment type sends where,
 * and how outbound's final decision is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/fulfil/policy.h"

#define MIN  ((int64_t)60 * 1000)
#define HOUR (60 * MIN)
#define DAY  (24 * HOUR)
#define T0   ((int64_t)1795428000000)

static struct ledger_entry entry(const char *action, const char *source, cJSON *params,
                                 enum ledger_status st, int64_t created, int64_t updated,
                                 int attempts)
{
	struct ledger_entry e = {.id = "commitment-1-0123456789abcdef",
	                         .action = action,
	                         .source = source,
	                         .params = params,
	                         .status = st,
	                         .created_ms = created,
	                         .updated_ms = updated,
	                         .attempts = attempts};
	return e;
}

static void test_sweep_table(void **state)
{
	(void)state;
	struct {
		enum ledger_status st;
		int64_t age_created, age_updated;
		bool active;
		enum fulfil_sweep want;
		const char *reason_has;
	} rows[] = {
	        {LEDGER_PENDING, 1 * HOUR, 1 * HOUR, false, FULFIL_SWEEP_NONE, NULL},
	        {LEDGER_PENDING, 25 * HOUR, 25 * HOUR, false, FULFIL_SWEEP_STALE,
	         "Stale: exceeded 24h"},
	        {LEDGER_FAILED, 25 * HOUR, 1 * MIN, false, FULFIL_SWEEP_STALE, "Stale"},
	        {LEDGER_IN_PROGRESS, 25 * HOUR, 1 * MIN, true, FULFIL_SWEEP_STALE, "Stale"},
	        {LEDGER_IN_PROGRESS, 1 * HOUR, 15 * MIN, false, FULFIL_SWEEP_TIMEOUT, "Timed out"},
	        {LEDGER_IN_PROGRESS, 1 * HOUR, 9 * MIN, false, FULFIL_SWEEP_NONE, NULL},
	        /* ours: the watchdog times it out, not the sweep */
	        {LEDGER_IN_PROGRESS, 1 * HOUR, 15 * MIN, true, FULFIL_SWEEP_NONE, NULL},
	        {LEDGER_FAILED, 1 * HOUR, 15 * MIN, false, FULFIL_SWEEP_NONE, NULL},
	        {LEDGER_COMPLETED, 30 * HOUR, 30 * HOUR, false, FULFIL_SWEEP_NONE, NULL},
	        {LEDGER_ABANDONED, 30 * HOUR, 30 * HOUR, false, FULFIL_SWEEP_NONE, NULL},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int64_t now = T0 + 30 * DAY;
		struct ledger_entry e =
		        entry("create_issue", "owner", NULL, rows[i].st, now - rows[i].age_created,
		              now - rows[i].age_updated, 0);
		struct decision d = {0};
		enum fulfil_sweep got =
		        fulfil_sweep_of(&e, now, rows[i].active, FULFIL_IN_PROGRESS_TIMEOUT_MS, &d);
		if (got != rows[i].want)
			fail_msg("row %zu: sweep %d, want %d", i, got, rows[i].want);
		if (rows[i].reason_has && !strstr(d.reason, rows[i].reason_has))
			fail_msg("row %zu: reason '%s' lacks '%s'", i, d.reason,
			         rows[i].reason_has);
	}
}

static void test_attempts_and_work(void **state)
{
	(void)state;
	assert_int_equal(fulfil_after_failure(1), LEDGER_FAILED);
	assert_int_equal(fulfil_after_failure(2), LEDGER_FAILED);
	assert_int_equal(fulfil_after_failure(3), LEDGER_ABANDONED);
	assert_int_equal(fulfil_after_failure(4), LEDGER_ABANDONED);
	struct {
		enum ledger_status st;
		int attempts;
		bool active;
		bool want;
	} rows[] = {
	        {LEDGER_PENDING, 0, false, true},     {LEDGER_FAILED, 1, false, true},
	        {LEDGER_FAILED, 2, false, true},      {LEDGER_FAILED, 3, false, false},
	        {LEDGER_IN_PROGRESS, 0, false, true}, /* a crash left it: resumed */
	        {LEDGER_IN_PROGRESS, 0, true, false}, {LEDGER_COMPLETED, 1, false, false},
	        {LEDGER_ABANDONED, 3, false, false},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ledger_entry e =
		        entry("create_issue", "owner", NULL, rows[i].st, T0, T0, rows[i].attempts);
		if (fulfil_is_work(&e, rows[i].active) != rows[i].want)
			fail_msg("row %zu: is_work != %d", i, rows[i].want);
	}
}

static void test_cooldown(void **state)
{
	(void)state;
	int64_t now = T0 + 10 * DAY;
	struct fulfil_fact f[16];
	size_t n = 0;
	/* five failures of create_issue in acme/widgets, the last 1 h ago */
	for (int i = 0; i < 5; i++)
		f[n++] = (struct fulfil_fact){FULFIL_CREATE_ISSUE,
		                              i % 2 ? "Acme/Widgets" : "acme/widgets",
		                              i == 4 ? LEDGER_ABANDONED : LEDGER_FAILED,
		                              now - 2 * DAY, now - (5 - i) * HOUR};
	/* four in acme/other: not enough */
	for (int i = 0; i < 4; i++)
		f[n++] = (struct fulfil_fact){FULFIL_CREATE_ISSUE, "acme/other", LEDGER_FAILED,
		                              now - DAY, now - HOUR};
	/* five in acme/old, but created 8 days ago: outside the window */
	for (int i = 0; i < 5; i++)
		f[n++] = (struct fulfil_fact){FULFIL_COMMENT_ISSUE, "acme/old", LEDGER_FAILED,
		                              now - 8 * DAY, now - HOUR};
	/* completed ones and Bluesky ones never count */
	f[n++] = (struct fulfil_fact){FULFIL_CREATE_ISSUE, "acme/other", LEDGER_COMPLETED,
	                              now - DAY, now - HOUR};
	f[n++] = (struct fulfil_fact){FULFIL_POST_BLUESKY, NULL, LEDGER_FAILED, now - DAY, now};
	struct fulfil_cooldown cd[FULFIL_COOLDOWN_MAX];
	size_t k = fulfil_cooldowns(f, n, now, cd, FULFIL_COOLDOWN_MAX);
	assert_int_equal(k, 1);
	assert_string_equal(cd[0].repo, "acme/widgets");
	assert_int_equal(cd[0].failures, 5);
	/* 48 h after the latest failure (1 h ago) */
	assert_int_equal(cd[0].until_ms, now - HOUR + FULFIL_COOLDOWN_MS);
	assert_non_null(fulfil_cooled(cd, k, "ACME/widgets"));
	assert_null(fulfil_cooled(cd, k, "acme/other"));
	/* 47 h later it is still on; 48 h later it is over, with no file and no restart */
	assert_int_equal(fulfil_cooldowns(f, n, now + 46 * HOUR, cd, FULFIL_COOLDOWN_MAX), 1);
	assert_int_equal(fulfil_cooldowns(f, n, now + 48 * HOUR, cd, FULFIL_COOLDOWN_MAX), 0);
	/* the output bound holds */
	assert_int_equal(fulfil_cooldowns(f, n, now, cd, 0), 0);
}

static cJSON *params(const char *json)
{
	cJSON *p = cJSON_Parse(json);
	assert_non_null(p);
	return p;
}

static void test_prepare_create_issue(void **state)
{
	(void)state;
	cJSON *p = params("{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Flaky test\","
	                  "\"body\":\"The CI fails one run in ten.\"}");
	struct ledger_entry e = entry("create_issue", "space", p, LEDGER_PENDING, T0, T0, 0);
	struct fulfil_plan pl;
	struct decision d;
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_int_equal(pl.platform, CONV_PLATFORM_GITHUB);
	assert_string_equal(pl.target, "github:acme:widgets:new-issue");
	assert_string_equal(pl.repo, "acme/widgets");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(pl.extra, "title")),
	                    "Flaky test");
	const cJSON *labels = cJSON_GetObjectItem(pl.extra, "labels");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(labels, 0)), "memo");
	assert_non_null(strstr(pl.text, "The CI fails one run in ten."));
	assert_non_null(strstr(pl.text, "agent-space conversation"));
	/* the key marker is outbound's and the port's business, never here */
	assert_null(strstr(pl.text, "ga:key"));
	/* no signature: the agent's name is nowhere */
	fulfil_plan_free(&pl);
	cJSON_Delete(p);

	/* "owner/repo" in repo; labels given */
	p = params("{\"repo\":\"acme/widgets\",\"title\":\"T\",\"labels\":[\"bug\"]}");
	e = entry("create_issue", "owner", p, LEDGER_PENDING, T0, T0, 0);
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_string_equal(pl.target, "github:acme:widgets:new-issue");
	assert_string_equal(cJSON_GetStringValue(
	                            cJSON_GetArrayItem(cJSON_GetObjectItem(pl.extra, "labels"), 0)),
	                    "bug");
	fulfil_plan_free(&pl);
	cJSON_Delete(p);
}

static void test_prepare_refusals(void **state)
{
	(void)state;
	struct {
		const char *action, *json, *reason_has;
	} rows[] = {
	        {"create_issue", "{\"title\":\"No repo\"}", "names no repository"},
	        {"create_issue", "{\"repo\":\"widgets\",\"title\":\"No owner\"}", "owner"},
	        {"create_issue", "{\"owner\":\"acme\",\"repo\":\"widgets\"}", "neither a title"},
	        {"comment_issue", "{\"owner\":\"acme\",\"repo\":\"widgets\",\"body\":\"hi\"}",
	         "issue_number"},
	        {"comment_issue", "{\"owner\":\"acme\",\"repo\":\"widgets\",\"issue_number\":3}",
	         "body"},
	        {"post_bluesky", "{}", "no text"},
	        {"graceful_exit", "{}", "not a commitment type"},
	        {"create_issue", "{\"owner\":\"a:b\",\"repo\":\"w\",\"title\":\"x\"}",
	         "names no repository"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		cJSON *p = params(rows[i].json);
		struct ledger_entry e =
		        entry(rows[i].action, "owner", p, LEDGER_PENDING, T0, T0, 0);
		struct fulfil_plan pl;
		struct decision d = {0};
		if (fulfil_prepare(&e, &pl, &d) != -1)
			fail_msg("row %zu (%s %s) was accepted", i, rows[i].action, rows[i].json);
		if (!strstr(d.reason, rows[i].reason_has) || d.verdict != VERDICT_FAIL ||
		    strcmp(d.rule, "commitment_params") != 0)
			fail_msg("row %zu: '%s' lacks '%s'", i, d.reason, rows[i].reason_has);
		assert_null(pl.text);
		assert_null(pl.extra);
		cJSON_Delete(p);
	}
}

static void test_prepare_comment_plan_post(void **state)
{
	(void)state;
	struct fulfil_plan pl;
	struct decision d;
	/* the number from "#12" in the description when no field has it */
	cJSON *p = params("{\"owner\":\"acme\",\"repo\":\"widgets\",\"description\":\"Reply on "
	                  "#12 with the fix\"}");
	struct ledger_entry e = entry("comment_issue", "space", p, LEDGER_PENDING, T0, T0, 0);
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_string_equal(pl.target, "github:acme:widgets:issue:12");
	assert_string_equal(pl.text, "Reply on #12 with the fix");
	assert_null(pl.extra);
	fulfil_plan_free(&pl);
	cJSON_Delete(p);

	p = params("{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Ship v2\",\"goal\":\"Ship "
	           "it\",\"context\":\"promised\",\"tasks\":[{\"title\":\"Write\",\"description\":"
	           "\"the code\",\"dependencies\":[\"Task 0\"],\"files\":[\"a.c\"]}]}");
	e = entry("create_plan", "space", p, LEDGER_PENDING, T0, T0, 0);
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_string_equal(pl.title, "[PLAN] Ship v2");
	assert_string_equal(pl.target, "github:acme:widgets:new-issue");
	assert_non_null(strstr(pl.text, "# [PLAN] Ship v2\n\n## Goal\nShip it\n"));
	assert_non_null(strstr(pl.text, "### Task 1: Write\n**Status:** pending\n"));
	assert_non_null(strstr(pl.text, "**Dependencies:** Task 0\n**Files:**\n- `a.c`\n"));
	assert_non_null(strstr(pl.text, "## Verification\n- [ ] All tasks completed"));
	const cJSON *labels = cJSON_GetObjectItem(pl.extra, "labels");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(labels, 0)), "plan");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(labels, 1)), "plan:active");
	fulfil_plan_free(&pl);
	cJSON_Delete(p);

	/* a plan without tasks gets the one scoping task */
	p = params("{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Later\"}");
	e = entry("create_plan", "owner", p, LEDGER_PENDING, T0, T0, 0);
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_non_null(strstr(pl.text, "### Task 1: Define scope and requirements"));
	fulfil_plan_free(&pl);
	cJSON_Delete(p);

	/* the room's create_plan: a title and words; its list items are the
	 * tasks, and in a workspace the documentation tasks come first */
	p = params("{\"repo\":\"acme/www-lil-intdev-demo\",\"title\":\"Greetings\","
	           "\"description\":\"A greeting page.\\n1. Add the greeting\\n2. Add the "
	           "farewell\\n3. Link them\"}");
	e = entry("create_plan", "space", p, LEDGER_PENDING, T0, T0, 0);
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_non_null(strstr(pl.text, "## Goal\nA greeting page.\n"));
	assert_non_null(strstr(pl.text, "### Task 3: Link them\n"));
	assert_null(strstr(pl.text, "### Task 4:"));
	assert_non_null(strstr(pl.text, "_Created from"));
	assert_int_equal(fulfil_plan_docs(&pl, false, true, &d), 1);
	assert_non_null(strstr(pl.text, "### Task 1: Create LIL-INTDEV-AGENTS.md\n"));
	assert_non_null(strstr(pl.text, "### Task 4: Link them\n"));
	assert_int_equal(fulfil_plan_docs(&pl, true, true, &d), 0);
	fulfil_plan_free(&pl);
	cJSON_Delete(p);

	/* post_bluesky: text first, then content (the room's field) */
	p = params("{\"content\":\"hello from the room\",\"description\":\"a post\"}");
	e = entry("post_bluesky", "space", p, LEDGER_PENDING, T0, T0, 0);
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_int_equal(pl.platform, CONV_PLATFORM_BLUESKY);
	assert_string_equal(pl.target, "bluesky:post");
	assert_string_equal(pl.text, "hello from the room");
	fulfil_plan_free(&pl);
	cJSON_Delete(p);
}

static void test_outcomes_and_texts(void **state)
{
	(void)state;
	struct {
		enum decision_verdict v;
		const char *rule, *reason;
		enum fulfil_outcome want;
	} rows[] = {
	        {VERDICT_SENT, "sent", "sent to github:a:b:new-issue", FULFIL_OUT_SENT},
	        {VERDICT_FAIL, "port", "github refused: 422", FULFIL_OUT_FAILED},
	        {VERDICT_FAIL, "port_unknown", "may or may not", FULFIL_OUT_UNKNOWN},
	        {VERDICT_DROP, "journal", "already sent (journal key …)", FULFIL_OUT_ALREADY},
	        {VERDICT_DROP, "journal", "an earlier attempt is unresolved", FULFIL_OUT_DEFER},
	        {VERDICT_DROP, "shutdown", "shutting down", FULFIL_OUT_DEFER},
	        {VERDICT_DROP, "send_permission", "not allowed", FULFIL_OUT_FAILED},
	        {VERDICT_DROP, "dedup", "same text", FULFIL_OUT_FAILED},
	        {VERDICT_FAIL, "journal", "cannot record the intent", FULFIL_OUT_FAILED},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct decision d;
		decision_set(&d, rows[i].v, rows[i].rule, "%s", rows[i].reason);
		if (fulfil_outcome_of(&d) != rows[i].want)
			fail_msg("row %zu (%s): outcome %d, want %d", i, rows[i].rule,
			         fulfil_outcome_of(&d), rows[i].want);
	}
	assert_int_equal(fulfil_outcome_of(NULL), FULFIL_OUT_DEFER);

	char buf[256];
	fulfil_announcement("Flaky test", "https://github.com/acme/widgets/issues/1", buf,
	                    sizeof buf);
	assert_string_equal(buf, "Done — Flaky test: https://github.com/acme/widgets/issues/1");
	fulfil_announcement("Flaky test", NULL, buf, sizeof buf);
	assert_string_equal(buf, "Done — Flaky test");

	/* the description is one line, cut on a UTF-8 boundary */
	char long_title[400];
	memset(long_title, 0, sizeof long_title);
	for (size_t i = 0; i + 2 < 300; i += 2)
		memcpy(long_title + i, "é", 2);
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "title", long_title);
	struct ledger_entry e = entry("create_issue", "owner", p, LEDGER_PENDING, T0, T0, 0);
	fulfil_description(&e, buf, sizeof buf);
	assert_true(strlen(buf) <= FULFIL_DESC_MAX);
	assert_int_equal(strlen(buf) % 2, 0);
	cJSON_Delete(p);
}

static void test_types(void **state)
{
	(void)state;
	assert_int_equal(fulfil_type_parse("create_issue"), FULFIL_CREATE_ISSUE);
	assert_int_equal(fulfil_type_parse("post_bluesky"), FULFIL_POST_BLUESKY);
	assert_int_equal(fulfil_type_parse("bluesky_reply"), -1);
	assert_int_equal(fulfil_type_parse(NULL), -1);
	assert_true(fulfil_type_is_github(FULFIL_COMMENT_ISSUE));
	assert_false(fulfil_type_is_github(FULFIL_POST_BLUESKY));
	assert_int_equal(fulfil_type_platform(FULFIL_CREATE_PLAN), CONV_PLATFORM_GITHUB);
}

/* create_workspace: a GitHub type; its name from the title; the plan the
 * fulfilment hands to the workspace module; the texts. */
static void test_workspace(void **state)
{
	(void)state;
	assert_int_equal(fulfil_type_parse("create_workspace"), FULFIL_CREATE_WORKSPACE);
	assert_true(fulfil_type_is_github(FULFIL_CREATE_WORKSPACE));
	static const struct {
		const char *title, *name;
	} names[] = {
	        {"site", "site"},
	        {"Acme Site — v2!", "acme-site-v2"},
	        {"  --Ünïcode  café--  ", "n-code-caf"},
	        {"www-lil-intdev-site", "www-lil-intdev-site"},
	        {"", "workspace"},
	        {"!!!", "workspace"},
	        {NULL, "workspace"},
	        {"the workspace for our new collaborative website project",
	         "the-workspace-for-our-new-collaborative"},
	        {"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
	         "abcdefghijklmnopqrstuvwxyzabcdefghijklmn"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char out[FULFIL_WS_NAME_MAX + 1];
		fulfil_workspace_name(names[i].title, out);
		if (strcmp(out, names[i].name) != 0)
			fail_msg("row %zu: '%s' → '%s', want '%s'", i,
			         names[i].title ? names[i].title : "(null)", out, names[i].name);
	}
	cJSON *p = cJSON_Parse("{\"owner\":\"acme\",\"title\":\"Acme site\","
	                       "\"description\":\"where we build it\"}");
	struct ledger_entry e = entry("create_workspace", "space", p, LEDGER_PENDING, T0, T0, 0);
	struct fulfil_plan pl;
	struct decision d;
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_int_equal(pl.platform, CONV_PLATFORM_GITHUB);
	assert_string_equal(pl.repo, "acme");
	assert_string_equal(pl.title, "acme-site");
	assert_string_equal(pl.text, "where we build it");
	assert_string_equal(pl.target, "workspace:acme/acme-site");
	fulfil_plan_free(&pl);
	char desc[FULFIL_DESC_MAX + 1];
	fulfil_description(&e, desc, sizeof desc);
	assert_string_equal(desc, "Acme site");
	cJSON_Delete(p);
	/* no organisation, no name: the default organisation, "workspace" */
	p = cJSON_Parse("{}");
	e = entry("create_workspace", "space", p, LEDGER_PENDING, T0, T0, 0);
	assert_int_equal(fulfil_prepare(&e, &pl, &d), 0);
	assert_string_equal(pl.repo, "");
	assert_string_equal(pl.title, "workspace");
	assert_null(pl.text);
	assert_string_equal(pl.target, "workspace:<default>/workspace");
	fulfil_plan_free(&pl);
	fulfil_description(&e, desc, sizeof desc);
	assert_string_equal(desc, "the workspace of the organisation");
	cJSON_Delete(p);
	char line[256];
	fulfil_workspace_exists("acme/www-lil-intdev-x", "https://github.com/acme/www-lil-intdev-x",
	                        line, sizeof line);
	assert_string_equal(line, "The workspace acme/www-lil-intdev-x already exists: "
	                          "https://github.com/acme/www-lil-intdev-x");
}

/* An issue already opened under the same or a near-identical title is the
 * one promised; a different one is not. */
static void test_same_title(void **state)
{
	(void)state;
	assert_true(fulfil_same_title("Login timeout", "login timeout"));
	assert_true(fulfil_same_title("Login timeout!", "  Login   Timeout "));
	assert_true(fulfil_same_title("Follow-up from the room", "Follow up from the room"));
	assert_true(fulfil_same_title("Login test times out on CI runners",
	                              "Login test times out on the CI runners"));
	assert_false(fulfil_same_title("Login timeout", "Logout timeout"));
	assert_false(fulfil_same_title("Flaky login test", "Flaky signup test"));
	assert_false(fulfil_same_title("Cache for 5 minutes", "Cache for 30 seconds"));
	assert_false(fulfil_same_title("", "Login timeout"));
	assert_false(fulfil_same_title(NULL, "Login timeout"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_same_title),
	        cmocka_unit_test(test_workspace),
	        cmocka_unit_test(test_sweep_table),
	        cmocka_unit_test(test_attempts_and_work),
	        cmocka_unit_test(test_cooldown),
	        cmocka_unit_test(test_prepare_create_issue),
	        cmocka_unit_test(test_prepare_refusals),
	        cmocka_unit_test(test_prepare_comment_plan_post),
	        cmocka_unit_test(test_outcomes_and_texts),
	        cmocka_unit_test(test_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
