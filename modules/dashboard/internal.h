/* The dashboard's JSON builders (api.c), shared with the server
 * (dashboard.c). Each returns a new cJSON the caller deletes. */
#ifndef GA_MODULES_DASHBOARD_INTERNAL_H
#define GA_MODULES_DASHBOARD_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "modules/dashboard/dashboard.h"

struct dash_filter {
	size_t limit;         /* 1..DECISION_LOG_RECENT */
	const char *platform; /* NULL: any */
	const char *verdict;
	const char *rule;
	const char *stage;
};

struct dash_stats {
	size_t sse_clients;
	uint64_t sse_dropped;
	uint64_t sse_refused;
	const char *url;
};

cJSON *dash_api_status(const struct dashboard_config *c, const struct dash_stats *s);
cJSON *dash_api_decisions(const struct dashboard_config *c, const struct dash_filter *f);
/* why, in two steps: the read of decisions.jsonl and its backups touches
 * no module (a worker thread runs it: the files may hold tens of MiB); NULL
 * with err when the log could not be read. The finish, on the loop, adds
 * the message from the conversation store. */
cJSON *dash_api_why_read(const char *memory_dir, const char *message_id, struct ga_err *err);
void dash_api_why_finish(const struct dashboard_config *c, cJSON *o);
cJSON *dash_api_conversations(const struct dashboard_config *c);
/* NULL when the conversation is unknown. */
cJSON *dash_api_conversation(const struct dashboard_config *c, const char *key);
cJSON *dash_api_commitments(const struct dashboard_config *c);
cJSON *dash_api_permissions(const struct dashboard_config *c);

#endif
