/*
 * The dashboard's API over real sockets against dash_host (a real loop, a
 * real decision log, a real pipeline): pages, status, live decisions and
 * why, conversations, commitments, permissions, the kill switch with its
 * CSRF checks, hostile input (bad JSON, huge bodies, path traversal, a
 * foreign Host, a missing or wrong token) answered with a clear 4xx and
 * the host unharmed, the stream limit and a slow stream dropped without
 * slowing the loop, secrets never shown, a clean close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dash_harness.h"
#include "testutil.h"

#define XD      "X-Dashboard: 1\r\n"
#define JSON_CT "Content-Type: application/json\r\n"

static struct dash_host H; /* shared by the tests of the first group */

static int group_setup(void **state)
{
	(void)state;
	char *e = NULL;
	if (dash_start(&H, NULL, &e) != 0) {
		fprintf(stderr, "dash_host did not start: %s\n", e ? e : "?");
		free(e);
		return -1;
	}
	return 0;
}

/* The shared host ends cleanly after everything above (under ASan: no
 * leak, no error, or its exit code says so). */
static int group_teardown(void **state)
{
	(void)state;
	int rc = dash_quit(&H);
	if (rc != 0)
		fprintf(stderr, "dash_host exited with %d\n", rc);
	dash_stop(&H);
	return rc == 0 ? 0 : -1;
}

static cJSON *get_json(int port, const char *path, int want_status)
{
	struct http_resp r;
	assert_int_equal(http_get(port, path, NULL, &r), 0);
	if (r.status != want_status)
		fail_msg("GET %s: %d, want %d: %s", path, r.status, want_status, r.body);
	const char *ct = http_header(&r, "Content-Type");
	assert_non_null(ct);
	assert_non_null(strstr(ct, "application/json"));
	cJSON *j = http_json(&r);
	if (!j)
		fail_msg("GET %s: not JSON: %s", path, r.body);
	http_resp_free(&r);
	return j;
}

/* The error sentence of a 4xx answer, checked to hold `want`. */
static void expect_error(const struct http_resp *r, int status, const char *want)
{
	if (r->status != status)
		fail_msg("status %d, want %d: %s", r->status, status, r->body);
	cJSON *j = http_json(r);
	if (!j)
		fail_msg("error body is not JSON: %s", r->body);
	const cJSON *e = cJSON_GetObjectItem(j, "error");
	assert_true(cJSON_IsString(e));
	if (!strstr(e->valuestring, want))
		fail_msg("error '%s' does not say '%s'", e->valuestring, want);
	cJSON_Delete(j);
}

static void host_healthy(struct dash_host *h)
{
	assert_true(proc_alive(&h->p));
	cJSON *s = get_json(h->port, "/api/status", 200);
	assert_string_equal(cJSON_GetObjectItem(s, "agent")->valuestring, "dashbot");
	cJSON_Delete(s);
}

static void cmd_ok(struct dash_host *h, const char *cmd)
{
	char *a = dash_cmd(h, cmd);
	if (!a || strcmp(a, "ok") != 0)
		fail_msg("host command '%s': %s", cmd, a ? a : "(no answer)");
	free(a);
}

/* --- pages ---------------------------------------------------------------------- */

