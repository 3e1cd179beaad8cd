/* The owner's tool calls: the room through the pipeline, the rest to the
 * ledger. See actions.h. */
#include "modules/pipeline/actions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/outbound/outbound.h"

struct say_wait {
	struct pipeline_actions *a;
	char target[PIPELINE_TARGET_MAX];
};

static void say_done(void *ud, const struct decision *final, const char *artifact)
{
	struct say_wait *w = ud;
	struct pipeline_actions *a = w->a;
	char msg[DECISION_REASON_MAX + PIPELINE_TARGET_MAX + 128];
	if (final && final->verdict == VERDICT_SENT) {
		snprintf(msg, sizeof msg, "said in the room (%s)", w->target);
	} else {
		const char *denial = a->outbound && final && final->rule &&
		                                     strcmp(final->rule, "send_permission") == 0
		                             ? outbound_last_denial(a->outbound)
		                             : NULL;
		if (denial)
			snprintf(msg, sizeof msg, "not said in the room: %s", denial);
		else
			snprintf(msg, sizeof msg, "not said in the room (%s): %s",
			         final && final->rule ? final->rule : "?",
			         final ? final->reason : "no outcome");
	}
	if (a->notify)
		a->notify(a->ud, msg);
	free(w);
}

int pipeline_actions_call(void *ud, const char *action, const cJSON *params,
                          struct compose_call *call)
{
	struct pipeline_actions *a = ud;
	return a->route ? a->route(a->route_ud, action, params, call) : 0;
}

int pipeline_actions_enqueue(void *ud, const char *action, const cJSON *params, char *result,
                             size_t cap, struct ga_err *err)
{
	struct pipeline_actions *a = ud;
	if (strcmp(action, "space_say") == 0) {
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(params, "text");
		if (!cJSON_IsString(text) || !text->valuestring[0])
			return err_set(err, "'text' is empty");
		struct say_wait *w = xcalloc(1, sizeof *w);
		w->a = a;
		if (!a->pipeline || !a->room_target ||
		    a->room_target(a->ud, w->target, sizeof w->target) != 0) {
			free(w);
			return err_set(err, "not in an agent-space room right now");
		}
		/* The result first: say_done may run (and free w) before
		 * pipeline_say returns. */
		snprintf(result, cap,
		         "handed to the room's outbound (%s); the owner will see whether it was "
		         "sent",
		         w->target);
		char target[PIPELINE_TARGET_MAX];
		memcpy(target, w->target, sizeof target);
		/* The owner's word has chain 0; what the agent says for it, 1. */
		pipeline_say(a->pipeline, CONV_PLATFORM_SPACE, target, "owner", text->valuestring,
		             strlen(text->valuestring), 1, NULL, say_done, w);
		return 0;
	}
	if (!a->ledger)
		return err_set(err, "no commitment ledger");
	char id[LEDGER_ID_MAX];
	int rc = ledger_add(a->ledger, action, "owner", params, time_now_ms(), id, err);
	if (rc < 0)
		return -1;
	if (rc == LEDGER_DUPLICATE)
		snprintf(result, cap, "already queued earlier (key %s); not queued twice",
		         id + strlen(id) - 16);
	else
		snprintf(result, cap,
		         "queued as %s; it will be carried out by the commitment pipeline", id);
	return 0;
}
