/* Finding and creating a workspace (workspace.h "Workspaces", spec §3.1):
 * one per organisation, created under a coordination lock. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/coord/coord.h"
#include "modules/workspace/wsp_int.h"

#define WSP_CREATE_RETRY_MS 2000

struct repo_op {
	struct wsp_anchor *a;
	wsp_answer_fn done;
	void *ud;
	bool create, user;   /* user: the owner is a user, not an organisation */
	enum wsp_source src; /* create: who asked (the watch of a found one is theirs) */
	char org[GH_OWNER_MAX + 1];
	char name[GH_REPO_MAX + 1];
	char *description, *thread;
	char lock[COORD_MAX_KEY];
	bool locked;
	int64_t waited_since;
	uv_timer_t *retry;
};

void wsp_tool_done(struct wsp *w)
{
	if (w && w->tool_calls > 0)
		w->tool_calls--;
}

/* The answer to the caller (text: the tool's JSON, or why it failed); the
 * lock is released with the outcome the room's members read: the
 * workspace's URL (link, may be NULL) on success, the reason on failure. */
static void op_answer_link(struct repo_op *op, bool ok, const char *text, const char *link)
{
	struct wsp *w = wsp_drop(op->a);
	if (w) {
		wsp_tool_done(w);
		struct coord *c = wsp_coord(w);
		if (c && op->locked)
			coord_release_result(c, op->lock, ok, ok ? link : NULL, ok ? NULL : text);
	}
	op->done(op->ud, ok, text);
	free(op->description);
	free(op->thread);
	free(op);
}

static void op_answer(struct repo_op *op, bool ok, const char *text)
{
	op_answer_link(op, ok, text, NULL);
}

static void answer_json(struct repo_op *op, bool found, bool created, const char *name,
                        const char *note)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "found", found);
	if (found) {
		char full[WSP_REPO_FULL_MAX], url[GH_URL_MAX];
		snprintf(full, sizeof full, "%s/%s", op->org, name);
		snprintf(url, sizeof url, "https://github.com/%s/%s", op->org, name);
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddStringToObject(o, "fullName", full);
		cJSON_AddStringToObject(o, "url", url);
	}
	if (op->create)
		cJSON_AddBoolToObject(o, "created", created);
	if (note)
		cJSON_AddStringToObject(o, "note", note);
	char *text = cJSON_PrintUnformatted(o);
	cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "url");
	char *link = cJSON_IsString(u) ? xstrdup(u->valuestring) : NULL;
	cJSON_Delete(o);
	op_answer_link(op, true, text, link);
	free(link);
	free(text);
}

static void on_created(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct repo_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w) {
		op_answer(op, false, "the agent is stopping");
		return;
	}
	struct decision d;
	if (!ok) {
		decision_set(&d, VERDICT_FAIL, "workspace_create", "%s/%s was not created: %s",
		             op->org, op->name, why ? why : "?");
		wsp_note(w, op->org, op->name, 0, 0, STAGE_OUTBOUND, &d);
		op_answer(op, false, d.reason);
		return;
	}
	decision_set(&d, VERDICT_SENT, "workspace_create", "%s/%s created from %s", op->org,
	             op->name, w->template_repo);
	wsp_note(w, op->org, op->name, 0, 0, STAGE_OUTBOUND, &d);
	struct ga_err err = {{0}};
	if (wsp_watch(w, op->org, op->name, WSP_SOURCE_CREATED, op->thread, &err) < 0)
		wsp_error(w, "%s", err.msg);
	wsp_tell_owner(w, "workspace created: https://github.com/%s/%s", op->org, op->name);
	answer_json(op, true, true, op->name, NULL);
}

