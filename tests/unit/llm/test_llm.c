/*
 * test_llm — the LLM adapter against the OpenAI-compatible fake: what is
 * sent (model, messages, tools, tool_choice, tool results, auth), what is
 * parsed (content, tool calls, finish reason, usage), and every error tier
 * (transient with retries and Retry-After, fatal naming the variable,
 * malformed naming the field, refused requests, cancellation). Backoff is
 * configured in milliseconds so no test waits for real backoffs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/llm/llm.h"
#include "common/json.h"
#include "tests/fakes/llm/llmfake.h"
#include "tests/unit/llm/testloop.h"

struct got {
	bool done;
	int calls;
	struct llm_error err;
	char *content;
	size_t n_tool_calls;
	char tc_id[64], tc_name[64], tc_args[512];
	char finish[32];
	struct llm_usage usage;
};

static void on_done(void *ud, const struct llm_response *r, const struct llm_error *e)
{
	struct got *g = ud;
	g->done = true;
	g->calls++;
	g->err = *e;
	if (r) {
		g->content = r->content ? strdup(r->content) : NULL;
		g->n_tool_calls = r->n_tool_calls;
		if (r->n_tool_calls) {
			snprintf(g->tc_id, sizeof g->tc_id, "%s", r->tool_calls[0].id);
			snprintf(g->tc_name, sizeof g->tc_name, "%s", r->tool_calls[0].name);
			snprintf(g->tc_args, sizeof g->tc_args, "%s", r->tool_calls[0].arguments);
		}
		snprintf(g->finish, sizeof g->finish, "%s", r->finish_reason);
		g->usage = r->usage;
	}
}

struct fx {
	uv_loop_t loop;
	struct llmfake *fake;
	struct http_client *http;
	struct llm_client *llm;
	struct llm_config cfg;
};

static void make_client(struct fx *fx, const char *key)
{
	llm_client_free(fx->llm);
	llm_config_free(&fx->cfg);
	llm_config_init(&fx->cfg, llmfake_base_url(fx->fake), key, "test-model");
	fx->cfg.backoff_base_ms = 1;
	fx->cfg.backoff_cap_ms = 20;
	fx->cfg.timeout_ms = 5000;
	fx->llm = llm_client_new(fx->http, &fx->cfg);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = llmfake_new(err, sizeof err);
	assert_non_null(fx->fake);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	make_client(fx, "sk-test-key-1234");
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	llm_client_free(fx->llm);
	llm_config_free(&fx->cfg);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	llmfake_free(fx->fake);
	free(fx);
	return 0;
}

static struct llm_message user_msg[] = {
        {.role = LLM_ROLE_SYSTEM, .content = "You are a test."},
        {.role = LLM_ROLE_USER, .content = "hello there"},
};

static void chat(struct fx *fx, const struct llm_request *req, struct got *g)
{
	struct ga_err e = {{0}};
	assert_true(llm_chat(fx->llm, req, on_done, g, &e) > 0);
	assert_int_equal(testloop_run_until(&fx->loop, &g->done), 0);
	assert_int_equal(g->calls, 1);
}

static void simple(struct fx *fx, struct got *g)
{
	struct llm_request req = {.messages = user_msg, .n_messages = 2};
	chat(fx, &req, g);
}

static void test_text_reply_and_what_was_sent(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"match\":{\"last_user_contains\":\"hello\"},"
	                         "\"content\":\"hi, friend\","
	                         "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_OK);
	assert_string_equal(g.content, "hi, friend");
	assert_string_equal(g.finish, "stop");
	assert_int_equal(g.usage.prompt_tokens, 12);
	assert_int_equal(g.usage.completion_tokens, 3);
	assert_int_equal(g.usage.total_tokens, 15);
	assert_int_equal(g.err.attempts, 1);
	free(g.content);

	cJSON *body = llmfake_request(fx->fake, 0);
	assert_non_null(body);
	assert_string_equal(json_string_or(body, "model", ""), "test-model");
	const cJSON *msgs = cJSON_GetObjectItem(body, "messages");
	assert_int_equal(cJSON_GetArraySize(msgs), 2);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(msgs, 0), "role", ""), "system");
	assert_string_equal(json_string_or(cJSON_GetArrayItem(msgs, 1), "content", ""),
	                    "hello there");
	assert_null(cJSON_GetObjectItem(body, "tools"));
	assert_null(cJSON_GetObjectItem(body, "tool_choice"));
	cJSON_Delete(body);
	char *auth = llmfake_request_header(fx->fake, 0, "Authorization");
	assert_string_equal(auth, "Bearer sk-test-key-1234");
	free(auth);
	char *ua = llmfake_request_header(fx->fake, 0, "User-Agent");
	assert_string_equal(ua, "general-agent/" GA_VERSION);
	free(ua);
}

static void test_no_key_means_no_authorization_header(void **state)
{
	struct fx *fx = *state;
	make_client(fx, NULL); /* Ollama, llama.cpp */
	llmfake_script(fx->fake, "[{\"content\":\"ok\"}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_OK);
	free(g.content);
	assert_null(llmfake_request_header(fx->fake, 0, "Authorization"));
}

