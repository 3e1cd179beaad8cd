/*
 * saidwork — the work this agent already said a status line for (the
 * salvage, owner-retry and forced-action words: "On it —", "Creating that
 * now: <title>."), so that such a line is said at most once per piece of
 * work per agent.
 *
 * One piece of work is one action on one repository under one full title
 * (or, for create_workspace, one organisation): the three names of
 * commitments/workkey.h compared together — the action, the promise
 * target (the repository and the title's first 50 UTF-16 units) and the
 * work target (the whole title). The 50-unit promise target alone is the
 * room's claim name, not an identity: two requests whose titles differ
 * only after it ("… cache eviction policy in acme/widgets (round 7)" and
 * "… (round 15)") are two pieces of work, and each gets its own status
 * line.
 *
 * Bounds: PART_SAID_WORK_MAX pieces of work; beyond that the oldest is
 * forgotten (its status line could then be said once more). Pure: no I/O.
 */
#ifndef GA_MODULES_PARTICIPATION_SAIDWORK_H
#define GA_MODULES_PARTICIPATION_SAIDWORK_H

#include <stdbool.h>
#include <stddef.h>

#include "modules/commitments/commitment.h"
#include "modules/commitments/workkey.h"

#define PART_SAID_WORK_MAX 32

struct part_said_work {
	struct commit_work item[PART_SAID_WORK_MAX];
	size_t n, next; /* a ring: next is the slot the next note takes */
};

/* A status line was said for every commitment of c (detected_repo: the
 * conversation's repository, for a commitment that names none; may be
 * NULL). A piece of work already noted is not noted twice. */
void part_said_work_note(struct part_said_work *s, const struct cmt_list *c,
                         const char *detected_repo);

/* Was a status line said already for every commitment of c? False when c
 * is empty. */
bool part_said_work_all(const struct part_said_work *s, const struct cmt_list *c,
                        const char *detected_repo);

#endif
