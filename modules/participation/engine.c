/*
 * engine — the participation tick wired to the room, the model and the
 * pipeline. See engine.h; engine_int.h says how the files divide the work.
 */
#include "modules/participation/engine_int.h"

#include "modules/participation/judge.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/llm/llm.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/commitments/ledger.h"
#include "modules/commitments/workkey.h"
#include "modules/conversation/store.h"
#include "modules/pipeline/pipeline.h"
#include "modules/skills/skills.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

#define LOG_COMP "participation"

/* ---- small helpers ----------------------------------------------------------------- */

static void pending_clear(struct pending *p)
{
	free(p->author);
	free(p->text);
	free(p->message_id);
	free(p->conversation);
	memset(p, 0, sizeof *p);
}

struct anchor *part_anchor_take(struct part_engine *e)
{
	e->anchor->refs++;
	return e->anchor;
}

/* Drops one reference; returns the engine, or NULL when it is gone (the
 * anchor is freed then if nobody else holds it). */
struct part_engine *part_anchor_drop(struct anchor *a)
{
	struct part_engine *e = a->e;
	a->refs--;
	if (!e && a->refs == 0)
		free(a);
	return e;
}

static uint64_t next_rand(struct part_engine *e)
{
	/* xorshift64*: the cooldown's draw, nothing secret */
	uint64_t x = e->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	e->rng = x;
	return x * 2685821657736338717ULL;
}

static void adjust_cfg(struct part_engine *e);

/* The tick's decisions go into the story of the message it answers; a
 * tick without one (a forced action on a quiet tick, the extraction after
 * the answer was recorded) into the story of its own words. */
void part_record_at(struct part_engine *e, enum decision_stage stage, const struct decision *d)
{
	e->last = *d;
	if (e->trig_job)
		pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, e->trig_conv, e->trig_id, stage, d);
	else if (e->say_id[0])
		pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, e->trig_conv, e->say_id, stage, d);
	else
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "tick", "verdict",
		       decision_verdict_name(d->verdict), "rule", d->rule ? d->rule : "", "reason",
		       d->reason);
}

void part_record(struct part_engine *e, const struct decision *d)
{
	part_record_at(e, STAGE_COMPOSE, d);
}

/* A walk the engine holds ends without an answer: rule and why. */
static void job_silent(struct pipeline_job *job, const char *rule, const char *why)
{
	if (job)
		pipeline_silent(job, rule, why);
}

void part_tick_end(struct part_engine *e)
{
	/* The message the tick answered ends here unless its words are with
	 * the pipeline: the last decision says why it is not answered. */
	if (e->trig_job && !e->trig_lent) {
		struct pipeline_job *j = e->trig_job;
		e->trig_job = NULL;
		job_silent(j, e->last.rule ? e->last.rule : "declined",
		           e->last.reason[0] ? e->last.reason : "the tick ended without words");
	}
	e->ticking = false;
	e->run = NULL;
	part_decision_clear(&e->dec);
	e->have_dec = false;
	free(e->said);
	e->said = NULL;
	e->salvaged = e->retried = e->forced_now = e->disc_retried = e->extracted = false;
	e->phase = PH_DECISION;
	e->say_id[0] = '\0';
	free(e->host_lines);
	e->host_lines = NULL;
	void (*done)(void *) = e->done;
	void *ud = e->done_ud;
	e->done = NULL;
	e->done_ud = NULL;
	if (done)
		done(ud);
}

/* ---- feeding ------------------------------------------------------------------------- */

static struct pending *batch_slot(struct part_engine *e);

/* Fills p from ev (a chat of the room). */
static void pending_fill(struct pending *p, const struct conv_event *ev)
{
	p->author = xstrdup(ev->author_name ? ev->author_name : "?");
	size_t len = ev->text ? ev->text_len : 0;
	p->text = xmalloc(len + 1);
	if (len)
		memcpy(p->text, ev->text, len);
	p->text[len] = '\0';
	p->len = len;
	p->time_ms = ev->time_ms ? ev->time_ms : time_now_ms();
	p->kind = ev->author_kind == CONV_AUTHOR_HOST   ? PART_AUTHOR_HOST
	          : ev->author_kind == CONV_AUTHOR_PEER ? PART_AUTHOR_AGENT
	                                                : PART_AUTHOR_UNKNOWN;
	/* The room's addressed list rides on host chats (§3.16); the link
	 * applies the same rule to agents' chats against the member names. */
	p->addressed_known = true;
	p->addressed_me = ev->addressed_me;
	p->addressed_others = !ev->addressed_me && ev->naddressed > 0;
	p->from_history = ev->from_history;
	p->message_id = xstrdup(ev->message_id ? ev->message_id : "");
	p->conversation = xstrdup(ev->conversation ? ev->conversation : "space:room");
}

void part_engine_observe(struct part_engine *e, const struct conv_event *ev)
{
	if (!e || !ev || ev->from_history || ev->author_kind == CONV_AUTHOR_SELF)
		return;
	struct pending *p = batch_slot(e);
	pending_fill(p, ev);
	p->context = true;
}

void part_engine_offer(struct part_engine *e, struct pipeline_job *job, const struct conv_event *ev,
                       const struct gate_result *g)
{
	(void)g;
	if (!e || !ev) {
		job_silent(job, "no_engine", "the room's engine is not running");
		return;
	}
	/* the chat is in the batch already when the room showed it to us
	 * (part_engine_observe): it becomes a trigger with its walk */
	struct pending *p = NULL;
	for (size_t i = e->nbatch; ev->message_id && i-- > 0 && !p;)
		if (e->batch[i].context && e->batch[i].message_id &&
		    strcmp(e->batch[i].message_id, ev->message_id) == 0)
			p = &e->batch[i];
	if (!p) {
		p = batch_slot(e);
		pending_fill(p, ev);
		for (size_t i = 0; ev->message_id && i < PART_ENGINE_CTX_IDS && !p->noted; i++)
			p->noted = strcmp(e->ctx_ids[i], ev->message_id) == 0;
	}
	p->context = false;
	p->job = job;
}

