/*
 * modules/coord — coordination backends (DESIGN.md
 * "Coordination backends", seed 003): claim / renew / release a key with a
 * TTL, and count events in a window, behind one small interface.
 *
 *   - local: an in-process table (one agent). Bounded at COORD_LOCAL_MAX_KEYS
 *     claims and as many counters; expired entries are evicted first; a
 *     table full of live entries answers COORD_UNAVAILABLE "table full";
 *   - space: the agent-space room's own `claim` messages (agents sharing a
 *     room), modules/space/coord_space.h;
 *   - redis: REDIS_URL, hiredis on the loop, for fleets across machines.
 *     See "redis" below.
 *
 * Semantics, the same for every backend (SET NX semantics):
 *   - coord_claim wins only when nobody holds the key, us included: a
 *     second claim of a key we already hold answers COORD_HELD with our own
 *     id as holder (a message delivered twice is answered once). The TTL is
 *     not changed by a failed claim;
 *   - coord_renew extends the TTL only when we hold the key (WON); otherwise
 *     HELD with the holder when known (NULL when the key is free/expired);
 *   - coord_release deletes the key only when we hold it (a release by
 *     another agent leaves the claim alone);
 *   - coord_count adds one to key's counter and answers the new value; the
 *     first event of a window starts it (window_ms later the counter is
 *     gone and the next event counts 1 again). -1 = unavailable.
 *
 * Callbacks: every answer comes on the loop, never from inside the call that
 * asked (an immediate answer is deferred to the next loop iteration), and
 * exactly once per accepted request (one that returned 0). When the backend
 * cannot decide (Redis down or slow, not in the room, a table full) the
 * answer is COORD_UNAVAILABLE with a one-sentence `why`: callers fail closed
 * (the pipeline stands down on peer messages). `holder` and `why` are
 * borrowed for the duration of the callback.
 *
 * Bounds: at most COORD_MAX_PENDING requests waiting for an answer per
 * backend; beyond that the call returns -1 (the caller is flooding).
 *
 * Keys are strings of 1..COORD_MAX_KEY bytes without control characters,
 * not starting with a space (e.g. "respond:space:5f0c…", "budget:pair:bob",
 * "create_issue:Login times out" — a piece of work's name, workkey.h).
 *
 * Closing: coord_close answers every pending callback with
 * COORD_UNAVAILABLE "shutting down" (count: -1) before it returns (Redis,
 * when coord_close is called from inside one of its own answers: the rest
 * follow as soon as that answer returns, hiredis defers the free), closes
 * the backend's handles, and calls done (may be NULL) on the loop after the
 * last one is closed; the struct is freed then. Calls after coord_close
 * return -1. Call coord_close once; the loop must keep running until done.
 * One thread, one loop.
 *
 * space: the agent-space room's claims — the backend lives with the room,
 * modules/space/coord_space.h.
 *
 * redis: every key is stored as "ga:" + key (COORD_REDIS_PREFIX), so a
 * shared Redis can tell our keys apart. claim = SET ga:key agent_id NX PX
 * ttl (OK → WON; nil → GET → HELD with the holder); renew and release are
 * Lua scripts that compare the value with agent_id first (only the owner
 * extends or deletes); count = one Lua script doing INCR and, on the first
 * event (or when the key somehow has no TTL), PEXPIRE — atomic, so a crash
 * between the two can never leave a counter that never expires. Every
 * command times out after COORD_REDIS_TIMEOUT_MS (coord_redis_set_timeout_ms)
 * → UNAVAILABLE "redis: timeout …", and the connection is then dropped and
 * made again: a server that does not answer is treated as down (a command
 * that timed out may still have been applied: a claim then stays ours
 * until its TTL, and nobody answers that message — the safe side). While
 * disconnected, requests answer UNAVAILABLE at once (fail closed) and the
 * connection is retried with a doubling backoff (COORD_REDIS_BACKOFF_MIN_MS
 * .. COORD_REDIS_BACKOFF_MAX_MS). AUTH (with the URL's user and password)
 * and SELECT (the URL's db) are sent on every connect. The password is
 * registered with log_add_secret and never appears in a log line, an error
 * or coord_describe. Host names are resolved by hiredis synchronously (use
 * an address to keep the loop from ever waiting on DNS).
 * URL forms: redis://host[:port][/db], redis://:password@host[:port][/db],
 * redis://user:password@host[:port][/db]; host may be [ipv6]; port defaults
 * to 6379, db to 0; user and password may be %-encoded. Anything else is
 * refused with an error naming REDIS_URL.
 */
