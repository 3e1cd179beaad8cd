/*
 * callq — see callq.h. The pump scans the queue in order each time
 * something may have changed (a call queued, an answer, the timer); a call
 * ended from inside the scan may have run a callback that changed the
 * queue, so the scan starts again from the head.
 */
#include "adapters/http/callq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

struct callq {
	struct http_client *http;
	struct callq_ops ops;
	void *ud;
	struct callq_config cfg;
	struct callq_call *head, *tail;
	size_t n_queued;
	struct callq_call *inflight;
	uv_timer_t *timer;
	uint64_t next_id;
	bool closing;
	bool http_closed; /* the HTTP client cancelled a request: it is closing */
	struct callq_counts counts;
};

/* --- the queue ----------------------------------------------------------------- */

static void q_unlink(struct callq *q, struct callq_call *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		q->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		q->tail = k->prev;
	k->prev = k->next = NULL;
	q->n_queued--;
}

static void q_push_back(struct callq *q, struct callq_call *k)
{
	k->prev = q->tail;
	k->next = NULL;
	if (q->tail)
		q->tail->next = k;
	else
		q->head = k;
	q->tail = k;
	q->n_queued++;
}

static void q_push_front(struct callq *q, struct callq_call *k)
{
	k->prev = NULL;
	k->next = q->head;
	if (q->head)
		q->head->prev = k;
	else
		q->tail = k;
	q->head = k;
	q->n_queued++;
}

static void on_timer(uv_timer_t *t);

static void schedule(struct callq *q, int64_t ms)
{
	if (q->closing)
		return;
	if (ms < 0)
		ms = 0;
	uv_timer_start(q->timer, on_timer, (uint64_t)ms, 0);
}

void callq_kick(struct callq *q)
{
	if (!q->inflight)
		schedule(q, 0);
}

static void end_cancelled(struct callq *q, struct callq_call *k, bool maybe_applied)
{
	char msg[GA_ERR_MSG_MAX];
	err_fmt(msg, sizeof msg, "the attempt to %s was cancelled: shutting down", k->what);
	q->ops.end(q->ud, k, CALLQ_END_CANCELLED, msg, maybe_applied);
}

/* --- the pump ------------------------------------------------------------------- */

bool callq_wait_is_limit(enum callq_wait w)
{
	return w == CALLQ_WAIT_EXHAUSTED || w == CALLQ_WAIT_HOLD || w == CALLQ_WAIT_POINTS;
}

static bool lane_seen(const char *const *lanes, size_t n, const char *lane)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(lanes[i], lane) == 0)
			return true;
	return false;
}

/* A call that would wait for a limit longer than it may: ended, not sent. */
static void end_too_long(struct callq *q, struct callq_call *k, enum callq_wait why, int64_t now,
                         int64_t w)
{
	char msg[GA_ERR_MSG_MAX], at[TIME_ISO_LEN + 1];
	err_fmt(msg, sizeof msg,
	        "%s's %s holds the attempt to %s until %s, longer than this request may wait "
	        "(%llu s); it was not sent",
	        q->cfg.service, q->ops.wait_name(why), k->what, time_format_iso(now + w, at),
	        (unsigned long long)(q->cfg.max_wait_ms / 1000));
	q_unlink(q, k);
	q->ops.end(q->ud, k, CALLQ_END_RATE_LIMITED, msg, false);
}

