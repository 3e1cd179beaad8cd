/*
 * The gate, table-driven: every rule and its boundaries.
 *
 *   check_cases   one event against a fresh state: self, history, paused and
 *                 the owner's control commands, chain length (MAX-1, MAX,
 *                 MAX+1 by marker, by history, a rewritten marker), persons'
 *                 chain 0, response-only, banlist, thread depth, the claim;
 *   scenarios     a sequence of notes and checks on one state and one clock:
 *                 window edges, cooldown edges, the pair budget in both
 *                 directions, the bot chain and its resets, duplicate
 *                 payloads, our replies per conversation, REACT overridden by
 *                 later rules, what is not noted;
 *   bounds        5000 conversations and peers: tables and rings stay bounded,
 *                 the least recently noted is what is dropped.
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

#include "modules/gate/gate.h"

#define T0        1763892000000LL /* 2025-11-23T10:00:00.000Z */
#define ROOM      "space:room"
#define SELF_ID   "agent-gaia"
#define SELF_NAME "Gaia"

/* ---- building events ----------------------------------------------------------- */

struct ev_spec {
	enum conv_author_kind kind;
	const char *author; /* id and name; NULL: a fresh one per event */
	const char *conv;   /* NULL: ROOM */
	const char *id;     /* NULL: a fresh one */
	int64_t chain;
	bool marker;      /* chain_explicit */
	const char *text; /* NULL: a fresh text per event */
	const char *addr; /* one addressed name, or NULL */
	bool me;          /* addressed_me */
	bool bot;         /* is_bot (peers are agents anyway) */
	bool history;
	const char *name;            /* display name when it differs from author */
	enum conv_platform platform; /* 0: the space */
};

static unsigned seq;

static void ev_build(struct conv_event *ev, const struct ev_spec *s)
{
	char author[64], id[64], text[64];
	snprintf(author, sizeof author, "anon-%u", seq);
	snprintf(id, sizeof id, "space:msg-%u", seq);
	snprintf(text, sizeof text, "fresh words number %u", seq);
	seq++;
	const char *addressed[1] = {s->addr};
	const char *t = s->text ? s->text : text;
	struct conv_event_src src = {
	        .platform = s->platform,
	        .conversation = s->conv ? s->conv : ROOM,
	        .message_id = s->id ? s->id : id,
	        .author_id = s->author ? s->author : author,
	        .author_name = s->name ? s->name : (s->author ? s->author : author),
	        .author_kind = s->kind,
	        .is_bot = s->bot || s->kind == CONV_AUTHOR_PEER,
	        .chain = s->chain,
	        .chain_explicit = s->marker,
	        .text = t,
	        .text_len = strlen(t),
	        .addressed = addressed,
	        .naddressed = s->addr ? 1 : 0,
	        .addressed_me = s->me,
	        .time_ms = 0,
	        .from_history = s->history,
	};
	conv_event_init(ev, &src);
}

/* ---- one check against a fresh state ------------------------------------------ */

static const char *const banlist[] = {"Mallory", "did:plc:evil", NULL};

struct check_case {
	const char *name;
	struct ev_spec ev;
	int64_t derived; /* derived_chain; 0 in the table means -1 (unknown) unless derived_set */
	bool derived_set;
	bool replies_to_us;
	bool paused;
	int depth; /* thread_depth; 0 means -1 unless depth_set */
	bool depth_set;
	int max_acl; /* 0 means the default 4 unless acl_set */
	bool acl_set;
	enum decision_verdict verdict;
	const char *rule;
	bool courtesy;
	int64_t chain_in, chain_out;
	bool claim;
	const char *reason_has; /* a substring the reason must hold, or NULL */
};

#define PEER(...)                                                                                  \
	{                                                                                          \
		.kind = CONV_AUTHOR_PEER, .author = "bob", __VA_ARGS__                             \
	}
#define HUMAN(...)                                                                                 \
	{                                                                                          \
		.kind = CONV_AUTHOR_HUMAN, .author = "ann", __VA_ARGS__                            \
	}
#define HOST(...)                                                                                  \
	{                                                                                          \
		.kind = CONV_AUTHOR_HOST, .author = "host", __VA_ARGS__                            \
	}
#define OWNER(...)                                                                                 \
	{                                                                                          \
		.kind = CONV_AUTHOR_OWNER, .author = "owner", __VA_ARGS__                          \
	}
#define SELFEV(...)                                                                                \
	{                                                                                          \
		.kind = CONV_AUTHOR_SELF, .author = SELF_ID, __VA_ARGS__                           \
	}

