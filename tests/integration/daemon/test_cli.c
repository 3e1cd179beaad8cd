/*
 * The general-agent command line, black-box:
 *   - `--help` on every command (and after a subcommand's own words, such
 *     as `self revert --help` or `cross allow --help`) prints that command's
 *     usage, ending in a newline, on stdout, and exits 0 — it never acts
 *     (`cross allow --help` adds no pattern);
 *   - a misspelt command is refused (64) with the closest command named;
 *   - `pause` in a home where the daemon never ran, then `status`: the
 *     kill switch is reported set (exit 3: not running);
 *   - `status` with the workspace's pull requests: what the agent waits
 *     for (whose review, its own revision, a review it owes) and each pull
 *     request's state, who acts next and since when;
 *   - what the daemon says at start: a .env typo (with the name it meant),
 *     the dashboard's URL, or — its port taken — that there is none and
 *     why; no SOUL.md in a fresh directory: refused (78) naming the shipped
 *     example, and no memory/ made there;
 *   - doctor asks the room: a real agent-space at SPACE_URL answers (exit 0,
 *     "ready"), the same port after the room stopped does not (exit 2,
 *     naming the room and SPACE_URL).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "support_room.h"

static void must_hold(const char *s, const char *needle)
{
	if (!s || !strstr(s, needle))
		fail_msg("'%s' missing from:\n%s", needle, s ? s : "(nothing)");
}

/* `general-agent ARGS…`, expecting rc; its stdout and stderr out. */
static void run(const char *home, const char *const *argv, int rc, char **out, char **err)
{
	int got = proc_run(home, argv, NULL, out, err);
	if (got == rc)
		return;
	char line[256] = "";
	size_t used = 0;
	for (size_t i = 0; argv[i] && used < sizeof(line) - 1; i++)
		used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", i ? " " : "",
		                         argv[i]);
	fail_msg("general-agent %s: exit %d, not %d\nstdout: %s\nstderr: %s", line, got, rc,
	         *out ? *out : "", *err ? *err : "");
}

