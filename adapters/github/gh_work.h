/*
 * gh_work — the GitHub calls of the work loop (workspaces, plans, tasks,
 * pull requests, reviews, merges; spec github-commitments §3), on the same
 * client as github.h: one queue, the rate limiter, the error classes, the
 * ETag cache (a poll of something unchanged is a free 304), lists merged
 * across pages. And the parsers that turn GitHub's JSON into plain structs.
 *
 * Calls: every one checks its arguments (owner and repository names,
 * numbers, branch names — gh_valid_branch —, paths, enumerated values)
 * before anything is queued and returns the call's id, or 0 with err. The
 * result comes to cb as for every call (github.h): r->kind GH_OK or an
 * error class, r->status the HTTP status, r->json the answer, borrowed for
 * the callback; r->maybe_applied for a POST whose outcome is unknown. Paths
 * are encoded segment by segment (a branch "feature/x" stays a path), query
 * values are percent-encoded, bodies are built with cJSON and never cut.
 *
 * Statuses worth a caller's attention (GitHub's own):
 *   gh_pull_create   422 GH_ERR_INVALID: the head branch was not pushed
 *                    ("field 'head' of PullRequest is invalid"), "No commits
 *                    between …", "A pull request already exists for o:b."
 *   gh_pull_merge    405 (GH_ERR_REFUSED): not mergeable (a conflict, a
 *                    draft, closed); 409: the head moved since `sha`
 *   gh_review_create 422: the author approving or requesting changes on
 *                    their own PR; an inline comment off the diff
 *   gh_ref_delete    422: the branch is already gone (gh_result_gone)
 *   gh_label_remove  404: the label was not on the issue (gh_result_gone)
 *
 * Parsers: pure, no allocation beyond what they document, tolerant of
 * missing optional fields (defaults below), strict on the fields the work
 * loop cannot do without (named in err). Fixed-size fields are GitHub's own
 * bounds (logins 39, branch names 255, shas 40); a longer value is an
 * error, never silently cut. Free what they allocate with the matching
 * *_clear / *_free (NULL accepted).
 */
#ifndef GA_ADAPTERS_GITHUB_GH_WORK_H
#define GA_ADAPTERS_GITHUB_GH_WORK_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/github/ghurl.h"
#include "adapters/github/github.h"
#include "common/err.h"

#define GH_SHA_LEN       40
#define GH_REF_MAX       255 /* bytes of a branch name */
#define GH_LOGIN_MAX     GH_OWNER_MAX
#define GH_REVIEWERS_MAX 15  /* reviewers GitHub keeps requested on a PR */
#define GH_LABELS_MAX    100 /* labels one call sets */
#define GH_ASSIGNEES_MAX 10  /* GitHub's limit per issue */
#define GH_PATH_MAX      1024
#define GH_COMMENTS_MAX  64   /* inline comments in one review */
#define GH_TITLE_MAX     1024 /* bytes; GitHub allows 256 characters */

/* A branch name git accepts (git check-ref-format) within GH_REF_MAX. */
bool gh_valid_branch(const char *name);
/* The branch is already gone (a DELETE of a ref answered 422), or the
 * label was not there (404): the state the caller wanted is reached. */
bool gh_result_gone(const struct gh_result *r);

/* --- repositories ------------------------------------------------------------- */

struct gh_repo_query {
	const char *type;      /* "all" (NULL), "public", "private", "forks", "sources", "member" */
	const char *sort;      /* "created" (NULL for orgs), "updated", "pushed", "full_name" */
	const char *direction; /* "asc", "desc" (NULL: GitHub's default for the sort) */
	size_t max_items;      /* 0 = GH_DEFAULT_MAX_ITEMS */
};
/* GET /orgs/{org}/repos → array of repositories (paginated). q may be NULL. */
uint64_t gh_org_repos_list(struct gh_client *c, const char *org, const struct gh_repo_query *q,
                           gh_done_fn cb, void *ud, struct ga_err *err);
/* GET /users/{user}/repos → array of repositories (paginated). */
uint64_t gh_user_repos_list(struct gh_client *c, const char *user, const struct gh_repo_query *q,
                            gh_done_fn cb, void *ud, struct ga_err *err);

