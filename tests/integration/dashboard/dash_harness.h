/*
 * dash_harness — what the dashboard's integration tests share: the host
 * process (dash_host, see there) and a small HTTP/1.1 client over real
 * sockets on 127.0.0.1 that sends raw requests (so hostile ones can be
 * written byte by byte) and reads answers with Connection: close, plus
 * event streams read incrementally.
 *
 * Timeouts are generous (DASH_WAIT_MS): tests wait for conditions, never
 * for a fixed time.
 */
#ifndef GA_TESTS_INTEGRATION_DASHBOARD_DASH_HARNESS_H
#define GA_TESTS_INTEGRATION_DASHBOARD_DASH_HARNESS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "proc.h"

#define DASH_WAIT_MS 10000

struct dash_host {
	struct proc p;
	char *home; /* temp dir: memory/ inside */
	char memory[512];
	int port;
	size_t lines_seen; /* stdout lines consumed by dash_cmd */
};

/* Starts dash_host with extra arguments (NULL-terminated, may be NULL).
 * 0 when it listens; -1 when it exited or said "error: …" (its output is
 * then in *out_error when not NULL; caller frees). */
int dash_start(struct dash_host *h, const char *const *extra, char **out_error);
/* Sends a command line and returns its one answer line (caller frees), or
 * NULL after DASH_WAIT_MS. */
char *dash_cmd(struct dash_host *h, const char *cmd);
/* "quit" and the exit code (-1: it did not exit in time). */
int dash_quit(struct dash_host *h);
void dash_stop(struct dash_host *h); /* kills if needed, removes the home */

struct http_resp {
	int status;
	char *head; /* status line and headers */
	char *body;
	size_t body_len;
};

/* Sends raw bytes and reads the whole answer (the request should say
 * Connection: close). 0, or -1 on a socket error or a timeout. */
int http_raw(int port, const char *req, size_t len, struct http_resp *out);
/* GET/POST with Host 127.0.0.1:port and extra header lines ("K: V\r\n…",
 * may be NULL). */
int http_get(int port, const char *path, const char *extra, struct http_resp *out);
int http_post(int port, const char *path, const char *extra, const char *body,
              struct http_resp *out);
/* A header's value in head (case-insensitive name; static buffer) or NULL. */
const char *http_header(const struct http_resp *r, const char *name);
cJSON *http_json(const struct http_resp *r); /* NULL when the body is not JSON */
void http_resp_free(struct http_resp *r);

/* An event stream: connect and send the request; dash_sse_wait reads until
 * needle is in what was received (true) or the timeout. rcvbuf > 0 sets a
 * small receive buffer (a slow client). */
struct sse_conn {
	int fd;
	char *buf;
	size_t len, cap;
};
int sse_open(int port, const char *extra, int rcvbuf, struct sse_conn *c);
bool sse_wait(struct sse_conn *c, const char *needle, int timeout_ms);
void sse_close(struct sse_conn *c);

#endif
