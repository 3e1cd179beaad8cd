/*
 * harness — start/stop a real `agent-space` for a test, and the small
 * vocabulary the conformance tests are written in (join, expect a message of
 * a type, expect silence, expect a close, read the chat log).
 *
 * One `struct space` per test: a fresh temporary directory (data dir, stderr
 * log), the server process (fork/exec of $GA_BUILD_DIR/agent-space with
 * `--no-mdns --port-file` through tests/support/proc, in a clean environment
 * with SPACE_PORT=0, SPACE_BIND=127.0.0.1 and the test's extra
 * environment), a pipe on its stdin for host input, and every client and
 * parsed JSON value the test created. space_stop() releases all of it, kills
 * the server if it does not exit on SIGTERM, prints the server log when the
 * test did not reach space_pass(), and removes the directory.
 *
 * Helpers that wait poll real conditions with generous timeouts
 * (H_TIMEOUT_MS); "expect none" helpers wait a short quiet period, since
 * silence can only be observed over an interval. Failures are reported with
 * cmocka's fail_msg, so they must be called from inside a cmocka test.
 *
 * Every cJSON value returned is owned by the harness (freed in space_stop);
 * tests never free them.
 */
#ifndef GA_TESTS_INTEGRATION_SPACE_HARNESS_H
#define GA_TESTS_INTEGRATION_SPACE_HARNESS_H

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc.h"
#include "tests/integration/space/wsclient.h"

/* How long to wait for something that must happen. */
#define H_TIMEOUT_MS 10000
/* How long to watch for something that must not happen. */
#define H_QUIET_MS 300

struct space {
	struct proc proc; /* the server process (tests/support/proc.h) */
	pid_t pid;        /* proc.pid, for tests that signal the server */
	int port;
	char dir[256];
	char data_dir[300];
	char log_path[300];
	char port_file[300];
	int exit_status; /* after space_wait_exit: exit code, or 128+signal */
	bool exited;
	bool passed;
	bool keep_dir; /* set before space_stop to keep the directory (restarts) */
	/* Owned resources, released by space_stop. */
	struct ws_client **clients;
	size_t nclients, cap_clients;
	cJSON **json;
	size_t njson, cap_json;
};

/* Environment handed to the server in addition to the defaults: a
 * NULL-terminated list of "K=V" strings (may be NULL). */
struct space *space_start_(const char *const *env);
/* Like space_start but lets the caller prepare the data directory first
 * (space_data_dir_for(dir) is where the chat log will live). */
struct space *space_start_in_(const char *dir, const char *const *env);
/* Like space_start, under an open-file limit of nofile (soft and hard;
 * /usr/bin/prlimit sets it and execs the server). */
struct space *space_start_nofile_(const char *const *env, unsigned nofile);
/* Makes a fresh temporary directory for space_start_in. Caller frees. */
char *space_mkdtemp(void);

/* Marks the test as passed (the server log is then not printed). */
void space_pass(struct space *s);
/* Stops the server (SIGTERM, wait, SIGKILL if needed), frees everything.
 * Returns 0 when the server exited with status 0, -1 otherwise (a crash, an
 * ASan report, a hang). Accepts NULL. */
int space_stop(struct space *s);
/* Waits until the server exits. Returns 0 when it did within timeout_ms. */
int space_wait_exit(struct space *s, int timeout_ms);
/* True while the server process is running. */
bool space_alive(struct space *s);

/* Writes one line of host input (a '\n' is appended). */
void space_host(struct space *s, const char *line);
/* Closes the server's stdin (EOF). */
void space_host_eof(struct space *s);

/* The server's stderr+stdout so far (caller frees). */
char *space_read_log(struct space *s);
/* Polls the server output until it contains `needle`; true when found. */
bool space_wait_log(struct space *s, const char *needle, int timeout_ms);
/* Current size of the server output, and a wait for `needle` in the output
 * written after `offset`. */
size_t space_log_size(struct space *s);
bool space_wait_log_from(struct space *s, size_t offset, const char *needle, int timeout_ms);

