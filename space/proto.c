/*
 * space/proto — JavaScript semantics for the agent-space wire format.
 * See proto.h for the contract.
 */
#include "space/proto.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonnul.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

/* The nine message types a client may send (§2.1); everything else,
 * including the server-only types, is silently ignored (§3.1 step 4). */
static const struct {
	const char *name;
	enum space_msg_type type;
} client_types[] = {
        {"join", SPACE_MSG_JOIN},
        {"chat", SPACE_MSG_CHAT},
        {"typing", SPACE_MSG_TYPING},
        {"identity", SPACE_MSG_IDENTITY},
        {"claim", SPACE_MSG_CLAIM},
        {"state", SPACE_MSG_STATE},
        {"action_result", SPACE_MSG_ACTION_RESULT},
        {"reflection", SPACE_MSG_REFLECTION},
        {"workspace_state", SPACE_MSG_WORKSPACE_STATE},
};

enum space_msg_type space_msg_parse(const char *buf, size_t len, cJSON **root)
{
	*root = NULL;
	/* "\u0000" and lone surrogates are valid JSON that TypeScript peers
	 * relay: strings carry them as markers (common/jsonnul.h). */
	cJSON *v = json_parse_js(buf, len, NULL);
	/* The protocol answers a null message "Invalid JSON" (§3.1 step 3),
	 * so null is grouped with parse errors. */
	if (!v || cJSON_IsNull(v)) {
		cJSON_Delete(v);
		return SPACE_MSG_INVALID_JSON;
	}
	if (!cJSON_IsObject(v)) {
		cJSON_Delete(v);
		return SPACE_MSG_IGNORED;
	}
	const cJSON *t = space_js_get(v, "type");
	if (cJSON_IsString(t)) {
		for (size_t i = 0; i < sizeof client_types / sizeof client_types[0]; i++) {
			if (strcmp(t->valuestring, client_types[i].name) == 0) {
				*root = v;
				return client_types[i].type;
			}
		}
	}
	cJSON_Delete(v);
	return SPACE_MSG_IGNORED;
}

const cJSON *space_js_get(const cJSON *obj, const char *key)
{
	if (!cJSON_IsObject(obj))
		return NULL;
	const cJSON *found = NULL;
	for (const cJSON *c = obj->child; c; c = c->next)
		if (c->string && strcmp(c->string, key) == 0)
			found = c;
	return found;
}

size_t space_js_units(const char *s, size_t len)
{
	/* One unit per code point, two for 4-byte sequences (a surrogate
	 * pair in UTF-16). Counting lead bytes is enough for valid UTF-8; the
	 * NUL marker is one unit. */
	size_t units = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c & 0xC0) != 0x80)
			units += c >= 0xF0 && c != (unsigned char)JSON_NUL_MARK ? 2 : 1;
	}
	return units;
}

size_t space_js_cut(const char *s, size_t len, size_t max_units)
{
	size_t units = 0, i = 0;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80 || c == (unsigned char)JSON_NUL_MARK ? 1
		           : c < 0xE0                                    ? 2
		           : c < 0xF0                                    ? 3
		                                                         : 4;
		size_t u = n == 4 ? 2 : 1;
		if (units + u > max_units)
			break;
		if (i + n > len)
			n = len - i;
		units += u;
		i += n;
	}
	return i;
}

/* Decodes one code point of valid UTF-8 at s (n bytes available); the NUL
 * marker is U+0000. */
static unsigned decode_cp(const unsigned char *s, size_t n, size_t *used)
{
	if (s[0] == (unsigned char)JSON_NUL_MARK) {
		*used = 1;
		return 0;
	}
	if (s[0] < 0x80 || n < 2) {
		*used = 1;
		return s[0];
	}
	if (s[0] < 0xE0) {
		*used = 2;
		return ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu);
	}
	if (s[0] < 0xF0 || n < 4) {
		*used = n < 3 ? n : 3;
		if (n < 3)
			return 0xFFFD;
		return ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
	}
	*used = 4;
	return ((s[0] & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) |
	       (s[3] & 0x3Fu);
}

