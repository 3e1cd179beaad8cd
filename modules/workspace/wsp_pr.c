/*
 * The pull requests of the work loop (wsp_int.h wsp_pr_step; the merge
 * rule is policy.h's wsp_pr_decide). Per watched workspace, once a cycle:
 *
 *   open PRs (GH's list, updated first, PR_LIST_MAX): ours → the PR itself
 *     (mergeable_state, the head), its reviews and its timeline's
 *     review_requested events → the rule → one action; a peer's whose
 *     review is requested of us and that has no review of ours on its head
 *     → the review callback;
 *   closed PRs (PR_CLOSED_MAX, updated first): ours, merged, whose task is
 *     not done in the plan the PR names (or whose plan is all done and
 *     still open) → what follows a merge, again: a kill -9 between the
 *     merge and the marker is finished by the next cycle.
 *
 * What follows a merge, in order, each an outbound send with its own key
 * (done once, across restarts): the branch deleted; the follow-up issue
 * from the reviews that leave work for later (wsp_review_followup: spec
 * §3.12 step 4, without the change requests the PR answered and the
 * approvals that suggest nothing); the done marker in the
 * plan the PR body names ("Part of #N"); when that was the plan's last
 * task: the plan-complete comment, the quality-loop comment, the labels
 * plan + plan:complete, the plan closed (§3.10); the room told (and the
 * Bluesky thread the workspace came from).
 *
 * Every outcome is a decision under plan:<o>/<r>#<plan> / task-<n>.
 */
#include <inttypes.h>
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
#include "modules/conversation/store.h"
#include "modules/journal/journal.h"
#include "modules/workspace/wsp_int.h"

#define PR_LIST_MAX     30
#define PR_CLOSED_MAX   10
#define PR_REVIEWS_MAX  100
#define PR_EVENTS_MAX   300
#define PR_COMMENTS_MAX 100
#define PR_RECENT_MS    (60 * 60 * 1000) /* merged / closed PRs kept in the status */
#define PR_REVISION_MAX 8000             /* bytes of review text given to the coder */
#define PR_SEQ_MAX      12

/* --- a sequence of sends, one after the other --------------------------------------------- */

struct seq_item {
	char *target, *text, *key;
	cJSON *extra;
	bool must;    /* a failure stops the sequence */
	bool say;     /* text said in the room (room_say), not sent */
	char *thread; /* say in this Bluesky thread (thread_say) */
};

struct seq {
	struct wsp_anchor *a;
	char owner[GH_OWNER_MAX + 1], repo[GH_REPO_MAX + 1];
	int plan, task;
	char conv[WSP_REPO_FULL_MAX + 40];
	struct seq_item it[PR_SEQ_MAX];
	size_t n, i;
	bool failed;
	void (*done)(void *ud, bool ok);
	void *ud;
};

static struct seq *seq_new(struct wsp *w, const char *owner, const char *repo, int plan, int task)
{
	struct seq *q = xcalloc(1, sizeof *q);
	q->a = wsp_hold(w);
	snprintf(q->owner, sizeof q->owner, "%s", owner);
	snprintf(q->repo, sizeof q->repo, "%s", repo);
	q->plan = plan;
	q->task = task;
	snprintf(q->conv, sizeof q->conv, "plan:%s/%s#%d", owner, repo, plan);
	return q;
}

/* Adds a send; extra is taken. */
static struct seq_item *seq_add(struct seq *q, const char *target, const char *text,
                                const char *key, cJSON *extra, bool must)
{
	if (q->n >= PR_SEQ_MAX) {
		cJSON_Delete(extra);
		return NULL;
	}
	struct seq_item *it = &q->it[q->n++];
	it->target = xstrdup(target ? target : "");
	it->text = xstrdup(text ? text : "");
	it->key = xstrdup(key);
	it->extra = extra;
	it->must = must;
	return it;
}

static void seq_free(struct seq *q)
{
	for (size_t i = 0; i < q->n; i++) {
		free(q->it[i].target);
		free(q->it[i].text);
		free(q->it[i].key);
		free(q->it[i].thread);
		cJSON_Delete(q->it[i].extra);
	}
	wsp_drop(q->a);
	free(q);
}

static void seq_next(struct seq *q);

static void seq_sent(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct seq *q = ud;
	struct wsp *w = q->a->w;
	struct seq_item *it = &q->it[q->i++];
	if (!ok && w) {
		struct decision d;
		decision_set(&d, VERDICT_FAIL, "pr_followup", "%s (%s) was not made: %s",
		             it->target, it->key, why ? why : "?");
		wsp_note(w, q->owner, q->repo, q->plan, q->task, STAGE_OUTBOUND, &d);
		if (it->must)
			q->failed = true;
	}
	seq_next(q);
}

static void seq_next(struct seq *q)
{
	struct wsp *w = q->a->w;
	while (w && !q->failed && q->i < q->n) {
		struct seq_item *it = &q->it[q->i];
		if (!it->say) {
			struct wsp_send s = {.target = it->target,
			                     .text = it->text,
			                     .key = it->key,
			                     .extra = it->extra,
			                     .conversation = q->conv};
			wsp_send(w, &s, seq_sent, q);
			return;
		}
		/* the room and the thread: their own outbound sends, keyed */
		int rc = -1;
		if (it->thread && w->c.thread_say)
			rc = w->c.thread_say(w->c.ud, it->thread, it->text, it->key);
		else if (!it->thread && w->c.room_say)
			rc = w->c.room_say(w->c.ud, it->text, it->key);
		if (rc != 0)
			log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "not announced", "where",
			       it->thread ? it->thread : "room", "key", it->key);
		q->i++;
	}
	bool ok = w && !q->failed;
	void (*done)(void *, bool) = q->done;
	void *ud = q->ud;
	seq_free(q);
	if (done)
		done(ud, ok);
}

static void target_of(char *out, size_t cap, const char *owner, const char *repo, const char *what,
                      int64_t n)
{
	if (n > 0)
		snprintf(out, cap, "github:%s:%s:%s:%" PRId64, owner, repo, what, n);
	else
		snprintf(out, cap, "github:%s:%s:%s", owner, repo, what);
}

/* --- the status's "pulls" ----------------------------------------------------------------- */

static struct wsp_pull *pull_find(struct wsp *w, const char *owner, const char *repo, int64_t n)
{
	for (size_t i = 0; i < w->npulls; i++) {
		struct wsp_pull *p = &w->pulls[i];
		if (p->number == n && strcasecmp(p->owner, owner) == 0 &&
		    strcasecmp(p->repo, repo) == 0)
			return p;
	}
	return NULL;
}

static struct wsp_pull *pull_slot(struct wsp *w, const char *owner, const char *repo, int64_t n)
{
	struct wsp_pull *found = pull_find(w, owner, repo, n);
	if (found)
		return found;
	if (w->npulls < WSP_MAX_PULLS) {
		struct wsp_pull *p = &w->pulls[w->npulls++];
		memset(p, 0, sizeof *p);
		return p;
	}
	w->pulls_dropped++;
	return NULL;
}