struct gh_repo_new {
	const char *name; /* required */
	const char *description;
	bool private_repo;
	bool auto_init; /* a first commit with a README */
};
/* POST /orgs/{org}/repos → 201 the repository; 422 when the name exists. */
uint64_t gh_org_repo_create(struct gh_client *c, const char *org, const struct gh_repo_new *in,
                            gh_done_fn cb, void *ud, struct ga_err *err);

struct gh_generate {
	const char *owner; /* where the new repository goes; required */
	const char *name;  /* required */
	const char *description;
	bool private_repo;
	bool include_all_branches;
};
/* POST /repos/{tpl_owner}/{tpl_repo}/generate → 201 the new repository
 * (the template's tree as one commit); 422 when the name exists — the
 * answer to two agents creating one workspace at once. Not retried after
 * it may have reached GitHub (maybe_applied): look the name up. */
uint64_t gh_repo_generate(struct gh_client *c, const char *tpl_owner, const char *tpl_repo,
                          const struct gh_generate *in, gh_done_fn cb, void *ud,
                          struct ga_err *err);
/* GET /repos/{o}/{r}/collaborators → array of users with permissions
 * (paginated; GitHub needs push access to list them). */
uint64_t gh_collaborators_list(struct gh_client *c, const char *owner, const char *repo,
                               size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err);

/* --- git data ----------------------------------------------------------------- */

/* GET /repos/{o}/{r}/branches → array of {name, commit{sha}} (paginated). */
uint64_t gh_branches_list(struct gh_client *c, const char *owner, const char *repo,
                          size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err);
/* GET /repos/{o}/{r}/branches/{branch} → the branch and its commit; 404
 * when it does not exist. */
uint64_t gh_branch_get(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                       gh_done_fn cb, void *ud, struct ga_err *err);
/* GET /repos/{o}/{r}/git/ref/heads/{branch} → {ref, object{sha}}; 404
 * when it does not exist (the remote check of a pushed branch). */
uint64_t gh_ref_get(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                    gh_done_fn cb, void *ud, struct ga_err *err);
/* POST /repos/{o}/{r}/git/refs {ref: refs/heads/{branch}, sha} → 201;
 * 422 when it exists. */
uint64_t gh_ref_create(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                       const char *sha, gh_done_fn cb, void *ud, struct ga_err *err);
/* PATCH /repos/{o}/{r}/git/refs/heads/{branch} {sha, force} → 200; 422
 * when not a fast-forward and not forced (a branch rebuilt from the
 * default branch is forced). */
uint64_t gh_ref_update(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                       const char *sha, bool force, gh_done_fn cb, void *ud, struct ga_err *err);
/* DELETE /repos/{o}/{r}/git/refs/heads/{branch} → 204; 422 when already
 * gone (gh_result_gone). Refuses "main" and "master" locally. */
uint64_t gh_ref_delete(struct gh_client *c, const char *owner, const char *repo, const char *branch,
                       gh_done_fn cb, void *ud, struct ga_err *err);
/* GET /repos/{o}/{r}/contents/{path}?ref= → a file (content in base64) or
 * a directory listing (an array). path "" = the root; ref NULL = the
 * default branch. Parse with gh_content_parse. */
uint64_t gh_contents_get(struct gh_client *c, const char *owner, const char *repo, const char *path,
                         const char *ref, gh_done_fn cb, void *ud, struct ga_err *err);
/* GET /repos/{o}/{r}/commits?sha= → array of commits, newest first
 * (paginated). sha: a branch or a commit; NULL = the default branch. */
uint64_t gh_commits_list(struct gh_client *c, const char *owner, const char *repo, const char *sha,
                         size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err);

/* --- pull requests --------------------------------------------------------------- */

struct gh_pull_new {
	const char *title; /* required */
	const char *body;
	const char *head; /* a branch of this repository ("owner:branch" accepted); required */
	const char *base; /* required */
	bool draft;
	bool no_maintainer_edits; /* maintainer_can_modify false */
};
/* POST /repos/{o}/{r}/pulls → 201 the PR. See the 422s above. */
uint64_t gh_pull_create(struct gh_client *c, const char *owner, const char *repo,
                        const struct gh_pull_new *in, gh_done_fn cb, void *ud, struct ga_err *err);
/* GET /repos/{o}/{r}/pulls/{n} → the PR with mergeable, mergeable_state,
 * merged, commits, additions, deletions, changed_files. */
