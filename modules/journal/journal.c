/*
 * journal — the intent → done journal of external side effects. See journal.h.
 *
 * In memory, two tiers. Full entries (struct jentry: the key, and the
 * intent's fields or the artifact/error) in a chained hash table
 * (JOURNAL_HASH_BUCKETS buckets) and two lists in the order records were
 * written: the pending intents and the JOURNAL_RECENT_SETTLED most recently
 * settled keys. A key settled before those is kept compactly in the `old`
 * ring (struct jold: the first 128 bits of the key's SHA-256, its state and
 * its order), preallocated at open for JOURNAL_MAX_KEYS: the index's memory
 * does not grow with the keys it holds. Its artifact or error is read back
 * from the file when asked for (rare: a side effect asked for again long
 * after it was made). Every old key is older than every recent one (keys
 * move to the ring in the order they were settled), so the ring's head is
 * the oldest settled key, the one forgotten when the index is full;
 * compaction keeps the newest JOURNAL_KEEP_SETTLED settled keys (reading
 * the old keys' records from the file it replaces) and every pending
 * intent, interleaved in the order they were written, so replaying the
 * compacted file rebuilds exactly the same index (same states, same
 * eviction order).
 *
 * On disk every record is one line written with one write(2) on an O_APPEND
 * descriptor and fsync'ed. Replay is "the last record of a key wins", with
 * one rule compaction relies on: a done/failed record for a key not seen
 * before creates the settled key (compaction writes settled keys as their
 * settlement alone). Every string is checked to be valid UTF-8 before it is
 * written, because the reader skips a line with invalid UTF-8 and a skipped
 * intent is a lost promise.
 */
#include "modules/journal/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

#define LOG_COMP "journal"
_Static_assert(JOURNAL_RECENT_SETTLED >= 1 && JOURNAL_RECENT_SETTLED <= JOURNAL_KEEP_SETTLED,
               "compaction keeps every recent settled key");
/* Power of two, twice JOURNAL_MAX_KEYS: chains stay short. */
#define JOURNAL_HASH_BUCKETS 8192
/* The longest line this module writes: a payload of JOURNAL_PAYLOAD_MAX
 * bytes plus a key, platform and target escaped at worst 6 bytes per byte
 * (\u00XX), plus the names and the time. Replay refuses longer lines. */
#define JOURNAL_LINE_MAX                                                                           \
	(JOURNAL_PAYLOAD_MAX + 6 * (JOURNAL_KEY_MAX + 2 * JOURNAL_FIELD_MAX) + 1024)

struct jentry {
	char *key;
	enum journal_state state;
	/* pending only (freed when settled) */
	char *platform;
	char *target;
	cJSON *payload;
	int64_t intent_ms;
	/* settled only */
	char *artifact; /* DONE, may be NULL */
	char *error;    /* FAILED */
	int64_t settled_ms;
	uint64_t seq; /* order of the record that put the key in its current state */
	struct jentry *hnext;
	struct jentry *prev, *next; /* in the pending or the settled list */
};

struct jlist {
	struct jentry *head, *tail;
	size_t n;
};

/* A settled key of the old tier. state JOURNAL_NONE: a dead slot (the key
 * was intended again), skipped and squeezed out when the ring is full. */
struct jold {
	uint64_t h[2];
	uint64_t seq : 62;
	uint64_t state : 2;
};

struct khash {
	uint64_t h[2];
};

struct journal {
	char *path;
	int fd; /* -1 until the first write (the file may not exist yet) */
	bool file_exists;
	bool tail_dirty; /* a failed write may have left a partial line */
	size_t file_bytes;
	size_t compacted_bytes; /* file size after the last compaction (0 = none) */
	uint64_t seq;
	size_t count;                  /* every key: pending, recent settled, live old */
	struct jlist pending, settled; /* settled: the recent tier */
	struct jentry *buckets[JOURNAL_HASH_BUCKETS];
	struct jold *old;          /* ring of JOURNAL_MAX_KEYS, oldest at old_start */
	size_t old_start, old_len; /* slots used, dead ones included */
	size_t old_live;
	char *looked_up; /* the last artifact/error read back from the file */
};

/* ---- index ------------------------------------------------------------------- */

static size_t bucket_of(const char *key)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return (size_t)(h & (JOURNAL_HASH_BUCKETS - 1));
}

