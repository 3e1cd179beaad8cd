/*
 * engine — the participation tick wired to the room, the model and the
 * pipeline. See engine.h.
 */
#include "modules/participation/engine.h"

#include "modules/participation/judge.h"
#include "modules/participation/reqcommits.h"
#include "modules/participation/spacecfg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/llm/llm.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "local-tools/tools.h"
#include "modules/commitments/ledger.h"
#include "modules/compose/compose.h"
#include "modules/conversation/store.h"
#include "modules/pipeline/pipeline.h"
#include "modules/skills/skills.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

#define LOG_COMP         "participation"
#define PROMPT_MAX_BYTES (256 * 1024)
#define PIECE_MAX_BYTES  (64 * 1024)
#define ID_MAX           160
#define CONV_MAX         160

/* One chat waiting for the tick (copied). */
struct pending {
	char *author;
	char *text;
	size_t len;
	int64_t time_ms;
	enum part_author_kind kind;
	bool addressed_known, addressed_me, addressed_others, from_history;
	char *message_id;
	char *conversation;
	int64_t chain_out;
	bool courtesy;
	bool claim; /* a peer's action claim: text = the target */
};

/* What outlives the engine while a model call or a send is in flight: the
 * engine pointer is cleared when the engine goes, and the last user frees
 * the anchor. */
struct anchor {
	struct part_engine *e;
	int refs;
};

struct part_engine {
	uv_loop_t *loop;
	char *self;
	/* The skill's prompt and rules and the decision tool's description:
	 * words that must never reach the room (validator check 1c). */
	struct echo_own *own;
	bool social_only;
	struct llm_client *llm;
	struct budget *budget;
	const struct skills *skills;
	struct ledger *ledger;
	struct pipeline *pipeline;
	char *soul;
	char *self_text;
	int64_t cd_min, cd_max;
	bool cd_fixed; /* set by the caller: the file's cooldown is not used */
	char *memory_dir, *version;
	struct space_cfg cfg;  /* memory/space-config.json as last read */
	char cfg_problem[256]; /* the last problem reported, not repeated */
	bool (*joined)(void *);
	size_t (*members)(void *, struct part_member *, size_t);
	int (*target)(void *, char *, size_t);
	size_t (*peers)(void *, struct part_peer_note *, size_t);
	size_t (*workspaces)(void *, struct part_workspace_note *, size_t);
	char *(*relationships)(void *, const char *const *, size_t);
	int (*claim)(void *, const char *, const char *, struct ga_err *);
	void (*unclaim)(void *, const char *, const char *, bool, const char *);
	const char *(*claim_holder)(void *, const char *, const char *);
	char *(*phrase)(void *, int);
	char *salvage_lead, *forced_lead; /* this tick's §11 words (voice) */
	void *ud;
	struct part_judge *judge;
	/* §12.1 step 4: the peers' claims we were told of, and ours */
	struct part_peer_claims peer_claims;
	struct held {
		char action[PART_CLAIM_ACTION_MAX];
		char target[PART_CLAIM_TARGET_MAX];
		int64_t until_ms; /* 0: the chat is in flight (this tick's) */
	} held[PART_ENGINE_HELD_MAX];
	size_t nheld;

	struct part_state st;
	struct pending batch[PART_ENGINE_BATCH_MAX];
	size_t nbatch;
	uint64_t rng;

	/* the tick in flight: its batch (taken from `batch` when it starts,
	 * so chats offered meanwhile wait for the next tick), the Layer-2
	 * texts still to ask (copies) */
	struct pending tb[PART_ENGINE_BATCH_MAX];
	size_t ntb;
	char *l2[PART_LAYER2_MAX];
	size_t nl2, il2;
	int64_t l2_quiet_until_ms; /* after a failed Layer-2 call */
	bool ticking;
	void (*done)(void *);
	void *done_ud;
	struct anchor *anchor;
	struct compose_run *run;
	struct part_tick_out out;
	struct part_decision dec;
	bool have_dec;
	char trig_id[ID_MAX];
	char trig_conv[CONV_MAX];
	int64_t trig_chain;
	bool trig_courtesy;
	char *said; /* the words handed to the pipeline */
	/* validation before the send, and the §11 recovery of this tick */
	struct echo_window *win; /* the candidate's echo window */
	char *win_last;          /* id of the store's last message when win was built; NULL: none */
	struct validator_decision pre;
	bool judged_new; /* the judge found the candidate new */
	enum { PH_DECISION, PH_SALVAGE, PH_RETRY, PH_FORCED } phase;
	bool salvaged, retried, forced_now;
	/* the discussion retry (part_discussion_retry_due): made on this
	 * tick; the host message it was made for */
	bool disc_retried;
	uint64_t disc_done_seq;
	char *host_lines;    /* the batch's host messages, for the extraction */
	uint64_t norepo_seq; /* the request whose forced action lacked a repo, told once */
	/* the tool handed to compose (its sink must outlive the run) */
	struct tools_sink sink;
	struct compose_tool tool;
	bool have_tool;
	/* §6.3: the ledger ids enqueued for the open request (reqcommits.h) */
	struct part_req_commits req_commits;
};

/* ---- small helpers ----------------------------------------------------------------- */

static void pending_clear(struct pending *p)
{
	free(p->author);
	free(p->text);
	free(p->message_id);
	free(p->conversation);
	memset(p, 0, sizeof *p);
}

static struct anchor *anchor_take(struct part_engine *e)
{
	e->anchor->refs++;
	return e->anchor;
}

/* Drops one reference; returns the engine, or NULL when it is gone (the
 * anchor is freed then if nobody else holds it). */
static struct part_engine *anchor_drop(struct anchor *a)
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

static void record_at(struct part_engine *e, enum decision_stage stage, const struct decision *d)
{
	if (e->trig_id[0])
		pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, e->trig_conv, e->trig_id, stage, d);
	else
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "tick", "verdict",
		       decision_verdict_name(d->verdict), "rule", d->rule ? d->rule : "", "reason",
		       d->reason);
}

static void record(struct part_engine *e, const struct decision *d)
{
	record_at(e, STAGE_COMPOSE, d);
}

/* ---- claims (§12.1 step 4) ------------------------------------------------------------ */

static bool member_present(struct part_engine *e, const char *name)
{
	struct part_member *m = xcalloc(PART_MEMBERS_MAX, sizeof *m);
	size_t n = e->members(e->ud, m, PART_MEMBERS_MAX);
	bool found = false;
	for (size_t i = 0; i < n && !found; i++)
		found = m[i].name && strcmp(m[i].name, name) == 0;
	free(m);
	return found;
}

/* Another member's live claim on action:target (part_claim_holder_fn). */
static const char *live_holder(void *ud, const char *action, const char *target)
{
	struct part_engine *e = ud;
	const char *h = e->claim_holder ? e->claim_holder(e->ud, action, target) : NULL;
	if (h && h[0] && strcmp(h, e->self) != 0)
		return h;
	h = part_peer_claims_holder(&e->peer_claims, action, target, time_now_ms());
	return h && member_present(e, h) ? h : NULL;
}

