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

#include "common/log.h"
#include "common/xalloc.h"

#define LOG_COMP "mdns"

/* --- AvahiPoll on libuv ------------------------------------------------------ */

struct fd_poll;

struct mdns_poll {
	AvahiPoll api; /* avahi hands back &api; userdata points here */
	uv_loop_t *loop;
	struct fd_poll *fds;
};

/* libuv allows one poll handle per file descriptor, but D-Bus (under
 * avahi-client) watches the same socket twice, for reading and writing.
 * So watches share one uv_poll_t per fd and are dispatched from it. */
struct fd_poll {
	uv_poll_t poll;
	int fd;
	struct mdns_poll *owner;
	AvahiWatch *watches;
	int dispatching; /* > 0 while callbacks run: frees are deferred */
	struct fd_poll *next;
};

struct AvahiWatch {
	struct fd_poll *fp;
	AvahiWatch *next;
	AvahiWatchCallback cb;
	void *userdata;
	AvahiWatchEvent events;  /* wanted */
	AvahiWatchEvent revents; /* seen in the current callback */
	bool dead;
};

struct AvahiTimeout {
	uv_timer_t timer;
	AvahiTimeoutCallback cb;
	void *userdata;
};

static int uv_events(AvahiWatchEvent e)
{
	int u = 0;
	if (e & AVAHI_WATCH_IN)
		u |= UV_READABLE;
	if (e & AVAHI_WATCH_OUT)
		u |= UV_WRITABLE;
	return u;
}

static void free_on_close(uv_handle_t *h)
{
	free(h->data);
}

static void fd_cb(uv_poll_t *h, int status, int events);

static void fd_update(struct fd_poll *fp)
{
	AvahiWatchEvent want = 0;
	for (AvahiWatch *w = fp->watches; w; w = w->next)
		if (!w->dead)
			want |= w->events;
	if (uv_events(want))
		uv_poll_start(&fp->poll, uv_events(want) | UV_DISCONNECT, fd_cb);
	else
		uv_poll_stop(&fp->poll);
}

/* Frees dead watches; closes the fd's poll handle when none is left. */
static void fd_sweep(struct fd_poll *fp)
{
	AvahiWatch **pp = &fp->watches;
	while (*pp) {
		if ((*pp)->dead) {
			AvahiWatch *w = *pp;
			*pp = w->next;
			free(w);
		} else {
			pp = &(*pp)->next;
		}
	}
	if (fp->watches) {
		fd_update(fp);
		return;
	}
	struct fd_poll **q = &fp->owner->fds;
	while (*q && *q != fp)
		q = &(*q)->next;
	if (*q)
		*q = fp->next;
	uv_poll_stop(&fp->poll);
	uv_close((uv_handle_t *)&fp->poll, free_on_close);
}

static void fd_cb(uv_poll_t *h, int status, int events)
{
	struct fd_poll *fp = h->data;
	AvahiWatchEvent e = 0;
	if (status < 0)
		e |= AVAHI_WATCH_ERR;
	if (events & UV_READABLE)
		e |= AVAHI_WATCH_IN;
	if (events & UV_WRITABLE)
		e |= AVAHI_WATCH_OUT;
	if (events & UV_DISCONNECT)
		e |= AVAHI_WATCH_HUP;
	fp->dispatching++;
	for (AvahiWatch *w = fp->watches; w; w = w->next) {
		AvahiWatchEvent mine = e & (w->events | AVAHI_WATCH_ERR | AVAHI_WATCH_HUP);
		if (w->dead || !mine)
			continue;
		w->revents = mine;
		w->cb(w, fp->fd, mine, w->userdata);
		w->revents = 0;
	}
	if (--fp->dispatching == 0)
		fd_sweep(fp);
}

static AvahiWatch *watch_new(const AvahiPoll *api, int fd, AvahiWatchEvent event,
			     AvahiWatchCallback cb, void *userdata)
{
	struct mdns_poll *p = api->userdata;
	struct fd_poll *fp = p->fds;
	while (fp && fp->fd != fd)
		fp = fp->next;
	if (!fp) {
		fp = xcalloc(1, sizeof *fp);
		if (uv_poll_init(p->loop, &fp->poll, fd) != 0) {
			free(fp);
			return NULL;
		}
		fp->poll.data = fp;
		fp->fd = fd;
		fp->owner = p;
		fp->next = p->fds;
		p->fds = fp;
	}
	AvahiWatch *w = xcalloc(1, sizeof *w);
	w->fp = fp;
	w->cb = cb;
	w->userdata = userdata;
	w->events = event;
	w->next = fp->watches;
	fp->watches = w;
	fd_update(fp);
	return w;
}

