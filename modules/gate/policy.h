/*
 * gate policy — the shared gate's configuration for one agent: the numbers
 * from its environment (.env: MAX_ACL, GATE_*, MAX_BOT_CHAIN_LENGTH) and the
 * Social Mechanics thresholds from its SELF.md, and where those apply.
 *
 * Where Social Mechanics apply (gate_policy_mechanics_platforms): GitHub
 * only. Bluesky decides its own (its platform gate counts replies and depth
 * from the conversation store), so a second counter in the shared gate
 * would judge the same thread twice; the room is one long conversation,
 * where a per-conversation reply cap would silence the agent for good.
 *
 * Pure: fills a struct gate_config, borrows cfg (self_name points into it,
 * so cfg must outlive the config's use) and copies the numbers of m.
 */
#ifndef GA_MODULES_GATE_POLICY_H
#define GA_MODULES_GATE_POLICY_H

#include "common/config.h"
#include "modules/gate/gate.h"
#include "modules/identity/self.h"

/* The platforms (bits 1u << enum conv_platform) whose messages the shared
 * gate's social_mechanics rule judges. */
unsigned gate_policy_mechanics_platforms(void);

/* gate_config_defaults, then cfg's numbers and name, then m's thresholds
 * (m NULL: Social Mechanics off) on gate_policy_mechanics_platforms(). */
void gate_policy_config(struct gate_config *g, const struct ga_config *cfg,
                        const struct self_mechanics *m);

#endif