static void unclaim_at(struct part_engine *e, size_t i, bool failed, const char *why)
{
	if (e->unclaim)
		e->unclaim(e->ud, e->held[i].action, e->held[i].target, failed, why);
	memmove(&e->held[i], &e->held[i + 1], (e->nheld - i - 1) * sizeof e->held[0]);
	e->nheld--;
}

/* The chat in flight was said (until = now + hold) or not (ended now). */
static void claims_settle(struct part_engine *e, bool said)
{
	int64_t now = time_now_ms();
	for (size_t i = e->nheld; i-- > 0;) {
		if (e->held[i].until_ms)
			continue;
		if (said)
			e->held[i].until_ms = now + PART_ENGINE_CLAIM_HOLD_MS;
		else
			unclaim_at(e, i, true, "the chat that promised it was not said");
	}
}

/* Held claims whose time is over end (on every tick). */
static void claims_expire(struct part_engine *e)
{
	int64_t now = time_now_ms();
	for (size_t i = e->nheld; i-- > 0;)
		if (e->held[i].until_ms && now >= e->held[i].until_ms)
			unclaim_at(e, i, false, "claim period over; the commitment is in the ledger");
}

/* Our own ledger already holds this work: a space commitment of the same
 * action, repository and title (in full — the claim target's 50
 * characters would make "… (round 7)" and "… (round 15)" one request), open
 * or completed within PART_ENGINE_DONE_RECENT_MS: the request was
 * fulfilled and the model promised it again on a later turn. A repository
 * not named on either side is the detected one. */
struct own_dup {
	const char *action, *repo, *what, *detected;
	int64_t now;
	bool found;
};

static const char *param_str(const cJSON *params, const char *key)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, key));
	return v && v[0] ? v : NULL;
}

static const char *filled_or(const char *a, const char *b)
{
	return a && a[0] ? a : b;
}

static void own_dup_each(void *ud, const struct ledger_entry *le)
{
	struct own_dup *o = ud;
	if (o->found || !le->source || strcmp(le->source, "space") != 0 || !le->action ||
	    strcmp(le->action, o->action) != 0)
		return;
	if (!ledger_status_open(le->status) &&
	    !(le->status == LEDGER_COMPLETED &&
	      o->now - le->updated_ms < PART_ENGINE_DONE_RECENT_MS))
		return;
	const char *owner = param_str(le->params, "owner"), *name = param_str(le->params, "repo");
	char repo[PART_REPO_MAX * 2];
	snprintf(repo, sizeof repo, "%s%s%s", owner && name ? owner : "", owner && name ? "/" : "",
	         owner && name ? name : filled_or(o->detected, "unknown"));
	const char *what = filled_or(param_str(le->params, "title"),
	                             filled_or(param_str(le->params, "body"),
	                                       filled_or(param_str(le->params, "goal"), "")));
	o->found = strcmp(repo, o->repo) == 0 && strcmp(what, o->what) == 0;
}

static bool own_has(struct part_engine *e, const struct part_commitment *c)
{
	if (!e->ledger)
		return false;
	struct own_dup o = {
	        .action = part_commit_type_name(c->type),
	        .repo = filled_or(c->repo, filled_or(e->out.repo, "unknown")),
	        .what = filled_or(c->title, filled_or(c->description, filled_or(c->content, ""))),
	        .detected = e->out.repo,
	        .now = time_now_ms(),
	};
	ledger_each(e->ledger, own_dup_each, &o);
	return o.found;
}

/* Before validation: a peer's live claim on the same action:target
 * (§12.1 🐞), or our own ledger's commitment for it. Either way the open
 * request is taken: no owner retry, no forced action for it. */
static void drop_taken(struct part_engine *e)
{
	struct decision d;
	bool taken = false;
	struct part_commitments *cs = &e->dec.commitments;
	if (part_drop_claimed_commitments(cs, e->out.repo, live_holder, e, &d)) {
		record_at(e, STAGE_VALIDATOR, &d);
		taken = true;
		if (e->out.request_open)
			part_note_fulfilled(&e->st, "peer_claim");
	}
	size_t had = cs->n, k = 0;
	for (size_t i = 0; i < had; i++) {
		if (!own_has(e, &cs->item[i]))
			cs->item[k++] = cs->item[i];
		else
			part_commitment_clear(&cs->item[i]);
	}
	for (size_t i = k; i < had; i++)
		memset(&cs->item[i], 0, sizeof cs->item[i]);
	cs->n = k;
	if (k < had) {
		decision_set(
		        &d, VERDICT_DROP, "already_committed",
		        "%zu of %zu commitment(s) dropped: my ledger already holds the same work "
		        "(open, or done in the last %d min)",
		        had - k, had, PART_ENGINE_DONE_RECENT_MS / 60000);
		record_at(e, STAGE_VALIDATOR, &d);
		taken = true;
		if (e->out.request_open)
			part_note_fulfilled(&e->st, "commitment");
	}
	if (taken && e->out.request_open) {
		e->out.request_open = false;
		e->out.force_action_due = false;
	}
}

/* One claim per commitment of the chat about to be handed to the pipeline. */
static void claims_send(struct part_engine *e)
{
	if (!e->claim)
		return;
	claims_settle(e, false); /* a previous attempt of this tick */
	for (size_t i = 0; i < e->dec.commitments.n; i++) {
		const struct part_commitment *c = &e->dec.commitments.item[i];
		const char *action = part_commit_type_name(c->type);
		char target[PART_CLAIM_TARGET_MAX];
		part_claim_target(c, e->out.repo, target, sizeof target);
		bool again = false;
		for (size_t k = 0; k < e->nheld && !again; k++)
			again = !strcmp(e->held[k].action, action) &&
			        !strcmp(e->held[k].target, target);
		struct ga_err err = {{0}};
		struct decision d;
		if (e->claim(e->ud, action, target, &err) != 0) {
			decision_set(&d, VERDICT_INFO, "claim", "no claim for %s:%s: %s", action,
			             target, err.msg);
			record_at(e, STAGE_OUTBOUND, &d);
			continue;
		}
		decision_set(&d, VERDICT_INFO, "claim", "claimed %s:%s in the room (§12.1)", action,
		             target);
		record_at(e, STAGE_OUTBOUND, &d);
		if (again)
			continue; /* already held: renewed by the room's link */
		if (e->nheld == PART_ENGINE_HELD_MAX)
			unclaim_at(e, 0, false, "too many claims held");
		struct held *h = &e->held[e->nheld++];
		snprintf(h->action, sizeof h->action, "%s", action);
		snprintf(h->target, sizeof h->target, "%s", target);
		h->until_ms = 0;
	}
}

