/*
 * ghfake_repos — repositories and what git holds in them: the repository
 * object and its lists, creation in an organisation or from a template,
 * collaborators and permissions, branches, refs, contents and commits. Every
 * answer about content is read from the bare repository with git.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "tests/fakes/github/ghfake_int.h"

#define COMMITS_LIST_MAX 1000 /* commits one listing looks at */

static const char *const perm_names[] = {"none", "read", "triage", "write", "maintain", "admin"};

/* --- permissions -------------------------------------------------------------- */

static bool is_token_login(struct ghfake *f, const char *login)
{
	for (size_t i = 0; i < f->n_tokens; i++)
		if (strcasecmp(f->tokens[i].login, login) == 0)
			return true;
	return false;
}

enum gf_perm gf_perm_of(struct ghfake *f, const struct gf_repo *r, const char *login)
{
	if (f->n_tokens == 0)
		return GF_ADMIN;
	enum gf_perm stranger = (r->flags & GHFAKE_REPO_PRIVATE) ? GF_NONE : GF_READ;
	if (!login)
		return stranger;
	for (size_t i = 0; i < r->n_collabs; i++)
		if (strcasecmp(r->collabs[i].login, login) == 0)
			return r->collabs[i].perm;
	if (strcasecmp(r->owner, login) == 0)
		return GF_ADMIN;
	return is_token_login(f, login) ? GF_WRITE : stranger;
}

static bool listed(const char **out, size_t n, const char *login)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(out[i], login) == 0)
			return true;
	return false;
}

size_t gf_collaborators(struct ghfake *f, const struct gf_repo *r, const char **out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_collabs && n < max; i++)
		if (r->collabs[i].perm >= GF_READ && !listed(out, n, r->collabs[i].login))
			out[n++] = r->collabs[i].login;
	for (size_t i = 0; i < f->n_tokens && n < max; i++)
		if (gf_perm_of(f, r, f->tokens[i].login) >= GF_READ &&
		    !listed(out, n, f->tokens[i].login))
			out[n++] = f->tokens[i].login;
	return n;
}

static cJSON *perms_json(struct ghfake *f, const struct gf_repo *r, const char *login)
{
	enum gf_perm p = gf_perm_of(f, r, login);
	bool ro = (r->flags & GHFAKE_REPO_READONLY) != 0;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "admin", !ro && p >= GF_ADMIN);
	cJSON_AddBoolToObject(o, "maintain", !ro && p >= GF_MAINTAIN);
	cJSON_AddBoolToObject(o, "push", !ro && p >= GF_WRITE);
	cJSON_AddBoolToObject(o, "triage", !ro && p >= GF_TRIAGE);
	cJSON_AddBoolToObject(o, "pull", p >= GF_READ);
	return o;
}

/* --- the repository object ---------------------------------------------------- */

bool gf_owner_known(struct ghfake *f, const char *owner)
{
	for (size_t i = 0; i < f->n_orgs; i++)
		if (strcasecmp(f->orgs[i], owner) == 0)
			return true;
	for (size_t i = 0; i < f->n_repos; i++)
		if (strcasecmp(f->repos[i].owner, owner) == 0)
			return true;
	return is_token_login(f, owner);
}

static bool is_org(struct ghfake *f, const char *owner)
{
	for (size_t i = 0; i < f->n_orgs; i++)
		if (strcasecmp(f->orgs[i], owner) == 0)
			return true;
	return false;
}

static cJSON *repo_brief(struct ghfake *f, const struct gf_repo *r)
{
	char buf[512];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)r->id);
	cJSON_AddStringToObject(o, "name", r->name);
	snprintf(buf, sizeof buf, "%s/%s", r->owner, r->name);
	cJSON_AddStringToObject(o, "full_name", buf);
	cJSON *u = gf_user_json(r->owner);
	if (is_org(f, r->owner))
		cJSON_ReplaceItemInObject(u, "type", cJSON_CreateString("Organization"));
	cJSON_AddItemToObject(o, "owner", u);
	cJSON_AddBoolToObject(o, "private", (r->flags & GHFAKE_REPO_PRIVATE) != 0);
	snprintf(buf, sizeof buf, "https://github.com/%s/%s", r->owner, r->name);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s", httpfake_base_url(f->http), r->owner, r->name);
	cJSON_AddStringToObject(o, "url", buf);
	snprintf(buf, sizeof buf, "%s/%s/%s.git", httpfake_base_url(f->http), r->owner, r->name);
	cJSON_AddStringToObject(o, "clone_url", buf);
	return o;
}