static const char *schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
                            "\"string\"}},\"required\":[\"text\"]}";

static void test_tools_and_tool_choice_on_the_wire(void **state)
{
	struct fx *fx = *state;
	llmfake_script(
	        fx->fake,
	        "[{\"match\":{\"tools\":[\"post\"],\"tool_choice\":\"post\"},"
	        "\"tool_calls\":[{\"id\":\"call_a\",\"name\":\"post\","
	        "\"arguments\":{\"text\":\"hi\"}}]},"
	        "{\"match\":{\"tool_choice\":\"required\"},\"tool_calls\":[{\"name\":\"post\","
	        "\"arguments\":\"{\\\"text\\\":\\\"x\\\"}\"}]}]");
	struct llm_tool_def tools[] = {
	        {.name = "post", .description = "Post a thing.", .parameters_json = schema},
	        {.name = "noop", .description = "Nothing."}};
	struct llm_request req = {.messages = user_msg,
	                          .n_messages = 2,
	                          .tools = tools,
	                          .n_tools = 2,
	                          .tool_choice = LLM_TOOL_CHOICE_NAMED,
	                          .tool_choice_name = "post"};
	struct got g = {0};
	chat(fx, &req, &g);
	assert_int_equal(g.err.kind, LLM_OK);
	assert_null(g.content);
	assert_int_equal(g.n_tool_calls, 1);
	assert_string_equal(g.tc_id, "call_a");
	assert_string_equal(g.tc_name, "post");
	assert_string_equal(g.tc_args, "{\"text\":\"hi\"}");
	assert_string_equal(g.finish, "tool_calls");

	cJSON *body = llmfake_request(fx->fake, 0);
	const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(body, "tools"), 0);
	assert_string_equal(json_string_or(t0, "type", ""), "function");
	const cJSON *fn = cJSON_GetObjectItem(t0, "function");
	assert_string_equal(json_string_or(fn, "name", ""), "post");
	assert_string_equal(json_string_or(fn, "description", ""), "Post a thing.");
	const cJSON *params = cJSON_GetObjectItem(fn, "parameters");
	assert_string_equal(json_string_or(params, "type", ""), "object");
	assert_true(cJSON_IsArray(cJSON_GetObjectItem(params, "required")));
	/* a tool without a schema still gets an (empty) object schema */
	const cJSON *t1 = cJSON_GetArrayItem(cJSON_GetObjectItem(body, "tools"), 1);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(cJSON_GetObjectItem(t1, "function"),
	                                                       "parameters"),
	                                   "type", ""),
	                    "object");
	const cJSON *tc = cJSON_GetObjectItem(body, "tool_choice");
	assert_string_equal(json_string_or(tc, "type", ""), "function");
	assert_string_equal(json_string_or(cJSON_GetObjectItem(tc, "function"), "name", ""),
	                    "post");
	cJSON_Delete(body);

	/* required is a plain string; a missing id is synthesised */
	req.tool_choice = LLM_TOOL_CHOICE_REQUIRED;
	struct got g2 = {0};
	chat(fx, &req, &g2);
	assert_int_equal(g2.err.kind, LLM_OK);
	assert_string_equal(g2.tc_args, "{\"text\":\"x\"}");
	body = llmfake_request(fx->fake, 1);
	assert_string_equal(json_string_or(body, "tool_choice", ""), "required");
	cJSON_Delete(body);
}

