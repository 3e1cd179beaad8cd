/*
 * ghfake_issues — issues and what hangs off them: comments, reactions,
 * labels, assignees, events, participants' notifications, and search. A
 * pull request is an issue here as on GitHub (one numbering; issue
 * endpoints work on PR numbers, and issue lists include PRs).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fakes/github/ghfake_int.h"

#define ASSIGNEES_MAX 10 /* GitHub's limit per issue */

/* --- state ----------------------------------------------------------------- */

struct gf_issue *gf_issue_new(struct ghfake *f, struct gf_repo *r, const char *author,
                              const char *title, const char *body)
{
	if (r->n_issues >= GHFAKE_ISSUES_MAX)
		return NULL;
	struct gf_issue *is = calloc(1, sizeof *is);
	if (!is)
		gf_die("out of memory");
	is->id = ++f->next_id;
	is->number = (int64_t)r->n_issues + 1;
	is->title = gf_dup(title);
	is->body = gf_dup(body);
	is->author = gf_dup(author);
	is->labels = cJSON_CreateArray();
	is->assignees = cJSON_CreateArray();
	is->created_ms = is->updated_ms = gf_now(f);
	r->issues = gf_grow(r->issues, r->n_issues + 1, sizeof *r->issues);
	r->issues[r->n_issues++] = is;
	return is;
}

void gf_issue_free(struct gf_issue *is)
{
	for (size_t k = 0; k < is->n_comments; k++) {
		free(is->comments[k].author);
		free(is->comments[k].body);
	}
	for (size_t k = 0; k < is->n_reactions; k++)
		free(is->reactions[k].user);
	free(is->comments);
	free(is->reactions);
	free(is->events);
	free(is->title);
	free(is->body);
	free(is->author);
	cJSON_Delete(is->labels);
	cJSON_Delete(is->assignees);
	if (is->pr)
		gf_pull_free(is->pr);
	free(is);
}

struct gf_comment *gf_comment_new(struct ghfake *f, struct gf_issue *is, const char *author,
                                  const char *body)
{
	if (is->n_comments >= GHFAKE_COMMENTS_MAX)
		return NULL;
	is->comments = gf_grow(is->comments, is->n_comments + 1, sizeof *is->comments);
	struct gf_comment *c = &is->comments[is->n_comments++];
	memset(c, 0, sizeof *c);
	c->id = ++f->next_id;
	c->author = gf_dup(author);
	c->body = gf_dup(body);
	c->created_ms = c->updated_ms = gf_now(f);
	is->updated_ms = c->created_ms;
	return c;
}

/* Events past the bound are dropped oldest first: the newest say what
 * state the issue is in. */
void gf_event_add(struct ghfake *f, struct gf_issue *is, const char *event, const char *actor,
                  const char *subject)
{
	if (is->n_events == GHFAKE_EVENTS_MAX) {
		memmove(is->events, is->events + 1, (is->n_events - 1) * sizeof *is->events);
		is->n_events--;
	}
	is->events = gf_grow(is->events, is->n_events + 1, sizeof *is->events);
	struct gf_event *e = &is->events[is->n_events++];
	memset(e, 0, sizeof *e);
	e->id = ++f->next_id;
	snprintf(e->event, sizeof e->event, "%s", event);
	snprintf(e->actor, sizeof e->actor, "%s", actor ? actor : "");
	snprintf(e->subject, sizeof e->subject, "%s", subject ? subject : "");
	e->created_ms = gf_now(f);
}

void gf_close_issue(struct ghfake *f, struct gf_issue *is, bool closed, const char *actor)
{
	if (closed == is->closed)
		return;
	if (closed)
		is->closed_ms = gf_now(f);
	is->closed = closed;
	is->updated_ms = gf_now(f);
	gf_event_add(f, is, closed ? "closed" : "reopened", actor, NULL);
}

/* "@login" in body, not glued to a longer login. */
static bool mentions(const char *body, const char *login)
{
	size_t ll = strlen(login);
	for (const char *p = body ? strchr(body, '@') : NULL; p; p = strchr(p + 1, '@')) {
		char after = p[1 + ll];
		if (strncasecmp(p + 1, login, ll) == 0 &&
		    !(isalnum((unsigned char)after) || after == '-'))
			return true;
	}
	return false;
}

