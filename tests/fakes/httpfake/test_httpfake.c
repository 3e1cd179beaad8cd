/*
 * Tests for httpfake and httpfake-server, with libcurl's easy API as the
 * client. Every test gets a fresh fake on an ephemeral port from setup()
 * and teardown() frees it (and kills a spawned server) even when an
 * assertion failed. Requests that must overlap run on helper threads; the
 * main thread waits on the fake's request count, never on a sleep.
 */
#include "tests/fakes/httpfake/httpfake.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cmocka.h needs these three first. */
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define WAIT_MS 10000u

extern char **environ;

struct fx {
	struct httpfake *fake;
	pid_t child;
	char dir[64];
};

/* --- a small curl client ---------------------------------------------------- */

struct buf {
	char *p;
	size_t len;
};

struct reply {
	CURLcode rc;
	long status;
	struct buf body;
	struct buf headers;
};

static size_t buf_write(char *data, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;
	size_t len = size * n;
	char *p = realloc(b->p, b->len + len + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, data, len);
	b->p = p;
	b->len += len;
	b->p[b->len] = '\0';
	return len;
}

static void reply_free(struct reply *r)
{
	free(r->body.p);
	free(r->headers.p);
	memset(r, 0, sizeof(*r));
}

/* The request; headers is a NULL-terminated list of "Name: value". */
static struct reply http_on(CURL *c, const char *method, const char *url,
                            const char *const *headers, const void *body, size_t body_len)
{
	struct reply r = {0};
	struct curl_slist *hl = NULL;
	for (size_t i = 0; headers && headers[i]; i++)
		hl = curl_slist_append(hl, headers[i]);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	/* A safety net so a broken fake fails the test instead of hanging it. */
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, buf_write);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	r.rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_slist_free_all(hl);
	if (!r.body.p)
		r.body.p = calloc(1, 1);
	return r;
}

static struct reply http(const char *method, const char *url, const char *const *headers,
                         const void *body, size_t body_len)
{
	CURL *c = curl_easy_init();
	struct reply r = http_on(c, method, url, headers, body, body_len);
	curl_easy_cleanup(c);
	return r;
}

static char *url_of(struct httpfake *fake, const char *path)
{
	static _Thread_local char u[512];
	snprintf(u, sizeof(u), "%s%s", httpfake_base_url(fake), path);
	return u;
}

static struct reply get(struct httpfake *fake, const char *path)
{
	return http("GET", url_of(fake, path), NULL, NULL, 0);
}

/* Value of a response header (first one, case-insensitive), or "" when
 * absent. Returned in a static buffer. */
static const char *reply_header(const struct reply *r, const char *name)
{
	static char v[256];
	v[0] = '\0';
	const char *p = r->headers.p;
	size_t n = strlen(name);
	while (p && *p) {
		const char *eol = strchr(p, '\n');
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			const char *s = p + n + 1;
			while (*s == ' ')
				s++;
			size_t len = eol ? (size_t)(eol - s) : strlen(s);
			while (len && (s[len - 1] == '\r' || s[len - 1] == ' '))
				len--;
			snprintf(v, sizeof(v), "%.*s", (int)len, s);
			return v;
		}
		p = eol ? eol + 1 : NULL;
	}
	return v;
}

/* A request on a helper thread, for requests that must overlap. */
struct bg {
	pthread_t t;
	char url[512];
	struct reply r;
	atomic_int done;
};

static void *bg_run(void *arg)
{
	struct bg *b = arg;
	b->r = http("GET", b->url, NULL, NULL, 0);
	atomic_store(&b->done, 1);
	return NULL;
}

static void bg_start(struct bg *b, struct httpfake *fake, const char *path)
{
	memset(b, 0, sizeof(*b));
	snprintf(b->url, sizeof(b->url), "%s%s", httpfake_base_url(fake), path);
	assert_int_equal(pthread_create(&b->t, NULL, bg_run, b), 0);
}