/* The fake's own script: captures fill a tool call from the prompt (an
 * entry whose capture finds nothing is passed over), after_tool answers
 * the turn after a tool call, any_contains reads the system prompt. */
static void test_fake_captures(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake,
	               "[{\"match\":{\"after_tool\":true},\"content\":\"after\"},"
	               "{\"match\":{\"any_contains\":\"You are a test\"},\"captures\":{\"pr\":"
	               "\"pull request #([0-9]+)\",\"f\":\"(task-[0-9]+\\\\.txt)\"},"
	               "\"tool_calls\":[{\"name\":\"review\",\"arguments\":{\"n\":\"{{pr}}\","
	               "\"path\":\"{{f}}\",\"note\":\"on {{f}}!\"}}]},"
	               "{\"content\":\"nothing\"}]");
	struct llm_message asked[] = {
	        {.role = LLM_ROLE_SYSTEM, .content = "You are a test."},
	        {.role = LLM_ROLE_USER, .content = "Review pull request #42: see task-7.txt"},
	};
	struct llm_request req = {.messages = asked, .n_messages = 2};
	struct got g = {0};
	chat(fx, &req, &g);
	assert_int_equal(g.n_tool_calls, 1);
	assert_string_equal(g.tc_args, "{\"n\":42,\"path\":\"task-7.txt\",\"note\":\"on "
	                               "task-7.txt!\"}");
	free(g.content);
	struct got g2 = {0};
	simple(fx, &g2); /* no PR in the prompt: the capture finds nothing */
	assert_string_equal(g2.content, "nothing");
	free(g2.content);
	struct llm_tool_call call = {.id = "call_1", .name = "review", .arguments = "{}"};
	struct llm_message after[] = {
	        asked[0],
	        asked[1],
	        {.role = LLM_ROLE_ASSISTANT, .tool_calls = &call, .n_tool_calls = 1},
	        {.role = LLM_ROLE_TOOL, .tool_call_id = "call_1", .content = "reviewed"}};
	struct llm_request req3 = {.messages = after, .n_messages = 4};
	struct got g3 = {0};
	chat(fx, &req3, &g3);
	assert_string_equal(g3.content, "after");
	free(g3.content);
}

