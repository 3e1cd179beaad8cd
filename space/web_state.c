/*
 * space/web_state — each member's last identity, reflection and
 * workspace_state for the room's page, bounded. See web_state.h.
 */
#include "space/web_state.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonnul.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "space/proto.h"

#define LOG_COMP "space-web"

/* A room timestamp is 24 characters; anything longer is not one. */
#define TS_MAX_BYTES 32

void space_web_profile_clear(struct space_web_profile *p)
{
	free(p->identity);
	free(p->reflection);
	free(p->workspace);
	memset(p, 0, sizeof *p);
}

static void sb_cut_to(struct strbuf *sb, size_t len)
{
	sb->len = len;
	if (sb->buf)
		sb->buf[len] = '\0';
}

/* Appends v within max bytes of JSON (see the identity bounds in
 * web_state.h). Returns false with sb unchanged when it does not fit. */
static bool put_bounded(struct strbuf *sb, const cJSON *v, size_t max, int depth, bool *cut)
{
	size_t start = sb->len;
	if (cJSON_IsString(v)) {
		size_t l = strlen(v->valuestring);
		size_t k = space_js_cut(v->valuestring, l, SPACE_WEB_IDENTITY_STR_UNITS);
		*cut |= k < l;
		space_put_strn(sb, v->valuestring, k);
	} else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		if (depth >= SPACE_WEB_IDENTITY_DEPTH_MAX) {
			*cut = true;
			return false;
		}
		bool obj = cJSON_IsObject(v);
		size_t n = 0, seen = 0;
		sb_putc(sb, obj ? '{' : '[');
		for (const cJSON *e = v->child; e; e = e->next) {
			if (seen++ == SPACE_WEB_IDENTITY_ITEMS_MAX) {
				*cut = true;
				break;
			}
			size_t mark = sb->len;
			if (n)
				sb_putc(sb, ',');
			if (obj) {
				const char *key = e->string ? e->string : "";
				size_t kl = strlen(key);
				size_t kk = space_js_cut(key, kl, SPACE_WEB_IDENTITY_KEY_UNITS);
				*cut |= kk < kl;
				space_put_strn(sb, key, kk);
				sb_putc(sb, ':');
			}
			size_t used = sb->len - start + 1; /* and the closing bracket */
			if (used >= max || !put_bounded(sb, e, max - used, depth + 1, cut)) {
				sb_cut_to(sb, mark);
				*cut = true;
				continue;
			}
			n++;
		}
		sb_putc(sb, obj ? '}' : ']');
	} else {
		space_js_stringify(sb, v); /* a number, true, false, null */
	}
	if (sb->len - start > max) {
		sb_cut_to(sb, start);
		*cut = true;
		return false;
	}
	return true;
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ,"at":"<ts>" and ,"cut":true when cut, then the closing brace. */
static void close_with_at(struct strbuf *sb, const cJSON *msg, bool cut)
{
	const char *ts = str_of(msg, "timestamp");
	sb_puts(sb, ",\"at\":");
	if (ts && strlen(ts) <= TS_MAX_BYTES)
		space_put_str(sb, ts);
	else
		sb_puts(sb, "null");
	if (cut)
		sb_puts(sb, ",\"cut\":true");
	sb_putc(sb, '}');
}

static char *identity_json(const cJSON *msg)
{
	const cJSON *summary = cJSON_GetObjectItemCaseSensitive(msg, "summary");
	if (!cJSON_IsObject(summary) && !cJSON_IsArray(summary))
		return NULL;
	struct strbuf sb;
	sb_init(&sb, 0);
	bool cut = false;
	sb_puts(&sb, "{\"summary\":");
	if (!put_bounded(&sb, summary, SPACE_WEB_IDENTITY_MAX_BYTES, 0, &cut))
		sb_puts(&sb, cJSON_IsArray(summary) ? "[]" : "{}"); /* not reached: {} fits */
	close_with_at(&sb, msg, cut);
	return sb_detach(&sb);
}

