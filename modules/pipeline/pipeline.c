/* The message pipeline: one state machine per message. See pipeline.h. */
#include "modules/pipeline/pipeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/decisions/log.h"
#include "modules/outbound/outbound.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

#define LOG_COMP "pipeline"

struct pipeline_job {
	struct pipeline *p;
	struct conv_event ev;
	struct gate_result g;
	const struct pipeline_source *src; /* NULL for a say */
	/* pipeline_say */
	bool is_say;
	char *target;
	char *source_name;
	pipeline_say_fn say_done;
	void *say_ud;
	cJSON *say_extra; /* pipeline_say_with's platform fields (a copy), or NULL */
	/* pipeline_say_ctx: the caller's facts, borrowed during validate() */
	const struct validator_context *vctx;
	/* The walk is over and the source's done() is due on the loop: the
	 * job stays in the list (and counts) until it is called. */
	struct decision final;
	char *artifact;
	struct pipeline_job *ended_next;
	struct pipeline_job *prev, *next;
};

struct pipeline {
	uv_loop_t *loop;
	const struct state_store *st;
	struct decision_log *dlog;
	struct outbound *outbound;
	struct coord *coord;
	struct gate_config gate;
	char *gate_self_id, *gate_self_name; /* owned copies (pipeline_set_gate) */
	struct gate_state *gs;
	struct conv_store *store;
	struct pipeline_source sources[CONV_PLATFORM_COUNT];
	bool has_source[CONV_PLATFORM_COUNT];
	bool paused;
	int64_t last_event_ms;
	int64_t last_event_of[CONV_PLATFORM_COUNT];
	size_t njobs;
	struct pipeline_job *jobs;
	/* walks over whose source's done() is due: a FIFO, drained by
	 * done_timer (made at the first one; closed on the loop by free) */
	struct pipeline_job *ended_head, *ended_tail;
	uv_timer_t *done_timer;
	uint64_t say_seq;
};

/* ---- decisions ---------------------------------------------------------------- */

void pipeline_note(struct pipeline *p, enum conv_platform platform, const char *conversation,
                   const char *message_id, enum decision_stage stage, const struct decision *d)
{
	log_kv(d->verdict == VERDICT_FAIL ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG, LOG_COMP,
	       decision_stage_name(stage), "id", message_id ? message_id : "", "verdict",
	       decision_verdict_name(d->verdict), "rule", d->rule ? d->rule : "", "reason",
	       d->reason);
	decision_log_add(p->dlog, time_now_ms(), conv_platform_name(platform), conversation,
	                 message_id, stage, d);
}

void pipeline_outbound_decision(void *dlog, const struct outbound_msg *m,
                                const struct decision *d)
{
	decision_log_add(dlog, time_now_ms(), conv_platform_name(m->platform), m->conversation,
	                 m->message_id, STAGE_OUTBOUND, d);
}

static void note(struct pipeline_job *j, enum decision_stage stage, const struct decision *d)
{
	pipeline_note(j->p, j->ev.platform, j->ev.conversation, j->ev.message_id, stage, d);
}

/* ---- jobs --------------------------------------------------------------------- */

static struct pipeline_job *job_new(struct pipeline *p)
{
	struct pipeline_job *j = xcalloc(1, sizeof *j);
	j->p = p;
	j->next = p->jobs;
	if (p->jobs)
		p->jobs->prev = j;
	p->jobs = j;
	p->njobs++;
	return j;
}

static void job_free(struct pipeline_job *j)
{
	struct pipeline *p = j->p;
	if (j->prev)
		j->prev->next = j->next;
	else
		p->jobs = j->next;
	if (j->next)
		j->next->prev = j->prev;
	p->njobs--;
	conv_event_free(&j->ev);
	free(j->target);
	cJSON_Delete(j->say_extra);
	free(j->source_name);
	free(j->artifact);
	free(j);
}

/* The source's done() of every walk over, oldest first, from the loop
 * (never from inside pipeline_event or pipeline_composed). Only those due
 * when the timer fired: a walk that ends during a done() waits for the next
 * turn. */
static void on_done_timer(uv_timer_t *t)
{
	struct pipeline *p = t->data;
	if (!p)
		return;
	struct pipeline_job *last = p->ended_tail;
	while (p->ended_head) {
		struct pipeline_job *j = p->ended_head;
		p->ended_head = j->ended_next;
		if (!p->ended_head)
			p->ended_tail = NULL;
		bool was_last = j == last;
		j->src->done(j->src->ud, &j->ev, &j->final, j->artifact);
		job_free(j);
		if (was_last)
			break;
	}
	if (p->ended_head)
		uv_timer_start(p->done_timer, on_done_timer, 0, 0);
}

