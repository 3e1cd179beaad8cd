/*
 * atproto — the Bluesky / AT Protocol client: XRPC over the async HTTP
 * adapter, on the one libuv loop. Spec runtime-bluesky §5 and §11.
 *
 * Service: every call goes to <service>/xrpc/<nsid>, service being
 * BLUESKY_SERVICE (default https://bsky.social). Queries are GET with the
 * parameters in the query string; procedures are POST with a JSON body
 * (Content-Type: application/json). Authenticated calls send
 * "Authorization: Bearer <accessJwt>".
 *
 * Session (§5.3 and its gaps, fixed):
 *   - the session {did, handle, accessJwt, refreshJwt} is persisted
 *     atomically (fsx_write_atomic, mode 0600) in cfg.session_path
 *     (memory/bluesky_session.json) together with the service and the
 *     identifier it belongs to; a file for another service or account is
 *     ignored. So a restart reuses it: no createSession at all.
 *   - tokens (and the password) are registered with the log's redaction
 *     (log_add_secret) and never logged.
 *   - the access token is refreshed (refreshSession with the refreshJwt;
 *     the refresh token rotates, the new pair is persisted at once) when
 *     its JWT "exp" is less than cfg.refresh_margin_ms away — checked before
 *     every authenticated request and by a timer, so an idle agent keeps its
 *     session too;
 *   - reactively: 401, or 400 with error ExpiredToken / InvalidToken (how
 *     bsky.social signals an expired or revoked token), forces a refresh
 *     whatever "exp" says, then the request is retried once;
 *   - createSession only when there is no usable session: none persisted,
 *     or the refresh itself was refused (the refresh token expired or was
 *     revoked). NEVER a login storm: at most one createSession per start,
 *     and after that at most one per ATP_LOGIN_MIN_INTERVAL_MS; a
 *     createSession answered 401 (wrong identifier or app password) stops
 *     all further logins of this client (ATP_ERR_AUTH, fatal: the owner
 *     must fix AGENT_BLUESKY_PASSWORD); a 429 holds the session class until
 *     ratelimit-reset (ratelimit.h).
 *   Requests that need a session wait (queued) while one is being made; if
 *   none can be made they fail with ATP_ERR_AUTH naming why.
 *
 * Rate limits: see ratelimit.h. One request is in flight at a time; the
 * queue is FIFO, except that a request whose class is held is passed over
 * by a later request of another class. After a reset the client ALWAYS
 * resumes. The clock is injectable (cfg.clock); waits are re-checked at
 * least every cfg.recheck_ms, so a test that moves its clock past a reset
 * sees requests resume.
 *
 * Errors (enum atp_error_kind), decided by the status and the XRPC error
 * body {"error": "<Name>", "message": "<text>"}; every message is one
 * sentence naming what was attempted and what the server said:
 *   "Bluesky refused to create a post (400 InvalidRequest: Invalid
 *   app.bsky.feed.post record: Record/text must not be longer than 300
 *   graphemes)".
 *   ATP_ERR_AUTH         createSession refused (bad identifier or app
 *                        password), or no session could be made. Fatal for
 *                        the Bluesky side (atp_error_is_fatal).
 *   ATP_ERR_INVALID      400 InvalidRequest and other 400 errors: the
 *                        request or record was wrong; not retried.
 *   ATP_ERR_NOT_FOUND    400 NotFound / RecordNotFound / ActorNotFound /
 *                        "Unable to resolve handle", 404.
 *   ATP_ERR_FORBIDDEN    403 that is not a rate limit (blocked, takedown).
 *   ATP_ERR_REFUSED      other 4xx.
 *   ATP_ERR_RATE_LIMITED a rate limit outlasted cfg.max_wait_ms, or hit
 *                        the same request cfg.max_rate_retries times.
 *   ATP_ERR_TRANSIENT    5xx, an HTML page where JSON was expected,
 *                        timeouts, connection failures: retried with
 *                        backoff cfg.max_retries times; a procedure that may
 *                        have reached the server (anything but a refused
 *                        connection) is NOT repeated: maybe_applied is set
 *                        and the caller reconciles (port.h).
 *   ATP_ERR_MALFORMED    a 2xx answer that is not the JSON expected.
 *   ATP_ERR_CANCELLED    atp_client_free or http_client_close while pending.
 *
 * Memory: every call copies what it is given. The result handed to a
 * callback (and its json) is borrowed for the duration of the call.
 * Callbacks never run inside an atp_* call; they may start new calls or
 * cancel others, but must not free the client.
 *
 * Bounds: ATP_MAX_QUEUED calls queued; request bodies up to
 * ATP_MAX_BODY_BYTES; answers up to ATP_MAX_ANSWER_BYTES; list limits
 * clamped to 1..100 (the lexicons' range).
 */
