/* The workspace engine: life, the watch list, discovery, the plan-awareness
 * cycle and the status. See workspace.h. */
#include "modules/workspace/workspace.h"

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
#include "modules/coder/coder.h"
#include "modules/conversation/store.h"
#include "modules/coord/coord.h"
#include "modules/journal/journal.h"
#include "modules/workspace/wsp_int.h"
#include "modules/workspace/wsp_view.h"

static const char *or_default(const char *s, const char *def)
{
	return s && *s ? s : def;
}

struct wsp *wsp_new(const struct wsp_config *c, struct ga_err *err)
{
	if (!c || !c->loop || !c->gh || !c->outbound || !c->journal || !c->st || !c->login ||
	    !*c->login) {
		err_set(err, "the workspace engine needs the loop, GitHub, outbound, the journal, "
		             "the state store and the agent's GitHub login");
		return NULL;
	}
	if (!plan_valid_login(c->login)) {
		err_set(err, "AGENT_GITHUB_USERNAME '%.60s' is not a GitHub login", c->login);
		return NULL;
	}
	if (c->owner_login && *c->owner_login && !plan_valid_login(c->owner_login)) {
		err_set(err, "OWNER_GITHUB_USERNAME '%.60s' is not a GitHub login", c->owner_login);
		return NULL;
	}
	struct wsp *w = xcalloc(1, sizeof *w);
	w->c = *c;
	snprintf(w->owner_login, sizeof w->owner_login, "%s", c->owner_login ? c->owner_login : "");
	w->c.owner_login = w->owner_login;
	w->login = xstrdup(c->login);
	w->agent_name = xstrdup(or_default(c->agent_name, c->login));
	w->api_url = xstrdup(or_default(c->api_url, "https://api.github.com"));
	w->token = c->token ? xstrdup(c->token) : NULL;
	w->work_root = c->work_root ? xstrdup(c->work_root) : NULL;
	w->prefix = xstrdup(or_default(c->prefix, WSP_DEFAULT_PREFIX));
	w->template_repo = xstrdup(or_default(c->template_repo, WSP_DEFAULT_TEMPLATE));
	w->default_org = xstrdup(or_default(c->default_org, WSP_DEFAULT_ORG));
	w->c.login = w->login;
	w->c.agent_name = w->agent_name;
	if (w->c.claim_ttl_ms <= 0)
		w->c.claim_ttl_ms = WSP_CLAIM_TTL_MS;
	if (w->c.orphan_ms <= 0)
		w->c.orphan_ms = WSP_ORPHAN_MS;
	if (w->c.handled_ms <= 0)
		w->c.handled_ms = WSP_HANDLED_MS;
	if (w->c.stale_ms <= 0)
		w->c.stale_ms = WSP_STALE_MS;
	w->anchor = xcalloc(1, sizeof *w->anchor);
	w->anchor->w = w;
	w->anchor->refs = 1;
	if (wsp_watchlist_load(&w->watch, c->st, err) != 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "watched workspaces not read", "error", err->msg);
	err_clear(err);
	/* what the room and Bluesky said before this start is not discovery */
	w->scanned_ms = time_now_ms();
	return w;
}

void wsp_quiesce(struct wsp *w)
{
	if (!w || w->quiescing)
		return;
	w->quiescing = true;
	wsp_run_cancel(w);
	wsp_life_quiesce(w);
}

void wsp_free(struct wsp *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nplans; i++)
		wsp_plan_free(w->plans[i]);
	wsp_watchlist_free(&w->watch);
	cJSON_Delete(w->life);
	struct wsp_anchor *a = w->anchor;
	a->w = NULL;
	if (--a->refs <= 0)
		free(a);
	free(w->login);
	free(w->agent_name);
	free(w->api_url);
	free(w->token);
	free(w->work_root);
	free(w->prefix);
	free(w->template_repo);
	free(w->default_org);
	free(w);
}

bool wsp_busy(const struct wsp *w)
{
	return w && w->run != NULL;
}

static bool can_work(const struct wsp *w)
{
	return w->c.git && w->work_root && w->c.coder && w->c.coder->configured && w->c.skills;
}

static void save_watch(struct wsp *w)
{
	struct ga_err err = {{0}};
	if (wsp_watchlist_save(&w->watch, w->c.st, time_now_ms(), &err) != 0)
		wsp_error(w, "the watched workspaces were not saved: %s", err.msg);
}

int wsp_watch(struct wsp *w, const char *owner, const char *repo, enum wsp_source src,
              const char *thread, struct ga_err *err)
{
	int rc = wsp_watch_add(&w->watch, owner, repo, src, thread, time_now_ms(), err);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		save_watch(w);
		struct decision d;
		decision_set(&d, VERDICT_INFO, "workspace_watched", "%s/%s is watched (%s)", owner,
		             repo, wsp_source_name(src));
		wsp_note(w, owner, repo, 0, 0, STAGE_EVENT, &d);
	}
	if (w->c.poke)
		w->c.poke(w->c.ud);
	return rc;
}