static struct jentry *find(const struct journal *j, const char *key)
{
	if (!key)
		return NULL;
	for (struct jentry *e = j->buckets[bucket_of(key)]; e; e = e->hnext)
		if (strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

static void list_push(struct jlist *l, struct jentry *e)
{
	e->next = NULL;
	e->prev = l->tail;
	if (l->tail)
		l->tail->next = e;
	else
		l->head = e;
	l->tail = e;
	l->n++;
}

static void list_unlink(struct jlist *l, struct jentry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NULL;
	l->n--;
}

static struct jlist *list_of(struct journal *j, const struct jentry *e)
{
	return e->state == JOURNAL_INTENT ? &j->pending : &j->settled;
}

static void clear_pending_fields(struct jentry *e)
{
	free(e->platform);
	free(e->target);
	cJSON_Delete(e->payload);
	e->platform = e->target = NULL;
	e->payload = NULL;
}

static void clear_settled_fields(struct jentry *e)
{
	free(e->artifact);
	free(e->error);
	e->artifact = e->error = NULL;
}

static void entry_free(struct jentry *e)
{
	clear_pending_fields(e);
	clear_settled_fields(e);
	free(e->key);
	free(e);
}

static void forget(struct journal *j, struct jentry *e)
{
	struct jentry **pp = &j->buckets[bucket_of(e->key)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	list_unlink(list_of(j, e), e);
	j->count--;
	entry_free(e);
}

/* ---- the old tier ------------------------------------------------------------------ */

static struct khash hash_of(const char *key)
{
	unsigned char d[32];
	sha256_raw(key, strlen(key), d);
	struct khash k;
	memcpy(k.h, d, sizeof k.h);
	return k;
}

static struct jold *old_at(const struct journal *j, size_t i)
{
	return &j->old[(j->old_start + i) % JOURNAL_MAX_KEYS];
}

/* The live old slot of key (the newest, though there is at most one), or
 * NULL. */
static struct jold *old_find(const struct journal *j, const char *key)
{
	if (!j->old_live || !key)
		return NULL;
	struct khash k = hash_of(key);
	for (size_t i = j->old_len; i-- > 0;) {
		struct jold *o = old_at(j, i);
		if (o->state != JOURNAL_NONE && o->h[0] == k.h[0] && o->h[1] == k.h[1])
			return o;
	}
	return NULL;
}

static void old_kill(struct journal *j, struct jold *o)
{
	o->state = JOURNAL_NONE;
	j->old_live--;
	j->count--;
}

/* Drops the dead slots at the head; when the ring is still full, moves the
 * live slots together (in order) so that there is room at the tail. */
static void old_squeeze(struct journal *j)
{
	while (j->old_len && old_at(j, 0)->state == JOURNAL_NONE) {
		j->old_start = (j->old_start + 1) % JOURNAL_MAX_KEYS;
		j->old_len--;
	}
	if (j->old_len < JOURNAL_MAX_KEYS)
		return;
	size_t w = 0;
	for (size_t i = 0; i < j->old_len; i++)
		if (old_at(j, i)->state != JOURNAL_NONE)
			*old_at(j, w++) = *old_at(j, i);
	j->old_len = w;
}

/* The oldest recent settled key moves to the old tier. */
static void demote(struct journal *j, struct jentry *e)
{
	old_squeeze(j);
	struct khash k = hash_of(e->key);
	struct jold *o = old_at(j, j->old_len++);
	o->h[0] = k.h[0];
	o->h[1] = k.h[1];
	o->seq = e->seq;
	o->state = e->state;
	j->old_live++;
	struct jentry **pp = &j->buckets[bucket_of(e->key)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	list_unlink(&j->settled, e);
	entry_free(e);
}

static void keep_recent_bounded(struct journal *j)
{
	while (j->settled.n > JOURNAL_RECENT_SETTLED)
		demote(j, j->settled.head);
}

/* The last settlement of key in the file: its artifact (done) or error
 * (failed), copied; *found says whether one was read. */
struct lookup {
	const char *key;
	bool found;
	enum journal_state state;
	char *text;
};

static bool key_valid(const char *key);

/* A record that settles a key: its key, and whether it is "done" (else
 * "failed"); NULL for any other record. */
static const char *settlement_of(const cJSON *v, bool *done)
{
	const char *op = json_string_or(v, "op", NULL);
	const char *key = json_string_or(v, "key", NULL);
	if (!op || !key_valid(key))
		return NULL;
	*done = strcmp(op, "done") == 0;
	return *done || strcmp(op, "failed") == 0 ? key : NULL;
}

static int lookup_one(void *ud, const cJSON *v, size_t lineno)
{
	(void)lineno;
	struct lookup *l = ud;
	bool done;
	const char *key = settlement_of(v, &done);
	if (!key || strcmp(key, l->key) != 0)
		return 0;
	free(l->text);
	const char *t = json_string_or(v, done ? "artifact" : "error", NULL);
	l->text = t ? xstrdup(t) : NULL;
	l->state = done ? JOURNAL_DONE : JOURNAL_FAILED;
	l->found = true;
	return 0;
}

/* Reads an old key's artifact or error back from the file; NULL when it
 * has none (or the file cannot be read: logged). The result is kept in
 * j->looked_up until the next lookup or write. */
static const char *old_text(const struct journal *j, const char *key, enum journal_state want)
{
	struct journal *mj = (struct journal *)j; /* the lookup cache only */
	free(mj->looked_up);
	mj->looked_up = NULL;
	struct lookup l = {.key = key};
	struct ga_err err = {{0}};
	struct fsx_jsonl_stats stats;
	if (fsx_jsonl_read(j->path, JOURNAL_LINE_MAX, lookup_one, &l, &stats, &err) < 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "cannot read a settled key's record back", "key",
		       key, "error", err.msg);
	if (l.found && l.state == want)
		mj->looked_up = l.text;
	else
		free(l.text);
	return mj->looked_up;
}

/* Room for one more key: true when there is, after forgetting the oldest
 * settled key if the index is full. */
static bool make_room(struct journal *j)
{
	if (j->count < JOURNAL_MAX_KEYS)
		return true;
	if (j->old_live) {
		old_squeeze(j); /* the head is live now */
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "index full: forgetting the oldest settled key",
		       "seq", LOG_INT(old_at(j, 0)->seq));
		old_kill(j, old_at(j, 0));
		old_squeeze(j);
		return true;
	}
	if (!j->settled.head)
		return false;
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "index full: forgetting the oldest settled key", "key",
	       j->settled.head->key);
	forget(j, j->settled.head);
	return true;
}

static bool can_make_room(const struct journal *j)
{
	return j->count < JOURNAL_MAX_KEYS || j->settled.head || j->old_live;
}

/* A new entry in no list yet (the caller sets its state and pushes it). */
static struct jentry *insert(struct journal *j, const char *key)
{
	struct jentry *e = xcalloc(1, sizeof *e);
	e->key = xstrdup(key);
	size_t b = bucket_of(key);
	e->hnext = j->buckets[b];
	j->buckets[b] = e;
	j->count++;
	return e;
}

/* The in-memory transitions, shared by the API and replay. The strings are
 * copied; payload is duplicated. */
static void apply_intent(struct journal *j, struct jentry *e, const char *platform,
                         const char *target, const cJSON *payload, int64_t ms)
{
	if (e->state != JOURNAL_NONE)
		list_unlink(list_of(j, e), e);
	clear_pending_fields(e);
	clear_settled_fields(e);
	e->state = JOURNAL_INTENT;
	e->platform = xstrdup(platform);
	e->target = xstrdup(target);
	e->payload = payload ? cJSON_Duplicate(payload, 1) : NULL;
	e->intent_ms = ms;
	e->settled_ms = 0;
	e->seq = ++j->seq;
	list_push(&j->pending, e);
}

static void apply_settle(struct journal *j, struct jentry *e, enum journal_state to,
                         const char *text, int64_t ms)
{
	if (e->state != JOURNAL_NONE)
		list_unlink(list_of(j, e), e);
	clear_pending_fields(e);
	clear_settled_fields(e);
	e->state = to;
	if (to == JOURNAL_DONE)
		e->artifact = text ? xstrdup(text) : NULL;
	else
		e->error = xstrdup(text ? text : "");
	e->settled_ms = ms;
	e->seq = ++j->seq;
	list_push(&j->settled, e);
	keep_recent_bounded(j);
}

/* ---- validation ------------------------------------------------------------------ */

static bool key_valid(const char *key)
{
	if (!key || !*key)
		return false;
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++, n++)
		if (*p < 0x21 || *p > 0x7e || n >= JOURNAL_KEY_MAX)
			return false;
	return true;
}

/* A NULL field is treated as an error by the callers that require it. */
static int check_field(const char *what, const char *s, struct ga_err *err)
{
	size_t n = strlen(s);
	if (n > JOURNAL_FIELD_MAX)
		return err_set(err, "journal: the %s is %zu bytes, more than the %d allowed", what,
		               n, JOURNAL_FIELD_MAX);
	if (!utf8_valid(s, n))
		return err_set(err, "journal: the %s is not valid UTF-8", what);
	return 0;
}

static int check_key(const char *key, struct ga_err *err)
{
	if (key_valid(key))
		return 0;
	if (!key || !*key)
		return err_set(err, "journal: an empty key");
	return err_set(err,
	               "journal: key \"%.40s%s\" must be 1..%d bytes of printable ASCII without "
	               "spaces",
	               key, strlen(key) > 40 ? "…" : "", JOURNAL_KEY_MAX);
}

/* The error text as written: at most JOURNAL_FIELD_MAX bytes, cut on a
 * character boundary, invalid UTF-8 bytes replaced by '?'. Caller frees. */
static char *clean_error(const char *s)
{
	if (!s)
		s = "";
	size_t n = strlen(s);
	struct strbuf sb;
	sb_init(&sb, JOURNAL_FIELD_MAX);
	size_t i = 0;
	while (i < n) {
		unsigned int cp;
		int k = utf8_decode(s + i, n - i, &cp);
		int rc = k > 0 ? sb_append(&sb, s + i, (size_t)k) : sb_putc(&sb, '?');
		if (rc < 0)
			break; /* full: cut here, between characters */
		i += k > 0 ? (size_t)k : 1;
	}
	char *out = sb_detach(&sb);
	return out;
}

/* ---- the file ---------------------------------------------------------------------- */

static int fsync_dir(const char *path, struct ga_err *err)
{
	const char *slash = strrchr(path, '/');
	char *dir =
	        slash ? xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : xstrdup(".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd < 0 ? -1 : fsync(fd);
	int saved = errno;
	if (fd >= 0)
		close(fd);
	if (rc < 0 && saved != EINVAL && saved != EROFS) {
		err_set(err, "cannot fsync the directory %s: %s", dir, strerror(saved));
		free(dir);
		return -1;
	}
	free(dir);
	return 0;
}

static int open_for_append(struct journal *j, struct ga_err *err)
{
	if (j->fd >= 0)
		return 0;
	bool created = !j->file_exists;
	j->fd = open(j->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (j->fd < 0)
		return err_set(err, "cannot open %s for appending: %s", j->path, strerror(errno));
	/* A new file's name is durable only once its directory is; until that
	 * succeeds the file counts as new (the next write tries again). */
	if (created && fsync_dir(j->path, err) < 0) {
		close(j->fd);
		j->fd = -1;
		return -1;
	}
	j->file_exists = true;
	return 0;
}

/* Appends bytes (one record with its '\n') in one write(2) and fsyncs. */
static int append_durable(struct journal *j, const char *line, size_t len, struct ga_err *err)
{
	if (open_for_append(j, err) < 0)
		return -1;
	struct strbuf sb;
	sb_init(&sb, len + 2);
	/* After a failed write the file may end in a partial line: start on a
	 * fresh one (a blank line is skipped on replay). */
	if (j->tail_dirty)
		sb_putc(&sb, '\n');
	sb_append(&sb, line, len);
	sb_putc(&sb, '\n');
	size_t n = sb.len;
	int rc = fsx_write_all(j->fd, sb.buf, n);
	int saved = errno;
	sb_free(&sb);
	if (rc < 0) {
		j->tail_dirty = true;
		struct stat st;
		if (fstat(j->fd, &st) == 0)
			j->file_bytes = (size_t)st.st_size;
		return err_set(err, "cannot append to %s: %s", j->path, strerror(saved));
	}
	j->tail_dirty = false;
	j->file_bytes += n;
	if (fsync(j->fd) < 0)
		return err_set(err, "cannot fsync %s: %s", j->path, strerror(errno));
	return 0;
}

/* The record of an entry's current state, as one compact JSON line. Caller
 * frees. */
static char *record_of(const struct jentry *e)
{
	char iso[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	int64_t ms = e->state == JOURNAL_INTENT ? e->intent_ms : e->settled_ms;
	switch (e->state) {
	case JOURNAL_INTENT:
		cJSON_AddStringToObject(o, "op", "intent");
		cJSON_AddStringToObject(o, "key", e->key);
		cJSON_AddStringToObject(o, "platform", e->platform);
		cJSON_AddStringToObject(o, "target", e->target);
		if (e->payload)
			cJSON_AddItemToObject(o, "payload", cJSON_Duplicate(e->payload, 1));
		break;
	case JOURNAL_DONE:
		cJSON_AddStringToObject(o, "op", "done");
		cJSON_AddStringToObject(o, "key", e->key);
		if (e->artifact)
			cJSON_AddStringToObject(o, "artifact", e->artifact);
		break;
	default:
		cJSON_AddStringToObject(o, "op", "failed");
		cJSON_AddStringToObject(o, "key", e->key);
		cJSON_AddStringToObject(o, "error", e->error ? e->error : "");
		break;
	}
	cJSON_AddStringToObject(o, "time", time_format_iso(ms, iso));
	cJSON_AddNumberToObject(o, "ms", (double)ms);
	char *s = json_print(o);
	cJSON_Delete(o);
	return s;
}

static void maybe_compact(struct journal *j)
{
	if (j->file_bytes <= JOURNAL_MAX_BYTES || j->file_bytes < 2 * j->compacted_bytes)
		return;
	struct ga_err e;
	err_clear(&e);
	size_t before = j->file_bytes;
	if (journal_compact(j, &e) < 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "compaction failed; the file keeps growing",
		       "error", e.msg);
	else
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "compacted", "before", LOG_INT(before), "after",
		       LOG_INT(j->file_bytes), "pending", LOG_INT(j->pending.n));
}

/* ---- replay ------------------------------------------------------------------------ */

static void replay_skip(size_t lineno, const char *why)
{
	log_kv(LOG_LEVEL_WARN, LOG_COMP, "skipping an invalid journal record", "line",
	       LOG_INT(lineno), "reason", why);
}

static int64_t record_ms(const cJSON *v)
{
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(v, "ms");
	int64_t out = 0;
	if (cJSON_IsNumber(ms) && json_get_int(v, "ms", &out, NULL) == 0)
		return out;
	const char *iso = json_string_or(v, "time", NULL);
	if (iso && time_parse_iso(iso, &out) == 0)
		return out;
	return 0;
}

/* A field that must be a bounded, valid string (or absent when optional). */
static int replay_str(const cJSON *v, const char *name, bool required, const char **out,
                      size_t lineno)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(v, name);
	*out = NULL;
	if (!it) {
		if (!required)
			return 0;
		char why[64];
		err_fmt(why, sizeof why, "field '%s' is missing", name);
		replay_skip(lineno, why);
		return -1;
	}
	char why[96];
	if (!cJSON_IsString(it) || !it->valuestring) {
		err_fmt(why, sizeof why, "field '%s' must be a string", name);
		replay_skip(lineno, why);
		return -1;
	}
	if (strlen(it->valuestring) > JOURNAL_FIELD_MAX) {
		err_fmt(why, sizeof why, "field '%s' is longer than %d bytes", name,
		        JOURNAL_FIELD_MAX);
		replay_skip(lineno, why);
		return -1;
	}
	*out = it->valuestring;
	return 0;
}

static int replay_one(void *ud, const cJSON *v, size_t lineno)
{
	struct journal *j = ud;
	if (!cJSON_IsObject(v)) {
		replay_skip(lineno, "not a JSON object");
		return 0;
	}
	const char *op = json_string_or(v, "op", NULL);
	const char *key = json_string_or(v, "key", NULL);
	if (!op || (strcmp(op, "intent") && strcmp(op, "done") && strcmp(op, "failed"))) {
		replay_skip(lineno, "field 'op' must be \"intent\", \"done\" or \"failed\"");
		return 0;
	}
	if (!key_valid(key)) {
		replay_skip(lineno, "field 'key' is missing or not a valid key");
		return 0;
	}
	int64_t ms = record_ms(v);
	struct jentry *e = find(j, key);
	struct jold *o = e ? NULL : old_find(j, key);
	if (strcmp(op, "intent") == 0) {
		const char *platform, *target;
		if (replay_str(v, "platform", true, &platform, lineno) < 0 ||
		    replay_str(v, "target", true, &target, lineno) < 0)
			return 0;
		const cJSON *payload = cJSON_GetObjectItemCaseSensitive(v, "payload");
		if (payload) {
			char *s = json_print(payload);
			size_t n = strlen(s);
			free(s);
			if (n > JOURNAL_PAYLOAD_MAX) {
				replay_skip(lineno, "field 'payload' is too long");
				return 0;
			}
		}
		if (o)
			old_kill(j, o); /* a failed key intended again */
		if (!e) {
			if (!make_room(j)) {
				/* Only a file this module did not write can get here. */
				log_kv(LOG_LEVEL_ERROR, LOG_COMP,
				       "journal index full of pending intents: an intent is not "
				       "loaded",
				       "line", LOG_INT(lineno), "key", key);
				return 0;
			}
			e = insert(j, key);
		}
		apply_intent(j, e, platform, target, payload, ms);
		return 0;
	}
	bool done = strcmp(op, "done") == 0;
	const char *text;
	if (replay_str(v, done ? "artifact" : "error", !done, &text, lineno) < 0)
		return 0;
	if (o)
		old_kill(j, o); /* the last record of a key wins */
	if (!e) {
		if (!make_room(j))
			return 0; /* a settled key we would forget first anyway */
		e = insert(j, key);
	}
	apply_settle(j, e, done ? JOURNAL_DONE : JOURNAL_FAILED, text, ms);
	return 0;
}

struct journal *journal_open(const char *memory_dir, struct ga_err *err)
{
	if (!memory_dir || !*memory_dir) {
		err_set(err, "journal: no memory directory given");
		return NULL;
	}
	if (fsx_mkdir_p(memory_dir, err) < 0)
		return NULL;
	struct journal *j = xcalloc(1, sizeof *j);
	j->fd = -1;
	/* Untouched pages of it cost nothing until keys reach them. */
	j->old = xcalloc(JOURNAL_MAX_KEYS, sizeof *j->old);
	j->path = fsx_join(memory_dir, JOURNAL_FILE);
	struct stat st;
	if (stat(j->path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			err_set(err, "%s is not a regular file", j->path);
			journal_close(j);
			return NULL;
		}
		j->file_exists = true;
	} else if (errno != ENOENT) {
		err_set(err, "cannot stat %s: %s", j->path, strerror(errno));
		journal_close(j);
		return NULL;
	}
	struct fsx_jsonl_stats stats;
	if (fsx_jsonl_read(j->path, JOURNAL_LINE_MAX, replay_one, j, &stats, err) < 0) {
		journal_close(j);
		return NULL;
	}
	if (j->file_exists && stat(j->path, &st) == 0)
		j->file_bytes = (size_t)st.st_size;
	if (stats.torn_tail) {
		/* A crash mid-append: the next record starts with a '\n' that
		 * ends that line. Without it the next intent would be glued to
		 * the torn line and lost on the next replay. (Done at the next
		 * write, not here, so a read-only open never writes.) */
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "the last line was cut short (a crash mid-write?)",
		       "file", j->path);
		j->tail_dirty = true;
	}
	if (stats.lines_bad)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "unreadable lines skipped", "file", j->path,
		       "lines", LOG_INT(stats.lines_bad));
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "replayed", "file", j->path, "keys", LOG_INT(j->count),
	       "pending", LOG_INT(j->pending.n));
	return j;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	for (size_t b = 0; b < JOURNAL_HASH_BUCKETS; b++) {
		struct jentry *e = j->buckets[b];
		while (e) {
			struct jentry *next = e->hnext;
			entry_free(e);
			e = next;
		}
	}
	if (j->fd >= 0)
		close(j->fd);
	free(j->old);
	free(j->looked_up);
	free(j->path);
	free(j);
}