/* --- fixtures ------------------------------------------------------------- */

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char err[256] = "";
	fx->fake = httpfake_new(0, err, sizeof(err));
	if (!fx->fake) {
		fprintf(stderr, "%s\n", err);
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static void rm_dir(const char *dir)
{
	static const char *const names[] = {"port", "port.tmp", "record.jsonl", "script.json",
	                                    "bad.json"};
	char p[256];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	httpfake_free(fx->fake);
	if (fx->child > 0) {
		kill(fx->child, SIGKILL);
		waitpid(fx->child, NULL, 0);
	}
	if (fx->dir[0])
		rm_dir(fx->dir);
	free(fx);
	return 0;
}

/* --- tests ---------------------------------------------------------------- */

static void test_ephemeral_port(void **state)
{
	struct fx *fx = *state;
	uint16_t port = httpfake_port(fx->fake);
	assert_true(port > 0);
	char want[64];
	snprintf(want, sizeof(want), "http://127.0.0.1:%u", (unsigned)port);
	assert_string_equal(httpfake_base_url(fx->fake), want);

	char err[256];
	struct httpfake *other = httpfake_new(0, err, sizeof(err));
	assert_non_null(other);
	assert_int_not_equal(httpfake_port(other), port);
	/* The port is really taken: a second fake cannot bind it. */
	struct httpfake *clash = httpfake_new(port, err, sizeof(err));
	assert_null(clash);
	char port_s[16];
	snprintf(port_s, sizeof(port_s), "%u", (unsigned)port);
	assert_non_null(strstr(err, port_s));
	httpfake_free(other);

	struct reply r = get(fx->fake, "/");
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 404);
	reply_free(&r);
}

static void test_method_and_path(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	httpfake_route_respond(httpfake_route(f, "GET", "/a"), 200, "text/plain", "get a");
	httpfake_route_respond(httpfake_route(f, "POST", "/a"), 201, "text/plain", "post a");
	httpfake_route_respond(httpfake_route(f, "*", "/any"), 200, NULL, "any");
	httpfake_route_respond(httpfake_route(f, "GET", "/pre/*"), 200, NULL, "prefix");

	struct reply r = get(f, "/a?x=1"); /* the query is not part of the path */
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body.p, "get a");
	assert_string_equal(reply_header(&r, "Content-Type"), "text/plain");
	reply_free(&r);

	r = http("POST", url_of(f, "/a"), NULL, "x", 1);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body.p, "post a");
	reply_free(&r);

	r = http("PUT", url_of(f, "/a"), NULL, "x", 1);
	assert_int_equal(r.status, 404);
	reply_free(&r);
	r = get(f, "/a/b");
	assert_int_equal(r.status, 404);
	reply_free(&r);
	r = http("DELETE", url_of(f, "/any"), NULL, NULL, 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body.p, "any");
	reply_free(&r);
	r = get(f, "/pre/x/y");
	assert_string_equal(r.body.p, "prefix");
	reply_free(&r);
	r = get(f, "/pr");
	assert_int_equal(r.status, 404);
	reply_free(&r);
}

static void test_matchers(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	struct httpfake_route *q = httpfake_route(f, "GET", "/m");
	httpfake_route_match_query(q, "cursor=");
	httpfake_route_respond(q, 200, NULL, "query");
	struct httpfake_route *p = httpfake_route(f, "GET", "/m");
	httpfake_route_match_param(p, "actor", "did:plc:a b");
	httpfake_route_respond(p, 200, NULL, "param");
	struct httpfake_route *h = httpfake_route(f, "GET", "/m");
	httpfake_route_match_header(h, "authorization", "Bearer t1");
	httpfake_route_respond(h, 200, NULL, "header");
	struct httpfake_route *b = httpfake_route(f, "POST", "/m");
	httpfake_route_match_body(b, "\"model\":\"m1\"");
	httpfake_route_respond(b, 200, NULL, "body");
	/* General routes after specific ones: the first match wins. */
	httpfake_route_respond(httpfake_route(f, "*", "/m"), 200, NULL, "fallback");

	struct reply r = get(f, "/m?limit=2&cursor=abc");
	assert_string_equal(r.body.p, "query");
	reply_free(&r);
	r = get(f, "/m?actor=did%3Aplc%3Aa%20b"); /* params compare decoded */
	assert_string_equal(r.body.p, "param");
	reply_free(&r);
	r = get(f, "/m?actor=did%3Aplc%3Aother");
	assert_string_equal(r.body.p, "fallback");
	reply_free(&r);
	const char *auth[] = {"Authorization: Bearer t1", NULL};
	r = http("GET", url_of(f, "/m"), auth, NULL, 0);
	assert_string_equal(r.body.p, "header");
	reply_free(&r);
	const char *auth2[] = {"Authorization: Bearer t2", NULL};
	r = http("GET", url_of(f, "/m"), auth2, NULL, 0);
	assert_string_equal(r.body.p, "fallback");
	reply_free(&r);
	const char *js = "{\"model\":\"m1\",\"messages\":[]}";
	r = http("POST", url_of(f, "/m"), NULL, js, strlen(js));
	assert_string_equal(r.body.p, "body");
	reply_free(&r);
	r = http("POST", url_of(f, "/m"), NULL, "{\"model\":\"m2\"}", 14);
	assert_string_equal(r.body.p, "fallback");
	reply_free(&r);
}

