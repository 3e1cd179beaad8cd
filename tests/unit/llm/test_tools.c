/*
 * test_tools — the local-tools registry: which tools each mode and
 * capability set offers (social-only never sees a GitHub tool), and the
 * handlers driven through the real tool loop against the fake model:
 * actions reach the sink, domain checks refuse bad arguments with a
 * sentence for the model, space_decision and graceful_exit end the run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json.h"
#include "local-tools/tools.h"
#include "tests/fakes/llm/llmfake.h"
#include "tests/unit/llm/testloop.h"

static bool has(const struct compose_tool *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0)
			return true;
	return false;
}

static void test_selection_by_mode_and_caps(void **state)
{
	struct compose_tool t[TOOLS_MAX];
	unsigned full = tools_agent_caps(false), social = tools_agent_caps(true);

	size_t n = tools_select(TOOLS_MODE_SPACE, full, NULL, t, TOOLS_MAX);
	assert_int_equal(n, 1);
	assert_string_equal(t[0].name, "space_decision");

	n = tools_select(TOOLS_MODE_OWNER, full | TOOLS_CAP_OWNER, NULL, t, TOOLS_MAX);
	assert_true(has(t, n, "bluesky_post"));
	assert_true(has(t, n, "github_create_issue"));
	assert_true(has(t, n, "plan_create"));
	assert_false(has(t, n, "space_decision"));

	n = tools_select(TOOLS_MODE_OWNER, social | TOOLS_CAP_OWNER, NULL, t, TOOLS_MAX);
	assert_true(has(t, n, "bluesky_post"));
	assert_false(has(t, n, "github_create_issue"));
	assert_false(has(t, n, "github_create_issue_comment"));
	assert_false(has(t, n, "plan_create"));

	n = tools_select(TOOLS_MODE_BLUESKY, social, NULL, t, TOOLS_MAX);
	assert_true(has(t, n, "bluesky_reply"));
	assert_true(has(t, n, "graceful_exit"));
	assert_false(has(t, n, "github_create_issue"));

	n = tools_select(TOOLS_MODE_GITHUB, full, NULL, t, TOOLS_MAX);
	assert_true(has(t, n, "github_create_issue_comment"));
	assert_true(has(t, n, "graceful_exit"));
	assert_false(has(t, n, "bluesky_post"));

	/* every schema in the catalogue is a JSON object */
	size_t total;
	const struct tools_def *cat = tools_catalogue(&total);
	for (size_t i = 0; i < total; i++) {
		cJSON *s = cJSON_Parse(cat[i].schema);
		if (!cJSON_IsObject(s))
			fail_msg("tool %s: schema is not a JSON object", cat[i].name);
		cJSON_Delete(s);
	}
	/* graceful_exit ends our part only: nothing in it can close the issue
	 * or pull request (a peer's work is never closed by it) */
	for (size_t i = 0; i < total; i++) {
		if (strcmp(cat[i].name, "graceful_exit") != 0)
			continue;
		cJSON *s = cJSON_Parse(cat[i].schema);
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(s, "properties"))
		{
			assert_null(strstr(p->string, "state"));
			assert_null(strstr(p->string, "close_"));
		}
		const cJSON *ct =
		        cJSON_GetObjectItem(cJSON_GetObjectItem(s, "properties"), "closing_type");
		const cJSON *e;
		cJSON_ArrayForEach(e, cJSON_GetObjectItem(ct, "enum"))
		        assert_true(strcmp(e->valuestring, "like") == 0 ||
		                    strcmp(e->valuestring, "message") == 0);
		cJSON_Delete(s);
	}
	assert_int_equal(tools_select(TOOLS_MODE_OWNER, full, NULL, t, 2), 2); /* bounded */
}

/* --- handlers through the loop ------------------------------------------------------ */

struct sink_log {
	int n;
	char actions[8][32];
	char params[8][512];
	bool refuse;
};

static int sink_enqueue(void *ud, const char *action, const cJSON *params, char *result, size_t cap,
                        struct ga_err *err)
{
	struct sink_log *l = ud;
	if (l->refuse)
		return err_set(err, "Near-duplicate of post sent 12s ago");
	if (l->n < 8) {
		snprintf(l->actions[l->n], sizeof l->actions[0], "%s", action);
		char *p = cJSON_PrintUnformatted(params);
		snprintf(l->params[l->n], sizeof l->params[0], "%s", p);
		free(p);
	}
	l->n++;
	snprintf(result, cap, "queued %s #%d", action, l->n);
	return 0;
}

