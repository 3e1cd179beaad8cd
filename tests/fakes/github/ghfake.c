/*
 * ghfake — see ghfake.h. One httpfake handler answers every path; it
 * parses the path into a route by hand, the way GitHub's URL scheme reads.
 */
#include "tests/fakes/github/ghfake.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/timeutil.h"

#define DOCS "https://docs.github.com/rest"
#define PRIMARY_DOCS                                                                               \
	"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-"    \
	"rate-limit"
#define SECONDARY_DOCS                                                                             \
	"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-"     \
	"api#about-secondary-rate-limits"

struct comment {
	int64_t id;
	char *author;
	char *body;
	int64_t created_ms, updated_ms;
	bool deleted;
};

struct reaction {
	int64_t id;
	int64_t comment_id; /* 0 = on the issue */
	char *user;
	char content[16];
};

struct issue {
	int64_t id;
	int64_t number;
	char *title, *body, *author;
	bool closed;
	cJSON *labels; /* array of strings */
	cJSON *assignees;
	int64_t created_ms, updated_ms, closed_ms;
	struct comment *comments;
	size_t n_comments;
	struct reaction *reactions;
	size_t n_reactions;
};

struct repo {
	char owner[40];
	char name[101];
	unsigned flags;
	int64_t id;
	struct issue **issues;
	size_t n_issues;
};

struct notif {
	int64_t id;
	size_t repo;
	int64_t number;
	char login[40]; /* the recipient; "" = every token sees it */
	char reason[32];
	bool unread;
	int64_t updated_ms;
};

struct bucket {
	int64_t limit; /* 0 = off */
	int64_t remaining;
	int64_t reset_ms;
	int64_t window_ms;
};

struct logline {
	char method[8];
	char path[200];
	int status;
};

struct ghfake {
	struct httpfake *http;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int64_t (*now)(void *);
	void *now_ud;
	struct {
		char *token, *login;
	} tokens[GHFAKE_TOKENS_MAX];
	size_t n_tokens;
	struct repo repos[GHFAKE_REPOS_MAX];
	size_t n_repos;
	struct notif *notifs;
	size_t n_notifs;
	int64_t next_id;
	struct bucket core, search;
	unsigned secondary_n;
	int secondary_status, secondary_retry;
	unsigned fail_n;
	int fail_status;
	bool fail_html;
	unsigned delay_ms;
	struct logline log[GHFAKE_LOG_MAX];
	uint64_t n_log;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ghfake: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

static char *dup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		die("out of memory");
	return d;
}

static void *grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, (n ? n : 1) * size);
	if (!q)
		die("out of memory");
	return q;
}

static int64_t real_now(void *ud)
{
	(void)ud;
	return time_now_ms();
}

static int64_t now(struct ghfake *f)
{
	return f->now(f->now_ud);
}

static char *iso(int64_t ms, char buf[TIME_ISO_LEN + 1])
{
	/* GitHub writes seconds, no fraction: "2026-11-23T10:00:00Z". */
	time_format_iso(ms, buf);
	buf[19] = 'Z';
	buf[20] = '\0';
	return buf;
}

/* --- lookups (locked) ------------------------------------------------------- */

static struct repo *find_repo(struct ghfake *f, const char *owner, const char *name)
{
	for (size_t i = 0; i < f->n_repos; i++)
		if (strcasecmp(f->repos[i].owner, owner) == 0 &&
		    strcasecmp(f->repos[i].name, name) == 0)
			return &f->repos[i];
	return NULL;
}

static struct issue *find_issue(struct repo *r, int64_t number)
{
	if (!r || number < 1 || (size_t)number > r->n_issues)
		return NULL;
	return r->issues[number - 1];
}

static struct comment *find_comment(struct repo *r, int64_t id, struct issue **in)
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

/* --- rendering ------------------------------------------------------------------- */

static cJSON *user_json(const char *login)
{
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "login", login);
	cJSON_AddStringToObject(u, "type", "User");
	return u;
}

static cJSON *repo_json(struct ghfake *f, const struct repo *r)
{
	char buf[512];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)r->id);
	cJSON_AddStringToObject(o, "name", r->name);
	snprintf(buf, sizeof buf, "%s/%s", r->owner, r->name);
	cJSON_AddStringToObject(o, "full_name", buf);
	cJSON_AddItemToObject(o, "owner", user_json(r->owner));
	cJSON_AddBoolToObject(o, "private", false);
	snprintf(buf, sizeof buf, "https://github.com/%s/%s", r->owner, r->name);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s", httpfake_base_url(f->http), r->owner, r->name);
	cJSON_AddStringToObject(o, "url", buf);
	cJSON_AddBoolToObject(o, "has_issues", !(r->flags & GHFAKE_REPO_ISSUES_DISABLED));
	size_t open = 0;
	for (size_t i = 0; i < r->n_issues; i++)
		open += !r->issues[i]->closed;
	cJSON_AddNumberToObject(o, "open_issues_count", (double)open);
	cJSON *perm = cJSON_AddObjectToObject(o, "permissions");
	cJSON_AddBoolToObject(perm, "pull", true);
	cJSON_AddBoolToObject(perm, "push", !(r->flags & GHFAKE_REPO_READONLY));
	return o;
}

static size_t live_comments(const struct issue *is)
{
	size_t n = 0;
	for (size_t i = 0; i < is->n_comments; i++)
		n += !is->comments[i].deleted;
	return n;
}

static cJSON *issue_json(struct ghfake *f, const struct repo *r, const struct issue *is)
{
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)is->id);
	cJSON_AddNumberToObject(o, "number", (double)is->number);
	cJSON_AddStringToObject(o, "title", is->title);
	cJSON_AddStringToObject(o, "body", is->body);
	cJSON_AddStringToObject(o, "state", is->closed ? "closed" : "open");
	cJSON_AddItemToObject(o, "user", user_json(is->author));
	cJSON *labels = cJSON_AddArrayToObject(o, "labels");
	const cJSON *l;
	cJSON_ArrayForEach(l, is->labels)
	{
		cJSON *lo = cJSON_CreateObject();
		cJSON_AddStringToObject(lo, "name", l->valuestring);
		cJSON_AddItemToArray(labels, lo);
	}
	cJSON *as = cJSON_AddArrayToObject(o, "assignees");
	cJSON_ArrayForEach(l, is->assignees) cJSON_AddItemToArray(as, user_json(l->valuestring));
	cJSON_AddNumberToObject(o, "comments", (double)live_comments(is));
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/issues/%lld", r->owner, r->name,
	         (long long)is->number);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/issues/%lld", httpfake_base_url(f->http),
	         r->owner, r->name, (long long)is->number);
	cJSON_AddStringToObject(o, "url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s", httpfake_base_url(f->http), r->owner, r->name);
	cJSON_AddStringToObject(o, "repository_url", buf);
	cJSON_AddStringToObject(o, "created_at", iso(is->created_ms, t));
	cJSON_AddStringToObject(o, "updated_at", iso(is->updated_ms, t));
	if (is->closed)
		cJSON_AddStringToObject(o, "closed_at", iso(is->closed_ms, t));
	else
		cJSON_AddNullToObject(o, "closed_at");
	return o;
}

