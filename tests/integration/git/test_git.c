/*
 * adapters/git/git.h with real git: the mirror and a task clone under paths
 * with spaces, the default branch read from the remote (not "main"), the
 * diff against origin/<base> counting commits only (not an uncommitted
 * change), a push and ls-remote; then over HTTP against git http-backend
 * behind Basic auth: a wrong token fails at once (no prompt), the right one
 * works through the credential helper, the helper answers only for the
 * remote's host, and the token is in no file, URL or output afterwards.
 */
#include <errno.h>
#include <ftw.h>
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

#include "adapters/git/git.h"
#include "gitfix.h"
#include "support_loop.h"
#include "testutil.h"

#define TOKEN "ghp_fixtureTOKEN0123456789abcdef"

struct got {
	bool done;
	bool ok;
	char *out;
	char *err;
	char msg[GA_ERR_MSG_MAX];
	bool diff;
	struct git_diff d;
};

static void on_done(void *ud, const struct git_result *r)
{
	struct got *g = ud;
	g->done = true;
	g->ok = r->ok;
	g->out = strndup(r->out ? r->out : "", r->out_len);
	g->err = strndup(r->err ? r->err : "", r->err_len);
	snprintf(g->msg, sizeof g->msg, "%s", r->msg);
}

static void on_diff(void *ud, const struct git_result *r, const struct git_diff *d)
{
	struct got *g = ud;
	on_done(ud, r);
	if (d) {
		g->diff = true;
		g->d = *d;
		g->d.files = calloc(d->n_files + 1, sizeof *d->files);
		for (size_t i = 0; i < d->n_files; i++) {
			g->d.files[i].status = d->files[i].status;
			g->d.files[i].path = strdup(d->files[i].path);
			g->d.files[i].old_path =
			        d->files[i].old_path ? strdup(d->files[i].old_path) : NULL;
		}
		for (size_t i = 0; i < d->n_log; i++)
			g->d.log[i] = strdup(d->log[i]);
	}
}

static bool is_done(void *ctx, const void *arg)
{
	(void)arg;
	return ((struct got *)ctx)->done;
}

static void reset(struct got *g)
{
	free(g->out);
	free(g->err);
	if (g->diff)
		git_diff_free(&g->d);
	memset(g, 0, sizeof *g);
}

static void wait_for(uv_loop_t *loop, struct got *g)
{
	assert_true(support_run_until(loop, is_done, g, NULL, 60000));
}

struct env {
	uv_loop_t loop;
	char *tmp;
	char remote[700];
	char cache[700];
	char url[800];
	struct git_ctx g;
};

static int setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	struct env *e = calloc(1, sizeof *e);
	uv_loop_init(&e->loop);
	e->tmp = tu_tempdir();
	snprintf(e->remote, sizeof e->remote, "%s/remote repos/acme web.git", e->tmp);
	snprintf(e->cache, sizeof e->cache, "%s/agent home/cache dir", e->tmp);
	snprintf(e->url, sizeof e->url, "file://%s", e->remote);
	struct ga_err err = {{0}};
	if (gf_remote_new(e->remote, "trunk") != 0 ||
	    git_ctx_init(&e->g, &e->loop, e->cache, &err) != 0)
		return -1;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	git_ctx_free(&e->g);
	uv_run(&e->loop, UV_RUN_DEFAULT);
	uv_loop_close(&e->loop);
	tu_rmrf(e->tmp);
	free(e->tmp);
	free(e);
	return 0;
}

