/*
 * The echo judge (modules/participation/judge.h, §10.6, §15.3): its cache,
 * key and prompt, and the judge itself against the in-process LLM fake —
 * YES / NO, one call per candidate, the cached verdict without a call,
 * failures open and not cached, the prompt's ten lines, the tokens booked
 * in the daily budget and a spent budget refusing the call; and through the
 * validator (validator_refer / validator_resume) as its judge.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/http/http.h"
#include "adapters/llm/llm.h"
#include "common/json.h"
#include "common/timeutil.h"
#include "modules/budget/budget.h"
#include "modules/participation/judge.h"
#include "tests/fakes/llm/llmfake.h"
#include "tests/unit/llm/testloop.h"

/* --- the pure parts --------------------------------------------------------------- */

static void key_of(int i, unsigned char k[32])
{
	memset(k, 0, 32);
	memcpy(k, &i, sizeof i);
}

static void test_cache_fifo(void **state)
{
	(void)state;
	struct part_judge_cache *c = calloc(1, sizeof *c);
	unsigned char k[32];
	key_of(1, k);
	assert_int_equal(part_judge_cache_get(c, k), -1);
	part_judge_cache_put(c, k, 1);
	assert_int_equal(part_judge_cache_get(c, k), 1);
	part_judge_cache_put(c, k, 0); /* replaced, not added */
	assert_int_equal(part_judge_cache_get(c, k), 0);
	assert_int_equal(c->n, 1);
	for (int i = 2; i <= PART_JUDGE_CACHE_MAX; i++) {
		key_of(i, k);
		part_judge_cache_put(c, k, i % 2);
	}
	assert_int_equal(c->n, PART_JUDGE_CACHE_MAX);
	key_of(1, k);
	assert_int_equal(part_judge_cache_get(c, k), 0);
	/* one more: the oldest (key 1) goes, the second oldest stays */
	key_of(PART_JUDGE_CACHE_MAX + 1, k);
	part_judge_cache_put(c, k, 1);
	assert_int_equal(c->n, PART_JUDGE_CACHE_MAX);
	key_of(1, k);
	assert_int_equal(part_judge_cache_get(c, k), -1);
	key_of(2, k);
	assert_int_equal(part_judge_cache_get(c, k), 0);
	key_of(PART_JUDGE_CACHE_MAX + 1, k);
	assert_int_equal(part_judge_cache_get(c, k), 1);
	part_judge_cache_clear(c);
	assert_int_equal(part_judge_cache_get(c, k), -1);
	free(c);
}

static void test_key(void **state)
{
	(void)state;
	unsigned char a[32], b[32], c[32], d[32];
	const char *w1[] = {"first point", "second point"};
	const char *w2[] = {"second point", "first point"};
	part_judge_key("cand", w1, 2, a);
	part_judge_key("cand", w2, 2, b);
	assert_memory_equal(a, b, 32); /* the window's order does not matter */
	const char *x[] = {"ab", "c"}, *y[] = {"a", "bc"};
	part_judge_key("", x, 2, c);
	part_judge_key("", y, 2, d);
	assert_memory_not_equal(c, d, 32); /* texts stay apart */
	part_judge_key("cand2", w1, 2, c);
	assert_memory_not_equal(a, c, 32);
}

static void test_prompt_and_read(void **state)
{
	(void)state;
	const char *peers[15];
	char buf[15][32];
	for (int i = 0; i < 15; i++) {
		snprintf(buf[i], sizeof buf[i], "message %d", i + 1);
		peers[i] = buf[i];
	}
	char *p = part_judge_prompt("duplicate point", peers, 15);
	assert_non_null(strstr(p, "Candidate: \"duplicate point\"\n\nExisting messages:\n"
	                          "1. \"message 1\"\n2. \"message 2\"\n"));
	assert_non_null(strstr(p, "10. \"message 10\"\n\n"));
	assert_null(strstr(p, "11. "));
	assert_null(strstr(p, "message 11"));
	free(p);
	assert_non_null(strstr(part_judge_system(), "YES"));
	assert_int_equal(part_judge_read("YES"), 1);
	assert_int_equal(part_judge_read("  yes, it repeats"), 1);
	assert_int_equal(part_judge_read("Yes."), 1);
	assert_int_equal(part_judge_read("NO"), 0);
	assert_int_equal(part_judge_read("It is not. YES"), 0);
	assert_int_equal(part_judge_read(""), 0);
	assert_int_equal(part_judge_read(NULL), 0);
}

