/*
 * Fuzz target for common/ws: the request- and response-head parsers and
 * the frame parser in both roles (all of an agent-space's input before
 * JSON, and all of the client's).
 *
 * The first byte picks the read size (1..256 bytes, as TCP may split
 * anything anywhere) and whether the input is first offered as an HTTP
 * head (request and response); the rest is fed to the frame parser, in
 * the server role and then in the client role, in reads of that size. The
 * parser must never read or write outside what it was given, must consume
 * or report at every call, and every MESSAGE it reports must respect the
 * size limit and, for text, be valid UTF-8.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/ws.h"

#define FUZZ_MAX_MESSAGE 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void frames(const uint8_t *data, size_t size, size_t chunk, enum ws_role role);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t chunk = (size_t)(data[0] & 0x7F) * 2 + 1;
	bool head = data[0] & 0x80;
	data++;
	size--;
	if (head) {
		struct ws_request req;
		if (ws_parse_request((const char *)data, size, &req) == WS_HEAD_DONE) {
			if (req.head_len > size || (req.key && req.key_len > size) ||
			    (req.protocol && req.protocol_len > size))
				abort();
			if (req.key && ws_key_valid(req.key, req.key_len)) {
				char acc[29];
				ws_accept(req.key, req.key_len, acc);
				if (strlen(acc) != 28)
					abort();
			}
		}
		size_t head_len = 0;
		char why[200];
		if (ws_parse_response((const char *)data, size, "dGhlIHNhbXBsZSBub25jZQ==",
		                      &head_len, why, sizeof why) != WS_HEAD_INCOMPLETE &&
		    (head_len > size || strlen(why) >= sizeof why))
			abort();
	}
	frames(data, size, chunk, WS_ROLE_SERVER);
	frames(data, size, chunk, WS_ROLE_CLIENT);
	return 0;
}

static void frames(const uint8_t *data, size_t size, size_t chunk, enum ws_role role)
{
	/* A private copy: the parser unmasks in place. */
	char *buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	struct ws_parser p;
	ws_parser_init(&p, FUZZ_MAX_MESSAGE, role);
	size_t off = 0;
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		char *c = buf + off;
		while (n) {
			struct ws_event ev;
			size_t used = ws_parse(&p, c, n, &ev);
			if (used > n)
				abort();
			if (ev.type == WS_EV_NONE && used != n)
				abort(); /* no event: everything must have been taken */
			if (ev.type == WS_EV_MESSAGE) {
				if (ev.len > FUZZ_MAX_MESSAGE)
					abort();
				if (!ev.binary && !utf8_valid(ev.data, ev.len))
					abort();
			}
			if ((ev.type == WS_EV_PING || ev.type == WS_EV_PONG ||
			     ev.type == WS_EV_CLOSE) &&
			    ev.len > WS_CONTROL_MAX)
				abort();
			c += used;
			n -= used;
			off += used;
		}
	}
	ws_parser_free(&p);
	free(buf);
}
