/*
 * llm_probe — one small chat completion for `general-agent doctor`.
 *
 * Why a chat completion and not GET /models: several providers (OpenRouter,
 * Ollama) answer /models without checking the key, and none of them checks
 * that the configured model exists there. A tiny chat request proves the
 * URL, the key and the model at the price of a few tokens. max_tokens is
 * left out on purpose: OpenAI's reasoning models reject it, and a doctor
 * that fails on a working setup is worse than one that costs a few tokens.
 *
 * It runs its own uv loop and blocks until the answer or timeout_ms: doctor
 * runs before (and instead of) the daemon's loop.
 */
#include <stdio.h>
#include <string.h>

#include "adapters/llm/llm.h"
#include "common/log.h"

struct probe {
	struct llm_probe_result *out;
	bool done;
	uint64_t started;
	uv_loop_t *loop;
	uv_timer_t *guard;
};

static void on_probe_done(void *ud, const struct llm_response *resp, const struct llm_error *err)
{
	struct probe *p = ud;
	p->done = true;
	uv_timer_stop(p->guard);
	uv_stop(p->loop);
	p->out->error = *err;
	p->out->elapsed_ms = uv_now(p->loop) - p->started;
	if (resp) {
		p->out->usage = resp->usage;
		snprintf(p->out->model, sizeof p->out->model, "%s", resp->model ? resp->model : "");
		const char *text = resp->content        ? resp->content
		                   : resp->n_tool_calls ? "(a tool call)"
		                                        : "";
		snprintf(p->out->reply, sizeof p->out->reply, "%s", text);
		/* keep it one line for the doctor table */
		for (char *s = p->out->reply; *s; s++)
			if (*s == '\n' || *s == '\r' || *s == '\t')
				*s = ' ';
	}
}

static void on_probe_timeout(uv_timer_t *t)
{
	struct probe *p = t->data;
	uv_stop(p->loop);
}

int llm_probe(const struct llm_config *cfg, unsigned timeout_ms, struct llm_probe_result *out)
{
	memset(out, 0, sizeof *out);
	out->error.retry_after_ms = -1;
	uv_loop_t loop;
	if (uv_loop_init(&loop) != 0) {
		out->error.kind = LLM_ERR_TRANSIENT;
		snprintf(out->error.msg, sizeof out->error.msg, "cannot create an event loop");
		return -1;
	}
	struct ga_err err = {{0}};
	struct http_client *http = http_client_new(&loop, NULL, &err);
	if (!http) {
		out->error.kind = LLM_ERR_TRANSIENT;
		snprintf(out->error.msg, sizeof out->error.msg, "%s", err.msg);
		uv_loop_close(&loop);
		return -1;
	}
	struct llm_config c = *cfg;
	c.max_retries = 0;
	if (timeout_ms) {
		c.timeout_ms = timeout_ms;
		if (c.connect_timeout_ms > timeout_ms)
			c.connect_timeout_ms = timeout_ms;
	}
	struct llm_client *llm = llm_client_new(http, &c);
	uv_timer_t guard;
	struct probe p = {.out = out, .loop = &loop, .started = uv_now(&loop), .guard = &guard};

	struct llm_message msgs[] = {
	        {.role = LLM_ROLE_SYSTEM,
	         .content = "This is a connectivity check. Answer with one word."},
	        {.role = LLM_ROLE_USER, .content = "Say ok."},
	};
	struct llm_request req = {.messages = msgs, .n_messages = 2};
	uv_timer_init(&loop, &guard);
	guard.data = &p;
	if (llm_chat(llm, &req, on_probe_done, &p, &err) == 0) {
		out->error.kind = LLM_ERR_REQUEST;
		snprintf(out->error.msg, sizeof out->error.msg, "%s", err.msg);
	} else {
		/* The HTTP timeout ends the call; the guard only protects against a
		 * loop that somehow never finishes (a second, later deadline). */
		uv_timer_start(&guard, on_probe_timeout, (uint64_t)c.timeout_ms + 5000, 0);
		uv_run(&loop, UV_RUN_DEFAULT);
		if (!p.done) {
			out->error.kind = LLM_ERR_TRANSIENT;
			snprintf(out->error.msg, sizeof out->error.msg,
			         "no answer from %s within %u ms", c.base_url, c.timeout_ms);
		}
	}
	uv_timer_stop(&guard);
	uv_close((uv_handle_t *)&guard, NULL);
	llm_client_free(llm); /* a pending call is called back as cancelled: p stays valid */
	http_client_close(http);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return out->error.kind == LLM_OK ? 0 : -1;
}
