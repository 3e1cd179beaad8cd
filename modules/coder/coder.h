/*
 * coder — the external coder the owner configures (Claude Code, aider,
 * codex, any command), and a task's tests, run in a bubblewrap sandbox on
 * the loop.
 *
 * Configuration (environment or .env; coder_config_load names the variable
 * in every error):
 *   CODER_COMMAND        the command, an argv template split like a shell
 *                        splits words (quotes and backslashes) but never run
 *                        by one: no $VAR, no globs, no pipes. Placeholders:
 *                        {prompt_file} (the prompt as a file), {prompt} (the
 *                        prompt as one argument), {work_dir} (the clone).
 *                        Without {prompt_file} or {prompt} the prompt arrives
 *                        on stdin. Unset: no coder, task work is off.
 *   CODER_SANDBOX        on (default) | off. Off runs the command without
 *                        bubblewrap (for an agent that runs in its own
 *                        container): the environment is still scrubbed, the
 *                        timeout and bounds still hold, the file system and
 *                        the network are not fenced.
 *   CODER_NETWORK        off (default) | on: the sandbox shares the host's
 *                        network (a model-backed coder needs it to reach its
 *                        provider; so can it reach anything on 127.0.0.1).
 *   CODER_TIMEOUT_S      default 600, 1..86400: the whole process tree dies.
 *   CODER_RO_PATHS       ':'-separated absolute paths (or ~/...) the coder
 *                        needs read-only (its binary, its runtime); a symlink
 *                        is bound with its target. None may be or contain the
 *                        agent's home or memory.
 *   CODER_ENV            ','-separated names of variables passed into the
 *                        sandbox with their values (the coder's own API key,
 *                        e.g. ANTHROPIC_API_KEY); the agent's secrets
 *                        (AGENT_GITHUB_TOKEN, AGENT_BLUESKY_PASSWORD,
 *                        DASHBOARD_TOKEN, REDIS_URL, LLM_API_KEY,
 *                        AI_GATEWAY_API_KEY) are refused.
 *   CODER_HOME           a directory the coder keeps as its HOME across runs
 *                        (a login, a cache), bound read-write; default: an
 *                        empty HOME that disappears with the run. It may not
 *                        be, contain or lie inside the agent's home, its
 *                        memory, or the user's HOME.
 *   TASK_TEST_COMMAND    the tests of a task's repository, an argv template
 *                        like CODER_COMMAND ({work_dir} only); unset: found
 *                        in the repository (coder_detect_tests).
 *   TASK_TEST_TIMEOUT_S  default 300, 1..86400.
 *
 * The sandbox (bwrap): new user, pid, ipc, uts, cgroup and (unless
 * CODER_NETWORK=on) network namespaces; --die-with-parent; --new-session
 * (no terminal injection); as uid 1000 when the agent runs as root. Visible,
 * read-only: /usr, the /bin /sbin /lib* links or directories, and of /etc
 * only what programs need and no secret lives in (CODER_ETC_ALLOW; no
 * shadow files, SSH host keys, sudoers, /etc/environment, package
 * manager credentials); a passwd/group of two users. Writable: the clone
 * (at its own path), /tmp (empty, in memory), HOME. Also read-only: the
 * objects the clone borrows (git alternates), the prompt file, the paths
 * of CODER_RO_PATHS. Everything else — /root, /home, the agent's home,
 * .env, memory, SSH keys, the agent's source tree, other processes — does
 * not exist inside. The environment is exactly: PATH, HOME, USER, LOGNAME,
 * LANG, TERM=dumb, TMPDIR, CI=true, the commit identity (GIT_AUTHOR_*,
 * GIT_COMMITTER_*), GIT_CONFIG_NOSYSTEM=1 and the CODER_ENV variables: no
 * token, no secret of the agent. The values travel in bwrap's environment,
 * never in its argv (which other users could read with ps).
 *
 * Without bwrap (or when it cannot create its namespaces) and with
 * CODER_SANDBOX on, coder_run refuses with a decision that says what to do;
 * coder_doctor says the same for `general-agent doctor`.
 *
 * Outcome of a coder run (§3.9 step 4): exit 0 → done; a non-zero exit
 * whose error text (stderr, else stdout) says blocked / cannot proceed /
 * dependency / missing → blocked (the task waits for something); any
 * other exit, a timeout or a signal → failed.
 *
 * Memory: struct coder_config owns its strings (coder_config_free). Results
 * passed to callbacks are borrowed for the call. Jobs free themselves after
 * their callback. Callbacks never run from inside the call that started
 * them.
 */
