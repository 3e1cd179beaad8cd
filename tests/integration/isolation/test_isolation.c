/*
 * The test suite never touches a user's world. A user of
 * this machine may run a room on port 7777 (the default of agent-space and
 * the last fallback of general-agent's discovery), an avahi on the system
 * bus, and agents named Ada. This test plays that user: it holds
 * 127.0.0.1:7777 (and [::1]:7777 where the machine has it) as a fake room,
 * then runs what the suite runs, through tests/support/proc as every
 * integration test does, and checks that nothing connects to it:
 *   - general-agent started the way test_daemon starts it (only
 *     AGENT_NAME=Ada, once the bug that joined the user's room as "Ada"),
 *     to idle and for a while after its first room attempt; doctor and
 *     status too;
 *   - agent-space started without SPACE_PORT and without --no-mdns: it
 *     listens on a port of its own, not 7777, and cannot reach the
 *     machine's avahi.
 * A control proves the fake room would notice: with the isolation removed
 * (a bare "SPACE_URL" etc. in the env) general-agent falls back to
 * ws://localhost:7777 and the fake room sees it connect. That control only
 * runs because this test holds 7777 itself. When 7777 is busy (a real room
 * of the user's, say) the test is skipped, saying so, and touches nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"
#include "testutil.h"

#define USER_PORT 7777
#define WAIT_MS   10000

struct fake_room {
	int fd[2]; /* IPv4 and IPv6 loopback listeners; -1 when absent */
	char why[160];
};

static int listen_on(int family, int *err)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	int rc;
	if (family == AF_INET) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(USER_PORT)};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		rc = bind(fd, (struct sockaddr *)&a, sizeof a);
	} else {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(USER_PORT)};
		a.sin6_addr = in6addr_loopback;
		rc = bind(fd, (struct sockaddr *)&a, sizeof a);
	}
	if (rc != 0 || listen(fd, 16) != 0) {
		*err = errno;
		close(fd);
		return -1;
	}
	return fd;
}

/* true when the fake room holds 7777 on every loopback the machine has. */
static bool fake_room_open(struct fake_room *r)
{
	r->fd[0] = r->fd[1] = -1;
	int err = 0;
	r->fd[0] = listen_on(AF_INET, &err);
	if (r->fd[0] < 0) {
		snprintf(r->why, sizeof r->why, "127.0.0.1:%d is not free (%s)", USER_PORT,
		         strerror(err));
		return false;
	}
	r->fd[1] = listen_on(AF_INET6, &err);
	if (r->fd[1] < 0 && err != EADDRNOTAVAIL && err != EAFNOSUPPORT) {
		snprintf(r->why, sizeof r->why, "[::1]:%d is not free (%s)", USER_PORT,
		         strerror(err));
		close(r->fd[0]);
		r->fd[0] = -1;
		return false;
	}
	return true;
}

/* Connections accepted (and closed) on either listener within ms. */
static int fake_room_visits(struct fake_room *r, int ms)
{
	int n = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int i = 0; i < 2; i++) {
			if (r->fd[i] < 0)
				continue;
			int c;
			while ((c = accept(r->fd[i], NULL, NULL)) >= 0) {
				close(c);
				n++;
			}
		}
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long el = (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
		if (el >= ms || n > 0)
			return n;
		struct pollfd p[2] = {{.fd = r->fd[0], .events = POLLIN},
		                      {.fd = r->fd[1], .events = POLLIN}};
		poll(p, 2, 50);
	}
}

static void fake_room_close(struct fake_room *r)
{
	for (int i = 0; i < 2; i++)
		if (r->fd[i] >= 0)
			close(r->fd[i]);
}

struct fx {
	struct fake_room room;
	char *home;
};

static int setup(void **state)
{
	static struct fx fx;
	memset(&fx, 0, sizeof fx);
	if (!fake_room_open(&fx.room)) {
		print_message("SKIPPED: %s; a user's room may be there, so this test "
		              "runs nothing\n",
		              fx.room.why);
		fx.room.fd[0] = fx.room.fd[1] = -1;
	}
	fx.home = home_new();
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	fake_room_close(&fx->room);
	home_remove(fx->home);
	return 0;
}

