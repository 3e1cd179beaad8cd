/*
 * modules/plan/plan.h: the plan body generated exactly, read back robustly
 * (the parser's hard cases: rules and file items inside descriptions, words
 * that mean "nobody", missing lines, dependencies that name nothing, the
 * plan heading), the update transform, the documentation tasks with their
 * renumbered dependencies, and branch names.
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
#include "common/strbuf.h"
#include "modules/plan/plan.h"

static struct plan_draft draft_of(const char *json)
{
	struct ga_err err = {{0}};
	cJSON *j = json_parse(json, strlen(json), &err);
	assert_non_null(j);
	struct plan_draft d;
	int rc = plan_draft_from_json(j, &d, &err);
	if (rc != 0)
		fail_msg("draft: %s", err.msg);
	cJSON_Delete(j);
	return d;
}

static bool has_problem(const struct plan *p, const char *needle)
{
	for (size_t i = 0; i < p->n_problems; i++)
		if (strstr(p->problems[i], needle))
			return true;
	return false;
}

static const char *TWO_TASKS =
        "{\"title\":\"Login page\",\"goal\":\"People can log in.\",\"context\":\"Next.js "
        "app\",\"tasks\":["
        "{\"title\":\"Add the form\",\"description\":\"A form with two fields.\","
        "\"estimate\":\"30 min\",\"files\":[\"app/login.tsx\"]},"
        "{\"title\":\"Wire the API\",\"description\":\"POST /api/login.\","
        "\"dependencies\":[\"Task 1\"]}]}";

static void test_generation_exact(void **state)
{
	(void)state;
	struct plan_draft d = draft_of(TWO_TASKS);
	struct ga_err err = {{0}};
	char *body = plan_draft_format(&d, &err);
	assert_non_null(body);
	const char *want = "# [PLAN] Login page\n"
	                   "\n"
	                   "## Goal\n"
	                   "People can log in.\n"
	                   "\n"
	                   "## Context\n"
	                   "Next.js app\n"
	                   "\n"
	                   "## Tasks\n"
	                   "\n"
	                   "### Task 1: Add the form\n"
	                   "**Status:** pending\n"
	                   "**Assignee:** (empty if unclaimed)\n"
	                   "**Estimate:** 30 min\n"
	                   "**Dependencies:** none\n"
	                   "**Files:**\n"
	                   "- `app/login.tsx`\n"
	                   "\n"
	                   "**Description:**\n"
	                   "A form with two fields.\n"
	                   "\n"
	                   "---\n"
	                   "\n"
	                   "### Task 2: Wire the API\n"
	                   "**Status:** pending\n"
	                   "**Assignee:** (empty if unclaimed)\n"
	                   "**Dependencies:** Task 1\n"
	                   "\n"
	                   "**Description:**\n"
	                   "POST /api/login.\n"
	                   "\n"
	                   "---\n"
	                   "\n"
	                   "## Verification\n"
	                   "- [ ] All tasks completed\n"
	                   "- [ ] Tests pass\n"
	                   "- [ ] Integration works\n";
	assert_string_equal(body, want);
	char *title = plan_format_title("Login\npage");
	assert_string_equal(title, "[PLAN] Login page");
	free(title);

	struct plan p;
	assert_int_equal(plan_parse("[PLAN] Login page", body, &p, &err), 0);
	assert_string_equal(p.title, "Login page");
	assert_string_equal(p.goal, "People can log in.");
	assert_string_equal(p.context, "Next.js app");
	assert_int_equal(p.n_tasks, 2);
	assert_int_equal(p.tasks[0].number, 1);
	assert_string_equal(p.tasks[0].title, "Add the form");
	assert_int_equal(p.tasks[0].status, PLAN_PENDING);
	assert_null(p.tasks[0].assignee);
	assert_string_equal(p.tasks[0].estimate, "30 min");
	assert_int_equal(p.tasks[0].n_files, 1);
	assert_string_equal(p.tasks[0].files[0], "app/login.tsx");
	assert_string_equal(p.tasks[0].description, "A form with two fields.");
	assert_int_equal(p.tasks[1].n_deps, 1);
	assert_int_equal(p.tasks[1].deps[0].task, 1);
	assert_int_equal(p.n_checks, 3);
	assert_false(p.checks[0].done);
	assert_int_equal(p.n_problems, 0);
	assert_int_equal(plan_overall_status(&p), PLAN_ACTIVE);
	plan_free(&p);
	free(body);
	plan_draft_free(&d);
}

/* A description full of Markdown that looks like structure comes back
 * exactly as written. */
