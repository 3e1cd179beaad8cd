/*
 * tls — a TLS client session over memory buffers for the native transport,
 * with GnuTLS loaded by dlopen() on first use (common/dlshim.h), so an
 * agent that never makes an HTTP request never maps it.
 *
 * The session does no I/O of its own: ciphertext the socket read is handed
 * in with tls_feed() (tls_feed_eof() when the peer closed), and ciphertext
 * to send comes out through the tls_out_fn given to tls_new(), which must
 * accept all of it (the transport copies it into a libuv write). So the
 * handshake and record calls never block; they return "need more" until
 * enough has been fed.
 *
 * Every session: SNI with the host name (not for an IP address), ALPN
 * "h2" (when the caller can speak it) then "http/1.1", GnuTLS's default
 * priorities, and the peer's certificate
 * chain verified against the system trust for the host name and the TLS
 * server purpose. There is deliberately no way to turn verification off.
 *
 * Trust, and why it is looked up per handshake: loading the whole system
 * bundle into GnuTLS (gnutls_certificate_set_x509_system_trust) costs about
 * 4 MB of heap for its 140-odd parsed certificates, more than the rest of
 * the HTTP client together. Instead each handshake reads the bundle file,
 * finds by subject name the few certificates that issued the chain the
 * server sent, and verifies against a trust list of just those, freed
 * right after. The bundle is the first of TLS_CA_BUNDLES that exists;
 * GA_HTTP_EXTRA_CA_FILE (a PEM file) adds certificates to it — for tests
 * against a local CA, never a replacement of the system trust.
 */
#ifndef GA_ADAPTERS_HTTP_TLS_H
#define GA_ADAPTERS_HTTP_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define TLS_CA_BUNDLE_MAX (4u * 1024u * 1024u)
#define TLS_MAX_CHAIN     16
#define TLS_EXTRA_CA_ENV  "GA_HTTP_EXTRA_CA_FILE"
#define TLS_INBOX_MAX     (1024u * 1024u)
/* Non-fatal GnuTLS answers (a warning alert, a ticket) retried in a row at
 * most this often before the call is given up as failed. */
#define TLS_NONFATAL_MAX 16

struct tls;

/* Ciphertext to send; must take all len bytes. */
typedef void (*tls_out_fn)(void *ud, const char *data, size_t len);

/* Loads and initialises GnuTLS (idempotent, sticky outcome). Returns 0, or
 * -1 with err naming the library. */
int tls_load(struct ga_err *err);

/* A client session for host. Returns NULL with err on failure. Free with
 * tls_free (NULL ok). */
struct tls *tls_new(const char *host, bool ip_literal, bool offer_h2, tls_out_fn out, void *ud,
                    struct ga_err *err);
/* After the handshake: did the server choose "h2"? */
bool tls_alpn_h2(struct tls *t);
void tls_free(struct tls *t);

/* Ciphertext from the socket. -1 when more than TLS_INBOX_MAX waits. */
int tls_feed(struct tls *t, const char *data, size_t len);
void tls_feed_eof(struct tls *t);

/* 1 when the handshake is complete, 0 when it needs more input, -1 with
 * msg (a sentence without the host) on failure. */
int tls_handshake(struct tls *t, char *msg, size_t cap);

/* Encrypts and emits len bytes. 0, or -1 with msg. */
int tls_send(struct tls *t, const char *data, size_t len, char *msg, size_t cap);

/* Decrypted bytes into buf: > 0 bytes, 0 nothing more for now, -1 error
 * (msg), -2 the peer closed. */
long tls_recv(struct tls *t, char *buf, size_t cap, char *msg, size_t msg_cap);

#endif