static void test_unmatched_404_recorded(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	struct reply r = http("PATCH", url_of(f, "/nowhere?a=1"), NULL, "zz", 2);
	assert_int_equal(r.status, 404);
	assert_string_equal(reply_header(&r, "Content-Type"), "application/json");
	cJSON *j = cJSON_Parse(r.body.p);
	assert_non_null(j);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "method")), "PATCH");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "path")), "/nowhere");
	cJSON_Delete(j);
	reply_free(&r);

	assert_int_equal(httpfake_request_count(f), 1);
	struct httpfake_request *req = httpfake_request_get(f, 0);
	assert_non_null(req);
	assert_false(req->matched);
	assert_int_equal(req->status, 404);
	assert_string_equal(req->method, "PATCH");
	assert_string_equal(req->query, "a=1");
	assert_string_equal(req->body, "zz");
	httpfake_request_free(req);
}

static void test_sequence(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	struct httpfake_route *rt = httpfake_route(f, "GET", "/limited");
	struct httpfake_response *first =
	        httpfake_route_respond(rt, 429, "application/json", "{\"error\":\"RateLimit\"}");
	httpfake_response_header(first, "Retry-After", "1");
	httpfake_response_header(first, "RateLimit-Remaining", "0");
	httpfake_route_respond(rt, 200, "application/json", "{\"ok\":true}");

	struct reply r = get(f, "/limited");
	assert_int_equal(r.status, 429);
	assert_string_equal(reply_header(&r, "Retry-After"), "1");
	assert_string_equal(reply_header(&r, "RateLimit-Remaining"), "0");
	assert_string_equal(r.body.p, "{\"error\":\"RateLimit\"}");
	reply_free(&r);
	for (int i = 0; i < 3; i++) { /* the last response repeats */
		r = get(f, "/limited");
		assert_int_equal(r.status, 200);
		assert_string_equal(r.body.p, "{\"ok\":true}");
		assert_string_equal(reply_header(&r, "Retry-After"), "");
		reply_free(&r);
	}
	assert_int_equal(httpfake_route_hits(rt), 4);

	/* A route without responses says so instead of guessing. */
	httpfake_route(f, "GET", "/empty");
	r = get(f, "/empty");
	assert_int_equal(r.status, 500);
	assert_non_null(strstr(r.body.p, "/empty"));
	reply_free(&r);
}

static void test_delay_does_not_block_others(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	struct httpfake_response *slow = httpfake_route_respond(httpfake_route(f, "GET", "/slow"),
	                                                        200, "text/plain", "slow");
	/* held 8 s: /fast must be answered inside the hold even on a loaded
	 * (sanitizer) run, or "still held" below would not show anything */
	httpfake_response_delay(slow, 8000);
	httpfake_route_respond(httpfake_route(f, "GET", "/fast"), 200, "text/plain", "fast");

	struct bg b;
	bg_start(&b, f, "/slow");
	/* Recorded means the fake chose the response and is now waiting. */
	assert_int_equal(httpfake_wait_count(f, 1, WAIT_MS), 0);
	struct reply r = get(f, "/fast");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body.p, "fast");
	reply_free(&r);
	assert_int_equal(atomic_load(&b.done), 0); /* still held */
	pthread_join(b.t, NULL);
	assert_int_equal(b.r.rc, CURLE_OK);
	assert_int_equal(b.r.status, 200);
	assert_string_equal(b.r.body.p, "slow");
	reply_free(&b.r);
}

struct counter {
	int calls;
};

static void count_handler(const struct httpfake_request *req, struct httpfake_response *resp,
                          void *userdata)
{
	struct counter *c = userdata;
	c->calls++;
	char body[256];
	const char *who = httpfake_request_param(req, "who");
	const char *tok = httpfake_request_header(req, "x-token");
	snprintf(body, sizeof(body), "{\"n\":%d,\"who\":\"%s\",\"token\":\"%s\",\"len\":%zu}",
	         c->calls, who ? who : "", tok ? tok : "", req->body_len);
	httpfake_response_header(resp, "Content-Type", "text/plain");
	httpfake_response_json(resp, c->calls == 1 ? 201 : 200, body); /* replaces it */
	char n[16];
	snprintf(n, sizeof(n), "%d", c->calls);
	httpfake_response_header(resp, "X-Count", n);
}

