/*
 * bluesky policy — the pure rules of the agent's life on Bluesky
 * (runtime-bluesky.md §6, §7.1, §7.3, §7.4; seed 004). One file of rules per
 * file of the engine that acts on them:
 *
 *   policy.h        the pacing of every action (bsky.c: likes, the port);
 *   policy_notes.h  notifications and replies (bsky_notes.c);
 *   policy_feed.h   feed hygiene (bsky_feed.c);
 *   policy_posts.h  expression and rituals (bsky_posts.c);
 *   policy_peers.h  peer identity posts (bsky_peers.c);
 *   policy_thread.h a reply the agent starts in a thread it knows
 *                   (bsky_thread.c).
 *
 * This header includes the five others, so one include brings every rule.
 *
 * Everything here is a pure function of its arguments: no I/O, no clock, no
 * globals. Time is the caller's epoch ms. Decisions come back as struct
 * decision {verdict, rule, reason} so the decision log and `general-agent
 * why` can explain each one.
 */
#ifndef GA_MODULES_BLUESKY_POLICY_H
#define GA_MODULES_BLUESKY_POLICY_H

#include <stdint.h>

#include "modules/bluesky/policy_feed.h"
#include "modules/bluesky/policy_notes.h"
#include "modules/bluesky/policy_peers.h"
#include "modules/bluesky/policy_posts.h"
#include "modules/bluesky/policy_thread.h"

/* ---- pacing (§6.11) -------------------------------------------------------- */

enum bsky_action { BSKY_ACT_POST, BSKY_ACT_REPLY, BSKY_ACT_LIKE, BSKY_ACT_FOLLOW, BSKY_ACT_COUNT };
#define BSKY_PACE_POST_MS   (1800LL * 1000)
#define BSKY_PACE_REPLY_MS  (60LL * 1000)
#define BSKY_PACE_LIKE_MS   (45LL * 1000)
#define BSKY_PACE_FOLLOW_MS (3600LL * 1000)
#define BSKY_PACE_ANY_MS    (10LL * 1000)
struct bsky_pacing {
	int64_t last_ms[BSKY_ACT_COUNT]; /* 0 = never */
	int64_t last_any_ms;
	int64_t gap_ms[BSKY_ACT_COUNT]; /* per type */
	int64_t any_gap_ms;
};
/* The defaults above (tests and the integration harness shrink them). */
void bsky_pacing_init(struct bsky_pacing *p);
/* Milliseconds to wait before an action of this type (0 = now): the larger
 * of the type's gap and the shared gap. */
int64_t bsky_pacing_wait(const struct bsky_pacing *p, enum bsky_action a, int64_t now_ms);
void bsky_pacing_note(struct bsky_pacing *p, enum bsky_action a, int64_t now_ms);
const char *bsky_action_name(enum bsky_action a);

#endif
