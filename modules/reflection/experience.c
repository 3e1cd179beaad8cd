/* experience — the store of meaningful interactions (experience.h). */
#include "modules/reflection/experience.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/conversation/event.h"
#include "modules/reflection/internal.h"

#define LOG_COMP "reflection"

struct exp_store {
	char *path;
	struct experience *items; /* oldest first */
	size_t n, cap;
};

static const char *const type_names[EXP_TYPE_COUNT] = {
        [EXP_OWNER_GUIDANCE] = "owner_guidance",
        [EXP_LEARNED_SOMETHING] = "learned_something",
        [EXP_HELPED_SOMEONE] = "helped_someone",
        [EXP_WAS_CHALLENGED] = "was_challenged",
        [EXP_IDEA_RESONATED] = "idea_resonated",
        [EXP_QUESTION_EMERGED] = "question_emerged",
        [EXP_CONNECTION_FORMED] = "connection_formed",
        [EXP_SAW_PERSPECTIVE] = "saw_perspective",
        [EXP_CHOSE_SILENCE] = "chose_silence",
};

/* The order and words reflection groups experiences by (owner first). */
static const char *const type_labels[EXP_TYPE_COUNT] = {
        [EXP_OWNER_GUIDANCE] = "Owner guidance",
        [EXP_LEARNED_SOMETHING] = "Things I learned",
        [EXP_HELPED_SOMEONE] = "People I helped",
        [EXP_WAS_CHALLENGED] = "Times I was challenged",
        [EXP_IDEA_RESONATED] = "Ideas that resonated",
        [EXP_QUESTION_EMERGED] = "Questions that emerged",
        [EXP_CONNECTION_FORMED] = "Connections",
        [EXP_SAW_PERSPECTIVE] = "Perspectives I saw",
        [EXP_CHOSE_SILENCE] = "Times I chose silence",
};

const char *exp_type_name(enum exp_type t)
{
	return (unsigned)t < EXP_TYPE_COUNT ? type_names[t] : "unknown";
}

const char *exp_type_label(enum exp_type t)
{
	return (unsigned)t < EXP_TYPE_COUNT ? type_labels[t] : "Other";
}

int exp_type_parse(const char *s)
{
	for (int i = 0; s && i < EXP_TYPE_COUNT; i++)
		if (strcmp(s, type_names[i]) == 0)
			return i;
	return -1;
}

static char *cut_dup(const char *s)
{
	return conv_text_dup(s ? s : "", s ? strlen(s) : 0, EXP_TEXT_MAX, NULL);
}

static void exp_clear(struct experience *e)
{
	free(e->what);
	free(e->who);
	free(e->where);
	free(e->why);
	memset(e, 0, sizeof *e);
}

cJSON *exp_to_json(const struct experience *e)
{
	cJSON *o = cJSON_CreateObject();
	char ts[TIME_ISO_LEN + 1];
	cJSON_AddStringToObject(o, "id", e->id);
	cJSON_AddStringToObject(o, "type", exp_type_name(e->type));
	cJSON_AddStringToObject(o, "time", time_format_iso(e->time_ms, ts));
	cJSON_AddStringToObject(o, "what", e->what ? e->what : "");
	cJSON_AddStringToObject(o, "who", e->who ? e->who : "");
	cJSON_AddStringToObject(o, "where", e->where ? e->where : "");
	cJSON_AddStringToObject(o, "why", e->why ? e->why : "");
	cJSON_AddBoolToObject(o, "integrated", e->integrated);
	return o;
}

static struct experience *find(struct exp_store *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->items[i].id, id) == 0)
			return &s->items[i];
	return NULL;
}

static void remove_at(struct exp_store *s, size_t i)
{
	exp_clear(&s->items[i]);
	memmove(&s->items[i], &s->items[i + 1], (s->n - i - 1) * sizeof *s->items);
	s->n--;
}

