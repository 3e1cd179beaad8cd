/*
 * test_callq — the call queue (adapters/http/callq.h) with a small policy
 * of the test's own, on the real HTTP adapter against httpfake on
 * 127.0.0.1: order, one call in flight, lanes, the bound and what happens
 * at it, backoff and retries, rate-limited answers, cancel, closing, wait
 * reasons (what waits for a limit past max_wait_ms is ended unsent), the
 * admit hook. The policy's clock is the test's: waits end when the test
 * moves it, the queue notices within recheck_ms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/http/callq.h"
#include "tests/fakes/httpfake/httpfake.h"
#include "tests/unit/llm/testloop.h"

#define T0_MS ((int64_t)1700000000000)

struct lane_wait {
	const char *lane;
	int64_t until_ms;
	enum callq_wait why;
};

struct fx {
	uv_loop_t loop;
	struct httpfake *fake;
	struct http_client *http;
	struct callq *q;
	int64_t now; /* the clock at setup, plus the test's moves */
	uint64_t start_ns;
	bool frozen; /* the clock moves only when the test moves it */
	struct lane_wait waits[2];
	const char *pass_lane; /* admit passes calls of this lane over */
	char log[1024];        /* "name:outcome " per ended call, in order */
	int ended;
	int want; /* ended count the test waits for */
	bool done;
	bool last_maybe;
	char last_msg[GA_ERR_MSG_MAX];
	int last_attempts;
	int last_status;
};

struct tcall {
	struct callq_call q; /* first */
	struct fx *fx;
	char name[32];
	char path[64];
	bool post;
};

/* The log's "!" marks a call ended with maybe_applied. */
static void logf_(struct fx *fx, const char *name, const char *outcome)
{
	size_t n = strlen(fx->log);
	snprintf(fx->log + n, sizeof fx->log - n, "%s:%s ", name, outcome);
}

static void ended(struct fx *fx, struct tcall *t, const char *outcome, const char *msg,
                  bool maybe_applied)
{
	char o[32];
	snprintf(o, sizeof o, "%s%s", outcome, maybe_applied ? "!" : "");
	logf_(fx, t->name, o);
	snprintf(fx->last_msg, sizeof fx->last_msg, "%s", msg ? msg : "");
	fx->last_maybe = maybe_applied;
	fx->last_attempts = t->q.attempts;
	fx->last_status = t->q.status;
	free(t);
	if (++fx->ended >= fx->want)
		fx->done = true;
}

/* The test's clock: real time since setup, plus what the test moved it. */
static int64_t p_now(void *ud)
{
	struct fx *fx = ud;
	if (fx->frozen)
		return fx->now;
	return fx->now + (int64_t)((uv_hrtime() - fx->start_ns) / 1000000u);
}

static enum callq_admit p_admit(void *ud, struct callq_call *k, int64_t now)
{
	(void)now;
	struct fx *fx = ud;
	return fx->pass_lane && k->lane && strcmp(k->lane, fx->pass_lane) == 0 ? CALLQ_ADMIT_PASS
	                                                                       : CALLQ_ADMIT_GO;
}

static int64_t p_wait(void *ud, struct callq_call *k, int64_t now, enum callq_wait *why)
{
	struct fx *fx = ud;
	*why = CALLQ_WAIT_NONE;
	for (size_t i = 0; i < 2; i++) {
		struct lane_wait *w = &fx->waits[i];
		if (w->lane && k->lane && strcmp(w->lane, k->lane) == 0 && w->until_ms > now) {
			*why = w->why;
			return w->until_ms - now;
		}
	}
	return 0;
}

static int p_send(void *ud, struct callq_call *k, int64_t now, struct ga_err *err)
{
	(void)now;
	struct fx *fx = ud;
	struct tcall *t = (struct tcall *)k;
	char url[256];
	snprintf(url, sizeof url, "%s%s", httpfake_base_url(fx->fake), t->path);
	struct http_request req = {
	        .method = t->post ? "POST" : "GET", .url = url, .timeout_ms = 5000};
	return callq_start(fx->q, k, &req, err);
}

