/*
 * console — the owner's terminal as a platform of the message pipeline.
 *
 * Each line the owner types (adapters/terminal hands them over) becomes a
 * conv_event on platform "owner" (conversation "owner:terminal", author
 * kind owner, chain 0, message id "owner:<ms>-<n>") and walks the pipeline
 * like any other message: the gate applies rules 1–2 to the owner too, so
 * a paused agent answers only /resume and /status; everything the agent
 * answers is delivered privately to the terminal, and every step is in the
 * decision log (`general-agent why owner:…`).
 *
 * Commands (answered without the model): /status, /pause, /resume, /help;
 * `exit` and `quit` stop the daemon (they are not messages). Anything else
 * is a turn of the owner conversation (modules/owner), when a model is
 * configured; without one, the console says how to configure one.
 *
 * Borrowed: the pipeline and the owner (the owner may be NULL, and may be
 * set later) outlive the console's use; the console is the pipeline's
 * source for the owner platform (console_new adds it).
 */
#ifndef GA_MODULES_OWNER_CONSOLE_H
#define GA_MODULES_OWNER_CONSOLE_H

#include <stdbool.h>

#include "common/strbuf.h"
#include "modules/owner/owner.h"
#include "modules/pipeline/pipeline.h"

struct console_opts {
	struct pipeline *pipeline;
	struct owner *owner; /* NULL: no model */
	const char *agent_name;
	/* A line for the terminal (already prefixed by nothing: the console
	 * adds "<agent>: "). */
	void (*print)(void *ud, const char *text);
	/* /status: what the agent is doing, a few lines. */
	void (*status)(void *ud, struct strbuf *out);
	/* /pause, /resume: persist and apply the kill switch; 0 or -1 with why. */
	int (*set_paused)(void *ud, bool paused, struct ga_err *err);
	/* exit, quit. */
	void (*shutdown)(void *ud, const char *why);
	/* busy: the agent is working for its owner (the room is told). */
	void (*busy)(void *ud, bool busy);
	void *ud;
};

struct console;

struct console *console_new(const struct console_opts *o, struct ga_err *err);
void console_free(struct console *c); /* NULL ok */
void console_set_owner(struct console *c, struct owner *o);
/* One line from the terminal (without its newline). */
void console_line(struct console *c, const char *line);
/* Lines submitted and not yet answered. */
unsigned console_waiting(const struct console *c);

/* What the agent tells its owner at the terminal, as one line: "<name>:
 * <text>" with secrets redacted (log_redact) — the owner's answers and the
 * daemon's own notices ("I have to stop: …") alike. Caller frees. */
char *console_notice(const char *agent_name, const char *text);

#endif
