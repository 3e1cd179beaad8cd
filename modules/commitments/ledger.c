/*
 * ledger — durable commitment intake and status. See ledger.h.
 *
 * In memory: the commitments in creation order (items[]), every open one and
 * the LEDGER_KEEP_CLOSED most recently closed ones. Replay applies the same
 * transitions as the API, so it forgets the same closed commitments in the
 * same order; compaction writes what is in memory, so replaying the
 * compacted file gives the same ledger.
 */
#include "modules/commitments/ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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

#define LOG_COMP        "commitments"
#define LEDGER_LINE_MAX (1024 * 1024)
/* Every commitment in memory at its longest line. */
#define LEDGER_COMPACT_MAX ((size_t)(LEDGER_MAX_OPEN + LEDGER_KEEP_CLOSED) * LEDGER_LINE_MAX)

struct ledger_item {
	char id[LEDGER_ID_MAX];
	char key[17]; /* the dedup key: the id's last 16 characters */
	char *action;
	char *source;
	cJSON *params;
	enum ledger_status status;
	int64_t created_ms;
	int64_t updated_ms;
	int attempts;
	char *error;
	char *link; /* what was made (completed), or NULL */
};

static const char *const status_names[LEDGER_STATUS_COUNT] = {
        [LEDGER_PENDING] = "pending",     [LEDGER_IN_PROGRESS] = "in_progress",
        [LEDGER_COMPLETED] = "completed", [LEDGER_FAILED] = "failed",
        [LEDGER_ABANDONED] = "abandoned",
};

const char *ledger_status_name(enum ledger_status s)
{
	return (unsigned)s < LEDGER_STATUS_COUNT ? status_names[s] : "unknown";
}

int ledger_status_parse(const char *name)
{
	for (int i = 0; name && i < LEDGER_STATUS_COUNT; i++)
		if (strcmp(name, status_names[i]) == 0)
			return i;
	return -1;
}

bool ledger_status_open(enum ledger_status s)
{
	return s == LEDGER_PENDING || s == LEDGER_IN_PROGRESS || s == LEDGER_FAILED;
}

void ledger_idem_key(const char *id, char out[LEDGER_IDEM_KEY_MAX])
{
	snprintf(out, LEDGER_IDEM_KEY_MAX, LEDGER_IDEM_PREFIX "%s", id ? id : "");
}

/* ---- memory -------------------------------------------------------------------------- */

static void item_free(struct ledger_item *it)
{
	if (!it)
		return;
	free(it->action);
	free(it->source);
	cJSON_Delete(it->params);
	free(it->error);
	free(it->link);
	free(it);
}

/* The newest item with that id (ids are made unique by ledger_add; a file
 * edited by hand may repeat one, and then the last one is meant). */
static struct ledger_item *find(const struct ledger *l, const char *id)
{
	for (size_t i = l->n; id && i-- > 0;)
		if (strcmp(l->items[i]->id, id) == 0)
			return l->items[i];
	return NULL;
}

static struct ledger_item *find_open_key(const struct ledger *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (ledger_status_open(l->items[i]->status) && strcmp(l->items[i]->key, key) == 0)
			return l->items[i];
	return NULL;
}

static void remove_at(struct ledger *l, size_t i)
{
	if (ledger_status_open(l->items[i]->status))
		l->n_open--;
	item_free(l->items[i]);
	memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof *l->items);
	l->n--;
}

/* Forgets the closed commitments beyond LEDGER_KEEP_CLOSED, the one closed
 * longest ago first (the smallest updated_ms; ties: the oldest created). A
 * function of the state alone, so a replay forgets the same ones. */
static void trim_closed(struct ledger *l)
{
	while (l->n - l->n_open > LEDGER_KEEP_CLOSED) {
		size_t victim = l->n;
		for (size_t i = 0; i < l->n; i++)
			if (!ledger_status_open(l->items[i]->status) &&
			    (victim == l->n ||
			     l->items[i]->updated_ms < l->items[victim]->updated_ms))
				victim = i;
		remove_at(l, victim);
	}
}

static void push(struct ledger *l, struct ledger_item *it)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->items = xreallocarray(l->items, l->cap, sizeof *l->items);
	}
	l->items[l->n++] = it;
	if (ledger_status_open(it->status))
		l->n_open++;
	trim_closed(l);
}

/* The error text as kept: cut at LEDGER_ERROR_MAX bytes between characters,
 * invalid UTF-8 bytes as '?'. Caller frees. */