static const struct check_case check_cases[] = {
        /* 1: self */
        {"own message", SELFEV(.text = "hi"), .verdict = VERDICT_BLOCK, .rule = "self",
         .chain_out = 1},
        {"peer with our id (other case)",
         {.kind = CONV_AUTHOR_PEER, .author = "AGENT-GAIA", .me = true},
         .verdict = VERDICT_BLOCK,
         .rule = "self",
         .chain_out = 1},
        {"self before paused", SELFEV(.text = "/resume"), .paused = true, .verdict = VERDICT_BLOCK,
         .rule = "self", .chain_out = 1},
        {"self before history", SELFEV(.history = true), .verdict = VERDICT_BLOCK, .rule = "self",
         .chain_out = 1},
        /* history */
        {"peer history", PEER(.me = true, .history = true), .verdict = VERDICT_CONTEXT,
         .rule = "history", .chain_out = 1},
        {"human history while paused", HUMAN(.history = true), .paused = true,
         .verdict = VERDICT_CONTEXT, .rule = "history", .chain_out = 1},
        /* 2: paused */
        {"paused human", HUMAN(.text = "hello"), .paused = true, .verdict = VERDICT_BLOCK,
         .rule = "paused", .chain_out = 1, .reason_has = "/resume"},
        {"paused peer", PEER(.me = true), .paused = true, .verdict = VERDICT_BLOCK,
         .rule = "paused", .chain_out = 1},
        {"paused owner chat", OWNER(.text = "what's up"), .paused = true, .verdict = VERDICT_BLOCK,
         .rule = "paused", .chain_out = 1},
        {"paused owner /resume", OWNER(.text = "/resume"), .paused = true, .verdict = VERDICT_PASS,
         .rule = "owner_control", .chain_out = 1},
        {"paused owner /status", OWNER(.text = "/status"), .paused = true, .verdict = VERDICT_PASS,
         .rule = "owner_control", .chain_out = 1},
        {"paused owner '  /RESUME ' trimmed", OWNER(.text = "  /RESUME \n"), .paused = true,
         .verdict = VERDICT_PASS, .rule = "owner_control", .chain_out = 1},
        {"paused owner '/resume now'", OWNER(.text = "/resume now"), .paused = true,
         .verdict = VERDICT_BLOCK, .rule = "paused", .chain_out = 1},
        {"paused owner /pause", OWNER(.text = "/pause"), .paused = true, .verdict = VERDICT_BLOCK,
         .rule = "paused", .chain_out = 1},
        {"paused human /resume", HUMAN(.text = "/resume"), .paused = true, .verdict = VERDICT_BLOCK,
         .rule = "paused", .chain_out = 1},
        {"paused peer /status", PEER(.text = "/status", .me = true), .paused = true,
         .verdict = VERDICT_BLOCK, .rule = "paused", .chain_out = 1},
        {"owner /resume not paused", OWNER(.text = "/resume"), .verdict = VERDICT_PASS,
         .rule = "pass", .chain_out = 1},
        /* 3: chain length by marker (MAX_ACL 4) */
        {"marker 2", PEER(.me = true, .chain = 2, .marker = true), .verdict = VERDICT_PASS,
         .rule = "claim", .chain_in = 2, .chain_out = 3, .claim = true},
        {"marker MAX-1 courtesy", PEER(.me = true, .chain = 3, .marker = true),
         .verdict = VERDICT_PASS, .rule = "claim", .courtesy = true, .chain_in = 3, .chain_out = 4,
         .claim = true, .reason_has = "courtesy"},
        {"marker MAX react", PEER(.me = true, .chain = 4, .marker = true), .verdict = VERDICT_REACT,
         .rule = "chain_length", .chain_in = 4, .chain_out = 5,
         .reason_has = "chain 4 = MAX_ACL 4"},
        {"marker MAX+1 block", PEER(.me = true, .chain = 5, .marker = true),
         .verdict = VERDICT_BLOCK, .rule = "chain_length", .chain_in = 5, .chain_out = 6,
         .reason_has = "chain 5 > MAX_ACL 4: blocked, not even a reaction"},
        {"marker huge", PEER(.me = true, .chain = INT64_MAX, .marker = true),
         .verdict = VERDICT_BLOCK, .rule = "chain_length", .chain_in = INT64_MAX,
         .chain_out = INT64_MAX},
        /* by history */
        {"history MAX-1 courtesy", PEER(.me = true), .derived = 3, .derived_set = true,
         .verdict = VERDICT_PASS, .rule = "claim", .courtesy = true, .chain_in = 3, .chain_out = 4,
         .claim = true},
        {"history MAX react", PEER(.me = true), .derived = 4, .derived_set = true,
         .verdict = VERDICT_REACT, .rule = "chain_length", .chain_in = 4, .chain_out = 5},
        {"history MAX+1 block", PEER(.me = true), .derived = 5, .derived_set = true,
         .verdict = VERDICT_BLOCK, .rule = "chain_length", .chain_in = 5, .chain_out = 6,
         .reason_has = "history 5"},
        /* the larger counts */
        {"rewritten marker 0, history 4", PEER(.me = true, .chain = 0, .marker = true),
         .derived = 4, .derived_set = true, .verdict = VERDICT_REACT, .rule = "chain_length",
         .chain_in = 4, .chain_out = 5, .reason_has = "marker 0, history 4"},
        {"rewritten marker 1, history 5", PEER(.me = true, .chain = 1, .marker = true),
         .derived = 5, .derived_set = true, .verdict = VERDICT_BLOCK, .rule = "chain_length",
         .chain_in = 5, .chain_out = 6},
        {"marker 5 over history 1", PEER(.me = true, .chain = 5, .marker = true), .derived = 1,
         .derived_set = true, .verdict = VERDICT_BLOCK, .rule = "chain_length", .chain_in = 5,
         .chain_out = 6},
        {"peer, nothing known: chain 1", PEER(.me = true), .verdict = VERDICT_PASS, .rule = "claim",
         .chain_in = 1, .chain_out = 2, .claim = true},
        {"peer, negative marker: chain 1", PEER(.me = true, .chain = -7, .marker = true),
         .verdict = VERDICT_PASS, .rule = "claim", .chain_in = 1, .chain_out = 2, .claim = true},
        {"bot-marked human counts as agent",
         HUMAN(.bot = true, .me = true, .chain = 4, .marker = true), .verdict = VERDICT_REACT,
         .rule = "chain_length", .chain_in = 4, .chain_out = 5},
        /* persons: chain 0 whatever they carry */
        {"human chain 0", HUMAN(), .verdict = VERDICT_PASS, .rule = "pass", .chain_in = 0,
         .chain_out = 1, .reason_has = "chain 0"},
        {"human's marker ignored", HUMAN(.chain = 9, .marker = true), .derived = 9,
         .derived_set = true, .verdict = VERDICT_PASS, .rule = "pass", .chain_in = 0,
         .chain_out = 1},
        {"host chain 0", HOST(.chain = 7, .marker = true), .verdict = VERDICT_PASS, .rule = "pass",
         .chain_out = 1},
        {"owner chain 0", OWNER(.chain = 7, .marker = true), .derived = 7, .derived_set = true,
         .verdict = VERDICT_PASS, .rule = "pass", .chain_out = 1},
        {"MAX_ACL 1: human gets courtesy", HUMAN(), .max_acl = 1, .acl_set = true,
         .verdict = VERDICT_PASS, .rule = "pass", .courtesy = true, .chain_out = 1},
        {"MAX_ACL 1: peer chain 1 reacts", PEER(.me = true), .max_acl = 1, .acl_set = true,
         .verdict = VERDICT_REACT, .rule = "chain_length", .chain_in = 1, .chain_out = 2},
        {"MAX_ACL 0: human reacts", HUMAN(), .max_acl = 0, .acl_set = true,
         .verdict = VERDICT_REACT, .rule = "chain_length", .chain_out = 1},
        {"MAX_ACL 0: owner still answered", OWNER(), .max_acl = 0, .acl_set = true,
         .verdict = VERDICT_PASS, .rule = "pass", .chain_out = 1},
        /* 4: response-only */
        {"peer not addressing us", PEER(), .verdict = VERDICT_CONTEXT, .rule = "response_only",
         .chain_in = 1, .chain_out = 2},
        {"peer addressing someone else", PEER(.addr = "Zed"), .verdict = VERDICT_CONTEXT,
         .rule = "response_only", .chain_in = 1, .chain_out = 2},
        {"peer naming us", PEER(.addr = "gaia"), .verdict = VERDICT_PASS, .rule = "claim",
         .chain_in = 1, .chain_out = 2, .claim = true},
        {"peer @-naming us", PEER(.addr = "@GAIA"), .verdict = VERDICT_PASS, .rule = "claim",
         .chain_in = 1, .chain_out = 2, .claim = true},
        {"peer naming our id", PEER(.addr = SELF_ID), .verdict = VERDICT_PASS, .rule = "claim",
         .chain_in = 1, .chain_out = 2, .claim = true},
        {"peer replying to us", PEER(), .replies_to_us = true, .verdict = VERDICT_PASS,
         .rule = "claim", .chain_in = 1, .chain_out = 2, .claim = true},
        {"react at MAX but not addressed", PEER(.chain = 4, .marker = true),
         .verdict = VERDICT_CONTEXT, .rule = "response_only", .chain_in = 4, .chain_out = 5},
        {"human not addressing us", HUMAN(), .verdict = VERDICT_PASS, .rule = "pass",
         .chain_out = 1},
        {"owner not addressing us", OWNER(), .verdict = VERDICT_PASS, .rule = "pass",
         .chain_out = 1},
        /* 5: banlist */
        {"banned human by name",
         {.kind = CONV_AUTHOR_HUMAN, .author = "u1", .name = "mallory"},
         .verdict = VERDICT_BLOCK,
         .rule = "banlist",
         .chain_out = 1,
         .reason_has = "banlist"},
        {"banned peer by id",
         {.kind = CONV_AUTHOR_PEER, .author = "DID:PLC:EVIL", .me = true},
         .verdict = VERDICT_BLOCK,
         .rule = "banlist",
         .chain_in = 1,
         .chain_out = 2},
        {"banned peer unaddressed is context",
         {.kind = CONV_AUTHOR_PEER, .author = "Mallory"},
         .verdict = VERDICT_CONTEXT,
         .rule = "response_only",
         .chain_in = 1,
         .chain_out = 2},
        {"banned owner bypasses",
         {.kind = CONV_AUTHOR_OWNER, .author = "mallory"},
         .verdict = VERDICT_PASS,
         .rule = "pass",
         .chain_out = 1},
        {"near-miss not banned",
         {.kind = CONV_AUTHOR_HUMAN, .author = "mallory2"},
         .verdict = VERDICT_PASS,
         .rule = "pass",
         .chain_out = 1},
        /* social mechanics: thread depth (max 12 in this table) */
        {"depth 13 > 12", HUMAN(), .depth = 13, .depth_set = true, .verdict = VERDICT_REACT,
         .rule = "social_mechanics", .chain_out = 1, .reason_has = "thread depth 13 > 12"},
        {"depth 12", HUMAN(), .depth = 12, .depth_set = true, .verdict = VERDICT_PASS,
         .rule = "pass", .chain_out = 1},
        {"depth unknown", HUMAN(), .verdict = VERDICT_PASS, .rule = "pass", .chain_out = 1},
        {"peer depth 13", PEER(.me = true), .depth = 13, .depth_set = true,
         .verdict = VERDICT_REACT, .rule = "social_mechanics", .chain_in = 1, .chain_out = 2},
        {"owner depth 99", OWNER(), .depth = 99, .depth_set = true, .verdict = VERDICT_PASS,
         .rule = "pass", .chain_out = 1},
};

