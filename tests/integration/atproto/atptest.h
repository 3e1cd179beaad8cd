/*
 * atptest — what the adapters/atproto tests share: one result holder per
 * call (exactly one callback, its JSON copied), the test clock (the real
 * one plus an offset a test adds to, read by the client and the fake
 * alike), and waiting on the loop (until a call's answer, or for a while).
 * Include after <cmocka.h>.
 */
#ifndef GA_TESTS_INTEGRATION_ATPROTO_ATPTEST_H
#define GA_TESTS_INTEGRATION_ATPROTO_ATPTEST_H

#include <stdatomic.h>
#include <string.h>

#include "adapters/atproto/atproto.h"
#include "common/timeutil.h"
#include "tests/unit/llm/testloop.h"

static _Atomic int64_t clock_offset;

static inline int64_t test_clock(void *ud)
{
	(void)ud;
	return time_now_ms() + atomic_load(&clock_offset);
}

struct got {
	bool done;
	struct atp_result r;
	cJSON *json;
};

static inline void on_done(void *ud, const struct atp_result *r)
{
	struct got *g = ud;
	assert_false(g->done); /* exactly one callback per call */
	g->done = true;
	g->r = *r;
	g->r.json = NULL;
	g->json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

static inline void got_reset(struct got *g)
{
	cJSON_Delete(g->json);
	memset(g, 0, sizeof *g);
}

static inline void got_wait(uv_loop_t *loop, struct got *g)
{
	if (testloop_run_until(loop, &g->done) != 0)
		fail_msg("no answer within %d ms", TESTLOOP_GUARD_MS);
}

static inline void atptest_on_slice(uv_timer_t *t)
{
	*(bool *)t->data = true;
}

/* Runs loop for about ms (for what has no callback of its own: nothing may
 * happen while a limit holds; a reconcile the test polls the journal of).
 * The loop is stopped from testloop's prepare handle: a slice timer that
 * fires at the start of an iteration must not leave the loop asleep in
 * epoll until the next unrelated timer (the session's refresh, an hour
 * away). */
static inline void atptest_run_for(uv_loop_t *loop, unsigned ms)
{
	bool done = false;
	uv_timer_t t;
	uv_timer_init(loop, &t);
	t.data = &done;
	uv_timer_start(&t, atptest_on_slice, ms, 0);
	if (testloop_run_until(loop, &done) != 0)
		fail_msg("the loop did not run for %u ms", ms);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

#endif
