/*
 * ghfake — see ghfake.h. One httpfake handler answers every path: the
 * control endpoints, git's smart HTTP, and the REST API, whose paths it
 * parses by hand the way GitHub's URL scheme reads. This file holds the
 * dispatch and what every answer shares (authentication, rate limits,
 * faults, ETags, counters); the routes live in ghfake_issues.c,
 * ghfake_repos.c, ghfake_pulls.c and ghfake_git.c (ghfake_int.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash.h"
#include "tests/fakes/github/ghfake_int.h"

#define PRIMARY_DOCS                                                                               \
	"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-"    \
	"rate-limit"
#define SECONDARY_DOCS                                                                             \
	"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-"     \
	"api#about-secondary-rate-limits"

/* --- small helpers ----------------------------------------------------------------- */

void gf_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ghfake: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

char *gf_dup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		gf_die("out of memory");
	return d;
}

void *gf_grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, (n ? n : 1) * size);
	if (!q)
		gf_die("out of memory");
	return q;
}

static int64_t real_now(void *ud)
{
	(void)ud;
	return time_now_ms();
}

int64_t gf_now(struct ghfake *f)
{
	return f->now(f->now_ud);
}

char *gf_iso(int64_t ms, char buf[TIME_ISO_LEN + 1])
{
	time_format_iso(ms, buf);
	buf[19] = 'Z';
	buf[20] = '\0';
	return buf;
}

const char *gf_param(const struct httpfake_request *req, const char *name)
{
	return httpfake_request_param(req, name);
}

int64_t gf_num(const char *s, const char **end)
{
	*end = s;
	if (!isdigit((unsigned char)*s))
		return -1;
	char *e;
	long long v = strtoll(s, &e, 10);
	*end = e;
	return v;
}

/* GitHub's characters for owner and repository names, and never "." or
 * "..": a name becomes a directory of the fake. */
bool gf_valid_name(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

/* --- answers ------------------------------------------------------------------------- */

void gf_error(struct httpfake_response *resp, int status, const char *message)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "message", message);
	cJSON_AddStringToObject(o, "documentation_url", GF_DOCS);
	httpfake_response_cjson(resp, status, o);
}

static void validation_failed(struct httpfake_response *resp, cJSON *err)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "message", "Validation Failed");
	cJSON *errs = cJSON_AddArrayToObject(o, "errors");
	cJSON_AddItemToArray(errs, err);
	cJSON_AddStringToObject(o, "documentation_url", GF_DOCS);
	httpfake_response_cjson(resp, 422, o);
}

void gf_invalid(struct httpfake_response *resp, const char *resource, const char *field,
                const char *code)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "resource", resource);
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "field", field);
	validation_failed(resp, e);
}

void gf_invalid_custom(struct httpfake_response *resp, const char *resource, const char *field,
                       const char *message)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "resource", resource);
	cJSON_AddStringToObject(e, "code", "custom");
	if (field)
		cJSON_AddStringToObject(e, "field", field);
	cJSON_AddStringToObject(e, "message", message);
	validation_failed(resp, e);
}

void gf_unprocessable(struct httpfake_response *resp, const char *message)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "message", "Unprocessable Entity");
	cJSON *errs = cJSON_AddArrayToObject(o, "errors");
	cJSON_AddItemToArray(errs, cJSON_CreateString(message));
	cJSON_AddStringToObject(o, "documentation_url", GF_DOCS);
	httpfake_response_cjson(resp, 422, o);
}

cJSON *gf_parse_body(const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = cJSON_ParseWithLength(req->body, req->body_len);
	if (!cJSON_IsObject(b)) {
		cJSON_Delete(b);
		gf_error(resp, 400, "Problems parsing JSON");
		return NULL;
	}
	return b;
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

void gf_paginate(struct ghfake *f, const struct httpfake_request *req,
                 struct httpfake_response *resp, cJSON *all, long def_per_page,
                 const char *items_field)
{
	const char *pp = gf_param(req, "per_page"), *pg = gf_param(req, "page");
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

/* --- rendering ----------------------------------------------------------------------- */

cJSON *gf_user_json(const char *login)
{
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "login", login ? login : "");
	cJSON_AddStringToObject(u, "type", "User");
	return u;
}

size_t gf_live_comments(const struct gf_issue *is)
{
	size_t n = 0;
	for (size_t i = 0; i < is->n_comments; i++)
		n += !is->comments[i].deleted;
	return n;
}

void gf_add_times(cJSON *o, const struct gf_issue *is)
{
	char t[TIME_ISO_LEN + 1];
	cJSON_AddStringToObject(o, "created_at", gf_iso(is->created_ms, t));
	cJSON_AddStringToObject(o, "updated_at", gf_iso(is->updated_ms, t));
	if (is->closed)
		cJSON_AddStringToObject(o, "closed_at", gf_iso(is->closed_ms, t));
	else
		cJSON_AddNullToObject(o, "closed_at");
}

cJSON *gf_issue_json(struct ghfake *f, const struct gf_repo *r, const struct gf_issue *is)
{
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)is->id);
	cJSON_AddNumberToObject(o, "number", (double)is->number);
	cJSON_AddStringToObject(o, "title", is->title);
	cJSON_AddStringToObject(o, "body", is->body);
	cJSON_AddStringToObject(o, "state", is->closed ? "closed" : "open");
	cJSON_AddItemToObject(o, "user", gf_user_json(is->author));
	cJSON *labels = cJSON_AddArrayToObject(o, "labels");
	const cJSON *l;
	cJSON_ArrayForEach(l, is->labels)
	{
		cJSON *lo = cJSON_CreateObject();
		cJSON_AddStringToObject(lo, "name", l->valuestring);
		cJSON_AddItemToArray(labels, lo);
	}
	cJSON *as = cJSON_AddArrayToObject(o, "assignees");
	cJSON_ArrayForEach(l, is->assignees) cJSON_AddItemToArray(as, gf_user_json(l->valuestring));
	if (cJSON_GetArraySize(is->assignees) > 0)
		cJSON_AddItemToObject(
		        o, "assignee",
		        gf_user_json(cJSON_GetArrayItem(is->assignees, 0)->valuestring));
	else
		cJSON_AddNullToObject(o, "assignee");
	cJSON_AddNumberToObject(o, "comments", (double)gf_live_comments(is));
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/%s/%lld", r->owner, r->name,
	         is->pr ? "pull" : "issues", (long long)is->number);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/issues/%lld", httpfake_base_url(f->http),
	         r->owner, r->name, (long long)is->number);
	cJSON_AddStringToObject(o, "url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s", httpfake_base_url(f->http), r->owner, r->name);
	cJSON_AddStringToObject(o, "repository_url", buf);
	gf_add_times(o, is);
	if (is->pr) {
		cJSON *pr = cJSON_AddObjectToObject(o, "pull_request");
		snprintf(buf, sizeof buf, "%s/repos/%s/%s/pulls/%lld", httpfake_base_url(f->http),
		         r->owner, r->name, (long long)is->number);
		cJSON_AddStringToObject(pr, "url", buf);
		snprintf(buf, sizeof buf, "https://github.com/%s/%s/pull/%lld", r->owner, r->name,
		         (long long)is->number);
		cJSON_AddStringToObject(pr, "html_url", buf);
		if (is->pr->merged)
			cJSON_AddStringToObject(pr, "merged_at", gf_iso(is->pr->merged_ms, t));
		else
			cJSON_AddNullToObject(pr, "merged_at");
		cJSON_AddBoolToObject(o, "draft", is->pr->draft);
	}
	return o;
}