cJSON *gf_repo_json(struct ghfake *f, const struct gf_repo *r, const char *login)
{
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = repo_brief(f, r);
	snprintf(buf, sizeof buf, "%s/%s/%s.git", httpfake_base_url(f->http), r->owner, r->name);
	cJSON_AddStringToObject(o, "git_url", buf);
	snprintf(buf, sizeof buf, "git@github.com:%s/%s.git", r->owner, r->name);
	cJSON_AddStringToObject(o, "ssh_url", buf);
	cJSON_AddStringToObject(o, "visibility",
	                        (r->flags & GHFAKE_REPO_PRIVATE) ? "private" : "public");
	if (r->description)
		cJSON_AddStringToObject(o, "description", r->description);
	else
		cJSON_AddNullToObject(o, "description");
	cJSON_AddBoolToObject(o, "fork", false);
	cJSON_AddStringToObject(o, "default_branch", r->default_branch);
	cJSON_AddBoolToObject(o, "is_template", (r->flags & GHFAKE_REPO_TEMPLATE) != 0);
	if (r->has_template)
		cJSON_AddItemToObject(o, "template_repository",
		                      repo_brief(f, &f->repos[r->template_of]));
	cJSON_AddBoolToObject(o, "has_issues", !(r->flags & GHFAKE_REPO_ISSUES_DISABLED));
	cJSON_AddBoolToObject(o, "archived", false);
	cJSON_AddBoolToObject(o, "disabled", false);
	size_t open = 0;
	for (size_t i = 0; i < r->n_issues; i++)
		open += !r->issues[i]->closed;
	cJSON_AddNumberToObject(o, "open_issues_count", (double)open);
	cJSON_AddNumberToObject(o, "open_issues", (double)open);
	cJSON_AddNumberToObject(o, "stargazers_count", 0);
	cJSON_AddNumberToObject(o, "watchers_count", 0);
	cJSON_AddNumberToObject(o, "forks_count", 0);
	cJSON_AddNullToObject(o, "language");
	cJSON_AddStringToObject(o, "created_at", gf_iso(r->created_ms, t));
	cJSON_AddStringToObject(o, "updated_at", gf_iso(r->updated_ms, t));
	if (r->pushed_ms)
		cJSON_AddStringToObject(o, "pushed_at", gf_iso(r->pushed_ms, t));
	else
		cJSON_AddNullToObject(o, "pushed_at");
	cJSON_AddItemToObject(o, "permissions", perms_json(f, r, login));
	return o;
}

struct gf_repo *gf_repo_new(struct ghfake *f, const char *owner, const char *name, unsigned flags)
{
	if (f->n_repos == GHFAKE_REPOS_MAX)
		return NULL;
	struct gf_repo *r = &f->repos[f->n_repos++];
	memset(r, 0, sizeof *r);
	snprintf(r->owner, sizeof r->owner, "%s", owner);
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->default_branch, sizeof r->default_branch, "main");
	r->flags = flags;
	r->id = ++f->next_id;
	r->created_ms = r->updated_ms = gf_now(f);
	if (f->git_ok && gf_git_init(f, r) != 0)
		fprintf(stderr, "ghfake: %s/%s has no git repository\n", owner, name);
	return r;
}

void gf_repo_free(struct gf_repo *r)
{
	for (size_t j = 0; j < r->n_issues; j++)
		gf_issue_free(r->issues[j]);
	free(r->issues);
	free(r->description);
}

/* --- lists and creation ---------------------------------------------------------- */

static const char *g_sort; /* handlers run one at a time (httpfake) */
static bool g_asc;

static int cmp_repo(const void *a, const void *b)
{
	const struct gf_repo *x = *(struct gf_repo *const *)a, *y = *(struct gf_repo *const *)b;
	int c;
	if (strcmp(g_sort, "full_name") == 0) {
		c = strcasecmp(x->name, y->name);
	} else {
		int64_t kx = strcmp(g_sort, "updated") == 0  ? x->updated_ms
		             : strcmp(g_sort, "pushed") == 0 ? x->pushed_ms
		                                             : x->created_ms;
		int64_t ky = strcmp(g_sort, "updated") == 0  ? y->updated_ms
		             : strcmp(g_sort, "pushed") == 0 ? y->pushed_ms
		                                             : y->created_ms;
		c = kx < ky ? -1 : kx > ky ? 1 : x->id < y->id ? -1 : x->id > y->id;
	}
	return g_asc ? c : -c;
}

static void list_repos(struct ghfake *f, const char *login, const char *owner, bool mine,
                       const char *def_sort, const struct httpfake_request *req,
                       struct httpfake_response *resp)
{
	const char *sort = gf_param(req, "sort");
	const char *dir = gf_param(req, "direction");
	const char *type = gf_param(req, "type");
	g_sort = sort && (strcmp(sort, "full_name") == 0 || strcmp(sort, "updated") == 0 ||
	                  strcmp(sort, "pushed") == 0 || strcmp(sort, "created") == 0)
	                 ? sort
	                 : def_sort;
	g_asc = dir ? strcmp(dir, "asc") == 0 : strcmp(g_sort, "full_name") == 0;
	struct gf_repo *v[GHFAKE_REPOS_MAX];
	size_t n = 0;
	for (size_t i = 0; i < f->n_repos; i++) {
		struct gf_repo *r = &f->repos[i];
		bool want =
		        mine ? gf_perm_of(f, r, login) >= GF_WRITE || !strcasecmp(r->owner, login)
		             : strcasecmp(r->owner, owner) == 0;
		want = want && gf_perm_of(f, r, login) >= GF_READ;
		if (want && type && strcmp(type, "private") == 0)
			want = (r->flags & GHFAKE_REPO_PRIVATE) != 0;
		if (want && type && strcmp(type, "public") == 0)
			want = !(r->flags & GHFAKE_REPO_PRIVATE);
		if (want && type && strcmp(type, "forks") == 0)
			want = false;
		if (want)
			v[n++] = r;
	}
	qsort(v, n, sizeof *v, cmp_repo);
	cJSON *all = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(all, gf_repo_json(f, v[i], login));
	gf_paginate(f, req, resp, all, 30, NULL);
}

