/*
 * test_ghfake_git — the GitHub fake's real git: repositories served over
 * smart HTTP by git http-backend and driven by the real git client (clone
 * and push with and without the token, a private repository, a read-only
 * collaborator, a chunked push and a gzipped fetch), and the REST side
 * reading and writing the same bare repositories: a PR refused for a head
 * that was never pushed, a real squash merge seen in a fresh clone, a
 * conflict reported as "dirty" and refused with 405, a stale sha refused
 * with 409, template generation, branches, contents, refs, reviews with
 * inline comments, labels and assignees with their events, and conditional
 * requests answered 304 without spending the rate budget.
 *
 * The requests are raw HTTP (adapters/http), so what is checked is the
 * fake's wire, not a client's reading of it. Exits 77 without git.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapters/http/http.h"
#include "common/json.h"
#include "proc.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/unit/llm/testloop.h"
#include "testutil.h"

#define ADA   "tok-ada-0123456789"
#define BOB   "tok-bob-0123456789"
#define CAROL "tok-carol-0123456789"

static char git_bin[600];

struct fx {
	uv_loop_t loop;
	struct http_client *http;
	struct ghfake *fake;
	char *dir;
	unsigned runs;
};

/* --- git, the real client ----------------------------------------------------------- */

/* Runs git in cwd with the arguments (NULL-terminated) and a clean
 * configuration; the output (stdout and stderr) into *out when out is not
 * NULL. Returns git's exit code. */
static int git(struct fx *fx, const char *cwd, char **out, ...)
{
	const char *argv[PROC_MAX_ARGS];
	size_t n = 0;
	va_list ap;
	va_start(ap, out);
	for (const char *a; (a = va_arg(ap, const char *)) && n < PROC_MAX_ARGS - 1;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	const char *env[] = {"GIT_CONFIG_NOSYSTEM=1",
	                     "GIT_CONFIG_GLOBAL=/dev/null",
	                     "GIT_TERMINAL_PROMPT=0",
	                     "GIT_ASKPASS=",
	                     "SSH_ASKPASS=",
	                     "GIT_AUTHOR_NAME=Tester",
	                     "GIT_AUTHOR_EMAIL=t@example.com",
	                     "GIT_COMMITTER_NAME=Tester",
	                     "GIT_COMMITTER_EMAIL=t@example.com",
	                     NULL};
	char log[700];
	snprintf(log, sizeof log, "%s/git-%u.log", fx->dir, ++fx->runs);
	struct proc p;
	struct proc_opts o = {
	        .binary = git_bin, .cwd = cwd, .argv = argv, .env = env, .log_path = log};
	assert_int_equal(proc_start_opts(&p, &o), 0);
	int rc = proc_wait(&p, 60000);
	proc_cleanup(&p);
	char *text = tu_read(log, NULL);
	unlink(log);
	if (out)
		*out = text ? text : strdup("");
	else
		free(text);
	return rc;
}

static void write_file(const char *dir, const char *name, const char *content)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(content, fp);
	fclose(fp);
}

/* "http://x-access-token:TOKEN@127.0.0.1:PORT/o/r.git" (token NULL: none). */
static void url_for(struct fx *fx, const char *token, const char *o, const char *r, char *out,
                    size_t cap)
{
	const char *base = ghfake_base_url(fx->fake) + 7; /* after "http://" */
	if (token)
		snprintf(out, cap, "http://x-access-token:%s@%s/%s/%s.git", token, base, o, r);
	else
		snprintf(out, cap, "http://%s/%s/%s.git", base, o, r);
}

/* --- raw REST ------------------------------------------------------------------------ */

struct reply {
	bool done;
	long status;
	char *body;
	cJSON *json;
	char etag[128];
	char link[2048];
	char remaining[32];
};

static void on_reply(void *ud, const struct http_response *hr)
{
	struct reply *r = ud;
	r->done = true;
	r->status = hr->status;
	r->body = strndup(hr->body, hr->body_len);
	r->json = cJSON_ParseWithLength(hr->body, hr->body_len);
	const char *v;
	if ((v = http_response_header(hr, "ETag")))
		snprintf(r->etag, sizeof r->etag, "%s", v);
	if ((v = http_response_header(hr, "Link")))
		snprintf(r->link, sizeof r->link, "%s", v);
	if ((v = http_response_header(hr, "x-ratelimit-remaining")))
		snprintf(r->remaining, sizeof r->remaining, "%s", v);
}

static void reply_free(struct reply *r)
{
	free(r->body);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof *r);
}

/* One request; etag (may be NULL) goes into If-None-Match. */
static void call(struct fx *fx, const char *token, const char *method, const char *path,
                 const char *body, const char *etag, struct reply *r)
{
	memset(r, 0, sizeof *r);
	char url[2048], auth[128], inm[160];
	snprintf(url, sizeof url, "%s%s", ghfake_base_url(fx->fake), path);
	const char *headers[6];
	size_t n = 0;
	headers[n++] = "Accept: application/vnd.github+json";
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		headers[n++] = auth;
	}
	if (etag) {
		snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
		headers[n++] = inm;
	}
	if (body)
		headers[n++] = "Content-Type: application/json";
	headers[n] = NULL;
	struct http_request req = {.method = method,
	                           .url = url,
	                           .headers = headers,
	                           .body = body,
	                           .body_len = body ? strlen(body) : 0,
	                           .timeout_ms = 60000};
	struct ga_err err = {{0}};
	assert_true(http_request(fx->http, &req, on_reply, r, &err) > 0);
	assert_int_equal(testloop_run_until(&fx->loop, &r->done), 0);
}

/* The message of GitHub's error body, with errors[] joined. */
static const char *says(const struct reply *r)
{
	return r->body ? r->body : "";
}

