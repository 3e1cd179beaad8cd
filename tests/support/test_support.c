/*
 * The shared harness helpers against real children: the fakes as
 * processes (support_fake), redis-server (support_redis), the waits on a
 * child's port file and stdout lines (support_wait) — including what a
 * child writes just before it exits, the race the waits exist to get
 * right — and support_run_until on a real libuv loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proc.h"
#include "support_fake.h"
#include "support_loop.h"
#include "support_redis.h"
#include "support_wait.h"
#include "testutil.h"

/* Starts /bin/sh -c script in dir. */
static void sh(struct proc *p, const char *dir, const char *script)
{
	const char *argv[] = {"-c", script, NULL};
	struct proc_opts o = {.binary = "/bin/sh", .cwd = dir, .argv = argv};
	assert_int_equal(proc_start_opts(p, &o), 0);
}

/* GET path from 127.0.0.1:port; the status code, or -1. */
static int http_status(int port, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int status = -1;
	char req[256], got[64] = {0};
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	                 path);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && write(fd, req, (size_t)n) == n &&
	    read(fd, got, sizeof got - 1) > 12)
		status = atoi(got + 9);
	close(fd);
	return status;
}

static void test_fake_starts_records_and_stops(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct support_fake f;
	char err[4096];
	const char *argv[] = {"--token", "t0k:ada", "--repo", "acme/widgets", NULL};
	if (support_fake_start(&f, "tests/fakes/github/ghfake-server", dir, argv, err,
	                       sizeof err) != 0)
		fail_msg("%s", err);
	assert_true(f.port > 0);
	char want[64];
	snprintf(want, sizeof want, "http://127.0.0.1:%d", f.port);
	assert_string_equal(f.url, want);
	assert_int_equal(http_status(f.port, "/_ghfake/state"), 200);
	/* the record is written before the answer */
	char *rec = tu_read(f.record, NULL);
	assert_non_null(rec);
	assert_non_null(strstr(rec, "\"path\":\"/_ghfake/state\""));
	free(rec);
	assert_int_equal(support_fake_stop(&f), 0); /* SIGTERM is a clean stop */
	assert_int_equal(support_fake_stop(&f), -1);
	tu_rmrf(dir);
	free(dir);
}

/* llmfake-server prints why and exits 65 at once on a bad script: the
 * starter must say so (status and stderr), not "no port after 10 s". */
static void test_fake_that_exits_is_reported(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	tu_write(dir, "bad.json", "{\"responses\": [");
	char script[600];
	snprintf(script, sizeof script, "%s/bad.json", dir);
	struct support_fake f;
	char err[4096];
	int64_t t0 = support_now_ms();
	const char *argv[] = {"--script", script, NULL};
	assert_int_equal(support_fake_start(&f, "tests/fakes/llm/llmfake-server", dir, argv, err,
	                                    sizeof err),
	                 -1);
	assert_true(support_now_ms() - t0 < SUPPORT_WAIT_MS / 2);
	assert_non_null(strstr(err, "llmfake-server did not start"));
	assert_non_null(strstr(err, "exited with status 65"));
	assert_non_null(strstr(err, "bad.json")); /* its own message, from its stderr */
	assert_int_equal(support_fake_stop(&f), -1);
	/* a binary that is not there */
	assert_int_equal(support_fake_start(&f, "tests/fakes/none/no-such-server", dir, NULL, err,
	                                    sizeof err),
	                 -1);
	assert_non_null(strstr(err, "no-such-server"));
	tu_rmrf(dir);
	free(dir);
}

/* The port file written just before the exit is still found. */
static void test_port_file_written_before_exit(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	char path[600], err[256];
	snprintf(path, sizeof path, "%s/port", dir);
	for (int i = 0; i < 20; i++) {
		unlink(path);
		struct proc p;
		sh(&p, dir, "printf '4242\\n' > port.tmp && mv port.tmp port");
		assert_int_equal(support_wait_port_file(&p, path, SUPPORT_WAIT_MS, err, sizeof err),
		                 4242);
		proc_cleanup(&p);
	}
	/* exits without one: the status, quickly */
	unlink(path);
	struct proc p;
	sh(&p, dir, "exit 7");
	int64_t t0 = support_now_ms();
	assert_int_equal(support_wait_port_file(&p, path, SUPPORT_WAIT_MS, err, sizeof err), -1);
	assert_true(support_now_ms() - t0 < SUPPORT_WAIT_MS / 2);
	assert_non_null(strstr(err, "exited with status 7"));
	proc_cleanup(&p);
	/* a partial file (no newline) is not a port; then the timeout */
	sh(&p, dir, "printf 4242 > port; sleep 5");
	assert_int_equal(support_wait_port_file(&p, path, 300, err, sizeof err), -1);
	assert_non_null(strstr(err, "after 300 ms"));
	proc_cleanup(&p);
	tu_rmrf(dir);
	free(dir);
}

