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
#include "common/utf8.h"
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
	size_t n = utf8_copy(out, cap < ATP_MSG_QUOTE_MAX + 1 ? cap : ATP_MSG_QUOTE_MAX + 1, s);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20)
			out[i] = ' ';
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

/* --- the queue's policy (callq.h) --------------------------------------------- */

static struct atp_call *call_of(struct callq_call *q)
{
	return (struct atp_call *)q; /* q is the first member */
}

static void call_free(struct atp_call *k)
{
	free(k->nsid);
	free(k->query);
	free(k->what);
	cJSON_Delete(k->body);
	free(k);
}

/* What the queue needs to know of a call: its description, its lane (the
 * rate class: a held class is passed over by calls of another) and
 * whether repeating it could do it twice. */
static void queue_part(struct atp_call *k)
{
	k->q.what = k->what;
	k->q.lane = atp_rate_class_name(k->rclass);
	k->q.unsafe = k->procedure && !k->idempotent;
}

void atp_kick(struct atp_client *c)
{
	callq_kick(c->q);
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
	        .status = k->q.status,
	        .attempts = k->q.attempts,
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
			       atp_error_kind_name(kind), "status", LOG_INT(k->q.status),
			       "attempts", LOG_INT(k->q.attempts), "error", r.msg);
	}
	k->cb(k->ud, &r);
	call_free(k);
}

/* callq ended a call that got no answer. */
static void q_end(void *ud, struct callq_call *qk, enum callq_end why, const char *msg,
                  bool maybe_applied)
{
	(void)ud;
	enum atp_error_kind kind = why == CALLQ_END_CANCELLED      ? ATP_ERR_CANCELLED
	                           : why == CALLQ_END_RATE_LIMITED ? ATP_ERR_RATE_LIMITED
	                                                           : ATP_ERR_TRANSIENT;
	finish(call_of(qk), kind, NULL, msg, maybe_applied, NULL);
}

static int64_t q_now(void *ud)
{
	return atp_now_ms(ud);
}

static int64_t q_wait_ms(void *ud, struct callq_call *qk, int64_t now, enum callq_wait *why)
{
	struct atp_client *c = ud;
	struct atp_call *k = call_of(qk);
	enum atp_wait_reason w = ATP_WAIT_NONE;
	int64_t ms = atp_rate_wait_ms(&c->rate, k->rclass, k->points, now, &w);
	*why = (enum callq_wait)w;
	return ms;
}

static const char *q_wait_name(enum callq_wait w)
{
	return atp_wait_reason_name((enum atp_wait_reason)w);
}

/* --- the session (session.c) -------------------------------------------------------- */

/* Queues a session step at the head (calls that need the session wait
 * behind it). */
static void start_step(struct atp_client *c, enum atp_call_kind kind)
{
	struct atp_call *k = atp_session_call(c, kind);
	queue_part(k);
	callq_push_front(c->q, &k->q);
	c->session_busy = true;
}

/* The calls waiting for the session learn why it could not be had. They
 * are taken out first: a callback that enqueues again must not be failed
 * in the same sweep (nor loop forever). */
