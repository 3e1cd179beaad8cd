/*
 * test_github — adapters/github's real HTTP code (the build's transport on a uv loop)
 * against the stateful GitHub fake (tests/fakes/github): what goes on the
 * wire, every endpoint, pagination and its bounds, every error class, and
 * primary and secondary rate limits driven by a clock the test moves —
 * through the limits and back, so the client is seen to resume.
 *
 * The clock both sides read is the real one plus an offset the test adds
 * to: small backoffs pass in real time, an hour-long reset is jumped over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/github/github.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/unit/llm/testloop.h"

#define TOKEN "ghp_test_token_0123456789"

static _Atomic int64_t clock_offset;

static int64_t test_clock(void *ud)
{
	(void)ud;
	return time_now_ms() + atomic_load(&clock_offset);
}

static void advance(int64_t ms)
{
	atomic_fetch_add(&clock_offset, ms);
}

struct got {
	bool done;
	int order;
	struct gh_result r;
	cJSON *json;
};

static int finished;

static void on_done(void *ud, const struct gh_result *r)
{
	struct got *g = ud;
	assert_false(g->done); /* exactly one callback per call */
	g->done = true;
	g->order = ++finished;
	g->r = *r;
	g->r.json = NULL;
	g->json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

static void got_free(struct got *g)
{
	cJSON_Delete(g->json);
	g->json = NULL;
}

struct fx {
	uv_loop_t loop;
	struct ghfake *fake;
	struct http_client *http;
	struct gh_client *gh;
	struct gh_config cfg;
};

static void make_client_tweaked(struct fx *fx, const char *url, const char *token,
                                void (*tweak)(struct gh_config *cfg));

static void make_client(struct fx *fx, const char *url, const char *token)
{
	make_client_tweaked(fx, url, token, NULL);
}

static void make_client_tweaked(struct fx *fx, const char *url, const char *token,
                                void (*tweak)(struct gh_config *cfg))
{
	gh_client_free(fx->gh);
	gh_config_free(&fx->cfg);
	gh_config_init(&fx->cfg, url, token, "ada-agent");
	fx->cfg.spacing_ms = 0;
	fx->cfg.write_spacing_ms = 0;
	fx->cfg.backoff_base_ms = 1;
	fx->cfg.backoff_cap_ms = 20;
	fx->cfg.recheck_ms = 5;
	fx->cfg.low_budget = 0; /* small test budgets; pacing has its own test */
	fx->cfg.timeout_ms = 5000;
	fx->cfg.clock.now_ms = test_clock;
	if (tweak)
		tweak(&fx->cfg);
	fx->gh = gh_client_new(fx->http, &fx->cfg);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = ghfake_new(err, sizeof err);
	assert_non_null(fx->fake);
	ghfake_set_clock(fx->fake, test_clock, NULL);
	ghfake_add_token(fx->fake, TOKEN, "ada-agent");
	ghfake_add_repo(fx->fake, "octo", "hello", 0);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	assert_non_null(fx->http);
	make_client(fx, ghfake_base_url(fx->fake), TOKEN);
	finished = 0;
	atomic_store(&clock_offset, 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	gh_client_free(fx->gh);
	gh_config_free(&fx->cfg);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	uv_loop_close(&fx->loop);
	ghfake_free(fx->fake);
	free(fx);
	return 0;
}

static void wait_done(struct fx *fx, struct got *g)
{
	if (testloop_run_until(&fx->loop, &g->done) != 0)
		fail_msg("no answer within %d ms", TESTLOOP_GUARD_MS);
}

static void set_flag(uv_timer_t *h)
{
	*(bool *)h->data = true;
}

/* Runs the loop for ms of real time: only to show that nothing happens. */
static void run_for(struct fx *fx, unsigned ms)
{
	bool flag = false;
	uv_timer_t t;
	uv_timer_init(&fx->loop, &t);
	t.data = &flag;
	uv_timer_start(&t, set_flag, ms, 0);
	testloop_run_until(&fx->loop, &flag);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
}

/* Runs the loop until the fake has answered n requests (the client runs on
 * this thread, so the fake cannot be waited on while the loop stands). */
static void run_until_requests(struct fx *fx, uint64_t n)
{
	uint64_t t0 = time_mono_ms();
	while (ghfake_requests(fx->fake) < n) {
		if (time_mono_ms() - t0 > TESTLOOP_GUARD_MS)
			fail_msg("the fake saw fewer than %llu requests in %d ms",
			         (unsigned long long)n, TESTLOOP_GUARD_MS);
		run_for(fx, 5);
	}
}

/* --- the wire and the endpoints ------------------------------------------------ */

static void test_create_issue_sends_github_headers(void **state)
{
	struct fx *fx = *state;
	struct got g = {0};
	struct ga_err err = {{0}};
	const char *labels[] = {"memo"};
	struct gh_issue_new in = {.title = "Plan: the garden",
	                          .body = "Body with \"quotes\" and <!-- ga:key=k1 -->",
	                          .labels = labels,
	                          .n_labels = 1};
	assert_true(gh_issue_create(fx->gh, "octo", "hello", &in, on_done, &g, &err) > 0);
	assert_false(g.done); /* never called back from inside the call */
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, GH_OK);
	assert_int_equal(g.r.status, 201);
	assert_int_equal(g.r.attempts, 1);
	assert_int_equal(json_int_or(g.json, "number", -1), 1);
	assert_string_equal(cJSON_GetObjectItem(g.json, "html_url")->valuestring,
	                    "https://github.com/octo/hello/issues/1");
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(g.json, "user"), "login")->valuestring,
	        "ada-agent");

	struct httpfake_request *q = httpfake_request_find_last(ghfake_http(fx->fake), "POST",
	                                                        "/repos/octo/hello/issues");
	assert_non_null(q);
	assert_string_equal(httpfake_request_header(q, "Authorization"), "Bearer " TOKEN);
	assert_string_equal(httpfake_request_header(q, "Accept"), "application/vnd.github+json");
	assert_string_equal(httpfake_request_header(q, "X-GitHub-Api-Version"), "2022-11-28");
	assert_string_equal(httpfake_request_header(q, "Content-Type"), "application/json");
	const char *ua = httpfake_request_header(q, "User-Agent");
	assert_non_null(ua);
	assert_non_null(strstr(ua, "general-agent/"));
	assert_non_null(strstr(ua, "ada-agent"));
	cJSON *body = cJSON_Parse(q->body);
	assert_string_equal(cJSON_GetObjectItem(body, "title")->valuestring, "Plan: the garden");
	assert_string_equal(cJSON_GetObjectItem(body, "body")->valuestring, in.body);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(body, "labels"), 0)->valuestring,
	                    "memo");
	cJSON_Delete(body);
	httpfake_request_free(q);
	assert_int_equal(ghfake_issue_count(fx->fake, "octo", "hello"), 1);
	assert_int_equal(ghfake_count_body(fx->fake, "ga:key=k1"), 1);
	got_free(&g);
}

