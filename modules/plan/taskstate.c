/* taskstate — task state from the plan issue's machine markers (see
 * taskstate.h). */
#include "modules/plan/taskstate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/xalloc.h"

#define MARKER_OPEN "<!-- ga:"

static const char *const mark_names[PLAN_MARK_COUNT] = {
        [PLAN_MARK_CLAIM] = "claim",     [PLAN_MARK_START] = "start",
        [PLAN_MARK_PR] = "pr",           [PLAN_MARK_RELEASE] = "release",
        [PLAN_MARK_BLOCKED] = "blocked", [PLAN_MARK_FAILED] = "failed",
        [PLAN_MARK_RESET] = "reset",     [PLAN_MARK_DONE] = "done",
        [PLAN_MARK_ABANDON] = "abandon", [PLAN_MARK_REOPEN] = "reopen",
};

const char *plan_mark_name(enum plan_mark k)
{
	if ((int)k < 0 || k >= PLAN_MARK_COUNT)
		return "unknown";
	return mark_names[k];
}

static bool branch_chars(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._/-", *s))
			return false;
	return true;
}

int plan_marker_format(const struct plan_marker *m, char *buf, size_t cap)
{
	if ((int)m->kind < 0 || m->kind >= PLAN_MARK_COUNT || m->plan < 1 || m->task < 1 ||
	    m->task > PLAN_TASK_NUMBER_MAX || m->attempt < 0 || m->pr < 0 ||
	    !plan_valid_login(m->agent) || !branch_chars(m->branch))
		return -1;
	int n = snprintf(buf, cap, MARKER_OPEN "%s plan=%d task=%d agent=%s", mark_names[m->kind],
	                 m->plan, m->task, m->agent);
	if (n < 0 || (size_t)n >= cap)
		return -1;
	size_t at = (size_t)n;
	if (m->attempt)
		n = snprintf(buf + at, cap - at, " attempt=%d", m->attempt);
	if (n < 0 || (size_t)n >= cap - at)
		return -1;
	at += m->attempt ? (size_t)n : 0;
	if (m->pr)
		n = snprintf(buf + at, cap - at, " pr=%d", m->pr);
	if (n < 0 || (size_t)n >= cap - at)
		return -1;
	at += m->pr ? (size_t)n : 0;
	if (m->branch[0])
		n = snprintf(buf + at, cap - at, " branch=%s", m->branch);
	if (n < 0 || (size_t)n >= cap - at)
		return -1;
	at += m->branch[0] ? (size_t)n : 0;
	n = snprintf(buf + at, cap - at, " -->");
	if (n < 0 || (size_t)n >= cap - at || at + (size_t)n > PLAN_MARKER_MAX)
		return -1;
	return 0;
}

static int read_int(const char *v, size_t n, int max, int *out)
{
	if (n == 0 || n > 9)
		return -1;
	long x = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)v[i]))
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	if (x < 1 || x > max)
		return -1;
	*out = (int)x;
	return 0;
}

