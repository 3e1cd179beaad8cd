/*
 * The source's two hooks on a real libuv loop with a real outbound and a
 * test port: done() is called exactly once for every accepted event,
 * whatever ended its walk (gate BLOCK, no composer, nothing composed,
 * validator REJECT, no target, sent with the port's artifact, the port's
 * failure, a port that cannot start, the owner's private delivery, a
 * missing reply_extra), never from inside pipeline_event() or
 * pipeline_composed(), never for an event refused at once (overload), and
 * not by pipeline_free(); reply_extra's object reaches the port as
 * outbound_send.extra.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/conversation/store.h"
#include "modules/outbound/outbound.h"
#include "modules/pipeline/pipeline.h"
#include "testutil.h"

#define MAX_DONE 128

enum compose_mode {
	COMPOSE_REPLY,   /* pipeline_composed(text) from inside compose */
	COMPOSE_NOTHING, /* pipeline_composed(NULL) from inside compose */
	COMPOSE_HOLD,    /* keep the job: answered later by the test */
};

enum extra_mode { EXTRA_NONE, EXTRA_REFS, EXTRA_EMPTY, EXTRA_FAIL };

struct done_call {
	char message_id[128];
	enum decision_verdict verdict;
	const char *rule;
	char reason[DECISION_REASON_MAX];
	char artifact[128];
	bool has_artifact;
};

struct fixture {
	uv_loop_t loop;
	char *dir;
	struct outbound *ob;
	struct pipeline *p;
	/* the composer */
	enum compose_mode mode;
	const char *reply;
	size_t reply_len;
	struct pipeline_job *held[PIPELINE_MAX_JOBS];
	size_t nheld;
	bool no_target;
	enum extra_mode extra;
	int nextra_calls;
	/* the port */
	int port_ok; /* 1 sent, 0 failed */
	bool port_refuses;
	int nsends;
	char sent_extra[256];
	/* done() */
	struct done_call done[MAX_DONE];
	int ndone;
	bool inside; /* inside pipeline_event / pipeline_composed */
	int done_inside;
	/* a done() that walks a new event */
	bool chain_event;
	/* the owner's terminal */
	char delivered[128];
	bool closed;
};

/* ---- the port ---------------------------------------------------------------- */

struct completion {
	uv_timer_t timer;
	outbound_port_done_fn done;
	void *done_ud;
	int ok;
	int n;
};

static void completion_closed(uv_handle_t *h)
{
	free(h->data);
}

static void complete(uv_timer_t *t)
{
	struct completion *c = t->data;
	char artifact[64];
	snprintf(artifact, sizeof artifact, "at://did:test/post/%d", c->n);
	c->done(c->done_ud, c->ok, c->ok ? artifact : NULL,
	        c->ok ? NULL : "HTTP 502 from the test");
	uv_close((uv_handle_t *)t, completion_closed);
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct fixture *f = ud;
	if (f->port_refuses)
		return -1;
	f->nsends++;
	f->sent_extra[0] = 0;
	if (s->extra) {
		char *j = cJSON_PrintUnformatted(s->extra);
		snprintf(f->sent_extra, sizeof f->sent_extra, "%s", j);
		free(j);
	}
	struct completion *c = xcalloc(1, sizeof *c);
	c->done = done;
	c->done_ud = done_ud;
	c->ok = f->port_ok;
	c->n = f->nsends;
	uv_timer_init(&f->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, complete, 1, 0);
	return 0;
}

/* ---- the source --------------------------------------------------------------- */

static void src_done(void *ud, const struct conv_event *ev, const struct decision *final,
                     const char *artifact);

static void src_compose(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                        const struct gate_result *g)
{
	(void)ev;
	(void)g;
	struct fixture *f = ud;
	switch (f->mode) {
	case COMPOSE_REPLY:
		pipeline_composed(job, f->reply, f->reply_len, NULL);
		break;
	case COMPOSE_NOTHING:
		pipeline_composed(job, NULL, 0, "the test composes nothing");
		break;
	case COMPOSE_HOLD:
		assert_true(f->nheld < PIPELINE_MAX_JOBS);
		f->held[f->nheld++] = job;
		break;
	}
}

