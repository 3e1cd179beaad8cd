/*
 * intent: the host-intent classifier of space-validation.md §2.2 as a
 * table (every rule F, D1–D10, A0–A3, the pinned outcomes, the §16.17
 * departures), the Layer-2 reply reader and the matcher's edges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "modules/participation/intent.h"

#define ACT PART_INTENT_ACTION
#define DIS PART_INTENT_DISCUSSION
#define FU  PART_INTENT_FOLLOW_UP

static const struct {
	const char *text;
	enum part_intent intent;
	bool ambiguous;
	const char *rule;
} cases[] = {
        /* The reference's tests pinned "Can you fix the bug?" as discussion
         * (its '?' wins); a request phrased as a question is a request. */
        {"Can you fix the bug?", ACT, false, "A2"},
        {"Can someone fix the bug", ACT, false, "A2"},
        {"can someone open an issue in acme/widgets for the login timeout?", ACT, false, "A2"},
        {"Could you please review the PR?", ACT, false, "A2"},
        {"Would you look into the failing tests?", ACT, false, "A2"},
        {"Would anyone mind opening an issue for the flaky login test?", ACT, false, "A2"},
        {"could one of you kindly draft the release notes?", ACT, false, "A2"},
        /* asking for opinions, explanations or facts stays a discussion */
        {"Can you share your thoughts on this?", DIS, false, "D1"},
        {"Could you give us your take on caching?", DIS, false, "D1"},
        {"Can you explain why the build fails?", DIS, false, "D1"},
        {"Can we talk about the release schedule?", DIS, false, "D1"},
        {"Let's make sure we handle errors properly", ACT, false, "A1"},
        /* F — follow-ups, anywhere. */
        {"Did you create the issue?", FU, false, "F"},
        {"hey, did you set up the repo", FU, false, "F"},
        {"Where's the link", FU, false, "F"},
        {"where is the PR?", FU, false, "F"},
        {"where are the pull request details", FU, false, "F"},
        {"Still waiting on that", FU, false, "F"},
        {"Any update?", FU, false, "F"},
        {"any news", FU, false, "F"},
        {"I asked earlier", FU, false, "F"},
        {"I told you that already", FU, false, "F"},
        {"Give me the issue", FU, false, "F"}, /* §4.1: never a new request */
        {"Provide a link please", FU, false, "F"},
        {"please provide the full url", FU, false, "F"},
        {"What happened to the plan", FU, false, "F"},
        {"Is it done", FU, false, "F"},
        {"is that done yet?", FU, false, "F"},
        {"Have you pushed it", FU, false, "F"},
        {"Status update?", FU, false, "F"},
        {"ETA?", FU, false, "F"},
        {"What's the status?", FU, false, "F"},
        {"How's it going", FU, false, "F"},
        {"how is the progressing", FU, false, "F"},
        {"Where are we on the issue", FU, false, "F"},
        {"update me", FU, false, "F"},
        {"Any luck", FU, false, "F"},
        {"did it happen", FU, false, "F"},
        {"Were you able to finish", FU, false, "F"},
        /* Typographic apostrophe reads as ' (§16.17). */
        {"where\xE2\x80\x99s the issue", FU, false, "F"},
        /* D1 needs a '?' anywhere. */
        {"Should we add caching?", DIS, false, "D1"},
        {"Is there a better way?", DIS, false, "D1"},
        {"Does that make sense?", DIS, false, "D1"},
        {"Should we add caching", DIS, true, "none"},
        {"Can someone review this?", ACT, false, "A2"},
        /* D2 anchored, backtracking into the longer alternative. */
        {"How do we deploy this", DIS, false, "D2"},
        {"How does caching work", DIS, false, "D2"},
        {"what about the tokens", DIS, false, "D2"},
        /* D3 */
        {"What's your take on this", DIS, false, "D3"},
        {"who's the owner here", DIS, false, "D3"},
        /* D4, D5, D7 need a '?'. */
        {"Give us your thoughts on caching?", DIS, false, "D4"},
        {"Share feedback about the layout?", DIS, false, "D4"},
        {"Any thoughts?", DIS, false, "D5"},
        {"Any concerns before we ship?", DIS, false, "D5"},
        {"This approach makes sense?", DIS, false, "D7"},
        {"Deploying friday, sounds good?", DIS, false, "D7"},
        {"We are on the same page?", DIS, false, "D7"},
        /* D8 */
        {"I think we should build a dashboard", DIS, false, "D8"},
        {"Honestly the grid is fine", DIS, false, "D8"},
        {"in my experience caching helps", DIS, false, "D8"},
        {"I\xE2\x80\x99m curious how this works", DIS, false, "D8"},
        /* D9 unless A0; D10 unless A0. */
        {"We're shipping friday?", DIS, false, "D9"},
        {"Deploy on friday?", ACT, false, "A0"},
        {"https://example.com/article is interesting", DIS, false, "D10"},
        {"Check out https://x.com/post", ACT, false, "A0"},
        /* A0: 42 verbs, anchored, trailing word boundary. */
        {"Create an issue for the prod checklist", ACT, false, "A0"},
        {"  write a plan for the migration  ", ACT, false, "A0"},
        {"set up CI for the repo", ACT, false, "A0"},
        {"Take care of the flaky test", ACT, false, "A0"},
        {"go ahead and merge it", ACT, false, "A0"},
        {"Updates are slow today", DIS, true, "none"},
        /* §16.17 departures: compounds and noun phrases are not commands. */
        {"Post-mortem: the outage last night", DIS, true, "none"},
        {"Open question: do we cache", DIS, true, "none"},
        {"Test coverage is low", DIS, true, "none"},
        {"Create an issue about the status page", ACT, false, "A0"},
        {"please check the eta field in the form", ACT, false, "A1"},
        /* A1 */
        {"Please open an issue", ACT, false, "A1"},
        {"Okay, fix it", ACT, false, "A1"},
        {"okay fix it", ACT, false, "A1"},
        {"just ship it", DIS, true, "none"}, /* ship is not a V38 verb */
        {"let\xE2\x80\x99s fix the login", ACT, false, "A1"},
        /* A2 */
        {"Could one of you please write the plan", ACT, false, "A2"},
        {"would an agent draft the release notes", ACT, false, "A2"},
        /* A3, anywhere */
        {"Team, I need someone to review the PR", ACT, false, "A3"},
        {"I\xE2\x80\x99"
         "d like one of you to draft a plan",
         ACT, false, "A3"},
        /* nothing → Layer 2 */
        {"The login page is broken", DIS, true, "none"},
        {"", DIS, true, "none"},
        {"   ", DIS, true, "none"},
        /* invalid bytes become spaces and do not hide the words */
        {"\xff\xfe create the issue", ACT, false, "A0"},
        /* <*> never crosses a newline: "provide" alone is A0 */
        {"Provide\nthe link", ACT, false, "A0"},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct part_intent_result r;
		part_intent_classify(cases[i].text, strlen(cases[i].text), &r);
		if (r.intent != cases[i].intent || r.ambiguous != cases[i].ambiguous ||
		    strcmp(r.rule, cases[i].rule) != 0)
			fail_msg("case %zu \"%s\": got %s%s rule %s (%s), want %s%s rule %s", i,
			         cases[i].text, part_intent_name(r.intent),
			         r.ambiguous ? " (ambiguous)" : "", r.rule, r.pattern,
			         part_intent_name(cases[i].intent),
			         cases[i].ambiguous ? " (ambiguous)" : "", cases[i].rule);
	}
}