static void tick_end(struct part_engine *e)
{
	e->ticking = false;
	e->run = NULL;
	part_decision_clear(&e->dec);
	e->have_dec = false;
	free(e->said);
	e->said = NULL;
	echo_window_free(e->win);
	e->win = NULL;
	free(e->win_last);
	e->win_last = NULL;
	validator_decision_clear(&e->pre);
	memset(&e->pre, 0, sizeof e->pre);
	e->judged_new = e->salvaged = e->retried = e->forced_now = e->disc_retried = false;
	e->phase = PH_DECISION;
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

void part_engine_offer(struct part_engine *e, const struct conv_event *ev,
                       const struct gate_result *g)
{
	if (!e || !ev)
		return;
	struct pending *p = batch_slot(e);
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
	p->chain_out = g ? g->chain_out : ev->chain + 1;
	p->courtesy = g && g->courtesy;
}

/* The batch is full: the oldest entry goes, logged. */
static struct pending *batch_slot(struct part_engine *e)
{
	if (e->nbatch == PART_ENGINE_BATCH_MAX) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "batch full: the oldest chat is dropped", "id",
		       e->batch[0].message_id, "max", LOG_INT(PART_ENGINE_BATCH_MAX));
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
	if (!e || !peer || !action || part_commit_type_parse(action) < 0 ||
	    strcmp(peer, e->self) == 0)
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

/* ---- the prompt (§14) ------------------------------------------------------------------ */

static char *history_text(const struct part_state *st, bool own_only)
{
	/* §14.8 keeps the latest lines: when the piece would pass its bound,
	 * the OLDEST lines are left out (and counted), never the newest — the
	 * host's last message is always there. */
	size_t first = st->hist_n, used = 0, left_out = 0;
	const size_t budget = PIECE_MAX_BYTES - 64; /* the "left out" line */
	while (first > 0) {
		const struct part_entry *en = part_history_at(st, first - 1);
		if (own_only && !en->self) {
			first--;
			continue;
		}
		size_t line = strlen(en->author) + 9 + en->len + 1;
		if (used + line > budget)
			break;
		used += line;
		first--;
	}
	for (size_t i = 0; i < first; i++)
		left_out += !own_only || part_history_at(st, i)->self;
	struct strbuf sb;
	sb_init(&sb, PIECE_MAX_BYTES);
	if (left_out)
		sb_printf(&sb, "(%zu earlier message%s left out)\n", left_out,
		          left_out == 1 ? "" : "s");
	for (size_t i = first; i < st->hist_n; i++) {
		const struct part_entry *en = part_history_at(st, i);
		if (own_only && !en->self)
			continue;
		sb_printf(&sb, "%s%s: %.*s\n", en->author, en->host ? " (host)" : "", (int)en->len,
		          en->text);
	}
	char *s = sb.len ? sb_detach(&sb) : xstrdup(own_only ? "(none yet)" : "(nothing yet)");
	sb_free(&sb);
	return s;
}

/* §14: who is typing right now (the members' live `typing` marks), or
 * "nobody". The reference always wrote "nobody" after the first tick. */
static void typing_text(struct part_engine *e, char *buf, size_t cap)
{
	struct part_member *m = xcalloc(PART_MEMBERS_MAX, sizeof *m);
	size_t n = e->members ? e->members(e->ud, m, PART_MEMBERS_MAX) : 0;
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!m[i].typing || !m[i].name || strcmp(m[i].name, e->self) == 0)
			continue;
		int w = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", m[i].name);
		if (w < 0 || (size_t)w >= cap - len) {
			buf[len] = '\0'; /* whole names only */
			break;
		}
		len += (size_t)w;
	}
	free(m);
	if (!len)
		snprintf(buf, cap, "nobody");
}

static void ownership_text(const struct part_tick_out *t, struct strbuf *sb)
{
	if (!t->own.computed) {
		sb_puts(sb, t->request ? "you are the only agent here: the request is yours"
		                       : "no host request is open");
		return;
	}
	if (!t->own.owner[0])
		sb_puts(sb, "no agent here can take this kind of action");
	else if (t->own.is_owner)
		sb_printf(sb, "YOU own the host's request (%zu agents considered): commit to it",
		          t->own.n_agents);
	else
		sb_printf(sb,
		          "%s owns the host's request: do not take it over; stay quiet unless you "
		          "add something they lack",
		          t->own.owner);
}

static void notes_text(const struct part_tick_out *t, struct strbuf *sb)
{
	if (t->context & PART_CTX_MODE)
		sb_printf(sb, "\nConversation mode: %s.", part_mode_name(t->mode));
	if (t->context & PART_CTX_ROLE)
		sb_printf(sb,
		          "\nYour role this turn: %s (budget %u messages per host turn; you sent "
		          "%zu).",
		          part_role_name(t->own.role), t->budget, t->own_msgs_since_host);
	if ((t->context & PART_CTX_ESCALATION) && t->escalation != PART_ESC_NONE)
		sb_printf(sb,
		          "\nEscalation: %s — the host's request has waited %" PRId64
		          " s over %u cycles without a commitment.",
		          part_escalation_name(t->escalation), t->waiting_ms / 1000, t->cycles);
	if ((t->context & PART_CTX_SATURATION) && t->saturation != PART_SAT_NONE)
		sb_printf(
		        sb,
		        "\nSaturation: %s (%zu agent messages since the host spoke): add only what "
		        "is new.",
		        part_saturation_name(t->saturation), t->agent_msgs_since_host);
	if (t->context & PART_CTX_ADDRESSED) {
		if (t->addressed_me)
			sb_puts(sb, "\nThe host addressed you by name: answer.");
		else if (t->addressed_others)
			sb_puts(sb, "\nThe host addressed other agents, not you: stay quiet unless "
			            "asked.");
	}
	if ((t->context & PART_CTX_FOLLOW_UP) && t->follow_up)
		sb_puts(sb, "\nThe host is following up on the request: say what was done.");
}

/* The discussion retry's note (after the validator refused the answer). */
static const char disc_retry_note[] =
        "\nYour previous answer to the host was refused by the validator. Nobody has answered "
        "the host yet: answer the host's question now, briefly and in your own words — no "
        "agreement opener, no restating of anyone, no promise without a commitment.";

/* §14.10: the peers and workspaces the room knows, when the tick wants them. */
static char *peers_text(struct part_engine *e)
{
	const struct part_tick_out *t = &e->out;
	struct part_peer_note *pn = NULL;
	struct part_workspace_note *wn = NULL;
	size_t np = 0, nw = 0;
	if (e->peers && (t->context & PART_CTX_PEER_IDENTITIES)) {
		pn = xcalloc(PART_ENGINE_PEERS_MAX, sizeof *pn);
		np = e->peers(e->ud, pn, PART_ENGINE_PEERS_MAX);
	}
	if (e->workspaces && (t->context & PART_CTX_WORKSPACES)) {
		wn = xcalloc(PART_ENGINE_WORKSPACES_MAX, sizeof *wn);
		nw = e->workspaces(e->ud, wn, PART_ENGINE_WORKSPACES_MAX);
	}
	char *s = part_peers_context(e->self, pn, np, wn, nw);
	if (e->relationships && np) {
		/* what we remember of them (§7.4), after what they say of themselves */
		const char **names = xcalloc(np, sizeof *names);
		for (size_t i = 0; i < np; i++)
			names[i] = pn[i].name;
		char *rel = e->relationships(e->ud, names, np);
		free(names);
		if (rel && rel[0]) {
			struct strbuf sb;
			sb_init(&sb, 0);
			sb_puts(&sb, s);
			if (sb.len && sb.buf[sb.len - 1] != '\n')
				sb_putc(&sb, '\n');
			sb_puts(&sb, rel);
			free(s);
			s = sb_detach(&sb);
		}
		free(rel);
	}
	free(pn);
	free(wn);
	if (!s[0]) {
		free(s);
		s = xstrdup("nothing known yet");
	}
	return s;
}