static void name_taken(struct httpfake_response *resp)
{
	gf_invalid_custom(resp, "Repository", "name", "name already exists on this account");
}

/* Checks a new repository's owner and name; answers and returns NULL when
 * it cannot be made, else the new repository. */
static struct gf_repo *make_repo(struct ghfake *f, const char *owner, const cJSON *name,
                                 unsigned flags, struct httpfake_response *resp)
{
	if (!cJSON_IsString(name) || !name->valuestring[0]) {
		gf_invalid(resp, "Repository", "name", "missing_field");
		return NULL;
	}
	if (!gf_valid_name(name->valuestring, 100)) {
		gf_invalid(resp, "Repository", "name", "invalid");
		return NULL;
	}
	if (gf_find_repo(f, owner, name->valuestring)) {
		name_taken(resp);
		return NULL;
	}
	struct gf_repo *r = gf_repo_new(f, owner, name->valuestring, flags);
	if (!r)
		gf_error(resp, 422, "ghfake: too many repositories");
	return r;
}

static void create_repo(struct ghfake *f, const char *login, const char *owner,
                        const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	unsigned flags = cJSON_IsTrue(cJSON_GetObjectItem(b, "private")) ? GHFAKE_REPO_PRIVATE : 0;
	if (cJSON_IsTrue(cJSON_GetObjectItem(b, "is_template")))
		flags |= GHFAKE_REPO_TEMPLATE;
	struct gf_repo *r = make_repo(f, owner, cJSON_GetObjectItem(b, "name"), flags, resp);
	if (r) {
		const cJSON *d = cJSON_GetObjectItem(b, "description");
		if (cJSON_IsString(d))
			r->description = gf_dup(d->valuestring);
		if (cJSON_IsTrue(cJSON_GetObjectItem(b, "auto_init")) && r->git) {
			char readme[400], sha[GF_SHA_LEN + 1], err[256];
			snprintf(readme, sizeof readme, "# %s\n%s%s", r->name,
			         r->description ? "\n" : "", r->description ? r->description : "");
			struct ghfake_file file = {.path = "README.md", .content = readme};
			if (gf_commit(f, r, r->default_branch, NULL, &file, 1, "Initial commit",
			              login, sha, err, sizeof err) != 0)
				fprintf(stderr, "ghfake: auto_init of %s/%s: %s\n", r->owner,
				        r->name, err);
		}
		httpfake_response_cjson(resp, 201, gf_repo_json(f, r, login));
	}
	cJSON_Delete(b);
}

/* The template's tree of branch, as the first commit of the same branch in
 * r (GitHub's "generate": no history of the template). */
static int copy_tree(struct ghfake *f, const struct gf_repo *tpl, struct gf_repo *r,
                     const char *branch, const char *login)
{
	char tpl_dir[700], spec[GF_REF_MAX * 2 + 32];
	gf_repo_path(f, tpl, tpl_dir, sizeof tpl_dir);
	snprintf(spec, sizeof spec, "refs/heads/%s:refs/ghfake/template", branch);
	const char *fetch[] = {"git", "fetch", "--quiet", "--no-tags", tpl_dir, spec, NULL};
	char tree[GF_SHA_LEN + 8] = "", sha[GF_SHA_LEN + 1];
	const char *rev[] = {"git", "rev-parse", "refs/ghfake/template^{tree}", NULL};
	if (gf_git_line(f, r, fetch, NULL, 0) != 0 ||
	    gf_git_line(f, r, rev, tree, sizeof tree) != 0)
		return -1;
	int rc = gf_commit_tree(f, r, tree, NULL, 0, "Initial commit", login, sha);
	if (rc == 0)
		rc = gf_update_ref(f, r, branch, sha, NULL);
	gf_update_ref(f, r, "refs/ghfake/template", "", NULL);
	return rc;
}

