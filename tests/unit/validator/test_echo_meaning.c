/*
 * Echo detection in room chat, kind by kind: paraphrases by synonyms and
 * other number formats are echoes; a changed figure, another owner, a
 * denial, an opener followed by something new, the same point about
 * something else are not. Each through the validator as the room runs it
 * (host lines are context, no judge: the band is rejected).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

/* "! name: text" host, "> name: text" peer, "= name: text" self. */
static struct echo_window *room(const char *const *lines)
{
	struct echo_window *w = echo_window_new(50);
	for (size_t i = 0; lines[i]; i++) {
		const char *l = lines[i];
		const char *colon = strchr(l, ':');
		assert_non_null(colon);
		char author[32];
		snprintf(author, sizeof author, "%.*s", (int)(colon - l - 2), l + 2);
		echo_window_push(w, author, l[0] != '!', colon + 2);
	}
	return w;
}

/* The validator's rule for cand in a discussion; d->echo holds the scores. */
static const char *judge(struct echo_window *w, const char *cand, struct validator_decision *d)
{
	struct validator_context ctx = {.window = w, .connected_agents = 1};
	validator_validate(cand, &ctx, d);
	return d->rule;
}

static void expect(struct echo_window *w, const char *cand, const char *rule)
{
	struct validator_decision d;
	const char *got = judge(w, cand, &d);
	if (strcmp(got, rule) != 0)
		fail_msg("expected %s, got %s (%s; pair %.2f novelty %.2f): %s", rule, got,
		         d.reason, d.echo.pair, d.echo.novelty, cand);
	validator_decision_clear(&d);
}

/* Each pair of texts reads as the same stems. */
static void expect_same_stems(const char *const (*same)[2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *a = echo_stems_string(same[i][0]), *b = echo_stems_string(same[i][1]);
		if (strcmp(a, b) != 0)
			fail_msg("\"%s\" → %s but \"%s\" → %s", same[i][0], a, same[i][1], b);
		free(a);
		free(b);
	}
}

static const char *const login[] = {
        "! sam: Login is getting hammered by credential stuffing. What do we do?",
        "> juno: Rate-limit the login endpoint per IP, 10 attempts a minute, and lock the account "
        "after 20 failures in an hour.",
        "> kestrel: Per-IP limits alone won't stop it, the botnet rotates addresses.", NULL};

static void test_number_formats_read_as_one(void **state)
{
	static const char *const same[][2] = {
	        {"10k rows", "10,000 rows"},       {"ten thousand rows", "10,000 rows"},
	        {"five minutes", "300 seconds"},   {"5-minute cache", "5 min cache"},
	        {"half an hour", "30 minutes"},    {"two weeks", "14 days"},
	        {"three months", "90 days"},       {"95 percent", "95%"},
	        {"two hundred and twenty", "220"}, {"a month", "30 days"},
	        {"$275m", "$275 million"},         {"2bn rows", "2 billion rows"},
	        {"7 per cent", "7 percent"},       {"£5m", "5 million"},
	};
	expect_same_stems(same, sizeof same / sizeof same[0]);
	char *s = echo_stems_string("the second quarter, a second look, 4.2.1");
	assert_null(strstr(s, "dur:"));
	assert_null(strstr(s, "#0.25"));
	free(s);
	/* "m" is a million only after a currency sign: "5m" may be minutes */
	s = echo_stems_string("a 5m window");
	assert_string_equal(s, "#5 window");
	free(s);
	/* "one" says the figure 1: "3-1" repeats "three-to-one" */
	const char *vote[] = {"The vote in the committee was three-to-one against the change."};
	struct echo_result r;
	echo_evaluate_texts("The vote in the committee was 3-1 against the change.", vote, 1, vote,
	                    1, NULL, &r);
	assert_false(r.new_number);
	assert_false(r.added_number);
	assert_true(r.echo);
}