static char *user_message(struct part_engine *e, struct ga_err *err)
{
	const struct part_tick_out *t = &e->out;
	struct strbuf own;
	sb_init(&own, PIECE_MAX_BYTES);
	ownership_text(t, &own);
	struct strbuf req;
	sb_init(&req, PIECE_MAX_BYTES);
	if (t->request)
		sb_printf(&req, "%s: \"%.2000s\"", t->request_open ? "open" : "fulfilled",
		          t->request);
	else
		sb_puts(&req, "no request");
	char *hist = history_text(&e->st, false);
	char *mine = history_text(&e->st, true);
	char typing[512];
	typing_text(e, typing, sizeof typing);
	char *peers = part_peer_commitments(&e->st);
	char *others = peers_text(e);
	struct strbuf cfgs;
	sb_init(&cfgs, 4096);
	if (e->cd_fixed) {
		struct space_cfg shown = e->cfg;
		shown.cooldown_min_ms = e->cd_min;
		shown.cooldown_max_ms = e->cd_max;
		space_cfg_render(&shown, &cfgs);
	} else {
		space_cfg_render(&e->cfg, &cfgs);
	}
	const char *cfg = sb_cstr(&cfgs);
	struct skill_var vars[] = {
	        {"detectedRepo", t->repo ? t->repo : "none named"},
	        {"actionOwnership", sb_cstr(&own)},
	        {"hostRequestStatus", sb_cstr(&req)},
	        {"conversationHistory", hist},
	        {"typingAgents", typing},
	        {"ownPreviousMessages", mine},
	        {"commitmentContext", peers[0] ? peers : "none"},
	        {"currentConfig", cfg},
	        {"selfExcerpt", e->self_text ? e->self_text : "(no SELF.md)"},
	        {"peerContext", others},
	};
	char *body = skills_render(e->skills, PART_ENGINE_SKILL, "User Message Template", vars,
	                           sizeof vars / sizeof vars[0], err);
	char *msg = NULL;
	if (body) {
		struct strbuf sb;
		sb_init(&sb, PROMPT_MAX_BYTES);
		sb_puts(&sb, body);
		notes_text(t, &sb);
		if (e->disc_retried)
			sb_puts(&sb, disc_retry_note);
		msg = sb_detach(&sb);
		sb_free(&sb);
		free(body);
	}
	sb_free(&own);
	sb_free(&req);
	sb_free(&cfgs);
	free(hist);
	free(mine);
	free(peers);
	free(others);
	return msg;
}

/* ---- the send (§12) --------------------------------------------------------------------- */

/* A commitment as the ledger's action params (the tools' argument shapes). */
static cJSON *commit_params(const struct part_commitment *c)
{
	cJSON *p = cJSON_CreateObject();
	if (c->repo) {
		const char *slash = strchr(c->repo, '/');
		if (slash) {
			char owner[PART_REPO_MAX];
			snprintf(owner, sizeof owner, "%.*s", (int)(slash - c->repo), c->repo);
			cJSON_AddStringToObject(p, "owner", owner);
			cJSON_AddStringToObject(p, "repo", slash + 1);
		}
	}
	const char *body = c->description ? c->description : c->content;
	switch (c->type) {
	case PART_COMMIT_CREATE_ISSUE:
		cJSON_AddStringToObject(p, "title", c->title ? c->title : (body ? body : ""));
		if (body)
			cJSON_AddStringToObject(p, "body", body);
		break;
	case PART_COMMIT_CREATE_PLAN:
		cJSON_AddStringToObject(p, "title", c->title ? c->title : (body ? body : ""));
		cJSON_AddStringToObject(p, "goal", body ? body : (c->title ? c->title : ""));
		cJSON_AddStringToObject(p, "context", "promised in the agent-space");
		cJSON_AddItemToObject(p, "tasks", cJSON_CreateArray());
		break;
	case PART_COMMIT_COMMENT_ISSUE:
		cJSON_AddNumberToObject(p, "issue_number", (double)c->issue_number);
		cJSON_AddStringToObject(p, "body", body ? body : (c->title ? c->title : ""));
		break;
	case PART_COMMIT_POST_BLUESKY:
		cJSON_AddStringToObject(p, "text",
		                        c->content ? c->content
		                                   : (body ? body : (c->title ? c->title : "")));
		break;
	default:
		break;
	}
	return p;
}

static size_t enqueue_commitments(struct part_engine *e)
{
	size_t kept = 0;
	for (size_t i = 0; i < e->dec.commitments.n; i++) {
		const struct part_commitment *c = &e->dec.commitments.item[i];
		struct decision d;
		char target[PART_CLAIM_TARGET_MAX];
		part_claim_target(c, e->out.repo, target, sizeof target);
		const char *holder = live_holder(e, part_commit_type_name(c->type), target);
		if (!holder && own_has(e, c)) {
			decision_set(&d, VERDICT_DROP, "already_committed",
			             "%s:%s is already in my ledger: not enqueued again",
			             part_commit_type_name(c->type), target);
			pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, e->trig_conv, e->trig_id,
			              STAGE_RECORD, &d);
			continue;
		}
		if (holder) {
			/* claimed while the words were on their way */
			decision_set(&d, VERDICT_DROP, "claimed_by_peer",
			             "%s holds a live claim on %s:%s: not enqueued (no duplicate "
			             "action)",
			             holder, part_commit_type_name(c->type), target);
			pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, e->trig_conv, e->trig_id,
			              STAGE_RECORD, &d);
			continue;
		}
		cJSON *params = commit_params(c);
		char id[LEDGER_ID_MAX] = "";
		struct ga_err err = {{0}};
		int r = e->ledger ? ledger_add(e->ledger, part_commit_type_name(c->type), "space",
		                               params, time_now_ms(), id, &err)
		                  : -1;
		if (!e->ledger)
			err_set(&err, "no commitment ledger in this process");
		if (r == LEDGER_ADDED || r == LEDGER_DUPLICATE) {
			kept++;
			if (e->out.request_open) /* what fulfils it (§6.3) */
				part_req_commits_note(&e->req_commits, &e->st, id);
			decision_set(&d, VERDICT_INFO, "commitment", "%s %s (source space)%s",
			             part_commit_type_name(c->type), id,
			             r == LEDGER_DUPLICATE ? ": already open" : " enqueued");
		} else {
			decision_set(&d, VERDICT_FAIL, "commitment", "%s not enqueued: %s",
			             part_commit_type_name(c->type), err.msg);
		}
		pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, e->trig_conv, e->trig_id,
		              STAGE_RECORD, &d);
		cJSON_Delete(params);
	}
	return kept;
}

