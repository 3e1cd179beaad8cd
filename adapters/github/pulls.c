/*
 * pulls — pull requests for the work loop (gh_work.h): create, read, list,
 * update, changed files, reviews with inline comments, review comments,
 * requested reviewers and the merge.
 */
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"
#include "adapters/github/ghcall.h"

static const char *const PR_STATES[] = {"open", "closed", NULL};

/* A branch as a PR names it: "branch" or "owner:branch". */
static int check_head(const char *head, struct ga_err *err)
{
	const char *colon = head ? strchr(head, ':') : NULL;
	if (colon) {
		char owner[GH_OWNER_MAX + 2];
		size_t ol = (size_t)(colon - head);
		if (ol > GH_OWNER_MAX)
			return err_set(err, "'%.80s' is not owner:branch", head);
		memcpy(owner, head, ol);
		owner[ol] = '\0';
		if (!gh_valid_owner(owner))
			return err_set(err, "'%.80s' is not owner:branch", head);
		return check_branch(colon + 1, err);
	}
	return check_branch(head, err);
}

uint64_t gh_pull_create(struct gh_client *c, const char *owner, const char *repo,
                        const struct gh_pull_new *in, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0)
		return 0;
	if (!in || !in->title || !in->title[strspn(in->title, " \t\r\n")])
		return refuse(err, "a pull request needs a title");
	if (check_head(in->head, err) != 0 || check_branch(in->base, err) != 0)
		return 0;
	char what[GH_REF_MAX + 200];
	snprintf(what, sizeof what, "open a pull request from %s in %s/%s", in->head, owner, repo);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "title", in->title);
	if (in->body)
		cJSON_AddStringToObject(o, "body", in->body);
	cJSON_AddStringToObject(o, "head", in->head);
	cJSON_AddStringToObject(o, "base", in->base);
	cJSON_AddBoolToObject(o, "draft", in->draft);
	cJSON_AddBoolToObject(o, "maintainer_can_modify", !in->no_maintainer_edits);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/pulls", owner, repo);
	return write_json(c, "POST", what, o, &path, false, cb, ud, err);
}

uint64_t gh_pull_get(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                     gh_done_fn cb, void *ud, struct ga_err *err)
{
	struct strbuf path;
	if (number_path(&path, owner, repo, "pulls", number, "", err) != 0)
		return 0;
	char what[200];
	snprintf(what, sizeof what, "get pull request %s/%s#%lld", owner, repo, (long long)number);
	struct gh_req req = {.method = "GET", .what = what};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_pulls_list(struct gh_client *c, const char *owner, const char *repo,
                       const struct gh_pull_query *q, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0)
		return 0;
	static const struct gh_pull_query none = {0};
	if (!q)
		q = &none;
	static const char *const states[] = {"open", "closed", "all", NULL};
	static const char *const sorts[] = {"created", "updated", "popularity", "long-running",
	                                    NULL};
	static const char *const dirs[] = {"asc", "desc", NULL};
	if (q->state && !one_of(q->state, states))
		return refuse(err, "pull request state '%.40s' is not open, closed or all",
		              q->state);
	if (q->sort && !one_of(q->sort, sorts))
		return refuse(err, "pull request sort '%.40s' is not one GitHub knows", q->sort);
	if (q->direction && !one_of(q->direction, dirs))
		return refuse(err, "sort direction '%.40s' is not asc or desc", q->direction);
	if ((q->head && check_head(q->head, err) != 0) ||
	    (q->base && check_branch(q->base, err) != 0))
		return 0;
	/* GitHub filters head only as "owner:branch"; a bare branch names one
	 * of this repository. */
	char head[GH_OWNER_MAX + GH_REF_MAX + 2];
	if (q->head)
		snprintf(head, sizeof head, "%s%s%s", strchr(q->head, ':') ? "" : owner,
		         strchr(q->head, ':') ? "" : ":", q->head);
	char what[256];
	snprintf(what, sizeof what, "list the pull requests of %s/%s", owner, repo);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/pulls", owner, repo);
	const char *const kv[][2] = {{"state", q->state},
	                             {"head", q->head ? head : NULL},
	                             {"base", q->base},
	                             {"sort", q->sort},
	                             {"direction", q->direction}};
	return get_list(c, &path, what, kv, 5, q->max_items, cb, ud, err);
}

