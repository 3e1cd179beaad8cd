/*
 * adapters/mdns/browse — DNS-SD browse + resolve through avahi-client on
 * libuv. See browse.h for the contract.
 */
#include "adapters/mdns/browse.h"

#include <avahi-common/domain.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adapters/mdns/avahi_dl.h"
#include "adapters/mdns/uvpoll.h"
#include "common/log.h"
#include "common/xalloc.h"

#define LOG_COMP "mdns"
/* avahi-client is loaded on first use (avahi_dl.h): every call goes
 * through the table. */
#define A (&avahi_dl)

struct mdns_browser {
	struct mdns_uvpoll *poll;
	AvahiClient *client;
	AvahiServiceBrowser *browser;
	AvahiServiceResolver *resolvers[MDNS_BROWSE_MAX_RESOLVERS];
	uv_timer_t timeout;
	uv_timer_t deliver;
	int open_handles; /* freed when the last one has closed */
	bool stopped;
	bool decided;
	mdns_browse_fn cb;
	void *ud;
	char *type;
	char *wanted; /* the instance name to find, or NULL: the first */
	uint64_t timeout_ms;
	/* the outcome, kept until delivered */
	bool found;
	char instance[AVAHI_LABEL_MAX];
	char host[AVAHI_DOMAIN_NAME_MAX];
	char address[AVAHI_ADDRESS_STR_MAX];
	int port;
	bool local;
	char why[GA_ERR_MSG_MAX + 64];
};

static void release_avahi(struct mdns_browser *b)
{
	for (int i = 0; i < MDNS_BROWSE_MAX_RESOLVERS; i++) {
		if (b->resolvers[i])
			A->service_resolver_free(b->resolvers[i]);
		b->resolvers[i] = NULL;
	}
	if (b->browser)
		A->service_browser_free(b->browser);
	b->browser = NULL;
	if (b->client)
		A->client_free(b->client);
	b->client = NULL;
}

static void on_deliver(uv_timer_t *t)
{
	struct mdns_browser *b = t->data;
	if (b->stopped)
		return;
	/* Nothing more can arrive that matters: let avahi go now. */
	release_avahi(b);
	uv_timer_stop(&b->timeout);
	if (b->found) {
		struct mdns_found f = {.instance = b->instance,
		                       .host = b->host,
		                       .address = b->address,
		                       .port = b->port,
		                       .local = b->local};
		b->cb(b->ud, &f, NULL);
	} else {
		b->cb(b->ud, NULL, b->why);
	}
}

/* Records the outcome once; delivered from a timer so that avahi's
 * callbacks never see their objects freed under them. */
static void decide(struct mdns_browser *b, const char *why)
{
	if (b->decided)
		return;
	b->decided = true;
	if (why)
		snprintf(b->why, sizeof b->why, "%s", why);
	uv_timer_start(&b->deliver, on_deliver, 0, 0);
}

static void on_timeout(uv_timer_t *t)
{
	struct mdns_browser *b = t->data;
	char why[256];
	if (b->wanted)
		snprintf(why, sizeof why, "no %s service named %s answered within %llu ms", b->type,
		         b->wanted, (unsigned long long)b->timeout_ms);
	else
		snprintf(why, sizeof why, "no %s service answered within %llu ms", b->type,
		         (unsigned long long)b->timeout_ms);
	decide(b, why);
}

static void resolve_cb(AvahiServiceResolver *r, AvahiIfIndex iface, AvahiProtocol proto,
                       AvahiResolverEvent event, const char *name, const char *type,
                       const char *domain, const char *host, const AvahiAddress *a, uint16_t port,
                       AvahiStringList *txt, AvahiLookupResultFlags flags, void *ud)
{
	struct mdns_browser *b = ud;
	if (b->decided)
		return;
	if (event != AVAHI_RESOLVER_FOUND) {
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "could not resolve a service", "name",
		       name ? name : "", "error",
		       A->strerror(A->client_errno(A->service_resolver_get_client(r))));
		return;
	}
	b->found = true;
	snprintf(b->instance, sizeof b->instance, "%s", name ? name : "");
	snprintf(b->host, sizeof b->host, "%s", host ? host : "");
	b->address[0] = '\0';
	if (a)
		A->address_snprint(b->address, sizeof b->address, a);
	b->port = port;
	b->local = (flags & AVAHI_LOOKUP_RESULT_LOCAL) != 0;
	decide(b, NULL);
}

static void browse_cb(AvahiServiceBrowser *sb, AvahiIfIndex iface, AvahiProtocol proto,
                      AvahiBrowserEvent event, const char *name, const char *type,
                      const char *domain, AvahiLookupResultFlags flags, void *ud)
{
	struct mdns_browser *b = ud;
	if (b->decided)
		return;
	switch (event) {
	case AVAHI_BROWSER_NEW: {
		if (b->wanted && strcmp(name, b->wanted) != 0) {
			log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "service ignored: not the one wanted",
			       "name", name, "wanted", b->wanted);
			return;
		}
		int slot = -1;
		for (int i = 0; i < MDNS_BROWSE_MAX_RESOLVERS && slot < 0; i++)
			if (!b->resolvers[i])
				slot = i;
		if (slot < 0) {
			log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "too many services to resolve at once",
			       "ignored", name);
			return;
		}
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "service seen", "name", name, "type", type);
		/* The address is asked for as IPv4: an IPv6 link-local answer
		 * would need a scope id the URL cannot carry. */
		b->resolvers[slot] = A->service_resolver_new(A->service_browser_get_client(sb),
		                                             iface, proto, name, type, domain,
		                                             AVAHI_PROTO_INET, 0, resolve_cb, b);
		break;
	}
	case AVAHI_BROWSER_FAILURE: {
		char why[256];
		snprintf(why, sizeof why, "mDNS browse failed: %s",
		         A->strerror(A->client_errno(A->service_browser_get_client(sb))));
		decide(b, why);
		break;
	}
	default:
		break;
	}
}