static void pull_seen(struct wsp *w, const char *owner, const char *repo, const struct gh_pull *pr,
                      int plan, int task, const struct wsp_pr_verdict *v, int64_t now)
{
	struct wsp_pull *p = pull_slot(w, owner, repo, pr->number);
	if (!p)
		return;
	snprintf(p->owner, sizeof p->owner, "%s", owner);
	snprintf(p->repo, sizeof p->repo, "%s", repo);
	p->number = pr->number;
	snprintf(p->title, sizeof p->title, "%s", pr->title ? pr->title : "");
	snprintf(p->url, sizeof p->url, "%s", pr->html_url);
	snprintf(p->author, sizeof p->author, "%s", pr->user);
	p->plan = plan;
	p->task = task;
	p->state = v->state;
	snprintf(p->reviewer, sizeof p->reviewer, "%s", v->reviewer);
	snprintf(p->next, sizeof p->next, "%s", v->next);
	p->revisions = v->revisions;
	p->since_ms = v->since_ms;
	p->seen_ms = now;
}

/* Open PRs not seen since t0 are gone from the list (merged or closed
 * elsewhere); merged / closed ones older than PR_RECENT_MS are dropped. */
static void pulls_prune(struct wsp *w, int64_t t0, int64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < w->npulls; i++) {
		struct wsp_pull *p = &w->pulls[i];
		bool over = p->state == WSP_PR_MERGED || p->state == WSP_PR_CLOSED;
		bool keep = over ? now - p->since_ms <= PR_RECENT_MS : p->seen_ms >= t0;
		if (keep && wsp_watch_find(&w->watch, p->owner, p->repo))
			w->pulls[k++] = *p;
	}
	w->npulls = k;
}

cJSON *wsp_pulls_json(const struct wsp *w)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < w->npulls; i++) {
		const struct wsp_pull *p = &w->pulls[i];
		cJSON *o = cJSON_CreateObject();
		char repo[WSP_REPO_FULL_MAX];
		snprintf(repo, sizeof repo, "%s/%s", p->owner, p->repo);
		cJSON_AddStringToObject(o, "repo", repo);
		cJSON_AddNumberToObject(o, "number", (double)p->number);
		cJSON_AddStringToObject(o, "title", p->title);
		cJSON_AddStringToObject(o, "url", p->url);
		cJSON_AddNumberToObject(o, "plan", p->plan);
		cJSON_AddNumberToObject(o, "task", p->task);
		cJSON_AddStringToObject(o, "author", p->author);
		cJSON_AddStringToObject(o, "reviewer", p->reviewer);
		cJSON_AddStringToObject(o, "state", wsp_pr_state_name(p->state));
		/* "" is the owner: named when its login is known */
		cJSON_AddStringToObject(o, "next",
		                        p->next[0]          ? p->next
		                        : w->owner_login[0] ? w->owner_login
		                                            : "owner");
		cJSON_AddNumberToObject(o, "since_ms", (double)p->since_ms);
		cJSON_AddNumberToObject(o, "revisions", p->revisions);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* --- the step ------------------------------------------------------------------------------ */

struct prs {
	struct wsp_anchor *a;
	void (*done)(void *ud);
	void *ud;
	struct wsp_ref ws[WSP_MAX_WATCHED];
	size_t nws, wi;
	bool closed_pass;
	cJSON *list;
	int li;
	int64_t t0;
	/* the PR in hand */
	struct gh_pull pr;
	bool have_pr;
	struct gh_review *rv;
	size_t nrv;
	struct gh_issue_event *ev;
	size_t nev;
	int plan, task, attempt;
	struct wsp_pr_verdict v;
	struct wsp_pr_review decisive; /* v.decisive points here (strings in rv) */
	/* github_merge_pr: one PR, answered when it is done with */
	wsp_answer_fn answer;
	void *answer_ud;
	bool answer_ok;
	char answer_text[GH_URL_MAX + DECISION_REASON_MAX + 200];
};

static void step_ws(struct prs *s);
static void next_pr(struct prs *s);
static void step_end(struct prs *s);

static void pr_clear(struct prs *s)
{
	if (s->have_pr)
		gh_pull_clear(&s->pr);
	s->have_pr = false;
	gh_reviews_free(s->rv, s->nrv);
	s->rv = NULL;
	s->nrv = 0;
	free(s->ev);
	s->ev = NULL;
	s->nev = 0;
}

/* The PR in hand is done with: the next one. */
static void pr_done(struct prs *s)
{
	if (s->answer) {
		step_end(s);
		return;
	}
	pr_clear(s);
	s->li++;
	next_pr(s);
}

static void step_end(struct prs *s)
{
	struct wsp *w = wsp_drop(s->a);
	if (s->answer) {
		wsp_answer_fn answer = s->answer;
		void *aud = s->answer_ud;
		bool ok = s->answer_ok;
		char text[sizeof s->answer_text];
		snprintf(text, sizeof text, "%s", s->answer_text[0] ? s->answer_text : "stopped");
		pr_clear(s);
		free(s);
		if (w)
			w->tool_calls--;
		answer(aud, ok, text);
		return;
	}
	if (w) {
		pulls_prune(w, s->t0, time_now_ms());
		w->pr_stepping = false;
	}
	pr_clear(s);
	cJSON_Delete(s->list);
	void (*done)(void *) = s->done;
	void *ud = s->ud;
	free(s);
	if (done)
		done(ud);
}

static void note(struct prs *s, const struct decision *d)
{
	struct wsp *w = s->a->w;
	if (w)
		wsp_note(w, s->ws[s->wi].owner, s->ws[s->wi].repo, s->plan, s->task, STAGE_GATE, d);
}

static const char *cur_owner(const struct prs *s)
{
	return s->ws[s->wi].owner;
}
static const char *cur_repo(const struct prs *s)
{
	return s->ws[s->wi].repo;
}

static struct wsp_plan *plan_of(struct wsp *w, const char *owner, const char *repo, int number)
{
	for (size_t i = 0; i < w->nplans; i++) {
		struct wsp_plan *p = w->plans[i];
		if (p->number == number && strcasecmp(p->owner, owner) == 0 &&
		    strcasecmp(p->repo, repo) == 0)
			return p;
	}
	return NULL;
}

/* plan, task, attempt of the PR in hand: the plan its body names, the task
 * and attempt of its marker (the branch's task number when it has none). */
static void read_body(struct prs *s)
{
	s->plan = wsp_pr_plan_of(s->pr.body);
	s->task = wsp_pr_task_of_branch(s->pr.head_ref);
	s->attempt = 1;
	struct plan_marker m;
	struct ga_err err = {{0}};
	if (plan_marker_parse(s->pr.body, &m, &err) == 1 && m.kind == PLAN_MARK_PR) {
		if (!s->plan)
			s->plan = m.plan;
		s->task = m.task;
		if (m.attempt > 0)
			s->attempt = m.attempt;
	}
}

/* --- what follows a merge ------------------------------------------------------------------ */

static const char quality_text[] = "**Quality Loop — Iteration Complete**\n\n"
                                   "- [ ] Re-read LIL-INTDEV-AGENTS.md against what was built\n"
                                   "- [ ] Walk through SCENARIOS.md as a user would\n"
                                   "- [ ] Fix the gaps found, or file an issue for each\n"
                                   "- [ ] Update both documents to match the project as it is now";

static void after_merge_done(void *ud, bool ok)
{
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	if (w) {
		struct decision d;
		if (ok)
			decision_set(&d, VERDICT_SENT, "pr_merged_followed",
			             "PR #%" PRId64 " merged: task %d of plan #%d done",
			             s->pr.number, s->task, s->plan);
		else
			decision_set(&d, VERDICT_FAIL, "pr_merged_followed",
			             "PR #%" PRId64
			             " merged; what follows is not complete (the next "
			             "cycle goes on)",
			             s->pr.number);
		note(s, &d);
		if (ok && w->c.poke)
			w->c.poke(w->c.ud);
	}
	pr_done(s);
}

/* Whether r's reviewer approved after r (the reviews are in order). */
static bool approved_later(const struct prs *s, size_t i)
{
	for (size_t k = i + 1; k < s->nrv; k++)
		if (strcasecmp(s->rv[k].user, s->rv[i].user) == 0 &&
		    strcmp(s->rv[k].state, "APPROVED") == 0)
			return true;
	return false;
}

/* The follow-up issue's body from the reviews that leave work for later
 * (wsp_review_followup), or NULL. */
static char *followup_body(const struct prs *s)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	size_t n = 0;
	for (size_t i = 0; i < s->nrv; i++) {
		const struct gh_review *r = &s->rv[i];
		if (strcasecmp(r->user, s->pr.user) == 0 ||
		    !wsp_review_followup(r->state, r->body, approved_later(s, i)))
			continue;
		const char *mk = strstr(r->body, "<!--");
		size_t len = mk ? (size_t)(mk - r->body) : strlen(r->body);
		sb_printf(&sb, "### Feedback from @%s\n\n> ", r->user);
		for (size_t k = 0; k < len && k < 4000; k++) {
			sb_putc(&sb, r->body[k]);
			if (r->body[k] == '\n')
				sb_puts(&sb, "> ");
		}
		sb_puts(&sb, "\n\n");
		n++;
	}
	if (!n) {
		sb_free(&sb);
		return NULL;
	}
	sb_printf(&sb, "_Created automatically from the reviews of #%" PRId64 "._", s->pr.number);
	return sb_detach(&sb);
}

