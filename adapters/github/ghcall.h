/*
 * ghcall — the small helpers the endpoint files of adapters/github share to
 * build a call: checking owner, repository, number and branch names, a
 * path with a percent-encoded query, path segments encoded one by one,
 * JSON bodies. Internal to adapters/github (endpoints.c, repos.c, pulls.c,
 * issues.c); everything is static inline, so nothing here is a symbol of
 * the library.
 *
 * Paths and queries are built in a strbuf bounded at QUERY_MAX bytes;
 * call_with hands the path to gh_call and frees the buffer.
 */
#ifndef GA_ADAPTERS_GITHUB_GHCALL_H
#define GA_ADAPTERS_GITHUB_GHCALL_H

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"
#include "adapters/github/github.h"
#include "common/strbuf.h"

#define QUERY_MAX 4096 /* bytes of an encoded path and query */

/* Fills err (may be NULL) and returns 0, the id of no call. */
static inline uint64_t refuse(struct ga_err *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static inline uint64_t refuse(struct ga_err *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return 0;
}

static inline int check_repo(const char *owner, const char *repo, struct ga_err *err)
{
	if (!gh_valid_owner(owner))
		return err_set(
		        err,
		        "'%.60s' is not a GitHub owner name (1-39 letters, digits or '-', not "
		        "starting with '-')",
		        owner ? owner : "");
	if (!gh_valid_repo(repo))
		return err_set(
		        err,
		        "'%.120s' is not a GitHub repository name (1-100 letters, digits, '.', "
		        "'_' or '-')",
		        repo ? repo : "");
	return 0;
}

static inline int check_number(int64_t number, const char *what, struct ga_err *err)
{
	if (number < 1 || number > GH_NUMBER_MAX)
		return err_set(err, "%s %lld is not a valid number (a positive integer)", what,
		               (long long)number);
	return 0;
}

/* Appends "&name=value" (or "?name=value" first), value percent-encoded. */
static inline int add_param(struct strbuf *sb, const char *name, const char *value)
{
	if (!value)
		return 0;
	if (sb_printf(sb, "%c%s=", strchr(sb_cstr(sb), '?') ? '&' : '?', name) != 0)
		return -1;
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		int rc = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~'
		                 ? sb_putc(sb, (char)*p)
		                 : sb_printf(sb, "%%%02X", *p);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static inline uint64_t call_with(struct gh_client *c, struct gh_req *req, struct strbuf *path,
                                 gh_done_fn cb, void *ud, struct ga_err *err)
{
	req->path = sb_cstr(path);
	uint64_t id = gh_call(c, req, cb, ud, err);
	sb_free(path);
	return id;
}

static inline uint64_t too_long(struct strbuf *path, const char *what, struct ga_err *err)
{
	sb_free(path);
	err_set(err, "the query to %s is longer than %d bytes", what, QUERY_MAX);
	return 0;
}

static inline char *json_body(cJSON *o, struct ga_err *err, const char *what)
{
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		err_set(err, "the request to %s could not be serialised (out of memory)", what);
	return s;
}

static inline cJSON *string_array(const char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		if (v[i])
			cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

static inline bool one_of(const char *v, const char *const *allowed)
{
	for (size_t i = 0; allowed[i]; i++)
		if (strcmp(v, allowed[i]) == 0)
			return true;
	return false;
}

static inline int check_branch(const char *b, struct ga_err *err)
{
	if (!gh_valid_branch(b))
		return err_set(err,
		               "'%.80s' is not a branch name git accepts (at most %d bytes; no "
		               "spaces, '..', '~^:?*[\\' or control characters)",
		               b ? b : "", GH_REF_MAX);
	return 0;
}

/* Appends path with each segment percent-encoded and the '/' between them
 * kept (GitHub reads "a%2Fb" and "a/b" alike only for some endpoints). */
static inline int add_segments(struct strbuf *sb, const char *path)
{
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		int rc = isalnum(*p) || strchr("-._~/", *p) ? sb_putc(sb, (char)*p)
		                                            : sb_printf(sb, "%%%02X", *p);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* Checks owner, repo and number, then starts path as
 * /repos/{owner}/{repo}/{kind}/{number}{tail}. 0, or -1 with err (path
 * then needs no free). */
static inline int number_path(struct strbuf *path, const char *owner, const char *repo,
                              const char *kind, int64_t number, const char *tail,
                              struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0 || check_number(number, kind, err) != 0)
		return -1;
	sb_init(path, QUERY_MAX);
	sb_printf(path, "/repos/%s/%s/%s/%lld%s", owner, repo, kind, (long long)number, tail);
	return 0;
}

/* 1..max logins, each a valid GitHub login. */
static inline int check_logins(const char *const *v, size_t n, size_t max, const char *what,
                               struct ga_err *err)
{
	if (!v || n == 0 || n > max)
		return err_set(err, "%s takes 1 to %zu logins, not %zu", what, max, v ? n : 0);
	for (size_t i = 0; i < n; i++)
		if (!gh_valid_owner(v[i]))
			return err_set(err, "'%.60s' is not a GitHub login", v[i] ? v[i] : "");
	return 0;
}

/* Queues a call with a JSON body (o, consumed) at path (consumed). */
static inline uint64_t write_json(struct gh_client *c, const char *method, const char *what,
                                  cJSON *o, struct strbuf *path, bool idempotent, gh_done_fn cb,
                                  void *ud, struct ga_err *err)
{
	char *body = json_body(o, err, what);
	if (!body) {
		sb_free(path);
		return 0;
	}
	struct gh_req req = {
	        .method = method, .what = what, .body = body, .idempotent = idempotent};
	uint64_t id = call_with(c, &req, path, cb, ud, err);
	free(body);
	return id;
}

/* The page size a list of at most max_items (0 = GH_DEFAULT_MAX_ITEMS)
 * asks for: GH_PER_PAGE, or max_items when that is fewer. A page of 100
 * when 10 are kept would be read, stored (ETag cache) and parsed on every
 * poll for the 90 thrown away; the list is cut at the same items either
 * way. */
static inline size_t per_page_for(size_t max_items)
{
	size_t m = max_items ? max_items : GH_DEFAULT_MAX_ITEMS;
	return m < GH_PER_PAGE ? m : GH_PER_PAGE;
}

/* Appends the query parameters (name, value pairs; a NULL value is left
 * out) and per_page (per_page_for) to path, and queues a GET of the list. */
static inline uint64_t get_list(struct gh_client *c, struct strbuf *path, const char *what,
                                const char *const (*kv)[2], size_t n_kv, size_t max_items,
                                gh_done_fn cb, void *ud, struct ga_err *err)
{
	char per_page[24];
	snprintf(per_page, sizeof per_page, "%zu", per_page_for(max_items));
	for (size_t i = 0; i < n_kv; i++)
		if (add_param(path, kv[i][0], kv[i][1]) != 0)
			return too_long(path, what, err);
	if (add_param(path, "per_page", per_page) != 0)
		return too_long(path, what, err);
	struct gh_req req = {.method = "GET", .what = what, .list = true, .max_items = max_items};
	return call_with(c, &req, path, cb, ud, err);
}

/* POST (add) or DELETE (remove) of a list of logins under an issue or PR:
 * {field: [logins]} at /repos/{o}/{r}/{kind}/{n}{tail}. Repeating it
 * changes nothing, so it is retried like an idempotent write. */
static inline uint64_t logins_write(struct gh_client *c, const char *method, const char *owner,
                                    const char *repo, const char *kind, int64_t number,
                                    const char *tail, const char *field, size_t max,
                                    const char *verb, const char *const *logins, size_t n,
                                    gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_logins(logins, n, max, verb, err) != 0)
		return 0;
	struct strbuf path;
	if (number_path(&path, owner, repo, kind, number, tail, err) != 0)
		return 0;
	char what[200];
	snprintf(what, sizeof what, "%s%s (%s) on %s/%s#%lld",
	         strcmp(method, "POST") ? "undo " : "", verb, field, owner, repo,
	         (long long)number);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, field, string_array(logins, n));
	return write_json(c, method, what, o, &path, true, cb, ud, err);
}

/* Adds the string fields (name, value pairs) to o, leaving out NULL
 * values and, for "title", an empty one (GitHub never gets a blank
 * title). */
static inline void add_strings(cJSON *o, const char *const (*kv)[2], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (kv[i][1] && (kv[i][1][0] || strcmp(kv[i][0], "title") != 0))
			cJSON_AddStringToObject(o, kv[i][0], kv[i][1]);
}

#endif
