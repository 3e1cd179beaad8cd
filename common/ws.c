/*
 * common/ws — RFC 6455 handshake and frame parser, both roles. See ws.h.
 */
#include "common/ws.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/utf8.h"
#include "common/xalloc.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* A reassembly buffer larger than this is released after its message, so
 * an idle member that once sent a big message does not keep the memory. */
#define WS_KEEP_MSG_BYTES ((size_t)16 * 1024)

/* --- SHA-1 and base64, for Sec-WebSocket-Accept only ------------------------- */

/* SHA-1 (FIPS 180-4) of one short string. libcrypto has it, but mapping
 * libcrypto for 60 bytes per handshake costs ~1.4 MB of resident memory
 * (its relocations), half of the server's idle budget; this is the whole
 * algorithm, checked against the RFC 6455 §1.3 example in the unit tests. */
static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5A827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ED9EBA1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8F1BBCDC;
		} else {
			f = b ^ c ^ d;
			k = 0xCA62C1D6;
		}
		uint32_t t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

static void sha1(const uint8_t *data, size_t len, uint8_t out[20])
{
	uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
	size_t i = 0;
	for (; i + 64 <= len; i += 64)
		sha1_block(h, data + i);
	uint8_t tail[128] = {0};
	size_t rest = len - i;
	memcpy(tail, data + i, rest);
	tail[rest] = 0x80;
	size_t tlen = rest + 1 + 8 <= 64 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8;
	for (int k = 0; k < 8; k++)
		tail[tlen - 1 - k] = (uint8_t)(bits >> (8 * k));
	sha1_block(h, tail);
	if (tlen == 128)
		sha1_block(h, tail + 64);
	for (int k = 0; k < 5; k++) {
		out[4 * k] = (uint8_t)(h[k] >> 24);
		out[4 * k + 1] = (uint8_t)(h[k] >> 16);
		out[4 * k + 2] = (uint8_t)(h[k] >> 8);
		out[4 * k + 3] = (uint8_t)h[k];
	}
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Base64 of n bytes (n a multiple of 3 after zero padding by the caller's
 * buffer), without the '=' padding, which each caller writes: both inputs
 * here have fixed sizes (20 and 16 bytes). Returns the characters written. */
static size_t b64_groups(const uint8_t *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64[(v >> 18) & 63];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	return o;
}

void ws_accept(const char *key, size_t len, char out[29])
{
	uint8_t buf[128 + sizeof WS_GUID];
	if (len > 128)
		len = 128; /* callers pass a validated 24-character key */
	memcpy(buf, key, len);
	memcpy(buf + len, WS_GUID, sizeof WS_GUID - 1);
	uint8_t md[21] = {0};
	sha1(buf, len + sizeof WS_GUID - 1, md);
	b64_groups(md, 21, out);
	/* 20 bytes encode to 27 characters and one '='. */
	out[27] = '=';
	out[28] = '\0';
}

void ws_client_key(char out[25])
{
	uint8_t raw[18] = {0}; /* 16 random bytes; two zero bytes pad to 6 groups */
	random_bytes(raw, 16);
	b64_groups(raw, 18, out);
	/* 16 bytes encode to 22 characters and "==". */
	out[22] = '=';
	out[23] = '=';
	out[24] = '\0';
}

bool ws_key_valid(const char *key, size_t len)
{
	/* ws's /^[+/0-9A-Za-z]{22}==$/ */
	if (len != 24 || key[22] != '=' || key[23] != '=')
		return false;
	for (size_t i = 0; i < 22; i++)
		if (!memchr(b64, key[i], sizeof b64 - 1))
			return false;
	return true;
}

/* --- request head ---------------------------------------------------------------- */

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

static void trim(const char **s, size_t *n)
{
	while (*n && is_ows(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_ows((*s)[*n - 1]))
		(*n)--;
}

static bool name_is(const char *s, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp(s, want, n) == 0;
}

/* True when the comma-separated list s holds token (any case). */
static bool list_has(const char *s, size_t n, const char *token)
{
	while (n) {
		const char *comma = memchr(s, ',', n);
		size_t item = comma ? (size_t)(comma - s) : n;
		const char *t = s;
		size_t tl = item;
		trim(&t, &tl);
		if (name_is(t, tl, token))
			return true;
		if (!comma)
			break;
		s += item + 1;
		n -= item + 1;
	}
	return false;
}

/* End of the head: the byte after "\r\n\r\n" (or a bare "\n\n"), or 0. */
static size_t head_end(const char *buf, size_t len)
{
	for (size_t i = 1; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i - 1] == '\n')
			return i + 1;
		if (i >= 3 && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return i + 1;
	}
	return 0;
}

enum ws_head_result ws_parse_request(const char *buf, size_t len, struct ws_request *req)
{
	memset(req, 0, sizeof *req);
	req->version = -1;
	size_t end = head_end(buf, len);
	if (!end)
		return WS_HEAD_INCOMPLETE;
	req->head_len = end;

	bool conn_upgrade = false, have_upgrade = false;
	const char *line = buf;
	bool first = true;
	while (line < buf + end) {
		const char *nl = memchr(line, '\n', (size_t)(buf + end - line));
		size_t n = (size_t)(nl - line);
		const char *next = nl + 1;
		if (n && line[n - 1] == '\r')
			n--;
		if (first) {
			/* METHOD SP request-target SP HTTP/1.x */
			const char *sp1 = memchr(line, ' ', n);
			if (!sp1 || sp1 == line)
				return WS_HEAD_BAD;
			const char *rest = sp1 + 1;
			size_t rn = n - (size_t)(rest - line);
			const char *sp2 = memchr(rest, ' ', rn);
			if (!sp2 || sp2 == rest)
				return WS_HEAD_BAD;
			size_t vn = rn - (size_t)(sp2 + 1 - rest);
			if (vn != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0)
				return WS_HEAD_BAD;
			req->method = line;
			req->method_len = (size_t)(sp1 - line);
			req->path = rest;
			req->path_len = (size_t)(sp2 - rest);
			first = false;
			line = next;
			continue;
		}
		if (!n)
			break; /* the blank line */
		const char *colon = memchr(line, ':', n);
		if (!colon || colon == line)
			return WS_HEAD_BAD;
		const char *name = line;
		size_t name_len = (size_t)(colon - line);
		const char *val = colon + 1;
		size_t val_len = n - name_len - 1;
		trim(&val, &val_len);
		if (name_is(name, name_len, "Connection")) {
			if (list_has(val, val_len, "upgrade"))
				conn_upgrade = true;
		} else if (name_is(name, name_len, "Upgrade")) {
			have_upgrade = true;
			if (name_is(val, val_len, "websocket"))
				req->upgrade_websocket = true;
		} else if (name_is(name, name_len, "Sec-WebSocket-Key")) {
			req->key = val;
			req->key_len = val_len;
		} else if (name_is(name, name_len, "Sec-WebSocket-Version")) {
			int v = 0;
			bool ok = val_len > 0 && val_len <= 3;
			for (size_t i = 0; ok && i < val_len; i++) {
				if (val[i] < '0' || val[i] > '9')
					ok = false;
				else
					v = v * 10 + (val[i] - '0');
			}
			req->version = ok ? v : -1;
		} else if (name_is(name, name_len, "Sec-WebSocket-Protocol") && !req->protocol) {
			/* §1 item 4: the first offered value is accepted. */
			const char *comma = memchr(val, ',', val_len);
			size_t pl = comma ? (size_t)(comma - val) : val_len;
			const char *p = val;
			trim(&p, &pl);
			if (pl) {
				req->protocol = p;
				req->protocol_len = pl;
			}
		}
		line = next;
	}
	req->upgrade = have_upgrade && conn_upgrade;
	if (!req->upgrade)
		req->upgrade_websocket = false;
	return WS_HEAD_DONE;
}

/* --- response head (the client's side) ------------------------------------------------ */

/* A header value shown in an error sentence: at most 60 bytes. */
static int shown(size_t n)
{
	return n > 60 ? 60 : (int)n;
}

enum ws_head_result ws_parse_response(const char *buf, size_t len, const char *key,
                                      size_t *head_len, char *why, size_t why_len)
{
	*head_len = 0;
	if (why_len)
		why[0] = '\0';
	size_t end = head_end(buf, len);
	if (!end)
		return WS_HEAD_INCOMPLETE;
	*head_len = end;
	char want[29];
	ws_accept(key, strlen(key), want);

	bool upgrade = false, conn_upgrade = false, accept_ok = false, have_accept = false;
	const char *line = buf;
	bool first = true;
	while (line < buf + end) {
		const char *nl = memchr(line, '\n', (size_t)(buf + end - line));
		size_t n = (size_t)(nl - line);
		const char *next = nl + 1;
		if (n && line[n - 1] == '\r')
			n--;
		if (first) {
			/* HTTP/1.x SP 101 SP reason */
			if (n < 12 || strncmp(line, "HTTP/1.", 7) != 0 || line[8] != ' ') {
				snprintf(why, why_len, "the server did not answer HTTP: '%.*s'",
				         shown(n), line);
				return WS_HEAD_BAD;
			}
			if (strncmp(line + 9, "101", 3) != 0 || (n > 12 && line[12] != ' ')) {
				snprintf(why, why_len,
				         "the server refused the WebSocket upgrade: '%.*s' (wanted "
				         "101)",
				         shown(n), line);
				return WS_HEAD_BAD;
			}
			first = false;
			line = next;
			continue;
		}
		if (!n)
			break;
		const char *colon = memchr(line, ':', n);
		if (!colon || colon == line) {
			snprintf(why, why_len,
			         "the server's upgrade answer has a malformed header '%.*s'",
			         shown(n), line);
			return WS_HEAD_BAD;
		}
		const char *name = line;
		size_t name_len = (size_t)(colon - line);
		const char *val = colon + 1;
		size_t val_len = n - name_len - 1;
		trim(&val, &val_len);
		if (name_is(name, name_len, "Connection")) {
			if (list_has(val, val_len, "upgrade"))
				conn_upgrade = true;
		} else if (name_is(name, name_len, "Upgrade")) {
			if (name_is(val, val_len, "websocket"))
				upgrade = true;
		} else if (name_is(name, name_len, "Sec-WebSocket-Accept")) {
			have_accept = true;
			accept_ok = val_len == 28 && memcmp(val, want, 28) == 0;
		} else if (name_is(name, name_len, "Sec-WebSocket-Extensions") ||
		           name_is(name, name_len, "Sec-WebSocket-Protocol")) {
			/* §4.1 items 5-6: we offered none, so any is a failure. */
			snprintf(why, why_len,
			         "the server chose '%.*s: %.*s', which was not offered",
			         shown(name_len), name, shown(val_len), val);
			return WS_HEAD_BAD;
		}
		line = next;
	}
	if (!upgrade || !conn_upgrade) {
		snprintf(why, why_len,
		         "the server's 101 answer lacks 'Upgrade: websocket' or 'Connection: "
		         "Upgrade'");
		return WS_HEAD_BAD;
	}
	if (!accept_ok) {
		snprintf(why, why_len,
		         have_accept ? "the server's Sec-WebSocket-Accept does not match our key"
		                     : "the server's 101 answer has no Sec-WebSocket-Accept");
		return WS_HEAD_BAD;
	}
	return WS_HEAD_DONE;
}

/* --- frames ------------------------------------------------------------------------ */

size_t ws_frame_header(uint8_t out[WS_HDR_MAX], unsigned opcode, uint64_t len)
{
	out[0] = (uint8_t)(0x80 | (opcode & 0x0F));
	if (len < 126) {
		out[1] = (uint8_t)len;
		return 2;
	}
	if (len <= 0xFFFF) {
		out[1] = 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		return 4;
	}
	out[1] = 127;
	for (int i = 0; i < 8; i++)
		out[2 + i] = (uint8_t)(len >> (8 * (7 - i)));
	return 10;
}

size_t ws_frame_header_masked(uint8_t out[WS_HDR_MASKED_MAX], unsigned opcode, uint64_t len,
                              const uint8_t mask[4])
{
	size_t n = ws_frame_header(out, opcode, len);
	out[1] |= 0x80;
	memcpy(out + n, mask, 4);
	return n + 4;
}

bool ws_close_code_valid(int code)
{
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
	       (code >= 3000 && code <= 4999);
}

void ws_parser_init(struct ws_parser *p, size_t max_message, enum ws_role role)
{
	memset(p, 0, sizeof *p);
	p->max_message = max_message;
	p->role = role;
}

void ws_parser_free(struct ws_parser *p)
{
	free(p->msg);
	p->msg = NULL;
	p->msg_len = p->msg_cap = 0;
}

/* Reports an error and switches to draining. */
static void fail(struct ws_parser *p, struct ws_event *ev, int code)
{
	p->draining = true;
	ev->type = WS_EV_ERROR;
	ev->code = code;
}

static void msg_append(struct ws_parser *p, const char *data, size_t n)
{
	if (p->msg_len + n > p->msg_cap) {
		size_t cap = p->msg_cap ? p->msg_cap : 1024;
		while (cap < p->msg_len + n)
			cap *= 2;
		if (cap > p->max_message)
			cap = p->max_message; /* the header check bounds msg_len + n */
		p->msg = xrealloc(p->msg, cap);
		p->msg_cap = cap;
	}
	memcpy(p->msg + p->msg_len, data, n);
	p->msg_len += n;
}

void ws_mask(char *d, size_t n, const uint8_t mask[4], uint64_t pos)
{
	for (size_t i = 0; i < n; i++)
		d[i] ^= (char)mask[(pos + i) & 3];
}

/* Header bytes needed once the first two are known. */
static size_t header_need(const struct ws_parser *p)
{
	if (p->hdr_have < 2)
		return 2;
	unsigned l7 = p->hdr[1] & 0x7F;
	return 2 + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0) + (p->hdr[1] & 0x80 ? 4 : 0);
}

