/*
 * adapters/mdns — avahi-client on libuv: the AvahiPoll adapter and service
 * publishing. See mdns.h for the contract.
 */
#include "adapters/mdns/mdns.h"

#include <avahi-client/client.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/watch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "adapters/mdns/uvpoll.h"
#include "common/log.h"
#include "common/xalloc.h"

#define LOG_COMP "mdns"

/* --- AvahiPoll on libuv: the adapter the browse side uses too (uvpoll.c) ---- */

struct mdns_poll {
	struct mdns_uvpoll *uv;
};

struct mdns_poll *mdns_poll_new(uv_loop_t *loop)
{
	struct mdns_poll *p = xcalloc(1, sizeof *p);
	p->uv = mdns_uvpoll_new(loop);
	return p;
}

void mdns_poll_free(struct mdns_poll *p)
{
	if (!p)
		return;
	mdns_uvpoll_free(p->uv);
	free(p);
}

const void *mdns_poll_api(struct mdns_poll *p)
{
	return mdns_uvpoll_api(p->uv);
}

/* --- publishing ------------------------------------------------------------------- */

struct mdns_publisher {
	struct mdns_poll *poll;
	AvahiClient *client;
	AvahiEntryGroup *group;
	char *name; /* current instance name (renamed on collisions) */
	char *type;
	int port;
	bool warned;
	bool stopping;
};

static void warn_once(struct mdns_publisher *pub, const char *what, int error)
{
	if (pub->warned)
		return;
	pub->warned = true;
	log_warn(LOG_COMP,
	         "mDNS advertisement unavailable (%s: %s); the room serves anyway, "
	         "clients can use SPACE_URL",
	         what, avahi_strerror(error));
}

static void add_service(struct mdns_publisher *pub, AvahiClient *c);

static void rename_after_collision(struct mdns_publisher *pub, AvahiClient *c)
{
	char *alt = avahi_alternative_service_name(pub->name);
	log_warn(LOG_COMP, "service name '%s' is taken on the network; using '%s'", pub->name, alt);
	free(pub->name);
	pub->name = xstrdup(alt);
	avahi_free(alt);
	if (pub->group)
		avahi_entry_group_reset(pub->group);
	add_service(pub, c);
}

static void group_cb(AvahiEntryGroup *g, AvahiEntryGroupState state, void *ud)
{
	struct mdns_publisher *pub = ud;
	if (pub->stopping)
		return;
	switch (state) {
	case AVAHI_ENTRY_GROUP_ESTABLISHED:
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "advertising", "name", pub->name, "type",
		       pub->type, "port", LOG_INT(pub->port));
		break;
	case AVAHI_ENTRY_GROUP_COLLISION:
		rename_after_collision(pub, avahi_entry_group_get_client(g));
		break;
	case AVAHI_ENTRY_GROUP_FAILURE:
		log_warn(LOG_COMP, "advertisement failed: %s",
		         avahi_strerror(avahi_client_errno(avahi_entry_group_get_client(g))));
		break;
	default:
		break;
	}
}

static void add_service(struct mdns_publisher *pub, AvahiClient *c)
{
	if (!pub->group) {
		pub->group = avahi_entry_group_new(c, group_cb, pub);
		if (!pub->group) {
			warn_once(pub, "entry group", avahi_client_errno(c));
			return;
		}
	}
	if (!avahi_entry_group_is_empty(pub->group))
		return;
	/* host NULL: the SRV target is avahi-daemon's own "<host>.local",
	 * which it also publishes A/AAAA records for. TXT: none (§5). */
	int rc = avahi_entry_group_add_service(pub->group, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC, 0,
	                                       pub->name, pub->type, NULL, NULL,
	                                       (uint16_t)pub->port, NULL);
	if (rc == AVAHI_ERR_COLLISION) {
		rename_after_collision(pub, c);
		return;
	}
	if (rc < 0 || (rc = avahi_entry_group_commit(pub->group)) < 0) {
		log_warn(LOG_COMP, "cannot advertise '%s': %s", pub->name, avahi_strerror(rc));
		return;
	}
}

static void client_cb(AvahiClient *c, AvahiClientState state, void *ud);

static void client_connect(struct mdns_publisher *pub)
{
	int error = 0;
	pub->client = avahi_client_new(mdns_poll_api(pub->poll), AVAHI_CLIENT_NO_FAIL, client_cb,
	                               pub, &error);
	if (!pub->client)
		warn_once(pub, "cannot reach avahi-daemon", error);
}

static void client_cb(AvahiClient *c, AvahiClientState state, void *ud)
{
	struct mdns_publisher *pub = ud;
	if (pub->stopping)
		return;
	switch (state) {
	case AVAHI_CLIENT_S_RUNNING:
		add_service(pub, c);
		break;
	case AVAHI_CLIENT_S_COLLISION:
	case AVAHI_CLIENT_S_REGISTERING:
		/* The host name changed or collided: re-register later. */
		if (pub->group)
			avahi_entry_group_reset(pub->group);
		break;
	case AVAHI_CLIENT_CONNECTING:
		warn_once(pub, "avahi-daemon is not running; will advertise when it starts",
		          AVAHI_ERR_NO_DAEMON);
		break;
	case AVAHI_CLIENT_FAILURE:
		if (avahi_client_errno(c) == AVAHI_ERR_DISCONNECTED) {
			/* The daemon went away: start over and wait for it. The
			 * group belongs to the dead client and dies with it. */
			pub->group = NULL;
			if (pub->client == c)
				pub->client = NULL;
			avahi_client_free(c);
			client_connect(pub);
		} else {
			warn_once(pub, "avahi client failure", avahi_client_errno(c));
		}
		break;
	}
}

struct mdns_publisher *mdns_publish_start(uv_loop_t *loop, const char *instance, const char *type,
                                          int port, struct ga_err *err)
{
	if (!instance || !*instance || !type || port < 0 || port > 65535) {
		err_set(err, "mDNS: an instance name, a service type and a port are required");
		return NULL;
	}
	struct mdns_publisher *pub = xcalloc(1, sizeof *pub);
	pub->poll = mdns_poll_new(loop);
	pub->name = xstrdup(instance);
	/* Dots become '-' (they would split the DNS label), the name
	 * ts-agent-space gives the same instance. */
	for (char *p = pub->name; *p; p++)
		if (*p == '.')
			*p = '-';
	pub->type = xstrdup(type);
	pub->port = port;
	client_connect(pub);
	return pub;
}

void mdns_publish_stop(struct mdns_publisher *pub)
{
	if (!pub)
		return;
	pub->stopping = true;
	if (pub->group)
		avahi_entry_group_free(pub->group);
	if (pub->client)
		avahi_client_free(pub->client);
	mdns_poll_free(pub->poll);
	free(pub->name);
	free(pub->type);
	free(pub);
}