static int src_target(void *ud, const struct conv_event *ev, char *buf, size_t cap)
{
	struct fixture *f = ud;
	if (f->no_target)
		return -1;
	snprintf(buf, cap, "%s", ev->conversation);
	return 0;
}

static int src_extra(void *ud, const struct conv_event *ev, cJSON *extra)
{
	struct fixture *f = ud;
	f->nextra_calls++;
	assert_non_null(extra);
	assert_null(extra->child); /* handed over empty */
	switch (f->extra) {
	case EXTRA_NONE:
	case EXTRA_EMPTY:
		return 0;
	case EXTRA_FAIL:
		return -1;
	case EXTRA_REFS: {
		cJSON *reply = cJSON_AddObjectToObject(extra, "reply");
		cJSON *parent = cJSON_AddObjectToObject(reply, "parent");
		cJSON_AddStringToObject(parent, "uri", ev->message_id);
		cJSON_AddStringToObject(parent, "cid", "bafy");
		return 0;
	}
	}
	return -1;
}

static void src_deliver(void *ud, const struct conv_event *ev, const char *text, size_t len)
{
	(void)ev;
	struct fixture *f = ud;
	snprintf(f->delivered, sizeof f->delivered, "%.*s", (int)len, text);
}

static struct conv_event make_event(enum conv_platform platform, const char *conv, const char *id,
                                    enum conv_author_kind kind, const char *text)
{
	struct conv_event ev;
	struct conv_event_src s = {
	        .platform = platform,
	        .conversation = conv,
	        .message_id = id,
	        .author_id = kind == CONV_AUTHOR_SELF ? "ada" : "bob",
	        .author_name = kind == CONV_AUTHOR_SELF ? "ada" : "bob",
	        .author_kind = kind,
	        .text = text,
	        .text_len = strlen(text),
	        .addressed_me = true,
	        .time_ms = time_now_ms(),
	};
	conv_event_init(&ev, &s);
	return ev;
}

/* pipeline_event with the "inside" flag up: a done() seen then is a
 * failure. */
static int walk(struct fixture *f, enum conv_platform platform, const char *conv, const char *id,
                enum conv_author_kind kind, const char *text)
{
	struct conv_event ev = make_event(platform, conv, id, kind, text);
	f->inside = true;
	int rc = pipeline_event(f->p, &ev);
	f->inside = false;
	conv_event_free(&ev);
	return rc;
}

static void src_done(void *ud, const struct conv_event *ev, const struct decision *final,
                     const char *artifact)
{
	struct fixture *f = ud;
	if (f->inside)
		f->done_inside++;
	assert_true(f->ndone < MAX_DONE);
	struct done_call *c = &f->done[f->ndone++];
	snprintf(c->message_id, sizeof c->message_id, "%s", ev->message_id);
	assert_non_null(final);
	c->verdict = final->verdict;
	c->rule = final->rule;
	snprintf(c->reason, sizeof c->reason, "%s", final->reason);
	c->has_artifact = artifact != NULL;
	snprintf(c->artifact, sizeof c->artifact, "%s", artifact ? artifact : "");
	if (f->chain_event) {
		f->chain_event = false;
		/* a walk started from inside done(): its own done() comes on a
		 * later turn, once */
		int before = f->ndone;
		assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m-chained",
		                      CONV_AUTHOR_SELF, "chained"),
		                 0);
		assert_int_equal(f->ndone, before);
	}
}

/* ---- fixture ------------------------------------------------------------------- */

static void add_port(struct fixture *f, enum conv_platform platform)
{
	struct outbound_port port = {.platform = platform, .send = port_send, .ud = f};
	struct ga_err e;
	assert_int_equal(outbound_add_port(f->ob, &port, &e), 0);
}

/* The room's: what the agent says to a server's target is the room's
 * conversation. */
