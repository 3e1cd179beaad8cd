/*
 * llm — the chat-completions client: configuration, calls, retries.
 *
 * A call owns its serialised body so a retry re-sends exactly the same
 * bytes. Retries wait on a per-call uv timer; the wait is computed by
 * llm_backoff_ms() so tests can check the policy without a clock.
 */
#include "adapters/llm/llm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#define LOG_COMP "llm"

struct call {
	struct call *prev, *next;
	struct llm_client *c;
	uint64_t id;
	char *body;
	size_t body_len;
	uint64_t http_id; /* 0 when no request is in flight */
	uv_timer_t timer;
	bool timer_inited;
	int attempts;
	llm_done_fn cb;
	void *ud;
};

struct llm_client {
	struct http_client *http;
	uv_loop_t *loop;
	struct llm_config cfg;
	char *url;
	char *auth_header; /* "Authorization: Bearer …" or NULL */
	struct call *calls;
	uint64_t next_id;
	struct llm_stats stats;
};

/* --- configuration --------------------------------------------------------------- */

static char *strip_slash(const char *url)
{
	char *s = xstrdup(url);
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

static void defaults(struct llm_config *cfg)
{
	cfg->timeout_ms = LLM_DEFAULT_TIMEOUT_MS;
	cfg->connect_timeout_ms = LLM_DEFAULT_CONNECT_TIMEOUT_MS;
	cfg->max_retries = LLM_DEFAULT_MAX_RETRIES;
	cfg->backoff_base_ms = LLM_DEFAULT_BACKOFF_BASE_MS;
	cfg->backoff_cap_ms = LLM_DEFAULT_BACKOFF_CAP_MS;
	cfg->max_body_bytes = 0;
}

void llm_config_init(struct llm_config *cfg, const char *base_url, const char *api_key,
                     const char *model)
{
	memset(cfg, 0, sizeof *cfg);
	defaults(cfg);
	cfg->base_url = strip_slash(base_url ? base_url : "");
	cfg->api_key = api_key && *api_key ? xstrdup(api_key) : NULL;
	cfg->model = xstrdup(model ? model : "");
	cfg->key_var = "LLM_API_KEY";
	cfg->model_var = "LLM_MODEL";
	cfg->url_var = "LLM_BASE_URL";
}

int llm_config_from_ga(const struct ga_config *ga, struct llm_config *cfg, struct ga_err *err)
{
	memset(cfg, 0, sizeof *cfg);
	if (ga->ai_gateway_api_key && *ga->ai_gateway_api_key) {
		llm_config_init(cfg,
		                ga->ai_gateway_base_url ? ga->ai_gateway_base_url
		                                        : CONFIG_DEFAULT_GATEWAY_URL,
		                ga->ai_gateway_api_key,
		                ga->ai_gateway_model ? ga->ai_gateway_model
		                                     : CONFIG_DEFAULT_GATEWAY_MODEL);
		cfg->key_var = "AI_GATEWAY_API_KEY";
		cfg->model_var = "AI_GATEWAY_MODEL";
		cfg->url_var = "AI_GATEWAY_BASE_URL";
		return 0;
	}
	if (ga->llm_base_url && *ga->llm_base_url) {
		if (!ga->llm_model || !*ga->llm_model)
			return err_set(err, "LLM_BASE_URL is set but LLM_MODEL is not: name the "
			                    "model to use (e.g. llama3.1 for Ollama)");
		llm_config_init(cfg, ga->llm_base_url, ga->llm_api_key, ga->llm_model);
		return 0;
	}
	return err_set(err, "no model is configured: set AI_GATEWAY_API_KEY (and optionally "
	                    "AI_GATEWAY_MODEL), or LLM_BASE_URL and LLM_MODEL (and LLM_API_KEY "
	                    "if the server needs one)");
}

void llm_config_free(struct llm_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->base_url);
	free(cfg->api_key);
	free(cfg->model);
	cfg->base_url = cfg->api_key = cfg->model = NULL;
}

static void config_copy(struct llm_config *dst, const struct llm_config *src)
{
	*dst = *src;
	dst->base_url = strip_slash(src->base_url ? src->base_url : "");
	dst->api_key = src->api_key ? xstrdup(src->api_key) : NULL;
	dst->model = xstrdup(src->model ? src->model : "");
	if (!dst->key_var)
		dst->key_var = "LLM_API_KEY";
	if (!dst->model_var)
		dst->model_var = "LLM_MODEL";
	if (!dst->url_var)
		dst->url_var = "LLM_BASE_URL";
}

/* --- client ---------------------------------------------------------------------------- */

struct llm_client *llm_client_new(struct http_client *http, const struct llm_config *cfg)
{
	struct llm_client *c = xcalloc(1, sizeof *c);
	c->http = http;
	c->loop = http_client_loop(http);
	config_copy(&c->cfg, cfg);
	c->url = xasprintf("%s/chat/completions", c->cfg.base_url);
	if (c->cfg.api_key) {
		c->auth_header = xasprintf("Authorization: Bearer %s", c->cfg.api_key);
		log_add_secret(c->cfg.api_key);
	}
	return c;
}

const struct llm_config *llm_client_config(const struct llm_client *c)
{
	return &c->cfg;
}

void llm_client_stats(const struct llm_client *c, struct llm_stats *out)
{
	*out = c->stats;
}

static void unlink_call(struct llm_client *c, struct call *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else if (c->calls == k)
		c->calls = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->prev = k->next = NULL;
}

static void on_call_timer_closed(uv_handle_t *h)
{
	free(h->data);
}

