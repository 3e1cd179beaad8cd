#include "proc.h"

#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The whole file at path (caller frees), or NULL. */
static char *slurp(const char *path)
{
	return tu_read(path, NULL);
}

static void copy_file(const char *from, const char *to)
{
	char *c = slurp(from);
	if (!c) {
		fprintf(stderr, "proc: cannot read %s\n", from);
		abort();
	}
	FILE *f = fopen(to, "wb");
	fputs(c, f);
	fclose(f);
	free(c);
}

char *home_new(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[512];
	snprintf(tmpl, sizeof tmpl, "%s/ga-home-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpl))
		abort();
	const char *src = getenv("GA_SOURCE_DIR");
	char a[1024], b[1024];
	snprintf(a, sizeof a, "%s/SOUL.md", src);
	snprintf(b, sizeof b, "%s/SOUL.md", tmpl);
	copy_file(a, b);
	snprintf(a, sizeof a, "%s/SELF.md.template", src);
	snprintf(b, sizeof b, "%s/SELF.md.template", tmpl);
	copy_file(a, b);
	return strdup(tmpl);
}

void home_remove(char *home)
{
	tu_rmrf(home);
	free(home);
}

void home_write(const char *home, const char *name, const char *content)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", home, name);
	FILE *f = fopen(p, "wb");
	fputs(content, f);
	fclose(f);
}

char *home_read(const char *home, const char *name)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", home, name);
	return slurp(p);
}

static const char *const KEEP[] = {"PATH",          "HOME",         "TMPDIR", "ASAN_OPTIONS",
                                   "UBSAN_OPTIONS", "LSAN_OPTIONS", "LANG",   NULL};

/* Removes the entry named by key (a "K" or "K=V" string) from envv. */
static void env_del(char **envv, int *ne, const char *key)
{
	const char *eq = strchr(key, '=');
	size_t klen = eq ? (size_t)(eq - key) : strlen(key);
	for (int i = 0; i < *ne; i++)
		if (strncmp(envv[i], key, klen) == 0 && envv[i][klen] == '=') {
			free(envv[i]);
			envv[i] = envv[--*ne];
			return;
		}
}

/* Sets "K=V" in envv (replacing an entry with the same name); a bare "K"
 * removes K. -1 if full. */
static int env_put(char **envv, int *ne, const char *kv)
{
	if (!strchr(kv, '=')) {
		env_del(envv, ne, kv);
		return 0;
	}
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);
	for (int i = 0; i < *ne; i++)
		if (strncmp(envv[i], kv, klen) == 0 && envv[i][klen] == '=') {
			free(envv[i]);
			envv[i] = strdup(kv);
			return 0;
		}
	if (*ne >= PROC_MAX_ENV)
		return -1;
	envv[(*ne)++] = strdup(kv);
	return 0;
}

/* --- isolation from the user's world ------------------------------------------------- */

#define ISOLATION_MAX    8
#define ISOLATION_KV_MAX 96

/* True if the caller's env names key ("K=V" sets it, a bare "K" unsets it:
 * either way the caller decided). */
static bool env_names(const char *const *env, const char *key)
{
	size_t klen = strlen(key);
	for (const char *const *e = env; e && *e; e++)
		if (strncmp(*e, key, klen) == 0 && ((*e)[klen] == '=' || (*e)[klen] == '\0'))
			return true;
	return false;
}

/* True if the .env file at path assigns key (a line "KEY=" or
 * "export KEY=", leading blanks allowed). */
static bool file_sets(const char *path, const char *key)
{
	char *c = path ? slurp(path) : NULL;
	if (!c)
		return false;
	size_t klen = strlen(key);
	bool hit = false;
	for (char *line = c; line && *line && !hit;) {
		char *nl = strchr(line, '\n');
		const char *q = line;
		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, "export ", 7) == 0)
			q += 7;
		while (*q == ' ' || *q == '\t')
			q++;
		hit = strncmp(q, key, klen) == 0 && (q[klen] == '=' || q[klen] == ' ');
		line = nl ? nl + 1 : NULL;
	}
	free(c);
	return hit;
}

