/*
 * test_ghfake_server — ghfake-server as a process (what a test of the
 * daemon starts): the port file, tokens and repositories from the command
 * line, the control endpoints switching faults and limits, the state dump,
 * the record file, exit 0 on SIGTERM, and its refusals of bad arguments.
 * The client is adapters/github itself.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapters/github/gh_work.h"
#include "adapters/github/github.h"
#include "common/json.h"
#include "common/timeutil.h"
#include "proc.h"
#include "tests/unit/llm/testloop.h"
#include "testutil.h"

struct got {
	bool done;
	struct gh_result r;
	cJSON *json;
};

static void on_done(void *ud, const struct gh_result *r)
{
	struct got *g = ud;
	g->done = true;
	g->r = *r;
	g->r.json = NULL;
	g->json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

static void call(uv_loop_t *loop, struct gh_client *gh, const char *method, const char *path,
                 const char *body, struct got *g)
{
	struct gh_req req = {.method = method, .path = path, .body = body, .what = path};
	struct ga_err err = {{0}};
	memset(g, 0, sizeof *g);
	assert_true(gh_call(gh, &req, on_done, g, &err) > 0);
	assert_int_equal(testloop_run_until(loop, &g->done), 0);
}

static void test_server_process(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	char port_file[600], record[600];
	snprintf(port_file, sizeof port_file, "%s/port", dir);
	snprintf(record, sizeof record, "%s/record.jsonl", dir);
	const char *argv[] = {
	        "--token",     "tok1:ada", "--repo",   "octo/hello", "--repo", "octo/ro:readonly",
	        "--port-file", port_file,  "--record", record,       NULL};
	struct proc p;
	assert_int_equal(proc_start_bin(&p, GHFAKE_SERVER_PATH, dir, argv, NULL), 0);
	char *port = NULL;
	for (int i = 0; i < 1000 && !port; i++) {
		port = tu_read(dir, "port");
		if (!port)
			usleep(10000);
	}
	assert_non_null(port);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", atoi(port));
	free(port);

	uv_loop_t loop;
	uv_loop_init(&loop);
	struct ga_err err = {{0}};
	struct http_client *http = http_client_new(&loop, NULL, &err);
	struct gh_config cfg;
	gh_config_init(&cfg, url, "tok1", "ada");
	cfg.spacing_ms = cfg.write_spacing_ms = 0;
	cfg.backoff_base_ms = 1;
	cfg.backoff_cap_ms = 5;
	cfg.recheck_ms = 5;
	struct gh_client *gh = gh_client_new(http, &cfg);

	struct got g;
	struct gh_issue_new in = {.title = "from the process test", .body = "<!-- ga:key=p1 -->"};
	memset(&g, 0, sizeof g);
	assert_true(gh_issue_create(gh, "octo", "hello", &in, on_done, &g, &err) > 0);
	assert_int_equal(testloop_run_until(&loop, &g.done), 0);
	assert_int_equal(g.r.kind, GH_OK);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(g.json, "user"), "login", ""),
	                    "ada");
	cJSON_Delete(g.json);

	memset(&g, 0, sizeof g);
	assert_true(gh_issue_create(gh, "octo", "ro", &in, on_done, &g, &err) > 0);
	assert_int_equal(testloop_run_until(&loop, &g.done), 0);
	assert_int_equal(g.r.kind, GH_ERR_FORBIDDEN);

	/* Switch a fault on from outside: the next GET gets one HTML 502. */
	call(&loop, gh, "POST", "/_ghfake/fail?n=1&status=502&html=1", NULL, &g);
	assert_int_equal(g.r.kind, GH_OK);
	cJSON_Delete(g.json);
	call(&loop, gh, "GET", "/repos/octo/hello", NULL, &g);
	assert_int_equal(g.r.kind, GH_OK);
	assert_int_equal(g.r.attempts, 2);
	cJSON_Delete(g.json);
	call(&loop, gh, "POST", "/_ghfake/fail?status=404", NULL, &g);
	assert_int_equal(g.r.kind, GH_ERR_REFUSED);
	assert_non_null(strstr(g.r.msg, "must be 5xx"));

	/* The state dump holds the issue and its body. */
	call(&loop, gh, "GET", "/_ghfake/state", NULL, &g);
	assert_int_equal(g.r.kind, GH_OK);
	cJSON *repos = cJSON_GetObjectItem(g.json, "repos");
	assert_int_equal(cJSON_GetArraySize(repos), 2);
	cJSON *issues = cJSON_GetObjectItem(cJSON_GetArrayItem(repos, 0), "issues");
	assert_int_equal(cJSON_GetArraySize(issues), 1);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(issues, 0), "body", ""),
	                    "<!-- ga:key=p1 -->");
	cJSON_Delete(g.json);

	gh_client_free(gh);
	gh_config_free(&cfg);
	http_client_close(http);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);

	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, 10000), 0);
	char *rec = tu_read(dir, "record.jsonl");
	assert_non_null(rec);
	assert_non_null(strstr(rec, "\"path\":\"/repos/octo/hello/issues\""));
	assert_non_null(strstr(rec, "\"status\":403"));
	free(rec);
	proc_cleanup(&p);
	tu_rmrf(dir);
	free(dir);
}

/* The git side from the command line: an organisation, a template
 * repository seeded from a directory, a read-only collaborator; the
 * commit and stats control endpoints; a repeated GET answered 304. */
