/* A claim and the run of one task (workspace.h "A claim", §3.7 and §3.9). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/github/gh_work.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/github/port.h"
#include "modules/taskexec/taskexec.h"
#include "modules/workspace/wsp_int.h"

struct coord *wsp_coord(struct wsp *w)
{
	return w->c.coord ? w->c.coord(w->c.ud) : NULL;
}

void wsp_task_lock(char *out, size_t cap, const char *owner, const char *repo, int plan, int task)
{
	snprintf(out, cap, "task:%s/%s#%d/task-%d", owner, repo, plan, task);
}

void wsp_workspace_agents(struct wsp *w, const char *owner, const char *repo,
                          struct wsp_agents *out)
{
	memset(out, 0, sizeof *out);
	wsp_agents_add(out, w->login);
	for (size_t i = 0; i < w->nplans; i++) {
		const struct wsp_plan *p = w->plans[i];
		if (strcasecmp(p->owner, owner) != 0 || strcasecmp(p->repo, repo) != 0)
			continue;
		for (size_t k = 0; k < p->agents.n; k++)
			wsp_agents_add(out, p->agents.login[k]);
	}
	if (!w->c.room_agents)
		return;
	const char *room[WSP_ROOM_AGENTS];
	size_t n = w->c.room_agents(w->c.ud, room, WSP_ROOM_AGENTS);
	wsp_agents_add_sorted(out, room, n < WSP_ROOM_AGENTS ? n : WSP_ROOM_AGENTS);
}

/* A one-shot timer that frees itself. */
struct after {
	uv_timer_t t;
	void (*fn)(void *ud);
	void *ud;
};

static void after_closed(uv_handle_t *h)
{
	free(h->data);
}

static void after_fire(uv_timer_t *t)
{
	struct after *a = t->data;
	a->fn(a->ud);
	uv_close((uv_handle_t *)&a->t, after_closed);
}

static void after(struct wsp *w, uint64_t ms, void (*fn)(void *ud), void *ud)
{
	struct after *a = xcalloc(1, sizeof *a);
	a->fn = fn;
	a->ud = ud;
	uv_timer_init(w->c.loop, &a->t);
	a->t.data = a;
	uv_timer_start(&a->t, after_fire, ms, 0);
}

/* The plan as the claim and the run need it: the text, parsed
 * again when read (a struct plan is not copied). */
struct plan_copy {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
	int number;
	char *title, *body, *url;
	struct plan plan;
};

static void copy_plan(struct plan_copy *c, const struct wsp_plan *p)
{
	memset(c, 0, sizeof *c);
	snprintf(c->owner, sizeof c->owner, "%s", p->owner);
	snprintf(c->repo, sizeof c->repo, "%s", p->repo);
	c->number = p->number;
	c->title = xstrdup(p->title);
	c->body = xstrdup(p->body);
	c->url = xstrdup(p->url ? p->url : "");
	struct ga_err err = {{0}};
	if (plan_parse(c->title, c->body, &c->plan, &err) != 0)
		memset(&c->plan, 0, sizeof c->plan); /* it read a moment ago */
}

static void plan_copy_free(struct plan_copy *c)
{
	free(c->title);
	free(c->body);
	free(c->url);
	plan_free(&c->plan);
}

/* The state of task after folding comments into c's plan. */
static bool fold_task(const struct plan_copy *c, const struct wsp_events *e, int task,
                      struct plan_task_state *out)
{
	size_t n = c->plan.n_tasks;
	if (n == 0)
		return false;
	struct plan_task_state *st = xcalloc(n, sizeof *st);
	plan_state_fold(&c->plan, c->number, e->ev, e->n, st, NULL, NULL);
	const struct plan_task_state *t = plan_state_find(st, n, task);
	if (t)
		*out = *t;
	free(st);
	return t != NULL;
}

/* --- the run --------------------------------------------------------------------------------- */

struct wsp_run {
	struct wsp_anchor *a;
	struct plan_copy pc;
	int task, attempt;
	bool resumed;
	char lock[COORD_MAX_KEY];
	bool renewing;
	uv_timer_t renew;
	bool renew_closed;
	struct taskexec *x;
	char phase[24];
	int64_t started_ms;
	char title[PLAN_TITLE_MAX];
	/* the result, copied */
	enum taskexec_outcome outcome;
	struct decision d;
	char branch[PLAN_BRANCH_MAX + 1], base[GH_REF_MAX + 1], sha[GIT_SHA_MAX + 1];
	char *shortstat, *tests_line, *pr_title, *pr_body, *details;
	struct git_file *files;
	size_t n_files, files_dropped;
	uint64_t ms_clone, ms_coder, ms_tests, ms_push, ms_pr;
	int64_t pr_t0;
	char pr_url[GH_URL_MAX];
	int64_t pr_number;
	char reviewer[PLAN_LOGIN_MAX];
	/* a revision of PR revise_pr after a review (wsp_revise), or NULL */
	char *revision;
	int64_t revise_pr;
};