/* --- fixtures ------------------------------------------------------------------------- */

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = ghfake_new(err, sizeof err);
	assert_non_null(fx->fake);
	ghfake_add_token(fx->fake, ADA, "ada");
	ghfake_add_token(fx->fake, BOB, "bob");
	ghfake_add_token(fx->fake, CAROL, "carol");
	ghfake_add_org(fx->fake, "acme");
	ghfake_add_repo(fx->fake, "acme", "site", 0);
	struct ghfake_file seed[] = {
	        {.path = "README.md", .content = "# site\n"},
	        {.path = "src/app.c", .content = "int main(void)\n{\n\treturn 0;\n}\n"}};
	ghfake_commit(fx->fake, "acme", "site", NULL, seed, 2, "Initial commit", "ada", NULL);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	assert_non_null(fx->http);
	fx->dir = tu_tempdir();
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	uv_loop_close(&fx->loop);
	ghfake_free(fx->fake);
	tu_rmrf(fx->dir);
	free(fx->dir);
	free(fx);
	return 0;
}

/* A clone of acme/site in dir/name with ada's token, on a new branch. */
static void clone_branch(struct fx *fx, const char *name, const char *branch, char *path,
                         size_t cap)
{
	char url[512];
	url_for(fx, ADA, "acme", "site", url, sizeof url);
	snprintf(path, cap, "%s/%s", fx->dir, name);
	assert_int_equal(git(fx, fx->dir, NULL, "clone", "--quiet", url, name, NULL), 0);
	if (branch)
		assert_int_equal(git(fx, path, NULL, "checkout", "--quiet", "-b", branch, NULL), 0);
}

static void commit_all(struct fx *fx, const char *path, const char *msg)
{
	assert_int_equal(git(fx, path, NULL, "add", "-A", NULL), 0);
	assert_int_equal(git(fx, path, NULL, "commit", "--quiet", "-m", msg, NULL), 0);
}

/* --- git over HTTP ----------------------------------------------------------------------- */

static void test_clone_and_push_check_the_token(void **state)
{
	struct fx *fx = *state;
	char url[512], path[700], *out;
	/* A public repository clones without a token. */
	url_for(fx, NULL, "acme", "site", url, sizeof url);
	assert_int_equal(git(fx, fx->dir, &out, "clone", "--quiet", url, "anon", NULL), 0);
	free(out);
	snprintf(path, sizeof path, "%s/anon", fx->dir);
	char *readme = tu_read(path, "README.md");
	assert_string_equal(readme, "# site\n");
	free(readme);

	/* A push without credentials is asked for them (401) and fails. */
	write_file(path, "NOTES.md", "notes\n");
	commit_all(fx, path, "notes");
	size_t before401 = ghfake_count(fx->fake, "GET", "/acme/site.git/info/refs", 401);
	assert_int_not_equal(git(fx, path, &out, "push", "origin", "HEAD:refs/heads/anon", NULL),
	                     0);
	assert_non_null(strstr(out, "terminal prompts disabled") ? out
	                                                         : strstr(out, "Authentication"));
	free(out);
	assert_true(ghfake_count(fx->fake, "GET", "/acme/site.git/info/refs", 401) > before401);
	struct httpfake_request *q = httpfake_request_find_last(ghfake_http(fx->fake), "GET",
	                                                        "/acme/site.git/info/refs");
	assert_non_null(q);
	httpfake_request_free(q);
	char sha[41];
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "anon", sha), -1);

	/* A wrong token is refused. */
	char bad[512];
	url_for(fx, "not-a-token", "acme", "site", bad, sizeof bad);
	assert_int_not_equal(git(fx, path, &out, "push", bad, "HEAD:refs/heads/anon", NULL), 0);
	assert_non_null(strstr(out, "Invalid username or token"));
	free(out);

	/* The token as the password of any user name: the push lands. */
	url_for(fx, BOB, "acme", "site", url, sizeof url);
	assert_int_equal(git(fx, path, &out, "push", "--quiet", url, "HEAD:refs/heads/anon", NULL),
	                 0);
	free(out);
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "anon", sha), 0);
	char *notes = ghfake_file_at(fx->fake, "acme", "site", "anon", "NOTES.md", NULL);
	assert_string_equal(notes, "notes\n");
	free(notes);

	/* A credential helper that answers with the token works the same. */
	write_file(path, "NOTES.md", "more notes\n");
	commit_all(fx, path, "more notes");
	url_for(fx, NULL, "acme", "site", url, sizeof url);
	assert_int_equal(git(fx, path, &out, "-c", "credential.helper=", "-c",
	                     "credential.helper=!f() { echo username=x-access-token; echo "
	                     "password=" CAROL "; }; f",
	                     "push", "--quiet", url, "HEAD:refs/heads/anon", NULL),
	                 0);
	free(out);
	notes = ghfake_file_at(fx->fake, "acme", "site", "anon", "NOTES.md", NULL);
	assert_string_equal(notes, "more notes\n");
	free(notes);

	/* A login that may only read is refused the push (403). */
	ghfake_set_permission(fx->fake, "acme", "site", "carol", "read");
	write_file(path, "NOTES.md", "refused\n");
	commit_all(fx, path, "refused");
	url_for(fx, CAROL, "acme", "site", url, sizeof url);
	assert_int_not_equal(git(fx, path, &out, "push", url, "HEAD:refs/heads/anon", NULL), 0);
	assert_non_null(strstr(out, "403") ? out : strstr(out, "denied"));
	free(out);
	assert_true(ghfake_count(fx->fake, "GET", "/acme/site.git/info/refs", 403) >= 1);

	/* git counts separately from REST, per endpoint. */
	struct ghfake_stats st;
	ghfake_stats(fx->fake, &st);
	assert_true(st.git >= 8);
	assert_int_equal(st.rest, 0);
	assert_true(ghfake_endpoint_count(fx->fake, "GIT /{o}/{r}.git/git-receive-pack", NULL) >=
	            2);
}

