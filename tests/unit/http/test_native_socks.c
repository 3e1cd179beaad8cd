/*
 * test_native_socks — the native transport through a SOCKS5 proxy
 * (socks5srv on 127.0.0.1, tunnelling to a rawsrv origin): no
 * authentication, username/password accepted and refused, socks5h sending
 * the name and socks5 sending the address resolved here, a refused
 * CONNECT, a proxy that never answers (the connect timeout), reuse of the
 * tunnelled connection, and the SOCKS4 forms refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/fakes/rawnet/rawsrv.h"
#include "tests/fakes/rawnet/socks5srv.h"
#include "tests/unit/http/nativefix.h"

#define OK_HELLO "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

struct fix {
	struct rawsrv *origin;
	struct socks5srv *proxy;
	struct nfx *fx;
	char url[128];
};

static void clear_proxy_env(void)
{
	static const char *const vars[] = {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy",
	                                   "ALL_PROXY",  "no_proxy",    "NO_PROXY"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
}

/* An origin answering OK_HELLO, a proxy tunnelling to it with o (its
 * origin_port filled in), all_proxy set to "<scheme>://<cred>127.0.0.1:P"
 * and the URL http://<host>:<origin port>/x. */
static void fix_start(struct fix *f, struct socks5srv_opts o, const char *scheme, const char *cred,
                      const char *host)
{
	clear_proxy_env();
	struct rawsrv_step st[] = {{OK_HELLO, false, false}};
	f->origin = rawsrv_new(st, 1);
	o.origin_port = rawsrv_port(f->origin);
	char err[256], px[256];
	f->proxy = socks5srv_new(&o, err, sizeof err);
	assert_non_null(f->proxy);
	snprintf(px, sizeof px, "%s://%s127.0.0.1:%u", scheme, cred,
	         (unsigned)socks5srv_port(f->proxy));
	setenv("all_proxy", px, 1);
	snprintf(f->url, sizeof f->url, "http://%s:%u/x", host, (unsigned)rawsrv_port(f->origin));
	f->fx = nfx_new();
}

static void fix_stop(struct fix *f)
{
	nfx_free(f->fx);
	socks5srv_free(f->proxy);
	rawsrv_free(f->origin);
	clear_proxy_env();
}