static void test_description_roundtrip(void **state)
{
	(void)state;
	const char *desc = "Steps:\n"
	                   "- `src/a.c` gets a helper\n"
	                   "---\n"
	                   "**Status:** this line is prose\n"
	                   "### Task 9: not a task\n"
	                   "## Verification is done by hand\n"
	                   "\\### Task 4: already escaped\n"
	                   "# [PLAN] quoted heading\n"
	                   "    indented code\n"
	                   "---";
	cJSON *j = cJSON_Parse(TWO_TASKS);
	cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tasks"), 0);
	cJSON_ReplaceItemInObject(t0, "description", cJSON_CreateString(desc));
	cJSON_ReplaceItemInObject(j, "goal", cJSON_CreateString("Line one\n## Tasks\nline three"));
	struct ga_err err = {{0}};
	struct plan_draft d;
	assert_int_equal(plan_draft_from_json(j, &d, &err), 0);
	char *body = plan_draft_format(&d, &err);
	assert_non_null(body);
	struct plan p;
	assert_int_equal(plan_parse(NULL, body, &p, &err), 0);
	assert_string_equal(p.title, "Login page");
	assert_int_equal(p.n_tasks, 2);
	assert_string_equal(p.tasks[0].description, desc);
	assert_int_equal(p.tasks[0].n_files, 1); /* only the Files list */
	assert_int_equal(p.tasks[0].status, PLAN_PENDING);
	assert_string_equal(p.goal, "Line one ## Tasks line three");
	assert_int_equal(p.n_problems, 0);
	plan_free(&p);
	free(body);
	plan_draft_free(&d);
	cJSON_Delete(j);
}

/* A body as people and other agents write it: CRLF, no Description line,
 * odd assignees, a missing Status line, dependencies by title. */
static const char *HAND = "# [PLAN] Hand written\r\n"
                          "## Goal\r\n"
                          "Ship it\r\n"
                          "## Tasks\r\n"
                          "### Task 1: Set up the database\r\n"
                          "**Status:** completed\r\n"
                          "**Assignee:** none\r\n"
                          "Create the schema.\r\n"
                          "---\r\n"
                          "### Task 2: Write the API\r\n"
                          "**Assignee:** @Ada-Bot\r\n"
                          "**Dependencies:** set up the database\r\n"
                          "Endpoints.\r\n"
                          "### Task 3: Deploy\r\n"
                          "**Status:** In Progress\r\n"
                          "**Assignee:** unassigned\r\n"
                          "**Dependencies:** Task 2, the moon landing, task-7\r\n"
                          "### Task 5: Docs\r\n"
                          "**Status:** weird\r\n"
                          "**Assignee:** someone with spaces\r\n"
                          "**Dependencies:** Write the API; Deploy\r\n"
                          "## Verification\r\n"
                          "- [x] Reviewed\r\n";