static void fail_waiting(struct atp_client *c, enum atp_error_kind kind)
{
	struct callq_call *list = NULL, **tail = &list;
	for (struct callq_call *w = callq_head(c->q); w;) {
		struct callq_call *next = w->next;
		if (call_of(w)->needs_session) {
			callq_remove(c->q, w);
			*tail = w;
			tail = &w->next;
		}
		w = next;
	}
	while (list) {
		struct callq_call *w = list;
		list = w->next;
		w->next = NULL;
		char full[GA_ERR_MSG_MAX];
		err_fmt(full, sizeof full, "could not %s: %s", w->what, c->session_error);
		finish(call_of(w), kind, NULL, full, false, NULL);
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

/* Before the rate policy: a call that needs the session waits for a step
 * (queued at the head), fails when none can be had, and atp_login's
 * call ends as soon as the session is usable. */
static enum callq_admit q_admit(void *ud, struct callq_call *qk, int64_t now)
{
	struct atp_client *c = ud;
	struct atp_call *k = call_of(qk);
	if (!k->needs_session)
		return CALLQ_ADMIT_GO;
	char why[GA_ERR_MSG_MAX] = "";
	enum atp_session_next st = atp_session_next(c, now, why, sizeof why);
	if (st == ATP_SESSION_REFRESH || st == ATP_SESSION_LOGIN) {
		start_step(c, st == ATP_SESSION_REFRESH ? ATP_CALL_REFRESH_SESSION
		                                        : ATP_CALL_CREATE_SESSION);
		return CALLQ_ADMIT_RESCAN; /* a session step now heads the queue */
	}
	if (st == ATP_SESSION_BUSY)
		return CALLQ_ADMIT_PASS;
	if (st == ATP_SESSION_FAIL) {
		callq_remove(c->q, qk);
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "could not %s: %s", k->what, why);
		finish(k, ATP_ERR_AUTH, NULL, msg, false, NULL);
		return CALLQ_ADMIT_RESCAN;
	}
	if (k->kind == ATP_CALL_ENSURE) {
		callq_remove(c->q, qk);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "did", c->did);
		cJSON_AddStringToObject(o, "handle", c->handle);
		finish(k, ATP_OK, o, NULL, false, NULL);
		cJSON_Delete(o);
		return CALLQ_ADMIT_RESCAN;
	}
	return CALLQ_ADMIT_GO;
}

/* --- dispatch ------------------------------------------------------------------------- */

static int q_send(void *ud, struct callq_call *qk, int64_t now, struct ga_err *err)
{
	struct atp_client *c = ud;
	struct atp_call *k = call_of(qk);
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
	int rc = callq_start(c->q, qk, &req, err);
	free(auth);
	free(body);
	if (rc != 0) {
		free(url);
		return -1;
	}
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

/* --- completion ------------------------------------------------------------------------- */

static bool only_space(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return false;
	return true;
}

static void q_answered(void *ud, struct callq_call *qk, const struct http_response *hr, int64_t now)
{
	struct atp_client *c = ud;
	struct atp_call *k = call_of(qk);
	const char *reset = NULL;
	if (hr->status > 0) {
		reset = http_response_header(hr, "ratelimit-reset");
		atp_rate_observe(&c->rate, k->rclass, http_response_header(hr, "ratelimit-limit"),
		                 http_response_header(hr, "ratelimit-remaining"), reset,
		                 http_response_header(hr, "ratelimit-policy"), now);
	}
	if (hr->error != HTTP_OK) {
		callq_unanswered(c->q, qk, hr);
		return;
	}
	bool auth_expired = false, rate_limited = false;
	char msg[GA_ERR_MSG_MAX], xerr[ATP_XRPC_ERROR_MAX];
	enum atp_error_kind kind =
	        atp_classify(hr->status, http_response_header(hr, "Content-Type"), hr->body,
	                     hr->body_len, k->what, http_response_header(hr, "ratelimit-remaining"),
	                     &auth_expired, &rate_limited, xerr, msg, sizeof msg);
	if (kind == ATP_OK) {
		qk->transient_fails = 0;
		if (only_space(hr->body, hr->body_len)) {
			finish(k, ATP_OK, NULL, NULL, false, NULL);
			return;
		}
		struct ga_err perr = {{0}};
		cJSON *root = json_parse(hr->body, hr->body_len, &perr);
		if (!cJSON_IsObject(root)) {
			err_fmt(msg, sizeof msg,
			        "Bluesky's answer to the attempt to %s is not a JSON object%s%s",
			        k->what, perr.msg[0] ? ": " : "", perr.msg);
			finish(k, ATP_ERR_MALFORMED, NULL, msg, false, NULL);
		} else {
			finish(k, ATP_OK, root, NULL, false, NULL);
		}
		cJSON_Delete(root);
		return;
	}
	if (rate_limited) {
		int64_t reset_ms = 0, retry_after = -1, rs;
		if (reset && sscanf(reset, "%" SCNd64, &rs) == 1 && rs > 0 && rs < INT64_MAX / 1000)
			reset_ms = rs * 1000;
		const char *ra = http_response_header(hr, "retry-after");
		if (ra)
			http_parse_retry_after(ra, now, &retry_after);
		int64_t wait = atp_rate_limited(&c->rate, k->rclass, reset_ms, retry_after, now);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "Bluesky rate limit", "class",
		       atp_rate_class_name(k->rclass), "wait_ms", LOG_INT(wait), "what", k->what);
		char full[GA_ERR_MSG_MAX];
		if (!callq_rate_hit(c->q, qk, msg, full, sizeof full))
			finish(k, ATP_ERR_RATE_LIMITED, NULL, full, false, xerr);
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
			callq_push_front(c->q, qk);
			return;
		}
		char full[GA_ERR_MSG_MAX];
		err_fmt(full, sizeof full, "%s, again after the session was refreshed", msg);
		finish(k, ATP_ERR_AUTH, NULL, full, false, xerr);
		return;
	}
	if (kind == ATP_ERR_TRANSIENT) {
		/* A 5xx after a write leaves its outcome unknown. */
		callq_retry(c->q, qk, msg, !qk->unsafe, qk->unsafe, -1);
		return;
	}
	finish(k, kind, NULL, msg, false, xerr);
}

