/* decisions CLI — `decisions` and `why` (see cli.h). */
#include "modules/decisions/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/decisions/log.h"

#define READ_CHUNK_BYTES 65536

/* ---- output ------------------------------------------------------------- */

/* Appends s with control characters (C0, DEL, C1) replaced by '?'. */
static void put_safe(struct strbuf *sb, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			sb_putc(sb, '?');
		} else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			sb_putc(sb, '?');
			p++;
		} else {
			sb_putc(sb, (char)*p);
		}
	}
}

static void fput_safe(FILE *f, const char *s)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	put_safe(&sb, s);
	fputs(sb_cstr(&sb), f);
	sb_free(&sb);
}

/* put_safe, then spaces up to width bytes (at least two spaces after). */
static void put_col(struct strbuf *sb, const char *s, size_t width)
{
	size_t before = sb->len;
	put_safe(sb, s);
	size_t w = sb->len - before;
	size_t target = (w > width ? w : width) + 2;
	for (; w < target; w++)
		sb_putc(sb, ' ');
}

/* "2026-11-23T10:01:02Z": the stored time to the second. */
static void time_seconds(int64_t ms, char out[TIME_ISO_LEN + 1])
{
	time_format_iso(ms, out);
	char *dot = strchr(out, '.');
	if (dot) {
		dot[0] = 'Z';
		dot[1] = '\0';
	}
}

static char *format_list_line(const struct decision_record *r, bool json)
{
	if (json)
		return decision_record_to_line(r);
	char t[TIME_ISO_LEN + 1];
	time_seconds(r->time_ms, t);
	struct strbuf sb;
	sb_init(&sb, 0);
	put_col(&sb, t, 20);
	put_col(&sb, r->platform, 7);
	put_col(&sb, decision_stage_name(r->stage), 9);
	put_col(&sb, decision_verdict_name(r->decision.verdict), 7);
	put_col(&sb, r->decision.rule, 20);
	put_safe(&sb, r->decision.reason[0] ? r->decision.reason : "-");
	sb_puts(&sb, "  [");
	put_safe(&sb, r->message_id);
	sb_puts(&sb, "]");
	return sb_detach(&sb);
}

/* ---- options -------------------------------------------------------------- */

static int parse_count(const char *s, long *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > DECISIONS_CLI_TAIL_MAX)
		return -1;
	*out = v;
	return 0;
}

static const char *list_usage =
        "usage: general-agent decisions [--tail N] [--follow] [--json]\n"
        "  --tail N   the last N decisions (default 20; 0 = all)\n"
        "  --follow   keep printing decisions as they are made (Ctrl-C stops)\n"
        "  --json     the JSON lines as stored in decisions.jsonl\n";

/* ---- the line ring for --tail ------------------------------------------- */

struct tail_ring {
	char **lines;
	size_t cap, start, len, limit; /* limit 0: unbounded, printed at once */
	FILE *out;
	bool json;
	size_t seen; /* records read, printed or not */
};

static void ring_emit(struct tail_ring *tr, const struct decision_record *r)
{
	char *line = format_list_line(r, tr->json);
	tr->seen++;
	if (tr->limit == 0) {
		fputs(line, tr->out);
		fputc('\n', tr->out);
		free(line);
		return;
	}
	if (tr->len < tr->limit) {
		if (tr->len == tr->cap) {
			/* grows lazily: --tail 1000000 over a short log stays small;
			 * the ring is not wrapped until it is full */
			size_t ncap = tr->cap ? tr->cap * 2 : 64;
			if (ncap > tr->limit)
				ncap = tr->limit;
			tr->lines = xreallocarray(tr->lines, ncap, sizeof *tr->lines);
			tr->cap = ncap;
		}
		tr->lines[tr->len++] = line;
		return;
	}
	free(tr->lines[tr->start]);
	tr->lines[tr->start] = line;
	tr->start = (tr->start + 1) % tr->len;
}

static void ring_flush(struct tail_ring *tr)
{
	for (size_t k = 0; k < tr->len; k++) {
		size_t i = (tr->start + k) % tr->len;
		fputs(tr->lines[i], tr->out);
		fputc('\n', tr->out);
		free(tr->lines[i]);
	}
	free(tr->lines);
	tr->lines = NULL;
	tr->cap = tr->len = tr->start = 0;
}

/* ---- reading the current file through a descriptor ---------------------- */

/* Follows one file the way `tail -F` does: reads from an offset to EOF,
 * delivers complete lines, keeps a partial last line (bounded) for later. */
