/*
 * svc_workspace — the work loop as a daemon service (cmd/services.h):
 * modules/workspace's plan-awareness cycle every WSP_CYCLE_MS ± 12 % on the
 * scheduler ("plan-awareness", spec §3.6), the owner's workspace tools
 * routed to it, the engine offered to the commitments (a create_workspace
 * from the room), the room told of each plan's state. Wiring only.
 *
 * Off (start returns NULL, "not configured") without the shared GitHub
 * client (no token) or in --social-only mode, without outbound or the
 * journal (no exactly-once). AGENT_GITHUB_USERNAME is required. Without a
 * usable coder (CODER_COMMAND unset, or its configuration wrong: the
 * service's status says why, `general-agent doctor` too) plans are read,
 * shown and told to the room, and no task is claimed.
 *
 * Where things live: the git mirrors in <memory>/git (shared with the
 * GitHub port, which pushes from them), the task clones in
 * <memory>/tasks.
 *
 * Knobs (environment or .env): WORKSPACE_PREFIX (default "www-lil-intdev-"),
 * WORKSPACE_TEMPLATE ("owner/name", default internet-development/www-sacred),
 * WORKSPACE_ORG (default internet-development); for tests and operators in
 * a hurry GA_WS_CYCLE_MS (1000..86400000), GA_WS_CLAIM_TTL_MS
 * (1000..3600000), GA_WS_ORPHAN_MS (1000..86400000; also the stuck-task
 * time), GA_WS_HANDLED_MS and GA_WS_STALE_MS (1000..31536000000: issue
 * hygiene), GA_REVIEW_TIMEOUT_MS (1000..604800000: no review this long
 * after the request → the next reviewer, or the owner), GA_MAX_REVISIONS
 * (0..10: coder runs after changes were requested; 0 none).
 *
 * A merge and a completed plan are said in the room (pipeline_say, keyed:
 * once); a completed plan that came from Bluesky in its thread as well
 * (bsky_thread_say, keyed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/git/git.h"
#include "cmd/services.h"
#include "common/fsx.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "modules/bluesky/bsky.h"
#include "modules/coder/coder.h"
#include "modules/ghconv/ghconv.h"
#include "modules/github/port.h"
#include "modules/pipeline/pipeline.h"
#include "modules/reflection/voice.h"
#include "modules/scheduler/sched.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/workspace.h"

#define SVC_FIRST_CYCLE_MAX_MS 5000

struct svc_ws {
	struct ga_svc_ctx ctx;
	struct wsp *ws;
	struct git_ctx git;
	bool have_git;
	struct coder_config coder;
	char coder_error[GA_ERR_MSG_MAX];
	struct voice *voice;
	struct sched_job *job;
	uv_timer_t poke;
	char *work_root;
};

static struct coord *coord_of(void *ud)
{
	struct svc_ws *s = ud;
	return s->ctx.coord ? s->ctx.coord(s->ctx.ud) : NULL;
}

static struct conv_store *store_of(void *ud)
{
	struct svc_ws *s = ud;
	return s->ctx.pipeline ? pipeline_store(s->ctx.pipeline) : NULL;
}

static bool paused(void *ud)
{
	struct svc_ws *s = ud;
	return s->ctx.pipeline && pipeline_paused(s->ctx.pipeline);
}

static int room_state(void *ud, const cJSON *state)
{
	struct svc_ws *s = ud;
	return s->ctx.room_workspace_state ? s->ctx.room_workspace_state(s->ctx.ud, state) : -1;
}

static size_t room_agents(void *ud, const char **out, size_t cap)
{
	struct svc_ws *s = ud;
	return s->ctx.room_logins ? s->ctx.room_logins(s->ctx.ud, out, cap) : 0;
}

static void notify(void *ud, const char *text)
{
	struct svc_ws *s = ud;
	if (s->ctx.notify_owner)
		s->ctx.notify_owner(s->ctx.ud, text);
}

/* The room hears a merge or a plan complete; id keys it ("say:<id>"). */
static int room_say(void *ud, const char *text, const char *key)
{
	struct svc_ws *s = ud;
	char target[PIPELINE_TARGET_MAX];
	if (!s->ctx.pipeline || !s->ctx.room_target ||
	    s->ctx.room_target(s->ctx.ud, target, sizeof target) != 0)
		return -1;
	return pipeline_say(s->ctx.pipeline, CONV_PLATFORM_SPACE, target, "workspace", text,
	                    strlen(text), -1, key, NULL, NULL);
}