cJSON *gf_comment_json(struct ghfake *f, const struct gf_repo *r, const struct gf_issue *is,
                       const struct gf_comment *c)
{
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)c->id);
	cJSON_AddStringToObject(o, "body", c->body);
	cJSON_AddItemToObject(o, "user", gf_user_json(c->author));
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/%s/%lld#issuecomment-%lld", r->owner,
	         r->name, is->pr ? "pull" : "issues", (long long)is->number, (long long)c->id);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/issues/%lld", httpfake_base_url(f->http),
	         r->owner, r->name, (long long)is->number);
	cJSON_AddStringToObject(o, "issue_url", buf);
	cJSON_AddStringToObject(o, "created_at", gf_iso(c->created_ms, t));
	cJSON_AddStringToObject(o, "updated_at", gf_iso(c->updated_ms, t));
	return o;
}

static cJSON *notif_json(struct ghfake *f, const struct gf_notif *n)
{
	struct gf_repo *r = &f->repos[n->repo];
	const struct gf_issue *is = gf_find_issue(r, n->number);
	bool pr = is && is->pr;
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	snprintf(buf, sizeof buf, "%lld", (long long)n->id);
	cJSON_AddStringToObject(o, "id", buf);
	cJSON_AddBoolToObject(o, "unread", n->unread);
	cJSON_AddStringToObject(o, "reason", n->reason);
	if (n->login[0])
		cJSON_AddStringToObject(o, "recipient", n->login);
	cJSON_AddStringToObject(o, "updated_at", gf_iso(n->updated_ms, t));
	cJSON *s = cJSON_AddObjectToObject(o, "subject");
	cJSON_AddStringToObject(s, "title", is ? is->title : "");
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/%s/%lld", httpfake_base_url(f->http), r->owner,
	         r->name, pr ? "pulls" : "issues", (long long)n->number);
	cJSON_AddStringToObject(s, "url", buf);
	cJSON_AddStringToObject(s, "type", pr ? "PullRequest" : "Issue");
	cJSON *ro = cJSON_AddObjectToObject(o, "repository");
	cJSON_AddStringToObject(ro, "name", r->name);
	snprintf(buf, sizeof buf, "%s/%s", r->owner, r->name);
	cJSON_AddStringToObject(ro, "full_name", buf);
	cJSON_AddItemToObject(ro, "owner", gf_user_json(r->owner));
	snprintf(buf, sizeof buf, "%s/notifications/threads/%lld", httpfake_base_url(f->http),
	         (long long)n->id);
	cJSON_AddStringToObject(o, "url", buf);
	return o;
}

/* --- lookups --------------------------------------------------------------------------- */

struct gf_repo *gf_find_repo(struct ghfake *f, const char *owner, const char *name)
{
	for (size_t i = 0; i < f->n_repos; i++)
		if (strcasecmp(f->repos[i].owner, owner) == 0 &&
		    strcasecmp(f->repos[i].name, name) == 0)
			return &f->repos[i];
	return NULL;
}

struct gf_issue *gf_find_issue(struct gf_repo *r, int64_t number)
{
	if (!r || number < 1 || (size_t)number > r->n_issues)
		return NULL;
	return r->issues[number - 1];
}

/* --- rate limits -------------------------------------------------------------------------- */

static void refill(struct gf_bucket *b, int64_t t)
{
	if (b->limit > 0 && t >= b->reset_ms) {
		b->remaining = b->limit;
		b->reset_ms = t + b->window_ms;
	}
}

static void rate_headers(struct httpfake_response *resp, const struct gf_bucket *b,
                         const char *name, int64_t t)
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

/* --- conditional requests ------------------------------------------------------------------- */

