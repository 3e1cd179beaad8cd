/* The dashboard's JSON API bodies (see dashboard.h for the routes). Pure
 * reads of the borrowed modules; the server redacts and sends them. */
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "modules/budget/budget.h"
#include "modules/commitments/ledger.h"
#include "modules/conversation/event.h"
#include "modules/conversation/store.h"
#include "modules/dashboard/internal.h"
#include "modules/decisions/log.h"
#include "modules/outbound/audit.h"
#include "modules/outbound/perms.h"
#include "modules/pipeline/pipeline.h"

cJSON *dash_api_status(const struct dashboard_config *c, const struct dash_stats *s)
{
	cJSON *o = c->status_json ? c->status_json(c->ud) : NULL;
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		o = cJSON_CreateObject();
	}
	char iso[TIME_ISO_LEN + 1];
	int64_t now = time_now_ms();
	cJSON_DeleteItemFromObjectCaseSensitive(o, "agent");
	cJSON_AddStringToObject(o, "agent", c->agent_name ? c->agent_name : "");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "now");
	cJSON_AddStringToObject(o, "now", time_format_iso(now, iso));
	if (c->started_ms > 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(o, "uptimeMs");
		cJSON_AddNumberToObject(o, "uptimeMs", (double)(now - c->started_ms));
		if (!cJSON_GetObjectItemCaseSensitive(o, "startedAt"))
			cJSON_AddStringToObject(o, "startedAt",
			                        time_format_iso(c->started_ms, iso));
	}
	if (c->pipeline) {
		cJSON_DeleteItemFromObjectCaseSensitive(o, "paused");
		cJSON_AddBoolToObject(o, "paused", pipeline_paused(c->pipeline));
		cJSON_DeleteItemFromObjectCaseSensitive(o, "jobsInFlight");
		cJSON_AddNumberToObject(o, "jobsInFlight", (double)pipeline_jobs(c->pipeline));
		cJSON_DeleteItemFromObjectCaseSensitive(o, "lastActivityBy");
		cJSON *per = cJSON_AddObjectToObject(o, "lastActivityBy");
		for (int i = 0; i < CONV_PLATFORM_COUNT; i++) {
			int64_t t = pipeline_last_event_ms_of(c->pipeline, (enum conv_platform)i);
			if (t)
				cJSON_AddStringToObject(per,
				                        conv_platform_name((enum conv_platform)i),
				                        time_format_iso(t, iso));
		}
	}
	if (c->budget) {
		struct budget_day day;
		budget_today(c->budget, now, &day);
		char line[200];
		budget_status_line(c->budget, now, line, sizeof line);
		cJSON_DeleteItemFromObjectCaseSensitive(o, "tokenBudget");
		cJSON *b = cJSON_AddObjectToObject(o, "tokenBudget");
		cJSON_AddNumberToObject(b, "dailyLimit", (double)c->budget->daily_limit);
		cJSON_AddNumberToObject(b, "totalTokens", (double)day.total_tokens);
		cJSON_AddNumberToObject(b, "promptTokens", (double)day.prompt_tokens);
		cJSON_AddNumberToObject(b, "completionTokens", (double)day.completion_tokens);
		cJSON_AddNumberToObject(b, "calls", (double)day.calls);
		cJSON_AddNumberToObject(b, "denied", (double)day.denied);
		cJSON_AddStringToObject(b, "summary", line);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(o, "dashboard");
	cJSON *d = cJSON_AddObjectToObject(o, "dashboard");
	cJSON_AddStringToObject(d, "url", s->url ? s->url : "");
	cJSON_AddNumberToObject(d, "sseClients", (double)s->sse_clients);
	cJSON_AddNumberToObject(d, "sseMax", DASHBOARD_MAX_SSE_CLIENTS);
	cJSON_AddNumberToObject(d, "sseDropped", (double)s->sse_dropped);
	cJSON_AddNumberToObject(d, "sseRefused", (double)s->sse_refused);
	cJSON_AddBoolToObject(d, "tokenRequired", c->token && *c->token);
	return o;
}