/* Checks of the first two header bytes (RFC 6455 §5.2, §5.5). */
static int check_start(struct ws_parser *p)
{
	uint8_t b0 = p->hdr[0], b1 = p->hdr[1];
	unsigned op = b0 & 0x0F;
	bool fin = b0 & 0x80;
	if (b0 & 0x70)
		return WS_CLOSE_PROTOCOL; /* RSV bits: no extension negotiated */
	bool masked = b1 & 0x80;
	if (masked != (p->role == WS_ROLE_SERVER))
		return WS_CLOSE_PROTOCOL; /* client frames masked, server frames not */
	switch (op) {
	case WS_OP_CONT:
		if (!p->in_message)
			return WS_CLOSE_PROTOCOL;
		break;
	case WS_OP_TEXT:
	case WS_OP_BINARY:
		if (p->in_message)
			return WS_CLOSE_PROTOCOL;
		break;
	case WS_OP_CLOSE:
	case WS_OP_PING:
	case WS_OP_PONG:
		if (!fin || (b1 & 0x7F) > WS_CONTROL_MAX)
			return WS_CLOSE_PROTOCOL;
		break;
	default:
		return WS_CLOSE_PROTOCOL; /* reserved opcode */
	}
	return 0;
}

/* The header is complete: decode length and mask, apply the size limit. */
static int start_frame(struct ws_parser *p)
{
	unsigned l7 = p->hdr[1] & 0x7F;
	uint64_t len = l7;
	size_t o = 2;
	if (l7 == 126) {
		len = (uint64_t)p->hdr[2] << 8 | p->hdr[3];
		o = 4;
	} else if (l7 == 127) {
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | p->hdr[2 + i];
		o = 10;
	}
	if (p->hdr[1] & 0x80)
		memcpy(p->mask, p->hdr + o, 4);
	else
		memset(p->mask, 0, 4);
	p->fin = p->hdr[0] & 0x80;
	p->opcode = p->hdr[0] & 0x0F;
	p->remaining = len;
	p->frame_pos = 0;
	p->ctl_len = 0;
	p->hdr_have = 0;
	p->in_frame = true;
	if (p->draining)
		return 0;
	if (len >> 63)
		return WS_CLOSE_PROTOCOL;
	if (!(p->opcode & 0x8)) {
		/* §1 item 9: the limit applies to the reassembled message and is
		 * checked as soon as a header announces too much, like ws. */
		uint64_t before = p->in_message ? p->msg_len : 0;
		if (len > p->max_message || before + len > p->max_message)
			return WS_CLOSE_TOO_BIG;
		if (p->opcode != WS_OP_CONT)
			p->msg_binary = p->opcode == WS_OP_BINARY;
	}
	return 0;
}

