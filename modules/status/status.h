/*
 * status — what memory/status.json holds: the running daemon's state as
 * one JSON object, written by the daemon (every STATUS_INTERVAL_MS, at each
 * heartbeat, on a pause, at the stop), served live by the dashboard
 * (/api/status) and read back by `general-agent status` and `doctor`.
 *
 * The object (every key always present unless noted):
 *   pid, state ("running" | "stopped"), agent, startedAt (ISO), socialOnly,
 *   features {model|bluesky|github|space|owner: {enabled, detail}},
 *   paused, jobsInFlight, lastActivity (ISO, once there was one),
 *   lastActivityBy {platform: ISO} (these four only with a pipeline),
 *   coordination (text), commitments {pending, in_progress, completed,
 *   failed, abandoned}, services {name: object} (the platform services';
 *   the workspace's is read back by status_report: modules/workspace),
 *   space (the room in a sentence; only when the agent has a room),
 *   jobs [{name, intervalMs, runs, skipped, running}].
 *
 * Reading it back: status_report prints it for a person; the kill switch
 * (control.h) is passed separately, because it is its own file and holds
 * even when no status was ever written (the daemon never ran).
 *
 * Ownership: status_build returns an object the caller deletes; it takes
 * the services object given (in->services, may be NULL). Everything else
 * is borrowed for the call.
 */
#ifndef GA_MODULES_STATUS_STATUS_H
#define GA_MODULES_STATUS_STATUS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/config.h"
#include "common/err.h"
#include "common/strbuf.h"
#include "modules/pipeline/control.h"
#include "modules/state/state.h"

#define STATUS_STATE_NAME "status"

struct pipeline;
struct ledger;
struct sched;

struct status_inputs {
	const char *state; /* "running" | "stopped" */
	const struct ga_config *cfg;
	bool social_only;
	int64_t started_ms;
	const struct pipeline *pipeline; /* NULL: no pipeline (its keys are left out) */
	const char *coordination;        /* "redis …", "space …", "local", "none" */
	const struct ledger *ledger;     /* NULL: every count 0 */
	const struct sched *sched;       /* NULL: no jobs */
	const char *space;               /* the room described, or NULL: no room */
	cJSON *services;                 /* {name: status}, taken; NULL: {} */
};

cJSON *status_build(const struct status_inputs *in);

/* Saves the object as memory/status.json (atomically). 0, or -1 with err. */
int status_save(const struct state_store *st, const cJSON *s, int64_t now_ms, struct ga_err *err);
/* The saved object (caller deletes), or NULL when none was written. */
cJSON *status_load(const struct state_store *st);

/* `general-agent status` for a person, to out: running (pid) or not, then
 * the saved object s (NULL: "no status recorded yet"), the token budget
 * line (tokens, may be NULL) and the kill switch cs, always. With a
 * workspace service: what the agent waits for on each open pull request
 * ("now": whose review, a revision, a merge, the owner; since when, as
 * of now_ms) and the pull requests, one line each (wsp_view.h). */
void status_report(FILE *out, bool running, int pid, const char *memory_dir, const cJSON *s,
                   const char *tokens, const struct control_state *cs, int64_t now_ms);

/* The owner's /status: a few lines from the object (paused, the jobs, the
 * room, the coordination, the messages in flight, what the agent waits
 * for on pull requests as of now_ms), appended to out. */
void status_console(struct strbuf *out, const cJSON *s, int64_t now_ms);

#endif
