/*
 * decision — the one answer every stage of the message pipeline gives:
 * {verdict, rule, reason} (DESIGN.md "The path every message walks").
 *
 * The gate, the budget, the claim, the validator, outbound and the record
 * all return this shape, so the decision log, `general-agent why` and the
 * dashboard can explain every step in the same words.
 *
 *   verdict  what happened: a fixed, small vocabulary (enum decision_verdict);
 *   rule     which rule decided, a stable snake_case identifier a person
 *            can grep for ("chain_length", "self", "send_permission");
 *   reason   one sentence with the numbers that mattered ("chain 5 > MAX_ACL
 *            4: blocked, not even a reaction").
 *
 * A decision is a value: no allocation, copy it freely. rule must be a
 * string with static storage (a literal); reason is cut at
 * DECISION_REASON_MAX - 1 bytes (on a UTF-8 boundary).
 */
#ifndef GA_MODULES_DECISIONS_DECISION_H
#define GA_MODULES_DECISIONS_DECISION_H

#include <stdbool.h>
#include <stddef.h>

#define DECISION_REASON_MAX 320

enum decision_verdict {
	VERDICT_PASS,    /* go on to the next stage */
	VERDICT_BLOCK,   /* stop here; nothing is sent, not even a reaction */
	VERDICT_REACT,   /* stop composing; a reaction (like) at most */
	VERDICT_CONTEXT, /* kept as context for later, not a trigger */
	VERDICT_APPROVE, /* the validator approved the candidate as written */
	VERDICT_EDIT,    /* the candidate was changed (trimmed, courtesy added) */
	VERDICT_REJECT,  /* the validator (or moderation) rejected the candidate */
	VERDICT_SENT,    /* the side effect happened */
	VERDICT_DROP,    /* outbound dropped it (dedup, permission, limit) */
	VERDICT_FAIL,    /* something broke (the platform said no, a timeout) */
	VERDICT_INFO,    /* a note for the story (recorded, nothing to compose) */
	VERDICT_COUNT,
};

enum decision_stage {
	STAGE_EVENT,
	STAGE_GATE,
	STAGE_COMPOSE,
	STAGE_VALIDATOR,
	STAGE_OUTBOUND,
	STAGE_RECORD,
	STAGE_COUNT,
};

struct decision {
	enum decision_verdict verdict;
	const char *rule; /* static string */
	char reason[DECISION_REASON_MAX];
};

/* "pass", "block", ... and back; -1 for an unknown name. */
const char *decision_verdict_name(enum decision_verdict v);
int decision_verdict_parse(const char *s);
/* "event", "gate", ... and back; -1 for an unknown name. */
const char *decision_stage_name(enum decision_stage s);
int decision_stage_parse(const char *s);

/* Fills d; reason is printf-formatted and cut on a UTF-8 boundary.
 * Returns d for chaining. */
struct decision *decision_set(struct decision *d, enum decision_verdict v, const char *rule,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* True for the verdicts that let a message go on (pass, approve, edit, sent). */
bool decision_goes_on(enum decision_verdict v);

#endif