/* A plan that came from Bluesky is announced in its thread (bsky_thread_say). */
static int thread_say(void *ud, const char *thread, const char *text, const char *key)
{
	struct svc_ws *s = ud;
	struct bsky *b = s->ctx.bsky ? s->ctx.bsky(s->ctx.ud) : NULL;
	if (!b)
		log_kv(LOG_LEVEL_INFO, "workspace", "not said in the thread: Bluesky is off",
		       "thread", thread);
	return b ? bsky_thread_say(b, "workspace", thread, text, key) : -1;
}

/* A review asked of us (the designated or the next reviewer) goes to
 * the GitHub conversations, which dedup and walk it through the pipeline. */
static void review(void *ud, const char *owner, const char *repo, int64_t pr, const char *head)
{
	struct svc_ws *s = ud;
	struct ghconv *g = s->ctx.ghconv ? s->ctx.ghconv(s->ctx.ud) : NULL;
	if (g)
		ghconv_review(g, owner, repo, pr, head);
}

/* The open-issue scan's issues go to the GitHub conversations, which
 * walk them like a notification's thread. */
static enum wsp_consider consider(void *ud, const char *owner, const char *repo, int64_t number,
                                  int64_t updated_ms)
{
	struct svc_ws *s = ud;
	struct ghconv *g = s->ctx.ghconv ? s->ctx.ghconv(s->ctx.ud) : NULL;
	if (!g)
		return WSP_CONSIDER_LATER;
	switch (ghconv_consider_issue(g, owner, repo, number, updated_ms)) {
	case GHCONV_CONSIDER_QUEUED:
		return WSP_CONSIDER_QUEUED;
	case GHCONV_CONSIDER_DECIDED:
		return WSP_CONSIDER_DECIDED;
	case GHCONV_CONSIDER_LATER:
		break;
	}
	return WSP_CONSIDER_LATER;
}

static void poke_fire(uv_timer_t *t)
{
	struct svc_ws *s = t->data;
	if (s->job)
		sched_job_trigger(s->job);
}

/* A cycle soon, from the loop (never inside the call that asked). */
static void poke(void *ud)
{
	struct svc_ws *s = ud;
	uv_timer_start(&s->poke, poke_fire, 50, 0);
}

static void poke_closed(uv_handle_t *h)
{
	free(h->data);
}

static int route(void *ud, const char *action, const cJSON *params, struct compose_call *call)
{
	struct svc_ws *s = ud;
	return wsp_tool_call(s->ws, action, params, WSP_SOURCE_OWNER, "owner:terminal", call);
}

static void cycle_done(void *job)
{
	sched_job_done(job);
}

static void cycle_run(void *ud, struct sched_job *job)
{
	struct svc_ws *s = ud;
	wsp_cycle(s->ws, cycle_done, job);
}

static void cycle_stop(void *ud, struct sched_job *job)
{
	(void)job;
	struct svc_ws *s = ud;
	wsp_quiesce(s->ws);
}

static const char *env_or(const struct ga_svc_ctx *ctx, const char *name)
{
	return ctx->env ? ctx->env(ctx->ud, name) : getenv(name);
}

/* A count from the environment: 0..hi, def when unset. */
static int env_count(const struct ga_svc_ctx *ctx, const char *name, int64_t hi, int64_t def,
                     int64_t *out, struct ga_err *err)
{
	const char *v = env_or(ctx, name);
	*out = def;
	if (!v || !*v)
		return 0;
	char *end;
	long long n = strtoll(v, &end, 10);
	if (*end || n < 0 || n > hi)
		return err_set(err,
		               "%s=\"%.40s\" is invalid: expected a whole number from 0 to %lld",
		               name, v, (long long)hi);
	*out = n;
	return 0;
}

