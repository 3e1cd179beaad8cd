/*
 * The general-agent binary, black-box: flags and exit codes, first start,
 * idling without credentials, SIGTERM/SIGINT/SIGHUP, SOUL.md protection,
 * the lock on the memory directory, doctor and status, secrets in logs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "proc.h"

#define WAIT_MS 10000

static const char *const NOARGS[] = {NULL};
static const char *const NOTERM[] = {"--no-terminal", NULL};
static const char *const BASE_ENV[] = {"AGENT_NAME=Ada", NULL};

static int setup(void **state)
{
	*state = home_new();
	return 0;
}

static int teardown(void **state)
{
	home_remove(*state);
	return 0;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("expected to find '%s' in:\n%s", needle, hay ? hay : "(null)");
}

static void start_idle(struct proc *p, const char *home, const char *const *argv,
                       const char *const *env)
{
	assert_int_equal(proc_start(p, home, argv, env), 0);
	if (!proc_wait_output(p, "ready and listening", WAIT_MS)) {
		char *e = proc_stderr(p);
		proc_cleanup(p);
		fail_msg("daemon did not reach idle:\n%s", e ? e : "");
	}
}

static void test_flags(void **state)
{
	const char *home = *state;
	char *out = NULL, *err = NULL;
	assert_int_equal(proc_run(home, (const char *const[]){"--help", NULL}, NULL, &out, &err),
	                 0);
	assert_contains(out, "usage: general-agent");
	assert_contains(out, "--social-only");
	free(out), free(err);
	assert_int_equal(proc_run(home, (const char *const[]){"--version", NULL}, NULL, &out, &err),
	                 0);
	assert_contains(out, "general-agent 0.");
	free(out), free(err);
	assert_int_equal(proc_run(home, (const char *const[]){"--bogus", NULL}, NULL, &out, &err),
	                 64);
	assert_contains(err, "--bogus");
	free(out), free(err);
	assert_int_equal(proc_run(home, (const char *const[]){"--home", NULL}, NULL, &out, &err),
	                 64);
	free(out), free(err);
	assert_int_equal(
	        proc_run(home, (const char *const[]){"frobnicate", NULL}, NULL, &out, &err), 64);
	assert_contains(err, "unknown command 'frobnicate'");
	free(out), free(err);
	assert_int_equal(proc_run(home, (const char *const[]){"--accept", NULL}, NULL, &out, &err),
	                 64);
	free(out), free(err);
	assert_int_equal(
	        proc_run(home, (const char *const[]){"doctor", "extra", NULL}, NULL, &out, &err),
	        64);
	free(out), free(err);
}

static void test_first_start_idle_and_sigterm(void **state)
{
	const char *home = *state;
	struct proc p;
	start_idle(&p, home, NOTERM, BASE_ENV);
	/* No credentials: it says which features are off and why. */
	char *e = proc_stderr(&p);
	assert_contains(e, "feature off feature=model");
	assert_contains(e, "AI_GATEWAY_API_KEY");
	assert_contains(e, "feature off feature=bluesky");
	assert_contains(e, "feature off feature=github");
	assert_contains(e, "SOUL.md pinned");
	assert_contains(e, "SELF.md written from the template");
	free(e);
	char *self = home_read(home, "SELF.md");
	assert_contains(self, "# Ada");
	assert_non_null(self);
	assert_null(strstr(self, "{{AGENT_NAME}}"));
	free(self);

	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	e = proc_stderr(&p);
	assert_contains(e, "shutting down reason=SIGTERM");
	assert_contains(e, "agent resting");
	free(e);
	proc_cleanup(&p);

	/* The status file records the stop. */
	char *status = home_read(home, "memory/status.json");
	assert_contains(status, "\"state\":\"stopped\"");
	free(status);
	char *out = NULL, *err = NULL;
	assert_int_equal(
	        proc_run(home, (const char *const[]){"status", NULL}, BASE_ENV, &out, &err), 3);
	assert_contains(out, "not running");
	assert_contains(out, "job heartbeat");
	free(out), free(err);
}

/* The daemon's SigBlk mask (/proc/<pid>/status), or 0 when unreadable. */
static unsigned long long sig_blocked(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
	FILE *f = fopen(path, "r");
	unsigned long long mask = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask;
}

/* A stop sent while the daemon still loads its memory (before its
 * handlers exist) is held pending and handled as a clean stop: exit 0,
 * never killed by the default action (143) in the middle of a write. The
 * test catches the daemon inside that window by its blocked-signal mask;
 * it tries until it has caught it 3 times (a start is a few ms). */