static void after_merge(struct prs *s)
{
	struct wsp *w = s->a->w;
	const char *owner = cur_owner(s), *repo = cur_repo(s);
	struct wsp_plan *p = s->plan ? plan_of(w, owner, repo, s->plan) : NULL;
	struct seq *q = seq_new(w, owner, repo, s->plan, s->task);
	char target[WSP_REPO_FULL_MAX + 48], key[WSP_KEY_MAX + 1];
	/* the branch */
	if (strcmp(s->pr.head_ref, "main") != 0 && strcmp(s->pr.head_ref, "master") != 0 &&
	    strcmp(s->pr.head_ref, s->pr.base_ref) != 0) {
		target_of(target, sizeof target, owner, repo, "delete-branch", 0);
		wsp_pr_key(key, sizeof key, "delbr", owner, repo, s->pr.number, NULL, NULL);
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "branch", s->pr.head_ref);
		char text[GH_REF_MAX + 40];
		snprintf(text, sizeof text, "delete the branch %s", s->pr.head_ref);
		seq_add(q, target, text, key, x, false);
	}
	/* the follow-up issue */
	char *fb = followup_body(s);
	if (fb) {
		target_of(target, sizeof target, owner, repo, "new-issue", 0);
		wsp_pr_key(key, sizeof key, "followup", owner, repo, s->pr.number, NULL, NULL);
		cJSON *x = cJSON_CreateObject();
		char title[80];
		snprintf(title, sizeof title, "Follow-up: reviewer feedback from #%" PRId64,
		         s->pr.number);
		cJSON_AddStringToObject(x, "title", title);
		seq_add(q, target, fb, key, x, false);
		free(fb);
	}
	/* the task, in the plan the PR names */
	bool complete = false;
	if (p && s->task > 0) {
		const struct plan_task *t = plan_task_find(&p->plan, s->task);
		struct plan_marker m = {.kind = PLAN_MARK_DONE,
		                        .plan = s->plan,
		                        .task = s->task,
		                        .attempt = s->attempt,
		                        .pr = (int)s->pr.number};
		snprintf(m.agent, sizeof m.agent, "%s", w->login);
		char *phrase = xasprintf("Task %d (%s) is merged: %s", s->task, t ? t->title : "?",
		                         s->pr.html_url);
		char *text = wsp_comment(phrase, &m);
		free(phrase);
		target_of(target, sizeof target, owner, repo, "issue", s->plan);
		wsp_key(key, sizeof key, "done", owner, repo, s->plan, s->task, 0);
		if (text)
			seq_add(q, target, text, key, NULL, true);
		free(text);
		complete = true;
		for (size_t k = 0; k < p->plan.n_tasks; k++)
			if (p->st[k].task != s->task && p->st[k].status != PLAN_COMPLETED)
				complete = false;
	}
	if (complete) {
		const char *names[] = {"title", "number"};
		char num[16];
		snprintf(num, sizeof num, "%d", s->plan);
		const char *values[] = {p->title ? p->title : "", num};
		char *phrase = w->c.voice ? voice_render(w->c.voice, VOICE_GH_PLAN_COMPLETE, names,
		                                         values, 2)
		                          : voice_interpolate(voice_default(VOICE_GH_PLAN_COMPLETE),
		                                              names, values, 2);
		target_of(target, sizeof target, owner, repo, "issue", s->plan);
		wsp_key(key, sizeof key, "complete", owner, repo, s->plan, 0, 0);
		seq_add(q, target, phrase, key, NULL, true);
		free(phrase);
		wsp_key(key, sizeof key, "quality", owner, repo, s->plan, 0, 0);
		seq_add(q, target, quality_text, key, NULL, true);
		target_of(target, sizeof target, owner, repo, "edit", s->plan);
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "op", "labels");
		cJSON *l = cJSON_AddArrayToObject(x, "labels");
		cJSON_AddItemToArray(l, cJSON_CreateString(PLAN_LABEL));
		cJSON_AddItemToArray(l, cJSON_CreateString("plan:complete"));
		wsp_key(key, sizeof key, "complabels", owner, repo, s->plan, 0, 0);
		seq_add(q, target, "labels plan, plan:complete", key, x, true);
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "op", "issue");
		cJSON_AddStringToObject(x, "state", "closed");
		cJSON_AddStringToObject(x, "state_reason", "completed");
		wsp_key(key, sizeof key, "closeplan", owner, repo, s->plan, 0, 0);
		seq_add(q, target, "close the completed plan", key, x, true);
	}
	/* the room, and the thread the workspace came from */
	char say[800];
	if (complete)
		snprintf(say, sizeof say,
		         "Plan #%d of %s/%s is complete: the last task's PR #%" PRId64
		         " (%s) is merged. %s",
		         s->plan, owner, repo, s->pr.number, s->pr.title,
		         p && p->url ? p->url : "");
	else
		snprintf(say, sizeof say,
		         "Merged PR #%" PRId64 " of %s/%s (%s): task %d of plan #%d.", s->pr.number,
		         owner, repo, s->pr.title, s->task, s->plan);
	wsp_pr_key(key, sizeof key, complete ? "say-plan" : "say-merge", owner, repo,
	           complete ? s->plan : s->pr.number, NULL, NULL);
	struct seq_item *it = seq_add(q, NULL, say, key, NULL, false);
	if (it)
		it->say = true;
	const struct wsp_watch *ww = wsp_watch_find(&w->watch, owner, repo);
	if (complete && ww && ww->source == WSP_SOURCE_BLUESKY && ww->thread[0]) {
		wsp_pr_key(key, sizeof key, "say-thread", owner, repo, s->plan, NULL, NULL);
		it = seq_add(q, NULL, say, key, NULL, false);
		if (it) {
			it->say = true;
			it->thread = xstrdup(ww->thread);
		}
	}
	if (complete)
		w->n.plans_completed++;
	q->done = after_merge_done;
	q->ud = s;
	seq_next(q);
}

