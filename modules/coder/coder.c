/* coder — the configured coder and a task's tests in a bubblewrap sandbox
 * (see coder.h). */
#include "modules/coder/coder.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/git/git.h"
#include "adapters/git/spawn.h"
#include "common/fsx.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

/* What of /etc a program may need and no secret lives in. */
static const char *const CODER_ETC_ALLOW[] = {"alternatives",
                                              "ssl",
                                              "ca-certificates",
                                              "ca-certificates.conf",
                                              "ld.so.cache",
                                              "ld.so.conf",
                                              "ld.so.conf.d",
                                              "localtime",
                                              "timezone",
                                              "nsswitch.conf",
                                              "hosts",
                                              "host.conf",
                                              "gai.conf",
                                              "protocols",
                                              "services",
                                              "mime.types",
                                              "magic",
                                              "magic.mime",
                                              "os-release",
                                              "debian_version",
                                              "lsb-release",
                                              "locale.alias",
                                              "terminfo",
                                              "inputrc",
                                              NULL};

/* Top-level system directories: bound read-only, or re-created as the
 * symlinks they are on merged-/usr systems. */
static const char *const CODER_SYS_DIRS[] = {"bin",   "sbin",   "lib", "lib32",
                                             "lib64", "libx32", NULL};

/* The agent's secrets: never passed to a coder, whatever CODER_ENV says. */
static const char *const CODER_ENV_DENY[] = {"AGENT_GITHUB_TOKEN",
                                             "AGENT_BLUESKY_PASSWORD",
                                             "DASHBOARD_TOKEN",
                                             "REDIS_URL",
                                             "LLM_API_KEY",
                                             "AI_GATEWAY_API_KEY",
                                             NULL};

/* A coder that stops because something is missing says so in these words
 * (§3.9 step 4); anything else that fails is a failure. */
static const char *const CODER_BLOCKED_WORDS[] = {"blocked", "cannot proceed", "dependency",
                                                  "missing", NULL};

static const char *const PLACEHOLDERS[] = {"{prompt_file}", "{prompt}", "{work_dir}", NULL};

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* ---- the command template ------------------------------------------------------------- */

static int check_placeholders(const char *word, const char *var, struct ga_err *err)
{
	for (const char *p = strchr(word, '{'); p; p = strchr(p + 1, '{')) {
		size_t n = 1;
		while (p[n] && (islower((unsigned char)p[n]) || p[n] == '_'))
			n++;
		if (p[n] != '}' || n == 1)
			continue;
		bool known = false;
		for (int i = 0; PLACEHOLDERS[i]; i++)
			known |= strncmp(p, PLACEHOLDERS[i], n + 1) == 0 &&
			         PLACEHOLDERS[i][n + 1] == '\0';
		if (!known)
			return err_set(err,
			               "%s: unknown placeholder %.*s (known: {prompt_file}, "
			               "{prompt}, {work_dir})",
			               var, (int)(n + 1), p);
	}
	return 0;
}

char **coder_split_command(const char *s, const char *var, struct ga_err *err)
{
	char **v = xcalloc(CODER_MAX_ARGS + 1, sizeof *v);
	size_t n = 0;
	struct strbuf w = {0};
	bool in_word = false;
	for (const char *p = s;; p++) {
		if (!*p || isspace((unsigned char)*p)) {
			if (in_word) {
				if (n == CODER_MAX_ARGS) {
					err_set(err, "%s has more than %d words", var,
					        CODER_MAX_ARGS);
					goto fail;
				}
				v[n++] = sb_detach(&w);
				in_word = false;
			}
			if (!*p)
				break;
			continue;
		}
		in_word = true;
		if (*p == '\'') {
			const char *e = strchr(p + 1, '\'');
			if (!e) {
				err_set(err, "%s has an unclosed ' quote", var);
				goto fail;
			}
			sb_append(&w, p + 1, (size_t)(e - p - 1));
			p = e;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
					p++;
				sb_putc(&w, *p);
			}
			if (!*p) {
				err_set(err, "%s has an unclosed \" quote", var);
				goto fail;
			}
		} else if (*p == '\\') {
			if (!p[1]) {
				err_set(err, "%s ends with a backslash", var);
				goto fail;
			}
			sb_putc(&w, *++p);
		} else {
			sb_putc(&w, *p);
		}
	}
	if (n == 0) {
		err_set(err, "%s is empty", var);
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		if (check_placeholders(v[i], var, err) != 0)
			goto fail;
	sb_free(&w);
	return v;
fail:
	sb_free(&w);
	strv_free(v);
	return NULL;
}

/* Replaces the placeholders of one word. Caller frees. */
static char *fill_word(const char *word, const char *prompt_file, const char *prompt,
                       const char *work)
{
	const char *names[] = {"prompt_file", "prompt", "work_dir"};
	const char *values[] = {prompt_file, prompt, work};
	struct strbuf sb;
	sb_init(&sb, CODER_PROMPT_MAX_BYTES + 4096);
	/* {x} → {{x}} for sb_fill, without touching other braces. */
	struct strbuf t = {0};
	for (const char *p = word; *p; p++) {
		bool ph = false;
		for (int i = 0; PLACEHOLDERS[i] && !ph; i++)
			if (strncmp(p, PLACEHOLDERS[i], strlen(PLACEHOLDERS[i])) == 0) {
				sb_printf(&t, "{%s}", PLACEHOLDERS[i]);
				p += strlen(PLACEHOLDERS[i]) - 1;
				ph = true;
			}
		if (!ph)
			sb_putc(&t, *p);
	}
	sb_fill(&sb, sb_cstr(&t), names, values, 3);
	sb_free(&t);
	return sb_detach(&sb);
}

static bool uses_placeholder(char *const *argv, const char *ph)
{
	for (size_t i = 0; argv && argv[i]; i++)
		if (strstr(argv[i], ph))
			return true;
	return false;
}

/* ---- configuration --------------------------------------------------------------------- */

static int parse_bool_word(const char *v, const char *on, const char *off, bool *out)
{
	if (strcasecmp(v, on) == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0) {
		*out = true;
		return 0;
	}
	if (strcasecmp(v, off) == 0 || strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0) {
		*out = false;
		return 0;
	}
	return -1;
}

