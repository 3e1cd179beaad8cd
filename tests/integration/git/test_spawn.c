/*
 * adapters/git/spawn.h with real processes: exactly the environment given,
 * stdin delivered, output bounded (tail or head, the rest counted), a
 * timeout that ends the whole process group, leftovers of an exited child
 * killed, a grandchild that keeps the pipe open cut off, no descriptor of
 * the parent inherited, a missing program reported, cancel.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapters/git/spawn.h"
#include "support_loop.h"
#include "support_wait.h"
#include "testutil.h"

struct got {
	bool done;
	struct spawn_result r;
	char *out;
	char *err;
	int64_t at_ms;
};

static void on_done(void *ud, const struct spawn_result *r)
{
	struct got *g = ud;
	g->done = true;
	g->r = *r;
	g->out = strdup(r->out);
	g->err = strdup(r->err);
	g->r.out = g->out;
	g->r.err = g->err;
	g->at_ms = support_now_ms();
}

static bool is_done(void *ctx, const void *arg)
{
	(void)arg;
	return ((struct got *)ctx)->done;
}

static void got_free(struct got *g)
{
	free(g->out);
	free(g->err);
}

static const char *const ENV[] = {"PATH=/usr/bin:/bin", "MARK=spawn-test", NULL};

static void run(uv_loop_t *loop, const char *script, const struct spawn_opts *extra, struct got *g)
{
	const char *argv[] = {"sh", "-c", script, NULL};
	struct spawn_opts o = extra ? *extra : (struct spawn_opts){0};
	o.file = "sh";
	o.argv = argv;
	if (!o.env)
		o.env = ENV;
	memset(g, 0, sizeof *g);
	struct ga_err err = {{0}};
	assert_non_null(spawn_start(loop, &o, on_done, g, &err));
	assert_false(g->done); /* never from inside spawn_start */
	assert_true(support_run_until(loop, is_done, g, NULL, 20000));
}

/* A process that is gone (or a zombie nobody reaped yet). */
static bool dead(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

static pid_t read_pid(const char *dir, const char *name)
{
	for (int i = 0; i < 500; i++) {
		char *s = tu_read(dir, name);
		if (s && atoi(s) > 0) {
			pid_t p = atoi(s);
			free(s);
			return p;
		}
		free(s);
		support_sleep_ms(10);
	}
	return -1;
}

static bool wait_dead(pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		if (dead(pid))
			return true;
		support_sleep_ms(10);
	}
	return false;
}

static void test_env_and_stdin(void **state)
{
	uv_loop_t *loop = *state;
	struct got g;
	struct spawn_opts o = {.stdin_data = "from stdin\n", .stdin_len = 11};
	setenv("GA_SPAWN_SECRET", "must-not-leak", 1);
	run(loop, "env; cat; echo oops >&2; exit 3", &o, &g);
	assert_true(g.r.started);
	assert_int_equal(g.r.exit_status, 3);
	assert_false(spawn_ok(&g.r));
	assert_non_null(strstr(g.out, "MARK=spawn-test"));
	assert_non_null(strstr(g.out, "from stdin"));
	assert_null(strstr(g.out, "must-not-leak"));
	assert_null(strstr(g.out, "HOME="));
	assert_string_equal(g.err, "oops\n");
	char how[200];
	spawn_describe(&g.r, 0, how, sizeof how);
	assert_string_equal(how, "exit status 3");
	got_free(&g);
	unsetenv("GA_SPAWN_SECRET");
}

static void test_bounded_output(void **state)
{
	uv_loop_t *loop = *state;
	const char *script =
	        "i=0; while [ $i -lt 3000 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxx; "
	        "i=$((i+1)); done";
	struct got g;
	struct spawn_opts o = {.max_output = 4096};
	run(loop, script, &o, &g);
	assert_true(spawn_ok(&g.r));
	assert_int_equal(g.r.out_len, 4096);
	assert_int_equal(strlen(g.out), 4096);
	size_t total = 0;
	for (int i = 0; i < 3000; i++) {
		char l[64];
		total += (size_t)snprintf(l, sizeof l, "line-%d-xxxxxxxxxxxxxxxxxxxxxxxx\n", i);
	}
	assert_int_equal(g.r.out_dropped, total - 4096);
	assert_non_null(strstr(g.out, "line-2999-"));
	assert_null(strstr(g.out, "line-0-"));
	got_free(&g);
	o.keep_head = true;
	run(loop, script, &o, &g);
	assert_int_equal(g.r.out_len, 4096);
	assert_int_equal(strncmp(g.out, "line-0-", 7), 0);
	assert_null(strstr(g.out, "line-2999-"));
	assert_int_equal(g.r.out_dropped, total - 4096);
	got_free(&g);
}

