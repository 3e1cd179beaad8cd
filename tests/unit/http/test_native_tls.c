/*
 * test_native_tls — the native HTTP transport's TLS against libmicrohttpd
 * over GnuTLS on 127.0.0.1, with a CA and certificates made at test time
 * by openssl (exits 77 without it): a trusted certificate accepted (through
 * GA_HTTP_EXTRA_CA_FILE, which adds to the system trust), the same server
 * refused without it, a wrong host name and a self-signed certificate
 * refused as HTTP_ERR_TLS, keep-alive over TLS, and https:// through a
 * CONNECT proxy with Basic authentication (accepted, refused with 407,
 * bypassed by no_proxy) and a SOCKS5 tunnel with username/password.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapters/http/tls.h"
#include "common/fsx.h"
#include "tests/fakes/httpfake/httpfake.h"
#include "tests/fakes/rawnet/httpproxy.h"
#include "tests/fakes/rawnet/socks5srv.h"
#include "tests/unit/http/nativefix.h"

struct tlsfx {
	char dir[64];
	char ca[128];
	char *srv_cert, *srv_key, *self_cert, *self_key;
	struct httpfake *good, *self;
	pid_t s_server; /* running openssl s_server, 0 when none */
};

static struct tlsfx T;

/* Runs a shell command line in dir. */
static int sh(const char *dir, const char *cmdline)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "cd '%s' && %s", dir, cmdline);
	return system(cmd);
}

static char *slurp(const char *dir, const char *name)
{
	char path[160];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *s = fsx_read_file(path, 65536, NULL, NULL);
	if (!s) {
		fprintf(stderr, "cannot read %s\n", path);
		abort();
	}
	return s;
}

/* A CA, a server certificate for "localhost" it signed, and a self-signed
 * one for the same name. */
static void make_certs(void)
{
	snprintf(T.dir, sizeof T.dir, "/tmp/ga-tls-XXXXXX");
	if (!mkdtemp(T.dir))
		abort();
	static const char script[] =
	        "exec >openssl.log 2>&1 && "
	        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	        "-keyout ca.key -out ca.pem -days 2 -subj /CN=ga-test-ca "
	        "-addext basicConstraints=critical,CA:TRUE "
	        "-addext keyUsage=critical,keyCertSign,cRLSign && "
	        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key "
	        "-out srv.csr -subj /CN=localhost && "
	        "printf 'subjectAltName=DNS:localhost\\nextendedKeyUsage=serverAuth\\n"
	        "basicConstraints=CA:FALSE\\n' >ext.cnf && "
	        "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
	        "-out srv.pem -days 2 -extfile ext.cnf && "
	        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	        "-keyout self.key -out self.pem -days 2 -subj /CN=localhost "
	        "-addext subjectAltName=DNS:localhost";
	if (sh(T.dir, script) != 0) {
		fprintf(stderr, "openssl failed (see %s/openssl.log)\n", T.dir);
		abort();
	}
	snprintf(T.ca, sizeof T.ca, "%s/ca.pem", T.dir);
	T.srv_cert = slurp(T.dir, "srv.pem");
	T.srv_key = slurp(T.dir, "srv.key");
	T.self_cert = slurp(T.dir, "self.pem");
	T.self_key = slurp(T.dir, "self.key");
}

static struct httpfake *tls_fake(const char *cert, const char *key)
{
	char err[256];
	struct httpfake *f = httpfake_new_tls(0, cert, key, err, sizeof err);
	if (!f) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	httpfake_route_respond(httpfake_route(f, "GET", "/hello"), 200, "text/plain", "hi there");
	return f;
}

static int group_setup(void **state)
{
	(void)state;
	make_certs();
	T.good = tls_fake(T.srv_cert, T.srv_key);
	T.self = tls_fake(T.self_cert, T.self_key);
	return 0;
}

static void stop_s_server(void);

static int group_teardown(void **state)
{
	(void)state;
	stop_s_server();
	httpfake_free(T.good);
	httpfake_free(T.self);
	free(T.srv_cert);
	free(T.srv_key);
	free(T.self_cert);
	free(T.self_key);
	const char *const names[] = {"ca.key",  "ca.pem",  "ca.srl",   "srv.key",  "srv.csr",
	                             "srv.pem", "ext.cnf", "self.key", "self.pem", "openssl.log"};
	char path[160];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", T.dir, names[i]);
		unlink(path);
	}
	rmdir(T.dir);
	return 0;
}

