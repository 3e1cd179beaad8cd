/*
 * coord_impl — what the backends of modules/coord share (private to the
 * module): the base struct every backend embeds first, the queue that
 * defers immediate answers to the next loop iteration, the pending-request
 * bound, and the handle bookkeeping that tells coord_close when the last
 * handle is closed.
 *
 * Rules: a backend answers through coord_answer_claim / coord_answer_count
 * from loop callbacks, and through coord_defer_claim / coord_defer_count
 * from inside a public call. Every accepted request was counted with
 * coord_pending_take() and is uncounted by its answer. Every handle a
 * backend initialises is registered with coord_handle_open() and closed
 * with coord_handle_close().
 */
#ifndef GA_MODULES_COORD_COORD_IMPL_H
#define GA_MODULES_COORD_COORD_IMPL_H

#include <stdbool.h>

#include "modules/coord/coord.h"

#define COORD_LOG "coord"

struct coord_deferred;

struct coord_ops {
	const char *name;
	int (*claim)(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb, void *ud);
	int (*renew)(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb, void *ud);
	/* How the claimed work ended comes along (link/error already cut to
	 * COORD_RESULT_TEXT_MAX, may be NULL); a backend with nowhere to put
	 * it ignores it. */
	int (*release)(struct coord *c, const char *key, bool success, const char *link,
	               const char *error);
	int (*count)(struct coord *c, const char *key, int64_t window_ms, coord_count_fn cb,
	             void *ud);
	void (*describe)(const struct coord *c, char *buf, size_t cap);
	/* Answer everything in flight ("shutting down"), close the backend's
	 * handles with coord_handle_close, free what does not wait for a close
	 * callback. The struct itself is freed by coord.c (ops->destroy). */
	void (*shutdown)(struct coord *c);
	void (*destroy)(struct coord *c); /* frees the backend's part; may be NULL */
};

struct coord {
	const struct coord_ops *ops;
	uv_loop_t *loop;
	char *agent_id;
	uv_timer_t defer_timer;
	struct coord_deferred *dhead, *dtail;
	size_t npending; /* accepted requests not yet answered */
	int nhandles;    /* open or closing handles */
	bool closing;
	void (*done)(void *ud);
	void *done_ud;
};

/* Initialises the base (agent_id copied, the defer timer). */
void coord_base_init(struct coord *c, const struct coord_ops *ops, uv_loop_t *loop,
                     const char *agent_id);
/* false when COORD_MAX_PENDING are waiting (the call then returns -1). */
bool coord_pending_take(struct coord *c);

void coord_defer_claim(struct coord *c, coord_claim_fn cb, void *ud, enum coord_result r,
                       const char *holder, const char *why);
void coord_defer_count(struct coord *c, coord_count_fn cb, void *ud, int64_t count);
/* Immediate delivery (from loop callbacks); when closing, the answer
 * becomes UNAVAILABLE "shutting down" / -1. */
void coord_answer_claim(struct coord *c, coord_claim_fn cb, void *ud, enum coord_result r,
                        const char *holder, const char *why);
void coord_answer_count(struct coord *c, coord_count_fn cb, void *ud, int64_t count);

void coord_handle_open(struct coord *c, uv_handle_t *h);
void coord_handle_close(struct coord *c, uv_handle_t *h);
void coord_handle_closed(struct coord *c); /* for handles closed by others (hiredis) */

/* Monotonic milliseconds. */
int64_t coord_now_ms(void);

/* The in-process tables of the local backend, also the space backend's
 * counters. */
struct coord_table;
struct coord_table *coord_table_new(size_t max);
void coord_table_free(struct coord_table *t);
/* 1 won, 0 held (*holder set, borrowed), -1 table full. */
int coord_table_claim(struct coord_table *t, const char *key, const char *owner, int64_t ttl_ms,
                      int64_t now, const char **holder);
/* 1 renewed, 0 not ours (*holder = the live holder or NULL). */
int coord_table_renew(struct coord_table *t, const char *key, const char *owner, int64_t ttl_ms,
                      int64_t now, const char **holder);
/* 1 deleted, 0 not ours. */
int coord_table_release(struct coord_table *t, const char *key, const char *owner, int64_t now);
/* The new count, or -1 when the table is full. */
int64_t coord_table_count(struct coord_table *t, const char *key, int64_t window_ms, int64_t now);
size_t coord_table_live(const struct coord_table *t, int64_t now);

#endif