static void done_timer_closed(uv_handle_t *h)
{
	free(h);
}

/* The walk of an event whose source has done(): its call is queued for the
 * loop. */
static void defer_done(struct pipeline_job *j, const struct decision *final, const char *artifact)
{
	struct pipeline *p = j->p;
	if (final)
		j->final = *final;
	else
		decision_set(&j->final, VERDICT_INFO, "ended", "the walk ended");
	j->artifact = artifact ? xstrdup(artifact) : NULL;
	if (p->ended_tail)
		p->ended_tail->ended_next = j;
	else
		p->ended_head = j;
	p->ended_tail = j;
	if (!p->done_timer) {
		p->done_timer = xcalloc(1, sizeof *p->done_timer);
		uv_timer_init(p->loop, p->done_timer);
		p->done_timer->data = p;
	}
	if (!uv_is_active((uv_handle_t *)p->done_timer))
		uv_timer_start(p->done_timer, on_done_timer, 0, 0);
}

static void save_store(struct pipeline *p, bool force)
{
	if (!p->st)
		return;
	struct ga_err err;
	err_clear(&err);
	if (conv_store_save_if_due(p->store, p->st, time_now_ms(), force, &err) < 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "could not save the conversations", "error",
		       err.msg);
}

/* The end of a job's walk: the record stage. answered = something was
 * sent, delivered or reacted to in answer to the message. */
static void job_end(struct pipeline_job *j, bool answered, const struct decision *final,
                    const char *artifact)
{
	struct pipeline *p = j->p;
	struct decision d;
	if (answered) {
		conv_store_mark_answered(p->store, j->ev.message_id);
		if (!j->is_say)
			gate_note_reply(p->gs, j->ev.conversation,
			                j->ev.author_kind == CONV_AUTHOR_PEER ? j->ev.author_id : NULL,
			                time_now_ms());
		decision_set(&d, VERDICT_INFO, "answered", "%s%s%s", j->is_say ? "sent" : "answered",
		             artifact && *artifact ? ": " : "", artifact ? artifact : "");
		note(j, STAGE_RECORD, &d);
		if (j->g.claim_needed && p->coord)
			coord_release(p->coord, j->g.claim_key);
	} else if (final) {
		decision_set(&d, VERDICT_INFO, "not_answered", "not answered: %s (%s)", final->reason,
		             final->rule ? final->rule : "");
		note(j, STAGE_RECORD, &d);
	}
	save_store(p, false);
	if (j->say_done)
		j->say_done(j->say_ud, final, artifact);
	if (!j->is_say && j->src && j->src->done) {
		defer_done(j, final, artifact);
		return;
	}
	job_free(j);
}

/* ---- outbound ------------------------------------------------------------------ */

static void on_sent(void *ud, const struct decision *final, const char *artifact)
{
	struct pipeline_job *j = ud;
	job_end(j, final->verdict == VERDICT_SENT, final, artifact);
}