static void test_static_pages(void **state)
{
	(void)state;
	struct http_resp r;
	assert_int_equal(http_get(H.port, "/", NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(http_header(&r, "Content-Type"), "text/html"));
	assert_non_null(strstr(http_header(&r, "Content-Security-Policy"), "default-src 'self'"));
	assert_string_equal(http_header(&r, "X-Frame-Options"), "DENY");
	assert_non_null(strstr(r.body, "<script src=\"app.js\""));
	/* no outside resource: nothing loads from another origin */
	assert_null(strstr(r.body, "http://"));
	assert_null(strstr(r.body, "https://"));
	http_resp_free(&r);
	assert_int_equal(http_get(H.port, "/app.js", NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(http_header(&r, "Content-Type"), "text/javascript"));
	http_resp_free(&r);
	assert_int_equal(http_get(H.port, "/style.css", NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(http_header(&r, "Content-Type"), "text/css"));
	http_resp_free(&r);
}

static void test_status(void **state)
{
	(void)state;
	cJSON *s = get_json(H.port, "/api/status", 200);
	assert_string_equal(cJSON_GetObjectItem(s, "agent")->valuestring, "dashbot");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(s, "paused")));
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(s, "uptimeMs")));
	const cJSON *f = cJSON_GetObjectItem(s, "features");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "space"), "enabled")));
	const cJSON *tb = cJSON_GetObjectItem(s, "tokenBudget");
	assert_int_equal(cJSON_GetObjectItem(tb, "dailyLimit")->valueint, 50000);
	assert_int_equal(cJSON_GetObjectItem(tb, "totalTokens")->valueint, 1200);
	assert_int_equal(cJSON_GetObjectItem(tb, "calls")->valueint, 3);
	assert_non_null(
	        strstr(cJSON_GetObjectItem(tb, "summary")->valuestring, "of 50,000 tokens"));
	/* the services' statuses (rate budgets) pass through as they are */
	const cJSON *rb = cJSON_GetObjectItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(s, "services"), "github"), "rateBudget");
	assert_int_equal(cJSON_GetObjectItem(rb, "remaining")->valueint, 4321);
	assert_int_equal(cJSON_GetObjectItem(rb, "limit")->valueint, 5000);
	const cJSON *d = cJSON_GetObjectItem(s, "dashboard");
	assert_int_equal(cJSON_GetObjectItem(d, "sseMax")->valueint, 8);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(d, "tokenRequired")));
	cJSON_Delete(s);
}

/* --- decisions, live and explained ---------------------------------------------------- */

static bool array_has(const cJSON *arr, const char *field, const char *value)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		const cJSON *v = cJSON_GetObjectItem(it, field);
		if (cJSON_IsString(v) && strcmp(v->valuestring, value) == 0)
			return true;
	}
	return false;
}

static void test_decision_live_and_why(void **state)
{
	(void)state;
	struct sse_conn c;
	assert_int_equal(sse_open(H.port, NULL, 0, &c), 0);
	assert_true(sse_wait(&c, "retry: 2000", DASH_WAIT_MS));
	assert_true(sse_wait(&c, "event: paused\ndata: {\"paused\":false}", DASH_WAIT_MS));
	cmd_ok(&H, "event live1 alice hello there, dashbot");
	assert_true(sse_wait(&c, "\"messageId\":\"space:live1\"", DASH_WAIT_MS));
	assert_non_null(strstr(c.buf, "event: decision\ndata: {"));
	sse_close(&c);

	cJSON *arr = get_json(H.port, "/api/decisions?platform=space", 200);
	assert_true(array_has(arr, "messageId", "space:live1"));
	cJSON_Delete(arr);

	cJSON *w = get_json(H.port, "/api/why/space:live1", 200);
	const cJSON *ds = cJSON_GetObjectItem(w, "decisions");
	assert_true(cJSON_GetArraySize(ds) >= 2);
	assert_true(array_has(ds, "stage", "event"));
	assert_true(array_has(ds, "stage", "gate"));
	const cJSON *m = cJSON_GetObjectItem(w, "message");
	assert_non_null(m);
	assert_string_equal(cJSON_GetObjectItem(m, "text")->valuestring, "hello there, dashbot");
	assert_string_equal(cJSON_GetObjectItem(m, "authorName")->valuestring, "alice");
	cJSON_Delete(w);

	/* A new stream gets the backlog: the decision is there at once. */
	assert_int_equal(sse_open(H.port, NULL, 0, &c), 0);
	assert_true(sse_wait(&c, "\"messageId\":\"space:live1\"", DASH_WAIT_MS));
	sse_close(&c);
}