static void test_private_repository_needs_the_token(void **state)
{
	struct fx *fx = *state;
	ghfake_add_repo(fx->fake, "acme", "secret", GHFAKE_REPO_PRIVATE);
	struct ghfake_file f1 = {.path = "key.txt", .content = "hidden\n"};
	ghfake_commit(fx->fake, "acme", "secret", NULL, &f1, 1, "hide", NULL, NULL);
	char url[512], *out;
	url_for(fx, NULL, "acme", "secret", url, sizeof url);
	assert_int_not_equal(git(fx, fx->dir, &out, "clone", "--quiet", url, "s1", NULL), 0);
	free(out);
	url_for(fx, ADA, "acme", "secret", url, sizeof url);
	assert_int_equal(git(fx, fx->dir, &out, "clone", "--quiet", url, "s2", NULL), 0);
	free(out);
	char path[700];
	snprintf(path, sizeof path, "%s/s2", fx->dir);
	char *key = tu_read(path, "key.txt");
	assert_string_equal(key, "hidden\n");
	free(key);
	/* A repository that does not exist asks for credentials too. */
	url_for(fx, NULL, "acme", "nothing", url, sizeof url);
	assert_int_not_equal(git(fx, fx->dir, &out, "clone", "--quiet", url, "s3", NULL), 0);
	free(out);
	/* Without a token the REST side hides it. */
	struct reply r;
	call(fx, NULL, "GET", "/repos/acme/secret", NULL, NULL, &r);
	assert_int_equal(r.status, 401);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/secret", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(json_bool_or(r.json, "private", false));
	reply_free(&r);
}

static void test_chunked_push_and_gzipped_fetch(void **state)
{
	struct fx *fx = *state;
	char path[700], *out;
	clone_branch(fx, "big", "big", path, sizeof path);
	/* 300 KB of incompressible text pushed with a 64 KB post buffer: git
	 * sends it chunked. */
	char *blob = malloc(300 * 1024 + 1);
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < 300 * 1024; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		blob[i] = (char)('a' + x % 26);
	}
	blob[300 * 1024] = '\0';
	write_file(path, "big.txt", blob);
	commit_all(fx, path, "big");
	assert_int_equal(git(fx, path, &out, "-c", "http.postBuffer=65536", "push", "--quiet",
	                     "origin", "big", NULL),
	                 0);
	free(out);
	struct httpfake_request *q = httpfake_request_find_last(ghfake_http(fx->fake), "POST",
	                                                        "/acme/site.git/git-receive-pack");
	assert_non_null(q);
	const char *te = httpfake_request_header(q, "Transfer-Encoding");
	assert_non_null(te);
	assert_non_null(strstr(te, "chunked"));
	assert_true(q->body_total > 100 * 1024); /* the pack: 300 KB of 26 letters, deflated */
	httpfake_request_free(q);
	size_t len = 0;
	char *back = ghfake_file_at(fx->fake, "acme", "site", "big", "big.txt", &len);
	assert_int_equal(len, 300 * 1024);
	assert_memory_equal(back, blob, len);
	free(back);
	free(blob);

	/* Forty local commits the server does not have: the fetch that follows
	 * lists them as "have" lines, more than 1 KB, which git gzips. */
	for (int i = 0; i < 40; i++) {
		char name[32];
		snprintf(name, sizeof name, "local-%d.txt", i);
		write_file(path, name, name);
		commit_all(fx, path, name);
	}
	struct ghfake_file f1 = {.path = "server.txt", .content = "from the server\n"};
	ghfake_commit(fx->fake, "acme", "site", NULL, &f1, 1, "server side", "bob", NULL);
	assert_int_equal(git(fx, path, &out, "fetch", "--quiet", "origin", NULL), 0);
	free(out);
	q = httpfake_request_find_last(ghfake_http(fx->fake), "POST",
	                               "/acme/site.git/git-upload-pack");
	assert_non_null(q);
	const char *ce = httpfake_request_header(q, "Content-Encoding");
	assert_non_null(ce);
	assert_string_equal(ce, "gzip");
	httpfake_request_free(q);
	assert_int_equal(git(fx, path, &out, "show", "origin/main:server.txt", NULL), 0);
	assert_non_null(strstr(out, "from the server"));
	free(out);
}

/* --- pull requests -------------------------------------------------------------------------- */

static int64_t open_pr(struct fx *fx, const char *token, const char *head, const char *title)
{
	char body[512];
	snprintf(body, sizeof body,
	         "{\"title\":\"%s\",\"head\":\"%s\",\"base\":\"main\",\"body\":\"Part of #1\"}",
	         title, head);
	struct reply r;
	call(fx, token, "POST", "/repos/acme/site/pulls", body, NULL, &r);
	if (r.status != 201)
		fail_msg("PR for %s: %ld %s", head, r.status, says(&r));
	int64_t n = json_int_or(r.json, "number", -1);
	reply_free(&r);
	return n;
}

static void test_pr_refused_for_an_unpushed_head(void **state)
{
	struct fx *fx = *state;
	struct reply r;
	call(fx, ADA, "POST", "/repos/acme/site/pulls",
	     "{\"title\":\"t\",\"head\":\"never-pushed\",\"base\":\"main\"}", NULL, &r);
	assert_int_equal(r.status, 422);
	const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "errors"), 0);
	assert_string_equal(json_string_or(r.json, "message", ""), "Validation Failed");
	assert_string_equal(json_string_or(e, "field", ""), "head");
	assert_string_equal(json_string_or(e, "code", ""), "invalid");
	reply_free(&r);

	/* A branch at main's tip: no commits between. */
	char sha[41];
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "main", sha), 0);
	char body[256];
	snprintf(body, sizeof body, "{\"ref\":\"refs/heads/same\",\"sha\":\"%s\"}", sha);
	call(fx, ADA, "POST", "/repos/acme/site/git/refs", body, NULL, &r);
	assert_int_equal(r.status, 201);
	reply_free(&r);
	call(fx, ADA, "POST", "/repos/acme/site/pulls",
	     "{\"title\":\"t\",\"head\":\"acme:same\",\"base\":\"main\"}", NULL, &r);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(says(&r), "No commits between main and same"));
	reply_free(&r);

	/* A base that does not exist. */
	call(fx, ADA, "POST", "/repos/acme/site/pulls",
	     "{\"title\":\"t\",\"head\":\"same\",\"base\":\"nope\"}", NULL, &r);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(says(&r), "\"field\":\"base\""));
	reply_free(&r);
	assert_int_equal(ghfake_pull_count(fx->fake, "acme", "site", NULL), 0);
}

