/*
 * space/web_state — what the room's read-only page (space/web.h) shows of
 * each member beyond its presence: the last `identity`, the last
 * `reflection` and the last `workspace_state` it sent (space-protocol.md
 * §3.6, §3.10, §3.12), each bounded, for the member's card on the page;
 * and the latest pull requests reported for each plan, whoever sent them
 * (space_web_plans_apply, below), for the page's list of them.
 *
 * These are peer-supplied strings: everything is kept as JSON text built
 * here (escaped like JSON.stringify, space/proto.h), within the bounds
 * below, and the page puts it in with textContent only.
 *
 * Where the data comes from: server.c's observer of the room
 * (space_room_set_observer) hands each broadcast to
 * space_web_profile_apply with the profile of the member who sent it (one
 * struct space_web_profile per connection, cleared when the connection
 * goes, so a member that leaves takes its profile along). Nothing is read
 * back from the log at start.
 *
 * What the page receives (docs/space-web.md):
 *   - in the snapshot (GET /api/room and the stream's "room" event), a
 *     "profiles" array: {name, id, identity, reflection, workspaceState}
 *     for every member that sent any of the three, in member order, at
 *     most SPACE_WEB_PROFILES_MAX_BYTES in all; the members past that are
 *     counted in "profilesOmitted" and arrive with their next update;
 *   - on the stream, a "profile" event (the same object, one member)
 *     whenever one of the three changed.
 *   identity:       {"summary": <the summary, bounded>, "at": ts, "cut"?: true}
 *   reflection:     {"summary": "<text>", "at": ts, "cut"?: true}
 *   workspaceState: {"workspace", "planNumber", "totalTasks",
 *                    "completedTasks", "blockedTasks", "inProgressTasks",
 *                    "tasks"?: [{number, title, status, assignee?, pr?,
 *                    prUrl?}], "pulls"?: [{number, state, repo?, title?,
 *                    url?, task?, author?, reviewer?, next?, since?,
 *                    revisions?}], "at": ts, "cut"?: true}
 *   Each is null until the member sent one; "cut" says something was left
 *   out or shortened.
 *
 * Bounds (sizes of the JSON text):
 *   - identity: the summary within SPACE_WEB_IDENTITY_MAX_BYTES; in it each
 *     string cut to SPACE_WEB_IDENTITY_STR_UNITS, object keys to
 *     SPACE_WEB_IDENTITY_KEY_UNITS, at most SPACE_WEB_IDENTITY_ITEMS_MAX
 *     entries per array or object, nesting at most
 *     SPACE_WEB_IDENTITY_DEPTH_MAX deep; what does not fit is left out;
 *   - reflection: cut to SPACE_WEB_REFLECTION_UNITS (the room relays 5,000);
 *   - workspace: the name cut to SPACE_WEB_WORKSPACE_UNITS; its tasks (when
 *     the member's agent sends them) the first SPACE_WEB_TASKS_MAX within
 *     SPACE_WEB_TASKS_MAX_BYTES (space_put_tasks); its pull requests (the
 *     plan's, with their review state and who acts next) the first
 *     SPACE_WEB_PULLS_MAX within SPACE_WEB_PULLS_MAX_BYTES (space_put_pulls);
 *   - a profile event at most SPACE_WEB_PROFILE_MAX_BYTES (it always fits:
 *     the three bounds above plus a name and an id of at most 100 units);
 *   - the snapshot's profiles at most SPACE_WEB_PROFILES_MAX_BYTES.
 * (Units are UTF-16 code units, as the room counts; cuts fall on code-point
 * boundaries.)
 *
 * One thread (the server's loop). Returned strings and buffers belong to
 * the caller.
 */
#ifndef GA_SPACE_WEB_STATE_H
#define GA_SPACE_WEB_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "space/buf.h"
#include "space/room.h"

#define SPACE_WEB_IDENTITY_MAX_BYTES 2048
#define SPACE_WEB_IDENTITY_STR_UNITS 300
#define SPACE_WEB_IDENTITY_KEY_UNITS 64
#define SPACE_WEB_IDENTITY_ITEMS_MAX 16
#define SPACE_WEB_IDENTITY_DEPTH_MAX 4
#define SPACE_WEB_REFLECTION_UNITS   1000
#define SPACE_WEB_WORKSPACE_UNITS    200
#define SPACE_WEB_TASKS_MAX          16
#define SPACE_WEB_TASKS_MAX_BYTES    ((size_t)4 * 1024)
#define SPACE_WEB_PULLS_MAX          16
#define SPACE_WEB_PULLS_MAX_BYTES    ((size_t)6 * 1024)
/* One member's profile as JSON: the bounds above (a reflection of 1,000
 * units is at most 6,000 bytes escaped) and a name and id of 100 units. */