static void test_check_cases(void **state)
{
	(void)state;
	struct gate_state *st = gate_state_new();
	for (size_t i = 0; i < sizeof check_cases / sizeof check_cases[0]; i++) {
		const struct check_case *c = &check_cases[i];
		struct gate_config cfg;
		gate_config_defaults(&cfg);
		cfg.self_id = SELF_ID;
		cfg.self_name = SELF_NAME;
		cfg.banlist = banlist;
		cfg.max_thread_depth = 12;
		if (c->acl_set)
			cfg.max_acl = c->max_acl;
		struct conv_event ev;
		ev_build(&ev, &c->ev);
		struct gate_input in = {
		        .ev = &ev,
		        .derived_chain = c->derived_set ? c->derived : -1,
		        .replies_to_us = c->replies_to_us,
		        .paused = c->paused,
		        .thread_depth = c->depth_set ? c->depth : -1,
		};
		struct gate_result r;
		memset(&r, 0x5a, sizeof r); /* gate_check must fill every field */
		gate_check(st, &in, T0, &cfg, &r);
		print_message("case %zu: %s -> %s %s: %s\n", i, c->name,
		              decision_verdict_name(r.d.verdict), r.d.rule, r.d.reason);
		assert_int_equal(r.d.verdict, c->verdict);
		assert_string_equal(r.d.rule, c->rule);
		assert_int_equal(r.courtesy, c->courtesy);
		assert_true(r.chain_in == c->chain_in);
		assert_true(r.chain_out == c->chain_out);
		assert_int_equal(r.claim_needed, c->claim);
		if (c->claim) {
			char want[128];
			snprintf(want, sizeof want, "respond:%s", ev.message_id);
			assert_string_equal(r.claim_key, want);
			assert_true(r.claim_ttl_ms == 60000);
		} else {
			assert_string_equal(r.claim_key, "");
			assert_true(r.claim_ttl_ms == 0);
		}
		assert_true(strlen(r.d.reason) > 10);
		if (c->reason_has)
			assert_non_null(strstr(r.d.reason, c->reason_has));
		conv_event_free(&ev);
	}
	/* the checks changed nothing */
	struct gate_stats s;
	gate_state_stats(st, &s);
	assert_int_equal(s.conversations, 0);
	assert_int_equal(s.pairs, 0);
	assert_int_equal(s.duplicates, 0);
	gate_state_free(st);
}

