/*
 * atproto — the client's core: configuration, the queue, dispatch through
 * the rate limiter, classification and retries. The session's tokens, file
 * and rules are session.c's; endpoint helpers, the composite operations (a
 * post with resolved mentions, reply refs) and atp_cancel are endpoints.c's.
 * Calls go one way: endpoints.c → atproto.c → session.c.
 *
 * One request is in flight at a time. Session steps (createSession,
 * refreshSession) are calls like any other, put at the head of the queue;
 * while one is pending, calls that need the session are passed over (calls
 * that do not, such as resolveHandle, go on). A call that has to wait stays
 * queued; one uv timer wakes the pump at the earliest moment anything may
 * start, never later than recheck_ms, so a clock that jumps (a test's) is
 * noticed. A second timer refreshes the session before it expires when the
 * agent is idle.
 */
#include "adapters/atproto/atproto.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/atproto/internal.h"
#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#define LOG_COMP "atproto"

/* --- configuration ------------------------------------------------------------ */

static char *strip_slash(const char *url)
{
	char *s = xstrdup(url);
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

void atp_config_init(struct atp_config *cfg, const char *service, const char *identifier,
                     const char *password, const char *session_path)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->service = strip_slash(service && *service ? service : CONFIG_DEFAULT_BLUESKY_SERVICE);
	cfg->identifier = dup_or_null(identifier);
	cfg->password = dup_or_null(password);
	cfg->session_path = dup_or_null(session_path);
	cfg->spacing_ms = ATP_DEFAULT_SPACING_MS;
	cfg->low_budget = ATP_DEFAULT_LOW_BUDGET;
	cfg->refresh_margin_ms = ATP_DEFAULT_REFRESH_MARGIN_MS;
	cfg->max_retries = ATP_DEFAULT_MAX_RETRIES;
	cfg->backoff_base_ms = ATP_DEFAULT_BACKOFF_BASE_MS;
	cfg->backoff_cap_ms = ATP_DEFAULT_BACKOFF_CAP_MS;
	cfg->max_rate_retries = ATP_DEFAULT_MAX_RATE_RETRIES;
	cfg->max_wait_ms = ATP_DEFAULT_MAX_WAIT_MS;
	cfg->recheck_ms = ATP_DEFAULT_RECHECK_MS;
	cfg->timeout_ms = ATP_DEFAULT_TIMEOUT_MS;
}

int atp_config_from_ga(const struct ga_config *ga, struct atp_config *cfg, struct ga_err *err)
{
	memset(cfg, 0, sizeof *cfg);
	if (!ga->bsky_username || !*ga->bsky_username)
		return err_set(err,
		               "Bluesky is not configured: set " ATP_USERNAME_VAR
		               " (the agent's handle) and " ATP_PASSWORD_VAR " (an app password)");
	if (!ga->bsky_password || !*ga->bsky_password)
		return err_set(err, ATP_USERNAME_VAR
		               " is set but " ATP_PASSWORD_VAR
		               " is not: create an app password in Bluesky's settings "
		               "and set it");
	char *path = ga->memory_dir ? fsx_join(ga->memory_dir, ATP_SESSION_FILE) : NULL;
	atp_config_init(cfg, ga->bluesky_service, ga->bsky_username, ga->bsky_password, path);
	free(path);
	return 0;
}

void atp_config_free(struct atp_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->service);
	free(cfg->identifier);
	free(cfg->password);
	free(cfg->session_path);
	cfg->service = cfg->identifier = cfg->password = cfg->session_path = NULL;
}

int64_t atp_now_ms(const struct atp_client *c)
{
	if (c->cfg.clock.now_ms)
		return c->cfg.clock.now_ms(c->cfg.clock.ud);
	return time_now_ms();
}

/* --- small helpers ------------------------------------------------------------ */

const char *atp_error_kind_name(enum atp_error_kind k)
{
	switch (k) {
	case ATP_OK:
		return "ok";
	case ATP_ERR_AUTH:
		return "auth";
	case ATP_ERR_INVALID:
		return "invalid";
	case ATP_ERR_NOT_FOUND:
		return "not_found";
	case ATP_ERR_FORBIDDEN:
		return "forbidden";
	case ATP_ERR_REFUSED:
		return "refused";
	case ATP_ERR_RATE_LIMITED:
		return "rate_limited";
	case ATP_ERR_TRANSIENT:
		return "transient";
	case ATP_ERR_MALFORMED:
		return "malformed";
	case ATP_ERR_CANCELLED:
		return "cancelled";
	}
	return "?";
}

