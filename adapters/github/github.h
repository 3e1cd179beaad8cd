/*
 * github — GitHub REST v3 on the async HTTP adapter, on the one libuv loop.
 *
 * Every request sends "Authorization: Bearer <AGENT_GITHUB_TOKEN>" (when a
 * token is configured), "Accept: application/vnd.github+json",
 * "X-GitHub-Api-Version: 2022-11-28" and a User-Agent naming the program
 * (and the configured GitHub user). The API base is GITHUB_API_URL (default
 * https://api.github.com); nothing else is hard-coded. A Link header is
 * only followed when it points under that base: the token never travels to
 * another host.
 *
 * One request at a time. Calls wait in a FIFO queue (at most
 * GH_MAX_QUEUED; more is an error from the call, never a silent drop) and
 * start one after another when the rate limiter (ratelimit.h) allows:
 * request spacing, a larger spacing between writes, low-budget pacing,
 * primary limits (x-ratelimit-remaining 0 until x-ratelimit-reset) and
 * secondary limits (403/429 with retry-after, or GitHub's secondary-limit
 * body). A request whose bucket is held is passed over by a later request
 * of another bucket (a spent search budget does not stop issue comments).
 * After a reset the client ALWAYS resumes (a bucket past its reset is
 * forgotten, ratelimit.h), and a reset booked more than about an hour ahead
 * is clamped. The clock is injectable
 * (gh_config.clock); waits are re-checked at least every recheck_ms, so a
 * test that moves its clock past a reset sees requests resume.
 *
 * Error classes (enum gh_error_kind), decided by status, headers and the
 * shape of the body; every message is one sentence naming what was
 * attempted ("create an issue in o/r") and what GitHub said:
 *   GH_ERR_AUTH         401: AGENT_GITHUB_TOKEN is missing, invalid or
 *                       expired. Fatal: the daemon tells the owner, exits 69.
 *   GH_ERR_FORBIDDEN    403 that is not a rate limit: the token may not do
 *                       this (scopes, repository access, blocked user).
 *   GH_ERR_NOT_FOUND    404, GH_ERR_GONE 410 (issues disabled, deleted),
 *   GH_ERR_INVALID      422 (GitHub's message and errors[] quoted),
 *   GH_ERR_REFUSED      other 4xx. All per-request; not retried.
 *   GH_ERR_RATE_LIMITED a rate limit outlasted max_wait_ms, or hit the same
 *                       request max_rate_retries times. Per-request; later
 *                       requests still run when the limit resets.
 *   GH_ERR_TRANSIENT    5xx, an HTML page where JSON was expected,
 *                       timeouts, connection failures — retried with
 *                       exponential backoff up to max_retries times, then
 *                       reported. A write (POST) is NOT repeated after it
 *                       may have reached GitHub (anything but a refused
 *                       connection): the result says maybe_applied, and
 *                       the caller reconciles (the intent → done journal).
 *   GH_ERR_MALFORMED    a 2xx answer that is not the JSON expected.
 *   GH_ERR_CANCELLED    gh_client_free or http_client_close while pending.
 *
 * Conditional GETs: the client keeps the ETag of every GET it made (the
 * last GH_ETAG_ENTRIES URLs, GH_ETAG_MAX_BYTES of answers, none not asked
 * for again during the last GH_ETAG_MAX_IDLE / 2 GETs; etag.h) and
 * sends If-None-Match; a 304 — free of rate budget on GitHub — is handed
 * to the callback as the stored 200 it confirms (gh_stats.not_modified
 * counts them). Pages of a list are cached one by one.
 *
 * Lists: endpoints that list ask for pages of max_items when that is fewer
 * than GH_PER_PAGE, follow rel="next" links and merge the pages
 * into one array, stopping at max_items items or max_pages pages
 * (gh_result.truncated says there was more). At most GH_MAX_ITEMS_CAP
 * items and GH_MAX_PAGES_CAP pages whatever the caller asks.
 *
 * Memory: every call copies what it is given. The result handed to a
 * callback (and its json) is borrowed for the duration of the call.
 * Callbacks never run inside a gh_* call; they may start new calls or
 * cancel others, but must not free the client.
 */