static void send_text(struct pipeline_job *j, const char *text, size_t len)
{
	struct pipeline *p = j->p;
	struct decision d;
	if (!j->is_say && j->src && j->src->deliver) {
		j->src->deliver(j->src->ud, &j->ev, text, len);
		decision_set(&d, VERDICT_SENT, "delivered", "shown to the owner (%zu bytes)", len);
		note(j, STAGE_OUTBOUND, &d);
		job_end(j, true, &d, NULL);
		return;
	}
	char target[PIPELINE_TARGET_MAX];
	if (j->is_say) {
		snprintf(target, sizeof target, "%s", j->target);
	} else if (!j->src || !j->src->reply_target ||
	           j->src->reply_target(j->src->ud, &j->ev, target, sizeof target) != 0) {
		decision_set(&d, VERDICT_DROP, "no_target", "a reply to this message has nowhere to go");
		note(j, STAGE_OUTBOUND, &d);
		job_end(j, false, &d, NULL);
		return;
	}
	if (!p->outbound) {
		decision_set(&d, VERDICT_DROP, "no_outbound", "nothing can be sent from this process");
		note(j, STAGE_OUTBOUND, &d);
		job_end(j, false, &d, NULL);
		return;
	}
	/* The source's platform fields for the port (reply refs, …). */
	cJSON *extra = NULL;
	if (j->is_say && j->say_extra) {
		extra = cJSON_Duplicate(j->say_extra, 1);
	} else if (!j->is_say && j->src && j->src->reply_extra) {
		extra = cJSON_CreateObject();
		if (j->src->reply_extra(j->src->ud, &j->ev, extra) != 0) {
			cJSON_Delete(extra);
			decision_set(&d, VERDICT_DROP, "reply_extra",
			             "the %s source could not give this reply its platform fields "
			             "(the reply refs): not sent",
			             conv_platform_name(j->ev.platform));
			note(j, STAGE_OUTBOUND, &d);
			job_end(j, false, &d, NULL);
			return;
		}
		if (!extra->child) {
			cJSON_Delete(extra);
			extra = NULL;
		}
	}
	char key[300];
	snprintf(key, sizeof key, "%s:%s", j->is_say ? "say" : "reply", j->ev.message_id);
	struct outbound_msg m = {
	        .platform = j->ev.platform,
	        .target = target,
	        .source = j->is_say ? j->source_name : conv_platform_name(j->ev.platform),
	        .conversation = j->ev.conversation,
	        .message_id = j->ev.message_id,
	        .text = text,
	        .text_len = len,
	        .chain = j->g.chain_out,
	        .courtesy = j->g.courtesy,
	        .idem_key = key,
	        .extra = extra,
	};
	/* outbound copies the message and its extra; the job may be over
	 * when this returns (an immediate drop). */
	outbound_submit(p->outbound, &m, on_sent, j);
	cJSON_Delete(extra);
}

/* ---- validator ------------------------------------------------------------------ */

static int validator_platform_of(enum conv_platform p)
{
	switch (p) {
	case CONV_PLATFORM_SPACE: return VALIDATOR_PLATFORM_SPACE;
	case CONV_PLATFORM_BLUESKY: return VALIDATOR_PLATFORM_BLUESKY;
	case CONV_PLATFORM_GITHUB: return VALIDATOR_PLATFORM_GITHUB;
	default: return -1;
	}
}

static void validate(struct pipeline_job *j, const char *text, size_t len)
{
	struct pipeline *p = j->p;
	struct decision d;
	int vp = validator_platform_of(j->ev.platform);
	if (vp < 0 || (!j->is_say && j->src && j->src->deliver)) {
		decision_set(&d, VERDICT_APPROVE, "owner_private",
		             "private answer to the owner: nothing to moderate");
		note(j, STAGE_VALIDATOR, &d);
		send_text(j, text, len);
		return;
	}
	if (memchr(text, '\0', len)) {
		decision_set(&d, VERDICT_REJECT, "nul", "the candidate holds a NUL byte");
		note(j, STAGE_VALIDATOR, &d);
		job_end(j, false, &d, NULL);
		return;
	}
	/* The echo window: the conversation's recent messages, agents'
	 * compared, persons' context only (§9.1). */
	struct echo_window *w = echo_window_new(PIPELINE_ECHO_WINDOW);
	size_t n = conv_store_message_count(p->store, j->ev.conversation);
	size_t from = n > PIPELINE_ECHO_WINDOW ? n - PIPELINE_ECHO_WINDOW : 0;
	size_t agents = 0;
	for (size_t i = from; i < n; i++) {
		const struct conv_message *m = conv_store_message_at(p->store, j->ev.conversation, i);
		if (!m)
			continue;
		bool agent = !conv_author_is_person(m->author_kind);
		agents += agent;
		echo_window_push(w, m->author_name, agent, m->text ? m->text : "");
	}
	struct validator_context ctx = {
	        .platform = (enum validator_platform)vp,
	        .mode = j->is_say ? VALIDATOR_MODE_ACTION : VALIDATOR_MODE_DISCUSSION,
	        .role = VALIDATOR_ROLE_ACTOR,
	        .is_action_owner = true,
	        .window = w,
	        .connected_agents = 1,
	        .agent_msgs_since_host = agents,
	};
	if (j->vctx) {
		/* The caller's facts (participation); the platform is the
		 * job's, and the echo window the store's unless it brought
		 * its own. */
		ctx = *j->vctx;
		ctx.platform = (enum validator_platform)vp;
		if (!ctx.window)
			ctx.window = w;
	}
	struct validator_decision vd;
	memset(&vd, 0, sizeof vd);
	enum validator_verdict v = validator_validate(text, &ctx, &vd);
	echo_window_free(w);
	validator_to_decision(&vd, &d);
	note(j, STAGE_VALIDATOR, &d);
	if (v == VALIDATOR_ACCEPT || (v == VALIDATOR_TRIM && !vd.text)) {
		validator_decision_clear(&vd);
		send_text(j, text, len);
		return;
	}
	if (v == VALIDATOR_TRIM) {
		char *t = vd.text;
		vd.text = NULL;
		validator_decision_clear(&vd);
		send_text(j, t, strlen(t));
		free(t);
		return;
	}
	validator_decision_clear(&vd);
	job_end(j, false, &d, NULL);
}

