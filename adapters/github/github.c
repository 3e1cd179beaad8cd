/*
 * github — the client: configuration, the queue's policy (the queue, its
 * pump, timer and retries are adapters/http/callq.h), dispatch through the
 * rate limiter, classification and pagination. Endpoint helpers are in
 * endpoints.c.
 *
 * One call is in flight at a time (GitHub's own advice against secondary
 * limits): its lane is its rate-limit resource, so a spent search budget
 * does not stop issue comments.
 */
#include "adapters/github/github.h"

#include "adapters/github/etag.h"
#include "adapters/http/callq.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

#define LOG_COMP "github"

/* Fills err (may be NULL) and returns 0, the id of no call. */
static uint64_t refuse(struct ga_err *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static uint64_t refuse(struct ga_err *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return 0;
}

struct call {
	struct callq_call q; /* first: the queue's part (id, attempts, backoff, status) */
	struct gh_client *c;
	char *method;
	char *url; /* the page to fetch next */
	char *body;
	char *what;
	char *resource;
	char *items_field;
	char *if_none_match; /* "If-None-Match: <tag>" while a conditional GET is in flight */
	bool write, idempotent, list;
	size_t max_items, max_pages;
	cJSON *acc; /* merged list items */
	size_t n_acc;
	size_t pages;
	bool truncated;
	int64_t total_count;
	gh_done_fn cb;
	void *ud;
};

struct gh_client {
	struct http_client *http;
	struct gh_config cfg;
	char *auth_header;
	char *ua_header;
	struct gh_rate rate;
	struct callq *q;        /* the queue, its pump and timer, retries (callq.h) */
	struct gh_etags *etags; /* conditional GETs (etag.h) */
	bool closing;
	struct gh_stats stats;
};

/* --- configuration ------------------------------------------------------------ */

static char *strip_slash(const char *url)
{
	char *s = xstrdup(url);
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

void gh_config_init(struct gh_config *cfg, const char *api_url, const char *token,
                    const char *username)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->api_url = strip_slash(api_url && *api_url ? api_url : CONFIG_DEFAULT_GITHUB_API_URL);
	cfg->token = token && *token ? xstrdup(token) : NULL;
	cfg->username = username && *username ? xstrdup(username) : NULL;
	cfg->spacing_ms = GH_DEFAULT_SPACING_MS;
	cfg->write_spacing_ms = GH_DEFAULT_WRITE_SPACING_MS;
	cfg->low_budget = GH_DEFAULT_LOW_BUDGET;
	cfg->max_retries = GH_DEFAULT_MAX_RETRIES;
	cfg->backoff_base_ms = GH_DEFAULT_BACKOFF_BASE_MS;
	cfg->backoff_cap_ms = GH_DEFAULT_BACKOFF_CAP_MS;
	cfg->max_rate_retries = GH_DEFAULT_MAX_RATE_RETRIES;
	cfg->max_wait_ms = GH_DEFAULT_MAX_WAIT_MS;
	cfg->recheck_ms = GH_DEFAULT_RECHECK_MS;
	cfg->timeout_ms = GH_DEFAULT_TIMEOUT_MS;
}

int gh_config_from_ga(const struct ga_config *ga, struct gh_config *cfg, struct ga_err *err)
{
	memset(cfg, 0, sizeof *cfg);
	if (!ga->github_token || !*ga->github_token)
		return err_set(err, "GitHub is not configured: set AGENT_GITHUB_TOKEN (a personal "
		                    "access token) and AGENT_GITHUB_USERNAME");
	gh_config_init(cfg, ga->github_api_url, ga->github_token, ga->github_username);
	if (ga->github_spacing_ms >= 0)
		cfg->spacing_ms = (unsigned)ga->github_spacing_ms;
	if (ga->github_write_spacing_ms >= 0)
		cfg->write_spacing_ms = (unsigned)ga->github_write_spacing_ms;
	return 0;
}

void gh_config_free(struct gh_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->api_url);
	free(cfg->token);
	free(cfg->username);
	cfg->api_url = cfg->token = cfg->username = NULL;
}

static int64_t now_ms(const struct gh_client *c)
{
	if (c->cfg.clock.now_ms)
		return c->cfg.clock.now_ms(c->cfg.clock.ud);
	return time_now_ms();
}

