/*
 * adapters/space/discover — where is the room? One discovery attempt, in
 * the protocol's order (space-protocol.md §7.1), each step logged with its
 * outcome:
 *
 *   1. SPACE_URL, when set (verbatim: the configuration already checked
 *      that it is a ws:// or wss:// URL);
 *   2. else an mDNS browse for _agent-space._tcp through avahi-daemon, for
 *      up to GA_SPACE_MDNS_TIMEOUT_MS; the first service that resolves
 *      wins (or, with GA_SPACE_MDNS_NAME, the one of that instance name). The URL uses the resolved
 * IPv4 address rather than the SRV target (a bare or ".local" host name often does not resolve; the
 *      address always does);
 *   3. else the fallback, ws://localhost:7777 (GA_SPACE_LOCALHOST_URL).
 *
 * So an attempt always yields a URL. The callback fires exactly once, never
 * from inside spc_disc_start, and may free the attempt (spc_disc_cancel).
 *
 * Ownership: spc_disc_cancel() accepts NULL, may be called at any time
 * (the callback then never fires), and releases everything; handles close
 * asynchronously (the loop must run once more).
 */
#ifndef GA_ADAPTERS_SPACE_DISCOVER_H
#define GA_ADAPTERS_SPACE_DISCOVER_H

#include <uv.h>

#include "adapters/space/tunables.h"

enum spc_disc_source {
	SPC_DISC_SPACE_URL,
	SPC_DISC_MDNS,
	SPC_DISC_LOCALHOST,
};

const char *spc_disc_source_name(enum spc_disc_source s);

typedef void (*spc_disc_fn)(void *ud, const char *url, enum spc_disc_source src);

struct spc_disc;

/* space_url: SPACE_URL or NULL/"" for discovery. t is copied. */
struct spc_disc *spc_disc_start(uv_loop_t *loop, const char *space_url,
                                const struct spc_tunables *t, spc_disc_fn cb, void *ud);
void spc_disc_cancel(struct spc_disc *d);

/* The URL for a resolved service: ws://<IPv4>:port when the address is
 * IPv4, ws://[<IPv6>]:port for a global IPv6 address, else the host name
 * (SRV target). out must hold SPC_URL_MAX bytes. Returns out. */
char *spc_disc_url_for(const char *host, const char *address, int port, char *out);

#endif