static const char *resp_header(const struct httpfake_response *resp, const char *name)
{
	for (size_t i = 0; i < resp->n_headers; i++)
		if (strcasecmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

/* W/"…": the body and the Link header hashed, so a list whose pages moved
 * is a new version even when this page's items did not change. */
static void etag_of(const struct httpfake_response *resp, char out[48])
{
	const char *link = resp_header(resp, "Link");
	size_t ll = link ? strlen(link) : 0;
	char *buf = malloc(resp->body_len + ll + 2);
	if (!buf)
		gf_die("out of memory");
	if (resp->body_len)
		memcpy(buf, resp->body, resp->body_len);
	buf[resp->body_len] = '\n';
	if (ll)
		memcpy(buf + resp->body_len + 1, link, ll);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(buf, resp->body_len + 1 + ll, hex);
	free(buf);
	snprintf(out, 48, "W/\"%.40s\"", hex);
}

/* If-None-Match holds a list of tags (weak or strong, compared weakly) or
 * "*". */
static bool none_match_hits(const char *inm, const char *etag)
{
	const char *want = strncmp(etag, "W/", 2) == 0 ? etag + 2 : etag;
	size_t wl = strlen(want);
	for (const char *p = inm; p && *p;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '*')
			return true;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		if (strncmp(p, want, wl) == 0 && (p[wl] == '\0' || p[wl] == ',' || p[wl] == ' '))
			return true;
		p = strchr(p, ',');
	}
	return false;
}

/* --- counters --------------------------------------------------------------------------------- */

/* The endpoint's name: method and path with the variable parts named. */
static void endpoint_key(const char *method, const char *path, bool git, char *out, size_t cap)
{
	if (git) {
		const char *svc = strstr(path, "/info/refs")          ? "info/refs"
		                  : strstr(path, "/git-receive-pack") ? "git-receive-pack"
		                                                      : "git-upload-pack";
		snprintf(out, cap, "GIT /{o}/{r}.git/%s", svc);
		return;
	}
	snprintf(out, cap, "%s ", method);
	size_t n = strlen(out);
	const char *p = path;
	const char *prev = "", *prev2 = "";
	char seg[128];
	int i = 0;
	while (*p == '/' && n + 1 < cap) {
		p++;
		size_t sl = strcspn(p, "/");
		snprintf(seg, sizeof seg, "%.*s", (int)(sl < sizeof seg ? sl : sizeof seg - 1), p);
		const char *name = seg;
		bool rest = false;
		if (i == 1 && strcmp(prev, "repos") == 0)
			name = "{o}";
		else if (i == 2 && strcmp(prev2, "repos") == 0)
			name = "{r}";
		else if (i == 1 && strcmp(prev, "orgs") == 0)
			name = "{org}";
		else if (i == 1 && strcmp(prev, "users") == 0)
			name = "{u}";
		else if (strcmp(prev, "branches") == 0)
			name = "{b}", rest = true;
		else if (strcmp(prev, "contents") == 0)
			name = "{path}", rest = true;
		else if (strcmp(prev, "labels") == 0)
			name = "{name}", rest = true;
		else if (strcmp(prev, "commits") == 0)
			name = "{sha}";
		else if ((strcmp(prev, "refs") == 0 || strcmp(prev, "ref") == 0 ||
		          strcmp(prev, "matching-refs") == 0) &&
		         strcmp(prev2, "git") == 0)
			name = "{ref}", rest = true;
		else if (isdigit((unsigned char)seg[0]))
			name = strcmp(prev, "comments") == 0 || strcmp(prev, "threads") == 0 ||
			                       strcmp(prev, "reviews") == 0
			               ? "{id}"
			               : "{n}";
		n += (size_t)snprintf(out + n, cap - n, "/%s", name);
		if (rest || n >= cap)
			break;
		p += sl;
		prev2 = prev;
		prev = strcmp(name, seg) == 0
		               ? (strcmp(seg, "repos") == 0           ? "repos"
		                  : strcmp(seg, "orgs") == 0          ? "orgs"
		                  : strcmp(seg, "users") == 0         ? "users"
		                  : strcmp(seg, "git") == 0           ? "git"
		                  : strcmp(seg, "refs") == 0          ? "refs"
		                  : strcmp(seg, "ref") == 0           ? "ref"
		                  : strcmp(seg, "branches") == 0      ? "branches"
		                  : strcmp(seg, "contents") == 0      ? "contents"
		                  : strcmp(seg, "labels") == 0        ? "labels"
		                  : strcmp(seg, "commits") == 0       ? "commits"
		                  : strcmp(seg, "comments") == 0      ? "comments"
		                  : strcmp(seg, "threads") == 0       ? "threads"
		                  : strcmp(seg, "reviews") == 0       ? "reviews"
		                  : strcmp(seg, "matching-refs") == 0 ? "matching-refs"
		                                                      : "")
		               : "";
		i++;
	}
}

static struct gf_endpoint *endpoint(struct ghfake *f, const char *key)
{
	for (size_t i = 0; i < f->n_endpoints; i++)
		if (strcmp(f->endpoints[i].key, key) == 0)
			return &f->endpoints[i];
	if (f->n_endpoints == GHFAKE_ENDPOINTS_MAX - 1 && strcmp(key, "other") != 0)
		return endpoint(f, "other");
	struct gf_endpoint *e = &f->endpoints[f->n_endpoints++];
	snprintf(e->key, sizeof e->key, "%s", key);
	return e;
}

static void count(struct ghfake *f, const struct httpfake_request *req,
                  const struct httpfake_response *resp, bool git)
{
	char key[96];
	endpoint_key(req->method, req->path, git, key, sizeof key);
	struct gf_endpoint *e = endpoint(f, key);
	e->count++;
	f->stats.requests++;
	if (git) {
		f->stats.git++;
		return;
	}
	f->stats.rest++;
	if (resp->status == 304) {
		e->not_modified++;
		f->stats.not_modified++;
	}
	if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD") && resp->status >= 200 &&
	    resp->status < 300)
		f->stats.writes++;
}

static cJSON *stats_json(struct ghfake *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "requests", (double)f->stats.requests);
	cJSON_AddNumberToObject(o, "rest", (double)f->stats.rest);
	cJSON_AddNumberToObject(o, "git", (double)f->stats.git);
	cJSON_AddNumberToObject(o, "not_modified", (double)f->stats.not_modified);
	cJSON_AddNumberToObject(o, "writes", (double)f->stats.writes);
	cJSON_AddNumberToObject(o, "rate_limited", (double)f->stats.rate_limited);
	cJSON *eps = cJSON_AddObjectToObject(o, "endpoints");
	for (size_t i = 0; i < f->n_endpoints; i++) {
		cJSON *e = cJSON_AddObjectToObject(eps, f->endpoints[i].key);
		cJSON_AddNumberToObject(e, "count", (double)f->endpoints[i].count);
		cJSON_AddNumberToObject(e, "not_modified", (double)f->endpoints[i].not_modified);
	}
	return o;
}

/* --- authentication ----------------------------------------------------------------------------
 */

static const char *login_of(struct ghfake *f, const struct httpfake_request *req, bool *ok)
{
	*ok = true;
	if (f->n_tokens == 0)
		return "agent";
	const char *a = httpfake_request_header(req, "Authorization");
	if (a && (strncmp(a, "Bearer ", 7) == 0 || strncmp(a, "token ", 6) == 0)) {
		const char *t = a + (a[0] == 'B' ? 7 : 6);
		for (size_t i = 0; i < f->n_tokens; i++)
			if (strcmp(t, f->tokens[i].token) == 0)
				return f->tokens[i].login;
	}
	*ok = false;
	return NULL;
}

/* --- control endpoints (/_ghfake/…, for tests that run the fake as a process) --- */