static void create_now(struct wsp *w, struct repo_op *op)
{
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:create-repo", op->org, op->name);
	char key[WSP_KEY_MAX + 1];
	wsp_key(key, sizeof key, "repo", op->org, op->name, 0, 0, 0);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "template", w->template_repo);
	cJSON_AddStringToObject(extra, "description",
	                        op->description ? op->description : WSP_DEFAULT_DESC);
	char text[WSP_REPO_FULL_MAX + 80];
	snprintf(text, sizeof text, "create the workspace %s/%s from %s", op->org, op->name,
	         w->template_repo);
	struct wsp_send s = {.target = target, .text = text, .key = key, .extra = extra};
	wsp_send(w, &s, on_created, op);
	cJSON_Delete(extra);
}

static void list_repos(struct wsp *w, struct repo_op *op);

/* A create that found the organisation's workspace watches it, as a
 * created one would be — unless the owner stopped the work in it and the
 * request is not the owner's (only the owner brings it back). */
static void watch_found(struct wsp *w, struct repo_op *op, const char *name)
{
	struct decision d;
	if (op->src != WSP_SOURCE_OWNER && wsp_watch_unwatched(&w->watch, op->org, name)) {
		decision_set(&d, VERDICT_DROP, "workspace_watch",
		             "%s/%s exists; not watched again: the owner stopped the work in it",
		             op->org, name);
		wsp_note(w, op->org, name, 0, 0, STAGE_GATE, &d);
		return;
	}
	struct ga_err err = {{0}};
	if (wsp_watch(w, op->org, name, op->src, op->thread, &err) < 0)
		wsp_error(w, "%s", err.msg);
}

static void on_repos(void *ud, const struct gh_result *res)
{
	struct repo_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w) {
		op_answer(op, false, "the agent is stopping");
		return;
	}
	if (res->kind == GH_ERR_NOT_FOUND && !op->user) {
		/* not an organisation: a user's own repositories */
		op->user = true;
		list_repos(w, op);
		return;
	}
	if (res->kind != GH_OK) {
		char msg[GA_ERR_MSG_MAX + 64];
		snprintf(msg, sizeof msg, "the repositories of %s were not read: %.400s", op->org,
		         res->msg);
		op_answer(op, false, msg);
		return;
	}
	/* the oldest workspace: every agent names the same one */
	const cJSON *it;
	const cJSON *best = NULL;
	int64_t best_at = 0;
	cJSON_ArrayForEach(it, res->json)
	{
		const char *name = json_string_or(it, "name", "");
		if (!wsp_has_prefix(name, w->prefix))
			continue;
		int64_t at = 0;
		time_parse_iso(json_string_or(it, "created_at", ""), &at);
		if (!best || at < best_at) {
			best = it;
			best_at = at;
		}
	}
	if (best) {
		char name[GH_REPO_MAX + 1];
		snprintf(name, sizeof name, "%s", json_string_or(best, "name", ""));
		if (op->create)
			watch_found(w, op, name);
		answer_json(op, true, false, name,
		            op->create ? "one workspace per organisation: this one exists already"
		                       : NULL);
		return;
	}
	if (!op->create) {
		answer_json(op, false, false, NULL,
		            res->truncated ? "only the first repositories "
		                             "were read"
		                           : NULL);
		return;
	}
	create_now(w, op);
}

static void list_repos(struct wsp *w, struct repo_op *op)
{
	struct gh_repo_query q = {.sort = "created", .direction = "asc", .max_items = 1000};
	struct ga_err err = {{0}};
	uint64_t id = op->user ? gh_user_repos_list(w->c.gh, op->org, &q, on_repos, op, &err)
	                       : gh_org_repos_list(w->c.gh, op->org, &q, on_repos, op, &err);
	if (id == 0)
		op_answer(op, false, err.msg);
}

static void retry_closed(uv_handle_t *h)
{
	free(h);
}

static void ask_lock(struct wsp *w, struct repo_op *op);

static void on_retry(uv_timer_t *t)
{
	struct repo_op *op = t->data;
	uv_close((uv_handle_t *)t, retry_closed);
	op->retry = NULL;
	struct wsp *w = op->a->w;
	if (!w) {
		op_answer(op, false, "the agent is stopping");
		return;
	}
	ask_lock(w, op);
}

