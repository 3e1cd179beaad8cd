/*
 * httpfake_proc — what every fake's server program (httpfake-server,
 * ghfake-server, llmfake-server, bskyfake-server) does around its fake: stop
 * on SIGTERM or SIGINT, append each request to a --record file, write the
 * bound port to a --port-file, and wait.
 *
 * Use, in main():
 *
 *   struct httpfake_proc pr;
 *   httpfake_proc_init(&pr, "ghfake-server");   // first: before any fake starts
 *   ... parse arguments, start the fake, configure it ...
 *   int rc = httpfake_proc_start(&pr, http, port_file, record);
 *   if (rc == 0)
 *           httpfake_proc_wait(&pr);             // until SIGTERM / SIGINT
 *   ... free the fake ...
 *   httpfake_proc_close(&pr);                    // after the fake is freed
 *
 * Signals: httpfake_proc_init blocks SIGTERM and SIGINT in the calling
 * thread before any fake exists, so libmicrohttpd's threads inherit the mask
 * and httpfake_proc_wait (sigwait) is the only place they land — a signal
 * cannot be taken by a connection thread and missed. SIGPIPE is ignored (a
 * client that hangs up mid-answer must not kill the fake).
 *
 * Exit codes follow sysexits, the same in every server program: 64 usage,
 * 65 bad script, 69 cannot listen, 73 cannot write the port or record file.
 */
#ifndef GA_TESTS_FAKES_HTTPFAKE_HTTPFAKE_PROC_H
#define GA_TESTS_FAKES_HTTPFAKE_HTTPFAKE_PROC_H

#include <signal.h>
#include <stdio.h>

#include "tests/fakes/httpfake/httpfake.h"

#define HTTPFAKE_EX_USAGE       64
#define HTTPFAKE_EX_DATAERR     65
#define HTTPFAKE_EX_UNAVAILABLE 69
#define HTTPFAKE_EX_CANTCREAT   73

struct httpfake_proc {
	const char *prog; /* program name, the prefix of every message */
	sigset_t stop;    /* SIGTERM and SIGINT, blocked */
	FILE *record;     /* --record, or NULL */
};

/* Blocks SIGTERM and SIGINT in the calling thread and ignores SIGPIPE. Call
 * it before the first fake is created. prog is borrowed (a literal). */
void httpfake_proc_init(struct httpfake_proc *pr, const char *prog);

/* Opens record (appended; NULL = none) and makes it the fake's observer,
 * then writes the fake's port and a newline to port_file (NULL = none)
 * atomically (PATH.tmp, then renamed), so a reader that sees the file may
 * use the port and finds every earlier request recorded. Returns 0, or
 * HTTPFAKE_EX_CANTCREAT after a sentence on stderr naming the file. */
int httpfake_proc_start(struct httpfake_proc *pr, struct httpfake *fake, const char *port_file,
                        const char *record);

/* Writes "PORT\n" to path atomically. 0, or -1 after a sentence on stderr
 * naming prog and the file. */
int httpfake_proc_write_port_file(const char *prog, const char *path, unsigned port);

/* Waits for SIGTERM or SIGINT and returns it. */
int httpfake_proc_wait(struct httpfake_proc *pr);

/* Closes the record file. Call after the fake is freed: its observer
 * writes there until then. */
void httpfake_proc_close(struct httpfake_proc *pr);

#endif