static void test_hand_written(void **state)
{
	(void)state;
	struct plan p;
	struct ga_err err = {{0}};
	assert_true(plan_is_plan("Hand written", HAND));
	assert_int_equal(plan_parse("Hand written", HAND, &p, &err), 0);
	assert_int_equal(p.n_tasks, 4);
	assert_int_equal(p.tasks[0].status, PLAN_COMPLETED);
	assert_null(p.tasks[0].assignee); /* "none" is nobody */
	assert_string_equal(p.tasks[0].description, "Create the schema.");
	assert_false(p.tasks[1].has_status_line);
	assert_string_equal(p.tasks[1].assignee, "Ada-Bot");
	assert_int_equal(p.tasks[1].n_deps, 1);
	assert_int_equal(p.tasks[1].deps[0].task, 1); /* by title, any case */
	assert_int_equal(p.tasks[2].status, PLAN_IN_PROGRESS);
	assert_null(p.tasks[2].assignee);
	assert_int_equal(p.tasks[2].n_deps, 3);
	assert_int_equal(p.tasks[2].deps[0].task, 2);
	assert_int_equal(p.tasks[2].deps[1].task, 0); /* names nothing */
	assert_int_equal(p.tasks[2].deps[2].task, 0); /* no Task 7 */
	assert_true(has_problem(&p, "'the moon landing' names no task"));
	assert_true(has_problem(&p, "Task 3 depends on Task 7, which is not in the plan"));
	assert_int_equal(p.tasks[3].number, 5);
	assert_int_equal(p.tasks[3].status, PLAN_PENDING);
	assert_true(has_problem(&p, "status 'weird'"));
	assert_null(p.tasks[3].assignee);
	assert_true(has_problem(&p, "'someone with spaces' is not a GitHub login"));
	assert_int_equal(p.tasks[3].n_deps, 2); /* "A; B": both titles resolve */
	assert_int_equal(p.tasks[3].deps[0].task, 2);
	assert_int_equal(p.tasks[3].deps[1].task, 3);
	assert_int_equal(p.n_checks, 1);
	assert_true(p.checks[0].done);
	plan_free(&p);
}

static void test_empty_assignee_words(void **state)
{
	(void)state;
	const char *words[] = {
	        "none", "None", "unassigned",   "-",      "n/a", "(empty if unclaimed)",
	        "",     "@",    "\xe2\x80\x94", "(none)", "TBD"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
		char body[300];
		snprintf(body, sizeof body,
		         "## Tasks\n### Task 1: A\n**Status:** pending\n**Assignee:** %s\n",
		         words[i]);
		struct plan p;
		assert_int_equal(plan_parse("[PLAN] x", body, &p, NULL), 0);
		assert_int_equal(p.n_tasks, 1);
		if (p.tasks[0].assignee)
			fail_msg("'%s' was taken as assignee '%s'", words[i], p.tasks[0].assignee);
		assert_int_equal(p.n_problems, 0);
		plan_free(&p);
	}
}

static void test_is_plan(void **state)
{
	(void)state;
	assert_true(plan_is_plan("[PLAN] x", "body"));
	assert_true(plan_is_plan("  [PLAN] x", "body"));
	assert_false(plan_is_plan("[PLAN] x", ""));
	assert_false(plan_is_plan("[PLAN] x", NULL));
	assert_true(plan_is_plan("Roadmap", "intro\n# [PLAN] Roadmap\n"));
	assert_true(plan_is_plan("Roadmap", "  # [PLAN] Roadmap"));
	/* Only as a heading line: quoted or inline it does not count. */
	assert_false(plan_is_plan("Bug", "we should write a `# [PLAN]` heading"));
	assert_false(plan_is_plan("Bug", "## [PLAN] is a level-two heading"));
	assert_false(plan_is_plan("Bug", "> see # [PLAN] above"));
}

/* Task numbers come from the headers; duplicates and a header inside the
 * Goal are handled. */
