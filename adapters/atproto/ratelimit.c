/*
 * atproto ratelimit — see ratelimit.h. Pure: every decision takes now_ms.
 */
#include "adapters/atproto/ratelimit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_MS ((int64_t)3600 * 1000)
#define DAY_MS  ((int64_t)24 * 3600 * 1000)

void atp_rate_init(struct atp_rate *r, unsigned spacing_ms, int64_t low_budget)
{
	memset(r, 0, sizeof *r);
	r->spacing_ms = spacing_ms;
	r->low_budget = low_budget;
	for (int i = 0; i < ATP_RL_COUNT; i++)
		r->budget[i].limit = r->budget[i].remaining = -1;
}

static struct atp_budget *budget(struct atp_rate *r, enum atp_rate_class cls)
{
	return &r->budget[cls < ATP_RL_COUNT ? cls : ATP_RL_READ];
}

/* Once the reset moment has passed, what we knew about the window is
 * stale, whatever it said (so a spent budget never locks us out). */
static void expire(struct atp_budget *b, int64_t now_ms)
{
	if (b->known && b->reset_ms > 0 && now_ms >= b->reset_ms) {
		b->remaining = -1;
		b->reset_ms = 0;
		b->known = b->limit >= 0; /* the limit stays informative */
	}
}

/* Fixed windows for the write-points estimate: a window that has ended
 * starts over at the next write. */
static void roll_points(struct atp_rate *r, int64_t now_ms)
{
	if (r->hour_start_ms && now_ms >= r->hour_start_ms + HOUR_MS) {
		r->hour_start_ms = 0;
		r->hour_points = 0;
	}
	if (r->day_start_ms && now_ms >= r->day_start_ms + DAY_MS) {
		r->day_start_ms = 0;
		r->day_points = 0;
	}
}

static void raise_wait(int64_t *wait, enum atp_wait_reason *w, int64_t cand,
                       enum atp_wait_reason why)
{
	if (cand > *wait) {
		*wait = cand;
		*w = why;
	}
}

int64_t atp_rate_wait_ms(struct atp_rate *r, enum atp_rate_class cls, int points, int64_t now_ms,
                         enum atp_wait_reason *why)
{
	int64_t wait = 0;
	enum atp_wait_reason w = ATP_WAIT_NONE;
	int c = cls < ATP_RL_COUNT ? (int)cls : ATP_RL_READ;
	/* A clock that went back (NTP, a suspended VM) must not turn the last
	 * start into a wait as long as the jump. */
	if (r->started && r->last_start_ms > now_ms)
		r->last_start_ms = now_ms;
	if (r->hold_until_ms[c] > now_ms)
		raise_wait(&wait, &w, r->hold_until_ms[c] - now_ms, ATP_WAIT_HOLD);
	else
		r->hold_until_ms[c] = 0;
	struct atp_budget *b = budget(r, cls);
	expire(b, now_ms);
	if (b->remaining == 0 && b->reset_ms > now_ms) {
		raise_wait(&wait, &w, b->reset_ms - now_ms, ATP_WAIT_EXHAUSTED);
	} else if (b->remaining > 0 && b->remaining < r->low_budget && b->reset_ms > now_ms &&
	           r->started) {
		/* Spread what is left over the time left: never refuse, never
		 * spend the last requests in a burst. */
		int64_t gap = (b->reset_ms - now_ms) / (b->remaining + 1);
		raise_wait(&wait, &w, r->last_start_ms + gap - now_ms, ATP_WAIT_LOW_BUDGET);
	}
	if (points > 0) {
		roll_points(r, now_ms);
		if (r->hour_start_ms && r->hour_points + points > ATP_WRITE_POINTS_HOUR)
			raise_wait(&wait, &w, r->hour_start_ms + HOUR_MS - now_ms, ATP_WAIT_POINTS);
		if (r->day_start_ms && r->day_points + points > ATP_WRITE_POINTS_DAY)
			raise_wait(&wait, &w, r->day_start_ms + DAY_MS - now_ms, ATP_WAIT_POINTS);
	}
	if (r->started)
		raise_wait(&wait, &w, r->last_start_ms + (int64_t)r->spacing_ms - now_ms,
		           ATP_WAIT_SPACING);
	if (why)
		*why = wait > 0 ? w : ATP_WAIT_NONE;
	return wait > 0 ? wait : 0;
}