/* ---- clients ----------------------------------------------------------- */

/* Connects (handshake only). Fails the test when that is impossible. */
struct ws_client *h_connect_(struct space *s);
/* Connects with options; returns NULL on failure without failing the test. */
struct ws_client *h_connect_ex(struct space *s, const char *path, const char *extra_headers,
                               int rcvbuf, int *status_out);
/* Hands ownership of a client to the harness (for ones made by hand). */
void h_adopt(struct space *s, struct ws_client *c);
/* Closes a client now (abruptly, no close frame) and forgets it. */
void h_drop(struct space *s, struct ws_client *c);
/* The same with a TCP reset instead of a FIN. */
void h_drop_reset(struct space *s, struct ws_client *c);
/* Sends a close frame, waits for the server's close, then drops. */
void h_close_(struct space *s, struct ws_client *c);

/* Sends a join {name, id, version "1.0.0"} and waits for the newcomer's
 * presence and history_response (the reference's joinAndWait), then for the
 * second presence, so the queue is clean afterwards. */
struct ws_client *h_join_(struct space *s, const char *name, const char *id);
/* The same with a full join object (JSON text). Returns the
 * history_response via *history when non-NULL. */
struct ws_client *h_join_json_(struct space *s, const char *join_json, cJSON **history);

/* Sends printf-formatted text as one text frame. */
void h_send_(struct ws_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sends a cJSON value (serialized unformatted). Does not take ownership. */
void h_send_json_(struct ws_client *c, const cJSON *v);

/* The next data message as JSON, or NULL on timeout/close. Non-JSON text
 * fails the test. */
cJSON *h_next_(struct space *s, struct ws_client *c, int timeout_ms);
/* Waits for the first message of `type` (skipping others), optionally
 * also satisfying pred(msg, arg). Fails the test on timeout. */
typedef bool (*h_pred)(const cJSON *msg, const void *arg);
cJSON *h_expect_(struct space *s, struct ws_client *c, const char *type);
cJSON *h_expect_where_(struct space *s, struct ws_client *c, const char *type, h_pred pred,
                       const void *arg);
/* Same as h_expect but returns NULL instead of failing. */
cJSON *h_try_expect_(struct space *s, struct ws_client *c, const char *type, h_pred pred,
                     const void *arg, int timeout_ms);
/* Waits for an error whose message contains `needle`; returns it. */
cJSON *h_expect_error_(struct space *s, struct ws_client *c, const char *needle);
/* Fails if a message of `type` (any type when NULL) arrives within ms. */
void h_expect_none_(struct space *s, struct ws_client *c, const char *type, int ms);
/* Waits until the server closes the connection; returns the close code
 * (1006 when the TCP connection ended without a close frame, -1 on
 * timeout). Data messages before the close are discarded. */
int h_wait_close(struct ws_client *c, int timeout_ms);

/* Predicates for h_expect_where. */
bool h_pred_name(const cJSON *msg, const void *name);       /* msg.name == name */
bool h_pred_content(const cJSON *msg, const void *content); /* msg.content == content */
bool h_pred_nagents(const cJSON *msg, const void *n);       /* presence of *(int*)n */
bool h_pred_error_has(const cJSON *msg, const void *needle);

/* ---- JSON helpers ------------------------------------------------------ */

/* Parses text; the value is owned by the harness. Fails on invalid JSON. */
cJSON *h_parse_(struct space *s, const char *text);
const char *h_str(const cJSON *obj, const char *key); /* NULL if absent/not a string */
/* Compact JSON text of v, owned by the harness (freed in space_stop). */
const char *h_print(struct space *s, const cJSON *v);
/* Asserts the object's keys are exactly `keys` (comma-separated) in order. */
void h_assert_keys_(const cJSON *obj, const char *keys);
/* Asserts a JS-style ISO timestamp YYYY-MM-DDTHH:MM:SS.mmmZ. */
void h_assert_timestamp_(const char *ts);
/* Names of a presence's agents joined with ',' into buf. */
const char *h_presence_names(const cJSON *presence, char *buf, size_t bufsz);
/* Builds a string of `n` copies of `unit` (caller frees). */
char *h_repeat(const char *unit, size_t n);

/* ---- chat log ---------------------------------------------------------- */

/* Path of log file `name` ("chat.jsonl", "chat.1.jsonl") where the server
 * keeps it for this space's data directory. */
void space_log_file(const struct space *s, const char *name, char *out, size_t outsz);
/* Pre-seeds log file `name` in a directory made by space_mkdtemp, before
 * space_start_in(dir, ...). */
void space_seed_file(const char *dir, const char *name, const char *text, size_t len);
/* Parsed entries of the active chat log (unparseable lines skipped): a cJSON
 * array owned by the harness (empty when the file is missing). */
cJSON *h_log_entries(struct space *s);
/* Polls the log until an entry with the given fields exists (NULL = any).
 * Returns it or fails the test. */
cJSON *h_wait_log_entry_(struct space *s, const char *type, const char *agent_name,
                         const char *content);
/* Counts entries matching (NULL = any). */
int h_count_log_entries(struct space *s, const char *type, const char *agent_name,
                        const char *content);

/* ---- misc -------------------------------------------------------------- */

/* Applies SPACE_TEST_FILTER (a cmocka pattern, e.g. "h11*") if set; call at
 * the start of main(). */
void space_test_filter_from_env(void);
/* cmocka teardown: stops every server still running (space_stop). */
int space_teardown(void **state);
/* Sends a raw HTTP request and reads the response (until the peer closes or
 * Content-Length bytes of body arrived). Returns the status code (0 when none
 * was read); *response (may be NULL) receives the whole response; caller
 * frees. */
int h_http(struct space *s, const char *request, char **response);
/* Reads a whole file (caller frees; NULL when missing). */
char *h_read_file(const char *path, size_t *len);

/* ---- call-site tracking ---------------------------------------------------
 * Failing helpers are macros that record the caller's file and line first, so
 * a failure points at the test, not at the harness. */
void h_at(const char *file, int line);
/* Fails the current test at the recorded call site. */
void h_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#define H_SITE(call)            (h_at(__FILE__, __LINE__), call)
#define h_connect(...)          H_SITE(h_connect_(__VA_ARGS__))
#define h_join(...)             H_SITE(h_join_(__VA_ARGS__))
#define h_join_json(...)        H_SITE(h_join_json_(__VA_ARGS__))
#define h_send(...)             H_SITE(h_send_(__VA_ARGS__))
#define h_send_json(...)        H_SITE(h_send_json_(__VA_ARGS__))
#define h_next(...)             H_SITE(h_next_(__VA_ARGS__))
#define h_expect(...)           H_SITE(h_expect_(__VA_ARGS__))
#define h_expect_where(...)     H_SITE(h_expect_where_(__VA_ARGS__))
#define h_expect_error(...)     H_SITE(h_expect_error_(__VA_ARGS__))
#define h_expect_none(...)      H_SITE(h_expect_none_(__VA_ARGS__))
#define h_parse(...)            H_SITE(h_parse_(__VA_ARGS__))
#define h_assert_keys(...)      H_SITE(h_assert_keys_(__VA_ARGS__))
#define h_assert_timestamp(...) H_SITE(h_assert_timestamp_(__VA_ARGS__))
#define h_wait_log_entry(...)   H_SITE(h_wait_log_entry_(__VA_ARGS__))
#define space_start(...)        H_SITE(space_start_(__VA_ARGS__))
#define space_start_in(...)     H_SITE(space_start_in_(__VA_ARGS__))
#define space_start_nofile(...) H_SITE(space_start_nofile_(__VA_ARGS__))
#define h_close(...)            H_SITE(h_close_(__VA_ARGS__))
#define h_try_expect(...)       H_SITE(h_try_expect_(__VA_ARGS__))

#endif
