/*
 * validator_bridge — a tick's facts as the validator's context (§9 checks
 * 7, 9, 12–14 read them). See participation.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/participation/participation.h"
#include "modules/validator/validator.h"

void part_validator_context(const struct part_tick_out *t, size_t n_commitments,
                            struct validator_context *ctx)
{
	ctx->platform = VALIDATOR_PLATFORM_SPACE;
	ctx->mode = t->mode == PART_MODE_ACTION ? VALIDATOR_MODE_ACTION : VALIDATOR_MODE_DISCUSSION;
	ctx->role = t->own.role == PART_ROLE_ACTOR      ? VALIDATOR_ROLE_ACTOR
	            : t->own.role == PART_ROLE_REVIEWER ? VALIDATOR_ROLE_REVIEWER
	                                                : VALIDATOR_ROLE_OBSERVER;
	ctx->is_action_owner = t->own.is_owner;
	/* Check 12 is about an open request only: a fulfilled one no longer
	 * forbids others from promising things. */
	ctx->pending_request = t->request_open ? t->request : NULL;
	ctx->detected_repo = t->repo;
	ctx->connected_agents = t->own.n_agents;
	ctx->agent_msgs_since_host = t->agent_msgs_since_host;
	ctx->own_msgs = t->own_msgs_since_host;
	ctx->n_commitments = n_commitments;
}