void atp_rate_started(struct atp_rate *r, enum atp_rate_class cls, int points, int64_t now_ms)
{
	r->started = true;
	r->last_start_ms = now_ms;
	struct atp_budget *b = budget(r, cls);
	expire(b, now_ms);
	if (b->remaining > 0)
		b->remaining--;
	if (points > 0) {
		roll_points(r, now_ms);
		if (!r->hour_start_ms)
			r->hour_start_ms = now_ms;
		if (!r->day_start_ms)
			r->day_start_ms = now_ms;
		r->hour_points += points;
		r->day_points += points;
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

/* Bluesky sends ratelimit-reset as epoch seconds; clamped when booked (not
 * when read: re-clamping on every look would push a bogus reset forward
 * forever). */
static int64_t reset_to_ms(int64_t reset_s, int64_t now_ms)
{
	if (reset_s <= 0 || reset_s > INT64_MAX / 1000)
		return 0;
	int64_t ms = reset_s * 1000;
	if (ms > now_ms + ATP_RATE_RESET_MAX_MS)
		ms = now_ms + ATP_RATE_RESET_MAX_MS;
	return ms;
}

void atp_rate_observe(struct atp_rate *r, enum atp_rate_class cls, const char *limit,
                      const char *remaining, const char *reset, const char *policy, int64_t now_ms)
{
	int64_t lim, rem, rst;
	bool has_lim = parse_i64(limit, &lim) == 0;
	bool has_rem = parse_i64(remaining, &rem) == 0;
	bool has_rst = parse_i64(reset, &rst) == 0;
	if (!has_lim && !has_rem && !has_rst)
		return;
	struct atp_budget *b = budget(r, cls);
	b->known = true;
	if (has_lim)
		b->limit = lim;
	if (has_rem)
		b->remaining = rem;
	if (has_rst)
		b->reset_ms = reset_to_ms(rst, now_ms);
	if (policy) {
		size_t n = strlen(policy);
		if (n >= sizeof b->policy)
			n = sizeof b->policy - 1;
		memcpy(b->policy, policy, n);
		b->policy[n] = '\0';
	}
	expire(b, now_ms);
}

int64_t atp_rate_limited(struct atp_rate *r, enum atp_rate_class cls, int64_t reset_ms,
                         int64_t retry_after_ms, int64_t now_ms)
{
	int c = cls < ATP_RL_COUNT ? (int)cls : ATP_RL_READ;
	int64_t wait;
	if (reset_ms > now_ms)
		wait = reset_ms - now_ms;
	else if (retry_after_ms >= 0)
		wait = retry_after_ms;
	else
		wait = ATP_RATE_HOLD_DEFAULT_MS;
	if (wait > ATP_RATE_RESET_MAX_MS)
		wait = ATP_RATE_RESET_MAX_MS;
	if (now_ms + wait > r->hold_until_ms[c])
		r->hold_until_ms[c] = now_ms + wait;
	struct atp_budget *b = budget(r, cls);
	b->known = true;
	b->remaining = 0;
	b->reset_ms = r->hold_until_ms[c];
	return wait;
}

int atp_rate_budget(struct atp_rate *r, enum atp_rate_class cls, int64_t now_ms,
                    struct atp_budget *out)
{
	struct atp_budget *b = budget(r, cls);
	expire(b, now_ms);
	if (!b->known)
		return -1;
	*out = *b;
	return 0;
}

const char *atp_wait_reason_name(enum atp_wait_reason w)
{
	switch (w) {
	case ATP_WAIT_NONE:
		return "none";
	case ATP_WAIT_SPACING:
		return "spacing";
	case ATP_WAIT_LOW_BUDGET:
		return "low budget";
	case ATP_WAIT_EXHAUSTED:
		return "rate budget spent";
	case ATP_WAIT_HOLD:
		return "rate limit (429)";
	case ATP_WAIT_POINTS:
		return "write points";
	}
	return "?";
}

const char *atp_rate_class_name(enum atp_rate_class c)
{
	switch (c) {
	case ATP_RL_READ:
		return "read";
	case ATP_RL_WRITE:
		return "write";
	case ATP_RL_SESSION:
		return "session";
	case ATP_RL_COUNT:
		break;
	}
	return "?";
}
