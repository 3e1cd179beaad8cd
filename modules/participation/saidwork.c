/* The work a status line was said for: see saidwork.h. */
#include "modules/participation/saidwork.h"

#include <string.h>

#include "modules/participation/participation.h"

static bool same_work(const struct commit_work *a, const struct commit_work *b)
{
	return strcmp(a->action, b->action) == 0 &&
	       strcmp(a->promise_target, b->promise_target) == 0 &&
	       strcmp(a->work_target, b->work_target) == 0;
}

static bool said(const struct part_said_work *s, const struct commit_work *w)
{
	for (size_t i = 0; i < s->n; i++)
		if (same_work(&s->item[i], w))
			return true;
	return false;
}

void part_said_work_note(struct part_said_work *s, const struct cmt_list *c,
                         const char *detected_repo)
{
	for (size_t i = 0; i < c->n; i++) {
		struct commit_work w;
		part_claim_work(&c->item[i], detected_repo, &w);
		if (said(s, &w))
			continue;
		s->item[s->next] = w;
		s->next = (s->next + 1) % PART_SAID_WORK_MAX;
		if (s->n < PART_SAID_WORK_MAX)
			s->n++;
	}
}

bool part_said_work_all(const struct part_said_work *s, const struct cmt_list *c,
                        const char *detected_repo)
{
	if (!c->n)
		return false;
	for (size_t i = 0; i < c->n; i++) {
		struct commit_work w;
		part_claim_work(&c->item[i], detected_repo, &w);
		if (!said(s, &w))
			return false;
	}
	return true;
}