static cJSON *state_json(struct ghfake *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *repos = cJSON_AddArrayToObject(o, "repos");
	for (size_t i = 0; i < f->n_repos; i++) {
		struct gf_repo *r = &f->repos[i];
		cJSON *ro = gf_repo_json(f, r, NULL);
		cJSON *issues = cJSON_AddArrayToObject(ro, "issues");
		for (size_t j = 0; j < r->n_issues; j++) {
			struct gf_issue *is = r->issues[j];
			cJSON *io = gf_issue_json(f, r, is);
			cJSON *cs = cJSON_AddArrayToObject(io, "comment_list");
			for (size_t k = 0; k < is->n_comments; k++)
				if (!is->comments[k].deleted)
					cJSON_AddItemToArray(
					        cs, gf_comment_json(f, r, is, &is->comments[k]));
			cJSON *rs = cJSON_AddArrayToObject(io, "reaction_list");
			for (size_t k = 0; k < is->n_reactions; k++) {
				cJSON *x = cJSON_CreateObject();
				cJSON_AddNumberToObject(x, "comment_id",
				                        (double)is->reactions[k].comment_id);
				cJSON_AddStringToObject(x, "content", is->reactions[k].content);
				cJSON_AddStringToObject(x, "user", is->reactions[k].user);
				cJSON_AddItemToArray(rs, x);
			}
			if (is->pr)
				cJSON_AddItemToObject(io, "pull", gf_pull_json(f, r, is, false));
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
	const char *v = gf_param(req, name);
	return v && *v ? strtol(v, NULL, 10) : def;
}

/* POST /_ghfake/commit {owner, repo, branch, message, author, from,
 * files: {path: content or null}}: a commit as if someone pushed it. */
static void control_commit(struct ghfake *f, const struct httpfake_request *req,
                           struct httpfake_response *resp)
{
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const char *owner = cJSON_GetStringValue(cJSON_GetObjectItem(b, "owner"));
	const char *repo = cJSON_GetStringValue(cJSON_GetObjectItem(b, "repo"));
	const char *branch = cJSON_GetStringValue(cJSON_GetObjectItem(b, "branch"));
	const cJSON *files = cJSON_GetObjectItem(b, "files");
	struct gf_repo *r = owner && repo ? gf_find_repo(f, owner, repo) : NULL;
	if (!r || !cJSON_IsObject(files)) {
		gf_error(resp, 400,
		         "ghfake: commit needs an existing owner/repo and files {path: "
		         "content or null}");
		cJSON_Delete(b);
		return;
	}
	size_t n = (size_t)cJSON_GetArraySize(files), i = 0;
	struct ghfake_file *v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		gf_die("out of memory");
	const cJSON *e;
	cJSON_ArrayForEach(e, files)
	{
		v[i].path = e->string;
		v[i].content = cJSON_IsString(e) ? e->valuestring : NULL;
		i++;
	}
	char sha[GF_SHA_LEN + 1], err[300];
	const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(b, "message"));
	if (gf_commit(f, r, branch && *branch ? branch : r->default_branch,
	              cJSON_GetStringValue(cJSON_GetObjectItem(b, "from")), v, n,
	              msg ? msg : "A commit",
	              cJSON_GetStringValue(cJSON_GetObjectItem(b, "author")), sha, err,
	              sizeof err) != 0) {
		gf_error(resp, 400, err);
	} else {
		gf_pulls_sync(f, r);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "sha", sha);
		httpfake_response_cjson(resp, 200, o);
	}
	free(v);
	cJSON_Delete(b);
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
	if (strcmp(what, "stats") == 0) {
		httpfake_response_cjson(resp, 200, stats_json(f));
		return;
	}
	if (strcmp(req->method, "POST") != 0) {
		gf_error(resp, 405,
		         "ghfake: control endpoints other than state and stats take POST");
		return;
	}
	if (strcmp(what, "fail") == 0) {
		long st = lparam(req, "status", 502);
		if (st < 500 || st > 599) {
			gf_error(resp, 400, "ghfake: status must be 5xx");
			return;
		}
		f->fail_n = (unsigned)lparam(req, "n", 1);
		f->fail_status = (int)st;
		f->fail_html = lparam(req, "html", 0) != 0;
	} else if (strcmp(what, "secondary") == 0) {
		long st = lparam(req, "status", 403);
		if (st != 403 && st != 429) {
			gf_error(resp, 400, "ghfake: status must be 403 or 429");
			return;
		}
		f->secondary_n = (unsigned)lparam(req, "n", 1);
		f->secondary_status = (int)st;
		f->secondary_retry = (int)lparam(req, "retry_after", -1);
	} else if (strcmp(what, "rate") == 0) {
		const char *res = gf_param(req, "resource");
		struct gf_bucket *b = res && strcmp(res, "search") == 0 ? &f->search : &f->core;
		b->limit = lparam(req, "limit", 0);
		b->window_ms = lparam(req, "window_ms", 3600 * 1000);
		if (b->window_ms <= 0)
			b->window_ms = 3600 * 1000;
		b->remaining = lparam(req, "remaining", b->limit);
		b->reset_ms = gf_now(f) + b->window_ms;
	} else if (strcmp(what, "delay") == 0) {
		f->delay_ms = (unsigned)lparam(req, "ms", 0);
	} else if (strcmp(what, "repo") == 0) {
		const char *o = gf_param(req, "owner"), *n = gf_param(req, "name");
		if (!gf_valid_name(o, 39) || !gf_valid_name(n, 100) ||
		    f->n_repos == GHFAKE_REPOS_MAX || gf_find_repo(f, o, n)) {
			gf_error(resp, 400, "ghfake: owner and name required, new, within bounds");
			return;
		}
		gf_repo_new(f, o, n, (unsigned)lparam(req, "flags", 0));
	} else if (strcmp(what, "org") == 0) {
		const char *o = gf_param(req, "name");
		if (!gf_valid_name(o, 39) || f->n_orgs == GHFAKE_ORGS_MAX) {
			gf_error(resp, 400, "ghfake: name required, within bounds");
			return;
		}
		snprintf(f->orgs[f->n_orgs++], sizeof f->orgs[0], "%s", o);
	} else if (strcmp(what, "commit") == 0) {
		control_commit(f, req, resp);
		return;
	} else {
		gf_error(resp, 404, "ghfake: unknown control endpoint");
		return;
	}
	cJSON *ok = cJSON_CreateObject();
	cJSON_AddBoolToObject(ok, "ok", true);
	httpfake_response_cjson(resp, 200, ok);
}

/* --- the REST routes ----------------------------------------------------------------------- */