static int src_say_conversation(void *ud, const char *target, char *buf, size_t cap)
{
	(void)ud;
	if (strncmp(target, "space:srv-", 10) != 0)
		return -1;
	snprintf(buf, cap, "space:room");
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof *f);
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->dir = tu_tempdir();
	struct outbound_config oc = {.memory_dir = f->dir, .agent_name = "ada"};
	struct ga_err e;
	f->ob = outbound_new(&f->loop, &oc, &e);
	assert_non_null(f->ob);
	add_port(f, CONV_PLATFORM_SPACE);
	add_port(f, CONV_PLATFORM_BLUESKY);
	struct pipeline_config pc = {.loop = &f->loop, .outbound = f->ob};
	gate_config_defaults(&pc.gate);
	pc.gate.self_id = "ada";
	pc.gate.self_name = "ada";
	pc.gate.max_events = 0; /* no budgets: 64 events from one person in one room */
	f->p = pipeline_new(&pc, &e);
	assert_non_null(f->p);
	struct pipeline_source space = {.platform = CONV_PLATFORM_SPACE,
	                                .compose = src_compose,
	                                .reply_target = src_target,
	                                .done = src_done,
	                                .reply_extra = src_extra,
	                                .say_conversation = src_say_conversation,
	                                .ud = f};
	assert_int_equal(pipeline_add_source(f->p, &space), 0);
	struct pipeline_source bsky = {.platform = CONV_PLATFORM_BLUESKY,
	                               .reply_target = src_target,
	                               .done = src_done,
	                               .ud = f}; /* no composer */
	assert_int_equal(pipeline_add_source(f->p, &bsky), 0);
	struct pipeline_source owner = {.platform = CONV_PLATFORM_OWNER,
	                                .compose = src_compose,
	                                .deliver = src_deliver,
	                                .done = src_done,
	                                .ud = f};
	assert_int_equal(pipeline_add_source(f->p, &owner), 0);
	f->mode = COMPOSE_REPLY;
	f->reply = "Glad to help with that, here is the answer.";
	f->reply_len = strlen(f->reply);
	f->port_ok = 1;
	*state = f;
	return 0;
}

