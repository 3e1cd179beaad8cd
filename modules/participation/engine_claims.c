/*
 * engine_claims — the room's claims around a promise (§12.1 step 4): the
 * claims the room's port makes with the chat that promises the work, their
 * hold once it was said, and the two looks that drop a commitment another
 * member claimed or our own ledger already holds. See engine.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/commitments/ledger.h"
#include "modules/commitments/workkey.h"
#include "modules/participation/engine_int.h"
#include "modules/pipeline/pipeline.h"

#define LOG_COMP "participation"

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
const char *part_live_holder(void *ud, const char *action, const char *target)
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

/* Held claims whose time is over end (on every tick). */
void part_claims_expire(struct part_engine *e)
{
	int64_t now = time_now_ms();
	for (size_t i = e->nheld; i-- > 0;)
		if (e->held[i].until_ms && now >= e->held[i].until_ms)
			unclaim_at(e, i, false,
			           "claim period over; the commitment is in the ledger");
}

/* A decision about the host's open request itself (no message of its own:
 * recorded under "request:<when it opened>"), logged as what. */
static void note_request(struct part_engine *e, const char *what, const struct decision *d)
{
	log_kv(LOG_LEVEL_INFO, LOG_COMP, what, "reason", d->reason);
	char id[64];
	snprintf(id, sizeof id, "request:%lld", (long long)e->st.req_at_ms);
	pipeline_note(e->pipeline, CONV_PLATFORM_SPACE, "space:room", id, STAGE_RECORD, d);
}

/* A request a peer's claim took (fulfilled_by "peer_claim": §16.5, or a
 * commitment dropped as claimed_by_peer) is open again once no other
 * member holds a live claim on any work and none reported work done since
 * the request opened: the peer promised and did not do it (its claim
 * lapsed, or its action_result said it failed). The members who claimed it
 * since it opened are noted as having dropped it (part_note_defaulted, in
 * every agent, open request or not), so the owner computed over the rest
 * is one of those who can still do it. The owner then acts on it
 * as on any open request; the fulfilment still looks for the work on
 * GitHub before making it. Any live claim or any result keeps it taken:
 * a busy room waits rather than risk a second piece of work. */
void part_claims_lapsed(struct part_engine *e)
{
	struct part_state *st = &e->st;
	if (!st->req_content)
		return;
	int64_t now = time_now_ms();
	/* A claim relayed within its TTL is live. (Not part_live_holder: that
	 * also names a member who reported some work done, and a report from
	 * before the request — other work — would keep it taken for as long
	 * as the report is remembered. Reports since the request are below.) */
	for (size_t i = 0; i < e->peer_claims.n; i++)
		if (now - e->peer_claims.item[i].seen_ms < PART_CLAIM_TTL_MS)
			return;
	if (e->results) {
		struct part_result_note r[PART_ENGINE_RESULTS_MAX];
		size_t n = e->results(e->ud, r, PART_ENGINE_RESULTS_MAX);
		for (size_t i = 0; i < n; i++)
			if (r[i].time_ms >= st->req_at_ms)
				return;
	}
	/* Those who claimed since the request opened took it and did nothing:
	 * they are ranked for it no more (every agent notes the same names,
	 * whether or not the claim had made the request fulfilled for it). */
	char names[160];
	part_note_claimers_defaulted(st, names, sizeof names);
	if (names[0]) {
		struct decision d;
		decision_set(&d, VERDICT_INFO, "request_defaulted",
		             "%s claimed the host's request and let the claim lapse with nothing "
		             "reported done: not ranked as its owner any more",
		             names);
		note_request(e, "request defaulted", &d);
	}
	if (!st->fulfilled || !st->fulfilled_by || strcmp(st->fulfilled_by, "peer_claim") != 0)
		return;
	part_request_reopen(st);
	struct decision d;
	decision_set(&d, VERDICT_INFO, "request_reopened",
	             "the host's request was taken by a peer's claim, and no claim is held and no "
	             "work was reported done since: the request is open again");
	note_request(e, "request reopened", &d);
}

/* Our own ledger already holds this work: a space commitment of the same
 * action, repository and title (in full — the claim target's 50
 * characters would make "… (round 7)" and "… (round 15)" one request), open
 * or completed within PART_ENGINE_DONE_RECENT_MS: the request was
 * fulfilled and the model promised it again on a later turn. A repository
 * not named on either side is the detected one. A create_workspace is
 * the same work when it names the same organisation (or both none). */
