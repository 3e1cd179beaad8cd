/*
 * echo: the spec's §15 vectors for the ensemble, the tokenizer and stemmer
 * fixes of §16.18–19, SimHash, questions, new artifacts, the window.
 *
 * Scores need not equal the reference's (we stem with Snowball and tokenise
 * differently); decisions must. Where the reference is marked wrong (🐞) our
 * expectation differs on purpose:
 *   - §15.4 tokenisation: the reference deletes apostrophes and non-ASCII
 *     letters ("I'll" → ill, "café" → caf, "e-mail" → email). We split
 *     contractions, keep Unicode letters and split hyphens (§16.18, §16.19).
 *   - §15.4 stemming: the reference's "implement" → impl is its ad hoc
 *     stemmer (§16.18); Snowball gives "implement".
 * The §15.1 vectors whose peer texts the spec does not reproduce (the
 * "unrelated peers", the three-peer pools) use peers written here with the
 * property the spec states (unrelated; pool covering every candidate stem).
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
#include "modules/validator/validator_text.h"

static const struct echo_params test_params = {0.55, 0.15}; /* the reference tests' */

static void eval1(const char *cand, const char *peer, const struct echo_params *p,
                  struct echo_result *r)
{
	const char *peers[] = {peer};
	echo_evaluate_texts(cand, peers, 1, peers, 1, p, r);
}

static void test_paraphrase_is_echo(void **state)
{
	struct echo_result r;
	eval1("We should implement a caching layer for the API endpoints",
	      "We need to implement caching for our API endpoints", &test_params, &r);
	assert_true(r.echo);
	assert_true(r.score > 0);
	assert_true(r.strategy != ECHO_STRATEGY_NONE);
	assert_int_not_equal(strcmp(r.strategy_text, "none"), 0);
}

static void test_unrelated_is_not_echo(void **state)
{
	struct echo_result r;
	const char *peers[] = {"We should refactor the authentication middleware soon",
	                       "The CSS grid layout needs responsive breakpoints"};
	echo_evaluate_texts("The quantum computing breakthrough enables faster protein folding "
	                    "simulations",
	                    peers, 2, peers, 2, &test_params, &r);
	assert_false(r.echo);
	assert_true(r.novelty > 0.15);
	assert_string_equal(r.strategy_text, "none");
}

static void test_concept_novelty_pool(void **state)
{
	/* pairwise = the first peer only, pool = all three (§15.1). */
	const char *pool[] = {"We need caching for our API endpoints",
	                      "Performance optimization matters for the API",
	                      "Building endpoints is the next step"};
	struct echo_result r;
	echo_evaluate_texts("Building caching endpoints for API performance optimization", pool, 1,
	                    pool, 3, &test_params, &r);
	assert_true(r.echo);
	assert_true(r.novelty < 0.15);
	assert_int_equal(r.strategy, ECHO_STRATEGY_CONCEPT_NOVELTY);
	assert_string_equal(r.strategy_text, "concept-novelty(0% new)");
	assert_true(r.score > 0.99);
}

static void test_notification_echo_has_strategy(void **state)
{
	struct echo_result r;
	eval1("Implementing the notification service for real-time alerts",
	      "Building a notification service for real-time alert delivery", &test_params, &r);
	assert_true(r.echo);
	assert_int_not_equal(strcmp(r.strategy_text, "none"), 0);
}

static void test_different_topics_not_echo(void **state)
{
	struct echo_result r;
	eval1("Configuring the deployment pipeline for the staging environment",
	      "Setting up database replication for redundancy", &test_params, &r);
	assert_false(r.echo);
	assert_string_equal(r.strategy_text, "none");
	assert_true(r.novelty > 0.5);
}

static void test_short_is_never_echo(void **state)
{
	struct echo_params p = {0.5, 0.15};
	struct echo_result r;
	eval1("ok sure", "yes agreed", &p, &r);
	assert_false(r.echo);
	assert_true(r.score == 0);
	assert_true(r.novelty == 1);
	assert_string_equal(r.strategy_text, "none");
}

static void test_no_peers(void **state)
{
	struct echo_result r;
	echo_evaluate_texts("Building the authentication service with OAuth2 integration", NULL, 0,
	                    NULL, 0, &test_params, &r);
	assert_false(r.echo);
	assert_true(r.novelty == 1);
	assert_int_equal(r.matched, -1);
}

static void test_low_threshold_layers(void **state)
{
	struct echo_params p = {0.3, 0.15};
	struct echo_result r;
	eval1("Implementing a caching layer for API endpoint performance",
	      "Implementing caching layers to improve API endpoint performance", &p, &r);
	assert_true(r.echo);
	if (r.strategy == ECHO_STRATEGY_ENSEMBLE)
		assert_non_null(strstr(r.strategy_text, "ensemble(lcs="));
}

static void test_monitoring_dashboard(void **state)
{
	struct echo_params p = {0.4, 0.15};
	struct echo_result r;
	eval1("Creating the new monitoring dashboard for server health",
	      "We created a monitoring dashboard for server health tracking", &p, &r);
	assert_true(r.echo);
	assert_true(r.score > 0);
}

