/*
 * budget — see budget.h.
 *
 * State file "llm_usage", data:
 *   {"days": [{"date": "2026-11-22", "prompt_tokens": 1, "completion_tokens": 2,
 *              "total_tokens": 3, "calls": 1, "denied": 0}, ...]}
 * newest first. Entries that are malformed are skipped, not fatal.
 */
#include "modules/budget/budget.h"

#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"

#define LOG_COMP    "budget"
#define COUNTER_MAX (INT64_MAX / 2)

static int64_t sat_add(int64_t a, int64_t b)
{
	if (b < 0)
		b = 0;
	if (a > COUNTER_MAX - b)
		return COUNTER_MAX;
	return a + b;
}

static bool valid_date(const char *s)
{
	if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return false;
	for (int i = 0; i < 10; i++)
		if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
			return false;
	return true;
}

void budget_init(struct budget *b, const struct state_store *store, int64_t daily_limit)
{
	memset(b, 0, sizeof *b);
	b->store = store;
	b->daily_limit = daily_limit > 0 ? daily_limit : 0;
	if (!store)
		return;
	struct state_load_info info;
	cJSON *data = state_load(store, BUDGET_STATE_NAME, NULL, NULL, &info);
	if (!data)
		return;
	const cJSON *days = cJSON_GetObjectItemCaseSensitive(data, "days");
	const cJSON *d;
	cJSON_ArrayForEach(d, days)
	{
		if (b->n_days >= BUDGET_HISTORY_DAYS)
			break;
		const char *date = json_string_or(d, "date", NULL);
		if (!valid_date(date))
			continue;
		struct budget_day *out = &b->days[b->n_days++];
		memcpy(out->date, date, 11);
		out->prompt_tokens = json_int_or(d, "prompt_tokens", 0);
		out->completion_tokens = json_int_or(d, "completion_tokens", 0);
		out->total_tokens = json_int_or(d, "total_tokens", 0);
		out->calls = json_int_or(d, "calls", 0);
		out->denied = json_int_or(d, "denied", 0);
		if (out->prompt_tokens < 0 || out->completion_tokens < 0 || out->total_tokens < 0 ||
		    out->calls < 0 || out->denied < 0)
			b->n_days--; /* a negative counter is a damaged entry */
	}
	cJSON_Delete(data);
}

static const struct budget_day *find_day(const struct budget *b, const char *date)
{
	for (size_t i = 0; i < b->n_days; i++)
		if (strcmp(b->days[i].date, date) == 0)
			return &b->days[i];
	return NULL;
}

/* Today's entry, created at the front (dropping the oldest) if needed. */
static struct budget_day *today_entry(struct budget *b, int64_t now_ms)
{
	char date[11];
	time_format_date(now_ms, date);
	struct budget_day *d = (struct budget_day *)find_day(b, date);
	if (d)
		return d;
	if (b->n_days == BUDGET_HISTORY_DAYS)
		b->n_days--;
	memmove(&b->days[1], &b->days[0], b->n_days * sizeof b->days[0]);
	b->n_days++;
	memset(&b->days[0], 0, sizeof b->days[0]);
	memcpy(b->days[0].date, date, 11);
	return &b->days[0];
}

void budget_today(const struct budget *b, int64_t now_ms, struct budget_day *out)
{
	char date[11];
	time_format_date(now_ms, date);
	const struct budget_day *d = find_day(b, date);
	if (d) {
		*out = *d;
	} else {
		memset(out, 0, sizeof *out);
		memcpy(out->date, date, 11);
	}
}

bool budget_check(const struct budget *b, int64_t now_ms, bool owner, struct decision *d)
{
	struct decision tmp;
	if (!d)
		d = &tmp;
	d->rule = BUDGET_RULE;
	struct budget_day t;
	budget_today(b, now_ms, &t);
	if (b->daily_limit == 0) {
		d->verdict = VERDICT_PASS;
		snprintf(d->reason, sizeof d->reason,
		         "no daily token budget (LLM_DAILY_TOKEN_BUDGET unset); %lld tokens used "
		         "today",
		         (long long)t.total_tokens);
		return true;
	}
	if (t.total_tokens < b->daily_limit) {
		d->verdict = VERDICT_PASS;
		snprintf(d->reason, sizeof d->reason, "%lld of %lld tokens used today (UTC %s)",
		         (long long)t.total_tokens, (long long)b->daily_limit, t.date);
		return true;
	}
	if (owner) {
		d->verdict = VERDICT_PASS;
		snprintf(d->reason, sizeof d->reason,
		         "daily token budget spent (%lld of %lld), but the owner may always talk "
		         "to the agent",
		         (long long)t.total_tokens, (long long)b->daily_limit);
		return true;
	}
	d->verdict = VERDICT_BLOCK;
	snprintf(d->reason, sizeof d->reason,
	         "daily token budget spent: %lld of %lld tokens used today (UTC %s); only owner "
	         "conversations may call the model until the day ends (raise "
	         "LLM_DAILY_TOKEN_BUDGET to allow more)",
	         (long long)t.total_tokens, (long long)b->daily_limit, t.date);
	return false;
}