static void test_tool_results_carry_their_ids(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"content\":\"done\"}]");
	struct llm_tool_call calls[] = {
	        {.id = "call_1", .name = "post", .arguments = "{\"text\":\"a\"}"},
	        {.id = "call_2", .name = "noop", .arguments = "{}"}};
	struct llm_message msgs[] = {
	        {.role = LLM_ROLE_USER, .content = "go"},
	        {.role = LLM_ROLE_ASSISTANT, .tool_calls = calls, .n_tool_calls = 2},
	        {.role = LLM_ROLE_TOOL, .tool_call_id = "call_1", .content = "posted"},
	        {.role = LLM_ROLE_TOOL, .tool_call_id = "call_2", .content = "Error: nothing"},
	};
	struct llm_request req = {.messages = msgs,
	                          .n_messages = 4,
	                          .max_tokens = 100,
	                          .temperature = 0,
	                          .has_temperature = true};
	struct got g = {0};
	chat(fx, &req, &g);
	assert_int_equal(g.err.kind, LLM_OK);
	free(g.content);
	cJSON *body = llmfake_request(fx->fake, 0);
	const cJSON *m = cJSON_GetObjectItem(body, "messages");
	const cJSON *a = cJSON_GetArrayItem(m, 1);
	assert_string_equal(json_string_or(a, "role", ""), "assistant");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(a, "content")));
	const cJSON *tcs = cJSON_GetObjectItem(a, "tool_calls");
	assert_int_equal(cJSON_GetArraySize(tcs), 2);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(tcs, 1), "id", ""), "call_2");
	assert_string_equal(
	        json_string_or(cJSON_GetObjectItem(cJSON_GetArrayItem(tcs, 0), "function"),
	                       "arguments", ""),
	        "{\"text\":\"a\"}");
	const cJSON *t = cJSON_GetArrayItem(m, 3);
	assert_string_equal(json_string_or(t, "role", ""), "tool");
	assert_string_equal(json_string_or(t, "tool_call_id", ""), "call_2");
	assert_string_equal(json_string_or(t, "content", ""), "Error: nothing");
	assert_int_equal(json_int_or(body, "max_tokens", 0), 100);
	assert_non_null(cJSON_GetObjectItem(body, "temperature"));
	cJSON_Delete(body);

	/* a tool message without its id is refused before sending */
	msgs[2].tool_call_id = NULL;
	struct ga_err e = {{0}};
	assert_int_equal(llm_chat(fx->llm, &req, on_done, &g, &e), 0);
	assert_non_null(strstr(e.msg, "messages[2] is a tool result without tool_call_id"));
}

static void test_bad_tool_schema_is_refused(void **state)
{
	struct fx *fx = *state;
	struct llm_tool_def tools[] = {{.name = "x", .parameters_json = "{\"type\":"}};
	struct llm_request req = {
	        .messages = user_msg, .n_messages = 2, .tools = tools, .n_tools = 1};
	struct ga_err e = {{0}};
	struct got g = {0};
	assert_int_equal(llm_chat(fx->llm, &req, on_done, &g, &e), 0);
	assert_non_null(strstr(e.msg, "tool 'x': parameters must be a JSON Schema object"));
	assert_int_equal(llmfake_calls(fx->fake), 0);
}

static void test_429_with_retry_after_then_success(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"error\":{\"status\":429,"
	                         "\"message\":\"slow down\",\"retry_after\":1}},"
	                         "{\"content\":\"second time lucky\"}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_OK);
	assert_int_equal(g.err.attempts, 2);
	assert_string_equal(g.content, "second time lucky");
	free(g.content);
	struct llm_stats st;
	llm_client_stats(fx->llm, &st);
	assert_int_equal(st.retries, 1);
	assert_int_equal(st.requests, 2);
	assert_int_equal(llmfake_calls(fx->fake), 2);
}

static void test_5xx_gives_up_after_three_retries(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"error\":{\"status\":503,\"message\":\"overloaded\"}}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_ERR_TRANSIENT);
	assert_int_equal(g.err.status, 503);
	assert_int_equal(g.err.attempts, 4);
	assert_int_equal(llmfake_calls(fx->fake), 4);
	assert_non_null(strstr(g.err.msg, "answered 503"));
	assert_non_null(strstr(g.err.msg, "overloaded"));
}

static void test_html_502_page_is_transient(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"html\":502},"
	                         "{\"match\":{\"call\":1},\"html\":200},"
	                         "{\"content\":\"recovered\"}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_OK);
	assert_int_equal(g.err.attempts, 3);
	assert_string_equal(g.content, "recovered");
	free(g.content);

	/* only HTML, forever: the last error says what came back */
	llmfake_reset(fx->fake);
	llmfake_script(fx->fake, "[{\"html\":200}]");
	struct got g2 = {0};
	simple(fx, &g2);
	assert_int_equal(g2.err.kind, LLM_ERR_TRANSIENT);
	assert_non_null(strstr(g2.err.msg, "HTML page where JSON was expected"));
}

