/*
 * modules/coord/coord.c — the public calls (argument checks, then the
 * backend), the deferred answers, handle bookkeeping for coord_close, and
 * the bounded in-process table the local and space backends use.
 */
#include "modules/coord/coord.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/coord/coord_impl.h"

#define SHUTTING_DOWN "shutting down"

struct coord_deferred {
	struct coord_deferred *next;
	bool is_count;
	coord_claim_fn cb;
	coord_count_fn ccb;
	void *ud;
	enum coord_result r;
	char *holder, *why;
	int64_t count;
};

const char *coord_result_name(enum coord_result r)
{
	switch (r) {
	case COORD_WON:
		return "won";
	case COORD_HELD:
		return "held";
	case COORD_UNAVAILABLE:
		return "unavailable";
	}
	return "unknown";
}

int64_t coord_now_ms(void)
{
	return (int64_t)(uv_hrtime() / 1000000u);
}

/* --- handles ---------------------------------------------------------------------------------- */

static void finish(struct coord *c)
{
	void (*done)(void *) = c->done;
	void *ud = c->done_ud;
	if (c->ops->destroy)
		c->ops->destroy(c);
	free(c->agent_id);
	free(c);
	if (done)
		done(ud);
}

static void on_handle_closed(uv_handle_t *h)
{
	coord_handle_closed(h->data);
}

void coord_handle_open(struct coord *c, uv_handle_t *h)
{
	h->data = c;
	c->nhandles++;
}

void coord_handle_close(struct coord *c, uv_handle_t *h)
{
	h->data = c;
	uv_close(h, on_handle_closed);
}

void coord_handle_closed(struct coord *c)
{
	if (--c->nhandles == 0 && c->closing)
		finish(c);
}

/* --- deferred answers ------------------------------------------------------------------------- */

static void deliver(struct coord *c, struct coord_deferred *d)
{
	c->npending--;
	if (d->is_count)
		d->ccb(d->ud, c->closing ? -1 : d->count);
	else if (c->closing)
		d->cb(d->ud, COORD_UNAVAILABLE, NULL, SHUTTING_DOWN);
	else
		d->cb(d->ud, d->r, d->holder, d->why);
	free(d->holder);
	free(d->why);
	free(d);
}

static void flush_deferred(struct coord *c)
{
	/* Answers queued by callbacks run here wait for the next round. */
	struct coord_deferred *d = c->dhead;
	c->dhead = c->dtail = NULL;
	while (d) {
		struct coord_deferred *next = d->next;
		deliver(c, d);
		d = next;
	}
}

static void on_defer(uv_timer_t *t)
{
	flush_deferred(t->data);
}

static void enqueue(struct coord *c, struct coord_deferred *d)
{
	if (c->dtail)
		c->dtail->next = d;
	else
		c->dhead = d;
	c->dtail = d;
	if (!c->closing && !uv_is_active((uv_handle_t *)&c->defer_timer))
		uv_timer_start(&c->defer_timer, on_defer, 0, 0);
}

void coord_defer_claim(struct coord *c, coord_claim_fn cb, void *ud, enum coord_result r,
                       const char *holder, const char *why)
{
	struct coord_deferred *d = xcalloc(1, sizeof *d);
	d->cb = cb;
	d->ud = ud;
	d->r = r;
	d->holder = holder ? xstrdup(holder) : NULL;
	d->why = xstrdup(why ? why : "");
	enqueue(c, d);
}

void coord_defer_count(struct coord *c, coord_count_fn cb, void *ud, int64_t count)
{
	struct coord_deferred *d = xcalloc(1, sizeof *d);
	d->is_count = true;
	d->ccb = cb;
	d->ud = ud;
	d->count = count;
	enqueue(c, d);
}

void coord_answer_claim(struct coord *c, coord_claim_fn cb, void *ud, enum coord_result r,
                        const char *holder, const char *why)
{
	c->npending--;
	if (c->closing)
		cb(ud, COORD_UNAVAILABLE, NULL, SHUTTING_DOWN);
	else
		cb(ud, r, holder, why ? why : "");
}

