/*
 * svc_space — the room (agent-space, modules/space/runtime.h) as a daemon
 * service (cmd/services.h).
 *
 * The room runs in every mode (--social-only included; it then advertises
 * ["social"]) and is one long-running scheduler job, "space": running from
 * the moment it starts joining until the daemon stops, so the scheduler's
 * stop waits for the polite leave (close 1000) before the loop is torn
 * down. Without REDIS_URL, agents in one room coordinate through its claims
 * (modules/space/coord_space.h): the pipeline is pointed at them once the
 * room starts, and back off them when the service quiesces; without
 * SPACE_URL either, the claims stay in process until a room found by
 * discovery is joined (coord_space_set_alone).
 *
 * What others ask of the room goes through svc_space_room (struct ga_room):
 * the target for pipeline_say, reflections, the plans' workspace_state, the
 * identity again (with our GitHub login when GitHub is in use), abandoned
 * commitments, the peers' GitHub logins, the busy state, the claims backend
 * and a description (the status file's "space").
 */
#include <stdlib.h>

#include "cmd/services.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/pipeline/pipeline.h"
#include "modules/reflection/voice.h"
#include "modules/scheduler/sched.h"
#include "modules/space/coord_space.h"
#include "modules/space/link.h"
#include "modules/space/runtime.h"

struct svc_space {
	struct ga_svc_ctx ctx;
	struct space_runtime *rt;
	struct coord *coord; /* the room's claims, when no REDIS_URL */
	bool coord_closing;
	void (*drained)(void *ud);
	void *drained_ud;
	char error[GA_ERR_MSG_MAX]; /* why the room could not start */
};

static void stopped(void *job)
{
	sched_job_done(job);
}

static void space_run(void *ud, struct sched_job *job)
{
	struct svc_space *s = ud;
	const struct ga_svc_ctx *c = &s->ctx;
	struct space_runtime_config rc = {.cfg = c->cfg,
	                                  .st = c->st,
	                                  .soul_text = c->soul_text,
	                                  .self = c->self,
	                                  .version = c->version,
	                                  .social_only = c->social_only,
	                                  /* the shared client exists only when
	                                   * GitHub is configured and in use */
	                                  .github_login =
	                                          c->github ? c->cfg->github_username : NULL,
	                                  .pipeline = c->pipeline,
	                                  .outbound = c->outbound,
	                                  /* the participation engine: only with a model */
	                                  .llm = c->llm,
	                                  .budget = c->budget,
	                                  .skills = c->skills,
	                                  .ledger = c->ledger,
	                                  .sched = c->sched};
	char *voice = c->self_path ? voice_path_beside(c->self_path) : NULL;
	rc.voice_path = voice;
	struct ga_err err = {{0}};
	s->rt = space_runtime_start(c->loop, &rc, &err);
	free(voice);
	if (!s->rt) {
		snprintf(s->error, sizeof s->error, "%s", err.msg);
		log_kv(LOG_LEVEL_WARN, "space", "not joining the agent-space", "error", err.msg);
		sched_job_done(job);
		return;
	}
	if (!c->cfg->redis_url && c->pipeline) {
		s->coord = coord_new_space(c->loop, space_runtime_link(s->rt), c->cfg->agent_name);
		/* no SPACE_URL either: no shared backend (coord_choose), claims
		 * in process until a room found by discovery is joined */
		coord_space_set_alone(s->coord, coord_choose(NULL, c->cfg->space_url, NULL, 0) ==
		                                        COORD_CHOICE_ALONE);
		pipeline_set_coord(c->pipeline, s->coord);
	}
}

static void space_on_stop(void *ud, struct sched_job *job)
{
	struct svc_space *s = ud;
	space_runtime_stop(s->rt, stopped, job);
}

static void *start(const struct ga_svc_ctx *ctx, struct ga_err *err)
{
	struct svc_space *s = xcalloc(1, sizeof *s);
	s->ctx = *ctx;
	if (!sched_add(ctx->sched, &(struct sched_job_opts){.name = "space",
	                                                    .first_delay_ms = 0,
	                                                    .run = space_run,
	                                                    .on_stop = space_on_stop,
	                                                    .ud = s})) {
		free(s);
		err_set(err, "the space job could not be scheduled");
		return NULL;
	}
	return s;
}

