/*
 * test_gh_work — the work loop's GitHub calls (adapters/github/gh_work.h)
 * over real HTTP against the GitHub fake with real git: repositories and
 * templates, branches, refs, contents, pull requests from creation to a
 * squash merge and a conflict, reviews with inline comments, requested
 * reviewers, labels, assignees, events — every answer read back through
 * the parsers — and conditional GETs: a poll of an unchanged issue or list
 * is answered 304 from the client's ETag cache and spends no rate budget.
 * Exits 77 without git.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/github/gh_work.h"
#include "adapters/github/github.h"
#include "common/json.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/unit/llm/testloop.h"

#define ADA "tok-ada-0123456789"
#define BOB "tok-bob-0123456789"

struct got {
	bool done;
	struct gh_result r;
	cJSON *json;
};

static void on_done(void *ud, const struct gh_result *r)
{
	struct got *g = ud;
	assert_false(g->done);
	g->done = true;
	g->r = *r;
	g->r.json = NULL;
	g->json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

struct fx {
	uv_loop_t loop;
	struct ghfake *fake;
	struct http_client *http;
	struct gh_config ca, cb;
	struct gh_client *ada, *bob;
};

static struct gh_client *client(struct fx *fx, struct gh_config *cfg, const char *token,
                                const char *login)
{
	gh_config_init(cfg, ghfake_base_url(fx->fake), token, login);
	cfg->spacing_ms = cfg->write_spacing_ms = 0;
	cfg->backoff_base_ms = 1;
	cfg->backoff_cap_ms = 5;
	cfg->recheck_ms = 5;
	cfg->low_budget = 0;
	cfg->timeout_ms = 30000;
	return gh_client_new(fx->http, cfg);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	char err[256];
	fx->fake = ghfake_new(err, sizeof err);
	assert_non_null(fx->fake);
	ghfake_add_token(fx->fake, ADA, "ada");
	ghfake_add_token(fx->fake, BOB, "bob");
	ghfake_add_org(fx->fake, "acme");
	ghfake_add_repo(fx->fake, "acme", "site", 0);
	struct ghfake_file seed[] = {{.path = "README.md", .content = "# site\n"},
	                             {.path = "src/app.c", .content = "int x = 1;\n"}};
	ghfake_commit(fx->fake, "acme", "site", NULL, seed, 2, "Initial commit", "ada", NULL);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	fx->ada = client(fx, &fx->ca, ADA, "ada");
	fx->bob = client(fx, &fx->cb, BOB, "bob");
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	gh_client_free(fx->ada);
	gh_client_free(fx->bob);
	gh_config_free(&fx->ca);
	gh_config_free(&fx->cb);
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	uv_loop_close(&fx->loop);
	ghfake_free(fx->fake);
	free(fx);
	return 0;
}

/* Waits for a call queued with id (0 = refused: fails the test). */
static void wait_for(struct fx *fx, uint64_t id, struct got *g, const struct ga_err *err)
{
	if (!id)
		fail_msg("the call was refused: %s", err->msg);
	if (testloop_run_until(&fx->loop, &g->done) != 0)
		fail_msg("no answer within %d ms", TESTLOOP_GUARD_MS);
}

#define RUN(fx, g, call)                                                                           \
	do {                                                                                       \
		struct ga_err e_ = {{0}};                                                          \
		memset(&(g), 0, sizeof(g));                                                        \
		uint64_t id_ = (call);                                                             \
		wait_for((fx), id_, &(g), &e_);                                                    \
	} while (0)
#define ERR (&e_)

static void got_free(struct got *g)
{
	cJSON_Delete(g->json);
	g->json = NULL;
}

/* --- repositories ------------------------------------------------------------------ */