static char *clean_text(const char *s)
{
	size_t n = strlen(s);
	struct strbuf sb;
	sb_init(&sb, LEDGER_ERROR_MAX);
	for (size_t i = 0; i < n;) {
		unsigned int cp;
		int k = utf8_decode(s + i, n - i, &cp);
		if ((k > 0 ? sb_append(&sb, s + i, (size_t)k) : sb_putc(&sb, '?')) < 0)
			break;
		i += k > 0 ? (size_t)k : 1;
	}
	return sb_detach(&sb);
}

/* The transition table of ledger.h: 1 allowed, 0 the same status, -1 refused. */
static int transition(enum ledger_status from, enum ledger_status to)
{
	if (from == to)
		return 0;
	switch (to) {
	case LEDGER_IN_PROGRESS:
		return from == LEDGER_PENDING || from == LEDGER_FAILED ? 1 : -1;
	case LEDGER_COMPLETED:
	case LEDGER_FAILED:
		return from == LEDGER_IN_PROGRESS ? 1 : -1;
	case LEDGER_ABANDONED:
		return ledger_status_open(from) ? 1 : -1;
	default:
		return -1;
	}
}

/* Applies an allowed change; error (may be NULL) is already clean. */
static void apply_status(struct ledger *l, struct ledger_item *it, enum ledger_status to,
                         int64_t ms, const char *error, const char *link)
{
	if (link && *link) {
		free(it->link);
		it->link = xstrdup(link);
	}
	bool was_open = ledger_status_open(it->status);
	if (it->status == LEDGER_IN_PROGRESS &&
	    (to == LEDGER_COMPLETED || to == LEDGER_FAILED || to == LEDGER_ABANDONED))
		it->attempts++;
	it->status = to;
	it->updated_ms = ms;
	if (to == LEDGER_COMPLETED) {
		free(it->error);
		it->error = NULL;
	}
	if (error) {
		free(it->error);
		it->error = xstrdup(error);
	}
	if (was_open && !ledger_status_open(to))
		l->n_open--;
	trim_closed(l);
}

/* ---- the file -------------------------------------------------------------------------- */

/* One line (with its '\n') in one write(2) on O_APPEND, then fsync: when
 * this returns 0 the line survives a crash. A new file's directory is
 * fsync'ed too. */
static int append_durable(struct ledger *l, const cJSON *o, struct ga_err *err)
{
	char *s = json_print(o);
	size_t n = strlen(s);
	char *line = xmalloc(n + 1);
	memcpy(line, s, n);
	line[n] = '\n';
	free(s);
	bool existed = fsx_exists(l->path);
	int fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(line);
		return err_set(err, "cannot open %s for appending: %s", l->path, strerror(errno));
	}
	const char *step = "write";
	struct stat st;
	off_t before = fstat(fd, &st) == 0 ? st.st_size : -1;
	int rc = fsx_write_all(fd, line, n + 1);
	if (rc < 0 && before >= 0) {
		/* Take back a partial line so the next one is not glued to it. */
		int saved = errno;
		if (ftruncate(fd, before) < 0)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "cannot remove a partial line", "file",
			       l->path, "error", strerror(errno));
		errno = saved;
	}
	if (rc == 0) {
		step = "fsync";
		rc = fsync(fd);
	}
	int saved = errno;
	if (fstat(fd, &st) == 0)
		l->file_bytes = (size_t)st.st_size;
	close(fd);
	free(line);
	if (rc < 0)
		return err_set(err, "cannot append to %s (%s failed): %s", l->path, step,
		               strerror(saved));
	if (!existed) {
		char *dir = xstrdup(l->path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
		free(dir);
	}
	return 0;
}