/* Opens {"<key>":"<text cut to units>"; true when it was cut. */
static bool open_with_text(struct strbuf *sb, const char *key, const char *text, size_t units)
{
	size_t l = strlen(text);
	size_t k = space_js_cut(text, l, units);
	sb_printf(sb, "{\"%s\":", key);
	space_put_strn(sb, text, k);
	return k < l;
}

static char *reflection_json(const cJSON *msg)
{
	const char *summary = str_of(msg, "summary");
	if (!summary)
		return NULL;
	struct strbuf sb;
	sb_init(&sb, 0);
	bool cut = open_with_text(&sb, "summary", summary, SPACE_WEB_REFLECTION_UNITS);
	close_with_at(&sb, msg, cut);
	return sb_detach(&sb);
}

static void put_number(struct strbuf *sb, const char *key, const cJSON *msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, key);
	char num[40];
	sb_printf(sb, ",\"%s\":%s", key,
	          json_number_js(cJSON_IsNumber(v) ? v->valuedouble : 0, num));
}

static char *workspace_json(const cJSON *msg)
{
	const char *ws = str_of(msg, "workspace");
	if (!ws)
		return NULL;
	struct strbuf sb;
	sb_init(&sb, 0);
	bool cut = open_with_text(&sb, "workspace", ws, SPACE_WEB_WORKSPACE_UNITS);
	put_number(&sb, "planNumber", msg);
	put_number(&sb, "totalTasks", msg);
	put_number(&sb, "completedTasks", msg);
	put_number(&sb, "blockedTasks", msg);
	put_number(&sb, "inProgressTasks", msg);
	cut |= space_put_tasks(&sb, cJSON_GetObjectItemCaseSensitive(msg, "tasks"),
	                       SPACE_WEB_TASKS_MAX, SPACE_WEB_TASKS_MAX_BYTES);
	size_t rejected = 0; /* the room relays only pulls: none here */
	cut |= space_put_pulls(&sb, cJSON_GetObjectItemCaseSensitive(msg, "pulls"),
	                       SPACE_WEB_PULLS_MAX, SPACE_WEB_PULLS_MAX_BYTES, &rejected);
	close_with_at(&sb, msg, cut);
	return sb_detach(&sb);
}

/* The type of a room message: every one starts {"type":"<type>" (space/room.c). */
static bool type_is(const char *json, size_t len, const char *type)
{
	static const char pre[] = "{\"type\":\"";
	size_t tl = strlen(type);
	return len > sizeof pre + tl && memcmp(json, pre, sizeof pre - 1) == 0 &&
	       memcmp(json + sizeof pre - 1, type, tl) == 0 && json[sizeof pre - 1 + tl] == '"';
}

bool space_web_profile_apply(struct space_web_profile *p, const char *json, size_t len)
{
	char **slot;
	char *(*make)(const cJSON *);
	if (type_is(json, len, "identity")) {
		slot = &p->identity;
		make = identity_json;
	} else if (type_is(json, len, "reflection")) {
		slot = &p->reflection;
		make = reflection_json;
	} else if (type_is(json, len, "workspace_state")) {
		slot = &p->workspace;
		make = workspace_json;
	} else {
		return false;
	}
	struct ga_err err = {{0}};
	cJSON *msg = json_parse_js(json, len, &err);
	if (!msg) {
		log_warn(LOG_COMP, "a room broadcast did not parse: %s", err.msg);
		return false;
	}
	char *made = make(msg);
	cJSON_Delete(msg);
	if (!made)
		return false;
	free(*slot);
	*slot = made;
	return true;
}

static void put_or_null(struct strbuf *sb, const char *json)
{
	sb_puts(sb, json ? json : "null");
}

