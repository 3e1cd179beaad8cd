/*
 * fsx — see fsx.h.
 *
 * Everything here is plain POSIX I/O with EINTR and short-write handling;
 * no stdio, so what reached the kernel is always known. The JSONL reader
 * uses one fixed chunk buffer plus a line buffer bounded by max_line, so a
 * huge or hostile file costs O(max_line) memory, never O(file).
 */
#include "common/fsx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

#define FSX_READ_CHUNK 65536
/* fsx_move_aside gives up after this many same-second name collisions. */
#define FSX_ASIDE_MAX_SUFFIX 1000

int fsx_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Directory part of path ("." when there is none). Caller frees. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

static int fsync_dir_of(const char *path)
{
	char *dir = dir_of(path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	/* Some file systems cannot fsync a directory; that is not our error. */
	if (rc < 0 && (errno == EINVAL || errno == EROFS))
		rc = 0;
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

int fsx_write_atomic(const char *path, const void *data, size_t len, struct ga_err *err)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	/* A leftover of ours from a crash (or a planted symlink) is removed
	 * first, then the temp is created exclusively: we never write through
	 * a link into some other file. */
	if (unlink(tmp) < 0 && errno != ENOENT) {
		err_set(err, "cannot remove stale %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err_set(err, "cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	const char *step = "write";
	if (fsx_write_all(fd, data, len) < 0)
		goto fail;
	step = "fsync";
	if (fsync(fd) < 0)
		goto fail;
	step = "close";
	int rc = close(fd);
	fd = -1;
	if (rc < 0)
		goto fail;
	step = "rename";
	if (rename(tmp, path) < 0)
		goto fail;
	free(tmp);
	if (fsync_dir_of(path) < 0)
		return err_set(err, "wrote %s but could not fsync its directory: %s", path,
		               strerror(errno));
	return 0;
fail:;
	int saved = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return err_set(err, "cannot write %s (%s failed): %s", path, step, strerror(saved));
}

char *fsx_read_file(const char *path, size_t max, size_t *len_out, struct ga_err *err)
{
	/* keeps max + 1 (the probe byte) and cap + 1 (the NUL) from wrapping */
	if (max > SIZE_MAX / 2)
		max = SIZE_MAX / 2;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int saved = errno;
		err_set(err, "cannot open %s: %s", path, strerror(saved));
		errno = saved;
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int saved = errno;
		err_set(err, "cannot stat %s: %s", path, strerror(saved));
		close(fd);
		errno = saved;
		return NULL;
	}
	if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max) {
		err_set(err, "%s: file is larger than %zu bytes", path, max);
		close(fd);
		errno = EFBIG;
		return NULL;
	}
	/* The size may change under us (or be unknown for a pipe): read until
	 * EOF but never past max. */
	size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 4096;
	if (cap > max + 1)
		cap = max + 1;
	char *buf = xmalloc(cap + 1);
	size_t len = 0;
	for (;;) {
		if (len == cap) {
			if (cap > max) {
				err_set(err, "%s: file is larger than %zu bytes", path, max);
				free(buf);
				close(fd);
				errno = EFBIG;
				return NULL;
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			buf = xrealloc(buf, cap + 1);
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int saved = errno;
			err_set(err, "cannot read %s: %s", path, strerror(saved));
			free(buf);
			close(fd);
			errno = saved;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > max) {
		err_set(err, "%s: file is larger than %zu bytes", path, max);
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[len] = '\0';
	if (len_out)
		*len_out = len;
	return buf;
}

int fsx_mkdir_p(const char *path, struct ga_err *err)
{
	if (!path || !*path)
		return err_set(err, "cannot create a directory with an empty path");
	char *p = xstrdup(path);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char saved = *s;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			int e = errno;
			err_set(err, "cannot create directory %s: %s", p, strerror(e));
			free(p);
			return -1;
		}
		*s = saved;
		if (!saved)
			break;
	}
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		err_set(err, "cannot create directory %s: a file with that name exists", path);
		free(p);
		return -1;
	}
	free(p);
	return 0;
}

bool fsx_exists(const char *path)
{
	struct stat st;
	return path && stat(path, &st) == 0;
}

int fsx_append_line(const char *path, const char *line, size_t len, struct ga_err *err)
{
	if (memchr(line, '\n', len))
		return err_set(err, "refusing to append to %s: the line contains a newline", path);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_set(err, "cannot open %s for appending: %s", path, strerror(errno));
	/* One buffer, one write(2): with O_APPEND the line lands whole even if
	 * another process appends at the same time. */
	char *buf = xmalloc(len + 1);
	memcpy(buf, line, len);
	buf[len] = '\n';
	int rc = fsx_write_all(fd, buf, len + 1);
	int saved = errno;
	free(buf);
	if (rc < 0) {
		close(fd);
		return err_set(err, "cannot append to %s: %s", path, strerror(saved));
	}
	if (close(fd) < 0)
		return err_set(err, "cannot append to %s: %s", path, strerror(errno));
	return 0;
}

int fsx_append_json(const char *path, const cJSON *v, struct ga_err *err)
{
	char *s = json_print(v);
	int rc = fsx_append_line(path, s, strlen(s), err);
	free(s);
	return rc;
}

struct jsonl_state {
	const char *path;
	size_t lineno;
	fsx_jsonl_fn cb;
	void *ud;
	struct fsx_jsonl_stats *st;
	bool stop;
};

static void bad_line(struct jsonl_state *js, const char *reason)
{
	js->st->lines_bad++;
	log_kv(LOG_LEVEL_WARN, "fsx", "skipping bad JSONL line", "file", js->path, "line",
	       LOG_INT(js->lineno), "reason", reason);
}

static void handle_line(struct jsonl_state *js, const char *s, size_t n, bool too_long,
                        size_t max_line)
{
	if (too_long) {
		char why[64];
		snprintf(why, sizeof(why), "line longer than %zu bytes", max_line);
		bad_line(js, why);
		return;
	}
	size_t i = 0;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	if (i == n) {
		js->st->lines_empty++;
		return;
	}
	if (!utf8_valid(s, n)) {
		bad_line(js, "invalid UTF-8");
		return;
	}
	struct ga_err e = {{0}};
	cJSON *v = json_parse(s, n, &e);
	if (!v) {
		bad_line(js, e.msg);
		return;
	}
	js->st->lines_ok++;
	if (js->cb && js->cb(js->ud, v, js->lineno) != 0)
		js->stop = true;
	cJSON_Delete(v);
}

int fsx_jsonl_read(const char *path, size_t max_line, fsx_jsonl_fn cb, void *ud,
                   struct fsx_jsonl_stats *stats, struct ga_err *err)
{
	struct fsx_jsonl_stats local;
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return err_set(err, "cannot open %s: %s", path, strerror(errno));
	}
	struct jsonl_state js = {.path = path, .cb = cb, .ud = ud, .st = stats};
	char *chunk = xmalloc(FSX_READ_CHUNK);
	/* grows with the longest line seen, never past max_line */
	struct strbuf line;
	sb_init(&line, max_line ? max_line : 1);
	bool too_long = false;
	bool pending = false; /* bytes seen since the last '\n' */
	int rc = 0;
	while (!js.stop) {
		ssize_t n = read(fd, chunk, FSX_READ_CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = err_set(err, "cannot read %s: %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		size_t off = 0;
		while (off < (size_t)n && !js.stop) {
			char *nl = memchr(chunk + off, '\n', (size_t)n - off);
			size_t seg = nl ? (size_t)(nl - (chunk + off)) : (size_t)n - off;
			if (seg)
				pending = true;
			if (!too_long &&
			    (seg > max_line - line.len || sb_append(&line, chunk + off, seg) < 0))
				too_long = true; /* drop it, skip to '\n' */
			off += seg;
			if (!nl)
				break;
			off++; /* the '\n' */
			js.lineno++;
			handle_line(&js, sb_cstr(&line), line.len, too_long, max_line);
			sb_reset(&line);
			too_long = false;
			pending = false;
		}
	}
	if (rc == 0 && !js.stop && pending) {
		/* The last line has no '\n': a crash mid-append, or a writer that
		 * is still busy. Deliver it only if it is complete JSON. */
		stats->torn_tail = true;
		js.lineno++;
		handle_line(&js, sb_cstr(&line), line.len, too_long, max_line);
	}
	sb_free(&line);
	free(chunk);
	close(fd);
	return rc;
}

int fsx_rotate(const char *path, size_t max_bytes, int keep, struct ga_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_set(err, "cannot stat %s: %s", path, strerror(errno));
	}
	if ((unsigned long long)st.st_size < max_bytes)
		return 0;
	if (keep <= 0) {
		if (truncate(path, 0) < 0)
			return err_set(err, "cannot truncate %s: %s", path, strerror(errno));
		return 1;
	}
	char *dst = xasprintf("%s.%d", path, keep);
	if (unlink(dst) < 0 && errno != ENOENT) {
		err_set(err, "cannot remove old backup %s: %s", dst, strerror(errno));
		free(dst);
		return -1;
	}
	free(dst);
	for (int i = keep - 1; i >= 1; i--) {
		char *from = xasprintf("%s.%d", path, i);
		char *to = xasprintf("%s.%d", path, i + 1);
		int r = rename(from, to);
		int e = errno;
		if (r < 0 && e != ENOENT) {
			err_set(err, "cannot rename %s to %s: %s", from, to, strerror(e));
			free(from);
			free(to);
			return -1;
		}
		free(from);
		free(to);
	}
	char *first = xasprintf("%s.1", path);
	if (rename(path, first) < 0) {
		err_set(err, "cannot rename %s to %s: %s", path, first, strerror(errno));
		free(first);
		return -1;
	}
	free(first);
	fsync_dir_of(path);
	return 1;
}

/* rename without replacing an existing target: renameat2(RENAME_NOREPLACE)
 * where the kernel and file system support it, else check-then-rename
 * (good enough for a single writer). */
static int rename_noreplace(const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
#endif
	struct stat st;
	if (lstat(to, &st) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(from, to);
}

int fsx_move_aside(const char *path, char **new_path, struct ga_err *err)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char stamp[32];
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int i = 0; i <= FSX_ASIDE_MAX_SUFFIX; i++) {
		char *to = i ? xasprintf("%s.corrupt-%s-%d", path, stamp, i)
		             : xasprintf("%s.corrupt-%s", path, stamp);
		if (rename_noreplace(path, to) == 0) {
			fsync_dir_of(path);
			if (new_path)
				*new_path = to;
			else
				free(to);
			return 0;
		}
		int e = errno;
		if (e != EEXIST) {
			err_set(err, "cannot move %s aside to %s: %s", path, to, strerror(e));
			free(to);
			return -1;
		}
		free(to);
	}
	return err_set(err, "cannot move %s aside: %d files named %s.corrupt-%s-* already exist",
	               path, FSX_ASIDE_MAX_SUFFIX, path, stamp);
}

char *fsx_join(const char *dir, const char *name)
{
	if (!dir || !*dir)
		return xstrdup(name ? name : "");
	if (!name)
		name = "";
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	while (*name == '/')
		name++;
	if (dl == 1 && dir[0] == '/')
		return xasprintf("/%s", name);
	return xasprintf("%.*s/%s", (int)dl, dir, name);
}
