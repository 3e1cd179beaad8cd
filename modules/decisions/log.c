/* decision log — decisions.jsonl, the ring and the subscribers (see log.h). */
#include "modules/decisions/log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsx.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

struct owned_record {
	struct decision_record r; /* its strings point at the fields below */
	char *platform;
	char *conversation;
	char *message_id;
	char *rule;
};

struct subscriber {
	int id; /* 0: free slot */
	decision_log_fn fn;
	void *ud;
};

struct decision_log {
	char *path;
	size_t max_bytes;
	struct owned_record ring[DECISION_LOG_RECENT];
	size_t ring_start, ring_len;
	struct subscriber subs[DECISION_LOG_MAX_SUBSCRIBERS];
	int next_id;
	int depth;          /* appends in progress (a subscriber may append) */
	bool close_pending; /* closed from inside a callback */
	uint64_t last_warn_mono_ms;
	bool warned;
	unsigned long failures_unreported;
};

/* ---- strings ---------------------------------------------------------- */

/* A copy of s that is valid UTF-8 (an invalid byte becomes U+FFFD) and at
 * most max bytes long, cut between characters. Caller frees. */
static char *clean_utf8(const char *s, size_t max)
{
	if (!s)
		s = "";
	size_t len = strlen(s);
	struct strbuf sb;
	sb_init(&sb, 0);
	size_t i = 0;
	while (i < len) {
		unsigned int cp;
		int n = utf8_decode(s + i, len - i, &cp);
		const char *piece = s + i;
		size_t plen = (size_t)n;
		if (n < 0) {
			piece = "\xEF\xBF\xBD";
			plen = 3;
			n = 1;
		}
		if (sb.len + plen > max)
			break;
		sb_append(&sb, piece, plen);
		i += (size_t)n;
	}
	return sb_detach(&sb);
}

static void owned_free(struct owned_record *o)
{
	free(o->platform);
	free(o->conversation);
	free(o->message_id);
	free(o->rule);
	memset(o, 0, sizeof *o);
}

static void owned_set(struct owned_record *o, const struct decision_record *rec)
{
	owned_free(o);
	o->platform = xstrdup(rec->platform ? rec->platform : "");
	o->conversation = xstrdup(rec->conversation ? rec->conversation : "");
	o->message_id = xstrdup(rec->message_id ? rec->message_id : "");
	o->rule = xstrdup(rec->decision.rule ? rec->decision.rule : "");
	o->r = *rec;
	o->r.platform = o->platform;
	o->r.conversation = o->conversation;
	o->r.message_id = o->message_id;
	o->r.decision.rule = o->rule;
}

/* ---- the stored form ---------------------------------------------------- */

static void add_clean(cJSON *obj, const char *key, const char *s, size_t max)
{
	char *c = clean_utf8(s, max);
	cJSON_AddStringToObject(obj, key, c);
	free(c);
}

cJSON *decision_record_to_json(const struct decision_record *rec)
{
	char iso[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "time", time_format_iso(rec->time_ms, iso));
	add_clean(o, "platform", rec->platform, DECISION_LOG_FIELD_MAX_BYTES);
	add_clean(o, "conversation", rec->conversation, DECISION_LOG_FIELD_MAX_BYTES);
	add_clean(o, "messageId", rec->message_id, DECISION_LOG_FIELD_MAX_BYTES);
	cJSON_AddStringToObject(o, "stage", decision_stage_name(rec->stage));
	cJSON_AddStringToObject(o, "verdict", decision_verdict_name(rec->decision.verdict));
	add_clean(o, "rule", rec->decision.rule, DECISION_LOG_FIELD_MAX_BYTES);
	add_clean(o, "reason", rec->decision.reason, DECISION_REASON_MAX - 1);
	return o;
}

char *decision_record_to_line(const struct decision_record *rec)
{
	cJSON *o = decision_record_to_json(rec);
	char *s = json_print(o);
	cJSON_Delete(o);
	return s;
}

