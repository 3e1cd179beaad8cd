/*
 * coord_space — the coordination backend of agents sharing an agent-space
 * room (modules/coord/coord.h's interface): the room's own `claim`
 * messages, through the room's link (link.h).
 *
 * The key is split at the first ':' into the room's action and
 * target ("respond:space:ab12" → action "respond", target "space:ab12"); a
 * key without ':' (or with an empty side) is refused (-1). The room's claim
 * table is keyed by action:target and owned by member *name*, with its own
 * fixed TTL (60 s, renewed by the link every 30 s while held), so:
 *   - not joined → UNAVAILABLE; another member holds a live claim
 *     (space_link_claim_holder) → HELD with that member's name;
 *   - otherwise the claim is sent and we wait the settle time
 *     (COORD_SPACE_SETTLE_MS, coord_space_set_settle_ms) for the room's
 *     "Claim conflict" — the room answers it to the late claimant only —
 *     which the backend hears from the link itself (space_link_watch_claims,
 *     set by coord_new_space, cleared by coord_close): HELD with the
 *     holder; else WON;
 *   - our TTL is kept here: when it runs out the claim is released with a
 *     failed action_result ("claim expired"), so the link stops renewing;
 *   - release sends the room an action_result: coord_release a success
 *     without a link, coord_release_result the outcome it is given;
 *   - renew re-sends the claim and settles the same way; it carries the
 *     time we first sent the claim as "since" (space_link_claim), so a
 *     room that lost the claim while we were away shows its own time;
 *   - at most SPACE_LINK_MAX_CLAIMS claims are held at once (the link's
 *     bound): beyond that UNAVAILABLE;
 *   - counts are kept in process (the room has no counter): a space backend
 *     counts exactly like the local one;
 *   - alone (coord_space_set_alone): in process until a room is joined.
 * The link is borrowed: close the coord before freeing the link.
 */
#ifndef GA_MODULES_SPACE_COORD_SPACE_H
#define GA_MODULES_SPACE_COORD_SPACE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "modules/coord/coord.h"

#define COORD_SPACE_SETTLE_MS 1500

struct space_link;

/* agent_id: our member name in the room (copied). NULL for bad arguments. */
struct coord *coord_new_space(uv_loop_t *loop, struct space_link *link, const char *agent_id);
/* The room said "Claim conflict" for action/target and `holder` holds it
 * (ignored by other backends). The backend's own link watch calls it;
 * exposed for tests. */
void coord_space_claim_lost(struct coord *c, const char *action, const char *target,
                            const char *holder);
/* The settle time (default COORD_SPACE_SETTLE_MS; ignored by other
 * backends). */
void coord_space_set_settle_ms(struct coord *c, int64_t ms);
/* Until the room is joined for the first time, claims are answered in
 * process, as the local backend answers them (WON / HELD, the reason says
 * "local: no shared coordination backend …"; describe says "local (…)").
 * For an agent with no shared backend configured (coord_choose
 * COORD_CHOICE_ALONE: the room only found by discovery, if at all): alone,
 * it answers peers; once a room is joined the room decides, and out of it
 * claims fail closed as before. Default off (the room is required: fail
 * closed until joined). Ignored by other backends. */
void coord_space_set_alone(struct coord *c, bool alone);

#endif
