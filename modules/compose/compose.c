/*
 * compose — the tool-call loop (see compose.h).
 *
 * The run is a small state machine driven by three kinds of events: the
 * model's answer (llm callback), a handler's completion (compose_call_done,
 * possibly from inside the handler itself) and the run's own zero-delay
 * timer, which delivers `done` on a fresh stack so that no caller ever sees
 * its callback re-entered.
 */
#include "modules/compose/compose.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/compose/schema.h"

#define LOG_COMP               "compose"
#define EXTRACT_SCAN_MAX       ((size_t)1024 * 1024)
#define EXTRACT_MAX_CANDIDATES 64

struct compose_call {
	struct compose_run *run;
	size_t idx; /* into the current assistant message's tool_calls */
	bool active;
};

struct compose_run {
	struct compose_opts o; /* messages/system pointers not used after start */
	struct llm_message *msgs;
	size_t n_msgs, cap_msgs;
	cJSON **schemas;
	struct llm_tool_def *defs;
	enum llm_tool_choice choice;
	char *choice_name;
	uv_timer_t timer;
	uint64_t llm_id;

	size_t assistant_idx; /* the assistant message whose calls are running */
	size_t next_call;
	bool round_had_success;
	struct compose_call call;
	bool in_handler;
	bool call_completed;
	bool stop_requested;
	char stop_tool[64];

	bool cancelled;
	bool finishing;
	char *last_content;
	struct compose_result res;
};

const char *compose_stop_name(enum compose_stop s)
{
	switch (s) {
	case COMPOSE_STOP_FINAL:
		return "final";
	case COMPOSE_STOP_MAX_ROUNDS:
		return "max_rounds";
	case COMPOSE_STOP_BUDGET:
		return "budget";
	case COMPOSE_STOP_ERROR:
		return "error";
	case COMPOSE_STOP_TOOL:
		return "tool";
	case COMPOSE_STOP_CANCELLED:
		return "cancelled";
	}
	return "unknown";
}

/* --- pure helpers -------------------------------------------------------------- */

char *compose_truncate(const char *text, size_t max_chars)
{
	if (!text)
		return xstrdup("");
	/* A character is a lead byte and at most the continuation bytes it
	 * announces; a stray continuation byte counts as a character of its
	 * own, so invalid UTF-8 cannot make one "character" unbounded (found
	 * by fuzz_llm: a run of 0x8b bytes passed as one character). */
	size_t chars = 0, cut = 0, i = 0, pending = 0;
	for (; text[i]; i++) {
		unsigned char c = (unsigned char)text[i];
		if ((c & 0xC0) == 0x80 && pending > 0) {
			pending--;
			continue;
		}
		if (chars == max_chars)
			cut = i;
		chars++;
		pending = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
	}
	if (chars <= max_chars)
		return xstrdup(text);
	return xasprintf("%.*s\n[TRUNCATED: the result was %zu characters; only the first %zu "
	                 "are shown]",
	                 (int)cut, text, chars, max_chars);
}