static void recover(struct part_engine *e, bool validator_ran, bool validator_salvage);
static void call_model(struct part_engine *e);
static void extract(struct part_engine *e);

static void on_said(void *ud, const struct decision *final, const char *artifact)
{
	(void)artifact;
	struct part_engine *e = anchor_drop(ud);
	if (!e)
		return;
	claims_settle(e, final && final->verdict == VERDICT_SENT);
	/* A forced action counts against its cap (§16.8) whether or not it was
	 * said: one refused downstream is not tried again on every tick. */
	if (e->phase == PH_FORCED)
		part_note_forced(&e->st);
	if (final && final->verdict == VERDICT_SENT) {
		int64_t now = time_now_ms();
		int64_t span = e->cd_max > e->cd_min ? e->cd_max - e->cd_min : 0;
		int64_t cd = e->cd_min + (span ? (int64_t)(next_rand(e) % (uint64_t)span) : 0);
		part_note_sent(&e->st, e->self, e->said, strlen(e->said), now, now + cd);
		if (e->dec.commitments.n) {
			if (enqueue_commitments(e) > 0 && e->out.request_open)
				part_note_fulfilled(&e->st, "commitment");
		} else {
			extract(e); /* §12.3; ends the tick */
			return;
		}
		tick_end(e);
		return;
	}
	/* The pipeline's validator said no: §11 decides what is left. Any
	 * other end (outbound refused, paused, the room gone) ends the tick. */
	if (final && final->verdict == VERDICT_REJECT) {
		recover(e, true, e->pre.salvage);
		return;
	}
	/* The owner's words were refused after the validator (outbound dedup,
	 * withdrawn by the last look): the request still waits on us, so the
	 * owner retry / forced action follow as after a rejection (each once
	 * per tick, part_recover_next); before, the tick just ended and the
	 * request went untaken. */
	if (final && e->out.own.is_owner && e->out.request_open && !e->social_only &&
	    e->phase != PH_FORCED) {
		struct decision d;
		decision_set(&d, VERDICT_INFO, "not_said",
		             "my words for the open request were not said (%s: %s): recovering",
		             final->rule ? final->rule : decision_verdict_name(final->verdict),
		             final->reason);
		record(e, &d);
		recover(e, true, false);
		return;
	}
	tick_end(e);
}

/* The echo window of the candidate: the trigger's conversation (the room),
 * agents' messages compared, persons' context (§9.1) — what the pipeline's
 * validator stage would build. */
static struct echo_window *window_now(struct part_engine *e)
{
	struct conv_store *cs = pipeline_store(e->pipeline);
	struct echo_window *w = echo_window_new(PIPELINE_ECHO_WINDOW);
	size_t n = conv_store_message_count(cs, e->trig_conv);
	for (size_t i = n > PIPELINE_ECHO_WINDOW ? n - PIPELINE_ECHO_WINDOW : 0; i < n; i++) {
		const struct conv_message *m = conv_store_message_at(cs, e->trig_conv, i);
		if (m)
			echo_window_push(w, m->author_name, !conv_author_is_person(m->author_kind),
			                 m->text ? m->text : "");
	}
	return w;
}

static void build_window(struct part_engine *e)
{
	echo_window_free(e->win);
	e->win = window_now(e);
	/* Where the window ended: what comes after it arrived during the delays. */
	struct conv_store *cs = pipeline_store(e->pipeline);
	size_t n = conv_store_message_count(cs, e->trig_conv);
	const struct conv_message *last = n ? conv_store_message_at(cs, e->trig_conv, n - 1) : NULL;
	free(e->win_last);
	e->win_last = last && last->message_id ? xstrdup(last->message_id) : NULL;
}

/* Other agents' messages of the trigger's conversation after e->win_last
 * (all of the window's when the store had none then), oldest first. */
static size_t fresh_since(struct part_engine *e, struct part_fresh *out, size_t cap)
{
	struct conv_store *cs = pipeline_store(e->pipeline);
	size_t n = conv_store_message_count(cs, e->trig_conv), k = 0;
	size_t low = n > PIPELINE_ECHO_WINDOW ? n - PIPELINE_ECHO_WINDOW : 0;
	for (size_t i = n; i-- > low && k < cap;) {
		const struct conv_message *m = conv_store_message_at(cs, e->trig_conv, i);
		if (!m)
			continue;
		if (e->win_last && m->message_id && strcmp(m->message_id, e->win_last) == 0)
			break;
		if (conv_author_is_person(m->author_kind) || m->author_kind == CONV_AUTHOR_SELF)
			continue;
		out[k++] = (struct part_fresh){.author = m->author_name, .text = m->text};
	}
	for (size_t i = 0; i < k / 2; i++) {
		struct part_fresh t = out[i];
		out[i] = out[k - 1 - i];
		out[k - 1 - i] = t;
	}
	return k;
}

bool part_engine_send_check(struct part_engine *e, const char *text, char *why, size_t cap)
{
	if (cap)
		why[0] = '\0';
	if (!e || !e->ticking || !e->said || !text)
		return true;
	size_t m = strlen(e->said);
	if (m > PART_ENGINE_SEND_MATCH_BYTES)
		m = PART_ENGINE_SEND_MATCH_BYTES;
	if (strncmp(text, e->said, m) != 0)
		return true; /* not ours: another sender's chat */
	struct part_fresh fresh[PIPELINE_ECHO_WINDOW];
	size_t nfresh = fresh_since(e, fresh, PIPELINE_ECHO_WINDOW);
	if (!nfresh)
		return true;
	struct echo_window *w = window_now(e);
	struct decision d;
	bool echo = part_late_echo(text, e->dec.commitments.n, w,
	                           e->pre.echo_ran ? &e->pre.echo : NULL, fresh, nfresh, &d);
	echo_window_free(w);
	if (!echo)
		return true;
	record_at(e, STAGE_OUTBOUND, &d);
	if (cap)
		snprintf(why, cap, "%s: %s", d.rule, d.reason);
	return false;
}

static void fill_ctx(struct part_engine *e, struct validator_context *ctx)
{
	memset(ctx, 0, sizeof *ctx);
	part_validator_context(&e->out, e->dec.commitments.n, ctx);
	ctx->window = e->win;
	if (!e->own) { /* at the first validation: the stemmer loads then anyway */
		const struct skill *sk = skills_find(e->skills, PART_ENGINE_SKILL);
		const char *own[] = {sk ? sk->body : NULL, e->have_tool ? e->tool.description : NULL,
		                     e->have_tool ? e->tool.schema_json : NULL};
		e->own = echo_own_new(own, sizeof own / sizeof own[0]);
	}
	ctx->own = e->own;
	ctx->judge = part_judge_validator(e->judge);
}

