/*
 * ghfake — a stateful GitHub REST v3 server for tests, on httpfake
 * (127.0.0.1, ephemeral port), with real git behind it: every repository is
 * a bare git repository in the fake's temporary directory, served over smart
 * HTTP by git's own `git http-backend`, and the REST side (branches, refs,
 * contents, pull requests, merges) reads and writes those repositories.
 * ghfake_base_url() is ready for GITHUB_API_URL; a repository's clone_url is
 * <base>/<owner>/<name>.git on the same port. The endpoints, errors and
 * bounds are listed in README.md next to this file.
 *
 * State: organisations, repositories (with collaborators and their
 * permissions), issues and pull requests (one numbering, as on GitHub; a PR
 * is an issue with a "pull_request" key) with their comments, reactions,
 * labels, assignees and events; reviews and inline review comments;
 * notification threads.
 *
 * Git over HTTP: once tokens are registered, a git request authenticates as
 * GitHub's does — HTTP Basic, any user name, the token as the password;
 * without one, 401 with WWW-Authenticate. A public repository may be fetched
 * anonymously; a private one (GHFAKE_REPO_PRIVATE) may not; a push needs a
 * token whose login may write (403 otherwise). gzip and chunked request
 * bodies work (git http-backend decodes them).
 *
 * Participants: once tokens are registered, a new issue or comment (through
 * the API or ghfake_add_issue / ghfake_add_comment) gives every other
 * token's login an unread notification thread about the issue, as GitHub
 * does — reason "mention" when the text holds @login, "author" when the
 * login opened the issue, "comment" when it commented, "review_requested"
 * when a review is asked of it — one thread per login and issue.
 *
 * Conditional requests: a 200 to a GET carries an ETag (W/"…", a hash of
 * the body and Link header); a request whose If-None-Match names it gets 304
 * with no body, and — as on GitHub — a 304 does not spend the rate budget.
 *
 * Rate limits: every REST answer carries x-ratelimit-limit, -remaining,
 * -used, -reset (epoch seconds) and -resource ("core", or "search" under
 * /search/). ghfake_rate_limit() turns a real budget on for a bucket: once
 * spent, requests get GitHub's primary-limit 403 until the window resets
 * (by the fake's clock). ghfake_secondary_limit() answers the next N
 * requests with the secondary-limit body. Git requests are not rate-limited.
 *
 * Faults: ghfake_fail_next() answers the next N REST requests with a 5xx,
 * as JSON or as an HTML page; ghfake_set_delay() delays every REST answer.
 * Faults are checked after authentication, in the order: 5xx, secondary,
 * primary.
 *
 * Clock: ghfake_set_clock() (default: the real time) — share the client's
 * injected clock so both sides agree on resets; commits the fake makes are
 * dated by it too.
 *
 * Record: every request is logged (method, path, status), the last
 * GHFAKE_LOG_MAX kept; counters per endpoint and in total (ghfake_stats);
 * httpfake keeps the full requests (ghfake_http()).
 *
 * Threads: answers run on libmicrohttpd's threads; every function here
 * locks, so a test may call them at any time. A bound exceeded by a test's
 * own setup call aborts with a sentence (a bug in the test); exceeded by a
 * request, it is answered 422.
 *
 * Without git on the machine the REST side still works; repositories have
 * no content and the git-backed endpoints answer 500. ghfake_git_available()
 * tells a test to skip (exit 77).
 */
#ifndef GA_TESTS_FAKES_GITHUB_GHFAKE_H
#define GA_TESTS_FAKES_GITHUB_GHFAKE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/fakes/httpfake/httpfake.h"

#define GHFAKE_REPOS_MAX      64
#define GHFAKE_ISSUES_MAX     10000 /* per repository */
#define GHFAKE_COMMENTS_MAX   10000 /* per issue */
#define GHFAKE_REACTIONS_MAX  1000  /* per issue */
#define GHFAKE_NOTIFS_MAX     4096
#define GHFAKE_TOKENS_MAX     16
#define GHFAKE_LOG_MAX        4096
#define GHFAKE_ORGS_MAX       16
#define GHFAKE_COLLABS_MAX    16    /* collaborators set explicitly, per repository */
#define GHFAKE_EVENTS_MAX     10000 /* per issue */
#define GHFAKE_REVIEWS_MAX    1000  /* reviews and review comments, per PR */
#define GHFAKE_ENDPOINTS_MAX  128   /* endpoint counters; more share "other" */
#define GHFAKE_GIT_BODY_MAX   ((size_t)64 * 1024 * 1024) /* a push: 413 beyond */
#define GHFAKE_GIT_OUTPUT_MAX ((size_t)64 * 1024 * 1024) /* what one git run may print */
#define GHFAKE_GIT_TIMEOUT_MS 60000                      /* one git run; killed after */
#define GHFAKE_FILE_MAX       ((size_t)1024 * 1024) /* contents API: larger is encoding "none" */

