/*
 * tick: the per-tick policy over a room of three agents (marvin, rebecca,
 * peterben; peterben owns "Create an issue for the prod checklist", §15.4)
 * and a host: request → one owner, escalation info → critical, forced
 * action due on the owner's message-less tick, the follow-up boost that
 * keeps the owner, the idle reset before ingest, saturation, observer
 * silence, budgets per host turn, cooldown, host identity fixed on
 * arrival, replayed history, peer claims, Layer 2 through the cache, the
 * bounds, and the §14 context pieces.
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
static const char *REQ = "Create an issue for the prod checklist";

static struct part_member M(const char *name) {
	return (struct part_member){name, full_caps, 3, true, false};
}

static struct part_event
chat(const char *author, const char *text)
{
	return (struct part_event){
	        .kind = PART_EV_CHAT, .author = author, .text = text, .len = strlen(text)};
}

static const struct part_member room3[3] = {
        {"marvin", full_caps, 3, true, false},
        {"rebecca", full_caps, 3, true, false},
        {"peterben", full_caps, 3, true, false},
};

static void tick(struct part_state *st, const char *self, const struct part_member *m, size_t nm,
                 const struct part_event *ev, size_t nev, int64_t now, struct part_tick_out *out)
{
	struct part_tick_in in = {.self = self,
	                          .members = m,
	                          .nmembers = nm,
	                          .events = ev,
	                          .nevents = nev,
	                          .now_ms = now};
	part_tick(st, &in, out);
}

static void test_request_owner_escalation(void **state)
{
	(void)state;
	const char *names[3] = {"marvin", "rebecca", "peterben"};
	struct part_state st[3];
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_tick_out out;
	int64_t t = 1000000;
	for (int i = 0; i < 3; i++) {
		part_state_init(&st[i]);
		tick(&st[i], names[i], room3, 3, ev, 1, t, &out);
		/* every agent hears the host: the model is asked, owner agreed */
		assert_true(out.call_model);
		assert_string_equal(out.verdict.rule, "compose");
		assert_int_equal(out.mode, PART_MODE_ACTION);
		assert_string_equal(out.own.owner, "peterben");
		assert_int_equal(out.own.is_owner, i == 2);
		assert_true(out.request_open);
		assert_string_equal(out.request, REQ);
		assert_int_equal(out.escalation, PART_ESC_INFO);
		assert_int_equal(out.cycles, 1);
		assert_string_equal(out.why_escalation.rule, "escalation_info");
		assert_false(out.force_action_due);
		assert_true(out.context & PART_CTX_OWNERSHIP);
		assert_true(out.context & PART_CTX_ESCALATION);
	}
	/* roles from the ranking: peterben actor, marvin reviewer, rebecca observer */
	tick(&st[0], "marvin", room3, 3, NULL, 0, t + 5000, &out);
	assert_int_equal(out.own.role, PART_ROLE_REVIEWER);
	/* a message-less tick: no model call, critical; the owner may force */
	assert_false(out.call_model);
	assert_int_equal(out.escalation, PART_ESC_CRITICAL);
	assert_string_equal(out.verdict.rule, "escalation_only");
	assert_false(out.force_action_due);
	tick(&st[1], "rebecca", room3, 3, NULL, 0, t + 5000, &out);
	assert_int_equal(out.own.role, PART_ROLE_OBSERVER);
	tick(&st[2], "peterben", room3, 3, NULL, 0, t + 5000, &out);
	assert_int_equal(out.own.role, PART_ROLE_ACTOR);
	assert_false(out.call_model);
	assert_true(out.force_action_due);
	assert_int_equal(out.verdict.verdict, VERDICT_PASS);
	assert_string_equal(out.verdict.rule, "forced_action");
	assert_int_equal(out.waiting_ms, 5000);
	/* §16.8: at most PART_FORCED_MAX forced attempts per request */
	part_note_forced(&st[2]);
	part_note_forced(&st[2]);
	tick(&st[2], "peterben", room3, 3, NULL, 0, t + 10000, &out);
	assert_false(out.force_action_due);
	assert_string_equal(out.verdict.rule, "escalation_only");
	/* fulfilled: the next message-less tick is silent and not evaluated */
	part_note_fulfilled(&st[2], "commitment");
	tick(&st[2], "peterben", room3, 3, NULL, 0, t + 15000, &out);
	assert_string_equal(out.verdict.rule, "no_new_messages");
	assert_false(out.request_open);
	/* a permanent failure reopens it, but the forced cap still holds */
	part_note_commitment_failed(&st[2]);
	tick(&st[2], "peterben", room3, 3, NULL, 0, t + 20000, &out);
	assert_true(out.request_open);
	assert_false(out.force_action_due);
	for (int i = 0; i < 3; i++)
		part_state_free(&st[i]);
}

/* The owner claimed the request and let the claim lapse: noted as having
 * dropped it, it is ranked no more, and the others agree on one owner
 * among themselves; a new request ranks everyone again. */
static void test_defaulted_owner(void **state)
{
	(void)state;
	const char *names[2] = {"marvin", "rebecca"};
	struct part_state st[2];
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_tick_out out;
	int64_t t = 1000000;
	char owner[2][PART_NAME_MAX];
	int owners = 0;
	for (int i = 0; i < 2; i++) {
		part_state_init(&st[i]);
		assert_false(part_note_defaulted(&st[i], "peterben")); /* no request yet */
		tick(&st[i], names[i], room3, 3, ev, 1, t, &out);
		assert_string_equal(out.own.owner, "peterben");
		char who[64];
		assert_int_equal(part_note_claimers_defaulted(&st[i], who, sizeof who), 0);
		struct part_event cl = {.kind = PART_EV_CLAIM, .author = "peterben"};
		tick(&st[i], names[i], room3, 3, &cl, 1, t + 1000, &out);
		assert_int_equal(part_note_claimers_defaulted(&st[i], who, sizeof who), 1);
		assert_string_equal(who, "peterben");
		assert_false(part_note_defaulted(&st[i], "peterben")); /* once */
		assert_int_equal(part_note_claimers_defaulted(&st[i], who, sizeof who), 0);
		assert_true(st[i].fulfilled); /* the claim took it */
		part_request_reopen(&st[i]);  /* as the engine does once the claim lapsed */
		tick(&st[i], names[i], room3, 3, NULL, 0, t + 5000, &out);
		assert_true(out.own.computed);
		assert_string_not_equal(out.own.owner, "peterben");
		assert_string_equal(out.own.owner, out.own.is_owner ? names[i] : names[1 - i]);
		snprintf(owner[i], sizeof owner[i], "%s", out.own.owner);
		owners += out.own.is_owner;
	}
	assert_string_equal(owner[0], owner[1]);
	assert_int_equal(owners, 1);
	/* a new request: the list goes with the old one */
	struct part_event ev2[1] = {chat("host", "Create an issue for the staging checklist")};
	tick(&st[0], names[0], room3, 3, ev2, 1, t + 10000, &out);
	assert_int_equal(st[0].defaulted_n, 0);
	/* bounded */
	for (int i = 0; i < PART_DEFAULTED_MAX; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "agent%d", i);
		assert_true(part_note_defaulted(&st[0], nm));
	}
	assert_false(part_note_defaulted(&st[0], "one-too-many"));
	for (int i = 0; i < 2; i++)
		part_state_free(&st[i]);
}