static void send_now(struct part_engine *e)
{
	struct decision d;
	char target[PIPELINE_TARGET_MAX];
	if (e->target(e->ud, target, sizeof target) != 0) {
		decision_set(&d, VERDICT_DROP, "no_target", "not in the room any more: not said");
		record(e, &d);
		tick_end(e);
		return;
	}
	free(e->said);
	e->said = xstrdup(e->dec.message);
	claims_send(e);
	struct validator_context ctx;
	fill_ctx(e, &ctx);
	/* The pipeline's stage has no judge; once ours has found the words
	 * new, the echo checks are settled and the stage gets an empty window
	 * (every other check runs there again). */
	ctx.judge = NULL;
	struct echo_window *empty = e->judged_new ? echo_window_new(1) : NULL;
	if (empty)
		ctx.window = empty;
	/* The pipeline's journal sends one chat per id, ever (exactly once
	 * across restarts): the decision's words go under the trigger's id;
	 * salvage, the owner retry and forced action are further chats for the
	 * same trigger and get their own ids — under the trigger's id the
	 * forced action after the owner's plain answer was dropped as "already
	 * sent" on every tick and the request went untaken. */
	char sid[ID_MAX + 32];
	const char *id = e->trig_id[0] ? e->trig_id : NULL;
	if (id && e->phase != PH_DECISION) {
		snprintf(sid, sizeof sid, "%s#%s%u", e->trig_id,
		         e->phase == PH_SALVAGE ? "salvage"
		         : e->phase == PH_RETRY ? "retry"
		                                : "forced",
		         e->phase == PH_SALVAGE ? 1u
		         : e->phase == PH_RETRY ? e->st.owner_rejections
		                                : e->st.forced_attempts + 1);
		id = sid;
	}
	pipeline_say_ctx(e->pipeline, CONV_PLATFORM_SPACE, target, "participation", e->said,
	                 strlen(e->said), e->trig_chain, e->trig_courtesy, id, &ctx, on_said,
	                 anchor_take(e));
	echo_window_free(empty);
}

static void on_judged(void *ud, int verdict, const char *reason)
{
	struct part_engine *e = anchor_drop(ud);
	if (!e)
		return;
	struct validator_context ctx;
	fill_ctx(e, &ctx);
	validator_resume(e->dec.message, &ctx, verdict, reason, &e->pre);
	struct decision d;
	if (verdict == 1) {
		/* An echo: it never reaches the room. */
		validator_to_decision(&e->pre, &d);
		record_at(e, STAGE_VALIDATOR, &d);
		recover(e, true, e->pre.salvage);
		return;
	}
	decision_set(&d, VERDICT_INFO, "echo_judge", "%s", reason ? reason : "not an echo");
	record_at(e, STAGE_VALIDATOR, &d);
	e->judged_new = true;
	send_now(e);
}

/* §9–§10 before the send: the validator with the judge; see engine.h. */
static void validate_then_send(struct part_engine *e)
{
	/* §4 whatever the words: another agent's request is not ours to act on. */
	struct decision own;
	if (part_drop_foreign_commitments(&e->dec.commitments, &e->out, &own))
		record_at(e, STAGE_VALIDATOR, &own);
	size_t had = e->dec.commitments.n;
	drop_taken(e);
	if (e->phase != PH_DECISION && had && !e->dec.commitments.n) {
		/* salvage / retry / forced words exist only for their commitments */
		struct decision d;
		decision_set(&d, VERDICT_DROP, "nothing_to_promise",
		             "the %s's commitments were all taken: its words are not said",
		             e->phase == PH_SALVAGE ? "salvage"
		             : e->phase == PH_RETRY ? "owner retry"
		                                    : "forced action");
		record_at(e, STAGE_VALIDATOR, &d);
		if (e->phase == PH_FORCED)
			part_note_forced(&e->st);
		tick_end(e);
		return;
	}
	build_window(e);
	e->judged_new = false;
	validator_decision_clear(&e->pre);
	memset(&e->pre, 0, sizeof e->pre);
	struct validator_context ctx;
	fill_ctx(e, &ctx);
	if (validator_validate(e->dec.message, &ctx, &e->pre) != VALIDATOR_REFER) {
		send_now(e);
		return;
	}
	struct decision d;
	decision_set(&d, VERDICT_INFO, "echo_judge",
	             "borderline echo (pair %.2f, novelty %.2f): asking the judge",
	             e->pre.echo.pair, e->pre.echo.novelty);
	record_at(e, STAGE_VALIDATOR, &d);
	e->anchor->refs++;
	if (validator_refer(&ctx, e->dec.message, on_judged, e->anchor) != 0) {
		e->anchor->refs--;
		on_judged(anchor_take(e), -1, "no judge to ask: not an echo");
	}
}

/* ---- the model call (§8) ----------------------------------------------------------------- */

static int sink_enqueue(const char *action, const cJSON *params, void *ud, char *result, size_t cap,
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

static void on_composed(const struct compose_result *res, void *ud)
{
	struct part_engine *e = anchor_drop(ud);
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
		record(e, &d);
		tick_end(e);
		return;
	}
	if (!e->have_dec) {
		decision_set(&d, VERDICT_FAIL, "decision",
		             "the model gave no usable space_decision (%s: %s): silent",
		             res->stop_name ? res->stop_name : "?", res->reason);
		record(e, &d);
		tick_end(e);
		return;
	}
	adjust_cfg(e);
	bool speaks = e->dec.should_speak && e->dec.message && e->dec.message[0];
	if (!speaks) {
		recover(e, false, false);
		return;
	}
	decision_set(&d, VERDICT_PASS, "decided",
	             "the model speaks (%zu bytes, %zu commitments%s, %zu dropped)%s%s",
	             strlen(e->dec.message), e->dec.commitments.n,
	             e->dec.from_text ? ", read from text" : "", e->dec.commitments.ndropped_total,
	             e->dec.reason && e->dec.reason[0] ? ": " : "",
	             e->dec.reason ? e->dec.reason : "");
	record(e, &d);
	validate_then_send(e);
}

/* One tool-less model call for the tick (Layer 2, the issue body, the
 * extraction): the engine's anchor rides along. 0 when started; -1 with err
 * (nothing will be called back). temperature < 0: the provider's. */