static void test_fatal_statuses_name_the_variable(void **state)
{
	struct fx *fx = *state;
	static const struct {
		int status;
		const char *words;
	} cases[] = {{401, "invalid or expired"}, {402, "no credit"}, {403, "may not use model"}};
	for (size_t i = 0; i < 3; i++) {
		llmfake_reset(fx->fake);
		char s[128];
		snprintf(s, sizeof s, "[{\"error\":{\"status\":%d,\"message\":\"nope\"}}]",
		         cases[i].status);
		llmfake_script(fx->fake, s);
		size_t before = llmfake_calls(fx->fake);
		struct got g = {0};
		simple(fx, &g);
		assert_int_equal(g.err.kind, LLM_ERR_FATAL);
		assert_int_equal(g.err.status, cases[i].status);
		assert_int_equal(llmfake_calls(fx->fake) - before, 1); /* never retried */
		assert_non_null(strstr(g.err.msg, "LLM_API_KEY is set but 127.0.0.1 answered"));
		assert_non_null(strstr(g.err.msg, cases[i].words));
		assert_non_null(strstr(g.err.msg, "nope"));
		/* the key itself never appears */
		assert_null(strstr(g.err.msg, "sk-test-key"));
	}
}

static void test_fatal_without_key_says_to_set_it(void **state)
{
	struct fx *fx = *state;
	make_client(fx, NULL);
	llmfake_script(fx->fake, "[{\"error\":{\"status\":401}}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_ERR_FATAL);
	assert_non_null(strstr(g.err.msg, "no API key is configured: set LLM_API_KEY"));
}

static void test_error_object_inside_200_is_classified(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"error\":{\"status\":401,\"body_status\":200,\"code\":401,"
	                         "\"message\":\"No auth credentials found\"}}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_ERR_FATAL);
	assert_non_null(strstr(g.err.msg, "No auth credentials found"));

	llmfake_reset(fx->fake);
	llmfake_script(fx->fake, "[{\"error\":{\"status\":200,\"message\":\"context too long\"}}]");
	struct got g2 = {0};
	simple(fx, &g2);
	assert_int_equal(g2.err.kind, LLM_ERR_REQUEST);
	assert_non_null(strstr(g2.err.msg, "context too long"));
}

static void test_words_in_a_message_do_not_make_it_fatal(void **state)
{
	/* The reference exited when "401" or "credit" appeared anywhere in an
	 * error text; we classify by status only. */
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"error\":{\"status\":500,"
	                         "\"message\":\"upstream said 401 unauthorized, credit billing\"}},"
	                         "{\"content\":\"fine\"}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_OK);
	free(g.content);
}

static void test_malformed_json_names_the_problem(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"malformed\":true}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_ERR_MALFORMED);
	assert_int_equal(llmfake_calls(fx->fake), 1);
	assert_non_null(strstr(g.err.msg, "malformed JSON"));
}

static void test_missing_and_mistyped_fields(void **state)
{
	struct fx *fx = *state;
	static const struct {
		const char *body;
		const char *words;
	} cases[] = {
	        {"{\\\"id\\\":\\\"x\\\"}", "no 'choices' field"},
	        {"{\\\"choices\\\":{}}", "'choices' must be an array"},
	        {"{\\\"choices\\\":[]}", "'choices' is empty"},
	        {"{\\\"choices\\\":[{\\\"index\\\":0}]}", "choices[0].message is missing"},
	        {"{\\\"choices\\\":[{\\\"message\\\":\\\"hi\\\"}]}",
	         "choices[0].message must be an object"},
	        {"{\\\"choices\\\":[{\\\"message\\\":{\\\"content\\\":5}}]}",
	         "content must be a string or null"},
	        {"{\\\"choices\\\":[{\\\"message\\\":{\\\"tool_calls\\\":{}}}]}",
	         "tool_calls must be an array"},
	        {"{\\\"choices\\\":[{\\\"message\\\":{\\\"tool_calls\\\":[{\\\"id\\\":\\\"a\\\"}]}}"
	         "]}",
	         "tool_calls[0].function is missing"},
	        {"{\\\"choices\\\":[{\\\"message\\\":{\\\"tool_calls\\\":[{\\\"function\\\":{}}]}}]"
	         "}",
	         "tool_calls[0].function.name is missing"},
	        {"{\\\"choices\\\":[{\\\"message\\\":{\\\"tool_calls\\\":[{\\\"function\\\":{"
	         "\\\"name\\\":\\\"a\\\",\\\"arguments\\\":7}}]}}]}",
	         "arguments must be a JSON string"},
	        {"[1,2]", "not an object"},
	        {"{\\\"choices\\\":[{\\\"message\\\":{\\\"content\\\":\\\"x\\\"}}],"
	         "\\\"usage\\\":{\\\"prompt_tokens\\\":\\\"many\\\"}}",
	         "usage token counts"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		llmfake_reset(fx->fake);
		char s[512];
		snprintf(s, sizeof s, "[{\"body\":\"%s\"}]", cases[i].body);
		llmfake_script(fx->fake, s);
		struct got g = {0};
		simple(fx, &g);
		if (g.err.kind != LLM_ERR_MALFORMED || !strstr(g.err.msg, cases[i].words))
			fail_msg("case %zu: kind %s, message '%s', expected '%s'", i,
			         llm_error_kind_name(g.err.kind), g.err.msg, cases[i].words);
	}
}

static void test_refused_request_is_not_retried(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"error\":{\"status\":404,\"message\":\"model not found\"}}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_ERR_REQUEST);
	assert_int_equal(llmfake_calls(fx->fake), 1);
	assert_non_null(strstr(g.err.msg, "check LLM_BASE_URL"));
	assert_non_null(strstr(g.err.msg, "test-model"));

	llmfake_reset(fx->fake);
	struct got g2 = {0}; /* nothing scripted: the fake's own 400 */
	simple(fx, &g2);
	assert_int_equal(g2.err.kind, LLM_ERR_REQUEST);
	assert_non_null(strstr(g2.err.msg, "no scripted response matches call 1"));
}

static void test_timeout_and_drop_are_transient(void **state)
{
	struct fx *fx = *state;
	fx->cfg.timeout_ms = 300;
	fx->cfg.max_retries = 1;
	llm_client_free(fx->llm);
	fx->llm = llm_client_new(fx->http, &fx->cfg);
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"action\":\"hang\"},"
	                         "{\"match\":{\"call\":1},\"action\":\"drop\"},"
	                         "{\"content\":\"never reached\"}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_ERR_TRANSIENT);
	assert_int_equal(g.err.attempts, 2);
	assert_int_equal(llmfake_calls(fx->fake), 2);
}

/* Nothing listens at the configured URL: transient, and the message names
 * the variable to fix. */
static void test_closed_port_names_the_variable(void **state)
{
	struct fx *fx = *state;
	llm_client_free(fx->llm);
	llm_config_free(&fx->cfg);
	/* port 1 on loopback: nothing listens there */
	llm_config_init(&fx->cfg, "http://127.0.0.1:1/v1", "test-key-0123456789", "test-model");
	fx->cfg.max_retries = 0;
	fx->llm = llm_client_new(fx->http, &fx->cfg);
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_ERR_TRANSIENT);
	if (!strstr(g.err.msg, "check LLM_BASE_URL"))
		fail_msg("the connection error does not name LLM_BASE_URL: %s", g.err.msg);
}

static void test_delayed_answer_still_arrives(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"delay_ms\":100,\"content\":\"late but fine\"}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_OK);
	assert_string_equal(g.content, "late but fine");
	free(g.content);
}

static void test_free_cancels_pending_calls(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"action\":\"hang\"}]");
	struct got g = {0};
	struct ga_err e = {{0}};
	struct llm_request req = {.messages = user_msg, .n_messages = 2};
	assert_true(llm_chat(fx->llm, &req, on_done, &g, &e) > 0);
	assert_int_equal(llmfake_wait_calls(fx->fake, 0, 0), 0);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_false(g.done);
	llm_client_free(fx->llm);
	fx->llm = NULL;
	assert_true(g.done);
	assert_int_equal(g.err.kind, LLM_ERR_CANCELLED);
	make_client(fx, "k");
}