/* --- public ------------------------------------------------------------------------------ */

struct atp_client *atp_client_new(struct http_client *http, const struct atp_config *cfg)
{
	static const struct callq_ops ops = {
	        .now_ms = q_now,
	        .admit = q_admit,
	        .wait_ms = q_wait_ms,
	        .send = q_send,
	        .answered = q_answered,
	        .end = q_end,
	        .wait_name = q_wait_name,
	};
	struct atp_client *c = xcalloc(1, sizeof *c);
	c->http = http;
	c->cfg = *cfg;
	c->cfg.service = strip_slash(cfg->service ? cfg->service : CONFIG_DEFAULT_BLUESKY_SERVICE);
	c->cfg.identifier = dup_or_null(cfg->identifier);
	c->cfg.password = dup_or_null(cfg->password);
	c->cfg.session_path = dup_or_null(cfg->session_path);
	atp_secret(c->cfg.password);
	atp_rate_init(&c->rate, c->cfg.spacing_ms, c->cfg.low_budget);
	struct callq_config qc = {
	        .service = "Bluesky",
	        .log_comp = LOG_COMP,
	        .wait_log_level = LOG_LEVEL_INFO,
	        .max_calls = ATP_MAX_QUEUED,
	        .max_lanes = ATP_RL_COUNT,
	        .max_retries = c->cfg.max_retries,
	        .backoff_base_ms = c->cfg.backoff_base_ms,
	        .backoff_cap_ms = c->cfg.backoff_cap_ms,
	        .max_rate_retries = c->cfg.max_rate_retries,
	        .max_wait_ms = c->cfg.max_wait_ms,
	        .recheck_ms = c->cfg.recheck_ms,
	};
	c->q = callq_new(http, &ops, c, &qc);
	c->refresh_timer = xcalloc(1, sizeof *c->refresh_timer);
	uv_timer_init(http_client_loop(http), c->refresh_timer);
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
	uv_timer_stop(c->refresh_timer);
	callq_free(c->q);
	c->q = NULL;
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
	if (s->needs_session && c->logins_refused && !c->access) {
		err_set(err, "could not %s: %s", s->what, c->login_error);
		return 0;
	}
	struct atp_call *k = xcalloc(1, sizeof *k);
	k->c = c;
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
	k->cb = cb;
	k->ud = ud;
	queue_part(k);
	uint64_t id = callq_push(c->q, &k->q, err);
	if (!id) {
		call_free(k);
		return 0;
	}
	c->stats.calls++;
	return id;
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
	struct callq_call *qk = callq_find(c->q, id);
	if (!qk)
		return -1;
	struct atp_call *k = call_of(qk);
	if (k->kind != ATP_CALL_USER && k->kind != ATP_CALL_ENSURE)
		return -1; /* a session step is the client's own */
	callq_remove(c->q, qk);
	call_free(k);
	return 0;
}

int atp_rate_snapshot(struct atp_client *c, enum atp_rate_class cls, struct atp_budget *out)
{
	return atp_rate_budget(&c->rate, cls, atp_now_ms(c), out);
}

void atp_client_stats(const struct atp_client *c, struct atp_stats *out)
{
	*out = c->stats;
	struct callq_counts n;
	callq_counts(c->q, &n);
	out->requests = n.requests;
	out->retries = n.retries;
	out->rate_limited = n.rate_limited;
}

size_t atp_pending(const struct atp_client *c)
{
	return callq_pending(c->q);
}
