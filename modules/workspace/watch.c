/* The watched workspaces and their discovery: see watch.h. */
#include "modules/workspace/watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"

static const char *const source_names[WSP_SOURCE_COUNT] = {"created", "owner", "room", "bluesky",
                                                           "github"};

const char *wsp_source_name(enum wsp_source s)
{
	return (unsigned)s < WSP_SOURCE_COUNT ? source_names[s] : "?";
}

int wsp_source_parse(const char *s)
{
	for (int i = 0; s && i < WSP_SOURCE_COUNT; i++)
		if (strcmp(s, source_names[i]) == 0)
			return i;
	return -1;
}

void wsp_watchlist_free(struct wsp_watchlist *l)
{
	free(l->w);
	l->w = NULL;
	l->n = 0;
	l->n_unwatched = 0;
}

static bool same_repo(const char *o1, const char *r1, const char *o2, const char *r2)
{
	return strcasecmp(o1, o2) == 0 && strcasecmp(r1, r2) == 0;
}

/* The index of owner/repo among the unwatched, or -1. */
static int unwatched_at(const struct wsp_watchlist *l, const char *owner, const char *repo)
{
	for (size_t i = 0; owner && repo && i < l->n_unwatched; i++)
		if (same_repo(l->unwatched[i].owner, l->unwatched[i].repo, owner, repo))
			return (int)i;
	return -1;
}

bool wsp_watch_unwatched(const struct wsp_watchlist *l, const char *owner, const char *repo)
{
	return unwatched_at(l, owner, repo) >= 0;
}

static void forget_unwatched(struct wsp_watchlist *l, const char *owner, const char *repo)
{
	int i = unwatched_at(l, owner, repo);
	if (i < 0)
		return;
	memmove(&l->unwatched[i], &l->unwatched[i + 1],
	        (l->n_unwatched - (size_t)i - 1) * sizeof l->unwatched[0]);
	l->n_unwatched--;
}

static void remember_unwatched(struct wsp_watchlist *l, const char *owner, const char *repo)
{
	forget_unwatched(l, owner, repo);
	if (l->n_unwatched >= WSP_MAX_UNWATCHED) {
		memmove(&l->unwatched[0], &l->unwatched[1],
		        (WSP_MAX_UNWATCHED - 1) * sizeof l->unwatched[0]);
		l->n_unwatched--;
	}
	struct wsp_ref *r = &l->unwatched[l->n_unwatched++];
	snprintf(r->owner, sizeof r->owner, "%s", owner);
	snprintf(r->repo, sizeof r->repo, "%s", repo);
}

struct wsp_watch *wsp_watch_find(struct wsp_watchlist *l, const char *owner, const char *repo)
{
	for (size_t i = 0; owner && repo && i < l->n; i++)
		if (same_repo(l->w[i].owner, l->w[i].repo, owner, repo))
			return &l->w[i];
	return NULL;
}

int wsp_watch_add(struct wsp_watchlist *l, const char *owner, const char *repo, enum wsp_source src,
                  const char *thread, int64_t now_ms, struct ga_err *err)
{
	if (!owner || !repo || !gh_valid_owner(owner) || !gh_valid_repo(repo))
		return err_set(err, "'%.60s/%.100s' is not a GitHub repository name",
		               owner ? owner : "", repo ? repo : "");
	if (src == WSP_SOURCE_OWNER || src == WSP_SOURCE_CREATED)
		forget_unwatched(l, owner, repo);
	struct wsp_watch *w = wsp_watch_find(l, owner, repo);
	if (w) {
		if (!w->thread[0] && thread && *thread)
			snprintf(w->thread, sizeof w->thread, "%s", thread);
		return 0;
	}
	if (l->n >= WSP_MAX_WATCHED)
		return err_set(err,
		               "%d workspaces are watched already (the limit): %s/%s is not "
		               "watched; unwatch one first (workspace_unwatch)",
		               WSP_MAX_WATCHED, owner, repo);
	l->w = xrealloc(l->w, (l->n + 1) * sizeof *l->w);
	w = &l->w[l->n++];
	memset(w, 0, sizeof *w);
	snprintf(w->owner, sizeof w->owner, "%s", owner);
	snprintf(w->repo, sizeof w->repo, "%s", repo);
	w->source = src;
	if (thread)
		snprintf(w->thread, sizeof w->thread, "%s", thread);
	w->discovered_ms = now_ms;
	return 1;
}