/* The end (exclusive) of the balanced object starting at s[0] == '{', or 0. */
static size_t balanced_end(const char *s, size_t len)
{
	int depth = 0;
	bool in_str = false, esc = false;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (in_str) {
			if (esc)
				esc = false;
			else if (ch == '\\')
				esc = true;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		if (ch == '"')
			in_str = true;
		else if (ch == '{')
			depth++;
		else if (ch == '}') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return 0;
}

char *compose_extract_json_object(const char *text)
{
	if (!text)
		return NULL;
	size_t len = strnlen(text, EXTRACT_SCAN_MAX);
	int tried = 0;
	for (size_t i = 0; i < len && tried < EXTRACT_MAX_CANDIDATES; i++) {
		if (text[i] != '{')
			continue;
		tried++;
		size_t end = balanced_end(text + i, len - i);
		if (!end)
			return NULL; /* never closes: nothing later can close either */
		cJSON *v = json_parse(text + i, end, NULL);
		bool ok = v && cJSON_IsObject(v);
		cJSON_Delete(v);
		if (ok)
			return xstrndup(text + i, end);
	}
	return NULL;
}

/* --- messages -------------------------------------------------------------------- */

static void msg_free(struct llm_message *m)
{
	free(m->content);
	free(m->tool_call_id);
	for (size_t i = 0; i < m->n_tool_calls; i++) {
		free(m->tool_calls[i].id);
		free(m->tool_calls[i].name);
		free(m->tool_calls[i].arguments);
	}
	free(m->tool_calls);
}

static int push_msg(struct compose_run *r, enum llm_role role, const char *content,
                    const char *tool_call_id, const struct llm_tool_call *calls, size_t n_calls)
{
	if (r->n_msgs >= COMPOSE_MAX_MESSAGES)
		return -1;
	if (r->n_msgs == r->cap_msgs) {
		r->cap_msgs = r->cap_msgs ? r->cap_msgs * 2 : 16;
		r->msgs = xreallocarray(r->msgs, r->cap_msgs, sizeof *r->msgs);
	}
	struct llm_message *m = &r->msgs[r->n_msgs++];
	memset(m, 0, sizeof *m);
	m->role = role;
	m->content = content ? xstrdup(content) : NULL;
	m->tool_call_id = tool_call_id ? xstrdup(tool_call_id) : NULL;
	if (n_calls) {
		m->tool_calls = xcalloc(n_calls, sizeof *m->tool_calls);
		m->n_tool_calls = n_calls;
		for (size_t i = 0; i < n_calls; i++) {
			m->tool_calls[i].id = xstrdup(calls[i].id ? calls[i].id : "");
			m->tool_calls[i].name = xstrdup(calls[i].name ? calls[i].name : "");
			m->tool_calls[i].arguments =
			        xstrdup(calls[i].arguments ? calls[i].arguments : "{}");
		}
	}
	return 0;
}

/* --- lifetime ---------------------------------------------------------------------- */

static void run_free(struct compose_run *r)
{
	for (size_t i = 0; i < r->n_msgs; i++)
		msg_free(&r->msgs[i]);
	free(r->msgs);
	for (size_t i = 0; i < r->o.n_tools; i++)
		cJSON_Delete(r->schemas[i]);
	free(r->schemas);
	free(r->defs);
	free(r->choice_name);
	free(r->last_content);
	free(r);
}

static void on_closed(uv_handle_t *h)
{
	run_free(h->data);
}

static void on_finish_timer(uv_timer_t *t)
{
	struct compose_run *r = t->data;
	r->res.stop_name = compose_stop_name(r->res.stop);
	r->res.content = r->last_content;
	r->res.messages = r->msgs;
	r->res.n_messages = r->n_msgs;
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "run finished", "stop", r->res.stop_name, "rounds",
	       LOG_INT(r->res.rounds), "tool_calls", LOG_INT(r->res.tool_calls), "reason",
	       r->res.reason);
	if (r->o.done)
		r->o.done(r->o.ud, &r->res);
	uv_close((uv_handle_t *)&r->timer, on_closed);
}

static void finish(struct compose_run *r, enum compose_stop stop, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void finish(struct compose_run *r, enum compose_stop stop, const char *fmt, ...)
{
	if (r->finishing)
		return;
	r->finishing = true;
	r->res.stop = stop;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->res.reason, sizeof r->res.reason, fmt, ap);
	va_end(ap);
	uv_timer_start(&r->timer, on_finish_timer, 0, 0);
}

/* --- rounds ------------------------------------------------------------------------- */

static int64_t now_ms(const struct compose_run *r)
{
	return r->o.now_ms ? r->o.now_ms() : time_now_ms();
}

static void on_model(void *ud, const struct llm_response *resp, const struct llm_error *err);

static void start_round(struct compose_run *r)
{
	if (r->cancelled) {
		finish(r, COMPOSE_STOP_CANCELLED, "cancelled before round %d", r->res.rounds + 1);
		return;
	}
	if (r->res.rounds >= r->o.max_rounds) {
		finish(r, COMPOSE_STOP_MAX_ROUNDS,
		       "stopped after %d model calls without a final answer (the limit)",
		       r->res.rounds);
		return;
	}
	if (r->o.budget) {
		int64_t now = now_ms(r);
		if (!budget_check(r->o.budget, now, r->o.owner, &r->res.budget)) {
			budget_note_denied(r->o.budget, now);
			finish(r, COMPOSE_STOP_BUDGET, "%s", r->res.budget.reason);
			return;
		}
	}
	struct llm_request req = {
	        .messages = r->msgs,
	        .n_messages = r->n_msgs,
	        .tools = r->defs,
	        .n_tools = r->o.n_tools,
	        .tool_choice = r->o.n_tools ? r->choice : LLM_TOOL_CHOICE_DEFAULT,
	        .tool_choice_name = r->choice_name,
	        .max_tokens = r->o.max_tokens,
	        .temperature = r->o.temperature,
	        .has_temperature = r->o.has_temperature,
	};
	struct ga_err e = {{0}};
	r->llm_id = llm_chat(r->o.llm, &req, on_model, r, &e);
	if (!r->llm_id) {
		r->res.llm_error = LLM_ERR_REQUEST;
		finish(r, COMPOSE_STOP_ERROR, "the model request could not be sent: %s", e.msg);
	}
}

