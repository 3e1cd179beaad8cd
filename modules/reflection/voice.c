/* voice — voice-phrases.json: schema, defaults, load, generation (voice.h). */
#include "modules/reflection/voice.h"

#include <errno.h>
#include <stdio.h>
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

#define LOG_COMP "voice"

struct key_def {
	const char *group; /* NULL: top level */
	const char *field;
	const char *name;
	const char *placeholders[3];
	const char *def;
	bool optional; /* missing → its default, the rest of the file still used */
};

/* The schema and the defaults (the texts of runtime-bluesky.md §2.4): the
 * one table of operational text in the agent. */
static const struct key_def keys[VOICE_KEY_COUNT] = {
        [VOICE_FULFILLMENT_CREATE_ISSUE] = {.group = "fulfillment",
                                            .field = "create_issue",
                                            .name = "fulfillment.create_issue",
                                            .placeholders = {"url"},
                                            .def = "Done — here it is: {{url}}"},
        [VOICE_FULFILLMENT_CREATE_PLAN] = {.group = "fulfillment",
                                           .field = "create_plan",
                                           .name = "fulfillment.create_plan",
                                           .placeholders = {"url"},
                                           .def = "Plan is ready: {{url}}"},
        [VOICE_FULFILLMENT_DEFAULT] = {.group = "fulfillment",
                                       .field = "default",
                                       .name = "fulfillment.default",
                                       .placeholders = {"url"},
                                       .def = "Done: {{url}}"},
        [VOICE_TASK_CLAIM] = {.field = "task_claim",
                              .name = "task_claim",
                              .placeholders = {"number", "title"},
                              .def = "Claiming Task {{number}}: {{title}} from the plan. I'll "
                                     "start working on this now."},
        [VOICE_GH_TASK_CLAIM] = {.group = "github",
                                 .field = "task_claim",
                                 .name = "github.task_claim",
                                 .placeholders = {"number", "title"},
                                 .def = "🙋 **Claiming Task {{number}}: {{title}}**\n\nI'm "
                                        "picking this one up and will start working on it "
                                        "now."},
        [VOICE_GH_TASK_COMPLETE] = {.group = "github",
                                    .field = "task_complete",
                                    .name = "github.task_complete",
                                    .placeholders = {"number", "title", "details"},
                                    .def = "✅ **Task {{number}} Complete: {{title}}**\n\n"
                                           "{{details}}"},
        [VOICE_GH_TASK_BLOCKED] = {.group = "github",
                                   .field = "task_blocked",
                                   .name = "github.task_blocked",
                                   .placeholders = {"number", "title", "details"},
                                   .def = "🚧 **Task {{number}} Blocked: {{title}}**\n\n"
                                          "**Reason:**\n{{details}}"},
        [VOICE_GH_TASK_FAILED] = {.group = "github",
                                  .field = "task_failed",
                                  .name = "github.task_failed",
                                  .placeholders = {"number", "title", "details"},
                                  .def = "❌ **Task {{number}} Failed: {{title}}**\n\n```\n"
                                         "{{details}}\n```"},
        [VOICE_GH_PLAN_COMPLETE] = {.group = "github",
                                    .field = "plan_complete",
                                    .name = "github.plan_complete",
                                    .def = "🎉 **Plan Complete!**\n\nEvery task in this plan is "
                                           "done. Before closing, please verify:\n\n- [ ] The "
                                           "changes work together end to end\n- [ ] Tests "
                                           "pass\n- [ ] Nothing in the plan was missed"},
        [VOICE_GH_WORKSPACE_FINISHED] = {.group = "github",
                                         .field = "workspace_finished",
                                         .name = "github.workspace_finished",
                                         .placeholders = {"summary"},
                                         .def = "🏁 **This workspace has been assessed as "
                                                "complete.**\n\n{{summary}}\n\nClosing or "
                                                "commenting on this issue restarts work."},
        [VOICE_PEER_ANNOUNCEMENT] = {.group = "bluesky",
                                     .field = "peer_announcement",
                                     .name = "bluesky.peer_announcement",
                                     .placeholders = {"handle", "url"},
                                     .def = "Working with @{{handle}} ({{url}}) — looking forward "
                                            "to building together.",
                                     .optional = true},
        [VOICE_SPACE_ON_IT] = {.group = "space",
                               .field = "on_it",
                               .name = "space.on_it",
                               .placeholders = {"type"},
                               .def = "On it — {{type}} incoming.",
                               .optional = true},
        [VOICE_SPACE_CREATING] = {.group = "space",
                                  .field = "creating",
                                  .name = "space.creating",
                                  .def = "Creating that now.",
                                  .optional = true},
};

