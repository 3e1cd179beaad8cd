/*
 * ghfake_git — real git under the fake: a runner for git commands (spawned
 * with a clean environment, output bounded, a timeout), the bare
 * repositories, commits made with git fast-import and commit-tree, and the
 * smart-HTTP endpoints served by git's own `git http-backend` as a CGI.
 *
 * The runner spawns with posix_spawnp from libmicrohttpd's threads. Every
 * descriptor it opens is close-on-exec, so a child never inherits another
 * child's pipe. Stdin is one end of a socketpair written with MSG_NOSIGNAL:
 * a child that exits without reading all of it cannot raise SIGPIPE in the
 * test process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base64.h"
#include "tests/fakes/github/ghfake_int.h"

extern char **environ;

#define ENV_MAX 48

/* --- the runner ------------------------------------------------------------ */

struct envb {
	char *v[ENV_MAX + 1];
	size_t n;
};

static void env_put(struct envb *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void env_put(struct envb *e, const char *fmt, ...)
{
	if (e->n == ENV_MAX)
		gf_die("a git run needs more than %d environment variables", ENV_MAX);
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&e->v[e->n], fmt, ap) < 0)
		gf_die("out of memory");
	va_end(ap);
	e->n++;
	e->v[e->n] = NULL;
}

static void env_free(struct envb *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	e->n = 0;
}

/* A clean environment: nothing of the test's own git configuration, its
 * home or its locale reaches the fake's git. */