/* The batch is full: the oldest entry goes, logged, its walk ended. */
static struct pending *batch_slot(struct part_engine *e)
{
	if (e->nbatch == PART_ENGINE_BATCH_MAX) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "batch full: the oldest chat is dropped", "id",
		       e->batch[0].message_id, "max", LOG_INT(PART_ENGINE_BATCH_MAX));
		job_silent(e->batch[0].job, "batch_full",
		           "too many chats waiting for the participation tick: the oldest is "
		           "dropped");
		pending_clear(&e->batch[0]);
		memmove(&e->batch[0], &e->batch[1], (e->nbatch - 1) * sizeof e->batch[0]);
		e->nbatch--;
		memset(&e->batch[e->nbatch], 0, sizeof e->batch[0]);
	}
	return &e->batch[e->nbatch++];
}

void part_engine_claim(struct part_engine *e, const char *peer, const char *action,
                       const char *target)
{
	if (!e || !peer || !action || cmt_type_parse(action) < 0 || strcmp(peer, e->self) == 0)
		return;
	part_peer_claims_note(&e->peer_claims, peer, action, target ? target : "", time_now_ms());
	struct pending *p = batch_slot(e);
	p->claim = true;
	p->author = xstrdup(peer);
	p->text = xstrdup(target ? target : "");
	p->len = strlen(p->text);
	p->time_ms = time_now_ms();
	p->kind = PART_AUTHOR_AGENT;
	p->message_id = xstrdup("");
	p->conversation = xstrdup("space:room");
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "peer claim", "peer", peer, "action", action, "target",
	       p->text);
}

struct part_judge *part_engine_judge(struct part_engine *e)
{
	return e ? e->judge : NULL;
}

size_t part_engine_pending(const struct part_engine *e)
{
	return e ? e->nbatch : 0;
}

const struct part_state *part_engine_state(const struct part_engine *e)
{
	return e ? &e->st : NULL;
}

void part_engine_reply_delay(const struct part_engine *e, int64_t *min_ms, int64_t *max_ms)
{
	*min_ms = e ? e->cfg.reply_delay_min_ms : 0;
	*max_ms = e ? e->cfg.reply_delay_max_ms : 0;
}

bool part_engine_commitment_failed(struct part_engine *e, const char *id)
{
	if (!e || !id || !*id)
		return false;
	struct decision d;
	bool reopened = part_req_commits_failed(&e->req_commits, &e->st, id, &d);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, decision_verdict_name(d.verdict), "rule", d.rule, "reason",
	       d.reason);
	char conv[PART_REQ_COMMIT_ID_MAX + 16];
	snprintf(conv, sizeof conv, "commitment:%s", id);
	pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, conv, id, STAGE_RECORD, &d);
	return reopened;
}

/* ---- the send (§12) --------------------------------------------------------------------- */

/* A commitment as the ledger's action params (the tools' argument shapes). */
static cJSON *commit_params(const struct cmt_item *c, const char *detected_repo)
{
	cJSON *p = cJSON_CreateObject();
	if (c->type == CMT_CREATE_WORKSPACE) {
		/* the organisation alone (no default from the conversation's
		 * repository: the claim key and the ledger say the same) */
		if (c->org)
			cJSON_AddStringToObject(p, "owner", c->org);
		if (c->title && c->title[0])
			cJSON_AddStringToObject(p, "title", c->title);
		if (c->description && c->description[0])
			cJSON_AddStringToObject(p, "description", c->description);
		return p;
	}
	/* the repository the claims named: the commitment's, else the one the
	 * conversation names */
	const char *repo = c->repo && c->repo[0] ? c->repo : detected_repo;
	if (repo) {
		const char *slash = strchr(repo, '/');
		if (slash) {
			char owner[PART_REPO_MAX];
			snprintf(owner, sizeof owner, "%.*s", (int)(slash - repo), repo);
			cJSON_AddStringToObject(p, "owner", owner);
			cJSON_AddStringToObject(p, "repo", slash + 1);
		}
	}
	const char *body = c->description ? c->description : c->content;
	switch (c->type) {
	case CMT_CREATE_ISSUE:
		cJSON_AddStringToObject(p, "title", c->title ? c->title : (body ? body : ""));
		if (body)
			cJSON_AddStringToObject(p, "body", body);
		break;
	case CMT_CREATE_PLAN:
		cJSON_AddStringToObject(p, "title", c->title ? c->title : (body ? body : ""));
		cJSON_AddStringToObject(p, "goal", body ? body : (c->title ? c->title : ""));
		cJSON_AddStringToObject(p, "context", "promised in the agent-space");
		cJSON_AddItemToObject(p, "tasks", cJSON_CreateArray());
		break;
	case CMT_COMMENT_ISSUE:
		cJSON_AddNumberToObject(p, "issue_number", (double)c->issue_number);
		cJSON_AddStringToObject(p, "body", body ? body : (c->title ? c->title : ""));
		break;
	case CMT_POST_BLUESKY:
		cJSON_AddStringToObject(p, "text",
		                        c->content ? c->content
		                                   : (body ? body : (c->title ? c->title : "")));
		break;
	default:
		break;
	}
	return p;
}

/* One commitment's decision: in its own story ("commitment:<ledger id>"
 * when it has an id), summed up in what. */
static void commitment_note(struct part_engine *e, const char *id, const struct decision *d,
                            struct strbuf *what)
{
	if (id && *id) {
		char conv[LEDGER_ID_MAX + 16];
		snprintf(conv, sizeof conv, "commitment:%s", id);
		pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, conv, id, STAGE_RECORD, d);
	}
	if (what)
		sb_printf(what, "%s%s", what->len ? "; " : "commitments: ", d->reason);
	else
		part_record(e, d);
}

