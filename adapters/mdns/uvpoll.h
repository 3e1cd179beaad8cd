/*
 * adapters/mdns/uvpoll — an AvahiPoll on a libuv loop, for the browse side.
 *
 * avahi-client talks to avahi-daemon over D-Bus and needs an AvahiPoll
 * (file descriptor watches and timeouts); this one runs them on uv_poll_t /
 * uv_timer_t so avahi shares the program's one loop. It behaves like the
 * publish side's adapter in mdns.c (mdns_poll_*); it is a separate object
 * so that the browse side can be linked without the publish side, whose
 * direct references to avahi-client would pull the library (and libdbus,
 * libsystemd, …) into every agent at start-up — see avahi_dl.h.
 *
 * Ownership: every watch and timeout must have been freed by its avahi
 * owner (free the AvahiClient first) before mdns_uvpoll_free. Handles close
 * asynchronously: the loop must run once more afterwards.
 */
#ifndef GA_ADAPTERS_MDNS_UVPOLL_H
#define GA_ADAPTERS_MDNS_UVPOLL_H

#include <avahi-common/watch.h>
#include <uv.h>

struct mdns_uvpoll;

struct mdns_uvpoll *mdns_uvpoll_new(uv_loop_t *loop);
void mdns_uvpoll_free(struct mdns_uvpoll *p);
const AvahiPoll *mdns_uvpoll_api(struct mdns_uvpoll *p);

#endif