static void renew_closed(uv_handle_t *h)
{
	struct wsp_run *r = h->data;
	r->renew_closed = true;
	plan_copy_free(&r->pc);
	free(r->shortstat);
	free(r->tests_line);
	free(r->pr_title);
	free(r->pr_body);
	free(r->details);
	free(r->revision);
	for (size_t i = 0; i < r->n_files; i++) {
		free(r->files[i].path);
		free(r->files[i].old_path);
	}
	free(r->files);
	struct wsp *w = wsp_drop(r->a);
	(void)w;
	free(r);
}

/* The run is over: the lock released with how it ended, the engine free
 * for the next task. */
static void run_end(struct wsp_run *r, bool success, const char *link, const char *error)
{
	struct wsp *w = r->a->w;
	struct coord *c = w ? wsp_coord(w) : NULL;
	if (c && r->lock[0])
		coord_release_result(c, r->lock, success, link, error);
	if (w && w->run == r)
		w->run = NULL;
	uv_timer_stop(&r->renew);
	uv_close((uv_handle_t *)&r->renew, renew_closed);
}

static void on_renewed(void *ud, enum coord_result res, const char *holder, const char *why)
{
	struct wsp_anchor *a = ud;
	struct wsp *w = wsp_drop(a);
	if (w && res != COORD_WON)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "the task lock was not renewed", "result",
		       coord_result_name(res), "holder", holder, "why", why);
}

static void renew_tick(uv_timer_t *t)
{
	struct wsp_run *r = t->data;
	struct wsp *w = r->a->w;
	struct coord *c = w ? wsp_coord(w) : NULL;
	if (!c || !r->lock[0])
		return;
	if (coord_renew(c, r->lock, w->c.claim_ttl_ms, on_renewed, wsp_hold(w)) != 0)
		wsp_drop(w->anchor);
}

/* ---- the ports taskexec asks -------------------------------------------------------------- */

struct push_wait {
	struct wsp_run *r;
	taskexec_push_done_fn done;
	void *done_ud;
};

static void on_push_sent(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct push_wait *pw = ud;
	pw->done(pw->done_ud, ok, ok ? NULL : why);
	free(pw);
}

static int port_push(void *ud, const struct taskexec_push *req, taskexec_push_done_fn done,
                     void *done_ud, struct ga_err *err)
{
	struct wsp_run *r = ud;
	struct wsp *w = r->a->w;
	if (!w)
		return err_set(err, "the agent is stopping");
	char key[GH_PORT_KEY_MAX + 1];
	if (gh_port_push_key(req->branch, req->sha, key, sizeof key) != 0)
		return err_set(err, "no push key for %s at %s", req->branch, req->sha);
	char target[WSP_REPO_FULL_MAX + 32];
	snprintf(target, sizeof target, "github:%s:%s:push", req->owner, req->repo);
	char text[PLAN_BRANCH_MAX + GIT_SHA_MAX + 64];
	snprintf(text, sizeof text, "push %s at %.12s", req->branch, req->sha);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "branch", req->branch);
	cJSON_AddStringToObject(extra, "sha", req->sha);
	char conv[WSP_REPO_FULL_MAX + 40];
	snprintf(conv, sizeof conv, "plan:%s/%s#%d", req->owner, req->repo, r->pc.number);
	struct push_wait *pw = xcalloc(1, sizeof *pw);
	*pw = (struct push_wait){r, done, done_ud};
	struct wsp_send s = {
	        .target = target, .text = text, .key = key, .extra = extra, .conversation = conv};
	wsp_send(w, &s, on_push_sent, pw);
	cJSON_Delete(extra);
	return 0;
}

struct check_wait {
	struct wsp_run *r;
	struct wsp_anchor *a;
	taskexec_claim_done_fn done;
	void *done_ud;
};

static void on_check_comments(void *ud, const struct gh_result *res)
{
	struct check_wait *cw = ud;
	struct wsp *w = wsp_drop(cw->a);
	struct wsp_run *r = cw->r;
	enum taskexec_claim_state st = TASKEXEC_CLAIM_UNKNOWN;
	char detail[200] = "";
	if (w && res->kind == GH_OK) {
		struct wsp_events e;
		wsp_events_read(&e, res->json);
		struct plan_task_state t;
		if (fold_task(&r->pc, &e, r->task, &t)) {
			if (t.status == PLAN_COMPLETED)
				st = TASKEXEC_CLAIM_COMPLETED;
			else if (t.assignee[0] && strcasecmp(t.assignee, w->login) == 0 &&
			         t.attempt == r->attempt)
				st = TASKEXEC_CLAIM_OURS;
			else {
				st = TASKEXEC_CLAIM_STOLEN;
				snprintf(detail, sizeof detail, "%s",
				         t.assignee[0] ? t.assignee
				                       : "nobody (the claim was reset)");
			}
		}
		wsp_events_free(&e);
	}
	cw->done(cw->done_ud, st, detail[0] ? detail : NULL);
	free(cw);
}