/* --- actions on our PR ----------------------------------------------------------------------- */

static void on_merged(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	if (!w) {
		pr_done(s);
		return;
	}
	struct decision d;
	if (!ok) {
		decision_set(&d, VERDICT_FAIL, "pr_merge",
		             "PR #%" PRId64 " was not merged: %s (the next cycle reads it again)",
		             s->pr.number, why ? why : "?");
		note(s, &d);
		snprintf(s->answer_text, sizeof s->answer_text, "%s", d.reason);
		pr_done(s);
		return;
	}
	s->answer_ok = true;
	snprintf(s->answer_text, sizeof s->answer_text,
	         "Merged %s (squash); task %d of plan #%d is marked done in the plan, the branch "
	         "is deleted.",
	         s->pr.html_url, s->task, s->plan);
	w->n.merged++;
	decision_set(&d, VERDICT_SENT, "pr_merge", "PR #%" PRId64 " squash-merged at %.12s",
	             s->pr.number, s->pr.head_sha);
	note(s, &d);
	struct wsp_pr_verdict v = s->v;
	v.state = WSP_PR_MERGED;
	v.since_ms = time_now_ms();
	snprintf(v.next, sizeof v.next, "%s", w->login);
	pull_seen(w, cur_owner(s), cur_repo(s), &s->pr, s->plan, s->task, &v, v.since_ms);
	wsp_tell_owner(w, "merged %s (task %d of %s/%s#%d)", s->pr.html_url, s->task, cur_owner(s),
	               cur_repo(s), s->plan);
	after_merge(s);
}

static void do_merge(struct prs *s)
{
	struct wsp *w = s->a->w;
	const char *owner = cur_owner(s), *repo = cur_repo(s);
	char target[WSP_REPO_FULL_MAX + 48], key[WSP_KEY_MAX + 1];
	target_of(target, sizeof target, owner, repo, "merge", s->pr.number);
	wsp_pr_key(key, sizeof key, "merge", owner, repo, s->pr.number, NULL, NULL);
	char title[GH_TITLE_MAX + 24];
	snprintf(title, sizeof title, "%s (#%" PRId64 ")", s->pr.title, s->pr.number);
	cJSON *x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "method", "squash");
	cJSON_AddStringToObject(x, "title", title);
	char msg[200];
	if (s->answer)
		snprintf(msg, sizeof msg, "Task %d of plan #%d, merged at the owner's request.",
		         s->task, s->plan);
	else
		snprintf(msg, sizeof msg, "Task %d of plan #%d, approved by @%s.", s->task, s->plan,
		         s->v.reviewer[0] ? s->v.reviewer : "?");
	cJSON_AddStringToObject(x, "message", msg);
	cJSON_AddStringToObject(x, "sha", s->pr.head_sha);
	struct wsp_send snd = {.target = target, .text = title, .key = key, .extra = x};
	wsp_send(w, &snd, on_merged, s);
	cJSON_Delete(x);
}

static void on_acted(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct prs *s = ud;
	struct decision d;
	if (ok)
		decision_set(&d, VERDICT_SENT, s->v.d.rule, "%s", s->v.d.reason);
	else
		decision_set(&d, VERDICT_FAIL, s->v.d.rule, "%s — not done: %s", s->v.d.reason,
		             why ? why : "?");
	note(s, &d);
	pr_done(s);
}

static void do_request(struct prs *s)
{
	struct wsp *w = s->a->w;
	const char *owner = cur_owner(s), *repo = cur_repo(s);
	char target[WSP_REPO_FULL_MAX + 48], key[WSP_KEY_MAX + 1];
	target_of(target, sizeof target, owner, repo, "edit", s->pr.number);
	wsp_pr_key(key, sizeof key, "rq", owner, repo, s->pr.number, s->pr.head_sha, s->v.ask);
	cJSON *x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "op", "reviewers");
	cJSON *l = cJSON_AddArrayToObject(x, "logins");
	cJSON_AddItemToArray(l, cJSON_CreateString(s->v.ask));
	char text[160];
	/* the head in the text: asking again for a new head is not a
	 * duplicate of the first request for outbound */
	snprintf(text, sizeof text, "request a review of PR #%" PRId64 " at %.12s from %s",
	         s->pr.number, s->pr.head_sha, s->v.ask);
	struct wsp_send snd = {.target = target, .text = text, .key = key, .extra = x};
	w->n.reviews_asked++;
	wsp_send(w, &snd, on_acted, s);
	cJSON_Delete(x);
}

static void do_owner(struct prs *s)
{
	struct wsp *w = s->a->w;
	const char *owner = cur_owner(s), *repo = cur_repo(s);
	char target[WSP_REPO_FULL_MAX + 48], key[WSP_KEY_MAX + 1];
	target_of(target, sizeof target, owner, repo, "pr", s->pr.number);
	wsp_pr_key(key, sizeof key, "owner", owner, repo, s->pr.number, NULL, NULL);
	char text[DECISION_REASON_MAX + PLAN_LOGIN_MAX + 200];
	/* the owner's login, when known, is mentioned: GitHub notifies them */
	snprintf(text, sizeof text,
	         "This pull request is left to the workspace's owner%s%s: %s. An approving review "
	         "from the owner lets me merge it.",
	         w->owner_login[0] ? " @" : "", w->owner_login, s->v.d.reason);
	w->n.handed_over++;
	wsp_tell_owner(w, "%s: %s", s->pr.html_url, s->v.d.reason);
	struct wsp_send snd = {.target = target, .text = text, .key = key};
	wsp_send(w, &snd, on_acted, s);
}

/* Closes the PR with a comment (key: its journal key's kind), and deletes
 * its branch when delete_branch. Every step is keyed: once across restarts. */
static void close_pr(struct prs *s, const char *text, const char *kind, bool delete_branch)
{
	struct wsp *w = s->a->w;
	const char *owner = cur_owner(s), *repo = cur_repo(s);
	struct seq *q = seq_new(w, owner, repo, s->plan, s->task);
	char target[WSP_REPO_FULL_MAX + 48], key[WSP_KEY_MAX + 1];
	target_of(target, sizeof target, owner, repo, "pr", s->pr.number);
	wsp_pr_key(key, sizeof key, kind, owner, repo, s->pr.number, NULL, NULL);
	seq_add(q, target, text, key, NULL, true);
	target_of(target, sizeof target, owner, repo, "edit", s->pr.number);
	cJSON *x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "op", "issue");
	cJSON_AddStringToObject(x, "state", "closed");
	wsp_pr_key(key, sizeof key, "closepr", owner, repo, s->pr.number, NULL, NULL);
	seq_add(q, target, "close the PR", key, x, true);
	if (delete_branch) {
		target_of(target, sizeof target, owner, repo, "delete-branch", 0);
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "branch", s->pr.head_ref);
		wsp_pr_key(key, sizeof key, "delbr", owner, repo, s->pr.number, NULL, NULL);
		seq_add(q, target, "delete the PR's branch", key, x, false);
	}
	struct wsp_pr_verdict v = s->v;
	v.state = WSP_PR_CLOSED;
	v.since_ms = time_now_ms();
	pull_seen(w, owner, repo, &s->pr, s->plan, s->task, &v, v.since_ms);
	q->done = NULL;
	seq_next(q); /* its decisions are its own; the step goes on */
	struct decision d;
	decision_set(&d, VERDICT_SENT, s->v.d.rule, "%s", s->v.d.reason);
	note(s, &d);
	pr_done(s);
}

