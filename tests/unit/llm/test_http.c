/*
 * test_http — the HTTP adapter against httpfake on 127.0.0.1: statuses,
 * headers, bodies, the body limit, timeouts, refused and dropped
 * connections, per-host spacing and holds, the queue bound, cancellation
 * and shutdown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/http/http.h"
#include "common/timeutil.h"
#include "tests/fakes/httpfake/httpfake.h"
#include "tests/unit/llm/testloop.h"

struct got {
	bool done;
	int calls;
	enum http_error error;
	long status;
	char msg[GA_ERR_MSG_MAX];
	char body[4096];
	size_t body_len;
	char content_type[128];
	char retry_after[64];
	char ratelimit[64];
	uint64_t done_at; /* uv_now */
	uv_loop_t *loop;
};

static void on_done(void *ud, const struct http_response *r)
{
	struct got *g = ud;
	g->done = true;
	g->calls++;
	g->error = r->error;
	g->status = r->status;
	snprintf(g->msg, sizeof g->msg, "%s", r->error_msg);
	g->body_len = r->body_len;
	snprintf(g->body, sizeof g->body, "%s", r->body);
	const char *v = http_response_header(r, "content-type");
	snprintf(g->content_type, sizeof g->content_type, "%s", v ? v : "");
	v = http_response_header(r, "Retry-After");
	snprintf(g->retry_after, sizeof g->retry_after, "%s", v ? v : "");
	v = http_response_header(r, "RateLimit-Remaining");
	snprintf(g->ratelimit, sizeof g->ratelimit, "%s", v ? v : "");
	if (g->loop)
		g->done_at = uv_now(g->loop);
}

struct fx {
	uv_loop_t loop;
	struct httpfake *fake;
	struct http_client *http;
	char url[256];
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = httpfake_new(0, err, sizeof err);
	assert_non_null(fx->fake);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	assert_non_null(fx->http);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	assert_int_equal(uv_loop_close(&fx->loop), 0);
	httpfake_free(fx->fake);
	free(fx);
	return 0;
}

static const char *url(struct fx *fx, const char *path)
{
	snprintf(fx->url, sizeof fx->url, "%s%s", httpfake_base_url(fx->fake), path);
	return fx->url;
}

static void get(struct fx *fx, const char *path, struct got *g, const struct http_request *base)
{
	struct http_request req = base ? *base : (struct http_request){0};
	req.url = url(fx, path);
	if (!req.method)
		req.method = "GET";
	struct ga_err err = {{0}};
	g->loop = &fx->loop;
	assert_true(http_request(fx->http, &req, on_done, g, &err) > 0);
	assert_int_equal(testloop_run_until(&fx->loop, &g->done), 0);
}

static void test_get_status_headers_body(void **state)
{
	struct fx *fx = *state;
	struct httpfake_route *rt = httpfake_route(fx->fake, "GET", "/limited");
	struct httpfake_response *r =
	        httpfake_route_respond(rt, 429, "application/json", "{\"error\":\"slow\"}");
	httpfake_response_header(r, "Retry-After", "7");
	httpfake_response_header(r, "RateLimit-Remaining", "0");
	struct got g = {0};
	get(fx, "/limited", &g, NULL);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(g.status, 429);
	assert_string_equal(g.body, "{\"error\":\"slow\"}");
	assert_string_equal(g.content_type, "application/json");
	assert_string_equal(g.retry_after, "7");
	assert_string_equal(g.ratelimit, "0");

	struct httpfake_request *q = httpfake_request_find_last(fx->fake, "GET", "/limited");
	assert_non_null(q);
	assert_string_equal(httpfake_request_header(q, "User-Agent"), "general-agent/" GA_VERSION);
	httpfake_request_free(q);
}

static void test_post_sends_body_and_headers(void **state)
{
	struct fx *fx = *state;
	httpfake_route_respond(httpfake_route(fx->fake, "POST", "/echo"), 201, "text/plain",
	                       "made");
	const char *hdrs[] = {"Content-Type: application/json", "X-Test: yes", NULL};
	struct http_request req = {
	        .method = "POST", .headers = hdrs, .body = "{\"a\":1}", .body_len = 7};
	struct got g = {0};
	get(fx, "/echo", &g, &req);
	assert_int_equal(g.status, 201);
	assert_string_equal(g.body, "made");
	struct httpfake_request *q = httpfake_request_find_last(fx->fake, "POST", "/echo");
	assert_non_null(q);
	assert_string_equal(q->body, "{\"a\":1}");
	assert_string_equal(httpfake_request_header(q, "X-Test"), "yes");
	assert_string_equal(httpfake_request_header(q, "Content-Type"), "application/json");
	httpfake_request_free(q);
}