static int ask_plain(struct part_engine *e, const char *system, char *user, int max_tokens,
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
static int ask_decision(struct part_engine *e, const char *system, char *user, compose_done_fn done,
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

/* ---- §11: salvage, the owner retry, forced action ------------------------------------- */

static void owner_retry(struct part_engine *e);
static void forced_action(struct part_engine *e, bool due_now);

static bool blank_text(const char *s)
{
	for (; s && *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return false;
	return true;
}

/* The decision did not speak (validator_ran false) or the validator
 * rejected it: salvage once, then what part_recover_next says. */
static void recover(struct part_engine *e, bool validator_ran, bool validator_salvage)
{
	struct decision why;
	size_t had = e->dec.commitments.n;
	if (!e->salvaged && had) {
		bool ok = part_salvage(&e->dec, &e->out, validator_ran, validator_salvage, &why);
		record(e, &why);
		if (ok) {
			e->salvaged = true;
			e->phase = PH_SALVAGE;
			validate_then_send(e);
			return;
		}
	}
	enum part_recovery r = part_recover_next(&e->st, &e->out, e->retried, &why);
	if (r != PART_RECOVER_NONE || (e->out.own.is_owner && e->out.request_open))
		record(e, &why);
	if (r == PART_RECOVER_NONE && validator_ran && !e->disc_retried) {
		/* a host question nobody answered: one agent asks once more */
		struct part_member *m = xcalloc(PART_MEMBERS_MAX, sizeof *m);
		size_t nm = e->members(e->ud, m, PART_MEMBERS_MAX);
		uint64_t seq = part_discussion_retry_due(&e->st, &e->out, e->self, e->social_only,
		                                         m, nm, e->disc_done_seq, &why);
		free(m);
		if (seq) {
			record(e, &why);
			e->disc_retried = true;
			e->disc_done_seq = seq;
			e->phase = PH_DECISION; /* the refused words were never sent */
			call_model(e);
			return;
		}
	}
	if (r == PART_RECOVER_RETRY) {
		e->retried = true;
		owner_retry(e);
		return;
	}
	if (r == PART_RECOVER_FORCE && e->phase != PH_FORCED) {
		forced_action(e, true);
		return;
	}
	if (!validator_ran && e->phase == PH_DECISION) {
		part_note_declined(&e->st, time_now_ms());
		decision_set(&why, VERDICT_INFO, "declined", "the model stays silent: %s",
		             e->dec.reason && e->dec.reason[0] ? e->dec.reason : "(no reason)");
		record(e, &why);
	}
	tick_end(e);
}

static const char retry_system[] =
        "You are an autonomous agent in a chatroom with a human host and other agents. You own "
        "the host's request: call the space_decision tool with a commitment that fulfils it. No "
        "discussion.";

static void on_retry(const struct compose_result *res, void *ud)
{
	struct part_engine *e = anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	struct decision why;
	if (res->stop == COMPOSE_STOP_CANCELLED) {
		decision_set(&why, VERDICT_INFO, "cancelled", "the owner retry was cancelled");
		record(e, &why);
		tick_end(e);
		return;
	}
	if (!e->have_dec && res->content) {
		struct ga_err err = {{0}};
		if (part_decision_from_text(res->content, strlen(res->content), e->social_only,
		                            &e->dec, &err) == 0)
			e->have_dec = true;
	}
	if (e->have_dec && part_owner_retry_accept(&e->dec, &e->out, &why) == 0) {
		record(e, &why);
		e->phase = PH_RETRY;
		validate_then_send(e);
		return;
	}
	if (!e->have_dec)
		decision_set(&why, VERDICT_FAIL, "owner_retry",
		             "the owner retry gave no usable space_decision (%s: %s)",
		             res->stop_name ? res->stop_name : "?", res->reason);
	record(e, &why);
	recover(e, false, false);
}

/* §11.2: one call, space_decision forced, the commitment-only prompt. */
static void owner_retry(struct part_engine *e)
{
	const char *repo = e->out.repo ? e->out.repo : "";
	struct strbuf sb;
	sb_init(&sb, PROMPT_MAX_BYTES);
	sb_printf(&sb, "HOST REQUEST: \"%s\"\nREPO: %s\n",
	          e->st.req_content ? e->st.req_content : "", repo[0] ? repo : "not detected");
	sb_puts(&sb, "You are the action owner. Return only the decision with a commitment that "
	             "fulfils the request, no discussion. Template:\n");
	cJSON *t = cJSON_CreateObject();
	cJSON_AddBoolToObject(t, "shouldSpeak", true);
	cJSON_AddStringToObject(t, "reason", "I own the request");
	cJSON_AddStringToObject(t, "message", PART_FORCED_MESSAGE);
	cJSON *arr = cJSON_AddArrayToObject(t, "commitments");
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "create_issue");
	cJSON_AddStringToObject(c, "repo", repo);
	cJSON_AddStringToObject(c, "title", "brief title");
	cJSON_AddStringToObject(c, "description", "full issue body in markdown");
	cJSON_AddItemToArray(arr, c);
	char *tj = cJSON_PrintUnformatted(t);
	cJSON_Delete(t);
	sb_puts(&sb, tj ? tj : "");
	free(tj);
	struct ga_err err = {{0}};
	int rc = ask_decision(e, retry_system, sb.buf, on_retry, &err);
	sb_free(&sb);
	if (rc != 0) {
		struct decision d;
		decision_set(&d, VERDICT_FAIL, "owner_retry", "the owner retry could not start: %s",
		             err.msg);
		record(e, &d);
		recover(e, false, false);
	}
}

static const char enrich_system[] =
        "You are a technical writer. Produce a well-structured GitHub issue body in markdown: a "
        "description, an acceptance-criteria checklist and the relevant context. Be concise. "
        "Markdown only.";

static void forced_with_body(struct part_engine *e, const char *body)
{
	struct decision why;
	if (part_forced_decision(&e->st, &e->out, e->forced_now, body, &e->dec, &why) != 0) {
		record(e, &why);
		tick_end(e);
		return;
	}
	record(e, &why);
	e->phase = PH_FORCED;
	validate_then_send(e);
}

static void on_enriched(const struct compose_result *res, void *ud)
{
	struct part_engine *e = anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	if (res->stop == COMPOSE_STOP_CANCELLED) {
		tick_end(e);
		return;
	}
	char *body = NULL;
	if (res->stop == COMPOSE_STOP_FINAL && res->content) {
		body = xstrdup(res->content);
		size_t n = strlen(body);
		while (n && (body[n - 1] == ' ' || body[n - 1] == '\n' || body[n - 1] == '\t' ||
		             body[n - 1] == '\r'))
			body[--n] = '\0';
		if (n <= PART_ENGINE_ENRICH_MIN_BYTES || blank_text(body)) {
			free(body);
			body = NULL;
		}
	}
	if (!body)
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "forced action: the default issue body", "stop",
		       res->stop_name ? res->stop_name : "?", "reason", res->reason);
	forced_with_body(e, body);
	free(body);
}

/* §11.3: check it can be done (repo, due, not social-only) with the default
 * body, then ask the model for a better body, then decide. */
static void forced_action(struct part_engine *e, bool due_now)
{
	e->forced_now = due_now;
	struct part_decision probe;
	memset(&probe, 0, sizeof probe);
	struct decision why;
	int ok = part_forced_decision(&e->st, &e->out, due_now, NULL, &probe, &why);
	part_decision_clear(&probe);
	if (ok != 0) {
		/* Due on every message-less tick until a repository is named: said
		 * once per request, not every 5 s. */
		bool norepo = strcmp(why.rule, "forced_no_repo") == 0;
		if (!norepo || e->norepo_seq != e->st.req_seq)
			record(e, &why);
		if (norepo)
			e->norepo_seq = e->st.req_seq;
		tick_end(e);
		return;
	}
	char *hist = history_text(&e->st, false);
	struct strbuf sb;
	sb_init(&sb, PROMPT_MAX_BYTES);
	sb_printf(&sb,
	          "The request: %s\n\nThe conversation:\n%s\nThe repository: %s\n\nWrite the "
	          "issue body:",
	          e->st.req_content ? e->st.req_content : "", hist, e->out.repo ? e->out.repo : "");
	free(hist);
	struct ga_err err = {{0}};
	int rc = ask_plain(e, enrich_system, sb.buf, PART_ENGINE_ENRICH_MAX_TOKENS, -1, on_enriched,
	                   &err);
	sb_free(&sb);
	if (rc != 0)
		forced_with_body(e, NULL);
}

/* ---- §8.4 / §12.3: extraction after commitment-free words ----------------------------- */

static void on_extracted(const struct compose_result *res, void *ud)
{
	struct part_engine *e = anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	struct decision d;
	if (res->stop != COMPOSE_STOP_FINAL || !res->content) {
		decision_set(&d, VERDICT_INFO, "extraction", "no extraction (%s: %s)",
		             res->stop_name ? res->stop_name : "?", res->reason);
		record_at(e, STAGE_RECORD, &d);
		tick_end(e);
		return;
	}
	struct part_commitments got;
	memset(&got, 0, sizeof got);
	struct ga_err err = {{0}};
	if (part_extract_parse(res->content, strlen(res->content), e->social_only, &got, &err) !=
	    0) {
		decision_set(&d, VERDICT_INFO, "extraction",
		             "the extraction reply was unusable: %s", err.msg);
		record_at(e, STAGE_RECORD, &d);
		tick_end(e);
		return;
	}
	decision_set(&d, VERDICT_INFO, "extraction",
	             "%zu commitment(s) extracted from the sent words (%zu dropped)", got.n,
	             got.ndropped_total);
	record_at(e, STAGE_RECORD, &d);
	if (part_drop_foreign_commitments(&got, &e->out, &d))
		record_at(e, STAGE_RECORD, &d);
	if (got.n) {
		part_commitments_clear(&e->dec.commitments);
		e->dec.commitments = got;
		memset(&got, 0, sizeof got);
		if (enqueue_commitments(e) > 0 && e->out.request_open)
			part_note_fulfilled(&e->st, "extracted");
	}
	part_commitments_clear(&got);
	tick_end(e);
}

static void extract(struct part_engine *e)
{
	char why[160];
	if (!part_extract_wanted(e->said, strlen(e->said), why, sizeof why)) {
		tick_end(e);
		return;
	}
	char *user = part_extract_prompt(e->said, e->out.repo, e->host_lines);
	struct ga_err err = {{0}};
	int rc = ask_plain(e, part_extract_system(), user, PART_EXTRACT_MAX_TOKENS, 0, on_extracted,
	                   &err);
	free(user);
	if (rc != 0) {
		struct decision d;
		decision_set(&d, VERDICT_INFO, "extraction", "no extraction call: %s", err.msg);
		record_at(e, STAGE_RECORD, &d);
		tick_end(e);
		return;
	}
	struct decision d;
	decision_set(&d, VERDICT_INFO, "extraction", "%s: asking the model for commitments", why);
	record_at(e, STAGE_RECORD, &d);
}

static void call_model(struct part_engine *e)
{
	struct ga_err err = {{0}};
	struct decision d;
	char *skill = skills_render(e->skills, PART_ENGINE_SKILL, NULL, NULL, 0, &err);
	char *user = skill ? user_message(e, &err) : NULL;
	if (!skill || !user || !e->have_tool) {
		decision_set(&d, VERDICT_FAIL, "prompt", "no decision call: %s",
		             !e->have_tool ? "the space_decision tool is not offered" : err.msg);
		record(e, &d);
		free(skill);
		free(user);
		tick_end(e);
		return;
	}
	char *system = skills_system_prompt(e->soul, e->self_text, skill);
	free(skill);
	int rc = ask_decision(e, system, user, on_composed, &err);
	free(system);
	free(user);
	if (rc != 0) {
		decision_set(&d, VERDICT_FAIL, "decision", "the decision call could not start: %s",
		             err.msg);
		record(e, &d);
		tick_end(e);
	}
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
		};
	}
	return e->ntb;
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

