/*
 * sock — the few blocking-socket helpers the raw-socket fakes share.
 */
#ifndef GA_TESTS_FAKES_RAWNET_SOCK_H
#define GA_TESTS_FAKES_RAWNET_SOCK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* A socket listening on 127.0.0.1 at an ephemeral port (*port), or -1
 * with errno. */
int sock_listen_loopback(uint16_t *port);
/* Sends all n bytes (stops quietly when the peer is gone). */
void sock_send_all(int fd, const char *s, size_t n);
/* *v read under mu. */
unsigned sock_locked_read(pthread_mutex_t *mu, const unsigned *v);

#endif
