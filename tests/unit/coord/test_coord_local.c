/*
 * The in-process coordination backend (modules/coord, local): SET NX
 * semantics (a key we hold is HELD for a second claim), renew and release
 * only by the owner, TTL expiry, counters and their window, answers always
 * deferred to the loop, the bounds (table full of live keys, expired keys
 * evicted first, COORD_MAX_PENDING), refused arguments, and close with
 * answers pending.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <stdlib.h>

#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/space/coord_space.h"
#include "tests/unit/coord/coord_test.h"

/* TTLs and windows that must not run out between two steps of a test, even
 * on a loaded machine, yet expire soon enough to wait for. */
#define SHORT_MS 300

struct fx {
	uv_loop_t loop;
	struct coord *c;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	uv_loop_init(&f->loop);
	f->c = coord_new_local(&f->loop, "ada-1");
	assert_non_null(f->c);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->c)
		assert_true(ct_close(&f->loop, f->c));
	assert_int_equal(uv_loop_close(&f->loop), 0);
	free(f);
	return 0;
}

static void claim(struct fx *f, const char *key, int64_t ttl, struct ct_ans *a)
{
	memset(a, 0, sizeof *a);
	assert_int_equal(coord_claim(f->c, key, ttl, ct_claim_cb, a), 0);
	/* never answered from inside the call */
	assert_int_equal(a->calls, 0);
	assert_true(ct_wait(&f->loop, a));
	assert_int_equal(a->calls, 1);
}

static void renew(struct fx *f, const char *key, int64_t ttl, struct ct_ans *a)
{
	memset(a, 0, sizeof *a);
	assert_int_equal(coord_renew(f->c, key, ttl, ct_claim_cb, a), 0);
	assert_int_equal(a->calls, 0);
	assert_true(ct_wait(&f->loop, a));
}

static int64_t count(struct fx *f, const char *key, int64_t window)
{
	struct ct_ans a = {0};
	assert_int_equal(coord_count(f->c, key, window, ct_count_cb, &a), 0);
	assert_int_equal(a.calls, 0);
	assert_true(ct_wait(&f->loop, &a));
	return a.count;
}

static void test_claim_semantics(void **state)
{
	struct fx *f = *state;
	struct ct_ans a;
	assert_string_equal(coord_name(f->c), "local");

	claim(f, "respond:space:abc", 60000, &a);
	assert_int_equal(a.r, COORD_WON);
	assert_false(a.has_holder);

	/* a second claim of a key we hold: held by us (answered once) */
	claim(f, "respond:space:abc", 60000, &a);
	assert_int_equal(a.r, COORD_HELD);
	assert_string_equal(a.holder, "ada-1");
	assert_non_null(strstr(a.why, "already claimed"));

	/* another key is independent */
	claim(f, "respond:space:def", 60000, &a);
	assert_int_equal(a.r, COORD_WON);

	/* renew by the owner; renew of a key nobody holds */
	renew(f, "respond:space:abc", 60000, &a);
	assert_int_equal(a.r, COORD_WON);
	renew(f, "respond:nobody", 60000, &a);
	assert_int_equal(a.r, COORD_HELD);
	assert_false(a.has_holder);
	assert_non_null(strstr(a.why, "no live claim"));

	/* release, then it can be won again; releasing twice is harmless */
	assert_int_equal(coord_release(f->c, "respond:space:abc"), 0);
	assert_int_equal(coord_release(f->c, "respond:space:abc"), 0);
	claim(f, "respond:space:abc", 60000, &a);
	assert_int_equal(a.r, COORD_WON);

	char buf[200];
	coord_describe(f->c, buf, sizeof buf);
	assert_non_null(strstr(buf, "local"));
	assert_non_null(strstr(buf, "2 claims"));
	/* the space-only entry points ignore other backends */
	coord_space_claim_lost(f->c, "respond", "space:abc", "Bob");
	coord_space_set_settle_ms(f->c, 5);
	coord_redis_set_timeout_ms(f->c, 5);
	claim(f, "respond:space:abc", 60000, &a);
	assert_int_equal(a.r, COORD_HELD);
}

static void test_ttl_expiry(void **state)
{
	struct fx *f = *state;
	struct ct_ans a;
	claim(f, "k", SHORT_MS, &a);
	assert_int_equal(a.r, COORD_WON);
	claim(f, "k", SHORT_MS, &a);
	assert_int_equal(a.r, COORD_HELD);
	/* renew keeps it ours past the first TTL */
	renew(f, "k", 10 * SHORT_MS, &a);
	assert_int_equal(a.r, COORD_WON);
	ct_run_until(&f->loop, NULL, 2 * SHORT_MS);
	claim(f, "k", SHORT_MS, &a);
	assert_int_equal(a.r, COORD_HELD);
	/* after the TTL it is free again (polled, generous timeout) */
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 20);
		claim(f, "k", SHORT_MS, &a);
	} while (a.r != COORD_WON && ct_now_ms() < end);
	assert_int_equal(a.r, COORD_WON);
	/* an expired claim cannot be renewed (a wait longer than the TTL on
	 * a monotonic clock: certain, not hoped) */
	ct_run_until(&f->loop, NULL, SHORT_MS + 50);
	renew(f, "k", SHORT_MS, &a);
	assert_int_equal(a.r, COORD_HELD);
	assert_false(a.has_holder);
}

