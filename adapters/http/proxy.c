/*
 * proxy — proxy selection from the environment (see proxy.h).
 */
#include "adapters/http/proxy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"

static const char *env_first(const char *a, const char *b)
{
	const char *v = a ? getenv(a) : NULL;
	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

static bool no_proxy_entry_matches(const char *host, const char *e, size_t n)
{
	while (n && *e == '.') {
		e++;
		n--;
	}
	size_t hl = strlen(host);
	if (n == 0 || n > hl)
		return false;
	if (strncasecmp(host + hl - n, e, n) != 0)
		return false;
	return hl == n || host[hl - n - 1] == '.';
}

/* An address of either family, as inet_pton() writes it. */
struct ipaddr {
	int family;
	unsigned char b[16];
};

static bool ip_parse(const char *s, size_t n, struct ipaddr *a)
{
	char buf[INET6_ADDRSTRLEN + 2];
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof buf)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, a->b) == 1)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, a->b) == 1)
		a->family = AF_INET6;
	else
		return false;
	return true;
}

/* An entry "address" or "address/bits" (CIDR) against a host that is an
 * address: same family, the first `bits` bits equal (all of them when no
 * prefix is given). */
static bool no_proxy_cidr_matches(const struct ipaddr *host, const char *e, size_t n)
{
	const char *slash = memchr(e, '/', n);
	struct ipaddr net;
	if (!ip_parse(e, slash ? (size_t)(slash - e) : n, &net) || net.family != host->family)
		return false;
	unsigned max = host->family == AF_INET ? 32 : 128, bits = max;
	if (slash) {
		size_t dl = n - (size_t)(slash + 1 - e);
		if (dl == 0 || dl > 3)
			return false;
		bits = 0;
		for (size_t i = 0; i < dl; i++) {
			if (!isdigit((unsigned char)slash[1 + i]))
				return false;
			bits = bits * 10 + (unsigned)(slash[1 + i] - '0');
		}
		if (bits > max)
			return false;
	}
	size_t whole = bits / 8;
	if (memcmp(host->b, net.b, whole) != 0)
		return false;
	unsigned rest = bits % 8;
	if (!rest)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (host->b[whole] & mask) == (net.b[whole] & mask);
}

/* As libcurl (7.86+) reads no_proxy: a host given as an address is
 * compared with the entries that are addresses or CIDR ranges, a host name
 * with the names (no name is resolved to decide). */
static bool bypassed(const char *host)
{
	const char *np = env_first("no_proxy", "NO_PROXY");
	if (!np)
		return false;
	struct ipaddr ip;
	bool is_ip = ip_parse(host, strlen(host), &ip);
	for (const char *s = np; *s;) {
		while (*s == ',' || *s == ' ' || *s == '\t')
			s++;
		size_t n = strcspn(s, ", \t");
		if (n == 1 && *s == '*')
			return true;
		if (n &&
		    (is_ip ? no_proxy_cidr_matches(&ip, s, n) : no_proxy_entry_matches(host, s, n)))
			return true;
		s += n;
	}
	return false;
}

/* The proxy address v for a message, its credentials replaced by "***":
 * an error message is logged, and a password must not be. */
static const char *redacted(const char *v, char *buf, size_t cap)
{
	const char *sep = strstr(v, "://");
	const char *auth = sep ? sep + 3 : v;
	size_t alen = strcspn(auth, "/?#");
	const char *at = memchr(auth, '@', alen);
	if (!at)
		return v;
	snprintf(buf, cap, "%.*s***%s", (int)(auth - v), v, at);
	return buf;
}