static void test_negation_without_apostrophe(void **state)
{
	static const char *const same[][2] = {
	        {"we dont cache it", "we don't cache it"},
	        {"it isnt stale", "it isn't stale"},
	        {"the job cant finish", "the job can't finish"},
	        {"the pods wont share it", "the pods won't share it"},
	};
	expect_same_stems(same, sizeof same / sizeof same[0]);
	/* ... so it denies what a peer proposed, as "shouldn't" does */
	static const char *const cache[] = {
	        "! sam: The dashboard is slow at 9am.",
	        "> bea: Cache the dashboard summary per team in Redis.",
	        "> tomas: The export job holds a table lock every morning.", NULL};
	struct echo_window *w = room(cache);
	expect(w, "We shouldnt cache the dashboard summary per team in Redis.", "ok");
	echo_window_free(w);
}

static void test_attribution_carries_no_content(void **state)
{
	/* who said it is not what was said: "told", "according to" are
	 * dropped like "said" */
	static const char *const same[][2] = {
	        {"According to Ada, the cache is stale.", "Ada said the cache is stale."},
	        {"Ada told Bob the cache is stale.", "Ada said to Bob the cache is stale."},
	        {"The runbook stated the cache is stale.", "The runbook said the cache is stale."},
	};
	expect_same_stems(same, sizeof same / sizeof same[0]);
}

static void test_british_spelling(void **state)
{
	static const char *const same[][2] = {
	        {"prioritise the colour of the centre panel",
	         "prioritize the color of the center panel"},
	        {"the organisation analysed its behaviour",
	         "the organization analyzed its behavior"},
	        {"a favourable licence for the programme", "a favorable license for the program"},
	};
	expect_same_stems(same, sizeof same / sizeof same[0]);
	/* words that only look British stay apart */
	char *a = echo_stems_string("four hours"), *b = echo_stems_string("for hours");
	assert_string_not_equal(a, b);
	free(a);
	free(b);
}