/* ---- writing ------------------------------------------------------------------------ */

int journal_intent(struct journal *j, const char *key, const char *platform, const char *target,
                   const cJSON *payload, int64_t now_ms, struct ga_err *err)
{
	if (check_key(key, err) < 0)
		return -1;
	if (!platform || !*platform)
		return err_set(err, "journal: intent %s has no platform", key);
	if (!target)
		return err_set(err, "journal: intent %s has no target", key);
	if (check_field("platform", platform, err) < 0 || check_field("target", target, err) < 0)
		return -1;
	struct jentry *e = find(j, key);
	struct jold *o = e ? NULL : old_find(j, key);
	if (o && o->state == JOURNAL_DONE)
		return err_set(err,
		               "journal: %s is already done (settled long ago): the side effect "
		               "happened; do not repeat it",
		               key);
	if (e && e->state == JOURNAL_DONE)
		return err_set(err,
		               "journal: %s is already done (%s): the side effect happened; do not "
		               "repeat it",
		               key, e->artifact ? e->artifact : "no artifact recorded");
	if (e && e->state == JOURNAL_INTENT)
		return err_set(err,
		               "journal: %s already has a pending intent: reconcile it before "
		               "trying again",
		               key);
	if (!e && !can_make_room(j))
		return err_set(err,
		               "journal: all %d keys are pending intents; reconcile them before "
		               "starting another side effect",
		               JOURNAL_MAX_KEYS);
	if (payload) {
		char *s = json_print(payload);
		size_t n = strlen(s);
		bool ok = utf8_valid(s, n);
		free(s);
		if (n > JOURNAL_PAYLOAD_MAX)
			return err_set(err, "journal: the payload of %s is %zu bytes, more than %d",
			               key, n, JOURNAL_PAYLOAD_MAX);
		if (!ok)
			return err_set(err, "journal: the payload of %s is not valid UTF-8", key);
	}
	/* Written first; memory changes only once the record is durable. */
	struct jentry tmp = {.key = (char *)key,
	                     .state = JOURNAL_INTENT,
	                     .platform = (char *)platform,
	                     .target = (char *)target,
	                     .payload = (cJSON *)payload,
	                     .intent_ms = now_ms};
	char *line = record_of(&tmp);
	int rc = append_durable(j, line, strlen(line), err);
	free(line);
	if (rc < 0)
		return -1;
	if (o)
		old_kill(j, o); /* a failed key, intended again: a full entry now */
	if (!e) {
		make_room(j);
		e = insert(j, key);
	}
	apply_intent(j, e, platform, target, payload, now_ms);
	maybe_compact(j);
	return 0;
}

