/*
 * svc_commitments — the commitment fulfilment service:
 * the GitHub outbound port on the shared client (modules/github/port.h)
 * and the fulfilment cycle (modules/fulfil), a create_workspace handed to
 * the workspace engine the workspace service offers. Wiring only.
 *
 * GitHub off (no token) or --social-only: no GitHub port; the cycle still
 * runs (post_bluesky, and GitHub types wait, pending). A 401 from GitHub
 * stops the daemon with exit 69 naming AGENT_GITHUB_TOKEN.
 *
 * GA_FULFIL_INTERVAL_MS (environment, 100..86400000) replaces the 15 s
 * cycle; GA_FULFIL_TIMEOUT_MS the 10 min in-progress timeout;
 * GA_FULFIL_CLAIM_RENEW_MS (1000..3600000) the 30 s renewal of the claim
 * while an attempt runs — for tests and an operator in a hurry, the spec's
 * values otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/github.h"
#include "cmd/services.h"
#include "common/fsx.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "modules/commitments/ledger.h"
#include "modules/fulfil/fulfil.h"
#include "modules/github/port.h"
#include "modules/outbound/outbound.h"
#include "modules/reflection/voice.h"
#include "modules/workspace/workspace.h"

struct svc_commit {
	struct ga_svc_ctx ctx; /* the functions and ud; the pointers outlive us */
	struct gh_port *port;
	struct fulfil *fulfil;
	bool fatal_told;
	char last_error[GA_ERR_MSG_MAX];
	struct voice *voice; /* <home>/voice-phrases.json (hot-reloaded) */
	struct git_ctx git;  /* the mirrors the port pushes task branches from */
	bool have_git;
};

static void on_auth(void *ud, const char *msg)
{
	struct svc_commit *s = ud;
	snprintf(s->last_error, sizeof s->last_error, "%s", msg);
	if (s->fatal_told || !s->ctx.fatal)
		return;
	s->fatal_told = true;
	char text[GA_ERR_MSG_MAX + 128];
	snprintf(text, sizeof text,
	         "GitHub refused AGENT_GITHUB_TOKEN (401): it is missing, invalid or expired — "
	         "set a valid token in .env (%s)",
	         msg);
	s->ctx.fatal(s->ctx.ud, 69, text);
}

static int room_target(void *ud, char *buf, size_t cap)
{
	struct svc_commit *s = ud;
	return s->ctx.room_target ? s->ctx.room_target(s->ctx.ud, buf, cap) : -1;
}

static bool peer_done(void *ud, const char *action, const char *target, char *who, size_t who_cap,
                      char *link, size_t link_cap)
{
	struct svc_commit *s = ud;
	return s->ctx.peer_done &&
	       s->ctx.peer_done(s->ctx.ud, action, target, who, who_cap, link, link_cap);
}

static struct coord *coord_of(void *ud)
{
	struct svc_commit *s = ud;
	return s->ctx.coord ? s->ctx.coord(s->ctx.ud) : NULL;
}

/* §6.3: a space promise abandoned opens the host's request again. */
static void abandoned(void *ud, const struct ledger_entry *e)
{
	struct svc_commit *s = ud;
	if (s->ctx.commitment_abandoned)
		s->ctx.commitment_abandoned(s->ctx.ud, e->id, e->source);
}

static void notify(void *ud, const char *text)
{
	struct svc_commit *s = ud;
	if (s->ctx.notify_owner)
		s->ctx.notify_owner(s->ctx.ud, text);
}

static bool workspaces_on(void *ud)
{
	struct svc_commit *s = ud;
	return s->ctx.workspaces && s->ctx.workspaces(s->ctx.ud);
}

/* create_workspace → the workspace engine's create; the watch is the
 * room's (or Bluesky's) by the commitment's thread. */
static int create_workspace(void *ud, const char *org, const char *name, const char *description,
                            const char *thread, fulfil_ws_answer_fn done, void *done_ud,
                            struct ga_err *err)
{
	struct svc_commit *s = ud;
	struct wsp *ws = s->ctx.workspaces ? s->ctx.workspaces(s->ctx.ud) : NULL;
	if (!ws)
		return err_set(err, "the workspace service is not running");
	enum wsp_source src =
	        thread && strncmp(thread, "at://", 5) == 0 ? WSP_SOURCE_BLUESKY : WSP_SOURCE_ROOM;
	return wsp_create(ws, org, name, description, src, thread, done, done_ud, err);
}

/* Announcements come from the agent's voice (no operational
 * text hard-coded); without a link, the built-in text names what was done. */
static char *phrase(void *ud, enum fulfil_type t, const char *description, const char *url)
{
	struct svc_commit *s = ud;
	(void)description;
	if (!s->voice || !url || !url[0])
		return NULL;
	enum voice_key k = t == FULFIL_CREATE_ISSUE  ? VOICE_FULFILLMENT_CREATE_ISSUE
	                   : t == FULFIL_CREATE_PLAN ? VOICE_FULFILLMENT_CREATE_PLAN
	                                             : VOICE_FULFILLMENT_DEFAULT;
	const char *names[] = {"url"};
	const char *values[] = {url};
	return voice_render(s->voice, k, names, values, 1);
}