static void test_body_limit_is_an_error(void **state)
{
	struct fx *fx = *state;
	char *big = malloc(2049);
	memset(big, 'x', 2048);
	big[2048] = '\0';
	httpfake_route_respond(httpfake_route(fx->fake, "GET", "/big"), 200, "text/plain", big);
	free(big);
	struct http_request req = {.max_body_bytes = 1024};
	struct got g = {0};
	get(fx, "/big", &g, &req);
	assert_int_equal(g.error, HTTP_ERR_TOO_LARGE);
	assert_string_equal(g.msg, "response body larger than 1 KiB from 127.0.0.1");
	assert_int_equal(g.body_len, 0);
}

static void test_default_limit_is_8_mib(void **state)
{
	struct fx *fx = *state;
	size_t n = HTTP_DEFAULT_MAX_BODY_BYTES + 1;
	char *big = malloc(n + 1);
	memset(big, 'y', n);
	big[n] = '\0';
	httpfake_route_respond(httpfake_route(fx->fake, "GET", "/huge"), 200, "text/plain", big);
	free(big);
	struct got g = {0};
	get(fx, "/huge", &g, NULL);
	assert_int_equal(g.error, HTTP_ERR_TOO_LARGE);
	assert_string_equal(g.msg, "response body larger than 8 MiB from 127.0.0.1");

	/* exactly the limit is fine */
	big = malloc(HTTP_DEFAULT_MAX_BODY_BYTES + 1);
	memset(big, 'z', HTTP_DEFAULT_MAX_BODY_BYTES);
	big[HTTP_DEFAULT_MAX_BODY_BYTES] = '\0';
	httpfake_route_respond(httpfake_route(fx->fake, "GET", "/edge"), 200, "text/plain", big);
	free(big);
	struct got g2 = {0};
	get(fx, "/edge", &g2, NULL);
	assert_int_equal(g2.error, HTTP_OK);
	assert_int_equal(g2.body_len, HTTP_DEFAULT_MAX_BODY_BYTES);
}

static void test_timeout_when_peer_never_answers(void **state)
{
	struct fx *fx = *state;
	struct httpfake_response *r =
	        httpfake_route_respond(httpfake_route(fx->fake, "GET", "/never"), 200, NULL, NULL);
	httpfake_response_action(r, HTTPFAKE_HANG);
	struct http_request req = {.timeout_ms = 200};
	struct got g = {0};
	get(fx, "/never", &g, &req);
	assert_int_equal(g.error, HTTP_ERR_TIMEOUT);
	assert_non_null(strstr(g.msg, "127.0.0.1 did not answer within 200 ms"));
}

static void test_dropped_connection(void **state)
{
	struct fx *fx = *state;
	struct httpfake_response *r =
	        httpfake_route_respond(httpfake_route(fx->fake, "GET", "/drop"), 200, NULL, NULL);
	httpfake_response_action(r, HTTPFAKE_DROP);
	struct got g = {0};
	get(fx, "/drop", &g, NULL);
	assert_int_equal(g.error, HTTP_ERR_TRANSPORT);
	assert_int_equal(g.status, 0);
	assert_non_null(strstr(g.msg, "127.0.0.1"));
}

static void test_connection_refused(void **state)
{
	struct fx *fx = *state;
	char err[256];
	struct httpfake *gone = httpfake_new(0, err, sizeof err);
	char u[128];
	snprintf(u, sizeof u, "%s/x", httpfake_base_url(gone));
	httpfake_free(gone); /* nobody listens there now */
	struct http_request req = {.method = "GET", .url = u};
	struct got g = {0};
	struct ga_err e = {{0}};
	assert_true(http_request(fx->http, &req, on_done, &g, &e) > 0);
	assert_int_equal(testloop_run_until(&fx->loop, &g.done), 0);
	assert_int_equal(g.error, HTTP_ERR_CONNECT);
	assert_non_null(strstr(g.msg, "cannot connect to 127.0.0.1"));
}

static void test_https_to_plain_server_fails_tls(void **state)
{
	struct fx *fx = *state;
	char u[128];
	snprintf(u, sizeof u, "https://127.0.0.1:%u/x", (unsigned)httpfake_port(fx->fake));
	struct http_request req = {.method = "GET", .url = u};
	struct got g = {0};
	struct ga_err e = {{0}};
	assert_true(http_request(fx->http, &req, on_done, &g, &e) > 0);
	assert_int_equal(testloop_run_until(&fx->loop, &g.done), 0);
	assert_int_not_equal(g.error, HTTP_OK);
	assert_int_equal(g.status, 0);
}

