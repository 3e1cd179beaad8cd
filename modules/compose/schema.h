/*
 * schema — the JSON Schema subset our tool definitions use, for checking
 * the arguments a model sends before a handler sees them.
 *
 * Supported keywords: type (object, string, integer, number, boolean,
 * array, null, or an array of these), properties, required,
 * additionalProperties: false, enum, items, minLength / maxLength (in Unicode
 * code points), minimum / maximum, minItems / maxItems. Anything else is
 * ignored (so a richer schema still works; it is just checked less).
 *
 * Errors name the field by its path, so the model can correct itself:
 *   "field 'commitments[0].type' must be one of: create_issue, create_plan"
 *   "field 'text' is required"
 *   "field 'issue_number' must be an integer, got a string"
 *
 * Bounds: nesting deeper than SCHEMA_MAX_DEPTH is an error (a hostile
 * argument object cannot exhaust the stack).
 */
#ifndef GA_MODULES_COMPOSE_SCHEMA_H
#define GA_MODULES_COMPOSE_SCHEMA_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define SCHEMA_MAX_DEPTH 32

/* Returns 0 when value satisfies schema, else -1 with msg naming the first
 * problem found. */
int schema_validate(const cJSON *schema, const cJSON *value, char *msg, size_t cap);

#endif