/* ---- scenarios: notes and checks on one state and clock ------------------------ */

enum op { OP_END, OP_NOTE, OP_REPLY, OP_CHECK };

struct step {
	enum op op;
	int64_t t;  /* ms after T0 */
	int n;      /* OP_NOTE / OP_REPLY: how many (0 = 1) */
	int64_t dt; /* between them */
	struct ev_spec ev;
	const char *conv; /* OP_REPLY */
	const char *peer; /* OP_REPLY */
	bool conv_seq;    /* OP_NOTE / OP_REPLY: each in its own conversation "space:c<k>" */
	enum decision_verdict verdict; /* OP_CHECK */
	const char *rule;
	const char *reason_has;
};

struct scenario {
	const char *name;
	void (*tune)(struct gate_config *c);
	struct step steps[16];
};

static void tune_none(struct gate_config *c)
{
	(void)c;
}

static void tune_short_window(struct gate_config *c)
{
	c->window_ms = 10000;
}

static void tune_no_cooldown(struct gate_config *c)
{
	c->window_ms = 10000;
	c->cooldown_ms = 0;
}

static void tune_no_bot_chain(struct gate_config *c)
{
	c->max_bot_chain = 0;
}

static void tune_replies(struct gate_config *c)
{
	c->max_replies_per_conversation = 2;
}

/* As the daemon sets them: SELF.md's thresholds on the threaded platforms
 * only. */
static void tune_replies_threaded(struct gate_config *c)
{
	c->max_replies_per_conversation = 2;
	c->max_thread_depth = 3;
	c->mechanics_platforms = (1u << CONV_PLATFORM_BLUESKY) | (1u << CONV_PLATFORM_GITHUB);
}

static void tune_big_bot_chain(struct gate_config *c)
{
	c->max_bot_chain = 1000; /* above GATE_RATE_SLOTS: judged as GATE_RATE_SLOTS */
	c->max_events = 0;       /* budgets off */
	c->duplicate_window_ms = 0;
}

static void tune_big_budget(struct gate_config *c)
{
	c->max_events = 500; /* above GATE_RATE_SLOTS: judged as GATE_RATE_SLOTS */
	c->max_bot_chain = 0;
	c->duplicate_window_ms = 0;
}

#define NOTE(T, N, DT, ...)                                                                        \
	{                                                                                          \
		.op = OP_NOTE, .t = (T), .n = (N), .dt = (DT), .ev = __VA_ARGS__                   \
	}
#define NOTE_SEQ(T, N, DT, ...)                                                                    \
	{                                                                                          \
		.op = OP_NOTE, .t = (T), .n = (N), .dt = (DT), .conv_seq = true, .ev = __VA_ARGS__ \
	}
#define REPLY(T, N, DT, CONV, PEER_)                                                               \
	{                                                                                          \
		.op = OP_REPLY, .t = (T), .n = (N), .dt = (DT), .conv = (CONV), .peer = (PEER_)    \
	}
#define REPLY_SEQ(T, N, DT, PEER_)                                                                 \
	{                                                                                          \
		.op = OP_REPLY, .t = (T), .n = (N), .dt = (DT), .peer = (PEER_), .conv_seq = true  \
	}
#define CHECK(T, V, RULE, HAS, ...)                                                                \
	{                                                                                          \
		.op = OP_CHECK, .t = (T), .verdict = (V), .rule = (RULE), .reason_has = (HAS),     \
		.ev = __VA_ARGS__                                                                  \
	}
#define ANYHUMAN                                                                                   \
	{                                                                                          \
		.kind = CONV_AUTHOR_HUMAN                                                          \
	}
#define BOB                                                                                        \
	{                                                                                          \
		.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true                              \
	}