static void test_count_window(void **state)
{
	struct fx *f = *state;
	assert_int_equal(count(f, "budget:conv:1", 60000), 1);
	assert_int_equal(count(f, "budget:conv:1", 60000), 2);
	assert_int_equal(count(f, "budget:conv:1", 60000), 3);
	assert_int_equal(count(f, "budget:conv:2", 60000), 1);
	/* counters and claims do not share keys */
	struct ct_ans a;
	claim(f, "budget:conv:1", 1000, &a);
	assert_int_equal(a.r, COORD_WON);

	assert_int_equal(count(f, "w", SHORT_MS), 1);
	assert_int_equal(count(f, "w", SHORT_MS), 2);
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	int64_t n;
	do {
		ct_run_until(&f->loop, NULL, 20);
		n = count(f, "w", SHORT_MS);
	} while (n != 1 && ct_now_ms() < end);
	assert_int_equal(n, 1); /* a new window */
}

static void test_bad_args(void **state)
{
	struct fx *f = *state;
	struct ct_ans a = {0};
	assert_int_equal(coord_claim(NULL, "k", 10, ct_claim_cb, &a), -1);
	assert_int_equal(coord_claim(f->c, NULL, 10, ct_claim_cb, &a), -1);
	assert_int_equal(coord_claim(f->c, "", 10, ct_claim_cb, &a), -1);
	assert_int_equal(coord_claim(f->c, " ab", 10, ct_claim_cb, &a), -1);
	assert_int_equal(coord_claim(f->c, "a\nb", 10, ct_claim_cb, &a), -1);
	assert_int_equal(coord_claim(f->c, "a\tb", 10, ct_claim_cb, &a), -1);
	assert_int_equal(coord_claim(f->c, "k", 0, ct_claim_cb, &a), -1);
	assert_int_equal(coord_claim(f->c, "k", -5, ct_claim_cb, &a), -1);
	assert_int_equal(coord_claim(f->c, "k", 10, NULL, &a), -1);
	assert_int_equal(coord_renew(f->c, "", 10, ct_claim_cb, &a), -1);
	assert_int_equal(coord_release(f->c, ""), -1);
	assert_int_equal(coord_release(NULL, "k"), -1);
	assert_int_equal(coord_count(f->c, "k", 0, ct_count_cb, &a), -1);
	assert_int_equal(coord_count(f->c, "k", 10, NULL, &a), -1);
	char big[COORD_MAX_KEY + 2];
	memset(big, 'k', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_int_equal(coord_claim(f->c, big, 10, ct_claim_cb, &a), -1);
	big[COORD_MAX_KEY] = '\0'; /* exactly the limit */
	assert_int_equal(coord_claim(f->c, big, 10, ct_claim_cb, &a), 0);
	assert_true(ct_wait(&f->loop, &a));
	assert_int_equal(a.r, COORD_WON);
	assert_null(coord_new_local(&f->loop, ""));
	assert_null(coord_new_local(&f->loop, NULL));
	assert_null(coord_new_local(NULL, "x"));
	assert_string_equal(coord_result_name(COORD_UNAVAILABLE), "unavailable");
}

static void test_table_full(void **state)
{
	struct fx *f = *state;
	static struct ct_ans ans[COORD_LOCAL_MAX_KEYS];
	char key[32];
	/* fill with short-lived keys, in batches below COORD_MAX_PENDING */
	for (int i = 0; i < COORD_LOCAL_MAX_KEYS; i++) {
		snprintf(key, sizeof key, "short:%d", i);
		assert_int_equal(coord_claim(f->c, key, 4000, ct_claim_cb, &ans[i]), 0);
		if (i % 512 == 511)
			assert_true(ct_wait(&f->loop, &ans[i]));
	}
	for (int i = 0; i < COORD_LOCAL_MAX_KEYS; i++)
		assert_int_equal(ans[i].r, COORD_WON);
	struct ct_ans a;
	claim(f, "one-more", 60000, &a);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_non_null(strstr(a.why, "table full"));
	assert_int_equal(count(f, "c", 1000), 1); /* counters have their own table */

	/* once they expire, they are evicted for new keys */
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 20);
		claim(f, "one-more", 60000, &a);
	} while (a.r != COORD_WON && ct_now_ms() < end);
	assert_int_equal(a.r, COORD_WON);

	/* full of live keys again: long-lived ones. First let every key of
	 * the first batch expire (4 s after the last was claimed), so that the
	 * table holds only "one-more" and the long ones whatever the load on
	 * the machine. */
	ct_run_until(&f->loop, NULL, 4200);
	memset(ans, 0, sizeof ans);
	for (int i = 0; i < COORD_LOCAL_MAX_KEYS - 1; i++) {
		snprintf(key, sizeof key, "long:%d", i);
		assert_int_equal(coord_claim(f->c, key, 600000, ct_claim_cb, &ans[i]), 0);
		if (i % 512 == 511)
			assert_true(ct_wait(&f->loop, &ans[i]));
	}
	assert_true(ct_wait(&f->loop, &ans[COORD_LOCAL_MAX_KEYS - 2]));
	for (int i = 0; i < COORD_LOCAL_MAX_KEYS - 1; i++)
		assert_int_equal(ans[i].r, COORD_WON);
	claim(f, "long:x", 60000, &a);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	/* releasing one makes room */
	assert_int_equal(coord_release(f->c, "long:7"), 0);
	claim(f, "long:x", 60000, &a);
	assert_int_equal(a.r, COORD_WON);
}

