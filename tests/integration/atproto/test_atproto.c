/*
 * test_atproto — adapters/atproto's real HTTP code (the build's transport on a uv loop)
 * against the stateful XRPC fake (tests/fakes/bsky) over real sockets:
 *   - the session is persisted (0600) and reused across a restart: one
 *     createSession in all; a wrong app password is fatal and never retried;
 *   - an expired access token (400 ExpiredToken) → one refresh, no login;
 *     a token near its exp is refreshed before the request; a revoked
 *     refresh token → one login, and a second loss within the login
 *     interval is refused rather than stormed;
 *   - 429 with ratelimit-reset → paused until then, then resumed; a spent
 *     budget (ratelimit-remaining 0) → no request until the reset, then
 *     resumed, never locked out;
 *   - notifications paged by cursor, updateSeen, threads, author feeds,
 *     profiles; posts with facets at byte offsets after emoji and CJK and
 *     reply refs from the thread; likes, follows, deletes;
 *   - the outbound port: reply refs in extra, gaChain / gaKey in the
 *     record, reconcile by key;
 *   - error sentences: a post the server refuses, a missing thread, an HTML
 *     502 on a read (retried) and on a write (not repeated, maybe_applied).
 *
 * The clock both sides read is the real one plus an offset the test adds
 * to: small backoffs pass in real time, a reset minutes away is jumped over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapters/atproto/atproto.h"
#include "atptest.h"
#include "common/fsx.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "modules/bluesky/port.h"
#include "tests/fakes/bsky/bskyfake.h"
#include "tests/unit/llm/testloop.h"

#define AGENT    "agent.test"
#define AGENT_PW "app-pass-1234"
#define ALICE    "alice.test"

static void advance(int64_t ms)
{
	atomic_fetch_add(&clock_offset, ms);
}

struct fx {
	uv_loop_t loop;
	struct bskyfake *fake;
	struct http_client *http;
	struct atp_client *atp;
	struct atp_config cfg;
	char dir[64];
	char session_path[128];
	char agent_did[BSKYFAKE_DID_MAX], alice_did[BSKYFAKE_DID_MAX];
};

static void make_client(struct fx *fx, const char *password)
{
	atp_client_free(fx->atp);
	atp_config_free(&fx->cfg);
	atp_config_init(&fx->cfg, bskyfake_base_url(fx->fake), AGENT, password, fx->session_path);
	fx->cfg.spacing_ms = 0;
	fx->cfg.backoff_base_ms = 1;
	fx->cfg.backoff_cap_ms = 20;
	fx->cfg.recheck_ms = 5;
	fx->cfg.low_budget = 0; /* small test budgets; pacing has its own unit test */
	fx->cfg.timeout_ms = 5000;
	fx->cfg.clock.now_ms = test_clock;
	fx->atp = atp_client_new(fx->http, &fx->cfg);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	snprintf(fx->dir, sizeof fx->dir, "/tmp/test_atproto.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->session_path, sizeof fx->session_path, "%s/bluesky_session.json", fx->dir);
	char err[256];
	fx->fake = bskyfake_new(err, sizeof err);
	assert_non_null(fx->fake);
	atomic_store(&clock_offset, 0);
	bskyfake_set_clock(fx->fake, test_clock, NULL);
	bskyfake_add_account(fx->fake, AGENT, AGENT_PW, fx->agent_did);
	bskyfake_add_account(fx->fake, ALICE, "alice-pw", fx->alice_did);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	assert_non_null(fx->http);
	make_client(fx, AGENT_PW);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	atp_client_free(fx->atp);
	atp_config_free(&fx->cfg);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	uv_loop_close(&fx->loop);
	bskyfake_free(fx->fake);
	unlink(fx->session_path);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static void wait_done(struct fx *fx, struct got *g)
{
	got_wait(&fx->loop, g);
}

static void login_ok(struct fx *fx)
{
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(atp_login(fx->atp, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	assert_string_equal(json_string_or(g.json, "did", ""), fx->agent_did);
	got_reset(&g);
}

static void list_notifs(struct fx *fx, const char *cursor, unsigned limit, struct got *g)
{
	struct ga_err err = {{0}};
	assert_true(atp_list_notifications(fx->atp, cursor, limit, on_done, g, &err) > 0);
	wait_done(fx, g);
}

/* --- session ------------------------------------------------------------------------------- */

static void test_session_persisted_and_reused(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 200), 1);
	struct stat st;
	assert_int_equal(stat(fx->session_path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	struct atp_session_info si;
	atp_session_get(fx->atp, &si);
	assert_true(si.active);
	assert_false(si.from_file);
	assert_true(si.access_exp_ms > test_clock(NULL));
	/* the tokens are secrets for the log */
	char *file = fsx_read_file(fx->session_path, 65536, NULL, NULL);
	cJSON *saved = cJSON_Parse(file);
	const char *acc = json_string_or(saved, "accessJwt", "");
	assert_true(strlen(acc) > 20);
	char *red = log_redact(acc);
	assert_null(strstr(red, acc));
	free(red);
	red = log_redact(AGENT_PW);
	assert_string_not_equal(red, AGENT_PW);
	free(red);
	cJSON_Delete(saved);
	free(file);

	/* a restart: a new client with the same file logs in without a
	 * createSession, and its calls work */
	make_client(fx, AGENT_PW);
	atp_session_get(fx->atp, &si);
	assert_true(si.from_file);
	assert_string_equal(si.did, fx->agent_did);
	login_ok(fx);
	struct got g = {0};
	list_notifs(fx, NULL, 10, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 0), 1);

	/* a file for another account is not used */
	atp_client_free(fx->atp);
	fx->atp = NULL;
	atp_config_free(&fx->cfg);
	atp_config_init(&fx->cfg, bskyfake_base_url(fx->fake), ALICE, "alice-pw", fx->session_path);
	fx->cfg.spacing_ms = 0;
	fx->cfg.clock.now_ms = test_clock;
	fx->atp = atp_client_new(fx->http, &fx->cfg);
	atp_session_get(fx->atp, &si);
	assert_false(si.active);
}

static void test_wrong_password_is_fatal_once(void **state)
{
	struct fx *fx = *state;
	make_client(fx, "wrong-password");
	struct got g = {0};
	list_notifs(fx, NULL, 10, &g);
	assert_int_equal(g.r.kind, ATP_ERR_AUTH);
	assert_true(atp_error_is_fatal(g.r.kind));
	assert_non_null(strstr(g.r.msg, ATP_PASSWORD_VAR));
	assert_non_null(strstr(g.r.msg, "Invalid identifier or password"));
	assert_null(strstr(g.r.msg, "wrong-password"));
	got_reset(&g);
	/* no second attempt: refused at once, nothing sent */
	struct ga_err err = {{0}};
	assert_int_equal(atp_list_notifications(fx->atp, NULL, 10, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "no further login"));
	struct atp_post_in in = {.text = "hi @alice.test", .text_len = 14, .chain = -1};
	assert_int_equal(atp_post_create(fx->atp, &in, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "no further login"));
	atptest_run_for(&fx->loop, 50);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 0), 1);
	/* reads that need no session still work */
	assert_true(atp_resolve_handle(fx->atp, ALICE, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	assert_string_equal(json_string_or(g.json, "did", ""), fx->alice_did);
	got_reset(&g);
}

static void test_expired_token_refreshes_without_login(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	char *before = fsx_read_file(fx->session_path, 65536, NULL, NULL);
	bskyfake_expire_tokens(fx->fake, AGENT);
	struct got g = {0};
	list_notifs(fx, NULL, 10, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.notification.listNotifications", 400),
	                 1);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.notification.listNotifications", 200),
	                 1);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.refreshSession", 200), 1);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 0), 1);
	/* the rotated pair was persisted at once */
	char *after = fsx_read_file(fx->session_path, 65536, NULL, NULL);
	assert_string_not_equal(before, after);
	free(before);
	free(after);
	struct atp_stats st;
	atp_client_stats(fx->atp, &st);
	assert_int_equal(st.create_sessions, 1);
	assert_int_equal(st.refreshes, 1);
}

static void test_token_refreshed_before_expiry(void **state)
{
	struct fx *fx = *state;
	bskyfake_set_token_ttl(fx->fake, 60 * 1000, (int64_t)30 * 24 * 3600 * 1000);
	login_ok(fx);
	/* 50 s later the token has 10 s left, less than a quarter of its life:
	 * refreshed before the request, which never sees a 400 */
	advance(50 * 1000);
	struct got g = {0};
	list_notifs(fx, NULL, 10, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.refreshSession", 200), 1);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.notification.listNotifications", 400),
	                 0);
	/* a fresh token is not refreshed again */
	list_notifs(fx, NULL, 10, &g);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.refreshSession", 0), 1);
}