static const struct scenario scenarios[] = {
        {"conversation window: 20 pass, the 21st blocks",
         tune_none,
         {NOTE(0, 19, 1, ANYHUMAN), CHECK(19, VERDICT_PASS, "pass", NULL, ANYHUMAN),
          NOTE(19, 1, 0, ANYHUMAN),
          CHECK(20, VERDICT_BLOCK, "conversation_budget",
                "space:room had 21 events in 60 s (limit 20): cooling down until "
                "2025-11-23T10:01:00.020Z",
                ANYHUMAN)}},
        {"conversation window slides (exactly window_ms old is out)",
         tune_none,
         {NOTE(0, 20, 0, ANYHUMAN),
          CHECK(59999, VERDICT_BLOCK, "conversation_budget", "21 events", ANYHUMAN),
          CHECK(60000, VERDICT_PASS, "pass", NULL, ANYHUMAN)}},
        {"cooldown edge after the window slid",
         tune_short_window,
         {NOTE(0, 21, 0, ANYHUMAN),
          CHECK(9999, VERDICT_BLOCK, "conversation_budget", "22 events in 10 s", ANYHUMAN),
          CHECK(10000, VERDICT_BLOCK, "conversation_budget",
                "had 21 events in 10 s (limit 20) 10 s ago: cooling down until "
                "2025-11-23T10:01:00.000Z",
                ANYHUMAN),
          CHECK(59999, VERDICT_BLOCK, "conversation_budget", NULL, ANYHUMAN),
          CHECK(60000, VERDICT_PASS, "pass", NULL, ANYHUMAN)}},
        {"a flood during the cooldown extends it",
         tune_short_window,
         {NOTE(0, 21, 0, ANYHUMAN), NOTE(30000, 21, 0, ANYHUMAN),
          CHECK(60000, VERDICT_BLOCK, "conversation_budget", "30 s ago", ANYHUMAN),
          CHECK(89999, VERDICT_BLOCK, "conversation_budget", NULL, ANYHUMAN),
          CHECK(90000, VERDICT_PASS, "pass", NULL, ANYHUMAN)}},
        {"no cooldown: passes as soon as the window slid",
         tune_no_cooldown,
         {NOTE(0, 30, 0, ANYHUMAN),
          CHECK(9999, VERDICT_BLOCK, "conversation_budget", NULL, ANYHUMAN),
          CHECK(10000, VERDICT_PASS, "pass", NULL, ANYHUMAN)}},
        {"other conversations are not affected",
         tune_none,
         {NOTE(0, 30, 0, ANYHUMAN), CHECK(1, VERDICT_PASS, "pass", NULL,
                                          {.kind = CONV_AUTHOR_HUMAN, .conv = "space:other"})}},
        {"the owner bypasses a flooded conversation",
         tune_none,
         {NOTE(0, 30, 0, ANYHUMAN),
          CHECK(1, VERDICT_PASS, "pass", NULL, {.kind = CONV_AUTHOR_OWNER, .author = "owner"})}},
        {"pair budget counts both directions",
         tune_no_bot_chain,
         {NOTE_SEQ(0, 10, 10, BOB), REPLY_SEQ(5, 9, 10, "bob"),
          CHECK(200, VERDICT_PASS, "claim", NULL,
                {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .conv = "space:fresh1"}),
          REPLY(201, 1, 0, "space:c99", "bob"),
          CHECK(202, VERDICT_BLOCK, "pair_budget",
                "bob and we exchanged 21 events in 60 s (limit 20, both directions)",
                {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .conv = "space:fresh2"}),
          CHECK(203, VERDICT_PASS, "claim", NULL,
                {.kind = CONV_AUTHOR_PEER, .author = "carol", .me = true, .conv = "space:fresh3"}),
          CHECK(60005, VERDICT_PASS, "claim", NULL,
                {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .conv = "space:fresh4"})}},
        {"pair budget for a person across conversations",
         tune_none,
         {NOTE_SEQ(0, 20, 1, {.kind = CONV_AUTHOR_HUMAN, .author = "ann"}),
          CHECK(30, VERDICT_BLOCK, "pair_budget", "ann and we exchanged 21 events",
                {.kind = CONV_AUTHOR_HUMAN, .author = "ann", .conv = "space:new"}),
          CHECK(30, VERDICT_PASS, "pass", NULL,
                {.kind = CONV_AUTHOR_HUMAN, .author = "ben", .conv = "space:new"})}},
        {"bot chain: 4 in a row pass, the 6th agent message blocks",
         tune_none,
         {NOTE(0, 1, 0, BOB), REPLY(1, 1, 0, ROOM, "bob"), NOTE(2, 1, 0, BOB),
          REPLY(3, 1, 0, ROOM, "bob"), CHECK(4, VERDICT_PASS, "claim", NULL, BOB),
          NOTE(4, 1, 0, BOB),
          CHECK(5, VERDICT_BLOCK, "bot_chain",
                "5 agent messages in a row in space:room with no person and no 5 min of "
                "quiet (MAX_BOT_CHAIN_LENGTH 5)",
                BOB),
          CHECK(5, VERDICT_PASS, "pass", NULL, {.kind = CONV_AUTHOR_HUMAN}),
          CHECK(5, VERDICT_PASS, "claim", NULL,
                {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .conv = "space:x"})}},
        {"bot chain reset by a person",
         tune_none,
         {NOTE(0, 5, 1, BOB), CHECK(10, VERDICT_BLOCK, "bot_chain", NULL, BOB),
          NOTE(11, 1, 0, ANYHUMAN), CHECK(12, VERDICT_PASS, "claim", NULL, BOB),
          NOTE(12, 4, 1, BOB), CHECK(20, VERDICT_PASS, "claim", NULL, BOB), NOTE(20, 1, 0, BOB),
          CHECK(21, VERDICT_BLOCK, "bot_chain", NULL, BOB)}},
        {"bot chain reset by quiet",
         tune_none,
         {NOTE(0, 5, 1000, BOB), CHECK(304000 - 1, VERDICT_BLOCK, "bot_chain", NULL, BOB),
          CHECK(304000, VERDICT_PASS, "claim", NULL, BOB), NOTE(304000, 1, 0, BOB),
          CHECK(304001, VERDICT_PASS, "claim", NULL, BOB),
          /* a quiet gap inside the run breaks it too */
          NOTE(304001, 3, 1, BOB), CHECK(304010, VERDICT_PASS, "claim", NULL, BOB),
          NOTE(304010, 1, 0, BOB), CHECK(304011, VERDICT_BLOCK, "bot_chain", NULL, BOB)}},
        {"duplicate payload within and after the window",
         tune_none,
         {NOTE(0, 1, 0,
               {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .text = "Same thing"}),
          CHECK(299999, VERDICT_BLOCK, "duplicate_payload",
                "bob sent the same text in space:room 300.0 s ago",
                {.kind = CONV_AUTHOR_PEER,
                 .author = "bob",
                 .me = true,
                 .text = "  same   THING\n"}),
          CHECK(300000, VERDICT_PASS, "claim", NULL,
                {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .text = "Same thing"}),
          CHECK(1, VERDICT_PASS, "claim", NULL,
                {.kind = CONV_AUTHOR_PEER,
                 .author = "bob",
                 .me = true,
                 .text = "Same thing",
                 .conv = "space:elsewhere"}),
          CHECK(1, VERDICT_PASS, "claim", NULL,
                {.kind = CONV_AUTHOR_PEER, .author = "carol", .me = true, .text = "Same thing"}),
          CHECK(1, VERDICT_PASS, "claim", NULL,
                {.kind = CONV_AUTHOR_PEER,
                 .author = "bob",
                 .me = true,
                 .text = "Same thing, more"})}},
        {"people may repeat themselves",
         tune_none,
         {NOTE(0, 1, 0, {.kind = CONV_AUTHOR_HUMAN, .author = "ann", .text = "thanks"}),
          CHECK(1, VERDICT_PASS, "pass", NULL,
                {.kind = CONV_AUTHOR_HUMAN, .author = "ann", .text = "thanks"})}},
        {"our replies per conversation (social mechanics)",
         tune_replies,
         {REPLY(0, 1, 0, ROOM, "ann"), CHECK(1, VERDICT_PASS, "pass", NULL, ANYHUMAN),
          REPLY(1, 1, 0, ROOM, "ann"),
          CHECK(2, VERDICT_REACT, "social_mechanics",
                "we already replied 2 times in space:room (SELF.md: at most 2)", ANYHUMAN),
          CHECK(2, VERDICT_PASS, "pass", NULL, {.kind = CONV_AUTHOR_HUMAN, .conv = "space:other"}),
          CHECK(2, VERDICT_PASS, "pass", NULL, {.kind = CONV_AUTHOR_OWNER, .author = "owner"})}},
        {"social mechanics on threaded platforms only: the room is never capped",
         tune_replies_threaded,
         {REPLY(0, 1, 0, ROOM, "ann"), REPLY(0, 1, 0, ROOM, "ann"),
          REPLY(0, 1, 0, "bluesky:at://did:plc:x/app.bsky.feed.post/1", "ann"),
          REPLY(0, 1, 0, "bluesky:at://did:plc:x/app.bsky.feed.post/1", "ann"),
          CHECK(1, VERDICT_PASS, "pass", NULL, ANYHUMAN),
          CHECK(1, VERDICT_REACT, "social_mechanics",
                "we already replied 2 times in bluesky:at://did:plc:x/app.bsky.feed.post/1",
                {.kind = CONV_AUTHOR_HUMAN,
                 .platform = CONV_PLATFORM_BLUESKY,
                 .conv = "bluesky:at://did:plc:x/app.bsky.feed.post/1"}),
          CHECK(1, VERDICT_PASS, "pass", NULL,
                {.kind = CONV_AUTHOR_HUMAN,
                 .platform = CONV_PLATFORM_GITHUB,
                 .conv = "github:o:r:issue:1"})}},
        {"a REACT at MAX_ACL gives way to a budget block",
         tune_none,
         {NOTE(0, 30, 0, ANYHUMAN),
          CHECK(1, VERDICT_BLOCK, "conversation_budget", NULL,
                {.kind = CONV_AUTHOR_PEER,
                 .author = "bob",
                 .me = true,
                 .chain = 4,
                 .marker = true}),
          CHECK(1, VERDICT_REACT, "chain_length", NULL,
                {.kind = CONV_AUTHOR_PEER,
                 .author = "bob",
                 .me = true,
                 .chain = 4,
                 .marker = true,
                 .conv = "space:quiet"})}},
        {"history and our own events are not noted",
         tune_none,
         {NOTE(0, 40, 0, {.kind = CONV_AUTHOR_HUMAN, .history = true}),
          NOTE(0, 40, 0, {.kind = CONV_AUTHOR_SELF, .author = SELF_ID}),
          NOTE(0, 40, 0, {.kind = CONV_AUTHOR_PEER, .author = "bob", .history = true}),
          CHECK(1, VERDICT_PASS, "pass", NULL, ANYHUMAN),
          CHECK(1, VERDICT_PASS, "claim", NULL, BOB)}},
        {"max_bot_chain above the ring is judged at GATE_RATE_SLOTS",
         tune_big_bot_chain,
         {NOTE(0, 127, 1, BOB), CHECK(200, VERDICT_PASS, "claim", NULL, BOB), NOTE(200, 1, 0, BOB),
          CHECK(201, VERDICT_BLOCK, "bot_chain", "128 agent messages in a row", BOB)}},
        {"max_events above the ring is judged at GATE_RATE_SLOTS",
         tune_big_budget,
         {NOTE(0, 127, 0, ANYHUMAN), CHECK(1, VERDICT_PASS, "pass", NULL, ANYHUMAN),
          NOTE(1, 1, 0, ANYHUMAN),
          CHECK(2, VERDICT_BLOCK, "conversation_budget", "129 events in 60 s (limit 500)",
                ANYHUMAN)}},
};