static int port_claim(void *ud, const struct taskexec_claim *req, taskexec_claim_done_fn done,
                      void *done_ud, struct ga_err *err)
{
	struct wsp_run *r = ud;
	struct wsp *w = r->a->w;
	if (!w)
		return err_set(err, "the agent is stopping");
	struct check_wait *cw = xcalloc(1, sizeof *cw);
	*cw = (struct check_wait){r, wsp_hold(w), done, done_ud};
	if (gh_comments_list(w->c.gh, req->owner, req->repo, req->plan_number, WSP_MAX_COMMENTS,
	                     on_check_comments, cw, err) == 0) {
		wsp_drop(cw->a);
		free(cw);
		return -1;
	}
	return 0;
}

static void port_step(void *ud, const struct taskexec_step *s)
{
	struct wsp_run *r = ud;
	struct wsp *w = r->a->w;
	snprintf(r->phase, sizeof r->phase, "%s", s->phase);
	if (w)
		wsp_note(w, r->pc.owner, r->pc.repo, r->pc.number, r->task, STAGE_COMPOSE, &s->d);
}

/* ---- after the run: the PR, the reviewer, the report -------------------------------------- */

static void report_done(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct wsp_run *r = ud;
	struct wsp *w = r->a->w;
	if (w && !ok)
		wsp_error(w, "the report on plan #%d of %s/%s was not posted: %s", r->pc.number,
		          r->pc.owner, r->pc.repo, why ? why : "?");
	if (w && r->outcome == TASKEXEC_PUSHED && r->pr_number > 0) {
		char key[TASKEXEC_KEY_MAX];
		taskexec_key(r->pc.owner, r->pc.repo, r->pc.number, r->task, key, sizeof key);
		struct ga_err err = {{0}};
		if (taskexec_forget(w->c.st, key, time_now_ms(), &err) != 0)
			wsp_error(w, "the task record was not dropped: %s", err.msg);
		w->c.poke ? w->c.poke(w->c.ud) : (void)0;
		run_end(r, true, r->pr_url, NULL);
		return;
	}
	run_end(r, false, NULL, r->d.reason);
}

static void post_report(struct wsp *w, struct wsp_run *r)
{
	struct plan_marker m = {.plan = r->pc.number, .task = r->task, .attempt = r->attempt};
	snprintf(m.agent, sizeof m.agent, "%s", w->login);
	char key[WSP_KEY_MAX + 1];
	enum voice_key k;
	if (r->outcome == TASKEXEC_PUSHED) {
		m.kind = PLAN_MARK_PR;
		m.pr = (int)r->pr_number;
		snprintf(m.branch, sizeof m.branch, "%s", r->branch);
		k = VOICE_GH_TASK_COMPLETE;
		wsp_key(key, sizeof key, "pr", r->pc.owner, r->pc.repo, r->pc.number, r->task,
		        r->attempt);
		free(r->details);
		r->details = wsp_task_details(r->pr_url, r->shortstat, r->files, r->n_files,
		                              r->files_dropped, r->tests_line);
	} else {
		bool blocked = r->outcome == TASKEXEC_BLOCKED;
		m.kind = blocked ? PLAN_MARK_BLOCKED : PLAN_MARK_FAILED;
		k = blocked ? VOICE_GH_TASK_BLOCKED : VOICE_GH_TASK_FAILED;
		wsp_key(key, sizeof key, blocked ? "blocked" : "failed", r->pc.owner, r->pc.repo,
		        r->pc.number, r->task, r->attempt);
	}
	wsp_send_comment(w, r->pc.owner, r->pc.repo, r->pc.number, k, NULL, r->title, r->details,
	                 &m, key, report_done, r);
}

static void on_reviewer(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct wsp_run *r = ud;
	struct wsp *w = r->a->w;
	if (!w) {
		run_end(r, false, NULL, "stopping");
		return;
	}
	struct decision d;
	if (ok)
		decision_set(&d, VERDICT_SENT, "reviewer_requested",
		             "review of PR #%" PRId64
		             " requested from %s (the designated reviewer)",
		             r->pr_number, r->reviewer);
	else
		decision_set(&d, VERDICT_FAIL, "reviewer_requested",
		             "the review of PR #%" PRId64 " was not requested from %s: %s",
		             r->pr_number, r->reviewer, why ? why : "?");
	wsp_note(w, r->pc.owner, r->pc.repo, r->pc.number, r->task, STAGE_OUTBOUND, &d);
	post_report(w, r);
}

int wsp_request_review(struct wsp *w, const char *owner, const char *repo, int plan, int task,
                       int64_t pr, char *who, size_t cap, wsp_sent_fn cb, void *ud)
{
	struct wsp_agents ag;
	wsp_workspace_agents(w, owner, repo, &ag);
	const char *cand[WSP_MAX_AGENTS];
	for (size_t i = 0; i < ag.n; i++)
		cand[i] = ag.login[i];
	struct decision d;
	int rc = wsp_designated_reviewer(owner, repo, pr, w->login, cand, ag.n, who, cap, &d);
	wsp_note(w, owner, repo, plan, task, STAGE_OUTBOUND, &d);
	if (rc != 0)
		return -1;
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:edit:%" PRId64, owner, repo, pr);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "review-rq", owner, repo, (int)pr, 0, 0);
	char text[160];
	snprintf(text, sizeof text, "request a review of PR #%" PRId64 " from %s", pr, who);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "op", "reviewers");
	cJSON *l = cJSON_AddArrayToObject(extra, "logins");
	cJSON_AddItemToArray(l, cJSON_CreateString(who));
	struct wsp_send s = {.target = target, .text = text, .key = key, .extra = extra};
	wsp_send(w, &s, cb, ud);
	cJSON_Delete(extra);
	return 0;
}

