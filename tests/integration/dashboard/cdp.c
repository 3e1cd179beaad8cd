/*
 * cdp — headless Chromium over the DevTools pipe (see cdp.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cdp.h"
#include "testutil.h"

long cdp_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static const char *chromium_binary(void)
{
	const char *e = getenv("GA_CHROMIUM");
	return e && *e ? e : "chromium";
}

bool cdp_chromium_present(void)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", chromium_binary());
	if (system(cmd) == 0)
		return true;
	printf("SKIPPED: no chromium (scripts/bootstrap.sh --test installs Debian's; GA_CHROMIUM "
	       "names "
	       "another binary)\n");
	return false;
}

int cdp_start(struct cdp *c)
{
	memset(c, 0, sizeof *c);
	c->profile = tu_tempdir();
	int to_browser[2], from_browser[2];
	if (pipe(to_browser) != 0 || pipe(from_browser) != 0)
		return -1;
	char ud[600];
	snprintf(ud, sizeof ud, "--user-data-dir=%s", c->profile);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int r = dup(to_browser[0]), w = dup(from_browser[1]);
		if (r < 0 || w < 0 || dup2(r, 3) < 0 || dup2(w, 4) < 0)
			_exit(127);
		for (int fd = 5; fd < 1024; fd++)
			close(fd);
		int devnull = open("/dev/null", O_RDWR);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		/* root (CI containers) needs --no-sandbox */
		execlp(chromium_binary(), chromium_binary(), "--headless", "--no-sandbox",
		       "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
		       "--no-default-browser-check", "--disable-extensions",
		       "--disable-background-networking", "--disable-dev-shm-usage",
		       "--window-size=1280,900", ud, "about:blank", (char *)NULL);
		_exit(127);
	}
	close(to_browser[0]);
	close(from_browser[1]);
	c->pid = pid;
	c->wfd = to_browser[1];
	c->rfd = from_browser[0];
	fcntl(c->wfd, F_SETFD, FD_CLOEXEC);
	fcntl(c->rfd, F_SETFD, FD_CLOEXEC);
	c->next_id = 1;
	return 0;
}

/* One message from the browser (caller deletes), or NULL on timeout/EOF. */
static cJSON *cdp_read(struct cdp *c, long deadline)
{
	for (;;) {
		char *nul = c->buf ? memchr(c->buf, '\0', c->len) : NULL;
		if (nul) {
			size_t n = (size_t)(nul - c->buf);
			cJSON *m = cJSON_ParseWithLength(c->buf, n);
			memmove(c->buf, nul + 1, c->len - n - 1);
			c->len -= n + 1;
			return m;
		}
		long left = deadline - cdp_mono_ms();
		struct pollfd pf = {.fd = c->rfd, .events = POLLIN};
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return NULL;
		if (c->len + 65536 > c->cap) {
			c->cap = c->cap ? c->cap * 2 : 262144;
			c->buf = realloc(c->buf, c->cap);
		}
		ssize_t r = read(c->rfd, c->buf + c->len, 65536);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		c->len += (size_t)r;
	}
}

/* Calls method (params: a JSON object text, may be NULL) in the page's
 * session (or the browser's when session is false); returns "result"
 * (caller deletes) or fails the test with the browser's error. */
cJSON *cdp_call(struct cdp *c, bool session, const char *method, const char *params)
{
	int id = c->next_id++;
	char head[512];
	int n = snprintf(head, sizeof head, "{\"id\":%d,%s%s%s\"method\":\"%s\",\"params\":", id,
	                 session ? "\"sessionId\":\"" : "", session ? c->session : "",
	                 session ? "\"," : "", method);
	size_t pl = params ? strlen(params) : 2;
	char *msg = malloc((size_t)n + pl + 2);
	memcpy(msg, head, (size_t)n);
	memcpy(msg + n, params ? params : "{}", pl);
	msg[(size_t)n + pl] = '}';
	size_t total = (size_t)n + pl + 2;
	msg[total - 1] = '\0'; /* the separator */
	for (size_t off = 0; off < total;) {
		ssize_t w = write(c->wfd, msg + off, total - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			fail_msg("cannot write to chromium: %s", strerror(errno));
		off += (size_t)w;
	}
	free(msg);
	long deadline = cdp_mono_ms() + CDP_WAIT_MS;
	for (;;) {
		cJSON *m = cdp_read(c, deadline);
		if (!m)
			fail_msg("chromium did not answer %s (is it installed? "
			         "scripts/bootstrap.sh --test "
			         "installs Debian's chromium; GA_CHROMIUM names another binary)",
			         method);
		const cJSON *mid = cJSON_GetObjectItem(m, "id");
		if (cJSON_IsNumber(mid) && mid->valueint == id) {
			const cJSON *e = cJSON_GetObjectItem(m, "error");
			if (e) {
				char *s = cJSON_PrintUnformatted(e);
				fail_msg("%s: %s", method, s);
			}
			cJSON *res = cJSON_DetachItemFromObject(m, "result");
			cJSON_Delete(m);
			return res ? res : cJSON_CreateObject();
		}
		cJSON_Delete(m); /* an event */
	}
}

/* The value of a JavaScript expression (awaited), as JSON (caller deletes);
 * NULL when it threw and may_throw (the text is kept in c->last_exception). */
cJSON *cdp_eval_maybe(struct cdp *c, const char *expr, bool may_throw)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "expression", expr);
	cJSON_AddBoolToObject(p, "returnByValue", true);
	cJSON_AddBoolToObject(p, "awaitPromise", true);
	char *ps = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	cJSON *r = cdp_call(c, true, "Runtime.evaluate", ps);
	free(ps);
	const cJSON *ex = cJSON_GetObjectItem(r, "exceptionDetails");
	if (ex) {
		char *s = cJSON_PrintUnformatted(ex);
		if (!may_throw)
			fail_msg("%s threw: %s", expr, s);
		snprintf(c->last_exception, sizeof c->last_exception, "%s", s);
		free(s);
		cJSON_Delete(r);
		return NULL;
	}
	cJSON *v = cJSON_DetachItemFromObject(cJSON_GetObjectItem(r, "result"), "value");
	cJSON_Delete(r);
	return v ? v : cJSON_CreateNull();
}