static void run_scenario(const struct scenario *sc)
{
	struct gate_state *st = gate_state_new();
	struct gate_config cfg;
	gate_config_defaults(&cfg);
	cfg.self_id = SELF_ID;
	cfg.self_name = SELF_NAME;
	sc->tune(&cfg);
	unsigned k = 0; /* conversation sequence for conv_seq */
	/* our replies per conversation, as the conversation store would count
	 * them (the gate reads the count from its input) */
	struct {
		char conv[96];
		int64_t n;
	} ours[16];
	size_t nours = 0;
	for (const struct step *s = sc->steps; s->op != OP_END; s++) {
		int n = s->n ? s->n : 1;
		for (int i = 0; i < n; i++) {
			int64_t now = T0 + s->t + i * s->dt;
			char conv[32];
			snprintf(conv, sizeof conv, "space:c%u", k);
			if (s->conv_seq)
				k++;
			if (s->op == OP_NOTE) {
				struct ev_spec e = s->ev;
				if (s->conv_seq)
					e.conv = conv;
				struct conv_event ev;
				ev_build(&ev, &e);
				gate_note_incoming(st, &ev, now);
				conv_event_free(&ev);
			} else if (s->op == OP_REPLY) {
				const char *c = s->conv_seq ? conv : s->conv;
				gate_note_reply(st, c, s->peer, now);
				size_t j = 0;
				while (j < nours && strcmp(ours[j].conv, c) != 0)
					j++;
				if (j == nours && nours < sizeof ours / sizeof ours[0]) {
					snprintf(ours[nours].conv, sizeof ours[0].conv, "%s", c);
					ours[nours++].n = 0;
				}
				if (j < nours)
					ours[j].n++;
			}
		}
		if (s->op != OP_CHECK)
			continue;
		struct conv_event ev;
		ev_build(&ev, &s->ev);
		struct gate_input in = {.ev = &ev, .derived_chain = -1, .thread_depth = -1};
		for (size_t j = 0; j < nours; j++)
			if (ev.conversation && strcmp(ours[j].conv, ev.conversation) == 0)
				in.our_replies = ours[j].n;
		struct gate_result r;
		gate_check(st, &in, T0 + s->t, &cfg, &r);
		print_message("%s, step %td at +%lld ms -> %s %s: %s\n", sc->name, s - sc->steps,
		              (long long)s->t, decision_verdict_name(r.d.verdict), r.d.rule,
		              r.d.reason);
		assert_int_equal(r.d.verdict, s->verdict);
		assert_string_equal(r.d.rule, s->rule);
		if (s->reason_has)
			assert_non_null(strstr(r.d.reason, s->reason_has));
		conv_event_free(&ev);
	}
	gate_state_free(st);
}

