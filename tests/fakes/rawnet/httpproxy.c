/*
 * httpproxy — a CONNECT and forwarding proxy for tests (see httpproxy.h).
 */
#include "tests/fakes/rawnet/httpproxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fakes/rawnet/sock.h"

struct httpproxy {
	int lfd;
	uint16_t port;
	char *require_auth;
	pthread_t acceptor;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	int fds[HTTPPROXY_CONN_MAX * 2]; /* open client and origin sockets, -1 = free */
	int threads;                     /* connection threads running */
	unsigned requests;
	char last_line[512];
	char last_auth[256];
};

struct job {
	struct httpproxy *p;
	int fd;
};

static void track(struct httpproxy *p, int fd, bool add)
{
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < sizeof p->fds / sizeof p->fds[0]; i++) {
		if (add ? p->fds[i] == -1 : p->fds[i] == fd) {
			p->fds[i] = add ? fd : -1;
			break;
		}
	}
	pthread_mutex_unlock(&p->mu);
}

/* Reads until the blank line; returns the head length (with the blank
 * line) or -1; *len is everything read. */
static long read_head(int fd, char *buf, size_t cap, size_t *len)
{
	*len = 0;
	while (*len + 1 < cap) {
		ssize_t n = recv(fd, buf + *len, cap - 1 - *len, 0);
		if (n <= 0)
			return -1;
		*len += (size_t)n;
		buf[*len] = '\0';
		char *e = strstr(buf, "\r\n\r\n");
		if (e)
			return e + 4 - buf;
	}
	return -2;
}

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *a;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	int fd = -1;
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype, 0);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* "host:port" (or "[v6]:port") split in place. */
static int split_authority(char *s, char **host, char **port)
{
	char *colon = strrchr(s, ':');
	if (!colon)
		return -1;
	*colon = '\0';
	*port = colon + 1;
	*host = s;
	if (**host == '[') {
		(*host)++;
		char *e = strchr(*host, ']');
		if (e)
			*e = '\0';
	}
	return 0;
}

static void header_value(const char *head, const char *name, char *out, size_t cap)
{
	out[0] = '\0';
	size_t n = strlen(name);
	for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
		const char *s = l + 2;
		if (strncasecmp(s, name, n) == 0 && s[n] == ':') {
			s += n + 1;
			while (*s == ' ')
				s++;
			size_t vl = strcspn(s, "\r\n");
			snprintf(out, cap, "%.*s", (int)vl, s);
			return;
		}
	}
}

static void record(struct httpproxy *p, const char *line, const char *auth)
{
	pthread_mutex_lock(&p->mu);
	p->requests++;
	snprintf(p->last_line, sizeof p->last_line, "%s", line);
	snprintf(p->last_auth, sizeof p->last_auth, "%s", auth);
	pthread_mutex_unlock(&p->mu);
}

/* Absolute form: the origin gets the path form, without the proxy's
 * header, and the bytes that followed the head. */
