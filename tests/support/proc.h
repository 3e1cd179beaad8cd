/*
 * proc — run a real binary of the build (general-agent, agent-space, the
 * fakes) as a child process for black-box tests: its own working directory,
 * a clean environment, a stdin pipe, and stdout/stderr captured to files
 * that tests poll. The one process-spawning helper of the integration
 * harnesses (tests/integration/daemon, space, space-client).
 *
 * Rules of use: proc_start_* fills a caller-owned struct proc; every started
 * process must end with proc_cleanup (kills it if still running, reaps it,
 * removes the capture files it created). Children die with the test process
 * (PR_SET_PDEATHSIG), so a crashed test leaves no server behind.
 *
 * Environment: the child gets PATH, HOME, TMPDIR, LANG and the sanitizer
 * options of the test process, nothing else, then the isolation defaults
 * below, then the caller's "K=V" strings in order (a later string replaces
 * an earlier one with the same name; a bare "K" removes K, e.g. "SPACE_URL"
 * for a test of discovery). At most PROC_MAX_ENV variables and
 * PROC_MAX_ARGS arguments: more is a test bug and fails proc_start_*
 * (returns -1).
 *
 * Isolation: no test reaches a room, a port, a name or an
 * mDNS bus a user of this machine may be using. Unless the caller's env or
 * the .env the child reads (<cwd>/.env, --env FILE, --home DIR/.env,
 * AGENT_HOME/.env) names the variable, every child gets
 *   DBUS_SYSTEM_BUS_ADDRESS=PROC_ISOLATED_BUS (no machine avahi: a test that
 *     needs mDNS passes its private bus);
 * general-agent also SPACE_URL and GA_SPACE_LOCALHOST_URL at a closed
 * loopback port and GA_SPACE_MDNS=0 (never ws://localhost:7777); agent-space
 * also SPACE_PORT=0, SPACE_BIND=127.0.0.1 and SPACE_NAME=ga-test-<pid>
 * (never port 7777 or the room name "agent-space"). The home is the cwd the
 * caller gives: a fresh temp directory from home_new.
 *
 * Output: by default stdout and stderr go to two fresh files in the working
 * directory (removed by proc_cleanup). With proc_opts.log_path both are
 * appended, interleaved as written, to that one file, which is kept (so a
 * restarted server's output accumulates in one log).
 *
 * All descriptors are close-on-exec in the parent: a child never inherits
 * another child's stdin pipe, so closing stdin always delivers EOF.
 */
#ifndef GA_TESTS_SUPPORT_PROC_H
#define GA_TESTS_SUPPORT_PROC_H

#include <stdbool.h>
#include <sys/types.h>

#define PROC_MAX_ENV  64
#define PROC_MAX_ARGS 32

/* Nothing listens on port 1 of the loopback: a connection is refused. */
#define PROC_CLOSED_URL             "ws://127.0.0.1:1"
#define PROC_ISOLATED_SPACE_URL     "SPACE_URL=" PROC_CLOSED_URL
#define PROC_ISOLATED_LOCALHOST_URL "GA_SPACE_LOCALHOST_URL=" PROC_CLOSED_URL
#define PROC_ISOLATED_BUS           "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/ga-test-no-bus"

struct proc {
	pid_t pid;
	int stdin_fd; /* write end; -1 once closed */
	char out_path[512];
	char err_path[512];
	bool keep_capture; /* output went to the caller's log_path: not removed */
	int status;        /* wait status, valid once exited */
	bool exited;
};

struct proc_opts {
	/* A file name in $GA_BUILD_DIR ("agent-space"), or a path containing
	 * a '/' used as is. */
	const char *binary;
	const char *cwd;         /* the child's working directory */
	const char *const *argv; /* NULL-terminated, without argv[0]; may be NULL */
	const char *const *env;  /* NULL-terminated "K=V"; may be NULL */
	const char *log_path;    /* NULL, or one file for stdout+stderr (appended, kept) */
	/* When the test runs as root, run the child as nobody (uid and gid
	 * PROC_NOBODY, no supplementary groups) so that file permissions apply
	 * to it as to a user; root passes every permission check. Ignored when
	 * the test is not root (the child is the test's user anyway). The cwd
	 * must then be enterable by nobody. */
	bool as_nobody;
};

#define PROC_NOBODY 65534

/* A fresh agent home with SOUL.md and SELF.md.template copied from the
 * source tree. Caller frees; remove with home_remove. */
char *home_new(void);
void home_remove(char *home);
void home_write(const char *home, const char *name, const char *content);
char *home_read(const char *home, const char *name);

/* The environment proc_start_opts gives the child o describes (the kept
 * variables, the isolation defaults, o->env), for a test that must start a
 * child itself (on a pseudo-terminal, say) and still keep it out of the
 * user's world: pass it to execve. NULL-terminated; NULL (after a message)
 * when o->env holds too many variables. Free with proc_env_free. */
char **proc_env_new(const struct proc_opts *o);
void proc_env_free(char **envv);

/* Starts a binary as described by o. 0, or -1 (nothing left running). */
int proc_start_opts(struct proc *p, const struct proc_opts *o);
/* proc_start_opts with output captured to two files in cwd. */
int proc_start_bin(struct proc *p, const char *binary, const char *cwd, const char *const *argv,
                   const char *const *env);
/* Starts $GA_BUILD_DIR/general-agent with argv in cwd `home`. */
int proc_start(struct proc *p, const char *home, const char *const *argv, const char *const *env);
/* True while the child runs (reaps it without blocking once it exited). */
bool proc_alive(struct proc *p);
/* Waits up to timeout_ms for exit; returns the exit code, 128+sig if
 * killed, or -1 on timeout. */
int proc_wait(struct proc *p, int timeout_ms);
/* Polls stderr (and stdout) until it contains needle; true if seen. */
bool proc_wait_output(struct proc *p, const char *needle, int timeout_ms);
/* Whole captured stderr / stdout (caller frees; NULL if unreadable). With
 * a log_path both return the one log. */
char *proc_stderr(struct proc *p);
char *proc_stdout(struct proc *p);
/* Sends sig if the child still runs. */
void proc_signal(struct proc *p, int sig);
/* Writes all of text to the child's stdin: 0, or -1 (stdin closed, or the
 * child stopped reading). SIGPIPE is ignored for the test process. */
int proc_write_stdin(struct proc *p, const char *text);
void proc_close_stdin(struct proc *p);
/* Kills if still running, reaps, removes capture files. */
void proc_cleanup(struct proc *p);

/* Runs general-agent to completion (timeout 10 s); returns the exit code. */
int proc_run(const char *home, const char *const *argv, const char *const *env, char **out,
             char **err);

#endif
