/*
 * proc — run the real general-agent binary as a child process for
 * black-box tests: its own home directory, environment, a stdin pipe, and
 * stdout/stderr captured to files that tests poll.
 */
#ifndef GA_TESTS_PROC_H
#define GA_TESTS_PROC_H

#include <stdbool.h>
#include <sys/types.h>

struct proc {
	pid_t pid;
	int stdin_fd; /* write end; -1 once closed */
	char out_path[512];
	char err_path[512];
	int status; /* valid after proc_wait succeeded */
	bool exited;
};

/* A fresh agent home with SOUL.md and SELF.md.template copied from the
 * source tree. Caller frees; remove with home_remove. */
char *home_new(void);
void home_remove(char *home);
void home_write(const char *home, const char *name, const char *content);
char *home_read(const char *home, const char *name);

/* Starts $GA_BUILD_DIR/general-agent with argv (NULL-terminated, without
 * argv[0]) in cwd `home`. env: NULL-terminated "K=V" strings added to a
 * clean environment (PATH, HOME, TMPDIR, ASAN/UBSAN options kept; every
 * agent variable removed). */
int proc_start(struct proc *p, const char *home, const char *const *argv,
	       const char *const *env);
/* Waits up to timeout_ms for exit; returns the exit code, 128+sig if
 * killed, or -1 on timeout. */
int proc_wait(struct proc *p, int timeout_ms);
/* Polls stderr (and stdout) until it contains needle; true if seen. */
bool proc_wait_output(struct proc *p, const char *needle, int timeout_ms);
/* Whole captured stderr / stdout (caller frees). */
char *proc_stderr(struct proc *p);
char *proc_stdout(struct proc *p);
void proc_signal(struct proc *p, int sig);
void proc_write_stdin(struct proc *p, const char *text);
void proc_close_stdin(struct proc *p);
/* Kills if still running, reaps, removes capture files. */
void proc_cleanup(struct proc *p);

/* Runs to completion (timeout 10 s); returns the exit code. */
int proc_run(const char *home, const char *const *argv, const char *const *env, char **out,
	     char **err);

#endif
