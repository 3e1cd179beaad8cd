/* Recovery that is not the creator's (spec §3.13.1, §3.13.2): the failed
 * task's one notice, lapsed claims reset, orphaned branches given their
 * PR. See wsp_int.h (wsp_recover_step). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/github/gh_work.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/github/port.h"
#include "modules/journal/journal.h"
#include "modules/taskexec/taskexec.h"
#include "modules/workspace/wsp_int.h"

#define REC_MAX_PULLS    100 /* PRs (any state) read per workspace */
#define REC_MAX_BRANCHES 100 /* branches read per workspace */

/* One task of one plan, by value: the plans of w are replaced by the next
 * poll, so nothing here points into them. */
struct rec_task {
	char owner[GH_OWNER_MAX + 1], repo[GH_REPO_MAX + 1];
	int plan, task, attempt, failures;
	char title[PLAN_TITLE_MAX + 1];
	char holder[PLAN_LOGIN_MAX];
};

static void rec_task_set(struct rec_task *t, const struct wsp_plan *p,
                         const struct plan_task_state *st)
{
	memset(t, 0, sizeof *t);
	snprintf(t->owner, sizeof t->owner, "%s", p->owner);
	snprintf(t->repo, sizeof t->repo, "%s", p->repo);
	t->plan = p->number;
	t->task = st->task;
	t->attempt = st->attempt;
	t->failures = st->failures;
	const struct plan_task *pt = plan_task_find(&p->plan, st->task);
	snprintf(t->title, sizeof t->title, "%s", pt && pt->title ? pt->title : "?");
	snprintf(t->holder, sizeof t->holder, "%s", st->assignee);
}

/* A decision about task t. */
#define rec_note(w, t, stage, v, rule, ...)                                                        \
	wsp_notef((w), (t)->owner, (t)->repo, (t)->plan, (t)->task, (stage), (v), (rule),          \
	          __VA_ARGS__)

/* --- the notice of a task that failed too often --------------------------------------------- */

/* Once across agents: under the coordination lock "abandon:…", and only
 * when the comments read after the lock carry no abandon marker for the
 * task (another agent's notice, made while our view was older). The lock
 * is left to lapse: by then the marker is on GitHub. */
struct notice_op {
	struct wsp_anchor *a;
	struct rec_task t;
};

static void notice_sent(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct notice_op *op = ud;
	struct wsp *w = wsp_drop(op->a);
	if (w && ok) {
		rec_note(w, &op->t, STAGE_OUTBOUND, VERDICT_SENT, "task_abandoned",
		         "task %d failed %d times: left to the owner, who was told once",
		         op->t.task, op->t.failures);
		wsp_tell_owner(w, "task %d of %s/%s#%d failed %d times: it waits for you",
		               op->t.task, op->t.owner, op->t.repo, op->t.plan, op->t.failures);
	} else if (w) {
		rec_note(w, &op->t, STAGE_OUTBOUND, VERDICT_FAIL, "task_abandoned",
		         "the notice for task %d was not posted: %s", op->t.task, why ? why : "?");
	}
	free(op);
}

static void on_notice_comments(void *ud, const struct gh_result *res)
{
	struct notice_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res->kind != GH_OK) {
		notice_sent(op, false, NULL, w ? res->msg : "stopping");
		return;
	}
	struct wsp_events e;
	wsp_events_read(&e, res->json);
	bool given = false;
	for (size_t i = 0; i < e.n && !given; i++)
		given = e.ev[i].m.kind == PLAN_MARK_ABANDON && e.ev[i].m.plan == op->t.plan &&
		        e.ev[i].m.task == op->t.task;
	wsp_events_free(&e);
	if (given) {
		rec_note(w, &op->t, STAGE_GATE, VERDICT_DROP, "task_abandoned",
		         "task %d: another agent gave the notice already", op->t.task);
		wsp_drop(op->a);
		free(op);
		return;
	}
	static const char notice_text[] =
	        "Task {{number}} ({{title}}) has failed {{failures}} times across the agents and "
	        "will not be retried automatically. It waits for its owner: a `reopen` from them "
	        "puts it back.";
	char num[16], fails[16];
	snprintf(num, sizeof num, "%d", op->t.task);
	snprintf(fails, sizeof fails, "%d", op->t.failures);
	const char *names[] = {"number", "title", "failures"};
	const char *values[] = {num, op->t.title, fails};
	char *text = voice_interpolate(notice_text, names, values, 3);
	struct plan_marker m = {.kind = PLAN_MARK_ABANDON, .plan = op->t.plan, .task = op->t.task};
	snprintf(m.agent, sizeof m.agent, "%s", w->login);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "abandon", op->t.owner, op->t.repo, op->t.plan, op->t.task, 0);
	wsp_send_comment(w, op->t.owner, op->t.repo, op->t.plan, VOICE_GH_TASK_FAILED, text, NULL,
	                 NULL, &m, key, notice_sent, op);
	free(text);
}

