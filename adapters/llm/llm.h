/*
 * llm — OpenAI-compatible chat completions with tools, on the HTTP adapter.
 *
 * Endpoint: POST <base>/chat/completions with "Authorization: Bearer <key>"
 * when a key is configured. The base URL is the AI gateway's
 * (AI_GATEWAY_BASE_URL, default https://ai-gateway.vercel.sh/v1, key
 * AI_GATEWAY_API_KEY, model AI_GATEWAY_MODEL) or any OpenAI-compatible
 * server (LLM_BASE_URL + LLM_API_KEY + LLM_MODEL: OpenAI, OpenRouter,
 * Ollama, llama.cpp, vLLM). When AI_GATEWAY_API_KEY is set the gateway wins,
 * as in config_features().
 *
 * Error tiers (decided by HTTP status and the shape of the body, never by
 * searching free text for words):
 *   LLM_ERR_TRANSIENT  429, 408, 409, 425, 5xx, timeouts, connection errors,
 *                      an HTML page where JSON was expected. Retried up to
 *                      max_retries times with exponential backoff
 *                      (base · 2^n + 0–30 % jitter) capped at backoff_cap_ms;
 *                      a Retry-After header raises the wait (still capped).
 *                      The callback sees this kind only when retries ran out.
 *   LLM_ERR_FATAL      401, 402, 403 (also as a JSON error object in a 2xx
 *                      body): the message names the variable to fix
 *                      (AI_GATEWAY_API_KEY or LLM_API_KEY). The daemon tells
 *                      the owner and exits 69.
 *   LLM_ERR_MALFORMED  a 2xx answer that is not the expected JSON (bad JSON,
 *                      missing choices/message, wrong types, too large): the
 *                      message names what is missing. Not retried.
 *   LLM_ERR_REQUEST    the provider refused this request (400, 404, 413,
 *                      422, other 4xx, a redirect, TLS verification
 *                      failure). Not retried; the message says what to check.
 *   LLM_ERR_CANCELLED  llm_client_free() while the call was pending.
 *
 * Memory: llm_chat serialises the request before returning, so the request
 * and everything it points to may be freed right after the call. The
 * response and error given to the callback are borrowed for the call.
 * Callbacks never run inside llm_chat or llm_cancel.
 *
 * Bounds: request bodies up to LLM_MAX_REQUEST_BYTES; responses up to the
 * HTTP adapter's limit (8 MiB); at most LLM_MAX_TOOL_CALLS tool calls are
 * kept from one response (later ones are dropped and counted); provider
 * error messages are quoted up to LLM_PROVIDER_MSG_MAX bytes.
 */
#ifndef GA_ADAPTERS_LLM_LLM_H
#define GA_ADAPTERS_LLM_LLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/http/http.h"
#include "common/config.h"
#include "common/err.h"

#define LLM_MAX_REQUEST_BYTES          ((size_t)4 * 1024 * 1024)
#define LLM_MAX_TOOL_CALLS             32
#define LLM_PROVIDER_MSG_MAX           200
#define LLM_DEFAULT_TIMEOUT_MS         120000u
#define LLM_DEFAULT_CONNECT_TIMEOUT_MS 10000u
#define LLM_DEFAULT_MAX_RETRIES        3
#define LLM_DEFAULT_BACKOFF_BASE_MS    5000u
#define LLM_DEFAULT_BACKOFF_CAP_MS     60000u

enum llm_role { LLM_ROLE_SYSTEM, LLM_ROLE_USER, LLM_ROLE_ASSISTANT, LLM_ROLE_TOOL };

/* A tool call as the model made it. arguments is JSON text (an object). */
struct llm_tool_call {
	char *id;
	char *name;
	char *arguments;
};

/* One chat message. content may be NULL for an assistant turn that only
 * calls tools; tool_call_id is set on LLM_ROLE_TOOL messages. */
struct llm_message {
	enum llm_role role;
	char *content;
	char *tool_call_id;
	struct llm_tool_call *tool_calls;
	size_t n_tool_calls;
};

/* A tool offered to the model; parameters_json is a JSON Schema object. */
struct llm_tool_def {
	const char *name;
	const char *description;
	const char *parameters_json;
};

enum llm_tool_choice {
	LLM_TOOL_CHOICE_DEFAULT = 0, /* field omitted (provider default: auto) */
	LLM_TOOL_CHOICE_AUTO,
	LLM_TOOL_CHOICE_NONE,
	LLM_TOOL_CHOICE_REQUIRED,
	LLM_TOOL_CHOICE_NAMED, /* tool_choice_name */
};

struct llm_request {
	const struct llm_message *messages;
	size_t n_messages;
	const struct llm_tool_def *tools;
	size_t n_tools;
	enum llm_tool_choice tool_choice;
	const char *tool_choice_name;
	int max_tokens;     /* 0 = omitted */
	double temperature; /* used when has_temperature */
	bool has_temperature;
};

struct llm_usage {
	int64_t prompt_tokens;
	int64_t completion_tokens;
	int64_t total_tokens;
};

struct llm_response {
	char *content; /* NULL when the model sent none */
	struct llm_tool_call *tool_calls;
	size_t n_tool_calls;
	size_t dropped_tool_calls; /* beyond LLM_MAX_TOOL_CALLS */
	char *finish_reason;       /* "" when absent */
	char *model;               /* as reported; "" when absent */
	struct llm_usage usage;
	bool has_usage;
};

enum llm_error_kind {
	LLM_OK = 0,
	LLM_ERR_TRANSIENT,
	LLM_ERR_FATAL,
	LLM_ERR_MALFORMED,
	LLM_ERR_REQUEST,
	LLM_ERR_CANCELLED,
};

