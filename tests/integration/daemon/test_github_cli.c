/*
 * GitHub from the command line, against ghfake-server as
 * a separate process: `doctor` makes one cheap call with the token and
 * shows the login and the remaining rate budget, fails naming
 * AGENT_GITHUB_TOKEN when the token is refused; `commitments` lists what
 * the agent promised, with its state.
 *
 * The daemon: a token GitHub refuses with 401 on
 * the first request the fulfilment makes stops it with exit 69, telling
 * the owner and naming AGENT_GITHUB_TOKEN (never the token); `status`
 * counts the commitments of a running daemon by state and `commitments`
 * (and --json) shows a completed one's link — an issue the daemon really
 * made on the fake, from the journal.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"
#include "support_wait.h"

#define WAIT_MS 10000

static pid_t start_ghfake(const char *home, char *env_url, size_t cap)
{
	char bin[1024], portp[1024];
	snprintf(bin, sizeof bin, "%s/tests/fakes/github/ghfake-server", getenv("GA_BUILD_DIR"));
	snprintf(portp, sizeof portp, "%s/gh.port", home);
	pid_t pid = fork();
	if (pid == 0) {
		/* dies with the test, even when a failed assertion skips the stop */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		execl(bin, bin, "--token", "good-token-0123456789:ada-bot", "--repo",
		      "acme/widgets", "--port-file", portp, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		char *port = home_read(home, "gh.port");
		if (port && atoi(port) > 0) {
			snprintf(env_url, cap, "GITHUB_API_URL=http://127.0.0.1:%d", atoi(port));
			free(port);
			return pid;
		}
		free(port);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("ghfake-server did not start");
	return -1;
}

static void test_doctor_checks_the_token(void **state)
{
	(void)state;
	char *home = home_new();
	char url[128];
	pid_t fake = start_ghfake(home, url, sizeof url);
	char *out = NULL, *err = NULL;
	const char *good[] = {"AGENT_NAME=Ada", url, "AGENT_GITHUB_USERNAME=ada-bot",
	                      "AGENT_GITHUB_TOKEN=good-token-0123456789", NULL};
	int rc = proc_run(home, (const char *const[]){"doctor", NULL}, good, &out, &err);
	/* 2: only the room (the tests' SPACE_URL, a closed port) is down */
	if (rc != 2 || !strstr(out, "github call  ok") || !strstr(out, "logged in as ada-bot") ||
	    !strstr(out, "requests left until") ||
	    !strstr(out, "verdict: the daemon can start, but the room did not answer"))
		fail_msg("doctor (%d):\n%s\n%s", rc, out, err);
	assert_null(strstr(out, "good-token-0123456789"));
	free(out), free(err);

	const char *bad[] = {"AGENT_NAME=Ada", url, "AGENT_GITHUB_USERNAME=ada-bot",
	                     "AGENT_GITHUB_TOKEN=refused-token-987654321", NULL};
	rc = proc_run(home, (const char *const[]){"doctor", NULL}, bad, &out, &err);
	if (rc != 1 || !strstr(out, "github call  FAIL") || !strstr(out, "AGENT_GITHUB_TOKEN"))
		fail_msg("doctor with a refused token (%d):\n%s\n%s", rc, out, err);
	assert_null(strstr(out, "refused-token-987654321"));
	free(out), free(err);

	/* the token of another account is named as such */
	const char *other[] = {"AGENT_NAME=Ada", url, "AGENT_GITHUB_USERNAME=someone-else",
	                       "AGENT_GITHUB_TOKEN=good-token-0123456789", NULL};
	rc = proc_run(home, (const char *const[]){"doctor", NULL}, other, &out, &err);
	if (!strstr(out, "github call  warn") || !strstr(out, "another account"))
		fail_msg("doctor with another account's token (%d):\n%s", rc, out);
	free(out), free(err);
	kill(fake, SIGTERM);
	waitpid(fake, NULL, 0);
	home_remove(home);
}

