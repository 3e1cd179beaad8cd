/*
 * llm_wire — the OpenAI chat-completions wire format and the error tiers.
 *
 * Everything here is pure (no I/O, no clock): the client feeds it what the
 * HTTP adapter returned, and the fuzzer feeds it anything at all.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/http/callq.h"
#include "adapters/llm/llm.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

const char *llm_error_kind_name(enum llm_error_kind k)
{
	switch (k) {
	case LLM_OK:
		return "ok";
	case LLM_ERR_TRANSIENT:
		return "transient";
	case LLM_ERR_FATAL:
		return "fatal";
	case LLM_ERR_MALFORMED:
		return "malformed";
	case LLM_ERR_REQUEST:
		return "request";
	case LLM_ERR_CANCELLED:
		return "cancelled";
	}
	return "unknown";
}

const char *llm_role_name(enum llm_role r)
{
	switch (r) {
	case LLM_ROLE_SYSTEM:
		return "system";
	case LLM_ROLE_USER:
		return "user";
	case LLM_ROLE_ASSISTANT:
		return "assistant";
	case LLM_ROLE_TOOL:
		return "tool";
	}
	return "user";
}

uint64_t llm_backoff_ms(unsigned base_ms, unsigned cap_ms, int retry, double jitter_frac,
                        int64_t retry_after_ms)
{
	return callq_backoff_ms(base_ms, cap_ms, retry, jitter_frac, retry_after_ms);
}

/* --- request ------------------------------------------------------------------ */

static cJSON *tool_calls_json(const struct llm_tool_call *tc, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", tc[i].id ? tc[i].id : "");
		cJSON_AddStringToObject(o, "type", "function");
		cJSON *fn = cJSON_AddObjectToObject(o, "function");
		cJSON_AddStringToObject(fn, "name", tc[i].name ? tc[i].name : "");
		cJSON_AddStringToObject(fn, "arguments", tc[i].arguments ? tc[i].arguments : "{}");
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

char *llm_build_body(const struct llm_request *req, const char *model, struct ga_err *err)
{
	if (!model || !*model) {
		err_set(err, "no model name to send");
		return NULL;
	}
	if (req->n_messages == 0) {
		err_set(err, "a chat request needs at least one message");
		return NULL;
	}
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "model", model);
	cJSON *msgs = cJSON_AddArrayToObject(root, "messages");
	for (size_t i = 0; i < req->n_messages; i++) {
		const struct llm_message *m = &req->messages[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "role", llm_role_name(m->role));
		if (m->role == LLM_ROLE_TOOL) {
			if (!m->tool_call_id) {
				cJSON_Delete(o);
				cJSON_Delete(root);
				err_set(err, "messages[%zu] is a tool result without tool_call_id",
				        i);
				return NULL;
			}
			cJSON_AddStringToObject(o, "tool_call_id", m->tool_call_id);
		}
		if (m->content)
			cJSON_AddStringToObject(o, "content", m->content);
		else if (m->role == LLM_ROLE_ASSISTANT && m->n_tool_calls)
			cJSON_AddNullToObject(o, "content");
		else
			cJSON_AddStringToObject(o, "content", "");
		if (m->role == LLM_ROLE_ASSISTANT && m->n_tool_calls)
			cJSON_AddItemToObject(o, "tool_calls",
			                      tool_calls_json(m->tool_calls, m->n_tool_calls));
		cJSON_AddItemToArray(msgs, o);
	}
	if (req->n_tools) {
		cJSON *tools = cJSON_AddArrayToObject(root, "tools");
		for (size_t i = 0; i < req->n_tools; i++) {
			const struct llm_tool_def *t = &req->tools[i];
			struct ga_err perr = {{0}};
			cJSON *params = NULL;
			if (t->parameters_json)
				params = json_parse(t->parameters_json, strlen(t->parameters_json),
				                    &perr);
			else
				params = cJSON_Parse("{\"type\":\"object\",\"properties\":{}}");
			if (!params || !cJSON_IsObject(params)) {
				cJSON_Delete(params);
				cJSON_Delete(root);
				err_set(err,
				        "tool '%s': parameters must be a JSON Schema object%s%s",
				        t->name ? t->name : "(unnamed)", perr.msg[0] ? ": " : "",
				        perr.msg);
				return NULL;
			}
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "type", "function");
			cJSON *fn = cJSON_AddObjectToObject(o, "function");
			cJSON_AddStringToObject(fn, "name", t->name ? t->name : "");
			if (t->description)
				cJSON_AddStringToObject(fn, "description", t->description);
			cJSON_AddItemToObject(fn, "parameters", params);
			cJSON_AddItemToArray(tools, o);
		}
	}
	switch (req->tool_choice) {
	case LLM_TOOL_CHOICE_DEFAULT:
		break;
	case LLM_TOOL_CHOICE_AUTO:
		cJSON_AddStringToObject(root, "tool_choice", "auto");
		break;
	case LLM_TOOL_CHOICE_NONE:
		cJSON_AddStringToObject(root, "tool_choice", "none");
		break;
	case LLM_TOOL_CHOICE_REQUIRED:
		cJSON_AddStringToObject(root, "tool_choice", "required");
		break;
	case LLM_TOOL_CHOICE_NAMED: {
		if (!req->tool_choice_name || !*req->tool_choice_name) {
			cJSON_Delete(root);
			err_set(err, "tool_choice names a function but the name is empty");
			return NULL;
		}
		cJSON *tc = cJSON_AddObjectToObject(root, "tool_choice");
		cJSON_AddStringToObject(tc, "type", "function");
		cJSON *fn = cJSON_AddObjectToObject(tc, "function");
		cJSON_AddStringToObject(fn, "name", req->tool_choice_name);
		break;
	}
	}
	if (req->max_tokens > 0)
		cJSON_AddNumberToObject(root, "max_tokens", req->max_tokens);
	if (req->has_temperature)
		cJSON_AddNumberToObject(root, "temperature", req->temperature);
	char *out = json_print(root);
	cJSON_Delete(root);
	if (strlen(out) > LLM_MAX_REQUEST_BYTES) {
		err_set(err, "the chat request is %zu bytes, over the %zu-byte limit", strlen(out),
		        LLM_MAX_REQUEST_BYTES);
		free(out);
		return NULL;
	}
	return out;
}