/* Enforces the bounds (see the header). */
static void enforce(struct exp_store *s, int64_t now_ms)
{
	for (size_t i = 0; i < s->n;) {
		if (s->items[i].integrated && now_ms - s->items[i].time_ms > EXP_KEEP_INTEGRATED_MS)
			remove_at(s, i);
		else
			i++;
	}
	size_t pending = exp_store_pending(s);
	while (pending > EXP_MAX_PENDING) {
		for (size_t i = 0; i < s->n; i++) {
			if (!s->items[i].integrated) {
				log_kv(LOG_LEVEL_WARN, LOG_COMP,
				       "too many experiences wait for reflection: the oldest is "
				       "dropped",
				       "id", s->items[i].id, "limit", LOG_INT(EXP_MAX_PENDING));
				remove_at(s, i);
				break;
			}
		}
		pending--;
	}
	while (s->n > EXP_MAX_HELD) {
		size_t i = 0;
		while (i < s->n && !s->items[i].integrated)
			i++;
		if (i == s->n)
			i = 0;
		remove_at(s, i);
	}
}

static void push(struct exp_store *s, struct experience *e)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->items = xreallocarray(s->items, s->cap, sizeof *s->items);
	}
	s->items[s->n++] = *e;
}

static int replay_line(void *ud, const cJSON *v, size_t lineno)
{
	(void)lineno;
	struct exp_store *s = ud;
	const cJSON *marks = cJSON_GetObjectItemCaseSensitive(v, "integrated");
	if (cJSON_IsArray(marks)) {
		const cJSON *id;
		cJSON_ArrayForEach(id, marks)
		{
			struct experience *e = cJSON_IsString(id) ? find(s, id->valuestring) : NULL;
			if (e)
				e->integrated = true;
		}
		return 0;
	}
	const char *id = json_string_or(v, "id", NULL);
	int type = exp_type_parse(json_string_or(v, "type", NULL));
	const char *what = json_string_or(v, "what", NULL);
	int64_t t = 0;
	if (!id || strlen(id) >= sizeof((struct experience *)0)->id || type < 0 || !what ||
	    time_parse_iso(json_string_or(v, "time", ""), &t) != 0 || find(s, id))
		return 0; /* not an experience line: skipped */
	struct experience e = {.type = (enum exp_type)type, .time_ms = t};
	snprintf(e.id, sizeof e.id, "%s", id);
	e.what = cut_dup(what);
	e.who = cut_dup(json_string_or(v, "who", ""));
	e.where = cut_dup(json_string_or(v, "where", ""));
	e.why = cut_dup(json_string_or(v, "why", ""));
	e.integrated = json_bool_or(v, "integrated", false);
	push(s, &e);
	return 0;
}

struct exp_store *exp_store_open(const char *memory_dir, struct ga_err *err)
{
	if (fsx_mkdir_p(memory_dir, err) != 0)
		return NULL;
	struct exp_store *s = xcalloc(1, sizeof *s);
	s->path = fsx_join(memory_dir, EXP_FILE);
	struct fsx_jsonl_stats st;
	struct ga_err rerr = {{0}};
	if (fsx_jsonl_read(s->path, EXP_LINE_MAX, replay_line, s, &st, &rerr) != 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "experiences could not be read: starting empty",
		       "error", rerr.msg);
	enforce(s, time_now_ms());
	return s;
}

void exp_store_free(struct exp_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		exp_clear(&s->items[i]);
	free(s->items);
	free(s->path);
	free(s);
}

/* Rotates the file when it is too large, then writes what is held to a
 * fresh one (so the pending experiences survive the rotation). */
static int maybe_rotate(struct exp_store *s, struct ga_err *err)
{
	int r = fsx_rotate(s->path, EXP_FILE_MAX_BYTES, EXP_FILE_KEEP, err);
	if (r <= 0)
		return r;
	for (size_t i = 0; i < s->n; i++) {
		cJSON *o = exp_to_json(&s->items[i]);
		int rc = fsx_append_json(s->path, o, err);
		cJSON_Delete(o);
		if (rc != 0)
			return -1;
	}
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "experiences.jsonl rotated", "kept", LOG_INT(s->n));
	return 1;
}

