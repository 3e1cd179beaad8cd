/*
 * control — the kill switch: paused or not, persisted in
 * the memory directory as the state file control.json
 *   {"version":…, "savedAt":…, "data": {"paused": true, "since": "<ISO>", "by": "owner"}}
 * so a restart stays paused. Written by the owner's /pause and /resume at
 * the terminal and by `general-agent pause` / `resume` from another shell;
 * a running daemon watches the file (control_watch, a stat poll every
 * CONTROL_POLL_MS) and picks a change up without a restart.
 *
 * Any version of the file is accepted (a pause must survive an upgrade); a
 * corrupt file is moved aside by the state store and reads as paused — a
 * kill switch fails safe — with a warning naming the file.
 */
#ifndef GA_MODULES_PIPELINE_CONTROL_H
#define GA_MODULES_PIPELINE_CONTROL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "common/err.h"
#include "modules/state/state.h"

#define CONTROL_STATE_NAME "control"
#define CONTROL_POLL_MS    1000

/* The persisted state: paused, since (epoch ms, 0 unknown) and by whom
 * ("owner", "cli"; cut to 31 bytes). */
struct control_state {
	bool paused;
	int64_t since_ms;
	char by[32];
};

/* Reads the state; a missing file is "not paused". Never fails: a corrupt
 * file reads as paused (warning logged). */
void control_load(const struct state_store *st, struct control_state *out);
int control_save(const struct state_store *st, bool paused, const char *by, int64_t now_ms,
                 struct ga_err *err);

struct control_watch;
/* changed(ud, paused) is called on the loop when the file's paused value
 * differs from the last one seen. NULL on failure (logged). */
struct control_watch *control_watch_start(uv_loop_t *loop, const struct state_store *st,
                                          bool paused_now, void (*changed)(void *ud, bool paused),
                                          void *ud);
/* Tells the watch about a change made in this process (no callback). */
void control_watch_seen(struct control_watch *w, bool paused);
/* Closes and frees (on the loop). NULL ok. */
void control_watch_close(struct control_watch *w);

/* `general-agent pause` / `resume` / the state for `status`: writes the
 * file and says what changed on out. 0, or 1 with the error on err. */
int control_cli(const char *memory_dir, const char *version, bool pause, FILE *out, FILE *err);

#endif
