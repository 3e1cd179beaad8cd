/*
 * Bluesky state (modules/bluesky/bstate.h): the processed set and its
 * bound, conversations and their bound (a finished one dropped first),
 * rituals (dedup per date, history cap, thread recognition), peers (a
 * handle is not a peer SOUL until its GitHub name is known), the JSON round
 * trip, and across versions: a file saved by another version keeps the
 * cursor, the processed set and the peers' announced/followed flags (the
 * keyed discovered_peers shape, handle-only keys included).
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

/* One directory, two stores on it: an older version and the current one. */
static char *two_versions(struct state_store *old, struct state_store *cur)
{
	char *dir = tu_tempdir();
	struct ga_err err = {{0}};
	assert_int_equal(state_store_init(old, dir, "0.9.0", &err), 0);
	assert_int_equal(state_store_init(cur, dir, "1.0.0", &err), 0);
	return dir;
}

static void two_versions_free(char *dir, struct state_store *old, struct state_store *cur)
{
	state_store_free(old);
	state_store_free(cur);
	tu_rmrf(dir);
	free(dir);
}

static void test_versions(void **state)
{
	(void)state;
	struct state_store old, cur;
	struct ga_err err = {{0}};
	char *dir = two_versions(&old, &cur);
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
	/* a handle-only key and duplicate entries merged */
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
	two_versions_free(dir, &old, &cur);
}

#define DAY (24LL * 3600 * 1000)

/* Relationships: keyed by DID (a new handle is the same person), an
 * interaction seen again counted once, the recent list bounded at 10,
 * sentiment from it, responded marked, the §6.2 facts. */
static void test_relationships(void **state)
{
	(void)state;
	struct bsky_state *s = bsky_state_new();
	assert_null(bsky_state_rel_note(s, "", "x.test", BSKY_REASON_LIKE, "at://l/0", T0));
	assert_null(bsky_state_rel(s, "did:plc:a"));
	struct bsky_rel *r =
	        bsky_state_rel_note(s, "did:plc:a", "a.test", BSKY_REASON_REPLY, "at://r/1", T0);
	assert_non_null(r);
	assert_int_equal(r->sentiment, BSKY_SENTIMENT_UNKNOWN);
	assert_int_equal(r->first_seen_ms, T0);
	/* the same notification again: not counted twice */
	bsky_state_rel_note(s, "did:plc:a", "a.test", BSKY_REASON_REPLY, "at://r/1", T0);
	assert_int_equal(r->total, 1);
	/* a handle change keeps the person */
	r = bsky_state_rel_note(s, "did:plc:a", "@renamed.test", BSKY_REASON_LIKE, "at://l/1",
	                        T0 + 1);
	assert_int_equal(s->nrels, 1);
	assert_string_equal(r->handle, "renamed.test");
	assert_int_equal(r->sentiment, BSKY_SENTIMENT_NEUTRAL);
	bsky_state_rel_note(s, "did:plc:a", NULL, BSKY_REASON_REPOST, "at://p/1", T0 + 2);
	r = bsky_state_rel_note(s, "did:plc:a", NULL, BSKY_REASON_FOLLOW, "at://f/1", T0 + 3);
	assert_int_equal(r->sentiment, BSKY_SENTIMENT_POSITIVE);
	assert_int_equal(r->last_ms, T0 + 3);
	/* 10 more mentions push the warm ones out of the window one by one: on
	 * the way it held 1 warm of 10 (neutral), then none (unchanged) */
	char uri[64];
	for (int i = 0; i < 10; i++) {
		snprintf(uri, sizeof uri, "at://r/x%d", i);
		bsky_state_rel_note(s, "did:plc:a", NULL, BSKY_REASON_MENTION, uri, T0 + 10 + i);
	}
	assert_int_equal(r->nrecent, BSKY_REL_RECENT);
	assert_int_equal(r->total, 14);
	assert_string_equal(r->recent[0].uri, "at://r/x0");
	assert_int_equal(r->sentiment, BSKY_SENTIMENT_NEUTRAL);
	/* a like in the window: 1 warm of 10, still neutral */
	bsky_state_rel_note(s, "did:plc:a", NULL, BSKY_REASON_LIKE, "at://l/2", T0 + 30);
	assert_int_equal(r->sentiment, BSKY_SENTIMENT_NEUTRAL);
	/* responded: the person and the interaction */
	assert_false(r->responded);
	assert_false(bsky_state_rel_responded(s, "did:plc:nobody", "at://r/x9"));
	assert_true(bsky_state_rel_responded(s, "did:plc:a", "at://r/x9"));
	assert_true(r->responded);
	assert_true(r->recent[BSKY_REL_RECENT - 2].responded);
	assert_false(r->recent[BSKY_REL_RECENT - 1].responded);
	/* the facts */
	struct bsky_prio_facts f = {.reason = BSKY_REASON_REPLY};
	bsky_state_rel_facts(s, "did:plc:a", &f);
	assert_true(f.known && f.ever_responded && !f.positive);
	assert_int_equal(f.interactions, 15);
	assert_int_equal(f.reason, BSKY_REASON_REPLY); /* the rest untouched */
	bsky_state_rel_facts(s, "did:plc:b", &f);
	assert_false(f.known || f.positive || f.ever_responded);
	assert_int_equal(f.interactions, 0);
	bsky_state_free(s);
}