static void test_squash_merge_lands_in_a_fresh_clone(void **state)
{
	struct fx *fx = *state;
	char path[700], *out;
	clone_branch(fx, "work", "task-1-greeting", path, sizeof path);
	write_file(path, "src/app.c", "int main(void)\n{\n\treturn 42;\n}\n");
	commit_all(fx, path, "task(1): return 42");
	write_file(path, "HELLO.md", "hello\n");
	commit_all(fx, path, "task(1): say hello");
	assert_int_equal(
	        git(fx, path, NULL, "push", "--quiet", "-u", "origin", "task-1-greeting", NULL), 0);
	int64_t n = open_pr(fx, ADA, "task-1-greeting", "task(1): greeting");
	assert_true(n > 0);

	/* A second PR for the same head is refused. */
	struct reply r;
	call(fx, ADA, "POST", "/repos/acme/site/pulls",
	     "{\"title\":\"again\",\"head\":\"task-1-greeting\",\"base\":\"main\"}", NULL, &r);
	assert_int_equal(r.status, 422);
	assert_non_null(
	        strstr(says(&r), "A pull request already exists for acme:task-1-greeting."));
	reply_free(&r);

	char p[128];
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld", (long long)n);
	call(fx, BOB, "GET", p, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(json_bool_or(r.json, "mergeable", false));
	assert_string_equal(json_string_or(r.json, "mergeable_state", ""), "clean");
	assert_false(json_bool_or(r.json, "merged", true));
	assert_int_equal(json_int_or(r.json, "commits", -1), 2);
	assert_int_equal(json_int_or(r.json, "changed_files", -1), 2);
	const cJSON *head = cJSON_GetObjectItem(r.json, "head");
	assert_string_equal(json_string_or(head, "ref", ""), "task-1-greeting");
	char head_sha[41];
	snprintf(head_sha, sizeof head_sha, "%s", json_string_or(head, "sha", ""));
	assert_int_equal(strlen(head_sha), 40);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(r.json, "user"), "login", ""),
	                    "ada");
	reply_free(&r);

	/* The files are the real diff. */
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/files", (long long)n);
	call(fx, BOB, "GET", p, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(cJSON_GetArraySize(r.json), 2);
	const cJSON *f0 = cJSON_GetArrayItem(r.json, 0), *f1 = cJSON_GetArrayItem(r.json, 1);
	assert_string_equal(json_string_or(f0, "filename", ""), "HELLO.md");
	assert_string_equal(json_string_or(f0, "status", ""), "added");
	assert_string_equal(json_string_or(f1, "filename", ""), "src/app.c");
	assert_string_equal(json_string_or(f1, "status", ""), "modified");
	assert_int_equal(json_int_or(f1, "additions", -1), 1);
	assert_int_equal(json_int_or(f1, "deletions", -1), 1);
	assert_non_null(strstr(json_string_or(f1, "patch", ""), "+\treturn 42;"));
	reply_free(&r);

	/* The author cannot approve; a peer can, with an inline comment on a
	 * line of the diff; a line off the diff is refused. */
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/reviews", (long long)n);
	call(fx, ADA, "POST", p, "{\"event\":\"APPROVE\"}", NULL, &r);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(says(&r), "Can not approve your own pull request"));
	reply_free(&r);
	call(fx, BOB, "POST", p,
	     "{\"event\":\"COMMENT\",\"body\":\"x\",\"comments\":[{\"path\":\"src/app.c\","
	     "\"line\":40,\"body\":\"far away\"}]}",
	     NULL, &r);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(says(&r), "must be part of the diff"));
	reply_free(&r);
	call(fx, BOB, "POST", p,
	     "{\"event\":\"APPROVE\",\"body\":\"LGTM\",\"comments\":[{\"path\":\"src/app.c\","
	     "\"line\":3,\"body\":\"why 42?\"}]}",
	     NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_or(r.json, "state", ""), "APPROVED");
	assert_string_equal(json_string_or(r.json, "commit_id", ""), head_sha);
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/comments", (long long)n);
	call(fx, ADA, "GET", p, NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(r.json), 1);
	const cJSON *c0 = cJSON_GetArrayItem(r.json, 0);
	assert_string_equal(json_string_or(c0, "path", ""), "src/app.c");
	assert_int_equal(json_int_or(c0, "line", -1), 3);
	assert_string_equal(json_string_or(c0, "side", ""), "RIGHT");
	assert_non_null(strstr(json_string_or(c0, "diff_hunk", ""), "+\treturn 42;"));
	reply_free(&r);

	/* A stale sha is refused with 409; the right one merges. */
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/merge", (long long)n);
	call(fx, ADA, "PUT", p,
	     "{\"merge_method\":\"squash\",\"sha\":\"0000000000000000000000000000000000000000\"}",
	     NULL, &r);
	assert_int_equal(r.status, 409);
	reply_free(&r);
	char main_before[41], body[256];
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "main", main_before), 0);
	snprintf(body, sizeof body, "{\"merge_method\":\"squash\",\"sha\":\"%s\"}", head_sha);
	call(fx, ADA, "PUT", p, body, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(json_bool_or(r.json, "merged", false));
	char merge_sha[41];
	snprintf(merge_sha, sizeof merge_sha, "%s", json_string_or(r.json, "sha", ""));
	reply_free(&r);
	call(fx, ADA, "PUT", p, "{\"merge_method\":\"squash\"}", NULL, &r);
	assert_int_equal(r.status, 405); /* already merged */
	reply_free(&r);

	/* A fresh clone has one squashed commit on main with the PR's title. */
	char url[512], fresh[700];
	url_for(fx, NULL, "acme", "site", url, sizeof url);
	assert_int_equal(git(fx, fx->dir, NULL, "clone", "--quiet", url, "fresh", NULL), 0);
	snprintf(fresh, sizeof fresh, "%s/fresh", fx->dir);
	assert_int_equal(git(fx, fresh, &out, "log", "-1", "--format=%H %P %s", NULL), 0);
	char want[200];
	snprintf(want, sizeof want, "%s %s task(1): greeting (#%lld)", merge_sha, main_before,
	         (long long)n);
	assert_non_null(strstr(out, want));
	free(out);
	char *app = tu_read(fresh, "src/app.c");
	assert_non_null(strstr(app, "return 42;"));
	free(app);
	char *hello = tu_read(fresh, "HELLO.md");
	assert_string_equal(hello, "hello\n");
	free(hello);

	/* The PR reads merged and closed, as an issue too; deleting the branch
	 * (204) leaves it so, and a second delete is 422. */
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld", (long long)n);
	call(fx, BOB, "GET", p, NULL, NULL, &r);
	assert_true(json_bool_or(r.json, "merged", false));
	assert_string_equal(json_string_or(r.json, "state", ""), "closed");
	assert_string_equal(json_string_or(r.json, "merge_commit_sha", ""), merge_sha);
	reply_free(&r);
	call(fx, ADA, "DELETE", "/repos/acme/site/git/refs/heads/task-1-greeting", NULL, NULL, &r);
	assert_int_equal(r.status, 204);
	reply_free(&r);
	call(fx, ADA, "DELETE", "/repos/acme/site/git/refs/heads/task-1-greeting", NULL, NULL, &r);
	assert_int_equal(r.status, 422);
	reply_free(&r);
	assert_int_not_equal(ghfake_branch_sha(fx->fake, "acme", "site", "task-1-greeting", want),
	                     0);
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/files", (long long)n);
	call(fx, BOB, "GET", p, NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(r.json), 2); /* still the PR's diff */
	reply_free(&r);
	call(fx, BOB, "GET", "/repos/acme/site/issues?state=all", NULL, NULL, &r);
	const cJSON *as_issue = cJSON_GetArrayItem(r.json, 0);
	assert_int_equal(json_int_or(as_issue, "number", -1), n);
	assert_non_null(cJSON_GetObjectItem(as_issue, "pull_request"));
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/issues/%lld/events", (long long)n);
	call(fx, BOB, "GET", p, NULL, NULL, &r);
	int merged_events = 0;
	const cJSON *ev;
	cJSON_ArrayForEach(ev, r.json) merged_events +=
	        strcmp(json_string_or(ev, "event", ""), "merged") == 0;
	assert_int_equal(merged_events, 1);
	reply_free(&r);
	assert_int_equal(ghfake_pull_count(fx->fake, "acme", "site", "merged"), 1);
}

