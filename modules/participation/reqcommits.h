/*
 * reqcommits — which commitments were made for the host's open request, so
 * that one of them abandoned opens the request again (space-validation.md
 * §6.3 "→ false"), and nothing else does.
 *
 * The rule: the engine notes the ledger id of every commitment it enqueued
 * (added, or the open duplicate the ledger answered with) while the
 * request was open — the commitments that fulfil it; one made after it was
 * fulfilled is not noted — with that request's identity — the moment it opened
 * (part_state.req_at_ms: a new request, even the same words again after it
 * was done, opens with a new one; the idle reset clears it). When the
 * fulfilment abandons a commitment (its third failed attempt, or stale),
 * the request is open again only when that id was noted for the request
 * that is still the current one. A commitment made for an earlier request,
 * by another source (the owner, Bluesky, GitHub) or before a restart (the
 * notes are in memory) reopens nothing. Any one of the request's
 * commitments abandoned reopens it.
 *
 * No create/fail loop (§16 item 8): reopening does not reset the
 * forced-action counter (part_note_commitment_failed keeps it), so a
 * request whose forced issues keep failing is forced at most
 * PART_FORCED_MAX times in all — not once more per failure.
 *
 * Bounds: PART_REQ_COMMITS_MAX ids; beyond that the oldest is forgotten
 * (its abandonment then reopens nothing). Pure: no I/O, no clock.
 */
#ifndef GA_MODULES_PARTICIPATION_REQCOMMITS_H
#define GA_MODULES_PARTICIPATION_REQCOMMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules/decisions/decision.h"
#include "modules/participation/participation.h"

#define PART_REQ_COMMITS_MAX   8
#define PART_REQ_COMMIT_ID_MAX 64 /* LEDGER_ID_MAX */

struct part_req_commits {
	int64_t req_at_ms; /* the request the ids were noted for; 0: none */
	size_t n;
	char id[PART_REQ_COMMITS_MAX][PART_REQ_COMMIT_ID_MAX];
};

/* id was enqueued now, for st's request (nothing noted without one; an
 * id too long or already noted is not noted twice). A note for a newer
 * request forgets those of the older one. */
void part_req_commits_note(struct part_req_commits *rc, const struct part_state *st,
                           const char *id);

/* The commitment id was abandoned: true when it was the open request's
 * and the request is open again (part_note_commitment_failed on st; the
 * id is forgotten). why: verdict, rule ("request_reopened" or
 * "not_this_request") and reason, for the log. */
bool part_req_commits_failed(struct part_req_commits *rc, struct part_state *st, const char *id,
                             struct decision *why);

#endif
