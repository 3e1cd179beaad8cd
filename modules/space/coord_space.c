/*
 * modules/coord/coord_space.c — claims through the agent-space room's own
 * `claim` messages (space-protocol.md §3.7): the room records the first
 * claim of action:target and answers a later claimant, and only it, with
 * "Claim conflict — <owner> and <claimant> both claimed <target>. <owner>
 * claimed first." A claim is therefore ours once the room had time to say
 * otherwise: the settle time. See coord.h for the rules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/space/client.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/coord/coord_impl.h"
#include "modules/space/coord_space.h"
#include "modules/space/link.h"

enum sc_state {
	SC_SETTLING, /* sent; the room may still say conflict */
	SC_HELD,     /* ours until ttl_end */
};

struct sc_entry {
	char *key, *action, *target;
	enum sc_state st;
	int64_t settle_end, ttl_end;
	coord_claim_fn cb; /* while settling: the claim's or the renewal's */
	void *ud;
	bool renewal;
	/* When we first sent the claim we then won (epoch ms): what our
	 * renewals tell the room as "since"; 0 until the first send. */
	int64_t since_ms;
};

struct coord_space {
	struct coord base;
	struct space_link *link;
	struct coord_table *counts;
	/* claims made in process before the first join (coord_space_set_alone);
	 * NULL when the room is required */
	struct coord_table *alone;
	bool joined_once; /* a room was joined: alone no more */
	struct sc_entry e[SPACE_LINK_MAX_CLAIMS];
	size_t n;
	int64_t settle_ms;
	uv_timer_t timer;
};

static int split(const char *key, char **action, char **target)
{
	const char *colon = strchr(key, ':');
	if (!colon || colon == key || !colon[1])
		return -1;
	*action = xstrndup(key, (size_t)(colon - key));
	*target = xstrdup(colon + 1);
	return 0;
}

static struct sc_entry *find(struct coord_space *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->e[i].key, key) == 0)
			return &s->e[i];
	return NULL;
}

static void drop(struct coord_space *s, struct sc_entry *e)
{
	free(e->key);
	free(e->action);
	free(e->target);
	*e = s->e[--s->n];
}

static void arm(struct coord_space *s);

/* Was a room ever joined? The link's client (its join count) is gone
 * while the daemon stops: then what was seen last stands. */
static bool ever_joined(const struct coord_space *s)
{
	if (s->joined_once || space_link_joined(s->link))
		return true;
	const struct spc_client *cl = space_link_client(s->link);
	struct spc_client_stats st = {0};
	if (cl)
		spc_client_stats(cl, &st);
	return st.joins > 0;
}

/* Claims are made in process: alone is on and no room was ever joined (a
 * room joined once is the shared backend, and out of it claims fail
 * closed). */
static bool claims_alone(struct coord_space *s)
{
	if (!s->alone)
		return false;
	s->joined_once = ever_joined(s);
	return !s->joined_once;
}

#define ALONE_WHY                                                                                  \
	"local: no shared coordination backend (no REDIS_URL, no SPACE_URL, no room joined): "     \
	"claimed in this process"

/* A claim or renewal in the in-process table (claims_alone). */
static void claim_alone(struct coord *c, struct coord_space *s, const char *key, int64_t ttl_ms,
                        bool renewal, coord_claim_fn cb, void *ud)
{
	const char *holder = NULL;
	int r = renewal ? coord_table_renew(s->alone, key, c->agent_id, ttl_ms, coord_now_ms(),
	                                    &holder)
	                : coord_table_claim(s->alone, key, c->agent_id, ttl_ms, coord_now_ms(),
	                                    &holder);
	if (r > 0)
		coord_defer_claim(c, cb, ud, COORD_WON, NULL, ALONE_WHY);
	else if (r == 0)
		coord_defer_claim(c, cb, ud, COORD_HELD, holder, "local: already held");
	else
		coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL, "local: table full");
}