static void patch_repo(struct ghfake *f, struct gf_repo *r, const char *login,
                       const struct httpfake_request *req, struct httpfake_response *resp)
{
	if (!gf_may(f, r, login, GF_ADMIN, resp))
		return;
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *v;
	if ((v = cJSON_GetObjectItem(b, "default_branch")) && cJSON_IsString(v)) {
		if (!gf_branch_exists(f, r, v->valuestring)) {
			gf_invalid(resp, "Repository", "default_branch", "invalid");
			cJSON_Delete(b);
			return;
		}
		snprintf(r->default_branch, sizeof r->default_branch, "%s", v->valuestring);
		char head[GF_REF_MAX + 16];
		snprintf(head, sizeof head, "refs/heads/%s", r->default_branch);
		const char *sym[] = {"git", "symbolic-ref", "HEAD", head, NULL};
		gf_git_line(f, r, sym, NULL, 0);
	}
	if ((v = cJSON_GetObjectItem(b, "description")) && cJSON_IsString(v)) {
		free(r->description);
		r->description = gf_dup(v->valuestring);
	}
	if ((v = cJSON_GetObjectItem(b, "is_template")) && cJSON_IsBool(v))
		r->flags = cJSON_IsTrue(v) ? r->flags | GHFAKE_REPO_TEMPLATE
		                           : r->flags & ~GHFAKE_REPO_TEMPLATE;
	if ((v = cJSON_GetObjectItem(b, "private")) && cJSON_IsBool(v))
		r->flags = cJSON_IsTrue(v) ? r->flags | GHFAKE_REPO_PRIVATE
		                           : r->flags & ~GHFAKE_REPO_PRIVATE;
	r->updated_ms = gf_now(f);
	cJSON_Delete(b);
	httpfake_response_cjson(resp, 200, gf_repo_json(f, r, login));
}

void gf_collection(struct ghfake *f, struct gf_repo *r, const char *login,
                   const struct httpfake_request *req, struct httpfake_response *resp,
                   gf_route_fn list, gf_route_fn create)
{
	if (strcmp(req->method, "GET") == 0)
		list(f, r, login, req, resp);
	else if (strcmp(req->method, "POST") == 0)
		create(f, r, login, req, resp);
	else
		gf_error(resp, 404, "Not Found");
}

static void route_repo(struct ghfake *f, const char *login, const struct httpfake_request *req,
                       struct httpfake_response *resp)
{
	/* /repos/{o}/{r}[/…] */
	char owner[64] = "", name[128] = "";
	const char *p = req->path + 7;
	const char *s = strchr(p, '/');
	if (!s || (size_t)(s - p) >= sizeof owner) {
		gf_error(resp, 404, "Not Found");
		return;
	}
	memcpy(owner, p, (size_t)(s - p));
	p = s + 1;
	s = strchr(p, '/');
	size_t nl = s ? (size_t)(s - p) : strlen(p);
	if (nl == 0 || nl >= sizeof name) {
		gf_error(resp, 404, "Not Found");
		return;
	}
	memcpy(name, p, nl);
	p += nl;
	struct gf_repo *r = gf_find_repo(f, owner, name);
	if (!r || gf_perm_of(f, r, login) < GF_READ) {
		gf_error(resp, 404, "Not Found");
		return;
	}
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0;
	if (!*p) {
		if (get)
			httpfake_response_cjson(resp, 200, gf_repo_json(f, r, login));
		else if (strcmp(m, "PATCH") == 0)
			patch_repo(f, r, login, req, resp);
		else
			gf_error(resp, 404, "Not Found");
		return;
	}
	bool issues = strncmp(p, "/issues", 7) == 0 && (!p[7] || p[7] == '/');
	bool pulls = strncmp(p, "/pulls", 6) == 0 && (!p[6] || p[6] == '/');
	if ((issues || pulls) && !get &&
	    ((r->flags & GHFAKE_REPO_READONLY) || gf_perm_of(f, r, login) < GF_READ)) {
		gf_error(resp, 403, "Resource not accessible by personal access token");
	} else if (issues && (r->flags & GHFAKE_REPO_ISSUES_DISABLED)) {
		gf_error(resp, 410, "Issues are disabled for this repo");
	} else if (issues) {
		gf_route_issues(f, r, login, p + 7, req, resp);
	} else if (pulls) {
		gf_route_pulls(f, r, login, p + 6, req, resp);
	} else if (!gf_route_repo_git(f, r, login, p, req, resp)) {
		gf_error(resp, 404, "Not Found");
	}
}

static bool notif_for(const struct gf_notif *n, const char *login)
{
	return !n->login[0] || (login && strcasecmp(n->login, login) == 0);
}

static void notifications(struct ghfake *f, const struct httpfake_request *req,
                          struct httpfake_response *resp, const char *login)
{
	const char *all_s = gf_param(req, "all");
	bool all = all_s && strcmp(all_s, "true") == 0;
	int64_t since = 0;
	const char *s = gf_param(req, "since");
	if (s && time_parse_iso(s, &since) != 0) {
		gf_invalid(resp, "Notification", "since", "invalid");
		return;
	}
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = f->n_notifs; i-- > 0;) { /* newest first */
		const struct gf_notif *n = &f->notifs[i];
		if ((all || n->unread) && n->updated_ms >= since && notif_for(n, login))
			cJSON_AddItemToArray(arr, notif_json(f, n));
	}
	gf_paginate(f, req, resp, arr, 50, NULL);
}

static void rest(struct ghfake *f, const char *login, const struct httpfake_request *req,
                 struct httpfake_response *resp)
{
	const char *path = req->path, *m = req->method;
	if (strcmp(path, "/user") == 0 && strcmp(m, "GET") == 0) {
		cJSON *u = gf_user_json(login);
		cJSON_AddNumberToObject(u, "id", 1);
		httpfake_response_cjson(resp, 200, u);
	} else if (strncmp(path, "/repos/", 7) == 0) {
		route_repo(f, login, req, resp);
	} else if (gf_route_repo_lists(f, login, req, resp)) {
		/* answered */
	} else if (strcmp(path, "/notifications") == 0 && strcmp(m, "GET") == 0) {
		notifications(f, req, resp, login);
	} else if (strncmp(path, "/notifications/threads/", 23) == 0 && strcmp(m, "PATCH") == 0) {
		const char *e;
		int64_t id = gf_num(path + 23, &e);
		struct gf_notif *n = NULL;
		for (size_t i = 0; id > 0 && !*e && i < f->n_notifs; i++)
			if (f->notifs[i].id == id && notif_for(&f->notifs[i], login))
				n = &f->notifs[i];
		if (n) {
			n->unread = false;
			resp->status = 205;
		} else {
			gf_error(resp, 404, "Not Found");
		}
	} else if (strcmp(path, "/search/issues") == 0 && strcmp(m, "GET") == 0) {
		gf_search(f, req, resp);
	} else {
		gf_error(resp, 404, "Not Found");
	}
}