uint64_t gh_pull_get(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                     gh_done_fn cb, void *ud, struct ga_err *err);

struct gh_pull_query {
	const char *state;     /* "open" (NULL), "closed", "all" */
	const char *head;      /* "owner:branch" — or a bare branch, qualified with owner */
	const char *base;      /* a branch */
	const char *sort;      /* "created" (NULL), "updated", "popularity", "long-running" */
	const char *direction; /* "desc" (NULL), "asc" */
	size_t max_items;      /* 0 = GH_DEFAULT_MAX_ITEMS */
};
/* GET /repos/{o}/{r}/pulls → array of PRs (paginated; list entries carry
 * no mergeable or diff figures: gh_pull_get has them). q may be NULL. */
uint64_t gh_pulls_list(struct gh_client *c, const char *owner, const char *repo,
                       const struct gh_pull_query *q, gh_done_fn cb, void *ud, struct ga_err *err);

struct gh_pull_update {
	const char *title; /* NULL or "" = unchanged (an empty title is never sent) */
	const char *body;  /* NULL = unchanged */
	const char *state; /* NULL, "open", "closed" */
	const char *base;  /* NULL = unchanged */
};
/* PATCH /repos/{o}/{r}/pulls/{n} → the PR. */
uint64_t gh_pull_update(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                        const struct gh_pull_update *in, gh_done_fn cb, void *ud,
                        struct ga_err *err);
/* GET /repos/{o}/{r}/pulls/{n}/files → array of changed files with their
 * patches (paginated; GitHub lists at most 3,000). */
uint64_t gh_pull_files(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                       size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err);
/* GET /repos/{o}/{r}/pulls/{n}/reviews → array of reviews, oldest first. */
uint64_t gh_reviews_list(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                         size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err);

/* An inline comment: on `line` of the file as the PR leaves it (side
 * "RIGHT", the default) or as it was ("LEFT"), or — when line is 0 — at
 * `position` in the file's diff. */
struct gh_review_comment {
	const char *path;
	int64_t line;
	const char *side; /* NULL = "RIGHT" */
	int64_t position;
	const char *body;
};
struct gh_review_new {
	const char *event;     /* "APPROVE", "REQUEST_CHANGES", "COMMENT" */
	const char *body;      /* required for REQUEST_CHANGES, and COMMENT without comments */
	const char *commit_id; /* the head reviewed; NULL = the current head */
	const struct gh_review_comment *comments;
	size_t n_comments; /* at most GH_COMMENTS_MAX */
};
/* POST /repos/{o}/{r}/pulls/{n}/reviews → the review (id, state). Not
 * retried after it may have reached GitHub (maybe_applied): list the
 * reviews to see. */
uint64_t gh_review_create(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          const struct gh_review_new *in, gh_done_fn cb, void *ud,
                          struct ga_err *err);
/* GET /repos/{o}/{r}/pulls/{n}/comments → array of inline review
 * comments. */
uint64_t gh_review_comments_list(struct gh_client *c, const char *owner, const char *repo,
                                 int64_t number, size_t max_items, gh_done_fn cb, void *ud,
                                 struct ga_err *err);
/* POST / DELETE /repos/{o}/{r}/pulls/{n}/requested_reviewers
 * {reviewers} → the PR. 1..GH_REVIEWERS_MAX logins. Requesting is
 * repeatable (retried like an idempotent write). */
uint64_t gh_reviewers_request(struct gh_client *c, const char *owner, const char *repo,
                              int64_t number, const char *const *logins, size_t n, gh_done_fn cb,
                              void *ud, struct ga_err *err);
uint64_t gh_reviewers_remove(struct gh_client *c, const char *owner, const char *repo,
                             int64_t number, const char *const *logins, size_t n, gh_done_fn cb,
                             void *ud, struct ga_err *err);

struct gh_merge {
	const char *method;         /* "squash" (NULL), "merge", "rebase" */
	const char *commit_title;   /* NULL = GitHub's default */
	const char *commit_message; /* NULL = GitHub's default */
	const char *sha;            /* the head this merge was decided on; NULL = any */
};
/* PUT /repos/{o}/{r}/pulls/{n}/merge → {merged, sha, message}; 405 not
 * mergeable, 409 head moved. PUT is idempotent on GitHub (a merged PR
 * answers 405, never merges twice), so it is retried after a transient
 * failure; a 405 after a retry may mean the first attempt merged — read
 * the PR. */