/* The plans of workspaces no longer watched are forgotten. Not while a
 * cycle runs: it borrows plans (a lapsed claim's reset); the cycle calls
 * this itself before it chooses a task and when it ends. */
static void drop_unwatched_plans(struct wsp *w)
{
	size_t k = 0;
	for (size_t i = 0; i < w->nplans; i++) {
		struct wsp_plan *p = w->plans[i];
		if (wsp_watch_find(&w->watch, p->owner, p->repo))
			w->plans[k++] = p;
		else
			wsp_plan_free(p);
	}
	w->nplans = k;
}

int wsp_unwatch(struct wsp *w, const char *owner, const char *repo)
{
	if (wsp_watch_remove(&w->watch, owner, repo) != 1)
		return 0;
	if (!w->cycling)
		drop_unwatched_plans(w);
	save_watch(w);
	struct decision d;
	decision_set(&d, VERDICT_INFO, "workspace_unwatched", "%s/%s is no longer watched", owner,
	             repo);
	wsp_note(w, owner, repo, 0, 0, STAGE_EVENT, &d);
	return 1;
}

/* --- discovery ---------------------------------------------------------------------------- */

/* Where a conversation key comes from: the room, the owner, Bluesky. */
static int source_of_key(const char *key)
{
	if (strncmp(key, "space:", 6) == 0)
		return WSP_SOURCE_ROOM;
	if (strncmp(key, "owner:", 6) == 0)
		return WSP_SOURCE_OWNER;
	if (strncmp(key, "github:", 7) == 0)
		return WSP_SOURCE_GITHUB;
	return WSP_SOURCE_BLUESKY;
}

/* New messages of people we take work from (the owner, the room's host,
 * peer agents) naming a workspace. A stranger's link is not a reason to
 * run a coder on a repository. */
static void discover(struct wsp *w)
{
	struct conv_store *s = w->c.store ? w->c.store(w->c.ud) : NULL;
	if (!s)
		return;
	int64_t upto = w->scanned_ms;
	size_t nc = conv_store_count(s);
	for (size_t i = 0; i < nc; i++) {
		size_t nm = 0;
		int64_t last = 0;
		const char *key = conv_store_key_at(s, i, &nm, &last);
		if (!key || last <= w->scanned_ms)
			continue;
		int src = source_of_key(key);
		for (size_t k = 0; k < nm; k++) {
			const struct conv_message *m = conv_store_message_at(s, key, k);
			if (!m || m->time_ms <= w->scanned_ms || !m->text)
				continue;
			if (m->time_ms > upto)
				upto = m->time_ms;
			if (m->author_kind != CONV_AUTHOR_OWNER &&
			    m->author_kind != CONV_AUTHOR_HOST &&
			    m->author_kind != CONV_AUTHOR_PEER)
				continue;
			struct wsp_ref refs[4];
			size_t nr = wsp_find_refs(m->text, w->prefix, refs, 4);
			for (size_t r = 0; r < nr; r++) {
				struct ga_err err = {{0}};
				if (src != WSP_SOURCE_OWNER &&
				    wsp_watch_unwatched(&w->watch, refs[r].owner, refs[r].repo)) {
					log_kv(LOG_LEVEL_DEBUG, LOG_COMP,
					       "a workspace the owner unwatched is named: not "
					       "watched",
					       "repo", refs[r].repo, "from", key);
					continue;
				}
				if (wsp_watch(w, refs[r].owner, refs[r].repo, (enum wsp_source)src,
				              key, &err) < 0)
					wsp_error(w, "%s", err.msg);
			}
		}
	}
	w->scanned_ms = upto;
}

/* --- the cycle ------------------------------------------------------------------------------ */

struct cyc {
	struct wsp_anchor *a;
	void (*done)(void *ud);
	void *ud;
	/* The workspace being read, by name: the watch list may change while
	 * an answer is awaited (the owner watches or unwatches one). */
	struct wsp_ref cur;
	struct wsp_ref polled[WSP_MAX_WATCHED]; /* read (or tried) in this cycle */
	size_t npolled;
	cJSON *issues; /* the current workspace's plan issues */
	int pi;
	struct wsp_plan *fresh[WSP_MAX_PLANS_SEEN];
	size_t nfresh;
	struct gh_stats before;
	int64_t t0;
	bool owner_noted;
};

static void cyc_next_ws(struct cyc *cy);

static void cyc_end(struct cyc *cy)
{
	struct wsp *w = wsp_drop(cy->a);
	if (w) {
		struct gh_stats after;
		gh_client_stats(w->c.gh, &after);
		w->last.at_ms = time_now_ms();
		w->last.ms = w->last.at_ms - cy->t0;
		w->last.requests = after.requests - cy->before.requests;
		w->last.not_modified = after.not_modified - cy->before.not_modified;
		w->last.plans = w->nplans;
		w->cycling = false;
		drop_unwatched_plans(w);
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "plan cycle done", "ms", LOG_INT(w->last.ms),
		       "requests", LOG_INT((int64_t)w->last.requests), "not_modified",
		       LOG_INT((int64_t)w->last.not_modified), "plans",
		       LOG_INT((int64_t)w->nplans));
	}
	cJSON_Delete(cy->issues);
	for (size_t i = 0; i < cy->nfresh; i++)
		wsp_plan_free(cy->fresh[i]);
	void (*done)(void *) = cy->done;
	void *ud = cy->ud;
	free(cy);
	if (done)
		done(ud);
}