static void test_stateful_handler(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	struct counter c = {0};
	struct httpfake_route *rt = httpfake_handle(f, "POST", "/count", count_handler, &c);
	const char *hdr[] = {"X-Token: secret", NULL};
	for (int i = 1; i <= 3; i++) {
		struct reply r = http("POST", url_of(f, "/count?who=ann"), hdr, "abcd", 4);
		assert_int_equal(r.status, i == 1 ? 201 : 200);
		char want[128];
		snprintf(want, sizeof(want),
		         "{\"n\":%d,\"who\":\"ann\",\"token\":\"secret\",\"len\":4}", i);
		assert_string_equal(r.body.p, want);
		char n[16];
		snprintf(n, sizeof(n), "%d", i);
		assert_string_equal(reply_header(&r, "X-Count"), n);
		assert_string_equal(reply_header(&r, "Content-Type"), "application/json");
		assert_null(strstr(r.headers.p, "text/plain"));
		reply_free(&r);
	}
	assert_int_equal(httpfake_wait_count(f, 3, WAIT_MS), 0);
	assert_int_equal(c.calls, 3);
	assert_int_equal(httpfake_route_hits(rt), 3);
}

static void test_recording(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	httpfake_route_respond(httpfake_route(f, "POST", "/rec"), 202, NULL, "ok");
	const char *hdr[] = {"Content-Type: application/json", "X-Trace: t-1", NULL};
	struct reply r = http("POST", url_of(f, "/rec?a=1&b=two%20words"), hdr, "{\"k\":1}", 7);
	assert_int_equal(r.status, 202);
	reply_free(&r);
	r = get(f, "/other");
	reply_free(&r);
	r = http("POST", url_of(f, "/rec"), NULL, "second", 6);
	reply_free(&r);

	assert_int_equal(httpfake_request_count(f), 3);
	struct httpfake_request *q = httpfake_request_get(f, 0);
	assert_non_null(q);
	assert_int_equal(q->seq, 0);
	assert_string_equal(q->method, "POST");
	assert_string_equal(q->path, "/rec");
	assert_string_equal(q->query, "a=1&b=two%20words");
	assert_string_equal(httpfake_request_param(q, "b"), "two words");
	assert_string_equal(q->body, "{\"k\":1}");
	assert_int_equal(q->body_len, 7);
	assert_int_equal(q->body_total, 7);
	assert_false(q->body_truncated);
	assert_true(q->matched);
	assert_int_equal(q->status, 202);
	assert_string_equal(httpfake_request_header(q, "x-trace"), "t-1");
	assert_string_equal(httpfake_request_header(q, "Content-Type"), "application/json");
	assert_null(httpfake_request_header(q, "X-Missing"));

	char *line = httpfake_request_to_json(q);
	cJSON *j = cJSON_Parse(line);
	assert_non_null(j);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "body")), "{\"k\":1}");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(
	                            cJSON_GetObjectItem(j, "headers"), "X-Trace")),
	                    "t-1");
	cJSON_Delete(j);
	free(line);
	httpfake_request_free(q);

	q = httpfake_request_find(f, "POST", "/rec");
	assert_non_null(q);
	assert_int_equal(q->seq, 0);
	httpfake_request_free(q);
	q = httpfake_request_find_last(f, "POST", "/rec");
	assert_non_null(q);
	assert_int_equal(q->seq, 2);
	assert_string_equal(q->body, "second");
	assert_string_equal(q->query, "");
	httpfake_request_free(q);
	q = httpfake_request_find(f, "*", "/other");
	assert_non_null(q);
	assert_int_equal(q->seq, 1);
	httpfake_request_free(q);
	assert_null(httpfake_request_find(f, "GET", "/rec"));
	assert_null(httpfake_request_get(f, 3));

	httpfake_clear_requests(f);
	assert_int_equal(httpfake_request_count(f), 0);
	assert_null(httpfake_request_get(f, 0));
}

static void test_binary_body_as_base64(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	const char bin[] = {'a', '\0', (char)0xff, 'b'};
	struct reply r = http("POST", url_of(f, "/bin"), NULL, bin, sizeof(bin));
	reply_free(&r);
	struct httpfake_request *q = httpfake_request_get(f, 0);
	assert_non_null(q);
	assert_int_equal(q->body_len, 4);
	assert_memory_equal(q->body, bin, 4);
	char *line = httpfake_request_to_json(q);
	cJSON *j = cJSON_Parse(line);
	assert_non_null(j);
	assert_null(cJSON_GetObjectItem(j, "body"));
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "body_base64")),
	                    "YQD/Yg==");
	cJSON_Delete(j);
	free(line);
	httpfake_request_free(q);
}

