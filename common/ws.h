/*
 * common/ws — RFC 6455 as agent-space and its clients need it: the opening
 * handshake and an incremental frame parser, as pure functions, for both
 * roles. The server (space/server*.c) parses requests and masked client
 * frames; the client (adapters/space/client.c) builds its request, checks
 * the 101 answer and parses unmasked server frames, masking its own.
 *
 * Why not libwebsockets: the Debian lws 4.1.6 cannot express three rules of
 * the wire contract (space-protocol.md): it accepts unmasked client frames
 * and cuts oversized control frames without a 1002 close (§1 item 11), it
 * refuses a sub-protocol it does not know instead of accepting the first
 * offered one (§1 item 4), and it drops empty pongs, so the heartbeat could
 * not ping with an empty payload (§1 item 10, §3.14). It also writes one
 * frame per writeable callback and re-arms the poll set each time, which
 * was the largest cost of a 1000-member room, and it maps OpenSSL even
 * without TLS (~2 MB of resident memory in the client, half its budget).
 * Plain ws:// only; this file and the two transports are the whole of it.
 *
 * Nothing here does I/O: the transports feed the bytes they read and write
 * what these functions build; the unit tests and the fuzzer feed anything.
 */
#ifndef GA_COMMON_WS_H
#define GA_COMMON_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest HTTP request head accepted before the upgrade, bytes. */
#define WS_HEAD_MAX 8192
/* Longest unmasked (server) frame header: 0x81, 127, 8 length bytes. */
#define WS_HDR_MAX 10
/* Longest masked (client) frame header: the above and a 4-byte mask. */
#define WS_HDR_MASKED_MAX 14
#define WS_CONTROL_MAX    125

/* Close codes the transport itself uses (§3.21). */
#define WS_CLOSE_NORMAL       1000
#define WS_CLOSE_PROTOCOL     1002
#define WS_CLOSE_NO_STATUS    1005 /* never sent: "the peer gave none" */
#define WS_CLOSE_INVALID_DATA 1007
#define WS_CLOSE_TOO_BIG      1009

/* --- opening handshake ---------------------------------------------------- */

enum ws_head_result {
	WS_HEAD_INCOMPLETE, /* no blank line yet: read more */
	WS_HEAD_DONE,
	WS_HEAD_BAD, /* not an HTTP/1.x request */
};

/* What the server needs from a request head. Pointers point into the
 * caller's buffer and are not NUL-terminated. */
struct ws_request {
	size_t head_len; /* bytes up to and including the blank line */
	const char *method, *path;
	size_t method_len, path_len;
	/* Node's http server treats a request as an upgrade when it has an
	 * Upgrade header and "upgrade" among the Connection tokens; ws then
	 * requires Upgrade: websocket. */
	bool upgrade;           /* Upgrade header and Connection: upgrade */
	bool upgrade_websocket; /* ... and the Upgrade value is "websocket" */
	const char *key;        /* Sec-WebSocket-Key, trimmed */
	size_t key_len;
	int version; /* Sec-WebSocket-Version, -1 when absent or not a number */
	/* First value of Sec-WebSocket-Protocol (trimmed), or NULL. */
	const char *protocol;
	size_t protocol_len;
};

/* Parses buf[0..len) as far as a complete request head. */
enum ws_head_result ws_parse_request(const char *buf, size_t len, struct ws_request *req);

/* RFC 6455 §4.2.1 item 4: 16 random bytes, base64 (24 characters). */
bool ws_key_valid(const char *key, size_t len);

/* Sec-WebSocket-Accept for key: base64(SHA-1(key + GUID)), 28 characters
 * and a NUL. */
void ws_accept(const char *key, size_t len, char out[29]);

/* The client's side of the handshake. */

/* A fresh Sec-WebSocket-Key: 16 random bytes (random_bytes), base64, 24
 * characters and a NUL. */
void ws_client_key(char out[25]);

/* Parses buf[0..len) as the server's answer to an upgrade request sent with
 * key. DONE: a 101 with Upgrade: websocket, Connection: upgrade and the
 * right Sec-WebSocket-Accept, no extension or sub-protocol (none was
 * offered); *head_len is the head's length, and any bytes after it are
 * already frames. BAD: anything else; why holds a sentence naming what was
 * wrong (the status line, the header). */
