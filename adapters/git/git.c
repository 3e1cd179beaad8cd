/* git — git commands on the loop with a private configuration and a
 * credential helper scoped to one command (see git.h). */
#include "adapters/git/git.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define MAX_ARGS  48
#define MAX_STEPS 8

/* The credential helper git runs through sh for "get", "store" and
 * "erase": it answers "get" for the expected host only, from variables in
 * its own environment; everything else gets nothing. */
static const char CRED_HELPER[] =
        "!f() { test \"$1\" = get || exit 0; h=; "
        "while IFS= read -r l; do case \"$l\" in host=*) h=\"${l#host=}\";; '') break;; esac; "
        "done; test -n \"$h\" && test \"$h\" = \"$GA_GIT_HOST\" || exit 0; "
        "printf 'username=%s\\npassword=%s\\n' \"$GA_GIT_USERNAME\" \"$GA_GIT_TOKEN\"; }; f";

int git_ctx_init(struct git_ctx *g, uv_loop_t *loop, const char *cache_dir, struct ga_err *err)
{
	memset(g, 0, sizeof *g);
	if (!cache_dir || cache_dir[0] != '/')
		return err_set(err, "the git cache directory must be an absolute path, not '%s'",
		               cache_dir ? cache_dir : "(none)");
	if (fsx_mkdir_p(cache_dir, err) != 0)
		return -1;
	char *home = fsx_join(cache_dir, "home");
	if (fsx_mkdir_p(home, err) != 0) {
		free(home);
		return -1;
	}
	g->loop = loop;
	g->program = xstrdup("git");
	g->cache = xstrdup(cache_dir);
	g->home = home;
	return 0;
}

void git_ctx_free(struct git_ctx *g)
{
	if (!g)
		return;
	free(g->program);
	free(g->cache);
	free(g->home);
	memset(g, 0, sizeof *g);
}

/* ---- names ----------------------------------------------------------------------- */

static bool plain_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 100 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return true;
}

char *git_mirror_path(const struct git_ctx *g, const char *owner, const char *repo)
{
	if (!owner || !repo || !plain_name(owner) || !plain_name(repo))
		return NULL;
	return xasprintf("%s/mirrors/%s/%s.git", g->cache, owner, repo);
}

bool git_valid_branch(const char *b)
{
	size_t n = b ? strlen(b) : 0;
	if (n == 0 || n > GIT_REF_MAX || b[0] == '-' || b[0] == '/' || b[n - 1] == '/' ||
	    b[n - 1] == '.' || strstr(b, "..") || strstr(b, "//") || strstr(b, "@{") ||
	    (n >= 5 && strcmp(b + n - 5, ".lock") == 0))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)b[i]) && !strchr("._/-", b[i]))
			return false;
	return true;
}

int git_url_host(const char *url, char *host, size_t cap)
{
	const char *p = NULL;
	if (strncmp(url, "https://", 8) == 0)
		p = url + 8;
	else if (strncmp(url, "http://", 7) == 0)
		p = url + 7;
	if (!p)
		return -1;
	size_t n = strcspn(p, "/?#");
	if (n == 0 || n >= cap || memchr(p, '@', n))
		return -1;
	memcpy(host, p, n);
	host[n] = '\0';
	return 0;
}

/* ---- one command ------------------------------------------------------------------ */

struct job {
	git_done_fn done;
	void *ud;
	char *token;   /* for redaction; NULL without a credential */
	char what[64]; /* "git fetch" */
	uint64_t timeout_ms;
};

/* A copy of s with every occurrence of secret replaced. */
static char *redact(const char *s, size_t len, const char *secret, size_t *out_len)
{
	struct strbuf sb;
	sb_init(&sb, 2 * len + 64);
	size_t sl = secret ? strlen(secret) : 0;
	for (size_t i = 0; i < len;) {
		if (sl && i + sl <= len && memcmp(s + i, secret, sl) == 0) {
			sb_puts(&sb, "[redacted]");
			i += sl;
		} else {
			sb_putc(&sb, s[i++]);
		}
	}
	*out_len = sb.len;
	return sb_detach(&sb);
}