static void test_scenarios(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
		run_scenario(&scenarios[i]);
}

/* ---- bounds ------------------------------------------------------------------------ */

static void note_human(struct gate_state *st, const char *conv, const char *author, int64_t now)
{
	struct ev_spec s = {.kind = CONV_AUTHOR_HUMAN, .author = author, .conv = conv};
	struct conv_event ev;
	ev_build(&ev, &s);
	gate_note_incoming(st, &ev, now);
	conv_event_free(&ev);
}

static enum decision_verdict check_human(const struct gate_state *st, const char *conv, int64_t now,
                                         const struct gate_config *cfg)
{
	struct ev_spec s = {.kind = CONV_AUTHOR_HUMAN, .conv = conv};
	struct conv_event ev;
	ev_build(&ev, &s);
	struct gate_input in = {.ev = &ev, .derived_chain = -1, .thread_depth = -1};
	struct gate_result r;
	gate_check(st, &in, now, cfg, &r);
	conv_event_free(&ev);
	return r.d.verdict;
}

static void test_bounds(void **state)
{
	(void)state;
	struct gate_config cfg;
	gate_config_defaults(&cfg);
	cfg.cooldown_ms = 3600 * 1000; /* so only eviction can end it */
	struct gate_state *st = gate_state_new();
	char conv[32], who[32];
	/* flood "space:first" (distinct authors: the pair budget stays out of it) */
	for (int i = 0; i < 21; i++) {
		snprintf(who, sizeof who, "flooder-%d", i);
		note_human(st, "space:first", who, T0);
	}
	assert_int_equal(check_human(st, "space:first", T0 + 1, &cfg), VERDICT_BLOCK);
	/* 1023 more conversations: the table is full and "space:first" is still held */
	for (int i = 0; i < GATE_MAX_CONVERSATIONS - 1; i++) {
		snprintf(conv, sizeof conv, "space:c%d", i);
		note_human(st, conv, "walker", T0 + 2);
	}
	struct gate_stats s;
	gate_state_stats(st, &s);
	assert_int_equal(s.conversations, GATE_MAX_CONVERSATIONS);
	assert_int_equal(check_human(st, "space:first", T0 + 3, &cfg), VERDICT_BLOCK);
	/* one more: the least recently noted ("space:first") is dropped */
	note_human(st, "space:one-more", "walker", T0 + 4);
	assert_int_equal(check_human(st, "space:first", T0 + 5, &cfg), VERDICT_PASS);
	/* 5000 conversations, 5000 peers with agent texts, 200 events in one */
	for (int i = 0; i < 5000; i++) {
		snprintf(conv, sizeof conv, "bluesky:conv-%d", i);
		snprintf(who, sizeof who, "did:plc:peer%d", i);
		struct ev_spec e = {.kind = CONV_AUTHOR_PEER, .author = who, .conv = conv};
		struct conv_event ev;
		ev_build(&ev, &e);
		gate_note_incoming(st, &ev, T0 + 10 + i);
		conv_event_free(&ev);
		gate_note_reply(st, conv, who, T0 + 10 + i);
	}
	for (int i = 0; i < 200; i++)
		note_human(st, "space:busy", "busy", T0 + 6000 + i);
	gate_state_stats(st, &s);
	assert_int_equal(s.conversations, GATE_MAX_CONVERSATIONS);
	assert_int_equal(s.pairs, GATE_MAX_PAIRS);
	assert_int_equal(s.duplicates, GATE_DUP_SLOTS);
	print_message("gate state after 10000+ keys: %zu bytes\n", s.bytes);
	assert_true(s.bytes < 4 * 1024 * 1024);
	/* a busy conversation's ring stops growing at GATE_RATE_SLOTS */
	size_t before = s.bytes;
	for (int i = 0; i < 1000; i++)
		note_human(st, "space:busy", "busy", T0 + 7000 + i);
	gate_state_stats(st, &s);
	assert_true(s.bytes == before);
	assert_int_equal(check_human(st, "space:busy", T0 + 8000, &cfg), VERDICT_BLOCK);
	gate_state_free(st);
	gate_state_free(NULL);
}