enum ws_head_result ws_parse_response(const char *buf, size_t len, const char *key,
                                      size_t *head_len, char *why, size_t why_len);

/* --- frames ----------------------------------------------------------------- */

/* Writes the header of an unmasked, unfragmented frame carrying len payload
 * bytes with opcode (FIN set) and returns its length (2, 4 or 10). */
size_t ws_frame_header(uint8_t out[WS_HDR_MAX], unsigned opcode, uint64_t len);

/* The same for a masked frame (the client role, RFC 6455 §5.3): appends
 * mask after the length and returns 6, 8 or 14. The caller XORs the payload
 * with ws_mask(payload, len, mask, 0). */
size_t ws_frame_header_masked(uint8_t out[WS_HDR_MASKED_MAX], unsigned opcode, uint64_t len,
                              const uint8_t mask[4]);

/* XORs d[0..n) with mask, starting at payload offset pos (its own inverse). */
void ws_mask(char *d, size_t n, const uint8_t mask[4], uint64_t pos);

#define WS_OP_CONT   0x0
#define WS_OP_TEXT   0x1
#define WS_OP_BINARY 0x2
#define WS_OP_CLOSE  0x8
#define WS_OP_PING   0x9
#define WS_OP_PONG   0xA

enum ws_event_type {
	WS_EV_NONE,    /* the input ended inside a frame */
	WS_EV_MESSAGE, /* a complete data message */
	WS_EV_PING,
	WS_EV_PONG,
	WS_EV_CLOSE, /* the peer's close frame */
	WS_EV_ERROR, /* close with .code; the parser is finished */
};

struct ws_event {
	enum ws_event_type type;
	/* MESSAGE: the payload (unmasked); PING/PONG: the payload; CLOSE: the
	 * reason. Valid until the next call to ws_parse. */
	const char *data;
	size_t len;
	bool binary; /* MESSAGE: opcode was binary */
	/* CLOSE: the peer's code, or WS_CLOSE_NO_STATUS when the frame
	 * had no payload. ERROR: the code to close with (1002, 1007, 1009). */
	int code;
	/* ERROR: the faulty frame was the peer's own close frame, so no
	 * other close will come from it. */
	bool peer_closed;
};

/* Which side of the connection parses: a server reads client frames, which
 * must be masked; a client reads server frames, which must not be (RFC 6455
 * §5.1: either peer closes with 1002 on the wrong kind). */
enum ws_role {
	WS_ROLE_SERVER,
	WS_ROLE_CLIENT,
};

/* Frames from the peer: masked per the role, RSV clear, known opcodes, control frames
 * whole and at most 125 bytes, fragments in order, text valid UTF-8 per
 * message, messages at most max_message bytes after reassembly. */
struct ws_parser {
	size_t max_message;
	enum ws_role role;
	/* header of the current frame */
	uint8_t hdr[14];
	uint8_t hdr_have;
	bool in_frame; /* header complete; payload bytes remain */
	bool fin;
	uint8_t opcode;
	uint8_t mask[4];
	uint64_t remaining; /* payload bytes of this frame still to come */
	uint64_t frame_pos; /* payload bytes of this frame seen (mask phase) */
	/* fragmented (or split across reads) data message */
	bool in_message; /* a data frame without FIN was seen */
	bool msg_binary;
	char *msg;
	size_t msg_len, msg_cap;
	/* control frame payload */
	uint8_t ctl[WS_CONTROL_MAX];
	uint8_t ctl_len;
	/* After an error: frames are only walked (no checks, data dropped) to
	 * find the peer's close, so the closing handshake still completes. */
	bool draining;
};

void ws_parser_init(struct ws_parser *p, size_t max_message, enum ws_role role);
/* Releases the reassembly buffer. */
void ws_parser_free(struct ws_parser *p);

/* Consumes bytes from buf (unmasking payload in place, which is why buf is
 * writable) until one event completes or the input ends; returns the bytes
 * consumed. Call again with the rest while it returns events. After an
 * ERROR event the parser only reports the peer's CLOSE (best effort: the
 * stream came from a peer that broke the protocol). */
size_t ws_parse(struct ws_parser *p, char *buf, size_t len, struct ws_event *ev);

/* True for the close codes a peer may send (RFC 6455 §7.4). */
bool ws_close_code_valid(int code);

#endif
