/*
 * The work loop's kinds of the GitHub outbound port (modules/github/port.h)
 * behind the real outbound stage and journal, against the GitHub fake with
 * real git: a branch pushed from the agent's mirror (never forced), a pull
 * request (GitHub's 422 for an unpushed head; "already exists" answered
 * with the existing PR), edits (body, state, labels, the review request),
 * a repository generated from a template, a review (inline comments; one
 * off the diff folded into the body), a merge (409 on a moved head, a
 * second PUT read back as done), a branch deleted — and each reconcile answering
 * "does the artifact exist?" so an intent cut by a crash is settled
 * without a second branch, PR or repository. And the pure helpers: the
 * targets, the keys, the clone URL. Exits 77 without git.
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
#include "adapters/http/http.h"
#include "common/json.h"
#include "common/timeutil.h"
#include "support_loop.h"
#include "testutil.h"
#include "wsfix.h"

#define TOKEN "tok-ada-0123456789abcdef"

struct fx {
	struct wsfix w; /* the loop, the fake, the repository */
	struct http_client *http;
	struct gh_client *gh;
	struct journal *j;
	struct outbound *ob;
	struct gh_port *port;
	struct git_ctx git;
	char memory[600];
	bool got;
	struct decision final;
	char artifact[256];
	bool rec_got;
	int exists;
	char rec_artifact[256];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	wsfix_open(&f->w);
	ghfake_add_repo(f->w.fake, WSFIX_OWNER, "www-sacred", GHFAKE_REPO_TEMPLATE);
	struct ghfake_file tf[] = {{"index.html", "<h1>sacred</h1>\n", 0, 0}};
	ghfake_commit(f->w.fake, WSFIX_OWNER, "www-sacred", "main", tf, 1, "template", "host",
	              NULL);
	wsfix_path(f->memory, sizeof f->memory, "%s/port-memory", f->w.dir);
	char cache[700];
	wsfix_path(cache, sizeof cache, "%s/git", f->memory);
	struct ga_err e = {{0}};
	f->http = http_client_new(&f->w.loop, NULL, &e);
	struct gh_config cfg;
	gh_config_init(&cfg, f->w.base, TOKEN, "ada-bot");
	cfg.spacing_ms = cfg.write_spacing_ms = 0;
	cfg.backoff_base_ms = 1;
	cfg.backoff_cap_ms = 10;
	cfg.recheck_ms = 5;
	f->gh = gh_client_new(f->http, &cfg);
	gh_config_free(&cfg);
	f->j = journal_open(f->memory, &e);
	assert_non_null(f->j);
	struct outbound_config oc = {.memory_dir = f->memory, .agent_name = "ada", .journal = f->j};
	f->ob = outbound_new(&f->w.loop, &oc, &e);
	assert_int_equal(git_ctx_init(&f->git, &f->w.loop, cache, &e), 0);
	f->port = gh_port_new(f->gh, NULL, NULL);
	struct git_cred cred = {"x-access-token", TOKEN};
	assert_int_equal(gh_port_set_git(f->port, &f->git, &cred, f->w.base, &e), 0);
	struct outbound_port p;
	gh_port_describe(f->port, &p);
	assert_int_equal(outbound_add_port(f->ob, &p, &e), 0);
	*state = f;
	return 0;
}

static bool flag(void *ctx, const void *arg)
{
	(void)arg;
	return *(bool *)ctx;
}

static void set_true(void *ud)
{
	*(bool *)ud = true;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	bool closed = false;
	outbound_close(f->ob, set_true, &closed);
	assert_true(support_run_until(&f->w.loop, flag, &closed, NULL, 10000));
	gh_port_free(f->port);
	gh_client_free(f->gh);
	http_client_close(f->http);
	support_run_until(&f->w.loop, NULL, NULL, NULL, 50);
	journal_close(f->j);
	git_ctx_free(&f->git);
	wsfix_close(&f->w);
	free(f);
	return 0;
}

static void on_final(void *ud, const struct decision *d, const char *artifact)
{
	struct fx *f = ud;
	f->final = *d;
	snprintf(f->artifact, sizeof f->artifact, "%s", artifact ? artifact : "");
	f->got = true;
}