static void *start(const struct ga_svc_ctx *ctx, struct ga_err *err)
{
	if (!ctx->github || ctx->social_only || !ctx->outbound || !ctx->journal || !ctx->sched)
		return NULL;
	if (!ctx->cfg->github_username || !*ctx->cfg->github_username) {
		err_set(err,
		        "workspaces need AGENT_GITHUB_USERNAME (the agent's login): claims and "
		        "markers name it");
		return NULL;
	}
	int64_t cycle, ttl, orphan, handled, stale, review_timeout, revisions;
	if (ga_svc_env_ms(ctx, "GA_WS_CYCLE_MS", 1000, 86400000, WSP_CYCLE_MS, &cycle, err) ||
	    ga_svc_env_ms(ctx, "GA_WS_CLAIM_TTL_MS", 1000, 3600000, WSP_CLAIM_TTL_MS, &ttl, err) ||
	    ga_svc_env_ms(ctx, "GA_WS_ORPHAN_MS", 1000, 86400000, WSP_ORPHAN_MS, &orphan, err) ||
	    ga_svc_env_ms(ctx, "GA_WS_HANDLED_MS", 1000, 31536000000LL, WSP_HANDLED_MS, &handled,
	                  err) ||
	    ga_svc_env_ms(ctx, "GA_WS_STALE_MS", 1000, 31536000000LL, WSP_STALE_MS, &stale, err) ||
	    ga_svc_env_ms(ctx, "GA_REVIEW_TIMEOUT_MS", 1000, 604800000, WSP_REVIEW_TIMEOUT_MS,
	                  &review_timeout, err) ||
	    env_count(ctx, "GA_MAX_REVISIONS", 10, WSP_MAX_REVISIONS, &revisions, err))
		return NULL;
	struct svc_ws *s = xcalloc(1, sizeof *s);
	s->ctx = *ctx;
	struct ga_err cerr = {{0}};
	if (coder_config_load(ctx->env_file, ctx->cfg->home, ctx->cfg->memory_dir, &s->coder,
	                      &cerr) != 0) {
		snprintf(s->coder_error, sizeof s->coder_error, "%s", cerr.msg);
		log_kv(LOG_LEVEL_ERROR, "workspace", "the coder is not usable: no task work",
		       "error", cerr.msg);
		coder_config_free(&s->coder);
		memset(&s->coder, 0, sizeof s->coder);
	}
	char *cache = fsx_join(ctx->cfg->memory_dir, GH_PORT_GIT_DIR);
	s->work_root = fsx_join(ctx->cfg->memory_dir, WSP_WORK_DIR);
	if (git_ctx_init(&s->git, ctx->loop, cache, &cerr) == 0)
		s->have_git = true;
	else
		log_kv(LOG_LEVEL_ERROR, "workspace", "no git cache: no task work", "error",
		       cerr.msg);
	free(cache);
	if (fsx_mkdir_p(s->work_root, &cerr) != 0)
		log_kv(LOG_LEVEL_ERROR, "workspace", "the task directory cannot be made", "error",
		       cerr.msg);
	if (ctx->self_path) {
		char *path = voice_path_beside(ctx->self_path);
		s->voice = voice_open(path);
		free(path);
	}
	struct wsp_config c = {.loop = ctx->loop,
	                       .gh = ctx->github,
	                       .outbound = ctx->outbound,
	                       .journal = ctx->journal,
	                       .st = ctx->st,
	                       .dlog = ctx->dlog,
	                       .coord = coord_of,
	                       .git = s->have_git ? &s->git : NULL,
	                       .work_root = s->work_root,
	                       .coder = &s->coder,
	                       .skills = ctx->skills,
	                       .voice = s->voice,
	                       .login = ctx->cfg->github_username,
	                       .agent_name = ctx->cfg->agent_name,
	                       .api_url = ctx->cfg->github_api_url,
	                       .token = ctx->cfg->github_token,
	                       .prefix = env_or(ctx, "WORKSPACE_PREFIX"),
	                       .template_repo = env_or(ctx, "WORKSPACE_TEMPLATE"),
	                       .default_org = env_or(ctx, "WORKSPACE_ORG"),
	                       .claim_ttl_ms = ttl,
	                       .orphan_ms = orphan,
	                       .handled_ms = handled,
	                       .stale_ms = stale,
	                       .llm = ctx->llm,
	                       .budget = ctx->budget,
	                       .ledger = ctx->ledger,
	                       .store = store_of,
	                       .paused = paused,
	                       .room_state = room_state,
	                       .notify_owner = notify,
	                       .poke = poke,
	                       .room_say = room_say,
	                       .thread_say = thread_say,
	                       .review = review,
	                       .consider = consider,
	                       .room_agents = room_agents,
	                       .owner_login = ctx->cfg->owner_github,
	                       .review_timeout_ms = review_timeout,
	                       .max_revisions = revisions == 0 ? -1 : (int)revisions,
	                       .ud = s};
	s->ws = wsp_new(&c, err);
	if (!s->ws)
		goto fail;
	uv_timer_init(ctx->loop, &s->poke);
	s->poke.data = s;
	struct sched_job_opts o = {
	        .name = "plan-awareness",
	        .interval_ms = (uint64_t)cycle,
	        .jitter_pct = WSP_CYCLE_JITTER,
	        .first_delay_ms =
	                (uint64_t)(cycle < SVC_FIRST_CYCLE_MAX_MS ? cycle : SVC_FIRST_CYCLE_MAX_MS),
	        .run = cycle_run,
	        .on_stop = cycle_stop,
	        .ud = s};
	s->job = sched_add(ctx->sched, &o);
	if (!s->job) {
		err_set(err, "the plan-awareness job could not be scheduled");
		uv_close((uv_handle_t *)&s->poke, NULL);
		wsp_free(s->ws);
		s->ws = NULL;
		goto fail;
	}
	if (ctx->route_actions)
		ctx->route_actions(ctx->ud, route, s);
	if (ctx->offer_workspaces)
		ctx->offer_workspaces(ctx->ud, s->ws);
	log_kv(LOG_LEVEL_INFO, "workspace", "workspaces on", "login", ctx->cfg->github_username,
	       "cycle_ms", LOG_INT(cycle), "task_work",
	       s->coder.configured && s->have_git ? "yes" : "no (no coder)");
	return s;
fail:
	if (s->have_git)
		git_ctx_free(&s->git);
	coder_config_free(&s->coder);
	voice_free(s->voice);
	free(s->work_root);
	free(s);
	return NULL;
}

