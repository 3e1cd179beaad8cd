/* Unit tests for common/ws: the opening handshake and the frame parser in
 * both roles (RFC 6455; space-protocol.md §1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ws.h"

#define MAXMSG (1024 * 1024)

/* --- helpers ---------------------------------------------------------------- */

/* Builds a client frame: fin, rsv bits, opcode, masked or not. */
static size_t frame(uint8_t *out, bool fin, unsigned rsv, unsigned op, bool masked,
                    const void *payload, size_t len)
{
	size_t n = 0;
	out[n++] = (uint8_t)((fin ? 0x80 : 0) | (rsv << 4) | op);
	uint8_t m = masked ? 0x80 : 0;
	if (len < 126) {
		out[n++] = (uint8_t)(m | len);
	} else if (len <= 0xFFFF) {
		out[n++] = m | 126;
		out[n++] = (uint8_t)(len >> 8);
		out[n++] = (uint8_t)len;
	} else {
		out[n++] = m | 127;
		for (int i = 7; i >= 0; i--)
			out[n++] = (uint8_t)((uint64_t)len >> (8 * i));
	}
	uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
	if (masked) {
		memcpy(out + n, key, 4);
		n += 4;
	}
	const uint8_t *p = payload;
	for (size_t i = 0; i < len; i++)
		out[n + i] = masked ? p[i] ^ key[i & 3] : p[i];
	return n + len;
}

struct events {
	struct ws_event ev[16];
	char data[16][256];
	int n;
};

/* Feeds buf in chunks of `chunk` bytes, collecting events (data copied). */
static void feed(struct ws_parser *p, uint8_t *buf, size_t len, size_t chunk, struct events *out)
{
	size_t off = 0;
	while (off < len) {
		size_t n = len - off < chunk ? len - off : chunk;
		char *c = (char *)buf + off;
		while (n) {
			struct ws_event ev;
			size_t used = ws_parse(p, c, n, &ev);
			c += used;
			n -= used;
			off += used;
			if (ev.type != WS_EV_NONE) {
				assert_true(out->n < 16);
				out->ev[out->n] = ev;
				size_t cl = ev.len < 255 ? ev.len : 255;
				memcpy(out->data[out->n], ev.data ? ev.data : "", cl);
				out->data[out->n][cl] = '\0';
				out->n++;
			} else {
				assert_int_equal(n, 0);
			}
		}
	}
}

/* One frame fed whole and byte by byte must give the same single event. */
static void expect_one_as(enum ws_role role, uint8_t *buf, size_t len, enum ws_event_type type,
                          int code, const char *data)
{
	for (size_t chunk = 1; chunk <= len; chunk = chunk == 1 ? len : len + 1) {
		uint8_t copy[4096];
		assert_true(len <= sizeof copy);
		memcpy(copy, buf, len);
		struct ws_parser p;
		ws_parser_init(&p, MAXMSG, role);
		struct events e = {0};
		feed(&p, copy, len, chunk, &e);
		assert_int_equal(e.n, 1);
		assert_int_equal(e.ev[0].type, type);
		if (type == WS_EV_ERROR || type == WS_EV_CLOSE)
			assert_int_equal(e.ev[0].code, code);
		if (data)
			assert_string_equal(e.data[0], data);
		ws_parser_free(&p);
	}
}

static void expect_one(uint8_t *buf, size_t len, enum ws_event_type type, int code,
                       const char *data)
{
	expect_one_as(WS_ROLE_SERVER, buf, len, type, code, data);
}

/* --- handshake ---------------------------------------------------------------- */

