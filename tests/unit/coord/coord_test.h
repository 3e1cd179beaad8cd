/*
 * coord_test — what the coord tests share: a recorder for claim and count
 * answers, and a loop runner that polls a condition (never sleeps and
 * hopes). Header-only (static functions) so each test stays one file.
 */
#ifndef GA_TESTS_UNIT_COORD_COORD_TEST_H
#define GA_TESTS_UNIT_COORD_COORD_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "modules/coord/coord.h"

#define CT_WAIT_MS 10000

/* One answer slot: a request is "done" once its callback ran. */
struct ct_ans {
	int calls;
	enum coord_result r;
	char holder[256];
	bool has_holder;
	char why[600];
	int64_t count;
};

static inline void ct_claim_cb(void *ud, enum coord_result r, const char *holder, const char *why)
{
	struct ct_ans *a = ud;
	a->calls++;
	a->r = r;
	a->has_holder = holder != NULL;
	snprintf(a->holder, sizeof a->holder, "%s", holder ? holder : "");
	snprintf(a->why, sizeof a->why, "%s", why ? why : "(null)");
}

static inline void ct_count_cb(void *ud, int64_t count)
{
	struct ct_ans *a = ud;
	a->calls++;
	a->count = count;
}

static inline int64_t ct_now_ms(void)
{
	return (int64_t)(uv_hrtime() / 1000000u);
}

static inline void ct_wake(uv_timer_t *t)
{
	(void)t;
}

/* Runs the loop until *flag != 0 (flag NULL: for ms) or timeout_ms passes.
 * true when the flag became non-zero. */
static inline bool ct_run_until(uv_loop_t *loop, const int *flag, int timeout_ms)
{
	uv_timer_t wake;
	uv_timer_init(loop, &wake);
	uv_timer_start(&wake, ct_wake, 5, 5);
	int64_t end = ct_now_ms() + timeout_ms;
	while (!(flag && *flag) && ct_now_ms() < end)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&wake, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return flag && *flag;
}

/* Waits for a's answer; fails the calling test (returns false) if none. */
static inline bool ct_wait(uv_loop_t *loop, struct ct_ans *a)
{
	return ct_run_until(loop, &a->calls, CT_WAIT_MS);
}

static inline void ct_done_cb(void *ud)
{
	(*(int *)ud)++;
}

/* Closes c and waits for done (exactly once). */
static inline bool ct_close(uv_loop_t *loop, struct coord *c)
{
	int done = 0;
	coord_close(c, ct_done_cb, &done);
	if (!ct_run_until(loop, &done, CT_WAIT_MS))
		return false;
	uv_run(loop, UV_RUN_NOWAIT);
	return done == 1;
}

#endif