static void test_idle_session_refreshed_by_timer(void **state)
{
	struct fx *fx = *state;
	/* a 2 s token: the timer refreshes it with a quarter of its life left
	 * (at least 1 s after it was obtained), with no request pending */
	bskyfake_set_token_ttl(fx->fake, 2000, (int64_t)30 * 24 * 3600 * 1000);
	login_ok(fx);
	for (int i = 0;
	     i < 50 && !bskyfake_count(fx->fake, "com.atproto.server.refreshSession", 200); i++)
		atptest_run_for(&fx->loop, 100);
	assert_true(bskyfake_count(fx->fake, "com.atproto.server.refreshSession", 200) >= 1);
	/* nothing was refused on the way, and a request now goes through with
	 * the refreshed session (no login, no ExpiredToken) */
	struct got g = {0};
	list_notifs(fx, NULL, 10, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 0), 1);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.refreshSession", 400), 0);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.notification.listNotifications", 400),
	                 0);
}

static void test_revoked_session_one_login_never_a_storm(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	advance(ATP_LOGIN_MIN_INTERVAL_MS + 1000);
	/* the refresh token is revoked: refresh refused, one new login */
	bskyfake_revoke_sessions(fx->fake, AGENT);
	struct got g = {0};
	list_notifs(fx, NULL, 10, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.refreshSession", 400), 1);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 200), 2);
	/* lost again at once: no login before the interval has passed */
	bskyfake_revoke_sessions(fx->fake, AGENT);
	struct got g1 = {0}, g2 = {0};
	struct ga_err err = {{0}};
	assert_true(atp_list_notifications(fx->atp, NULL, 10, on_done, &g1, &err) > 0);
	assert_true(atp_get_profile(fx->atp, ALICE, on_done, &g2, &err) > 0);
	wait_done(fx, &g1);
	wait_done(fx, &g2);
	assert_int_equal(g1.r.kind, ATP_ERR_AUTH);
	assert_non_null(strstr(g1.r.msg, "login storm"));
	assert_int_equal(g2.r.kind, ATP_ERR_AUTH);
	got_reset(&g1);
	got_reset(&g2);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 0), 2);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.refreshSession", 400), 2);
	/* after the interval, one login again */
	advance(ATP_LOGIN_MIN_INTERVAL_MS + 1000);
	list_notifs(fx, NULL, 10, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 200), 3);
}

