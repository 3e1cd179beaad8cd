/*
 * The Redis coordination backend without a server: REDIS_URL forms accepted
 * and refused (each refusal names REDIS_URL and what was wrong, and never
 * repeats the password), the password registered as a log secret, the
 * status line, and fail-closed answers when nothing listens (a port we
 * bound and closed): claim/renew UNAVAILABLE, count -1, all on the loop,
 * never from inside the call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "modules/coord/coord.h"
#include "tests/unit/coord/coord_test.h"

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). */
static int dead_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t len = sizeof a;
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void refused(const char *url, const char *needle)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct ga_err err = {{0}};
	struct coord *c = coord_new_redis(&loop, url, "ada", &err);
	if (c) {
		ct_close(&loop, c);
		fail_msg("accepted %s", url ? url : "(null)");
	}
	if (!strstr(err.msg, "REDIS_URL") || !strstr(err.msg, needle))
		fail_msg("for %s: \"%s\" lacks \"%s\"", url ? url : "(null)", err.msg, needle);
	/* the test passwords below are never repeated */
	assert_null(strstr(err.msg, "s3cretpw"));
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_refused_urls(void **state)
{
	(void)state;
	refused(NULL, "empty");
	refused("", "empty");
	refused("localhost:6379", "not a URL");
	refused("http://:s3cretpw@localhost:6379", "must start with redis://");
	refused("rediss://:s3cretpw@localhost:6379", "TLS");
	refused("unix:///tmp/redis.sock", "must start with redis://");
	refused("redis://", "no host");
	refused("redis://:6379", "no host");
	refused("redis://s3cretpw@localhost", "user:password");
	refused("redis://:@localhost", "empty");
	refused("redis://user:@localhost", "empty");
	refused("redis://:s3cretpw%zz@localhost", "%-escape");
	refused("redis://:s3cretpw%00@localhost", "%-escape");
	refused("redis://:s3cretpw%4@localhost", "%-escape");
	refused("redis://localhost:abc", "port");
	refused("redis://localhost:0", "port");
	refused("redis://localhost:65536", "port");
	refused("redis://localhost:", "port");
	refused("redis://localhost:6379/x", "database");
	refused("redis://localhost:6379/1/2", "database");
	refused("redis://localhost:6379/-1", "database");
	refused("redis://localhost:6379?db=1", "query");
	refused("redis://localhost#x", "query");
	refused("redis://[::1:6379", "IPv6");
	refused("redis://[::1]6379", "IPv6");
	refused("redis://local host:6379", "host");
	refused("redis://a:b:6379", "port");
	char big[3000];
	memset(big, 'a', sizeof big - 1);
	memcpy(big, "redis://", 8);
	big[sizeof big - 1] = '\0';
	refused(big, "longer");
}

struct fx {
	uv_loop_t loop;
	struct coord *c;
};

/* url = pre + a dead port + post */
static void open_dead(struct fx *f, const char *pre, const char *post)
{
	uv_loop_init(&f->loop);
	char url[200];
	snprintf(url, sizeof url, "%s%d%s", pre, dead_port(), post);
	struct ga_err err = {{0}};
	f->c = coord_new_redis(&f->loop, url, "ada", &err);
	if (!f->c)
		fail_msg("refused %s: %s", url, err.msg);
	coord_redis_set_timeout_ms(f->c, 500);
	assert_string_equal(coord_name(f->c), "redis");
}

static void close_fx(struct fx *f)
{
	assert_true(ct_close(&f->loop, f->c));
	assert_int_equal(uv_loop_close(&f->loop), 0);
}