static void request_reviewer(struct wsp *w, struct wsp_run *r)
{
	if (wsp_request_review(w, r->pc.owner, r->pc.repo, r->pc.number, r->task, r->pr_number,
	                       r->reviewer, sizeof r->reviewer, on_reviewer, r) != 0)
		post_report(w, r);
}

static void on_pr(void *ud, bool ok, const char *artifact, const char *why)
{
	struct wsp_run *r = ud;
	struct wsp *w = r->a->w;
	if (!w) {
		run_end(r, false, NULL, "stopping");
		return;
	}
	r->ms_pr = (uint64_t)(time_now_ms() - r->pr_t0);
	struct gh_ref ref;
	struct ga_err err = {{0}};
	if (!ok || !artifact || gh_parse_url(artifact, &ref, &err) != 0 || ref.number <= 0) {
		/* The branch is pushed and verified: nothing is lost. The task
		 * stays ours; the next cycle resumes it and opens the PR then. */
		struct decision d;
		decision_set(&d, VERDICT_FAIL, "pr_open", "the PR of %s was not opened: %s",
		             r->branch, ok ? err.msg : (why ? why : "?"));
		wsp_note(w, r->pc.owner, r->pc.repo, r->pc.number, r->task, STAGE_OUTBOUND, &d);
		run_end(r, false, NULL, d.reason);
		return;
	}
	r->pr_number = ref.number;
	snprintf(r->pr_url, sizeof r->pr_url, "%s", artifact);
	w->n.prs++;
	/* the task's wall time, phase by phase (bench/workspace reads it) */
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "task timing", "task", LOG_INT(r->task), "resumed",
	       LOG_BOOL(r->resumed), "clone_ms", LOG_INT(r->ms_clone), "coder_ms",
	       LOG_INT(r->ms_coder), "tests_ms", LOG_INT(r->ms_tests), "push_ms",
	       LOG_INT(r->ms_push), "pr_ms", LOG_INT(r->ms_pr), "total_ms",
	       LOG_INT(time_now_ms() - r->started_ms));
	struct decision d;
	decision_set(&d, VERDICT_SENT, "pr_open", "PR #%" PRId64 " opened for task %d: %s",
	             r->pr_number, r->task, r->pr_url);
	wsp_note(w, r->pc.owner, r->pc.repo, r->pc.number, r->task, STAGE_OUTBOUND, &d);
	wsp_tell_owner(w, "task %d of %s/%s#%d (%s): pull request %s", r->task, r->pc.owner,
	               r->pc.repo, r->pc.number, r->title, r->pr_url);
	request_reviewer(w, r);
}