/* --- rate limits ------------------------------------------------------------------------------ */

static void test_429_pauses_until_reset_then_resumes(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	bskyfake_force_429(fx->fake, 1, 120 * 1000);
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(atp_list_notifications(fx->atp, NULL, 10, on_done, &g, &err) > 0);
	atptest_run_for(&fx->loop, 150);
	assert_false(g.done); /* held: not retried before the reset */
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.notification.listNotifications", 429),
	                 1);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.notification.listNotifications", 0), 1);
	struct atp_budget b;
	assert_int_equal(atp_rate_snapshot(fx->atp, ATP_RL_READ, &b), 0);
	assert_int_equal(b.remaining, 0);
	/* a write is another budget: it is not held by the read limit */
	struct got gw = {0};
	assert_true(atp_follow(fx->atp, fx->alice_did, NULL, on_done, &gw, &err) > 0);
	wait_done(fx, &gw);
	assert_int_equal(gw.r.kind, ATP_OK);
	got_reset(&gw);
	assert_false(g.done);
	advance(121 * 1000);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.notification.listNotifications", 200),
	                 1);
	struct atp_stats st;
	atp_client_stats(fx->atp, &st);
	assert_int_equal(st.rate_limited, 1);
}

static void test_spent_budget_waits_for_reset_and_resumes(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	bskyfake_rate_limit(fx->fake, BSKYFAKE_READ, 3, 60 * 1000);
	struct got g[5] = {{0}};
	struct ga_err err = {{0}};
	for (int i = 0; i < 5; i++)
		assert_true(atp_get_profile(fx->atp, ALICE, on_done, &g[i], &err) > 0);
	wait_done(fx, &g[2]);
	atptest_run_for(&fx->loop, 100);
	assert_false(g[3].done); /* remaining 0: the client does not even ask */
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.actor.getProfile", 0), 3);
	advance(61 * 1000);
	wait_done(fx, &g[4]);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(g[i].r.kind, ATP_OK);
		got_reset(&g[i]);
	}
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.actor.getProfile", 429), 0);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.actor.getProfile", 200), 5);
}