static void test_accepted_forms_and_secret(void **state)
{
	(void)state;
	const char *forms[][2] = {
	        {"redis://127.0.0.1:", ""},
	        {"REDIS://127.0.0.1:", "/"},
	        {"redis://:s3cretpw@127.0.0.1:", "/3"},
	        {"redis://agent:s3cret%40pw@127.0.0.1:", "/0"},
	        {"redis://[::1]:", "/2"},
	};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		struct fx f;
		open_dead(&f, forms[i][0], forms[i][1]);
		char buf[400];
		coord_describe(f.c, buf, sizeof buf);
		assert_non_null(strstr(buf, "redis "));
		assert_null(strstr(buf, "s3cret"));
		if (i == 2)
			assert_non_null(strstr(buf, "/3 ("));
		if (i == 4)
			assert_non_null(strstr(buf, "[::1]:"));
		close_fx(&f);
	}
	/* the passwords became log secrets: redacted wherever they appear */
	char *s = log_redact("pw=s3cretpw and s3cret@pw");
	assert_null(strstr(s, "s3cret"));
	assert_non_null(strstr(s, "[redacted]"));
	free(s);
}

static void test_fail_closed_without_server(void **state)
{
	(void)state;
	struct fx f;
	open_dead(&f, "redis://127.0.0.1:", "");
	/* let the first connect fail */
	struct ct_ans a = {0};
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	char buf[600];
	do {
		ct_run_until(&f.loop, NULL, 20);
		coord_describe(f.c, buf, sizeof buf);
	} while (!strstr(buf, "disconnected: redis: cannot connect") && ct_now_ms() < end);
	assert_non_null(strstr(buf, "cannot connect to 127.0.0.1:"));

	assert_int_equal(coord_claim(f.c, "respond:space:1", 60000, ct_claim_cb, &a), 0);
	assert_int_equal(a.calls, 0);
	assert_true(ct_wait(&f.loop, &a));
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_false(a.has_holder);
	assert_non_null(strstr(a.why, "redis: cannot connect"));

	memset(&a, 0, sizeof a);
	assert_int_equal(coord_renew(f.c, "respond:space:1", 60000, ct_claim_cb, &a), 0);
	assert_true(ct_wait(&f.loop, &a));
	assert_int_equal(a.r, COORD_UNAVAILABLE);

	memset(&a, 0, sizeof a);
	assert_int_equal(coord_count(f.c, "budget:x", 60000, ct_count_cb, &a), 0);
	assert_int_equal(a.calls, 0);
	assert_true(ct_wait(&f.loop, &a));
	assert_int_equal(a.count, -1);
	assert_int_equal(coord_release(f.c, "respond:space:1"), 0);

	/* requests made while a connect is under way are answered once it fails */
	int64_t deadline = ct_now_ms() + CT_WAIT_MS;
	int unavailable = 0;
	while (ct_now_ms() < deadline && unavailable < 20) {
		memset(&a, 0, sizeof a);
		assert_int_equal(coord_claim(f.c, "k", 1000, ct_claim_cb, &a), 0);
		assert_true(ct_wait(&f.loop, &a));
		assert_int_equal(a.r, COORD_UNAVAILABLE);
		unavailable++;
	}
	assert_int_equal(unavailable, 20);
	close_fx(&f);
}

static void test_close_while_connecting(void **state)
{
	(void)state;
	struct fx f;
	open_dead(&f, "redis://127.0.0.1:", "");
	struct ct_ans a = {0};
	assert_int_equal(coord_claim(f.c, "k", 1000, ct_claim_cb, &a), 0);
	int done = 0;
	coord_close(f.c, ct_done_cb, &done);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_string_equal(a.why, "shutting down");
	assert_true(ct_run_until(&f.loop, &done, CT_WAIT_MS));
	while (uv_run(&f.loop, UV_RUN_NOWAIT))
		;
	assert_int_equal(uv_loop_close(&f.loop), 0);
}

int main(void)
{
	log_init(getenv("COORD_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_OFF, 0, NULL);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_refused_urls),
	        cmocka_unit_test(test_accepted_forms_and_secret),
	        cmocka_unit_test(test_fail_closed_without_server),
	        cmocka_unit_test(test_close_while_connecting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
