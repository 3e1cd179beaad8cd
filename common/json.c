/*
 * json — see json.h.
 *
 * json_parse() runs a strict RFC 8259 validator before handing the bytes to
 * cJSON. cJSON alone is lenient (it takes "+1", "01", ".5", control
 * characters inside strings), only measures depth up to 1000, and cannot
 * parse a buffer that is not NUL-terminated with trailing-garbage checks.
 * The validator gives exact byte offsets for errors, bounds the depth at
 * JSON_MAX_DEPTH (its recursion depth is bounded by the same limit), and
 * rejects what cJSON would silently mangle:
 *   - invalid UTF-8 anywhere,
 *   - "\u0000" inside a string (cJSON would cut the string there, so
 *     "admin\u0000x" would read as "admin"),
 *   - unpaired UTF-16 surrogate escapes (cJSON rejects them too; we just
 *     say where).
 */
#include "common/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/xalloc.h"

/* 2^53: beyond this a double no longer holds every integer exactly. */
#define JSON_MAX_SAFE_INT 9007199254740992.0

struct jv {
	const char *s;
	size_t len;
	size_t pos;
	const char *why; /* static reason for the first error */
	bool too_deep;
};

static int jv_fail(struct jv *v, const char *why)
{
	if (!v->why)
		v->why = why;
	return -1;
}