/* --- the judge against the fake ----------------------------------------------------------- */

struct fx {
	uv_loop_t loop;
	struct llmfake *fake;
	struct http_client *http;
	struct llm_client *llm;
	struct budget budget;
	struct part_judge *j;
	bool done;
	int verdict;
	char reason[300];
};

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
	cfg.max_retries = 0;
	fx->llm = llm_client_new(fx->http, &cfg);
	llm_config_free(&cfg);
	budget_init(&fx->budget, NULL, 0);
	fx->j = part_judge_new(&fx->loop, fx->llm, &fx->budget);
	assert_non_null(fx->j);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	part_judge_free(fx->j);
	llm_client_free(fx->llm);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	llmfake_free(fx->fake);
	free(fx);
	return 0;
}

static void on_verdict(void *ud, int verdict, const char *reason)
{
	struct fx *fx = ud;
	fx->done = true;
	fx->verdict = verdict;
	snprintf(fx->reason, sizeof fx->reason, "%s", reason ? reason : "");
}

static int ask(struct fx *fx, const char *cand, const char *const *w, size_t n)
{
	fx->done = false;
	fx->verdict = -2;
	const struct validator_judge *h = part_judge_validator(fx->j);
	h->ask(h->ud, cand, w, n, on_verdict, fx);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->done), 0);
	return fx->verdict;
}

static const char *const WIN[] = {"Caching absorbs burst traffic.",
                                  "We need monitoring for latency."};

static void test_yes_no_cache(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"match\":{\"last_user_contains\":\"same thing\"},"
	                         "\"content\":\"YES\",\"usage\":{\"prompt_tokens\":40,"
	                         "\"completion_tokens\":1}},"
	                         "{\"content\":\"NO\"}]");
	assert_int_equal(ask(fx, "A cache soaks up the same thing", WIN, 2), 1);
	assert_int_equal(llmfake_calls(fx->fake), 1);
	assert_int_equal(part_judge_calls(fx->j), 1);
	/* the request: no tools, 10 tokens, temperature 0, the spec's prompt */
	cJSON *req = llmfake_request(fx->fake, 0);
	assert_null(cJSON_GetObjectItem(req, "tools"));
	assert_int_equal(json_int_or(req, "max_tokens", -1), PART_JUDGE_MAX_TOKENS);
	assert_true(cJSON_GetObjectItem(req, "temperature") &&
	            cJSON_GetObjectItem(req, "temperature")->valuedouble == 0);
	char *body = cJSON_PrintUnformatted(req);
	assert_non_null(strstr(body, "1. \\\"Caching absorbs burst traffic.\\\""));
	free(body);
	cJSON_Delete(req);
	/* booked in the daily budget */
	struct budget_day day;
	budget_today(&fx->budget, time_now_ms(), &day);
	assert_int_equal(day.calls, 1);
	assert_int_equal(day.prompt_tokens, 40);

	/* the same pair again: the cached verdict, no call */
	assert_int_equal(ask(fx, "A cache soaks up the same thing", WIN, 2), 1);
	assert_non_null(strstr(fx->reason, "cached"));
	assert_int_equal(llmfake_calls(fx->fake), 1);
	assert_int_equal(part_judge_cached(fx->j), 1);

	/* another candidate: NO */
	assert_int_equal(ask(fx, "Dashboards need an owner", WIN, 2), 0);
	assert_int_equal(llmfake_calls(fx->fake), 2);
	/* cleared (the idle reset): asked again */
	part_judge_clear(fx->j);
	assert_int_equal(part_judge_cached(fx->j), 0);
	assert_int_equal(ask(fx, "A cache soaks up the same thing", WIN, 2), 1);
	assert_int_equal(llmfake_calls(fx->fake), 3);
	/* nothing to compare with: not an echo, no call */
	assert_int_equal(ask(fx, "anything", NULL, 0), 0);
	assert_int_equal(llmfake_calls(fx->fake), 3);
}

