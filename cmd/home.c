/*
 * home — loading the agent home: .env, configuration, identity paths, and
 * the daemon lock; where the shipped data is (cmd/datadir.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/datadir.h"
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
	/* The home's own template wins; then the shipped one, found the way
	 * the skills are (ga_data_dir). */
	char *t = fsx_join(h->cfg.home, "SELF.md.template");
	if (!fsx_exists(t) && ga_data_dir()) {
		free(t);
		t = fsx_join(ga_data_dir(), "SELF.md.template");
	}
	if (fsx_exists(t))
		h->self_template = t;
	else
		free(t);
	return h->problems.count ? EXIT_CONFIG : 0;
}

/* --- the shipped data directory ------------------------------------------------ */

#ifndef GA_DATADIR_FROM_BINDIR
#define GA_DATADIR_FROM_BINDIR "../share/general-agent"
#endif

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Copies src into dst when it fits; false (dst untouched) when not. */
static bool copy_path(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n >= cap)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

/* The directory holding the running binary (from /proc/self/exe), into
 * out; false when it cannot be read or does not fit. */
static bool exe_dir(char *out, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", out, cap - 1);
	if (n <= 0 || (size_t)n >= cap - 1)
		return false;
	out[n] = '\0';
	char *slash = strrchr(out, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return true;
}

/* Fills buf with the first candidate that is a directory; buf[0] = 0 when
 * none is. Candidates in order: the data directory installed next to this
 * binary; when this binary sits in a build tree (a CMakeCache.txt beside
 * it), the source tree it was built from; the configured GA_DATADIR; the
 * source tree. */
static void find_data_dir(char *buf, size_t cap)
{
	char dir[PATH_MAX];
	char cand[PATH_MAX + 64];
	buf[0] = '\0';
	bool have_exe = exe_dir(dir, sizeof dir);
	bool build_tree = false;
	if (have_exe) {
		if ((size_t)snprintf(cand, sizeof cand, "%s/%s", dir, GA_DATADIR_FROM_BINDIR) <
		            sizeof cand &&
		    is_dir(cand)) {
			char *real = realpath(cand, NULL);
			bool ok = copy_path(buf, cap, real ? real : cand);
			free(real);
			if (ok)
				return;
		}
		if ((size_t)snprintf(cand, sizeof cand, "%s/CMakeCache.txt", dir) < sizeof cand)
			build_tree = fsx_exists(cand);
	}
	const char *rest[] = {build_tree ? GA_SOURCE_DIR : GA_DATADIR, GA_SOURCE_DIR};
	for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) {
		if (is_dir(rest[i]) && copy_path(buf, cap, rest[i]))
			return;
	}
}

const char *ga_data_dir(void)
{
	static char dir[PATH_MAX];
	static bool found;
	if (!found) {
		find_data_dir(dir, sizeof dir);
		found = true;
	}
	return dir[0] ? dir : NULL;
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
