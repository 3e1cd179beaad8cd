/* peers — relationship memory per peer agent (peers.h). */
#include "modules/reflection/peers.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/conversation/event.h"
#include "modules/reflection/internal.h"

#define LOG_COMP "reflection"

void peers_init(struct peer_memory *pm)
{
	memset(pm, 0, sizeof *pm);
}

static void rel_clear(struct peer_rel *r)
{
	for (size_t i = 0; i < r->n_memorable; i++)
		free(r->memorable[i]);
	for (size_t i = 0; i < r->n_strengths; i++)
		free(r->strengths[i]);
	memset(r, 0, sizeof *r);
}

void peers_free(struct peer_memory *pm)
{
	for (size_t i = 0; i < pm->n; i++)
		rel_clear(&pm->items[i]);
	pm->n = 0;
}

const struct peer_rel *peers_find(const struct peer_memory *pm, const char *name)
{
	for (size_t i = 0; name && i < pm->n; i++)
		if (strcasecmp(pm->items[i].name, name) == 0)
			return &pm->items[i];
	return NULL;
}

struct peer_rel *peers_get(struct peer_memory *pm, const char *name, int64_t now_ms)
{
	if (refl_blank(name))
		return NULL;
	struct peer_rel *r = (struct peer_rel *)peers_find(pm, name);
	if (r)
		return r;
	if (pm->n == PEERS_MAX) {
		size_t old = 0;
		for (size_t i = 1; i < pm->n; i++)
			if (pm->items[i].last_interaction_ms < pm->items[old].last_interaction_ms)
				old = i;
		log_kv(LOG_LEVEL_INFO, LOG_COMP,
		       "peer memory full: the least recently met is forgotten", "peer",
		       pm->items[old].name, "limit", LOG_INT(PEERS_MAX));
		rel_clear(&pm->items[old]);
		pm->items[old] = pm->items[pm->n - 1];
		memset(&pm->items[pm->n - 1], 0, sizeof pm->items[0]);
		pm->n--;
	}
	r = &pm->items[pm->n++];
	memset(r, 0, sizeof *r);
	size_t keep = utf8_cut(name, strlen(name), PEER_NAME_MAX - 1);
	memcpy(r->name, name, keep);
	r->name[keep] = '\0';
	r->first_seen_ms = now_ms;
	pm->dirty = true;
	return r;
}

static void touch(struct peer_memory *pm, struct peer_rel *r, int64_t now_ms)
{
	if (now_ms > r->last_interaction_ms)
		r->last_interaction_ms = now_ms;
	pm->dirty = true;
}

void peers_note_message(struct peer_memory *pm, const char *name, int64_t now_ms)
{
	struct peer_rel *r = peers_get(pm, name, now_ms);
	if (!r)
		return;
	if (r->last_interaction_ms == 0 ||
	    now_ms - r->last_interaction_ms > PEER_CONVERSATION_GAP_MS)
		r->conversations++;
	touch(pm, r, now_ms);
}

void peers_count(struct peer_memory *pm, const char *name, enum peer_counter c, int64_t now_ms)
{
	struct peer_rel *r = peers_get(pm, name, now_ms);
	if (!r)
		return;
	switch (c) {
	case PEER_ISSUE_CO_CREATED:
		r->issues_co_created++;
		break;
	case PEER_PR_REVIEWED:
		r->prs_reviewed++;
		break;
	case PEER_DISAGREEMENT:
		r->productive_disagreements++;
		break;
	case PEER_AGREEMENT:
		r->agreements++;
		break;
	}
	touch(pm, r, now_ms);
}

/* Appends text to a list of at most max (the oldest dropped); dedup drops
 * an equal entry first so the text becomes the newest. */