static void last_line(const char *s, size_t len, char *buf, size_t cap)
{
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	size_t start = len;
	while (start && s[start - 1] != '\n')
		start--;
	err_fmt(buf, cap, "%.*s", (int)(len - start), s + start);
}

static void job_done(void *ud, const struct spawn_result *sr)
{
	struct job *j = ud;
	struct git_result r = {0};
	size_t ol, el;
	char *out = redact(sr->out, sr->out_len, j->token, &ol);
	char *err = redact(sr->err, sr->err_len, j->token, &el);
	r.ok = spawn_ok(sr);
	r.exit_status = sr->exit_status;
	r.timed_out = sr->timed_out;
	r.out = out;
	r.out_len = ol;
	r.err = err;
	r.err_len = el;
	r.elapsed_ms = sr->elapsed_ms;
	if (!r.ok) {
		char how[GA_ERR_MSG_MAX], line[300];
		spawn_describe(sr, j->timeout_ms, how, sizeof how);
		last_line(err, el, line, sizeof line);
		err_fmt(r.msg, sizeof r.msg, "%s: %s%s%s", j->what, how, line[0] ? ": " : "", line);
	}
	j->done(j->ud, &r);
	free(out);
	free(err);
	free(j->token);
	free(j);
}

int git_run(struct git_ctx *g, const struct git_cmd *c, git_done_fn done, void *ud,
            struct ga_err *err)
{
	const char *argv[MAX_ARGS + 1];
	size_t n = 0;
	char host[256] = "";
	if (c->cred) {
		if (!c->remote_url || git_url_host(c->remote_url, host, sizeof host) != 0)
			return err_set(err,
			               "git: a credential needs an http(s) URL without user "
			               "information, not '%s'",
			               c->remote_url ? c->remote_url : "(none)");
		if (!c->cred->username || !c->cred->token || strchr(c->cred->token, '\n') ||
		    strchr(c->cred->username, '\n'))
			return err_set(err, "git: the credential needs a username and a token on "
			                    "one line each");
	}
	if ((c->ident_name && strchr(c->ident_name, '\n')) ||
	    (c->ident_email && strchr(c->ident_email, '\n')))
		return err_set(err, "git: an identity may not contain a line break");
	char *owned[8];
	size_t n_owned = 0;
	argv[n++] = g->program;
	argv[n++] = "-c";
	argv[n++] = "core.hooksPath=/dev/null";
	argv[n++] = "-c";
	argv[n++] = "core.fsmonitor=false";
	if (c->cred) {
		argv[n++] = "-c";
		argv[n++] = "credential.helper=";
		argv[n++] = "-c";
		argv[n++] = owned[n_owned++] = xasprintf("credential.helper=%s", CRED_HELPER);
		argv[n++] = "-c";
		argv[n++] = "credential.useHttpPath=false";
	}
	if (c->ident_name && c->ident_email) {
		argv[n++] = "-c";
		argv[n++] = owned[n_owned++] = xasprintf("user.name=%s", c->ident_name);
		argv[n++] = "-c";
		argv[n++] = owned[n_owned++] = xasprintf("user.email=%s", c->ident_email);
	}
	size_t first_arg = n;
	for (size_t i = 0; c->args && c->args[i]; i++) {
		if (n >= MAX_ARGS) {
			for (size_t k = 0; k < n_owned; k++)
				free(owned[k]);
			return err_set(err, "git: more than %d arguments", MAX_ARGS);
		}
		argv[n++] = c->args[i];
	}
	argv[n] = NULL;
	if (n == first_arg) {
		for (size_t k = 0; k < n_owned; k++)
			free(owned[k]);
		return err_set(err, "git: no subcommand");
	}