static void test_record_is_bounded(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	httpfake_route_respond(httpfake_route(f, "GET", "/n"), 204, NULL, NULL);
	const unsigned total = HTTPFAKE_RECORD_MAX + 10;
	CURL *c = curl_easy_init(); /* one keep-alive connection: quick */
	char path[32];
	for (unsigned i = 0; i < total; i++) {
		snprintf(path, sizeof(path), "/n?i=%u", i);
		struct reply r = http_on(c, "GET", url_of(f, path), NULL, NULL, 0);
		assert_int_equal(r.status, 204);
		reply_free(&r);
	}
	curl_easy_cleanup(c);
	assert_int_equal(httpfake_request_count(f), total);
	assert_null(httpfake_request_get(f, 9)); /* dropped: oldest go first */
	struct httpfake_request *q = httpfake_request_get(f, 10);
	assert_non_null(q);
	assert_string_equal(q->query, "i=10");
	httpfake_request_free(q);
	q = httpfake_request_find(f, "GET", "/n");
	assert_non_null(q);
	assert_int_equal(q->seq, 10);
	httpfake_request_free(q);
	q = httpfake_request_find_last(f, "GET", "/n");
	assert_int_equal(q->seq, total - 1);
	httpfake_request_free(q);
}

static void *three_requests(void *arg)
{
	struct httpfake *f = arg;
	for (int i = 0; i < 3; i++) {
		struct reply r = get(f, "/w");
		reply_free(&r);
	}
	return NULL;
}

static void test_wait_count(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, three_requests, f), 0);
	assert_int_equal(httpfake_wait_count(f, 3, WAIT_MS), 0);
	assert_true(httpfake_request_count(f) >= 3);
	pthread_join(t, NULL);
	assert_int_equal(httpfake_wait_count(f, 4, 50), -1); /* nobody sends a 4th */
	assert_int_equal(httpfake_wait_count(f, 0, 0), 0);
}

static char *pattern(size_t n)
{
	char *p = malloc(n);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)('a' + (i * 7 + i / 251) % 26);
	return p;
}

static void test_large_post(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	const size_t n = 200 * 1024;
	char *body = pattern(n);
	memcpy(body + n - 6, "MARKER", 6); /* a matcher must see the very end */
	struct httpfake_route *rt = httpfake_route(f, "POST", "/big");
	httpfake_route_match_body(rt, "MARKER");
	httpfake_route_respond(rt, 200, NULL, "got it");
	struct reply r = http("POST", url_of(f, "/big"), NULL, body, n);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body.p, "got it");
	reply_free(&r);
	struct httpfake_request *q = httpfake_request_get(f, 0);
	assert_non_null(q);
	assert_int_equal(q->body_len, n);
	assert_int_equal(q->body_total, n);
	assert_false(q->body_truncated);
	assert_memory_equal(q->body, body, n);
	httpfake_request_free(q);
	free(body);
}

static void test_body_over_bound_truncated(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	httpfake_route_respond(httpfake_route(f, "POST", "/huge"), 200, NULL, "fine");
	const size_t n = HTTPFAKE_BODY_LIMIT_BYTES + 1000;
	char *body = pattern(n);
	struct reply r = http("POST", url_of(f, "/huge"), NULL, body, n);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 200); /* read to the end, answered normally */
	reply_free(&r);
	struct httpfake_request *q = httpfake_request_get(f, 0);
	assert_non_null(q);
	assert_int_equal(q->body_len, HTTPFAKE_BODY_LIMIT_BYTES);
	assert_int_equal(q->body_total, n);
	assert_true(q->body_truncated);
	assert_memory_equal(q->body, body, HTTPFAKE_BODY_LIMIT_BYTES);
	assert_int_equal(q->body[q->body_len], '\0');
	httpfake_request_free(q);

	httpfake_set_body_limit(f, 10);
	r = http("POST", url_of(f, "/huge"), NULL, "0123456789abc", 13);
	reply_free(&r);
	q = httpfake_request_get(f, 1);
	assert_non_null(q);
	assert_string_equal(q->body, "0123456789");
	assert_int_equal(q->body_total, 13);
	assert_true(q->body_truncated);
	httpfake_request_free(q);
	free(body);
}