/* --- the handler ------------------------------------------------------------------------------ */

static void handle_rest(struct ghfake *f, const struct httpfake_request *req,
                        struct httpfake_response *resp, int64_t t)
{
	bool search_path = strncmp(req->path, "/search/", 8) == 0;
	struct gf_bucket *b = search_path ? &f->search : &f->core;
	refill(b, t);
	bool ok;
	const char *login = login_of(f, req, &ok);
	if (!ok) {
		gf_error(resp, 401,
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
			gf_error(resp, f->fail_status, "Server Error");
		}
	} else if (f->secondary_n > 0) {
		f->secondary_n--;
		f->stats.rate_limited++;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "message",
		                        "You have exceeded a secondary rate limit. Please wait a "
		                        "few minutes before you try again.");
		cJSON_AddStringToObject(o, "documentation_url", SECONDARY_DOCS);
		httpfake_response_cjson(resp, f->secondary_status, o);
		if (f->secondary_retry >= 0) {
			char v[16];
			snprintf(v, sizeof v, "%d", f->secondary_retry);
			httpfake_response_header(resp, "retry-after", v);
		}
	} else if (b->limit > 0 && b->remaining <= 0) {
		f->stats.rate_limited++;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(
		        o, "message",
		        "API rate limit exceeded for user ID 1. If you reach out to "
		        "GitHub Support for help, please include the request ID.");
		cJSON_AddStringToObject(o, "documentation_url", PRIMARY_DOCS);
		httpfake_response_cjson(resp, 403, o);
	} else {
		rest(f, login, req, resp);
		if (strcmp(req->method, "GET") == 0 && resp->status == 200) {
			char etag[48];
			etag_of(resp, etag);
			httpfake_response_header(resp, "ETag", etag);
			const char *inm = httpfake_request_header(req, "If-None-Match");
			if (inm && none_match_hits(inm, etag)) {
				resp->status = 304;
				httpfake_response_body(resp, NULL, 0);
			}
		}
		/* GitHub does not count a 304 against the budget. */
		if (b->limit > 0 && resp->status != 304)
			b->remaining--;
	}
	rate_headers(resp, b, search_path ? "search" : "core", t);
}

static void handle(const struct httpfake_request *req, struct httpfake_response *resp, void *ud)
{
	struct ghfake *f = ud;
	pthread_mutex_lock(&f->mu);
	int64_t t = gf_now(f);
	bool ctl = strncmp(req->path, "/_ghfake/", 9) == 0;
	bool git = !ctl && gf_git_path(req->path);
	/* The control endpoints answer at once: a test that watches the state
	 * while the agent's request is held must see it then, not after. */
	resp->delay_ms = ctl || git ? 0 : f->delay_ms;
	if (ctl)
		control(f, req, resp);
	else if (git)
		gf_git_serve(f, req, resp);
	else
		handle_rest(f, req, resp, t);
	if (!ctl)
		count(f, req, resp, git);
	struct gf_logline *l = &f->log[f->n_log % GHFAKE_LOG_MAX];
	snprintf(l->method, sizeof l->method, "%s", req->method);
	snprintf(l->path, sizeof l->path, "%s", req->path);
	l->status = resp->status;
	f->n_log++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

/* --- public --------------------------------------------------------------------------------------
 */

struct ghfake *ghfake_new(char *err, size_t errlen)
{
	struct ghfake *f = calloc(1, sizeof *f);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(f->dir, sizeof f->dir, "%s/ghfake-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		snprintf(err, errlen, "cannot make a temporary directory under %s",
		         tmp && *tmp ? tmp : "/tmp");
		free(f);
		return NULL;
	}
	char sub[600];
	const char *subs[] = {"git", "home", "tmp"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(sub, sizeof sub, "%s/%s", f->dir, subs[i]);
		mkdir(sub, 0700);
	}
	f->http = httpfake_new(0, err, errlen);
	if (!f->http) {
		gf_git_cleanup(f);
		free(f);
		return NULL;
	}
	httpfake_set_body_limit(f->http, GHFAKE_GIT_BODY_MAX);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->now = real_now;
	f->secondary_retry = -1;
	gf_git_probe(f);
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
	for (size_t i = 0; i < f->n_repos; i++)
		gf_repo_free(&f->repos[i]);
	free(f->notifs);
	gf_git_cleanup(f);
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
		gf_die("ghfake_add_token: at most %d tokens, and both token and login are "
		       "required",
		       GHFAKE_TOKENS_MAX);
	f->tokens[f->n_tokens].token = gf_dup(token);
	f->tokens[f->n_tokens].login = gf_dup(login);
	f->n_tokens++;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_add_org(struct ghfake *f, const char *org)
{
	pthread_mutex_lock(&f->mu);
	if (f->n_orgs == GHFAKE_ORGS_MAX || !gf_valid_name(org, 39))
		gf_die("ghfake_add_org: at most %d organisations, named with letters, digits, "
		       "'-', '_' or '.'",
		       GHFAKE_ORGS_MAX);
	snprintf(f->orgs[f->n_orgs++], sizeof f->orgs[0], "%s", org);
	pthread_mutex_unlock(&f->mu);
}

void ghfake_add_repo(struct ghfake *f, const char *owner, const char *name, unsigned flags)
{
	pthread_mutex_lock(&f->mu);
	if (f->n_repos == GHFAKE_REPOS_MAX)
		gf_die("ghfake_add_repo: more than %d repositories", GHFAKE_REPOS_MAX);
	if (!gf_valid_name(owner, 39) || !gf_valid_name(name, 100))
		gf_die("ghfake_add_repo: owner (1-39) and name (1-100) of letters, digits, '-', "
		       "'_' or '.' are required");
	if (gf_find_repo(f, owner, name))
		gf_die("ghfake_add_repo: %s/%s exists already", owner, name);
	gf_repo_new(f, owner, name, flags);
	pthread_mutex_unlock(&f->mu);
}

static struct gf_repo *must_repo(struct ghfake *f, const char *owner, const char *repo)
{
	struct gf_repo *r = gf_find_repo(f, owner ? owner : "", repo ? repo : "");
	if (!r)
		gf_die("no repository %s/%s: add it with ghfake_add_repo first",
		       owner ? owner : "?", repo ? repo : "?");
	return r;
}

int64_t ghfake_add_issue(struct ghfake *f, const char *owner, const char *repo, const char *author,
                         const char *title, const char *body)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = must_repo(f, owner, repo);
	struct gf_issue *is = gf_issue_new(f, r, author ? author : "someone", title, body);
	if (!is)
		gf_die("ghfake_add_issue: more than %d issues", GHFAKE_ISSUES_MAX);
	gf_notify_participants(f, r, is, is->author, is->body);
	int64_t n = is->number;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int64_t ghfake_add_comment(struct ghfake *f, const char *owner, const char *repo, int64_t number,
                           const char *author, const char *body)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = must_repo(f, owner, repo);
	struct gf_issue *is = gf_find_issue(r, number);
	if (!is)
		gf_die("ghfake_add_comment: no issue %s/%s#%lld", owner, repo, (long long)number);
	struct gf_comment *c = gf_comment_new(f, is, author ? author : "someone", body);
	if (!c)
		gf_die("ghfake_add_comment: more than %d comments", GHFAKE_COMMENTS_MAX);
	gf_notify_participants(f, r, is, c->author, c->body);
	int64_t id = c->id;
	pthread_mutex_unlock(&f->mu);
	return id;
}