static void settle_done(struct coord_space *s, struct sc_entry *e, int64_t now)
{
	struct coord *c = &s->base;
	coord_claim_fn cb = e->cb;
	void *ud = e->ud;
	e->cb = NULL;
	if (!space_link_joined(s->link)) {
		space_link_release(s->link, e->action, e->target, false, NULL, "left the room");
		drop(s, e);
		coord_answer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL,
		                   "space: left the agent-space room before the claim settled");
		return;
	}
	if (!space_link_holds(s->link, e->action, e->target)) {
		/* The link dropped it on a conflict nobody passed on to us. */
		const char *h = space_link_claim_holder(s->link, e->action, e->target);
		char *holder = h ? xstrdup(h) : NULL;
		drop(s, e);
		coord_answer_claim(c, cb, ud, COORD_HELD, holder,
		                   "space: the room gave the claim to another member");
		free(holder);
		return;
	}
	e->st = SC_HELD;
	log_kv(LOG_LEVEL_DEBUG, COORD_LOG, "space claim settled", "key", e->key, "renewal",
	       e->renewal ? "yes" : "no", "ttl_left_ms", LOG_INT(e->ttl_end - now));
	coord_answer_claim(c, cb, ud, COORD_WON, NULL,
	                   e->renewal ? "space: renewed; the room raised no conflict"
	                              : "space: claimed; the room raised no conflict");
}

/* One due entry at a time, scanning again after each: a callback may claim
 * or release and so reorder the table. */
static void on_timer(uv_timer_t *t)
{
	struct coord_space *s = (struct coord_space *)t->data;
	for (;;) {
		int64_t now = coord_now_ms();
		struct sc_entry *due = NULL;
		for (size_t i = 0; i < s->n && !due; i++) {
			struct sc_entry *e = &s->e[i];
			if ((e->st == SC_SETTLING && e->settle_end <= now) ||
			    (e->st == SC_HELD && e->ttl_end <= now))
				due = e;
		}
		if (!due)
			break;
		if (due->st == SC_SETTLING) {
			settle_done(s, due, now);
			if (s->base.closing)
				return;
		} else {
			log_kv(LOG_LEVEL_INFO, COORD_LOG, "space claim expired", "key", due->key);
			space_link_release(s->link, due->action, due->target, false, NULL,
			                   "claim expired");
			drop(s, due);
		}
	}
	arm(s);
}

static void arm(struct coord_space *s)
{
	if (s->base.closing)
		return;
	int64_t next = INT64_MAX;
	for (size_t i = 0; i < s->n; i++) {
		int64_t d = s->e[i].st == SC_SETTLING ? s->e[i].settle_end : s->e[i].ttl_end;
		if (d < next)
			next = d;
	}
	if (next == INT64_MAX) {
		uv_timer_stop(&s->timer);
		return;
	}
	int64_t wait = next - coord_now_ms();
	uv_timer_start(&s->timer, on_timer, wait > 0 ? (uint64_t)wait : 0, 0);
}

/* Sends the claim (a new one or a renewal) and starts settling. A renewal
 * carries the time of the first claim, so that a room which lost it (we
 * left and rejoined) records and shows the claim's own time. */
static int send_claim(struct coord_space *s, struct sc_entry *e, int64_t ttl_ms, char *why,
                      size_t cap)
{
	struct ga_err err = {{0}};
	int64_t sent_at = time_now_ms();
	if (space_link_claim(s->link, e->action, e->target, e->since_ms, &err) < 0) {
		err_fmt(why, cap, "space: %s", err.msg);
		return -1;
	}
	if (!e->since_ms)
		e->since_ms = sent_at;
	int64_t now = coord_now_ms();
	e->st = SC_SETTLING;
	e->settle_end = now + s->settle_ms;
	e->ttl_end = now + ttl_ms;
	arm(s);
	return 0;
}