static void *commit_start(const struct ga_svc_ctx *ctx, struct ga_err *err)
{
	if (!ctx->ledger || !ctx->journal || !ctx->outbound || !ctx->sched) {
		err_set(err, "commitments need the ledger, the journal and outbound (%s missing)",
		        !ctx->ledger     ? "the ledger"
		        : !ctx->journal  ? "the journal"
		        : !ctx->outbound ? "outbound"
		                         : "the scheduler");
		return NULL;
	}
	int64_t interval, timeout, renew;
	if (ga_svc_env_ms(ctx, "GA_FULFIL_INTERVAL_MS", 100, 86400000, 0, &interval, err) != 0 ||
	    ga_svc_env_ms(ctx, "GA_FULFIL_TIMEOUT_MS", 1000, 86400000, 0, &timeout, err) != 0 ||
	    ga_svc_env_ms(ctx, "GA_FULFIL_CLAIM_RENEW_MS", 1000, 3600000, 0, &renew, err) != 0)
		return NULL;
	struct svc_commit *s = xcalloc(1, sizeof *s);
	s->ctx = *ctx;
	if (ctx->self_path) {
		char *path = voice_path_beside(ctx->self_path);
		s->voice = voice_open(path);
		free(path);
	}
	if (ctx->github) {
		s->port = gh_port_new(ctx->github, on_auth, s);
		struct outbound_port p;
		gh_port_describe(s->port, &p);
		if (outbound_add_port(ctx->outbound, &p, err) != 0) {
			gh_port_free(s->port);
			free(s);
			return NULL;
		}
		/* Branch pushes (the work loop's GATE 3) go through this port too. */
		char *cache = fsx_join(ctx->cfg->memory_dir, GH_PORT_GIT_DIR);
		struct ga_err gerr = {{0}};
		struct git_cred cred = {"x-access-token", ctx->cfg->github_token};
		if (git_ctx_init(&s->git, ctx->loop, cache, &gerr) == 0) {
			s->have_git = true;
			gh_port_set_git(s->port, &s->git, ctx->cfg->github_token ? &cred : NULL,
			                ctx->cfg->github_api_url, &gerr);
		}
		if (gerr.msg[0])
			log_kv(LOG_LEVEL_ERROR, "commitments", "no branch pushes", "error",
			       gerr.msg);
		free(cache);
	} else {
		log_kv(LOG_LEVEL_INFO, "commitments",
		       "GitHub off: GitHub commitments wait, pending", "why",
		       ctx->social_only ? "--social-only" : "AGENT_GITHUB_TOKEN not set");
	}
	struct fulfil_config fc = {.loop = ctx->loop,
	                           .sched = ctx->sched,
	                           .ledger = ctx->ledger,
	                           .journal = ctx->journal,
	                           .outbound = ctx->outbound,
	                           .github = ctx->github,
	                           .pipeline = ctx->pipeline,
	                           .dlog = ctx->dlog,
	                           .agent_name = ctx->cfg ? ctx->cfg->agent_name : NULL,
	                           .social_only = ctx->social_only,
	                           .interval_ms = (uint64_t)interval,
	                           .in_progress_timeout_ms = timeout,
	                           .claim_renew_ms = (uint64_t)renew,
	                           .room_target = room_target,
	                           .coord = coord_of,
	                           .notify_owner = notify,
	                           .phrase = phrase,
	                           .abandoned = abandoned,
	                           .peer_done = peer_done,
	                           .workspaces_on = workspaces_on,
	                           .create_workspace = create_workspace,
	                           .ud = s};
	s->fulfil = fulfil_new(&fc, err);
	if (!s->fulfil) {
		/* The port is outbound's now (there is no removing it), so the
		 * service stays, sending nothing by itself; status says why. */
		snprintf(s->last_error, sizeof s->last_error, "no fulfilment cycle: %.400s",
		         err->msg);
		log_kv(LOG_LEVEL_ERROR, "commitments", "no fulfilment cycle", "error", err->msg);
	}
	return s;
}

static cJSON *commit_status(void *obj)
{
	struct svc_commit *s = obj;
	cJSON *o = s->fulfil ? fulfil_status(s->fulfil) : cJSON_CreateObject();
	if (s->last_error[0])
		cJSON_AddStringToObject(o, "serviceError", s->last_error);
	cJSON_AddBoolToObject(o, "github", s->port != NULL);
	if (s->port) {
		struct gh_port_stats ps;
		gh_port_stats(s->port, &ps);
		cJSON *p = cJSON_AddObjectToObject(o, "githubPort");
		cJSON_AddNumberToObject(p, "sends", (double)ps.sends);
		cJSON_AddNumberToObject(p, "sent", (double)ps.sent);
		cJSON_AddNumberToObject(p, "refused", (double)ps.refused);
		cJSON_AddNumberToObject(p, "unknown", (double)ps.unknown);
		cJSON_AddNumberToObject(p, "reconciles", (double)ps.reconciles);
		if (ps.last_error[0] && !cJSON_IsString(cJSON_GetObjectItem(o, "lastError"))) {
			cJSON_DeleteItemFromObject(o, "lastError");
			cJSON_AddStringToObject(o, "lastError", ps.last_error);
		}
	}
	return o;
}

static void commit_quiesce(void *obj)
{
	struct svc_commit *s = obj;
	fulfil_quiesce(s->fulfil);
}

static void commit_free(void *obj)
{
	struct svc_commit *s = obj;
	if (!s)
		return;
	fulfil_free(s->fulfil);
	gh_port_free(s->port);
	if (s->have_git)
		git_ctx_free(&s->git);
	voice_free(s->voice);
	free(s);
}

const struct ga_service svc_commitments = {
        .name = "commitments",
        .start = commit_start,
        .reload = NULL,
        .status = commit_status,
        .quiesce = commit_quiesce,
        .free = commit_free,
};