static void test_issue_get_comment_list_react(void **state)
{
	struct fx *fx = *state;
	int64_t n = ghfake_add_issue(fx->fake, "octo", "hello", "host", "A question", "What now?");
	ghfake_add_comment(fx->fake, "octo", "hello", n, "peer", "first");
	struct ga_err err = {{0}};

	struct got g1 = {0};
	assert_true(gh_issue_get(fx->gh, "octo", "hello", n, on_done, &g1, &err) > 0);
	wait_done(fx, &g1);
	assert_int_equal(g1.r.kind, GH_OK);
	assert_string_equal(json_string_or(g1.json, "title", ""), "A question");
	assert_int_equal(json_int_or(g1.json, "comments", -1), 1);

	struct got g2 = {0};
	assert_true(gh_issue_comment(fx->gh, "octo", "hello", n, "an answer", on_done, &g2, &err) >
	            0);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_OK);
	assert_int_equal(g2.r.status, 201);
	int64_t cid = json_int_or(g2.json, "id", -1);
	assert_true(cid > 0);
	assert_int_equal(ghfake_comment_count(fx->fake, "octo", "hello", n), 2);

	struct got g3 = {0};
	assert_true(gh_comments_list(fx->gh, "octo", "hello", n, 0, on_done, &g3, &err) > 0);
	wait_done(fx, &g3);
	assert_int_equal(g3.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g3.json), 2);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(g3.json, 1), "body", ""),
	                    "an answer");
	assert_false(g3.r.truncated);

	/* Reactions: 201 the first time, 200 when repeated, one reaction. */
	struct got g4 = {0}, g5 = {0}, g6 = {0};
	assert_true(gh_reaction_create(fx->gh, "octo", "hello", n, 0, "heart", on_done, &g4, &err) >
	            0);
	assert_true(gh_reaction_create(fx->gh, "octo", "hello", n, 0, "heart", on_done, &g5, &err) >
	            0);
	assert_true(gh_reaction_create(fx->gh, "octo", "hello", n, cid, "eyes", on_done, &g6,
	                               &err) > 0);
	wait_done(fx, &g6);
	assert_true(g4.done && g5.done);
	assert_true(g4.order < g5.order && g5.order < g6.order); /* FIFO */
	assert_int_equal(g4.r.status, 201);
	assert_int_equal(g5.r.status, 200);
	assert_int_equal(g6.r.status, 201);
	assert_int_equal(ghfake_reaction_count(fx->fake, "octo", "hello", n, 0, "heart"), 1);
	assert_int_equal(ghfake_reaction_count(fx->fake, "octo", "hello", n, cid, "eyes"), 1);

	struct got g7 = {0}, g8 = {0};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g7, &err) > 0);
	assert_true(gh_user_get(fx->gh, on_done, &g8, &err) > 0);
	wait_done(fx, &g8);
	assert_string_equal(json_string_or(g7.json, "full_name", ""), "octo/hello");
	assert_string_equal(json_string_or(g8.json, "login", ""), "ada-agent");

	struct gh_stats st;
	gh_client_stats(fx->gh, &st);
	assert_int_equal(st.calls, 8);
	assert_int_equal(st.requests, 8);
	assert_int_equal(st.failures, 0);
	struct gh_bucket b;
	assert_int_equal(gh_rate_snapshot(fx->gh, NULL, &b), 0);
	assert_int_equal(b.limit, 5000);
	struct got *all[] = {&g1, &g2, &g3, &g4, &g5, &g6, &g7, &g8};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		got_free(all[i]);
}

static void test_local_refusals(void **state)
{
	struct fx *fx = *state;
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_int_equal(gh_issue_get(fx->gh, "../etc", "hello", 1, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "not a GitHub owner name"));
	assert_int_equal(gh_issue_get(fx->gh, "octo", "a/b", 1, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "not a GitHub repository name"));
	assert_int_equal(gh_issue_get(fx->gh, "octo", "hello", 0, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "not a valid number"));
	assert_int_equal(
	        gh_reaction_create(fx->gh, "octo", "hello", 1, 0, "thumbsup", on_done, &g, &err),
	        0);
	assert_non_null(strstr(err.msg, "not a GitHub reaction"));
	struct gh_issue_new in = {.title = "  "};
	assert_int_equal(gh_issue_create(fx->gh, "octo", "hello", &in, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "without a title"));
	assert_int_equal(gh_issue_comment(fx->gh, "octo", "hello", 1, "", on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "empty comment"));
	assert_int_equal(gh_notification_mark_read(fx->gh, "12; rm", on_done, &g, &err), 0);
	struct gh_issue_query q = {.state = "everything"};
	assert_int_equal(gh_issues_list(fx->gh, "octo", "hello", &q, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "everything"));
	/* A body is never cut: too large is refused. */
	size_t big = GH_MAX_BODY_BYTES + 10;
	char *body = malloc(big + 1);
	memset(body, 'x', big);
	body[big] = '\0';
	struct gh_issue_new huge = {.title = "t", .body = body};
	assert_int_equal(gh_issue_create(fx->gh, "octo", "hello", &huge, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "nothing was sent or cut"));
	free(body);
	/* Writes need a token; reads go without. */
	make_client(fx, ghfake_base_url(fx->fake), NULL);
	struct gh_issue_new ok = {.title = "t"};
	assert_int_equal(gh_issue_create(fx->gh, "octo", "hello", &ok, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "AGENT_GITHUB_TOKEN is not set"));
	assert_int_equal(ghfake_requests(fx->fake), 0);
	assert_false(g.done);
}

