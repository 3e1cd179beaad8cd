/*
 * terminal — lines from the owner's terminal (or a pipe on stdin).
 *
 * Reads stdin on the loop (a TTY or a pipe; a file or /dev/null means
 * nobody is typing and nothing is read), splits it into lines (a trailing
 * CR is removed) and hands each to on_line. A line longer than
 * TERMINAL_LINE_MAX bytes is dropped whole (its tail is never taken for a
 * line of its own) with a warning. EOF on a pipe ends the reading, not the
 * agent. The prompt ("> ") is shown only on a TTY.
 *
 * terminal_stop() stops reading at once: lines already read but not yet
 * handed over in the same read are not handed over (nothing new starts
 * during a shutdown). The handle is closed by terminal_close (done may be
 * NULL) or by whoever walks the loop's handles at the end.
 */
#ifndef GA_ADAPTERS_TERMINAL_TERMINAL_H
#define GA_ADAPTERS_TERMINAL_TERMINAL_H

#include <stdbool.h>
#include <uv.h>

#define TERMINAL_LINE_MAX 4096
#define TERMINAL_PROMPT   "> "

struct terminal;

struct terminal_handlers {
	void (*on_line)(void *ud, const char *line);
	void *ud;
};

/* NULL when stdin is not a TTY or a pipe (nobody is typing). */
struct terminal *terminal_start(uv_loop_t *loop, const struct terminal_handlers *h);
bool terminal_is_tty(const struct terminal *t);
/* Shows the prompt (TTY only), unless it is showing already. */
void terminal_prompt(struct terminal *t);
/* Prints text and a newline on stdout for the owner. On a TTY where the
 * prompt is showing, the text replaces the prompt's line and the prompt
 * comes back under it (an answer never reads "> Ada: …"). t NULL: plain. */
void terminal_say(struct terminal *t, const char *text);
void terminal_stop(struct terminal *t);
/* Stops, closes the handle and frees; NULL accepted. */
void terminal_close(struct terminal *t);

#endif