static void submit(struct fx *f, const char *target, const char *text, const char *key,
                   const cJSON *extra)
{
	struct outbound_msg m = {.platform = CONV_PLATFORM_GITHUB,
	                         .target = target,
	                         .source = "workspace",
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = -1,
	                         .idem_key = key,
	                         .extra = extra};
	f->got = false;
	outbound_submit(f->ob, &m, on_final, f);
	assert_true(support_run_until(&f->w.loop, flag, &f->got, NULL, 20000));
}

static void on_rec(void *ud, int exists, const char *artifact)
{
	struct fx *f = ud;
	f->exists = exists;
	snprintf(f->rec_artifact, sizeof f->rec_artifact, "%s", artifact ? artifact : "");
	f->rec_got = true;
}

/* An intent left by a crash (written, never settled), then reconciled. */
static int reconcile_intent(struct fx *f, const char *key, const char *target)
{
	struct ga_err e = {{0}};
	assert_int_equal(journal_intent(f->j, key, "github", target, NULL, time_now_ms(), &e), 0);
	f->rec_got = false;
	assert_int_equal(outbound_reconcile_key(f->ob, key, on_rec, f, &e), 0);
	assert_true(support_run_until(&f->w.loop, flag, &f->rec_got, NULL, 20000));
	return f->exists;
}

/* The mirror the task pipeline would leave: the repository fetched, the
 * task branch imported to refs/ga/tasks/<branch> with one commit. The
 * commit's sha into sha. */
static void mirror_with_branch(struct fx *f, const char *branch, char sha[41])
{
	char cmd[4000];
	char url[300];
	ghfake_clone_url(f->w.fake, WSFIX_OWNER, WSFIX_REPO, url, sizeof url);
	wsfix_path(cmd, sizeof cmd,
	           "set -e; cd '%s'; m=git/mirrors/%s/%s.git; rm -rf w; "
	           "[ -d $m ] || git -c credential.helper='!f(){ echo password=%s; }; f' clone -q "
	           "--bare '%s' $m; git clone -q $m w; cd w; "
	           "echo change > %s.txt; git add .; git -c user.name=t -c user.email=t@x commit "
	           "-qm change; git push -q ../$m HEAD:refs/ga/tasks/%s; git rev-parse HEAD > "
	           "../sha",
	           f->memory, WSFIX_OWNER, WSFIX_REPO, TOKEN, url, branch, branch);
	assert_int_equal(system(cmd), 0);
	char *s = tu_read(f->memory, "sha");
	assert_non_null(s);
	snprintf(sha, 41, "%.40s", s);
	free(s);
}