char *voice_text_with(enum voice_key k, const char *text, int64_t now_ms)
{
	struct voice_phrases vp;
	voice_phrases_defaults(&vp);
	if ((unsigned)k < VOICE_KEY_COUNT) {
		free(vp.text[k]);
		vp.text[k] = xstrdup(text ? text : "");
	}
	char *out = voice_to_text(&vp, now_ms);
	voice_phrases_free(&vp);
	return out;
}

char *voice_path_beside(const char *self_path)
{
	const char *slash = self_path ? strrchr(self_path, '/') : NULL;
	return slash ? xasprintf("%.*s/%s", (int)(slash - self_path), self_path, VOICE_FILE)
	             : xstrdup(VOICE_FILE);
}

const char *voice_key_name(enum voice_key k)
{
	return (unsigned)k < VOICE_KEY_COUNT ? keys[k].name : "unknown";
}

const char *voice_default(enum voice_key k)
{
	return (unsigned)k < VOICE_KEY_COUNT ? keys[k].def : "";
}

void voice_phrases_defaults(struct voice_phrases *p)
{
	for (int k = 0; k < VOICE_KEY_COUNT; k++)
		p->text[k] = xstrdup(keys[k].def);
}

void voice_phrases_free(struct voice_phrases *p)
{
	for (int k = 0; k < VOICE_KEY_COUNT; k++) {
		free(p->text[k]);
		p->text[k] = NULL;
	}
}

