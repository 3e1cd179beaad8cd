/*
 * httpfake — routes from a JSON script (format in README.md).
 *
 * The script is walked twice: once to validate, once to add the routes, so
 * a script with an error adds nothing and the error names the first bad
 * value by its place in the script ("routes[1].responses[0].status").
 */
#include "tests/fakes/httpfake/httpfake.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A script larger than this is a mistake, not a fixture. */
#define SCRIPT_MAX_BYTES (16u * 1024u * 1024u)

struct ctx {
	struct httpfake *fake; /* NULL while validating */
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct ctx *c, const char *fmt, ...)
{
	if (c->err && c->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A short rendering of a bad value for an error message; caller frees. */
static char *show(const cJSON *v)
{
	char *s = v ? cJSON_PrintUnformatted(v) : NULL;
	if (s && strlen(s) > 60)
		strcpy(s + 57, "...");
	return s;
}

static int fail_value(struct ctx *c, const char *where, const char *want, const cJSON *v)
{
	char *s = show(v);
	fail(c, "script: %s must be %s, got %s", where, want, s ? s : "nothing");
	free(s);
	return -1;
}

/* Header and parameter values may be written as strings or numbers
 * ("Retry-After": 1); the number form is printed as an integer when it is
 * one. Returns a pointer into buf or into v. */
static const char *scalar_text(const cJSON *v, char *buf, size_t len)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d == (double)(long long)d)
			snprintf(buf, len, "%lld", (long long)d);
		else
			snprintf(buf, len, "%.17g", d);
		return buf;
	}
	return NULL;
}

static int string_map(struct ctx *c, const cJSON *obj, const char *where,
                      void (*add)(void *target, const char *name, const char *value), void *target)
{
	if (!cJSON_IsObject(obj))
		return fail_value(c, where, "an object of strings", obj);
	const cJSON *it;
	cJSON_ArrayForEach(it, obj)
	{
		char num[64];
		const char *val = scalar_text(it, num, sizeof(num));
		if (!val) {
			char sub[256];
			snprintf(sub, sizeof(sub), "%.120s.%.120s", where, it->string);
			return fail_value(c, sub, "a string or a number", it);
		}
		if (add && c->fake)
			add(target, it->string, val);
	}
	return 0;
}

static void add_resp_header(void *t, const char *n, const char *v)
{
	httpfake_response_header(t, n, v);
}

static void add_param(void *t, const char *n, const char *v)
{
	httpfake_route_match_param(t, n, v);
}

static void add_header_match(void *t, const char *n, const char *v)
{
	httpfake_route_match_header(t, n, v);
}

static bool has_content_type(const cJSON *headers)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, headers)
	{
		if (it->string && strcasecmp(it->string, "Content-Type") == 0)
			return true;
	}
	return false;
}

static int response(struct ctx *c, struct httpfake_route *route, const cJSON *r, const char *where)
{
	char sub[256];
	if (!cJSON_IsObject(r))
		return fail_value(c, where, "an object", r);

	const cJSON *status = cJSON_GetObjectItemCaseSensitive(r, "status");
	int code = 200;
	if (status) {
		snprintf(sub, sizeof(sub), "%s.status", where);
		if (!cJSON_IsNumber(status) || status->valuedouble < 100 ||
		    status->valuedouble > 999 || status->valuedouble != (int)status->valuedouble)
			return fail_value(c, sub, "a number from 100 to 999", status);
		code = (int)status->valuedouble;
	}

	const cJSON *delay = cJSON_GetObjectItemCaseSensitive(r, "delay_ms");
	if (delay) {
		snprintf(sub, sizeof(sub), "%s.delay_ms", where);
		/* A day is far past any test timeout; a larger value is a typo. */
		if (!cJSON_IsNumber(delay) || delay->valuedouble < 0 ||
		    delay->valuedouble > 86400000.0)
			return fail_value(c, sub, "a number of milliseconds from 0 to 86400000",
			                  delay);
	}

	enum httpfake_action action = HTTPFAKE_RESPOND;
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(r, "action");
	if (act) {
		snprintf(sub, sizeof(sub), "%s.action", where);
		const char *a = cJSON_GetStringValue(act);
		if (a && strcmp(a, "respond") == 0)
			action = HTTPFAKE_RESPOND;
		else if (a && strcmp(a, "drop") == 0)
			action = HTTPFAKE_DROP;
		else if (a && strcmp(a, "hang") == 0)
			action = HTTPFAKE_HANG;
		else
			return fail_value(c, sub, "\"respond\", \"drop\" or \"hang\"", act);
	}

	const cJSON *headers = cJSON_GetObjectItemCaseSensitive(r, "headers");
	const cJSON *body = cJSON_GetObjectItemCaseSensitive(r, "body");
	struct httpfake_response *resp = NULL;
	if (c->fake) {
		resp = httpfake_route_respond(route, code, NULL, NULL);
		httpfake_response_action(resp, action);
		if (delay)
			httpfake_response_delay(resp, (unsigned)delay->valuedouble);
	}
	if (headers) {
		snprintf(sub, sizeof(sub), "%s.headers", where);
		if (string_map(c, headers, sub, add_resp_header, resp) < 0)
			return -1;
	}
	if (body && cJSON_IsString(body)) {
		if (resp)
			httpfake_response_body(resp, body->valuestring, strlen(body->valuestring));
	} else if (body) {
		/* Any other JSON value is the body, serialised. */
		char *s = cJSON_PrintUnformatted(body);
		if (!s)
			return fail(c, "script: out of memory serialising %s.body", where);
		if (resp) {
			if (!has_content_type(headers))
				httpfake_response_header(resp, "Content-Type", "application/json");
			httpfake_response_body(resp, s, strlen(s));
		}
		free(s);
	}
	return 0;
}