/* §6.2 with the records: a reply from a known, liked-us-often person we
 * never answered comes before the same reply from a stranger, and before a
 * known positive person we already answered. */
static void test_priority_with_records(void **state)
{
	(void)state;
	struct bsky_state *s = bsky_state_new();
	const char *warm[] = {"at://l/1", "at://l/2", "at://l/3", "at://l/4", "at://l/5"};
	for (int i = 0; i < 5; i++) {
		bsky_state_rel_note(s, "did:plc:friend", "friend.test", BSKY_REASON_LIKE, warm[i],
		                    T0 + i);
		bsky_state_rel_note(s, "did:plc:old", "old.test", BSKY_REASON_LIKE, warm[i],
		                    T0 + i);
	}
	bsky_state_rel_responded(s, "did:plc:old", NULL);
	struct bsky_prio_facts friend = {.reason = BSKY_REASON_REPLY, .unread = true};
	struct bsky_prio_facts stranger = friend, old = friend;
	bsky_state_rel_facts(s, "did:plc:friend", &friend);
	bsky_state_rel_facts(s, "did:plc:stranger", &stranger);
	bsky_state_rel_facts(s, "did:plc:old", &old);
	assert_true(friend.positive);
	assert_int_equal(bsky_priority(&friend), 50 + 30 + 15 + 10 + 20 + 10);
	assert_int_equal(bsky_priority(&stranger), 50 + 30 + 5 + 10);
	assert_int_equal(bsky_priority(&old), 50 + 30 + 15 + 10 + 10);
	assert_true(bsky_priority(&friend) > bsky_priority(&old));
	assert_true(bsky_priority(&old) > bsky_priority(&stranger));
	bsky_state_free(s);
}

/* At most BSKY_REL_MAX people: the least recently interacted is dropped. */
static void test_rel_bound(void **state)
{
	(void)state;
	struct bsky_state *s = bsky_state_new();
	char did[64], uri[64];
	for (int i = 0; i < BSKY_REL_MAX; i++) {
		snprintf(did, sizeof did, "did:plc:p%d", i);
		snprintf(uri, sizeof uri, "at://l/%d", i);
		/* p7 is the least recently interacted */
		bsky_state_rel_note(s, did, NULL, BSKY_REASON_LIKE, uri,
		                    i == 7 ? T0 - DAY : T0 + i);
	}
	assert_int_equal(s->nrels, BSKY_REL_MAX);
	assert_non_null(bsky_state_rel_note(s, "did:plc:late", NULL, BSKY_REASON_FOLLOW,
	                                    "at://f/late", T0 + 5000));
	assert_int_equal(s->nrels, BSKY_REL_MAX);
	assert_null(bsky_state_rel(s, "did:plc:p7"));
	assert_non_null(bsky_state_rel(s, "did:plc:p0"));
	struct bsky_rel *r = bsky_state_rel(s, "did:plc:late");
	assert_non_null(r);
	assert_int_equal(r->total, 1); /* a clean slot, nothing of p7 */
	assert_string_equal(r->recent[0].uri, "at://f/late");
	bsky_state_free(s);
}

/* Pruning: idle > 60 days, > 90 days when positive or >= 5 interactions. */
static void test_rel_prune(void **state)
{
	(void)state;
	struct bsky_state *s = bsky_state_new();
	const int64_t now = T0 + 100 * DAY;
	char uri[64];
	bsky_state_rel_note(s, "did:plc:fresh", NULL, BSKY_REASON_REPLY, "at://r/1",
	                    now - 59 * DAY);
	bsky_state_rel_note(s, "did:plc:idle", NULL, BSKY_REASON_REPLY, "at://r/2", now - 61 * DAY);
	for (int i = 0; i < 5; i++) {
		snprintf(uri, sizeof uri, "at://m/%d", i);
		bsky_state_rel_note(s, "did:plc:busy", NULL, BSKY_REASON_MENTION, uri,
		                    now - 70 * DAY);
		bsky_state_rel_note(s, "did:plc:gone", NULL, BSKY_REASON_MENTION, uri,
		                    now - 91 * DAY);
	}
	for (int i = 0; i < 3; i++) {
		snprintf(uri, sizeof uri, "at://l/%d", i);
		bsky_state_rel_note(s, "did:plc:fan", NULL, BSKY_REASON_LIKE, uri, now - 80 * DAY);
	}
	assert_int_equal(s->nrels, 5);
	assert_int_equal(bsky_state_prune_rels(s, now), 2);
	assert_int_equal(s->nrels, 3);
	assert_non_null(bsky_state_rel(s, "did:plc:fresh"));
	assert_non_null(bsky_state_rel(s, "did:plc:busy"));
	assert_non_null(bsky_state_rel(s, "did:plc:fan"));
	assert_null(bsky_state_rel(s, "did:plc:idle"));
	assert_null(bsky_state_rel(s, "did:plc:gone"));
	assert_int_equal(bsky_state_prune_rels(s, now), 0);
	bsky_state_free(s);
}

