/*
 * bskyfake-server — the Bluesky XRPC fake as its own process, for tests
 * that run the real general-agent binary (and kill and restart it while the
 * fake's state — accounts, sessions, posts, notifications — lives on).
 *
 *   bskyfake-server [--account HANDLE:PASSWORD]... [--access-ttl-ms N]
 *                   [--port-file PATH] [--record PATH]
 *
 * Listens on 127.0.0.1 (a free port), writes the port to --port-file once
 * listening (atomically), appends every request as one JSON line to
 * --record before answering it, and exits 0 on SIGTERM or SIGINT. Each
 * account's DID is printed on stdout as "HANDLE DID". The control
 * endpoints (bskyfake.h: POST /_bskyfake/account, /post, /expire, /revoke,
 * /429, /fail; GET /_bskyfake/records, /state) inject mentions, expire
 * tokens, force 429s and list what was created. Exit codes: 64 usage, 69
 * cannot listen, 73 cannot write the port or record file.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakes/bsky/bskyfake.h"
#include "tests/fakes/httpfake/httpfake_proc.h"

#define USAGE                                                                                      \
	"usage: bskyfake-server [--account HANDLE:PASSWORD]... [--access-ttl-ms N] "               \
	"[--port-file PATH] [--record PATH]\n"

#define MAX_ACCOUNTS 32

int main(int argc, char **argv)
{
	const char *port_file = NULL, *record = NULL;
	const char *accounts[MAX_ACCOUNTS];
	size_t n_accounts = 0;
	long long access_ttl = 0;
	static const struct option opts[] = {{"account", required_argument, NULL, 'a'},
	                                     {"access-ttl-ms", required_argument, NULL, 't'},
	                                     {"port-file", required_argument, NULL, 'p'},
	                                     {"record", required_argument, NULL, 'r'},
	                                     {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			if (n_accounts == MAX_ACCOUNTS || !strchr(optarg, ':')) {
				fprintf(stderr,
				        "bskyfake-server: --account takes HANDLE:PASSWORD (at most "
				        "%d)\n",
				        MAX_ACCOUNTS);
				return HTTPFAKE_EX_USAGE;
			}
			accounts[n_accounts++] = optarg;
			break;
		case 't': {
			char *end;
			access_ttl = strtoll(optarg, &end, 10);
			if (*end || access_ttl < 1000) {
				fprintf(stderr,
				        "bskyfake-server: --access-ttl-ms takes ms >= 1000\n");
				return HTTPFAKE_EX_USAGE;
			}
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
	httpfake_proc_init(&pr, "bskyfake-server");
	char err[256];
	struct bskyfake *f = bskyfake_new(err, sizeof err);
	if (!f) {
		fprintf(stderr, "bskyfake-server: cannot listen: %s\n", err);
		return HTTPFAKE_EX_UNAVAILABLE;
	}
	if (access_ttl)
		bskyfake_set_token_ttl(f, access_ttl, (int64_t)60 * 24 * 3600 * 1000);
	for (size_t i = 0; i < n_accounts; i++) {
		char buf[512];
		snprintf(buf, sizeof buf, "%s", accounts[i]);
		char *colon = strchr(buf, ':');
		*colon = '\0';
		if (!buf[0] || !colon[1] || strlen(buf) > 253 || strlen(colon + 1) > 127) {
			fprintf(stderr,
			        "bskyfake-server: --account '%s' needs HANDLE and PASSWORD\n",
			        accounts[i]);
			bskyfake_free(f);
			return HTTPFAKE_EX_USAGE;
		}
		char did[BSKYFAKE_DID_MAX];
		bskyfake_add_account(f, buf, colon + 1, did);
		printf("%s %s\n", buf, did);
	}
	fflush(stdout);
	int rc = httpfake_proc_start(&pr, bskyfake_http(f), port_file, record);
	if (rc == 0)
		httpfake_proc_wait(&pr);
	bskyfake_free(f);
	httpfake_proc_close(&pr);
	return rc;
}