static void test_decision_filters(void **state)
{
	(void)state;
	cmd_ok(&H, "event filt1 bob another message");
	cJSON *a = get_json(H.port, "/api/decisions?limit=1", 200);
	assert_int_equal(cJSON_GetArraySize(a), 1);
	cJSON_Delete(a);
	a = get_json(H.port, "/api/decisions?stage=gate", 200);
	assert_true(cJSON_GetArraySize(a) >= 1);
	const cJSON *it;
	cJSON_ArrayForEach(it, a)
	        assert_string_equal(cJSON_GetObjectItem(it, "stage")->valuestring, "gate");
	cJSON_Delete(a);
	a = get_json(H.port, "/api/decisions?platform=bluesky", 200);
	assert_int_equal(cJSON_GetArraySize(a), 0);
	cJSON_Delete(a);
	struct http_resp r;
	assert_int_equal(http_get(H.port, "/api/decisions?verdict=maybe", NULL, &r), 0);
	expect_error(&r, 400, "unknown verdict 'maybe'");
	http_resp_free(&r);
	assert_int_equal(http_get(H.port, "/api/decisions?limit=0", NULL, &r), 0);
	expect_error(&r, 400, "limit must be a number from 1 to 256");
	http_resp_free(&r);
	assert_int_equal(http_get(H.port, "/api/decisions?limit=99999999999999999999", NULL, &r),
	                 0);
	expect_error(&r, 400, "limit");
	http_resp_free(&r);
}

/* --- the stores ------------------------------------------------------------------------ */

static void test_conversations(void **state)
{
	(void)state;
	cmd_ok(&H, "event conv1 carol who is here?");
	cJSON *a = get_json(H.port, "/api/conversations", 200);
	assert_true(array_has(a, "key", "space:room"));
	cJSON_Delete(a);
	cJSON *c = get_json(H.port, "/api/conversations/space%3Aroom", 200);
	const cJSON *msgs = cJSON_GetObjectItem(c, "messages");
	assert_true(array_has(msgs, "authorName", "carol"));
	assert_true(array_has(msgs, "text", "who is here?"));
	cJSON_Delete(c);
	struct http_resp r;
	assert_int_equal(http_get(H.port, "/api/conversations/space:nowhere", NULL, &r), 0);
	expect_error(&r, 404, "no conversation 'space:nowhere'");
	http_resp_free(&r);
}

static void test_commitments(void **state)
{
	(void)state;
	cJSON *a = get_json(H.port, "/api/commitments", 200);
	assert_int_equal(cJSON_GetArraySize(a), 1);
	const cJSON *c = cJSON_GetArrayItem(a, 0);
	assert_string_equal(cJSON_GetObjectItem(c, "action")->valuestring, "create_issue");
	assert_string_equal(cJSON_GetObjectItem(c, "status")->valuestring, "pending");
	assert_int_equal(cJSON_GetObjectItem(c, "attempts")->valueint, 0);
	assert_string_equal(cJSON_GetObjectItem(c, "artifact")->valuestring,
	                    "https://github.com/acme/site/issues/7");
	cJSON_Delete(a);
}

static void test_permissions(void **state)
{
	(void)state;
	cJSON *p = get_json(H.port, "/api/permissions", 200);
	assert_string_equal(cJSON_GetObjectItem(p, "mode")->valuestring, "allowlist");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(p, "broken")));
	const cJSON *al = cJSON_GetObjectItem(p, "allowlist");
	assert_int_equal(cJSON_GetArraySize(al), 1);
	assert_string_equal(cJSON_GetArrayItem(al, 0)->valuestring, "space:room");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "denylist"), 0)->valuestring,
	                    "github:acme:*");
	const cJSON *audit = cJSON_GetObjectItem(p, "audit");
	assert_true(cJSON_GetArraySize(audit) >= 1);
	assert_true(array_has(audit, "verdict", "deny"));
	cJSON_Delete(p);
}

/* --- the kill switch ---------------------------------------------------------------- */

static void expect_paused(int want)
{
	char *s = dash_cmd(&H, "state");
	char exp[32];
	snprintf(exp, sizeof exp, "paused=%d", want);
	if (!s || strncmp(s, exp, strlen(exp)) != 0)
		fail_msg("host state '%s', want %s", s ? s : "(none)", exp);
	free(s);
}