static void test_queue_is_bounded(void **state)
{
	struct fx *fx = *state;
	static struct got g[GH_MAX_QUEUED + 1];
	memset(g, 0, sizeof g);
	struct ga_err err = {{0}};
	for (int i = 0; i < GH_MAX_QUEUED; i++)
		assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g[i], &err) > 0);
	assert_int_equal(gh_repo_get(fx->gh, "octo", "hello", on_done, &g[GH_MAX_QUEUED], &err), 0);
	assert_non_null(strstr(err.msg, "already waiting"));
	assert_int_equal(gh_pending(fx->gh), GH_MAX_QUEUED);
	wait_done(fx, &g[GH_MAX_QUEUED - 1]);
	for (int i = 0; i < GH_MAX_QUEUED; i++) {
		assert_true(g[i].done);
		assert_int_equal(g[i].order, i + 1);
		got_free(&g[i]);
	}
}

/* --- pagination ----------------------------------------------------------------- */

static void test_pagination_and_its_bounds(void **state)
{
	struct fx *fx = *state;
	for (int i = 0; i < 250; i++) {
		char title[32];
		snprintf(title, sizeof title, "issue %d", i + 1);
		ghfake_add_issue(fx->fake, "octo", "hello", "host", title, "b");
	}
	struct ga_err err = {{0}};
	/* Default bound: 100 items, one page of 100, more left. */
	struct got g1 = {0};
	assert_true(gh_issues_list(fx->gh, "octo", "hello", NULL, on_done, &g1, &err) > 0);
	wait_done(fx, &g1);
	assert_int_equal(g1.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g1.json), 100);
	assert_int_equal(g1.r.pages, 1);
	assert_true(g1.r.truncated);
	assert_int_equal(json_int_or(cJSON_GetArrayItem(g1.json, 0), "number", -1), 250);

	/* Everything: three pages merged in order. */
	struct gh_issue_query q = {.state = "all", .direction = "asc", .max_items = 1000};
	struct got g2 = {0};
	size_t before = ghfake_count(fx->fake, "GET", "/repos/octo/hello/issues", 200);
	assert_true(gh_issues_list(fx->gh, "octo", "hello", &q, on_done, &g2, &err) > 0);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g2.json), 250);
	assert_int_equal(g2.r.pages, 3);
	assert_false(g2.r.truncated);
	assert_int_equal(g2.r.attempts, 3);
	for (int i = 0; i < 250; i++)
		assert_int_equal(json_int_or(cJSON_GetArrayItem(g2.json, i), "number", -1), i + 1);
	assert_int_equal(ghfake_count(fx->fake, "GET", "/repos/octo/hello/issues", 200) - before,
	                 3);
	struct httpfake_request *last = httpfake_request_find_last(ghfake_http(fx->fake), "GET",
	                                                           "/repos/octo/hello/issues");
	assert_string_equal(httpfake_request_param(last, "page"), "3");
	assert_string_equal(httpfake_request_param(last, "direction"), "asc");
	httpfake_request_free(last);

	/* A page bound: 10 a page, at most 3 pages. */
	struct gh_req req = {.method = "GET",
	                     .path = "/repos/octo/hello/issues?per_page=10",
	                     .what = "list the issues of octo/hello",
	                     .list = true,
	                     .max_items = 1000,
	                     .max_pages = 3};
	struct got g3 = {0};
	before = ghfake_requests(fx->fake);
	assert_true(gh_call(fx->gh, &req, on_done, &g3, &err) > 0);
	wait_done(fx, &g3);
	assert_int_equal(cJSON_GetArraySize(g3.json), 30);
	assert_int_equal(g3.r.pages, 3);
	assert_true(g3.r.truncated);
	assert_int_equal(ghfake_requests(fx->fake) - before, 3);

	/* An item bound in the middle of a page. */
	req.max_items = 15;
	req.max_pages = 0;
	struct got g4 = {0};
	assert_true(gh_call(fx->gh, &req, on_done, &g4, &err) > 0);
	wait_done(fx, &g4);
	assert_int_equal(cJSON_GetArraySize(g4.json), 15);
	assert_int_equal(g4.r.pages, 2);
	assert_true(g4.r.truncated);

	/* Fewer items than a page: one page of that many, the same first
	 * items as a page of 100 cut, and the request says per_page=10. */
	struct gh_issue_query few = {.state = "open", .max_items = 10};
	struct got g5 = {0};
	before = ghfake_requests(fx->fake);
	assert_true(gh_issues_list(fx->gh, "octo", "hello", &few, on_done, &g5, &err) > 0);
	wait_done(fx, &g5);
	assert_int_equal(g5.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g5.json), 10);
	assert_int_equal(g5.r.pages, 1);
	assert_true(g5.r.truncated);
	assert_int_equal(json_int_or(cJSON_GetArrayItem(g5.json, 0), "number", -1), 250);
	assert_int_equal(json_int_or(cJSON_GetArrayItem(g5.json, 9), "number", -1), 241);
	assert_int_equal(ghfake_requests(fx->fake) - before, 1);
	last = httpfake_request_find_last(ghfake_http(fx->fake), "GET", "/repos/octo/hello/issues");
	assert_string_equal(httpfake_request_param(last, "per_page"), "10");
	httpfake_request_free(last);
	got_free(&g1);
	got_free(&g2);
	got_free(&g3);
	got_free(&g4);
	got_free(&g5);
}