struct tailer {
	char *path;
	int fd;
	dev_t dev;
	ino_t ino;
	off_t off;
	struct strbuf partial;
	bool overlong; /* the partial line passed the limit: drop to '\n' */
	void (*emit)(void *ud, const struct decision_record *r);
	void *ud;
};

static void tailer_open(struct tailer *t)
{
	t->fd = open(t->path, O_RDONLY | O_CLOEXEC);
	t->off = 0;
	sb_reset(&t->partial);
	t->overlong = false;
	if (t->fd < 0)
		return;
	struct stat st;
	if (fstat(t->fd, &st) == 0) {
		t->dev = st.st_dev;
		t->ino = st.st_ino;
	}
}

static void tailer_close(struct tailer *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

static void tailer_line(struct tailer *t, const char *s, size_t n)
{
	if (n == 0 || !utf8_valid(s, n))
		return;
	cJSON *v = json_parse(s, n, NULL);
	struct decision_record r;
	if (v && decision_record_from_json(v, &r) == 0)
		t->emit(t->ud, &r);
	cJSON_Delete(v);
}

static void tailer_drain(struct tailer *t)
{
	if (t->fd < 0)
		return;
	char *chunk = xmalloc(READ_CHUNK_BYTES);
	for (;;) {
		ssize_t n = read(t->fd, chunk, READ_CHUNK_BYTES);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		t->off += n;
		size_t off = 0;
		while (off < (size_t)n) {
			char *nl = memchr(chunk + off, '\n', (size_t)n - off);
			size_t seg = nl ? (size_t)(nl - (chunk + off)) : (size_t)n - off;
			if (!t->overlong && (t->partial.len + seg > DECISION_LOG_LINE_MAX_BYTES ||
			                     sb_append(&t->partial, chunk + off, seg) < 0))
				t->overlong = true;
			off += seg;
			if (nl) {
				if (!t->overlong)
					tailer_line(t, t->partial.buf ? t->partial.buf : "",
					            t->partial.len);
				sb_reset(&t->partial);
				t->overlong = false;
				off++;
			}
		}
	}
	free(chunk);
}

/* After a drain: has the file been replaced (rotated) or cut short? */
static void tailer_check(struct tailer *t)
{
	struct stat st;
	if (stat(t->path, &st) < 0)
		return; /* between the rename and the next append: keep the old one */
	if (t->fd < 0) {
		tailer_open(t);
		tailer_drain(t);
		return;
	}
	if (st.st_dev != t->dev || st.st_ino != t->ino) {
		tailer_drain(t); /* what the writer added before renaming it */
		tailer_close(t);
		tailer_open(t);
		tailer_drain(t);
	} else if (st.st_size < t->off) {
		lseek(t->fd, 0, SEEK_SET);
		t->off = 0;
		sb_reset(&t->partial);
		t->overlong = false;
		tailer_drain(t);
	}
}

/* ---- backups ------------------------------------------------------------- */

struct backup_ctx {
	void (*emit)(void *ud, const struct decision_record *r);
	void *ud;
};

static int backup_line(void *ud, const cJSON *v, size_t lineno)
{
	struct backup_ctx *c = ud;
	struct decision_record r;
	if (decision_record_from_json(v, &r) == 0)
		c->emit(c->ud, &r);
	return 0;
}

static void emit_to_ring(void *ud, const struct decision_record *r)
{
	ring_emit(ud, r);
}

struct follow_out {
	FILE *out;
	bool json;
};

static void emit_now(void *ud, const struct decision_record *r)
{
	struct follow_out *fo = ud;
	char *line = format_list_line(r, fo->json);
	fputs(line, fo->out);
	fputc('\n', fo->out);
	free(line);
}

/* ---- --follow -------------------------------------------------------------- */

static volatile sig_atomic_t follow_stop;

static void on_stop_signal(int sig)
{
	follow_stop = 1;
}

/* The reader of `out` went away (a closed pipe reports POLLERR). */
static bool out_gone(FILE *out)
{
	if (ferror(out))
		return true;
	int fd = fileno(out);
	if (fd < 0)
		return false;
	struct pollfd p = {.fd = fd, .events = 0};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL));
}

