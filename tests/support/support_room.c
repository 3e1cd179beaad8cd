/*
 * support_room — see support_room.h.
 */
#include "support_room.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support_wait.h"
#include "testutil.h"

/* True once the room exited (reaped without blocking); status set. */
static bool reaped(struct support_room *r)
{
	if (r->proc.pid <= 0 || proc_alive(&r->proc))
		return false;
	r->status = support_exit_code(&r->proc);
	return true;
}

static int spawn(struct support_room *r, char *err, size_t errlen)
{
	unlink(r->port_file);
	char port[32], data[340];
	snprintf(port, sizeof port, "SPACE_PORT=%d", r->port);
	snprintf(data, sizeof data, "SPACE_DATA_DIR=%s", r->data);
	const char *env[SUPPORT_ROOM_ENV_MAX + 6] = {
	        port, r->mdns ? "SPACE_BIND=0.0.0.0" : "SPACE_BIND=127.0.0.1", data,
	        "SPACE_SHUTDOWN_GRACE_MS=200", "SPACE_NAME=spc-test"};
	int ne = 5;
	for (int i = 0; i < r->nextra; i++)
		env[ne++] = r->extra_env[i];
	env[ne] = NULL;
	const char *with_mdns[] = {"--port-file", r->port_file, NULL};
	const char *no_mdns[] = {"--no-mdns", "--port-file", r->port_file, NULL};
	struct proc_opts o = {.binary = "agent-space",
	                      .cwd = r->dir,
	                      .argv = r->mdns ? with_mdns : no_mdns,
	                      .env = env,
	                      .log_path = r->log};
	if (proc_start_opts(&r->proc, &o) != 0) {
		snprintf(err, errlen, "cannot start agent-space (is the target built?)");
		return -1;
	}
	char why[512];
	int p = support_wait_port_file(&r->proc, r->port_file, SUPPORT_ROOM_START_MS, why,
	                               sizeof why);
	if (p > 0) {
		r->port = p;
		return 0;
	}
	reaped(r);
	proc_cleanup(&r->proc); /* nothing left running */
	char *log = tu_read(r->log, NULL);
	snprintf(err, errlen, "agent-space did not start: %s; its log:\n%s", why, log ? log : "");
	free(log);
	return -1;
}

int support_room_start(struct support_room *r, int port, const char *const *env, bool mdns,
                       char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->proc.stdin_fd = -1;
	r->proc.exited = true;
	const char *base = getenv("TMPDIR");
	snprintf(r->dir, sizeof r->dir, "%s/spc-room-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(r->dir)) {
		snprintf(err, errlen, "mkdtemp %s: %s", r->dir, strerror(errno));
		r->dir[0] = '\0';
		return -1;
	}
	snprintf(r->log, sizeof r->log, "%s/server.log", r->dir);
	snprintf(r->port_file, sizeof r->port_file, "%s/port", r->dir);
	snprintf(r->data, sizeof r->data, "%s/data", r->dir);
	for (const char *const *e = env; e && *e; e++) {
		if (r->nextra == SUPPORT_ROOM_ENV_MAX) {
			snprintf(err, errlen, "more than %d extra variables for agent-space",
			         SUPPORT_ROOM_ENV_MAX);
			return -1;
		}
		snprintf(r->extra_env[r->nextra++], sizeof r->extra_env[0], "%s", *e);
	}
	r->port = port;
	r->mdns = mdns;
	return spawn(r, err, errlen);
}

int support_room_restart(struct support_room *r, char *err, size_t errlen)
{
	if (support_room_alive(r)) {
		snprintf(err, errlen, "restart of a room that is still running");
		return -1;
	}
	proc_cleanup(&r->proc);
	return spawn(r, err, errlen);
}

int support_room_host(struct support_room *r, const char *line)
{
	char buf[4096];
	int n = snprintf(buf, sizeof buf, "%s\n", line);
	if (n < 0 || (size_t)n >= sizeof buf)
		return -1;
	return proc_write_stdin(&r->proc, buf);
}

bool support_room_alive(struct support_room *r)
{
	return r->proc.pid > 0 && !reaped(r);
}

int support_room_stop(struct support_room *r, int sig)
{
	if (!support_room_alive(r))
		return r->status;
	proc_signal(&r->proc, sig);
	int64_t deadline = support_now_ms() + 15000;
	while (!reaped(r)) {
		if (support_now_ms() > deadline) {
			proc_signal(&r->proc, SIGKILL);
			proc_wait(&r->proc, 5000);
			r->status = -1;
			break;
		}
		support_sleep_ms(SUPPORT_POLL_MS);
	}
	proc_close_stdin(&r->proc);
	return r->status;
}

char *support_room_log(const struct support_room *r)
{
	return tu_read(r->log, NULL);
}

void support_room_free(struct support_room *r)
{
	if (r->proc.pid > 0)
		proc_cleanup(&r->proc);
	if (r->dir[0])
		tu_rmrf(r->dir);
	memset(r, 0, sizeof *r);
}
