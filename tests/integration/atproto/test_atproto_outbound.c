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
 *     nothing is posted by the reconciliation;
 *   - a follow (bluesky:follow:<did>, text the DID) makes one
 *     app.bsky.graph.follow record with its gaKey, once; a text that is not
 *     the target's DID is refused; send permissions in allowlist mode
 *     without a follow pattern stop it (rule send_permission, audited);
 *   - a delete (bluesky:delete, text the at:// URI) removes our own record
 *     and refuses one of another repository before any request;
 *   - after a crash: a follow intent whose follow exists (with or without
 *     our key) → done, one that never became a follow → failed; a delete
 *     intent whose record is gone → done, one whose record is still there →
 *     failed; nothing is created or deleted by the reconciliation.
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
#include "common/fsx.h"
#include "common/json.h"
#include "common/log.h"
#include "modules/bluesky/port.h"
#include "modules/journal/journal.h"
#include "modules/outbound/audit.h"
#include "modules/outbound/outbound.h"
#include "modules/outbound/perms.h"
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
		atptest_run_for(&fx->loop, 20);
	assert_int_equal(journal_state_of(fx->j, "made-key"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(fx->j, "made-key"), made_uri);
	assert_int_equal(journal_state_of(fx->j, "lost-key"), JOURNAL_FAILED);
	/* nothing was posted by the reconciliation */
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_POST), 1);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.createRecord", 0), 1);
}

/* Submits text to target with key, and waits for the final decision. */
static void submit(struct fx *fx, const char *target, const char *text, const char *key)
{
	struct outbound_msg m = {.platform = CONV_PLATFORM_BLUESKY,
	                         .target = target,
	                         .source = "bluesky",
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = -1,
	                         .idem_key = key};
	fx->final_done = false;
	outbound_submit(fx->ob, &m, on_final, fx);
	assert_int_equal(testloop_run_until(&fx->loop, &fx->final_done), 0);
}

static void test_follow_through_outbound_once(void **state)
{
	struct fx *fx = *state;
	char target[128], key[128];
	snprintf(target, sizeof target, "bluesky:follow:%s", fx->alice_did);
	snprintf(key, sizeof key, "follow:%s", fx->alice_did);
	submit(fx, target, fx->alice_did, key);
	assert_int_equal(fx->final.verdict, VERDICT_SENT);
	char want[ATP_URI_MAX];
	snprintf(want, sizeof want, "at://%s/%s/", fx->agent_did, ATP_COLL_FOLLOW);
	assert_true(strncmp(fx->artifact, want, strlen(want)) == 0);
	assert_int_equal(journal_state_of(fx->j, key), JOURNAL_DONE);
	cJSON *rec = bskyfake_record(fx->fake, fx->artifact);
	assert_non_null(rec);
	assert_string_equal(json_string_or(rec, "subject", ""), fx->alice_did);
	assert_string_equal(json_string_or(rec, "$type", ""), ATP_COLL_FOLLOW);
	assert_string_equal(atp_record_key(rec), key);
	assert_non_null(cJSON_GetObjectItem(rec, "createdAt"));
	cJSON_Delete(rec);
	/* the same key again: dropped by the journal, no second follow */
	submit(fx, target, fx->alice_did, key);
	assert_int_equal(fx->final.verdict, VERDICT_DROP);
	assert_string_equal(fx->final.rule, "journal");
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_FOLLOW), 1);
	/* a text that is not the target's DID: refused by the port */
	submit(fx, target, fx->agent_did, "follow:mismatch");
	assert_int_equal(fx->final.verdict, VERDICT_FAIL);
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_FOLLOW), 1);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.createRecord", 0), 1);
}

static void test_follow_denied_by_permissions(void **state)
{
	struct fx *fx = *state;
	struct perms *p = perms_new();
	struct ga_err e = {{0}};
	perms_set_mode(p, PERMS_ALLOWLIST);
	assert_int_equal(perms_add(p, PERMS_LIST_ALLOW, "bluesky:reply:*", &e), 1);
	char *path = fsx_join(fx->dir, PERMS_FILE_NAME);
	assert_int_equal(perms_save(p, path, &e), 0);
	perms_free(p);
	free(path);
	char target[128];
	snprintf(target, sizeof target, "bluesky:follow:%s", fx->alice_did);
	submit(fx, target, fx->alice_did, "follow:denied");
	assert_int_equal(fx->final.verdict, VERDICT_DROP);
	assert_string_equal(fx->final.rule, "send_permission");
	assert_non_null(strstr(fx->final.reason, "matches none"));
	submit(fx, "bluesky:delete", "at://did:plc:x/app.bsky.feed.post/3k", "prune:denied");
	assert_int_equal(fx->final.verdict, VERDICT_DROP);
	assert_string_equal(fx->final.rule, "send_permission");
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_FOLLOW), 0);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.createRecord", 0), 0);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.deleteRecord", 0), 0);
	/* both attempts are in the audit, denied */
	cJSON *tail = audit_tail(fx->dir, 10);
	int denied = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, tail)
	{
		const char *t = json_string_or(it, "target", "");
		if ((!strcmp(t, target) || !strcmp(t, "bluesky:delete")) &&
		    !strcmp(json_string_or(it, "verdict", ""), "deny"))
			denied++;
	}
	cJSON_Delete(tail);
	assert_int_equal(denied, 2);
}