struct gf_notif *gf_notif_upsert(struct ghfake *f, struct gf_repo *r, int64_t number,
                                 const char *login, const char *reason)
{
	size_t ri = (size_t)(r - f->repos);
	struct gf_notif *n = NULL;
	for (size_t i = 0; i < f->n_notifs && !n; i++)
		if (f->notifs[i].repo == ri && f->notifs[i].number == number && login && *login &&
		    strcasecmp(f->notifs[i].login, login) == 0)
			n = &f->notifs[i];
	if (!n) {
		if (f->n_notifs == GHFAKE_NOTIFS_MAX)
			return NULL;
		f->notifs = gf_grow(f->notifs, f->n_notifs + 1, sizeof *f->notifs);
		n = &f->notifs[f->n_notifs++];
		memset(n, 0, sizeof *n);
		n->id = ++f->next_id;
		n->repo = ri;
		n->number = number;
		snprintf(n->login, sizeof n->login, "%s", login ? login : "");
	}
	snprintf(n->reason, sizeof n->reason, "%s", reason ? reason : "mention");
	n->unread = true;
	n->updated_ms = gf_now(f);
	return n;
}

/* As GitHub does for participants: every token's login other than the
 * author gets (or has refreshed) an unread thread about the issue when the
 * text mentions it ("mention"), or when it opened the issue ("author") or
 * commented on it ("comment"). Nothing without registered tokens. */
void gf_notify_participants(struct ghfake *f, struct gf_repo *r, struct gf_issue *is,
                            const char *author, const char *body)
{
	for (size_t t = 0; t < f->n_tokens; t++) {
		const char *login = f->tokens[t].login;
		if (strcasecmp(login, author) == 0)
			continue;
		bool dup = false; /* two tokens of one login: one thread */
		for (size_t u = 0; u < t; u++)
			dup |= strcasecmp(f->tokens[u].login, login) == 0;
		if (dup)
			continue;
		const char *reason = NULL;
		if (mentions(body, login))
			reason = "mention";
		else if (strcasecmp(is->author, login) == 0)
			reason = "author";
		for (size_t i = 0; !reason && i < is->n_comments; i++)
			if (!is->comments[i].deleted &&
			    strcasecmp(is->comments[i].author, login) == 0)
				reason = "comment";
		if (reason)
			gf_notif_upsert(f, r, is->number, login, reason);
	}
}

/* --- labels and assignees ------------------------------------------------------ */

static cJSON *strings_of(const cJSON *v)
{
	cJSON *out = cJSON_CreateArray();
	const cJSON *e;
	cJSON_ArrayForEach(e, v)
	{
		const char *s = cJSON_IsString(e) ? e->valuestring
		                : cJSON_IsString(cJSON_GetObjectItem(e, "name"))
		                        ? cJSON_GetObjectItem(e, "name")->valuestring
		                        : NULL;
		bool dup = false;
		const cJSON *x;
		cJSON_ArrayForEach(x, out) dup |= s && strcasecmp(x->valuestring, s) == 0;
		if (s && *s && !dup)
			cJSON_AddItemToArray(out, cJSON_CreateString(s));
	}
	return out;
}

static bool has_string(const cJSON *arr, const char *s)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, arr) if (strcasecmp(e->valuestring, s) == 0) return true;
	return false;
}

static void remove_string(cJSON *arr, const char *s)
{
	int i = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, arr)
	{
		if (strcasecmp(e->valuestring, s) == 0) {
			cJSON_DeleteItemFromArray(arr, i);
			return;
		}
		i++;
	}
}

/* Replaces the labels, with labeled/unlabeled events for the difference. */
static void set_labels(struct ghfake *f, struct gf_issue *is, cJSON *want, const char *actor)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, is->labels) if (!has_string(want, e->valuestring))
	        gf_event_add(f, is, "unlabeled", actor, e->valuestring);
	cJSON_ArrayForEach(e, want) if (!has_string(is->labels, e->valuestring))
	        gf_event_add(f, is, "labeled", actor, e->valuestring);
	cJSON_Delete(is->labels);
	is->labels = want;
	is->updated_ms = gf_now(f);
}