	const char *env[16];
	size_t ne = 0;
	char *home = xasprintf("HOME=%s", g->home);
	env[ne++] = "PATH=" GIT_PATH;
	env[ne++] = home;
	env[ne++] = "GIT_CONFIG_GLOBAL=/dev/null";
	env[ne++] = "GIT_CONFIG_NOSYSTEM=1";
	env[ne++] = "GIT_TERMINAL_PROMPT=0";
	env[ne++] = "GIT_ALLOW_PROTOCOL=file:http:https";
	env[ne++] = "LC_ALL=C";
	env[ne++] = "LANG=C";
	char *eu = NULL, *et = NULL, *eh = NULL;
	if (c->cred) {
		env[ne++] = eu = xasprintf("GA_GIT_USERNAME=%s", c->cred->username);
		env[ne++] = et = xasprintf("GA_GIT_TOKEN=%s", c->cred->token);
		env[ne++] = eh = xasprintf("GA_GIT_HOST=%s", host);
	}
	env[ne] = NULL;

	struct job *j = xcalloc(1, sizeof *j);
	j->done = done;
	j->ud = ud;
	j->token = c->cred ? xstrdup(c->cred->token) : NULL;
	j->timeout_ms = c->timeout_ms ? c->timeout_ms
	                              : (c->cred ? GIT_REMOTE_TIMEOUT_MS : GIT_LOCAL_TIMEOUT_MS);
	snprintf(j->what, sizeof j->what, "git %s", argv[first_arg]);
	struct spawn_opts so = {.file = g->program,
	                        .argv = argv,
	                        .env = env,
	                        .cwd = c->dir,
	                        .timeout_ms = j->timeout_ms,
	                        .max_output = GIT_MAX_OUTPUT,
	                        .keep_head = c->keep_head,
	                        .stdin_data = c->stdin_data,
	                        .stdin_len = c->stdin_len};
	struct spawn *sp = spawn_start(g->loop, &so, job_done, j, err);
	free(home);
	free(eu);
	if (et) {
		explicit_bzero(et, strlen(et));
		free(et);
	}
	free(eh);
	for (size_t k = 0; k < n_owned; k++)
		free(owned[k]);
	if (!sp) {
		free(j->token);
		free(j);
		return -1;
	}
	return 0;
}

/* ---- sequences of commands ---------------------------------------------------------- */

struct seq;
typedef void (*take_fn)(struct seq *s, const struct git_result *r);

struct step {
	char *args[16];
	char *dir;
	bool remote;
	take_fn take; /* reads the output of a successful step */
};

struct seq {
	struct git_ctx *g;
	struct step steps[MAX_STEPS];
	size_t n, at;
	char *url;
	char *user;
	char *token;
	git_done_fn done;
	git_diff_fn diff_done;
	void *ud;
	struct git_diff diff;
};

static struct step *add_step(struct seq *s, const char *dir, bool remote, ...)
{
	struct step *st = &s->steps[s->n++];
	st->dir = xstrdup(dir);
	st->remote = remote;
	va_list ap;
	va_start(ap, remote);
	size_t k = 0;
	for (const char *a = va_arg(ap, const char *); a && k < 15; a = va_arg(ap, const char *))
		st->args[k++] = xstrdup(a);
	va_end(ap);
	st->args[k] = NULL;
	return st;
}

static void seq_free(struct seq *s)
{
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; s->steps[i].args[k]; k++)
			free(s->steps[i].args[k]);
		free(s->steps[i].dir);
	}
	free(s->url);
	free(s->user);
	if (s->token) {
		explicit_bzero(s->token, strlen(s->token));
		free(s->token);
	}
	git_diff_free(&s->diff);
	free(s);
}

static void seq_next(struct seq *s);

static void seq_finish(struct seq *s, const struct git_result *r)
{
	if (s->diff_done)
		s->diff_done(s->ud, r, r->ok ? &s->diff : NULL);
	else
		s->done(s->ud, r);
	seq_free(s);
}

static void seq_step_done(void *ud, const struct git_result *r)
{
	struct seq *s = ud;
	struct step *st = &s->steps[s->at];
	if (!r->ok || s->at + 1 == s->n) {
		if (r->ok && st->take)
			st->take(s, r);
		seq_finish(s, r);
		return;
	}
	if (st->take)
		st->take(s, r);
	s->at++;
	seq_next(s);
}