bool atp_error_is_fatal(enum atp_error_kind k)
{
	return k == ATP_ERR_AUTH;
}

/* At most ATP_MSG_QUOTE_MAX bytes of s, control characters made spaces,
 * never cutting a UTF-8 sequence. */
static void quote(const char *s, char *out, size_t cap)
{
	size_t lim = cap - 1 < ATP_MSG_QUOTE_MAX ? cap - 1 : ATP_MSG_QUOTE_MAX;
	size_t n = 0;
	for (; s && s[n] && n < lim; n++)
		out[n] = (unsigned char)s[n] < 0x20 ? ' ' : s[n];
	if (s && s[n])
		while (n > 0 && ((unsigned char)out[n] & 0xC0) == 0x80)
			n--;
	out[n] = '\0';
}

static bool is_html(const char *content_type, const char *body, size_t len)
{
	if (content_type && strcasestr(content_type, "text/html"))
		return true;
	size_t i = 0;
	while (i < len && isspace((unsigned char)body[i]))
		i++;
	return i < len && body[i] == '<';
}

static bool header_is_zero(const char *v)
{
	if (!v)
		return false;
	while (*v == ' ')
		v++;
	return v[0] == '0' && (v[1] == '\0' || v[1] == ' ');
}

static bool is_not_found_error(const char *e)
{
	static const char *const names[] = {"NotFound",        "RecordNotFound", "ActorNotFound",
	                                    "ProfileNotFound", "HandleNotFound", "RepoNotFound",
	                                    "PostNotFound"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(e, names[i]) == 0)
			return true;
	return false;
}

enum atp_error_kind atp_classify(long status, const char *content_type, const char *body,
                                 size_t body_len, const char *what, const char *remaining_hdr,
                                 bool *auth_expired, bool *rate_limited, char *xrpc_error,
                                 char *msg, size_t cap)
{
	*auth_expired = false;
	*rate_limited = false;
	xrpc_error[0] = '\0';
	msg[0] = '\0';
	if (!body)
		body = "";
	bool html = is_html(content_type, body, body_len);
	if (status >= 200 && status < 300) {
		if (html) {
			err_fmt(msg, cap,
			        "Bluesky answered the attempt to %s with an HTML page instead of "
			        "JSON (a proxy or an outage page)",
			        what);
			return ATP_ERR_TRANSIENT;
		}
		return ATP_OK;
	}
	cJSON *root = html ? NULL : cJSON_ParseWithLength(body, body_len);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "message");
	char ename[ATP_XRPC_ERROR_MAX] = "", says[ATP_MSG_QUOTE_MAX + 1] = "";
	if (cJSON_IsString(e))
		quote(e->valuestring, ename, sizeof ename);
	if (cJSON_IsString(m) && m->valuestring[0])
		quote(m->valuestring, says, sizeof says);
	else if (html)
		snprintf(says, sizeof says, "an HTML page instead of JSON");
	else if (!cJSON_IsObject(root))
		snprintf(says, sizeof says, "no JSON error body");
	else
		snprintf(says, sizeof says, "no message");
	cJSON_Delete(root);
	snprintf(xrpc_error, ATP_XRPC_ERROR_MAX, "%s", ename);
	char code[ATP_XRPC_ERROR_MAX + 16];
	if (ename[0])
		snprintf(code, sizeof code, "%ld %s", status, ename);
	else
		snprintf(code, sizeof code, "%ld", status);
	enum atp_error_kind kind;
	if (status == 401 ||
	    (status == 400 && (!strcmp(ename, "ExpiredToken") || !strcmp(ename, "InvalidToken")))) {
		*auth_expired = true;
		kind = ATP_ERR_AUTH;
		err_fmt(msg, cap, "Bluesky refused the session when trying to %s (%s: %s)", what,
		        code, says);
	} else if (status == 429 || (status == 403 && header_is_zero(remaining_hdr))) {
		*rate_limited = true;
		kind = ATP_ERR_RATE_LIMITED;
		err_fmt(msg, cap, "Bluesky's rate limit stopped the attempt to %s (%s: %s)", what,
		        code, says);
	} else if (status == 404 || (status == 400 && is_not_found_error(ename))) {
		kind = ATP_ERR_NOT_FOUND;
		err_fmt(msg, cap, "Bluesky could not %s: not found (%s: %s)", what, code, says);
	} else if (status == 400) {
		kind = ATP_ERR_INVALID;
		err_fmt(msg, cap, "Bluesky refused to %s (%s: %s)", what, code, says);
	} else if (status == 403) {
		kind = ATP_ERR_FORBIDDEN;
		err_fmt(msg, cap, "Bluesky forbade the attempt to %s (%s: %s)", what, code, says);
	} else if (status == 408 || (status >= 500 && status != 501)) {
		kind = ATP_ERR_TRANSIENT;
		err_fmt(msg, cap, "Bluesky failed to %s (%s: %s)", what, code, says);
	} else {
		kind = ATP_ERR_REFUSED;
		err_fmt(msg, cap, "Bluesky refused to %s (%s: %s)", what, code, says);
	}
	return kind;
}