/* The plans of the current workspace are replaced by the fresh ones. */
static void replace_plans(struct wsp *w, struct cyc *cy)
{
	size_t k = 0;
	for (size_t i = 0; i < w->nplans; i++) {
		struct wsp_plan *p = w->plans[i];
		if (strcasecmp(p->owner, cy->cur.owner) == 0 &&
		    strcasecmp(p->repo, cy->cur.repo) == 0)
			wsp_plan_free(p);
		else
			w->plans[k++] = p;
	}
	w->nplans = k;
	for (size_t i = 0; i < cy->nfresh; i++) {
		if (w->nplans < WSP_MAX_PLANS) {
			w->plans[w->nplans++] = cy->fresh[i];
		} else {
			w->plans_dropped++;
			wsp_plan_free(cy->fresh[i]);
		}
	}
	cy->nfresh = 0;
}

/* The tasks of a plan: number, title, status, assignee, pr, prUrl (and
 * attempt, failures for the status). */
static cJSON *tasks_json(const struct wsp_plan *p, bool full)
{
	cJSON *tasks = cJSON_CreateArray();
	for (size_t i = 0; i < p->plan.n_tasks; i++) {
		const struct plan_task_state *t = &p->st[i];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "number", t->task);
		cJSON_AddStringToObject(e, "title", p->plan.tasks[i].title);
		cJSON_AddStringToObject(e, "status", plan_status_name(t->status));
		if (t->assignee[0])
			cJSON_AddStringToObject(e, "assignee", t->assignee);
		if (full) {
			cJSON_AddNumberToObject(e, "attempt", t->attempt);
			cJSON_AddNumberToObject(e, "failures", t->failures);
		}
		if (t->pr > 0) {
			char url[GH_URL_MAX];
			snprintf(url, sizeof url, "https://github.com/%s/%s/pull/%d", p->owner,
			         p->repo, t->pr);
			cJSON_AddNumberToObject(e, "pr", t->pr);
			cJSON_AddStringToObject(e, "prUrl", url);
		}
		cJSON_AddItemToArray(tasks, e);
	}
	return tasks;
}

/* The room hears the state of each plan whose counts changed. */
static void broadcast_state(struct wsp *w, const struct wsp_plan *p)
{
	if (!w->c.room_state)
		return;
	char key[sizeof w->sent[0].key];
	snprintf(key, sizeof key, "%s/%s#%d", p->owner, p->repo, p->number);
	struct wsp_sent *s = NULL;
	for (size_t i = 0; i < w->nsent && !s; i++)
		if (strcmp(w->sent[i].key, key) == 0)
			s = &w->sent[i];
	int64_t now = time_now_ms();
	char repo[WSP_REPO_FULL_MAX];
	snprintf(repo, sizeof repo, "%s/%s", p->owner, p->repo);
	/* the plan's pull requests as the status has them: a change of
	 * state or of who acts next is news for the room too */
	cJSON *st = wsp_status(w);
	cJSON *pulls = wsp_view_plan_pulls(st, repo, p->number);
	cJSON_Delete(st);
	uint64_t ph = wsp_view_pulls_hash(pulls);
	if (s && memcmp(&s->c, &p->counts, sizeof s->c) == 0 && s->pulls == ph &&
	    now - s->at_ms < WSP_STATE_RESEND_MS) {
		cJSON_Delete(pulls);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "workspace", repo);
	cJSON_AddNumberToObject(o, "plan", p->number);
	cJSON_AddNumberToObject(o, "total", p->counts.total);
	cJSON_AddNumberToObject(o, "completed", p->counts.completed);
	cJSON_AddNumberToObject(o, "blocked", p->counts.blocked);
	cJSON_AddNumberToObject(o, "inProgress", p->counts.in_progress);
	cJSON_AddItemToObject(o, "tasks", tasks_json(p, false));
	cJSON_AddItemToObject(o, "pulls", pulls);
	int rc = w->c.room_state(w->c.ud, o);
	cJSON_Delete(o);
	if (rc != 0)
		return;
	w->n.states_sent++;
	if (!s) {
		if (w->nsent >= WSP_SENT_MAX) {
			memmove(&w->sent[0], &w->sent[1], (WSP_SENT_MAX - 1) * sizeof w->sent[0]);
			w->nsent--;
		}
		s = &w->sent[w->nsent++];
		snprintf(s->key, sizeof s->key, "%s", key);
	}
	s->c = p->counts;
	s->pulls = ph;
	s->at_ms = now;
}

