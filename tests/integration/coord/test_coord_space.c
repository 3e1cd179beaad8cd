/*
 * The space coordination backend (modules/coord, space) against the real
 * `agent-space` binary: two agents, Ada and Bob, each a modules/space/link
 * with its own coord on one loop, and a raw WebSocket observer that checks
 * what the room was actually sent (not the code under test):
 *   - both claim one message at once: exactly one WON, the other HELD with
 *     the winner's name — the room's "Claim conflict" reaching the loser's
 *     coord through coord_space_claim_lost, as the space runtime wires it;
 *   - a later claim by the other: HELD at once from the room's broadcast;
 *   - release by a non-owner sends nothing and changes nothing; by the
 *     owner an action_result, after which the other wins;
 *   - renew by the owner re-claims and settles; by a non-owner HELD; a
 *     renewal says since when the claim is held (a fresh claim does not),
 *     which the room relays when it had lost the claim;
 *   - coord_release_result: the room hears the outcome — a failure as
 *     success:false with the error and no link, a success as success:true
 *     with the link (§12.4); an oversized error is cut at a character
 *     boundary; plain coord_release is a success without a link;
 *   - a claim the link already holds (made with the words that promised
 *     the work) is taken over: HELD by us, and its release is the room's
 *     action_result with the outcome;
 *   - our TTL: the claim is released with a failed action_result
 *     ("claim expired") and the other can win;
 *   - keys without ':' refused; counts kept in process;
 *   - not in the room → UNAVAILABLE; close while settling → "shutting down";
 *   - alone (no shared backend configured): claims in process until a room
 *     is joined, then the room's; out of it, UNAVAILABLE again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>

#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/space/coord_space.h"
#include "modules/space/link.h"
#include "support_loop.h"
#include "tests/integration/space-client/harness.h"
#include "tests/unit/coord/coord_test.h"

#define SETTLE_MS 300

struct agent {
	const char *name;
	struct space_link *link;
	struct coord *coord;
	int joins;
	bool stopped;
};

struct fx {
	uv_loop_t loop;
	struct th_room room;
	struct agent ada, bob;
	struct ws_client *obs;
};

static void on_connection(void *ud, bool joined, const char *why)
{
	(void)why;
	struct agent *a = ud;
	if (joined)
		a->joins++;
}

/* The link's own hook (the backend watches its claims by itself). */
static void on_claim_lost(void *ud, const char *action, const char *target, const char *holder)
{
	(void)ud;
	(void)action;
	(void)target;
	(void)holder;
}

static void start_agent_at(struct fx *f, struct agent *a, const char *name, const char *url)
{
	struct space_link_config c;
	space_link_config_init(&c, NULL);
	c.agent_name = name;
	c.version = "0.1.0";
	c.space_url = url;
	c.st = NULL;
	spc_tunables_default(&c.t);
	uint64_t fast[] = {100, 200};
	memcpy(c.t.backoff_ms, fast, sizeof fast);
	c.t.nbackoff = 2;
	c.t.connect_timeout_ms = 3000;
	struct space_link_handlers h = {.on_connection = on_connection,
	                                .on_claim_lost = on_claim_lost};
	struct ga_err err = {{0}};
	a->name = name;
	a->link = space_link_new(&f->loop, &c, &h, a, &err);
	if (!a->link)
		fail_msg("space_link_new: %s", err.msg);
	a->coord = coord_new_space(&f->loop, a->link, name);
	assert_non_null(a->coord);
	coord_space_set_settle_ms(a->coord, SETTLE_MS);
	space_link_start(a->link);
}

static void start_agent(struct fx *f, struct agent *a, const char *name)
{
	static char url[64];
	snprintf(url, sizeof url, "ws://127.0.0.1:%d", f->room.port);
	start_agent_at(f, a, name, url);
}

static bool both_joined(void *ctx, const void *arg)
{
	struct fx *f = ctx;
	(void)arg;
	return space_link_joined(f->ada.link) && space_link_joined(f->bob.link);
}

