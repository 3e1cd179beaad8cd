/*
 * budget — daily token accounting for model calls (LLM_DAILY_TOKEN_BUDGET).
 *
 * Token usage reported by the model is added to the current UTC day and
 * persisted in the state file "llm_usage" (modules/state), so a restart
 * does not reset the day's spending. Before each call, budget_check()
 * decides: within the budget (or no budget set) → allow; past it → deny,
 * except owner conversations, which may always call the model (the owner
 * must be able to talk to the agent to fix things).
 *
 * Policy is pure: budget_check() and the day arithmetic take now_ms and
 * touch no clock and no disk. budget_record() is the one function that
 * writes (through state_save, atomically).
 *
 * Bounds: BUDGET_HISTORY_DAYS days are kept (the oldest are dropped);
 * counters saturate at INT64_MAX / 2 rather than overflow.
 */
#ifndef GA_MODULES_BUDGET_BUDGET_H
#define GA_MODULES_BUDGET_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "modules/decisions/decision.h"
#include "modules/state/state.h"

#define BUDGET_STATE_NAME   "llm_usage"
#define BUDGET_HISTORY_DAYS 14
#define BUDGET_RULE         "daily_token_budget"

struct budget_day {
	char date[11]; /* "YYYY-MM-DD" (UTC) */
	int64_t prompt_tokens;
	int64_t completion_tokens;
	int64_t total_tokens;
	int64_t calls;
	int64_t denied; /* calls refused because of the budget */
};

struct budget {
	const struct state_store *store;             /* borrowed; NULL = memory only */
	int64_t daily_limit;                         /* total tokens per UTC day; 0 = no limit */
	struct budget_day days[BUDGET_HISTORY_DAYS]; /* days[0] is the most recent */
	size_t n_days;
};

/* Loads the persisted usage (a missing, reset or corrupt file starts from
 * zero; modules/state/state.h says how each is reported). store may be NULL. */
void budget_init(struct budget *b, const struct state_store *store, int64_t daily_limit);

/* Returns true when the call may go ahead; d (may be NULL) says why, in
 * the one decision shape of every stage (modules/decisions): verdict PASS or
 * BLOCK, rule "daily_token_budget", the reason with the numbers. */
bool budget_check(const struct budget *b, int64_t now_ms, bool owner, struct decision *d);

/* Adds one call's usage to today and persists. Returns 0, or -1 with err
 * when the state file could not be written (the in-memory count is kept). */
int budget_record(struct budget *b, int64_t now_ms, int64_t prompt_tokens,
                  int64_t completion_tokens, int64_t total_tokens, struct ga_err *err);

/* Counts a refused call (shown in status). Not persisted on its own. */
void budget_note_denied(struct budget *b, int64_t now_ms);

/* Today's counters (zeros when nothing was spent today). */
void budget_today(const struct budget *b, int64_t now_ms, struct budget_day *out);

/* One line for doctor and status, e.g.
 * "12,345 of 200,000 tokens today (6%), 14 calls" or
 * "12,345 tokens today, 14 calls (no daily budget: LLM_DAILY_TOKEN_BUDGET unset)". */
void budget_status_line(const struct budget *b, int64_t now_ms, char *buf, size_t cap);

/* Reads the usage without a running daemon (for `status`): same as
 * budget_init + budget_status_line. */
void budget_status_from_store(const struct state_store *store, int64_t daily_limit, int64_t now_ms,
                              char *buf, size_t cap);

#endif