static void test_pending_bound(void **state)
{
	struct fx *f = *state;
	static struct ct_ans ans[COORD_MAX_PENDING + 1];
	char key[32];
	for (int i = 0; i < COORD_MAX_PENDING; i++) {
		snprintf(key, sizeof key, "p:%d", i);
		assert_int_equal(coord_claim(f->c, key, 1000, ct_claim_cb, &ans[i]), 0);
	}
	/* the caller is flooding: refused, not queued */
	assert_int_equal(coord_claim(f->c, "p:x", 1000, ct_claim_cb, &ans[COORD_MAX_PENDING]), -1);
	assert_int_equal(coord_count(f->c, "p:x", 1000, ct_count_cb, &ans[COORD_MAX_PENDING]), -1);
	assert_true(ct_wait(&f->loop, &ans[COORD_MAX_PENDING - 1]));
	for (int i = 0; i < COORD_MAX_PENDING; i++)
		assert_int_equal(ans[i].calls, 1);
	assert_int_equal(ans[COORD_MAX_PENDING].calls, 0);
	/* answered: room again */
	struct ct_ans a;
	claim(f, "p:x", 1000, &a);
	assert_int_equal(a.r, COORD_WON);
}

/* A callback that asks again from inside its answer. */
struct chain {
	struct coord *c;
	struct ct_ans first, second;
};

static void chain_cb(void *ud, enum coord_result r, const char *holder, const char *why)
{
	struct chain *ch = ud;
	ct_claim_cb(&ch->first, r, holder, why);
	assert_int_equal(coord_claim(ch->c, "chain", 1000, ct_claim_cb, &ch->second), 0);
	assert_int_equal(ch->second.calls, 0);
}

static void test_close_with_pending(void **state)
{
	struct fx *f = *state;
	struct chain ch = {.c = f->c};
	assert_int_equal(coord_claim(f->c, "chain", 1000, chain_cb, &ch), 0);
	assert_true(ct_wait(&f->loop, &ch.first));
	assert_int_equal(ch.first.r, COORD_WON);
	assert_true(ct_wait(&f->loop, &ch.second));
	assert_int_equal(ch.second.r, COORD_HELD);

	struct ct_ans a = {0}, b = {0};
	assert_int_equal(coord_claim(f->c, "x", 1000, ct_claim_cb, &a), 0);
	assert_int_equal(coord_count(f->c, "x", 1000, ct_count_cb, &b), 0);
	int done = 0;
	coord_close(f->c, ct_done_cb, &done);
	/* pending answers: "shutting down", before coord_close returned */
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.r, COORD_UNAVAILABLE);
	assert_string_equal(a.why, "shutting down");
	assert_int_equal(b.calls, 1);
	assert_int_equal(b.count, -1);
	/* closed: refused */
	assert_int_equal(coord_claim(f->c, "y", 1000, ct_claim_cb, &a), -1);
	assert_int_equal(coord_release(f->c, "x"), -1);
	assert_int_equal(done, 0);
	assert_true(ct_run_until(&f->loop, &done, CT_WAIT_MS));
	assert_int_equal(done, 1);
	f->c = NULL;
	while (uv_run(&f->loop, UV_RUN_NOWAIT))
		;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_claim_semantics, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_ttl_expiry, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_count_window, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bad_args, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_table_full, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pending_bound, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_close_with_pending, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
