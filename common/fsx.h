/*
 * fsx — files done carefully: atomic replacement, JSONL append and read,
 * size-based rotation.
 *
 * Atomic write: data goes to "<path>.tmp.<pid>", is fsync'ed, renamed over
 * <path>, and the directory is fsync'ed, so after a crash at any point the
 * file holds either the old or the new content, never a mix. A stale
 * "<path>.tmp.*" left by a crash is harmless and ignored by readers.
 *
 * JSONL: one JSON value per line. Appends write the whole line (with its
 * '\n') in one write(2) on an O_APPEND descriptor. The reader splits on '\n'
 * only, so a torn last line (no newline, or invalid JSON) is skipped and
 * reported without losing its neighbours.
 */
#ifndef GA_COMMON_FSX_H
#define GA_COMMON_FSX_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

int fsx_write_atomic(const char *path, const void *data, size_t len, struct ga_err *err);

/* Reads a whole file of at most max bytes (else error "file is larger than
 * N bytes"). Returns a NUL-terminated heap buffer (caller frees) and *len_out
 * (may be NULL). NULL on error; err names the path and errno text. A missing
 * file sets errno = ENOENT before returning NULL so callers can tell. */
char *fsx_read_file(const char *path, size_t max, size_t *len_out, struct ga_err *err);
/* Writes all len bytes to fd (EINTR retried, short writes continued): 0, or
 * -1 with errno (a write of 0 bytes is EIO). */
int fsx_write_all(int fd, const void *data, size_t len);

/* mkdir -p with mode 0700 for new directories. */
int fsx_mkdir_p(const char *path, struct ga_err *err);

bool fsx_exists(const char *path);

/* Appends line (without '\n'; one is added) to path, creating it (0600). A
 * line containing '\n' is rejected (it would break the format). */
int fsx_append_line(const char *path, const char *line, size_t len, struct ga_err *err);

/* Serialises v compactly and appends it as one line. */
int fsx_append_json(const char *path, const cJSON *v, struct ga_err *err);

struct fsx_jsonl_stats {
	size_t lines_ok;    /* lines delivered to the callback */
	size_t lines_bad;   /* invalid JSON, invalid UTF-8, or over the line limit */
	size_t lines_empty; /* blank lines (skipped silently) */
	bool torn_tail;     /* the last line had no '\n' (and was skipped if bad) */
};

/* Called once per valid line. `v` is owned by the reader and freed after the
 * call. Return 0 to continue, non-zero to stop early. */
typedef int (*fsx_jsonl_fn)(void *ud, const cJSON *v, size_t lineno);

/* Reads path line by line (lines longer than max_line bytes are bad). Each
 * bad line is logged once as a warning naming the file and line number. A
 * missing file is not an error (zero lines). Returns 0, or -1 on I/O error. */
int fsx_jsonl_read(const char *path, size_t max_line, fsx_jsonl_fn cb, void *ud,
                   struct fsx_jsonl_stats *stats, struct ga_err *err);

/* If path exists and is at least max_bytes long, shifts path.(keep-1) →
 * path.keep, ..., path.1 → path.2, path → path.1 (path.keep is dropped).
 * keep 0 → the file is just truncated away. Returns 1 if rotated, 0 if not
 * needed, -1 on error. */
int fsx_rotate(const char *path, size_t max_bytes, int keep, struct ga_err *err);

/* Renames path to "<path>.corrupt-<YYYYMMDDTHHMMSSZ>" (with a numeric suffix
 * if that exists). On success, if new_path is non-NULL, *new_path receives
 * the new name (caller frees). */
int fsx_move_aside(const char *path, char **new_path, struct ga_err *err);

/* Joins dir and name with exactly one '/'. Caller frees. */
char *fsx_join(const char *dir, const char *name);

#endif
