/*
 * test_bsky_thread_say — bsky_thread_say (a plan that came from Bluesky
 * announced in its thread) on the whole Bluesky stack in this process: the
 * real engine (modules/bluesky) reading its notifications into the
 * conversation store, the pipeline, outbound with the journal and the
 * Bluesky port, the AT Protocol client — against the XRPC fake over real
 * sockets.
 *
 *   - a thread known from stored mentions (bob's root, two of alice's
 *     replies asking the agent): exactly one reply, under alice's latest
 *     post, with the thread's root, both with the CIDs the AppView gives;
 *     named by the asking post, the root or the conversation key alike;
 *   - the same key again (at once, while the first is on its way, and
 *     after a restart of the whole stack on the same memory directory):
 *     still one post;
 *   - a text over 300 graphemes is cut with its link whole;
 *   - an unknown thread, a name that is no thread, an empty key: -1 and no
 *     request, no post.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atptest.h"
#include "common/json.h"
#include "common/utf8.h"
#include "modules/bluesky/bsky.h"
#include "modules/bluesky/port.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "modules/pipeline/pipeline.h"
#include "modules/scheduler/sched.h"
#include "modules/state/state.h"
#include "tests/fakes/bsky/bskyfake.h"
#include "testutil.h"

#define WAIT_ROUNDS 500 /* × 20 ms */

struct fx {
	uv_loop_t loop;
	struct bskyfake *fake;
	char *dir;
	char agent_did[BSKYFAKE_DID_MAX], alice_did[BSKYFAKE_DID_MAX], bob_did[BSKYFAKE_DID_MAX];
	/* the thread: bob's root, alice's two posts asking */
	char root[BSKYFAKE_URI_MAX], root_cid[BSKYFAKE_CID_MAX];
	char ask1[BSKYFAKE_URI_MAX], ask2[BSKYFAKE_URI_MAX], ask2_cid[BSKYFAKE_CID_MAX];
	/* the stack */
	struct http_client *http;
	struct atp_config cfg;
	struct atp_client *atp;
	struct state_store st;
	struct journal *j;
	struct outbound *ob;
	struct pipeline *p;
	struct sched *sched;
	struct bsky *b;
	bool closed, stopped;
};

static void on_closed(void *ud)
{
	((struct fx *)ud)->closed = true;
}

static void on_stopped(void *ud)
{
	((struct fx *)ud)->stopped = true;
}

static void stack_start(struct fx *fx)
{
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	atp_config_init(&fx->cfg, bskyfake_base_url(fx->fake), "agent.test", "pw", NULL);
	fx->cfg.spacing_ms = 0;
	fx->cfg.recheck_ms = 5;
	fx->atp = atp_client_new(fx->http, &fx->cfg);
	assert_int_equal(state_store_init(&fx->st, fx->dir, "test", &e), 0);
	fx->j = journal_open(fx->dir, &e);
	assert_non_null(fx->j);
	struct outbound_config oc = {.memory_dir = fx->dir, .agent_name = "ada", .journal = fx->j};
	fx->ob = outbound_new(&fx->loop, &oc, &e);
	assert_non_null(fx->ob);
	struct pipeline_config pc = {.loop = &fx->loop, .st = &fx->st, .outbound = fx->ob};
	gate_config_defaults(&pc.gate);
	pc.gate.self_id = fx->agent_did;
	pc.gate.self_name = "agent.test";
	fx->p = pipeline_new(&pc, &e);
	assert_non_null(fx->p);
	fx->sched = sched_new(&fx->loop, "ada");
	struct bsky_config bc = {.loop = &fx->loop,
	                         .atp = fx->atp,
	                         .pipeline = fx->p,
	                         .outbound = fx->ob,
	                         .journal = fx->j,
	                         .sched = fx->sched,
	                         .agent_name = "ada",
	                         .awareness_ms = 100,
	                         .feed_ms = 86400000,
	                         .expression_ms = 86400000,
	                         .peers_ms = 86400000,
	                         .ritual_ms = 86400000,
	                         .pace_ms = 1};
	fx->b = bsky_new(&bc, &e);
	assert_non_null(fx->b);
	struct outbound_port inner, port;
	atp_port_init(&inner, fx->atp, 1);
	bsky_port_init(fx->b, &port, &inner);
	assert_int_equal(outbound_add_port(fx->ob, &port, &e), 0);
	assert_int_equal(outbound_reconcile_pending(fx->ob) >= 0, 1);
	assert_int_equal(bsky_start(fx->b, &e), 0);
}

/* The daemon's order: no new work, outbound closed, the client (its
 * cancelled calls still find the engine), the engine, the pipeline. */
