/*
 * home — loading the agent home: .env, configuration, identity paths, and
 * the daemon lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "common/fsx.h"
#include "common/xalloc.h"

int ga_home_load(struct ga_home *h, const struct ga_opts *opts, char *env_error, size_t cap)
{
	memset(h, 0, sizeof *h);
	h->opts = *opts;
	const char *home = opts->home;
	if (!home)
		home = getenv("AGENT_HOME");
	if (!home || !*home)
		home = ".";
	h->env_path = opts->env ? xstrdup(opts->env) : fsx_join(home, ".env");

	struct ga_err err = {{0}};
	int missing = 0;
	if (env_load_file(h->env_path, &h->env, &missing, &err) != 0) {
		snprintf(env_error, cap, "%s", err.msg);
		return -1;
	}
	if (missing && opts->env) {
		snprintf(env_error, cap, "--env %s: no such file", opts->env);
		return -1;
	}
	h->env_missing = missing;
	config_load(&h->cfg, &h->env, home, opts->memory, &h->problems);
	if (!opts->env) {
		free(h->env_path);
		h->env_path = fsx_join(h->cfg.home, ".env");
	}
	h->soul_path = fsx_join(h->cfg.home, "SOUL.md");
	h->self_path = fsx_join(h->cfg.home, "SELF.md");
	char *t = fsx_join(h->cfg.home, "SELF.md.template");
	if (fsx_exists(t)) {
		h->self_template = t;
	} else {
		free(t);
		t = fsx_join(GA_DATADIR, "SELF.md.template");
		if (fsx_exists(t))
			h->self_template = t;
		else
			free(t);
	}
	return h->problems.count ? EXIT_CONFIG : 0;
}

void ga_home_free(struct ga_home *h)
{
	env_file_free(&h->env);
	config_free(&h->cfg);
	free(h->env_path);
	free(h->soul_path);
	free(h->self_path);
	free(h->self_template);
	memset(h, 0, sizeof *h);
}

static int read_pid(int fd)
{
	char buf[32] = {0};
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	return n > 0 ? atoi(buf) : 0;
}

int ga_lock_acquire(const char *memory_dir, int *holder_pid)
{
	*holder_pid = 0;
	char *path = fsx_join(memory_dir, "daemon.lock");
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(path);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		*holder_pid = read_pid(fd);
		close(fd);
		return -1;
	}
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		close(fd);
		return -1;
	}
	return fd;
}

int ga_lock_probe(const char *memory_dir, int *pid)
{
	*pid = 0;
	char *path = fsx_join(memory_dir, "daemon.lock");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return 0;
	int held = 0;
	if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
		held = 1;
		*pid = read_pid(fd);
	} else {
		flock(fd, LOCK_UN);
	}
	close(fd);
	return held;
}