/* --- queue -------------------------------------------------------------------- */

static void q_unlink(struct atp_client *c, struct atp_call *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		c->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		c->tail = k->prev;
	k->prev = k->next = NULL;
	c->n_queued--;
}

static void q_push_back(struct atp_client *c, struct atp_call *k)
{
	k->prev = c->tail;
	k->next = NULL;
	if (c->tail)
		c->tail->next = k;
	else
		c->head = k;
	c->tail = k;
	c->n_queued++;
}

static void q_push_front(struct atp_client *c, struct atp_call *k)
{
	k->prev = NULL;
	k->next = c->head;
	if (c->head)
		c->head->prev = k;
	else
		c->tail = k;
	c->head = k;
	c->n_queued++;
}

static void call_free(struct atp_call *k)
{
	free(k->nsid);
	free(k->query);
	free(k->what);
	cJSON_Delete(k->body);
	free(k);
}

static void on_timer(uv_timer_t *t);

static void schedule(struct atp_client *c, int64_t ms)
{
	if (c->closing)
		return;
	if (ms < 0)
		ms = 0;
	uv_timer_start(c->timer, on_timer, (uint64_t)ms, 0);
}

void atp_kick(struct atp_client *c)
{
	if (!c->inflight)
		schedule(c, 0);
}

static void fail_waiting(struct atp_client *c, enum atp_error_kind kind);
static void refresh_timer_arm(struct atp_client *c);

/* Ends a call: the callback (or the session's bookkeeping), then the free. */
static void finish(struct atp_call *k, enum atp_error_kind kind, const cJSON *json, const char *msg,
                   bool maybe_applied, const char *xrpc_error)
{
	struct atp_client *c = k->c;
	if (k->kind != ATP_CALL_USER && k->kind != ATP_CALL_ENSURE) {
		enum atp_error_kind waiting = ATP_ERR_AUTH;
		if (atp_session_done(c, k, kind, json, msg, xrpc_error, atp_now_ms(c), &waiting))
			fail_waiting(c, waiting);
		else if (kind == ATP_OK)
			refresh_timer_arm(c);
		call_free(k);
		return;
	}
	struct atp_result r = {
	        .kind = kind,
	        .status = k->status,
	        .attempts = k->attempts,
	        .maybe_applied = maybe_applied,
	        .json = kind == ATP_OK ? json : NULL,
	};
	snprintf(r.error, sizeof r.error, "%s", xrpc_error ? xrpc_error : "");
	err_fmt(r.msg, sizeof r.msg, "%s", msg ? msg : "");
	if (kind != ATP_OK) {
		c->stats.failures++;
		err_fmt(c->stats.last_error, sizeof c->stats.last_error, "%s", r.msg);
		if (kind != ATP_ERR_CANCELLED)
			log_kv(atp_error_is_fatal(kind) ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN,
			       LOG_COMP, "Bluesky request failed", "kind",
			       atp_error_kind_name(kind), "status", LOG_INT(k->status), "attempts",
			       LOG_INT(k->attempts), "error", r.msg);
	}
	k->cb(&r, k->ud);
	call_free(k);
}

/* --- the session (session.c) -------------------------------------------------------- */

static void refresh_timer_arm(struct atp_client *c);

/* Queues a session step at the head (calls that need the session wait
 * behind it). */