void coord_answer_count(struct coord *c, coord_count_fn cb, void *ud, int64_t count)
{
	c->npending--;
	cb(ud, c->closing ? -1 : count);
}

bool coord_pending_take(struct coord *c)
{
	if (c->npending >= COORD_MAX_PENDING) {
		log_kv(LOG_LEVEL_WARN, COORD_LOG, "request refused: too many pending", "backend",
		       c->ops->name, "pending", LOG_INT(c->npending));
		return false;
	}
	c->npending++;
	return true;
}

void coord_base_init(struct coord *c, const struct coord_ops *ops, uv_loop_t *loop,
                     const char *agent_id)
{
	c->ops = ops;
	c->loop = loop;
	c->agent_id = xstrdup(agent_id);
	uv_timer_init(loop, &c->defer_timer);
	coord_handle_open(c, (uv_handle_t *)&c->defer_timer);
}

/* --- the public calls ------------------------------------------------------------------------- */

static bool key_ok(const char *key)
{
	if (!key || !*key || key[0] == ' ')
		return false;
	size_t n = strlen(key);
	if (n > COORD_MAX_KEY)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)key[i];
		if (ch < 0x20 || ch == 0x7f)
			return false;
	}
	return true;
}

static bool usable(const struct coord *c)
{
	return c && !c->closing;
}

int coord_claim(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb, void *ud)
{
	if (!usable(c) || !key_ok(key) || ttl_ms <= 0 || !cb)
		return -1;
	return c->ops->claim(c, key, ttl_ms, cb, ud);
}

int coord_renew(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb, void *ud)
{
	if (!usable(c) || !key_ok(key) || ttl_ms <= 0 || !cb)
		return -1;
	return c->ops->renew(c, key, ttl_ms, cb, ud);
}

int coord_release(struct coord *c, const char *key)
{
	return coord_release_result(c, key, true, NULL, NULL);
}

/* s cut to at most COORD_RESULT_TEXT_MAX bytes without splitting a UTF-8
 * sequence (the room refuses invalid UTF-8). Caller frees; NULL for NULL. */
static char *result_text(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strnlen(s, COORD_RESULT_TEXT_MAX + 1);
	return xstrndup(s, utf8_cut(s, n, COORD_RESULT_TEXT_MAX));
}

int coord_release_result(struct coord *c, const char *key, bool success, const char *link,
                         const char *error)
{
	if (!usable(c) || !key_ok(key))
		return -1;
	char *l = result_text(link), *e = result_text(error);
	int rc = c->ops->release(c, key, success, l, e);
	free(l);
	free(e);
	return rc;
}

int coord_count(struct coord *c, const char *key, int64_t window_ms, coord_count_fn cb, void *ud)
{
	if (!usable(c) || !key_ok(key) || window_ms <= 0 || !cb)
		return -1;
	return c->ops->count(c, key, window_ms, cb, ud);
}

const char *coord_name(const struct coord *c)
{
	return c ? c->ops->name : "none";
}

enum coord_choice coord_choose(const char *redis_url, const char *space_url, char *why, size_t cap)
{
	enum coord_choice ch = redis_url && *redis_url   ? COORD_CHOICE_REDIS
	                       : space_url && *space_url ? COORD_CHOICE_ROOM
	                                                 : COORD_CHOICE_ALONE;
	if (why && cap)
		err_fmt(why, cap, "%s",
		        ch == COORD_CHOICE_REDIS
		                ? "Redis (REDIS_URL): claims shared with every agent on it; "
		                  "peers' messages are not answered while it cannot be reached"
		        : ch == COORD_CHOICE_ROOM
		                ? "the room's claims (SPACE_URL): peers' messages are not "
		                  "answered while out of the room"
		                : "no shared backend (no REDIS_URL, no SPACE_URL): claims in "
		                  "this process until a room found by discovery is joined; run "
		                  "a fleet with a room or Redis");
	return ch;
}

void coord_describe(const struct coord *c, char *buf, size_t cap)
{
	if (!cap)
		return;
	if (!c) {
		err_fmt(buf, cap, "none");
		return;
	}
	c->ops->describe(c, buf, cap);
}

