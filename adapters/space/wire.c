/*
 * adapters/space/wire — parse server messages, build client messages.
 * See wire.h for the contract.
 */
#include "adapters/space/wire.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonnul.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

static const struct {
	const char *name;
	enum spc_type type;
} TYPES[] = {
        {"join", SPC_T_JOIN},
        {"leave", SPC_T_LEAVE},
        {"presence", SPC_T_PRESENCE},
        {"history_response", SPC_T_HISTORY},
        {"chat", SPC_T_CHAT},
        {"typing", SPC_T_TYPING},
        {"identity", SPC_T_IDENTITY},
        {"claim", SPC_T_CLAIM},
        {"state", SPC_T_STATE},
        {"action_result", SPC_T_ACTION_RESULT},
        {"reflection", SPC_T_REFLECTION},
        {"workspace_state", SPC_T_WORKSPACE_STATE},
        {"error", SPC_T_ERROR},
        {"shutdown", SPC_T_SHUTDOWN},
};

const char *spc_type_name(enum spc_type t)
{
	for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
		if (TYPES[i].type == t)
			return TYPES[i].name;
	return "unknown";
}

/* --- JS lengths ------------------------------------------------------------------ */

size_t spc_js_length(const char *s, size_t len)
{
	return utf8_utf16_length(s, len);
}

size_t spc_js_prefix(const char *s, size_t len, size_t max_units)
{
	return utf8_utf16_prefix(s, len, max_units);
}

/* --- parsing ------------------------------------------------------------------------ */

static const char *str_field(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *array_field(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsArray(v) ? v : NULL;
}

/* JavaScript truthiness of a relayed value (§2.2, chat threadId). */
static bool js_truthy(const cJSON *v)
{
	if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v))
		return false;
	if (cJSON_IsString(v))
		return v->valuestring[0] != '\0';
	if (cJSON_IsNumber(v))
		return v->valuedouble != 0;
	return true;
}

static int need(const char *v, const char *type, const char *field, struct ga_err *err)
{
	if (v)
		return 0;
	return err_set(err, "a '%s' message without a string '%s' field", type, field);
}

static int lift(struct spc_msg *m, const char *tname, struct ga_err *err)
{
	const cJSON *o = m->root;
	m->name = str_field(o, "name");
	m->id = str_field(o, "id");
	m->timestamp = str_field(o, "timestamp");
	if (m->timestamp && time_parse_iso(m->timestamp, &m->time_ms) != 0)
		m->time_ms = 0;

	switch (m->type) {
	case SPC_T_JOIN:
		m->version = str_field(o, "version");
		m->capabilities = array_field(o, "capabilities");
		/* name and id are what matter, as for leave and typing */
		__attribute__((fallthrough));
	case SPC_T_LEAVE:
	case SPC_T_TYPING:
		if (need(m->name, tname, "name", err) || need(m->id, tname, "id", err))
			return -1;
		return 0;
	case SPC_T_PRESENCE:
		m->agents = array_field(o, "agents");
		if (!m->agents)
			return err_set(err, "a 'presence' message without an 'agents' array");
		return 0;
	case SPC_T_HISTORY:
		m->entries = array_field(o, "entries");
		if (!m->entries)
			return err_set(err, "a 'history_response' without an 'entries' array");
		return 0;
	case SPC_T_CHAT: {
		m->content = str_field(o, "content");
		if (need(m->name, tname, "name", err) || need(m->id, tname, "id", err) ||
		    need(m->content, tname, "content", err))
			return -1;
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "threadId");
		m->thread_id = js_truthy(t) ? t : NULL;
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "chain");
		if (cJSON_IsNumber(c) && c->valuedouble >= 0 && c->valuedouble <= 1e6 &&
		    c->valuedouble == (double)(int64_t)c->valuedouble) {
			m->has_chain = true;
			m->chain = (int64_t)c->valuedouble;
		}
		m->addressed = array_field(o, "addressed");
		return 0;
	}
	case SPC_T_IDENTITY: {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "summary");
		if (need(m->name, tname, "name", err) || need(m->id, tname, "id", err))
			return -1;
		if (!cJSON_IsObject(s) && !cJSON_IsArray(s))
			return err_set(err, "an 'identity' message without a 'summary' object");
		m->summary = s;
		return 0;
	}
	case SPC_T_CLAIM:
	case SPC_T_ACTION_RESULT: {
		m->action = str_field(o, "action");
		m->target = str_field(o, "target");
		if (need(m->name, tname, "name", err) || need(m->action, tname, "action", err) ||
		    need(m->target, tname, "target", err))
			return -1;
		if (m->type == SPC_T_ACTION_RESULT) {
			const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "success");
			if (!cJSON_IsBool(ok))
				return err_set(err,
				               "an 'action_result' without a boolean 'success'");
			m->success = cJSON_IsTrue(ok);
			m->link = str_field(o, "link");
			m->error = str_field(o, "error");
		}
		return 0;
	}
	case SPC_T_STATE:
		m->state = str_field(o, "state");
		m->detail = cJSON_GetObjectItemCaseSensitive(o, "detail");
		if (need(m->name, tname, "name", err) || need(m->id, tname, "id", err) ||
		    need(m->state, tname, "state", err))
			return -1;
		return 0;
	case SPC_T_ERROR:
		m->message = str_field(o, "message");
		return need(m->message, tname, "message", err);
	case SPC_T_SHUTDOWN:
		m->reason = str_field(o, "reason");
		return 0;
	case SPC_T_REFLECTION:
	case SPC_T_WORKSPACE_STATE:
	case SPC_T_UNKNOWN:
		return 0;
	}
	return 0;
}