static void on_notice_lock(void *ud, enum coord_result res, const char *holder, const char *why)
{
	struct notice_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res == COORD_HELD) {
		if (w)
			rec_note(w, &op->t, STAGE_GATE, VERDICT_DROP, "task_abandoned",
			         "task %d: %s gives the notice", op->t.task, holder ? holder : "?");
		wsp_drop(op->a);
		free(op);
		return;
	}
	(void)why; /* unavailable: the re-read below still keeps it to one */
	struct ga_err err = {{0}};
	if (gh_comments_list(w->c.gh, op->t.owner, op->t.repo, op->t.plan, WSP_MAX_COMMENTS,
	                     on_notice_comments, op, &err) != 0)
		return;
	notice_sent(op, false, NULL, err.msg);
}

static void give_notices(struct wsp *w)
{
	struct coord *c = wsp_coord(w);
	for (size_t i = 0; i < w->nplans; i++) {
		const struct wsp_plan *p = w->plans[i];
		for (size_t k = 0; k < p->plan.n_tasks; k++) {
			const struct plan_task_state *st = &p->st[k];
			if (st->failures < PLAN_MAX_RETRIES || st->abandoned ||
			    st->status == PLAN_COMPLETED || st->assignee[0])
				continue;
			char key[WSP_KEY_MAX + 1];
			wsp_key(key, sizeof key, "abandon", p->owner, p->repo, p->number, st->task,
			        0);
			if (journal_state_of(w->c.journal, key) != JOURNAL_NONE)
				continue; /* ours is made or on its way */
			struct notice_op *op = xcalloc(1, sizeof *op);
			op->a = wsp_hold(w);
			rec_task_set(&op->t, p, st);
			char lock[COORD_MAX_KEY];
			snprintf(lock, sizeof lock, "abandon:%s/%s#%d/task-%d", p->owner, p->repo,
			         p->number, st->task);
			if (!c)
				on_notice_lock(op, COORD_WON, NULL, NULL);
			else if (coord_claim(c, lock, w->c.claim_ttl_ms * 5, on_notice_lock, op) !=
			         0)
				on_notice_lock(op, COORD_UNAVAILABLE, NULL, "not asked");
		}
	}
}

/* --- the step: per workspace, lapsed claims and orphaned branches ---------------------------- */

struct rec {
	struct wsp_anchor *a;
	wsp_step_fn next;
	void *ud;
	struct wsp_ref ws[WSP_MAX_WATCHED];
	size_t nws, wi;
	cJSON *pulls, *branches;
	bool acted;
	/* the action of this cycle */
	struct rec_task t;
	char lock[COORD_MAX_KEY];
	char branch[PLAN_BRANCH_MAX + 1];
	char base[GH_REF_MAX + 1];
	int attempt; /* the recovery's claim */
	int64_t pr;
	char pr_url[GH_URL_MAX];
	char reviewer[PLAN_LOGIN_MAX];
};

static void rec_ws(struct rec *r);