int64_t ghfake_add_notification(struct ghfake *f, const char *owner, const char *repo,
                                int64_t number, const char *reason)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = must_repo(f, owner, repo);
	if (!gf_find_issue(r, number))
		gf_die("ghfake_add_notification: no issue %s/%s#%lld", owner, repo,
		       (long long)number);
	if (f->n_notifs == GHFAKE_NOTIFS_MAX)
		gf_die("ghfake_add_notification: more than %d notifications", GHFAKE_NOTIFS_MAX);
	struct gf_notif *n = gf_notif_upsert(f, r, number, NULL, reason);
	int64_t id = n->id;
	pthread_mutex_unlock(&f->mu);
	return id;
}

size_t ghfake_issue_count(struct ghfake *f, const char *owner, const char *repo)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = gf_find_repo(f, owner, repo);
	size_t n = 0;
	for (size_t i = 0; r && i < r->n_issues; i++)
		n += r->issues[i]->pr == NULL;
	pthread_mutex_unlock(&f->mu);
	return n;
}

size_t ghfake_comment_count(struct ghfake *f, const char *owner, const char *repo, int64_t number)
{
	pthread_mutex_lock(&f->mu);
	struct gf_issue *is = gf_find_issue(gf_find_repo(f, owner, repo), number);
	size_t n = is ? gf_live_comments(is) : 0;
	pthread_mutex_unlock(&f->mu);
	return n;
}

cJSON *ghfake_issue(struct ghfake *f, const char *owner, const char *repo, int64_t number)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = gf_find_repo(f, owner, repo);
	struct gf_issue *is = gf_find_issue(r, number);
	cJSON *o = is ? gf_issue_json(f, r, is) : NULL;
	pthread_mutex_unlock(&f->mu);
	return o;
}

size_t ghfake_count_body(struct ghfake *f, const char *s)
{
	size_t n = 0;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n_repos; i++)
		for (size_t j = 0; j < f->repos[i].n_issues; j++) {
			const struct gf_issue *is = f->repos[i].issues[j];
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
	struct gf_repo *r = gf_find_repo(f, owner, repo);
	int64_t id = 0;
	for (size_t i = 0; r && i < f->n_notifs; i++) {
		const struct gf_notif *n = &f->notifs[i];
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
	struct gf_issue *is = gf_find_issue(gf_find_repo(f, owner, repo), number);
	for (size_t i = 0; is && i < is->n_reactions; i++)
		n += is->reactions[i].comment_id == comment_id &&
		     strcmp(is->reactions[i].content, content) == 0;
	pthread_mutex_unlock(&f->mu);
	return n;
}

/* --- git, for tests --- */

bool ghfake_git_available(struct ghfake *f, char *why, size_t cap)
{
	pthread_mutex_lock(&f->mu);
	bool ok = f->git_ok;
	if (why && cap)
		snprintf(why, cap, "%s", ok ? "" : f->git_why);
	pthread_mutex_unlock(&f->mu);
	return ok;
}

bool ghfake_git_missing(const char *who)
{
	char err[256];
	struct ghfake *f = ghfake_new(err, sizeof err);
	bool ok = f && ghfake_git_available(f, err, sizeof err);
	ghfake_free(f);
	if (!ok)
		fprintf(stderr, "%s: skipped: %s\n", who, err);
	return !ok;
}

void ghfake_clone_url(struct ghfake *f, const char *owner, const char *repo, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s/%s.git", httpfake_base_url(f->http), owner, repo);
}

void ghfake_git_dir(struct ghfake *f, const char *owner, const char *repo, char *out, size_t cap)
{
	pthread_mutex_lock(&f->mu);
	gf_repo_path(f, must_repo(f, owner, repo), out, cap);
	pthread_mutex_unlock(&f->mu);
}

void ghfake_commit(struct ghfake *f, const char *owner, const char *repo, const char *branch,
                   const struct ghfake_file *files, size_t n, const char *message,
                   const char *author, char sha[41])
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = must_repo(f, owner, repo);
	char out[GF_SHA_LEN + 1], err[300];
	if (gf_commit(f, r, branch && *branch ? branch : r->default_branch, NULL, files, n,
	              message ? message : "A commit", author, out, err, sizeof err) != 0)
		gf_die("ghfake_commit on %s/%s: %s", owner, repo, err);
	gf_pulls_sync(f, r);
	if (sha)
		memcpy(sha, out, sizeof out);
	pthread_mutex_unlock(&f->mu);
}