/* --- duplicates ----------------------------------------------------------------------------- */

struct dup_op {
	struct wsp_anchor *a;
	char owner[GH_OWNER_MAX + 1], repo[GH_REPO_MAX + 1];
	int number, by;
};

static void dup_closed(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct dup_op *op = ud;
	struct wsp *w = wsp_drop(op->a);
	if (w) {
		struct decision d;
		if (ok) {
			w->n.superseded++;
			decision_set(&d, VERDICT_SENT, "plan_superseded",
			             "plan #%d closed: superseded by #%d", op->number, op->by);
		} else {
			decision_set(&d, VERDICT_FAIL, "plan_superseded", "plan #%d not closed: %s",
			             op->number, why ? why : "?");
		}
		wsp_note(w, op->owner, op->repo, op->number, 0, STAGE_OUTBOUND, &d);
	}
	free(op);
}

static void dup_commented(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct dup_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || !ok) {
		dup_closed(op, false, NULL, why ? why : "stopping");
		return;
	}
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:edit:%d", op->owner, op->repo, op->number);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "supersede-labels", op->owner, op->repo, op->number, 0, 0);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "op", "labels");
	cJSON *l = cJSON_AddArrayToObject(extra, "labels");
	cJSON_AddItemToArray(l, cJSON_CreateString(PLAN_LABEL));
	cJSON_AddItemToArray(l, cJSON_CreateString(PLAN_LABEL_SUPERSEDED));
	char text[96];
	snprintf(text, sizeof text, "plan #%d labelled superseded", op->number);
	struct wsp_send s = {.target = target, .text = text, .key = key, .extra = extra};
	wsp_send(w, &s, NULL, NULL);
	cJSON_Delete(extra);
	cJSON *close = cJSON_CreateObject();
	cJSON_AddStringToObject(close, "op", "issue");
	cJSON_AddStringToObject(close, "state", "closed");
	cJSON_AddStringToObject(close, "state_reason", "not_planned");
	wsp_key(key, sizeof key, "supersede-close", op->owner, op->repo, op->number, 0, 0);
	snprintf(text, sizeof text, "plan #%d closed as superseded by #%d", op->number, op->by);
	struct wsp_send s2 = {.target = target, .text = text, .key = key, .extra = close};
	wsp_send(w, &s2, dup_closed, op);
	cJSON_Delete(close);
}

static void on_dup_lock(void *ud, enum coord_result res, const char *holder, const char *why)
{
	(void)holder;
	(void)why;
	struct dup_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res != COORD_WON) {
		wsp_drop(op->a);
		free(op);
		return;
	}
	/* The lock is left to lapse: another agent that asks within its TTL
	 * stands down, and by then the plan is closed. */
	char text[300];
	snprintf(text, sizeof text,
	         "Superseded by #%d, which has the same title. Closing this one so every agent "
	         "works from one plan.",
	         op->by);
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:issue:%d", op->owner, op->repo, op->number);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "supersede", op->owner, op->repo, op->number, 0, 0);
	struct wsp_send s = {.target = target, .text = text, .key = key};
	wsp_send(w, &s, dup_commented, op);
}

static void consolidate(struct wsp *w, const struct wsp_watch *ww)
{
	struct wsp_plan_brief b[WSP_MAX_PLANS_SEEN];
	size_t n = 0;
	for (size_t i = 0; i < w->nplans && n < WSP_MAX_PLANS_SEEN; i++) {
		const struct wsp_plan *p = w->plans[i];
		if (strcasecmp(p->owner, ww->owner) == 0 && strcasecmp(p->repo, ww->repo) == 0)
			b[n++] = (struct wsp_plan_brief){p->number, p->plan.title, p->touched};
	}
	struct wsp_supersede sup[WSP_MAX_PLANS_SEEN];
	size_t ns = wsp_plan_duplicates(b, n, sup, WSP_MAX_PLANS_SEEN);
	struct coord *c = wsp_coord(w);
	for (size_t i = 0; i < ns; i++) {
		struct dup_op *op = xcalloc(1, sizeof *op);
		op->a = wsp_hold(w);
		snprintf(op->owner, sizeof op->owner, "%s", ww->owner);
		snprintf(op->repo, sizeof op->repo, "%s", ww->repo);
		op->number = sup[i].number;
		op->by = sup[i].by;
		char lock[COORD_MAX_KEY];
		snprintf(lock, sizeof lock, "plan-close:%s/%s#%d", ww->owner, ww->repo, op->number);
		if (!c)
			on_dup_lock(op, COORD_WON, NULL, NULL);
		else if (coord_claim(c, lock, w->c.claim_ttl_ms * 5, on_dup_lock, op) != 0)
			on_dup_lock(op, COORD_UNAVAILABLE, NULL, "not asked");
	}
}

/* --- per workspace -------------------------------------------------------------------------- */