static void on_closed(void *ud)
{
	((struct fixture *)ud)->closed = true;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	outbound_close(f->ob, on_closed, f);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_true(f->closed);
	pipeline_free(f->p);
	uv_run(&f->loop, UV_RUN_DEFAULT); /* the done timer's close */
	assert_int_equal(uv_loop_close(&f->loop), 0);
	assert_int_equal(f->done_inside, 0);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void run(struct fixture *f)
{
	uv_run(&f->loop, UV_RUN_DEFAULT);
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_gate_block(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m1", CONV_AUTHOR_SELF, "mine"),
	                 0);
	assert_int_equal(f->ndone, 0);            /* not from inside pipeline_event */
	assert_int_equal(pipeline_jobs(f->p), 1); /* counted until done() */
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_string_equal(f->done[0].message_id, "m1");
	assert_int_equal(f->done[0].verdict, VERDICT_BLOCK);
	assert_string_equal(f->done[0].rule, "self");
	assert_false(f->done[0].has_artifact);
	assert_int_equal(pipeline_jobs(f->p), 0);
	assert_int_equal(f->nsends, 0);
}

static void test_already_answered(void **state)
{
	struct fixture *f = *state;
	conv_store_mark_answered(pipeline_store(f->p), "m1");
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m1", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_BLOCK);
	assert_string_equal(f->done[0].rule, "answered");
}

static void test_no_composer(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(
	        walk(f, CONV_PLATFORM_BLUESKY, "bluesky:post", "b1", CONV_AUTHOR_HUMAN, "hello"),
	        0);
	assert_int_equal(f->ndone, 0);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_string_equal(f->done[0].message_id, "b1");
	assert_int_equal(f->done[0].verdict, VERDICT_INFO);
	assert_string_equal(f->done[0].rule, "no_composer");
}

static void test_composed_nothing(void **state)
{
	struct fixture *f = *state;
	f->mode = COMPOSE_NOTHING;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m2", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	assert_int_equal(f->ndone, 0);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_INFO);
	assert_string_equal(f->done[0].rule, "nothing_to_send");
	assert_string_equal(f->done[0].reason, "the test composes nothing");
	assert_int_equal(f->nsends, 0);
}

/* A composer that answers later: done() is not called from inside
 * pipeline_composed either. */
static void test_composed_later_not_inside(void **state)
{
	struct fixture *f = *state;
	f->mode = COMPOSE_HOLD;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m3", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	run(f);
	assert_int_equal(f->ndone, 0); /* still composing */
	assert_int_equal(f->nheld, 1);
	f->inside = true;
	pipeline_composed(f->held[0], NULL, 0, "later: nothing");
	f->inside = false;
	assert_int_equal(f->ndone, 0);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_string_equal(f->done[0].rule, "nothing_to_send");
}

static void test_validator_reject(void **state)
{
	struct fixture *f = *state;
	static const char bad[] = "a reply\0with a NUL";
	f->reply = bad;
	f->reply_len = sizeof bad - 1;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m4", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	assert_int_equal(f->ndone, 0);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_REJECT);
	assert_string_equal(f->done[0].rule, "nul");
	assert_int_equal(f->nsends, 0);
}

static void test_no_target(void **state)
{
	struct fixture *f = *state;
	f->no_target = true;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m5", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_DROP);
	assert_string_equal(f->done[0].rule, "no_target");
	assert_int_equal(f->nextra_calls, 0);
}

static void test_sent_with_artifact_and_extra(void **state)
{
	struct fixture *f = *state;
	f->extra = EXTRA_REFS;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m6", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	assert_int_equal(f->ndone, 0);
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_int_equal(f->nextra_calls, 1);
	assert_string_equal(f->sent_extra,
	                    "{\"reply\":{\"parent\":{\"uri\":\"m6\",\"cid\":\"bafy\"}}}");
	assert_int_equal(f->ndone, 1);
	assert_string_equal(f->done[0].message_id, "m6");
	assert_int_equal(f->done[0].verdict, VERDICT_SENT);
	assert_string_equal(f->done[0].rule, "sent");
	assert_true(f->done[0].has_artifact);
	assert_string_equal(f->done[0].artifact, "at://did:test/post/1");
	assert_true(conv_store_answered(pipeline_store(f->p), "m6"));
}

static void test_empty_extra_is_none(void **state)
{
	struct fixture *f = *state;
	f->extra = EXTRA_EMPTY;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m7", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	run(f);
	assert_int_equal(f->nextra_calls, 1);
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->sent_extra, ""); /* outbound_send.extra NULL */
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_SENT);
}

static void test_extra_refused(void **state)
{
	struct fixture *f = *state;
	f->extra = EXTRA_FAIL;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m8", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	run(f);
	assert_int_equal(f->nsends, 0);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_DROP);
	assert_string_equal(f->done[0].rule, "reply_extra");
	assert_false(conv_store_answered(pipeline_store(f->p), "m8"));
}

static void test_port_failure(void **state)
{
	struct fixture *f = *state;
	f->port_ok = 0;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m9", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_FAIL);
	assert_false(f->done[0].has_artifact);
	assert_false(conv_store_answered(pipeline_store(f->p), "m9"));
}

/* A port that cannot start: outbound ends the send at once, inside
 * pipeline_event's own call stack — done() still comes from the loop. */
static void test_port_refuses_to_start(void **state)
{
	struct fixture *f = *state;
	f->port_refuses = true;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m10", CONV_AUTHOR_HUMAN, "hi"),
	                 0);
	assert_int_equal(f->ndone, 0);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_FAIL);
}

