/*
 * test_etag — the GitHub client's ETag cache (etag.h): what is stored and
 * found, and its three bounds: entries (least recently used first), bytes,
 * and idle entries (not found or stored during the last max_idle
 * operations), while an entry in use stays whatever the traffic.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/github/etag.h"

static bool put(struct gh_etags *c, const char *url, const char *body)
{
	return gh_etag_put(c, url, "\"tag\"", body, strlen(body), NULL);
}

static bool has(struct gh_etags *c, const char *url)
{
	struct gh_etag_entry e;
	return gh_etag_find(c, url, &e);
}

static void test_store_and_find(void **state)
{
	(void)state;
	struct gh_etags *c = gh_etags_new(4, 1 << 20, 0);
	assert_true(gh_etag_put(c, "u1", "W/\"a\"", "[1]", 3, "<n>; rel=\"next\""));
	struct gh_etag_entry e;
	assert_true(gh_etag_find(c, "u1", &e));
	assert_string_equal(e.tag, "W/\"a\"");
	assert_string_equal(e.body, "[1]");
	assert_int_equal(e.body_len, 3);
	assert_string_equal(e.link, "<n>; rel=\"next\"");
	/* no tag, or one over GH_ETAG_TAG_MAX: not stored, and the old one goes */
	assert_false(gh_etag_put(c, "u1", "", "[2]", 3, NULL));
	assert_false(has(c, "u1"));
	char big[GH_ETAG_TAG_MAX + 2];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_false(gh_etag_put(c, "u2", big, "[]", 2, NULL));
	assert_int_equal(gh_etag_count(c), 0);
	gh_etags_free(c);
	gh_etags_free(NULL);
}

static void test_entries_bound_drops_least_recent(void **state)
{
	(void)state;
	struct gh_etags *c = gh_etags_new(3, 1 << 20, 0);
	assert_true(put(c, "a", "1"));
	assert_true(put(c, "b", "2"));
	assert_true(put(c, "c", "3"));
	assert_true(has(c, "a")); /* a is now the most recent: b goes first */
	assert_true(put(c, "d", "4"));
	assert_int_equal(gh_etag_count(c), 3);
	assert_false(has(c, "b"));
	assert_true(has(c, "a"));
	assert_true(has(c, "c"));
	assert_true(has(c, "d"));
	gh_etags_free(c);
}

static void test_bytes_bound(void **state)
{
	(void)state;
	char body[300];
	memset(body, 'j', sizeof body - 1);
	body[sizeof body - 1] = '\0';
	/* each entry counts its body, url, tag and node (about 380 bytes here):
	 * four fit in 1600 */
	struct gh_etags *c = gh_etags_new(100, 1600, 0);
	const char *urls[] = {"a", "b", "c", "d", "e"};
	for (size_t i = 0; i < 5; i++) {
		assert_true(put(c, urls[i], body));
		assert_true(gh_etag_bytes(c) <= 1600);
	}
	assert_false(has(c, "a"));
	assert_true(has(c, "e"));
	assert_true(gh_etag_count(c) < 5);
	/* an answer over a quarter of the bound is not stored at all */
	char huge[410];
	memset(huge, 'h', sizeof huge - 1);
	huge[sizeof huge - 1] = '\0';
	assert_false(put(c, "h", huge));
	assert_false(has(c, "h"));
	gh_etags_free(c);
}

/* A workload like a poller's: three URLs asked for every round, and a
 * one-off URL read once per round. With room for 256 entries the one-offs
 * would pile up to the entries bound; with max_idle they stay a few rounds
 * at most, and the polled URLs never leave. */
static void test_idle_entries_go_polled_ones_stay(void **state)
{
	(void)state;
	const size_t idle = 40;
	struct gh_etags *c = gh_etags_new(256, 1 << 20, idle);
	const char *polled[] = {"/issues?state=open", "/pulls?state=open", "/pulls?state=closed"};
	size_t most = 0;
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < 3; i++) {
			/* a GET: the lookup, then the store of the 200 (or the 304) */
			if (!has(c, polled[i]) || round % 5 == 0)
				assert_true(put(c, polled[i], "[]"));
			else
				assert_true(has(c, polled[i]));
		}
		char once[32];
		snprintf(once, sizeof once, "/pulls/%d/files", round);
		assert_false(has(c, once));
		assert_true(put(c, once, "[{\"filename\":\"x\"}]"));
		if (gh_etag_count(c) > most)
			most = gh_etag_count(c);
	}
	/* a round is 9 operations or fewer: a one-off lasts idle / 8 rounds or so */
	assert_true(most <= 3 + idle / 8 + 1);
	for (size_t i = 0; i < 3; i++)
		assert_true(has(c, polled[i]));
	/* the most recent one-off is still there, one from 100 rounds ago is not */
	assert_true(has(c, "/pulls/199/files"));
	assert_false(has(c, "/pulls/99/files"));
	gh_etags_free(c);
}

/* An entry is idle by operations, not by age in entries: a single URL
 * polled alone stays, and everything goes once nothing touches it. */
static void test_idle_counts_operations(void **state)
{
	(void)state;
	struct gh_etags *c = gh_etags_new(256, 1 << 20, 4);
	assert_true(put(c, "p", "[]"));
	assert_true(put(c, "q", "[]")); /* op 2 */
	for (int i = 0; i < 50; i++)
		assert_true(has(c, "p"));
	assert_int_equal(gh_etag_count(c), 1); /* q: idle since op 2 */
	/* three lookups of other URLs, p's is the fourth: p stays... */
	assert_false(has(c, "q"));
	assert_false(has(c, "x1"));
	assert_false(has(c, "x2"));
	assert_true(has(c, "p"));
	/* ...five without it: gone */
	for (int i = 0; i < 5; i++)
		assert_false(has(c, "y"));
	assert_false(has(c, "p"));
	assert_int_equal(gh_etag_count(c), 0);
	assert_int_equal(gh_etag_bytes(c), 0);
	gh_etags_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_store_and_find),
	        cmocka_unit_test(test_entries_bound_drops_least_recent),
	        cmocka_unit_test(test_bytes_bound),
	        cmocka_unit_test(test_idle_entries_go_polled_ones_stay),
	        cmocka_unit_test(test_idle_counts_operations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