size_t part_enqueue_commitments(struct part_engine *e, struct strbuf *what)
{
	size_t kept = 0;
	for (size_t i = 0; i < e->dec.commitments.n; i++) {
		const struct cmt_item *c = &e->dec.commitments.item[i];
		struct decision d;
		struct commit_work w;
		part_claim_work(c, e->out.repo, &w);
		const char *target = w.promise_target;
		const char *holder = part_live_holder(e, w.action, target);
		if (!holder && w.has_work &&
		    (holder = part_live_holder(e, w.action, w.work_target)))
			target = w.work_target;
		if (!holder && part_own_has(e, c)) {
			decision_set(&d, VERDICT_DROP, "already_committed",
			             "%s:%s is already in my ledger: not enqueued again",
			             cmt_type_name(c->type), target);
			commitment_note(e, NULL, &d, what);
			continue;
		}
		if (holder) {
			/* claimed while the words were on their way */
			decision_set(&d, VERDICT_DROP, "claimed_by_peer",
			             "%s holds a live claim on %s:%s: not enqueued (no duplicate "
			             "action)",
			             holder, cmt_type_name(c->type), target);
			commitment_note(e, NULL, &d, what);
			continue;
		}
		cJSON *params = commit_params(c, e->out.repo);
		char id[LEDGER_ID_MAX] = "";
		struct ga_err err = {{0}};
		int r = e->ledger ? ledger_add(e->ledger, cmt_type_name(c->type), "space", params,
		                               time_now_ms(), id, &err)
		                  : -1;
		if (!e->ledger)
			err_set(&err, "no commitment ledger in this process");
		if (r == LEDGER_ADDED || r == LEDGER_DUPLICATE) {
			kept++;
			if (e->out.request_open) /* what fulfils it (§6.3) */
				part_req_commits_note(&e->req_commits, &e->st, id);
			decision_set(&d, VERDICT_INFO, "commitment", "%s %s (source space)%s",
			             cmt_type_name(c->type), id,
			             r == LEDGER_DUPLICATE ? ": already open" : " enqueued");
		} else {
			decision_set(&d, VERDICT_FAIL, "commitment", "%s not enqueued: %s",
			             cmt_type_name(c->type), err.msg);
		}
		commitment_note(e, id, &d, what);
		cJSON_Delete(params);
	}
	return kept;
}

/* The words went out: the cooldown, the claims' hold, the commitments (or
 * the extraction when the words promise without them). what: the record's
 * note, NULL for words of their own. */
static void said(struct part_engine *e, struct strbuf *what)
{
	part_said_work_note(&e->said_work, &e->dec.commitments, e->out.repo);
	int64_t now = time_now_ms();
	int64_t span = e->cd_max > e->cd_min ? e->cd_max - e->cd_min : 0;
	int64_t cd = e->cd_min + (span ? (int64_t)(next_rand(e) % (uint64_t)span) : 0);
	part_note_sent(&e->st, e->self, e->said, strlen(e->said), now, now + cd);
	/* A forced action counts against its cap (§16.8) whether or not it was
	 * said: one refused downstream is not tried again on every tick. */
	if (e->phase == PH_FORCED)
		part_note_forced(&e->st);
	part_claims_said(e);
	if (e->dec.commitments.n && part_enqueue_commitments(e, what) > 0 && e->out.request_open)
		part_note_fulfilled(&e->st, "commitment");
	part_tick_end(e);
}

/* The outcome of the trigger's words (pipeline_reply). */
static void on_reply_ended(void *ud, struct pipeline_job *job, const struct pipeline_outcome *o)
{
	struct part_engine *e = part_anchor_drop(ud);
	if (!e) {
		if (!o->sent)
			pipeline_silent(job, "stopping", "the room's engine stopped");
		return;
	}
	e->trig_lent = false;
	if (o->sent) {
		e->trig_job = NULL; /* the pipeline records it */
		said(e, o->note);
		return;
	}
	/* The job is ours again; its story ends with this refusal's reason
	 * unless the recovery below says more. */
	e->last = *o->final;
	if (e->phase == PH_FORCED)
		part_note_forced(&e->st);
	if (o->stage == STAGE_VALIDATOR) {
		part_recover(e, true, o->salvage);
		return;
	}
	/* The owner's words were refused after the validator (outbound dedup,
	 * withdrawn by the last look): the request still waits on us, so the
	 * owner retry / forced action follow as after a rejection (each once
	 * per tick, part_recover_next). */
	if (e->out.own.is_owner && e->out.request_open && !e->social_only &&
	    e->phase != PH_FORCED) {
		struct decision d;
		decision_set(&d, VERDICT_INFO, "not_said",
		             "my words for the open request were not said (%s: %s): recovering",
		             o->final->rule ? o->final->rule
		                            : decision_verdict_name(o->final->verdict),
		             o->final->reason);
		part_record(e, &d);
		part_recover(e, true, false);
		return;
	}
	part_tick_end(e);
}

/* The outcome of words said on a tick without a message to answer. */
static void on_said_alone(void *ud, const struct decision *final, const char *artifact)
{
	(void)artifact;
	struct part_engine *e = part_anchor_drop(ud);
	if (!e)
		return;
	if (final && final->verdict == VERDICT_SENT) {
		said(e, NULL);
		return;
	}
	if (e->phase == PH_FORCED)
		part_note_forced(&e->st);
	part_tick_end(e);
}

/* The room's members by name, for the validator (a task given to a member
 * is new information); valid until the next call into the room. */
static size_t member_names(struct part_engine *e, const char **names, size_t cap)
{
	struct part_member *m = xcalloc(PART_MEMBERS_MAX, sizeof *m);
	size_t n = e->members(e->ud, m, PART_MEMBERS_MAX), k = 0;
	for (size_t i = 0; i < n && k < cap; i++)
		if (m[i].name)
			names[k++] = m[i].name;
	free(m);
	return k;
}