static void p_answered(void *ud, struct callq_call *k, const struct http_response *hr, int64_t now)
{
	(void)now;
	struct fx *fx = ud;
	struct tcall *t = (struct tcall *)k;
	if (hr->error != HTTP_OK) {
		callq_unanswered(fx->q, k, hr);
		return;
	}
	if (hr->status == 429) {
		char full[GA_ERR_MSG_MAX];
		if (!callq_rate_hit(fx->q, k, "rate limited", full, sizeof full))
			ended(fx, t, "rate_limited", full, false);
		return;
	}
	if (hr->status >= 500) {
		callq_retry(fx->q, k, "server error", !k->unsafe, k->unsafe, -1);
		return;
	}
	ended(fx, t, "ok", hr->body, false);
}

static void p_end(void *ud, struct callq_call *k, enum callq_end why, const char *msg,
                  bool maybe_applied)
{
	static const char *const names[] = {"cancelled", "transient", "too_long"};
	ended(ud, (struct tcall *)k, names[why], msg, maybe_applied);
}

static const char *p_wait_name(enum callq_wait w)
{
	switch (w) {
	case CALLQ_WAIT_EXHAUSTED:
		return "test budget";
	case CALLQ_WAIT_HOLD:
		return "test hold";
	default:
		return "other wait";
	}
}

static const struct callq_ops OPS = {
        .now_ms = p_now,
        .admit = p_admit,
        .wait_ms = p_wait,
        .send = p_send,
        .answered = p_answered,
        .end = p_end,
        .wait_name = p_wait_name,
};

static struct callq_config config(void)
{
	return (struct callq_config){
	        .service = "Test",
	        .log_comp = "test",
	        .wait_log_level = LOG_LEVEL_DEBUG,
	        .max_calls = 4,
	        .max_retries = 2,
	        .backoff_base_ms = 1,
	        .backoff_cap_ms = 5,
	        .max_rate_retries = 1,
	        .max_wait_ms = 60 * 1000,
	        .recheck_ms = 10,
	};
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = httpfake_new(0, err, sizeof err);
	assert_non_null(fx->fake);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	assert_non_null(fx->http);
	fx->now = T0_MS;
	fx->start_ns = uv_hrtime();
	struct callq_config cfg = config();
	fx->q = callq_new(fx->http, &OPS, fx, &cfg);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	callq_free(fx->q);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	httpfake_free(fx->fake);
	free(fx);
	return 0;
}

/* Queues a call named name to path in lane; returns its id (0 refused,
 * err filled). */
static uint64_t push(struct fx *fx, const char *name, const char *path, const char *lane, bool post,
                     struct ga_err *err)
{
	struct tcall *t = calloc(1, sizeof *t);
	t->fx = fx;
	snprintf(t->name, sizeof t->name, "%s", name);
	snprintf(t->path, sizeof t->path, "%s", path);
	t->post = post;
	t->q.what = t->name;
	t->q.lane = lane;
	t->q.unsafe = post;
	uint64_t id = callq_push(fx->q, &t->q, err);
	if (!id)
		free(t);
	return id;
}

static uint64_t push_ok(struct fx *fx, const char *name, const char *path, const char *lane)
{
	struct ga_err err = {{0}};
	uint64_t id = push(fx, name, path, lane, false, &err);
	assert_true(id > 0);
	return id;
}

static void run_until_ended(struct fx *fx, int n)
{
	fx->want = n;
	fx->done = fx->ended >= n;
	assert_int_equal(testloop_run_until(&fx->loop, &fx->done), 0);
}

/* Runs the loop until the fake has seen n requests (polled; 10 s guard). */
static void run_until_requests(struct fx *fx, uint64_t n)
{
	uint64_t deadline = uv_hrtime() + (uint64_t)TESTLOOP_GUARD_MS * 1000000u;
	while (httpfake_request_count(fx->fake) < n) {
		assert_true(uv_hrtime() < deadline);
		uv_run(&fx->loop, UV_RUN_NOWAIT);
		uv_sleep(1);
	}
}