static void cyc_ws_done(struct cyc *cy)
{
	struct wsp *w = cy->a->w;
	if (!w) {
		cyc_end(cy);
		return;
	}
	struct wsp_watch *ww = wsp_watch_find(&w->watch, cy->cur.owner, cy->cur.repo);
	if (!ww) {
		/* unwatched while it was read: what was read is dropped */
		for (size_t i = 0; i < cy->nfresh; i++)
			wsp_plan_free(cy->fresh[i]);
		cy->nfresh = 0;
	} else {
		int nums[WSP_MAX_PLANS_SEEN];
		for (size_t i = 0; i < cy->nfresh; i++)
			nums[i] = cy->fresh[i]->number;
		wsp_watch_set_plans(ww, nums, cy->nfresh, time_now_ms());
		replace_plans(w, cy);
		consolidate(w, ww);
		for (size_t i = 0; i < w->nplans; i++) {
			struct wsp_plan *p = w->plans[i];
			if (strcasecmp(p->owner, ww->owner) != 0 ||
			    strcasecmp(p->repo, ww->repo) != 0)
				continue;
			wsp_sync_body(w, p, false);
			broadcast_state(w, p);
		}
	}
	cJSON_Delete(cy->issues);
	cy->issues = NULL;
	cyc_next_ws(cy);
}

static void cyc_next_plan(struct cyc *cy);

static void on_plan_comments(void *ud, const struct gh_result *res)
{
	struct cyc *cy = ud;
	struct wsp *w = cy->a->w;
	if (!w) {
		cyc_end(cy);
		return;
	}
	const struct wsp_ref *ww = &cy->cur;
	const cJSON *issue = cJSON_GetArrayItem(cy->issues, cy->pi);
	struct decision d;
	if (res->kind != GH_OK) {
		decision_set(&d, VERDICT_FAIL, "plan_comments", "the comments of #%d: %s",
		             (int)json_int_or(issue, "number", 0), res->msg);
		wsp_note(w, ww->owner, ww->repo, (int)json_int_or(issue, "number", 0), 0,
		         STAGE_EVENT, &d);
	} else {
		struct wsp_events e;
		wsp_events_read(&e, res->json);
		struct wsp_plan *p =
		        wsp_plan_new(ww->owner, ww->repo, issue, &e, time_now_ms(), &d);
		wsp_events_free(&e);
		if (p && cy->nfresh < WSP_MAX_PLANS_SEEN)
			cy->fresh[cy->nfresh++] = p;
		else
			wsp_plan_free(p);
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, d.reason, "rule", d.rule);
	}
	cy->pi++;
	cyc_next_plan(cy);
}

static void cyc_next_plan(struct cyc *cy)
{
	struct wsp *w = cy->a->w;
	if (!w || w->quiescing) {
		cyc_end(cy);
		return;
	}
	const struct wsp_ref *ww = &cy->cur;
	int n = cJSON_GetArraySize(cy->issues);
	/* unwatched meanwhile: no more of its comments (cyc_ws_done drops
	 * what was read) */
	while (cy->pi < n && wsp_watch_find(&w->watch, ww->owner, ww->repo)) {
		const cJSON *issue = cJSON_GetArrayItem(cy->issues, cy->pi);
		int64_t number = json_int_or(issue, "number", 0);
		struct ga_err err = {{0}};
		if (gh_comments_list(w->c.gh, ww->owner, ww->repo, number, WSP_MAX_COMMENTS,
		                     on_plan_comments, cy, &err) != 0)
			return;
		wsp_error(w, "the comments of %s/%s#%" PRId64 " were not asked for: %s", ww->owner,
		          ww->repo, number, err.msg);
		cy->pi++;
	}
	cyc_ws_done(cy);
}

static void on_plan_issues(void *ud, const struct gh_result *res)
{
	struct cyc *cy = ud;
	struct wsp *w = cy->a->w;
	if (!w) {
		cyc_end(cy);
		return;
	}
	if (!wsp_watch_find(&w->watch, cy->cur.owner, cy->cur.repo)) {
		cyc_next_ws(cy); /* unwatched while its plans were asked for */
		return;
	}
	if (res->kind != GH_OK) {
		struct decision d;
		decision_set(&d, VERDICT_FAIL, "plan_list", "the plans of %s/%s were not read: %s",
		             cy->cur.owner, cy->cur.repo, res->msg);
		wsp_note(w, cy->cur.owner, cy->cur.repo, 0, 0, STAGE_EVENT, &d);
		cyc_next_ws(cy);
		return;
	}
	/* newest first (the list's order); pull requests and non-plans out */
	cy->issues = cJSON_CreateArray();
	const cJSON *it;
	cJSON_ArrayForEach(it, res->json)
	{
		if (cJSON_GetObjectItemCaseSensitive(it, "pull_request"))
			continue;
		if (!plan_is_plan(json_string_or(it, "title", ""),
		                  json_string_or(it, "body", NULL)))
			continue;
		if (cJSON_GetArraySize(cy->issues) >= WSP_MAX_PLANS_SEEN)
			break;
		cJSON_AddItemToArray(cy->issues, cJSON_Duplicate(it, 1));
	}
	cy->pi = 0;
	cy->nfresh = 0;
	cyc_next_plan(cy);
}