/* The peer's close frame (its payload is in ctl). */
static void close_event(struct ws_parser *p, struct ws_event *ev)
{
	if (p->ctl_len == 0) {
		ev->type = WS_EV_CLOSE;
		ev->code = WS_CLOSE_NO_STATUS;
		ev->data = "";
		return;
	}
	int code = p->ctl_len >= 2 ? p->ctl[0] << 8 | p->ctl[1] : 0;
	if (!p->draining) {
		int bad = 0;
		if (p->ctl_len == 1 || !ws_close_code_valid(code))
			bad = WS_CLOSE_PROTOCOL;
		else if (!utf8_valid((const char *)p->ctl + 2, p->ctl_len - 2u))
			bad = WS_CLOSE_INVALID_DATA;
		if (bad) {
			fail(p, ev, bad);
			ev->peer_closed = true;
			return;
		}
	}
	ev->type = WS_EV_CLOSE;
	ev->code = code ? code : WS_CLOSE_NO_STATUS;
	ev->data = p->ctl_len >= 2 ? (const char *)p->ctl + 2 : "";
	ev->len = p->ctl_len >= 2 ? p->ctl_len - 2u : 0;
}

/* The frame's payload is complete. Returns true when it produced an event
 * (ev filled), which may be an error. zc: the whole payload, in place. */
