/*
 * support_wait — see support_wait.h.
 */
#include "support_wait.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

int64_t support_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void support_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int support_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int port = -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

int support_exit_code(const struct proc *p)
{
	return WIFEXITED(p->status) ? WEXITSTATUS(p->status) : 128 + WTERMSIG(p->status);
}

/* The port in a complete port file, or 0 when not (yet) there. */
static int read_port(const char *path)
{
	char *t = tu_read(path, NULL);
	int port = 0;
	if (t && strchr(t, '\n')) {
		char *end;
		long v = strtol(t, &end, 10);
		if (end != t && *end == '\n' && v > 0 && v < 65536)
			port = (int)v;
	}
	free(t);
	return port;
}

int support_wait_port_file(struct proc *p, const char *path, int timeout_ms, char *err,
                           size_t errlen)
{
	int64_t end = support_now_ms() + timeout_ms;
	for (bool last = false;; support_sleep_ms(SUPPORT_POLL_MS)) {
		int port = read_port(path);
		if (port > 0)
			return port;
		if (last) {
			if (err)
				snprintf(err, errlen, "it exited with status %d before writing %s",
				         support_exit_code(p), path);
			return -1;
		}
		if (support_now_ms() > end) {
			if (err)
				snprintf(err, errlen, "no port in %s after %d ms", path,
				         timeout_ms);
			return -1;
		}
		/* Exited: read once more — it may have written the file between
		 * the read above and this check. */
		last = !proc_alive(p);
	}
}

/* The n-th complete line of s, copied; NULL when s has fewer. */
static char *nth_line(const char *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		s = strchr(s, '\n');
		if (s)
			s++;
	}
	const char *e = s ? strchr(s, '\n') : NULL;
	if (!e)
		return NULL;
	char *out = malloc((size_t)(e - s) + 1);
	if (!out)
		abort();
	memcpy(out, s, (size_t)(e - s));
	out[e - s] = '\0';
	return out;
}

char *support_wait_line(struct proc *p, size_t n, int timeout_ms, bool *exited)
{
	int64_t end = support_now_ms() + timeout_ms;
	if (exited)
		*exited = false;
	for (bool last = false;; support_sleep_ms(SUPPORT_POLL_MS)) {
		char *out = proc_stdout(p);
		char *l = nth_line(out, n);
		free(out);
		if (l)
			return l;
		if (last || support_now_ms() > end) {
			if (exited)
				*exited = last;
			return NULL;
		}
		/* Exited: read once more (see the header). */
		last = !proc_alive(p);
	}
}
