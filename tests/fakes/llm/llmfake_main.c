/*
 * llmfake-server — the chat-completions fake as its own process, for tests
 * that run the real general-agent binary.
 *
 *   llmfake-server --script FILE [--port-file PATH] [--record PATH]
 *
 * Listens on 127.0.0.1 (a free port), answers from the script (README.md),
 * writes the port to --port-file once listening (atomically), appends
 * every request as one JSON line to --record before answering it, and exits
 * 0 on SIGTERM or SIGINT. Exit codes: 64 usage, 65 bad script, 69 cannot
 * listen, 73 cannot write the port or record file.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fakes/llm/llmfake.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void write_record(const struct httpfake_request *req, void *ud)
{
	FILE *f = ud;
	char *line = httpfake_request_to_json(req);
	fputs(line, f);
	fputc('\n', f);
	fflush(f);
	free(line);
}

int main(int argc, char **argv)
{
	const char *script = NULL, *port_file = NULL, *record = NULL;
	static const struct option opts[] = {{"script", required_argument, NULL, 's'},
	                                     {"port-file", required_argument, NULL, 'p'},
	                                     {"record", required_argument, NULL, 'r'},
	                                     {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			script = optarg;
			break;
		case 'p':
			port_file = optarg;
			break;
		case 'r':
			record = optarg;
			break;
		default:
			fputs("usage: llmfake-server --script FILE [--port-file PATH] [--record "
			      "PATH]\n",
			      stderr);
			return 64;
		}
	}
	if (!script || optind != argc) {
		fputs("usage: llmfake-server --script FILE [--port-file PATH] [--record PATH]\n",
		      stderr);
		return 64;
	}
	char err[256];
	struct llmfake *f = llmfake_new(err, sizeof err);
	if (!f) {
		fprintf(stderr, "llmfake-server: cannot listen: %s\n", err);
		return 69;
	}
	if (llmfake_load_script_file(f, script, err, sizeof err) != 0) {
		fprintf(stderr, "llmfake-server: %s: %s\n", script, err);
		llmfake_free(f);
		return 65;
	}
	FILE *rec = NULL;
	if (record) {
		rec = fopen(record, "a");
		if (!rec) {
			fprintf(stderr, "llmfake-server: cannot open %s: %s\n", record,
			        strerror(errno));
			llmfake_free(f);
			return 73;
		}
		httpfake_set_observer(llmfake_http(f), write_record, rec);
	}
	if (port_file) {
		char tmp[4096];
		snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
		FILE *pf = fopen(tmp, "w");
		if (!pf || fprintf(pf, "%u\n", (unsigned)httpfake_port(llmfake_http(f))) < 0 ||
		    fclose(pf) != 0 || rename(tmp, port_file) != 0) {
			fprintf(stderr, "llmfake-server: cannot write %s: %s\n", port_file,
			        strerror(errno));
			if (rec)
				fclose(rec);
			llmfake_free(f);
			return 73;
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* Block the signals so none can slip in between the check and the
	 * wait; sigsuspend unblocks them atomically. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!stop)
		sigsuspend(&old);
	llmfake_free(f);
	if (rec)
		fclose(rec);
	return 0;
}