static void test_numbers_and_duplicates(void **state)
{
	(void)state;
	const char *body = "## Tasks\n"
	                   "### Task 3: C\n**Status:** pending\n"
	                   "### task 10 : Ten\n**Status:** blocked\n"
	                   "### Task 3: C again\n**Status:** completed\n"
	                   "### Task 0: zero is not a task\n"
	                   "### Task 99999: too large\n";
	struct plan p;
	assert_int_equal(plan_parse("[PLAN] n", body, &p, NULL), 0);
	assert_int_equal(p.n_tasks, 2);
	assert_int_equal(p.tasks[0].number, 3);
	assert_int_equal(p.tasks[0].status, PLAN_PENDING);
	assert_int_equal(p.tasks[1].number, 10);
	assert_string_equal(p.tasks[1].title, "Ten");
	assert_true(has_problem(&p, "Task 3 appears twice"));
	/* The non-headers are description text of Task 3's duplicate (dropped)
	 * and are not tasks. */
	assert_null(plan_task_find(&p, 0));
	assert_int_equal(plan_overall_status(&p), PLAN_OVERALL_BLOCKED);
	plan_free(&p);
}

static void test_cycle_and_self(void **state)
{
	(void)state;
	const char *body = "## Tasks\n"
	                   "### Task 1: A\n**Dependencies:** Task 2\n"
	                   "### Task 2: B\n**Dependencies:** 1\n"
	                   "### Task 3: C\n**Dependencies:** Task 3\n";
	struct plan p;
	assert_int_equal(plan_parse("[PLAN] c", body, &p, NULL), 0);
	assert_true(p.tasks[0].in_cycle);
	assert_true(p.tasks[1].in_cycle);
	assert_false(p.tasks[2].in_cycle);
	assert_int_equal(p.tasks[2].deps[0].task, 0);
	assert_true(has_problem(&p, "Task 3 depends on itself"));
	assert_true(has_problem(&p, "Task 1 is part of a dependency cycle"));
	plan_free(&p);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct plan p;
	struct ga_err err = {{0}};
	assert_int_equal(plan_parse("t", NULL, &p, &err), -1);
	assert_int_equal(plan_parse("t", "## Tasks\n### Task 1: \xff\xfe\n", &p, &err), -1);
	assert_non_null(strstr(err.msg, "UTF-8"));
	char *big = malloc(PLAN_MAX_BODY_BYTES + 2);
	memset(big, 'a', PLAN_MAX_BODY_BYTES + 1);
	big[PLAN_MAX_BODY_BYTES + 1] = '\0';
	assert_int_equal(plan_parse("t", big, &p, &err), -1);
	assert_non_null(strstr(err.msg, "bytes"));
	free(big);
	/* More tasks than the bound: the rest are reported. */
	struct strbuf_like {
		char buf[PLAN_MAX_TASKS * 40 + 200];
	} b;
	size_t at = (size_t)snprintf(b.buf, sizeof b.buf, "## Tasks\n");
	for (int i = 1; i <= PLAN_MAX_TASKS + 2; i++)
		at += (size_t)snprintf(b.buf + at, sizeof b.buf - at, "### Task %d: t\n", i);
	assert_int_equal(plan_parse("t", b.buf, &p, &err), 0);
	assert_int_equal(p.n_tasks, PLAN_MAX_TASKS);
	assert_true(has_problem(&p, "more than 64 tasks"));
	plan_free(&p);

	const char *bad[] = {
	        "[]",
	        "{\"title\":\"t\",\"goal\":\"g\",\"tasks\":[]}",
	        "{\"title\":\"\",\"goal\":\"g\",\"tasks\":[{\"title\":\"a\",\"description\":\"d\"}]"
	        "}",
	        "{\"title\":\"t\",\"goal\":\"g\",\"tasks\":[{\"title\":\"a\"}]}",
	        "{\"title\":\"t\",\"goal\":\"g\",\"tasks\":[{\"title\":\"a\",\"description\":\"d\","
	        "\"files\":[\"a`b\"]}]}",
	        "{\"title\":\"t\",\"goal\":\"g\",\"tasks\":[{\"title\":\"a\",\"description\":\"d\","
	        "\"dependencies\":\"Task 1\"}]}",
	        "{\"title\":5,\"goal\":\"g\",\"tasks\":[{\"title\":\"a\",\"description\":\"d\"}]}",
	};
	const char *want[] = {"JSON object",           "tasks must be a non-empty array",
	                      "title must be",         "tasks[0].description is missing",
	                      "tasks[0].files[0]",     "tasks[0].dependencies must be an array",
	                      "title must be a string"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cJSON *j = cJSON_Parse(bad[i]);
		struct plan_draft d;
		assert_int_equal(plan_draft_from_json(j, &d, &err), -1);
		if (!strstr(err.msg, want[i]))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, want[i]);
		cJSON_Delete(j);
	}
}

