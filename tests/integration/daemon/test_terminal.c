/*
 * The owner at a real terminal (a pseudo-terminal): a prompt, /help, the
 * pipeline's answers, and no log lines between a question and its answer —
 * they go to memory/daemon.log unless LOG_LEVEL=debug; warnings still show,
 * one compact line each (the room that cannot be joined).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"

#define WAIT_MS 10000

struct tty_agent {
	pid_t pid;
	int fd; /* the terminal's master side */
	char out[65536];
	size_t len;
};

static void tty_start(struct tty_agent *t, const char *home, const char *const *env)
{
	memset(t, 0, sizeof *t);
	char bin[1024];
	snprintf(bin, sizeof bin, "%s/general-agent", getenv("GA_BUILD_DIR"));
	t->pid = forkpty(&t->fd, NULL, NULL, NULL);
	assert_true(t->pid >= 0);
	if (t->pid == 0) {
		if (chdir(home) != 0)
			_exit(126);
		/* the same isolated environment as every test child
		 * (tests/support/proc.h), not the user's */
		char **envv = proc_env_new(
		        &(struct proc_opts){.binary = "general-agent", .cwd = home, .env = env});
		if (!envv)
			_exit(125);
		execle(bin, bin, (char *)NULL, envv);
		_exit(127);
	}
}

/* Reads what the terminal shows until needle appears (true) or timeout. */
static bool tty_wait(struct tty_agent *t, const char *needle, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 20) {
		t->out[t->len] = '\0';
		if (strstr(t->out, needle))
			return true;
		struct pollfd p = {.fd = t->fd, .events = POLLIN};
		if (poll(&p, 1, 20) > 0) {
			ssize_t n = read(t->fd, t->out + t->len, sizeof t->out - 1 - t->len);
			if (n > 0)
				t->len += (size_t)n;
		}
	}
	t->out[t->len] = '\0';
	return strstr(t->out, needle) != NULL;
}

static void tty_say(struct tty_agent *t, const char *line)
{
	size_t n = strlen(line);
	assert_int_equal(write(t->fd, line, n), (ssize_t)n);
}

static int tty_stop(struct tty_agent *t)
{
	kill(t->pid, SIGTERM);
	int st = 0;
	for (int i = 0; i < 500; i++) {
		char buf[4096];
		while (read(t->fd, buf, sizeof buf) > 0) {
		}
		if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
			close(t->fd);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(20000);
	}
	kill(t->pid, SIGKILL);
	waitpid(t->pid, &st, 0);
	close(t->fd);
	return -1;
}

static void must_show(struct tty_agent *t, const char *needle)
{
	if (!tty_wait(t, needle, WAIT_MS))
		fail_msg("the terminal never showed '%s'; it showed:\n%s", needle, t->out);
}

static void test_terminal_conversation(void **state)
{
	(void)state;
	char *home = home_new();
	const char *env[] = {"AGENT_NAME=Ada", "SPACE_URL=ws://127.0.0.1:1", "GA_SPACE_MDNS=0",
	                     NULL};
	struct tty_agent t;
	tty_start(&t, home, env);
	must_show(&t, "my log is");
	must_show(&t, "> ");
	tty_say(&t, "/help\n");
	must_show(&t, "Ada: commands: /status");
	/* the room at a closed port: the first failure is a warning, shown on
	 * the terminal compactly, and /status says why it is not joined */
	must_show(&t, "WARN  space: could not join the room");
	tty_say(&t, "/status\n");
	must_show(&t, "Ada: running");
	must_show(&t, "not joined: connection failed");
	tty_say(&t, "hello\n");
	must_show(&t, "Ada: I can't answer: owner conversation needs a model");
	/* an answer replaces the prompt's line: never "> Ada: …" */
	if (strstr(t.out, "> Ada:"))
		fail_msg("an answer printed after the prompt:\n%s", t.out);
	/* the daemon's log lines went to the file, not to the terminal */
	if (strstr(t.out, "INFO") || strstr(t.out, "ready and listening"))
		fail_msg("log lines on the terminal:\n%s", t.out);
	assert_int_equal(tty_stop(&t), 0);
	char *log = home_read(home, "memory/daemon.log");
	assert_non_null(log);
	assert_non_null(strstr(log, "starting"));
	free(log);

	/* LOG_LEVEL=debug keeps them on the terminal */
	const char *denv[] = {"AGENT_NAME=Ada", "SPACE_URL=ws://127.0.0.1:1", "GA_SPACE_MDNS=0",
	                      "LOG_LEVEL=debug", NULL};
	tty_start(&t, home, denv);
	must_show(&t, "ready and listening");
	assert_int_equal(tty_stop(&t), 0);
	home_remove(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_terminal_conversation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
