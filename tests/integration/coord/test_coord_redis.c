/*
 * The Redis coordination backend (modules/coord, redis) against a real
 * redis-server started here on 127.0.0.1 with an ephemeral port:
 *   - two clients (agent ids A and B) claim the same keys at once: exactly
 *     one wins each, the other is told the holder;
 *   - release by a non-owner deletes nothing; renew by the owner extends the
 *     TTL, by anyone else it fails with the holder; after the TTL the other
 *     wins; keys are stored as "ga:" + key;
 *   - counters: INCR across clients, PEXPIRE on the first event, a new
 *     window after it;
 *   - fail closed: the server killed → UNAVAILABLE at once, reconnect once
 *     it is back; the server stopped (SIGSTOP) → UNAVAILABLE "timeout"
 *     within the timeout, recovery after SIGCONT;
 *   - --requirepass: the right password (":pw@" and "default:pw@"), a
 *     wrong one and none; the password never reaches the log; SELECT db.
 * What Redis holds is checked with a separate synchronous hiredis client,
 * not through the code under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "proc.h"
#include "support_redis.h"
#include "tests/unit/coord/coord_test.h"
#include "testutil.h"

#define PASSWORD "Tr0ub4dor-coord"

struct fx {
	uv_loop_t loop;
	struct support_redis srv;
	struct coord *a, *b;
};

/* A synchronous client for checks; NULL when the server does not answer
 * PING (with AUTH when it has a password). */
static redisContext *sync_client(const struct support_redis *s)
{
	struct timeval tv = {1, 0};
	redisContext *rc = redisConnectWithTimeout("127.0.0.1", s->port, tv);
	if (!rc || rc->err) {
		if (rc)
			redisFree(rc);
		return NULL;
	}
	redisSetTimeout(rc, tv);
	redisReply *rep;
	if (s->password) {
		rep = redisCommand(rc, "AUTH %s", s->password);
		if (rep)
			freeReplyObject(rep);
	}
	rep = redisCommand(rc, "PING");
	bool ok = rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0;
	if (rep)
		freeReplyObject(rep);
	if (!ok) {
		redisFree(rc);
		return NULL;
	}
	return rc;
}

/* Starts (or, after support_redis_kill, restarts on the same port) the
 * fixture's redis-server; fails the test when it does not answer. */
static void setup_server(struct fx *f, const char *password)
{
	char err[4096];
	if (support_redis_start(&f->srv, password, err, sizeof err) != 0)
		fail_msg("%s", err);
}

static struct coord *client(struct fx *f, const char *userinfo, const char *db, const char *id)
{
	char url[256];
	snprintf(url, sizeof url, "redis://%s127.0.0.1:%d%s", userinfo, f->srv.port, db);
	struct ga_err err = {{0}};
	struct coord *c = coord_new_redis(&f->loop, url, id, &err);
	if (!c)
		fail_msg("coord_new_redis(%s): %s", url, err.msg);
	return c;
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	log_init(getenv("COORD_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_OFF, 0, NULL);
	uv_loop_init(&f->loop);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->a)
		ct_close(&f->loop, f->a);
	if (f->b)
		ct_close(&f->loop, f->b);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	support_redis_free(&f->srv);
	free(f);
	return 0;
}

static void claim(struct fx *f, struct coord *c, const char *key, int64_t ttl, struct ct_ans *a)
{
	memset(a, 0, sizeof *a);
	assert_int_equal(coord_claim(c, key, ttl, ct_claim_cb, a), 0);
	assert_int_equal(a->calls, 0);
	assert_true(ct_wait(&f->loop, a));
	assert_int_equal(a->calls, 1);
}

static void renew(struct fx *f, struct coord *c, const char *key, int64_t ttl, struct ct_ans *a)
{
	memset(a, 0, sizeof *a);
	assert_int_equal(coord_renew(c, key, ttl, ct_claim_cb, a), 0);
	assert_true(ct_wait(&f->loop, a));
}

static int64_t count(struct fx *f, struct coord *c, const char *key, int64_t window)
{
	struct ct_ans a = {0};
	assert_int_equal(coord_count(c, key, window, ct_count_cb, &a), 0);
	assert_true(ct_wait(&f->loop, &a));
	return a.count;
}

/* GET key through the check client: the value, or "" for nil (caller
 * frees). */
static char *sync_get(struct fx *f, const char *db, const char *key)
{
	redisContext *rc = sync_client(&f->srv);
	assert_non_null(rc);
	redisReply *rep;
	if (db) {
		rep = redisCommand(rc, "SELECT %s", db);
		freeReplyObject(rep);
	}
	rep = redisCommand(rc, "GET %s", key);
	assert_non_null(rep);
	char *v = xstrdup(rep->type == REDIS_REPLY_STRING ? rep->str : "");
	freeReplyObject(rep);
	redisFree(rc);
	return v;
}

static long long sync_pttl(struct fx *f, const char *key)
{
	redisContext *rc = sync_client(&f->srv);
	assert_non_null(rc);
	redisReply *rep = redisCommand(rc, "PTTL %s", key);
	assert_non_null(rep);
	assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
	long long v = rep->integer;
	freeReplyObject(rep);
	redisFree(rc);
	return v;
}

static void wait_ready(struct fx *f, struct coord *c)
{
	char buf[600];
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 10);
		coord_describe(c, buf, sizeof buf);
	} while (!strstr(buf, "(connected)") && ct_now_ms() < end);
	if (!strstr(buf, "(connected)"))
		fail_msg("never connected: %s", buf);
}

