/*
 * claims — §12.1 step 4: the claim target of a commitment, the
 * peers' live claims as this agent was told of them, and the drop of our
 * commitments a peer already claimed. See participation.h ("claims").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "modules/commitments/workkey.h"
#include "modules/participation/participation.h"

static bool filled(const char *s)
{
	return s && s[0];
}

void part_claim_work(const struct cmt_item *c, const char *detected_repo, struct commit_work *out)
{
	if (c->type == CMT_CREATE_WORKSPACE) {
		commit_work_of_workspace(c->org, out);
		return;
	}
	commit_work_of(cmt_type_name(c->type), filled(c->repo) ? c->repo : detected_repo, c->title,
	               c->description, NULL, out);
}

size_t part_claim_target(const struct cmt_item *c, const char *detected_repo, char *buf, size_t cap)
{
	if (!cap)
		return 0;
	struct commit_work w;
	part_claim_work(c, detected_repo, &w);
	return utf8_copy(buf, cap, w.promise_target);
}

static long find_claim(const struct part_peer_claims *t, const char *action, const char *target)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->item[i].action, action) == 0 &&
		    strcmp(t->item[i].target, target) == 0)
			return (long)i;
	return -1;
}

static void remove_claim(struct part_peer_claims *t, size_t i)
{
	memmove(&t->item[i], &t->item[i + 1], (t->n - i - 1) * sizeof t->item[0]);
	t->n--;
	memset(&t->item[t->n], 0, sizeof t->item[0]);
}

static void expire_claims(struct part_peer_claims *t, int64_t now_ms)
{
	for (size_t i = t->n; i-- > 0;)
		if (now_ms - t->item[i].seen_ms >= PART_CLAIM_TTL_MS)
			remove_claim(t, i);
}

bool part_peer_claims_note(struct part_peer_claims *t, const char *holder, const char *action,
                           const char *target, int64_t now_ms)
{
	if (!filled(holder) || !filled(action) || !filled(target) ||
	    strlen(holder) >= PART_NAME_MAX || strlen(action) >= PART_CLAIM_ACTION_MAX ||
	    strlen(target) >= PART_CLAIM_TARGET_MAX)
		return false;
	expire_claims(t, now_ms);
	long i = find_claim(t, action, target);
	if (i >= 0) {
		/* The room keeps the first claimant's claim (a late one gets
		 * "Claim conflict"); the holder's own renewal extends it. */
		if (strcmp(t->item[i].holder, holder) == 0)
			t->item[i].seen_ms = now_ms;
		return true;
	}
	if (t->n == PART_PEER_CLAIMS_MAX)
		remove_claim(t, 0); /* the oldest */
	struct part_peer_claim *c = &t->item[t->n++];
	snprintf(c->holder, sizeof c->holder, "%s", holder);
	snprintf(c->action, sizeof c->action, "%s", action);
	snprintf(c->target, sizeof c->target, "%s", target);
	c->seen_ms = now_ms;
	return true;
}

void part_peer_claims_release(struct part_peer_claims *t, const char *action, const char *target)
{
	long i = action && target ? find_claim(t, action, target) : -1;
	if (i >= 0)
		remove_claim(t, (size_t)i);
}

void part_peer_claims_forget(struct part_peer_claims *t, const char *holder)
{
	for (size_t i = t->n; i-- > 0;)
		if (holder && strcmp(t->item[i].holder, holder) == 0)
			remove_claim(t, i);
}

const char *part_peer_claims_holder(const struct part_peer_claims *t, const char *action,
                                    const char *target, int64_t now_ms)
{
	long i = action && target ? find_claim(t, action, target) : -1;
	if (i < 0 || now_ms - t->item[i].seen_ms >= PART_CLAIM_TTL_MS)
		return NULL;
	return t->item[i].holder;
}

size_t part_drop_claimed_commitments(struct cmt_list *c, const char *detected_repo,
                                     part_claim_holder_fn holder, void *ud, struct decision *why)
{
	if (!holder || !c->n)
		return 0;
	size_t had = c->n, k = 0, removed = 0;
	char first_holder[PART_NAME_MAX] = "",
	     first_key[PART_CLAIM_ACTION_MAX + 1 + PART_CLAIM_TARGET_MAX] = "";
	for (size_t i = 0; i < had; i++) {
		struct commit_work w;
		part_claim_work(&c->item[i], detected_repo, &w);
		const char *action = w.action, *target = w.promise_target;
		const char *h = holder(ud, action, target);
		if ((!h || !h[0]) && w.has_work) {
			target = w.work_target;
			h = holder(ud, action, target);
		}
		if (!h || !h[0]) {
			c->item[k++] = c->item[i];
			continue;
		}
		if (!removed) {
			snprintf(first_holder, sizeof first_holder, "%s", h);
			snprintf(first_key, sizeof first_key, "%s:%s", action, target);
		}
		cmt_item_clear(&c->item[i]);
		removed++;
	}
	for (size_t i = k; i < had; i++)
		memset(&c->item[i], 0, sizeof c->item[i]);
	c->n = k;
	if (removed)
		decision_set(
		        why, VERDICT_DROP, "claimed_by_peer",
		        "%s holds a live claim on %s: %zu of %zu commitment(s) dropped, a peer "
		        "is already on it (no duplicate action)",
		        first_holder, first_key, removed, had);
	return removed;
}