static void start_step(struct atp_client *c, enum atp_call_kind kind)
{
	q_push_front(c, atp_session_call(c, kind, atp_now_ms(c)));
	c->session_busy = true;
}

/* The calls waiting for the session learn why it could not be had. They
 * are taken out first: a callback that enqueues again must not be failed
 * in the same sweep (nor loop forever). */
static void fail_waiting(struct atp_client *c, enum atp_error_kind kind)
{
	struct atp_call *list = NULL, **tail = &list;
	for (struct atp_call *w = c->head; w;) {
		struct atp_call *next = w->next;
		if (w->needs_session) {
			q_unlink(c, w);
			*tail = w;
			tail = &w->next;
		}
		w = next;
	}
	while (list) {
		struct atp_call *w = list;
		list = w->next;
		w->next = NULL;
		char full[GA_ERR_MSG_MAX];
		err_fmt(full, sizeof full, "could not %s: %s", w->what, c->session_error);
		finish(w, kind, NULL, full, false, NULL);
	}
}

static void on_refresh_timer(uv_timer_t *t)
{
	struct atp_client *c = t->data;
	if (c->closing || c->session_busy || !c->refresh || c->refresh_dead)
		return;
	if (atp_session_fresh(c, atp_now_ms(c))) {
		refresh_timer_arm(c);
		return;
	}
	start_step(c, ATP_CALL_REFRESH_SESSION);
	atp_kick(c);
}

/* The idle refresh: shortly before the access token expires. */
static void refresh_timer_arm(struct atp_client *c)
{
	int64_t at = atp_session_refresh_at(c);
	if (c->closing || at < 0)
		return;
	int64_t d = at - atp_now_ms(c);
	if (d < 1000)
		d = 1000;
	/* re-checked at least hourly: a suspended laptop wakes up late */
	if (d > 3600 * 1000)
		d = 3600 * 1000;
	uv_timer_start(c->refresh_timer, on_refresh_timer, (uint64_t)d, 0);
}

/* --- dispatch ------------------------------------------------------------------------- */

static void on_http_done(const struct http_response *hr, void *ud);

static int send_call(struct atp_client *c, struct atp_call *k, int64_t now, struct ga_err *err)
{
	const char *headers[6];
	size_t n = 0;
	char *auth = NULL;
	const char *token = NULL;
	if (k->kind == ATP_CALL_REFRESH_SESSION)
		token = c->refresh;
	else if (k->needs_session)
		token = c->access;
	if (token) {
		auth = xasprintf("Authorization: Bearer %s", token);
		headers[n++] = auth;
	}
	headers[n++] = "Accept: application/json";
	char *body = NULL;
	if (k->procedure) {
		headers[n++] = "Content-Type: application/json";
		if (k->self_repo && k->body) {
			cJSON_DeleteItemFromObjectCaseSensitive(k->body, "repo");
			cJSON_AddStringToObject(k->body, "repo", c->did);
		}
		if (k->body)
			body = json_print(k->body);
	}
	headers[n] = NULL;
	char *url;
	if (k->self_repo && !k->procedure)
		url = xasprintf("%s/xrpc/%s?repo=%s%s%s", c->cfg.service, k->nsid, c->did,
		                k->query && *k->query ? "&" : "", k->query ? k->query : "");
	else
		url = xasprintf("%s/xrpc/%s%s%s", c->cfg.service, k->nsid,
		                k->query && *k->query ? "?" : "", k->query ? k->query : "");
	struct http_request req = {
	        .method = k->procedure ? "POST" : "GET",
	        .url = url,
	        .headers = headers,
	        .body = body,
	        .body_len = body ? strlen(body) : 0,
	        .timeout_ms = c->cfg.timeout_ms,
	        .max_body_bytes = ATP_MAX_ANSWER_BYTES,
	};
	k->http_id = http_request(c->http, &req, on_http_done, k, err);
	free(auth);
	free(body);
	if (!k->http_id) {
		free(url);
		return -1;
	}
	c->inflight = k;
	k->attempts++;
	c->stats.requests++;
	if (k->kind == ATP_CALL_CREATE_SESSION) {
		c->stats.create_sessions++;
		c->creates++;
		c->last_create_ms = now;
	} else if (k->kind == ATP_CALL_REFRESH_SESSION) {
		c->stats.refreshes++;
	}
	atp_rate_started(&c->rate, k->rclass, k->points, now);
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "request", "nsid", k->nsid, "url", url);
	free(url);
	return 0;
}

