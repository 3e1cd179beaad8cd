/* store — the multi-party conversation store (see store.h). */
#include "modules/conversation/store.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

/* The saved form carries its own format number so that a new agent version
 * keeps the answered set (the state envelope's version is the agent's). */
#define STORE_FORMAT 1

struct conv {
	char *key;
	struct conv_message *msgs; /* ring of at most CONV_STORE_MAX_MESSAGES */
	size_t cap, start, len;
	int64_t last_ms;
};

struct conv_store {
	struct conv *convs[CONV_STORE_MAX_CONVERSATIONS]; /* most recent first */
	size_t nconvs;
	char *answered[CONV_STORE_MAX_ANSWERED]; /* ring, oldest first from start */
	size_t astart, alen;
	bool dirty;
	int64_t last_save_ms;
};

/* ---- messages and conversations ------------------------------------------ */

static void message_free(struct conv_message *m)
{
	free(m->message_id);
	free(m->parent_id);
	free(m->author_id);
	free(m->author_name);
	free(m->text);
	memset(m, 0, sizeof *m);
}

static void conv_free(struct conv *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->len; i++)
		message_free(&c->msgs[(c->start + i) % c->cap]);
	free(c->msgs);
	free(c->key);
	free(c);
}

static struct conv_message *conv_at(const struct conv *c, size_t i)
{
	return &c->msgs[(c->start + i) % c->cap];
}

/* A fresh slot at the end (the oldest message is dropped when full). */
static struct conv_message *conv_push(struct conv *c)
{
	if (c->len < CONV_STORE_MAX_MESSAGES) {
		if (c->len == c->cap) {
			/* not wrapped until full, so growing keeps the order */
			size_t ncap = c->cap ? c->cap * 2 : 8;
			if (ncap > CONV_STORE_MAX_MESSAGES)
				ncap = CONV_STORE_MAX_MESSAGES;
			c->msgs = xreallocarray(c->msgs, ncap, sizeof *c->msgs);
			c->cap = ncap;
		}
		struct conv_message *m = &c->msgs[c->len++];
		memset(m, 0, sizeof *m);
		return m;
	}
	struct conv_message *m = &c->msgs[c->start];
	message_free(m);
	c->start = (c->start + 1) % c->cap;
	return m;
}

static long conv_find_msg(const struct conv *c, const char *id)
{
	if (!id || !*id)
		return -1;
	for (size_t i = c->len; i-- > 0;)
		if (strcmp(conv_at(c, i)->message_id, id) == 0)
			return (long)i;
	return -1;
}

static long find_conv(const struct conv_store *s, const char *key)
{
	if (!key)
		return -1;
	for (size_t i = 0; i < s->nconvs; i++)
		if (strcmp(s->convs[i]->key, key) == 0)
			return (long)i;
	return -1;
}

static const struct conv *get_conv(const struct conv_store *s, const char *key)
{
	long i = find_conv(s, key);
	return i < 0 ? NULL : s->convs[i];
}

/* Moves convs[i] to the front (most recent). */
static void touch(struct conv_store *s, size_t i)
{
	struct conv *c = s->convs[i];
	memmove(&s->convs[1], &s->convs[0], i * sizeof s->convs[0]);
	s->convs[0] = c;
}

/* The conversation for key, created at the front when new (dropping the
 * least recently used one when full); at the back when `at_back` (load). */
static struct conv *conv_get_or_create(struct conv_store *s, const char *key, bool at_back)
{
	long i = find_conv(s, key);
	if (i >= 0)
		return s->convs[i];
	if (at_back && s->nconvs == CONV_STORE_MAX_CONVERSATIONS)
		return NULL;
	if (s->nconvs == CONV_STORE_MAX_CONVERSATIONS) {
		conv_free(s->convs[s->nconvs - 1]);
		s->nconvs--;
	}
	struct conv *c = xcalloc(1, sizeof *c);
	c->key = xstrdup(key);
	if (at_back) {
		s->convs[s->nconvs++] = c;
	} else {
		memmove(&s->convs[1], &s->convs[0], s->nconvs * sizeof s->convs[0]);
		s->convs[0] = c;
		s->nconvs++;
	}
	return c;
}