/* --- response ------------------------------------------------------------------ */

void llm_response_free(struct llm_response *resp)
{
	if (!resp)
		return;
	free(resp->content);
	for (size_t i = 0; i < resp->n_tool_calls; i++) {
		free(resp->tool_calls[i].id);
		free(resp->tool_calls[i].name);
		free(resp->tool_calls[i].arguments);
	}
	free(resp->tool_calls);
	free(resp->finish_reason);
	free(resp->model);
	memset(resp, 0, sizeof *resp);
}

/* content is a string, null, or (some providers) an array of parts of which
 * the "text" ones are joined. */
static int parse_content(const cJSON *v, char **out, char *msg, size_t cap)
{
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsString(v)) {
		*out = xstrdup(v->valuestring);
		return 0;
	}
	if (cJSON_IsArray(v)) {
		struct strbuf sb = {0};
		const cJSON *part;
		cJSON_ArrayForEach(part, v)
		{
			const char *t = json_string_or(part, "text", NULL);
			if (t)
				sb_puts(&sb, t);
		}
		*out = sb_detach(&sb);
		return 0;
	}
	err_fmt(msg, cap, "choices[0].message.content must be a string or null");
	return -1;
}

static int parse_tool_calls(const cJSON *arr, struct llm_response *resp, char *msg, size_t cap)
{
	if (!arr || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr)) {
		err_fmt(msg, cap, "choices[0].message.tool_calls must be an array");
		return -1;
	}
	size_t n = (size_t)cJSON_GetArraySize(arr);
	size_t keep = n > LLM_MAX_TOOL_CALLS ? LLM_MAX_TOOL_CALLS : n;
	resp->dropped_tool_calls = n - keep;
	if (keep == 0)
		return 0;
	resp->tool_calls = xcalloc(keep, sizeof *resp->tool_calls);
	size_t i = 0;
	const cJSON *tc;
	cJSON_ArrayForEach(tc, arr)
	{
		if (i >= keep)
			break;
		if (!cJSON_IsObject(tc)) {
			err_fmt(msg, cap, "choices[0].message.tool_calls[%zu] must be an object",
			        i);
			return -1;
		}
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
		if (!cJSON_IsObject(fn)) {
			err_fmt(msg, cap,
			        "choices[0].message.tool_calls[%zu].function is missing or not an "
			        "object",
			        i);
			return -1;
		}
		const char *name = json_string_or(fn, "name", NULL);
		if (!name || !*name) {
			err_fmt(msg, cap,
			        "choices[0].message.tool_calls[%zu].function.name is missing", i);
			return -1;
		}
		struct llm_tool_call *out = &resp->tool_calls[i];
		resp->n_tool_calls = i + 1;
		out->name = xstrdup(name);
		/* Some local servers omit the id; the tool result must still be
		 * matched to its call, so give it a stable one. */
		const char *id = json_string_or(tc, "id", NULL);
		out->id = id && *id ? xstrdup(id) : xasprintf("call_%zu", i);
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
		if (!args || cJSON_IsNull(args))
			out->arguments = xstrdup("{}");
		else if (cJSON_IsString(args))
			out->arguments = xstrdup(args->valuestring);
		else if (cJSON_IsObject(args))
			out->arguments = json_print(args); /* Ollama-style object */
		else {
			err_fmt(msg, cap,
			        "choices[0].message.tool_calls[%zu].function.arguments must be a "
			        "JSON string",
			        i);
			return -1;
		}
		i++;
	}
	return 0;
}