static void test_push_pr_reconcile(void **state)
{
	struct fx *f = *state;
	const char *branch = "task-1-add-the-greeting";
	char sha[41];
	mirror_with_branch(f, branch, sha);
	char pr_key[GH_PORT_KEY_MAX + 1], push_key[GH_PORT_KEY_MAX + 1];
	assert_int_equal(gh_port_pr_key(WSFIX_OWNER, WSFIX_REPO, branch, pr_key, sizeof pr_key), 0);
	assert_int_equal(gh_port_push_key(branch, sha, push_key, sizeof push_key), 0);
	char target_pr[200], target_push[200];
	snprintf(target_pr, sizeof target_pr, "github:%s:%s:new-pr", WSFIX_OWNER, WSFIX_REPO);
	snprintf(target_push, sizeof target_push, "github:%s:%s:push", WSFIX_OWNER, WSFIX_REPO);
	cJSON *pr = cJSON_CreateObject();
	cJSON_AddStringToObject(pr, "title", "task(1): Add the greeting");
	cJSON_AddStringToObject(pr, "head", branch);
	cJSON_AddStringToObject(pr, "base", "main");
	/* before the push: GitHub's 422, nothing made, a retry allowed */
	submit(f, target_pr, "## Task 1 from plan #1", pr_key, pr);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	assert_int_equal(journal_state_of(f->j, pr_key), JOURNAL_FAILED);
	/* a push whose intent was cut before it left: nothing on the remote */
	assert_int_equal(reconcile_intent(f, push_key, target_push), 0);
	cJSON *px = cJSON_CreateObject();
	cJSON_AddStringToObject(px, "branch", branch);
	cJSON_AddStringToObject(px, "sha", sha);
	submit(f, target_push, "push", push_key, px);
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	char remote[41] = "";
	assert_int_equal(ghfake_branch_sha(f->w.fake, WSFIX_OWNER, WSFIX_REPO, branch, remote), 0);
	assert_string_equal(remote, sha);
	/* the same push again: already sent (the journal) */
	submit(f, target_push, "push", push_key, px);
	assert_int_equal(f->final.verdict, VERDICT_DROP);
	assert_string_equal(f->final.rule, "journal");
	/* a kill between the push and its done: the remote branch at the sha
	 * is the artifact; another commit's key finds nothing */
	char other[GH_PORT_KEY_MAX + 1];
	assert_int_equal(gh_port_push_key(branch, "0123456789012345678901234567890123456789", other,
	                                  sizeof other),
	                 0);
	assert_int_equal(reconcile_intent(f, other, target_push), 0);
	/* the PR now (a retry of the failed key) */
	submit(f, target_pr, "## Task 1 from plan #1", pr_key, pr);
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	char url[256];
	snprintf(url, sizeof url, "%s", f->artifact);
	assert_non_null(strstr(url, "/pull/"));
	/* a second PR for the head under another key: the existing one */
	submit(f, target_pr, "## Task 1 again", "pr:another-key:x", pr);
	assert_int_equal(f->final.verdict, VERDICT_SENT);
	assert_string_equal(f->artifact, url);
	assert_int_equal(ghfake_pull_count(f->w.fake, WSFIX_OWNER, WSFIX_REPO, NULL), 1);
	/* a PR key of a cut intent: found by its head */
	char pr_key2[GH_PORT_KEY_MAX + 1];
	assert_int_equal(gh_port_pr_key("ACME", WSFIX_REPO, branch, pr_key2, sizeof pr_key2), 0);
	assert_string_equal(pr_key2, pr_key); /* owner case does not matter */
	char k3[GH_PORT_KEY_MAX + 1];
	assert_int_equal(gh_port_pr_key(WSFIX_OWNER, WSFIX_REPO, "task-9-none", k3, sizeof k3), 0);
	assert_int_equal(reconcile_intent(f, k3, target_pr), 0);
	cJSON_Delete(pr);
	cJSON_Delete(px);
}

static void test_edits(void **state)
{
	struct fx *f = *state;
	int64_t n = ghfake_add_issue(f->w.fake, WSFIX_OWNER, WSFIX_REPO, "host", "[PLAN] X",
	                             "# [PLAN] X\n");
	char target[200];
	snprintf(target, sizeof target, "github:%s:%s:edit:%lld", WSFIX_OWNER, WSFIX_REPO,
	         (long long)n);
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "op", "issue");
	cJSON_AddStringToObject(e, "body", "# [PLAN] X\n\nnew body\n");
	submit(f, target, "the body", "edit-1", e);
	assert_int_equal(f->final.verdict, VERDICT_SENT);
	cJSON *is = ghfake_issue(f->w.fake, WSFIX_OWNER, WSFIX_REPO, n);
	/* the body as given: no key marker in an edited body */
	assert_string_equal(json_string_or(is, "body", ""), "# [PLAN] X\n\nnew body\n");
	cJSON_Delete(is);
	cJSON_Delete(e);
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "op", "labels");
	cJSON *l = cJSON_AddArrayToObject(e, "labels");
	cJSON_AddItemToArray(l, cJSON_CreateString("plan"));
	cJSON_AddItemToArray(l, cJSON_CreateString("plan:superseded"));
	submit(f, target, "labels", "edit-2", e);
	assert_int_equal(f->final.verdict, VERDICT_SENT);
	is = ghfake_issue(f->w.fake, WSFIX_OWNER, WSFIX_REPO, n);
	const cJSON *labels = cJSON_GetObjectItem(is, "labels");
	assert_int_equal(cJSON_GetArraySize(labels), 2);
	cJSON_Delete(is);
	cJSON_Delete(e);
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "op", "issue");
	cJSON_AddStringToObject(e, "state", "closed");
	submit(f, target, "close", "edit-3", e);
	is = ghfake_issue(f->w.fake, WSFIX_OWNER, WSFIX_REPO, n);
	assert_string_equal(json_string_or(is, "state", ""), "closed");
	cJSON_Delete(is);
	cJSON_Delete(e);
	/* an unknown edit never reaches GitHub */
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "op", "merge");
	submit(f, target, "nonsense", "edit-4", e);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	cJSON_Delete(e);
	/* edits are idempotent: an intent cut by a crash is redone */
	assert_int_equal(reconcile_intent(f, "edit-5", target), 0);
}

