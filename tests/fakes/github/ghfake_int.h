/*
 * ghfake_int — what the files of the GitHub fake share: the state, the
 * rendering and answering helpers, and the git runner. Internal to
 * tests/fakes/github; tests use ghfake.h.
 *
 * Locking: every route and every helper here runs with f->mu held (the
 * handler takes it; the public functions take it). httpfake serialises
 * handlers as well, so one request at a time touches the state and the
 * bare repositories; a git child process runs while the lock is held.
 *
 * Files: ghfake.c (lifecycle, dispatch, authentication, rate limits,
 * faults, ETags, counters, control endpoints, notifications), ghfake_issues.c
 * (issues, comments, reactions, labels, assignees, events, search),
 * ghfake_git.c (the git runner, bare repositories, commits, smart HTTP),
 * ghfake_repos.c (repositories, templates, collaborators, branches, refs,
 * contents, commits), ghfake_pulls.c (pull requests, reviews, merges).
 */
#ifndef GA_TESTS_FAKES_GITHUB_GHFAKE_INT_H
#define GA_TESTS_FAKES_GITHUB_GHFAKE_INT_H

#include <pthread.h>

#include "common/timeutil.h"
#include "tests/fakes/github/ghfake.h"

#define GF_DOCS    "https://docs.github.com/rest"
#define GF_SHA_LEN 40
#define GF_REF_MAX 256 /* bytes of a branch name, with the NUL */

struct gf_comment {
	int64_t id;
	char *author;
	char *body;
	int64_t created_ms, updated_ms;
	bool deleted;
};

struct gf_reaction {
	int64_t id;
	int64_t comment_id; /* 0 = on the issue */
	char *user;
	char content[16];
};

/* An issue event (GET /issues/{n}/events). subject is what it is about:
 * the assignee, the label, the reviewer or the commit. */
struct gf_event {
	int64_t id;
	char event[24];
	char actor[40];
	char subject[GF_REF_MAX];
	int64_t created_ms;
};

struct gf_review {
	int64_t id;
	char *author;
	char *body;
	char state[24]; /* APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING */
	char commit_id[GF_SHA_LEN + 1];
	int64_t submitted_ms;
};

struct gf_rcomment {
	int64_t id, review_id;
	char *author, *body, *path, *diff_hunk;
	int64_t line, position;
	char side[8];
	char commit_id[GF_SHA_LEN + 1];
	int64_t created_ms;
};

struct gf_pull {
	char head[GF_REF_MAX], base[GF_REF_MAX];
	/* The tips last seen (kept when the branch goes); refs/pull/N/head in
	 * the bare repository keeps the head's commits alive, as on GitHub. */
	char head_sha[GF_SHA_LEN + 1], base_sha[GF_SHA_LEN + 1];
	bool draft, merged, maintainer_can_modify;
	int64_t merged_ms;
	char merged_by[40];
	char merge_sha[GF_SHA_LEN + 1];
	char merge_base[GF_SHA_LEN + 1]; /* at the merge: the files of a merged PR */
	cJSON *requested;                /* array of login strings */
	struct gf_review *reviews;
	size_t n_reviews;
	struct gf_rcomment *rcomments;
	size_t n_rcomments;
};

struct gf_issue {
	int64_t id;
	int64_t number;
	char *title, *body, *author;
	bool closed;
	cJSON *labels; /* array of strings */
	cJSON *assignees;
	int64_t created_ms, updated_ms, closed_ms;
	struct gf_comment *comments;
	size_t n_comments;
	struct gf_reaction *reactions;
	size_t n_reactions;
	struct gf_event *events;
	size_t n_events;
	struct gf_pull *pr; /* NULL for an issue */
};

/* Permission levels, in order (GitHub's role names). */
enum gf_perm { GF_NONE = 0, GF_READ, GF_TRIAGE, GF_WRITE, GF_MAINTAIN, GF_ADMIN };

struct gf_collab {
	char login[40];
	enum gf_perm perm;
};