static void need_room(struct fx *fx)
{
	if (fx->room.fd[0] < 0)
		skip();
}

static char *all_output(struct proc *p)
{
	char *e = proc_stderr(p), *o = proc_stdout(p);
	size_t n = (e ? strlen(e) : 0) + (o ? strlen(o) : 0) + 2;
	char *s = malloc(n);
	snprintf(s, n, "%s\n%s", e ? e : "", o ? o : "");
	free(e);
	free(o);
	return s;
}

/* The control: without the isolation the agent does reach 7777, and the
 * fake room notices. */
static void test_control_fake_room_notices(void **state)
{
	struct fx *fx = *state;
	need_room(fx);
	const char *const env[] = {"AGENT_NAME=Ada", "SPACE_URL", "GA_SPACE_LOCALHOST_URL",
	                           "GA_SPACE_MDNS=0", NULL};
	struct proc p;
	assert_int_equal(
	        proc_start(&p, fx->home, (const char *const[]){"--no-terminal", NULL}, env), 0);
	int visits = fake_room_visits(&fx->room, WAIT_MS);
	char *out = all_output(&p);
	proc_cleanup(&p);
	if (visits == 0)
		fail_msg("the control agent never reached the fake room on %d:\n%s", USER_PORT,
		         out);
	assert_non_null(strstr(out, "localhost:7777"));
	free(out);
}

/* general-agent as test_daemon runs it: only a name, the one a user's own
 * agent may have. */
static void test_agent_stays_home(void **state)
{
	struct fx *fx = *state;
	need_room(fx);
	const char *const env[] = {"AGENT_NAME=Ada", NULL};
	struct proc p;
	assert_int_equal(
	        proc_start(&p, fx->home, (const char *const[]){"--no-terminal", NULL}, env), 0);
	if (!proc_wait_output(&p, "ready and listening", WAIT_MS)) {
		char *e = all_output(&p);
		proc_cleanup(&p);
		fail_msg("general-agent did not reach idle:\n%s", e);
	}
	/* Its room attempts go to the closed port, and keep going there. */
	assert_true(proc_wait_output(&p, PROC_CLOSED_URL, WAIT_MS));
	int visits = fake_room_visits(&fx->room, 3000);
	char *out = all_output(&p);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
	if (visits)
		fail_msg("general-agent connected to the user's port %d:\n%s", USER_PORT, out);
	assert_null(strstr(out, "localhost:7777"));
	assert_null(strstr(out, "browsing mDNS"));
	free(out);

	char *o = NULL, *e = NULL;
	proc_run(fx->home, (const char *const[]){"doctor", NULL}, env, &o, &e);
	free(o), free(e);
	proc_run(fx->home, (const char *const[]){"status", NULL}, env, &o, &e);
	free(o), free(e);
	assert_int_equal(fake_room_visits(&fx->room, 200), 0);
}

#ifdef GA_HAVE_AGENT_SPACE
/* agent-space with nothing said about port, address, name or mDNS. */
static void test_room_stays_home(void **state)
{
	struct fx *fx = *state;
	need_room(fx);
	char portf[1100];
	snprintf(portf, sizeof portf, "%s/room.port", fx->home);
	struct proc p;
	assert_int_equal(proc_start_bin(&p, "agent-space", fx->home,
	                                (const char *const[]){"--port-file", portf, NULL}, NULL),
	                 0);
	char *port = NULL;
	for (int i = 0; i < 1000 && !port && proc_alive(&p); i++) {
		port = tu_read(portf, NULL);
		if (port && !strchr(port, '\n')) {
			free(port);
			port = NULL;
		}
		if (!port)
			usleep(10000);
	}
	char *out = all_output(&p);
	proc_signal(&p, SIGTERM);
	int rc = proc_wait(&p, WAIT_MS);
	proc_cleanup(&p);
	if (!port)
		fail_msg("agent-space did not start beside the fake room:\n%s", out);
	assert_int_not_equal(atoi(port), USER_PORT);
	assert_true(atoi(port) > 0);
	assert_null(strstr(out, "name=agent-space"));
	assert_int_equal(rc, 0);
	free(port);
	free(out);
	assert_int_equal(fake_room_visits(&fx->room, 200), 0);
}
#endif