static void test_delete_own_record_only(void **state)
{
	struct fx *fx = *state;
	char mine[BSKYFAKE_URI_MAX], theirs[BSKYFAKE_URI_MAX], key[BSKYFAKE_URI_MAX + 8];
	assert_int_equal(bskyfake_post(fx->fake, "agent.test", "thanks!", NULL, mine, NULL), 0);
	assert_int_equal(bskyfake_post(fx->fake, "alice.test", "hello", NULL, theirs, NULL), 0);
	snprintf(key, sizeof key, "prune:%s", mine);
	submit(fx, "bluesky:delete", mine, key);
	assert_int_equal(fx->final.verdict, VERDICT_SENT);
	assert_string_equal(fx->artifact, mine);
	assert_int_equal(journal_state_of(fx->j, key), JOURNAL_DONE);
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_POST), 0);
	/* another repository's record: refused before any request */
	size_t before = bskyfake_count(fx->fake, "com.atproto.repo.deleteRecord", 0);
	snprintf(key, sizeof key, "prune:%s", theirs);
	submit(fx, "bluesky:delete", theirs, key);
	assert_int_equal(fx->final.verdict, VERDICT_FAIL);
	assert_int_equal(journal_state_of(fx->j, key), JOURNAL_FAILED);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.deleteRecord", 0), before);
	assert_int_equal(bskyfake_record_count(fx->fake, "alice.test", ATP_COLL_POST), 1);
	/* not a URI at all */
	submit(fx, "bluesky:delete", "not-a-uri", "prune:junk");
	assert_int_equal(fx->final.verdict, VERDICT_FAIL);
}