static void open_pr(struct wsp *w, struct wsp_run *r)
{
	snprintf(r->phase, sizeof r->phase, "pr");
	r->pr_t0 = time_now_ms();
	char key[GH_PORT_KEY_MAX + 1];
	if (gh_port_pr_key(r->pc.owner, r->pc.repo, r->branch, key, sizeof key) != 0) {
		on_pr(r, false, NULL, "no PR key for the branch");
		return;
	}
	char target[WSP_REPO_FULL_MAX + 32];
	snprintf(target, sizeof target, "github:%s:%s:new-pr", r->pc.owner, r->pc.repo);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "title", r->pr_title ? r->pr_title : r->title);
	cJSON_AddStringToObject(extra, "head", r->branch);
	cJSON_AddStringToObject(extra, "base", r->base);
	char conv[WSP_REPO_FULL_MAX + 40];
	snprintf(conv, sizeof conv, "plan:%s/%s#%d", r->pc.owner, r->pc.repo, r->pc.number);
	struct wsp_send s = {.target = target,
	                     .text = r->pr_body ? r->pr_body : "",
	                     .key = key,
	                     .extra = extra,
	                     .conversation = conv};
	wsp_send(w, &s, on_pr, r);
	cJSON_Delete(extra);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void on_run_done(void *ud, const struct taskexec_result *res)
{
	struct wsp_run *r = ud;
	struct wsp *w = r->a->w;
	r->x = NULL;
	r->outcome = res->outcome;
	r->d = res->d;
	snprintf(r->branch, sizeof r->branch, "%s", res->branch ? res->branch : "");
	snprintf(r->base, sizeof r->base, "%s", res->base ? res->base : "");
	snprintf(r->sha, sizeof r->sha, "%s", res->sha ? res->sha : "");
	r->shortstat = dup_or_null(res->shortstat);
	r->tests_line = dup_or_null(res->tests_line);
	r->pr_title = dup_or_null(res->pr_title);
	r->pr_body = dup_or_null(res->pr_body);
	r->ms_clone = res->ms_clone;
	r->ms_coder = res->ms_coder;
	r->ms_tests = res->ms_tests;
	r->ms_push = res->ms_push;
	if (res->n_files) {
		r->files = xcalloc(res->n_files, sizeof *r->files);
		for (size_t i = 0; i < res->n_files; i++) {
			r->files[i].status = res->files[i].status;
			r->files[i].path = xstrdup(res->files[i].path);
			r->files[i].old_path = dup_or_null(res->files[i].old_path);
		}
	}
	r->n_files = res->n_files;
	r->files_dropped = res->files_dropped;
	if (!w) {
		run_end(r, false, NULL, "stopping");
		return;
	}
	wsp_note(w, r->pc.owner, r->pc.repo, r->pc.number, r->task, STAGE_COMPOSE, &res->d);
	if (r->revision && res->outcome != TASKEXEC_CANCELLED) {
		/* the PR is there: a pushed revision waits for its review (the
		 * PR step asks for it), anything else is the owner's */
		char key[TASKEXEC_KEY_MAX];
		taskexec_key(r->pc.owner, r->pc.repo, r->pc.number, r->task, key, sizeof key);
		struct ga_err err = {{0}};
		if (taskexec_forget(w->c.st, key, time_now_ms(), &err) != 0)
			wsp_error(w, "the task record was not dropped: %s", err.msg);
		bool pushed = res->outcome == TASKEXEC_PUSHED;
		wsp_pr_revised(w, r->pc.owner, r->pc.repo, r->pc.number, r->task, r->revise_pr,
		               pushed, &res->d);
		if (pushed && w->c.poke)
			w->c.poke(w->c.ud);
		run_end(r, pushed, NULL, pushed ? NULL : res->d.reason);
		return;
	}
	switch (res->outcome) {
	case TASKEXEC_PUSHED:
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "task pushed", "branch", r->branch, "clone_ms",
		       LOG_INT(r->ms_clone), "coder_ms", LOG_INT(r->ms_coder), "tests_ms",
		       LOG_INT(r->ms_tests), "push_ms", LOG_INT(r->ms_push));
		open_pr(w, r);
		return;
	case TASKEXEC_BLOCKED:
	case TASKEXEC_FAILED: {
		res->outcome == TASKEXEC_BLOCKED ? w->n.blocked++ : w->n.failed++;
		struct strbuf sb;
		sb_init(&sb, 0);
		sb_printf(&sb, "%s", res->d.reason);
		const char *tail = res->tests_tail && *res->tests_tail ? res->tests_tail
		                   : res->coder_tail                   ? res->coder_tail
		                                                       : "";
		if (*tail)
			sb_printf(&sb, "\n\n%.1500s", tail);
		r->details = sb_detach(&sb);
		wsp_tell_owner(w, "task %d of %s/%s#%d (%s) %s: %s", r->task, r->pc.owner,
		               r->pc.repo, r->pc.number, r->title,
		               res->outcome == TASKEXEC_BLOCKED ? "is blocked" : "failed",
		               res->d.reason);
		post_report(w, r);
		return;
	}
	case TASKEXEC_STOPPED:
		run_end(r, true, NULL, NULL);
		return;
	case TASKEXEC_CANCELLED:
		/* the record stays: the next start resumes it; the lock lapses */
		r->lock[0] = '\0';
		run_end(r, false, NULL, "cancelled");
		return;
	}
	run_end(r, false, NULL, "unknown outcome");
}

/* The deps of a task that are done: "Task 1 (Schema), Task 2 (API)". */
static char *deps_done(const struct plan *p, const struct plan_task *t)
{
	struct strbuf sb;
	sb_init(&sb, 4096);
	for (size_t i = 0; i < t->n_deps; i++) {
		const struct plan_task *d = plan_task_find(p, t->deps[i].task);
		if (d)
			sb_printf(&sb, "%sTask %d (%s)", sb.len ? ", " : "", d->number, d->title);
	}
	return sb.len ? sb_detach(&sb) : (sb_free(&sb), NULL);
}

