/*
 * Bluesky policy (modules/bluesky/policy.h), table-driven: every threshold
 * and boundary.
 *
 *   closings      isLowValueClosing with the word-boundary fix, the
 *                 substantive-length rule, questions and code;
 *   respond       shouldRespondTo: owner, kinds, empty, short texts, emoji
 *                 (digits are not emoji), acks, closings, questions;
 *   priority      §6.2's sums;
 *   chain         person 0, agent max(1, carried, derived), derived counts;
 *   circular      none / low / medium / high and what breaks each;
 *   conversation  replies per thread at max-1 / max, depth, quick acks,
 *                 owner bypass, re-engagement (casual once, project always,
 *                 a timeout conclusion freely), multi-party closing, the
 *                 sweep's no-response / silence / stale edges, self-check;
 *   pacing        per-type and shared gaps, exact edges;
 *   hygiene       normalisation and the pruning plan (Scenario 1.5);
 *   peers         identity text and parsing, announcement text;
 *   rituals       role determinism and spread, schedule / dedup / quiet /
 *                 early edges;
 *   expression    next time after a restart, quiet hours, daily cap;
 *   invitation    §7.1's strong / weak / none, each rule and its edges;
 *   commitments   §6.12's params of a promise and each refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/bluesky/policy.h"

#define T0  1763892000000LL
#define MIN (60LL * 1000)

/* ---- closings ----------------------------------------------------------------------- */

static void test_closings(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		bool closing;
	} cases[] = {
	        {"Thanks!", true},
	        {"thank you so much, this was great", true},
	        {"Appreciate it!", true},
	        {"Likewise!", true},
	        {"Absolutely, looking forward to it!", true},
	        {"Sounds good, see you in the PR", true},
	        {"I'll stop here.", true},
	        {"let's keep the rest in the issue", true},
	        {"Tag me when it lands", true},
	        {"I'll wait for the big PR", true},
	        {"please don't keep looping on this", true},
	        /* word boundary (§11.4) */
	        {"Greater minds than mine have tried this approach", false},
	        {"Dealing with retries means backoff first", false},
	        {"TypeScript narrows unions here", false},
	        {"On its own the cache is not enough", false},
	        {"Nicely put, the parser is the weak spot", false},
	        {"tyranny of defaults", false},
	        /* questions and code are never closings */
	        {"Thanks! What about the retry path?", false},
	        {"thanks ```x = 1```", false},
	        /* substantive: a long gratitude-led reply */
	        {"Thanks! I looked at the parser and the real bug is in how the tokenizer "
	         "handles the escape at the end of a line, which also explains the earlier crash.",
	         false},
	        {"", false},
	        {"   ", false},
	        {"The build is green now", false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (bsky_is_low_value_closing(cases[i].text) != cases[i].closing)
			fail_msg("case %zu \"%s\": expected %s", i, cases[i].text,
			         cases[i].closing ? "closing" : "not closing");
	}
	assert_false(bsky_is_low_value_closing(NULL));
	/* the substantive boundary: 120 bytes is still a closing, 121 is not */
	char buf[200] = "Thanks ";
	memset(buf + 7, 'x', 113);
	buf[120] = 0;
	assert_true(bsky_is_low_value_closing(buf));
	buf[120] = 'x';
	buf[121] = 0;
	assert_false(bsky_is_low_value_closing(buf));
	/* closing intent counts up to 200 bytes */
	char lf[260] = "looking forward ";
	memset(lf + 16, 'y', 183);
	lf[199] = 0;
	assert_true(bsky_is_low_value_closing(lf));
	memset(lf + 16, 'y', 184);
	lf[200] = 0;
	assert_false(bsky_is_low_value_closing(lf));
}

/* ---- shouldRespondTo --------------------------------------------------------------- */