static void run_until_joined(struct fx *f)
{
	if (!support_run_until(&f->loop, both_joined, f, NULL, CT_WAIT_MS)) {
		th_fail_dump(NULL, &f->room);
		fail_msg("the agents did not join the room");
	}
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	log_init(getenv("COORD_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERROR, 0, NULL);
	uv_loop_init(&f->loop);
	th_room_start(&f->room, 0, NULL, false);
	f->obs = th_observe(&f->room, "Obs");
	start_agent(f, &f->ada, "Ada");
	start_agent(f, &f->bob, "Bob");
	run_until_joined(f);
	*state = f;
	return 0;
}

static void link_stopped(void *ud)
{
	((struct agent *)ud)->stopped = true;
}

static void stop_agent(struct fx *f, struct agent *a)
{
	if (a->coord)
		assert_true(ct_close(&f->loop, a->coord));
	a->coord = NULL;
	space_link_stop(a->link, link_stopped, a);
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	while (!a->stopped && ct_now_ms() < end)
		ct_run_until(&f->loop, NULL, 10);
	space_link_free(a->link);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	stop_agent(f, &f->ada);
	stop_agent(f, &f->bob);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	int rc = uv_loop_close(&f->loop);
	th_observer_free(f->obs);
	th_room_stop(&f->room, SIGTERM);
	th_cleanup_all();
	free(f);
	assert_int_equal(rc, 0);
	return 0;
}

static void claim(struct fx *f, struct agent *a, const char *key, int64_t ttl, struct ct_ans *r)
{
	memset(r, 0, sizeof *r);
	assert_int_equal(coord_claim(a->coord, key, ttl, ct_claim_cb, r), 0);
	assert_int_equal(r->calls, 0);
	assert_true(ct_wait(&f->loop, r));
	assert_int_equal(r->calls, 1);
}

/* The observer's next message of type from name with field key == val. */
struct want {
	const char *name, *key, *val;
};

static bool pred_want(const cJSON *m, const void *arg)
{
	const struct want *w = arg;
	if (w->name && !th_pred_name(m, w->name))
		return false;
	return !w->key || strcmp(json_string_or(m, w->key, ""), w->val) == 0;
}

static bool observed(struct fx *f, const char *type, struct want w, int timeout_ms)
{
	cJSON *m = th_expect(f->obs, type, pred_want, &w, timeout_ms);
	bool ok = m != NULL;
	cJSON_Delete(m);
	return ok;
}

static const char KEY[] = "respond:space:0123456789abcdef0123456789abcdef";
static const char TARGET[] = "space:0123456789abcdef0123456789abcdef";

static void test_one_winner(void **state)
{
	struct fx *f = *state;
	assert_string_equal(coord_name(f->ada.coord), "space");
	/* both in the same loop round: the room decides */
	struct ct_ans a = {0}, b = {0};
	assert_int_equal(coord_claim(f->ada.coord, KEY, 60000, ct_claim_cb, &a), 0);
	assert_int_equal(coord_claim(f->bob.coord, KEY, 60000, ct_claim_cb, &b), 0);
	assert_true(ct_wait(&f->loop, &a));
	assert_true(ct_wait(&f->loop, &b));
	assert_int_equal(a.calls, 1);
	assert_int_equal(b.calls, 1);
	assert_true((a.r == COORD_WON) != (b.r == COORD_WON));
	struct agent *win = a.r == COORD_WON ? &f->ada : &f->bob;
	struct agent *lose = a.r == COORD_WON ? &f->bob : &f->ada;
	struct ct_ans *l = a.r == COORD_WON ? &b : &a;
	assert_int_equal(l->r, COORD_HELD);
	assert_string_equal(l->holder, win->name);
	assert_non_null(strstr(l->why, "first"));
	/* what the room recorded: the winner's claim was broadcast */
	assert_true(observed(f, "claim", (struct want){win->name, "target", TARGET}, 5000));
	assert_true(space_link_holds(win->link, "respond", TARGET));
	assert_false(space_link_holds(lose->link, "respond", TARGET));

	/* the loser asks again: held, from the room's broadcast */
	struct ct_ans r;
	claim(f, lose, KEY, 60000, &r);
	assert_int_equal(r.r, COORD_HELD);
	assert_string_equal(r.holder, win->name);
	/* the winner asks again: already ours */
	claim(f, win, KEY, 60000, &r);
	assert_int_equal(r.r, COORD_HELD);
	assert_string_equal(r.holder, win->name);

	/* renew: the owner re-claims and settles; the other is told the holder */
	memset(&r, 0, sizeof r);
	assert_int_equal(coord_renew(win->coord, KEY, 60000, ct_claim_cb, &r), 0);
	assert_true(ct_wait(&f->loop, &r));
	assert_int_equal(r.r, COORD_WON);
	memset(&r, 0, sizeof r);
	assert_int_equal(coord_renew(lose->coord, KEY, 60000, ct_claim_cb, &r), 0);
	assert_true(ct_wait(&f->loop, &r));
	assert_int_equal(r.r, COORD_HELD);
	assert_string_equal(r.holder, win->name);

	/* release by the non-owner: nothing sent, nothing changed */
	assert_int_equal(coord_release(lose->coord, KEY), 0);
	ct_run_until(&f->loop, NULL, 200);
	assert_false(observed(f, "action_result", (struct want){lose->name, NULL, NULL}, 300));
	claim(f, lose, KEY, 60000, &r);
	assert_int_equal(r.r, COORD_HELD);
	assert_true(space_link_holds(win->link, "respond", TARGET));

	/* release by the owner: an action_result; then the other wins */
	assert_int_equal(coord_release(win->coord, KEY), 0);
	ct_run_until(&f->loop, NULL, 50);
	assert_true(observed(f, "action_result", (struct want){win->name, "target", TARGET}, 5000));
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 20);
		claim(f, lose, KEY, 60000, &r);
	} while (r.r != COORD_WON && ct_now_ms() < end);
	assert_int_equal(r.r, COORD_WON);

	char buf[200];
	coord_describe(lose->coord, buf, sizeof buf);
	assert_non_null(strstr(buf, "space (in the room; 1 claims of ours, settle 300 ms)"));
}