/* ---- the store ------------------------------------------------------------ */

struct conv_store *conv_store_new(void)
{
	return xcalloc(1, sizeof(struct conv_store));
}

static void store_clear(struct conv_store *s)
{
	for (size_t i = 0; i < s->nconvs; i++)
		conv_free(s->convs[i]);
	s->nconvs = 0;
	for (size_t i = 0; i < s->alen; i++)
		free(s->answered[(s->astart + i) % CONV_STORE_MAX_ANSWERED]);
	s->astart = s->alen = 0;
}

void conv_store_free(struct conv_store *s)
{
	if (!s)
		return;
	store_clear(s);
	free(s);
}

static void message_fill(struct conv_message *m, const char *id, const char *parent,
                         const char *author_id, const char *author_name, enum conv_author_kind kind,
                         bool is_bot, int64_t chain, const char *text, size_t text_len,
                         int64_t time_ms, bool answered)
{
	m->message_id = xstrdup(id ? id : "");
	m->parent_id = parent ? xstrdup(parent) : NULL;
	m->author_id = xstrdup(author_id ? author_id : "");
	m->author_name = xstrdup(author_name ? author_name : "");
	m->author_kind = kind;
	m->is_bot = is_bot;
	m->chain = chain;
	m->text = conv_text_dup(text, text_len, CONV_STORE_MAX_TEXT_BYTES, &m->text_len);
	m->time_ms = time_ms;
	m->answered = answered;
}

int conv_store_add(struct conv_store *s, const struct conv_event *ev)
{
	if (!s || !ev)
		return 0;
	const char *key = ev->conversation ? ev->conversation : "";
	long ci = find_conv(s, key);
	if (ci >= 0 && conv_find_msg(s->convs[ci], ev->message_id) >= 0)
		return 0;
	struct conv *c;
	if (ci >= 0) {
		touch(s, (size_t)ci);
		c = s->convs[0];
	} else {
		c = conv_get_or_create(s, key, false);
	}
	struct conv_message *m = conv_push(c);
	message_fill(m, ev->message_id, ev->parent_id, ev->author_id, ev->author_name,
	             ev->author_kind, ev->is_bot, ev->chain, ev->text, ev->text_len, ev->time_ms,
	             conv_store_answered(s, ev->message_id));
	c->last_ms = ev->time_ms;
	s->dirty = true;
	return 1;
}

bool conv_store_conclude(struct conv_store *s, const char *key, int64_t concluded_ms)
{
	long ci = s ? find_conv(s, key) : -1;
	if (ci < 0)
		return false;
	struct conv *c = s->convs[ci];
	for (size_t i = 0; i < c->len; i++)
		if (conv_at(c, i)->time_ms > concluded_ms)
			return false;
	conv_free(c);
	memmove(&s->convs[ci], &s->convs[ci + 1],
	        (s->nconvs - (size_t)ci - 1) * sizeof s->convs[0]);
	s->nconvs--;
	s->dirty = true;
	return true;
}

/* ---- answered ---------------------------------------------------------------- */

bool conv_store_answered(const struct conv_store *s, const char *message_id)
{
	if (!s || !message_id || !*message_id)
		return false;
	for (size_t i = 0; i < s->alen; i++)
		if (strcmp(s->answered[(s->astart + i) % CONV_STORE_MAX_ANSWERED], message_id) == 0)
			return true;
	return false;
}

static void answered_push(struct conv_store *s, const char *message_id)
{
	if (s->alen < CONV_STORE_MAX_ANSWERED) {
		s->answered[(s->astart + s->alen++) % CONV_STORE_MAX_ANSWERED] =
		        xstrdup(message_id);
		return;
	}
	free(s->answered[s->astart]);
	s->answered[s->astart] = xstrdup(message_id);
	s->astart = (s->astart + 1) % CONV_STORE_MAX_ANSWERED;
}