static const char *env_get(char **envv, const char *key)
{
	size_t n = strlen(key);
	for (char **e = envv; *e; e++)
		if (strncmp(*e, key, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* What proc gives a child, without starting one: the isolation defaults,
 * the caller's overrides and unsets, the home's .env respected, and nothing
 * of the user's own environment beyond PATH, HOME, TMPDIR, LANG and the
 * sanitizer options. Needs no port. */
static void test_child_environment(void **state)
{
	struct fx *fx = *state;
	setenv("AGENT_HOME", "/home/someone/agent", 1);
	setenv("REDIS_URL", "redis://127.0.0.1:6379", 1);
	setenv("SPACE_URL", "ws://localhost:7777", 1);
	setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/run/dbus/system_bus_socket", 1);

	struct proc_opts o = {.binary = "general-agent",
	                      .cwd = fx->home,
	                      .env = (const char *const[]){"AGENT_NAME=Ada", NULL}};
	char **e = proc_env_new(&o);
	assert_non_null(e);
	assert_string_equal(env_get(e, "SPACE_URL"), PROC_CLOSED_URL);
	assert_string_equal(env_get(e, "GA_SPACE_LOCALHOST_URL"), PROC_CLOSED_URL);
	assert_string_equal(env_get(e, "GA_SPACE_MDNS"), "0");
	assert_string_equal(env_get(e, "DBUS_SYSTEM_BUS_ADDRESS"),
	                    strchr(PROC_ISOLATED_BUS, '=') + 1);
	assert_string_equal(env_get(e, "AGENT_NAME"), "Ada");
	assert_null(env_get(e, "AGENT_HOME"));
	assert_null(env_get(e, "REDIS_URL"));
	proc_env_free(e);

	/* a bare name unsets; a test's own value wins */
	o.env = (const char *const[]){"SPACE_URL", "GA_SPACE_MDNS=1", NULL};
	e = proc_env_new(&o);
	assert_null(env_get(e, "SPACE_URL"));
	assert_string_equal(env_get(e, "GA_SPACE_MDNS"), "1");
	assert_string_equal(env_get(e, "GA_SPACE_LOCALHOST_URL"), PROC_CLOSED_URL);
	proc_env_free(e);

	/* the home's .env is the test's word too: not overridden */
	home_write(fx->home, ".env", "AGENT_NAME=Ada\n  export SPACE_URL=ws://127.0.0.1:9\n");
	o.env = NULL;
	e = proc_env_new(&o);
	assert_null(env_get(e, "SPACE_URL"));
	assert_string_equal(env_get(e, "GA_SPACE_MDNS"), "0");
	proc_env_free(e);
	char p[1100];
	snprintf(p, sizeof p, "%s/.env", fx->home);
	unlink(p);

	/* agent-space: an ephemeral loopback port and a name of its own */
	o = (struct proc_opts){.binary = "agent-space", .cwd = fx->home};
	e = proc_env_new(&o);
	assert_string_equal(env_get(e, "SPACE_PORT"), "0");
	assert_string_equal(env_get(e, "SPACE_BIND"), "127.0.0.1");
	assert_non_null(strstr(env_get(e, "SPACE_NAME"), "ga-test-"));
	assert_string_equal(env_get(e, "DBUS_SYSTEM_BUS_ADDRESS"),
	                    strchr(PROC_ISOLATED_BUS, '=') + 1);
	proc_env_free(e);

	unsetenv("AGENT_HOME");
	unsetenv("REDIS_URL");
	unsetenv("SPACE_URL");
	unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_child_environment),
	        cmocka_unit_test(test_control_fake_room_notices),
	        cmocka_unit_test(test_agent_stays_home),
#ifdef GA_HAVE_AGENT_SPACE
	        cmocka_unit_test(test_room_stays_home),
#endif
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