uint64_t gh_pull_update(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                        const struct gh_pull_update *in, gh_done_fn cb, void *ud,
                        struct ga_err *err)
{
	if (!in || (in->state && !one_of(in->state, PR_STATES)))
		return refuse(err, "pull request state '%.40s' is not open or closed",
		              in && in->state ? in->state : "");
	if (in->base && check_branch(in->base, err) != 0)
		return 0;
	struct strbuf path;
	if (number_path(&path, owner, repo, "pulls", number, "", err) != 0)
		return 0;
	char what[200];
	snprintf(what, sizeof what, "update pull request %s/%s#%lld", owner, repo,
	         (long long)number);
	cJSON *o = cJSON_CreateObject();
	const char *const kv[][2] = {
	        {"title", in->title}, {"body", in->body}, {"state", in->state}, {"base", in->base}};
	add_strings(o, kv, 4);
	return write_json(c, "PATCH", what, o, &path, true, cb, ud, err);
}

/* A paginated list under /pulls/{n}: files, reviews, comments. */
static uint64_t pull_list(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          const char *tail, const char *noun, size_t max_items, gh_done_fn cb,
                          void *ud, struct ga_err *err)
{
	struct strbuf path;
	if (number_path(&path, owner, repo, "pulls", number, tail, err) != 0)
		return 0;
	char what[256];
	snprintf(what, sizeof what, "list the %s of %s/%s#%lld", noun, owner, repo,
	         (long long)number);
	return get_list(c, &path, what, NULL, 0, max_items, cb, ud, err);
}

uint64_t gh_pull_files(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                       size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err)
{
	return pull_list(c, owner, repo, number, "/files", "changed files", max_items, cb, ud, err);
}

uint64_t gh_reviews_list(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                         size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err)
{
	return pull_list(c, owner, repo, number, "/reviews", "reviews", max_items, cb, ud, err);
}

uint64_t gh_review_comments_list(struct gh_client *c, const char *owner, const char *repo,
                                 int64_t number, size_t max_items, gh_done_fn cb, void *ud,
                                 struct ga_err *err)
{
	return pull_list(c, owner, repo, number, "/comments", "review comments", max_items, cb, ud,
	                 err);
}