static void test_sigterm_during_start(void **state)
{
	const char *home = *state;
	/* Exactly the three stop signals: libuv blocks every signal for a
	 * moment while it installs a handler, which is not the window. */
	const unsigned long long held =
	        1ULL << (SIGTERM - 1) | 1ULL << (SIGINT - 1) | 1ULL << (SIGHUP - 1);
	int caught = 0;
	for (int attempt = 0; attempt < 200 && caught < 3; attempt++) {
		struct proc p;
		assert_int_equal(proc_start(&p, home, NOTERM, BASE_ENV), 0);
		bool in_window = false;
		for (int spin = 0; spin < 200000 && proc_alive(&p); spin++) {
			if (sig_blocked(p.pid) == held) {
				proc_signal(&p, SIGTERM);
				in_window = true;
				break;
			}
		}
		if (!in_window) {
			/* Missed the window: stop it the ordinary way. */
			assert_true(proc_wait_output(&p, "ready and listening", WAIT_MS));
			proc_signal(&p, SIGTERM);
		}
		int rc = proc_wait(&p, WAIT_MS);
		char *e = proc_stderr(&p);
		if (rc != 0)
			fail_msg("attempt %d (%s): exit %d\n%s", attempt,
			         in_window ? "SIGTERM while starting" : "SIGTERM when ready", rc,
			         e ? e : "");
		if (in_window) {
			assert_contains(e, "shutting down reason=SIGTERM");
			caught++;
		}
		free(e);
		proc_cleanup(&p);
	}
	assert_int_equal(caught, 3);
}

static void test_sigint_and_piped_exit(void **state)
{
	const char *home = *state;
	struct proc p;
	start_idle(&p, home, NOTERM, BASE_ENV);
	proc_signal(&p, SIGINT);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);

	/* Owner input from a pipe: a line is answered, "exit" stops. */
	start_idle(&p, home, NOARGS, BASE_ENV);
	proc_write_stdin(&p, "/status\n");
	assert_true(proc_wait_output(&p, "job(s)", WAIT_MS));
	proc_write_stdin(&p, "hello there\n");
	assert_true(proc_wait_output(&p, "owner conversation needs a model", WAIT_MS));
	proc_write_stdin(&p, "exit\n");
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);

	/* EOF on stdin does not stop the agent. */
	start_idle(&p, home, NOARGS, BASE_ENV);
	proc_close_stdin(&p);
	assert_int_equal(proc_wait(&p, 300), -1);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
}

static void test_soul_protection(void **state)
{
	const char *home = *state;
	struct proc p;
	start_idle(&p, home, NOTERM, BASE_ENV);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);

	home_write(home, "SOUL.md", "You are someone else entirely.\n");
	char *out = NULL, *err = NULL;
	assert_int_equal(proc_run(home, NOTERM, BASE_ENV, &out, &err), 78);
	assert_contains(err, "SOUL.md has changed");
	assert_contains(err, "general-agent soul --accept");
	free(out), free(err);
	/* doctor agrees and does not pass */
	assert_int_equal(
	        proc_run(home, (const char *const[]){"doctor", NULL}, BASE_ENV, &out, &err), 1);
	assert_contains(out, "SOUL.md      FAIL");
	free(out), free(err);
	/* the owner accepts the change */
	assert_int_equal(proc_run(home, (const char *const[]){"soul", "--accept", NULL}, BASE_ENV,
	                          &out, &err),
	                 0);
	assert_contains(out, "SOUL.md pinned");
	assert_contains(out, "essence: You are someone else entirely.");
	free(out), free(err);
	start_idle(&p, home, NOTERM, BASE_ENV);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);

	home_write(home, "SOUL.md", "   \n");
	assert_int_equal(proc_run(home, NOTERM, BASE_ENV, &out, &err), 78);
	assert_contains(err, "is empty");
	free(out), free(err);
	char path[1024];
	snprintf(path, sizeof path, "%s/SOUL.md", home);
	remove(path);
	assert_int_equal(proc_run(home, NOTERM, BASE_ENV, &out, &err), 78);
	assert_contains(err, "SOUL.md is missing");
	free(out), free(err);
}

