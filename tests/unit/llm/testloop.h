/*
 * testloop — run a uv loop until a condition holds, with a generous guard
 * (never a sleep-and-hope): the guard only fires when something is broken.
 *
 * The flag is checked from a prepare handle, which runs before the loop
 * decides how long to block: a flag set by a timer callback (a transfer
 * that completes inside curl's timer) stops the loop at once instead of
 * leaving it asleep in epoll until the next unrelated timer.
 */
#ifndef GA_TESTS_UNIT_LLM_TESTLOOP_H
#define GA_TESTS_UNIT_LLM_TESTLOOP_H

#include <stdbool.h>
#include <uv.h>

#define TESTLOOP_GUARD_MS 10000

struct testloop_wait {
	const bool *flag;
	bool expired;
};

static void testloop_guard_cb(uv_timer_t *t)
{
	((struct testloop_wait *)t->data)->expired = true;
}

static void testloop_prepare_cb(uv_prepare_t *p)
{
	struct testloop_wait *w = p->data;
	if (*w->flag)
		uv_stop(p->loop);
}

/* Runs loop until *flag is true or 10 s passed. Returns 0 when the flag
 * was set. */
static inline int testloop_run_until(uv_loop_t *loop, const bool *flag)
{
	struct testloop_wait w = {.flag = flag};
	uv_timer_t guard;
	uv_prepare_t prep;
	uv_timer_init(loop, &guard);
	guard.data = &w;
	uv_timer_start(&guard, testloop_guard_cb, TESTLOOP_GUARD_MS, 0);
	uv_prepare_init(loop, &prep);
	prep.data = &w;
	uv_prepare_start(&prep, testloop_prepare_cb);
	while (!*flag && !w.expired)
		uv_run(loop, UV_RUN_ONCE);
	uv_timer_stop(&guard);
	uv_prepare_stop(&prep);
	uv_close((uv_handle_t *)&guard, NULL);
	uv_close((uv_handle_t *)&prep, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return *flag ? 0 : -1;
}

/* Runs the loop until no handle is left (after closing everything). */
static inline void testloop_drain(uv_loop_t *loop)
{
	uv_run(loop, UV_RUN_DEFAULT);
}

#endif
