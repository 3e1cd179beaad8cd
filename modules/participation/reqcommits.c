/* Which commitments were made for the open request: see reqcommits.h. */
#include "modules/participation/reqcommits.h"

#include <string.h>

static bool current(const struct part_req_commits *rc, const struct part_state *st)
{
	return st->req_content && st->req_at_ms != 0 && rc->req_at_ms == st->req_at_ms;
}

void part_req_commits_note(struct part_req_commits *rc, const struct part_state *st, const char *id)
{
	if (!rc || !st || !st->req_content || !id || !*id || strlen(id) >= PART_REQ_COMMIT_ID_MAX)
		return;
	if (!current(rc, st)) {
		rc->n = 0;
		rc->req_at_ms = st->req_at_ms;
	}
	for (size_t i = 0; i < rc->n; i++)
		if (strcmp(rc->id[i], id) == 0)
			return;
	if (rc->n == PART_REQ_COMMITS_MAX) {
		memmove(rc->id[0], rc->id[1], (PART_REQ_COMMITS_MAX - 1) * sizeof rc->id[0]);
		rc->n--;
	}
	strcpy(rc->id[rc->n++], id);
}

bool part_req_commits_failed(struct part_req_commits *rc, struct part_state *st, const char *id,
                             struct decision *why)
{
	size_t i = 0;
	if (rc && st && id)
		while (i < rc->n && strcmp(rc->id[i], id) != 0)
			i++;
	if (!rc || !st || !id || i == rc->n || !current(rc, st)) {
		decision_set(why, VERDICT_INFO, "not_this_request",
		             "commitment %s was abandoned; it was not made for the host's current "
		             "request: nothing reopens",
		             id ? id : "?");
		return false;
	}
	memmove(rc->id[i], rc->id[i + 1], (rc->n - i - 1) * sizeof rc->id[0]);
	rc->n--;
	part_note_commitment_failed(st);
	decision_set(why, VERDICT_INFO, "request_reopened",
	             "commitment %s for the host's request was abandoned: the request is open "
	             "again (%u of %d forced actions used; the cap stays, §16.8)",
	             id, st->forced_attempts, PART_FORCED_MAX);
	return true;
}