/* Skips a leading ```json / ``` fence and a trailing one. */
static void strip_fence(const char **s, size_t *len)
{
	const char *p = *s, *end = *s + *len;
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	if (end - p >= 3 && strncmp(p, "```", 3) == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
		while (end > p && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\r'))
			end--;
		if (end - p >= 3 && strncmp(end - 3, "```", 3) == 0)
			end -= 3;
	}
	*s = p;
	*len = (size_t)(end - p);
}

int voice_parse(const char *text, size_t len, bool generated, struct voice_phrases *out,
                struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (generated)
		strip_fence(&text, &len);
	cJSON *root = json_parse(text, len, err);
	if (!root)
		return -1;
	int rc = -1;
	if (!cJSON_IsObject(root)) {
		err_set(err, "voice phrases: not a JSON object");
		goto out;
	}
	if (!generated && json_int_or(root, "version", -1) != VOICE_VERSION) {
		err_set(err, "voice phrases: version is not %d", VOICE_VERSION);
		goto out;
	}
	for (int k = 0; k < VOICE_KEY_COUNT; k++) {
		const cJSON *obj = root;
		if (keys[k].group)
			obj = cJSON_GetObjectItemCaseSensitive(root, keys[k].group);
		const cJSON *v = cJSON_IsObject(obj)
		                         ? cJSON_GetObjectItemCaseSensitive(obj, keys[k].field)
		                         : NULL;
		if (!v && keys[k].optional) {
			out->text[k] = xstrdup(keys[k].def);
			continue;
		}
		if (!cJSON_IsString(v) || !v->valuestring[0]) {
			err_set(err, "voice phrases: %s is missing or not a non-empty string",
			        keys[k].name);
			goto out;
		}
		size_t n = strlen(v->valuestring);
		if (n > VOICE_PHRASE_MAX_BYTES || !utf8_valid(v->valuestring, n)) {
			err_set(err, "voice phrases: %s is longer than %d bytes or not UTF-8",
			        keys[k].name, VOICE_PHRASE_MAX_BYTES);
			goto out;
		}
		for (int i = 0; generated && i < 3 && keys[k].placeholders[i]; i++) {
			char ph[64];
			snprintf(ph, sizeof ph, "{{%s}}", keys[k].placeholders[i]);
			if (!strstr(v->valuestring, ph)) {
				err_set(err, "voice phrases: %s lost its placeholder %s",
				        keys[k].name, ph);
				goto out;
			}
		}
		out->text[k] = xstrdup(v->valuestring);
	}
	rc = 0;
out:
	if (rc != 0)
		voice_phrases_free(out);
	cJSON_Delete(root);
	return rc;
}

char *voice_to_text(const struct voice_phrases *p, int64_t now_ms)
{
	cJSON *root = cJSON_CreateObject();
	char ts[TIME_ISO_LEN + 1];
	cJSON_AddNumberToObject(root, "version", VOICE_VERSION);
	cJSON_AddStringToObject(root, "generatedAt", time_format_iso(now_ms, ts));
	for (int k = 0; k < VOICE_KEY_COUNT; k++) {
		cJSON *obj = root;
		if (keys[k].group) {
			obj = cJSON_GetObjectItemCaseSensitive(root, keys[k].group);
			if (!obj)
				obj = cJSON_AddObjectToObject(root, keys[k].group);
		}
		cJSON_AddStringToObject(obj, keys[k].field, p->text[k] ? p->text[k] : keys[k].def);
	}
	char *s = cJSON_Print(root);
	cJSON_Delete(root);
	char *out = xasprintf("%s\n", s);
	cJSON_free(s);
	return out;
}

char *voice_interpolate(const char *tmpl, const char *const *names, const char *const *values,
                        size_t n)
{
	struct strbuf sb;
	sb_init(&sb, 4 * VOICE_PHRASE_MAX_BYTES + 64 * 1024);
	sb_fill(&sb, tmpl, names, values, n);
	return sb_detach(&sb);
}

/* ---- the running agent's file ------------------------------------------------ */

struct voice {
	char *path;
	struct voice_phrases p;
	bool loaded, from_file;
	struct timespec mtime;
	off_t size;
	bool had_stat;
};

struct voice *voice_open(const char *path)
{
	struct voice *v = xcalloc(1, sizeof *v);
	v->path = xstrdup(path);
	return v;
}

void voice_free(struct voice *v)
{
	if (!v)
		return;
	voice_phrases_free(&v->p);
	free(v->path);
	free(v);
}

static void reload_if_changed(struct voice *v)
{
	struct stat st;
	bool has = stat(v->path, &st) == 0;
	if (v->loaded && has == v->had_stat &&
	    (!has || (st.st_mtim.tv_sec == v->mtime.tv_sec &&
	              st.st_mtim.tv_nsec == v->mtime.tv_nsec && st.st_size == v->size)))
		return;
	v->loaded = true;
	v->had_stat = has;
	if (has) {
		v->mtime = st.st_mtim;
		v->size = st.st_size;
	}
	voice_phrases_free(&v->p);
	v->from_file = false;
	struct ga_err err = {{0}};
	size_t len = 0;
	char *text = has ? fsx_read_file(v->path, VOICE_FILE_MAX_BYTES, &len, &err) : NULL;
	if (text && voice_parse(text, len, false, &v->p, &err) == 0) {
		v->from_file = true;
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "voice phrases loaded", "path", v->path);
	} else {
		if (has)
			log_kv(LOG_LEVEL_WARN, LOG_COMP,
			       "voice phrases unusable: the defaults are used", "path", v->path,
			       "error", err.msg);
		voice_phrases_defaults(&v->p);
	}
	free(text);
}

const char *voice_get(struct voice *v, enum voice_key k)
{
	if ((unsigned)k >= VOICE_KEY_COUNT)
		return "";
	reload_if_changed(v);
	return v->p.text[k] ? v->p.text[k] : keys[k].def;
}

char *voice_render(struct voice *v, enum voice_key k, const char *const *names,
                   const char *const *values, size_t n)
{
	return voice_interpolate(voice_get(v, k), names, values, n);
}

bool voice_from_file(struct voice *v)
{
	reload_if_changed(v);
	return v->from_file;
}

const char *voice_path(const struct voice *v)
{
	return v->path;
}
