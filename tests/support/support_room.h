/*
 * support_room — a real `agent-space` room as a child process of a test:
 * on 127.0.0.1 (0.0.0.0 when it advertises over mDNS), an ephemeral or a
 * given port, its own temporary directory holding the data directory, the
 * port file and one log of its stdout and stderr (kept across restarts, so
 * a restarted room's output accumulates). It can be restarted on the same
 * port with the same data (a room that comes back), fed host input on its
 * stdin, stopped gently (SIGTERM, a clean exit expected) or killed.
 *
 * Started through proc (proc.h): a clean environment with the isolation
 * defaults, then SPACE_PORT, SPACE_BIND, SPACE_DATA_DIR,
 * SPACE_SHUTDOWN_GRACE_MS=200, SPACE_NAME=spc-test, then the caller's
 * extra "K=V" (at most SUPPORT_ROOM_ENV_MAX, kept for restarts).
 *
 * Ready means the port file holds the port; a room that exits first is
 * reported with its status and its log, read after the exit was seen
 * (support_wait.h). No cmocka: failures come back as -1 with a sentence in
 * err. Every started room ends with support_room_free (kills it if it
 * still runs, removes the directory). Children die with the test process.
 */
#ifndef GA_TESTS_SUPPORT_SUPPORT_ROOM_H
#define GA_TESTS_SUPPORT_SUPPORT_ROOM_H

#include <stdbool.h>
#include <stddef.h>

#include "proc.h"

#define SUPPORT_ROOM_ENV_MAX  8
#define SUPPORT_ROOM_START_MS 20000 /* a room on a loaded CI machine */

struct support_room {
	struct proc proc;
	int port;
	int status; /* after exit: exit code or 128+signal */
	bool mdns;
	char dir[256];
	char log[320];
	char port_file[320];
	char data[320];
	char extra_env[SUPPORT_ROOM_ENV_MAX][128];
	int nextra;
};

/* port 0 = ephemeral. env: extra "K=V" (NULL-terminated, may be NULL).
 * mdns: advertise (needs a DBUS_SYSTEM_BUS_ADDRESS in env). 0 once it
 * listens, or -1 with err (the room's log included; nothing is left
 * running, the directory stays for support_room_free). */
int support_room_start(struct support_room *r, int port, const char *const *env, bool mdns,
                       char *err, size_t errlen);
/* Starts an exited room again on the same port with the same data. */
int support_room_restart(struct support_room *r, char *err, size_t errlen);
/* Writes line and a newline to the room's stdin (host input). 0 or -1. */
int support_room_host(struct support_room *r, const char *line);
bool support_room_alive(struct support_room *r);
/* Sends sig and waits for the exit (SIGKILL after 15 s, status -1 then);
 * returns the status (exit code or 128+signal). An exited room: its
 * status at once. */
int support_room_stop(struct support_room *r, int sig);
char *support_room_log(const struct support_room *r); /* caller frees */
/* Kills it if it runs, reaps it and removes its directory. */
void support_room_free(struct support_room *r);

#endif
