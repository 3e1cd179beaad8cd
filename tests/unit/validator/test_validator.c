/*
 * validator: the 14 checks, their order and trigger conditions (spec §9),
 * the auto-trim (1b), platform limits, the judge hook, and the §15.4
 * phrase and sentence vectors.
 *
 * §15.4 vectors that we deliberately decide differently (🐞 in the spec,
 * fixed per §16.10 / §16.17):
 *   "  - indented bullet"           reference: none  → here: list
 *   "I’ll open…" (U+2019)           reference: none  → here: empty_promise
 *   "Let me know what you think…"   reference: empty_promise → here: none
 *   "To address the caching…"       reference: echo opener → here: none
 *   "Exactly how would that work…?" reference: echo opener → here: none
 *   "I agreed last week…"           reference: echo opener → here: none
 *   "When it does fail…"            reference: deference → here: none
 *   "Where should we draw the line…?" reference: repo amnesia → here: none
 *   "We should have tests…"         reference: meta → here: none
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/decisions/decision.h"
#include "modules/validator/validator.h"

static const char *check(const char *text, const struct validator_context *ctx,
                         enum validator_verdict *v)
{
	struct validator_decision d;
	enum validator_verdict got = validator_validate(text, ctx, &d);
	if (v)
		*v = got;
	const char *rule = d.rule;
	validator_decision_clear(&d);
	return rule;
}

static struct validator_context action_ctx(void)
{
	return (struct validator_context){
	        .mode = VALIDATOR_MODE_ACTION,
	        .is_action_owner = false,
	        .pending_request = "Create an issue for the prod checklist",
	        .detected_repo = "internet-development/www",
	        .connected_agents = 3,
	};
}

static void test_phrase_vectors(void **state)
{
	struct validator_context a = action_ctx();
	struct validator_context disc = {.connected_agents = 3};
	enum validator_verdict v;
	assert_string_equal(check("- first point\n- second", &disc, &v), "list");
	assert_int_equal(v, VALIDATOR_REJECT);
	assert_string_equal(check("\xe2\x80\xa2 bullet dot", &disc, NULL), "list");
	assert_string_equal(check("Intro:\n1. one\n2. two", &disc, NULL), "list");
	assert_string_equal(check("We shipped 2. Then more", &disc, NULL), "ok");
	assert_string_equal(check("I'll open an issue for that.", &disc, NULL), "empty_promise");
	struct validator_context c1 = a;
	c1.n_commitments = 1;
	assert_string_equal(check("I'll open an issue for that.", &c1, NULL), "non_owner_action");
	assert_string_equal(check("I can open that issue.", &disc, NULL), "ok");
	assert_string_equal(
	        check("On \"caching\": it is the wrong layer to fix this.", &disc, NULL),
	        "echo_opener");
	assert_string_equal(check("The acceptance criteria are unclear to me.", &a, NULL),
	                    "meta_discussion");
	assert_string_equal(check("Totally, one more thing about tokens.", &a, NULL),
	                    "scope_inflation");
	assert_string_equal(check("I'm drafting the body now.", &a, NULL), "non_owner_action");
	assert_string_equal(
	        check("Rebecca, the spacing grid constrains more than it enables.", &a, NULL),
	        "ok");
}

static void test_fixed_false_positives(void **state)
{
	struct validator_context a = action_ctx();
	struct validator_context disc = {.connected_agents = 3};
	assert_string_equal(check("  - indented bullet", &disc, NULL), "list");
	assert_string_equal(check("I\xe2\x80\x99ll open the issue now.", &disc, NULL),
	                    "empty_promise");
	assert_string_equal(check("Let me know what you think of the grid.", &disc, NULL), "ok");
	assert_string_equal(
	        check("To address the caching question, the TTL is per route.", &disc, NULL), "ok");
	assert_string_equal(check("Exactly how would that work with two caches?", &disc, NULL),
	                    "ok");
	assert_string_equal(check("I agreed last week, but the numbers changed.", &disc, NULL),
	                    "ok");
	assert_string_equal(check("When it does fail, the retry loop spins.", &a, NULL), "ok");
	assert_string_equal(check("Where should we draw the line on retries?", &a, NULL), "ok");
	assert_string_equal(check("We should have tests for the parser.", &a, NULL), "ok");
	/* the phrases themselves still work */
	assert_string_equal(check("Let me open it.", &disc, NULL), "empty_promise");
	assert_string_equal(check("Exactly. The grid helps.", &disc, NULL), "echo_opener");
	assert_string_equal(check("To add, the grid helps.", &disc, NULL), "echo_opener");
	assert_string_equal(check("When Marvin opens it, I can review.", &a, NULL), "deference");
	assert_string_equal(check("Which repo is this for?", &a, NULL), "repo_amnesia");
	assert_string_equal(check("The issue should cover env vars.", &a, NULL), "meta_discussion");
	/* typographic quotes and dashes normalise too */
	assert_string_equal(check("On \xe2\x80\x9c"
	                          "caching\xe2\x80\x9d \xe2\x80\x94 it works.",
	                          &disc, NULL),
	                    "echo_opener");
	/* full-width letters fold (NFKC) */
	assert_string_equal(check("\xef\xbc\xa9'll open it.", &disc, NULL), "empty_promise");
}

