/*
 * space/store — JSONL log, rotation and history replay. See store.h.
 */
#include "space/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/json.h"
#include "common/jsonnul.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "space/proto.h"

#define LOG_COMP "space.store"
/* Bytes read per step when scanning a log backwards at open. */
#define TAIL_CHUNK ((size_t)64 * 1024)

struct hist_entry {
	char *json; /* compact JSON object, JSON.stringify form */
	size_t len;
};

struct space_store {
	char *dir;
	char *path;  /* <dir>/chat.jsonl */
	int fd;      /* -1 until the next append opens it */
	size_t size; /* current size of chat.jsonl as far as we know */
	bool torn;   /* the last write was short: start the next with \n */
	size_t rotate_bytes;
	size_t hist_max_bytes;

	/* Ring of the newest entries, oldest at head. */
	struct hist_entry ring[SPACE_HISTORY_MAX_ENTRIES];
	size_t head, count, bytes;
};

static char *backup_path(const struct space_store *st, int n)
{
	if (n == 0)
		return xstrdup(st->path);
	return xasprintf("%s/chat.%d.jsonl", st->dir, n);
}

/* --- in-memory history -------------------------------------------------- */

static void ring_drop_oldest(struct space_store *st)
{
	struct hist_entry *e = &st->ring[st->head];
	st->bytes -= e->len;
	free(e->json);
	e->json = NULL;
	st->head = (st->head + 1) % SPACE_HISTORY_MAX_ENTRIES;
	st->count--;
}

/* Takes ownership of json. An entry larger than the whole budget is kept
 * out of replay (it is still in the log). */
static void ring_push(struct space_store *st, char *json, size_t len)
{
	if (len + 2 > st->hist_max_bytes) {
		free(json);
		return;
	}
	if (st->count == SPACE_HISTORY_MAX_ENTRIES)
		ring_drop_oldest(st);
	while (st->count && st->bytes + len + 1 > st->hist_max_bytes)
		ring_drop_oldest(st);
	size_t at = (st->head + st->count) % SPACE_HISTORY_MAX_ENTRIES;
	st->ring[at].json = json;
	st->ring[at].len = len;
	st->count++;
	st->bytes += len + 1; /* + the comma between entries */
}

/* Re-serialises one log line the way Node would replay it, or NULL when
 * it is not a JSON object (§9 item 4: such lines are never replayed). */
static char *normalise_line(const char *s, size_t n, size_t *out_len)
{
	cJSON *v = json_parse_js(s, n, NULL); /* NULs as in the live relay */
	if (!cJSON_IsObject(v)) {
		cJSON_Delete(v);
		return NULL;
	}
	struct strbuf sb;
	sb_init(&sb, SPACE_STORE_MAX_LINE * 2);
	int rc = space_js_stringify(&sb, v);
	cJSON_Delete(v);
	if (rc < 0) {
		sb_free(&sb);
		return NULL;
	}
	*out_len = sb.len;
	return sb_detach(&sb);
}

struct tail_scan {
	struct hist_entry *found; /* newest first */
	size_t nfound, want;
	size_t bytes, max_bytes;
	size_t bad;
	bool full;
};

/* Handles one complete line found while scanning backwards. */
static void tail_line(struct tail_scan *ts, const char *s, size_t n)
{
	while (n && (s[n - 1] == '\r'))
		n--;
	bool blank = true;
	for (size_t i = 0; i < n && blank; i++)
		if (s[i] != ' ' && s[i] != '\t')
			blank = false;
	if (blank)
		return;
	size_t len;
	char *json = n <= SPACE_STORE_MAX_LINE ? normalise_line(s, n, &len) : NULL;
	if (!json) {
		ts->bad++;
		return;
	}
	if (ts->bytes + len + 1 > ts->max_bytes) {
		free(json);
		ts->full = true;
		return;
	}
	ts->found[ts->nfound].json = json;
	ts->found[ts->nfound].len = len;
	ts->nfound++;
	ts->bytes += len + 1;
	if (ts->nfound == ts->want)
		ts->full = true;
}

/* Scans path from its end, collecting valid object lines newest first
 * until ts is full. Bad lines are counted and skipped, never charged
 * against the limit. */
