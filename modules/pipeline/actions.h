/*
 * actions — where the owner's tool calls go (the tools_sink of
 * local-tools/tools.h, wired by the daemon):
 *   - space_say {text}: through the message pipeline to the room
 *     (pipeline_say: validator → send permissions → dedup → the room), with
 *     chain 1 (the owner's word has chain 0; ours answers it). The model is
 *     told it was handed over; the outcome (sent, or refused with the
 *     reason — a denied target prints the permission error) reaches the
 *     owner through notify() when it is known;
 *   - an action a service answers later (the workspace tools: a GitHub
 *     read) goes to the route the service set (pipeline_actions_call, the
 *     sink's call hook);
 *   - everything else: a commitment in the ledger (modules/commitments),
 *     carried out by the commitment pipeline.
 * Borrowed: the pipeline and the ledger must outlive the sink's use.
 */
#ifndef GA_MODULES_PIPELINE_ACTIONS_H
#define GA_MODULES_PIPELINE_ACTIONS_H

#include <stddef.h>

#include "common/err.h"
#include "modules/commitments/ledger.h"
#include "modules/pipeline/pipeline.h"

struct compose_call;
struct outbound;

struct pipeline_actions {
	struct pipeline *pipeline;
	struct ledger *ledger;
	struct outbound *outbound; /* for the text of a permission refusal; may be NULL */
	/* The room's target key ("space:<room>"); -1 when not in a room. */
	int (*room_target)(void *ud, char *buf, size_t cap);
	/* Tells the owner how an action ended. */
	void (*notify)(void *ud, const char *text);
	void *ud;
	/* Actions answered later, by the service that set it (may be NULL):
	 * 1 when it took the call, 0 when the action is not its. */
	int (*route)(void *route_ud, const char *action, const cJSON *params,
	             struct compose_call *call);
	void *route_ud;
};

/* The tools_call_fn (the sink's call hook): ud is a struct
 * pipeline_actions *; the route's answer, 0 without one. */
int pipeline_actions_call(void *ud, const char *action, const cJSON *params,
                          struct compose_call *call);

/* The tools_enqueue_fn: ud is a struct pipeline_actions *. */
int pipeline_actions_enqueue(void *ud, const char *action, const cJSON *params, char *result,
                             size_t cap, struct ga_err *err);

#endif