static void test_bad_urls_are_refused(void **state)
{
	struct fx *fx = *state;
	struct got g = {0};
	struct ga_err e = {{0}};
	struct http_request req = {.method = "GET", .url = "ftp://example.com/x"};
	assert_int_equal(http_request(fx->http, &req, on_done, &g, &e), 0);
	assert_non_null(strstr(e.msg, "must start with http:// or https://"));
	req.url = "not a url";
	assert_int_equal(http_request(fx->http, &req, on_done, &g, &e), 0);
	assert_non_null(strstr(e.msg, "not a url"));
	req.url = "http://127.0.0.1/x";
	req.method = "BREW";
	assert_int_equal(http_request(fx->http, &req, on_done, &g, &e), 0);
	assert_non_null(strstr(e.msg, "BREW"));
	const char *bad_hdr[] = {"X-A: b\r\nX-Injected: 1", NULL};
	req.method = "GET";
	req.headers = bad_hdr;
	assert_int_equal(http_request(fx->http, &req, on_done, &g, &e), 0);
	assert_non_null(strstr(e.msg, "line break"));
	assert_false(g.done);
}

static void test_host_spacing_queues_not_rejects(void **state)
{
	struct fx *fx = *state;
	httpfake_route_respond(httpfake_route(fx->fake, "GET", "/s"), 200, "text/plain", "ok");
	http_set_host_spacing(fx->http, "127.0.0.1", 150);
	struct got g[3] = {{0}};
	struct ga_err e = {{0}};
	uint64_t t0 = uv_now(&fx->loop);
	for (int i = 0; i < 3; i++) {
		struct http_request req = {.method = "GET", .url = url(fx, "/s")};
		g[i].loop = &fx->loop;
		assert_true(http_request(fx->http, &req, on_done, &g[i], &e) > 0);
	}
	assert_int_equal(http_pending(fx->http), 3);
	assert_int_equal(testloop_run_until(&fx->loop, &g[2].done), 0);
	assert_true(g[0].done && g[1].done);
	for (int i = 0; i < 3; i++)
		assert_int_equal(g[i].status, 200);
	/* FIFO per host, and the third could not start before two gaps. */
	assert_true(g[0].done_at <= g[1].done_at && g[1].done_at <= g[2].done_at);
	assert_true(g[2].done_at - t0 >= 300);
	assert_int_equal(httpfake_request_count(fx->fake), 3);
}

static int observed;
static void observe(void *ud, struct http_client *c, const struct http_response *r)
{
	struct got *g = ud;
	/* runs before the request's own callback */
	assert_false(g->done);
	observed++;
	const char *rem = http_response_header(r, "RateLimit-Remaining");
	if (rem && strcmp(rem, "0") == 0)
		http_hold_host(c, r->host, 3600 * 1000);
}

static void test_rate_limit_hook_can_hold_a_host(void **state)
{
	struct fx *fx = *state;
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	struct got g = {0};
	struct http_client_opts o = {.on_response = observe, .observe_ud = &g};
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, &o, &e);
	struct httpfake_response *r =
	        httpfake_route_respond(httpfake_route(fx->fake, "GET", "/rl"), 200, NULL, "a");
	httpfake_response_header(r, "RateLimit-Remaining", "0");
	observed = 0;
	get(fx, "/rl", &g, NULL);
	assert_int_equal(observed, 1);
	/* the host is now held: a second request waits in the queue */
	struct got g2 = {0};
	struct http_request req = {.method = "GET", .url = url(fx, "/rl")};
	assert_true(http_request(fx->http, &req, on_done, &g2, &e) > 0);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_int_equal(http_pending(fx->http), 1);
	assert_int_equal(httpfake_request_count(fx->fake), 1);
	/* closing cancels it through its callback */
	http_client_close(fx->http);
	assert_true(g2.done);
	assert_int_equal(g2.error, HTTP_ERR_CANCELLED);
	testloop_drain(&fx->loop);
	fx->http = http_client_new(&fx->loop, NULL, &e);
}