static int hexval(char c)
{
	if (isdigit((unsigned char)c))
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes n bytes of s into out (cap bytes); -1 when too long. */
static int pct_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			c = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* The user part "user[:password]" of a SOCKS5 proxy, decoded each on its
 * own (a %3A in the user name stays in it). */
static int set_socks_cred(struct proxy *p, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t ul = colon ? (size_t)(colon - s) : n;
	if (pct_decode(s, ul, p->user, sizeof p->user) != 0)
		return -1;
	if (colon && pct_decode(colon + 1, n - ul - 1, p->pass, sizeof p->pass) != 0)
		return -1;
	return 0;
}

static int set_auth(struct proxy *p, const char *user, size_t n)
{
	if (p->kind != PROXY_HTTP)
		return set_socks_cred(p, user, n);
	char plain[256];
	if (pct_decode(user, n, plain, sizeof plain) != 0)
		return -1;
	size_t len = strlen(plain);
	char enc[((sizeof plain + 2) / 3) * 4 + 1];
	base64_encode(plain, len, 0, enc);
	snprintf(p->auth, sizeof p->auth, "Proxy-Authorization: Basic %s\r\n", enc);
	return 0;
}

static int parse_proxy(const char *var, const char *v, struct proxy *p, struct ga_err *err)
{
	char shown[256];
	const char *vs = redacted(v, shown, sizeof shown);
	const char *s = v;
	const char *sep = strstr(v, "://");
	if (sep) {
		size_t sl = (size_t)(sep - v);
		if (sl == 7 && strncasecmp(v, "socks5h", 7) == 0)
			p->kind = PROXY_SOCKS5H;
		else if (sl == 6 && strncasecmp(v, "socks5", 6) == 0)
			p->kind = PROXY_SOCKS5;
		else if (sl >= 5 && strncasecmp(v, "socks", 5) == 0)
			return err_set(err,
			               "the proxy %s in %s is a SOCKS4 proxy, which this HTTP "
			               "client does not support (use socks5:// or socks5h://, an "
			               "HTTP proxy, or unset %s)",
			               vs, var, var);
		else if (sl != 4 || strncasecmp(v, "http", 4) != 0)
			return err_set(
			        err,
			        "the proxy %s in %s is not an http://, socks5:// or socks5h:// "
			        "proxy, the kinds this HTTP client supports",
			        vs, var);
		s = sep + 3;
	}
	size_t alen = strcspn(s, "/?#");
	const char *at = memchr(s, '@', alen);
	if (at) {
		if (set_auth(p, s, (size_t)(at - s)) != 0)
			return err_set(err, "the credentials of the proxy in %s are too long", var);
		if (p->kind != PROXY_HTTP && !p->user[0])
			return err_set(err, "the proxy in %s has an empty user name", var);
		alen -= (size_t)(at + 1 - s);
		s = at + 1;
	}
	char buf[HTTP_HOST_MAX + 32];
	int n = snprintf(buf, sizeof buf, "http://%.*s/", (int)alen, s);
	struct url u;
	struct ga_err uerr = {{0}};
	if (n < 0 || (size_t)n >= sizeof buf || url_parse(buf, &u, &uerr) != 0)
		return err_set(err, "the proxy '%s' in %s is not a valid proxy address", vs, var);
	snprintf(p->host, sizeof p->host, "%s", u.host);
	const char *host_end = u.ipv6 ? memchr(s, ']', alen) : s;
	p->port = memchr(host_end, ':', alen - (size_t)(host_end - s)) ? u.port : 1080;
	url_free(&u);
	p->used = true;
	return 0;
}

int proxy_pick(const struct url *u, struct proxy *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	const char *var =
	        u->https ? (getenv("https_proxy") && *getenv("https_proxy") ? "https_proxy"
	                                                                    : "HTTPS_PROXY")
	                 : "http_proxy";
	const char *v = env_first(var, NULL);
	if (!v) {
		var = getenv("all_proxy") && *getenv("all_proxy") ? "all_proxy" : "ALL_PROXY";
		v = env_first(var, NULL);
	}
	if (!v || bypassed(u->host))
		return 0;
	return parse_proxy(var, v, out, err);
}