uint64_t gh_review_create(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          const struct gh_review_new *in, gh_done_fn cb, void *ud,
                          struct ga_err *err)
{
	static const char *const events[] = {"APPROVE", "REQUEST_CHANGES", "COMMENT", NULL};
	if (!in || !in->event || !one_of(in->event, events))
		return refuse(err,
		              "review event '%.40s' is not APPROVE, REQUEST_CHANGES or COMMENT",
		              in && in->event ? in->event : "");
	bool has_body = in->body && in->body[strspn(in->body, " \t\r\n")];
	if (strcmp(in->event, "APPROVE") != 0 && !has_body &&
	    (strcmp(in->event, "REQUEST_CHANGES") == 0 || in->n_comments == 0))
		return refuse(err, "a %s review needs a body saying why", in->event);
	if (in->n_comments > GH_COMMENTS_MAX || (in->n_comments && !in->comments))
		return refuse(err, "a review carries at most %d inline comments", GH_COMMENTS_MAX);
	if (in->commit_id && (strlen(in->commit_id) != GH_SHA_LEN ||
	                      strspn(in->commit_id, "0123456789abcdef") != GH_SHA_LEN))
		return refuse(err, "'%.60s' is not a commit sha", in->commit_id);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "event", in->event);
	if (has_body)
		cJSON_AddStringToObject(o, "body", in->body);
	if (in->commit_id)
		cJSON_AddStringToObject(o, "commit_id", in->commit_id);
	cJSON *cs = in->n_comments ? cJSON_AddArrayToObject(o, "comments") : NULL;
	for (size_t i = 0; i < in->n_comments; i++) {
		const struct gh_review_comment *rc = &in->comments[i];
		bool side_ok = !rc->side || !strcmp(rc->side, "RIGHT") || !strcmp(rc->side, "LEFT");
		if (!rc->path || !*rc->path || strlen(rc->path) > GH_PATH_MAX || !rc->body ||
		    !*rc->body || (rc->line <= 0 && rc->position <= 0) || !side_ok) {
			cJSON_Delete(o);
			return refuse(err,
			              "inline comment %zu needs a path, a body and a line (or a "
			              "position) on side LEFT or RIGHT",
			              i + 1);
		}
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", rc->path);
		cJSON_AddStringToObject(x, "body", rc->body);
		if (rc->line > 0) {
			cJSON_AddNumberToObject(x, "line", (double)rc->line);
			cJSON_AddStringToObject(x, "side", rc->side ? rc->side : "RIGHT");
		} else {
			cJSON_AddNumberToObject(x, "position", (double)rc->position);
		}
		cJSON_AddItemToArray(cs, x);
	}
	struct strbuf path;
	if (number_path(&path, owner, repo, "pulls", number, "/reviews", err) != 0) {
		cJSON_Delete(o);
		return 0;
	}
	char what[200];
	snprintf(what, sizeof what, "review %s/%s#%lld (%s)", owner, repo, (long long)number,
	         in->event);
	return write_json(c, "POST", what, o, &path, false, cb, ud, err);
}

uint64_t gh_reviewers_request(struct gh_client *c, const char *owner, const char *repo,
                              int64_t number, const char *const *logins, size_t n, gh_done_fn cb,
                              void *ud, struct ga_err *err)
{
	return logins_write(c, "POST", owner, repo, "pulls", number, "/requested_reviewers",
	                    "reviewers", GH_REVIEWERS_MAX, "requesting reviewers", logins, n, cb,
	                    ud, err);
}

uint64_t gh_reviewers_remove(struct gh_client *c, const char *owner, const char *repo,
                             int64_t number, const char *const *logins, size_t n, gh_done_fn cb,
                             void *ud, struct ga_err *err)
{
	return logins_write(c, "DELETE", owner, repo, "pulls", number, "/requested_reviewers",
	                    "reviewers", GH_REVIEWERS_MAX, "requesting reviewers", logins, n, cb,
	                    ud, err);
}

uint64_t gh_pull_merge(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                       const struct gh_merge *in, gh_done_fn cb, void *ud, struct ga_err *err)
{
	static const char *const methods[] = {"squash", "merge", "rebase", NULL};
	const char *method = in && in->method ? in->method : "squash";
	if (!one_of(method, methods))
		return refuse(err, "merge method '%.40s' is not squash, merge or rebase", method);
	if (in && in->sha &&
	    (strlen(in->sha) != GH_SHA_LEN || strspn(in->sha, "0123456789abcdef") != GH_SHA_LEN))
		return refuse(err, "'%.60s' is not a commit sha", in->sha);
	struct strbuf path;
	if (number_path(&path, owner, repo, "pulls", number, "/merge", err) != 0)
		return 0;
	char what[200];
	snprintf(what, sizeof what, "merge %s/%s#%lld (%s)", owner, repo, (long long)number,
	         method);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "merge_method", method);
	if (in && in->commit_title && *in->commit_title)
		cJSON_AddStringToObject(o, "commit_title", in->commit_title);
	if (in && in->commit_message)
		cJSON_AddStringToObject(o, "commit_message", in->commit_message);
	if (in && in->sha)
		cJSON_AddStringToObject(o, "sha", in->sha);
	return write_json(c, "PUT", what, o, &path, true, cb, ud, err);
}