static void pump(struct atp_client *c)
{
again:
	if (c->inflight || c->closing || !c->head)
		return;
	if (c->http_closed) {
		struct atp_call *k = c->head;
		q_unlink(c, k);
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "the attempt to %s was cancelled: shutting down", k->what);
		finish(k, ATP_ERR_CANCELLED, NULL, msg, false, NULL);
		goto again;
	}
	int64_t now = atp_now_ms(c);
	int64_t min_wait = -1;
	bool blocked[ATP_RL_COUNT] = {false};
	for (struct atp_call *k = c->head; k; k = k->next) {
		if (blocked[k->rclass])
			continue;
		if (k->needs_session) {
			char why[GA_ERR_MSG_MAX] = "";
			enum atp_session_next st = atp_session_next(c, now, why, sizeof why);
			if (st == ATP_SESSION_REFRESH || st == ATP_SESSION_LOGIN) {
				start_step(c, st == ATP_SESSION_REFRESH ? ATP_CALL_REFRESH_SESSION
				                                        : ATP_CALL_CREATE_SESSION);
				goto again; /* a session step now heads the queue */
			}
			if (st == ATP_SESSION_BUSY)
				continue;
			if (st == ATP_SESSION_FAIL) {
				q_unlink(c, k);
				char msg[GA_ERR_MSG_MAX];
				err_fmt(msg, sizeof msg, "could not %s: %s", k->what, why);
				finish(k, ATP_ERR_AUTH, NULL, msg, false, NULL);
				goto again;
			}
			if (k->kind == ATP_CALL_ENSURE) {
				q_unlink(c, k);
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "did", c->did);
				cJSON_AddStringToObject(o, "handle", c->handle);
				finish(k, ATP_OK, o, NULL, false, NULL);
				cJSON_Delete(o);
				goto again;
			}
		}
		enum atp_wait_reason why = ATP_WAIT_NONE;
		int64_t w;
		if (k->not_before_ms > now)
			w = k->not_before_ms - now;
		else
			w = atp_rate_wait_ms(&c->rate, k->rclass, k->points, now, &why);
		int64_t waited = now > k->enqueued_ms ? now - k->enqueued_ms : 0;
		if (w > 0 &&
		    (why == ATP_WAIT_EXHAUSTED || why == ATP_WAIT_HOLD || why == ATP_WAIT_POINTS) &&
		    (uint64_t)(waited + w) > c->cfg.max_wait_ms) {
			char msg[GA_ERR_MSG_MAX], at[TIME_ISO_LEN + 1];
			err_fmt(msg, sizeof msg,
			        "Bluesky's %s holds the attempt to %s until %s, longer than this "
			        "request may wait (%llu s); it was not sent",
			        atp_wait_reason_name(why), k->what, time_format_iso(now + w, at),
			        (unsigned long long)(c->cfg.max_wait_ms / 1000));
			q_unlink(c, k);
			finish(k, ATP_ERR_RATE_LIMITED, NULL, msg, false, NULL);
			goto again;
		}
		if (w == 0) {
			q_unlink(c, k);
			struct ga_err err = {{0}};
			if (send_call(c, k, now, &err) != 0) {
				char msg[GA_ERR_MSG_MAX];
				err_fmt(msg, sizeof msg, "the request to %s could not be sent: %s",
				        k->what, err.msg);
				finish(k, ATP_ERR_TRANSIENT, NULL, msg, false, NULL);
				goto again;
			}
			return;
		}
		if (why != ATP_WAIT_NONE && why != ATP_WAIT_SPACING && why != k->logged_wait)
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "Bluesky request waits", "what", k->what,
			       "why", atp_wait_reason_name(why), "wait_ms", LOG_INT(w));
		k->logged_wait = why;
		blocked[k->rclass] = true;
		if (min_wait < 0 || w < min_wait)
			min_wait = w;
	}
	if (min_wait >= 0)
		schedule(c, min_wait < (int64_t)c->cfg.recheck_ms ? min_wait : c->cfg.recheck_ms);
}

static void on_timer(uv_timer_t *t)
{
	pump(t->data);
}

/* --- completion ------------------------------------------------------------------------- */