static void generate(struct ghfake *f, struct gf_repo *tpl, const char *login,
                     const struct httpfake_request *req, struct httpfake_response *resp)
{
	if (!(tpl->flags & GHFAKE_REPO_TEMPLATE)) {
		gf_unprocessable(resp, "Repository is not a template repository");
		return;
	}
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *ow = cJSON_GetObjectItem(b, "owner");
	const char *owner = cJSON_IsString(ow) && ow->valuestring[0] ? ow->valuestring : login;
	if (!owner || !gf_owner_known(f, owner)) {
		gf_invalid(resp, "Repository", "owner", "invalid");
		cJSON_Delete(b);
		return;
	}
	unsigned flags = cJSON_IsTrue(cJSON_GetObjectItem(b, "private")) ? GHFAKE_REPO_PRIVATE : 0;
	size_t tpl_index = (size_t)(tpl - f->repos);
	struct gf_repo *r = make_repo(f, owner, cJSON_GetObjectItem(b, "name"), flags, resp);
	if (!r) {
		cJSON_Delete(b);
		return;
	}
	tpl = &f->repos[tpl_index];
	r->has_template = true;
	r->template_of = tpl_index;
	snprintf(r->default_branch, sizeof r->default_branch, "%s", tpl->default_branch);
	const cJSON *d = cJSON_GetObjectItem(b, "description");
	if (cJSON_IsString(d))
		r->description = gf_dup(d->valuestring);
	bool all = cJSON_IsTrue(cJSON_GetObjectItem(b, "include_all_branches"));
	cJSON_Delete(b);
	if (r->git && tpl->git) {
		/* HEAD of the new repository names the template's default branch. */
		char head[GF_REF_MAX + 16];
		snprintf(head, sizeof head, "refs/heads/%s", r->default_branch);
		const char *sym[] = {"git", "symbolic-ref", "HEAD", head, NULL};
		gf_git_line(f, r, sym, NULL, 0);
		const char *list[] = {"git", "for-each-ref", "--format=%(refname:lstrip=2)",
		                      "refs/heads/", NULL};
		struct gf_out o;
		struct gf_run run = {.argv = list, .repo = tpl};
		gf_git(f, &run, &o);
		for (char *save, *br = strtok_r(o.out, "\n", &save); br;
		     br = strtok_r(NULL, "\n", &save))
			if ((all || strcmp(br, tpl->default_branch) == 0) &&
			    copy_tree(f, tpl, r, br, login) != 0)
				fprintf(stderr, "ghfake: generating %s/%s: branch %s not copied\n",
				        r->owner, r->name, br);
		gf_out_free(&o);
		r->pushed_ms = gf_now(f);
	}
	httpfake_response_cjson(resp, 201, gf_repo_json(f, r, login));
}

bool gf_route_repo_lists(struct ghfake *f, const char *login, const struct httpfake_request *req,
                         struct httpfake_response *resp)
{
	const char *p = req->path, *m = req->method;
	char who[64];
	bool org = strncmp(p, "/orgs/", 6) == 0, user = strncmp(p, "/users/", 7) == 0;
	if (strcmp(p, "/user/repos") == 0) {
		if (strcmp(m, "GET") == 0)
			list_repos(f, login, NULL, true, "full_name", req, resp);
		else if (strcmp(m, "POST") == 0)
			create_repo(f, login, login, req, resp);
		else
			gf_error(resp, 404, "Not Found");
		return true;
	}
	if (!org && !user)
		return false;
	const char *s = p + (org ? 6 : 7), *slash = strchr(s, '/');
	if (!slash || strcmp(slash, "/repos") != 0 || (size_t)(slash - s) >= sizeof who)
		return false;
	memcpy(who, s, (size_t)(slash - s));
	who[slash - s] = '\0';
	if (!gf_owner_known(f, who) || (org && !is_org(f, who) && is_token_login(f, who))) {
		gf_error(resp, 404, "Not Found");
	} else if (strcmp(m, "GET") == 0) {
		list_repos(f, login, who, false, org ? "created" : "full_name", req, resp);
	} else if (org && strcmp(m, "POST") == 0) {
		create_repo(f, login, who, req, resp);
	} else {
		gf_error(resp, 404, "Not Found");
	}
	return true;
}

/* --- collaborators --------------------------------------------------------------- */

static void collaborators(struct ghfake *f, struct gf_repo *r, const char *login,
                          const struct httpfake_request *req, struct httpfake_response *resp)
{
	if (gf_perm_of(f, r, login) < GF_WRITE) {
		gf_error(resp, 403, "Must have push access to view repository collaborators.");
		return;
	}
	const char *v[GHFAKE_COLLABS_MAX + GHFAKE_TOKENS_MAX];
	size_t n = gf_collaborators(f, r, v, sizeof v / sizeof v[0]);
	cJSON *all = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *u = gf_user_json(v[i]);
		cJSON_AddItemToObject(u, "permissions", perms_json(f, r, v[i]));
		cJSON_AddStringToObject(u, "role_name", perm_names[gf_perm_of(f, r, v[i])]);
		cJSON_AddItemToArray(all, u);
	}
	gf_paginate(f, req, resp, all, 30, NULL);
}

/* --- branches, refs, commits --------------------------------------------------------- */

/* The commit as GitHub nests it: {sha, commit{message, author, committer,
 * tree}, parents[], html_url, url}. NULL when sha is not a commit. */