static const struct compose_tool *find_tool(const struct compose_run *r, const char *name,
                                            size_t *idx)
{
	for (size_t i = 0; i < r->o.n_tools; i++)
		if (strcmp(r->o.tools[i].name, name) == 0) {
			*idx = i;
			return &r->o.tools[i];
		}
	return NULL;
}

static void add_result(struct compose_run *r, const char *id, const char *text, bool is_error)
{
	char *cut = compose_truncate(text ? text : "", r->o.max_result_chars);
	r->res.tool_calls++;
	if (is_error)
		r->res.tool_errors++;
	else
		r->round_had_success = true;
	if (push_msg(r, LLM_ROLE_TOOL, cut, id, NULL, 0) != 0)
		finish(r, COMPOSE_STOP_ERROR, "the conversation grew past %d messages",
		       COMPOSE_MAX_MESSAGES);
	free(cut);
}

static void round_done(struct compose_run *r)
{
	if (r->finishing)
		return;
	if (r->cancelled) {
		finish(r, COMPOSE_STOP_CANCELLED, "cancelled after round %d", r->res.rounds);
		return;
	}
	if (r->stop_requested) {
		finish(r, COMPOSE_STOP_TOOL, "tool '%s' ended the conversation", r->stop_tool);
		return;
	}
	if (r->round_had_success &&
	    (r->choice == LLM_TOOL_CHOICE_REQUIRED || r->choice == LLM_TOOL_CHOICE_NAMED))
		r->choice = LLM_TOOL_CHOICE_AUTO; /* the requirement is met */
	start_round(r);
}

static char *tool_list(const struct compose_run *r)
{
	struct strbuf sb = {0};
	sb_init(&sb, 2048);
	for (size_t i = 0; i < r->o.n_tools; i++)
		sb_printf(&sb, "%s%s", i ? ", " : "", r->o.tools[i].name);
	if (!r->o.n_tools)
		sb_puts(&sb, "(none)");
	return sb_detach(&sb);
}

/* Runs the current round's calls from next_call on; returns when one is
 * pending in a handler, or after the last one. */
static void run_tools(struct compose_run *r)
{
	for (;;) {
		if (r->finishing)
			return;
		struct llm_message *am = &r->msgs[r->assistant_idx];
		if (r->next_call >= am->n_tool_calls || r->cancelled)
			break;
		const struct llm_tool_call *tc = &am->tool_calls[r->next_call];
		size_t ti = 0;
		const struct compose_tool *t = find_tool(r, tc->name, &ti);
		char msg[GA_ERR_MSG_MAX];
		char *error = NULL;
		cJSON *args = NULL;
		if (!t) {
			char *names = tool_list(r);
			error = xasprintf(
			        "Error: there is no tool named '%s'. Available tools: %s.",
			        tc->name, names);
			free(names);
		} else {
			struct ga_err pe = {{0}};
			args = json_parse(tc->arguments, strlen(tc->arguments), &pe);
			if (!args)
				error = xasprintf(
				        "Error: the arguments for tool '%s' are not valid "
				        "JSON (%s). Call it again with a JSON object.",
				        tc->name, pe.msg);
			else if (!cJSON_IsObject(args))
				error = xasprintf(
				        "Error: the arguments for tool '%s' must be a JSON "
				        "object.",
				        tc->name);
			else if (schema_validate(r->schemas[ti], args, msg, sizeof msg) != 0)
				error = xasprintf(
				        "Error: invalid arguments for tool '%s': %s. Call it "
				        "again with corrected arguments.",
				        tc->name, msg);
		}
		if (error) {
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "tool call refused", "tool", tc->name,
			       "error", error);
			add_result(r, tc->id, error, true);
			free(error);
			cJSON_Delete(args);
			r->next_call++;
			continue;
		}
		r->call = (struct compose_call){.run = r, .idx = r->next_call, .active = true};
		r->call_completed = false;
		r->in_handler = true;
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "tool call", "tool", tc->name, "id", tc->id);
		t->run(t->ud, &r->call, args);
		r->in_handler = false;
		cJSON_Delete(args);
		if (!r->call_completed)
			return; /* the handler finishes later */
	}
	round_done(r);
}