static void test_drop(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	struct httpfake_route *rt = httpfake_route(f, "GET", "/flaky");
	httpfake_response_action(httpfake_route_respond(rt, 200, NULL, NULL), HTTPFAKE_DROP);
	httpfake_route_respond(rt, 200, NULL, "back");
	struct reply r = get(f, "/flaky");
	assert_int_not_equal(r.rc, CURLE_OK);
	assert_int_equal(r.status, 0);
	reply_free(&r);
	r = get(f, "/flaky");
	assert_int_equal(r.rc, CURLE_OK);
	assert_string_equal(r.body.p, "back");
	reply_free(&r);
	struct httpfake_request *q = httpfake_request_get(f, 0);
	assert_non_null(q);
	assert_true(q->matched);
	assert_int_equal(q->status, 0); /* not answered */
	httpfake_request_free(q);
}

static void test_stop_with_requests_in_flight(void **state)
{
	struct fx *fx = *state;
	struct httpfake *f = fx->fake;
	httpfake_response_action(
	        httpfake_route_respond(httpfake_route(f, "GET", "/hang"), 200, NULL, NULL),
	        HTTPFAKE_HANG);
	httpfake_response_delay(
	        httpfake_route_respond(httpfake_route(f, "GET", "/delay"), 200, NULL, "late"),
	        600000);
	struct bg a, b;
	bg_start(&a, f, "/hang");
	bg_start(&b, f, "/delay");
	assert_int_equal(httpfake_wait_count(f, 2, WAIT_MS), 0);
	assert_int_equal(atomic_load(&a.done), 0);
	assert_int_equal(atomic_load(&b.done), 0);
	httpfake_free(f); /* must release both and return */
	fx->fake = NULL;
	pthread_join(a.t, NULL);
	pthread_join(b.t, NULL);
	assert_int_not_equal(a.r.rc, CURLE_OK);
	assert_int_not_equal(b.r.rc, CURLE_OK);
	assert_int_equal(a.r.status, 0);
	reply_free(&a.r);
	reply_free(&b.r);
}

static void test_bad_status(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	httpfake_route_respond(httpfake_route(f, "GET", "/s"), 42, NULL, "x");
	struct reply r = get(f, "/s");
	assert_int_equal(r.status, 500);
	assert_non_null(strstr(r.body.p, "42"));
	reply_free(&r);
}

/* --- scripts ------------------------------------------------------------------- */

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	struct buf b = {0};
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		buf_write(chunk, 1, n, &b);
	fclose(fp);
	return b.p ? b.p : calloc(1, 1);
}

