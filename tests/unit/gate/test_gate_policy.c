/*
 * The gate's configuration for an agent (modules/gate/policy.h): the numbers
 * come from the .env, the Social Mechanics from SELF.md, and the shared
 * gate's social_mechanics rule judges GitHub only — Bluesky decides its own
 * in its platform gate, the room is one long conversation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "modules/gate/policy.h"

static const char ENV[] = "AGENT_NAME=Gaia\nMAX_ACL=6\nGATE_MAX_EVENTS=30\n"
                          "GATE_WINDOW_MS=45000\nGATE_COOLDOWN_MS=1000\n"
                          "MAX_BOT_CHAIN_LENGTH=7\n";

static void load(struct ga_config *cfg)
{
	struct env_file env;
	struct ga_err err = {{0}};
	assert_int_equal(env_parse(ENV, strlen(ENV), &env, &err), 0);
	struct config_problems p;
	memset(&p, 0, sizeof p);
	assert_int_equal(config_load(cfg, &env, "/tmp", NULL, &p), 0);
	env_file_free(&env);
}

/* The gate for ENV and SELF.md's 3 replies per thread, depth 9. */
static void policy(struct ga_config *cfg, struct gate_config *g)
{
	load(cfg);
	struct self_mechanics m = {.max_replies_before_exit = 3, .max_thread_depth = 9};
	gate_policy_config(g, cfg, &m);
}

static void test_numbers_and_mechanics(void **state)
{
	(void)state;
	struct ga_config cfg;
	struct gate_config g;
	policy(&cfg, &g);
	assert_int_equal(g.max_acl, 6);
	assert_int_equal(g.max_events, 30);
	assert_int_equal(g.window_ms, 45000);
	assert_int_equal(g.cooldown_ms, 1000);
	assert_int_equal(g.max_bot_chain, 7);
	assert_string_equal(g.self_name, "Gaia");
	assert_int_equal(g.max_replies_per_conversation, 3);
	assert_int_equal(g.max_thread_depth, 9);
	assert_int_equal(g.mechanics_platforms, 1u << CONV_PLATFORM_GITHUB);
	/* without SELF.md's mechanics: off */
	gate_policy_config(&g, &cfg, NULL);
	assert_int_equal(g.max_replies_per_conversation, 0);
	assert_int_equal(g.max_thread_depth, 0);
	config_free(&cfg);
}

/* A person's message in a conversation where we have replied 3 times (the
 * SELF.md cap): the shared gate says REACT social_mechanics on GitHub only. */
static void check_on(enum conv_platform pf, const struct gate_config *g, struct gate_result *r)
{
	const char *conv = pf == CONV_PLATFORM_GITHUB    ? "github:acme/widgets#1"
	                   : pf == CONV_PLATFORM_BLUESKY ? "bluesky:at://did:plc:x/post/1"
	                                                 : "space:room";
	struct conv_event_src src = {.platform = pf,
	                             .conversation = conv,
	                             .message_id = "m-1",
	                             .author_id = "ann",
	                             .author_name = "ann",
	                             .author_kind = CONV_AUTHOR_HUMAN,
	                             .text = "what do you think?",
	                             .text_len = strlen("what do you think?"),
	                             .addressed_me = true};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	struct gate_state *st = gate_state_new();
	struct gate_input in = {
	        .ev = &ev, .derived_chain = -1, .thread_depth = 2, .our_replies = 3};
	gate_check(st, &in, 1763892000000LL, g, r);
	gate_state_free(st);
	conv_event_free(&ev);
}

static void test_mechanics_on_github_only(void **state)
{
	(void)state;
	struct ga_config cfg;
	struct gate_config g;
	policy(&cfg, &g);
	struct gate_result r;
	check_on(CONV_PLATFORM_GITHUB, &g, &r);
	assert_int_equal(r.d.verdict, VERDICT_REACT);
	assert_string_equal(r.d.rule, "social_mechanics");
	check_on(CONV_PLATFORM_BLUESKY, &g, &r);
	assert_int_equal(r.d.verdict, VERDICT_PASS);
	check_on(CONV_PLATFORM_SPACE, &g, &r);
	assert_int_equal(r.d.verdict, VERDICT_PASS);
	config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_numbers_and_mechanics),
	        cmocka_unit_test(test_mechanics_on_github_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