#ifndef GA_ADAPTERS_ATPROTO_ATPROTO_H
#define GA_ADAPTERS_ATPROTO_ATPROTO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/atproto/post.h"
#include "adapters/atproto/ratelimit.h"
#include "adapters/http/http.h"
#include "common/config.h"
#include "common/err.h"

#define ATP_USERNAME_VAR              "AGENT_BLUESKY_USERNAME"
#define ATP_PASSWORD_VAR              "AGENT_BLUESKY_PASSWORD"
#define ATP_SERVICE_VAR               "BLUESKY_SERVICE"
#define ATP_SESSION_FILE              "bluesky_session.json"
#define ATP_MAX_QUEUED                128
#define ATP_MAX_BODY_BYTES            ((size_t)64 * 1024)
#define ATP_MAX_ANSWER_BYTES          ((size_t)4 * 1024 * 1024)
#define ATP_LIST_LIMIT_MAX            100
#define ATP_GET_POSTS_MAX             25 /* the lexicon's maxLength of uris */
#define ATP_LOGIN_MIN_INTERVAL_MS     ((int64_t)10 * 60 * 1000)
#define ATP_DEFAULT_REFRESH_MARGIN_MS ((int64_t)5 * 60 * 1000)
#define ATP_DEFAULT_MAX_RETRIES       3
#define ATP_DEFAULT_BACKOFF_BASE_MS   2000u
#define ATP_DEFAULT_BACKOFF_CAP_MS    60000u
#define ATP_DEFAULT_MAX_RATE_RETRIES  3
#define ATP_DEFAULT_MAX_WAIT_MS       ((uint64_t)15 * 60 * 1000)
#define ATP_DEFAULT_RECHECK_MS        5000u
#define ATP_DEFAULT_TIMEOUT_MS        30000u
#define ATP_MSG_QUOTE_MAX             240 /* bytes of the server's message quoted */
#define ATP_XRPC_ERROR_MAX            64

/* The clock every rate and expiry decision uses; epoch ms. NULL now_ms =
 * the real one. */
struct atp_clock {
	int64_t (*now_ms)(void *ud);
	void *ud;
};

struct atp_config {
	char *service;      /* without the trailing '/' */
	char *identifier;   /* handle or email (AGENT_BLUESKY_USERNAME) */
	char *password;     /* an app password (AGENT_BLUESKY_PASSWORD) */
	char *session_path; /* NULL: the session lives in memory only */
	unsigned spacing_ms;
	int64_t low_budget;
	int64_t refresh_margin_ms;
	int max_retries;
	unsigned backoff_base_ms; /* tests set a few ms */
	unsigned backoff_cap_ms;
	int max_rate_retries;
	uint64_t max_wait_ms; /* longest a request waits for a rate limit */
	unsigned recheck_ms;  /* longest timer slice while waiting */
	unsigned timeout_ms;  /* per HTTP request */
	struct atp_clock clock;
};

/* From the configuration: BLUESKY_SERVICE (default), AGENT_BLUESKY_USERNAME,
 * AGENT_BLUESKY_PASSWORD, <memory_dir>/bluesky_session.json; defaults for
 * the tunables. -1 with err naming the missing variable. Free with
 * atp_config_free. */