static void test_sentence_counter(void **state)
{
#define SC(s) validator_count_sentences(s, strlen(s))
	assert_int_equal(SC("One. Two! Three?"), 3);
	assert_int_equal(SC("See https://vercel.com/design. Nice."), 1);
	assert_int_equal(SC("a; b; c"), 2);
	assert_int_equal(SC("Wait... really?! Yes."), 3);
	assert_int_equal(SC("e.g. this"), 1);
	assert_int_equal(SC(""), 0);
#undef SC
}

static void test_measure_units(void **state)
{
	const char *flag = "\xf0\x9f\x87\xba\xf0\x9f\x87\xb8"; /* US flag: 2 code points */
	assert_int_equal(validator_measure(flag, strlen(flag), VALIDATOR_UNIT_GRAPHEMES), 1);
	assert_int_equal(validator_measure(flag, strlen(flag), VALIDATOR_UNIT_CODEPOINTS), 2);
	assert_int_equal(validator_measure(flag, strlen(flag), VALIDATOR_UNIT_UTF16), 4);
	assert_int_equal(validator_measure("caf\xc3\xa9", 5, VALIDATOR_UNIT_UTF16), 4);
}

static void test_bluesky_limit_and_trim(void **state)
{
	char text[2048] = "";
	/* 30 sentences of 12 graphemes = 360 graphemes > 300 */
	for (int i = 0; i < 30; i++)
		strcat(text, "Short point. ");
	struct validator_context bsky = {.platform = VALIDATOR_PLATFORM_BLUESKY,
	                                 .mode = VALIDATOR_MODE_ACTION};
	struct validator_decision d;
	assert_int_equal(validator_validate(text, &bsky, &d), VALIDATOR_REJECT);
	assert_string_equal(d.rule, "too_long");
	assert_false(d.salvage);
	assert_int_equal(d.length, 390);
	validator_decision_clear(&d);

	bsky.n_commitments = 1; /* action + commitments: salvage */
	validator_validate(text, &bsky, &d);
	assert_string_equal(d.rule, "too_long");
	assert_true(d.salvage);
	validator_decision_clear(&d);

	bsky.n_commitments = 0;
	bsky.mode = VALIDATOR_MODE_DISCUSSION; /* discussion, no commitments: trim */
	assert_int_equal(validator_validate(text, &bsky, &d), VALIDATOR_TRIM);
	assert_string_equal(d.rule, "trimmed");
	assert_non_null(d.text);
	size_t g = validator_measure(d.text, strlen(d.text), VALIDATOR_UNIT_GRAPHEMES);
	assert_true(g <= 300 && g > 280);
	assert_int_equal(strncmp(d.text, "Short point. Short point.", 25), 0);
	validator_decision_clear(&d);

	/* one sentence longer than the limit cannot be trimmed */
	char one[400];
	memset(one, 'a', 350);
	one[350] = '\0';
	assert_int_equal(validator_validate(one, &bsky, &d), VALIDATOR_REJECT);
	assert_string_equal(d.rule, "too_long");
	validator_decision_clear(&d);
}

