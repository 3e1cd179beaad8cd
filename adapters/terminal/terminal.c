/*
 * terminal — owner lines from stdin. See terminal.h.
 */
#include "adapters/terminal/terminal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

struct terminal {
	union {
		uv_tty_t tty;
		uv_pipe_t pipe;
	} h;
	bool is_tty;
	bool stopped;
	bool discarding; /* inside an over-long line */
	/* a prompt was shown and nothing printed since: the owner's typing
	 * (echoed by the terminal) follows it, or they pressed Enter and the
	 * cursor is on an empty line; either way a line for the owner clears
	 * it and the prompt comes back under that line */
	bool prompted;
	struct strbuf line;
	struct terminal_handlers cb;
	char slab[4096];
};

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct terminal *t = h->data;
	buf->base = t->slab;
	buf->len = sizeof t->slab;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct terminal *t = s->data;
	if (n < 0) {
		/* EOF on a pipe: the owner is gone, the agent is not. */
		if (n != UV_EOF)
			log_kv(LOG_LEVEL_WARN, "owner", "stdin read failed", "error",
			       uv_strerror((int)n));
		uv_read_stop(s);
		return;
	}
	for (ssize_t i = 0; i < n && !t->stopped; i++) {
		char c = buf->base[i];
		if (c == '\n') {
			if (t->discarding) {
				t->discarding = false;
				continue;
			}
			char *l = sb_detach(&t->line);
			size_t len = strlen(l);
			if (len && l[len - 1] == '\r')
				l[len - 1] = '\0';
			sb_init(&t->line, TERMINAL_LINE_MAX);
			t->cb.on_line(t->cb.ud, l);
			free(l);
		} else if (t->discarding) {
			continue;
		} else if (sb_putc(&t->line, c) != 0) {
			log_kv(LOG_LEVEL_WARN, "owner", "owner line too long; discarded", "max",
			       LOG_INT(TERMINAL_LINE_MAX));
			sb_reset(&t->line);
			t->discarding = true;
		}
	}
}

struct terminal *terminal_start(uv_loop_t *loop, const struct terminal_handlers *h)
{
	uv_handle_type type = uv_guess_handle(0);
	if (type != UV_TTY && type != UV_NAMED_PIPE)
		return NULL; /* /dev/null, a file, or closed: nobody is typing */
	struct terminal *t = xcalloc(1, sizeof *t);
	t->cb = *h;
	if (type == UV_TTY) {
		if (uv_tty_init(loop, &t->h.tty, 0, 1) != 0) {
			free(t);
			return NULL;
		}
		t->is_tty = true;
	} else {
		if (uv_pipe_init(loop, &t->h.pipe, 0) != 0) {
			free(t);
			return NULL;
		}
		if (uv_pipe_open(&t->h.pipe, 0) != 0) {
			uv_close((uv_handle_t *)&t->h.pipe, (uv_close_cb)free);
			return NULL;
		}
	}
	t->h.tty.data = t;
	sb_init(&t->line, TERMINAL_LINE_MAX);
	uv_read_start((uv_stream_t *)&t->h, on_alloc, on_read);
	return t;
}

bool terminal_is_tty(const struct terminal *t)
{
	return t && t->is_tty;
}

void terminal_prompt(struct terminal *t)
{
	if (!t || !t->is_tty || t->stopped || t->prompted)
		return;
	fputs(TERMINAL_PROMPT, stdout);
	fflush(stdout);
	t->prompted = true;
}

void terminal_say(struct terminal *t, const char *text)
{
	bool over_prompt = t && t->is_tty && t->prompted && !t->stopped;
	if (over_prompt)
		fputs("\r\033[K", stdout); /* the prompt's line, cleared */
	fputs(text, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	if (over_prompt) {
		t->prompted = false;
		terminal_prompt(t);
	}
}

void terminal_stop(struct terminal *t)
{
	if (!t || t->stopped)
		return;
	t->stopped = true;
	uv_read_stop((uv_stream_t *)&t->h);
}

static void on_closed(uv_handle_t *h)
{
	struct terminal *t = h->data;
	sb_free(&t->line);
	free(t);
}

void terminal_close(struct terminal *t)
{
	if (!t)
		return;
	terminal_stop(t);
	if (!uv_is_closing((uv_handle_t *)&t->h))
		uv_close((uv_handle_t *)&t->h, on_closed);
}
