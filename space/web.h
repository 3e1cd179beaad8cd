/*
 * space/web — the room's read-only web page: a host
 * watches the room from a browser. agent-space answers a few plain HTTP
 * GETs on its own port (server.c routes them here) and never lets the page
 * speak: there is no route that takes data.
 *
 *   GET /            the page (web/space/index.html) — only for a request
 *                    that accepts text/html (a browser); any other plain
 *                    request for / keeps the protocol's 426 (§1 item 3)
 *   GET /<file>      the other files of web/space (app.js, style.css)
 *   GET /api/room    a snapshot, JSON: name, now, claimTtlMs, members
 *                    (name, id, version, joinedAt, lastSeen, state,
 *                    detail, stateAt, typingAt), claims (action, target,
 *                    owner, at, since, expiresAt: at is the claim or its
 *                    last renewal, since the claim's own time — the
 *                    claim's "since" when the room relayed one, else its
 *                    first at), events (the recent chat and
 *                    room events, oldest first, bounded), web (clients,
 *                    maxClients, dropped), profiles and profilesOmitted
 *                    (the members' identities, last reflections and
 *                    workspace states: space/web_state.h), plans,
 *                    plansOmitted and plansEvicted (each plan's pull
 *                    requests: space/web_state.h)
 *   GET /api/events  Server-Sent Events: "room" (the snapshot above) first,
 *                    then the room as it happens: chat, join, leave,
 *                    claim, action_result, reflection, shutdown (the
 *                    room's own JSON messages), typing and state (the same;
 *                    presence, not kept in events), members (the member
 *                    list after a join, leave or identity), claims (the
 *                    claim list after it changed) and profile (a member's
 *                    identity, reflection or workspace changed,
 *                    space/web_state.h), plan (a plan's pull requests
 *                    reported); a comment line every
 *                    SPACE_WEB_KEEPALIVE_MS.
 *
 * How the page learns what happens: the room's observer
 * (space_room_set_observer, room.h). server.c registers one that hands
 * space_web_tap each broadcast exactly once, with the presence record of
 * the member it is about — also the broadcasts that reach nobody (the last
 * member's leave, the host talking to an empty room) — and turns a silent
 * claim renewal (§3.7) into a space_web_input. The tap still keeps a
 * reference to the last buffer it took and ignores a second sight of it,
 * and it ignores what is not a broadcast (history_response, errors, a
 * workspace_state, which it cannot tell from a joiner's replay; the
 * members' identities, reflections and workspace states for their cards
 * are space/web_state.h's). Presence state (idle, thinking, acting,
 * blocked) and typing are not kept by the room: the server keeps them per
 * connection (struct space_web_presence) from the state and typing
 * broadcasts. Claims are mirrored from the claim, action_result and leave
 * broadcasts and the renewals.
 *
 * server.c adds "profiles" (space/web_state.h) to the snapshot of GET
 * /api/room and of the stream's "room" event, and sends "profile" events.
 *
 * Hostile input (space_web_classify): a path with "..", "%", "\", "//" or a
 * control character gets 400; a method other than GET (or HEAD, except for
 * the event stream) on a web path gets 405; a request with a body (a
 * Content-Length other than 0, or any Transfer-Encoding) gets 413; an
 * unknown /api/ path 404. Everything else that is not the page's is left to
 * the server (426 as before). The request head itself is bounded by
 * server.c (WS_HEAD_MAX: 431).
 *
 * Bounds: SPACE_WEB_MAX_CLIENTS event streams (server.c: 503 beyond); a
 * stream whose unsent bytes pass SPACE_WEB_SSE_QUEUE_MAX_BYTES is dropped,
 * never waited for; SPACE_WEB_EVENTS_MAX events of at most
 * SPACE_WEB_EVENTS_MAX_BYTES in all are kept for the snapshot, each at most
 * about SPACE_WEB_EVENT_MAX_BYTES (a longer chat or reflection is cut and
 * marked "cut": true); SPACE_WEB_CLAIMS_MAX claims (oldest forgotten); a
 * member's capabilities are listed when they fit in
 * SPACE_WEB_CAPS_MAX_BYTES, a state's detail in SPACE_WEB_DETAIL_MAX_BYTES;
 * SPACE_WEB_STATIC_MAX_FILES files of SPACE_WEB_STATIC_MAX_BYTES each; a
 * members event at most every SPACE_WEB_MEMBERS_MIN_MS (server.c).
 *
 * One thread (the server's loop). Buffers returned are SPACE_BUF_RAW
 * (bytes for the socket as they are); the caller owns one reference.
 */
#ifndef GA_SPACE_WEB_H
#define GA_SPACE_WEB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "space/buf.h"
#include "space/room.h"
#include "space/store.h"