static void test_follow_and_delete_reconciled(void **state)
{
	struct fx *fx = *state;
	char bob_did[BSKYFAKE_DID_MAX], carol_did[BSKYFAKE_DID_MAX];
	bskyfake_add_account(fx->fake, "bob.test", "pw3", bob_did);
	bskyfake_add_account(fx->fake, "carol.test", "pw4", carol_did);
	char gone[BSKYFAKE_URI_MAX], kept[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(fx->fake, "agent.test", "dup", NULL, gone, NULL), 0);
	assert_int_equal(bskyfake_post(fx->fake, "agent.test", "dup", NULL, kept, NULL), 0);
	char legacy[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(fx->fake, "agent.test", "old", NULL, legacy, NULL), 0);
	stop_outbound(fx);
	/* before the crash: a follow of alice made with its key, a follow of
	 * bob made without one (an older version), carol never followed; one
	 * record deleted, the other not */
	struct ga_err e = {{0}};
	struct journal *j = journal_open(fx->dir, &e);
	char t_alice[128], t_bob[128], t_carol[128], k_alice[128], k_bob[128], k_carol[128];
	char k_gone[BSKYFAKE_URI_MAX + 8], k_kept[BSKYFAKE_URI_MAX + 8];
	char k_legacy[BSKYFAKE_URI_MAX + 8];
	snprintf(k_legacy, sizeof k_legacy, "prune:%s", legacy);
	/* an older version's hand-written prune intent (target bluesky:prune) */
	assert_int_equal(
	        journal_intent(j, k_legacy, "bluesky", ATP_LEGACY_PRUNE_TARGET, NULL, 1000, &e), 0);
	snprintf(t_alice, sizeof t_alice, "bluesky:follow:%s", fx->alice_did);
	snprintf(t_bob, sizeof t_bob, "bluesky:follow:%s", bob_did);
	snprintf(t_carol, sizeof t_carol, "bluesky:follow:%s", carol_did);
	snprintf(k_alice, sizeof k_alice, "follow:%s", fx->alice_did);
	snprintf(k_bob, sizeof k_bob, "follow:%s", bob_did);
	snprintf(k_carol, sizeof k_carol, "follow:%s", carol_did);
	snprintf(k_gone, sizeof k_gone, "prune:%s", gone);
	snprintf(k_kept, sizeof k_kept, "prune:%s", kept);
	assert_int_equal(journal_intent(j, k_alice, "bluesky", t_alice, NULL, 1000, &e), 0);
	assert_int_equal(journal_intent(j, k_bob, "bluesky", t_bob, NULL, 1000, &e), 0);
	assert_int_equal(journal_intent(j, k_carol, "bluesky", t_carol, NULL, 1000, &e), 0);
	assert_int_equal(journal_intent(j, k_gone, "bluesky", "bluesky:delete", NULL, 1000, &e), 0);
	assert_int_equal(journal_intent(j, k_kept, "bluesky", "bluesky:delete", NULL, 1000, &e), 0);
	journal_close(j);
	struct got g[4] = {{0}};
	cJSON *rec = atp_follow_record(fx->alice_did, 1000, &e);
	cJSON_AddStringToObject(rec, ATP_FIELD_KEY, k_alice);
	assert_true(atp_create_record(fx->atp, ATP_COLL_FOLLOW, rec, on_done, &g[0], &e) > 0);
	cJSON_Delete(rec);
	assert_true(atp_follow(fx->atp, bob_did, NULL, on_done, &g[1], &e) > 0);
	assert_true(atp_delete_uri(fx->atp, gone, on_done, &g[2], &e) > 0);
	assert_true(atp_delete_uri(fx->atp, legacy, on_done, &g[3], &e) > 0);
	for (int i = 0; i < 4; i++) {
		got_wait(&fx->loop, &g[i]);
		assert_int_equal(g[i].r.kind, ATP_OK);
	}
	char alice_follow[ATP_URI_MAX], bob_follow[ATP_URI_MAX];
	snprintf(alice_follow, sizeof alice_follow, "%s", json_string_or(g[0].json, "uri", ""));
	snprintf(bob_follow, sizeof bob_follow, "%s", json_string_or(g[1].json, "uri", ""));
	for (int i = 0; i < 4; i++)
		got_reset(&g[i]);
	size_t creates = bskyfake_count(fx->fake, "com.atproto.repo.createRecord", 0);
	size_t deletes = bskyfake_count(fx->fake, "com.atproto.repo.deleteRecord", 0);

	/* the restart */
	start_outbound(fx);
	assert_int_equal(outbound_reconcile_pending(fx->ob), 6);
	const char *keys[] = {k_alice, k_bob, k_carol, k_gone, k_kept, k_legacy};
	for (int i = 0; i < 500; i++) {
		bool open = false;
		for (size_t k = 0; k < 6; k++)
			open = open || journal_state_of(fx->j, keys[k]) == JOURNAL_INTENT;
		if (!open)
			break;
		atptest_run_for(&fx->loop, 20);
	}
	assert_int_equal(journal_state_of(fx->j, k_alice), JOURNAL_DONE);
	assert_string_equal(journal_artifact(fx->j, k_alice), alice_follow);
	assert_int_equal(journal_state_of(fx->j, k_bob), JOURNAL_DONE);
	assert_string_equal(journal_artifact(fx->j, k_bob), bob_follow);
	assert_int_equal(journal_state_of(fx->j, k_carol), JOURNAL_FAILED);
	assert_int_equal(journal_state_of(fx->j, k_gone), JOURNAL_DONE);
	assert_string_equal(journal_artifact(fx->j, k_gone), gone);
	assert_int_equal(journal_state_of(fx->j, k_kept), JOURNAL_FAILED);
	assert_int_equal(journal_state_of(fx->j, k_legacy), JOURNAL_DONE);
	/* the reconciliation asked, and changed nothing */
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.createRecord", 0), creates);
	assert_int_equal(bskyfake_count(fx->fake, "com.atproto.repo.deleteRecord", 0), deletes);
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_POST), 1);
	assert_int_equal(bskyfake_record_count(fx->fake, "agent.test", ATP_COLL_FOLLOW), 2);
}

static void test_target_parse_follow_delete(void **state)
{
	(void)state;
	enum atp_target_kind k = ATP_TARGET_POST;
	char did[ATP_DID_MAX];
	struct ga_err e = {{0}};
	assert_int_equal(atp_target_parse("bluesky:follow:did:plc:abc", &k, did, sizeof did, &e),
	                 0);
	assert_int_equal(k, ATP_TARGET_FOLLOW);
	assert_string_equal(did, "did:plc:abc");
	assert_int_equal(atp_target_parse("bluesky:delete", &k, did, sizeof did, &e), 0);
	assert_int_equal(k, ATP_TARGET_DELETE);
	assert_string_equal(did, "");
	assert_int_equal(atp_target_parse("bluesky:follow:bob", &k, did, sizeof did, &e), -1);
	assert_non_null(strstr(e.msg, "does not end in a DID"));
	assert_int_equal(atp_target_parse("bluesky:unfollow:did:plc:a", &k, did, sizeof did, &e),
	                 -1);
	assert_non_null(strstr(e.msg, "bluesky:follow:<did>, bluesky:delete"));
}

int main(void)
{
	log_init(LOG_LEVEL_WARN, 0, NULL);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_reply_through_outbound_once, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_crash_between_post_and_done_reconciled, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_follow_through_outbound_once, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_follow_denied_by_permissions, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_delete_own_record_only, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_follow_and_delete_reconciled, setup, teardown),
	        cmocka_unit_test(test_target_parse_follow_delete),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
