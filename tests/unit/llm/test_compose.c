/*
 * test_compose — the tool-call loop against the OpenAI-compatible fake:
 * tool results with their ids, schema errors sent back to the model,
 * unknown tools, truncation, max rounds, the budget, model errors, forced
 * tool use with the plain-text JSON fallback, async handlers, cancellation;
 * plus the pure helpers (schema subset, JSON extraction, truncation).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "modules/compose/compose.h"
#include "modules/compose/schema.h"
#include "tests/fakes/llm/llmfake.h"
#include "tests/unit/llm/testloop.h"

struct fx {
	uv_loop_t loop;
	struct llmfake *fake;
	struct http_client *http;
	struct llm_client *llm;
	bool done;
	struct compose_result res;
	char content[256];
	char reason[GA_ERR_MSG_MAX];
	size_t n_messages;
	int handler_calls;
	char last_args[512];
	const char *reply; /* what the echo handler answers */
	bool reply_stop;
	char *big_reply;              /* for truncation */
	struct compose_call *pending; /* async handler */
	uv_timer_t later;
};

static int64_t fixed_now(void)
{
	return INT64_C(1795000000000); /* 2026-11-18 */
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = llmfake_new(err, sizeof err);
	assert_non_null(fx->fake);
	fx->http = http_client_new(&fx->loop, NULL, NULL);
	struct llm_config cfg;
	llm_config_init(&cfg, llmfake_base_url(fx->fake), "k", "m");
	cfg.backoff_base_ms = 1;
	cfg.backoff_cap_ms = 5;
	fx->llm = llm_client_new(fx->http, &cfg);
	llm_config_free(&cfg);
	fx->reply = "ok";
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	llm_client_free(fx->llm);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	llmfake_free(fx->fake);
	free(fx->big_reply);
	free(fx);
	return 0;
}

static void on_done(void *ud, const struct compose_result *res)
{
	struct fx *fx = ud;
	fx->done = true;
	fx->res = *res;
	snprintf(fx->content, sizeof fx->content, "%s", res->content ? res->content : "");
	snprintf(fx->reason, sizeof fx->reason, "%s", res->reason);
	fx->n_messages = res->n_messages;
	fx->res.content = NULL;
	fx->res.messages = NULL;
}

static void echo_tool(void *ud, struct compose_call *call, const cJSON *args)
{
	struct fx *fx = compose_call_ud(call);
	fx->handler_calls++;
	char *s = cJSON_PrintUnformatted(args);
	snprintf(fx->last_args, sizeof fx->last_args, "%s", s);
	free(s);
	compose_call_done(call, fx->big_reply ? fx->big_reply : fx->reply, false, fx->reply_stop);
}

static void on_later(uv_timer_t *t)
{
	struct fx *fx = t->data;
	struct compose_call *c = fx->pending;
	fx->pending = NULL;
	compose_call_done(c, "finished later", false, false);
}

static void async_tool(void *ud, struct compose_call *call, const cJSON *args)
{
	struct fx *fx = compose_call_ud(call);
	fx->handler_calls++;
	fx->pending = call;
	uv_timer_init(&fx->loop, &fx->later);
	fx->later.data = fx;
	uv_timer_start(&fx->later, on_later, 5, 0);
}

static const char *echo_schema =
        "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"maxLength\":50},"
        "\"n\":{\"type\":\"integer\"}},\"required\":[\"text\"]}";

static struct compose_tool tools[] = {
        {.name = "echo", .description = "Echo text.", .run = echo_tool},
        {.name = "other", .description = "Another tool.", .run = echo_tool},
};

static struct llm_message hello[] = {{.role = LLM_ROLE_USER, .content = "hello"}};

static void run(struct fx *fx, struct compose_opts *o)
{
	tools[0].schema_json = echo_schema;
	o->loop = &fx->loop;
	o->llm = fx->llm;
	o->done = on_done;
	o->ud = fx;
	if (!o->messages) {
		o->messages = hello;
		o->n_messages = 1;
	}
	struct ga_err e = {{0}};
	struct compose_run *r = compose_start(o, &e);
	if (!r)
		fail_msg("compose_start: %s", e.msg);
	assert_false(fx->done); /* never called back inside compose_start */
	assert_int_equal(testloop_run_until(&fx->loop, &fx->done), 0);
}