static cJSON *status(void *svc)
{
	struct svc_ws *s = svc;
	cJSON *o = wsp_status(s->ws);
	if (!s->coder.configured)
		cJSON_AddStringToObject(o, "coder",
		                        s->coder_error[0] ? s->coder_error
		                                          : "CODER_COMMAND is not set");
	return o;
}

static void quiesce(void *svc)
{
	struct svc_ws *s = svc;
	wsp_quiesce(s->ws);
	uv_timer_stop(&s->poke);
}

static void svc_free(void *svc)
{
	struct svc_ws *s = svc;
	if (s->ctx.route_actions)
		s->ctx.route_actions(s->ctx.ud, NULL, NULL);
	if (s->ctx.offer_workspaces)
		s->ctx.offer_workspaces(s->ctx.ud, NULL);
	wsp_free(s->ws);
	if (s->have_git)
		git_ctx_free(&s->git);
	coder_config_free(&s->coder);
	voice_free(s->voice);
	free(s->work_root);
	/* the poke timer is the last to go: s is freed when it has closed */
	uv_close((uv_handle_t *)&s->poke, poke_closed);
}

const struct ga_service svc_workspace = {
        .name = "workspace",
        .start = start,
        .status = status,
        .quiesce = quiesce,
        .free = svc_free,
};
