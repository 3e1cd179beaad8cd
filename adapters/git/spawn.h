/*
 * spawn — one child process on the libuv loop, the agent's only way to run a
 * program: git (git.h), the sandboxed coder and a task's tests
 * (modules/coder).
 *
 * Rules it keeps, whoever calls it:
 *   - argv only, never a shell: the program gets exactly the strings given;
 *   - the environment is exactly opts.env (nothing of the agent's own is
 *     inherited: no token reaches a child unless the caller puts it there);
 *   - no descriptor of the agent leaks: every descriptor >= 3 is marked
 *     close-on-exec before the child starts (a library that forgot
 *     O_CLOEXEC, a Redis socket, must not reach a coder);
 *   - the child leads a new session and process group, so a timeout or
 *     spawn_cancel ends the whole tree: SIGTERM to the group, SIGKILL
 *     SPAWN_KILL_GRACE_MS later; when the child exits, whatever is left in
 *     its group is killed too;
 *   - output is bounded: per stream at most opts.max_output bytes are kept
 *     (the tail by default, the head with keep_head) and the rest counted in
 *     *_dropped; a grandchild that keeps a pipe open after the child exited
 *     is cut off after SPAWN_DRAIN_MS;
 *   - stdin is opts.stdin_data (written, then closed) or /dev/null.
 *
 * The completion callback runs exactly once, on the loop, never from inside
 * spawn_start or spawn_cancel; the result it gets is borrowed for the call.
 * The struct spawn is freed by the module after the callback (do not use
 * the pointer afterwards). Ignore SIGPIPE in the process (the daemon does):
 * a child that stops reading its stdin must not kill the agent.
 */
#ifndef GA_ADAPTERS_GIT_SPAWN_H
#define GA_ADAPTERS_GIT_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"

#define SPAWN_DEFAULT_MAX_OUTPUT ((size_t)64 * 1024)
#define SPAWN_MAX_OUTPUT_LIMIT   ((size_t)16 * 1024 * 1024)
#define SPAWN_KILL_GRACE_MS      2000
#define SPAWN_DRAIN_MS           1000

struct spawn;

struct spawn_opts {
	const char *file;        /* the program: a path, or a name looked up in env's PATH */
	const char *const *argv; /* NULL-terminated, argv[0] included */
	const char *const *env;  /* NULL-terminated "K=V": the child's whole environment */
	const char *cwd;         /* NULL: the agent's */
	const char *stdin_data;  /* NULL: /dev/null */
	size_t stdin_len;
	uint64_t timeout_ms; /* 0: none */
	size_t max_output;   /* per stream; 0: SPAWN_DEFAULT_MAX_OUTPUT */
	bool keep_head;      /* keep the first max_output bytes instead of the last */
};

struct spawn_result {
	bool started;    /* false: the program could not be started (error says why) */
	int exit_status; /* when it exited */
	int term_signal; /* when a signal ended it, else 0 */
	bool timed_out;
	bool cancelled;
	const char *out; /* NUL-terminated, the bytes kept */
	size_t out_len;
	uint64_t out_dropped;
	const char *err;
	size_t err_len;
	uint64_t err_dropped;
	uint64_t elapsed_ms;
	char error[GA_ERR_MSG_MAX]; /* a sentence when !started */
};

typedef void (*spawn_done_fn)(void *ud, const struct spawn_result *r);

/* Starts the program. Returns the handle, or NULL with err when the options
 * are unusable (no argv, max_output over SPAWN_MAX_OUTPUT_LIMIT). A program
 * that cannot be executed (missing, not executable) is not an error here:
 * done is called with started = false. */
struct spawn *spawn_start(uv_loop_t *loop, const struct spawn_opts *opts, spawn_done_fn done,
                          void *ud, struct ga_err *err);

/* Ends the child's process group (SIGTERM, then SIGKILL); done is called
 * with cancelled = true. NULL and a finished spawn are fine. */
void spawn_cancel(struct spawn *s);

/* The child's pid (also its process group), 0 when it did not start. */
int spawn_pid(const struct spawn *s);

/* True when r says the program ran and exited with status 0. */
bool spawn_ok(const struct spawn_result *r);

/* One sentence for a failed run: "timed out after 30 s", "exit status 2",
 * "killed by signal 9", "cannot start git: no such file". */
void spawn_describe(const struct spawn_result *r, uint64_t timeout_ms, char *buf, size_t cap);

#endif