static cJSON *commit_json(struct ghfake *f, const struct gf_repo *r, const char *sha)
{
	const char *argv[] = {
	        "git",
	        "log",
	        "-1",
	        "-z",
	        "--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B",
	        sha,
	        "--",
	        NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv, .repo = r};
	if (gf_git(f, &run, &o) != 0 || o.out_len == 0) {
		gf_out_free(&o);
		return NULL;
	}
	const char *fld[10];
	const char *p = o.out, *end = o.out + o.out_len;
	for (int i = 0; i < 10; i++) {
		fld[i] = p < end ? p : "";
		p += strlen(p) + 1;
	}
	char buf[512];
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "sha", fld[0]);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/commits/%s", httpfake_base_url(f->http), r->owner,
	         r->name, fld[0]);
	cJSON_AddStringToObject(c, "url", buf);
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/commit/%s", r->owner, r->name, fld[0]);
	cJSON_AddStringToObject(c, "html_url", buf);
	cJSON *in = cJSON_AddObjectToObject(c, "commit");
	cJSON *a = cJSON_AddObjectToObject(in, "author");
	cJSON_AddStringToObject(a, "name", fld[3]);
	cJSON_AddStringToObject(a, "email", fld[4]);
	cJSON_AddStringToObject(a, "date", fld[5]);
	cJSON *cm = cJSON_AddObjectToObject(in, "committer");
	cJSON_AddStringToObject(cm, "name", fld[6]);
	cJSON_AddStringToObject(cm, "email", fld[7]);
	cJSON_AddStringToObject(cm, "date", fld[8]);
	char *msg = gf_dup(fld[9]);
	size_t ml = strlen(msg);
	while (ml && msg[ml - 1] == '\n')
		msg[--ml] = '\0';
	cJSON_AddStringToObject(in, "message", msg);
	free(msg);
	cJSON *tree = cJSON_AddObjectToObject(in, "tree");
	cJSON_AddStringToObject(tree, "sha", fld[1]);
	cJSON *parents = cJSON_AddArrayToObject(c, "parents");
	char ps[2 * (GF_SHA_LEN + 1) + 8];
	snprintf(ps, sizeof ps, "%s", fld[2]);
	for (char *save, *t = strtok_r(ps, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		cJSON *po = cJSON_CreateObject();
		cJSON_AddStringToObject(po, "sha", t);
		cJSON_AddItemToArray(parents, po);
	}
	gf_out_free(&o);
	return c;
}

struct branch {
	char sha[GF_SHA_LEN + 1];
	char name[GF_REF_MAX];
};

/* Every branch, sorted by name. Caller frees. */
static struct branch *branches(struct ghfake *f, const struct gf_repo *r, size_t *n)
{
	const char *argv[] = {"git",
	                      "for-each-ref",
	                      "--sort=refname",
	                      "--format=%(objectname) %(refname:lstrip=2)",
	                      "refs/heads/",
	                      NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv, .repo = r};
	*n = 0;
	struct branch *v = NULL;
	if (gf_git(f, &run, &o) == 0)
		for (char *save, *l = strtok_r(o.out, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save)) {
			if (strlen(l) < GF_SHA_LEN + 2)
				continue;
			v = gf_grow(v, *n + 1, sizeof *v);
			memcpy(v[*n].sha, l, GF_SHA_LEN);
			v[*n].sha[GF_SHA_LEN] = '\0';
			snprintf(v[*n].name, sizeof v[*n].name, "%s", l + GF_SHA_LEN + 1);
			(*n)++;
		}
	gf_out_free(&o);
	return v;
}

static cJSON *ref_json(struct ghfake *f, const struct gf_repo *r, const char *ref, const char *sha)
{
	char buf[700];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "ref", ref);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/git/%s", httpfake_base_url(f->http), r->owner,
	         r->name, ref);
	cJSON_AddStringToObject(o, "url", buf);
	cJSON *obj = cJSON_AddObjectToObject(o, "object");
	cJSON_AddStringToObject(obj, "sha", sha);
	cJSON_AddStringToObject(obj, "type", "commit");
	return o;
}

bool gf_may(struct ghfake *f, const struct gf_repo *r, const char *login, enum gf_perm need,
            struct httpfake_response *resp)
{
	if ((need > GF_READ && (r->flags & GHFAKE_REPO_READONLY)) ||
	    gf_perm_of(f, r, login) < need) {
		gf_error(resp, 403, "Resource not accessible by personal access token");
		return false;
	}
	return true;
}