static void fill_ctx(struct part_engine *e, struct validator_context *ctx)
{
	memset(ctx, 0, sizeof *ctx);
	part_validator_context(&e->out, e->extracted ? 0 : e->dec.commitments.n, ctx);
	ctx->judge = part_judge_validator(e->judge);
	if (!e->own) { /* at the first validation: the stemmer loads then anyway */
		const struct skill *sk = skills_find(e->skills, PART_ENGINE_SKILL);
		const char *own[] = {sk ? sk->body : NULL,
		                     e->have_tool ? e->tool.description : NULL,
		                     e->have_tool ? e->tool.schema_json : NULL};
		e->own = echo_own_new(own, sizeof own / sizeof own[0]);
	}
	ctx->own = e->own;
}

void part_send(struct part_engine *e)
{
	struct decision d;
	char target[PIPELINE_TARGET_MAX];
	if (e->target(e->ud, target, sizeof target) != 0) {
		decision_set(&d, VERDICT_DROP, "no_target", "not in the room any more: not said");
		part_record(e, &d);
		part_tick_end(e);
		return;
	}
	free(e->said);
	e->said = xstrdup(e->dec.message);
	struct validator_context ctx;
	fill_ctx(e, &ctx);
	const char *names[PART_MEMBERS_MAX];
	ctx.members = names;
	ctx.n_members = member_names(e, names, PART_MEMBERS_MAX);
	/* What the room's port needs beside the words: the claims it makes
	 * with them, the typing pause's range (space-config.json). */
	cJSON *extra = cJSON_CreateObject();
	part_claims_extra(e, extra);
	cJSON *delay = cJSON_AddObjectToObject(extra, "replyDelayMs");
	cJSON_AddNumberToObject(delay, "min", (double)e->cfg.reply_delay_min_ms);
	cJSON_AddNumberToObject(delay, "max", (double)e->cfg.reply_delay_max_ms);
	/* Exactly once across restarts (the journal): salvage, the owner
	 * retry and forced action are further words for the same message and
	 * get their own keys. */
	char suffix[32] = "";
	if (e->phase != PH_DECISION)
		snprintf(suffix, sizeof suffix, "#%s%u",
		         e->phase == PH_SALVAGE ? "salvage"
		         : e->phase == PH_RETRY ? "retry"
		                                : "forced",
		         e->phase == PH_SALVAGE ? 1u
		         : e->phase == PH_RETRY ? e->st.owner_rejections
		                                : e->st.forced_attempts + 1);
	if (e->trig_job) {
		struct pipeline_reply r = {.text = e->said,
		                           .len = strlen(e->said),
		                           .key_suffix = suffix,
		                           .vctx = &ctx,
		                           .extra = extra,
		                           .last_look = true,
		                           .ended = on_reply_ended,
		                           .ud = part_anchor_take(e),
		                           .revise = true};
		e->trig_lent = true;
		pipeline_reply(e->trig_job, &r);
	} else {
		if (!e->say_id[0])
			snprintf(e->say_id, sizeof e->say_id, "%s%s", e->trig_id, suffix);
		struct pipeline_say_req r = {.platform = CONV_PLATFORM_SPACE,
		                             .target = target,
		                             .source = "participation",
		                             .text = e->said,
		                             .len = strlen(e->said),
		                             .chain = e->trig_chain,
		                             .courtesy = e->trig_courtesy,
		                             .id = e->say_id,
		                             .vctx = &ctx,
		                             .extra = extra,
		                             .done = on_said_alone,
		                             .ud = part_anchor_take(e)};
		pipeline_say_with(e->pipeline, &r);
	}
	cJSON_Delete(extra);
}

/* The commitments' checks (§4, §12.1 step 4), then the words go to the
 * pipeline's validator (with the judge) and outbound. */
void part_speak(struct part_engine *e)
{
	/* §4 whatever the words: another agent's request is not ours to act on. */
	struct decision own;
	if (part_drop_foreign_commitments(&e->dec.commitments, &e->out, &own))
		part_record_at(e, STAGE_VALIDATOR, &own);
	size_t had = e->dec.commitments.n;
	part_drop_taken(e);
	if (e->phase != PH_DECISION && had && !e->dec.commitments.n) {
		/* salvage / retry / forced words exist only for their commitments */
		struct decision d;
		decision_set(&d, VERDICT_DROP, "nothing_to_promise",
		             "the %s's commitments were all taken: its words are not said",
		             e->phase == PH_SALVAGE ? "salvage"
		             : e->phase == PH_RETRY ? "owner retry"
		                                    : "forced action");
		part_record_at(e, STAGE_VALIDATOR, &d);
		if (e->phase == PH_FORCED)
			part_note_forced(&e->st);
		part_tick_end(e);
		return;
	}
	/* A status line ("On it —", "Creating that now.") at most once per
	 * piece of work per agent. */
	if (e->phase != PH_DECISION &&
	    part_said_work_all(&e->said_work, &e->dec.commitments, e->out.repo)) {
		struct decision d;
		decision_set(&d, VERDICT_DROP, "status_repeat",
		             "the %s's words were said for this work already: not again",
		             e->phase == PH_SALVAGE ? "salvage"
		             : e->phase == PH_RETRY ? "owner retry"
		                                    : "forced action");
		part_record_at(e, STAGE_VALIDATOR, &d);
		if (e->phase == PH_FORCED)
			part_note_forced(&e->st);
		part_tick_end(e);
		return;
	}
	/* §8.4: words that promise without a structured commitment are read
	 * for one before they go (part_send continues) */
	if (!e->dec.commitments.n && e->phase == PH_DECISION) {
		part_extract(e);
		return;
	}
	part_send(e);
}

/* ---- the model call (§8) ----------------------------------------------------------------- */