/* --- after the poll: the lifecycle, recovery, then a task ------------------------------------ */

static void cyc_choose(struct cyc *cy);

static void cyc_recovered(void *ud, bool acted)
{
	struct cyc *cy = ud;
	if (acted)
		cyc_end(cy); /* §3.6: a plan changed under the snapshot; the next cycle reads it */
	else
		cyc_choose(cy);
}

static void cyc_lived(void *ud, bool acted)
{
	struct cyc *cy = ud;
	struct wsp *w = cy->a->w;
	if (!w || acted)
		cyc_end(cy);
	else
		wsp_recover_step(w, cyc_recovered, cy);
}

static void on_claim_settled(void *ud)
{
	cyc_end(ud);
}

static void on_late_review(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct wsp *w = wsp_drop(ud);
	if (w && !ok)
		wsp_error(w, "a review request was not made: %s", why ? why : "?");
}

/* Our open PRs without a requested reviewer (none was known when the PR
 * was opened, or a restart came between): the designated one is asked now
 * that the markers name other agents. Once per PR (the journal's key). */
static void request_late_reviews(struct wsp *w)
{
	for (size_t i = 0; i < w->nplans; i++) {
		struct wsp_plan *p = w->plans[i];
		for (size_t k = 0; k < p->plan.n_tasks; k++) {
			const struct plan_task_state *t = &p->st[k];
			if (t->pr <= 0 || strcasecmp(t->assignee, w->login) != 0)
				continue;
			char key[WSP_KEY_MAX + 1];
			wsp_key(key, sizeof key, "review-rq", p->owner, p->repo, t->pr, 0, 0);
			if (journal_state_of(w->c.journal, key) != JOURNAL_NONE &&
			    journal_state_of(w->c.journal, key) != JOURNAL_FAILED)
				continue;
			char who[PLAN_LOGIN_MAX];
			struct wsp_anchor *a = wsp_hold(w);
			if (wsp_request_review(w, p->owner, p->repo, p->number, t->task, t->pr, who,
			                       sizeof who, on_late_review, a) != 0)
				wsp_drop(a);
		}
	}
}

static void cyc_choose(struct cyc *cy)
{
	struct wsp *w = cy->a->w;
	if (w)
		drop_unwatched_plans(w);
	if (w && !w->quiescing)
		request_late_reviews(w);
	if (!w || w->quiescing || w->run || !can_work(w) || (w->c.paused && w->c.paused(w->c.ud))) {
		cyc_end(cy);
		return;
	}
	/* ours first: a task we hold without a PR was cut by a restart */
	for (size_t i = 0; i < w->nplans; i++) {
		struct wsp_plan *p = w->plans[i];
		for (size_t k = 0; k < p->plan.n_tasks; k++) {
			const struct plan_task_state *t = &p->st[k];
			if ((t->status == PLAN_CLAIMED || t->status == PLAN_IN_PROGRESS) &&
			    t->pr == 0 && strcasecmp(t->assignee, w->login) == 0) {
				wsp_claim(w, p, t->task, t->attempt, true, on_claim_settled, cy);
				return;
			}
		}
	}
	struct plan_candidate cand[WSP_MAX_PLANS];
	size_t n = 0;
	for (size_t i = 0; i < w->nplans; i++)
		cand[n++] = (struct plan_candidate){w->plans[i]->number, &w->plans[i]->plan,
		                                    w->plans[i]->st};
	struct plan_choice ch;
	plan_choose(cand, n, &ch);
	if (!ch.found) {
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "no task to claim", "why", ch.d.reason);
		cyc_end(cy);
		return;
	}
	struct wsp_plan *p = w->plans[ch.candidate];
	wsp_note(w, p->owner, p->repo, p->number, ch.task, STAGE_GATE, &ch.d);
	wsp_claim(w, p, ch.task, ch.next_attempt, false, on_claim_settled, cy);
}

/* The next watched workspace this cycle has not read (one watched while
 * the cycle runs included), or NULL. */
static const struct wsp_watch *next_unpolled(const struct cyc *cy, const struct wsp *w)
{
	if (cy->npolled >= WSP_MAX_WATCHED)
		return NULL;
	for (size_t i = 0; i < w->watch.n; i++) {
		const struct wsp_watch *ww = &w->watch.w[i];
		bool seen = false;
		for (size_t k = 0; k < cy->npolled && !seen; k++)
			seen = strcasecmp(cy->polled[k].owner, ww->owner) == 0 &&
			       strcasecmp(cy->polled[k].repo, ww->repo) == 0;
		if (!seen)
			return ww;
	}
	return NULL;
}

/* The pull requests first (a merge may complete a plan the lifecycle then
 * sees), then the lifecycle, recovery and a task. */