static cJSON *sent(struct fx *fx, size_t call)
{
	cJSON *b = llmfake_request(fx->fake, call);
	assert_non_null(b);
	return b;
}

static const cJSON *msg_at(const cJSON *body, int i)
{
	const cJSON *m = cJSON_GetObjectItem(body, "messages");
	if (i < 0)
		i += cJSON_GetArraySize(m);
	return cJSON_GetArrayItem(m, i);
}

static void test_final_answer(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"content\":\"just words\"}]");
	struct compose_opts o = {
	        .system_prompt = "SOUL\n\n---\n\nskill", .tools = tools, .n_tools = 2};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_FINAL);
	assert_string_equal(fx->res.stop_name, "final");
	assert_string_equal(fx->content, "just words");
	assert_int_equal(fx->res.rounds, 1);
	assert_int_equal(fx->handler_calls, 0);
	cJSON *b = sent(fx, 0);
	assert_string_equal(json_string_or(msg_at(b, 0), "role", ""), "system");
	assert_string_equal(json_string_or(msg_at(b, 0), "content", ""), "SOUL\n\n---\n\nskill");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(b, "tools")), 2);
	cJSON_Delete(b);
}

static void test_tool_round_trip_with_ids(void **state)
{
	struct fx *fx = *state;
	fx->reply = "echoed: a";
	llmfake_script(fx->fake,
	               "[{\"match\":{\"call\":0},\"content\":\"thinking\",\"tool_calls\":["
	               "{\"id\":\"call_A\",\"name\":\"echo\",\"arguments\":{\"text\":\"a\"}},"
	               "{\"id\":\"call_B\",\"name\":\"other\",\"arguments\":{}}]},"
	               "{\"match\":{\"call\":1},\"content\":\"all done\"}]");
	struct compose_opts o = {.tools = tools, .n_tools = 2};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_FINAL);
	assert_string_equal(fx->content, "all done");
	assert_int_equal(fx->res.rounds, 2);
	assert_int_equal(fx->res.tool_calls, 2);
	assert_int_equal(fx->handler_calls, 2);
	assert_int_equal(fx->res.usage.total_tokens, 30);
	/* user, assistant(tool_calls), tool, tool, assistant(final) */
	assert_int_equal(fx->n_messages, 5);
	cJSON *b = sent(fx, 1);
	const cJSON *a = msg_at(b, 1);
	assert_string_equal(json_string_or(a, "role", ""), "assistant");
	assert_string_equal(json_string_or(a, "content", ""), "thinking");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(a, "tool_calls")), 2);
	assert_string_equal(json_string_or(msg_at(b, 2), "tool_call_id", ""), "call_A");
	assert_string_equal(json_string_or(msg_at(b, 2), "content", ""), "echoed: a");
	assert_string_equal(json_string_or(msg_at(b, 3), "tool_call_id", ""), "call_B");
	cJSON_Delete(b);
}