static void test_create_repo(void **state)
{
	struct fx *f = *state;
	const char *target = "github:acme:www-lil-intdev-new:create-repo";
	/* a cut intent for a repository that does not exist: not made */
	assert_int_equal(reconcile_intent(f, "repo-1", target), 0);
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "template", "acme/www-sacred");
	cJSON_AddStringToObject(e, "description", "A workspace");
	submit(f, target, "create", "repo-1", e);
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	char *idx =
	        ghfake_file_at(f->w.fake, "acme", "www-lil-intdev-new", "main", "index.html", NULL);
	assert_non_null(idx);
	free(idx);
	/* one already there: a cut intent finds it */
	assert_int_equal(reconcile_intent(f, "repo-2", target), 1);
	/* creating it again: GitHub's 422, nothing more made */
	submit(f, target, "create it again", "repo-3", e);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	cJSON_Delete(e);
}

/* One call of the host's client (not through the port), its answer kept. */
struct got {
	bool done;
	int status;
	cJSON *json;
};

static void on_got(void *ud, const struct gh_result *res)
{
	struct got *g = ud;
	g->status = res->status;
	g->json = res->json ? cJSON_Duplicate(res->json, true) : NULL;
	g->done = true;
}

static cJSON *host_wait(struct fx *f, struct got *g, uint64_t id, struct ga_err *e)
{
	if (id == 0)
		fail_msg("%s", e->msg);
	assert_true(support_run_until(&f->w.loop, flag, &g->done, NULL, 20000));
	return g->json;
}

/* The host opens a PR of branch (committed by the fake as the host: the
 * agent reviews a peer's PR, never its own). Its number. */
static int64_t host_pr(struct fx *f, const char *branch, const char *title)
{
	struct got g = {0};
	struct ga_err e = {{0}};
	struct gh_pull_new in = {
	        .title = title, .body = "Part of #1", .head = branch, .base = "main"};
	cJSON *pr = host_wait(
	        f, &g, gh_pull_create(f->w.host, WSFIX_OWNER, WSFIX_REPO, &in, on_got, &g, &e), &e);
	assert_int_equal(g.status, 201);
	int64_t n = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(pr, "number"));
	cJSON_Delete(pr);
	return n;
}

static cJSON *host_reviews(struct fx *f, int64_t n)
{
	struct got g = {0};
	struct ga_err e = {{0}};
	return host_wait(
	        f, &g, gh_reviews_list(f->w.host, WSFIX_OWNER, WSFIX_REPO, n, 100, on_got, &g, &e),
	        &e);
}

/* The port's own reconcile, without the journal (a key already settled). */
static int port_reconcile(struct fx *f, const char *key, const char *target)
{
	struct outbound_port p;
	gh_port_describe(f->port, &p);
	f->rec_got = false;
	p.reconcile(p.ud, key, target, on_rec, f);
	assert_true(support_run_until(&f->w.loop, flag, &f->rec_got, NULL, 20000));
	return f->exists;
}

static cJSON *inline_comment(const char *path, int line, const char *body)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "path", path);
	cJSON_AddNumberToObject(c, "line", line);
	cJSON_AddStringToObject(c, "side", "RIGHT");
	cJSON_AddStringToObject(c, "body", body);
	return c;
}

