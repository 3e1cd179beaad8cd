/*
 * adapters/space/tunables — defaults and GA_SPACE_* overrides. See
 * tunables.h.
 */
#include "adapters/space/tunables.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define LOG_COMP "space"

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

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!s || !*s)
		return -1;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	errno = 0;
	unsigned long long v = strtoull(s, NULL, 10);
	if (errno || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int spc_tunables_parse_backoff(struct spc_tunables *t, const char *list)
{
	uint64_t steps[SPC_MAX_BACKOFF_STEPS];
	size_t n = 0;
	char buf[256];
	if (!list || strlen(list) >= sizeof buf)
		return -1;
	snprintf(buf, sizeof buf, "%s", list);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		char *end = tok + strlen(tok);
		while (end > tok && end[-1] == ' ')
			*--end = '\0';
		if (n == SPC_MAX_BACKOFF_STEPS ||
		    parse_u64(tok, 1, SPC_TUNABLE_MAX_MS, &steps[n]) != 0)
			return -1;
		n++;
	}
	if (n == 0)
		return -1;
	memcpy(t->backoff_ms, steps, n * sizeof steps[0]);
	t->nbackoff = n;
	return 0;
}

static int env_ms(const char *var, uint64_t min, uint64_t *field)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	if (parse_u64(v, min, SPC_TUNABLE_MAX_MS, field) == 0)
		return 0;
	log_kv(LOG_LEVEL_WARN, LOG_COMP, "ignoring an invalid tunable; keeping the default", "var",
	       var, "value", v, "expected",
	       min ? "an integer number of milliseconds, at least 1" : "an integer >= 0");
	return 1;
}

int spc_tunables_from_env(struct spc_tunables *t)
{
	int bad = 0;
	bad += env_ms("GA_SPACE_MDNS_TIMEOUT_MS", 1, &t->mdns_timeout_ms);
	bad += env_ms("GA_SPACE_DISCOVERY_RETRY_MS", 1, &t->discovery_retry_ms);
	bad += env_ms("GA_SPACE_CONNECT_TIMEOUT_MS", 1, &t->connect_timeout_ms);
	bad += env_ms("GA_SPACE_PING_MS", 1, &t->ping_ms);
	bad += env_ms("GA_SPACE_CLOSE_WAIT_MS", 0, &t->close_wait_ms);
	bad += env_ms("GA_SPACE_REPLACED_WINDOW_MS", 1, &t->replaced_window_ms);
	uint64_t v = t->jitter_pct;
	const char *s = getenv("GA_SPACE_JITTER_PCT");
	if (s && parse_u64(s, 0, 100, &v) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "ignoring an invalid tunable; keeping the default",
		       "var", "GA_SPACE_JITTER_PCT", "value", s, "expected", "0..100");
		bad++;
	}
	t->jitter_pct = (unsigned)v;
	v = t->replaced_limit;
	s = getenv("GA_SPACE_REPLACED_LIMIT");
	if (s && parse_u64(s, 1, 1000, &v) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "ignoring an invalid tunable; keeping the default",
		       "var", "GA_SPACE_REPLACED_LIMIT", "value", s, "expected", "1..1000");
		bad++;
	}
	t->replaced_limit = (unsigned)v;
	s = getenv("GA_SPACE_BACKOFF_MS");
	if (s && spc_tunables_parse_backoff(t, s) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "ignoring an invalid tunable; keeping the default",
		       "var", "GA_SPACE_BACKOFF_MS", "value", s, "expected",
		       "1 to 8 comma-separated positive millisecond values");
		bad++;
	}
	s = getenv("GA_SPACE_MDNS");
	if (s) {
		if (strcmp(s, "0") == 0)
			t->mdns = false;
		else if (strcmp(s, "1") == 0)
			t->mdns = true;
		else {
			log_kv(LOG_LEVEL_WARN, LOG_COMP,
			       "ignoring an invalid tunable; keeping the default", "var",
			       "GA_SPACE_MDNS", "value", s, "expected", "0 or 1");
			bad++;
		}
	}
	s = getenv("GA_SPACE_LOCALHOST_URL");
	if (s) {
		struct spc_url u;
		struct ga_err err = {{0}};
		if (spc_url_parse(s, &u, &err) == 0 && strlen(s) < sizeof t->localhost_url) {
			snprintf(t->localhost_url, sizeof t->localhost_url, "%s", s);
		} else {
			log_kv(LOG_LEVEL_WARN, LOG_COMP,
			       "ignoring an invalid tunable; keeping the default", "var",
			       "GA_SPACE_LOCALHOST_URL", "value", s, "problem", err.msg);
			bad++;
		}
	}
	return bad;
}

uint64_t spc_backoff_delay(const struct spc_tunables *t, unsigned attempt, uint64_t rnd)
{
	size_t n = t->nbackoff ? t->nbackoff : 1;
	uint64_t step = t->nbackoff ? t->backoff_ms[attempt < n ? attempt : n - 1] : 5000;
	uint64_t span = step / 100 * t->jitter_pct + (step % 100) * t->jitter_pct / 100;
	return step + rnd % (span + 1);
}
