/*
 * §11 recovery as the engine runs it (part_recover_next: retry, then forced
 * action, with their counters and caps) and the five levels of the
 * --social-only defence (seed 004 "Capability-Aware Action Ownership"),
 * each on its own so that removing any one of them fails a test:
 *   1 parse-time: GitHub commitments dropped from the decision;
 *   2 forced action: never constructed for a social-only agent, even when
 *     the counters say it is due;
 *   3 owner retry: never asked;
 *   4 salvage: GitHub commitments removed before salvaging;
 *   5 eligibility: a room of social-only agents elects no owner.
 * Room of §15.4 (marvin, rebecca, peterben); the owner of REQ is found by
 * the ranking first.
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
#include "modules/validator/validator.h"

static const char *const full_caps[] = {"social", "github", "code"};
static const char *const social_caps[] = {"social"};
static const char *REQ = "Create an issue for the prod checklist in github.com/acme/site";

static const struct part_member room3[3] = {
        {"marvin", full_caps, 3, true, false},
        {"rebecca", full_caps, 3, true, false},
        {"peterben", full_caps, 3, true, false},
};

/* The owner of REQ in room3 and one agent that is not (group setup). */
static char OWN[PART_NAME_MAX], NOT_OWN[PART_NAME_MAX];

static struct part_event chat(const char *author, const char *text)
{
	return (struct part_event){
	        .kind = PART_EV_CHAT, .author = author, .text = text, .len = strlen(text)};
}

static void tick(struct part_state *st, const char *self, bool social_only,
                 const struct part_member *m, size_t nm, const struct part_event *ev, size_t nev,
                 int64_t now, struct part_tick_out *out)
{
	struct part_tick_in in = {.self = self,
	                          .social_only = social_only,
	                          .members = m,
	                          .nmembers = nm,
	                          .events = ev,
	                          .nevents = nev,
	                          .now_ms = now};
	part_tick(st, &in, out);
}

static void decide(const char *json, bool social_only, struct part_decision *d)
{
	struct ga_err err = {{0}};
	if (part_decision_from_text(json, strlen(json), social_only, d, &err) != 0)
		fail_msg("%s: %s", json, err.msg);
}

/* The owner of an open request: who to ask, and when to force. */
static void test_recover_next_owner(void **state)
{
	(void)state;
	struct part_state st;
	part_state_init(&st);
	struct part_tick_out t;
	struct part_event ev[1] = {chat("host", REQ)};
	tick(&st, OWN, false, room3, 3, ev, 1, 1000, &t);
	assert_true(t.own.is_owner);
	struct decision why;
	/* tick 1 (new messages): two retries, then nothing until forced is due */
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_RETRY);
	assert_int_equal(st.owner_rejections, 1);
	/* on the same tick a second silent outcome does not retry again */
	assert_int_equal(part_recover_next(&st, &t, true, &why), PART_RECOVER_NONE);
	assert_string_equal(why.rule, "no_recovery");
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_RETRY);
	assert_int_equal(st.owner_rejections, 2);
	/* the third decline: no retry left, forced action due (≥ 3 declines) */
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_FORCE);
	assert_string_equal(why.rule, "forced_action");
	struct part_decision d;
	memset(&d, 0, sizeof d);
	assert_int_equal(part_forced_decision(&st, &t, true, NULL, &d, &why), 0);
	assert_string_equal(d.commitments.item[0].repo, "acme/site");
	part_decision_clear(&d);
	/* The forced words in the agent's voice (space.creating) */
	t.forced_lead = "Filing it myself.";
	assert_int_equal(part_forced_decision(&st, &t, true, NULL, &d, &why), 0);
	assert_int_equal(strncmp(d.message, "Filing it myself: ", 18), 0);
	part_decision_clear(&d);
	t.forced_lead = NULL;
	part_note_forced(&st);
	part_note_forced(&st);
	/* §16.8: at most PART_FORCED_MAX forced actions per request */
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_NONE);
	assert_non_null(strstr(why.reason, "§16.8"));
	part_state_free(&st);

	/* a tick without new messages: no retry; forced once cycles ≥ 2 */
	part_state_init(&st);
	tick(&st, OWN, false, room3, 3, ev, 1, 1000, &t);
	tick(&st, OWN, false, room3, 3, NULL, 0, 6000, &t);
	assert_false(t.has_new);
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_FORCE);
	assert_int_equal(st.owner_rejections, 0);
	part_state_free(&st);

	/* a non-owner, and nobody once the request is fulfilled */
	part_state_init(&st);
	tick(&st, NOT_OWN, false, room3, 3, ev, 1, 1000, &t);
	assert_false(t.own.is_owner);
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_NONE);
	assert_non_null(strstr(why.reason, "another agent owns"));
	assert_int_equal(st.owner_rejections, 0);
	part_state_free(&st);
	part_state_init(&st);
	tick(&st, OWN, false, room3, 3, ev, 1, 1000, &t);
	part_note_fulfilled(&st, "commitment");
	tick(&st, OWN, false, room3, 3, ev, 0, 2000, &t);
	assert_false(t.request_open);
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_NONE);
	part_state_free(&st);
}