static int matchers(struct ctx *c, struct httpfake_route *route, const cJSON *m, const char *where)
{
	char sub[256];
	if (!cJSON_IsObject(m))
		return fail_value(c, where, "an object", m);
	const cJSON *it;
	cJSON_ArrayForEach(it, m)
	{
		snprintf(sub, sizeof(sub), "%.120s.%.120s", where, it->string);
		if (strcmp(it->string, "query") == 0 || strcmp(it->string, "body") == 0) {
			if (!cJSON_IsString(it))
				return fail_value(c, sub, "a string", it);
			if (!c->fake)
				continue;
			if (it->string[0] == 'q')
				httpfake_route_match_query(route, it->valuestring);
			else
				httpfake_route_match_body(route, it->valuestring);
		} else if (strcmp(it->string, "params") == 0) {
			if (string_map(c, it, sub, add_param, route) < 0)
				return -1;
		} else if (strcmp(it->string, "headers") == 0) {
			if (string_map(c, it, sub, add_header_match, route) < 0)
				return -1;
		} else {
			return fail(c,
			            "script: %s is not a matcher (use query, params, body or "
			            "headers)",
			            sub);
		}
	}
	return 0;
}

static int route(struct ctx *c, const cJSON *r, size_t idx)
{
	char where[64], sub[256];
	snprintf(where, sizeof(where), "routes[%zu]", idx);
	if (!cJSON_IsObject(r))
		return fail_value(c, where, "an object", r);
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(r, "method");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(r, "path");
	snprintf(sub, sizeof(sub), "%s.method", where);
	if (!cJSON_IsString(method) || !method->valuestring[0])
		return fail_value(c, sub, "a method such as \"GET\" (or \"*\")", method);
	snprintf(sub, sizeof(sub), "%s.path", where);
	if (!cJSON_IsString(path) || path->valuestring[0] != '/')
		return fail_value(c, sub, "a path starting with '/'", path);

	const cJSON *one = cJSON_GetObjectItemCaseSensitive(r, "response");
	const cJSON *many = cJSON_GetObjectItemCaseSensitive(r, "responses");
	if (!one == !many)
		return fail(c, "script: %s needs exactly one of \"response\" and \"responses\"",
		            where);
	snprintf(sub, sizeof(sub), "%s.responses", where);
	if (many && (!cJSON_IsArray(many) || cJSON_GetArraySize(many) == 0 ||
	             cJSON_GetArraySize(many) > (int)HTTPFAKE_SEQUENCE_MAX))
		return fail_value(c, sub, "a non-empty array of at most 1024 responses", many);

	struct httpfake_route *rt = NULL;
	if (c->fake)
		rt = httpfake_route(c->fake, method->valuestring, path->valuestring);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "match");
	if (m) {
		snprintf(sub, sizeof(sub), "%s.match", where);
		if (matchers(c, rt, m, sub) < 0)
			return -1;
	}
	if (one) {
		snprintf(sub, sizeof(sub), "%s.response", where);
		return response(c, rt, one, sub);
	}
	size_t i = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, many)
	{
		snprintf(sub, sizeof(sub), "%s.responses[%zu]", where, i++);
		if (response(c, rt, it, sub) < 0)
			return -1;
	}
	return 0;
}

static int walk(struct ctx *c, const cJSON *root)
{
	if (!cJSON_IsObject(root))
		return fail_value(c, "the script", "an object with \"routes\"", root);
	const cJSON *routes = cJSON_GetObjectItemCaseSensitive(root, "routes");
	if (!cJSON_IsArray(routes))
		return fail_value(c, "routes", "an array", routes);
	const cJSON *limit = cJSON_GetObjectItemCaseSensitive(root, "body_limit");
	if (limit && (!cJSON_IsNumber(limit) || limit->valuedouble < 0 ||
	              limit->valuedouble > (double)HTTPFAKE_BODY_LIMIT_BYTES * 64))
		return fail_value(c, "body_limit", "a number of bytes from 0 to 64 MiB", limit);
	if (limit && c->fake)
		httpfake_set_body_limit(c->fake, (size_t)limit->valuedouble);
	size_t i = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, routes)
	{
		if (route(c, it, i++) < 0)
			return -1;
	}
	return 0;
}

int httpfake_load_script(struct httpfake *fake, const char *json, char *err, size_t errlen)
{
	struct ctx c = {.fake = NULL, .err = err, .errlen = errlen};
	if (!fake || !json)
		return fail(&c, "httpfake_load_script() needs a fake and a script");
	cJSON *root = cJSON_Parse(json);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		return fail(&c, "script: invalid JSON near \"%.30s\"", at ? at : "");
	}
	int rc = walk(&c, root);
	if (rc == 0) {
		c.fake = fake;
		rc = walk(&c, root);
	}
	cJSON_Delete(root);
	return rc;
}

int httpfake_load_script_file(struct httpfake *fake, const char *path, char *err, size_t errlen)
{
	struct ctx c = {.err = err, .errlen = errlen};
	if (!path)
		return fail(&c, "httpfake_load_script_file() needs a path");
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(&c, "cannot open script %s: %s", path, strerror(errno));
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	int rc = -1;
	while (buf) {
		if (len + 1 >= cap) {
			if (cap > SCRIPT_MAX_BYTES) {
				fail(&c, "script %s is larger than %u bytes", path,
				     SCRIPT_MAX_BYTES);
				goto out;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) {
				fail(&c, "cannot read script %s: %s", path, strerror(errno));
				goto out;
			}
			buf[len] = '\0';
			rc = httpfake_load_script(fake, buf, err, errlen);
			goto out;
		}
	}
	fail(&c, "out of memory reading script %s", path);
out:
	free(buf);
	fclose(f);
	return rc;
}