static void test_help_everywhere(void **state)
{
	(void)state;
	char *home = home_new();
	static const char *const cases[][4] = {
	        {"doctor", "--help", NULL},
	        {"status", "--help", NULL},
	        {"soul", "--help", NULL},
	        {"soul", "-h", NULL},
	        {"validate", "--help", NULL},
	        {"validate", "--json", "--help", NULL},
	        {"decisions", "--help", NULL},
	        {"decisions", "--tail", "3", "--help"},
	        {"why", "--help", NULL},
	        {"why", "abc123", "--help", NULL},
	        {"commitments", "--help", NULL},
	        {"self", "--help", NULL},
	        {"self", "revert", "--help", NULL},
	        {"self", "diff", "-h", NULL},
	        {"pause", "--help", NULL},
	        {"resume", "--help", NULL},
	        {"cross", "--help", NULL},
	        {"cross", "allow", "--help", NULL},
	        {"cross", "mode", "-h", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out = NULL, *err = NULL;
		run(home, cases[i], 0, &out, &err);
		char want[64];
		snprintf(want, sizeof want, "usage: general-agent");
		must_hold(out, want);
		must_hold(out, cases[i][0]);
		size_t n = strlen(out);
		if (n == 0 || out[n - 1] != '\n')
			fail_msg("%s %s: the usage does not end in a newline: %s", cases[i][0],
			         cases[i][1], out);
		if (err && *err)
			fail_msg("%s %s: wrote to stderr: %s", cases[i][0], cases[i][1], err);
		free(out);
		free(err);
	}
	/* nothing acted: no pause, no pattern */
	char *p = home_read(home, "memory/control.json");
	if (p)
		fail_msg("--help paused the agent: %s", p);
	char *out = NULL, *err = NULL;
	run(home, (const char *const[]){"cross", NULL}, 0, &out, &err);
	if (strstr(out, "--help"))
		fail_msg("--help became a pattern: %s", out);
	free(out);
	free(err);
	home_remove(home);
}

static void test_did_you_mean(void **state)
{
	(void)state;
	char *home = home_new();
	char *out = NULL, *err = NULL;
	run(home, (const char *const[]){"stauts", NULL}, 64, &out, &err);
	must_hold(err, "unknown command 'stauts' (did you mean 'status'?)");
	free(out);
	free(err);
	run(home, (const char *const[]){"docter", NULL}, 64, &out, &err);
	must_hold(err, "did you mean 'doctor'?");
	free(out);
	free(err);
	/* nothing near: no suggestion */
	run(home, (const char *const[]){"frobnicate", NULL}, 64, &out, &err);
	must_hold(err, "unknown command 'frobnicate'");
	if (strstr(err, "did you mean"))
		fail_msg("a suggestion for frobnicate: %s", err);
	free(out);
	free(err);
	home_remove(home);
}

static void test_pause_before_first_start(void **state)
{
	(void)state;
	char *home = home_new();
	char *out = NULL, *err = NULL;
	run(home, (const char *const[]){"pause", NULL}, 0, &out, &err);
	free(out);
	free(err);
	run(home, (const char *const[]){"status", NULL}, 3, &out, &err);
	must_hold(out, "not running");
	must_hold(out, "no status recorded yet");
	must_hold(out, "paused       yes");
	free(out);
	free(err);
	run(home, (const char *const[]){"resume", NULL}, 0, &out, &err);
	free(out);
	free(err);
	run(home, (const char *const[]){"status", NULL}, 3, &out, &err);
	must_hold(out, "paused       no");
	free(out);
	free(err);
	home_remove(home);
}

/* `status` with a workspace whose pull requests the daemon saw (the
 * status file as the daemon writes it, contract of wsp_status): what the
 * agent waits for, one line per pull request with its state, who acts next
 * and since when. */
static void test_status_pulls(void **state)
{
	(void)state;
	char *home = home_new();
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/memory", home);
	assert_int_equal(mkdir(dir, 0700), 0);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	char *json = malloc(8192);
	snprintf(json, 8192,
	         "{\"version\":\"%s\",\"savedAt\":\"2026-11-28T14:00:00.000Z\",\"data\":{"
	         "\"pid\":1,\"state\":\"stopped\",\"agent\":\"Ada\",\"startedAt\":"
	         "\"2026-11-28T13:00:00.000Z\",\"socialOnly\":false,\"services\":{\"workspace\":{"
	         "\"login\":\"ada-bot\",\"watched\":[],\"plans\":[],\"pulls\":["
	         "{\"repo\":\"acme/www-x\",\"number\":12,\"title\":\"Add the page\",\"plan\":7,"
	         "\"task\":3,\"author\":\"ada-bot\",\"reviewer\":\"bob\",\"state\":"
	         "\"awaiting_review\",\"next\":\"bob\",\"since_ms\":%lld,\"revisions\":0},"
	         "{\"repo\":\"acme/www-x\",\"number\":14,\"plan\":7,\"task\":4,\"author\":"
	         "\"ada-bot\",\"reviewer\":\"cal\",\"state\":\"revising\",\"next\":\"ada-bot\","
	         "\"since_ms\":%lld,\"revisions\":1},"
	         "{\"repo\":\"acme/www-x\",\"number\":15,\"plan\":7,\"task\":5,\"author\":"
	         "\"cal\",\"reviewer\":\"ada-bot\",\"state\":\"awaiting_review\",\"next\":"
	         "\"ada-bot\",\"since_ms\":%lld},"
	         "{\"repo\":\"acme/www-x\",\"number\":11,\"plan\":7,\"task\":1,\"author\":"
	         "\"bob\",\"reviewer\":\"cal\",\"state\":\"merged\",\"next\":\"\","
	         "\"since_ms\":%lld}]}}}}",
	         GA_VERSION, now - 38 * 60000, now - 3 * 60000, now - 90 * 60000, now - 60000);
	home_write(home, "memory/status.json", json);
	free(json);
	char *out = NULL, *err = NULL;
	run(home, (const char *const[]){"status", NULL}, 3, &out, &err);
	must_hold(out, "  now          waiting for bob's review of acme/www-x#12 since ");
	must_hold(out, " UTC (38 min)\n");
	must_hold(out, "  now          revising acme/www-x#14 after changes requested (revision 1) "
	               "since ");
	must_hold(out, "  now          reviewing acme/www-x#15 by cal, requested since ");
	must_hold(out, "(1 h 30 min)\n");
	must_hold(out, "  pulls        3 open, 1 merged or closed in the last hour\n");
	must_hold(out, "    acme/www-x#12 awaiting review \xe2\x80\x94 bob to act, since ");
	must_hold(out, "; task 3 of plan #7, by ada-bot: \"Add the page\"\n");
	must_hold(out, "    acme/www-x#11 merged since ");
	/* the merged one is nothing to wait for */
	int waits = 0;
	for (const char *l = strstr(out, "\n  now "); l; l = strstr(l + 1, "\n  now "))
		waits++;
	if (waits != 3)
		fail_msg("%d lines of what the agent waits for, not 3:\n%s", waits, out);
	free(out);
	free(err);
	home_remove(home);
}

static void test_doctor_asks_the_room(void **state)
{
	(void)state;
	struct support_room room;
	char e[512];
	if (support_room_start(&room, 0, NULL, false, e, sizeof e) != 0)
		fail_msg("agent-space did not start: %s", e);
	char *home = home_new();
	char url[64];
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	const char *env[] = {"AGENT_NAME=Ada", url, NULL};
	char *out = NULL, *err = NULL;
	int rc = proc_run(home, (const char *const[]){"doctor", NULL}, env, &out, &err);
	if (rc != 0 || !strstr(out, "room         ok") || !strstr(out, "answers (ready)"))
		fail_msg("doctor with the room up (%d):\n%s", rc, out);
	free(out);
	free(err);
	support_room_stop(&room, SIGTERM);
	support_room_free(&room);
	rc = proc_run(home, (const char *const[]){"doctor", NULL}, env, &out, &err);
	if (rc != 2 || !strstr(out, "room         warn") || !strstr(out, "SPACE_URL") ||
	    !strstr(out, "verdict: the daemon can start, but the room did not answer"))
		fail_msg("doctor with the room down (%d):\n%s", rc, out);
	free(out);
	free(err);
	home_remove(home);
}

static void test_daemon_tells_the_owner(void **state)
{
	(void)state;
	char *home = home_new();
	char *out = NULL, *err = NULL;
	home_write(home, ".env", "AGENT_NAME=Ada\nLLM_BASE_ULR=http://127.0.0.1:1/v1\n");
	const char *env[] = {"GA_EXIT_WHEN_IDLE=1", "DASHBOARD_ADDR=127.0.0.1:0", NULL};
	int rc = proc_run(home, (const char *const[]){"--no-terminal", NULL}, env, &out, &err);
	if (rc != 0 || !strstr(err, "LLM_BASE_ULR") || !strstr(err, "LLM_BASE_URL") ||
	    !strstr(err, "WARN"))
		fail_msg("the .env typo was not reported at start (%d):\n%s", rc, err);
	if (!strstr(out, "Ada: my dashboard is http://127.0.0.1:"))
		fail_msg("no dashboard URL on stdout:\n%s", out);
	free(out);
	free(err);
	/* the dashboard's port taken: said on stdout, with the variable */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof a;
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	char taken[64];
	snprintf(taken, sizeof taken, "DASHBOARD_ADDR=127.0.0.1:%d", ntohs(a.sin_port));
	const char *env2[] = {"GA_EXIT_WHEN_IDLE=1", taken, NULL};
	rc = proc_run(home, (const char *const[]){"--no-terminal", NULL}, env2, &out, &err);
	close(fd);
	if (rc != 0 || !strstr(out, "Ada: no dashboard:") || !strstr(out, "DASHBOARD_ADDR"))
		fail_msg("a taken dashboard port was not said (%d):\n%s\n%s", rc, out, err);
	free(out);
	free(err);
	home_remove(home);

	/* no SOUL.md in a fresh directory */
	home = home_new();
	char soul[512];
	snprintf(soul, sizeof soul, "%s/SOUL.md", home);
	unlink(soul);
	run(home, (const char *const[]){"--no-terminal", NULL}, 78, &out, &err);
	must_hold(err, "SOUL.md not found");
	must_hold(err, "an example to start from: ");
	char *mem = home_read(home, "memory/daemon.lock");
	if (mem)
		fail_msg("a refused start made memory/");
	char memdir[512];
	snprintf(memdir, sizeof memdir, "%s/memory", home);
	if (access(memdir, F_OK) == 0)
		fail_msg("a refused start made %s", memdir);
	free(out);
	free(err);
	home_remove(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_help_everywhere),
	        cmocka_unit_test(test_did_you_mean),
	        cmocka_unit_test(test_pause_before_first_start),
	        cmocka_unit_test(test_status_pulls),
	        cmocka_unit_test(test_doctor_asks_the_room),
	        cmocka_unit_test(test_daemon_tells_the_owner),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