static void test_fails_open_not_cached(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"match\":{\"call\":0},\"error\":{\"status\":400,\"message\":"
	                         "\"bad\"}},{\"content\":\"YES\"}]");
	assert_int_equal(ask(fx, "A cache soaks up traffic", WIN, 2), -1);
	assert_non_null(strstr(fx->reason, "not an echo"));
	assert_int_equal(part_judge_cached(fx->j), 0);
	/* asked again: now the model answers */
	assert_int_equal(ask(fx, "A cache soaks up traffic", WIN, 2), 1);
	assert_int_equal(llmfake_calls(fx->fake), 2);
}

static void test_budget_spent(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"content\":\"YES\"}]");
	fx->budget.daily_limit = 10;
	struct ga_err err = {{0}};
	budget_record(&fx->budget, time_now_ms(), 10, 5, 15, &err);
	assert_int_equal(ask(fx, "A cache soaks up traffic", WIN, 2), -1);
	assert_int_equal(llmfake_calls(fx->fake), 0);
	assert_int_equal(part_judge_cached(fx->j), 0);
}

/* The validator refers its borderline band to this judge and finishes
 * with its verdict. */
static void test_through_the_validator(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"content\":\"YES\"}]");
	struct echo_window *w = echo_window_new(8);
	echo_window_push(w, "Ben", true,
	                 "Locking the gaps between components is what makes the spacing grid "
	                 "valuable");
	echo_window_push(w, "Cal", true,
	                 "Dark mode color tokens still confuse me when switching themes");
	echo_window_push(w, "Dee", true, "Layout decisions get easier with fixed component gaps");
	const char *cand = "The spacing grid locks gaps between components which removes layout "
	                   "guesswork";
	struct validator_context ctx = {.platform = VALIDATOR_PLATFORM_SPACE,
	                                .mode = VALIDATOR_MODE_DISCUSSION,
	                                .role = VALIDATOR_ROLE_ACTOR,
	                                .is_action_owner = true,
	                                .window = w,
	                                .connected_agents = 4,
	                                .judge = part_judge_validator(fx->j)};
	struct validator_decision d;
	memset(&d, 0, sizeof d);
	enum validator_verdict v = validator_validate(cand, &ctx, &d);
	if (v != VALIDATOR_REFER)
		fail_msg("expected the borderline band, got %s (%s): pair %.3f novelty %.3f",
		         validator_verdict_name(v), d.rule, d.echo.pair, d.echo.novelty);
	fx->done = false;
	assert_int_equal(validator_refer(&ctx, cand, on_verdict, fx), 0);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->done), 0);
	assert_int_equal(fx->verdict, 1);
	assert_int_equal(validator_resume(cand, &ctx, fx->verdict, fx->reason, &d),
	                 VALIDATOR_REJECT);
	assert_string_equal(d.rule, "semantic_echo_judge");
	validator_decision_clear(&d);
	echo_window_free(w);
}

/* Freed with an ask in flight: the call is cancelled, done never runs. */
static void test_free_in_flight(void **state)
{
	struct fx *fx = *state;
	llmfake_script(fx->fake, "[{\"action\":\"hang\"}]");
	fx->done = false;
	const struct validator_judge *h = part_judge_validator(fx->j);
	h->ask(h->ud, "A cache soaks up traffic", WIN, 2, on_verdict, fx);
	/* a second ask while one is in flight fails open at once */
	struct fx *other = calloc(1, sizeof *other);
	h->ask(h->ud, "Another one entirely", WIN, 2, on_verdict, other);
	assert_true(other->done);
	assert_int_equal(other->verdict, -1);
	free(other);
	int64_t end = time_now_ms() + 5000;
	while (llmfake_calls(fx->fake) < 1 && time_now_ms() < end)
		uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_int_equal(llmfake_calls(fx->fake), 1);
	part_judge_free(fx->j);
	fx->j = NULL;
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_false(fx->done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cache_fifo),
	        cmocka_unit_test(test_key),
	        cmocka_unit_test(test_prompt_and_read),
	        cmocka_unit_test_setup_teardown(test_yes_no_cache, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_fails_open_not_cached, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_budget_spent, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_through_the_validator, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_free_in_flight, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
