/* history — previous versions of SELF.md (history.h). */
#include "modules/reflection/history.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "modules/identity/self.h"

#define LOG_COMP "reflection"

static int cmp_desc(const void *a, const void *b)
{
	return strcmp(*(char *const *)b, *(char *const *)a);
}

static bool history_name(const char *n)
{
	size_t len = strlen(n);
	return len > 20 && len < SELF_HISTORY_NAME_MAX && n[0] >= '0' && n[0] <= '9' &&
	       strcmp(n + len - 3, ".md") == 0;
}

size_t selfhist_list(const char *memory_dir, char ***names_out)
{
	*names_out = NULL;
	char *dir = fsx_join(memory_dir, SELF_HISTORY_DIR);
	DIR *d = opendir(dir);
	free(dir);
	if (!d)
		return 0;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!history_name(e->d_name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			names = xreallocarray(names, cap, sizeof *names);
		}
		names[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, cmp_desc);
	*names_out = names;
	return n;
}

static void free_list(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void prune(const char *memory_dir)
{
	char **names;
	size_t n = selfhist_list(memory_dir, &names);
	char *dir = fsx_join(memory_dir, SELF_HISTORY_DIR);
	for (size_t i = SELF_HISTORY_KEEP; i < n; i++) {
		char *p = fsx_join(dir, names[i]);
		if (unlink(p) != 0)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "old SELF.md version could not be deleted",
			       "path", p, "error", strerror(errno));
		free(p);
	}
	free(dir);
	free_list(names, n);
}

int selfhist_save(const char *memory_dir, const char *old, size_t len, const char *reason,
                  int64_t now_ms, char **saved, struct ga_err *err)
{
	char *dir = fsx_join(memory_dir, SELF_HISTORY_DIR);
	if (fsx_mkdir_p(dir, err) != 0) {
		free(dir);
		return -1;
	}
	time_t secs = (time_t)(now_ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char name[SELF_HISTORY_NAME_MAX], *path = NULL;
	/* a second save in the same millisecond gets a suffix, never overwrites */
	for (int k = 0; k < 100; k++) {
		snprintf(name, sizeof name, "%04d%02d%02dT%02d%02d%02d%03dZ%s%.0d-%s.md",
		         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		         tm.tm_sec, (int)(now_ms % 1000), k ? "." : "", k, reason);
		free(path);
		path = fsx_join(dir, name);
		if (!fsx_exists(path))
			break;
	}
	free(dir);
	int rc = fsx_write_atomic(path, old ? old : "", old ? len : 0, err);
	if (rc == 0) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "previous SELF.md kept", "path", path);
		prune(memory_dir);
	}
	if (rc == 0 && saved)
		*saved = path;
	else
		free(path);
	return rc;
}

int selfhist_replace(const char *memory_dir, const char *self_path, const char *new_text,
                     size_t new_len, const char *reason, int64_t now_ms, struct ga_err *err)
{
	size_t len = 0;
	struct ga_err rerr = {{0}};
	errno = 0;
	char *old = fsx_read_file(self_path, SELF_MAX_BYTES, &len, &rerr);
	if (!old && errno != ENOENT)
		return err_set(err, "SELF.md could not be read before replacing it: %s", rerr.msg);
	int rc = selfhist_save(memory_dir, old, len, reason, now_ms, NULL, err);
	free(old);
	if (rc != 0)
		return -1;
	return fsx_write_atomic(self_path, new_text, new_len, err);
}

char *selfhist_latest(const char *memory_dir, char *name, size_t cap, size_t *len,
                      struct ga_err *err)
{
	char **names;
	size_t n = selfhist_list(memory_dir, &names);
	if (n == 0) {
		err_set(err, "no previous SELF.md in %s/%s: nothing has changed it yet", memory_dir,
		        SELF_HISTORY_DIR);
		return NULL;
	}
	snprintf(name, cap, "%s", names[0]);
	char *dir = fsx_join(memory_dir, SELF_HISTORY_DIR);
	char *p = fsx_join(dir, names[0]);
	char *text = fsx_read_file(p, SELF_MAX_BYTES, len, err);
	free(p);
	free(dir);
	free_list(names, n);
	return text;
}