static void do_close(struct prs *s, int task_pr)
{
	char text[300];
	snprintf(text, sizeof text,
	         "Replaced by #%d: the task was rebuilt on a fresh branch from the default branch "
	         "after this one conflicted with it. Closing this one.",
	         task_pr);
	close_pr(s, text, "replaced", true);
}

/* A conflicting PR whose plan is not among the plans in hand: either the
 * plan is not read yet (a restart; later) or it is closed. A closed plan
 * plans no more work, so the rebuild would never come and the PR would stay
 * open for ever: it is closed with a comment, and its branch is kept so
 * that a person can reopen and rebuild it. */
static void on_conflict_plan(void *ud, const struct gh_result *res)
{
	struct prs *s = ud;
	if (!s->a->w) {
		pr_done(s);
		return;
	}
	const char *state = res->kind == GH_OK ? json_string_or(res->json, "state", "") : "";
	if (strcmp(state, "closed") != 0) {
		struct decision d;
		decision_set(&d, VERDICT_INFO, "pr_conflict",
		             "PR #%" PRId64 " conflicts; its plan #%d is not read: later",
		             s->pr.number, s->plan);
		note(s, &d);
		pr_done(s);
		return;
	}
	decision_set(&s->v.d, VERDICT_PASS, "pr_plan_closed",
	             "PR #%" PRId64 " conflicts and its plan #%d is closed: no rebuild will come; "
	             "closed, its branch %.100s kept",
	             s->pr.number, s->plan, s->pr.head_ref);
	char text[400];
	snprintf(text, sizeof text,
	         "This PR conflicts with the default branch, and its plan #%d is closed, so no "
	         "rebuild is planned for it. Closing it; the branch `%.100s` stays, so it can be "
	         "reopened and rebuilt.",
	         s->plan, s->pr.head_ref);
	close_pr(s, text, "unplanned", false);
}

static void conflict_without_plan(struct prs *s)
{
	struct wsp *w = s->a->w;
	struct ga_err err = {{0}};
	if (s->plan <= 0 || gh_issue_get(w->c.gh, cur_owner(s), cur_repo(s), s->plan,
	                                 on_conflict_plan, s, &err) == 0) {
		struct gh_result r = {.kind = GH_ERR_INVALID};
		on_conflict_plan(s, &r);
	}
}

/* --- the revision: the review as the coder's input ----------------------------------------- */

static void on_review_comments(void *ud, const struct gh_result *res)
{
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	if (!w) {
		pr_done(s);
		return;
	}
	const struct wsp_pr_review *dv = s->v.decisive;
	int64_t rid = 0;
	const char *body = "";
	for (size_t i = 0; dv && i < s->nrv; i++)
		if (s->rv[i].commit_id[0] && strcmp(s->rv[i].commit_id, dv->commit_id) == 0 &&
		    s->rv[i].submitted_ms == dv->at_ms &&
		    strcasecmp(s->rv[i].user, dv->user) == 0) {
			rid = s->rv[i].id;
			body = s->rv[i].body;
		}
	struct strbuf sb;
	sb_init(&sb, PR_REVISION_MAX + 256);
	sb_printf(&sb, "Review by @%s (changes requested) on PR #%" PRId64 ":\n\n%.4000s\n",
	          dv ? dv->user : "?", s->pr.number, body);
	struct gh_review_comment_info *c = NULL;
	size_t nc = 0;
	struct ga_err err = {{0}};
	if (res->kind == GH_OK && gh_review_comments_parse(res->json, &c, &nc, &err) == 0) {
		size_t shown = 0;
		for (size_t i = 0; i < nc; i++) {
			if (rid && c[i].review_id != rid)
				continue;
			if (sb.len > PR_REVISION_MAX)
				break;
			sb_printf(&sb, "%s- `%s` line %" PRId64 ": %.1000s\n",
			          shown++ ? "" : "\nInline comments:\n", c[i].path, c[i].line,
			          c[i].body);
		}
		gh_review_comments_free(c, nc);
	}
	struct wsp_plan *p = plan_of(w, cur_owner(s), cur_repo(s), s->plan);
	struct decision d;
	if (!p) {
		decision_set(&d, VERDICT_INFO, "pr_revision_wait",
		             "PR #%" PRId64 " needs a revision but its plan #%d is not read",
		             s->pr.number, s->plan);
	} else if (wsp_revise(w, p, s->task, s->attempt, s->pr.number, sb.buf) != 0) {
		decision_set(&d, VERDICT_INFO, "pr_revision_wait",
		             "PR #%" PRId64
		             " needs a revision: it starts when the task of ours that "
		             "runs is over",
		             s->pr.number);
	} else {
		w->n.revisions++;
		s->v.state = WSP_PR_REVISING;
		pull_seen(w, cur_owner(s), cur_repo(s), &s->pr, s->plan, s->task, &s->v,
		          time_now_ms());
		decision_set(&d, VERDICT_PASS, s->v.d.rule, "%s", s->v.d.reason);
	}
	sb_free(&sb);
	note(s, &d);
	pr_done(s);
}

static void do_revise(struct prs *s)
{
	struct wsp *w = s->a->w;
	struct ga_err err = {{0}};
	if (gh_review_comments_list(w->c.gh, cur_owner(s), cur_repo(s), s->pr.number,
	                            PR_COMMENTS_MAX, on_review_comments, s, &err) == 0) {
		struct gh_result r = {.kind = GH_ERR_INVALID};
		on_review_comments(s, &r);
	}
}

/* --- the rebuild: a fresh branch after a conflict ------------------------------------------ */

static void on_rebuild_claimed(void *ud)
{
	pr_done(ud);
}

static void on_rebuild_reset(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	struct wsp_plan *p = w ? plan_of(w, cur_owner(s), cur_repo(s), s->plan) : NULL;
	struct decision d;
	if (!ok || !p) {
		decision_set(&d, VERDICT_FAIL, "pr_conflict",
		             "task %d was not reset for a rebuild: %s", s->task,
		             ok ? "its plan is not read" : (why ? why : "?"));
		note(s, &d);
		pr_done(s);
		return;
	}
	decision_set(&d, VERDICT_SENT, s->v.d.rule, "%s", s->v.d.reason);
	note(s, &d);
	w->n.rebuilds++;
	if (w->run || w->quiescing) {
		pr_done(s); /* the task is pending: any free agent rebuilds it */
		return;
	}
	const struct plan_task_state *st = plan_state_find(p->st, p->plan.n_tasks, s->task);
	wsp_claim(w, p, s->task, (st ? st->attempt : s->attempt) + 1, false, on_rebuild_claimed, s);
}

static void do_rebuild(struct prs *s, struct wsp_plan *p)
{
	struct wsp *w = s->a->w;
	static const char reset_text[] =
	        "Task {{number}} ({{title}}): its PR #{{pr}} conflicts with the default branch. "
	        "It is rebuilt on a fresh branch from the default branch; the new PR replaces "
	        "#{{pr}}.";
	const struct plan_task *t = plan_task_find(&p->plan, s->task);
	char num[16], pr[24];
	snprintf(num, sizeof num, "%d", s->task);
	snprintf(pr, sizeof pr, "%" PRId64, s->pr.number);
	const char *names[] = {"number", "title", "pr"};
	const char *values[] = {num, t ? t->title : "?", pr};
	char *text = voice_interpolate(reset_text, names, values, 3);
	struct plan_marker m = {.kind = PLAN_MARK_RESET,
	                        .plan = s->plan,
	                        .task = s->task,
	                        .attempt = s->attempt,
	                        .pr = (int)s->pr.number};
	snprintf(m.agent, sizeof m.agent, "%s", w->login);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "rebuild", cur_owner(s), cur_repo(s), s->plan, s->task,
	        s->attempt);
	s->v.state = WSP_PR_REBUILDING;
	pull_seen(w, cur_owner(s), cur_repo(s), &s->pr, s->plan, s->task, &s->v, time_now_ms());
	wsp_send_comment(w, cur_owner(s), cur_repo(s), s->plan, VOICE_GH_TASK_FAILED, text, NULL,
	                 NULL, &m, key, on_rebuild_reset, s);
	free(text);
}

