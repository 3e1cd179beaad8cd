/*
 * The first hour of a user, black-box:
 *   - a memory directory, a SOUL pin or a daemon lock the agent's user may
 *     not read or write is exit 77 (permission) naming the path; never 75
 *     ("another general-agent"), and the pin is never taken for corrupt:
 *     it stays where it is, unchanged, and nothing is pinned again;
 *   - an empty (or missing) SOUL.md before anything was pinned asks the
 *     owner to write one, says what it is for and where it goes, and never
 *     says "restore"; after a pin it does say restore;
 *   - doctor agrees with itself in each broken setup: a FAIL row exactly
 *     when the verdict says the daemon cannot start (or a restart would
 *     fail) and the exit status is 1; no row contradicts another (a
 *     daemon "not running" when its lock cannot be read, a SOUL "pinned at
 *     first start" when the memory cannot be used, a feature described as
 *     "not set" when its variable is set and invalid).
 *
 * Permissions: root passes every permission check, so when the test runs
 * as root (as in CI containers) the agent runs as nobody
 * (proc_opts.as_nobody) against files of root's with mode 0600/0700;
 * otherwise the files are made mode 000. Either way the agent meets EACCES
 * for real, through the same code path a user meets it.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"

#define WAIT_MS 10000

static const char *const ENV[] = {"AGENT_NAME=Ada", NULL};
static const char *const NOTERM[] = {"--no-terminal", NULL};
static const char *const DOCTOR[] = {"doctor", NULL};

static int setup(void **state)
{
	char *home = home_new();
	/* nobody must be able to enter the home and read SOUL.md */
	chmod(home, 0755);
	*state = home;
	return 0;
}

static int teardown(void **state)
{
	char *home = *state;
	char p[1100];
	/* a non-root test made some of it mode 000: give it back to remove it */
	snprintf(p, sizeof p, "%s/memory", home);
	chmod(p, 0700);
	home_remove(home);
	return 0;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("expected to find '%s' in:\n%s", needle, hay ? hay : "(null)");
}

static void assert_lacks(const char *hay, const char *needle)
{
	if (hay && strstr(hay, needle))
		fail_msg("did not expect '%s' in:\n%s", needle, hay);
}

/* Runs general-agent ARGV in home to completion, as nobody when asked (and
 * the test is root). Returns the exit code. */
static int run(const char *home, const char *const *argv, const char *const *env, bool nobody,
               char **out, char **err)
{
	struct proc p;
	struct proc_opts o = {.binary = "general-agent",
	                      .cwd = home,
	                      .argv = argv,
	                      .env = env,
	                      .as_nobody = nobody};
	if (proc_start_opts(&p, &o) != 0)
		fail_msg("cannot start general-agent");
	proc_close_stdin(&p);
	int rc = proc_wait(&p, WAIT_MS);
	*out = proc_stdout(&p);
	*err = proc_stderr(&p);
	proc_cleanup(&p);
	return rc;
}

/* Makes path unusable by the agent's user: mode 000 for a normal user;
 * for root (the agent then runs as nobody) root's own, 0700 / 0600. */
static void deny(const char *home, const char *name, bool dir)
{
	char p[1100];
	snprintf(p, sizeof p, "%s/%s", home, name);
	assert_int_equal(chmod(p, geteuid() == 0 ? (dir ? 0700 : 0600) : 0), 0);
}

static void allow(const char *home, const char *name, bool dir)
{
	char p[1100];
	snprintf(p, sizeof p, "%s/%s", home, name);
	assert_int_equal(chmod(p, dir ? 0777 : 0666), 0);
}

/* Pins SOUL.md as the test's user (memory/ and memory/soul.json are then
 * the test user's). Returns the pin file's text. */
static char *pin(const char *home)
{
	char *out = NULL, *err = NULL;
	assert_int_equal(
	        run(home, (const char *const[]){"soul", "--accept", NULL}, ENV, false, &out, &err),
	        0);
	free(out), free(err);
	char *p = home_read(home, "memory/soul.json");
	assert_non_null(p);
	return p;
}

/* Nothing in memory/ was moved aside as corrupt. */
static void assert_nothing_moved_aside(const char *home)
{
	char p[1100];
	snprintf(p, sizeof p, "%s/memory", home);
	DIR *d = opendir(p);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		if (strstr(e->d_name, "corrupt"))
			fail_msg("%s/%s was moved aside", p, e->d_name);
	closedir(d);
}