bool space_js_blank(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		size_t used;
		unsigned cp = decode_cp(p + i, len - i, &used);
		if (!utf8_js_space(cp))
			return false;
		i += used;
	}
	return true;
}

void space_js_trim(const char *s, size_t len, size_t *off, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, end = 0;
	bool seen = false;
	size_t start = len;
	while (i < len) {
		size_t used;
		unsigned cp = decode_cp(p + i, len - i, &used);
		if (!utf8_js_space(cp)) {
			if (!seen)
				start = i;
			seen = true;
			end = i + used;
		}
		i += used;
	}
	*off = seen ? start : 0;
	*out_len = seen ? end - start : 0;
}

bool space_js_truthy(const cJSON *v)
{
	if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v))
		return false;
	if (cJSON_IsNumber(v))
		return v->valuedouble != 0 && !isnan(v->valuedouble);
	if (cJSON_IsString(v))
		return v->valuestring && v->valuestring[0];
	return true; /* true, objects and arrays (even empty ones) */
}

bool space_js_nonblank_string(const cJSON *v)
{
	return cJSON_IsString(v) && !space_js_blank(v->valuestring, strlen(v->valuestring));
}

int space_put_str(struct strbuf *sb, const char *s)
{
	return json_put_string_nul(sb, s, strlen(s));
}

int space_put_strn(struct strbuf *sb, const char *s, size_t len)
{
	return json_put_string_nul(sb, s, len);
}

static int put_number(struct strbuf *sb, double d)
{
	char buf[40];
	return sb_puts(sb, json_number_js(d, buf));
}

/* ,"key":"value cut to units" when v is a string; true when cut. */
static bool put_task_str(struct strbuf *sb, const char *key, const cJSON *v, size_t units)
{
	if (!cJSON_IsString(v))
		return false;
	size_t l = strlen(v->valuestring), k = space_js_cut(v->valuestring, l, units);
	sb_printf(sb, ",\"%s\":", key);
	space_put_strn(sb, v->valuestring, k);
	return k < l;
}

/* An entry of an array we relay (a task, a pull): whether it is one, and
 * its object written to sb (true when something of it was cut). */
struct entry_kind {
	const char *key;
	bool (*valid)(const cJSON *e);
	bool (*put)(struct strbuf *sb, const cJSON *e);
};

/* ,"<key>":[…] of the valid entries of arr, at most max of them and
 * max_bytes of JSON; the invalid ones counted in *rejected. True when
 * something was left out or cut. */
static bool put_entries(struct strbuf *sb, const struct entry_kind *k, const cJSON *arr, size_t max,
                        size_t max_bytes, size_t *rejected)
{
	*rejected = 0;
	if (!cJSON_IsArray(arr))
		return false;
	bool cut = false;
	size_t n = 0, start = sb->len;
	sb_printf(sb, ",\"%s\":[", k->key);
	const cJSON *e;
	cJSON_ArrayForEach(e, arr)
	{
		if (!k->valid(e)) {
			(*rejected)++;
			cut = true;
			continue;
		}
		if (n >= max) {
			cut = true;
			break;
		}
		size_t at = sb->len;
		if (n)
			sb_putc(sb, ',');
		cut |= k->put(sb, e);
		if (sb->len - start + 1 > max_bytes) {
			sb->len = at; /* this one does not fit */
			sb->buf[at] = '\0';
			cut = true;
			break;
		}
		n++;
	}
	sb_putc(sb, ']');
	return cut;
}

static bool task_valid(const cJSON *t)
{
	return cJSON_IsObject(t) && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, "number"));
}