struct fx {
	uv_loop_t loop;
	struct llmfake *fake;
	struct http_client *http;
	struct llm_client *llm;
	struct sink_log log;
	struct tools_sink sink;
	bool done;
	enum compose_stop stop;
	char reason[GA_ERR_MSG_MAX];
	int tool_errors;
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = llmfake_new(err, sizeof err);
	fx->http = http_client_new(&fx->loop, NULL, NULL);
	struct llm_config cfg;
	llm_config_init(&cfg, llmfake_base_url(fx->fake), NULL, "m");
	fx->llm = llm_client_new(fx->http, &cfg);
	llm_config_free(&cfg);
	fx->sink = (struct tools_sink){.enqueue = sink_enqueue, .ud = &fx->log};
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
	free(fx);
	return 0;
}

static void on_done(void *ud, const struct compose_result *r)
{
	struct fx *fx = ud;
	fx->done = true;
	fx->stop = r->stop;
	fx->tool_errors = r->tool_errors;
	snprintf(fx->reason, sizeof fx->reason, "%s", r->reason);
}

static void run(struct fx *fx, enum tools_mode mode, unsigned caps, enum llm_tool_choice choice,
                const char *choice_name)
{
	struct compose_tool t[TOOLS_MAX];
	size_t n = tools_select(mode, caps, &fx->sink, t, TOOLS_MAX);
	struct llm_message m[] = {{.role = LLM_ROLE_USER, .content = "go"}};
	struct compose_opts o = {.loop = &fx->loop,
	                         .llm = fx->llm,
	                         .messages = m,
	                         .n_messages = 1,
	                         .tools = t,
	                         .n_tools = n,
	                         .tool_choice = choice,
	                         .tool_choice_name = choice_name,
	                         .done = on_done,
	                         .ud = fx};
	struct ga_err e = {{0}};
	if (!compose_start(&o, &e))
		fail_msg("compose_start: %s", e.msg);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->done), 0);
}

static const char *tool_result(struct fx *fx, size_t call, int index)
{
	static char buf[1024];
	cJSON *b = llmfake_request(fx->fake, call);
	assert_non_null(b);
	const cJSON *msgs = cJSON_GetObjectItem(b, "messages");
	int n = cJSON_GetArraySize(msgs);
	snprintf(buf, sizeof buf, "%s",
	         json_string_or(cJSON_GetArrayItem(msgs, index < 0 ? n + index : index), "content",
	                        ""));
	cJSON_Delete(b);
	return buf;
}

static void test_space_decision_reaches_sink_and_stops(void **state)
{
	struct fx *fx = *state;
	llmfake_script(
	        fx->fake,
	        "[{\"match\":{\"call\":0,\"tool_choice\":\"space_decision\"},\"tool_calls\":[{"
	        "\"name\":\"space_decision\",\"arguments\":{\"shouldSpeak\":true,\"reason\":"
	        "\"r\"}}]},"
	        "{\"match\":{\"call\":1},\"tool_calls\":[{\"name\":\"space_decision\","
	        "\"arguments\":{\"shouldSpeak\":true,\"reason\":\"host asked\",\"message\":"
	        "\"Ada, I'll open it.\",\"commitments\":[{\"type\":\"create_issue\",\"repo\":"
	        "\"a/b\",\"title\":\"T\"}]}}]}]");
	run(fx, TOOLS_MODE_SPACE, tools_agent_caps(false), LLM_TOOL_CHOICE_NAMED, "space_decision");
	assert_int_equal(fx->stop, COMPOSE_STOP_TOOL);
	assert_int_equal(fx->tool_errors, 1); /* shouldSpeak without a message */
	assert_non_null(strstr(tool_result(fx, 1, -1), "'message' is empty"));
	assert_int_equal(fx->log.n, 1);
	assert_string_equal(fx->log.actions[0], "space_decision");
	assert_non_null(strstr(fx->log.params[0], "\"commitments\":[{\"type\":\"create_issue\""));
	/* the retry after the refusal was still forced */
	cJSON *b = llmfake_request(fx->fake, 1);
	assert_true(cJSON_IsObject(cJSON_GetObjectItem(b, "tool_choice")));
	cJSON_Delete(b);
}