static void test_next_link_to_another_host_is_not_followed(void **state)
{
	struct fx *fx = *state;
	char err_s[256];
	struct httpfake *hf = httpfake_new(0, err_s, sizeof err_s);
	assert_non_null(hf);
	struct httpfake_route *rt = httpfake_route(hf, "GET", "/repos/o/r/issues");
	struct httpfake_response *resp =
	        httpfake_route_respond(rt, 200, "application/json", "[{\"number\":1}]");
	httpfake_response_header(resp, "Link",
	                         "<http://evil.example/repos/o/r/issues?page=2>; rel=\"next\"");
	make_client(fx, httpfake_base_url(hf), TOKEN);
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(gh_issues_list(fx->gh, "o", "r", NULL, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, GH_ERR_MALFORMED);
	assert_non_null(strstr(g.r.msg, "evil.example"));
	assert_non_null(strstr(g.r.msg, "not followed with the token"));
	assert_int_equal(httpfake_request_count(hf), 1);
	gh_client_free(fx->gh);
	fx->gh = NULL;
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	httpfake_free(hf);
}

/* --- notifications and search ----------------------------------------------------- */

static void test_notifications(void **state)
{
	struct fx *fx = *state;
	int64_t n = ghfake_add_issue(fx->fake, "octo", "hello", "host", "t", "b");
	int64_t a = ghfake_add_notification(fx->fake, "octo", "hello", n, "mention");
	ghfake_add_notification(fx->fake, "octo", "hello", n, "comment");
	ghfake_add_notification(fx->fake, "octo", "hello", n, "assign");
	struct ga_err err = {{0}};
	struct got g1 = {0};
	int64_t since = test_clock(NULL) - 60000;
	assert_true(gh_notifications_list(fx->gh, since, false, 0, on_done, &g1, &err) > 0);
	wait_done(fx, &g1);
	assert_int_equal(g1.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g1.json), 3);
	cJSON *first = cJSON_GetArrayItem(g1.json, 2);
	assert_string_equal(json_string_or(first, "reason", ""), "mention");
	/* The subject URL is an API URL under the configured base. */
	struct gh_ref ref;
	const char *subject = json_string_or(cJSON_GetObjectItem(first, "subject"), "url", "");
	assert_int_equal(gh_parse_api_url(ghfake_base_url(fx->fake), subject, &ref, &err), 0);
	assert_int_equal(ref.number, n);
	struct httpfake_request *q =
	        httpfake_request_find_last(ghfake_http(fx->fake), "GET", "/notifications");
	assert_non_null(httpfake_request_param(q, "since"));
	assert_string_equal(httpfake_request_param(q, "per_page"), "50");
	httpfake_request_free(q);

	char id[24];
	snprintf(id, sizeof id, "%lld", (long long)a);
	struct got g2 = {0};
	assert_true(gh_notification_mark_read(fx->gh, id, on_done, &g2, &err) > 0);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_OK);
	assert_int_equal(g2.r.status, 205);
	assert_null(g2.json);
	assert_int_equal(ghfake_notification_unread(fx->fake, a), 0);

	struct got g3 = {0};
	assert_true(gh_notifications_list(fx->gh, 0, false, 0, on_done, &g3, &err) > 0);
	wait_done(fx, &g3);
	assert_int_equal(cJSON_GetArraySize(g3.json), 2);
	struct got g4 = {0};
	assert_true(gh_notification_mark_read(fx->gh, "999999", on_done, &g4, &err) > 0);
	wait_done(fx, &g4);
	assert_int_equal(g4.r.kind, GH_ERR_NOT_FOUND);
	assert_non_null(strstr(g4.r.msg, "mark notification 999999 read"));
	got_free(&g1);
	got_free(&g3);
}

static void test_search_by_body_text(void **state)
{
	struct fx *fx = *state;
	ghfake_add_repo(fx->fake, "octo", "other", 0);
	ghfake_add_issue(fx->fake, "octo", "hello", "ada-agent", "Plan",
	                 "text\n<!-- ga:key=abc123 -->");
	ghfake_add_issue(fx->fake, "octo", "hello", "ada-agent", "Other", "nothing");
	int64_t n3 = ghfake_add_issue(fx->fake, "octo", "other", "ada-agent", "Third", "b");
	ghfake_add_comment(fx->fake, "octo", "other", n3, "ada-agent",
	                   "done <!-- ga:key=def456 -->");
	struct ga_err err = {{0}};
	struct got g1 = {0}, g2 = {0}, g3 = {0};
	assert_true(gh_search_issues(fx->gh, "\"ga:key=abc123\" repo:octo/hello in:body", 0,
	                             on_done, &g1, &err) > 0);
	assert_true(gh_search_issues(fx->gh, "\"ga:key=def456\"", 0, on_done, &g2, &err) > 0);
	assert_true(gh_search_issues(fx->gh, "\"ga:key=def456\" in:body", 0, on_done, &g3, &err) >
	            0);
	wait_done(fx, &g3);
	assert_int_equal(g1.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g1.json), 1);
	assert_int_equal(g1.r.total_count, 1);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(g1.json, 0), "title", ""), "Plan");
	assert_int_equal(cJSON_GetArraySize(g2.json), 1); /* found through its comment */
	assert_int_equal(cJSON_GetArraySize(g3.json), 0);
	assert_int_equal(g3.r.total_count, 0);
	struct httpfake_request *q =
	        httpfake_request_find_last(ghfake_http(fx->fake), "GET", "/search/issues");
	assert_string_equal(httpfake_request_param(q, "q"), "\"ga:key=def456\" in:body");
	httpfake_request_free(q);
	/* Search answers book the search bucket, not core. */
	struct gh_bucket b;
	assert_int_equal(gh_rate_snapshot(fx->gh, "search", &b), 0);
	got_free(&g1);
	got_free(&g2);
	got_free(&g3);
}