static void test_config_errors(void **state)
{
	const char *home = *state;
	char *out = NULL, *err = NULL;
	const char *const env[] = {"AGENT_NAME=Ada", "MAX_ACL=lots", "SPACE_URL=http://x", NULL};
	assert_int_equal(proc_run(home, NOTERM, env, &out, &err), 78);
	assert_contains(err, "MAX_ACL must be an integer from 0 to 100, got 'lots'");
	assert_contains(err, "SPACE_URL must be a URL starting with ws://");
	free(out), free(err);
	assert_int_equal(proc_run(home, (const char *const[]){"doctor", NULL}, env, &out, &err), 1);
	assert_contains(out, "config       FAIL MAX_ACL");
	free(out), free(err);

	/* A malformed .env names the line. */
	home_write(home, ".env", "AGENT_NAME=Ada\nTHIS IS NOT VALID\n");
	assert_int_equal(proc_run(home, NOTERM, NULL, &out, &err), 78);
	assert_contains(err, "line 2: expected KEY=VALUE");
	free(out), free(err);
	/* --env pointing nowhere */
	assert_int_equal(proc_run(home, (const char *const[]){"--env", "/nonexistent.env", NULL},
	                          NULL, &out, &err),
	                 78);
	assert_contains(err, "/nonexistent.env");
	free(out), free(err);
}

static void test_doctor_ok_and_env_file(void **state)
{
	const char *home = *state;
	home_write(home, ".env",
	           "AGENT_NAME=FromFile\nAGENT_GITHUB_USERNAME=ada\n"
	           "AGENT_GITHUB_TOKEN=ghp_0123456789abcdef\n");
	char *out = NULL, *err = NULL;
	/* 2: GitHub (no network here) and the tests' room (a closed port) are
	 * configured and do not answer; the daemon can start all the same */
	assert_int_equal(proc_run(home, (const char *const[]){"doctor", NULL}, NULL, &out, &err),
	                 2);
	assert_contains(out, "verdict: the daemon can start, but GitHub, the room did not answer");
	assert_contains(out, "github       on");
	assert_contains(out, "model        off");
	assert_contains(out, "not pinned yet");
	assert_null(strstr(out, "ghp_0123456789abcdef"));
	free(out), free(err);
	/* doctor wrote no pin */
	char *pin = home_read(home, "memory/soul.json");
	assert_null(pin);
	/* the environment wins over .env */
	struct proc p;
	start_idle(&p, home, NOTERM, (const char *const[]){"AGENT_NAME=FromEnv", NULL});
	assert_true(proc_wait_output(&p, "agent=FromEnv", WAIT_MS));
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
}

static void test_secrets_never_logged(void **state)
{
	const char *home = *state;
	/* The agent name happens to equal a secret: every log line that would
	 * print the name must print [redacted] instead. */
	const char *const env[] = {
	        "AGENT_NAME=hunter2-secret-pass", "AGENT_BLUESKY_USERNAME=ada.example",
	        "AGENT_BLUESKY_PASSWORD=hunter2-secret-pass", "LOG_LEVEL=debug", NULL};
	struct proc p;
	start_idle(&p, home, NOTERM, env);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	char *e = proc_stderr(&p);
	assert_null(strstr(e, "hunter2-secret-pass"));
	assert_contains(e, "[redacted]");
	free(e);
	proc_cleanup(&p);
}

static void test_json_logs(void **state)
{
	const char *home = *state;
	struct proc p;
	start_idle(&p, home, NOTERM,
	           (const char *const[]){"AGENT_NAME=Ada", "LOG_FORMAT=json", NULL});
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	char *e = proc_stderr(&p);
	int lines = 0;
	for (char *line = strtok(e, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		if (!j)
			fail_msg("not a JSON line: %s", line);
		assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "ts")));
		assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "level")));
		assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "component")));
		cJSON_Delete(j);
		lines++;
	}
	assert_true(lines >= 5);
	free(e);
	proc_cleanup(&p);
}

static void test_sighup_reload(void **state)
{
	const char *home = *state;
	struct proc p;
	start_idle(&p, home, NOTERM, BASE_ENV);
	char *self = home_read(home, "SELF.md");
	char *at = strstr(self, "| My replies in thread | 4 |");
	assert_non_null(at);
	at[25] = '7';
	home_write(home, "SELF.md", self);
	free(self);
	proc_signal(&p, SIGHUP);
	assert_true(proc_wait_output(&p, "SELF.md reloaded name=Ada max_replies=7", WAIT_MS));
	/* A broken .env on reload is reported and the running config kept. */
	home_write(home, ".env", "BROKEN LINE\n");
	proc_signal(&p, SIGHUP);
	assert_true(proc_wait_output(&p, "keeping the running configuration", WAIT_MS));
	home_write(home, ".env", "LOG_LEVEL=debug\n");
	proc_signal(&p, SIGHUP);
	assert_true(proc_wait_output(&p, "configuration reloaded", WAIT_MS));
	assert_int_equal(proc_wait(&p, 100), -1); /* still running */
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
}

