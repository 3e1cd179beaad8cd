/* The finished sentinel verified (spec §3.14.4): its creator reads its
 * comments each cycle (agreement keeps it, remaining work becomes a
 * Feedback issue and reopens the workspace), looks for a person's comment
 * on the open issues when nobody spoke on it, and reopens it once when
 * someone else closed it while nothing is open. Everything it judges is
 * read from GitHub; every write goes through outbound under a key of the
 * sentinel's number, so two agents, two cycles or a restart make each one
 * once. See wsp_int.h (wsp_sentinel_verify, wsp_sentinel_closed_check). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/journal/journal.h"
#include "modules/workspace/wsp_int.h"

#define SV_FEEDBACK_TITLE "Feedback from #%d: remaining work identified"

/* --- notes said once --------------------------------------------------------------------- */

/* Notes d unless the same decision about the same workspace was the
 * latest of the last WSP_LIFE_SAID noted: a sentinel judged the same way
 * every cycle is explained once, not every three minutes. */
static void sv_note(struct wsp *w, const char *owner, const char *repo, const struct decision *d)
{
	char buf[WSP_REPO_FULL_MAX + DECISION_REASON_MAX + 64];
	int len = snprintf(buf, sizeof buf, "%s/%s\n%s\n%s", owner, repo, d->rule, d->reason);
	unsigned char h[32];
	sha256_raw(buf, len > 0 && (size_t)len < sizeof buf ? (size_t)len : strlen(buf), h);
	uint64_t x = 0;
	memcpy(&x, h, sizeof x);
	for (size_t i = 0; i < WSP_LIFE_SAID; i++)
		if (w->life_said[i] == x)
			return;
	w->life_said[w->nlife_said++ % WSP_LIFE_SAID] = x;
	wsp_note(w, owner, repo, 0, 0, STAGE_OUTBOUND, d);
}

/* --- a lifecycle comment, then a close or a reopen ---------------------------------------- */

struct say_close {
	struct wsp_anchor *a;
	char owner[GH_OWNER_MAX + 1], repo[GH_REPO_MAX + 1];
	int number;
	char reason[24]; /* state_reason; "" reopen */
	char what[40];
	char *text; /* the comment after the reopen, or NULL */
	wsp_sent_fn cb;
	void *ud;
};

static void sc_end(struct say_close *sc, bool ok, const char *artifact, const char *why)
{
	struct wsp *w = wsp_drop(sc->a);
	if (w && sc->cb)
		sc->cb(sc->ud, ok, artifact, why);
	else if (!w && sc->cb)
		sc->cb(sc->ud, false, NULL, "stopping");
	free(sc->text);
	free(sc);
}

static void sc_comment(struct wsp *w, struct say_close *sc, const char *text, wsp_sent_fn next)
{
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:issue:%d", sc->owner, sc->repo, sc->number);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "life-say", sc->owner, sc->repo, sc->number, 0, 0);
	char *said = xasprintf("%s\n\n%s", text, WSP_LIFE_MARK);
	struct wsp_send s = {.target = target, .text = said, .key = key};
	wsp_send(w, &s, next, sc);
	free(said);
}

static void sc_state(struct wsp *w, struct say_close *sc, wsp_sent_fn next)
{
	bool reopen = !sc->reason[0];
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:edit:%d", sc->owner, sc->repo, sc->number);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, reopen ? "life-reopen" : "life-close", sc->owner, sc->repo,
	        sc->number, 0, 0);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "op", "issue");
	cJSON_AddStringToObject(extra, "state", reopen ? "open" : "closed");
	if (!reopen)
		cJSON_AddStringToObject(extra, "state_reason", sc->reason);
	char text[120];
	snprintf(text, sizeof text, "%s #%d (%s)", reopen ? "reopen" : "close", sc->number,
	         sc->what);
	struct wsp_send s = {.target = target, .text = text, .key = key, .extra = extra};
	wsp_send(w, &s, next, sc);
	cJSON_Delete(extra);
}

static void sc_ended(void *ud, bool ok, const char *artifact, const char *why)
{
	sc_end(ud, ok, artifact, why);
}

static void sc_said(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct say_close *sc = ud;
	struct wsp *w = sc->a->w;
	if (!w || !ok) {
		sc_end(sc, false, NULL, why ? why : "stopping");
		return;
	}
	sc_state(w, sc, sc_ended);
}