struct gf_repo {
	char owner[40];
	char name[101];
	unsigned flags;
	int64_t id;
	struct gf_issue **issues;
	size_t n_issues;
	char default_branch[GF_REF_MAX];
	char *description;
	bool has_template; /* generated from repos[template_of] */
	size_t template_of;
	bool git; /* a bare repository exists on disk */
	int64_t created_ms, updated_ms, pushed_ms;
	struct gf_collab collabs[GHFAKE_COLLABS_MAX];
	size_t n_collabs;
};

struct gf_notif {
	int64_t id;
	size_t repo;
	int64_t number;
	char login[40]; /* the recipient; "" = every token sees it */
	char reason[32];
	bool unread;
	int64_t updated_ms;
};

struct gf_bucket {
	int64_t limit; /* 0 = off */
	int64_t remaining;
	int64_t reset_ms;
	int64_t window_ms;
};

struct gf_logline {
	char method[8];
	char path[200];
	int status;
};

struct gf_endpoint {
	char key[96]; /* "GET /repos/{o}/{r}/pulls/{n}" */
	uint64_t count, not_modified;
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
	char orgs[GHFAKE_ORGS_MAX][40];
	size_t n_orgs;
	struct gf_repo repos[GHFAKE_REPOS_MAX];
	size_t n_repos;
	struct gf_notif *notifs;
	size_t n_notifs;
	int64_t next_id;
	struct gf_bucket core, search;
	unsigned secondary_n;
	int secondary_status, secondary_retry;
	unsigned fail_n;
	int fail_status;
	bool fail_html;
	unsigned delay_ms;
	struct gf_logline log[GHFAKE_LOG_MAX];
	uint64_t n_log;
	struct ghfake_stats stats;
	struct gf_endpoint endpoints[GHFAKE_ENDPOINTS_MAX];
	size_t n_endpoints;
	/* git */
	char dir[512]; /* the fake's temporary directory: git/, home/, tmp/ */
	bool git_ok;
	char git_why[256]; /* why git is not available */
	unsigned tmp_seq;
};

/* --- ghfake.c: small helpers ------------------------------------------------ */

void gf_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
char *gf_dup(const char *s);
void *gf_grow(void *p, size_t n, size_t size);
int64_t gf_now(struct ghfake *f);
/* GitHub's "2026-11-23T10:00:00Z" (seconds, no fraction). */
char *gf_iso(int64_t ms, char buf[TIME_ISO_LEN + 1]);
const char *gf_param(const struct httpfake_request *req, const char *name);
/* A positive decimal at s; -1 when s does not start with a digit. */
int64_t gf_num(const char *s, const char **end);
bool gf_valid_name(const char *s, size_t max);
size_t gf_live_comments(const struct gf_issue *is);

/* --- answers --- */

void gf_error(struct httpfake_response *resp, int status, const char *message);
/* 422 Validation Failed naming the field, as GitHub words it. */
void gf_invalid(struct httpfake_response *resp, const char *resource, const char *field,
                const char *code);
/* 422 Validation Failed with one custom error message (PR creation). */
void gf_invalid_custom(struct httpfake_response *resp, const char *resource, const char *field,
                       const char *message);
/* 422 "Unprocessable Entity" with errors[] = [message] (reviews). */
void gf_unprocessable(struct httpfake_response *resp, const char *message);
/* Parses the body as a JSON object, or answers 400 and returns NULL. */
cJSON *gf_parse_body(const struct httpfake_request *req, struct httpfake_response *resp);
/* Answers one page of all (consumed), def_per_page by default; items_field
 * wraps the page as search does. */
void gf_paginate(struct ghfake *f, const struct httpfake_request *req,
                 struct httpfake_response *resp, cJSON *all, long def_per_page,
                 const char *items_field);

/* --- rendering --- */

