/*
 * ghfake-server — the GitHub fake as its own process, for tests that run
 * the real general-agent binary (and kill and restart it while the fake's
 * state lives on).
 *
 *   ghfake-server [--token TOKEN:LOGIN]... [--org ORG]...
 *                 [--repo OWNER/NAME[:readonly][:noissues][:private][:template]]...
 *                 [--seed OWNER/NAME=DIR]... [--permission OWNER/NAME:LOGIN:PERM]...
 *                 [--port-file PATH] [--record PATH]
 *
 * Listens on 127.0.0.1 (a free port), writes the port to --port-file once
 * listening (atomically), appends every request as one JSON line to
 * --record before answering it, and exits 0 on SIGTERM or SIGINT. The
 * control endpoints (README.md: POST /_ghfake/fail, /secondary, /rate,
 * /delay, /repo; GET /_ghfake/state) switch faults and limits and dump the
 * state (GET /_ghfake/state) and the counters (GET /_ghfake/stats); POST
 * /_ghfake/commit makes a commit as if someone pushed it. --seed commits
 * every file under DIR to the repository's default branch (after all
 * --repo). Exit codes: 64 usage, 69 cannot listen, 73 cannot write the port
 * or record file.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "tests/fakes/github/ghfake.h"
#include "tests/fakes/httpfake/httpfake_proc.h"

#define USAGE                                                                                      \
	"usage: ghfake-server [--token TOKEN:LOGIN]... [--org ORG]... [--repo "                    \
	"OWNER/NAME[:readonly][:noissues][:private][:template]]... [--seed OWNER/NAME=DIR]... "    \
	"[--permission OWNER/NAME:LOGIN:PERM]... [--port-file PATH] [--record PATH]\n"

#define MAX_ARGS 64

/* Splits "OWNER/NAME" (GitHub's characters) in place. -1 when malformed. */
static int split_repo(char *buf, char **name)
{
	char *slash = strchr(buf, '/');
	if (!slash || slash == buf || !slash[1] || strchr(slash + 1, '/') || slash - buf >= 40 ||
	    strlen(slash + 1) >= 101)
		return -1;
	*slash = '\0';
	*name = slash + 1;
	for (const char *p = buf; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
			return -1;
	for (const char *p = *name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
			return -1;
	return 0;
}

/* "OWNER/NAME[:readonly][:noissues][:private][:template]" → ghfake_add_repo.
 * -1 when malformed. */
static int add_repo(struct ghfake *f, const char *spec)
{
	char buf[256];
	if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
		return -1;
	unsigned flags = 0;
	char *opt = strchr(buf, ':');
	if (opt) {
		*opt++ = '\0';
		for (char *save, *t = strtok_r(opt, ":", &save); t;
		     t = strtok_r(NULL, ":", &save)) {
			if (strcmp(t, "readonly") == 0)
				flags |= GHFAKE_REPO_READONLY;
			else if (strcmp(t, "noissues") == 0)
				flags |= GHFAKE_REPO_ISSUES_DISABLED;
			else if (strcmp(t, "private") == 0)
				flags |= GHFAKE_REPO_PRIVATE;
			else if (strcmp(t, "template") == 0)
				flags |= GHFAKE_REPO_TEMPLATE;
			else
				return -1;
		}
	}
	char *name;
	if (split_repo(buf, &name) != 0)
		return -1;
	ghfake_add_repo(f, buf, name, flags);
	return 0;
}

/* Was OWNER/NAME (the first len bytes of spec) given with --repo? */
static bool listed(const char *spec, size_t len, const char *const *repos, size_t n_repos)
{
	for (size_t i = 0; i < n_repos; i++)
		if (strncasecmp(repos[i], spec, len) == 0 &&
		    (repos[i][len] == '\0' || repos[i][len] == ':'))
			return true;
	return false;
}

/* "OWNER/NAME=DIR": DIR must be a directory; the repository must exist. */
static int seed(struct ghfake *f, const char *spec, const char *const *repos, size_t n_repos)
{
	char buf[1024];
	if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
		return -1;
	char *eq = strchr(buf, '='), *name;
	if (!eq)
		return -1;
	*eq = '\0';
	struct stat st;
	if (!listed(spec, (size_t)(eq - buf), repos, n_repos) || split_repo(buf, &name) != 0 ||
	    stat(eq + 1, &st) != 0 || !S_ISDIR(st.st_mode))
		return -1;
	ghfake_seed_dir(f, buf, name, NULL, eq + 1, "Initial commit");
	return 0;
}

/* "OWNER/NAME:LOGIN:PERM" of a --repo → ghfake_set_permission. */
static int permission(struct ghfake *f, const char *spec, const char *const *repos, size_t n_repos)
{
	static const char *const perms[] = {"none",     "read",  "triage", "write",
	                                    "maintain", "admin", NULL};
	char buf[512], *name;
	if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
		return -1;
	char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2 || c2 == c1 + 1 || strlen(c1 + 1) - strlen(c2) >= 40)
		return -1;
	*c1 = *c2 = '\0';
	bool ok = false;
	for (size_t i = 0; perms[i]; i++)
		ok |= strcmp(c2 + 1, perms[i]) == 0;
	if (!ok || !listed(spec, (size_t)(c1 - buf), repos, n_repos) || split_repo(buf, &name) != 0)
		return -1;
	ghfake_set_permission(f, buf, name, c1 + 1, c2 + 1);
	return 0;
}

int main(int argc, char **argv)
{
	const char *port_file = NULL, *record = NULL;
	const char *tokens[MAX_ARGS], *repos[MAX_ARGS], *orgs[MAX_ARGS], *seeds[MAX_ARGS],
	        *perms[MAX_ARGS];
	size_t n_tokens = 0, n_repos = 0, n_orgs = 0, n_seeds = 0, n_perms = 0;
	static const struct option opts[] = {{"token", required_argument, NULL, 't'},
	                                     {"repo", required_argument, NULL, 'R'},
	                                     {"org", required_argument, NULL, 'o'},
	                                     {"seed", required_argument, NULL, 's'},
	                                     {"permission", required_argument, NULL, 'P'},
	                                     {"port-file", required_argument, NULL, 'p'},
	                                     {"record", required_argument, NULL, 'r'},
	                                     {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 't':
			if (n_tokens == MAX_ARGS || !strchr(optarg, ':')) {
				fprintf(stderr,
				        "ghfake-server: --token takes TOKEN:LOGIN (at most %d)\n",
				        MAX_ARGS);
				return HTTPFAKE_EX_USAGE;
			}
			tokens[n_tokens++] = optarg;
			break;
		case 'R':
			if (n_repos == MAX_ARGS) {
				fprintf(stderr, "ghfake-server: at most %d --repo\n", MAX_ARGS);
				return HTTPFAKE_EX_USAGE;
			}
			repos[n_repos++] = optarg;
			break;
		case 'o':
		case 's':
		case 'P': {
			const char **v = ch == 'o' ? orgs : ch == 's' ? seeds : perms;
			size_t *n = ch == 'o' ? &n_orgs : ch == 's' ? &n_seeds : &n_perms;
			if (*n == MAX_ARGS) {
				fprintf(stderr, "ghfake-server: at most %d of each option\n",
				        MAX_ARGS);
				return HTTPFAKE_EX_USAGE;
			}
			v[(*n)++] = optarg;
			break;
		}
		case 'p':
			port_file = optarg;
			break;
		case 'r':
			record = optarg;
			break;
		default:
			fputs(USAGE, stderr);
			return HTTPFAKE_EX_USAGE;
		}
	}
	if (optind != argc) {
		fputs(USAGE, stderr);
		return HTTPFAKE_EX_USAGE;
	}
	struct httpfake_proc pr;
	httpfake_proc_init(&pr, "ghfake-server");
	char err[256];
	struct ghfake *f = ghfake_new(err, sizeof err);
	if (!f) {
		fprintf(stderr, "ghfake-server: cannot listen: %s\n", err);
		return HTTPFAKE_EX_UNAVAILABLE;
	}
	for (size_t i = 0; i < n_tokens; i++) {
		char buf[512];
		snprintf(buf, sizeof buf, "%s", tokens[i]);
		char *colon = strchr(buf, ':');
		*colon = '\0';
		if (!buf[0] || !colon[1]) {
			fprintf(stderr, "ghfake-server: --token '%s' needs both TOKEN and LOGIN\n",
			        tokens[i]);
			ghfake_free(f);
			return HTTPFAKE_EX_USAGE;
		}
		ghfake_add_token(f, buf, colon + 1);
	}
	for (size_t i = 0; i < n_orgs; i++) {
		const char *o = orgs[i];
		bool ok = *o && strlen(o) < 40;
		for (const char *p = o; *p; p++)
			ok &= isalnum((unsigned char)*p) || strchr("-_.", *p) != NULL;
		if (!ok) {
			fprintf(stderr, "ghfake-server: --org '%s' is not an organisation name\n",
			        o);
			ghfake_free(f);
			return HTTPFAKE_EX_USAGE;
		}
		ghfake_add_org(f, o);
	}
	for (size_t i = 0; i < n_repos; i++) {
		if (add_repo(f, repos[i]) != 0) {
			fprintf(stderr,
			        "ghfake-server: --repo '%s' is not "
			        "OWNER/NAME[:readonly][:noissues][:private][:template]\n",
			        repos[i]);
			ghfake_free(f);
			return HTTPFAKE_EX_USAGE;
		}
	}
	for (size_t i = 0; i < n_perms; i++) {
		if (permission(f, perms[i], repos, n_repos) != 0) {
			fprintf(stderr,
			        "ghfake-server: --permission '%s' is not OWNER/NAME:LOGIN:PERM "
			        "(none, read, triage, write, maintain or admin) of a --repo\n",
			        perms[i]);
			ghfake_free(f);
			return HTTPFAKE_EX_USAGE;
		}
	}
	char why[256];
	if (n_seeds && !ghfake_git_available(f, why, sizeof why)) {
		fprintf(stderr, "ghfake-server: --seed needs git: %s\n", why);
		ghfake_free(f);
		return HTTPFAKE_EX_UNAVAILABLE;
	}
	for (size_t i = 0; i < n_seeds; i++) {
		if (seed(f, seeds[i], repos, n_repos) != 0) {
			fprintf(stderr,
			        "ghfake-server: --seed '%s' is not OWNER/NAME=DIR of a --repo and "
			        "an "
			        "existing directory\n",
			        seeds[i]);
			ghfake_free(f);
			return HTTPFAKE_EX_USAGE;
		}
	}
	int rc = httpfake_proc_start(&pr, ghfake_http(f), port_file, record);
	if (rc == 0)
		httpfake_proc_wait(&pr);
	ghfake_free(f);
	httpfake_proc_close(&pr);
	return rc;
}
