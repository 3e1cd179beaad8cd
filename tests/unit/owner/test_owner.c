/*
 * Owner conversation turns against the OpenAI-compatible fake: answers,
 * the rolling transcript, tool calls becoming commitments, --social-only
 * tool filtering, one turn at a time, the queue bound, a fatal key, close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <cmocka.h>

#include "adapters/http/http.h"
#include "common/log.h"
#include "local-tools/tools.h"
#include "modules/owner/owner.h"
#include "modules/pipeline/actions.h"
#include "tests/fakes/llm/llmfake.h"
#include "tests/unit/llm/testloop.h"
#include "testutil.h"

struct fx {
	uv_loop_t loop;
	struct llmfake *fake;
	struct http_client *http;
	struct llm_client *llm;
	struct skills skills;
	struct ledger ledger;
	struct pipeline_actions actions; /* the daemon's sink: here, the ledger only */
	struct tools_sink sink;
	struct compose_tool tools[TOOLS_MAX];
	size_t n_tools;
	char *dir;
	struct owner *owner;
	char said[8][512];
	int nsaid;
	char fatal[512];
	bool got_fatal;
	bool closed;
};

static void say(void *ud, const char *text)
{
	struct fx *fx = ud;
	if (fx->nsaid < 8)
		snprintf(fx->said[fx->nsaid], sizeof fx->said[0], "%s", text);
	fx->nsaid++;
}

static void on_closed(void *ud);

/* A host that shuts down from inside the callback (the daemon does when
 * the key is refused): the owner must survive until the callback returns. */
static void say_then_close(void *ud, const char *text)
{
	struct fx *fx = ud;
	say(ud, text);
	owner_close(fx->owner, on_closed, fx);
}

static void fatal(void *ud, const char *msg)
{
	struct fx *fx = ud;
	snprintf(fx->fatal, sizeof fx->fatal, "%s", msg);
	fx->got_fatal = true;
}

/* The owner-mode tools as the daemon selects them, their calls going to
 * the actions sink (modules/pipeline/actions.h). */
static void select_tools(struct fx *fx, bool social_only)
{
	fx->actions = (struct pipeline_actions){.ledger = &fx->ledger};
	fx->sink = (struct tools_sink){.enqueue = pipeline_actions_enqueue, .ud = &fx->actions};
	unsigned caps = tools_agent_caps(social_only) | TOOLS_CAP_OWNER;
	fx->n_tools = tools_select(TOOLS_MODE_OWNER, caps, &fx->sink, fx->tools, TOOLS_MAX);
}

static void start(struct fx *fx, bool social_only, const char *key)
{
	struct llm_config cfg;
	llm_config_init(&cfg, llmfake_base_url(fx->fake), key, "fake-model");
	cfg.backoff_base_ms = 1;
	cfg.backoff_cap_ms = 5;
	fx->llm = llm_client_new(fx->http, &cfg);
	llm_config_free(&cfg);
	select_tools(fx, social_only);
	struct owner_opts o = {
	        .loop = &fx->loop,
	        .llm = fx->llm,
	        .skills = &fx->skills,
	        .tools = fx->tools,
	        .n_tools = fx->n_tools,
	        .bluesky_username = "ada.bsky.social",
	        .owner_handle = "owner.bsky.social",
	        .say = say,
	        .fatal = fatal,
	        .ud = fx,
	};
	fx->owner = owner_new(&o);
	owner_set_identity(fx->owner, "You are Ada's soul.", "# Ada\n\nI'm Ada.");
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	log_set_level(LOG_LEVEL_OFF);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = llmfake_new(err, sizeof err);
	assert_non_null(fx->fake);
	fx->http = http_client_new(&fx->loop, NULL, NULL);
	assert_non_null(fx->http);
	char skills_dir[1024];
	snprintf(skills_dir, sizeof skills_dir, "%s/skills", getenv("GA_SOURCE_DIR"));
	const char *dirs[] = {skills_dir};
	struct ga_err e = {{0}};
	assert_int_equal(skills_load(&fx->skills, dirs, 1, &e), 0);
	fx->dir = tu_tempdir();
	assert_int_equal(ledger_open(&fx->ledger, fx->dir, &e), 0);
	*state = fx;
	return 0;
}