static void refs_route(struct ghfake *f, struct gf_repo *r, const char *login, const char *rest,
                       const struct httpfake_request *req, struct httpfake_response *resp)
{
	const char *m = req->method;
	/* rest: "/refs", "/refs/heads/x", "/ref/heads/x", "/matching-refs/heads/x" */
	if (strcmp(rest, "/refs") == 0 && strcmp(m, "POST") == 0) {
		if (!gf_may(f, r, login, GF_WRITE, resp))
			return;
		cJSON *b = gf_parse_body(req, resp);
		if (!b)
			return;
		const cJSON *ref = cJSON_GetObjectItem(b, "ref"),
		            *sha = cJSON_GetObjectItem(b, "sha");
		char want[GF_SHA_LEN + 1];
		if (!cJSON_IsString(ref) || strncmp(ref->valuestring, "refs/", 5) != 0 ||
		    !strchr(ref->valuestring + 5, '/')) {
			gf_unprocessable(resp, "Reference name is not valid");
		} else if (!cJSON_IsString(sha) || gf_rev(f, r, sha->valuestring, want) != 0) {
			gf_unprocessable(resp, "Object does not exist");
		} else if (gf_update_ref(f, r, ref->valuestring, want, "") != 0) {
			gf_unprocessable(resp, "Reference already exists");
		} else {
			r->pushed_ms = r->updated_ms = gf_now(f);
			httpfake_response_cjson(resp, 201, ref_json(f, r, ref->valuestring, want));
		}
		cJSON_Delete(b);
		return;
	}
	bool exact = strncmp(rest, "/ref/", 5) == 0;
	bool matching = strncmp(rest, "/matching-refs/", 15) == 0;
	const char *name = exact ? rest + 5 : matching ? rest + 15 : rest + 6;
	if (!exact && !matching && strncmp(rest, "/refs/", 6) != 0) {
		gf_error(resp, 404, "Not Found");
		return;
	}
	char ref[GF_REF_MAX + 16], sha[GF_SHA_LEN + 1];
	snprintf(ref, sizeof ref, "refs/%s", name);
	bool found = strncmp(name, "heads/", 6) == 0 && gf_rev(f, r, ref, sha) == 0;
	if (strcmp(m, "GET") == 0 && matching) {
		size_t n;
		struct branch *v = branches(f, r, &n);
		cJSON *all = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			char full[GF_REF_MAX + 16];
			snprintf(full, sizeof full, "refs/heads/%s", v[i].name);
			if (strncmp(full, ref, strlen(ref)) == 0)
				cJSON_AddItemToArray(all, ref_json(f, r, full, v[i].sha));
		}
		free(v);
		gf_paginate(f, req, resp, all, 100, NULL);
	} else if (strcmp(m, "GET") == 0) {
		if (found)
			httpfake_response_cjson(resp, 200, ref_json(f, r, ref, sha));
		else
			gf_error(resp, 404, "Not Found");
	} else if (strcmp(m, "DELETE") == 0 && !exact) {
		if (!gf_may(f, r, login, GF_WRITE, resp))
			return;
		if (!found || gf_update_ref(f, r, ref, "", sha) != 0) {
			gf_unprocessable(resp, "Reference does not exist");
			return;
		}
		r->pushed_ms = r->updated_ms = gf_now(f);
		gf_pulls_sync(f, r);
		resp->status = 204;
	} else if (strcmp(m, "PATCH") == 0 && !exact) {
		if (!gf_may(f, r, login, GF_WRITE, resp))
			return;
		cJSON *b = gf_parse_body(req, resp);
		if (!b)
			return;
		const cJSON *to = cJSON_GetObjectItem(b, "sha");
		bool force = cJSON_IsTrue(cJSON_GetObjectItem(b, "force"));
		char want[GF_SHA_LEN + 1];
		const char *anc[] = {"git", "merge-base", "--is-ancestor", sha, want, NULL};
		if (!found) {
			gf_unprocessable(resp, "Reference does not exist");
		} else if (!cJSON_IsString(to) || gf_rev(f, r, to->valuestring, want) != 0) {
			gf_unprocessable(resp, "Object does not exist");
		} else if (!force && gf_git_line(f, r, anc, NULL, 0) != 0) {
			gf_unprocessable(resp, "Update is not a fast forward");
		} else if (gf_update_ref(f, r, ref, want, sha) != 0) {
			gf_error(resp, 409, "Reference update failed");
		} else {
			r->pushed_ms = r->updated_ms = gf_now(f);
			gf_pulls_sync(f, r);
			httpfake_response_cjson(resp, 200, ref_json(f, r, ref, want));
		}
		cJSON_Delete(b);
	} else {
		gf_error(resp, 404, "Not Found");
	}
}

static void branches_route(struct ghfake *f, struct gf_repo *r, const char *rest,
                           const struct httpfake_request *req, struct httpfake_response *resp)
{
	size_t n;
	struct branch *v = branches(f, r, &n);
	if (!*rest) {
		cJSON *all = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			cJSON *b = cJSON_CreateObject();
			cJSON_AddStringToObject(b, "name", v[i].name);
			cJSON *c = cJSON_AddObjectToObject(b, "commit");
			cJSON_AddStringToObject(c, "sha", v[i].sha);
			cJSON_AddBoolToObject(b, "protected", false);
			cJSON_AddItemToArray(all, b);
		}
		gf_paginate(f, req, resp, all, 30, NULL);
	} else {
		const char *name = rest + 1;
		struct branch *hit = NULL;
		for (size_t i = 0; i < n && !hit; i++)
			if (strcmp(v[i].name, name) == 0)
				hit = &v[i];
		cJSON *c = hit ? commit_json(f, r, hit->sha) : NULL;
		if (!c) {
			gf_error(resp, 404, "Branch not found");
		} else {
			cJSON *b = cJSON_CreateObject();
			cJSON_AddStringToObject(b, "name", hit->name);
			cJSON_AddItemToObject(b, "commit", c);
			cJSON_AddBoolToObject(b, "protected", false);
			httpfake_response_cjson(resp, 200, b);
		}
	}
	free(v);
}

