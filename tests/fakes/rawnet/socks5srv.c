/*
 * socks5srv — a SOCKS5 proxy for tests (see socks5srv.h).
 */
#include "tests/fakes/rawnet/socks5srv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fakes/rawnet/sock.h"

struct socks5srv {
	struct socks5srv_opts o;
	char user[256], pass[256];
	int lfd;
	uint16_t port;
	pthread_t thread;
	pthread_mutex_t mu;
	bool stopping;
	/* The connection being served and its tunnel's origin side, -1 when
	 * none. */
	int fds[2];
	struct socks5srv_seen seen;
};

/* Reads exactly n bytes; false when the peer went away. */
static bool read_n(int fd, unsigned char *p, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, p, n, 0);
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

static bool read_str(int fd, char *out)
{
	unsigned char len;
	if (!read_n(fd, &len, 1) || !read_n(fd, (unsigned char *)out, len))
		return false;
	out[len] = '\0';
	return true;
}

static void set_fd(struct socks5srv *s, int *slot, int fd)
{
	pthread_mutex_lock(&s->mu);
	*slot = fd;
	pthread_mutex_unlock(&s->mu);
}

/* RFC 1929: true when the credentials are accepted (answered either way). */
static bool authenticate(struct socks5srv *s, int fd)
{
	unsigned char ver;
	char user[256], pass[256];
	if (!read_n(fd, &ver, 1) || !read_str(fd, user) || !read_str(fd, pass))
		return false;
	pthread_mutex_lock(&s->mu);
	snprintf(s->seen.user, sizeof s->seen.user, "%s", user);
	pthread_mutex_unlock(&s->mu);
	bool ok = ver == 1 && strcmp(user, s->user) == 0 && strcmp(pass, s->pass) == 0;
	unsigned char ans[2] = {1, ok ? 0 : 1};
	sock_send_all(fd, (const char *)ans, 2);
	return ok;
}

static bool read_request(struct socks5srv *s, int fd)
{
	unsigned char h[4], a[16], pb[2];
	char text[256];
	if (!read_n(fd, h, 4))
		return false;
	if (h[3] == 1 || h[3] == 4) {
		if (!read_n(fd, a, h[3] == 1 ? 4 : 16))
			return false;
		inet_ntop(h[3] == 1 ? AF_INET : AF_INET6, a, text, sizeof text);
	} else if (h[3] != 3 || !read_str(fd, text)) {
		return false;
	}
	if (!read_n(fd, pb, 2))
		return false;
	pthread_mutex_lock(&s->mu);
	s->seen.connects++;
	s->seen.atyp = h[3];
	snprintf(s->seen.addr, sizeof s->seen.addr, "%s", text);
	s->seen.port = (unsigned)pb[0] << 8 | pb[1];
	pthread_mutex_unlock(&s->mu);
	return h[0] == 5 && h[1] == 1;
}

static void serve(struct socks5srv *s, int fd)
{
	unsigned char g[2], m[255];
	if (!read_n(fd, g, 2) || g[0] != 5 || !read_n(fd, m, g[1]))
		return;
	pthread_mutex_lock(&s->mu);
	s->seen.greetings++;
	s->seen.methods[0] = '\0';
	for (unsigned i = 0; i < g[1] && i < 7; i++)
		snprintf(s->seen.methods + 2 * i, 3, "%02x", m[i]);
	s->seen.user[0] = '\0';
	pthread_mutex_unlock(&s->mu);
	if (s->o.stall) {
		unsigned char x;
		read_n(fd, &x, 1); /* until the client gives up */
		return;
	}
	unsigned char want = s->o.user ? 2 : 0;
	bool offered = memchr(m, want, g[1]) != NULL;
	unsigned char choice[2] = {5, offered ? want : 0xff};
	sock_send_all(fd, (const char *)choice, 2);
	if (!offered || (want == 2 && !authenticate(s, fd)) || !read_request(s, fd))
		return;
	int ofd = s->o.reply == 0 ? sock_dial_loopback(s->o.origin_port) : -1;
	unsigned char rep[10] = {
	        5, s->o.reply ? s->o.reply : (ofd < 0 ? 5 : 0), 0, 1, 127, 0, 0, 1, 0, 0};
	sock_send_all(fd, (const char *)rep, sizeof rep);
	if (ofd < 0)
		return;
	set_fd(s, &s->fds[1], ofd);
	sock_relay(fd, ofd);
	set_fd(s, &s->fds[1], -1);
	close(ofd);
}

static void *main_loop(void *arg)
{
	struct socks5srv *s = arg;
	for (;;) {
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return NULL;
		pthread_mutex_lock(&s->mu);
		bool stop = s->stopping;
		s->fds[0] = stop ? -1 : fd;
		pthread_mutex_unlock(&s->mu);
		if (!stop)
			serve(s, fd);
		set_fd(s, &s->fds[0], -1);
		close(fd);
		if (stop)
			return NULL;
	}
}

struct socks5srv *socks5srv_new(const struct socks5srv_opts *o, char *err, size_t errlen)
{
	struct socks5srv *s = calloc(1, sizeof *s);
	s->o = *o;
	snprintf(s->user, sizeof s->user, "%s", o->user ? o->user : "");
	snprintf(s->pass, sizeof s->pass, "%s", o->pass ? o->pass : "");
	s->fds[0] = s->fds[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	s->lfd = sock_listen_loopback(&s->port);
	if (s->lfd < 0) {
		snprintf(err, errlen, "socks5srv cannot listen on 127.0.0.1: %s", strerror(errno));
		pthread_mutex_destroy(&s->mu);
		free(s);
		return NULL;
	}
	pthread_create(&s->thread, NULL, main_loop, s);
	return s;
}

void socks5srv_free(struct socks5srv *s)
{
	if (!s)
		return;
	sock_server_stop(&s->mu, &s->stopping, s->fds, 2, s->lfd, s->thread);
	free(s);
}

uint16_t socks5srv_port(const struct socks5srv *s)
{
	return s->port;
}

void socks5srv_seen(struct socks5srv *s, struct socks5srv_seen *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->seen;
	pthread_mutex_unlock(&s->mu);
}
