/*
 * repos — repositories and git data for the work loop (gh_work.h):
 * organisation and user repository lists, creation in an organisation or
 * from a template, collaborators, branches, refs, contents and commits.
 */
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"
#include "adapters/github/ghcall.h"
#include "common/xalloc.h"

bool gh_valid_branch(const char *b)
{
	size_t n = b ? strlen(b) : 0;
	if (n == 0 || n > GH_REF_MAX || b[0] == '-' || b[0] == '/' || b[0] == '.' ||
	    b[n - 1] == '/' || b[n - 1] == '.' || strcmp(b, "@") == 0 || strstr(b, "..") ||
	    strstr(b, "@{") || strstr(b, "//") || strstr(b, "/."))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];
		if (c < 0x20 || c == 0x7f || strchr(" ~^:?*[\\", c))
			return false;
	}
	for (const char *p = b; (p = strstr(p, ".lock")); p++)
		if (p[5] == '\0' || p[5] == '/')
			return false;
	return true;
}

bool gh_result_gone(const struct gh_result *r)
{
	return r->kind == GH_OK || r->status == 422 || r->status == 404;
}

/* --- repositories ---------------------------------------------------------------- */

static uint64_t repos_list(struct gh_client *c, const char *kind, const char *who,
                           const struct gh_repo_query *q, gh_done_fn cb, void *ud,
                           struct ga_err *err)
{
	if (!gh_valid_owner(who))
		return refuse(err, "'%.60s' is not a GitHub %s name", who ? who : "",
		              strcmp(kind, "orgs") == 0 ? "organisation" : "user");
	static const struct gh_repo_query none = {0};
	if (!q)
		q = &none;
	static const char *const types[] = {"all",     "public", "private", "forks",
	                                    "sources", "member", "owner",   NULL};
	static const char *const sorts[] = {"created", "updated", "pushed", "full_name", NULL};
	static const char *const dirs[] = {"asc", "desc", NULL};
	if (q->type && !one_of(q->type, types))
		return refuse(err, "repository type '%.40s' is not one GitHub lists", q->type);
	if (q->sort && !one_of(q->sort, sorts))
		return refuse(err,
		              "repository sort '%.40s' is not created, updated, pushed or "
		              "full_name",
		              q->sort);
	if (q->direction && !one_of(q->direction, dirs))
		return refuse(err, "sort direction '%.40s' is not asc or desc", q->direction);
	char what[160];
	snprintf(what, sizeof what, "list the repositories of %s", who);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/%s/%s/repos", kind, who);
	const char *const kv[][2] = {
	        {"type", q->type}, {"sort", q->sort}, {"direction", q->direction}};
	return get_list(c, &path, what, kv, 3, q->max_items, cb, ud, err);
}

uint64_t gh_org_repos_list(struct gh_client *c, const char *org, const struct gh_repo_query *q,
                           gh_done_fn cb, void *ud, struct ga_err *err)
{
	return repos_list(c, "orgs", org, q, cb, ud, err);
}

uint64_t gh_user_repos_list(struct gh_client *c, const char *user, const struct gh_repo_query *q,
                            gh_done_fn cb, void *ud, struct ga_err *err)
{
	return repos_list(c, "users", user, q, cb, ud, err);
}

uint64_t gh_org_repo_create(struct gh_client *c, const char *org, const struct gh_repo_new *in,
                            gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (!gh_valid_owner(org))
		return refuse(err, "'%.60s' is not a GitHub organisation name", org ? org : "");
	if (!in || !gh_valid_repo(in->name))
		return refuse(err, "'%.120s' is not a GitHub repository name",
		              in && in->name ? in->name : "");
	char what[200];
	snprintf(what, sizeof what, "create repository %s/%s", org, in->name);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", in->name);
	if (in->description)
		cJSON_AddStringToObject(o, "description", in->description);
	cJSON_AddBoolToObject(o, "private", in->private_repo);
	cJSON_AddBoolToObject(o, "auto_init", in->auto_init);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/orgs/%s/repos", org);
	return write_json(c, "POST", what, o, &path, false, cb, ud, err);
}

uint64_t gh_repo_generate(struct gh_client *c, const char *tpl_owner, const char *tpl_repo,
                          const struct gh_generate *in, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(tpl_owner, tpl_repo, err) != 0)
		return 0;
	if (!in || check_repo(in->owner, in->name, err) != 0)
		return in ? 0 : refuse(err, "generating a repository needs an owner and a name");
	char what[300];
	snprintf(what, sizeof what, "generate %s/%s from the template %s/%s", in->owner, in->name,
	         tpl_owner, tpl_repo);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "owner", in->owner);
	cJSON_AddStringToObject(o, "name", in->name);
	if (in->description)
		cJSON_AddStringToObject(o, "description", in->description);
	cJSON_AddBoolToObject(o, "private", in->private_repo);
	cJSON_AddBoolToObject(o, "include_all_branches", in->include_all_branches);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/generate", tpl_owner, tpl_repo);
	return write_json(c, "POST", what, o, &path, false, cb, ud, err);
}

/* A paginated GET of /repos/{o}/{r}/<tail> with per_page=100: "list the
 * <tail> of o/r". */
static uint64_t repo_list(struct gh_client *c, const char *owner, const char *repo,
                          const char *tail, size_t max_items, gh_done_fn cb, void *ud,
                          struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0)
		return 0;
	char what[256];
	snprintf(what, sizeof what, "list the %s of %s/%s", tail, owner, repo);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/%s", owner, repo, tail);
	return get_list(c, &path, what, NULL, 0, max_items, cb, ud, err);
}