static void test_review_merge_delete(void **state)
{
	struct fx *f = *state;
	const char *branch = "task-2-greet";
	struct ghfake_file v1[] = {{"greet.txt", "one\ntwo\nthree\n", 0, 0}};
	char sha1[41], sha2[41];
	ghfake_commit(f->w.fake, WSFIX_OWNER, WSFIX_REPO, branch, v1, 1, "greet", "host", sha1);
	int64_t n = host_pr(f, branch, "task(2): Greet");
	char target[200], key[GH_PORT_KEY_MAX + 1];
	snprintf(target, sizeof target, "github:%s:%s:review:%lld", WSFIX_OWNER, WSFIX_REPO,
	         (long long)n);
	assert_int_equal(gh_port_review_key("ACME", WSFIX_REPO, n, sha1, key, sizeof key), 0);
	/* a cut intent before anything left: no review carries the key */
	assert_int_equal(reconcile_intent(f, key, target), 0);
	cJSON *rv = cJSON_CreateObject();
	cJSON_AddStringToObject(rv, "event", "REQUEST_CHANGES");
	cJSON_AddStringToObject(rv, "commit_id", sha1);
	cJSON *cs = cJSON_AddArrayToObject(rv, "comments");
	cJSON_AddItemToArray(cs, inline_comment("greet.txt", 2, "two should be 2"));
	submit(f, target, "Please use digits.", key, rv);
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	char url[256];
	snprintf(url, sizeof url, "%s", f->artifact);
	assert_non_null(strstr(url, "pullrequestreview"));
	cJSON *list = host_reviews(f, n);
	assert_int_equal(cJSON_GetArraySize(list), 1);
	const cJSON *r0 = cJSON_GetArrayItem(list, 0);
	assert_string_equal(json_string_or(r0, "state", ""), "CHANGES_REQUESTED");
	assert_string_equal(json_string_or(r0, "commit_id", ""), sha1);
	assert_true(gh_port_body_has_key(json_string_or(r0, "body", ""), key));
	cJSON_Delete(list);
	{
		struct got g = {0};
		struct ga_err e = {{0}};
		cJSON *rc = host_wait(f, &g,
		                      gh_review_comments_list(f->w.host, WSFIX_OWNER, WSFIX_REPO, n,
		                                              100, on_got, &g, &e),
		                      &e);
		assert_int_equal(cJSON_GetArraySize(rc), 1);
		const cJSON *c0 = cJSON_GetArrayItem(rc, 0);
		assert_string_equal(json_string_or(c0, "path", ""), "greet.txt");
		assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(c0, "line")), 2);
		cJSON_Delete(rc);
	}
	/* the same head again: the journal says sent; a crash after the POST
	 * finds the review by its marker */
	submit(f, target, "Please use digits.", key, rv);
	assert_int_equal(f->final.verdict, VERDICT_DROP);
	assert_string_equal(f->final.rule, "journal");
	assert_int_equal(port_reconcile(f, key, target), 1);
	assert_string_equal(f->rec_artifact, url);
	cJSON_Delete(rv);

	/* a revision: a new head, a new key; an inline comment off the diff is
	 * folded into the body, not lost */
	struct ghfake_file v2[] = {{"greet.txt", "1\n2\nthree\n", 0, 0}};
	ghfake_commit(f->w.fake, WSFIX_OWNER, WSFIX_REPO, branch, v2, 1, "digits", "host", sha2);
	char key2[GH_PORT_KEY_MAX + 1];
	assert_int_equal(gh_port_review_key(WSFIX_OWNER, WSFIX_REPO, n, sha2, key2, sizeof key2),
	                 0);
	assert_string_not_equal(key, key2);
	rv = cJSON_CreateObject();
	cJSON_AddStringToObject(rv, "event", "COMMENT");
	cJSON_AddStringToObject(rv, "commit_id", sha2);
	cs = cJSON_AddArrayToObject(rv, "comments");
	cJSON_AddItemToArray(cs, inline_comment("greet.txt", 1, "good"));
	cJSON_AddItemToArray(cs, inline_comment("greet.txt", 99, "what about four?"));
	submit(f, target, "Better.", key2, rv);
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	cJSON_Delete(rv);
	list = host_reviews(f, n);
	assert_int_equal(cJSON_GetArraySize(list), 2);
	const char *b1 = json_string_or(cJSON_GetArrayItem(list, 1), "body", "");
	assert_non_null(strstr(b1, "Better."));
	assert_non_null(strstr(b1, "`greet.txt` line 99: what about four?"));
	assert_non_null(strstr(b1, "`greet.txt` line 1: good"));
	assert_true(gh_port_body_has_key(b1, key2));
	/* the marker once, at the end */
	const char *m = strstr(b1, "key=");
	assert_non_null(m);
	assert_null(strstr(m + 1, "key="));
	cJSON_Delete(list);
	/* an unknown event never reaches GitHub */
	rv = cJSON_CreateObject();
	cJSON_AddStringToObject(rv, "event", "LGTM");
	submit(f, target, "Sure.", "review-bad-event", rv);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	struct gh_port_stats st;
	gh_port_stats(f->port, &st);
	assert_non_null(strstr(st.last_error, "APPROVE, REQUEST_CHANGES or COMMENT"));
	cJSON_Delete(rv);

	/* merge: not merged yet; the head moved since sha1 (409) */
	char mtarget[200];
	snprintf(mtarget, sizeof mtarget, "github:%s:%s:merge:%lld", WSFIX_OWNER, WSFIX_REPO,
	         (long long)n);
	assert_int_equal(reconcile_intent(f, "merge-1", mtarget), 0);
	cJSON *mx = cJSON_CreateObject();
	cJSON_AddStringToObject(mx, "method", "squash");
	cJSON_AddStringToObject(mx, "title", "task(2): Greet (#2)");
	cJSON_AddStringToObject(mx, "sha", sha1);
	submit(f, mtarget, "merge at the first head", "merge-2", mx);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	assert_non_null(strstr(f->final.reason, "Head branch was modified"));
	cJSON_ReplaceItemInObject(mx, "sha", cJSON_CreateString(sha2));
	submit(f, mtarget, "merge", "merge-3", mx);
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	assert_non_null(strstr(f->artifact, "/pull/"));
	cJSON *pr = ghfake_pull(f->w.fake, WSFIX_OWNER, WSFIX_REPO, n);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(pr, "merged")));
	assert_string_equal(json_string_or(pr, "html_url", ""), f->artifact);
	cJSON_Delete(pr);
	char *merged =
	        ghfake_file_at(f->w.fake, WSFIX_OWNER, WSFIX_REPO, "main", "greet.txt", NULL);
	assert_non_null(merged);
	assert_string_equal(merged, "1\n2\nthree\n");
	free(merged);
	/* a cut intent of the merge finds it merged; a second PUT (GitHub's
	 * 405 on a merged PR) is read back as done, never a second merge */
	assert_int_equal(port_reconcile(f, "merge-3", mtarget), 1);
	submit(f, mtarget, "merge once more", "merge-4", mx);
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	assert_int_equal(
	        ghfake_count(f->w.fake, "PUT", "/repos/acme/www-lil-intdev-demo/pulls", 405), 1);
	cJSON_Delete(mx);

	/* the branch deleted; deleting it again is done too; no branch named:
	 * refused before GitHub */
	char dtarget[200];
	snprintf(dtarget, sizeof dtarget, "github:%s:%s:delete-branch", WSFIX_OWNER, WSFIX_REPO);
	cJSON *dx = cJSON_CreateObject();
	cJSON_AddStringToObject(dx, "branch", branch);
	submit(f, dtarget, "delete task-2-greet", "del-1", dx);
	if (f->final.verdict != VERDICT_SENT)
		fail_msg("%s: %s", f->final.rule, f->final.reason);
	assert_int_equal(ghfake_branch_sha(f->w.fake, WSFIX_OWNER, WSFIX_REPO, branch, sha1), -1);
	submit(f, dtarget, "delete task-2-greet again", "del-2", dx);
	assert_int_equal(f->final.verdict, VERDICT_SENT);
	assert_non_null(strstr(f->artifact, "already gone"));
	assert_int_equal(reconcile_intent(f, "del-3", dtarget), 0);
	cJSON_Delete(dx);
	dx = cJSON_CreateObject();
	submit(f, dtarget, "delete nothing", "del-4", dx);
	assert_int_equal(f->final.verdict, VERDICT_FAIL);
	cJSON_Delete(dx);
}

