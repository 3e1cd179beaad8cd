/*
 * support_redis — a real redis-server as a child process of a test, on
 * 127.0.0.1 and a free port, with no persistence, in its own temporary
 * directory; optionally with --requirepass. It can be killed and started
 * again on the same port (a backend's reconnect), or stopped with SIGSTOP
 * (a server that does not answer) and resumed.
 *
 * Ready means it answers PING (after AUTH when it has a password) over a
 * plain socket: no client library of the code under test is involved. A
 * server that exits before that is reported with its exit status and its
 * output (redis logs to stdout), read after the exit was seen.
 *
 * Every struct support_redis ends with support_redis_free (kills what
 * still runs, removes the directory). Children die with the test process.
 */
#ifndef GA_TESTS_SUPPORT_SUPPORT_REDIS_H
#define GA_TESTS_SUPPORT_SUPPORT_REDIS_H

#include <stdbool.h>
#include <stddef.h>

#include "proc.h"

struct support_redis {
	struct proc proc;
	bool running;
	int port;
	char *dir;            /* its working directory (tu_tempdir), kept across restarts */
	const char *password; /* NULL = none; borrowed */
};

/* The redis-server binary (/usr/bin/redis-server, else the first on PATH),
 * or NULL when it is not installed (scripts/bootstrap.sh installs it).
 * Static string. */
const char *support_redis_binary(void);

/* Starts it. On the first start (r->port 0) it picks a free port; a later
 * start after support_redis_kill uses the same port and directory. 0 once
 * it answers PING, or -1 with err naming why (nothing is left running). */
int support_redis_start(struct support_redis *r, const char *password, char *err, size_t errlen);

/* SIGKILL (after SIGCONT, in case it was stopped) and reap. */
void support_redis_kill(struct support_redis *r);

/* Kills it if it runs and removes its directory. */
void support_redis_free(struct support_redis *r);

#endif