static void tail_scan_file(struct tail_scan *ts, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			log_warn(LOG_COMP, "cannot read %s: %s", path, strerror(errno));
		return;
	}
	struct stat stt;
	if (fstat(fd, &stt) < 0 || !S_ISREG(stt.st_mode)) {
		close(fd);
		return;
	}
	off_t pos = stt.st_size;
	/* carry = the bytes after the last newline seen so far (a line whose
	 * start lies further back). Bounded: past SPACE_STORE_MAX_LINE the
	 * line is bad anyway, so only its length is tracked. */
	struct strbuf carry;
	sb_init(&carry, SPACE_STORE_MAX_LINE + TAIL_CHUNK);
	bool carry_overflow = false;
	char *chunk = xmalloc(TAIL_CHUNK);
	size_t before = ts->bad;

	while (pos > 0 && !ts->full) {
		size_t n = pos > (off_t)TAIL_CHUNK ? TAIL_CHUNK : (size_t)pos;
		pos -= (off_t)n;
		ssize_t r = pread(fd, chunk, n, pos);
		if (r != (ssize_t)n) {
			log_warn(LOG_COMP, "short read on %s", path);
			break;
		}
		/* Walk the chunk from its end; each '\n' closes the line to its
		 * right (which starts in this chunk and continues in carry). */
		size_t end = n;
		for (size_t i = n; i-- > 0 && !ts->full;) {
			if (chunk[i] != '\n')
				continue;
			if (!carry_overflow) {
				struct strbuf line;
				sb_init(&line, SPACE_STORE_MAX_LINE + TAIL_CHUNK * 2);
				sb_append(&line, chunk + i + 1, end - i - 1);
				sb_append(&line, carry.buf ? carry.buf : "", carry.len);
				tail_line(ts, sb_cstr(&line), line.len);
				sb_free(&line);
			} else {
				ts->bad++;
			}
			sb_reset(&carry);
			carry_overflow = false;
			end = i;
		}
		if (ts->full)
			break;
		/* Prepend the unterminated head of this chunk to carry. */
		if (!carry_overflow) {
			if (end + carry.len > SPACE_STORE_MAX_LINE) {
				carry_overflow = true;
				sb_reset(&carry);
			} else {
				struct strbuf nc;
				sb_init(&nc, SPACE_STORE_MAX_LINE + TAIL_CHUNK);
				sb_append(&nc, chunk, end);
				sb_append(&nc, carry.buf ? carry.buf : "", carry.len);
				sb_free(&carry);
				carry = nc;
			}
		}
	}
	if (pos == 0 && !ts->full) {
		if (carry_overflow)
			ts->bad++;
		else if (carry.len)
			tail_line(ts, carry.buf, carry.len);
	}
	if (ts->bad > before)
		log_warn(LOG_COMP, "%s: skipped %zu line(s) that are not JSON objects", path,
		         ts->bad - before);
	free(chunk);
	sb_free(&carry);
	close(fd);
}

static void load_history(struct space_store *st)
{
	struct tail_scan ts = {0};
	ts.want = SPACE_HISTORY_MAX_ENTRIES;
	ts.max_bytes = st->hist_max_bytes;
	ts.found = xcalloc(ts.want, sizeof *ts.found);
	tail_scan_file(&ts, st->path);
	/* The overflow comes from chat.1.jsonl only (§4.4); older backups
	 * are archives. */
	if (!ts.full) {
		char *p1 = backup_path(st, 1);
		tail_scan_file(&ts, p1);
		free(p1);
	}
	for (size_t i = ts.nfound; i-- > 0;)
		ring_push(st, ts.found[i].json, ts.found[i].len);
	free(ts.found);
}

/* --- the log file -------------------------------------------------------- */

/* A crash mid-append leaves a last line without '\n': it is terminated,
 * so the next entry is not glued onto it (§4.5). */
