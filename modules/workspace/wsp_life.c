/* The workspace's lifecycle (spec §3.14.4, §3.14.5): the finished
 * sentinel found by its label, reactivated by people, made once when all
 * planned work is done; handled and stale issues closed. See wsp_int.h
 * (wsp_life_step). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/journal/journal.h"
#include "modules/workspace/wsp_int.h"

#define LIFE_MAX_ISSUES     100 /* open issues read per workspace, least recently updated first */
#define LIFE_HANDLED_READS  3   /* issues whose comments are read per cycle (handled rule) */
#define LIFE_LOCK_TTL_MUL   5   /* lifecycle locks last five claim TTLs: lapse, never released */
#define LIFE_FINISHED_TITLE "LIL INTDEV FINISHED: "

/* One lifecycle action on one issue, fire and forget (its own anchor). */
enum life_kind { LIFE_CLOSE_DUP, LIFE_REACTIVATE, LIFE_FINISH, LIFE_HANDLED, LIFE_STALE };

struct life_op {
	struct wsp_anchor *a;
	enum life_kind kind;
	char owner[GH_OWNER_MAX + 1], repo[GH_REPO_MAX + 1];
	int number; /* the issue acted on (LIFE_FINISH: the latest closed plan) */
	int other;  /* the sentinel kept, the issue that reactivates */
	struct wsp_issue_brief b;
};

static void life_note(struct wsp *w, const struct life_op *op, enum decision_verdict v,
                      const char *rule, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void life_note(struct wsp *w, const struct life_op *op, enum decision_verdict v,
                      const char *rule, const char *fmt, ...)
{
	struct decision d = {.verdict = v, .rule = rule};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d.reason, sizeof d.reason, fmt, ap);
	va_end(ap);
	wsp_note(w, op->owner, op->repo, 0, 0, STAGE_OUTBOUND, &d);
}

static const char *kind_rule(enum life_kind k)
{
	switch (k) {
	case LIFE_CLOSE_DUP:
		return "sentinel_duplicate";
	case LIFE_REACTIVATE:
		return "workspace_reactivated";
	case LIFE_FINISH:
		return "workspace_finished";
	case LIFE_HANDLED:
		return "issue_handled";
	case LIFE_STALE:
		return "issue_stale";
	}
	return "?";
}

static void op_free(struct life_op *op)
{
	wsp_drop(op->a);
	free(op);
}

static void op_done(void *ud, bool ok, const char *artifact, const char *why)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (w) {
		if (ok && op->kind == LIFE_FINISH)
			life_note(w, op, VERDICT_SENT, kind_rule(op->kind),
			          "every plan (the latest #%d) is closed and nothing is open: the "
			          "finished sentinel is %s",
			          op->number, artifact ? artifact : "?");
		else if (ok)
			life_note(w, op, VERDICT_SENT, kind_rule(op->kind), "closed #%d",
			          op->number);
		else
			life_note(w, op, VERDICT_FAIL, kind_rule(op->kind), "#%d: %s", op->number,
			          why ? why : "?");
	}
	op_free(op);
}

/* Closes op->number (state_reason as given) through outbound. */
static void close_issue(struct wsp *w, struct life_op *op, const char *reason)
{
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:edit:%d", op->owner, op->repo, op->number);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "life-close", op->owner, op->repo, op->number, 0, 0);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "op", "issue");
	cJSON_AddStringToObject(extra, "state", "closed");
	cJSON_AddStringToObject(extra, "state_reason", reason);
	char text[120];
	snprintf(text, sizeof text, "close #%d (%s)", op->number, kind_rule(op->kind));
	struct wsp_send s = {.target = target, .text = text, .key = key, .extra = extra};
	wsp_send(w, &s, op_done, op);
	cJSON_Delete(extra);
}

static void after_comment(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || !ok) {
		op_done(op, false, NULL, why ? why : "stopping");
		return;
	}
	close_issue(w, op, op->kind == LIFE_REACTIVATE ? "completed" : "not_planned");
}

/* A comment on op->number saying why, then the close. */
static void comment_then_close(struct wsp *w, struct life_op *op, const char *text)
{
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:issue:%d", op->owner, op->repo, op->number);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "life-say", op->owner, op->repo, op->number, 0, 0);
	struct wsp_send s = {.target = target, .text = text, .key = key};
	wsp_send(w, &s, after_comment, op);
}