static bool task_put(struct strbuf *sb, const cJSON *t)
{
	sb_puts(sb, "{\"number\":");
	put_number(sb, cJSON_GetObjectItemCaseSensitive(t, "number")->valuedouble);
	bool cut = put_task_str(sb, "title", cJSON_GetObjectItemCaseSensitive(t, "title"),
	                        SPACE_TASK_TITLE_UNITS);
	cut |= put_task_str(sb, "status", cJSON_GetObjectItemCaseSensitive(t, "status"),
	                    SPACE_TASK_FIELD_UNITS);
	cut |= put_task_str(sb, "assignee", cJSON_GetObjectItemCaseSensitive(t, "assignee"),
	                    SPACE_TASK_FIELD_UNITS);
	const cJSON *pr = cJSON_GetObjectItemCaseSensitive(t, "pr");
	if (cJSON_IsNumber(pr)) {
		sb_puts(sb, ",\"pr\":");
		put_number(sb, pr->valuedouble);
	}
	const cJSON *url = cJSON_GetObjectItemCaseSensitive(t, "prUrl");
	if (cJSON_IsString(url) && strncmp(url->valuestring, "https://", 8) == 0)
		cut |= put_task_str(sb, "prUrl", url, SPACE_TASK_FIELD_UNITS);
	sb_putc(sb, '}');
	return cut;
}

bool space_put_tasks(struct strbuf *sb, const cJSON *tasks, size_t max_tasks, size_t max_bytes)
{
	static const struct entry_kind kind = {"tasks", task_valid, task_put};
	size_t rejected;
	return put_entries(sb, &kind, tasks, max_tasks, max_bytes, &rejected);
}

/* A JS safe integer >= lo. */
static bool safe_int_at_least(const cJSON *v, double lo)
{
	return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= 9007199254740991.0 &&
	       v->valuedouble == (double)(int64_t)v->valuedouble;
}

static bool pull_valid(const cJSON *p)
{
	if (!cJSON_IsObject(p) ||
	    !safe_int_at_least(cJSON_GetObjectItemCaseSensitive(p, "number"), 1))
		return false;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, "state");
	if (!cJSON_IsString(v))
		return false;
	size_t n = 0;
	for (const char *c = v->valuestring; *c; c++, n++)
		if (n >= SPACE_PULL_STATE_MAX || !((*c >= 'a' && *c <= 'z') || *c == '_'))
			return false;
	return n > 0;
}

static void put_count(struct strbuf *sb, const char *key, const cJSON *v)
{
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740991.0)
		return;
	sb_printf(sb, ",\"%s\":", key);
	put_number(sb, v->valuedouble);
}

static bool pull_put(struct strbuf *sb, const cJSON *p)
{
	sb_puts(sb, "{\"number\":");
	put_number(sb, cJSON_GetObjectItemCaseSensitive(p, "number")->valuedouble);
	sb_puts(sb, ",\"state\":");
	space_put_str(sb, cJSON_GetObjectItemCaseSensitive(p, "state")->valuestring);
	static const char *const fields[] = {"repo", "author", "reviewer", "next"};
	bool cut = put_task_str(sb, "title", cJSON_GetObjectItemCaseSensitive(p, "title"),
	                        SPACE_TASK_TITLE_UNITS);
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		cut |= put_task_str(sb, fields[i], cJSON_GetObjectItemCaseSensitive(p, fields[i]),
		                    SPACE_TASK_FIELD_UNITS);
	const cJSON *url = cJSON_GetObjectItemCaseSensitive(p, "url");
	if (cJSON_IsString(url) && strncmp(url->valuestring, "https://", 8) == 0)
		cut |= put_task_str(sb, "url", url, SPACE_TASK_FIELD_UNITS);
	const cJSON *since = cJSON_GetObjectItemCaseSensitive(p, "since");
	int64_t ms;
	if (cJSON_IsString(since) && time_parse_iso(since->valuestring, &ms) == 0)
		put_task_str(sb, "since", since, SPACE_TASK_FIELD_UNITS);
	put_count(sb, "task", cJSON_GetObjectItemCaseSensitive(p, "task"));
	put_count(sb, "revisions", cJSON_GetObjectItemCaseSensitive(p, "revisions"));
	sb_putc(sb, '}');
	return cut;
}