static void test_search_pages_and_list_filters(void **state)
{
	struct fx *fx = *state;
	for (int i = 0; i < 150; i++)
		ghfake_add_issue(fx->fake, "octo", "hello", "host", "t", i % 2 ? "apple" : "pear");
	struct ga_err err = {{0}};
	struct got g1 = {0};
	assert_true(gh_search_issues(fx->gh, "apple repo:octo/hello", 1000, on_done, &g1, &err) >
	            0);
	wait_done(fx, &g1);
	assert_int_equal(g1.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g1.json), 75);
	assert_int_equal(g1.r.total_count, 75);
	assert_int_equal(g1.r.pages, 1);
	struct gh_req req = {.method = "GET",
	                     .path = "/search/issues?q=pear&per_page=20",
	                     .what = "search issues",
	                     .resource = "search",
	                     .list = true,
	                     .items_field = "items",
	                     .max_items = 1000};
	struct got g2 = {0};
	assert_true(gh_call(fx->gh, &req, on_done, &g2, &err) > 0);
	wait_done(fx, &g2);
	assert_int_equal(cJSON_GetArraySize(g2.json), 75);
	assert_int_equal(g2.r.pages, 4);
	assert_false(g2.r.truncated);

	/* Close one and label another through PATCH; the list filters. */
	struct gh_req patch = {.method = "PATCH",
	                       .path = "/repos/octo/hello/issues/3",
	                       .body = "{\"state\":\"closed\"}",
	                       .what = "close octo/hello#3"};
	struct got g3 = {0};
	assert_true(gh_call(fx->gh, &patch, on_done, &g3, &err) > 0);
	patch.path = "/repos/octo/hello/issues/4";
	patch.body = "{\"labels\":[\"plan\",\"memo\"]}";
	struct got g4 = {0};
	assert_true(gh_call(fx->gh, &patch, on_done, &g4, &err) > 0);
	struct gh_issue_query closed = {.state = "closed"}, labelled = {.labels = "memo,plan"};
	struct got g5 = {0}, g6 = {0};
	assert_true(gh_issues_list(fx->gh, "octo", "hello", &closed, on_done, &g5, &err) > 0);
	assert_true(gh_issues_list(fx->gh, "octo", "hello", &labelled, on_done, &g6, &err) > 0);
	wait_done(fx, &g6);
	assert_int_equal(g3.r.kind, GH_OK);
	assert_int_equal(g4.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g5.json), 1);
	assert_int_equal(json_int_or(cJSON_GetArrayItem(g5.json, 0), "number", -1), 3);
	assert_int_equal(cJSON_GetArraySize(g6.json), 1);
	assert_int_equal(json_int_or(cJSON_GetArrayItem(g6.json, 0), "number", -1), 4);
	struct got *all[] = {&g1, &g2, &g3, &g4, &g5, &g6};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		got_free(all[i]);
}

/* --- errors ----------------------------------------------------------------------- */

static void test_401_is_fatal_and_names_the_token(void **state)
{
	struct fx *fx = *state;
	make_client(fx, ghfake_base_url(fx->fake), "ghp_revoked");
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(gh_issue_get(fx->gh, "octo", "hello", 1, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, GH_ERR_AUTH);
	assert_true(gh_error_is_fatal(g.r.kind));
	assert_int_equal(g.r.status, 401);
	assert_int_equal(g.r.attempts, 1); /* not retried */
	assert_non_null(strstr(g.r.msg, "AGENT_GITHUB_TOKEN"));
	assert_non_null(strstr(g.r.msg, "Bad credentials"));
	assert_null(strstr(g.r.msg, "ghp_revoked"));
	assert_int_equal(ghfake_requests(fx->fake), 1);
	/* No token at all, on a fake that wants one. */
	make_client(fx, ghfake_base_url(fx->fake), NULL);
	struct got g2 = {0};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g2, &err) > 0);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_ERR_AUTH);
	assert_non_null(strstr(g2.r.msg, "set AGENT_GITHUB_TOKEN"));
	struct httpfake_request *q =
	        httpfake_request_find_last(ghfake_http(fx->fake), "GET", "/repos/octo/hello");
	assert_non_null(q);
	assert_null(httpfake_request_header(q, "Authorization"));
	httpfake_request_free(q);
}

static void test_per_request_refusals_name_what_was_refused(void **state)
{
	struct fx *fx = *state;
	ghfake_add_repo(fx->fake, "octo", "locked", GHFAKE_REPO_READONLY);
	ghfake_add_repo(fx->fake, "octo", "noissues", GHFAKE_REPO_ISSUES_DISABLED);
	struct ga_err err = {{0}};
	struct gh_issue_new in = {.title = "t", .body = "b"};

	struct got g1 = {0};
	assert_true(gh_issue_create(fx->gh, "octo", "locked", &in, on_done, &g1, &err) > 0);
	wait_done(fx, &g1);
	assert_int_equal(g1.r.kind, GH_ERR_FORBIDDEN);
	assert_non_null(strstr(g1.r.msg, "create an issue in octo/locked"));
	assert_non_null(strstr(g1.r.msg, "Resource not accessible by personal access token"));
	assert_false(g1.r.maybe_applied);

	struct got g2 = {0};
	assert_true(gh_repo_get(fx->gh, "nobody", "nothing", on_done, &g2, &err) > 0);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_ERR_NOT_FOUND);
	assert_non_null(strstr(g2.r.msg, "get repository nobody/nothing"));

	struct got g3 = {0};
	assert_true(gh_issue_create(fx->gh, "octo", "noissues", &in, on_done, &g3, &err) > 0);
	wait_done(fx, &g3);
	assert_int_equal(g3.r.kind, GH_ERR_GONE);
	assert_non_null(strstr(g3.r.msg, "Issues are disabled for this repo"));

	struct gh_req req = {.method = "POST",
	                     .path = "/repos/octo/hello/issues",
	                     .body = "{\"body\":\"no title\"}",
	                     .what = "create an issue in octo/hello"};
	struct got g4 = {0};
	assert_true(gh_call(fx->gh, &req, on_done, &g4, &err) > 0);
	wait_done(fx, &g4);
	assert_int_equal(g4.r.kind, GH_ERR_INVALID);
	assert_non_null(strstr(g4.r.msg, "Validation Failed: field 'title' of Issue is "
	                                 "missing_field"));

	/* None of them was retried; the client goes on. */
	assert_int_equal(ghfake_requests(fx->fake), 4);
	struct got g5 = {0};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g5, &err) > 0);
	wait_done(fx, &g5);
	assert_int_equal(g5.r.kind, GH_OK);
	struct gh_stats st;
	gh_client_stats(fx->gh, &st);
	assert_int_equal(st.failures, 4);
	assert_int_equal(st.retries, 0);
	got_free(&g5);
}