static void test_should_respond(void **state)
{
	(void)state;
	static const struct {
		enum bsky_reason reason;
		bool owner;
		const char *text;
		enum bsky_response want;
		const char *rule;
	} cases[] = {
	        {BSKY_REASON_REPLY, true, "Thanks!", BSKY_RESPOND, "owner"},
	        {BSKY_REASON_LIKE, false, "", BSKY_SKIP, "acknowledgment_only"},
	        {BSKY_REASON_FOLLOW, false, NULL, BSKY_SKIP, "acknowledgment_only"},
	        {BSKY_REASON_REPOST, false, "x", BSKY_SKIP, "acknowledgment_only"},
	        {BSKY_REASON_REPLY, false, "   ", BSKY_SKIP, "empty"},
	        {BSKY_REASON_REPLY, false, "why?", BSKY_RESPOND, "question"},
	        {BSKY_REASON_REPLY, false, "\xF0\x9F\x94\xA5\xF0\x9F\x94\xA5", BSKY_LIKE,
	         "emoji_reaction"},
	        {BSKY_REASON_REPLY, false, "\xE2\x9D\xA4\xEF\xB8\x8F", BSKY_LIKE, "emoji_reaction"},
	        /* digits are not emoji (§11.4): "42" is a short text, borderline */
	        {BSKY_REASON_REPLY, false, "42", BSKY_RESPOND, "direct"},
	        {BSKY_REASON_REPLY, false, "Thanks!", BSKY_LIKE, "low_value_ack"},
	        {BSKY_REASON_MENTION, false, "lol lol", BSKY_LIKE, "low_value_ack"},
	        {BSKY_REASON_REPLY, false, "\xF0\x9F\x92\xAF\xF0\x9F\x92\xAF", BSKY_LIKE,
	         "emoji_reaction"},
	        {BSKY_REASON_REPLY, false, "ok.", BSKY_LIKE, "low_value_ack"},
	        {BSKY_REASON_REPLY, false, "Appreciate it, see you in the PR", BSKY_LIKE,
	         "closing"},
	        {BSKY_REASON_QUOTE, false, "what do you make of the new lexicon?", BSKY_RESPOND,
	         "question"},
	        {BSKY_REASON_MENTION, false, "the parser fails on nested quotes", BSKY_RESPOND,
	         "direct"},
	        {BSKY_REASON_QUOTE, false, "short quote here", BSKY_RESPOND, "borderline"},
	        {BSKY_REASON_QUOTE, false, "this quote is long enough to say a thing", BSKY_RESPOND,
	         "quote"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct decision d;
		enum bsky_response r =
		        bsky_should_respond(cases[i].reason, cases[i].owner, cases[i].text, &d);
		if (r != cases[i].want || strcmp(d.rule, cases[i].rule) != 0)
			fail_msg("case %zu \"%s\": got %d/%s, want %d/%s", i,
			         cases[i].text ? cases[i].text : "(null)", r, d.rule, cases[i].want,
			         cases[i].rule);
	}
	assert_true(bsky_is_emoji_only("\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD")); /* thumbs + skin */
	assert_false(bsky_is_emoji_only("#1"));
	assert_false(bsky_is_emoji_only("*"));
	assert_false(bsky_is_emoji_only(""));
	assert_int_equal(bsky_reason_parse("quote"), BSKY_REASON_QUOTE);
	assert_int_equal(bsky_reason_parse("starterpack-joined"), BSKY_REASON_OTHER);
}

static void test_priority(void **state)
{
	(void)state;
	struct bsky_prio_facts f = {.reason = BSKY_REASON_REPLY, .to_our_content = true};
	assert_int_equal(bsky_priority(&f), 50 + 50 + 30 + 5);
	f.from_owner = true;
	assert_int_equal(bsky_priority(&f), 185);
	f = (struct bsky_prio_facts){.reason = BSKY_REASON_QUOTE,
	                             .known = true,
	                             .positive = true,
	                             .interactions = 5,
	                             .unread = true};
	assert_int_equal(bsky_priority(&f), 50 + 25 + 15 + 10 + 20 + 10);
	f.interactions = 4;
	f.ever_responded = true;
	assert_int_equal(bsky_priority(&f), 50 + 25 + 15 + 10);
	f = (struct bsky_prio_facts){.reason = BSKY_REASON_LIKE, .to_our_content = true};
	assert_int_equal(bsky_priority(&f), 55);
}

/* Relationship sentiment over the last 10 interactions: 3 warm ones
 * (like / repost / follow) make positive, 1-2 neutral, none keep what was. */
static void test_sentiment(void **state)
{
	(void)state;
	enum bsky_reason t[12] = {BSKY_REASON_REPLY, BSKY_REASON_MENTION, BSKY_REASON_QUOTE};
	/* no warm interaction: unchanged, whatever it was */
	assert_int_equal(bsky_sentiment_of(t, 0, BSKY_SENTIMENT_UNKNOWN), BSKY_SENTIMENT_UNKNOWN);
	assert_int_equal(bsky_sentiment_of(t, 3, BSKY_SENTIMENT_UNKNOWN), BSKY_SENTIMENT_UNKNOWN);
	assert_int_equal(bsky_sentiment_of(t, 3, BSKY_SENTIMENT_POSITIVE), BSKY_SENTIMENT_POSITIVE);
	/* 1 and 2 warm: neutral (even from positive) */
	t[3] = BSKY_REASON_LIKE;
	assert_int_equal(bsky_sentiment_of(t, 4, BSKY_SENTIMENT_UNKNOWN), BSKY_SENTIMENT_NEUTRAL);
	assert_int_equal(bsky_sentiment_of(t, 4, BSKY_SENTIMENT_POSITIVE), BSKY_SENTIMENT_NEUTRAL);
	t[4] = BSKY_REASON_FOLLOW;
	assert_int_equal(bsky_sentiment_of(t, 5, BSKY_SENTIMENT_UNKNOWN), BSKY_SENTIMENT_NEUTRAL);
	/* the third: positive */
	t[5] = BSKY_REASON_REPOST;
	assert_int_equal(bsky_sentiment_of(t, 6, BSKY_SENTIMENT_UNKNOWN), BSKY_SENTIMENT_POSITIVE);
	/* only the last 10 count: with 12, t[0..1] are out of the window */
	enum bsky_reason w[12];
	for (int i = 0; i < 12; i++)
		w[i] = BSKY_REASON_REPLY;
	w[0] = w[1] = BSKY_REASON_LIKE;
	w[11] = BSKY_REASON_LIKE;
	assert_int_equal(bsky_sentiment_of(w, 12, BSKY_SENTIMENT_UNKNOWN), BSKY_SENTIMENT_NEUTRAL);
	w[2] = BSKY_REASON_LIKE;
	w[3] = BSKY_REASON_LIKE;
	assert_int_equal(bsky_sentiment_of(w, 12, BSKY_SENTIMENT_UNKNOWN), BSKY_SENTIMENT_POSITIVE);
	assert_string_equal(bsky_sentiment_name(BSKY_SENTIMENT_POSITIVE), "positive");
	assert_int_equal(bsky_sentiment_parse("neutral"), BSKY_SENTIMENT_NEUTRAL);
	assert_int_equal(bsky_sentiment_parse("warm"), -1);
	assert_string_equal(bsky_reason_name(BSKY_REASON_REPOST), "repost");
	assert_string_equal(bsky_reason_name(BSKY_REASON_OTHER), "other");
	assert_int_equal(bsky_reason_parse(bsky_reason_name(BSKY_REASON_FOLLOW)),
	                 BSKY_REASON_FOLLOW);
}

/* Idle > 60 days forgets; > 90 when positive or with >= 5 interactions. */
static void test_rel_expired(void **state)
{
	(void)state;
	const int64_t day = 24LL * 3600 * 1000, now = 200 * day;
	assert_false(bsky_rel_expired(now - 60 * day, false, 1, now)); /* exactly 60: kept */
	assert_true(bsky_rel_expired(now - 60 * day - 1, false, 4, now));
	assert_false(bsky_rel_expired(now - 61 * day, true, 1, now));
	assert_false(bsky_rel_expired(now - 61 * day, false, 5, now));
	assert_false(bsky_rel_expired(now - 90 * day, true, 0, now));
	assert_true(bsky_rel_expired(now - 90 * day - 1, true, 0, now));
	assert_true(bsky_rel_expired(now - 91 * day, false, 9, now));
}

static void test_chain(void **state)
{
	(void)state;
	assert_int_equal(bsky_chain_in(false, 7, 7), 0);
	assert_int_equal(bsky_chain_in(true, -1, -1), 1);
	assert_int_equal(bsky_chain_in(true, 3, 1), 3);
	assert_int_equal(bsky_chain_in(true, 0, 4), 4); /* a rewritten marker loses */
	bool a[] = {false, true, true, false, true, true, true};
	assert_int_equal(bsky_derived_chain(a, 7), 3);
	assert_int_equal(bsky_derived_chain(a, 4), 0);
	assert_int_equal(bsky_derived_chain(a, 0), 0);
	bool all[] = {true, true};
	assert_int_equal(bsky_derived_chain(all, 2), 2);
}

/* ---- circular ---------------------------------------------------------------------- */

static void test_circular(void **state)
{
	(void)state;
	struct bsky_thread_post high[] = {
	        {"did:a", "Here is the plan for the parser"},
	        {"did:b", "Thanks! Will do, looking forward to it"},
	        {"did:a", "Great, I'll wait for it"},
	        {"did:b", "Awesome, excited to see it"},
	        {"did:a", "Thank you, once it's up I'll look"},
	};
	assert_int_equal(bsky_circular_level(high, 5), BSKY_CIRC_HIGH);
	struct bsky_thread_post medium[] = {
	        {"did:a", "The tokenizer is fixed"},
	        {"did:b", "Thanks for that"},
	        {"did:a", "Nice work on the tests"},
	        {"did:b", "Cool, the release is out"},
	};
	assert_int_equal(bsky_circular_level(medium, 4), BSKY_CIRC_MEDIUM);
	/* a question anywhere in the window breaks it */
	struct bsky_thread_post q[] = {{"did:a", "Thanks!"},
	                               {"did:b", "Thanks!"},
	                               {"did:a", "Thanks!"},
	                               {"did:b", "why?"}};
	assert_int_equal(bsky_circular_level(q, 4), BSKY_CIRC_NONE);
	/* three parties: not a two-party loop */
	struct bsky_thread_post three[] = {{"did:a", "Thanks!"},
	                                   {"did:b", "Thanks!"},
	                                   {"did:c", "Thanks!"},
	                                   {"did:a", "Thanks!"}};
	assert_int_equal(bsky_circular_level(three, 4), BSKY_CIRC_NONE);
	/* not alternating: low */
	struct bsky_thread_post low[] = {{"did:a", "Thanks!"},
	                                 {"did:a", "Great stuff"},
	                                 {"did:b", "ok then"},
	                                 {"did:b", "fine"}};
	assert_int_equal(bsky_circular_level(low, 4), BSKY_CIRC_LOW);
	/* too short */
	assert_int_equal(bsky_circular_level(medium, 3), BSKY_CIRC_NONE);
	assert_string_equal(bsky_circular_name(BSKY_CIRC_MEDIUM), "medium");
}

/* ---- conversations ------------------------------------------------------------------ */

static const struct self_mechanics mech = {.max_replies_before_exit = 4,
                                           .max_thread_depth = 12,
                                           .silence_threshold_ms = 30 * MIN,
                                           .no_response_timeout_ms = 60 * MIN,
                                           .skip_low_value_acks = true};

static void test_conv_replies(void **state)
{
	(void)state;
	struct bsky_conv c;
	struct decision d;
	bsky_conv_init(&c, T0);
	int64_t t = T0;
	/* not closed after our 2nd reply: answered up to the maximum */
	for (int i = 0; i < 4; i++) {
		t += 2 * MIN; /* quick, substantive answers */
		bsky_conv_note_incoming(&c, "did:h", i * 2 + 1, false, t);
		if (!bsky_conv_should_respond(&c, "did:h", false, true, &mech, t, &d))
			fail_msg("reply %d refused: %s", i + 1, d.reason);
		assert_string_equal(d.rule, "conversation");
		bsky_conv_note_our_reply(&c, i * 2 + 2, t + 1000);
		assert_int_equal(c.state, BSKY_CONV_AWAITING);
	}
	t += 2 * MIN;
	bsky_conv_note_incoming(&c, "did:h", 9, false, t);
	assert_int_equal(c.state, BSKY_CONV_ACTIVE);
	assert_false(bsky_conv_should_respond(&c, "did:h", false, true, &mech, t, &d));
	assert_int_equal(d.verdict, VERDICT_REACT);
	assert_string_equal(d.rule, "replies_per_thread");
	/* the owner still gets an answer, told why it is past the limit */
	assert_true(bsky_conv_should_respond(&c, "did:o", true, true, &mech, t, &d));
	assert_string_equal(d.rule, "owner");
	assert_non_null(strstr(d.reason, "4 replies"));
	/* a SELF.md of 2: the second reply is the last */
	struct self_mechanics two = mech;
	two.max_replies_before_exit = 2;
	bsky_conv_init(&c, T0);
	bsky_conv_note_our_reply(&c, 1, T0);
	assert_true(bsky_conv_should_respond(&c, "did:h", false, true, &two, T0, &d));
	bsky_conv_note_our_reply(&c, 3, T0);
	assert_false(bsky_conv_should_respond(&c, "did:h", false, true, &two, T0, &d));
	/* project threads: 10 */
	c.project = true;
	assert_true(bsky_conv_should_respond(&c, "did:h", false, true, &two, T0, &d));
	c.our_replies = 10;
	assert_false(bsky_conv_should_respond(&c, "did:h", false, true, &two, T0, &d));
}

static void test_conv_depth_and_acks(void **state)
{
	(void)state;
	struct bsky_conv c;
	struct decision d;
	bsky_conv_init(&c, T0);
	bsky_conv_note_incoming(&c, "did:h", 11, false, T0);
	assert_true(bsky_conv_should_respond(&c, "did:h", false, true, &mech, T0, &d));
	bsky_conv_note_incoming(&c, "did:h", 12, false, T0);
	assert_false(bsky_conv_should_respond(&c, "did:h", false, true, &mech, T0, &d));
	assert_string_equal(d.rule, "thread_depth");

	/* quick acknowledgments: theirs, within 5 min of ours, two in a row */
	bsky_conv_init(&c, T0);
	bsky_conv_note_our_reply(&c, 1, T0);
	bsky_conv_note_incoming(&c, "did:h", 2, true, T0 + 5 * MIN); /* exactly 5 min: not quick */
	assert_int_equal(c.quick_acks, 0);
	bsky_conv_note_our_reply(&c, 3, T0 + 6 * MIN);
	bsky_conv_note_incoming(&c, "did:h", 4, true, T0 + 6 * MIN + 1000);
	assert_int_equal(c.quick_acks, 1);
	assert_true(bsky_conv_should_respond(&c, "did:h", false, true, &mech, T0, &d));
	bsky_conv_note_incoming(&c, "did:h", 5, true, T0 + 7 * MIN);
	assert_false(bsky_conv_should_respond(&c, "did:h", false, true, &mech, T0, &d));
	assert_string_equal(d.rule, "back_and_forth");
	/* a substantive post resets the run */
	bsky_conv_note_incoming(&c, "did:h", 6, false, T0 + 8 * MIN);
	assert_int_equal(c.quick_acks, 0);
	/* turned off in SELF.md */
	struct self_mechanics off = mech;
	off.skip_low_value_acks = false;
	c.quick_acks = 5;
	assert_true(bsky_conv_should_respond(&c, "did:h", false, true, &off, T0, &d));
}

static void test_conv_reengage(void **state)
{
	(void)state;
	struct bsky_conv c;
	struct decision d;
	bsky_conv_init(&c, T0);
	bsky_conv_note_our_reply(&c, 1, T0);
	bsky_conv_conclude(&c, NULL, "graceful exit", T0 + MIN);
	/* not genuine (a closing): stays closed */
	assert_false(bsky_conv_should_respond(&c, "did:h", false, false, &mech, T0, &d));
	assert_string_equal(d.rule, "concluded");
	/* a genuine question reopens a casual thread once */
	assert_true(bsky_conv_should_respond(&c, "did:h", false, true, &mech, T0, &d));
	assert_string_equal(d.rule, "reengage");
	bsky_conv_reengage(&c, true);
	assert_int_equal(c.reengagements, 1);
	bsky_conv_conclude(&c, NULL, "graceful exit", T0 + 2 * MIN);
	assert_false(bsky_conv_should_respond(&c, "did:h", false, true, &mech, T0, &d));
	assert_string_equal(d.rule, "concluded");
	/* the owner always */
	assert_true(bsky_conv_should_respond(&c, "did:o", true, false, &mech, T0, &d));
	/* a project thread without limit */
	c.project = true;
	assert_true(bsky_conv_should_respond(&c, "did:h", false, true, &mech, T0, &d));
	/* a timeout conclusion reopens freely (a late answer is an answer) */
	bsky_conv_init(&c, T0);
	bsky_conv_note_our_reply(&c, 1, T0);
	assert_true(bsky_conv_sweep(&c, &mech, T0 + 60 * MIN + 1, &d));
	assert_string_equal(d.rule, "no_response");
	assert_true(c.concluded_by_timeout);
	c.reengagements = 1;
	assert_true(bsky_conv_should_respond(&c, "did:h", false, true, &mech, T0, &d));
	bsky_conv_reengage(&c, true);
	assert_int_equal(c.reengagements, 1); /* not counted */
}

static void test_conv_multiparty(void **state)
{
	(void)state;
	struct bsky_conv c;
	struct decision d;
	bsky_conv_init(&c, T0);
	bsky_conv_note_incoming(&c, "did:a", 1, false, T0);
	bsky_conv_note_incoming(&c, "did:b", 2, false, T0 + MIN);
	/* a closes; b is still talking (§11.28) */
	bsky_conv_conclude(&c, "did:a", "closing", T0 + 2 * MIN);
	assert_int_not_equal(c.state, BSKY_CONV_CONCLUDED);
	assert_true(bsky_conv_should_respond(&c, "did:b", false, true, &mech, T0, &d));
	assert_false(bsky_conv_should_respond(&c, "did:a", false, false, &mech, T0, &d));
	/* b closes too, later: now the thread is concluded */
	bsky_conv_conclude(&c, "did:b", "closing", T0 + 20 * MIN);
	assert_int_equal(c.state, BSKY_CONV_CONCLUDED);
	/* bounded participants: the least recently active is replaced */
	bsky_conv_init(&c, T0);
	char did[32];
	for (int i = 0; i < BSKY_CONV_MAX_PARTICIPANTS + 3; i++) {
		snprintf(did, sizeof did, "did:p%d", i);
		bsky_conv_note_incoming(&c, did, i, false, T0 + i);
	}
	assert_int_equal(c.nwho, BSKY_CONV_MAX_PARTICIPANTS);
	bool has_first = false, has_last = false;
	for (size_t i = 0; i < c.nwho; i++) {
		has_first |= strcmp(c.who[i].did, "did:p0") == 0;
		has_last |= strcmp(c.who[i].did, "did:p10") == 0;
	}
	assert_false(has_first);
	assert_true(has_last);
}

static void test_conv_sweep(void **state)
{
	(void)state;
	struct bsky_conv c;
	struct decision d;
	/* no response: exactly the timeout is not past it */
	bsky_conv_init(&c, T0);
	bsky_conv_note_our_reply(&c, 1, T0);
	assert_false(bsky_conv_sweep(&c, &mech, T0 + 60 * MIN, &d));
	assert_true(bsky_conv_sweep(&c, &mech, T0 + 60 * MIN + 1, &d));
	assert_int_equal(c.state, BSKY_CONV_CONCLUDED);
	/* silence: everyone else quiet longer than 30 min */
	bsky_conv_init(&c, T0);
	bsky_conv_note_incoming(&c, "did:a", 1, false, T0);
	bsky_conv_note_incoming(&c, "did:b", 2, false, T0 + 10 * MIN);
	assert_false(bsky_conv_sweep(&c, &mech, T0 + 40 * MIN, &d));
	assert_true(bsky_conv_sweep(&c, &mech, T0 + 40 * MIN + 1, &d));
	assert_string_equal(d.rule, "silence");
	/* stale after 7 days idle */
	bsky_conv_init(&c, T0);
	c.state = BSKY_CONV_NEW;
	assert_false(bsky_conv_sweep(&c, &mech, T0 + BSKY_STALE_AFTER_MS, &d));
	assert_true(bsky_conv_sweep(&c, &mech, T0 + BSKY_STALE_AFTER_MS + 1, &d));
	assert_int_equal(c.state, BSKY_CONV_STALE);
	assert_false(bsky_conv_sweep(&c, &mech, T0 + 2 * BSKY_STALE_AFTER_MS, &d));
	/* self-check */
	bsky_conv_init(&c, T0);
	assert_false(bsky_self_check_to_like(&c, "Absolutely, looking forward to it!"));
	bsky_conv_note_our_reply(&c, 1, T0);
	assert_true(bsky_self_check_to_like(&c, "Absolutely, looking forward to it!"));
	assert_false(bsky_self_check_to_like(&c, "The fix is in the tokenizer's escape path"));
	assert_int_equal(bsky_conv_state_parse("awaiting_response"), BSKY_CONV_AWAITING);
	assert_int_equal(bsky_conv_state_parse("x"), -1);
}

/* ---- pacing -------------------------------------------------------------------------- */

static void test_pacing(void **state)
{
	(void)state;
	struct bsky_pacing p;
	bsky_pacing_init(&p);
	assert_int_equal(bsky_pacing_wait(&p, BSKY_ACT_POST, T0), 0);
	bsky_pacing_note(&p, BSKY_ACT_POST, T0);
	assert_int_equal(bsky_pacing_wait(&p, BSKY_ACT_POST, T0 + 1000), BSKY_PACE_POST_MS - 1000);
	/* a reply waits only for the shared gap, not behind the post (§6.11) */
	assert_int_equal(bsky_pacing_wait(&p, BSKY_ACT_REPLY, T0 + 1000), BSKY_PACE_ANY_MS - 1000);
	assert_int_equal(bsky_pacing_wait(&p, BSKY_ACT_REPLY, T0 + BSKY_PACE_ANY_MS), 0);
	bsky_pacing_note(&p, BSKY_ACT_REPLY, T0 + BSKY_PACE_ANY_MS);
	assert_int_equal(bsky_pacing_wait(&p, BSKY_ACT_REPLY, T0 + BSKY_PACE_ANY_MS + 1),
	                 BSKY_PACE_REPLY_MS - 1);
	assert_int_equal(bsky_pacing_wait(&p, BSKY_ACT_LIKE, T0 + BSKY_PACE_ANY_MS + 1),
	                 BSKY_PACE_ANY_MS - 1);
	/* many actions: never turns itself off (§11.5) */
	int64_t t = T0 + 10 * MIN;
	for (int i = 0; i < 20; i++) {
		t += BSKY_PACE_REPLY_MS;
		assert_int_equal(bsky_pacing_wait(&p, BSKY_ACT_REPLY, t), 0);
		bsky_pacing_note(&p, BSKY_ACT_REPLY, t);
		assert_true(bsky_pacing_wait(&p, BSKY_ACT_REPLY, t) > 0);
	}
	assert_string_equal(bsky_action_name(BSKY_ACT_FOLLOW), "follow");
}

/* ---- feed hygiene ------------------------------------------------------------------ */

static void test_normalize(void **state)
{
	(void)state;
	char out[BSKY_NORM_MAX_BYTES + 1];
	bsky_normalize("  Hello   @alice.bsky.social see https://x.y/z and github.com/a/b  NOW ",
	               out);
	assert_string_equal(out, "hello see and now");
	bsky_normalize("@a.test https://x.y", out);
	assert_string_equal(out, "");
	char big[600];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	assert_int_equal(bsky_normalize(big, out), BSKY_NORM_MAX_BYTES);
	/* never ends inside a UTF-8 sequence */
	char uni[300] = "";
	memset(uni, 'a', 199);
	strcat(uni, "\xC3\xA9\xC3\xA9");
	size_t n = bsky_normalize(uni, out);
	assert_int_equal(n, 199);
}

static void test_prune(void **state)
{
	(void)state;
	/* Scenario 1.5: 3 identical top-level posts and 3 closings in one reply
	 * thread → the 2 newer duplicates and the 2 later closings go. */
	struct bsky_feed_item items[] = {
	        {"at://me/p/3", "Same thought", T0 + 3000, NULL, false},
	        {"at://me/p/1", "Same thought", T0 + 1000, NULL, false},
	        {"at://me/p/2", "same   THOUGHT @x.test", T0 + 2000, NULL, false},
	        {"at://me/r/1", "Thanks!", T0 + 100, "at://root/1", false},
	        {"at://me/r/2", "Appreciate it!", T0 + 200, "at://root/1", false},
	        {"at://me/r/3", "Likewise!", T0 + 300, "at://root/1", false},
	        {"at://me/r/4", "Same thought", T0 + 50, "at://root/1", false}, /* other scope */
	        {"at://me/q/1", "Same thought", T0, NULL, true},                /* a repost */
	        {"at://me/m/1", "@a.test", T0 + 10, NULL, false},
	        {"at://me/m/2", "@b.test", T0 + 20, NULL, false}, /* empty after normalising */
	        {"at://me/r/5", "Thanks!", T0 + 400, "at://root/2", false},
	};
	size_t n = sizeof items / sizeof items[0];
	enum bsky_prune_why why[sizeof items / sizeof items[0]];
	assert_int_equal(bsky_prune_plan(items, n, why), 4);
	enum bsky_prune_why want[] = {
	        BSKY_PRUNE_DUPLICATE, BSKY_PRUNE_KEEP,         BSKY_PRUNE_DUPLICATE,
	        BSKY_PRUNE_KEEP,      BSKY_PRUNE_THANKS_CHAIN, BSKY_PRUNE_THANKS_CHAIN,
	        BSKY_PRUNE_KEEP,      BSKY_PRUNE_KEEP,         BSKY_PRUNE_KEEP,
	        BSKY_PRUNE_KEEP,      BSKY_PRUNE_KEEP};
	for (size_t i = 0; i < n; i++)
		if (why[i] != want[i])
			fail_msg("item %zu (%s): %s, want %s", i, items[i].uri,
			         bsky_prune_why_name(why[i]), bsky_prune_why_name(want[i]));
	/* the same closing twice in one root: a duplicate, counted once */
	struct bsky_feed_item twice[] = {
	        {"at://me/r/1", "Thanks!", T0 + 100, "at://root/1", false},
	        {"at://me/r/2", "Thanks!", T0 + 200, "at://root/1", false},
	};
	enum bsky_prune_why w2[2];
	assert_int_equal(bsky_prune_plan(twice, 2, w2), 1);
	assert_int_equal(w2[1], BSKY_PRUNE_DUPLICATE);
	assert_int_equal(bsky_prune_plan(twice, 0, w2), 0);
}

/* ---- peers --------------------------------------------------------------------------- */

static void test_peers(void **state)
{
	(void)state;
	char text[400], gh[BSKY_GITHUB_NAME_MAX];
	assert_int_equal(bsky_identity_text("gaia-bot", text, sizeof text), 0);
	assert_true(bsky_is_identity_post(text));
	assert_non_null(strstr(text, "`gaia-bot`"));
	assert_non_null(strstr(text, "https://github.com/gaia-bot"));
	assert_int_equal(bsky_identity_github(text, gh), 0);
	assert_string_equal(gh, "gaia-bot");
	assert_int_equal(bsky_identity_text("bad name", text, sizeof text), -1);
	assert_int_equal(bsky_identity_text("-lead", text, sizeof text), -1);
	assert_int_equal(bsky_identity_text("gaia", text, 10), -1);
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
	        {"\xF0\x9F\x94\x97\xE2\x80\x94 find me at github.com/peer-a.", "peer-a"},
	        {"\xF0\x9F\x94\x97\xE2\x80\x94 I'm peerb on GitHub", "peerb"},
	        {"\xF0\x9F\x94\x97\xE2\x80\x94 see github.com/org/repo for it", NULL},
	        {"\xF0\x9F\x94\x97\xE2\x80\x94 hello", NULL},
	        {"\xF0\x9F\x94\x97\xE2\x80\x94 `has space` only", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int r = bsky_identity_github(cases[i].text, gh);
		if (cases[i].want ? (r != 0 || strcmp(gh, cases[i].want) != 0) : r == 0)
			fail_msg("case %zu: got %d %s", i, r, r == 0 ? gh : "");
	}
	assert_false(bsky_is_identity_post("hello \xF0\x9F\x94\x97\xE2\x80\x94"));
	/* the announcement's values (its text is the voice phrase) */
	char h[64], url[80];
	assert_int_equal(bsky_announce_vars("@peer.test", "peer-a", h, sizeof h, url, sizeof url),
	                 0);
	assert_string_equal(h, "peer.test");
	assert_string_equal(url, "https://github.com/peer-a");
	assert_int_equal(bsky_announce_vars("peer.test", "peer-a", h, sizeof h, url, sizeof url),
	                 0);
	assert_string_equal(h, "peer.test");
	assert_int_equal(bsky_announce_vars("", "peer-a", h, sizeof h, url, sizeof url), -1);
	assert_int_equal(bsky_announce_vars("@", "peer-a", h, sizeof h, url, sizeof url), -1);
	assert_int_equal(
	        bsky_announce_vars("peer.test", "not a login", h, sizeof h, url, sizeof url), -1);
	assert_int_equal(bsky_announce_vars("peer.test", "peer-a", h, sizeof h, url, 10), -1);
}

/* ---- the replies already under a post (§6.8 steps 2 and 6) ---------------------------- */

static void test_reply_check(void **state)
{
	(void)state;
	const int64_t now = 1800000000000LL;
	struct decision d;
	struct bsky_reply_facts f = {0};
	assert_int_equal(bsky_reply_check(&f, false, now, &d), BSKY_REPLY_GO);
	assert_int_equal(d.verdict, VERDICT_PASS);
	assert_string_equal(d.rule, "thread_replies");
	/* ours is there: never again, not even for the owner */
	f.own_reply_uri = "at://did:plc:me/app.bsky.feed.post/3kx";
	for (int owner = 0; owner < 2; owner++) {
		assert_int_equal(bsky_reply_check(&f, owner, now, &d), BSKY_REPLY_ALREADY);
		assert_int_equal(d.verdict, VERDICT_BLOCK);
		assert_string_equal(d.rule, "already_replied");
		assert_non_null(strstr(d.reason, "already replied"));
		assert_non_null(strstr(d.reason, f.own_reply_uri));
	}
	/* a peer's reply as well: ours decides first */
	f.peer_handle = "peer.test";
	f.peer_reply_ms = now - 1000;
	assert_int_equal(bsky_reply_check(&f, false, now, &d), BSKY_REPLY_ALREADY);
	f.own_reply_uri = "";
	/* a known peer within 30 s (inclusive): a like */
	static const int64_t ages[] = {0, 1000, 29999, 30000, -5000, -30000};
	for (size_t i = 0; i < sizeof ages / sizeof ages[0]; i++) {
		f.peer_reply_ms = now - ages[i];
		if (bsky_reply_check(&f, false, now, &d) != BSKY_REPLY_PEER_LIKE)
			fail_msg("age %lld ms: %s (%s)", (long long)ages[i], d.rule, d.reason);
		assert_int_equal(d.verdict, VERDICT_REACT);
		assert_string_equal(d.rule, "peer_replied");
		assert_non_null(strstr(d.reason, "@peer.test"));
	}
	/* older, or too far ahead: answered */
	static const int64_t old_ages[] = {30001, 3600000, -30001};
	for (size_t i = 0; i < sizeof old_ages / sizeof old_ages[0]; i++) {
		f.peer_reply_ms = now - old_ages[i];
		if (bsky_reply_check(&f, false, now, &d) != BSKY_REPLY_GO)
			fail_msg("age %lld ms: %s (%s)", (long long)old_ages[i], d.rule, d.reason);
	}
	/* the owner asked us: answered even right after a peer */
	f.peer_reply_ms = now - 2000;
	assert_int_equal(bsky_reply_check(&f, true, now, &d), BSKY_REPLY_GO);
	assert_non_null(strstr(d.reason, "owner"));
	/* no known peer: no like */
	f.peer_handle = NULL;
	assert_int_equal(bsky_reply_check(&f, false, now, &d), BSKY_REPLY_GO);
}

/* ---- rituals ------------------------------------------------------------------------- */

static void test_ritual_role(void **state)
{
	(void)state;
	int seen[3] = {0};
	char uri[64];
	for (int i = 0; i < 60; i++) {
		snprintf(uri, sizeof uri, "at://did:plc:x/app.bsky.feed.post/%d", i);
		enum bsky_ritual_role r = bsky_ritual_role("Gaia", uri);
		assert_int_equal(r, bsky_ritual_role("Gaia", uri)); /* deterministic */
		seen[r]++;
	}
	assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
	/* §7.3: SHA-256 of name + URI, its first 8 hex digits as an unsigned
	 * integer, mod 3. The digests come from outside this code:
	 *   printf '%s' 'Adaat://did:plc:ritual/app.bsky.feed.post/3kt1' | sha256sum
	 * → 8479f215…; 0x8479f215 = 2222592533, mod 3 = 0 (analyst). */
	static const struct {
		const char *name, *uri, *hex8;
		enum bsky_ritual_role want;
	} vec[] = {
	        {"Ada", "at://did:plc:ritual/app.bsky.feed.post/3kt1", "8479f215",
	         BSKY_ROLE_ANALYST},
	        {"Gaia", "at://did:plc:ritual/app.bsky.feed.post/3kt1", "47c3ec45",
	         BSKY_ROLE_CRITIC},
	        {"Ada", "at://did:plc:ritual/app.bsky.feed.post/3kt2", "c65c6f4e",
	         BSKY_ROLE_OBSERVER},
	        {"Bob", "at://did:plc:ritual/app.bsky.feed.post/3kt1", "31ad4388",
	         BSKY_ROLE_OBSERVER},
	        {"Gaia", "at://x", "ece34571", BSKY_ROLE_ANALYST},
	        /* the concatenation only: the same bytes, the same role */
	        {"Gai", "aat://x", "ece34571", BSKY_ROLE_ANALYST},
	};
	for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
		/* the table is consistent with itself */
		assert_int_equal(strtoul(vec[i].hex8, NULL, 16) % 3, (unsigned long)vec[i].want);
		if (bsky_ritual_role(vec[i].name, vec[i].uri) != vec[i].want)
			fail_msg("%s + %s: role %s, want %s (sha256 %s…)", vec[i].name, vec[i].uri,
			         bsky_ritual_role_name(bsky_ritual_role(vec[i].name, vec[i].uri)),
			         bsky_ritual_role_name(vec[i].want), vec[i].hex8);
	}
	assert_string_equal(bsky_ritual_role_name(BSKY_ROLE_CRITIC), "critic");
}