/* GitHub drops, without an error, assignees who may not be assigned
 * (no push access to the repository). */
static bool assignable(struct ghfake *f, const struct gf_repo *r, const char *login)
{
	return f->n_tokens == 0 || gf_perm_of(f, r, login) >= GF_TRIAGE;
}

static void add_assignees(struct ghfake *f, struct gf_repo *r, struct gf_issue *is,
                          const cJSON *logins, const char *actor)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, logins)
	{
		if (cJSON_GetArraySize(is->assignees) >= ASSIGNEES_MAX)
			break;
		if (cJSON_IsString(e) && assignable(f, r, e->valuestring) &&
		    !has_string(is->assignees, e->valuestring)) {
			cJSON_AddItemToArray(is->assignees, cJSON_CreateString(e->valuestring));
			gf_event_add(f, is, "assigned", actor, e->valuestring);
		}
	}
	is->updated_ms = gf_now(f);
}

static void remove_assignees(struct ghfake *f, struct gf_issue *is, const cJSON *logins,
                             const char *actor)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, logins) if (cJSON_IsString(e) &&
	                                  has_string(is->assignees, e->valuestring))
	{
		remove_string(is->assignees, e->valuestring);
		gf_event_add(f, is, "unassigned", actor, e->valuestring);
	}
	is->updated_ms = gf_now(f);
}

/* The labels as GitHub answers the labels endpoints: [{name, …}]. */
static cJSON *labels_json(const struct gf_issue *is)
{
	cJSON *a = cJSON_CreateArray();
	const cJSON *l;
	cJSON_ArrayForEach(l, is->labels)
	{
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", l->valuestring);
		cJSON_AddStringToObject(o, "color", "ededed");
		cJSON_AddBoolToObject(o, "default", false);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* The labels of a labels request: {"labels": [...]} or a bare array. */
static cJSON *labels_in(const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = cJSON_ParseWithLength(req->body, req->body_len);
	const cJSON *arr = cJSON_IsArray(b) ? b : cJSON_GetObjectItem(b, "labels");
	if (!cJSON_IsArray(arr)) {
		cJSON_Delete(b);
		gf_invalid(resp, "Label", "labels", "missing_field");
		return NULL;
	}
	const cJSON *e;
	cJSON_ArrayForEach(e, arr) if (!cJSON_IsString(e) && !cJSON_IsObject(e))
	{
		cJSON_Delete(b);
		gf_invalid(resp, "Label", "labels", "invalid");
		return NULL;
	}
	cJSON *out = strings_of(arr);
	cJSON_Delete(b);
	return out;
}

static cJSON *event_json(struct ghfake *f, const struct gf_repo *r, const struct gf_issue *is,
                         const struct gf_event *e)
{
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)e->id);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/issues/events/%lld", httpfake_base_url(f->http),
	         r->owner, r->name, (long long)e->id);
	cJSON_AddStringToObject(o, "url", buf);
	cJSON_AddStringToObject(o, "event", e->event);
	cJSON_AddItemToObject(o, "actor", gf_user_json(e->actor));
	cJSON_AddStringToObject(o, "created_at", gf_iso(e->created_ms, t));
	if (strcmp(e->event, "assigned") == 0 || strcmp(e->event, "unassigned") == 0) {
		cJSON_AddItemToObject(o, "assignee", gf_user_json(e->subject));
		cJSON_AddItemToObject(o, "assigner", gf_user_json(e->actor));
	} else if (strcmp(e->event, "labeled") == 0 || strcmp(e->event, "unlabeled") == 0) {
		cJSON *l = cJSON_AddObjectToObject(o, "label");
		cJSON_AddStringToObject(l, "name", e->subject);
		cJSON_AddStringToObject(l, "color", "ededed");
	} else if (strncmp(e->event, "review_request", 14) == 0) {
		cJSON_AddItemToObject(o, "requested_reviewer", gf_user_json(e->subject));
		cJSON_AddItemToObject(o, "review_requester", gf_user_json(e->actor));
	}
	if (strcmp(e->event, "merged") == 0 || strcmp(e->event, "referenced") == 0 ||
	    (strcmp(e->event, "closed") == 0 && e->subject[0]))
		cJSON_AddStringToObject(o, "commit_id", e->subject);
	else
		cJSON_AddNullToObject(o, "commit_id");
	(void)is;
	return o;
}