static int sink_enqueue(void *ud, const char *action, const cJSON *params, char *result, size_t cap,
                        struct ga_err *err)
{
	struct anchor *a = ud;
	struct part_engine *e = a->e;
	if (!e) {
		err_set(err, "the agent left the room");
		return -1;
	}
	if (strcmp(action, "space_decision") != 0) {
		err_set(err, "only space_decision is answered here, not %s", action);
		return -1;
	}
	part_decision_clear(&e->dec);
	if (part_decision_from_json(params, e->social_only, &e->dec, err) != 0) {
		e->have_dec = false;
		return -1;
	}
	e->have_dec = true;
	snprintf(result, cap, "Decision recorded.");
	return 0;
}

static void on_composed(void *ud, const struct compose_result *res)
{
	struct part_engine *e = part_anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	struct decision d;
	if (!e->have_dec && res->content && res->stop != COMPOSE_STOP_CANCELLED) {
		struct ga_err err = {{0}};
		if (part_decision_from_text(res->content, strlen(res->content), e->social_only,
		                            &e->dec, &err) == 0)
			e->have_dec = true;
		else
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "no decision in the model's text", "error",
			       err.msg);
	}
	if (!e->have_dec && res->stop == COMPOSE_STOP_CANCELLED) {
		decision_set(&d, VERDICT_INFO, "cancelled", "the decision call was cancelled: %s",
		             res->reason);
		part_record(e, &d);
		part_tick_end(e);
		return;
	}
	if (!e->have_dec) {
		decision_set(&d, VERDICT_FAIL, "decision",
		             "the model gave no usable space_decision (%s: %s): silent",
		             res->stop_name ? res->stop_name : "?", res->reason);
		part_record(e, &d);
		part_tick_end(e);
		return;
	}
	adjust_cfg(e);
	bool speaks = e->dec.should_speak && e->dec.message && e->dec.message[0];
	if (!speaks) {
		part_recover(e, false, false);
		return;
	}
	decision_set(&d, VERDICT_PASS, "decided",
	             "the model speaks (%zu bytes, %zu commitments%s, %zu dropped)%s%s",
	             strlen(e->dec.message), e->dec.commitments.n,
	             e->dec.from_text ? ", read from text" : "", e->dec.commitments.ndropped_total,
	             e->dec.reason && e->dec.reason[0] ? ": " : "",
	             e->dec.reason ? e->dec.reason : "");
	part_record(e, &d);
	part_speak(e);
}

/* One tool-less model call for the tick (Layer 2, the issue body, the
 * extraction): the engine's anchor rides along. 0 when started; -1 with err
 * (nothing will be called back). temperature < 0: the provider's. */
int part_ask_plain(struct part_engine *e, const char *system, char *user, int max_tokens,
                   double temperature, compose_done_fn done, struct ga_err *err)
{
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = user};
	struct compose_opts o = {
	        .loop = e->loop,
	        .llm = e->llm,
	        .budget = e->budget,
	        .system_prompt = system,
	        .messages = &msg,
	        .n_messages = 1,
	        .max_rounds = 1,
	        .max_tokens = max_tokens,
	        .temperature = temperature < 0 ? 0 : temperature,
	        .has_temperature = temperature >= 0,
	        .done = done,
	        .ud = e->anchor,
	};
	e->anchor->refs++;
	e->run = compose_start(&o, err);
	if (!e->run) {
		e->anchor->refs--;
		return -1;
	}
	return 0;
}

/* The space_decision call (the decision, the owner retry): the tool
 * forced, one correction round. 0 when started; -1 with err. */
int part_ask_decision(struct part_engine *e, const char *system, char *user, compose_done_fn done,
                      struct ga_err *err)
{
	if (!e->have_tool)
		return err_set(err, "the space_decision tool is not offered");
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = user};
	struct compose_opts o = {
	        .loop = e->loop,
	        .llm = e->llm,
	        .budget = e->budget,
	        .system_prompt = system,
	        .messages = &msg,
	        .n_messages = 1,
	        .tools = &e->tool,
	        .n_tools = 1,
	        .tool_choice = LLM_TOOL_CHOICE_NAMED,
	        .tool_choice_name = "space_decision",
	        .max_rounds = PART_ENGINE_MAX_ROUNDS,
	        .done = done,
	        .ud = e->anchor,
	};
	part_decision_clear(&e->dec);
	e->have_dec = false;
	e->anchor->refs++;
	e->run = compose_start(&o, err);
	if (!e->run) {
		e->anchor->refs--;
		return -1;
	}
	return 0;
}

/* ---- the tick (§1) ------------------------------------------------------------------------- */

static size_t tick_events(struct part_engine *e, struct part_event *evs)
{
	for (size_t i = 0; i < e->ntb; i++) {
		const struct pending *p = &e->tb[i];
		evs[i] = (struct part_event){
		        .kind = p->claim ? PART_EV_CLAIM : PART_EV_CHAT,
		        .author = p->author,
		        .text = p->text,
		        .len = p->len,
		        .time_ms = p->time_ms,
		        .author_kind = p->kind,
		        .addressed_known = p->addressed_known,
		        .addressed_me = p->addressed_me,
		        .addressed_others = p->addressed_others,
		        .from_history = p->from_history,
		        .context = p->context,
		        .noted = p->noted,
		};
	}
	return e->ntb;
}

/* Every walk of this tick's batch that is still held ends: rule, why. */
static void tb_end(struct part_engine *e, const char *rule, const char *why)
{
	for (size_t i = 0; i < e->ntb; i++) {
		job_silent(e->tb[i].job, rule, why);
		pending_clear(&e->tb[i]);
	}
	e->ntb = 0;
}

static void clear_l2(struct part_engine *e)
{
	for (size_t i = 0; i < e->nl2; i++)
		free(e->l2[i]);
	e->nl2 = e->il2 = 0;
}

static void run_tick(struct part_engine *e);
static void ask_layer2(struct part_engine *e);

