/*
 * support_loop — running a libuv loop in a test until a condition holds:
 * the in-process integration tests (space-client's link, coord's space
 * backend) drive the code under test on their own loop and wait for what
 * it does, never for a fixed time.
 *
 * A repeating wake-up timer of SUPPORT_LOOP_TICK_MS keeps uv_run(ONCE)
 * from blocking longer than that when nothing else happens, so the
 * condition and the deadline are checked at least that often. The timer is
 * closed (and its close run) before returning: the loop is left as found.
 */
#ifndef GA_TESTS_SUPPORT_SUPPORT_LOOP_H
#define GA_TESTS_SUPPORT_SUPPORT_LOOP_H

#include <stdbool.h>
#include <uv.h>

#define SUPPORT_LOOP_TICK_MS 10

/* The condition: ctx and arg as given to support_run_until. */
typedef bool (*support_cond_fn)(void *ctx, const void *arg);

/* Runs loop until cond(ctx, arg) holds (true) or timeout_ms passes
 * (false). cond NULL: runs the loop for timeout_ms and returns false. */
bool support_run_until(uv_loop_t *loop, support_cond_fn cond, void *ctx, const void *arg,
                       int timeout_ms);

#endif