static void forward(int cfd, char *buf, size_t len, long head_len, char *target)
{
	char *hostport = target + 7, *path = strchr(hostport, '/');
	char pathbuf[1024];
	snprintf(pathbuf, sizeof pathbuf, "%s", path ? path : "/");
	if (path)
		*path = '\0';
	char *host, *port;
	if (split_authority(hostport, &host, &port) != 0)
		port = "80", host = hostport;
	int ofd = dial(host, port);
	if (ofd < 0) {
		sock_send_all(cfd, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n", 47);
		return;
	}
	char method[16];
	sscanf(buf, "%15s", method);
	char out[HTTPPROXY_HEAD_MAX + 1100];
	size_t o = (size_t)snprintf(out, sizeof out, "%s %s HTTP/1.1\r\n", method, pathbuf);
	for (char *l = strstr(buf, "\r\n") + 2; l < buf + head_len - 2;) {
		char *e = strstr(l, "\r\n");
		if (strncasecmp(l, "Proxy-Authorization:", 20) != 0 &&
		    o + (size_t)(e + 2 - l) < sizeof out) {
			memcpy(out + o, l, (size_t)(e + 2 - l));
			o += (size_t)(e + 2 - l);
		}
		l = e + 2;
	}
	memcpy(out + o, "\r\n", 2);
	sock_send_all(ofd, out, o + 2);
	sock_send_all(ofd, buf + head_len, len - (size_t)head_len);
	sock_relay(cfd, ofd);
	close(ofd);
}

static void tunnel(struct httpproxy *p, int cfd, char *target)
{
	char *host, *port;
	int ofd = split_authority(target, &host, &port) == 0 ? dial(host, port) : -1;
	if (ofd < 0) {
		sock_send_all(cfd, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n", 47);
		return;
	}
	track(p, ofd, true);
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	sock_send_all(cfd, ok, sizeof ok - 1);
	sock_relay(cfd, ofd);
	track(p, ofd, false);
	close(ofd);
}

static void serve(struct httpproxy *p, int cfd)
{
	char buf[HTTPPROXY_HEAD_MAX + 1];
	size_t len;
	long head = read_head(cfd, buf, sizeof buf, &len);
	if (head == -2)
		sock_send_all(cfd, "HTTP/1.1 431 Too Large\r\nContent-Length: 0\r\n\r\n", 45);
	if (head < 0)
		return;
	char line[512], method[16], target[480], auth[256];
	snprintf(line, sizeof line, "%.*s", (int)strcspn(buf, "\r\n"), buf);
	header_value(buf, "Proxy-Authorization", auth, sizeof auth);
	record(p, line, auth);
	if (sscanf(line, "%15s %479s", method, target) != 2)
		return;
	if (p->require_auth && strcmp(auth, p->require_auth) != 0) {
		static const char no[] = "HTTP/1.1 407 Proxy Authentication Required\r\n"
		                         "Proxy-Authenticate: Basic realm=\"test\"\r\n"
		                         "Content-Length: 0\r\n\r\n";
		sock_send_all(cfd, no, sizeof no - 1);
		return;
	}
	if (strcmp(method, "CONNECT") == 0)
		tunnel(p, cfd, target);
	else if (strncmp(target, "http://", 7) == 0)
		forward(cfd, buf, len, head, target);
	else
		sock_send_all(cfd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", 47);
}

static void *conn_main(void *arg)
{
	struct job *j = arg;
	serve(j->p, j->fd);
	track(j->p, j->fd, false);
	close(j->fd);
	pthread_mutex_lock(&j->p->mu);
	j->p->threads--;
	pthread_cond_broadcast(&j->p->cv);
	pthread_mutex_unlock(&j->p->mu);
	free(j);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct httpproxy *p = arg;
	for (;;) {
		int fd = accept(p->lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		pthread_mutex_lock(&p->mu);
		bool refuse = p->stopping || p->threads >= HTTPPROXY_CONN_MAX;
		if (!refuse)
			p->threads++;
		pthread_mutex_unlock(&p->mu);
		if (refuse) {
			close(fd);
			continue;
		}
		track(p, fd, true);
		struct job *j = calloc(1, sizeof *j);
		j->p = p;
		j->fd = fd;
		pthread_t t;
		pthread_create(&t, NULL, conn_main, j);
		pthread_detach(t);
	}
}

struct httpproxy *httpproxy_new(const char *require_auth, char *err, size_t errlen)
{
	struct httpproxy *p = calloc(1, sizeof *p);
	memset(p->fds, -1, sizeof p->fds);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->require_auth = require_auth ? strdup(require_auth) : NULL;
	p->lfd = sock_listen_loopback(&p->port);
	if (p->lfd < 0) {
		snprintf(err, errlen, "httpproxy cannot listen on 127.0.0.1: %s", strerror(errno));
		free(p->require_auth);
		free(p);
		return NULL;
	}
	pthread_create(&p->acceptor, NULL, accept_main, p);
	return p;
}

void httpproxy_free(struct httpproxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	for (size_t i = 0; i < sizeof p->fds / sizeof p->fds[0]; i++)
		if (p->fds[i] >= 0)
			shutdown(p->fds[i], SHUT_RDWR);
	pthread_mutex_unlock(&p->mu);
	shutdown(p->lfd, SHUT_RDWR);
	pthread_join(p->acceptor, NULL);
	close(p->lfd);
	pthread_mutex_lock(&p->mu);
	while (p->threads > 0)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->require_auth);
	free(p);
}

uint16_t httpproxy_port(const struct httpproxy *p)
{
	return p->port;
}

unsigned httpproxy_requests(struct httpproxy *p)
{
	return sock_locked_read(&p->mu, &p->requests);
}

void httpproxy_last(struct httpproxy *p, char *line, size_t line_cap, char *auth, size_t auth_cap)
{
	pthread_mutex_lock(&p->mu);
	snprintf(line, line_cap, "%s", p->last_line);
	snprintf(auth, auth_cap, "%s", p->last_auth);
	pthread_mutex_unlock(&p->mu);
}