/* --- small helpers ------------------------------------------------------------ */

const char *gh_error_kind_name(enum gh_error_kind k)
{
	switch (k) {
	case GH_OK:
		return "ok";
	case GH_ERR_AUTH:
		return "auth";
	case GH_ERR_FORBIDDEN:
		return "forbidden";
	case GH_ERR_NOT_FOUND:
		return "not_found";
	case GH_ERR_GONE:
		return "gone";
	case GH_ERR_INVALID:
		return "invalid";
	case GH_ERR_REFUSED:
		return "refused";
	case GH_ERR_RATE_LIMITED:
		return "rate_limited";
	case GH_ERR_TRANSIENT:
		return "transient";
	case GH_ERR_MALFORMED:
		return "malformed";
	case GH_ERR_CANCELLED:
		return "cancelled";
	}
	return "?";
}

bool gh_error_is_fatal(enum gh_error_kind k)
{
	return k == GH_ERR_AUTH;
}

uint64_t gh_backoff_ms(unsigned base_ms, unsigned cap_ms, int retry, double jitter_frac,
                       int64_t retry_after_ms)
{
	return callq_backoff_ms(base_ms, cap_ms, retry, jitter_frac, retry_after_ms);
}

/* Copies at most GH_MSG_QUOTE_MAX bytes of s into out, control characters
 * made spaces, never cutting a UTF-8 sequence. */
static void quote(const char *s, char *out, size_t cap)
{
	size_t n = utf8_copy(out, cap < GH_MSG_QUOTE_MAX + 1 ? cap : GH_MSG_QUOTE_MAX + 1, s);
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

/* Appends s to the NUL-terminated buf, cutting at cap. */
static void append(char *buf, size_t cap, const char *s)
{
	size_t n = strlen(buf), m = strlen(s);
	if (n + 1 >= cap)
		return;
	if (m > cap - 1 - n)
		m = cap - 1 - n;
	memcpy(buf + n, s, m);
	buf[n + m] = '\0';
}

/* GitHub's message plus, for validation failures, what errors[] names:
 * "Validation Failed: field 'title' of Issue is missing_field". */
static void github_says(const cJSON *root, bool html, char *out, size_t cap)
{
	char msg[GH_MSG_QUOTE_MAX + 1] = "";
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "message");
	if (cJSON_IsString(m) && m->valuestring[0])
		quote(m->valuestring, msg, sizeof msg);
	else
		append(msg, sizeof msg,
		       html ? "an HTML page instead of JSON" : "no message in the answer");
	out[0] = '\0';
	append(out, cap, msg);
	const cJSON *errs = cJSON_GetObjectItemCaseSensitive(root, "errors");
	const cJSON *e;
	int i = 0;
	cJSON_ArrayForEach(e, errs)
	{
		if (i >= 4)
			break;
		char part[GH_MSG_QUOTE_MAX + 1] = "";
		if (cJSON_IsString(e)) {
			quote(e->valuestring, part, sizeof part);
		} else {
			const cJSON *em = cJSON_GetObjectItemCaseSensitive(e, "message");
			const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "field");
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "resource");
			const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
			if (cJSON_IsString(em) && em->valuestring[0]) {
				quote(em->valuestring, part, sizeof part);
			} else {
				char fq[64] = "?", rq[64] = "?", cq[64] = "invalid";
				if (cJSON_IsString(f))
					quote(f->valuestring, fq, sizeof fq);
				if (cJSON_IsString(r))
					quote(r->valuestring, rq, sizeof rq);
				if (cJSON_IsString(code))
					quote(code->valuestring, cq, sizeof cq);
				err_fmt(part, sizeof part, "field '%s' of %s is %s", fq, rq, cq);
			}
		}
		if (!part[0])
			continue;
		append(out, cap, i++ == 0 ? ": " : "; ");
		append(out, cap, part);
	}
}

static bool header_is_zero(const char *v)
{
	if (!v)
		return false;
	while (*v == ' ')
		v++;
	return v[0] == '0' && (v[1] == '\0' || v[1] == ' ');
}