/* Reads the marker whose kind starts at k and ends before end ("-->"). */
static int read_marker(const char *k, const char *end, enum plan_mark kind, struct plan_marker *out,
                       struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	out->kind = kind;
	unsigned seen = 0;
	const char *p = k + strlen(mark_names[kind]);
	while (p < end) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (p >= end)
			break;
		const char *tok = p;
		while (p < end && !isspace((unsigned char)*p))
			p++;
		const char *eq = memchr(tok, '=', (size_t)(p - tok));
		if (!eq)
			return err_set(err, "ga:%s marker: '%.*s' is not key=value",
			               mark_names[kind], (int)((p - tok) > 40 ? 40 : (p - tok)),
			               tok);
		size_t kn = (size_t)(eq - tok);
		const char *v = eq + 1;
		size_t vn = (size_t)(p - v);
		static const char *const keys[] = {"plan",    "task", "agent",
		                                   "attempt", "pr",   "branch"};
		int key = -1;
		for (int i = 0; i < 6; i++)
			if (strlen(keys[i]) == kn && memcmp(keys[i], tok, kn) == 0)
				key = i;
		if (key < 0)
			continue;
		if (seen & (1u << key))
			return err_set(err, "ga:%s marker: %s given twice", mark_names[kind],
			               keys[key]);
		seen |= 1u << key;
		int rc = 0;
		switch (key) {
		case 0:
			rc = read_int(v, vn, 1000000000, &out->plan);
			break;
		case 1:
			rc = read_int(v, vn, PLAN_TASK_NUMBER_MAX, &out->task);
			break;
		case 2:
			if (vn == 0 || vn >= sizeof out->agent) {
				rc = -1;
				break;
			}
			memcpy(out->agent, v, vn);
			out->agent[vn] = '\0';
			rc = plan_valid_login(out->agent) ? 0 : -1;
			break;
		case 3:
			rc = read_int(v, vn, PLAN_TASK_NUMBER_MAX, &out->attempt);
			break;
		case 4:
			rc = read_int(v, vn, 1000000000, &out->pr);
			break;
		default:
			if (vn == 0 || vn >= sizeof out->branch) {
				rc = -1;
				break;
			}
			memcpy(out->branch, v, vn);
			out->branch[vn] = '\0';
			rc = branch_chars(out->branch) ? 0 : -1;
			break;
		}
		if (rc)
			return err_set(err, "ga:%s marker: %s='%.*s' is not valid",
			               mark_names[kind], keys[key], (int)(vn > 40 ? 40 : vn), v);
	}
	if ((seen & 7u) != 7u)
		return err_set(err, "ga:%s marker: plan, task and agent are required",
		               mark_names[kind]);
	return 1;
}

int plan_marker_parse(const char *text, struct plan_marker *out, struct ga_err *err)
{
	for (const char *p = text ? strstr(text, MARKER_OPEN) : NULL; p;
	     p = strstr(p + 1, MARKER_OPEN)) {
		const char *k = p + strlen(MARKER_OPEN);
		for (int i = 0; i < PLAN_MARK_COUNT; i++) {
			size_t l = strlen(mark_names[i]);
			if (strncmp(k, mark_names[i], l) != 0 || !isspace((unsigned char)k[l]))
				continue;
			const char *end = strstr(k, "-->");
			if (!end)
				return err_set(err, "ga:%s marker has no closing '-->'",
				               mark_names[i]);
			if ((size_t)(end + 3 - p) > PLAN_MARKER_MAX)
				return err_set(err, "ga:%s marker is longer than %d bytes",
				               mark_names[i], PLAN_MARKER_MAX);
			return read_marker(k, end, (enum plan_mark)i, out, err) == 1 ? 1 : -1;
		}
	}
	return 0;
}

/* ---- the fold ----------------------------------------------------------------------- */

static struct plan_task_state *find_mut(struct plan_task_state *st, size_t n, int task)
{
	for (size_t i = 0; i < n; i++)
		if (st[i].task == task)
			return &st[i];
	return NULL;
}

const struct plan_task_state *plan_state_find(const struct plan_task_state *st, size_t n, int task)
{
	for (size_t i = 0; i < n; i++)
		if (st[i].task == task)
			return &st[i];
	return NULL;
}

static int by_comment_id(const void *a, const void *b)
{
	const struct plan_event *x = *(const struct plan_event *const *)a;
	const struct plan_event *y = *(const struct plan_event *const *)b;
	return (x->comment_id > y->comment_id) - (x->comment_id < y->comment_id);
}

static void holder_set(struct plan_task_state *s, enum plan_status st, const char *who, int64_t at)
{
	s->status = st;
	snprintf(s->assignee, sizeof s->assignee, "%s", who ? who : "");
	s->since_ms = at;
	s->from_markers = true;
}

/* Dependencies that name a task, all completed in st so far. */
static bool deps_done(const struct plan_task *t, const struct plan_task_state *st, size_t n,
                      int *first_open)
{
	for (size_t i = 0; i < t->n_deps; i++) {
		if (!t->deps[i].task)
			continue;
		const struct plan_task_state *d = plan_state_find(st, n, t->deps[i].task);
		if (!d || d->status != PLAN_COMPLETED) {
			if (first_open)
				*first_open = t->deps[i].task;
			return false;
		}
	}
	return true;
}

