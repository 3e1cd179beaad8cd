/*
 * Bluesky state (modules/bluesky/bstate.h): the processed set and its
 * bound, conversations and their bound (a finished one dropped first),
 * rituals (dedup per date, history cap, thread recognition), peers (a
 * handle is not a peer SOUL until its GitHub name is known), the JSON round
 * trip, and across versions: a file saved by another version keeps the
 * cursor, the processed set and the peers' announced/followed flags (the
 * reference's discovered_peers shape included).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "modules/bluesky/bstate.h"
#include "testutil.h"

#define T0 1763892000000LL

static void test_processed(void **state)
{
	(void)state;
	struct bsky_state *s = bsky_state_new();
	char uri[64];
	assert_false(bsky_state_processed(s, "at://a/p/0"));
	for (int i = 0; i < BSKY_PROCESSED_MAX + 10; i++) {
		snprintf(uri, sizeof uri, "at://a/p/%d", i);
		bsky_state_mark_processed(s, uri);
		bsky_state_mark_processed(s, uri); /* twice: counted once */
	}
	assert_int_equal(s->nprocessed, BSKY_PROCESSED_MAX);
	assert_int_equal(s->handled_total, BSKY_PROCESSED_MAX + 10);
	assert_false(bsky_state_processed(s, "at://a/p/0")); /* the oldest forgotten */
	assert_false(bsky_state_processed(s, "at://a/p/9"));
	assert_true(bsky_state_processed(s, "at://a/p/10"));
	snprintf(uri, sizeof uri, "at://a/p/%d", BSKY_PROCESSED_MAX + 9);
	assert_true(bsky_state_processed(s, uri));
	/* the round trip keeps the set and its eviction order */
	cJSON *j = bsky_state_to_json(s);
	struct bsky_state *t = bsky_state_new();
	struct ga_err err = {{0}};
	assert_int_equal(bsky_state_from_json(t, j, &err), 0);
	assert_true(bsky_state_processed(t, "at://a/p/10"));
	assert_false(bsky_state_processed(t, "at://a/p/9"));
	bsky_state_mark_processed(t, "at://new");
	assert_false(bsky_state_processed(t, "at://a/p/10")); /* the oldest goes next */
	assert_true(bsky_state_processed(t, "at://a/p/11"));
	cJSON_Delete(j);
	bsky_state_free(t);
	bsky_state_free(s);
}

static void test_convs(void **state)
{
	(void)state;
	struct bsky_state *s = bsky_state_new();
	char root[64];
	assert_null(bsky_state_conv(s, "at://r/0", false, T0));
	for (int i = 0; i < BSKY_CONVS_MAX; i++) {
		snprintf(root, sizeof root, "at://r/%d", i);
		struct bsky_conv *c = bsky_state_conv(s, root, true, T0 + i);
		assert_non_null(c);
		if (i == 100)
			bsky_conv_conclude(c, NULL, "done", T0 + i);
	}
	/* full: the concluded one goes, although others are older */
	assert_non_null(bsky_state_conv(s, "at://r/new", true, T0 + 1000));
	assert_int_equal(s->nconvs, BSKY_CONVS_MAX);
	assert_null(bsky_state_conv(s, "at://r/100", false, T0));
	assert_non_null(bsky_state_conv(s, "at://r/0", false, T0));
	/* then the least recently active */
	assert_non_null(bsky_state_conv(s, "at://r/new2", true, T0 + 1001));
	assert_null(bsky_state_conv(s, "at://r/0", false, T0));
	/* round trip of one conversation's fields */
	struct bsky_conv *c = bsky_state_conv(s, "at://r/5", false, T0);
	bsky_conv_note_incoming(c, "did:h", 3, false, T0 + 10);
	bsky_conv_note_our_reply(c, 4, T0 + 20);
	cJSON *j = bsky_state_to_json(s);
	struct bsky_state *t = bsky_state_new();
	struct ga_err err = {{0}};
	assert_int_equal(bsky_state_from_json(t, j, &err), 0);
	struct bsky_conv *d = bsky_state_conv(t, "at://r/5", false, T0);
	assert_non_null(d);
	assert_int_equal(d->our_replies, 1);
	assert_int_equal(d->depth, 4);
	assert_int_equal(d->state, BSKY_CONV_AWAITING);
	assert_int_equal(d->nwho, 1);
	assert_string_equal(d->who[0].did, "did:h");
	cJSON_Delete(j);
	bsky_state_free(t);
	bsky_state_free(s);
}