int atp_config_from_ga(const struct ga_config *ga, struct atp_config *cfg, struct ga_err *err);
/* Fills cfg directly (tests, tools). service NULL = the default; any of the
 * strings may be NULL. */
void atp_config_init(struct atp_config *cfg, const char *service, const char *identifier,
                     const char *password, const char *session_path);
void atp_config_free(struct atp_config *cfg);

enum atp_error_kind {
	ATP_OK = 0,
	ATP_ERR_AUTH,
	ATP_ERR_INVALID,
	ATP_ERR_NOT_FOUND,
	ATP_ERR_FORBIDDEN,
	ATP_ERR_REFUSED,
	ATP_ERR_RATE_LIMITED,
	ATP_ERR_TRANSIENT,
	ATP_ERR_MALFORMED,
	ATP_ERR_CANCELLED,
};

struct atp_result {
	enum atp_error_kind kind;
	int status;         /* last HTTP status, 0 = none */
	int attempts;       /* HTTP requests made for this call */
	bool maybe_applied; /* a procedure that failed after it may have been carried out */
	const cJSON *json;  /* the XRPC output object; NULL on error or an empty body */
	char error[ATP_XRPC_ERROR_MAX]; /* the XRPC error name ("ExpiredToken"), "" none */
	char msg[GA_ERR_MSG_MAX];       /* "" on success */
};

typedef void (*atp_done_fn)(void *ud, const struct atp_result *res);

struct atp_client;

/* Copies cfg and reads the persisted session (if any, and if it belongs to
 * this service and identifier). The HTTP client must outlive this one.
 * Never NULL. */
struct atp_client *atp_client_new(struct http_client *http, const struct atp_config *cfg);
/* Calls back every pending call with ATP_ERR_CANCELLED, then frees the
 * client; its timers close on the loop, so run the loop afterwards. NULL
 * accepted. Never from inside an atp callback. */
void atp_client_free(struct atp_client *c);

/* --- session --------------------------------------------------------------- */

/* Makes sure there is a usable session (see the header: the persisted one,
 * refreshed if near expiry, else one createSession). json = {"did",
 * "handle"}. Calls that need a session do this themselves; call it at start
 * to learn early that the credentials work. */
uint64_t atp_login(struct atp_client *c, atp_done_fn cb, void *ud, struct ga_err *err);

struct atp_session_info {
	bool active;           /* a session is held (it may still need a refresh) */
	char did[ATP_DID_MAX]; /* "" when none */
	char handle[ATP_HANDLE_MAX + 1];
	int64_t access_exp_ms; /* from the access JWT; 0 unknown */
	int64_t refresh_exp_ms;
	bool from_file; /* loaded from session_path at start */
};
void atp_session_get(const struct atp_client *c, struct atp_session_info *out);

/* --- raw XRPC ------------------------------------------------------------------ */

struct atp_req {
	const char *nsid;  /* "app.bsky.feed.getPostThread"; required */
	bool procedure;    /* POST with body; else GET */
	const char *query; /* URL-encoded "a=b&c=d" (atp_query_add builds it), or NULL */
	const char *body;  /* JSON text for procedures, or NULL */
	const char *what;  /* "read the thread of at://…": for messages; required */
	bool no_auth;      /* send no Authorization (resolveHandle works without) */
	bool idempotent;   /* a procedure that may safely be repeated (updateSeen) */
	int points;        /* write points (ATP_WRITE_POINTS_*); 0 for queries */
};

/* Queues a call. Returns its id (> 0), or 0 with err filled (bad arguments,
 * body too large, queue full, client closing, credentials refused). */
uint64_t atp_call(struct atp_client *c, const struct atp_req *req, atp_done_fn cb, void *ud,
                  struct ga_err *err);
/* Drops a pending call without calling back. -1 when the id is unknown. */
int atp_cancel(struct atp_client *c, uint64_t id);

/* Appends "name=<percent-encoded value>" (with '&' when needed) to a
 * query of capacity cap. -1 when it does not fit (q is left unchanged). */