void pipeline_composed(struct pipeline_job *j, const char *text, size_t len, const char *why)
{
	struct decision d;
	if (!text) {
		decision_set(&d, VERDICT_INFO, "nothing_to_send", "%s",
		             why && *why ? why : "the composer had nothing to say");
		note(j, STAGE_COMPOSE, &d);
		job_end(j, false, &d, NULL);
		return;
	}
	decision_set(&d, VERDICT_PASS, "composed", "candidate of %zu bytes", len);
	note(j, STAGE_COMPOSE, &d);
	validate(j, text, len);
}

const struct conv_event *pipeline_job_event(const struct pipeline_job *job)
{
	return &job->ev;
}

/* ---- compose -------------------------------------------------------------------- */

static void compose(struct pipeline_job *j)
{
	struct decision d;
	if (!j->src || !j->src->compose) {
		decision_set(&d, VERDICT_INFO, "no_composer",
		             "nothing composes replies on %s yet: recorded only",
		             conv_platform_name(j->ev.platform));
		note(j, STAGE_COMPOSE, &d);
		job_end(j, false, &d, NULL);
		return;
	}
	j->src->compose(j->src->ud, j, &j->ev, &j->g);
}

static void on_claim(void *ud, enum coord_result r, const char *holder, const char *why)
{
	struct pipeline_job *j = ud;
	struct decision d;
	if (r == COORD_WON) {
		decision_set(&d, VERDICT_PASS, "claim", "claimed %s for %" PRId64 " s", j->g.claim_key,
		             j->g.claim_ttl_ms / 1000);
		note(j, STAGE_GATE, &d);
		compose(j);
		return;
	}
	if (r == COORD_HELD)
		decision_set(&d, VERDICT_BLOCK, "claim", "%s is held by %s: standing down%s%s",
		             j->g.claim_key, holder && *holder ? holder : "another agent",
		             why && *why ? "; " : "", why ? why : "");
	else
		decision_set(&d, VERDICT_BLOCK, "claim",
		             "coordination unavailable (%s): standing down on a peer's message",
		             why && *why ? why : "no answer");
	j->g.claim_needed = false; /* nothing of ours to release */
	note(j, STAGE_GATE, &d);
	job_end(j, false, &d, NULL);
}

/* ---- the walk -------------------------------------------------------------------- */

static int64_t effective_chain(const struct pipeline *p, const struct conv_event *ev)
{
	return conv_store_derived_chain(p->store, ev->conversation, ev->message_id);
}