void conv_store_mark_answered(struct conv_store *s, const char *message_id)
{
	if (!s || !message_id || !*message_id)
		return;
	for (size_t i = 0; i < s->nconvs; i++) {
		long mi = conv_find_msg(s->convs[i], message_id);
		if (mi >= 0)
			conv_at(s->convs[i], (size_t)mi)->answered = true;
	}
	if (conv_store_answered(s, message_id))
		return;
	answered_push(s, message_id);
	s->dirty = true;
}

/* ---- reading ------------------------------------------------------------------ */

int64_t conv_store_derived_chain(const struct conv_store *s, const char *conversation,
                                 const char *message_id)
{
	const struct conv *c = s ? get_conv(s, conversation) : NULL;
	if (!c || c->len == 0)
		return 0;
	long i = conv_find_msg(c, message_id);
	if (i < 0)
		i = (long)c->len - 1;
	/* A message that answers another walks up its branch (the parents;
	 * siblings never count), at most len steps whatever the links say;
	 * otherwise the conversation is a sequence. */
	bool branch = conv_at(c, (size_t)i)->parent_id != NULL;
	int64_t n = 0;
	for (size_t steps = 0; i >= 0 && steps < c->len && conv_at(c, (size_t)i)->is_bot; steps++) {
		n++;
		const char *parent = conv_at(c, (size_t)i)->parent_id;
		if (!branch)
			i--;
		else if (!parent)
			break; /* the branch's root */
		else
			i = conv_find_msg(c, parent); /* -1: the rest is not in the history */
	}
	return n;
}

const struct conv_message *conv_store_find(const struct conv_store *s, const char *conversation,
                                           const char *message_id)
{
	const struct conv *c = s ? get_conv(s, conversation) : NULL;
	if (!c)
		return NULL;
	long i = conv_find_msg(c, message_id);
	return i < 0 ? NULL : conv_at(c, (size_t)i);
}

bool conv_store_is_ours(const struct conv_store *s, const char *conversation,
                        const char *message_id)
{
	const struct conv_message *m = conv_store_find(s, conversation, message_id);
	return m && m->author_kind == CONV_AUTHOR_SELF;
}

size_t conv_store_count_ours(const struct conv_store *s, const char *conversation)
{
	size_t n = conv_store_message_count(s, conversation), k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct conv_message *m = conv_store_message_at(s, conversation, i);
		k += m && m->author_kind == CONV_AUTHOR_SELF;
	}
	return k;
}

size_t conv_store_count(const struct conv_store *s)
{
	return s ? s->nconvs : 0;
}

const char *conv_store_key_at(const struct conv_store *s, size_t i, size_t *nmessages,
                              int64_t *last_ms)
{
	if (!s || i >= s->nconvs)
		return NULL;
	if (nmessages)
		*nmessages = s->convs[i]->len;
	if (last_ms)
		*last_ms = s->convs[i]->last_ms;
	return s->convs[i]->key;
}

size_t conv_store_message_count(const struct conv_store *s, const char *conversation)
{
	const struct conv *c = s ? get_conv(s, conversation) : NULL;
	return c ? c->len : 0;
}

const struct conv_message *conv_store_message_at(const struct conv_store *s,
                                                 const char *conversation, size_t i)
{
	const struct conv *c = s ? get_conv(s, conversation) : NULL;
	if (!c || i >= c->len)
		return NULL;
	return conv_at(c, i);
}

/* ---- JSON -------------------------------------------------------------------- */

/* State files must be strict JSON (json_parse refuses invalid UTF-8 and
 * \u0000): strings that are not valid UTF-8 get U+FFFD for each bad byte,
 * and a text holding NUL bytes or invalid UTF-8 is saved as hex. */