void space_web_profile_json(struct strbuf *sb, const struct space_web_profile *p, const char *name,
                            const char *id)
{
	sb_puts(sb, "{\"name\":");
	space_put_str(sb, name);
	sb_puts(sb, ",\"id\":");
	space_put_str(sb, id);
	sb_puts(sb, ",\"identity\":");
	put_or_null(sb, p->identity);
	sb_puts(sb, ",\"reflection\":");
	put_or_null(sb, p->reflection);
	sb_puts(sb, ",\"workspaceState\":");
	put_or_null(sb, p->workspace);
	sb_putc(sb, '}');
}

struct space_buf *space_web_profile_event(const struct space_web_profile *p, const char *name,
                                          const char *id)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "event: profile\ndata: ");
	space_web_profile_json(&sb, p, name, id);
	sb_puts(&sb, "\n\n");
	struct space_buf *b = space_buf_from_sb(&sb, SPACE_BUF_RAW);
	sb_free(&sb);
	return b;
}

void space_web_profiles_put(struct strbuf *sb, const struct space_room *room,
                            space_web_profile_fn profile_of)
{
	size_t start = sb->len, omitted = 0, n = 0;
	sb_puts(sb, ",\"profiles\":[");
	for (const struct space_conn *m = space_room_first_member(room); m; m = m->next) {
		const struct space_web_profile *p = profile_of ? profile_of(m) : NULL;
		if (!p || (!p->identity && !p->reflection && !p->workspace))
			continue;
		size_t mark = sb->len;
		if (n)
			sb_putc(sb, ',');
		space_web_profile_json(sb, p, m->name, m->id);
		if (sb->len - start > SPACE_WEB_PROFILES_MAX_BYTES) {
			sb_cut_to(sb, mark);
			omitted++;
			continue;
		}
		n++;
	}
	sb_printf(sb, "],\"profilesOmitted\":%zu", omitted);
}

char *space_web_snapshot_add_profiles(char *json, size_t len, const struct space_room *room,
                                      space_web_profile_fn profile_of,
                                      const struct space_web_plans *plans, size_t *out_len)
{
	if (!len || json[len - 1] != '}') {
		*out_len = len; /* not an object: left as it is */
		return json;
	}
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_append(&sb, json, len - 1);
	free(json);
	space_web_profiles_put(&sb, room, profile_of);
	if (plans)
		space_web_plans_put(&sb, plans);
	sb_putc(&sb, '}');
	*out_len = sb.len;
	return sb_detach(&sb);
}

struct space_buf *space_web_stream_add_profiles(struct space_buf *start,
                                                const struct space_room *room,
                                                space_web_profile_fn profile_of,
                                                const struct space_web_plans *plans)
{
	static const char tail[] = "}\n\n"; /* the end of the "room" event */
	const char *d = space_buf_data(start);
	size_t tl = sizeof tail - 1;
	if (start->len < tl || memcmp(d + start->len - tl, tail, tl) != 0)
		return start;
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_append(&sb, d, start->len - tl);
	space_web_profiles_put(&sb, room, profile_of);
	if (plans)
		space_web_plans_put(&sb, plans);
	sb_puts(&sb, tail);
	space_buf_unref(start);
	struct space_buf *b = space_buf_from_sb(&sb, SPACE_BUF_RAW);
	sb_free(&sb);
	return b;
}

/* --- the pull requests of each plan -------------------------------------------------- */

static void plan_free(struct space_web_plan *e)
{
	free(e->workspace);
	free(e->json);
	memset(e, 0, sizeof *e);
}

void space_web_plans_clear(struct space_web_plans *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		plan_free(&ps->e[i]);
	ps->n = 0;
}

/* Removes entry i, keeping the order. */
static void plan_remove(struct space_web_plans *ps, size_t i)
{
	plan_free(&ps->e[i]);
	memmove(&ps->e[i], &ps->e[i + 1], (ps->n - i - 1) * sizeof ps->e[0]);
	ps->n--;
	memset(&ps->e[ps->n], 0, sizeof ps->e[0]);
}

/* The "plan" event for one entry's JSON. */
static struct space_buf *plan_event(const char *json)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "event: plan\ndata: ");
	sb_puts(&sb, json);
	sb_puts(&sb, "\n\n");
	struct space_buf *b = space_buf_from_sb(&sb, SPACE_BUF_RAW);
	sb_free(&sb);
	return b;
}