#ifndef GA_MODULES_COORD_COORD_H
#define GA_MODULES_COORD_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"

#define COORD_MAX_PENDING          1024
#define COORD_MAX_KEY              512
#define COORD_LOCAL_MAX_KEYS       4096
#define COORD_RESULT_TEXT_MAX      1024
#define COORD_REDIS_PREFIX         "ga:"
#define COORD_REDIS_TIMEOUT_MS     2000
#define COORD_REDIS_BACKOFF_MIN_MS 100
#define COORD_REDIS_BACKOFF_MAX_MS 5000

enum coord_result { COORD_WON, COORD_HELD, COORD_UNAVAILABLE };
const char *coord_result_name(enum coord_result r); /* "won", "held", "unavailable" */

/* holder: who holds it when HELD, may be NULL; why: one sentence for the
 * decision log. Both borrowed for the call. */
typedef void (*coord_claim_fn)(void *ud, enum coord_result r, const char *holder, const char *why);
/* count: the counter after this event, -1 when unavailable. */
typedef void (*coord_count_fn)(void *ud, int64_t count);

struct coord;

/* agent_id: who we are (the value stored as holder; for space, our member
 * name in the room). Copied. Never NULL for valid arguments. */
struct coord *coord_new_local(uv_loop_t *loop, const char *agent_id);
/* NULL with err for a URL that is not one of the forms above (the error
 * names REDIS_URL and never shows the password). Starts connecting at once;
 * requests made before the connection is up are queued behind AUTH/SELECT. */
struct coord *coord_new_redis(uv_loop_t *loop, const char *url, const char *agent_id,
                              struct ga_err *err);

/* 0: cb will be called exactly once. -1: bad arguments (NULL, ttl <= 0, a
 * key that is empty, too long or has spaces/control characters; for space,
 * no ':'), closed, or COORD_MAX_PENDING requests waiting. */
int coord_claim(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb, void *ud);
int coord_renew(struct coord *c, const char *key, int64_t ttl_ms, coord_claim_fn cb, void *ud);
/* Deletes the key only if we hold it; 0 when done or sent (Redis answers
 * later; the outcome is logged at debug level), -1 bad arguments/closed.
 * The same as coord_release_result(c, key, true, NULL, NULL). */
int coord_release(struct coord *c, const char *key);
/* coord_release telling how the claimed work ended. The space backend puts
 * it in the room's action_result (§12.4: success with the link, failure
 * with the error — silent in chat); the others ignore the outcome. link and
 * error may be NULL; each is cut to COORD_RESULT_TEXT_MAX bytes at a
 * character boundary. */
int coord_release_result(struct coord *c, const char *key, bool success, const char *link,
                         const char *error);
int coord_count(struct coord *c, const char *key, int64_t window_ms, coord_count_fn cb, void *ud);

const char *coord_name(const struct coord *c); /* "local", "space", "redis" */
/* One line for `status`, e.g. "redis 127.0.0.1:6379/0 (connected)". */
void coord_describe(const struct coord *c, char *buf, size_t cap);
void coord_close(struct coord *c, void (*done)(void *ud), void *ud);

/* Which backend an agent's configuration asks for: */
enum coord_choice {
	COORD_CHOICE_REDIS, /* REDIS_URL: Redis; fail closed when unreachable */
	COORD_CHOICE_ROOM,  /* SPACE_URL: the room's claims; fail closed out of it */
	/* neither: no shared backend — claims in process until a room found by
	 * discovery is joined (the room's backend, coord_space_set_alone), then
	 * the room's */
	COORD_CHOICE_ALONE,
};
/* The choice for REDIS_URL / SPACE_URL (either may be NULL or ""), and one
 * sentence saying it for doctor (why, may be NULL). */
enum coord_choice coord_choose(const char *redis_url, const char *space_url, char *why, size_t cap);
/* redis backend only: the per-command timeout (default
 * COORD_REDIS_TIMEOUT_MS), also used as the connect timeout. */
void coord_redis_set_timeout_ms(struct coord *c, int64_t ms);

#endif