/* The claimable test on a state array (shared by the fold and the chooser). */
static bool claimable(const struct plan *p, const struct plan_task_state *st, size_t n, int task,
                      struct decision *why)
{
	const struct plan_task *t = plan_task_find(p, task);
	const struct plan_task_state *s = plan_state_find(st, n, task);
	struct decision dummy;
	if (!why)
		why = &dummy;
	int open = 0;
	if (!t || !s) {
		decision_set(why, VERDICT_BLOCK, "task_exists", "Task %d is not in the plan", task);
		return false;
	}
	if (s->status != PLAN_PENDING && s->status != PLAN_BLOCKED) {
		decision_set(why, VERDICT_BLOCK, "task_status", "Task %d is %s%s%s", task,
		             plan_status_name(s->status), s->assignee[0] ? " by " : "",
		             s->assignee);
		return false;
	}
	if (s->assignee[0]) {
		decision_set(why, VERDICT_BLOCK, "task_assigned", "Task %d is assigned to %s", task,
		             s->assignee);
		return false;
	}
	if (t->in_cycle) {
		decision_set(why, VERDICT_BLOCK, "task_cycle",
		             "Task %d is part of a dependency cycle", task);
		return false;
	}
	if (!deps_done(t, st, n, &open)) {
		decision_set(why, VERDICT_BLOCK, "task_dependencies",
		             "Task %d waits for Task %d to be completed", task, open);
		return false;
	}
	if (s->abandoned || s->failures >= PLAN_MAX_RETRIES) {
		decision_set(why, VERDICT_BLOCK, "task_retries",
		             "Task %d failed %d times; it is left to the owner", task, s->failures);
		return false;
	}
	decision_set(why, VERDICT_PASS, "task_claimable",
	             "Task %d: %s, unassigned, dependencies done", task,
	             plan_status_name(s->status));
	return true;
}

bool plan_task_claimable(const struct plan *p, const struct plan_task_state *st, size_t n, int task,
                         struct decision *why)
{
	return claimable(p, st, n, task, why);
}