/* The full line of an item, carrying its current state. Caller deletes. */
static cJSON *item_json(const struct ledger_item *it)
{
	char iso[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", it->id);
	cJSON_AddStringToObject(o, "createdAt", time_format_iso(it->created_ms, iso));
	cJSON_AddStringToObject(o, "action", it->action);
	cJSON_AddStringToObject(o, "source", it->source);
	cJSON_AddStringToObject(o, "status", ledger_status_name(it->status));
	cJSON_AddItemToObject(o, "params",
	                      it->params ? cJSON_Duplicate(it->params, 1) : cJSON_CreateObject());
	if (it->status != LEDGER_PENDING || it->attempts || it->error) {
		cJSON_AddNumberToObject(o, "attemptCount", it->attempts);
		cJSON_AddStringToObject(o, "updatedAt", time_format_iso(it->updated_ms, iso));
		cJSON_AddNumberToObject(o, "ms", (double)it->updated_ms);
		if (it->error)
			cJSON_AddStringToObject(o, "error", it->error);
		if (it->link)
			cJSON_AddStringToObject(o, "link", it->link);
	}
	return o;
}

static void maybe_compact(struct ledger *l)
{
	if (l->file_bytes <= LEDGER_MAX_BYTES || l->file_bytes < 2 * l->compacted_bytes)
		return;
	struct ga_err e = {{0}};
	size_t before = l->file_bytes;
	if (ledger_compact(l, &e) < 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "ledger compaction failed; the file keeps growing",
		       "error", e.msg);
	else
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "ledger compacted", "before", LOG_INT(before),
		       "after", LOG_INT(l->file_bytes), "open", LOG_INT(l->n_open));
}

int ledger_compact(struct ledger *l, struct ga_err *err)
{
	if (!l->path)
		return err_set(err, "the commitment ledger is not open");
	struct strbuf sb;
	sb_init(&sb, LEDGER_COMPACT_MAX);
	for (size_t i = 0; i < l->n; i++) {
		cJSON *o = item_json(l->items[i]);
		char *s = json_print(o);
		cJSON_Delete(o);
		int rc = sb_puts(&sb, s);
		free(s);
		if (rc < 0 || sb_putc(&sb, '\n') < 0) {
			sb_free(&sb);
			return err_set(err, "the compacted %s would pass %zu bytes", l->path,
			               LEDGER_COMPACT_MAX);
		}
	}
	int rc = fsx_write_atomic(l->path, sb.buf ? sb.buf : "", sb.len, err);
	size_t len = sb.len;
	sb_free(&sb);
	if (rc < 0)
		return -1;
	l->file_bytes = len;
	l->compacted_bytes = len;
	return 0;
}

/* ---- replay ------------------------------------------------------------------------------ */

static bool id_valid(const char *id)
{
	if (!id || !*id || strlen(id) >= LEDGER_ID_MAX)
		return false;
	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			return false;
	return true;
}

static void replay_skip(size_t lineno, const char *why)
{
	log_kv(LOG_LEVEL_WARN, LOG_COMP, "skipping an invalid ledger line", "line", LOG_INT(lineno),
	       "reason", why);
}

static int64_t ms_of(const cJSON *v, const char *iso_field, int64_t def)
{
	int64_t ms;
	if (json_get_int(v, "ms", &ms, NULL) == 0)
		return ms;
	const char *iso = json_string_or(v, iso_field, NULL);
	if (iso && time_parse_iso(iso, &ms) == 0)
		return ms;
	return def;
}

static int replay_one(void *ud, const cJSON *v, size_t lineno)
{
	struct ledger *l = ud;
	const char *id = json_string_or(v, "id", NULL);
	if (!id_valid(id)) {
		replay_skip(lineno, "field 'id' is missing or not a valid id");
		return 0;
	}
	const char *st = json_string_or(v, "status", NULL);
	int status = st ? ledger_status_parse(st) : (int)LEDGER_PENDING;
	if (status < 0) {
		replay_skip(lineno, "field 'status' is not a known status");
		return 0;
	}
	const char *error = json_string_or(v, "error", NULL);
	char *clean = error ? clean_text(error) : NULL;
	const char *action = json_string_or(v, "action", NULL);
	if (!action) {
		/* a status line: applied as the API would have */
		struct ledger_item *it = find(l, id);
		int64_t ms = ms_of(v, "updatedAt", 0);
		if (!it)
			log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "status of a forgotten commitment", "id",
			       id);
		else if (transition(it->status, (enum ledger_status)status) < 0)
			replay_skip(lineno, "a status change the transition table refuses");
		else
			apply_status(l, it, (enum ledger_status)status, ms, clean,
			             json_string_or(v, "link", NULL));
		free(clean);
		return 0;
	}
	const char *source = json_string_or(v, "source", "");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(v, "params");
	if (strlen(action) > LEDGER_FIELD_MAX || strlen(source) > LEDGER_FIELD_MAX) {
		replay_skip(lineno, "field 'action' or 'source' is too long");
		free(clean);
		return 0;
	}
	struct ledger_item *old = find(l, id);
	if (old) {
		/* the same id again: the later line is the truth */
		for (size_t i = 0; i < l->n; i++)
			if (l->items[i] == old) {
				remove_at(l, i);
				break;
			}
	}
	if (ledger_status_open((enum ledger_status)status) && l->n_open >= LEDGER_MAX_OPEN) {
		/* Only a file this module did not write gets here. */
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "too many open commitments: one is not loaded",
		       "line", LOG_INT(lineno), "id", id);
		free(clean);
		return 0;
	}
	struct ledger_item *it = xcalloc(1, sizeof *it);
	snprintf(it->id, sizeof it->id, "%s", id);
	size_t idn = strlen(id);
	snprintf(it->key, sizeof it->key, "%s", idn > 16 ? id + idn - 16 : id);
	it->action = xstrdup(action);
	it->source = xstrdup(source);
	it->params = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
	it->status = (enum ledger_status)status;
	it->created_ms = 0;
	const char *created = json_string_or(v, "createdAt", NULL);
	if (created)
		time_parse_iso(created, &it->created_ms);
	it->updated_ms = ms_of(v, "updatedAt", it->created_ms);
	it->attempts = (int)json_int_or(v, "attemptCount", 0);
	if (it->attempts < 0)
		it->attempts = 0;
	it->error = clean;
	const char *link = json_string_or(v, "link", NULL);
	it->link = link && *link ? xstrdup(link) : NULL;
	push(l, it);
	return 0;
}