static cJSON *comment_json(struct ghfake *f, const struct repo *r, const struct issue *is,
                           const struct comment *c)
{
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)c->id);
	cJSON_AddStringToObject(o, "body", c->body);
	cJSON_AddItemToObject(o, "user", user_json(c->author));
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/issues/%lld#issuecomment-%lld",
	         r->owner, r->name, (long long)is->number, (long long)c->id);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/issues/%lld", httpfake_base_url(f->http),
	         r->owner, r->name, (long long)is->number);
	cJSON_AddStringToObject(o, "issue_url", buf);
	cJSON_AddStringToObject(o, "created_at", iso(c->created_ms, t));
	cJSON_AddStringToObject(o, "updated_at", iso(c->updated_ms, t));
	return o;
}

static cJSON *notif_json(struct ghfake *f, const struct notif *n)
{
	const struct repo *r = &f->repos[n->repo];
	const struct issue *is = find_issue((struct repo *)r, n->number);
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	snprintf(buf, sizeof buf, "%lld", (long long)n->id);
	cJSON_AddStringToObject(o, "id", buf);
	cJSON_AddBoolToObject(o, "unread", n->unread);
	cJSON_AddStringToObject(o, "reason", n->reason);
	if (n->login[0])
		cJSON_AddStringToObject(o, "recipient", n->login);
	cJSON_AddStringToObject(o, "updated_at", iso(n->updated_ms, t));
	cJSON *s = cJSON_AddObjectToObject(o, "subject");
	cJSON_AddStringToObject(s, "title", is ? is->title : "");
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/issues/%lld", httpfake_base_url(f->http),
	         r->owner, r->name, (long long)n->number);
	cJSON_AddStringToObject(s, "url", buf);
	cJSON_AddStringToObject(s, "type", "Issue");
	cJSON *ro = cJSON_AddObjectToObject(o, "repository");
	cJSON_AddStringToObject(ro, "name", r->name);
	snprintf(buf, sizeof buf, "%s/%s", r->owner, r->name);
	cJSON_AddStringToObject(ro, "full_name", buf);
	cJSON_AddItemToObject(ro, "owner", user_json(r->owner));
	snprintf(buf, sizeof buf, "%s/notifications/threads/%lld", httpfake_base_url(f->http),
	         (long long)n->id);
	cJSON_AddStringToObject(o, "url", buf);
	return o;
}

/* --- answers ---------------------------------------------------------------------- */

static void error(struct httpfake_response *resp, int status, const char *message)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "message", message);
	cJSON_AddStringToObject(o, "documentation_url", DOCS);
	httpfake_response_cjson(resp, status, o);
}

/* 422 Validation Failed naming the field, as GitHub words it. */
static void invalid(struct httpfake_response *resp, const char *resource, const char *field,
                    const char *code)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "message", "Validation Failed");
	cJSON *errs = cJSON_AddArrayToObject(o, "errors");
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "resource", resource);
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "field", field);
	cJSON_AddItemToArray(errs, e);
	cJSON_AddStringToObject(o, "documentation_url", DOCS);
	httpfake_response_cjson(resp, 422, o);
}

static const char *param(const struct httpfake_request *req, const char *name)
{
	return httpfake_request_param(req, name);
}

static void append_encoded(char *out, size_t cap, const char *v)
{
	size_t n = strlen(out);
	for (const unsigned char *p = (const unsigned char *)v; *p && n + 4 < cap; p++) {
		if (isalnum(*p) || strchr("-._~", *p))
			out[n++] = (char)*p;
		else
			n += (size_t)snprintf(out + n, cap - n, "%%%02X", *p);
	}
	out[n] = '\0';
}

/* The URL of page `page` of this request: same path and parameters. */
static void page_url(struct ghfake *f, const struct httpfake_request *req, long page, char *out,
                     size_t cap)
{
	snprintf(out, cap, "%s%s?", httpfake_base_url(f->http), req->path);
	for (size_t i = 0; i < req->n_params; i++) {
		if (strcmp(req->params[i].name, "page") == 0)
			continue;
		append_encoded(out, cap, req->params[i].name);
		strncat(out, "=", cap - strlen(out) - 1);
		append_encoded(out, cap, req->params[i].value);
		strncat(out, "&", cap - strlen(out) - 1);
	}
	size_t n = strlen(out);
	snprintf(out + n, cap - n, "page=%ld", page);
}

/* Answers one page of all (consumed). items_field: wrap as search does. */
static void paginate(struct ghfake *f, const struct httpfake_request *req,
                     struct httpfake_response *resp, cJSON *all, long def_per_page,
                     const char *items_field)
{
	const char *pp = param(req, "per_page"), *pg = param(req, "page");
	long per_page = pp ? strtol(pp, NULL, 10) : def_per_page;
	long page = pg ? strtol(pg, NULL, 10) : 1;
	if (per_page < 1)
		per_page = def_per_page;
	if (per_page > 100)
		per_page = 100;
	if (page < 1)
		page = 1;
	long total = cJSON_GetArraySize(all);
	long last = total == 0 ? 1 : (total + per_page - 1) / per_page;
	cJSON *out = cJSON_CreateArray();
	for (long i = (page - 1) * per_page; i < page * per_page && i < total; i++)
		cJSON_AddItemToArray(out, cJSON_Duplicate(cJSON_GetArrayItem(all, (int)i), 1));
	cJSON_Delete(all);
	char link[8192] = "", u[2048];
	if (page < last) {
		page_url(f, req, page + 1, u, sizeof u);
		snprintf(link + strlen(link), sizeof link - strlen(link), "<%s>; rel=\"next\", ",
		         u);
		page_url(f, req, last, u, sizeof u);
		snprintf(link + strlen(link), sizeof link - strlen(link), "<%s>; rel=\"last\", ",
		         u);
	}
	if (page > 1) {
		page_url(f, req, 1, u, sizeof u);
		snprintf(link + strlen(link), sizeof link - strlen(link), "<%s>; rel=\"first\", ",
		         u);
		page_url(f, req, page - 1, u, sizeof u);
		snprintf(link + strlen(link), sizeof link - strlen(link), "<%s>; rel=\"prev\", ",
		         u);
	}
	size_t ll = strlen(link);
	if (ll >= 2) {
		link[ll - 2] = '\0';
		httpfake_response_header(resp, "Link", link);
	}
	if (items_field) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "total_count", (double)total);
		cJSON_AddBoolToObject(o, "incomplete_results", false);
		cJSON_AddItemToObject(o, items_field, out);
		out = o;
	}
	httpfake_response_cjson(resp, 200, out);
}