static void test_schema_errors_go_back_to_the_model(void **state)
{
	struct fx *fx = *state;
	llmfake_script(
	        fx->fake,
	        "[{\"match\":{\"call\":0},\"tool_calls\":["
	        "{\"id\":\"c1\",\"name\":\"echo\",\"arguments\":{}},"
	        "{\"id\":\"c2\",\"name\":\"echo\",\"arguments\":{\"text\":5}},"
	        "{\"id\":\"c3\",\"name\":\"echo\",\"arguments\":\"not json\"},"
	        "{\"id\":\"c4\",\"name\":\"nope\",\"arguments\":{}},"
	        "{\"id\":\"c5\",\"name\":\"echo\",\"arguments\":\"[1]\"},"
	        "{\"id\":\"c6\",\"name\":\"echo\",\"arguments\":{\"text\":\"x\",\"n\":1.5}}]},"
	        "{\"match\":{\"call\":1},\"tool_calls\":[{\"id\":\"c7\",\"name\":\"echo\","
	        "\"arguments\":{\"text\":\"fixed\"}}]},"
	        "{\"match\":{\"call\":2},\"content\":\"ok\"}]");
	struct compose_opts o = {.tools = tools, .n_tools = 2};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_FINAL);
	assert_int_equal(fx->handler_calls, 1); /* only the valid call reached the handler */
	assert_string_equal(fx->last_args, "{\"text\":\"fixed\"}");
	assert_int_equal(fx->res.tool_errors, 6);
	cJSON *b = sent(fx, 1);
	static const char *expect[] = {
	        "field 'text' is required",
	        "field 'text' must be a string, got an integer",
	        "are not valid JSON",
	        "there is no tool named 'nope'. Available tools: echo, other.",
	        "must be a JSON object",
	        "field 'n' must be an integer, got a number",
	};
	for (int i = 0; i < 6; i++) {
		const cJSON *m = msg_at(b, 2 + i);
		assert_string_equal(json_string_or(m, "role", ""), "tool");
		const char *c = json_string_or(m, "content", "");
		if (!strstr(c, expect[i]) || strncmp(c, "Error: ", 7) != 0)
			fail_msg("tool result %d: '%s' lacks '%s'", i, c, expect[i]);
	}
	cJSON_Delete(b);
}

static void test_results_are_truncated(void **state)
{
	struct fx *fx = *state;
	fx->big_reply = malloc(40001);
	memset(fx->big_reply, 'x', 40000);
	fx->big_reply[40000] = '\0';
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"tool_calls\":[{\"name\":\"echo\","
	                         "\"arguments\":{\"text\":\"big\"}}]},{\"content\":\"ok\"}]");
	struct compose_opts o = {.tools = tools, .n_tools = 1};
	run(fx, &o);
	cJSON *b = sent(fx, 1);
	const char *c = json_string_or(msg_at(b, -1), "content", "");
	assert_true(strlen(c) < 30200);
	assert_non_null(strstr(c, "[TRUNCATED: the result was 40000 characters; only the first "
	                          "30000 are shown]"));
	assert_int_equal(strspn(c, "x"), 30000);
	cJSON_Delete(b);
}

static void test_max_rounds(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"tool_calls\":[{\"name\":\"echo\",\"arguments\":{\"text\":"
	                         "\"again\"}}]}]");
	struct compose_opts o = {.tools = tools, .n_tools = 1, .max_rounds = 3};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_MAX_ROUNDS);
	assert_int_equal(fx->res.rounds, 3);
	assert_int_equal(llmfake_calls(fx->fake), 3);
	assert_non_null(strstr(fx->reason, "after 3 model calls"));
}

static void test_default_max_rounds_is_8(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"tool_calls\":[{\"name\":\"echo\",\"arguments\":{\"text\":"
	                         "\"again\"}}]}]");
	struct compose_opts o = {.tools = tools, .n_tools = 1};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_MAX_ROUNDS);
	assert_int_equal(llmfake_calls(fx->fake), COMPOSE_DEFAULT_MAX_ROUNDS);
}

static void test_budget_denies_and_counts(void **state)
{
	struct fx *fx = *state;
	struct budget b;
	budget_init(&b, NULL, 40);
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"tool_calls\":[{\"name\":\"echo\","
	                         "\"arguments\":{\"text\":\"t\"}}],\"usage\":{\"prompt_tokens\":30,"
	                         "\"completion_tokens\":15}},{\"content\":\"never\"}]");
	struct compose_opts o = {.tools = tools, .n_tools = 1, .budget = &b, .now_ms = fixed_now};
	run(fx, &o);
	/* round 1 allowed (0 < 40), spends 45; round 2 refused */
	assert_int_equal(fx->res.stop, COMPOSE_STOP_BUDGET);
	assert_int_equal(llmfake_calls(fx->fake), 1);
	assert_int_equal(fx->res.budget.verdict, VERDICT_BLOCK);
	assert_string_equal(fx->res.budget.rule, "daily_token_budget");
	assert_non_null(strstr(fx->reason, "45 of 40 tokens"));
	struct budget_day d;
	budget_today(&b, fixed_now(), &d);
	assert_int_equal(d.total_tokens, 45);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.denied, 1);

	/* a non-owner run now stops before any model call ... */
	fx->done = false;
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_BUDGET);
	assert_int_equal(fx->res.rounds, 0);
	assert_int_equal(llmfake_calls(fx->fake), 1);
	/* ... while the owner may still talk */
	fx->done = false;
	o.owner = true;
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_FINAL);
	assert_int_equal(fx->res.budget.verdict, VERDICT_PASS);
}