static void test_bluesky_post_limits_and_sink_refusal(void **state)
{
	struct fx *fx = *state;
	/* 301 graphemes: a family emoji counts once, so 300 of them plus "x" */
	char *long_text = malloc(301 * 25 + 2);
	long_text[0] = '\0';
	for (int i = 0; i < 300; i++)
		strcat(long_text, "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F"
		                  "\x91\xA7");
	strcat(long_text, "x");
	cJSON *script =
	        cJSON_Parse("[{\"match\":{\"call\":0},\"tool_calls\":[{\"name\":"
	                    "\"bluesky_post\",\"arguments\":{\"text\":\"   \"}},{\"name\":"
	                    "\"bluesky_post\",\"arguments\":{}}]},{\"match\":{\"call\":1},"
	                    "\"tool_calls\":[{\"name\":\"bluesky_post\",\"arguments\":{}}]},"
	                    "{\"match\":{\"call\":2},\"tool_calls\":[{\"name\":\"bluesky_post\","
	                    "\"arguments\":{\"text\":\"a fine post\"}}]},{\"content\":\"done\"}]");
	/* entry 1 (call 1): its tool call gets the over-long text */
	cJSON *entry = cJSON_GetArrayItem(script, 1);
	cJSON *call = cJSON_GetArrayItem(cJSON_GetObjectItem(entry, "tool_calls"), 0);
	cJSON *args = cJSON_GetObjectItem(call, "arguments");
	cJSON_AddStringToObject(args, "text", long_text);
	char *s = cJSON_PrintUnformatted(script);
	llmfake_script(fx->fake, s);
	free(s);
	cJSON_Delete(script);
	run(fx, TOOLS_MODE_OWNER, TOOLS_CAP_SOCIAL | TOOLS_CAP_OWNER, LLM_TOOL_CHOICE_AUTO, NULL);
	assert_int_equal(fx->stop, COMPOSE_STOP_FINAL);
	assert_non_null(strstr(tool_result(fx, 1, -2), "field 'text' is empty"));
	assert_non_null(strstr(tool_result(fx, 1, -1), "field 'text' is required"));
	assert_non_null(strstr(tool_result(fx, 2, -1), "is 301 characters; a Bluesky post holds at "
	                                               "most 300"));
	assert_string_equal(tool_result(fx, 3, -1), "queued post_bluesky #1");
	assert_int_equal(fx->log.n, 1);
	assert_string_equal(fx->log.params[0], "{\"text\":\"a fine post\"}");
	free(long_text);

	/* the sink's refusal is the model's error result */
	llmfake_reset(fx->fake);
	size_t base = llmfake_calls(fx->fake);
	fx->log.refuse = true;
	fx->done = false;
	llmfake_script(fx->fake,
	               "[{\"match\":{\"last_user_contains\":\"go\"},"
	               "\"times\":1,\"tool_calls\":[{\"name\":\"bluesky_post\",\"arguments\":"
	               "{\"text\":\"again\"}}]},{\"content\":\"ok\"}]");
	run(fx, TOOLS_MODE_OWNER, TOOLS_CAP_SOCIAL | TOOLS_CAP_OWNER, LLM_TOOL_CHOICE_AUTO, NULL);
	assert_string_equal(tool_result(fx, base + 1, -1),
	                    "Error: Near-duplicate of post sent 12s ago");
}

static void test_graceful_exit_rules(void **state)
{
	struct fx *fx = *state;
	llmfake_script(
	        fx->fake,
	        "[{\"match\":{\"call\":0},\"tool_calls\":["
	        "{\"name\":\"graceful_exit\",\"arguments\":{\"platform\":\"github\",\"identifier\":"
	        "\"a/b\",\"closing_type\":\"like\",\"reason\":\"done\"}},"
	        "{\"name\":\"graceful_exit\",\"arguments\":{\"platform\":\"bluesky\","
	        "\"identifier\":"
	        "\"at://x\",\"closing_type\":\"like\",\"reason\":\"done\"}},"
	        "{\"name\":\"graceful_exit\",\"arguments\":{\"platform\":\"github\",\"identifier\":"
	        "\"a/b#3\",\"closing_type\":\"message\",\"reason\":\"done\"}},"
	        "{\"name\":\"graceful_exit\",\"arguments\":{\"platform\":\"mastodon\","
	        "\"identifier\":"
	        "\"x\",\"closing_type\":\"like\",\"reason\":\"done\"}}]},"
	        "{\"match\":{\"call\":1},\"tool_calls\":[{\"name\":\"graceful_exit\",\"arguments\":"
	        "{"
	        "\"platform\":\"github\",\"identifier\":\"a/b#3\",\"closing_type\":\"like\","
	        "\"reason\":\"answered\"}}]}]");
	run(fx, TOOLS_MODE_GITHUB, tools_agent_caps(false), LLM_TOOL_CHOICE_AUTO, NULL);
	assert_int_equal(fx->stop, COMPOSE_STOP_TOOL);
	assert_non_null(strstr(fx->reason, "graceful_exit"));
	assert_non_null(strstr(tool_result(fx, 1, -4), "owner/repo#number"));
	assert_non_null(strstr(tool_result(fx, 1, -3), "'target_uri' and 'target_cid'"));
	assert_non_null(strstr(tool_result(fx, 1, -2), "'closing_message' is required"));
	assert_non_null(strstr(tool_result(fx, 1, -1), "must be one of: bluesky, github"));
	assert_int_equal(fx->log.n, 1);
	assert_string_equal(fx->log.actions[0], "graceful_exit");
}