static void route(struct fx *fx, const char *method, const char *path, int status, const char *body)
{
	httpfake_route_respond(httpfake_route(fx->fake, method, path), status, "text/plain", body);
}

/* The path of the request with that seq. */
static void seen_path(struct fx *fx, uint64_t seq, const char *want)
{
	struct httpfake_request *r = httpfake_request_get(fx->fake, seq);
	assert_non_null(r);
	assert_string_equal(r->path, want);
	httpfake_request_free(r);
}

static void test_fifo_one_in_flight(void **state)
{
	struct fx *fx = *state;
	route(fx, "GET", "/a", 200, "A");
	route(fx, "GET", "/b", 200, "B");
	route(fx, "GET", "/c", 200, "C");
	uint64_t a = push_ok(fx, "a", "/a", "core");
	uint64_t b = push_ok(fx, "b", "/b", "core");
	uint64_t c = push_ok(fx, "c", "/c", "core");
	assert_true(a < b && b < c);
	/* nothing starts inside callq_push: the pump runs on the loop */
	assert_int_equal(callq_pending(fx->q), 3);
	assert_int_equal(httpfake_request_count(fx->fake), 0);
	run_until_ended(fx, 3);
	assert_string_equal(fx->log, "a:ok b:ok c:ok ");
	seen_path(fx, 0, "/a");
	seen_path(fx, 1, "/b");
	seen_path(fx, 2, "/c");
	struct callq_counts n;
	callq_counts(fx->q, &n);
	assert_int_equal(n.calls, 3);
	assert_int_equal(n.requests, 3);
	assert_int_equal(callq_pending(fx->q), 0);
}

/* One call in flight at a time: while the first hangs, the second is not
 * sent. */
static void test_second_waits_for_the_first(void **state)
{
	struct fx *fx = *state;
	struct httpfake_response *r = httpfake_route_respond(
	        httpfake_route(fx->fake, "GET", "/slow"), 200, "text/plain", "slow");
	httpfake_response_delay(r, 300);
	route(fx, "GET", "/next", 200, "next");
	push_ok(fx, "slow", "/slow", "core");
	push_ok(fx, "next", "/next", "core");
	run_until_requests(fx, 1);
	/* the first is in flight (its answer is 300 ms away); the second has
	 * not reached the fake */
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_int_equal(httpfake_request_count(fx->fake), 1);
	assert_int_equal(callq_pending(fx->q), 2);
	run_until_ended(fx, 2);
	assert_string_equal(fx->log, "slow:ok next:ok ");
	seen_path(fx, 1, "/next");
}

/* A lane held by a limit is passed over by a later call of another lane;
 * calls of the held lane keep their order once it lets them go. */
static void test_lanes_pass_a_held_lane(void **state)
{
	struct fx *fx = *state;
	route(fx, "GET", "/s1", 200, "");
	route(fx, "GET", "/s2", 200, "");
	route(fx, "GET", "/c1", 200, "");
	fx->waits[0] = (struct lane_wait){"search", fx->now + 30 * 1000, CALLQ_WAIT_EXHAUSTED};
	push_ok(fx, "s1", "/s1", "search");
	push_ok(fx, "s2", "/s2", "search");
	push_ok(fx, "c1", "/c1", "core");
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "c1:ok ");
	/* the held calls wait and say why */
	struct callq_call *h = callq_head(fx->q);
	assert_non_null(h);
	assert_string_equal(h->what, "s1");
	assert_int_equal(h->logged_wait, CALLQ_WAIT_EXHAUSTED);
	assert_int_equal(httpfake_request_count(fx->fake), 1);
	fx->now += 31 * 1000; /* past the reset */
	run_until_ended(fx, 3);
	assert_string_equal(fx->log, "c1:ok s1:ok s2:ok ");
}

/* The bound: max_calls queued plus in flight; the next is refused with a
 * sentence naming it, nothing queued is dropped. */
