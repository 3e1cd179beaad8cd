/*
 * cdp — real headless Chromium (Debian `chromium`, installed by
 * scripts/bootstrap.sh; GA_CHROMIUM names another binary) driven over the
 * DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages
 * separated by NUL bytes on descriptors 3 and 4; no WebSocket, no port),
 * for the browser tests of the dashboard and of agent-space's page.
 *
 * Failures are reported with cmocka's fail_msg: call from inside a cmocka
 * test (cdp_start and cdp_stop also from setup/teardown). One page session
 * at a time: cdp_open_page attaches the later calls to the new page.
 */
#ifndef GA_TESTS_INTEGRATION_DASHBOARD_CDP_H
#define GA_TESTS_INTEGRATION_DASHBOARD_CDP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CDP_WAIT_MS 30000

struct cdp {
	pid_t pid;
	int wfd, rfd;
	char *buf;
	size_t len, cap;
	int next_id;
	char *profile;
	char session[128];
	char last_exception[512];
};

/* Monotonic milliseconds. */
long cdp_mono_ms(void);
/* Starts chromium with a fresh profile; 0 or -1. */
/* Is the browser there (GA_CHROMIUM, else `chromium` on PATH)? When not,
 * says so on stdout and returns false: the test exits 77 (its
 * SKIP_RETURN_CODE) before anything starts. */
bool cdp_chromium_present(void);
int cdp_start(struct cdp *c);
/* Closes the browser (Browser.close, then SIGKILL after 10 s), removes the
 * profile. Accepts a struct never started (pid 0). */
void cdp_stop(struct cdp *c);
/* Calls method (params: a JSON object text, may be NULL) in the page's
 * session (or the browser's when session is false); returns "result"
 * (caller deletes) or fails the test with the browser's error. */
cJSON *cdp_call(struct cdp *c, bool session, const char *method, const char *params);
/* The value of a JavaScript expression (awaited), as JSON (caller deletes);
 * NULL when it threw and may_throw (the text is kept in last_exception). */
cJSON *cdp_eval_maybe(struct cdp *c, const char *expr, bool may_throw);
cJSON *cdp_eval(struct cdp *c, const char *expr);
bool cdp_eval_true(struct cdp *c, const char *expr);
/* Polls expr until true (an exception, as while the page loads, is "not
 * yet"); the milliseconds it took, or fails after timeout_ms. */
long cdp_wait_true(struct cdp *c, const char *expr, int timeout_ms);
/* A real mouse click in the middle of the element selector finds. */
void cdp_click(struct cdp *c, const char *selector);
/* Saves a PNG of the page as dir/name. */
void cdp_screenshot(struct cdp *c, const char *dir, const char *name);
/* Opens url in a new page and attaches to it. */
void cdp_open_page(struct cdp *c, const char *url);
/* <GA_BUILD_DIR>/artifacts/<sub>, created; into out. */
const char *cdp_artifacts_dir(const char *sub, char *out, size_t cap);

#endif