/* Runs the current step. -1 with err when git_run refused it. */
static int run_step(struct seq *s, struct ga_err *err)
{
	struct step *st = &s->steps[s->at];
	struct git_cred cred = {s->user, s->token};
	struct git_cmd c = {.dir = st->dir,
	                    .args = (const char *const *)st->args,
	                    .cred = st->remote && s->token ? &cred : NULL,
	                    .remote_url = s->url,
	                    .keep_head = st->take != NULL};
	return git_run(s->g, &c, seq_step_done, s, err);
}

static void seq_next(struct seq *s)
{
	struct ga_err err = {{0}};
	if (run_step(s, &err) != 0) {
		struct git_result r = {0};
		err_fmt(r.msg, sizeof r.msg, "%s", err.msg);
		r.out = r.err = "";
		seq_finish(s, &r);
	}
}

static struct seq *seq_new(struct git_ctx *g, const char *url, const struct git_cred *cred,
                           git_done_fn done, void *ud)
{
	struct seq *s = xcalloc(1, sizeof *s);
	s->g = g;
	s->url = url ? xstrdup(url) : NULL;
	if (cred && cred->token) {
		s->user = xstrdup(cred->username ? cred->username : "");
		s->token = xstrdup(cred->token);
	}
	s->done = done;
	s->ud = ud;
	return s;
}

/* Starts the first step; a step that cannot start ends the sequence with
 * its reason from the loop (never from inside this call) — git_run itself
 * only refuses bad arguments, which the callers below check first. */
static int seq_start(struct seq *s, struct ga_err *err)
{
	if (run_step(s, err) != 0) {
		seq_free(s);
		return -1;
	}
	return 0;
}

static int check_remote(const char *url, const struct git_cred *cred, struct ga_err *err)
{
	char host[256];
	if (!url || !*url)
		return err_set(err, "git: no remote URL");
	if (strncmp(url, "file://", 7) != 0 && git_url_host(url, host, sizeof host) != 0)
		return err_set(err,
		               "git: the remote URL must be http(s) without user information "
		               "(or file://), not '%s'",
		               url);
	if (cred && cred->token && strncmp(url, "file://", 7) == 0)
		return err_set(err, "git: a credential is only given to http(s) remotes");
	return 0;
}

int git_mirror_sync(struct git_ctx *g, const char *mirror, const char *url,
                    const struct git_cred *cred, git_done_fn done, void *ud, struct ga_err *err)
{
	if (check_remote(url, cred, err) != 0)
		return -1;
	char *head = fsx_join(mirror, "HEAD");
	bool exists = fsx_exists(head);
	free(head);
	if (!exists && fsx_mkdir_p(mirror, err) != 0)
		return -1;
	struct seq *s = seq_new(g, url, cred, done, ud);
	if (!exists) {
		add_step(s, mirror, false, "init", "--quiet", "--bare", NULL);
		add_step(s, mirror, false, "config", "gc.auto", "0", NULL);
		add_step(s, mirror, false, "config", "gc.pruneExpire", "never", NULL);
		add_step(s, mirror, false, "config", "remote.origin.fetch",
		         "+refs/heads/*:refs/remotes/origin/*", NULL);
	}
	/* The URL is set every time: a renamed repository keeps its mirror. */
	add_step(s, mirror, false, "config", "remote.origin.url", url, NULL);
	add_step(s, mirror, true, "fetch", "--quiet", "--prune", "--no-tags", "origin", NULL);
	return seq_start(s, err);
}

int git_default_branch(struct git_ctx *g, const char *mirror, const char *url,
                       const struct git_cred *cred, git_done_fn done, void *ud, struct ga_err *err)
{
	if (check_remote(url, cred, err) != 0)
		return -1;
	struct seq *s = seq_new(g, url, cred, done, ud);
	add_step(s, mirror, true, "ls-remote", "--symref", "origin", "HEAD", NULL);
	return seq_start(s, err);
}

int git_ls_remote_branch(struct git_ctx *g, const char *mirror, const char *url, const char *branch,
                         const struct git_cred *cred, git_done_fn done, void *ud,
                         struct ga_err *err)
{
	if (check_remote(url, cred, err) != 0)
		return -1;
	if (!git_valid_branch(branch))
		return err_set(err, "git: '%s' is not a branch name this agent uses", branch);
	char *ref = xasprintf("refs/heads/%s", branch);
	struct seq *s = seq_new(g, url, cred, done, ud);
	add_step(s, mirror, true, "ls-remote", "--heads", "origin", ref, NULL);
	free(ref);
	return seq_start(s, err);
}