static void test_ttl_and_bounds(void **state)
{
	struct fx *f = *state;
	struct ct_ans r;
	claim(f, &f->ada, "respond:space:ttl", 1500, &r);
	assert_int_equal(r.r, COORD_WON);
	claim(f, &f->bob, "respond:space:ttl", 60000, &r);
	assert_int_equal(r.r, COORD_HELD);
	/* our TTL runs out: released with a failed action_result */
	assert_true(observed(f, "claim", (struct want){"Ada", "target", "space:ttl"}, 5000));
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	while (space_link_holds(f->ada.link, "respond", "space:ttl") && ct_now_ms() < end)
		ct_run_until(&f->loop, NULL, 20);
	assert_false(space_link_holds(f->ada.link, "respond", "space:ttl"));
	assert_true(
	        observed(f, "action_result", (struct want){"Ada", "error", "claim expired"}, 5000));
	end = ct_now_ms() + CT_WAIT_MS;
	do {
		ct_run_until(&f->loop, NULL, 20);
		claim(f, &f->bob, "respond:space:ttl", 60000, &r);
	} while (r.r != COORD_WON && ct_now_ms() < end);
	assert_int_equal(r.r, COORD_WON);

	/* keys the room cannot carry */
	assert_int_equal(coord_claim(f->ada.coord, "respond", 1000, ct_claim_cb, &r), -1);
	assert_int_equal(coord_claim(f->ada.coord, ":x", 1000, ct_claim_cb, &r), -1);
	assert_int_equal(coord_claim(f->ada.coord, "x:", 1000, ct_claim_cb, &r), -1);
	assert_int_equal(coord_renew(f->ada.coord, "x", 1000, ct_claim_cb, &r), -1);

	/* the link's bound: SPACE_LINK_MAX_CLAIMS at once */
	static struct ct_ans many[SPACE_LINK_MAX_CLAIMS + 1];
	char key[64];
	for (int i = 0; i <= SPACE_LINK_MAX_CLAIMS; i++) {
		snprintf(key, sizeof key, "respond:space:m%d", i);
		assert_int_equal(coord_claim(f->ada.coord, key, 60000, ct_claim_cb, &many[i]), 0);
	}
	assert_true(ct_wait(&f->loop, &many[SPACE_LINK_MAX_CLAIMS]));
	assert_int_equal(many[SPACE_LINK_MAX_CLAIMS].r, COORD_UNAVAILABLE);
	assert_non_null(strstr(many[SPACE_LINK_MAX_CLAIMS].why, "claims"));
	for (int i = 0; i < SPACE_LINK_MAX_CLAIMS; i++) {
		assert_true(ct_wait(&f->loop, &many[i]));
		assert_int_equal(many[i].r, COORD_WON);
	}

	/* counts: in process */
	struct ct_ans c = {0};
	for (int i = 1; i <= 3; i++) {
		memset(&c, 0, sizeof c);
		assert_int_equal(coord_count(f->ada.coord, "budget:conv", 60000, ct_count_cb, &c),
		                 0);
		assert_int_equal(c.calls, 0);
		assert_true(ct_wait(&f->loop, &c));
		assert_int_equal(c.count, i);
	}
}

