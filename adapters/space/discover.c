/*
 * adapters/space/discover — SPACE_URL, then mDNS, then localhost. See
 * discover.h.
 */
#include "adapters/space/discover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/mdns/browse.h"
#include "common/log.h"
#include "common/xalloc.h"

#define LOG_COMP "space"

struct spc_disc {
	struct spc_tunables t;
	uv_timer_t later; /* delivers a result decided without waiting */
	struct mdns_browser *browser;
	spc_disc_fn cb;
	void *ud;
	char url[SPC_URL_MAX];
	enum spc_disc_source src;
	bool cancelled;
};

const char *spc_disc_source_name(enum spc_disc_source s)
{
	switch (s) {
	case SPC_DISC_SPACE_URL:
		return "SPACE_URL";
	case SPC_DISC_MDNS:
		return "mDNS";
	case SPC_DISC_LOCALHOST:
		return "localhost";
	}
	return "?";
}

char *spc_disc_url_for(const char *host, const char *address, int port, char *out)
{
	if (address && *address && !strchr(address, ':'))
		snprintf(out, SPC_URL_MAX, "ws://%s:%d", address, port);
	else if (address && *address && strncasecmp(address, "fe80:", 5) != 0)
		snprintf(out, SPC_URL_MAX, "ws://[%s]:%d", address, port);
	else
		snprintf(out, SPC_URL_MAX, "ws://%s:%d", host && *host ? host : "localhost", port);
	return out;
}

static void on_later(uv_timer_t *h)
{
	struct spc_disc *d = h->data;
	if (!d->cancelled)
		d->cb(d->ud, d->url, d->src);
}

static void deliver(struct spc_disc *d, const char *url, enum spc_disc_source src)
{
	snprintf(d->url, sizeof d->url, "%s", url);
	d->src = src;
	uv_timer_start(&d->later, on_later, 0, 0);
}

static void fallback(struct spc_disc *d)
{
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "discovery: falling back to the default room", "url",
	       d->t.localhost_url);
	deliver(d, d->t.localhost_url, SPC_DISC_LOCALHOST);
}

static void on_browse(void *ud, const struct mdns_found *f, const char *why_not)
{
	struct spc_disc *d = ud;
	mdns_browse_stop(d->browser);
	d->browser = NULL;
	if (!f) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "discovery: mDNS found no room", "why", why_not);
		fallback(d);
		return;
	}
	char url[SPC_URL_MAX];
	spc_disc_url_for(f->host, f->address, f->port, url);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "discovery: mDNS found a room", "instance", f->instance,
	       "host", f->host, "address", f->address, "port", LOG_INT(f->port), "local",
	       f->local ? "yes" : "no", "url", url);
	deliver(d, url, SPC_DISC_MDNS);
}

struct spc_disc *spc_disc_start(uv_loop_t *loop, const char *space_url,
                                const struct spc_tunables *t, spc_disc_fn cb, void *ud)
{
	struct spc_disc *d = xcalloc(1, sizeof *d);
	d->t = *t;
	d->cb = cb;
	d->ud = ud;
	uv_timer_init(loop, &d->later);
	d->later.data = d;
	if (space_url && *space_url) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "discovery: SPACE_URL is set; using it", "url",
		       space_url);
		deliver(d, space_url, SPC_DISC_SPACE_URL);
		return d;
	}
	if (!t->mdns) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "discovery: SPACE_URL not set; mDNS is off",
		       "GA_SPACE_MDNS", "0");
		fallback(d);
		return d;
	}
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "discovery: SPACE_URL not set; browsing mDNS", "type",
	       MDNS_SPACE_SERVICE_TYPE, "name", t->mdns_name[0] ? t->mdns_name : "(any)",
	       "timeout_ms", LOG_INT(t->mdns_timeout_ms));
	struct ga_err err = {{0}};
	d->browser = mdns_browse_start(loop, MDNS_SPACE_SERVICE_TYPE, t->mdns_name,
	                               t->mdns_timeout_ms, on_browse, d, &err);
	if (!d->browser) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "discovery: mDNS browse not possible", "why",
		       err.msg);
		fallback(d);
	}
	return d;
}

static void free_on_close(uv_handle_t *h)
{
	free(h->data);
}

void spc_disc_cancel(struct spc_disc *d)
{
	if (!d || d->cancelled)
		return;
	d->cancelled = true;
	mdns_browse_stop(d->browser);
	d->browser = NULL;
	uv_timer_stop(&d->later);
	uv_close((uv_handle_t *)&d->later, free_on_close);
}
