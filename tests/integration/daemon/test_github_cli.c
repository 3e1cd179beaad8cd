/*
 * GitHub from the command line (issue 11 item 8), against ghfake-server as
 * a separate process: `doctor` makes one cheap call with the token and
 * shows the login and the remaining rate budget, fails naming
 * AGENT_GITHUB_TOKEN when the token is refused; `commitments` lists what
 * the agent promised, with its state.
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
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"

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
		execl(bin, bin, "--token", "good-token-0123456789:ada-bot", "--repo", "acme/widgets",
		      "--port-file", portp, (char *)NULL);
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
	if (rc != 0 || !strstr(out, "github call  ok") || !strstr(out, "logged in as ada-bot") ||
	    !strstr(out, "requests left until"))
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
	rc = proc_run(home, (const char *const[]){"commitments", "--bogus", NULL}, NULL, &out, &err);
	assert_int_equal(rc, 64);
	assert_non_null(strstr(err, "--bogus"));
	free(out), free(err);
	home_remove(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_doctor_checks_the_token),
	        cmocka_unit_test(test_commitments_listed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
