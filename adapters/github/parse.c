/*
 * parse — GitHub's JSON for the work loop into plain structs (gh_work.h).
 *
 * Outside input: any field may be missing, null, of the wrong type or too
 * long. Optional fields fall back to their documented defaults; the
 * required ones (and a fixed-size field that would not fit) fail with a
 * sentence naming the field. Nothing is read past a buffer; every string
 * kept is copied.
 */
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"
#include "common/base64.h"
#include "common/json.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

/* Copies obj[field] (a string; absent or null = "") into out. -1 with err
 * when it is not a string or does not fit. */
static int copy(const cJSON *obj, const char *field, char *out, size_t cap, bool required,
                struct ga_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	out[0] = '\0';
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return err_set(err, "GitHub's answer has no '%s'", field);
		return 0;
	}
	if (!cJSON_IsString(v))
		return err_set(err, "GitHub's '%s' is not a string", field);
	size_t n = strlen(v->valuestring);
	if (n >= cap)
		return err_set(err, "GitHub's '%s' is %zu bytes, more than the %zu it can be",
		               field, n, cap - 1);
	if (required && n == 0)
		return err_set(err, "GitHub's '%s' is empty", field);
	memcpy(out, v->valuestring, n + 1);
	return 0;
}

/* A 40-hex sha, or "" when absent; anything else is an error. */
static int copy_sha(const cJSON *obj, const char *field, char out[GH_SHA_LEN + 1],
                    struct ga_err *err)
{
	if (copy(obj, field, out, GH_SHA_LEN + 1, false, err) != 0)
		return -1;
	if (out[0] && (strlen(out) != GH_SHA_LEN || strspn(out, "0123456789abcdef") != GH_SHA_LEN))
		return err_set(err, "GitHub's '%s' is not a commit sha", field);
	return 0;
}

/* obj[field].login (a user object), or "" when absent. */
static int copy_login(const cJSON *obj, const char *field, char out[GH_LOGIN_MAX + 1],
                      bool required, struct ga_err *err)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!cJSON_IsObject(u)) {
		out[0] = '\0';
		return required ? err_set(err, "GitHub's answer has no '%s' user", field) : 0;
	}
	return copy(u, "login", out, GH_LOGIN_MAX + 1, required, err);
}

/* An owned copy of obj[field] ("" when absent, null or not a string). */
static char *dup_str(const cJSON *obj, const char *field)
{
	return xstrdup(json_string_or(obj, field, ""));
}

static int64_t time_of(const cJSON *obj, const char *field)
{
	const char *s = json_string_or(obj, field, NULL);
	int64_t ms = 0;
	if (!s || time_parse_iso(s, &ms) != 0)
		return 0;
	return ms;
}

static int check_object(const cJSON *o, const char *what, struct ga_err *err)
{
	if (!cJSON_IsObject(o))
		return err_set(err, "GitHub's %s is not a JSON object", what);
	return 0;
}

/* Walks an array of objects, parsing each into element i of a new array of
 * `size`-byte elements. one() fills an element; clear() undoes one. */
static int parse_array(const cJSON *arr, const char *what, size_t size, void **out, size_t *n,
                       int (*one)(const cJSON *o, void *el, struct ga_err *err),
                       void (*clear)(void *el), struct ga_err *err)
{
	*out = NULL;
	*n = 0;
	if (!cJSON_IsArray(arr))
		return err_set(err, "GitHub's list of %s is not a JSON array", what);
	size_t cap = (size_t)cJSON_GetArraySize(arr);
	char *v = xcalloc(cap ? cap : 1, size);
	size_t i = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		if (check_object(o, what, err) != 0 || one(o, v + i * size, err) != 0) {
			char msg[GA_ERR_MSG_MAX];
			err_fmt(msg, sizeof msg, "%s (item %zu)", err ? err->msg : "", i + 1);
			err_set(err, "%s", msg);
			for (size_t k = 0; clear && k < i; k++)
				clear(v + k * size);
			if (clear)
				clear(v + i * size);
			free(v);
			return -1;
		}
		i++;
	}
	*out = v;
	*n = i;
	return 0;
}