static int parse_seconds(const struct env_file *env, const char *var, uint64_t def_s,
                         uint64_t *out_ms, struct ga_err *err)
{
	const char *v = env_lookup(env, var);
	if (!v || !*v) {
		*out_ms = def_s * 1000;
		return 0;
	}
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || *end || x < 1 || x > CODER_MAX_TIMEOUT_S)
		return err_set(err, "%s must be a number of seconds from 1 to %d, got '%.40s'", var,
		               CODER_MAX_TIMEOUT_S, v);
	*out_ms = (uint64_t)x * 1000;
	return 0;
}

/* "~/x" → $HOME/x; anything else must be absolute. Caller frees. */
static char *expand_path(const char *p, const char *var, struct ga_err *err)
{
	if (p[0] == '~' && p[1] == '/') {
		const char *home = getenv("HOME");
		if (!home || home[0] != '/') {
			err_set(err, "%s: '%s' starts with ~ but HOME is not set", var, p);
			return NULL;
		}
		return xasprintf("%s%s", home, p + 1);
	}
	if (p[0] != '/') {
		err_set(err, "%s: '%s' is not an absolute path", var, p);
		return NULL;
	}
	return xstrdup(p);
}

/* True when a is b or one contains the other (paths compared after
 * realpath where they exist). */
static bool paths_overlap(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	if (!a || !b)
		return false;
	const char *x = realpath(a, ra) ? ra : a;
	const char *y = realpath(b, rb) ? rb : b;
	size_t lx = strlen(x), ly = strlen(y);
	if (strcmp(x, "/") == 0 || strcmp(y, "/") == 0)
		return true;
	if (lx <= ly)
		return strncmp(x, y, lx) == 0 && (y[lx] == '/' || y[lx] == '\0');
	return strncmp(y, x, ly) == 0 && x[ly] == '/';
}