enum gh_error_kind gh_classify(long status, const char *content_type, const char *body,
                               size_t body_len, const char *(*hdr)(void *ud, const char *name),
                               void *hdr_ud, const char *what, bool have_token, int64_t now,
                               bool *rate_primary, int64_t *retry_after_ms, char *msg, size_t cap)
{
	*rate_primary = false;
	*retry_after_ms = -1;
	msg[0] = '\0';
	if (!body)
		body = "";
	bool html = is_html(content_type, body, body_len);
	if (status >= 200 && status < 300) {
		if (html) {
			err_fmt(msg, cap,
			        "GitHub answered the attempt to %s with an HTML page instead of "
			        "JSON (a proxy or an outage page)",
			        what);
			return GH_ERR_TRANSIENT;
		}
		return GH_OK;
	}
	cJSON *root = html ? NULL : cJSON_ParseWithLength(body, body_len);
	char says[GA_ERR_MSG_MAX];
	github_says(cJSON_IsObject(root) ? root : NULL, html, says, sizeof says);
	enum gh_error_kind kind;
	const char *ra = hdr ? hdr(hdr_ud, "retry-after") : NULL;
	if (ra) {
		int64_t d;
		if (http_parse_retry_after(ra, now, &d) == 0)
			*retry_after_ms = d;
	}
	if (status == 401) {
		kind = GH_ERR_AUTH;
		if (have_token)
			err_fmt(msg, cap,
			        "GitHub refused " GH_TOKEN_VAR " when trying to %s (401: %s): the "
			        "token is invalid, expired or revoked; set " GH_TOKEN_VAR
			        " to a valid token",
			        what, says);
		else
			err_fmt(msg, cap, "GitHub needs a token to %s (401: %s): set " GH_TOKEN_VAR,
			        what, says);
	} else if (status == 403 || status == 429) {
		/* Rate limit or permission: the headers say it first (remaining 0
		 * = primary, retry-after = secondary), then the documented body of
		 * a secondary limit (its documentation_url, or its message). */
		const char *rem = hdr ? hdr(hdr_ud, "x-ratelimit-remaining") : NULL;
		bool primary = header_is_zero(rem);
		bool secondary = ra != NULL;
		const cJSON *doc = cJSON_GetObjectItemCaseSensitive(root, "documentation_url");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "message");
		if (cJSON_IsString(doc) && strstr(doc->valuestring, "rate-limit"))
			secondary = true;
		if (cJSON_IsString(m) && strcasestr(m->valuestring, "rate limit"))
			secondary = true;
		if (status == 429 || primary || secondary) {
			kind = GH_ERR_RATE_LIMITED;
			*rate_primary = primary;
			err_fmt(msg, cap,
			        "GitHub's %s rate limit stopped the attempt to %s (%ld: %s)",
			        primary ? "primary" : "secondary", what, status, says);
		} else {
			kind = GH_ERR_FORBIDDEN;
			err_fmt(msg, cap,
			        "GitHub refused to %s (403: %s): " GH_TOKEN_VAR
			        " lacks the permission (check its scopes and repository access)",
			        what, says);
		}
	} else if (status == 404) {
		kind = GH_ERR_NOT_FOUND;
		err_fmt(msg, cap,
		        "GitHub could not %s (404: %s): it does not exist, or " GH_TOKEN_VAR
		        " cannot see it",
		        what, says);
	} else if (status == 410) {
		kind = GH_ERR_GONE;
		err_fmt(msg, cap,
		        "GitHub refused to %s (410: %s): it is gone or switched off on the "
		        "repository",
		        what, says);
	} else if (status == 422) {
		kind = GH_ERR_INVALID;
		err_fmt(msg, cap, "GitHub refused to %s as invalid (422: %s)", what, says);
	} else if (status >= 500 || status == 408) {
		kind = GH_ERR_TRANSIENT;
		err_fmt(msg, cap, "GitHub failed to %s (%ld: %s)", what, status, says);
	} else if (status >= 300 && status < 400) {
		kind = GH_ERR_REFUSED;
		err_fmt(msg, cap,
		        "GitHub answered the attempt to %s with a redirect (%ld), which is not "
		        "followed: the repository may have been renamed, or GITHUB_API_URL is "
		        "wrong",
		        what, status);
	} else {
		kind = GH_ERR_REFUSED;
		err_fmt(msg, cap, "GitHub refused to %s (%ld: %s)", what, status, says);
	}
	cJSON_Delete(root);
	return kind;
}

/* --- the queue's policy (callq.h) ------------------------------------------------ */