static void test_conflict_is_dirty_and_refused(void **state)
{
	struct fx *fx = *state;
	char a[700], b[700];
	clone_branch(fx, "a", "task-2-a", a, sizeof a);
	clone_branch(fx, "b", "task-3-b", b, sizeof b);
	write_file(a, "README.md", "# site, by a\n");
	commit_all(fx, a, "a");
	write_file(b, "README.md", "# site, by b\n");
	commit_all(fx, b, "b");
	assert_int_equal(git(fx, a, NULL, "push", "--quiet", "origin", "task-2-a", NULL), 0);
	assert_int_equal(git(fx, b, NULL, "push", "--quiet", "origin", "task-3-b", NULL), 0);
	int64_t na = open_pr(fx, ADA, "task-2-a", "task(2): a");
	int64_t nb = open_pr(fx, ADA, "acme:task-3-b", "task(3): b");
	char p[128];
	struct reply r;
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld", (long long)nb);
	call(fx, BOB, "GET", p, NULL, NULL, &r);
	assert_string_equal(json_string_or(r.json, "mergeable_state", ""), "clean");
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/merge", (long long)na);
	call(fx, ADA, "PUT", p, "{\"merge_method\":\"merge\"}", NULL, &r);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	/* The real merge commit has both parents. */
	char *out;
	char main_sha[41];
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "main", main_sha), 0);
	char gitdir[700];
	ghfake_git_dir(fx->fake, "acme", "site", gitdir, sizeof gitdir);
	assert_int_equal(git(fx, fx->dir, &out, "--git-dir", gitdir, "log", "-1", "--format=%P %s",
	                     "main", NULL),
	                 0);
	assert_non_null(strchr(out, ' '));
	assert_non_null(strstr(out, "Merge pull request #"));
	free(out);

	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld", (long long)nb);
	call(fx, BOB, "GET", p, NULL, NULL, &r);
	assert_false(json_bool_or(r.json, "mergeable", true));
	assert_string_equal(json_string_or(r.json, "mergeable_state", ""), "dirty");
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/merge", (long long)nb);
	call(fx, ADA, "PUT", p, "{\"merge_method\":\"squash\"}", NULL, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(json_string_or(r.json, "message", ""), "Pull Request is not mergeable");
	reply_free(&r);
	char after[41];
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "main", after), 0);
	assert_string_equal(after, main_sha);

	/* Rebuilt on the new main, it is clean again and rebase-merges. */
	assert_int_equal(git(fx, b, NULL, "fetch", "--quiet", "origin", NULL), 0);
	assert_int_equal(git(fx, b, NULL, "reset", "--quiet", "--hard", "origin/main", NULL), 0);
	write_file(b, "B.md", "b\n");
	commit_all(fx, b, "b again");
	assert_int_equal(git(fx, b, NULL, "push", "--quiet", "--force", "origin", "task-3-b", NULL),
	                 0);
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld", (long long)nb);
	call(fx, BOB, "GET", p, NULL, NULL, &r);
	assert_string_equal(json_string_or(r.json, "mergeable_state", ""), "clean");
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/merge", (long long)nb);
	call(fx, ADA, "PUT", p, "{\"merge_method\":\"rebase\"}", NULL, &r);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	char *bmd = ghfake_file_at(fx->fake, "acme", "site", "main", "B.md", NULL);
	assert_string_equal(bmd, "b\n");
	free(bmd);
}

