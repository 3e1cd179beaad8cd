/* The room's runtime configuration. See spacecfg.h. */
#include "modules/participation/spacecfg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "common/timeutil.h"
#include "common/utf8.h"

struct num_field {
	const char *name;
	size_t off;
	int64_t def, min, max;
};

#define F(m) offsetof(struct space_cfg, m)
static const struct num_field NUMS[] = {
        {"checkIntervalMs", F(check_interval_ms), 5000, 2000, 30000},
        {"reconnectIntervalMs", F(reconnect_interval_ms), 300000, 30000, 1800000},
        {"cooldownMinMs", F(cooldown_min_ms), 10000, 3000, 120000},
        {"cooldownMaxMs", F(cooldown_max_ms), 20000, 3000, 300000},
        {"replyDelayMinMs", F(reply_delay_min_ms), 1000, 500, 10000},
        {"replyDelayMaxMs", F(reply_delay_max_ms), 3000, 500, 30000},
        {"reflectionEveryN", F(reflection_every_n), 5, 1, 50},
};
#undef F
#define NNUMS (sizeof NUMS / sizeof NUMS[0])

static int64_t *num_at(struct space_cfg *c, size_t i)
{
	return (int64_t *)((char *)c + NUMS[i].off);
}

static int64_t num_of(const struct space_cfg *c, size_t i)
{
	return *(const int64_t *)((const char *)c + NUMS[i].off);
}

void space_cfg_defaults(struct space_cfg *c)
{
	memset(c, 0, sizeof *c);
	for (size_t i = 0; i < NNUMS; i++)
		*num_at(c, i) = NUMS[i].def;
}

static void problem(struct strbuf *p, const char *fmt, const char *field, const char *detail)
        __attribute__((format(printf, 2, 0)));

/* fmt has two %s: the field (or file) and a detail. */
static void problem(struct strbuf *p, const char *fmt, const char *field, const char *detail)
{
	if (!p)
		return;
	if (p->len)
		sb_putc(p, ' ');
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	sb_printf(p, fmt, field, detail);
#pragma GCC diagnostic pop
}

int space_cfg_apply(struct space_cfg *c, const cJSON *obj, struct strbuf *problems)
{
	int n = 0;
	if (!cJSON_IsObject(obj))
		return 0;
	for (size_t i = 0; i < NNUMS; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, NUMS[i].name);
		if (!v || cJSON_IsNull(v))
			continue;
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
			problem(problems, "%s must be a number of %s; kept as it was.",
			        NUMS[i].name,
			        strcmp(NUMS[i].name, "reflectionEveryN") == 0 ? "messages"
			                                                      : "milliseconds");
			n++;
			continue;
		}
		double d = round(v->valuedouble);
		if (d < (double)NUMS[i].min)
			d = (double)NUMS[i].min;
		if (d > (double)NUMS[i].max)
			d = (double)NUMS[i].max;
		*num_at(c, i) = (int64_t)d;
	}
	static const struct {
		const char *name;
		size_t off, cap;
	} STRS[] = {
	        {"behaviorNotes", offsetof(struct space_cfg, behavior_notes), SPACECFG_NOTES_MAX},
	        {"lastAdjustedAt", offsetof(struct space_cfg, last_adjusted_at), 32},
	        {"lastAdjustedReason", offsetof(struct space_cfg, last_adjusted_reason),
	         SPACECFG_REASON_MAX},
	};
	for (size_t i = 0; i < sizeof STRS / sizeof STRS[0]; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, STRS[i].name);
		if (!v || cJSON_IsNull(v))
			continue;
		if (!cJSON_IsString(v) || !utf8_valid(v->valuestring, strlen(v->valuestring))) {
			problem(problems, "%s must be text%s; kept as it was.", STRS[i].name, "");
			n++;
			continue;
		}
		utf8_copy((char *)c + STRS[i].off, STRS[i].cap, v->valuestring);
	}
	if (c->cooldown_max_ms < c->cooldown_min_ms)
		c->cooldown_max_ms = c->cooldown_min_ms;
	if (c->reply_delay_max_ms < c->reply_delay_min_ms)
		c->reply_delay_max_ms = c->reply_delay_min_ms;
	return n;
}

static char *path_of(const char *memory_dir)
{
	return fsx_join(memory_dir, SPACECFG_FILE);
}