static void test_pool_supplies_novelty(void **state)
{
	/* pairwise = an unrelated styling peer; the pool covers the candidate. */
	const char *pair[] = {"The button styling needs a visual refresh"};
	const char *pool[] = {"The button styling needs a visual refresh",
	                      "Implementing caching would improve search performance",
	                      "Our API needs better performance under load"};
	struct echo_result r;
	echo_evaluate_texts("Implement caching for the search API performance", pair, 1, pool, 3,
	                    &test_params, &r);
	assert_true(r.echo);
	assert_true(r.novelty < 0.15);
	assert_int_equal(r.strategy, ECHO_STRATEGY_CONCEPT_NOVELTY);
}

static void test_judge_window_vector(void **state)
{
	/* §15.4, production thresholds: not echo, but in the judge band. */
	const char *peers[] = {
	        "Locking the gaps between components is what makes the spacing grid valuable",
	        "Dark mode color tokens still confuse me when switching themes",
	        "Layout decisions get easier with fixed component gaps"};
	struct echo_result r;
	echo_evaluate_texts("The spacing grid locks gaps between components which removes layout "
	                    "guesswork",
	                    peers, 3, peers, 3, NULL, &r);
	assert_false(r.echo);
	assert_true(r.pair >= ECHO_JUDGE_SCORE_MIN && r.pair < ECHO_PAIR_THRESHOLD);
	assert_true(r.novelty >= ECHO_NOVELTY_THRESHOLD && r.novelty < ECHO_JUDGE_NOVELTY_MAX);
	assert_true(r.judge_band);
	assert_int_equal(r.matched, 0);
}

static void test_portfolio_vector(void **state)
{
	/* §15.4: an echo at production thresholds in the reference, and still
	 * one through the ensemble once the figure is one the peers gave; the
	 * reference's own candidate adds a duration nobody named ("for five
	 * minutes"), which is new information (docs/echo.md). */
	const char *peers[] = {"Portfolio data caching should absorb burst traffic",
	                       "We need monitoring for error rate and latency"};
	struct echo_result r;
	echo_evaluate_texts("Caching portfolio data for five minutes absorbs burst traffic without "
	                    "serving stale numbers",
	                    peers, 2, peers, 2, NULL, &r);
	assert_false(r.echo);
	/* added beside no figure given, it changes none: new content the
	 * scores weigh, and out of the band */
	assert_false(r.new_number);
	assert_true(r.added_number);
	assert_false(r.judge_band);
	assert_string_equal(r.strategy_text, "added-number");
	const char *timed[] = {"Portfolio data caching for 5 min should absorb burst traffic",
	                       "We need monitoring for error rate and latency"};
	echo_evaluate_texts("Caching portfolio data for five minutes absorbs burst traffic without "
	                    "serving stale numbers",
	                    timed, 2, timed, 2, NULL, &r);
	/* "without serving stale numbers" states in the negative what the
	 * peer did not: not a certain echo, but the borderline band (the
	 * judge's, or rejected without one). */
	assert_false(r.echo);
	assert_true(r.judge_band);
	assert_false(r.new_number);
	assert_int_equal(r.matched, 0);
}

static void test_tokenizer_fixes(void **state)
{
	/* §15.4 input; see the header comment for why this differs. */
	char *s = echo_stems_string(
	        "I'll open the PR \xe2\x80\x94 it's ready, isn't it? Caf\xc3\xa9 na\xc3\xafve 100% "
	        "e-mail foo_bar");
	assert_string_equal(s, "open pr readi not café naïv #100 mail foo_bar");
	free(s);
	s = echo_stems_string("We should implement a caching layer for the API endpoints");
	assert_string_equal(s, "implement cach layer api endpoint");
	free(s);
	/* Typographic apostrophe reads like the ASCII one. */
	s = echo_stems_string("We don\xe2\x80\x99t cache; we\xe2\x80\x99re fine");
	assert_string_equal(s, "not cach fine");
	free(s);
	/* Non-ASCII words survive (§16.19). */
	s = echo_stems_string("Das Caching für Übersetzungen");
	assert_non_null(strstr(s, "für"));
	assert_non_null(strstr(s, "übersetzungen"));
	free(s);
}

static void test_negation_breaks_echo(void **state)
{
	struct echo_result r;
	eval1("We should not cache the portfolio endpoint responses",
	      "We should cache the portfolio endpoint responses", NULL, &r);
	assert_false(r.echo);
	eval1("We should cache the portfolio endpoint responses",
	      "We should cache the portfolio endpoint responses", NULL, &r);
	assert_true(r.echo);
	assert_int_equal(r.strategy, ECHO_STRATEGY_SIMHASH);
	assert_int_equal(r.simhash_distance, 0);
}

