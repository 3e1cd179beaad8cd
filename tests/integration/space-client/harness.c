/*
 * harness — see harness.h.
 */
#include "tests/integration/space-client/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support_wait.h"
#include "testutil.h"

#define MAX_LIVE 32

static pid_t live_pids[MAX_LIVE];
static char live_dirs[MAX_LIVE][256];

int64_t th_now_ms(void)
{
	return ws_now_ms();
}

void th_msleep(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void th_track_pid(pid_t pid)
{
	for (int i = 0; i < MAX_LIVE; i++)
		if (!live_pids[i]) {
			live_pids[i] = pid;
			return;
		}
}

void th_untrack_pid(pid_t pid)
{
	for (int i = 0; i < MAX_LIVE; i++)
		if (live_pids[i] == pid)
			live_pids[i] = 0;
}

void th_track_dir(const char *d)
{
	for (int i = 0; i < MAX_LIVE; i++)
		if (!live_dirs[i][0]) {
			snprintf(live_dirs[i], sizeof live_dirs[i], "%s", d);
			return;
		}
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void th_cleanup_all(void)
{
	for (int i = 0; i < MAX_LIVE; i++) {
		/* Only a child of ours not reaped yet (waitpid WNOHANG says 0):
		 * one reaped elsewhere (proc_wait, proc_cleanup) is gone and its
		 * pid may already be another process's; one that has exited is
		 * reaped here. */
		if (live_pids[i] > 0 && waitpid(live_pids[i], NULL, WNOHANG) == 0) {
			kill(live_pids[i], SIGKILL);
			waitpid(live_pids[i], NULL, 0);
		}
		live_pids[i] = 0;
	}
	for (int i = 0; i < MAX_LIVE; i++) {
		if (live_dirs[i][0])
			nftw(live_dirs[i], rm_one, 16, FTW_DEPTH | FTW_PHYS);
		live_dirs[i][0] = '\0';
	}
}

int th_teardown(void **state)
{
	(void)state;
	th_cleanup_all();
	return 0;
}

static void mktemp_dir(char *out, size_t cap, const char *prefix)
{
	const char *base = getenv("TMPDIR");
	snprintf(out, cap, "%s/%s-XXXXXX", base && *base ? base : "/tmp", prefix);
	if (!mkdtemp(out))
		fail_msg("mkdtemp %s: %s", out, strerror(errno));
	th_track_dir(out);
}

/* True once the process has exited (reaped without blocking); its status
 * then holds the exit code or 128+signal. */
static bool reap(struct proc *p, int *status)
{
	if (proc_alive(p))
		return false;
	*status = support_exit_code(p);
	th_untrack_pid(p->pid);
	return true;
}

/* --- the room ------------------------------------------------------------------- */

/* The room is tests/support/support_room; these fail the test instead of
 * returning -1, and register its process and directory for th_cleanup_all. */

void th_room_start(struct th_room *r, int port, const char *const *env, bool mdns)
{
	memset(r, 0, sizeof *r);
	char err[8192];
	int rc = support_room_start(&r->sr, port, env, mdns, err, sizeof err);
	if (r->sr.dir[0])
		th_track_dir(r->sr.dir);
	if (rc != 0)
		fail_msg("%s", err);
	th_track_pid(r->sr.proc.pid);
	r->port = r->sr.port;
}

void th_room_restart(struct th_room *r)
{
	char err[8192];
	th_untrack_pid(r->sr.proc.pid);
	if (support_room_restart(&r->sr, err, sizeof err) != 0)
		fail_msg("%s", err);
	th_track_pid(r->sr.proc.pid);
	r->port = r->sr.port;
}

void th_room_host(struct th_room *r, const char *line)
{
	if (support_room_host(&r->sr, line) != 0)
		fail_msg("host input: %s", strerror(errno));
}

bool th_room_alive(struct th_room *r)
{
	if (support_room_alive(&r->sr))
		return true;
	th_untrack_pid(r->sr.proc.pid);
	return false;
}

int th_room_stop(struct th_room *r, int sig)
{
	int status = support_room_stop(&r->sr, sig);
	th_untrack_pid(r->sr.proc.pid);
	return status;
}

char *th_room_log(const struct th_room *r)
{
	return support_room_log(&r->sr);
}

cJSON *th_room_get_json(const struct th_room *r, const char *path)
{
	char req[512];
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
	         path);
	char *resp = NULL;
	int status = ws_http("127.0.0.1", r->port, req, TH_WAIT_MS, &resp);
	const char *body = resp ? strstr(resp, "\r\n\r\n") : NULL;
	cJSON *j = status == 200 && body ? cJSON_Parse(body + 4) : NULL;
	free(resp);
	return j;
}

/* --- agents --------------------------------------------------------------------- */

static void copy_file(const char *from, const char *to)
{
	char *c = tu_read(from, NULL);
	if (!c)
		fail_msg("cannot read %s", from);
	FILE *f = fopen(to, "wb");
	fputs(c, f);
	fclose(f);
	free(c);
}

void th_home_new(char *out, size_t cap)
{
	mktemp_dir(out, cap, "spc-home");
	const char *src = getenv("GA_SOURCE_DIR");
	char a[700], b[700];
	snprintf(a, sizeof a, "%s/SOUL.md", src);
	snprintf(b, sizeof b, "%s/SOUL.md", out);
	copy_file(a, b);
	snprintf(a, sizeof a, "%s/SELF.md.template", src);
	snprintf(b, sizeof b, "%s/SELF.md.template", out);
	copy_file(a, b);
}

void th_agent_start(struct th_agent *a, const char *home, const char *const *argv,
                    const char *const *env)
{
	memset(a, 0, sizeof *a);
	snprintf(a->home, sizeof a->home, "%s", home);
	const char *args[PROC_MAX_ARGS];
	int na = 0;
	args[na++] = "--no-terminal";
	for (const char *const *p = argv; p && *p; p++) {
		if (na >= PROC_MAX_ARGS - 1)
			fail_msg("too many arguments for general-agent");
		args[na++] = *p;
	}
	args[na] = NULL;
	if (proc_start(&a->proc, home, args, env) != 0)
		fail_msg("cannot start general-agent in %s", home);
	/* The agent reads no terminal: its stdin is at end of file. */
	proc_close_stdin(&a->proc);
	th_track_pid(a->proc.pid);
}

char *th_agent_log(struct th_agent *a)
{
	char *e = proc_stderr(&a->proc), *o = proc_stdout(&a->proc);
	size_t n = (e ? strlen(e) : 0) + (o ? strlen(o) : 0) + 1;
	char *all = malloc(n);
	snprintf(all, n, "%s%s", e ? e : "", o ? o : "");
	free(e);
	free(o);
	return all;
}

int th_agent_count(struct th_agent *a, const char *needle)
{
	char *log = th_agent_log(a);
	int n = 0;
	for (const char *p = log; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	free(log);
	return n;
}

bool th_agent_wait_log(struct th_agent *a, const char *needle, int timeout_ms)
{
	return th_agent_wait_count(a, needle, 1, timeout_ms);
}

bool th_agent_wait_count(struct th_agent *a, const char *needle, int n, int timeout_ms)
{
	int64_t end = th_now_ms() + timeout_ms;
	for (;;) {
		if (th_agent_count(a, needle) >= n)
			return true;
		if (th_now_ms() > end)
			return false;
		th_msleep(10);
	}
}

void th_agent_signal(struct th_agent *a, int sig)
{
	if (th_agent_alive(a))
		proc_signal(&a->proc, sig);
}

bool th_agent_alive(struct th_agent *a)
{
	return a->proc.pid > 0 && !reap(&a->proc, &a->status);
}

int th_agent_wait_exit(struct th_agent *a, int timeout_ms)
{
	int64_t end = th_now_ms() + timeout_ms;
	while (!reap(&a->proc, &a->status)) {
		if (th_now_ms() > end)
			return -1;
		th_msleep(10);
	}
	return a->status;
}

void th_fail_dump(struct th_agent *a, struct th_room *r)
{
	if (a) {
		char *l = th_agent_log(a);
		fprintf(stderr, "---- general-agent output (%s) ----\n%s\n", a->home, l);
		free(l);
	}
	if (r) {
		char *l = th_room_log(r);
		fprintf(stderr, "---- agent-space output ----\n%s\n", l ? l : "");
		free(l);
	}
}

/* --- the observer ---------------------------------------------------------------- */

void th_send(struct ws_client *c, const char *json)
{
	if (ws_send_text(c, json) != 0)
		fail_msg("observer send failed: %s", json);
}

cJSON *th_expect(struct ws_client *c, const char *type, th_pred pred, const void *arg,
                 int timeout_ms)
{
	int64_t end = th_now_ms() + timeout_ms;
	for (;;) {
		int64_t left = end - th_now_ms();
		if (left <= 0)
			return NULL;
		struct ws_msg m;
		int rc = ws_recv(c, &m, (int)left);
		if (rc != WS_RECV_MSG)
			return NULL;
		cJSON *v = cJSON_ParseWithLength(m.data, m.len);
		free(m.data);
		if (!v)
			continue;
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "type"));
		if ((!type || (t && strcmp(t, type) == 0)) && (!pred || pred(v, arg)))
			return v;
		cJSON_Delete(v);
	}
}

