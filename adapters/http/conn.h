/*
 * conn — one client connection of the native transport on the libuv loop:
 * name resolution, TCP connect trying each address in turn, an optional
 * tunnel through an HTTP proxy (CONNECT) or a SOCKS5 proxy (socks.h), an
 * optional TLS session (tls.h) that may choose HTTP/2 by ALPN (conn_h2),
 * then plaintext in and out. Nothing blocks; the connect deadline covers
 * resolution, the tunnel and the handshake.
 *
 * The owner (native.c) opens a connection with conn_open() and hears from
 * it through struct conn_events, always from a libuv callback:
 *   ready(ud, c)            connected (tunnel and handshake done): send;
 *   data(ud, c, p, n)       plaintext arrived;
 *   closed(ud, c, kind, msg)
 *                           the connection failed or the peer closed it;
 *                           kind is HTTP_ERR_* (HTTP_OK: a clean close),
 *                           msg a sentence without the host name; a
 *                           failure before ready is HTTP_ERR_CONNECT,
 *                           HTTP_ERR_TLS or HTTP_ERR_TIMEOUT (the connect
 *                           deadline passed).
 * After closed the connection is dead: the owner calls conn_close() on it
 * (always, exactly once; also to drop a live connection). Memory is freed
 * once libuv has released the handles.
 *
 * conn_set_owner() moves the events to another ud (the pool and the request
 * take turns owning an idle connection).
 */
#ifndef GA_ADAPTERS_HTTP_CONN_H
#define GA_ADAPTERS_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/http/http.h"
#include "adapters/http/proxy.h"
#include "adapters/http/url.h"

#define CONN_READ_BYTES (16u * 1024u)

struct conn;

struct conn_events {
	void (*ready)(void *ud, struct conn *c);
	void (*data)(void *ud, struct conn *c, const char *p, size_t n);
	void (*closed)(void *ud, struct conn *c, enum http_error kind, const char *msg);
};

struct conn_target {
	const struct url *u;
	const struct proxy *px;
	uint64_t connect_deadline_ms; /* uv_now; the connection must be ready by then */
};

/* Starts connecting. Returns NULL only when out of handles; failures to
 * connect arrive through events->closed. */
struct conn *conn_open(uv_loop_t *loop, const struct conn_target *tg, const struct conn_events *ev,
                       void *ud);
void conn_set_owner(struct conn *c, const struct conn_events *ev, void *ud);

/* Sends plaintext (through TLS when there is a session). */
void conn_send(struct conn *c, const char *data, size_t len);

/* Closes (idempotent); no event follows. */
void conn_close(struct conn *c);

/* Has the connection been closed, or did it report closed? */
bool conn_dead(const struct conn *c);

/* Once ready: did TLS choose HTTP/2 (ALPN "h2")? Offered only over TLS and
 * only when libnghttp2 loads. */
bool conn_h2(const struct conn *c);

/* The owner's per-connection protocol state (the HTTP/2 session), kept
 * across owners and freed with proto_free when the connection is freed. */
void conn_set_proto(struct conn *c, void *proto, void (*proto_free)(void *p));
void *conn_proto(const struct conn *c);

#endif