static void on_closed(void *ud)
{
	((struct fx *)ud)->closed = true;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	if (fx->owner && !fx->closed) {
		owner_close(fx->owner, on_closed, fx);
		assert_int_equal(testloop_run_until(&fx->loop, &fx->closed), 0);
	}
	if (fx->llm)
		llm_client_free(fx->llm);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	llmfake_free(fx->fake);
	skills_free(&fx->skills);
	ledger_close(&fx->ledger);
	tu_rmrf(fx->dir);
	free(fx->dir);
	free(fx);
	return 0;
}

static bool said_n(struct fx *fx, int n)
{
	return fx->nsaid >= n;
}

static void wait_said(struct fx *fx, int n)
{
	bool flag = false;
	for (int i = 0; i < 1000 && !said_n(fx, n); i++) {
		flag = said_n(fx, n);
		uv_run(&fx->loop, UV_RUN_ONCE);
	}
	(void)flag;
	if (!said_n(fx, n))
		fail_msg("the owner was told %d things, expected %d", fx->nsaid, n);
}

static int has_tool(const cJSON *req, const char *name)
{
	const cJSON *t;
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(req, "tools"))
	{
		const cJSON *fn = cJSON_GetObjectItem(t, "function");
		if (strcmp(cJSON_GetObjectItem(fn, "name")->valuestring, name) == 0)
			return 1;
	}
	return 0;
}

static void test_answer_and_transcript(void **state)
{
	struct fx *fx = *state;
	llmfake_script(
	        fx->fake,
	        "[{\"match\":{\"last_user_contains\":\"who are you\"},\"content\":\"I am Ada.\"},"
	        "{\"match\":{\"last_user_contains\":\"again\"},\"content\":\"Still Ada.\"}]");
	start(fx, false, "k");
	struct ga_err err = {{0}};
	assert_int_equal(owner_submit(fx->owner, "who are you?", &err), 0);
	assert_int_equal(owner_submit(fx->owner, "say it again", &err), 0);
	wait_said(fx, 2);
	assert_string_equal(fx->said[0], "I am Ada.");
	assert_string_equal(fx->said[1], "Still Ada.");

	/* One turn at a time, and the second carries the first exchange. */
	assert_int_equal(llmfake_calls(fx->fake), 2);
	cJSON *r0 = llmfake_request(fx->fake, 0);
	cJSON *r1 = llmfake_request(fx->fake, 1);
	const cJSON *m0 = cJSON_GetObjectItem(r0, "messages");
	const cJSON *m1 = cJSON_GetObjectItem(r1, "messages");
	assert_int_equal(cJSON_GetArraySize(m0), 2); /* system + user */
	assert_int_equal(cJSON_GetArraySize(m1), 4); /* system + user + assistant + user */
	const char *system = cJSON_GetObjectItem(cJSON_GetArrayItem(m0, 0), "content")->valuestring;
	assert_non_null(strstr(system, "You are Ada's soul."));
	assert_non_null(strstr(system, "I'm Ada."));
	assert_non_null(strstr(system, "@ada.bsky.social")); /* skill variables filled */
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(m1, 2), "content")->valuestring,
	                    "I am Ada.");
	/* owner mode offers the GitHub tools to a full agent */
	assert_true(has_tool(r0, "github_create_issue"));
	assert_true(has_tool(r0, "bluesky_post"));
	cJSON_Delete(r0);
	cJSON_Delete(r1);
}

static void test_tool_call_becomes_commitment(void **state)
{
	struct fx *fx = *state;
	llmfake_script(
	        fx->fake,
	        "[{\"match\":{\"call\":0},\"tool_calls\":[{\"name\":\"github_create_issue\","
	        "\"arguments\":"
	        "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Fix the flaky test\"}}]},"
	        "{\"match\":{\"call\":1},\"content\":\"Queued the issue.\"},"
	        "{\"match\":{\"call\":2},\"tool_calls\":[{\"name\":\"github_create_issue\","
	        "\"arguments\":"
	        "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Fix the flaky test\"}}]},"
	        "{\"match\":{\"call\":3},\"content\":\"Already queued.\"}]");
	start(fx, false, "k");
	struct ga_err err = {{0}};
	assert_int_equal(owner_submit(fx->owner, "open an issue about the flaky test", &err), 0);
	wait_said(fx, 1);
	assert_string_equal(fx->said[0], "Queued the issue.");
	char *ledger = tu_read(fx->dir, "commitments.jsonl");
	assert_non_null(ledger);
	assert_non_null(strstr(ledger, "\"action\":\"create_issue\""));
	assert_non_null(strstr(ledger, "\"source\":\"owner\""));
	assert_non_null(strstr(ledger, "Fix the flaky test"));
	free(ledger);
	/* the tool result told the model what happened */
	cJSON *r1 = llmfake_request(fx->fake, 1);
	char *s = cJSON_PrintUnformatted(r1);
	assert_non_null(strstr(s, "queued as commitment-"));
	free(s);
	cJSON_Delete(r1);

	/* The same instruction again is not queued twice. */
	assert_int_equal(owner_submit(fx->owner, "open it again", &err), 0);
	wait_said(fx, 2);
	ledger = tu_read(fx->dir, "commitments.jsonl");
	int lines = 0;
	for (char *p = ledger; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 1);
	free(ledger);
	cJSON *r3 = llmfake_request(fx->fake, 3);
	s = cJSON_PrintUnformatted(r3);
	assert_non_null(strstr(s, "not queued twice"));
	free(s);
	cJSON_Delete(r3);
}