static void test_pause_csrf(void **state)
{
	(void)state;
	struct http_resp r;
	assert_int_equal(http_get(H.port, "/api/pause", NULL, &r), 0);
	expect_error(&r, 405, "use POST");
	assert_non_null(http_header(&r, "Allow"));
	http_resp_free(&r);
	assert_int_equal(http_post(H.port, "/api/pause", NULL, NULL, &r), 0);
	expect_error(&r, 403, "X-Dashboard: 1");
	http_resp_free(&r);
	assert_int_equal(
	        http_post(H.port, "/api/pause", XD "Origin: http://evil.example\r\n", NULL, &r), 0);
	expect_error(&r, 403, "cross-origin request refused");
	http_resp_free(&r);
	assert_int_equal(http_post(H.port, "/api/pause", XD JSON_CT, "{\"paused\": tru", &r), 0);
	expect_error(&r, 400, "not valid JSON");
	http_resp_free(&r);
	assert_int_equal(http_post(H.port, "/api/pause", XD JSON_CT, "[1,2]", &r), 0);
	expect_error(&r, 400, "JSON object");
	http_resp_free(&r);
	assert_int_equal(
	        http_post(H.port, "/api/pause", XD "Content-Type: text/plain\r\n", "pause", &r), 0);
	expect_error(&r, 415, "application/json");
	http_resp_free(&r);
	expect_paused(0); /* nothing above changed anything */

	struct sse_conn c;
	assert_int_equal(sse_open(H.port, NULL, 0, &c), 0);
	assert_true(sse_wait(&c, "{\"paused\":false}", DASH_WAIT_MS));
	char origin[128];
	snprintf(origin, sizeof origin, XD JSON_CT "Origin: http://127.0.0.1:%d\r\n", H.port);
	assert_int_equal(http_post(H.port, "/api/pause", origin, "{}", &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"paused\":true"));
	http_resp_free(&r);
	expect_paused(1);
	assert_true(sse_wait(&c, "event: paused\ndata: {\"paused\":true}", DASH_WAIT_MS));
	sse_close(&c);
	/* persisted: the kill switch survives a restart */
	char *ctl = tu_read(H.memory, "control.json");
	assert_non_null(ctl);
	assert_non_null(strstr(ctl, "\"paused\":true"));
	assert_non_null(strstr(ctl, "\"by\":\"dashboard\""));
	free(ctl);
	/* a paused agent stops at the gate, and says so */
	cmd_ok(&H, "event paused1 alice are you there?");
	cJSON *w = get_json(H.port, "/api/why/space:paused1", 200);
	assert_true(array_has(cJSON_GetObjectItem(w, "decisions"), "rule", "paused"));
	cJSON_Delete(w);
	cJSON *s = get_json(H.port, "/api/status", 200);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s, "paused")));
	assert_int_equal(cJSON_GetObjectItem(s, "pausedCalls")->valueint, 1);
	cJSON_Delete(s);

	assert_int_equal(http_post(H.port, "/api/resume", XD, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"paused\":false"));
	http_resp_free(&r);
	expect_paused(0);
}

/* --- hostile input ---------------------------------------------------------------------- */

static void test_huge_bodies(void **state)
{
	(void)state;
	size_t big = 1024 * 1024;
	char *body = malloc(big + 1);
	memset(body, 'x', big);
	body[big] = '\0';
	struct http_resp r;
	assert_int_equal(http_post(H.port, "/api/pause", XD JSON_CT, body, &r), 0);
	expect_error(&r, 413, "over 4096 bytes");
	http_resp_free(&r);
	/* chunked, no length announced: refused once past the bound */
	size_t cap = big + 4096;
	char *req = malloc(cap);
	int n = snprintf(
	        req, cap,
	        "POST /api/pause HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n" XD JSON_CT
	        "Transfer-Encoding: chunked\r\n\r\n",
	        H.port);
	for (int i = 0; i < 16; i++) {
		n += snprintf(req + n, cap - (size_t)n, "1000\r\n");
		memset(req + n, 'y', 4096);
		n += 4096;
		n += snprintf(req + n, cap - (size_t)n, "\r\n");
	}
	n += snprintf(req + n, cap - (size_t)n, "0\r\n\r\n");
	assert_int_equal(http_raw(H.port, req, (size_t)n, &r), 0);
	expect_error(&r, 413, "over 4096 bytes");
	http_resp_free(&r);
	free(req);
	free(body);
	/* a GET with a body is refused, not ignored */
	char get[256];
	n = snprintf(get, sizeof get,
	             "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
	             "Content-Length: 2\r\n\r\n{}",
	             H.port);
	assert_int_equal(http_raw(H.port, get, (size_t)n, &r), 0);
	expect_error(&r, 400, "carries no body");
	http_resp_free(&r);
	expect_paused(0);
	host_healthy(&H);
}