#ifndef GA_MODULES_CODER_CODER_H
#define GA_MODULES_CODER_CODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/env.h"
#include "common/err.h"
#include "modules/decisions/decision.h"

#define CODER_DEFAULT_TIMEOUT_S      600
#define CODER_DEFAULT_TEST_TIMEOUT_S 300
#define CODER_MAX_TIMEOUT_S          86400
#define CODER_OUTPUT_MAX_BYTES       ((size_t)64 * 1024) /* per stream, the tail kept */
#define CODER_TESTS_TAIL_BYTES       2048                /* of test output in a report */
#define CODER_MAX_ARGS               64
#define CODER_MAX_RO_PATHS           16
#define CODER_MAX_ENV                16
#define CODER_PROMPT_MAX_BYTES       ((size_t)256 * 1024)
#define CODER_SANDBOX_UID            1000
#define CODER_SANDBOX_PROMPT         "/tmp/ga-task/prompt.md"
#define CODER_SANDBOX_HOME           "/tmp/home"
#define CODER_PATH                   "/usr/local/bin:/usr/bin:/bin"
#define CODER_PROBE_TIMEOUT_MS       10000

struct coder_config {
	bool configured; /* CODER_COMMAND set */
	char **argv;     /* the template, NULL-terminated */
	bool sandbox;    /* CODER_SANDBOX */
	bool network;    /* CODER_NETWORK */
	uint64_t timeout_ms;
	char **ro_paths;  /* absolute, NULL-terminated */
	char **env;       /* "NAME=value" from CODER_ENV, NULL-terminated (secret values) */
	char **env_names; /* the names alone, for doctor */
	char *home;       /* CODER_HOME or NULL */
	char **test_argv; /* TASK_TEST_COMMAND or NULL */
	uint64_t test_timeout_ms;
	char *bwrap; /* the bwrap found in PATH, or NULL */
};

/* Reads the variables above (env: the .env file, may be NULL; the process
 * environment wins). agent_home and memory_dir are what the sandbox must
 * never show. 0, or -1 with err naming the variable and the value's
 * problem. Free with coder_config_free (also after -1). */
int coder_config_load(const struct env_file *env, const char *agent_home, const char *memory_dir,
                      struct coder_config *out, struct ga_err *err);
void coder_config_free(struct coder_config *c);

/* Splits a command template into words (see CODER_COMMAND). NULL-terminated
 * array (free each and the array), or NULL with err (an open quote, a
 * trailing backslash, an unknown {placeholder}, more than CODER_MAX_ARGS
 * words, nothing at all). */
char **coder_split_command(const char *s, const char *var, struct ga_err *err);

/* What a run needs besides the configuration. */
struct coder_run_opts {
	const char *work;            /* the clone: writable, the working directory */
	const char *ctl;             /* a private directory outside the clone for the
	                              * prompt and the sandbox's passwd (created) */
	const char *prompt;          /* CODER_PROMPT_MAX_BYTES at most */
	const char *const *ro_extra; /* more read-only paths (git alternates), NULL-terminated */
	const char *git_name;        /* the commit identity in the environment */
	const char *git_email;
};

enum coder_outcome {
	CODER_DONE,
	CODER_BLOCKED,
	CODER_FAILED,
	CODER_REFUSED, /* not run: no usable sandbox, no command, bad options */
};

struct coder_result {
	enum coder_outcome outcome;
	struct decision d; /* rule: coder_done, coder_blocked, coder_failed, coder_timeout,
	                    * coder_sandbox, coder_config */
	int exit_status;
	int term_signal;
	bool timed_out;
	const char *out; /* tails (CODER_OUTPUT_MAX_BYTES) */
	const char *err;
	uint64_t dropped; /* bytes of output not kept */
	uint64_t elapsed_ms;
};