/* --- routes -------------------------------------------------------------------- */

enum sort_key { SORT_CREATED, SORT_UPDATED, SORT_COMMENTS };
static enum sort_key g_sort; /* handlers run one at a time (httpfake) */
static bool g_asc;

static int cmp_issue(const void *a, const void *b)
{
	const struct gf_issue *x = *(struct gf_issue *const *)a, *y = *(struct gf_issue *const *)b;
	int64_t kx = g_sort == SORT_UPDATED    ? x->updated_ms
	             : g_sort == SORT_COMMENTS ? (int64_t)gf_live_comments(x)
	                                       : x->created_ms;
	int64_t ky = g_sort == SORT_UPDATED    ? y->updated_ms
	             : g_sort == SORT_COMMENTS ? (int64_t)gf_live_comments(y)
	                                       : y->created_ms;
	int c = kx < ky ? -1 : kx > ky ? 1 : x->number < y->number ? -1 : x->number > y->number;
	return g_asc ? c : -c;
}

static bool labels_match(const struct gf_issue *is, const char *want)
{
	if (!want || !*want)
		return true;
	char buf[512];
	snprintf(buf, sizeof buf, "%s", want);
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!has_string(is->labels, t))
			return false;
	return true;
}

static void list_issues(struct ghfake *f, struct gf_repo *r, const char *login,
                        const struct httpfake_request *req, struct httpfake_response *resp)
{
	(void)login;
	const char *state = gf_param(req, "state");
	const char *sort = gf_param(req, "sort");
	const char *dir = gf_param(req, "direction");
	const char *assignee = gf_param(req, "assignee");
	const char *creator = gf_param(req, "creator");
	int64_t since = 0;
	const char *s = gf_param(req, "since");
	if (s && time_parse_iso(s, &since) != 0) {
		gf_invalid(resp, "Issue", "since", "invalid");
		return;
	}
	g_sort = sort && strcmp(sort, "updated") == 0    ? SORT_UPDATED
	         : sort && strcmp(sort, "comments") == 0 ? SORT_COMMENTS
	                                                 : SORT_CREATED;
	g_asc = dir && strcmp(dir, "asc") == 0;
	struct gf_issue **v = calloc(r->n_issues ? r->n_issues : 1, sizeof *v);
	if (!v)
		gf_die("out of memory");
	size_t n = 0;
	for (size_t i = 0; i < r->n_issues; i++) {
		struct gf_issue *is = r->issues[i];
		bool want = !state || strcmp(state, "open") == 0 ? !is->closed
		            : strcmp(state, "closed") == 0       ? is->closed
		                                                 : true;
		want = want && labels_match(is, gf_param(req, "labels")) && is->updated_ms >= since;
		if (want && assignee && strcmp(assignee, "*") == 0)
			want = cJSON_GetArraySize(is->assignees) > 0;
		else if (want && assignee && strcmp(assignee, "none") == 0)
			want = cJSON_GetArraySize(is->assignees) == 0;
		else if (want && assignee)
			want = has_string(is->assignees, assignee);
		if (want && creator)
			want = strcasecmp(is->author, creator) == 0;
		if (want)
			v[n++] = is;
	}
	qsort(v, n, sizeof *v, cmp_issue);
	cJSON *all = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(all, gf_issue_json(f, r, v[i]));
	free(v);
	gf_paginate(f, req, resp, all, 30, NULL);
}

