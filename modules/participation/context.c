/*
 * context — data for §14 prompt pieces: points made and peers' promises
 * (derived from the history), and the peers' identities, reflections and
 * workspaces (from the room). See participation.h (part_points_made,
 * part_peer_commitments, part_peers_context).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/participation/participation.h"

static char *detach_or_empty(struct strbuf *sb)
{
	if (!sb->buf)
		return xstrdup("");
	return sb_detach(sb);
}

char *part_points_made(const struct part_state *st)
{
	struct strbuf sb = {0};
	size_t from = st->hist_n > PART_POINTS_MAX ? st->hist_n - PART_POINTS_MAX : 0;
	for (size_t i = from; i < st->hist_n; i++) {
		const struct part_entry *e = part_history_at(st, i);
		sb_printf(&sb, "%s:", e->author);
		/* Keep word characters (and any non-ASCII byte: §16.19, letters
		 * of other scripts are words too), drop punctuation, first
		 * PART_POINT_WORDS pieces. */
		size_t words = 0, j = 0;
		while (j < e->len && words < PART_POINT_WORDS) {
			while (j < e->len && isspace((unsigned char)e->text[j]))
				j++;
			if (j >= e->len)
				break;
			bool any = false;
			while (j < e->len && !isspace((unsigned char)e->text[j])) {
				unsigned char c = (unsigned char)e->text[j];
				if (isalnum(c) || c == '_' || c >= 0x80) {
					if (!any)
						sb_putc(&sb, ' ');
					sb_putc(&sb, (char)c);
					any = true;
				}
				j++;
			}
			words += any;
		}
		sb_putc(&sb, '\n');
	}
	return detach_or_empty(&sb);
}

char *part_peer_commitments(const struct part_state *st)
{
	struct strbuf sb = {0};
	for (size_t i = 0; i < st->hist_n; i++) {
		const struct part_entry *e = part_history_at(st, i);
		/* §16.25: host messages never, not only the current batch's. */
		if (e->self || e->host || !part_text_promises(e->text, e->len))
			continue;
		char *cut = part_utf16_prefix(e->text, e->len, PART_PEER_COMMIT_UNITS);
		sb_printf(&sb, "%s: \"%s\"\n", e->author, cut);
		free(cut);
	}
	return detach_or_empty(&sb);
}

/* ---- peers (§14.10) ----------------------------------------------------------------------- */

/* s cut to PART_PEER_FIELD_MAX_BYTES on a UTF-8 boundary, line breaks as
 * spaces, quotes kept. */
static void field(struct strbuf *sb, const char *s)
{
	size_t n = utf8_cut(s, strlen(s), PART_PEER_FIELD_MAX_BYTES);
	for (size_t i = 0; i < n; i++)
		sb_putc(sb, s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i]);
	if (n < strlen(s))
		sb_puts(sb, "…");
}

static bool list_field(struct strbuf *sb, const cJSON *id, const char *key, const char *label,
                       bool first)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(id, key);
	if (!cJSON_IsArray(a) || !cJSON_GetArraySize(a))
		return first;
	struct strbuf items = {0};
	for (const cJSON *it = a->child; it; it = it->next) {
		if (!cJSON_IsString(it) || !it->valuestring[0])
			continue;
		if (items.len)
			sb_puts(&items, ", ");
		sb_puts(&items, it->valuestring);
	}
	if (items.len) {
		sb_printf(sb, "%s%s: ", first ? " — " : "; ", label);
		field(sb, sb_cstr(&items));
		first = false;
	}
	sb_free(&items);
	return first;
}

static bool text_field(struct strbuf *sb, const cJSON *id, const char *key, const char *label,
                       bool first)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(id, key);
	if (!cJSON_IsString(v) || !v->valuestring[0])
		return first;
	sb_printf(sb, "%s%s: ", first ? " — " : "; ", label);
	field(sb, v->valuestring);
	return false;
}

char *part_peers_context(const char *self, const struct part_peer_note *peers, size_t n,
                         const struct part_workspace_note *ws, size_t nws)
{
	struct strbuf sb = {0};
	size_t shown = 0, left = 0;
	for (size_t i = 0; i < n; i++) {
		const struct part_peer_note *p = &peers[i];
		if (!p->name || (self && strcmp(p->name, self) == 0))
			continue;
		if (sb.len >= PART_PEERS_CONTEXT_MAX_BYTES) {
			left++;
			continue;
		}
		if (!shown++)
			sb_puts(&sb, "Peers:\n");
		sb_printf(&sb, "- %s", p->name);
		bool first = true;
		cJSON *id = p->identity_json ? cJSON_Parse(p->identity_json) : NULL;
		if (cJSON_IsObject(id)) {
			first = text_field(&sb, id, "voice", "voice", first);
			first = list_field(&sb, id, "currentInterests", "interests", first);
			first = list_field(&sb, id, "expertise", "expertise", first);
			first = text_field(&sb, id, "soulEssence", "essence", first);
		}
		cJSON_Delete(id);
		if (p->reflection && p->reflection[0]) {
			sb_printf(&sb, "%slatest reflection: \"", first ? " — " : "; ");
			field(&sb, p->reflection);
			sb_putc(&sb, '"');
		}
		sb_putc(&sb, '\n');
	}
	if (left)
		sb_printf(&sb, "(%zu more peers not shown)\n", left);
	size_t wshown = 0, wleft = 0;
	for (size_t i = 0; i < nws; i++) {
		const struct part_workspace_note *w = &ws[i];
		if (!w->workspace)
			continue;
		if (sb.len >= PART_PEERS_CONTEXT_MAX_BYTES) {
			wleft++;
			continue;
		}
		if (!wshown++)
			sb_puts(&sb, "Workspaces:\n");
		sb_puts(&sb, "- ");
		field(&sb, w->workspace);
		sb_printf(&sb,
		          ": plan %lld, %lld of %lld tasks done, %lld blocked, %lld in progress",
		          (long long)w->plan, (long long)w->completed, (long long)w->total,
		          (long long)w->blocked, (long long)w->in_progress);
		if (w->reporter && w->reporter[0]) {
			sb_puts(&sb, " (reported by ");
			field(&sb, w->reporter);
			sb_putc(&sb, ')');
		}
		sb_putc(&sb, '\n');
	}
	if (wleft)
		sb_printf(&sb, "(%zu more workspaces not shown)\n", wleft);
	return detach_or_empty(&sb);
}