static void list_add(char **list, size_t *n, size_t max, const char *text, bool dedup)
{
	if (refl_blank(text))
		return;
	char *copy = conv_text_dup(text, strlen(text), PEER_TEXT_MAX, NULL);
	if (dedup) {
		for (size_t i = 0; i < *n; i++) {
			if (strcasecmp(list[i], copy) == 0) {
				free(list[i]);
				memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof *list);
				(*n)--;
				break;
			}
		}
	}
	if (*n == max) {
		free(list[0]);
		memmove(&list[0], &list[1], (max - 1) * sizeof *list);
		(*n)--;
	}
	list[(*n)++] = copy;
}

void peers_add_memorable(struct peer_memory *pm, const char *name, const char *text, int64_t now_ms)
{
	struct peer_rel *r = peers_get(pm, name, now_ms);
	if (!r)
		return;
	list_add(r->memorable, &r->n_memorable, PEER_MEMORABLE_MAX, text, false);
	touch(pm, r, now_ms);
}

void peers_add_strength(struct peer_memory *pm, const char *name, const char *text, int64_t now_ms)
{
	struct peer_rel *r = peers_get(pm, name, now_ms);
	if (!r)
		return;
	list_add(r->strengths, &r->n_strengths, PEER_STRENGTHS_MAX, text, true);
	touch(pm, r, now_ms);
}

size_t peers_apply_notes(struct peer_memory *pm, const cJSON *notes, int64_t now_ms)
{
	size_t used = 0;
	const cJSON *n;
	if (!cJSON_IsArray(notes))
		return 0;
	cJSON_ArrayForEach(n, notes)
	{
		const char *name = json_string_or(n, "name", NULL);
		if (!cJSON_IsObject(n) || refl_blank(name))
			continue;
		const char *mem = json_string_or(n, "memorable", NULL);
		const char *str = json_string_or(n, "strength", NULL);
		if (mem)
			peers_add_memorable(pm, name, mem, now_ms);
		if (str)
			peers_add_strength(pm, name, str, now_ms);
		if (json_bool_or(n, "disagreement", false))
			peers_count(pm, name, PEER_DISAGREEMENT, now_ms);
		if (json_bool_or(n, "agreement", false))
			peers_count(pm, name, PEER_AGREEMENT, now_ms);
		used++;
	}
	return used;
}

/* ---- persistence ---------------------------------------------------------- */

static void add_time(cJSON *o, const char *k, int64_t ms)
{
	char ts[TIME_ISO_LEN + 1];
	if (ms > 0)
		cJSON_AddStringToObject(o, k, time_format_iso(ms, ts));
	else
		cJSON_AddNullToObject(o, k);
}