static void test_commitments_listed(void **state)
{
	(void)state;
	char *home = home_new();
	char mem[1024];
	snprintf(mem, sizeof mem, "%s/memory", home);
	mkdir(mem, 0700);
	home_write(home, "memory/commitments.jsonl",
	           "{\"id\":\"commitment-1-aaaaaaaaaaaaaaaa\",\"action\":\"create_issue\","
	           "\"source\":\"owner\",\"params\":{\"owner\":\"acme\",\"repo\":\"widgets\","
	           "\"title\":\"Flaky test\"},\"status\":\"pending\",\"createdAt\":"
	           "\"2026-11-23T10:00:00.000Z\",\"ms\":1795428000000}\n");
	char *out = NULL, *err = NULL;
	int rc = proc_run(home, (const char *const[]){"commitments", NULL}, NULL, &out, &err);
	assert_non_null(out);
	if (rc != 0 || !strstr(out, "create_issue") || !strstr(out, "pending") ||
	    !strstr(out, "1 commitment(s): 1 pending"))
		fail_msg("commitments (%d):\n%s\n%s", rc, out, err);
	free(out), free(err);
	rc = proc_run(home, (const char *const[]){"commitments", "--json", NULL}, NULL, &out, &err);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"status\":\"pending\""));
	assert_non_null(strstr(out, "\"title\":\"Flaky test\""));
	free(out), free(err);
	rc = proc_run(home, (const char *const[]){"commitments", "--bogus", NULL}, NULL, &out,
	              &err);
	assert_int_equal(rc, 64);
	assert_non_null(strstr(err, "--bogus"));
	free(out), free(err);
	home_remove(home);
}

/* A commitment line as the ledger writes it (item_json), made now. */
static void ledger_line(char *buf, size_t cap, const char *id, const char *status, int attempts,
                        const char *error, const char *params)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	char iso[32];
	strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	int n = snprintf(buf, cap,
	                 "{\"id\":\"%s\",\"createdAt\":\"%s\",\"action\":\"create_issue\","
	                 "\"source\":\"owner\",\"status\":\"%s\",\"params\":%s",
	                 id, iso, status, params);
	if (strcmp(status, "pending") != 0)
		n += snprintf(buf + n, cap - (size_t)n,
		              ",\"attemptCount\":%d,\"updatedAt\":\"%s\",\"ms\":%lld", attempts,
		              iso, (long long)t * 1000);
	if (error)
		n += snprintf(buf + n, cap - (size_t)n, ",\"error\":\"%s\"", error);
	snprintf(buf + n, cap - (size_t)n, "}\n");
}

static void stop_fake(pid_t fake)
{
	kill(fake, SIGTERM);
	waitpid(fake, NULL, 0);
}

#define WIDGETS "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Flaky test\"}"

/* A home whose ledger holds one pending create_issue on acme/widgets, a
 * ghfake-server for it, and the daemon started there with token. */
static char *daemon_on_fake(const char *id, const char *token, pid_t *fake, struct proc *p)
{
	char *home = home_new();
	char mem[1024], line[1024];
	snprintf(mem, sizeof mem, "%s/memory", home);
	mkdir(mem, 0700);
	ledger_line(line, sizeof line, id, "pending", 0, NULL, WIDGETS);
	home_write(home, "memory/commitments.jsonl", line);
	static char url[128], tok[128];
	*fake = start_ghfake(home, url, sizeof url);
	snprintf(tok, sizeof tok, "AGENT_GITHUB_TOKEN=%s", token);
	const char *env[] = {"AGENT_NAME=Ada",
	                     url,
	                     "AGENT_GITHUB_USERNAME=ada-bot",
	                     tok,
	                     "GA_FULFIL_INTERVAL_MS=300",
	                     "GA_GITHUB_SPACING_MS=20",
	                     "GA_GITHUB_WRITE_SPACING_MS=100",
	                     NULL};
	if (proc_start(p, home, (const char *const[]){"--no-terminal", NULL}, env) != 0)
		fail_msg("cannot start general-agent in %s", home);
	return home;
}

/* The fulfilment's first request is refused (401): the daemon stops, 69. */
static void test_daemon_refused_token_exits_69(void **state)
{
	(void)state;
	pid_t fake;
	struct proc p;
	char *home = daemon_on_fake("commitment-1-aaaaaaaaaaaaaaaa", "refused-token-987654321",
	                            &fake, &p);
	int rc = proc_wait(&p, WAIT_MS);
	char *e = proc_stderr(&p), *o = proc_stdout(&p);
	if (rc != 69)
		fail_msg("the daemon exited %d, not 69:\n%s\n%s", rc, e, o);
	if (!strstr(e, "AGENT_GITHUB_TOKEN") || !strstr(e, "401") ||
	    !strstr(o, "Ada: I have to stop:") || !strstr(o, "AGENT_GITHUB_TOKEN"))
		fail_msg("the refusal is not told:\n%s\n%s", e, o);
	assert_null(strstr(e, "refused-token-987654321"));
	assert_null(strstr(o, "refused-token-987654321"));
	free(e);
	free(o);
	proc_cleanup(&p);
	stop_fake(fake);
	home_remove(home);
}