static void create_issue(struct ghfake *f, struct gf_repo *r, const char *login,
                         const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *title = cJSON_GetObjectItem(b, "title");
	const cJSON *body = cJSON_GetObjectItem(b, "body");
	if (!cJSON_IsString(title) || !title->valuestring[0]) {
		gf_invalid(resp, "Issue", "title", "missing_field");
	} else if (body && !cJSON_IsString(body) && !cJSON_IsNull(body)) {
		gf_invalid(resp, "Issue", "body", "invalid");
	} else if (cJSON_IsString(body) && strlen(body->valuestring) > 65536) {
		gf_invalid(resp, "Issue", "body", "too_long");
	} else {
		struct gf_issue *is = gf_issue_new(f, r, login, title->valuestring,
		                                   cJSON_IsString(body) ? body->valuestring : "");
		if (!is) {
			gf_error(resp, 422, "ghfake: too many issues in this repository");
		} else {
			set_labels(f, is, strings_of(cJSON_GetObjectItem(b, "labels")), login);
			add_assignees(f, r, is, cJSON_GetObjectItem(b, "assignees"), login);
			gf_notify_participants(f, r, is, login, is->body);
			httpfake_response_cjson(resp, 201, gf_issue_json(f, r, is));
		}
	}
	cJSON_Delete(b);
}

static void patch_issue(struct ghfake *f, struct gf_repo *r, struct gf_issue *is, const char *login,
                        const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *v = cJSON_GetObjectItem(b, "state");
	if (v && (!cJSON_IsString(v) ||
	          (strcmp(v->valuestring, "open") && strcmp(v->valuestring, "closed")))) {
		gf_invalid(resp, "Issue", "state", "invalid");
		cJSON_Delete(b);
		return;
	}
	if (v && is->pr && is->pr->merged && strcmp(v->valuestring, "open") == 0) {
		gf_unprocessable(resp, "Cannot reopen a merged pull request");
		cJSON_Delete(b);
		return;
	}
	if ((v = cJSON_GetObjectItem(b, "title")) && cJSON_IsString(v) && v->valuestring[0]) {
		free(is->title);
		is->title = gf_dup(v->valuestring);
	}
	if ((v = cJSON_GetObjectItem(b, "body")) && cJSON_IsString(v)) {
		free(is->body);
		is->body = gf_dup(v->valuestring);
	}
	if ((v = cJSON_GetObjectItem(b, "state")))
		gf_close_issue(f, is, strcmp(v->valuestring, "closed") == 0, login);
	if ((v = cJSON_GetObjectItem(b, "labels")) && cJSON_IsArray(v))
		set_labels(f, is, strings_of(v), login);
	if ((v = cJSON_GetObjectItem(b, "assignees")) && cJSON_IsArray(v)) {
		cJSON *old = cJSON_Duplicate(is->assignees, 1);
		remove_assignees(f, is, old, login);
		cJSON_Delete(old);
		add_assignees(f, r, is, v, login);
	}
	is->updated_ms = gf_now(f);
	cJSON_Delete(b);
	httpfake_response_cjson(resp, 200, gf_issue_json(f, r, is));
}

static void react(struct ghfake *f, struct gf_issue *is, int64_t comment_id, const char *login,
                  const struct httpfake_request *req, struct httpfake_response *resp)
{
	static const char *const kinds[] = {"+1",     "-1",     "laugh", "confused", "heart",
	                                    "hooray", "rocket", "eyes",  NULL};
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *c = cJSON_GetObjectItem(b, "content");
	bool ok = false;
	for (size_t i = 0; cJSON_IsString(c) && kinds[i]; i++)
		ok |= strcmp(c->valuestring, kinds[i]) == 0;
	if (!ok) {
		gf_invalid(resp, "Reaction", "content", "invalid");
		cJSON_Delete(b);
		return;
	}
	int status = 201;
	struct gf_reaction *x = NULL;
	for (size_t i = 0; i < is->n_reactions; i++)
		if (is->reactions[i].comment_id == comment_id &&
		    strcmp(is->reactions[i].user, login) == 0 &&
		    strcmp(is->reactions[i].content, c->valuestring) == 0) {
			x = &is->reactions[i];
			status = 200;
		}
	if (!x) {
		if (is->n_reactions >= GHFAKE_REACTIONS_MAX) {
			gf_error(resp, 422, "ghfake: too many reactions on this issue");
			cJSON_Delete(b);
			return;
		}
		is->reactions = gf_grow(is->reactions, is->n_reactions + 1, sizeof *is->reactions);
		x = &is->reactions[is->n_reactions++];
		x->id = ++f->next_id;
		x->comment_id = comment_id;
		x->user = gf_dup(login);
		snprintf(x->content, sizeof x->content, "%s", c->valuestring);
	}
	cJSON_Delete(b);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)x->id);
	cJSON_AddStringToObject(o, "content", x->content);
	cJSON_AddItemToObject(o, "user", gf_user_json(x->user));
	httpfake_response_cjson(resp, status, o);
}