void compose_call_done(struct compose_call *call, const char *text, bool is_error, bool stop)
{
	struct compose_run *r = call->run;
	if (!call->active) {
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "tool finished twice; ignored", "tool",
		       compose_call_name(call));
		return;
	}
	call->active = false;
	r->call_completed = true;
	const struct llm_tool_call *tc = &r->msgs[r->assistant_idx].tool_calls[call->idx];
	if (stop && !r->stop_requested) {
		r->stop_requested = true;
		snprintf(r->stop_tool, sizeof r->stop_tool, "%s", tc->name);
	}
	char *id = xstrdup(tc->id); /* add_result may move the messages */
	add_result(r, id, text, is_error);
	free(id);
	r->next_call++;
	if (!r->in_handler)
		run_tools(r);
}

const char *compose_call_name(const struct compose_call *call)
{
	return call->run->msgs[call->run->assistant_idx].tool_calls[call->idx].name;
}

const char *compose_call_id(const struct compose_call *call)
{
	return call->run->msgs[call->run->assistant_idx].tool_calls[call->idx].id;
}

void *compose_call_ud(const struct compose_call *call)
{
	return call->run->o.ud;
}

static bool forced(const struct compose_run *r)
{
	return r->o.n_tools &&
	       (r->choice == LLM_TOOL_CHOICE_REQUIRED || r->choice == LLM_TOOL_CHOICE_NAMED);
}

/* The tool a plain-text answer's JSON is meant for: the named one, the only
 * one, or the first whose schema the object satisfies. */
static const char *fallback_tool(const struct compose_run *r, const char *json)
{
	if (r->choice == LLM_TOOL_CHOICE_NAMED)
		return r->choice_name;
	if (r->o.n_tools == 1)
		return r->o.tools[0].name;
	cJSON *v = json_parse(json, strlen(json), NULL);
	const char *pick = r->o.tools[0].name;
	char msg[64];
	for (size_t i = 0; v && i < r->o.n_tools; i++)
		if (schema_validate(r->schemas[i], v, msg, sizeof msg) == 0) {
			pick = r->o.tools[i].name;
			break;
		}
	cJSON_Delete(v);
	return pick;
}

static void on_model(void *ud, const struct llm_response *resp, const struct llm_error *err)
{
	struct compose_run *r = ud;
	r->llm_id = 0;
	if (err->kind == LLM_ERR_CANCELLED || r->cancelled) {
		finish(r, COMPOSE_STOP_CANCELLED, "cancelled while waiting for the model");
		return;
	}
	r->res.rounds++;
	if (err->kind != LLM_OK) {
		r->res.llm_error = err->kind;
		finish(r, COMPOSE_STOP_ERROR, "the model call failed (%s): %s",
		       llm_error_kind_name(err->kind), err->msg);
		return;
	}
	r->res.usage.prompt_tokens += resp->usage.prompt_tokens;
	r->res.usage.completion_tokens += resp->usage.completion_tokens;
	r->res.usage.total_tokens += resp->usage.total_tokens;
	if (r->o.budget) {
		struct ga_err be = {{0}};
		budget_record(r->o.budget, now_ms(r), resp->usage.prompt_tokens,
		              resp->usage.completion_tokens, resp->usage.total_tokens, &be);
	}
	free(r->last_content);
	r->last_content = resp->content ? xstrdup(resp->content) : NULL;

	const struct llm_tool_call *calls = resp->tool_calls;
	size_t n_calls = resp->n_tool_calls;
	struct llm_tool_call synth = {0};
	char *json = NULL;
	char synth_id[32];
	if (n_calls == 0 && forced(r)) {
		json = compose_extract_json_object(resp->content);
		if (!json) {
			r->res.llm_error = LLM_OK;
			finish(r, COMPOSE_STOP_ERROR,
			       "the model answered in plain text where tool '%s' was required, and "
			       "the text holds no JSON object to use as its arguments",
			       r->choice == LLM_TOOL_CHOICE_NAMED ? r->choice_name : "(any)");
			return;
		}
		snprintf(synth_id, sizeof synth_id, "fallback_%d", r->res.rounds);
		synth.id = synth_id;
		synth.name = (char *)fallback_tool(r, json);
		synth.arguments = json;
		calls = &synth;
		n_calls = 1;
		r->res.used_json_fallback = true;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "required tool answered as text; using its JSON",
		       "tool", synth.name);
	}
	if (n_calls == 0) {
		/* kept in the transcript so an owner conversation can go on from it */
		push_msg(r, LLM_ROLE_ASSISTANT, resp->content ? resp->content : "", NULL, NULL, 0);
		finish(r, COMPOSE_STOP_FINAL, "the model gave its answer after %d round%s%s",
		       r->res.rounds, r->res.rounds == 1 ? "" : "s",
		       strcmp(resp->finish_reason, "length") == 0
		               ? " (cut short: the model hit its output limit)"
		               : "");
		return;
	}
	if (push_msg(r, LLM_ROLE_ASSISTANT, resp->content, NULL, calls, n_calls) != 0) {
		free(json);
		finish(r, COMPOSE_STOP_ERROR, "the conversation grew past %d messages",
		       COMPOSE_MAX_MESSAGES);
		return;
	}
	free(json);
	r->assistant_idx = r->n_msgs - 1;
	r->next_call = 0;
	r->round_had_success = false;
	run_tools(r);
}

