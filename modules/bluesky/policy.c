/* The pacing of Bluesky actions. See policy.h. */
#include "modules/bluesky/policy.h"

#include <string.h>

/* ---- pacing ------------------------------------------------------------------------------ */

void bsky_pacing_init(struct bsky_pacing *p)
{
	memset(p, 0, sizeof *p);
	p->gap_ms[BSKY_ACT_POST] = BSKY_PACE_POST_MS;
	p->gap_ms[BSKY_ACT_REPLY] = BSKY_PACE_REPLY_MS;
	p->gap_ms[BSKY_ACT_LIKE] = BSKY_PACE_LIKE_MS;
	p->gap_ms[BSKY_ACT_FOLLOW] = BSKY_PACE_FOLLOW_MS;
	p->any_gap_ms = BSKY_PACE_ANY_MS;
}

int64_t bsky_pacing_wait(const struct bsky_pacing *p, enum bsky_action a, int64_t now_ms)
{
	int64_t w = 0;
	if ((unsigned)a >= BSKY_ACT_COUNT)
		return 0;
	if (p->last_ms[a] && p->last_ms[a] + p->gap_ms[a] > now_ms)
		w = p->last_ms[a] + p->gap_ms[a] - now_ms;
	if (p->last_any_ms && p->last_any_ms + p->any_gap_ms > now_ms &&
	    p->last_any_ms + p->any_gap_ms - now_ms > w)
		w = p->last_any_ms + p->any_gap_ms - now_ms;
	return w;
}

void bsky_pacing_note(struct bsky_pacing *p, enum bsky_action a, int64_t now_ms)
{
	if ((unsigned)a >= BSKY_ACT_COUNT)
		return;
	p->last_ms[a] = now_ms;
	p->last_any_ms = now_ms;
}

const char *bsky_action_name(enum bsky_action a)
{
	static const char *n[] = {"post", "reply", "like", "follow"};
	return (unsigned)a < BSKY_ACT_COUNT ? n[a] : "?";
}