static void rec_end(struct rec *r)
{
	wsp_drop(r->a);
	cJSON_Delete(r->pulls);
	cJSON_Delete(r->branches);
	wsp_step_fn next = r->next;
	void *ud = r->ud;
	bool acted = r->acted;
	free(r);
	next(ud, acted);
}

static void rec_ws_next(struct rec *r)
{
	cJSON_Delete(r->pulls);
	cJSON_Delete(r->branches);
	r->pulls = r->branches = NULL;
	r->wi++;
	rec_ws(r);
}

/* The action is over (either way): the lock back, the step ends. */
static void rec_done(struct rec *r)
{
	struct wsp *w = r->a->w;
	struct coord *c = w ? wsp_coord(w) : NULL;
	if (c && r->lock[0])
		coord_release(c, r->lock);
	r->acted = true;
	rec_end(r);
}

/* -- a lapsed claim reset -- */

static void on_reset_sent(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (w && ok) {
		w->n.resets++;
		rec_note(w, &r->t, STAGE_OUTBOUND, VERDICT_SENT, "claim_reset",
		         "task %d: @%s's lapsed claim reset to pending", r->t.task, r->t.holder);
	} else if (w) {
		rec_note(w, &r->t, STAGE_OUTBOUND, VERDICT_FAIL, "claim_reset",
		         "task %d was not reset: %s", r->t.task, why ? why : "?");
	}
	rec_done(r);
}

static void on_reset_lock(void *ud, enum coord_result res, const char *holder, const char *why)
{
	(void)why;
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (!w || res != COORD_WON) {
		/* the holder (or someone resetting it) has the lock: alive */
		if (w)
			rec_note(w, &r->t, STAGE_GATE, VERDICT_DROP, "claim_live",
			         "task %d: its lock is held (%s): the claim is alive", r->t.task,
			         holder ? holder : coord_result_name(res));
		r->lock[0] = '\0';
		rec_end(r);
		return;
	}
	static const char reset_text[] =
	        "Task {{number}} ({{title}}) was claimed by @{{holder}} without progress for "
	        "longer than the claim lasts, and its lock has lapsed: it is back to pending for "
	        "any agent to take.";
	char num[16];
	snprintf(num, sizeof num, "%d", r->t.task);
	const char *names[] = {"number", "title", "holder"};
	const char *values[] = {num, r->t.title, r->t.holder};
	char *text = voice_interpolate(reset_text, names, values, 3);
	struct plan_marker m = {.kind = PLAN_MARK_RESET,
	                        .plan = r->t.plan,
	                        .task = r->t.task,
	                        .attempt = r->t.attempt};
	snprintf(m.agent, sizeof m.agent, "%s", w->login);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "reset", r->t.owner, r->t.repo, r->t.plan, r->t.task,
	        r->t.attempt);
	wsp_send_comment(w, r->t.owner, r->t.repo, r->t.plan, VOICE_GH_TASK_FAILED, text, NULL,
	                 NULL, &m, key, on_reset_sent, r);
	free(text);
}

/* An open PR carrying the task's work (its marker may not have been
 * posted): the claim is not stuck, its review decides. */
static int open_pr_of(const struct rec *r, const struct rec_task *t)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, r->pulls)
	{
		if (strcmp(json_string_or(it, "state", ""), "open") != 0)
			continue;
		const cJSON *head = cJSON_GetObjectItemCaseSensitive(it, "head");
		if (wsp_pr_of_task(json_string_or(head, "ref", ""), json_string_or(it, "body", ""),
		                   t->plan, t->task))
			return (int)json_int_or(it, "number", 0);
	}
	return 0;
}

/* -- an orphaned branch recovered -- */

/* A recovery step failed: its decision, and the action is over. */
#define rec_fail(r, ...)                                                                           \
	do {                                                                                       \
		if ((r)->a->w)                                                                     \
			rec_note((r)->a->w, &(r)->t, STAGE_OUTBOUND, VERDICT_FAIL,                 \
			         "orphan_recovered", __VA_ARGS__);                                 \
		rec_done(r);                                                                       \
	} while (0)