static void test_server_git_options(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	char seed[600], spec[700], port_file[600];
	snprintf(seed, sizeof seed, "%s/seed", dir);
	mkdir(seed, 0700);
	tu_write(seed, "README.md", "# seeded\n");
	snprintf(spec, sizeof spec, "acme/site=%s", seed);
	snprintf(port_file, sizeof port_file, "%s/port", dir);
	const char *argv[] = {"--token",
	                      "tok1:ada",
	                      "--token",
	                      "tok2:bob",
	                      "--org",
	                      "acme",
	                      "--repo",
	                      "acme/site:template",
	                      "--seed",
	                      spec,
	                      "--permission",
	                      "acme/site:bob:read",
	                      "--port-file",
	                      port_file,
	                      NULL};
	struct proc p;
	assert_int_equal(proc_start_bin(&p, GHFAKE_SERVER_PATH, dir, argv, NULL), 0);
	char *port = NULL;
	for (int i = 0; i < 3000 && !port; i++) {
		port = tu_read(dir, "port");
		if (!port)
			usleep(10000);
	}
	assert_non_null(port);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", atoi(port));
	free(port);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct ga_err err = {{0}};
	struct http_client *http = http_client_new(&loop, NULL, &err);
	struct gh_config cfg;
	gh_config_init(&cfg, url, "tok1", "ada");
	cfg.spacing_ms = cfg.write_spacing_ms = 0;
	struct gh_client *gh = gh_client_new(http, &cfg);

	struct got g;
	memset(&g, 0, sizeof g);
	assert_true(gh_contents_get(gh, "acme", "site", "README.md", NULL, on_done, &g, &err) > 0);
	assert_int_equal(testloop_run_until(&loop, &g.done), 0);
	assert_int_equal(g.r.kind, GH_OK);
	struct gh_content ct;
	assert_int_equal(gh_content_parse(g.json, &ct, &err), 0);
	assert_string_equal((char *)ct.data, "# seeded\n");
	gh_content_clear(&ct);
	cJSON_Delete(g.json);
	call(&loop, gh, "GET", "/repos/acme/site", NULL, &g);
	assert_true(json_bool_or(g.json, "is_template", false));
	cJSON_Delete(g.json);
	call(&loop, gh, "GET", "/repos/acme/site", NULL, &g); /* unchanged: a 304 */
	assert_int_equal(g.r.kind, GH_OK);
	cJSON_Delete(g.json);
	struct gh_stats st;
	gh_client_stats(gh, &st);
	assert_int_equal(st.not_modified, 1);

	call(&loop, gh, "POST", "/_ghfake/commit",
	     "{\"owner\":\"acme\",\"repo\":\"site\",\"branch\":\"feature\",\"message\":\"m\","
	     "\"files\":{\"NEW.md\":\"new\\n\",\"README.md\":null}}",
	     &g);
	assert_int_equal(g.r.kind, GH_OK);
	assert_int_equal(strlen(json_string_or(g.json, "sha", "")), 40);
	cJSON_Delete(g.json);
	call(&loop, gh, "GET", "/repos/acme/site/contents?ref=feature", NULL, &g);
	assert_int_equal(cJSON_GetArraySize(g.json), 1);
	cJSON_Delete(g.json);
	call(&loop, gh, "GET", "/repos/acme/site/collaborators", NULL, &g);
	const cJSON *u;
	bool bob_push = true;
	cJSON_ArrayForEach(u, g.json) if (strcmp(json_string_or(u, "login", ""), "bob") == 0)
	        bob_push = json_bool_or(cJSON_GetObjectItem(u, "permissions"), "push", true);
	assert_false(bob_push);
	cJSON_Delete(g.json);
	call(&loop, gh, "GET", "/_ghfake/stats", NULL, &g);
	assert_int_equal(json_int_or(g.json, "not_modified", -1), 1);
	assert_int_equal(json_int_or(cJSON_GetObjectItem(cJSON_GetObjectItem(g.json, "endpoints"),
	                                                 "GET /repos/{o}/{r}"),
	                             "count", -1),
	                 2);
	cJSON_Delete(g.json);

	gh_client_free(gh);
	gh_config_free(&cfg);
	http_client_close(http);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, 10000), 0);
	proc_cleanup(&p);
	tu_rmrf(dir);
	free(dir);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	const char *bad[][3] = {{"--token", "nocolon", NULL},
	                        {"--repo", "noslash", NULL},
	                        {"--repo", "a/b:sometimes", NULL},
	                        {"--seed", "a/b=/nonexistent", NULL},
	                        {"--permission", "a/b:bob:superuser", NULL},
	                        {"--org", "no/slash", NULL},
	                        {"extra", NULL, NULL}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct proc p;
		assert_int_equal(proc_start_bin(&p, GHFAKE_SERVER_PATH, dir, bad[i], NULL), 0);
		assert_int_equal(proc_wait(&p, 10000), 64);
		char *e = proc_stderr(&p);
		assert_non_null(e);
		assert_non_null(strstr(e, "ghfake-server") ? e : strstr(e, "usage"));
		free(e);
		proc_cleanup(&p);
	}
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_server_process),
	        cmocka_unit_test(test_server_git_options),
	        cmocka_unit_test(test_bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
