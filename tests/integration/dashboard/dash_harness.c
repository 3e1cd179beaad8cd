/* dash_harness — the dashboard tests' host process and HTTP client (see
 * dash_harness.h). */
#include "dash_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "support_wait.h"
#include "testutil.h"

/* The next stdout line not consumed yet (caller frees), or NULL when the
 * host exited without one or after timeout_ms. The wait reads once more
 * after the exit was seen (support_wait.h): a start error printed just
 * before the exit is not lost (CI failure of stop 17). */
static char *next_line(struct dash_host *h, int timeout_ms)
{
	char *l = support_wait_line(&h->p, h->lines_seen, timeout_ms, NULL);
	if (l)
		h->lines_seen++;
	return l;
}

int dash_start(struct dash_host *h, const char *const *extra, char **out_error)
{
	memset(h, 0, sizeof *h);
	h->home = tu_tempdir();
	snprintf(h->memory, sizeof h->memory, "%s/memory", h->home);
	char web[512];
	snprintf(web, sizeof web, "%s/web/dashboard", getenv("GA_SOURCE_DIR"));
	const char *argv[PROC_MAX_ARGS] = {"--memory", h->memory, "--web", web};
	size_t n = 4;
	for (size_t i = 0; extra && extra[i] && n + 1 < PROC_MAX_ARGS; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	struct proc_opts o = {.binary = DASH_HOST_PATH, .cwd = h->home, .argv = argv};
	if (proc_start_opts(&h->p, &o) != 0)
		return -1;
	char *l = next_line(h, DASH_WAIT_MS);
	if (!l || strncmp(l, "listening ", 10) != 0) {
		if (out_error) {
			char *e = proc_stderr(&h->p);
			size_t sz = (l ? strlen(l) : 0) + (e ? strlen(e) : 0) + 4;
			*out_error = malloc(sz);
			snprintf(*out_error, sz, "%s\n%s", l ? l : "", e ? e : "");
			free(e);
		}
		free(l);
		return -1;
	}
	h->port = atoi(l + 10);
	free(l);
	return h->port > 0 ? 0 : -1;
}

char *dash_cmd(struct dash_host *h, const char *cmd)
{
	char line[1024];
	snprintf(line, sizeof line, "%s\n", cmd);
	if (proc_write_stdin(&h->p, line) != 0)
		return NULL;
	return next_line(h, DASH_WAIT_MS);
}

int dash_quit(struct dash_host *h)
{
	proc_write_stdin(&h->p, "quit\n");
	return proc_wait(&h->p, DASH_WAIT_MS);
}

void dash_stop(struct dash_host *h)
{
	if (h->p.pid > 0) {
		char *e = proc_stderr(&h->p);
		if (e && *e)
			fprintf(stderr, "--- dash_host stderr ---\n%s\n", e);
		free(e);
		proc_cleanup(&h->p);
	}
	if (h->home) {
		tu_rmrf(h->home);
		free(h->home);
	}
	memset(h, 0, sizeof *h);
}

/* --- HTTP ------------------------------------------------------------------------------- */

static int connect_port(int port, int rcvbuf)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* The server may answer (413) and close before taking
			 * the whole body: what it said is still read. */
			return errno == EPIPE || errno == ECONNRESET ? 0 : -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int http_raw(int port, const char *req, size_t len, struct http_resp *out)
{
	memset(out, 0, sizeof *out);
	int fd = connect_port(port, 0);
	if (fd < 0)
		return -1;
	if (send_all(fd, req, len) != 0) {
		close(fd);
		return -1;
	}
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	int64_t end = support_now_ms() + DASH_WAIT_MS;
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		long left = (long)(end - support_now_ms());
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0) {
			free(buf);
			close(fd);
			return -1;
		}
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		ssize_t r = recv(fd, buf + n, cap - n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* closed (or reset after the answer) */
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	char *sep = strstr(buf, "\r\n\r\n");
	if (!sep || sscanf(buf, "HTTP/1.%*d %d", &out->status) != 1) {
		free(buf);
		return -1;
	}
	out->head = strndup(buf, (size_t)(sep - buf) + 2);
	out->body_len = n - (size_t)(sep + 4 - buf);
	out->body = malloc(out->body_len + 1);
	memcpy(out->body, sep + 4, out->body_len);
	out->body[out->body_len] = '\0';
	free(buf);
	return 0;
}

int http_get(int port, const char *path, const char *extra, struct http_resp *out)
{
	char req[8192];
	int n = snprintf(req, sizeof req,
	                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s\r\n",
	                 path, port, extra ? extra : "");
	return http_raw(port, req, (size_t)n, out);
}

int http_post(int port, const char *path, const char *extra, const char *body,
              struct http_resp *out)
{
	size_t bl = body ? strlen(body) : 0;
	size_t cap = bl + 8192;
	char *req = malloc(cap);
	int n = snprintf(req, cap,
	                 "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
	                 "Content-Length: %zu\r\n%s\r\n%s",
	                 path, port, bl, extra ? extra : "", body ? body : "");
	int rc = http_raw(port, req, (size_t)n, out);
	free(req);
	return rc;
}

const char *http_header(const struct http_resp *r, const char *name)
{
	static char val[1024];
	size_t nl = strlen(name);
	for (const char *l = r->head; l && *l;) {
		const char *e = strstr(l, "\r\n");
		if (!e)
			break;
		if ((size_t)(e - l) > nl && strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
			const char *v = l + nl + 1;
			while (*v == ' ')
				v++;
			snprintf(val, sizeof val, "%.*s", (int)(e - v), v);
			return val;
		}
		l = e + 2;
	}
	return NULL;
}

cJSON *http_json(const struct http_resp *r)
{
	return r->body ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;
}

void http_resp_free(struct http_resp *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof *r);
}

int sse_open(int port, const char *extra, int rcvbuf, struct sse_conn *c)
{
	memset(c, 0, sizeof *c);
	c->fd = connect_port(port, rcvbuf);
	if (c->fd < 0)
		return -1;
	char req[2048];
	int n = snprintf(req, sizeof req,
	                 "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: "
	                 "text/event-stream\r\n%s\r\n",
	                 port, extra ? extra : "");
	return send_all(c->fd, req, (size_t)n);
}

bool sse_wait(struct sse_conn *c, const char *needle, int timeout_ms)
{
	int64_t end = support_now_ms() + timeout_ms;
	for (;;) {
		if (c->buf && strstr(c->buf, needle))
			return true;
		long left = (long)(end - support_now_ms());
		struct pollfd pf = {.fd = c->fd, .events = POLLIN};
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return false;
		if (c->len + 65536 + 1 > c->cap) {
			c->cap = c->cap ? c->cap * 2 : 131072;
			c->buf = realloc(c->buf, c->cap);
		}
		ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
		if (r <= 0)
			return c->buf && strstr(c->buf, needle);
		c->len += (size_t)r;
		c->buf[c->len] = '\0';
	}
}

void sse_close(struct sse_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}
