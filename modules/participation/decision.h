/*
 * decision — reading what the model decided in the room (space-validation.md
 * §8.1–§8.2): the `space_decision` tool's arguments (schema in
 * local-tools/tools_space.c), or the same object found in a prose answer,
 * with the commitments it carries checked by modules/commitments
 * (commitment.h, §8.3).
 *
 * Bounds: message ≤ PART_MESSAGE_MAX_BYTES, reason ≤ PART_REASON_MAX_BYTES
 * (longer: the whole decision is refused with the field named); the
 * commitments' own bounds are commitment.h's.
 */
#ifndef GA_MODULES_PARTICIPATION_DECISION_H
#define GA_MODULES_PARTICIPATION_DECISION_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "modules/commitments/commitment.h"

#define PART_MESSAGE_MAX_BYTES (256 * 1024)
#define PART_REASON_MAX_BYTES  (16 * 1024)

struct part_decision {
	bool should_speak;
	char *reason;  /* "" when absent; never NULL after a successful parse */
	char *message; /* NULL when absent */
	struct cmt_list commitments;
	cJSON *adjust;  /* adjustBehavior, a copy; NULL when absent */
	bool from_text; /* read from prose (the §8.1 fallback), not the tool */
};

/* §8.2: the tool's arguments. 0 on success; -1 with err naming the field
 * when the decision as a whole cannot be read (not an object, shouldSpeak
 * missing or not a boolean, reason/message not a string, message too big
 * or not UTF-8). out is cleared first. */
int part_decision_from_json(const cJSON *args, bool social_only, struct part_decision *out,
                            struct ga_err *err);

/* §8.1 fallback: the model answered in text. Takes the span from the first
 * '{' to the last '}' and reads it as above. -1 with err when there is no
 * such span or it is not JSON. */
int part_decision_from_text(const char *text, size_t len, bool social_only,
                            struct part_decision *out, struct ga_err *err);

void part_decision_clear(struct part_decision *d);

#endif