static void test_trim_keeps_fragment_and_rechecks(void **state)
{
	struct validator_limits lim = {40, VALIDATOR_UNIT_UTF16, 2, false};
	struct validator_context ctx = {.limits = &lim};
	struct validator_decision d;
	/* §16.10: a trailing fragment without punctuation is a chunk too */
	assert_int_equal(validator_validate("First one. Second one", &ctx, &d), VALIDATOR_ACCEPT);
	validator_decision_clear(&d);
	assert_int_equal(validator_validate("First one. Second one. Third one. Fourth", &ctx, &d),
	                 VALIDATOR_TRIM);
	assert_string_equal(d.text, "First one. Second one.");
	validator_decision_clear(&d);
	/* later checks inspect the trimmed text: the promise was cut away */
	assert_int_equal(validator_validate("Grid is fine. Tables too. I'll open it.", &ctx, &d),
	                 VALIDATOR_TRIM);
	assert_string_equal(d.text, "Grid is fine. Tables too.");
	validator_decision_clear(&d);
	/* ...and a promise kept in the trimmed text is still rejected */
	assert_int_equal(validator_validate("I'll open it. Tables too. Grid is fine.", &ctx, &d),
	                 VALIDATOR_REJECT);
	assert_string_equal(d.rule, "empty_promise");
	assert_null(d.text);
	validator_decision_clear(&d);
}

static void test_github_allows_lists(void **state)
{
	struct validator_context gh = {.platform = VALIDATOR_PLATFORM_GITHUB};
	assert_string_equal(check("Plan:\n- env vars\n- smoke tests", &gh, NULL), "ok");
	const struct validator_limits *l = validator_limits_for(VALIDATOR_PLATFORM_GITHUB);
	assert_int_equal(l->max_len, 65536);
	assert_int_equal(validator_limits_for(VALIDATOR_PLATFORM_BLUESKY)->max_len, 300);
	assert_int_equal(validator_limits_for(VALIDATOR_PLATFORM_SPACE)->max_len, 50000);
}

static void test_first_rejection_wins(void **state)
{
	struct validator_context a = action_ctx();
	/* list (2) beats empty promise (3), echo opener (4), deference (8) */
	assert_string_equal(check("- I agree, I'll wait for Marvin", &a, NULL), "list");
	/* empty promise (3) beats echo opener (4) */
	assert_string_equal(check("Great point, I'll do it.", &a, NULL), "empty_promise");
	/* echo opener (4) beats role budget (7) */
	a.own_msgs = 10;
	assert_string_equal(check("Great point about caching.", &a, NULL), "echo_opener");
	assert_string_equal(check("Caching helps.", &a, NULL), "role_budget");
}

static void test_commitments_skip_and_salvage(void **state)
{
	struct validator_context a = action_ctx();
	a.n_commitments = 1;
	a.own_msgs = 99;
	a.agent_msgs_since_host = 99;
	a.role = VALIDATOR_ROLE_OBSERVER;
	a.is_action_owner = true;
	struct validator_decision d;
	/* 3, 7, 10, 11, 13, 14 need no commitments: all skipped */
	assert_int_equal(validator_validate("The acceptance criteria, one more thing.", &a, &d),
	                 VALIDATOR_ACCEPT);
	validator_decision_clear(&d);
	validator_validate("Absolutely, the grid.", &a, &d); /* 4 salvages */
	assert_string_equal(d.rule, "echo_opener");
	assert_true(d.salvage);
	validator_decision_clear(&d);
	validator_validate("Happy to review once it lands.", &a, &d); /* 8 salvages */
	assert_string_equal(d.rule, "deference");
	assert_true(d.salvage);
	validator_decision_clear(&d);
	validator_validate("What repo is that?", &a, &d); /* 9 salvages */
	assert_string_equal(d.rule, "repo_amnesia");
	assert_true(d.salvage);
	validator_decision_clear(&d);
	a.is_action_owner = false; /* 12 never salvages */
	validator_validate("I'm filing it now.", &a, &d);
	assert_string_equal(d.rule, "non_owner_action");
	assert_false(d.salvage);
	validator_decision_clear(&d);
	/* repo amnesia needs a detected repo; 8–12 need action mode */
	a.detected_repo = NULL;
	assert_string_equal(check("What repo is that?", &a, NULL), "ok");
	a.mode = VALIDATOR_MODE_DISCUSSION;
	assert_string_equal(check("Happy to review once it lands.", &a, NULL), "ok");
	assert_string_equal(check("I'm filing it now.", &a, NULL), "ok");
}