uint64_t gh_pull_merge(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                       const struct gh_merge *in, gh_done_fn cb, void *ud, struct ga_err *err);

/* --- issues: labels, assignees, events, update ----------------------------------- */

/* PUT (set: replaces) / POST (add) /repos/{o}/{r}/issues/{n}/labels
 * {labels} → array of the issue's labels now. 0..GH_LABELS_MAX labels
 * (set with none removes every label). */
uint64_t gh_labels_set(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                       const char *const *labels, size_t n, gh_done_fn cb, void *ud,
                       struct ga_err *err);
uint64_t gh_labels_add(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                       const char *const *labels, size_t n, gh_done_fn cb, void *ud,
                       struct ga_err *err);
/* DELETE /repos/{o}/{r}/issues/{n}/labels/{label} → the labels left; 404
 * when it was not there (gh_result_gone). */
uint64_t gh_label_remove(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                         const char *label, gh_done_fn cb, void *ud, struct ga_err *err);
/* POST / DELETE /repos/{o}/{r}/issues/{n}/assignees {assignees} → the
 * issue. GitHub drops, silently, logins that may not be assigned: read
 * assignees[] in the answer. 1..GH_ASSIGNEES_MAX logins. */
uint64_t gh_assignees_add(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          const char *const *logins, size_t n, gh_done_fn cb, void *ud,
                          struct ga_err *err);
uint64_t gh_assignees_remove(struct gh_client *c, const char *owner, const char *repo,
                             int64_t number, const char *const *logins, size_t n, gh_done_fn cb,
                             void *ud, struct ga_err *err);
/* GET /repos/{o}/{r}/issues/{n}/events → array of events, oldest first
 * (assigned, unassigned, labeled, closed, merged, review_requested, …
 * with created_at: the claim's time as GitHub recorded it). */
uint64_t gh_issue_events(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                         size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err);

struct gh_issue_update {
	const char *title;        /* NULL or "" = unchanged */
	const char *body;         /* NULL = unchanged ("" is sent: an empty body) */
	const char *state;        /* NULL, "open", "closed" */
	const char *state_reason; /* NULL, "completed", "not_planned", "reopened" */
};
/* PATCH /repos/{o}/{r}/issues/{n} → the issue (a plan's body, closing). */
uint64_t gh_issue_update(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                         const struct gh_issue_update *in, gh_done_fn cb, void *ud,
                         struct ga_err *err);

/* --- parsers ------------------------------------------------------------------------ */

struct gh_repo_info {
	char owner[GH_OWNER_MAX + 1];
	char name[GH_REPO_MAX + 1];
	char default_branch[GH_REF_MAX + 1]; /* "" when absent (an empty repository) */
	char clone_url[GH_URL_MAX];
	char html_url[GH_URL_MAX];
	bool is_template, private_repo, archived;
	bool can_push, can_admin;                  /* permissions of the token; false when absent */
	int64_t created_ms, updated_ms, pushed_ms; /* 0 when absent or null */
};
/* Required: name, owner.login. */
int gh_repo_parse(const cJSON *o, struct gh_repo_info *out, struct ga_err *err);

struct gh_branch_info {
	char name[GH_REF_MAX + 1];
	char sha[GH_SHA_LEN + 1];
};
/* A branch ({name, commit{sha}}) or a ref ({ref: "refs/heads/x",
 * object{sha}}). */
int gh_branch_parse(const cJSON *o, struct gh_branch_info *out, struct ga_err *err);

enum gh_mergeable { GH_MERGEABLE_UNKNOWN = 0, GH_MERGEABLE_YES, GH_MERGEABLE_NO };