static void test_follow_up_boost(void **state)
{
	(void)state;
	struct part_state a, b;
	part_state_init(&a);
	part_state_init(&b);
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_tick_out out;
	tick(&a, "peterben", room3, 3, ev, 1, 1000, &out);
	tick(&b, "marvin", room3, 3, ev, 1, 1000, &out);
	assert_int_equal(out.cycles, 1);
	/* the host follows up: critical at once, same owner, no new request */
	struct part_event fu[1] = {chat("host", "did you do it?")};
	tick(&b, "marvin", room3, 3, fu, 1, 2000, &out);
	assert_true(out.follow_up);
	assert_int_equal(out.escalation, PART_ESC_CRITICAL);
	assert_string_equal(out.own.owner, "peterben");
	assert_string_equal(out.request, REQ);
	assert_int_equal(out.mode, PART_MODE_ACTION);
	/* a non-owner at critical that was not addressed stays silent */
	assert_false(out.call_model);
	assert_string_equal(out.verdict.rule, "escalation_non_owner");
	assert_true(out.context & PART_CTX_FOLLOW_UP);
	tick(&a, "peterben", room3, 3, fu, 1, 2000, &out);
	assert_true(out.follow_up);
	assert_true(out.own.is_owner);
	assert_true(out.call_model);
	assert_int_equal(out.escalation, PART_ESC_CRITICAL);
	/* the same follow-up is not boosted twice */
	struct part_event peer[1] = {chat("rebecca", "peterben has it")};
	tick(&a, "peterben", room3, 3, peer, 1, 3000, &out);
	assert_false(out.follow_up);
	/* the host moved on to a question: the open request no longer mutes a
	 * non-owner on it (still critical for the owner) */
	struct part_state c;
	part_state_init(&c);
	tick(&c, "marvin", room3, 3, ev, 1, 1000, &out);
	tick(&c, "marvin", room3, 3, NULL, 0, 6000, &out); /* critical now */
	assert_int_equal(out.escalation, PART_ESC_CRITICAL);
	struct part_event q[1] = {chat("host", "What do you all think about CMake presets?")};
	tick(&c, "marvin", room3, 3, q, 1, 7000, &out);
	assert_int_equal(out.mode, PART_MODE_DISCUSSION);
	assert_true(out.request_open);
	assert_true(out.call_model);
	assert_string_equal(out.verdict.rule, "compose");
	part_state_free(&c);
	/* addressed by the host, a non-owner is asked even at critical */
	struct part_event named[1] = {chat("host", "marvin, any update?")};
	named[0].addressed_known = true; /* the room's addressed list */
	named[0].addressed_me = true;
	tick(&b, "marvin", room3, 3, named, 1, 4000, &out);
	assert_true(out.call_model);
	assert_true(out.context & PART_CTX_ADDRESSED);
	/* after fulfilment a follow-up asks the owner to answer, nothing reopens */
	part_note_fulfilled(&a, "commitment");
	struct part_event fu2[1] = {chat("host", "where's the issue?")};
	tick(&a, "peterben", room3, 3, fu2, 1, 5000, &out);
	assert_true(out.follow_up);
	assert_false(out.request_open);
	assert_int_equal(out.escalation, PART_ESC_NONE);
	assert_true(out.call_model);
	assert_true(out.context & PART_CTX_FOLLOW_UP);
	assert_non_null(strstr(out.why_escalation.reason, "owner answers"));
	part_state_free(&a);
	part_state_free(&b);
}

static void test_repeated_request(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_tick_out out;
	tick(&s, "peterben", room3, 3, ev, 1, 1000, &out);
	/* the same words again while open: a nudge (critical), same request */
	tick(&s, "peterben", room3, 3, ev, 1, 2000, &out);
	assert_int_equal(out.escalation, PART_ESC_CRITICAL);
	part_note_fulfilled(&s, NULL);
	/* the same words after it was done: a new request (§6.1 🐞 fixed) */
	tick(&s, "peterben", room3, 3, ev, 1, 3000, &out);
	assert_true(out.request_open);
	assert_int_equal(out.cycles, 1);
	part_state_free(&s);
}

static void test_idle_reset(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[2] = {chat("host", "I think caching is nice"),
	                           chat("host", "see github.com/o/r")};
	struct part_tick_out out;
	tick(&s, "marvin", room3, 3, ev, 2, 1000, &out);
	assert_false(out.idle_reset);
	assert_string_equal(out.repo, "o/r");
	assert_int_equal(s.hist_n, 2);
	/* just under five minutes: kept */
	struct part_event one[1] = {chat("rebecca", "sure")};
	tick(&s, "marvin", room3, 3, one, 1, 1000 + PART_IDLE_RESET_MS, &out);
	assert_false(out.idle_reset);
	assert_int_equal(s.hist_n, 3);
	/* past five minutes since the last activity: reset BEFORE ingest (§16.1) */
	tick(&s, "marvin", room3, 3, one, 1, 1000 + 2 * PART_IDLE_RESET_MS + 1, &out);
	assert_true(out.idle_reset);
	assert_string_equal(out.why_idle.rule, "idle_reset");
	assert_int_equal(s.hist_n, 1);
	assert_null(out.repo);
	assert_true(out.call_model); /* the new message is still answered */
	part_state_free(&s);
}