static void test_path_traversal(void **state)
{
	(void)state;
	static const char *const bad[] = {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
	                                  "/..%2f..%2fetc%2fpasswd", "/app.js/../../CMakeLists.txt",
	                                  "/%5c..%5cetc%5cpasswd",   NULL};
	struct http_resp r;
	for (const char *const *p = bad; *p; p++) {
		assert_int_equal(http_get(H.port, *p, NULL, &r), 0);
		if (r.status != 400 && r.status != 404)
			fail_msg("%s: %d", *p, r.status);
		assert_null(strstr(r.body, "root:"));
		assert_non_null(strstr(r.body, "\"error\""));
		http_resp_free(&r);
	}
	static const char *const missing[] = {"/.hidden", "/web/dashboard/index.html",
	                                      "/index.html/", "/nothing.js", NULL};
	for (const char *const *p = missing; *p; p++) {
		assert_int_equal(http_get(H.port, *p, NULL, &r), 0);
		expect_error(&r, 404, "no such page");
		http_resp_free(&r);
	}
	char head[256];
	int n = snprintf(
	        head, sizeof head,
	        "HEAD /api/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
	        H.port);
	assert_int_equal(http_raw(H.port, head, (size_t)n, &r), 0);
	assert_int_equal(r.status, 405);
	http_resp_free(&r);
	assert_int_equal(http_get(H.port, "/api/nothing", NULL, &r), 0);
	expect_error(&r, 404, "no such API: /api/nothing");
	http_resp_free(&r);
	host_healthy(&H);
}