static struct call *call_of(struct callq_call *q)
{
	return (struct call *)q; /* q is the first member */
}

static void call_free(struct call *k)
{
	free(k->method);
	free(k->url);
	free(k->body);
	free(k->what);
	free(k->resource);
	free(k->items_field);
	free(k->if_none_match);
	cJSON_Delete(k->acc);
	free(k);
}

/* Ends a call: the callback, then the call is freed. */
static void finish(struct call *k, enum gh_error_kind kind, const cJSON *json, const char *msg,
                   bool maybe_applied)
{
	struct gh_client *c = k->c;
	struct gh_result r = {
	        .kind = kind,
	        .status = k->q.status,
	        .attempts = k->q.attempts,
	        .maybe_applied = maybe_applied,
	        .json = kind == GH_OK ? json : NULL,
	        .pages = k->pages,
	        .truncated = k->truncated,
	        .total_count = k->total_count,
	};
	err_fmt(r.msg, sizeof r.msg, "%s", msg ? msg : "");
	if (kind != GH_OK) {
		c->stats.failures++;
		err_fmt(c->stats.last_error, sizeof c->stats.last_error, "%s", r.msg);
		if (kind != GH_ERR_CANCELLED)
			log_kv(gh_error_is_fatal(kind) ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN, LOG_COMP,
			       "GitHub request failed", "kind", gh_error_kind_name(kind), "status",
			       LOG_INT(k->q.status), "attempts", LOG_INT(k->q.attempts), "error",
			       r.msg);
	}
	k->cb(k->ud, &r);
	call_free(k);
}

/* callq ended a call that got no answer. */
static void q_end(void *ud, struct callq_call *qk, enum callq_end why, const char *msg,
                  bool maybe_applied)
{
	(void)ud;
	enum gh_error_kind kind = why == CALLQ_END_CANCELLED      ? GH_ERR_CANCELLED
	                          : why == CALLQ_END_RATE_LIMITED ? GH_ERR_RATE_LIMITED
	                                                          : GH_ERR_TRANSIENT;
	finish(call_of(qk), kind, NULL, msg, maybe_applied);
}

static int64_t q_now(void *ud)
{
	return now_ms(ud);
}

static int64_t q_wait_ms(void *ud, struct callq_call *qk, int64_t now, enum callq_wait *why)
{
	struct gh_client *c = ud;
	struct call *k = call_of(qk);
	enum gh_wait_reason w = GH_WAIT_NONE;
	int64_t ms = gh_rate_wait_ms(&c->rate, k->resource, k->write, now, &w);
	*why = (enum callq_wait)w;
	return ms;
}

static const char *q_wait_name(enum callq_wait w)
{
	return gh_wait_reason_name((enum gh_wait_reason)w);
}

/* --- dispatch ------------------------------------------------------------------------- */

static int q_send(void *ud, struct callq_call *qk, int64_t now, struct ga_err *err)
{
	struct gh_client *c = ud;
	struct call *k = call_of(qk);
	const char *headers[8];
	size_t n = 0;
	headers[n++] = "Accept: application/vnd.github+json";
	headers[n++] = "X-GitHub-Api-Version: " GH_API_VERSION;
	if (c->auth_header)
		headers[n++] = c->auth_header;
	headers[n++] = c->ua_header;
	if (k->body)
		headers[n++] = "Content-Type: application/json";
	/* A GET seen before with an ETag asks whether it changed: GitHub
	 * answers 304, which does not count against the rate limit. */
	struct gh_etag_entry seen;
	free(k->if_none_match);
	k->if_none_match = NULL;
	if (!k->write && gh_etag_find(c->etags, k->url, &seen)) {
		k->if_none_match = xasprintf("If-None-Match: %s", seen.tag);
		headers[n++] = k->if_none_match;
	}
	headers[n] = NULL;
	struct http_request req = {
	        .method = k->method,
	        .url = k->url,
	        .headers = headers,
	        .body = k->body,
	        .body_len = k->body ? strlen(k->body) : 0,
	        .timeout_ms = c->cfg.timeout_ms,
	};
	if (callq_start(c->q, qk, &req, err) != 0)
		return -1;
	gh_rate_started(&c->rate, k->resource, k->write, now);
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "request", "method", k->method, "url", k->url);
	return 0;
}

