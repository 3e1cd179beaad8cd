/*
 * The dashboard as the daemon runs it: the real general-agent
 * with DASHBOARD_ADDR on a port of the system's choosing serves the page
 * and the API; a pause from the API (POST with the page's header and
 * origin) stops the agent answering its owner, and the daemon says so.
 * The dashboard module's own suites (tests/integration/dashboard) cover
 * the API, hostile input and the pages in Chromium.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"

#define WAIT_MS 10000

/* One HTTP/1.1 request on loopback; the whole answer (caller frees). */
static char *http(int port, const char *method, const char *path, const char *extra)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
		close(s);
		return NULL;
	}
	char req[1024];
	int n = snprintf(req, sizeof req,
	                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s"
	                 "Content-Length: 0\r\n\r\n",
	                 method, path, port, extra ? extra : "");
	if (write(s, req, (size_t)n) != n) {
		close(s);
		return NULL;
	}
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);
	ssize_t r;
	while (len < cap - 1 && (r = read(s, buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(s);
	return buf;
}

static void test_dashboard_in_the_daemon(void **state)
{
	(void)state;
	char *home = home_new();
	struct proc p;
	const char *env[] = {"AGENT_NAME=Ada", "DASHBOARD_ADDR=127.0.0.1:0", NULL};
	assert_int_equal(proc_start(&p, home, (const char *const[]){NULL}, env), 0);
	if (!proc_wait_output(&p, "dashboard listening", WAIT_MS)) {
		char *e = proc_stderr(&p);
		proc_cleanup(&p);
		fail_msg("no dashboard:\n%s", e);
	}
	char *e = proc_stderr(&p);
	const char *u = strstr(e, "url=http://127.0.0.1:");
	assert_non_null(u);
	int port = atoi(u + strlen("url=http://127.0.0.1:"));
	free(e);
	assert_true(port > 0);

	char *page = http(port, "GET", "/", NULL);
	assert_non_null(page);
	assert_non_null(strstr(page, "200 OK"));
	assert_non_null(strstr(page, "<html"));
	free(page);
	char *st = http(port, "GET", "/api/status", NULL);
	assert_non_null(st);
	if (!strstr(st, "\"agent\":\"Ada\"") || !strstr(st, "\"paused\":false"))
		fail_msg("/api/status:\n%s", st);
	free(st);

	/* a pause without the page's header is refused; with it, applied */
	char *r = http(port, "POST", "/api/pause", NULL);
	assert_non_null(r);
	assert_null(strstr(r, "200 OK"));
	free(r);
	char origin[96];
	snprintf(origin, sizeof origin, "X-Dashboard: 1\r\nOrigin: http://127.0.0.1:%d\r\n", port);
	r = http(port, "POST", "/api/pause", origin);
	assert_non_null(r);
	if (!strstr(r, "200 OK"))
		fail_msg("POST /api/pause:\n%s", r);
	free(r);
	if (!proc_wait_output(&p, "Ada: paused from the dashboard", WAIT_MS))
		fail_msg("the daemon did not say it was paused");
	proc_write_stdin(&p, "hello?\n");
	if (!proc_wait_output(&p, "Ada: (paused: I answer only /resume and /status)", WAIT_MS))
		fail_msg("a paused agent answered its owner");
	char *out = NULL, *err = NULL;
	proc_run(home, (const char *const[]){"status", NULL}, NULL, &out, &err);
	assert_non_null(strstr(out, "paused       yes"));
	free(out), free(err);
	r = http(port, "POST", "/api/resume", origin);
	assert_non_null(strstr(r, "200 OK"));
	free(r);
	assert_true(proc_wait_output(&p, "Ada: resumed from the dashboard", WAIT_MS));
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
	home_remove(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_dashboard_in_the_daemon),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