static void transient(struct atp_client *c, struct atp_call *k, const char *msg, bool retryable,
                      bool maybe_applied)
{
	k->transient_fails++;
	if (retryable && k->transient_fails <= c->cfg.max_retries) {
		double jitter = (double)random_below(1001) / 1000.0;
		uint64_t wait = atp_backoff_ms(c->cfg.backoff_base_ms, c->cfg.backoff_cap_ms,
		                               k->transient_fails, jitter);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "Bluesky request failed; retrying", "attempt",
		       LOG_INT(k->attempts), "wait_ms", LOG_INT(wait), "error", msg);
		c->stats.retries++;
		k->not_before_ms = atp_now_ms(c) + (int64_t)wait;
		q_push_front(c, k);
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
	finish(k, ATP_ERR_TRANSIENT, NULL, full, maybe_applied, NULL);
}

static bool only_space(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return false;
	return true;
}

static void on_http_done(const struct http_response *hr, void *ud)
{
	struct atp_call *k = ud;
	struct atp_client *c = k->c;
	if (c->inflight == k)
		c->inflight = NULL;
	k->http_id = 0;
	int64_t now = atp_now_ms(c);
	k->status = (int)hr->status;
	bool write = k->procedure && !k->idempotent;
	if (hr->error == HTTP_ERR_CANCELLED) {
		c->http_closed = true;
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "the attempt to %s was cancelled: shutting down", k->what);
		finish(k, ATP_ERR_CANCELLED, NULL, msg, write, NULL);
		pump(c);
		return;
	}
	const char *reset = NULL;
	if (hr->status > 0) {
		reset = http_response_header(hr, "ratelimit-reset");
		atp_rate_observe(&c->rate, k->rclass, http_response_header(hr, "ratelimit-limit"),
		                 http_response_header(hr, "ratelimit-remaining"), reset,
		                 http_response_header(hr, "ratelimit-policy"), now);
	}
	if (hr->error != HTTP_OK) {
		/* A refused connection never reached the server; anything else
		 * (a timeout, a reset) may have, after it acted. */
		bool reached = hr->error != HTTP_ERR_CONNECT;
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "Bluesky did not answer the attempt to %s (%s)", k->what,
		        hr->error_msg);
		transient(c, k, msg, !write || !reached, write && reached);
		pump(c);
		return;
	}
	bool auth_expired = false, rate_limited = false;
	char msg[GA_ERR_MSG_MAX], xerr[ATP_XRPC_ERROR_MAX];
	enum atp_error_kind kind =
	        atp_classify(hr->status, http_response_header(hr, "Content-Type"), hr->body,
	                     hr->body_len, k->what, http_response_header(hr, "ratelimit-remaining"),
	                     &auth_expired, &rate_limited, xerr, msg, sizeof msg);
	if (kind == ATP_OK) {
		k->transient_fails = 0;
		if (only_space(hr->body, hr->body_len)) {
			finish(k, ATP_OK, NULL, NULL, false, NULL);
		} else {
			struct ga_err perr = {{0}};
			cJSON *root = json_parse(hr->body, hr->body_len, &perr);
			if (!cJSON_IsObject(root)) {
				err_fmt(msg, sizeof msg,
				        "Bluesky's answer to the attempt to %s is not a JSON "
				        "object%s%s",
				        k->what, perr.msg[0] ? ": " : "", perr.msg);
				finish(k, ATP_ERR_MALFORMED, NULL, msg, false, NULL);
			} else {
				finish(k, ATP_OK, root, NULL, false, NULL);
			}
			cJSON_Delete(root);
		}
		pump(c);
		return;
	}
	if (rate_limited) {
		c->stats.rate_limited++;
		int64_t reset_ms = 0, retry_after = -1, rs;
		if (reset && sscanf(reset, "%" SCNd64, &rs) == 1 && rs > 0 && rs < INT64_MAX / 1000)
			reset_ms = rs * 1000;
		const char *ra = http_response_header(hr, "retry-after");
		if (ra)
			http_parse_retry_after(ra, now, &retry_after);
		int64_t wait = atp_rate_limited(&c->rate, k->rclass, reset_ms, retry_after, now);
		k->rate_hits++;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "Bluesky rate limit", "class",
		       atp_rate_class_name(k->rclass), "wait_ms", LOG_INT(wait), "what", k->what);
		if (k->rate_hits <= c->cfg.max_rate_retries) {
			q_push_front(c, k);
		} else {
			char full[GA_ERR_MSG_MAX];
			err_fmt(full, sizeof full, "%s; gave up after %d rate-limited answers", msg,
			        k->rate_hits);
			finish(k, ATP_ERR_RATE_LIMITED, NULL, full, false, xerr);
		}
		pump(c);
		return;
	}
	if (auth_expired && k->kind == ATP_CALL_USER && k->needs_session) {
		/* §5.3's gap: 400 ExpiredToken is as much an expiry as 401, and a
		 * revoked token is refreshed whatever its exp says. Once. */
		if (!k->auth_retried) {
			k->auth_retried = true;
			c->force_refresh = true;
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "Bluesky token refused; refreshing",
			       "what", k->what, "xrpc", xerr);
			q_push_front(c, k);
			pump(c);
			return;
		}
		char full[GA_ERR_MSG_MAX];
		err_fmt(full, sizeof full, "%s, again after the session was refreshed", msg);
		finish(k, ATP_ERR_AUTH, NULL, full, false, xerr);
		pump(c);
		return;
	}
	if (kind == ATP_ERR_TRANSIENT) {
		/* A 5xx after a write leaves its outcome unknown. */
		transient(c, k, msg, !write, write);
		pump(c);
		return;
	}
	finish(k, kind, NULL, msg, false, xerr);
	pump(c);
}