static void sc_reopened(void *ud, bool ok, const char *artifact, const char *why)
{
	struct say_close *sc = ud;
	struct wsp *w = sc->a->w;
	if (!w || !ok) {
		sc_end(sc, false, NULL, why ? why : "stopping");
		return;
	}
	sc_comment(w, sc, sc->text, sc_ended);
	(void)artifact;
}

static struct say_close *sc_new(struct wsp *w, const char *owner, const char *repo, int number,
                                const char *reason, const char *what, wsp_sent_fn cb, void *ud)
{
	struct say_close *sc = xcalloc(1, sizeof *sc);
	sc->a = wsp_hold(w);
	snprintf(sc->owner, sizeof sc->owner, "%s", owner);
	snprintf(sc->repo, sizeof sc->repo, "%s", repo);
	sc->number = number;
	snprintf(sc->reason, sizeof sc->reason, "%s", reason ? reason : "");
	snprintf(sc->what, sizeof sc->what, "%s", what);
	sc->cb = cb;
	sc->ud = ud;
	return sc;
}

void wsp_life_close(struct wsp *w, const char *owner, const char *repo, int number,
                    const char *text, const char *reason, const char *what, wsp_sent_fn cb,
                    void *ud)
{
	struct say_close *sc = sc_new(w, owner, repo, number, reason, what, cb, ud);
	if (text)
		sc_comment(w, sc, text, sc_said);
	else
		sc_state(w, sc, sc_ended);
}

/* Reopens owner/repo#number (key "life-reopen"), then says why (text). */
static void life_reopen(struct wsp *w, const char *owner, const char *repo, int number,
                        const char *text, wsp_sent_fn cb, void *ud)
{
	struct say_close *sc = sc_new(w, owner, repo, number, NULL, "sentinel_reopened", cb, ud);
	sc->text = xstrdup(text);
	sc_state(w, sc, sc_reopened);
}

/* --- the open sentinel verified by its creator --------------------------------------------- */

struct sv {
	struct wsp_anchor *a;
	char owner[GH_OWNER_MAX + 1], repo[GH_REPO_MAX + 1];
	int sentinel;
	int64_t since_ms; /* the sentinel's creation */
	char lock[COORD_MAX_KEY];
	bool locked;
	struct wsp_agents agents;
	int scan[WSP_SCAN_ISSUES]; /* issue numbers, most recently updated first */
	size_t nscan, si;
	int other; /* the Feedback issue, or the issue a person spoke on */
	struct decision d;
};

static void sv_end(struct sv *v)
{
	struct wsp *w = wsp_drop(v->a);
	struct coord *c = w && v->locked ? wsp_coord(w) : NULL;
	if (c)
		coord_release(c, v->lock);
	free(v);
}

/* Reads a comments array into c (borrowed from arr), at most cap. */
static size_t read_comments(const cJSON *arr, struct wsp_sentinel_comment *c, size_t cap)
{
	size_t n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		if (n >= cap)
			break;
		const cJSON *user = cJSON_GetObjectItemCaseSensitive(it, "user");
		c[n].login = json_string_or(user, "login", "");
		c[n].body = json_string_or(it, "body", "");
		c[n].at_ms = 0;
		time_parse_iso(json_string_or(it, "created_at", ""), &c[n].at_ms);
		n++;
	}
	return n;
}

static void sv_done(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct sv *v = ud;
	struct wsp *w = v->a->w;
	if (w && ok)
		wsp_note(w, v->owner, v->repo, 0, 0, STAGE_OUTBOUND, &v->d);
	else if (w)
		wsp_notef(w, v->owner, v->repo, 0, 0, STAGE_OUTBOUND, VERDICT_FAIL, v->d.rule,
		          "sentinel #%d: %s (the next cycle tries again)", v->sentinel,
		          why ? why : "?");
	sv_end(v);
}

/* The number at the end of an issue's URL (the artifact of a new issue). */
static int number_of(const char *url)
{
	const char *slash = url ? strrchr(url, '/') : NULL;
	return slash ? atoi(slash + 1) : 0;
}