static void reload(void *svc)
{
	struct svc_space *s = svc;
	/* the room hears who we are now (SELF.md may have changed) */
	if (s->rt)
		space_runtime_refresh_identity(s->rt);
}

static void coord_closed(void *ud)
{
	struct svc_space *s = ud;
	s->coord_closing = false;
	if (s->drained)
		s->drained(s->drained_ud);
	s->drained = NULL;
}

/* Normally the room has stopped already (its job waited for the polite
 * leave); after the grace period this tears it down, so the daemon's last
 * walk over the loop's handles never closes one of its handles. The room's
 * coordination uses the link: it withdraws its claims and answers what
 * waits now, before the link goes. */
static void quiesce(void *svc)
{
	struct svc_space *s = svc;
	if (s->ctx.pipeline)
		pipeline_set_coord(s->ctx.pipeline, NULL);
	if (s->coord) {
		struct coord *c = s->coord;
		s->coord = NULL;
		s->coord_closing = true;
		coord_close(c, coord_closed, s);
	}
	space_runtime_free(s->rt);
	s->rt = NULL;
}

static void drain(void *svc, void (*done)(void *ud), void *ud)
{
	struct svc_space *s = svc;
	if (!s->coord_closing) {
		done(ud);
		return;
	}
	s->drained = done;
	s->drained_ud = ud;
}

static void svc_free(void *svc)
{
	struct svc_space *s = svc;
	space_runtime_free(s->rt);
	free(s);
}

/* --- what others ask of the room (struct ga_room) ------------------------------- */

static int room_target(void *svc, char *buf, size_t cap)
{
	struct svc_space *s = svc;
	return space_runtime_target(s->rt, buf, cap);
}

static int room_reflection(void *svc, const char *summary)
{
	struct svc_space *s = svc;
	return s->rt ? space_runtime_send_reflection(s->rt, summary) : -1;
}

static int room_workspace_state(void *svc, const cJSON *state)
{
	struct svc_space *s = svc;
	return s->rt ? space_runtime_send_workspace_state(s->rt, state) : -1;
}

static int room_identity(void *svc)
{
	struct svc_space *s = svc;
	return s->rt ? space_runtime_refresh_identity(s->rt) : -1;
}

static void room_abandoned(void *svc, const char *id, const char *source)
{
	struct svc_space *s = svc;
	space_runtime_commitment_abandoned(s->rt, id, source);
}

static bool room_peer_done(void *svc, const char *action, const char *target, char *who,
                           size_t who_cap, char *link, size_t link_cap)
{
	struct svc_space *s = svc;
	return s->rt &&
	       space_runtime_peer_done(s->rt, action, target, who, who_cap, link, link_cap);
}

static size_t room_peer_logins(void *svc, const char **out, size_t cap)
{
	struct svc_space *s = svc;
	return space_runtime_peer_logins(s->rt, out, cap);
}

static void room_busy(void *svc, bool busy, const char *detail)
{
	struct svc_space *s = svc;
	struct space_link *l = s->rt ? space_runtime_link(s->rt) : NULL;
	if (l)
		space_link_set_state(l, busy ? SPACE_STATE_THINKING : SPACE_STATE_IDLE, detail);
}

static struct coord *room_coord(void *svc)
{
	struct svc_space *s = svc;
	return s->coord;
}

static void room_describe(void *svc, char *buf, size_t cap)
{
	struct svc_space *s = svc;
	if (s->rt)
		space_runtime_describe(s->rt, buf, cap);
	else if (s->error[0])
		snprintf(buf, cap, "not joining: %s", s->error);
	else
		snprintf(buf, cap, "starting");
}

static const struct ga_room svc_space_room = {
        .target = room_target,
        .reflection = room_reflection,
        .workspace_state = room_workspace_state,
        .identity = room_identity,
        .commitment_abandoned = room_abandoned,
        .peer_done = room_peer_done,
        .peer_logins = room_peer_logins,
        .set_busy = room_busy,
        .coord = room_coord,
        .describe = room_describe,
};

const struct ga_service svc_space = {
        .name = "space",
        .start = start,
        .reload = reload,
        .quiesce = quiesce,
        .drain = drain,
        .free = svc_free,
        .room = &svc_space_room,
        .without_http = true,
};