cJSON *peers_to_json(const struct peer_memory *pm)
{
	cJSON *data = cJSON_CreateObject();
	cJSON_AddNumberToObject(data, "format", PEERS_FORMAT);
	cJSON *arr = cJSON_AddArrayToObject(data, "peers");
	for (size_t i = 0; i < pm->n; i++) {
		const struct peer_rel *r = &pm->items[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", r->name);
		cJSON_AddNumberToObject(o, "conversations", (double)r->conversations);
		cJSON_AddNumberToObject(o, "issuesCoCreated", (double)r->issues_co_created);
		cJSON_AddNumberToObject(o, "prsReviewed", (double)r->prs_reviewed);
		cJSON_AddNumberToObject(o, "productiveDisagreements",
		                        (double)r->productive_disagreements);
		cJSON_AddNumberToObject(o, "agreements", (double)r->agreements);
		add_time(o, "firstSeen", r->first_seen_ms);
		add_time(o, "lastInteraction", r->last_interaction_ms);
		cJSON *m = cJSON_AddArrayToObject(o, "memorableExchanges");
		for (size_t k = 0; k < r->n_memorable; k++)
			cJSON_AddItemToArray(m, cJSON_CreateString(r->memorable[k]));
		cJSON *s = cJSON_AddArrayToObject(o, "complementaryStrengths");
		for (size_t k = 0; k < r->n_strengths; k++)
			cJSON_AddItemToArray(s, cJSON_CreateString(r->strengths[k]));
		cJSON_AddItemToArray(arr, o);
	}
	return data;
}

static int64_t count_or0(const cJSON *o, const char *k)
{
	int64_t v = json_int_or(o, k, 0);
	return v < 0 ? 0 : v;
}

static int64_t time_or0(const cJSON *o, const char *k)
{
	int64_t ms = 0;
	const char *s = json_string_or(o, k, NULL);
	if (s && time_parse_iso(s, &ms) == 0)
		return ms;
	return 0;
}

int peers_from_json(struct peer_memory *pm, const cJSON *data)
{
	peers_free(pm);
	if (!cJSON_IsObject(data) || json_int_or(data, "format", -1) != PEERS_FORMAT)
		return -1;
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(data, "peers");
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		const char *name = json_string_or(o, "name", NULL);
		if (!cJSON_IsObject(o) || refl_blank(name) || peers_find(pm, name))
			continue;
		struct peer_rel *r = peers_get(pm, name, time_or0(o, "firstSeen"));
		r->conversations = count_or0(o, "conversations");
		r->issues_co_created = count_or0(o, "issuesCoCreated");
		r->prs_reviewed = count_or0(o, "prsReviewed");
		r->productive_disagreements = count_or0(o, "productiveDisagreements");
		r->agreements = count_or0(o, "agreements");
		const cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(
		                               o, "memorableExchanges")) if (cJSON_IsString(it))
		        list_add(r->memorable, &r->n_memorable, PEER_MEMORABLE_MAX, it->valuestring,
		                 false);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(
		                               o, "complementaryStrengths")) if (cJSON_IsString(it))
		        list_add(r->strengths, &r->n_strengths, PEER_STRENGTHS_MAX, it->valuestring,
		                 true);
		r->last_interaction_ms = time_or0(o, "lastInteraction");
	}
	pm->dirty = false;
	return 0;
}

/* Format 1 (ts-general-agent's peer_relationships.json) → format 2, in place. */
int peers_migrate(void *ud, cJSON *data, const char *from_version)
{
	(void)ud;
	if (!cJSON_IsObject(data))
		return -1;
	int64_t format = json_int_or(data, "format", 1);
	if (format == PEERS_FORMAT)
		return 0;
	if (format != 1)
		return -1;
	const cJSON *rels = cJSON_GetObjectItemCaseSensitive(data, "relationships");
	cJSON *peers = cJSON_CreateArray();
	const cJSON *r;
	cJSON_ArrayForEach(r, rels)
	{
		if (!cJSON_IsObject(r))
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", json_string_or(r, "peerName", r->string));
		cJSON_AddNumberToObject(o, "conversations",
		                        (double)count_or0(r, "spaceConversations"));
		cJSON_AddNumberToObject(o, "issuesCoCreated",
		                        (double)count_or0(r, "issuesCoCreated"));
		cJSON_AddNumberToObject(o, "prsReviewed", (double)count_or0(r, "prsReviewed"));
		cJSON_AddNumberToObject(o, "productiveDisagreements",
		                        (double)count_or0(r, "productiveDisagreements"));
		cJSON_AddNumberToObject(o, "agreements", (double)count_or0(r, "agreements"));
		const char *last = json_string_or(r, "lastInteraction", NULL);
		if (last)
			cJSON_AddStringToObject(o, "lastInteraction", last);
		cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "memorableExchanges");
		if (cJSON_IsArray(m))
			cJSON_AddItemToObject(o, "memorableExchanges", cJSON_Duplicate(m, 1));
		cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "complementaryStrengths");
		if (cJSON_IsArray(s))
			cJSON_AddItemToObject(o, "complementaryStrengths", cJSON_Duplicate(s, 1));
		cJSON_AddItemToArray(peers, o);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(data, "relationships");
	cJSON_DeleteItemFromObjectCaseSensitive(data, "peers");
	cJSON_DeleteItemFromObjectCaseSensitive(data, "format");
	cJSON_AddNumberToObject(data, "format", PEERS_FORMAT);
	cJSON_AddItemToObject(data, "peers", peers);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "peer relationships migrated", "from",
	       from_version ? from_version : "?", "peers", LOG_INT(cJSON_GetArraySize(peers)));
	return 0;
}

