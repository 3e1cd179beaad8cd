/*
 * test_bskyfake_server — bskyfake-server as a process (what a test of the
 * daemon starts): accounts from the command line (their DIDs on stdout),
 * the port file, a mention injected through the control endpoint and seen
 * by the adapter in listNotifications, a reply made through the adapter and
 * listed by /_bskyfake/records, tokens expired through /_bskyfake/expire and
 * refreshed by the adapter, a 429 forced through /_bskyfake/429, the state
 * dump, the record file, exit 0 on SIGTERM, and refusals of bad arguments.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapters/atproto/atproto.h"
#include "common/json.h"
#include "proc.h"
#include "tests/unit/llm/testloop.h"
#include "testutil.h"

struct got {
	bool done;
	struct atp_result r;
	cJSON *json;
};

static void on_done(void *ud, const struct atp_result *r)
{
	struct got *g = ud;
	g->done = true;
	g->r = *r;
	g->r.json = NULL;
	g->json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

struct raw {
	bool done;
	long status;
	char body[8192];
};

static void on_raw(void *ud, const struct http_response *resp)
{
	struct raw *r = ud;
	r->done = true;
	r->status = resp->status;
	snprintf(r->body, sizeof r->body, "%s", resp->body);
}

/* A control request (no XRPC, so not through the adapter). */
static void control(uv_loop_t *loop, struct http_client *http, const char *url, const char *method,
                    const char *body, struct raw *r)
{
	memset(r, 0, sizeof *r);
	const char *hdrs[] = {"Content-Type: application/json", NULL};
	struct http_request req = {.method = method,
	                           .url = url,
	                           .headers = hdrs,
	                           .body = body,
	                           .body_len = body ? strlen(body) : 0};
	struct ga_err err = {{0}};
	assert_true(http_request(http, &req, on_raw, r, &err) > 0);
	assert_int_equal(testloop_run_until(loop, &r->done), 0);
}