/* Waits until memory/commitments.jsonl says id is completed. */
static bool completed_in(const char *home, const char *id)
{
	char *log = home_read(home, "memory/commitments.jsonl");
	char needle[128];
	snprintf(needle, sizeof needle, "\"id\":\"%s\"", id);
	bool done = false;
	for (char *l = log ? strtok(log, "\n") : NULL; l; l = strtok(NULL, "\n"))
		if (strstr(l, needle))
			done = strstr(l, "\"status\":\"completed\"") != NULL;
	free(log);
	return done;
}

static void test_status_counts_and_artifact(void **state)
{
	(void)state;
	/* 1. the daemon makes the issue on the fake: completed, in the journal */
	const char *made = "commitment-1-aaaaaaaaaaaaaaa1";
	pid_t fake;
	struct proc p;
	char *home = daemon_on_fake(made, "good-token-0123456789", &fake, &p);
	int64_t end = support_now_ms() + 30000;
	while (!completed_in(home, made) && support_now_ms() < end && proc_alive(&p))
		support_sleep_ms(50);
	if (!completed_in(home, made) || !proc_wait_output(&p, "ready and listening", WAIT_MS))
		fail_msg("the commitment was not completed:\n%s", proc_stderr(&p));
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
	stop_fake(fake);

	/* 2. more in other states; without a token they wait, untouched */
	char line[1024];
	char *all = home_read(home, "memory/commitments.jsonl");
	size_t cap = strlen(all) + 4096;
	all = realloc(all, cap);
	ledger_line(line, sizeof line, "commitment-2-bbbbbbbbbbbbbbb2", "pending", 0, NULL,
	            WIDGETS);
	strcat(all, line);
	ledger_line(line, sizeof line, "commitment-3-ccccccccccccccc3", "in_progress", 0, NULL,
	            WIDGETS);
	strcat(all, line);
	ledger_line(line, sizeof line, "commitment-4-ddddddddddddddd4", "failed", 1,
	            "GitHub answered 404: Not Found", WIDGETS);
	strcat(all, line);
	ledger_line(line, sizeof line, "commitment-5-eeeeeeeeeeeeeee5", "failed", 2,
	            "GitHub answered 404: Not Found", WIDGETS);
	strcat(all, line);
	home_write(home, "memory/commitments.jsonl", all);
	free(all);
	const char *notoken[] = {"AGENT_NAME=Ada", NULL};
	if (proc_start(&p, home, (const char *const[]){"--no-terminal", NULL}, notoken) != 0)
		fail_msg("cannot start general-agent again");
	if (!proc_wait_output(&p, "ready and listening", WAIT_MS))
		fail_msg("the daemon did not start:\n%s", proc_stderr(&p));
	char *out = NULL, *err = NULL;
	int rc = proc_run(home, (const char *const[]){"status", NULL}, notoken, &out, &err);
	if (rc != 0 || !strstr(out, "general-agent: running") ||
	    !strstr(out, "commitments  1 pending, 1 in progress, 2 failed, 1 completed"))
		fail_msg("status (%d):\n%s\n%s", rc, out, err);
	free(out), free(err);

	/* 3. the completed one's link; the failed ones' reason */
	rc = proc_run(home, (const char *const[]){"commitments", NULL}, notoken, &out, &err);
	assert_int_equal(rc, 0);
	char want[256];
	snprintf(want, sizeof want, "%s  completed", made);
	if (!strstr(out, want) || !strstr(out, "https://github.com/acme/widgets/issues/1") ||
	    !strstr(out, "(GitHub answered 404: Not Found)"))
		fail_msg("commitments:\n%s\n%s", out, err);
	free(out), free(err);
	rc = proc_run(home, (const char *const[]){"commitments", "--json", NULL}, notoken, &out,
	              &err);
	assert_int_equal(rc, 0);
	if (!strstr(out, "\"artifact\":\"https://github.com/acme/widgets/issues/1\"") ||
	    !strstr(out, "\"status\":\"in_progress\""))
		fail_msg("commitments --json:\n%s", out);
	free(out), free(err);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
	home_remove(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_doctor_checks_the_token),
	        cmocka_unit_test(test_commitments_listed),
	        cmocka_unit_test(test_daemon_refused_token_exits_69),
	        cmocka_unit_test(test_status_counts_and_artifact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