static char *clean_utf8(const char *s)
{
	size_t len = strlen(s);
	if (utf8_valid(s, len))
		return xstrdup(s);
	struct strbuf sb;
	sb_init(&sb, 0);
	for (size_t i = 0; i < len;) {
		unsigned int cp;
		int n = utf8_decode(s + i, len - i, &cp);
		if (n < 0) {
			sb_puts(&sb, "\xEF\xBF\xBD");
			i++;
		} else {
			sb_append(&sb, s + i, (size_t)n);
			i += (size_t)n;
		}
	}
	return sb_detach(&sb);
}

static void add_str(cJSON *o, const char *key, const char *s)
{
	char *c = clean_utf8(s);
	cJSON_AddStringToObject(o, key, c);
	free(c);
}

static void add_text(cJSON *o, const char *text, size_t len)
{
	if (!memchr(text, '\0', len) && utf8_valid(text, len)) {
		cJSON_AddStringToObject(o, "text", text);
		return;
	}
	static const char hex[] = "0123456789abcdef";
	char *h = xmalloc(len * 2 + 1);
	for (size_t i = 0; i < len; i++) {
		h[2 * i] = hex[(unsigned char)text[i] >> 4];
		h[2 * i + 1] = hex[(unsigned char)text[i] & 15];
	}
	h[len * 2] = '\0';
	cJSON_AddStringToObject(o, "textHex", h);
	free(h);
}

static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The text of a saved message (caller frees), or NULL when malformed. */
static char *read_text(const cJSON *m, size_t *len)
{
	const char *t = json_string_or(m, "text", NULL);
	if (t) {
		*len = strlen(t);
		return xstrdup(t);
	}
	const char *h = json_string_or(m, "textHex", NULL);
	if (!h) {
		*len = 0;
		return xstrdup(""); /* saved without its text (size budget) */
	}
	size_t hl = strlen(h);
	if (hl % 2)
		return NULL;
	char *out = xmalloc(hl / 2 + 1);
	for (size_t i = 0; i < hl / 2; i++) {
		int a = unhex(h[2 * i]), b = unhex(h[2 * i + 1]);
		if (a < 0 || b < 0) {
			free(out);
			return NULL;
		}
		out[i] = (char)(a * 16 + b);
	}
	out[hl / 2] = '\0';
	*len = hl / 2;
	return out;
}

static cJSON *message_json(const struct conv_message *m, bool with_text)
{
	cJSON *o = cJSON_CreateObject();
	add_str(o, "id", m->message_id);
	if (m->parent_id)
		add_str(o, "parentId", m->parent_id);
	add_str(o, "authorId", m->author_id);
	add_str(o, "authorName", m->author_name);
	cJSON_AddStringToObject(o, "authorKind", conv_author_kind_name(m->author_kind));
	cJSON_AddBoolToObject(o, "isBot", m->is_bot);
	cJSON_AddNumberToObject(o, "chain", (double)m->chain);
	if (with_text)
		add_text(o, m->text, m->text_len);
	cJSON_AddNumberToObject(o, "timeMs", (double)m->time_ms);
	cJSON_AddBoolToObject(o, "answered", m->answered);
	return o;
}

/* Upper bound of a message's saved size: every byte escaped as \u00XX. */
static size_t message_cost(const struct conv_message *m, bool with_text)
{
	size_t n = strlen(m->message_id) + strlen(m->author_id) + strlen(m->author_name) +
	           (m->parent_id ? strlen(m->parent_id) : 0);
	if (with_text)
		n += m->text_len;
	return 6 * n + 200;
}

/* budget (NULL: no limit) is what is left for texts. */
static cJSON *conv_json(const struct conv *c, size_t *budget)
{
	cJSON *o = cJSON_CreateObject();
	add_str(o, "key", c->key);
	cJSON_AddNumberToObject(o, "lastMs", (double)c->last_ms);
	cJSON *arr = cJSON_AddArrayToObject(o, "messages");
	for (size_t i = 0; i < c->len; i++) {
		const struct conv_message *m = conv_at(c, i);
		bool with_text = true;
		if (budget) {
			size_t cost = 6 * m->text_len;
			with_text = cost <= *budget;
			if (with_text)
				*budget -= cost;
		}
		cJSON_AddItemToArray(arr, message_json(m, with_text));
	}
	return o;
}