int wsp_watch_remove(struct wsp_watchlist *l, const char *owner, const char *repo)
{
	struct wsp_watch *w = wsp_watch_find(l, owner, repo);
	if (!w)
		return 0;
	size_t i = (size_t)(w - l->w);
	remember_unwatched(l, w->owner, w->repo);
	memmove(&l->w[i], &l->w[i + 1], (l->n - i - 1) * sizeof *l->w);
	l->n--;
	return 1;
}

void wsp_watch_set_plans(struct wsp_watch *w, const int *plans, size_t n, int64_t now_ms)
{
	size_t from = n > WSP_MAX_PLAN_NUMBERS ? n - WSP_MAX_PLAN_NUMBERS : 0;
	w->n_plans = n - from;
	memcpy(w->plans, plans + from, w->n_plans * sizeof *plans);
	w->polled_ms = now_ms;
}

void wsp_watch_url(const struct wsp_watch *w, char *out, size_t cap)
{
	snprintf(out, cap, "https://github.com/%s/%s", w->owner, w->repo);
}

cJSON *wsp_watchlist_to_json(const struct wsp_watchlist *l)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "format", WSP_STATE_FORMAT);
	cJSON *arr = cJSON_AddArrayToObject(o, "workspaces");
	for (size_t i = 0; i < l->n; i++) {
		const struct wsp_watch *w = &l->w[i];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "owner", w->owner);
		cJSON_AddStringToObject(e, "repo", w->repo);
		cJSON_AddStringToObject(e, "source", wsp_source_name(w->source));
		cJSON_AddStringToObject(e, "thread", w->thread);
		cJSON_AddNumberToObject(e, "discoveredMs", (double)w->discovered_ms);
		cJSON_AddNumberToObject(e, "polledMs", (double)w->polled_ms);
		cJSON *pl = cJSON_AddArrayToObject(e, "plans");
		for (size_t k = 0; k < w->n_plans; k++)
			cJSON_AddItemToArray(pl, cJSON_CreateNumber(w->plans[k]));
		cJSON_AddItemToArray(arr, e);
	}
	cJSON *un = cJSON_AddArrayToObject(o, "unwatched");
	for (size_t i = 0; i < l->n_unwatched; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "owner", l->unwatched[i].owner);
		cJSON_AddStringToObject(e, "repo", l->unwatched[i].repo);
		cJSON_AddItemToArray(un, e);
	}
	return o;
}

int wsp_watchlist_from_json(struct wsp_watchlist *l, const cJSON *data, size_t *skipped,
                            struct ga_err *err)
{
	size_t bad = 0;
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(data, "workspaces");
	if (!cJSON_IsObject(data) || !cJSON_IsArray(arr))
		return err_set(err, "the watched workspaces are not {\"workspaces\": [...]}");
	wsp_watchlist_free(l);
	const cJSON *e;
	cJSON_ArrayForEach(e, arr)
	{
		int src = wsp_source_parse(json_string_or(e, "source", ""));
		struct ga_err e2 = {{0}};
		if (src < 0 || wsp_watch_add(l, json_string_or(e, "owner", NULL),
		                             json_string_or(e, "repo", NULL), (enum wsp_source)src,
		                             json_string_or(e, "thread", ""),
		                             json_int_or(e, "discoveredMs", 0), &e2) != 1) {
			bad++;
			continue;
		}
		struct wsp_watch *w = &l->w[l->n - 1];
		int plans[WSP_MAX_PLAN_NUMBERS];
		size_t np = 0;
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(e, "plans"))
		{
			if (cJSON_IsNumber(p) && p->valuedouble >= 1 && p->valuedouble < 1e9 &&
			    np < WSP_MAX_PLAN_NUMBERS)
				plans[np++] = (int)p->valuedouble;
		}
		wsp_watch_set_plans(w, plans, np, json_int_or(e, "polledMs", 0));
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(data, "unwatched"))
	{
		const char *owner = json_string_or(e, "owner", NULL);
		const char *repo = json_string_or(e, "repo", NULL);
		if (!owner || !repo || !gh_valid_owner(owner) || !gh_valid_repo(repo) ||
		    wsp_watch_find(l, owner, repo)) {
			bad++;
			continue;
		}
		remember_unwatched(l, owner, repo);
	}
	if (skipped)
		*skipped = bad;
	return 0;
}