/* --- repositories, branches ----------------------------------------------------------- */

int gh_repo_parse(const cJSON *o, struct gh_repo_info *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (check_object(o, "repository", err) != 0 ||
	    copy(o, "name", out->name, sizeof out->name, true, err) != 0 ||
	    copy_login(o, "owner", out->owner, true, err) != 0 ||
	    copy(o, "default_branch", out->default_branch, sizeof out->default_branch, false,
	         err) != 0 ||
	    copy(o, "clone_url", out->clone_url, sizeof out->clone_url, false, err) != 0 ||
	    copy(o, "html_url", out->html_url, sizeof out->html_url, false, err) != 0)
		return -1;
	out->is_template = json_bool_or(o, "is_template", false);
	out->private_repo = json_bool_or(o, "private", false);
	out->archived = json_bool_or(o, "archived", false);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "permissions");
	out->can_push = json_bool_or(p, "push", false);
	out->can_admin = json_bool_or(p, "admin", false);
	out->created_ms = time_of(o, "created_at");
	out->updated_ms = time_of(o, "updated_at");
	out->pushed_ms = time_of(o, "pushed_at");
	return 0;
}

int gh_branch_parse(const cJSON *o, struct gh_branch_info *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (check_object(o, "branch", err) != 0)
		return -1;
	const cJSON *ref = cJSON_GetObjectItemCaseSensitive(o, "ref");
	if (cJSON_IsString(ref)) { /* a ref: {ref, object{sha}} */
		const char *r = ref->valuestring;
		if (strncmp(r, "refs/heads/", 11) != 0)
			return err_set(err, "GitHub's ref '%.80s' is not a branch", r);
		if (strlen(r + 11) > GH_REF_MAX || !r[11])
			return err_set(err, "GitHub's ref '%.80s' is not a branch name", r);
		strcpy(out->name, r + 11);
		if (copy_sha(cJSON_GetObjectItemCaseSensitive(o, "object"), "sha", out->sha, err) !=
		    0)
			return -1;
		if (!out->sha[0])
			return err_set(err, "GitHub's ref %s has no object sha", out->name);
		return 0;
	}
	if (copy(o, "name", out->name, sizeof out->name, true, err) != 0 ||
	    copy_sha(cJSON_GetObjectItemCaseSensitive(o, "commit"), "sha", out->sha, err) != 0)
		return -1;
	if (!out->sha[0])
		return err_set(err, "GitHub's branch %s has no commit sha", out->name);
	return 0;
}

/* --- pull requests ------------------------------------------------------------------------ */