static int settle(struct journal *j, const char *key, enum journal_state to, const char *text,
                  int64_t now_ms, struct ga_err *err)
{
	const char *what = to == JOURNAL_DONE ? "done" : "failed";
	if (check_key(key, err) < 0)
		return -1;
	struct jentry *e = find(j, key);
	enum journal_state now = journal_state_of(j, key);
	if (to == JOURNAL_DONE && now == JOURNAL_DONE) {
		const char *had = journal_artifact(j, key);
		bool same = (!text && !had) || (text && had && strcmp(text, had) == 0);
		if (same)
			return 0;
		return err_set(err, "journal: %s is already done with artifact %s, not %s", key,
		               had ? had : "(none)", text ? text : "(none)");
	}
	if (!e || e->state != JOURNAL_INTENT)
		return err_set(err, "journal: cannot mark %s %s: it has no pending intent (%s)",
		               key, what, journal_state_name(now));
	struct jentry tmp = {.key = (char *)key, .state = to, .settled_ms = now_ms};
	if (to == JOURNAL_DONE) {
		if (text && check_field("artifact", text, err) < 0)
			return -1;
		tmp.artifact = (char *)text;
	} else {
		tmp.error = clean_error(text);
	}
	char *line = record_of(&tmp);
	int rc = append_durable(j, line, strlen(line), err);
	free(line);
	if (rc == 0)
		apply_settle(j, e, to, to == JOURNAL_DONE ? text : tmp.error, now_ms);
	free(tmp.error);
	if (rc < 0)
		return -1;
	maybe_compact(j);
	return 0;
}