#ifndef GA_ADAPTERS_GITHUB_GITHUB_H
#define GA_ADAPTERS_GITHUB_GITHUB_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/github/ghurl.h"
#include "adapters/github/ratelimit.h"
#include "adapters/http/http.h"
#include "common/config.h"
#include "common/err.h"

#define GH_API_VERSION              "2022-11-28"
#define GH_TOKEN_VAR                "AGENT_GITHUB_TOKEN"
#define GH_MAX_QUEUED               128
#define GH_MAX_BODY_BYTES           ((size_t)256 * 1024) /* GitHub takes 65,536 characters */
#define GH_MAX_ITEMS_CAP            1000
#define GH_MAX_PAGES_CAP            20
#define GH_PER_PAGE                 100
#define GH_DEFAULT_MAX_ITEMS        100
#define GH_DEFAULT_MAX_PAGES        10
#define GH_DEFAULT_MAX_RETRIES      3
#define GH_DEFAULT_BACKOFF_BASE_MS  2000u
#define GH_DEFAULT_BACKOFF_CAP_MS   60000u
#define GH_DEFAULT_MAX_RATE_RETRIES 3
#define GH_DEFAULT_MAX_WAIT_MS      ((uint64_t)GH_PRIMARY_WINDOW_MAX_MS)
#define GH_DEFAULT_RECHECK_MS       5000u
#define GH_DEFAULT_TIMEOUT_MS       30000u
#define GH_MSG_QUOTE_MAX            200 /* bytes of GitHub's message quoted */

/* The clock every rate decision uses; epoch ms. NULL now_ms = the real one. */
struct gh_clock {
	int64_t (*now_ms)(void *ud);
	void *ud;
};

struct gh_config {
	char *api_url;  /* without the trailing '/' */
	char *token;    /* NULL: unauthenticated, reads only */
	char *username; /* AGENT_GITHUB_USERNAME, for the User-Agent; may be NULL */
	unsigned spacing_ms;
	unsigned write_spacing_ms;
	int64_t low_budget;
	int max_retries;          /* transient failures retried this many times */
	unsigned backoff_base_ms; /* tests set a few ms */
	unsigned backoff_cap_ms;
	int max_rate_retries; /* rate-limited answers to one request before giving up */
	uint64_t max_wait_ms; /* longest a request waits for a rate limit */
	unsigned recheck_ms;  /* longest timer slice while waiting */
	unsigned timeout_ms;  /* per HTTP request */
	struct gh_clock clock;
};

/* From the configuration: GITHUB_API_URL (default), AGENT_GITHUB_TOKEN,
 * AGENT_GITHUB_USERNAME, GA_GITHUB_SPACING_MS and
 * GA_GITHUB_WRITE_SPACING_MS (tests); defaults for
 * the other tunables. -1 with err when no
 * token is configured. Free with gh_config_free. */
int gh_config_from_ga(const struct ga_config *ga, struct gh_config *cfg, struct ga_err *err);
/* Fills cfg directly (tests, tools). api_url NULL = the default; token and
 * username may be NULL. */
void gh_config_init(struct gh_config *cfg, const char *api_url, const char *token,
                    const char *username);
void gh_config_free(struct gh_config *cfg);

enum gh_error_kind {
	GH_OK = 0,
	GH_ERR_AUTH,
	GH_ERR_FORBIDDEN,
	GH_ERR_NOT_FOUND,
	GH_ERR_GONE,
	GH_ERR_INVALID,
	GH_ERR_REFUSED,
	GH_ERR_RATE_LIMITED,
	GH_ERR_TRANSIENT,
	GH_ERR_MALFORMED,
	GH_ERR_CANCELLED,
};

struct gh_result {
	enum gh_error_kind kind;
	int status;               /* last HTTP status, 0 = none */
	int attempts;             /* HTTP requests made for this call (pages included) */
	bool maybe_applied;       /* a write that failed after it may have reached GitHub */
	const cJSON *json;        /* the answer: an object, or for lists the merged
	                             array (search: the merged "items"); NULL when
	                             there is no body (204, 205) or on error */
	size_t pages;             /* pages fetched (lists) */
	bool truncated;           /* a list stopped at its bound with more to fetch */
	int64_t total_count;      /* search: GitHub's total_count; -1 otherwise */
	char msg[GA_ERR_MSG_MAX]; /* "" on success */
};

