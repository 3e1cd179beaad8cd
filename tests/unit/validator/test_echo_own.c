/*
 * The agent's own instructions never reach a room: echo_own against the
 * space-participation skill as shipped (skills/space-participation/SKILL.md)
 * and the space_decision tool's description, and the validator's
 * own_instructions check (1c) with its reason and salvage.
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
#include "modules/validator/echo_own.h"
#include "modules/validator/validator.h"
#include "modules/validator/validator_text.h"

static char *skill;
static struct echo_own *own;

static const char tool_description[] =
        "Decide whether to speak in the agent-space and what to say. Always answer through this "
        "tool. Commitments listed here are carried out by the agent afterwards.";

static int setup(void **state)
{
	const char *src = getenv("GA_SOURCE_DIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/skills/space-participation/SKILL.md",
	         src ? src : GA_SOURCE_DIR);
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot read %s\n", path);
		return -1;
	}
	skill = calloc(1, 65536);
	size_t n = fread(skill, 1, 65535, f);
	fclose(f);
	skill[n] = '\0';
	const char *texts[] = {skill, tool_description, NULL};
	own = echo_own_new(texts, 3);
	return own ? 0 : -1;
}

static int teardown(void **state)
{
	echo_own_free(own);
	free(skill);
	echo_shutdown();
	return 0;
}

static bool match(const char *text, struct echo_own_hit *hit)
{
	size_t n;
	char *norm = validator_text_normalize(text, strlen(text), &n);
	bool m = echo_own_match(own, norm, n, hit);
	free(norm);
	return m;
}

static void test_restated_rules(void **state)
{
	/* What an agent said in a room: its decision prompt's rules, behind an
	 * echo opener. */
	struct echo_own_hit hit;
	assert_true(match("Right, so to restate: a commitment; no echo openers; no deference when "
	                  "the action is yours; no duplicating what is already said; keep the "
	                  "repository in mind.",
	                  &hit));
	assert_true(hit.matched >= 2);
	assert_true(hit.quote_words >= ECHO_OWN_QUOTE_WORDS); /* the template's rules line */
	assert_true(hit.example[0] != '\0');
	/* The same rules in other words, clause by clause. */
	assert_true(match("Quick reminder for myself: stay quiet when another agent already said "
	                  "it; never open by praising what someone just said; no lists or "
	                  "headings.",
	                  &hit));
}

static void test_quote(void **state)
{
	struct echo_own_hit hit;
	assert_true(match("Honestly, if another agent has already said what you would say, stay "
	                  "quiet — that's the whole trick.",
	                  &hit));
	assert_true(hit.quote_words >= ECHO_OWN_QUOTE_WORDS);
	/* The tool's description is an instruction too. */
	assert_true(match("Commitments listed here are carried out by the agent afterwards, "
	                  "so yes.",
	                  &hit));
	/* Six words in a row are a coincidence, not a quote. */
	assert_false(match("Let's stay quiet on the launch date until Friday.", &hit));
	assert_int_equal(hit.quote_words, 0);
}

static void test_chat_about_the_same_subjects(void **state)
{
	/* Messages about promises, issues, repositories and echoes in the
	 * agents' own sentences are not the instructions. */
	static const char *const chat[] = {
	        "I'll open an issue in acme/www for the cache key, with the repro steps from "
	        "Juno's log.",
	        "Most repeats start with an agreement opener like Great point followed by a "
	        "paraphrase of the previous message.",
	        "The repository already has a CONTRIBUTING file; the commit hook runs the "
	        "formatter.",
	        "Rate-limit the login endpoint per IP, say 10 attempts a minute, and lock the "
	        "account after 20 failures in an hour.",
	        "Ada owns the migration; Bob takes the rollback plan; I'll review both by Friday.",
	        "The host asked for a plan, so a short one: cache for five minutes, warm it at "
	        "06:15, alert on misses.",
	};
	for (size_t i = 0; i < sizeof chat / sizeof chat[0]; i++) {
		struct echo_own_hit hit;
		if (match(chat[i], &hit))
			fail_msg("flagged as own instructions (%zu of %zu clauses, quote %zu): %s",
			         hit.matched, hit.clauses, hit.quote_words, chat[i]);
	}
}

static void test_validator_rule(void **state)
{
	struct validator_context ctx = {.connected_agents = 1, .own = own};
	struct validator_decision d;
	const char *leak = "Right, so to restate: a commitment; no echo openers; no deference when "
	                   "the action is yours; no duplicating what is already said.";
	assert_int_equal(validator_validate(leak, &ctx, &d), VALIDATOR_REJECT);
	assert_string_equal(d.rule, "own_instructions");
	assert_non_null(strstr(d.reason, "quotes"));
	assert_false(d.salvage);
	validator_decision_clear(&d);
	/* Restated, not quoted: the reason names a clause. */
	assert_int_equal(validator_validate("Quick reminder for myself: stay quiet when another "
	                                    "agent already said it; never open by praising what "
	                                    "someone just said; no lists or headings.",
	                                    &ctx, &d),
	                 VALIDATOR_REJECT);
	assert_string_equal(d.rule, "own_instructions");
	assert_non_null(strstr(d.reason, "clauses restate"));
	validator_decision_clear(&d);
	/* With commitments the words are dropped, the commitments may stand. */
	ctx.n_commitments = 1;
	assert_int_equal(validator_validate(leak, &ctx, &d), VALIDATOR_REJECT);
	assert_string_equal(d.rule, "own_instructions");
	assert_true(d.salvage);
	validator_decision_clear(&d);
	/* Without instructions in the context, the check does not run (the
	 * opener check decides: nothing to compare with, so it rejects). */
	ctx.own = NULL;
	ctx.n_commitments = 0;
	validator_validate(leak, &ctx, &d);
	assert_string_not_equal(d.rule, "own_instructions");
	validator_decision_clear(&d);
	/* An ordinary answer passes. */
	ctx.own = own;
	assert_int_equal(validator_validate("Juno, the 9am slowness is the export job holding a "
	                                    "table lock for forty seconds.",
	                                    &ctx, &d),
	                 VALIDATOR_ACCEPT);
	validator_decision_clear(&d);
}

static void test_bounds_and_empty(void **state)
{
	assert_null(echo_own_new(NULL, 0));
	const char *none[] = {NULL, "", "   ", "a."};
	assert_null(echo_own_new(none, 4));
	echo_own_free(NULL);
	assert_false(echo_own_match(NULL, "anything at all here", 20, NULL));
	/* Texts beyond ECHO_OWN_MAX_BYTES are ignored, not an error. */
	size_t big = ECHO_OWN_MAX_BYTES + 4096;
	char *huge = malloc(big + 1);
	for (size_t i = 0; i < big; i++)
		huge[i] = "stay quiet when nothing new; "[i % 29];
	huge[big] = '\0';
	const char *texts[] = {huge};
	struct echo_own *o = echo_own_new(texts, 1);
	assert_non_null(o);
	echo_own_free(o);
	free(huge);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_restated_rules),
	        cmocka_unit_test(test_quote),
	        cmocka_unit_test(test_chat_about_the_same_subjects),
	        cmocka_unit_test(test_validator_rule),
	        cmocka_unit_test(test_bounds_and_empty),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
