/*
 * test_atproto_outbound — the Bluesky port behind the real outbound stage
 * (modules/outbound + modules/journal) against the XRPC fake:
 *   - a reply submitted to bluesky:reply:<did> with its refs in extra is
 *     permission-checked, journalled (intent → done with the at:// URI) and
 *     posted with gaChain and gaKey in the record;
 *   - the same key again is dropped by the journal: no second post;
 *   - a crash between createRecord and "done" (an intent whose post exists,
 *     carrying its gaKey) is reconciled at start to done with the post's
 *     URI; an intent that never became a post is reconciled to failed;
 *     nothing is posted by the reconciliation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/atproto/port.h"
#include "atptest.h"
#include "common/json.h"
#include "common/log.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "tests/fakes/bsky/bskyfake.h"
#include "testutil.h"

struct fx {
	uv_loop_t loop;
	struct bskyfake *fake;
	struct http_client *http;
	struct atp_client *atp;
	struct atp_config cfg;
	struct journal *j;
	struct outbound *ob;
	char *dir;
	char agent_did[BSKYFAKE_DID_MAX], alice_did[BSKYFAKE_DID_MAX];
	bool final_done, closed;
	struct decision final;
	char artifact[ATP_URI_MAX];
	int reconciled;
};

static void on_final(void *ud, const struct decision *d, const char *artifact)
{
	struct fx *fx = ud;
	fx->final_done = true;
	fx->final = *d;
	snprintf(fx->artifact, sizeof fx->artifact, "%s", artifact ? artifact : "");
}

static void on_closed(void *ud)
{
	((struct fx *)ud)->closed = true;
}

static void on_slice(uv_timer_t *t)
{
	*(bool *)t->data = true;
}

/* Runs the loop for about ms (the reconciliation has no callback of its
 * own: the test polls the journal between slices). */
static void run_slice(uv_loop_t *loop, unsigned ms)
{
	bool done = false;
	uv_timer_t t;
	uv_timer_init(loop, &t);
	t.data = &done;
	uv_timer_start(&t, on_slice, ms, 0);
	while (!done)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

static void start_outbound(struct fx *fx)
{
	struct ga_err e = {{0}};
	fx->j = journal_open(fx->dir, &e);
	assert_non_null(fx->j);
	struct outbound_config cfg = {.memory_dir = fx->dir, .agent_name = "ada", .journal = fx->j};
	fx->ob = outbound_new(&fx->loop, &cfg, &e);
	assert_non_null(fx->ob);
	struct outbound_port port;
	atp_port_init(&port, fx->atp, 1);
	assert_int_equal(outbound_add_port(fx->ob, &port, &e), 0);
}

static void stop_outbound(struct fx *fx)
{
	fx->closed = false;
	outbound_close(fx->ob, on_closed, fx);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->closed), 0);
	fx->ob = NULL;
	journal_close(fx->j);
	fx->j = NULL;
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
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	atp_config_init(&fx->cfg, bskyfake_base_url(fx->fake), "agent.test", "pw", NULL);
	fx->cfg.spacing_ms = 0;
	fx->cfg.recheck_ms = 5;
	fx->atp = atp_client_new(fx->http, &fx->cfg);
	start_outbound(fx);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	if (fx->ob)
		stop_outbound(fx);
	atp_client_free(fx->atp);
	atp_config_free(&fx->cfg);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	uv_loop_close(&fx->loop);
	bskyfake_free(fx->fake);
	tu_rmrf(fx->dir);
	free(fx->dir);
	free(fx);
	return 0;
}

static void submit_reply(struct fx *fx, const char *root, const char *cid, const char *key,
                         const char *text)
{
	char target[128], extra_s[1024];
	snprintf(target, sizeof target, "bluesky:reply:%s", fx->alice_did);
	snprintf(extra_s, sizeof extra_s,
	         "{\"reply\":{\"root\":{\"uri\":\"%s\",\"cid\":\"%s\"},\"parent\":{\"uri\":\"%s\","
	         "\"cid\":\"%s\"}}}",
	         root, cid, root, cid);
	cJSON *extra = cJSON_Parse(extra_s);
	struct outbound_msg m = {.platform = CONV_PLATFORM_BLUESKY,
	                         .target = target,
	                         .source = "bluesky",
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = 1,
	                         .idem_key = key,
	                         .extra = extra};
	fx->final_done = false;
	outbound_submit(fx->ob, &m, on_final, fx);
	cJSON_Delete(extra);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->final_done), 0);
}