static void test_accept_rfc_example(void **state)
{
	char out[29];
	/* RFC 6455 §1.3. */
	ws_accept("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	assert_true(ws_key_valid("dGhlIHNhbXBsZSBub25jZQ==", 24));
	assert_false(ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=", 23));
	assert_false(ws_key_valid("dGhlIHNhbXBsZSBub25j!Q==", 24));
	assert_false(ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=x", 24));
}

/* The SHA-1 against libcrypto's over every length around the 55/56/64/120
 * byte padding boundaries (key + 36-byte GUID). */
static void test_accept_matches_openssl(void **state)
{
	char key[129];
	for (size_t len = 0; len <= 92; len++) {
		for (size_t i = 0; i < len; i++)
			key[i] = (char)('A' + (i * 7 + len) % 26);
		char cat[256];
		memcpy(cat, key, len);
		memcpy(cat + len, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11", 36);
		unsigned char md[EVP_MAX_MD_SIZE];
		unsigned int mdlen = 0;
		EVP_Digest(cat, len + 36, md, &mdlen, EVP_sha1(), NULL);
		char want[64];
		EVP_EncodeBlock((unsigned char *)want, md, (int)mdlen);
		char got[29];
		ws_accept(key, len, got);
		if (strcmp(got, want) != 0)
			fail_msg("key length %zu: got %s, want %s", len, got, want);
	}
}

static void test_request_upgrade(void **state)
{
	const char *r = "GET /any/path?x=1 HTTP/1.1\r\nHost: h\r\nupgrade: WebSocket\r\n"
	                "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key:  "
	                "dGhlIHNhbXBsZSBub25jZQ== \r\n"
	                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat-v1 , other\r\n"
	                "Sec-WebSocket-Protocol: third\r\n\r\n\x81\x80";
	struct ws_request q;
	assert_int_equal(ws_parse_request(r, strlen(r), &q), WS_HEAD_DONE);
	assert_int_equal(q.head_len, strlen(r) - 2);
	assert_true(q.upgrade);
	assert_true(q.upgrade_websocket);
	assert_int_equal(q.version, 13);
	assert_int_equal(q.key_len, 24);
	assert_memory_equal(q.key, "dGhlIHNhbXBsZSBub25jZQ==", 24);
	assert_int_equal(q.protocol_len, 7);
	assert_memory_equal(q.protocol, "chat-v1", 7);
	assert_int_equal(q.path_len, 13);
	assert_memory_equal(q.path, "/any/path?x=1", 13);
	assert_memory_equal(q.method, "GET", 3);
	/* Every prefix is incomplete. */
	for (size_t i = 0; i < strlen(r) - 3; i++)
		assert_int_equal(ws_parse_request(r, i, &q), WS_HEAD_INCOMPLETE);
}

static void test_request_plain_and_bad(void **state)
{
	struct ws_request q;
	const char *plain = "GET /healthz HTTP/1.0\nHost: x\n\n";
	assert_int_equal(ws_parse_request(plain, strlen(plain), &q), WS_HEAD_DONE);
	assert_false(q.upgrade);
	assert_int_equal(q.version, -1);
	assert_null(q.protocol);
	/* Upgrade without Connection: upgrade is not an upgrade (Node). */
	const char *half = "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: close\r\n\r\n";
	assert_int_equal(ws_parse_request(half, strlen(half), &q), WS_HEAD_DONE);
	assert_false(q.upgrade);
	assert_false(q.upgrade_websocket);
	/* Upgrade to something else. */
	const char *h2 = "GET / HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n";
	assert_int_equal(ws_parse_request(h2, strlen(h2), &q), WS_HEAD_DONE);
	assert_true(q.upgrade);
	assert_false(q.upgrade_websocket);
	static const char *bad[] = {
	        "GET /\r\n\r\n",
	        "GET / HTTP/2.0\r\n\r\n",
	        " / HTTP/1.1\r\n\r\n",
	        "GET / HTTP/1.1\r\nno colon here\r\n\r\n",
	        "\x16\x03\x01\x02\x01\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(ws_parse_request(bad[i], strlen(bad[i]), &q), WS_HEAD_BAD);
	const char *ver = "GET / HTTP/1.1\r\nSec-WebSocket-Version: 13a\r\n\r\n";
	assert_int_equal(ws_parse_request(ver, strlen(ver), &q), WS_HEAD_DONE);
	assert_int_equal(q.version, -1);
}

static void test_frame_header(void **state)
{
	uint8_t h[WS_HDR_MAX];
	assert_int_equal(ws_frame_header(h, WS_OP_TEXT, 0), 2);
	assert_memory_equal(h, "\x81\x00", 2);
	assert_int_equal(ws_frame_header(h, WS_OP_TEXT, 125), 2);
	assert_int_equal(h[1], 125);
	assert_int_equal(ws_frame_header(h, WS_OP_PING, 126), 4);
	assert_memory_equal(h, "\x89\x7e\x00\x7e", 4);
	assert_int_equal(ws_frame_header(h, WS_OP_TEXT, 65535), 4);
	assert_memory_equal(h, "\x81\x7e\xff\xff", 4);
	assert_int_equal(ws_frame_header(h, WS_OP_TEXT, 65536), 10);
	assert_memory_equal(h, "\x81\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10);
}

/* --- frames ---------------------------------------------------------------------- */

static void test_messages(void **state)
{
	uint8_t b[4096];
	size_t n = frame(b, true, 0, WS_OP_TEXT, true, "{\"type\":\"chat\"}", 15);
	expect_one(b, n, WS_EV_MESSAGE, 0, "{\"type\":\"chat\"}");
	n = frame(b, true, 0, WS_OP_BINARY, true, "\xff\x00", 2);
	expect_one(b, n, WS_EV_MESSAGE, 0, NULL);
	n = frame(b, true, 0, WS_OP_TEXT, true, "", 0);
	expect_one(b, n, WS_EV_MESSAGE, 0, "");
	char big[300];
	memset(big, 'q', sizeof big - 1);
	big[299] = '\0';
	n = frame(b, true, 0, WS_OP_TEXT, true, big, 299);
	expect_one(b, n, WS_EV_MESSAGE, 0, NULL);
	/* Control frames: payload echoed, empty allowed. */
	n = frame(b, true, 0, WS_OP_PING, true, "hello", 5);
	expect_one(b, n, WS_EV_PING, 0, "hello");
	n = frame(b, true, 0, WS_OP_PONG, true, "", 0);
	expect_one(b, n, WS_EV_PONG, 0, "");
}

/* Fragments with a ping between them, a code point split across them, and
 * two messages back to back in one buffer. */
static void test_fragments(void **state)
{
	uint8_t b[4096];
	size_t n = 0;
	n += frame(b + n, false, 0, WS_OP_TEXT, true, "ab\xe2\x82", 4);
	n += frame(b + n, true, 0, WS_OP_PING, true, "mid", 3);
	n += frame(b + n, false, 0, WS_OP_CONT, true, "\xac", 1);
	n += frame(b + n, true, 0, WS_OP_CONT, true, "cd", 2);
	n += frame(b + n, true, 0, WS_OP_TEXT, true, "next", 4);
	for (size_t chunk = 1; chunk <= n; chunk++) {
		uint8_t copy[4096];
		memcpy(copy, b, n);
		struct ws_parser p;
		ws_parser_init(&p, MAXMSG, WS_ROLE_SERVER);
		struct events e = {0};
		feed(&p, copy, n, chunk, &e);
		assert_int_equal(e.n, 3);
		assert_int_equal(e.ev[0].type, WS_EV_PING);
		assert_string_equal(e.data[0], "mid");
		assert_int_equal(e.ev[1].type, WS_EV_MESSAGE);
		assert_string_equal(e.data[1], "ab\xe2\x82\xac"
		                               "cd");
		assert_int_equal(e.ev[2].type, WS_EV_MESSAGE);
		assert_string_equal(e.data[2], "next");
		ws_parser_free(&p);
	}
}

/* §1 item 11: each violation closes 1002. */
static void test_protocol_violations(void **state)
{
	uint8_t b[4096], ping[126];
	memset(ping, 'p', sizeof ping);
	size_t n;
	n = frame(b, true, 0, WS_OP_TEXT, false, "{}", 2); /* unmasked */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	n = frame(b, true, 4, WS_OP_TEXT, true, "{}", 2); /* RSV1 */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	n = frame(b, true, 0, 0x3, true, "{}", 2); /* reserved data opcode */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	n = frame(b, true, 0, 0xB, true, "", 0); /* reserved control opcode */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	n = frame(b, true, 0, WS_OP_PING, true, ping, 126); /* control > 125 */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	n = frame(b, false, 0, WS_OP_PING, true, "x", 1); /* fragmented control */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	n = frame(b, true, 0, WS_OP_CONT, true, "x", 1); /* continuation alone */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	/* A new message inside a fragmented one. */
	n = frame(b, false, 0, WS_OP_TEXT, true, "a", 1);
	n += frame(b + n, true, 0, WS_OP_TEXT, true, "b", 1);
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	/* A 64-bit length with the top bit set. */
	uint8_t huge[14] = {0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
	expect_one(huge, sizeof huge, WS_EV_ERROR, 1002, NULL);
}

/* §1 items 8 and 9: UTF-8 per message (1007), size after reassembly (1009). */
static void test_utf8_and_size(void **state)
{
	uint8_t b[4096];
	size_t n = frame(b, true, 0, WS_OP_TEXT, true, "\xc0\xaf", 2);
	expect_one(b, n, WS_EV_ERROR, 1007, NULL);
	n = frame(b, false, 0, WS_OP_TEXT, true, "\xe2\x82", 2);
	n += frame(b + n, true, 0, WS_OP_CONT, true, "(", 1);
	expect_one(b, n, WS_EV_ERROR, 1007, NULL);
	/* Binary is not checked (the server repairs it like Node). */
	n = frame(b, true, 0, WS_OP_BINARY, true, "\xc0\xaf", 2);
	expect_one(b, n, WS_EV_MESSAGE, 0, NULL);

	/* The limit: exactly max passes, one more fails at the header. */
	struct ws_parser p;
	ws_parser_init(&p, 100, WS_ROLE_SERVER);
	uint8_t big[256];
	char body[101];
	memset(body, 'x', sizeof body);
	n = frame(big, true, 0, WS_OP_TEXT, true, body, 100);
	struct events e = {0};
	feed(&p, big, n, 7, &e);
	assert_int_equal(e.n, 1);
	assert_int_equal(e.ev[0].type, WS_EV_MESSAGE);
	assert_int_equal(e.ev[0].len, 100);
	n = frame(big, true, 0, WS_OP_TEXT, true, body, 101);
	struct ws_event ev;
	size_t used = ws_parse(&p, (char *)big, 6, &ev); /* header only */
	assert_int_equal(ev.type, WS_EV_ERROR);
	assert_int_equal(ev.code, 1009);
	assert_int_equal(used, 6);
	ws_parser_free(&p);
	/* Across fragments: 60 + 41 > 100. */
	ws_parser_init(&p, 100, WS_ROLE_SERVER);
	n = frame(big, false, 0, WS_OP_TEXT, true, body, 60);
	n += frame(big + n, true, 0, WS_OP_CONT, true, body, 41);
	memset(&e, 0, sizeof e);
	feed(&p, big, n, n, &e);
	assert_int_equal(e.n, 1);
	assert_int_equal(e.ev[0].code, 1009);
	ws_parser_free(&p);
}

static void test_close_frames(void **state)
{
	uint8_t b[256];
	size_t n = frame(b, true, 0, WS_OP_CLOSE, true, "", 0);
	expect_one(b, n, WS_EV_CLOSE, WS_CLOSE_NO_STATUS, "");
	n = frame(b, true, 0, WS_OP_CLOSE, true,
	          "\x03\xe8"
	          "bye",
	          5);
	expect_one(b, n, WS_EV_CLOSE, 1000, "bye");
	n = frame(b, true, 0, WS_OP_CLOSE, true, "\x0f\xa1", 2); /* 4001 */
	expect_one(b, n, WS_EV_CLOSE, 4001, "");
	n = frame(b, true, 0, WS_OP_CLOSE, true, "\x03", 1); /* 1 byte */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	n = frame(b, true, 0, WS_OP_CLOSE, true, "\x03\xed", 2); /* 1005 */
	expect_one(b, n, WS_EV_ERROR, 1002, NULL);
	n = frame(b, true, 0, WS_OP_CLOSE, true, "\x03\xe8\xff", 3); /* bad reason */
	expect_one(b, n, WS_EV_ERROR, 1007, NULL);
	/* A faulty close frame says the peer is closing anyway. */
	struct ws_parser p;
	ws_parser_init(&p, MAXMSG, WS_ROLE_SERVER);
	struct ws_event ev;
	ws_parse(&p, (char *)b, n, &ev);
	assert_true(ev.peer_closed);
	ws_parser_free(&p);
	assert_true(ws_close_code_valid(1000));
	assert_true(ws_close_code_valid(4999));
	assert_false(ws_close_code_valid(1004));
	assert_false(ws_close_code_valid(1006));
	assert_false(ws_close_code_valid(2999));
	assert_false(ws_close_code_valid(5000));
}

/* After an error the parser still finds the peer's close, so the closing
 * handshake completes; nothing else is reported. */
static void test_draining_after_error(void **state)
{
	uint8_t b[4096];
	size_t n = 0;
	n += frame(b + n, true, 4, WS_OP_TEXT, true, "rsv", 3);       /* 1002 */
	n += frame(b + n, true, 0, WS_OP_TEXT, false, "unmasked", 8); /* walked */
	n += frame(b + n, true, 0, WS_OP_PING, true, "p", 1);         /* dropped */
	n += frame(b + n, true, 0, WS_OP_CLOSE, true, "\x03\xea", 2); /* 1002 */
	for (size_t chunk = 1; chunk <= n; chunk++) {
		uint8_t copy[4096];
		memcpy(copy, b, n);
		struct ws_parser p;
		ws_parser_init(&p, MAXMSG, WS_ROLE_SERVER);
		struct events e = {0};
		feed(&p, copy, n, chunk, &e);
		assert_int_equal(e.n, 2);
		assert_int_equal(e.ev[0].type, WS_EV_ERROR);
		assert_int_equal(e.ev[0].code, 1002);
		assert_int_equal(e.ev[1].type, WS_EV_CLOSE);
		assert_int_equal(e.ev[1].code, 1002);
		ws_parser_free(&p);
	}
	/* After a 1009 the rest of the oversized frame is skipped. */
	struct ws_parser p;
	ws_parser_init(&p, 10, WS_ROLE_SERVER);
	n = frame(b, true, 0, WS_OP_TEXT, true, "0123456789ABCDEF", 16);
	n += frame(b + n, true, 0, WS_OP_CLOSE, true, "", 0);
	struct events e = {0};
	feed(&p, b, n, 3, &e);
	assert_int_equal(e.n, 2);
	assert_int_equal(e.ev[0].code, 1009);
	assert_int_equal(e.ev[1].type, WS_EV_CLOSE);
	ws_parser_free(&p);
}

/* --- the client role ------------------------------------------------------------ */

/* RFC 6455 §5.1: a client closes with 1002 on a masked server frame; the
 * unmasked ones are the normal case, data and control alike. */
static void test_client_role_unmasked_only(void **state)
{
	uint8_t buf[256];
	size_t n = frame(buf, true, 0, WS_OP_TEXT, false, "hello", 5);
	expect_one_as(WS_ROLE_CLIENT, buf, n, WS_EV_MESSAGE, 0, "hello");
	n = frame(buf, true, 0, WS_OP_PING, false, "hb", 2);
	expect_one_as(WS_ROLE_CLIENT, buf, n, WS_EV_PING, 0, "hb");
	n = frame(buf, true, 0, WS_OP_PONG, false, "", 0);
	expect_one_as(WS_ROLE_CLIENT, buf, n, WS_EV_PONG, 0, "");
	/* The room's 4002 close reaches the client with its code and reason. */
	n = frame(buf, true, 0, WS_OP_CLOSE, false, "\x0f\xa2replaced", 10);
	expect_one_as(WS_ROLE_CLIENT, buf, n, WS_EV_CLOSE, 4002, "replaced");

	n = frame(buf, true, 0, WS_OP_TEXT, true, "hello", 5);
	expect_one_as(WS_ROLE_CLIENT, buf, n, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL);
	n = frame(buf, true, 0, WS_OP_PING, true, "", 0);
	expect_one_as(WS_ROLE_CLIENT, buf, n, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL);
	/* The server role is unchanged: an unmasked client frame is 1002. */
	n = frame(buf, true, 0, WS_OP_TEXT, false, "hello", 5);
	expect_one_as(WS_ROLE_SERVER, buf, n, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL);

	/* The size limit holds in the client role too. */
	struct ws_parser p;
	ws_parser_init(&p, 4, WS_ROLE_CLIENT);
	n = frame(buf, true, 0, WS_OP_TEXT, false, "hello", 5);
	struct ws_event ev;
	ws_parse(&p, (char *)buf, n, &ev);
	assert_int_equal(ev.type, WS_EV_ERROR);
	assert_int_equal(ev.code, WS_CLOSE_TOO_BIG);
	ws_parser_free(&p);
}

/* Client frames: masked (the bit and the key in the header, payload XORed)
 * and the server parser decodes them to the original bytes, for each of
 * the three length encodings. */
static void test_client_frames_masked(void **state)
{
	static const size_t lens[] = {0, 5, 125, 126, 300, 65535, 65536, 70000};
	for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
		size_t len = lens[t];
		char *plain = malloc(len + 1);
		for (size_t i = 0; i < len; i++)
			plain[i] = (char)('a' + i % 26);
		uint8_t *wire = malloc(WS_HDR_MASKED_MAX + len);
		const uint8_t mask[4] = {0x11, 0x22, 0x33, 0x44};
		size_t h = ws_frame_header_masked(wire, WS_OP_TEXT, len, mask);
		assert_int_equal(h, len < 126 ? 6 : len <= 0xFFFF ? 8 : 14);
		assert_int_equal(wire[0], 0x81);
		assert_true(wire[1] & 0x80);
		assert_memory_equal(wire + h - 4, mask, 4);
		memcpy(wire + h, plain, len);
		ws_mask((char *)wire + h, len, mask, 0);
		if (len)
			assert_int_not_equal(wire[h], (uint8_t)plain[0]);

		/* A client parser refuses our own frame: it is masked. */
		struct ws_parser p;
		struct ws_event ev;
		ws_parser_init(&p, MAXMSG, WS_ROLE_CLIENT);
		ws_parse(&p, (char *)wire, h + len, &ev);
		assert_int_equal(ev.type, WS_EV_ERROR);
		assert_int_equal(ev.code, WS_CLOSE_PROTOCOL);
		ws_parser_free(&p);

		ws_parser_init(&p, MAXMSG, WS_ROLE_SERVER);
		size_t used = ws_parse(&p, (char *)wire, h + len, &ev);
		assert_int_equal(used, h + len);
		assert_int_equal(ev.type, WS_EV_MESSAGE);
		assert_int_equal(ev.len, len);
		if (len)
			assert_memory_equal(ev.data, plain, len);
		ws_parser_free(&p);
		free(wire);
		free(plain);
	}
	/* A masked close frame with our reason decodes to code and reason. */
	uint8_t wire[64];
	const uint8_t mask[4] = {0xde, 0xad, 0xbe, 0xef};
	char payload[] = "\x03\xe8"
	                 "Client disconnecting";
	size_t pl = sizeof payload - 1;
	size_t h = ws_frame_header_masked(wire, WS_OP_CLOSE, pl, mask);
	memcpy(wire + h, payload, pl);
	ws_mask((char *)wire + h, pl, mask, 0);
	expect_one_as(WS_ROLE_SERVER, wire, h + pl, WS_EV_CLOSE, 1000, "Client disconnecting");
}

static void test_client_key(void **state)
{
	char a[25], b[25];
	ws_client_key(a);
	ws_client_key(b);
	assert_int_equal(strlen(a), 24);
	assert_true(ws_key_valid(a, 24));
	assert_true(ws_key_valid(b, 24));
	assert_string_not_equal(a, b);
}

/* The server's 101: accepted only with the right Sec-WebSocket-Accept and
 * the upgrade headers; anything else is refused with a sentence. */
static void test_client_response(void **state)
{
	const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
	const char *ok = "HTTP/1.1 101 Switching Protocols\r\n"
	                 "Upgrade: websocket\r\n"
	                 "Connection: Upgrade\r\n"
	                 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
	                 "\r\n"
	                 "\x81\x02hi";
	size_t head = 0;
	char why[200];
	size_t oklen = strlen(ok);
	assert_int_equal(ws_parse_response(ok, oklen, key, &head, why, sizeof why), WS_HEAD_DONE);
	assert_int_equal(head, oklen - 4); /* the frame after the head is left */
	assert_int_equal(ws_parse_response(ok, 40, key, &head, why, sizeof why),
	                 WS_HEAD_INCOMPLETE);

	/* The same answer to another key: the accept value is wrong. */
	assert_int_equal(
	        ws_parse_response(ok, oklen, "AAAAAAAAAAAAAAAAAAAAAA==", &head, why, sizeof why),
	        WS_HEAD_BAD);
	assert_non_null(strstr(why, "Sec-WebSocket-Accept does not match"));

	static const struct {
		const char *resp, *why;
	} bad[] = {
	        {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "refused the WebSocket upgrade"},
	        {"HTTP/1.1 426 Upgrade Required\r\n\r\n", "426"},
	        {"SSH-2.0-OpenSSH\r\n\r\n", "did not answer HTTP"},
	        {"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
	         "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
	         "Upgrade: websocket"},
	        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	         "Connection: Upgrade\r\n\r\n",
	         "no Sec-WebSocket-Accept"},
	        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	         "Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
	         "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
	         "not offered"},
	        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	         "Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=x\r\n"
	         "\r\n",
	         "does not match"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why[0] = '\0';
		if (ws_parse_response(bad[i].resp, strlen(bad[i].resp), key, &head, why,
		                      sizeof why) != WS_HEAD_BAD)
			fail_msg("case %zu accepted: %s", i, bad[i].resp);
		if (!strstr(why, bad[i].why))
			fail_msg("case %zu: '%s' does not say '%s'", i, why, bad[i].why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_accept_rfc_example),
	        cmocka_unit_test(test_accept_matches_openssl),
	        cmocka_unit_test(test_request_upgrade),
	        cmocka_unit_test(test_request_plain_and_bad),
	        cmocka_unit_test(test_frame_header),
	        cmocka_unit_test(test_messages),
	        cmocka_unit_test(test_fragments),
	        cmocka_unit_test(test_protocol_violations),
	        cmocka_unit_test(test_utf8_and_size),
	        cmocka_unit_test(test_close_frames),
	        cmocka_unit_test(test_draining_after_error),
	        cmocka_unit_test(test_client_role_unmasked_only),
	        cmocka_unit_test(test_client_frames_masked),
	        cmocka_unit_test(test_client_key),
	        cmocka_unit_test(test_client_response),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