static void test_ritual_due(void **state)
{
	(void)state;
	struct self_ritual r = {.name = "Standup",
	                        .schedule = SELF_WEEKDAYS,
	                        .schedule_text = "weekdays",
	                        .days_mask = 0x3E,
	                        .initiator = true};
	struct decision d;
	/* Monday 10:00, never run */
	assert_true(bsky_ritual_due(&r, 1, 10, "2026-11-23", "", 9, &d));
	/* Saturday */
	assert_false(bsky_ritual_due(&r, 6, 10, "2026-11-28", "", 9, &d));
	assert_string_equal(d.rule, "ritual_schedule");
	/* already today (across restarts: the date is persisted) */
	assert_false(bsky_ritual_due(&r, 1, 10, "2026-11-23", "2026-11-23", 9, &d));
	assert_string_equal(d.rule, "ritual_done_today");
	assert_true(bsky_ritual_due(&r, 2, 10, "2026-11-24", "2026-11-23", 9, &d));
	/* quiet hours and the earliest hour, at their edges */
	assert_false(bsky_ritual_due(&r, 1, 6, "2026-11-23", "", 0, &d));
	assert_string_equal(d.rule, "quiet_hours");
	assert_true(bsky_ritual_due(&r, 1, 7, "2026-11-23", "", 7, &d));
	assert_false(bsky_ritual_due(&r, 1, 8, "2026-11-23", "", 9, &d));
	assert_string_equal(d.rule, "ritual_early");
	assert_true(bsky_ritual_due(&r, 1, 22, "2026-11-23", "", 9, &d));
	assert_false(bsky_ritual_due(&r, 1, 23, "2026-11-23", "", 9, &d));
	r.initiator = false;
	assert_false(bsky_ritual_due(&r, 1, 10, "2026-11-23", "", 9, &d));
	assert_string_equal(d.rule, "ritual_participant");
}