/* ---- updates ---------------------------------------------------------------------- */

static void test_update_replaces(void **state)
{
	(void)state;
	struct plan_draft d = draft_of(TWO_TASKS);
	char *body = plan_draft_format(&d, NULL);
	struct plan_update u[] = {
	        {.task = 2,
	         .set_status = true,
	         .status = PLAN_CLAIMED,
	         .set_assignee = true,
	         .assignee = "@ada"},
	};
	struct ga_err err = {{0}};
	char *nb = plan_body_update(body, u, 1, &err);
	assert_non_null(nb);
	assert_non_null(strstr(nb, "### Task 2: Wire the API\n**Status:** claimed\n"
	                           "**Assignee:** @ada\n"));
	/* Task 1 untouched; the rest byte for byte. */
	assert_int_equal(strlen(nb), strlen(body) - strlen("pending") + strlen("claimed") -
	                                     strlen(PLAN_ASSIGNEE_EMPTY) + strlen("@ada"));
	struct plan p;
	assert_int_equal(plan_parse(NULL, nb, &p, NULL), 0);
	assert_int_equal(p.tasks[0].status, PLAN_PENDING);
	assert_int_equal(p.tasks[1].status, PLAN_CLAIMED);
	assert_string_equal(p.tasks[1].assignee, "ada");
	plan_free(&p);
	/* Back to unassigned. */
	struct plan_update back = {.task = 2, .set_assignee = true, .assignee = NULL};
	char *nb2 = plan_body_update(nb, &back, 1, &err);
	assert_non_null(strstr(nb2, "**Assignee:** (empty if unclaimed)\n**Dependencies"));
	free(nb2);
	/* Unknown task, bad login. */
	struct plan_update missing = {.task = 7, .set_status = true, .status = PLAN_BLOCKED};
	assert_null(plan_body_update(nb, &missing, 1, &err));
	assert_non_null(strstr(err.msg, "Task 7 is not in the plan"));
	struct plan_update badlogin = {.task = 1, .set_assignee = true, .assignee = "a b"};
	assert_null(plan_body_update(nb, &badlogin, 1, &err));
	free(nb);
	free(body);
	plan_draft_free(&d);
}

/* Missing Status and Assignee lines are inserted (CRLF kept); the
 * description's look-alike lines are not touched. */
static void test_update_inserts(void **state)
{
	(void)state;
	struct plan_update u[] = {
	        {.task = 2,
	         .set_status = true,
	         .status = PLAN_IN_PROGRESS,
	         .set_assignee = true,
	         .assignee = "bob"},
	        {.task = 1, .set_assignee = true, .assignee = "carol"},
	};
	struct ga_err err = {{0}};
	char *nb = plan_body_update(HAND, u, 2, &err);
	assert_non_null(nb);
	assert_non_null(strstr(nb, "### Task 2: Write the API\r\n**Status:** in_progress\r\n"
	                           "**Assignee:** @bob\r\n"));
	assert_non_null(strstr(nb, "**Status:** completed\r\n**Assignee:** @carol\r\n"));
	struct plan p;
	assert_int_equal(plan_parse(NULL, nb, &p, NULL), 0);
	assert_int_equal(p.tasks[1].status, PLAN_IN_PROGRESS);
	assert_string_equal(p.tasks[1].assignee, "bob");
	assert_true(p.tasks[1].has_status_line);
	plan_free(&p);
	free(nb);

	const char *tricky = "## Tasks\n### Task 1: A\n**Description:**\n**Status:** prose\n"
	                     "**Assignee:** prose";
	struct plan_update w = {.task = 1,
	                        .set_status = true,
	                        .status = PLAN_BLOCKED,
	                        .set_assignee = true,
	                        .assignee = NULL};
	nb = plan_body_update(tricky, &w, 1, &err);
	assert_string_equal(nb, "## Tasks\n### Task 1: A\n**Status:** blocked\n**Assignee:** "
	                        "(empty if unclaimed)\n**Description:**\n**Status:** prose\n"
	                        "**Assignee:** prose");
	free(nb);
	/* A header on the last line without a newline. */
	nb = plan_body_update("## Tasks\n### Task 1: A", &w, 1, &err);
	assert_string_equal(nb, "## Tasks\n### Task 1: A\n**Status:** blocked\n**Assignee:** "
	                        "(empty if unclaimed)");
	free(nb);
}