int pipeline_event(struct pipeline *p, const struct conv_event *ev)
{
	struct decision d;
	p->last_event_ms = time_now_ms();
	if ((unsigned)ev->platform < CONV_PLATFORM_COUNT)
		p->last_event_of[ev->platform] = p->last_event_ms;
	if (p->njobs >= PIPELINE_MAX_JOBS) {
		decision_set(&d, VERDICT_BLOCK, "overload",
		             "%d messages already in flight: this one is not handled",
		             PIPELINE_MAX_JOBS);
		pipeline_note(p, ev->platform, ev->conversation, ev->message_id, STAGE_EVENT, &d);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "overload: message dropped", "id", ev->message_id);
		return -1;
	}
	struct pipeline_job *j = job_new(p);
	conv_event_copy(&j->ev, ev);
	j->src = p->has_source[ev->platform] ? &p->sources[ev->platform] : NULL;

	/* event: the store owns the history */
	bool answered = conv_store_answered(p->store, ev->message_id);
	conv_store_add(p->store, &j->ev);
	decision_set(&d, VERDICT_PASS, "event", "%s %s%s (chain %" PRId64 "%s): %.120s",
	             conv_author_kind_name(ev->author_kind),
	             ev->author_name ? ev->author_name : "?", ev->from_history ? ", history" : "",
	             ev->chain, ev->chain_explicit ? "" : ", none carried", ev->text ? ev->text : "");
	note(j, STAGE_EVENT, &d);
	if (answered) {
		decision_set(&d, VERDICT_BLOCK, "answered",
		             "already answered (before a restart, perhaps): not again");
		note(j, STAGE_GATE, &d);
		job_end(j, false, &d, NULL);
		return 0;
	}

	/* gate */
	int64_t now = time_now_ms();
	struct gate_input in = {
	        .ev = &j->ev,
	        .derived_chain = effective_chain(p, &j->ev),
	        .replies_to_us = ev->parent_id &&
	                         conv_store_is_ours(p->store, ev->conversation, ev->parent_id),
	        .paused = p->paused,
	        .thread_depth = -1,
	};
	gate_check(p->gs, &in, now, &p->gate, &j->g);
	gate_note_incoming(p->gs, &j->ev, now);
	note(j, STAGE_GATE, &j->g.d);
	if (j->g.d.verdict != VERDICT_PASS) {
		/* REACT: a reaction at most. No platform reacts yet in the
		 * room (silence); Bluesky's like and GitHub's reaction come
		 * with their clients. */
		job_end(j, false, &j->g.d, NULL);
		return 0;
	}
	if (j->g.claim_needed) {
		if (!p->coord) {
			on_claim(j, COORD_UNAVAILABLE, NULL, "no coordination backend");
			return 0;
		}
		if (coord_claim(p->coord, j->g.claim_key, j->g.claim_ttl_ms, on_claim, j) != 0)
			on_claim(j, COORD_UNAVAILABLE, NULL, "the claim could not be asked");
		return 0;
	}
	compose(j);
	return 0;
}

int pipeline_say(struct pipeline *p, enum conv_platform platform, const char *target,
                 const char *source, const char *text, size_t len, int64_t chain,
                 const char *id, pipeline_say_fn done, void *ud)
{
	return pipeline_say_ctx(p, platform, target, source, text, len, chain, false, id, NULL,
	                        done, ud);
}

int pipeline_say_ctx(struct pipeline *p, enum conv_platform platform, const char *target,
                     const char *source, const char *text, size_t len, int64_t chain,
                     bool courtesy, const char *id, const struct validator_context *vctx,
                     pipeline_say_fn done, void *ud)
{
	struct pipeline_say_req r = {.platform = platform,
	                             .target = target,
	                             .source = source,
	                             .text = text,
	                             .len = len,
	                             .chain = chain,
	                             .courtesy = courtesy,
	                             .id = id,
	                             .vctx = vctx,
	                             .done = done,
	                             .ud = ud};
	return pipeline_say_with(p, &r);
}

int pipeline_say_with(struct pipeline *p, const struct pipeline_say_req *r)
{
	enum conv_platform platform = r->platform;
	const char *target = r->target, *source = r->source, *text = r->text, *id = r->id;
	size_t len = r->len;
	int64_t chain = r->chain;
	bool courtesy = r->courtesy;
	const struct validator_context *vctx = r->vctx;
	pipeline_say_fn done = r->done;
	void *ud = r->ud;
	struct decision d;
	char made[64];
	if (!id) {
		char hex[SHA256_HEX_LEN + 1];
		char seed[96];
		int n = snprintf(seed, sizeof seed, "%" PRId64 ":%" PRIu64, time_now_ms(),
		                 ++p->say_seq);
		sha256_hex(seed, (size_t)n, hex);
		snprintf(made, sizeof made, "say:%.24s", hex);
		id = made;
	}
	if (p->njobs >= PIPELINE_MAX_JOBS || p->paused) {
		decision_set(&d, VERDICT_BLOCK, p->paused ? "paused" : "overload", "%s",
		             p->paused ? "the agent is paused: nothing is sent"
		                       : "too many messages in flight");
		pipeline_note(p, platform, target, id, STAGE_GATE, &d);
		if (done)
			done(ud, &d, NULL);
		return -1;
	}
	struct pipeline_job *j = job_new(p);
	struct conv_event_src es = {
	        .platform = platform,
	        .conversation = target,
	        .message_id = id,
	        .author_id = "self",
	        .author_name = "self",
	        .author_kind = CONV_AUTHOR_SELF,
	        .chain = chain,
	        .chain_explicit = chain >= 0,
	        .text = text,
	        .text_len = len,
	        .time_ms = time_now_ms(),
	};
	conv_event_init(&j->ev, &es);
	j->is_say = true;
	j->target = xstrdup(target);
	j->source_name = xstrdup(source ? source : "agent");
	j->say_done = done;
	j->say_ud = ud;
	if (r->extra && r->extra->child)
		j->say_extra = cJSON_Duplicate(r->extra, 1);
	j->g.chain_out = chain;
	j->g.courtesy = courtesy;
	decision_set(&d, VERDICT_PASS, "say", "%s asks to send %zu bytes to %s", j->source_name, len,
	             target);
	note(j, STAGE_COMPOSE, &d);
	j->vctx = vctx;
	/* validate() reads vctx before anything can end the job: the
	 * validator runs synchronously (no judge is asked on this path). */
	validate(j, j->ev.text, j->ev.text_len);
	return 0;
}