typedef void (*gh_done_fn)(void *ud, const struct gh_result *res);

struct gh_client;

/* Copies cfg. The HTTP client must outlive the GitHub client; the token is
 * registered with the log's redaction. */
struct gh_client *gh_client_new(struct http_client *http, const struct gh_config *cfg);
/* Calls back every pending call with GH_ERR_CANCELLED, then frees the
 * client; its timer closes on the loop, so run the loop afterwards. NULL
 * accepted. Never from inside a gh callback. */
void gh_client_free(struct gh_client *c);

/* A request, for endpoints without a helper below (PATCH an issue, ...). */
struct gh_req {
	const char *method;      /* "GET", "POST", "PATCH", "PUT", "DELETE" */
	const char *path;        /* "/repos/o/r/issues?state=open": path and query under the base */
	const char *body;        /* JSON text or NULL */
	const char *what;        /* "create an issue in o/r": for messages; required */
	const char *resource;    /* rate-limit bucket; NULL = "core" */
	bool list;               /* follow Link rel="next" and merge the pages */
	const char *items_field; /* for lists whose pages are objects ("items") */
	size_t max_items;        /* lists: 0 = GH_DEFAULT_MAX_ITEMS */
	size_t max_pages;        /* lists: 0 = GH_DEFAULT_MAX_PAGES */
	bool idempotent;         /* a write that may safely be repeated (PUT, PATCH, DELETE are) */
};

/* Queues a request. Returns its id (> 0), or 0 with err filled (bad
 * arguments, body too large, queue full, a write without a token). */
uint64_t gh_call(struct gh_client *c, const struct gh_req *req, gh_done_fn cb, void *ud,
                 struct ga_err *err);
/* Drops a pending call without calling back. -1 when the id is unknown. */
int gh_cancel(struct gh_client *c, uint64_t id);

/* --- endpoints (spec §1.4). owner and repo are checked (gh_valid_owner,
 * gh_valid_repo) before anything is queued. ------------------------------ */

/* GET /repos/{o}/{r} → the repository object. */
uint64_t gh_repo_get(struct gh_client *c, const char *owner, const char *repo, gh_done_fn cb,
                     void *ud, struct ga_err *err);

struct gh_issue_new {
	const char *title; /* required, non-empty */
	const char *body;  /* may be NULL; never truncated (refused over GH_MAX_BODY_BYTES) */
	const char *const *labels; /* may be NULL */
	size_t n_labels;
	const char *const *assignees; /* may be NULL */
	size_t n_assignees;
};
/* POST /repos/{o}/{r}/issues → the new issue (number, html_url, ...). */
uint64_t gh_issue_create(struct gh_client *c, const char *owner, const char *repo,
                         const struct gh_issue_new *in, gh_done_fn cb, void *ud,
                         struct ga_err *err);
/* GET /repos/{o}/{r}/issues/{n} → the issue. */
uint64_t gh_issue_get(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                      gh_done_fn cb, void *ud, struct ga_err *err);

struct gh_issue_query {
	const char *state;     /* "open" (NULL), "closed", "all" */
	const char *labels;    /* comma-separated; NULL = any */
	const char *sort;      /* "created" (NULL), "updated", "comments" */
	const char *direction; /* "desc" (NULL), "asc" */
	size_t max_items;      /* 0 = GH_DEFAULT_MAX_ITEMS */
};
/* GET /repos/{o}/{r}/issues (paginated) → array of issues (pull requests
 * included, as GitHub lists them: they carry "pull_request"). q may be NULL. */
uint64_t gh_issues_list(struct gh_client *c, const char *owner, const char *repo,
                        const struct gh_issue_query *q, gh_done_fn cb, void *ud,
                        struct ga_err *err);