/* ---- documentation tasks ------------------------------------------------------------ */

/* A request in words (the room's create_plan commitment): its list items
 * are the tasks, the rest the goal; formatted, it reads back as written. */
static void test_draft_from_request(void **state)
{
	(void)state;
	struct plan_draft d;
	struct ga_err e = {{0}};
	const char *req = "Add a greeting page to the site.\n\n"
	                  "1. Add the greeting: a page that says hello\n"
	                  "2) Add the farewell — a page that says goodbye\n"
	                  "   with a link back home\n"
	                  "- Link both from the index\n"
	                  "- [ ] not a task: a check\n"
	                  "Keep it small.\n";
	assert_int_equal(plan_draft_from_request("Greetings", req, "From the room.", &d, &e), 0);
	assert_int_equal(d.n_tasks, 3);
	assert_string_equal(d.tasks[0].title, "Add the greeting");
	assert_string_equal(d.tasks[0].description, "Add the greeting: a page that says hello");
	assert_string_equal(d.tasks[1].title, "Add the farewell");
	assert_non_null(strstr(d.tasks[1].description, "with a link back home"));
	assert_string_equal(d.tasks[2].title, "Link both from the index");
	assert_non_null(strstr(d.goal, "Add a greeting page to the site."));
	assert_non_null(strstr(d.goal, "Keep it small."));
	char *body = plan_draft_format(&d, &e);
	assert_non_null(body);
	struct plan p;
	assert_int_equal(plan_parse("[PLAN] Greetings", body, &p, &e), 0);
	assert_int_equal(p.n_tasks, 3);
	assert_string_equal(p.tasks[1].title, "Add the farewell");
	assert_int_equal(p.tasks[2].status, PLAN_PENDING);
	assert_string_equal(p.context, "From the room.");
	plan_free(&p);
	free(body);
	plan_draft_free(&d);
	/* no list: the request is the one task */
	assert_int_equal(plan_draft_from_request("Fix it", "The login times out.", NULL, &d, &e),
	                 0);
	assert_int_equal(d.n_tasks, 1);
	assert_string_equal(d.tasks[0].title, "Fix it");
	assert_string_equal(d.tasks[0].description, "The login times out.");
	assert_string_equal(d.goal, "The login times out.");
	plan_draft_free(&d);
	/* a long item: its title is cut on a word */
	char longreq[600];
	snprintf(longreq, sizeof longreq, "- %s",
	         "word word word word word word word word word "
	         "word word word word word word word word word "
	         "word word word word word word word word word");
	assert_int_equal(plan_draft_from_request("Long", longreq, NULL, &d, &e), 0);
	assert_true(strlen(d.tasks[0].title) <= PLAN_REQUEST_TITLE_MAX);
	assert_int_equal(d.tasks[0].title[strlen(d.tasks[0].title) - 1], 'd');
	plan_draft_free(&d);
	/* bad input */
	assert_int_equal(plan_draft_from_request("", "x", NULL, &d, &e), -1);
	assert_int_equal(plan_draft_from_request("  ", "x", NULL, &d, &e), -1);
	assert_int_equal(plan_draft_from_request("t", "\xff\xfe", NULL, &d, &e), -1);
	assert_non_null(strstr(e.msg, "UTF-8"));
	/* more items than a plan holds: the first PLAN_MAX_TASKS */
	struct strbuf sb;
	sb_init(&sb, 0);
	for (int i = 0; i < PLAN_MAX_TASKS + 5; i++)
		sb_printf(&sb, "- item %d\n", i);
	assert_int_equal(plan_draft_from_request("Many", sb_cstr(&sb), NULL, &d, &e), 0);
	assert_int_equal(d.n_tasks, PLAN_MAX_TASKS);
	plan_draft_free(&d);
	sb_free(&sb);
}