static void test_github_tools_check_repositories(void **state)
{
	struct fx *fx = *state;
	llmfake_script(
	        fx->fake,
	        "[{\"match\":{\"call\":0},\"tool_calls\":["
	        "{\"name\":\"github_create_issue\",\"arguments\":{\"owner\":\"o\",\"repo\":\"o/r\","
	        "\"title\":\"t\"}},"
	        "{\"name\":\"github_create_issue\",\"arguments\":{\"owner\":\"o\",\"repo\":\"..\","
	        "\"title\":\"t\"}},"
	        "{\"name\":\"github_create_issue_comment\",\"arguments\":{\"owner\":\"o\",\"repo\":"
	        "\"r\",\"issue_number\":\"7\",\"body\":\"b\"}},"
	        "{\"name\":\"plan_create\",\"arguments\":{\"owner\":\"o\",\"repo\":\"r\",\"title\":"
	        "\"p\",\"goal\":\"g\",\"context\":\"c\",\"tasks\":[]}},"
	        "{\"name\":\"github_create_issue\",\"arguments\":{\"owner\":\"o\",\"repo\":\"r\","
	        "\"title\":\"Real issue\",\"body\":\"b\"}},"
	        "{\"name\":\"github_create_issue_comment\",\"arguments\":{\"owner\":\"o\",\"repo\":"
	        "\"r\",\"issue_number\":7,\"body\":\"b\"}},"
	        "{\"name\":\"plan_create\",\"arguments\":{\"owner\":\"o\",\"repo\":\"r\",\"title\":"
	        "\"p\",\"goal\":\"g\",\"context\":\"c\",\"tasks\":[{\"title\":\"t1\","
	        "\"description\":"
	        "\"d1\"}]}}]},"
	        "{\"content\":\"done\"}]");
	run(fx, TOOLS_MODE_GITHUB, tools_agent_caps(false), LLM_TOOL_CHOICE_AUTO, NULL);
	assert_int_equal(fx->stop, COMPOSE_STOP_FINAL);
	assert_non_null(strstr(tool_result(fx, 1, -7), "give the owner in 'owner'"));
	assert_non_null(strstr(tool_result(fx, 1, -6), "not a valid GitHub repository name"));
	assert_non_null(strstr(tool_result(fx, 1, -5), "field 'issue_number' must be an integer"));
	assert_non_null(strstr(tool_result(fx, 1, -4), "field 'tasks' must have at least 1 items"));
	assert_int_equal(fx->log.n, 3);
	assert_string_equal(fx->log.actions[0], "create_issue");
	assert_string_equal(fx->log.actions[1], "comment_issue");
	assert_string_equal(fx->log.actions[2], "create_plan");
	assert_string_equal(tool_result(fx, 1, -1), "queued create_plan #3");
}

static void test_unwired_sink_is_an_error_result(void **state)
{
	struct fx *fx = *state;
	fx->sink.enqueue = NULL;
	llmfake_script(fx->fake,
	               "[{\"match\":{\"call\":0},\"tool_calls\":[{\"name\":"
	               "\"bluesky_post\",\"arguments\":{\"text\":\"hi\"}}]},{\"content\":\"k\"}]");
	run(fx, TOOLS_MODE_OWNER, TOOLS_CAP_SOCIAL, LLM_TOOL_CHOICE_AUTO, NULL);
	assert_non_null(strstr(tool_result(fx, 1, -1), "not available in this process"));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_selection_by_mode_and_caps),
	        T(test_space_decision_reaches_sink_and_stops),
	        T(test_bluesky_post_limits_and_sink_refusal),
	        T(test_graceful_exit_rules),
	        T(test_github_tools_check_repositories),
	        T(test_unwired_sink_is_an_error_result),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