static void test_foreign_host_and_garbage(void **state)
{
	(void)state;
	struct http_resp r;
	char req[512];
	/* DNS rebinding: another site's name pointed at 127.0.0.1 */
	static const char *const hosts[] = {"evil.example", "127.0.0.1.evil.example:80",
	                                    "localhost.evil.example", NULL};
	for (const char *const *h = hosts; *h; h++) {
		int n = snprintf(
		        req, sizeof req,
		        "GET /api/status HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", *h);
		assert_int_equal(http_raw(H.port, req, (size_t)n, &r), 0);
		expect_error(&r, 403, "is not a loopback name");
		http_resp_free(&r);
	}
	int n = snprintf(
	        req, sizeof req,
	        "GET /api/status HTTP/1.1\r\nHost: localhost:%d\r\nConnection: close\r\n\r\n",
	        H.port);
	assert_int_equal(http_raw(H.port, req, (size_t)n, &r), 0);
	assert_int_equal(r.status, 200);
	http_resp_free(&r);
	/* not HTTP at all: libmicrohttpd answers 400 or closes */
	const char junk[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n";
	if (http_raw(H.port, junk, sizeof junk - 1, &r) == 0) {
		assert_true(r.status >= 400 && r.status < 500);
		http_resp_free(&r);
	}
	host_healthy(&H);
}

static void test_secrets_never_shown(void **state)
{
	(void)state;
	cmd_ok(&H, "secret s3cr3t-dashboard-value-42");
	cmd_ok(&H, "event sec1 mallory my key is s3cr3t-dashboard-value-42 ok");
	struct http_resp r;
	static const char *const paths[] = {"/api/status", "/api/conversations/space%3Aroom",
	                                    "/api/why/space:sec1", "/api/decisions", NULL};
	for (const char *const *p = paths; *p; p++) {
		assert_int_equal(http_get(H.port, *p, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		if (strstr(r.body, "s3cr3t-dashboard-value-42"))
			fail_msg("%s shows the secret", *p);
		http_resp_free(&r);
	}
	cJSON *s = get_json(H.port, "/api/status", 200);
	assert_string_equal(cJSON_GetObjectItem(s, "debugEcho")->valuestring, "[redacted]");
	cJSON_Delete(s);
	cJSON *c = get_json(H.port, "/api/conversations/space%3Aroom", 200);
	assert_true(
	        array_has(cJSON_GetObjectItem(c, "messages"), "text", "my key is [redacted] ok"));
	cJSON_Delete(c);
	/* a secret with a quote and a backslash: escaped in JSON, still found */
	cmd_ok(&H, "secret qu\"ote\\secret-99");
	cmd_ok(&H, "event sec2 mallory it is qu\"ote\\secret-99 now");
	c = get_json(H.port, "/api/conversations/space%3Aroom", 200);
	assert_true(array_has(cJSON_GetObjectItem(c, "messages"), "text", "it is [redacted] now"));
	char *all = cJSON_PrintUnformatted(c);
	assert_null(strstr(all, "secret-99"));
	free(all);
	cJSON_Delete(c);
}

/* --- bounded streams ---------------------------------------------------------------------- */

static int status_int(const char *field)
{
	cJSON *s = get_json(H.port, "/api/status", 200);
	int v = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "dashboard"), field)->valueint;
	cJSON_Delete(s);
	return v;
}

static void wait_status_int(const char *field, int want)
{
	for (int i = 0; i < DASH_WAIT_MS / 20; i++) {
		if (status_int(field) == want)
			return;
		usleep(20000);
	}
	fail_msg("dashboard.%s never became %d (is %d)", field, want, status_int(field));
}

/* A closed stream is noticed when something is pushed to it (a suspended
 * connection is not watched): push until the count is right. */
static void push_until_clients(int want)
{
	for (int i = 0; i < DASH_WAIT_MS / 20; i++) {
		if (status_int("sseClients") == want)
			return;
		cmd_ok(&H, "burst 1");
		usleep(20000);
	}
	fail_msg("dashboard.sseClients never became %d (is %d)", want, status_int("sseClients"));
}

static void test_stream_limit(void **state)
{
	(void)state;
	wait_status_int("sseClients", 0);
	struct sse_conn c[8];
	for (int i = 0; i < 8; i++) {
		assert_int_equal(sse_open(H.port, NULL, 0, &c[i]), 0);
		assert_true(sse_wait(&c[i], "retry: 2000", DASH_WAIT_MS));
	}
	struct http_resp r;
	assert_int_equal(http_get(H.port, "/api/events", NULL, &r), 0);
	expect_error(&r, 503, "too many live event streams (at most 8)");
	http_resp_free(&r);
	/* A stream that goes away frees its slot (seen at the next push). */
	sse_close(&c[0]);
	push_until_clients(7);
	struct sse_conn again;
	assert_int_equal(sse_open(H.port, NULL, 0, &again), 0);
	assert_true(sse_wait(&again, "retry: 2000", DASH_WAIT_MS));
	sse_close(&again);
	for (int i = 1; i < 8; i++)
		sse_close(&c[i]);
	push_until_clients(0);
}

static void test_slow_stream_dropped(void **state)
{
	(void)state;
	int dropped = status_int("sseDropped");
	struct sse_conn slow, fast;
	assert_int_equal(sse_open(H.port, NULL, 4096, &slow), 0);
	assert_true(sse_wait(&slow, "retry: 2000", DASH_WAIT_MS));
	assert_int_equal(sse_open(H.port, NULL, 0, &fast), 0);
	assert_true(sse_wait(&fast, "retry: 2000", DASH_WAIT_MS));
	/* ~11 MB of events that the slow client never reads: more than the
	 * socket buffers and DASHBOARD_SSE_QUEUE_MAX_BYTES together. Each
	 * burst (~135 KiB) stays under the bound, and the fast client reads
	 * it all before the next. */
	for (int i = 0; i < 80; i++) {
		cmd_ok(&H, "burst 300");
		if (!sse_wait(&fast, "burst 299: ", DASH_WAIT_MS))
			fail_msg("the fast client did not get burst %d", i);
		fast.len = 0;
		fast.buf[0] = '\0';
		if (i % 10 == 0)
			host_healthy(&H);
	}
	cmd_ok(&H, "event afterflood alice still there?");
	assert_true(sse_wait(&fast, "space:afterflood", DASH_WAIT_MS));
	wait_status_int("sseDropped", dropped + 1);
	wait_status_int("sseClients", 1);
	/* the dropped one ends: its socket reaches EOF or an error */
	assert_false(sse_wait(&slow, "space:afterflood-never", DASH_WAIT_MS));
	sse_close(&slow);
	sse_close(&fast);
}

/* --- other hosts: the token, the address --------------------------------------------- */

#define TOKEN "correct-horse-battery-staple-7"

static void test_token_required(void **state)
{
	(void)state;
	struct dash_host t;
	const char *const args[] = {"--token", TOKEN, NULL};
	char *e = NULL;
	if (dash_start(&t, args, &e) != 0)
		fail_msg("token host: %s", e);
	struct http_resp r;
	assert_int_equal(http_get(t.port, "/api/status", NULL, &r), 0);
	expect_error(&r, 401, "needs its token (DASHBOARD_TOKEN)");
	assert_non_null(http_header(&r, "WWW-Authenticate"));
	http_resp_free(&r);
	assert_int_equal(
	        http_get(t.port, "/api/status", "Authorization: Bearer wrong-token-12345\r\n", &r),
	        0);
	expect_error(&r, 401, "token");
	http_resp_free(&r);
	/* a prefix of the right token is wrong too */
	assert_int_equal(
	        http_get(t.port, "/api/status", "Authorization: Bearer correct-horse\r\n", &r), 0);
	assert_int_equal(r.status, 401);
	http_resp_free(&r);
	assert_int_equal(http_post(t.port, "/api/pause", XD, NULL, &r), 0);
	assert_int_equal(r.status, 401);
	http_resp_free(&r);
	assert_int_equal(http_get(t.port, "/api/status", "Authorization: Bearer " TOKEN "\r\n", &r),
	                 0);
	assert_int_equal(r.status, 200);
	assert_null(strstr(r.body, TOKEN)); /* the token itself is never shown */
	assert_non_null(strstr(r.body, "\"tokenRequired\":true"));
	http_resp_free(&r);
	/* the page loads without it (it holds nothing secret) */
	assert_int_equal(http_get(t.port, "/", NULL, &r), 0);
	assert_int_equal(r.status, 200);
	http_resp_free(&r);
	struct sse_conn c;
	assert_int_equal(sse_open(t.port, NULL, 0, &c), 0);
	assert_true(sse_wait(&c, "401", DASH_WAIT_MS));
	sse_close(&c);
	assert_int_equal(dash_quit(&t), 0);
	dash_stop(&t);
}

static void test_non_loopback_needs_token(void **state)
{
	(void)state;
	struct dash_host t;
	char *e = NULL;
	const char *const open_args[] = {"--addr", "0.0.0.0:0", NULL};
	assert_int_equal(dash_start(&t, open_args, &e), -1);
	assert_non_null(e);
	if (!strstr(e, "is not a loopback address: set DASHBOARD_TOKEN"))
		fail_msg("%s", e);
	free(e);
	e = NULL;
	assert_int_equal(proc_wait(&t.p, DASH_WAIT_MS), 2);
	dash_stop(&t);

	const char *const short_args[] = {"--addr", "0.0.0.0:0", "--token", "abc", NULL};
	assert_int_equal(dash_start(&t, short_args, &e), -1);
	assert_non_null(strstr(e, "DASHBOARD_TOKEN is too short"));
	free(e);
	e = NULL;
	dash_stop(&t);

	const char *const bad_args[] = {"--addr", "dashboard.example:80", NULL};
	assert_int_equal(dash_start(&t, bad_args, &e), -1);
	assert_non_null(strstr(e, "is not a numeric IPv4 address"));
	free(e);
	e = NULL;
	dash_stop(&t);

	const char *const ok_args[] = {"--addr", "0.0.0.0:0", "--token", TOKEN, NULL};
	if (dash_start(&t, ok_args, &e) != 0)
		fail_msg("%s", e);
	struct http_resp r;
	assert_int_equal(http_get(t.port, "/api/status", NULL, &r), 0);
	assert_int_equal(r.status, 401);
	http_resp_free(&r);
	assert_int_equal(http_get(t.port, "/api/status", "Authorization: Bearer " TOKEN "\r\n", &r),
	                 0);
	assert_int_equal(r.status, 200);
	http_resp_free(&r);
	assert_int_equal(dash_quit(&t), 0);
	dash_stop(&t);
}

/* Closing with a stream open (suspended in libmicrohttpd) is clean. */
static void test_close_with_open_stream(void **state)
{
	(void)state;
	struct dash_host t;
	char *e = NULL;
	if (dash_start(&t, NULL, &e) != 0)
		fail_msg("%s", e);
	struct sse_conn c;
	assert_int_equal(sse_open(t.port, NULL, 0, &c), 0);
	assert_true(sse_wait(&c, "retry: 2000", DASH_WAIT_MS));
	assert_int_equal(dash_quit(&t), 0);
	char *err = proc_stderr(&t.p);
	assert_null(strstr(err ? err : "", "left open"));
	free(err);
	sse_close(&c);
	dash_stop(&t);
}

/* why over a large log: read on a worker thread, bounded to the last
 * DASHBOARD_WHY_MAX decisions, and a close while a read is running is
 * clean (the job is orphaned, its connection ended). */
static void test_why_large_log_and_close(void **state)
{
	(void)state;
	struct dash_host t;
	char *e = NULL;
	if (dash_start(&t, NULL, &e) != 0)
		fail_msg("%s", e);
	for (int i = 0; i < 40; i++) {
		char *a = dash_cmd(&t, "burst 500");
		assert_non_null(a);
		assert_string_equal(a, "ok");
		free(a);
	}
	struct http_resp r;
	assert_int_equal(http_get(t.port, "/api/why/space:burst", NULL, &r), 0);
	assert_int_equal(r.status, 200);
	cJSON *w = http_json(&r);
	assert_non_null(w);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(w, "decisions")), 500);
	assert_int_equal(cJSON_GetObjectItem(w, "olderLeftOut")->valueint, 20000 - 500);
	cJSON_Delete(w);
	http_resp_free(&r);
	/* a why in flight, then quit at once */
	struct sse_conn c; /* a raw connection: send the request, never read */
	assert_int_equal(sse_open(t.port, NULL, 0, &c), 0);
	char req[256];
	int n = snprintf(req, sizeof req,
	                 "GET /api/why/space:burst HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", t.port);
	assert_int_equal(write(c.fd, req, (size_t)n), n);
	assert_int_equal(dash_quit(&t), 0);
	sse_close(&c);
	dash_stop(&t);
}