int peers_load(struct peer_memory *pm, const struct state_store *st)
{
	struct state_load_info info;
	cJSON *data = state_load(st, PEERS_STATE_NAME, peers_migrate, NULL, &info);
	int rc = 0;
	if (data && peers_from_json(pm, data) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "peer_relationships is not a known format: starting empty", "format",
		       LOG_INT(json_int_or(data, "format", -1)));
		rc = -1;
	}
	cJSON_Delete(data);
	return rc;
}

int peers_save(struct peer_memory *pm, const struct state_store *st, int64_t now_ms,
               struct ga_err *err)
{
	cJSON *data = peers_to_json(pm);
	int rc = state_save(st, PEERS_STATE_NAME, data, now_ms, err);
	cJSON_Delete(data);
	if (rc == 0)
		pm->dirty = false;
	return rc;
}

/* ---- rendering ------------------------------------------------------------ */

static void plural(struct strbuf *sb, int64_t n, const char *one, const char *many)
{
	sb_printf(sb, "%lld %s", (long long)n, n == 1 ? one : many);
}

static void render_one(struct strbuf *sb, const struct peer_rel *r)
{
	sb_printf(sb, "%s: ", r->name);
	plural(sb, r->conversations, "conversation", "conversations");
	sb_puts(sb, " · ");
	plural(sb, r->issues_co_created, "issue co-created", "issues co-created");
	sb_puts(sb, " · ");
	plural(sb, r->prs_reviewed, "PR reviewed", "PRs reviewed");
	if (r->productive_disagreements) {
		sb_puts(sb, " · ");
		plural(sb, r->productive_disagreements, "productive disagreement",
		       "productive disagreements");
	}
	if (r->n_memorable) {
		sb_puts(sb, " · Notable: ");
		for (size_t k = r->n_memorable; k-- > 0;)
			sb_printf(sb, "%s%s", r->memorable[k], k ? "; " : "");
	}
	if (r->n_strengths) {
		sb_puts(sb, " · Strengths: ");
		for (size_t k = r->n_strengths; k-- > 0;)
			sb_printf(sb, "%s%s", r->strengths[k], k ? ", " : "");
	}
	sb_putc(sb, '\n');
}

static int by_recent(const void *a, const void *b)
{
	const struct peer_rel *x = *(const struct peer_rel *const *)a;
	const struct peer_rel *y = *(const struct peer_rel *const *)b;
	return (y->last_interaction_ms > x->last_interaction_ms) -
	       (y->last_interaction_ms < x->last_interaction_ms);
}

char *peers_render(const struct peer_memory *pm, const char *const *names, size_t n_names)
{
	const struct peer_rel *sel[PEERS_MAX];
	size_t n = 0;
	for (size_t i = 0; i < pm->n; i++) {
		bool want = names == NULL;
		for (size_t k = 0; !want && k < n_names; k++)
			want = names[k] && strcasecmp(names[k], pm->items[i].name) == 0;
		if (want)
			sel[n++] = &pm->items[i];
	}
	qsort(sel, n, sizeof *sel, by_recent);
	struct strbuf sb;
	sb_init(&sb, PEERS_RENDER_MAX * 2);
	for (size_t i = 0; i < n; i++) {
		size_t before = sb.len;
		render_one(&sb, sel[i]);
		if (sb.len > PEERS_RENDER_MAX) {
			/* whole lines only: the last one that fit ends the paragraph */
			sb.len = before;
			if (sb.buf)
				sb.buf[before] = '\0';
			break;
		}
	}
	if (sb.len && sb.buf[sb.len - 1] == '\n')
		sb.buf[--sb.len] = '\0';
	char *out = sb_detach(&sb);
	return out ? out : xstrdup("");
}

char *peers_render_from_store(const struct state_store *st, const char *const *names,
                              size_t n_names)
{
	struct peer_memory pm;
	peers_init(&pm);
	peers_load(&pm, st);
	char *out = peers_render(&pm, names, n_names);
	peers_free(&pm);
	return out;
}
