/* The claim keys of one piece of work. See workkey.h. */
#include "modules/commitments/workkey.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/utf8.h"

static bool filled(const char *s)
{
	return s && s[0];
}

void commit_work_of(const char *action, const char *repo, const char *title,
                    const char *description, const char *content, struct commit_work *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->action, sizeof out->action, "%s", action ? action : "");
	const char *what = filled(title) ? title : filled(description) ? description : content;
	if (!what)
		what = "";
	size_t wl = strlen(what);
	const char *r = filled(repo) ? repo : "unknown";
	size_t rl = utf8_cut(r, strlen(r), sizeof out->promise_target / 2);
	size_t cut = utf8_utf16_prefix(what, wl, COMMIT_WORK_TARGET_UNITS);
	cut = utf8_cut(what, cut, sizeof out->promise_target - rl - 2);
	snprintf(out->promise_target, sizeof out->promise_target, "%.*s#%.*s", (int)rl, r, (int)cut,
	         what);
	size_t full = utf8_cut(what, wl, sizeof out->work_target - 1);
	snprintf(out->work_target, sizeof out->work_target, "%.*s", (int)full, what);
	out->has_work = wl > 0;
}

void commit_work_of_workspace(const char *org, struct commit_work *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->action, sizeof out->action, "%s", COMMIT_WORKSPACE_ACTION);
	const char *o = filled(org) ? org : COMMIT_WORKSPACE_DEFAULT;
	size_t n = utf8_cut(o, strlen(o), sizeof out->promise_target - 1);
	for (size_t i = 0; i < n; i++)
		out->promise_target[i] = (char)tolower((unsigned char)o[i]);
	out->promise_target[n] = '\0';
	memcpy(out->work_target, out->promise_target, n + 1);
}

void commit_work_of_params(const char *action, const cJSON *params, struct commit_work *out)
{
	if (action && strcmp(action, COMMIT_WORKSPACE_ACTION) == 0) {
		commit_work_of_workspace(json_string_or(params, "owner", NULL), out);
		return;
	}
	const char *owner = json_string_or(params, "owner", NULL);
	const char *name = json_string_or(params, "repo", NULL);
	char repo[256] = "";
	if (filled(owner) && filled(name))
		snprintf(repo, sizeof repo, "%s/%s", owner, name);
	else if (filled(name) && strchr(name, '/'))
		snprintf(repo, sizeof repo, "%s", name);
	const char *body = json_string_or(params, "body", NULL);
	if (!filled(body))
		body = json_string_or(params, "goal", NULL);
	commit_work_of(action, repo[0] ? repo : NULL, json_string_or(params, "title", NULL), body,
	               json_string_or(params, "text", NULL), out);
}

void commit_work_key(const struct commit_work *w, bool promise, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s:%s", w->action, promise ? w->promise_target : w->work_target);
}

bool commit_work_is(const struct commit_work *w, const char *action, const char *target)
{
	if (!action || !target || strcmp(action, w->action) != 0)
		return false;
	return strcmp(target, w->promise_target) == 0 ||
	       (w->has_work && strcmp(target, w->work_target) == 0);
}
