/*
 * rawsrv — scripted byte-exact HTTP answers for tests (see rawsrv.h).
 */
#include "tests/fakes/rawnet/rawsrv.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fakes/rawnet/sock.h"

struct rawsrv {
	int lfd, cfd;
	uint16_t port;
	struct rawsrv_step steps[RAWSRV_STEPS_MAX];
	size_t n_steps, next;
	pthread_t thread;
	pthread_mutex_t mu;
	bool stopping;
	unsigned accepts, requests;
	char last[4096];
};

/* Reads one request (head and Content-Length body); 0, or -1 at close. */
static int read_request(struct rawsrv *s, int fd)
{
	char buf[8192];
	size_t len = 0;
	char *end = NULL;
	while (!end) {
		if (len + 1 >= sizeof buf)
			return -1;
		ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	size_t head = (size_t)(end + 4 - buf), body = 0;
	const char *cl = strcasestr(buf, "\r\nContent-Length:");
	if (cl && cl < end)
		body = strtoul(cl + 17, NULL, 10);
	pthread_mutex_lock(&s->mu);
	snprintf(s->last, sizeof s->last, "%.*s", (int)head, buf);
	pthread_mutex_unlock(&s->mu);
	for (size_t have = len - head; have < body;) {
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	pthread_mutex_lock(&s->mu);
	s->requests++;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static const struct rawsrv_step *next_step(struct rawsrv *s)
{
	const struct rawsrv_step *st = &s->steps[s->next];
	if (s->next + 1 < s->n_steps)
		s->next++;
	return st;
}

static void serve(struct rawsrv *s, int fd)
{
	while (read_request(s, fd) == 0) {
		const struct rawsrv_step *st = next_step(s);
		char sink[512];
		if (st->hang)
			while (recv(fd, sink, sizeof sink, 0) > 0)
				; /* until the client closes or rawsrv_free shuts it down */
		if (!st->reply || st->hang)
			return;
		sock_send_all(fd, st->reply, strlen(st->reply));
		if (st->close_after)
			return;
	}
}

static void *main_loop(void *arg)
{
	struct rawsrv *s = arg;
	for (;;) {
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		pthread_mutex_lock(&s->mu);
		bool stop = s->stopping;
		s->cfd = fd;
		s->accepts++;
		pthread_mutex_unlock(&s->mu);
		if (!stop)
			serve(s, fd);
		pthread_mutex_lock(&s->mu);
		s->cfd = -1;
		pthread_mutex_unlock(&s->mu);
		close(fd);
		if (stop)
			return NULL;
	}
}

struct rawsrv *rawsrv_new(const struct rawsrv_step *steps, size_t n)
{
	struct rawsrv *s = calloc(1, sizeof *s);
	s->n_steps = n < RAWSRV_STEPS_MAX ? n : RAWSRV_STEPS_MAX;
	memcpy(s->steps, steps, s->n_steps * sizeof *steps);
	s->cfd = -1;
	pthread_mutex_init(&s->mu, NULL);
	s->lfd = sock_listen_loopback(&s->port);
	if (s->lfd < 0) {
		perror("rawsrv: cannot listen on 127.0.0.1");
		abort();
	}
	pthread_create(&s->thread, NULL, main_loop, s);
	return s;
}

void rawsrv_free(struct rawsrv *s)
{
	if (!s)
		return;
	sock_server_stop(&s->mu, &s->stopping, &s->cfd, 1, s->lfd, s->thread);
	free(s);
}

uint16_t rawsrv_port(const struct rawsrv *s)
{
	return s->port;
}

unsigned rawsrv_accepts(struct rawsrv *s)
{
	return sock_locked_read(&s->mu, &s->accepts);
}

unsigned rawsrv_requests(struct rawsrv *s)
{
	return sock_locked_read(&s->mu, &s->requests);
}

void rawsrv_last_head(struct rawsrv *s, char *out, size_t cap)
{
	pthread_mutex_lock(&s->mu);
	snprintf(out, cap, "%s", s->last);
	pthread_mutex_unlock(&s->mu);
}
