#include "proc.h"

#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static const char *const KEEP[] = {"PATH", "HOME", "TMPDIR", "ASAN_OPTIONS", "UBSAN_OPTIONS",
				   "LSAN_OPTIONS", "LANG", NULL};

int proc_start(struct proc *p, const char *home, const char *const *argv, const char *const *env)
{
	memset(p, 0, sizeof *p);
	p->stdin_fd = -1;
	snprintf(p->out_path, sizeof p->out_path, "%s/.proc-out-XXXXXX", home);
	snprintf(p->err_path, sizeof p->err_path, "%s/.proc-err-XXXXXX", home);
	int ofd = mkstemp(p->out_path);
	int efd = mkstemp(p->err_path);
	int in[2];
	if (ofd < 0 || efd < 0 || pipe(in) != 0)
		return -1;
	char bin[1024];
	snprintf(bin, sizeof bin, "%s/general-agent", getenv("GA_BUILD_DIR"));

	char *envv[64];
	int ne = 0;
	for (const char *const *k = KEEP; *k; k++) {
		const char *v = getenv(*k);
		if (v) {
			size_t n = strlen(*k) + strlen(v) + 2;
			envv[ne] = malloc(n);
			snprintf(envv[ne], n, "%s=%s", *k, v);
			ne++;
		}
	}
	for (const char *const *e = env; e && *e && ne < 62; e++)
		envv[ne++] = strdup(*e);
	envv[ne] = NULL;

	const char *args[32];
	int na = 0;
	args[na++] = bin;
	for (const char *const *a = argv; a && *a && na < 31; a++)
		args[na++] = *a;
	args[na] = NULL;

	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(ofd, 1);
		dup2(efd, 2);
		close(in[1]);
		if (chdir(home) != 0)
			_exit(127);
		execve(bin, (char *const *)args, envv);
		_exit(127);
	}
	for (int i = 0; i < ne; i++)
		free(envv[i]);
	close(in[0]);
	close(ofd);
	close(efd);
	p->pid = pid;
	p->stdin_fd = in[1];
	return pid > 0 ? 0 : -1;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int proc_wait(struct proc *p, int timeout_ms)
{
	if (p->exited)
		goto done;
	long end = now_ms() + timeout_ms;
	for (;;) {
		int st;
		pid_t r = waitpid(p->pid, &st, WNOHANG);
		if (r == p->pid) {
			p->status = st;
			p->exited = true;
			break;
		}
		if (now_ms() > end)
			return -1;
		usleep(10000);
	}
done:
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
	if (!p->exited)
		kill(p->pid, sig);
}

void proc_write_stdin(struct proc *p, const char *text)
{
	if (p->stdin_fd >= 0) {
		ssize_t n = write(p->stdin_fd, text, strlen(text));
		(void)n;
	}
}

void proc_close_stdin(struct proc *p)
{
	if (p->stdin_fd >= 0)
		close(p->stdin_fd);
	p->stdin_fd = -1;
}

void proc_cleanup(struct proc *p)
{
	if (p->pid > 0 && !p->exited) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &p->status, 0);
		p->exited = true;
	}
	proc_close_stdin(p);
	unlink(p->out_path);
	unlink(p->err_path);
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
