/*
 * sock — blocking-socket helpers of the raw-socket fakes (see sock.h).
 */
#include "tests/fakes/rawnet/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

int sock_listen_loopback(uint16_t *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

void sock_send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

unsigned sock_locked_read(pthread_mutex_t *mu, const unsigned *v)
{
	pthread_mutex_lock(mu);
	unsigned n = *v;
	pthread_mutex_unlock(mu);
	return n;
}

void sock_relay(int a, int b)
{
	char buf[16384];
	struct pollfd pf[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
	for (;;) {
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return;
		for (int i = 0; i < 2; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = recv(pf[i].fd, buf, sizeof buf, 0);
			if (n <= 0)
				return;
			sock_send_all(pf[1 - i].fd, buf, (size_t)n);
		}
	}
}

int sock_dial_loopback(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

void sock_server_stop(pthread_mutex_t *mu, bool *stopping, const int *fds, size_t nfds, int lfd,
                      pthread_t thread)
{
	pthread_mutex_lock(mu);
	*stopping = true;
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			shutdown(fds[i], SHUT_RDWR);
	pthread_mutex_unlock(mu);
	shutdown(lfd, SHUT_RDWR);
	pthread_join(thread, NULL);
	close(lfd);
	pthread_mutex_destroy(mu);
}
