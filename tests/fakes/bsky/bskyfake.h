/*
 * bskyfake — a stateful AT Protocol (Bluesky) XRPC server for tests, on
 * httpfake (127.0.0.1, ephemeral port). bskyfake_base_url() is ready for
 * BLUESKY_SERVICE. It keeps the real wire shapes (checked against the
 * lexicons and a real @atproto/pds, scripts/pds/): at:// URIs with TID
 * record keys, CIDv1 strings ("bafyrei…"), JWT access/refresh tokens with
 * "exp", cursors, {"error","message"} bodies, ratelimit-* headers.
 *
 * State: accounts (did:plc, handle, app password, seenAt), sessions (access
 * and refresh tokens: the access token expires after access_ttl_ms, the
 * refresh token rotates on use — the old one is revoked), records (posts,
 * likes, follows, each with its author repo, rkey, CID, value),
 * notifications (mention, reply, like, follow: made from the records as
 * the AppView would — a mention facet naming the account's DID, a reply
 * to its post, a like of its post, a follow of it).
 *
 * XRPC (under /xrpc/):
 *   POST com.atproto.server.createSession   {identifier, password} → {did, handle, accessJwt,
 *                                           refreshJwt, active}; 401 AuthenticationRequired
 *   POST com.atproto.server.refreshSession  Bearer refreshJwt → a new pair
 *   GET  com.atproto.server.getSession
 *   GET  com.atproto.identity.resolveHandle handle → {did}; 400 HandleNotFound
 *                                           "Unable to resolve handle"
 *   GET  app.bsky.actor.getProfile          actor (DID or handle)
 *   POST com.atproto.repo.createRecord      {repo, collection, record, rkey?} → {uri, cid,
 *                                           commit, validationStatus}; posts validated as the
 *                                           PDS does (300 graphemes, 3000 bytes, createdAt,
 *                                           facets in range, mention DIDs, reply refs)
 *   POST com.atproto.repo.deleteRecord      {repo, collection, rkey}
 *   GET  com.atproto.repo.getRecord         repo, collection, rkey
 *   GET  com.atproto.repo.listRecords       repo, collection, limit, cursor (newest first)
 *   GET  app.bsky.notification.listNotifications  limit, cursor → {notifications, cursor, seenAt}
 *   POST app.bsky.notification.updateSeen   {seenAt}
 *   GET  app.bsky.feed.getPostThread        uri, depth, parentHeight → {thread}; 400 NotFound
 *   GET  app.bsky.feed.getAuthorFeed        actor, limit, cursor, filter
 *   GET  app.bsky.feed.getPosts             uris (repeated, 1..25) → {posts[]} of those that
 *                                           exist, in the order asked
 * Authentication: no token → 401 AuthenticationRequired; an expired access
 * token → 400 ExpiredToken (as bsky.social answers); a revoked or unknown
 * one → 400 InvalidToken; a refresh token where an access token belongs (or
 * the reverse) → 400 InvalidToken "Token could not be verified" (the PDS's
 * words). Error messages of record validation are the PDS's
 * ("Invalid app.bsky.feed.post record: grapheme too big (maximum 300, got
 * 301) at $.record.text").
 *
 * Rate limits: every answer carries ratelimit-limit, -remaining, -reset
 * (epoch seconds) and -policy ("<limit>;w=<window s>") of its class: reads,
 * writes, session (createSession/refreshSession). Budgets are real (spent →
 * 429 RateLimitExceeded until the window's reset, by the fake's clock);
 * bskyfake_force_429 answers the next n requests 429 with a reset the test
 * chooses.
 *
 * Control (for bskyfake-server and curl; JSON in and out):
 *   POST /_bskyfake/account  {handle, password}              → {did}
 *   POST /_bskyfake/post     {handle, text, replyTo?}         → {uri, cid}  (mentions of known
 *                                                               handles get facets)
 *   POST /_bskyfake/expire   {handle}                         expires its access tokens
 *   POST /_bskyfake/revoke   {handle}                         revokes its refresh tokens too
 *   POST /_bskyfake/429      {n, resetInMs}
 *   POST /_bskyfake/fail     {n, status, html}
 *   GET  /_bskyfake/records?handle=&collection=               → {records: [{uri, cid, value}]}
 *   GET  /_bskyfake/state                                     → counts per NSID and status
 *
 * Threads: answers run on libmicrohttpd's threads; every function here
 * locks, so a test may call them at any time. A bound exceeded by a test's
 * own setup call aborts with a sentence; exceeded by a request, it is
 * answered 400 InvalidRequest naming the bound.
 */
#ifndef GA_TESTS_FAKES_BSKY_BSKYFAKE_H
#define GA_TESTS_FAKES_BSKY_BSKYFAKE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/fakes/httpfake/httpfake.h"