size_t plan_state_fold(const struct plan *p, int plan_number, const struct plan_event *ev, size_t n,
                       struct plan_task_state *out, plan_note_fn note, void *ud)
{
	size_t nt = p->n_tasks;
	for (size_t i = 0; i < nt; i++) {
		const struct plan_task *t = &p->tasks[i];
		memset(&out[i], 0, sizeof out[i]);
		out[i].task = t->number;
		out[i].status = t->status;
		snprintf(out[i].assignee, sizeof out[i].assignee, "%s",
		         t->assignee ? t->assignee : "");
	}
	size_t take = n > PLAN_MAX_EVENTS ? PLAN_MAX_EVENTS : n;
	/* A task the markers speak of starts where the generator left it
	 * (pending, nobody): its body lines are the view agents render from
	 * these very markers, and starting from that view would make the
	 * claim it shows look like a second one. */
	for (size_t i = 0; i < take; i++) {
		const struct plan_marker *m = &ev[i].m;
		if (m->plan != plan_number || !ev[i].author ||
		    strcasecmp(ev[i].author, m->agent) != 0)
			continue;
		struct plan_task_state *s = find_mut(out, nt, m->task);
		if (s && !s->from_markers) {
			s->status = PLAN_PENDING;
			s->assignee[0] = '\0';
			s->from_markers = true;
		}
	}
	const struct plan_event **order = xcalloc(take ? take : 1, sizeof *order);
	for (size_t i = 0; i < take; i++)
		order[i] = &ev[i];
	qsort(order, take, sizeof *order, by_comment_id);
	struct decision d;
	size_t applied = 0;
	for (size_t i = 0; i < take; i++) {
		const struct plan_event *e = order[i];
		const struct plan_marker *m = &e->m;
		const char *rule = NULL;
		if (m->plan != plan_number) {
			continue; /* another plan's marker: not ours to judge */
		}
		if (!e->author || strcasecmp(e->author, m->agent) != 0) {
			decision_set(&d, VERDICT_BLOCK, "marker_author",
			             "comment %lld by %s carries a %s marker for %s: ignored",
			             (long long)e->comment_id, e->author ? e->author : "?",
			             plan_mark_name(m->kind), m->agent);
			if (note)
				note(ud, e, &d);
			continue;
		}
		struct plan_task_state *s = find_mut(out, nt, m->task);
		if (!s) {
			decision_set(
			        &d, VERDICT_BLOCK, "marker_task",
			        "comment %lld: %s marker for Task %d, which is not in the plan",
			        (long long)e->comment_id, plan_mark_name(m->kind), m->task);
			if (note)
				note(ud, e, &d);
			continue;
		}
		bool holder = s->assignee[0] && strcasecmp(s->assignee, m->agent) == 0 &&
		              (s->status == PLAN_CLAIMED || s->status == PLAN_IN_PROGRESS);
		switch (m->kind) {
		case PLAN_MARK_CLAIM:
			if (!claimable(p, out, nt, m->task, &d)) {
				rule = "claim_lost";
				break;
			}
			holder_set(s, PLAN_CLAIMED, m->agent, e->at_ms);
			s->attempt++;
			s->pr = 0;
			s->branch[0] = '\0';
			s->claim_comment_id = e->comment_id;
			break;
		case PLAN_MARK_START:
		case PLAN_MARK_PR:
		case PLAN_MARK_RELEASE:
		case PLAN_MARK_BLOCKED:
		case PLAN_MARK_FAILED:
			if (!holder) {
				decision_set(&d, VERDICT_BLOCK, "not_holder",
				             "%s does not hold Task %d (%s%s%s)", m->agent, m->task,
				             plan_status_name(s->status),
				             s->assignee[0] ? " by " : "", s->assignee);
				rule = "not_holder";
				break;
			}
			if (m->kind == PLAN_MARK_START || m->kind == PLAN_MARK_PR) {
				holder_set(s, PLAN_IN_PROGRESS, m->agent,
				           s->status == PLAN_IN_PROGRESS ? s->since_ms : e->at_ms);
				if (m->pr)
					s->pr = m->pr;
				if (m->branch[0])
					snprintf(s->branch, sizeof s->branch, "%s", m->branch);
			} else if (m->kind == PLAN_MARK_RELEASE) {
				holder_set(s, PLAN_PENDING, NULL, e->at_ms);
				s->claim_comment_id = 0;
			} else {
				holder_set(s, PLAN_BLOCKED, NULL, e->at_ms);
				s->failures++;
				s->claim_comment_id = 0;
			}
			break;
		case PLAN_MARK_RESET:
			if (s->status == PLAN_COMPLETED) {
				decision_set(&d, VERDICT_BLOCK, "task_completed",
				             "Task %d is completed; a reset does not reopen it",
				             m->task);
				rule = "task_completed";
				break;
			}
			holder_set(s, PLAN_PENDING, NULL, e->at_ms);
			s->claim_comment_id = 0;
			break;
		case PLAN_MARK_DONE:
			holder_set(s, PLAN_COMPLETED, NULL, e->at_ms);
			s->claim_comment_id = 0;
			break;
		case PLAN_MARK_ABANDON:
			s->abandoned = true;
			s->from_markers = true;
			break;
		case PLAN_MARK_REOPEN:
			holder_set(s, PLAN_PENDING, NULL, e->at_ms);
			s->failures = 0;
			s->abandoned = false;
			s->claim_comment_id = 0;
			break;
		default:
			rule = "marker_kind";
			decision_set(&d, VERDICT_BLOCK, "marker_kind", "unknown marker kind");
			break;
		}
		if (rule) {
			if (note)
				note(ud, e, &d);
			continue;
		}
		applied++;
	}
	if (n > take && note) {
		decision_set(&d, VERDICT_BLOCK, "marker_limit",
		             "%zu markers beyond the first %d were not read", n - take,
		             PLAN_MAX_EVENTS);
		note(ud, &ev[take], &d);
	}
	free(order);
	return applied;
}