/* POST /repos/{o}/{r}/issues/{n}/comments {body} → the comment. */
uint64_t gh_issue_comment(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          const char *body, gh_done_fn cb, void *ud, struct ga_err *err);
/* GET /repos/{o}/{r}/issues/{n}/comments (paginated) → array of comments. */
uint64_t gh_comments_list(struct gh_client *c, const char *owner, const char *repo, int64_t number,
                          size_t max_items, gh_done_fn cb, void *ud, struct ga_err *err);
/* POST /repos/{o}/{r}/issues/{n}/reactions {content}, or on a comment when
 * comment_id > 0 (…/issues/comments/{id}/reactions). content is one of
 * +1 -1 laugh confused heart hooray rocket eyes. Repeating it is harmless
 * (GitHub answers 200 with the existing reaction), so it is retried. */
uint64_t gh_reaction_create(struct gh_client *c, const char *owner, const char *repo,
                            int64_t number, int64_t comment_id, const char *content, gh_done_fn cb,
                            void *ud, struct ga_err *err);
/* GET /notifications (paginated, 50 a page) → array of threads. since_ms
 * > 0 adds since=<ISO>; all = also the read ones. */
uint64_t gh_notifications_list(struct gh_client *c, int64_t since_ms, bool all, size_t max_items,
                               gh_done_fn cb, void *ud, struct ga_err *err);
/* PATCH /notifications/threads/{id} → 205, no json. thread_id: digits. */
uint64_t gh_notification_mark_read(struct gh_client *c, const char *thread_id, gh_done_fn cb,
                                   void *ud, struct ga_err *err);
/* GET /search/issues?q=… (paginated, bucket "search") → array of the
 * matching issues; total_count in the result. */
uint64_t gh_search_issues(struct gh_client *c, const char *query, size_t max_items, gh_done_fn cb,
                          void *ud, struct ga_err *err);
/* GET /user → the authenticated user (login): the cheap token check. */
uint64_t gh_user_get(struct gh_client *c, gh_done_fn cb, void *ud, struct ga_err *err);

/* --- state ------------------------------------------------------------------ */

/* What is known about a rate-limit bucket ("core" when NULL). -1 when
 * nothing (no response seen, or its window reset). */
int gh_rate_snapshot(struct gh_client *c, const char *resource, struct gh_bucket *out);

struct gh_stats {
	uint64_t calls;        /* accepted by gh_call */
	uint64_t requests;     /* HTTP requests made (pages and retries included) */
	uint64_t retries;      /* transient retries */
	uint64_t rate_limited; /* answers that were a rate limit */
	uint64_t not_modified; /* 304s answered from the ETag cache (free of rate budget) */
	uint64_t failures;     /* calls that ended in an error */
	char last_error[GA_ERR_MSG_MAX];
};
void gh_client_stats(const struct gh_client *c, struct gh_stats *out);
/* Calls queued plus the one in flight. */
size_t gh_pending(const struct gh_client *c);

/* --- pure helpers (exposed for tests) -------------------------------------- */

/* How a response is classified. status/content_type/body describe it;
 * headers are looked up through hdr(hdr_ud, name). what names the attempt.
 * Fills kind and msg; *rate_primary / *retry_after_ms (-1 none) say what
 * kind of rate limit when kind is GH_ERR_RATE_LIMITED. */
enum gh_error_kind gh_classify(long status, const char *content_type, const char *body,
                               size_t body_len, const char *(*hdr)(void *ud, const char *name),
                               void *hdr_ud, const char *what, bool have_token, int64_t now_ms,
                               bool *rate_primary, int64_t *retry_after_ms, char *msg, size_t cap);

/* Backoff before retry number `retry` (1-based): base · 2^(retry-1) plus
 * jitter_frac (0..1) · 30 %, at least retry_after_ms, at most cap_ms
 * (callq_backoff_ms, the one every client uses). */
uint64_t gh_backoff_ms(unsigned base_ms, unsigned cap_ms, int retry, double jitter_frac,
                       int64_t retry_after_ms);

const char *gh_error_kind_name(enum gh_error_kind k);
/* True for the kinds that stop the GitHub side of the daemon (401). */
bool gh_error_is_fatal(enum gh_error_kind k);

#endif
