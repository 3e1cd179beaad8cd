/*
 * harness — real processes for the agent-space client tests: an
 * `agent-space` room (start on an ephemeral or a given port, host input on
 * its stdin, stop gently or kill, restart on the same port), general-agent
 * processes with their own homes (both started through tests/support/proc,
 * in a clean environment), and an observer member speaking raw
 * WebSocket (tests/integration/space/wsclient.c) so that what the agent
 * sends is checked by something that is not the code under test.
 *
 * Every process started is registered; th_cleanup_all() (run from each
 * test's teardown and at exit) kills what is still running and removes the
 * temporary directories, so a failing test leaves nothing behind. Children
 * also die with the test process (PR_SET_PDEATHSIG).
 *
 * Waiting helpers poll a real condition until it holds or a timeout
 * passes; none sleeps and hopes.
 */
#ifndef GA_TESTS_INTEGRATION_SPACE_CLIENT_HARNESS_H
#define GA_TESTS_INTEGRATION_SPACE_CLIENT_HARNESS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <sys/types.h>

#include "proc.h"
#include "support_room.h"
#include "tests/integration/space/wsclient.h"

#define TH_WAIT_MS 10000

/* --- the room ------------------------------------------------------------------- */

struct th_room {
	struct support_room sr; /* the process, its directory, data and log */
	int port;               /* sr.port: what the tests connect to */
};

/* support_room_start (see there), failing the test when the room does not
 * come up. port 0 = ephemeral. env: extra "K=V" (at most 8, kept for
 * restarts). mdns: advertise (needs DBUS_SYSTEM_BUS_ADDRESS in env). */
void th_room_start(struct th_room *r, int port, const char *const *env, bool mdns);
/* Starts it again with the same data directory on the same port. */
void th_room_restart(struct th_room *r);
void th_room_host(struct th_room *r, const char *line);
/* SIGTERM and wait for a clean exit (returns its status), or SIGKILL
 * (returns 128+9). */
int th_room_stop(struct th_room *r, int sig);
bool th_room_alive(struct th_room *r);
char *th_room_log(const struct th_room *r); /* caller frees */
/* GET path from the room's HTTP side (its web page's API): the body of a
 * 200 answer parsed as JSON, or NULL (caller frees with cJSON_Delete). */
cJSON *th_room_get_json(const struct th_room *r, const char *path);

/* --- agents --------------------------------------------------------------------- */

struct th_agent {
	struct proc proc; /* output captured in two files in home */
	int status;       /* after exit: exit code or 128+signal */
	char home[256];
};

/* A fresh home with SOUL.md and SELF.md.template from the source tree. */
void th_home_new(char *out, size_t cap);
/* Starts $GA_BUILD_DIR/general-agent --no-terminal [argv] in home with a
 * clean environment plus env ("K=V"). */
void th_agent_start(struct th_agent *a, const char *home, const char *const *argv,
                    const char *const *env);
bool th_agent_wait_log(struct th_agent *a, const char *needle, int timeout_ms);
/* Waits until needle occurs at least n times. */
bool th_agent_wait_count(struct th_agent *a, const char *needle, int n, int timeout_ms);
/* Occurrences of needle in the agent's output so far. */
int th_agent_count(struct th_agent *a, const char *needle);
char *th_agent_log(struct th_agent *a); /* caller frees */
void th_agent_signal(struct th_agent *a, int sig);
/* exit code, 128+signal, or -1 on timeout */
int th_agent_wait_exit(struct th_agent *a, int timeout_ms);
bool th_agent_alive(struct th_agent *a);

/* --- the observer ---------------------------------------------------------------- */

/* Connects to the room and joins as `name`; waits for its own join. */
struct ws_client *th_observe(struct th_room *r, const char *name);
void th_observer_free(struct ws_client *c);
void th_send(struct ws_client *c, const char *json);
/* The next message of `type` (NULL = any) for which pred (may be NULL)
 * holds, or NULL after timeout_ms. Caller frees with cJSON_Delete. Other
 * messages are skipped. */
typedef bool (*th_pred)(const cJSON *msg, const void *arg);
cJSON *th_expect(struct ws_client *c, const char *type, th_pred pred, const void *arg,
                 int timeout_ms);
bool th_pred_name(const cJSON *msg, const void *name);
/* presence containing an agent named arg */
bool th_pred_has_agent(const cJSON *msg, const void *name);
/* the agent entry `name` of a presence, or NULL (borrowed) */
const cJSON *th_presence_agent(const cJSON *presence, const char *name);
int th_presence_count(const cJSON *presence, const char *name);

/* --- misc ------------------------------------------------------------------------ */

/* Registers a process / directory of the test's own for th_cleanup_all. */
void th_track_pid(pid_t pid);
void th_untrack_pid(pid_t pid);
void th_track_dir(const char *dir);
/* Kills every process still running and removes temporary directories. */
void th_cleanup_all(void);
int th_teardown(void **state);
void th_fail_dump(struct th_agent *a, struct th_room *r);
int64_t th_now_ms(void);
void th_msleep(int ms);

#endif