static void test_bound_refuses_and_keeps_the_rest(void **state)
{
	struct fx *fx = *state;
	route(fx, "GET", "/x", 200, "");
	push_ok(fx, "x1", "/x", "core");
	push_ok(fx, "x2", "/x", "core");
	push_ok(fx, "x3", "/x", "core");
	push_ok(fx, "x4", "/x", "core");
	struct ga_err err = {{0}};
	assert_int_equal(push(fx, "x5", "/x", "core", false, &err), 0);
	assert_string_equal(err.msg,
	                    "4 Test requests are already waiting; the attempt to x5 was refused");
	assert_int_equal(callq_pending(fx->q), 4);
	run_until_ended(fx, 4);
	assert_string_equal(fx->log, "x1:ok x2:ok x3:ok x4:ok ");
	/* room again */
	push_ok(fx, "x6", "/x", "core");
	run_until_ended(fx, 5);
}

/* A transient failure is retried after a backoff; meanwhile the call
 * blocks its lane (the next call of the lane waits behind it), and a call
 * of another lane goes ahead. */
static void test_backoff_retries_then_succeeds(void **state)
{
	struct fx *fx = *state;
	fx->frozen = true;
	struct httpfake_route *rt = httpfake_route(fx->fake, "GET", "/flaky");
	httpfake_route_respond(rt, 503, "text/plain", "down");
	httpfake_route_respond(rt, 200, "text/plain", "up");
	route(fx, "GET", "/next", 200, "");
	route(fx, "GET", "/other", 200, "");
	push_ok(fx, "flaky", "/flaky", "core");
	push_ok(fx, "next", "/next", "core");
	push_ok(fx, "other", "/other", "side");
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "other:ok ");
	seen_path(fx, 0, "/flaky");
	seen_path(fx, 1, "/other");
	struct callq_call *h = callq_head(fx->q);
	assert_string_equal(h->what, "flaky");
	assert_int_equal(h->logged_wait, CALLQ_WAIT_BACKOFF);
	assert_true(h->not_before_ms > fx->now);
	assert_int_equal(httpfake_request_count(fx->fake), 2);
	fx->now += 1000; /* past the backoff (cap 5 ms) */
	run_until_ended(fx, 3);
	assert_string_equal(fx->log, "other:ok flaky:ok next:ok ");
	seen_path(fx, 2, "/flaky");
	seen_path(fx, 3, "/next");
	struct callq_counts n;
	callq_counts(fx->q, &n);
	assert_int_equal(n.retries, 1);
	assert_int_equal(n.requests, 4);
}

/* The backoff doubles per retry up to the cap, jitter adds up to 30 %, a
 * Retry-After is the least wait. */
static void test_backoff_ms(void **state)
{
	(void)state;
	assert_int_equal(callq_backoff_ms(2000, 60000, 1, 0, -1), 2000);
	assert_int_equal(callq_backoff_ms(2000, 60000, 2, 0, -1), 4000);
	assert_int_equal(callq_backoff_ms(2000, 60000, 3, 1, -1), 10400);
	assert_int_equal(callq_backoff_ms(2000, 60000, 10, 0, -1), 60000);
	assert_int_equal(callq_backoff_ms(2000, 60000, 1, 0, 30000), 30000);
	assert_int_equal(callq_backoff_ms(2000, 60000, 1, 0, 600000), 60000);
	assert_int_equal(callq_backoff_ms(2000, 60000, 2, 0, 1000), 4000);
}

static void test_backoff_gives_up(void **state)
{
	struct fx *fx = *state;
	route(fx, "GET", "/down", 503, "down");
	push_ok(fx, "down", "/down", "core");
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "down:transient ");
	/* max_retries 2: three attempts */
	assert_string_equal(fx->last_msg, "server error; gave up after 3 attempts");
	assert_int_equal(fx->last_attempts, 3);
	assert_int_equal(fx->last_status, 503);
	assert_int_equal(httpfake_request_count(fx->fake), 3);
}

