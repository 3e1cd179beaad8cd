/*
 * proxy — which proxy a native-transport request goes through, read from
 * the environment the way libcurl reads it.
 *
 * Variables: for http:// URLs `http_proxy` (lower case only: a CGI
 * program's HTTP_PROXY can be set by a client's "Proxy:" header), for
 * https:// `https_proxy` then `HTTPS_PROXY`; then `all_proxy`, `ALL_PROXY`.
 * `no_proxy` (then `NO_PROXY`): "*" bypasses the proxy for every host;
 * otherwise a comma-separated list of names, each matching the host itself
 * and every name under it (a leading dot is ignored: "example.com" and
 * ".example.com" both match "api.example.com" and "example.com"), and of
 * addresses or CIDR ranges ("10.0.0.0/8", "::1", "fd00::/8"), which match
 * a URL whose host is an address in them (names are not resolved for it).
 * Error messages show a proxy's address with its credentials as "***".
 *
 * Proxies: "http://[user:password@]host[:port]" (no scheme means http,
 * port 1080 by default), with Basic proxy authentication from the user
 * part (percent-decoded). http:// requests are sent to it in absolute form,
 * https:// ones through a CONNECT tunnel.
 * "socks5://" and "socks5h://" (same form): a SOCKS5 tunnel (RFC 1928) for
 * both schemes, with username/password authentication (RFC 1929) when the
 * address carries a user; socks5 resolves the host here, socks5h lets the
 * proxy resolve it. socks4, socks4a and plain "socks://" (SOCKS4 to
 * libcurl), and https:// proxies, are refused with an error naming the
 * variable and the proxy: the request fails rather than going around it.
 */
#ifndef GA_ADAPTERS_HTTP_PROXY_H
#define GA_ADAPTERS_HTTP_PROXY_H

#include <stdbool.h>

#include "adapters/http/url.h"
#include "common/err.h"

#define PROXY_AUTH_MAX 512
/* RFC 1929: a user name and a password of 1 to 255 bytes each. */
#define PROXY_SOCKS_CRED_MAX 256

enum proxy_kind {
	PROXY_HTTP,
	PROXY_SOCKS5,  /* the host is resolved here, the proxy gets an address */
	PROXY_SOCKS5H, /* the proxy gets the host name */
};

struct proxy {
	bool used;
	enum proxy_kind kind;
	char host[HTTP_HOST_MAX];
	unsigned port;
	char auth[PROXY_AUTH_MAX]; /* HTTP: "Proxy-Authorization: Basic ...\r\n" or "" */
	/* SOCKS5: decoded credentials; user "" means no authentication. */
	char user[PROXY_SOCKS_CRED_MAX];
	char pass[PROXY_SOCKS_CRED_MAX];
};

/* Fills out for a request to u. Returns 0 (out->used false: direct), or -1
 * with err when the configured proxy cannot be used. */
int proxy_pick(const struct url *u, struct proxy *out, struct ga_err *err);

#endif
