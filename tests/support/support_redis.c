/*
 * support_redis — see support_redis.h.
 */
#include "support_redis.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support_wait.h"
#include "testutil.h"

const char *support_redis_binary(void)
{
	static char found[512];
	if (access("/usr/bin/redis-server", X_OK) == 0)
		return "/usr/bin/redis-server";
	const char *path = getenv("PATH");
	while (path && *path) {
		size_t n = strcspn(path, ":");
		if (n > 0 && n < sizeof found - 14) {
			snprintf(found, sizeof found, "%.*s/redis-server", (int)n, path);
			if (access(found, X_OK) == 0)
				return found;
		}
		path += n + (path[n] == ':');
	}
	return NULL;
}

/* One RESP exchange on a fresh connection: true when the server answered
 * +PONG to PING (sent after AUTH when it has a password). */
static bool answers_ping(const struct support_redis *r)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)r->port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bool ok = false;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
		char req[512];
		int n = r->password
		                ? snprintf(req, sizeof req,
		                           "*2\r\n$4\r\nAUTH\r\n$%zu\r\n%s\r\n*1\r\n$4\r\nPING\r\n",
		                           strlen(r->password), r->password)
		                : snprintf(req, sizeof req, "*1\r\n$4\r\nPING\r\n");
		char got[256];
		size_t have = 0;
		if (n > 0 && (size_t)n < sizeof req && write(fd, req, (size_t)n) == n) {
			/* Read until "+PONG" or an error line, at most 1 s. */
			int64_t end = support_now_ms() + 1000;
			while (have < sizeof got - 1 && support_now_ms() < end) {
				struct pollfd pfd = {.fd = fd, .events = POLLIN};
				if (poll(&pfd, 1, 100) <= 0)
					continue;
				ssize_t k = read(fd, got + have, sizeof got - 1 - have);
				if (k <= 0)
					break;
				have += (size_t)k;
				got[have] = '\0';
				if (strstr(got, "+PONG\r\n") || strchr(got, '-'))
					break;
			}
			got[have] = '\0';
			ok = strstr(got, "+PONG\r\n") != NULL;
		}
	}
	close(fd);
	return ok;
}

int support_redis_start(struct support_redis *r, const char *password, char *err, size_t errlen)
{
	const char *bin = support_redis_binary();
	if (!bin) {
		snprintf(err, errlen,
		         "redis-server is not installed (scripts/bootstrap.sh installs it)");
		return -1;
	}
	if (r->running) {
		snprintf(err, errlen, "redis-server is already running on port %d", r->port);
		return -1;
	}
	r->password = password;
	if (!r->dir)
		r->dir = tu_tempdir();
	if (r->port == 0 && (r->port = support_free_port()) <= 0) {
		r->port = 0;
		snprintf(err, errlen, "no free port on 127.0.0.1 for redis-server");
		return -1;
	}
	char port[16];
	snprintf(port, sizeof port, "%d", r->port);
	const char *argv[16] = {"--bind", "127.0.0.1",    "--port", port,          "--save",
	                        "",       "--appendonly", "no",     "--daemonize", "no",
	                        "--dir",  r->dir,         NULL};
	if (password) {
		argv[12] = "--requirepass";
		argv[13] = password;
		argv[14] = NULL;
	}
	struct proc_opts o = {.binary = bin, .cwd = r->dir, .argv = argv};
	if (proc_start_opts(&r->proc, &o) != 0) {
		snprintf(err, errlen, "cannot start %s", bin);
		return -1;
	}
	r->running = true;
	int64_t end = support_now_ms() + SUPPORT_WAIT_MS;
	for (bool last = false;; support_sleep_ms(20)) {
		if (answers_ping(r))
			return 0;
		if (last || support_now_ms() > end) {
			char *out = proc_stdout(&r->proc);
			if (last)
				snprintf(err, errlen,
				         "redis-server exited with status %d before answering PING "
				         "on port %d:\n%s",
				         support_exit_code(&r->proc), r->port, out ? out : "");
			else
				snprintf(err, errlen,
				         "redis-server did not answer PING on port %d within %d "
				         "ms:\n%s",
				         r->port, SUPPORT_WAIT_MS, out ? out : "");
			free(out);
			support_redis_kill(r);
			return -1;
		}
		/* Exited: try once more, then report the exit. */
		last = !proc_alive(&r->proc);
	}
}

void support_redis_kill(struct support_redis *r)
{
	if (!r->running)
		return;
	proc_signal(&r->proc, SIGCONT);
	proc_cleanup(&r->proc); /* kill + waitpid */
	r->running = false;
}

void support_redis_free(struct support_redis *r)
{
	support_redis_kill(r);
	if (r->dir) {
		tu_rmrf(r->dir);
		free(r->dir);
		r->dir = NULL;
	}
}