static void start_run(struct wsp *w, struct plan_copy *pc, int task, int attempt, bool resumed,
                      const char *lock, const char *revision, int64_t pr)
{
	const struct plan_task *t = plan_task_find(&pc->plan, task);
	struct wsp_run *r = xcalloc(1, sizeof *r);
	r->a = wsp_hold(w);
	r->pc = *pc; /* taken */
	memset(pc, 0, sizeof *pc);
	r->task = task;
	r->attempt = attempt;
	r->resumed = resumed;
	r->started_ms = time_now_ms();
	snprintf(r->lock, sizeof r->lock, "%s", lock ? lock : "");
	snprintf(r->title, sizeof r->title, "%s", t ? t->title : "?");
	snprintf(r->phase, sizeof r->phase, "clone");
	r->revision = revision ? xstrdup(revision) : NULL;
	r->revise_pr = pr;
	uv_timer_init(w->c.loop, &r->renew);
	r->renew.data = r;
	w->run = r;
	if (r->lock[0] && wsp_coord(w)) {
		uint64_t every = (uint64_t)(w->c.claim_ttl_ms / 3);
		uv_timer_start(&r->renew, renew_tick, every, every);
	}
	char url[GH_URL_MAX];
	gh_port_clone_url(w->api_url, r->pc.owner, r->pc.repo, url, sizeof url);
	struct git_cred cred = {"x-access-token", w->token};
	char *deps = t ? deps_done(&r->pc.plan, t) : NULL;
	const char **files = NULL;
	if (t && t->n_files) {
		files = xcalloc(t->n_files + 1, sizeof *files);
		for (size_t i = 0; i < t->n_files; i++)
			files[i] = t->files[i];
	}
	struct taskexec_config cfg = {.loop = w->c.loop,
	                              .git = w->c.git,
	                              .work_root = w->work_root,
	                              .coder = w->c.coder,
	                              .skills = w->c.skills,
	                              .state = w->c.st,
	                              .ports = {r, port_push, port_claim, port_step}};
	struct taskexec_task tt = {.owner = r->pc.owner,
	                           .repo = r->pc.repo,
	                           .remote_url = url,
	                           .cred = w->token ? &cred : NULL,
	                           .plan_number = r->pc.number,
	                           .plan_title = r->pc.plan.title,
	                           .plan_goal = r->pc.plan.goal,
	                           .task_number = task,
	                           .task_title = r->title,
	                           .task_description = t ? t->description : "",
	                           .files = files,
	                           .deps_done = deps,
	                           .attempt = attempt,
	                           .agent = w->login,
	                           .revision = revision};
	struct ga_err err = {{0}};
	struct decision d;
	if (revision)
		decision_set(&d, VERDICT_PASS, "task_revision",
		             "task %d (%s), attempt %d: the coder revises PR #%" PRId64
		             " on its branch after the review",
		             task, r->title, attempt, pr);
	else
		decision_set(&d, VERDICT_PASS, resumed ? "task_resumed" : "task_started",
		             "task %d (%s), attempt %d: %s", task, r->title, attempt,
		             resumed ? "continued after a restart"
		                     : "the coder starts on a fresh clone");
	wsp_note(w, r->pc.owner, r->pc.repo, r->pc.number, task, STAGE_COMPOSE, &d);
	r->x = taskexec_start(&cfg, &tt, on_run_done, r, &err);
	free(deps);
	free(files);
	if (!r->x) {
		decision_set(&r->d, VERDICT_FAIL, "task_start", "the task could not start: %s",
		             err.msg);
		wsp_note(w, r->pc.owner, r->pc.repo, r->pc.number, task, STAGE_COMPOSE, &r->d);
		r->outcome = TASKEXEC_FAILED;
		if (revision) {
			wsp_pr_revised(w, r->pc.owner, r->pc.repo, r->pc.number, task, pr, false,
			               &r->d);
			run_end(r, false, NULL, r->d.reason);
			return;
		}
		r->details = xstrdup(r->d.reason);
		w->n.failed++;
		post_report(w, r);
	}
}

int wsp_revise(struct wsp *w, const struct wsp_plan *p, int task, int attempt, int64_t pr,
               const char *revision)
{
	if (w->run || w->quiescing || !revision)
		return -1;
	/* a record left by an earlier run of this attempt would be taken for
	 * this one: the revision starts from the pushed branch */
	char key[TASKEXEC_KEY_MAX];
	taskexec_key(p->owner, p->repo, p->number, task, key, sizeof key);
	struct ga_err err = {{0}};
	if (taskexec_forget(w->c.st, key, time_now_ms(), &err) != 0)
		wsp_error(w, "the task record was not dropped: %s", err.msg);
	struct plan_copy pc;
	copy_plan(&pc, p);
	start_run(w, &pc, task, attempt, false, NULL, revision, pr);
	return 0;
}

bool wsp_run_revising(const struct wsp *w, const char *owner, const char *repo, int64_t pr)
{
	const struct wsp_run *r = w->run;
	return r && r->revision && r->revise_pr == pr && strcasecmp(r->pc.owner, owner) == 0 &&
	       strcasecmp(r->pc.repo, repo) == 0;
}

void wsp_run_cancel(struct wsp *w)
{
	if (w->run && w->run->x)
		taskexec_cancel(w->run->x);
}

cJSON *wsp_run_status(const struct wsp *w)
{
	const struct wsp_run *r = w->run;
	if (!r)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	char repo[WSP_REPO_FULL_MAX];
	snprintf(repo, sizeof repo, "%s/%s", r->pc.owner, r->pc.repo);
	cJSON_AddStringToObject(o, "repo", repo);
	cJSON_AddNumberToObject(o, "plan", r->pc.number);
	cJSON_AddNumberToObject(o, "task", r->task);
	cJSON_AddStringToObject(o, "title", r->title);
	cJSON_AddNumberToObject(o, "attempt", r->attempt);
	cJSON_AddStringToObject(o, "phase", r->phase);
	cJSON_AddBoolToObject(o, "resumed", r->resumed);
	if (r->revision)
		cJSON_AddNumberToObject(o, "revisesPr", (double)r->revise_pr);
	cJSON_AddNumberToObject(o, "startedMs", (double)r->started_ms);
	if (r->branch[0])
		cJSON_AddStringToObject(o, "branch", r->branch);
	if (r->pr_url[0])
		cJSON_AddStringToObject(o, "prUrl", r->pr_url);
	return o;
}