struct own_dup {
	const char *action, *repo, *what, *detected;
	const char *org; /* create_workspace: "" for the default */
	bool workspace;
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
	if (o->workspace) {
		o->found = strcasecmp(owner ? owner : "", o->org) == 0;
		return;
	}
	char repo[PART_REPO_MAX * 2];
	snprintf(repo, sizeof repo, "%s%s%s", owner && name ? owner : "", owner && name ? "/" : "",
	         owner && name ? name : filled_or(o->detected, "unknown"));
	const char *what = filled_or(param_str(le->params, "title"),
	                             filled_or(param_str(le->params, "body"),
	                                       filled_or(param_str(le->params, "goal"), "")));
	o->found = strcmp(repo, o->repo) == 0 && strcmp(what, o->what) == 0;
}

bool part_own_has(struct part_engine *e, const struct cmt_item *c)
{
	if (!e->ledger)
		return false;
	struct own_dup o = {
	        .action = cmt_type_name(c->type),
	        .repo = filled_or(c->repo, filled_or(e->out.repo, "unknown")),
	        .what = filled_or(c->title, filled_or(c->description, filled_or(c->content, ""))),
	        .detected = e->out.repo,
	        .org = filled_or(c->org, ""),
	        .workspace = c->type == CMT_CREATE_WORKSPACE,
	        .now = time_now_ms(),
	};
	ledger_each(e->ledger, own_dup_each, &o);
	return o.found;
}

/* Before validation: a peer's live claim on the same action:target
 * (§12.1), or our own ledger's commitment for it. Either way the open
 * request is taken: no owner retry, no forced action for it. */
void part_drop_taken(struct part_engine *e)
{
	struct decision d;
	bool taken = false;
	struct cmt_list *cs = &e->dec.commitments;
	if (part_drop_claimed_commitments(cs, e->out.repo, part_live_holder, e, &d)) {
		part_record_at(e, STAGE_VALIDATOR, &d);
		taken = true;
		if (e->out.request_open)
			part_note_fulfilled(&e->st, "peer_claim");
	}
	size_t had = cs->n, k = 0;
	for (size_t i = 0; i < had; i++) {
		if (!part_own_has(e, &cs->item[i]))
			cs->item[k++] = cs->item[i];
		else
			cmt_item_clear(&cs->item[i]);
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
		part_record_at(e, STAGE_VALIDATOR, &d);
		taken = true;
		if (e->out.request_open)
			part_note_fulfilled(&e->st, "commitment");
	}
	if (taken && e->out.request_open) {
		e->out.request_open = false;
		e->out.force_action_due = false;
	}
}

/* {"claims":[{"action","target"}]}: each commitment of the chat under both
 * of its names (the promise form and the work form, workkey.h), made by
 * the room's port right before the chat itself (so a claim is never made
 * for words that are not said). */
void part_claims_extra(struct part_engine *e, cJSON *extra)
{
	if (!e->dec.commitments.n)
		return;
	cJSON *arr = cJSON_AddArrayToObject(extra, "claims");
	for (size_t i = 0; i < e->dec.commitments.n; i++) {
		struct commit_work w;
		part_claim_work(&e->dec.commitments.item[i], e->out.repo, &w);
		for (int form = 0; form < 2; form++) {
			if (form == 1 && !w.has_work)
				break;
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "action", w.action);
			cJSON_AddStringToObject(o, "target",
			                        form == 0 ? w.promise_target : w.work_target);
			cJSON_AddItemToArray(arr, o);
		}
	}
}

static void hold(struct part_engine *e, const char *action, const char *target, int64_t until)
{
	size_t k = 0;
	while (k < e->nheld &&
	       (strcmp(e->held[k].action, action) || strcmp(e->held[k].target, target)))
		k++;
	if (k == e->nheld) {
		if (e->nheld == PART_ENGINE_HELD_MAX)
			unclaim_at(e, 0, false, "too many claims held");
		k = e->nheld++;
		snprintf(e->held[k].action, sizeof e->held[k].action, "%s", action);
		snprintf(e->held[k].target, sizeof e->held[k].target, "%s", target);
	}
	e->held[k].until_ms = until;
}

/* The chat that promised the work was said with its claims: they are held
 * PART_ENGINE_CLAIM_HOLD_MS (renewed by the room's link meanwhile), until
 * the fulfilment holds them. */
void part_claims_said(struct part_engine *e)
{
	int64_t until = time_now_ms() + PART_ENGINE_CLAIM_HOLD_MS;
	for (size_t i = 0; i < e->dec.commitments.n; i++) {
		struct commit_work w;
		part_claim_work(&e->dec.commitments.item[i], e->out.repo, &w);
		hold(e, w.action, w.promise_target, until);
		if (w.has_work)
			hold(e, w.action, w.work_target, until);
	}
}