struct ring_walk {
	const struct dash_filter *f;
	cJSON *arr;
};

static bool keep(const struct dash_filter *f, const struct decision_record *r)
{
	if (f->platform && strcmp(f->platform, r->platform ? r->platform : "") != 0)
		return false;
	if (f->verdict && strcmp(f->verdict, decision_verdict_name(r->decision.verdict)) != 0)
		return false;
	if (f->rule && strcmp(f->rule, r->decision.rule ? r->decision.rule : "") != 0)
		return false;
	if (f->stage && strcmp(f->stage, decision_stage_name(r->stage)) != 0)
		return false;
	return true;
}

static void ring_cb(void *ud, const struct decision_record *r)
{
	struct ring_walk *w = ud;
	if (keep(w->f, r))
		cJSON_AddItemToArray(w->arr, decision_record_to_json(r));
}

cJSON *dash_api_decisions(const struct dashboard_config *c, const struct dash_filter *f)
{
	struct ring_walk w = {.f = f, .arr = cJSON_CreateArray()};
	/* Filter over the whole ring, then keep the newest `limit`. */
	decision_log_recent(c->dlog, 0, ring_cb, &w);
	while ((size_t)cJSON_GetArraySize(w.arr) > f->limit)
		cJSON_DeleteItemFromArray(w.arr, 0);
	return w.arr;
}

struct why_walk {
	cJSON *arr;
	size_t dropped;
	char conversation[DECISION_LOG_FIELD_MAX_BYTES + 1];
};

static int why_cb(void *ud, const struct decision_record *r)
{
	struct why_walk *w = ud;
	if ((size_t)cJSON_GetArraySize(w->arr) >= DASHBOARD_WHY_MAX) {
		cJSON_DeleteItemFromArray(w->arr, 0);
		w->dropped++;
	}
	cJSON_AddItemToArray(w->arr, decision_record_to_json(r));
	if (r->conversation && *r->conversation)
		snprintf(w->conversation, sizeof w->conversation, "%s", r->conversation);
	return 0;
}