/* --- the claim ------------------------------------------------------------------------------ */

struct claim_op {
	struct wsp_anchor *a;
	struct plan_copy pc;
	int task, attempt;
	bool resume;
	char lock[COORD_MAX_KEY];
	bool locked;
	int tries;
	void (*done)(void *ud);
	void *ud;
	char title[PLAN_TITLE_MAX];
};

static void claim_end(struct claim_op *op)
{
	struct wsp *w = wsp_drop(op->a);
	if (w && op->done)
		op->done(op->ud);
	plan_copy_free(&op->pc);
	free(op);
}

static void claim_note(struct wsp *w, struct claim_op *op, enum decision_verdict v,
                       const char *rule, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
static void claim_note(struct wsp *w, struct claim_op *op, enum decision_verdict v,
                       const char *rule, const char *fmt, ...)
{
	struct decision d;
	d.verdict = v;
	d.rule = rule;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d.reason, sizeof d.reason, fmt, ap);
	va_end(ap);
	wsp_note(w, op->pc.owner, op->pc.repo, op->pc.number, op->task, STAGE_GATE, &d);
}

/* Gives up the claim: the lock released, nothing else. */
static void claim_abandon(struct wsp *w, struct claim_op *op)
{
	struct coord *c = w ? wsp_coord(w) : NULL;
	if (c && op->locked)
		coord_release(c, op->lock);
	claim_end(op);
}

static void claim_won(struct wsp *w, struct claim_op *op)
{
	if (!op->resume)
		w->n.claims_won++;
	else
		w->n.resumed++;
	claim_note(w, op, VERDICT_PASS, op->resume ? "claim_resumed" : "claim_won",
	           "task %d (%s), attempt %d is ours%s", op->task, op->title, op->attempt,
	           op->resume ? ": continued after a restart" : "");
	if (!op->resume)
		wsp_tell_owner(w, "claimed task %d of %s/%s#%d: %s (attempt %d)", op->task,
		               op->pc.owner, op->pc.repo, op->pc.number, op->title, op->attempt);
	start_run(w, &op->pc, op->task, op->attempt, op->resume, op->locked ? op->lock : NULL, NULL,
	          0);
	claim_end(op);
}

static void claim_verify(void *ud);

static void on_lost_deleted(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct claim_op *op = ud;
	struct wsp *w = op->a->w;
	if (w && !ok)
		wsp_error(w, "our losing claim comment was not deleted: %s", why ? why : "?");
	claim_abandon(w, op);
}

static void on_verify_comments(void *ud, const struct gh_result *res)
{
	struct claim_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w) {
		claim_end(op);
		return;
	}
	if (res->kind != GH_OK) {
		/* Our comment is made; whether it won, the next cycle's fold
		 * says (it resumes the task when it is ours). */
		claim_note(w, op, VERDICT_FAIL, "claim_verify",
		           "the plan could not be read after the claim: %s", res->msg);
		claim_abandon(w, op);
		return;
	}
	struct wsp_events e;
	wsp_events_read(&e, res->json);
	int64_t mine = wsp_events_claim_of(&e, w->login, op->task, op->attempt);
	struct plan_task_state t;
	bool have = fold_task(&op->pc, &e, op->task, &t);
	if (!mine && op->tries < WSP_REREAD_TRIES) {
		wsp_events_free(&e);
		op->tries++;
		after(w, WSP_REREAD_MS, claim_verify, op);
		return;
	}
	if (have && mine && t.claim_comment_id == mine) {
		wsp_events_free(&e);
		claim_won(w, op);
		return;
	}
	w->n.claims_lost++;
	claim_note(w, op, VERDICT_BLOCK, "claim_lost",
	           "task %d went to @%s (the first claim by comment id wins)", op->task,
	           have && t.assignee[0] ? t.assignee : "nobody yet");
	wsp_events_free(&e);
	if (!mine) {
		claim_abandon(w, op);
		return;
	}
	/* Our comment would mislead a reader: it goes. */
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:delete:%d", op->pc.owner, op->pc.repo,
	         op->pc.number);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "unclaim", op->pc.owner, op->pc.repo, op->pc.number, op->task,
	        op->attempt);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddNumberToObject(extra, "comment_id", (double)mine);
	char text[160];
	snprintf(text, sizeof text, "delete our losing claim of task %d, attempt %d (comment %lld)",
	         op->task, op->attempt, (long long)mine);
	struct wsp_send s = {.target = target, .text = text, .key = key, .extra = extra};
	wsp_send(w, &s, on_lost_deleted, op);
	cJSON_Delete(extra);
}

static void claim_verify(void *ud)
{
	struct claim_op *op = ud;
	struct wsp *w = op->a->w;
	struct ga_err err = {{0}};
	if (!w || gh_comments_list(w->c.gh, op->pc.owner, op->pc.repo, op->pc.number,
	                           WSP_MAX_COMMENTS, on_verify_comments, op, &err) == 0) {
		if (w)
			claim_note(w, op, VERDICT_FAIL, "claim_verify", "%s", err.msg);
		claim_abandon(w, op);
	}
}