static void test_timeout_kills_group(void **state)
{
	uv_loop_t *loop = *state;
	char *dir = tu_tempdir();
	char script[600];
	snprintf(script, sizeof script,
	         "trap '' TERM; sleep 30 & echo $! > '%s/pid'; while :; do sleep 1; done", dir);
	struct got g;
	struct spawn_opts o = {.timeout_ms = 300};
	int64_t t0 = support_now_ms();
	run(loop, script, &o, &g);
	assert_true(g.r.timed_out);
	assert_false(spawn_ok(&g.r));
	/* TERM was ignored: SIGKILL after the grace ended it. */
	assert_int_equal(g.r.term_signal, SIGKILL);
	assert_true(g.at_ms - t0 < 300 + SPAWN_KILL_GRACE_MS + 5000);
	pid_t bg = read_pid(dir, "pid");
	assert_true(bg > 0);
	assert_true(wait_dead(bg)); /* the background child went with the group */
	char how[200];
	spawn_describe(&g.r, 300, how, sizeof how);
	assert_string_equal(how, "timed out after 0 s");
	got_free(&g);
	tu_rmrf(dir);
	free(dir);
}

static void test_leftovers_and_drain(void **state)
{
	uv_loop_t *loop = *state;
	char *dir = tu_tempdir();
	char script[600];
	/* A background job in the group is killed when the child exits. */
	snprintf(script, sizeof script, "sleep 30 >/dev/null 2>&1 & echo $! > '%s/pid'; exit 0",
	         dir);
	struct got g;
	run(loop, script, NULL, &g);
	assert_true(spawn_ok(&g.r));
	pid_t bg = read_pid(dir, "pid");
	assert_true(wait_dead(bg));
	got_free(&g);
	/* A process that left the group and keeps stdout open does not keep
	 * the result waiting. */
	snprintf(script, sizeof script,
	         "setsid sh -c 'echo $$ > \"%s/pid2\"; exec sleep 30' & "
	         "echo started",
	         dir);
	int64_t t0 = support_now_ms();
	run(loop, script, NULL, &g);
	assert_true(spawn_ok(&g.r));
	assert_non_null(strstr(g.out, "started"));
	assert_true(g.at_ms - t0 < SPAWN_DRAIN_MS + 5000);
	pid_t esc = read_pid(dir, "pid2");
	if (esc > 0)
		kill(esc, SIGKILL);
	got_free(&g);
	tu_rmrf(dir);
	free(dir);
}

static void test_no_fd_leak(void **state)
{
	uv_loop_t *loop = *state;
	char *dir = tu_tempdir();
	char path[600];
	snprintf(path, sizeof path, "%s/leak-marker", dir);
	int fd = open(path, O_CREAT | O_RDWR, 0600); /* no O_CLOEXEC, on purpose */
	assert_true(fd >= 3);
	struct got g;
	run(loop, "ls -l /proc/$$/fd", NULL, &g);
	assert_true(spawn_ok(&g.r));
	assert_null(strstr(g.out, "leak-marker"));
	got_free(&g);
	close(fd);
	tu_rmrf(dir);
	free(dir);
}

static void test_missing_and_cancel(void **state)
{
	uv_loop_t *loop = *state;
	const char *argv[] = {"no-such-program-ga", NULL};
	struct spawn_opts o = {.file = "no-such-program-ga", .argv = argv, .env = ENV};
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_non_null(spawn_start(loop, &o, on_done, &g, &err));
	assert_false(g.done);
	assert_true(support_run_until(loop, is_done, &g, NULL, 5000));
	assert_false(g.r.started);
	assert_non_null(strstr(g.r.error, "cannot start no-such-program-ga"));
	got_free(&g);

	const char *sargv[] = {"sh", "-c", "sleep 30", NULL};
	struct spawn_opts so = {.file = "sh", .argv = sargv, .env = ENV};
	memset(&g, 0, sizeof g);
	struct spawn *sp = spawn_start(loop, &so, on_done, &g, &err);
	spawn_cancel(sp);
	assert_false(g.done);
	assert_true(support_run_until(loop, is_done, &g, NULL, 10000));
	assert_true(g.r.cancelled);
	assert_false(g.r.timed_out);
	got_free(&g);

	struct spawn_opts bad = {.file = "sh"};
	assert_null(spawn_start(loop, &bad, on_done, &g, &err));
	so.max_output = SPAWN_MAX_OUTPUT_LIMIT + 1;
	assert_null(spawn_start(loop, &so, on_done, &g, &err));
	assert_non_null(strstr(err.msg, "over the limit"));
}

static int setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	uv_loop_t *loop = malloc(sizeof *loop);
	uv_loop_init(loop);
	*state = loop;
	return 0;
}

static int teardown(void **state)
{
	uv_loop_t *loop = *state;
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(loop), 0);
	free(loop);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_env_and_stdin),
	        cmocka_unit_test(test_bounded_output),
	        cmocka_unit_test(test_timeout_kills_group),
	        cmocka_unit_test(test_leftovers_and_drain),
	        cmocka_unit_test(test_no_fd_leak),
	        cmocka_unit_test(test_missing_and_cancel),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