static void test_saturation(void **state)
{
	(void)state;
	/* two agents, discussion: T_sat 10, T_warn 5 */
	const struct part_member two[2] = {M("marvin"), M("rebecca")};
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[12];
	ev[0] = chat("host", "I think the grid is nice");
	for (int i = 1; i < 12; i++)
		ev[i] = chat("rebecca", "more words about the grid");
	struct part_tick_out out;
	tick(&s, "marvin", two, 2, ev, 5, 1000, &out); /* host + 4 */
	assert_int_equal(out.agent_msgs_since_host, 4);
	assert_int_equal(out.saturation, PART_SAT_NONE);
	assert_int_equal(out.t_sat, 10);
	assert_int_equal(out.t_warn, 5);
	tick(&s, "marvin", two, 2, ev + 5, 1, 2000, &out);
	assert_int_equal(out.saturation, PART_SAT_WARN);
	assert_true(out.context & PART_CTX_SATURATION);
	assert_true(out.call_model);
	tick(&s, "marvin", two, 2, ev + 6, 4, 3000, &out);
	assert_int_equal(out.agent_msgs_since_host, 9);
	assert_true(out.call_model);
	tick(&s, "marvin", two, 2, ev + 10, 1, 4000, &out);
	assert_int_equal(out.saturation, PART_SAT_SATURATED);
	assert_false(out.call_model);
	assert_string_equal(out.verdict.rule, "saturated");
	/* the host speaks: the run restarts */
	struct part_event h[1] = {chat("host", "ok, thoughts on colour?")};
	tick(&s, "marvin", two, 2, h, 1, 5000, &out);
	assert_int_equal(out.agent_msgs_since_host, 0);
	assert_true(out.call_model);
	part_state_free(&s);
}

static void test_observer_and_budget(void **state)
{
	(void)state;
	/* action mode, three agents: rebecca observes (rank 3), threshold 3 */
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[4] = {chat("host", REQ), chat("peterben", "on it"),
	                           chat("marvin", "one note on scope"), chat("peterben", "noted")};
	struct part_tick_out out;
	tick(&s, "rebecca", room3, 3, ev, 3, 1000, &out);
	assert_int_equal(out.own.role, PART_ROLE_OBSERVER);
	assert_string_equal(out.why_role.rule, "role_observer");
	assert_true(out.context & PART_CTX_ROLE);
	part_note_fulfilled(&s, "peer_claim"); /* not critical: isolate the observer rule */
	tick(&s, "rebecca", room3, 3, ev + 3, 1, 2000, &out);
	assert_int_equal(out.agent_msgs_since_host, 3);
	assert_false(out.call_model);
	assert_string_equal(out.verdict.rule, "observer_silence");
	part_state_free(&s);

	/* budget per host turn: marvin reviews (budget 2 in action mode) */
	part_state_init(&s);
	tick(&s, "marvin", room3, 3, ev, 1, 1000, &out);
	part_note_fulfilled(&s, "peer_claim");
	part_note_sent(&s, "marvin", "first", 5, 1100, 0);
	part_note_sent(&s, "marvin", "second", 6, 1200, 0);
	struct part_event p[1] = {chat("peterben", "done")};
	tick(&s, "marvin", room3, 3, p, 1, 2000, &out);
	assert_int_equal(out.own_msgs_since_host, 2);
	assert_int_equal(out.budget, 2);
	assert_int_equal(out.saturation, PART_SAT_CIRCLING);
	assert_false(out.call_model);
	assert_string_equal(out.verdict.rule, "role_budget");
	/* a new host turn gives the budget back (§16.1) */
	struct part_event h[1] = {chat("host", "Thanks. I think that is enough for today")};
	tick(&s, "marvin", room3, 3, h, 1, 3000, &out);
	assert_int_equal(out.own_msgs_since_host, 0);
	assert_true(out.call_model);
	assert_int_equal(out.mode, PART_MODE_DISCUSSION);
	assert_int_equal(out.budget, 6);
	part_state_free(&s);
}

static void test_owner_not_muted(void **state)
{
	(void)state;
	/* the owner of an open request is asked even when saturated: a
	 * commitment is still wanted */
	const struct part_member two[2] = {M("peterben"), M("marvin")};
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[8];
	ev[0] = chat("host", REQ);
	for (int i = 1; i < 8; i++)
		ev[i] = chat("marvin", "talking about it");
	struct part_tick_out out;
	tick(&s, "peterben", two, 2, ev, 8, 1000, &out);
	assert_int_equal(out.saturation, PART_SAT_SATURATED);
	assert_true(out.own.is_owner);
	assert_true(out.call_model);
	part_state_free(&s);
}

static void test_cooldown(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[1] = {chat("host", "I think we are fine")};
	struct part_tick_out out;
	tick(&s, "marvin", room3, 3, ev, 1, 1000, &out);
	part_note_sent(&s, "marvin", "agreed, fine", 12, 1500, 15000);
	struct part_event p[1] = {chat("rebecca", "the grid though")};
	tick(&s, "marvin", room3, 3, p, 1, 5000, &out);
	assert_false(out.call_model);
	assert_string_equal(out.verdict.rule, "cooldown");
	assert_true(out.has_new);
	/* after the cooldown, the messages that came during it are answered */
	tick(&s, "marvin", room3, 3, NULL, 0, 16000, &out);
	assert_true(out.has_new);
	assert_true(out.call_model);
	/* and then nothing new */
	tick(&s, "marvin", room3, 3, NULL, 0, 21000, &out);
	assert_string_equal(out.verdict.rule, "no_new_messages");
	/* the room echoing our own message back is not a new message */
	struct part_event echo[1] = {chat("marvin", "agreed, fine")};
	size_t before = s.hist_n;
	tick(&s, "marvin", room3, 3, echo, 1, 22000, &out);
	assert_int_equal(s.hist_n, before);
	assert_false(out.has_new);
	part_state_free(&s);
}

static void test_host_identity(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	struct part_tick_out out;
	/* rebecca is present once, then leaves: her later message is not a
	 * host request (§16.13) */
	struct part_event hi[1] = {chat("host", "I think hello")};
	tick(&s, "marvin", room3, 3, hi, 1, 1000, &out);
	const struct part_member gone[2] = {M("marvin"), M("peterben")};
	struct part_event r[1] = {chat("rebecca", "Create an issue for the grid")};
	tick(&s, "marvin", gone, 2, r, 1, 2000, &out);
	assert_null(out.request);
	assert_false(part_history_at(&s, 1)->host);
	/* an unknown author is the host; the adapter's flag wins both ways */
	struct part_event x[2] = {chat("operator", "Create an issue for the grid"),
	                          chat("peterben", "Write the plan")};
	x[1].author_kind = PART_AUTHOR_HOST;
	tick(&s, "marvin", gone, 2, x, 2, 3000, &out);
	assert_true(part_history_at(&s, 2)->host);
	assert_true(part_history_at(&s, 3)->host);
	assert_string_equal(out.request, "Write the plan");
	part_state_free(&s);
}

