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
#include <getopt.h>
#include <stdio.h>

#include "tests/fakes/httpfake/httpfake_proc.h"
#include "tests/fakes/llm/llmfake.h"

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
			return HTTPFAKE_EX_USAGE;
		}
	}
	if (!script || optind != argc) {
		fputs("usage: llmfake-server --script FILE [--port-file PATH] [--record PATH]\n",
		      stderr);
		return HTTPFAKE_EX_USAGE;
	}
	struct httpfake_proc pr;
	httpfake_proc_init(&pr, "llmfake-server");
	char err[256];
	struct llmfake *f = llmfake_new(err, sizeof err);
	if (!f) {
		fprintf(stderr, "llmfake-server: cannot listen: %s\n", err);
		return HTTPFAKE_EX_UNAVAILABLE;
	}
	if (llmfake_load_script_file(f, script, err, sizeof err) != 0) {
		fprintf(stderr, "llmfake-server: %s: %s\n", script, err);
		llmfake_free(f);
		return HTTPFAKE_EX_DATAERR;
	}
	int rc = httpfake_proc_start(&pr, llmfake_http(f), port_file, record);
	if (rc == 0)
		httpfake_proc_wait(&pr);
	llmfake_free(f);
	httpfake_proc_close(&pr);
	return rc;
}