static void test_script(void **state)
{
	struct httpfake *f = ((struct fx *)*state)->fake;
	char err[512] = "";
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/fakes/httpfake/example.json", GA_SOURCE_DIR);
	assert_int_equal(httpfake_load_script_file(f, path, err, sizeof(err)), 0);

	struct reply r = get(f, "/xrpc/app.bsky.feed.getTimeline");
	assert_int_equal(r.status, 429);
	assert_string_equal(reply_header(&r, "Retry-After"), "1");
	assert_string_equal(reply_header(&r, "Content-Type"), "application/json");
	assert_string_equal(r.body.p,
	                    "{\"error\":\"RateLimitExceeded\",\"message\":\"slow down\"}");
	reply_free(&r);
	r = get(f, "/xrpc/app.bsky.feed.getTimeline");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body.p, "{\"feed\":[],\"cursor\":\"c1\"}");
	reply_free(&r);

	const char *ct[] = {"Content-Type: text/plain", NULL};
	r = http("POST", url_of(f, "/echo"), ct, "say hello", 9);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body.p, "raw text, sent as is");
	assert_string_equal(reply_header(&r, "Content-Type"), "text/plain; charset=utf-8");
	reply_free(&r);
	r = http("POST", url_of(f, "/echo"), ct, "goodbye", 7); /* body matcher misses */
	assert_int_equal(r.status, 404);
	reply_free(&r);

	struct {
		const char *script;
		const char *want; /* in the error message */
	} bad[] = {
	        {"{\"routes\": [", "invalid JSON"},
	        {"[]", "the script must be an object"},
	        {"{\"routes\": {}}", "routes must be an array"},
	        {"{\"routes\":[{\"method\":\"GET\",\"response\":{}}]}", "routes[0].path"},
	        {"{\"routes\":[{\"method\":\"GET\",\"path\":\"/x\"}]}", "exactly one of"},
	        {"{\"routes\":[{\"method\":\"GET\",\"path\":\"/x\",\"responses\":[]}]}",
	         "routes[0].responses must be a non-empty array"},
	        {"{\"routes\":[{\"method\":\"GET\",\"path\":\"/ok\",\"response\":{}},"
	         "{\"method\":\"GET\",\"path\":\"/x\",\"responses\":[{},{\"status\":\"abc\"}]}]}",
	         "routes[1].responses[1].status must be a number from 100 to 999, got \"abc\""},
	        {"{\"routes\":[{\"method\":\"GET\",\"path\":\"/x\",\"response\":{\"action\":"
	         "\"explode\"}}]}",
	         "routes[0].response.action"},
	        {"{\"routes\":[{\"method\":\"GET\",\"path\":\"/"
	         "x\",\"response\":{\"delay_ms\":-1}}]}",
	         "delay_ms"},
	        {"{\"routes\":[{\"method\":\"GET\",\"path\":\"/x\",\"match\":{\"cookie\":\"a\"},"
	         "\"response\":{}}]}",
	         "routes[0].match.cookie is not a matcher"},
	        {"{\"routes\":[{\"method\":\"GET\",\"path\":\"/x\",\"response\":{\"headers\":{"
	         "\"A\":[1]}}}]}",
	         "routes[0].response.headers.A must be a string or a number"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(httpfake_load_script(f, bad[i].script, err, sizeof(err)), -1);
		if (!strstr(err, bad[i].want))
			fail_msg("script %zu: error \"%s\" lacks \"%s\"", i, err, bad[i].want);
	}
	/* A script with an error adds nothing, not even its good routes. */
	r = get(f, "/ok");
	assert_int_equal(r.status, 404);
	reply_free(&r);
	assert_int_equal(httpfake_load_script_file(f, "/nonexistent/s.json", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/s.json"));
}

/* --- the CLI ------------------------------------------------------------------ */

static pid_t spawn_server(char *const argv[])
{
	pid_t pid;
	int rc = posix_spawn(&pid, HTTPFAKE_SERVER_PATH, NULL, NULL, argv, environ);
	if (rc != 0)
		fail_msg("cannot start %s: %s", HTTPFAKE_SERVER_PATH, strerror(rc));
	return pid;
}

static int exit_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Polls for the port file (written atomically by the server) for up to
 * WAIT_MS; fails at once when the server has exited. */
static unsigned wait_port_file(struct fx *fx, const char *path)
{
	struct timespec tick = {0, 10 * 1000 * 1000};
	for (unsigned waited = 0; waited < WAIT_MS; waited += 10) {
		char *s = slurp(path);
		if (s) {
			unsigned port = (unsigned)strtoul(s, NULL, 10);
			free(s);
			return port;
		}
		int st;
		if (waitpid(fx->child, &st, WNOHANG) == fx->child) {
			fx->child = 0;
			fail_msg("httpfake-server exited with %d before listening", exit_code(st));
		}
		nanosleep(&tick, NULL);
	}
	fail_msg("httpfake-server wrote no port file in %u ms", WAIT_MS);
	return 0;
}

static void test_cli_server(void **state)
{
	struct fx *fx = *state;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/httpfake-test-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	char script[128], port_file[128], record[128];
	snprintf(script, sizeof(script), "%s/tests/fakes/httpfake/example.json", GA_SOURCE_DIR);
	snprintf(port_file, sizeof(port_file), "%s/port", fx->dir);
	snprintf(record, sizeof(record), "%s/record.jsonl", fx->dir);
	char *argv[] = {"httpfake-server", "--script", script, "--port-file",
	                port_file,         "--record", record, NULL};
	fx->child = spawn_server(argv);
	unsigned port = wait_port_file(fx, port_file);
	assert_true(port > 0 && port < 65536);

	char base[64], u[128];
	snprintf(base, sizeof(base), "http://127.0.0.1:%u", port);
	snprintf(u, sizeof(u), "%s/xrpc/app.bsky.feed.getTimeline?limit=5", base);
	struct reply r = http("GET", u, NULL, NULL, 0);
	assert_int_equal(r.status, 429);
	assert_string_equal(reply_header(&r, "Retry-After"), "1");
	reply_free(&r);
	r = http("GET", u, NULL, NULL, 0);
	assert_int_equal(r.status, 200);
	cJSON *j = cJSON_Parse(r.body.p);
	assert_non_null(j);
	assert_true(cJSON_IsArray(cJSON_GetObjectItem(j, "feed")));
	cJSON_Delete(j);
	reply_free(&r);
	snprintf(u, sizeof(u), "%s/echo", base);
	const char *ct[] = {"Content-Type: text/plain", NULL};
	r = http("POST", u, ct, "hello there", 11);
	assert_int_equal(r.status, 201);
	reply_free(&r);
	snprintf(u, sizeof(u), "%s/missing", base);
	r = http("GET", u, NULL, NULL, 0);
	assert_int_equal(r.status, 404);
	reply_free(&r);

	/* Each line is written before its answer, so all four are there. */
	char *rec = slurp(record);
	assert_non_null(rec);
	const char *want[][4] = {
	        {"GET", "/xrpc/app.bsky.feed.getTimeline", "limit=5", ""},
	        {"GET", "/xrpc/app.bsky.feed.getTimeline", "limit=5", ""},
	        {"POST", "/echo", "", "hello there"},
	        {"GET", "/missing", "", ""},
	};
	const int status[] = {429, 200, 201, 404};
	char *line = rec;
	for (int i = 0; i < 4; i++) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		cJSON *o = cJSON_Parse(line);
		assert_non_null(o);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "method")),
		                    want[i][0]);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "path")),
		                    want[i][1]);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "query")),
		                    want[i][2]);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "body")),
		                    want[i][3]);
		assert_int_equal(cJSON_GetObjectItem(o, "status")->valueint, status[i]);
		assert_int_equal(cJSON_GetObjectItem(o, "seq")->valueint, i);
		assert_true(cJSON_IsObject(cJSON_GetObjectItem(o, "headers")));
		if (i == 2)
			assert_string_equal(
			        cJSON_GetStringValue(cJSON_GetObjectItem(
			                cJSON_GetObjectItem(o, "headers"), "Content-Type")),
			        "text/plain");
		cJSON_Delete(o);
		line = nl + 1;
	}
	assert_string_equal(line, "");
	free(rec);

	/* A request held by "hang" must not stop a clean exit. */
	struct bg b;
	memset(&b, 0, sizeof(b));
	snprintf(b.url, sizeof(b.url), "%s/never", base);
	assert_int_equal(pthread_create(&b.t, NULL, bg_run, &b), 0);
	for (unsigned waited = 0;; waited += 10) { /* until the record shows it */
		rec = slurp(record);
		bool seen = rec && strstr(rec, "\"/never\"");
		free(rec);
		if (seen)
			break;
		if (waited >= WAIT_MS)
			fail_msg("the /never request was not recorded in %u ms", WAIT_MS);
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}

	assert_int_equal(kill(fx->child, SIGTERM), 0);
	int st;
	assert_int_equal(waitpid(fx->child, &st, 0), fx->child);
	fx->child = 0;
	assert_int_equal(exit_code(st), 0);
	pthread_join(b.t, NULL);
	assert_int_not_equal(b.r.rc, CURLE_OK);
	reply_free(&b.r);
}

