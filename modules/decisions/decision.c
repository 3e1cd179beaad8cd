/* decision — names, formatting and the goes-on rule (see decision.h). */
#include "modules/decisions/decision.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

static const char *const verdict_names[VERDICT_COUNT] = {
        [VERDICT_PASS] = "pass",       [VERDICT_BLOCK] = "block",     [VERDICT_REACT] = "react",
        [VERDICT_CONTEXT] = "context", [VERDICT_APPROVE] = "approve", [VERDICT_EDIT] = "edit",
        [VERDICT_REJECT] = "reject",   [VERDICT_SENT] = "sent",       [VERDICT_DROP] = "drop",
        [VERDICT_FAIL] = "fail",       [VERDICT_INFO] = "info",
};

static const char *const stage_names[STAGE_COUNT] = {
        [STAGE_EVENT] = "event",         [STAGE_GATE] = "gate",         [STAGE_COMPOSE] = "compose",
        [STAGE_VALIDATOR] = "validator", [STAGE_OUTBOUND] = "outbound", [STAGE_RECORD] = "record",
};

const char *decision_verdict_name(enum decision_verdict v)
{
	if ((int)v < 0 || v >= VERDICT_COUNT)
		return "unknown";
	return verdict_names[v];
}

int decision_verdict_parse(const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < VERDICT_COUNT; i++)
		if (strcmp(s, verdict_names[i]) == 0)
			return i;
	return -1;
}

const char *decision_stage_name(enum decision_stage s)
{
	if ((int)s < 0 || s >= STAGE_COUNT)
		return "unknown";
	return stage_names[s];
}

int decision_stage_parse(const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < STAGE_COUNT; i++)
		if (strcmp(s, stage_names[i]) == 0)
			return i;
	return -1;
}

struct decision *decision_set(struct decision *d, enum decision_verdict v, const char *rule,
                              const char *fmt, ...)
{
	d->verdict = v;
	d->rule = rule ? rule : "";
	d->reason[0] = '\0';
	if (!fmt)
		return d;
	char buf[DECISION_REASON_MAX * 2];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return d;
	size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
	/* buf[len] is valid to read ('\0' or a byte of the formatted text). */
	len = utf8_cut(buf, len, DECISION_REASON_MAX - 1);
	memcpy(d->reason, buf, len);
	d->reason[len] = '\0';
	return d;
}

bool decision_goes_on(enum decision_verdict v)
{
	return v == VERDICT_PASS || v == VERDICT_APPROVE || v == VERDICT_EDIT || v == VERDICT_SENT;
}
