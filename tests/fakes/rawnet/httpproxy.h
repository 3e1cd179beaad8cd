/*
 * httpproxy — a small HTTP proxy on 127.0.0.1 for tests of the native HTTP
 * transport: CONNECT tunnels (for https:// through a proxy) and
 * absolute-form requests forwarded to the origin (for http://), with
 * optional Basic proxy authentication.
 *
 * Threads: one accepting thread and one per client connection; every
 * public function may be called from any thread. A tunnel or forwarded
 * request relays bytes both ways until either side closes.
 *
 * Bounds: a request head of at most HTTPPROXY_HEAD_MAX bytes (more is
 * answered 431 and closed), at most HTTPPROXY_CONN_MAX connections at once
 * (more are closed at accept). httpproxy_free() closes every connection and
 * waits for the threads.
 */
#ifndef GA_TESTS_FAKES_RAWNET_HTTPPROXY_H
#define GA_TESTS_FAKES_RAWNET_HTTPPROXY_H

#include <stddef.h>
#include <stdint.h>

#define HTTPPROXY_HEAD_MAX 16384
#define HTTPPROXY_CONN_MAX 32

struct httpproxy;

/* Starts a proxy on an ephemeral port. require_auth: the exact
 * Proxy-Authorization value to demand ("Basic dXNlcjpwdw=="), or NULL for
 * none (a request without it is answered 407). NULL with err on failure. */
struct httpproxy *httpproxy_new(const char *require_auth, char *err, size_t errlen);
void httpproxy_free(struct httpproxy *p);

uint16_t httpproxy_port(const struct httpproxy *p);
/* Requests seen: CONNECTs and absolute-form requests (refused ones too). */
unsigned httpproxy_requests(struct httpproxy *p);
/* The request line and Proxy-Authorization value ("" when absent) of the
 * last request. */
void httpproxy_last(struct httpproxy *p, char *line, size_t line_cap, char *auth, size_t auth_cap);

#endif