int ledger_open(struct ledger *l, const char *memory_dir, struct ga_err *err)
{
	memset(l, 0, sizeof *l);
	if (fsx_mkdir_p(memory_dir, err) != 0)
		return -1;
	char *path = fsx_join(memory_dir, LEDGER_FILE);
	l->path = path;
	struct fsx_jsonl_stats st;
	if (fsx_jsonl_read(path, LEDGER_LINE_MAX, replay_one, l, &st, err) != 0) {
		ledger_close(l);
		return -1;
	}
	l->path = path;
	struct stat sb;
	if (stat(path, &sb) == 0)
		l->file_bytes = (size_t)sb.st_size;
	if (st.torn_tail) {
		/* End the cut line so the next one starts clean (one '\n'). */
		int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd < 0 || fsx_write_all(fd, "\n", 1) < 0 || fsync(fd) < 0) {
			err_set(err, "%s ends in a cut line that cannot be ended: %s", path,
			        strerror(errno));
			if (fd >= 0)
				close(fd);
			ledger_close(l);
			return -1;
		}
		close(fd);
		l->file_bytes++;
	}
	return 0;
}

void ledger_close(struct ledger *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		item_free(l->items[i]);
	free(l->items);
	free(l->path);
	memset(l, 0, sizeof *l);
}

/* ---- the API ------------------------------------------------------------------------------ */

static int check_text(const char *what, const char *s, struct ga_err *err)
{
	if (!s || !*s)
		return err_set(err, "a commitment needs a %s", what);
	size_t n = strlen(s);
	if (n > LEDGER_FIELD_MAX)
		return err_set(err, "the commitment's %s is %zu bytes, more than %d", what, n,
		               LEDGER_FIELD_MAX);
	if (!utf8_valid(s, n))
		return err_set(err, "the commitment's %s is not valid UTF-8", what);
	return 0;
}