int gh_pull_parse(const cJSON *o, struct gh_pull *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	out->commits = out->additions = out->deletions = out->changed_files = -1;
	if (check_object(o, "pull request", err) != 0)
		return -1;
	int64_t number;
	if (json_get_int(o, "number", &number, err) != 0)
		return -1;
	if (number < 1)
		return err_set(err, "GitHub's pull request number %lld is not positive",
		               (long long)number);
	out->number = number;
	char state[16];
	const cJSON *head = cJSON_GetObjectItemCaseSensitive(o, "head");
	const cJSON *base = cJSON_GetObjectItemCaseSensitive(o, "base");
	if (copy(o, "state", state, sizeof state, true, err) != 0)
		return -1;
	if (strcmp(state, "open") != 0 && strcmp(state, "closed") != 0)
		return err_set(err, "GitHub's pull request state '%s' is unknown", state);
	if (!cJSON_IsObject(head) || !cJSON_IsObject(base))
		return err_set(err, "GitHub's pull request has no head or base");
	if (copy(head, "ref", out->head_ref, sizeof out->head_ref, true, err) != 0 ||
	    copy_sha(head, "sha", out->head_sha, err) != 0 ||
	    copy(base, "ref", out->base_ref, sizeof out->base_ref, true, err) != 0 ||
	    copy_sha(base, "sha", out->base_sha, err) != 0 ||
	    copy_login(o, "user", out->user, false, err) != 0 ||
	    copy(o, "html_url", out->html_url, sizeof out->html_url, false, err) != 0 ||
	    copy(o, "mergeable_state", out->mergeable_state, sizeof out->mergeable_state, false,
	         err) != 0 ||
	    copy_sha(o, "merge_commit_sha", out->merge_commit_sha, err) != 0)
		return -1;
	out->open = strcmp(state, "open") == 0;
	out->draft = json_bool_or(o, "draft", false);
	out->merged_ms = time_of(o, "merged_at");
	out->merged = json_bool_or(o, "merged", out->merged_ms != 0);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "mergeable");
	out->mergeable = cJSON_IsTrue(m)    ? GH_MERGEABLE_YES
	                 : cJSON_IsFalse(m) ? GH_MERGEABLE_NO
	                                    : GH_MERGEABLE_UNKNOWN;
	const cJSON *r, *reqs = cJSON_GetObjectItemCaseSensitive(o, "requested_reviewers");
	cJSON_ArrayForEach(r, reqs)
	{
		if (out->n_requested == GH_REVIEWERS_MAX)
			break;
		const char *login = json_string_or(r, "login", "");
		if (*login && strlen(login) <= GH_LOGIN_MAX)
			strcpy(out->requested[out->n_requested++], login);
	}
	out->created_ms = time_of(o, "created_at");
	out->updated_ms = time_of(o, "updated_at");
	out->closed_ms = time_of(o, "closed_at");
	out->commits = json_int_or(o, "commits", -1);
	out->additions = json_int_or(o, "additions", -1);
	out->deletions = json_int_or(o, "deletions", -1);
	out->changed_files = json_int_or(o, "changed_files", -1);
	out->title = dup_str(o, "title");
	out->body = dup_str(o, "body");
	return 0;
}

void gh_pull_clear(struct gh_pull *p)
{
	if (!p)
		return;
	free(p->title);
	free(p->body);
	p->title = p->body = NULL;
}

static void file_clear(void *el)
{
	struct gh_pull_file *f = el;
	free(f->filename);
	free(f->previous_filename);
	free(f->patch);
}

static int file_one(const cJSON *o, void *el, struct ga_err *err)
{
	struct gh_pull_file *f = el;
	const char *name = json_string_or(o, "filename", NULL);
	if (!name || !*name || strlen(name) > GH_PATH_MAX)
		return err_set(err, "GitHub's changed file has no filename");
	if (copy(o, "status", f->status, sizeof f->status, false, err) != 0)
		return -1;
	f->filename = xstrdup(name);
	const char *prev = json_string_or(o, "previous_filename", NULL);
	f->previous_filename = prev ? xstrdup(prev) : NULL;
	const char *patch = json_string_or(o, "patch", NULL);
	f->patch = patch ? xstrdup(patch) : NULL;
	f->additions = json_int_or(o, "additions", 0);
	f->deletions = json_int_or(o, "deletions", 0);
	f->changes = json_int_or(o, "changes", f->additions + f->deletions);
	return 0;
}

int gh_pull_files_parse(const cJSON *arr, struct gh_pull_file **out, size_t *n, struct ga_err *err)
{
	return parse_array(arr, "changed files", sizeof **out, (void **)out, n, file_one,
	                   file_clear, err);
}

void gh_pull_files_free(struct gh_pull_file *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		file_clear(&v[i]);
	free(v);
}

static void review_clear(void *el)
{
	free(((struct gh_review *)el)->body);
}

