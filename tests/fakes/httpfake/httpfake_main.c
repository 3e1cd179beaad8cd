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
#include "tests/fakes/httpfake/httpfake.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EX_USAGE_       64
#define EX_DATAERR_     65
#define EX_UNAVAILABLE_ 69
#define EX_CANTCREAT_   73

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

static void write_record(const struct httpfake_request *req, void *userdata)
{
	FILE *f = userdata;
	char *line = httpfake_request_to_json(req);
	fputs(line, f);
	fputc('\n', f);
	/* Flushed per line: the test reads the file while we run. */
	if (fflush(f) != 0)
		fprintf(stderr, "httpfake-server: cannot write the record file: %s\n",
		        strerror(errno));
	free(line);
}

static int write_port_file(const char *path, unsigned port)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		fprintf(stderr, "httpfake-server: --port-file path is too long: %s\n", path);
		return -1;
	}
	FILE *f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "httpfake-server: cannot create %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	int bad = fprintf(f, "%u\n", port) < 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		fprintf(stderr, "httpfake-server: cannot write port file %s: %s\n", path,
		        strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
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
				return EX_USAGE_;
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
			return EX_USAGE_;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "httpfake-server: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return EX_USAGE_;
	}

	/* Blocked before any thread starts, so libmicrohttpd's threads inherit
	 * the mask and sigwait() below is the only place the signals land. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	FILE *rec = NULL;
	if (record && !(rec = fopen(record, "a"))) {
		fprintf(stderr, "httpfake-server: cannot open record file %s: %s\n", record,
		        strerror(errno));
		return EX_CANTCREAT_;
	}

	char err[512];
	struct httpfake *fake = httpfake_new((uint16_t)port, err, sizeof(err));
	if (!fake) {
		fprintf(stderr, "httpfake-server: %s\n", err);
		if (rec)
			fclose(rec);
		return EX_UNAVAILABLE_;
	}
	int rc = 0;
	if (script && httpfake_load_script_file(fake, script, err, sizeof(err)) < 0) {
		fprintf(stderr, "httpfake-server: %s\n", err);
		rc = EX_DATAERR_;
		goto out;
	}
	if (rec)
		httpfake_set_observer(fake, write_record, rec);
	if (port_file && write_port_file(port_file, httpfake_port(fake)) < 0) {
		rc = EX_CANTCREAT_;
		goto out;
	}
	fprintf(stderr, "httpfake-server: listening on %s\n", httpfake_base_url(fake));

	int sig = 0;
	while (sigwait(&stop, &sig) != 0)
		;
	fprintf(stderr, "httpfake-server: %s, stopping after %llu requests\n",
	        sig == SIGTERM ? "SIGTERM" : "SIGINT",
	        (unsigned long long)httpfake_request_count(fake));
out:
	httpfake_free(fake);
	if (rec)
		fclose(rec);
	return rc;
}