static void test_rituals_and_peers(void **state)
{
	(void)state;
	struct bsky_state *s = bsky_state_new();
	struct bsky_ritual_state *r = bsky_state_ritual(s, "Standup");
	assert_non_null(r);
	assert_ptr_equal(bsky_state_ritual(s, "Standup"), r);
	char uri[64], date[16];
	for (int i = 0; i < BSKY_RITUAL_HISTORY_MAX + 5; i++) {
		snprintf(uri, sizeof uri, "at://t/%d", i);
		snprintf(date, sizeof date, "2026-11-%02d", 1 + i % 28);
		bsky_state_ritual_run(r, date, uri, true);
	}
	assert_int_equal(r->nruns, BSKY_RITUAL_HISTORY_MAX);
	assert_null(bsky_state_ritual_thread(s, "at://t/0"));
	assert_string_equal(bsky_state_ritual_thread(s, "at://t/34"), "Standup");
	assert_string_equal(bsky_state_ritual_thread(s, "at://t/10"), "Standup");
	assert_null(bsky_state_ritual_thread(s, "at://other"));
	/* peers */
	struct bsky_peer *p = bsky_state_peer_add(s, "@Peer.test", "did:plc:p", "thread", T0);
	assert_non_null(p);
	assert_ptr_equal(bsky_state_peer(s, "peer.TEST", NULL), p);
	assert_ptr_equal(bsky_state_peer(s, NULL, "did:plc:p"), p);
	assert_false(bsky_state_is_peer(s, "did:plc:p")); /* no identity post yet */
	snprintf(p->github, sizeof p->github, "peer-a");
	assert_true(bsky_state_is_peer(s, "did:plc:p"));
	for (int i = 0; i < BSKY_PEERS_MAX + 3; i++) {
		char h[32];
		snprintf(h, sizeof h, "h%d.test", i);
		bsky_state_peer_add(s, h, NULL, "thread", T0);
	}
	assert_int_equal(s->npeers, BSKY_PEERS_MAX);
	assert_null(bsky_state_peer_add(s, "late.test", NULL, "thread", T0));
	bsky_state_free(s);
}

static void test_versions(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct state_store old, cur;
	struct ga_err err = {{0}};
	assert_int_equal(state_store_init(&old, dir, "0.9.0", &err), 0);
	assert_int_equal(state_store_init(&cur, dir, "1.0.0", &err), 0);
	struct bsky_state *s = bsky_state_new();
	s->seen_until_ms = T0;
	bsky_state_mark_processed(s, "at://n/1");
	struct bsky_peer *p = bsky_state_peer_add(s, "peer.test", "did:plc:p", "thread", T0);
	snprintf(p->github, sizeof p->github, "peer-a");
	p->announced = p->followed = true;
	assert_int_equal(bsky_state_save(s, &old, T0, &err), 0);
	bsky_state_free(s);
	/* a new version reads both back */
	struct bsky_state *t = bsky_state_new();
	struct state_load_info a, b;
	assert_int_equal(bsky_state_load(t, &cur, &a, &b), 0);
	assert_int_equal(a.status, STATE_MIGRATED);
	assert_int_equal(b.status, STATE_MIGRATED);
	assert_int_equal(t->seen_until_ms, T0);
	assert_true(bsky_state_processed(t, "at://n/1"));
	struct bsky_peer *q = bsky_state_peer(t, "peer.test", NULL);
	assert_non_null(q);
	assert_true(q->announced);
	assert_true(q->followed);
	assert_string_equal(q->github, "peer-a");
	bsky_state_free(t);
	/* the reference's shape: a handle-only key and duplicate entries merged */
	cJSON *ref = json_parse(
	        "{\"peers\":{\"peer-b\":{\"githubUsername\":\"peer-b\",\"blueskyHandle\":\"b."
	        "test\","
	        "\"announcedOnBluesky\":true},\"b.test\":{\"githubUsername\":\"b.test\","
	        "\"blueskyHandle\":\"b.test\",\"followedOnBluesky\":true},"
	        "\"c.test\":{\"githubUsername\":\"c.test\",\"blueskyHandle\":\"c.test\"}}}",
	        strlen("{\"peers\":{\"peer-b\":{\"githubUsername\":\"peer-b\",\"blueskyHandle\":"
	               "\"b.test\","
	               "\"announcedOnBluesky\":true},\"b.test\":{\"githubUsername\":\"b.test\","
	               "\"blueskyHandle\":\"b.test\",\"followedOnBluesky\":true},"
	               "\"c.test\":{\"githubUsername\":\"c.test\",\"blueskyHandle\":\"c.test\"}}}"),
	        &err);
	assert_non_null(ref);
	t = bsky_state_new();
	assert_int_equal(bsky_peers_from_json(t, ref, &err), 0);
	assert_int_equal(t->npeers, 2);
	q = bsky_state_peer(t, "b.test", NULL);
	assert_string_equal(q->github, "peer-b");
	assert_true(q->announced && q->followed);
	q = bsky_state_peer(t, "c.test", NULL);
	assert_string_equal(q->github, ""); /* a placeholder key is no GitHub name */
	cJSON_Delete(ref);
	/* wrong types are refused, naming the field */
	ref = json_parse("{\"peers\":[]}", 12, &err);
	assert_int_equal(bsky_peers_from_json(t, ref, &err), -1);
	assert_non_null(strstr(err.msg, "peers"));
	cJSON_Delete(ref);
	assert_int_equal(bsky_state_from_json(t, NULL, &err), -1);
	bsky_state_free(t);
	state_store_free(&old);
	state_store_free(&cur);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_processed),
	        cmocka_unit_test(test_convs),
	        cmocka_unit_test(test_rituals_and_peers),
	        cmocka_unit_test(test_versions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