static void on_layer2(const struct compose_result *res, void *ud)
{
	struct part_engine *e = anchor_drop(ud);
	if (!e)
		return;
	e->run = NULL;
	if (res->stop == COMPOSE_STOP_CANCELLED) {
		clear_l2(e);
		for (size_t i = 0; i < e->ntb; i++)
			pending_clear(&e->tb[i]);
		e->ntb = 0;
		tick_end(e);
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
	if (ask_plain(e, layer2_system, user, 10, 0, on_layer2, &err) != 0) {
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
	record(e, &d);
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
	claims_expire(e);
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

static void run_tick(struct part_engine *e)
{
	/* The trigger of the last tick stays when this batch has no live
	 * chat: messages taken in during a cooldown are answered on a later
	 * tick, and their reply belongs to the newest of them. */
	struct part_event evs[PART_ENGINE_BATCH_MAX];
	size_t n = tick_events(e, evs);
	const struct pending *trig = NULL;
	int trig_score = -1;
	for (size_t i = 0; i < n; i++) {
		const struct pending *p = &e->tb[i];
		/* The message the answer belongs to: a live one, the host's
		 * before an agent's, addressed to us before not, newest last. */
		if (p->from_history || p->claim)
			continue;
		int score = (p->kind == PART_AUTHOR_HOST) * 2 + p->addressed_me;
		if (score >= trig_score) {
			trig_score = score;
			trig = p;
		}
	}
	if (trig) {
		snprintf(e->trig_id, sizeof e->trig_id, "%s", trig->message_id);
		snprintf(e->trig_conv, sizeof e->trig_conv, "%s", trig->conversation);
		e->trig_chain = trig->chain_out;
		e->trig_courtesy = trig->courtesy;
	}
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
	for (size_t i = 0; i < n; i++)
		pending_clear(&e->tb[i]);
	e->ntb = 0;
	/* layer2 points into the batch just freed */
	e->out.nlayer2 = 0;

	if (e->out.has_new || e->out.call_model)
		record(e, &e->out.verdict);
	if (!e->out.call_model) {
		/* §11.3 without new messages: the owner's request has waited. */
		if (e->out.force_action_due && !e->social_only) {
			forced_action(e, false);
			return;
		}
		tick_end(e);
		return;
	}
	call_model(e);
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
	size_t n = strlen(s);
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--; /* on a UTF-8 boundary */
	}
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
	e->relationships = c->relationships;
	e->claim = c->claim;
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
	for (size_t i = 0; i < e->nbatch; i++)
		pending_clear(&e->batch[i]);
	for (size_t i = 0; i < e->ntb; i++)
		pending_clear(&e->tb[i]);
	clear_l2(e);
	part_judge_free(e->judge);
	free(e->salvage_lead);
	free(e->forced_lead);
	echo_own_free(e->own);
	echo_window_free(e->win);
	free(e->win_last);
	validator_decision_clear(&e->pre);
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