typedef void (*coder_done_fn)(void *ud, const struct coder_result *r);

struct coder_job;

/* Runs the configured coder on the prompt. NULL with err only for a
 * programming error (no config or options); a refusal (no sandbox) comes
 * through done with CODER_REFUSED. */
struct coder_job *coder_run(uv_loop_t *loop, const struct coder_config *cfg,
                            const struct coder_run_opts *o, coder_done_fn done, void *ud,
                            struct ga_err *err);
void coder_cancel(struct coder_job *j);
/* The pid (and process group) of the running command, 0 when none: the
 * caller may record it to end a coder left over by a crash. */
int coder_pid(const struct coder_job *j);

/* The bwrap argv for running cmd (NULL-terminated) in the sandbox of o
 * (caller frees each and the array), or NULL with err. Exposed for doctor
 * and the tests; coder_run uses it. */
char **coder_sandbox_argv(const struct coder_config *cfg, const struct coder_run_opts *o,
                          const char *const *cmd, struct ga_err *err);

/* Puts the coder's settings that must never be committed out of git's
 * sight: writes .claude/settings.json (no attribution trailers) unless the
 * repository has one, and lists it and aider's files in .git/info/exclude. */
int coder_prepare_work(const char *work, struct ga_err *err);

/* ---- a task's tests (GATE 2) ---- */

enum coder_tests_kind {
	CODER_TESTS_NONE,
	CODER_TESTS_OWNER, /* TASK_TEST_COMMAND */
	CODER_TESTS_NPM,   /* package.json "test" that is not npm's placeholder */
	CODER_TESTS_MAKE,  /* a Makefile with a test: (else check:) target */
};

struct coder_tests {
	enum coder_tests_kind kind;
	char *argv[CODER_MAX_ARGS + 1]; /* owned; NULL-terminated */
	char command[256];              /* for people: "npm test" */
};

/* Finds the tests of the clone, in this order: TASK_TEST_COMMAND, npm,
 * make. Files are read without following symlinks and only when regular
 * and small (the tree may be hostile). Always succeeds (kind NONE when
 * nothing is found). Free with coder_tests_free. */
void coder_detect_tests(const struct coder_config *cfg, const char *work, struct coder_tests *t);
void coder_tests_free(struct coder_tests *t);

struct coder_tests_result {
	bool found; /* the repository has tests */
	bool ran;   /* they ran (false: the runner is not installed) */
	bool passed;
	const char *line; /* "Passed", "No tests ran", "None found" (the PR's Tests line) */
	char command[256];
	char tail[CODER_TESTS_TAIL_BYTES + 1]; /* the end of the output */
	struct decision d; /* tests_passed, tests_failed, tests_timeout, tests_not_run,
	                    * tests_none, coder_sandbox */
	uint64_t elapsed_ms;
};

typedef void (*coder_tests_fn)(void *ud, const struct coder_tests_result *r);

/* Runs t in the same sandbox as the coder (the clone writable, the
 * network as configured), CI=true, with TASK_TEST_TIMEOUT_S. A kind NONE
 * answers "None found" from the loop. */
struct coder_job *coder_run_tests(uv_loop_t *loop, const struct coder_config *cfg,
                                  const struct coder_run_opts *o, const struct coder_tests *t,
                                  coder_tests_fn done, void *ud, struct ga_err *err);

/* ---- doctor ---- */

typedef void (*coder_row_fn)(void *ud, const char *what, const char *verdict, const char *detail);

/* Rows for `general-agent doctor`: the command, the sandbox (really runs
 * `bwrap … true` on a private loop, CODER_PROBE_TIMEOUT_MS at most), the
 * network, the read-only paths, the variables passed in, the tests. Returns
 * 1 when a configured coder can run, 0 when no coder is configured, -1 when
 * one is configured but cannot run (the rows say why and what to do). */
int coder_doctor(const struct env_file *env, const char *agent_home, const char *memory_dir,
                 coder_row_fn row, void *ud);

#endif
