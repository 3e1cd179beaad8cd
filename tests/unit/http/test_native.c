/*
 * test_native — the native HTTP/1.1 transport over plain TCP on 127.0.0.1
 * against a byte-exact responder (rawsrv): chunked and close-delimited
 * bodies, interim answers, bodiless answers, the body bound, keep-alive
 * reuse, the retry when a kept connection was closed, malformed answers,
 * an HTTP proxy (absolute form, Basic auth) and the proxy environment
 * rules (no_proxy; SOCKS in test_native_socks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "adapters/http/proxy.h"
#include "tests/fakes/rawnet/httpproxy.h"
#include "tests/fakes/rawnet/rawsrv.h"
#include "tests/unit/http/nativefix.h"

#define OK_HELLO "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
#define CHUNKED_HW                                                                                 \
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6; ext=1\r\n "         \
	"world\r\n0\r\nX-Trailer: t\r\n\r\n"

static void clear_proxy_env(void)
{
	static const char *const vars[] = {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy",
	                                   "ALL_PROXY",  "no_proxy",    "NO_PROXY"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
}

static const char *url_of(const struct rawsrv *s, const char *path, char *buf, size_t cap)
{
	snprintf(buf, cap, "http://127.0.0.1:%u%s", (unsigned)rawsrv_port(s), path);
	return buf;
}

/* A responder scripted with steps, with no proxy in the environment. */
static struct rawsrv *serve(const struct rawsrv_step *steps, size_t n)
{
	clear_proxy_env();
	return rawsrv_new(steps, n);
}

