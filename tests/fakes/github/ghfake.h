/*
 * ghfake — a stateful GitHub REST v3 server for tests, on httpfake
 * (127.0.0.1, ephemeral port). ghfake_base_url() is ready for
 * GITHUB_API_URL.
 *
 * State: repositories, issues (and their comments and reactions),
 * notification threads. Endpoints (what adapters/github uses, spec
 * github-commitments §1.4):
 *   GET    /user
 *   GET    /repos/{o}/{r}
 *   GET    /repos/{o}/{r}/issues            state, labels, sort, direction, since, per_page, page
 *   POST   /repos/{o}/{r}/issues            {title, body, labels, assignees} → 201
 *   GET    /repos/{o}/{r}/issues/{n}
 *   PATCH  /repos/{o}/{r}/issues/{n}        {title, body, state, labels}
 *   GET    /repos/{o}/{r}/issues/{n}/comments   per_page, page
 *   POST   /repos/{o}/{r}/issues/{n}/comments   {body} → 201
 *   DELETE /repos/{o}/{r}/issues/comments/{id}  → 204
 *   POST   /repos/{o}/{r}/issues/{n}/reactions, …/issues/comments/{id}/reactions
 *                                           {content} → 201 new, 200 existing
 *   GET    /notifications                   all, since, per_page (default 50), page
 *   PATCH  /notifications/threads/{id}      → 205
 *   GET    /search/issues                   q, per_page, page → {total_count, incomplete_results,
 * items} Lists are paginated as GitHub does (per_page default 30, at most 100; Link header with
 * rel="next", "last", "first", "prev"). Owner and repository names compare case-insensitively.
 * Errors carry GitHub's bodies: 401 "Bad credentials", 403 "Resource not accessible by personal
 * access token" (a read-only repository), 404 "Not Found", 410 "Issues are disabled for this repo",
 * 422 "Validation Failed" with errors[].
 *
 * Search: q holds terms (a "quoted phrase" is one term) and qualifiers
 * repo:o/r, is:issue|pr|open|closed, state:, author:, in:title,body,comments;
 * an issue matches when every term is a case-insensitive SUBSTRING of the
 * fields searched (title, body and comments unless in: says otherwise). Real
 * GitHub matches words, not substrings: the fake is more lenient.
 *
 * Participants: once tokens are registered, a new issue or comment (through
 * the API or ghfake_add_issue / ghfake_add_comment) gives every other
 * token's login an unread notification thread about the issue, as GitHub
 * does — reason "mention" when the text holds @login, "author" when the
 * login opened the issue, "comment" when it commented — one thread per
 * login and issue, refreshed (unread again, updated_at now) by later
 * activity. A login sees and marks read only its own threads and the
 * ones ghfake_add_notification made for everyone.
 *
 * Rate limits: every answer carries x-ratelimit-limit, -remaining, -used,
 * -reset (epoch seconds) and -resource ("core", or "search" under
 * /search/). ghfake_rate_limit() turns a real budget on for a bucket: once
 * spent, requests get GitHub's primary-limit 403 until the window resets
 * (by the fake's clock). ghfake_secondary_limit() answers the next N
 * requests with the secondary-limit body (403 or 429, with or without
 * retry-after).
 *
 * Faults: ghfake_fail_next() answers the next N requests with a 5xx, as
 * JSON or as an HTML page; ghfake_set_delay() delays every answer.
 * Faults are checked after authentication, in the order: 5xx, secondary,
 * primary.
 *
 * Clock: ghfake_set_clock() (default: the real time) — share the client's
 * injected clock so both sides agree on resets.
 *
 * Record: every request is logged (method, path, status), the last
 * GHFAKE_LOG_MAX kept; httpfake keeps the full requests (ghfake_http()).
 *
 * Threads: answers run on libmicrohttpd's threads; every function here
 * locks, so a test may call them at any time. A bound exceeded by a test's
 * own setup call aborts with a sentence (a bug in the test); exceeded by a
 * request, it is answered 422.
 */
#ifndef GA_TESTS_GHFAKE_H
#define GA_TESTS_GHFAKE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/fakes/httpfake/httpfake.h"

#define GHFAKE_REPOS_MAX     64
#define GHFAKE_ISSUES_MAX    10000 /* per repository */
#define GHFAKE_COMMENTS_MAX  10000 /* per issue */
#define GHFAKE_REACTIONS_MAX 1000  /* per issue */
#define GHFAKE_NOTIFS_MAX    4096
#define GHFAKE_TOKENS_MAX    16
#define GHFAKE_LOG_MAX       4096

/* ghfake_add_repo flags */
#define GHFAKE_REPO_READONLY        1u /* writes answer 403 */
#define GHFAKE_REPO_ISSUES_DISABLED 2u /* issue endpoints answer 410 */

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
/* Waits until n requests were answered (0) or timeout_ms passed (-1). */
int ghfake_wait_requests(struct ghfake *f, uint64_t n, unsigned timeout_ms);

#endif
