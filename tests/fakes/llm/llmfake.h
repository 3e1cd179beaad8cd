/*
 * llmfake — an OpenAI-compatible chat-completions server for tests, on
 * httpfake (127.0.0.1, ephemeral port).
 *
 * Routes: POST /v1/chat/completions (scripted), GET /v1/models (a fixed
 * list naming "fake-model"). llmfake_base_url() is "http://127.0.0.1:N/v1",
 * ready for LLM_BASE_URL.
 *
 * Script: a JSON array of entries (or {"responses": [...]}), tried in order
 * for each chat request; the first whose "match" holds answers it. Format
 * and examples: README.md in this folder. In short, an entry may match on
 *   "call": N                    0-based index of the chat request
 *   "last_user_contains": "s"    substring of the last user message
 *   "tools": ["a", "b"]          these tool names are all offered
 *   "no_tools": true             no tools offered
 *   "tool_choice": "required"    "auto" | "none" | "required" | a name
 *   "any_contains": "s"          substring of any message (system included)
 *   "after_tool": true|false     the last message is a tool result (or not)
 * and "captures": {"name": "regex"} fills "{{name}}" in the tool calls'
 * arguments from the request's messages (README.md),
 * and answer with content / tool_calls / finish_reason / usage, or an
 * "error" (OpenAI error body with a status and optional retry_after), an
 * "html" error page with a status, "malformed" JSON, a raw "body", plus
 * "delay_ms" and "action" ("drop", "hang"). "times": N retires an entry
 * after N uses. A request nothing matches is answered 400 with a message
 * naming the call index, so a test with a missing entry fails loudly.
 *
 * Recording: every chat request is kept (parsed) in order, up to
 * LLMFAKE_RECORD_MAX; tests read them back with llmfake_request().
 *
 * Threads: the server answers on libmicrohttpd threads; all functions here
 * lock, so the test thread may call them at any time.
 */
#ifndef GA_TESTS_FAKES_LLM_LLMFAKE_H
#define GA_TESTS_FAKES_LLM_LLMFAKE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "tests/fakes/httpfake/httpfake.h"

#define LLMFAKE_RECORD_MAX  1024
#define LLMFAKE_ENTRIES_MAX 256

struct llmfake;

/* Starts the fake. NULL with err on failure. */
struct llmfake *llmfake_new(char *err, size_t errlen);
void llmfake_free(struct llmfake *f);

/* "http://127.0.0.1:N/v1" (owned by the fake). */
const char *llmfake_base_url(const struct llmfake *f);
struct httpfake *llmfake_http(struct llmfake *f);

/* Appends entries from a JSON script (array or {"responses": [...]}), or
 * one entry object. -1 with err naming the bad entry; nothing is added. */
int llmfake_load_script(struct llmfake *f, const char *json, char *err, size_t errlen);
int llmfake_load_script_file(struct llmfake *f, const char *path, char *err, size_t errlen);
/* Like llmfake_load_script but aborts on a bad script (a bug in the test). */
void llmfake_script(struct llmfake *f, const char *json);
/* Forgets the entries (not the record). */
void llmfake_reset(struct llmfake *f);

/* Chat requests seen so far. */
size_t llmfake_calls(struct llmfake *f);
/* Waits until n chat requests were seen (0) or timeout_ms passed (-1). */
int llmfake_wait_calls(struct llmfake *f, size_t n, unsigned timeout_ms);
/* The parsed body of chat request i (copy; caller frees with cJSON_Delete),
 * or NULL when i is out of range or the body was not JSON. */
cJSON *llmfake_request(struct llmfake *f, size_t i);
/* The value of header `name` on chat request i (copy; caller frees), or NULL. */
char *llmfake_request_header(struct llmfake *f, size_t i, const char *name);

#endif