/* --- the rule over our PR ------------------------------------------------------------------ */

static bool key_done(const struct wsp *w, const char *key)
{
	return journal_state_of(w->c.journal, key) == JOURNAL_DONE;
}

static void decide(struct prs *s)
{
	struct wsp *w = s->a->w;
	const char *owner = cur_owner(s), *repo = cur_repo(s);
	read_body(s);
	struct wsp_plan *p = s->plan ? plan_of(w, owner, repo, s->plan) : NULL;
	const struct plan_task_state *st =
	        p && s->task ? plan_state_find(p->st, p->plan.n_tasks, s->task) : NULL;
	struct wsp_agents ag;
	wsp_workspace_agents(w, owner, repo, &ag);
	const char *agents[WSP_MAX_AGENTS], *asked_head[WSP_MAX_AGENTS];
	size_t nah = 0;
	for (size_t i = 0; i < ag.n; i++) {
		agents[i] = ag.login[i];
		char key[WSP_KEY_MAX + 1];
		if (wsp_pr_key(key, sizeof key, "rq", owner, repo, s->pr.number, s->pr.head_sha,
		               ag.login[i]) == 0 &&
		    key_done(w, key))
			asked_head[nah++] = ag.login[i];
	}
	struct wsp_pr_review *rv = xcalloc(s->nrv + 1, sizeof *rv);
	for (size_t i = 0; i < s->nrv; i++)
		rv[i] = (struct wsp_pr_review){s->rv[i].user, s->rv[i].state, s->rv[i].commit_id,
		                               s->rv[i].submitted_ms};
	struct wsp_pr_ask *asks = xcalloc(s->nev + 1, sizeof *asks);
	size_t na = 0;
	for (size_t i = 0; i < s->nev; i++)
		if (strcmp(s->ev[i].event, "review_requested") == 0 && s->ev[i].subject[0])
			asks[na++] = (struct wsp_pr_ask){s->ev[i].subject, s->ev[i].created_ms};
	const char *req[GH_REVIEWERS_MAX];
	for (size_t i = 0; i < s->pr.n_requested; i++)
		req[i] = s->pr.requested[i];
	char okey[WSP_KEY_MAX + 1];
	wsp_pr_key(okey, sizeof okey, "owner", owner, repo, s->pr.number, NULL, NULL);
	enum wsp_pr_running running = WSP_RUN_NONE;
	if (wsp_run_revising(w, owner, repo, s->pr.number))
		running = WSP_RUN_REVISION;
	else if (st && (st->status == PLAN_CLAIMED || st->status == PLAN_IN_PROGRESS) &&
	         st->attempt > s->attempt && st->pr != (int)s->pr.number)
		running = WSP_RUN_REBUILD;
	int mr = w->c.max_revisions == 0  ? WSP_MAX_REVISIONS
	         : w->c.max_revisions < 0 ? 0
	                                  : w->c.max_revisions;
	struct wsp_pr_facts f = {.owner = owner,
	                         .repo = repo,
	                         .number = s->pr.number,
	                         .author = s->pr.user,
	                         .head_sha = s->pr.head_sha,
	                         .mergeable_state = s->pr.mergeable_state,
	                         .created_ms = s->pr.created_ms,
	                         .reviews = rv,
	                         .n_reviews = s->nrv,
	                         .requested = req,
	                         .n_requested = s->pr.n_requested,
	                         .asks = asks,
	                         .n_asks = na,
	                         .asked_head = asked_head,
	                         .n_asked_head = nah,
	                         .agents = agents,
	                         .n_agents = ag.n,
	                         .attempt = s->attempt,
	                         .task_pr = st ? st->pr : 0,
	                         .handed_over = key_done(w, okey),
	                         .running = running,
	                         .now_ms = time_now_ms(),
	                         .review_timeout_ms = w->c.review_timeout_ms,
	                         .max_revisions = mr,
	                         .max_rebuilds = -1};
	wsp_pr_decide(&f, &s->v);
	/* the decisive review points into rv: kept by value (its strings are
	 * s->rv's) */
	if (s->v.decisive) {
		s->decisive = *s->v.decisive;
		s->v.decisive = &s->decisive;
	}
	free(rv);
	free(asks);
	const struct wsp_pull *was = pull_find(w, owner, repo, s->pr.number);
	bool changed = !was || was->state != s->v.state || strcmp(was->next, s->v.next) != 0;
	pull_seen(w, owner, repo, &s->pr, s->plan, s->task, &s->v, time_now_ms());
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "pull request", "pr", LOG_INT(s->pr.number), "act",
	       wsp_pr_act_name(s->v.act), "rule", s->v.d.rule, "why", s->v.d.reason);
	switch (s->v.act) {
	case WSP_ACT_WAIT:
		/* a wait is noted when it begins, not every cycle */
		if (changed)
			note(s, &s->v.d);
		pr_done(s);
		return;
	case WSP_ACT_MERGE:
		note(s, &s->v.d);
		do_merge(s);
		return;
	case WSP_ACT_REQUEST:
		do_request(s);
		return;
	case WSP_ACT_REVISE:
		do_revise(s);
		return;
	case WSP_ACT_OWNER:
		do_owner(s);
		return;
	case WSP_ACT_CLOSE:
		do_close(s, f.task_pr);
		return;
	case WSP_ACT_REBUILD: {
		struct decision d;
		if (!p || !st) {
			conflict_without_plan(s);
			return;
		}
		if (!wsp_rebuild_allowed(&p->plan, p->st, p->plan.n_tasks, s->task, w->login, &d)) {
			/* failed too often, abandoned, someone else's: the owner's */
			decision_set(&s->v.d, VERDICT_BLOCK, "pr_rebuild_refused",
			             "PR #%" PRId64
			             " conflicts and task %d cannot be taken again: %.200s",
			             s->pr.number, s->task, d.reason);
			do_owner(s);
			return;
		}
		do_rebuild(s, p);
		return;
	}
	}
	pr_done(s);
}

static void on_events(void *ud, const struct gh_result *res)
{
	struct prs *s = ud;
	struct ga_err err = {{0}};
	if (res->kind == GH_OK)
		gh_issue_events_parse(res->json, &s->ev, &s->nev, &err);
	if (!s->a->w) {
		pr_done(s);
		return;
	}
	decide(s);
}