static void on_feedback_issue(void *ud, bool ok, const char *artifact, const char *why)
{
	struct sv *v = ud;
	struct wsp *w = v->a->w;
	v->other = ok ? number_of(artifact) : 0;
	if (!w || v->other <= 0) {
		sv_done(v, false, NULL, ok ? "the Feedback issue's number is unknown" : why);
		return;
	}
	char text[400];
	snprintf(text, sizeof text,
	         "The comments here name remaining work: it is gathered in #%d. Closing this so "
	         "the agents plan and work again.",
	         v->other);
	snprintf(v->d.reason + strlen(v->d.reason), sizeof v->d.reason - strlen(v->d.reason),
	         " (#%d)", v->other);
	wsp_life_close(w, v->owner, v->repo, v->sentinel, text, "completed", "sentinel_feedback",
	               sv_done, v);
}

static void feedback(struct wsp *w, struct sv *v, const struct wsp_sentinel_comment *c, size_t n)
{
	char *body =
	        wsp_feedback_body(v->sentinel, c, n, w->login, &v->agents, WSP_FEEDBACK_BODY_MAX);
	if (!body) {
		sv_done(v, false, NULL, "no comment to gather");
		return;
	}
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:new-issue", v->owner, v->repo);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "life-feedback", v->owner, v->repo, v->sentinel, 0, 0);
	char title[80];
	snprintf(title, sizeof title, SV_FEEDBACK_TITLE, v->sentinel);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "title", title);
	struct wsp_send s = {.target = target, .text = body, .key = key, .extra = extra};
	wsp_send(w, &s, on_feedback_issue, v);
	cJSON_Delete(extra);
	free(body);
}

static void scan_next(struct sv *v);

static void on_scan_comments(void *ud, const struct gh_result *res)
{
	struct sv *v = ud;
	struct wsp *w = v->a->w;
	if (!w) {
		sv_end(v);
		return;
	}
	int k = v->scan[v->si];
	if (res->kind != GH_OK) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "comments not read: the scan goes on", "repo",
		       v->repo, "issue", LOG_INT(k), "error", res->msg);
	} else {
		struct wsp_sentinel_comment *c = xcalloc(WSP_SENTINEL_COMMENTS, sizeof *c);
		size_t n = read_comments(res->json, c, WSP_SENTINEL_COMMENTS);
		struct decision d;
		int at = wsp_human_activity(c, n, w->login, &v->agents, v->since_ms, &d);
		free(c);
		if (at >= 0) {
			v->other = k;
			decision_set(
			        &v->d, VERDICT_PASS, "sentinel_activity",
			        "human activity on #%d: %s; sentinel #%d closed, the workspace is "
			        "active again",
			        k, d.reason, v->sentinel);
			char text[300];
			snprintf(
			        text, sizeof text,
			        "Human activity on #%d reactivates this workspace: closing this so "
			        "the agents plan and work again.",
			        k);
			wsp_life_close(w, v->owner, v->repo, v->sentinel, text, "completed",
			               "sentinel_activity", sv_done, v);
			return;
		}
	}
	v->si++;
	scan_next(v);
}

static void scan_next(struct sv *v)
{
	struct wsp *w = v->a->w;
	while (w && v->si < v->nscan) {
		struct ga_err err = {{0}};
		if (gh_comments_list(w->c.gh, v->owner, v->repo, v->scan[v->si],
		                     WSP_SENTINEL_COMMENTS, on_scan_comments, v, &err) != 0)
			return;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "comments not asked for", "repo", v->repo, "issue",
		       LOG_INT(v->scan[v->si]), "error", err.msg);
		v->si++;
	}
	if (w) {
		struct decision d;
		decision_set(
		        &d, VERDICT_INFO, "sentinel_quiet",
		        "sentinel #%d: nobody but its creator commented on it and no person "
		        "commented on the %zu open issue%s updated since (at most %d read): the "
		        "workspace stays finished",
		        v->sentinel, v->nscan, v->nscan == 1 ? "" : "s", WSP_SCAN_ISSUES);
		sv_note(w, v->owner, v->repo, &d);
	}
	sv_end(v);
}