static char *find_bwrap(void)
{
	static const char *const dirs[] = {"/usr/bin", "/usr/local/bin", "/bin", NULL};
	for (int i = 0; dirs[i]; i++) {
		char *p = xasprintf("%s/bwrap", dirs[i]);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

void coder_config_free(struct coder_config *c)
{
	if (!c)
		return;
	strv_free(c->argv);
	strv_free(c->ro_paths);
	if (c->env)
		for (size_t i = 0; c->env[i]; i++)
			explicit_bzero(c->env[i], strlen(c->env[i]));
	strv_free(c->env);
	strv_free(c->env_names);
	strv_free(c->test_argv);
	free(c->home);
	free(c->bwrap);
	memset(c, 0, sizeof *c);
}

static int load_ro_paths(const struct env_file *env, const char *agent_home, const char *memory_dir,
                         struct coder_config *c, struct ga_err *err)
{
	const char *v = env_lookup(env, "CODER_RO_PATHS");
	c->ro_paths = xcalloc(CODER_MAX_RO_PATHS + 1, sizeof(char *));
	if (!v || !*v)
		return 0;
	char *copy = xstrdup(v), *save = NULL;
	size_t n = 0;
	int rc = 0;
	for (char *t = strtok_r(copy, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
		if (n == CODER_MAX_RO_PATHS) {
			rc = err_set(err, "CODER_RO_PATHS lists more than %d paths",
			             CODER_MAX_RO_PATHS);
			break;
		}
		char *p = expand_path(t, "CODER_RO_PATHS", err);
		if (!p) {
			rc = -1;
			break;
		}
		if (paths_overlap(p, agent_home) || paths_overlap(p, memory_dir)) {
			rc = err_set(err,
			             "CODER_RO_PATHS: '%s' is or holds the agent's home or memory; "
			             "the coder must never see them",
			             p);
			free(p);
			break;
		}
		c->ro_paths[n++] = p;
	}
	free(copy);
	return rc;
}

static bool denied_env(const char *name)
{
	for (int i = 0; CODER_ENV_DENY[i]; i++)
		if (strcmp(name, CODER_ENV_DENY[i]) == 0)
			return true;
	return false;
}

static int load_env(const struct env_file *env, struct coder_config *c, struct ga_err *err)
{
	const char *v = env_lookup(env, "CODER_ENV");
	c->env = xcalloc(CODER_MAX_ENV + 1, sizeof(char *));
	c->env_names = xcalloc(CODER_MAX_ENV + 1, sizeof(char *));
	if (!v || !*v)
		return 0;
	char *copy = xstrdup(v), *save = NULL;
	size_t n = 0;
	int rc = 0;
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		bool valid = isalpha((unsigned char)t[0]) || t[0] == '_';
		for (const char *q = t; *q && valid; q++)
			valid = isalnum((unsigned char)*q) || *q == '_';
		if (!valid) {
			rc = err_set(err, "CODER_ENV: '%.40s' is not a variable name", t);
			break;
		}
		if (denied_env(t)) {
			rc = err_set(
			        err,
			        "CODER_ENV: %s is the agent's own secret and is never given to "
			        "a coder",
			        t);
			break;
		}
		if (n == CODER_MAX_ENV) {
			rc = err_set(err, "CODER_ENV lists more than %d variables", CODER_MAX_ENV);
			break;
		}
		const char *val = env_lookup(env, t);
		if (!val) {
			rc = err_set(err, "CODER_ENV names %s, which is not set", t);
			break;
		}
		c->env[n] = xasprintf("%s=%s", t, val);
		c->env_names[n++] = xstrdup(t);
	}
	free(copy);
	return rc;
}

int coder_config_load(const struct env_file *env, const char *agent_home, const char *memory_dir,
                      struct coder_config *c, struct ga_err *err)
{
	memset(c, 0, sizeof *c);
	c->sandbox = true;
	c->bwrap = find_bwrap();
	const char *v = env_lookup(env, "CODER_COMMAND");
	if (v && *v) {
		c->argv = coder_split_command(v, "CODER_COMMAND", err);
		if (!c->argv)
			return -1;
		c->configured = true;
	}
	v = env_lookup(env, "CODER_SANDBOX");
	if (v && *v && parse_bool_word(v, "on", "off", &c->sandbox) != 0)
		return err_set(err, "CODER_SANDBOX must be on or off, got '%.40s'", v);
	v = env_lookup(env, "CODER_NETWORK");
	if (v && *v && parse_bool_word(v, "on", "off", &c->network) != 0)
		return err_set(err, "CODER_NETWORK must be on or off, got '%.40s'", v);
	if (parse_seconds(env, "CODER_TIMEOUT_S", CODER_DEFAULT_TIMEOUT_S, &c->timeout_ms, err) ||
	    parse_seconds(env, "TASK_TEST_TIMEOUT_S", CODER_DEFAULT_TEST_TIMEOUT_S,
	                  &c->test_timeout_ms, err))
		return -1;
	if (load_ro_paths(env, agent_home, memory_dir, c, err) || load_env(env, c, err))
		return -1;
	v = env_lookup(env, "CODER_HOME");
	if (v && *v) {
		c->home = expand_path(v, "CODER_HOME", err);
		if (!c->home)
			return -1;
		const char *user_home = getenv("HOME");
		if (paths_overlap(c->home, agent_home) || paths_overlap(c->home, memory_dir) ||
		    paths_overlap(c->home, user_home))
			return err_set(err,
			               "CODER_HOME '%s' is, holds or lies in the agent's home, its "
			               "memory or your HOME; give the coder a directory of its own",
			               c->home);
	}
	v = env_lookup(env, "TASK_TEST_COMMAND");
	if (v && *v) {
		c->test_argv = coder_split_command(v, "TASK_TEST_COMMAND", err);
		if (!c->test_argv)
			return -1;
		if (uses_placeholder(c->test_argv, "{prompt"))
			return err_set(err, "TASK_TEST_COMMAND may only use {work_dir}");
	}
	return 0;
}

/* ---- the sandbox ---------------------------------------------------------------------------- */

struct argv_b {
	char **v;
	size_t n, cap;
};

static void push(struct argv_b *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = xreallocarray(a->v, a->cap, sizeof *a->v);
	}
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

static void push3(struct argv_b *a, const char *x, const char *y, const char *z)
{
	push(a, x);
	push(a, y);
	if (z)
		push(a, z);
}

static uid_t sandbox_uid(void)
{
	return getuid() == 0 ? CODER_SANDBOX_UID : getuid();
}

static uid_t sandbox_gid(void)
{
	return getuid() == 0 ? CODER_SANDBOX_UID : getgid();
}

/* The passwd and group the sandbox shows, and the prompt, in ctl. */
static int write_ctl(const char *ctl, const char *prompt, struct ga_err *err)
{
	if (fsx_mkdir_p(ctl, err) != 0)
		return -1;
	char pw[256], gr[128];
	snprintf(pw, sizeof pw,
	         "root:x:0:0:root:/root:/usr/sbin/nologin\ncoder:x:%u:%u:coder:%s:/bin/sh\n",
	         (unsigned)sandbox_uid(), (unsigned)sandbox_gid(), CODER_SANDBOX_HOME);
	snprintf(gr, sizeof gr, "root:x:0:\ncoder:x:%u:\n", (unsigned)sandbox_gid());
	char *p = fsx_join(ctl, "passwd"), *g = fsx_join(ctl, "group"),
	     *pr = fsx_join(ctl, "prompt.md");
	int rc = 0;
	if (fsx_write_atomic(p, pw, strlen(pw), err) || fsx_write_atomic(g, gr, strlen(gr), err) ||
	    fsx_write_atomic(pr, prompt ? prompt : "", prompt ? strlen(prompt) : 0, err))
		rc = -1;
	free(p);
	free(g);
	free(pr);
	return rc;
}

char **coder_sandbox_argv(const struct coder_config *cfg, const struct coder_run_opts *o,
                          const char *const *cmd, struct ga_err *err)
{
	if (!cfg->bwrap) {
		err_set(err, "bubblewrap (bwrap) is not installed");
		return NULL;
	}
	if (!o->work || o->work[0] != '/' || !o->ctl || o->ctl[0] != '/') {
		err_set(err, "the sandbox needs absolute work and control directories");
		return NULL;
	}
	struct argv_b a = {0};
	push(&a, cfg->bwrap);
	push(&a, "--die-with-parent");
	push(&a, "--new-session");
	push(&a, "--unshare-all");
	if (getuid() == 0) {
		char id[16];
		push(&a, "--unshare-user");
		snprintf(id, sizeof id, "%u", (unsigned)sandbox_uid());
		push3(&a, "--uid", id, NULL);
		snprintf(id, sizeof id, "%u", (unsigned)sandbox_gid());
		push3(&a, "--gid", id, NULL);
	}
	if (cfg->network)
		push(&a, "--share-net");
	push3(&a, "--ro-bind", "/usr", "/usr");
	for (int i = 0; CODER_SYS_DIRS[i]; i++) {
		char src[64], target[PATH_MAX];
		snprintf(src, sizeof src, "/%s", CODER_SYS_DIRS[i]);
		struct stat st;
		if (lstat(src, &st) != 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(src, target, sizeof target - 1);
			if (n > 0) {
				target[n] = '\0';
				push3(&a, "--symlink", target, src);
			}
		} else if (S_ISDIR(st.st_mode)) {
			push3(&a, "--ro-bind", src, src);
		}
	}
	push3(&a, "--proc", "/proc", NULL);
	push3(&a, "--dev", "/dev", NULL);
	push3(&a, "--tmpfs", "/tmp", NULL);
	push3(&a, "--dir", CODER_SANDBOX_HOME, NULL);
	push3(&a, "--dir", "/etc", NULL);
	for (int i = 0; CODER_ETC_ALLOW[i]; i++) {
		char p[128];
		snprintf(p, sizeof p, "/etc/%s", CODER_ETC_ALLOW[i]);
		if (access(p, F_OK) == 0)
			push3(&a, "--ro-bind", p, p);
	}
	if (cfg->network && access("/etc/resolv.conf", F_OK) == 0)
		push3(&a, "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf");
	char *pw = fsx_join(o->ctl, "passwd"), *gr = fsx_join(o->ctl, "group"),
	     *pr = fsx_join(o->ctl, "prompt.md");
	push3(&a, "--ro-bind", pw, "/etc/passwd");
	push3(&a, "--ro-bind", gr, "/etc/group");
	push3(&a, "--ro-bind", pr, CODER_SANDBOX_PROMPT);
	free(pw);
	free(gr);
	free(pr);
	if (cfg->home)
		push3(&a, "--bind", cfg->home, CODER_SANDBOX_HOME);
	for (size_t i = 0; cfg->ro_paths && cfg->ro_paths[i]; i++) {
		const char *p = cfg->ro_paths[i];
		char real[PATH_MAX];
		if (access(p, F_OK) != 0)
			continue; /* doctor reports it */
		push3(&a, "--ro-bind", p, p);
		if (realpath(p, real) && strcmp(real, p) != 0)
			push3(&a, "--ro-bind", real, real);
	}
	for (size_t i = 0; o->ro_extra && o->ro_extra[i]; i++)
		push3(&a, "--ro-bind", o->ro_extra[i], o->ro_extra[i]);
	push3(&a, "--bind", o->work, o->work);
	push3(&a, "--chdir", o->work, NULL);
	push(&a, "--");
	for (size_t i = 0; cmd && cmd[i]; i++)
		push(&a, cmd[i]);
	return a.v;
}

/* The environment inside: nothing of the agent's but the commit identity
 * and the variables the owner passed in. */
static char **sandbox_env(const struct coder_config *cfg, const struct coder_run_opts *o,
                          const char *home, const char *tmp)
{
	struct argv_b a = {0};
	struct strbuf path = {0};
	sb_puts(&path, "PATH=" CODER_PATH);
	for (size_t i = 0; cfg->ro_paths && cfg->ro_paths[i]; i++) {
		struct stat st;
		const char *p = cfg->ro_paths[i];
		const char *slash = strrchr(p, '/');
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) && slash &&
		    slash != p)
			sb_printf(&path, ":%.*s", (int)(slash - p), p);
	}
	push(&a, sb_cstr(&path));
	sb_free(&path);
	char *h = xasprintf("HOME=%s", home), *t = xasprintf("TMPDIR=%s", tmp);
	push(&a, h);
	push(&a, t);
	free(h);
	free(t);
	push(&a, "USER=coder");
	push(&a, "LOGNAME=coder");
	push(&a, "LANG=C.UTF-8");
	push(&a, "TERM=dumb");
	push(&a, "CI=true");
	push(&a, "GIT_CONFIG_NOSYSTEM=1");
	const char *name = o->git_name ? o->git_name : "coder";
	const char *email = o->git_email ? o->git_email : "coder@localhost";
	char *kv[4] = {xasprintf("GIT_AUTHOR_NAME=%s", name),
	               xasprintf("GIT_AUTHOR_EMAIL=%s", email),
	               xasprintf("GIT_COMMITTER_NAME=%s", name),
	               xasprintf("GIT_COMMITTER_EMAIL=%s", email)};
	for (int i = 0; i < 4; i++) {
		push(&a, kv[i]);
		free(kv[i]);
	}
	for (size_t i = 0; cfg->env && cfg->env[i]; i++)
		push(&a, cfg->env[i]);
	return a.v;
}