/* --- tests ---------------------------------------------------------------------------------- */

static void test_two_clients_one_winner(void **state)
{
	struct fx *f = *state;
	setup_server(f, NULL);
	f->a = client(f, "", "", "A");
	f->b = client(f, "", "", "B");
	/* before the connection is up: queued, not refused */
	struct ct_ans first = {0};
	assert_int_equal(coord_claim(f->a, "warmup", 60000, ct_claim_cb, &first), 0);
	assert_true(ct_wait(&f->loop, &first));
	assert_int_equal(first.r, COORD_WON);
	wait_ready(f, f->a);
	wait_ready(f, f->b);

	/* many keys, each claimed by both in the same loop round */
	enum { N = 40 };
	static struct ct_ans aa[N], bb[N];
	memset(aa, 0, sizeof aa);
	memset(bb, 0, sizeof bb);
	char key[64];
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof key, "respond:space:%032d", i);
		/* alternate who asks first */
		if (i % 2) {
			assert_int_equal(coord_claim(f->b, key, 60000, ct_claim_cb, &bb[i]), 0);
			assert_int_equal(coord_claim(f->a, key, 60000, ct_claim_cb, &aa[i]), 0);
		} else {
			assert_int_equal(coord_claim(f->a, key, 60000, ct_claim_cb, &aa[i]), 0);
			assert_int_equal(coord_claim(f->b, key, 60000, ct_claim_cb, &bb[i]), 0);
		}
	}
	int awins = 0, bwins = 0;
	for (int i = 0; i < N; i++) {
		assert_true(ct_wait(&f->loop, &aa[i]));
		assert_true(ct_wait(&f->loop, &bb[i]));
		assert_int_equal(aa[i].calls, 1);
		assert_int_equal(bb[i].calls, 1);
		bool a_won = aa[i].r == COORD_WON, b_won = bb[i].r == COORD_WON;
		assert_true(a_won != b_won); /* exactly one */
		struct ct_ans *loser = a_won ? &bb[i] : &aa[i];
		assert_int_equal(loser->r, COORD_HELD);
		assert_string_equal(loser->holder, a_won ? "A" : "B");
		snprintf(key, sizeof key, "ga:respond:space:%032d", i);
		char *v = sync_get(f, NULL, key);
		assert_string_equal(v, a_won ? "A" : "B");
		free(v);
		awins += a_won;
		bwins += b_won;
	}
	assert_int_equal(awins + bwins, N);

	/* the winner claiming again: held by itself */
	struct ct_ans a;
	claim(f, f->a, "warmup", 60000, &a);
	assert_int_equal(a.r, COORD_HELD);
	assert_string_equal(a.holder, "A");

	char buf[200];
	coord_describe(f->a, buf, sizeof buf);
	char want[64];
	snprintf(want, sizeof want, "redis 127.0.0.1:%d/0 (connected)", f->srv.port);
	assert_string_equal(buf, want);
}