static int space_claim(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb,
                       void *ud)
{
	struct coord_space *s = (struct coord_space *)c;
	char *action, *target;
	if (split(key, &action, &target) < 0)
		return -1;
	if (!coord_pending_take(c)) {
		free(action);
		free(target);
		return -1;
	}
	char why[GA_ERR_MSG_MAX + 16];
	const char *holder;
	if (claims_alone(s)) {
		claim_alone(c, s, key, ttl_ms, false, cb, ud);
	} else if (!space_link_joined(s->link)) {
		coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL,
		                  "space: not in the agent-space room");
	} else if (find(s, key)) {
		coord_defer_claim(c, cb, ud, COORD_HELD, c->agent_id,
		                  "space: already claimed by us");
	} else if (space_link_holds(s->link, action, target) && s->n < SPACE_LINK_MAX_CLAIMS) {
		/* The link holds it already — claimed with the words that
		 * promised the work: it is ours, and from now on this table
		 * renews it and releases it with the outcome (else the claim
		 * would linger until its TTL, and a room that dropped it on
		 * another member's action_result would see it claimed anew). */
		struct sc_entry *e = &s->e[s->n++];
		*e = (struct sc_entry){.key = xstrdup(key),
		                       .action = action,
		                       .target = target,
		                       .st = SC_HELD,
		                       .ttl_end = coord_now_ms() + ttl_ms};
		arm(s);
		coord_defer_claim(c, cb, ud, COORD_HELD, c->agent_id,
		                  "space: already claimed by us (with the words that promised it)");
		return 0;
	} else if ((holder = space_link_claim_holder(s->link, action, target))) {
		err_fmt(why, sizeof why, "space: %s holds the room's claim on %s", holder, key);
		coord_defer_claim(c, cb, ud, COORD_HELD, holder, why);
	} else if (s->n == SPACE_LINK_MAX_CLAIMS) {
		err_fmt(why, sizeof why, "space: already holding %d claims", SPACE_LINK_MAX_CLAIMS);
		coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL, why);
	} else {
		struct sc_entry *e = &s->e[s->n];
		memset(e, 0, sizeof *e);
		e->key = xstrdup(key);
		e->action = action;
		e->target = target;
		e->cb = cb;
		e->ud = ud;
		s->n++; /* before send_claim, whose timer looks at the table */
		if (send_claim(s, e, ttl_ms, why, sizeof why) == 0)
			return 0;
		s->n--;
		free(e->key);
		coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL, why);
	}
	free(action);
	free(target);
	return 0;
}

static int space_renew(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb,
                       void *ud)
{
	struct coord_space *s = (struct coord_space *)c;
	char *action, *target;
	if (split(key, &action, &target) < 0)
		return -1;
	if (!coord_pending_take(c)) {
		free(action);
		free(target);
		return -1;
	}
	char why[GA_ERR_MSG_MAX + 16];
	struct sc_entry *e = find(s, key);
	if (claims_alone(s)) {
		claim_alone(c, s, key, ttl_ms, true, cb, ud);
	} else if (!space_link_joined(s->link)) {
		coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL,
		                  "space: not in the agent-space room");
	} else if (!e) {
		const char *holder = space_link_claim_holder(s->link, action, target);
		coord_defer_claim(c, cb, ud, COORD_HELD, holder,
		                  holder ? "space: another member holds the claim"
		                         : "space: no live claim of ours to renew");
	} else if (e->st == SC_SETTLING) {
		coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL,
		                  "space: the claim is still settling; renew after it is won");
	} else {
		e->cb = cb;
		e->ud = ud;
		e->renewal = true;
		if (send_claim(s, e, ttl_ms, why, sizeof why) < 0) {
			e->cb = NULL;
			coord_defer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL, why);
		}
	}
	free(action);
	free(target);
	return 0;
}

static int space_release(struct coord *c, const char *key, bool success, const char *link,
                         const char *error)
{
	struct coord_space *s = (struct coord_space *)c;
	struct sc_entry *e = find(s, key);
	if (s->alone)
		coord_table_release(s->alone, key, c->agent_id, coord_now_ms());
	if (!e)
		return 0; /* not ours: the room's claim (if any) is left alone */
	if (e->cb)
		coord_defer_claim(c, e->cb, e->ud, COORD_UNAVAILABLE, NULL,
		                  "space: released before the claim settled");
	log_kv(LOG_LEVEL_DEBUG, COORD_LOG, "space release", "key", key, "success",
	       LOG_BOOL(success), "link", link ? link : "", "error", error ? error : "");
	space_link_release(s->link, e->action, e->target, success, link, error);
	drop(s, e);
	arm(s);
	return 0;
}

static int space_count(struct coord *c, const char *key, int64_t window_ms, coord_count_fn cb,
                       void *ud)
{
	struct coord_space *s = (struct coord_space *)c;
	if (!coord_pending_take(c))
		return -1;
	coord_defer_count(c, cb, ud, coord_table_count(s->counts, key, window_ms, coord_now_ms()));
	return 0;
}