/* The provider's message is quoted whole when it fits (a last multibyte
 * character included) and cut on a character boundary when it does not. */
static void test_provider_message_cut(void **state)
{
	(void)state;
	struct llm_config cfg;
	llm_config_init(&cfg, "http://127.0.0.1:1", "k", "m");
	const char *body = "{\"error\":{\"message\":\"mod\xC3\xA8le inconnu \xC3\xA9\"}}";
	struct llm_response resp = {0};
	struct llm_error err = {0};
	llm_parse_http(&cfg, HTTP_OK, NULL, 400, "application/json", NULL, body, strlen(body), 0,
	               &resp, &err);
	assert_non_null(strstr(err.msg, "mod\xC3\xA8le inconnu \xC3\xA9"));
	/* "é" straddles LLM_PROVIDER_MSG_MAX: left out whole */
	char big[LLM_PROVIDER_MSG_MAX + 64];
	int n = snprintf(big, sizeof big, "{\"error\":{\"message\":\"");
	memset(big + n, 'x', LLM_PROVIDER_MSG_MAX - 1);
	snprintf(big + n + LLM_PROVIDER_MSG_MAX - 1,
	         sizeof big - (size_t)n - LLM_PROVIDER_MSG_MAX + 1, "\xC3\xA9yz\"}}");
	struct llm_error err2 = {0};
	llm_parse_http(&cfg, HTTP_OK, NULL, 400, "application/json", NULL, big, strlen(big), 0,
	               &resp, &err2);
	assert_null(strstr(err2.msg, "\xC3"));
	assert_non_null(strstr(err2.msg, "xxxxx"));
	llm_config_free(&cfg);
}