/* --- completion ------------------------------------------------------------------------- */

struct hdr_ctx {
	const struct http_response *hr;
};

static const char *hdr_lookup(void *ud, const char *name)
{
	return http_response_header(((struct hdr_ctx *)ud)->hr, name);
}

/* Adds a page to the merged list. Returns 1 when another page is to be
 * fetched (k->url set), 0 when the list is complete, -1 with msg when the
 * page is malformed. */
static int merge_page(struct gh_client *c, struct call *k, cJSON *root, const char *link, char *msg,
                      size_t cap)
{
	cJSON *items = root;
	if (k->items_field) {
		const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "total_count");
		if (cJSON_IsNumber(tc))
			k->total_count = (int64_t)tc->valuedouble;
		items = cJSON_GetObjectItemCaseSensitive(root, k->items_field);
	}
	if (!cJSON_IsArray(items)) {
		if (k->items_field)
			err_fmt(msg, cap, "GitHub's answer to the attempt to %s has no '%s' array",
			        k->what, k->items_field);
		else
			err_fmt(msg, cap,
			        "GitHub's answer to the attempt to %s is not a JSON array",
			        k->what);
		return -1;
	}
	if (!k->acc)
		k->acc = cJSON_CreateArray();
	k->pages++;
	cJSON *it;
	while ((it = items->child) && k->n_acc < k->max_items) {
		cJSON_DetachItemViaPointer(items, it);
		cJSON_AddItemToArray(k->acc, it);
		k->n_acc++;
	}
	bool more_here = items->child != NULL;
	char next[GH_URL_MAX];
	int ln = gh_link_next(link, next, sizeof next);
	if (ln < 0) {
		err_fmt(msg, cap, "GitHub's Link header for the attempt to %s could not be read",
		        k->what);
		return -1;
	}
	if (more_here || (ln == 1 && (k->n_acc >= k->max_items || k->pages >= k->max_pages))) {
		k->truncated = true;
		return 0;
	}
	if (ln == 0)
		return 0;
	size_t bl = strlen(c->cfg.api_url);
	if (strncmp(next, c->cfg.api_url, bl) != 0 || next[bl] != '/') {
		char q[GH_MSG_QUOTE_MAX + 1];
		quote(next, q, sizeof q);
		err_fmt(msg, cap,
		        "GitHub's next page for the attempt to %s is at '%s', outside "
		        "GITHUB_API_URL "
		        "(%s): it is not followed with the token",
		        k->what, q, c->cfg.api_url);
		return -1;
	}
	free(k->url);
	k->url = xstrdup(next);
	return 1;
}

