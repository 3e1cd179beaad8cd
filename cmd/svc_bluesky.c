/*
 * svc_bluesky — the agent's life on Bluesky plugged into the daemon
 * (services.h; modules/bluesky/bsky.h; adapters/atproto).
 *
 * start: nothing when Bluesky is not configured (AGENT_BLUESKY_USERNAME /
 * AGENT_BLUESKY_PASSWORD missing: off, not an error). Otherwise the AT
 * Protocol client on the shared HTTP client (session persisted in
 * <memory>/bluesky_session.json), the Bluesky outbound port
 * (modules/bluesky/port.h, wrapped by bsky_port_init for the post pacing;
 * the reply refs come from the pipeline source's reply_extra hook), the
 * commitment ledger (§6.12: promises in replies), and the engine's jobs on
 * the scheduler. A refused app password is fatal for the
 * Bluesky side only: logged, and the owner is told. The engine is offered
 * to the daemon (ctx->offer_bsky) while it runs: the workspace says a
 * completed plan in the thread it came from through it.
 *
 * Timing knobs for tests (milliseconds, 0..86400000, 0 or unset = the
 * default; read through ga_svc_env_ms: the environment, then .env; an
 * invalid value stops the service with a message naming it):
 * GA_BLUESKY_AWARENESS_MS (45 s), GA_BLUESKY_FEED_MS (15 min),
 * GA_BLUESKY_PEERS_MS (3 min), GA_BLUESKY_EXPRESSION_MS (the expression
 * check, 5 min), GA_BLUESKY_RITUAL_MS (the ritual check and its first
 * delay: 30 / 10 min), GA_BLUESKY_PACE_MS (every per-type pacing gap),
 * GA_BLUESKY_MIN_INTERVAL_MS (outbound's spacing on Bluesky, 10 s),
 * GA_BLUESKY_SPACING_MS (the client's request spacing, 5 s).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/atproto/atproto.h"
#include "cmd/services.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "modules/bluesky/bsky.h"
#include "modules/bluesky/port.h"
#include "modules/outbound/outbound.h"

struct svc_bsky {
	struct atp_client *atp;
	struct bsky *engine;
	void (*ctx_offer)(void *ud, struct bsky *b); /* offered to the daemon */
	void *ctx_ud;
};

static void *bsky_svc_start(const struct ga_svc_ctx *ctx, struct ga_err *err)
{
	const struct ga_config *cfg = ctx->cfg;
	if (!cfg->bsky_username || !*cfg->bsky_username || !cfg->bsky_password ||
	    !*cfg->bsky_password)
		return NULL; /* not configured: off */
	if (!ctx->outbound || !ctx->pipeline) {
		err_set(err,
		        "Bluesky needs the outbound stage and the pipeline, and one of them could "
		        "not start (see the errors above)");
		return NULL;
	}
	/* the tunables (mainly for tests): 0 = the module's default */
	static const char *const names[] = {
	        "GA_BLUESKY_SPACING_MS", "GA_BLUESKY_AWARENESS_MS",   "GA_BLUESKY_FEED_MS",
	        "GA_BLUESKY_PEERS_MS",   "GA_BLUESKY_EXPRESSION_MS",  "GA_BLUESKY_RITUAL_MS",
	        "GA_BLUESKY_PACE_MS",    "GA_BLUESKY_MIN_INTERVAL_MS"};
	enum { SPACING, AWARENESS, FEED, PEERS, EXPRESSION, RITUAL, PACE, MIN_INTERVAL, NT };
	int64_t t[NT];
	for (int i = 0; i < NT; i++)
		if (ga_svc_env_ms(ctx, names[i], 0, 86400000, 0, &t[i], err) != 0)
			return NULL;
	struct atp_config ac;
	if (atp_config_from_ga(cfg, &ac, err) < 0)
		return NULL;
	if (t[SPACING] > 0)
		ac.spacing_ms = (unsigned)t[SPACING];
	struct svc_bsky *s = xcalloc(1, sizeof *s);
	s->atp = atp_client_new(ctx->http, &ac);
	atp_config_free(&ac);
	struct bsky_config bc = {
	        .loop = ctx->loop,
	        .atp = s->atp,
	        .pipeline = ctx->pipeline,
	        .outbound = ctx->outbound,
	        .journal = ctx->journal,
	        .ledger = ctx->ledger,
	        .llm = ctx->llm,
	        .budget = ctx->budget,
	        .skills = ctx->skills,
	        .self = ctx->self,
	        .soul_text = ctx->soul_text,
	        .self_path = ctx->self_path,
	        .st = ctx->st,
	        .sched = ctx->sched,
	        .agent_name = cfg->agent_name,
	        .owner_did = cfg->owner_did,
	        .owner_handle = cfg->owner_handle,
	        .github_username = cfg->github_username,
	        .social_only = ctx->social_only,
	        .awareness_ms = (uint64_t)t[AWARENESS],
	        .feed_ms = (uint64_t)t[FEED],
	        .peers_ms = (uint64_t)t[PEERS],
	        .expression_ms = (uint64_t)t[EXPRESSION],
	        .ritual_ms = (uint64_t)t[RITUAL],
	        .pace_ms = t[PACE],
	};
	s->engine = bsky_new(&bc, err);
	if (!s->engine) {
		atp_client_free(s->atp);
		free(s);
		return NULL;
	}
	struct outbound_port inner, port;
	atp_port_init(&inner, s->atp, (uint64_t)t[MIN_INTERVAL]);
	bsky_port_init(s->engine, &port, &inner);
	if (outbound_add_port(ctx->outbound, &port, err) < 0 || bsky_start(s->engine, err) < 0) {
		bsky_free(s->engine);
		atp_client_free(s->atp);
		free(s);
		return NULL;
	}
	s->ctx_offer = ctx->offer_bsky;
	s->ctx_ud = ctx->ud;
	if (s->ctx_offer)
		s->ctx_offer(s->ctx_ud, s->engine);
	return s;
}

static cJSON *bsky_svc_status(void *obj)
{
	struct svc_bsky *s = obj;
	cJSON *o = bsky_status(s->engine);
	struct atp_stats st;
	atp_client_stats(s->atp, &st);
	cJSON_AddNumberToObject(o, "requests", (double)st.requests);
	cJSON_AddNumberToObject(o, "logins", (double)st.create_sessions);
	cJSON_AddNumberToObject(o, "refreshes", (double)st.refreshes);
	cJSON_AddNumberToObject(o, "rateLimited", (double)st.rate_limited);
	if (st.last_error[0])
		cJSON_AddStringToObject(o, "lastError", st.last_error);
	return o;
}

static void bsky_svc_quiesce(void *obj)
{
	struct svc_bsky *s = obj;
	bsky_quiesce(s->engine);
}

static void bsky_svc_free(void *obj)
{
	struct svc_bsky *s = obj;
	if (!s)
		return;
	if (s->ctx_offer)
		s->ctx_offer(s->ctx_ud, NULL);
	/* the client first: its cancelled calls still find the engine */
	atp_client_free(s->atp);
	bsky_free(s->engine);
	free(s);
}

const struct ga_service svc_bluesky = {
        .name = "bluesky",
        .start = bsky_svc_start,
        .status = bsky_svc_status,
        .quiesce = bsky_svc_quiesce,
        .free = bsky_svc_free,
};