/* A write that may have reached the server is never sent twice. */
static void test_unsafe_write_not_repeated(void **state)
{
	struct fx *fx = *state;
	route(fx, "POST", "/write", 503, "down");
	struct ga_err err = {{0}};
	assert_true(push(fx, "write", "/write", "core", true, &err) > 0);
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "write:transient! ");
	assert_string_equal(fx->last_msg, "server error; not repeated, because the request may "
	                                  "have been carried out");
	assert_true(fx->last_maybe);
	assert_int_equal(httpfake_request_count(fx->fake), 1);
}

/* No answer at all: a dropped connection may have reached the server, so
 * a write is not repeated; a read is, until it gives up. */
static void test_unanswered(void **state)
{
	struct fx *fx = *state;
	struct httpfake_response *r = httpfake_route_respond(httpfake_route(fx->fake, "*", "/drop"),
	                                                     200, "text/plain", "");
	httpfake_response_action(r, HTTPFAKE_DROP);
	struct ga_err err = {{0}};
	assert_true(push(fx, "w", "/drop", "core", true, &err) > 0);
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "w:transient! ");
	assert_non_null(strstr(fx->last_msg, "Test did not answer the attempt to w ("));
	assert_non_null(strstr(fx->last_msg, "; not repeated, because"));
	assert_true(fx->last_maybe);
	push_ok(fx, "r", "/drop", "core");
	run_until_ended(fx, 2);
	assert_string_equal(fx->log, "w:transient! r:transient ");
	assert_non_null(strstr(fx->last_msg, "; gave up after 3 attempts"));
	assert_false(fx->last_maybe);
	assert_int_equal(httpfake_request_count(fx->fake), 4);
}

static void test_rate_hits_requeue_then_give_up(void **state)
{
	struct fx *fx = *state;
	route(fx, "GET", "/busy", 429, "");
	push_ok(fx, "busy", "/busy", "core");
	run_until_ended(fx, 1);
	/* max_rate_retries 1: two rate-limited answers */
	assert_string_equal(fx->log, "busy:rate_limited ");
	assert_string_equal(fx->last_msg, "rate limited; gave up after 2 rate-limited answers");
	struct callq_counts n;
	callq_counts(fx->q, &n);
	assert_int_equal(n.rate_limited, 2);
	assert_int_equal(n.retries, 0);
}

/* A limit that would hold a call past max_wait_ms ends it unsent, naming
 * the limit; spacing and low-budget pacing never do. */
static void test_wait_reasons_and_max_wait(void **state)
{
	struct fx *fx = *state;
	route(fx, "GET", "/held", 200, "");
	route(fx, "GET", "/paced", 200, "");
	fx->waits[0] = (struct lane_wait){"held", fx->now + 61 * 1000, CALLQ_WAIT_HOLD};
	fx->waits[1] = (struct lane_wait){"paced", fx->now + 120 * 1000, CALLQ_WAIT_LOW_BUDGET};
	push_ok(fx, "held", "/held", "held");
	push_ok(fx, "paced", "/paced", "paced");
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "held:too_long ");
	assert_string_equal(fx->last_msg,
	                    "Test's test hold holds the attempt to held until "
	                    "2023-11-14T22:14:21.000Z, longer than this request may wait (60 s); "
	                    "it was not sent");
	assert_int_equal(httpfake_request_count(fx->fake), 0);
	/* the paced call waits, however long, and goes when its time comes */
	struct callq_call *h = callq_head(fx->q);
	assert_non_null(h);
	assert_int_equal(h->logged_wait, CALLQ_WAIT_LOW_BUDGET);
	fx->now += 120 * 1000;
	run_until_ended(fx, 2);
	assert_string_equal(fx->log, "held:too_long paced:ok ");
	assert_true(callq_wait_is_limit(CALLQ_WAIT_EXHAUSTED));
	assert_true(callq_wait_is_limit(CALLQ_WAIT_POINTS));
	assert_false(callq_wait_is_limit(CALLQ_WAIT_SPACING));
	assert_false(callq_wait_is_limit(CALLQ_WAIT_BACKOFF));
}