int atp_query_add(char *q, size_t cap, const char *name, const char *value);

/* --- endpoints (§5.2). Outputs are the lexicons' output objects. --------------- */

/* app.bsky.notification.listNotifications?limit&cursor → {notifications[]
 * {uri, cid, author{did, handle, displayName}, reason, reasonSubject,
 * record, isRead, indexedAt}, cursor?, seenAt?}. cursor NULL = newest. */
uint64_t atp_list_notifications(struct atp_client *c, const char *cursor, unsigned limit,
                                atp_done_fn cb, void *ud, struct ga_err *err);
/* app.bsky.notification.updateSeen {seenAt: ISO of seen_at_ms} → no json. */
uint64_t atp_update_seen(struct atp_client *c, int64_t seen_at_ms, atp_done_fn cb, void *ud,
                         struct ga_err *err);
/* app.bsky.feed.getPostThread?uri&depth&parentHeight → {thread: {$type
 * "app.bsky.feed.defs#threadViewPost" | "#notFoundPost" | "#blockedPost",
 * post, parent?, replies?}}. depth / parent_height < 0 = the server's
 * default. */
uint64_t atp_get_post_thread(struct atp_client *c, const char *uri, int depth, int parent_height,
                             atp_done_fn cb, void *ud, struct ga_err *err);
/* app.bsky.feed.getPosts?uris=…&uris=… (1..ATP_GET_POSTS_MAX at:// URIs)
 * → {posts[]{uri, cid, author{did, handle}, record, indexedAt}}: the
 * AppView's view of each post it knows (a deleted or unknown post is left
 * out, in no error). */
uint64_t atp_get_posts(struct atp_client *c, const char *const *uris, size_t n, atp_done_fn cb,
                       void *ud, struct ga_err *err);
/* app.bsky.feed.getAuthorFeed?actor&limit&cursor&filter → {feed[]{post,
 * reply?, reason?}, cursor?}. filter NULL = the server's default
 * ("posts_with_replies"); "posts_no_replies" for identity scans. */
uint64_t atp_get_author_feed(struct atp_client *c, const char *actor, const char *filter,
                             const char *cursor, unsigned limit, atp_done_fn cb, void *ud,
                             struct ga_err *err);
/* app.bsky.actor.getProfile?actor → {did, handle, displayName?, ...}. */
uint64_t atp_get_profile(struct atp_client *c, const char *actor, atp_done_fn cb, void *ud,
                         struct ga_err *err);
/* com.atproto.identity.resolveHandle?handle → {did}. */
uint64_t atp_resolve_handle(struct atp_client *c, const char *handle, atp_done_fn cb, void *ud,
                            struct ga_err *err);
/* com.atproto.repo.getRecord?repo&collection&rkey of an at:// URI →
 * {uri, cid, value}. */
uint64_t atp_get_record(struct atp_client *c, const char *uri, atp_done_fn cb, void *ud,
                        struct ga_err *err);
/* com.atproto.repo.listRecords of the agent's own repo (newest first) →
 * {records[]{uri, cid, value}, cursor?}. */
uint64_t atp_list_records(struct atp_client *c, const char *collection, unsigned limit,
                          const char *cursor, atp_done_fn cb, void *ud, struct ga_err *err);
/* com.atproto.repo.createRecord {repo: own DID, collection, record} →
 * {uri, cid}. record is copied. Not repeated after it may have reached the
 * server (maybe_applied). */
uint64_t atp_create_record(struct atp_client *c, const char *collection, const cJSON *record,
                           atp_done_fn cb, void *ud, struct ga_err *err);
/* com.atproto.repo.deleteRecord {repo: own DID, collection, rkey} → {}.
 * Idempotent (deleting what is gone succeeds), so it is retried. */
uint64_t atp_delete_record(struct atp_client *c, const char *collection, const char *rkey,
                           atp_done_fn cb, void *ud, struct ga_err *err);

