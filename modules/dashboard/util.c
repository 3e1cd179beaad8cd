/* The dashboard's pure parts: the address, the token compare, the Host
 * check against DNS rebinding, static file names (see dashboard.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mime.h"
#include "modules/dashboard/dashboard.h"

static bool ipv4_loopback(const char *host)
{
	struct in_addr a;
	if (inet_pton(AF_INET, host, &a) != 1)
		return false;
	return (ntohl(a.s_addr) >> 24) == 127;
}

static bool ipv6_loopback(const char *host)
{
	struct in6_addr a;
	if (inet_pton(AF_INET6, host, &a) != 1)
		return false;
	return IN6_IS_ADDR_LOOPBACK(&a);
}

int dashboard_parse_addr(const char *s, struct dashboard_addr *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (!s || !*s) {
		err_set(err,
		        "the dashboard address is empty: give host:port (e.g. 127.0.0.1:7780)");
		return -1;
	}
	const char *host = s, *host_end, *port_s;
	if (s[0] == '[') {
		host = s + 1;
		host_end = strchr(host, ']');
		if (!host_end || host_end[1] != ':') {
			err_set(err,
			        "dashboard address '%.80s': an IPv6 address is written [addr]:port",
			        s);
			return -1;
		}
		port_s = host_end + 2;
		out->ipv6 = true;
	} else {
		host_end = strrchr(s, ':');
		if (!host_end) {
			err_set(err, "dashboard address '%.80s' has no port: give host:port", s);
			return -1;
		}
		port_s = host_end + 1;
	}
	size_t hl = (size_t)(host_end - host);
	if (hl == 0 || hl >= sizeof out->host) {
		err_set(err, "dashboard address '%.80s': the host is empty or too long", s);
		return -1;
	}
	char *end = NULL;
	long port = strtol(port_s, &end, 10);
	if (!*port_s || !end || *end || port < 0 || port > 65535) {
		err_set(err, "dashboard address '%.80s': the port must be a number from 0 to 65535",
		        s);
		return -1;
	}
	out->port = (int)port;
	memcpy(out->host, host, hl);
	out->host[hl] = '\0';
	if (!out->ipv6 && strcmp(out->host, "localhost") == 0)
		snprintf(out->host, sizeof out->host, "127.0.0.1");
	if (out->ipv6) {
		struct in6_addr a6;
		if (inet_pton(AF_INET6, out->host, &a6) != 1) {
			err_set(err, "dashboard address '%.80s': '%s' is not an IPv6 address", s,
			        out->host);
			return -1;
		}
		out->loopback = ipv6_loopback(out->host);
	} else {
		struct in_addr a4;
		if (inet_pton(AF_INET, out->host, &a4) != 1) {
			err_set(err,
			        "dashboard address '%.80s': '%s' is not a numeric IPv4 address "
			        "(names other than localhost are not resolved)",
			        s, out->host);
			return -1;
		}
		out->loopback = ipv4_loopback(out->host);
	}
	return 0;
}

bool dashboard_token_equal(const char *got, const char *want)
{
	if (!got || !want)
		return false;
	size_t gl = strlen(got), wl = strlen(want);
	/* Every byte of want is compared whatever got holds, so the time
	 * says nothing about how much of a guess was right. */
	unsigned char diff = (unsigned char)(gl != wl);
	for (size_t i = 0; i < wl; i++) {
		unsigned char g = i < gl ? (unsigned char)got[i] : 0;
		diff |= (unsigned char)(g ^ (unsigned char)want[i]);
	}
	return diff == 0;
}

bool dashboard_host_is_loopback(const char *host)
{
	if (!host || !*host)
		return false;
	char h[80];
	const char *end, *port = NULL;
	bool bracketed = host[0] == '[';
	if (bracketed) {
		end = strchr(host, ']');
		if (!end || (end[1] && end[1] != ':'))
			return false;
		host++;
		if (end[1] == ':')
			port = end + 2;
	} else {
		end = strchr(host, ':');
		if (end)
			port = end + 1;
		else
			end = host + strlen(host);
	}
	size_t n = (size_t)(end - host);
	if (n == 0 || n >= sizeof h)
		return false;
	memcpy(h, host, n);
	h[n] = '\0';
	if (port) {
		if (!*port)
			return false;
		for (const char *p = port; *p; p++)
			if (!isdigit((unsigned char)*p))
				return false;
	}
	for (char *c = h; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return strcmp(h, "localhost") == 0 || ipv4_loopback(h) || ipv6_loopback(h);
}

bool dashboard_static_name_ok(const char *name)
{
	return name && mime_name_ok(name, strlen(name), DASHBOARD_STATIC_NAME_MAX);
}
