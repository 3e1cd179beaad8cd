/*
 * callq — the call queue an API client runs on the HTTP adapter: calls
 * wait in a FIFO queue, one is in flight at a time, a policy (the client's
 * rate limiter) says when each may start, one uv timer wakes the pump at
 * the earliest moment anything may start, transient failures are retried
 * with exponential backoff, and every wait has a reason. The AT Protocol
 * and GitHub clients run on it; each keeps its protocol's policy (session
 * steps, rate budgets and headers, ETags, pagination) in its own files.
 *
 * Use: embed a struct callq_call in the client's call, fill its what (and
 * lane, unsafe), callq_push it. The pump then asks, for each queued call in
 * order:
 *   1. ops.admit (may be NULL): go on, pass the call over for now (it waits
 *      for something that will kick the pump, such as a session step), or
 *      scan again (the hook ended the call or queued a step at the head);
 *   2. its backoff (after a transient failure), else ops.wait_ms: how long
 *      until it may start and why (enum callq_wait);
 *   3. a call that may start now is sent (ops.send builds the request and
 *      hands it to callq_start); one that may not blocks its lane: calls of
 *      one lane keep their order, a later call of another lane may go
 *      ahead (a spent search budget does not stop comments).
 * The answer goes to ops.answered, which books rate headers, classifies
 * and ends the call through the client's own result (or hands it back with
 * callq_retry, callq_rate_hit, callq_push_front). Every path that ends a
 * call without an answer (closing, not sent, waited too long, gave up)
 * calls ops.end, which frees the call.
 *
 * Wait reasons: CALLQ_WAIT_EXHAUSTED, _HOLD and _POINTS are limits that may
 * last: a call that would wait for one longer than max_wait_ms (counted
 * from when it was queued) is ended CALLQ_END_RATE_LIMITED, never sent.
 * Spacing, low-budget pacing and backoff are waits that always end soon.
 * A limit a call starts waiting for is logged once (at wait_log_level),
 * not on every recheck; spacing and backoff are not logged.
 *
 * Time: ops.now_ms (epoch ms, the client's injectable clock). The timer
 * slices waits to at most recheck_ms, so a clock that jumps (a test's, a
 * suspended laptop's) is noticed.
 *
 * Bounds: at most max_calls calls queued plus in flight; callq_push past
 * that is refused with an error naming the call (never a silent drop).
 * callq_push_front is not bounded: it takes back a call that was already
 * counted, or a client's own step (at most one at a time). At most
 * max_lanes lanes are told apart in one scan; calls past that wait for the
 * next scan.
 *
 * Memory: callq never allocates or frees a call; ops.end and the client's
 * answer path free it. what and lane are borrowed from the call for its
 * lifetime. callq_free ends every call (CALLQ_END_CANCELLED), closes the
 * timer (run the loop afterwards, as with any uv handle) and frees the
 * queue. Callbacks never run inside callq_push; they may push or cancel
 * calls but must not free the queue.
 */
#ifndef GA_ADAPTERS_HTTP_CALLQ_H
#define GA_ADAPTERS_HTTP_CALLQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/http/http.h"
#include "common/err.h"
#include "common/log.h"

#define CALLQ_LANES_MAX 8

/* Why a call waits. */
enum callq_wait {
	CALLQ_WAIT_NONE = 0,
	CALLQ_WAIT_SPACING,    /* a minimum gap between request starts */
	CALLQ_WAIT_LOW_BUDGET, /* pacing: few requests left before a reset */
	CALLQ_WAIT_EXHAUSTED,  /* a rate budget is spent until its reset */
	CALLQ_WAIT_HOLD,       /* the server said wait (429, retry-after) */
	CALLQ_WAIT_POINTS,     /* a cost estimate is spent for its window */
	CALLQ_WAIT_BACKOFF,    /* a retry after a transient failure */
};

/* Why callq ended a call. */
enum callq_end {
	CALLQ_END_CANCELLED,    /* callq_free, or the HTTP client is closing */
	CALLQ_END_TRANSIENT,    /* could not be sent, or retried until it gave up */
	CALLQ_END_RATE_LIMITED, /* a limit would hold it longer than max_wait_ms */
};

/* What ops.admit says of a call. */
enum callq_admit {
	CALLQ_ADMIT_GO,     /* ask its backoff and the rate policy */
	CALLQ_ADMIT_PASS,   /* pass it over; the client kicks the pump when it may go */
	CALLQ_ADMIT_RESCAN, /* the queue changed under the scan: start again */
};

struct callq;

/* Embedded in the client's call. The client sets what, lane and unsafe
 * before callq_push; the rest is callq's (the client reads it). */
struct callq_call {
	struct callq_call *prev, *next; /* queue links while queued */
	struct callq *q;
	uint64_t id;                 /* > 0, given by callq_push / callq_push_front */
	const char *what;            /* "create a post": in every message */
	const char *lane;            /* calls of one lane keep their order; NULL = "" */
	bool unsafe;                 /* a write that must not run twice: not repeated once it may
	                                have reached the server */
	int attempts;                /* HTTP requests made */
	int transient_fails;         /* consecutive, for the backoff */
	int rate_hits;               /* rate-limited answers */
	int status;                  /* HTTP status of the last answer, 0 none */
	enum callq_wait logged_wait; /* the last wait reason */
	int64_t enqueued_ms;         /* ops.now_ms when queued */
	int64_t not_before_ms;       /* backoff */
	uint64_t http_id;            /* while in flight */
};