struct llm_error {
	enum llm_error_kind kind;
	int status;             /* HTTP status, 0 = none */
	int attempts;           /* requests made */
	int64_t retry_after_ms; /* from Retry-After, -1 = none */
	char msg[GA_ERR_MSG_MAX];
};

struct llm_config {
	char *base_url; /* without the trailing '/' */
	char *api_key;  /* NULL = no Authorization header */
	char *model;
	const char *key_var;   /* "AI_GATEWAY_API_KEY" or "LLM_API_KEY" */
	const char *model_var; /* "AI_GATEWAY_MODEL" or "LLM_MODEL" */
	const char *url_var;   /* "AI_GATEWAY_BASE_URL" or "LLM_BASE_URL" */
	unsigned timeout_ms;
	unsigned connect_timeout_ms;
	int max_retries;
	unsigned backoff_base_ms; /* tests set a few ms: never wait real minutes */
	unsigned backoff_cap_ms;
	size_t max_body_bytes; /* 0 = the HTTP default */
};

/* Fills cfg from the configuration (gateway if AI_GATEWAY_API_KEY is set,
 * else LLM_BASE_URL + LLM_MODEL) with default tunables. Returns -1 with err
 * naming the variables to set when no model is configured. Free with
 * llm_config_free. */
int llm_config_from_ga(const struct ga_config *ga, struct llm_config *cfg, struct ga_err *err);
/* Fills cfg directly (tests, tools). key may be NULL. */
void llm_config_init(struct llm_config *cfg, const char *base_url, const char *api_key,
                     const char *model);
void llm_config_free(struct llm_config *cfg);

struct llm_client;

typedef void (*llm_done_fn)(void *ud, const struct llm_response *resp, const struct llm_error *err);

/* Copies cfg. The HTTP client must outlive the LLM client. */
struct llm_client *llm_client_new(struct http_client *http, const struct llm_config *cfg);
/* Calls the callback of every pending call with LLM_ERR_CANCELLED, then
 * frees the client. Retry timers close on the loop: run it afterwards.
 * NULL accepted. */
void llm_client_free(struct llm_client *c);

/* Sends a request. Returns a call id (> 0), or 0 with err filled (the
 * request could not be serialised or sent; nothing was called back). */
uint64_t llm_chat(struct llm_client *c, const struct llm_request *req, llm_done_fn cb, void *ud,
                  struct ga_err *err);
/* Drops a pending call without calling back. */
void llm_cancel(struct llm_client *c, uint64_t id);

const struct llm_config *llm_client_config(const struct llm_client *c);

struct llm_stats {
	uint64_t calls;    /* llm_chat accepted */
	uint64_t requests; /* HTTP requests made, retries included */
	uint64_t retries;
	uint64_t failures; /* calls that ended in an error */
	uint64_t prompt_tokens, completion_tokens;
	char last_error[GA_ERR_MSG_MAX];
};
void llm_client_stats(const struct llm_client *c, struct llm_stats *out);

/* --- wire format (pure; exposed for tests and the fuzzer) ----------------- */

/* The request body. Caller frees. NULL with err when a tool's parameters
 * are not a JSON object, a message is unusable, or the body would exceed
 * LLM_MAX_REQUEST_BYTES. */
char *llm_build_body(const struct llm_request *req, const char *model, struct ga_err *err);

/* Classifies an HTTP outcome and, for a usable 2xx answer, parses it into
 * resp (free with llm_response_free). http_error/status/content_type/body
 * describe what came back; retry_after is the header value or NULL; cfg
 * names the variables in messages. Returns err->kind (LLM_OK on success). */
enum llm_error_kind llm_parse_http(const struct llm_config *cfg, enum http_error http_error,
                                   const char *http_error_msg, long status,
                                   const char *content_type, const char *retry_after,
                                   const char *body, size_t body_len, int64_t now_ms,
                                   struct llm_response *resp, struct llm_error *err);

/* Parses a chat completion JSON body. Returns 0, or -1 with msg naming the
 * missing or mistyped field. */
int llm_parse_completion(const char *body, size_t len, struct llm_response *resp, char *msg,
                         size_t cap);

void llm_response_free(struct llm_response *resp);

/* The backoff before retry number `retry` (1-based): base · 2^(retry-1)
 * plus jitter_frac (0..1) · 30 %, raised to retry_after_ms when larger,
 * capped at cap_ms (callq_backoff_ms, the one every client uses). */
uint64_t llm_backoff_ms(unsigned base_ms, unsigned cap_ms, int retry, double jitter_frac,
                        int64_t retry_after_ms);

const char *llm_error_kind_name(enum llm_error_kind k);
const char *llm_role_name(enum llm_role r);

/* --- probe (for `general-agent doctor`) ----------------------------------- */

struct llm_probe_result {
	struct llm_error error; /* kind LLM_OK on success */
	uint64_t elapsed_ms;
	struct llm_usage usage;
	char model[128]; /* as reported by the endpoint */
	char reply[128]; /* the start of the answer */
};

/* Makes one small chat completion against cfg on a private uv loop and
 * waits for it (at most timeout_ms; no retries). Blocking by design: only
 * `doctor` calls it, before the daemon's loop exists. Returns 0 when the
 * endpoint answered usefully, else -1 (out->error says how it failed;
 * LLM_ERR_FATAL means the key is refused). */
int llm_probe(const struct llm_config *cfg, unsigned timeout_ms, struct llm_probe_result *out);

#endif
