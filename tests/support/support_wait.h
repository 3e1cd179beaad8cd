/*
 * support_wait — waiting for what a child process (struct proc, proc.h)
 * writes: a port file, the n-th line of its stdout. Shared by the
 * integration harnesses that start servers (support_fake, support_room,
 * support_redis, the dashboard's dash_host).
 *
 * The race these helpers exist to get right: read the output → the child
 * writes its line and exits → the liveness check says "exited" → the line
 * is never seen (a CI failure of stop 17). So once a child is seen to have
 * exited, the output is read ONE more time before giving up, and the
 * answer says which way it ended: with the line, with the exit (and its
 * status), or with the timeout.
 *
 * Nothing here sleeps and hopes: each helper polls a real condition every
 * SUPPORT_POLL_MS up to the caller's timeout. No cmocka: failures come back
 * as -1 / NULL with a sentence in err, the caller decides to fail_msg.
 */
#ifndef GA_TESTS_SUPPORT_SUPPORT_WAIT_H
#define GA_TESTS_SUPPORT_SUPPORT_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc.h"

#define SUPPORT_WAIT_MS 10000 /* the generous default of the harnesses */
#define SUPPORT_POLL_MS 5

int64_t support_now_ms(void); /* CLOCK_MONOTONIC */
void support_sleep_ms(int ms);

/* A port on 127.0.0.1 that was free a moment ago (bound to 0 and released),
 * for servers that cannot be told "pick one and report it" (redis-server).
 * -1 when no socket can be bound. */
int support_free_port(void);

/* Exit code of an exited proc, or 128+signal. */
int support_exit_code(const struct proc *p);

/* Waits until path holds a number and a newline (the fakes and agent-space
 * write it atomically once listening) and returns the port. -1 when p
 * exited first (err names the status; the file is read once more after
 * the exit was seen) or after timeout_ms (err says so). err may be NULL. */
int support_wait_port_file(struct proc *p, const char *path, int timeout_ms, char *err,
                           size_t errlen);

/* The n-th complete line (0-based) of p's stdout (caller frees), or NULL
 * when p exited without writing it (read once more after the exit) or
 * after timeout_ms. *exited (may be NULL) tells the two NULLs apart. */
char *support_wait_line(struct proc *p, size_t n, int timeout_ms, bool *exited);

#endif