static cJSON *message_json(const struct conv_message *m)
{
	char iso[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", m->message_id);
	if (m->parent_id)
		cJSON_AddStringToObject(o, "parentId", m->parent_id);
	cJSON_AddStringToObject(o, "authorName", m->author_name);
	cJSON_AddStringToObject(o, "authorKind", conv_author_kind_name(m->author_kind));
	cJSON_AddBoolToObject(o, "isBot", m->is_bot);
	cJSON_AddNumberToObject(o, "chain", (double)m->chain);
	/* A text with NUL bytes shows up to the first one; the full bytes
	 * are in /api/conversations/<key> (textHex). */
	cJSON *t = cJSON_CreateString(m->text ? m->text : "");
	if (!t)
		t = cJSON_CreateString("");
	cJSON_AddItemToObject(o, "text", t);
	cJSON_AddStringToObject(o, "time", time_format_iso(m->time_ms, iso));
	cJSON_AddBoolToObject(o, "answered", m->answered);
	return o;
}

cJSON *dash_api_why_read(const char *memory_dir, const char *message_id, struct ga_err *err)
{
	struct why_walk w = {.arr = cJSON_CreateArray()};
	if (memory_dir && decision_log_read(memory_dir, message_id, why_cb, &w, err) != 0) {
		cJSON_Delete(w.arr);
		return NULL;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "messageId", message_id);
	cJSON_AddItemToObject(o, "decisions", w.arr);
	cJSON_AddNumberToObject(o, "olderLeftOut", (double)w.dropped);
	if (w.conversation[0])
		cJSON_AddStringToObject(o, "conversation", w.conversation);
	return o;
}

void dash_api_why_finish(const struct dashboard_config *c, cJSON *o)
{
	const char *conv = json_string_or(o, "conversation", NULL);
	const char *id = json_string_or(o, "messageId", NULL);
	const struct conv_message *m = NULL;
	if (c->pipeline && conv && id)
		m = conv_store_find(pipeline_store(c->pipeline), conv, id);
	if (m)
		cJSON_AddItemToObject(o, "message", message_json(m));
}

cJSON *dash_api_conversations(const struct dashboard_config *c)
{
	char iso[TIME_ISO_LEN + 1];
	cJSON *arr = cJSON_CreateArray();
	if (!c->pipeline)
		return arr;
	const struct conv_store *s = pipeline_store(c->pipeline);
	size_t n = conv_store_count(s);
	for (size_t i = 0; i < n; i++) {
		size_t nm = 0;
		int64_t last = 0;
		const char *key = conv_store_key_at(s, i, &nm, &last);
		if (!key)
			break;
		cJSON *o = cJSON_CreateObject();
		cJSON *k = cJSON_CreateString(key);
		cJSON_AddItemToObject(o, "key", k ? k : cJSON_CreateString(""));
		cJSON_AddNumberToObject(o, "messages", (double)nm);
		cJSON_AddStringToObject(o, "last", time_format_iso(last, iso));
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

cJSON *dash_api_conversation(const struct dashboard_config *c, const char *key)
{
	if (!c->pipeline)
		return NULL;
	return conv_store_to_json(pipeline_store(c->pipeline), key);
}

/* A commitment's artifact: the link its fulfilment left in its params
 * (url, html_url or artifact), when it is an http(s) URL. */
static const char *artifact_of(const cJSON *params)
{
	static const char *const keys[] = {"artifact", "html_url", "url", NULL};
	for (const char *const *k = keys; *k; k++) {
		const char *v = json_string_or(params, *k, NULL);
		if (v && (strncmp(v, "https://", 8) == 0 || strncmp(v, "http://", 7) == 0))
			return v;
	}
	return NULL;
}

static void commitment_cb(void *ud, const struct ledger_entry *e)
{
	char iso[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", e->id);
	cJSON_AddStringToObject(o, "action", e->action);
	cJSON_AddStringToObject(o, "source", e->source);
	cJSON_AddStringToObject(o, "status", ledger_status_name(e->status));
	cJSON_AddBoolToObject(o, "open", ledger_status_open(e->status));
	cJSON_AddNumberToObject(o, "attempts", e->attempts);
	cJSON_AddStringToObject(o, "createdAt", time_format_iso(e->created_ms, iso));
	cJSON_AddStringToObject(o, "updatedAt", time_format_iso(e->updated_ms, iso));
	if (e->error)
		cJSON_AddStringToObject(o, "error", e->error);
	if (e->params)
		cJSON_AddItemToObject(o, "params", cJSON_Duplicate(e->params, 1));
	const char *a = e->params ? artifact_of(e->params) : NULL;
	if (a)
		cJSON_AddStringToObject(o, "artifact", a);
	else
		cJSON_AddNullToObject(o, "artifact");
	cJSON_AddItemToArray(ud, o);
}

cJSON *dash_api_commitments(const struct dashboard_config *c)
{
	cJSON *arr = cJSON_CreateArray();
	if (c->ledger)
		ledger_each(c->ledger, commitment_cb, arr);
	return arr;
}

cJSON *dash_api_permissions(const struct dashboard_config *c)
{
	cJSON *o = cJSON_CreateObject();
	struct ga_err err = {{0}};
	struct perms *p = perms_open(c->memory_dir, &err);
	cJSON_AddStringToObject(o, "mode", perms_mode_name(perms_mode_of(p)));
	const char *broken = perms_broken(p);
	if (broken)
		cJSON_AddStringToObject(o, "broken", broken);
	else
		cJSON_AddNullToObject(o, "broken");
	static const char *const names[] = {"allowlist", "denylist"};
	for (int l = 0; l < 2; l++) {
		cJSON *arr = cJSON_AddArrayToObject(o, names[l]);
		size_t n = perms_count(p, (enum perms_list)l);
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(
			        arr, cJSON_CreateString(perms_pattern(p, (enum perms_list)l, i)));
	}
	perms_free(p);
	cJSON_AddItemToObject(o, "audit", audit_tail(c->memory_dir, DASHBOARD_AUDIT_TAIL));
	return o;
}