static void test_helpers(void **state)
{
	(void)state;
	struct gh_port_target t;
	struct ga_err e = {{0}};
	assert_int_equal(gh_port_parse_target("github:acme:web:edit:12", &t, &e), 0);
	assert_int_equal(t.kind, GH_PORT_EDIT);
	assert_int_equal(t.number, 12);
	assert_int_equal(gh_port_parse_target("github:acme:web:new-pr", &t, &e), 0);
	assert_int_equal(t.kind, GH_PORT_NEW_PR);
	assert_int_equal(gh_port_parse_target("github:acme:web:push", &t, &e), 0);
	assert_int_equal(t.kind, GH_PORT_PUSH);
	assert_int_equal(gh_port_parse_target("github:acme:web:create-repo", &t, &e), 0);
	assert_int_equal(t.kind, GH_PORT_CREATE_REPO);
	assert_int_equal(gh_port_parse_target("github:acme:web:review:7", &t, &e), 0);
	assert_int_equal(t.kind, GH_PORT_REVIEW);
	assert_int_equal(t.number, 7);
	assert_int_equal(gh_port_parse_target("github:acme:web:merge:7", &t, &e), 0);
	assert_int_equal(t.kind, GH_PORT_MERGE);
	assert_int_equal(gh_port_parse_target("github:acme:web:delete-branch", &t, &e), 0);
	assert_int_equal(t.kind, GH_PORT_DELETE_BRANCH);
	assert_int_equal(gh_port_parse_target("github:acme:web:review:", &t, &e), -1);
	assert_int_equal(gh_port_parse_target("github:acme:web:delete-branch:3", &t, &e), -1);
	const char *sha = "0123456789abcdef0123456789abcdef01234567";
	char rk[GH_PORT_KEY_MAX + 1];
	assert_int_equal(gh_port_review_key("Acme", "Web", 7, sha, rk, sizeof rk), 0);
	assert_string_equal(rk, "review:acme/web#7@0123456789abcdef0123456789abcdef01234567");
	assert_int_equal(gh_port_review_key("acme", "web", 7, "abc", rk, sizeof rk), -1);
	assert_int_equal(gh_port_review_key("acme", "web", 0, sha, rk, sizeof rk), -1);
	char longr[101];
	memset(longr, 'r', 100);
	longr[100] = '\0';
	assert_int_equal(gh_port_review_key("acme", longr, 7, sha, rk, sizeof rk), 0);
	assert_true(strlen(rk) <= GH_PORT_KEY_MAX);
	assert_null(strstr(rk, longr));
	assert_int_equal(gh_port_parse_target("github:acme:web:edit:", &t, &e), -1);
	assert_int_equal(gh_port_parse_target("github:acme:web:push:3", &t, &e), -1);
	assert_int_equal(gh_port_parse_target("github:acme:web:merge-all", &t, &e), -1);
	char k[GH_PORT_KEY_MAX + 1], b[300], s[64];
	assert_int_equal(gh_port_push_key("task-3-x-a2", "abcdef0123", k, sizeof k), 0);
	assert_string_equal(k, "push:task-3-x-a2:abcdef0123");
	assert_int_equal(gh_port_key_parse(k, GH_PORT_PUSH, b, sizeof b, s, sizeof s), 0);
	assert_string_equal(b, "task-3-x-a2");
	assert_string_equal(s, "abcdef0123");
	assert_int_equal(gh_port_push_key("-bad", "abcdef0123", k, sizeof k), -1);
	assert_int_equal(gh_port_push_key("ok", "NOTHEX!", k, sizeof k), -1);
	assert_int_equal(gh_port_pr_key("acme", "web", "feature/x", k, sizeof k), 0);
	assert_int_equal(gh_port_key_parse(k, GH_PORT_NEW_PR, b, sizeof b, NULL, 0), 0);
	assert_string_equal(b, "feature/x");
	assert_int_equal(gh_port_key_parse("pr:short", GH_PORT_NEW_PR, b, sizeof b, NULL, 0), -1);
	/* a key longer than the journal takes is refused, never cut */
	char longb[260];
	memset(longb, 'a', 200);
	longb[200] = '\0';
	assert_int_equal(gh_port_pr_key("acme", "web", longb, k, sizeof k), -1);
	char url[300];
	assert_int_equal(gh_port_clone_url(NULL, "acme", "web", url, sizeof url), 0);
	assert_string_equal(url, "https://github.com/acme/web.git");
	assert_int_equal(
	        gh_port_clone_url("https://api.github.com/", "acme", "web", url, sizeof url), 0);
	assert_string_equal(url, "https://github.com/acme/web.git");
	assert_int_equal(
	        gh_port_clone_url("https://ghe.example/api/v3", "acme", "web", url, sizeof url), 0);
	assert_string_equal(url, "https://ghe.example/acme/web.git");
	assert_int_equal(gh_port_clone_url("http://127.0.0.1:9", "acme", "web", url, sizeof url),
	                 0);
	assert_string_equal(url, "http://127.0.0.1:9/acme/web.git");
}

int main(void)
{
	if (ghfake_git_missing("test_ws_port"))
		return 77;
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_push_pr_reconcile, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_edits, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_create_repo, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_review_merge_delete, setup, teardown),
	        cmocka_unit_test(test_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