static void test_backoff_policy(void **state)
{
	assert_int_equal(llm_backoff_ms(5000, 60000, 1, 0, -1), 5000);
	assert_int_equal(llm_backoff_ms(5000, 60000, 2, 0, -1), 10000);
	assert_int_equal(llm_backoff_ms(5000, 60000, 3, 0, -1), 20000);
	assert_int_equal(llm_backoff_ms(5000, 60000, 3, 1, -1), 26000);
	assert_int_equal(llm_backoff_ms(5000, 60000, 5, 1, -1), 60000);
	assert_int_equal(llm_backoff_ms(5000, 60000, 40, 0, -1), 60000);
	assert_int_equal(llm_backoff_ms(5000, 60000, 1, 0, 30000), 30000);  /* Retry-After */
	assert_int_equal(llm_backoff_ms(5000, 60000, 1, 0, 600000), 60000); /* capped */
	assert_int_equal(llm_backoff_ms(5000, 60000, 2, 0, 1000), 10000);   /* backoff wins */
}

static void test_config_from_ga(void **state)
{
	struct ga_config ga = {0};
	struct llm_config c;
	struct ga_err e = {{0}};
	assert_int_equal(llm_config_from_ga(&ga, &c, &e), -1);
	assert_non_null(strstr(e.msg, "AI_GATEWAY_API_KEY"));
	assert_non_null(strstr(e.msg, "LLM_BASE_URL and LLM_MODEL"));

	ga.llm_base_url = "http://127.0.0.1:11434/v1/";
	assert_int_equal(llm_config_from_ga(&ga, &c, &e), -1);
	assert_non_null(strstr(e.msg, "LLM_MODEL"));
	ga.llm_model = "llama3.1";
	assert_int_equal(llm_config_from_ga(&ga, &c, &e), 0);
	assert_string_equal(c.base_url, "http://127.0.0.1:11434/v1");
	assert_null(c.api_key);
	assert_string_equal(c.key_var, "LLM_API_KEY");
	llm_config_free(&c);

	ga.ai_gateway_api_key = "gw-key";
	ga.ai_gateway_model = "openai/gpt-5.2";
	ga.ai_gateway_base_url = "https://ai-gateway.vercel.sh/v1";
	assert_int_equal(llm_config_from_ga(&ga, &c, &e), 0);
	assert_string_equal(c.model, "openai/gpt-5.2");
	assert_string_equal(c.key_var, "AI_GATEWAY_API_KEY");
	assert_string_equal(c.api_key, "gw-key");
	llm_config_free(&c);
}