int journal_done(struct journal *j, const char *key, const char *artifact, int64_t now_ms,
                 struct ga_err *err)
{
	return settle(j, key, JOURNAL_DONE, artifact, now_ms, err);
}

int journal_failed(struct journal *j, const char *key, const char *error, int64_t now_ms,
                   struct ga_err *err)
{
	return settle(j, key, JOURNAL_FAILED, error, now_ms, err);
}

/* ---- reading ----------------------------------------------------------------------- */

enum journal_state journal_state_of(const struct journal *j, const char *key)
{
	const struct jentry *e = find(j, key);
	if (e)
		return e->state;
	const struct jold *o = old_find(j, key);
	return o ? (enum journal_state)o->state : JOURNAL_NONE;
}

const char *journal_artifact(const struct journal *j, const char *key)
{
	const struct jentry *e = find(j, key);
	if (e)
		return e->state == JOURNAL_DONE ? e->artifact : NULL;
	const struct jold *o = old_find(j, key);
	return o && o->state == JOURNAL_DONE ? old_text(j, key, JOURNAL_DONE) : NULL;
}

const char *journal_error(const struct journal *j, const char *key)
{
	const struct jentry *e = find(j, key);
	if (e)
		return e->state == JOURNAL_FAILED ? e->error : NULL;
	const struct jold *o = old_find(j, key);
	return o && o->state == JOURNAL_FAILED ? old_text(j, key, JOURNAL_FAILED) : NULL;
}