static void on_orphan_reviewer(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (w && !ok)
		rec_note(w, &r->t, STAGE_OUTBOUND, VERDICT_FAIL, "reviewer_requested",
		         "the review of recovered PR #%" PRId64 " was not requested from %s: %s",
		         r->pr, r->reviewer, why ? why : "?");
	rec_done(r);
}

static void on_orphan_marked(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (!w || !ok) {
		rec_fail(r, "recovered PR #%" PRId64 " is open but task %d is not marked: %s",
		         r->pr, r->t.task, why ? why : "stopping");
		return;
	}
	w->n.prs++;
	rec_note(w, &r->t, STAGE_OUTBOUND, VERDICT_SENT, "orphan_recovered",
	         "task %d: the orphaned branch %s got PR #%" PRId64 " (%s); the task is in "
	         "progress, ours",
	         r->t.task, r->branch, r->pr, r->pr_url);
	wsp_tell_owner(w, "task %d of %s/%s#%d: recovered the orphaned branch %s as %s", r->t.task,
	               r->t.owner, r->t.repo, r->t.plan, r->branch, r->pr_url);
	if (wsp_request_review(w, r->t.owner, r->t.repo, r->t.plan, r->t.task, r->pr, r->reviewer,
	                       sizeof r->reviewer, on_orphan_reviewer, r) != 0)
		rec_done(r);
}

static void on_orphan_released(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (w && !ok)
		rec_note(w, &r->t, STAGE_OUTBOUND, VERDICT_FAIL, "orphan_recovered",
		         "task %d stays ours without a PR (the failed marker was not posted: %s)",
		         r->t.task, why ? why : "?");
	rec_done(r);
}

/* The PR was refused (a branch with nothing to merge, …): the task is
 * given back with a failed marker — one failure more, so a branch that can
 * never become a PR reaches the owner after PLAN_MAX_RETRIES tries. */
static void orphan_give_back(struct rec *r, const char *why)
{
	struct wsp *w = r->a->w;
	rec_note(w, &r->t, STAGE_OUTBOUND, VERDICT_FAIL, "orphan_recovered",
	         "no PR was opened for the orphaned branch %s: %s", r->branch, why);
	char text[PLAN_BRANCH_MAX + 420];
	snprintf(text, sizeof text,
	         "No pull request could be opened for the orphaned branch `%s` (%.300s). Task %d "
	         "is free again.",
	         r->branch, why, r->t.task);
	struct plan_marker m = {.kind = PLAN_MARK_FAILED,
	                        .plan = r->t.plan,
	                        .task = r->t.task,
	                        .attempt = r->attempt};
	snprintf(m.agent, sizeof m.agent, "%s", w->login);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "recover-failed", r->t.owner, r->t.repo, r->t.plan, r->t.task,
	        r->attempt);
	wsp_send_comment(w, r->t.owner, r->t.repo, r->t.plan, VOICE_GH_TASK_FAILED, text, NULL,
	                 NULL, &m, key, on_orphan_released, r);
}

static void on_orphan_pr(void *ud, bool ok, const char *artifact, const char *why)
{
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	struct gh_ref ref;
	struct ga_err err = {{0}};
	if (!w) {
		rec_done(r);
		return;
	}
	if (!ok || !artifact || gh_parse_url(artifact, &ref, &err) != 0 || ref.number <= 0) {
		orphan_give_back(r, ok ? err.msg : (why ? why : "?"));
		return;
	}
	r->pr = ref.number;
	snprintf(r->pr_url, sizeof r->pr_url, "%s", artifact);
	char details[GH_URL_MAX + 200];
	snprintf(details, sizeof details,
	         "Recovered from the orphaned branch `%s` (pushed, never given a pull request): "
	         "%s",
	         r->branch, r->pr_url);
	struct plan_marker m = {.kind = PLAN_MARK_PR,
	                        .plan = r->t.plan,
	                        .task = r->t.task,
	                        .attempt = r->attempt,
	                        .pr = (int)r->pr};
	snprintf(m.agent, sizeof m.agent, "%s", w->login);
	snprintf(m.branch, sizeof m.branch, "%s", r->branch);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "recover-pr", r->t.owner, r->t.repo, r->t.plan, r->t.task,
	        r->attempt);
	wsp_send_comment(w, r->t.owner, r->t.repo, r->t.plan, VOICE_GH_TASK_COMPLETE, NULL,
	                 r->t.title, details, &m, key, on_orphan_marked, r);
}