static int persist(const struct budget *b, int64_t now_ms, struct ga_err *err)
{
	if (!b->store)
		return 0;
	cJSON *data = cJSON_CreateObject();
	cJSON *days = cJSON_AddArrayToObject(data, "days");
	for (size_t i = 0; i < b->n_days; i++) {
		const struct budget_day *d = &b->days[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "date", d->date);
		cJSON_AddNumberToObject(o, "prompt_tokens", (double)d->prompt_tokens);
		cJSON_AddNumberToObject(o, "completion_tokens", (double)d->completion_tokens);
		cJSON_AddNumberToObject(o, "total_tokens", (double)d->total_tokens);
		cJSON_AddNumberToObject(o, "calls", (double)d->calls);
		cJSON_AddNumberToObject(o, "denied", (double)d->denied);
		cJSON_AddItemToArray(days, o);
	}
	int rc = state_save(b->store, BUDGET_STATE_NAME, data, now_ms, err);
	cJSON_Delete(data);
	return rc;
}

int budget_record(struct budget *b, int64_t now_ms, int64_t prompt_tokens,
                  int64_t completion_tokens, int64_t total_tokens, struct ga_err *err)
{
	struct budget_day *d = today_entry(b, now_ms);
	if (total_tokens <= 0)
		total_tokens = sat_add(prompt_tokens > 0 ? prompt_tokens : 0, completion_tokens);
	d->prompt_tokens = sat_add(d->prompt_tokens, prompt_tokens);
	d->completion_tokens = sat_add(d->completion_tokens, completion_tokens);
	d->total_tokens = sat_add(d->total_tokens, total_tokens);
	d->calls = sat_add(d->calls, 1);
	if (persist(b, now_ms, err) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "token usage not saved", "error",
		       err ? err->msg : "?");
		return -1;
	}
	return 0;
}

void budget_note_denied(struct budget *b, int64_t now_ms)
{
	struct budget_day *d = today_entry(b, now_ms);
	d->denied = sat_add(d->denied, 1);
}

/* 1234567 → "1,234,567" */
static void group(int64_t v, char *out, size_t cap)
{
	char raw[32];
	snprintf(raw, sizeof raw, "%lld", (long long)v);
	size_t n = strlen(raw), j = 0;
	for (size_t i = 0; i < n && j + 2 < cap; i++) {
		if (i > 0 && raw[i - 1] != '-' && (n - i) % 3 == 0)
			out[j++] = ',';
		out[j++] = raw[i];
	}
	out[j] = '\0';
}

void budget_status_line(const struct budget *b, int64_t now_ms, char *buf, size_t cap)
{
	struct budget_day t;
	budget_today(b, now_ms, &t);
	char used[32], limit[32];
	group(t.total_tokens, used, sizeof used);
	const char *denied_sep = t.denied ? ", " : "";
	char denied[48] = "";
	if (t.denied)
		snprintf(denied, sizeof denied, "%lld refused", (long long)t.denied);
	if (b->daily_limit == 0) {
		snprintf(buf, cap,
		         "%s tokens today, %lld calls%s%s (no daily budget: LLM_DAILY_TOKEN_BUDGET "
		         "unset)",
		         used, (long long)t.calls, denied_sep, denied);
		return;
	}
	group(b->daily_limit, limit, sizeof limit);
	long long pct = (long long)(t.total_tokens * 100 / b->daily_limit);
	snprintf(buf, cap, "%s of %s tokens today (%lld%%), %lld calls%s%s%s", used, limit, pct,
	         (long long)t.calls, denied_sep, denied,
	         t.total_tokens >= b->daily_limit ? "; budget spent: only owner conversations "
	                                            "may call the model"
	                                          : "");
}

void budget_status_from_store(const struct state_store *store, int64_t daily_limit, int64_t now_ms,
                              char *buf, size_t cap)
{
	struct budget b;
	budget_init(&b, store, daily_limit);
	budget_status_line(&b, now_ms, buf, cap);
}