static void test_release_renew_ttl(void **state)
{
	struct fx *f = *state;
	setup_server(f, NULL);
	f->a = client(f, "", "", "A");
	f->b = client(f, "", "", "B");
	struct ct_ans a;
	claim(f, f->a, "respond:m1", 60000, &a);
	assert_int_equal(a.r, COORD_WON);

	/* release by a non-owner deletes nothing */
	assert_int_equal(coord_release(f->b, "respond:m1"), 0);
	claim(f, f->b, "respond:m1", 60000, &a); /* also flushes the release */
	assert_int_equal(a.r, COORD_HELD);
	assert_string_equal(a.holder, "A");
	char *v = sync_get(f, NULL, "ga:respond:m1");
	assert_string_equal(v, "A");
	free(v);

	/* renew: the owner extends, anyone else is told the holder */
	long long before = sync_pttl(f, "ga:respond:m1");
	assert_true(before > 0 && before <= 60000);
	renew(f, f->a, "respond:m1", 600000, &a);
	assert_int_equal(a.r, COORD_WON);
	long long after = sync_pttl(f, "ga:respond:m1");
	assert_true(after > 60000 && after <= 600000);
	renew(f, f->b, "respond:m1", 900000, &a);
	assert_int_equal(a.r, COORD_HELD);
	assert_string_equal(a.holder, "A");
	assert_true(sync_pttl(f, "ga:respond:m1") <= 600000);
	renew(f, f->b, "respond:nothing", 1000, &a);
	assert_int_equal(a.r, COORD_HELD);
	assert_false(a.has_holder);

	/* the owner releases: gone, B can win */
	assert_int_equal(coord_release(f->a, "respond:m1"), 0);
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	v = NULL;
	do {
		ct_run_until(&f->loop, NULL, 10);
		free(v);
		v = sync_get(f, NULL, "ga:respond:m1");
	} while (*v && ct_now_ms() < end);
	assert_string_equal(v, "");
	free(v);
	v = NULL;
	claim(f, f->b, "respond:m1", 60000, &a);
	assert_int_equal(a.r, COORD_WON);

	/* TTL expiry lets the other win */
	claim(f, f->a, "respond:m2", 1000, &a);
	assert_int_equal(a.r, COORD_WON);
	claim(f, f->b, "respond:m2", 1000, &a);
	assert_int_equal(a.r, COORD_HELD);
	assert_string_equal(a.holder, "A");
	end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 20);
		claim(f, f->b, "respond:m2", 60000, &a);
	} while (a.r != COORD_WON && ct_now_ms() < end);
	assert_int_equal(a.r, COORD_WON);
	/* and A, whose claim expired, can no longer renew it */
	renew(f, f->a, "respond:m2", 60000, &a);
	assert_int_equal(a.r, COORD_HELD);
	assert_string_equal(a.holder, "B");
}

static void test_count(void **state)
{
	struct fx *f = *state;
	setup_server(f, NULL);
	f->a = client(f, "", "", "A");
	f->b = client(f, "", "", "B");
	assert_int_equal(count(f, f->a, "budget:pair:bob", 60000), 1);
	long long ttl = sync_pttl(f, "ga:budget:pair:bob");
	assert_true(ttl > 0 && ttl <= 60000);
	assert_int_equal(count(f, f->b, "budget:pair:bob", 60000), 2);
	assert_int_equal(count(f, f->a, "budget:pair:bob", 60000), 3);
	/* later events do not move the window */
	assert_true(sync_pttl(f, "ga:budget:pair:bob") <= ttl);
	char *v = sync_get(f, NULL, "ga:budget:pair:bob");
	assert_string_equal(v, "3");
	free(v);

	/* a counter left without a TTL (written by something else) gets one */
	redisContext *rc = sync_client(&f->srv);
	freeReplyObject(redisCommand(rc, "SET ga:budget:stuck 7"));
	redisFree(rc);
	assert_int_equal(count(f, f->a, "budget:stuck", 5000), 8);
	ttl = sync_pttl(f, "ga:budget:stuck");
	assert_true(ttl > 0 && ttl <= 5000);

	/* a short window ends: the next event counts 1 */
	assert_int_equal(count(f, f->a, "budget:w", 1000), 1);
	assert_int_equal(count(f, f->b, "budget:w", 1000), 2);
	int64_t n, end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 20);
		n = count(f, f->a, "budget:w", 1000);
	} while (n != 1 && ct_now_ms() < end);
	assert_int_equal(n, 1);

	/* a claim key is not a counter: the server's error is reported */
	struct ct_ans a;
	claim(f, f->a, "respond:c", 60000, &a);
	assert_int_equal(count(f, f->a, "respond:c", 1000), -1);
}