static void stack_stop(struct fx *fx)
{
	bsky_quiesce(fx->b);
	fx->stopped = false;
	sched_stop(fx->sched, on_stopped, fx);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->stopped), 0);
	fx->closed = false;
	outbound_close(fx->ob, on_closed, fx);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->closed), 0);
	atp_client_free(fx->atp);
	bsky_free(fx->b);
	pipeline_free(fx->p);
	journal_close(fx->j);
	sched_close(fx->sched);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	sched_free(fx->sched);
	atp_config_free(&fx->cfg);
	state_store_free(&fx->st);
}

/* Polls the loop until the store holds message id in conversation. */
static void wait_stored(struct fx *fx, const char *conversation, const char *id)
{
	for (int i = 0; i < WAIT_ROUNDS; i++) {
		if (conv_store_find(pipeline_store(fx->p), conversation, id))
			return;
		atptest_run_for(&fx->loop, 20);
	}
	fail_msg("%s never reached the conversation %s", id, conversation);
}

static size_t agent_posts(struct fx *fx)
{
	return bskyfake_record_count(fx->fake, "agent.test", "app.bsky.feed.post");
}

/* Polls until the journal has key done (or failed: the test then fails). */
static void wait_done(struct fx *fx, const char *key)
{
	char jkey[160];
	snprintf(jkey, sizeof jkey, "say:%s", key);
	for (int i = 0; i < WAIT_ROUNDS; i++) {
		enum journal_state s = journal_state_of(fx->j, jkey);
		if (s == JOURNAL_DONE)
			return;
		if (s == JOURNAL_FAILED)
			fail_msg("%s failed: %s", jkey, journal_error(fx->j, jkey));
		atptest_run_for(&fx->loop, 20);
	}
	fail_msg("%s never done", jkey);
}

/* The agent's newest post (caller frees). */
static cJSON *newest_post(struct fx *fx)
{
	cJSON *all = bskyfake_records(fx->fake, "agent.test", "app.bsky.feed.post");
	assert_non_null(all);
	cJSON *v = cJSON_DetachItemFromObject(cJSON_GetArrayItem(all, 0), "value");
	cJSON_Delete(all);
	assert_non_null(v);
	return v;
}

static const char *ref_at(const cJSON *rec, const char *which, const char *field)
{
	return json_string_or(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "reply"), which), field,
	                      "");
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	fx->dir = tu_tempdir();
	char err[256];
	fx->fake = bskyfake_new(err, sizeof err);
	assert_non_null(fx->fake);
	bskyfake_add_account(fx->fake, "agent.test", "pw", fx->agent_did);
	bskyfake_add_account(fx->fake, "alice.test", "pw2", fx->alice_did);
	bskyfake_add_account(fx->fake, "bob.test", "pw3", fx->bob_did);
	char cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(fx->fake, "bob.test", "Thinking about a sacred web page.",
	                               NULL, fx->root, fx->root_cid),
	                 0);
	assert_int_equal(bskyfake_post(fx->fake, "alice.test",
	                               "@agent.test could you make a workspace and plan it?",
	                               fx->root, fx->ask1, cid),
	                 0);
	assert_int_equal(bskyfake_post(fx->fake, "alice.test",
	                               "@agent.test and tell me here when it is done", fx->ask1,
	                               fx->ask2, fx->ask2_cid),
	                 0);
	stack_start(fx);
	/* the awareness check reads both mentions into the conversation */
	char conv[BSKYFAKE_URI_MAX + 16];
	snprintf(conv, sizeof conv, "bluesky:%s", fx->root);
	wait_stored(fx, conv, fx->ask1);
	wait_stored(fx, conv, fx->ask2);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	stack_stop(fx);
	uv_loop_close(&fx->loop);
	bskyfake_free(fx->fake);
	tu_rmrf(fx->dir);
	free(fx->dir);
	free(fx);
	return 0;
}

static const char *const DONE_TEXT = "Plan #3 of acme/www-lil-intdev-garden is complete: the "
                                     "last task's PR #9 (Add the footer) is merged. "
                                     "https://github.com/acme/www-lil-intdev-garden/issues/3";