static size_t conv_meta_cost(const struct conv *c)
{
	size_t meta = 6 * strlen(c->key) + 64;
	for (size_t k = 0; k < c->len; k++)
		meta += message_cost(conv_at(c, k), false);
	return meta;
}

/* With a budget (saving): the answered set always; then every conversation
 * whose messages without texts still fit, most recent first (the chain
 * needs who said what, not what); then texts with what is left, most
 * recent conversation first. */
static cJSON *store_json(const struct conv_store *s, size_t *budget, size_t *dropped)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddNumberToObject(root, "format", STORE_FORMAT);
	cJSON *ans = cJSON_AddArrayToObject(root, "answered");
	size_t used = 64;
	for (size_t i = 0; i < s->alen; i++) {
		const char *id = s->answered[(s->astart + i) % CONV_STORE_MAX_ANSWERED];
		char *c = clean_utf8(id);
		cJSON_AddItemToArray(ans, cJSON_CreateString(c));
		free(c);
		used += 6 * strlen(id) + 8;
	}
	bool keep[CONV_STORE_MAX_CONVERSATIONS];
	for (size_t i = 0; i < s->nconvs; i++) {
		keep[i] = true;
		if (!budget)
			continue;
		size_t meta = conv_meta_cost(s->convs[i]);
		if (used + meta > *budget) {
			keep[i] = false;
			(*dropped)++;
			continue;
		}
		used += meta;
	}
	if (budget)
		*budget = used < *budget ? *budget - used : 0;
	cJSON *arr = cJSON_AddArrayToObject(root, "conversations");
	for (size_t i = 0; i < s->nconvs; i++)
		if (keep[i])
			cJSON_AddItemToArray(arr, conv_json(s->convs[i], budget));
	return root;
}

cJSON *conv_store_to_json(const struct conv_store *s, const char *key)
{
	if (!s)
		return NULL;
	if (key) {
		const struct conv *c = get_conv(s, key);
		return c ? conv_json(c, NULL) : NULL;
	}
	return store_json(s, NULL, NULL);
}

/* ---- persistence ------------------------------------------------------------- */

/* Any agent version's data is kept when it is our format. */
static int migrate(void *ud, cJSON *data, const char *from_version)
{
	return json_int_or(data, "format", 0) == STORE_FORMAT ? 0 : -1;
}

static bool load_message(struct conv *c, const cJSON *m)
{
	const char *id, *author_id, *author_name, *kind_s;
	int64_t chain, time_ms;
	bool is_bot, answered;
	if (json_get_string(m, "id", &id, NULL) < 0 ||
	    json_get_string(m, "authorId", &author_id, NULL) < 0 ||
	    json_get_string(m, "authorName", &author_name, NULL) < 0 ||
	    json_get_string(m, "authorKind", &kind_s, NULL) < 0 ||
	    json_get_bool(m, "isBot", &is_bot, NULL) < 0 ||
	    json_get_int(m, "chain", &chain, NULL) < 0 ||
	    json_get_int(m, "timeMs", &time_ms, NULL) < 0)
		return false;
	int kind = conv_author_kind_parse(kind_s);
	if (kind < 0 || conv_find_msg(c, id) >= 0)
		return false;
	answered = json_bool_or(m, "answered", false);
	size_t tlen;
	char *text = read_text(m, &tlen);
	if (!text)
		return false;
	struct conv_message *slot = conv_push(c);
	message_fill(slot, id, json_string_or(m, "parentId", NULL), author_id, author_name,
	             (enum conv_author_kind)kind, is_bot, chain, text, tlen, time_ms, answered);
	free(text);
	return true;
}