static void on_sentinel_comments(void *ud, const struct gh_result *res)
{
	struct sv *v = ud;
	struct wsp *w = v->a->w;
	if (!w) {
		sv_end(v);
		return;
	}
	if (res->kind != GH_OK) {
		/* §3.14.4: a thread that does not read leaves the workspace finished */
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "the sentinel's comments were not read", "repo",
		       v->repo, "sentinel", LOG_INT(v->sentinel), "error", res->msg);
		sv_end(v);
		return;
	}
	struct wsp_sentinel_comment *c = xcalloc(WSP_SENTINEL_COMMENTS, sizeof *c);
	size_t n = read_comments(res->json, c, WSP_SENTINEL_COMMENTS);
	/* a full page may hide more: the first ones are judged, and said so */
	bool truncated = cJSON_GetArraySize(res->json) >= WSP_SENTINEL_COMMENTS;
	size_t fb = 0;
	enum wsp_sentinel_act act =
	        wsp_sentinel_judge(c, n, truncated, w->login, &v->agents, &fb, &v->d);
	char reason[DECISION_REASON_MAX + 32];
	snprintf(reason, sizeof reason, "sentinel #%d: %s", v->sentinel, v->d.reason);
	utf8_copy(v->d.reason, sizeof v->d.reason, reason);
	if (act == WSP_SENTINEL_FEEDBACK) {
		feedback(w, v, c, n);
	} else if (act == WSP_SENTINEL_KEEP) {
		sv_note(w, v->owner, v->repo, &v->d);
		sv_end(v);
	} else {
		scan_next(v);
	}
	free(c);
}

static void on_verify_lock(void *ud, enum coord_result res, const char *holder, const char *why)
{
	(void)why;
	struct sv *v = ud;
	struct wsp *w = v->a->w;
	if (!w || res == COORD_HELD) {
		/* another agent (or our previous cycle) verifies it now */
		if (w)
			log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "the sentinel is verified by another",
			       "repo", v->repo, "holder", holder ? holder : "?");
		sv_end(v);
		return;
	}
	v->locked = res == COORD_WON;
	struct ga_err err = {{0}};
	if (gh_comments_list(w->c.gh, v->owner, v->repo, v->sentinel, WSP_SENTINEL_COMMENTS,
	                     on_sentinel_comments, v, &err) == 0) {
		wsp_error(w, "the comments of sentinel #%d were not asked for: %s", v->sentinel,
		          err.msg);
		sv_end(v);
	}
}

void wsp_sentinel_verify(struct wsp *w, const char *owner, const char *repo,
                         const struct wsp_issue_brief *b, size_t n, int s)
{
	if (s < 0 || (size_t)s >= n || strcasecmp(b[s].author, w->login) != 0)
		return; /* not ours: its creator verifies it; to us it says finished */
	struct sv *v = xcalloc(1, sizeof *v);
	v->a = wsp_hold(w);
	snprintf(v->owner, sizeof v->owner, "%s", owner);
	snprintf(v->repo, sizeof v->repo, "%s", repo);
	v->sentinel = b[s].number;
	v->since_ms = b[s].created_ms;
	wsp_workspace_agents(w, owner, repo, &v->agents);
	int idx[WSP_SCAN_ISSUES];
	v->nscan = wsp_activity_issues(b, n, s, idx, WSP_SCAN_ISSUES);
	for (size_t i = 0; i < v->nscan; i++)
		v->scan[i] = b[idx[i]].number;
	snprintf(v->lock, sizeof v->lock, "life:%s/%s#%d:verify", owner, repo, v->sentinel);
	struct coord *c = wsp_coord(w);
	if (!c)
		on_verify_lock(v, COORD_UNAVAILABLE, NULL, "no backend");
	else if (coord_claim(c, v->lock, w->c.claim_ttl_ms, on_verify_lock, v) != 0)
		on_verify_lock(v, COORD_UNAVAILABLE, NULL, "not asked");
}

/* --- the latest closed sentinel judged ------------------------------------------------------ */

struct sc_check {
	struct wsp_anchor *a;
	char owner[GH_OWNER_MAX + 1], repo[GH_REPO_MAX + 1];
	int number;
	wsp_closed_fn done;
	void *ud;
	struct decision d;
};

static void check_end(struct sc_check *k, bool go, int closed)
{
	wsp_drop(k->a);
	k->done(k->ud, go, closed);
	free(k);
}

static void on_reopened(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct sc_check *k = ud;
	struct wsp *w = k->a->w;
	if (w && ok)
		wsp_note(w, k->owner, k->repo, 0, 0, STAGE_OUTBOUND, &k->d);
	else if (w)
		wsp_notef(w, k->owner, k->repo, 0, 0, STAGE_OUTBOUND, VERDICT_FAIL,
		          "sentinel_reopened", "sentinel #%d not reopened: %s", k->number,
		          why ? why : "?");
	check_end(k, false, k->number);
}

