/* What every file of the Bluesky engine uses: the clock, decisions on a
 * message's story, the state file, local time, SELF.md, reading JSON, the
 * note in flight for a post, whether a post is an agent's. See bsky_int.h. */
#include "modules/bluesky/bsky_int.h"

int64_t bk_now_ms(void)
{
	return time_now_ms();
}

void bk_note_decision(struct bsky *b, const char *conversation, const char *id,
                      enum decision_stage stage, enum decision_verdict v, const char *rule,
                      const char *fmt, ...)
{
	struct decision d;
	char buf[DECISION_REASON_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	decision_set(&d, v, rule, "%s", buf);
	pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, conversation ? conversation : "",
	              id ? id : "", stage, &d);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, rule, "id", id ? id : "", "reason", buf);
}

void bk_save_state(struct bsky *b)
{
	struct ga_err err = {{0}};
	/* no reflection hook on this side: idle relationships go here */
	bsky_state_prune_rels(b->st, bk_now_ms());
	if (bsky_state_save(b->st, b->c.st, bk_now_ms(), &err) < 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "could not save the Bluesky state", "error",
		       err.msg);
}

void bk_local_now(int64_t ms, int *wday, int *hour, char date[11])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	localtime_r(&t, &tm);
	if (wday)
		*wday = tm.tm_wday;
	if (hour)
		*hour = tm.tm_hour;
	if (date) {
		char buf[32];
		snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		         tm.tm_mday);
		memcpy(date, buf, 10);
		date[10] = 0;
	}
}

const struct self_mechanics *bk_mechanics(const struct bsky *b)
{
	static const struct self_mechanics def = {SELF_DEFAULT_MAX_REPLIES, SELF_DEFAULT_MAX_DEPTH,
	                                          SELF_DEFAULT_SILENCE_MS,
	                                          SELF_DEFAULT_NO_RESPONSE_MS, true};
	return b->c.self ? &b->c.self->mechanics : &def;
}

struct bnote *bk_note_by_uri(struct bsky *b, const char *uri)
{
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++)
		if (b->notes[i].used && strcmp(b->notes[i].uri, uri) == 0)
			return &b->notes[i];
	return NULL;
}

bool bk_is_agent_record(const struct bsky *b, const char *did, const cJSON *record)
{
	return strcmp(did, b->did) == 0 || atp_record_chain(record) >= 0 ||
	       bsky_state_is_peer(b->st, did);
}

char *bk_read_self(const struct bsky *b)
{
	if (!b->self_path)
		return NULL;
	struct ga_err err = {{0}};
	return fsx_read_file(b->self_path, SELF_MAX_BYTES, NULL, &err);
}

const char *bk_str_at(const cJSON *o, const char *a, const char *b_)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
	return b_                        ? json_string_or(x, b_, "")
	       : cJSON_GetStringValue(x) ? cJSON_GetStringValue(x)
	                                 : "";
}
