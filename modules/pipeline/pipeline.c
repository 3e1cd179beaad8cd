/* The message pipeline: one state machine per message. See pipeline.h. */
#include "modules/pipeline/pipeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/decisions/log.h"
#include "modules/outbound/outbound.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

#define LOG_COMP "pipeline"
/* What the record decision adds from the source's note, at most. */
#define PIPELINE_NOTE_MAX 200

/* A judge's answer may come after the job is gone (pipeline_free): it
 * finds the ticket's job cleared and frees the ticket. */
struct judge_ticket {
	struct pipeline_job *job;
};

struct pipeline_job {
	struct pipeline *p;
	struct conv_event ev;
	struct gate_result g;
	const struct pipeline_source *src; /* NULL for a say */
	bool is_say;
	int rounds;
	/* the candidate being validated and sent (owned copies) */
	char *text;
	size_t len;
	char *key_suffix;
	char *idem_key;                /* the candidate's own journal key, or NULL */
	struct validator_context vctx; /* the caller's facts; strings below */
	bool has_vctx;
	char *vctx_request, *vctx_repo;
	char **vctx_members; /* owned copies of vctx.members */
	cJSON *extra;        /* the reply's or the say's platform fields, or NULL */
	bool last_look;
	pipeline_ended_fn ended;
	void *ended_ud;
	bool revise;
	/* the caller's echo window (owned), NULL: the store's */
	struct echo_window *own_win;
	/* the validation: its window (kept for the last look) and decision */
	struct echo_window *win;
	size_t win_agents; /* agents' messages in it */
	char *win_last;    /* id of the store's last message when win was built */
	struct validator_decision vd;
	struct judge_ticket *ticket; /* a judge asked; NULL: none */
	/* pipeline_say */
	char *target;
	char *source_name;
	pipeline_say_fn say_done;
	void *say_ud;
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

void pipeline_outbound_decision(void *dlog, const struct outbound_msg *m, const struct decision *d)
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

static void candidate_clear(struct pipeline_job *j)
{
	free(j->text);
	j->text = NULL;
	j->len = 0;
	free(j->key_suffix);
	j->key_suffix = NULL;
	free(j->idem_key);
	j->idem_key = NULL;
	free(j->vctx_request);
	free(j->vctx_repo);
	j->vctx_request = j->vctx_repo = NULL;
	for (size_t i = 0; j->vctx_members && i < j->vctx.n_members; i++)
		free(j->vctx_members[i]);
	free(j->vctx_members);
	j->vctx_members = NULL;
	j->has_vctx = false;
	cJSON_Delete(j->extra);
	j->extra = NULL;
	echo_window_free(j->win);
	j->win = NULL;
	echo_window_free(j->own_win);
	j->own_win = NULL;
	free(j->win_last);
	j->win_last = NULL;
	validator_decision_clear(&j->vd);
	memset(&j->vd, 0, sizeof j->vd);
	if (j->ticket) {
		j->ticket->job = NULL; /* the judge's answer frees it */
		j->ticket = NULL;
	}
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
	candidate_clear(j);
	conv_event_free(&j->ev);
	free(j->target);
	free(j->source_name);
	free(j->artifact);
	free(j);
}

/* The source's done() of every walk over, oldest first, from the loop
 * (never from inside pipeline_event). Only those due when the timer fired:
 * a walk that ends during a done() waits for the next turn. */
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

/* Our sent reply joins the conversation under the platform's own id of what
 * was made (sent_id), so it is counted once however it is learnt again. */
static void store_reply(struct pipeline_job *j, const char *artifact)
{
	if (j->is_say || !j->src || !j->src->sent_id || !j->text)
		return;
	char id[PIPELINE_ID_MAX];
	if (j->src->sent_id(j->src->ud, &j->ev, artifact, id, sizeof id) != 0 || !id[0])
		return;
	struct conv_event_src es = {
	        .platform = j->ev.platform,
	        .conversation = j->ev.conversation,
	        .message_id = id,
	        .parent_id = j->ev.message_id,
	        .thread_id = j->ev.thread_id,
	        .author_id = j->p->gate.self_id ? j->p->gate.self_id : "self",
	        .author_name = j->p->gate.self_name ? j->p->gate.self_name : "self",
	        .author_kind = CONV_AUTHOR_SELF,
	        .is_bot = true,
	        .chain = j->g.chain_out,
	        .chain_explicit = j->g.chain_out >= 0,
	        .text = j->text,
	        .text_len = j->len,
	        .time_ms = time_now_ms(),
	        .thread_depth = j->ev.thread_depth >= 0 ? j->ev.thread_depth + 1 : -1,
	};
	struct conv_event ev;
	conv_event_init(&ev, &es);
	conv_store_add(j->p->store, &ev);
	conv_event_free(&ev);
}

/* The end of a job's walk: the record stage, its one decision. answered =
 * something was sent, delivered or reacted to in answer to the message.
 * note (may be NULL): what the source recorded in answer. */
static void job_end(struct pipeline_job *j, bool answered, const struct decision *final,
                    const char *artifact, const char *what)
{
	struct pipeline *p = j->p;
	struct decision d;
	if (answered) {
		conv_store_mark_answered(p->store, j->ev.message_id);
		if (!j->is_say) {
			gate_note_reply(p->gs, j->ev.conversation,
			                j->ev.author_kind == CONV_AUTHOR_PEER ? j->ev.author_id
			                                                      : NULL,
			                time_now_ms());
			store_reply(j, artifact);
		}
		decision_set(&d, VERDICT_INFO, "answered", "%s%s%s%s%.*s",
		             j->is_say                                                 ? "sent"
		             : final && final->rule && !strcmp(final->rule, "reacted") ? "reacted"
		                                                                       : "answered",
		             artifact && *artifact ? ": " : "", artifact ? artifact : "",
		             what && *what ? "; " : "", PIPELINE_NOTE_MAX, what ? what : "");
		note(j, STAGE_RECORD, &d);
		if (j->g.claim_needed && p->coord)
			coord_release(p->coord, j->g.claim_key);
	} else if (final) {
		decision_set(&d, VERDICT_INFO, "not_answered", "not answered: %s (%s)",
		             final->reason, final->rule ? final->rule : "");
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

/* A candidate was refused (validator REJECT, outbound not SENT): back to
 * the source when it asked to hear it, else the walk ends. */
static void refused(struct pipeline_job *j, enum decision_stage stage, const struct decision *d,
                    bool salvage)
{
	struct pipeline_outcome o = {
	        .sent = false, .stage = stage, .final = d, .artifact = NULL, .salvage = salvage};
	if (j->ended && j->revise) {
		/* The job is the source's again: it answers with pipeline_reply,
		 * pipeline_silent or pipeline_react, now (from inside) or later. */
		j->ended(j->ended_ud, j, &o);
		return;
	}
	if (j->ended)
		j->ended(j->ended_ud, j, &o);
	job_end(j, false, d, NULL, NULL);
}

/* The candidate went out: the source hears it (and may add what it
 * recorded), then the record. */
static void sent(struct pipeline_job *j, const struct decision *final, const char *artifact)
{
	struct strbuf what;
	sb_init(&what, PIPELINE_NOTE_MAX + 1);
	if (j->ended) {
		struct pipeline_outcome o = {.sent = true,
		                             .stage = STAGE_OUTBOUND,
		                             .final = final,
		                             .artifact = artifact,
		                             .note = &what};
		j->ended(j->ended_ud, j, &o);
	}
	job_end(j, true, final, artifact, sb_cstr(&what));
	sb_free(&what);
}

/* ---- the last look ------------------------------------------------------------- */

/* An echo window of the conversation as the validator builds it: agents
 * compared, persons context (§9.1). */
static struct echo_window *window_of(struct pipeline *p, const char *conversation, size_t *agents)
{
	struct echo_window *w = echo_window_new(PIPELINE_ECHO_WINDOW);
	size_t n = conv_store_message_count(p->store, conversation);
	size_t from = n > PIPELINE_ECHO_WINDOW ? n - PIPELINE_ECHO_WINDOW : 0, k = 0;
	for (size_t i = from; i < n; i++) {
		const struct conv_message *m = conv_store_message_at(p->store, conversation, i);
		if (!m)
			continue;
		bool agent = !conv_author_is_person(m->author_kind);
		k += agent;
		echo_window_push(w, m->author_name, agent, m->text ? m->text : "");
	}
	if (agents)
		*agents = k;
	return w;
}

/* The store's last message id in conversation, copied; NULL when none. */
static char *last_id(struct pipeline *p, const char *conversation)
{
	size_t n = conv_store_message_count(p->store, conversation);
	const struct conv_message *m =
	        n ? conv_store_message_at(p->store, conversation, n - 1) : NULL;
	return m && m->message_id ? xstrdup(m->message_id) : NULL;
}

/* Other agents' messages of the conversation after j->win_last (all of the
 * window's when the store had none then), oldest first. */
static size_t fresh_since(struct pipeline_job *j, struct pipeline_fresh *out, size_t cap)
{
	struct conv_store *cs = j->p->store;
	size_t n = conv_store_message_count(cs, j->ev.conversation), k = 0;
	size_t low = n > PIPELINE_ECHO_WINDOW ? n - PIPELINE_ECHO_WINDOW : 0;
	for (size_t i = n; i-- > low && k < cap;) {
		const struct conv_message *m = conv_store_message_at(cs, j->ev.conversation, i);
		if (!m)
			continue;
		if (j->win_last && m->message_id && strcmp(m->message_id, j->win_last) == 0)
			break;
		if (conv_author_is_person(m->author_kind) || m->author_kind == CONV_AUTHOR_SELF)
			continue;
		out[k++] = (struct pipeline_fresh){.author = m->author_name, .text = m->text};
	}
	for (size_t i = 0; i < k / 2; i++) {
		struct pipeline_fresh t = out[i];
		out[i] = out[k - 1 - i];
		out[k - 1 - i] = t;
	}
	return k;
}

/* outbound_send.look: right before the port sends the candidate. */
static bool last_look(void *ud, const char *text, char *why, size_t cap)
{
	struct pipeline_job *j = ud;
	if (cap)
		why[0] = '\0';
	struct pipeline_fresh fresh[PIPELINE_ECHO_WINDOW];
	size_t nfresh = fresh_since(j, fresh, PIPELINE_ECHO_WINDOW);
	if (!nfresh)
		return true;
	struct echo_window *w = window_of(j->p, j->ev.conversation, NULL);
	struct decision d;
	bool echo = pipeline_late_echo(text, j->has_vctx ? j->vctx.n_commitments : 0, w,
	                               j->vd.echo_ran ? &j->vd.echo : NULL, fresh, nfresh, &d);
	echo_window_free(w);
	if (!echo)
		return true;
	note(j, STAGE_OUTBOUND, &d);
	if (cap)
		snprintf(why, cap, "%s: %s", d.rule, d.reason);
	return false;
}

/* ---- outbound ------------------------------------------------------------------ */

static void on_sent(void *ud, const struct decision *final, const char *artifact)
{
	struct pipeline_job *j = ud;
	if (final->verdict == VERDICT_SENT)
		sent(j, final, artifact);
	else
		refused(j, STAGE_OUTBOUND, final, false);
}

static void send_text(struct pipeline_job *j, const char *text, size_t len)
{
	struct pipeline *p = j->p;
	struct decision d;
	if (!j->is_say && j->src && j->src->deliver) {
		j->src->deliver(j->src->ud, &j->ev, text, len);
		decision_set(&d, VERDICT_SENT, "delivered", "shown to the owner (%zu bytes)", len);
		note(j, STAGE_OUTBOUND, &d);
		sent(j, &d, NULL);
		return;
	}
	char target[PIPELINE_TARGET_MAX];
	if (j->is_say) {
		snprintf(target, sizeof target, "%s", j->target);
	} else if (!j->src || !j->src->reply_target ||
	           j->src->reply_target(j->src->ud, &j->ev, target, sizeof target) != 0) {
		decision_set(&d, VERDICT_DROP, "no_target",
		             "a reply to this message has nowhere to go");
		note(j, STAGE_OUTBOUND, &d);
		refused(j, STAGE_OUTBOUND, &d, false);
		return;
	}
	if (!p->outbound) {
		decision_set(&d, VERDICT_DROP, "no_outbound",
		             "nothing can be sent from this process");
		note(j, STAGE_OUTBOUND, &d);
		refused(j, STAGE_OUTBOUND, &d, false);
		return;
	}
	/* The platform fields for the port (reply refs, …): the candidate's
	 * own, else the source's. */
	cJSON *extra = NULL;
	if (j->extra) {
		extra = cJSON_Duplicate(j->extra, 1);
	} else if (!j->is_say && j->src && j->src->reply_extra) {
		extra = cJSON_CreateObject();
		if (j->src->reply_extra(j->src->ud, &j->ev, extra) != 0) {
			cJSON_Delete(extra);
			decision_set(&d, VERDICT_DROP, "reply_extra",
			             "the %s source could not give this reply its platform fields "
			             "(the reply refs): not sent",
			             conv_platform_name(j->ev.platform));
			note(j, STAGE_OUTBOUND, &d);
			refused(j, STAGE_OUTBOUND, &d, false);
			return;
		}
	}
	if (extra && !extra->child) {
		cJSON_Delete(extra);
		extra = NULL;
	}
	char key[PIPELINE_ID_MAX + 64];
	if (j->idem_key)
		snprintf(key, sizeof key, "%s", j->idem_key);
	else
		snprintf(key, sizeof key, "%s:%s%s", j->is_say ? "say" : "reply", j->ev.message_id,
		         j->key_suffix ? j->key_suffix : "");
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
	        .look = j->last_look ? last_look : NULL,
	        .look_ud = j,
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
	case CONV_PLATFORM_SPACE:
		return VALIDATOR_PLATFORM_SPACE;
	case CONV_PLATFORM_BLUESKY:
		return VALIDATOR_PLATFORM_BLUESKY;
	case CONV_PLATFORM_GITHUB:
		return VALIDATOR_PLATFORM_GITHUB;
	default:
		return -1;
	}
}

/* The context of this candidate's validation: the caller's facts, or the
 * defaults, with the job's platform and window. */
static void context_of(struct pipeline_job *j, struct validator_context *ctx)
{
	if (j->has_vctx) {
		*ctx = j->vctx;
		ctx->pending_request = j->vctx_request;
		ctx->detected_repo = j->vctx_repo;
		ctx->members = (const char *const *)j->vctx_members;
	} else {
		*ctx = (struct validator_context){
		        .mode = j->is_say ? VALIDATOR_MODE_ACTION : VALIDATOR_MODE_DISCUSSION,
		        .role = VALIDATOR_ROLE_ACTOR,
		        .is_action_owner = true,
		        .connected_agents = 1,
		        .agent_msgs_since_host = j->win_agents,
		};
	}
	ctx->platform = (enum validator_platform)validator_platform_of(j->ev.platform);
	ctx->window = j->own_win ? j->own_win : j->win;
}

/* The caller's validator facts, as the job's own (strings copied). */
static void take_vctx(struct pipeline_job *j, const struct validator_context *v)
{
	if (!v)
		return;
	j->vctx = *v;
	j->has_vctx = true;
	j->vctx_request = v->pending_request ? xstrdup(v->pending_request) : NULL;
	j->vctx_repo = v->detected_repo ? xstrdup(v->detected_repo) : NULL;
	j->vctx.window = NULL; /* the job's own, built at validation */
	j->vctx.n_members = 0;
	if (v->members && v->n_members) {
		j->vctx_members = xcalloc(v->n_members, sizeof *j->vctx_members);
		for (size_t i = 0; i < v->n_members; i++)
			if (v->members[i])
				j->vctx_members[j->vctx.n_members++] = xstrdup(v->members[i]);
	}
}

/* The caller's echo window, as the job's own. */
static void take_window(struct pipeline_job *j, const struct pipeline_msg *w, size_t n)
{
	if (!w || !n)
		return;
	j->own_win = echo_window_new(n < PIPELINE_ECHO_WINDOW ? n : PIPELINE_ECHO_WINDOW);
	size_t from = n > PIPELINE_ECHO_WINDOW ? n - PIPELINE_ECHO_WINDOW : 0;
	for (size_t i = from; i < n; i++)
		echo_window_push(j->own_win, w[i].author, w[i].agent, w[i].text ? w[i].text : "");
}

/* The validator's verdict in vd, recorded: on to outbound, or refused. */
static void after_validation(struct pipeline_job *j, enum validator_verdict v)
{
	struct decision d;
	validator_to_decision(&j->vd, &d);
	note(j, STAGE_VALIDATOR, &d);
	if (v == VALIDATOR_ACCEPT || (v == VALIDATOR_TRIM && !j->vd.text)) {
		send_text(j, j->text, j->len);
		return;
	}
	if (v == VALIDATOR_TRIM) {
		free(j->text);
		j->text = j->vd.text;
		j->len = strlen(j->text);
		j->vd.text = NULL;
		send_text(j, j->text, j->len);
		return;
	}
	refused(j, STAGE_VALIDATOR, &d, j->vd.salvage);
}

static void on_judged(void *ud, int verdict, const char *reason)
{
	struct judge_ticket *t = ud;
	struct pipeline_job *j = t->job;
	free(t);
	if (!j)
		return;
	j->ticket = NULL;
	struct validator_context ctx;
	context_of(j, &ctx);
	enum validator_verdict v = validator_resume(j->text, &ctx, verdict, reason, &j->vd);
	if (verdict != 1) {
		struct decision d;
		decision_set(&d, VERDICT_INFO, "echo_judge", "%s",
		             reason && *reason ? reason : "not an echo");
		note(j, STAGE_VALIDATOR, &d);
	}
	after_validation(j, v);
}

static void validate(struct pipeline_job *j)
{
	struct pipeline *p = j->p;
	struct decision d;
	int vp = validator_platform_of(j->ev.platform);
	if (vp < 0 || (!j->is_say && j->src && j->src->deliver)) {
		decision_set(&d, VERDICT_APPROVE, "owner_private",
		             "private answer to the owner: nothing to moderate");
		note(j, STAGE_VALIDATOR, &d);
		send_text(j, j->text, j->len);
		return;
	}
	if (memchr(j->text, '\0', j->len)) {
		decision_set(&d, VERDICT_REJECT, "nul", "the candidate holds a NUL byte");
		note(j, STAGE_VALIDATOR, &d);
		refused(j, STAGE_VALIDATOR, &d, false);
		return;
	}
	/* The echo window of this moment, and where it ended (the last look
	 * compares what arrives after it). */
	echo_window_free(j->win);
	j->win = window_of(p, j->ev.conversation, &j->win_agents);
	free(j->win_last);
	j->win_last = last_id(p, j->ev.conversation);
	struct validator_context ctx;
	context_of(j, &ctx);
	validator_decision_clear(&j->vd);
	memset(&j->vd, 0, sizeof j->vd);
	enum validator_verdict v = validator_validate(j->text, &ctx, &j->vd);
	if (v != VALIDATOR_REFER) {
		after_validation(j, v);
		return;
	}
	decision_set(&d, VERDICT_INFO, "echo_judge",
	             "borderline echo (pair %.2f, novelty %.2f): asking the judge", j->vd.echo.pair,
	             j->vd.echo.novelty);
	note(j, STAGE_VALIDATOR, &d);
	j->ticket = xcalloc(1, sizeof *j->ticket);
	j->ticket->job = j;
	struct judge_ticket *t = j->ticket;
	if (validator_refer(&ctx, j->text, on_judged, t) != 0)
		on_judged(t, -1, "no judge to ask: not an echo");
}

/* ---- compose -------------------------------------------------------------------- */

void pipeline_reply(struct pipeline_job *j, const struct pipeline_reply *r)
{
	struct decision d;
	candidate_clear(j);
	j->ended = r->ended;
	j->ended_ud = r->ud;
	j->revise = r->revise;
	if (j->rounds >= PIPELINE_MAX_ROUNDS) {
		decision_set(&d, VERDICT_DROP, "rounds",
		             "%d candidates for one message: no more (PIPELINE_MAX_ROUNDS)",
		             PIPELINE_MAX_ROUNDS);
		note(j, STAGE_COMPOSE, &d);
		job_end(j, false, &d, NULL, NULL);
		return;
	}
	j->rounds++;
	size_t len = r->text ? r->len : 0;
	j->text = xmalloc(len + 1);
	if (len)
		memcpy(j->text, r->text, len);
	j->text[len] = '\0';
	j->len = len;
	j->key_suffix = r->key_suffix && *r->key_suffix ? xstrdup(r->key_suffix) : NULL;
	j->idem_key = r->idem_key && *r->idem_key ? xstrdup(r->idem_key) : NULL;
	take_vctx(j, r->vctx);
	take_window(j, r->window, r->nwindow);
	j->extra = r->extra ? cJSON_Duplicate(r->extra, 1) : NULL;
	j->last_look = r->last_look;
	decision_set(&d, VERDICT_PASS, "composed", "candidate of %zu bytes%s", len,
	             j->rounds > 1 ? " (another try)" : "");
	note(j, STAGE_COMPOSE, &d);
	validate(j);
}

void pipeline_silent(struct pipeline_job *j, const char *rule, const char *why)
{
	struct decision d;
	decision_set(&d, VERDICT_INFO, rule && *rule ? rule : "nothing_to_send", "%s",
	             why && *why ? why : "the composer had nothing to say");
	note(j, STAGE_COMPOSE, &d);
	job_end(j, false, &d, NULL, NULL);
}

void pipeline_composed(struct pipeline_job *j, const char *text, size_t len, const char *why)
{
	if (!text) {
		pipeline_silent(j, "nothing_to_send", why);
		return;
	}
	struct pipeline_reply r = {.text = text, .len = len};
	pipeline_reply(j, &r);
}

static void start_react(struct pipeline_job *j, const struct decision *why)
{
	if (j->src && j->src->react) {
		j->src->react(j->src->ud, j, &j->ev, why);
		return;
	}
	job_end(j, false, why, NULL, NULL);
}

void pipeline_react(struct pipeline_job *j, const char *rule, const char *why)
{
	struct decision d;
	decision_set(&d, VERDICT_REACT, rule && *rule ? rule : "react", "%s",
	             why && *why ? why : "a reaction instead of a reply");
	note(j, STAGE_COMPOSE, &d);
	start_react(j, &d);
}

void pipeline_reacted(struct pipeline_job *j, const struct decision *final, const char *artifact)
{
	if (final && final->verdict == VERDICT_SENT) {
		struct decision d;
		decision_set(&d, VERDICT_SENT, "reacted", "%s", final->reason);
		job_end(j, true, &d, artifact, NULL);
		return;
	}
	struct decision d;
	if (final)
		d = *final;
	else
		decision_set(&d, VERDICT_FAIL, "reaction", "the reaction was not made");
	job_end(j, false, &d, NULL, NULL);
}

const struct conv_event *pipeline_job_event(const struct pipeline_job *job)
{
	return &job->ev;
}

const struct gate_result *pipeline_job_gate(const struct pipeline_job *job)
{
	return &job->g;
}

static void compose(struct pipeline_job *j)
{
	struct decision d;
	if (!j->src || !j->src->compose) {
		decision_set(&d, VERDICT_INFO, "no_composer",
		             "nothing composes replies on %s in this process: recorded only",
		             conv_platform_name(j->ev.platform));
		note(j, STAGE_COMPOSE, &d);
		job_end(j, false, &d, NULL, NULL);
		return;
	}
	j->src->compose(j->src->ud, j, &j->ev, &j->g);
}

static void on_claim(void *ud, enum coord_result r, const char *holder, const char *why)
{
	struct pipeline_job *j = ud;
	struct decision d;
	if (r == COORD_WON) {
		decision_set(&d, VERDICT_PASS, "claim", "claimed %s for %" PRId64 " s",
		             j->g.claim_key, j->g.claim_ttl_ms / 1000);
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
	job_end(j, false, &d, NULL, NULL);
}

/* ---- the walk -------------------------------------------------------------------- */

/* After the shared gate passed (or allowed a reaction): the platform's own
 * gate, then the claim, compose or the reaction. */
static void after_gate(struct pipeline_job *j)
{
	struct pipeline *p = j->p;
	struct decision pd;
	if (j->src && j->src->gate) {
		decision_set(&pd, VERDICT_PASS, "platform", "the platform's gate let it through");
		j->src->gate(j->src->ud, &j->ev, &j->g, &pd);
		note(j, STAGE_GATE, &pd);
		if (pd.verdict == VERDICT_REACT) {
			start_react(j, &pd);
			return;
		}
		if (pd.verdict != VERDICT_PASS) {
			job_end(j, false, &pd, NULL, NULL);
			return;
		}
	}
	if (j->g.d.verdict == VERDICT_REACT) {
		start_react(j, &j->g.d);
		return;
	}
	if (j->g.claim_needed) {
		if (!p->coord) {
			on_claim(j, COORD_UNAVAILABLE, NULL, "no coordination backend");
			return;
		}
		if (coord_claim(p->coord, j->g.claim_key, j->g.claim_ttl_ms, on_claim, j) != 0)
			on_claim(j, COORD_UNAVAILABLE, NULL, "the claim could not be asked");
		return;
	}
	compose(j);
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
	             ev->chain, ev->chain_explicit ? "" : ", none carried",
	             ev->text ? ev->text : "");
	note(j, STAGE_EVENT, &d);
	if (answered) {
		decision_set(&d, VERDICT_BLOCK, "answered",
		             "already answered (before a restart, perhaps): not again");
		note(j, STAGE_GATE, &d);
		job_end(j, false, &d, NULL, NULL);
		return 0;
	}

	/* gate */
	int64_t now = time_now_ms();
	struct gate_input in = {
	        .ev = &j->ev,
	        .derived_chain =
	                conv_store_derived_chain(p->store, ev->conversation, ev->message_id),
	        .replies_to_us = ev->parent_id &&
	                         conv_store_is_ours(p->store, ev->conversation, ev->parent_id),
	        .paused = p->paused,
	        .thread_depth = ev->thread_depth,
	        .our_replies = (int64_t)conv_store_count_ours(p->store, ev->conversation),
	        .platform_decides = j->src && j->src->decides_triggers && j->src->gate,
	};
	gate_check(p->gs, &in, now, &p->gate, &j->g);
	gate_note_incoming(p->gs, &j->ev, now);
	note(j, STAGE_GATE, &j->g.d);
	if (j->g.d.verdict != VERDICT_PASS && j->g.d.verdict != VERDICT_REACT) {
		job_end(j, false, &j->g.d, NULL, NULL);
		return 0;
	}
	after_gate(j);
	return 0;
}

int pipeline_say(struct pipeline *p, enum conv_platform platform, const char *target,
                 const char *source, const char *text, size_t len, int64_t chain, const char *id,
                 pipeline_say_fn done, void *ud)
{
	return pipeline_say_ctx(p, platform, target, source, text, len, chain, false, id, NULL,
	                        done, ud);
}

int pipeline_say_ctx(struct pipeline *p, enum conv_platform platform, const char *target,
                     const char *source, const char *text, size_t len, int64_t chain, bool courtesy,
                     const char *id, const struct validator_context *vctx, pipeline_say_fn done,
                     void *ud)
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
	const char *id = r->id;
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
		pipeline_note(p, r->platform, r->target, id, STAGE_GATE, &d);
		if (r->done)
			r->done(r->ud, &d, NULL);
		return -1;
	}
	struct pipeline_job *j = job_new(p);
	char conv[PIPELINE_TARGET_MAX];
	const struct pipeline_source *src =
	        p->has_source[r->platform] ? &p->sources[r->platform] : NULL;
	if (!src || !src->say_conversation ||
	    src->say_conversation(src->ud, r->target, conv, sizeof conv) != 0)
		snprintf(conv, sizeof conv, "%s", r->target);
	struct conv_event_src es = {
	        .platform = r->platform,
	        .conversation = conv,
	        .message_id = id,
	        .author_id = "self",
	        .author_name = "self",
	        .author_kind = CONV_AUTHOR_SELF,
	        .chain = r->chain,
	        .chain_explicit = r->chain >= 0,
	        .text = r->text,
	        .text_len = r->len,
	        .time_ms = time_now_ms(),
	        .thread_depth = -1,
	};
	conv_event_init(&j->ev, &es);
	j->is_say = true;
	j->target = xstrdup(r->target);
	j->source_name = xstrdup(r->source ? r->source : "agent");
	j->say_done = r->done;
	j->say_ud = r->ud;
	j->g.chain_out = r->chain;
	j->g.courtesy = r->courtesy;
	decision_set(&d, VERDICT_PASS, "say", "%s asks to send %zu bytes to %s", j->source_name,
	             r->len, r->target);
	note(j, STAGE_COMPOSE, &d);
	j->rounds = 1;
	j->text = xmalloc(r->len + 1);
	if (r->len)
		memcpy(j->text, r->text, r->len);
	j->text[r->len] = '\0';
	j->len = r->len;
	take_vctx(j, r->vctx);
	take_window(j, r->window, r->nwindow);
	if (r->extra && r->extra->child)
		j->extra = cJSON_Duplicate(r->extra, 1);
	validate(j);
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