cJSON *cdp_eval(struct cdp *c, const char *expr)
{
	return cdp_eval_maybe(c, expr, false);
}

bool cdp_eval_true(struct cdp *c, const char *expr)
{
	cJSON *v = cdp_eval(c, expr);
	bool t = cJSON_IsTrue(v);
	cJSON_Delete(v);
	return t;
}

/* Polls expr until true (an exception, as while the page loads, is "not
 * yet"); the milliseconds it took, or fails after timeout. */
long cdp_wait_true(struct cdp *c, const char *expr, int timeout_ms)
{
	long start = cdp_mono_ms();
	c->last_exception[0] = '\0';
	for (;;) {
		cJSON *v = cdp_eval_maybe(c, expr, true);
		bool t = cJSON_IsTrue(v);
		cJSON_Delete(v);
		if (t)
			return cdp_mono_ms() - start;
		if (cdp_mono_ms() - start > timeout_ms)
			fail_msg("never true within %d ms: %s (last exception: %s)", timeout_ms,
			         expr, c->last_exception[0] ? c->last_exception : "none");
		usleep(10000);
	}
}

/* A real mouse click in the middle of the element selector finds. */
void cdp_click(struct cdp *c, const char *selector)
{
	char expr[512];
	snprintf(expr, sizeof expr,
	         "(() => { const e = document.querySelector('%s'); if (!e) return null;"
	         " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
	         " return [r.x + r.width / 2, r.y + r.height / 2]; })()",
	         selector);
	cJSON *v = cdp_eval(c, expr);
	if (!cJSON_IsArray(v))
		fail_msg("nothing to click: %s", selector);
	double x = cJSON_GetArrayItem(v, 0)->valuedouble, y = cJSON_GetArrayItem(v, 1)->valuedouble;
	cJSON_Delete(v);
	char p[256];
	static const char *const types[] = {"mousePressed", "mouseReleased"};
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof p,
		         "{\"type\":\"%s\",\"x\":%.1f,\"y\":%.1f,\"button\":\"left\","
		         "\"clickCount\":1}",
		         types[i], x, y);
		cJSON_Delete(cdp_call(c, true, "Input.dispatchMouseEvent", p));
	}
}

static int b64val(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

void cdp_screenshot(struct cdp *c, const char *dir, const char *name)
{
	cJSON *r = cdp_call(c, true, "Page.captureScreenshot", "{\"format\":\"png\"}");
	const char *data = cJSON_GetObjectItem(r, "data")->valuestring;
	size_t n = strlen(data);
	unsigned char *out = malloc(n);
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64val((unsigned char)data[i]);
		if (v < 0)
			continue;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	cJSON_Delete(r);
	assert_true(o > 8 && memcmp(out, "\x89PNG", 4) == 0);
	char path[700];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(out, 1, o, f), o);
	fclose(f);
	free(out);
	printf("screenshot: %s (%zu bytes)\n", path, o);
}

/* Opens url in a new page and attaches to it (the session of later calls). */
void cdp_open_page(struct cdp *c, const char *url)
{
	char p[600];
	snprintf(p, sizeof p, "{\"url\":\"%s\"}", url);
	cJSON *r = cdp_call(c, false, "Target.createTarget", p);
	snprintf(p, sizeof p, "{\"targetId\":\"%s\",\"flatten\":true}",
	         cJSON_GetObjectItem(r, "targetId")->valuestring);
	cJSON_Delete(r);
	r = cdp_call(c, false, "Target.attachToTarget", p);
	snprintf(c->session, sizeof c->session, "%s",
	         cJSON_GetObjectItem(r, "sessionId")->valuestring);
	cJSON_Delete(r);
	cJSON_Delete(cdp_call(c, true, "Emulation.setDeviceMetricsOverride",
	                      "{\"width\":1280,\"height\":900,\"deviceScaleFactor\":1,"
	                      "\"mobile\":false}"));
}

void cdp_stop(struct cdp *c)
{
	if (c->pid > 0) {
		const char msg[] = "{\"id\":999999,\"method\":\"Browser.close\",\"params\":{}}";
		if (write(c->wfd, msg, sizeof msg) < 0) { /* sizeof: with the NUL separator */
		}
		long end = cdp_mono_ms() + 10000;
		int st;
		while (waitpid(c->pid, &st, WNOHANG) == 0) {
			if (cdp_mono_ms() > end) {
				kill(c->pid, SIGKILL);
				waitpid(c->pid, &st, 0);
				break;
			}
			usleep(20000);
		}
		close(c->wfd);
		close(c->rfd);
		c->pid = 0;
	}
	free(c->buf);
	c->buf = NULL;
	if (c->profile) {
		tu_rmrf(c->profile);
		free(c->profile);
		c->profile = NULL;
	}
}

const char *cdp_artifacts_dir(const char *sub, char *out, size_t cap)
{
	const char *b = getenv("GA_BUILD_DIR");
	snprintf(out, cap, "%s/artifacts", b ? b : ".");
	mkdir(out, 0755);
	size_t n = strlen(out);
	snprintf(out + n, cap - n, "/%s", sub);
	mkdir(out, 0755);
	return out;
}