/* Saved and loaded back whole; a file of an older version without
 * "relationships" loads with none and keeps the rest. */
static void test_rel_persisted(void **state)
{
	(void)state;
	struct state_store old, cur;
	struct ga_err err = {{0}};
	char *dir = two_versions(&old, &cur);
	/* the older file: no relationships field at all */
	const char *olds = "{\"format\":1,\"seenUntilMs\":1763892000000,\"processed\":[],"
	                   "\"conversations\":[],\"rituals\":[]}";
	cJSON *od = json_parse(olds, strlen(olds), &err);
	assert_non_null(od);
	assert_int_equal(state_save(&old, BSKY_STATE_NAME, od, T0, &err), 0);
	cJSON_Delete(od);
	struct bsky_state *t = bsky_state_new();
	struct state_load_info a, b;
	assert_int_equal(bsky_state_load(t, &cur, &a, &b), 0);
	assert_int_equal(a.status, STATE_MIGRATED);
	assert_int_equal(t->seen_until_ms, T0);
	assert_int_equal(t->nrels, 0);
	/* round trip in the current version */
	bsky_state_rel_note(t, "did:plc:a", "a.test", BSKY_REASON_LIKE, "at://l/1", T0);
	bsky_state_rel_note(t, "did:plc:a", "a.test", BSKY_REASON_REPOST, "at://p/1", T0 + 1);
	bsky_state_rel_note(t, "did:plc:a", "a.test", BSKY_REASON_FOLLOW, "at://f/1", T0 + 2);
	bsky_state_rel_note(t, "did:plc:a", "a.test", BSKY_REASON_REPLY, "at://r/1", T0 + 3);
	bsky_state_rel_responded(t, "did:plc:a", "at://r/1");
	bsky_state_rel_note(t, "did:plc:b", "b.test", BSKY_REASON_QUOTE, "at://q/1", T0 + 4);
	assert_int_equal(bsky_state_save(t, &cur, T0, &err), 0);
	bsky_state_free(t);
	t = bsky_state_new();
	assert_int_equal(bsky_state_load(t, &cur, &a, &b), 0);
	assert_int_equal(a.status, STATE_LOADED);
	assert_int_equal(t->nrels, 2);
	struct bsky_rel *r = bsky_state_rel(t, "did:plc:a");
	assert_non_null(r);
	assert_string_equal(r->handle, "a.test");
	assert_int_equal(r->nrecent, 4);
	assert_int_equal(r->total, 4);
	assert_int_equal(r->first_seen_ms, T0);
	assert_int_equal(r->last_ms, T0 + 3);
	assert_int_equal(r->sentiment, BSKY_SENTIMENT_POSITIVE);
	assert_true(r->responded);
	assert_int_equal(r->recent[3].type, BSKY_REASON_REPLY);
	assert_true(r->recent[3].responded);
	assert_false(r->recent[0].responded);
	r = bsky_state_rel(t, "did:plc:b");
	assert_int_equal(r->recent[0].type, BSKY_REASON_QUOTE);
	assert_int_equal(r->sentiment, BSKY_SENTIMENT_UNKNOWN);
	/* the same note after the reload is still recognised */
	bsky_state_rel_note(t, "did:plc:b", NULL, BSKY_REASON_QUOTE, "at://q/1", T0 + 4);
	assert_int_equal(r->total, 1);
	bsky_state_free(t);
	two_versions_free(dir, &old, &cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_processed),
	        cmocka_unit_test(test_convs),
	        cmocka_unit_test(test_rituals_and_peers),
	        cmocka_unit_test(test_versions),
	        cmocka_unit_test(test_relationships),
	        cmocka_unit_test(test_priority_with_records),
	        cmocka_unit_test(test_rel_bound),
	        cmocka_unit_test(test_rel_prune),
	        cmocka_unit_test(test_rel_persisted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