struct gh_pull {
	int64_t number;
	bool open, draft, merged; /* merged: "merged", or a merged_at in lists */
	char *title;              /* owned; "" when absent */
	char *body;               /* owned; "" when null */
	char user[GH_LOGIN_MAX + 1];
	char head_ref[GH_REF_MAX + 1], head_sha[GH_SHA_LEN + 1];
	char base_ref[GH_REF_MAX + 1], base_sha[GH_SHA_LEN + 1];
	char html_url[GH_URL_MAX];
	enum gh_mergeable mergeable; /* unknown until GitHub computed it (null) */
	char mergeable_state[24];    /* "clean", "dirty", "blocked", "behind", "unstable", "draft",
	                                "unknown"… ; "" when absent (lists) */
	char merge_commit_sha[GH_SHA_LEN + 1];
	char requested[GH_REVIEWERS_MAX][GH_LOGIN_MAX + 1];
	size_t n_requested;
	int64_t created_ms, updated_ms, closed_ms, merged_ms; /* 0 when null */
	int64_t commits, additions, deletions, changed_files; /* -1 when absent (lists) */
};
/* Required: number, state, head.ref, base.ref. */
int gh_pull_parse(const cJSON *o, struct gh_pull *out, struct ga_err *err);
void gh_pull_clear(struct gh_pull *p);

struct gh_pull_file {
	char *filename;
	char *previous_filename; /* NULL unless renamed */
	char status[16];         /* added, removed, modified, renamed, copied, changed, unchanged */
	int64_t additions, deletions, changes;
	char *patch; /* NULL for binary files and patches GitHub leaves out */
};
/* An array of files; items without a filename are an error. */
int gh_pull_files_parse(const cJSON *arr, struct gh_pull_file **out, size_t *n, struct ga_err *err);
void gh_pull_files_free(struct gh_pull_file *v, size_t n);

struct gh_review {
	int64_t id;
	char user[GH_LOGIN_MAX + 1];
	char state[24]; /* APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING */
	char *body;     /* "" when null */
	char commit_id[GH_SHA_LEN + 1];
	int64_t submitted_ms;
};
int gh_reviews_parse(const cJSON *arr, struct gh_review **out, size_t *n, struct ga_err *err);
void gh_reviews_free(struct gh_review *v, size_t n);

struct gh_review_comment_info {
	int64_t id, review_id;
	char user[GH_LOGIN_MAX + 1];
	char *path, *body;
	int64_t line; /* 0 when null (outdated) */
	char side[8];
};
int gh_review_comments_parse(const cJSON *arr, struct gh_review_comment_info **out, size_t *n,
                             struct ga_err *err);
void gh_review_comments_free(struct gh_review_comment_info *v, size_t n);

enum gh_content_type {
	GH_CONTENT_FILE = 0,
	GH_CONTENT_DIR,
	GH_CONTENT_SYMLINK,
	GH_CONTENT_SUBMODULE
};

struct gh_content_entry {
	char *name, *path;
	enum gh_content_type type;
	int64_t size;
	char sha[GH_SHA_LEN + 1];
};
struct gh_content {
	enum gh_content_type type; /* DIR for a listing */
	char *path;                /* the file's path; "" for a listing */
	char sha[GH_SHA_LEN + 1];
	int64_t size;
	unsigned char *data; /* a file's bytes, NUL-terminated; NULL otherwise */
	size_t len;
	bool too_large;                   /* GitHub sent no content (encoding "none", over 1 MB) */
	struct gh_content_entry *entries; /* a listing */
	size_t n_entries;
};
/* A file object (content decoded from base64) or a directory array. */
int gh_content_parse(const cJSON *v, struct gh_content *out, struct ga_err *err);
void gh_content_clear(struct gh_content *c);

struct gh_issue_event {
	int64_t id;
	char event[32];
	char actor[GH_LOGIN_MAX + 1];
	/* who or what it is about: the assignee (assigned/unassigned), the
	 * label (labeled/unlabeled), the requested reviewer; "" otherwise */
	char subject[GH_REF_MAX + 1];
	char commit_id[GH_SHA_LEN + 1];
	int64_t created_ms;
};
int gh_issue_events_parse(const cJSON *arr, struct gh_issue_event **out, size_t *n,
                          struct ga_err *err);

struct gh_collaborator {
	char login[GH_LOGIN_MAX + 1];
	bool push, admin;
};
int gh_collaborators_parse(const cJSON *arr, struct gh_collaborator **out, size_t *n,
                           struct ga_err *err);

struct gh_merge_result {
	bool merged;
	char sha[GH_SHA_LEN + 1];
	char message[256];
};
int gh_merge_parse(const cJSON *o, struct gh_merge_result *out, struct ga_err *err);

#endif