static void test_budgets_saturation_observer(void **state)
{
	struct validator_context c = {.mode = VALIDATOR_MODE_ACTION, .connected_agents = 3};
	/* §5.3 budgets: actor 3, reviewer 2, observer 1; discussion ×2 */
	c.own_msgs = 2;
	assert_string_equal(check("Caching helps here.", &c, NULL), "ok");
	c.own_msgs = 3;
	assert_string_equal(check("Caching helps here.", &c, NULL), "role_budget");
	c.role = VALIDATOR_ROLE_REVIEWER;
	c.own_msgs = 2;
	assert_string_equal(check("Caching helps here.", &c, NULL), "role_budget");
	c.mode = VALIDATOR_MODE_DISCUSSION;
	assert_string_equal(check("Caching helps here.", &c, NULL), "ok");
	c.own_msgs = 4;
	assert_string_equal(check("Caching helps here.", &c, NULL), "role_budget");
	/* alone in the room: no budget */
	c.connected_agents = 1;
	assert_string_equal(check("Caching helps here.", &c, NULL), "ok");

	/* §7 saturation: T_sat = 4 + N (+4 in discussion) */
	struct validator_context s = {.mode = VALIDATOR_MODE_ACTION, .connected_agents = 2};
	s.agent_msgs_since_host = 5;
	assert_string_equal(check("Caching helps here.", &s, NULL), "ok");
	s.agent_msgs_since_host = 6;
	assert_string_equal(check("Caching helps here.", &s, NULL), "saturated");
	s.mode = VALIDATOR_MODE_DISCUSSION;
	assert_string_equal(check("Caching helps here.", &s, NULL), "ok");
	s.agent_msgs_since_host = 10;
	assert_string_equal(check("Caching helps here.", &s, NULL), "saturated");
	s.connected_agents = 8;
	s.agent_msgs_since_host = 15;
	assert_string_equal(check("Caching helps here.", &s, NULL), "ok");
	s.agent_msgs_since_host = 16;
	assert_string_equal(check("Caching helps here.", &s, NULL), "saturated");

	/* §5.4 observer: 3 in action, 5 in discussion */
	struct validator_context o = {.mode = VALIDATOR_MODE_ACTION,
	                              .role = VALIDATOR_ROLE_OBSERVER,
	                              .connected_agents = 8};
	o.agent_msgs_since_host = 2;
	assert_string_equal(check("Caching helps here.", &o, NULL), "ok");
	o.agent_msgs_since_host = 3;
	assert_string_equal(check("Caching helps here.", &o, NULL), "observer_silence");
	o.mode = VALIDATOR_MODE_DISCUSSION;
	o.agent_msgs_since_host = 4;
	assert_string_equal(check("Caching helps here.", &o, NULL), "ok");
	o.agent_msgs_since_host = 5;
	assert_string_equal(check("Caching helps here.", &o, NULL), "observer_silence");
}

static void test_preconditions(void **state)
{
	struct validator_context c = {0};
	assert_string_equal(check("", &c, NULL), "empty");
	assert_string_equal(check(" \t\n\xc2\xa0", &c, NULL), "empty");
	assert_string_equal(check(NULL, &c, NULL), "empty");
	assert_string_equal(check("bad \xff byte", &c, NULL), "invalid_utf8");
	assert_string_equal(check("surrogate \xed\xa0\x80", &c, NULL), "invalid_utf8");
	char *big = malloc(VALIDATOR_INPUT_MAX_BYTES + 10);
	memset(big, 'a', VALIDATOR_INPUT_MAX_BYTES + 9);
	big[VALIDATOR_INPUT_MAX_BYTES + 9] = '\0';
	assert_string_equal(check(big, &c, NULL), "too_long");
	free(big);
	assert_string_equal(check("fine", NULL, NULL), "ok");
}

/* --- judge -------------------------------------------------------------- */

struct fake_judge {
	int calls;
	size_t window_n;
	char first[128];
	void (*done)(void *, int, const char *);
	void *done_ud;
};

static void fake_ask(void *ud, const char *candidate, const char *const *window, size_t n,
                     void (*done)(void *done_ud, int verdict, const char *reason), void *done_ud)
{
	struct fake_judge *j = ud;
	j->calls++;
	j->window_n = n;
	snprintf(j->first, sizeof j->first, "%s", n ? window[0] : "");
	j->done = done; /* answer later, like a model call */
	j->done_ud = done_ud;
}

struct answer {
	int verdict;
	char reason[64];
	int fired;
};

static void on_done(void *ud, int verdict, const char *reason)
{
	struct answer *a = ud;
	a->verdict = verdict;
	snprintf(a->reason, sizeof a->reason, "%s", reason ? reason : "");
	a->fired++;
}

