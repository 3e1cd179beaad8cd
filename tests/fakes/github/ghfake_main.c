/*
 * ghfake-server — the GitHub fake as its own process, for tests that run
 * the real general-agent binary (and kill and restart it while the fake's
 * state lives on).
 *
 *   ghfake-server [--token TOKEN:LOGIN]... [--repo OWNER/NAME[:readonly][:noissues]]...
 *                 [--port-file PATH] [--record PATH]
 *
 * Listens on 127.0.0.1 (a free port), writes the port to --port-file once
 * listening (atomically), appends every request as one JSON line to
 * --record before answering it, and exits 0 on SIGTERM or SIGINT. The
 * control endpoints (README.md: POST /_ghfake/fail, /secondary, /rate,
 * /delay, /repo; GET /_ghfake/state) switch faults and limits and dump the
 * state. Exit codes: 64 usage, 69 cannot listen, 73 cannot write the port
 * or record file.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tests/fakes/github/ghfake.h"
#include "tests/fakes/httpfake/httpfake_proc.h"

#define USAGE                                                                                      \
	"usage: ghfake-server [--token TOKEN:LOGIN]... [--repo "                                   \
	"OWNER/NAME[:readonly][:noissues]]... [--port-file PATH] [--record PATH]\n"

#define MAX_ARGS 64

/* "OWNER/NAME[:readonly][:noissues]" → ghfake_add_repo. -1 when malformed. */
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
			else
				return -1;
		}
	}
	char *slash = strchr(buf, '/');
	if (!slash || slash == buf || !slash[1] || strchr(slash + 1, '/') || slash - buf >= 40 ||
	    strlen(slash + 1) >= 101)
		return -1;
	*slash = '\0';
	ghfake_add_repo(f, buf, slash + 1, flags);
	return 0;
}

int main(int argc, char **argv)
{
	const char *port_file = NULL, *record = NULL;
	const char *tokens[MAX_ARGS], *repos[MAX_ARGS];
	size_t n_tokens = 0, n_repos = 0;
	static const struct option opts[] = {{"token", required_argument, NULL, 't'},
	                                     {"repo", required_argument, NULL, 'R'},
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
	for (size_t i = 0; i < n_repos; i++) {
		if (add_repo(f, repos[i]) != 0) {
			fprintf(stderr,
			        "ghfake-server: --repo '%s' is not "
			        "OWNER/NAME[:readonly][:noissues]\n",
			        repos[i]);
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