int ledger_add(struct ledger *l, const char *action, const char *source, const cJSON *params,
               int64_t now_ms, char id_out[LEDGER_ID_MAX], struct ga_err *err)
{
	id_out[0] = '\0';
	if (!l->path)
		return err_set(err, "the commitment ledger could not be opened; nothing can be "
		                    "queued (see the log at start)");
	if (check_text("action", action, err) < 0 || check_text("source", source, err) < 0)
		return -1;
	char *p = params ? json_print(params) : xstrdup("{}");
	size_t plen = strlen(p);
	if (plen > LEDGER_PARAMS_MAX || !utf8_valid(p, plen)) {
		free(p);
		return err_set(err, plen > LEDGER_PARAMS_MAX
		                            ? "the commitment's parameters are over the byte limit"
		                            : "the commitment's parameters are not valid UTF-8");
	}
	char *material = xasprintf("%s:%s:%s", source, action, p);
	free(p);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(material, strlen(material), hex);
	free(material);
	char key[17];
	memcpy(key, hex, 16);
	key[16] = '\0';
	const struct ledger_item *dup = find_open_key(l, key);
	if (dup) {
		snprintf(id_out, LEDGER_ID_MAX, "%s", dup->id);
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "duplicate commitment not queued", "action",
		       action, "source", source, "id", dup->id, "status",
		       ledger_status_name(dup->status));
		return LEDGER_DUPLICATE;
	}
	if (l->n_open >= LEDGER_MAX_OPEN)
		return err_set(err,
		               "%d commitments are already open (pending, in progress or failed); "
		               "finish or abandon some before queueing another",
		               LEDGER_MAX_OPEN);
	/* Ids are unique: the same commitment queued again in the same
	 * millisecond after the first closed gets the next free millisecond. */
	int64_t ms = now_ms;
	for (;;) {
		snprintf(id_out, LEDGER_ID_MAX, "commitment-%lld-%s", (long long)ms, key);
		if (!find(l, id_out))
			break;
		ms++;
	}
	struct ledger_item *it = xcalloc(1, sizeof *it);
	snprintf(it->id, sizeof it->id, "%s", id_out);
	memcpy(it->key, key, sizeof it->key);
	it->action = xstrdup(action);
	it->source = xstrdup(source);
	it->params = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
	it->status = LEDGER_PENDING;
	it->created_ms = it->updated_ms = now_ms;
	cJSON *o = item_json(it);
	int rc = append_durable(l, o, err);
	cJSON_Delete(o);
	if (rc != 0) {
		item_free(it);
		id_out[0] = '\0';
		return -1;
	}
	push(l, it);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "commitment queued", "id", id_out, "action", action,
	       "source", source);
	maybe_compact(l);
	return LEDGER_ADDED;
}

int ledger_set_status(struct ledger *l, const char *id, enum ledger_status status, int64_t now_ms,
                      const char *error, struct ga_err *err)
{
	return ledger_set_result(l, id, status, now_ms, error, NULL, err);
}

int ledger_set_result(struct ledger *l, const char *id, enum ledger_status status, int64_t now_ms,
                      const char *error, const char *link, struct ga_err *err)
{
	if (!l->path)
		return err_set(err, "the commitment ledger could not be opened");
	if ((unsigned)status >= LEDGER_STATUS_COUNT)
		return err_set(err, "unknown commitment status %d", (int)status);
	struct ledger_item *it = find(l, id);
	if (!it)
		return err_set(err, "no commitment %s in the ledger", id ? id : "(null)");
	int t = transition(it->status, status);
	if (t == 0)
		return 0;
	if (t < 0)
		return err_set(err, "commitment %s is %s; it cannot become %s", id,
		               ledger_status_name(it->status), ledger_status_name(status));
	char *clean = error ? clean_text(error) : NULL;
	char iso[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", it->id);
	cJSON_AddStringToObject(o, "status", ledger_status_name(status));
	cJSON_AddStringToObject(o, "updatedAt", time_format_iso(now_ms, iso));
	cJSON_AddNumberToObject(o, "ms", (double)now_ms);
	if (clean)
		cJSON_AddStringToObject(o, "error", clean);
	if (link && *link)
		cJSON_AddStringToObject(o, "link", link);
	int rc = append_durable(l, o, err);
	cJSON_Delete(o);
	if (rc == 0) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "commitment status", "id", id, "from",
		       ledger_status_name(it->status), "to", ledger_status_name(status));
		apply_status(l, it, status, now_ms, clean, link); /* may free it */
	}
	free(clean);
	if (rc != 0)
		return -1;
	maybe_compact(l);
	return 0;
}

static void fill(const struct ledger_item *it, struct ledger_entry *out)
{
	*out = (struct ledger_entry){
	        .id = it->id,
	        .action = it->action,
	        .source = it->source,
	        .params = it->params,
	        .status = it->status,
	        .created_ms = it->created_ms,
	        .updated_ms = it->updated_ms,
	        .attempts = it->attempts,
	        .error = it->error,
	        .link = it->link,
	};
}

int ledger_get(const struct ledger *l, const char *id, struct ledger_entry *out)
{
	const struct ledger_item *it = find(l, id);
	if (!it)
		return -1;
	fill(it, out);
	return 0;
}

size_t ledger_each(const struct ledger *l, void (*fn)(void *ud, const struct ledger_entry *e),
                   void *ud)
{
	for (size_t i = 0; i < l->n; i++) {
		struct ledger_entry e;
		fill(l->items[i], &e);
		if (fn)
			fn(ud, &e);
	}
	return l->n;
}

size_t ledger_count(const struct ledger *l, enum ledger_status status)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++)
		n += l->items[i]->status == status;
	return n;
}

size_t ledger_file_bytes(const struct ledger *l)
{
	return l->file_bytes;
}