/* The observer's next action_result from name on target; NULL if none. */
static bool pred_result(const cJSON *m, const void *arg)
{
	const struct want *w = arg;
	return th_pred_name(m, w->name) && strcmp(json_string_or(m, "target", ""), w->val) == 0;
}

static cJSON *result_of(struct fx *f, const char *name, const char *target)
{
	struct want w = {name, "target", target};
	return th_expect(f->obs, "action_result", pred_result, &w, 5000);
}

static void test_release_outcome(void **state)
{
	struct fx *f = *state;
	struct ct_ans r;
	/* a failure: success false, the error, no link */
	claim(f, &f->ada, "create_issue:commitment-1", 60000, &r);
	assert_int_equal(r.r, COORD_WON);
	assert_int_equal(coord_release_result(f->ada.coord, "create_issue:commitment-1", false,
	                                      NULL, "GitHub answered 404: Not Found"),
	                 0);
	cJSON *m = result_of(f, "Ada", "commitment-1");
	assert_non_null(m);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(m, "success")));
	assert_string_equal(json_string_or(m, "error", ""), "GitHub answered 404: Not Found");
	assert_null(cJSON_GetObjectItem(m, "link"));
	assert_string_equal(json_string_or(m, "action", ""), "create_issue");
	cJSON_Delete(m);
	assert_false(space_link_holds(f->ada.link, "create_issue", "commitment-1"));

	/* a success: success true with the link */
	claim(f, &f->ada, "create_issue:commitment-2", 60000, &r);
	assert_int_equal(r.r, COORD_WON);
	assert_int_equal(coord_release_result(f->ada.coord, "create_issue:commitment-2", true,
	                                      "https://github.com/acme/widgets/issues/7", NULL),
	                 0);
	m = result_of(f, "Ada", "commitment-2");
	assert_non_null(m);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(m, "success")));
	assert_string_equal(json_string_or(m, "link", ""),
	                    "https://github.com/acme/widgets/issues/7");
	assert_null(cJSON_GetObjectItem(m, "error"));
	cJSON_Delete(m);

	/* an oversized error is cut, never inside a character ("é" is 2 bytes:
	 * 1023 × 'a' then "é" would end mid-character at 1024) */
	claim(f, &f->bob, "comment_issue:commitment-3", 60000, &r);
	assert_int_equal(r.r, COORD_WON);
	char big[COORD_RESULT_TEXT_MAX + 64];
	memset(big, 'a', COORD_RESULT_TEXT_MAX - 1);
	strcpy(big + COORD_RESULT_TEXT_MAX - 1, "\xc3\xa9 and more");
	assert_int_equal(
	        coord_release_result(f->bob.coord, "comment_issue:commitment-3", false, NULL, big),
	        0);
	m = result_of(f, "Bob", "commitment-3");
	assert_non_null(m);
	assert_int_equal(strlen(json_string_or(m, "error", "")), COORD_RESULT_TEXT_MAX - 1);
	cJSON_Delete(m);

	/* plain release: a success without a link */
	claim(f, &f->bob, "respond:space:plain", 60000, &r);
	assert_int_equal(r.r, COORD_WON);
	assert_int_equal(coord_release(f->bob.coord, "respond:space:plain"), 0);
	m = result_of(f, "Bob", "space:plain");
	assert_non_null(m);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(m, "success")));
	assert_null(cJSON_GetObjectItem(m, "link"));
	cJSON_Delete(m);

	/* not ours: accepted, nothing to release; a bad key refused */
	assert_int_equal(
	        coord_release_result(f->ada.coord, "respond:space:nobody", false, NULL, "x"), 0);
	assert_int_equal(coord_release_result(f->ada.coord, "bad\tkey", true, NULL, NULL), -1);
}