/* --- rate limits --------------------------------------------------------------------- */

static void refill(struct bucket *b, int64_t t)
{
	if (b->limit > 0 && t >= b->reset_ms) {
		b->remaining = b->limit;
		b->reset_ms = t + b->window_ms;
	}
}

static void rate_headers(struct httpfake_response *resp, const struct bucket *b, const char *name,
                         int64_t t)
{
	char v[32];
	int64_t limit = b->limit > 0 ? b->limit : 5000;
	int64_t remaining = b->limit > 0 ? b->remaining : 5000;
	int64_t reset = b->limit > 0 ? b->reset_ms : t + 3600 * 1000;
	snprintf(v, sizeof v, "%lld", (long long)limit);
	httpfake_response_header(resp, "x-ratelimit-limit", v);
	snprintf(v, sizeof v, "%lld", (long long)remaining);
	httpfake_response_header(resp, "x-ratelimit-remaining", v);
	snprintf(v, sizeof v, "%lld", (long long)(limit - remaining));
	httpfake_response_header(resp, "x-ratelimit-used", v);
	snprintf(v, sizeof v, "%lld", (long long)((reset + 999) / 1000));
	httpfake_response_header(resp, "x-ratelimit-reset", v);
	httpfake_response_header(resp, "x-ratelimit-resource", name);
}

/* --- routes --------------------------------------------------------------------------- */

static const char *login_of(struct ghfake *f, const struct httpfake_request *req, bool *ok)
{
	*ok = true;
	if (f->n_tokens == 0)
		return "agent";
	const char *a = httpfake_request_header(req, "Authorization");
	if (a && strncmp(a, "Bearer ", 7) == 0)
		for (size_t i = 0; i < f->n_tokens; i++)
			if (strcmp(a + 7, f->tokens[i].token) == 0)
				return f->tokens[i].login;
	*ok = false;
	return NULL;
}

static cJSON *parse_body(const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = cJSON_ParseWithLength(req->body, req->body_len);
	if (!cJSON_IsObject(b)) {
		cJSON_Delete(b);
		error(resp, 400, "Problems parsing JSON");
		return NULL;
	}
	return b;
}

static bool labels_match(const struct issue *is, const char *want)
{
	if (!want || !*want)
		return true;
	char buf[512];
	snprintf(buf, sizeof buf, "%s", want);
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		bool found = false;
		const cJSON *l;
		cJSON_ArrayForEach(l, is->labels) found |= strcasecmp(l->valuestring, t) == 0;
		if (!found)
			return false;
	}
	return true;
}

static void list_issues(struct ghfake *f, struct repo *r, const struct httpfake_request *req,
                        struct httpfake_response *resp)
{
	const char *state = param(req, "state");
	const char *sort = param(req, "sort");
	const char *dir = param(req, "direction");
	bool asc = dir && strcmp(dir, "asc") == 0;
	bool by_updated = sort && strcmp(sort, "updated") == 0;
	cJSON *all = cJSON_CreateArray();
	for (size_t k = 0; k < r->n_issues; k++) {
		/* default: newest first */
		size_t i = asc ? k : r->n_issues - 1 - k;
		const struct issue *is = r->issues[i];
		if (by_updated) /* good enough: updated order = number order in the fake */
			is = r->issues[i];
		bool want = !state || strcmp(state, "open") == 0 ? !is->closed
		            : strcmp(state, "closed") == 0       ? is->closed
		                                                 : true;
		if (want && labels_match(is, param(req, "labels")))
			cJSON_AddItemToArray(all, issue_json(f, r, is));
	}
	paginate(f, req, resp, all, 30, NULL);
}

static cJSON *strings_of(const cJSON *v)
{
	cJSON *out = cJSON_CreateArray();
	const cJSON *e;
	cJSON_ArrayForEach(e, v)
	{
		if (cJSON_IsString(e))
			cJSON_AddItemToArray(out, cJSON_CreateString(e->valuestring));
		else if (cJSON_IsString(cJSON_GetObjectItem(e, "name")))
			cJSON_AddItemToArray(
			        out,
			        cJSON_CreateString(cJSON_GetObjectItem(e, "name")->valuestring));
	}
	return out;
}

static struct issue *new_issue(struct ghfake *f, struct repo *r, const char *author,
                               const char *title, const char *body)
{
	if (r->n_issues >= GHFAKE_ISSUES_MAX)
		return NULL;
	struct issue *is = calloc(1, sizeof *is);
	if (!is)
		die("out of memory");
	is->id = ++f->next_id;
	is->number = (int64_t)r->n_issues + 1;
	is->title = dup(title);
	is->body = dup(body);
	is->author = dup(author);
	is->labels = cJSON_CreateArray();
	is->assignees = cJSON_CreateArray();
	is->created_ms = is->updated_ms = now(f);
	r->issues = grow(r->issues, r->n_issues + 1, sizeof *r->issues);
	r->issues[r->n_issues++] = is;
	return is;
}

static struct comment *new_comment(struct ghfake *f, struct issue *is, const char *author,
                                   const char *body)
{
	if (is->n_comments >= GHFAKE_COMMENTS_MAX)
		return NULL;
	is->comments = grow(is->comments, is->n_comments + 1, sizeof *is->comments);
	struct comment *c = &is->comments[is->n_comments++];
	memset(c, 0, sizeof *c);
	c->id = ++f->next_id;
	c->author = dup(author);
	c->body = dup(body);
	c->created_ms = c->updated_ms = now(f);
	is->updated_ms = c->created_ms;
	return c;
}

/* "@login" in body, not glued to a longer login. */
static bool mentions(const char *body, const char *login)
{
	size_t ll = strlen(login);
	for (const char *p = body ? strchr(body, '@') : NULL; p; p = strchr(p + 1, '@')) {
		char after = p[1 + ll];
		if (strncasecmp(p + 1, login, ll) == 0 &&
		    !((after >= 'a' && after <= 'z') || (after >= 'A' && after <= 'Z') ||
		      (after >= '0' && after <= '9') || after == '-'))
			return true;
	}
	return false;
}