/* ---- running ------------------------------------------------------------------------------- */

enum job_kind { JOB_CODER, JOB_TESTS };

struct coder_job {
	enum job_kind kind;
	struct spawn *sp;
	uv_loop_t *loop;
	uv_timer_t later; /* a refusal is reported from the loop */
	bool refused;
	struct coder_result res;
	struct coder_tests_result tres;
	bool npm;
	coder_done_fn done;
	coder_tests_fn tdone;
	void *ud;
	uint64_t timeout_ms;
	char program[128]; /* argv[0] of the command, for messages */
	bool sandboxed;
};

static struct coder_job *job_new(enum job_kind kind, uv_loop_t *loop, void *ud, uint64_t timeout_ms)
{
	struct coder_job *j = xcalloc(1, sizeof *j);
	j->kind = kind;
	j->loop = loop;
	j->ud = ud;
	j->timeout_ms = timeout_ms;
	return j;
}

static bool contains_ci(const char *hay, const char *needle)
{
	return hay && strcasestr(hay, needle) != NULL;
}

/* The program was not found: a shell's 127, or bwrap's own exec failure
 * (it exits 1 with "bwrap: execvp <cmd>: ..."). */
static bool not_found(const struct spawn_result *r)
{
	return r->started && !r->timed_out &&
	       (r->exit_status == 127 ||
	        (r->exit_status == 1 && strncmp(r->err, "bwrap: execvp ", 14) == 0));
}

/* bwrap could not build the sandbox (namespaces refused, a bind failed). */
static bool sandbox_failed(const struct spawn_result *r)
{
	return r->started && r->exit_status == 1 && strncmp(r->err, "bwrap:", 6) == 0 &&
	       !not_found(r);
}