static void test_server_killed_and_back(void **state)
{
	struct fx *f = *state;
	setup_server(f, NULL);
	f->a = client(f, "", "", "A");
	coord_redis_set_timeout_ms(f->a, 1000);
	wait_ready(f, f->a);
	struct ct_ans a;
	claim(f, f->a, "respond:k1", 60000, &a);
	assert_int_equal(a.r, COORD_WON);

	/* killed with a request in flight and after */
	struct ct_ans k2 = {0};
	assert_int_equal(coord_claim(f->a, "respond:k2", 60000, ct_claim_cb, &k2), 0);
	support_redis_kill(&f->srv);
	int64_t t0 = ct_now_ms();
	assert_true(ct_wait(&f->loop, &k2));
	/* it may have been answered just before the kill */
	assert_true(k2.r == COORD_UNAVAILABLE || k2.r == COORD_WON);
	claim(f, f->a, "respond:k3", 60000, &a);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	/* the upper bound only shows there is no hang: the 1 s timeout, with
	 * room for a loaded (sanitizer) run */
	assert_true(ct_now_ms() - t0 <= 1000 + 4000);
	assert_non_null(strstr(a.why, "redis: "));
	for (int i = 0; i < 5; i++) {
		t0 = ct_now_ms();
		claim(f, f->a, "respond:k4", 60000, &a);
		assert_int_equal(a.r, COORD_UNAVAILABLE);
		assert_true(ct_now_ms() - t0 <= 1000 + 4000); /* no hang */
		ct_run_until(&f->loop, NULL, 30);
	}
	assert_int_equal(count(f, f->a, "budget:x", 1000), -1);
	char buf[600];
	coord_describe(f->a, buf, sizeof buf);
	assert_non_null(strstr(buf, "disconnected"));

	/* back on the same port: reconnects by itself (empty: k1 is gone) */
	setup_server(f, f->srv.password);
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 50);
		claim(f, f->a, "respond:k1", 60000, &a);
	} while (a.r == COORD_UNAVAILABLE && ct_now_ms() < end);
	assert_int_equal(a.r, COORD_WON);
	coord_describe(f->a, buf, sizeof buf);
	assert_non_null(strstr(buf, "(connected)"));
}

static void test_server_hangs_timeout(void **state)
{
	struct fx *f = *state;
	setup_server(f, NULL);
	f->a = client(f, "", "", "A");
	coord_redis_set_timeout_ms(f->a, 400);
	wait_ready(f, f->a);
	proc_signal(&f->srv.proc, SIGSTOP);
	struct ct_ans a, b = {0};
	int64_t t0 = ct_now_ms();
	assert_int_equal(coord_count(f->a, "budget:h", 1000, ct_count_cb, &b), 0);
	claim(f, f->a, "respond:h", 60000, &a);
	int64_t took = ct_now_ms() - t0;
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_non_null(strstr(a.why, "redis: timeout"));
	/* the 400 ms timeout; the upper bound only shows there is no hang */
	assert_true(took >= 350 && took <= 400 + 4000);
	assert_true(ct_wait(&f->loop, &b));
	assert_int_equal(b.count, -1);

	proc_signal(&f->srv.proc, SIGCONT);
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 50);
		claim(f, f->a, "respond:h2", 60000, &a);
	} while (a.r == COORD_UNAVAILABLE && ct_now_ms() < end);
	assert_int_equal(a.r, COORD_WON);
	/* The timed-out SET was still in the socket and the resumed server
	 * ran it: the key is ours (we stood down, nobody answers — the safe
	 * side), or free if the socket was gone first. Never another's. */
	char *v = sync_get(f, NULL, "ga:respond:h");
	assert_true(strcmp(v, "A") == 0 || strcmp(v, "") == 0);
	free(v);
}