static void q_answered(void *ud, struct callq_call *qk, const struct http_response *hr, int64_t now)
{
	struct gh_client *c = ud;
	struct call *k = call_of(qk);
	if (hr->status > 0) {
		const char *res = http_response_header(hr, "x-ratelimit-resource");
		gh_rate_observe(&c->rate, res ? res : k->resource,
		                http_response_header(hr, "x-ratelimit-limit"),
		                http_response_header(hr, "x-ratelimit-remaining"),
		                http_response_header(hr, "x-ratelimit-reset"), now);
	}
	if (hr->error != HTTP_OK) {
		callq_unanswered(c->q, qk, hr);
		return;
	}
	bool primary = false;
	int64_t retry_after = -1;
	char msg[GA_ERR_MSG_MAX];
	struct hdr_ctx hc = {hr};
	/* The answer as the rest of the code sees it: a 304 to a conditional
	 * GET is the stored 200 it confirms. */
	long status = hr->status;
	const char *body = hr->body, *link = http_response_header(hr, "Link");
	size_t body_len = hr->body_len;
	struct gh_etag_entry seen;
	if (k->if_none_match && status == 304) {
		if (!gh_etag_find(c->etags, k->url, &seen)) {
			callq_retry(c->q, qk,
			            "GitHub answered 304 to a request the client has no copy of",
			            true, false, -1);
			return;
		}
		c->stats.not_modified++;
		status = qk->status = 200;
		body = seen.body;
		body_len = seen.body_len;
		link = seen.link;
	}
	enum gh_error_kind kind = gh_classify(
	        status, http_response_header(hr, "Content-Type"), body, body_len, hdr_lookup, &hc,
	        k->what, c->auth_header != NULL, now, &primary, &retry_after, msg, sizeof msg);
	if (kind == GH_OK && !k->write && hr->status == 200) {
		const char *tag = http_response_header(hr, "ETag");
		if (tag)
			gh_etag_put(c->etags, k->url, tag, body, body_len, link);
		else
			gh_etag_drop(c->etags, k->url);
	}
	switch (kind) {
	case GH_OK: {
		gh_rate_success(&c->rate);
		qk->transient_fails = 0;
		size_t i = 0;
		while (i < body_len && isspace((unsigned char)body[i]))
			i++;
		if (i == body_len) { /* 204, 205 */
			finish(k, GH_OK, k->acc, NULL, false);
			break;
		}
		struct ga_err perr = {{0}};
		cJSON *root = json_parse(body, body_len, &perr);
		if (!root) {
			err_fmt(msg, sizeof msg,
			        "GitHub's answer to the attempt to %s is not valid JSON (%s)",
			        k->what, perr.msg);
			finish(k, GH_ERR_MALFORMED, NULL, msg, false);
			break;
		}
		if (!k->list) {
			finish(k, GH_OK, root, NULL, false);
			cJSON_Delete(root);
			break;
		}
		int more = merge_page(c, k, root, link, msg, sizeof msg);
		cJSON_Delete(root);
		if (more < 0)
			finish(k, GH_ERR_MALFORMED, NULL, msg, false);
		else if (more == 1)
			callq_push_front(c->q, qk);
		else
			finish(k, GH_OK, k->acc, NULL, false);
		break;
	}
	case GH_ERR_RATE_LIMITED: {
		int64_t wait = gh_rate_limited(&c->rate, k->resource, primary, retry_after, now);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "GitHub rate limit", "kind",
		       primary ? "primary" : "secondary", "wait_ms", LOG_INT(wait), "what",
		       k->what);
		char full[GA_ERR_MSG_MAX];
		if (!callq_rate_hit(c->q, qk, msg, full, sizeof full))
			finish(k, GH_ERR_RATE_LIMITED, NULL, full, false);
		break;
	}
	case GH_ERR_TRANSIENT:
		/* A 5xx after a write leaves its outcome unknown. */
		callq_retry(c->q, qk, msg, !qk->unsafe, qk->unsafe, retry_after);
		break;
	default:
		finish(k, kind, NULL, msg, false);
		break;
	}
}

/* --- public ------------------------------------------------------------------------------ */

struct gh_client *gh_client_new(struct http_client *http, const struct gh_config *cfg)
{
	static const struct callq_ops ops = {
	        .now_ms = q_now,
	        .wait_ms = q_wait_ms,
	        .send = q_send,
	        .answered = q_answered,
	        .end = q_end,
	        .wait_name = q_wait_name,
	};
	struct gh_client *c = xcalloc(1, sizeof *c);
	c->http = http;
	c->cfg = *cfg;
	c->cfg.api_url = strip_slash(cfg->api_url ? cfg->api_url : CONFIG_DEFAULT_GITHUB_API_URL);
	c->cfg.token = cfg->token && *cfg->token ? xstrdup(cfg->token) : NULL;
	c->cfg.username = cfg->username && *cfg->username ? xstrdup(cfg->username) : NULL;
	if (c->cfg.token) {
		c->auth_header = xasprintf("Authorization: Bearer %s", c->cfg.token);
		log_add_secret(c->cfg.token);
	}
	/* GitHub asks for a User-Agent naming the program or the account. */
	if (c->cfg.username)
		c->ua_header = xasprintf("User-Agent: " HTTP_USER_AGENT " (github.com/%s)",
		                         c->cfg.username);
	else
		c->ua_header = xstrdup("User-Agent: " HTTP_USER_AGENT);
	gh_rate_init(&c->rate, c->cfg.spacing_ms, c->cfg.write_spacing_ms, c->cfg.low_budget);
	c->etags = gh_etags_new(GH_ETAG_ENTRIES, GH_ETAG_MAX_BYTES, GH_ETAG_MAX_IDLE);
	struct callq_config qc = {
	        .service = "GitHub",
	        .log_comp = LOG_COMP,
	        .wait_log_level = LOG_LEVEL_DEBUG,
	        .max_calls = GH_MAX_QUEUED,
	        .max_lanes = GH_RATE_BUCKETS_MAX + 1,
	        .max_retries = c->cfg.max_retries,
	        .backoff_base_ms = c->cfg.backoff_base_ms,
	        .backoff_cap_ms = c->cfg.backoff_cap_ms,
	        .max_rate_retries = c->cfg.max_rate_retries,
	        .max_wait_ms = c->cfg.max_wait_ms,
	        .recheck_ms = c->cfg.recheck_ms,
	};
	c->q = callq_new(http, &ops, c, &qc);
	return c;
}