void coord_close(struct coord *c, void (*done)(void *ud), void *ud)
{
	if (!c || c->closing)
		return;
	c->closing = true;
	c->done = done;
	c->done_ud = ud;
	/* Closed first: libuv runs the close callbacks of one round last-closed
	 * first, so the defer timer's — and with it `done` — comes after every
	 * handle the backend closes below (hiredis closes its poll handle
	 * without telling us). */
	uv_timer_stop(&c->defer_timer);
	coord_handle_close(c, (uv_handle_t *)&c->defer_timer);
	flush_deferred(c);
	c->ops->shutdown(c);
}

/* --- the in-process table ----------------------------------------------------------------------
 */

struct coord_entry {
	char *key;
	char *owner; /* NULL for a counter */
	int64_t count;
	int64_t expiry; /* monotonic ms */
};

struct coord_table {
	struct coord_entry *e;
	size_t n, max;
};

struct coord_table *coord_table_new(size_t max)
{
	struct coord_table *t = xcalloc(1, sizeof *t);
	t->max = max;
	t->e = xcalloc(max, sizeof *t->e);
	return t;
}

void coord_table_free(struct coord_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].key);
		free(t->e[i].owner);
	}
	free(t->e);
	free(t);
}

static void entry_drop(struct coord_table *t, size_t i)
{
	free(t->e[i].key);
	free(t->e[i].owner);
	t->e[i] = t->e[--t->n];
}

/* The live entry for key; an expired one is dropped on the way. A linear
 * scan: the table is bounded (COORD_LOCAL_MAX_KEYS) and consulted once per
 * peer message or budgeted event. */
static struct coord_entry *lookup(struct coord_table *t, const char *key, int64_t now)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->e[i].key, key) != 0)
			continue;
		if (t->e[i].expiry <= now) {
			entry_drop(t, i);
			return NULL;
		}
		return &t->e[i];
	}
	return NULL;
}

/* A fresh entry; expired ones are evicted when the table is full. NULL when
 * every entry is live. */
static struct coord_entry *insert(struct coord_table *t, const char *key, int64_t now)
{
	if (t->n == t->max)
		for (size_t i = t->n; i-- > 0;)
			if (t->e[i].expiry <= now)
				entry_drop(t, i);
	if (t->n == t->max)
		return NULL;
	struct coord_entry *e = &t->e[t->n++];
	memset(e, 0, sizeof *e);
	e->key = xstrdup(key);
	return e;
}

int coord_table_claim(struct coord_table *t, const char *key, const char *owner, int64_t ttl_ms,
                      int64_t now, const char **holder)
{
	struct coord_entry *e = lookup(t, key, now);
	if (e) {
		*holder = e->owner;
		return 0;
	}
	e = insert(t, key, now);
	if (!e)
		return -1;
	e->owner = xstrdup(owner);
	e->expiry = now + ttl_ms;
	return 1;
}

int coord_table_renew(struct coord_table *t, const char *key, const char *owner, int64_t ttl_ms,
                      int64_t now, const char **holder)
{
	struct coord_entry *e = lookup(t, key, now);
	*holder = e ? e->owner : NULL;
	if (!e || strcmp(e->owner, owner) != 0)
		return 0;
	e->expiry = now + ttl_ms;
	return 1;
}

int coord_table_release(struct coord_table *t, const char *key, const char *owner, int64_t now)
{
	struct coord_entry *e = lookup(t, key, now);
	if (!e || strcmp(e->owner, owner) != 0)
		return 0;
	entry_drop(t, (size_t)(e - t->e));
	return 1;
}

int64_t coord_table_count(struct coord_table *t, const char *key, int64_t window_ms, int64_t now)
{
	struct coord_entry *e = lookup(t, key, now);
	if (!e) {
		e = insert(t, key, now);
		if (!e)
			return -1;
		e->expiry = now + window_ms;
	}
	return ++e->count;
}

size_t coord_table_live(const struct coord_table *t, int64_t now)
{
	size_t live = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->e[i].expiry > now)
			live++;
	return live;
}
