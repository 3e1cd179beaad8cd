/*
 * svc_github — GitHub conversations as a daemon service (cmd/services.h):
 * modules/ghconv polled every GHCONV_POLL_MS ± 12 % by the scheduler
 * ("github-awareness", spec §0.3 and §4.2).
 *
 * Off (start returns NULL, "not configured") without the shared GitHub
 * client (no token, or --social-only: the daemon makes none then), in
 * --social-only mode whatever else is set, without a model or without the
 * pipeline. AGENT_GITHUB_USERNAME is required: without it the agent cannot
 * tell its own comments or its mentions, so the service refuses to start
 * and says so.
 *
 * Timing knobs, read from the process environment (for tests and for a
 * person who wants the agent quicker or slower on GitHub):
 *   GA_GITHUB_POLL_MS          the notification poll, 1000..86400000
 *                              (default 120000);
 *   GA_GITHUB_STAGGER_MIN_MS   the response delay's lower end, 0..3600000
 *                              (default 15000);
 *   GA_GITHUB_STAGGER_SPAN_MS  its range, 0..3600000 (default 75000).
 * A value out of range or not a number stops the service with an error
 * naming the variable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/github.h"
#include "cmd/services.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "modules/ghconv/ghconv.h"
#include "modules/scheduler/sched.h"

#define SVC_FIRST_POLL_MAX_MS 5000 /* the first look soon after start (§0.3) */

struct svc_github {
	struct ghconv *g;
	void (*ctx_offer)(void *ud, struct ghconv *g); /* offered to the daemon */
	void *ctx_ud;
	struct gh_client *gh;
};

/* getenv(name) as an integer in [lo, hi], or def when unset. -1 with err. */
static void poll_done(void *job)
{
	sched_job_done(job);
}

static void poll_run(struct sched_job *job, void *ud)
{
	struct svc_github *s = ud;
	ghconv_poll(s->g, poll_done, job);
}

static void poll_stop(struct sched_job *job, void *ud)
{
	(void)job;
	struct svc_github *s = ud;
	ghconv_quiesce(s->g); /* ends the poll in flight: its done is called */
}

static void *start(const struct ga_svc_ctx *ctx, struct ga_err *err)
{
	if (!ctx->github || ctx->social_only || !ctx->llm || !ctx->pipeline || !ctx->sched)
		return NULL;
	if (!ctx->cfg->github_username || !*ctx->cfg->github_username) {
		err_set(err,
		        "GitHub conversations need AGENT_GITHUB_USERNAME (the agent's login) to "
		        "recognise its own comments and its mentions");
		return NULL;
	}
	int64_t poll, smin, sspan;
	if (ga_svc_env_ms(ctx, "GA_GITHUB_POLL_MS", 1000, 86400000, GHCONV_POLL_MS, &poll, err) ||
	    ga_svc_env_ms(ctx, "GA_GITHUB_STAGGER_MIN_MS", 0, 3600000, GHCONV_STAGGER_MIN_MS, &smin,
	                  err) ||
	    ga_svc_env_ms(ctx, "GA_GITHUB_STAGGER_SPAN_MS", 0, 3600000, GHCONV_STAGGER_SPAN_MS,
	                  &sspan, err))
		return NULL;
	struct ghconv_config c = {
	        .loop = ctx->loop,
	        .gh = ctx->github,
	        .pipeline = ctx->pipeline,
	        .outbound = ctx->outbound,
	        .llm = ctx->llm,
	        .budget = ctx->budget,
	        .skills = ctx->skills,
	        .ledger = ctx->ledger,
	        .st = ctx->st,
	        .agent_name = ctx->cfg->agent_name,
	        .login = ctx->cfg->github_username,
	        .api_url = ctx->cfg->github_api_url,
	        .soul_text = ctx->soul_text,
	        .self = ctx->self,
	        .stagger_min_ms = smin,
	        .stagger_span_ms = sspan,
	        .fatal = ctx->fatal,
	        .ud = ctx->ud,
	};
	struct svc_github *s = xcalloc(1, sizeof *s);
	s->gh = ctx->github;
	s->g = ghconv_new(&c, err);
	if (!s->g) {
		free(s);
		return NULL;
	}
	struct sched_job_opts o = {
	        .name = "github-awareness",
	        .interval_ms = (uint64_t)poll,
	        .jitter_pct = GHCONV_POLL_JITTER,
	        .first_delay_ms =
	                (uint64_t)(poll < SVC_FIRST_POLL_MAX_MS ? poll : SVC_FIRST_POLL_MAX_MS),
	        .run = poll_run,
	        .on_stop = poll_stop,
	        .ud = s};
	if (!sched_add(ctx->sched, &o)) {
		ghconv_free(s->g);
		free(s);
		err_set(err, "the github-awareness job could not be scheduled");
		return NULL;
	}
	s->ctx_offer = ctx->offer_ghconv;
	s->ctx_ud = ctx->ud;
	if (s->ctx_offer)
		s->ctx_offer(s->ctx_ud, s->g);
	log_kv(LOG_LEVEL_INFO, "ghconv", "GitHub conversations on", "login",
	       ctx->cfg->github_username, "poll_ms", LOG_INT(poll), "stagger_ms", LOG_INT(smin));
	return s;
}

static cJSON *status(void *svc)
{
	struct svc_github *s = svc;
	cJSON *o = ghconv_status(s->g);
	struct gh_bucket b;
	if (gh_rate_snapshot(s->gh, "core", &b) == 0) {
		cJSON *r = cJSON_AddObjectToObject(o, "rateBudget");
		cJSON_AddNumberToObject(r, "limit", (double)b.limit);
		cJSON_AddNumberToObject(r, "remaining", (double)b.remaining);
		cJSON_AddNumberToObject(r, "resetMs", (double)b.reset_ms);
	} else {
		cJSON_AddNullToObject(o, "rateBudget");
	}
	return o;
}

static void quiesce(void *svc)
{
	struct svc_github *s = svc;
	ghconv_quiesce(s->g);
}

static void svc_free(void *svc)
{
	struct svc_github *s = svc;
	if (s->ctx_offer)
		s->ctx_offer(s->ctx_ud, NULL);
	ghconv_free(s->g);
	free(s);
}

const struct ga_service svc_github = {
        .name = "github",
        .start = start,
        .status = status,
        .quiesce = quiesce,
        .free = svc_free,
};