static void watch_update(AvahiWatch *w, AvahiWatchEvent event)
{
	w->events = event;
	fd_update(w->fp);
}

static AvahiWatchEvent watch_get_events(AvahiWatch *w)
{
	return w->revents;
}

static void watch_free(AvahiWatch *w)
{
	w->dead = true;
	if (!w->fp->dispatching)
		fd_sweep(w->fp);
}

static void timeout_cb(uv_timer_t *t)
{
	AvahiTimeout *to = t->data;
	to->cb(to, to->userdata);
}

/* avahi passes absolute wall-clock times; NULL disables the timeout. */
static void timeout_arm(AvahiTimeout *to, const struct timeval *tv)
{
	uv_timer_stop(&to->timer);
	if (!tv)
		return;
	struct timeval now;
	gettimeofday(&now, NULL);
	int64_t ms = (int64_t)(tv->tv_sec - now.tv_sec) * 1000 +
		     (int64_t)(tv->tv_usec - now.tv_usec) / 1000;
	uv_timer_start(&to->timer, timeout_cb, ms > 0 ? (uint64_t)ms : 0, 0);
}

static AvahiTimeout *timeout_new(const AvahiPoll *api, const struct timeval *tv,
				 AvahiTimeoutCallback cb, void *userdata)
{
	struct mdns_poll *p = api->userdata;
	AvahiTimeout *to = xcalloc(1, sizeof *to);
	to->cb = cb;
	to->userdata = userdata;
	uv_timer_init(p->loop, &to->timer);
	to->timer.data = to;
	timeout_arm(to, tv);
	return to;
}

static void timeout_update(AvahiTimeout *to, const struct timeval *tv)
{
	timeout_arm(to, tv);
}

static void timeout_free(AvahiTimeout *to)
{
	uv_timer_stop(&to->timer);
	uv_close((uv_handle_t *)&to->timer, free_on_close);
}

struct mdns_poll *mdns_poll_new(uv_loop_t *loop)
{
	struct mdns_poll *p = xcalloc(1, sizeof *p);
	p->loop = loop;
	p->api.userdata = p;
	p->api.watch_new = watch_new;
	p->api.watch_update = watch_update;
	p->api.watch_get_events = watch_get_events;
	p->api.watch_free = watch_free;
	p->api.timeout_new = timeout_new;
	p->api.timeout_update = timeout_update;
	p->api.timeout_free = timeout_free;
	return p;
}

void mdns_poll_free(struct mdns_poll *p)
{
	free(p);
}

const void *mdns_poll_api(struct mdns_poll *p)
{
	return &p->api;
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
	log_warn(LOG_COMP, "mDNS advertisement unavailable (%s: %s); the room serves anyway, "
		 "clients can use SPACE_URL", what, avahi_strerror(error));
}

static void add_service(struct mdns_publisher *pub, AvahiClient *c);

static void rename_after_collision(struct mdns_publisher *pub, AvahiClient *c)
{
	char *alt = avahi_alternative_service_name(pub->name);
	log_warn(LOG_COMP, "service name '%s' is taken on the network; using '%s'", pub->name,
		 alt);
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
	int rc = avahi_entry_group_add_service(pub->group, AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC,
					       0, pub->name, pub->type, NULL, NULL,
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

struct mdns_publisher *mdns_publish_start(uv_loop_t *loop, const char *instance,
					  const char *type, int port, struct ga_err *err)
{
	if (!instance || !*instance || !type || port < 0 || port > 65535) {
		err_set(err, "mDNS: an instance name, a service type and a port are required");
		return NULL;
	}
	struct mdns_publisher *pub = xcalloc(1, sizeof *pub);
	pub->poll = mdns_poll_new(loop);
	pub->name = xstrdup(instance);
	/* The reference replaces dots (they would split the DNS label). */
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
