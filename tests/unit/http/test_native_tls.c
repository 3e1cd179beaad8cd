/*
 * test_native_tls — the native HTTP transport's TLS against libmicrohttpd
 * over GnuTLS on 127.0.0.1, with a CA and certificates made at test time
 * by openssl (exits 77 without it): a trusted certificate accepted (through
 * GA_HTTP_EXTRA_CA_FILE, which adds to the system trust), the same server
 * refused without it, a wrong host name and a self-signed certificate
 * refused as HTTP_ERR_TLS, keep-alive over TLS, and https:// through a
 * CONNECT proxy with Basic authentication (accepted, refused with 407,
 * bypassed by no_proxy) and a SOCKS5 tunnel with username/password.
 * HTTP/2 against nghttpd (Debian's nghttp2-server; those tests are skipped
 * without it): GET and POST with bodies and headers, the connection kept
 * for the next request, the body bound; and a GOAWAY sent before the
 * stream was processed by openssl s_server speaking "h2" from a script;
 * trailers not kept.
 * libmicrohttpd answers http/1.1 only: every test against it is the
 * fallback from the offered h2.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
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
	pid_t nghttpd;  /* running nghttpd, 0 when none */
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
static void stop_nghttpd(void);

static int group_teardown(void **state)
{
	(void)state;
	stop_s_server();
	stop_nghttpd();
	httpfake_free(T.good);
	httpfake_free(T.self);
	free(T.srv_cert);
	free(T.srv_key);
	free(T.self_cert);
	free(T.self_key);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", T.dir); /* mkdtemp's name: no quote in it */
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", T.dir);
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

/* A port nothing listens on now (nghttpd takes no port 0). */
static unsigned free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0)
		abort();
	close(fd);
	return ntohs(sa.sin_port);
}

static bool accepts(unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static void stop_nghttpd(void)
{
	if (T.nghttpd > 0) {
		kill(T.nghttpd, SIGTERM);
		waitpid(T.nghttpd, NULL, 0);
	}
	T.nghttpd = 0;
}

/* nghttpd -v serving T.dir/www with --echo-upload, its log in
 * T.dir/nghttpd.log; returns the port, 0 when nghttpd is not installed. */
static unsigned start_nghttpd(void)
{
	if (system("command -v nghttpd >/dev/null 2>&1") != 0)
		return 0;
	assert_int_equal(sh(T.dir, "mkdir -p www && printf 'hi over h2' >www/hello.txt && "
	                           "head -c 70000 /dev/zero | tr '\\0' x >www/big.txt"),
	                 0);
	unsigned port = free_port();
	char www[160], cert[160], key[160], log[160], ps[16];
	snprintf(www, sizeof www, "--htdocs=%s/www", T.dir);
	snprintf(cert, sizeof cert, "%s/srv.pem", T.dir);
	snprintf(key, sizeof key, "%s/srv.key", T.dir);
	snprintf(log, sizeof log, "%s/nghttpd.log", T.dir);
	snprintf(ps, sizeof ps, "%u", port);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp("nghttpd", "nghttpd", "-v", "-a", "127.0.0.1", www, "--echo-upload",
		       "--trailer=x-trailer: t", ps, key, cert, (char *)NULL);
		_exit(127);
	}
	T.nghttpd = pid;
	for (int i = 0; i < 1000 && !accepts(port); i++)
		usleep(10000);
	assert_true(accepts(port));
	return port;
}

static char *nghttpd_log(void)
{
	char path[160];
	snprintf(path, sizeof path, "%s/nghttpd.log", T.dir);
	char *s = fsx_read_file(path, 1u << 20, NULL, NULL);
	assert_non_null(s);
	return s;
}

/* The "[id=N]" session prefix of nghttpd's log line holding what. */
static const char *session_of(const char *log, const char *what)
{
	static char ids[2][16];
	static int turn;
	const char *at = strstr(log, what);
	assert_non_null(at);
	while (at > log && at[-1] != '\n')
		at--;
	char *out = ids[turn++ % 2];
	snprintf(out, sizeof ids[0], "%.*s", (int)strcspn(at, " "), at);
	return out;
}