static void client_cb(AvahiClient *c, AvahiClientState state, void *ud)
{
	struct mdns_browser *b = ud;
	if (b->decided || b->stopped)
		return;
	if (state == AVAHI_CLIENT_S_RUNNING && !b->browser) {
		/* May run inside avahi_client_new, before b->client is set:
		 * use c. */
		b->browser = A->service_browser_new(c, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, b->type,
		                                    NULL, 0, browse_cb, b);
		if (!b->browser) {
			char why[256];
			snprintf(why, sizeof why, "mDNS browse could not start: %s",
			         A->strerror(A->client_errno(c)));
			decide(b, why);
		}
	} else if (state == AVAHI_CLIENT_FAILURE) {
		char why[256];
		snprintf(why, sizeof why, "avahi-daemon failed: %s",
		         A->strerror(A->client_errno(c)));
		decide(b, why);
	}
}

/* avahi-client reaches avahi-daemon over the D-Bus system bus. When the
 * bus's socket is not there, nothing can answer: say so without loading
 * libavahi-client and libdbus (~1.2 MB resident that could never be
 * unloaded again) just to learn it. The address follows libdbus's own
 * rule: DBUS_SYSTEM_BUS_ADDRESS, else unix:path=/var/run/dbus/system_bus_socket.
 * Addresses other than one plain unix path are left to libdbus. */
static bool system_bus_present(char *path, size_t cap)
{
	const char *addr = getenv("DBUS_SYSTEM_BUS_ADDRESS");
	if (!addr || !*addr)
		addr = "unix:path=/var/run/dbus/system_bus_socket";
	const char *prefix = "unix:path=";
	if (strncmp(addr, prefix, strlen(prefix)) != 0 || strchr(addr, ';') || strchr(addr, ',')) {
		snprintf(path, cap, "%s", addr);
		return true;
	}
	snprintf(path, cap, "%s", addr + strlen(prefix));
	struct stat st;
	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

struct mdns_browser *mdns_browse_start(uv_loop_t *loop, const char *type, const char *instance,
                                       uint64_t timeout_ms, mdns_browse_fn cb, void *ud,
                                       struct ga_err *err)
{
	if (!loop || !type || !*type || !cb) {
		err_set(err, "mDNS browse: a loop, a service type and a callback are required");
		return NULL;
	}
	struct mdns_browser *b = xcalloc(1, sizeof *b);
	b->cb = cb;
	b->ud = ud;
	b->type = xstrdup(type);
	b->wanted = instance && *instance ? xstrdup(instance) : NULL;
	b->timeout_ms = timeout_ms;
	b->poll = mdns_uvpoll_new(loop);
	uv_timer_init(loop, &b->timeout);
	uv_timer_init(loop, &b->deliver);
	b->timeout.data = b->deliver.data = b;
	b->open_handles = 2;
	uv_timer_start(&b->timeout, on_timeout, timeout_ms, 0);

	struct ga_err lerr = {{0}};
	char bus[256];
	if (!system_bus_present(bus, sizeof bus)) {
		char why[sizeof bus + 96];
		snprintf(why, sizeof why,
		         "avahi-daemon is not reachable (no D-Bus system bus at %s)", bus);
		decide(b, why);
		return b;
	}
	if (avahi_dl_load(&lerr) != 0) {
		char why[sizeof lerr.msg + 32];
		snprintf(why, sizeof why, "mDNS is unavailable: %s", lerr.msg);
		decide(b, why);
		return b;
	}
	int error = 0;
	/* No AVAHI_CLIENT_NO_FAIL: without a daemon there is nothing to wait
	 * for, and the caller has a fallback. */
	AvahiClient *c = A->client_new(mdns_uvpoll_api(b->poll), 0, client_cb, b, &error);
	if (!c) {
		char why[256];
		snprintf(why, sizeof why, "avahi-daemon is not reachable (%s)", A->strerror(error));
		decide(b, why);
	} else {
		b->client = c;
	}
	return b;
}

static void on_closed(uv_handle_t *h)
{
	struct mdns_browser *b = h->data;
	if (--b->open_handles == 0) {
		mdns_uvpoll_free(b->poll);
		free(b->type);
		free(b->wanted);
		free(b);
	}
}

void mdns_browse_stop(struct mdns_browser *b)
{
	if (!b || b->stopped)
		return;
	b->stopped = true;
	release_avahi(b);
	uv_timer_stop(&b->timeout);
	uv_timer_stop(&b->deliver);
	uv_close((uv_handle_t *)&b->timeout, on_closed);
	uv_close((uv_handle_t *)&b->deliver, on_closed);
}