/* The data carries its own format: a new agent version keeps the list. */
static int keep_format(void *ud, cJSON *data, const char *from_version)
{
	(void)from_version;
	(void)ud;
	return json_int_or(data, "format", 0) == WSP_STATE_FORMAT ? 0 : -1;
}

int wsp_watchlist_load(struct wsp_watchlist *l, const struct state_store *st, struct ga_err *err)
{
	struct state_load_info info;
	cJSON *data = state_load(st, WSP_STATE_NAME, keep_format, NULL, &info);
	wsp_watchlist_free(l);
	if (!data) {
		if (info.status == STATE_CORRUPT || info.status == STATE_UNREADABLE)
			log_kv(LOG_LEVEL_WARN, "workspace",
			       "watched workspaces not read: none watched", "status",
			       state_status_name(info.status), "detail", info.detail);
		return 0;
	}
	size_t skipped = 0;
	int rc = wsp_watchlist_from_json(l, data, &skipped, err);
	cJSON_Delete(data);
	if (skipped)
		log_kv(LOG_LEVEL_WARN, "workspace", "watched workspaces: records skipped", "count",
		       LOG_INT((int64_t)skipped));
	return rc;
}

int wsp_watchlist_save(const struct wsp_watchlist *l, const struct state_store *st, int64_t now_ms,
                       struct ga_err *err)
{
	cJSON *o = wsp_watchlist_to_json(l);
	int rc = state_save(st, WSP_STATE_NAME, o, now_ms, err);
	cJSON_Delete(o);
	return rc;
}

/* --- discovery ------------------------------------------------------------------------ */

bool wsp_has_prefix(const char *repo, const char *prefix)
{
	size_t n = prefix ? strlen(prefix) : 0;
	return repo && strlen(repo) >= n && strncasecmp(repo, prefix, n) == 0;
}

static bool owner_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-';
}

static bool repo_char(char c)
{
	return owner_char(c) || c == '.' || c == '_';
}

/* After "github.com/" at s: owner '/' repo. 0 with ref filled, or -1. */
static int read_ref(const char *s, struct wsp_ref *ref)
{
	size_t o = 0;
	while (owner_char(s[o]))
		o++;
	if (o == 0 || o > GH_OWNER_MAX || s[o] != '/')
		return -1;
	const char *r = s + o + 1;
	size_t n = 0;
	while (repo_char(r[n]))
		n++;
	/* sentence punctuation is not part of a name: "see github.com/a/b." */
	while (n > 0 && (r[n - 1] == '.' || r[n - 1] == '_' || r[n - 1] == '-'))
		n--;
	if (n > 4 && strncasecmp(r + n - 4, ".git", 4) == 0)
		n -= 4;
	if (n == 0 || n > GH_REPO_MAX)
		return -1;
	snprintf(ref->owner, sizeof ref->owner, "%.*s", (int)o, s);
	snprintf(ref->repo, sizeof ref->repo, "%.*s", (int)n, r);
	return gh_valid_owner(ref->owner) && gh_valid_repo(ref->repo) ? 0 : -1;
}

size_t wsp_find_refs(const char *text, const char *prefix, struct wsp_ref *out, size_t max)
{
	static const char host[] = "github.com/";
	size_t n = 0;
	for (const char *p = text; p && *p && n < max;) {
		const char *h = strcasestr(p, host);
		if (!h)
			break;
		p = h + sizeof host - 1;
		/* "notgithub.com/…" is another host; "www.github.com/" and
		 * "https://github.com/" are GitHub */
		if (h > text && (owner_char(h[-1]) || h[-1] == '_') &&
		    !(h - text >= 4 && strncasecmp(h - 4, "www.", 4) == 0))
			continue;
		struct wsp_ref r;
		if (read_ref(p, &r) != 0 || !wsp_has_prefix(r.repo, prefix))
			continue;
		bool dup = false;
		for (size_t i = 0; i < n && !dup; i++)
			dup = same_repo(out[i].owner, out[i].repo, r.owner, r.repo);
		if (!dup)
			out[n++] = r;
	}
	return n;
}
