/* spawn — a child process on the loop: argv only, a given environment, its
 * own process group, a timeout, bounded output (see spawn.h). */
#include "adapters/git/spawn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/timeutil.h"
#include "common/xalloc.h"

#define READ_CHUNK 65536

struct stream {
	uv_pipe_t pipe;
	struct spawn *owner;
	bool open;
	char *buf;
	size_t len;
	size_t max;
	bool keep_head;
	uint64_t dropped;
};

struct spawn {
	uv_loop_t *loop;
	uv_process_t proc;
	bool proc_inited;
	struct stream out;
	struct stream err;
	uv_pipe_t in;
	bool in_open;
	uv_write_t wreq;
	char *stdin_copy;
	uv_timer_t timer; /* the timeout, then the kill grace */
	uv_timer_t drain; /* pipes left open after the exit */
	int closing;      /* handles whose close callback is pending */
	bool exited;
	bool finishing;
	bool killing; /* SIGTERM sent: the timer now waits for the grace */
	bool timed_out;
	bool cancelled;
	int exit_status;
	int term_signal;
	pid_t pid;
	uint64_t t0;
	uint64_t elapsed;
	uint64_t timeout_ms;
	struct spawn_result res;
	spawn_done_fn done;
	void *ud;
	char chunk[READ_CHUNK];
};

/* Every descriptor from 3 up stops at exec. The daemon is one thread, so
 * nothing opens a descriptor between this and uv_spawn's fork. */
static void cloexec_from_3(void)
{
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	int self = dirfd(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);
		if (fd < 3 || fd == self)
			continue;
		int fl = fcntl(fd, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
	}
	closedir(d);
}

static void stream_append(struct stream *st, const char *p, size_t n)
{
	if (st->keep_head) {
		size_t room = st->max - st->len;
		size_t take = n < room ? n : room;
		memcpy(st->buf + st->len, p, take);
		st->len += take;
		st->dropped += n - take;
	} else if (n >= st->max) {
		st->dropped += st->len + (n - st->max);
		memcpy(st->buf, p + (n - st->max), st->max);
		st->len = st->max;
	} else {
		if (st->len + n > st->max) {
			size_t drop = st->len + n - st->max;
			memmove(st->buf, st->buf + drop, st->len - drop);
			st->len -= drop;
			st->dropped += drop;
		}
		memcpy(st->buf + st->len, p, n);
		st->len += n;
	}
	st->buf[st->len] = '\0';
}

/* The result is complete and every handle closed: report, then free. */
static void complete(struct spawn *s)
{
	s->res.out = s->out.buf;
	s->res.out_len = s->out.len;
	s->res.out_dropped = s->out.dropped;
	s->res.err = s->err.buf;
	s->res.err_len = s->err.len;
	s->res.err_dropped = s->err.dropped;
	s->res.exit_status = s->exit_status;
	s->res.term_signal = s->term_signal;
	s->res.timed_out = s->timed_out;
	s->res.cancelled = s->cancelled;
	s->res.elapsed_ms = s->elapsed;
	s->done(s->ud, &s->res);
	free(s->out.buf);
	free(s->err.buf);
	free(s->stdin_copy);
	free(s);
}

/* A close finished. Before finish() (the stdin pipe closes once written)
 * that is all; after it, the last one completes the spawn. */
static void release(struct spawn *s)
{
	if (--s->closing == 0 && s->finishing)
		complete(s);
}

static void on_closed(uv_handle_t *h)
{
	release(h->data);
}

static void close_handle(struct spawn *s, uv_handle_t *h)
{
	if (uv_is_closing(h))
		return;
	h->data = s;
	s->closing++;
	uv_close(h, on_closed);
}

/* Everything that can still fire is closed; done runs once the last close
 * callback has. */
static void finish(struct spawn *s)
{
	if (s->finishing)
		return;
	s->finishing = true;
	s->elapsed = time_mono_ms() - s->t0;
	s->closing++; /* held until every close below is requested */
	close_handle(s, (uv_handle_t *)&s->timer);
	close_handle(s, (uv_handle_t *)&s->drain);
	if (s->proc_inited)
		close_handle(s, (uv_handle_t *)&s->proc);
	if (s->in_open)
		close_handle(s, (uv_handle_t *)&s->in);
	close_handle(s, (uv_handle_t *)&s->out.pipe);
	close_handle(s, (uv_handle_t *)&s->err.pipe);
	release(s);
}

static void maybe_finish(struct spawn *s)
{
	if (s->exited && !s->out.open && !s->err.open)
		finish(s);
}

static void stream_stop(struct stream *st)
{
	if (!st->open)
		return;
	st->open = false;
	uv_read_stop((uv_stream_t *)&st->pipe);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct stream *st = h->data;
	buf->base = st->owner->chunk;
	buf->len = sizeof st->owner->chunk;
}

static void on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf)
{
	struct stream *st = h->data;
	if (n > 0) {
		stream_append(st, buf->base, (size_t)n);
		return;
	}
	if (n < 0) {
		stream_stop(st);
		maybe_finish(st->owner);
	}
}

static void group_kill(struct spawn *s, int sig)
{
	if (s->pid > 0)
		kill(-s->pid, sig);
}

static void on_timer(uv_timer_t *t)
{
	struct spawn *s = t->data;
	if (!s->killing) {
		s->timed_out = !s->cancelled;
		s->killing = true;
		group_kill(s, SIGTERM);
		uv_timer_start(&s->timer, on_timer, SPAWN_KILL_GRACE_MS, 0);
		return;
	}
	group_kill(s, SIGKILL);
}