/* --- the finished sentinel made ------------------------------------------------------------ */

static void make_sentinel(struct wsp *w, struct life_op *op)
{
	static const char summary[] =
	        "All planned work is complete: every plan is closed and no issue or pull request "
	        "is open. No agent starts new plans or tasks here while this issue is open.";
	const char *names[] = {"summary"};
	const char *values[] = {summary};
	char *body =
	        w->c.voice ? voice_render(w->c.voice, VOICE_GH_WORKSPACE_FINISHED, names, values, 1)
	                   : voice_interpolate(voice_default(VOICE_GH_WORKSPACE_FINISHED), names,
	                                       values, 1);
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:new-issue", op->owner, op->repo);
	/* one sentinel per finished stretch: the latest closed plan names it */
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "finished", op->owner, op->repo, op->number, 0, 0);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "title",
	                        LIFE_FINISHED_TITLE "all planned work complete, no open issues");
	cJSON *l = cJSON_AddArrayToObject(extra, "labels");
	cJSON_AddItemToArray(l, cJSON_CreateString(WSP_LABEL_FINISHED));
	struct wsp_send s = {.target = target, .text = body, .key = key, .extra = extra};
	wsp_send(w, &s, op_done, op);
	cJSON_Delete(extra);
	free(body);
}

/* Under the lock: still no open sentinel (another agent's made since our
 * list was read)? */
static void on_sentinels(void *ud, const struct gh_result *res)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res->kind != GH_OK) {
		op_done(op, false, NULL, w ? res->msg : "stopping");
		return;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, res->json)
	{
		if (cJSON_GetObjectItemCaseSensitive(it, "pull_request"))
			continue;
		life_note(w, op, VERDICT_DROP, "workspace_finished",
		          "#%d (another agent's) already says the workspace is finished",
		          (int)json_int_or(it, "number", 0));
		op_free(op);
		return;
	}
	make_sentinel(w, op);
}

static void on_closed_plans(void *ud, const struct gh_result *res)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	int latest = 0;
	const cJSON *it;
	if (w && res->kind == GH_OK)
		cJSON_ArrayForEach(it, res->json)
		{
			int n = (int)json_int_or(it, "number", 0);
			if (!cJSON_GetObjectItemCaseSensitive(it, "pull_request") && n > latest)
				latest = n;
		}
	if (!w || latest == 0) {
		/* nothing was ever planned and done here: a new workspace waits
		 * for its first plan, it is not finished */
		op_free(op);
		return;
	}
	op->number = latest;
	struct gh_issue_query q = {.state = "open", .labels = WSP_LABEL_FINISHED, .max_items = 10};
	struct ga_err err = {{0}};
	if (gh_issues_list(w->c.gh, op->owner, op->repo, &q, on_sentinels, op, &err) == 0)
		op_done(op, false, NULL, err.msg);
}

/* --- handled issues: whose comment is the latest? ------------------------------------------- */

static void on_issue_comments(void *ud, const struct gh_result *res)
{
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res->kind != GH_OK) {
		op_free(op);
		return;
	}
	int n = cJSON_GetArraySize(res->json);
	const cJSON *last = n > 0 ? cJSON_GetArrayItem(res->json, n - 1) : NULL;
	snprintf(op->b.last_commenter, sizeof op->b.last_commenter, "%s",
	         json_string_or(cJSON_GetObjectItemCaseSensitive(last, "user"), "login", ""));
	struct decision d;
	if (wsp_issue_hygiene(&op->b, w->login, time_now_ms(), w->c.handled_ms, w->c.stale_ms,
	                      &d) != WSP_HYG_HANDLED) {
		op_free(op);
		return;
	}
	wsp_note(w, op->owner, op->repo, 0, 0, STAGE_GATE, &d);
	close_issue(w, op, "completed");
}

/* --- the locks: one agent acts on an issue ---------------------------------------------------- */

