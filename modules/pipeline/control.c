/* The kill switch, persisted and watched. See control.h. */
#include "modules/pipeline/control.h"

#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

static int accept_any(void *ud, cJSON *data, const char *from_version)
{
	(void)data;
	(void)from_version;
	(void)ud;
	return 0; /* a pause survives an upgrade */
}

void control_load(const struct state_store *st, struct control_state *out)
{
	memset(out, 0, sizeof *out);
	struct state_load_info info;
	cJSON *d = state_load(st, CONTROL_STATE_NAME, accept_any, NULL, &info);
	if (!d) {
		if (info.status == STATE_CORRUPT) {
			out->paused = true;
			snprintf(out->by, sizeof out->by, "corrupt file");
			log_kv(LOG_LEVEL_WARN, "control",
			       "control.json unreadable: staying paused until 'general-agent "
			       "resume'",
			       "detail", info.detail);
		}
		return;
	}
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(d, "paused");
	out->paused = cJSON_IsTrue(p);
	const cJSON *since = cJSON_GetObjectItemCaseSensitive(d, "since");
	if (cJSON_IsString(since))
		time_parse_iso(since->valuestring, &out->since_ms);
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(d, "by");
	if (cJSON_IsString(by))
		snprintf(out->by, sizeof out->by, "%s", by->valuestring);
	cJSON_Delete(d);
}

int control_save(const struct state_store *st, bool paused, const char *by, int64_t now_ms,
                 struct ga_err *err)
{
	cJSON *d = cJSON_CreateObject();
	char iso[TIME_ISO_LEN + 1];
	cJSON_AddBoolToObject(d, "paused", paused);
	cJSON_AddStringToObject(d, "since", time_format_iso(now_ms, iso));
	cJSON_AddStringToObject(d, "by", by ? by : "owner");
	int rc = state_save(st, CONTROL_STATE_NAME, d, now_ms, err);
	cJSON_Delete(d);
	return rc;
}

struct control_watch {
	uv_fs_poll_t poll;
	const struct state_store *st;
	bool paused;
	void (*changed)(void *ud, bool paused);
	void *ud;
};

static void on_poll(uv_fs_poll_t *h, int status, const uv_stat_t *prev, const uv_stat_t *curr)
{
	(void)prev;
	(void)curr;
	struct control_watch *w = h->data;
	struct control_state cs;
	if (status < 0 && status != UV_ENOENT)
		return;
	control_load(w->st, &cs);
	if (cs.paused == w->paused)
		return;
	w->paused = cs.paused;
	log_kv(LOG_LEVEL_INFO, "control",
	       cs.paused ? "paused from outside" : "resumed from outside", "by", cs.by);
	w->changed(w->ud, cs.paused);
}

static void watch_closed(uv_handle_t *h)
{
	free(h->data);
}

struct control_watch *control_watch_start(uv_loop_t *loop, const struct state_store *st,
                                          bool paused_now, void (*changed)(void *ud, bool paused),
                                          void *ud)
{
	struct control_watch *w = xcalloc(1, sizeof *w);
	w->st = st;
	w->paused = paused_now;
	w->changed = changed;
	w->ud = ud;
	char name[STATE_NAME_MAX + 8];
	snprintf(name, sizeof name, "%s.json", CONTROL_STATE_NAME);
	char *path = fsx_join(st->dir, name);
	uv_fs_poll_init(loop, &w->poll);
	w->poll.data = w;
	int rc = uv_fs_poll_start(&w->poll, on_poll, path, CONTROL_POLL_MS);
	free(path);
	if (rc != 0) {
		log_kv(LOG_LEVEL_WARN, "control", "cannot watch control.json", "error",
		       uv_strerror(rc));
		uv_close((uv_handle_t *)&w->poll, watch_closed);
		return NULL;
	}
	return w;
}

void control_watch_seen(struct control_watch *w, bool paused)
{
	if (w)
		w->paused = paused;
}

void control_watch_close(struct control_watch *w)
{
	if (!w)
		return;
	uv_fs_poll_stop(&w->poll);
	uv_close((uv_handle_t *)&w->poll, watch_closed);
}

int control_cli(const char *memory_dir, const char *version, bool pause, FILE *out, FILE *err)
{
	struct state_store st;
	struct ga_err e;
	err_clear(&e);
	if (state_store_init(&st, memory_dir, version, &e) != 0) {
		fprintf(err, "general-agent %s: memory directory unusable: %s\n",
		        pause ? "pause" : "resume", e.msg);
		return 1;
	}
	struct control_state cs;
	control_load(&st, &cs);
	int rc = 0;
	if (control_save(&st, pause, "cli", time_now_ms(), &e) != 0) {
		fprintf(err, "general-agent %s: %s\n", pause ? "pause" : "resume", e.msg);
		rc = 1;
	} else if (cs.paused == pause) {
		fprintf(out, "already %s\n", pause ? "paused" : "running (not paused)");
	} else {
		fprintf(out, "%s: a running agent %s within %d s\n", pause ? "paused" : "resumed",
		        pause ? "stops answering (except /resume and /status from its owner)"
		              : "answers again",
		        CONTROL_POLL_MS / 1000 + 1);
	}
	state_store_free(&st);
	return rc;
}