static void coder_spawned(void *ud, const struct spawn_result *r)
{
	struct coder_job *j = ud;
	struct coder_result *res = &j->res;
	res->exit_status = r->exit_status;
	res->term_signal = r->term_signal;
	res->timed_out = r->timed_out;
	res->out = r->out;
	res->err = r->err;
	res->dropped = r->out_dropped + r->err_dropped;
	res->elapsed_ms = r->elapsed_ms;
	const char *text = r->err_len ? r->err : r->out;
	char how[GA_ERR_MSG_MAX];
	spawn_describe(r, j->timeout_ms, how, sizeof how);
	if (!r->started) {
		res->outcome = CODER_REFUSED;
		decision_set(&res->d, VERDICT_FAIL, "coder_config", "%s", how);
	} else if (spawn_ok(r)) {
		res->outcome = CODER_DONE;
		decision_set(&res->d, VERDICT_PASS, "coder_done", "the coder finished in %llu s",
		             (unsigned long long)(r->elapsed_ms / 1000));
	} else if (not_found(r)) {
		res->outcome = CODER_REFUSED;
		decision_set(
		        &res->d, VERDICT_FAIL, "coder_config",
		        "%s is not found %s: install it under /usr or list it in CODER_RO_PATHS "
		        "(`general-agent doctor` checks)",
		        j->program, j->sandboxed ? "inside the sandbox" : "in PATH");
	} else if (sandbox_failed(r)) {
		res->outcome = CODER_REFUSED;
		decision_set(&res->d, VERDICT_BLOCK, "coder_sandbox",
		             "the sandbox could not start (%.*s); `general-agent doctor` says more",
		             (int)strcspn(r->err, "\n"), r->err);
	} else if (r->timed_out) {
		res->outcome = CODER_FAILED;
		decision_set(&res->d, VERDICT_FAIL, "coder_timeout", "the coder %s", how);
	} else {
		bool blocked = false;
		for (int i = 0; CODER_BLOCKED_WORDS[i] && !r->term_signal; i++)
			blocked |= contains_ci(text, CODER_BLOCKED_WORDS[i]);
		char last[200];
		size_t n = strlen(text);
		while (n && isspace((unsigned char)text[n - 1]))
			n--;
		size_t s = n;
		while (s && text[s - 1] != '\n')
			s--;
		err_fmt(last, sizeof last, "%.*s", (int)(n - s), text + s);
		res->outcome = blocked ? CODER_BLOCKED : CODER_FAILED;
		decision_set(&res->d, VERDICT_FAIL, blocked ? "coder_blocked" : "coder_failed",
		             "the coder stopped (%s)%s%s", how, last[0] ? ": " : "", last);
	}
	j->done(j->ud, res);
	free(j);
}

static void free_job(uv_handle_t *h)
{
	free(h->data);
}

static void report_later(uv_timer_t *t)
{
	struct coder_job *j = t->data;
	if (j->kind == JOB_CODER)
		j->done(j->ud, &j->res);
	else
		j->tdone(j->ud, &j->tres);
	uv_close((uv_handle_t *)&j->later, free_job);
}

static struct coder_job *refuse(uv_loop_t *loop, struct coder_job *j)
{
	j->refused = true;
	uv_timer_init(loop, &j->later);
	j->later.data = j;
	uv_timer_start(&j->later, report_later, 0, 0);
	return j;
}

/* Starts cmd through bwrap, or (CODER_SANDBOX=off) directly. NULL with
 * err when it cannot. */
static struct spawn *start(uv_loop_t *loop, const struct coder_config *cfg,
                           const struct coder_run_opts *o, char **cmd, const char *stdin_data,
                           uint64_t timeout_ms, spawn_done_fn cb, void *ud, struct ga_err *err)
{
	char **argv = NULL, **env = NULL;
	char *home = NULL, *tmp = NULL;
	if (cfg->sandbox) {
		argv = coder_sandbox_argv(cfg, o, (const char *const *)cmd, err);
		if (!argv)
			return NULL;
		env = sandbox_env(cfg, o, CODER_SANDBOX_HOME, "/tmp");
	} else {
		home = cfg->home ? xstrdup(cfg->home) : fsx_join(o->ctl, "home");
		tmp = fsx_join(o->ctl, "tmp");
		if (fsx_mkdir_p(home, err) || fsx_mkdir_p(tmp, err)) {
			free(home);
			free(tmp);
			return NULL;
		}
		struct argv_b a = {0};
		for (size_t i = 0; cmd[i]; i++)
			push(&a, cmd[i]);
		argv = a.v;
		env = sandbox_env(cfg, o, home, tmp);
	}
	struct spawn_opts so = {.file = argv[0],
	                        .argv = (const char *const *)argv,
	                        .env = (const char *const *)env,
	                        .cwd = o->work,
	                        .stdin_data = stdin_data,
	                        .stdin_len = stdin_data ? strlen(stdin_data) : 0,
	                        .timeout_ms = timeout_ms,
	                        .max_output = CODER_OUTPUT_MAX_BYTES};
	struct spawn *sp = spawn_start(loop, &so, cb, ud, err);
	strv_free(argv);
	for (size_t i = 0; env && env[i]; i++)
		explicit_bzero(env[i], strlen(env[i]));
	strv_free(env);
	free(home);
	free(tmp);
	return sp;
}

static bool sandbox_refused(const struct coder_config *cfg, struct decision *d)
{
	if (cfg->sandbox && !cfg->bwrap) {
		decision_set(
		        d, VERDICT_BLOCK, "coder_sandbox",
		        "bubblewrap (bwrap) is not installed, so no coder runs: install the "
		        "Debian package bubblewrap, or set CODER_SANDBOX=off if the agent runs in "
		        "a container of its own");
		return true;
	}
	return false;
}

struct coder_job *coder_run(uv_loop_t *loop, const struct coder_config *cfg,
                            const struct coder_run_opts *o, coder_done_fn done, void *ud,
                            struct ga_err *err)
{
	if (!cfg || !o || !done || !o->work || !o->ctl) {
		err_set(err, "coder_run: missing configuration or options");
		return NULL;
	}
	struct coder_job *j = job_new(JOB_CODER, loop, ud, cfg->timeout_ms);
	j->done = done;
	j->res.out = j->res.err = "";
	if (!cfg->configured) {
		j->res.outcome = CODER_REFUSED;
		decision_set(&j->res.d, VERDICT_BLOCK, "coder_config",
		             "CODER_COMMAND is not set: no coder is configured");
		return refuse(loop, j);
	}
	if (sandbox_refused(cfg, &j->res.d)) {
		j->res.outcome = CODER_REFUSED;
		return refuse(loop, j);
	}
	size_t plen = o->prompt ? strlen(o->prompt) : 0;
	struct ga_err e2 = {{0}};
	if (plen > CODER_PROMPT_MAX_BYTES || write_ctl(o->ctl, o->prompt, &e2) != 0) {
		j->res.outcome = CODER_REFUSED;
		decision_set(&j->res.d, VERDICT_FAIL, "coder_config", "%s",
		             plen > CODER_PROMPT_MAX_BYTES ? "the prompt is too large" : e2.msg);
		return refuse(loop, j);
	}
	err_fmt(j->program, sizeof j->program, "%s", cfg->argv[0]);
	j->sandboxed = cfg->sandbox;
	char *pf = cfg->sandbox ? xstrdup(CODER_SANDBOX_PROMPT) : fsx_join(o->ctl, "prompt.md");
	size_t argc = strv_len(cfg->argv);
	char **cmd = xcalloc(argc + 1, sizeof *cmd);
	for (size_t i = 0; i < argc; i++)
		cmd[i] = fill_word(cfg->argv[i], pf, o->prompt ? o->prompt : "", o->work);
	bool on_stdin = !uses_placeholder(cfg->argv, "{prompt_file}") &&
	                !uses_placeholder(cfg->argv, "{prompt}");
	j->sp = start(loop, cfg, o, cmd, on_stdin ? (o->prompt ? o->prompt : "") : NULL,
	              cfg->timeout_ms, coder_spawned, j, &e2);
	strv_free(cmd);
	free(pf);
	if (!j->sp) {
		j->res.outcome = CODER_REFUSED;
		decision_set(&j->res.d, VERDICT_FAIL, "coder_config", "%s", e2.msg);
		return refuse(loop, j);
	}
	return j;
}