static void test_password_and_db(void **state)
{
	struct fx *f = *state;
	char *logbuf = NULL;
	size_t loglen = 0;
	FILE *log = open_memstream(&logbuf, &loglen);
	log_init(LOG_LEVEL_DEBUG, 0, log);
	setup_server(f, PASSWORD);

	struct ct_ans a;
	f->a = client(f, ":" PASSWORD "@", "/3", "A");
	claim(f, f->a, "respond:p1", 60000, &a);
	assert_int_equal(a.r, COORD_WON);
	char *v = sync_get(f, "3", "ga:respond:p1");
	assert_string_equal(v, "A");
	free(v);
	v = sync_get(f, NULL, "ga:respond:p1"); /* not in db 0 */
	assert_string_equal(v, "");
	free(v);
	ct_close(&f->loop, f->a);

	/* the ACL user form */
	f->a = client(f, "default:" PASSWORD "@", "", "A");
	claim(f, f->a, "respond:p1", 60000, &a);
	assert_int_equal(a.r, COORD_WON);
	ct_close(&f->loop, f->a);

	/* a wrong password: refused, fail closed */
	f->a = client(f, ":wrong-password-9@", "", "A");
	claim(f, f->a, "respond:p2", 60000, &a);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_non_null(strstr(a.why, "AUTH refused"));
	ct_close(&f->loop, f->a);

	/* no password: the server refuses the command */
	f->a = client(f, "", "", "A");
	claim(f, f->a, "respond:p2", 60000, &a);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_non_null(strstr(a.why, "NOAUTH"));
	ct_close(&f->loop, f->a);

	/* a database that does not exist */
	f->a = client(f, ":" PASSWORD "@", "/99", "A");
	claim(f, f->a, "respond:p3", 60000, &a);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_non_null(strstr(a.why, "SELECT 99 refused"));
	ct_close(&f->loop, f->a);
	f->a = NULL;

	fclose(log);
	log_init(LOG_LEVEL_OFF, 0, NULL);
	assert_non_null(strstr(logbuf, "redis")); /* something was logged */
	assert_non_null(strstr(logbuf, "AUTH refused"));
	assert_null(strstr(logbuf, PASSWORD));
	assert_null(strstr(logbuf, "wrong-password-9"));
	free(logbuf);
}

static void test_close_with_requests_in_flight(void **state)
{
	struct fx *f = *state;
	setup_server(f, NULL);
	f->a = client(f, "", "", "A");
	wait_ready(f, f->a);
	proc_signal(&f->srv.proc, SIGSTOP); /* nothing will be answered */
	struct ct_ans a = {0}, b = {0};
	assert_int_equal(coord_claim(f->a, "respond:z", 60000, ct_claim_cb, &a), 0);
	assert_int_equal(coord_count(f->a, "budget:z", 60000, ct_count_cb, &b), 0);
	ct_run_until(&f->loop, NULL, 50); /* written to the socket */
	assert_int_equal(a.calls, 0);
	int done = 0;
	coord_close(f->a, ct_done_cb, &done);
	f->a = NULL;
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_string_equal(a.why, "shutting down");
	assert_int_equal(b.calls, 1);
	assert_int_equal(b.count, -1);
	assert_true(ct_run_until(&f->loop, &done, CT_WAIT_MS));
	while (uv_run(&f->loop, UV_RUN_NOWAIT))
		;
}

int main(void)
{
	if (!support_redis_binary()) {
		fprintf(stderr, "redis-server is not installed (scripts/bootstrap.sh --test "
		                "installs it)\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_two_clients_one_winner, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_release_renew_ttl, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_count, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_killed_and_back, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_hangs_timeout, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_password_and_db, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_close_with_requests_in_flight, setup,
	                                        teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