static void test_expression(void **state)
{
	(void)state;
	struct decision d;
	/* after a restart: measured from the last post, not from now */
	assert_int_equal(bsky_expression_next(T0, T0 - 60 * MIN, 0), T0 + 120 * MIN);
	assert_int_equal(bsky_expression_next(T0, 0, 0), T0 + 180 * MIN);
	assert_true(bsky_expression_next(T0, 0, 0.9999999) < T0 + 240 * MIN);
	assert_true(bsky_expression_next(T0, 0, 5) < T0 + 240 * MIN);
	/* a post long ago: due now */
	assert_int_equal(bsky_expression_next(T0, T0 - 24 * 60 * MIN, 0.5), T0);
	assert_false(bsky_expression_allowed(T0, T0 + 1, 12, 0, &d));
	assert_string_equal(d.rule, "expression_not_due");
	assert_true(bsky_expression_allowed(T0, T0, 12, 0, &d));
	assert_false(bsky_expression_allowed(T0, T0, 23, 0, &d));
	assert_false(bsky_expression_allowed(T0, T0, 6, 0, &d));
	assert_true(bsky_expression_allowed(T0, T0, 7, 11, &d));
	assert_false(bsky_expression_allowed(T0, T0, 7, 12, &d));
	assert_string_equal(d.rule, "daily_cap");
}