static void add_dir_files(const char *root, const char *rel, struct ghfake_file **v, size_t *n,
                          char ***bufs)
{
	char path[2048];
	snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
	DIR *d = opendir(path);
	if (!d)
		gf_die("ghfake_seed_dir: cannot read %s", path);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, ".git"))
			continue;
		char sub[2048], full[4096];
		snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		snprintf(full, sizeof full, "%s/%s", root, sub);
		struct stat st;
		if (lstat(full, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			add_dir_files(root, sub, v, n, bufs);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		FILE *fp = fopen(full, "rb");
		if (!fp)
			gf_die("ghfake_seed_dir: cannot read %s", full);
		char *data = malloc((size_t)st.st_size + 1);
		if (!data || fread(data, 1, (size_t)st.st_size, fp) != (size_t)st.st_size)
			gf_die("ghfake_seed_dir: cannot read %s", full);
		fclose(fp);
		*v = gf_grow(*v, *n + 1, sizeof **v);
		*bufs = gf_grow(*bufs, 2 * (*n + 1), sizeof **bufs);
		(*bufs)[2 * *n] = data;
		(*bufs)[2 * *n + 1] = gf_dup(sub);
		(*v)[*n] = (struct ghfake_file){.path = (*bufs)[2 * *n + 1],
		                                .content = data,
		                                .len = (size_t)st.st_size,
		                                .mode = (st.st_mode & 0111) ? 0100755 : 0100644};
		/* An empty file: len 0 would mean strlen. */
		data[st.st_size] = '\0';
		(*n)++;
	}
	closedir(d);
}

void ghfake_seed_dir(struct ghfake *f, const char *owner, const char *repo, const char *branch,
                     const char *dir, const char *message)
{
	struct ghfake_file *v = NULL;
	char **bufs = NULL;
	size_t n = 0;
	add_dir_files(dir, "", &v, &n, &bufs);
	ghfake_commit(f, owner, repo, branch, v, n, message ? message : "Initial commit", NULL,
	              NULL);
	for (size_t i = 0; i < 2 * n; i++)
		free(bufs[i]);
	free(bufs);
	free(v);
}

int ghfake_branch_sha(struct ghfake *f, const char *owner, const char *repo, const char *branch,
                      char sha[41])
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = must_repo(f, owner, repo);
	char ref[GF_REF_MAX + 16];
	snprintf(ref, sizeof ref, "refs/heads/%s", branch);
	int rc = gf_rev(f, r, ref, sha);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

char *ghfake_file_at(struct ghfake *f, const char *owner, const char *repo, const char *ref,
                     const char *path, size_t *len)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = must_repo(f, owner, repo);
	char spec[2048];
	snprintf(spec, sizeof spec, "%s:%s", ref, path);
	const char *argv[] = {"git", "cat-file", "blob", spec, NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv, .repo = r};
	char *data = NULL;
	if (r->git && gf_git(f, &run, &o) == 0) {
		data = o.out;
		o.out = NULL;
		if (len)
			*len = o.out_len;
	}
	if (r->git)
		gf_out_free(&o);
	pthread_mutex_unlock(&f->mu);
	return data;
}

size_t ghfake_pull_count(struct ghfake *f, const char *owner, const char *repo, const char *state)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = gf_find_repo(f, owner, repo);
	size_t n = 0;
	if (r)
		gf_pulls_sync(f, r);
	for (size_t i = 0; r && i < r->n_issues; i++) {
		const struct gf_issue *is = r->issues[i];
		if (!is->pr)
			continue;
		n += !state || (strcmp(state, "open") == 0 && !is->closed) ||
		     (strcmp(state, "closed") == 0 && is->closed) ||
		     (strcmp(state, "merged") == 0 && is->pr->merged);
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

cJSON *ghfake_pull(struct ghfake *f, const char *owner, const char *repo, int64_t number)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = gf_find_repo(f, owner, repo);
	struct gf_issue *is = gf_find_issue(r, number);
	cJSON *o = NULL;
	if (is && is->pr) {
		gf_pulls_sync(f, r);
		o = gf_pull_json(f, r, is, true);
	}
	pthread_mutex_unlock(&f->mu);
	return o;
}

/* --- limits, faults, record --- */

static struct gf_bucket *bucket_named(struct ghfake *f, const char *resource)
{
	if (resource && strcmp(resource, "search") == 0)
		return &f->search;
	if (!resource || strcmp(resource, "core") == 0)
		return &f->core;
	gf_die("unknown rate-limit bucket '%s' (core or search)", resource);
}

void ghfake_rate_limit(struct ghfake *f, const char *resource, int64_t limit, int64_t window_ms)
{
	pthread_mutex_lock(&f->mu);
	struct gf_bucket *b = bucket_named(f, resource);
	b->limit = limit;
	b->remaining = limit;
	b->window_ms = window_ms > 0 ? window_ms : 3600 * 1000;
	b->reset_ms = gf_now(f) + b->window_ms;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_set_remaining(struct ghfake *f, const char *resource, int64_t remaining,
                          int64_t reset_ms)
{
	pthread_mutex_lock(&f->mu);
	struct gf_bucket *b = bucket_named(f, resource);
	if (b->limit <= 0)
		gf_die("ghfake_set_remaining: turn the limit on with ghfake_rate_limit first");
	b->remaining = remaining;
	b->reset_ms = reset_ms;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_secondary_limit(struct ghfake *f, unsigned n, int status, int retry_after_s)
{
	if (status != 403 && status != 429)
		gf_die("ghfake_secondary_limit: status must be 403 or 429, not %d", status);
	pthread_mutex_lock(&f->mu);
	f->secondary_n = n;
	f->secondary_status = status;
	f->secondary_retry = retry_after_s;
	pthread_mutex_unlock(&f->mu);
}

void ghfake_fail_next(struct ghfake *f, unsigned n, int status, bool html)
{
	if (status < 500 || status > 599)
		gf_die("ghfake_fail_next: status must be 5xx, not %d", status);
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
		const struct gf_logline *l = &f->log[i % GHFAKE_LOG_MAX];
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

void ghfake_stats(struct ghfake *f, struct ghfake_stats *out)
{
	pthread_mutex_lock(&f->mu);
	*out = f->stats;
	pthread_mutex_unlock(&f->mu);
}

uint64_t ghfake_endpoint_count(struct ghfake *f, const char *key, uint64_t *not_modified)
{
	uint64_t n = 0;
	pthread_mutex_lock(&f->mu);
	if (not_modified)
		*not_modified = 0;
	for (size_t i = 0; i < f->n_endpoints; i++)
		if (strcmp(f->endpoints[i].key, key) == 0) {
			n = f->endpoints[i].count;
			if (not_modified)
				*not_modified = f->endpoints[i].not_modified;
		}
	pthread_mutex_unlock(&f->mu);
	return n;
}

cJSON *ghfake_stats_json(struct ghfake *f)
{
	pthread_mutex_lock(&f->mu);
	cJSON *o = stats_json(f);
	pthread_mutex_unlock(&f->mu);
	return o;
}