static void test_socks5h_sends_the_name_and_reuses(void **state)
{
	(void)state;
	struct fix f;
	/* .invalid cannot resolve here: only the proxy's resolving reaches it. */
	fix_start(&f, (struct socks5srv_opts){0}, "socks5h", "", "origin.invalid");
	struct nres g = {0};
	nfx_get(f.fx, f.url, &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_string_equal(g.body, "hello");
	struct socks5srv_seen s;
	socks5srv_seen(f.proxy, &s);
	assert_int_equal(s.atyp, 3);
	assert_string_equal(s.addr, "origin.invalid");
	assert_int_equal(s.port, rawsrv_port(f.origin));
	assert_string_equal(s.methods, "00");
	char head[512];
	rawsrv_last_head(f.origin, head, sizeof head);
	assert_non_null(strstr(head, "GET /x HTTP/1.1\r\n")); /* origin form, not absolute */
	nfx_get(f.fx, f.url, &g);
	assert_int_equal(g.error, HTTP_OK);
	socks5srv_seen(f.proxy, &s);
	assert_int_equal(s.greetings, 1); /* the tunnelled connection was kept */
	assert_int_equal(rawsrv_requests(f.origin), 2);
	fix_stop(&f);
}

static void test_socks5_resolves_here(void **state)
{
	(void)state;
	struct fix f;
	fix_start(&f, (struct socks5srv_opts){0}, "socks5", "", "localhost");
	struct nres g = {0};
	nfx_get(f.fx, f.url, &g);
	assert_int_equal(g.error, HTTP_OK);
	struct socks5srv_seen s;
	socks5srv_seen(f.proxy, &s);
	assert_true(s.atyp == 1 || s.atyp == 4);
	assert_true(strcmp(s.addr, "127.0.0.1") == 0 || strcmp(s.addr, "::1") == 0);
	fix_stop(&f);
	/* A name that does not resolve fails here, before any CONNECT. */
	fix_start(&f, (struct socks5srv_opts){0}, "socks5", "", "origin.invalid");
	nfx_get(f.fx, f.url, &g);
	assert_int_equal(g.error, HTTP_ERR_CONNECT);
	assert_non_null(strstr(g.msg, "cannot resolve origin.invalid"));
	socks5srv_seen(f.proxy, &s);
	assert_int_equal(s.connects, 0);
	fix_stop(&f);
}

static void test_user_and_password(void **state)
{
	(void)state;
	struct fix f;
	struct socks5srv_opts o = {.user = "us@er", .pass = "p:w"};
	fix_start(&f, o, "socks5h", "us%40er:p%3Aw@", "origin.invalid");
	struct nres g = {0};
	nfx_get(f.fx, f.url, &g);
	assert_int_equal(g.error, HTTP_OK);
	struct socks5srv_seen s;
	socks5srv_seen(f.proxy, &s);
	assert_string_equal(s.methods, "0002");
	assert_string_equal(s.user, "us@er");
	fix_stop(&f);

	fix_start(&f, o, "socks5h", "us%40er:wrong@", "origin.invalid");
	nfx_get(f.fx, f.url, &g);
	assert_int_equal(g.error, HTTP_ERR_CONNECT);
	char want[160];
	snprintf(want, sizeof want,
	         "the SOCKS5 proxy 127.0.0.1:%u refused the user name and password (status 1)",
	         (unsigned)socks5srv_port(f.proxy));
	assert_non_null(strstr(g.msg, want));
	socks5srv_seen(f.proxy, &s);
	assert_int_equal(s.connects, 0);
	fix_stop(&f);

	/* No credentials offered to a proxy that wants them. */
	fix_start(&f, o, "socks5h", "", "origin.invalid");
	nfx_get(f.fx, f.url, &g);
	assert_int_equal(g.error, HTTP_ERR_CONNECT);
	assert_non_null(strstr(g.msg, "accepts none of the authentication methods offered"));
	fix_stop(&f);
}

static void test_refused_connect(void **state)
{
	(void)state;
	struct fix f;
	fix_start(&f, (struct socks5srv_opts){.reply = 5}, "socks5h", "", "origin.invalid");
	struct nres g = {0};
	nfx_get(f.fx, f.url, &g);
	assert_int_equal(g.error, HTTP_ERR_CONNECT);
	char want[200];
	snprintf(want, sizeof want,
	         "the SOCKS5 proxy 127.0.0.1:%u refused the connection to origin.invalid:%u "
	         "(reply 5: connection refused)",
	         (unsigned)socks5srv_port(f.proxy), (unsigned)rawsrv_port(f.origin));
	assert_non_null(strstr(g.msg, want));
	assert_int_equal(rawsrv_accepts(f.origin), 0);
	fix_stop(&f);
}

static void test_stalling_proxy_hits_the_connect_timeout(void **state)
{
	(void)state;
	struct fix f;
	fix_start(&f, (struct socks5srv_opts){.stall = true}, "socks5h", "", "origin.invalid");
	struct nres g = {0};
	struct http_request req = {
	        .method = "GET", .url = f.url, .connect_timeout_ms = 300, .timeout_ms = 20000};
	nfx_run(f.fx, &req, &g);
	assert_int_equal(g.error, HTTP_ERR_TIMEOUT);
	assert_non_null(strstr(g.msg, "origin.invalid did not answer within 300 ms"));
	struct socks5srv_seen s;
	socks5srv_seen(f.proxy, &s);
	assert_int_equal(s.greetings, 1);
	fix_stop(&f);
}

static void test_socks4_is_refused(void **state)
{
	(void)state;
	static const char *const forms[] = {"socks4://127.0.0.1:1", "socks4a://127.0.0.1:1",
	                                    "socks://127.0.0.1:1"};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		clear_proxy_env();
		setenv("all_proxy", forms[i], 1);
		struct nfx *fx = nfx_new();
		struct nres g = {0};
		nfx_get(fx, "http://127.0.0.1:1/", &g);
		assert_int_equal(g.error, HTTP_ERR_CONNECT);
		assert_non_null(strstr(g.msg, "in all_proxy is a SOCKS4 proxy"));
		assert_non_null(strstr(g.msg, forms[i]));
		nfx_free(fx);
	}
	clear_proxy_env();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_socks5h_sends_the_name_and_reuses),
	        cmocka_unit_test(test_socks5_resolves_here),
	        cmocka_unit_test(test_user_and_password),
	        cmocka_unit_test(test_refused_connect),
	        cmocka_unit_test(test_stalling_proxy_hits_the_connect_timeout),
	        cmocka_unit_test(test_socks4_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