/* §7.1's invitation classes, each rule and its edges. */
static void test_invitation(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		enum bsky_invitation want;
		const char *rule;
	} cases[] = {
	        /* choice questions */
	        {"Small tools last. Do you prefer old ones?", BSKY_INVITE_STRONG,
	         "choice_question"},
	        {"Which one stays on your desk?", BSKY_INVITE_STRONG, "choice_question"},
	        {"Would you rather fix or rewrite?", BSKY_INVITE_STRONG, "choice_question"},
	        {"Option A feels safer to me?", BSKY_INVITE_STRONG, "choice_question"},
	        {"Tabs or spaces?", BSKY_INVITE_STRONG, "choice_question"},
	        {"Is it worth it or not at all?", BSKY_INVITE_STRONG, "choice_question"},
	        /* "or" followed by four words: not a choice, only a question */
	        {"Is it worth it or am I overthinking this?", BSKY_INVITE_WEAK, "weak_invitation"},
	        /* a choice word outside any question does not count */
	        {"I prefer small tools. Which is fine.", BSKY_INVITE_NONE, "no_invitation"},
	        /* word boundaries: "picky", "whichever" are not choice words */
	        {"Is that picky?", BSKY_INVITE_WEAK, "weak_invitation"},
	        /* taste questions */
	        {"More or less of this, honestly?", BSKY_INVITE_STRONG, "taste_question"},
	        {"Would you want this every day?", BSKY_INVITE_STRONG, "taste_question"},
	        {"Speed or accuracy in a first draft of a long essay?", BSKY_INVITE_STRONG,
	         "taste_question"},
	        /* bounded + direct */
	        {"What's one tool you use daily? How about you?", BSKY_INVITE_STRONG,
	         "bounded_direct"},
	        {"What\xE2\x80\x99s your version of this? Curious what you'd change.",
	         BSKY_INVITE_STRONG, "bounded_direct"},
	        {"Have you tried it? Anyone else", BSKY_INVITE_STRONG, "bounded_direct"},
	        /* one half alone is weak */
	        {"Small tools last. What's one you still use daily?", BSKY_INVITE_WEAK,
	         "weak_invitation"},
	        {"What's yours?", BSKY_INVITE_WEAK, "weak_invitation"},
	        {"Anyone else notice this?", BSKY_INVITE_WEAK, "weak_invitation"},
	        {"Does this resonate", BSKY_INVITE_WEAK, "weak_invitation"},
	        /* a bounded phrase outside a question is not a bounded question */
	        {"I wonder what do you think. Anyone else.", BSKY_INVITE_WEAK, "weak_invitation"},
	        /* template + link */
	        {"A checklist for reviews: https://example.com/list", BSKY_INVITE_STRONG,
	         "template_link"},
	        {"Here's how I do it http://a.b/c", BSKY_INVITE_STRONG, "template_link"},
	        {"A checklist for reviews, in my head.", BSKY_INVITE_WEAK, "weak_invitation"},
	        {"Read this: https://example.com/post", BSKY_INVITE_WEAK, "weak_invitation"},
	        {"Three steps. https://example.com", BSKY_INVITE_STRONG, "template_link"},
	        /* "stepping", "tipsy", "examples-less" edges */
	        {"Stepping back https://example.com", BSKY_INVITE_WEAK, "weak_invitation"},
	        /* a link's query is not a question, its host not a template */
	        {"Read this: https://example.com/tips?which=1", BSKY_INVITE_WEAK,
	         "weak_invitation"},
	        /* any other question */
	        {"Why do small tools last?", BSKY_INVITE_WEAK, "weak_invitation"},
	        /* nothing at all */
	        {"Small tools last longest.", BSKY_INVITE_NONE, "no_invitation"},
	        {"", BSKY_INVITE_NONE, "no_invitation"},
	        {NULL, BSKY_INVITE_NONE, "no_invitation"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct decision d;
		enum bsky_invitation got = bsky_invitation_classify(cases[i].text, &d);
		if (got != cases[i].want || strcmp(d.rule, cases[i].rule) != 0)
			fail_msg("case %zu \"%s\": %s/%s, want %s/%s", i,
			         cases[i].text ? cases[i].text : "(null)",
			         bsky_invitation_name(got), d.rule,
			         bsky_invitation_name(cases[i].want), cases[i].rule);
		assert_int_equal(d.verdict, cases[i].want == BSKY_INVITE_STRONG ? VERDICT_PASS
		                                                                : VERDICT_REJECT);
	}
	/* only the first BSKY_INVITE_MAX_BYTES bytes are read */
	char big[BSKY_INVITE_MAX_BYTES + 64];
	memset(big, 'a', sizeof big);
	memcpy(big + BSKY_INVITE_MAX_BYTES - 10, " tabs or x?", 11);
	big[sizeof big - 1] = 0;
	struct decision d;
	assert_int_equal(bsky_invitation_classify(big, &d), BSKY_INVITE_NONE);
	memcpy(big + BSKY_INVITE_MAX_BYTES - 12, " tabs or x?", 11);
	assert_int_equal(bsky_invitation_classify(big, &d), BSKY_INVITE_STRONG);
}