static void test_outbound_drop(void **state)
{
	struct fixture *f = *state;
	/* the same text to the same target twice: outbound's dedup */
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m11", CONV_AUTHOR_HUMAN, "a"),
	                 0);
	run(f);
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m12", CONV_AUTHOR_HUMAN, "b"),
	                 0);
	run(f);
	assert_int_equal(f->nsends, 1);
	assert_int_equal(f->ndone, 2);
	assert_int_equal(f->done[0].verdict, VERDICT_SENT);
	assert_string_equal(f->done[1].message_id, "m12");
	assert_int_equal(f->done[1].verdict, VERDICT_DROP);
	assert_string_equal(f->done[1].rule, "dedup");
}

static void test_owner_delivery(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(
	        walk(f, CONV_PLATFORM_OWNER, "owner:terminal", "o1", CONV_AUTHOR_OWNER, "status?"),
	        0);
	assert_int_equal(f->ndone, 0);
	assert_string_equal(f->delivered, f->reply);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_int_equal(f->done[0].verdict, VERDICT_SENT);
	assert_string_equal(f->done[0].rule, "delivered");
	assert_false(f->done[0].has_artifact);
	assert_int_equal(f->nextra_calls, 0); /* not for a private delivery */
}

/* Overload: the refused event gets no done(); each accepted one exactly
 * one, the walks whose done() is due still counting. */
static void test_overload_and_exactly_once(void **state)
{
	struct fixture *f = *state;
	f->mode = COMPOSE_HOLD;
	char id[32];
	for (int i = 0; i < PIPELINE_MAX_JOBS; i++) {
		snprintf(id, sizeof id, "h%d", i);
		assert_int_equal(
		        walk(f, CONV_PLATFORM_SPACE, "space:room", id, CONV_AUTHOR_HUMAN, "hi"), 0);
	}
	assert_int_equal(pipeline_jobs(f->p), PIPELINE_MAX_JOBS);
	assert_int_equal(f->nheld, PIPELINE_MAX_JOBS);
	assert_int_equal(
	        walk(f, CONV_PLATFORM_SPACE, "space:room", "refused", CONV_AUTHOR_HUMAN, "hi"), -1);
	/* every walk ends, synchronously: the slots stay taken until done() */
	for (size_t i = 0; i < f->nheld; i++)
		pipeline_composed(f->held[i], NULL, 0, "nothing");
	assert_int_equal(f->ndone, 0);
	assert_int_equal(pipeline_jobs(f->p), PIPELINE_MAX_JOBS);
	assert_int_equal(
	        walk(f, CONV_PLATFORM_SPACE, "space:room", "refused2", CONV_AUTHOR_HUMAN, "hi"),
	        -1);
	run(f);
	assert_int_equal(f->ndone, PIPELINE_MAX_JOBS);
	assert_int_equal(pipeline_jobs(f->p), 0);
	for (int i = 0; i < f->ndone; i++) {
		snprintf(id, sizeof id, "h%d", i);
		assert_string_equal(f->done[i].message_id, id); /* oldest first */
		assert_string_not_equal(f->done[i].message_id, "refused");
	}
	run(f); /* nothing more */
	assert_int_equal(f->ndone, PIPELINE_MAX_JOBS);
}

/* A walk started from inside done(): its done() comes on a later turn. */
static void test_event_from_done(void **state)
{
	struct fixture *f = *state;
	f->chain_event = true;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m13", CONV_AUTHOR_SELF, "x"),
	                 0);
	run(f);
	assert_int_equal(f->ndone, 2);
	assert_string_equal(f->done[0].message_id, "m13");
	assert_string_equal(f->done[1].message_id, "m-chained");
	assert_string_equal(f->done[1].rule, "self");
}

/* pipeline_free calls nobody: a done() still due is dropped (and nothing
 * leaks). */
static void test_free_calls_nobody(void **state)
{
	struct fixture *f = *state;
	f->mode = COMPOSE_HOLD;
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m14", CONV_AUTHOR_SELF, "x"),
	                 0);
	assert_int_equal(walk(f, CONV_PLATFORM_SPACE, "space:room", "m15", CONV_AUTHOR_HUMAN, "x"),
	                 0);
	assert_int_equal(pipeline_jobs(f->p), 2);
	pipeline_free(f->p);
	/* a new, empty pipeline for the teardown */
	struct pipeline_config pc = {.loop = &f->loop, .outbound = f->ob};
	gate_config_defaults(&pc.gate);
	struct ga_err e;
	f->p = pipeline_new(&pc, &e);
	assert_non_null(f->p);
	run(f);
	assert_int_equal(f->ndone, 0);
}