int coder_pid(const struct coder_job *j)
{
	return j && !j->refused ? spawn_pid(j->sp) : 0;
}

void coder_cancel(struct coder_job *j)
{
	if (j && !j->refused)
		spawn_cancel(j->sp);
}

/* ---- the work tree ------------------------------------------------------------------------- */

int coder_prepare_work(const char *work, struct ga_err *err)
{
	char *dir = fsx_join(work, ".claude");
	char *file = fsx_join(dir, "settings.json");
	int rc = 0;
	struct stat st;
	if (lstat(file, &st) != 0) {
		static const char settings[] = "{\"attribution\":{\"commit\":\"\",\"pr\":\"\"}}\n";
		if (fsx_mkdir_p(dir, err) != 0 ||
		    fsx_write_atomic(file, settings, sizeof settings - 1, err) != 0 ||
		    git_exclude_add(work, "/.claude/settings.json", err) != 0)
			rc = -1;
	}
	if (rc == 0 && (git_exclude_add(work, "/.claude/settings.local.json", err) != 0 ||
	                git_exclude_add(work, ".aider*", err) != 0))
		rc = -1;
	free(dir);
	free(file);
	return rc;
}

/* ---- tests ---------------------------------------------------------------------------------- */

/* A file of the clone, read only when it is a small regular file reached
 * without a symlink. Caller frees; NULL otherwise. */
static char *read_tree_file(const char *work, const char *name, size_t max)
{
	int dfd = open(work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max) {
		buf = xmalloc((size_t)st.st_size + 1);
		ssize_t n = read(fd, buf, (size_t)st.st_size);
		if (n < 0) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
		}
	}
	close(fd);
	return buf;
}

static bool make_target(const char *mk, const char *target)
{
	for (const char *p = mk; p && *p;) {
		size_t n = strcspn(p, "\n");
		const char *colon = memchr(p, ':', n);
		if (colon && p[0] != '\t' && p[0] != '.' && p[0] != '#' &&
		    !(colon + 1 < p + n && colon[1] == '=')) {
			/* "test check: deps" — any of the names before the colon. */
			const char *q = p;
			while (q < colon) {
				while (q < colon && isspace((unsigned char)*q))
					q++;
				const char *w = q;
				while (q < colon && !isspace((unsigned char)*q))
					q++;
				if ((size_t)(q - w) == strlen(target) &&
				    strncmp(w, target, strlen(target)) == 0)
					return true;
			}
		}
		p += n;
		if (*p)
			p++;
	}
	return false;
}

static void set_tests(struct coder_tests *t, enum coder_tests_kind k, char *const *argv)
{
	t->kind = k;
	struct strbuf sb = {0};
	for (size_t i = 0; argv[i] && i < CODER_MAX_ARGS; i++) {
		t->argv[i] = xstrdup(argv[i]);
		sb_printf(&sb, "%s%s", i ? " " : "", argv[i]);
	}
	err_fmt(t->command, sizeof t->command, "%s", sb_cstr(&sb));
	sb_free(&sb);
}

void coder_detect_tests(const struct coder_config *cfg, const char *work, struct coder_tests *t)
{
	memset(t, 0, sizeof *t);
	if (cfg && cfg->test_argv) {
		set_tests(t, CODER_TESTS_OWNER, cfg->test_argv);
		return;
	}
	char *pkg = read_tree_file(work, "package.json", 1024 * 1024);
	if (pkg) {
		cJSON *j = json_parse(pkg, strlen(pkg), NULL);
		const cJSON *scripts = cJSON_GetObjectItemCaseSensitive(j, "scripts");
		const char *test = json_string_or(scripts, "test", NULL);
		if (test && *test && !strstr(test, "no test specified")) {
			char *argv[] = {"npm", "test", NULL};
			set_tests(t, CODER_TESTS_NPM, argv);
		}
		cJSON_Delete(j);
		free(pkg);
		if (t->kind != CODER_TESTS_NONE)
			return;
	}
	static const char *const makefiles[] = {"GNUmakefile", "makefile", "Makefile", NULL};
	for (int i = 0; makefiles[i] && t->kind == CODER_TESTS_NONE; i++) {
		char *mk = read_tree_file(work, makefiles[i], 1024 * 1024);
		if (!mk)
			continue;
		const char *target = make_target(mk, "test")    ? "test"
		                     : make_target(mk, "check") ? "check"
		                                                : NULL;
		if (target) {
			char *argv[] = {"make", (char *)target, NULL};
			set_tests(t, CODER_TESTS_MAKE, argv);
		}
		free(mk);
	}
}

void coder_tests_free(struct coder_tests *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < CODER_MAX_ARGS && t->argv[i]; i++)
		free(t->argv[i]);
	memset(t, 0, sizeof *t);
}

/* npm's ways of saying its runner or a module is missing (§3.9 GATE 2). */
static bool runner_missing(const char *text)
{
	return contains_ci(text, "command not found") ||
	       (contains_ci(text, "not found") && contains_ci(text, "err!")) ||
	       contains_ci(text, "cannot find module") ||
	       contains_ci(text, "err_module_not_found") || contains_ci(text, "enoent");
}