static void test_gateway_fatal_names_gateway_variable(void **state)
{
	struct fx *fx = *state;
	struct ga_config ga = {.ai_gateway_api_key = "gw-key-5678",
	                       .ai_gateway_model = "m",
	                       .ai_gateway_base_url = (char *)llmfake_base_url(fx->fake)};
	struct llm_config c;
	assert_int_equal(llm_config_from_ga(&ga, &c, NULL), 0);
	c.backoff_base_ms = 1;
	c.backoff_cap_ms = 5;
	llm_client_free(fx->llm);
	fx->llm = llm_client_new(fx->http, &c);
	llm_config_free(&c);
	llmfake_script(fx->fake, "[{\"error\":{\"status\":401}}]");
	struct got g = {0};
	simple(fx, &g);
	assert_int_equal(g.err.kind, LLM_ERR_FATAL);
	assert_non_null(strstr(g.err.msg, "AI_GATEWAY_API_KEY is set but"));
}

static void test_probe(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"content\":\"ok\",\"model\":\"m-1\"},"
	                         "{\"match\":{\"call\":1},\"error\":{\"status\":401}},"
	                         "{\"match\":{\"call\":2},\"action\":\"hang\"}]");
	struct llm_probe_result r;
	assert_int_equal(llm_probe(&fx->cfg, 5000, &r), 0);
	assert_int_equal(r.error.kind, LLM_OK);
	assert_string_equal(r.reply, "ok");
	assert_string_equal(r.model, "m-1");
	assert_int_equal(r.usage.total_tokens, 15);

	assert_int_equal(llm_probe(&fx->cfg, 5000, &r), -1);
	assert_int_equal(r.error.kind, LLM_ERR_FATAL);
	assert_int_equal(llmfake_calls(fx->fake), 2); /* no retries in a probe */

	assert_int_equal(llm_probe(&fx->cfg, 300, &r), -1);
	assert_int_equal(r.error.kind, LLM_ERR_TRANSIENT);
	assert_non_null(strstr(r.error.msg, "did not answer within 300 ms"));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_text_reply_and_what_was_sent),
	        T(test_no_key_means_no_authorization_header),
	        T(test_tools_and_tool_choice_on_the_wire),
	        T(test_tool_results_carry_their_ids),
	        T(test_bad_tool_schema_is_refused),
	        T(test_429_with_retry_after_then_success),
	        T(test_5xx_gives_up_after_three_retries),
	        T(test_html_502_page_is_transient),
	        T(test_fatal_statuses_name_the_variable),
	        T(test_fatal_without_key_says_to_set_it),
	        T(test_error_object_inside_200_is_classified),
	        T(test_words_in_a_message_do_not_make_it_fatal),
	        T(test_malformed_json_names_the_problem),
	        T(test_missing_and_mistyped_fields),
	        T(test_refused_request_is_not_retried),
	        T(test_closed_port_names_the_variable),
	        T(test_timeout_and_drop_are_transient),
	        T(test_delayed_answer_still_arrives),
	        T(test_free_cancels_pending_calls),
	        T(test_gateway_fatal_names_gateway_variable),
	        T(test_probe),
	        cmocka_unit_test(test_backoff_policy),
	        T(test_fake_captures),
	        cmocka_unit_test(test_provider_message_cut),
	        cmocka_unit_test(test_config_from_ga),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