static struct notif *notif_upsert(struct ghfake *f, struct repo *r, int64_t number,
                                  const char *login, const char *reason)
{
	size_t ri = (size_t)(r - f->repos);
	struct notif *n = NULL;
	for (size_t i = 0; i < f->n_notifs && !n; i++)
		if (f->notifs[i].repo == ri && f->notifs[i].number == number &&
		    strcasecmp(f->notifs[i].login, login ? login : "") == 0 && login && *login)
			n = &f->notifs[i];
	if (!n) {
		if (f->n_notifs == GHFAKE_NOTIFS_MAX)
			return NULL;
		f->notifs = grow(f->notifs, f->n_notifs + 1, sizeof *f->notifs);
		n = &f->notifs[f->n_notifs++];
		memset(n, 0, sizeof *n);
		n->id = ++f->next_id;
		n->repo = ri;
		n->number = number;
		snprintf(n->login, sizeof n->login, "%s", login ? login : "");
	}
	snprintf(n->reason, sizeof n->reason, "%s", reason ? reason : "mention");
	n->unread = true;
	n->updated_ms = now(f);
	return n;
}

/* As GitHub does for participants: every token's login other than the
 * author gets (or has refreshed) an unread thread about the issue when the
 * text mentions it ("mention"), or when it opened the issue ("author") or
 * commented on it ("comment"). Nothing without registered tokens. */
static void notify_participants(struct ghfake *f, struct repo *r, struct issue *is,
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
			if (!is->comments[i].deleted && strcasecmp(is->comments[i].author, login) == 0)
				reason = "comment";
		if (reason)
			notif_upsert(f, r, is->number, login, reason);
	}
}

static void create_issue(struct ghfake *f, struct repo *r, const char *login,
                         const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = parse_body(req, resp);
	if (!b)
		return;
	const cJSON *title = cJSON_GetObjectItem(b, "title");
	const cJSON *body = cJSON_GetObjectItem(b, "body");
	if (!cJSON_IsString(title) || !title->valuestring[0]) {
		invalid(resp, "Issue", "title", "missing_field");
	} else if (body && !cJSON_IsString(body) && !cJSON_IsNull(body)) {
		invalid(resp, "Issue", "body", "invalid");
	} else if (cJSON_IsString(body) && strlen(body->valuestring) > 65536) {
		invalid(resp, "Issue", "body", "too_long");
	} else {
		struct issue *is = new_issue(f, r, login, title->valuestring,
		                             cJSON_IsString(body) ? body->valuestring : "");
		if (!is) {
			error(resp, 422, "ghfake: too many issues in this repository");
		} else {
			cJSON_Delete(is->labels);
			is->labels = strings_of(cJSON_GetObjectItem(b, "labels"));
			cJSON_Delete(is->assignees);
			is->assignees = strings_of(cJSON_GetObjectItem(b, "assignees"));
			notify_participants(f, r, is, login, is->body);
			httpfake_response_cjson(resp, 201, issue_json(f, r, is));
		}
	}
	cJSON_Delete(b);
}

static void patch_issue(struct ghfake *f, struct repo *r, struct issue *is,
                        const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = parse_body(req, resp);
	if (!b)
		return;
	const cJSON *v;
	if ((v = cJSON_GetObjectItem(b, "title")) && cJSON_IsString(v) && v->valuestring[0]) {
		free(is->title);
		is->title = dup(v->valuestring);
	}
	if ((v = cJSON_GetObjectItem(b, "body")) && cJSON_IsString(v)) {
		free(is->body);
		is->body = dup(v->valuestring);
	}
	if ((v = cJSON_GetObjectItem(b, "state")) && cJSON_IsString(v)) {
		if (strcmp(v->valuestring, "open") && strcmp(v->valuestring, "closed")) {
			invalid(resp, "Issue", "state", "invalid");
			cJSON_Delete(b);
			return;
		}
		bool closed = strcmp(v->valuestring, "closed") == 0;
		if (closed && !is->closed)
			is->closed_ms = now(f);
		is->closed = closed;
	}
	if ((v = cJSON_GetObjectItem(b, "labels")) && cJSON_IsArray(v)) {
		cJSON_Delete(is->labels);
		is->labels = strings_of(v);
	}
	is->updated_ms = now(f);
	cJSON_Delete(b);
	httpfake_response_cjson(resp, 200, issue_json(f, r, is));
}

static void react(struct ghfake *f, struct issue *is, int64_t comment_id, const char *login,
                  const struct httpfake_request *req, struct httpfake_response *resp)
{
	static const char *const kinds[] = {"+1",     "-1",     "laugh", "confused", "heart",
	                                    "hooray", "rocket", "eyes",  NULL};
	cJSON *b = parse_body(req, resp);
	if (!b)
		return;
	const cJSON *c = cJSON_GetObjectItem(b, "content");
	bool ok = false;
	for (size_t i = 0; cJSON_IsString(c) && kinds[i]; i++)
		ok |= strcmp(c->valuestring, kinds[i]) == 0;
	if (!ok) {
		invalid(resp, "Reaction", "content", "invalid");
		cJSON_Delete(b);
		return;
	}
	int status = 201;
	struct reaction *r = NULL;
	for (size_t i = 0; i < is->n_reactions; i++)
		if (is->reactions[i].comment_id == comment_id &&
		    strcmp(is->reactions[i].user, login) == 0 &&
		    strcmp(is->reactions[i].content, c->valuestring) == 0) {
			r = &is->reactions[i];
			status = 200;
		}
	if (!r) {
		if (is->n_reactions >= GHFAKE_REACTIONS_MAX) {
			error(resp, 422, "ghfake: too many reactions on this issue");
			cJSON_Delete(b);
			return;
		}
		is->reactions = grow(is->reactions, is->n_reactions + 1, sizeof *is->reactions);
		r = &is->reactions[is->n_reactions++];
		r->id = ++f->next_id;
		r->comment_id = comment_id;
		r->user = dup(login);
		snprintf(r->content, sizeof r->content, "%s", c->valuestring);
	}
	cJSON_Delete(b);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)r->id);
	cJSON_AddStringToObject(o, "content", r->content);
	cJSON_AddItemToObject(o, "user", user_json(r->user));
	httpfake_response_cjson(resp, status, o);
}

/* --- search ---------------------------------------------------------------------------- */

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