static void pump(struct callq *q)
{
again:
	if (q->inflight || q->closing || !q->head)
		return;
	if (q->http_closed) {
		struct callq_call *k = q->head;
		q_unlink(q, k);
		end_cancelled(q, k, false);
		goto again;
	}
	int64_t now = q->ops.now_ms(q->ud);
	int64_t min_wait = -1;
	const char *blocked[CALLQ_LANES_MAX];
	size_t n_blocked = 0;
	for (struct callq_call *k = q->head; k; k = k->next) {
		const char *lane = k->lane ? k->lane : "";
		if (lane_seen(blocked, n_blocked, lane))
			continue;
		if (n_blocked == q->cfg.max_lanes)
			break;
		if (q->ops.admit) {
			enum callq_admit a = q->ops.admit(q->ud, k, now);
			if (a == CALLQ_ADMIT_PASS)
				continue;
			if (a == CALLQ_ADMIT_RESCAN)
				goto again;
		}
		enum callq_wait why = CALLQ_WAIT_NONE;
		int64_t w;
		if (k->not_before_ms > now) {
			w = k->not_before_ms - now;
			why = CALLQ_WAIT_BACKOFF;
		} else {
			w = q->ops.wait_ms(q->ud, k, now, &why);
			if (w <= 0) {
				w = 0;
				why = CALLQ_WAIT_NONE;
			}
		}
		int64_t waited = now > k->enqueued_ms ? now - k->enqueued_ms : 0;
		if (w > 0 && callq_wait_is_limit(why) &&
		    (uint64_t)(waited + w) > q->cfg.max_wait_ms) {
			end_too_long(q, k, why, now, w);
			goto again; /* the callback may have changed the queue */
		}
		if (w == 0) {
			q_unlink(q, k);
			struct ga_err err = {{0}};
			if (q->ops.send(q->ud, k, now, &err) != 0) {
				char msg[GA_ERR_MSG_MAX];
				err_fmt(msg, sizeof msg, "the request to %s could not be sent: %s",
				        k->what, err.msg);
				q->ops.end(q->ud, k, CALLQ_END_TRANSIENT, msg, false);
				goto again;
			}
			return;
		}
		if (why != CALLQ_WAIT_NONE && why != CALLQ_WAIT_SPACING &&
		    why != CALLQ_WAIT_BACKOFF && why != k->logged_wait) {
			char m[80];
			snprintf(m, sizeof m, "%s request waits", q->cfg.service);
			log_kv(q->cfg.wait_log_level, q->cfg.log_comp, m, "what", k->what, "why",
			       q->ops.wait_name(why), "wait_ms", LOG_INT(w));
		}
		k->logged_wait = why;
		blocked[n_blocked++] = lane;
		if (min_wait < 0 || w < min_wait)
			min_wait = w;
	}
	if (min_wait >= 0)
		schedule(q, min_wait < (int64_t)q->cfg.recheck_ms ? min_wait : q->cfg.recheck_ms);
}

static void on_timer(uv_timer_t *t)
{
	pump(t->data);
}

/* --- answers --------------------------------------------------------------------- */

static void on_http_done(void *ud, const struct http_response *hr)
{
	struct callq_call *k = ud;
	struct callq *q = k->q;
	if (q->inflight == k)
		q->inflight = NULL;
	k->http_id = 0;
	k->status = (int)hr->status;
	if (hr->error == HTTP_ERR_CANCELLED) {
		/* The HTTP client is closing: nothing queued can be sent any more. */
		q->http_closed = true;
		end_cancelled(q, k, k->unsafe);
	} else {
		q->ops.answered(q->ud, k, hr, q->ops.now_ms(q->ud));
	}
	pump(q);
}

int callq_start(struct callq *q, struct callq_call *k, const struct http_request *req,
                struct ga_err *err)
{
	k->http_id = http_request(q->http, req, on_http_done, k, err);
	if (!k->http_id)
		return -1;
	q->inflight = k;
	k->attempts++;
	q->counts.requests++;
	return 0;
}

uint64_t callq_backoff_ms(unsigned base_ms, unsigned cap_ms, int retry, double jitter_frac,
                          int64_t retry_after_ms)
{
	uint64_t w = base_ms;
	for (int i = 1; i < retry && w < cap_ms; i++)
		w *= 2;
	if (jitter_frac < 0)
		jitter_frac = 0;
	if (jitter_frac > 1)
		jitter_frac = 1;
	w += (uint64_t)((double)w * 0.3 * jitter_frac);
	if (retry_after_ms > 0 && (uint64_t)retry_after_ms > w)
		w = (uint64_t)retry_after_ms;
	if (w > cap_ms)
		w = cap_ms;
	return w;
}

void callq_retry(struct callq *q, struct callq_call *k, const char *msg, bool retryable,
                 bool maybe_applied, int64_t retry_after_ms)
{
	k->transient_fails++;
	if (retryable && k->transient_fails <= q->cfg.max_retries) {
		double jitter = (double)random_below(1001) / 1000.0;
		uint64_t wait = callq_backoff_ms(q->cfg.backoff_base_ms, q->cfg.backoff_cap_ms,
		                                 k->transient_fails, jitter, retry_after_ms);
		char m[80];
		snprintf(m, sizeof m, "%s request failed; retrying", q->cfg.service);
		log_kv(LOG_LEVEL_WARN, q->cfg.log_comp, m, "attempt", LOG_INT(k->attempts),
		       "wait_ms", LOG_INT(wait), "error", msg);
		q->counts.retries++;
		k->not_before_ms = q->ops.now_ms(q->ud) + (int64_t)wait;
		q_push_front(q, k);
		return;
	}
	char full[GA_ERR_MSG_MAX];
	if (retryable)
		err_fmt(full, sizeof full, "%s; gave up after %d attempts", msg, k->attempts);
	else if (maybe_applied)
		err_fmt(full, sizeof full,
		        "%s; not repeated, because the request may have been carried out", msg);
	else
		err_fmt(full, sizeof full, "%s", msg);
	q->ops.end(q->ud, k, CALLQ_END_TRANSIENT, full, maybe_applied);
}