static void test_one_daemon_per_memory(void **state)
{
	const char *home = *state;
	struct proc p;
	start_idle(&p, home, NOTERM, BASE_ENV);
	char *out = NULL, *err = NULL;
	assert_int_equal(proc_run(home, NOTERM, BASE_ENV, &out, &err), 75);
	assert_contains(err, "another general-agent");
	free(out), free(err);
	assert_int_equal(
	        proc_run(home, (const char *const[]){"status", NULL}, BASE_ENV, &out, &err), 0);
	assert_contains(out, "running, pid");
	free(out), free(err);
	/* doctor against a running daemon: it says it runs and checks the rest,
	 * the skills included */
	/* 2: the room of the tests' SPACE_URL (a closed port) does not answer */
	int drc = proc_run(home, (const char *const[]){"doctor", NULL}, BASE_ENV, &out, &err);
	if (drc != 2)
		fail_msg("doctor exit %d:\n%s", drc, out);
	assert_contains(out, "verdict: the daemon is running, but the room did not answer");
	assert_contains(out, "running, pid");
	assert_contains(out, "verdict: the daemon is running");
	assert_contains(out, "skills");
	assert_null(strstr(out, "cannot start"));
	free(out), free(err);
	/* A different memory directory is a different agent. */
	struct proc q;
	start_idle(&q, home, (const char *const[]){"--no-terminal", "--memory", "other-mem", NULL},
	           BASE_ENV);
	proc_signal(&q, SIGTERM);
	assert_int_equal(proc_wait(&q, WAIT_MS), 0);
	proc_cleanup(&q);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
}

static void test_home_flag(void **state)
{
	const char *home = *state;
	/* Started elsewhere, pointed at the home by flag and by AGENT_HOME. */
	char *other = home_new();
	struct proc p;
	start_idle(&p, other, (const char *const[]){"--no-terminal", "--home", home, NULL},
	           BASE_ENV);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
	char *pin = home_read(home, "memory/soul.json");
	assert_non_null(pin);
	free(pin);
	assert_null(home_read(other, "memory/soul.json"));
	char env_home[1100];
	snprintf(env_home, sizeof env_home, "AGENT_HOME=%s", home);
	char *out = NULL, *err = NULL;
	assert_int_equal(proc_run(other, (const char *const[]){"soul", NULL},
	                          (const char *const[]){env_home, NULL}, &out, &err),
	                 0);
	assert_contains(out, "matches its pin");
	free(out), free(err);
	home_remove(other);
}

static void test_validate_subcommand(void **state)
{
	const char *home = *state;
	home_write(home, "history.jsonl",
	           "{\"author\":\"Bo\",\"text\":\"We should cache the user list in Redis for five "
	           "minutes.\"}\n");
	char *out = NULL, *err = NULL;
	/* An agreement that only restates the last message is an echo. */
	int rc = proc_run(
	        home,
	        (const char *const[]){
	                "validate", "--json", "--history", "history.jsonl",
	                "Agreed, caching the user list in Redis for five minutes is the way to go.",
	                NULL},
	        NULL, &out, &err);
	assert_int_equal(rc, 0);
	cJSON *j = cJSON_Parse(out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "reject");
	assert_true(cJSON_IsObject(cJSON_GetObjectItem(j, "scores")));
	cJSON_Delete(j);
	free(out), free(err);
	/* New facts on the same topic are not. */
	rc = proc_run(home,
	              (const char *const[]){"validate", "--json", "--history", "history.jsonl",
	                                    "Redis is down for maintenance tonight; the in-process "
	                                    "LRU in cache.c would "
	                                    "avoid the dependency.",
	                                    NULL},
	              NULL, &out, &err);
	assert_int_equal(rc, 0);
	j = cJSON_Parse(out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "accept");
	cJSON_Delete(j);
	free(out), free(err);
	/* Usage errors are the validator's own: 64 and 65. */
	assert_int_equal(proc_run(home, (const char *const[]){"validate", NULL}, NULL, &out, &err),
	                 64);
	free(out), free(err);
	assert_int_equal(
	        proc_run(home,
	                 (const char *const[]){"validate", "--history", "missing.txt", "x", NULL},
	                 NULL, &out, &err),
	        65);
	free(out), free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_flags, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_first_start_idle_and_sigterm, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_sigterm_during_start, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_sigint_and_piped_exit, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_soul_protection, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_doctor_ok_and_env_file, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_secrets_never_logged, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_json_logs, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_sighup_reload, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_one_daemon_per_memory, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_home_flag, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_validate_subcommand, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
