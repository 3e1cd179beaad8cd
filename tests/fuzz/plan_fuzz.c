/*
 * fuzz_plan — the readers of plan issues and their comments (modules/plan):
 * plan_parse on any body, plan_body_update on each task it found (the
 * update must read back as written and leave the other tasks alone), the
 * state fold and its rendering, the marker parser (a valid marker formats
 * and reads back the same), branch names from the text as a title, and a
 * plan drafted from the text as a request (formatted, it reads back with
 * the same tasks).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "modules/plan/taskstate.h"

static void check_plan(const struct plan *p)
{
	if (p->n_tasks > PLAN_MAX_TASKS || p->n_problems > PLAN_MAX_PROBLEMS)
		abort();
	for (size_t i = 0; i < p->n_tasks; i++) {
		const struct plan_task *t = &p->tasks[i];
		if (t->number < 1 || t->number > PLAN_TASK_NUMBER_MAX || !t->title ||
		    !t->description || t->status >= PLAN_STATUS_COUNT)
			abort();
		if (t->assignee && !plan_valid_login(t->assignee))
			abort();
		if (plan_task_find(p, t->number) != t)
			abort(); /* numbers are unique */
		for (size_t j = 0; j < t->n_deps; j++)
			if (t->deps[j].task &&
			    (!plan_task_find(p, t->deps[j].task) || t->deps[j].task == t->number))
				abort();
	}
}

static void updates(const char *body, const struct plan *p)
{
	for (size_t i = 0; i < p->n_tasks && i < 8; i++) {
		int num = p->tasks[i].number;
		struct plan_update u = {.task = num,
		                        .set_status = true,
		                        .status = PLAN_BLOCKED,
		                        .set_assignee = true,
		                        .assignee = "fz-bot"};
		char *nb = plan_body_update(body, &u, 1, NULL);
		if (!nb)
			abort();
		struct plan q;
		if (strlen(nb) <= PLAN_MAX_BODY_BYTES && plan_parse(NULL, nb, &q, NULL) == 0) {
			const struct plan_task *t = plan_task_find(&q, num);
			if (q.n_tasks != p->n_tasks || !t || t->status != PLAN_BLOCKED ||
			    !t->assignee || strcmp(t->assignee, "fz-bot") != 0)
				abort();
			for (size_t k = 0; k < p->n_tasks; k++)
				if (p->tasks[k].number != num &&
				    (q.tasks[k].number != p->tasks[k].number ||
				     q.tasks[k].status != p->tasks[k].status))
					abort();
			plan_free(&q);
		}
		free(nb);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	(void)plan_is_plan(s, s);
	struct plan p;
	if (plan_parse(NULL, s, &p, NULL) == 0) {
		check_plan(&p);
		updates(s, &p);
		struct plan_task_state st[PLAN_MAX_TASKS];
		struct plan_event ev = {
		        1, "fz-bot", 1, {.kind = PLAN_MARK_CLAIM, .plan = 1, .agent = "fz-bot"}};
		ev.m.task = p.n_tasks ? p.tasks[0].number : 1;
		plan_state_fold(&p, 1, &ev, 1, st, NULL, NULL);
		bool changed;
		char *synced = plan_state_sync_body(s, st, p.n_tasks, &changed, NULL);
		if (!synced)
			abort();
		free(synced);
		struct plan_candidate c = {1, &p, st};
		struct plan_choice ch;
		plan_choose(&c, 1, &ch);
		if (ch.found && !plan_task_claimable(&p, st, p.n_tasks, ch.task, NULL))
			abort();
		plan_free(&p);
	}

	struct plan_marker m, m2;
	if (plan_marker_parse(s, &m, NULL) == 1) {
		char buf[PLAN_MARKER_MAX + 1];
		if (plan_marker_format(&m, buf, sizeof buf) == 0) {
			if (plan_marker_parse(buf, &m2, NULL) != 1 ||
			    memcmp(&m, &m2, sizeof m) != 0)
				abort();
		}
	}

	struct plan_draft d;
	if (plan_draft_from_request("Fuzzed", s, NULL, &d, NULL) == 0) {
		if (d.n_tasks < 1 || d.n_tasks > PLAN_MAX_TASKS)
			abort();
		char *body = plan_draft_format(&d, NULL);
		struct plan q;
		if (body && plan_parse("[PLAN] Fuzzed", body, &q, NULL) == 0) {
			if (q.n_tasks != d.n_tasks)
				abort();
			plan_free(&q);
		}
		free(body);
		plan_draft_free(&d);
	}

	char b[PLAN_BRANCH_MAX + 1];
	if (plan_branch_name(1 + (int)(size % 9999), s, 1 + (int)(size % 13), b, sizeof b) != 0 ||
	    strlen(b) > PLAN_BRANCH_MAX || plan_branch_task(b) != 1 + (int)(size % 9999))
		abort();
	if (plan_branch_legacy(7, s, b, sizeof b) != 0 || strlen(b) > PLAN_BRANCH_MAX)
		abort();
	free(s);
	return 0;
}