static struct gf_comment *find_comment(struct gf_repo *r, int64_t id, struct gf_issue **in)
{
	for (size_t i = 0; r && i < r->n_issues; i++)
		for (size_t j = 0; j < r->issues[i]->n_comments; j++)
			if (r->issues[i]->comments[j].id == id &&
			    !r->issues[i]->comments[j].deleted) {
				if (in)
					*in = r->issues[i];
				return &r->issues[i]->comments[j];
			}
	return NULL;
}

static void labels_route(struct ghfake *f, struct gf_issue *is, const char *login, const char *rest,
                         const struct httpfake_request *req, struct httpfake_response *resp)
{
	const char *m = req->method;
	if (!*rest && strcmp(m, "GET") == 0) {
		gf_paginate(f, req, resp, labels_json(is), 30, NULL);
	} else if (!*rest && (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0)) {
		cJSON *want = labels_in(req, resp);
		if (!want)
			return;
		if (strcmp(m, "POST") == 0) { /* adds to what is there */
			cJSON *all = cJSON_Duplicate(is->labels, 1);
			const cJSON *e;
			cJSON_ArrayForEach(e, want) if (!has_string(all, e->valuestring))
			        cJSON_AddItemToArray(all, cJSON_CreateString(e->valuestring));
			cJSON_Delete(want);
			want = all;
		}
		set_labels(f, is, want, login);
		httpfake_response_cjson(resp, 200, labels_json(is));
	} else if (!*rest && strcmp(m, "DELETE") == 0) {
		set_labels(f, is, cJSON_CreateArray(), login);
		resp->status = 204;
	} else if (rest[0] == '/' && rest[1] && strcmp(m, "DELETE") == 0) {
		if (!has_string(is->labels, rest + 1)) {
			gf_error(resp, 404, "Label does not exist");
			return;
		}
		cJSON *want = cJSON_Duplicate(is->labels, 1);
		remove_string(want, rest + 1);
		set_labels(f, is, want, login);
		httpfake_response_cjson(resp, 200, labels_json(is));
	} else {
		gf_error(resp, 404, "Not Found");
	}
}

static void assignees_route(struct ghfake *f, struct gf_repo *r, struct gf_issue *is,
                            const char *login, const struct httpfake_request *req,
                            struct httpfake_response *resp)
{
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *a = cJSON_GetObjectItem(b, "assignees");
	if (!cJSON_IsArray(a)) {
		gf_invalid(resp, "Issue", "assignees", "missing_field");
		cJSON_Delete(b);
		return;
	}
	if (strcmp(req->method, "POST") == 0) {
		add_assignees(f, r, is, a, login);
		httpfake_response_cjson(resp, 201, gf_issue_json(f, r, is));
	} else {
		remove_assignees(f, is, a, login);
		httpfake_response_cjson(resp, 200, gf_issue_json(f, r, is));
	}
	cJSON_Delete(b);
}

/* GitHub gives closed_by (the user who closed it last, null while open)
 * in one issue's JSON, not in lists. */
static cJSON *with_closed_by(cJSON *o, const struct gf_issue *is)
{
	const char *who = NULL;
	for (size_t i = 0; is->closed && i < is->n_events; i++)
		if (strcmp(is->events[i].event, "closed") == 0)
			who = is->events[i].actor;
	if (who && who[0])
		cJSON_AddItemToObject(o, "closed_by", gf_user_json(who));
	else
		cJSON_AddNullToObject(o, "closed_by");
	return o;
}