static bool issue_matches(const struct issue *is, const struct query *q)
{
	if (q->closed >= 0 && is->closed != (q->closed == 1))
		return false;
	if (q->is_pr == 1)
		return false; /* the fake has no pull requests */
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

static void search(struct ghfake *f, const struct httpfake_request *req,
                   struct httpfake_response *resp)
{
	const char *qs = param(req, "q");
	struct query q;
	if (!qs || !*qs) {
		invalid(resp, "Search", "q", "missing");
		return;
	}
	if (parse_query(qs, &q) != 0) {
		error(resp, 422, "ghfake: too many search terms");
		return;
	}
	cJSON *all = cJSON_CreateArray();
	for (size_t i = 0; i < f->n_repos; i++) {
		struct repo *r = &f->repos[i];
		char full[160];
		snprintf(full, sizeof full, "%s/%s", r->owner, r->name);
		if (q.repo[0] && strcasecmp(q.repo, full) != 0)
			continue;
		for (size_t j = 0; j < r->n_issues; j++)
			if (issue_matches(r->issues[j], &q))
				cJSON_AddItemToArray(all, issue_json(f, r, r->issues[j]));
	}
	paginate(f, req, resp, all, 30, "items");
}

/* --- control endpoints (/_ghfake/…, for tests that run the fake as a process) --- */

static cJSON *state_json(struct ghfake *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *repos = cJSON_AddArrayToObject(o, "repos");
	for (size_t i = 0; i < f->n_repos; i++) {
		struct repo *r = &f->repos[i];
		cJSON *ro = repo_json(f, r);
		cJSON *issues = cJSON_AddArrayToObject(ro, "issues");
		for (size_t j = 0; j < r->n_issues; j++) {
			struct issue *is = r->issues[j];
			cJSON *io = issue_json(f, r, is);
			cJSON *cs = cJSON_AddArrayToObject(io, "comment_list");
			for (size_t k = 0; k < is->n_comments; k++)
				if (!is->comments[k].deleted)
					cJSON_AddItemToArray(
					        cs, comment_json(f, r, is, &is->comments[k]));
			cJSON *rs = cJSON_AddArrayToObject(io, "reaction_list");
			for (size_t k = 0; k < is->n_reactions; k++) {
				cJSON *x = cJSON_CreateObject();
				cJSON_AddNumberToObject(x, "comment_id",
				                        (double)is->reactions[k].comment_id);
				cJSON_AddStringToObject(x, "content", is->reactions[k].content);
				cJSON_AddStringToObject(x, "user", is->reactions[k].user);
				cJSON_AddItemToArray(rs, x);
			}
			cJSON_AddItemToArray(issues, io);
		}
		cJSON_AddItemToArray(repos, ro);
	}
	cJSON *ns = cJSON_AddArrayToObject(o, "notifications");
	for (size_t i = 0; i < f->n_notifs; i++)
		cJSON_AddItemToArray(ns, notif_json(f, &f->notifs[i]));
	return o;
}

static long lparam(const struct httpfake_request *req, const char *name, long def)
{
	const char *v = param(req, name);
	return v && *v ? strtol(v, NULL, 10) : def;
}

/* Answers 200 {"ok":true} or 400 naming the bad parameter. */
static void control(struct ghfake *f, const struct httpfake_request *req,
                    struct httpfake_response *resp)
{
	const char *what = req->path + 9;
	if (strcmp(what, "state") == 0) {
		httpfake_response_cjson(resp, 200, state_json(f));
		return;
	}
	if (strcmp(req->method, "POST") != 0) {
		error(resp, 405, "ghfake: control endpoints other than state take POST");
		return;
	}
	if (strcmp(what, "fail") == 0) {
		long st = lparam(req, "status", 502);
		if (st < 500 || st > 599) {
			error(resp, 400, "ghfake: status must be 5xx");
			return;
		}
		f->fail_n = (unsigned)lparam(req, "n", 1);
		f->fail_status = (int)st;
		f->fail_html = lparam(req, "html", 0) != 0;
	} else if (strcmp(what, "secondary") == 0) {
		long st = lparam(req, "status", 403);
		if (st != 403 && st != 429) {
			error(resp, 400, "ghfake: status must be 403 or 429");
			return;
		}
		f->secondary_n = (unsigned)lparam(req, "n", 1);
		f->secondary_status = (int)st;
		f->secondary_retry = (int)lparam(req, "retry_after", -1);
	} else if (strcmp(what, "rate") == 0) {
		const char *res = param(req, "resource");
		struct bucket *b = res && strcmp(res, "search") == 0 ? &f->search : &f->core;
		b->limit = lparam(req, "limit", 0);
		b->window_ms = lparam(req, "window_ms", 3600 * 1000);
		if (b->window_ms <= 0)
			b->window_ms = 3600 * 1000;
		b->remaining = lparam(req, "remaining", b->limit);
		b->reset_ms = now(f) + b->window_ms;
	} else if (strcmp(what, "delay") == 0) {
		f->delay_ms = (unsigned)lparam(req, "ms", 0);
	} else if (strcmp(what, "repo") == 0) {
		const char *o = param(req, "owner"), *n = param(req, "name");
		if (!o || !n || !*o || !*n || strlen(o) >= 40 || strlen(n) >= 101 ||
		    f->n_repos == GHFAKE_REPOS_MAX || find_repo(f, o, n)) {
			error(resp, 400, "ghfake: owner and name required, new, within bounds");
			return;
		}
		struct repo *r = &f->repos[f->n_repos++];
		memset(r, 0, sizeof *r);
		snprintf(r->owner, sizeof r->owner, "%s", o);
		snprintf(r->name, sizeof r->name, "%s", n);
		r->flags = (unsigned)lparam(req, "flags", 0);
		r->id = ++f->next_id;
	} else {
		error(resp, 404, "ghfake: unknown control endpoint");
		return;
	}
	cJSON *ok = cJSON_CreateObject();
	cJSON_AddBoolToObject(ok, "ok", true);
	httpfake_response_cjson(resp, 200, ok);
}

/* --- the handler ------------------------------------------------------------------------ */

static int64_t num(const char *s, const char **end)
{
	if (!isdigit((unsigned char)*s))
		return -1;
	char *e;
	long long v = strtoll(s, &e, 10);
	*end = e;
	return v;
}

static void route_repo(struct ghfake *f, const char *login, const struct httpfake_request *req,
                       struct httpfake_response *resp)
{
	/* /repos/{o}/{r}[/issues[/{n}[/comments|/reactions]|/comments/{id}[/reactions]]] */
	char owner[64] = "", name[128] = "";
	const char *p = req->path + 7;
	const char *s = strchr(p, '/');
	if (!s || (size_t)(s - p) >= sizeof owner) {
		error(resp, 404, "Not Found");
		return;
	}
	memcpy(owner, p, (size_t)(s - p));
	p = s + 1;
	s = strchr(p, '/');
	size_t nl = s ? (size_t)(s - p) : strlen(p);
	if (nl == 0 || nl >= sizeof name) {
		error(resp, 404, "Not Found");
		return;
	}
	memcpy(name, p, nl);
	p += nl;
	struct repo *r = find_repo(f, owner, name);
	if (!r) {
		error(resp, 404, "Not Found");
		return;
	}
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0;
	if (!*p) {
		if (get)
			httpfake_response_cjson(resp, 200, repo_json(f, r));
		else
			error(resp, 404, "Not Found");
		return;
	}
	if (strncmp(p, "/issues", 7) != 0) {
		error(resp, 404, "Not Found");
		return;
	}
	if (!get && (r->flags & GHFAKE_REPO_READONLY)) {
		error(resp, 403, "Resource not accessible by personal access token");
		return;
	}
	if (r->flags & GHFAKE_REPO_ISSUES_DISABLED) {
		error(resp, 410, "Issues are disabled for this repo");
		return;
	}
	p += 7;
	if (!*p) {
		if (get)
			list_issues(f, r, req, resp);
		else if (strcmp(m, "POST") == 0)
			create_issue(f, r, login, req, resp);
		else
			error(resp, 404, "Not Found");
		return;
	}
	const char *e;
	if (strncmp(p, "/comments/", 10) == 0) {
		int64_t id = num(p + 10, &e);
		struct issue *is = NULL;
		struct comment *c = id > 0 ? find_comment(r, id, &is) : NULL;
		if (!c) {
			error(resp, 404, "Not Found");
		} else if (!*e && strcmp(m, "DELETE") == 0) {
			c->deleted = true;
			resp->status = 204;
		} else if (!*e && get) {
			httpfake_response_cjson(resp, 200, comment_json(f, r, is, c));
		} else if (strcmp(e, "/reactions") == 0 && strcmp(m, "POST") == 0) {
			react(f, is, id, login, req, resp);
		} else {
			error(resp, 404, "Not Found");
		}
		return;
	}
	int64_t n = *p == '/' ? num(p + 1, &e) : -1;
	struct issue *is = n > 0 ? find_issue(r, n) : NULL;
	if (!is) {
		error(resp, 404, "Not Found");
		return;
	}
	if (!*e && get) {
		httpfake_response_cjson(resp, 200, issue_json(f, r, is));
	} else if (!*e && strcmp(m, "PATCH") == 0) {
		patch_issue(f, r, is, req, resp);
	} else if (strcmp(e, "/comments") == 0 && get) {
		cJSON *all = cJSON_CreateArray();
		for (size_t i = 0; i < is->n_comments; i++)
			if (!is->comments[i].deleted)
				cJSON_AddItemToArray(all, comment_json(f, r, is, &is->comments[i]));
		paginate(f, req, resp, all, 30, NULL);
	} else if (strcmp(e, "/comments") == 0 && strcmp(m, "POST") == 0) {
		cJSON *b = parse_body(req, resp);
		if (!b)
			return;
		const cJSON *body = cJSON_GetObjectItem(b, "body");
		if (!cJSON_IsString(body) || !body->valuestring[0]) {
			invalid(resp, "IssueComment", "body", "missing_field");
		} else {
			struct comment *c = new_comment(f, is, login, body->valuestring);
			if (!c) {
				error(resp, 422, "ghfake: too many comments on this issue");
			} else {
				notify_participants(f, r, is, login, body->valuestring);
				httpfake_response_cjson(resp, 201, comment_json(f, r, is, c));
			}
		}
		cJSON_Delete(b);
	} else if (strcmp(e, "/reactions") == 0 && strcmp(m, "POST") == 0) {
		react(f, is, 0, login, req, resp);
	} else {
		error(resp, 404, "Not Found");
	}
}

static bool notif_for(const struct notif *n, const char *login)
{
	return !n->login[0] || (login && strcasecmp(n->login, login) == 0);
}

static void notifications(struct ghfake *f, const struct httpfake_request *req,
                          struct httpfake_response *resp, const char *login)
{
	const char *all_s = param(req, "all");
	bool all = all_s && strcmp(all_s, "true") == 0;
	int64_t since = 0;
	const char *s = param(req, "since");
	if (s && time_parse_iso(s, &since) != 0) {
		invalid(resp, "Notification", "since", "invalid");
		return;
	}
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = f->n_notifs; i-- > 0;) { /* newest first */
		const struct notif *n = &f->notifs[i];
		if ((all || n->unread) && n->updated_ms >= since && notif_for(n, login))
			cJSON_AddItemToArray(arr, notif_json(f, n));
	}
	paginate(f, req, resp, arr, 50, NULL);
}