static void test_deleting_a_head_branch_closes_its_pr(void **state)
{
	struct fx *fx = *state;
	char path[700];
	clone_branch(fx, "c", "task-4-c", path, sizeof path);
	write_file(path, "C.md", "c\n");
	commit_all(fx, path, "c");
	assert_int_equal(git(fx, path, NULL, "push", "--quiet", "origin", "task-4-c", NULL), 0);
	int64_t n = open_pr(fx, ADA, "task-4-c", "task(4): c");
	/* Deleted by a push, not through the API. */
	assert_int_equal(git(fx, path, NULL, "push", "--quiet", "origin", ":task-4-c", NULL), 0);
	char p[128];
	struct reply r;
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld", (long long)n);
	call(fx, ADA, "GET", p, NULL, NULL, &r);
	assert_string_equal(json_string_or(r.json, "state", ""), "closed");
	assert_false(json_bool_or(r.json, "merged", true));
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/pulls?state=open", NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(r.json), 0);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/pulls?state=all&head=acme:task-4-c", NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(r.json), 1);
	reply_free(&r);
}

/* --- repositories ---------------------------------------------------------------------------- */

static void test_template_generation(void **state)
{
	struct fx *fx = *state;
	ghfake_add_repo(fx->fake, "acme", "www-template", GHFAKE_REPO_TEMPLATE);
	char tpl[700];
	snprintf(tpl, sizeof tpl, "%s/tpl", fx->dir);
	mkdir(tpl, 0700);
	char sub[760];
	snprintf(sub, sizeof sub, "%s/docs", tpl);
	mkdir(sub, 0700);
	write_file(tpl, "index.html", "<h1>hi</h1>\n");
	write_file(tpl, "docs/AGENTS.md", "# agents\n");
	ghfake_seed_dir(fx->fake, "acme", "www-template", NULL, tpl, "template v1");
	struct ghfake_file more = {.path = "CHANGELOG.md", .content = "v2\n"};
	ghfake_commit(fx->fake, "acme", "www-template", NULL, &more, 1, "template v2", NULL, NULL);

	struct reply r;
	call(fx, ADA, "GET", "/repos/acme/www-template", NULL, NULL, &r);
	assert_true(json_bool_or(r.json, "is_template", false));
	reply_free(&r);
	const char *gen = "{\"owner\":\"acme\",\"name\":\"www-lil-intdev-garden\","
	                  "\"description\":\"a garden\",\"private\":false}";
	call(fx, ADA, "POST", "/repos/acme/www-template/generate", gen, NULL, &r);
	assert_int_equal(r.status, 201);
	assert_string_equal(json_string_or(r.json, "full_name", ""), "acme/www-lil-intdev-garden");
	assert_string_equal(json_string_or(r.json, "default_branch", ""), "main");
	assert_string_equal(json_string_or(r.json, "description", ""), "a garden");
	char clone_url[512];
	snprintf(clone_url, sizeof clone_url, "%s", json_string_or(r.json, "clone_url", ""));
	assert_non_null(strstr(clone_url, "/acme/www-lil-intdev-garden.git"));
	assert_string_equal(
	        json_string_or(cJSON_GetObjectItem(r.json, "template_repository"), "full_name", ""),
	        "acme/www-template");
	assert_true(json_bool_or(cJSON_GetObjectItem(r.json, "permissions"), "push", false));
	reply_free(&r);
	/* The name is taken now: a second generate (another agent's) is 422. */
	call(fx, BOB, "POST", "/repos/acme/www-template/generate", gen, NULL, &r);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(says(&r), "name already exists on this account"));
	reply_free(&r);
	/* Not a template. */
	call(fx, ADA, "POST", "/repos/acme/site/generate", "{\"owner\":\"acme\",\"name\":\"x\"}",
	     NULL, &r);
	assert_int_equal(r.status, 422);
	reply_free(&r);

	/* The clone_url clones: the template's tree as one commit. */
	char *out, path[700];
	assert_int_equal(git(fx, fx->dir, &out, "clone", "--quiet", clone_url, "garden", NULL), 0);
	free(out);
	snprintf(path, sizeof path, "%s/garden", fx->dir);
	assert_int_equal(git(fx, path, &out, "rev-list", "--count", "HEAD", NULL), 0);
	assert_int_equal(atoi(out), 1);
	free(out);
	char *agents = tu_read(path, "docs/AGENTS.md");
	assert_string_equal(agents, "# agents\n");
	free(agents);
	char *cl = tu_read(path, "CHANGELOG.md");
	assert_string_equal(cl, "v2\n");
	free(cl);

	/* Listed in the org, found by name. */
	call(fx, ADA, "GET", "/orgs/acme/repos?per_page=100", NULL, NULL, &r);
	int found = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, r.json) found +=
	        strcmp(json_string_or(x, "name", ""), "www-lil-intdev-garden") == 0;
	assert_int_equal(found, 1);
	reply_free(&r);
	call(fx, ADA, "GET", "/orgs/nobody/repos", NULL, NULL, &r);
	assert_int_equal(r.status, 404);
	reply_free(&r);

	/* An org repository made empty, then with auto_init. */
	call(fx, ADA, "POST", "/orgs/acme/repos", "{\"name\":\"empty\"}", NULL, &r);
	assert_int_equal(r.status, 201);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/empty/contents/", NULL, NULL, &r);
	assert_int_equal(r.status, 404);
	assert_string_equal(json_string_or(r.json, "message", ""), "This repository is empty.");
	reply_free(&r);
	call(fx, ADA, "POST", "/orgs/acme/repos", "{\"name\":\"init\",\"auto_init\":true}", NULL,
	     &r);
	assert_int_equal(r.status, 201);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/init/contents/README.md", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	call(fx, ADA, "POST", "/orgs/acme/repos", "{\"name\":\"init\"}", NULL, &r);
	assert_int_equal(r.status, 422);
	reply_free(&r);
}