static void on_reviews(void *ud, const struct gh_result *res)
{
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	struct ga_err err = {{0}};
	if (!w || res->kind != GH_OK || gh_reviews_parse(res->json, &s->rv, &s->nrv, &err) != 0) {
		if (w)
			wsp_error(w, "the reviews of PR #%" PRId64 " were not read: %s",
			          s->pr.number, res->kind == GH_OK ? err.msg : "request failed");
		pr_done(s);
		return;
	}
	if (s->answer) {
		read_body(s);
		if (s->pr.merged) {
			s->answer_ok = true;
			snprintf(s->answer_text, sizeof s->answer_text,
			         "%s was merged already; what follows a merge (the task done in "
			         "plan "
			         "#%d) is made sure of.",
			         s->pr.html_url, s->plan);
			after_merge(s);
			return;
		}
		struct decision d;
		decision_set(&d, VERDICT_PASS, "pr_merge_tool",
		             "PR #%" PRId64 " merged at the request made through github_merge_pr",
		             s->pr.number);
		note(s, &d);
		do_merge(s);
		return;
	}
	if (s->closed_pass) {
		struct wsp_pr_verdict v = {.state = WSP_PR_MERGED, .since_ms = s->pr.merged_ms};
		pull_seen(w, cur_owner(s), cur_repo(s), &s->pr, s->plan, s->task, &v,
		          time_now_ms());
		after_merge(s);
		return;
	}
	if (gh_issue_events(w->c.gh, cur_owner(s), cur_repo(s), s->pr.number, PR_EVENTS_MAX,
	                    on_events, s, &err) == 0) {
		struct gh_result r = {.kind = GH_ERR_INVALID};
		on_events(s, &r);
	}
}

static void read_reviews(struct prs *s, gh_done_fn cb)
{
	struct wsp *w = s->a->w;
	struct ga_err err = {{0}};
	if (gh_reviews_list(w->c.gh, cur_owner(s), cur_repo(s), s->pr.number, PR_REVIEWS_MAX, cb, s,
	                    &err) == 0) {
		wsp_error(w, "the reviews of PR #%" PRId64 " were not asked for: %s", s->pr.number,
		          err.msg);
		pr_done(s);
	}
}

static void on_pull(void *ud, const struct gh_result *res)
{
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	struct gh_pull full;
	struct ga_err err = {{0}};
	if (!w || res->kind != GH_OK || gh_pull_parse(res->json, &full, &err) != 0) {
		if (w)
			wsp_error(w, "PR #%" PRId64 " was not read: %s", s->pr.number,
			          res->kind == GH_OK ? err.msg : "request failed");
		pr_done(s);
		return;
	}
	gh_pull_clear(&s->pr);
	s->pr = full;
	if (!s->pr.open) {
		pr_done(s);
		return;
	}
	read_reviews(s, on_reviews);
}

/* A peer's PR that asks us for a review: the review callback unless we
 * reviewed its head already. */
static void on_their_reviews(void *ud, const struct gh_result *res)
{
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	struct ga_err err = {{0}};
	if (!w || res->kind != GH_OK || gh_reviews_parse(res->json, &s->rv, &s->nrv, &err) != 0) {
		pr_done(s);
		return;
	}
	read_body(s);
	bool mine = false;
	for (size_t i = 0; i < s->nrv && !mine; i++)
		mine = strcasecmp(s->rv[i].user, w->login) == 0 &&
		       strcmp(s->rv[i].commit_id, s->pr.head_sha) == 0;
	struct wsp_pr_verdict v = {.state = WSP_PR_AWAITING_REVIEW};
	snprintf(v.reviewer, sizeof v.reviewer, "%s", w->login);
	snprintf(v.next, sizeof v.next, "%s", mine ? s->pr.user : w->login);
	v.since_ms = s->pr.updated_ms;
	const struct wsp_pull *was = pull_find(w, cur_owner(s), cur_repo(s), s->pr.number);
	bool changed = !was || strcmp(was->next, v.next) != 0;
	pull_seen(w, cur_owner(s), cur_repo(s), &s->pr, s->plan, s->task, &v, time_now_ms());
	if (!mine && w->c.review) {
		/* asked every cycle (the callee dedups: a review may have
		 * failed), noted when it begins */
		struct decision d;
		decision_set(&d, VERDICT_PASS, "review_asked_of_us",
		             "@%s asked us to review PR #%" PRId64 " at %.12s", s->pr.user,
		             s->pr.number, s->pr.head_sha);
		if (changed)
			note(s, &d);
		w->c.review(w->c.ud, cur_owner(s), cur_repo(s), s->pr.number, s->pr.head_sha);
	}
	pr_done(s);
}

/* --- walking the lists --------------------------------------------------------------------- */

static bool requested_of_me(const struct gh_pull *pr, const char *me)
{
	for (size_t i = 0; i < pr->n_requested; i++)
		if (strcasecmp(pr->requested[i], me) == 0)
			return true;
	return false;
}

/* Our merged PR whose plan still shows its task open, or shows every task
 * done and is open: what follows the merge is not finished. */
static bool merge_unfinished(struct wsp *w, struct prs *s)
{
	read_body(s);
	struct wsp_plan *p = s->plan ? plan_of(w, cur_owner(s), cur_repo(s), s->plan) : NULL;
	if (!p || !s->task)
		return false;
	const struct plan_task_state *st = plan_state_find(p->st, p->plan.n_tasks, s->task);
	if (!st)
		return false;
	if (st->status != PLAN_COMPLETED)
		return st->pr == 0 || st->pr == (int)s->pr.number;
	/* every task done and the plan open: completed by one agent, the
	 * author of the latest marker (the last done), so two agents whose
	 * merges crossed do not both complete it */
	for (size_t k = 0; k < p->plan.n_tasks; k++)
		if (p->st[k].status != PLAN_COMPLETED)
			return false;
	return strcasecmp(p->last_author, w->login) == 0;
}

/* A closed PR's conversations (its thread, its review) are concluded: the
 * store drops them unless something was said after the close. The thread's
 * messages carry GitHub's times, in whole seconds like closed_at: one in the
 * second of the close is before it. The review's carry our clock (the walk's
 * start, the review sent): CONCLUDE_REVIEW_SLACK_MS allows for our clock
 * being ahead of GitHub's; nothing is added to it once the PR is closed (a
 * closed PR is not reviewed). */
#define CONCLUDE_REVIEW_SLACK_MS 60000
static void conclude(struct wsp *w, const char *owner, const char *repo, const struct gh_pull *pr)
{
	struct conv_store *cs = w->c.store ? w->c.store(w->c.ud) : NULL;
	if (!cs || pr->open || pr->closed_ms <= 0)
		return;
	char key[GH_OWNER_MAX + GH_REPO_MAX + 48];
	snprintf(key, sizeof key, "github:%s/%s#%" PRId64, owner, repo, pr->number);
	conv_store_conclude(cs, key, pr->closed_ms + 999);
	snprintf(key, sizeof key, "github:%s/%s#%" PRId64 ":review", owner, repo, pr->number);
	conv_store_conclude(cs, key, pr->closed_ms + CONCLUDE_REVIEW_SLACK_MS);
}