int decision_record_from_json(const cJSON *v, struct decision_record *out)
{
	const char *t, *platform, *conv, *mid, *stage, *verdict, *rule, *reason;
	if (!cJSON_IsObject(v) || json_get_string(v, "time", &t, NULL) < 0 ||
	    json_get_string(v, "platform", &platform, NULL) < 0 ||
	    json_get_string(v, "conversation", &conv, NULL) < 0 ||
	    json_get_string(v, "messageId", &mid, NULL) < 0 ||
	    json_get_string(v, "stage", &stage, NULL) < 0 ||
	    json_get_string(v, "verdict", &verdict, NULL) < 0 ||
	    json_get_string(v, "rule", &rule, NULL) < 0 ||
	    json_get_string(v, "reason", &reason, NULL) < 0)
		return -1;
	int st = decision_stage_parse(stage);
	int vd = decision_verdict_parse(verdict);
	int64_t ms;
	if (st < 0 || vd < 0 || time_parse_iso(t, &ms) < 0)
		return -1;
	memset(out, 0, sizeof *out);
	out->time_ms = ms;
	out->platform = platform;
	out->conversation = conv;
	out->message_id = mid;
	out->stage = (enum decision_stage)st;
	/* "%s" keeps the reason verbatim and decision_set cuts it where a
	 * hand-edited file made it too long. */
	decision_set(&out->decision, (enum decision_verdict)vd, rule, "%s", reason);
	return 0;
}

/* ---- paths --------------------------------------------------------------- */

char *decision_log_path(const char *memory_dir)
{
	return fsx_join(memory_dir, DECISION_LOG_FILE);
}

char *decision_log_backup_path(const char *memory_dir, int n)
{
	char *p = decision_log_path(memory_dir);
	char *b = xasprintf("%s.%d", p, n);
	free(p);
	return b;
}

/* ---- open / close ------------------------------------------------------- */

struct decision_log *decision_log_open_sized(const char *memory_dir, size_t max_bytes,
                                             struct ga_err *err)
{
	if (!memory_dir || !*memory_dir) {
		err_set(err, "the decision log needs a memory directory");
		return NULL;
	}
	if (fsx_mkdir_p(memory_dir, err) < 0)
		return NULL;
	struct decision_log *log = xcalloc(1, sizeof *log);
	log->path = decision_log_path(memory_dir);
	log->max_bytes = max_bytes ? max_bytes : DECISION_LOG_MAX_BYTES;
	log->next_id = 1;
	return log;
}

struct decision_log *decision_log_open(const char *memory_dir, struct ga_err *err)
{
	return decision_log_open_sized(memory_dir, DECISION_LOG_MAX_BYTES, err);
}

static void log_destroy(struct decision_log *log)
{
	for (size_t i = 0; i < DECISION_LOG_RECENT; i++)
		owned_free(&log->ring[i]);
	free(log->path);
	free(log);
}

void decision_log_close(struct decision_log *log)
{
	if (!log)
		return;
	if (log->depth > 0) {
		log->close_pending = true;
		return;
	}
	log_destroy(log);
}

/* ---- append ------------------------------------------------------------- */

/* Rotates first when the line would take the file past max_bytes, so the
 * file stays within it (unless one line alone is larger). */
static int write_line(struct decision_log *log, const char *line, size_t len, struct ga_err *err)
{
	size_t need = len + 1;
	size_t threshold = log->max_bytes > need ? log->max_bytes - need + 1 : 1;
	if (fsx_rotate(log->path, threshold, DECISION_LOG_KEEP, err) < 0)
		return -1;
	return fsx_append_line(log->path, line, len, err);
}

static void report_failure(struct decision_log *log, const struct ga_err *e)
{
	uint64_t now = time_mono_ms();
	if (log->warned && now - log->last_warn_mono_ms < DECISION_LOG_WARN_INTERVAL_MS) {
		log->failures_unreported++;
		return;
	}
	log_kv(LOG_LEVEL_WARN, "decisions", "cannot write the decision log", "error", e->msg,
	       "failures_since_last_warning", LOG_INT(log->failures_unreported));
	log->warned = true;
	log->last_warn_mono_ms = now;
	log->failures_unreported = 0;
}

static void ring_push(struct decision_log *log, const struct decision_record *rec)
{
	size_t slot;
	if (log->ring_len < DECISION_LOG_RECENT) {
		slot = (log->ring_start + log->ring_len) % DECISION_LOG_RECENT;
		log->ring_len++;
	} else {
		slot = log->ring_start;
		log->ring_start = (log->ring_start + 1) % DECISION_LOG_RECENT;
	}
	owned_set(&log->ring[slot], rec);
}

static void notify(struct decision_log *log, const struct decision_record *rec)
{
	/* Only those subscribed before this decision: a slot freed and reused
	 * during the walk carries a newer id. */
	int last_id = log->next_id - 1;
	for (size_t i = 0; i < DECISION_LOG_MAX_SUBSCRIBERS; i++) {
		struct subscriber *s = &log->subs[i];
		if (log->close_pending)
			break;
		if (s->id == 0 || s->id > last_id)
			continue;
		s->fn(s->ud, rec);
	}
}