/* The .env files the child may read: <cwd>/.env, --env FILE, --home
 * DIR/.env and AGENT_HOME/.env (from the caller's env). At most 4. */
static int env_files(const struct proc_opts *o, char files[4][1100])
{
	int n = 0;
	snprintf(files[n++], sizeof files[0], "%s/.env", o->cwd);
	for (const char *const *a = o->argv; a && a[0] && a[1] && n < 4; a++) {
		if (strcmp(a[0], "--env") == 0)
			snprintf(files[n++], sizeof files[0], "%s", a[1]);
		else if (strcmp(a[0], "--home") == 0)
			snprintf(files[n++], sizeof files[0], "%s/.env", a[1]);
	}
	for (const char *const *e = o->env; e && *e && n < 4; e++)
		if (strncmp(*e, "AGENT_HOME=", 11) == 0)
			snprintf(files[n++], sizeof files[0], "%s/.env", *e + 11);
	return n;
}

/*
 * What every child gets unless the test says otherwise (in its env, or in
 * the .env the child reads): nothing that can reach a room, a name or a
 * port a user of this machine may be using.
 *   all:           DBUS_SYSTEM_BUS_ADDRESS at a bus that does not exist, so
 *                  no mDNS is browsed or published on the machine's avahi
 *                  (a test that needs mDNS passes its private bus);
 *   general-agent: SPACE_URL at a closed loopback port, mDNS discovery off,
 *                  and the "localhost" fallback at the same closed port
 *                  (never ws://localhost:7777, the user's room);
 *   agent-space:   an ephemeral port on 127.0.0.1 and a room name of its
 *                  own (never 7777, never the default "agent-space").
 * The home is the caller's cwd, a fresh temp directory (home_new).
 */
static int isolation_env(const struct proc_opts *o, const char *bin,
                         char out[ISOLATION_MAX][ISOLATION_KV_MAX])
{
	const char *base = strrchr(bin, '/');
	base = base ? base + 1 : bin;
	char name[64];
	snprintf(name, sizeof name, "SPACE_NAME=ga-test-%d", (int)getpid());
	/* The dashboard on a port of the system's choosing: never the user's
	 * 7780, never two tests on one port. */
	const char *ga[] = {PROC_ISOLATED_SPACE_URL,      "GA_SPACE_MDNS=0",
	                    PROC_ISOLATED_LOCALHOST_URL,  PROC_ISOLATED_BUS,
	                    "DASHBOARD_ADDR=127.0.0.1:0", NULL};
	const char *space[] = {"SPACE_PORT=0", "SPACE_BIND=127.0.0.1", name, PROC_ISOLATED_BUS,
	                       NULL};
	const char *other[] = {PROC_ISOLATED_BUS, NULL};
	const char *const *want = strcmp(base, "general-agent") == 0 ? ga
	                          : strcmp(base, "agent-space") == 0 ? space
	                                                             : other;
	char files[4][1100];
	int nf = env_files(o, files);
	int n = 0;
	for (const char *const *w = want; *w && n < ISOLATION_MAX; w++) {
		char key[64];
		snprintf(key, sizeof key, "%.*s", (int)(strchr(*w, '=') - *w), *w);
		bool set = env_names(o->env, key);
		for (int f = 0; f < nf && !set; f++)
			set = file_sets(files[f], key);
		if (!set)
			snprintf(out[n++], ISOLATION_KV_MAX, "%s", *w);
	}
	return n;
}

/* The child's environment (see proc.h) into envv[0..*ne), NULL-terminated;
 * -1 if there are more than PROC_MAX_ENV variables (what was built is
 * still in envv, for the caller to free). */
