/*
 * atproto ratelimit — when may the next XRPC request start (pure policy, no
 * I/O). Spec runtime-bluesky §5.4, §11.6.
 *
 * Time enters as now_ms (epoch ms, the client's injectable clock), so tests
 * drive it through a limit and past its reset. Nothing here sleeps.
 *
 * What it tracks:
 *   - budgets, one per request class (reads, writes, session calls): the
 *     ratelimit-limit / -remaining / -reset / -policy headers of the last
 *     answer to a request of that class. Bluesky's budgets are separate
 *     (3000 reads / 5 min per IP; write points per account; createSession
 *     30 / 5 min and 300 / day per handle), so each class has its own: a
 *     spent write budget does not stop reads, and reads do not spend the
 *     write estimate.
 *   - spacing: a minimum gap between request starts (ATP_DEFAULT_SPACING_MS,
 *     5 s); one request is in flight at a time, so the spacing is
 *     serialized: callers never compute the same sleep and fire together.
 *   - low-budget pacing: remaining < low_budget spreads what is left over
 *     the time until reset instead of refusing.
 *   - a hold per class: a 429 (or a 403 with remaining 0) holds that class
 *     until ratelimit-reset, else retry-after, else ATP_RATE_HOLD_DEFAULT_MS.
 *   - a write-points estimate (create 3, update 2, delete 1) against
 *     5000 points / hour and 35000 / day, fixed windows from the first
 *     write; a write that would exceed waits for the window's end.
 *
 * Requests ALWAYS resume after a reset: a budget whose reset has passed is
 * forgotten (unknown = full) the first time it is looked at — `remaining`
 * is learnt only from answers, so a client that stopped sending while it
 * was low would never learn it again; a reset further away than
 * ATP_RATE_RESET_MAX_MS (a bogus header or a skewed clock) is clamped when
 * booked.
 */
#ifndef GA_ADAPTERS_ATPROTO_RATELIMIT_H
#define GA_ADAPTERS_ATPROTO_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "adapters/http/callq.h"

#define ATP_DEFAULT_SPACING_MS   5000u
#define ATP_DEFAULT_LOW_BUDGET   20
#define ATP_RATE_HOLD_DEFAULT_MS ((int64_t)60 * 1000)
/* createSession's daily budget resets within a day; nothing holds longer. */
#define ATP_RATE_RESET_MAX_MS   ((int64_t)24 * 3600 * 1000 + 60 * 1000)
#define ATP_WRITE_POINTS_HOUR   5000
#define ATP_WRITE_POINTS_DAY    35000
#define ATP_WRITE_POINTS_CREATE 3
#define ATP_WRITE_POINTS_UPDATE 2
#define ATP_WRITE_POINTS_DELETE 1
#define ATP_RATE_POLICY_MAX     48

enum atp_rate_class {
	ATP_RL_READ = 0, /* queries (GET) */
	ATP_RL_WRITE,    /* procedures other than the session's */
	ATP_RL_SESSION,  /* createSession / refreshSession */
	ATP_RL_COUNT,
};

struct atp_budget {
	bool known;
	int64_t limit;                    /* -1 unknown */
	int64_t remaining;                /* -1 unknown (treated as plenty) */
	int64_t reset_ms;                 /* epoch ms; 0 unknown */
	char policy[ATP_RATE_POLICY_MAX]; /* ratelimit-policy as sent, "" none */
};

/* The call queue's wait reasons (adapters/http/callq.h), as Bluesky has
 * them: the same values. */
enum atp_wait_reason {
	ATP_WAIT_NONE = CALLQ_WAIT_NONE,
	ATP_WAIT_SPACING = CALLQ_WAIT_SPACING,
	ATP_WAIT_LOW_BUDGET = CALLQ_WAIT_LOW_BUDGET, /* pacing: remaining < low_budget */
	ATP_WAIT_EXHAUSTED = CALLQ_WAIT_EXHAUSTED,   /* remaining 0 until reset */
	ATP_WAIT_HOLD = CALLQ_WAIT_HOLD,             /* 429 / retry-after */
	ATP_WAIT_POINTS =
	        CALLQ_WAIT_POINTS, /* the write-points estimate is spent for this window */
};

struct atp_rate {
	unsigned spacing_ms;
	int64_t low_budget;
	bool started;
	int64_t last_start_ms;
	int64_t hold_until_ms[ATP_RL_COUNT];
	struct atp_budget budget[ATP_RL_COUNT];
	int64_t hour_start_ms, day_start_ms; /* 0 = no write yet */
	int64_t hour_points, day_points;
};

void atp_rate_init(struct atp_rate *r, unsigned spacing_ms, int64_t low_budget);

/* Milliseconds until a request of class cls costing points (0 for reads)
 * may start; 0 = now. *why (may be NULL) says what holds it. Forgets a
 * budget whose reset has passed and a hold that has expired. */
int64_t atp_rate_wait_ms(struct atp_rate *r, enum atp_rate_class cls, int points, int64_t now_ms,
                         enum atp_wait_reason *why);

/* A request starts now: books the spacing, takes one from the class's
 * remaining count and the points from the write estimate. */
void atp_rate_started(struct atp_rate *r, enum atp_rate_class cls, int points, int64_t now_ms);

/* Books the ratelimit-* headers of an answer (each may be NULL; values that
 * do not parse are ignored). reset is epoch seconds (Bluesky's form). */
void atp_rate_observe(struct atp_rate *r, enum atp_rate_class cls, const char *limit,
                      const char *remaining, const char *reset, const char *policy, int64_t now_ms);

/* An answer was a rate limit (429, or 403 with remaining 0). Holds the
 * class until reset_ms when it is in the future (clamped), else for
 * retry_after_ms when >= 0, else ATP_RATE_HOLD_DEFAULT_MS. Returns the
 * wait booked, in ms. */
int64_t atp_rate_limited(struct atp_rate *r, enum atp_rate_class cls, int64_t reset_ms,
                         int64_t retry_after_ms, int64_t now_ms);

/* Copy of the class's budget (after forgetting it if its reset passed).
 * 0, or -1 when nothing is known. */
int atp_rate_budget(struct atp_rate *r, enum atp_rate_class cls, int64_t now_ms,
                    struct atp_budget *out);

const char *atp_wait_reason_name(enum atp_wait_reason w);
const char *atp_rate_class_name(enum atp_rate_class c);

#endif
