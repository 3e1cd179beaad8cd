/*
 * url — http(s) URL parsing for the native transport (see url.h).
 */
#include "adapters/http/url.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/http/idn2_shim.h"
#include "common/utf8.h"
#include "common/xalloc.h"

static bool host_char_ok(char ch)
{
	return isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_';
}

/* The ASCII form of a host name with non-ASCII letters (UTF-8), as
 * libcurl makes it: UTS #46 non-transitional processing of the NFC form,
 * then transitional for a name it disallows. */
static int idn_to_ascii(const char *url, const char *host, size_t n, char *out, size_t cap,
                        struct ga_err *err)
{
	if (!utf8_valid(host, n))
		return err_set(err, "the host name in '%s' is not valid UTF-8", url);
	struct ga_err lerr = {{0}};
	if (idn2_shim_load(&lerr) != 0)
		return err_set(err, "the host name in '%s' is international and %s", url, lerr.msg);
	char *in = xstrndup(host, n);
	uint8_t *ace = NULL;
	int rc = idn.lookup_u8((const uint8_t *)in, &ace, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
	if (rc == IDN2_DISALLOWED)
		rc = idn.lookup_u8((const uint8_t *)in, &ace, IDN2_NFC_INPUT | IDN2_TRANSITIONAL);
	free(in);
	if (rc != IDN2_OK)
		return err_set(err, "the host name in '%s' is not a valid international name: %s",
		               url, idn.strerror(rc));
	size_t len = strlen((const char *)ace);
	if (len == 0 || len >= cap) {
		idn.free(ace);
		return err_set(err, "the host name in '%s' is too long", url);
	}
	memcpy(out, ace, len + 1);
	idn.free(ace);
	return 0;
}

static bool has_non_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return true;
	return false;
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
	if (!u->ipv6 && has_non_ascii(host, host_len)) {
		if (idn_to_ascii(url, host, host_len, u->host, sizeof u->host, err) != 0)
			return -1;
		host = u->host;
		host_len = strlen(u->host);
	} else if (host_len >= sizeof u->host) {
		return err_set(err, "the host name in '%s' is too long", url);
	}
	for (size_t i = 0; i < host_len; i++)
		if (!(u->ipv6 ? (isxdigit((unsigned char)host[i]) || host[i] == ':' ||
		                 host[i] == '.')
		              : host_char_ok(host[i])))
			return err_set(err, "'%s' is not a valid URL: bad host name", url);
	memmove(u->host, host, host_len);
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
