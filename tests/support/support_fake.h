/*
 * support_fake — one of the fake services (tests/fakes: ghfake-server,
 * llmfake-server, bskyfake-server, httpfake-server) as a child process of
 * a test, on a free port of 127.0.0.1. They all take --port-file and
 * --record and stop cleanly on SIGTERM (tests/fakes/httpfake/httpfake_proc.h),
 * so one starter serves them all.
 *
 * The port file and the record (one JSON line per request) are
 * DIR/NAME.port and DIR/NAME.requests, NAME being the binary's file name;
 * the process's stdout and stderr are captured in DIR (proc.h) and come
 * back in the error when it does not start. Its state lives as long as the
 * process: a test may kill and restart the code under test around it.
 *
 * Every started fake ends with support_fake_stop (also on failure paths:
 * it accepts a fake that never started). Children die with the test
 * process (proc.h), so a crashed test leaves no fake behind.
 */
#ifndef GA_TESTS_SUPPORT_SUPPORT_FAKE_H
#define GA_TESTS_SUPPORT_SUPPORT_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "proc.h"

struct support_fake {
	struct proc proc;
	bool started;
	int port;
	char url[64]; /* "http://127.0.0.1:PORT" */
	char port_file[600];
	char record[600];
};

/* Starts $GA_BUILD_DIR/<binary> (a path relative to the build directory,
 * e.g. "tests/fakes/github/ghfake-server") in dir with argv (NULL-terminated,
 * may be NULL) plus --port-file and --record, and waits up to
 * SUPPORT_WAIT_MS for its port. 0, or -1 with err naming the binary, how
 * it ended and its stderr (nothing is left running). */
int support_fake_start(struct support_fake *f, const char *binary, const char *dir,
                       const char *const *argv, char *err, size_t errlen);

/* SIGTERM, then waits for the exit (SIGKILL after SUPPORT_WAIT_MS).
 * Returns its exit code (0 for a clean stop), 128+signal, or -1 when it
 * was not running. The port file and record stay. */
int support_fake_stop(struct support_fake *f);

#endif
