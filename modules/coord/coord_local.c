/*
 * modules/coord/coord_local.c — the in-process backend (one agent): two
 * bounded tables, claims and counters (coord_impl.h), answers deferred to
 * the next loop iteration.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/xalloc.h"
#include "modules/coord/coord_impl.h"

struct coord_local {
	struct coord base;
	struct coord_table *claims, *counts;
};

static int local_claim(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb,
                       void *ud)
{
	struct coord_local *l = (struct coord_local *)c;
	if (!coord_pending_take(c))
		return -1;
	const char *holder = NULL;
	char why[160];
	switch (coord_table_claim(l->claims, key, c->agent_id, ttl_ms, coord_now_ms(), &holder)) {
	case 1:
		coord_defer_claim(c, cb, ud, COORD_WON, NULL, "local: the key was free");
		break;
	case 0:
		err_fmt(why, sizeof why, "local: already claimed by %s", holder);
		coord_defer_claim(c, cb, ud, COORD_HELD, holder, why);
		break;
	default:
		err_fmt(why, sizeof why, "local: table full (%d live keys)", COORD_LOCAL_MAX_KEYS);
		coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL, why);
		break;
	}
	return 0;
}

static int local_renew(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb,
                       void *ud)
{
	struct coord_local *l = (struct coord_local *)c;
	if (!coord_pending_take(c))
		return -1;
	const char *holder = NULL;
	if (coord_table_renew(l->claims, key, c->agent_id, ttl_ms, coord_now_ms(), &holder))
		coord_defer_claim(c, cb, ud, COORD_WON, NULL, "local: renewed");
	else if (holder)
		coord_defer_claim(c, cb, ud, COORD_HELD, holder, "local: held by another owner");
	else
		coord_defer_claim(c, cb, ud, COORD_HELD, NULL,
		                  "local: no live claim to renew (expired or released)");
	return 0;
}

static int local_release(struct coord *c, const char *key, bool success, const char *link,
                         const char *error)
{
	(void)success, (void)link, (void)error; /* a local claim has no audience */
	struct coord_local *l = (struct coord_local *)c;
	coord_table_release(l->claims, key, c->agent_id, coord_now_ms());
	return 0;
}

static int local_count(struct coord *c, const char *key, int64_t window_ms, coord_count_fn cb,
                       void *ud)
{
	struct coord_local *l = (struct coord_local *)c;
	if (!coord_pending_take(c))
		return -1;
	coord_defer_count(c, cb, ud, coord_table_count(l->counts, key, window_ms, coord_now_ms()));
	return 0;
}

static void local_describe(const struct coord *c, char *buf, size_t cap)
{
	const struct coord_local *l = (const struct coord_local *)c;
	int64_t now = coord_now_ms();
	err_fmt(buf, cap, "local (in process: %zu claims, %zu counters of %d)",
	        coord_table_live(l->claims, now), coord_table_live(l->counts, now),
	        COORD_LOCAL_MAX_KEYS);
}

static void local_shutdown(struct coord *c)
{
	(void)c; /* every answer went through the deferred queue */
}

static void local_destroy(struct coord *c)
{
	struct coord_local *l = (struct coord_local *)c;
	coord_table_free(l->claims);
	coord_table_free(l->counts);
}

static const struct coord_ops local_ops = {
        .name = "local",
        .claim = local_claim,
        .renew = local_renew,
        .release = local_release,
        .count = local_count,
        .describe = local_describe,
        .shutdown = local_shutdown,
        .destroy = local_destroy,
};

struct coord *coord_new_local(uv_loop_t *loop, const char *agent_id)
{
	if (!loop || !agent_id || !*agent_id)
		return NULL;
	struct coord_local *l = xcalloc(1, sizeof *l);
	coord_base_init(&l->base, &local_ops, loop, agent_id);
	l->claims = coord_table_new(COORD_LOCAL_MAX_KEYS);
	l->counts = coord_table_new(COORD_LOCAL_MAX_KEYS);
	return &l->base;
}