void gf_route_issues(struct ghfake *f, struct gf_repo *r, const char *login, const char *p,
                     const struct httpfake_request *req, struct httpfake_response *resp)
{
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0;
	if (!*p) {
		gf_collection(f, r, login, req, resp, list_issues, create_issue);
		return;
	}
	const char *e;
	if (strncmp(p, "/comments/", 10) == 0) {
		int64_t id = gf_num(p + 10, &e);
		struct gf_issue *is = NULL;
		struct gf_comment *c = id > 0 ? find_comment(r, id, &is) : NULL;
		if (!c) {
			gf_error(resp, 404, "Not Found");
		} else if (!*e && strcmp(m, "DELETE") == 0) {
			c->deleted = true;
			resp->status = 204;
		} else if (!*e && get) {
			httpfake_response_cjson(resp, 200, gf_comment_json(f, r, is, c));
		} else if (strcmp(e, "/reactions") == 0 && strcmp(m, "POST") == 0) {
			react(f, is, id, login, req, resp);
		} else {
			gf_error(resp, 404, "Not Found");
		}
		return;
	}
	int64_t n = *p == '/' ? gf_num(p + 1, &e) : -1;
	struct gf_issue *is = n > 0 ? gf_find_issue(r, n) : NULL;
	if (!is) {
		gf_error(resp, 404, "Not Found");
		return;
	}
	if (!*e && get) {
		httpfake_response_cjson(resp, 200, with_closed_by(gf_issue_json(f, r, is), is));
	} else if (!*e && strcmp(m, "PATCH") == 0) {
		patch_issue(f, r, is, login, req, resp);
	} else if (strcmp(e, "/comments") == 0 && get) {
		cJSON *all = cJSON_CreateArray();
		for (size_t i = 0; i < is->n_comments; i++)
			if (!is->comments[i].deleted)
				cJSON_AddItemToArray(all,
				                     gf_comment_json(f, r, is, &is->comments[i]));
		gf_paginate(f, req, resp, all, 30, NULL);
	} else if (strcmp(e, "/comments") == 0 && strcmp(m, "POST") == 0) {
		cJSON *b = gf_parse_body(req, resp);
		if (!b)
			return;
		const cJSON *body = cJSON_GetObjectItem(b, "body");
		if (!cJSON_IsString(body) || !body->valuestring[0]) {
			gf_invalid(resp, "IssueComment", "body", "missing_field");
		} else {
			struct gf_comment *c = gf_comment_new(f, is, login, body->valuestring);
			if (!c) {
				gf_error(resp, 422, "ghfake: too many comments on this issue");
			} else {
				gf_notify_participants(f, r, is, login, body->valuestring);
				httpfake_response_cjson(resp, 201, gf_comment_json(f, r, is, c));
			}
		}
		cJSON_Delete(b);
	} else if (strcmp(e, "/reactions") == 0 && strcmp(m, "POST") == 0) {
		react(f, is, 0, login, req, resp);
	} else if (strncmp(e, "/labels", 7) == 0) {
		labels_route(f, is, login, e + 7, req, resp);
	} else if (strcmp(e, "/assignees") == 0 &&
	           (strcmp(m, "POST") == 0 || strcmp(m, "DELETE") == 0)) {
		assignees_route(f, r, is, login, req, resp);
	} else if (strcmp(e, "/events") == 0 && get) {
		cJSON *all = cJSON_CreateArray();
		for (size_t i = 0; i < is->n_events; i++)
			cJSON_AddItemToArray(all, event_json(f, r, is, &is->events[i]));
		gf_paginate(f, req, resp, all, 30, NULL);
	} else {
		gf_error(resp, 404, "Not Found");
	}
}

/* --- search ------------------------------------------------------------------------ */

struct query {
	char terms[8][257];
	size_t n_terms;
	char repo[160];
	int is_pr;  /* -1 any */
	int closed; /* -1 any */
	char author[64];
	bool in_title, in_body, in_comments;
};