/* ---- the rest of the API --------------------------------------------------------- */

static void test_owner_control(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		bool yes;
	} cases[] = {
	        {"/resume", true},       {"/status", true},      {"  /RESUME ", true},
	        {"\t/Status\r\n", true}, {"/resume now", false}, {"resume", false},
	        {"/pause", false},       {"/resum", false},      {"", false},
	        {"   ", false},          {"/status/", false},    {"x/status", false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_int_equal(gate_is_owner_control(cases[i].text, strlen(cases[i].text)),
		                 cases[i].yes);
	/* length-aware: a NUL inside is not trimmed away */
	assert_false(gate_is_owner_control("/resume\0x", 9));
	assert_true(gate_is_owner_control("/resume\0x", 7));
	assert_false(gate_is_owner_control(NULL, 0));
}

static void test_claim_keys_and_invalid(void **state)
{
	(void)state;
	struct gate_config cfg;
	gate_config_defaults(&cfg);
	struct gate_result r;
	/* no input */
	gate_check(NULL, NULL, T0, &cfg, &r);
	assert_int_equal(r.d.verdict, VERDICT_BLOCK);
	assert_string_equal(r.d.rule, "invalid");
	struct gate_input in = {.ev = NULL};
	gate_check(NULL, &in, T0, NULL, &r);
	assert_string_equal(r.d.rule, "invalid");
	/* an id too long for the key: a digest, the same each time */
	char longid[400];
	memset(longid, 'x', sizeof longid - 1);
	longid[sizeof longid - 1] = '\0';
	struct ev_spec s = {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .id = longid};
	struct conv_event ev;
	ev_build(&ev, &s);
	in = (struct gate_input){.ev = &ev, .derived_chain = -1, .thread_depth = -1};
	gate_check(NULL, &in, T0, NULL, &r); /* NULL state and config: empty, defaults */
	assert_string_equal(r.d.rule, "claim");
	assert_int_equal(strncmp(r.claim_key, "respond:sha256:", 15), 0);
	assert_int_equal(strlen(r.claim_key), 15 + 64);
	char first[GATE_CLAIM_KEY_MAX];
	strcpy(first, r.claim_key);
	gate_check(NULL, &in, T0 + 5, NULL, &r);
	assert_string_equal(r.claim_key, first);
	conv_event_free(&ev);
	/* no id at all: a digest of the message, not a shared "respond:" */
	struct ev_spec s2 = {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .id = ""};
	ev_build(&ev, &s2);
	in.ev = &ev;
	gate_check(NULL, &in, T0, NULL, &r);
	assert_int_equal(strncmp(r.claim_key, "respond:sha256:", 15), 0);
	assert_string_not_equal(r.claim_key, first);
	conv_event_free(&ev);
	/* the reason shows the key whole (a Bluesky post's at:// URI) */
	const char *uri = "at://did:plc:abcdefghijklmnopqrstuvwx/app.bsky.feed.post/3kabcdefghij2";
	struct ev_spec s3 = {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .id = uri};
	ev_build(&ev, &s3);
	in.ev = &ev;
	gate_check(NULL, &in, T0, NULL, &r);
	char want[GATE_CLAIM_KEY_MAX];
	snprintf(want, sizeof want, "claim respond:%s for", uri);
	if (!strstr(r.d.reason, want))
		fail_msg("the claim key is not whole in: %s", r.d.reason);
	conv_event_free(&ev);
	/* a longer one: its start and its end, the middle elided */
	char mid[181];
	for (size_t i = 0; i < sizeof mid - 1; i++)
		mid[i] = (char)('a' + i % 26);
	mid[sizeof mid - 1] = '\0';
	memcpy(mid + sizeof mid - 6, "-END", 5);
	struct ev_spec s4 = {.kind = CONV_AUTHOR_PEER, .author = "bob", .me = true, .id = mid};
	ev_build(&ev, &s4);
	in.ev = &ev;
	gate_check(NULL, &in, T0, NULL, &r);
	assert_int_equal(strlen(r.claim_key), 8 + strlen(mid));
	assert_non_null(strstr(r.d.reason, "claim respond:abcdefghij"));
	assert_non_null(strstr(r.d.reason, "\xE2\x80\xA6"));
	assert_non_null(strstr(r.d.reason, "-END for 60 s"));
	assert_null(strstr(r.d.reason, mid));
	conv_event_free(&ev);
}

static void test_defaults_and_names(void **state)
{
	(void)state;
	struct gate_config c;
	gate_config_defaults(&c);
	assert_int_equal(c.max_acl, 4);
	assert_int_equal(c.max_events, 20);
	assert_true(c.window_ms == 60000 && c.cooldown_ms == 60000);
	assert_int_equal(c.max_bot_chain, 5);
	assert_true(c.bot_chain_quiet_ms == 300000 && c.duplicate_window_ms == 300000);
	assert_null(c.banlist);
	assert_int_equal(c.max_replies_per_conversation, 0);
	assert_int_equal(c.max_thread_depth, 0);
	static const char *const rules[] = {"self",         "history",
	                                    "paused",       "owner_control",
	                                    "chain_length", "response_only",
	                                    "banlist",      "duplicate_payload",
	                                    "bot_chain",    "conversation_budget",
	                                    "pair_budget",  "social_mechanics",
	                                    "claim",        "pass"};
	const char *names = gate_rule_names();
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
		assert_non_null(strstr(names, rules[i]));
	assert_string_equal(GATE_COURTESY_NOTICE,
	                    "For your information only. Replies to this message will not be "
	                    "processed.");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_check_cases),
	        cmocka_unit_test(test_scenarios),
	        cmocka_unit_test(test_bounds),
	        cmocka_unit_test(test_owner_control),
	        cmocka_unit_test(test_claim_keys_and_invalid),
	        cmocka_unit_test(test_defaults_and_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