static void jv_ws(struct jv *v)
{
	while (v->pos < v->len) {
		char c = v->s[v->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return;
		v->pos++;
	}
}

static int jv_literal(struct jv *v, const char *word)
{
	size_t n = strlen(word);
	for (size_t i = 0; i < n; i++) {
		if (v->pos >= v->len)
			return jv_fail(v, "unexpected end of input");
		if (v->s[v->pos] != word[i])
			return jv_fail(v, "unexpected character");
		v->pos++;
	}
	return 0;
}

static bool jv_digit(const struct jv *v)
{
	return v->pos < v->len && v->s[v->pos] >= '0' && v->s[v->pos] <= '9';
}

static int jv_number(struct jv *v)
{
	if (v->pos < v->len && v->s[v->pos] == '-')
		v->pos++;
	if (!jv_digit(v))
		return jv_fail(v, v->pos >= v->len ? "unexpected end of input"
		                                   : "a number needs a digit here");
	if (v->s[v->pos] == '0') {
		v->pos++;
	} else {
		while (jv_digit(v))
			v->pos++;
	}
	if (v->pos < v->len && v->s[v->pos] == '.') {
		v->pos++;
		if (!jv_digit(v))
			return jv_fail(v, "a number needs a digit after '.'");
		while (jv_digit(v))
			v->pos++;
	}
	if (v->pos < v->len && (v->s[v->pos] == 'e' || v->s[v->pos] == 'E')) {
		v->pos++;
		if (v->pos < v->len && (v->s[v->pos] == '+' || v->s[v->pos] == '-'))
			v->pos++;
		if (!jv_digit(v))
			return jv_fail(v, "a number needs a digit in the exponent");
		while (jv_digit(v))
			v->pos++;
	}
	return 0;
}

static int jv_hex4(struct jv *v, unsigned *out)
{
	unsigned u = 0;
	for (int i = 0; i < 4; i++) {
		if (v->pos >= v->len)
			return jv_fail(v, "unexpected end of input");
		char c = v->s[v->pos];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return jv_fail(v, "\\u needs four hex digits");
		u = u * 16 + d;
		v->pos++;
	}
	*out = u;
	return 0;
}

static int jv_string(struct jv *v)
{
	v->pos++; /* opening quote */
	for (;;) {
		if (v->pos >= v->len)
			return jv_fail(v, "unterminated string");
		unsigned char c = (unsigned char)v->s[v->pos];
		if (c == '"') {
			v->pos++;
			return 0;
		}
		if (c < 0x20)
			return jv_fail(v, "control character inside a string");
		if (c >= 0x80) {
			unsigned cp;
			int n = utf8_decode(v->s + v->pos, v->len - v->pos, &cp);
			if (n < 0)
				return jv_fail(v, "invalid UTF-8");
			v->pos += (size_t)n;
			continue;
		}
		if (c != '\\') {
			v->pos++;
			continue;
		}
		size_t esc_at = v->pos;
		v->pos++;
		if (v->pos >= v->len)
			return jv_fail(v, "unterminated string");
		char e = v->s[v->pos];
		if (strchr("\"\\/bfnrt", e) && e != '\0') {
			v->pos++;
			continue;
		}
		if (e != 'u')
			return jv_fail(v, "invalid escape sequence");
		v->pos++;
		unsigned u;
		if (jv_hex4(v, &u) < 0)
			return -1;
		if (u == 0) {
			v->pos = esc_at;
			return jv_fail(v, "\\u0000 inside a string is not accepted");
		}
		if (u >= 0xDC00 && u <= 0xDFFF) {
			v->pos = esc_at;
			return jv_fail(v, "unpaired UTF-16 surrogate escape");
		}
		if (u >= 0xD800 && u <= 0xDBFF) {
			unsigned lo;
			if (v->pos + 1 >= v->len || v->s[v->pos] != '\\' ||
			    v->s[v->pos + 1] != 'u') {
				v->pos = esc_at;
				return jv_fail(v, "unpaired UTF-16 surrogate escape");
			}
			v->pos += 2;
			if (jv_hex4(v, &lo) < 0)
				return -1;
			if (lo < 0xDC00 || lo > 0xDFFF) {
				v->pos = esc_at;
				return jv_fail(v, "unpaired UTF-16 surrogate escape");
			}
		}
	}
}

static int jv_value(struct jv *v, int depth);

static int jv_container(struct jv *v, int depth, char close)
{
	if (depth > JSON_MAX_DEPTH) {
		v->too_deep = true;
		return jv_fail(v, "nested too deep");
	}
	v->pos++; /* '[' or '{' */
	jv_ws(v);
	if (v->pos < v->len && v->s[v->pos] == close) {
		v->pos++;
		return 0;
	}
	for (;;) {
		if (close == '}') {
			jv_ws(v);
			if (v->pos >= v->len)
				return jv_fail(v, "unexpected end of input");
			if (v->s[v->pos] != '"')
				return jv_fail(v, "expected a string key");
			if (jv_string(v) < 0)
				return -1;
			jv_ws(v);
			if (v->pos >= v->len)
				return jv_fail(v, "unexpected end of input");
			if (v->s[v->pos] != ':')
				return jv_fail(v, "expected ':'");
			v->pos++;
		}
		if (jv_value(v, depth) < 0)
			return -1;
		if (v->pos >= v->len)
			return jv_fail(v, "unexpected end of input");
		char c = v->s[v->pos];
		if (c == close) {
			v->pos++;
			return 0;
		}
		if (c != ',')
			return jv_fail(v, close == '}' ? "expected ',' or '}'"
			                               : "expected ',' or ']'");
		v->pos++;
	}
}

/* Parses ws value ws. depth = number of containers already open. */
static int jv_value(struct jv *v, int depth)
{
	jv_ws(v);
	if (v->pos >= v->len)
		return jv_fail(v, "unexpected end of input");
	int rc;
	switch (v->s[v->pos]) {
	case '{':
		rc = jv_container(v, depth + 1, '}');
		break;
	case '[':
		rc = jv_container(v, depth + 1, ']');
		break;
	case '"':
		rc = jv_string(v);
		break;
	case 't':
		rc = jv_literal(v, "true");
		break;
	case 'f':
		rc = jv_literal(v, "false");
		break;
	case 'n':
		rc = jv_literal(v, "null");
		break;
	default:
		if (v->s[v->pos] == '-' || (v->s[v->pos] >= '0' && v->s[v->pos] <= '9'))
			rc = jv_number(v);
		else
			rc = jv_fail(v, "unexpected character");
	}
	if (rc < 0)
		return -1;
	jv_ws(v);
	return 0;
}

cJSON *json_parse(const char *buf, size_t len, struct ga_err *err)
{
	struct jv v = {.s = buf, .len = len};
	if (!buf || len == 0) {
		err_set(err, "invalid JSON at byte 0: empty input");
		return NULL;
	}
	if (jv_value(&v, 0) < 0) {
		if (v.too_deep)
			err_set(err, "JSON nested deeper than %d levels (at byte %zu)",
			        JSON_MAX_DEPTH, v.pos);
		else
			err_set(err, "invalid JSON at byte %zu: %s", v.pos, v.why);
		return NULL;
	}
	if (v.pos != len) {
		err_set(err, "invalid JSON at byte %zu: unexpected data after the value", v.pos);
		return NULL;
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!root) {
		/* The validator accepted it, so cJSON ran into one of its own
		 * limits (e.g. a number longer than 63 characters) or memory. */
		size_t at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
		err_set(err, "invalid JSON at byte %zu: cJSON could not parse this value", at);
		return NULL;
	}
	return root;
}

static const cJSON *field_of(const cJSON *obj, const char *field)
{
	if (!obj || !cJSON_IsObject(obj) || !field)
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, field);
}

static int missing(const char *field, struct ga_err *err)
{
	return err_set(err, "field '%s' is missing", field ? field : "(null)");
}

static int mistyped(const char *field, const char *what, struct ga_err *err)
{
	return err_set(err, "field '%s' must be %s", field ? field : "(null)", what);
}

static bool as_int(const cJSON *it, int64_t *out)
{
	if (!cJSON_IsNumber(it))
		return false;
	double d = it->valuedouble;
	if (!isfinite(d) || floor(d) != d || fabs(d) > JSON_MAX_SAFE_INT)
		return false;
	*out = (int64_t)d;
	return true;
}