void coord_space_claim_lost(struct coord *c, const char *action, const char *target,
                            const char *holder)
{
	if (!c || c->closing || strcmp(c->ops->name, "space") != 0 || !action || !target)
		return;
	struct coord_space *s = (struct coord_space *)c;
	for (size_t i = 0; i < s->n; i++) {
		struct sc_entry *e = &s->e[i];
		if (strcmp(e->action, action) != 0 || strcmp(e->target, target) != 0)
			continue;
		coord_claim_fn cb = e->cb;
		void *ud = e->ud;
		log_kv(LOG_LEVEL_INFO, COORD_LOG, "space claim lost", "key", e->key, "holder",
		       holder ? holder : "", "state", e->st == SC_SETTLING ? "settling" : "held");
		drop(s, e);
		arm(s);
		if (cb) {
			char why[400];
			err_fmt(why, sizeof why, "space: the room gave the claim to %s first",
			        holder && *holder ? holder : "another member");
			coord_answer_claim(c, cb, ud, COORD_HELD, holder, why);
		}
		return;
	}
}

void coord_space_set_alone(struct coord *c, bool alone)
{
	if (!c || strcmp(c->ops->name, "space") != 0)
		return;
	struct coord_space *s = (struct coord_space *)c;
	if (alone && !s->alone)
		s->alone = coord_table_new(COORD_LOCAL_MAX_KEYS);
	else if (!alone) {
		coord_table_free(s->alone);
		s->alone = NULL;
	}
}

void coord_space_set_settle_ms(struct coord *c, int64_t ms)
{
	if (c && strcmp(c->ops->name, "space") == 0 && ms >= 0)
		((struct coord_space *)c)->settle_ms = ms;
}

static void space_describe(const struct coord *c, char *buf, size_t cap)
{
	const struct coord_space *s = (const struct coord_space *)c;
	if (s->alone && !ever_joined(s)) {
		err_fmt(buf, cap,
		        "local (no shared backend: no REDIS_URL, no SPACE_URL, no room joined; "
		        "claims in this process until a room is joined — a fleet needs a room or "
		        "Redis)");
		return;
	}
	err_fmt(buf, cap, "space (%s; %zu claims of ours, settle %lld ms)",
	        space_link_joined(s->link) ? "in the room" : "not in the room", s->n,
	        (long long)s->settle_ms);
}

static void space_shutdown(struct coord *c)
{
	struct coord_space *s = (struct coord_space *)c;
	while (s->n) {
		struct sc_entry *e = &s->e[s->n - 1];
		coord_claim_fn cb = e->cb;
		void *ud = e->ud;
		space_link_release(s->link, e->action, e->target, false, NULL, "shutting down");
		drop(s, e);
		if (cb)
			coord_answer_claim(c, cb, ud, COORD_UNAVAILABLE, NULL, NULL);
	}
	space_link_watch_claims(s->link, NULL, NULL);
	uv_timer_stop(&s->timer);
	coord_handle_close(c, (uv_handle_t *)&s->timer);
}

static void space_destroy(struct coord *c)
{
	coord_table_free(((struct coord_space *)c)->counts);
	coord_table_free(((struct coord_space *)c)->alone);
}

static const struct coord_ops space_ops = {
        .name = "space",
        .claim = space_claim,
        .renew = space_renew,
        .release = space_release,
        .count = space_count,
        .describe = space_describe,
        .shutdown = space_shutdown,
        .destroy = space_destroy,
};

/* The link's "Claim conflict" for one of our claims. */
static void lost(void *ud, const char *action, const char *target, const char *holder)
{
	coord_space_claim_lost(ud, action, target, holder);
}

struct coord *coord_new_space(uv_loop_t *loop, struct space_link *link, const char *agent_id)
{
	if (!loop || !link || !agent_id || !*agent_id)
		return NULL;
	struct coord_space *s = xcalloc(1, sizeof *s);
	coord_base_init(&s->base, &space_ops, loop, agent_id);
	s->link = link;
	s->settle_ms = COORD_SPACE_SETTLE_MS;
	s->counts = coord_table_new(COORD_LOCAL_MAX_KEYS);
	uv_timer_init(loop, &s->timer);
	coord_handle_open(&s->base, (uv_handle_t *)&s->timer);
	space_link_watch_claims(link, lost, &s->base);
	return &s->base;
}