static void open_orphan_pr(struct rec *r)
{
	struct wsp *w = r->a->w;
	char key[GH_PORT_KEY_MAX + 1];
	if (gh_port_pr_key(r->t.owner, r->t.repo, r->branch, key, sizeof key) != 0) {
		rec_fail(r, "no PR key for the branch %s", r->branch);
		return;
	}
	char *body = wsp_recovered_pr_body(r->t.plan, r->t.task, r->t.title, r->branch, w->login,
	                                   r->attempt);
	if (!body) {
		rec_fail(r, "the PR body of %s does not format", r->branch);
		return;
	}
	char *title = taskexec_pr_title(r->t.task, r->t.title);
	char target[WSP_REPO_FULL_MAX + 32];
	snprintf(target, sizeof target, "github:%s:%s:new-pr", r->t.owner, r->t.repo);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "title", title);
	cJSON_AddStringToObject(extra, "head", r->branch);
	cJSON_AddStringToObject(extra, "base", r->base);
	char conv[WSP_REPO_FULL_MAX + 40];
	snprintf(conv, sizeof conv, "plan:%s/%s#%d", r->t.owner, r->t.repo, r->t.plan);
	struct wsp_send s = {
	        .target = target, .text = body, .key = key, .extra = extra, .conversation = conv};
	wsp_send(w, &s, on_orphan_pr, r);
	cJSON_Delete(extra);
	free(title);
	free(body);
}

static void on_orphan_repo(void *ud, const struct gh_result *res)
{
	struct rec *r = ud;
	if (!r->a->w || res->kind != GH_OK) {
		rec_fail(r, "the default branch of %s/%s was not read: %s", r->t.owner, r->t.repo,
		         res->msg);
		return;
	}
	snprintf(r->base, sizeof r->base, "%s", json_string_or(res->json, "default_branch", ""));
	if (!r->base[0]) {
		rec_fail(r, "%s/%s has no default branch", r->t.owner, r->t.repo);
		return;
	}
	open_orphan_pr(r);
}

/* After our claim: is it the one the markers accept? */
static void on_orphan_claim_read(void *ud, const struct gh_result *res)
{
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (!w || res->kind != GH_OK) {
		rec_fail(r, "the plan was not read after the recovery's claim: %s", res->msg);
		return;
	}
	struct wsp_plan *p = NULL;
	for (size_t i = 0; i < w->nplans && !p; i++)
		if (strcasecmp(w->plans[i]->owner, r->t.owner) == 0 &&
		    strcasecmp(w->plans[i]->repo, r->t.repo) == 0 &&
		    w->plans[i]->number == r->t.plan)
			p = w->plans[i];
	struct wsp_events e;
	wsp_events_read(&e, res->json);
	bool held = false;
	if (p) {
		struct plan_task_state *st = xcalloc(p->plan.n_tasks + 1, sizeof *st);
		plan_state_fold(&p->plan, p->number, e.ev, e.n, st, NULL, NULL);
		const struct plan_task_state *s = plan_state_find(st, p->plan.n_tasks, r->t.task);
		held = s && strcasecmp(s->assignee, w->login) == 0 && s->attempt == r->attempt &&
		       s->status == PLAN_CLAIMED;
		free(st);
	}
	wsp_events_free(&e);
	if (!held) {
		rec_note(w, &r->t, STAGE_GATE, VERDICT_DROP, "orphan_recovered",
		         "task %d: another agent's claim came first: its branch %s is left to it",
		         r->t.task, r->branch);
		rec_done(r);
		return;
	}
	struct ga_err err = {{0}};
	if (gh_repo_get(w->c.gh, r->t.owner, r->t.repo, on_orphan_repo, r, &err) == 0)
		rec_fail(r, "the repository was not asked for: %s", err.msg);
}