/* §6.12: what a promise in one of our replies becomes in the ledger, and
 * every refusal. */
static void test_commitment_params(void **state)
{
	(void)state;
	const struct bsky_promise_source src = {"at://did:plc:h/app.bsky.feed.post/3k", "bafyA",
	                                        "at://did:plc:r/app.bsky.feed.post/1r", "bafyR"};
	const struct bsky_promise_source root_only = {"at://did:plc:h/app.bsky.feed.post/3k",
	                                              "bafyA", NULL, ""};
	const struct bsky_promise_source no_cid = {"at://did:plc:h/app.bsky.feed.post/3k", "", NULL,
	                                           NULL};
	const struct bsky_promise_source not_at = {"https://bsky.app/x", "bafyA", NULL, NULL};
	char long_text[BSKY_POST_MAX_GRAPHEMES + 2];
	memset(long_text, 'x', sizeof long_text - 1);
	long_text[sizeof long_text - 1] = 0;
	char max_text[BSKY_POST_MAX_GRAPHEMES + 1];
	memset(max_text, 'x', sizeof max_text - 1);
	max_text[sizeof max_text - 1] = 0;
	static const struct bsky_promise issue = {
	        "create_issue", "ada/tools",
	        "Escape bug",   "The parser drops a trailing backslash",
	        NULL,           0};
	const struct {
		struct bsky_promise p;
		const struct bsky_promise_source *src;
		bool social_only;
		const char *rule; /* "commitment" = accepted */
	} cases[] = {
	        {issue, &src, false, "commitment"},
	        {{"create_plan", "ada/tools", NULL, "Plan the escapes", NULL, 0},
	         &src,
	         false,
	         "commitment"},
	        {{"comment_issue", "ada/tools", NULL, "Same bug here", NULL, 12},
	         &src,
	         false,
	         "commitment"},
	        {{"post_bluesky", NULL, NULL, "A note on escapes", NULL, 0},
	         &root_only,
	         false,
	         "commitment"},
	        {{"post_bluesky", NULL, NULL, NULL, max_text, 0}, &src, true, "commitment"},
	        {{"post_bluesky", NULL, NULL, NULL, long_text, 0},
	         &src,
	         false,
	         "commitment_too_long"},
	        {issue, &no_cid, false, "commitment_source"},
	        {issue, &not_at, false, "commitment_source"},
	        {issue, NULL, false, "commitment_source"},
	        {{"open_pr", "ada/tools", "x", NULL, NULL, 0}, &src, false, "commitment_type"},
	        {{NULL, "ada/tools", "x", NULL, NULL, 0}, &src, false, "commitment_type"},
	        {issue, &src, true, "social_only"},
	        {{"create_issue", NULL, "x", NULL, NULL, 0}, &src, false, "commitment_no_repo"},
	        {{"create_issue", "tools", "x", NULL, NULL, 0}, &src, false, "commitment_no_repo"},
	        {{"create_issue", "/tools", "x", NULL, NULL, 0}, &src, false, "commitment_no_repo"},
	        {{"create_issue", "ada/", "x", NULL, NULL, 0}, &src, false, "commitment_no_repo"},
	        {{"create_issue", "a/b/c", "x", NULL, NULL, 0}, &src, false, "commitment_no_repo"},
	        {{"comment_issue", "ada/tools", NULL, "x", NULL, 0},
	         &src,
	         false,
	         "commitment_no_issue"},
	        {{"create_issue", "ada/tools", " ", "", NULL, 0}, &src, false, "commitment_empty"},
	        {{"post_bluesky", NULL, NULL, NULL, NULL, 0}, &src, false, "commitment_empty"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct decision d;
		cJSON *o =
		        bsky_commitment_params(&cases[i].p, cases[i].src, cases[i].social_only, &d);
		if (strcmp(d.rule, cases[i].rule) != 0)
			fail_msg("case %zu: rule %s (%s), want %s", i, d.rule, d.reason,
			         cases[i].rule);
		bool ok = strcmp(cases[i].rule, "commitment") == 0;
		assert_int_equal(o != NULL, ok);
		assert_int_equal(d.verdict, ok ? VERDICT_PASS : VERDICT_REJECT);
		if (o) {
			/* the thread is always named, the root defaults to the post */
			assert_string_equal(
			        cJSON_GetStringValue(cJSON_GetObjectItem(o, "sourceThreadUri")),
			        cases[i].src->uri);
			assert_string_equal(
			        cJSON_GetStringValue(cJSON_GetObjectItem(o, "sourceThreadCid")),
			        cases[i].src->cid);
			const char *ru =
			        cJSON_GetStringValue(cJSON_GetObjectItem(o, "sourceRootUri"));
			assert_string_equal(ru, cases[i].src->root_uri ? cases[i].src->root_uri
			                                               : cases[i].src->uri);
		}
		cJSON_Delete(o);
	}
	/* the shapes fulfilment reads */
	struct decision d;
	cJSON *o = bsky_commitment_params(&issue, &src, false, &d);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "owner")), "ada");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "repo")), "tools");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "title")), "Escape bug");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "body")),
	                    "The parser drops a trailing backslash");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "sourceRootCid")), "bafyR");
	cJSON_Delete(o);
	struct bsky_promise post = {"post_bluesky", NULL, "t", "d", "the content", 0};
	o = bsky_commitment_params(&post, &src, false, &d);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "text")), "the content");
	assert_null(cJSON_GetObjectItem(o, "repo"));
	cJSON_Delete(o);
	struct bsky_promise cmt = {"comment_issue", "ada/tools", NULL, "same here", NULL, 12};
	o = bsky_commitment_params(&cmt, &src, false, &d);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "issue_number")), 12);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_closings),
	        cmocka_unit_test(test_should_respond),
	        cmocka_unit_test(test_priority),
	        cmocka_unit_test(test_chain),
	        cmocka_unit_test(test_circular),
	        cmocka_unit_test(test_conv_replies),
	        cmocka_unit_test(test_conv_depth_and_acks),
	        cmocka_unit_test(test_conv_reengage),
	        cmocka_unit_test(test_conv_multiparty),
	        cmocka_unit_test(test_conv_sweep),
	        cmocka_unit_test(test_pacing),
	        cmocka_unit_test(test_normalize),
	        cmocka_unit_test(test_prune),
	        cmocka_unit_test(test_peers),
	        cmocka_unit_test(test_reply_check),
	        cmocka_unit_test(test_ritual_role),
	        cmocka_unit_test(test_ritual_due),
	        cmocka_unit_test(test_expression),
	        cmocka_unit_test(test_invitation),
	        cmocka_unit_test(test_commitment_params),
	        cmocka_unit_test(test_sentiment),
	        cmocka_unit_test(test_rel_expired),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