static void call_free(struct call *k)
{
	free(k->body);
	k->body = NULL;
	if (k->timer_inited) {
		uv_timer_stop(&k->timer);
		uv_close((uv_handle_t *)&k->timer, on_call_timer_closed);
	} else {
		free(k);
	}
}

static void finish(struct call *k, const struct llm_response *resp, const struct llm_error *err)
{
	struct llm_client *c = k->c;
	unlink_call(c, k);
	if (err && err->kind != LLM_OK) {
		c->stats.failures++;
		err_fmt(c->stats.last_error, sizeof c->stats.last_error, "%s", err->msg);
	}
	k->cb(k->ud, resp, err); /* may free the client: touch nothing after */
	call_free(k);
}

static void on_http_done(void *ud, const struct http_response *hr);

static int send_call(struct call *k, struct ga_err *err)
{
	struct llm_client *c = k->c;
	const char *headers[] = {"Content-Type: application/json", "Accept: application/json",
	                         c->auth_header, NULL};
	struct http_request req = {
	        .method = "POST",
	        .url = c->url,
	        .headers = headers,
	        .body = k->body,
	        .body_len = k->body_len,
	        .connect_timeout_ms = c->cfg.connect_timeout_ms,
	        .timeout_ms = c->cfg.timeout_ms,
	        .max_body_bytes = c->cfg.max_body_bytes,
	};
	k->http_id = http_request(c->http, &req, on_http_done, k, err);
	if (!k->http_id)
		return -1;
	k->attempts++;
	c->stats.requests++;
	return 0;
}

static void on_retry_timer(uv_timer_t *t)
{
	struct call *k = t->data;
	struct ga_err err = {{0}};
	if (send_call(k, &err) != 0) {
		struct llm_error e = {
		        .kind = LLM_ERR_TRANSIENT, .attempts = k->attempts, .retry_after_ms = -1};
		err_fmt(e.msg, sizeof e.msg, "retry could not be sent: %s", err.msg);
		finish(k, NULL, &e);
	}
}

static void on_http_done(void *ud, const struct http_response *hr)
{
	struct call *k = ud;
	struct llm_client *c = k->c;
	k->http_id = 0;
	struct llm_response resp;
	struct llm_error err;
	llm_parse_http(&c->cfg, hr->error, hr->error_msg, hr->status,
	               http_response_header(hr, "Content-Type"),
	               http_response_header(hr, "Retry-After"), hr->body, hr->body_len,
	               time_now_ms(), &resp, &err);
	err.attempts = k->attempts;
	if (err.kind == LLM_ERR_TRANSIENT && k->attempts <= c->cfg.max_retries) {
		double jitter = (double)random_below(1001) / 1000.0;
		uint64_t wait = llm_backoff_ms(c->cfg.backoff_base_ms, c->cfg.backoff_cap_ms,
		                               k->attempts, jitter, err.retry_after_ms);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "model request failed; retrying", "attempt",
		       LOG_INT(k->attempts), "wait_ms", LOG_INT(wait), "error", err.msg);
		c->stats.retries++;
		if (!k->timer_inited) {
			uv_timer_init(c->loop, &k->timer);
			k->timer.data = k;
			k->timer_inited = true;
		}
		uv_timer_start(&k->timer, on_retry_timer, wait, 0);
		return;
	}
	if (err.kind == LLM_OK) {
		c->stats.prompt_tokens += (uint64_t)resp.usage.prompt_tokens;
		c->stats.completion_tokens += (uint64_t)resp.usage.completion_tokens;
		finish(k, &resp, &err);
		llm_response_free(&resp);
		return;
	}
	if (err.kind != LLM_ERR_CANCELLED)
		log_kv(err.kind == LLM_ERR_FATAL ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN, LOG_COMP,
		       "model request failed", "kind", llm_error_kind_name(err.kind), "attempts",
		       LOG_INT(k->attempts), "error", err.msg);
	finish(k, NULL, &err);
}

uint64_t llm_chat(struct llm_client *c, const struct llm_request *req, llm_done_fn cb, void *ud,
                  struct ga_err *err)
{
	char *body = llm_build_body(req, c->cfg.model, err);
	if (!body)
		return 0;
	struct call *k = xcalloc(1, sizeof *k);
	k->c = c;
	k->id = ++c->next_id;
	k->body = body;
	k->body_len = strlen(body);
	k->cb = cb;
	k->ud = ud;
	if (send_call(k, err) != 0) {
		free(k->body);
		free(k);
		return 0;
	}
	k->next = c->calls;
	if (c->calls)
		c->calls->prev = k;
	c->calls = k;
	c->stats.calls++;
	return k->id;
}

void llm_cancel(struct llm_client *c, uint64_t id)
{
	for (struct call *k = c->calls; k; k = k->next) {
		if (k->id != id)
			continue;
		unlink_call(c, k);
		if (k->http_id)
			http_cancel(c->http, k->http_id);
		call_free(k);
		return;
	}
}

void llm_client_free(struct llm_client *c)
{
	if (!c)
		return;
	struct call *k;
	while ((k = c->calls)) {
		unlink_call(c, k);
		if (k->http_id)
			http_cancel(c->http, k->http_id);
		struct llm_error e = {
		        .kind = LLM_ERR_CANCELLED, .attempts = k->attempts, .retry_after_ms = -1};
		err_fmt(e.msg, sizeof e.msg, "the model call was cancelled: shutting down");
		k->cb(k->ud, NULL, &e);
		call_free(k);
	}
	free(c->url);
	free(c->auth_header);
	llm_config_free(&c->cfg);
	free(c);
}