static void test_login_429_waits_for_reset(void **state)
{
	struct fx *fx = *state;
	bskyfake_force_429(fx->fake, 1, 30 * 1000);
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(atp_login(fx->atp, on_done, &g, &err) > 0);
	atptest_run_for(&fx->loop, 100);
	assert_false(g.done);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 0), 1);
	advance(31 * 1000);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.server.createSession", 200), 1);
}

/* --- endpoints ----------------------------------------------------------------------------------
 */

static void test_notifications_cursor_and_seen(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	char uris[5][BSKYFAKE_URI_MAX];
	for (int i = 0; i < 5; i++) {
		char text[64];
		snprintf(text, sizeof text, "question %d for @%s", i, AGENT);
		assert_int_equal(bskyfake_post(fx->fake, ALICE, text, NULL, uris[i], NULL), 0);
	}
	/* pages of 2: 2 + 2 + 1, newest first, none twice, the last without a
	 * cursor */
	const char *cursor = NULL;
	char cur[256];
	int seen = 0, pages = 0;
	for (;;) {
		struct got g = {0};
		list_notifs(fx, cursor, 2, &g);
		assert_int_equal(g.r.kind, ATP_OK);
		const cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(g.json, "notifications"))
		{
			assert_string_equal(json_string_or(it, "uri", ""), uris[4 - seen]);
			assert_string_equal(json_string_or(it, "reason", ""), "mention");
			assert_false(json_bool_or(it, "isRead", true));
			const cJSON *a = cJSON_GetObjectItem(it, "author");
			assert_string_equal(json_string_or(a, "did", ""), fx->alice_did);
			seen++;
		}
		pages++;
		const char *c = json_string_or(g.json, "cursor", NULL);
		if (!c) {
			got_reset(&g);
			break;
		}
		snprintf(cur, sizeof cur, "%s", c);
		cursor = cur;
		got_reset(&g);
		assert_true(pages < 10);
	}
	assert_int_equal(seen, 5);
	assert_int_equal(pages, 3);
	int64_t t = test_clock(NULL);
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(atp_update_seen(fx->atp, t, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	assert_null(g.json); /* empty body */
	got_reset(&g);
	assert_int_equal(bskyfake_seen_at(fx->fake, AGENT), t);
	list_notifs(fx, NULL, 10, &g);
	assert_true(
	        json_bool_or(cJSON_GetArrayItem(cJSON_GetObjectItem(g.json, "notifications"), 0),
	                     "isRead", false));
	got_reset(&g);
}

static void test_post_reply_with_facets(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	char root[BSKYFAKE_URI_MAX], root_cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(fx->fake, ALICE, "what do you think, @agent.test?", NULL,
	                               root, root_cid),
	                 0);
	char mid[BSKYFAKE_URI_MAX], mid_cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(fx->fake, ALICE, "also this", root, mid, mid_cid), 0);
	/* reply refs of a reply: the root is the thread's, read from the thread */
	struct atp_strong_ref parent;
	snprintf(parent.uri, sizeof parent.uri, "%s", mid);
	snprintf(parent.cid, sizeof parent.cid, "%s", mid_cid);
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(atp_reply_resolve(fx->atp, &parent, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	struct atp_reply_ref ref;
	assert_int_equal(atp_reply_ref_from_json(g.json, &ref, &err), 0);
	assert_string_equal(ref.root.uri, root);
	assert_string_equal(ref.root.cid, root_cid);
	assert_string_equal(ref.parent.uri, mid);
	got_reset(&g);

	const char *text =
	        "日本語 👋🏽 @alice.test @nobody.test see https://example.com/x. #atproto";
	struct atp_post_in in = {.text = text,
	                         .text_len = strlen(text),
	                         .reply = &ref,
	                         .langs = (const char *[]){"en", "ja"},
	                         .n_langs = 2,
	                         .chain = 1,
	                         .idem_key = "idem-1"};
	assert_true(atp_post_create(fx->atp, &in, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	char uri[ATP_URI_MAX];
	snprintf(uri, sizeof uri, "%s", json_string_or(g.json, "uri", ""));
	got_reset(&g);
	cJSON *rec = bskyfake_record(fx->fake, uri);
	assert_non_null(rec);
	assert_string_equal(json_string_or(rec, "text", ""), text);
	const cJSON *r = cJSON_GetObjectItem(rec, "reply");
	assert_string_equal(json_string_or(cJSON_GetObjectItem(r, "root"), "uri", ""), root);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(r, "parent"), "uri", ""), mid);
	assert_int_equal(atp_record_chain(rec), 1);
	assert_string_equal(atp_record_key(rec), "idem-1");
	/* facets: the mention (resolved), the link, the tag; @nobody.test does
	 * not resolve and gets none; offsets are UTF-8 bytes */
	const cJSON *facets = cJSON_GetObjectItem(rec, "facets");
	assert_int_equal(cJSON_GetArraySize(facets), 3);
	const cJSON *m = cJSON_GetArrayItem(facets, 0);
	size_t at = (size_t)(strstr(text, "@alice.test") - text);
	assert_int_equal(at, 9 + 1 + 8 + 1);
	assert_int_equal(json_int_or(cJSON_GetObjectItem(m, "index"), "byteStart", -1),
	                 (int64_t)at);
	assert_int_equal(json_int_or(cJSON_GetObjectItem(m, "index"), "byteEnd", -1),
	                 (int64_t)(at + strlen("@alice.test")));
	assert_string_equal(
	        json_string_or(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "features"), 0), "did",
	                       ""),
	        fx->alice_did);
	const cJSON *l = cJSON_GetArrayItem(facets, 1);
	assert_string_equal(
	        json_string_or(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "features"), 0), "uri",
	                       ""),
	        "https://example.com/x");
	cJSON_Delete(rec);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.identity.resolveHandle", 200), 1);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.identity.resolveHandle", 400), 1);

	/* the thread, as the engagement code reads it */
	assert_true(atp_get_post_thread(fx->atp, uri, 0, 10, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	const cJSON *th = cJSON_GetObjectItem(g.json, "thread");
	assert_string_equal(json_string_or(th, "$type", ""), "app.bsky.feed.defs#threadViewPost");
	const cJSON *p1 = cJSON_GetObjectItem(th, "parent");
	const cJSON *p2 = cJSON_GetObjectItem(p1, "parent");
	assert_string_equal(json_string_or(cJSON_GetObjectItem(p1, "post"), "uri", ""), mid);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(p2, "post"), "uri", ""), root);
	got_reset(&g);
	/* alice sees a reply notification; the agent's feed has the reply */
	assert_true(atp_get_author_feed(fx->atp, AGENT, NULL, NULL, 10, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	const cJSON *feed = cJSON_GetObjectItem(g.json, "feed");
	assert_int_equal(cJSON_GetArraySize(feed), 1);
	const cJSON *item = cJSON_GetArrayItem(feed, 0);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(item, "post"), "uri", ""), uri);
	got_reset(&g);
	assert_true(atp_get_author_feed(fx->atp, AGENT, "posts_no_replies", NULL, 10, on_done, &g,
	                                &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g.json, "feed")), 0);
	got_reset(&g);

	/* like and follow, then delete them again */
	struct atp_strong_ref subj;
	snprintf(subj.uri, sizeof subj.uri, "%s", root);
	snprintf(subj.cid, sizeof subj.cid, "%s", root_cid);
	assert_true(atp_like(fx->atp, &subj, NULL, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	char like_uri[ATP_URI_MAX];
	snprintf(like_uri, sizeof like_uri, "%s", json_string_or(g.json, "uri", ""));
	got_reset(&g);
	assert_int_equal(bskyfake_record_count(fx->fake, AGENT, ATP_COLL_LIKE), 1);
	assert_true(atp_follow(fx->atp, fx->alice_did, NULL, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_true(atp_get_profile(fx->atp, ALICE, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(json_int_or(g.json, "followersCount", -1), 1);
	got_reset(&g);
	assert_true(atp_delete_uri(fx->atp, like_uri, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	got_reset(&g);
	assert_int_equal(bskyfake_record_count(fx->fake, AGENT, ATP_COLL_LIKE), 0);
	/* someone else's record cannot be deleted */
	assert_int_equal(atp_delete_uri(fx->atp, root, on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "own"));
}

/* --- the outbound port
 * ------------------------------------------------------------------------------ */

struct port_got {
	bool done;
	int ok;
	char artifact[ATP_URI_MAX];
	char error[GA_ERR_MSG_MAX];
	int exists;
};

static void on_port_done(void *ud, int ok, const char *artifact, const char *error)
{
	struct port_got *p = ud;
	assert_false(p->done);
	p->done = true;
	p->ok = ok;
	snprintf(p->artifact, sizeof p->artifact, "%s", artifact ? artifact : "");
	snprintf(p->error, sizeof p->error, "%s", error ? error : "");
}

static void on_reconciled(void *ud, int exists, const char *artifact)
{
	struct port_got *p = ud;
	p->done = true;
	p->exists = exists;
	snprintf(p->artifact, sizeof p->artifact, "%s", artifact ? artifact : "");
}

static void test_port_send_and_reconcile(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	char root[BSKYFAKE_URI_MAX], root_cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(fx->fake, ALICE, "hi @agent.test", NULL, root, root_cid), 0);
	struct outbound_port port;
	atp_port_init(&port, fx->atp, 0);
	assert_int_equal(port.platform, CONV_PLATFORM_BLUESKY);
	assert_false(port.marker_in_text);
	assert_int_equal(port.min_interval_ms, ATP_PORT_MIN_INTERVAL_MS);

	char target[128], extra_s[1024];
	snprintf(target, sizeof target, "bluesky:reply:%s", fx->alice_did);
	/* no root in the extra: resolved from the thread */
	snprintf(extra_s, sizeof extra_s,
	         "{\"reply\":{\"parent\":{\"uri\":\"%s\",\"cid\":\"%s\"}},\"langs\":[\"en\"]}",
	         root, root_cid);
	cJSON *extra = cJSON_Parse(extra_s);
	const char *text = "Hello Alice 👋 — thanks for asking!";
	struct outbound_send s = {.platform = CONV_PLATFORM_BLUESKY,
	                          .target = target,
	                          .text = text,
	                          .text_len = strlen(text),
	                          .chain = 2,
	                          .idem_key = "key-reply-1",
	                          .extra = extra};
	struct port_got p = {0};
	assert_int_equal(port.send(port.ud, &s, on_port_done, &p), 0);
	assert_true(testloop_run_until(&fx->loop, &p.done) == 0);
	assert_int_equal(p.ok, 1);
	assert_true(strncmp(p.artifact, "at://", 5) == 0);
	char reply_uri[ATP_URI_MAX];
	snprintf(reply_uri, sizeof reply_uri, "%s", p.artifact);
	cJSON *rec = bskyfake_record(fx->fake, reply_uri);
	assert_non_null(rec);
	assert_int_equal(atp_record_chain(rec), 2);
	assert_string_equal(atp_record_key(rec), "key-reply-1");
	const cJSON *reply = cJSON_GetObjectItem(rec, "reply");
	assert_string_equal(json_string_or(cJSON_GetObjectItem(reply, "root"), "uri", ""), root);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "langs"), 0),
	                                   NULL, "en"),
	                    "en");
	cJSON_Delete(rec);
	cJSON_Delete(extra);

	/* reconcile: found by its key; another key is not */
	memset(&p, 0, sizeof p);
	port.reconcile(port.ud, "key-reply-1", target, on_reconciled, &p);
	assert_true(testloop_run_until(&fx->loop, &p.done) == 0);
	assert_int_equal(p.exists, 1);
	assert_string_equal(p.artifact, reply_uri);
	memset(&p, 0, sizeof p);
	port.reconcile(port.ud, "key-never-sent", target, on_reconciled, &p);
	assert_true(testloop_run_until(&fx->loop, &p.done) == 0);
	assert_int_equal(p.exists, 0);
	memset(&p, 0, sizeof p);
	port.reconcile(port.ud, "k", "github:issue:o/r#1", on_reconciled, &p);
	assert_true(p.done);
	assert_int_equal(p.exists, -1);

	/* a reply permission for alice cannot answer somebody else */
	snprintf(target, sizeof target, "bluesky:reply:%s", fx->agent_did);
	snprintf(extra_s, sizeof extra_s,
	         "{\"reply\":{\"root\":{\"uri\":\"%s\",\"cid\":\"%s\"},\"parent\":{\"uri\":\"%s\","
	         "\"cid\":\"%s\"}}}",
	         root, root_cid, root, root_cid);
	extra = cJSON_Parse(extra_s);
	s.target = target;
	s.extra = extra;
	memset(&p, 0, sizeof p);
	assert_int_equal(port.send(port.ud, &s, on_port_done, &p), -1);
	/* no extra for a reply: refused */
	snprintf(target, sizeof target, "bluesky:reply:%s", fx->alice_did);
	s.extra = NULL;
	assert_int_equal(port.send(port.ud, &s, on_port_done, &p), -1);
	/* over 300 graphemes: refused before anything is sent */
	char *longtext = malloc(400);
	memset(longtext, 'a', 301);
	longtext[301] = '\0';
	s.extra = extra;
	s.text = longtext;
	s.text_len = 301;
	assert_int_equal(port.send(port.ud, &s, on_port_done, &p), -1);
	free(longtext);
	cJSON_Delete(extra);

	/* a top-level post and a like through the port */
	s.target = "bluesky:post";
	s.text = "A thought for today.";
	s.text_len = strlen(s.text);
	s.chain = -1;
	s.idem_key = "key-post-1";
	s.extra = NULL;
	memset(&p, 0, sizeof p);
	assert_int_equal(port.send(port.ud, &s, on_port_done, &p), 0);
	assert_true(testloop_run_until(&fx->loop, &p.done) == 0);
	assert_int_equal(p.ok, 1);
	rec = bskyfake_record(fx->fake, p.artifact);
	assert_null(cJSON_GetObjectItem(rec, "reply"));
	assert_null(cJSON_GetObjectItem(rec, ATP_FIELD_CHAIN));
	cJSON_Delete(rec);
	snprintf(target, sizeof target, "bluesky:like:%s", fx->alice_did);
	snprintf(extra_s, sizeof extra_s, "{\"subject\":{\"uri\":\"%s\",\"cid\":\"%s\"}}", root,
	         root_cid);
	extra = cJSON_Parse(extra_s);
	s.target = target;
	s.text = root;
	s.text_len = strlen(root);
	s.idem_key = "key-like-1";
	s.extra = extra;
	memset(&p, 0, sizeof p);
	assert_int_equal(port.send(port.ud, &s, on_port_done, &p), 0);
	assert_true(testloop_run_until(&fx->loop, &p.done) == 0);
	assert_int_equal(p.ok, 1);
	assert_non_null(strstr(p.artifact, "/app.bsky.feed.like/"));
	memset(&p, 0, sizeof p);
	port.reconcile(port.ud, "key-like-1", target, on_reconciled, &p);
	assert_true(testloop_run_until(&fx->loop, &p.done) == 0);
	assert_int_equal(p.exists, 1);
	cJSON_Delete(extra);
}

/* --- errors
 * ------------------------------------------------------------------------------------------ */

static void test_error_sentences(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	struct got g = {0};
	struct ga_err err = {{0}};
	/* the server refuses a record our builder would have refused too */
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "$type", ATP_COLL_POST);
	char big[400];
	memset(big, 'x', 301);
	big[301] = '\0';
	cJSON_AddStringToObject(rec, "text", big);
	cJSON_AddStringToObject(rec, "createdAt", "2026-11-23T10:00:00.000Z");
	assert_true(atp_create_record(fx->atp, ATP_COLL_POST, rec, on_done, &g, &err) > 0);
	cJSON_Delete(rec);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_ERR_INVALID);
	assert_int_equal(g.r.status, 400);
	assert_string_equal(g.r.error, "InvalidRequest");
	assert_string_equal(g.r.msg,
	                    "Bluesky refused to create a post (400 InvalidRequest: Invalid "
	                    "app.bsky.feed.post record: grapheme too big (maximum 300, got 301) "
	                    "at $.record.text)");
	got_reset(&g);
	/* a thread that does not exist */
	char gone[200];
	snprintf(gone, sizeof gone, "at://%s/app.bsky.feed.post/3kgone22222", fx->alice_did);
	assert_true(atp_get_post_thread(fx->atp, gone, 0, 0, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_ERR_NOT_FOUND);
	assert_non_null(strstr(g.r.msg, "read the thread of"));
	assert_non_null(strstr(g.r.msg, "Post not found"));
	got_reset(&g);
	/* an HTML 502 on a read: retried, then fine */
	bskyfake_fail_next(fx->fake, 1, 502, true);
	assert_true(atp_get_profile(fx->atp, ALICE, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	assert_int_equal(g.r.attempts, 2);
	got_reset(&g);
	/* a 502 on a create: not repeated, the caller reconciles */
	bskyfake_fail_next(fx->fake, 1, 502, false);
	assert_true(atp_follow(fx->atp, fx->alice_did, NULL, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_ERR_TRANSIENT);
	assert_true(g.r.maybe_applied);
	assert_int_equal(g.r.attempts, 1);
	assert_non_null(strstr(g.r.msg, "not repeated"));
	got_reset(&g);
	/* bad arguments are refused before anything is queued */
	assert_int_equal(atp_resolve_handle(fx->atp, "not a handle", on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "not a Bluesky handle"));
	assert_int_equal(atp_get_record(fx->atp, "https://example.com", on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "at://"));
	struct atp_req req = {.nsid = "not an nsid", .what = "x"};
	assert_int_equal(atp_call(fx->atp, &req, on_done, &g, &err), 0);
}

static void test_free_cancels_pending(void **state)
{
	struct fx *fx = *state;
	login_ok(fx);
	bskyfake_force_429(fx->fake, 1, 600 * 1000);
	struct got g1 = {0}, g2 = {0};
	struct ga_err err = {{0}};
	assert_true(atp_get_profile(fx->atp, ALICE, on_done, &g1, &err) > 0);
	const char *text = "hi @alice.test";
	struct atp_post_in in = {.text = text, .text_len = strlen(text), .chain = -1};
	assert_true(atp_post_create(fx->atp, &in, on_done, &g2, &err) > 0);
	atptest_run_for(&fx->loop, 50);
	assert_false(g1.done);
	atp_client_free(fx->atp);
	fx->atp = NULL;
	assert_true(g1.done);
	assert_int_equal(g1.r.kind, ATP_ERR_CANCELLED);
	assert_true(g2.done);
	assert_int_equal(g2.r.kind, ATP_ERR_CANCELLED);
	got_reset(&g1);
	got_reset(&g2);
}

int main(void)
{
	log_init(LOG_LEVEL_WARN, 0, NULL);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_session_persisted_and_reused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_wrong_password_is_fatal_once, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_expired_token_refreshes_without_login, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_token_refreshed_before_expiry, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_idle_session_refreshed_by_timer, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_revoked_session_one_login_never_a_storm, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_429_pauses_until_reset_then_resumes, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_spent_budget_waits_for_reset_and_resumes,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_login_429_waits_for_reset, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_notifications_cursor_and_seen, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_post_reply_with_facets, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_port_send_and_reconcile, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_error_sentences, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_free_cancels_pending, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