static int usage_field(const cJSON *u, const char *name, int64_t *out, bool *present)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, name);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
		return -1;
	*out = (int64_t)v->valuedouble;
	*present = true;
	return 0;
}

int llm_parse_completion(const char *body, size_t len, struct llm_response *resp, char *msg,
                         size_t cap)
{
	memset(resp, 0, sizeof *resp);
	struct ga_err perr = {{0}};
	cJSON *root = json_parse(body, len, &perr);
	if (!root) {
		err_fmt(msg, cap, "the answer is not valid JSON (%s)", perr.msg);
		return -1;
	}
	int rc = -1;
	const cJSON *choices, *choice, *m;
	if (!cJSON_IsObject(root)) {
		err_fmt(msg, cap, "the answer is JSON but not an object");
		goto out;
	}
	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	if (!choices) {
		err_fmt(msg, cap, "the answer has no 'choices' field");
		goto out;
	}
	if (!cJSON_IsArray(choices)) {
		err_fmt(msg, cap, "'choices' must be an array");
		goto out;
	}
	choice = cJSON_GetArrayItem(choices, 0);
	if (!choice) {
		err_fmt(msg, cap, "'choices' is empty");
		goto out;
	}
	if (!cJSON_IsObject(choice)) {
		err_fmt(msg, cap, "choices[0] must be an object");
		goto out;
	}
	m = cJSON_GetObjectItemCaseSensitive(choice, "message");
	if (!m) {
		err_fmt(msg, cap, "choices[0].message is missing");
		goto out;
	}
	if (!cJSON_IsObject(m)) {
		err_fmt(msg, cap, "choices[0].message must be an object");
		goto out;
	}
	if (parse_content(cJSON_GetObjectItemCaseSensitive(m, "content"), &resp->content, msg,
	                  cap) != 0)
		goto out;
	if (parse_tool_calls(cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), resp, msg, cap) !=
	    0)
		goto out;
	const char *fr = json_string_or(choice, "finish_reason", "");
	resp->finish_reason = xstrdup(fr);
	resp->model = xstrdup(json_string_or(root, "model", ""));
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(root, "usage");
	if (u && cJSON_IsObject(u)) {
		bool have_p = false, have_c = false, have_t = false;
		if (usage_field(u, "prompt_tokens", &resp->usage.prompt_tokens, &have_p) ||
		    usage_field(u, "completion_tokens", &resp->usage.completion_tokens, &have_c) ||
		    usage_field(u, "total_tokens", &resp->usage.total_tokens, &have_t)) {
			err_fmt(msg, cap, "usage token counts must be non-negative numbers");
			goto out;
		}
		if (!have_t)
			resp->usage.total_tokens =
			        resp->usage.prompt_tokens + resp->usage.completion_tokens;
		resp->has_usage = have_p || have_c || have_t;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc != 0)
		llm_response_free(resp);
	return rc;
}

/* --- classification ------------------------------------------------------------ */

/* The provider's own words, for the operator: error.message (OpenAI shape),
 * or a string "error", or "message"; one line, bounded. */