/* The owner's state and tick, then marked social-only: every guard below
 * must hold on its own, even where the ranking would have made this agent
 * the owner. */
static void social_owner(struct part_state *st, struct part_tick_out *t)
{
	part_state_init(st);
	struct part_event ev[1] = {chat("host", REQ)};
	tick(st, OWN, false, room3, 3, ev, 1, 1000, t);
	assert_true(t->own.is_owner);
	/* now the same agent, social-only */
	t->social_only = true;
}

static void test_level1_parse(void **state)
{
	(void)state;
	struct part_decision d;
	memset(&d, 0, sizeof d);
	const char *json = "{\"shouldSpeak\":true,\"message\":\"On it\",\"commitments\":["
	                   "{\"type\":\"create_issue\",\"title\":\"a\"},"
	                   "{\"type\":\"create_plan\",\"title\":\"b\"},"
	                   "{\"type\":\"comment_issue\",\"title\":\"c\",\"issue_number\":3},"
	                   "{\"type\":\"post_bluesky\",\"content\":\"d\"}]}";
	decide(json, true, &d);
	assert_int_equal(d.commitments.n, 1);
	assert_int_equal(d.commitments.item[0].type, CMT_POST_BLUESKY);
	assert_int_equal(d.commitments.ndropped_total, 3);
	assert_non_null(strstr(d.commitments.dropped[0].reason, "ocial-only"));
	part_decision_clear(&d);
	decide(json, false, &d); /* the control */
	assert_int_equal(d.commitments.n, 4);
	part_decision_clear(&d);
}

static void test_level2_forced(void **state)
{
	(void)state;
	struct part_state st;
	struct part_tick_out t;
	social_owner(&st, &t);
	struct part_decision d;
	memset(&d, 0, sizeof d);
	struct decision why;
	/* even when told it is due */
	t.force_action_due = true;
	assert_int_equal(part_forced_decision(&st, &t, true, NULL, &d, &why), -1);
	assert_string_equal(why.rule, "forced_social_only");
	assert_int_equal(d.commitments.n, 0);
	/* the control: the same state, not social-only */
	t.social_only = false;
	assert_int_equal(part_forced_decision(&st, &t, true, NULL, &d, &why), 0);
	part_decision_clear(&d);
	/* and the tick never finds it due for a social-only agent */
	struct part_state s2;
	part_state_init(&s2);
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_member mixed[3];
	for (int i = 0; i < 3; i++)
		mixed[i] = strcmp(room3[i].name, OWN) == 0
		                   ? (struct part_member){OWN, social_caps, 1, true, false}
		                   : room3[i];
	tick(&s2, OWN, true, mixed, 3, ev, 1, 1000, &t);
	assert_false(t.own.is_owner); /* level 5 for the one agent */
	tick(&s2, OWN, true, mixed, 3, NULL, 0, 6000, &t);
	tick(&s2, OWN, true, mixed, 3, NULL, 0, 11000, &t);
	assert_false(t.force_action_due);
	part_state_free(&s2);
	part_state_free(&st);
}

static void test_level3_retry(void **state)
{
	(void)state;
	struct part_state st;
	struct part_tick_out t;
	social_owner(&st, &t);
	struct decision why;
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_NONE);
	assert_non_null(strstr(why.reason, "social-only"));
	assert_int_equal(st.owner_rejections, 0); /* not even counted */
	t.social_only = false;                    /* the control */
	assert_int_equal(part_recover_next(&st, &t, false, &why), PART_RECOVER_RETRY);
	part_state_free(&st);
}

