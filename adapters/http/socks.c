/*
 * socks — the SOCKS5 client handshake (see socks.h).
 */
#include "adapters/http/socks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"

enum { S_METHOD, S_AUTH, S_REPLY, S_DONE };

#define SOCKS_VER       5
#define AUTH_VER        1
#define M_NONE          0x00
#define M_USERPASS      0x02
#define M_NO_ACCEPTABLE 0xff
#define CMD_CONNECT     1
#define ATYP_V4         1
#define ATYP_NAME       3
#define ATYP_V6         4

static const char *reply_text(unsigned code)
{
	static const char *const texts[] = {
	        "succeeded",
	        "general SOCKS server failure",
	        "connection not allowed by ruleset",
	        "network unreachable",
	        "host unreachable",
	        "connection refused",
	        "TTL expired",
	        "command not supported",
	        "address type not supported",
	};
	return code < sizeof texts / sizeof texts[0] ? texts[code] : "unassigned reply code";
}

static void put_port(unsigned char *p, unsigned port)
{
	p[0] = (unsigned char)(port >> 8);
	p[1] = (unsigned char)(port & 0xff);
}

int socks5_start(struct socks5 *s, const struct proxy *px, const char *host, unsigned port,
                 const struct sockaddr *addr, char *msg, size_t cap)
{
	memset(s, 0, sizeof *s);
	snprintf(s->dest, sizeof s->dest, "%s%s%s:%u", strchr(host, ':') ? "[" : "", host,
	         strchr(host, ':') ? "]" : "", port);
	unsigned char *r = s->req;
	r[0] = SOCKS_VER;
	r[1] = CMD_CONNECT;
	r[2] = 0;
	struct in_addr v4;
	struct in6_addr v6;
	if (addr && addr->sa_family == AF_INET)
		v4 = ((const struct sockaddr_in *)(const void *)addr)->sin_addr;
	if (addr && addr->sa_family == AF_INET6)
		v6 = ((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr;
	bool is4 = addr ? addr->sa_family == AF_INET : inet_pton(AF_INET, host, &v4) == 1;
	bool is6 =
	        !is4 && (addr ? addr->sa_family == AF_INET6 : inet_pton(AF_INET6, host, &v6) == 1);
	size_t n = 3;
	if (is4) {
		r[n++] = ATYP_V4;
		memcpy(r + n, &v4, 4);
		n += 4;
	} else if (is6) {
		r[n++] = ATYP_V6;
		memcpy(r + n, &v6, 16);
		n += 16;
	} else {
		size_t hl = strlen(host);
		if (hl == 0 || hl > 255) {
			err_fmt(msg, cap, "cannot carry the host name %.40s... (over 255 bytes)",
			        host);
			return -1;
		}
		r[n++] = ATYP_NAME;
		r[n++] = (unsigned char)hl;
		memcpy(r + n, host, hl);
		n += hl;
	}
	put_port(r + n, port);
	s->req_len = n + 2;
	if (px->user[0]) {
		size_t ul = strlen(px->user), pl = strlen(px->pass);
		unsigned char *a = s->auth;
		a[0] = AUTH_VER;
		a[1] = (unsigned char)ul;
		memcpy(a + 2, px->user, ul);
		a[2 + ul] = (unsigned char)pl;
		memcpy(a + 3 + ul, px->pass, pl);
		s->auth_len = 3 + ul + pl;
	}
	s->state = S_METHOD;
	return 0;
}

size_t socks5_greeting(const struct socks5 *s, unsigned char out[4])
{
	out[0] = SOCKS_VER;
	out[2] = M_NONE;
	if (!s->auth_len) {
		out[1] = 1;
		return 3;
	}
	out[1] = 2;
	out[3] = M_USERPASS;
	return 4;
}

/* How many bytes the message being read has in all, once enough of it is
 * there to tell; 0 while unknown. */
static size_t expected_len(const struct socks5 *s)
{
	if (s->state != S_REPLY)
		return 2;
	if (s->in_len < 5)
		return 0;
	switch (s->in[3]) {
	case ATYP_V4:
		return 4 + 4 + 2;
	case ATYP_V6:
		return 4 + 16 + 2;
	case ATYP_NAME:
		return 4 + 1 + (size_t)s->in[4] + 2;
	default:
		return 4; /* a bad type: judged as soon as the head is there */
	}
}

/* Judges one complete message. */
static enum socks5_step judge(struct socks5 *s, const unsigned char **send, size_t *send_len,
                              char *msg, size_t cap)
{
	const unsigned char *m = s->in;
	switch (s->state) {
	case S_METHOD:
		if (m[0] != SOCKS_VER) {
			err_fmt(msg, cap, "is not a SOCKS5 proxy (it answered version %u)", m[0]);
			return SOCKS5_FAIL;
		}
		if (m[1] == M_NONE || (m[1] == M_USERPASS && s->auth_len)) {
			s->state = m[1] == M_NONE ? S_REPLY : S_AUTH;
			*send = m[1] == M_NONE ? s->req : s->auth;
			*send_len = m[1] == M_NONE ? s->req_len : s->auth_len;
			return SOCKS5_MORE;
		}
		err_fmt(msg, cap,
		        m[1] == M_NO_ACCEPTABLE
		                ? "accepts none of the authentication methods offered (%s)"
		                : "chose an authentication method not offered (%s)",
		        s->auth_len ? "none, username/password"
		                    : "none; set user:password@ in the "
		                      "proxy's address if it needs them");
		return SOCKS5_FAIL;
	case S_AUTH:
		if (m[1] != 0) {
			err_fmt(msg, cap, "refused the user name and password (status %u)", m[1]);
			return SOCKS5_FAIL;
		}
		s->state = S_REPLY;
		*send = s->req;
		*send_len = s->req_len;
		return SOCKS5_MORE;
	default:
		if (m[0] != SOCKS_VER) {
			err_fmt(msg, cap, "answered CONNECT with version %u", m[0]);
			return SOCKS5_FAIL;
		}
		if (m[1] != 0) {
			err_fmt(msg, cap, "refused the connection to %s (reply %u: %s)", s->dest,
			        m[1], reply_text(m[1]));
			return SOCKS5_FAIL;
		}
		if (m[3] != ATYP_V4 && m[3] != ATYP_V6 && m[3] != ATYP_NAME) {
			err_fmt(msg, cap, "answered CONNECT with address type %u", m[3]);
			return SOCKS5_FAIL;
		}
		s->state = S_DONE;
		return SOCKS5_DONE;
	}
}

enum socks5_step socks5_feed(struct socks5 *s, const char *p, size_t n, const unsigned char **send,
                             size_t *send_len, char *msg, size_t cap)
{
	*send = NULL;
	*send_len = 0;
	if (s->state == S_DONE) {
		err_fmt(msg, cap, "sent bytes after the handshake had ended");
		return SOCKS5_FAIL;
	}
	size_t want = expected_len(s);
	while (n && (want == 0 || s->in_len < want)) {
		size_t take = want ? want - s->in_len : 5 - s->in_len;
		if (take > n)
			take = n;
		memcpy(s->in + s->in_len, p, take);
		s->in_len += take;
		p += take;
		n -= take;
		want = expected_len(s);
	}
	if (want == 0 || s->in_len < want)
		return SOCKS5_MORE;
	if (n) {
		err_fmt(msg, cap, "sent more than the handshake's answer");
		return SOCKS5_FAIL;
	}
	s->in_len = 0;
	return judge(s, send, send_len, msg, cap);
}