bool th_pred_name(const cJSON *msg, const void *name)
{
	const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "name"));
	return n && strcmp(n, name) == 0;
}

const cJSON *th_presence_agent(const cJSON *presence, const char *name)
{
	const cJSON *a;
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(presence, "agents"))
	{
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "name"));
		if (n && strcmp(n, name) == 0)
			return a;
	}
	return NULL;
}

int th_presence_count(const cJSON *presence, const char *name)
{
	int k = 0;
	const cJSON *a;
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(presence, "agents"))
	{
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "name"));
		if (n && strcmp(n, name) == 0)
			k++;
	}
	return k;
}

bool th_pred_has_agent(const cJSON *msg, const void *name)
{
	return th_presence_agent(msg, name) != NULL;
}

struct ws_client *th_observe(struct th_room *r, const char *name)
{
	struct ws_client *c = ws_connect("127.0.0.1", r->port, TH_WAIT_MS);
	if (!c)
		fail_msg("observer cannot connect to port %d", r->port);
	char join[256];
	snprintf(join, sizeof join,
	         "{\"type\":\"join\",\"name\":\"%s\",\"id\":\"%s-obs\",\"version\":\"1.0.0\"}",
	         name, name);
	th_send(c, join);
	cJSON *j = th_expect(c, "join", th_pred_name, name, TH_WAIT_MS);
	if (!j)
		fail_msg("observer %s was not let in", name);
	cJSON_Delete(j);
	/* the joiner's second presence ends its join sequence (§3.3) */
	cJSON *p = th_expect(c, "history_response", NULL, NULL, TH_WAIT_MS);
	cJSON_Delete(p);
	p = th_expect(c, "presence", NULL, NULL, TH_WAIT_MS);
	cJSON_Delete(p);
	return c;
}

void th_observer_free(struct ws_client *c)
{
	ws_free(c);
}