static void on_claim_posted(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct claim_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || !ok) {
		if (w)
			claim_note(w, op, VERDICT_FAIL, "claim_comment",
			           "the claim comment was not posted: %s", why ? why : "?");
		claim_abandon(w, op);
		return;
	}
	claim_verify(op);
}

static void on_reread(void *ud, const struct gh_result *res)
{
	struct claim_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w) {
		claim_end(op);
		return;
	}
	if (res->kind != GH_OK) {
		claim_note(w, op, VERDICT_FAIL, "claim_reread", "the plan could not be read: %s",
		           res->msg);
		claim_abandon(w, op);
		return;
	}
	struct wsp_events e;
	wsp_events_read(&e, res->json);
	size_t n = op->pc.plan.n_tasks;
	struct plan_task_state *st = xcalloc(n ? n : 1, sizeof *st);
	plan_state_fold(&op->pc.plan, op->pc.number, e.ev, e.n, st, NULL, NULL);
	wsp_events_free(&e);
	const struct plan_task_state *t = plan_state_find(st, n, op->task);
	if (op->resume) {
		bool ours = t && strcasecmp(t->assignee, w->login) == 0 && t->pr == 0 &&
		            (t->status == PLAN_CLAIMED || t->status == PLAN_IN_PROGRESS);
		if (ours) {
			op->attempt = t->attempt;
			free(st);
			claim_won(w, op);
			return;
		}
		claim_note(w, op, VERDICT_INFO, "claim_gone",
		           "task %d is no longer ours to resume (%s)", op->task,
		           t ? plan_status_name(t->status) : "gone");
		free(st);
		claim_abandon(w, op);
		return;
	}
	struct decision why;
	bool ok = plan_task_claimable(&op->pc.plan, st, n, op->task, &why);
	if (ok && t)
		op->attempt = t->attempt + 1;
	free(st);
	if (!ok) {
		claim_note(w, op, VERDICT_INFO, why.rule, "not claimed: %s", why.reason);
		claim_abandon(w, op);
		return;
	}
	w->n.claims++;
	struct plan_marker m = {.kind = PLAN_MARK_CLAIM,
	                        .plan = op->pc.number,
	                        .task = op->task,
	                        .attempt = op->attempt};
	snprintf(m.agent, sizeof m.agent, "%s", w->login);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "claim", op->pc.owner, op->pc.repo, op->pc.number, op->task,
	        op->attempt);
	wsp_send_comment(w, op->pc.owner, op->pc.repo, op->pc.number, VOICE_GH_TASK_CLAIM, NULL,
	                 op->title, NULL, &m, key, on_claim_posted, op);
}

static void claim_read(struct wsp *w, struct claim_op *op)
{
	struct ga_err err = {{0}};
	if (gh_comments_list(w->c.gh, op->pc.owner, op->pc.repo, op->pc.number, WSP_MAX_COMMENTS,
	                     on_reread, op, &err) == 0) {
		claim_note(w, op, VERDICT_FAIL, "claim_reread", "%s", err.msg);
		claim_abandon(w, op);
	}
}

static void on_locked(void *ud, enum coord_result res, const char *holder, const char *why)
{
	struct claim_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w) {
		claim_end(op);
		return;
	}
	bool ours = res == COORD_WON ||
	            (res == COORD_HELD && holder && strcmp(holder, w->agent_name) == 0);
	if (res == COORD_UNAVAILABLE) {
		/* The backend cannot tell (the room is down, Redis away): the
		 * markers alone decide, first claim by comment id. */
		claim_note(w, op, VERDICT_INFO, "claim_lock",
		           "the lock %s cannot be asked for (%s): the markers alone decide",
		           op->lock, why ? why : "unavailable");
		claim_read(w, op);
		return;
	}
	if (!ours) {
		claim_note(w, op, VERDICT_BLOCK, "claim_lock", "the task's lock %s is %s%s%s: %s",
		           op->lock, coord_result_name(res), holder ? " by " : "",
		           holder ? holder : "", why ? why : "");
		claim_end(op);
		return;
	}
	op->locked = true;
	claim_read(w, op);
}

void wsp_claim(struct wsp *w, const struct wsp_plan *p, int task, int attempt, bool resume,
               void (*done)(void *ud), void *ud)
{
	struct claim_op *op = xcalloc(1, sizeof *op);
	op->a = wsp_hold(w);
	copy_plan(&op->pc, p);
	op->task = task;
	op->attempt = attempt;
	op->resume = resume;
	op->done = done;
	op->ud = ud;
	const struct plan_task *t = plan_task_find(&op->pc.plan, task);
	snprintf(op->title, sizeof op->title, "%s", t ? t->title : "?");
	wsp_task_lock(op->lock, sizeof op->lock, p->owner, p->repo, p->number, task);
	struct coord *c = wsp_coord(w);
	if (!c) {
		claim_read(w, op);
		return;
	}
	if (coord_claim(c, op->lock, w->c.claim_ttl_ms, on_locked, op) != 0) {
		claim_note(w, op, VERDICT_FAIL, "claim_lock", "the lock %s could not be asked for",
		           op->lock);
		claim_end(op);
	}
}