void gh_client_free(struct gh_client *c)
{
	if (!c)
		return;
	c->closing = true;
	callq_free(c->q);
	c->q = NULL;
	gh_etags_free(c->etags);
	free(c->auth_header);
	free(c->ua_header);
	gh_config_free(&c->cfg);
	free(c);
}

static bool is_write(const char *method)
{
	return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
}

uint64_t gh_call(struct gh_client *c, const struct gh_req *req, gh_done_fn cb, void *ud,
                 struct ga_err *err)
{
	if (c->closing)
		return refuse(err, "the GitHub client is shutting down");
	if (!req->method || !req->path || req->path[0] != '/' || !req->what || !cb) {
		err_set(err, "a GitHub request needs a method, a path starting with '/', a "
		             "description and a callback");
		return 0;
	}
	bool write = is_write(req->method);
	if (write && !c->auth_header) {
		err_set(err,
		        GH_TOKEN_VAR " is not set: GitHub does not let anyone %s without a "
		                     "token",
		        req->what);
		return 0;
	}
	size_t body_len = req->body ? strlen(req->body) : 0;
	if (body_len > GH_MAX_BODY_BYTES) {
		err_set(err,
		        "the request to %s is %zu bytes, more than the %zu this client sends; "
		        "nothing was sent or cut",
		        req->what, body_len, GH_MAX_BODY_BYTES);
		return 0;
	}
	struct call *k = xcalloc(1, sizeof *k);
	k->c = c;
	k->method = xstrdup(req->method);
	k->url = xasprintf("%s%s", c->cfg.api_url, req->path);
	k->body = req->body ? xstrdup(req->body) : NULL;
	k->what = xstrdup(req->what);
	k->resource = xstrdup(req->resource && *req->resource ? req->resource : "core");
	k->items_field = req->items_field ? xstrdup(req->items_field) : NULL;
	k->write = write;
	k->idempotent = req->idempotent || strcmp(req->method, "PUT") == 0 ||
	                strcmp(req->method, "PATCH") == 0 || strcmp(req->method, "DELETE") == 0;
	k->list = req->list;
	k->max_items = req->max_items ? req->max_items : GH_DEFAULT_MAX_ITEMS;
	if (k->max_items > GH_MAX_ITEMS_CAP)
		k->max_items = GH_MAX_ITEMS_CAP;
	k->max_pages = req->max_pages ? req->max_pages : GH_DEFAULT_MAX_PAGES;
	if (k->max_pages > GH_MAX_PAGES_CAP)
		k->max_pages = GH_MAX_PAGES_CAP;
	k->total_count = -1;
	k->cb = cb;
	k->ud = ud;
	/* The queue's part: the lane is the rate-limit resource. */
	k->q.what = k->what;
	k->q.lane = k->resource;
	k->q.unsafe = k->write && !k->idempotent;
	uint64_t id = callq_push(c->q, &k->q, err);
	if (!id) {
		call_free(k);
		return 0;
	}
	c->stats.calls++;
	return id;
}

int gh_cancel(struct gh_client *c, uint64_t id)
{
	struct callq_call *qk = callq_find(c->q, id);
	if (!qk)
		return -1;
	callq_remove(c->q, qk);
	call_free(call_of(qk));
	return 0;
}

int gh_rate_snapshot(struct gh_client *c, const char *resource, struct gh_bucket *out)
{
	return gh_rate_bucket(&c->rate, resource, now_ms(c), out);
}

void gh_client_stats(const struct gh_client *c, struct gh_stats *out)
{
	*out = c->stats;
	struct callq_counts n;
	callq_counts(c->q, &n);
	out->requests = n.requests;
	out->retries = n.retries;
	out->rate_limited = n.rate_limited;
}

size_t gh_pending(const struct gh_client *c)
{
	return callq_pending(c->q);
}