static void follow_loop(struct tailer *t, FILE *out)
{
	struct sigaction sa = {0}, old_int, old_term, old_pipe;
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	struct sigaction ign = {0};
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old_pipe); /* a closed pipe is EPIPE, not death */
	follow_stop = 0;

	while (!follow_stop) {
		if (fflush(out) != 0 || out_gone(out))
			break;
		struct timespec ts = {.tv_sec = DECISIONS_CLI_POLL_MS / 1000,
		                      .tv_nsec = (long)(DECISIONS_CLI_POLL_MS % 1000) * 1000000L};
		if (nanosleep(&ts, NULL) < 0 && follow_stop)
			break;
		tailer_drain(t);
		tailer_check(t);
	}
	fflush(out);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
}

/* ---- decisions ------------------------------------------------------------- */

int decisions_cli_list(const char *memory_dir, int argc, char **argv, FILE *out, FILE *err)
{
	long tail = DECISIONS_CLI_TAIL_DEFAULT;
	bool follow = false, json = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--follow") == 0 || strcmp(a, "-f") == 0) {
			follow = true;
		} else if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strcmp(a, "--tail") == 0 || strncmp(a, "--tail=", 7) == 0) {
			const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
			if (parse_count(v, &tail) < 0) {
				fprintf(err,
				        "general-agent decisions: --tail needs a number from 0 "
				        "(all) to "
				        "%d, not '%s'\n%s",
				        DECISIONS_CLI_TAIL_MAX, v ? v : "", list_usage);
				return DECISIONS_CLI_EXIT_USAGE;
			}
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(list_usage, out);
			return 0;
		} else {
			fprintf(err, "general-agent decisions: unknown option '%s'\n%s", a,
			        list_usage);
			return DECISIONS_CLI_EXIT_USAGE;
		}
	}
	if (!memory_dir) {
		fprintf(err, "general-agent decisions: no memory directory\n");
		return 1;
	}

	struct tail_ring tr = {.limit = (size_t)tail, .out = out, .json = json};
	struct tailer t = {.path = decision_log_path(memory_dir), .fd = -1};
	sb_init(&t.partial, 0);
	/* The current file is opened first so that a rotation during the read
	 * cannot hide lines: a backup that is the same file is skipped. */
	tailer_open(&t);
	struct backup_ctx bc = {.emit = emit_to_ring, .ud = &tr};
	int rc = 0;
	for (int n = DECISION_LOG_KEEP; n >= 1; n--) {
		char *p = decision_log_backup_path(memory_dir, n);
		struct stat st;
		bool same =
		        t.fd >= 0 && stat(p, &st) == 0 && st.st_dev == t.dev && st.st_ino == t.ino;
		struct ga_err e = {{0}};
		if (!same && fsx_jsonl_read(p, DECISION_LOG_LINE_MAX_BYTES, backup_line, &bc, NULL,
		                            &e) < 0) {
			fprintf(err, "general-agent decisions: %s\n", e.msg);
			rc = 1;
		}
		free(p);
	}
	t.emit = emit_to_ring;
	t.ud = &tr;
	tailer_drain(&t);
	ring_flush(&tr);
	if (tr.seen == 0 && !follow && rc == 0)
		fprintf(err, "No decision recorded yet in %s.\n", t.path);

	if (follow) {
		struct follow_out fo = {.out = out, .json = json};
		t.emit = emit_now;
		t.ud = &fo;
		follow_loop(&t, out);
	}
	tailer_close(&t);
	sb_free(&t.partial);
	free(t.path);
	fflush(out);
	return rc;
}

/* ---- why ------------------------------------------------------------------- */

struct candidates {
	const char *prefix;
	size_t prefix_len;
	bool exact;
	char *ids[DECISIONS_CLI_MAX_CANDIDATES];
	char *where[DECISIONS_CLI_MAX_CANDIDATES]; /* "platform, conversation" */
	size_t n;
	bool more; /* another distinct id matched once the list was full */
};

/* The id as given matches the start of r's id, or — when it names no
 * platform itself (no ':') — the start of what follows r's platform
 * prefix ("911cd834" finds "space:911cd834…"). */
static int collect(void *ud, const struct decision_record *r)
{
	struct candidates *c = ud;
	const char *id = r->message_id;
	if (strncmp(id, c->prefix, c->prefix_len) != 0) {
		const char *colon = strchr(id, ':');
		if (memchr(c->prefix, ':', c->prefix_len) || !colon ||
		    strncmp(colon + 1, c->prefix, c->prefix_len) != 0)
			return 0;
		id = colon + 1;
	}
	if (id[c->prefix_len] == '\0' && id == r->message_id)
		c->exact = true;
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->ids[i], r->message_id) == 0)
			return 0;
	if (c->n == DECISIONS_CLI_MAX_CANDIDATES) {
		c->more = true;
		return 0;
	}
	c->ids[c->n] = xstrdup(r->message_id);
	c->where[c->n] = xasprintf("%s, %s", r->platform, r->conversation);
	c->n++;
	return 0;
}