struct space_buf *space_web_plans_apply(struct space_web_plans *ps, const char *json, size_t len,
                                        const char *name, int64_t now_ms)
{
	if (!type_is(json, len, "workspace_state"))
		return NULL;
	struct ga_err err = {{0}};
	cJSON *msg = json_parse_js(json, len, &err);
	if (!msg)
		return NULL; /* space_web_profile_apply logs it */
	const cJSON *pulls = cJSON_GetObjectItemCaseSensitive(msg, "pulls");
	const char *ws = str_of(msg, "workspace");
	if (!cJSON_IsArray(pulls) || !ws) {
		cJSON_Delete(msg);
		return NULL;
	}
	/* the entry */
	struct strbuf sb;
	sb_init(&sb, 0);
	bool cut = open_with_text(&sb, "workspace", ws, SPACE_WEB_WORKSPACE_UNITS);
	char *key = xstrndup(ws, space_js_cut(ws, strlen(ws), SPACE_WEB_WORKSPACE_UNITS));
	put_number(&sb, "planNumber", msg);
	sb_puts(&sb, ",\"reporter\":");
	space_put_strn(&sb, name, space_js_cut(name, strlen(name), SPACE_WEB_WORKSPACE_UNITS));
	size_t rejected = 0; /* the room relays only pulls: none here */
	cut |= space_put_pulls(&sb, pulls, SPACE_WEB_PULLS_MAX, SPACE_WEB_PULLS_MAX_BYTES,
	                       &rejected);
	close_with_at(&sb, msg, cut);
	const cJSON *num = cJSON_GetObjectItemCaseSensitive(msg, "planNumber");
	double number = cJSON_IsNumber(num) ? num->valuedouble : 0;
	bool empty = cJSON_GetArraySize(pulls) == 0;
	cJSON_Delete(msg);

	/* reports past their time go first */
	for (size_t i = ps->n; i-- > 0;)
		if (now_ms - ps->e[i].at_ms > SPACE_WEB_PLANS_TTL_MS)
			plan_remove(ps, i);
	size_t at = ps->n;
	for (size_t i = 0; i < ps->n && at == ps->n; i++)
		if (ps->e[i].number == number && strcmp(ps->e[i].workspace, key) == 0)
			at = i;
	struct space_buf *ev = NULL;
	if (empty) {
		if (at < ps->n) {
			plan_remove(ps, at);
			ev = plan_event(sb.buf);
		}
		free(key);
		sb_free(&sb);
		return ev;
	}
	if (at < ps->n) {
		plan_remove(ps, at); /* back in front with the new report */
	} else if (ps->n == SPACE_WEB_PLANS_MAX) {
		plan_remove(ps, ps->n - 1); /* the one reported longest ago */
		ps->evicted++;
	}
	memmove(&ps->e[1], &ps->e[0], ps->n * sizeof ps->e[0]);
	ps->e[0] = (struct space_web_plan){
	        .workspace = key, .number = number, .json = sb_detach(&sb), .at_ms = now_ms};
	ps->n++;
	return plan_event(ps->e[0].json);
}

void space_web_plans_put(struct strbuf *sb, const struct space_web_plans *ps)
{
	size_t start = sb->len, omitted = 0, n = 0;
	sb_puts(sb, ",\"plans\":[");
	for (size_t i = 0; i < ps->n; i++) {
		size_t mark = sb->len;
		if (n)
			sb_putc(sb, ',');
		sb_puts(sb, ps->e[i].json);
		if (sb->len - start + 1 > SPACE_WEB_PLANS_MAX_BYTES) {
			sb_cut_to(sb, mark);
			omitted++;
			continue;
		}
		n++;
	}
	sb_printf(sb, "],\"plansOmitted\":%zu,\"plansEvicted\":%llu", omitted,
	          (unsigned long long)ps->evicted);
}
