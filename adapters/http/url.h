/*
 * url — the http(s) URLs the native transport accepts, split into what a
 * request needs: scheme, host, port, and the request target.
 *
 * Accepted: "http://" or "https://" (any case), a host name, IPv4 address
 * or bracketed IPv6 address, an optional port (1-65535), then a path and
 * query (default "/"); a fragment is dropped. A host name with non-ASCII
 * letters (UTF-8) is converted to its ASCII form by libidn2 (idn2_shim.h),
 * as libcurl does: `host` holds "xn--bcher-kva.example" for
 * "bücher.example", for DNS, the Host header, SNI and the certificate.
 * Refused with a sentence naming the URL: any other scheme, user:password@
 * in the URL, an empty or too long host, a host with characters outside
 * [A-Za-z0-9.-_] (after that conversion), an invalid international name, a
 * bad port, spaces or control characters anywhere.
 */
#ifndef GA_ADAPTERS_HTTP_URL_H
#define GA_ADAPTERS_HTTP_URL_H

#include <stdbool.h>

#include "adapters/http/http.h"
#include "common/err.h"

struct url {
	bool https;
	char host[HTTP_HOST_MAX]; /* without brackets for IPv6 */
	bool ipv6;
	unsigned port; /* the default of the scheme when none is given */
	char *target;  /* path and query; caller frees with url_free */
};

int url_parse(const char *s, struct url *out, struct ga_err *err);
void url_free(struct url *u);

/* "host" or "host:port" (port only when not the scheme's default), IPv6 in
 * brackets: the Host header and a CONNECT target. */
void url_authority(const struct url *u, bool always_port, char *out, size_t cap);

#endif