int decision_log_append(struct decision_log *log, const struct decision_record *rec)
{
	if (!log || !rec || log->close_pending)
		return 0;
	struct decision_record r = *rec;
	if (!r.platform)
		r.platform = "";
	if (!r.conversation)
		r.conversation = "";
	if (!r.message_id)
		r.message_id = "";
	if (!r.decision.rule)
		r.decision.rule = "";

	char *line = decision_record_to_line(&r);
	struct ga_err e = {{0}};
	int rc = write_line(log, line, strlen(line), &e);
	free(line);
	if (rc < 0)
		report_failure(log, &e);

	log_kv(LOG_LEVEL_DEBUG, "decisions", r.decision.reason, "platform", r.platform,
	       "conversation", r.conversation, "message", r.message_id, "stage",
	       decision_stage_name(r.stage), "verdict", decision_verdict_name(r.decision.verdict),
	       "rule", r.decision.rule);

	ring_push(log, &r);
	log->depth++;
	notify(log, &r);
	log->depth--;
	if (log->depth == 0 && log->close_pending)
		log_destroy(log);
	return rc < 0 ? -1 : 0;
}

int decision_log_add(struct decision_log *log, int64_t time_ms, const char *platform,
                     const char *conversation, const char *message_id, enum decision_stage stage,
                     const struct decision *d)
{
	if (!d)
		return 0;
	struct decision_record r = {
	        .time_ms = time_ms,
	        .platform = platform,
	        .conversation = conversation,
	        .message_id = message_id,
	        .stage = stage,
	        .decision = *d,
	};
	return decision_log_append(log, &r);
}

/* ---- subscribers and the ring ------------------------------------------ */

int decision_log_subscribe(struct decision_log *log, decision_log_fn fn, void *ud)
{
	if (!log || !fn || log->close_pending)
		return -1;
	for (size_t i = 0; i < DECISION_LOG_MAX_SUBSCRIBERS; i++) {
		if (log->subs[i].id == 0) {
			log->subs[i] =
			        (struct subscriber){.id = log->next_id++, .fn = fn, .ud = ud};
			return log->subs[i].id;
		}
	}
	return -1;
}

void decision_log_unsubscribe(struct decision_log *log, int id)
{
	if (!log || id <= 0)
		return;
	for (size_t i = 0; i < DECISION_LOG_MAX_SUBSCRIBERS; i++)
		if (log->subs[i].id == id)
			log->subs[i] = (struct subscriber){0};
}

size_t decision_log_recent(const struct decision_log *log, size_t max, decision_log_fn fn, void *ud)
{
	if (!log || !fn)
		return 0;
	size_t n = log->ring_len;
	if (max && max < n)
		n = max;
	size_t first = log->ring_len - n;
	for (size_t k = 0; k < n; k++) {
		size_t slot = (log->ring_start + first + k) % DECISION_LOG_RECENT;
		fn(ud, &log->ring[slot].r);
	}
	return n;
}

/* ---- reading -------------------------------------------------------------- */

struct read_ctx {
	const char *message_id;
	decision_read_fn fn;
	void *ud;
	bool stopped;
};

static int read_line_cb(void *ud, const cJSON *v, size_t lineno)
{
	struct read_ctx *c = ud;
	struct decision_record r;
	if (decision_record_from_json(v, &r) < 0)
		return 0; /* valid JSON but not a record: skipped like a torn line */
	if (c->message_id && strcmp(c->message_id, r.message_id) != 0)
		return 0;
	if (c->fn(c->ud, &r) != 0) {
		c->stopped = true;
		return 1;
	}
	return 0;
}

int decision_log_read(const char *memory_dir, const char *message_id, decision_read_fn fn, void *ud,
                      struct ga_err *err)
{
	if (!memory_dir || !fn)
		return err_set(err, "decision_log_read needs a memory directory and a callback");
	struct read_ctx c = {.message_id = message_id, .fn = fn, .ud = ud};
	for (int n = DECISION_LOG_KEEP; n >= 0 && !c.stopped; n--) {
		char *p =
		        n ? decision_log_backup_path(memory_dir, n) : decision_log_path(memory_dir);
		int rc =
		        fsx_jsonl_read(p, DECISION_LOG_LINE_MAX_BYTES, read_line_cb, &c, NULL, err);
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}