static void commits_route(struct ghfake *f, struct gf_repo *r, const char *rest,
                          const struct httpfake_request *req, struct httpfake_response *resp)
{
	char sha[GF_SHA_LEN + 1];
	if (*rest) { /* /commits/{ref} */
		cJSON *c = gf_rev(f, r, rest + 1, sha) == 0 ? commit_json(f, r, sha) : NULL;
		if (c)
			httpfake_response_cjson(resp, 200, c);
		else
			gf_unprocessable(resp, "No commit found for SHA");
		return;
	}
	const char *from = gf_param(req, "sha");
	char dref[GF_REF_MAX + 16];
	snprintf(dref, sizeof dref, "refs/heads/%s", r->default_branch);
	if (gf_rev(f, r, from && *from ? from : dref, sha) != 0) {
		if (from && *from)
			gf_error(resp, 404, "Not Found");
		else
			gf_error(resp, 409, "Git Repository is empty.");
		return;
	}
	char max[16];
	snprintf(max, sizeof max, "-%d", COMMITS_LIST_MAX);
	const char *path = gf_param(req, "path");
	const char *argv[] = {"git", "rev-list", max, sha, "--", path && *path ? path : NULL, NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv, .repo = r};
	cJSON *all = cJSON_CreateArray();
	if (gf_git(f, &run, &o) == 0)
		for (char *save, *l = strtok_r(o.out, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save)) {
			cJSON *c = commit_json(f, r, l);
			if (c)
				cJSON_AddItemToArray(all, c);
		}
	gf_out_free(&o);
	gf_paginate(f, req, resp, all, 30, NULL);
}

/* --- contents ------------------------------------------------------------------------- */

static void content_links(struct ghfake *f, const struct gf_repo *r, cJSON *o, const char *path,
                          const char *ref, const char *sha, bool dir)
{
	char buf[1600];
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/contents/%s?ref=%s", httpfake_base_url(f->http),
	         r->owner, r->name, path, ref);
	cJSON_AddStringToObject(o, "url", buf);
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/%s/%s/%s", r->owner, r->name,
	         dir ? "tree" : "blob", ref, path);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/git/%s/%s", httpfake_base_url(f->http), r->owner,
	         r->name, dir ? "trees" : "blobs", sha);
	cJSON_AddStringToObject(o, "git_url", buf);
	if (dir) {
		cJSON_AddNullToObject(o, "download_url");
	} else {
		snprintf(buf, sizeof buf, "https://raw.githubusercontent.com/%s/%s/%s/%s", r->owner,
		         r->name, ref, path);
		cJSON_AddStringToObject(o, "download_url", buf);
	}
}

static const char *entry_type(const char *mode, const char *type)
{
	if (strcmp(type, "tree") == 0)
		return "dir";
	if (strcmp(type, "commit") == 0)
		return "submodule";
	return strcmp(mode, "120000") == 0 ? "symlink" : "file";
}

static void contents_route(struct ghfake *f, struct gf_repo *r, const char *rest,
                           const struct httpfake_request *req, struct httpfake_response *resp)
{
	const char *path = *rest == '/' ? rest + 1 : rest;
	char clean[1024];
	snprintf(clean, sizeof clean, "%s", path);
	size_t cl = strlen(clean);
	while (cl && clean[cl - 1] == '/')
		clean[--cl] = '\0';
	const char *ref = gf_param(req, "ref");
	if (!ref || !*ref)
		ref = r->default_branch;
	char commit[GF_SHA_LEN + 1], dref[GF_REF_MAX + 16];
	snprintf(dref, sizeof dref, "refs/heads/%s", r->default_branch);
	if (gf_rev(f, r, dref, commit) != 0) {
		gf_error(resp, 404, "This repository is empty.");
		return;
	}
	if (gf_rev(f, r, ref, commit) != 0) {
		char msg[GF_REF_MAX + 40];
		snprintf(msg, sizeof msg, "No commit found for the ref %s", ref);
		gf_error(resp, 404, msg);
		return;
	}
	char spec[1100];
	snprintf(spec, sizeof spec, "%s:%s", commit, clean);
	/* What the path is: ls-tree of its parent names mode, type and object. */
	char mode[16] = "040000", type[16] = "tree", sha[GF_SHA_LEN + 1];
	if (cl) {
		const char *argv[] = {"git", "ls-tree", "-z", commit, "--", clean, NULL};
		struct gf_out o;
		struct gf_run run = {.argv = argv, .repo = r};
		int rc = gf_git(f, &run, &o);
		const char *tab = rc == 0 ? strchr(o.out, '\t') : NULL;
		if (!tab || strcmp(tab + 1, clean) != 0 ||
		    sscanf(o.out, "%15s %15s %40s", mode, type, sha) != 3) {
			gf_out_free(&o);
			gf_error(resp, 404, "Not Found");
			return;
		}
		gf_out_free(&o);
	} else {
		const char *argv[] = {"git", "rev-parse", spec, NULL};
		gf_git_line(f, r, argv, sha, sizeof sha);
	}
	const char *base = strrchr(clean, '/') ? strrchr(clean, '/') + 1 : clean;
	if (strcmp(type, "tree") == 0) {
		const char *argv[] = {"git", "ls-tree", "-z", "-l", spec, NULL};
		struct gf_out o;
		struct gf_run run = {.argv = argv, .repo = r};
		cJSON *arr = cJSON_CreateArray();
		if (gf_git(f, &run, &o) == 0)
			for (const char *e = o.out; e < o.out + o.out_len; e += strlen(e) + 1) {
				char em[16], et[16], es[GF_SHA_LEN + 1], esize[32];
				const char *tab = strchr(e, '\t');
				if (!tab ||
				    sscanf(e, "%15s %15s %40s %31s", em, et, es, esize) != 4)
					continue;
				char full[2048];
				snprintf(full, sizeof full, "%s%s%s", clean, cl ? "/" : "",
				         tab + 1);
				cJSON *x = cJSON_CreateObject();
				cJSON_AddStringToObject(x, "type", entry_type(em, et));
				cJSON_AddStringToObject(x, "name", tab + 1);
				cJSON_AddStringToObject(x, "path", full);
				cJSON_AddStringToObject(x, "sha", es);
				cJSON_AddNumberToObject(x, "size",
				                        strcmp(esize, "-") ? atof(esize) : 0);
				content_links(f, r, x, full, ref, es, strcmp(et, "tree") == 0);
				cJSON_AddItemToArray(arr, x);
			}
		gf_out_free(&o);
		httpfake_response_cjson(resp, 200, arr);
		return;
	}
	cJSON *x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "type", entry_type(mode, type));
	cJSON_AddStringToObject(x, "name", base);
	cJSON_AddStringToObject(x, "path", clean);
	cJSON_AddStringToObject(x, "sha", sha);
	content_links(f, r, x, clean, ref, sha, false);
	if (strcmp(type, "blob") == 0) {
		const char *argv[] = {"git", "cat-file", "blob", sha, NULL};
		struct gf_out o;
		struct gf_run run = {.argv = argv, .repo = r};
		gf_git(f, &run, &o);
		cJSON_AddNumberToObject(x, "size", (double)o.out_len);
		if (strcmp(mode, "120000") == 0) {
			cJSON_AddStringToObject(x, "target", o.out);
		} else if (o.out_len > GHFAKE_FILE_MAX) {
			cJSON_AddStringToObject(x, "encoding", "none");
			cJSON_AddStringToObject(x, "content", "");
		} else {
			/* GitHub wraps the content in lines of 60 characters. */
			char *b = malloc(base64_encoded_len(o.out_len, 60));
			if (!b)
				gf_die("out of memory");
			base64_encode(o.out, o.out_len, 60, b);
			cJSON_AddStringToObject(x, "encoding", "base64");
			cJSON_AddStringToObject(x, "content", b);
			free(b);
		}
		gf_out_free(&o);
	}
	httpfake_response_cjson(resp, 200, x);
}