static void test_replay_and_claims(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	struct part_tick_out out;
	/* replayed history is context: never a new request (§16.12) */
	struct part_event old[1] = {chat("host", REQ)};
	old[0].from_history = true;
	tick(&s, "marvin", room3, 3, old, 1, 1000, &out);
	assert_null(out.request);
	assert_false(out.context & PART_CTX_OWNERSHIP);
	/* a live request, then a peer's claim: fulfilled by the peer (§16.5) */
	struct part_event live[1] = {chat("host", "Write a plan for the migration")};
	tick(&s, "marvin", room3, 3, live, 1, 2000, &out);
	assert_true(out.request_open);
	struct part_event claim[1] = {
	        {.kind = PART_EV_CLAIM, .author = "rebecca", .text = "o/r#Migration plan"}};
	tick(&s, "marvin", room3, 3, claim, 1, 3000, &out);
	assert_false(out.request_open);
	assert_string_equal(s.fulfilled_by, "peer_claim");
	/* a claim in the same batch before the request does not count */
	struct part_state s2;
	part_state_init(&s2);
	struct part_event both[2] = {{.kind = PART_EV_CLAIM, .author = "rebecca"},
	                             chat("host", "Write a plan for the migration")};
	tick(&s2, "marvin", room3, 3, both, 2, 1000, &out);
	assert_true(out.request_open);
	/* a claim that arrives while cooling down is not forgotten */
	struct part_state s3;
	part_state_init(&s3);
	tick(&s3, "marvin", room3, 3, live, 1, 1000, &out);
	assert_true(out.request_open);
	part_note_sent(&s3, "marvin", "noted", 5, 1100, 20000);
	tick(&s3, "marvin", room3, 3, claim, 1, 3000, &out);
	assert_string_equal(out.verdict.rule, "cooldown");
	tick(&s3, "marvin", room3, 3, NULL, 0, 21000, &out);
	assert_string_equal(out.verdict.rule, "no_new_messages");
	assert_string_equal(s3.fulfilled_by, "peer_claim");
	part_state_free(&s);
	part_state_free(&s2);
	part_state_free(&s3);
}

static void test_layer2(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	const char *amb = "The login page is broken";
	struct part_event ev[1] = {chat("host", amb)};
	struct part_tick_in in = {.self = "marvin",
	                          .members = room3,
	                          .nmembers = 3,
	                          .events = ev,
	                          .nevents = 1,
	                          .now_ms = 1000};
	const char *need[PART_LAYER2_MAX];
	assert_int_equal(part_intent_unknown(&s, &in, need, PART_LAYER2_MAX), 1);
	assert_string_equal(need[0], amb);
	/* without an answer: discussion for now, reported again */
	struct part_tick_out out;
	part_tick(&s, &in, &out);
	assert_int_equal(out.mode, PART_MODE_DISCUSSION);
	assert_int_equal(out.nlayer2, 1);
	/* the answer arrives: the next tick treats it as the request */
	part_intent_learn(&s, amb, strlen(amb), PART_INTENT_ACTION);
	in.nevents = 0;
	assert_int_equal(part_intent_unknown(&s, &in, need, PART_LAYER2_MAX), 0);
	struct part_event p[1] = {chat("rebecca", "ouch")};
	tick(&s, "marvin", room3, 3, p, 1, 2000, &out);
	assert_int_equal(out.nlayer2, 0);
	assert_string_equal(out.request, amb);
	assert_int_equal(out.mode, PART_MODE_ACTION);
	/* the cache is bounded: FIFO */
	for (int i = 0; i < PART_INTENT_CACHE_MAX + 5; i++) {
		char t[32];
		snprintf(t, sizeof t, "text %d", i);
		part_intent_learn(&s, t, strlen(t), PART_INTENT_DISCUSSION);
	}
	assert_int_equal(s.cache_n, PART_INTENT_CACHE_MAX);
	part_state_free(&s);
}

static void test_social_only_self(void **state)
{
	(void)state;
	const struct part_member m[3] = {
	        {"marvin", social_caps, 1, true, false}, M("rebecca"), M("peterben")};
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_tick_in in = {.self = "peterben",
	                          .social_only = true,
	                          .members = m,
	                          .nmembers = 3,
	                          .events = ev,
	                          .nevents = 1,
	                          .now_ms = 1000};
	struct part_tick_out out;
	part_tick(&s, &in, &out);
	assert_false(out.own.is_owner);
	assert_string_equal(out.own.owner, "rebecca"); /* marvin is social-only too */
	in.nevents = 0;
	in.now_ms = 6000;
	part_tick(&s, &in, &out);
	assert_false(out.force_action_due);
	part_state_free(&s);
}

static void test_bounds(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[PART_HISTORY_MAX + 10];
	char texts[PART_HISTORY_MAX + 10][16];
	for (int i = 0; i < PART_HISTORY_MAX + 10; i++) {
		snprintf(texts[i], sizeof texts[i], "msg %d", i);
		ev[i] = chat("rebecca", texts[i]);
	}
	struct part_tick_out out;
	tick(&s, "marvin", room3, 3, ev, PART_HISTORY_MAX + 10, 1000, &out);
	assert_int_equal(s.hist_n, PART_HISTORY_MAX);
	assert_string_equal(part_history_at(&s, 0)->text, "msg 10");
	assert_null(part_history_at(&s, PART_HISTORY_MAX));
	/* a long text is cut on a UTF-8 boundary */
	size_t n = PART_TEXT_MAX_BYTES + 7;
	char *big = malloc(n + 1);
	for (size_t i = 0; i < n; i += 2)
		memcpy(big + i, "\xC3\xA9", 2);
	big[n - 1] = 'x';
	big[n] = '\0';
	struct part_event b[1] = {chat("rebecca", big)};
	tick(&s, "marvin", room3, 3, b, 1, 2000, &out);
	const struct part_entry *e = part_history_at(&s, PART_HISTORY_MAX - 1);
	assert_true(e->len <= PART_TEXT_MAX_BYTES);
	assert_int_equal(e->len % 2, 0);
	free(big);
	/* a chat with a NUL byte keeps all its bytes (found by the fuzzer) */
	static const char nul[] = "Create it\0 see github.com/x/y";
	struct part_event z[1] = {
	        {.kind = PART_EV_CHAT, .author = "host", .text = nul, .len = sizeof nul - 1}};
	tick(&s, "marvin", room3, 3, z, 1, 3000, &out);
	e = part_history_at(&s, PART_HISTORY_MAX - 1);
	assert_int_equal(e->len, sizeof nul - 1);
	assert_memory_equal(e->text, nul, sizeof nul);
	assert_string_equal(out.repo, "x/y");
	assert_int_equal(s.req_len, sizeof nul - 1);
	part_state_free(&s);
}