/* ---- set-up ----------------------------------------------------------------------- */

struct pipeline *pipeline_new(const struct pipeline_config *c, struct ga_err *err)
{
	if (!c || !c->loop) {
		err_set(err, "pipeline: no loop");
		return NULL;
	}
	struct pipeline *p = xcalloc(1, sizeof *p);
	p->loop = c->loop;
	p->st = c->st;
	p->dlog = c->dlog;
	p->outbound = c->outbound;
	p->coord = c->coord;
	pipeline_set_gate(p, &c->gate);
	p->paused = c->paused;
	p->gs = gate_state_new();
	p->store = conv_store_new();
	if (p->st) {
		struct ga_err e;
		err_clear(&e);
		if (conv_store_load(p->store, p->st, &e) < 0)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "conversations unreadable; starting empty",
			       "error", e.msg);
	}
	return p;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	/* Nobody is called: neither the walks in flight nor those whose
	 * done() was still due. */
	while (p->jobs)
		job_free(p->jobs);
	p->ended_head = p->ended_tail = NULL;
	if (p->done_timer) {
		p->done_timer->data = NULL;
		uv_timer_stop(p->done_timer);
		uv_close((uv_handle_t *)p->done_timer, done_timer_closed);
	}
	save_store(p, true);
	conv_store_free(p->store);
	gate_state_free(p->gs);
	free(p->gate_self_id);
	free(p->gate_self_name);
	free(p);
}

void pipeline_set_gate(struct pipeline *p, const struct gate_config *g)
{
	/* Our own copies of the names: the caller's configuration is replaced
	 * (and freed) on a reload. */
	char *id = g->self_id ? xstrdup(g->self_id) : NULL;
	char *name = g->self_name ? xstrdup(g->self_name) : NULL;
	free(p->gate_self_id);
	free(p->gate_self_name);
	p->gate = *g;
	p->gate_self_id = id;
	p->gate_self_name = name;
	p->gate.self_id = id;
	p->gate.self_name = name;
}

int pipeline_add_source(struct pipeline *p, const struct pipeline_source *src)
{
	if ((unsigned)src->platform >= CONV_PLATFORM_COUNT || p->has_source[src->platform])
		return -1;
	p->sources[src->platform] = *src;
	p->has_source[src->platform] = true;
	return 0;
}

void pipeline_set_paused(struct pipeline *p, bool paused)
{
	if (p->paused == paused)
		return;
	p->paused = paused;
	struct decision d;
	decision_set(&d, VERDICT_INFO, "paused", "%s",
	             paused ? "the agent is paused: it answers only /resume and /status"
	                    : "the agent resumed");
	pipeline_note(p, CONV_PLATFORM_OWNER, "owner:control", "", STAGE_GATE, &d);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, paused ? "paused" : "resumed", "by", "kill switch");
}

bool pipeline_paused(const struct pipeline *p)
{
	return p->paused;
}

void pipeline_note_reply(struct pipeline *p, const char *conversation, const char *peer_id)
{
	if (p && conversation && *conversation)
		gate_note_reply(p->gs, conversation, peer_id, time_now_ms());
}

void pipeline_set_coord(struct pipeline *p, struct coord *c)
{
	p->coord = c;
}

int64_t pipeline_last_event_ms(const struct pipeline *p)
{
	return p->last_event_ms;
}

int64_t pipeline_last_event_ms_of(const struct pipeline *p, enum conv_platform platform)
{
	return (unsigned)platform < CONV_PLATFORM_COUNT ? p->last_event_of[platform] : 0;
}

size_t pipeline_jobs(const struct pipeline *p)
{
	return p->njobs;
}

struct conv_store *pipeline_store(struct pipeline *p)
{
	return p->store;
}

void pipeline_flush(struct pipeline *p)
{
	save_store(p, true);
}