int git_task_clone(struct git_ctx *g, const char *mirror, const char *work, const char *url,
                   const char *base, const char *start, const char *branch, git_done_fn done,
                   void *ud, struct ga_err *err)
{
	if (check_remote(url, NULL, err) != 0)
		return -1;
	if (!git_valid_branch(base) || !git_valid_branch(start) || !git_valid_branch(branch))
		return err_set(err, "git: a branch name is not one this agent uses (%s, %s, %s)",
		               base, start, branch);
	if (work[0] != '/')
		return err_set(err, "git: the work directory must be absolute, not '%s'", work);
	if (fsx_exists(work))
		return err_set(err, "git: %s already exists", work);
	char *origin_head = xasprintf("refs/remotes/origin/%s", base);
	char *start_ref = xasprintf("refs/remotes/origin/%s", start);
	struct seq *s = seq_new(g, url, NULL, done, ud);
	add_step(s, g->cache, false, "clone", "--quiet", "--shared", "--no-checkout", "--", mirror,
	         work, NULL);
	add_step(s, work, false, "fetch", "--quiet", "--no-tags", mirror,
	         "+refs/remotes/origin/*:refs/remotes/origin/*", NULL);
	add_step(s, work, false, "remote", "set-url", "origin", url, NULL);
	add_step(s, work, false, "symbolic-ref", "refs/remotes/origin/HEAD", origin_head, NULL);
	add_step(s, work, false, "checkout", "--quiet", "--no-track", "-b", branch, start_ref,
	         NULL);
	free(origin_head);
	free(start_ref);
	return seq_start(s, err);
}

int git_import(struct git_ctx *g, const char *mirror, const char *work, const char *branch,
               git_done_fn done, void *ud, struct ga_err *err)
{
	if (work[0] != '/')
		return err_set(err, "git: the work directory must be absolute, not '%s'", work);
	if (!git_valid_branch(branch))
		return err_set(err, "git: '%s' is not a branch name this agent uses", branch);
	char *spec = xasprintf("+refs/heads/%s:" GIT_TASK_REF_PREFIX "%s", branch, branch);
	struct seq *s = seq_new(g, NULL, NULL, done, ud);
	/* A path, not a URL: a local fetch still runs git-upload-pack in the
	 * source repository, and our -c options (GIT_CONFIG_PARAMETERS)
	 * override its configuration there. */
	add_step(s, mirror, false, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", work,
	         spec, NULL);
	free(spec);
	return seq_start(s, err);
}

int git_push(struct git_ctx *g, const char *mirror, const char *url, const char *branch,
             const struct git_cred *cred, git_done_fn done, void *ud, struct ga_err *err)
{
	if (check_remote(url, cred, err) != 0)
		return -1;
	if (!git_valid_branch(branch))
		return err_set(err, "git: '%s' is not a branch name this agent uses", branch);
	char *spec = xasprintf(GIT_TASK_REF_PREFIX "%s:refs/heads/%s", branch, branch);
	struct seq *s = seq_new(g, url, cred, done, ud);
	add_step(s, mirror, true, "push", "--porcelain", "origin", spec, NULL);
	free(spec);
	return seq_start(s, err);
}

/* ---- the diff summary ----------------------------------------------------------------- */

static void take_count(struct seq *s, const struct git_result *r)
{
	s->diff.commits = (size_t)strtoul(r->out, NULL, 10);
}

static void take_log(struct seq *s, const struct git_result *r)
{
	const char *p = r->out;
	while (*p && s->diff.n_log < GIT_MAX_LOG) {
		size_t n = strcspn(p, "\n");
		if (n)
			s->diff.log[s->diff.n_log++] = xstrndup(p, n);
		p += n;
		if (*p)
			p++;
	}
}

static void take_shortstat(struct seq *s, const struct git_result *r)
{
	git_parse_shortstat(r->out, &s->diff);
}