static void test_agreement_prefix_and_names(void **state)
{
	struct echo_window *w = echo_window_new(50);
	echo_window_push(w, "host", false, "How should we handle bursts on the portfolio API?");
	echo_window_push(w, "marvin", true,
	                 "Caching portfolio responses for five minutes would absorb the burst "
	                 "traffic at market open");
	const char *cand = "Agreed with Marvin \xe2\x80\x94 caching the portfolio responses for "
	                   "five minutes absorbs the market open burst";
	size_t n;
	char *norm = validator_text_normalize(cand, strlen(cand), &n);
	struct echo_result r;
	echo_window_evaluate(w, norm, n, NULL, &r);
	free(norm);
	assert_true(r.echo);
	assert_int_equal(r.pairwise_n, 1); /* the host message is context only */
	echo_window_free(w);
}

static void test_question_and_artifact_are_new(void **state)
{
	struct echo_result r;
	const char *peer = "Caching portfolio responses for five minutes absorbs the burst traffic";
	eval1("Should caching portfolio responses for five minutes absorb the burst traffic?", peer,
	      NULL, &r);
	assert_true(r.question);
	/* near-identical question: still an echo */
	assert_true(r.echo);
	eval1("Does caching portfolio responses absorb burst traffic for logged-in users?", peer,
	      NULL, &r);
	assert_true(r.question);
	assert_false(r.echo);
	eval1("Caching portfolio responses absorbs burst traffic, see "
	      "https://github.com/acme/portfolio/pull/42",
	      peer, NULL, &r);
	assert_true(r.new_artifact);
	assert_false(r.echo);
	assert_string_equal(r.strategy_text, "new-artifact");
	/* the same link again is not new */
	const char *peers[] = {"Caching absorbs bursts: https://github.com/acme/portfolio/pull/42",
	                       peer};
	echo_evaluate_texts("Portfolio caching absorbs bursts, https://github.com/acme/portfolio/"
	                    "pull/42.",
	                    peers, 2, peers, 2, NULL, &r);
	assert_false(r.new_artifact);
	assert_true(r.echo);
	/* a code span nobody posted */
	eval1("Caching portfolio responses absorbs burst traffic with `Cache-Control: max-age=300`",
	      peer, NULL, &r);
	assert_true(r.new_artifact);
	assert_false(r.echo);
}

static void test_window_bounds(void **state)
{
	struct echo_window *w = echo_window_new(1000);
	char buf[64];
	for (int i = 0; i < 200; i++) {
		snprintf(buf, sizeof buf, "message number %d about topic %d", i, i * 7);
		echo_window_push(w, i % 3 ? "peer" : "host", i % 3 != 0, buf);
	}
	assert_int_equal(echo_window_len(w), ECHO_WINDOW_MAX);
	const char *texts[ECHO_PAIRWISE_MAX];
	size_t n = echo_window_recent_texts(w, texts, ECHO_PAIRWISE_MAX);
	assert_int_equal(n, ECHO_PAIRWISE_MAX);
	assert_string_equal(texts[n - 1], "message number 199 about topic 1393");
	assert_true(echo_window_max_bytes(50) < 2u * 1024 * 1024);
	/* A huge message is stored truncated but bounded. */
	char *big = malloc(100000);
	memset(big, 'x', 99999);
	big[99999] = '\0';
	echo_window_push(w, "peer", true, big);
	n = echo_window_recent_texts(w, texts, ECHO_PAIRWISE_MAX);
	assert_int_equal(strlen(texts[n - 1]), ECHO_TEXT_MAX_BYTES);
	free(big);
	echo_window_clear(w);
	assert_int_equal(echo_window_len(w), 0);
	echo_window_free(w);
	echo_window_free(NULL);
}

static void test_invalid_utf8_tolerated(void **state)
{
	struct echo_result r;
	eval1("caching \xff\xfe portfolio \xc3 data absorbs bursts",
	      "caching portfolio data absorbs bursts", NULL, &r);
	assert_true(r.echo);
}

static int teardown(void **state)
{
	echo_shutdown();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_paraphrase_is_echo),
	        cmocka_unit_test(test_unrelated_is_not_echo),
	        cmocka_unit_test(test_concept_novelty_pool),
	        cmocka_unit_test(test_notification_echo_has_strategy),
	        cmocka_unit_test(test_different_topics_not_echo),
	        cmocka_unit_test(test_short_is_never_echo),
	        cmocka_unit_test(test_no_peers),
	        cmocka_unit_test(test_low_threshold_layers),
	        cmocka_unit_test(test_monitoring_dashboard),
	        cmocka_unit_test(test_pool_supplies_novelty),
	        cmocka_unit_test(test_judge_window_vector),
	        cmocka_unit_test(test_portfolio_vector),
	        cmocka_unit_test(test_tokenizer_fixes),
	        cmocka_unit_test(test_negation_breaks_echo),
	        cmocka_unit_test(test_agreement_prefix_and_names),
	        cmocka_unit_test(test_question_and_artifact_are_new),
	        cmocka_unit_test(test_window_bounds),
	        cmocka_unit_test(test_invalid_utf8_tolerated),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
