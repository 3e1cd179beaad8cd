/*
 * modules/space/identity — the identity summary and the stable agent id.
 * See identity.h.
 */
#include "modules/space/identity.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/identity/soul.h"

#define LOG_COMP "space"

static char *dup_cut(const char *s, size_t len, size_t max)
{
	while (len && isspace((unsigned char)*s))
		s++, len--;
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	return xstrndup(s, utf8_cut(s, len, max));
}

/* runtime-bluesky.md §2.1: fragments of SOUL split on . , ; that are 4..39
 * characters long, the first five. */
static void core_values(const char *soul, struct spc_identity *out)
{
	char *clean = xmalloc(SOUL_MAX_BYTES + 1);
	soul_essence(soul, 1 << 20, clean, SOUL_MAX_BYTES + 1);
	const char *p = clean;
	while (*p && out->n_core_values < SPC_IDENTITY_MAX_ITEMS) {
		size_t n = strcspn(p, ".,;");
		const char *s = p;
		size_t len = n;
		while (len && isspace((unsigned char)*s))
			s++, len--;
		while (len && isspace((unsigned char)s[len - 1]))
			len--;
		/* characters, not bytes: count code points */
		size_t chars = 0;
		for (size_t i = 0; i < len; i++)
			if (((unsigned char)s[i] & 0xC0) != 0x80)
				chars++;
		if (chars >= 4 && chars <= 39)
			out->core_values[out->n_core_values++] = xstrndup(s, len);
		p += n;
		if (*p)
			p++;
	}
	free(clean);
}

static void first_items(const struct self_list *l, char **dst, size_t *n)
{
	for (size_t i = 0; l && i < l->count && *n < SPC_IDENTITY_MAX_ITEMS; i++) {
		const char *it = l->items[i];
		if (!it || !*it)
			continue;
		dst[(*n)++] = dup_cut(it, strlen(it), SPACE_IDENTITY_ITEM_MAX);
	}
}

void space_identity_build(const char *soul_text, const struct self_doc *self,
                          const char *recent_work, struct spc_identity *out)
{
	memset(out, 0, sizeof *out);
	if (soul_text && *soul_text) {
		core_values(soul_text, out);
		char essence[SPACE_ESSENCE_MAX];
		soul_essence(soul_text, 3, essence, sizeof essence);
		if (essence[0])
			out->soul_essence = xstrdup(essence);
	}
	if (self) {
		first_items(&self->interests, out->interests, &out->n_interests);
		first_items(&self->learning, out->expertise, &out->n_expertise);
		if (self->voice) {
			const char *v = self->voice;
			while (*v) {
				size_t n = strcspn(v, "\n");
				char *line = dup_cut(v, n, SPC_VOICE_MAX_BYTES);
				if (*line) {
					out->voice = line;
					break;
				}
				free(line);
				v += n;
				if (*v)
					v++;
			}
		}
	}
	if (!out->voice)
		out->voice = xstrdup("unique voice");
	if (recent_work && *recent_work)
		out->recent_work =
		        dup_cut(recent_work, strlen(recent_work), SPC_RECENT_WORK_MAX_BYTES);
	else
		out->recent_work = xstrdup("No recent completed work");
}

char *space_identity_make_id(const char *name, int64_t now_ms, char *out, size_t cap)
{
	char b36[16];
	int i = (int)sizeof b36 - 1;
	b36[i] = '\0';
	uint64_t v = now_ms > 0 ? (uint64_t)now_ms : 0;
	do {
		b36[--i] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v && i > 0);
	snprintf(out, cap, "%s-%s", name, b36 + i);
	return out;
}

static bool id_usable(const char *id)
{
	if (!id || !*id)
		return false;
	size_t u = spc_js_length(id, strlen(id));
	if (u > SPC_ID_MAX_UNITS)
		return false;
	for (const char *p = id; *p; p++)
		if (!isspace((unsigned char)*p))
			return true;
	return false;
}

char *space_identity_agent_id(const struct state_store *st, const char *name, int64_t now_ms,
                              char out[SPACE_ID_BUF])
{
	if (st) {
		struct state_load_info info;
		cJSON *data = state_load(st, SPACE_IDENTITY_STATE_NAME, NULL, NULL, &info);
		const char *sname =
		        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "name"));
		const char *sid =
		        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "id"));
		if (sname && sid && strcmp(sname, name) == 0 && id_usable(sid) &&
		    strlen(sid) < SPACE_ID_BUF) {
			snprintf(out, SPACE_ID_BUF, "%s", sid);
			cJSON_Delete(data);
			return out;
		}
		if (data)
			log_kv(LOG_LEVEL_INFO, LOG_COMP,
			       "the saved agent-space id is for another "
			       "name or unusable; making a new one",
			       "saved_name", sname ? sname : "", "name", name);
		cJSON_Delete(data);
	}
	space_identity_make_id(name, now_ms, out, SPACE_ID_BUF);
	/* A name near the limit could push the id over 100 units: keep the
	 * suffix, shorten the name part. */
	while (!id_usable(out) && strlen(out) > 12) {
		size_t len = strlen(out);
		const char *dash = strrchr(out, '-');
		size_t keep = (size_t)(dash - out);
		if (keep == 0)
			break;
		keep = utf8_cut(out, keep, keep - 1);
		memmove(out + keep, dash, len - (size_t)(dash - out) + 1);
	}
	if (st) {
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "name", name);
		cJSON_AddStringToObject(data, "id", out);
		struct ga_err err = {{0}};
		if (state_save(st, SPACE_IDENTITY_STATE_NAME, data, now_ms, &err) != 0)
			log_kv(LOG_LEVEL_WARN, LOG_COMP,
			       "could not save the agent-space id; it will change on restart",
			       "error", err.msg);
		cJSON_Delete(data);
	}
	return out;
}
