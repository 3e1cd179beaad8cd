/*
 * sdnotify — the sd_notify(3) datagram protocol. See sdnotify.h.
 */
#include "common/sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sdnotify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0;
	size_t plen = strlen(path), mlen = state ? strlen(state) : 0;
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if ((path[0] != '/' && path[0] != '@') || plen >= sizeof sa.sun_path || mlen == 0 ||
	    mlen > SDNOTIFY_MAX_BYTES)
		return -1;
	memcpy(sa.sun_path, path, plen);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* the abstract namespace */
	socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen +
	                              (path[0] == '/' ? 1 : 0));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	ssize_t n;
	do
		n = sendto(fd, state, mlen, MSG_NOSIGNAL, (const struct sockaddr *)&sa, salen);
	while (n < 0 && errno == EINTR);
	close(fd);
	return n == (ssize_t)mlen ? 1 : -1;
}

int sdnotify_ready(void)
{
	return sdnotify("READY=1");
}

int sdnotify_stopping(void)
{
	return sdnotify("STOPPING=1");
}
