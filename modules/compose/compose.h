/*
 * compose — the tool-call loop: a system prompt, a conversation and a set of
 * tools in; the model's final answer (or a stated reason to stop) out.
 *
 * One run:
 *   1. Before every model call the budget (if given) is asked; a denial
 *      ends the run with COMPOSE_STOP_BUDGET and the budget's reason.
 *   2. The model is called with the conversation, the tools and the
 *      current tool_choice. Usage is booked in the budget.
 *   3. An answer without tool calls is final (COMPOSE_STOP_FINAL) — unless
 *      a tool was required (tool_choice REQUIRED or NAMED): then the first
 *      balanced JSON object in the text is taken as that tool's arguments
 *      (a model that writes the call as prose is still understood), and
 *      if there is none the run ends with COMPOSE_STOP_ERROR.
 *   4. Tool calls run one after another, in order. Each call's arguments
 *      are parsed and checked against the tool's schema (schema.h); an
 *      unknown tool, arguments that are not a JSON object, or a schema
 *      violation become an error result sent back to the model ("Error:
 *      field 'text' is required ...") so it can correct itself — never a
 *      crash. A valid call goes to the tool's handler, which may finish
 *      at once or later (compose_call_done from any callback).
 *   5. Results longer than max_result_chars (default 30,000 Unicode code
 *      points) are cut with a "[TRUNCATED: ...]" note, and appended as tool
 *      messages carrying their tool_call_id. A handler that asks to stop
 *      ends the run after this round (COMPOSE_STOP_TOOL).
 *   6. Repeat up to max_rounds model calls (default 8), then
 *      COMPOSE_STOP_MAX_ROUNDS.
 * Once a required tool has been called successfully, later rounds use
 * tool_choice "auto", so the model can give its final answer (with
 * "required" kept it could never stop calling tools).
 *
 * Errors from the model end the run with COMPOSE_STOP_ERROR and
 * result.llm_error (LLM_ERR_FATAL: the daemon tells the owner and exits 69).
 *
 * Memory: compose_start copies the messages and the system prompt. Tool
 * definitions (names, descriptions, schemas, handlers) are borrowed and
 * must outlive the run (they are static tables in local-tools). The result
 * passed to `done` is borrowed for the call. The run frees itself after
 * `done` returns (its timer closes on the loop).
 *
 * Callbacks: `done` never runs inside compose_start. A handler must always
 * call compose_call_done exactly once (with an error if it failed); a run
 * waits for it, even when cancelled.
 *
 * Bounds: COMPOSE_MAX_MESSAGES messages in a run (past it the run stops
 * with an error), LLM_MAX_TOOL_CALLS calls per round, results cut at
 * max_result_chars.
 */
#ifndef GA_MODULES_COMPOSE_COMPOSE_H
#define GA_MODULES_COMPOSE_COMPOSE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/llm/llm.h"
#include "common/err.h"
#include "modules/budget/budget.h"

#define COMPOSE_DEFAULT_MAX_ROUNDS       8
#define COMPOSE_DEFAULT_MAX_RESULT_CHARS 30000
#define COMPOSE_MAX_MESSAGES             512
#define COMPOSE_MAX_TOOLS                64

struct compose_run;
struct compose_call;

/* Runs a tool. args is the validated argument object, borrowed for the
 * call. The handler (now or later) calls compose_call_done. */
typedef void (*compose_tool_fn)(void *tool_ud, struct compose_call *call, const cJSON *args);

struct compose_tool {
	const char *name;
	const char *description;
	const char *schema_json; /* JSON Schema for the arguments (an object) */
	compose_tool_fn run;
	void *ud;
};

enum compose_stop {
	COMPOSE_STOP_FINAL,      /* the model answered without calling a tool */
	COMPOSE_STOP_MAX_ROUNDS, /* max_rounds model calls made */
	COMPOSE_STOP_BUDGET,     /* the daily token budget refused the call */
	COMPOSE_STOP_ERROR,      /* the model call failed, or a required tool was not called */
	COMPOSE_STOP_TOOL,       /* a tool asked to end the conversation */
	COMPOSE_STOP_CANCELLED,  /* compose_cancel */
};

struct compose_result {
	enum compose_stop stop;
	const char *stop_name;              /* "final", "max_rounds", ... */
	char reason[GA_ERR_MSG_MAX];        /* a sentence: why it stopped */
	const char *content;                /* the model's last text; NULL when none */
	int rounds;                         /* model calls made */
	int tool_calls;                     /* tool calls handled (errors included) */
	int tool_errors;                    /* of which ended in an error result */
	bool used_json_fallback;            /* a required tool's arguments came from text */
	enum llm_error_kind llm_error;      /* for COMPOSE_STOP_ERROR from the model */
	struct llm_usage usage;             /* summed over the rounds */
	struct decision budget;             /* the last budget decision (rule NULL: none) */
	const struct llm_message *messages; /* the whole conversation, system first,
	                                     * ending with the final answer when there is one */
	size_t n_messages;
};

typedef void (*compose_done_fn)(void *ud, const struct compose_result *res);

struct compose_opts {
	uv_loop_t *loop;
	struct llm_client *llm;
	struct budget *budget;     /* NULL = no budget */
	bool owner;                /* an owner conversation (allowed past the budget) */
	int64_t (*now_ms)(void);   /* NULL = time_now_ms; for the budget's day */
	const char *system_prompt; /* may be NULL */
	const struct llm_message *messages;
	size_t n_messages;
	const struct compose_tool *tools;
	size_t n_tools;
	enum llm_tool_choice tool_choice;
	const char *tool_choice_name; /* for LLM_TOOL_CHOICE_NAMED */
	int max_rounds;               /* 0 = COMPOSE_DEFAULT_MAX_ROUNDS */
	size_t max_result_chars;      /* 0 = COMPOSE_DEFAULT_MAX_RESULT_CHARS */
	int max_tokens;               /* 0 = provider default */
	double temperature;
	bool has_temperature;
	compose_done_fn done;
	void *ud; /* given to done, and to handlers through compose_call_ud() */
};

/* Starts a run. Returns NULL with err when the options are unusable (no
 * messages, a tool schema that is not a JSON object, a named tool_choice
 * that is not offered, too many tools); nothing is called back then. */
struct compose_run *compose_start(const struct compose_opts *opts, struct ga_err *err);

/* Ends the run with COMPOSE_STOP_CANCELLED as soon as nothing is in flight
 * that must finish (a pending model call is dropped; a running handler is
 * waited for). `done` is still called, never inside compose_cancel. */
void compose_cancel(struct compose_run *run);

/* For handlers. text is copied; is_error marks a failed call (the result
 * goes back to the model either way); stop ends the run after this round. */
void compose_call_done(struct compose_call *call, const char *text, bool is_error, bool stop);
const char *compose_call_name(const struct compose_call *call);
const char *compose_call_id(const struct compose_call *call);
void *compose_call_ud(const struct compose_call *call);

/* --- helpers (pure; exposed for tests and the fuzzer) ---------------------- */

/* A copy of text cut to at most max_chars code points, with a note saying
 * how long it was. Caller frees. */
char *compose_truncate(const char *text, size_t max_chars);

/* The first balanced {...} in text that parses as a JSON object (strings
 * and escapes respected; a candidate that does not parse is skipped).
 * Caller frees; NULL when there is none. Scans at most 1 MiB. */
char *compose_extract_json_object(const char *text);

const char *compose_stop_name(enum compose_stop s);

#endif