bool space_put_pulls(struct strbuf *sb, const cJSON *pulls, size_t max_pulls, size_t max_bytes,
                     size_t *rejected)
{
	static const struct entry_kind kind = {"pulls", pull_valid, pull_put};
	return put_entries(sb, &kind, pulls, max_pulls, max_bytes, rejected);
}

/* An ECMAScript array index: "0" or [1-9][0-9]* below 2^32 - 1. Such keys
 * are enumerated first, in numeric order, by every JS engine. */
static bool array_index(const char *k, uint32_t *out)
{
	if (!k[0] || (k[0] == '0' && k[1]) || strlen(k) > 10)
		return false;
	uint64_t v = 0;
	for (const char *p = k; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v >= 0xFFFFFFFFull)
		return false;
	*out = (uint32_t)v;
	return true;
}

struct key_slot {
	const cJSON *item; /* the child holding the value (last duplicate) */
	size_t pos;        /* position of the first occurrence */
	uint32_t index;
	bool is_index;
	bool dead; /* a later duplicate took over */
};

static int cmp_by_key(const void *a, const void *b)
{
	const struct key_slot *x = a, *y = b;
	int c = strcmp(x->item->string, y->item->string);
	if (c)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int cmp_js_order(const void *a, const void *b)
{
	const struct key_slot *x = a, *y = b;
	if (x->is_index != y->is_index)
		return x->is_index ? -1 : 1;
	if (x->is_index)
		return x->index < y->index ? -1 : x->index > y->index;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int stringify_object(struct strbuf *sb, const cJSON *v)
{
	size_t n = 0;
	bool simple = true; /* no index keys, no duplicates: emit as is */
	for (const cJSON *c = v->child; c; c = c->next) {
		uint32_t idx;
		n++;
		if (!c->string || array_index(c->string, &idx))
			simple = false;
	}
	if (simple && n > 1) {
		/* Duplicate check: quadratic for small objects only. */
		if (n <= 16) {
			for (const cJSON *a = v->child; a && simple; a = a->next)
				for (const cJSON *b = a->next; b; b = b->next)
					if (strcmp(a->string, b->string) == 0) {
						simple = false;
						break;
					}
		} else {
			simple = false;
		}
	}
	if (sb_putc(sb, '{') < 0)
		return -1;
	if (simple) {
		bool first = true;
		for (const cJSON *c = v->child; c; c = c->next) {
			if (!first && sb_putc(sb, ',') < 0)
				return -1;
			first = false;
			if (space_put_str(sb, c->string) < 0 || sb_putc(sb, ':') < 0 ||
			    space_js_stringify(sb, c) < 0)
				return -1;
		}
		return sb_putc(sb, '}');
	}

	/* Keys always exist on parsed members; a keyless child (impossible
	 * from json_parse) is skipped rather than dereferenced. */
	struct key_slot *slots = xcalloc(n, sizeof *slots);
	size_t i = 0;
	for (const cJSON *c = v->child; c; c = c->next) {
		if (!c->string)
			continue;
		slots[i].item = c;
		slots[i].pos = i;
		slots[i].is_index = array_index(c->string, &slots[i].index);
		i++;
	}
	n = i;
	/* Group duplicates (stable by position), keep the first slot with the
	 * last value. */
	qsort(slots, n, sizeof *slots, cmp_by_key);
	for (i = 0; i + 1 < n; i++) {
		if (slots[i].dead || slots[i + 1].dead)
			continue;
		if (strcmp(slots[i].item->string, slots[i + 1].item->string) == 0) {
			slots[i + 1].pos = slots[i].pos;
			slots[i].dead = true;
		}
	}
	qsort(slots, n, sizeof *slots, cmp_js_order);
	bool first = true;
	int rc = 0;
	for (i = 0; i < n && rc == 0; i++) {
		if (slots[i].dead)
			continue;
		if (!first && sb_putc(sb, ',') < 0)
			rc = -1;
		first = false;
		if (rc == 0 && (space_put_str(sb, slots[i].item->string) < 0 ||
		                sb_putc(sb, ':') < 0 || space_js_stringify(sb, slots[i].item) < 0))
			rc = -1;
	}
	free(slots);
	if (rc < 0)
		return -1;
	return sb_putc(sb, '}');
}

int space_js_stringify(struct strbuf *sb, const cJSON *v)
{
	if (!v)
		return sb_puts(sb, "undefined");
	if (cJSON_IsNull(v))
		return sb_puts(sb, "null");
	if (cJSON_IsTrue(v))
		return sb_puts(sb, "true");
	if (cJSON_IsFalse(v))
		return sb_puts(sb, "false");
	if (cJSON_IsNumber(v))
		return put_number(sb, v->valuedouble);
	if (cJSON_IsString(v))
		return space_put_str(sb, v->valuestring ? v->valuestring : "");
	if (cJSON_IsArray(v)) {
		if (sb_putc(sb, '[') < 0)
			return -1;
		for (const cJSON *c = v->child; c; c = c->next) {
			if (c != v->child && sb_putc(sb, ',') < 0)
				return -1;
			if (space_js_stringify(sb, c) < 0)
				return -1;
		}
		return sb_putc(sb, ']');
	}
	if (cJSON_IsObject(v))
		return stringify_object(sb, v);
	return sb_puts(sb, "null");
}

int space_js_string_of(struct strbuf *sb, const cJSON *v)
{
	if (!v)
		return sb_puts(sb, "undefined");
	if (cJSON_IsString(v))
		return sb_puts(sb, v->valuestring ? v->valuestring : "");
	if (cJSON_IsNumber(v)) {
		/* String(x) differs from JSON.stringify only for NaN/Infinity,
		 * which JSON input cannot produce except by overflow. */
		if (isinf(v->valuedouble))
			return sb_puts(sb, v->valuedouble > 0 ? "Infinity" : "-Infinity");
		return put_number(sb, v->valuedouble);
	}
	if (cJSON_IsTrue(v))
		return sb_puts(sb, "true");
	if (cJSON_IsFalse(v))
		return sb_puts(sb, "false");
	if (cJSON_IsNull(v))
		return sb_puts(sb, "null");
	if (cJSON_IsArray(v)) {
		/* Array.prototype.join: null/undefined elements become "". */
		for (const cJSON *c = v->child; c; c = c->next) {
			if (c != v->child && sb_putc(sb, ',') < 0)
				return -1;
			if (!cJSON_IsNull(c) && space_js_string_of(sb, c) < 0)
				return -1;
		}
		return 0;
	}
	return sb_puts(sb, "[object Object]");
}

/* Length of the maximal valid prefix of a UTF-8 sequence at p (WHATWG
 * decoder): returns the sequence length if complete and valid, else the
 * negative count of bytes forming its maximal subpart (at least 1). */
static int utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	int need;
	unsigned char lo = 0x80, hi = 0xBF;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		need = 1;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0;
		if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F;
	} else {
		return -1;
	}
	for (int i = 1; i <= need; i++) {
		if ((size_t)i >= n || p[i] < lo || p[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xBF;
	}
	return need + 1;
}

char *space_utf8_repair(const char *s, size_t len, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		int k = utf8_seq(p + i, len - i);
		if (k < 0)
			break;
		i += (size_t)k;
	}
	if (i == len)
		return NULL;
	struct strbuf sb;
	sb_init(&sb, (len + 1) * 3);
	sb_append(&sb, s, i);
	while (i < len) {
		int k = utf8_seq(p + i, len - i);
		if (k > 0) {
			sb_append(&sb, s + i, (size_t)k);
			i += (size_t)k;
		} else {
			sb_append(&sb, "\xEF\xBF\xBD", 3);
			i += (size_t)-k;
		}
	}
	*out_len = sb.len;
	return sb_detach(&sb);
}

size_t space_history_limit(size_t member_count)
{
	size_t extra = member_count > 2 ? member_count - 2 : 0;
	if (extra > 16)
		return 1000;
	size_t n = 200 + extra * 50;
	return n > 1000 ? 1000 : n;
}