static void handle(const struct httpfake_request *req, struct httpfake_response *resp, void *ud)
{
	struct ghfake *f = ud;
	pthread_mutex_lock(&f->mu);
	int64_t t = now(f);
	/* The control endpoints answer at once: a test that watches the state
	 * while the agent's request is held must see it then, not after. */
	resp->delay_ms = strncmp(req->path, "/_ghfake/", 9) == 0 ? 0 : f->delay_ms;
	bool search_path = strncmp(req->path, "/search/", 8) == 0;
	struct bucket *b = search_path ? &f->search : &f->core;
	const char *bname = search_path ? "search" : "core";
	refill(b, t);
	bool ok;
	const char *login = login_of(f, req, &ok);
	bool ctl = strncmp(req->path, "/_ghfake/", 9) == 0;
	if (ctl) {
		control(f, req, resp);
	} else if (!ok) {
		error(resp, 401,
		      httpfake_request_header(req, "Authorization") ? "Bad credentials"
		                                                    : "Requires authentication");
	} else if (f->fail_n > 0) {
		f->fail_n--;
		if (f->fail_html) {
			char page[512];
			snprintf(page, sizeof page,
			         "<!DOCTYPE html>\n<html><head><title>Unicorn! &middot; "
			         "GitHub</title>"
			         "</head><body><h1>%d</h1><p>No server is currently available to "
			         "service your request.</p></body></html>\n",
			         f->fail_status);
			resp->status = f->fail_status;
			httpfake_response_header(resp, "Content-Type", "text/html; charset=utf-8");
			httpfake_response_body(resp, page, strlen(page));
		} else {
			error(resp, f->fail_status, "Server Error");
		}
	} else if (f->secondary_n > 0) {
		f->secondary_n--;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(
		        o, "message",
		        "You have exceeded a secondary rate limit. Please wait a few "
		        "minutes before you try again.");
		cJSON_AddStringToObject(o, "documentation_url", SECONDARY_DOCS);
		httpfake_response_cjson(resp, f->secondary_status, o);
		if (f->secondary_retry >= 0) {
			char v[16];
			snprintf(v, sizeof v, "%d", f->secondary_retry);
			httpfake_response_header(resp, "retry-after", v);
		}
	} else if (b->limit > 0 && b->remaining <= 0) {
		char msg[160];
		snprintf(
		        msg, sizeof msg,
		        "API rate limit exceeded for user ID 1. If you reach out to GitHub Support "
		        "for help, please include the request ID.");
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "message", msg);
		cJSON_AddStringToObject(o, "documentation_url", PRIMARY_DOCS);
		httpfake_response_cjson(resp, 403, o);
	} else {
		if (b->limit > 0)
			b->remaining--;
		if (strcmp(req->path, "/user") == 0 && strcmp(req->method, "GET") == 0) {
			cJSON *u = user_json(login);
			cJSON_AddNumberToObject(u, "id", 1);
			httpfake_response_cjson(resp, 200, u);
		} else if (strncmp(req->path, "/repos/", 7) == 0) {
			route_repo(f, login, req, resp);
		} else if (strcmp(req->path, "/notifications") == 0 &&
		           strcmp(req->method, "GET") == 0) {
			notifications(f, req, resp, login);
		} else if (strncmp(req->path, "/notifications/threads/", 23) == 0 &&
		           strcmp(req->method, "PATCH") == 0) {
			const char *e;
			int64_t id = num(req->path + 23, &e);
			struct notif *n = NULL;
			for (size_t i = 0; id > 0 && !*e && i < f->n_notifs; i++)
				if (f->notifs[i].id == id && notif_for(&f->notifs[i], login))
					n = &f->notifs[i];
			if (n) {
				n->unread = false;
				resp->status = 205;
			} else {
				error(resp, 404, "Not Found");
			}
		} else if (strcmp(req->path, "/search/issues") == 0 &&
		           strcmp(req->method, "GET") == 0) {
			search(f, req, resp);
		} else {
			error(resp, 404, "Not Found");
		}
	}
	if (!ctl)
		rate_headers(resp, b, bname, t);
	struct logline *l = &f->log[f->n_log % GHFAKE_LOG_MAX];
	snprintf(l->method, sizeof l->method, "%s", req->method);
	snprintf(l->path, sizeof l->path, "%s", req->path);
	l->status = resp->status;
	f->n_log++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