struct pend_ref {
	char *key;
	int64_t ms;
	uint64_t seq;
};

static int pend_cmp(const void *a, const void *b)
{
	const struct pend_ref *x = a, *y = b;
	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t journal_pending(const struct journal *j,
                       void (*fn)(void *ud, const char *key, const char *platform,
                                  const char *target, const cJSON *payload, int64_t intent_ms),
                       void *ud)
{
	size_t n = j->pending.n;
	if (!n)
		return 0;
	/* A snapshot of the keys: fn may settle intents (a reconcile that
	 * answers at once), which moves or forgets entries under us. */
	struct pend_ref *refs = xcalloc(n, sizeof *refs);
	size_t i = 0;
	for (const struct jentry *e = j->pending.head; e && i < n; e = e->next, i++)
		refs[i] = (struct pend_ref){xstrdup(e->key), e->intent_ms, e->seq};
	qsort(refs, n, sizeof *refs, pend_cmp);
	size_t called = 0;
	for (i = 0; i < n; i++) {
		const struct jentry *e = find(j, refs[i].key);
		if (e && e->state == JOURNAL_INTENT && e->seq == refs[i].seq) {
			if (fn)
				fn(ud, e->key, e->platform, e->target, e->payload, e->intent_ms);
			called++;
		}
		free(refs[i].key);
	}
	free(refs);
	return called;
}

size_t journal_count(const struct journal *j)
{
	return j->count;
}

size_t journal_whole_count(const struct journal *j)
{
	return j->pending.n + j->settled.n;
}

size_t journal_file_bytes(const struct journal *j)
{
	return j->file_bytes;
}

/* ---- compaction --------------------------------------------------------------------- */

/* The old keys compaction keeps (the newest `n` live slots), with their
 * records read back from the file: rec[i] for the i-th kept slot. */
struct kept_old {
	size_t n;
	struct jold **slot;
	struct jentry *rec; /* key, state, artifact/error, settled_ms, seq */
	size_t found;
};

static int kept_one(void *ud, const cJSON *v, size_t lineno)
{
	(void)lineno;
	struct kept_old *k = ud;
	bool done;
	const char *key = settlement_of(v, &done);
	if (!key)
		return 0;
	struct khash h = hash_of(key);
	for (size_t i = 0; i < k->n; i++) {
		const struct jold *o = k->slot[i];
		if (o->h[0] != h.h[0] || o->h[1] != h.h[1])
			continue;
		struct jentry *r = &k->rec[i];
		if (!r->key)
			k->found++;
		clear_settled_fields(r);
		free(r->key);
		r->key = xstrdup(key);
		r->state = done ? JOURNAL_DONE : JOURNAL_FAILED;
		const char *t = json_string_or(v, done ? "artifact" : "error", NULL);
		if (done)
			r->artifact = t ? xstrdup(t) : NULL;
		else
			r->error = xstrdup(t ? t : "");
		r->settled_ms = record_ms(v);
		r->seq = o->seq;
		break;
	}
	return 0;
}

static void kept_free(struct kept_old *k)
{
	for (size_t i = 0; i < k->n; i++) {
		clear_settled_fields(&k->rec[i]);
		free(k->rec[i].key);
	}
	free(k->rec);
	free(k->slot);
}

int journal_compact(struct journal *j, struct ga_err *err)
{
	/* Kept: every recent settled key (JOURNAL_RECENT_SETTLED <=
	 * JOURNAL_KEEP_SETTLED) and the newest old ones up to
	 * JOURNAL_KEEP_SETTLED in all; the older old ones are dropped. */
	struct kept_old k = {0};
	size_t room = JOURNAL_KEEP_SETTLED - j->settled.n;
	size_t keep_old = j->old_live < room ? j->old_live : room;
	size_t drop = j->old_live - keep_old;
	if (keep_old) {
		k.slot = xcalloc(keep_old, sizeof *k.slot);
		k.rec = xcalloc(keep_old, sizeof *k.rec);
		for (size_t i = 0, live = 0; i < j->old_len; i++) {
			struct jold *o = old_at(j, i);
			if (o->state == JOURNAL_NONE)
				continue;
			if (live++ >= drop)
				k.slot[k.n++] = o;
		}
		struct fsx_jsonl_stats stats;
		if (fsx_jsonl_read(j->path, JOURNAL_LINE_MAX, kept_one, &k, &stats, err) < 0) {
			kept_free(&k);
			return -1;
		}
		if (k.found < k.n) {
			kept_free(&k);
			return err_set(
			        err,
			        "journal: %zu settled keys kept in memory have no record in %s; "
			        "not compacted",
			        k.n - k.found, j->path);
		}
	}
	/* Merge pending and kept settled (old, then recent: every old key is
	 * older) by seq: replay then rebuilds the same order. The whole content
	 * is one buffer; its size is bounded by the key bound times the line
	 * bound. */
	struct strbuf sb;
	sb_init(&sb, (size_t)JOURNAL_MAX_KEYS * (JOURNAL_LINE_MAX + 1));
	const struct jentry *p = j->pending.head, *s = j->settled.head;
	size_t oi = 0;
	while (p || s || oi < k.n) {
		const struct jentry *e = oi < k.n ? &k.rec[oi] : s;
		if (p && (!e || p->seq < e->seq)) {
			e = p;
			p = p->next;
		} else if (oi < k.n) {
			oi++;
		} else {
			s = s->next;
		}
		char *line = record_of(e);
		int rc = sb_puts(&sb, line);
		free(line);
		if (rc < 0 || sb_putc(&sb, '\n') < 0) {
			sb_free(&sb);
			kept_free(&k);
			return err_set(err, "journal: compacted content of %s is over its bound",
			               j->path);
		}
	}
	kept_free(&k);
	size_t len = sb.len;
	int rc = fsx_write_atomic(j->path, sb.buf ? sb.buf : "", len, err);
	sb_free(&sb);
	if (rc < 0)
		return -1;
	/* The old descriptor points at the replaced file. */
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	j->file_exists = true;
	j->tail_dirty = false;
	j->file_bytes = len;
	j->compacted_bytes = len;
	for (size_t i = 0; i < drop; i++) {
		old_squeeze(j);
		old_kill(j, old_at(j, 0));
	}
	old_squeeze(j);
	return 0;
}

const char *journal_state_name(enum journal_state s)
{
	switch (s) {
	case JOURNAL_INTENT:
		return "intent";
	case JOURNAL_DONE:
		return "done";
	case JOURNAL_FAILED:
		return "failed";
	default:
		return "none";
	}
}
