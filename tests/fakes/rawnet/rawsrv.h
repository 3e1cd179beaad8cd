/*
 * rawsrv — a scripted HTTP/1.1 responder on 127.0.0.1 for the native
 * transport's tests: it sends byte-exact answers (chunked, close-delimited,
 * keep-alive) and can close a kept connection at a chosen moment, which
 * libmicrohttpd cannot be told to do.
 *
 * One thread serves one connection at a time, in order: each request
 * (head, then a Content-Length body) takes the next step of the script
 * (the last one repeats). Counters and the last request head are read with
 * the accessors from any thread.
 */
#ifndef GA_TESTS_FAKES_RAWNET_RAWSRV_H
#define GA_TESTS_FAKES_RAWNET_RAWSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RAWSRV_STEPS_MAX 8

struct rawsrv_step {
	const char *reply; /* sent as is; NULL = close without answering */
	bool close_after;  /* close the connection after the reply */
	bool hang;         /* answer nothing, keep the connection until the peer goes */
};

struct rawsrv;

struct rawsrv *rawsrv_new(const struct rawsrv_step *steps, size_t n);
void rawsrv_free(struct rawsrv *s);
uint16_t rawsrv_port(const struct rawsrv *s);
unsigned rawsrv_accepts(struct rawsrv *s);
unsigned rawsrv_requests(struct rawsrv *s);
/* Copy of the last request's head. */
void rawsrv_last_head(struct rawsrv *s, char *out, size_t cap);

#endif