/* --- public --------------------------------------------------------------------------- */

struct ghfake *ghfake_new(char *err, size_t errlen)
{
	struct ghfake *f = calloc(1, sizeof *f);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->http = httpfake_new(0, err, errlen);
	if (!f->http) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->now = real_now;
	f->secondary_retry = -1;
	httpfake_handle(f->http, "*", "/*", handle, f);
	return f;
}

void ghfake_free(struct ghfake *f)
{
	if (!f)
		return;
	httpfake_free(f->http); /* no handler runs after this */
	for (size_t i = 0; i < f->n_tokens; i++) {
		free(f->tokens[i].token);
		free(f->tokens[i].login);
	}
	for (size_t i = 0; i < f->n_repos; i++) {
		struct repo *r = &f->repos[i];
		for (size_t j = 0; j < r->n_issues; j++) {
			struct issue *is = r->issues[j];
			for (size_t k = 0; k < is->n_comments; k++) {
				free(is->comments[k].author);
				free(is->comments[k].body);
			}
			for (size_t k = 0; k < is->n_reactions; k++)
				free(is->reactions[k].user);
			free(is->comments);
			free(is->reactions);
			free(is->title);
			free(is->body);
			free(is->author);
			cJSON_Delete(is->labels);
			cJSON_Delete(is->assignees);
			free(is);
		}
		free(r->issues);
	}
	free(f->notifs);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cond);
	free(f);
}

const char *ghfake_base_url(const struct ghfake *f)
{
	return httpfake_base_url(f->http);
}

struct httpfake *ghfake_http(struct ghfake *f)
{
	return f->http;
}