/* The last line a child prints before it exits is never lost. */
static void test_line_printed_before_exit(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	for (int i = 0; i < 20; i++) {
		struct proc p;
		sh(&p, dir, "echo first; echo 'error: the last word'; exit 1");
		bool exited = true;
		char *l = support_wait_line(&p, 0, SUPPORT_WAIT_MS, &exited);
		assert_string_equal(l, "first");
		assert_false(exited);
		free(l);
		l = support_wait_line(&p, 1, SUPPORT_WAIT_MS, &exited);
		assert_string_equal(l, "error: the last word");
		free(l);
		int64_t t0 = support_now_ms();
		assert_null(support_wait_line(&p, 2, SUPPORT_WAIT_MS, &exited));
		assert_true(exited);
		assert_true(support_now_ms() - t0 < SUPPORT_WAIT_MS / 2);
		assert_int_equal(support_exit_code(&p), 1);
		proc_cleanup(&p);
	}
	struct proc p;
	sh(&p, dir, "printf 'no newline'; sleep 5");
	bool exited = true;
	assert_null(support_wait_line(&p, 0, 200, &exited));
	assert_false(exited); /* the timeout, not an exit */
	proc_cleanup(&p);
	tu_rmrf(dir);
	free(dir);
}

static void test_redis_start_kill_restart(void **state)
{
	(void)state;
	if (!support_redis_binary()) {
		fprintf(stderr, "redis-server is not installed: skipped\n");
		skip();
	}
	struct support_redis r = {0};
	char err[4096];
	if (support_redis_start(&r, NULL, err, sizeof err) != 0)
		fail_msg("%s", err);
	int port = r.port;
	assert_true(port > 0);
	assert_int_equal(support_redis_start(&r, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "already running"));
	support_redis_kill(&r);
	assert_false(r.running);
	if (support_redis_start(&r, NULL, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(r.port, port); /* the same port again */
	support_redis_free(&r);
	assert_null(r.dir);
	/* with a password: ready means AUTH + PING answered */
	struct support_redis pw = {0};
	if (support_redis_start(&pw, "s3cret-pw", err, sizeof err) != 0)
		fail_msg("%s", err);
	support_redis_free(&pw);
	/* a server that cannot start: its status and its own words */
	struct support_redis bad = {0};
	bad.dir = tu_tempdir();
	bad.port = 70000; /* redis refuses it */
	assert_int_equal(support_redis_start(&bad, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "exited with status"));
	assert_false(bad.running);
	support_redis_free(&bad);
}

static void set_flag(uv_timer_t *t)
{
	*(bool *)t->data = true;
}

static bool flag_is(void *ctx, const void *arg)
{
	return *(const bool *)ctx == *(const bool *)arg;
}

static void test_run_until(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	bool flag = false, yes = true;
	uv_timer_t t;
	uv_timer_init(&loop, &t);
	t.data = &flag;
	uv_timer_start(&t, set_flag, 30, 0);
	assert_true(support_run_until(&loop, flag_is, &flag, &yes, SUPPORT_WAIT_MS));
	assert_true(flag);
	/* a condition that never holds: false after the timeout, not before */
	bool no = false;
	flag = true;
	int64_t t0 = support_now_ms();
	assert_false(support_run_until(&loop, flag_is, &flag, &no, 100));
	assert_true(support_now_ms() - t0 >= 100);
	assert_false(support_run_until(&loop, NULL, NULL, NULL, 20));
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0); /* nothing left open */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fake_starts_records_and_stops),
	        cmocka_unit_test(test_fake_that_exits_is_reported),
	        cmocka_unit_test(test_port_file_written_before_exit),
	        cmocka_unit_test(test_line_printed_before_exit),
	        cmocka_unit_test(test_redis_start_kill_restart),
	        cmocka_unit_test(test_run_until),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