static void test_5xx_and_html_are_retried_then_reported(void **state)
{
	struct fx *fx = *state;
	struct ga_err err = {{0}};
	/* Two 502s, then the answer. */
	ghfake_fail_next(fx->fake, 2, 502, false);
	struct got g1 = {0};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g1, &err) > 0);
	wait_done(fx, &g1);
	assert_int_equal(g1.r.kind, GH_OK);
	assert_int_equal(g1.r.attempts, 3);
	assert_int_equal(ghfake_count(fx->fake, "GET", "/repos/octo/hello", 502), 2);

	/* HTML error pages until the retries run out (3 retries = 4 attempts). */
	ghfake_fail_next(fx->fake, 100, 503, true);
	struct got g2 = {0};
	assert_true(gh_issue_get(fx->gh, "octo", "hello", 1, on_done, &g2, &err) > 0);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_ERR_TRANSIENT);
	assert_int_equal(g2.r.attempts, 4);
	assert_int_equal(g2.r.status, 503);
	assert_non_null(strstr(g2.r.msg, "an HTML page instead of JSON"));
	assert_non_null(strstr(g2.r.msg, "gave up after 4 attempts"));
	assert_non_null(strstr(g2.r.msg, "get issue octo/hello#1"));

	/* A POST that got a 5xx may have been carried out: not repeated. */
	ghfake_fail_next(fx->fake, 1, 502, false);
	struct gh_issue_new in = {.title = "t"};
	struct got g3 = {0};
	size_t before = ghfake_requests(fx->fake);
	assert_true(gh_issue_create(fx->gh, "octo", "hello", &in, on_done, &g3, &err) > 0);
	wait_done(fx, &g3);
	assert_int_equal(g3.r.kind, GH_ERR_TRANSIENT);
	assert_true(g3.r.maybe_applied);
	assert_int_equal(g3.r.attempts, 1);
	assert_int_equal(ghfake_requests(fx->fake) - before, 1);
	assert_non_null(strstr(g3.r.msg, "not repeated"));

	/* A reaction may be repeated: retried after the 5xx. */
	int64_t n = ghfake_add_issue(fx->fake, "octo", "hello", "host", "t", "b");
	ghfake_fail_next(fx->fake, 1, 500, false);
	struct got g4 = {0};
	assert_true(gh_reaction_create(fx->gh, "octo", "hello", n, 0, "+1", on_done, &g4, &err) >
	            0);
	wait_done(fx, &g4);
	assert_int_equal(g4.r.kind, GH_OK);
	assert_int_equal(g4.r.attempts, 2);
	got_free(&g1);
	got_free(&g4);
}

static void test_unreachable_server(void **state)
{
	struct fx *fx = *state;
	/* A port nothing listens on: the connection is refused, so even a
	 * POST is known not to have arrived and is retried; then reported. */
	char err_s[256];
	struct httpfake *hf = httpfake_new(0, err_s, sizeof err_s);
	char url[64];
	snprintf(url, sizeof url, "%s", httpfake_base_url(hf));
	httpfake_free(hf);
	make_client(fx, url, TOKEN);
	struct gh_issue_new in = {.title = "t"};
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(gh_issue_create(fx->gh, "octo", "hello", &in, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, GH_ERR_TRANSIENT);
	assert_false(g.r.maybe_applied);
	assert_int_equal(g.r.attempts, 4);
	assert_non_null(strstr(g.r.msg, "did not answer the attempt to create an issue"));
}

static void test_slow_answers_arrive(void **state)
{
	struct fx *fx = *state;
	ghfake_set_delay(fx->fake, 300);
	struct got g = {0};
	struct ga_err err = {{0}};
	uint64_t t0 = time_mono_ms();
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, GH_OK);
	assert_true(time_mono_ms() - t0 >= 300);
	got_free(&g);
}

static void test_free_cancels_pending_calls(void **state)
{
	struct fx *fx = *state;
	ghfake_set_delay(fx->fake, 2000);
	struct got g1 = {0}, g2 = {0};
	struct ga_err err = {{0}};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g1, &err) > 0);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g2, &err) > 0);
	run_for(fx, 50); /* the first is in flight */
	gh_client_free(fx->gh);
	fx->gh = NULL;
	assert_true(g1.done && g2.done);
	assert_int_equal(g1.r.kind, GH_ERR_CANCELLED);
	assert_int_equal(g2.r.kind, GH_ERR_CANCELLED);
	assert_non_null(strstr(g2.r.msg, "shutting down"));
	uv_run(&fx->loop, UV_RUN_NOWAIT);
}

static void test_cancel_drops_a_call_without_callback(void **state)
{
	struct fx *fx = *state;
	ghfake_set_delay(fx->fake, 1500); /* the first is surely still in flight */
	struct got g1 = {0}, g2 = {0}, g3 = {0};
	struct ga_err err = {{0}};
	uint64_t id1 = gh_repo_get(fx->gh, "octo", "hello", on_done, &g1, &err);
	uint64_t id2 = gh_repo_get(fx->gh, "octo", "hello", on_done, &g2, &err);
	assert_true(id1 > 0 && id2 > 0);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g3, &err) > 0);
	run_for(fx, 50); /* the first is in flight, two wait */
	assert_int_equal(gh_cancel(fx->gh, id2), 0);
	assert_int_equal(gh_cancel(fx->gh, id1), 0);
	assert_int_equal(gh_cancel(fx->gh, id1), -1);
	wait_done(fx, &g3);
	assert_int_equal(g3.r.kind, GH_OK);
	assert_false(g1.done);
	assert_false(g2.done);
	assert_int_equal(gh_pending(fx->gh), 0);
	got_free(&g3);
}

static void test_http_close_cancels_everything(void **state)
{
	struct fx *fx = *state;
	ghfake_set_delay(fx->fake, 1500);
	struct got g1 = {0}, g2 = {0};
	struct ga_err err = {{0}};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g1, &err) > 0);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g2, &err) > 0);
	run_for(fx, 50);
	http_client_close(fx->http); /* the daemon shutting down in the other order */
	fx->http = NULL;
	wait_done(fx, &g2);
	assert_true(g1.done);
	assert_int_equal(g1.r.kind, GH_ERR_CANCELLED);
	assert_int_equal(g2.r.kind, GH_ERR_CANCELLED);
	assert_int_equal(g2.r.attempts, 0);
	assert_int_equal(gh_pending(fx->gh), 0);
}

