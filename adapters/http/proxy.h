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
 * ".example.com" both match "api.example.com" and "example.com").
 *
 * Proxies: "http://[user:password@]host[:port]" (no scheme means http,
 * port 1080 by default), with Basic proxy authentication from the user
 * part (percent-decoded). http:// requests are sent to it in absolute form,
 * https:// ones through a CONNECT tunnel. A socks4/socks5 proxy, or an
 * https:// proxy, is refused with an error naming the variable and the
 * proxy: the request fails rather than going around it.
 */
#ifndef GA_ADAPTERS_HTTP_PROXY_H
#define GA_ADAPTERS_HTTP_PROXY_H

#include <stdbool.h>

#include "adapters/http/url.h"
#include "common/err.h"

#define PROXY_AUTH_MAX 512

struct proxy {
	bool used;
	char host[HTTP_HOST_MAX];
	unsigned port;
	char auth[PROXY_AUTH_MAX]; /* "Proxy-Authorization: Basic ...\r\n" or "" */
};

/* Fills out for a request to u. Returns 0 (out->used false: direct), or -1
 * with err when the configured proxy cannot be used. */
int proxy_pick(const struct url *u, struct proxy *out, struct ga_err *err);

#endif