/* Every doctor output must agree with itself and with its exit status. */
static void assert_doctor_agrees(const char *out, int rc)
{
	assert_non_null(out);
	const char *verdict = strstr(out, "verdict: ");
	if (!verdict)
		fail_msg("doctor gave no verdict:\n%s", out);
	bool fail = strstr(out, " FAIL ") != NULL;
	bool bad_verdict = strstr(verdict, "cannot start") || strstr(verdict, "restart would fail");
	/* 2: it can start, but a configured service did not answer (a warn row) */
	bool down = strstr(verdict, "did not answer") != NULL;
	if (down && (rc != 2 || !strstr(out, " warn ")))
		fail_msg("doctor says a service is down, exit %d:\n%s", rc, out);
	if (fail != bad_verdict || rc != (fail ? 1 : down ? 2 : 0))
		fail_msg("doctor disagrees with itself (FAIL rows %s, exit %d):\n%s",
		         fail ? "present" : "absent", rc, out);
	/* what cannot be known is not reported as known */
	if (strstr(out, "  memory       FAIL")) {
		assert_lacks(out, "not running");
		assert_lacks(out, "pinned at first start");
	}
	/* a variable named invalid by config is not "not set" in another row */
	for (const char *c = strstr(out, "config       FAIL "); c;
	     c = strstr(c + 1, "config       FAIL ")) {
		char var[64];
		if (sscanf(c + strlen("config       FAIL "), "%63[A-Z_]", var) != 1)
			continue;
		char notset[96];
		snprintf(notset, sizeof notset, "%s not set", var);
		assert_lacks(out, notset);
	}
}

static void test_memory_dir_denied(void **state)
{
	const char *home = *state;
	char *pinned = pin(home);
	deny(home, "memory", true);
	char *out = NULL, *err = NULL;
	assert_int_equal(run(home, NOTERM, ENV, true, &out, &err), 77);
	char mem[1100];
	snprintf(mem, sizeof mem, "%s/memory", home);
	assert_contains(err, mem);
	assert_contains(err, "Permission denied");
	assert_lacks(err, "another general-agent");
	assert_lacks(err, "corrupt");
	free(out), free(err);

	assert_int_equal(run(home, DOCTOR, ENV, true, &out, &err), 1);
	assert_contains(out, "  memory       FAIL");
	assert_contains(out, mem);
	assert_doctor_agrees(out, 1);
	free(out), free(err);

	allow(home, "memory", true);
	char *after = home_read(home, "memory/soul.json");
	assert_string_equal(after, pinned);
	assert_nothing_moved_aside(home);
	free(after);
	free(pinned);
}

static void test_soul_pin_denied(void **state)
{
	const char *home = *state;
	char *pinned = pin(home);
	allow(home, "memory", true);
	deny(home, "memory/soul.json", false);
	char *out = NULL, *err = NULL;
	assert_int_equal(run(home, NOTERM, ENV, true, &out, &err), 77);
	assert_contains(err, "the SOUL pin cannot be read");
	assert_contains(err, "soul.json");
	assert_contains(err, "nothing was moved or pinned again");
	assert_lacks(err, "moved aside");
	assert_lacks(err, "SOUL.md pinned");
	assert_lacks(err, "another general-agent");
	free(out), free(err);

	assert_int_equal(run(home, DOCTOR, ENV, true, &out, &err), 1);
	assert_contains(out, "  SOUL.md      FAIL the SOUL pin cannot be read");
	assert_doctor_agrees(out, 1);
	free(out), free(err);

	allow(home, "memory/soul.json", false);
	char *after = home_read(home, "memory/soul.json");
	assert_string_equal(after, pinned);
	assert_nothing_moved_aside(home);
	free(after);
	free(pinned);
}

static void test_lock_denied(void **state)
{
	const char *home = *state;
	char *pinned = pin(home);
	allow(home, "memory", true);
	allow(home, "memory/soul.json", false);
	home_write(home, "memory/daemon.lock", "");
	deny(home, "memory/daemon.lock", false);
	char *out = NULL, *err = NULL;
	assert_int_equal(run(home, NOTERM, ENV, true, &out, &err), 77);
	assert_contains(err, "daemon.lock");
	assert_contains(err, "Permission denied");
	assert_lacks(err, "another general-agent");
	free(out), free(err);

	assert_int_equal(run(home, DOCTOR, ENV, true, &out, &err), 1);
	assert_contains(out, "daemon.lock");
	assert_contains(out, "cannot tell whether a daemon runs");
	assert_doctor_agrees(out, 1);
	free(out), free(err);
	free(pinned);
}