static void test_not_terminated(void **state)
{
	(void)state;
	/* Only len bytes are read: "Create" then garbage past len. */
	const char buf[] = "Create an issue? and more";
	struct part_intent_result r;
	part_intent_classify(buf, 15, &r);
	assert_int_equal(r.intent, ACT);
	assert_string_equal(r.rule, "A0");
	/* A huge text is classified on its first INTENT_MAX_BYTES bytes. */
	size_t n = INTENT_MAX_BYTES * 3;
	char *big = malloc(n);
	memset(big, 'a', n);
	memcpy(big, "Please fix ", 11);
	big[n - 1] = '?';
	part_intent_classify(big, n, &r);
	assert_int_equal(r.intent, ACT); /* the '?' past the cut is not seen */
	assert_string_equal(r.rule, "A1");
	free(big);
}

static const struct {
	const char *reply;
	int rc;
	enum part_intent intent;
} replies[] = {
        {"ACTION_REQUEST", 0, ACT},
        {"action_request.", 0, ACT},
        {"  Action request", 0, ACT},
        {"FOLLOW_UP", 0, FU},
        {"Follow-up", 0, FU},
        {"DISCUSSION", 0, DIS},
        {"DISCUSSION (not ACTION_REQUEST)", 0, DIS}, /* §16.15: the first label wins */
        {"Label: FOLLOW_UP", 0, FU},
        {"", -1, DIS},
        {"maybe", -1, DIS},
        {"ACTION_REQUESTS", -1, DIS},
        {"XDISCUSSION", -1, DIS},
};

static void test_layer2_reply(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++) {
		enum part_intent got = DIS;
		int rc = part_intent_parse_reply(replies[i].reply, &got);
		if (rc != replies[i].rc || (rc == 0 && got != replies[i].intent))
			fail_msg("reply \"%s\": rc %d intent %s", replies[i].reply, rc,
			         part_intent_name(got));
	}
	enum part_intent got;
	assert_int_equal(part_intent_parse_reply(NULL, &got), -1);
}

static void test_matcher(void **state)
{
	(void)state;
	const char *t = "how does it work";
	size_t n = strlen(t);
	assert_true(part_pattern_find("how {do|does}", t, n, true));
	assert_false(part_pattern_find("how {do|doe}", t, n, true));    /* "doe" is mid-word */
	assert_false(part_pattern_find("{how {do|does}}", t, n, true)); /* nested: never */
	assert_false(part_pattern_find("{how|why", t, n, true));        /* malformed */
	assert_true(part_pattern_find("does<*>work", t, n, false));
	assert_false(part_pattern_find("does<*>work", "does it\nwork", 12, false));
	assert_true(part_pattern_find("it", t, n, false));
	assert_false(part_pattern_find("it", t, n, true)); /* anchored: only at the start */
	assert_false(part_pattern_find("wor", t, n, false));
	assert_true(part_pattern_find("w<w>", t, n, false));
}

static void test_normalize(void **state)
{
	(void)state;
	size_t n;
	char *s = part_text_normalize("I\xE2\x80\x99LL\xC2\xA0GO", 10, &n);
	assert_string_equal(s, "i'll go");
	assert_int_equal(n, 7);
	free(s);
	s = part_text_normalize(NULL, 5, &n);
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_table),        cmocka_unit_test(test_not_terminated),
	        cmocka_unit_test(test_layer2_reply), cmocka_unit_test(test_matcher),
	        cmocka_unit_test(test_normalize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