static void test_fatal_model_error_stops_the_run(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"error\":{\"status\":401}}]");
	struct compose_opts o = {.tools = tools, .n_tools = 1};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_ERROR);
	assert_int_equal(fx->res.llm_error, LLM_ERR_FATAL);
	assert_non_null(strstr(fx->reason, "LLM_API_KEY"));
}

static void test_forced_tool_plain_text_fallback(void **state)
{
	struct fx *fx = *state;
	fx->reply = "Decision recorded.";
	fx->reply_stop = true;
	llmfake_script(fx->fake,
	               "[{\"match\":{\"tool_choice\":\"echo\"},\"content\":\"Sure! Here you go: "
	               "```json\\n{\\\"text\\\": \\\"from {text}\\\"}\\n``` hope that helps\"}]");
	struct compose_opts o = {.tools = tools,
	                         .n_tools = 2,
	                         .tool_choice = LLM_TOOL_CHOICE_NAMED,
	                         .tool_choice_name = "echo"};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_TOOL);
	assert_true(fx->res.used_json_fallback);
	assert_int_equal(fx->handler_calls, 1);
	assert_string_equal(fx->last_args, "{\"text\":\"from {text}\"}");
	assert_non_null(strstr(fx->reason, "tool 'echo' ended the conversation"));
	cJSON *b = sent(fx, 0);
	const cJSON *tc = cJSON_GetObjectItem(b, "tool_choice");
	assert_string_equal(json_string_or(cJSON_GetObjectItem(tc, "function"), "name", ""),
	                    "echo");
	cJSON_Delete(b);
}

static void test_forced_tool_without_json_is_an_error(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"content\":\"I would rather not {say}.\"}]");
	struct compose_opts o = {
	        .tools = tools, .n_tools = 1, .tool_choice = LLM_TOOL_CHOICE_REQUIRED};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_ERROR);
	assert_non_null(strstr(fx->reason, "plain text where tool"));
	assert_int_equal(fx->handler_calls, 0);
}

static void test_requirement_met_switches_to_auto(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"match\":{\"tool_choice\":\"required\"},\"tool_calls\":["
	                         "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\"}}]},"
	                         "{\"match\":{\"tool_choice\":\"auto\"},\"content\":\"fin\"}]");
	struct compose_opts o = {
	        .tools = tools, .n_tools = 1, .tool_choice = LLM_TOOL_CHOICE_REQUIRED};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_FINAL);
	assert_string_equal(fx->content, "fin");
}

static void test_async_handler(void **state)
{
	struct fx *fx = *state;
	struct compose_tool t[] = {
	        {.name = "slow", .run = async_tool, .schema_json = "{\"type\":\"object\"}"}};
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"tool_calls\":[{\"id\":\"s1\","
	                         "\"name\":\"slow\",\"arguments\":{}}]},{\"content\":\"after\"}]");
	struct compose_opts o = {.tools = t, .n_tools = 1};
	run(fx, &o);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_FINAL);
	cJSON *b = sent(fx, 1);
	assert_string_equal(json_string_or(msg_at(b, -1), "content", ""), "finished later");
	assert_string_equal(json_string_or(msg_at(b, -1), "tool_call_id", ""), "s1");
	cJSON_Delete(b);
	uv_close((uv_handle_t *)&fx->later, NULL);
}