static int each_setup(void **state)
{
	(void)state;
	static const char *const vars[] = {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy",
	                                   "ALL_PROXY",  "no_proxy",    "NO_PROXY"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
	setenv(TLS_EXTRA_CA_ENV, T.ca, 1);
	return 0;
}

static const char *url(const struct httpfake *f, const char *host, char *buf, size_t cap)
{
	snprintf(buf, cap, "https://%s:%u/hello", host, (unsigned)httpfake_port(f));
	return buf;
}

static void test_trusted_certificate_and_keep_alive(void **state)
{
	(void)state;
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {0};
	uint64_t before = httpfake_request_count(T.good);
	nfx_get(fx, url(T.good, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(g.status, 200);
	assert_string_equal(g.body, "hi there");
	nfx_get(fx, u, &g);
	assert_string_equal(g.body, "hi there");
	assert_int_equal(httpfake_request_count(T.good), before + 2);
	nfx_free(fx);
}

static void test_extra_ca_is_needed(void **state)
{
	(void)state;
	unsetenv(TLS_EXTRA_CA_ENV); /* the system trust alone */
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {0};
	nfx_get(fx, url(T.good, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_ERR_TLS);
	assert_int_equal(g.status, 0);
	assert_non_null(strstr(g.msg, "TLS with localhost failed: the certificate was refused"));
	nfx_free(fx);
}

static void test_wrong_host_name_is_refused(void **state)
{
	(void)state;
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {0};
	nfx_get(fx, url(T.good, "127.0.0.1", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_ERR_TLS);
	assert_non_null(strstr(g.msg, "TLS with 127.0.0.1 failed"));
	assert_non_null(strstr(g.msg, "does not match"));
	nfx_free(fx);
}

static void test_self_signed_is_refused(void **state)
{
	(void)state;
	struct nfx *fx = nfx_new();
	char u[128];
	struct nres g = {0};
	nfx_get(fx, url(T.self, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_ERR_TLS);
	assert_non_null(strstr(g.msg, "TLS with localhost failed: the certificate was refused"));
	nfx_free(fx);
}

static void test_plain_server_is_a_tls_error(void **state)
{
	(void)state;
	char err[256], u[128];
	struct httpfake *plain = httpfake_new(0, err, sizeof err);
	assert_non_null(plain);
	struct nfx *fx = nfx_new();
	struct nres g = {0};
	nfx_get(fx, url(plain, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_ERR_TLS);
	nfx_free(fx);
	httpfake_free(plain);
}

/* Also from the group teardown, when a failed assertion left it running. */
static void stop_s_server(void)
{
	if (T.s_server > 0) {
		kill(T.s_server, SIGTERM);
		waitpid(T.s_server, NULL, 0);
	}
	T.s_server = 0;
}

/* openssl s_server -www on an ephemeral port: returns its pid and port. */
static pid_t start_s_server(unsigned *port)
{
	int fds[2];
	if (pipe(fds) != 0)
		abort();
	char cert[160], key[160];
	snprintf(cert, sizeof cert, "%s/self.pem", T.dir);
	snprintf(key, sizeof key, "%s/self.key", T.dir);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2);
		execlp("openssl", "openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", cert,
		       "-key", key, "-www", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	FILE *out = fdopen(fds[0], "r");
	char line[256];
	*port = 0;
	while (*port == 0 && fgets(line, sizeof line, out))
		sscanf(line, "ACCEPT 127.0.0.1:%u", port);
	fclose(out); /* s_server writes little after ACCEPT; a closed pipe is fine */
	return pid;
}

/* OpenSSL's s_server answers HTTP/1.0 with a close-delimited body after two
 * TLS 1.3 session tickets and ends with close_notify, often all in one
 * read: every record must be processed, not only the first. */
static void test_openssl_server_close_delimited(void **state)
{
	(void)state;
	char ca[160], u[128];
	snprintf(ca, sizeof ca, "%s/self.pem", T.dir);
	setenv(TLS_EXTRA_CA_ENV, ca, 1);
	unsigned port = 0;
	T.s_server = start_s_server(&port);
	assert_int_not_equal(port, 0);
	struct nfx *fx = nfx_new();
	snprintf(u, sizeof u, "https://localhost:%u/", port);
	for (int i = 0; i < 3; i++) {
		struct nres g = {0};
		struct http_request req = {.method = "GET", .url = u, .timeout_ms = 5000};
		nfx_run(fx, &req, &g);
		assert_int_equal(g.error, HTTP_OK);
		assert_int_equal(g.status, 200);
		assert_non_null(strstr(g.body, "Ciphers supported in s_server binary"));
	}
	nfx_free(fx);
	stop_s_server();
}

static void test_connect_proxy(void **state)
{
	(void)state;
	char err[256], px[128], u[128], line[512], auth[256], want[256];
	struct httpproxy *p = httpproxy_new("Basic dXNlcjpwdw==", err, sizeof err);
	assert_non_null(p);
	snprintf(px, sizeof px, "http://user:pw@127.0.0.1:%u", (unsigned)httpproxy_port(p));
	setenv("HTTPS_PROXY", px, 1);
	struct nfx *fx = nfx_new();
	struct nres g = {0};
	nfx_get(fx, url(T.good, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_string_equal(g.body, "hi there");
	httpproxy_last(p, line, sizeof line, auth, sizeof auth);
	snprintf(want, sizeof want, "CONNECT localhost:%u HTTP/1.1",
	         (unsigned)httpfake_port(T.good));
	assert_string_equal(line, want);
	assert_string_equal(auth, "Basic dXNlcjpwdw==");
	/* Wrong credentials: the proxy's 407 names the problem. */
	snprintf(px, sizeof px, "http://user:nope@127.0.0.1:%u", (unsigned)httpproxy_port(p));
	setenv("HTTPS_PROXY", px, 1);
	nfx_get(fx, url(T.self, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_ERR_CONNECT);
	assert_non_null(strstr(g.msg, "status 407: proxy authentication required"));
	/* no_proxy by suffix: straight to the server. */
	unsigned seen = httpproxy_requests(p);
	setenv("NO_PROXY", "example.org,.localhost", 1);
	nfx_get(fx, url(T.good, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(httpproxy_requests(p), seen);
	nfx_free(fx);
	httpproxy_free(p);
}

/* A SOCKS5 proxy demanding u:pw that tunnels to origin_port, set as
 * https_proxy. */
static struct socks5srv *socks_proxy_to(uint16_t origin_port)
{
	char err[256], px[128];
	struct socks5srv_opts o = {.user = "u", .pass = "pw", .origin_port = origin_port};
	struct socks5srv *p = socks5srv_new(&o, err, sizeof err);
	assert_non_null(p);
	snprintf(px, sizeof px, "socks5h://u:pw@127.0.0.1:%u", (unsigned)socks5srv_port(p));
	setenv("https_proxy", px, 1);
	return p;
}

static void test_socks5h_tunnel(void **state)
{
	(void)state;
	char u[128];
	struct socks5srv *p = socks_proxy_to(httpfake_port(T.good));
	struct nfx *fx = nfx_new();
	struct nres g = {0};
	nfx_get(fx, url(T.good, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_string_equal(g.body, "hi there");
	struct socks5srv_seen s;
	socks5srv_seen(p, &s);
	assert_int_equal(s.atyp, 3);
	assert_string_equal(s.addr, "localhost");
	nfx_free(fx);
	socks5srv_free(p);
	/* The certificate is still checked for the URL's host through the
	 * tunnel: the self-signed server is refused. */
	p = socks_proxy_to(httpfake_port(T.self));
	fx = nfx_new();
	nfx_get(fx, url(T.self, "localhost", u, sizeof u), &g);
	assert_int_equal(g.error, HTTP_ERR_TLS);
	socks5srv_seen(p, &s);
	assert_int_equal(s.connects, 1);
	nfx_free(fx);
	socks5srv_free(p);
}

int main(void)
{
	if (system("openssl version >/dev/null 2>&1") != 0) {
		printf("test_native_tls: skipped, openssl is not installed (it makes the test "
		       "CA)\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup(test_trusted_certificate_and_keep_alive, each_setup),
	        cmocka_unit_test_setup(test_extra_ca_is_needed, each_setup),
	        cmocka_unit_test_setup(test_wrong_host_name_is_refused, each_setup),
	        cmocka_unit_test_setup(test_self_signed_is_refused, each_setup),
	        cmocka_unit_test_setup(test_plain_server_is_a_tls_error, each_setup),
	        cmocka_unit_test_setup(test_openssl_server_close_delimited, each_setup),
	        cmocka_unit_test_setup(test_connect_proxy, each_setup),
	        cmocka_unit_test_setup(test_socks5h_tunnel, each_setup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