static void take_names(struct seq *s, const struct git_result *r)
{
	git_parse_name_status(r->out, r->out_len, &s->diff);
}

int git_diff_summary(struct git_ctx *g, const char *repo, const char *base, const char *head,
                     git_diff_fn done, void *ud, struct ga_err *err)
{
	if (!base || !head || base[0] == '-' || head[0] == '-' || strstr(base, "..") ||
	    strstr(head, ".."))
		return err_set(err, "git: bad revisions for a diff ('%s', '%s')", base ? base : "",
		               head ? head : "");
	char *two = xasprintf("%s..%s", base, head);
	char *three = xasprintf("%s...%s", base, head);
	char *count_fmt = xasprintf("-n%d", GIT_MAX_LOG);
	struct seq *s = seq_new(g, NULL, NULL, NULL, ud);
	s->diff_done = done;
	add_step(s, repo, false, "rev-list", "--count", two, "--", NULL)->take = take_count;
	add_step(s, repo, false, "log", "--no-decorate", "--format=%h %s", count_fmt, two, "--",
	         NULL)
	        ->take = take_log;
	add_step(s, repo, false, "diff", "--no-ext-diff", "--no-textconv", "--shortstat", three,
	         "--", NULL)
	        ->take = take_shortstat;
	add_step(s, repo, false, "diff", "--no-ext-diff", "--no-textconv", "--name-status", "-z",
	         "-M", three, "--", NULL)
	        ->take = take_names;
	free(two);
	free(three);
	free(count_fmt);
	return seq_start(s, err);
}

void git_diff_free(struct git_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_log; i++)
		free(d->log[i]);
	for (size_t i = 0; i < d->n_files; i++) {
		free(d->files[i].path);
		free(d->files[i].old_path);
	}
	free(d->files);
	memset(d, 0, sizeof *d);
}

/* ---- parsers ---------------------------------------------------------------------------- */

int git_parse_symref(const char *out, char *branch, size_t cap)
{
	for (const char *p = out; p && *p;) {
		size_t n = strcspn(p, "\n");
		static const char pre[] = "ref: refs/heads/";
		if (n > sizeof pre - 1 && strncmp(p, pre, sizeof pre - 1) == 0) {
			const char *b = p + sizeof pre - 1;
			size_t bl = strcspn(b, "\t\n");
			if (bl && bl < cap && b[bl] == '\t' &&
			    strncmp(b + bl + 1, "HEAD", 4) == 0) {
				memcpy(branch, b, bl);
				branch[bl] = '\0';
				return git_valid_branch(branch) ? 0 : -1;
			}
		}
		p += n;
		if (*p)
			p++;
	}
	return -1;
}

int git_parse_ls_remote(const char *out, const char *branch, char sha[GIT_SHA_MAX + 1])
{
	char want[GIT_REF_MAX + 16];
	snprintf(want, sizeof want, "refs/heads/%s", branch);
	for (const char *p = out; p && *p;) {
		size_t n = strcspn(p, "\n");
		const char *tab = memchr(p, '\t', n);
		if (tab && (size_t)(tab - p) <= GIT_SHA_MAX && (size_t)(tab - p) >= 40 &&
		    (size_t)(p + n - tab - 1) == strlen(want) &&
		    strncmp(tab + 1, want, strlen(want)) == 0) {
			memcpy(sha, p, (size_t)(tab - p));
			sha[tab - p] = '\0';
			return 1;
		}
		p += n;
		if (*p)
			p++;
	}
	sha[0] = '\0';
	return 0;
}

/* The number before `word` in a shortstat line, 0 when absent. */
static int stat_number(const char *line, const char *word)
{
	const char *w = strstr(line, word);
	if (!w)
		return 0;
	while (w > line && w[-1] == ' ')
		w--;
	const char *d = w;
	while (d > line && isdigit((unsigned char)d[-1]))
		d--;
	return d < w ? atoi(d) : 0;
}