/* pipeline_say keeps its own callback; the source's done() is not called. */
static int say_calls;
static void on_say(void *ud, const struct decision *final, const char *artifact)
{
	(void)ud;
	(void)artifact;
	assert_int_equal(final->verdict, VERDICT_SENT);
	say_calls++;
}

static void test_say_is_not_a_walk(void **state)
{
	struct fixture *f = *state;
	const char *t = "A message the agent starts itself.";
	say_calls = 0;
	assert_int_equal(pipeline_say(f->p, CONV_PLATFORM_SPACE, "space:room", "test", t, strlen(t),
	                              -1, "say:1", on_say, NULL),
	                 0);
	run(f);
	assert_int_equal(say_calls, 1);
	assert_int_equal(f->ndone, 0);
	assert_int_equal(f->nextra_calls, 0);
}

/* A message the agent says to a target is checked against the echo window
 * of the conversation the source names for it: a restatement of a peer's
 * room chat said to the server's target is refused; other words go. */
static struct decision say_final;
static void on_say_final(void *ud, const struct decision *final, const char *artifact)
{
	(void)ud;
	(void)artifact;
	say_final = *final;
}

static void test_say_conversation(void **state)
{
	struct fixture *f = *state;
	const char *said = "The login page times out after thirty seconds on the staging server.";
	struct conv_event_src es = {.platform = CONV_PLATFORM_SPACE,
	                            .conversation = "space:room",
	                            .message_id = "space:peer1",
	                            .author_id = "bob",
	                            .author_name = "bob",
	                            .author_kind = CONV_AUTHOR_PEER,
	                            .is_bot = true,
	                            .text = said,
	                            .text_len = strlen(said)};
	struct conv_event ev;
	conv_event_init(&ev, &es);
	conv_store_add(pipeline_store(f->p), &ev);
	conv_event_free(&ev);

	memset(&say_final, 0, sizeof say_final);
	assert_int_equal(pipeline_say(f->p, CONV_PLATFORM_SPACE, "space:srv-1", "test", said,
	                              strlen(said), 1, "say:echo", on_say_final, NULL),
	                 0);
	run(f);
	assert_int_equal(say_final.verdict, VERDICT_REJECT);

	const char *other =
	        "Done: the checklist issue is open, and the owner review is set for Monday.";
	memset(&say_final, 0, sizeof say_final);
	assert_int_equal(pipeline_say(f->p, CONV_PLATFORM_SPACE, "space:srv-1", "test", other,
	                              strlen(other), 1, "say:new", on_say_final, NULL),
	                 0);
	run(f);
	assert_int_equal(say_final.verdict, VERDICT_SENT);
}

/* Our replies per conversation are counted from the store (SELF.md's
 * replies per conversation): with one reply of ours already in a thread —
 * however it was learnt: here a thread read — the next message of that
 * thread gets a reaction, not a reply; another thread is untouched. */
static void add_ours(struct fixture *f, const char *conv, const char *id)
{
	struct conv_event_src es = {.platform = CONV_PLATFORM_BLUESKY,
	                            .conversation = conv,
	                            .message_id = id,
	                            .author_id = "ada",
	                            .author_name = "ada",
	                            .author_kind = CONV_AUTHOR_SELF,
	                            .is_bot = true,
	                            .text = "An earlier answer of ours.",
	                            .text_len = 26,
	                            .from_history = true};
	struct conv_event ev;
	conv_event_init(&ev, &es);
	conv_store_add(pipeline_store(f->p), &ev);
	conv_store_add(pipeline_store(f->p), &ev); /* learnt twice: counted once */
	conv_event_free(&ev);
}