static bool key_done(struct wsp *w, const char *kind, const char *owner, const char *repo, int n)
{
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, kind, owner, repo, n, 0, 0);
	return journal_state_of(w->c.journal, key) == JOURNAL_DONE;
}

static void on_closed_sentinel(void *ud, const struct gh_result *res)
{
	struct sc_check *k = ud;
	struct wsp *w = k->a->w;
	if (!w || res->kind != GH_OK) {
		if (w)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "the closed sentinel was not read", "repo",
			       k->repo, "sentinel", LOG_INT(k->number), "error", res->msg);
		check_end(k, false, k->number);
		return;
	}
	struct wsp_closed_sentinel s = {
	        .number = k->number,
	        .creator = json_string_or(cJSON_GetObjectItemCaseSensitive(res->json, "user"),
	                                  "login", ""),
	        .closer = json_string_or(cJSON_GetObjectItemCaseSensitive(res->json, "closed_by"),
	                                 "login", ""),
	        .closed_by_us = key_done(w, "life-close", k->owner, k->repo, k->number),
	        /* asked only when no issue, plan or sentinel is open */
	        .open_work = false,
	        .reopened = key_done(w, "life-reopen", k->owner, k->repo, k->number)};
	if (strcmp(json_string_or(res->json, "state", ""), "closed") != 0) {
		check_end(k, false, k->number); /* reopened since the list was read */
		return;
	}
	enum wsp_closed_act act = wsp_sentinel_closed(&s, w->login, &k->d);
	if (act == WSP_CLOSED_NEW) {
		check_end(k, true, k->number);
		return;
	}
	if (act != WSP_CLOSED_REOPEN) {
		sv_note(w, k->owner, k->repo, &k->d);
		check_end(k, false, k->number);
		return;
	}
	life_reopen(w, k->owner, k->repo, k->number,
	            "Reopened: no issue is open here, so the workspace stays finished. To start it "
	            "again, open an issue, or comment here with what remains.",
	            on_reopened, k);
}

static void on_closed_sentinels(void *ud, const struct gh_result *res)
{
	struct sc_check *k = ud;
	struct wsp *w = k->a->w;
	if (!w || res->kind != GH_OK) {
		if (w)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "closed sentinels not read", "repo",
			       k->repo, "error", res->msg);
		check_end(k, false, 0);
		return;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, res->json)
	{
		if (cJSON_GetObjectItemCaseSensitive(it, "pull_request"))
			continue;
		k->number = (int)json_int_or(it, "number", 0);
		break;
	}
	if (k->number <= 0) {
		check_end(k, true, 0); /* never a sentinel here */
		return;
	}
	/* closed_by is in the issue itself, not in lists */
	struct ga_err err = {{0}};
	if (gh_issue_get(w->c.gh, k->owner, k->repo, k->number, on_closed_sentinel, k, &err) == 0) {
		wsp_error(w, "sentinel #%d was not asked for: %s", k->number, err.msg);
		check_end(k, false, k->number);
	}
}

void wsp_sentinel_closed_check(struct wsp *w, const char *owner, const char *repo,
                               wsp_closed_fn done, void *ud)
{
	struct sc_check *k = xcalloc(1, sizeof *k);
	k->a = wsp_hold(w);
	snprintf(k->owner, sizeof k->owner, "%s", owner);
	snprintf(k->repo, sizeof k->repo, "%s", repo);
	k->done = done;
	k->ud = ud;
	/* the most recently closed is the most recently updated: a duplicate
	 * closed long ago does not hide the sentinel closed last */
	struct gh_issue_query q = {.state = "closed",
	                           .labels = WSP_LABEL_FINISHED,
	                           .sort = "updated",
	                           .direction = "desc",
	                           .max_items = 5};
	struct ga_err err = {{0}};
	if (gh_issues_list(w->c.gh, owner, repo, &q, on_closed_sentinels, k, &err) == 0) {
		wsp_error(w, "the closed sentinels of %s/%s were not asked for: %s", owner, repo,
		          err.msg);
		check_end(k, false, 0);
	}
}
