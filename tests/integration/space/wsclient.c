/*
 * wsclient — see wsclient.h. A hand-written RFC 6455 client for tests.
 */
#include "tests/integration/space/wsclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* The largest frame we are willing to buffer from the server: history
 * responses can be large, but a runaway peer must not eat the machine. */
#define WS_MAX_INBOUND_BYTES ((size_t)512 * 1024 * 1024)

int64_t ws_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *ws_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fprintf(stderr, "wsclient: out of memory (%zu bytes)\n", n);
		abort();
	}
	return q;
}

static void random_bytes(uint8_t *out, size_t n)
{
	static int seeded;
	if (!seeded) {
		srandom((unsigned)(time(NULL) ^ getpid()));
		seeded = 1;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(random() & 0xff);
}

int ws_tcp_connect(const char *host, int port, int rcvbuf, int timeout_ms)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno != EINPROGRESS) {
			close(fd);
			return -1;
		}
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		if (poll(&p, 1, timeout_ms) != 1) {
			close(fd);
			return -1;
		}
		int err = 0;
		socklen_t el = sizeof err;
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Reads whatever is available into rbuf, waiting up to timeout_ms.
 * Returns 1 when bytes were read, 0 on timeout, -1 on EOF/error. */
static int fill(struct ws_client *c, int timeout_ms)
{
	if (c->eof)
		return -1;
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	int r = poll(&p, 1, timeout_ms < 0 ? 0 : timeout_ms);
	if (r < 0 && errno == EINTR)
		return 0;
	if (r <= 0)
		return 0;
	if (c->rpos) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	if (c->rcap - c->rlen < 65536) {
		size_t ncap = c->rcap ? c->rcap * 2 : 131072;
		while (ncap - c->rlen < 65536)
			ncap *= 2;
		c->rbuf = ws_xrealloc(c->rbuf, ncap);
		c->rcap = ncap;
	}
	ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
	if (n > 0) {
		c->rlen += (size_t)n;
		return 1;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	c->eof = 1;
	return -1;
}

int ws_send_raw(struct ws_client *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t off = 0;
	int64_t idle_deadline = ws_now_ms() + 10000;
	while (off < len) {
		struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
		if (!c->eof)
			pf.events |= POLLIN;
		int r = poll(&pf, 1, 100);
		if (r < 0 && errno != EINTR) {
			c->send_failed = 1;
			return -1;
		}
		if (r > 0 && (pf.revents & POLLIN))
			fill(c, 0);
		if (r > 0 && (pf.revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = send(c->fd, p + off, len - off, MSG_NOSIGNAL);
			if (n > 0) {
				off += (size_t)n;
				idle_deadline = ws_now_ms() + 10000;
				continue;
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				c->send_failed = 1;
				return -1;
			}
		}
		if (ws_now_ms() > idle_deadline) {
			c->send_failed = 1;
			return -1;
		}
	}
	return 0;
}

int ws_send_frame_ex(struct ws_client *c, int fin, int rsv, int opcode, int masked,
                     const void *payload, size_t len)
{
	uint8_t hdr[14];
	size_t h = 0;
	hdr[h++] = (uint8_t)((fin ? 0x80 : 0) | ((rsv & 7) << 4) | (opcode & 0x0f));
	uint8_t mbit = masked ? 0x80 : 0;
	if (len < 126) {
		hdr[h++] = mbit | (uint8_t)len;
	} else if (len <= 0xffff) {
		hdr[h++] = mbit | 126;
		hdr[h++] = (uint8_t)(len >> 8);
		hdr[h++] = (uint8_t)len;
	} else {
		hdr[h++] = mbit | 127;
		for (int i = 7; i >= 0; i--)
			hdr[h++] = (uint8_t)((uint64_t)len >> (8 * i));
	}
	uint8_t key[4] = {0, 0, 0, 0};
	if (masked) {
		random_bytes(key, 4);
		memcpy(hdr + h, key, 4);
		h += 4;
	}
	uint8_t *buf = ws_xrealloc(NULL, h + len);
	memcpy(buf, hdr, h);
	const uint8_t *src = payload;
	for (size_t i = 0; i < len; i++)
		buf[h + i] = masked ? (uint8_t)(src[i] ^ key[i & 3]) : src[i];
	int rc = ws_send_raw(c, buf, h + len);
	free(buf);
	return rc;
}

int ws_send_frame(struct ws_client *c, int fin, int opcode, const void *payload, size_t len)
{
	return ws_send_frame_ex(c, fin, 0, opcode, 1, payload, len);
}

int ws_send_textn(struct ws_client *c, const void *data, size_t len)
{
	return ws_send_frame(c, 1, WS_OP_TEXT, data, len);
}

int ws_send_text(struct ws_client *c, const char *text)
{
	return ws_send_textn(c, text, strlen(text));
}

int ws_send_binary(struct ws_client *c, const void *data, size_t len)
{
	return ws_send_frame(c, 1, WS_OP_BINARY, data, len);
}

int ws_send_close(struct ws_client *c, int code, const char *reason)
{
	uint8_t buf[125];
	size_t n = 0;
	if (code) {
		buf[n++] = (uint8_t)(code >> 8);
		buf[n++] = (uint8_t)code;
		size_t rl = reason ? strlen(reason) : 0;
		if (rl > sizeof buf - 2)
			rl = sizeof buf - 2;
		if (rl)
			memcpy(buf + n, reason, rl);
		n += rl;
	}
	return ws_send_frame(c, 1, WS_OP_CLOSE, buf, n);
}

/* Parses one frame at the start of rbuf. Returns 1 and fills the out
 * parameters (payload unmasked in place) when a whole frame is buffered, 0
 * when more bytes are needed, -1 when the frame is absurd. */
static int parse_frame(struct ws_client *c, int *fin, int *opcode, uint8_t **payload, size_t *plen,
                       size_t *frame_len)
{
	size_t avail = c->rlen - c->rpos;
	if (avail < 2)
		return 0;
	uint8_t *b = c->rbuf + c->rpos;
	size_t h = 2;
	uint64_t len = b[1] & 0x7f;
	int masked = (b[1] & 0x80) != 0;
	if (len == 126) {
		if (avail < 4)
			return 0;
		len = ((uint64_t)b[2] << 8) | b[3];
		h = 4;
	} else if (len == 127) {
		if (avail < 10)
			return 0;
		len = 0;
		for (int i = 0; i < 8; i++)
			len = (len << 8) | b[2 + i];
		h = 10;
	}
	if (len > WS_MAX_INBOUND_BYTES)
		return -1;
	size_t mpos = h;
	if (masked)
		h += 4;
	if (avail < h + len)
		return 0;
	if (masked)
		for (size_t i = 0; i < len; i++)
			b[h + i] ^= b[mpos + (i & 3)];
	*fin = (b[0] & 0x80) != 0;
	*opcode = b[0] & 0x0f;
	*payload = b + h;
	*plen = (size_t)len;
	*frame_len = h + (size_t)len;
	return 1;
}

static void consume(struct ws_client *c, size_t n)
{
	c->rpos += n;
	if (c->rpos == c->rlen)
		c->rpos = c->rlen = 0;
}

static void make_msg(struct ws_msg *out, int opcode, const uint8_t *data, size_t len)
{
	out->opcode = opcode;
	out->data = ws_xrealloc(NULL, len + 1);
	memcpy(out->data, data, len);
	out->data[len] = '\0';
	out->len = len;
}

/* Handles every complete frame in rbuf. Returns WS_RECV_MSG when `out` was
 * filled, WS_RECV_CLOSED on a close frame, -1 when more bytes are needed. */
static int process_frames(struct ws_client *c, struct ws_msg *out)
{
	for (;;) {
		int fin, op;
		uint8_t *pl;
		size_t plen, flen;
		int r = parse_frame(c, &fin, &op, &pl, &plen, &flen);
		if (r < 0) {
			c->eof = 1;
			return WS_RECV_EOF;
		}
		if (r == 0)
			return -1;
		switch (op) {
		case WS_OP_TEXT:
		case WS_OP_BINARY:
			if (fin) {
				make_msg(out, op, pl, plen);
				consume(c, flen);
				return WS_RECV_MSG;
			}
			c->frag_opcode = op;
			c->frag_len = 0;
			/* fall through */
		case WS_OP_CONT:
			if (c->frag_len + plen + 1 > c->frag_cap) {
				c->frag_cap = (c->frag_len + plen + 1) * 2;
				c->frag = ws_xrealloc(c->frag, c->frag_cap);
			}
			memcpy(c->frag + c->frag_len, pl, plen);
			c->frag_len += plen;
			consume(c, flen);
			if (fin && op == WS_OP_CONT) {
				make_msg(out, c->frag_opcode, c->frag, c->frag_len);
				c->frag_len = 0;
				return WS_RECV_MSG;
			}
			break;
		case WS_OP_PING: {
			uint8_t copy[126];
			size_t n = plen < sizeof copy ? plen : sizeof copy;
			memcpy(copy, pl, n);
			consume(c, flen);
			c->pings_received++;
			c->last_ping_len = plen;
			if (c->auto_pong)
				ws_send_frame(c, 1, WS_OP_PONG, copy, n);
			break;
		}
		case WS_OP_PONG:
			c->pongs_received++;
			c->last_pong_len = plen < sizeof c->last_pong ? plen : sizeof c->last_pong;
			memcpy(c->last_pong, pl, c->last_pong_len);
			consume(c, flen);
			break;
		case WS_OP_CLOSE:
			c->got_close = 1;
			c->close_code = 1005;
			c->close_reason[0] = '\0';
			if (plen >= 2) {
				c->close_code = (pl[0] << 8) | pl[1];
				size_t rl = plen - 2;
				if (rl >= sizeof c->close_reason)
					rl = sizeof c->close_reason - 1;
				memcpy(c->close_reason, pl + 2, rl);
				c->close_reason[rl] = '\0';
			}
			consume(c, flen);
			/* Complete the closing handshake like a polite client. */
			ws_send_close(c, c->close_code == 1005 ? 0 : c->close_code, NULL);
			return WS_RECV_CLOSED;
		default:
			/* Unknown opcode from the server: a protocol error on its side. */
			consume(c, flen);
			break;
		}
	}
}

int ws_recv(struct ws_client *c, struct ws_msg *out, int timeout_ms)
{
	memset(out, 0, sizeof *out);
	int64_t deadline = ws_now_ms() + timeout_ms;
	bool looked = false; /* timeout 0 still reads what has arrived, once */
	for (;;) {
		if (c->got_close)
			return WS_RECV_CLOSED;
		int r = process_frames(c, out);
		if (r >= 0)
			return r;
		if (c->eof)
			return WS_RECV_EOF;
		int64_t left = deadline - ws_now_ms();
		if (left <= 0 && looked)
			return WS_RECV_TIMEOUT;
		looked = true;
		fill(c, left > 0 ? (int)left : 0);
	}
}

int ws_wait_close(struct ws_client *c, int timeout_ms)
{
	int64_t deadline = ws_now_ms() + timeout_ms;
	for (;;) {
		struct ws_msg m;
		int64_t left = deadline - ws_now_ms();
		int r = ws_recv(c, &m, left > 0 ? (int)left : 0);
		if (r == WS_RECV_MSG) {
			free(m.data);
			continue;
		}
		return r;
	}
}

static void base64_sha1_accept(const char *key, char out[64])
{
	char cat[128];
	snprintf(cat, sizeof cat, "%s%s", key, WS_GUID);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_Digest(cat, strlen(cat), md, &mdlen, EVP_sha1(), NULL);
	EVP_EncodeBlock((unsigned char *)out, md, (int)mdlen);
}

/* Finds header `name` in the response head; copies its trimmed value. */
static int find_header(const char *head, const char *name, char *val, size_t vsz)
{
	size_t nl = strlen(name);
	const char *p = strstr(head, "\r\n");
	while (p) {
		p += 2;
		if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			const char *e = strstr(v, "\r\n");
			size_t n = e ? (size_t)(e - v) : strlen(v);
			while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
				n--;
			if (n >= vsz)
				n = vsz - 1;
			memcpy(val, v, n);
			val[n] = '\0';
			return 0;
		}
		p = strstr(p, "\r\n");
	}
	return -1;
}

struct ws_client *ws_connect_ex(const char *host, int port, const char *path,
                                const char *extra_headers, int rcvbuf, int timeout_ms,
                                int *status_out)
{
	if (status_out)
		*status_out = 0;
	int64_t deadline = ws_now_ms() + timeout_ms;
	int fd = ws_tcp_connect(host, port, rcvbuf, timeout_ms);
	if (fd < 0)
		return NULL;
	struct ws_client *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->fd = fd;
	c->auto_pong = 1;

	uint8_t raw[16];
	random_bytes(raw, sizeof raw);
	char key[32];
	EVP_EncodeBlock((unsigned char *)key, raw, sizeof raw);
	char req[4096];
	int n = snprintf(req, sizeof req,
	                 "GET %s HTTP/1.1\r\n"
	                 "Host: %s:%d\r\n"
	                 "Upgrade: websocket\r\n"
	                 "Connection: Upgrade\r\n"
	                 "Sec-WebSocket-Key: %s\r\n"
	                 "Sec-WebSocket-Version: 13\r\n"
	                 "%s"
	                 "\r\n",
	                 path ? path : "/", host, port, key, extra_headers ? extra_headers : "");
	if (n <= 0 || (size_t)n >= sizeof req || ws_send_raw(c, req, (size_t)n) < 0)
		goto fail;

	/* Read the response head; bytes after it are the first frames. */
	for (;;) {
		if (c->rlen >= 4) {
			uint8_t *end = memmem(c->rbuf, c->rlen, "\r\n\r\n", 4);
			if (end) {
				size_t hl = (size_t)(end - c->rbuf) + 4;
				size_t cp = hl < sizeof c->http_head ? hl : sizeof c->http_head - 1;
				memcpy(c->http_head, c->rbuf, cp);
				c->http_head[cp] = '\0';
				consume(c, hl);
				break;
			}
			if (c->rlen > 16384)
				goto fail;
		}
		int64_t left = deadline - ws_now_ms();
		if (left <= 0 || c->eof)
			goto fail;
		fill(c, (int)left);
	}
	if (sscanf(c->http_head, "HTTP/1.%*d %d", &c->http_status) != 1)
		goto fail;
	if (status_out)
		*status_out = c->http_status;
	if (c->http_status != 101)
		goto fail;
	char want[64], got[128];
	base64_sha1_accept(key, want);
	if (find_header(c->http_head, "Sec-WebSocket-Accept", got, sizeof got) < 0 ||
	    strcmp(want, got) != 0) {
		if (status_out)
			*status_out = -1;
		goto fail;
	}
	return c;
fail:
	ws_free(c);
	return NULL;
}

struct ws_client *ws_connect(const char *host, int port, int timeout_ms)
{
	return ws_connect_ex(host, port, "/", NULL, 0, timeout_ms, NULL);
}

void ws_free(struct ws_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->rbuf);
	free(c->frag);
	free(c);
}