static void test_chunked_body_and_reuse(void **state)
{
	(void)state;
	struct rawsrv_step st[] = {{CHUNKED_HW, false, false}};
	struct rawsrv *s = serve(st, 1);
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {0};
	nfx_get(fx, url_of(s, "/a", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(g.status, 200);
	assert_string_equal(g.body, "hello world");
	nfx_get(fx, url_of(s, "/b", u, sizeof u), &g);
	assert_string_equal(g.body, "hello world");
	assert_int_equal(rawsrv_requests(s), 2);
	assert_int_equal(rawsrv_accepts(s), 1); /* one connection for both */
	nfx_free(fx);
	rawsrv_free(s);
}

static void test_close_delimited_body(void **state)
{
	(void)state;
	struct rawsrv_step st[] = {
	        {"HTTP/1.1 200 OK\r\nX-A: b\r\n\r\nuntil the close", true, false}};
	struct rawsrv *s = serve(st, 1);
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {.want_hdr = "x-a"};
	nfx_get(fx, url_of(s, "/", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_string_equal(g.body, "until the close");
	assert_string_equal(g.hdr, "b");
	nfx_get(fx, url_of(s, "/", u, sizeof u), &g);
	assert_string_equal(g.body, "until the close");
	assert_int_equal(rawsrv_accepts(s), 2); /* not reusable */
	nfx_free(fx);
	rawsrv_free(s);
}

static void test_keep_alive_and_request_head(void **state)
{
	(void)state;
	struct rawsrv_step st[] = {{OK_HELLO, false, false}};
	struct rawsrv *s = serve(st, 1);
	struct nfx *fx = nfx_new();
	char u[128], head[4096];
	struct nres g = {0};
	const char *hdrs[] = {"Authorization: Bearer t", "X-Empty;", "X-Removed:", NULL};
	struct http_request req = {.method = "POST",
	                           .url = url_of(s, "/p?q=1", u, sizeof u),
	                           .headers = hdrs,
	                           .body = "{\"a\":1}",
	                           .body_len = 7};
	nfx_run(fx, &req, &g);
	assert_string_equal(g.body, "hello");
	rawsrv_last_head(s, head, sizeof head);
	assert_non_null(strstr(head, "POST /p?q=1 HTTP/1.1\r\n"));
	assert_non_null(strstr(head, "\r\nHost: 127.0.0.1:"));
	assert_non_null(strstr(head, "\r\nUser-Agent: " HTTP_USER_AGENT "\r\n"));
	assert_non_null(strstr(head, "\r\nAuthorization: Bearer t\r\n"));
	assert_non_null(strstr(head, "\r\nX-Empty:\r\n"));
	assert_null(strstr(head, "X-Removed"));
	assert_null(strstr(head, "Accept-Encoding"));
	assert_non_null(strstr(head, "\r\nContent-Length: 7\r\n"));
	nfx_get(fx, url_of(s, "/", u, sizeof u), &g);
	nfx_get(fx, url_of(s, "/", u, sizeof u), &g);
	assert_int_equal(rawsrv_requests(s), 3);
	assert_int_equal(rawsrv_accepts(s), 1);
	nfx_free(fx);
	rawsrv_free(s);
}

/* The server answers a first GET on a kept connection, closes that
 * connection without a byte at the next request, then answers again. */
static struct rawsrv *keep_one(struct nfx *fx, char *u, size_t cap)
{
	static const struct rawsrv_step st[] = {
	        {OK_HELLO, false, false}, {NULL, false, false}, {OK_HELLO, false, false}};
	struct rawsrv *s = serve(st, 3);
	struct nres g = {0};
	nfx_get(fx, url_of(s, "/", u, cap), &g);
	assert_int_equal(g.status, 200);
	return s;
}

static void test_closed_kept_connection_is_retried(void **state)
{
	(void)state;
	struct nfx *fx = nfx_new();
	char u[128];
	struct rawsrv *s = keep_one(fx, u, sizeof u);
	struct nres g = {0};
	nfx_get(fx, u, &g); /* retried once on a new connection */
	assert_int_equal(g.error, HTTP_OK);
	assert_string_equal(g.body, "hello");
	assert_int_equal(rawsrv_requests(s), 3);
	assert_int_equal(rawsrv_accepts(s), 2);
	nfx_free(fx);
	rawsrv_free(s);
}

static void test_post_is_not_retried(void **state)
{
	(void)state;
	struct nfx *fx = nfx_new();
	char u[128];
	struct rawsrv *s = keep_one(fx, u, sizeof u);
	struct nres g = {0};
	struct http_request req = {.method = "POST", .url = u, .body = "x", .body_len = 1};
	nfx_run(fx, &req, &g);
	assert_int_equal(g.error, HTTP_ERR_TRANSPORT);
	assert_non_null(strstr(g.msg, "request to 127.0.0.1 failed: the server closed the "
	                              "connection without answering"));
	assert_int_equal(rawsrv_requests(s), 2);
	nfx_free(fx);
	rawsrv_free(s);
}

static void test_interim_and_bodiless_answers(void **state)
{
	(void)state;
	struct rawsrv_step st[] = {
	        {"HTTP/1.1 100 Continue\r\nX-I: 1\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: "
	         "2\r\n\r\nok",
	         false, false},
	        {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", false, false},
	        {"HTTP/1.1 204 No Content\r\n\r\n", false, false},
	        {"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false, false},
	};
	struct rawsrv *s = serve(st, 4);
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {.want_hdr = "X-I"};
	nfx_get(fx, url_of(s, "/", u, sizeof u), &g);
	assert_int_equal(g.status, 201);
	assert_string_equal(g.body, "ok");
	assert_string_equal(g.hdr, ""); /* the interim answer's headers are dropped */
	struct http_request head = {.method = "HEAD", .url = u};
	nfx_run(fx, &head, &g);
	assert_int_equal(g.status, 200);
	assert_int_equal(g.body_len, 0);
	nfx_get(fx, u, &g);
	assert_int_equal(g.status, 204);
	nfx_get(fx, u, &g);
	assert_int_equal(g.status, 304);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(rawsrv_accepts(s), 1);
	nfx_free(fx);
	rawsrv_free(s);
}

static void test_body_bound(void **state)
{
	(void)state;
	struct rawsrv_step st[] = {
	        {CHUNKED_HW, false, false},
	        {"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\n", false, false}};
	struct rawsrv *s = serve(st, 2);
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {0};
	struct http_request req = {
	        .method = "GET", .url = url_of(s, "/", u, sizeof u), .max_body_bytes = 8};
	nfx_run(fx, &req, &g);
	assert_int_equal(g.error, HTTP_ERR_TOO_LARGE);
	assert_string_equal(g.msg, "response body larger than 8 bytes from 127.0.0.1");
	req.max_body_bytes = 1024;
	nfx_run(fx, &req, &g); /* announced larger: refused before any body byte */
	assert_int_equal(g.error, HTTP_ERR_TOO_LARGE);
	assert_string_equal(g.msg, "response body larger than 1 KiB from 127.0.0.1");
	nfx_free(fx);
	rawsrv_free(s);
}

static void test_malformed_and_empty_answers(void **state)
{
	(void)state;
	struct rawsrv_step st[] = {
	        {"SSH-2.0-OpenSSH\r\n\r\n", true, false},
	        {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", true, false},
	        {NULL, false, false}};
	struct rawsrv *s = serve(st, 3);
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {0};
	nfx_get(fx, url_of(s, "/", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_ERR_TRANSPORT);
	assert_non_null(strstr(g.msg, "not an HTTP/1.x response"));
	nfx_get(fx, u, &g);
	assert_int_equal(g.error, HTTP_ERR_TRANSPORT);
	assert_non_null(strstr(g.msg, "closed before the response was complete"));
	nfx_get(fx, u, &g);
	assert_int_equal(g.error, HTTP_ERR_TRANSPORT);
	assert_non_null(strstr(g.msg, "without answering"));
	nfx_free(fx);
	rawsrv_free(s);
}

static void test_http_proxy_absolute_form(void **state)
{
	(void)state;
	/* rawsrv serves one connection at a time: the proxied one must end. */
	struct rawsrv_step st[] = {{OK_HELLO, true, false}};
	struct rawsrv *s = serve(st, 1);
	char err[256], px[128], u[128], line[512], auth[256], head[4096];
	struct httpproxy *p = httpproxy_new("Basic dXNlcjpwIHc=", err, sizeof err);
	assert_non_null(p);
	snprintf(px, sizeof px, "http://user:p%%20w@127.0.0.1:%u", (unsigned)httpproxy_port(p));
	setenv("http_proxy", px, 1);
	struct nfx *fx = nfx_new();
	struct nres g = {0};
	nfx_get(fx, url_of(s, "/x?y=1", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_string_equal(g.body, "hello");
	httpproxy_last(p, line, sizeof line, auth, sizeof auth);
	char want[256];
	snprintf(want, sizeof want, "GET %s HTTP/1.1", u);
	assert_string_equal(line, want);
	assert_string_equal(auth, "Basic dXNlcjpwIHc=");
	rawsrv_last_head(s, head, sizeof head);
	assert_non_null(strstr(head, "GET /x?y=1 HTTP/1.1\r\n"));
	assert_null(strstr(head, "Proxy-Authorization"));
	/* no_proxy naming the host: straight to the server. */
	setenv("no_proxy", "example.com, 127.0.0.1", 1);
	nfx_get(fx, u, &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(httpproxy_requests(p), 1);
	nfx_free(fx);
	clear_proxy_env();
	httpproxy_free(p);
	rawsrv_free(s);
}

static void test_connect_timeout_covers_the_tunnel(void **state)
{
	(void)state;
	/* A proxy that takes the CONNECT and never answers: the connect
	 * timeout, not the total one, ends the request. */
	struct rawsrv_step st[] = {{NULL, false, true}};
	struct rawsrv *s = serve(st, 1);
	char px[64];
	snprintf(px, sizeof px, "127.0.0.1:%u", (unsigned)rawsrv_port(s));
	setenv("https_proxy", px, 1);
	struct nfx *fx = nfx_new();
	struct nres g = {0};
	struct http_request req = {.method = "GET",
	                           .url = "https://example.invalid/",
	                           .connect_timeout_ms = 300,
	                           .timeout_ms = 20000};
	nfx_run(fx, &req, &g);
	assert_int_equal(g.error, HTTP_ERR_TIMEOUT);
	assert_non_null(strstr(g.msg, "example.invalid did not answer within 300 ms"));
	assert_int_equal(rawsrv_requests(s), 1);
	nfx_free(fx);
	clear_proxy_env();
	rawsrv_free(s);
}

static void pick(const char *url, struct proxy *p, struct ga_err *e, int want_rc)
{
	struct url u;
	assert_int_equal(url_parse(url, &u, NULL), 0);
	assert_int_equal(proxy_pick(&u, p, e), want_rc);
	url_free(&u);
}

static void test_proxy_environment_rules(void **state)
{
	(void)state;
	struct proxy p;
	struct ga_err e = {{0}};
	clear_proxy_env();
	setenv("HTTP_PROXY", "http://10.0.0.1:3128", 1); /* never read: CGI's "Proxy:" header */
	pick("http://a.example.com/", &p, &e, 0);
	assert_false(p.used);
	unsetenv("HTTP_PROXY");
	setenv("HTTPS_PROXY", "proxy.local", 1);
	pick("https://api.example.com/", &p, &e, 0);
	assert_true(p.used);
	assert_string_equal(p.host, "proxy.local");
	assert_int_equal(p.port, 1080);
	assert_string_equal(p.auth, "");
	setenv("no_proxy", ".example.com", 1);
	pick("https://api.example.com/", &p, &e, 0);
	assert_false(p.used);
	pick("https://example.com/", &p, &e, 0);
	assert_false(p.used);
	pick("https://badexample.com/", &p, &e, 0);
	assert_true(p.used);
	setenv("no_proxy", "*", 1);
	pick("https://badexample.com/", &p, &e, 0);
	assert_false(p.used);
	/* Addresses and CIDR ranges match hosts given as addresses only;
	 * a name is never compared with them, nor an address with a name's
	 * suffix ("0.0.1" is not a name under which 127.0.0.1 lies). */
	static const struct {
		const char *no_proxy, *url;
		bool proxied;
	} cidr[] = {
	        {"10.0.0.0/8, 192.168.1.7, fd00::/8, 0.0.1", "https://10.200.3.4/", false},
	        {"10.0.0.0/8, 192.168.1.7, fd00::/8, 0.0.1", "https://11.0.0.1/", true},
	        {"10.0.0.0/8, 192.168.1.7, fd00::/8, 0.0.1", "https://192.168.1.7:8443/", false},
	        {"10.0.0.0/8, 192.168.1.7, fd00::/8, 0.0.1", "https://192.168.1.8/", true},
	        {"10.0.0.0/8, 192.168.1.7, fd00::/8, 0.0.1", "https://[fd12::1]/", false},
	        {"10.0.0.0/8, 192.168.1.7, fd00::/8, 0.0.1", "https://[fe80::1]/", true},
	        {"10.0.0.0/8, 192.168.1.7, fd00::/8, 0.0.1", "https://127.0.0.1/", true},
	        {"172.16.0.0/12", "https://172.31.255.255/", false},
	        {"172.16.0.0/12", "https://172.32.0.1/", true},
	        {"10.0.0.0/33, 10.0.0.0/x", "https://10.0.0.1/", true}, /* bad prefixes */
	};
	for (size_t i = 0; i < sizeof cidr / sizeof cidr[0]; i++) {
		setenv("no_proxy", cidr[i].no_proxy, 1);
		pick(cidr[i].url, &p, &e, 0);
		if (p.used != cidr[i].proxied)
			fail_msg("no_proxy=%s, %s: proxied %d", cidr[i].no_proxy, cidr[i].url,
			         (int)p.used);
	}
	unsetenv("no_proxy");
	/* A message naming a proxy never shows its password. */
	setenv("https_proxy", "ftp://alice:s3cret@proxy.local:21", 1);
	pick("https://x.org/", &p, &e, -1);
	assert_null(strstr(e.msg, "s3cret"));
	assert_non_null(strstr(e.msg, "ftp://***@proxy.local:21"));
	setenv("https_proxy", "socks4://alice:s3cret@proxy.local", 1);
	pick("https://x.org/", &p, &e, -1);
	assert_null(strstr(e.msg, "s3cret"));
	assert_non_null(strstr(e.msg, "SOCKS4"));
	setenv("https_proxy", "https://proxy.local:8443", 1);
	pick("https://x.org/", &p, &e, -1);
	assert_non_null(
	        strstr(e.msg, "https_proxy is not an http://, socks5:// or socks5h:// proxy"));
	clear_proxy_env();
}

static void test_urls(void **state)
{
	(void)state;
	struct url u;
	struct ga_err e = {{0}};
	assert_int_equal(url_parse("HTTPS://[::1]:8443/a/b?c#frag", &u, &e), 0);
	assert_true(u.https);
	assert_true(u.ipv6);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 8443);
	assert_string_equal(u.target, "/a/b?c");
	url_free(&u);
	assert_int_equal(url_parse("http://h?q", &u, &e), 0);
	assert_string_equal(u.target, "/?q");
	assert_int_equal(u.port, 80);
	url_free(&u);
	assert_int_equal(url_parse("http://u:p@h/", &u, &e), -1);
	assert_non_null(strstr(e.msg, "credentials"));
	assert_int_equal(url_parse("http://h:99999/", &u, &e), -1);
	assert_non_null(strstr(e.msg, "bad port"));
	assert_int_equal(url_parse("http://h h/", &u, &e), -1);
	assert_int_equal(url_parse("http:///x", &u, &e), -1);
	assert_non_null(strstr(e.msg, "has no host name"));
	/* International names travel in their ASCII form (libidn2, UTS #46). */
	assert_int_equal(url_parse("https://b\xc3\xbc"
	                           "cher.example/b\xc3\xbc"
	                           "cher",
	                           &u, &e),
	                 0);
	assert_string_equal(u.host, "xn--bcher-kva.example");
	assert_string_equal(u.target, "/b\xc3\xbc"
	                              "cher");
	url_free(&u);
	assert_int_equal(url_parse("http://M\xc3\xbcnchen.DE:8080/", &u, &e), 0);
	assert_string_equal(u.host, "xn--mnchen-3ya.de");
	assert_int_equal(u.port, 8080);
	url_free(&u);
	assert_int_equal(url_parse("https://b\xc3\xbc\xff"
	                           "cher.example/",
	                           &u, &e),
	                 -1);
	assert_non_null(strstr(e.msg, "not valid UTF-8"));
	assert_int_equal(url_parse("https://\xcc\x81"
	                           "abc.example/",
	                           &u, &e),
	                 -1);
	assert_non_null(strstr(e.msg, "not a valid international name"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_chunked_body_and_reuse),
	        cmocka_unit_test(test_close_delimited_body),
	        cmocka_unit_test(test_keep_alive_and_request_head),
	        cmocka_unit_test(test_closed_kept_connection_is_retried),
	        cmocka_unit_test(test_post_is_not_retried),
	        cmocka_unit_test(test_interim_and_bodiless_answers),
	        cmocka_unit_test(test_body_bound),
	        cmocka_unit_test(test_malformed_and_empty_answers),
	        cmocka_unit_test(test_http_proxy_absolute_form),
	        cmocka_unit_test(test_connect_timeout_covers_the_tunnel),
	        cmocka_unit_test(test_proxy_environment_rules),
	        cmocka_unit_test(test_urls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