static void next_pr(struct prs *s)
{
	struct wsp *w = s->a->w;
	if (!w || w->quiescing) {
		step_end(s);
		return;
	}
	int n = cJSON_GetArraySize(s->list);
	while (s->li < n) {
		const cJSON *o = cJSON_GetArrayItem(s->list, s->li);
		struct ga_err err = {{0}};
		if (gh_pull_parse(o, &s->pr, &err) != 0) {
			s->li++;
			continue;
		}
		s->have_pr = true;
		bool ours = strcasecmp(s->pr.user, w->login) == 0;
		struct ga_err e2 = {{0}};
		if (s->closed_pass) {
			conclude(w, cur_owner(s), cur_repo(s), &s->pr);
			if (ours && s->pr.merged && merge_unfinished(w, s)) {
				read_reviews(s, on_reviews);
				return;
			}
		} else if (!s->pr.draft && ours) {
			if (gh_pull_get(w->c.gh, cur_owner(s), cur_repo(s), s->pr.number, on_pull,
			                s, &e2) != 0)
				return;
			wsp_error(w, "PR #%" PRId64 " was not asked for: %s", s->pr.number, e2.msg);
		} else if (!s->pr.draft && requested_of_me(&s->pr, w->login)) {
			struct wsp_agents ag;
			wsp_workspace_agents(w, cur_owner(s), cur_repo(s), &ag);
			if (wsp_agents_has(&ag, s->pr.user)) {
				read_reviews(s, on_their_reviews);
				return;
			}
		}
		pr_clear(s);
		s->li++;
	}
	cJSON_Delete(s->list);
	s->list = NULL;
	if (!s->closed_pass) {
		s->closed_pass = true;
	} else {
		s->closed_pass = false;
		s->wi++;
	}
	step_ws(s);
}

static void on_list(void *ud, const struct gh_result *res)
{
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	if (!w) {
		step_end(s);
		return;
	}
	if (res->kind != GH_OK || !cJSON_IsArray(res->json)) {
		wsp_error(w, "the %s PRs of %s/%s were not read",
		          s->closed_pass ? "closed" : "open", cur_owner(s), cur_repo(s));
		s->list = cJSON_CreateArray();
	} else {
		s->list = cJSON_Duplicate(res->json, true);
	}
	s->li = 0;
	next_pr(s);
}

static void step_ws(struct prs *s)
{
	struct wsp *w = s->a->w;
	while (w && !w->quiescing && s->wi < s->nws) {
		if (!wsp_watch_find(&w->watch, cur_owner(s), cur_repo(s))) {
			s->wi++;
			s->closed_pass = false;
			continue;
		}
		struct gh_pull_query q = {.state = s->closed_pass ? "closed" : "open",
		                          .sort = "updated",
		                          .direction = "desc",
		                          .max_items =
		                                  s->closed_pass ? PR_CLOSED_MAX : PR_LIST_MAX};
		struct ga_err err = {{0}};
		if (gh_pulls_list(w->c.gh, cur_owner(s), cur_repo(s), &q, on_list, s, &err) != 0)
			return;
		wsp_error(w, "the PRs of %s/%s were not asked for: %s", cur_owner(s), cur_repo(s),
		          err.msg);
		s->wi++;
		s->closed_pass = false;
	}
	step_end(s);
}

void wsp_pr_step(struct wsp *w, void (*done)(void *ud), void *ud)
{
	if (w->pr_stepping || w->quiescing || w->watch.n == 0) {
		if (done)
			done(ud);
		return;
	}
	struct prs *s = xcalloc(1, sizeof *s);
	s->a = wsp_hold(w);
	s->done = done;
	s->ud = ud;
	s->t0 = time_now_ms();
	for (size_t i = 0; i < w->watch.n && i < WSP_MAX_WATCHED; i++) {
		snprintf(s->ws[i].owner, sizeof s->ws[i].owner, "%s", w->watch.w[i].owner);
		snprintf(s->ws[i].repo, sizeof s->ws[i].repo, "%s", w->watch.w[i].repo);
		s->nws++;
	}
	w->pr_stepping = true;
	step_ws(s);
}

/* github_merge_pr: the PR read; ours and open (or merged: what follows
 * is made sure of) → its reviews → the merge path. */
static void on_tool_pull(void *ud, const struct gh_result *res)
{
	struct prs *s = ud;
	struct wsp *w = s->a->w;
	struct ga_err err = {{0}};
	if (!w || res->kind != GH_OK || gh_pull_parse(res->json, &s->pr, &err) != 0) {
		snprintf(s->answer_text, sizeof s->answer_text,
		         "the pull request could not be read: %.300s",
		         res->kind == GH_OK ? err.msg : gh_error_kind_name(res->kind));
		step_end(s);
		return;
	}
	s->have_pr = true;
	if (strcasecmp(s->pr.user, w->login) != 0) {
		snprintf(s->answer_text, sizeof s->answer_text,
		         "#%" PRId64 " was opened by @%s: only its creator merges a pull request "
		         "(review it instead)",
		         s->pr.number, s->pr.user);
		step_end(s);
		return;
	}
	if (!s->pr.open && !s->pr.merged) {
		snprintf(s->answer_text, sizeof s->answer_text,
		         "#%" PRId64 " is closed without a merge: nothing to merge", s->pr.number);
		step_end(s);
		return;
	}
	read_reviews(s, on_reviews);
}

int wsp_merge_pr(struct wsp *w, const char *owner, const char *repo, int64_t pr,
                 wsp_answer_fn answer, void *ud, struct ga_err *err)
{
	if (!owner || !repo || !*owner || !*repo || pr <= 0)
		return err_set(err, "owner, repo and a pull_number >= 1 are required");
	if (!wsp_watch_find(&w->watch, owner, repo))
		return err_set(err,
		               "%.100s/%.100s is not a watched workspace: only workspace pull "
		               "requests are merged here",
		               owner, repo);
	if (w->tool_calls >= WSP_MAX_TOOL_CALLS)
		return err_set(err, "too many workspace requests at once; try again in a minute");
	struct prs *s = xcalloc(1, sizeof *s);
	s->a = wsp_hold(w);
	s->answer = answer;
	s->answer_ud = ud;
	s->t0 = time_now_ms();
	snprintf(s->ws[0].owner, sizeof s->ws[0].owner, "%s", owner);
	snprintf(s->ws[0].repo, sizeof s->ws[0].repo, "%s", repo);
	s->nws = 1;
	s->pr.number = pr;
	w->tool_calls++;
	if (gh_pull_get(w->c.gh, owner, repo, pr, on_tool_pull, s, err) == 0) {
		w->tool_calls--;
		wsp_drop(s->a);
		free(s);
		return -1;
	}
	return 0;
}

void wsp_pr_revised(struct wsp *w, const char *owner, const char *repo, int plan, int task,
                    int64_t pr, bool pushed, const struct decision *d)
{
	struct decision n;
	if (pushed) {
		decision_set(&n, VERDICT_SENT, "pr_revised",
		             "PR #%" PRId64
		             " revised after the review: %s (its review is asked again)",
		             pr, d->reason);
		wsp_note(w, owner, repo, plan, task, STAGE_OUTBOUND, &n);
		return;
	}
	decision_set(&n, VERDICT_FAIL, "pr_revised", "the revision of PR #%" PRId64 " failed: %s",
	             pr, d->reason);
	wsp_note(w, owner, repo, plan, task, STAGE_OUTBOUND, &n);
	/* the owner's now: told once (the key), on the PR */
	char target[WSP_REPO_FULL_MAX + 48], key[WSP_KEY_MAX + 1];
	target_of(target, sizeof target, owner, repo, "pr", pr);
	wsp_pr_key(key, sizeof key, "owner", owner, repo, pr, NULL, NULL);
	char text[DECISION_REASON_MAX + 200];
	snprintf(text, sizeof text,
	         "This pull request is left to the workspace's owner: the revision after the "
	         "review did not succeed (%s). An approving review from the owner lets me merge "
	         "it.",
	         d->reason);
	w->n.handed_over++;
	wsp_tell_owner(w, "PR #%" PRId64 " of %s/%s: the revision failed, it waits for you", pr,
	               owner, repo);
	struct wsp_send s = {.target = target, .text = text, .key = key};
	wsp_send(w, &s, NULL, NULL);
}