/* ghfake_add_repo flags */
#define GHFAKE_REPO_READONLY        1u /* writes (REST and push) answer 403 */
#define GHFAKE_REPO_ISSUES_DISABLED 2u /* issue endpoints answer 410 */
#define GHFAKE_REPO_PRIVATE         4u /* no anonymous clone */
#define GHFAKE_REPO_TEMPLATE        8u /* is_template: POST …/generate works */

struct ghfake;

/* Starts the fake. NULL with err on failure. */
struct ghfake *ghfake_new(char *err, size_t errlen);
void ghfake_free(struct ghfake *f);
/* "http://127.0.0.1:N" (owned by the fake). */
const char *ghfake_base_url(const struct ghfake *f);
struct httpfake *ghfake_http(struct ghfake *f);

void ghfake_set_clock(struct ghfake *f, int64_t (*now_ms)(void *ud), void *ud);
/* Once a token is added, every request must carry "Authorization: Bearer
 * <a known token>" (else 401); what it creates is authored by login.
 * Without tokens, anything is accepted and the author is "agent". */
void ghfake_add_token(struct ghfake *f, const char *token, const char *login);

/* --- state --------------------------------------------------------------- */

/* A repository (owner and name: letters, digits, '-', '_', '.') with an
 * empty bare repository whose default branch is "main". */
void ghfake_add_repo(struct ghfake *f, const char *owner, const char *name, unsigned flags);
/* Returns the new issue's number. */
int64_t ghfake_add_issue(struct ghfake *f, const char *owner, const char *repo, const char *author,
                         const char *title, const char *body);
/* Returns the new comment's id. */
int64_t ghfake_add_comment(struct ghfake *f, const char *owner, const char *repo, int64_t number,
                           const char *author, const char *body);
/* An unread notification thread about an issue, seen by every token;
 * returns its id. */
int64_t ghfake_add_notification(struct ghfake *f, const char *owner, const char *repo,
                                int64_t number, const char *reason);

/* Issues of the repository, pull requests not counted. */
size_t ghfake_issue_count(struct ghfake *f, const char *owner, const char *repo);
/* Comments not deleted; 0 when the issue does not exist. */
size_t ghfake_comment_count(struct ghfake *f, const char *owner, const char *repo, int64_t number);
/* Copy of the issue as the API renders it (caller frees), or NULL. */
cJSON *ghfake_issue(struct ghfake *f, const char *owner, const char *repo, int64_t number);
/* Issues plus comments (not deleted), anywhere, whose body contains s. */
size_t ghfake_count_body(struct ghfake *f, const char *s);
/* The thread about an issue for login (GitHub keeps one per user and
 * issue): its id, 0 when there is none; *unread (may be NULL) says whether
 * it is unread. */
int64_t ghfake_notification_of(struct ghfake *f, const char *owner, const char *repo,
                               int64_t number, const char *login, bool *unread);
/* -1 unknown thread, 0 read, 1 unread. */
int ghfake_notification_unread(struct ghfake *f, int64_t id);
/* Reactions with that content on the issue (comment_id 0) or a comment. */
size_t ghfake_reaction_count(struct ghfake *f, const char *owner, const char *repo, int64_t number,
                             int64_t comment_id, const char *content);

/* --- organisations, permissions, git ------------------------------------- */

/* An organisation: GET /orgs/{org}/repos answers for it and POST
 * /orgs/{org}/repos creates in it. (An owner that has a repository, or a
 * token's login, is known without this.) */
void ghfake_add_org(struct ghfake *f, const char *org);
/* What login may do on the repository: "none", "read", "triage", "write",
 * "maintain" or "admin". By default every token's login may write, and the
 * owner's login is admin. */
void ghfake_set_permission(struct ghfake *f, const char *owner, const char *repo, const char *login,
                           const char *perm);

/* True when git and git-http-backend run here; otherwise why (may be NULL)
 * says what is missing. */
bool ghfake_git_available(struct ghfake *f, char *why, size_t cap);
/* For a test's main(): true (after printing "<who>: skipped: <why>")
 * when git or git-http-backend is missing here — return 77 then. */
bool ghfake_git_missing(const char *who);
/* "<base>/<owner>/<name>.git" into out. */
void ghfake_clone_url(struct ghfake *f, const char *owner, const char *repo, char *out, size_t cap);
/* The bare repository's directory into out (to inspect it with git). */
void ghfake_git_dir(struct ghfake *f, const char *owner, const char *repo, char *out, size_t cap);

