/*
 * Pieces around the model calls: the §8.4 extraction — when the sent words
 * are worth an extraction call (§16.26), its prompt, its reply read under
 * the §8.3 schema (social-only drops GitHub work) — and the peers' part of
 * the decision prompt (§14.10: identities, reflections, workspaces,
 * bounded).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "modules/participation/participation.h"

static bool wanted(const char *s)
{
	char why[160];
	return cmt_extract_wanted(s, strlen(s), why, sizeof why);
}

static void test_wanted(void **state)
{
	(void)state;
	struct {
		const char *text;
		bool want;
	} cases[] = {
	        {"I'll open an issue for the login timeout.", true},
	        {"I\xE2\x80\x99ll write it up in acme/widgets.", true}, /* ’ folded */
	        {"Sure \xE2\x80\x94 let me draft the plan tonight.", true},
	        {"I can post about it on Bluesky.", true},
	        {"We will file it today.", true},
	        {"I'm going to document the steps.", true},
	        {"I am\nopening the issue now.", true}, /* white space runs */
	        {"I'M CREATING IT.", true},
	        {"I opened the issue yesterday.", false}, /* past tense */
	        {"You should open an issue.", false},     /* a suggestion to others */
	        {"The timeout is 30 seconds.", false},
	        {"Billing will need a look.", false}, /* "will" without "I" */
	        {"Nil'll do.", false},                /* no whole-word match */
	        {"", false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (wanted(cases[i].text) != cases[i].want)
			fail_msg("'%s': expected %s", cases[i].text,
			         cases[i].want ? "an extraction" : "none");
	char why[160];
	assert_true(cmt_extract_wanted("Let me check", 11, why, sizeof why));
	assert_non_null(strstr(why, "let me"));
	assert_false(cmt_extract_wanted("Done.", 5, why, sizeof why));
	assert_non_null(strstr(why, "no first-person promise"));
	assert_false(cmt_extract_wanted(NULL, 0, why, sizeof why));
}

static void test_prompt(void **state)
{
	(void)state;
	char *p = cmt_extract_prompt("I'll open it.", "acme/widgets", "host: please file the bug");
	assert_string_equal(p, "Reply 1: \"I'll open it.\"\n\nWorkspace context: acme/widgets\n\n"
	                       "Conversation context (recent messages from others):\n"
	                       "host: please file the bug\n");
	free(p);
	p = cmt_extract_prompt("I'll open it.", NULL, NULL);
	assert_string_equal(p, "Reply 1: \"I'll open it.\"\n");
	free(p);
	const char *sys = cmt_extract_system();
	assert_non_null(strstr(sys, "create_issue"));
	assert_non_null(strstr(sys, "post_bluesky"));
	assert_non_null(strstr(sys, "JSON array"));
}

static const char REPLY[] =
        "```json\n"
        "[{\"description\":\"Open an issue for the login timeout\",\"type\":\"create_issue\","
        "\"params\":{\"title\":\"Login times out\",\"repo\":\"acme/widgets\"},"
        "\"confidence\":\"high\"},"
        "{\"description\":\"Post about the fix\",\"type\":\"post_bluesky\",\"params\":{},"
        "\"confidence\":\"medium\"},"
        "{\"description\":\"Maybe a plan\",\"type\":\"create_plan\",\"params\":{},"
        "\"confidence\":\"low\"},"
        "{\"description\":\"Something else\",\"type\":\"delete_repo\",\"params\":{},"
        "\"confidence\":\"high\"}]\n```";

static void test_reply_read(void **state)
{
	(void)state;
	struct cmt_list c;
	memset(&c, 0, sizeof c);
	struct ga_err err = {{0}};
	assert_int_equal(cmt_extract_parse(REPLY, strlen(REPLY), false, &c, &err), 0);
	assert_int_equal(c.n, 2); /* low skipped, the unknown type dropped (§16.6) */
	assert_int_equal(c.item[0].type, CMT_CREATE_ISSUE);
	assert_string_equal(c.item[0].repo, "acme/widgets");
	assert_string_equal(c.item[0].title, "Login times out");
	assert_int_equal(c.item[1].type, CMT_POST_BLUESKY);
	assert_int_equal(c.ndropped_total, 1);
	cmt_list_clear(&c);
	/* social-only: the issue is dropped, the post kept */
	assert_int_equal(cmt_extract_parse(REPLY, strlen(REPLY), true, &c, &err), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.item[0].type, CMT_POST_BLUESKY);
	cmt_list_clear(&c);
	/* prose is not an array */
	assert_int_equal(cmt_extract_parse("none found", 10, false, &c, &err), -1);
	assert_int_equal(c.n, 0);
	assert_int_equal(cmt_extract_parse("[]", 2, false, &c, &err), 0);
	assert_int_equal(c.n, 0);
}

/* --- the peers' part of the prompt (§14.10) ------------------------------------------ */

static void test_peers_context(void **state)
{
	(void)state;
	struct part_peer_note peers[] = {
	        {.name = "Ada", .identity_json = "{\"voice\":\"ignored: self\"}"},
	        {.name = "Ben",
	         .identity_json = "{\"coreValues\":[\"care\"],\"currentInterests\":[\"type "
	                          "systems\",\"caching\"],\"voice\":\"Plain\\nand warm\","
	                          "\"expertise\":[\"C\"],\"recentWork\":\"x\","
	                          "\"soulEssence\":\"Builds small tools.\"}",
	         .reflection = "Short replies land better."},
	        {.name = "Cal", .identity_json = "[1,2]"}, /* not an object: left out */
	        {.name = "Dee", .identity_json = "{not json", .reflection = "Listen first."},
	};
	struct part_workspace_note ws[] = {{.workspace = "acme/widgets",
	                                    .reporter = "Ben",
	                                    .plan = 4,
	                                    .total = 9,
	                                    .completed = 3,
	                                    .blocked = 1,
	                                    .in_progress = 2}};
	char *s = part_peers_context("Ada", peers, 4, ws, 1);
	assert_string_equal(
	        s,
	        "Peers:\n"
	        "- Ben — voice: Plain and warm; interests: type systems, caching; expertise: C; "
	        "essence: Builds small tools.; latest reflection: \"Short replies land better.\"\n"
	        "- Cal\n"
	        "- Dee — latest reflection: \"Listen first.\"\n"
	        "Workspaces:\n"
	        "- acme/widgets: plan 4, 3 of 9 tasks done, 1 blocked, 2 in progress (reported "
	        "by Ben)\n");
	free(s);
	s = part_peers_context("Ada", peers, 1, NULL, 0); /* only self */
	assert_string_equal(s, "");
	free(s);

	/* bounded: long fields cut, and past the byte bound the rest counted */
	char big[2000];
	memset(big, 'r', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	struct part_peer_note many[64];
	char names[64][16];
	for (int i = 0; i < 64; i++) {
		snprintf(names[i], sizeof names[i], "P%02d", i);
		many[i] = (struct part_peer_note){.name = names[i], .reflection = big};
	}
	s = part_peers_context("Ada", many, 64, NULL, 0);
	assert_true(strlen(s) < PART_PEERS_CONTEXT_MAX_BYTES + 2 * PART_PEER_FIELD_MAX_BYTES);
	assert_non_null(strstr(s, "more peers not shown)\n"));
	assert_null(strstr(
	        s, "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"
	           "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"
	           "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"
	           "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"
	           "rrrrrrrrrrrrrrrrrrrrrr"));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_wanted),
	        cmocka_unit_test(test_prompt),
	        cmocka_unit_test(test_reply_read),
	        cmocka_unit_test(test_peers_context),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