static void on_orphan_claimed(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (!w || !ok) {
		rec_fail(r, "the recovery's claim of task %d was not posted: %s", r->t.task,
		         why ? why : "stopping");
		return;
	}
	struct ga_err err = {{0}};
	if (gh_comments_list(w->c.gh, r->t.owner, r->t.repo, r->t.plan, WSP_MAX_COMMENTS,
	                     on_orphan_claim_read, r, &err) == 0)
		rec_fail(r, "the plan's comments were not asked for: %s", err.msg);
}

static void on_orphan_lock(void *ud, enum coord_result res, const char *holder, const char *why)
{
	(void)why;
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (!w || res == COORD_HELD) {
		if (w)
			rec_note(w, &r->t, STAGE_GATE, VERDICT_DROP, "orphan_recovered",
			         "task %d: %s holds its lock: the branch %s is left to it",
			         r->t.task, holder ? holder : "?", r->branch);
		r->lock[0] = '\0';
		rec_end(r);
		return;
	}
	/* unavailable: go on, the claim markers alone decide (below) */
	char text[PLAN_TITLE_MAX + PLAN_BRANCH_MAX + 200];
	snprintf(text, sizeof text,
	         "Taking Task %d (%s) to recover its orphaned branch `%s`: it was pushed but no "
	         "pull request was opened for it.",
	         r->t.task, r->t.title, r->branch);
	struct plan_marker m = {.kind = PLAN_MARK_CLAIM,
	                        .plan = r->t.plan,
	                        .task = r->t.task,
	                        .attempt = r->attempt};
	snprintf(m.agent, sizeof m.agent, "%s", w->login);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "recover", r->t.owner, r->t.repo, r->t.plan, r->t.task,
	        r->attempt);
	wsp_send_comment(w, r->t.owner, r->t.repo, r->t.plan, VOICE_GH_TASK_CLAIM, text, NULL, NULL,
	                 &m, key, on_orphan_claimed, r);
}

/* A task branch of t on the remote that never had a PR (of any state),
 * into r->branch. */
static bool find_orphan(struct rec *r, const struct rec_task *t)
{
	const cJSON *b;
	cJSON_ArrayForEach(b, r->branches)
	{
		const char *name = json_string_or(b, "name", "");
		if (!wsp_task_branch(name, t->task, t->title))
			continue;
		bool has_pr = false;
		const cJSON *it;
		cJSON_ArrayForEach(it, r->pulls)
		{
			const cJSON *head = cJSON_GetObjectItemCaseSensitive(it, "head");
			if (strcmp(json_string_or(head, "ref", ""), name) == 0)
				has_pr = true;
		}
		if (has_pr)
			continue;
		snprintf(r->branch, sizeof r->branch, "%s", name);
		return true;
	}
	return false;
}

/* Could a pushed branch of this task be waiting without a PR: it is
 * claimable and was worked on before (a claim was accepted, or it is
 * blocked: a run ended there, or an agent that writes no markers left it
 * so)? A task nobody ever took has no branch: no request is spent on it. */
static bool may_have_orphan(const struct wsp_plan *p, const struct plan_task_state *st)
{
	struct decision d;
	return (st->attempt > 0 || st->status == PLAN_BLOCKED) &&
	       plan_task_claimable(&p->plan, p->st, p->plan.n_tasks, st->task, &d);
}

/* A recovery of ours cut after its claim (a restart): the claim is ours
 * by the markers, no PR marker yet: the PR (found again by its key) and
 * the marker are made now. */
static bool recovery_cut(const struct wsp *w, const struct wsp_plan *p,
                         const struct plan_task_state *st)
{
	if (st->status != PLAN_CLAIMED || st->pr > 0 || strcasecmp(st->assignee, w->login) != 0)
		return false;
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "recover", p->owner, p->repo, p->number, st->task, st->attempt);
	return journal_state_of(w->c.journal, key) == JOURNAL_DONE;
}