static void repair_tail(struct space_store *st)
{
	int fd = open(st->path, O_RDWR | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat stt;
	char last;
	if (fstat(fd, &stt) == 0 && stt.st_size > 0 && pread(fd, &last, 1, stt.st_size - 1) == 1 &&
	    last != '\n') {
		if (write(fd, "\n", 1) == 1)
			log_warn(LOG_COMP, "%s: last line was torn (no newline); terminated it",
			         st->path);
	}
	close(fd);
}

static int open_log(struct space_store *st)
{
	if (st->fd >= 0)
		return 0;
	st->fd = open(st->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (st->fd < 0) {
		log_error(LOG_COMP, "cannot open %s: %s", st->path, strerror(errno));
		return -1;
	}
	struct stat stt;
	st->size = fstat(st->fd, &stt) == 0 ? (size_t)stt.st_size : 0;
	return 0;
}

/* chat.4→chat.5 … chat→chat.1 (§4.3). Failures are logged and ignored. */
static void rotate(struct space_store *st)
{
	if (st->fd >= 0) {
		close(st->fd);
		st->fd = -1;
	}
	for (int i = SPACE_STORE_BACKUPS - 1; i >= 0; i--) {
		char *from = backup_path(st, i);
		char *to = backup_path(st, i + 1);
		if (rename(from, to) < 0 && errno != ENOENT)
			log_error(LOG_COMP, "rotation: cannot rename %s to %s: %s", from, to,
			          strerror(errno));
		free(from);
		free(to);
	}
	st->size = 0;
	log_info(LOG_COMP, "rotated %s", st->path);
}

static void write_line(struct space_store *st, const char *line, size_t len)
{
	if (open_log(st) < 0)
		return;
	if (st->torn) {
		if (write(st->fd, "\n", 1) == 1) {
			st->size++;
			st->torn = false;
		}
	}
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(st->fd, line + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			log_error(LOG_COMP, "cannot append to %s: %s", st->path,
			          w < 0 ? strerror(errno) : "short write");
			if (off)
				st->torn = true;
			/* Reopen next time: the file may have been removed. */
			close(st->fd);
			st->fd = -1;
			st->size += off;
			return;
		}
		off += (size_t)w;
	}
	st->size += len;
	if (st->size > st->rotate_bytes)
		rotate(st);
}

void space_store_append(struct space_store *st, const char *ts, const char *name, const char *id,
                        const char *type, const char *content, size_t content_len)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"timestamp\":");
	space_put_str(&sb, ts);
	sb_puts(&sb, ",\"agentName\":");
	space_put_str(&sb, name);
	sb_puts(&sb, ",\"agentId\":");
	space_put_str(&sb, id);
	sb_puts(&sb, ",\"type\":");
	space_put_str(&sb, type);
	sb_puts(&sb, ",\"content\":");
	space_put_strn(&sb, content, content_len);
	sb_putc(&sb, '}');
	size_t len = sb.len;
	sb_putc(&sb, '\n');
	write_line(st, sb.buf, sb.len);
	sb.buf[len] = '\0';
	sb.len = len;
	ring_push(st, sb_detach(&sb), len);
}

struct space_buf *space_store_history(struct space_store *st, size_t limit)
{
	size_t n = limit < st->count ? limit : st->count;
	size_t first = st->count - n;
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"type\":\"history_response\",\"entries\":[");
	for (size_t i = 0; i < n; i++) {
		const struct hist_entry *e =
		        &st->ring[(st->head + first + i) % SPACE_HISTORY_MAX_ENTRIES];
		if (i)
			sb_putc(&sb, ',');
		sb_append(&sb, e->json, e->len);
	}
	sb_puts(&sb, "]}");
	struct space_buf *b = space_buf_from_sb(&sb, 0);
	sb_free(&sb);
	return b;
}

size_t space_store_history_count(const struct space_store *st)
{
	return st->count;
}

const char *space_store_path(const struct space_store *st)
{
	return st->path;
}

struct space_store *space_store_open(const char *dir, size_t rotate_bytes, size_t history_max_bytes,
                                     struct ga_err *err)
{
	if (fsx_mkdir_p(dir, err) < 0)
		return NULL;
	struct space_store *st = xcalloc(1, sizeof *st);
	st->dir = xstrdup(dir);
	st->path = fsx_join(dir, SPACE_STORE_LOG_NAME);
	st->fd = -1;
	st->rotate_bytes = rotate_bytes ? rotate_bytes : SPACE_LOG_ROTATE_BYTES_DEFAULT;
	st->hist_max_bytes =
	        history_max_bytes ? history_max_bytes : SPACE_HISTORY_MAX_BYTES_DEFAULT;
	repair_tail(st);
	load_history(st);
	log_info(LOG_COMP, "log %s: %zu entries available for replay", st->path, st->count);
	return st;
}

void space_store_free(struct space_store *st)
{
	if (!st)
		return;
	if (st->fd >= 0)
		close(st->fd);
	while (st->count)
		ring_drop_oldest(st);
	free(st->dir);
	free(st->path);
	free(st);
}