cJSON *gf_user_json(const char *login);
cJSON *gf_repo_json(struct ghfake *f, const struct gf_repo *r, const char *login);
cJSON *gf_issue_json(struct ghfake *f, const struct gf_repo *r, const struct gf_issue *is);
/* created_at, updated_at and closed_at (null while open) of an issue. */
void gf_add_times(cJSON *o, const struct gf_issue *is);
cJSON *gf_comment_json(struct ghfake *f, const struct gf_repo *r, const struct gf_issue *is,
                       const struct gf_comment *c);

/* --- lookups --- */

struct gf_repo *gf_find_repo(struct ghfake *f, const char *owner, const char *name);
struct gf_issue *gf_find_issue(struct gf_repo *r, int64_t number);
/* The permission login has on r (no tokens registered: admin). */
enum gf_perm gf_perm_of(struct ghfake *f, const struct gf_repo *r, const char *login);
/* Every distinct login that may act on r: token logins and collaborators
 * added explicitly (not those set to none). */
/* True when login may act at `need` on r (and r is not read-only for a
 * write); otherwise answers 403 as GitHub does for a token's missing
 * permission. */
bool gf_may(struct ghfake *f, const struct gf_repo *r, const char *login, enum gf_perm need,
            struct httpfake_response *resp);
size_t gf_collaborators(struct ghfake *f, const struct gf_repo *r, const char **out, size_t max);
/* A new repository, or NULL when the bound is reached (the caller answers
 * or dies). Creates its bare repository when git is available. */
struct gf_repo *gf_repo_new(struct ghfake *f, const char *owner, const char *name, unsigned flags);
bool gf_owner_known(struct ghfake *f, const char *owner);

/* A collection (/issues, /pulls): GET lists it, POST creates in it, any
 * other method is 404. */
typedef void (*gf_route_fn)(struct ghfake *f, struct gf_repo *r, const char *login,
                            const struct httpfake_request *req, struct httpfake_response *resp);
void gf_collection(struct ghfake *f, struct gf_repo *r, const char *login,
                   const struct httpfake_request *req, struct httpfake_response *resp,
                   gf_route_fn list, gf_route_fn create);

/* --- issues (ghfake_issues.c) --- */

struct gf_issue *gf_issue_new(struct ghfake *f, struct gf_repo *r, const char *author,
                              const char *title, const char *body);
struct gf_comment *gf_comment_new(struct ghfake *f, struct gf_issue *is, const char *author,
                                  const char *body);
void gf_event_add(struct ghfake *f, struct gf_issue *is, const char *event, const char *actor,
                  const char *subject);
void gf_notify_participants(struct ghfake *f, struct gf_repo *r, struct gf_issue *is,
                            const char *author, const char *body);
struct gf_notif *gf_notif_upsert(struct ghfake *f, struct gf_repo *r, int64_t number,
                                 const char *login, const char *reason);
void gf_close_issue(struct ghfake *f, struct gf_issue *is, bool closed, const char *actor);
void gf_issue_free(struct gf_issue *is);
/* /repos/{o}/{r}/issues…, rest = the path after "/issues". */
void gf_route_issues(struct ghfake *f, struct gf_repo *r, const char *login, const char *rest,
                     const struct httpfake_request *req, struct httpfake_response *resp);
void gf_search(struct ghfake *f, const struct httpfake_request *req,
               struct httpfake_response *resp);

/* --- git (ghfake_git.c) ------------------------------------------------------ */

struct gf_run {
	const char *const *argv;    /* argv[0] is "git" */
	const char *const *env;     /* extra "K=V", NULL-terminated; may be NULL */
	const struct gf_repo *repo; /* sets GIT_DIR to its bare repository; may be NULL */
	const char *cwd;            /* NULL = the fake's directory */
	const void *in;             /* stdin; NULL = empty */
	size_t in_len;
	size_t out_max; /* 0 = GHFAKE_GIT_OUTPUT_MAX */
};

struct gf_out {
	char *out; /* NUL-terminated; caller frees with gf_out_free */
	size_t out_len;
	char *err;
	size_t err_len;
	int status; /* exit code; -1 when it did not run or was killed */
	bool truncated;
};

