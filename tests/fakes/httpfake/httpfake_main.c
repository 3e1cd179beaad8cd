/*
 * httpfake-server — an httpfake as its own process, for integration tests
 * that run real binaries (general-agent) against a fake service.
 *
 *   httpfake-server [--script FILE] [--port N] [--port-file PATH] [--record PATH]
 *
 * Listens on 127.0.0.1:N (0, the default, picks a free port), answers from
 * the JSON script (README.md), writes the bound port to --port-file once it
 * is listening (atomically: a reader never sees a partial file), appends
 * every request as one JSON line to --record before answering it, and exits
 * 0 on SIGTERM or SIGINT. Exit codes follow sysexits: 64 usage, 65 bad
 * script, 69 cannot listen, 73 cannot write the port or record file.
 */
#include "tests/fakes/httpfake/httpfake_proc.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *out)
{
	fputs("usage: httpfake-server [--script FILE] [--port N] [--port-file PATH] "
	      "[--record PATH]\n"
	      "  --script FILE     routes and responses as JSON (see "
	      "tests/fakes/httpfake/README.md);\n"
	      "                    without it every request is answered 404\n"
	      "  --port N          port on 127.0.0.1 (default 0: a free one)\n"
	      "  --port-file PATH  write the bound port here once listening\n"
	      "  --record PATH     append every request as a JSON line\n"
	      "Stops cleanly on SIGTERM or SIGINT.\n",
	      out);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"script", required_argument, NULL, 's'},
	        {"port", required_argument, NULL, 'p'},
	        {"port-file", required_argument, NULL, 'f'},
	        {"record", required_argument, NULL, 'r'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	const char *script = NULL, *port_file = NULL, *record = NULL;
	unsigned long port = 0;
	int c;
	while ((c = getopt_long(argc, argv, "s:p:f:r:h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 's':
			script = optarg;
			break;
		case 'p':
			errno = 0;
			port = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || port > 65535) {
				fprintf(stderr,
				        "httpfake-server: --port must be a number from 0 to "
				        "65535, got \"%s\"\n",
				        optarg);
				return HTTPFAKE_EX_USAGE;
			}
			break;
		case 'f':
			port_file = optarg;
			break;
		case 'r':
			record = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return HTTPFAKE_EX_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "httpfake-server: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return HTTPFAKE_EX_USAGE;
	}

	struct httpfake_proc pr;
	httpfake_proc_init(&pr, "httpfake-server");
	char err[512];
	struct httpfake *fake = httpfake_new((uint16_t)port, err, sizeof(err));
	if (!fake) {
		fprintf(stderr, "httpfake-server: %s\n", err);
		return HTTPFAKE_EX_UNAVAILABLE;
	}
	int rc = 0;
	if (script && httpfake_load_script_file(fake, script, err, sizeof(err)) < 0) {
		fprintf(stderr, "httpfake-server: %s\n", err);
		rc = HTTPFAKE_EX_DATAERR;
	} else if ((rc = httpfake_proc_start(&pr, fake, port_file, record)) == 0) {
		fprintf(stderr, "httpfake-server: listening on %s\n", httpfake_base_url(fake));
		int sig = httpfake_proc_wait(&pr);
		fprintf(stderr, "httpfake-server: %s, stopping after %llu requests\n",
		        sig == SIGTERM ? "SIGTERM" : "SIGINT",
		        (unsigned long long)httpfake_request_count(fake));
	}
	httpfake_free(fake);
	httpfake_proc_close(&pr);
	return rc;
}