/* --- start / cancel ------------------------------------------------------------------ */

struct compose_run *compose_start(const struct compose_opts *opts, struct ga_err *err)
{
	if (!opts->loop || !opts->llm) {
		err_set(err, "compose needs a loop and a model client");
		return NULL;
	}
	if (opts->n_messages == 0 && !opts->system_prompt) {
		err_set(err, "compose needs at least one message");
		return NULL;
	}
	if (opts->n_tools > COMPOSE_MAX_TOOLS) {
		err_set(err, "%zu tools offered; the limit is %d", opts->n_tools,
		        COMPOSE_MAX_TOOLS);
		return NULL;
	}
	if (opts->n_messages + 1 > COMPOSE_MAX_MESSAGES) {
		err_set(err, "%zu messages; the limit is %d", opts->n_messages,
		        COMPOSE_MAX_MESSAGES);
		return NULL;
	}
	struct compose_run *r = xcalloc(1, sizeof *r);
	r->o = *opts;
	r->o.messages = NULL;
	r->o.system_prompt = NULL;
	if (r->o.max_rounds <= 0)
		r->o.max_rounds = COMPOSE_DEFAULT_MAX_ROUNDS;
	if (r->o.max_result_chars == 0)
		r->o.max_result_chars = COMPOSE_DEFAULT_MAX_RESULT_CHARS;
	r->schemas = xcalloc(opts->n_tools + 1, sizeof *r->schemas);
	r->defs = xcalloc(opts->n_tools + 1, sizeof *r->defs);
	bool named_found = opts->tool_choice != LLM_TOOL_CHOICE_NAMED;
	for (size_t i = 0; i < opts->n_tools; i++) {
		const struct compose_tool *t = &opts->tools[i];
		struct ga_err pe = {{0}};
		const char *s = t->schema_json ? t->schema_json : "{\"type\":\"object\"}";
		r->schemas[i] = json_parse(s, strlen(s), &pe);
		if (!r->schemas[i] || !cJSON_IsObject(r->schemas[i]) || !t->name || !t->run) {
			err_set(err, "tool '%s' is unusable: %s", t->name ? t->name : "(unnamed)",
			        !t->run     ? "it has no handler"
			        : pe.msg[0] ? pe.msg
			                    : "its schema must be a JSON object");
			r->o.n_tools = i + 1;
			run_free(r);
			return NULL;
		}
		r->defs[i] = (struct llm_tool_def){
		        .name = t->name, .description = t->description, .parameters_json = s};
		if (!named_found && opts->tool_choice_name &&
		    strcmp(opts->tool_choice_name, t->name) == 0)
			named_found = true;
	}
	if (!named_found) {
		err_set(err, "tool_choice names '%s', which is not among the tools offered",
		        opts->tool_choice_name ? opts->tool_choice_name : "(null)");
		run_free(r);
		return NULL;
	}
	r->choice = opts->tool_choice;
	r->choice_name = opts->tool_choice_name ? xstrdup(opts->tool_choice_name) : NULL;
	if (opts->system_prompt)
		push_msg(r, LLM_ROLE_SYSTEM, opts->system_prompt, NULL, NULL, 0);
	for (size_t i = 0; i < opts->n_messages; i++) {
		const struct llm_message *m = &opts->messages[i];
		push_msg(r, m->role, m->content, m->tool_call_id, m->tool_calls, m->n_tool_calls);
	}
	uv_timer_init(opts->loop, &r->timer);
	r->timer.data = r;
	start_round(r);
	return r;
}

void compose_cancel(struct compose_run *r)
{
	if (!r || r->finishing || r->cancelled)
		return;
	r->cancelled = true;
	if (r->llm_id) {
		llm_cancel(r->o.llm, r->llm_id);
		r->llm_id = 0;
		finish(r, COMPOSE_STOP_CANCELLED, "cancelled while waiting for the model");
	} else if (!r->call.active) {
		finish(r, COMPOSE_STOP_CANCELLED, "cancelled");
	}
	/* else: the running handler's completion ends the run */
}