static void candidates_free(struct candidates *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->ids[i]);
		free(c->where[i]);
	}
}

struct story {
	FILE *out;
	bool json;
	size_t count;
};

static int tell(void *ud, const struct decision_record *r)
{
	struct story *s = ud;
	struct strbuf sb;
	sb_init(&sb, 0);
	if (s->json) {
		char *line = decision_record_to_line(r);
		sb_puts(&sb, line);
		free(line);
	} else {
		char iso[TIME_ISO_LEN + 1];
		time_format_iso(r->time_ms, iso);
		if (s->count == 0) {
			sb_puts(&sb, "Message ");
			put_safe(&sb, r->message_id);
			sb_puts(&sb, " (");
			put_safe(&sb, r->platform);
			sb_puts(&sb, ", conversation ");
			put_safe(&sb, r->conversation[0] ? r->conversation : "-");
			sb_printf(&sb, "), first decision %.10s:\n", iso);
		}
		char clock[13]; /* "10:01:02.345" of "2026-11-23T10:01:02.345Z" */
		memcpy(clock, iso + 11, 12);
		clock[12] = '\0';
		sb_puts(&sb, "  ");
		put_col(&sb, clock, 12);
		put_col(&sb, decision_stage_name(r->stage), 9);
		put_col(&sb, decision_verdict_name(r->decision.verdict), 7);
		put_col(&sb, r->decision.rule, 20);
		put_safe(&sb, r->decision.reason[0] ? r->decision.reason : "-");
	}
	sb_putc(&sb, '\n');
	fputs(sb_cstr(&sb), s->out);
	sb_free(&sb);
	s->count++;
	return 0;
}

static const char *why_usage = "usage: general-agent why MESSAGE_ID [--json]\n"
                               "  every decision taken about one message, in order; a unique\n"
                               "  prefix of the id is enough, with or without its platform\n"
                               "  (space:911cd834 or 911cd834)\n";

int decisions_cli_why(const char *memory_dir, const char *message_id, int argc, char **argv,
                      FILE *out, FILE *err)
{
	bool json = false;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(why_usage, out);
			return 0;
		} else {
			fprintf(err, "general-agent why: unknown option '%s'\n%s", argv[i],
			        why_usage);
			return DECISIONS_CLI_EXIT_USAGE;
		}
	}
	if (!message_id || !*message_id || message_id[0] == '-') {
		fprintf(err,
		        "general-agent why: which message? Give its id (see `general-agent "
		        "decisions`).\n%s",
		        why_usage);
		return DECISIONS_CLI_EXIT_USAGE;
	}
	if (!memory_dir) {
		fprintf(err, "general-agent why: no memory directory\n");
		return 1;
	}

	struct candidates c = {.prefix = message_id, .prefix_len = strlen(message_id)};
	struct ga_err e = {{0}};
	if (decision_log_read(memory_dir, NULL, collect, &c, &e) < 0) {
		fprintf(err, "general-agent why: %s\n", e.msg);
		candidates_free(&c);
		return 1;
	}
	char *path = decision_log_path(memory_dir);
	const char *chosen = NULL;
	int rc = 0;
	if (c.exact) {
		chosen = message_id;
	} else if (c.n == 0) {
		fprintf(err,
		        "No decision about message '%s' was recorded (looked in %s and its "
		        "backups).\n",
		        message_id, path);
		rc = 1;
	} else if (c.n == 1 && !c.more) {
		chosen = c.ids[0];
		fprintf(err, "'%s' matches message ", message_id);
		fput_safe(err, chosen);
		fputc('\n', err);
	} else {
		fprintf(err, "'%s' matches %s%zu messages; give more of the id:\n", message_id,
		        c.more ? "more than " : "", c.n);
		for (size_t i = 0; i < c.n; i++) {
			fputs("  ", err);
			fput_safe(err, c.ids[i]);
			fputs("  (", err);
			fput_safe(err, c.where[i]);
			fputs(")\n", err);
		}
		if (c.more)
			fprintf(err, "  ...\n");
		rc = 1;
	}
	if (chosen) {
		struct story s = {.out = out, .json = json};
		if (decision_log_read(memory_dir, chosen, tell, &s, &e) < 0) {
			fprintf(err, "general-agent why: %s\n", e.msg);
			rc = 1;
		}
	}
	fflush(out);
	free(path);
	candidates_free(&c);
	return rc;
}