static void on_life_lock(void *ud, enum coord_result res, const char *holder, const char *why)
{
	(void)why;
	struct life_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w || res == COORD_HELD) {
		/* our own lock from an earlier cycle: that act was judged then */
		if (w && !(holder && strcmp(holder, w->agent_name) == 0))
			life_note(w, op, VERDICT_DROP, kind_rule(op->kind), "#%d: %s does it",
			          op->number, holder ? holder : "another agent");
		op_free(op);
		return;
	}
	/* unavailable: go on; each act is keyed, and a second agent's close
	 * of a closed issue changes nothing */
	char text[400];
	struct ga_err err = {{0}};
	switch (op->kind) {
	case LIFE_CLOSE_DUP:
		snprintf(text, sizeof text,
		         "#%d already says this workspace is finished: closing this duplicate so "
		         "there is one.",
		         op->other);
		comment_then_close(w, op, text);
		break;
	case LIFE_REACTIVATE:
		snprintf(text, sizeof text,
		         "New activity on #%d reactivates this workspace: closing this so the "
		         "agents "
		         "plan and work again.",
		         op->other);
		comment_then_close(w, op, text);
		break;
	case LIFE_FINISH: {
		struct gh_issue_query q = {.state = "closed",
		                           .labels = PLAN_LABEL,
		                           .sort = "created",
		                           .direction = "desc",
		                           .max_items = 1};
		if (gh_issues_list(w->c.gh, op->owner, op->repo, &q, on_closed_plans, op, &err) ==
		    0)
			op_done(op, false, NULL, err.msg);
		break;
	}
	case LIFE_HANDLED:
		if (gh_comments_list(w->c.gh, op->owner, op->repo, op->number, WSP_MAX_COMMENTS,
		                     on_issue_comments, op, &err) == 0)
			op_done(op, false, NULL, err.msg);
		break;
	case LIFE_STALE:
		close_issue(w, op, "not_planned");
		break;
	}
}

static void life_start(struct wsp *w, const struct wsp_ref *ws, enum life_kind k, int number,
                       int other, const struct wsp_issue_brief *b)
{
	struct life_op *op = xcalloc(1, sizeof *op);
	op->a = wsp_hold(w);
	op->kind = k;
	snprintf(op->owner, sizeof op->owner, "%s", ws->owner);
	snprintf(op->repo, sizeof op->repo, "%s", ws->repo);
	op->number = number;
	op->other = other;
	if (b)
		op->b = *b;
	struct coord *c = wsp_coord(w);
	char lock[COORD_MAX_KEY];
	snprintf(lock, sizeof lock, "life:%s/%s#%d", ws->owner, ws->repo,
	         k == LIFE_FINISH ? 0 : number);
	if (!c)
		on_life_lock(op, COORD_UNAVAILABLE, NULL, "no backend");
	else if (coord_claim(c, lock, w->c.claim_ttl_ms * LIFE_LOCK_TTL_MUL, on_life_lock, op) != 0)
		on_life_lock(op, COORD_UNAVAILABLE, NULL, "not asked");
}

/* --- the step ----------------------------------------------------------------------------------
 */

struct life {
	struct wsp_anchor *a;
	wsp_step_fn next;
	void *ud;
	struct wsp_ref ws[WSP_MAX_WATCHED];
	size_t nws, wi;
};

static void life_ws(struct life *l);

static bool has_open_plan(const struct wsp *w, const struct wsp_ref *ws)
{
	for (size_t i = 0; i < w->nplans; i++)
		if (strcasecmp(w->plans[i]->owner, ws->owner) == 0 &&
		    strcasecmp(w->plans[i]->repo, ws->repo) == 0)
			return true;
	return false;
}

