/*
 * socks — the client side of a SOCKS5 handshake (RFC 1928 CONNECT, with
 * RFC 1929 username/password authentication) as a state machine over
 * bytes: no I/O, no allocation. conn.c drives it on the libuv loop.
 *
 * Use: socks5_start() with the proxy and the destination, send the bytes
 * socks5_greeting() gives, then hand every byte the proxy sends to
 * socks5_feed() until it says SOCKS5_DONE (the tunnel is open: what
 * follows is the destination's) or SOCKS5_FAIL (msg says why, without the
 * proxy's name: the caller adds it). Whenever feed sets *send_len, those
 * bytes go to the proxy next.
 *
 * The destination goes as an IPv4 or IPv6 address when the host is a
 * literal or `addr` is given (socks5: resolved by the caller), else as a
 * domain name (socks5h), at most 255 bytes. The proxy must not send more
 * than the reply it owes: extra bytes are an error, since the destination
 * has nothing to say before the client speaks.
 */
#ifndef GA_ADAPTERS_HTTP_SOCKS_H
#define GA_ADAPTERS_HTTP_SOCKS_H

#include <stddef.h>
#include <sys/socket.h>

#include "adapters/http/proxy.h"

/* The largest message either way: an auth request (3 + 255 + 255) or a
 * reply with a domain name (7 + 255). */
#define SOCKS5_MSG_MAX 520

enum socks5_step { SOCKS5_MORE, SOCKS5_DONE, SOCKS5_FAIL };

struct socks5 {
	int state;
	unsigned char in[SOCKS5_MSG_MAX]; /* the proxy's message read so far */
	size_t in_len;
	unsigned char auth[SOCKS5_MSG_MAX]; /* RFC 1929 request; auth_len 0: none */
	size_t auth_len;
	unsigned char req[SOCKS5_MSG_MAX]; /* the CONNECT request */
	size_t req_len;
	char dest[300]; /* "host:port" for messages */
};

/* Prepares the handshake to host:port (addr: the resolved address, or
 * NULL to send the name). Returns -1 with msg when the destination cannot
 * be expressed (a name over 255 bytes). */
int socks5_start(struct socks5 *s, const struct proxy *px, const char *host, unsigned port,
                 const struct sockaddr *addr, char *msg, size_t cap);

/* The method-selection message (3 or 4 bytes) into out. */
size_t socks5_greeting(const struct socks5 *s, unsigned char out[4]);

/* Takes n bytes from the proxy. */
enum socks5_step socks5_feed(struct socks5 *s, const char *p, size_t n, const unsigned char **send,
                             size_t *send_len, char *msg, size_t cap);

#endif