static void test_docs_tasks_renumber(void **state)
{
	(void)state;
	struct plan_draft d = draft_of(
	        "{\"title\":\"t\",\"goal\":\"g\",\"tasks\":["
	        "{\"title\":\"One\",\"description\":\"d\"},"
	        "{\"title\":\"Two\",\"description\":\"d\",\"dependencies\":[\"Task 1\",1,\"One\"]},"
	        "{\"title\":\"Three\",\"description\":\"d\",\"dependencies\":[\"task-2\"]}]}");
	struct ga_err err = {{0}};
	assert_int_equal(plan_draft_add_docs(&d, "other-repo", false, false, &err), 0);
	assert_int_equal(d.n_tasks, 3);
	assert_int_equal(plan_draft_add_docs(&d, "www-lil-intdev-acme", false, false, &err), 2);
	assert_int_equal(d.n_tasks, 5);
	assert_string_equal(d.tasks[0].title, "Create LIL-INTDEV-AGENTS.md");
	assert_string_equal(d.tasks[1].title, "Create SCENARIOS.md");
	assert_string_equal(d.tasks[0].estimate, "5-10 min");
	assert_string_equal(d.tasks[1].files[0], "SCENARIOS.md");
	assert_string_equal(d.tasks[3].deps[0], "Task 3");
	assert_string_equal(d.tasks[3].deps[1], "Task 3");
	assert_string_equal(d.tasks[3].deps[2], "One"); /* by title: unchanged */
	assert_string_equal(d.tasks[4].deps[0], "Task 4");
	/* The renumbered plan reads back with the dependencies on the right
	 * tasks. */
	char *body = plan_draft_format(&d, &err);
	struct plan p;
	assert_int_equal(plan_parse(NULL, body, &p, NULL), 0);
	assert_int_equal(p.tasks[3].number, 4);
	assert_int_equal(p.tasks[3].deps[0].task, 3);
	assert_int_equal(p.tasks[3].deps[2].task, 3);
	assert_int_equal(p.tasks[4].deps[0].task, 4);
	assert_int_equal(p.n_problems, 0);
	plan_free(&p);
	free(body);
	/* Added once: the draft now covers both. */
	assert_int_equal(plan_draft_add_docs(&d, "www-lil-intdev-acme", false, false, &err), 0);
	plan_draft_free(&d);

	d = draft_of("{\"title\":\"t\",\"goal\":\"g\",\"tasks\":["
	             "{\"title\":\"Write scenarios\",\"description\":\"d\"},"
	             "{\"title\":\"B\",\"description\":\"d\",\"dependencies\":[\"Task 1\"]}]}");
	/* The repository has the agents doc; the draft covers scenarios. */
	assert_int_equal(plan_draft_add_docs(&d, "WWW-LIL-INTDEV-x", true, false, &err), 0);
	assert_int_equal(plan_draft_add_docs(&d, "www-lil-intdev-x", false, true, &err), 1);
	assert_string_equal(d.tasks[0].title, "Create LIL-INTDEV-AGENTS.md");
	assert_string_equal(d.tasks[2].deps[0], "Task 2");
	plan_draft_free(&d);
}