static void test_branches_contents_refs(void **state)
{
	struct fx *fx = *state;
	struct reply r;
	call(fx, ADA, "GET", "/repos/acme/site/contents/src/app.c", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_or(r.json, "type", ""), "file");
	assert_string_equal(json_string_or(r.json, "encoding", ""), "base64");
	assert_string_equal(json_string_or(r.json, "path", ""), "src/app.c");
	/* "int main(void)\n{\n\treturn 0;\n}\n" */
	assert_string_equal(json_string_or(r.json, "content", ""),
	                    "aW50IG1haW4odm9pZCkKewoJcmV0dXJuIDA7Cn0K\n");
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/contents/src%2Fapp.c?ref=main", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/contents", NULL, NULL, &r);
	assert_true(cJSON_IsArray(r.json));
	assert_int_equal(cJSON_GetArraySize(r.json), 2);
	const cJSON *e0 = cJSON_GetArrayItem(r.json, 0), *e1 = cJSON_GetArrayItem(r.json, 1);
	assert_string_equal(json_string_or(e0, "name", ""), "README.md");
	assert_string_equal(json_string_or(e0, "type", ""), "file");
	assert_string_equal(json_string_or(e1, "name", ""), "src");
	assert_string_equal(json_string_or(e1, "type", ""), "dir");
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/contents/nope.md", NULL, NULL, &r);
	assert_int_equal(r.status, 404);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/contents/README.md?ref=no-such-branch", NULL, NULL,
	     &r);
	assert_int_equal(r.status, 404);
	reply_free(&r);

	char sha[41], body[256];
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "main", sha), 0);
	snprintf(body, sizeof body, "{\"ref\":\"refs/heads/feature/x\",\"sha\":\"%s\"}", sha);
	call(fx, ADA, "POST", "/repos/acme/site/git/refs", body, NULL, &r);
	assert_int_equal(r.status, 201);
	reply_free(&r);
	call(fx, ADA, "POST", "/repos/acme/site/git/refs", body, NULL, &r);
	assert_int_equal(r.status, 422);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/branches", NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(r.json), 2);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(r.json, 0), "name", ""), "feature/x");
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/branches/feature/x", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	const cJSON *commit = cJSON_GetObjectItem(r.json, "commit");
	assert_string_equal(json_string_or(commit, "sha", ""), sha);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(commit, "commit"), "message", ""),
	                    "Initial commit");
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/git/ref/heads/feature/x", NULL, NULL, &r);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(r.json, "object"), "sha", ""), sha);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/commits?sha=main", NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(r.json), 1);
	reply_free(&r);
	/* Another login that may only read cannot delete it. */
	ghfake_set_permission(fx->fake, "acme", "site", "carol", "read");
	call(fx, CAROL, "DELETE", "/repos/acme/site/git/refs/heads/feature/x", NULL, NULL, &r);
	assert_int_equal(r.status, 403);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/collaborators", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	bool carol_push = true;
	const cJSON *u;
	cJSON_ArrayForEach(u, r.json) if (strcmp(json_string_or(u, "login", ""), "carol") == 0)
	        carol_push = json_bool_or(cJSON_GetObjectItem(u, "permissions"), "push", true);
	assert_false(carol_push);
	assert_int_equal(cJSON_GetArraySize(r.json), 3);
	reply_free(&r);
}

static void test_labels_assignees_reviewers_events(void **state)
{
	struct fx *fx = *state;
	int64_t plan = ghfake_add_issue(fx->fake, "acme", "site", "ada", "[PLAN] garden", "tasks");
	char p[128];
	struct reply r;
	snprintf(p, sizeof p, "/repos/acme/site/issues/%lld/labels", (long long)plan);
	call(fx, ADA, "POST", p, "{\"labels\":[\"plan\",\"plan:active\"]}", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(cJSON_GetArraySize(r.json), 2);
	reply_free(&r);
	call(fx, ADA, "PUT", p, "{\"labels\":[\"plan\",\"plan:complete\"]}", NULL, &r);
	assert_int_equal(cJSON_GetArraySize(r.json), 2);
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/issues/%lld/labels/plan:complete", (long long)plan);
	call(fx, ADA, "DELETE", p, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(cJSON_GetArraySize(r.json), 1);
	reply_free(&r);
	call(fx, ADA, "DELETE", p, NULL, NULL, &r);
	assert_int_equal(r.status, 404);
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/issues/%lld/assignees", (long long)plan);
	call(fx, BOB, "POST", p, "{\"assignees\":[\"bob\",\"stranger\"]}", NULL, &r);
	assert_int_equal(r.status, 201);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "assignees")), 1);
	reply_free(&r);
	call(fx, BOB, "DELETE", p, "{\"assignees\":[\"bob\"]}", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "assignees")), 0);
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/issues/%lld/events", (long long)plan);
	call(fx, ADA, "GET", p, NULL, NULL, &r);
	const char *want[] = {"labeled",   "labeled",  "unlabeled", "labeled",
	                      "unlabeled", "assigned", "unassigned"};
	assert_int_equal(cJSON_GetArraySize(r.json), 7);
	for (int i = 0; i < 7; i++)
		assert_string_equal(json_string_or(cJSON_GetArrayItem(r.json, i), "event", ""),
		                    want[i]);
	const cJSON *as = cJSON_GetArrayItem(r.json, 5);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(as, "assignee"), "login", ""),
	                    "bob");
	assert_string_equal(json_string_or(cJSON_GetObjectItem(as, "actor"), "login", ""), "bob");
	assert_non_null(cJSON_GetObjectItem(as, "created_at"));
	reply_free(&r);

	/* Requested reviewers: a peer, not the author, not a stranger. */
	char path[700];
	clone_branch(fx, "d", "task-5-d", path, sizeof path);
	write_file(path, "D.md", "d\n");
	commit_all(fx, path, "d");
	assert_int_equal(git(fx, path, NULL, "push", "--quiet", "origin", "task-5-d", NULL), 0);
	int64_t n = open_pr(fx, ADA, "task-5-d", "task(5): d");
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/requested_reviewers", (long long)n);
	call(fx, ADA, "POST", p, "{\"reviewers\":[\"ada\"]}", NULL, &r);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(says(&r), "Review cannot be requested from pull request author."));
	reply_free(&r);
	call(fx, ADA, "POST", p, "{\"reviewers\":[\"stranger\"]}", NULL, &r);
	assert_int_equal(r.status, 422);
	assert_non_null(strstr(says(&r), "not a collaborator"));
	reply_free(&r);
	call(fx, ADA, "POST", p, "{\"reviewers\":[\"bob\",\"carol\"]}", NULL, &r);
	assert_int_equal(r.status, 201);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "requested_reviewers")), 2);
	reply_free(&r);
	call(fx, ADA, "DELETE", p, "{\"reviewers\":[\"carol\"]}", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "requested_reviewers")), 1);
	reply_free(&r);
	bool unread = false;
	assert_true(ghfake_notification_of(fx->fake, "acme", "site", n, "bob", &unread) > 0);
	assert_true(unread);
	/* bob's review answers the request. */
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/reviews", (long long)n);
	call(fx, BOB, "POST", p, "{\"event\":\"REQUEST_CHANGES\"}", NULL, &r);
	assert_int_equal(r.status, 422); /* a body is required */
	reply_free(&r);
	call(fx, BOB, "POST", p, "{\"event\":\"REQUEST_CHANGES\",\"body\":\"needs a test\"}", NULL,
	     &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_or(r.json, "state", ""), "CHANGES_REQUESTED");
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld", (long long)n);
	call(fx, ADA, "GET", p, NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "requested_reviewers")), 0);
	reply_free(&r);
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld/reviews", (long long)n);
	call(fx, ADA, "GET", p, NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(r.json), 1);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(r.json, 0), "body", ""),
	                    "needs a test");
	reply_free(&r);
	/* Closing the PR through the issue endpoint closes it. */
	snprintf(p, sizeof p, "/repos/acme/site/pulls/%lld", (long long)n);
	call(fx, ADA, "PATCH", p, "{\"state\":\"closed\"}", NULL, &r);
	assert_string_equal(json_string_or(r.json, "state", ""), "closed");
	reply_free(&r);
	call(fx, ADA, "PATCH", p, "{\"state\":\"open\"}", NULL, &r);
	assert_string_equal(json_string_or(r.json, "state", ""), "open");
	reply_free(&r);
}

