/*
 * ratelimit — when may the next GitHub request start (pure policy, no I/O).
 *
 * Time enters as now_ms (epoch milliseconds, the client's injectable clock),
 * so tests drive it through a limit and past its reset. Nothing here sleeps.
 *
 * What it tracks:
 *   - buckets, one per GitHub rate-limit resource ("core", "search", ...,
 *     from x-ratelimit-resource): limit, remaining, reset. At most
 *     GH_RATE_BUCKETS_MAX; a further name shares the last slot's fate
 *     (recycled), never an unbounded table.
 *   - spacing: a minimum gap between request starts (spacing_ms), and a
 *     larger one between writes (write_spacing_ms; GitHub asks for at least
 *     one second between mutating requests to avoid secondary limits).
 *   - a hold: no request starts before hold_until_ms (a secondary limit:
 *     retry-after, or 60 s doubling on repeated hits, capped).
 *
 * A budget learnt only from responses must never stop requests for good
 * (with nothing sent, nothing would refresh it; github-commitments §1.2).
 * So:
 *   - a bucket whose reset time has passed is forgotten (unknown = full)
 *     the first time it is looked at, so requests ALWAYS resume after reset;
 *   - a reset further than GH_PRIMARY_WINDOW_MAX_MS away (a bogus header or
 *     a clock far behind GitHub's) is clamped when booked: the longest any
 *     primary limit can hold a request is about an hour;
 *   - a low budget (remaining < low_budget) paces instead of refusing: the
 *     remaining requests are spread over the time left until reset.
 */
#ifndef GA_ADAPTERS_GITHUB_RATELIMIT_H
#define GA_ADAPTERS_GITHUB_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GH_RATE_BUCKETS_MAX         4
#define GH_RATE_NAME_MAX            24
#define GH_DEFAULT_SPACING_MS       1000u
#define GH_DEFAULT_WRITE_SPACING_MS 5000u
#define GH_DEFAULT_LOW_BUDGET       100
#define GH_PRIMARY_WINDOW_MAX_MS    ((int64_t)3660 * 1000) /* an hour and a minute */
#define GH_SECONDARY_DEFAULT_MS     ((int64_t)60 * 1000)
#define GH_SECONDARY_MAX_MS         ((int64_t)15 * 60 * 1000)
#define GH_CLOCK_SKEW_FALLBACK_MS   ((int64_t)60 * 1000)

struct gh_bucket {
	char name[GH_RATE_NAME_MAX];
	int64_t limit;     /* -1 unknown */
	int64_t remaining; /* -1 unknown (treated as plenty) */
	int64_t reset_ms;  /* epoch ms; 0 unknown */
};

/* Why a request has to wait (for logs and error messages). */
enum gh_wait_reason {
	GH_WAIT_NONE = 0,
	GH_WAIT_SPACING,
	GH_WAIT_LOW_BUDGET,
	GH_WAIT_PRIMARY, /* bucket exhausted until its reset */
	GH_WAIT_HOLD,    /* secondary limit / retry-after */
};

struct gh_rate {
	unsigned spacing_ms;
	unsigned write_spacing_ms;
	int64_t low_budget;
	bool started; /* a request has started (spacing applies) */
	int64_t last_start_ms;
	bool wrote;
	int64_t last_write_ms;
	int64_t hold_until_ms;
	int strikes; /* consecutive secondary limits */
	struct gh_bucket buckets[GH_RATE_BUCKETS_MAX];
	size_t n_buckets;
};

void gh_rate_init(struct gh_rate *r, unsigned spacing_ms, unsigned write_spacing_ms,
                  int64_t low_budget);

/* Milliseconds until a request to `resource` ("core" when NULL) may start;
 * 0 = now. *why (may be NULL) says what holds it. Forgets a bucket whose
 * reset has passed and a hold that has expired. */
int64_t gh_rate_wait_ms(struct gh_rate *r, const char *resource, bool write, int64_t now_ms,
                        enum gh_wait_reason *why);

/* A request to `resource` starts now: books the spacing and takes one from
 * the bucket's remaining count until a response says otherwise. */
void gh_rate_started(struct gh_rate *r, const char *resource, bool write, int64_t now_ms);

/* Books x-ratelimit-* header values from a response (each may be NULL;
 * values that do not parse are ignored). resource is the
 * x-ratelimit-resource value, or the request's bucket when absent. */
void gh_rate_observe(struct gh_rate *r, const char *resource, const char *limit,
                     const char *remaining, const char *reset, int64_t now_ms);

/* A response said a rate limit was hit. primary: the bucket is exhausted
 * (remaining 0): requests to it wait for its reset (or
 * GH_CLOCK_SKEW_FALLBACK_MS when that reset is not in the future by our
 * clock). Otherwise a secondary limit: every request waits retry_after_ms
 * when given (>= 0), else 60 s doubling with each consecutive hit, at most
 * GH_SECONDARY_MAX_MS. Returns the wait booked, in ms. */
int64_t gh_rate_limited(struct gh_rate *r, const char *resource, bool primary,
                        int64_t retry_after_ms, int64_t now_ms);

/* A request succeeded: consecutive secondary hits start over. */
void gh_rate_success(struct gh_rate *r);

/* Copy of the bucket (after forgetting it if its reset passed). Returns 0,
 * or -1 when nothing is known about it. */
int gh_rate_bucket(struct gh_rate *r, const char *resource, int64_t now_ms, struct gh_bucket *out);

const char *gh_wait_reason_name(enum gh_wait_reason w);

#endif
