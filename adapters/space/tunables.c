/*
 * adapters/space/tunables — defaults and the configured GA_SPACE_* values. See
 * tunables.h.
 */
#include "adapters/space/tunables.h"

#include <stdio.h>
#include <string.h>

void spc_tunables_default(struct spc_tunables *t)
{
	memset(t, 0, sizeof *t);
	t->mdns_timeout_ms = 10000;
	t->mdns = true;
	snprintf(t->localhost_url, sizeof t->localhost_url, "%s", SPC_DEFAULT_LOCALHOST_URL);
	t->discovery_retry_ms = 300000;
	static const uint64_t steps[] = {5000, 10000, 20000, 60000};
	t->nbackoff = sizeof steps / sizeof steps[0];
	memcpy(t->backoff_ms, steps, sizeof steps);
	t->jitter_pct = 20;
	t->connect_timeout_ms = 10000;
	t->ping_ms = 30000;
	t->close_wait_ms = 1000;
	t->replaced_limit = 3;
	t->replaced_window_ms = 600000;
}

int spc_tunables_parse_backoff(struct spc_tunables *t, const char *list)
{
	return config_parse_ms_list(list, t->backoff_ms, SPC_MAX_BACKOFF_STEPS, &t->nbackoff);
}

void spc_tunables_from_config(struct spc_tunables *t, const struct config_space_tunables *c)
{
	if (!c)
		return;
	/* config_load() validated every value set; below zero = not set. */
	if (c->mdns_timeout_ms >= 0)
		t->mdns_timeout_ms = (uint64_t)c->mdns_timeout_ms;
	if (c->mdns >= 0)
		t->mdns = c->mdns != 0;
	if (c->localhost_url && strlen(c->localhost_url) < sizeof t->localhost_url)
		snprintf(t->localhost_url, sizeof t->localhost_url, "%s", c->localhost_url);
	if (c->mdns_name && strlen(c->mdns_name) < sizeof t->mdns_name)
		snprintf(t->mdns_name, sizeof t->mdns_name, "%s", c->mdns_name);
	if (c->discovery_retry_ms >= 0)
		t->discovery_retry_ms = (uint64_t)c->discovery_retry_ms;
	if (c->nbackoff > 0 && c->nbackoff <= SPC_MAX_BACKOFF_STEPS) {
		memcpy(t->backoff_ms, c->backoff_ms, c->nbackoff * sizeof t->backoff_ms[0]);
		t->nbackoff = c->nbackoff;
	}
	if (c->jitter_pct >= 0)
		t->jitter_pct = (unsigned)c->jitter_pct;
	if (c->connect_timeout_ms >= 0)
		t->connect_timeout_ms = (uint64_t)c->connect_timeout_ms;
	if (c->ping_ms >= 0)
		t->ping_ms = (uint64_t)c->ping_ms;
	if (c->close_wait_ms >= 0)
		t->close_wait_ms = (uint64_t)c->close_wait_ms;
	if (c->replaced_limit >= 0)
		t->replaced_limit = (unsigned)c->replaced_limit;
	if (c->replaced_window_ms >= 0)
		t->replaced_window_ms = (uint64_t)c->replaced_window_ms;
}

uint64_t spc_backoff_delay(const struct spc_tunables *t, unsigned attempt, uint64_t rnd)
{
	size_t n = t->nbackoff ? t->nbackoff : 1;
	uint64_t step = t->nbackoff ? t->backoff_ms[attempt < n ? attempt : n - 1] : 5000;
	uint64_t span = step / 100 * t->jitter_pct + (step % 100) * t->jitter_pct / 100;
	return step + rnd % (span + 1);
}