/* --- conditional requests ----------------------------------------------------------------------
 */

static void test_etag_304_costs_nothing(void **state)
{
	struct fx *fx = *state;
	ghfake_rate_limit(fx->fake, "core", 100, 3600 * 1000);
	int64_t plan = ghfake_add_issue(fx->fake, "acme", "site", "ada", "[PLAN] p", "body");
	char p[96];
	snprintf(p, sizeof p, "/repos/acme/site/issues/%lld", (long long)plan);
	struct reply r;
	call(fx, ADA, "GET", p, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	char etag[128];
	snprintf(etag, sizeof etag, "%s", r.etag);
	assert_true(strncmp(etag, "W/\"", 3) == 0);
	assert_string_equal(r.remaining, "99");
	reply_free(&r);
	for (int i = 0; i < 5; i++) {
		call(fx, ADA, "GET", p, NULL, etag, &r);
		assert_int_equal(r.status, 304);
		assert_int_equal(strlen(r.body), 0);
		assert_string_equal(r.etag, etag);
		assert_string_equal(r.remaining, "99"); /* a 304 is free */
		reply_free(&r);
	}
	/* A list of tags, one strong: still a hit. */
	char list[300];
	snprintf(list, sizeof list, "\"abc\", %s", etag + 2);
	call(fx, ADA, "GET", p, NULL, list, &r);
	assert_int_equal(r.status, 304);
	reply_free(&r);
	/* The issue changes: a new version, and a full answer that costs one. */
	ghfake_add_comment(fx->fake, "acme", "site", plan, "bob", "claim task 1");
	call(fx, ADA, "GET", p, NULL, etag, &r);
	assert_int_equal(r.status, 200);
	assert_string_not_equal(r.etag, etag);
	assert_string_equal(r.remaining, "98");
	reply_free(&r);
	/* Another login sees the same body but its own permissions elsewhere:
	 * lists are tagged too. */
	call(fx, ADA, "GET", "/repos/acme/site/issues?labels=plan", NULL, NULL, &r);
	snprintf(etag, sizeof etag, "%s", r.etag);
	reply_free(&r);
	call(fx, ADA, "GET", "/repos/acme/site/issues?labels=plan", NULL, etag, &r);
	assert_int_equal(r.status, 304);
	reply_free(&r);
	uint64_t nm = 0;
	assert_int_equal(ghfake_endpoint_count(fx->fake, "GET /repos/{o}/{r}/issues/{n}", &nm), 8);
	assert_int_equal(nm, 6);
	struct ghfake_stats st;
	ghfake_stats(fx->fake, &st);
	assert_int_equal(st.not_modified, 7);
	cJSON *sj = ghfake_stats_json(fx->fake);
	assert_int_equal(json_int_or(sj, "not_modified", -1), 7);
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(sj, "endpoints"),
	                                    "GET /repos/{o}/{r}/issues"));
	cJSON_Delete(sj);
}

int main(void)
{
	if (ghfake_git_missing("test_ghfake_git"))
		return 77;
	/* The git client the tests drive: the first on PATH. */
	const char *path = getenv("PATH");
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin:/bin");
	for (char *save, *d = strtok_r(buf, ":", &save); d && !git_bin[0];
	     d = strtok_r(NULL, ":", &save)) {
		char cand[600];
		snprintf(cand, sizeof cand, "%s/git", d);
		if (access(cand, X_OK) == 0)
			snprintf(git_bin, sizeof git_bin, "%s", cand);
	}
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_clone_and_push_check_the_token, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_private_repository_needs_the_token, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_chunked_push_and_gzipped_fetch, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_pr_refused_for_an_unpushed_head, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_squash_merge_lands_in_a_fresh_clone, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_conflict_is_dirty_and_refused, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_deleting_a_head_branch_closes_its_pr, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_template_generation, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_branches_contents_refs, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_labels_assignees_reviewers_events, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_etag_304_costs_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