static void test_empty_soul_first_start(void **state)
{
	const char *home = *state;
	home_write(home, "SOUL.md", "  \n\t\n");
	char *out = NULL, *err = NULL;
	assert_int_equal(run(home, NOTERM, ENV, false, &out, &err), 78);
	assert_contains(err, "write your agent's SOUL.md");
	assert_contains(err, "core identity");
	assert_contains(err, "agent home");
	assert_lacks(err, "restore");
	free(out), free(err);
	assert_null(home_read(home, "memory/soul.json"));

	assert_int_equal(run(home, DOCTOR, ENV, false, &out, &err), 1);
	assert_contains(out, "write your agent's SOUL.md");
	assert_lacks(out, "restore");
	assert_doctor_agrees(out, 1);
	free(out), free(err);

	/* missing, before a pin: the same request */
	char p[1100];
	snprintf(p, sizeof p, "%s/SOUL.md", home);
	unlink(p);
	assert_int_equal(run(home, NOTERM, ENV, false, &out, &err), 78);
	assert_contains(err, "write your agent's SOUL.md");
	assert_lacks(err, "restore");
	free(out), free(err);

	/* after a pin, an emptied SOUL.md is a loss: restore it */
	home_write(home, "SOUL.md", "You are Ada, a careful helper.\n");
	char *pinned = pin(home);
	free(pinned);
	home_write(home, "SOUL.md", "\n");
	assert_int_equal(run(home, NOTERM, ENV, false, &out, &err), 78);
	assert_contains(err, "restore it");
	assert_contains(err, "general-agent soul --accept");
	free(out), free(err);
}

static void test_doctor_agrees_with_itself(void **state)
{
	const char *home = *state;
	char *out = NULL, *err = NULL;
	char p[1100];
	snprintf(p, sizeof p, "%s/SOUL.md", home);

	/* all well but the room: the tests' SPACE_URL is a closed port (2) */
	assert_int_equal(run(home, DOCTOR, ENV, false, &out, &err), 2);
	assert_doctor_agrees(out, 2);
	assert_contains(out, "verdict: the daemon can start, but the room did not answer");
	free(out), free(err);

	/* missing SOUL.md */
	char *soul = home_read(home, "SOUL.md");
	unlink(p);
	assert_int_equal(run(home, DOCTOR, ENV, false, &out, &err), 1);
	assert_doctor_agrees(out, 1);
	free(out), free(err);

	/* empty SOUL.md */
	home_write(home, "SOUL.md", " \n");
	assert_int_equal(run(home, DOCTOR, ENV, false, &out, &err), 1);
	assert_doctor_agrees(out, 1);
	free(out), free(err);
	home_write(home, "SOUL.md", soul);

	/* bad values in .env: the space row does not say SPACE_URL is unset */
	home_write(home, ".env", "MAX_ACL=lots\nSPACE_URL=wss://room.example\n");
	assert_int_equal(run(home, DOCTOR,
	                     (const char *const[]){"AGENT_NAME=Ada", "SPACE_URL", NULL}, false,
	                     &out, &err),
	                 1);
	assert_doctor_agrees(out, 1);
	assert_contains(out, "agent-space  FAIL SPACE_URL is invalid");
	free(out), free(err);

	/* a typo in .env is a warning with the closest name, not a failure */
	home_write(home, ".env", "AGENT_NAM=Ada\n");
	assert_int_equal(run(home, DOCTOR, ENV, false, &out, &err), 2);
	assert_doctor_agrees(out, 2);
	assert_contains(out, "config       warn");
	assert_contains(out, "AGENT_NAME");
	free(out), free(err);

	/* a .env that cannot be parsed: named, no rows to contradict */
	home_write(home, ".env", "NOT A LINE\n");
	assert_int_equal(run(home, DOCTOR, ENV, false, &out, &err), 78);
	assert_contains(err, "line 1");
	free(out), free(err);
	home_write(home, ".env", "");

	/* a running daemon: it runs, and a changed SOUL.md would stop a restart */
	struct proc d;
	assert_int_equal(proc_start(&d, home, NOTERM, ENV), 0);
	if (!proc_wait_output(&d, "ready and listening", WAIT_MS)) {
		char *e = proc_stderr(&d);
		proc_cleanup(&d);
		fail_msg("daemon did not reach idle:\n%s", e ? e : "");
	}
	assert_int_equal(run(home, DOCTOR, ENV, false, &out, &err), 2);
	assert_doctor_agrees(out, 2);
	assert_contains(out, "verdict: the daemon is running, but the room did not answer");
	free(out), free(err);
	home_write(home, "SOUL.md", "You are someone else entirely.\n");
	assert_int_equal(run(home, DOCTOR, ENV, false, &out, &err), 1);
	assert_doctor_agrees(out, 1);
	assert_contains(out, "restart would fail");
	free(out), free(err);
	proc_signal(&d, SIGTERM);
	assert_int_equal(proc_wait(&d, WAIT_MS), 0);
	proc_cleanup(&d);
	free(soul);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_memory_dir_denied, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_soul_pin_denied, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_lock_denied, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_empty_soul_first_start, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_doctor_agrees_with_itself, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