bool gf_route_repo_git(struct ghfake *f, struct gf_repo *r, const char *login, const char *rest,
                       const struct httpfake_request *req, struct httpfake_response *resp)
{
	bool get = strcmp(req->method, "GET") == 0;
	if (strcmp(rest, "/generate") == 0 && strcmp(req->method, "POST") == 0) {
		generate(f, r, login, req, resp);
	} else if (strcmp(rest, "/collaborators") == 0 && get) {
		collaborators(f, r, login, req, resp);
	} else if (!r->git &&
	           (strncmp(rest, "/branches", 9) == 0 || strncmp(rest, "/git/", 5) == 0 ||
	            strncmp(rest, "/contents", 9) == 0 || strncmp(rest, "/commits", 8) == 0)) {
		gf_error(resp, 500, "ghfake: git is not available on this machine");
	} else if ((strcmp(rest, "/branches") == 0 || strncmp(rest, "/branches/", 10) == 0) &&
	           get) {
		branches_route(f, r, rest + 9, req, resp);
	} else if (strncmp(rest, "/git/", 5) == 0) {
		refs_route(f, r, login, rest + 4, req, resp);
	} else if ((strcmp(rest, "/contents") == 0 || strncmp(rest, "/contents/", 10) == 0) &&
	           get) {
		contents_route(f, r, rest + 9, req, resp);
	} else if ((strcmp(rest, "/commits") == 0 || strncmp(rest, "/commits/", 9) == 0) && get) {
		commits_route(f, r, rest + 8, req, resp);
	} else {
		return false;
	}
	return true;
}

/* --- public ------------------------------------------------------------------------ */

void ghfake_set_permission(struct ghfake *f, const char *owner, const char *repo, const char *login,
                           const char *perm)
{
	pthread_mutex_lock(&f->mu);
	struct gf_repo *r = gf_find_repo(f, owner ? owner : "", repo ? repo : "");
	if (!r || !login || strlen(login) >= 40 || !perm)
		gf_die("ghfake_set_permission: no repository %s/%s, or no login or permission",
		       owner ? owner : "?", repo ? repo : "?");
	int p = -1;
	for (int i = 0; i <= GF_ADMIN; i++)
		if (strcmp(perm, perm_names[i]) == 0)
			p = i;
	if (p < 0)
		gf_die("ghfake_set_permission: '%s' is not none, read, triage, write, maintain or "
		       "admin",
		       perm);
	struct gf_collab *c = NULL;
	for (size_t i = 0; i < r->n_collabs && !c; i++)
		if (strcasecmp(r->collabs[i].login, login) == 0)
			c = &r->collabs[i];
	if (!c) {
		if (r->n_collabs == GHFAKE_COLLABS_MAX)
			gf_die("ghfake_set_permission: more than %d collaborators on %s/%s",
			       GHFAKE_COLLABS_MAX, owner, repo);
		c = &r->collabs[r->n_collabs++];
		snprintf(c->login, sizeof c->login, "%s", login);
	}
	c->perm = (enum gf_perm)p;
	pthread_mutex_unlock(&f->mu);
}