static int review_one(const cJSON *o, void *el, struct ga_err *err)
{
	struct gh_review *r = el;
	if (json_get_int(o, "id", &r->id, err) != 0 ||
	    copy_login(o, "user", r->user, false, err) != 0 ||
	    copy(o, "state", r->state, sizeof r->state, true, err) != 0 ||
	    copy_sha(o, "commit_id", r->commit_id, err) != 0)
		return -1;
	r->submitted_ms = time_of(o, "submitted_at");
	r->body = dup_str(o, "body");
	return 0;
}

int gh_reviews_parse(const cJSON *arr, struct gh_review **out, size_t *n, struct ga_err *err)
{
	return parse_array(arr, "reviews", sizeof **out, (void **)out, n, review_one, review_clear,
	                   err);
}

void gh_reviews_free(struct gh_review *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		review_clear(&v[i]);
	free(v);
}

static void rcomment_clear(void *el)
{
	struct gh_review_comment_info *c = el;
	free(c->path);
	free(c->body);
}

static int rcomment_one(const cJSON *o, void *el, struct ga_err *err)
{
	struct gh_review_comment_info *c = el;
	if (json_get_int(o, "id", &c->id, err) != 0 ||
	    copy_login(o, "user", c->user, false, err) != 0 ||
	    copy(o, "side", c->side, sizeof c->side, false, err) != 0)
		return -1;
	const char *path = json_string_or(o, "path", NULL);
	if (!path || !*path)
		return err_set(err, "GitHub's review comment has no path");
	c->review_id = json_int_or(o, "pull_request_review_id", 0);
	c->line = json_int_or(o, "line", 0);
	c->path = xstrdup(path);
	c->body = dup_str(o, "body");
	return 0;
}

int gh_review_comments_parse(const cJSON *arr, struct gh_review_comment_info **out, size_t *n,
                             struct ga_err *err)
{
	return parse_array(arr, "review comments", sizeof **out, (void **)out, n, rcomment_one,
	                   rcomment_clear, err);
}

void gh_review_comments_free(struct gh_review_comment_info *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		rcomment_clear(&v[i]);
	free(v);
}

/* --- contents -------------------------------------------------------------------------- */

static int content_type(const char *t, enum gh_content_type *out)
{
	if (strcmp(t, "file") == 0)
		*out = GH_CONTENT_FILE;
	else if (strcmp(t, "dir") == 0)
		*out = GH_CONTENT_DIR;
	else if (strcmp(t, "symlink") == 0)
		*out = GH_CONTENT_SYMLINK;
	else if (strcmp(t, "submodule") == 0)
		*out = GH_CONTENT_SUBMODULE;
	else
		return -1;
	return 0;
}

static void entry_clear(void *el)
{
	struct gh_content_entry *e = el;
	free(e->name);
	free(e->path);
}

static int entry_one(const cJSON *o, void *el, struct ga_err *err)
{
	struct gh_content_entry *e = el;
	const char *name = json_string_or(o, "name", NULL), *path = json_string_or(o, "path", NULL);
	if (!name || !*name || !path || strlen(path) > GH_PATH_MAX)
		return err_set(err, "GitHub's directory entry has no name or path");
	if (content_type(json_string_or(o, "type", ""), &e->type) != 0)
		return err_set(err, "GitHub's directory entry %s has an unknown type", name);
	if (copy_sha(o, "sha", e->sha, err) != 0)
		return -1;
	e->size = json_int_or(o, "size", 0);
	e->name = xstrdup(name);
	e->path = xstrdup(path);
	return 0;
}