static void test_cli_errors(void **state)
{
	struct fx *fx = *state;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/httpfake-test-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	char bad[128];
	snprintf(bad, sizeof(bad), "%s/bad.json", fx->dir);
	FILE *fp = fopen(bad, "w");
	assert_non_null(fp);
	fputs("{\"routes\":[{\"method\":\"GET\"}]}", fp);
	fclose(fp);

	int st;
	char *a1[] = {"httpfake-server", "--script", bad, NULL};
	fx->child = spawn_server(a1);
	assert_int_equal(waitpid(fx->child, &st, 0), fx->child);
	fx->child = 0;
	assert_int_equal(exit_code(st), 65);

	char *a2[] = {"httpfake-server", "--port", "70000", NULL};
	fx->child = spawn_server(a2);
	assert_int_equal(waitpid(fx->child, &st, 0), fx->child);
	fx->child = 0;
	assert_int_equal(exit_code(st), 64);

	/* The port the fixture's fake holds cannot be bound again. */
	char port[16];
	snprintf(port, sizeof(port), "%u", (unsigned)httpfake_port(fx->fake));
	char *a3[] = {"httpfake-server", "--port", port, NULL};
	fx->child = spawn_server(a3);
	assert_int_equal(waitpid(fx->child, &st, 0), fx->child);
	fx->child = 0;
	assert_int_equal(exit_code(st), 69);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* A dropped connection must not kill the test with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	        T(test_ephemeral_port),
	        T(test_method_and_path),
	        T(test_matchers),
	        T(test_unmatched_404_recorded),
	        T(test_sequence),
	        T(test_delay_does_not_block_others),
	        T(test_stateful_handler),
	        T(test_recording),
	        T(test_binary_body_as_base64),
	        T(test_record_is_bounded),
	        T(test_wait_count),
	        T(test_large_post),
	        T(test_body_over_bound_truncated),
	        T(test_drop),
	        T(test_stop_with_requests_in_flight),
	        T(test_bad_status),
	        T(test_script),
	        T(test_cli_server),
	        T(test_cli_errors),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return failed;
}