static void test_cancel_while_waiting(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"action\":\"hang\"}]");
	struct compose_opts o = {.loop = &fx->loop,
	                         .llm = fx->llm,
	                         .messages = hello,
	                         .n_messages = 1,
	                         .done = on_done,
	                         .ud = fx};
	struct compose_run *r = compose_start(&o, NULL);
	assert_non_null(r);
	/* the request leaves only while the loop runs */
	uint64_t give_up = time_mono_ms() + 10000;
	while (llmfake_calls(fx->fake) < 1 && time_mono_ms() < give_up)
		uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_int_equal(llmfake_calls(fx->fake), 1);
	compose_cancel(r);
	assert_false(fx->done);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->done), 0);
	assert_int_equal(fx->res.stop, COMPOSE_STOP_CANCELLED);
}

static void test_start_refuses_bad_options(void **state)
{
	struct fx *fx = *state;
	struct ga_err e = {{0}};
	struct compose_tool bad[] = {{.name = "b", .run = echo_tool, .schema_json = "[1"}};
	struct compose_opts o = {.loop = &fx->loop,
	                         .llm = fx->llm,
	                         .messages = hello,
	                         .n_messages = 1,
	                         .tools = bad,
	                         .n_tools = 1,
	                         .done = on_done};
	assert_null(compose_start(&o, &e));
	assert_non_null(strstr(e.msg, "tool 'b' is unusable"));
	tools[0].schema_json = echo_schema;
	o.tools = tools;
	o.n_tools = 1;
	o.tool_choice = LLM_TOOL_CHOICE_NAMED;
	o.tool_choice_name = "other";
	assert_null(compose_start(&o, &e));
	assert_non_null(strstr(e.msg, "'other', which is not among the tools offered"));
	assert_int_equal(llmfake_calls(fx->fake), 0);
}

/* --- pure helpers --------------------------------------------------------------- */

static void expect_schema(const char *schema, const char *value, const char *want)
{
	cJSON *s = cJSON_Parse(schema), *v = cJSON_Parse(value);
	assert_non_null(s);
	assert_non_null(v);
	char msg[256];
	int rc = schema_validate(s, v, msg, sizeof msg);
	if (!want && rc != 0)
		fail_msg("%s against %s: unexpected error '%s'", value, schema, msg);
	if (want && (rc == 0 || strcmp(msg, want) != 0))
		fail_msg("%s against %s: got '%s', want '%s'", value, schema, rc ? msg : "(ok)",
		         want);
	cJSON_Delete(s);
	cJSON_Delete(v);
}

static void test_schema_subset(void **state)
{
	const char *dec =
	        "{\"type\":\"object\",\"properties\":{\"shouldSpeak\":{\"type\":\"boolean\"},"
	        "\"commitments\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	        "\"properties\":{\"type\":{\"type\":\"string\",\"enum\":[\"create_issue\","
	        "\"post_bluesky\"]}},\"required\":[\"type\"]}}},\"required\":[\"shouldSpeak\"]}";
	expect_schema(dec, "{\"shouldSpeak\":true}", NULL);
	expect_schema(dec, "{\"shouldSpeak\":\"yes\"}",
	              "field 'shouldSpeak' must be a boolean, got a string");
	expect_schema(dec, "{}", "field 'shouldSpeak' is required");
	expect_schema(dec, "{\"shouldSpeak\":null}", "field 'shouldSpeak' is required");
	expect_schema(dec,
	              "{\"shouldSpeak\":false,\"commitments\":[{\"type\":\"create_issue\"},"
	              "{\"type\":\"fly\"}]}",
	              "field 'commitments[1].type' must be one of: create_issue, post_bluesky");
	expect_schema(dec, "{\"shouldSpeak\":false,\"commitments\":[{}]}",
	              "field 'commitments[0].type' is required");
	expect_schema(dec, "{\"shouldSpeak\":false,\"commitments\":{}}",
	              "field 'commitments' must be an array, got an object");
	expect_schema(dec, "[]", "the arguments must be an object, got an array");
	/* maxLength counts code points, not bytes */
	expect_schema("{\"type\":\"string\",\"maxLength\":3}", "\"h\u00e9\u00e9\"", NULL);
	expect_schema("{\"type\":\"string\",\"maxLength\":3}", "\"abcd\"",
	              "the arguments must be at most 3 characters, got 4");
	expect_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\","
	              "\"minimum\":1}},\"additionalProperties\":false}",
	              "{\"a\":0}", "field 'a' must be at least 1, got 0");
	expect_schema("{\"type\":\"object\",\"additionalProperties\":false}", "{\"zz\":1}",
	              "field 'zz' is not a known field");
	expect_schema("{\"type\":[\"string\",\"null\"]}", "null", NULL);
	expect_schema("{\"type\":[\"string\",\"null\"]}", "3",
	              "the arguments must be string or null, got an integer");
	expect_schema("{\"type\":\"number\"}", "2.5", NULL);
	expect_schema("{\"type\":\"array\",\"maxItems\":1}", "[1,2]",
	              "the arguments must have at most 1 items, got 2");
	/* nesting past the depth limit is refused, not recursed into */
	struct strbuf sch = {0}, val = {0};
	for (int i = 0; i < 40; i++) {
		sb_puts(&sch, "{\"type\":\"array\",\"items\":");
		sb_putc(&val, '[');
	}
	sb_puts(&sch, "{}");
	for (int i = 0; i < 40; i++) {
		sb_putc(&sch, '}');
		sb_putc(&val, ']');
	}
	cJSON *s = cJSON_Parse(sb_cstr(&sch)), *v = cJSON_Parse(sb_cstr(&val));
	char msg[512];
	assert_int_equal(schema_validate(s, v, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "nested more than 32 levels"));
	cJSON_Delete(s);
	cJSON_Delete(v);
	sb_free(&sch);
	sb_free(&val);
}