/* --- rate limits, on the moving clock -------------------------------------------------- */

static void test_primary_limit_holds_then_resumes_after_reset(void **state)
{
	struct fx *fx = *state;
	ghfake_rate_limit(fx->fake, "core", 3, 3600 * 1000);
	struct ga_err err = {{0}};
	struct got g[3] = {{0}};
	/* Three different requests: a repeated GET would be a free 304. */
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g[0], &err) > 0);
	assert_true(gh_user_get(fx->gh, on_done, &g[1], &err) > 0);
	assert_true(gh_issues_list(fx->gh, "octo", "hello", NULL, on_done, &g[2], &err) > 0);
	wait_done(fx, &g[2]);
	for (int i = 0; i < 3; i++)
		assert_int_equal(g[i].r.kind, GH_OK);
	struct gh_bucket b;
	assert_int_equal(gh_rate_snapshot(fx->gh, "core", &b), 0);
	assert_int_equal(b.remaining, 0);
	assert_int_equal(b.limit, 3);

	/* The budget is spent: the next request waits without being sent. */
	struct got w = {0};
	assert_true(gh_issue_get(fx->gh, "octo", "hello", 1, on_done, &w, &err) > 0);
	run_for(fx, 100);
	assert_false(w.done);
	assert_int_equal(ghfake_requests(fx->fake), 3);
	assert_int_equal(gh_pending(fx->gh), 1);

	/* An hour later the window has reset: it goes, and so does the rest. */
	ghfake_add_issue(fx->fake, "octo", "hello", "host", "t", "b");
	advance(3601 * 1000);
	wait_done(fx, &w);
	assert_int_equal(w.r.kind, GH_OK);
	assert_int_equal(w.r.attempts, 1);
	assert_int_equal(ghfake_requests(fx->fake), 4);
	for (int i = 0; i < 3; i++)
		got_free(&g[i]);
	got_free(&w);
}

static void test_primary_403_is_waited_out(void **state)
{
	struct fx *fx = *state;
	/* The client believes it has budget; GitHub says 403, remaining 0. */
	ghfake_rate_limit(fx->fake, "core", 100, 3600 * 1000);
	ghfake_set_remaining(fx->fake, "core", 0, test_clock(NULL) + 120 * 1000);
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g, &err) > 0);
	run_until_requests(fx, 1);
	run_for(fx, 50);
	assert_false(g.done);
	assert_int_equal(ghfake_count(fx->fake, "GET", "/repos/octo/hello", 403), 1);
	advance(121 * 1000);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, GH_OK);
	assert_int_equal(g.r.attempts, 2);
	struct gh_stats st;
	gh_client_stats(fx->gh, &st);
	assert_int_equal(st.rate_limited, 1);
	got_free(&g);
}

static void tweak_low_budget(struct gh_config *cfg)
{
	cfg->low_budget = 100;
}

static void test_low_budget_paces_instead_of_refusing(void **state)
{
	struct fx *fx = *state;
	/* 50 left of 5000 with half an hour to go: the reference stopped
	 * for good under 100; here requests keep going, spread out. */
	make_client_tweaked(fx, ghfake_base_url(fx->fake), TOKEN, tweak_low_budget);
	ghfake_rate_limit(fx->fake, "core", 5000, 3600 * 1000);
	ghfake_set_remaining(fx->fake, "core", 50, test_clock(NULL) + 1800 * 1000);
	struct ga_err err = {{0}};
	struct got g1 = {0}, g2 = {0};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g1, &err) > 0);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g2, &err) > 0);
	wait_done(fx, &g1);
	assert_int_equal(g1.r.kind, GH_OK);
	run_for(fx, 100);
	assert_false(g2.done); /* paced: ~36 s of the test clock */
	advance(40 * 1000);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_OK);
	/* After the reset, no pacing at all. */
	advance(1800 * 1000);
	struct got g3 = {0}, g4 = {0};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g3, &err) > 0);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g4, &err) > 0);
	wait_done(fx, &g4);
	assert_int_equal(g4.r.kind, GH_OK);
	got_free(&g1);
	got_free(&g2);
	got_free(&g3);
	got_free(&g4);
}

static void test_secondary_limit_with_retry_after(void **state)
{
	struct fx *fx = *state;
	ghfake_secondary_limit(fx->fake, 1, 403, 30);
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(gh_issue_get(fx->gh, "octo", "hello", 1, on_done, &g, &err) > 0);
	run_until_requests(fx, 1);
	run_for(fx, 50);
	assert_false(g.done);
	/* The hold is for every request, not only this one. */
	struct got other = {0};
	assert_true(gh_search_issues(fx->gh, "x", 0, on_done, &other, &err) > 0);
	run_for(fx, 50);
	assert_false(other.done);
	assert_int_equal(ghfake_requests(fx->fake), 1);
	advance(31 * 1000);
	wait_done(fx, &other);
	assert_true(g.done);
	assert_int_equal(g.r.kind, GH_ERR_NOT_FOUND); /* no issue 1: the real answer */
	assert_int_equal(g.r.attempts, 2);
	assert_int_equal(other.r.kind, GH_OK);
	got_free(&other);
}

static void test_secondary_429_without_retry_after(void **state)
{
	struct fx *fx = *state;
	ghfake_secondary_limit(fx->fake, 1, 429, -1);
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g, &err) > 0);
	run_until_requests(fx, 1);
	run_for(fx, 50);
	assert_false(g.done);
	advance(50 * 1000);
	run_for(fx, 50);
	assert_false(g.done); /* the default is a minute */
	advance(11 * 1000);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, GH_OK);
	got_free(&g);
}

struct pump {
	uv_timer_t t;
	int64_t step_ms;
};

static void on_pump(uv_timer_t *t)
{
	advance(((struct pump *)t->data)->step_ms);
}

static void tweak_rate_retries(struct gh_config *cfg)
{
	cfg->max_rate_retries = 2;
}