#define SPACE_WEB_PROFILE_MAX_BYTES  ((size_t)24 * 1024)
#define SPACE_WEB_PROFILES_MAX_BYTES ((size_t)64 * 1024)

struct space_web_profile {
	char *identity;   /* the "identity" object's JSON text, or NULL; owned */
	char *reflection; /* the "reflection" object's, or NULL */
	char *workspace;  /* the "workspaceState" object's, or NULL */
};

void space_web_profile_clear(struct space_web_profile *p);

/* A broadcast of the room (JSON text, as members receive it) sent by the
 * member whose profile p is. Returns true when p changed: an identity, a
 * reflection or a workspace_state; anything else is ignored. */
bool space_web_profile_apply(struct space_web_profile *p, const char *json, size_t len);

/* {"name":…,"id":…,"identity":…|null,"reflection":…|null,"workspaceState":…|null} */
void space_web_profile_json(struct strbuf *sb, const struct space_web_profile *p, const char *name,
                            const char *id);

/* The stream's "profile" event for one member (SPACE_BUF_RAW). */
struct space_buf *space_web_profile_event(const struct space_web_profile *p, const char *name,
                                          const char *id);

/* The profile of a member (m->io is the server's), or NULL. */
typedef const struct space_web_profile *(*space_web_profile_fn)(const struct space_conn *m);

/* ,"profiles":[…],"profilesOmitted":N for the room's members, in order. */
void space_web_profiles_put(struct strbuf *sb, const struct space_room *room,
                            space_web_profile_fn profile_of);

struct space_web_plans;

/* The snapshot (a JSON object, as space_web_room_json returns it; taken
 * and freed) with the profiles and the plans' pull requests (plans may be
 * NULL: none) added as its last keys. Caller frees. */
char *space_web_snapshot_add_profiles(char *json, size_t len, const struct space_room *room,
                                      space_web_profile_fn profile_of,
                                      const struct space_web_plans *plans, size_t *out_len);

/* The stream's start (as space_web_stream_start returns it: its "room"
 * event last; the buffer's reference is taken) with the profiles and the plans
 * added to that snapshot. Returns a new buffer (SPACE_BUF_RAW). */
struct space_buf *space_web_stream_add_profiles(struct space_buf *start,
                                                const struct space_room *room,
                                                space_web_profile_fn profile_of,
                                                const struct space_web_plans *plans);

/* --- the pull requests of each plan ------------------------------------------------- */

/*
 * Members report a plan's pull requests in their workspace_state ("pulls");
 * several members report the same plan. The page lists the latest report
 * of each plan (workspace and planNumber), whoever sent it, as long as the
 * room runs — also after its reporter left (a later report replaces it).
 *   - a workspace_state with a "pulls" array replaces its plan's entry; an
 *     empty array removes it; one without "pulls" changes nothing;
 *   - at most SPACE_WEB_PLANS_MAX plans: a new plan beyond that replaces
 *     the one reported longest ago (counted in "plansEvicted" of the
 *     snapshot); a report older than SPACE_WEB_PLANS_TTL_MS goes with the
 *     next change;
 *   - each entry: {"workspace", "planNumber", "reporter", "pulls": [as on
 *     the card, SPACE_WEB_PULLS_MAX within SPACE_WEB_PULLS_MAX_BYTES],
 *     "at", "cut"?} — at most about 8 KiB; the snapshot's "plans" (newest
 *     first) at most SPACE_WEB_PLANS_MAX_BYTES, the rest counted in
 *     "plansOmitted" (they come with their next report); the stream's
 *     "plan" event carries one entry, with "pulls": [] when it was removed.
 */
#define SPACE_WEB_PLANS_MAX       16
#define SPACE_WEB_PLANS_TTL_MS    ((int64_t)24 * 60 * 60 * 1000)
#define SPACE_WEB_PLANS_MAX_BYTES ((size_t)64 * 1024)

struct space_web_plan {
	char *workspace; /* as reported, cut to SPACE_WEB_WORKSPACE_UNITS; owned */
	double number;   /* planNumber */
	char *json;      /* the entry's JSON text; owned */
	int64_t at_ms;   /* when it was reported (the server's clock) */
};

struct space_web_plans {
	struct space_web_plan e[SPACE_WEB_PLANS_MAX]; /* newest first */
	size_t n;
	uint64_t evicted;
};

void space_web_plans_clear(struct space_web_plans *ps);

/* A room broadcast (JSON text) sent by member `name` at now_ms. Returns
 * the stream's "plan" event when a plan's pulls changed (SPACE_BUF_RAW,
 * the caller's reference), else NULL. */
struct space_buf *space_web_plans_apply(struct space_web_plans *ps, const char *json, size_t len,
                                        const char *name, int64_t now_ms);

/* ,"plans":[…],"plansOmitted":N,"plansEvicted":N */
void space_web_plans_put(struct strbuf *sb, const struct space_web_plans *ps);

#endif