void callq_unanswered(struct callq *q, struct callq_call *k, const struct http_response *hr)
{
	/* A refused connection never reached the server; anything else (a
	 * timeout, a reset) may have, after it acted. */
	bool reached = hr->error != HTTP_ERR_CONNECT;
	char msg[GA_ERR_MSG_MAX];
	err_fmt(msg, sizeof msg, "%s did not answer the attempt to %s (%s)", q->cfg.service,
	        k->what, hr->error_msg);
	callq_retry(q, k, msg, !k->unsafe || !reached, k->unsafe && reached, -1);
}

bool callq_rate_hit(struct callq *q, struct callq_call *k, const char *msg, char *full, size_t cap)
{
	q->counts.rate_limited++;
	k->rate_hits++;
	if (k->rate_hits <= q->cfg.max_rate_retries) {
		q_push_front(q, k);
		return true;
	}
	err_fmt(full, cap, "%s; gave up after %d rate-limited answers", msg, k->rate_hits);
	return false;
}

/* --- life ------------------------------------------------------------------------ */

struct callq *callq_new(struct http_client *http, const struct callq_ops *ops, void *ud,
                        const struct callq_config *cfg)
{
	struct callq *q = xcalloc(1, sizeof *q);
	q->http = http;
	q->ops = *ops;
	q->ud = ud;
	q->cfg = *cfg;
	if (!q->cfg.max_lanes || q->cfg.max_lanes > CALLQ_LANES_MAX)
		q->cfg.max_lanes = CALLQ_LANES_MAX;
	q->timer = xcalloc(1, sizeof *q->timer);
	uv_timer_init(http_client_loop(http), q->timer);
	q->timer->data = q;
	return q;
}

static void on_timer_closed(uv_handle_t *h)
{
	free(h);
}

void callq_free(struct callq *q)
{
	if (!q)
		return;
	q->closing = true;
	uv_timer_stop(q->timer);
	struct callq_call *k = q->inflight;
	q->inflight = NULL;
	if (k) {
		http_cancel(q->http, k->http_id);
		k->http_id = 0;
		end_cancelled(q, k, k->unsafe);
	}
	while ((k = q->head)) {
		q_unlink(q, k);
		end_cancelled(q, k, false);
	}
	uv_close((uv_handle_t *)q->timer, on_timer_closed);
	free(q);
}

uint64_t callq_new_id(struct callq *q)
{
	return ++q->next_id;
}

uint64_t callq_push(struct callq *q, struct callq_call *k, struct ga_err *err)
{
	if (q->closing) {
		err_set(err, "the %s client is shutting down", q->cfg.service);
		return 0;
	}
	if (callq_pending(q) >= q->cfg.max_calls) {
		err_set(err, "%zu %s requests are already waiting; the attempt to %s was refused",
		        q->cfg.max_calls, q->cfg.service, k->what);
		return 0;
	}
	k->q = q;
	k->id = callq_new_id(q);
	k->enqueued_ms = q->ops.now_ms(q->ud);
	q_push_back(q, k);
	q->counts.calls++;
	callq_kick(q);
	return k->id;
}

void callq_push_front(struct callq *q, struct callq_call *k)
{
	if (!k->id) {
		k->q = q;
		k->id = callq_new_id(q);
		k->enqueued_ms = q->ops.now_ms(q->ud);
	}
	q_push_front(q, k);
}

struct callq_call *callq_find(const struct callq *q, uint64_t id)
{
	if (q->inflight && q->inflight->id == id)
		return q->inflight;
	for (struct callq_call *k = q->head; k; k = k->next)
		if (k->id == id)
			return k;
	return NULL;
}

void callq_remove(struct callq *q, struct callq_call *k)
{
	if (q->inflight == k) {
		q->inflight = NULL;
		http_cancel(q->http, k->http_id);
		k->http_id = 0;
		schedule(q, 0);
		return;
	}
	q_unlink(q, k);
}

struct callq_call *callq_head(const struct callq *q)
{
	return q->head;
}

bool callq_closing(const struct callq *q)
{
	return q->closing;
}

size_t callq_pending(const struct callq *q)
{
	return q->n_queued + (q->inflight ? 1 : 0);
}

void callq_counts(const struct callq *q, struct callq_counts *out)
{
	*out = q->counts;
}