static bool end_frame(struct ws_parser *p, struct ws_event *ev, const char *zc, size_t zc_len)
{
	p->in_frame = false;
	if (p->opcode == WS_OP_CLOSE) {
		close_event(p, ev);
		return true;
	}
	if (p->draining)
		return false; /* everything else is dropped */
	if (p->opcode == WS_OP_PING || p->opcode == WS_OP_PONG) {
		ev->type = p->opcode == WS_OP_PING ? WS_EV_PING : WS_EV_PONG;
		ev->data = (const char *)p->ctl;
		ev->len = p->ctl_len;
		return true;
	}
	if (!p->fin) {
		p->in_message = true;
		return false;
	}
	const char *data = zc ? zc : (p->msg ? p->msg : "");
	size_t len = zc ? zc_len : p->msg_len;
	p->in_message = false;
	p->msg_len = 0; /* the bytes stay valid until the next call */
	/* §1 item 8: invalid UTF-8 in a text message closes 1007. Checked on
	 * the whole message, so a code point split across fragments is fine. */
	if (!p->msg_binary && !utf8_valid(data, len)) {
		fail(p, ev, WS_CLOSE_INVALID_DATA);
		return true;
	}
	ev->type = WS_EV_MESSAGE;
	ev->data = data;
	ev->len = len;
	ev->binary = p->msg_binary;
	return true;
}