static void test_queue_is_bounded(void **state)
{
	struct fx *fx = *state;
	http_hold_host(fx->http, "127.0.0.1", 3600 * 1000);
	struct got *g = calloc(HTTP_MAX_REQUESTS + 1, sizeof *g);
	struct ga_err e = {{0}};
	for (int i = 0; i < HTTP_MAX_REQUESTS; i++) {
		struct http_request req = {.method = "GET", .url = url(fx, "/q")};
		assert_true(http_request(fx->http, &req, on_done, &g[i], &e) > 0);
	}
	struct http_request req = {.method = "GET", .url = url(fx, "/q")};
	assert_int_equal(http_request(fx->http, &req, on_done, &g[HTTP_MAX_REQUESTS], &e), 0);
	assert_non_null(strstr(e.msg, "too many HTTP requests pending"));
	/* cancel one without a callback */
	assert_int_equal(http_pending(fx->http), HTTP_MAX_REQUESTS);
	http_client_close(fx->http);
	int cancelled = 0;
	for (int i = 0; i < HTTP_MAX_REQUESTS; i++)
		cancelled += g[i].error == HTTP_ERR_CANCELLED && g[i].calls == 1;
	assert_int_equal(cancelled, HTTP_MAX_REQUESTS);
	assert_false(g[HTTP_MAX_REQUESTS].done);
	free(g);
	testloop_drain(&fx->loop);
	fx->http = http_client_new(&fx->loop, NULL, &e);
}

static void test_cancel_running_request(void **state)
{
	struct fx *fx = *state;
	struct httpfake_response *r =
	        httpfake_route_respond(httpfake_route(fx->fake, "GET", "/slow"), 200, NULL, NULL);
	httpfake_response_action(r, HTTPFAKE_HANG);
	struct got g = {0};
	struct ga_err e = {{0}};
	struct http_request req = {.method = "GET", .url = url(fx, "/slow")};
	uint64_t id = http_request(fx->http, &req, on_done, &g, &e);
	assert_true(id > 0);
	assert_int_equal(httpfake_wait_count(fx->fake, 1, 0), -1);
	/* let it reach the server, then cancel */
	while (httpfake_request_count(fx->fake) < 1)
		uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_int_equal(http_cancel(fx->http, id), 0);
	assert_int_equal(http_cancel(fx->http, id), -1);
	assert_int_equal(http_pending(fx->http), 0);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	assert_false(g.done);
}

static void test_retry_after_parsing(void **state)
{
	int64_t d = -1;
	assert_int_equal(http_parse_retry_after("120", 0, &d), 0);
	assert_int_equal(d, 120000);
	assert_int_equal(http_parse_retry_after(" 0 ", 0, &d), 0);
	assert_int_equal(d, 0);
	/* Wed, 21 Oct 2015 07:28:00 GMT = 1445412480 */
	assert_int_equal(
	        http_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", INT64_C(1445412470000), &d),
	        0);
	assert_int_equal(d, 10000);
	assert_int_equal(
	        http_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", INT64_C(1445412490000), &d),
	        0);
	assert_int_equal(d, 0); /* in the past: no wait */
	assert_int_equal(http_parse_retry_after("soon", 0, &d), -1);
	assert_int_equal(http_parse_retry_after("", 0, &d), -1);
	assert_int_equal(http_parse_retry_after("12abc", 0, &d), -1);
	assert_int_equal(http_parse_retry_after(NULL, 0, &d), -1);
	assert_int_equal(http_parse_retry_after("99999999999999999999999", 0, &d), -1);
}

static void test_url_host(void **state)
{
	char h[HTTP_HOST_MAX];
	assert_int_equal(http_url_host("https://ai-gateway.vercel.sh/v1", h, sizeof h, NULL), 0);
	assert_string_equal(h, "ai-gateway.vercel.sh");
	assert_int_equal(http_url_host("http://127.0.0.1:8080/x?y", h, sizeof h, NULL), 0);
	assert_string_equal(h, "127.0.0.1");
	struct ga_err e = {{0}};
	assert_int_equal(http_url_host("file:///etc/passwd", h, sizeof h, &e), -1);
	assert_non_null(strstr(e.msg, "file:///etc/passwd"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_get_status_headers_body, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_post_sends_body_and_headers, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_body_limit_is_an_error, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_default_limit_is_8_mib, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_timeout_when_peer_never_answers, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_dropped_connection, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_connection_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_https_to_plain_server_fails_tls, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_bad_urls_are_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_host_spacing_queues_not_rejects, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_rate_limit_hook_can_hold_a_host, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_queue_is_bounded, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_cancel_running_request, setup, teardown),
	        cmocka_unit_test(test_retry_after_parsing),
	        cmocka_unit_test(test_url_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