uint64_t gh_collaborators_list(struct gh_client *c, const char *owner, const char *repo,
                               size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err)
{
	return repo_list(c, owner, repo, "collaborators", max_items, cb, ud, err);
}

/* --- git data -------------------------------------------------------------------- */

uint64_t gh_branches_list(struct gh_client *c, const char *owner, const char *repo,
                          size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err)
{
	return repo_list(c, owner, repo, "branches", max_items, cb, ud, err);
}

/* A call on /repos/{o}/{r}/<kind>/<branch>: what = "<verb> <branch> of o/r". */
static uint64_t branch_call(struct gh_client *c, const char *method, const char *owner,
                            const char *repo, const char *kind, const char *branch,
                            const char *verb, cJSON *body, bool idempotent, gh_done_fn cb, void *ud,
                            struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0 || check_branch(branch, err) != 0) {
		cJSON_Delete(body);
		return 0;
	}
	char what[GH_REF_MAX + 200];
	snprintf(what, sizeof what, "%s branch %s of %s/%s", verb, branch, owner, repo);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	if (sb_printf(&path, "/repos/%s/%s/%s/", owner, repo, kind) != 0 ||
	    add_segments(&path, branch) != 0) {
		cJSON_Delete(body);
		return too_long(&path, what, err);
	}
	if (body)
		return write_json(c, method, what, body, &path, idempotent, cb, ud, err);
	struct gh_req req = {.method = method, .what = what, .idempotent = idempotent};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_branch_get(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                       gh_done_fn cb, void *ud, struct ga_err *err)
{
	return branch_call(c, "GET", owner, repo, "branches", branch, "get", NULL, false, cb, ud,
	                   err);
}

uint64_t gh_ref_get(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                    gh_done_fn cb, void *ud, struct ga_err *err)
{
	return branch_call(c, "GET", owner, repo, "git/ref/heads", branch, "look up", NULL, false,
	                   cb, ud, err);
}

static bool valid_sha(const char *s)
{
	return s && strlen(s) == GH_SHA_LEN && strspn(s, "0123456789abcdef") == GH_SHA_LEN;
}

uint64_t gh_ref_create(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                       const char *sha, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0 || check_branch(branch, err) != 0)
		return 0;
	if (!valid_sha(sha))
		return refuse(err, "'%.60s' is not a commit sha (40 lowercase hex digits)",
		              sha ? sha : "");
	char what[GH_REF_MAX + 200], ref[GH_REF_MAX + 16];
	snprintf(what, sizeof what, "create branch %s of %s/%s", branch, owner, repo);
	snprintf(ref, sizeof ref, "refs/heads/%s", branch);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "ref", ref);
	cJSON_AddStringToObject(o, "sha", sha);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/git/refs", owner, repo);
	return write_json(c, "POST", what, o, &path, false, cb, ud, err);
}

uint64_t gh_ref_update(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                       const char *sha, bool force, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (!valid_sha(sha))
		return refuse(err, "'%.60s' is not a commit sha (40 lowercase hex digits)",
		              sha ? sha : "");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sha", sha);
	cJSON_AddBoolToObject(o, "force", force);
	return branch_call(c, "PATCH", owner, repo, "git/refs/heads", branch, "move", o, true, cb,
	                   ud, err);
}

uint64_t gh_ref_delete(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                       gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (branch && (strcmp(branch, "main") == 0 || strcmp(branch, "master") == 0))
		return refuse(err, "the branch %s is not deleted by the agent", branch);
	return branch_call(c, "DELETE", owner, repo, "git/refs/heads", branch, "delete", NULL, true,
	                   cb, ud, err);
}

uint64_t gh_contents_get(struct gh_client *c, const char *owner, const char *repo,
                         const char *path_in, const char *ref, gh_done_fn cb, void *ud,
                         struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0)
		return 0;
	const char *p = path_in ? path_in : "";
	while (*p == '/')
		p++;
	size_t pl = strlen(p);
	bool dots = strcmp(p, "..") == 0 || strncmp(p, "../", 3) == 0 || strstr(p, "/../") ||
	            (pl >= 3 && strcmp(p + pl - 3, "/..") == 0);
	if (pl > GH_PATH_MAX || dots || strpbrk(p, "\r\n"))
		return refuse(err, "'%.80s' is not a path inside a repository", p);
	if (ref && !*ref)
		ref = NULL;
	char what[GH_PATH_MAX + 200];
	snprintf(what, sizeof what, "read %s in %s/%s", *p ? p : "the root", owner, repo);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	if (sb_printf(&path, "/repos/%s/%s/contents/", owner, repo) != 0 ||
	    add_segments(&path, p) != 0 || add_param(&path, "ref", ref) != 0)
		return too_long(&path, what, err);
	struct gh_req req = {.method = "GET", .what = what};
	return call_with(c, &req, &path, cb, ud, err);
}

uint64_t gh_commits_list(struct gh_client *c, const char *owner, const char *repo, const char *sha,
                         size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err)
{
	if (check_repo(owner, repo, err) != 0)
		return 0;
	if (sha && !valid_sha(sha) && !gh_valid_branch(sha))
		return refuse(err, "'%.80s' is neither a branch nor a commit sha", sha);
	char what[256];
	snprintf(what, sizeof what, "list the commits of %s/%s", owner, repo);
	struct strbuf path;
	sb_init(&path, QUERY_MAX);
	sb_printf(&path, "/repos/%s/%s/commits", owner, repo);
	const char *const kv[][2] = {{"sha", sha}};
	return get_list(c, &path, what, kv, 1, max_items, cb, ud, err);
}