static void provider_message(const cJSON *root, char *out, size_t cap)
{
	out[0] = '\0';
	if (!cJSON_IsObject(root))
		return;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
	const char *s = NULL;
	if (cJSON_IsObject(e))
		s = json_string_or(e, "message", NULL);
	else if (cJSON_IsString(e))
		s = e->valuestring;
	if (!s)
		s = json_string_or(root, "message", NULL);
	if (!s)
		return;
	size_t n =
	        utf8_copy(out, cap < LLM_PROVIDER_MSG_MAX + 1 ? cap : LLM_PROVIDER_MSG_MAX + 1, s);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = ' ';
}

/* A numeric status carried inside a JSON error object (OpenRouter and some
 * gateways answer 200 with {"error":{"code":401,...}}). 0 when none. */
static int embedded_status(const cJSON *root)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (!cJSON_IsObject(e))
		return 0;
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
	if (cJSON_IsNumber(code) && code->valuedouble >= 100 && code->valuedouble < 600)
		return (int)code->valuedouble;
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(e, "status");
	if (cJSON_IsNumber(st) && st->valuedouble >= 100 && st->valuedouble < 600)
		return (int)st->valuedouble;
	return 0;
}

static bool looks_like_html(const char *content_type, const char *body, size_t len)
{
	if (content_type && strncasecmp(content_type, "text/html", 9) == 0)
		return true;
	size_t i = 0;
	while (i < len && isspace((unsigned char)body[i]))
		i++;
	return i < len && body[i] == '<';
}

static void host_of(const struct llm_config *cfg, char *out, size_t cap)
{
	if (http_url_host(cfg->base_url, out, cap, NULL) != 0)
		snprintf(out, cap, "the model endpoint");
}

static enum llm_error_kind by_status(const struct llm_config *cfg, int status, const char *pmsg,
                                     struct llm_error *err)
{
	char host[HTTP_HOST_MAX];
	host_of(cfg, host, sizeof host);
	const char *sep = pmsg[0] ? " — " : "";
	err->status = status;
	if (status == 401 || status == 402 || status == 403) {
		err->kind = LLM_ERR_FATAL;
		if (!cfg->api_key)
			err_fmt(err->msg, sizeof err->msg,
			        "%s answered %d and no API key is configured: set %s%s%s", host,
			        status, cfg->key_var, sep, pmsg);
		else if (status == 401)
			err_fmt(err->msg, sizeof err->msg,
			        "%s is set but %s answered 401: the key is invalid or expired%s%s",
			        cfg->key_var, host, sep, pmsg);
		else if (status == 402)
			err_fmt(err->msg, sizeof err->msg,
			        "%s is set but %s answered 402: the account has no credit left; "
			        "add credit or use another key%s%s",
			        cfg->key_var, host, sep, pmsg);
		else
			err_fmt(err->msg, sizeof err->msg,
			        "%s is set but %s answered 403: the key may not use model '%s' "
			        "(%s)%s%s",
			        cfg->key_var, host, cfg->model, cfg->model_var, sep, pmsg);
		return err->kind;
	}
	if (status == 408 || status == 409 || status == 425 || status == 429 ||
	    (status >= 500 && status <= 599)) {
		err->kind = LLM_ERR_TRANSIENT;
		err_fmt(err->msg, sizeof err->msg, "%s answered %d%s%s", host, status,
		        status == 429 ? " (rate limited)" : "", pmsg[0] ? ": " : "");
		size_t l = strlen(err->msg);
		snprintf(err->msg + l, sizeof err->msg - l, "%s", pmsg);
		return err->kind;
	}
	err->kind = LLM_ERR_REQUEST;
	if (status == 404)
		err_fmt(err->msg, sizeof err->msg,
		        "%s answered 404 for %s/chat/completions: check %s (it usually ends in "
		        "/v1) and the model '%s' (%s)%s%s",
		        host, cfg->base_url, cfg->url_var, cfg->model, cfg->model_var, sep, pmsg);
	else if (status >= 300 && status < 400)
		err_fmt(err->msg, sizeof err->msg,
		        "%s answered a %d redirect: set %s to the final address", host, status,
		        cfg->url_var);
	else
		err_fmt(err->msg, sizeof err->msg, "%s refused the request with %d%s%s", host,
		        status, pmsg[0] ? ": " : "", pmsg);
	return err->kind;
}

