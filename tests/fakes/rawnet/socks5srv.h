/*
 * socks5srv — a small SOCKS5 proxy (RFC 1928 CONNECT, RFC 1929
 * username/password) on 127.0.0.1 for tests of the native HTTP transport.
 *
 * Every CONNECT it grants is tunnelled to 127.0.0.1:origin_port whatever
 * the address asked for, and the address is recorded as it came (its type
 * and value), so a test sees whether the client resolved the name or sent
 * it. Options: demand a user name and password, answer CONNECT with a
 * given reply code (0 grants it), or stall (read the greeting, never
 * answer).
 *
 * One thread serves one connection at a time, from the greeting until
 * either side closes; more connections wait in the listen backlog.
 * socks5srv_free() closes the current one and joins the thread.
 */
#ifndef GA_TESTS_FAKES_RAWNET_SOCKS5SRV_H
#define GA_TESTS_FAKES_RAWNET_SOCKS5SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct socks5srv_opts {
	const char *user, *pass; /* both NULL: no authentication */
	unsigned char reply;     /* the CONNECT reply code; 0 grants it */
	bool stall;              /* never answer the greeting */
	uint16_t origin_port;    /* where granted tunnels go */
};

/* What the last client asked for. */
struct socks5srv_seen {
	unsigned greetings; /* connections that sent a greeting */
	unsigned connects;  /* CONNECT requests (refused ones too) */
	unsigned char atyp; /* 1 IPv4, 3 domain name, 4 IPv6 */
	char addr[256];     /* the address as text */
	unsigned port;
	char methods[16]; /* offered methods as hex, "00" or "0002" */
	char user[256];   /* the user name tried, "" when none */
};

/* NULL with err on failure. */
struct socks5srv *socks5srv_new(const struct socks5srv_opts *o, char *err, size_t errlen);
void socks5srv_free(struct socks5srv *s);
uint16_t socks5srv_port(const struct socks5srv *s);
void socks5srv_seen(struct socks5srv *s, struct socks5srv_seen *out);

#endif