static int parse_query(const char *q, struct query *out)
{
	memset(out, 0, sizeof *out);
	out->is_pr = out->closed = -1;
	bool any_in = false;
	const char *p = q;
	while (*p) {
		while (*p == ' ' || *p == '+')
			p++;
		if (!*p)
			break;
		char tok[257];
		size_t n = 0;
		bool quoted = *p == '"';
		if (quoted) {
			p++;
			while (*p && *p != '"' && n < sizeof tok - 1)
				tok[n++] = *p++;
			if (*p == '"')
				p++;
		} else {
			while (*p && *p != ' ' && n < sizeof tok - 1)
				tok[n++] = *p++;
		}
		tok[n] = '\0';
		char *colon = quoted ? NULL : strchr(tok, ':');
		if (colon) {
			*colon = '\0';
			const char *v = colon + 1;
			if (strcmp(tok, "repo") == 0) {
				snprintf(out->repo, sizeof out->repo, "%s", v);
				continue;
			} else if (strcmp(tok, "is") == 0 || strcmp(tok, "type") == 0 ||
			           strcmp(tok, "state") == 0) {
				if (strcmp(v, "issue") == 0)
					out->is_pr = 0;
				else if (strcmp(v, "pr") == 0)
					out->is_pr = 1;
				else if (strcmp(v, "open") == 0)
					out->closed = 0;
				else if (strcmp(v, "closed") == 0)
					out->closed = 1;
				continue;
			} else if (strcmp(tok, "author") == 0) {
				snprintf(out->author, sizeof out->author, "%s", v);
				continue;
			} else if (strcmp(tok, "in") == 0) {
				any_in = true;
				out->in_title |= strstr(v, "title") != NULL;
				out->in_body |= strstr(v, "body") != NULL;
				out->in_comments |= strstr(v, "comments") != NULL;
				continue;
			}
			*colon = ':'; /* not a qualifier we know: a term */
		}
		if (out->n_terms == sizeof out->terms / sizeof out->terms[0])
			return -1;
		snprintf(out->terms[out->n_terms++], sizeof out->terms[0], "%s", tok);
	}
	if (!any_in)
		out->in_title = out->in_body = out->in_comments = true;
	return 0;
}

static bool issue_matches(const struct gf_issue *is, const struct query *q)
{
	if (q->closed >= 0 && is->closed != (q->closed == 1))
		return false;
	if (q->is_pr >= 0 && (is->pr != NULL) != (q->is_pr == 1))
		return false;
	if (q->author[0] && strcasecmp(q->author, is->author) != 0)
		return false;
	for (size_t t = 0; t < q->n_terms; t++) {
		const char *term = q->terms[t];
		bool hit = (q->in_title && strcasestr(is->title, term)) ||
		           (q->in_body && strcasestr(is->body, term));
		for (size_t i = 0; !hit && q->in_comments && i < is->n_comments; i++)
			hit = !is->comments[i].deleted && strcasestr(is->comments[i].body, term);
		if (!hit)
			return false;
	}
	return true;
}

void gf_search(struct ghfake *f, const struct httpfake_request *req, struct httpfake_response *resp)
{
	const char *qs = gf_param(req, "q");
	struct query q;
	if (!qs || !*qs) {
		gf_invalid(resp, "Search", "q", "missing");
		return;
	}
	if (parse_query(qs, &q) != 0) {
		gf_error(resp, 422, "ghfake: too many search terms");
		return;
	}
	cJSON *all = cJSON_CreateArray();
	for (size_t i = 0; i < f->n_repos; i++) {
		struct gf_repo *r = &f->repos[i];
		char full[160];
		snprintf(full, sizeof full, "%s/%s", r->owner, r->name);
		if (q.repo[0] && strcasecmp(q.repo, full) != 0)
			continue;
		for (size_t j = 0; j < r->n_issues; j++)
			if (issue_matches(r->issues[j], &q))
				cJSON_AddItemToArray(all, gf_issue_json(f, r, r->issues[j]));
	}
	gf_paginate(f, req, resp, all, 30, "items");
}