char *plan_state_sync_body(const char *body, const struct plan_task_state *st, size_t n,
                           bool *changed, struct ga_err *err)
{
	struct plan p;
	if (plan_parse(NULL, body, &p, err) != 0)
		return NULL;
	struct plan_update u[PLAN_MAX_TASKS];
	size_t nu = 0;
	for (size_t i = 0; i < p.n_tasks; i++) {
		const struct plan_task *t = &p.tasks[i];
		const struct plan_task_state *s = plan_state_find(st, n, t->number);
		if (!s)
			continue;
		const char *cur = t->assignee ? t->assignee : "";
		bool status_differs = !t->has_status_line || t->status != s->status;
		bool assignee_differs = !t->has_assignee_line || strcasecmp(cur, s->assignee) != 0;
		if (!status_differs && !assignee_differs)
			continue;
		u[nu++] = (struct plan_update){.task = t->number,
		                               .set_status = true,
		                               .status = s->status,
		                               .set_assignee = true,
		                               .assignee = s->assignee[0] ? s->assignee : NULL};
	}
	plan_free(&p);
	*changed = nu > 0;
	return plan_body_update(body, u, nu, err);
}

static int count_claimable(const struct plan_candidate *c)
{
	int k = 0;
	for (size_t i = 0; i < c->plan->n_tasks; i++)
		if (claimable(c->plan, c->state, c->plan->n_tasks, c->plan->tasks[i].number, NULL))
			k++;
	return k;
}

void plan_choose(const struct plan_candidate *c, size_t n, struct plan_choice *out)
{
	memset(out, 0, sizeof *out);
	size_t order[PLAN_MAX_CANDIDATES];
	int counts[PLAN_MAX_CANDIDATES];
	size_t m = n > PLAN_MAX_CANDIDATES ? PLAN_MAX_CANDIDATES : n;
	for (size_t i = 0; i < m; i++) {
		order[i] = i;
		counts[i] = count_claimable(&c[i]);
	}
	/* Insertion sort: fewer claimable first, then the lower issue number. */
	for (size_t i = 1; i < m; i++)
		for (size_t j = i; j > 0; j--) {
			size_t a = order[j - 1], b = order[j];
			bool swap = counts[a] > counts[b] ||
			            (counts[a] == counts[b] && c[a].number > c[b].number);
			if (!swap)
				break;
			order[j - 1] = b;
			order[j] = a;
		}
	int skipped_retries = 0;
	for (size_t oi = 0; oi < m; oi++) {
		const struct plan_candidate *pc = &c[order[oi]];
		size_t nt = pc->plan->n_tasks;
		/* Lowest task number first, whatever the body order. */
		int best = 0;
		for (size_t t = 0; t < nt; t++) {
			const struct plan_task_state *s = &pc->state[t];
			if (!s->abandoned && s->failures >= PLAN_MAX_RETRIES &&
			    (s->status == PLAN_PENDING || s->status == PLAN_BLOCKED) &&
			    !s->assignee[0]) {
				skipped_retries++;
				if (out->n_notices < PLAN_MAX_NOTICES)
					out->notices[out->n_notices++] = (struct plan_notice){
					        order[oi], s->task, s->failures};
			}
			if (claimable(pc->plan, pc->state, nt, s->task, NULL) &&
			    (!best || s->task < best))
				best = s->task;
		}
		if (best && !out->found) {
			const struct plan_task_state *s = plan_state_find(pc->state, nt, best);
			out->found = true;
			out->candidate = order[oi];
			out->task = best;
			out->next_attempt = s->attempt + 1;
			decision_set(
			        &out->d, VERDICT_PASS, "task_choice",
			        "Task %d of plan #%d: the lowest claimable task of the plan with "
			        "the fewest claimable tasks (%d); attempt %d",
			        best, pc->number, counts[order[oi]], out->next_attempt);
		}
	}
	if (!out->found)
		decision_set(&out->d, VERDICT_BLOCK, "no_claimable_task",
		             "no claimable task in %zu open plan(s)%s", n,
		             skipped_retries
		                     ? "; some tasks failed too often and wait for the owner"
		                     : "");
}
