/*
 * adapters/mdns/uvpoll — AvahiPoll on libuv. See uvpoll.h.
 */
#include "adapters/mdns/uvpoll.h"

#include <stdbool.h>
#include <stdlib.h>
#include <sys/time.h>

#include "common/xalloc.h"

struct fd_poll;

struct mdns_uvpoll {
	AvahiPoll api; /* avahi hands back &api; api.userdata points here */
	uv_loop_t *loop;
	struct fd_poll *fds;
};

/* libuv allows one poll handle per file descriptor, but D-Bus watches the
 * same socket twice (for reading and for writing): watches on one fd share
 * a uv_poll_t and are dispatched from it. */
struct fd_poll {
	uv_poll_t poll;
	int fd;
	struct mdns_uvpoll *owner;
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
	AvahiWatchEvent revents; /* seen during the current callback */
	bool dead;
};

struct AvahiTimeout {
	uv_timer_t timer;
	AvahiTimeoutCallback cb;
	void *userdata;
};

static int to_uv(AvahiWatchEvent e)
{
	return ((e & AVAHI_WATCH_IN) ? UV_READABLE : 0) | ((e & AVAHI_WATCH_OUT) ? UV_WRITABLE : 0);
}

static void free_data_on_close(uv_handle_t *h)
{
	free(h->data);
}

static void on_fd(uv_poll_t *h, int status, int events);

static void fd_update(struct fd_poll *fp)
{
	AvahiWatchEvent want = 0;
	for (AvahiWatch *w = fp->watches; w; w = w->next)
		if (!w->dead)
			want |= w->events;
	if (to_uv(want))
		uv_poll_start(&fp->poll, to_uv(want) | UV_DISCONNECT, on_fd);
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
	uv_close((uv_handle_t *)&fp->poll, free_data_on_close);
}

static void on_fd(uv_poll_t *h, int status, int events)
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
	struct mdns_uvpoll *p = api->userdata;
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

static void on_timeout(uv_timer_t *t)
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
	uv_timer_start(&to->timer, on_timeout, ms > 0 ? (uint64_t)ms : 0, 0);
}

static AvahiTimeout *timeout_new(const AvahiPoll *api, const struct timeval *tv,
                                 AvahiTimeoutCallback cb, void *userdata)
{
	struct mdns_uvpoll *p = api->userdata;
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
	uv_close((uv_handle_t *)&to->timer, free_data_on_close);
}

struct mdns_uvpoll *mdns_uvpoll_new(uv_loop_t *loop)
{
	struct mdns_uvpoll *p = xcalloc(1, sizeof *p);
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

void mdns_uvpoll_free(struct mdns_uvpoll *p)
{
	free(p);
}

const AvahiPoll *mdns_uvpoll_api(struct mdns_uvpoll *p)
{
	return &p->api;
}
