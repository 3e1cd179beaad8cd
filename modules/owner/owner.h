/*
 * owner — conversation with the agent's owner at the terminal.
 *
 * The owner's word is an instruction (runtime-bluesky.md §8). Each line the
 * owner submits becomes one turn: system prompt = SOUL + SELF + the
 * owner-communication skill; messages = a short rolling transcript of this
 * terminal session plus the new line; tools = the owner-mode tools the
 * agent's capabilities allow (--social-only removes every GitHub tool).
 * The tools are the caller's (the daemon selects the owner-mode tools of
 * local-tools and gives them a sink — modules/pipeline/actions.h — where a
 * tool call becomes a commitment in the ledger or a message through the
 * pipeline); this module does not know local-tools. Owner turns are
 * allowed past the daily token budget.
 *
 * Turns run one at a time, in order (a second line waits for the first
 * turn's answer); at most OWNER_QUEUE_MAX wait. A fatal model
 * error (the key is refused) is handed to opts.fatal — the daemon then
 * tells the owner and exits 69.
 *
 * Bounds: OWNER_QUEUE_MAX waiting lines, OWNER_TRANSCRIPT_TURNS remembered
 * exchanges of at most OWNER_TURN_MAX_BYTES each, OWNER_MAX_ROUNDS tool
 * rounds per turn.
 */
#ifndef GA_MODULES_OWNER_OWNER_H
#define GA_MODULES_OWNER_OWNER_H

#include <stdbool.h>
#include <uv.h>

#include "adapters/llm/llm.h"
#include "common/err.h"
#include "modules/budget/budget.h"
#include "modules/compose/compose.h"
#include "modules/skills/skills.h"

#define OWNER_QUEUE_MAX        8
#define OWNER_TRANSCRIPT_TURNS 8
#define OWNER_TURN_MAX_BYTES   4000
#define OWNER_MAX_ROUNDS       8
#define OWNER_SKILL            "owner-communication"

struct owner;

struct owner_opts {
	uv_loop_t *loop;
	struct llm_client *llm;           /* borrowed, must outlive the owner */
	struct budget *budget;            /* borrowed; may be NULL */
	const struct skills *skills;      /* borrowed */
	const struct compose_tool *tools; /* borrowed; the owner-mode tools */
	size_t n_tools;
	const char *bluesky_username; /* copied; "" when unset */
	const char *owner_handle;     /* copied; "" when unset */
	/* The agent's answer (or a note) for the terminal. */
	void (*say)(void *ud, const char *text);
	/* The model refused the credentials: msg names the variable to fix. */
	void (*fatal)(void *ud, const char *msg);
	void *ud;
};

struct owner *owner_new(const struct owner_opts *opts);

/* The identity texts for the next turns (copied). Call at start and after
 * SIGHUP. */
void owner_set_identity(struct owner *o, const char *soul, const char *self);

/* Queues a line; the answer goes to opts.say. -1 with err when the queue
 * is full or the owner is closing. */
int owner_submit(struct owner *o, const char *line, struct ga_err *err);

/* The answer to one line, for its submitter: text (NULL when there is none:
 * why says what happened — cancelled by owner_close, the key refused, the
 * turn could not start). Called exactly once per accepted line, on the
 * loop (at once, from inside owner_submit_to, when the turn cannot start). */
typedef void (*owner_answer_fn)(void *ud, const char *text, const char *why);
/* Queues a line whose answer goes to answer(ud) instead of opts.say.
 * -1 with err as owner_submit (answer is then not called). */
int owner_submit_to(struct owner *o, const char *line, owner_answer_fn answer, void *ud,
                    struct ga_err *err);

/* True while a turn runs or lines wait. */
bool owner_busy(const struct owner *o);

/* Cancels the running turn, drops waiting lines, and frees the owner once
 * the running turn has finished (compose calls back on the loop); `closed`
 * (may be NULL) is called then. */
void owner_close(struct owner *o, void (*closed)(void *ud), void *ud);

#endif
