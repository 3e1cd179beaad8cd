/*
 * svc_reflection — the agent grows (modules/reflection/reflection.h) as a
 * daemon service (cmd/services.h).
 *
 * Off (NULL, no message) without a model. Otherwise:
 *   - subscribes to the decision log: each record, with what the
 *     conversation store knows of its message (text, author, kind), goes to
 *     reflection_observe (experiences, peer conversations);
 *   - adds the scheduler job "reflection" (every REFLECT_CHECK_MS, ±12 %,
 *     first one interval after start), which runs
 *     reflection_tick: no model call unless a new experience waits;
 *   - after a reflection that changed SELF.md: the room gets the summary
 *     (ctx->room_reflection) and the identity (ctx->room_identity), and the
 *     daemon reads SELF.md again (ctx->reload_self);
 *   - status: the last reflection, its outcome and summary, experiences
 *     pending, tokens spent, peers known.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd/services.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "modules/conversation/store.h"
#include "modules/decisions/log.h"
#include "modules/pipeline/pipeline.h"
#include "modules/reflection/reflection.h"
#include "modules/scheduler/sched.h"

/* The first check comes one interval after start, not at once: experiences
 * are persisted, so the previous run's wait for it, and a daemon started for
 * a few minutes (a test, a restart loop) never reflects. */
#define REFLECT_FIRST_DELAY_MS REFLECT_CHECK_MS
#define REFLECT_JITTER_PCT     0.12

struct svc_refl {
	struct ga_svc_ctx ctx;
	char *agent_name;
	struct reflection *r;
	struct sched_job *job;
	int sub;
	bool quiescing;
};

static void on_decision(void *ud, const struct decision_record *rec)
{
	struct svc_refl *s = ud;
	if (s->quiescing || !rec->platform || strcmp(rec->platform, "self") == 0)
		return;
	struct exp_source src = {.rec = rec, .author_kind = -1};
	const struct conv_message *m = NULL;
	if (s->ctx.pipeline && rec->conversation && rec->message_id && rec->message_id[0])
		m = conv_store_find(pipeline_store(s->ctx.pipeline), rec->conversation,
		                    rec->message_id);
	if (m) {
		src.text = m->text;
		src.author = m->author_name;
		src.author_kind = (int)m->author_kind;
		/* the store does not keep the mention list: a message naming the
		 * agent counts as addressed to it */
		src.addressed_me =
		        s->agent_name[0] && m->text && strcasestr(m->text, s->agent_name);
	}
	src.from_history = rec->stage == STAGE_EVENT && strstr(rec->decision.reason, ", history");
	reflection_observe(s->r, &src);
}

static void tick_done(void *ud, enum reflect_outcome outcome, bool ran)
{
	struct sched_job *job = ud;
	(void)outcome;
	(void)ran;
	sched_job_done(job);
}

static void run(void *ud, struct sched_job *job)
{
	struct svc_refl *s = ud;
	reflection_tick(s->r, tick_done, job);
}

static void on_stop(void *ud, struct sched_job *job)
{
	(void)job;
	struct svc_refl *s = ud;
	reflection_cancel(s->r);
}

static int broadcast(void *ud, const char *summary)
{
	struct svc_refl *s = ud;
	return s->ctx.room_reflection ? s->ctx.room_reflection(s->ctx.ud, summary) : -1;
}

static int identity(void *ud)
{
	struct svc_refl *s = ud;
	return s->ctx.room_identity ? s->ctx.room_identity(s->ctx.ud) : -1;
}

static void self_changed(void *ud)
{
	struct svc_refl *s = ud;
	/* the daemon reads SELF.md again (identity, the gate's Social
	 * Mechanics, the owner's prompt); .env is left alone */
	if (s->ctx.reload_self)
		s->ctx.reload_self(s->ctx.ud);
}

static void notify(void *ud, const char *text)
{
	struct svc_refl *s = ud;
	if (s->ctx.notify_owner)
		s->ctx.notify_owner(s->ctx.ud, text);
}

static void *start(const struct ga_svc_ctx *ctx, struct ga_err *err)
{
	if (!ctx->llm)
		return NULL;
	if (!ctx->st || !ctx->sched || !ctx->skills) {
		err_set(err, "reflection needs the state store, the scheduler and the skills");
		return NULL;
	}
	struct svc_refl *s = xcalloc(1, sizeof *s);
	s->ctx = *ctx;
	s->agent_name = xstrdup(ctx->cfg && ctx->cfg->agent_name ? ctx->cfg->agent_name : "");
	struct reflection_opts o = {.loop = ctx->loop,
	                            .llm = ctx->llm,
	                            .budget = ctx->budget,
	                            .skills = ctx->skills,
	                            .st = ctx->st,
	                            .dlog = ctx->dlog,
	                            .memory_dir = ctx->cfg->memory_dir,
	                            .self_path = ctx->self_path,
	                            .soul_path = ctx->soul_path,
	                            .broadcast = broadcast,
	                            .identity = identity,
	                            .self_changed = self_changed,
	                            .notify_owner = notify,
	                            .ud = s};
	s->r = reflection_new(&o, err);
	if (!s->r) {
		free(s->agent_name);
		free(s);
		return NULL;
	}
	s->sub = ctx->dlog ? decision_log_subscribe(ctx->dlog, on_decision, s) : -1;
	if (ctx->dlog && s->sub < 0)
		log_kv(LOG_LEVEL_WARN, "reflection",
		       "no decision-log subscription left: experiences come from explicit calls "
		       "only",
		       "limit", LOG_INT(DECISION_LOG_MAX_SUBSCRIBERS));
	struct sched_job_opts jo = {.name = "reflection",
	                            .interval_ms = REFLECT_CHECK_MS,
	                            .jitter_pct = REFLECT_JITTER_PCT,
	                            .first_delay_ms = REFLECT_FIRST_DELAY_MS,
	                            .run = run,
	                            .on_stop = on_stop,
	                            .ud = s};
	s->job = sched_add(ctx->sched, &jo);
	if (!s->job) {
		err_set(err, "the scheduler refused the reflection job (already there, or %d jobs)",
		        SCHED_MAX_JOBS);
		if (s->sub > 0)
			decision_log_unsubscribe(ctx->dlog, s->sub);
		reflection_free(s->r);
		free(s->agent_name);
		free(s);
		return NULL;
	}
	return s;
}

static cJSON *status(void *svc)
{
	struct svc_refl *s = svc;
	return reflection_status(s->r);
}

static void quiesce(void *svc)
{
	struct svc_refl *s = svc;
	s->quiescing = true;
	if (s->sub > 0)
		decision_log_unsubscribe(s->ctx.dlog, s->sub);
	s->sub = -1;
	reflection_cancel(s->r);
}

static void svc_free(void *svc)
{
	struct svc_refl *s = svc;
	if (!s)
		return;
	if (s->sub > 0)
		decision_log_unsubscribe(s->ctx.dlog, s->sub);
	reflection_free(s->r);
	free(s->agent_name);
	free(s);
}

const struct ga_service svc_reflection = {
        .name = "reflection",
        .start = start,
        .reload = NULL,
        .status = status,
        .quiesce = quiesce,
        .free = svc_free,
};