int spc_msg_parse(const char *buf, size_t len, struct spc_msg *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	struct ga_err jerr = {{0}};
	/* "\u0000" is valid JSON that the server relays: parsed, not refused,
	 * and kept as JSON_NUL_MARK (wire.h, "U+0000"). */
	cJSON *root = json_parse_nul(buf, len, &jerr);
	if (!root)
		return err_set(err, "not JSON: %s", jerr.msg);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return err_set(err, "a message that is not a JSON object");
	}
	out->root = root;
	const char *t = str_field(root, "type");
	out->type = SPC_T_UNKNOWN;
	for (size_t i = 0; t && i < sizeof TYPES / sizeof TYPES[0]; i++)
		if (strcmp(TYPES[i].name, t) == 0)
			out->type = TYPES[i].type;
	if (lift(out, t ? t : "", err) != 0) {
		cJSON_Delete(root);
		memset(out, 0, sizeof *out);
		return -1;
	}
	return 0;
}

char *spc_text_dup(const char *s, size_t *len)
{
	char *t = xstrdup(s);
	*len = json_unmark_nul(t);
	return t;
}

void spc_msg_free(struct spc_msg *m)
{
	if (!m)
		return;
	cJSON_Delete(m->root);
	memset(m, 0, sizeof *m);
}

/* --- building ------------------------------------------------------------------------ */

/* A strbuf whose first failed append (over SPC_BUILD_MAX_BYTES) spoils the
 * whole message: a message must never go out with a field silently
 * missing. */
struct out {
	struct strbuf sb;
	bool bad;
};

static void o_raw(struct out *o, const char *s)
{
	if (!o->bad && sb_puts(&o->sb, s) != 0)
		o->bad = true;
}

static void o_json(struct out *o, const char *v)
{
	/* A U+0000 of a parsed string (the marker) goes back out as "\u0000". */
	if (!o->bad && json_put_string_nul(&o->sb, v ? v : "", v ? strlen(v) : 0) != 0)
		o->bad = true;
}

static void o_str(struct out *o, const char *key, const char *v)
{
	o_raw(o, ",\"");
	o_raw(o, key);
	o_raw(o, "\":");
	o_json(o, v);
}