/* Same first EXP_DEDUP_PREFIX characters, ASCII case folded. */
static bool same_prefix(const char *a, const char *b)
{
	for (int i = 0; i < EXP_DEDUP_PREFIX; i++, a++, b++) {
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
		if (!*a)
			return true;
	}
	return true;
}

int exp_store_add(struct exp_store *s, const struct exp_in *in, int64_t now_ms, struct ga_err *err)
{
	if ((unsigned)in->type >= EXP_TYPE_COUNT)
		return err_set(err, "experience type %d is not one of the %d known types",
		               (int)in->type, EXP_TYPE_COUNT);
	if (refl_blank(in->what))
		return err_set(err, "an experience needs a 'what' (it was empty)");
	for (size_t i = 0; i < s->n; i++) {
		const struct experience *e = &s->items[i];
		if (e->type == in->type && now_ms - e->time_ms < EXP_DEDUP_WINDOW_MS &&
		    same_prefix(e->what, in->what))
			return 0;
	}
	struct experience e = {.type = in->type, .time_ms = now_ms};
	unsigned char rnd[3];
	random_bytes(rnd, sizeof rnd);
	snprintf(e.id, sizeof e.id, "exp_%" PRId64 "_%02x%02x%02x", now_ms, rnd[0], rnd[1], rnd[2]);
	e.what = cut_dup(in->what);
	e.who = cut_dup(in->who);
	e.where = cut_dup(in->where);
	e.why = cut_dup(in->why);
	push(s, &e);
	enforce(s, now_ms);
	const struct experience *added = find(s, e.id);
	if (!added)
		return 1;
	cJSON *o = exp_to_json(added);
	cJSON_DeleteItemFromObjectCaseSensitive(o, "integrated");
	int rc = maybe_rotate(s, err) < 0 ? -1 : 0;
	if (rc == 0)
		rc = fsx_append_json(s->path, o, err);
	cJSON_Delete(o);
	return rc == 0 ? 1 : -1;
}

int exp_store_mark_integrated(struct exp_store *s, const char *const *ids, size_t n, int64_t now_ms,
                              struct ga_err *err)
{
	cJSON *mark = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(mark, "integrated");
	char ts[TIME_ISO_LEN + 1];
	cJSON_AddStringToObject(mark, "time", time_format_iso(now_ms, ts));
	for (size_t i = 0; i < n; i++) {
		struct experience *e = find(s, ids[i]);
		if (e && !e->integrated) {
			e->integrated = true;
			cJSON_AddItemToArray(arr, cJSON_CreateString(e->id));
		}
	}
	enforce(s, now_ms);
	int rc = 0;
	if (cJSON_GetArraySize(arr) > 0) {
		rc = maybe_rotate(s, err) < 0 ? -1 : 0;
		if (rc == 0)
			rc = fsx_append_json(s->path, mark, err);
	}
	cJSON_Delete(mark);
	return rc;
}

size_t exp_store_count(const struct exp_store *s)
{
	return s->n;
}

size_t exp_store_pending(const struct exp_store *s)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		k += !s->items[i].integrated;
	return k;
}

const struct experience *exp_store_at(const struct exp_store *s, size_t i)
{
	return i < s->n ? &s->items[i] : NULL;
}

/* ---- the meaningful rule ---------------------------------------------------- */

/* The text of a message: the store's, else the part of the event decision's
 * reason after ": " (the pipeline puts the first 120 bytes there). */
static const char *message_text(const struct exp_source *src)
{
	if (src->text && *src->text)
		return src->text;
	const char *r = src->rec->decision.reason;
	const char *colon = strstr(r, "): ");
	return colon ? colon + 3 : r;
}