/* --- public ------------------------------------------------------------------------------ */

struct atp_client *atp_client_new(struct http_client *http, const struct atp_config *cfg)
{
	struct atp_client *c = xcalloc(1, sizeof *c);
	c->http = http;
	c->cfg = *cfg;
	c->cfg.service = strip_slash(cfg->service ? cfg->service : CONFIG_DEFAULT_BLUESKY_SERVICE);
	c->cfg.identifier = dup_or_null(cfg->identifier);
	c->cfg.password = dup_or_null(cfg->password);
	c->cfg.session_path = dup_or_null(cfg->session_path);
	atp_secret(c->cfg.password);
	atp_rate_init(&c->rate, c->cfg.spacing_ms, c->cfg.low_budget);
	uv_loop_t *loop = http_client_loop(http);
	c->timer = xcalloc(1, sizeof *c->timer);
	uv_timer_init(loop, c->timer);
	c->timer->data = c;
	c->refresh_timer = xcalloc(1, sizeof *c->refresh_timer);
	uv_timer_init(loop, c->refresh_timer);
	c->refresh_timer->data = c;
	atp_session_load(c);
	refresh_timer_arm(c);
	return c;
}

static void on_timer_closed(uv_handle_t *h)
{
	free(h);
}

void atp_client_free(struct atp_client *c)
{
	if (!c)
		return;
	c->closing = true;
	uv_timer_stop(c->timer);
	uv_timer_stop(c->refresh_timer);
	struct atp_call *k = c->inflight;
	c->inflight = NULL;
	if (k) {
		http_cancel(c->http, k->http_id);
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "the attempt to %s was cancelled: shutting down", k->what);
		finish(k, ATP_ERR_CANCELLED, NULL, msg, k->procedure && !k->idempotent, NULL);
	}
	while ((k = c->head)) {
		q_unlink(c, k);
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "the attempt to %s was cancelled: shutting down", k->what);
		finish(k, ATP_ERR_CANCELLED, NULL, msg, false, NULL);
	}
	uv_close((uv_handle_t *)c->timer, on_timer_closed);
	uv_close((uv_handle_t *)c->refresh_timer, on_timer_closed);
	atp_session_clear(c);
	atp_config_free(&c->cfg);
	free(c);
}

