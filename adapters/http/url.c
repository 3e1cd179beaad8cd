/*
 * url — http(s) URL parsing for the native transport (see url.h).
 */
#include "adapters/http/url.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/xalloc.h"

static bool host_char_ok(char ch)
{
	return isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_';
}

static int parse_port(const char *s, size_t n, unsigned *port)
{
	unsigned v = 0;
	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = v;
	return 0;
}

/* The authority "host[:port]" of s (n bytes) into u. */
static int parse_authority(const char *url, const char *s, size_t n, struct url *u,
                           struct ga_err *err)
{
	if (memchr(s, '@', n))
		return err_set(err, "'%s' carries credentials, which are not supported in a URL",
		               url);
	const char *host = s, *port = NULL;
	size_t host_len = n;
	if (n && *s == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			return err_set(err, "'%s' is not a valid URL: unclosed IPv6 address", url);
		host = s + 1;
		host_len = (size_t)(close - host);
		u->ipv6 = true;
		if (close + 1 < s + n) {
			if (close[1] != ':')
				return err_set(err, "'%s' is not a valid URL: bad port", url);
			port = close + 2;
		}
	} else {
		const char *colon = memchr(s, ':', n);
		if (colon) {
			host_len = (size_t)(colon - s);
			port = colon + 1;
		}
	}
	if (host_len == 0)
		return err_set(err, "'%s' has no host name", url);
	if (host_len >= sizeof u->host)
		return err_set(err, "the host name in '%s' is too long", url);
	for (size_t i = 0; i < host_len; i++)
		if (!(u->ipv6 ? (isxdigit((unsigned char)host[i]) || host[i] == ':' ||
		                 host[i] == '.')
		              : host_char_ok(host[i])))
			return err_set(err, "'%s' is not a valid URL: bad host name", url);
	memcpy(u->host, host, host_len);
	u->host[host_len] = '\0';
	if (port && parse_port(port, (size_t)(s + n - port), &u->port) != 0)
		return err_set(err, "'%s' is not a valid URL: bad port", url);
	return 0;
}

int url_parse(const char *s, struct url *u, struct ga_err *err)
{
	memset(u, 0, sizeof *u);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return err_set(err,
			               "'%s' is not a valid URL: it contains a space or a "
			               "control character",
			               s);
	const char *rest;
	if (strncasecmp(s, "http://", 7) == 0) {
		rest = s + 7;
	} else if (strncasecmp(s, "https://", 8) == 0) {
		u->https = true;
		rest = s + 8;
	} else {
		return err_set(err, "'%s' must start with http:// or https://", s);
	}
	u->port = u->https ? 443 : 80;
	size_t alen = strcspn(rest, "/?#");
	if (parse_authority(s, rest, alen, u, err) != 0)
		return -1;
	const char *path = rest + alen;
	size_t plen = strcspn(path, "#");
	if (plen == 0 || *path == '?')
		u->target = xasprintf("/%.*s", (int)plen, path);
	else
		u->target = xstrndup(path, plen);
	return 0;
}

void url_free(struct url *u)
{
	if (u) {
		free(u->target);
		u->target = NULL;
	}
}

void url_authority(const struct url *u, bool always_port, char *out, size_t cap)
{
	const char *l = u->ipv6 ? "[" : "", *r = u->ipv6 ? "]" : "";
	if (always_port || u->port != (u->https ? 443u : 80u))
		snprintf(out, cap, "%s%s%s:%u", l, u->host, r, u->port);
	else
		snprintf(out, cap, "%s%s%s", l, u->host, r);
}