static void test_extract_json_object(void **state)
{
	char *j = compose_extract_json_object(
	        "text {\"a\": \"}{\", \"b\": {\"c\": 1}} tail {\"d\":2}");
	assert_string_equal(j, "{\"a\": \"}{\", \"b\": {\"c\": 1}}");
	free(j);
	j = compose_extract_json_object("{not json} then {\"ok\":true}");
	assert_string_equal(j, "{\"ok\":true}");
	free(j);
	j = compose_extract_json_object("escaped {\"q\": \"a \\\" } b\"} end");
	assert_string_equal(j, "{\"q\": \"a \\\" } b\"}");
	free(j);
	assert_null(compose_extract_json_object("no braces here"));
	assert_null(compose_extract_json_object("{\"open\": 1"));
	assert_null(compose_extract_json_object("[1,2,3]"));
	assert_null(compose_extract_json_object(NULL));
}

static void test_truncate(void **state)
{
	char *t = compose_truncate("h\u00e9llo", 3);
	assert_string_equal(t,
	                    "h\u00e9l\n[TRUNCATED: the result was 5 characters; only the first 3 "
	                    "are shown]");
	free(t);
	t = compose_truncate("short", 30000);
	assert_string_equal(t, "short");
	free(t);
	t = compose_truncate("abc", 3);
	assert_string_equal(t, "abc");
	free(t);
	/* Invalid UTF-8 (found by fuzz_llm): stray continuation bytes are
	 * characters of their own, so the cut stays bounded. */
	char junk[2001];
	memset(junk, 0x8b, 2000);
	junk[2000] = '\0';
	t = compose_truncate(junk, 10);
	assert_true(strncmp(t, junk, 10) == 0 && t[10] == '\n');
	assert_non_null(strstr(t, "the result was 2000 characters"));
	free(t);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_final_answer),
	        T(test_tool_round_trip_with_ids),
	        T(test_schema_errors_go_back_to_the_model),
	        T(test_results_are_truncated),
	        T(test_max_rounds),
	        T(test_default_max_rounds_is_8),
	        T(test_budget_denies_and_counts),
	        T(test_fatal_model_error_stops_the_run),
	        T(test_forced_tool_plain_text_fallback),
	        T(test_forced_tool_without_json_is_an_error),
	        T(test_requirement_met_switches_to_auto),
	        T(test_async_handler),
	        T(test_cancel_while_waiting),
	        T(test_start_refuses_bad_options),
	        cmocka_unit_test(test_schema_subset),
	        cmocka_unit_test(test_extract_json_object),
	        cmocka_unit_test(test_truncate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