void ghfake_set_clock(struct ghfake *f, int64_t (*now_ms)(void *ud), void *ud)
{
	pthread_mutex_lock(&f->mu);
	f->now = now_ms ? now_ms : real_now;
	f->now_ud = ud;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_add_token(struct ghfake *f, const char *token, const char *login)
{
	pthread_mutex_lock(&f->mu);
	if (f->n_tokens == GHFAKE_TOKENS_MAX || !token || !login)
		die("ghfake_add_token: at most %d tokens, and both token and login are required",
		    GHFAKE_TOKENS_MAX);
	f->tokens[f->n_tokens].token = dup(token);
	f->tokens[f->n_tokens].login = dup(login);
	f->n_tokens++;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_add_repo(struct ghfake *f, const char *owner, const char *name, unsigned flags)
{
	pthread_mutex_lock(&f->mu);
	if (f->n_repos == GHFAKE_REPOS_MAX)
		die("ghfake_add_repo: more than %d repositories", GHFAKE_REPOS_MAX);
	if (!owner || !name || strlen(owner) >= 40 || strlen(name) >= 101)
		die("ghfake_add_repo: owner (< 40 bytes) and name (< 101 bytes) are required");
	if (find_repo(f, owner, name))
		die("ghfake_add_repo: %s/%s exists already", owner, name);
	struct repo *r = &f->repos[f->n_repos++];
	memset(r, 0, sizeof *r);
	snprintf(r->owner, sizeof r->owner, "%s", owner);
	snprintf(r->name, sizeof r->name, "%s", name);
	r->flags = flags;
	r->id = ++f->next_id;
	pthread_mutex_unlock(&f->mu);
}

static struct repo *must_repo(struct ghfake *f, const char *owner, const char *repo)
{
	struct repo *r = find_repo(f, owner ? owner : "", repo ? repo : "");
	if (!r)
		die("no repository %s/%s: add it with ghfake_add_repo first", owner ? owner : "?",
		    repo ? repo : "?");
	return r;
}

int64_t ghfake_add_issue(struct ghfake *f, const char *owner, const char *repo, const char *author,
                         const char *title, const char *body)
{
	pthread_mutex_lock(&f->mu);
	struct repo *r = must_repo(f, owner, repo);
	struct issue *is = new_issue(f, r, author ? author : "someone", title, body);
	if (!is)
		die("ghfake_add_issue: more than %d issues", GHFAKE_ISSUES_MAX);
	notify_participants(f, r, is, is->author, is->body);
	int64_t n = is->number;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int64_t ghfake_add_comment(struct ghfake *f, const char *owner, const char *repo, int64_t number,
                           const char *author, const char *body)
{
	pthread_mutex_lock(&f->mu);
	struct repo *r = must_repo(f, owner, repo);
	struct issue *is = find_issue(r, number);
	if (!is)
		die("ghfake_add_comment: no issue %s/%s#%lld", owner, repo, (long long)number);
	struct comment *c = new_comment(f, is, author ? author : "someone", body);
	if (!c)
		die("ghfake_add_comment: more than %d comments", GHFAKE_COMMENTS_MAX);
	notify_participants(f, r, is, c->author, c->body);
	int64_t id = c->id;
	pthread_mutex_unlock(&f->mu);
	return id;
}

int64_t ghfake_add_notification(struct ghfake *f, const char *owner, const char *repo,
                                int64_t number, const char *reason)
{
	pthread_mutex_lock(&f->mu);
	struct repo *r = must_repo(f, owner, repo);
	if (!find_issue(r, number))
		die("ghfake_add_notification: no issue %s/%s#%lld", owner, repo, (long long)number);
	if (f->n_notifs == GHFAKE_NOTIFS_MAX)
		die("ghfake_add_notification: more than %d notifications", GHFAKE_NOTIFS_MAX);
	f->notifs = grow(f->notifs, f->n_notifs + 1, sizeof *f->notifs);
	struct notif *n = &f->notifs[f->n_notifs++];
	memset(n, 0, sizeof *n);
	n->id = ++f->next_id;
	n->repo = (size_t)(r - f->repos);
	n->number = number;
	snprintf(n->reason, sizeof n->reason, "%s", reason ? reason : "mention");
	n->unread = true;
	n->updated_ms = now(f);
	int64_t id = n->id;
	pthread_mutex_unlock(&f->mu);
	return id;
}

size_t ghfake_issue_count(struct ghfake *f, const char *owner, const char *repo)
{
	pthread_mutex_lock(&f->mu);
	struct repo *r = find_repo(f, owner, repo);
	size_t n = r ? r->n_issues : 0;
	pthread_mutex_unlock(&f->mu);
	return n;
}

size_t ghfake_comment_count(struct ghfake *f, const char *owner, const char *repo, int64_t number)
{
	pthread_mutex_lock(&f->mu);
	struct issue *is = find_issue(find_repo(f, owner, repo), number);
	size_t n = is ? live_comments(is) : 0;
	pthread_mutex_unlock(&f->mu);
	return n;
}

cJSON *ghfake_issue(struct ghfake *f, const char *owner, const char *repo, int64_t number)
{
	pthread_mutex_lock(&f->mu);
	struct repo *r = find_repo(f, owner, repo);
	struct issue *is = find_issue(r, number);
	cJSON *o = is ? issue_json(f, r, is) : NULL;
	pthread_mutex_unlock(&f->mu);
	return o;
}

size_t ghfake_count_body(struct ghfake *f, const char *s)
{
	size_t n = 0;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n_repos; i++)
		for (size_t j = 0; j < f->repos[i].n_issues; j++) {
			const struct issue *is = f->repos[i].issues[j];
			n += strstr(is->body, s) != NULL;
			for (size_t k = 0; k < is->n_comments; k++)
				n += !is->comments[k].deleted && strstr(is->comments[k].body, s);
		}
	pthread_mutex_unlock(&f->mu);
	return n;
}

int64_t ghfake_notification_of(struct ghfake *f, const char *owner, const char *repo,
                               int64_t number, const char *login, bool *unread)
{
	pthread_mutex_lock(&f->mu);
	struct repo *r = find_repo(f, owner, repo);
	int64_t id = 0;
	for (size_t i = 0; r && i < f->n_notifs; i++) {
		const struct notif *n = &f->notifs[i];
		if (n->repo == (size_t)(r - f->repos) && n->number == number &&
		    strcasecmp(n->login, login) == 0) {
			id = n->id;
			if (unread)
				*unread = n->unread;
		}
	}
	pthread_mutex_unlock(&f->mu);
	return id;
}

int ghfake_notification_unread(struct ghfake *f, int64_t id)
{
	int rc = -1;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n_notifs; i++)
		if (f->notifs[i].id == id)
			rc = f->notifs[i].unread;
	pthread_mutex_unlock(&f->mu);
	return rc;
}

size_t ghfake_reaction_count(struct ghfake *f, const char *owner, const char *repo, int64_t number,
                             int64_t comment_id, const char *content)
{
	size_t n = 0;
	pthread_mutex_lock(&f->mu);
	struct issue *is = find_issue(find_repo(f, owner, repo), number);
	for (size_t i = 0; is && i < is->n_reactions; i++)
		n += is->reactions[i].comment_id == comment_id &&
		     strcmp(is->reactions[i].content, content) == 0;
	pthread_mutex_unlock(&f->mu);
	return n;
}

static struct bucket *bucket_named(struct ghfake *f, const char *resource)
{
	if (resource && strcmp(resource, "search") == 0)
		return &f->search;
	if (!resource || strcmp(resource, "core") == 0)
		return &f->core;
	die("unknown rate-limit bucket '%s' (core or search)", resource);
	return NULL;
}

void ghfake_rate_limit(struct ghfake *f, const char *resource, int64_t limit, int64_t window_ms)
{
	pthread_mutex_lock(&f->mu);
	struct bucket *b = bucket_named(f, resource);
	b->limit = limit;
	b->remaining = limit;
	b->window_ms = window_ms > 0 ? window_ms : 3600 * 1000;
	b->reset_ms = now(f) + b->window_ms;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_set_remaining(struct ghfake *f, const char *resource, int64_t remaining,
                          int64_t reset_ms)
{
	pthread_mutex_lock(&f->mu);
	struct bucket *b = bucket_named(f, resource);
	if (b->limit <= 0)
		die("ghfake_set_remaining: turn the limit on with ghfake_rate_limit first");
	b->remaining = remaining;
	b->reset_ms = reset_ms;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_secondary_limit(struct ghfake *f, unsigned n, int status, int retry_after_s)
{
	if (status != 403 && status != 429)
		die("ghfake_secondary_limit: status must be 403 or 429, not %d", status);
	pthread_mutex_lock(&f->mu);
	f->secondary_n = n;
	f->secondary_status = status;
	f->secondary_retry = retry_after_s;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_fail_next(struct ghfake *f, unsigned n, int status, bool html)
{
	if (status < 500 || status > 599)
		die("ghfake_fail_next: status must be 5xx, not %d", status);
	pthread_mutex_lock(&f->mu);
	f->fail_n = n;
	f->fail_status = status;
	f->fail_html = html;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_set_delay(struct ghfake *f, unsigned ms)
{
	pthread_mutex_lock(&f->mu);
	f->delay_ms = ms;
	pthread_mutex_unlock(&f->mu);
}

size_t ghfake_count(struct ghfake *f, const char *method, const char *prefix, int status)
{
	size_t n = 0;
	pthread_mutex_lock(&f->mu);
	uint64_t first = f->n_log > GHFAKE_LOG_MAX ? f->n_log - GHFAKE_LOG_MAX : 0;
	for (uint64_t i = first; i < f->n_log; i++) {
		const struct logline *l = &f->log[i % GHFAKE_LOG_MAX];
		if (method && strcmp(method, l->method) != 0)
			continue;
		if (prefix && strncmp(l->path, prefix, strlen(prefix)) != 0)
			continue;
		if (status && l->status != status)
			continue;
		n++;
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

uint64_t ghfake_requests(struct ghfake *f)
{
	pthread_mutex_lock(&f->mu);
	uint64_t n = f->n_log;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int ghfake_wait_requests(struct ghfake *f, uint64_t n, unsigned timeout_ms)
{
	return httpfake_wait_counter(&f->mu, &f->cond, &f->n_log, n, timeout_ms);
}
