/*
 * adapters/space/tunables — the timing knobs of discovery and the
 * connection, in one place, with the protocol's usual values as defaults
 * (space-protocol.md §6.3) and GA_SPACE_* overrides so tests can run the
 * same code in milliseconds instead of minutes. The overrides are read like
 * every other setting, from the environment or the home's .env, by
 * config_load() (common/config.h: struct config_space_tunables), which
 * validates them: a bad value is a configuration error naming the variable.
 *
 *   GA_SPACE_MDNS_TIMEOUT_MS      10000   how long an mDNS browse waits
 *   GA_SPACE_MDNS                 1       0 skips the mDNS step entirely
 *   GA_SPACE_MDNS_NAME            (any)   only the room advertised under
 *                                         this instance name (its
 *                                         SPACE_NAME); unset: the first
 *   GA_SPACE_LOCALHOST_URL        ws://localhost:7777   the last resort
 *   GA_SPACE_DISCOVERY_RETRY_MS   300000  rediscovery while not connected
 *   GA_SPACE_BACKOFF_MS           5000,10000,20000,60000  reconnect delays;
 *                                 the last one repeats
 *   GA_SPACE_JITTER_PCT           20      each delay plus 0..N % of itself
 *   GA_SPACE_CONNECT_TIMEOUT_MS   10000   TCP connect + upgrade + join echo
 *   GA_SPACE_PING_MS              30000   client ping period; no frame for
 *                                         two periods = a dead connection
 *   GA_SPACE_CLOSE_WAIT_MS        1000    at stop, wait this long for the
 *                                         server's close frame
 *   GA_SPACE_REPLACED_LIMIT       3       replacements (close 4002) ...
 *   GA_SPACE_REPLACED_WINDOW_MS   600000  ... within this window = give up
 *
 */
#ifndef GA_ADAPTERS_SPACE_TUNABLES_H
#define GA_ADAPTERS_SPACE_TUNABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/space/wire.h"
#include "common/config.h"

#define SPC_DEFAULT_LOCALHOST_URL "ws://localhost:7777"
#define SPC_MAX_BACKOFF_STEPS     CONFIG_SPACE_BACKOFF_MAX
/* No tunable may exceed a day: a typo must not park the agent for years. */
#define SPC_TUNABLE_MAX_MS CONFIG_MAX_MS

struct spc_tunables {
	uint64_t mdns_timeout_ms;
	bool mdns;
	char localhost_url[SPC_URL_MAX];
	char mdns_name[CONFIG_SPACE_MDNS_NAME_MAX]; /* "": the first room found */
	uint64_t discovery_retry_ms;
	uint64_t backoff_ms[SPC_MAX_BACKOFF_STEPS];
	size_t nbackoff;
	unsigned jitter_pct;
	uint64_t connect_timeout_ms;
	uint64_t ping_ms;
	uint64_t close_wait_ms;
	unsigned replaced_limit;
	uint64_t replaced_window_ms;
};

void spc_tunables_default(struct spc_tunables *t);
/* Applies the values set in c (config_load validated them); fields not set
 * keep what t holds. c may be NULL (nothing set). */
void spc_tunables_from_config(struct spc_tunables *t, const struct config_space_tunables *c);
/* Parses "5000,10000,20000" into t (1..SPC_MAX_BACKOFF_STEPS positive
 * values). -1 on anything else, t unchanged. */
int spc_tunables_parse_backoff(struct spc_tunables *t, const char *list);
/* The delay before reconnect attempt number `attempt` (0 = first): the
 * step (the last one repeats) plus rnd % (step * jitter_pct / 100 + 1). */
uint64_t spc_backoff_delay(const struct spc_tunables *t, unsigned attempt, uint64_t rnd);

#endif
