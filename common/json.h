/*
 * json — typed access to cJSON objects with errors that name the field.
 *
 * Getters come in two flavours:
 *   json_get_*(obj, "name", &out, err)  required: -1 and err = "field 'name'
 *                                        is missing" / "field 'name' must be a
 *                                        string" when absent or mistyped.
 *   json_*_or(obj, "name", def)         optional: def when absent or mistyped.
 * `obj` may be NULL or a non-object (treated as "missing" everywhere).
 * Returned strings and child pointers are borrowed from `obj`.
 *
 * Integers: a JSON number that is integral and fits in int64 (|v| <= 2^53 so
 * doubles are exact). 1.5 or 1e300 → "must be an integer".
 */
#ifndef GA_COMMON_JSON_H
#define GA_COMMON_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Parses exactly `len` bytes (need not be NUL-terminated). Trailing
 * non-whitespace is an error. Nesting deeper than JSON_MAX_DEPTH is an error
 * (cJSON's own limit is CJSON_NESTING_LIMIT = 1000). err names the byte
 * offset of the problem. Caller frees with cJSON_Delete. */
#define JSON_MAX_DEPTH 128
cJSON *json_parse(const char *buf, size_t len, struct ga_err *err);

int json_get_string(const cJSON *obj, const char *field, const char **out, struct ga_err *err);
int json_get_int(const cJSON *obj, const char *field, int64_t *out, struct ga_err *err);
int json_get_double(const cJSON *obj, const char *field, double *out, struct ga_err *err);
int json_get_bool(const cJSON *obj, const char *field, bool *out, struct ga_err *err);
int json_get_object(const cJSON *obj, const char *field, const cJSON **out, struct ga_err *err);
int json_get_array(const cJSON *obj, const char *field, const cJSON **out, struct ga_err *err);

const char *json_string_or(const cJSON *obj, const char *field, const char *def);
int64_t json_int_or(const cJSON *obj, const char *field, int64_t def);
double json_double_or(const cJSON *obj, const char *field, double def);
bool json_bool_or(const cJSON *obj, const char *field, bool def);

/* Compact serialisation; caller frees with free(). Never NULL (aborts on OOM). */
char *json_print(const cJSON *item);

/* Formats a double the way JavaScript's Number.prototype.toString (and so
 * JSON.stringify) does: integers without ".0" ("3", "-0" → "0"), shortest
 * round-trip representation otherwise ("0.1", "1e+21", "1.5e-7"). NaN and
 * infinities → "null". buf must hold at least 32 bytes. Returns buf. */
char *json_number_js(double v, char *buf);

#endif