void ws_free_reset(struct ws_client *c)
{
	if (!c)
		return;
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	ws_free(c);
}

/* ---- plain HTTP ------------------------------------------------------- */

int ws_http(const char *host, int port, const char *request, int timeout_ms, char **response)
{
	if (response)
		*response = NULL;
	int fd = ws_tcp_connect(host, port, 0, timeout_ms);
	if (fd < 0)
		return 0;
	struct ws_client tmp;
	memset(&tmp, 0, sizeof tmp);
	tmp.fd = fd;
	if (ws_send_raw(&tmp, request, strlen(request)) < 0 && tmp.rlen == 0) {
		close(fd);
		free(tmp.rbuf);
		return 0;
	}
	/* Read until EOF or the announced body length arrived. */
	size_t cap = 65536, n = 0;
	char *buf = ws_xrealloc(NULL, cap);
	if (tmp.rlen) {
		if (tmp.rlen >= cap)
			abort();
		memcpy(buf, tmp.rbuf, tmp.rlen);
		n = tmp.rlen;
	}
	free(tmp.rbuf);
	int64_t deadline = ws_now_ms() + timeout_ms;
	for (;;) {
		buf[n] = '\0';
		char *hend = strstr(buf, "\r\n\r\n");
		if (hend) {
			const char *cl = strcasestr(buf, "\r\ncontent-length:");
			if (cl && cl < hend) {
				size_t want = strtoul(cl + 17, NULL, 10);
				if (n >= (size_t)(hend + 4 - buf) + want)
					break;
			}
		}
		int64_t left = deadline - ws_now_ms();
		if (left <= 0)
			break;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, (int)left) <= 0)
			break;
		if (cap - n < 4096) {
			cap *= 2;
			buf = ws_xrealloc(buf, cap);
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	close(fd);
	int status = 0;
	sscanf(buf, "HTTP/1.%*d %d", &status);
	if (response)
		*response = buf;
	else
		free(buf);
	return status;
}