#define BSKYFAKE_ACCOUNTS_MAX 64
#define BSKYFAKE_RECORDS_MAX  20000
#define BSKYFAKE_NOTIFS_MAX   20000
#define BSKYFAKE_TOKENS_MAX   4096
#define BSKYFAKE_LOG_MAX      8192
#define BSKYFAKE_DID_MAX      64
#define BSKYFAKE_URI_MAX      256
#define BSKYFAKE_CID_MAX      80

enum bskyfake_class { BSKYFAKE_READ, BSKYFAKE_WRITE, BSKYFAKE_SESSION };

struct bskyfake;

struct bskyfake *bskyfake_new(char *err, size_t errlen);
void bskyfake_free(struct bskyfake *f);
/* "http://127.0.0.1:N" (owned by the fake). */
const char *bskyfake_base_url(const struct bskyfake *f);
struct httpfake *bskyfake_http(struct bskyfake *f);

/* Default: the real time. Share the client's clock so expiry and resets
 * agree. */
void bskyfake_set_clock(struct bskyfake *f, int64_t (*now_ms)(void *ud), void *ud);
/* Token lifetimes (defaults: access 2 h, refresh 60 days). */
void bskyfake_set_token_ttl(struct bskyfake *f, int64_t access_ms, int64_t refresh_ms);

/* --- accounts and content ------------------------------------------------------ */

/* Adds an account; did_out (BSKYFAKE_DID_MAX, may be NULL) gets its DID
 * ("did:plc:" + 24 base32 characters derived from the handle). */
void bskyfake_add_account(struct bskyfake *f, const char *handle, const char *password,
                          char *did_out);
/* A post by handle, as if made through its own client: "@<known handle>"
 * gets a mention facet (byte offsets), reply_to (a post URI, may be NULL)
 * gets reply refs (its root found through its own reply). Notifications
 * follow. 0 with uri/cid (BSKYFAKE_URI_MAX / BSKYFAKE_CID_MAX, may be NULL),
 * -1 for an unknown handle or parent. */
int bskyfake_post(struct bskyfake *f, const char *handle, const char *text, const char *reply_to,
                  char *uri, char *cid);
/* A like of uri by handle. 0 / -1. */
int bskyfake_like(struct bskyfake *f, const char *handle, const char *uri);

/* Every access token of handle answers 400 ExpiredToken from now on. */
void bskyfake_expire_tokens(struct bskyfake *f, const char *handle);
/* And its refresh tokens are revoked (only createSession helps). */
void bskyfake_revoke_sessions(struct bskyfake *f, const char *handle);

/* --- limits and faults ------------------------------------------------------------ */

/* A budget of limit requests per window_ms for a class, starting full now.
 * limit 0 = the defaults (reads 3000 / 5 min, writes 5000 / h, session
 * 30 / 5 min) that a test does not run out of. */
void bskyfake_rate_limit(struct bskyfake *f, enum bskyfake_class cls, int64_t limit,
                         int64_t window_ms);
/* The next n requests (control endpoints aside) get 429 RateLimitExceeded
 * with ratelimit-remaining 0 and ratelimit-reset = now + reset_in_ms. */
void bskyfake_force_429(struct bskyfake *f, unsigned n, int64_t reset_in_ms);
/* The next n requests get status (5xx) as XRPC JSON, or an HTML page. */
void bskyfake_fail_next(struct bskyfake *f, unsigned n, int status, bool html);
/* The next n createRecord requests are carried out, then answered 502 (an
 * HTML page): the record exists, its answer was lost on the way back. */
void bskyfake_lose_answers(struct bskyfake *f, unsigned n);
/* While hidden, getPostThread leaves handle's posts out of the replies
 * under a post (an AppView that has not indexed them yet); the records
 * themselves are there (listRecords, getRecord). */
void bskyfake_hide_in_threads(struct bskyfake *f, const char *handle, bool hidden);

/* --- what happened ----------------------------------------------------------------- */

/* Requests to nsid (NULL = any) answered with status (0 = any). */
size_t bskyfake_count(struct bskyfake *f, const char *nsid, int status);
/* Live records of handle's repo in collection. */
size_t bskyfake_record_count(struct bskyfake *f, const char *handle, const char *collection);
/* Copy of the live records of handle in collection, newest first:
 * [{uri, cid, value}] (caller frees), or NULL for an unknown handle. */
cJSON *bskyfake_records(struct bskyfake *f, const char *handle, const char *collection);
/* Copy of the record's value (caller frees), or NULL. */
cJSON *bskyfake_record(struct bskyfake *f, const char *uri);
/* The account's seenAt (epoch ms; 0 = never). */
int64_t bskyfake_seen_at(struct bskyfake *f, const char *handle);
/* Waits until n requests were answered (0) or timeout_ms passed (-1). */
int bskyfake_wait_requests(struct bskyfake *f, uint64_t n, unsigned timeout_ms);
uint64_t bskyfake_requests(struct bskyfake *f);

#endif