static void test_additive_closes_a_clause(void **state)
{
	static const struct {
		const char *text;
		bool additive;
	} cases[] = {
	        {"The e2e suite shares one Redis database too.", true},
	        {"The e2e suite races too and could fail the same way", true},
	        {"Cache the summary as well", true},
	        {"Likewise the export job holds a lock", true},
	        {"The retries are too slow for the export job", false},
	        {"Either cache the summary or precompute it", false},
	        {"Cache the summary as well as the counters", false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct echo_doc d;
		echo_doc_init(&d, cases[i].text, strlen(cases[i].text), NULL, 0);
		if (d.additive != cases[i].additive)
			fail_msg("additive %d, expected %d: %s", d.additive, cases[i].additive,
			         cases[i].text);
		echo_doc_clear(&d);
	}
}

/* The detector's verdict and figure flags for cand against two peers. */
static void expect_figures(const char *const peers[2], const char *cand, bool echo, bool band,
                           bool new_number, bool added_number)
{
	struct echo_result r;
	echo_evaluate_texts(cand, peers, 2, peers, 2, NULL, &r);
	if (r.echo != echo || r.judge_band != band || r.new_number != new_number ||
	    r.added_number != added_number)
		fail_msg("echo %d band %d new %d added %d (%s), expected %d %d %d %d: %s", r.echo,
		         r.judge_band, r.new_number, r.added_number, r.strategy_text, echo, band,
		         new_number, added_number, cand);
}

static void test_added_figure_is_weighed(void **state)
{
	/* A figure beside the same words changes no figure given: the scores
	 * decide, and here the rest restates. */
	const char *const backup[] = {
	        "The nightly backup job failed because the disk on the backup host was full.",
	        "The disk filled up because old snapshots were never pruned."};
	expect_figures(backup,
	               "The nightly backup job failed because the 500 GB disk on the backup host "
	               "was full.",
	               true, false, false, true);
	/* A figure in place of one given changes it. */
	const char *const sized[] = {"The nightly backup job failed because the 500 GB disk on "
	                             "the backup host was full.",
	                             backup[1]};
	expect_figures(sized,
	               "The nightly backup job failed because the 800 GB disk on the backup host "
	               "was full.",
	               false, false, true, false);
	/* Borderline wording with an added figure is new content, not the
	 * band: the same sentence without the figure is borderline. */
	const char *const cache[] = {"Cache the dashboard summary per team in Redis.",
	                             "The export job holds a table lock every morning."};
	expect_figures(cache,
	               "Store each team's dashboard summary in Redis and let the pods read it from "
	               "there.",
	               false, true, false, false);
	expect_figures(cache,
	               "Store each team's dashboard summary in Redis and let the 6 pods read it "
	               "from there.",
	               false, false, false, true);
}

/* The figure a candidate gives, against peer figures: whether it changes
 * one (new_number) once the rest restates. */
static void expect_changed(const char *peer, const char *cand, bool changed)
{
	const char *const peers[] = {peer, "The export job holds a table lock every morning."};
	struct echo_result r;
	echo_evaluate_texts(cand, peers, 2, peers, 2, NULL, &r);
	if (r.new_number != changed)
		fail_msg("new_number %d, expected %d (%s): %s / %s", r.new_number, changed,
		         r.strategy_text, peer, cand);
}

static void test_rounded_figure_is_the_same(void **state)
{
	/* The same quantity written rounder or finer: one hedged, or both an
	 * amount (money, a percentage, millions, a measure). */
	expect_changed("About 1,200 users hit the login error after the deploy.",
	               "1,187 users hit the login error after the deploy.", false);
	expect_changed("Roughly 150 users hit the login error after the deploy.",
	               "152 users hit the login error after the deploy.", false);
	expect_changed("Staging cost $3.17 million last quarter, mostly idle GPU nodes.",
	               "Staging cost $3.2 million last quarter, mostly idle GPU nodes.", false);
	expect_changed("Checkout fails for 0.66 percent of orders since Tuesday.",
	               "Checkout fails for 0.7 per cent of orders since Tuesday.", false);
	expect_changed("Checkout fails for 1.25% of orders since Tuesday.",
	               "Checkout fails for 1.2% of orders since Tuesday.", false);
	expect_changed("The bundle grew to 14.7 MB after the chart library landed.",
	               "The bundle grew to 15 MB after the chart library landed.", false);
	expect_changed("The p99 is ~200 ms on the search endpoint.",
	               "The p99 is 203 ms on the search endpoint.", false);
	/* Another figure stays new: a rounding of neither, an exact count, a
	 * version, a half, a bound, a whole percentage. */
	expect_changed("About 1,200 users hit the login error after the deploy.",
	               "1,100 users hit the login error after the deploy.", true);
	expect_changed("About 200 ms is the p99 on the search endpoint.",
	               "240 ms is the p99 on the search endpoint.", true);
	/* A hedge rounds to two significant digits: "about 60" is 60. */
	expect_changed("About 60 percent of the builds fail on the ARM runners.",
	               "63 percent of the builds fail on the ARM runners.", true);
	expect_changed("Staging cost $3.17 million last quarter, mostly idle GPU nodes.",
	               "Staging cost $3.3 million last quarter, mostly idle GPU nodes.", true);
	expect_changed("Set the pool to 1,750 connections on the primary.",
	               "Set the pool to 1,752 connections on the primary.", true);
	expect_changed("Pin the CI runner to Python 3.12 for the build.",
	               "Pin the CI runner to Python 3.1 for the build.", true);
	expect_changed("Set the retry delay on the webhook to 2.5 seconds.",
	               "Set the retry delay on the webhook to 3 seconds.", true);
	expect_changed("Alert when the p99 is over 200 ms on the search endpoint.",
	               "Alert when the p99 is over 250 ms on the search endpoint.", true);
	expect_changed("Roll the new checkout out to 25% of users first.",
	               "Roll the new checkout out to 20% of users first.", true);
}

static void test_date_is_no_count(void **state)
{
	/* A date does not stand in place of a count, an age or a duration:
	 * an added figure, which the scores weigh. */
	const char *const billing[] = {
	        "The billing service is 12 years old and nobody wants to touch its code.",
	        "The export job holds a table lock every morning."};
	expect_figures(
	        billing,
	        "The billing service was written in 2013 and nobody wants to touch its code.", true,
	        false, false, true);
	const char *const owner[] = {"Ada, 35, has owned the billing service since it started.",
	                             billing[1]};
	expect_figures(owner, "Ada has owned the billing service since it started in 2013.", true,
	               false, false, true);
	/* A day of the month does not stand in place of a duration. */
	const char *const freeze[] = {
	        "The schema freeze ends in two weeks, then the billing rewrite "
	        "starts.",
	        billing[1]};
	expect_figures(freeze, "The schema freeze ends on May 17, then the billing rewrite starts.",
	               true, false, false, true);
	/* A date in place of a date, a count in place of a count: changed. */
	expect_changed("The schema freeze lasts until March 2025, then the billing rewrite starts.",
	               "The schema freeze lasts until March 2026, then the billing rewrite starts.",
	               true);
	expect_changed("The schema freeze ends on May 17, then the billing rewrite starts.",
	               "The schema freeze ends on May 24, then the billing rewrite starts.", true);
	expect_changed("Keep the audit logs for 90 days, since the 2023 policy says so.",
	               "Keep the audit logs for 30 days, since the 2023 policy says so.", true);
	/* Four digits a quantity, not a year: "to", "by", "from" place no time. */
	expect_changed("Raise the rate limit from 1500 to 1800 requests a minute.",
	               "Raise the rate limit from 1500 to 2000 requests a minute.", true);
	expect_changed("Raise the rate limit to 1500 requests a minute.",
	               "Raise the rate limit to 2000 requests a minute.", true);
}

static void test_converted_measure_is_the_same(void **state)
{
	/* A mass or length in the other system, written rounded. */
	expect_changed("Each rack shelf holds 260 pounds, so the new UPS fits on one.",
	               "Each rack shelf holds 117 kg, so the new UPS fits on one.", false);
	expect_changed("The fibre run from the office to the data centre is 5 km.",
	               "The fibre run from the office to the data centre is 3 miles.", false);
	expect_changed("Keep the cable under 100 feet between the switch and the rack.",
	               "Keep the cable under 30 metres between the switch and the rack.", false);
	/* Another amount stays new, in either system. */
	expect_changed("Each rack shelf holds 260 pounds, so the new UPS fits on one.",
	               "Each rack shelf holds 100 kg, so the new UPS fits on one.", true);
	expect_changed("The fibre run from the office to the data centre is 5 km.",
	               "The fibre run from the office to the data centre is 5 miles.", true);
	expect_changed("The crate on the loading dock weighs 1,200 pounds.",
	               "The crate on the loading dock weighs 1,100 pounds.", true);
	expect_changed("The crate on the loading dock weighs 1,200 pounds.",
	               "The crate on the loading dock weighs 1,200 kg.", true);
}

static void test_synonym_paraphrase_is_echo(void **state)
{
	struct echo_window *w = room(login);
	expect(w,
	       "Throttle sign-in per IP address to ten tries a minute and freeze the account after "
	       "twenty failed attempts in an hour.",
	       "semantic_echo");
	echo_window_free(w);

	static const char *const speed[] = {
	        "! sam: What should the team optimise for this quarter?",
	        "> ada: Speed of delivery matters most this quarter, small releases every week.",
	        "> bob: And the weekly releases need a rollback that takes one command.", NULL};
	w = room(speed);
	expect(w, "Shipping fast matters most this quarter: small releases every week.",
	       "semantic_echo");
	echo_window_free(w);

	static const char *const backfill[] = {
	        "! sam: How do we backfill the new column?",
	        "> ada: Backfill it at night in 10,000-row batches so the replica keeps up.",
	        "> bob: The replica lag alarm fires at 30 seconds.", NULL};
	w = room(backfill);
	expect(w, "Backfilling at night in 10k-row batches keeps the replica up.", "semantic_echo");
	echo_window_free(w);
}

static void test_changed_figure_is_new(void **state)
{
	static const char *const cache[] = {
	        "! sam: The dashboard is slow at 9am.",
	        "> bea: Cache the dashboard summary for 5 minutes per team.",
	        "> tomas: Keep the cache in Redis so all six pods share it.", NULL};
	struct echo_window *w = room(cache);
	struct validator_decision d;
	assert_string_equal(judge(w, "Cache the dashboard summary for 30 seconds per team.", &d),
	                    "ok");
	assert_true(d.echo.new_number);
	validator_decision_clear(&d);
	/* The same figure in other words is no new figure. */
	assert_string_equal(judge(w, "Cache the dashboard summary per team for five minutes.", &d),
	                    "semantic_echo");
	assert_false(d.echo.new_number);
	validator_decision_clear(&d);
	/* A figure the host gave is not new when an agent repeats it. */
	static const char *const hosted[] = {
	        "! sam: The email queue holds 2 million jobs.",
	        "> felix: A bad deploy made every job retry five times.",
	        "> juno: Purge the retries and run 16 workers until it drains.", NULL};
	echo_window_free(w);
	w = room(hosted);
	judge(w, "Purge the retries of the 2 million jobs and run 16 workers until it drains.", &d);
	assert_false(d.echo.new_number);
	validator_decision_clear(&d);
	echo_window_free(w);
}

static void test_other_owner_is_new(void **state)
{
	static const char *const migration[] = {
	        "! sam: The users table migration needs an owner.",
	        "> ada: I'll take the users table migration and run it tonight in batches.",
	        "> bob: It has to stay online, signups write to users all the time.", NULL};
	struct echo_window *w = room(migration);
	struct validator_decision d;
	assert_string_equal(
	        judge(w, "Bob takes the users table migration tonight, in batches.", &d), "ok");
	assert_true(d.echo.new_owner);
	validator_decision_clear(&d);
	assert_string_equal(judge(w, "Bob, can you run the users table migration tonight?", &d),
	                    "ok");
	assert_true(d.echo.new_owner);
	validator_decision_clear(&d);
	/* A member who has not spoken in the window is known from the room's
	 * member list. */
	static const char *const quiet[] = {
	        "! sam: The users table migration needs an owner.",
	        "> ada: I'll take the users table migration and run it tonight in batches.", NULL};
	struct echo_window *q = room(quiet);
	const char *members[] = {"ada", "cal"};
	struct validator_context ctx = {
	        .window = q, .connected_agents = 2, .members = members, .n_members = 2};
	validator_validate("Cal takes the users table migration tonight in batches.", &ctx, &d);
	assert_string_equal(d.rule, "ok");
	assert_true(d.echo.new_owner);
	validator_decision_clear(&d);
	echo_window_free(q);
	/* The owner the room already has: a restatement. */
	assert_string_equal(
	        judge(w, "So Ada takes the users table migration tonight, in batches.", &d),
	        "semantic_echo");
	assert_false(d.echo.new_owner);
	validator_decision_clear(&d);
	echo_window_free(w);
}

static void test_denial_leaves_the_band(void **state)
{
	static const char *const backups[] = {
	        "! sam: When did we last test a restore?",
	        "> kestrel: We only check that the backup file exists; nobody has restored one.",
	        "> omar: A restore of the 800 GB main database takes about 6 hours.", NULL};
	struct echo_window *w = room(backups);
	struct validator_decision d;
	assert_string_equal(
	        judge(w, "A restore of the 800 GB main database in 6 hours is not acceptable.", &d),
	        "ok");
	assert_false(d.echo.echo);
	assert_false(d.echo.judge_band);
	validator_decision_clear(&d);
	/* The sentence denied outright. */
	static const char *const cache[] = {
	        "> bea: We should cache the portfolio endpoint responses.",
	        "> tomas: The upstream refreshes every sixty seconds.", NULL};
	echo_window_free(w);
	w = room(cache);
	assert_string_equal(judge(w, "We should not cache the portfolio endpoint responses.", &d),
	                    "ok");
	validator_decision_clear(&d);
	echo_window_free(w);
}

static void test_openers_judge_what_follows(void **state)
{
	struct echo_window *w = room(login);
	expect(w,
	       "Building on that, add a CAPTCHA after the third failure so people can still get "
	       "in.",
	       "ok");
	expect(w, "To add: the stuffing traffic shares one TLS fingerprint, the WAF can drop it.",
	       "ok");
	expect(w,
	       "Building on that, rate-limit login per IP at ten attempts a minute and lock "
	       "accounts "
	       "after twenty failures an hour.",
	       "echo_opener");
	expect(w, "Exactly!", "echo_opener");
	expect(w, "Great point, Juno.", "echo_opener");
	echo_window_free(w);
	/* With nothing to compare with, the opener alone decides. */
	struct validator_context ctx = {.connected_agents = 1};
	struct validator_decision d;
	validator_validate("To add: the WAF can drop that traffic by fingerprint.", &ctx, &d);
	assert_string_equal(d.rule, "echo_opener");
	validator_decision_clear(&d);
}

static void test_repeated_question(void **state)
{
	static const char *const goals[] = {"! sam: Dashboard caching ideas?",
	                                    "> bea: Cache the summary for five minutes per team.",
	                                    "> omar: How do we invalidate the summary when someone "
	                                    "edits a goal during the day?",
	                                    NULL};
	struct echo_window *w = room(goals);
	expect(w, "What happens to the summary cache when someone changes a goal during the day?",
	       "semantic_echo");
	/* A question about what was stated asks something new. */
	expect(w, "Does the cache key include the team's time zone?", "ok");
	echo_window_free(w);
}

static void test_same_point_elsewhere(void **state)
{
	static const char *const ci[] = {
	        "! sam: Why is CI red?",
	        "> omar: Three integration tests share one Postgres database and race on the same "
	        "rows.",
	        "> bea: A schema per test would fix it for ten seconds of setup.", NULL};
	struct echo_window *w = room(ci);
	struct validator_decision d;
	assert_string_equal(
	        judge(w, "The e2e suite shares one Redis database too and could race the same way.",
	              &d),
	        "ok");
	assert_true(d.echo.transfer);
	validator_decision_clear(&d);
	echo_window_free(w);
}

static int teardown(void **state)
{
	echo_shutdown();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_number_formats_read_as_one),
	        cmocka_unit_test(test_synonym_paraphrase_is_echo),
	        cmocka_unit_test(test_changed_figure_is_new),
	        cmocka_unit_test(test_added_figure_is_weighed),
	        cmocka_unit_test(test_rounded_figure_is_the_same),
	        cmocka_unit_test(test_date_is_no_count),
	        cmocka_unit_test(test_converted_measure_is_the_same),
	        cmocka_unit_test(test_negation_without_apostrophe),
	        cmocka_unit_test(test_attribution_carries_no_content),
	        cmocka_unit_test(test_british_spelling),
	        cmocka_unit_test(test_additive_closes_a_clause),
	        cmocka_unit_test(test_other_owner_is_new),
	        cmocka_unit_test(test_denial_leaves_the_band),
	        cmocka_unit_test(test_openers_judge_what_follows),
	        cmocka_unit_test(test_repeated_question),
	        cmocka_unit_test(test_same_point_elsewhere),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