static void test_reply_through_outbound_once(void **state)
{
	struct fx *fx = *state;
	char root[BSKYFAKE_URI_MAX], cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(fx->fake, "alice.test", "hi @agent.test", NULL, root, cid),
	                 0);
	submit_reply(fx, root, cid, "reply-key-1", "Hello Alice!");
	assert_int_equal(fx->final.verdict, VERDICT_SENT);
	assert_true(strncmp(fx->artifact, "at://", 5) == 0);
	assert_int_equal(journal_state_of(fx->j, "reply-key-1"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(fx->j, "reply-key-1"), fx->artifact);
	cJSON *rec = bskyfake_record(fx->fake, fx->artifact);
	assert_non_null(rec);
	assert_string_equal(atp_record_key(rec), "reply-key-1");
	assert_int_equal(atp_record_chain(rec), 1);
	assert_string_equal(
	        json_string_or(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "reply"), "root"),
	                       "uri", ""),
	        root);
	cJSON_Delete(rec);
	/* the same key again: the journal drops it, nothing is posted */
	submit_reply(fx, root, cid, "reply-key-1", "Hello Alice, again!");
	assert_int_equal(fx->final.verdict, VERDICT_DROP);
	assert_string_equal(fx->final.rule, "journal");
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_POST), 1);
}

static void test_crash_between_post_and_done_reconciled(void **state)
{
	struct fx *fx = *state;
	char root[BSKYFAKE_URI_MAX], cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(fx->fake, "alice.test", "hi @agent.test", NULL, root, cid),
	                 0);
	stop_outbound(fx);
	/* the crash: intents written, one post made (with its key), no done */
	struct ga_err e = {{0}};
	struct journal *j = journal_open(fx->dir, &e);
	char target[128];
	snprintf(target, sizeof target, "bluesky:reply:%s", fx->alice_did);
	assert_int_equal(journal_intent(j, "made-key", "bluesky", target, NULL, 1000, &e), 0);
	assert_int_equal(journal_intent(j, "lost-key", "bluesky", target, NULL, 1000, &e), 0);
	journal_close(j);
	struct atp_reply_ref ref;
	snprintf(ref.root.uri, sizeof ref.root.uri, "%s", root);
	snprintf(ref.root.cid, sizeof ref.root.cid, "%s", cid);
	ref.parent = ref.root;
	struct atp_post_in in = {.text = "made before the crash",
	                         .text_len = strlen("made before the crash"),
	                         .reply = &ref,
	                         .chain = 1,
	                         .idem_key = "made-key"};
	struct got g = {0};
	assert_true(atp_post_create(fx->atp, &in, on_done, &g, &e) > 0);
	got_wait(&fx->loop, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	char made_uri[ATP_URI_MAX];
	snprintf(made_uri, sizeof made_uri, "%s", json_string_or(g.json, "uri", ""));
	got_reset(&g);

	/* the restart */
	start_outbound(fx);
	assert_int_equal(outbound_reconcile_pending(fx->ob), 2);
	for (int i = 0; i < 500 && (journal_state_of(fx->j, "made-key") == JOURNAL_INTENT ||
	                            journal_state_of(fx->j, "lost-key") == JOURNAL_INTENT);
	     i++)
		run_slice(&fx->loop, 20);
	assert_int_equal(journal_state_of(fx->j, "made-key"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(fx->j, "made-key"), made_uri);
	assert_int_equal(journal_state_of(fx->j, "lost-key"), JOURNAL_FAILED);
	/* nothing was posted by the reconciliation */
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_POST), 1);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.createRecord", 0), 1);
}

int main(void)
{
	log_init(LOG_LEVEL_WARN, 0, NULL);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_reply_through_outbound_once, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_crash_between_post_and_done_reconciled, setup,
	                                        teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