/* libmicrohttpd (and GnuTLS with it) is loaded at the first connection,
 * never before: an agent nobody watches does not map it. */
static bool maps_mhd(pid_t pid)
{
	/* /proc files say size 0: read line by line */
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	bool found = false, any = false;
	while (fgets(line, sizeof line, fp)) {
		any = true;
		if (strstr(line, "libmicrohttpd"))
			found = true;
	}
	fclose(fp);
	assert_true(any);
	return found;
}

static void test_library_loaded_at_first_connection(void **state)
{
	(void)state;
	struct dash_host t;
	char *e = NULL;
	if (dash_start(&t, NULL, &e) != 0)
		fail_msg("%s", e ? e : "?");
	assert_false(maps_mhd(t.p.pid));
	/* the host answers a command while idle: still not loaded */
	char *l = dash_cmd(&t, "state");
	free(l);
	assert_false(maps_mhd(t.p.pid));
	struct http_resp r;
	assert_int_equal(http_get(t.port, "/api/status", NULL, &r), 0);
	assert_int_equal(r.status, 200);
	http_resp_free(&r);
	assert_true(maps_mhd(t.p.pid));
	assert_int_equal(dash_quit(&t), 0);
	dash_stop(&t);
}

int main(void)
{
	const struct CMUnitTest shared[] = {
	        cmocka_unit_test(test_static_pages),
	        cmocka_unit_test(test_status),
	        cmocka_unit_test(test_decision_live_and_why),
	        cmocka_unit_test(test_decision_filters),
	        cmocka_unit_test(test_conversations),
	        cmocka_unit_test(test_commitments),
	        cmocka_unit_test(test_permissions),
	        cmocka_unit_test(test_pause_csrf),
	        cmocka_unit_test(test_huge_bodies),
	        cmocka_unit_test(test_path_traversal),
	        cmocka_unit_test(test_foreign_host_and_garbage),
	        cmocka_unit_test(test_secrets_never_shown),
	        cmocka_unit_test(test_stream_limit),
	        cmocka_unit_test(test_slow_stream_dropped),
	};
	const struct CMUnitTest own[] = {
	        cmocka_unit_test(test_token_required),
	        cmocka_unit_test(test_non_loopback_needs_token),
	        cmocka_unit_test(test_close_with_open_stream),
	        cmocka_unit_test(test_why_large_log_and_close),
	        cmocka_unit_test(test_library_loaded_at_first_connection),
	};
	int rc = cmocka_run_group_tests_name("shared host", shared, group_setup, group_teardown);
	rc |= cmocka_run_group_tests_name("own hosts", own, NULL, NULL);
	return rc;
}