static void cyc_prs_done(void *ud)
{
	struct cyc *cy = ud;
	struct wsp *w = cy->a->w;
	if (!w) {
		cyc_end(cy);
		return;
	}
	wsp_life_step(w, cyc_lived, cy);
}

static void cyc_next_ws(struct cyc *cy)
{
	struct wsp *w = cy->a->w;
	if (!w || w->quiescing) {
		cyc_end(cy);
		return;
	}
	const struct wsp_watch *ww;
	while ((ww = next_unpolled(cy, w))) {
		snprintf(cy->cur.owner, sizeof cy->cur.owner, "%s", ww->owner);
		snprintf(cy->cur.repo, sizeof cy->cur.repo, "%s", ww->repo);
		cy->polled[cy->npolled++] = cy->cur;
		struct gh_issue_query q = {.state = "open",
		                           .labels = PLAN_LABEL,
		                           .sort = "created",
		                           .direction = "desc",
		                           .max_items = WSP_MAX_PLANS_SEEN * 2};
		struct ga_err err = {{0}};
		if (gh_issues_list(w->c.gh, ww->owner, ww->repo, &q, on_plan_issues, cy, &err) != 0)
			return;
		wsp_error(w, "the plans of %s/%s were not asked for: %s", ww->owner, ww->repo,
		          err.msg);
	}
	save_watch(w);
	wsp_pr_step(w, cyc_prs_done, cy);
}

/* The loop gate of §1.2 and §3.6: with fewer than WSP_LOW_BUDGET core
 * requests left the cycle is skipped until the bucket's reset (the
 * client's snapshot forgets the count once the reset has passed): the
 * requests left are for answering people and for the task that runs. */
static bool budget_low(struct wsp *w)
{
	struct gh_bucket b;
	if (gh_rate_snapshot(w->c.gh, "core", &b) != 0 || b.remaining < 0 ||
	    b.remaining >= WSP_LOW_BUDGET) {
		w->last.skipped[0] = '\0';
		return false;
	}
	struct decision d;
	decision_set(&d, VERDICT_BLOCK, "rate_budget",
	             "%lld GitHub requests left until the reset (below %d): no plan cycle",
	             (long long)b.remaining, WSP_LOW_BUDGET);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, d.reason, "rule", d.rule);
	snprintf(w->last.skipped, sizeof w->last.skipped, "%s", d.reason);
	w->n.budget_skips++;
	return true;
}

void wsp_cycle(struct wsp *w, void (*done)(void *ud), void *ud)
{
	if (w->cycling || budget_low(w)) {
		if (done)
			done(ud);
		return;
	}
	struct cyc *cy = xcalloc(1, sizeof *cy);
	cy->a = wsp_hold(w);
	cy->done = done;
	cy->ud = ud;
	cy->t0 = time_now_ms();
	gh_client_stats(w->c.gh, &cy->before);
	w->cycling = true;
	w->n.cycles++;
	discover(w);
	cyc_next_ws(cy);
}

/* --- status -------------------------------------------------------------------------------- */

static cJSON *plan_json(const struct wsp_plan *p)
{
	cJSON *o = cJSON_CreateObject();
	char repo[WSP_REPO_FULL_MAX];
	snprintf(repo, sizeof repo, "%s/%s", p->owner, p->repo);
	cJSON_AddStringToObject(o, "repo", repo);
	cJSON_AddNumberToObject(o, "number", p->number);
	cJSON_AddStringToObject(o, "title", p->plan.title ? p->plan.title : p->title);
	cJSON_AddStringToObject(o, "url", p->url ? p->url : "");
	cJSON_AddStringToObject(o, "status", plan_overall_name(plan_overall_status(&p->plan)));
	cJSON_AddNumberToObject(o, "total", p->counts.total);
	cJSON_AddNumberToObject(o, "completed", p->counts.completed);
	cJSON_AddNumberToObject(o, "blocked", p->counts.blocked);
	cJSON_AddNumberToObject(o, "inProgress", p->counts.in_progress);
	cJSON_AddNumberToObject(o, "polledMs", (double)p->polled_ms);
	cJSON_AddItemToObject(o, "tasks", tasks_json(p, true));
	return o;
}