static struct echo_window *judge_window(void)
{
	struct echo_window *w = echo_window_new(50);
	echo_window_push(w, "marvin", true,
	                 "Locking the gaps between components is what makes the spacing grid "
	                 "valuable");
	echo_window_push(w, "rebecca", true,
	                 "Dark mode color tokens still confuse me when switching themes");
	echo_window_push(w, "peterben", true,
	                 "Layout decisions get easier with fixed component gaps");
	return w;
}

static const char *band_text =
        "The spacing grid locks gaps between components which removes layout guesswork";

static void test_judge_refer_and_resume(void **state)
{
	struct echo_window *w = judge_window();
	struct fake_judge fj = {0};
	struct validator_judge judge = {fake_ask, &fj};
	struct validator_context ctx = {.window = w, .judge = &judge, .connected_agents = 3};
	struct validator_decision d;

	assert_int_equal(validator_validate(band_text, &ctx, &d), VALIDATOR_REFER);
	assert_string_equal(d.rule, "semantic_echo_judge");
	assert_true(d.echo_ran && d.echo.judge_band && !d.echo.echo);
	struct answer ans = {0};
	assert_int_equal(validator_refer(&ctx, band_text, on_done, &ans), 0);
	assert_int_equal(fj.calls, 1);
	assert_int_equal(fj.window_n, 3);
	assert_non_null(strstr(fj.first, "Locking the gaps"));
	assert_int_equal(ans.fired, 0); /* asynchronous: nothing yet */
	fj.done(fj.done_ud, 1, "same point as marvin");
	assert_int_equal(ans.fired, 1);
	assert_int_equal(validator_resume(band_text, &ctx, ans.verdict, ans.reason, &d),
	                 VALIDATOR_REJECT);
	assert_string_equal(d.rule, "semantic_echo_judge");
	assert_non_null(strstr(d.reason, "same point as marvin"));
	validator_decision_clear(&d);

	/* judge says no → the remaining checks run (and pass) */
	validator_validate(band_text, &ctx, &d);
	assert_int_equal(validator_resume(band_text, &ctx, 0, NULL, &d), VALIDATOR_ACCEPT);
	validator_decision_clear(&d);
	/* judge error fails open, but later checks still apply */
	ctx.agent_msgs_since_host = 20;
	validator_validate(band_text, &ctx, &d);
	assert_int_equal(validator_resume(band_text, &ctx, -1, "timeout", &d), VALIDATOR_REJECT);
	assert_string_equal(d.rule, "saturated");
	validator_decision_clear(&d);

	/* no judge: the ensemble decides the band (silence) */
	ctx.judge = NULL;
	ctx.agent_msgs_since_host = 0;
	assert_int_equal(validator_validate(band_text, &ctx, &d), VALIDATOR_REJECT);
	assert_string_equal(d.rule, "semantic_echo");
	assert_int_equal(validator_refer(&ctx, band_text, on_done, &ans), -1);
	validator_decision_clear(&d);
	/* commitments skip the echo checks entirely */
	ctx.n_commitments = 1;
	assert_int_equal(validator_validate(band_text, &ctx, &d), VALIDATOR_ACCEPT);
	assert_false(d.echo_ran);
	validator_decision_clear(&d);
	echo_window_free(w);
}

static void test_semantic_echo_and_new_content(void **state)
{
	struct echo_window *w = echo_window_new(50);
	echo_window_push(w, "host", false, "The portfolio page times out at market open.");
	echo_window_push(w, "marvin", true,
	                 "Caching the portfolio responses for five minutes would absorb the burst "
	                 "traffic at market open.");
	struct validator_context ctx = {.window = w, .connected_agents = 2};
	struct validator_decision d;
	validator_validate(
	        "Caching portfolio responses for five minutes absorbs the burst at market "
	        "open.",
	        &ctx, &d);
	assert_int_equal(d.verdict, VALIDATOR_REJECT);
	assert_string_equal(d.rule, "semantic_echo");
	assert_true(d.echo.echo);
	validator_decision_clear(&d);
	validator_validate("The timeouts start at 09:30:02, which is the rebalance job, not user "
	                   "traffic.",
	                   &ctx, &d);
	assert_int_equal(d.verdict, VALIDATOR_ACCEPT);
	assert_true(d.echo_ran);
	assert_false(d.echo.echo);
	validator_decision_clear(&d);
	echo_window_free(w);
}

/* An echo opener followed by the host's own request is no answer; the
 * same opener followed by something new is a contribution. */
