/*
 * Readiness as the units declare it: a unit says Type=notify exactly when
 * its program sends READY=1 to $NOTIFY_SOCKET (common/sdnotify.h), and
 * Type=exec otherwise. A Type=notify unit whose program never notifies is
 * killed at TimeoutStartSec; a program that notifies under Type=exec gives
 * a readiness nobody uses. general-agent (a first start that exits once
 * idle) and agent-space (until it listens, then SIGTERM) run from the
 * build with NOTIFY_SOCKET naming a datagram socket of this test, and the
 * unit templates in contrib/systemd are read for their Type=.
 * Each run has its own home, room URL (nothing listens on 127.0.0.1:1),
 * port (0: the OS picks) and data directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proc.h"
#include "testutil.h"

#define WAIT_MS  20000
#define MSGS_MAX 4096

struct notify_sock {
	char *dir;
	char path[256];
	char env[300]; /* "NOTIFY_SOCKET=<path>" */
	int fd;
	char msgs[MSGS_MAX]; /* every datagram received, newline-separated */
	size_t len;
};

static void notify_open(struct notify_sock *n)
{
	memset(n, 0, sizeof *n);
	n->dir = tu_tempdir();
	snprintf(n->path, sizeof n->path, "%s/notify", n->dir);
	snprintf(n->env, sizeof n->env, "NOTIFY_SOCKET=%s", n->path);
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(n->fd >= 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	assert_true(strlen(n->path) < sizeof a.sun_path);
	strcpy(a.sun_path, n->path);
	assert_int_equal(bind(n->fd, (struct sockaddr *)&a, sizeof a), 0);
}

/* Collects the datagrams that arrive within wait_ms (0: those queued). */
static void notify_drain(struct notify_sock *n, int wait_ms)
{
	for (;;) {
		struct pollfd p = {.fd = n->fd, .events = POLLIN};
		if (poll(&p, 1, wait_ms) <= 0)
			return;
		char buf[1024];
		ssize_t got = recv(n->fd, buf, sizeof buf, MSG_DONTWAIT);
		if (got <= 0)
			return;
		if (n->len + (size_t)got + 2 <= sizeof n->msgs) {
			memcpy(n->msgs + n->len, buf, (size_t)got);
			n->len += (size_t)got;
			n->msgs[n->len++] = '\n';
			n->msgs[n->len] = '\0';
		}
		wait_ms = 0;
	}
}

static bool notify_saw(const struct notify_sock *n, const char *line)
{
	size_t l = strlen(line);
	for (const char *p = n->msgs; (p = strstr(p, line)); p += l)
		if ((p == n->msgs || p[-1] == '\n') && (p[l] == '\n' || p[l] == '\0'))
			return true;
	return false;
}

static void notify_close(struct notify_sock *n)
{
	close(n->fd);
	tu_rmrf(n->dir);
	free(n->dir);
}

/* The Type= of contrib/systemd/<unit>.in: "notify", "exec", … */
static void unit_type(const char *unit, char *out, size_t cap)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/contrib/systemd", getenv("GA_SOURCE_DIR"));
	char name[128];
	snprintf(name, sizeof name, "%s.in", unit);
	char *text = tu_read(dir, name);
	if (!text)
		fail_msg("cannot read %s/%s", dir, name);
	const char *t = strstr(text, "\nType=");
	if (!t)
		fail_msg("%s/%s has no Type= line", dir, name);
	t += 6;
	size_t len = strcspn(t, "\n");
	snprintf(out, cap, "%.*s", (int)len, t);
	free(text);
}

static void assert_type_matches(const char *unit, bool ready)
{
	char type[32];
	unit_type(unit, type, sizeof type);
	const char *want = ready ? "notify" : "exec";
	if (strcmp(type, want) != 0)
		fail_msg("%s says Type=%s but its program %s READY=1: it should say Type=%s", unit,
		         type, ready ? "sends" : "does not send", want);
}

static void test_general_agent(void **state)
{
	(void)state;
	struct notify_sock n;
	notify_open(&n);
	char *home = home_new();
	const char *const env[] = {"AGENT_NAME=Ada", "SPACE_URL=ws://127.0.0.1:1",
	                           "GA_EXIT_WHEN_IDLE=1", n.env, NULL};
	struct proc p;
	assert_int_equal(proc_start(&p, home, (const char *const[]){"--no-terminal", NULL}, env),
	                 0);
	int rc = proc_wait(&p, WAIT_MS);
	if (rc != 0) {
		char *e = proc_stderr(&p);
		proc_cleanup(&p);
		fail_msg("general-agent exited %d:\n%s", rc, e ? e : "");
	}
	proc_cleanup(&p);
	notify_drain(&n, 0);
	bool ready = notify_saw(&n, "READY=1");
	assert_type_matches("general-agent.service", ready);
	assert_type_matches("general-agent@.service", ready);
	/* A daemon that says it is ready also says when it stops. */
	if (ready)
		assert_true(notify_saw(&n, "STOPPING=1"));
	home_remove(home);
	notify_close(&n);
}

#ifdef GA_HAVE_AGENT_SPACE
static void test_agent_space(void **state)
{
	(void)state;
	struct notify_sock n;
	notify_open(&n);
	char data[512], env_data[600];
	snprintf(data, sizeof data, "%s/data", n.dir);
	snprintf(env_data, sizeof env_data, "SPACE_DATA_DIR=%s", data);
	const char *const env[] = {"SPACE_PORT=0",
	                           "SPACE_BIND=127.0.0.1",
	                           "SPACE_NAME=readiness-test",
	                           "SPACE_SHUTDOWN_GRACE_MS=0",
	                           env_data,
	                           n.env,
	                           NULL};
	struct proc p;
	assert_int_equal(proc_start_bin(&p, "agent-space", n.dir,
	                                (const char *const[]){"--no-mdns", NULL}, env),
	                 0);
	if (!proc_wait_output(&p, "listening", WAIT_MS)) {
		char *e = proc_stderr(&p);
		proc_cleanup(&p);
		fail_msg("agent-space did not listen:\n%s", e ? e : "");
	}
	notify_drain(&n, 2000);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
	notify_drain(&n, 0);
	assert_type_matches("agent-space.service", notify_saw(&n, "READY=1"));
	notify_close(&n);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_general_agent),
#ifdef GA_HAVE_AGENT_SPACE
	        cmocka_unit_test(test_agent_space),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