static void on_lock(void *ud, enum coord_result res, const char *holder, const char *why)
{
	struct repo_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w) {
		op_answer(op, false, "the agent is stopping");
		return;
	}
	if (res == COORD_WON) {
		op->locked = true;
		list_repos(w, op);
		return;
	}
	if (res == COORD_HELD && time_now_ms() - op->waited_since < WSP_CREATE_WAIT_MS) {
		/* another agent creates it now: when it is done, we find its one */
		op->retry = xcalloc(1, sizeof *op->retry);
		uv_timer_init(w->c.loop, op->retry);
		op->retry->data = op;
		uv_timer_start(op->retry, on_retry, WSP_CREATE_RETRY_MS, 0);
		return;
	}
	char msg[300];
	snprintf(msg, sizeof msg,
	         "the workspace of %s is being created by %s; ask again in a minute (%s)", op->org,
	         holder ? holder : "another agent", why ? why : coord_result_name(res));
	op_answer(op, false, msg);
}

static void ask_lock(struct wsp *w, struct repo_op *op)
{
	struct coord *c = wsp_coord(w);
	if (!c) {
		list_repos(w, op);
		return;
	}
	if (coord_claim(c, op->lock, WSP_CREATE_TTL_MS, on_lock, op) != 0)
		op_answer(op, false, "the coordination backend refused the request");
}

static struct repo_op *op_new(struct wsp *w, const char *org, wsp_answer_fn done, void *ud,
                              struct ga_err *err)
{
	const char *o = org && *org ? org : w->default_org;
	if (!gh_valid_owner(o)) {
		err_set(err, "'%.60s' is not a GitHub organisation name", o);
		return NULL;
	}
	if (w->tool_calls >= WSP_MAX_TOOL_CALLS) {
		err_set(err, "%d workspace requests are in flight already: ask again later",
		        WSP_MAX_TOOL_CALLS);
		return NULL;
	}
	struct repo_op *op = xcalloc(1, sizeof *op);
	op->a = wsp_hold(w);
	op->done = done;
	op->ud = ud;
	snprintf(op->org, sizeof op->org, "%s", o);
	w->tool_calls++;
	return op;
}

int wsp_find(struct wsp *w, const char *org, wsp_answer_fn done, void *ud, struct ga_err *err)
{
	struct repo_op *op = op_new(w, org, done, ud, err);
	if (!op)
		return -1;
	list_repos(w, op);
	return 0;
}

int wsp_create(struct wsp *w, const char *org, const char *name, const char *description,
               enum wsp_source src, const char *thread, wsp_answer_fn done, void *ud,
               struct ga_err *err)
{
	char full[GH_REPO_MAX + WSP_PREFIX_MAX + 2];
	if (!name || !*name)
		return err_set(err, "a workspace needs a name");
	if (wsp_has_prefix(name, w->prefix))
		snprintf(full, sizeof full, "%s", name);
	else
		snprintf(full, sizeof full, "%s%s", w->prefix, name);
	if (!gh_valid_repo(full) || strlen(full) > GH_REPO_MAX)
		return err_set(err,
		               "'%.120s' is not a repository name GitHub accepts (letters, digits, "
		               "'.', '_', '-'; at most 100)",
		               full);
	struct repo_op *op = op_new(w, org, done, ud, err);
	if (!op)
		return -1;
	op->create = true;
	op->src = src;
	/* the length was checked above; the bound says so to the compiler */
	snprintf(op->name, sizeof op->name, "%.*s", GH_REPO_MAX, full);
	op->description = description && *description ? xstrdup(description) : NULL;
	op->thread = thread && *thread ? xstrdup(thread) : NULL;
	snprintf(op->lock, sizeof op->lock, "workspace:%s", op->org);
	op->waited_since = time_now_ms();
	ask_lock(w, op);
	return 0;
}
