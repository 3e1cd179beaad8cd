/*
 * ratelimit — see ratelimit.h. Pure: every decision takes now_ms.
 */
#include "adapters/github/ratelimit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gh_rate_init(struct gh_rate *r, unsigned spacing_ms, unsigned write_spacing_ms,
                  int64_t low_budget)
{
	memset(r, 0, sizeof *r);
	r->spacing_ms = spacing_ms;
	r->write_spacing_ms = write_spacing_ms;
	r->low_budget = low_budget;
}

static const char *bucket_name(const char *resource)
{
	return resource && *resource ? resource : "core";
}

static struct gh_bucket *find(struct gh_rate *r, const char *resource)
{
	const char *name = bucket_name(resource);
	for (size_t i = 0; i < r->n_buckets; i++)
		if (strcmp(r->buckets[i].name, name) == 0)
			return &r->buckets[i];
	return NULL;
}

/* Finds or makes the bucket; when the table is full the last slot is
 * recycled (the four GitHub resources we use fit; this is only the bound). */
static struct gh_bucket *get(struct gh_rate *r, const char *resource)
{
	struct gh_bucket *b = find(r, resource);
	if (b)
		return b;
	if (r->n_buckets < GH_RATE_BUCKETS_MAX)
		b = &r->buckets[r->n_buckets++];
	else
		b = &r->buckets[GH_RATE_BUCKETS_MAX - 1];
	snprintf(b->name, sizeof b->name, "%s", bucket_name(resource));
	b->limit = b->remaining = -1;
	b->reset_ms = 0;
	return b;
}

/* Never a permanent lockout: once the reset moment has passed, what we knew about the window is
 * stale, whatever it said. */
