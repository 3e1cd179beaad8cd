/*
 * modules/space/runtime — the agent-space as the daemon runs it today:
 * join the room (link.h) with this agent's name, stable id and identity
 * summary, keep the presence, and — until a participation engine exists —
 * only log what is said:
 *   - every live chat at debug level (author, kind, chain, text);
 *   - a host message addressed to this agent at info level
 *     ("host addressed me: …");
 *   - chats replayed from the room's history at debug level.
 * It never replies (there is no model to reply with yet).
 *
 * The space runs in every mode; --social-only advertises ["social"].
 *
 * Ownership: the configuration is read during space_runtime_start and not
 * kept. space_runtime_stop() leaves the room politely and calls done once
 * every handle is closed; space_runtime_free() accepts NULL and, on a
 * runtime that has not finished stopping, tears it down at once (every
 * handle closing when it returns; memory released as they close).
 */
#ifndef GA_MODULES_SPACE_RUNTIME_H
#define GA_MODULES_SPACE_RUNTIME_H

#include <stdbool.h>
#include <uv.h>

#include "common/config.h"
#include "common/err.h"
#include "modules/identity/self.h"
#include "modules/space/link.h"
#include "modules/state/state.h"

struct space_runtime_config {
	const struct ga_config *cfg; /* agent_name, space_url */
	const struct state_store *st;
	const char *soul_text;       /* may be NULL */
	const struct self_doc *self; /* may be NULL */
	const char *version;
	bool social_only;
};

struct space_runtime;

/* NULL with err when the link cannot be made (an unusable agent name). */
struct space_runtime *space_runtime_start(uv_loop_t *loop, const struct space_runtime_config *rc,
                                          struct ga_err *err);
void space_runtime_stop(struct space_runtime *rt, void (*done)(void *ud), void *ud);
void space_runtime_free(struct space_runtime *rt);
struct space_link *space_runtime_link(struct space_runtime *rt);

#endif