static int env_build(const struct proc_opts *o, char **envv, int *ne)
{
	bool ok = true;
	*ne = 0;
	for (const char *const *k = KEEP; *k; k++) {
		const char *v = getenv(*k);
		if (v) {
			char kv[4096];
			snprintf(kv, sizeof kv, "%s=%s", *k, v);
			ok = ok && env_put(envv, ne, kv) == 0;
		}
	}
	char isolation[ISOLATION_MAX][ISOLATION_KV_MAX];
	int ni = isolation_env(o, o->binary, isolation);
	for (int i = 0; i < ni; i++)
		ok = ok && env_put(envv, ne, isolation[i]) == 0;
	for (const char *const *e = o->env; e && *e; e++)
		ok = ok && env_put(envv, ne, *e) == 0;
	envv[*ne] = NULL;
	return ok ? 0 : -1;
}

char **proc_env_new(const struct proc_opts *o)
{
	char **envv = calloc(PROC_MAX_ENV + 1, sizeof *envv);
	if (!envv)
		abort();
	int ne = 0;
	if (env_build(o, envv, &ne) != 0) {
		fprintf(stderr, "proc: more than %d variables for %s\n", PROC_MAX_ENV, o->binary);
		proc_env_free(envv);
		return NULL;
	}
	return envv;
}

void proc_env_free(char **envv)
{
	for (char **e = envv; e && *e; e++)
		free(*e);
	free(envv);
}

int proc_start_opts(struct proc *p, const struct proc_opts *o)
{
	memset(p, 0, sizeof *p);
	p->pid = -1;
	p->stdin_fd = -1;
	p->exited = true; /* until a child runs */

	char bin[1024];
	if (strchr(o->binary, '/')) {
		snprintf(bin, sizeof bin, "%s", o->binary);
	} else {
		const char *bd = getenv("GA_BUILD_DIR");
		snprintf(bin, sizeof bin, "%s/%s", bd && *bd ? bd : ".", o->binary);
	}
	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "proc: %s is missing (build that target)\n", bin);
		return -1;
	}

	char *envv[PROC_MAX_ENV + 1];
	int ne = 0;
	bool ok = env_build(o, envv, &ne) == 0;

	const char *args[PROC_MAX_ARGS + 1];
	int na = 0;
	args[na++] = bin;
	for (const char *const *a = o->argv; a && *a; a++) {
		if (na >= PROC_MAX_ARGS) {
			ok = false;
			break;
		}
		args[na++] = *a;
	}
	args[na] = NULL;

	int ofd = -1, efd = -1, in[2] = {-1, -1};
	if (ok && o->log_path) {
		snprintf(p->out_path, sizeof p->out_path, "%s", o->log_path);
		snprintf(p->err_path, sizeof p->err_path, "%s", o->log_path);
		p->keep_capture = true;
		ofd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		efd = ofd >= 0 ? dup(ofd) : -1;
	} else if (ok) {
		snprintf(p->out_path, sizeof p->out_path, "%s/.proc-out-XXXXXX", o->cwd);
		snprintf(p->err_path, sizeof p->err_path, "%s/.proc-err-XXXXXX", o->cwd);
		ofd = mkostemp(p->out_path, O_CLOEXEC);
		efd = mkostemp(p->err_path, O_CLOEXEC);
	}
	if (!ok)
		fprintf(stderr, "proc: more than %d variables or %d arguments for %s\n",
		        PROC_MAX_ENV, PROC_MAX_ARGS, bin);
	if (ok && (ofd < 0 || efd < 0 || pipe2(in, O_CLOEXEC) != 0)) {
		fprintf(stderr, "proc: cannot set up output files or stdin for %s: %s\n", bin,
		        strerror(errno));
		ok = false;
	}

	pid_t pid = -1;
	if (ok) {
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			/* dup2 clears close-on-exec on the copies. */
			dup2(in[0], 0);
			dup2(ofd, 1);
			dup2(efd, 2);
			if (o->as_nobody && geteuid() == 0 &&
			    (setgroups(0, NULL) != 0 || setgid(PROC_NOBODY) != 0 ||
			     setuid(PROC_NOBODY) != 0))
				_exit(125);
			if (chdir(o->cwd) != 0)
				_exit(126);
			execve(bin, (char *const *)args, envv);
			_exit(127);
		}
	}
	for (int i = 0; i < ne; i++)
		free(envv[i]);
	if (in[0] >= 0)
		close(in[0]);
	if (ofd >= 0)
		close(ofd);
	if (efd >= 0)
		close(efd);
	if (pid <= 0) {
		if (in[1] >= 0)
			close(in[1]);
		if (!p->keep_capture) {
			if (ofd >= 0)
				unlink(p->out_path);
			if (efd >= 0)
				unlink(p->err_path);
		}
		return -1;
	}
	p->pid = pid;
	p->exited = false;
	p->stdin_fd = in[1];
	return 0;
}