static void test_repositories_and_templates(void **state)
{
	struct fx *fx = *state;
	ghfake_add_repo(fx->fake, "acme", "www-template", GHFAKE_REPO_TEMPLATE);
	struct ghfake_file tf = {.path = "index.html", .content = "<h1>hi</h1>\n"};
	ghfake_commit(fx->fake, "acme", "www-template", NULL, &tf, 1, "template", NULL, NULL);
	for (int i = 0; i < 3; i++) {
		char name[32];
		snprintf(name, sizeof name, "filler-%d", i);
		ghfake_add_repo(fx->fake, "acme", name, 0);
	}
	struct got g;
	struct gh_repo_query q = {.sort = "full_name", .max_items = 3};
	RUN(fx, g, gh_org_repos_list(fx->ada, "acme", &q, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_OK);
	assert_int_equal(cJSON_GetArraySize(g.json), 3);
	assert_true(g.r.truncated);
	struct gh_repo_info ri;
	struct ga_err perr = {{0}};
	assert_int_equal(gh_repo_parse(cJSON_GetArrayItem(g.json, 0), &ri, &perr), 0);
	assert_string_equal(ri.owner, "acme");
	assert_string_equal(ri.name, "filler-0");
	got_free(&g);

	struct gh_generate gen = {
	        .owner = "acme", .name = "www-lil-intdev-garden", .description = "a garden"};
	RUN(fx, g, gh_repo_generate(fx->ada, "acme", "www-template", &gen, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_OK);
	assert_int_equal(g.r.status, 201);
	assert_int_equal(gh_repo_parse(g.json, &ri, &perr), 0);
	assert_string_equal(ri.name, "www-lil-intdev-garden");
	assert_string_equal(ri.default_branch, "main");
	assert_true(ri.can_push);
	assert_false(ri.is_template);
	assert_non_null(strstr(ri.clone_url, "/acme/www-lil-intdev-garden.git"));
	got_free(&g);
	/* bob generating the same name a moment later: 422, name taken. */
	RUN(fx, g, gh_repo_generate(fx->bob, "acme", "www-template", &gen, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_ERR_INVALID);
	assert_non_null(strstr(g.r.msg, "name already exists"));
	char *html = ghfake_file_at(fx->fake, "acme", "www-lil-intdev-garden", "main", "index.html",
	                            NULL);
	assert_string_equal(html, "<h1>hi</h1>\n");
	free(html);

	struct gh_repo_new rn = {.name = "notes", .auto_init = true};
	RUN(fx, g, gh_org_repo_create(fx->ada, "acme", &rn, on_done, &g, ERR));
	assert_int_equal(g.r.status, 201);
	got_free(&g);
	RUN(fx, g, gh_collaborators_list(fx->ada, "acme", "site", 0, on_done, &g, ERR));
	struct gh_collaborator *cv;
	size_t nc;
	assert_int_equal(gh_collaborators_parse(g.json, &cv, &nc, &perr), 0);
	assert_int_equal(nc, 2);
	assert_true(cv[0].push && cv[1].push);
	free(cv);
	got_free(&g);
}

/* --- git data ------------------------------------------------------------------------ */

static void test_branches_refs_contents(void **state)
{
	struct fx *fx = *state;
	struct got g;
	char main_sha[41];
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "main", main_sha), 0);
	RUN(fx, g, gh_ref_create(fx->ada, "acme", "site", "task-1-x", main_sha, on_done, &g, ERR));
	assert_int_equal(g.r.status, 201);
	got_free(&g);
	RUN(fx, g, gh_ref_get(fx->ada, "acme", "site", "task-1-x", on_done, &g, ERR));
	struct gh_branch_info b;
	struct ga_err perr = {{0}};
	assert_int_equal(gh_branch_parse(g.json, &b, &perr), 0);
	assert_string_equal(b.name, "task-1-x");
	assert_string_equal(b.sha, main_sha);
	got_free(&g);
	RUN(fx, g, gh_ref_get(fx->ada, "acme", "site", "never", on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_ERR_NOT_FOUND);

	/* A commit on the branch moves it; forcing it back is a non-fast-forward
	 * that needs force. */
	struct ghfake_file f = {.path = "docs/guide/intro.md", .content = "hello, world\n"};
	char tip[41];
	ghfake_commit(fx->fake, "acme", "site", "task-1-x", &f, 1, "docs", "ada", tip);
	RUN(fx, g,
	    gh_ref_update(fx->ada, "acme", "site", "task-1-x", main_sha, false, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_ERR_INVALID);
	assert_non_null(strstr(g.r.msg, "fast forward"));
	RUN(fx, g,
	    gh_ref_update(fx->ada, "acme", "site", "task-1-x", tip, false, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_OK); /* no change is a fast-forward */
	got_free(&g);

	RUN(fx, g, gh_branches_list(fx->ada, "acme", "site", 0, on_done, &g, ERR));
	assert_int_equal(cJSON_GetArraySize(g.json), 2);
	assert_int_equal(gh_branch_parse(cJSON_GetArrayItem(g.json, 1), &b, &perr), 0);
	assert_string_equal(b.name, "task-1-x");
	assert_string_equal(b.sha, tip);
	got_free(&g);
	RUN(fx, g, gh_branch_get(fx->ada, "acme", "site", "task-1-x", on_done, &g, ERR));
	assert_int_equal(gh_branch_parse(g.json, &b, &perr), 0);
	assert_string_equal(b.sha, tip);
	got_free(&g);

	/* A nested path, encoded segment by segment, on the branch. */
	RUN(fx, g,
	    gh_contents_get(fx->ada, "acme", "site", "docs/guide/intro.md", "task-1-x", on_done, &g,
	                    ERR));
	assert_int_equal(g.r.kind, GH_OK);
	struct gh_content ct;
	assert_int_equal(gh_content_parse(g.json, &ct, &perr), 0);
	assert_int_equal(ct.type, GH_CONTENT_FILE);
	assert_string_equal(ct.path, "docs/guide/intro.md");
	assert_int_equal(ct.len, 13);
	assert_string_equal((char *)ct.data, "hello, world\n");
	gh_content_clear(&ct);
	got_free(&g);
	RUN(fx, g, gh_contents_get(fx->ada, "acme", "site", "", NULL, on_done, &g, ERR));
	assert_int_equal(gh_content_parse(g.json, &ct, &perr), 0);
	assert_int_equal(ct.type, GH_CONTENT_DIR);
	assert_int_equal(ct.n_entries, 2);
	assert_string_equal(ct.entries[0].name, "README.md");
	assert_int_equal(ct.entries[1].type, GH_CONTENT_DIR);
	gh_content_clear(&ct);
	got_free(&g);
	RUN(fx, g,
	    gh_contents_get(fx->ada, "acme", "site", "LIL-INTDEV-AGENTS.md", NULL, on_done, &g,
	                    ERR));
	assert_int_equal(g.r.kind, GH_ERR_NOT_FOUND);
	RUN(fx, g, gh_commits_list(fx->ada, "acme", "site", "task-1-x", 0, on_done, &g, ERR));
	assert_int_equal(cJSON_GetArraySize(g.json), 2);
	got_free(&g);

	RUN(fx, g, gh_ref_delete(fx->ada, "acme", "site", "task-1-x", on_done, &g, ERR));
	assert_int_equal(g.r.status, 204);
	assert_true(gh_result_gone(&g.r));
	RUN(fx, g, gh_ref_delete(fx->ada, "acme", "site", "task-1-x", on_done, &g, ERR));
	assert_int_equal(g.r.status, 422);
	assert_true(gh_result_gone(&g.r));

	/* Refused before anything is sent. */
	struct ga_err err = {{0}};
	uint64_t before = ghfake_requests(fx->fake);
	const char *bad[] = {"a..b", "-x", "x.lock", "a b", "a//b", "x/", ".hidden", "a~1", ""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(gh_ref_get(fx->ada, "acme", "site", bad[i], on_done, &g, &err), 0);
	assert_non_null(strstr(err.msg, "branch name"));
	assert_int_equal(gh_ref_delete(fx->ada, "acme", "site", "main", on_done, &g, &err), 0);
	assert_int_equal(
	        gh_contents_get(fx->ada, "acme", "site", "../etc/passwd", NULL, on_done, &g, &err),
	        0);
	assert_int_equal(ghfake_requests(fx->fake), before);
}

/* --- pull requests --------------------------------------------------------------------- */

/* A branch with one commit changing src/app.c to `content`. */
static void push_branch(struct fx *fx, const char *branch, const char *content)
{
	struct ghfake_file f = {.path = "src/app.c", .content = content};
	ghfake_commit(fx->fake, "acme", "site", branch, &f, 1, branch, "ada", NULL);
}

static void test_pull_request_from_create_to_merge(void **state)
{
	struct fx *fx = *state;
	struct got g;
	struct gh_pull_new pn = {
	        .title = "task(1): x", .body = "Part of #1", .head = "task-1-x", .base = "main"};
	RUN(fx, g, gh_pull_create(fx->ada, "acme", "site", &pn, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_ERR_INVALID);
	assert_non_null(strstr(g.r.msg, "field 'head' of PullRequest is invalid"));
	assert_false(g.r.maybe_applied);

	push_branch(fx, "task-1-x", "int x = 2;\n");
	RUN(fx, g, gh_pull_create(fx->ada, "acme", "site", &pn, on_done, &g, ERR));
	assert_int_equal(g.r.status, 201);
	struct gh_pull pr;
	struct ga_err perr = {{0}};
	assert_int_equal(gh_pull_parse(g.json, &pr, &perr), 0);
	int64_t n = pr.number;
	assert_true(pr.open);
	assert_string_equal(pr.title, "task(1): x");
	assert_string_equal(pr.body, "Part of #1");
	assert_string_equal(pr.user, "ada");
	assert_string_equal(pr.head_ref, "task-1-x");
	assert_string_equal(pr.base_ref, "main");
	assert_int_equal(strlen(pr.head_sha), 40);
	char head_sha[41];
	strcpy(head_sha, pr.head_sha);
	gh_pull_clear(&pr);
	got_free(&g);
	RUN(fx, g, gh_pull_create(fx->ada, "acme", "site", &pn, on_done, &g, ERR));
	assert_non_null(strstr(g.r.msg, "A pull request already exists for acme:task-1-x."));

	const char *rev[] = {"bob"};
	RUN(fx, g, gh_reviewers_request(fx->ada, "acme", "site", n, rev, 1, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_OK);
	got_free(&g);
	RUN(fx, g, gh_pull_get(fx->bob, "acme", "site", n, on_done, &g, ERR));
	assert_int_equal(gh_pull_parse(g.json, &pr, &perr), 0);
	assert_int_equal(pr.mergeable, GH_MERGEABLE_YES);
	assert_string_equal(pr.mergeable_state, "clean");
	assert_int_equal(pr.n_requested, 1);
	assert_string_equal(pr.requested[0], "bob");
	assert_int_equal(pr.commits, 1);
	assert_int_equal(pr.changed_files, 1);
	assert_int_equal(pr.additions, 1);
	gh_pull_clear(&pr);
	got_free(&g);

	struct gh_pull_query q = {.head = "task-1-x", .state = "all"};
	RUN(fx, g, gh_pulls_list(fx->bob, "acme", "site", &q, on_done, &g, ERR));
	assert_int_equal(cJSON_GetArraySize(g.json), 1);
	assert_int_equal(gh_pull_parse(cJSON_GetArrayItem(g.json, 0), &pr, &perr), 0);
	assert_int_equal(pr.changed_files, -1); /* lists carry no figures */
	gh_pull_clear(&pr);
	got_free(&g);

	RUN(fx, g, gh_pull_files(fx->bob, "acme", "site", n, 0, on_done, &g, ERR));
	struct gh_pull_file *files;
	size_t nf;
	assert_int_equal(gh_pull_files_parse(g.json, &files, &nf, &perr), 0);
	assert_int_equal(nf, 1);
	assert_string_equal(files[0].filename, "src/app.c");
	assert_string_equal(files[0].status, "modified");
	assert_non_null(strstr(files[0].patch, "+int x = 2;"));
	gh_pull_files_free(files, nf);
	got_free(&g);

	/* The author may not approve; bob reviews with an inline comment. */
	struct gh_review_new own = {.event = "APPROVE"};
	RUN(fx, g, gh_review_create(fx->ada, "acme", "site", n, &own, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_ERR_INVALID);
	assert_non_null(strstr(g.r.msg, "Can not approve your own pull request"));
	struct gh_review_comment rc = {.path = "src/app.c", .line = 1, .body = "why 2?"};
	struct gh_review_new rv = {.event = "APPROVE",
	                           .body = "LGTM",
	                           .commit_id = head_sha,
	                           .comments = &rc,
	                           .n_comments = 1};
	RUN(fx, g, gh_review_create(fx->bob, "acme", "site", n, &rv, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_OK);
	got_free(&g);
	RUN(fx, g, gh_reviews_list(fx->ada, "acme", "site", n, 0, on_done, &g, ERR));
	struct gh_review *reviews;
	size_t nr;
	assert_int_equal(gh_reviews_parse(g.json, &reviews, &nr, &perr), 0);
	assert_int_equal(nr, 1);
	assert_string_equal(reviews[0].user, "bob");
	assert_string_equal(reviews[0].state, "APPROVED");
	assert_string_equal(reviews[0].commit_id, head_sha);
	assert_true(reviews[0].submitted_ms > 0);
	gh_reviews_free(reviews, nr);
	got_free(&g);
	RUN(fx, g, gh_review_comments_list(fx->ada, "acme", "site", n, 0, on_done, &g, ERR));
	struct gh_review_comment_info *rcs;
	size_t nrc;
	assert_int_equal(gh_review_comments_parse(g.json, &rcs, &nrc, &perr), 0);
	assert_int_equal(nrc, 1);
	assert_string_equal(rcs[0].path, "src/app.c");
	assert_int_equal(rcs[0].line, 1);
	assert_string_equal(rcs[0].body, "why 2?");
	gh_review_comments_free(rcs, nrc);
	got_free(&g);

	struct gh_pull_update pu = {.title = "task(1): x, reviewed"};
	RUN(fx, g, gh_pull_update(fx->ada, "acme", "site", n, &pu, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_OK);
	got_free(&g);

	struct gh_merge m = {.method = "squash", .sha = "0000000000000000000000000000000000000000"};
	RUN(fx, g, gh_pull_merge(fx->ada, "acme", "site", n, &m, on_done, &g, ERR));
	assert_int_equal(g.r.status, 409);
	assert_int_equal(g.r.kind, GH_ERR_REFUSED);
	m.sha = head_sha;
	m.commit_title = "task(1): x (#1)";
	RUN(fx, g, gh_pull_merge(fx->ada, "acme", "site", n, &m, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_OK);
	struct gh_merge_result mr;
	assert_int_equal(gh_merge_parse(g.json, &mr, &perr), 0);
	assert_true(mr.merged);
	char main_sha[41];
	assert_int_equal(ghfake_branch_sha(fx->fake, "acme", "site", "main", main_sha), 0);
	assert_string_equal(mr.sha, main_sha);
	got_free(&g);
	char *app = ghfake_file_at(fx->fake, "acme", "site", "main", "src/app.c", NULL);
	assert_string_equal(app, "int x = 2;\n");
	free(app);
	RUN(fx, g, gh_pull_get(fx->bob, "acme", "site", n, on_done, &g, ERR));
	assert_int_equal(gh_pull_parse(g.json, &pr, &perr), 0);
	assert_true(pr.merged);
	assert_false(pr.open);
	assert_string_equal(pr.merge_commit_sha, main_sha);
	assert_true(pr.merged_ms > 0);
	gh_pull_clear(&pr);
	got_free(&g);
}

static void test_conflict_is_dirty_and_405(void **state)
{
	struct fx *fx = *state;
	push_branch(fx, "task-2-a", "int x = 3;\n");
	push_branch(fx, "task-3-b", "int x = 4;\n");
	struct got g;
	struct gh_pull_new a = {.title = "a", .head = "task-2-a", .base = "main"};
	struct gh_pull_new b = {.title = "b", .head = "acme:task-3-b", .base = "main"};
	RUN(fx, g, gh_pull_create(fx->ada, "acme", "site", &a, on_done, &g, ERR));
	int64_t na = json_int_or(g.json, "number", 0);
	got_free(&g);
	RUN(fx, g, gh_pull_create(fx->ada, "acme", "site", &b, on_done, &g, ERR));
	int64_t nb = json_int_or(g.json, "number", 0);
	got_free(&g);
	RUN(fx, g, gh_pull_merge(fx->ada, "acme", "site", na, NULL, on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_OK);
	got_free(&g);
	RUN(fx, g, gh_pull_get(fx->ada, "acme", "site", nb, on_done, &g, ERR));
	struct gh_pull pr;
	struct ga_err perr = {{0}};
	assert_int_equal(gh_pull_parse(g.json, &pr, &perr), 0);
	assert_int_equal(pr.mergeable, GH_MERGEABLE_NO);
	assert_string_equal(pr.mergeable_state, "dirty");
	gh_pull_clear(&pr);
	got_free(&g);
	RUN(fx, g, gh_pull_merge(fx->ada, "acme", "site", nb, NULL, on_done, &g, ERR));
	assert_int_equal(g.r.status, 405);
	assert_non_null(strstr(g.r.msg, "not mergeable"));
	/* The creator closes it and deletes the branch (recovery). */
	struct gh_pull_update close = {.state = "closed"};
	RUN(fx, g, gh_pull_update(fx->ada, "acme", "site", nb, &close, on_done, &g, ERR));
	assert_string_equal(json_string_or(g.json, "state", ""), "closed");
	got_free(&g);
}

/* --- issues -------------------------------------------------------------------------------- */

static void test_labels_assignees_events(void **state)
{
	struct fx *fx = *state;
	int64_t n = ghfake_add_issue(fx->fake, "acme", "site", "ada", "[PLAN] p", "tasks");
	struct got g;
	const char *set[] = {"plan", "plan:active"};
	RUN(fx, g, gh_labels_set(fx->ada, "acme", "site", n, set, 2, on_done, &g, ERR));
	assert_int_equal(cJSON_GetArraySize(g.json), 2);
	got_free(&g);
	const char *add[] = {"plan:blocked"};
	RUN(fx, g, gh_labels_add(fx->ada, "acme", "site", n, add, 1, on_done, &g, ERR));
	assert_int_equal(cJSON_GetArraySize(g.json), 3);
	got_free(&g);
	RUN(fx, g, gh_label_remove(fx->ada, "acme", "site", n, "plan:active", on_done, &g, ERR));
	assert_int_equal(cJSON_GetArraySize(g.json), 2);
	got_free(&g);
	RUN(fx, g, gh_label_remove(fx->ada, "acme", "site", n, "plan:active", on_done, &g, ERR));
	assert_int_equal(g.r.kind, GH_ERR_NOT_FOUND);
	assert_true(gh_result_gone(&g.r));
	const char *me[] = {"bob"};
	RUN(fx, g, gh_assignees_add(fx->bob, "acme", "site", n, me, 1, on_done, &g, ERR));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g.json, "assignees")), 1);
	got_free(&g);
	RUN(fx, g, gh_assignees_remove(fx->bob, "acme", "site", n, me, 1, on_done, &g, ERR));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g.json, "assignees")), 0);
	got_free(&g);
	struct gh_issue_update up = {
	        .body = "tasks, updated", .state = "closed", .state_reason = "completed"};
	RUN(fx, g, gh_issue_update(fx->ada, "acme", "site", n, &up, on_done, &g, ERR));
	assert_string_equal(json_string_or(g.json, "state", ""), "closed");
	assert_string_equal(json_string_or(g.json, "body", ""), "tasks, updated");
	got_free(&g);
	RUN(fx, g, gh_issue_events(fx->ada, "acme", "site", n, 0, on_done, &g, ERR));
	struct gh_issue_event *ev;
	size_t ne;
	struct ga_err perr = {{0}};
	assert_int_equal(gh_issue_events_parse(g.json, &ev, &ne, &perr), 0);
	/* labeled ×2, labeled, unlabeled, assigned, unassigned, closed */
	assert_int_equal(ne, 7);
	assert_string_equal(ev[4].event, "assigned");
	assert_string_equal(ev[4].subject, "bob");
	assert_string_equal(ev[4].actor, "bob");
	assert_true(ev[4].created_ms > 0);
	assert_string_equal(ev[3].event, "unlabeled");
	assert_string_equal(ev[3].subject, "plan:active");
	assert_string_equal(ev[6].event, "closed");
	free(ev);
	got_free(&g);

	struct ga_err err = {{0}};
	const char *comma[] = {"a,b"};
	assert_int_equal(gh_labels_add(fx->ada, "acme", "site", n, comma, 1, on_done, &g, &err), 0);
	const char *many[16] = {"a", "b", "c", "d", "e", "f", "g", "h",
	                        "i", "j", "k", "l", "m", "n", "o", "p"};
	assert_int_equal(
	        gh_reviewers_request(fx->ada, "acme", "site", n, many, 16, on_done, &g, &err), 0);
	assert_int_equal(gh_assignees_add(fx->ada, "acme", "site", n, many, 11, on_done, &g, &err),
	                 0);
	struct gh_review_new nobody = {.event = "REQUEST_CHANGES"};
	assert_int_equal(gh_review_create(fx->ada, "acme", "site", n, &nobody, on_done, &g, &err),
	                 0);
	assert_non_null(strstr(err.msg, "needs a body"));
}

/* --- conditional requests ------------------------------------------------------------------- */

static void test_polls_of_unchanged_state_are_free(void **state)
{
	struct fx *fx = *state;
	ghfake_rate_limit(fx->fake, "core", 1000, 3600 * 1000);
	int64_t n = ghfake_add_issue(fx->fake, "acme", "site", "ada", "[PLAN] p", "body v1");
	for (int i = 0; i < 120; i++)
		ghfake_add_issue(fx->fake, "acme", "site", "ada", "filler", "x");
	struct got g;
	RUN(fx, g, gh_issue_get(fx->ada, "acme", "site", n, on_done, &g, ERR));
	char *first = cJSON_PrintUnformatted(g.json);
	got_free(&g);
	struct gh_issue_query q = {.state = "all", .max_items = 1000};
	RUN(fx, g, gh_issues_list(fx->ada, "acme", "site", &q, on_done, &g, ERR));
	assert_int_equal(g.r.pages, 2);
	char *list = cJSON_PrintUnformatted(g.json);
	got_free(&g);
	struct gh_bucket b0, b1;
	assert_int_equal(gh_rate_snapshot(fx->ada, "core", &b0), 0);

	/* Ten plan polls: each is three 304s (the issue, both pages). */
	for (int i = 0; i < 10; i++) {
		RUN(fx, g, gh_issue_get(fx->ada, "acme", "site", n, on_done, &g, ERR));
		assert_int_equal(g.r.kind, GH_OK);
		assert_int_equal(g.r.status, 200);
		char *again = cJSON_PrintUnformatted(g.json);
		assert_string_equal(again, first);
		free(again);
		got_free(&g);
		RUN(fx, g, gh_issues_list(fx->ada, "acme", "site", &q, on_done, &g, ERR));
		assert_int_equal(g.r.pages, 2);
		again = cJSON_PrintUnformatted(g.json);
		assert_string_equal(again, list);
		free(again);
		got_free(&g);
	}
	struct gh_stats st;
	gh_client_stats(fx->ada, &st);
	assert_int_equal(st.not_modified, 30);
	struct ghfake_stats fs;
	ghfake_stats(fx->fake, &fs);
	assert_int_equal(fs.not_modified, 30);
	assert_int_equal(gh_rate_snapshot(fx->ada, "core", &b1), 0);
	assert_int_equal(b1.remaining, b0.remaining); /* none of them cost anything */

	/* A change: the next poll gets the new body, and pays for it. */
	ghfake_add_comment(fx->fake, "acme", "site", n, "bob", "claiming task 1");
	RUN(fx, g, gh_issue_get(fx->ada, "acme", "site", n, on_done, &g, ERR));
	assert_int_equal(json_int_or(g.json, "comments", -1), 1);
	got_free(&g);
	gh_client_stats(fx->ada, &st);
	assert_int_equal(st.not_modified, 30);
	/* Another client does not share the cache: its first GET is a full
	 * answer. */
	RUN(fx, g, gh_issue_get(fx->bob, "acme", "site", n, on_done, &g, ERR));
	got_free(&g);
	gh_client_stats(fx->bob, &st);
	assert_int_equal(st.not_modified, 0);
	free(first);
	free(list);
}

int main(void)
{
	if (ghfake_git_missing("test_gh_work"))
		return 77;
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_repositories_and_templates, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_branches_refs_contents, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pull_request_from_create_to_merge, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_conflict_is_dirty_and_405, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_labels_assignees_events, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_polls_of_unchanged_state_are_free, setup,
	                                        teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