/* A limit shorter than max_wait_ms: the call waits, then goes. */
static void test_hold_within_max_wait(void **state)
{
	struct fx *fx = *state;
	route(fx, "GET", "/h", 200, "");
	fx->waits[0] = (struct lane_wait){"core", fx->now + 5 * 1000, CALLQ_WAIT_HOLD};
	push_ok(fx, "h", "/h", "core");
	for (int i = 0; i < 5; i++)
		uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_int_equal(httpfake_request_count(fx->fake), 0);
	fx->now += 5 * 1000;
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "h:ok ");
}

/* The admit hook passes a call over without blocking its lane or the
 * queue; a kick after it admits the call lets it go. */
static void test_admit_pass(void **state)
{
	struct fx *fx = *state;
	route(fx, "GET", "/p", 200, "");
	route(fx, "GET", "/o", 200, "");
	fx->pass_lane = "session";
	push_ok(fx, "p", "/p", "session");
	push_ok(fx, "o", "/o", "core");
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "o:ok ");
	fx->pass_lane = NULL;
	callq_kick(fx->q);
	run_until_ended(fx, 2);
	assert_string_equal(fx->log, "o:ok p:ok ");
}

/* Cancel: a queued call never reaches the server, an in-flight one is
 * dropped; neither is ended through the callback, the rest goes on. */
static void test_cancel(void **state)
{
	struct fx *fx = *state;
	struct httpfake_response *r =
	        httpfake_route_respond(httpfake_route(fx->fake, "GET", "/hang"), 200, NULL, NULL);
	httpfake_response_action(r, HTTPFAKE_HANG);
	route(fx, "GET", "/q", 200, "");
	route(fx, "GET", "/after", 200, "");
	uint64_t hang = push_ok(fx, "hang", "/hang", "core");
	uint64_t queued = push_ok(fx, "queued", "/q", "core");
	push_ok(fx, "after", "/after", "core");
	run_until_requests(fx, 1);
	struct callq_call *k = callq_find(fx->q, queued);
	assert_non_null(k);
	callq_remove(fx->q, k);
	free(k);
	k = callq_find(fx->q, hang);
	assert_non_null(k);
	assert_true(k->http_id > 0); /* in flight */
	callq_remove(fx->q, k);
	free(k);
	assert_null(callq_find(fx->q, hang));
	assert_int_equal(callq_pending(fx->q), 1);
	run_until_ended(fx, 1);
	assert_string_equal(fx->log, "after:ok ");
	assert_int_equal(httpfake_request_count(fx->fake), 2);
	seen_path(fx, 1, "/after");
}

static void test_free_ends_everything(void **state)
{
	struct fx *fx = *state;
	struct httpfake_response *r =
	        httpfake_route_respond(httpfake_route(fx->fake, "POST", "/hang"), 200, NULL, NULL);
	httpfake_response_action(r, HTTPFAKE_HANG);
	struct ga_err err = {{0}};
	assert_true(push(fx, "w", "/hang", "core", true, &err) > 0);
	push_ok(fx, "r", "/never", "core");
	run_until_requests(fx, 1);
	fx->want = 99;
	callq_free(fx->q);
	fx->q = NULL;
	/* the write in flight may have been carried out; the queued read not */
	assert_string_equal(fx->log, "w:cancelled! r:cancelled ");
	assert_false(fx->last_maybe);
	assert_string_equal(fx->last_msg, "the attempt to r was cancelled: shutting down");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_fifo_one_in_flight, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_second_waits_for_the_first, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_lanes_pass_a_held_lane, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bound_refuses_and_keeps_the_rest, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_backoff_retries_then_succeeds, setup,
	                                        teardown),
	        cmocka_unit_test(test_backoff_ms),
	        cmocka_unit_test_setup_teardown(test_backoff_gives_up, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unsafe_write_not_repeated, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unanswered, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_rate_hits_requeue_then_give_up, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_wait_reasons_and_max_wait, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_hold_within_max_wait, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_admit_pass, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_free_ends_everything, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