/* §2.2 Layer 2: the spec's prompt, one label back. */
static const char layer2_system[] =
        "Classify a chat message from the host of a chatroom into exactly one label:\n"
        "ACTION_REQUEST: an imperative, polite or direct request whose fulfilment creates or "
        "modifies something tangible (an issue, a plan, a post, code, a document).\n"
        "DISCUSSION: opinions, information, questions, links shared; not asking for work.\n"
        "FOLLOW_UP: a status check on an earlier request.\n"
        "Examples:\n"
        "\"We should probably update the docs\" -> DISCUSSION\n"
        "\"Handle the edge cases in auth\" -> ACTION_REQUEST\n"
        "\"Can you share your thoughts on this?\" -> DISCUSSION\n"
        "\"Share the deployment config with the team\" -> ACTION_REQUEST\n"
        "\"Write up the meeting notes\" -> ACTION_REQUEST\n"
        "\"Interesting article about caching\" -> DISCUSSION\n"
        "\"How is that issue coming along\" -> FOLLOW_UP\n"
        "Reply with the label only.";

static void on_layer2(void *ud, const struct compose_result *res)
{
	struct part_engine *e = part_anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	if (res->stop == COMPOSE_STOP_CANCELLED) {
		clear_l2(e);
		tb_end(e, "cancelled", "the tick was cancelled (the agent is stopping)");
		part_tick_end(e);
		return;
	}
	const char *text = e->l2[e->il2];
	enum part_intent it;
	/* §16.15: an error or an unreadable reply is not cached; the next
	 * tick asks again. */
	if (res->stop == COMPOSE_STOP_FINAL && res->content &&
	    part_intent_parse_reply(res->content, &it) == 0) {
		part_intent_learn(&e->st, text, strlen(text), it);
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "layer 2", "intent", part_intent_name(it), "text",
		       text);
	} else {
		/* Not cached (§16.15), but not asked again at once either: a
		 * failing model would otherwise be called on every tick. */
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "layer 2 gave no label; Layer 1 stands", "stop",
		       res->stop_name ? res->stop_name : "?", "reason", res->reason, "retry_in_ms",
		       LOG_INT(PART_ENGINE_LAYER2_RETRY_MS));
		e->l2_quiet_until_ms = time_now_ms() + PART_ENGINE_LAYER2_RETRY_MS;
		e->il2 = e->nl2;
		ask_layer2(e);
		return;
	}
	e->il2++;
	ask_layer2(e);
}

/* Asks for the next ambiguous text, or runs the tick when none is left. */
static void ask_layer2(struct part_engine *e)
{
	if (e->il2 >= e->nl2) {
		clear_l2(e);
		run_tick(e);
		return;
	}
	struct ga_err err = {{0}};
	char user[PART_TEXT_MAX_BYTES + 32];
	snprintf(user, sizeof user, "Message: \"%s\"", e->l2[e->il2]);
	if (part_ask_plain(e, layer2_system, user, 10, 0, on_layer2, &err) != 0) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "layer 2 not asked", "error", err.msg);
		clear_l2(e);
		run_tick(e);
	}
}

/* memory/space-config.json, re-read every tick (§13.3: hot reload). A
 * problem is logged when it first appears, not every tick. */
static void load_cfg(struct part_engine *e)
{
	if (!e->memory_dir)
		return;
	struct strbuf p;
	sb_init(&p, 1024);
	space_cfg_load(e->memory_dir, e->version, &e->cfg, &p);
	if (p.len && strncmp(e->cfg_problem, sb_cstr(&p), sizeof e->cfg_problem - 1) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "space-config.json", "problem", sb_cstr(&p));
		snprintf(e->cfg_problem, sizeof e->cfg_problem, "%s", sb_cstr(&p));
	} else if (!p.len) {
		e->cfg_problem[0] = '\0';
	}
	sb_free(&p);
	if (!e->cd_fixed) {
		e->cd_min = e->cfg.cooldown_min_ms;
		e->cd_max = e->cfg.cooldown_max_ms;
	}
}

/* The decision's adjustBehavior (§8.2, §13.3): written to the file, and
 * recorded with what was refused. */
static void adjust_cfg(struct part_engine *e)
{
	if (!e->memory_dir || !cJSON_IsObject(e->dec.adjust))
		return;
	struct strbuf p;
	sb_init(&p, 1024);
	int rc = space_cfg_update(e->memory_dir, e->version, e->dec.adjust, e->dec.reason,
	                          time_now_ms(), &p);
	struct decision d;
	if (rc < 0)
		decision_set(&d, VERDICT_FAIL, "adjust_behavior", "%s", sb_cstr(&p));
	else
		decision_set(&d, VERDICT_INFO, "adjust_behavior", "space-config.json adjusted%s%s",
		             p.len ? "; refused: " : "", sb_cstr(&p));
	part_record(e, &d);
	sb_free(&p);
	load_cfg(e);
}

void part_engine_tick(struct part_engine *e, void (*done)(void *ud), void *ud)
{
	if (!e || e->ticking || !e->joined(e->ud)) {
		if (done)
			done(ud);
		return;
	}
	e->ticking = true;
	e->done = done;
	e->done_ud = ud;
	part_claims_expire(e);
	part_claims_lapsed(e);
	load_cfg(e);
	/* this tick's batch */
	memcpy(e->tb, e->batch, e->nbatch * sizeof e->batch[0]);
	e->ntb = e->nbatch;
	memset(e->batch, 0, e->nbatch * sizeof e->batch[0]);
	e->nbatch = 0;
	/* Layer 2 first (§2.2): the host messages Layer 1 could not settle
	 * and the cache does not know. */
	struct part_event evs[PART_ENGINE_BATCH_MAX];
	size_t n = tick_events(e, evs);
	struct part_member *members = xcalloc(PART_MEMBERS_MAX, sizeof *members);
	struct part_tick_in in = {
	        .self = e->self,
	        .social_only = e->social_only,
	        .members = members,
	        .nmembers = e->members(e->ud, members, PART_MEMBERS_MAX),
	        .events = evs,
	        .nevents = n,
	        .now_ms = time_now_ms(),
	};
	const char *unknown[PART_LAYER2_MAX];
	size_t nu = in.now_ms >= e->l2_quiet_until_ms
	                    ? part_intent_unknown(&e->st, &in, unknown, PART_LAYER2_MAX)
	                    : 0;
	free(members);
	clear_l2(e);
	for (size_t i = 0; i < nu; i++)
		e->l2[e->nl2++] = xstrdup(unknown[i]);
	ask_layer2(e);
}