/* ---- branch names ------------------------------------------------------------------- */

static void test_branch_names(void **state)
{
	(void)state;
	char b[PLAN_BRANCH_MAX + 1];
	assert_int_equal(plan_branch_name(3, "Add the Login page", 1, b, sizeof b), 0);
	assert_string_equal(b, "task-3-add-the-login-page");
	assert_int_equal(plan_branch_name(3, "Add the Login page", 2, b, sizeof b), 0);
	assert_string_equal(b, "task-3-add-the-login-page-a2");
	assert_int_equal(
	        plan_branch_name(1, "Café & Crème: résumé/CV_v2, «draft»; a·b", 1, b, sizeof b), 0);
	assert_string_equal(b, "task-1-cafe-and-creme-resume-cv-v2-draft-a-b");
	assert_int_equal(plan_branch_name(12, "!!!", 1, b, sizeof b), 0);
	assert_string_equal(b, "task-12-untitled");
	/* Too long: cut, and the partial last word dropped; always <= 50. */
	assert_int_equal(plan_branch_name(7,
	                                  "Implement the authentication middleware for every "
	                                  "route handler",
	                                  1, b, sizeof b),
	                 0);
	assert_string_equal(b, "task-7-implement-the-authentication-middleware");
	assert_true(strlen(b) <= PLAN_BRANCH_MAX);
	assert_int_equal(plan_branch_name(7,
	                                  "Implement the authentication middleware for every "
	                                  "route handler",
	                                  12, b, sizeof b),
	                 0);
	assert_string_equal(b, "task-7-implement-the-authentication-a12");
	assert_true(strlen(b) <= PLAN_BRANCH_MAX);
	assert_int_equal(plan_branch_name(1, "Supercalifragilisticexpialidocious-and-more-words-x",
	                                  1, b, sizeof b),
	                 0);
	assert_true(strlen(b) <= PLAN_BRANCH_MAX);
	assert_int_equal(plan_branch_name(0, "x", 1, b, sizeof b), -1);
	assert_int_equal(plan_branch_name(1, "x", 0, b, sizeof b), -1);
	assert_int_equal(plan_branch_name(1, "x", 1, b, 10), -1);
	assert_int_equal(plan_branch_task("task-12-foo"), 12);
	assert_int_equal(plan_branch_task("task-12"), 0);
	assert_int_equal(plan_branch_task("feature/task-1-x"), 0);
	assert_int_equal(plan_branch_legacy(3, "Add the Login page!", b, sizeof b), 0);
	assert_string_equal(b, "task-3-add-the-login-page");
	assert_int_equal(plan_branch_legacy(3, "--Hello,   World-- of a very long title indeed yes",
	                                    b, sizeof b),
	                 0);
	assert_string_equal(b, "task-3-hello-world-of-a-very-long-title-indeed-");
	assert_true(plan_valid_login("ada-bot"));
	assert_true(plan_valid_login("dependabot[bot]"));
	assert_false(plan_valid_login("-ada"));
	assert_false(plan_valid_login("a b"));
	assert_false(plan_valid_login(""));
	assert_false(plan_valid_login("a234567890123456789012345678901234567890"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_generation_exact),
	        cmocka_unit_test(test_description_roundtrip),
	        cmocka_unit_test(test_hand_written),
	        cmocka_unit_test(test_empty_assignee_words),
	        cmocka_unit_test(test_is_plan),
	        cmocka_unit_test(test_numbers_and_duplicates),
	        cmocka_unit_test(test_cycle_and_self),
	        cmocka_unit_test(test_bad_input),
	        cmocka_unit_test(test_update_replaces),
	        cmocka_unit_test(test_update_inserts),
	        cmocka_unit_test(test_docs_tasks_renumber),
	        cmocka_unit_test(test_draft_from_request),
	        cmocka_unit_test(test_branch_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