static void test_level4_salvage(void **state)
{
	(void)state;
	struct part_state st;
	struct part_tick_out t;
	social_owner(&st, &t);
	struct decision why;
	struct part_decision d;
	memset(&d, 0, sizeof d);
	/* commitments that got past parsing (parsed as a full agent): only
	 * the Bluesky post is salvaged */
	decide("{\"shouldSpeak\":false,\"commitments\":[{\"type\":\"create_issue\",\"title\":\"a\"}"
	       ","
	       "{\"type\":\"post_bluesky\",\"content\":\"d\"}]}",
	       false, &d);
	assert_int_equal(d.commitments.n, 2);
	assert_true(part_salvage(&d, &t, false, false, &why));
	assert_int_equal(d.commitments.n, 1);
	assert_int_equal(d.commitments.item[0].type, CMT_POST_BLUESKY);
	assert_string_equal(d.message, "On it \xE2\x80\x94 post bluesky incoming.");
	part_decision_clear(&d);
	/* only GitHub work: nothing is salvaged */
	decide("{\"shouldSpeak\":false,\"commitments\":[{\"type\":\"create_plan\",\"title\":\"a\"}]"
	       "}",
	       false, &d);
	assert_false(part_salvage(&d, &t, false, false, &why));
	assert_int_equal(d.commitments.n, 0);
	assert_false(d.should_speak);
	assert_non_null(strstr(why.reason, "social-only"));
	part_decision_clear(&d);
	/* the control: a full agent salvages the issue */
	t.social_only = false;
	decide("{\"shouldSpeak\":false,\"commitments\":[{\"type\":\"create_plan\",\"title\":\"a\"}]"
	       "}",
	       false, &d);
	assert_true(part_salvage(&d, &t, false, false, &why));
	part_decision_clear(&d);
	/* The words come from the agent's voice (space.on_it) */
	t.salvage_lead = "Taking this one: a {{type}}, coming up.";
	decide("{\"shouldSpeak\":false,\"commitments\":[{\"type\":\"create_plan\",\"title\":"
	       "\"Cache plan\"}]}",
	       false, &d);
	assert_true(part_salvage(&d, &t, false, false, &why));
	assert_string_equal(d.message, "Taking this one: a create plan, coming up: Cache plan.");
	part_decision_clear(&d);
	part_state_free(&st);
}

static void test_level5_eligibility(void **state)
{
	(void)state;
	struct part_member socials[3] = {{"marvin", social_caps, 1, true, false},
	                                 {"rebecca", social_caps, 1, true, false},
	                                 {"peterben", social_caps, 1, true, false}};
	struct part_state st;
	part_state_init(&st);
	struct part_tick_out t;
	struct part_event ev[1] = {chat("host", REQ)};
	tick(&st, "peterben", true, socials, 3, ev, 1, 1000, &t);
	assert_true(t.request_open);
	assert_false(t.own.is_owner);
	assert_string_equal(t.own.owner, "");
	/* and one full agent among social-only ones owns it, whatever the hash */
	struct part_member mixed[3] = {
	        socials[0], {"rebecca", full_caps, 3, true, false}, socials[2]};
	struct part_state s2;
	part_state_init(&s2);
	tick(&s2, "peterben", true, mixed, 3, ev, 1, 1000, &t);
	assert_string_equal(t.own.owner, "rebecca");
	assert_false(t.own.is_owner);
	part_state_free(&s2);
	part_state_free(&st);
}

/* §4 whatever the words (loop-sim finding 1): a non-owner's create_issue
 * with words that avoid the promise phrases is dropped before validation,
 * with a decision naming the owner; the words then meet the validator
 * without it. The owner keeps its commitment; a Bluesky post is not
 * GitHub work; a fulfilled request no longer forbids anything. */