static void tests_spawned(void *ud, const struct spawn_result *r)
{
	struct coder_job *j = ud;
	struct coder_tests_result *t = &j->tres;
	t->found = true;
	t->elapsed_ms = r->elapsed_ms;
	struct strbuf all = {0};
	sb_append(&all, r->out, r->out_len);
	sb_append(&all, r->err, r->err_len);
	size_t from = all.len > CODER_TESTS_TAIL_BYTES ? all.len - CODER_TESTS_TAIL_BYTES : 0;
	while (from < all.len && ((unsigned char)all.buf[from] & 0xC0) == 0x80)
		from++;
	err_fmt(t->tail, sizeof t->tail, "%s", sb_cstr(&all) + from);
	char how[GA_ERR_MSG_MAX];
	spawn_describe(r, j->timeout_ms, how, sizeof how);
	if (!r->started || sandbox_failed(r)) {
		t->line = "No tests ran";
		decision_set(&t->d, VERDICT_FAIL, "coder_sandbox", "the tests could not start: %s",
		             r->started ? r->err : how);
	} else if (spawn_ok(r)) {
		t->ran = t->passed = true;
		t->line = "Passed";
		decision_set(&t->d, VERDICT_PASS, "tests_passed", "%s passed in %llu s", t->command,
		             (unsigned long long)(r->elapsed_ms / 1000));
	} else if (r->timed_out) {
		t->ran = true;
		t->line = "Failed";
		decision_set(&t->d, VERDICT_FAIL, "tests_timeout", "%s %s", t->command, how);
	} else if (not_found(r) || (j->npm && runner_missing(sb_cstr(&all)))) {
		t->line = "No tests ran";
		decision_set(
		        &t->d, VERDICT_INFO, "tests_not_run",
		        "%s could not run (its runner or modules are not installed): not counted "
		        "as a failure",
		        t->command);
	} else {
		t->ran = true;
		t->line = "Failed";
		decision_set(&t->d, VERDICT_FAIL, "tests_failed", "%s failed (%s)", t->command,
		             how);
	}
	sb_free(&all);
	j->tdone(j->ud, t);
	free(j);
}

struct coder_job *coder_run_tests(uv_loop_t *loop, const struct coder_config *cfg,
                                  const struct coder_run_opts *o, const struct coder_tests *t,
                                  coder_tests_fn done, void *ud, struct ga_err *err)
{
	if (!cfg || !o || !t || !done || !o->work || !o->ctl) {
		err_set(err, "coder_run_tests: missing configuration or options");
		return NULL;
	}
	struct coder_job *j = job_new(JOB_TESTS, loop, ud, cfg->test_timeout_ms);
	j->tdone = done;
	j->npm = t->kind == CODER_TESTS_NPM;
	snprintf(j->tres.command, sizeof j->tres.command, "%s", t->command);
	if (t->kind == CODER_TESTS_NONE) {
		j->tres.line = "None found";
		decision_set(&j->tres.d, VERDICT_INFO, "tests_none",
		             "no tests found (no TASK_TEST_COMMAND, npm test script or make "
		             "test/check target)");
		return refuse(loop, j);
	}
	if (sandbox_refused(cfg, &j->tres.d)) {
		j->tres.found = true;
		j->tres.line = "No tests ran";
		return refuse(loop, j);
	}
	struct ga_err e2 = {{0}};
	if (write_ctl(o->ctl, "", &e2) != 0) {
		j->tres.found = true;
		j->tres.line = "No tests ran";
		decision_set(&j->tres.d, VERDICT_FAIL, "coder_config", "%s", e2.msg);
		return refuse(loop, j);
	}
	size_t argc = 0;
	while (argc < CODER_MAX_ARGS && t->argv[argc])
		argc++;
	char **cmd = xcalloc(argc + 1, sizeof *cmd);
	for (size_t i = 0; i < argc; i++)
		cmd[i] = fill_word(t->argv[i], "", "", o->work);
	j->sp = start(loop, cfg, o, cmd, NULL, cfg->test_timeout_ms, tests_spawned, j, &e2);
	strv_free(cmd);
	if (!j->sp) {
		j->tres.found = true;
		j->tres.line = "No tests ran";
		decision_set(&j->tres.d, VERDICT_FAIL, "coder_config", "%s", e2.msg);
		return refuse(loop, j);
	}
	return j;
}

/* ---- doctor -----------------------------------------------------------------------------------
 */

struct probe {
	bool done;
	bool ok;
	int status;
	char err[300];
	uint64_t ms;
};

static void probe_done(void *ud, const struct spawn_result *r)
{
	struct probe *p = ud;
	p->done = true;
	p->ok = spawn_ok(r);
	p->status = r->exit_status;
	p->ms = r->elapsed_ms;
	if (!r->started)
		err_fmt(p->err, sizeof p->err, "%s", r->error);
	else
		err_fmt(p->err, sizeof p->err, "%.*s", (int)strcspn(r->err, "\n"), r->err);
}

