/*
 * adapters/mdns/avahi_dl — the avahi-client functions the browse side uses,
 * loaded with dlopen() on first use.
 *
 * Why: linking avahi-client makes the loader map and relocate libdbus-1 and
 * everything under it (libsystemd, libgcrypt, libgpg-error, liblz4,
 * libzstd, liblzma) at every start: about 0.9 MB of resident memory in
 * general-agent, even when SPACE_URL is set and mDNS is never used
 * (bench/footprint.sh). Loaded on demand, an agent that discovers its room
 * by mDNS pays it, one that is told where the room is does not. (The same
 * reasoning as adapters/http/curl_shim.h.)
 *
 * avahi_dl_load() is idempotent: later calls return the first outcome. The
 * library stays loaded (libdbus cannot be unloaded safely).
 */
#ifndef GA_ADAPTERS_MDNS_AVAHI_DL_H
#define GA_ADAPTERS_MDNS_AVAHI_DL_H

#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-common/address.h>
#include <avahi-common/error.h>

#include "common/err.h"

#define AVAHI_DL_LIBRARY "libavahi-client.so.3"

struct avahi_dl {
	AvahiClient *(*client_new)(const AvahiPoll *, AvahiClientFlags, AvahiClientCallback, void *,
	                           int *);
	void (*client_free)(AvahiClient *);
	int (*client_errno)(AvahiClient *);
	const char *(*strerror)(int);
	AvahiServiceBrowser *(*service_browser_new)(AvahiClient *, AvahiIfIndex, AvahiProtocol,
	                                            const char *, const char *, AvahiLookupFlags,
	                                            AvahiServiceBrowserCallback, void *);
	int (*service_browser_free)(AvahiServiceBrowser *);
	AvahiClient *(*service_browser_get_client)(AvahiServiceBrowser *);
	AvahiServiceResolver *(*service_resolver_new)(AvahiClient *, AvahiIfIndex, AvahiProtocol,
	                                              const char *, const char *, const char *,
	                                              AvahiProtocol, AvahiLookupFlags,
	                                              AvahiServiceResolverCallback, void *);
	int (*service_resolver_free)(AvahiServiceResolver *);
	AvahiClient *(*service_resolver_get_client)(AvahiServiceResolver *);
	char *(*address_snprint)(char *, size_t, const AvahiAddress *);
};

extern struct avahi_dl avahi_dl;

/* 0 when every function above is available; -1 with err naming the
 * library or the missing symbol. */
int avahi_dl_load(struct ga_err *err);

#endif