static void test_foreign_commitments(void **state)
{
	(void)state;
	static const char *neutral = "{\"shouldSpeak\":true,\"message\":\"Ada, on it: filing the "
	                             "prod checklist in acme/site.\",\"commitments\":[{\"type\":"
	                             "\"create_issue\",\"repo\":\"acme/site\",\"title\":\"Prod "
	                             "checklist\"},{\"type\":\"post_bluesky\",\"content\":\"x\"}]}";
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_state st;
	part_state_init(&st);
	struct part_tick_out t;
	tick(&st, NOT_OWN, false, room3, 3, ev, 1, 1000, &t);
	assert_true(t.request_open);
	assert_false(t.own.is_owner);
	struct part_decision d;
	memset(&d, 0, sizeof d);
	decide(neutral, false, &d);
	assert_int_equal(d.commitments.n, 2);
	/* the hole: with its commitment the validator lets the words through */
	struct validator_context ctx;
	memset(&ctx, 0, sizeof ctx);
	part_validator_context(&t, d.commitments.n, &ctx);
	struct validator_decision vd;
	memset(&vd, 0, sizeof vd);
	assert_int_equal(validator_validate(d.message, &ctx, &vd), VALIDATOR_ACCEPT);
	validator_decision_clear(&vd);
	struct decision why;
	memset(&why, 0, sizeof why);
	assert_int_equal(part_drop_foreign_commitments(&d.commitments, &t, &why), 1);
	assert_int_equal(d.commitments.n, 1);
	assert_int_equal(d.commitments.item[0].type, CMT_POST_BLUESKY);
	assert_int_equal(why.verdict, VERDICT_DROP);
	assert_string_equal(why.rule, "action_owner");
	char want[PART_NAME_MAX + 32];
	snprintf(want, sizeof want, "%s owns the request", OWN);
	assert_non_null(strstr(why.reason, want));
	assert_non_null(strstr(why.reason, "create_issue"));
	part_decision_clear(&d);
	/* a promise without the commitment: check 12 / empty promise refuse it */
	decide("{\"shouldSpeak\":true,\"message\":\"I'll create the issue for the checklist.\","
	       "\"commitments\":[{\"type\":\"create_issue\",\"repo\":\"acme/site\",\"title\":"
	       "\"Prod checklist\"}]}",
	       false, &d);
	assert_int_equal(part_drop_foreign_commitments(&d.commitments, &t, &why), 1);
	assert_int_equal(d.commitments.n, 0);
	part_validator_context(&t, d.commitments.n, &ctx);
	memset(&vd, 0, sizeof vd);
	assert_int_equal(validator_validate(d.message, &ctx, &vd), VALIDATOR_REJECT);
	validator_decision_clear(&vd);
	part_decision_clear(&d);
	part_state_free(&st);

	/* the owner keeps it, and why is not touched */
	part_state_init(&st);
	tick(&st, OWN, false, room3, 3, ev, 1, 1000, &t);
	assert_true(t.own.is_owner);
	decide(neutral, false, &d);
	memset(&why, 0, sizeof why);
	assert_int_equal(part_drop_foreign_commitments(&d.commitments, &t, &why), 0);
	assert_int_equal(d.commitments.n, 2);
	assert_null(why.rule);
	part_decision_clear(&d);
	part_state_free(&st);

	/* a fulfilled request: nobody's to guard */
	part_state_init(&st);
	tick(&st, NOT_OWN, false, room3, 3, ev, 1, 1000, &t);
	t.request_open = false;
	decide(neutral, false, &d);
	assert_int_equal(part_drop_foreign_commitments(&d.commitments, &t, &why), 0);
	assert_int_equal(d.commitments.n, 2);
	part_decision_clear(&d);
	part_state_free(&st);
}

static int find_owner(void **state)
{
	(void)state;
	struct part_state st;
	part_state_init(&st);
	struct part_tick_out t;
	struct part_event ev[1] = {chat("host", REQ)};
	tick(&st, "marvin", false, room3, 3, ev, 1, 1000, &t);
	snprintf(OWN, sizeof OWN, "%s", t.own.owner);
	snprintf(NOT_OWN, sizeof NOT_OWN, "%s", strcmp(OWN, "marvin") ? "marvin" : "rebecca");
	part_state_free(&st);
	return OWN[0] ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_recover_next_owner),
	        cmocka_unit_test(test_level1_parse),
	        cmocka_unit_test(test_level2_forced),
	        cmocka_unit_test(test_level3_retry),
	        cmocka_unit_test(test_level4_salvage),
	        cmocka_unit_test(test_level5_eligibility),
	        cmocka_unit_test(test_foreign_commitments),
	};
	return cmocka_run_group_tests(tests, find_owner, NULL);
}