/* The walks of the tick's batch: the message the tick answers (the best
 * live chat: the host's before an agent's, addressed to us before not,
 * newest last; or the one carried over a cooldown) and the others, which
 * end as merged into it — or, when the tick does not speak, with its
 * verdict. A cooldown carries the best one to the next tick. */
static void settle_walks(struct part_engine *e)
{
	size_t best = e->ntb;
	int best_score = -1;
	for (size_t i = 0; i < e->ntb; i++) {
		const struct pending *p = &e->tb[i];
		if (p->from_history || p->claim || !p->job)
			continue;
		int score = (p->kind == PART_AUTHOR_HOST) * 2 + p->addressed_me;
		if (score >= best_score) {
			best_score = score;
			best = i;
		}
	}
	struct pipeline_job *chosen = NULL;
	if (best < e->ntb) {
		chosen = e->tb[best].job;
		e->tb[best].job = NULL;
		snprintf(e->trig_id, sizeof e->trig_id, "%s", e->tb[best].message_id);
		snprintf(e->trig_conv, sizeof e->trig_conv, "%s", e->tb[best].conversation);
		if (e->carry) {
			char why[PART_ID_MAX + 64];
			snprintf(why, sizeof why, "merged into the answer to the newer %s",
			         e->trig_id);
			job_silent(e->carry, "merged", why);
			e->carry = NULL;
		}
	} else if (e->carry) {
		chosen = e->carry; /* trig_id is still its id */
		e->carry = NULL;
	}
	if (chosen) {
		const struct gate_result *g = pipeline_job_gate(chosen);
		e->trig_chain = g->chain_out;
		e->trig_courtesy = g->courtesy;
	}
	const struct decision *v = &e->out.verdict;
	bool cooling = !e->out.call_model && v->rule && strcmp(v->rule, "cooldown") == 0;
	char why[PART_ID_MAX + 64];
	if (cooling) {
		e->carry = chosen;
		snprintf(why, sizeof why, "merged: %s is answered after the cooldown", e->trig_id);
		tb_end(e, "merged", why);
		return;
	}
	if (e->out.call_model) {
		e->trig_job = chosen;
		e->trig_lent = false;
		snprintf(why, sizeof why, "merged into the tick that answers %s", e->trig_id);
		tb_end(e, "merged", why);
		return;
	}
	job_silent(chosen, v->rule ? v->rule : "silent", v->reason);
	tb_end(e, v->rule ? v->rule : "silent", v->reason);
}

static void run_tick(struct part_engine *e)
{
	struct part_event evs[PART_ENGINE_BATCH_MAX];
	size_t n = tick_events(e, evs);
	struct part_member *members = xcalloc(PART_MEMBERS_MAX, sizeof *members);
	size_t nm = e->members(e->ud, members, PART_MEMBERS_MAX);
	struct part_tick_in in = {
	        .self = e->self,
	        .social_only = e->social_only,
	        .members = members,
	        .nmembers = nm,
	        .events = evs,
	        .nevents = n,
	        .now_ms = time_now_ms(),
	};
	part_tick(&e->st, &in, &e->out);
	free(members);
	for (size_t i = 0; i < e->ntb; i++)
		if (e->tb[i].context && e->tb[i].message_id && e->tb[i].message_id[0]) {
			snprintf(e->ctx_ids[e->ctx_next], sizeof e->ctx_ids[0], "%s",
			         e->tb[i].message_id);
			e->ctx_next = (e->ctx_next + 1) % PART_ENGINE_CTX_IDS;
		}
	free(e->salvage_lead);
	free(e->forced_lead);
	e->salvage_lead = e->phrase ? e->phrase(e->ud, 0) : NULL;
	e->forced_lead = e->phrase ? e->phrase(e->ud, 1) : NULL;
	e->out.salvage_lead = e->salvage_lead;
	e->out.forced_lead = e->forced_lead;
	if (e->out.idle_reset)
		part_judge_clear(e->judge); /* §6.4: the judge's cache goes too */
	/* The batch's host messages, for an extraction after the send (§8.4). */
	struct strbuf hl;
	sb_init(&hl, PART_ENGINE_HOST_LINES_MAX_BYTES);
	for (size_t i = 0; i < n; i++)
		if (e->tb[i].kind == PART_AUTHOR_HOST && !e->tb[i].from_history && !e->tb[i].claim)
			sb_printf(&hl, "%s: %.*s\n", e->tb[i].author, (int)e->tb[i].len,
			          e->tb[i].text);
	free(e->host_lines);
	e->host_lines = hl.len ? sb_detach(&hl) : NULL;
	sb_free(&hl);
	/* layer2 points into the batch freed below */
	e->out.nlayer2 = 0;
	settle_walks(e);

	if (e->trig_job)
		part_record(e, &e->out.verdict);
	if (!e->out.call_model) {
		/* §11.3 without new messages: the owner's request has waited. */
		if (e->out.force_action_due && !e->social_only) {
			snprintf(e->say_id, sizeof e->say_id, "%s#forced%u", e->trig_id,
			         e->st.forced_attempts + 1);
			part_forced_action(e, false);
			return;
		}
		part_tick_end(e);
		return;
	}
	part_call_model(e);
}