/* A claim the link already holds (the room's port made it with the words
 * that promised the work) is ours: the coord takes it over, and its
 * release is the room's action_result with the outcome — not a claim left
 * to lapse. */
static void test_adopts_link_claim(void **state)
{
	struct fx *f = *state;
	struct ga_err err = {{0}};
	assert_int_equal(space_link_claim(f->ada.link, "create_issue", "Login times out", 0, &err),
	                 0);
	assert_true(observed(f, "claim", (struct want){"Ada", "target", "Login times out"}, 5000));
	struct ct_ans r;
	claim(f, &f->ada, "create_issue:Login times out", 60000, &r);
	assert_int_equal(r.r, COORD_HELD);
	/* Bob cannot have it meanwhile */
	claim(f, &f->bob, "create_issue:Login times out", 60000, &r);
	assert_int_equal(r.r, COORD_HELD);
	assert_string_equal(r.holder, "Ada");
	assert_int_equal(coord_release_result(f->ada.coord, "create_issue:Login times out", true,
	                                      "https://github.com/acme/widgets/issues/9", NULL),
	                 0);
	cJSON *m = result_of(f, "Ada", "Login times out");
	assert_non_null(m);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(m, "success")));
	assert_string_equal(json_string_or(m, "link", ""),
	                    "https://github.com/acme/widgets/issues/9");
	cJSON_Delete(m);
	assert_false(space_link_holds(f->ada.link, "create_issue", "Login times out"));
}

/* A renewal tells the room since when the claim is held ("since"); a
 * fresh claim does not. When the room lost the claim meanwhile (any
 * member's action_result releases it, as a leave releases the leaver's),
 * the renewal is a new claim there and the room relays that time: first
 * from the link's memory, then — the link told to forget the claim — from
 * the coord's. */
static void test_renewal_says_since(void **state)
{
	struct fx *f = *state;
	struct ct_ans r;
	claim(f, &f->ada, "create_issue:since-1", 60000, &r);
	assert_int_equal(r.r, COORD_WON);
	struct want w = {"Ada", "target", "since-1"};
	cJSON *m = th_expect(f->obs, "claim", pred_want, &w, 5000);
	assert_non_null(m);
	assert_null(cJSON_GetObjectItem(m, "since"));
	int64_t first = 0;
	assert_int_equal(time_parse_iso(json_string_or(m, "timestamp", ""), &first), 0);
	cJSON_Delete(m);
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			space_link_forget(f->ada.link, "create_issue", "since-1");
		th_send(f->obs, "{\"type\":\"action_result\",\"action\":\"create_issue\","
		                "\"target\":\"since-1\",\"success\":false}");
		assert_true(observed(f, "action_result", (struct want){"Obs", "target", "since-1"},
		                     5000));
		memset(&r, 0, sizeof r);
		assert_int_equal(
		        coord_renew(f->ada.coord, "create_issue:since-1", 60000, ct_claim_cb, &r),
		        0);
		assert_true(ct_wait(&f->loop, &r));
		assert_int_equal(r.r, COORD_WON);
		m = th_expect(f->obs, "claim", pred_want, &w, 5000);
		assert_non_null(m);
		int64_t since = 0, at = 0;
		if (time_parse_iso(json_string_or(m, "since", ""), &since) < 0)
			fail_msg("round %d: the renewal said no since: %s", round,
			         cJSON_PrintUnformatted(m));
		assert_int_equal(time_parse_iso(json_string_or(m, "timestamp", ""), &at), 0);
		/* the first claim's time: sent just before the room stamped it */
		if (since > first || first - since > 5000)
			fail_msg("round %d: since %s, first claimed at %lld", round,
			         json_string_or(m, "since", ""), (long long)first);
		assert_true(at > since);
		cJSON_Delete(m);
	}
	assert_true(space_link_holds(f->ada.link, "create_issue", "since-1"));
}

