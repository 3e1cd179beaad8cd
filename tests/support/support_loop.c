/*
 * support_loop — see support_loop.h.
 */
#include "support_loop.h"

#include "support_wait.h"

static void on_wake(uv_timer_t *t)
{
	(void)t;
}

bool support_run_until(uv_loop_t *loop, support_cond_fn cond, void *ctx, const void *arg,
                       int timeout_ms)
{
	uv_timer_t wake;
	uv_timer_init(loop, &wake);
	uv_timer_start(&wake, on_wake, SUPPORT_LOOP_TICK_MS, SUPPORT_LOOP_TICK_MS);
	int64_t end = support_now_ms() + timeout_ms;
	bool ok = false;
	for (;;) {
		if (cond && cond(ctx, arg)) {
			ok = true;
			break;
		}
		if (support_now_ms() > end)
			break;
		uv_run(loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&wake, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return ok;
}