int space_cfg_load(const char *memory_dir, const char *version, struct space_cfg *c,
                   struct strbuf *problems)
{
	space_cfg_defaults(c);
	char *path = path_of(memory_dir);
	if (!fsx_exists(path)) {
		free(path);
		return 0;
	}
	struct ga_err err;
	err_clear(&err);
	size_t len = 0;
	char *text = fsx_read_file(path, SPACECFG_MAX_BYTES, &len, &err);
	free(path);
	if (!text) {
		problem(problems, "%s unreadable (%s): the defaults apply.", SPACECFG_FILE,
		        err.msg);
		return 1;
	}
	cJSON *obj = cJSON_ParseWithLength(text, len);
	free(text);
	if (!cJSON_IsObject(obj)) {
		cJSON_Delete(obj);
		problem(problems, "%s is not a JSON object%s: the defaults apply.", SPACECFG_FILE,
		        "");
		return 1;
	}
	const char *ver =
	        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "_memoryVersion"));
	if (ver && version && strcmp(ver, version) != 0) {
		/* §13.3: another version's file is read as defaults. */
		problem(problems, "%s was written by version %s: the defaults apply.",
		        SPACECFG_FILE, ver);
		cJSON_Delete(obj);
		return 1;
	}
	int n = space_cfg_apply(c, obj, problems);
	cJSON_Delete(obj);
	return n;
}

cJSON *space_cfg_to_json(const struct space_cfg *c, const char *version)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < NNUMS; i++)
		cJSON_AddNumberToObject(o, NUMS[i].name, (double)num_of(c, i));
	cJSON_AddStringToObject(o, "behaviorNotes", c->behavior_notes);
	if (c->last_adjusted_at[0])
		cJSON_AddStringToObject(o, "lastAdjustedAt", c->last_adjusted_at);
	else
		cJSON_AddNullToObject(o, "lastAdjustedAt");
	cJSON_AddStringToObject(o, "lastAdjustedReason", c->last_adjusted_reason);
	cJSON_AddStringToObject(o, "_memoryVersion", version ? version : "");
	return o;
}

int space_cfg_update(const char *memory_dir, const char *version, const cJSON *adjust,
                     const char *reason, int64_t now_ms, struct strbuf *problems)
{
	struct space_cfg c;
	space_cfg_load(memory_dir, version, &c, NULL);
	int refused = space_cfg_apply(&c, adjust, problems);
	char iso[TIME_ISO_LEN + 1];
	utf8_copy(c.last_adjusted_at, sizeof c.last_adjusted_at, time_format_iso(now_ms, iso));
	utf8_copy(c.last_adjusted_reason, sizeof c.last_adjusted_reason, reason ? reason : "");
	cJSON *o = space_cfg_to_json(&c, version);
	char *text = cJSON_Print(o);
	cJSON_Delete(o);
	char *path = path_of(memory_dir);
	struct ga_err err;
	err_clear(&err);
	int rc = text ? fsx_write_atomic(path, text, strlen(text), &err) : -1;
	free(path);
	free(text);
	if (rc != 0) {
		problem(problems, "%s could not be written: %s.", SPACECFG_FILE, err.msg);
		return -1;
	}
	return refused;
}

static void dur(struct strbuf *out, int64_t ms)
{
	if (ms >= 60000)
		sb_printf(out, "%.1fm", (double)ms / 60000.0);
	else
		sb_printf(out, "%.1fs", (double)ms / 1000.0);
}

void space_cfg_render(const struct space_cfg *c, struct strbuf *out)
{
	sb_puts(out, "Cooldown after speaking: ");
	dur(out, c->cooldown_min_ms);
	sb_puts(out, "–");
	dur(out, c->cooldown_max_ms);
	sb_puts(out, "\nReply delay: ");
	dur(out, c->reply_delay_min_ms);
	sb_puts(out, "–");
	dur(out, c->reply_delay_max_ms);
	sb_printf(out, "\nReflection every %lld messages", (long long)c->reflection_every_n);
	if (c->behavior_notes[0])
		sb_printf(out, "\nBehaviour notes: %s", c->behavior_notes);
	if (c->last_adjusted_at[0])
		sb_printf(out, "\nLast adjusted: %s — %s", c->last_adjusted_at,
		          c->last_adjusted_reason[0] ? c->last_adjusted_reason : "(no reason)");
}