void part_call_model(struct part_engine *e)
{
	struct ga_err err = {{0}};
	struct decision d;
	char *skill = skills_render(e->skills, PART_ENGINE_SKILL, NULL, NULL, 0, &err);
	char *user = skill ? part_user_message(e, &err) : NULL;
	if (!skill || !user || !e->have_tool) {
		decision_set(&d, VERDICT_FAIL, "prompt", "no decision call: %s",
		             !e->have_tool ? "the space_decision tool is not offered" : err.msg);
		part_record(e, &d);
		free(skill);
		free(user);
		part_tick_end(e);
		return;
	}
	char *system = skills_system_prompt(e->soul, e->self_text, skill);
	free(skill);
	int rc = part_ask_decision(e, system, user, on_composed, &err);
	free(system);
	free(user);
	if (rc != 0) {
		decision_set(&d, VERDICT_FAIL, "decision", "the decision call could not start: %s",
		             err.msg);
		part_record(e, &d);
		part_tick_end(e);
	}
}

void part_engine_cancel(struct part_engine *e)
{
	if (e && e->run)
		compose_cancel(e->run);
}

/* ---- life ------------------------------------------------------------------------------------ */

static char *cut_copy(const char *s, size_t max)
{
	if (!s)
		return NULL;
	size_t n = utf8_cut(s, strlen(s), max);
	char *c = xmalloc(n + 1);
	memcpy(c, s, n);
	c[n] = '\0';
	return c;
}

struct part_engine *part_engine_new(const struct part_engine_config *c, struct ga_err *err)
{
	if (!c || !c->loop || !c->llm || !c->pipeline || !c->skills || !c->self_name ||
	    !c->self_name[0] || !c->joined || !c->members || !c->target) {
		err_set(err, "participation engine: the configuration lacks %s",
		        !c                                  ? "everything"
		        : !c->loop                          ? "a loop"
		        : !c->llm                           ? "a model client"
		        : !c->pipeline                      ? "the pipeline"
		        : !c->skills                        ? "the skills"
		        : !c->self_name || !c->self_name[0] ? "the agent's name"
		                                            : "the room's callbacks");
		return NULL;
	}
	struct part_engine *e = xcalloc(1, sizeof *e);
	e->loop = c->loop;
	e->self = xstrdup(c->self_name);
	e->social_only = c->social_only;
	e->llm = c->llm;
	e->budget = c->budget;
	e->skills = c->skills;
	e->ledger = c->ledger;
	e->pipeline = c->pipeline;
	e->soul = c->soul_text ? xstrdup(c->soul_text) : NULL;
	e->self_text = cut_copy(c->self_text, PART_ENGINE_SELF_MAX_BYTES);
	e->cd_fixed = c->cooldown_min_ms > 0 || c->cooldown_max_ms > 0;
	e->memory_dir = c->memory_dir ? xstrdup(c->memory_dir) : NULL;
	e->version = xstrdup(c->version ? c->version : "");
	space_cfg_defaults(&e->cfg);
	e->cd_min = c->cooldown_min_ms > 0 ? c->cooldown_min_ms : PART_ENGINE_COOLDOWN_MIN;
	e->cd_max = c->cooldown_max_ms > 0 ? c->cooldown_max_ms : PART_ENGINE_COOLDOWN_MAX;
	if (e->cd_max < e->cd_min)
		e->cd_max = e->cd_min;
	e->joined = c->joined;
	e->members = c->members;
	e->target = c->target;
	e->peers = c->peers;
	e->workspaces = c->workspaces;
	e->results = c->results;
	e->relationships = c->relationships;
	e->unclaim = c->unclaim;
	e->claim_holder = c->claim_holder;
	e->phrase = c->phrase;
	e->ud = c->ud;
	e->judge = part_judge_new(c->loop, c->llm, c->budget);
	e->rng = (uint64_t)time_now_ms() * 0x9E3779B97F4A7C15ULL | 1;
	snprintf(e->trig_conv, sizeof e->trig_conv, "space:room");
	e->trig_chain = 1;
	part_state_init(&e->st);
	e->anchor = xcalloc(1, sizeof *e->anchor);
	e->anchor->e = e;
	e->sink = (struct tools_sink){.enqueue = sink_enqueue, .ud = e->anchor};
	struct compose_tool tools[TOOLS_MAX];
	size_t nt = tools_select(TOOLS_MODE_SPACE, tools_agent_caps(e->social_only), &e->sink,
	                         tools, TOOLS_MAX);
	for (size_t i = 0; i < nt; i++)
		if (strcmp(tools[i].name, "space_decision") == 0) {
			e->tool = tools[i];
			e->have_tool = true;
		}
	return e;
}

void part_engine_free(struct part_engine *e)
{
	if (!e)
		return;
	if (e->run)
		compose_cancel(e->run); /* on_composed finds the engine gone */
	struct anchor *a = e->anchor;
	a->e = NULL;
	if (a->refs == 0)
		free(a);
	/* The walks the engine holds end now; one lent to the pipeline ends
	 * there (its ended() finds the engine gone). */
	static const char stopping[] = "the room's engine stopped";
	for (size_t i = 0; i < e->nbatch; i++) {
		job_silent(e->batch[i].job, "stopping", stopping);
		pending_clear(&e->batch[i]);
	}
	for (size_t i = 0; i < e->ntb; i++) {
		job_silent(e->tb[i].job, "stopping", stopping);
		pending_clear(&e->tb[i]);
	}
	job_silent(e->carry, "stopping", stopping);
	if (!e->trig_lent)
		job_silent(e->trig_job, "stopping", stopping);
	clear_l2(e);
	part_judge_free(e->judge);
	echo_own_free(e->own);
	free(e->salvage_lead);
	free(e->forced_lead);
	free(e->host_lines);
	part_decision_clear(&e->dec);
	part_state_free(&e->st);
	free(e->said);
	free(e->self);
	free(e->soul);
	free(e->self_text);
	free(e->memory_dir);
	free(e->version);
	free(e);
}
