/*
 * schema — see schema.h.
 */
#include "modules/compose/schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"

struct ctx {
	char *msg;
	size_t cap;
	char path[256];
};

static int failf(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(struct ctx *c, const char *fmt, ...)
{
	char what[192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (c->path[0])
		snprintf(c->msg, c->cap, "field '%s' %s", c->path, what);
	else
		snprintf(c->msg, c->cap, "the arguments %s", what);
	return -1;
}

static const char *kind(const cJSON *v)
{
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsObject(v))
		return "an object";
	if (cJSON_IsNumber(v))
		return v->valuedouble == floor(v->valuedouble) ? "an integer" : "a number";
	return "invalid";
}

static bool is_type(const cJSON *v, const char *t)
{
	if (strcmp(t, "object") == 0)
		return cJSON_IsObject(v);
	if (strcmp(t, "array") == 0)
		return cJSON_IsArray(v);
	if (strcmp(t, "string") == 0)
		return cJSON_IsString(v);
	if (strcmp(t, "boolean") == 0)
		return cJSON_IsBool(v);
	if (strcmp(t, "null") == 0)
		return cJSON_IsNull(v);
	if (strcmp(t, "number") == 0)
		return cJSON_IsNumber(v) && isfinite(v->valuedouble);
	if (strcmp(t, "integer") == 0)
		return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
		       v->valuedouble == floor(v->valuedouble) &&
		       fabs(v->valuedouble) <= 9007199254740992.0;
	return true; /* unknown type names are not ours to enforce */
}

static size_t codepoints(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

static bool json_equal(const cJSON *a, const cJSON *b)
{
	return cJSON_Compare(a, b, 1) != 0;
}

static int check(struct ctx *c, const cJSON *schema, const cJSON *v, int depth);

static int push(struct ctx *c, size_t *saved, const char *name, long index)
{
	*saved = strlen(c->path);
	size_t room = sizeof c->path - *saved;
	int n;
	if (name)
		n = snprintf(c->path + *saved, room, "%s%s", *saved ? "." : "", name);
	else
		n = snprintf(c->path + *saved, room, "[%ld]", index);
	return n < 0 || (size_t)n >= room ? -1 : 0;
}

static void pop(struct ctx *c, size_t saved)
{
	c->path[saved] = '\0';
}

static int check_type(struct ctx *c, const cJSON *schema, const cJSON *v)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(schema, "type");
	if (cJSON_IsString(t)) {
		if (!is_type(v, t->valuestring))
			return failf(c, "must be %s%s, got %s",
			             strcmp(t->valuestring, "integer") == 0 ||
			                             strcmp(t->valuestring, "array") == 0 ||
			                             strcmp(t->valuestring, "object") == 0
			                     ? "an "
			                     : "a ",
			             t->valuestring, kind(v));
		return 0;
	}
	if (cJSON_IsArray(t)) {
		const cJSON *one;
		struct strbuf names = {0};
		sb_init(&names, 256);
		cJSON_ArrayForEach(one, t)
		{
			if (cJSON_IsString(one) && is_type(v, one->valuestring)) {
				sb_free(&names);
				return 0;
			}
			if (cJSON_IsString(one))
				sb_printf(&names, "%s%s", names.len ? " or " : "",
				          one->valuestring);
		}
		int rc = failf(c, "must be %s, got %s", sb_cstr(&names), kind(v));
		sb_free(&names);
		return rc;
	}
	return 0;
}

static int check_enum(struct ctx *c, const cJSON *schema, const cJSON *v)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(schema, "enum");
	if (!cJSON_IsArray(e))
		return 0;
	const cJSON *one;
	cJSON_ArrayForEach(one, e) if (json_equal(one, v)) return 0;
	struct strbuf names = {0};
	sb_init(&names, 160);
	cJSON_ArrayForEach(one, e)
	{
		char *s = cJSON_IsString(one) ? NULL : cJSON_PrintUnformatted(one);
		if (sb_printf(&names, "%s%s", names.len ? ", " : "", s ? s : one->valuestring) !=
		    0) {
			free(s);
			break;
		}
		free(s);
	}
	int rc = failf(c, "must be one of: %s", sb_cstr(&names));
	sb_free(&names);
	return rc;
}