int proc_start_bin(struct proc *p, const char *binary, const char *cwd, const char *const *argv,
                   const char *const *env)
{
	struct proc_opts o = {.binary = binary, .cwd = cwd, .argv = argv, .env = env};
	return proc_start_opts(p, &o);
}

int proc_start(struct proc *p, const char *home, const char *const *argv, const char *const *env)
{
	return proc_start_bin(p, "general-agent", home, argv, env);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

bool proc_alive(struct proc *p)
{
	if (p->exited)
		return false;
	int st;
	pid_t r = waitpid(p->pid, &st, WNOHANG);
	if (r == p->pid) {
		p->status = st;
		p->exited = true;
		return false;
	}
	if (r < 0 && errno == ECHILD) {
		/* Reaped by someone else (a harness's kill-everything cleanup):
		 * gone, status unknown, reported as killed by SIGKILL. */
		p->status = SIGKILL;
		p->exited = true;
		return false;
	}
	return true;
}

int proc_wait(struct proc *p, int timeout_ms)
{
	long end = now_ms() + timeout_ms;
	while (proc_alive(p)) {
		if (now_ms() > end)
			return -1;
		usleep(10000);
	}
	if (WIFEXITED(p->status))
		return WEXITSTATUS(p->status);
	return 128 + WTERMSIG(p->status);
}

bool proc_wait_output(struct proc *p, const char *needle, int timeout_ms)
{
	long end = now_ms() + timeout_ms;
	for (;;) {
		char *e = slurp(p->err_path);
		char *o = slurp(p->out_path);
		bool hit = (e && strstr(e, needle)) || (o && strstr(o, needle));
		free(e);
		free(o);
		if (hit)
			return true;
		if (now_ms() > end)
			return false;
		usleep(10000);
	}
}

char *proc_stderr(struct proc *p)
{
	return slurp(p->err_path);
}

char *proc_stdout(struct proc *p)
{
	return slurp(p->out_path);
}

void proc_signal(struct proc *p, int sig)
{
	if (proc_alive(p))
		kill(p->pid, sig);
}

int proc_write_stdin(struct proc *p, const char *text)
{
	signal(SIGPIPE, SIG_IGN);
	size_t n = strlen(text), off = 0;
	while (p->stdin_fd >= 0 && off < n) {
		ssize_t w = write(p->stdin_fd, text + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return off == n ? 0 : -1;
}

void proc_close_stdin(struct proc *p)
{
	if (p->stdin_fd >= 0)
		close(p->stdin_fd);
	p->stdin_fd = -1;
}

void proc_cleanup(struct proc *p)
{
	/* proc_alive, not just !exited: a process someone else reaped (a
	 * harness's kill-everything cleanup) is gone, and its pid may already
	 * be another process's */
	if (p->pid > 0 && proc_alive(p)) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &p->status, 0);
		p->exited = true;
	}
	proc_close_stdin(p);
	if (!p->keep_capture) {
		if (p->out_path[0])
			unlink(p->out_path);
		if (p->err_path[0])
			unlink(p->err_path);
	}
}

int proc_run(const char *home, const char *const *argv, const char *const *env, char **out,
             char **err)
{
	struct proc p;
	if (proc_start(&p, home, argv, env) != 0)
		return -1;
	proc_close_stdin(&p);
	int rc = proc_wait(&p, 10000);
	if (out)
		*out = proc_stdout(&p);
	if (err)
		*err = proc_stderr(&p);
	proc_cleanup(&p);
	return rc;
}
