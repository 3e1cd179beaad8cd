/*
 * sock — the few blocking-socket helpers the raw-socket fakes share.
 */
#ifndef GA_TESTS_FAKES_RAWNET_SOCK_H
#define GA_TESTS_FAKES_RAWNET_SOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A socket listening on 127.0.0.1 at an ephemeral port (*port), or -1
 * with errno. */
int sock_listen_loopback(uint16_t *port);
/* Sends all n bytes (stops quietly when the peer is gone). */
void sock_send_all(int fd, const char *s, size_t n);
/* Relays bytes both ways until either side closes or fails. */
void sock_relay(int a, int b);
/* A socket connected to 127.0.0.1:port, or -1. */
int sock_dial_loopback(uint16_t port);
/* Stops a one-thread server: under mu sets *stopping and shuts down the
 * open fds (-1 skipped), shuts the listening socket, joins the thread,
 * closes lfd and destroys mu. */
void sock_server_stop(pthread_mutex_t *mu, bool *stopping, const int *fds, size_t nfds, int lfd,
                      pthread_t thread);
/* *v read under mu. */
unsigned sock_locked_read(pthread_mutex_t *mu, const unsigned *v);

#endif
