/*
 * adapters/mdns — DNS-SD over avahi-client, driven by the libuv loop.
 *
 * The avahi client library talks to avahi-daemon over D-Bus; it needs an
 * AvahiPoll (watches on file descriptors, timeouts), which this module
 * implements on uv_poll_t / uv_timer_t so avahi runs on the program's one
 * loop (mdns_poll_*). On top of it:
 *
 *   publish (the agent-space server): advertise one service
 *     "<instance>._agent-space._tcp.local" on a port. The SRV target is the
 *     host name avahi-daemon itself publishes ("<host>.local", with A/AAAA
 *     records), which resolves on Linux through nss-mdns, where a bare OS
 *     host name often does not (space-protocol.md §5, §9 item 24). On
 *     a name collision the instance is renamed ("agent-space #2") instead of
 *     silently not advertising. Without a running avahi-daemon, publishing
 *     logs ONE warning and returns a handle that does nothing; the caller
 *     serves anyway. If the daemon appears later, avahi-client reconnects
 *     and the service is registered then.
 *
 *   browse (the agent side): adapters/mdns/browse.h. It loads
 *     avahi-client with dlopen() on first use (avahi_dl.h) so an agent told
 *     its room by SPACE_URL never maps libdbus. Both sides use the one
 *     AvahiPoll adapter in uvpoll.c.
 *
 * Ownership: every _new/_start function has a matching _free/_stop that accepts
 * NULL. Handles close asynchronously: after mdns_poll_free the loop must run
 * once more for libuv to release them. One thread only.
 */
#ifndef GA_ADAPTERS_MDNS_MDNS_H
#define GA_ADAPTERS_MDNS_MDNS_H

#include <uv.h>

#include "common/err.h"

#define MDNS_SPACE_SERVICE_TYPE "_agent-space._tcp"

/* An AvahiPoll implemented on a libuv loop. */
struct mdns_poll;

struct mdns_poll *mdns_poll_new(uv_loop_t *loop);
/* All watches and timeouts must have been freed by their avahi owners
 * (free the clients first). */
void mdns_poll_free(struct mdns_poll *p);
/* The AvahiPoll (const AvahiPoll *) to give to avahi_client_new. */
const void *mdns_poll_api(struct mdns_poll *p);

struct mdns_publisher;

/* Starts advertising `instance` (dots are replaced by '-', as ts-agent-space
 * names it) of `type` (e.g. MDNS_SPACE_SERVICE_TYPE) on `port`, with an
 * empty TXT record. Never fails for a missing daemon (see above); returns
 * NULL with err only on invalid arguments. */
struct mdns_publisher *mdns_publish_start(uv_loop_t *loop, const char *instance, const char *type,
                                          int port, struct ga_err *err);

/* Withdraws the service (avahi sends the goodbye) and frees everything. */
void mdns_publish_stop(struct mdns_publisher *pub);

#endif