static void test_one_reply_under_the_askers_latest_post(void **state)
{
	struct fx *fx = *state;
	assert_int_equal(agent_posts(fx), 0); /* no model: the mentions got no reply */
	size_t reads = bskyfake_count(fx->fake, "app.bsky.feed.getPosts", 200);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", fx->ask1, DONE_TEXT, "k-plan-3"), 0);
	/* the same key while the first is on its way: nothing more */
	assert_int_equal(bsky_thread_say(fx->b, "workspace", fx->ask1, DONE_TEXT, "k-plan-3"), 0);
	wait_done(fx, "k-plan-3");
	assert_int_equal(agent_posts(fx), 1);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.feed.getPosts", 200), reads + 1);
	cJSON *rec = newest_post(fx);
	assert_string_equal(json_string_or(rec, "text", ""), DONE_TEXT);
	assert_string_equal(ref_at(rec, "root", "uri"), fx->root);
	assert_string_equal(ref_at(rec, "root", "cid"), fx->root_cid);
	assert_string_equal(ref_at(rec, "parent", "uri"), fx->ask2);
	assert_string_equal(ref_at(rec, "parent", "cid"), fx->ask2_cid);
	cJSON_Delete(rec);

	/* the same key later, by any name of the thread: said already */
	char conv[BSKYFAKE_URI_MAX + 16];
	snprintf(conv, sizeof conv, "bluesky:%s", fx->root);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", fx->ask1, DONE_TEXT, "k-plan-3"), 0);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", conv, DONE_TEXT, "k-plan-3"), 0);
	atptest_run_for(&fx->loop, 200);
	assert_int_equal(agent_posts(fx), 1);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.feed.getPosts", 200), reads + 1);

	/* a restart of the whole stack on the same memory: still said once */
	stack_stop(fx);
	stack_start(fx);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", fx->ask1, DONE_TEXT, "k-plan-3"), 0);
	atptest_run_for(&fx->loop, 200);
	assert_int_equal(agent_posts(fx), 1);

	/* the root's name (bob opened the thread): the latest person in it,
	 * alice, under her latest post (another key) */
	assert_int_equal(bsky_thread_say(fx->b, "workspace", fx->root,
	                                 "Plan #4 is complete. https://github.com/acme/x/issues/4",
	                                 "k-plan-4"),
	                 0);
	wait_done(fx, "k-plan-4");
	assert_int_equal(agent_posts(fx), 2);
	rec = newest_post(fx);
	assert_string_equal(ref_at(rec, "parent", "uri"), fx->ask2);
	assert_string_equal(ref_at(rec, "root", "uri"), fx->root);
	cJSON_Delete(rec);
}

static void test_long_text_cut_with_the_link_whole(void **state)
{
	struct fx *fx = *state;
	const char *url = "https://github.com/acme/www-lil-intdev-garden/issues/12";
	char text[2048];
	int n = snprintf(text, sizeof text, "Plan #12 is complete: the last task's PR #40 (");
	for (int i = 0; i < 40; i++)
		n += snprintf(text + n, sizeof text - (size_t)n, "a very long title ");
	snprintf(text + n, sizeof text - (size_t)n, ") is merged. %s", url);
	assert_true(utf8_graphemes(text, strlen(text)) > 300);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", fx->ask2, text, "k-long"), 0);
	wait_done(fx, "k-long");
	cJSON *rec = newest_post(fx);
	const char *posted = json_string_or(rec, "text", "");
	assert_true(utf8_graphemes(posted, strlen(posted)) <= 300);
	size_t pl = strlen(posted), ul = strlen(url);
	assert_true(pl > ul);
	assert_string_equal(posted + pl - ul, url); /* the link whole, at the end */
	assert_non_null(strstr(posted, "Plan #12 is complete"));
	assert_non_null(strstr(posted, "\xe2\x80\xa6 https://"));
	cJSON_Delete(rec);
}

static void test_unknown_thread_says_nothing(void **state)
{
	struct fx *fx = *state;
	char unknown[BSKYFAKE_URI_MAX];
	snprintf(unknown, sizeof unknown, "at://%s/app.bsky.feed.post/3kunknown2222", fx->bob_did);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", unknown, DONE_TEXT, "k-u1"), -1);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", "space:room", DONE_TEXT, "k-u2"), -1);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", NULL, DONE_TEXT, "k-u3"), -1);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", fx->ask1, DONE_TEXT, ""), -1);
	assert_int_equal(bsky_thread_say(fx->b, "workspace", fx->ask1, "   ", "k-u4"), -1);
	atptest_run_for(&fx->loop, 200);
	assert_int_equal(agent_posts(fx), 0);
	assert_int_equal(bskyfake_count(fx->fake, "app.bsky.feed.getPosts", 0), 0);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.createRecord", 0), 0);
}

int main(void)
{
	log_init(LOG_LEVEL_WARN, 0, NULL);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_one_reply_under_the_askers_latest_post, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_long_text_cut_with_the_link_whole, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_unknown_thread_says_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