struct callq_ops {
	int64_t (*now_ms)(void *ud);
	enum callq_admit (*admit)(void *ud, struct callq_call *k, int64_t now_ms); /* may be NULL */
	/* Milliseconds until k may start (0 = now), *why what holds it. */
	int64_t (*wait_ms)(void *ud, struct callq_call *k, int64_t now_ms, enum callq_wait *why);
	/* Builds k's request and starts it with callq_start: 0, or -1 with err. */
	int (*send)(void *ud, struct callq_call *k, int64_t now_ms, struct ga_err *err);
	/* An answer (any status) or a transport error other than the HTTP
	 * client closing. k is no longer in flight; the pump runs after. */
	void (*answered)(void *ud, struct callq_call *k, const struct http_response *hr,
	                 int64_t now_ms);
	/* Ends k (the client's callback with its own error kind), frees it. */
	void (*end)(void *ud, struct callq_call *k, enum callq_end why, const char *msg,
	            bool maybe_applied);
	/* The protocol's name of a wait reason, for messages ("primary rate
	 * limit"). */
	const char *(*wait_name)(enum callq_wait w);
};

struct callq_config {
	const char *service;           /* "GitHub": "GitHub's ... holds the attempt to ..." */
	const char *log_comp;          /* the log component */
	enum log_level wait_log_level; /* level of "<service> request waits" */
	size_t max_calls;              /* queued plus in flight */
	size_t max_lanes;              /* 0 or more than CALLQ_LANES_MAX = CALLQ_LANES_MAX */
	int max_retries;               /* transient failures retried this many times */
	unsigned backoff_base_ms;
	unsigned backoff_cap_ms;
	int max_rate_retries; /* rate-limited answers to one call before giving up */
	uint64_t max_wait_ms; /* longest a call waits for a limit */
	unsigned recheck_ms;  /* longest timer slice while waiting */
};

struct callq_counts {
	uint64_t calls;        /* accepted by callq_push */
	uint64_t requests;     /* HTTP requests started */
	uint64_t retries;      /* transient retries */
	uint64_t rate_limited; /* rate-limited answers (callq_rate_hit) */
};

/* The queue on http's loop; cfg is copied (service and log_comp are
 * borrowed: string literals). Never NULL. */
struct callq *callq_new(struct http_client *http, const struct callq_ops *ops, void *ud,
                        const struct callq_config *cfg);
/* Ends every call CALLQ_END_CANCELLED (the one in flight with
 * maybe_applied when it is unsafe), then frees. NULL accepted. */
void callq_free(struct callq *q);

/* Queues k at the back and kicks the pump. Returns its id, or 0 with err:
 * the queue is closing, or full (max_calls). */
uint64_t callq_push(struct callq *q, struct callq_call *k, struct ga_err *err);
/* Puts k at the head: a call answered that goes on (next page, rate
 * limit, a refused token refreshed) or a step of the client's that must go
 * before everything. Gives an id and a queueing time to a new one. */
void callq_push_front(struct callq *q, struct callq_call *k);
/* Starts the pump soon (on the loop, never inside the caller), unless a
 * call is in flight (its answer pumps). */
void callq_kick(struct callq *q);

/* For ops.send: starts k's request. 0, or -1 with err (from http_request). */
int callq_start(struct callq *q, struct callq_call *k, const struct http_request *req,
                struct ga_err *err);

/* After a transient failure: retried after a backoff (retry_after_ms,
 * when > 0, as the least wait) when retryable and max_retries allows,
 * else ended CALLQ_END_TRANSIENT with msg and why it was not repeated. */
void callq_retry(struct callq *q, struct callq_call *k, const char *msg, bool retryable,
                 bool maybe_applied, int64_t retry_after_ms);
/* A transport error (no answer) from hr: "<service> did not answer the
 * attempt to ...", retried unless k is unsafe and may have reached the
 * server (anything but a refused connection). */
void callq_unanswered(struct callq *q, struct callq_call *k, const struct http_response *hr);
/* A rate-limited answer (the client booked the limit): counts it and puts
 * k back at the head. Returns false, and full (cap bytes) says msg and
 * that it gave up, once max_rate_retries answers were rate limits: the
 * client then ends k itself. */
bool callq_rate_hit(struct callq *q, struct callq_call *k, const char *msg, char *full, size_t cap);

/* The queued or in-flight call with that id, or NULL. */
struct callq_call *callq_find(const struct callq *q, uint64_t id);
/* Takes k out, queued or in flight (its request is cancelled); no
 * callback. The caller frees it. */
void callq_remove(struct callq *q, struct callq_call *k);
/* The first queued call (then k->next), NULL when none. */
struct callq_call *callq_head(const struct callq *q);

/* An id no call of this queue has or will have (for the client's own
 * handles, e.g. a composite operation). */
uint64_t callq_new_id(struct callq *q);
bool callq_closing(const struct callq *q);
/* Calls queued plus in flight. */
size_t callq_pending(const struct callq *q);
void callq_counts(const struct callq *q, struct callq_counts *out);

/* The wait before retry number retry (1 = the first): base_ms doubled per
 * retry up to cap_ms, plus up to 30 % of it by jitter_frac (0..1, the
 * caller's randomness); retry_after_ms (when > 0) as the least wait; never
 * above cap_ms. */
uint64_t callq_backoff_ms(unsigned base_ms, unsigned cap_ms, int retry, double jitter_frac,
                          int64_t retry_after_ms);

/* Does w count toward max_wait_ms (a limit that may last)? */
bool callq_wait_is_limit(enum callq_wait w);

#endif