static void on_drain(uv_timer_t *t)
{
	struct spawn *s = t->data;
	stream_stop(&s->out);
	stream_stop(&s->err);
	maybe_finish(s);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct spawn *s = p->data;
	s->exited = true;
	s->exit_status = (int)status;
	s->term_signal = sig;
	uv_timer_stop(&s->timer);
	/* What the child left running in its group goes with it. */
	group_kill(s, SIGKILL);
	if (s->out.open || s->err.open)
		uv_timer_start(&s->drain, on_drain, SPAWN_DRAIN_MS, 0);
	maybe_finish(s);
}

static void on_written(uv_write_t *w, int status)
{
	(void)status; /* a child that did not read its input is judged by its exit */
	struct spawn *s = w->data;
	if (s->in_open && !s->finishing) {
		s->in_open = false;
		close_handle(s, (uv_handle_t *)&s->in);
	}
}

struct spawn *spawn_start(uv_loop_t *loop, const struct spawn_opts *o, spawn_done_fn done, void *ud,
                          struct ga_err *err)
{
	if (!o->argv || !o->argv[0] || !o->file || !done) {
		err_set(err, "spawn: no program given");
		return NULL;
	}
	size_t max = o->max_output ? o->max_output : SPAWN_DEFAULT_MAX_OUTPUT;
	if (max > SPAWN_MAX_OUTPUT_LIMIT) {
		err_set(err, "spawn: an output bound of %zu bytes is over the limit of %zu", max,
		        SPAWN_MAX_OUTPUT_LIMIT);
		return NULL;
	}
	struct spawn *s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->done = done;
	s->ud = ud;
	s->timeout_ms = o->timeout_ms;
	s->t0 = time_mono_ms();
	struct stream *streams[2] = {&s->out, &s->err};
	for (int i = 0; i < 2; i++) {
		streams[i]->owner = s;
		streams[i]->max = max;
		streams[i]->keep_head = o->keep_head;
		streams[i]->buf = xmalloc(max + 1);
		streams[i]->buf[0] = '\0';
		uv_pipe_init(loop, &streams[i]->pipe, 0);
		streams[i]->pipe.data = streams[i];
	}
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
	uv_timer_init(loop, &s->drain);
	s->drain.data = s;
	uv_stdio_container_t stdio[3];
	if (o->stdin_data) {
		uv_pipe_init(loop, &s->in, 0);
		s->in.data = s;
		s->in_open = true;
		stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
		stdio[0].data.stream = (uv_stream_t *)&s->in;
	} else {
		stdio[0].flags = UV_IGNORE;
	}
	stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[1].data.stream = (uv_stream_t *)&s->out.pipe;
	stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[2].data.stream = (uv_stream_t *)&s->err.pipe;
	uv_process_options_t po = {0};
	po.file = o->file;
	po.args = (char **)o->argv;
	po.env = (char **)(o->env ? o->env : (const char *const[]){NULL});
	po.cwd = o->cwd;
	po.flags = UV_PROCESS_DETACHED;
	po.stdio_count = 3;
	po.stdio = stdio;
	po.exit_cb = on_exit_cb;
	s->proc.data = s;
	cloexec_from_3();
	int rc = uv_spawn(loop, &s->proc, &po);
	s->proc_inited = true;
	if (rc != 0) {
		s->exited = true;
		err_fmt(s->res.error, sizeof s->res.error, "cannot start %s: %s", o->file,
		        uv_strerror(rc));
		finish(s);
		return s;
	}
	s->res.started = true;
	s->pid = s->proc.pid;
	s->out.open = s->err.open = true;
	uv_read_start((uv_stream_t *)&s->out.pipe, on_alloc, on_read);
	uv_read_start((uv_stream_t *)&s->err.pipe, on_alloc, on_read);
	if (o->stdin_data) {
		s->stdin_copy = xmalloc(o->stdin_len ? o->stdin_len : 1);
		memcpy(s->stdin_copy, o->stdin_data, o->stdin_len);
		uv_buf_t b = uv_buf_init(s->stdin_copy, (unsigned)o->stdin_len);
		s->wreq.data = s;
		if (uv_write(&s->wreq, (uv_stream_t *)&s->in, &b, 1, on_written) != 0) {
			s->in_open = false;
			close_handle(s, (uv_handle_t *)&s->in);
		}
	}
	if (o->timeout_ms)
		uv_timer_start(&s->timer, on_timer, o->timeout_ms, 0);
	return s;
}

void spawn_cancel(struct spawn *s)
{
	if (!s || s->finishing || s->exited)
		return;
	s->cancelled = true;
	if (!s->killing) {
		s->killing = true;
		group_kill(s, SIGTERM);
		uv_timer_start(&s->timer, on_timer, SPAWN_KILL_GRACE_MS, 0);
	}
}

int spawn_pid(const struct spawn *s)
{
	return s && s->pid > 0 ? (int)s->pid : 0;
}

bool spawn_ok(const struct spawn_result *r)
{
	return r->started && !r->timed_out && !r->cancelled && r->term_signal == 0 &&
	       r->exit_status == 0;
}

void spawn_describe(const struct spawn_result *r, uint64_t timeout_ms, char *buf, size_t cap)
{
	if (!r->started)
		err_fmt(buf, cap, "%s", r->error);
	else if (r->timed_out)
		err_fmt(buf, cap, "timed out after %llu s",
		        (unsigned long long)(timeout_ms / 1000));
	else if (r->cancelled)
		err_fmt(buf, cap, "cancelled");
	else if (r->term_signal)
		err_fmt(buf, cap, "killed by signal %d", r->term_signal);
	else if (r->exit_status)
		err_fmt(buf, cap, "exit status %d", r->exit_status);
	else
		err_fmt(buf, cap, "succeeded");
}