static void test_social_only_has_no_github_tools(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"content\":\"ok\"}]");
	start(fx, true, "k");
	struct ga_err err = {{0}};
	assert_int_equal(owner_submit(fx->owner, "hello", &err), 0);
	wait_said(fx, 1);
	cJSON *r0 = llmfake_request(fx->fake, 0);
	assert_false(has_tool(r0, "github_create_issue"));
	assert_false(has_tool(r0, "github_create_issue_comment"));
	assert_false(has_tool(r0, "plan_create"));
	assert_true(has_tool(r0, "bluesky_post"));
	cJSON_Delete(r0);
}

static void test_fatal_key(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"error\":{\"status\":401,\"message\":\"bad key\"}}]");
	start(fx, false, "wrong-key");
	struct ga_err err = {{0}};
	assert_int_equal(owner_submit(fx->owner, "hello", &err), 0);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->got_fatal), 0);
	assert_non_null(strstr(fx->fatal, "401"));
	assert_int_equal(fx->nsaid, 0);
	assert_int_equal(llmfake_calls(fx->fake), 1); /* fatal is never retried */
}

static void test_queue_bound_and_close(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"action\":\"hang\"}]");
	start(fx, false, "k");
	struct ga_err err = {{0}};
	for (int i = 0; i < OWNER_QUEUE_MAX + 1; i++)
		assert_int_equal(owner_submit(fx->owner, "line", &err),
		                 0); /* 1 running + 8 waiting */
	assert_int_equal(owner_submit(fx->owner, "one too many", &err), -1);
	assert_non_null(strstr(err.msg, "already waiting"));
	assert_true(owner_busy(fx->owner));
	/* The request goes out from the loop: turn it until the fake saw it. */
	for (int i = 0; i < 1000 && llmfake_calls(fx->fake) < 1; i++) {
		uv_run(&fx->loop, UV_RUN_NOWAIT);
		llmfake_wait_calls(fx->fake, 1, 10);
	}
	assert_int_equal(llmfake_calls(fx->fake), 1);
	owner_close(fx->owner, on_closed, fx);
	assert_int_equal(owner_submit(fx->owner, "late", &err), -1);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->closed), 0);
	fx->owner = NULL;
	assert_int_equal(fx->nsaid, 0);
}

static void test_close_from_inside_a_callback(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"content\":\"bye\"}]");
	start(fx, false, "k");
	/* rebuild the owner with the closing callback */
	owner_close(fx->owner, NULL, NULL);
	struct owner_opts o = {.loop = &fx->loop,
	                       .llm = fx->llm,
	                       .skills = &fx->skills,
	                       .tools = fx->tools,
	                       .n_tools = fx->n_tools,
	                       .say = say_then_close,
	                       .fatal = fatal,
	                       .ud = fx};
	fx->owner = owner_new(&o);
	struct ga_err err = {{0}};
	assert_int_equal(owner_submit(fx->owner, "one", &err), 0);
	assert_int_equal(owner_submit(fx->owner, "two", &err), 0); /* dropped by the close */
	assert_int_equal(testloop_run_until(&fx->loop, &fx->closed), 0);
	assert_int_equal(fx->nsaid, 1);
	assert_string_equal(fx->said[0], "bye");
	fx->owner = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_answer_and_transcript, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_tool_call_becomes_commitment, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_social_only_has_no_github_tools, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_fatal_key, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_queue_bound_and_close, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_close_from_inside_a_callback, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