static bool resume_recovery(struct rec *r, const struct plan_task_state *st)
{
	struct wsp *w = r->a->w;
	const struct wsp_plan *p = NULL;
	for (size_t i = 0; i < w->nplans && !p; i++)
		if (strcasecmp(w->plans[i]->owner, r->t.owner) == 0 &&
		    strcasecmp(w->plans[i]->repo, r->t.repo) == 0 &&
		    w->plans[i]->number == r->t.plan)
			p = w->plans[i];
	if (!p || !r->branches || !recovery_cut(w, p, st) || !find_orphan(r, &r->t))
		return false;
	r->attempt = st->attempt;
	rec_note(w, &r->t, STAGE_GATE, VERDICT_PASS, "orphan_resumed",
	         "task %d: our recovery of %s was cut after its claim: the PR is opened now",
	         r->t.task, r->branch);
	struct ga_err err = {{0}};
	if (gh_repo_get(w->c.gh, r->t.owner, r->t.repo, on_orphan_repo, r, &err) == 0)
		rec_fail(r, "the repository was not asked for: %s", err.msg);
	return true;
}

/* Decides this workspace's action from the plans, its PRs and branches:
 * at most one per cycle. */
static void rec_decide(struct rec *r)
{
	struct wsp *w = r->a->w;
	struct coord *c = wsp_coord(w);
	bool shared = c && strcmp(coord_name(c), "local") != 0;
	int64_t now = time_now_ms();
	const struct wsp_ref *ws = &r->ws[r->wi];
	for (size_t i = 0; i < w->nplans; i++) {
		const struct wsp_plan *p = w->plans[i];
		if (strcasecmp(p->owner, ws->owner) != 0 || strcasecmp(p->repo, ws->repo) != 0)
			continue;
		for (size_t k = 0; k < p->plan.n_tasks; k++) {
			const struct plan_task_state *st = &p->st[k];
			struct decision d;
			rec_task_set(&r->t, p, st);
			if (resume_recovery(r, st))
				return;
			/* §3.13.1: another agent's claim, no PR, its latest marker
			 * older than the orphan time, its lock free */
			if (shared && wsp_claim_lapsed(st, w->login, now, w->c.orphan_ms, &d)) {
				int pr = open_pr_of(r, &r->t);
				if (pr > 0) {
					rec_note(w, &r->t, STAGE_GATE, VERDICT_DROP, "claim_live",
					         "task %d: open PR #%d carries its work (no marker "
					         "names it yet): not reset",
					         st->task, pr);
					continue;
				}
				wsp_note(w, p->owner, p->repo, p->number, st->task, STAGE_GATE, &d);
				wsp_task_lock(r->lock, sizeof r->lock, p->owner, p->repo, p->number,
				              st->task);
				if (coord_claim(c, r->lock, w->c.claim_ttl_ms, on_reset_lock, r) ==
				    0)
					return;
				r->lock[0] = '\0';
				continue;
			}
			/* §3.13.2: a claimable task with a pushed branch no PR
			 * was ever opened for */
			if (!r->branches || !may_have_orphan(p, st) || !find_orphan(r, &r->t))
				continue;
			r->attempt = st->attempt + 1;
			char key[WSP_KEY_MAX + 1];
			wsp_key(key, sizeof key, "recover", p->owner, p->repo, p->number, st->task,
			        r->attempt);
			rec_note(
			        w, &r->t, STAGE_GATE, VERDICT_PASS, "orphan_found",
			        "task %d: branch %s was pushed and never given a PR: recovering it "
			        "(attempt %d)",
			        st->task, r->branch, r->attempt);
			wsp_task_lock(r->lock, sizeof r->lock, p->owner, p->repo, p->number,
			              st->task);
			if (!c)
				on_orphan_lock(r, COORD_UNAVAILABLE, NULL, "no backend");
			else if (coord_claim(c, r->lock, w->c.claim_ttl_ms, on_orphan_lock, r) != 0)
				on_orphan_lock(r, COORD_UNAVAILABLE, NULL, "not asked");
			return;
		}
	}
	rec_ws_next(r);
}