static void test_opener_repeating_the_host(void **state)
{
	(void)state;
	struct echo_window *w = echo_window_new(50);
	echo_window_push(w, "host", false,
	                 "Can someone write up a plan for the cache eviction policy in "
	                 "acme/widgets (round 7).");
	echo_window_push(w, "Eve", true, "I can take the plan for the eviction policy.");
	const char *members[] = {"Eve", "Cal"};
	struct validator_context ctx = {
	        .window = w, .connected_agents = 3, .members = members, .n_members = 2};
	struct validator_decision d;
	validator_validate(
	        "Great point, Eve \xe2\x80\x94 Can someone write up a plan for the cache "
	        "eviction policy in acme/widgets (round 7).",
	        &ctx, &d);
	assert_int_equal(d.verdict, VALIDATOR_REJECT);
	assert_string_equal(d.rule, "echo_opener");
	validator_decision_clear(&d);
	validator_validate("Great point, Eve \xe2\x80\x94 the eviction should be LRU with a TTL of "
	                   "thirty seconds for the session keys.",
	                   &ctx, &d);
	assert_int_equal(d.verdict, VALIDATOR_ACCEPT);
	validator_decision_clear(&d);
	/* the name the opener addresses, set apart by a dash, gives nobody
	 * a task: the rest repeats Ben's message */
	echo_window_push(
	        w, "Ben", true,
	        "Great point, Cal \xe2\x80\x94 Can someone draft up a proposal for the cache "
	        "eviction policy in acme/widgets (round 7).");
	const char *three[] = {"Eve", "Cal", "Ben"};
	ctx.members = three;
	ctx.n_members = 3;
	validator_validate("Great point, Ben \xe2\x80\x94 \xe2\x80\x94 Can someone draft up a "
	                   "proposal for the cache eviction policy in acme/widgets (round 7).",
	                   &ctx, &d);
	assert_int_equal(d.verdict, VALIDATOR_REJECT);
	assert_string_equal(d.rule, "echo_opener");
	assert_false(d.echo.new_owner);
	validator_decision_clear(&d);
	echo_window_free(w);
}

static int teardown(void **state)
{
	echo_shutdown();
	return 0;
}

/* The validator's outcome in the one decision shape of every stage. */
static void test_to_decision(void **state)
{
	(void)state;
	struct validator_decision vd;
	struct decision d;
	memset(&vd, 0, sizeof vd);
	vd.verdict = VALIDATOR_ACCEPT;
	vd.rule = "ok";
	validator_to_decision(&vd, &d);
	assert_int_equal(d.verdict, VERDICT_APPROVE);
	assert_string_equal(d.rule, "ok");
	assert_string_equal(d.reason, "approved as written");
	vd.verdict = VALIDATOR_TRIM;
	vd.rule = "trim";
	snprintf(vd.reason, sizeof vd.reason, "trimmed to 2 sentences");
	validator_to_decision(&vd, &d);
	assert_int_equal(d.verdict, VERDICT_EDIT);
	assert_string_equal(d.reason, "trimmed to 2 sentences");
	vd.verdict = VALIDATOR_REJECT;
	vd.rule = "too_long";
	validator_to_decision(&vd, &d);
	assert_int_equal(d.verdict, VERDICT_REJECT);
	assert_string_equal(d.rule, "too_long");
	vd.verdict = VALIDATOR_REFER;
	vd.rule = "echo_borderline";
	validator_to_decision(&vd, &d);
	assert_int_equal(d.verdict, VERDICT_REJECT);
	assert_non_null(strstr(d.reason, "no judge"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_to_decision),
	        cmocka_unit_test(test_phrase_vectors),
	        cmocka_unit_test(test_fixed_false_positives),
	        cmocka_unit_test(test_sentence_counter),
	        cmocka_unit_test(test_measure_units),
	        cmocka_unit_test(test_bluesky_limit_and_trim),
	        cmocka_unit_test(test_trim_keeps_fragment_and_rechecks),
	        cmocka_unit_test(test_github_allows_lists),
	        cmocka_unit_test(test_first_rejection_wins),
	        cmocka_unit_test(test_commitments_skip_and_salvage),
	        cmocka_unit_test(test_budgets_saturation_observer),
	        cmocka_unit_test(test_preconditions),
	        cmocka_unit_test(test_judge_refer_and_resume),
	        cmocka_unit_test(test_semantic_echo_and_new_content),
	        cmocka_unit_test(test_opener_repeating_the_host),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