static void expire(struct gh_bucket *b, int64_t now_ms)
{
	if (b->reset_ms > 0 && now_ms >= b->reset_ms) {
		b->remaining = -1;
		b->reset_ms = 0;
	}
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

int64_t gh_rate_wait_ms(struct gh_rate *r, const char *resource, bool write, int64_t now_ms,
                        enum gh_wait_reason *why)
{
	int64_t wait = 0;
	enum gh_wait_reason w = GH_WAIT_NONE;
	if (r->hold_until_ms > now_ms) {
		wait = r->hold_until_ms - now_ms;
		w = GH_WAIT_HOLD;
	} else {
		r->hold_until_ms = 0;
	}
	struct gh_bucket *b = find(r, resource);
	if (b)
		expire(b, now_ms);
	if (b && b->remaining == 0 && b->reset_ms > now_ms) {
		if (b->reset_ms - now_ms > wait) {
			wait = b->reset_ms - now_ms;
			w = GH_WAIT_PRIMARY;
		}
	} else if (b && b->remaining > 0 && b->remaining < r->low_budget && b->reset_ms > now_ms &&
	           r->started) {
		/* Spread what is left over the time left: never refuse, never
		 * spend the last requests in a burst. */
		int64_t gap = (b->reset_ms - now_ms) / (b->remaining + 1);
		int64_t pace = r->last_start_ms + gap - now_ms;
		if (pace > wait) {
			wait = pace;
			w = GH_WAIT_LOW_BUDGET;
		}
	}
	if (r->started) {
		int64_t s = r->last_start_ms + (int64_t)r->spacing_ms - now_ms;
		if (s > wait) {
			wait = s;
			w = GH_WAIT_SPACING;
		}
	}
	if (write && r->wrote) {
		int64_t s = r->last_write_ms + (int64_t)r->write_spacing_ms - now_ms;
		if (s > wait) {
			wait = s;
			w = GH_WAIT_SPACING;
		}
	}
	if (why)
		*why = wait > 0 ? w : GH_WAIT_NONE;
	return max64(wait, 0);
}

void gh_rate_started(struct gh_rate *r, const char *resource, bool write, int64_t now_ms)
{
	r->started = true;
	r->last_start_ms = now_ms;
	if (write) {
		r->wrote = true;
		r->last_write_ms = now_ms;
	}
	struct gh_bucket *b = find(r, resource);
	if (b) {
		expire(b, now_ms);
		if (b->remaining > 0)
			b->remaining--;
	}
}

static int parse_i64(const char *s, int64_t *out)
{
	if (!s)
		return -1;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	char *end;
	long long v = strtoll(s, &end, 10);
	while (*end == ' ' || *end == '\t')
		end++;
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

void gh_rate_observe(struct gh_rate *r, const char *resource, const char *limit,
                     const char *remaining, const char *reset, int64_t now_ms)
{
	int64_t lim, rem, rst;
	bool has_lim = parse_i64(limit, &lim) == 0;
	bool has_rem = parse_i64(remaining, &rem) == 0;
	bool has_rst = parse_i64(reset, &rst) == 0 && rst < INT64_MAX / 1000;
	if (!has_lim && !has_rem && !has_rst)
		return;
	struct gh_bucket *b = get(r, resource);
	if (has_lim)
		b->limit = lim;
	if (has_rem)
		b->remaining = rem;
	if (has_rst) {
		int64_t ms = rst * 1000;
		/* Clamp when booked (not when read): re-clamping on every look
		 * would push a bogus reset forward forever. */
		if (ms > now_ms + GH_PRIMARY_WINDOW_MAX_MS)
			ms = now_ms + GH_PRIMARY_WINDOW_MAX_MS;
		b->reset_ms = ms;
	}
	expire(b, now_ms);
}

int64_t gh_rate_limited(struct gh_rate *r, const char *resource, bool primary,
                        int64_t retry_after_ms, int64_t now_ms)
{
	if (primary) {
		struct gh_bucket *b = get(r, resource);
		b->remaining = 0;
		if (b->reset_ms <= now_ms)
			b->reset_ms = now_ms + GH_CLOCK_SKEW_FALLBACK_MS;
		if (retry_after_ms > 0 && now_ms + retry_after_ms > b->reset_ms)
			b->reset_ms = now_ms + (retry_after_ms < GH_PRIMARY_WINDOW_MAX_MS
			                                ? retry_after_ms
			                                : GH_PRIMARY_WINDOW_MAX_MS);
		return b->reset_ms - now_ms;
	}
	int64_t wait;
	if (retry_after_ms >= 0) {
		wait = retry_after_ms < GH_PRIMARY_WINDOW_MAX_MS ? retry_after_ms
		                                                 : GH_PRIMARY_WINDOW_MAX_MS;
	} else {
		wait = GH_SECONDARY_DEFAULT_MS;
		for (int i = 0; i < r->strikes && wait < GH_SECONDARY_MAX_MS; i++)
			wait *= 2;
		if (wait > GH_SECONDARY_MAX_MS)
			wait = GH_SECONDARY_MAX_MS;
	}
	r->strikes++;
	if (now_ms + wait > r->hold_until_ms)
		r->hold_until_ms = now_ms + wait;
	return wait;
}

void gh_rate_success(struct gh_rate *r)
{
	r->strikes = 0;
}

int gh_rate_bucket(struct gh_rate *r, const char *resource, int64_t now_ms, struct gh_bucket *out)
{
	struct gh_bucket *b = find(r, resource);
	if (!b)
		return -1;
	expire(b, now_ms);
	*out = *b;
	return 0;
}

const char *gh_wait_reason_name(enum gh_wait_reason w)
{
	switch (w) {
	case GH_WAIT_NONE:
		return "none";
	case GH_WAIT_SPACING:
		return "spacing";
	case GH_WAIT_LOW_BUDGET:
		return "low budget";
	case GH_WAIT_PRIMARY:
		return "primary rate limit";
	case GH_WAIT_HOLD:
		return "secondary rate limit";
	}
	return "?";
}
