/*
 * wsclient — a small, blocking, deliberately permissive RFC 6455 client for
 * the agent-space conformance tests.
 *
 * A library client refuses to do most of what a hostile peer does, so this
 * one speaks the wire format by hand over a plain TCP socket: it can send
 * masked text/binary/control frames with any opcode, RSV bits, mask flag and
 * fragmentation, invalid UTF-8, frames larger than any limit, half a frame
 * followed by a close, or simply never read. On the receiving side it
 * reassembles data messages, answers pings (unless told not to) and reports
 * the close code and reason the server sent.
 *
 * Every call that waits takes a timeout in milliseconds and uses poll(); no
 * call blocks forever. Only libc and OpenSSL (SHA-1, base64 for the
 * handshake) are used, so the tests do not depend on the code under test.
 *
 * Ownership: ws_connect() returns a client that the caller frees with
 * ws_free() (NULL accepted). Messages returned by ws_recv() are owned by the
 * caller (free(msg.data)).
 */
#ifndef GA_TESTS_INTEGRATION_SPACE_WSCLIENT_H
#define GA_TESTS_INTEGRATION_SPACE_WSCLIENT_H

#include <stddef.h>
#include <stdint.h>

enum ws_opcode {
	WS_OP_CONT = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xA,
};

enum ws_recv_result {
	WS_RECV_MSG = 0,     /* a complete data message was returned */
	WS_RECV_TIMEOUT = 1, /* nothing complete within the timeout */
	WS_RECV_CLOSED = 2,  /* the server sent a close frame (code in c->close_code) */
	WS_RECV_EOF = 3,     /* the TCP connection ended without a close frame */
};

struct ws_msg {
	int opcode; /* WS_OP_TEXT or WS_OP_BINARY */
	char *data; /* NUL-terminated copy of the payload; caller frees */
	size_t len;
};

struct ws_client {
	int fd;
	/* Raw bytes read from the socket and not yet parsed into frames. */
	uint8_t *rbuf;
	size_t rpos, rlen, rcap;
	/* Reassembly of a fragmented data message. */
	uint8_t *frag;
	size_t frag_len, frag_cap;
	int frag_opcode;
	/* Set once a close frame arrived; close_code 1005 when it had no code. */
	int got_close;
	int close_code;
	char close_reason[128];
	/* TCP end of stream (or reset) seen. */
	int eof;
	/* When nonzero (default), pings are answered with a pong. */
	int auto_pong;
	/* Counts of control frames seen. */
	int pings_received;
	int pongs_received;
	size_t last_ping_len;
	uint8_t last_pong[126];
	size_t last_pong_len;
	/* HTTP status of the handshake response and the raw response head. */
	int http_status;
	char http_head[2048];
	/* Set when a send failed (EPIPE, ECONNRESET ...). */
	int send_failed;
	/* Free-form name used in test failure messages. */
	char label[64];
};

/* Opens a TCP connection to host:port (IPv4 literal). Returns the fd or -1.
 * rcvbuf > 0 sets SO_RCVBUF before connecting (small values disable
 * autotuning, which the slow-reader tests rely on). */
int ws_tcp_connect(const char *host, int port, int rcvbuf, int timeout_ms);

/* Connects and performs the opening handshake on `path` ("/" when NULL).
 * `extra_headers` (may be NULL) is inserted verbatim, each line ending in
 * "\r\n". Returns a client on a 101 response. On any other response or
 * failure returns NULL; when `status_out` is non-NULL it receives the HTTP
 * status (0 if none was read). */
struct ws_client *ws_connect_ex(const char *host, int port, const char *path,
                                const char *extra_headers, int rcvbuf, int timeout_ms,
                                int *status_out);
struct ws_client *ws_connect(const char *host, int port, int timeout_ms);

/* Closes the socket (abruptly: no close frame) and frees everything. */
void ws_free(struct ws_client *c);

/* Abort with a TCP reset (SO_LINGER 0) instead of a FIN, then free. */
void ws_free_reset(struct ws_client *c);

/* Sends one frame. The payload is masked when `masked` is nonzero (clients
 * must mask; passing 0 produces an illegal frame on purpose). `rsv` is the
 * three RSV bits (0..7). Returns 0, or -1 when the socket failed. */
int ws_send_frame_ex(struct ws_client *c, int fin, int rsv, int opcode, int masked,
                     const void *payload, size_t len);
int ws_send_frame(struct ws_client *c, int fin, int opcode, const void *payload, size_t len);
int ws_send_text(struct ws_client *c, const char *text);
int ws_send_textn(struct ws_client *c, const void *data, size_t len);
int ws_send_binary(struct ws_client *c, const void *data, size_t len);

/* Writes raw bytes to the socket, reading (and buffering) whatever arrives
 * meanwhile so that a large send cannot deadlock against a talking server.
 * Returns 0, or -1 when the peer closed or reset the connection. */
int ws_send_raw(struct ws_client *c, const void *data, size_t len);

/* Sends a close frame with `code` (0: no code) and `reason`. */
int ws_send_close(struct ws_client *c, int code, const char *reason);

/* Waits up to timeout_ms for the next complete data message (0: takes
 * what has already arrived, without waiting). Pings are answered (when
 * auto_pong), pongs recorded, close frames recorded and answered with a
 * close. Returns a ws_recv_result. */
int ws_recv(struct ws_client *c, struct ws_msg *out, int timeout_ms);

/* Reads and discards data until the server closes (close frame or EOF) or the
 * timeout passes. Returns WS_RECV_CLOSED, WS_RECV_EOF or WS_RECV_TIMEOUT. */
int ws_wait_close(struct ws_client *c, int timeout_ms);

/* Monotonic milliseconds. */
int64_t ws_now_ms(void);

/* One plain HTTP exchange on a fresh connection to host:port: sends
 * request as given, reads the answer until EOF or its Content-Length, at
 * most timeout_ms. Returns the status (0 when none came); *response (when
 * given) is the whole answer, head and body, NUL-terminated (caller frees;
 * NULL when no connection was made). */
int ws_http(const char *host, int port, const char *request, int timeout_ms, char **response);

#endif