static int check_object(struct ctx *c, const cJSON *schema, const cJSON *v, int depth)
{
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
	const cJSON *r;
	cJSON_ArrayForEach(r, req)
	{
		if (!cJSON_IsString(r))
			continue;
		const cJSON *got = cJSON_GetObjectItemCaseSensitive(v, r->valuestring);
		if (!got || cJSON_IsNull(got)) {
			size_t saved;
			push(c, &saved, r->valuestring, 0);
			int rc = failf(c, "is required");
			pop(c, saved);
			return rc;
		}
	}
	bool closed =
	        cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties"));
	const cJSON *field;
	cJSON_ArrayForEach(field, v)
	{
		const cJSON *sub = cJSON_GetObjectItemCaseSensitive(props, field->string);
		size_t saved;
		if (push(c, &saved, field->string, 0) != 0) {
			pop(c, saved);
			return failf(c, "has a field name that is too long");
		}
		int rc = 0;
		if (sub)
			rc = check(c, sub, field, depth + 1);
		else if (closed)
			rc = failf(c, "is not a known field");
		pop(c, saved);
		if (rc)
			return rc;
	}
	return 0;
}

static int check_array(struct ctx *c, const cJSON *schema, const cJSON *v, int depth)
{
	int n = cJSON_GetArraySize(v);
	const cJSON *mn = cJSON_GetObjectItemCaseSensitive(schema, "minItems");
	const cJSON *mx = cJSON_GetObjectItemCaseSensitive(schema, "maxItems");
	if (cJSON_IsNumber(mn) && n < mn->valuedouble)
		return failf(c, "must have at least %g items, got %d", mn->valuedouble, n);
	if (cJSON_IsNumber(mx) && n > mx->valuedouble)
		return failf(c, "must have at most %g items, got %d", mx->valuedouble, n);
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
	if (!cJSON_IsObject(items))
		return 0;
	long i = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, v)
	{
		size_t saved;
		push(c, &saved, NULL, i++);
		int rc = check(c, items, it, depth + 1);
		pop(c, saved);
		if (rc)
			return rc;
	}
	return 0;
}

static int check(struct ctx *c, const cJSON *schema, const cJSON *v, int depth)
{
	if (depth > SCHEMA_MAX_DEPTH)
		return failf(c, "is nested more than %d levels deep", SCHEMA_MAX_DEPTH);
	if (!cJSON_IsObject(schema))
		return 0;
	if (check_type(c, schema, v) || check_enum(c, schema, v))
		return -1;
	if (cJSON_IsString(v)) {
		size_t n = codepoints(v->valuestring);
		const cJSON *mn = cJSON_GetObjectItemCaseSensitive(schema, "minLength");
		const cJSON *mx = cJSON_GetObjectItemCaseSensitive(schema, "maxLength");
		if (cJSON_IsNumber(mx) && (double)n > mx->valuedouble)
			return failf(c, "must be at most %g characters, got %zu", mx->valuedouble,
			             n);
		if (cJSON_IsNumber(mn) && (double)n < mn->valuedouble)
			return failf(c, "must be at least %g characters, got %zu", mn->valuedouble,
			             n);
	} else if (cJSON_IsNumber(v)) {
		const cJSON *mn = cJSON_GetObjectItemCaseSensitive(schema, "minimum");
		const cJSON *mx = cJSON_GetObjectItemCaseSensitive(schema, "maximum");
		if (cJSON_IsNumber(mn) && v->valuedouble < mn->valuedouble)
			return failf(c, "must be at least %g, got %g", mn->valuedouble,
			             v->valuedouble);
		if (cJSON_IsNumber(mx) && v->valuedouble > mx->valuedouble)
			return failf(c, "must be at most %g, got %g", mx->valuedouble,
			             v->valuedouble);
	} else if (cJSON_IsObject(v)) {
		return check_object(c, schema, v, depth);
	} else if (cJSON_IsArray(v)) {
		return check_array(c, schema, v, depth);
	}
	return 0;
}

int schema_validate(const cJSON *schema, const cJSON *value, char *msg, size_t cap)
{
	struct ctx c = {.msg = msg, .cap = cap};
	if (cap)
		msg[0] = '\0';
	return check(&c, schema, value, 0);
}