/* Runs cmd in the sandbox (or directly) on a private loop, to completion. */
static void probe_run(const struct coder_config *cfg, const struct coder_run_opts *o, char **cmd,
                      struct probe *p)
{
	uv_loop_t loop;
	memset(p, 0, sizeof *p);
	if (uv_loop_init(&loop) != 0) {
		err_fmt(p->err, sizeof p->err, "cannot create an event loop");
		return;
	}
	struct ga_err err = {{0}};
	if (!start(&loop, cfg, o, cmd, NULL, CODER_PROBE_TIMEOUT_MS, probe_done, p, &err)) {
		err_fmt(p->err, sizeof p->err, "%s", err.msg);
		uv_loop_close(&loop);
		return;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
}

static char *argv_text(char *const *v)
{
	struct strbuf sb;
	sb_init(&sb, 600);
	for (size_t i = 0; v && v[i]; i++) {
		bool q = strpbrk(v[i], " \t'\"") != NULL || !*v[i];
		if (sb_printf(&sb, "%s%s%s%s", i ? " " : "", q ? "'" : "", v[i], q ? "'" : "") !=
		    0) {
			sb_puts(&sb, " …");
			break;
		}
	}
	return sb_detach(&sb);
}

int coder_doctor(const struct env_file *env, const char *agent_home, const char *memory_dir,
                 coder_row_fn row, void *ud)
{
	struct coder_config cfg;
	struct ga_err err = {{0}};
	char buf[900];
	if (coder_config_load(env, agent_home, memory_dir, &cfg, &err) != 0) {
		row(ud, "coder", "FAIL", err.msg);
		coder_config_free(&cfg);
		return -1;
	}
	if (!cfg.configured) {
		row(ud, "coder", "off",
		    "CODER_COMMAND is not set: the agent does not work on tasks");
		coder_config_free(&cfg);
		return 0;
	}
	char *cmd = argv_text(cfg.argv);
	bool on_stdin = !uses_placeholder(cfg.argv, "{prompt_file}") &&
	                !uses_placeholder(cfg.argv, "{prompt}");
	snprintf(buf, sizeof buf, "%s (prompt %s); timeout %llu s; network %s", cmd,
	         on_stdin ? "on stdin" : "as an argument",
	         (unsigned long long)(cfg.timeout_ms / 1000),
	         cfg.network ? "on (it can reach anything this machine can, 127.0.0.1 included)"
	                     : "off (a coder that calls a model's API needs CODER_NETWORK=on)");
	free(cmd);
	row(ud, "coder", "ok", buf);
	int rc = 1;
	char tmpl[] = "/tmp/ga-coder-doctor-XXXXXX";
	char *tmp = mkdtemp(tmpl);
	char *work = tmp ? fsx_join(tmp, "work") : NULL;
	char *ctl = tmp ? fsx_join(tmp, "ctl") : NULL;
	struct coder_run_opts o = {.work = work, .ctl = ctl, .prompt = ""};
	if (!tmp || fsx_mkdir_p(work, &err) || write_ctl(ctl, "", &err)) {
		row(ud, "sandbox", "FAIL", tmp ? err.msg : "cannot create a temporary directory");
		rc = -1;
	} else if (!cfg.sandbox) {
		row(ud, "sandbox", "off",
		    "CODER_SANDBOX=off: the coder runs without bubblewrap (scrubbed environment, "
		    "timeout and bounds only); use this only when the agent runs in its own "
		    "container");
	} else if (!cfg.bwrap) {
		row(ud, "sandbox", "FAIL",
		    "bubblewrap (bwrap) is not installed, so no coder runs: install the Debian "
		    "package "
		    "bubblewrap (scripts/bootstrap.sh does), or set CODER_SANDBOX=off if the agent "
		    "runs "
		    "in a container of its own");
		rc = -1;
	} else {
		char *t[] = {"true", NULL};
		struct probe p;
		probe_run(&cfg, &o, t, &p);
		if (p.ok) {
			snprintf(buf, sizeof buf,
			         "%s works: ran `true` inside in %llu ms (only the clone writable, "
			         "no "
			         "home, memory or .env, network %s)",
			         cfg.bwrap, (unsigned long long)p.ms,
			         cfg.network ? "shared" : "none");
			row(ud, "sandbox", "ok", buf);
		} else {
			snprintf(buf, sizeof buf,
			         "%s cannot create its sandbox: %s — user namespaces may be "
			         "disabled "
			         "(sysctl kernel.unprivileged_userns_clone=1, or "
			         "user.max_user_namespaces > 0); or set CODER_SANDBOX=off if the "
			         "agent "
			         "runs in a container of its own",
			         cfg.bwrap, p.err[0] ? p.err : "no answer");
			row(ud, "sandbox", "FAIL", buf);
			rc = -1;
		}
	}
	if (rc == 1) {
		/* Is the coder's program there, as the sandbox sees it? */
		char *look[] = {"/bin/sh", "-c",        "command -v \"$1\" >/dev/null",
		                "sh",      cfg.argv[0], NULL};
		struct probe p;
		probe_run(&cfg, &o, look, &p);
		if (p.ok) {
			snprintf(buf, sizeof buf, "%s is found %s", cfg.argv[0],
			         cfg.sandbox ? "inside the sandbox" : "in PATH");
			row(ud, "coder bin", "ok", buf);
		} else {
			snprintf(buf, sizeof buf,
			         "%s is not found %s (PATH %s): install it under /usr, or list it "
			         "and "
			         "what it needs in CODER_RO_PATHS",
			         cfg.argv[0], cfg.sandbox ? "inside the sandbox" : "in PATH",
			         CODER_PATH);
			row(ud, "coder bin", "FAIL", buf);
			rc = -1;
		}
	}
	for (size_t i = 0; cfg.ro_paths[i]; i++)
		if (access(cfg.ro_paths[i], F_OK) != 0) {
			snprintf(buf, sizeof buf, "CODER_RO_PATHS: %s does not exist",
			         cfg.ro_paths[i]);
			row(ud, "coder paths", "warn", buf);
		}
	if (cfg.env_names[0]) {
		struct strbuf sb = {0};
		for (size_t i = 0; cfg.env_names[i]; i++)
			sb_printf(&sb, "%s%s", i ? ", " : "", cfg.env_names[i]);
		snprintf(buf, sizeof buf, "passed into the sandbox: %s", sb_cstr(&sb));
		sb_free(&sb);
		row(ud, "coder env", "", buf);
	}
	if (cfg.test_argv) {
		char *tc = argv_text(cfg.test_argv);
		snprintf(buf, sizeof buf, "TASK_TEST_COMMAND: %s (timeout %llu s)", tc,
		         (unsigned long long)(cfg.test_timeout_ms / 1000));
		free(tc);
	} else {
		snprintf(buf, sizeof buf,
		         "found per repository: an npm test script, else a make test/check target "
		         "(timeout %llu s)",
		         (unsigned long long)(cfg.test_timeout_ms / 1000));
	}
	row(ud, "task tests", "", buf);
	free(work);
	free(ctl);
	if (tmp)
		git_remove_tree(tmp);
	coder_config_free(&cfg);
	return rc;
}