size_t ws_parse(struct ws_parser *p, char *buf, size_t len, struct ws_event *ev)
{
	memset(ev, 0, sizeof *ev);
	if (!p->in_message && !p->in_frame && p->msg_cap > WS_KEEP_MSG_BYTES)
		ws_parser_free(p);

	size_t used = 0;
	while (used < len) {
		if (!p->in_frame) {
			while (p->hdr_have < header_need(p) && used < len) {
				p->hdr[p->hdr_have++] = (uint8_t)buf[used++];
				if (p->hdr_have == 2 && !p->draining) {
					int code = check_start(p);
					if (code) {
						fail(p, ev, code);
						return used;
					}
				}
			}
			if (p->hdr_have < header_need(p))
				return used;
			int code = start_frame(p);
			if (code) {
				fail(p, ev, code);
				return used;
			}
			if (p->remaining == 0 && end_frame(p, ev, NULL, 0))
				return used;
			continue;
		}
		size_t take = len - used;
		if ((uint64_t)take > p->remaining)
			take = (size_t)p->remaining;
		char *pl = buf + used;
		bool whole = p->frame_pos == 0 && take == p->remaining;
		bool control = p->opcode & 0x8;
		if (!p->draining || (control && p->frame_pos + take <= WS_CONTROL_MAX))
			ws_mask(pl, take, p->mask, p->frame_pos);
		used += take;
		p->remaining -= take;
		p->frame_pos += take;
		if (control) {
			if (p->frame_pos <= WS_CONTROL_MAX) {
				memcpy(p->ctl + p->ctl_len, pl, take);
				p->ctl_len = (uint8_t)(p->ctl_len + take);
			}
		} else if (p->draining) {
			/* dropped */
		} else if (whole && p->fin && !p->in_message) {
			/* The common case: a whole unfragmented message in this read
			 * is delivered in place, without a copy. */
			if (end_frame(p, ev, pl, take))
				return used;
			continue;
		} else {
			msg_append(p, pl, take);
		}
		if (p->remaining == 0 && end_frame(p, ev, NULL, 0))
			return used;
	}
	return used;
}