static void test_rate_limited_too_often_gives_up_and_client_goes_on(void **state)
{
	struct fx *fx = *state;
	make_client_tweaked(fx, ghfake_base_url(fx->fake), TOKEN, tweak_rate_retries);
	ghfake_secondary_limit(fx->fake, 3, 429, 5);
	struct pump p = {.step_ms = 2000};
	uv_timer_init(&fx->loop, &p.t);
	p.t.data = &p;
	uv_timer_start(&p.t, on_pump, 2, 2); /* the clock runs 1000x */
	struct got g = {0}, g2 = {0};
	struct ga_err err = {{0}};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, GH_ERR_RATE_LIMITED);
	assert_int_equal(g.r.attempts, 3);
	assert_non_null(strstr(g.r.msg, "secondary rate limit"));
	assert_non_null(strstr(g.r.msg, "gave up after 3 rate-limited answers"));
	assert_non_null(strstr(g.r.msg, "get repository octo/hello"));
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g2, &err) > 0);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_OK);
	uv_timer_stop(&p.t);
	uv_close((uv_handle_t *)&p.t, NULL);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	got_free(&g2);
}

static void tweak_max_wait(struct gh_config *cfg)
{
	cfg->max_wait_ms = 10 * 60 * 1000;
}

static void test_wait_longer_than_allowed_fails_without_sending(void **state)
{
	struct fx *fx = *state;
	make_client_tweaked(fx, ghfake_base_url(fx->fake), TOKEN, tweak_max_wait);
	ghfake_rate_limit(fx->fake, "core", 1, 3600 * 1000);
	struct ga_err err = {{0}};
	struct got g1 = {0}, g2 = {0}, g3 = {0};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g1, &err) > 0);
	wait_done(fx, &g1);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g2, &err) > 0);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_ERR_RATE_LIMITED);
	assert_int_equal(g2.r.attempts, 0);
	assert_non_null(strstr(g2.r.msg, "primary rate limit holds the attempt to get repository"));
	assert_non_null(strstr(g2.r.msg, "it was not sent"));
	assert_int_equal(ghfake_requests(fx->fake), 1);
	advance(3601 * 1000);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g3, &err) > 0);
	wait_done(fx, &g3);
	assert_int_equal(g3.r.kind, GH_OK);
	got_free(&g1);
	got_free(&g3);
}

static void test_spent_search_budget_does_not_stop_core(void **state)
{
	struct fx *fx = *state;
	ghfake_rate_limit(fx->fake, "search", 1, 60 * 1000);
	struct ga_err err = {{0}};
	struct got s1 = {0}, s2 = {0}, c1 = {0};
	assert_true(gh_search_issues(fx->gh, "a", 0, on_done, &s1, &err) > 0);
	wait_done(fx, &s1);
	assert_int_equal(s1.r.kind, GH_OK);
	assert_true(gh_search_issues(fx->gh, "b", 0, on_done, &s2, &err) > 0);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &c1, &err) > 0);
	wait_done(fx, &c1);
	assert_int_equal(c1.r.kind, GH_OK);
	assert_false(s2.done);
	assert_true(c1.order > s1.order);
	advance(61 * 1000);
	wait_done(fx, &s2);
	assert_int_equal(s2.r.kind, GH_OK);
	assert_int_equal(ghfake_count(fx->fake, "GET", "/search/issues", 403), 0);
	got_free(&s1);
	got_free(&s2);
	got_free(&c1);
}

static void tweak_spacing(struct gh_config *cfg)
{
	cfg->spacing_ms = 10000; /* long enough that a slow machine cannot pass it */
	cfg->write_spacing_ms = 50000;
}

static void test_spacing_between_requests(void **state)
{
	struct fx *fx = *state;
	make_client_tweaked(fx, ghfake_base_url(fx->fake), TOKEN, tweak_spacing);
	struct ga_err err = {{0}};
	struct got g1 = {0}, g2 = {0};
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g1, &err) > 0);
	assert_true(gh_repo_get(fx->gh, "octo", "hello", on_done, &g2, &err) > 0);
	wait_done(fx, &g1);
	run_for(fx, 100);
	assert_false(g2.done);
	advance(10000);
	wait_done(fx, &g2);
	assert_int_equal(g2.r.kind, GH_OK);
	/* A write waits for the larger write spacing after a write. */
	struct gh_issue_new in = {.title = "t"};
	struct got w1 = {0}, w2 = {0};
	advance(10000);
	assert_true(gh_issue_create(fx->gh, "octo", "hello", &in, on_done, &w1, &err) > 0);
	assert_true(gh_issue_create(fx->gh, "octo", "hello", &in, on_done, &w2, &err) > 0);
	wait_done(fx, &w1);
	advance(20000);
	run_for(fx, 100);
	assert_false(w2.done);
	advance(30000);
	wait_done(fx, &w2);
	assert_int_equal(w2.r.kind, GH_OK);
	assert_int_equal(ghfake_issue_count(fx->fake, "octo", "hello"), 2);
	got_free(&g1);
	got_free(&g2);
	got_free(&w1);
	got_free(&w2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_create_issue_sends_github_headers, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_issue_get_comment_list_react, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_local_refusals, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_queue_is_bounded, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pagination_and_its_bounds, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_next_link_to_another_host_is_not_followed,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_notifications, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_search_by_body_text, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_search_pages_and_list_filters, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_401_is_fatal_and_names_the_token, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_per_request_refusals_name_what_was_refused,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_5xx_and_html_are_retried_then_reported, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_unreachable_server, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_slow_answers_arrive, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_free_cancels_pending_calls, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_cancel_drops_a_call_without_callback, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_http_close_cancels_everything, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_primary_limit_holds_then_resumes_after_reset,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_primary_403_is_waited_out, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_low_budget_paces_instead_of_refusing, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_secondary_limit_with_retry_after, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_secondary_429_without_retry_after, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_rate_limited_too_often_gives_up_and_client_goes_on, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_wait_longer_than_allowed_fails_without_sending,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_spent_search_budget_does_not_stop_core, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_spacing_between_requests, setup, teardown),
	};
	/* GH_TEST=pattern runs the matching tests only (debugging aid). */
	enum log_level lvl;
	if (getenv("LOG_LEVEL") && log_level_parse(getenv("LOG_LEVEL"), &lvl) == 0)
		log_set_level(lvl);
	if (getenv("GH_TEST"))
		cmocka_set_test_filter(getenv("GH_TEST"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