/* What the open issues of one workspace call for. */
static void life_decide(struct wsp *w, const struct wsp_ref *ws, const struct wsp_issue_brief *b,
                        size_t n)
{
	int s = wsp_sentinel_pick(b, n);
	if (s >= 0) {
		for (size_t i = 0; i < n; i++)
			if (b[i].finished && !b[i].pull && (int)i != s)
				life_start(w, ws, LIFE_CLOSE_DUP, b[i].number, b[s].number, NULL);
		struct wsp_agents ag;
		wsp_workspace_agents(w, ws->owner, ws->repo, &ag);
		int by = 0;
		if (wsp_sentinel_reactivated(b, n, s, &ag, &by))
			life_start(w, ws, LIFE_REACTIVATE, b[s].number, by, NULL);
		else
			log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "workspace finished", "repo", ws->repo,
			       "sentinel", LOG_INT(b[s].number));
	} else {
		bool open_work = has_open_plan(w, ws);
		for (size_t i = 0; i < n && !open_work; i++)
			open_work = !b[i].plan && !b[i].finished;
		if (!open_work)
			life_start(w, ws, LIFE_FINISH, 0, 0, NULL);
	}
	/* §3.14.5: handled and stale issues */
	int64_t now = time_now_ms();
	int reads = 0;
	for (size_t i = 0; i < n; i++) {
		struct decision d;
		enum wsp_hygiene h =
		        wsp_issue_hygiene(&b[i], w->login, now, w->c.handled_ms, w->c.stale_ms, &d);
		char key[WSP_KEY_MAX + 1];
		wsp_key(key, sizeof key, "life-close", ws->owner, ws->repo, b[i].number, 0, 0);
		if (journal_state_of(w->c.journal, key) == JOURNAL_DONE)
			continue; /* closed by us; the list is older than that */
		if (h == WSP_HYG_STALE) {
			wsp_note(w, ws->owner, ws->repo, 0, 0, STAGE_GATE, &d);
			life_start(w, ws, LIFE_STALE, b[i].number, 0, &b[i]);
		} else if (!b[i].pull && !b[i].plan && !b[i].finished && !b[i].discussion &&
		           b[i].updated_ms > 0 && now - b[i].updated_ms >= w->c.handled_ms &&
		           reads < LIFE_HANDLED_READS) {
			reads++;
			life_start(w, ws, LIFE_HANDLED, b[i].number, 0, &b[i]);
		}
	}
}

static void on_open_issues(void *ud, const struct gh_result *res)
{
	struct life *l = ud;
	struct wsp *w = l->a->w;
	if (!w) {
		life_ws(l);
		return;
	}
	const struct wsp_ref *ws = &l->ws[l->wi];
	if (res->kind != GH_OK) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "open issues not read: no lifecycle step", "repo",
		       ws->repo, "error", res->msg);
	} else if (wsp_watch_find(&w->watch, ws->owner, ws->repo)) {
		struct wsp_issue_brief *b = xcalloc(LIFE_MAX_ISSUES, sizeof *b);
		size_t n = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, res->json)
		{
			if (n < LIFE_MAX_ISSUES && wsp_issue_brief(it, &b[n]) == 0)
				n++;
		}
		life_decide(w, ws, b, n);
		free(b);
	}
	l->wi++;
	life_ws(l);
}

static void life_ws(struct life *l)
{
	struct wsp *w = l->a->w;
	for (; w && !w->quiescing && l->wi < l->nws; l->wi++) {
		const struct wsp_ref *ws = &l->ws[l->wi];
		struct wsp_watch *ww = wsp_watch_find(&w->watch, ws->owner, ws->repo);
		if (!ww || ww->polled_ms <= 0)
			continue; /* its plans were not read: nothing to judge by */
		struct gh_issue_query q = {.state = "open",
		                           .sort = "updated",
		                           .direction = "asc",
		                           .max_items = LIFE_MAX_ISSUES};
		struct ga_err err = {{0}};
		if (gh_issues_list(w->c.gh, ws->owner, ws->repo, &q, on_open_issues, l, &err) != 0)
			return;
		wsp_error(w, "the open issues of %s/%s were not asked for: %s", ws->owner, ws->repo,
		          err.msg);
	}
	wsp_drop(l->a);
	wsp_step_fn next = l->next;
	void *ud = l->ud;
	free(l);
	next(ud, false);
}

void wsp_life_step(struct wsp *w, wsp_step_fn next, void *ud)
{
	struct life *l = xcalloc(1, sizeof *l);
	l->a = wsp_hold(w);
	l->next = next;
	l->ud = ud;
	for (size_t i = 0; i < w->watch.n && l->nws < WSP_MAX_WATCHED; i++) {
		snprintf(l->ws[l->nws].owner, sizeof l->ws[l->nws].owner, "%s",
		         w->watch.w[i].owner);
		snprintf(l->ws[l->nws].repo, sizeof l->ws[l->nws].repo, "%s", w->watch.w[i].repo);
		l->nws++;
	}
	life_ws(l);
}