enum llm_error_kind llm_parse_http(const struct llm_config *cfg, enum http_error http_error,
                                   const char *http_error_msg, long status,
                                   const char *content_type, const char *retry_after,
                                   const char *body, size_t body_len, int64_t now_ms,
                                   struct llm_response *resp, struct llm_error *err)
{
	memset(resp, 0, sizeof *resp);
	err->kind = LLM_OK;
	err->status = (int)status;
	err->retry_after_ms = -1;
	err->msg[0] = '\0';
	if (retry_after) {
		int64_t d;
		if (http_parse_retry_after(retry_after, now_ms, &d) == 0)
			err->retry_after_ms = d;
	}
	if (!body)
		body = "";
	switch (http_error) {
	case HTTP_OK:
		break;
	case HTTP_ERR_CONNECT:
		/* nothing answers at that address: most often the URL is wrong */
		err->kind = LLM_ERR_TRANSIENT;
		err_fmt(err->msg, sizeof err->msg, "%s (check %s)",
		        http_error_msg ? http_error_msg : "cannot connect", cfg->url_var);
		return err->kind;
	case HTTP_ERR_TIMEOUT:
	case HTTP_ERR_TRANSPORT:
		err->kind = LLM_ERR_TRANSIENT;
		err_fmt(err->msg, sizeof err->msg, "%s", http_error_msg ? http_error_msg : "");
		return err->kind;
	case HTTP_ERR_TLS:
		err->kind = LLM_ERR_REQUEST;
		err_fmt(err->msg, sizeof err->msg, "%s (check %s)",
		        http_error_msg ? http_error_msg : "TLS failed", cfg->url_var);
		return err->kind;
	case HTTP_ERR_TOO_LARGE:
		err->kind = LLM_ERR_MALFORMED;
		err_fmt(err->msg, sizeof err->msg, "%s", http_error_msg ? http_error_msg : "");
		return err->kind;
	case HTTP_ERR_CANCELLED:
		err->kind = LLM_ERR_CANCELLED;
		err_fmt(err->msg, sizeof err->msg, "%s", http_error_msg ? http_error_msg : "");
		return err->kind;
	}

	char host[HTTP_HOST_MAX];
	host_of(cfg, host, sizeof host);
	struct ga_err perr = {{0}};
	cJSON *root = json_parse(body, body_len, &perr);
	char pmsg[LLM_PROVIDER_MSG_MAX + 1];
	provider_message(root, pmsg, sizeof pmsg);

	if (status < 200 || status > 299) {
		by_status(cfg, (int)status, pmsg, err);
		cJSON_Delete(root);
		return err->kind;
	}
	if (!root) {
		if (looks_like_html(content_type, body, body_len)) {
			/* A proxy or captive portal answered instead of the API:
			 * worth another try. */
			err->kind = LLM_ERR_TRANSIENT;
			err_fmt(err->msg, sizeof err->msg,
			        "%s answered %ld with an HTML page where JSON was expected", host,
			        status);
		} else {
			err->kind = LLM_ERR_MALFORMED;
			err_fmt(err->msg, sizeof err->msg,
			        "%s answered %ld with malformed JSON: %s", host, status, perr.msg);
		}
		return err->kind;
	}
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (cJSON_IsObject(root) && e && !cJSON_IsNull(e) &&
	    !cJSON_GetObjectItemCaseSensitive(root, "choices")) {
		int st = embedded_status(root);
		if (st)
			by_status(cfg, st, pmsg, err);
		else {
			err->kind = LLM_ERR_REQUEST;
			err_fmt(err->msg, sizeof err->msg, "%s answered %ld with an error: %s",
			        host, status, pmsg[0] ? pmsg : "(no message)");
		}
		err->status = (int)status;
		cJSON_Delete(root);
		return err->kind;
	}
	cJSON_Delete(root);
	char msg[GA_ERR_MSG_MAX - 64];
	if (llm_parse_completion(body, body_len, resp, msg, sizeof msg) != 0) {
		err->kind = LLM_ERR_MALFORMED;
		err_fmt(err->msg, sizeof err->msg, "%s answered %ld but %s", host, status, msg);
		return err->kind;
	}
	return LLM_OK;
}