void git_parse_shortstat(const char *out, struct git_diff *d)
{
	while (*out && isspace((unsigned char)*out))
		out++;
	size_t n = strcspn(out, "\n");
	err_fmt(d->shortstat, sizeof d->shortstat, "%.*s", (int)n, out);
	d->files_changed = stat_number(d->shortstat, "file");
	d->insertions = stat_number(d->shortstat, "insertion");
	d->deletions = stat_number(d->shortstat, "deletion");
}

/* One NUL-terminated field at out[*i]; NULL when the output was cut before
 * its end (the bounded capture keeps the head). */
static const char *z_field(const char *out, size_t len, size_t *i)
{
	if (*i >= len)
		return NULL;
	const char *f = out + *i;
	size_t n = strnlen(f, len - *i);
	if (n == len - *i)
		return NULL;
	*i += n + 1;
	return f;
}

void git_parse_name_status(const char *out, size_t len, struct git_diff *d)
{
	size_t i = 0;
	for (;;) {
		const char *code = z_field(out, len, &i);
		if (!code || !code[0])
			break;
		bool two = code[0] == 'R' || code[0] == 'C';
		const char *a = z_field(out, len, &i);
		const char *b = two ? z_field(out, len, &i) : NULL;
		if (!a || (two && !b))
			break;
		if (d->n_files >= GIT_MAX_FILES) {
			d->files_dropped++;
			continue;
		}
		d->files = xreallocarray(d->files, d->n_files + 1, sizeof *d->files);
		struct git_file *f = &d->files[d->n_files++];
		f->status = code[0];
		f->path = xstrdup(two ? b : a);
		f->old_path = two ? xstrdup(a) : NULL;
	}
}

/* ---- files of the work tree, read without trusting it ----------------------------------- */

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void git_remove_tree(const char *path)
{
	if (path && *path)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int git_exclude_add(const char *work, const char *pattern, struct ga_err *err)
{
	if (strchr(pattern, '\n') || !*pattern)
		return err_set(err, "git: an exclude pattern is one non-empty line");
	char *info = xasprintf("%s/.git/info", work);
	char *path = xasprintf("%s/exclude", info);
	int rc = -1;
	if (fsx_mkdir_p(info, err) != 0)
		goto out;
	size_t len = 0;
	struct ga_err rerr = {{0}};
	char *cur = fsx_read_file(path, 1024 * 1024, &len, &rerr);
	if (!cur && errno != ENOENT) {
		err_set(err, "%s", rerr.msg);
		goto out;
	}
	bool present = false;
	for (const char *p = cur; p && *p && !present;) {
		size_t n = strcspn(p, "\n");
		present = n == strlen(pattern) && strncmp(p, pattern, n) == 0;
		p += n;
		if (*p)
			p++;
	}
	if (present) {
		rc = 0;
	} else {
		struct strbuf sb = {0};
		if (cur && len && cur[len - 1] != '\n')
			sb_putc(&sb, '\n');
		sb_printf(&sb, "%s\n", pattern);
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, sb.buf, sb.len) != (ssize_t)sb.len)
			err_set(err, "cannot write %s: %s", path, strerror(errno));
		else
			rc = 0;
		if (fd >= 0)
			close(fd);
		sb_free(&sb);
	}
	free(cur);
out:
	free(info);
	free(path);
	return rc;
}

int git_head_branch(const char *work, char *out, size_t cap, struct ga_err *err)
{
	char *path = xasprintf("%s/.git/HEAD", work);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		err_set(err, "%s is not a regular file%s%s", path, fd < 0 ? ": " : "",
		        fd < 0 ? strerror(errno) : "");
		if (fd >= 0)
			close(fd);
		free(path);
		return -1;
	}
	char buf[GIT_REF_MAX + 32];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	free(path);
	if (n <= 0)
		return err_set(err, "the clone's HEAD is empty");
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	static const char pre[] = "ref: refs/heads/";
	if (strncmp(buf, pre, sizeof pre - 1) != 0)
		return err_set(err, "the clone's HEAD is not on a branch ('%.60s')", buf);
	const char *b = buf + sizeof pre - 1;
	if (!git_valid_branch(b) || strlen(b) >= cap)
		return err_set(err, "the clone's HEAD names '%.60s'", b);
	snprintf(out, cap, "%s", b);
	return 0;
}