uint64_t atp_enqueue(struct atp_client *c, const struct atp_call_spec *s, atp_done_fn cb, void *ud,
                     struct ga_err *err)
{
	if (c->closing) {
		err_set(err, "the Bluesky client is shutting down");
		return 0;
	}
	if (!s->what || !cb || (s->kind == ATP_CALL_USER && !s->nsid)) {
		err_set(err, "a Bluesky request needs an NSID, a description and a callback");
		return 0;
	}
	if (c->n_queued + (c->inflight ? 1 : 0) >= ATP_MAX_QUEUED) {
		err_set(err,
		        "%d Bluesky requests are already waiting; the attempt to %s was refused",
		        ATP_MAX_QUEUED, s->what);
		return 0;
	}
	if (s->needs_session && c->logins_refused && !c->access) {
		err_set(err, "could not %s: %s", s->what, c->login_error);
		return 0;
	}
	struct atp_call *k = xcalloc(1, sizeof *k);
	k->c = c;
	k->id = ++c->next_id;
	k->kind = s->kind;
	k->nsid = s->nsid ? xstrdup(s->nsid) : xstrdup("(session)");
	k->procedure = s->procedure;
	k->query = s->query ? xstrdup(s->query) : NULL;
	k->body = s->body ? cJSON_Duplicate(s->body, 1) : NULL;
	k->what = xstrdup(s->what);
	k->needs_session = s->needs_session;
	k->self_repo = s->self_repo;
	k->idempotent = s->idempotent;
	k->points = s->points;
	k->rclass = s->procedure ? ATP_RL_WRITE : ATP_RL_READ;
	k->enqueued_ms = atp_now_ms(c);
	k->cb = cb;
	k->ud = ud;
	q_push_back(c, k);
	c->stats.calls++;
	atp_kick(c);
	return k->id;
}

uint64_t atp_call(struct atp_client *c, const struct atp_req *req, atp_done_fn cb, void *ud,
                  struct ga_err *err)
{
	if (!req->nsid || !atp_valid_nsid(req->nsid)) {
		err_set(err, "'%.80s' is not an XRPC method name (NSID)",
		        req->nsid ? req->nsid : "(null)");
		return 0;
	}
	if (!req->what) {
		err_set(err, "a Bluesky request needs a description of what it attempts");
		return 0;
	}
	cJSON *body = NULL;
	if (req->body) {
		size_t n = strlen(req->body);
		if (n > ATP_MAX_BODY_BYTES) {
			err_set(err,
			        "the request to %s is %zu bytes, more than the %zu this client "
			        "sends; nothing was sent or cut",
			        req->what, n, ATP_MAX_BODY_BYTES);
			return 0;
		}
		struct ga_err perr = {{0}};
		body = json_parse(req->body, n, &perr);
		if (!cJSON_IsObject(body)) {
			cJSON_Delete(body);
			err_set(err, "the body of the request to %s is not a JSON object%s%s",
			        req->what, perr.msg[0] ? ": " : "", perr.msg);
			return 0;
		}
	}
	struct atp_call_spec s = {
	        .kind = ATP_CALL_USER,
	        .nsid = req->nsid,
	        .procedure = req->procedure,
	        .query = req->query,
	        .body = body,
	        .what = req->what,
	        .needs_session = !req->no_auth,
	        .idempotent = req->idempotent,
	        .points = req->points,
	};
	uint64_t id = atp_enqueue(c, &s, cb, ud, err);
	cJSON_Delete(body);
	return id;
}

uint64_t atp_login(struct atp_client *c, atp_done_fn cb, void *ud, struct ga_err *err)
{
	struct atp_call_spec s = {
	        .kind = ATP_CALL_ENSURE,
	        .what = "log in to Bluesky",
	        .needs_session = true,
	};
	return atp_enqueue(c, &s, cb, ud, err);
}

int atp_call_cancel(struct atp_client *c, uint64_t id)
{
	if (c->inflight && c->inflight->id == id && c->inflight->kind == ATP_CALL_USER) {
		struct atp_call *k = c->inflight;
		c->inflight = NULL;
		http_cancel(c->http, k->http_id);
		call_free(k);
		schedule(c, 0);
		return 0;
	}
	for (struct atp_call *k = c->head; k; k = k->next) {
		if (k->id == id && (k->kind == ATP_CALL_USER || k->kind == ATP_CALL_ENSURE)) {
			q_unlink(c, k);
			call_free(k);
			return 0;
		}
	}
	return -1;
}

int atp_rate_snapshot(struct atp_client *c, enum atp_rate_class cls, struct atp_budget *out)
{
	return atp_rate_budget(&c->rate, cls, atp_now_ms(c), out);
}

void atp_client_stats(const struct atp_client *c, struct atp_stats *out)
{
	*out = c->stats;
}

size_t atp_pending(const struct atp_client *c)
{
	return c->n_queued + (c->inflight ? 1 : 0);
}