static void test_h2_get_post_and_reuse(void **state)
{
	(void)state;
	unsigned port = start_nghttpd();
	if (!port) {
		printf("skipped: nghttpd is not installed (Debian's nghttp2-server)\n");
		skip();
	}
	struct nfx *fx = nfx_new();
	char u[128];
	snprintf(u, sizeof u, "https://localhost:%u/hello.txt", port);
	struct nres g = {.want_hdr = "content-length"};
	const char *const hdrs[] = {"X-Test: yes", "Accept:", NULL};
	struct http_request req = {.method = "GET", .url = u, .headers = hdrs};
	nfx_run(fx, &req, &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(g.status, 200);
	assert_string_equal(g.body, "hi over h2");
	assert_string_equal(g.hdr, "10");
	/* Trailers are not kept as response headers (the same connection). */
	struct nres tg = {.want_hdr = "x-trailer"};
	nfx_get(fx, u, &tg);
	assert_int_equal(tg.error, HTTP_OK);
	assert_string_equal(tg.body, "hi over h2");
	assert_string_equal(tg.hdr, "");
	/* A POST on the same connection: nghttpd echoes the body. */
	static const char body[] = "a body sent as DATA";
	struct http_request post = {
	        .method = "POST", .url = u, .body = body, .body_len = strlen(body)};
	nfx_run(fx, &post, &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(g.status, 200);
	assert_string_equal(g.body, body);
	char *log = nghttpd_log();
	/* Both streams on one session (the readiness probes made sessions of
	 * their own), and the fields as sent. */
	assert_string_equal(session_of(log, "recv (stream_id=1) :method: GET"),
	                    session_of(log, "recv (stream_id=5) :method: POST"));
	assert_non_null(strstr(log, "x-trailer: t"));
	assert_non_null(strstr(log, "x-test: yes"));
	assert_non_null(strstr(log, ":authority: localhost:"));
	assert_non_null(strstr(log, "user-agent: "));
	assert_null(strstr(log, "(stream_id=1) accept:"));
	assert_null(strstr(log, ") host:"));
	free(log);
	/* The body bound, on a fresh client. */
	nfx_free(fx);
	fx = nfx_new();
	snprintf(u, sizeof u, "https://localhost:%u/big.txt", port);
	struct http_request big = {.method = "GET", .url = u, .max_body_bytes = 65536};
	nfx_run(fx, &big, &g);
	assert_int_equal(g.error, HTTP_ERR_TOO_LARGE);
	big.max_body_bytes = 70000;
	nfx_run(fx, &big, &g);
	assert_int_equal(g.error, HTTP_OK);
	assert_int_equal(g.body_len, 70000);
	nfx_free(fx);
	stop_nghttpd();
}

/* openssl s_server choosing h2 that sends, as soon as a client is
 * connected, the server preface (empty SETTINGS) and GOAWAY (last stream
 * 0, NO_ERROR): the request was not processed. Its stdin stays open (the
 * write end in *feed) so it keeps the connection; later connections get
 * nothing at all. */
static pid_t start_goaway_server(unsigned *port, int *feed)
{
	char cert[160], key[160];
	snprintf(cert, sizeof cert, "%s/srv.pem", T.dir);
	snprintf(key, sizeof key, "%s/srv.key", T.dir);
	static const unsigned char frames[] = {
	        0, 0, 0, 4, 0, 0, 0, 0, 0,                         /* SETTINGS */
	        0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* GOAWAY 0 NO_ERROR */
	};
	int in[2], out[2];
	if (pipe(in) != 0 || pipe(out) != 0)
		abort();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2);
		execlp("openssl", "openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", cert,
		       "-key", key, "-alpn", "h2", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	assert_int_equal(write(in[1], frames, sizeof frames), (ssize_t)sizeof frames);
	*feed = in[1];
	FILE *o = fdopen(out[0], "r");
	char line[256];
	*port = 0;
	while (*port == 0 && fgets(line, sizeof line, o))
		sscanf(line, "ACCEPT 127.0.0.1:%u", port);
	fclose(o);
	return pid;
}

static void goaway_exchange(const char *method, unsigned timeout_ms, struct nres *g)
{
	unsigned port = 0;
	int feed = -1;
	T.s_server = start_goaway_server(&port, &feed);
	assert_int_not_equal(port, 0);
	struct nfx *fx = nfx_new();
	char u[128];
	snprintf(u, sizeof u, "https://localhost:%u/", port);
	struct http_request req = {
	        .method = method, .url = u, .body = "x", .body_len = 1, .timeout_ms = timeout_ms};
	nfx_run(fx, &req, g);
	nfx_free(fx);
	close(feed);
	stop_s_server();
}

static void test_h2_goaway(void **state)
{
	(void)state;
	/* POST is not sent again: the GOAWAY is the answer. */
	struct nres g = {0};
	goaway_exchange("POST", 5000, &g);
	assert_int_equal(g.error, HTTP_ERR_TRANSPORT);
	assert_non_null(strstr(g.msg, "did not process the request (HTTP/2 GOAWAY"));
	/* PUT is, once, on a new connection, which this server never answers:
	 * the total timeout, not the GOAWAY, ends it. */
	goaway_exchange("PUT", 1500, &g);
	assert_int_equal(g.error, HTTP_ERR_TIMEOUT);
	assert_non_null(strstr(g.msg, "did not answer within 1500 ms"));
}

int main(void)
{
	/* As in the daemon: a write to a connection the server closed is an
	 * error to handle (EPIPE), not a signal. */
	signal(SIGPIPE, SIG_IGN);
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
	        cmocka_unit_test_setup(test_h2_get_post_and_reuse, each_setup),
	        cmocka_unit_test_setup(test_h2_goaway, each_setup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