static void test_server_process(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	char port_file[600], record[600];
	snprintf(port_file, sizeof port_file, "%s/port", dir);
	snprintf(record, sizeof record, "%s/record.jsonl", dir);
	const char *argv[] = {"--account",   "agent.test:app-pw", "--account", "alice.test:pw2",
	                      "--port-file", port_file,           "--record",  record,
	                      NULL};
	struct proc p;
	assert_int_equal(proc_start_bin(&p, BSKYFAKE_SERVER_PATH, dir, argv, NULL), 0);
	char *port = NULL;
	for (int i = 0; i < 1000 && !port; i++) {
		port = tu_read(dir, "port");
		if (!port)
			usleep(10000);
	}
	assert_non_null(port);
	char base[64], url[256];
	snprintf(base, sizeof base, "http://127.0.0.1:%d", atoi(port));
	free(port);
	assert_true(proc_wait_output(&p, "alice.test did:plc:", 5000));
	char *out = proc_stdout(&p);
	char agent_did[64] = "";
	const char *a = strstr(out, "agent.test ");
	assert_non_null(a);
	sscanf(a + strlen("agent.test "), "%63s", agent_did);
	free(out);

	uv_loop_t loop;
	uv_loop_init(&loop);
	struct ga_err err = {{0}};
	struct http_client *http = http_client_new(&loop, NULL, &err);
	struct atp_config cfg;
	atp_config_init(&cfg, base, "agent.test", "app-pw", NULL);
	cfg.spacing_ms = 0;
	cfg.recheck_ms = 5;
	cfg.backoff_base_ms = 1;
	struct atp_client *atp = atp_client_new(http, &cfg);

	/* alice mentions the agent through the control endpoint */
	struct raw r;
	snprintf(url, sizeof url, "%s/_bskyfake/post", base);
	control(&loop, http, url, "POST",
	        "{\"handle\":\"alice.test\",\"text\":\"hey @agent.test, a question\"}", &r);
	assert_int_equal(r.status, 200);
	cJSON *posted = cJSON_Parse(r.body);
	char root_uri[256], root_cid[128];
	snprintf(root_uri, sizeof root_uri, "%s", json_string_or(posted, "uri", ""));
	snprintf(root_cid, sizeof root_cid, "%s", json_string_or(posted, "cid", ""));
	cJSON_Delete(posted);
	assert_true(strncmp(root_uri, "at://did:plc:", 13) == 0);

	struct got g = {0};
	assert_true(atp_list_notifications(atp, NULL, 10, on_done, &g, &err) > 0);
	assert_int_equal(testloop_run_until(&loop, &g.done), 0);
	assert_int_equal(g.r.kind, ATP_OK);
	const cJSON *n0 = cJSON_GetArrayItem(cJSON_GetObjectItem(g.json, "notifications"), 0);
	assert_string_equal(json_string_or(n0, "reason", ""), "mention");
	assert_string_equal(json_string_or(n0, "uri", ""), root_uri);
	const cJSON *facet = cJSON_GetArrayItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(n0, "record"), "facets"), 0);
	assert_int_equal(json_int_or(cJSON_GetObjectItem(facet, "index"), "byteStart", -1), 4);
	cJSON_Delete(g.json);
	memset(&g, 0, sizeof g);

	/* the agent replies; the fake lists it */
	struct atp_reply_ref ref;
	snprintf(ref.root.uri, sizeof ref.root.uri, "%s", root_uri);
	snprintf(ref.root.cid, sizeof ref.root.cid, "%s", root_cid);
	ref.parent = ref.root;
	const char *text = "Good question, @alice.test!";
	struct atp_post_in in = {.text = text, .text_len = strlen(text), .reply = &ref, .chain = 0};
	assert_true(atp_post_create(atp, &in, on_done, &g, &err) > 0);
	assert_int_equal(testloop_run_until(&loop, &g.done), 0);
	assert_int_equal(g.r.kind, ATP_OK);
	cJSON_Delete(g.json);
	memset(&g, 0, sizeof g);
	snprintf(url, sizeof url, "%s/_bskyfake/records?handle=agent.test&collection=%s", base,
	         ATP_COLL_POST);
	control(&loop, http, url, "GET", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "Good question"));
	assert_non_null(strstr(r.body, root_uri));
	char own[128];
	snprintf(own, sizeof own, "at://%s/app.bsky.feed.post/", agent_did);
	assert_non_null(strstr(r.body, own));

	/* expired tokens: refreshed, no new login */
	snprintf(url, sizeof url, "%s/_bskyfake/expire", base);
	control(&loop, http, url, "POST", "{\"handle\":\"agent.test\"}", &r);
	assert_int_equal(r.status, 200);
	assert_true(atp_get_profile(atp, "alice.test", on_done, &g, &err) > 0);
	assert_int_equal(testloop_run_until(&loop, &g.done), 0);
	assert_int_equal(g.r.kind, ATP_OK);
	cJSON_Delete(g.json);
	memset(&g, 0, sizeof g);
	struct atp_stats st;
	atp_client_stats(atp, &st);
	assert_int_equal(st.create_sessions, 1);
	assert_int_equal(st.refreshes, 1);

	/* a forced 429 with a 1 s reset: held, then resumed (real time) */
	snprintf(url, sizeof url, "%s/_bskyfake/429", base);
	control(&loop, http, url, "POST", "{\"n\":1,\"resetInMs\":1000}", &r);
	assert_true(atp_get_profile(atp, "alice.test", on_done, &g, &err) > 0);
	assert_int_equal(testloop_run_until(&loop, &g.done), 0);
	assert_int_equal(g.r.kind, ATP_OK);
	cJSON_Delete(g.json);
	memset(&g, 0, sizeof g);
	atp_client_stats(atp, &st);
	assert_int_equal(st.rate_limited, 1);

	snprintf(url, sizeof url, "%s/_bskyfake/state", base);
	control(&loop, http, url, "GET", NULL, &r);
	cJSON *s = cJSON_Parse(r.body);
	const cJSON *reqs = cJSON_GetObjectItem(s, "requests");
	assert_int_equal(json_int_or(reqs, "com.atproto.server.createSession 200", 0), 1);
	assert_int_equal(json_int_or(reqs, "app.bsky.actor.getProfile 429", 0), 1);
	assert_int_equal(json_int_or(reqs, "app.bsky.actor.getProfile 400", 0), 1); /* expired */
	cJSON_Delete(s);
	/* an unknown control endpoint and a bad account are refused */
	snprintf(url, sizeof url, "%s/_bskyfake/nope", base);
	control(&loop, http, url, "POST", "{}", &r);
	assert_int_equal(r.status, 404);
	snprintf(url, sizeof url, "%s/_bskyfake/account", base);
	control(&loop, http, url, "POST", "{\"handle\":\"alice.test\",\"password\":\"x\"}", &r);
	assert_int_equal(r.status, 400);

	atp_client_free(atp);
	atp_config_free(&cfg);
	http_client_close(http);
	testloop_drain(&loop);
	uv_loop_close(&loop);

	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, 5000), 0);
	char *rec = tu_read(dir, "record.jsonl");
	assert_non_null(rec);
	assert_non_null(strstr(rec, "com.atproto.server.createSession"));
	assert_non_null(strstr(rec, "/_bskyfake/post"));
	free(rec);
	proc_cleanup(&p);
	tu_rmrf(dir);
	free(dir);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	const char *bad[][3] = {{"--account", "nopassword", NULL},
	                        {"--access-ttl-ms", "5", NULL},
	                        {"extra-arg", NULL, NULL}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct proc p;
		assert_int_equal(proc_start_bin(&p, BSKYFAKE_SERVER_PATH, dir, bad[i], NULL), 0);
		assert_int_equal(proc_wait(&p, 5000), 64);
		proc_cleanup(&p);
	}
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_server_process),
	        cmocka_unit_test(test_bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