static void test_out_of_room_and_close(void **state)
{
	struct fx *f = *state;
	/* close while settling: "shutting down", and the claim is withdrawn */
	struct ct_ans s = {0};
	assert_int_equal(coord_claim(f->bob.coord, "respond:space:c", 60000, ct_claim_cb, &s), 0);
	ct_run_until(&f->loop, NULL, 50);
	assert_int_equal(s.calls, 0);
	int done = 0;
	coord_close(f->bob.coord, ct_done_cb, &done);
	f->bob.coord = NULL;
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.r, COORD_UNAVAILABLE);
	assert_string_equal(s.why, "shutting down");
	assert_true(ct_run_until(&f->loop, &done, CT_WAIT_MS));
	assert_false(space_link_holds(f->bob.link, "respond", "space:c"));
	assert_true(
	        observed(f, "action_result", (struct want){"Bob", "error", "shutting down"}, 5000));

	/* the room goes away: fail closed */
	th_room_stop(&f->room, SIGKILL);
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	while (space_link_joined(f->ada.link) && ct_now_ms() < end)
		ct_run_until(&f->loop, NULL, 20);
	struct ct_ans r;
	claim(f, &f->ada, "respond:space:gone", 60000, &r);
	assert_int_equal(r.r, COORD_UNAVAILABLE);
	assert_non_null(strstr(r.why, "not in the agent-space room"));
	char buf[200];
	coord_describe(f->ada.coord, buf, sizeof buf);
	assert_non_null(strstr(buf, "not in the room"));
	th_room_restart(&f->room);
}

/* No shared backend configured (coord_space_set_alone): claims in process
 * while no room was ever joined; once one was, the room decides, and out of
 * it claims fail closed. */
static void test_alone_until_joined(void **state)
{
	struct fx *f = *state;
	struct agent cy = {0};
	start_agent_at(f, &cy, "Cy", "ws://127.0.0.1:1"); /* no room there */
	coord_space_set_alone(cy.coord, true);
	struct ct_ans r;
	claim(f, &cy, "respond:bluesky:at://did:plc:a/app.bsky.feed.post/1", 60000, &r);
	assert_int_equal(r.r, COORD_WON);
	assert_non_null(strstr(r.why, "local: no shared coordination backend"));
	claim(f, &cy, "respond:bluesky:at://did:plc:a/app.bsky.feed.post/1", 60000, &r);
	assert_int_equal(r.r, COORD_HELD);
	assert_int_equal(
	        coord_release(cy.coord, "respond:bluesky:at://did:plc:a/app.bsky.feed.post/1"), 0);
	claim(f, &cy, "respond:bluesky:at://did:plc:a/app.bsky.feed.post/1", 60000, &r);
	assert_int_equal(r.r, COORD_WON);
	char buf[300];
	coord_describe(cy.coord, buf, sizeof buf);
	assert_non_null(strstr(buf, "local (no shared backend"));
	stop_agent(f, &cy);
	/* an agent in a room: the room's claims, whatever the setting */
	coord_space_set_alone(f->ada.coord, true);
	claim(f, &f->ada, KEY, 60000, &r);
	assert_int_equal(r.r, COORD_WON);
	assert_non_null(strstr(r.why, "space: claimed"));
	assert_true(observed(f, "claim", (struct want){"Ada", "target", TARGET}, 5000));
	/* out of the room it joined: fail closed, not in process */
	th_room_stop(&f->room, SIGKILL);
	int64_t end = ct_now_ms() + CT_WAIT_MS;
	while (space_link_joined(f->ada.link) && ct_now_ms() < end)
		ct_run_until(&f->loop, NULL, 20);
	claim(f, &f->ada, "respond:space:gone", 60000, &r);
	assert_int_equal(r.r, COORD_UNAVAILABLE);
	coord_describe(f->ada.coord, buf, sizeof buf);
	assert_non_null(strstr(buf, "not in the room"));
	th_room_restart(&f->room);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_one_winner, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_ttl_and_bounds, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_release_outcome, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_adopts_link_claim, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_renewal_says_since, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_out_of_room_and_close, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_alone_until_joined, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	th_cleanup_all();
	return rc;
}