static void test_local_flow(void **state)
{
	struct env *e = *state;
	struct ga_err err = {{0}};
	struct got g = {0};
	char *mirror = git_mirror_path(&e->g, "acme", "web");
	assert_non_null(mirror);
	assert_null(git_mirror_path(&e->g, "..", "web"));
	assert_null(git_mirror_path(&e->g, "acme", "a/b"));

	assert_int_equal(git_mirror_sync(&e->g, mirror, e->url, NULL, on_done, &g, &err), 0);
	assert_false(g.done);
	wait_for(&e->loop, &g);
	if (!g.ok)
		fail_msg("mirror: %s", g.msg);
	reset(&g);

	assert_int_equal(git_default_branch(&e->g, mirror, e->url, NULL, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	char base[64];
	assert_true(g.ok);
	assert_int_equal(git_parse_symref(g.out, base, sizeof base), 0);
	assert_string_equal(base, "trunk");
	reset(&g);

	assert_int_equal(git_ls_remote_branch(&e->g, mirror, e->url, "task-1-readme", NULL, on_done,
	                                      &g, &err),
	                 0);
	wait_for(&e->loop, &g);
	char sha[GIT_SHA_MAX + 1];
	assert_true(g.ok);
	assert_int_equal(git_parse_ls_remote(g.out, "task-1-readme", sha), 0);
	reset(&g);

	char work[800];
	snprintf(work, sizeof work, "%s/work trees/acme-web task 1", e->tmp);
	assert_int_equal(git_task_clone(&e->g, mirror, work, "https://github.com/acme/web.git",
	                                "trunk", "trunk", "task-1-readme", on_done, &g, &err),
	                 0);
	wait_for(&e->loop, &g);
	if (!g.ok)
		fail_msg("clone: %s", g.msg);
	reset(&g);
	assert_int_equal(git_task_clone(&e->g, mirror, work, e->url, "trunk", "trunk", "x", on_done,
	                                &g, &err),
	                 -1); /* exists */
	char head[128];
	assert_int_equal(git_head_branch(work, head, sizeof head, &err), 0);
	assert_string_equal(head, "task-1-readme");
	char *origin = NULL;
	const char *geturl[] = {"git", "remote", "get-url", "origin", NULL};
	gf_run(work, geturl, &origin);
	assert_string_equal(origin, "https://github.com/acme/web.git");
	free(origin);

	/* .git/info/exclude keeps the coder's settings out of commits. */
	assert_int_equal(git_exclude_add(work, "/.claude/settings.json", &err), 0);
	assert_int_equal(git_exclude_add(work, "/.claude/settings.json", &err), 0);
	char *ex = tu_read(work, ".git/info/exclude");
	assert_non_null(strstr(ex, "/.claude/settings.json\n"));
	/* Once, however often it is added. */
	assert_null(strstr(strstr(ex, "/.claude/settings.json") + 1, "/.claude/settings.json"));
	free(ex);

	/* The coder's work, as a script would do it. */
	tu_write(work, "NOTES.md", "notes\n");
	tu_write(work, "README.md", "# changed\n");
	char *dot = malloc(1000);
	snprintf(dot, 1000, "%s/.claude", work);
	mkdir(dot, 0700);
	free(dot);
	tu_write(work, ".claude/settings.json", "{}\n");
	const char *add[] = {"git", "add", "-A", NULL};
	const char *commit[] = {"git", "commit", "--quiet", "-m", "task(1): readme", NULL};
	assert_int_equal(gf_run(work, add, NULL), 0);
	assert_int_equal(gf_run(work, commit, NULL), 0);
	tu_write(work, "UNCOMMITTED.txt", "not part of the change\n");

	assert_int_equal(git_import(&e->g, mirror, work, "task-1-readme", on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	if (!g.ok)
		fail_msg("import: %s", g.msg);
	reset(&g);

	assert_int_equal(git_diff_summary(&e->g, mirror, "refs/remotes/origin/trunk",
	                                  GIT_TASK_REF_PREFIX "task-1-readme", on_diff, &g, &err),
	                 0);
	wait_for(&e->loop, &g);
	assert_true(g.ok);
	assert_true(g.diff);
	assert_int_equal(g.d.commits, 1);
	assert_int_equal(g.d.n_log, 1);
	assert_non_null(strstr(g.d.log[0], "task(1): readme"));
	assert_int_equal(g.d.n_files, 2); /* not the excluded settings, not UNCOMMITTED */
	assert_int_equal(g.d.files_changed, 2);
	assert_int_equal(g.d.insertions, 2);
	assert_int_equal(g.d.deletions, 1);
	assert_non_null(strstr(g.d.shortstat, "2 files changed"));
	bool saw_notes = false, saw_readme = false;
	for (size_t i = 0; i < g.d.n_files; i++) {
		saw_notes |=
		        strcmp(g.d.files[i].path, "NOTES.md") == 0 && g.d.files[i].status == 'A';
		saw_readme |=
		        strcmp(g.d.files[i].path, "README.md") == 0 && g.d.files[i].status == 'M';
	}
	assert_true(saw_notes && saw_readme);
	reset(&g);

	assert_int_equal(git_push(&e->g, mirror, e->url, "task-1-readme", NULL, on_done, &g, &err),
	                 0);
	wait_for(&e->loop, &g);
	if (!g.ok)
		fail_msg("push: %s", g.msg);
	reset(&g);
	char *pushed = gf_rev(e->remote, "refs/heads/task-1-readme");
	char *local = gf_rev(mirror, GIT_TASK_REF_PREFIX "task-1-readme");
	assert_string_equal(pushed, local);
	assert_int_equal(git_ls_remote_branch(&e->g, mirror, e->url, "task-1-readme", NULL, on_done,
	                                      &g, &err),
	                 0);
	wait_for(&e->loop, &g);
	assert_int_equal(git_parse_ls_remote(g.out, "task-1-readme", sha), 1);
	assert_string_equal(sha, pushed);
	reset(&g);

	/* A second push of the same commit is fine; a different history on the
	 * same name is refused (never forced). */
	assert_int_equal(git_push(&e->g, mirror, e->url, "task-1-readme", NULL, on_done, &g, &err),
	                 0);
	wait_for(&e->loop, &g);
	assert_true(g.ok);
	reset(&g);
	assert_int_equal(gf_remote_commit(e->remote, "task-1-readme", "OTHER.md", "x\n"), 0);
	assert_int_equal(git_push(&e->g, mirror, e->url, "task-1-readme", NULL, on_done, &g, &err),
	                 0);
	wait_for(&e->loop, &g);
	assert_false(g.ok);
	assert_non_null(strstr(g.msg, "git push"));
	reset(&g);

	/* The mirror follows the remote. */
	assert_int_equal(gf_remote_commit(e->remote, "trunk", "NEW.md", "new\n"), 0);
	assert_int_equal(git_mirror_sync(&e->g, mirror, e->url, NULL, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	assert_true(g.ok);
	reset(&g);
	char *t1 = gf_rev(e->remote, "refs/heads/trunk");
	char *t2 = gf_rev(mirror, "refs/remotes/origin/trunk");
	assert_string_equal(t1, t2);
	/* fetch --prune kept our task ref. */
	char *kept = gf_rev(mirror, GIT_TASK_REF_PREFIX "task-1-readme");
	assert_string_equal(kept, local);
	free(t1);
	free(t2);
	free(kept);
	free(pushed);
	free(local);
	free(mirror);
}

/* Does any file under dir contain needle? */
static const char *g_needle;
static int g_found;
static int scan(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag != FTW_F || sb->st_size > 8 * 1024 * 1024)
		return 0;
	char *s = tu_read(p, NULL);
	if (s && memmem(s, (size_t)sb->st_size, g_needle, strlen(g_needle))) {
		fprintf(stderr, "found the token in %s\n", p);
		g_found++;
	}
	free(s);
	return 0;
}

static void test_http_credentials(void **state)
{
	struct env *e = *state;
	struct ga_err err = {{0}};
	struct got g = {0};
	char root[700];
	snprintf(root, sizeof root, "%s/served", e->tmp);
	char repo[800];
	snprintf(repo, sizeof repo, "%s/web.git", root);
	assert_int_equal(gf_remote_new(repo, "main"), 0);
	struct gf_http *h = gf_http_start(root, TOKEN);
	assert_non_null(h);
	char url[200];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/web.git", gf_http_port(h));
	char *mirror = git_mirror_path(&e->g, "acme", "private");

	/* No credential: refused at once, no prompt waits. */
	assert_int_equal(git_mirror_sync(&e->g, mirror, url, NULL, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	assert_false(g.ok);
	assert_non_null(strstr(g.msg, "git fetch"));
	reset(&g);
	/* A wrong token: refused. */
	struct git_cred bad = {"x-access-token", "ghp_wrong"};
	assert_int_equal(git_mirror_sync(&e->g, mirror, url, &bad, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	assert_false(g.ok);
	reset(&g);
	int refused = gf_http_refused(h);
	assert_true(refused >= 2);
	/* The token, through the helper. */
	struct git_cred cred = {"x-access-token", TOKEN};
	assert_int_equal(git_mirror_sync(&e->g, mirror, url, &cred, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	if (!g.ok)
		fail_msg("authenticated fetch: %s", g.msg);
	reset(&g);
	assert_true(gf_http_authorized(h) >= 1);
	assert_int_equal(git_default_branch(&e->g, mirror, url, &cred, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	char base[64];
	assert_int_equal(git_parse_symref(g.out, base, sizeof base), 0);
	assert_string_equal(base, "main");
	reset(&g);

	char work[800];
	snprintf(work, sizeof work, "%s/http work", e->tmp);
	assert_int_equal(git_task_clone(&e->g, mirror, work, url, "main", "main", "task-2-http",
	                                on_done, &g, &err),
	                 0);
	wait_for(&e->loop, &g);
	assert_true(g.ok);
	reset(&g);
	tu_write(work, "HTTP.md", "over http\n");
	const char *add[] = {"git", "add", "-A", NULL};
	const char *commit[] = {"git", "commit", "--quiet", "-m", "task(2): http", NULL};
	assert_int_equal(gf_run(work, add, NULL), 0);
	assert_int_equal(gf_run(work, commit, NULL), 0);
	assert_int_equal(git_import(&e->g, mirror, work, "task-2-http", on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	assert_true(g.ok);
	reset(&g);
	assert_int_equal(git_push(&e->g, mirror, url, "task-2-http", &cred, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	if (!g.ok)
		fail_msg("authenticated push: %s", g.msg);
	assert_null(strstr(g.out, TOKEN));
	assert_null(strstr(g.err, TOKEN));
	reset(&g);
	char *pushed = gf_rev(repo, "refs/heads/task-2-http");
	assert_true(strlen(pushed) >= 40);
	free(pushed);

	/* The helper, asked by git itself: the remote's host gets the token,
	 * any other host nothing. */
	char in[300];
	snprintf(in, sizeof in, "protocol=http\nhost=127.0.0.1:%d\n\n", gf_http_port(h));
	const char *fill[] = {"credential", "fill", NULL};
	struct git_cmd c = {.dir = mirror,
	                    .args = fill,
	                    .cred = &cred,
	                    .remote_url = url,
	                    .stdin_data = in,
	                    .stdin_len = strlen(in)};
	assert_int_equal(git_run(&e->g, &c, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	assert_true(g.ok);
	assert_non_null(strstr(g.out, "username=x-access-token"));
	assert_non_null(strstr(g.out, "password=[redacted]")); /* redacted in what we hand back */
	reset(&g);
	const char *other = "protocol=https\nhost=evil.example\n\n";
	c.stdin_data = other;
	c.stdin_len = strlen(other);
	assert_int_equal(git_run(&e->g, &c, on_done, &g, &err), 0);
	wait_for(&e->loop, &g);
	assert_false(g.ok); /* no answer, and no terminal to ask */
	assert_null(strstr(g.out, "password="));
	reset(&g);
	/* A credential for a URL that carries user information is refused. */
	c.remote_url = "https://user:pw@example.com/x.git";
	assert_int_equal(git_run(&e->g, &c, on_done, &g, &err), -1);

	/* The token is in no file of the cache (mirror config, clone config,
	 * logs), nor in the work tree. */
	g_needle = TOKEN;
	g_found = 0;
	nftw(e->cache, scan, 16, FTW_PHYS);
	nftw(work, scan, 16, FTW_PHYS);
	assert_int_equal(g_found, 0);
	char *cfg = tu_read(mirror, "config");
	assert_non_null(strstr(cfg, url)); /* the URL as given, no userinfo */
	free(cfg);
	gf_http_stop(h);
	free(mirror);
}

static void test_parsers(void **state)
{
	(void)state;
	char b[64];
	assert_int_equal(git_parse_symref("ref: refs/heads/dev\tHEAD\nabc\tHEAD\n", b, sizeof b),
	                 0);
	assert_string_equal(b, "dev");
	assert_int_equal(git_parse_symref("abc\tHEAD\n", b, sizeof b), -1);
	assert_int_equal(git_parse_symref("ref: refs/heads/-x\tHEAD\n", b, sizeof b), -1);
	char sha[GIT_SHA_MAX + 1];
	const char *ls = "1111111111111111111111111111111111111111\trefs/heads/task-1-a-b\n"
	                 "2222222222222222222222222222222222222222\trefs/heads/task-1-a\n";
	assert_int_equal(git_parse_ls_remote(ls, "task-1-a", sha), 1);
	assert_string_equal(sha, "2222222222222222222222222222222222222222");
	assert_int_equal(git_parse_ls_remote(ls, "task-1", sha), 0);
	struct git_diff d = {0};
	git_parse_shortstat(" 1 file changed, 3 insertions(+)\n", &d);
	assert_int_equal(d.files_changed, 1);
	assert_int_equal(d.insertions, 3);
	assert_int_equal(d.deletions, 0);
	git_parse_shortstat(" 12 files changed, 1 deletion(-)", &d);
	assert_int_equal(d.files_changed, 12);
	assert_int_equal(d.deletions, 1);
	const char z[] = "M\0a b.c\0R087\0old.c\0new.c\0A\0x\0D\0cut";
	git_parse_name_status(z, sizeof z - 1, &d); /* the last record is cut */
	assert_int_equal(d.n_files, 3);
	assert_string_equal(d.files[0].path, "a b.c");
	assert_int_equal(d.files[1].status, 'R');
	assert_string_equal(d.files[1].old_path, "old.c");
	assert_string_equal(d.files[1].path, "new.c");
	git_diff_free(&d);
	assert_true(git_valid_branch("task-3-login-a2"));
	assert_false(git_valid_branch("-x"));
	assert_false(git_valid_branch("a..b"));
	assert_false(git_valid_branch("a b"));
	assert_false(git_valid_branch("x.lock"));
	assert_false(git_valid_branch(""));
	char host[64];
	assert_int_equal(git_url_host("https://github.com/a/b.git", host, sizeof host), 0);
	assert_string_equal(host, "github.com");
	assert_int_equal(git_url_host("http://127.0.0.1:8080/a", host, sizeof host), 0);
	assert_string_equal(host, "127.0.0.1:8080");
	assert_int_equal(git_url_host("https://u:p@github.com/a", host, sizeof host), -1);
	assert_int_equal(git_url_host("ssh://github.com/a", host, sizeof host), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parsers),
	        cmocka_unit_test(test_local_flow),
	        cmocka_unit_test(test_http_credentials),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
