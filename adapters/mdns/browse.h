/*
 * adapters/mdns/browse — find one DNS-SD service through avahi-client, on
 * the libuv loop (the agent side of mdns.h). avahi-client is loaded with
 * dlopen() on the first browse (avahi_dl.h says why) and driven by the
 * libuv AvahiPoll of uvpoll.h; link ga_mdns_browse, not ga_mdns.
 *
 * mdns_browse_start() browses for `type` (e.g. MDNS_SPACE_SERVICE_TYPE) in
 * the local domain and resolves each instance that appears; the FIRST one
 * that resolves wins (as the TypeScript client does: the first service
 * that comes up, space-protocol.md §7.1), or, given an instance name, only the
 * instance of that name (others are ignored). The callback fires exactly
 * once:
 *   - found: host (the SRV target, e.g. "box.local"), address (the
 *     resolved IPv4 address when there is one, else IPv6, else ""), port,
 *     instance name, and whether avahi says the service lives on this host;
 *   - not found (found == NULL) with a sentence saying why: nothing
 *     answered within timeout_ms, avahi-daemon is not running, or the
 *     browse failed.
 * A missing avahi-daemon (or a missing libavahi-client) is reported at once
 * rather than after the timeout: there is nothing to wait for.
 *
 * The callback is always called from a timer (never from inside avahi), so
 * it may call mdns_browse_stop() on its own browser. Strings in `found` are
 * valid only during the callback.
 *
 * Ownership: mdns_browse_stop() accepts NULL and may be called at any time
 * (also before the callback, which then never fires). It releases the
 * avahi objects at once; its libuv handles close asynchronously, so the loop
 * must run once more before it is closed.
 */
#ifndef GA_ADAPTERS_MDNS_BROWSE_H
#define GA_ADAPTERS_MDNS_BROWSE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/mdns/mdns.h"
#include "common/err.h"

/* At most this many instances are being resolved at a time; later ones
 * wait for a slot (they are announced again) or are ignored. */
#define MDNS_BROWSE_MAX_RESOLVERS 8

struct mdns_found {
	const char *instance;
	const char *host;    /* SRV target host name */
	const char *address; /* "192.0.2.7", "fd00::2", or "" */
	int port;
	bool local; /* published by this host's avahi-daemon */
};

typedef void (*mdns_browse_fn)(void *ud, const struct mdns_found *found, const char *why_not);

struct mdns_browser;

/* instance: NULL or "" for the first service found, else the one wanted.
 * NULL with err only for invalid arguments. */
struct mdns_browser *mdns_browse_start(uv_loop_t *loop, const char *type, const char *instance,
                                       uint64_t timeout_ms, mdns_browse_fn cb, void *ud,
                                       struct ga_err *err);
void mdns_browse_stop(struct mdns_browser *b);

#endif