#define SPACE_WEB_MAX_CLIENTS         16
#define SPACE_WEB_SSE_QUEUE_MAX_BYTES ((size_t)256 * 1024)
#define SPACE_WEB_KEEPALIVE_MS        15000
/* Members events at most this often (server.c). */
#define SPACE_WEB_MEMBERS_MIN_MS   250
#define SPACE_WEB_EVENTS_MAX       200
#define SPACE_WEB_EVENTS_MAX_BYTES ((size_t)512 * 1024)
#define SPACE_WEB_EVENT_MAX_BYTES  ((size_t)16 * 1024)
/* What a cut chat or reflection keeps, in UTF-16 units. */
#define SPACE_WEB_CUT_UNITS        2000
#define SPACE_WEB_CLAIMS_MAX       512
#define SPACE_WEB_DETAIL_MAX_BYTES 2048
#define SPACE_WEB_CAPS_MAX_BYTES   1024
#define SPACE_WEB_STATIC_MAX_FILES 16
#define SPACE_WEB_STATIC_MAX_BYTES ((size_t)512 * 1024)
/* The page's files, under the shipped data directory. */
#define SPACE_WEB_SUBDIR "web/space"

/* Presence the room does not keep, per member connection (server.c). */
struct space_web_presence {
	char state[16];   /* idle | thinking | acting | blocked; "" before any */
	char *detail;     /* JSON text of the state's detail, or NULL; owned */
	int64_t state_at; /* epoch ms, 0 never */
	int64_t typing_at;
};
void space_web_presence_clear(struct space_web_presence *p);

/* Returns the presence record of a member (m->io is the server's). */
typedef struct space_web_presence *(*space_web_presence_fn)(const struct space_conn *m);

struct space_web;

/* dir: the page's files, or NULL to look for them (space_web_find_dir).
 * Never NULL: without files the API still works and the page's routes say
 * that the page is not installed (space_web_dir() is then NULL). */
struct space_web *space_web_new(const char *dir, const char *room_name, int64_t claim_ttl_ms,
                                space_web_presence_fn presence_of);
void space_web_free(struct space_web *w);
/* Where the files were read from, or NULL when none were found. */
const char *space_web_dir(const struct space_web *w);
/* The first of: <binary's dir>/<its data dir>/web/space (installed), the
 * source tree's web/space when the binary sits in a build tree, the
 * configured data directory's, the source tree's. 0 and out filled, or -1. */
int space_web_find_dir(char *out, size_t cap);

/* Seeds the recent events from the log's history (chat, join, leave). */
void space_web_seed(struct space_web *w, struct space_store *st);

/* --- requests ------------------------------------------------------------- */

enum space_web_route {
	SPACE_WEB_NOT_MINE = 0, /* not the page's: the server answers (426) */
	SPACE_WEB_REFUSED,      /* status and why say what was wrong */
	SPACE_WEB_FILE,         /* a file of the page (file) */
	SPACE_WEB_ROOM,         /* /api/room */
	SPACE_WEB_EVENTS,       /* /api/events */
};

struct space_web_req {
	enum space_web_route route;
	bool head_only;     /* HEAD: the headers without the body */
	unsigned status;    /* SPACE_WEB_REFUSED: 400, 404, 405, 413 */
	const char *reason; /* its reason phrase */
	const char *why;    /* a sentence for the body */
	const char *allow;  /* 405: the Allow header's value */
	const char *file;   /* SPACE_WEB_FILE: the name (borrowed from w) */
	const char *data;   /* SPACE_WEB_FILE: the content, or NULL when the */
	size_t len;         /* page is not installed (then 404) */
	const char *ctype;
};

/* Classifies a plain (not upgrade) request: head[0..head_len) is the whole
 * request head, method and path point into it. */
void space_web_classify(const struct space_web *w, const char *head, size_t head_len,
                        const char *method, size_t method_len, const char *path, size_t path_len,
                        struct space_web_req *out);

/* The value of header `name` (case-insensitive) in a request head, trimmed;
 * NULL when absent. */
const char *space_web_header(const char *head, size_t head_len, const char *name, size_t *vlen);

/* The headers every answer of the page carries (CSP, nosniff, no frames). */
extern const char SPACE_WEB_SECURITY_HEADERS[];

/* --- the room as the page sees it ------------------------------------------ */

struct space_web_stats {
	unsigned clients; /* event streams open */
	uint64_t dropped; /* streams dropped for not reading */
};

/* The snapshot (GET /api/room), JSON text; caller frees. */
char *space_web_room_json(struct space_web *w, const struct space_room *room,
                          const struct space_web_stats *st, int64_t now, size_t *len);
/* The stream's start: its HTTP head and the "room" event. */
struct space_buf *space_web_stream_start(struct space_web *w, const struct space_room *room,
                                         const struct space_web_stats *st, int64_t now);
/* ": keepalive" (one shared buffer per call). */
struct space_buf *space_web_keepalive(void);

/* A broadcast of the room, from its observer (see the header comment).
 * sender: the presence record of the member it is about, or NULL. Returns
 * the events for the streams, or NULL. */
struct space_buf *space_web_tap(struct space_web *w, struct space_buf *msg,
                                struct space_web_presence *sender, int64_t now);
/* A claim from a member (the room's CLAIM_RENEWED, as a claim message):
 * renews the page's copy when the member owns it. */
void space_web_input(struct space_web *w, const char *member_name, const char *data, size_t len,
                     int64_t now);
/* True once after the member list changed (join, leave, identity). */
bool space_web_take_members_dirty(struct space_web *w);
/* The "members" event. */
struct space_buf *space_web_members_event(struct space_web *w, const struct space_room *room,
                                          int64_t now);

/* Number of events and claims kept (tests). */
size_t space_web_event_count(const struct space_web *w);
size_t space_web_claim_count(const struct space_web *w);

#endif