/* --- posts, likes, follows ------------------------------------------------------ */

/* Creates a post: checks the text (atp_post_check_text; refused at once,
 * return 0 with err), detects facets, resolves each mentioned handle with
 * resolveHandle (a handle that does not resolve gets no facet; at most
 * ATP_FACETS_MAX), builds the record (atp_post_record; in->facets is
 * ignored, the detected ones are used) and creates it. created_at_ms 0 =
 * now by the client's clock. json = {uri, cid}. */
uint64_t atp_post_create(struct atp_client *c, const struct atp_post_in *in, atp_done_fn cb,
                         void *ud, struct ga_err *err);
/* The reply refs for answering parent (§5.5): getPostThread(parent, depth
 * 0, parentHeight 0); the parent's record.reply.root when it has one, else
 * the parent is the root. When the thread cannot be read (no AppView, a
 * transient failure) the parent record is read with getRecord instead.
 * json = {"root": {uri, cid}, "parent": {uri, cid}} — parse it with
 * atp_reply_ref_from_json. Fails (no guessing "parent = root") when
 * neither read works. */
uint64_t atp_reply_resolve(struct atp_client *c, const struct atp_strong_ref *parent,
                           atp_done_fn cb, void *ud, struct ga_err *err);
/* createRecord app.bsky.feed.like {subject, createdAt, gaKey?}. */
uint64_t atp_like(struct atp_client *c, const struct atp_strong_ref *subject, const char *idem_key,
                  atp_done_fn cb, void *ud, struct ga_err *err);
/* createRecord app.bsky.graph.follow {subject: did, createdAt, gaKey?}. */
uint64_t atp_follow(struct atp_client *c, const char *did, const char *idem_key, atp_done_fn cb,
                    void *ud, struct ga_err *err);
/* deleteRecord of the record an at:// URI of our own repo names (a post, a
 * like, a follow). */
uint64_t atp_delete_uri(struct atp_client *c, const char *uri, atp_done_fn cb, void *ud,
                        struct ga_err *err);

/* --- state ------------------------------------------------------------------------ */

/* What is known about a class's rate budget; -1 when nothing. */
int atp_rate_snapshot(struct atp_client *c, enum atp_rate_class cls, struct atp_budget *out);

struct atp_stats {
	uint64_t calls;           /* accepted by atp_call and the helpers */
	uint64_t requests;        /* HTTP requests made (retries and session calls included) */
	uint64_t create_sessions; /* createSession requests sent */
	uint64_t refreshes;       /* refreshSession requests sent */
	uint64_t retries;         /* transient retries */
	uint64_t rate_limited;    /* answers that were a rate limit */
	uint64_t failures;        /* calls that ended in an error */
	char last_error[GA_ERR_MSG_MAX];
};
void atp_client_stats(const struct atp_client *c, struct atp_stats *out);
/* Calls queued plus the one in flight (session steps included). */
size_t atp_pending(const struct atp_client *c);

/* --- pure helpers (exposed for tests) ---------------------------------------------- */

/* How an answer is classified. what names the attempt; xrpc_error (cap
 * ATP_XRPC_ERROR_MAX) receives the body's "error". *auth_expired is set
 * for 401 and for 400 ExpiredToken / InvalidToken (refresh and retry);
 * *rate_limited for 429 and 403 with remaining 0. */
enum atp_error_kind atp_classify(long status, const char *content_type, const char *body,
                                 size_t body_len, const char *what, const char *remaining_hdr,
                                 bool *auth_expired, bool *rate_limited, char *xrpc_error,
                                 char *msg, size_t cap);

/* The "exp" claim of a JWT (base64url payload), in epoch ms; -1 when it
 * cannot be read. The signature is not checked (the server does that). */
int64_t atp_jwt_exp_ms(const char *jwt);

const char *atp_error_kind_name(enum atp_error_kind k);
/* True for ATP_ERR_AUTH: the credentials are refused; the owner must act. */
bool atp_error_is_fatal(enum atp_error_kind k);

#endif