static void env_base(struct ghfake *f, struct envb *e, const struct gf_repo *r)
{
	const char *path = getenv("PATH");
	env_put(e, "PATH=%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	env_put(e, "HOME=%s/home", f->dir);
	env_put(e, "GIT_CONFIG_NOSYSTEM=1");
	env_put(e, "GIT_CONFIG_GLOBAL=/dev/null");
	env_put(e, "GIT_TERMINAL_PROMPT=0");
	env_put(e, "LC_ALL=C");
	env_put(e, "TZ=UTC");
	if (r) {
		char dir[700];
		gf_repo_path(f, r, dir, sizeof dir);
		env_put(e, "GIT_DIR=%s", dir);
	}
}

static void buf_add(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 4096;
		while (c < *len + n + 1)
			c *= 2;
		*buf = gf_grow(*buf, c, 1);
		*cap = c;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

int gf_git(struct ghfake *f, const struct gf_run *run, struct gf_out *o)
{
	memset(o, 0, sizeof *o);
	o->status = -1;
	o->out = gf_dup("");
	o->err = gf_dup("");
	size_t out_cap = 1, err_cap = 1;
	size_t max = run->out_max ? run->out_max : GHFAKE_GIT_OUTPUT_MAX;
	struct envb e;
	memset(&e, 0, sizeof e);
	env_base(f, &e, run->repo);
	for (size_t i = 0; run->env && run->env[i]; i++)
		env_put(&e, "%s", run->env[i]);

	int sv[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
	    pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
		fprintf(stderr, "ghfake: cannot make pipes for git: %s\n", strerror(errno));
		goto fail;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	posix_spawn_file_actions_addchdir_np(&fa, run->cwd ? run->cwd : f->dir);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&at, &none);
	sigset_t dfl;
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int rc = posix_spawnp(&pid, run->argv[0], &fa, &at, (char *const *)run->argv, e.v);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	close(po[1]);
	close(pe[1]);
	sv[1] = po[1] = pe[1] = -1;
	if (rc != 0) {
		fprintf(stderr, "ghfake: cannot run %s: %s\n", run->argv[0], strerror(rc));
		goto fail;
	}
	size_t sent = 0, in_len = run->in ? run->in_len : 0;
	if (in_len == 0)
		shutdown(sv[0], SHUT_WR);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	int64_t deadline = time_mono_ms() + GHFAKE_GIT_TIMEOUT_MS;
	bool out_open = true, err_open = true, killed = false;
	while (out_open || err_open) {
		struct pollfd p[3];
		nfds_t np = 0;
		int io = -1, ie = -1, ii = -1;
		if (out_open) {
			io = (int)np;
			p[np++] = (struct pollfd){.fd = po[0], .events = POLLIN};
		}
		if (err_open) {
			ie = (int)np;
			p[np++] = (struct pollfd){.fd = pe[0], .events = POLLIN};
		}
		if (sent < in_len) {
			ii = (int)np;
			p[np++] = (struct pollfd){.fd = sv[0], .events = POLLOUT};
		}
		int64_t left = deadline - time_mono_ms();
		if (left <= 0) {
			fprintf(stderr, "ghfake: %s %s ran longer than %d ms; killed\n",
			        run->argv[0], run->argv[1] ? run->argv[1] : "",
			        GHFAKE_GIT_TIMEOUT_MS);
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		if (poll(p, np, (int)(left > 1000 ? 1000 : left)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		char chunk[65536];
		if (io >= 0 && p[io].revents) {
			ssize_t n = read(po[0], chunk, sizeof chunk);
			if (n > 0 && !o->truncated) {
				if (o->out_len + (size_t)n > max) {
					o->truncated = true;
					kill(pid, SIGKILL);
					killed = true;
				} else {
					buf_add(&o->out, &o->out_len, &out_cap, chunk, (size_t)n);
				}
			} else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
				out_open = false;
			}
		}
		if (ie >= 0 && p[ie].revents) {
			ssize_t n = read(pe[0], chunk, sizeof chunk);
			if (n > 0) {
				if (o->err_len < 65536) /* stderr is for messages: keep the start */
					buf_add(&o->err, &o->err_len, &err_cap, chunk, (size_t)n);
			} else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
				err_open = false;
			}
		}
		if (ii >= 0 && p[ii].revents) {
			ssize_t n = send(sv[0], (const char *)run->in + sent, in_len - sent,
			                 MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == in_len) {
				shutdown(sv[0], SHUT_WR);
				sent = in_len;
			}
		}
	}
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	o->status = !killed && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	close(sv[0]);
	close(po[0]);
	close(pe[0]);
	env_free(&e);
	return o->status;
fail:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	env_free(&e);
	return -1;
}

void gf_out_free(struct gf_out *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

static void trim(char *s)
{
	size_t n = strcspn(s, "\r\n");
	s[n] = '\0';
}

int gf_git_line(struct ghfake *f, const struct gf_repo *r, const char *const *argv, char *line,
                size_t cap)
{
	struct gf_out o;
	struct gf_run run = {.argv = argv, .repo = r};
	int rc = gf_git(f, &run, &o);
	if (line && cap) {
		snprintf(line, cap, "%s", o.out);
		trim(line);
	}
	gf_out_free(&o);
	return rc == 0 ? 0 : -1;
}

int gf_rev(struct ghfake *f, const struct gf_repo *r, const char *name, char sha[GF_SHA_LEN + 1])
{
	if (!r->git || !name || !*name || name[0] == '-')
		return -1;
	char spec[GF_REF_MAX + 32];
	snprintf(spec, sizeof spec, "%s^{commit}", name);
	const char *argv[] = {"git", "rev-parse", "--verify", "--quiet", "--end-of-options",
	                      spec,  NULL};
	char line[128];
	if (gf_git_line(f, r, argv, line, sizeof line) != 0 || strlen(line) != GF_SHA_LEN)
		return -1;
	memcpy(sha, line, GF_SHA_LEN + 1);
	return 0;
}

bool gf_branch_exists(struct ghfake *f, const struct gf_repo *r, const char *branch)
{
	char ref[GF_REF_MAX + 16], sha[GF_SHA_LEN + 1];
	snprintf(ref, sizeof ref, "refs/heads/%s", branch);
	return gf_rev(f, r, ref, sha) == 0;
}

void gf_repo_path(const struct ghfake *f, const struct gf_repo *r, char *out, size_t cap)
{
	snprintf(out, cap, "%s/git/%s/%s.git", f->dir, r->owner, r->name);
}

/* --- repositories and commits ----------------------------------------------- */

int gf_git_init(struct ghfake *f, struct gf_repo *r)
{
	if (!f->git_ok)
		return -1;
	char dir[700], owner_dir[700];
	snprintf(owner_dir, sizeof owner_dir, "%s/git/%s", f->dir, r->owner);
	mkdir(owner_dir, 0700);
	gf_repo_path(f, r, dir, sizeof dir);
	char head[GF_REF_MAX + 32];
	snprintf(head, sizeof head, "--initial-branch=%s", r->default_branch);
	const char *argv[] = {"git", "init", "--quiet", "--bare", head, dir, NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv};
	int rc = gf_git(f, &run, &o);
	if (rc != 0)
		fprintf(stderr, "ghfake: git init %s failed: %s\n", dir, o.err);
	gf_out_free(&o);
	if (rc != 0)
		return -1;
	/* A push needs no REMOTE_USER when no tokens are registered; the fake
	 * checks tokens itself before http-backend runs. */
	const char *cfg[][3] = {{"http.receivepack", "true", NULL},
	                        {"receive.denyNonFastForwards", "false", NULL},
	                        {"uploadpack.allowAnySHA1InWant", "true", NULL}};
	for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
		const char *a[] = {"git", "config", cfg[i][0], cfg[i][1], NULL};
		if (gf_git_line(f, r, a, NULL, 0) != 0)
			return -1;
	}
	r->git = true;
	return 0;
}

static void ident(const char *login, char *out, size_t cap)
{
	snprintf(out, cap, "%s <%s@users.noreply.github.com>", login, login);
}

static void date_env(struct ghfake *f, char *author, size_t acap, char *committer, size_t ccap)
{
	long long s = (long long)(gf_now(f) / 1000);
	snprintf(author, acap, "GIT_AUTHOR_DATE=@%lld +0000", s);
	snprintf(committer, ccap, "GIT_COMMITTER_DATE=@%lld +0000", s);
}

static bool safe_path(const char *p)
{
	if (!p || !*p || p[0] == '/' || strstr(p, "//") || p[strlen(p) - 1] == '/')
		return false;
	for (const char *s = p; *s; s++)
		if (*s == '\n' || *s == '"' || (unsigned char)*s < 0x20)
			return false;
	const char *seg = p;
	while (seg) {
		if (strncmp(seg, "..", 2) == 0 && (seg[2] == '/' || !seg[2]))
			return false;
		if (strncmp(seg, ".git", 4) == 0 && (seg[4] == '/' || !seg[4]))
			return false;
		seg = strchr(seg, '/');
		if (seg)
			seg++;
	}
	return true;
}

int gf_commit(struct ghfake *f, struct gf_repo *r, const char *branch, const char *from,
              const struct ghfake_file *files, size_t n, const char *message, const char *author,
              char sha[GF_SHA_LEN + 1], char *err, size_t errlen)
{
	if (!r->git) {
		snprintf(err, errlen, "git is not available: %s", f->git_why);
		return -1;
	}
	char parent[GF_SHA_LEN + 1] = "", ref[GF_REF_MAX + 16];
	snprintf(ref, sizeof ref, "refs/heads/%s", branch);
	if (gf_rev(f, r, ref, parent) != 0) {
		char dref[GF_REF_MAX + 16];
		snprintf(dref, sizeof dref, "refs/heads/%s", r->default_branch);
		if (from && gf_rev(f, r, from, parent) != 0) {
			snprintf(err, errlen, "'%s' is not a commit of %s/%s", from, r->owner,
			         r->name);
			return -1;
		}
		if (!from && gf_rev(f, r, dref, parent) != 0)
			parent[0] = '\0';
	}
	/* One fast-import stream: the commit, its parent, every file inline. */
	char *s = NULL;
	size_t len = 0, cap = 0;
	char line[1024], who[160];
	ident(author && *author ? author : r->owner, who, sizeof who);
	long long secs = (long long)(gf_now(f) / 1000);
	snprintf(line, sizeof line,
	         "commit %s\nauthor %s %lld +0000\ncommitter GitHub <noreply@github.com> %lld "
	         "+0000\ndata %zu\n",
	         ref, who, secs, secs, strlen(message ? message : ""));
	buf_add(&s, &len, &cap, line, strlen(line));
	buf_add(&s, &len, &cap, message ? message : "", strlen(message ? message : ""));
	buf_add(&s, &len, &cap, "\n", 1);
	if (parent[0]) {
		snprintf(line, sizeof line, "from %s\n", parent);
		buf_add(&s, &len, &cap, line, strlen(line));
	}
	for (size_t i = 0; i < n; i++) {
		if (!safe_path(files[i].path)) {
			snprintf(err, errlen, "'%s' is not a path in a repository",
			         files[i].path ? files[i].path : "");
			free(s);
			return -1;
		}
		if (!files[i].content) {
			snprintf(line, sizeof line, "D %s\n", files[i].path);
			buf_add(&s, &len, &cap, line, strlen(line));
			continue;
		}
		size_t fl = files[i].len ? files[i].len : strlen(files[i].content);
		snprintf(line, sizeof line, "M %o inline %s\ndata %zu\n",
		         files[i].mode ? files[i].mode : 0100644, files[i].path, fl);
		buf_add(&s, &len, &cap, line, strlen(line));
		buf_add(&s, &len, &cap, files[i].content, fl);
		buf_add(&s, &len, &cap, "\n", 1);
	}
	buf_add(&s, &len, &cap, "done\n", 5);
	const char *argv[] = {"git", "fast-import", "--quiet", "--done", NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv, .repo = r, .in = s, .in_len = len};
	int rc = gf_git(f, &run, &o);
	free(s);
	if (rc != 0) {
		snprintf(err, errlen, "git fast-import failed: %.200s", o.err);
		gf_out_free(&o);
		return -1;
	}
	gf_out_free(&o);
	if (gf_rev(f, r, ref, sha) != 0) {
		snprintf(err, errlen, "the commit on %s did not land", branch);
		return -1;
	}
	r->pushed_ms = r->updated_ms = gf_now(f);
	return 0;
}

int gf_commit_tree(struct ghfake *f, const struct gf_repo *r, const char *tree,
                   const char *const *parents, size_t n_parents, const char *message,
                   const char *author, char sha[GF_SHA_LEN + 1])
{
	const char *argv[12];
	size_t a = 0;
	argv[a++] = "git";
	argv[a++] = "commit-tree";
	for (size_t i = 0; i < n_parents && i < 2; i++) {
		argv[a++] = "-p";
		argv[a++] = parents[i];
	}
	argv[a++] = tree;
	argv[a] = NULL;
	char an[120], ae[120], ad[64], cd[64];
	snprintf(an, sizeof an, "GIT_AUTHOR_NAME=%s", author);
	snprintf(ae, sizeof ae, "GIT_AUTHOR_EMAIL=%s@users.noreply.github.com", author);
	date_env(f, ad, sizeof ad, cd, sizeof cd);
	const char *env[] = {an,
	                     ae,
	                     ad,
	                     cd,
	                     "GIT_COMMITTER_NAME=GitHub",
	                     "GIT_COMMITTER_EMAIL=noreply@github.com",
	                     NULL};
	struct gf_out o;
	struct gf_run run = {
	        .argv = argv, .env = env, .repo = r, .in = message, .in_len = strlen(message)};
	int rc = gf_git(f, &run, &o);
	if (rc == 0) {
		trim(o.out);
		rc = strlen(o.out) == GF_SHA_LEN ? 0 : -1;
		if (rc == 0)
			memcpy(sha, o.out, GF_SHA_LEN + 1);
	} else {
		fprintf(stderr, "ghfake: git commit-tree failed: %s\n", o.err);
	}
	gf_out_free(&o);
	return rc == 0 ? 0 : -1;
}

int gf_update_ref(struct ghfake *f, const struct gf_repo *r, const char *ref, const char *sha,
                  const char *old)
{
	char full[GF_REF_MAX + 16];
	if (strncmp(ref, "refs/", 5) == 0)
		snprintf(full, sizeof full, "%s", ref);
	else
		snprintf(full, sizeof full, "refs/heads/%s", ref);
	const char *zero = "0000000000000000000000000000000000000000";
	const char *argv[8];
	size_t a = 0;
	argv[a++] = "git";
	argv[a++] = "update-ref";
	if (!*sha) {
		argv[a++] = "-d";
		argv[a++] = full;
		if (old && *old)
			argv[a++] = old;
	} else {
		argv[a++] = full;
		argv[a++] = sha;
		if (old)
			argv[a++] = *old ? old : zero;
	}
	argv[a] = NULL;
	return gf_git_line(f, r, argv, NULL, 0);
}

/* --- smart HTTP ------------------------------------------------------------------ */

static const char *const not_owners[] = {"repos",         "orgs",    "users",      "user", "search",
                                         "notifications", "_ghfake", "rate_limit", NULL};

/* Splits /{o}/{r}[.git]/{service path}; service points into path. */
static bool split_git_path(const char *path, char *owner, size_t ocap, char *name, size_t ncap,
                           const char **service)
{
	if (path[0] != '/')
		return false;
	const char *o = path + 1, *s1 = strchr(o, '/');
	if (!s1 || s1 == o || (size_t)(s1 - o) >= ocap)
		return false;
	const char *n = s1 + 1, *s2 = strchr(n, '/');
	if (!s2 || s2 == n || (size_t)(s2 - n) >= ncap)
		return false;
	const char *svc = s2 + 1;
	if (strcmp(svc, "info/refs") != 0 && strcmp(svc, "git-upload-pack") != 0 &&
	    strcmp(svc, "git-receive-pack") != 0)
		return false;
	memcpy(owner, o, (size_t)(s1 - o));
	owner[s1 - o] = '\0';
	for (size_t i = 0; not_owners[i]; i++)
		if (strcmp(owner, not_owners[i]) == 0)
			return false;
	size_t nl = (size_t)(s2 - n);
	if (nl > 4 && strncmp(s2 - 4, ".git", 4) == 0)
		nl -= 4;
	memcpy(name, n, nl);
	name[nl] = '\0';
	*service = svc;
	return true;
}

bool gf_git_path(const char *path)
{
	char o[64], n[128];
	const char *svc;
	return split_git_path(path, o, sizeof o, n, sizeof n, &svc);
}

/* The login of the Basic credentials (any user, the token as password):
 * 1 found, 0 none sent, -1 sent and wrong. */
static int git_login(struct ghfake *f, const struct httpfake_request *req, const char **login)
{
	const char *a = httpfake_request_header(req, "Authorization");
	if (!a)
		return 0;
	if (strncasecmp(a, "Basic ", 6) != 0)
		return -1;
	unsigned char dec[512];
	const char *b64 = a + 6;
	size_t bl = strlen(b64);
	if (bl / 4 * 3 + 3 > sizeof dec || base64_decode(b64, bl, dec, NULL) < 0)
		return -1;
	const char *colon = strchr((const char *)dec, ':');
	if (!colon)
		return -1;
	for (size_t i = 0; i < f->n_tokens; i++)
		if (strcmp(colon + 1, f->tokens[i].token) == 0) {
			*login = f->tokens[i].login;
			return 1;
		}
	return -1;
}

static void git_text(struct httpfake_response *resp, int status, const char *text)
{
	resp->status = status;
	httpfake_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
	httpfake_response_body(resp, text, strlen(text));
}

/* Parses a CGI answer (headers, a blank line, the body) into resp. */
static void cgi_answer(const struct gf_out *o, struct httpfake_response *resp)
{
	const char *p = o->out, *end = o->out + o->out_len;
	resp->status = 200;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		size_t ll = (size_t)(nl - p);
		if (ll && p[ll - 1] == '\r')
			ll--;
		if (ll == 0) {
			p = nl + 1;
			httpfake_response_body(resp, p, (size_t)(end - p));
			return;
		}
		char h[1024];
		snprintf(h, sizeof h, "%.*s", (int)ll, p);
		char *colon = strchr(h, ':');
		if (colon) {
			*colon = '\0';
			const char *v = colon + 1;
			while (*v == ' ')
				v++;
			if (strcasecmp(h, "Status") == 0)
				resp->status = atoi(v);
			else
				httpfake_response_header(resp, h, v);
		}
		p = nl + 1;
	}
	resp->status = 502;
	git_text(resp, 502, "ghfake: git http-backend gave no complete answer\n");
}

void gf_git_serve(struct ghfake *f, const struct httpfake_request *req,
                  struct httpfake_response *resp)
{
	char owner[64], name[128];
	const char *svc;
	if (!split_git_path(req->path, owner, sizeof owner, name, sizeof name, &svc)) {
		git_text(resp, 404, "Not Found\n");
		return;
	}
	struct gf_repo *r = gf_find_repo(f, owner, name);
	bool push = strcmp(svc, "git-receive-pack") == 0 ||
	            (strcmp(svc, "info/refs") == 0 && gf_param(req, "service") &&
	             strcmp(gf_param(req, "service"), "git-receive-pack") == 0);
	const char *login = f->n_tokens ? NULL : "agent";
	int auth = f->n_tokens ? git_login(f, req, &login) : 1;
	/* GitHub asks for credentials (401) for a push, for a private
	 * repository and for wrong credentials, and for a repository that does
	 * not exist — it does not tell a stranger which names exist. */
	if (auth < 0 || (auth == 0 && (push || !r || (r->flags & GHFAKE_REPO_PRIVATE)))) {
		resp->status = 401;
		httpfake_response_header(resp, "WWW-Authenticate", "Basic realm=\"GitHub\"");
		git_text(resp, 401,
		         auth < 0 ? "Invalid username or token. Password authentication is not "
		                    "supported for Git operations.\n"
		                  : "Authentication required\n");
		return;
	}
	if (!r || (login && gf_perm_of(f, r, login) < GF_READ)) {
		git_text(resp, 404, "Repository not found.\n");
		return;
	}
	if (push && ((r->flags & GHFAKE_REPO_READONLY) || gf_perm_of(f, r, login) < GF_WRITE)) {
		char msg[256];
		snprintf(msg, sizeof msg, "Permission to %s/%s.git denied to %s.\n", r->owner,
		         r->name, login ? login : "anonymous");
		git_text(resp, 403, msg);
		return;
	}
	if (!r->git) {
		git_text(resp, 500, "ghfake: git is not available on this machine\n");
		return;
	}
	if (req->body_truncated) {
		git_text(resp, 413,
		         "ghfake: the request body is larger than GHFAKE_GIT_BODY_MAX\n");
		return;
	}
	char root[700], path_info[GF_REF_MAX * 2], clen[32];
	snprintf(root, sizeof root, "%s/git", f->dir);
	snprintf(path_info, sizeof path_info, "/%s/%s.git/%s", r->owner, r->name, svc);
	snprintf(clen, sizeof clen, "%zu", req->body_len);
	struct envb e;
	memset(&e, 0, sizeof e);
	env_put(&e, "GIT_PROJECT_ROOT=%s", root);
	env_put(&e, "GIT_HTTP_EXPORT_ALL=1");
	env_put(&e, "GATEWAY_INTERFACE=CGI/1.1");
	env_put(&e, "SERVER_PROTOCOL=HTTP/1.1");
	env_put(&e, "REMOTE_ADDR=127.0.0.1");
	env_put(&e, "REQUEST_METHOD=%s", req->method);
	env_put(&e, "PATH_INFO=%s", path_info);
	env_put(&e, "QUERY_STRING=%s", req->query);
	if (login)
		env_put(&e, "REMOTE_USER=%s", login);
	const char *ct = httpfake_request_header(req, "Content-Type");
	if (ct)
		env_put(&e, "CONTENT_TYPE=%s", ct);
	if (strcmp(req->method, "POST") == 0)
		env_put(&e, "CONTENT_LENGTH=%s", clen);
	const char *ce = httpfake_request_header(req, "Content-Encoding");
	if (ce)
		env_put(&e, "HTTP_CONTENT_ENCODING=%s", ce);
	const char *gp = httpfake_request_header(req, "Git-Protocol");
	if (gp)
		env_put(&e, "HTTP_GIT_PROTOCOL=%s", gp);
	const char *argv[] = {"git", "http-backend", NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv,
	                     .env = (const char *const *)e.v,
	                     .in = req->body,
	                     .in_len = req->body_len};
	int rc = gf_git(f, &run, &o);
	env_free(&e);
	if (rc != 0 && o.out_len == 0) {
		char msg[600];
		snprintf(msg, sizeof msg, "ghfake: git http-backend failed: %.500s\n", o.err);
		git_text(resp, 500, msg);
	} else {
		cgi_answer(&o, resp);
	}
	gf_out_free(&o);
	if (push && strcmp(svc, "git-receive-pack") == 0 && resp->status == 200) {
		r->pushed_ms = r->updated_ms = gf_now(f);
		gf_pulls_sync(f, r);
	}
}

/* --- lifetime --------------------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void gf_git_cleanup(struct ghfake *f)
{
	if (f->dir[0])
		nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void gf_git_probe(struct ghfake *f)
{
	const char *argv[] = {"git", "--exec-path", NULL};
	char exec_path[512];
	f->git_ok = true; /* for the probe's own runs */
	if (gf_git_line(f, NULL, argv, exec_path, sizeof exec_path) != 0 || !exec_path[0]) {
		f->git_ok = false;
		snprintf(f->git_why, sizeof f->git_why,
		         "git does not run here (install Debian's git package)");
		return;
	}
	char backend[600];
	snprintf(backend, sizeof backend, "%s/git-http-backend", exec_path);
	if (access(backend, X_OK) != 0) {
		f->git_ok = false;
		snprintf(f->git_why, sizeof f->git_why, "%.200s is missing (Debian's git has it)",
		         backend);
	}
}