/* §16.9: a bare owner/name after a cue word is a repository too; the
 * usual slashed pairs of chat are not. */
static void test_bare_repo(void **state)
{
	(void)state;
	static const struct {
		const char *text, *repo; /* repo NULL: none detected */
	} cases[] = {
	        {"Create an issue in acme/widgets for the login timeout bug (round 1)",
	         "acme/widgets"},
	        {"File an issue in acme/widgets: the dashboard shows stale counts", "acme/widgets"},
	        {"Open one in the repo my-org/site.io.", "my-org/site.io"},
	        {"push it to Acme/tools.git please", "Acme/tools"},
	        {"a plan for the cache eviction policy in acme/widgets (round 7)", "acme/widgets"},
	        {"we should look at CI/CD and/or TCP/IP", NULL},
	        {"keep it in read/write mode", NULL},
	        {"in 2024/2025 we grew", NULL},
	        {"the file is in src/modules/x.c", NULL}, /* a path */
	        {"see /usr/share in docs", NULL},
	        {"acme/widgets without a cue", NULL},
	        {"in a/b", NULL}, /* too short to tell from I/O */
	        {"email me at bob@acme/widgets", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct part_state s;
		part_state_init(&s);
		struct part_event ev[1] = {chat("host", cases[i].text)};
		struct part_tick_out out;
		tick(&s, "marvin", room3, 3, ev, 1, 1000, &out);
		if (cases[i].repo) {
			if (!out.repo || strcmp(out.repo, cases[i].repo) != 0)
				fail_msg("'%s': detected %s, want %s", cases[i].text,
				         out.repo ? out.repo : "(none)", cases[i].repo);
		} else if (out.repo) {
			fail_msg("'%s': detected %s, want none", cases[i].text, out.repo);
		}
		part_state_free(&s);
	}
	/* the latest mention wins, bare or URL */
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[2] = {chat("host", "see github.com/a/old first"),
	                           chat("rebecca", "it moved to acme/new.")};
	struct part_tick_out out;
	tick(&s, "marvin", room3, 3, ev, 2, 1000, &out);
	assert_string_equal(out.repo, "acme/new");
	part_state_free(&s);
}

static void test_repo_and_context(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[2] = {chat("host", "I think github.com/a/old is slow."),
	                           chat("rebecca", "we moved to https://github.com/b/new.git.")};
	struct part_tick_out out;
	tick(&s, "marvin", room3, 3, ev, 2, 1000, &out);
	assert_string_equal(out.repo, "b/new"); /* latest wins, no ".git." (§16.9) */
	assert_true(out.context & PART_CTX_REPO);
	/* discussion without a request: nobody is told it owns anything (§16.3) */
	assert_false(out.context & PART_CTX_OWNERSHIP);
	assert_false(out.own.is_owner);
	assert_true(out.context & PART_CTX_PEER_COMMITS);
	assert_true(out.context & PART_CTX_HISTORY);
	assert_string_equal(part_context_name(PART_CTX_OWNERSHIP), "ownership");
	assert_string_equal(part_context_name(PART_CTX_FOLLOW_UP), "follow_up");
	assert_string_equal(part_saturation_name(PART_SAT_CIRCLING), "circling");
	part_state_free(&s);
}

static void test_order_independent_tick(void **state)
{
	(void)state;
	const struct part_member a[3] = {M("peterben"), M("rebecca"), M("marvin")};
	const struct part_member b[3] = {M("rebecca"), M("marvin"), M("peterben")};
	struct part_state s1, s2;
	part_state_init(&s1);
	part_state_init(&s2);
	struct part_event ev[1] = {chat("host", "Write a plan for the migration")};
	struct part_tick_out o1, o2;
	tick(&s1, "marvin", a, 3, ev, 1, 1000, &o1);
	tick(&s2, "rebecca", b, 3, ev, 1, 1000, &o2);
	assert_string_equal(o1.own.owner, o2.own.owner);
	assert_true(o1.own.is_owner != o2.own.is_owner || !o1.own.is_owner);
	part_state_free(&s1);
	part_state_free(&s2);
}

/* The tick's facts drive the validator: a non-owner's promise is rejected
 * while the request is open (check 12), the owner's is not, and once the
 * request is fulfilled nobody is a "non-owner" any more. */
static void test_validator_bridge(void **state)
{
	(void)state;
	struct part_state a, b;
	part_state_init(&a);
	part_state_init(&b);
	struct part_event ev[2] = {chat("host", REQ), chat("host", "see github.com/o/r")};
	struct part_tick_out oa, ob;
	tick(&a, "marvin", room3, 3, ev, 1, 1000, &oa);
	tick(&b, "peterben", room3, 3, ev, 1, 1000, &ob);
	struct validator_context ca = {0}, cb = {0};
	part_validator_context(&oa, 0, &ca);
	part_validator_context(&ob, 1, &cb);
	assert_int_equal(ca.mode, VALIDATOR_MODE_ACTION);
	assert_int_equal(ca.role, VALIDATOR_ROLE_REVIEWER);
	assert_false(ca.is_action_owner);
	assert_string_equal(ca.pending_request, REQ);
	assert_int_equal(ca.connected_agents, 3);
	assert_int_equal(cb.n_commitments, 1);
	struct validator_decision vd = {0};
	const char *promise = "I'm drafting the body now.";
	assert_int_equal(validator_validate(promise, &ca, &vd), VALIDATOR_REJECT);
	assert_string_equal(vd.rule, "non_owner_action");
	validator_decision_clear(&vd);
	assert_int_equal(validator_validate(promise, &cb, &vd), VALIDATOR_ACCEPT);
	validator_decision_clear(&vd);
	part_note_fulfilled(&a, "peer_claim");
	tick(&a, "marvin", room3, 3, ev + 1, 1, 2000, &oa);
	part_validator_context(&oa, 0, &ca);
	assert_null(ca.pending_request);
	assert_string_equal(ca.detected_repo, "o/r");
	part_state_free(&a);
	part_state_free(&b);
}

static void test_mentions(void **state)
{
	(void)state;
	const struct part_member m[3] = {M("al"), M("rebecca"), M("marvin")};
	struct part_state s;
	struct part_tick_out out;
	/* no addressed list from the room: names are searched as whole words */
	static const struct {
		const char *self, *text;
		bool me, others;
	} t[] = {
	        {"marvin", "Rebecca, what do you think?", false, true},
	        {"rebecca", "Rebecca, what do you think?", true, false},
	        {"al", "Also I think it is fine", false, false}, /* not "al" in "Also" */
	        {"al", "AL: I think it is fine", true, false},
	        {"marvin", "I think marvin2 is a fine name", false, false},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		part_state_init(&s);
		struct part_event ev[1] = {chat("host", t[i].text)};
		tick(&s, t[i].self, m, 3, ev, 1, 1000, &out);
		if (out.addressed_me != t[i].me || out.addressed_others != t[i].others)
			fail_msg("mention %zu (%s / %s): me %d others %d", i, t[i].self, t[i].text,
			         out.addressed_me, out.addressed_others);
		assert_int_equal(!!(out.context & PART_CTX_ADDRESSED), t[i].me || t[i].others);
		part_state_free(&s);
	}
	/* the room's list wins over the words */
	part_state_init(&s);
	struct part_event ev[1] = {chat("host", "Rebecca, what do you think?")};
	ev[0].addressed_known = true;
	tick(&s, "rebecca", m, 3, ev, 1, 1000, &out);
	assert_false(out.addressed_me);
	part_state_free(&s);
}

/* Nobody can do GitHub work: nobody is muted for not owning it, so someone
 * can tell the host. */
static void test_no_owner_not_muted(void **state)
{
	(void)state;
	const struct part_member m[2] = {{"marvin", social_caps, 1, true, false},
	                                 {"rebecca", social_caps, 1, true, false}};
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_tick_in in = {.self = "marvin",
	                          .social_only = true,
	                          .members = m,
	                          .nmembers = 2,
	                          .events = ev,
	                          .nevents = 1,
	                          .now_ms = 1000};
	struct part_tick_out out;
	part_tick(&s, &in, &out);
	struct part_event p[1] = {chat("rebecca", "hm")};
	in.events = p;
	in.now_ms = 2000;
	part_tick(&s, &in, &out);
	assert_int_equal(out.escalation, PART_ESC_CRITICAL);
	assert_string_equal(out.own.owner, "");
	assert_string_equal(out.why_owner.rule, "no_eligible_owner");
	assert_true(out.call_model);
	part_state_free(&s);
}

static void test_context_data(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	char *p = part_points_made(&s);
	assert_string_equal(p, "");
	free(p);
	struct part_event ev[4] = {
	        chat("host", "Create an issue: I'll want it by Friday!"),
	        chat("rebecca", "I'll open it now, with the checklist."),
	        chat("peterben", "The grid, the tokens; and     more: one two three four five six "
	                         "seven eight nine"),
	        chat("marvin", "Let me think")};
	struct part_tick_out out;
	tick(&s, "marvin", room3, 3, ev, 4, 1000, &out);
	p = part_points_made(&s);
	assert_string_equal(p, "host: Create an issue Ill want it by Friday\n"
	                       "rebecca: Ill open it now with the checklist\n"
	                       "peterben: The grid the tokens and more one two three four\n"
	                       "marvin: Let me think\n");
	free(p);
	/* peers' promises: not the host's, not mine */
	p = part_peer_commitments(&s);
	assert_string_equal(p, "rebecca: \"I'll open it now, with the checklist.\"\n");
	free(p);
	/* bounded: the last PART_POINTS_MAX entries */
	struct part_event many[20];
	for (int i = 0; i < 20; i++)
		many[i] = chat("rebecca", "filing it");
	tick(&s, "marvin", room3, 3, many, 20, 2000, &out);
	p = part_points_made(&s);
	size_t lines = 0;
	for (char *q = p; *q; q++)
		lines += *q == '\n';
	assert_int_equal(lines, PART_POINTS_MAX);
	free(p);
	assert_true(part_text_promises("I\xE2\x80\x99ll do it", 11));
	assert_false(part_text_promises("I like it", 9));
	part_state_free(&s);
}

static void decide(const char *json, struct part_decision *d)
{
	struct ga_err err = {{0}};
	if (part_decision_from_text(json, strlen(json), false, d, &err) < 0)
		fail_msg("%s: %s", json, err.msg);
}

/* §11's fixed words name the work, so two of them are not one text for
 * the outbound dedup (loop-sim: the second "Creating that now." within
 * 300 s was dropped and the request went untaken). */
static void test_words_naming(void **state)
{
	(void)state;
	struct cmt_list c;
	memset(&c, 0, sizeof c);
	char *w = part_words_naming(PART_FORCED_MESSAGE, &c);
	assert_string_equal(w, "Creating that now."); /* nothing to name */
	free(w);
	c.n = 1;
	c.item[0].type = CMT_CREATE_ISSUE;
	c.item[0].description = (char *)"## Flaky tests.\n\nThe body";
	w = part_words_naming(PART_FORCED_MESSAGE, &c);
	assert_string_equal(w, "Creating that now: Flaky tests."); /* first line, no heading */
	free(w);
	c.item[0].title = (char *)"   ";
	w = part_words_naming("On it \xE2\x80\x94 create issue incoming.", &c);
	assert_string_equal(w, "On it \xE2\x80\x94 create issue incoming: Flaky tests.");
	free(w);
	/* cut at PART_WORDS_WHAT_CHARS characters, never inside one */
	char title[400] = "";
	for (int i = 0; i < PART_WORDS_WHAT_CHARS + 10; i++)
		strcat(title, "\xC3\xA9");
	c.item[0].title = title;
	w = part_words_naming(PART_FORCED_MESSAGE, &c);
	assert_int_equal(strlen(w), strlen("Creating that now: ") + 2 * PART_WORDS_WHAT_CHARS + 3);
	assert_string_equal(w + strlen(w) - 5, "\xC3\xA9\xE2\x80\xA6"); /* é… */
	free(w);
	/* words: cut at the last space before the limit */
	c.item[0].title = (char *)"@Cal please open an issue about the flaky websocket tests in "
	                          "acme/widgets (round 3)";
	w = part_words_naming(PART_FORCED_MESSAGE, &c);
	assert_string_equal(w, "Creating that now: @Cal please open an issue about the flaky "
	                       "websocket tests in acme/widgets (round 3)."); /* fits whole */
	free(w);
	c.item[0].title = (char *)"Please open an issue about the flaky websocket tests in "
	                          "acme/widgets that fail on every second run of the reconnect "
	                          "suite (round 3)";
	w = part_words_naming(PART_FORCED_MESSAGE, &c);
	assert_string_equal(w, "Creating that now: Please open an issue about the flaky websocket "
	                       "tests in acme/widgets that fail on every second run of the "
	                       "reconnect\xE2\x80\xA6");
	free(w);
}

/* Liveness: a host question whose answers were all refused is asked again
 * by one agent — the first of the ranking — once, while nobody answered. */
static void test_discussion_retry(void **state)
{
	(void)state;
	const char *q = "What do you all think about moving the build to CMake presets?";
	struct part_ownership o;
	struct decision why;
	part_ownership_compute("marvin", false, room3, 3, q, PART_MODE_ACTION, &o, &why);
	const char *first = o.owner;
	const char *other = strcmp(first, "marvin") ? "marvin" : "rebecca";
	struct part_state a, b;
	part_state_init(&a);
	part_state_init(&b);
	struct part_event ev[1] = {chat("host", q)};
	struct part_tick_out ta, tb;
	tick(&a, first, room3, 3, ev, 1, 1000, &ta);
	tick(&b, other, room3, 3, ev, 1, 1000, &tb);
	assert_int_equal(ta.mode, PART_MODE_DISCUSSION);
	uint64_t seq = part_discussion_retry_due(&a, &ta, first, false, room3, 3, 0, &why);
	assert_true(seq > 0);
	assert_string_equal(why.rule, "discussion_retry");
	/* one agent only: the others leave it to the first of the ranking */
	assert_int_equal(part_discussion_retry_due(&b, &tb, other, false, room3, 3, 0, &why), 0);
	assert_string_equal(why.rule, "no_discussion_retry");
	assert_non_null(strstr(why.reason, first));
	/* once per host message */
	assert_int_equal(part_discussion_retry_due(&a, &ta, first, false, room3, 3, seq, &why), 0);
	assert_non_null(strstr(why.reason, "already retried"));
	/* somebody answered meanwhile: nothing to do */
	struct part_event ans[1] = {chat(other, "Presets would pin the toolchain per target.")};
	tick(&a, first, room3, 3, ans, 1, 2000, &ta);
	assert_int_equal(part_discussion_retry_due(&a, &ta, first, false, room3, 3, 0, &why), 0);
	assert_non_null(strstr(why.reason, "already answered"));
	/* not for an action request (the owner retry is for that) */
	struct part_event req[1] = {chat("host", "Create an issue for the prod checklist")};
	tick(&a, first, room3, 3, req, 1, 3000, &ta);
	assert_int_equal(part_discussion_retry_due(&a, &ta, first, false, room3, 3, 0, &why), 0);
	assert_non_null(strstr(why.reason, "not a discussion"));
	part_state_free(&a);
	part_state_free(&b);
}

static void test_recover(void **state)
{
	(void)state;
	struct part_state own, other;
	part_state_init(&own);
	part_state_init(&other);
	struct part_event ev[1] = {chat("host", REQ)};
	struct part_tick_out to, tn;
	tick(&own, "peterben", room3, 3, ev, 1, 1000, &to);
	tick(&other, "marvin", room3, 3, ev, 1, 1000, &tn);
	struct part_decision d = {0};
	struct decision why;
	const char *silent = "{\"shouldSpeak\":false,\"reason\":\"r\",\"commitments\":[{\"type\":"
	                     "\"create_issue\",\"title\":\"Checklist\"}]}";
	/* §16.7: a silent owner's commitment is salvaged */
	decide(silent, &d);
	assert_true(part_salvage(&d, &to, false, false, &why));
	assert_string_equal(why.rule, "salvage");
	assert_true(d.should_speak);
	assert_string_equal(d.message, "On it \xE2\x80\x94 create issue incoming: Checklist.");
	part_decision_clear(&d);
	/* §16.16: not a non-owner's, while another agent owns the open request */
	decide(silent, &d);
	assert_false(part_salvage(&d, &tn, false, false, &why));
	assert_non_null(strstr(why.reason, "peterben owns"));
	part_decision_clear(&d);
	/* a rejection that forbids salvage (non-owner action) */
	decide("{\"shouldSpeak\":true,\"message\":\"I'll do it\",\"commitments\":[{\"type\":"
	       "\"create_plan\",\"title\":\"p\"}]}",
	       &d);
	assert_false(part_salvage(&d, &to, true, false, &why));
	/* one that allows it (check 1, 2, 4, 8, 9) */
	assert_true(part_salvage(&d, &to, true, true, &why));
	assert_string_equal(d.message, "On it \xE2\x80\x94 create plan incoming: p.");
	part_decision_clear(&d);
	/* nothing to salvage */
	decide("{\"shouldSpeak\":false}", &d);
	assert_false(part_salvage(&d, &to, false, false, &why));
	part_decision_clear(&d);
	decide("{\"shouldSpeak\":true,\"message\":\"fine\"}", &d);
	assert_false(part_salvage(&d, &to, false, false, &why));
	part_decision_clear(&d);

	/* §11.2 owner retry acceptance */
	decide("{\"shouldSpeak\":true,\"message\":\"\",\"commitments\":[{\"type\":\"x\"}]}", &d);
	assert_int_equal(part_owner_retry_accept(&d, NULL, &why), -1);
	assert_string_equal(why.rule, "retry_no_commitment");
	part_decision_clear(&d);
	decide("{\"shouldSpeak\":false,\"commitments\":[{\"action\":\"create_issue\","
	       "\"name\":\"t\"}]}",
	       &d);
	assert_int_equal(part_owner_retry_accept(&d, NULL, &why), 0);
	assert_true(d.should_speak);
	assert_string_equal(d.message, "Creating that now: t."); /* names the work */
	part_decision_clear(&d);
	/* the model's own words stay; the template's words name the work */
	decide("{\"shouldSpeak\":true,\"message\":\"Filing the checklist issue.\","
	       "\"commitments\":[{\"type\":\"create_issue\",\"title\":\"t\"}]}",
	       &d);
	assert_int_equal(part_owner_retry_accept(&d, NULL, &why), 0);
	assert_string_equal(d.message, "Filing the checklist issue.");
	part_decision_clear(&d);
	decide("{\"shouldSpeak\":true,\"message\":\"Creating that now.\","
	       "\"commitments\":[{\"type\":\"create_issue\",\"title\":\"Login bug\"}]}",
	       &d);
	assert_int_equal(part_owner_retry_accept(&d, NULL, &why), 0);
	assert_string_equal(d.message, "Creating that now: Login bug.");
	part_decision_clear(&d);
	/* declines: retries while ≤ 2, forced at the third */
	assert_true(part_note_owner_declined(&own));
	assert_true(part_note_owner_declined(&own));
	assert_false(part_note_owner_declined(&own));

	/* §11.3 forced action: due on the owner's second cycle, needs a repo */
	assert_int_equal(part_forced_decision(&own, &to, false, NULL, &d, &why), -1);
	assert_string_equal(why.rule, "forced_not_due"); /* cycle 1, to is stale */
	tick(&own, "peterben", room3, 3, NULL, 0, 6000, &to);
	assert_true(to.force_action_due);
	assert_int_equal(part_forced_decision(&own, &to, false, NULL, &d, &why), -1);
	assert_string_equal(why.rule, "forced_no_repo");
	struct part_event r[1] = {chat("rebecca", "it lives at github.com/acme/site.")};
	tick(&own, "peterben", room3, 3, r, 1, 7000, &to);
	assert_true(to.force_action_due);
	assert_int_equal(part_forced_decision(&own, &to, false, NULL, &d, &why), 0);
	assert_string_equal(why.rule, "forced_action");
	assert_true(d.should_speak);
	assert_string_equal(d.message,
	                    "Creating that now: Create an issue for the prod checklist.");
	assert_int_equal(d.commitments.n, 1);
	assert_int_equal(d.commitments.item[0].type, CMT_CREATE_ISSUE);
	assert_string_equal(d.commitments.item[0].repo, "acme/site");
	assert_string_equal(d.commitments.item[0].title, REQ);
	assert_non_null(strstr(d.commitments.item[0].description, "## "
	                                                          "Create an issue"));
	assert_non_null(strstr(d.commitments.item[0].description,
	                       "rebecca: it lives at github.com/acme/site."));
	part_decision_clear(&d);
	assert_int_equal(part_forced_decision(&own, &to, false, "A body from the model", &d, &why),
	                 0);
	assert_string_equal(d.commitments.item[0].description, "A body from the model");
	part_decision_clear(&d);
	/* a non-owner is never forced */
	tick(&other, "marvin", room3, 3, NULL, 0, 6000, &tn);
	assert_false(tn.force_action_due);
	assert_int_equal(part_forced_decision(&other, &tn, false, NULL, &d, &why), -1);
	part_state_free(&own);
	part_state_free(&other);
}

static void test_decline_quiet(void **state)
{
	(void)state;
	struct part_state s;
	part_state_init(&s);
	struct part_event ev[1] = {chat("host", "I think the grid is nice")};
	struct part_tick_out out;
	tick(&s, "marvin", room3, 3, ev, 1, 1000, &out);
	assert_true(out.call_model);
	part_note_declined(&s, 1500);
	/* a peer speaks: no new call during the quiet, the message is kept */
	struct part_event p[1] = {chat("rebecca", "the grid is nice")};
	tick(&s, "marvin", room3, 3, p, 1, 5000, &out);
	assert_false(out.call_model);
	assert_string_equal(out.verdict.rule, "declined_recently");
	tick(&s, "marvin", room3, 3, NULL, 0, 8000, &out);
	assert_string_equal(out.verdict.rule, "declined_recently");
	/* the quiet ends: what was said meanwhile is answered */
	tick(&s, "marvin", room3, 3, NULL, 0, 11600, &out);
	assert_true(out.call_model);
	tick(&s, "marvin", room3, 3, NULL, 0, 12000, &out);
	assert_string_equal(out.verdict.rule, "no_new_messages");
	/* the host speaking ends the quiet at once */
	part_note_declined(&s, 13000);
	struct part_event h[1] = {chat("host", "I wonder about colours")};
	tick(&s, "marvin", room3, 3, h, 1, 14000, &out);
	assert_true(out.call_model);
	/* speaking ends it too */
	part_note_declined(&s, 14500);
	part_note_sent(&s, "marvin", "colours are fine", 16, 14600, 0);
	tick(&s, "marvin", room3, 3, p, 1, 15000, &out);
	assert_true(out.call_model);
	part_state_free(&s);
	/* the owner of an open request is never quieted */
	part_state_init(&s);
	struct part_event r[1] = {chat("host", REQ)};
	tick(&s, "peterben", room3, 3, r, 1, 15000, &out);
	part_note_declined(&s, 15500);
	tick(&s, "peterben", room3, 3, p, 1, 16000, &out);
	assert_true(out.own.is_owner);
	assert_true(out.call_model);
	part_state_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_request_owner_escalation),
	        cmocka_unit_test(test_defaulted_owner),
	        cmocka_unit_test(test_follow_up_boost),
	        cmocka_unit_test(test_repeated_request),
	        cmocka_unit_test(test_idle_reset),
	        cmocka_unit_test(test_saturation),
	        cmocka_unit_test(test_observer_and_budget),
	        cmocka_unit_test(test_owner_not_muted),
	        cmocka_unit_test(test_cooldown),
	        cmocka_unit_test(test_host_identity),
	        cmocka_unit_test(test_replay_and_claims),
	        cmocka_unit_test(test_layer2),
	        cmocka_unit_test(test_social_only_self),
	        cmocka_unit_test(test_bounds),
	        cmocka_unit_test(test_bare_repo),
	        cmocka_unit_test(test_repo_and_context),
	        cmocka_unit_test(test_order_independent_tick),
	        cmocka_unit_test(test_validator_bridge),
	        cmocka_unit_test(test_mentions),
	        cmocka_unit_test(test_no_owner_not_muted),
	        cmocka_unit_test(test_context_data),
	        cmocka_unit_test(test_words_naming),
	        cmocka_unit_test(test_discussion_retry),
	        cmocka_unit_test(test_recover),
	        cmocka_unit_test(test_decline_quiet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