int gh_content_parse(const cJSON *v, struct gh_content *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (cJSON_IsArray(v)) {
		out->type = GH_CONTENT_DIR;
		out->path = xstrdup("");
		void *entries;
		if (parse_array(v, "directory entries", sizeof *out->entries, &entries,
		                &out->n_entries, entry_one, entry_clear, err) != 0) {
			gh_content_clear(out);
			return -1;
		}
		out->entries = entries;
		return 0;
	}
	if (check_object(v, "content", err) != 0)
		return -1;
	if (content_type(json_string_or(v, "type", ""), &out->type) != 0)
		return err_set(err, "GitHub's content has no known type");
	const char *path = json_string_or(v, "path", NULL);
	if (!path || strlen(path) > GH_PATH_MAX)
		return err_set(err, "GitHub's content has no path");
	if (copy_sha(v, "sha", out->sha, err) != 0)
		return -1;
	out->size = json_int_or(v, "size", 0);
	out->path = xstrdup(path);
	if (out->type != GH_CONTENT_FILE)
		return 0;
	const char *enc = json_string_or(v, "encoding", "");
	const char *content = json_string_or(v, "content", NULL);
	if (strcmp(enc, "none") == 0 || (content && !*content && out->size > 0)) {
		out->too_large = true;
		return 0;
	}
	if (strcmp(enc, "base64") != 0 || !content) {
		gh_content_clear(out);
		return err_set(err, "GitHub's file %s is not base64 content", path);
	}
	size_t cl = strlen(content);
	out->data = xmalloc(cl / 4 * 3 + 3);
	long n = base64_decode(content, cl, out->data, err);
	if (n < 0) {
		gh_content_clear(out);
		return -1;
	}
	out->len = (size_t)n;
	return 0;
}

void gh_content_clear(struct gh_content *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->data);
	for (size_t i = 0; i < c->n_entries; i++)
		entry_clear(&c->entries[i]);
	free(c->entries);
	memset(c, 0, sizeof *c);
}

/* --- events, collaborators, merge ---------------------------------------------------------- */

static int event_one(const cJSON *o, void *el, struct ga_err *err)
{
	struct gh_issue_event *e = el;
	if (json_get_int(o, "id", &e->id, err) != 0 ||
	    copy(o, "event", e->event, sizeof e->event, true, err) != 0 ||
	    copy_login(o, "actor", e->actor, false, err) != 0 ||
	    copy_sha(o, "commit_id", e->commit_id, err) != 0)
		return -1;
	const char *subject =
	        json_string_or(cJSON_GetObjectItemCaseSensitive(o, "assignee"), "login", NULL);
	if (!subject)
		subject =
		        json_string_or(cJSON_GetObjectItemCaseSensitive(o, "label"), "name", NULL);
	if (!subject)
		subject = json_string_or(cJSON_GetObjectItemCaseSensitive(o, "requested_reviewer"),
		                         "login", NULL);
	if (subject && strlen(subject) <= GH_REF_MAX)
		strcpy(e->subject, subject);
	e->created_ms = time_of(o, "created_at");
	return 0;
}

int gh_issue_events_parse(const cJSON *arr, struct gh_issue_event **out, size_t *n,
                          struct ga_err *err)
{
	return parse_array(arr, "events", sizeof **out, (void **)out, n, event_one, NULL, err);
}

static int collab_one(const cJSON *o, void *el, struct ga_err *err)
{
	struct gh_collaborator *c = el;
	if (copy(o, "login", c->login, sizeof c->login, true, err) != 0)
		return -1;
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "permissions");
	c->push = json_bool_or(p, "push", false);
	c->admin = json_bool_or(p, "admin", false);
	return 0;
}

int gh_collaborators_parse(const cJSON *arr, struct gh_collaborator **out, size_t *n,
                           struct ga_err *err)
{
	return parse_array(arr, "collaborators", sizeof **out, (void **)out, n, collab_one, NULL,
	                   err);
}

int gh_merge_parse(const cJSON *o, struct gh_merge_result *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (check_object(o, "merge answer", err) != 0 ||
	    json_get_bool(o, "merged", &out->merged, err) != 0 ||
	    copy_sha(o, "sha", out->sha, err) != 0)
		return -1;
	if (out->merged && !out->sha[0])
		return err_set(err, "GitHub's merge answer has no sha");
	utf8_copy(out->message, sizeof out->message, json_string_or(o, "message", ""));
	return 0;
}