static void test_our_replies_counted_from_store(void **state)
{
	struct fixture *f = *state;
	struct gate_config g;
	gate_config_defaults(&g);
	g.self_id = "ada";
	g.self_name = "ada";
	g.max_events = 0;
	g.max_replies_per_conversation = 2;
	pipeline_set_gate(f->p, &g);
	add_ours(f, "bsky:thread-1", "at://ada/1");
	assert_int_equal(conv_store_count_ours(pipeline_store(f->p), "bsky:thread-1"), 1);
	assert_int_equal(walk(f, CONV_PLATFORM_BLUESKY, "bsky:thread-1", "m-note-1",
	                      CONV_AUTHOR_HUMAN, "And what about the second part?"),
	                 0);
	run(f);
	assert_int_equal(f->ndone, 1);
	assert_int_not_equal(f->done[0].verdict, VERDICT_REACT);
	add_ours(f, "bsky:thread-1", "at://ada/2");
	assert_int_equal(walk(f, CONV_PLATFORM_BLUESKY, "bsky:thread-1", "m-note-2",
	                      CONV_AUTHOR_HUMAN, "And the third part?"),
	                 0);
	assert_int_equal(walk(f, CONV_PLATFORM_BLUESKY, "bsky:thread-2", "m-note-3",
	                      CONV_AUTHOR_HUMAN, "A question in another thread."),
	                 0);
	run(f);
	assert_int_equal(f->ndone, 3);
	assert_string_equal(f->done[1].message_id, "m-note-2");
	assert_int_equal(f->done[1].verdict, VERDICT_REACT);
	assert_string_equal(f->done[2].message_id, "m-note-3");
	assert_int_not_equal(f->done[2].verdict, VERDICT_REACT);
}

/* pipeline_say_with: the caller's platform fields reach the port as
 * outbound_send.extra (a copy: the caller's object is freed at once); an
 * empty object is none. */
static void test_say_with_extra(void **state)
{
	struct fixture *f = *state;
	const char *t = "Filed it: https://github.com/acme/widgets/issues/1";
	cJSON *extra = cJSON_CreateObject();
	cJSON *reply = cJSON_AddObjectToObject(extra, "reply");
	cJSON_AddStringToObject(reply, "parent", "at://did:plc:bob/app.bsky.feed.post/1");
	struct pipeline_say_req r = {.platform = CONV_PLATFORM_BLUESKY,
	                             .target = "bluesky:reply:did:plc:bob",
	                             .source = "commitment",
	                             .text = t,
	                             .len = strlen(t),
	                             .chain = -1,
	                             .id = "say:extra-1",
	                             .extra = extra,
	                             .done = on_say};
	say_calls = 0;
	assert_int_equal(pipeline_say_with(f->p, &r), 0);
	cJSON_Delete(extra);
	run(f);
	assert_int_equal(say_calls, 1);
	assert_int_equal(f->nsends, 1);
	assert_string_equal(f->sent_extra,
	                    "{\"reply\":{\"parent\":\"at://did:plc:bob/app.bsky.feed.post/1\"}}");
	cJSON *empty = cJSON_CreateObject();
	r.id = "say:extra-2";
	r.text = "A second message, with no platform fields at all.";
	r.len = strlen(r.text);
	r.extra = empty;
	assert_int_equal(pipeline_say_with(f->p, &r), 0);
	cJSON_Delete(empty);
	run(f);
	assert_int_equal(f->nsends, 2);
	assert_string_equal(f->sent_extra, "");
	assert_int_equal(f->ndone, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_gate_block, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_already_answered, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_no_composer, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_composed_nothing, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_composed_later_not_inside, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_validator_reject, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_no_target, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_sent_with_artifact_and_extra, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_empty_extra_is_none, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_extra_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_port_failure, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_port_refuses_to_start, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_outbound_drop, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_owner_delivery, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_overload_and_exactly_once, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_event_from_done, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_free_calls_nobody, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_say_is_not_a_walk, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_say_conversation, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_our_replies_counted_from_store, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_say_with_extra, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