/* Runs git and collects its output (bounded, with a timeout). Returns the
 * exit status (0 = success), -1 when it could not run. */
int gf_git(struct ghfake *f, const struct gf_run *run, struct gf_out *out);
void gf_out_free(struct gf_out *o);
/* Convenience: git with argv in r's repository, no input; the trimmed
 * first line of stdout into line (may be NULL). 0 on success. */
int gf_git_line(struct ghfake *f, const struct gf_repo *r, const char *const *argv, char *line,
                size_t cap);
/* The commit a name resolves to ("main", "refs/pull/1/head", a sha) into
 * sha; -1 when it does not exist. */
int gf_rev(struct ghfake *f, const struct gf_repo *r, const char *name, char sha[GF_SHA_LEN + 1]);
bool gf_branch_exists(struct ghfake *f, const struct gf_repo *r, const char *branch);
void gf_repo_path(const struct ghfake *f, const struct gf_repo *r, char *out, size_t cap);
/* Creates the bare repository of r (default branch r->default_branch). */
int gf_git_init(struct ghfake *f, struct gf_repo *r);
/* One commit on branch from its tip (or the first commit, or from `from`
 * when the branch is new); files with content NULL are removed. Dates from
 * the fake's clock. 0 and the sha, or -1 with err. */
int gf_commit(struct ghfake *f, struct gf_repo *r, const char *branch, const char *from,
              const struct ghfake_file *files, size_t n, const char *message, const char *author,
              char sha[GF_SHA_LEN + 1], char *err, size_t errlen);
/* A commit of tree with parents (0..2), the message and author, committed
 * by GitHub. 0 and the sha. */
int gf_commit_tree(struct ghfake *f, const struct gf_repo *r, const char *tree,
                   const char *const *parents, size_t n_parents, const char *message,
                   const char *author, char sha[GF_SHA_LEN + 1]);
/* Moves refs/heads/branch (or any ref when it starts with "refs/") from old
 * (NULL = whatever; "" = must not exist) to sha ("" = delete). */
int gf_update_ref(struct ghfake *f, const struct gf_repo *r, const char *ref, const char *sha,
                  const char *old);
/* Is the path a smart-HTTP git request (/{o}/{r}[.git]/info/refs, …)? */
bool gf_git_path(const char *path);
/* Serves it with git http-backend (authentication as GitHub does it). */
void gf_git_serve(struct ghfake *f, const struct httpfake_request *req,
                  struct httpfake_response *resp);
/* Removes the fake's directory (ghfake_free). */
void gf_git_cleanup(struct ghfake *f);
/* Checks that git and git-http-backend run; fills f->git_ok, f->git_why. */
void gf_git_probe(struct ghfake *f);

/* --- repositories (ghfake_repos.c) --- */

/* /repos/{o}/{r}…, rest = the path after the repository. true when the
 * route was one of these. */
bool gf_route_repo_git(struct ghfake *f, struct gf_repo *r, const char *login, const char *rest,
                       const struct httpfake_request *req, struct httpfake_response *resp);
/* /orgs/{org}/repos, /users/{u}/repos, /user/repos. true when handled. */
bool gf_route_repo_lists(struct ghfake *f, const char *login, const struct httpfake_request *req,
                         struct httpfake_response *resp);
void gf_repo_free(struct gf_repo *r);

/* --- pull requests (ghfake_pulls.c) --- */

/* /repos/{o}/{r}/pulls…, rest = the path after "/pulls". */
void gf_route_pulls(struct ghfake *f, struct gf_repo *r, const char *login, const char *rest,
                    const struct httpfake_request *req, struct httpfake_response *resp);
cJSON *gf_pull_json(struct ghfake *f, struct gf_repo *r, struct gf_issue *is, bool full);
/* Brings open PRs up to date with their branches: head and base tips, and
 * a PR whose head branch is gone is closed (as GitHub does). */
void gf_pulls_sync(struct ghfake *f, struct gf_repo *r);
void gf_pull_free(struct gf_pull *p);

#endif