/* A file of a commit: content NULL removes the path; len 0 = strlen;
 * mode 0 = 0100644 (0100755 for an executable). */
struct ghfake_file {
	const char *path;
	const char *content;
	size_t len;
	unsigned mode;
};
/* One commit on branch (created from the default branch's tip when new, or
 * the first commit of an empty repository), authored by author (NULL =
 * the owner), dated by the fake's clock. Writes sha (may be NULL). Aborts
 * when the repository does not exist or git fails (a bug in the test). */
void ghfake_commit(struct ghfake *f, const char *owner, const char *repo, const char *branch,
                   const struct ghfake_file *files, size_t n, const char *message,
                   const char *author, char sha[41]);
/* Commits every regular file under dir (recursively, dot-files included,
 * .git excluded) on branch as one commit. Aborts like ghfake_commit. */
void ghfake_seed_dir(struct ghfake *f, const char *owner, const char *repo, const char *branch,
                     const char *dir, const char *message);
/* The branch's tip into sha: 0, or -1 when it does not exist. */
int ghfake_branch_sha(struct ghfake *f, const char *owner, const char *repo, const char *branch,
                      char sha[41]);
/* The file at path in ref (a branch or a sha), or NULL; *len (may be NULL)
 * gets its size. Caller frees. */
char *ghfake_file_at(struct ghfake *f, const char *owner, const char *repo, const char *ref,
                     const char *path, size_t *len);
/* Pull requests in state "open", "closed", "merged" or NULL (all). */
size_t ghfake_pull_count(struct ghfake *f, const char *owner, const char *repo, const char *state);
/* Copy of the PR as GET /pulls/{n} renders it (caller frees), or NULL. */
cJSON *ghfake_pull(struct ghfake *f, const char *owner, const char *repo, int64_t number);

/* --- limits and faults ------------------------------------------------------ */

/* A budget of `limit` requests per window_ms for bucket resource ("core",
 * "search"), starting full now. limit 0 turns it off (headers then report
 * 5000 and never run out). */
void ghfake_rate_limit(struct ghfake *f, const char *resource, int64_t limit, int64_t window_ms);
/* Sets the bucket's remaining count and reset moment directly (limit on). */
void ghfake_set_remaining(struct ghfake *f, const char *resource, int64_t remaining,
                          int64_t reset_ms);
/* The next n requests get the secondary-limit body with status 403 or 429
 * and, when retry_after_s >= 0, a retry-after header. */
void ghfake_secondary_limit(struct ghfake *f, unsigned n, int status, int retry_after_s);
/* The next n requests get status (5xx) with GitHub's JSON error, or an
 * HTML error page when html. */
void ghfake_fail_next(struct ghfake *f, unsigned n, int status, bool html);
/* Every answer waits ms first (0 = none). */
void ghfake_set_delay(struct ghfake *f, unsigned ms);

/* --- record -------------------------------------------------------------------- */

/* Requests logged with that method (NULL = any), path starting with prefix
 * (NULL = any) and status (0 = any). */
size_t ghfake_count(struct ghfake *f, const char *method, const char *prefix, int status);
/* Requests seen in total. */
uint64_t ghfake_requests(struct ghfake *f);

struct ghfake_stats {
	uint64_t requests;     /* every request, control endpoints excluded */
	uint64_t rest;         /* REST requests */
	uint64_t git;          /* smart-HTTP git requests */
	uint64_t not_modified; /* 304 answers (conditional GETs that cost nothing) */
	uint64_t writes;       /* REST requests other than GET/HEAD answered 2xx */
	uint64_t rate_limited; /* 403/429 rate-limit answers */
};
void ghfake_stats(struct ghfake *f, struct ghfake_stats *out);
/* Requests to one endpoint, named by method and path template with {o},
 * {r}, {n}, {org}, {u}, {b}, {path}, {id}: "GET /repos/{o}/{r}/pulls/{n}",
 * "GIT /{o}/{r}.git/git-upload-pack". *not_modified (may be NULL) gets its
 * 304s. */
uint64_t ghfake_endpoint_count(struct ghfake *f, const char *key, uint64_t *not_modified);
/* Every counter as JSON {requests, rest, git, not_modified, writes,
 * rate_limited, endpoints: {key: {count, not_modified}}} (caller frees);
 * GET /_ghfake/stats answers the same. */
cJSON *ghfake_stats_json(struct ghfake *f);
/* Waits until n requests were answered (0) or timeout_ms passed (-1). */
int ghfake_wait_requests(struct ghfake *f, uint64_t n, unsigned timeout_ms);

#endif