int json_get_string(const cJSON *obj, const char *field, const char **out, struct ga_err *err)
{
	const cJSON *it = field_of(obj, field);
	if (!it)
		return missing(field, err);
	if (!cJSON_IsString(it) || !it->valuestring)
		return mistyped(field, "a string", err);
	*out = it->valuestring;
	return 0;
}

int json_get_int(const cJSON *obj, const char *field, int64_t *out, struct ga_err *err)
{
	const cJSON *it = field_of(obj, field);
	if (!it)
		return missing(field, err);
	int64_t v;
	if (!as_int(it, &v))
		return mistyped(field, "an integer", err);
	*out = v;
	return 0;
}

int json_get_double(const cJSON *obj, const char *field, double *out, struct ga_err *err)
{
	const cJSON *it = field_of(obj, field);
	if (!it)
		return missing(field, err);
	if (!cJSON_IsNumber(it))
		return mistyped(field, "a number", err);
	*out = it->valuedouble;
	return 0;
}

int json_get_bool(const cJSON *obj, const char *field, bool *out, struct ga_err *err)
{
	const cJSON *it = field_of(obj, field);
	if (!it)
		return missing(field, err);
	if (!cJSON_IsBool(it))
		return mistyped(field, "a boolean", err);
	*out = cJSON_IsTrue(it);
	return 0;
}

int json_get_object(const cJSON *obj, const char *field, const cJSON **out, struct ga_err *err)
{
	const cJSON *it = field_of(obj, field);
	if (!it)
		return missing(field, err);
	if (!cJSON_IsObject(it))
		return mistyped(field, "an object", err);
	*out = it;
	return 0;
}

int json_get_array(const cJSON *obj, const char *field, const cJSON **out, struct ga_err *err)
{
	const cJSON *it = field_of(obj, field);
	if (!it)
		return missing(field, err);
	if (!cJSON_IsArray(it))
		return mistyped(field, "an array", err);
	*out = it;
	return 0;
}

const char *json_string_or(const cJSON *obj, const char *field, const char *def)
{
	const cJSON *it = field_of(obj, field);
	return cJSON_IsString(it) && it->valuestring ? it->valuestring : def;
}

int64_t json_int_or(const cJSON *obj, const char *field, int64_t def)
{
	int64_t v;
	const cJSON *it = field_of(obj, field);
	return it && as_int(it, &v) ? v : def;
}

double json_double_or(const cJSON *obj, const char *field, double def)
{
	const cJSON *it = field_of(obj, field);
	return cJSON_IsNumber(it) ? it->valuedouble : def;
}

bool json_bool_or(const cJSON *obj, const char *field, bool def)
{
	const cJSON *it = field_of(obj, field);
	return cJSON_IsBool(it) ? cJSON_IsTrue(it) : def;
}

char *json_print(const cJSON *item)
{
	if (!item)
		return xstrdup("null");
	char *s = cJSON_PrintUnformatted(item);
	if (!s) {
		fprintf(stderr, "fatal: out of memory serialising JSON\n");
		abort();
	}
	return s;
}

char *json_number_js(double v, char *buf)
{
	if (!isfinite(v)) {
		strcpy(buf, "null");
		return buf;
	}
	if (v == 0) {
		strcpy(buf, "0"); /* JS prints -0 as "0" too */
		return buf;
	}
	/* Shortest digit string that reads back as the same double. */
	char tmp[40];
	int prec;
	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	if (prec > 17)
		snprintf(tmp, sizeof(tmp), "%.16e", v);
	/* tmp is "[-]d[.ddd]e[+-]XX": collect the digits and the exponent. */
	char digs[24];
	int k = 0;
	const char *p = tmp;
	bool neg = *p == '-';
	if (neg)
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digs[k++] = *p;
	int e10 = *p == 'e' ? atoi(p + 1) : 0;
	while (k > 1 && digs[k - 1] == '0')
		k--;
	int n = e10 + 1; /* decimal point position, as in ECMA-262 Number::toString */
	char *o = buf;
	if (neg)
		*o++ = '-';
	if (k <= n && n <= 21) {
		memcpy(o, digs, (size_t)k);
		o += k;
		for (int i = k; i < n; i++)
			*o++ = '0';
	} else if (0 < n && n <= 21) {
		memcpy(o, digs, (size_t)n);
		o += n;
		*o++ = '.';
		memcpy(o, digs + n, (size_t)(k - n));
		o += k - n;
	} else if (-6 < n && n <= 0) {
		*o++ = '0';
		*o++ = '.';
		for (int i = 0; i < -n; i++)
			*o++ = '0';
		memcpy(o, digs, (size_t)k);
		o += k;
	} else {
		*o++ = digs[0];
		if (k > 1) {
			*o++ = '.';
			memcpy(o, digs + 1, (size_t)(k - 1));
			o += k - 1;
		}
		o += sprintf(o, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
	}
	*o = '\0';
	return buf;
}