bool exp_from_decision(const struct exp_source *src, struct exp_in *out, char *buf, size_t cap)
{
	const struct decision_record *rec = src->rec;
	const char *rule = rec->decision.rule ? rec->decision.rule : "";
	const char *platform = rec->platform ? rec->platform : "";
	const char *who = src->author && *src->author ? src->author : "";
	const char *where = rec->conversation ? rec->conversation : "";
	memset(out, 0, sizeof *out);
	if (src->from_history || cap == 0)
		return false;
	out->who = who;
	out->where = where;
	out->what = buf;
	/* the owner's word, wherever it is said: the terminal (platform
	 * "owner") or a live message of theirs on Bluesky, the room, … (author
	 * kind owner) */
	bool owner = strcmp(platform, "owner") == 0 || src->author_kind == CONV_AUTHOR_OWNER;
	if (owner && rec->stage == STAGE_EVENT && strcmp(rule, "event") == 0 &&
	    rec->decision.verdict == VERDICT_PASS) {
		out->type = EXP_OWNER_GUIDANCE;
		out->who = "owner";
		out->why = "the owner's word is guidance about who I am and what I do";
		/* the platform only: the dedup reads the first EXP_DEDUP_PREFIX
		 * bytes, which must hold the words (the conversation is in where) */
		snprintf(buf, cap, "Owner said (%s): \"%s\"",
		         strcmp(platform, "owner") == 0 ? "terminal" : platform, message_text(src));
		return true;
	}
	if (owner)
		return false; /* the rest of an owner turn is the same conversation */
	if (rec->stage == STAGE_RECORD && strcmp(rule, "answered") == 0 &&
	    rec->decision.verdict == VERDICT_INFO &&
	    strncmp(rec->decision.reason, "answered", 8) == 0) {
		if (src->author_kind == CONV_AUTHOR_PEER) {
			out->type = EXP_CONNECTION_FORMED;
			out->why =
			        "a conversation with another agent builds a working relationship";
			snprintf(buf, cap, "Talked with %s in %s about: \"%.300s\"",
			         *who ? who : "a peer", where, message_text(src));
			return true;
		}
		if (src->author_kind == CONV_AUTHOR_HOST || src->author_kind == CONV_AUTHOR_HUMAN) {
			out->type = EXP_HELPED_SOMEONE;
			out->why = "someone asked and I answered";
			snprintf(buf, cap, "Answered %s in %s: \"%.300s\"", *who ? who : "someone",
			         where, message_text(src));
			return true;
		}
		return false;
	}
	if (rec->stage == STAGE_RECORD && strcmp(rule, "commitment") == 0 &&
	    rec->decision.verdict == VERDICT_INFO) {
		out->type = EXP_HELPED_SOMEONE;
		out->why = "I promised to do something for the people in the room";
		snprintf(buf, cap, "Took on a commitment in %s%s%s: %s", where, *who ? " for " : "",
		         who, rec->decision.reason);
		return true;
	}
	if (rec->stage == STAGE_RECORD && strcmp(rule, "commitment") == 0 &&
	    rec->decision.verdict == VERDICT_SENT) {
		out->type = EXP_HELPED_SOMEONE;
		out->why = "I kept a promise I made";
		snprintf(buf, cap, "Carried out a commitment (%s): %s", where,
		         rec->decision.reason);
		return true;
	}
	if (rec->stage == STAGE_VALIDATOR && rec->decision.verdict == VERDICT_REJECT) {
		out->type = EXP_WAS_CHALLENGED;
		out->why = "my own draft did not pass my standards";
		snprintf(buf, cap, "A draft of mine in %s was held back (%s): %s", where, rule,
		         rec->decision.reason);
		return true;
	}
	if (rec->stage == STAGE_COMPOSE && strcmp(rule, "declined") == 0 && src->addressed_me) {
		out->type = EXP_CHOSE_SILENCE;
		out->why = "staying quiet when addressed is a choice worth remembering";
		snprintf(buf, cap, "Chose not to answer %s in %s: %s", *who ? who : "a message",
		         where, rec->decision.reason);
		return true;
	}
	return false;
}