int conv_store_load_json(struct conv_store *s, const cJSON *data)
{
	if (!s)
		return -1;
	store_clear(s);
	s->dirty = false;
	const cJSON *convs = cJSON_GetObjectItemCaseSensitive(data, "conversations");
	const cJSON *ans = cJSON_GetObjectItemCaseSensitive(data, "answered");
	if (!cJSON_IsObject(data) || json_int_or(data, "format", 0) != STORE_FORMAT ||
	    !cJSON_IsArray(convs) || !cJSON_IsArray(ans)) {
		log_kv(LOG_LEVEL_WARN, "conversation",
		       "the saved conversations are not a conversation store; starting empty",
		       "state", CONV_STORE_STATE_NAME);
		return -1;
	}
	size_t skipped = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, ans)
	{
		if (cJSON_IsString(it) && it->valuestring[0] &&
		    !conv_store_answered(s, it->valuestring))
			answered_push(s, it->valuestring);
		else
			skipped++;
	}
	cJSON_ArrayForEach(it, convs)
	{
		const char *key = json_string_or(it, "key", NULL);
		const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(it, "messages");
		struct conv *c =
		        key && cJSON_IsArray(msgs) ? conv_get_or_create(s, key, true) : NULL;
		if (!c) {
			skipped++;
			continue;
		}
		c->last_ms = json_int_or(it, "lastMs", 0);
		const cJSON *m;
		cJSON_ArrayForEach(m, msgs)
		{
			if (!load_message(c, m))
				skipped++;
		}
	}
	if (skipped)
		log_kv(LOG_LEVEL_WARN, "conversation", "skipped malformed saved entries", "state",
		       CONV_STORE_STATE_NAME, "skipped", LOG_INT(skipped));
	return 0;
}

int conv_store_load(struct conv_store *s, const struct state_store *st, struct ga_err *err)
{
	if (!s || !st)
		return err_set(err, "conv_store_load needs a store and a state directory");
	store_clear(s);
	s->dirty = false;
	struct state_load_info info;
	cJSON *data = state_load(st, CONV_STORE_STATE_NAME, migrate, NULL, &info);
	if (!data)
		return 0; /* missing, reset or corrupt: modules/state/state.c logged it */
	conv_store_load_json(s, data);
	cJSON_Delete(data);
	return 0;
}

static bool texts_left_out(const cJSON *data)
{
	const cJSON *c, *m;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(data, "conversations"))
	{
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(c, "messages"))
		{
			if (!cJSON_HasObjectItem(m, "text") && !cJSON_HasObjectItem(m, "textHex"))
				return true;
		}
	}
	return false;
}

int conv_store_save(const struct conv_store *s, const struct state_store *st, int64_t now_ms,
                    struct ga_err *err)
{
	if (!s || !st)
		return err_set(err, "conv_store_save needs a store and a state directory");
	size_t budget = CONV_STORE_SAVE_MAX_BYTES, dropped = 0;
	cJSON *data = store_json(s, &budget, &dropped);
	if (dropped || texts_left_out(data))
		log_kv(LOG_LEVEL_WARN, "conversation",
		       "the conversation store is larger than a state file may be: some texts "
		       "or the least recent conversations were left out of the saved copy",
		       "conversations_left_out", LOG_INT(dropped));
	int rc = state_save(st, CONV_STORE_STATE_NAME, data, now_ms, err);
	cJSON_Delete(data);
	return rc;
}

int conv_store_save_if_due(struct conv_store *s, const struct state_store *st, int64_t now_ms,
                           bool force, struct ga_err *err)
{
	if (!s || !s->dirty)
		return 0;
	if (!force && s->last_save_ms && now_ms - s->last_save_ms < CONV_STORE_SAVE_MIN_INTERVAL_MS)
		return 0;
	if (conv_store_save(s, st, now_ms, err) < 0)
		return -1;
	s->dirty = false;
	s->last_save_ms = now_ms;
	return 1;
}

bool conv_store_dirty(const struct conv_store *s)
{
	return s && s->dirty;
}
