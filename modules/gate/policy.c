/* gate policy — the gate's configuration from .env and SELF.md (policy.h). */
#include "modules/gate/policy.h"

unsigned gate_policy_mechanics_platforms(void)
{
	return 1u << CONV_PLATFORM_GITHUB;
}

void gate_policy_config(struct gate_config *g, const struct ga_config *cfg,
                        const struct self_mechanics *m)
{
	gate_config_defaults(g);
	g->max_acl = cfg->max_acl;
	g->max_events = (int)cfg->gate_max_events;
	g->window_ms = cfg->gate_window_ms;
	g->cooldown_ms = cfg->gate_cooldown_ms;
	g->max_bot_chain = (int)cfg->max_bot_chain_length;
	g->self_name = cfg->agent_name;
	if (m) {
		g->max_replies_per_conversation = m->max_replies_before_exit;
		g->max_thread_depth = m->max_thread_depth;
	}
	g->mechanics_platforms = gate_policy_mechanics_platforms();
}