cJSON *wsp_status(const struct wsp *w)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "login", w->login);
	cJSON_AddBoolToObject(o, "taskWork", can_work(w));
	cJSON *wl = cJSON_AddArrayToObject(o, "watched");
	for (size_t i = 0; i < w->watch.n; i++) {
		const struct wsp_watch *ww = &w->watch.w[i];
		cJSON *e = cJSON_CreateObject();
		char repo[WSP_REPO_FULL_MAX], url[GH_URL_MAX];
		snprintf(repo, sizeof repo, "%s/%s", ww->owner, ww->repo);
		wsp_watch_url(ww, url, sizeof url);
		cJSON_AddStringToObject(e, "repo", repo);
		cJSON_AddStringToObject(e, "url", url);
		cJSON_AddStringToObject(e, "source", wsp_source_name(ww->source));
		cJSON_AddNumberToObject(e, "polledMs", (double)ww->polled_ms);
		cJSON_AddItemToArray(wl, e);
	}
	cJSON *pl = cJSON_AddArrayToObject(o, "plans");
	for (size_t i = 0; i < w->nplans; i++)
		cJSON_AddItemToArray(pl, plan_json(w->plans[i]));
	if (w->plans_dropped)
		cJSON_AddNumberToObject(o, "plansDropped", (double)w->plans_dropped);
	cJSON_AddItemToObject(o, "task", wsp_run_status(w));
	cJSON_AddItemToObject(o, "pulls", wsp_pulls_json(w));
	if (w->pulls_dropped)
		cJSON_AddNumberToObject(o, "pullsDropped", (double)w->pulls_dropped);
	cJSON *lc = cJSON_AddObjectToObject(o, "lastCycle");
	cJSON_AddNumberToObject(lc, "atMs", (double)w->last.at_ms);
	cJSON_AddNumberToObject(lc, "ms", (double)w->last.ms);
	cJSON_AddNumberToObject(lc, "requests", (double)w->last.requests);
	cJSON_AddNumberToObject(lc, "notModified", (double)w->last.not_modified);
	cJSON_AddNumberToObject(lc, "plans", (double)w->last.plans);
	if (w->last.skipped[0])
		cJSON_AddStringToObject(lc, "skipped", w->last.skipped);
	cJSON *n = cJSON_AddObjectToObject(o, "counters");
	cJSON_AddNumberToObject(n, "cycles", (double)w->n.cycles);
	cJSON_AddNumberToObject(n, "claims", (double)w->n.claims);
	cJSON_AddNumberToObject(n, "claimsWon", (double)w->n.claims_won);
	cJSON_AddNumberToObject(n, "claimsLost", (double)w->n.claims_lost);
	cJSON_AddNumberToObject(n, "resumed", (double)w->n.resumed);
	cJSON_AddNumberToObject(n, "prs", (double)w->n.prs);
	cJSON_AddNumberToObject(n, "failed", (double)w->n.failed);
	cJSON_AddNumberToObject(n, "blocked", (double)w->n.blocked);
	cJSON_AddNumberToObject(n, "resets", (double)w->n.resets);
	cJSON_AddNumberToObject(n, "superseded", (double)w->n.superseded);
	cJSON_AddNumberToObject(n, "bodySyncs", (double)w->n.body_syncs);
	cJSON_AddNumberToObject(n, "statesSent", (double)w->n.states_sent);
	cJSON_AddNumberToObject(n, "budgetSkips", (double)w->n.budget_skips);
	cJSON_AddNumberToObject(n, "merged", (double)w->n.merged);
	cJSON_AddNumberToObject(n, "revisions", (double)w->n.revisions);
	cJSON_AddNumberToObject(n, "rebuilds", (double)w->n.rebuilds);
	cJSON_AddNumberToObject(n, "handedOver", (double)w->n.handed_over);
	cJSON_AddNumberToObject(n, "reviewsAsked", (double)w->n.reviews_asked);
	cJSON_AddNumberToObject(n, "plansCompleted", (double)w->n.plans_completed);
	if (w->last_error[0])
		cJSON_AddStringToObject(o, "lastError", w->last_error);
	return o;
}

void wsp_status_summary(const cJSON *status, char *out, size_t cap)
{
	const cJSON *plans = cJSON_GetObjectItemCaseSensitive(status, "plans");
	long long done = 0, total = 0, inprog = 0;
	const cJSON *p;
	cJSON_ArrayForEach(p, plans)
	{
		done += json_int_or(p, "completed", 0);
		total += json_int_or(p, "total", 0);
		inprog += json_int_or(p, "inProgress", 0);
	}
	const cJSON *lc = cJSON_GetObjectItemCaseSensitive(status, "lastCycle");
	snprintf(out, cap,
	         "%d watched, %d open plans (%lld of %lld tasks completed, %lld in progress), "
	         "last cycle %lld requests (%lld not modified)%s",
	         cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(status, "watched")),
	         cJSON_GetArraySize(plans), done, total, inprog,
	         (long long)json_int_or(lc, "requests", 0),
	         (long long)json_int_or(lc, "notModified", 0),
	         json_bool_or(status, "taskWork", false) ? "" : "; no task work (no coder)");
}

bool wsp_status_task_line(const cJSON *status, char *out, size_t cap)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(status, "task");
	if (!cJSON_IsObject(t))
		return false;
	const char *pr = json_string_or(t, "prUrl", NULL);
	snprintf(out, cap, "task %lld of %s#%lld: %s (%s, attempt %lld%s%s)",
	         (long long)json_int_or(t, "task", 0), json_string_or(t, "repo", "?"),
	         (long long)json_int_or(t, "plan", 0), json_string_or(t, "title", "?"),
	         json_string_or(t, "phase", "?"), (long long)json_int_or(t, "attempt", 0),
	         pr ? ", " : "", pr ? pr : "");
	return true;
}