static void begin(struct out *o, const char *type, const struct spc_who *w)
{
	sb_init(&o->sb, SPC_BUILD_MAX_BYTES);
	o->bad = false;
	o_raw(o, "{\"type\":\"");
	o_raw(o, type);
	o_raw(o, "\"");
	o_str(o, "name", w->name);
	o_str(o, "id", w->id);
}

/* NULL when the message outgrew SPC_BUILD_MAX_BYTES. */
static char *finish(struct out *o, int64_t now_ms, bool stamp)
{
	if (stamp) {
		char iso[TIME_ISO_LEN + 1];
		o_str(o, "timestamp", time_format_iso(now_ms, iso));
	}
	o_raw(o, "}");
	if (o->bad) {
		sb_free(&o->sb);
		return NULL;
	}
	return sb_detach(&o->sb);
}

/* first: the object's first key (no leading comma). */
static void o_list(struct out *o, const char *key, char *const *items, size_t n, bool first)
{
	if (!first)
		o_raw(o, ",");
	o_raw(o, "\"");
	o_raw(o, key);
	o_raw(o, "\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			o_raw(o, ",");
		o_json(o, items[i]);
	}
	o_raw(o, "]");
}

char *spc_identity_json(const struct spc_identity *id)
{
	struct out o;
	sb_init(&o.sb, SPC_BUILD_MAX_BYTES);
	o.bad = false;
	o_raw(&o, "{");
	o_list(&o, "coreValues", id->core_values, id->n_core_values, true);
	o_list(&o, "currentInterests", id->interests, id->n_interests, false);
	o_str(&o, "voice", id->voice ? id->voice : "unique voice");
	o_list(&o, "expertise", id->expertise, id->n_expertise, false);
	o_str(&o, "recentWork", id->recent_work ? id->recent_work : "No recent completed work");
	if (id->soul_essence && *id->soul_essence)
		o_str(&o, "soulEssence", id->soul_essence);
	if (id->github_login && *id->github_login)
		o_str(&o, "githubLogin", id->github_login);
	return finish(&o, 0, false);
}

void spc_identity_free(struct spc_identity *id)
{
	if (!id)
		return;
	for (size_t i = 0; i < id->n_core_values; i++)
		free(id->core_values[i]);
	for (size_t i = 0; i < id->n_interests; i++)
		free(id->interests[i]);
	for (size_t i = 0; i < id->n_expertise; i++)
		free(id->expertise[i]);
	free(id->voice);
	free(id->recent_work);
	free(id->soul_essence);
	free(id->github_login);
	memset(id, 0, sizeof *id);
}

char *spc_build_join(const struct spc_who *w, const char *version, const char *const *caps,
                     size_t ncaps)
{
	struct out o;
	begin(&o, "join", w);
	o_str(&o, "version", version);
	if (caps)
		o_list(&o, "capabilities", (char *const *)caps, ncaps, false);
	return finish(&o, 0, false);
}

char *spc_build_identity(const struct spc_who *w, const char *summary_json, int64_t now_ms)
{
	struct out o;
	begin(&o, "identity", w);
	o_raw(&o, ",\"summary\":");
	o_raw(&o, summary_json && *summary_json ? summary_json : "{}");
	return finish(&o, now_ms, true);
}

char *spc_build_chat(const struct spc_who *w, const char *content, const char *thread_id,
                     int64_t chain, int64_t now_ms)
{
	struct out o;
	begin(&o, "chat", w);
	o_str(&o, "content", content);
	char iso[TIME_ISO_LEN + 1];
	o_str(&o, "timestamp", time_format_iso(now_ms, iso));
	if (thread_id && *thread_id)
		o_str(&o, "threadId", thread_id);
	if (chain >= 0) {
		char num[32];
		snprintf(num, sizeof num, ",\"chain\":%lld", (long long)chain);
		o_raw(&o, num);
	}
	return finish(&o, now_ms, false);
}