static void on_branches(void *ud, const struct gh_result *res)
{
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (!w) {
		rec_end(r);
		return;
	}
	if (res->kind == GH_OK)
		r->branches = cJSON_Duplicate(res->json, 1);
	else
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "branches not read: no orphan recovery", "repo",
		       r->ws[r->wi].repo, "error", res->msg);
	rec_decide(r);
}

static void on_pulls(void *ud, const struct gh_result *res)
{
	struct rec *r = ud;
	struct wsp *w = r->a->w;
	if (!w) {
		rec_end(r);
		return;
	}
	if (res->kind != GH_OK) {
		/* without the PRs neither rule can tell work from a stall */
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "pull requests not read: no recovery", "repo",
		       r->ws[r->wi].repo, "error", res->msg);
		rec_ws_next(r);
		return;
	}
	r->pulls = cJSON_Duplicate(res->json, 1);
	struct ga_err err = {{0}};
	if (gh_branches_list(w->c.gh, r->ws[r->wi].owner, r->ws[r->wi].repo, REC_MAX_BRANCHES,
	                     on_branches, r, &err) != 0)
		return;
	rec_decide(r);
}

/* Is there anything for the rules to look at: a claim old enough to
 * lapse (shared backend), or a claimable task (an orphan may exist)? */
static bool ws_needs_look(struct wsp *w, const struct wsp_ref *ws)
{
	struct coord *c = wsp_coord(w);
	bool shared = c && strcmp(coord_name(c), "local") != 0;
	int64_t now = time_now_ms();
	for (size_t i = 0; i < w->nplans; i++) {
		const struct wsp_plan *p = w->plans[i];
		if (strcasecmp(p->owner, ws->owner) != 0 || strcasecmp(p->repo, ws->repo) != 0)
			continue;
		for (size_t k = 0; k < p->plan.n_tasks; k++) {
			struct decision d;
			if (shared &&
			    wsp_claim_lapsed(&p->st[k], w->login, now, w->c.orphan_ms, &d))
				return true;
			if (may_have_orphan(p, &p->st[k]) || recovery_cut(w, p, &p->st[k]))
				return true;
		}
	}
	return false;
}

static void rec_ws(struct rec *r)
{
	struct wsp *w = r->a->w;
	if (!w || w->quiescing || r->acted) {
		rec_end(r);
		return;
	}
	for (; r->wi < r->nws; r->wi++) {
		if (!ws_needs_look(w, &r->ws[r->wi]))
			continue;
		struct gh_pull_query q = {.state = "all",
		                          .sort = "created",
		                          .direction = "desc",
		                          .max_items = REC_MAX_PULLS};
		struct ga_err err = {{0}};
		if (gh_pulls_list(w->c.gh, r->ws[r->wi].owner, r->ws[r->wi].repo, &q, on_pulls, r,
		                  &err) != 0)
			return;
		wsp_error(w, "the pull requests of %s/%s were not asked for: %s",
		          r->ws[r->wi].owner, r->ws[r->wi].repo, err.msg);
	}
	rec_end(r);
}

void wsp_recover_step(struct wsp *w, wsp_step_fn next, void *ud)
{
	if (w->c.paused && w->c.paused(w->c.ud)) {
		next(ud, false); /* the kill switch: no side effect at all */
		return;
	}
	give_notices(w);
	struct rec *r = xcalloc(1, sizeof *r);
	r->a = wsp_hold(w);
	r->next = next;
	r->ud = ud;
	for (size_t i = 0; i < w->watch.n && r->nws < WSP_MAX_WATCHED; i++) {
		snprintf(r->ws[r->nws].owner, sizeof r->ws[r->nws].owner, "%s",
		         w->watch.w[i].owner);
		snprintf(r->ws[r->nws].repo, sizeof r->ws[r->nws].repo, "%s", w->watch.w[i].repo);
		r->nws++;
	}
	rec_ws(r);
}
