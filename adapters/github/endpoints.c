/*
 * endpoints — the GitHub REST endpoints of spec github-commitments §1.4 that
 * the commitment pipeline and engagement use, as thin, checked wrappers
 * around gh_call. Names in paths are validated (never escaped into
 * something else), query values are percent-encoded, bodies are built with
 * cJSON and never truncated.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/ghcall.h"
#include "adapters/github/github.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

uint64_t gh_repo_get(struct gh_client *c, const char *owner, const char *repo, gh_done_fn cb,
                     void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0)
		return 0;
	char what[256];
	snprintf(what, sizeof what, "get repository %s/%s", owner, repo);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s", owner, repo);
	struct gh_req req = {.method = "GET", .what = what};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_issue_create(struct gh_client *c, const char *owner, const char *repo,
                         const struct gh_issue_new *in, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0)
		return 0;
	char what[256];
	snprintf(what, sizeof what, "create an issue in %s/%s", owner, repo);
	if (!in || !in->title || !in->title[strspn(in->title, " \t\r\n")])
		return refuse(err, "cannot %s without a title", what);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "title", in->title);
	if (in->body)
		cJSON_AddStringToObject(o, "body", in->body);
	if (in->n_labels)
		cJSON_AddItemToObject(o, "labels", string_array(in->labels, in->n_labels));
	if (in->n_assignees)
		cJSON_AddItemToObject(o, "assignees", string_array(in->assignees, in->n_assignees));
	char *body = json_body(o, err, what);
	if (!body)
		return 0;
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/issues", owner, repo);
	struct gh_req req = {.method = "POST", .what = what, .body = body};
	uint64_t id = call_with(c, &req, &path, cb, ud, err);
	free(body);
	return id;
}

uint64_t gh_issue_get(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                      gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0 || check_number(number, "issue", err) != 0)
		return 0;
	char what[256];
	snprintf(what, sizeof what, "get issue %s/%s#%lld", owner, repo, (long long)number);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/issues/%lld", owner, repo, (long long)number);
	struct gh_req req = {.method = "GET", .what = what};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_issues_list(struct gh_client *c, const char *owner, const char *repo,
                        const struct gh_issue_query *q, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0)
		return 0;
	static const struct gh_issue_query none = {0};
	if (!q)
		q = &none;
	static const char *const states[] = {"open", "closed", "all", NULL};
	static const char *const sorts[] = {"created", "updated", "comments", NULL};
	static const char *const dirs[] = {"asc", "desc", NULL};
	if (q->state && !one_of(q->state, states))
		return refuse(err, "issue state '%.40s' is not open, closed or all", q->state);
	if (q->sort && !one_of(q->sort, sorts))
		return refuse(err, "issue sort '%.40s' is not created, updated or comments",
		              q->sort);
	if (q->direction && !one_of(q->direction, dirs))
		return refuse(err, "sort direction '%.40s' is not asc or desc", q->direction);
	char what[256];
	snprintf(what, sizeof what, "list the issues of %s/%s", owner, repo);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	char per_page[24];
	snprintf(per_page, sizeof per_page, "%zu", per_page_for(q->max_items));
	if (sb_printf(&path, "/repos/%s/%s/issues", owner, repo) != 0 ||
	    add_param(&path, "state", q->state) != 0 ||
	    add_param(&path, "labels", q->labels) != 0 || add_param(&path, "sort", q->sort) != 0 ||
	    add_param(&path, "direction", q->direction) != 0 ||
	    add_param(&path, "per_page", per_page) != 0)
		return too_long(&path, what, err);
	struct gh_req req = {
	        .method = "GET", .what = what, .list = true, .max_items = q->max_items};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_issue_comment(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          const char *body, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0 || check_number(number, "issue", err) != 0)
		return 0;
	char what[256];
	snprintf(what, sizeof what, "comment on %s/%s#%lld", owner, repo, (long long)number);
	if (!body || !body[strspn(body, " \t\r\n")])
		return refuse(err, "cannot %s with an empty comment", what);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "body", body);
	char *json = json_body(o, err, what);
	if (!json)
		return 0;
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/issues/%lld/comments", owner, repo, (long long)number);
	struct gh_req req = {.method = "POST", .what = what, .body = json};
	uint64_t id = call_with(c, &req, &path, cb, ud, err);
	free(json);
	return id;
}

uint64_t gh_comments_list(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0 || check_number(number, "issue", err) != 0)
		return 0;
	char what[256];
	snprintf(what, sizeof what, "list the comments on %s/%s#%lld", owner, repo,
	         (long long)number);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/issues/%lld/comments?per_page=%zu", owner, repo,
	          (long long)number, per_page_for(max_items));
	struct gh_req req = {.method = "GET", .what = what, .list = true, .max_items = max_items};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_reaction_create(struct gh_client *c, const char *owner, const char *repo,
                            int64_t number, int64_t comment_id, const char *content, gh_done_fn cb,
                            void *ud, struct ga_err *err)
{
	static const char *const kinds[] = {"+1",     "-1",     "laugh", "confused", "heart",
	                                    "hooray", "rocket", "eyes",  NULL};
	if (check_repo(owner, repo, err) != 0)
		return 0;
	if (!content || !one_of(content, kinds))
		return refuse(err,
		              "'%.40s' is not a GitHub reaction (+1, -1, laugh, confused, "
		              "heart, hooray, rocket, eyes)",
		              content ? content : "");
	char what[256];
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	if (comment_id > 0) {
		snprintf(what, sizeof what, "react to comment %lld in %s/%s", (long long)comment_id,
		         owner, repo);
		sb_printf(&path, "/repos/%s/%s/issues/comments/%lld/reactions", owner, repo,
		          (long long)comment_id);
	} else {
		if (check_number(number, "issue", err) != 0) {
			sb_free(&path);
			return 0;
		}
		snprintf(what, sizeof what, "react to %s/%s#%lld", owner, repo, (long long)number);
		sb_printf(&path, "/repos/%s/%s/issues/%lld/reactions", owner, repo,
		          (long long)number);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "content", content);
	char *json = json_body(o, err, what);
	if (!json) {
		sb_free(&path);
		return 0;
	}
	struct gh_req req = {.method = "POST", .what = what, .body = json, .idempotent = true};
	uint64_t id = call_with(c, &req, &path, cb, ud, err);
	free(json);
	return id;
}

uint64_t gh_notifications_list(struct gh_client *c, int64_t since_ms, bool all, size_t max_items,
                               gh_done_fn cb, void *ud, struct ga_err *err)
{
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	char iso[TIME_ISO_LEN + 1];
	sb_puts(&path, "/notifications?per_page=50");
	if (all)
		add_param(&path, "all", "true");
	if (since_ms > 0)
		add_param(&path, "since", time_format_iso(since_ms, iso));
	struct gh_req req = {.method = "GET",
	                     .what = "list notifications",
	                     .list = true,
	                     .max_items = max_items};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_notification_mark_read(struct gh_client *c, const char *thread_id, gh_done_fn cb,
                                   void *ud, struct ga_err *err)
{
	size_t n = thread_id ? strlen(thread_id) : 0;
	if (n == 0 || n > 20 || strspn(thread_id, "0123456789") != n)
		return refuse(err, "'%.40s' is not a notification thread id (digits)",
		              thread_id ? thread_id : "");
	char what[96];
	snprintf(what, sizeof what, "mark notification %s read", thread_id);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/notifications/threads/%s", thread_id);
	struct gh_req req = {.method = "PATCH", .what = what};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_search_issues(struct gh_client *c, const char *query, size_t max_items, gh_done_fn cb,
                          void *ud, struct ga_err *err)
{
	if (!query || !query[strspn(query, " \t\r\n")])
		return refuse(err, "cannot search GitHub issues for nothing");
	/* GitHub refuses queries over 256 characters (without qualifiers it
	 * counts differently; this bound is the one that is always safe to
	 * state). */
	if (strlen(query) > 256)
		return refuse(err, "the search query is longer than GitHub's 256 "
		                   "characters");
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	char per_page[24];
	snprintf(per_page, sizeof per_page, "%zu", per_page_for(max_items));
	if (sb_puts(&path, "/search/issues") != 0 || add_param(&path, "q", query) != 0 ||
	    add_param(&path, "per_page", per_page) != 0)
		return too_long(&path, "search issues", err);
	struct gh_req req = {.method = "GET",
	                     .what = "search issues",
	                     .resource = "search",
	                     .list = true,
	                     .items_field = "items",
	                     .max_items = max_items};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_user_get(struct gh_client *c, gh_done_fn cb, void *ud, struct ga_err *err)
{
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_puts(&path, "/user");
	struct gh_req req = {.method = "GET", .what = "get the authenticated user"};
	return call_with(c, &req, &path, cb, ud, err);
}