char *spc_build_typing(const struct spc_who *w, int64_t now_ms)
{
	struct out o;
	begin(&o, "typing", w);
	return finish(&o, now_ms, true);
}

char *spc_build_claim(const struct spc_who *w, const char *action, const char *target,
                      int64_t since_ms, int64_t now_ms)
{
	struct out o;
	begin(&o, "claim", w);
	o_str(&o, "action", action);
	o_str(&o, "target", target);
	if (since_ms > 0) {
		char iso[TIME_ISO_LEN + 1];
		o_str(&o, "since", time_format_iso(since_ms, iso));
	}
	return finish(&o, now_ms, true);
}

char *spc_build_state(const struct spc_who *w, const char *state, const char *detail,
                      int64_t now_ms)
{
	struct out o;
	begin(&o, "state", w);
	o_str(&o, "state", state);
	if (detail)
		o_str(&o, "detail", detail);
	return finish(&o, now_ms, true);
}

char *spc_build_action_result(const struct spc_who *w, const char *action, const char *target,
                              bool success, const char *link, const char *error, int64_t now_ms)
{
	struct out o;
	begin(&o, "action_result", w);
	o_str(&o, "action", action);
	o_str(&o, "target", target);
	o_raw(&o, success ? ",\"success\":true" : ",\"success\":false");
	if (link)
		o_str(&o, "link", link);
	if (error)
		o_str(&o, "error", error);
	return finish(&o, now_ms, true);
}

char *spc_build_reflection(const struct spc_who *w, const char *summary, int64_t now_ms)
{
	struct out o;
	begin(&o, "reflection", w);
	o_str(&o, "summary", summary);
	return finish(&o, now_ms, true);
}

/* --- URLs ------------------------------------------------------------------------------ */

int spc_url_parse(const char *url, struct spc_url *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	const char *p;
	if (!url)
		return err_set(err, "no URL");
	if (strncasecmp(url, "ws://", 5) == 0) {
		p = url + 5;
		out->port = 80;
	} else if (strncasecmp(url, "wss://", 6) == 0) {
		p = url + 6;
		out->tls = true;
		out->port = 443;
	} else {
		return err_set(err, "'%s' is not a ws:// or wss:// URL", url);
	}
	const char *host = p, *host_end;
	if (*p == '[') {
		host = p + 1;
		host_end = strchr(host, ']');
		if (!host_end)
			return err_set(err, "'%s': an IPv6 address needs a closing ']'", url);
		p = host_end + 1;
	} else {
		while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '#')
			p++;
		host_end = p;
	}
	size_t hl = (size_t)(host_end - host);
	if (hl == 0 || hl >= sizeof out->host)
		return err_set(err, "'%s' has no usable host name", url);
	for (const char *h = host; h < host_end; h++)
		if (isspace((unsigned char)*h) || *h == '@')
			return err_set(err, "'%s' has an invalid host name", url);
	memcpy(out->host, host, hl);
	if (*p == ':') {
		p++;
		char *end;
		long port = strtol(p, &end, 10);
		if (end == p || port < 1 || port > 65535)
			return err_set(err, "'%s' has an invalid port (1-65535)", url);
		out->port = (int)port;
		p = end;
	}
	if (*p == '\0') {
		strcpy(out->path, "/");
	} else if (*p == '/' || *p == '?') {
		if (strlen(p) + 2 > sizeof out->path)
			return err_set(err, "'%s' has a path longer than %zu bytes", url,
			               sizeof out->path - 2);
		snprintf(out->path, sizeof out->path, "%s%s", *p == '?' ? "/" : "", p);
	} else {
		return err_set(err, "'%s' has unexpected text after the host", url);
	}
	for (const char *q = out->path; *q; q++)
		if ((unsigned char)*q <= 0x20 || *q == 0x7f)
			return err_set(
			        err, "'%s' has white space or control characters in its path", url);
	return 0;
}
