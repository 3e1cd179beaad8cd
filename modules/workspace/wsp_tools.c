/* The model's workspace tools, answered by the engine (workspace.h
 * wsp_tool_call). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "modules/compose/compose.h"
#include "modules/workspace/wsp_int.h"

static void answered(void *ud, bool ok, const char *text)
{
	struct compose_call *call = ud;
	if (ok) {
		compose_call_done(call, text, false, false);
		return;
	}
	char buf[1200];
	snprintf(buf, sizeof buf, "Error: %s", text ? text : "failed");
	compose_call_done(call, buf, true, false);
}

/* The answer to an unwatch: what stops, and what goes on (our task of
 * that repository, if one runs). */
static void unwatched_text(struct wsp *w, const char *owner, const char *repo, char *out,
                           size_t cap)
{
	char full[WSP_REPO_FULL_MAX];
	snprintf(full, sizeof full, "%s/%s", owner, repo);
	cJSON *run = wsp_run_status(w);
	const char *running = json_string_or(run, "repo", "");
	bool ours = strcasecmp(running, full) == 0;
	snprintf(out, cap,
	         "No longer watching %s: its plans are not read and I claim no new task of it; a "
	         "link to it in the room or on Bluesky does not bring it back (only you can)%s.",
	         full, ours ? ". The task of it I am on goes on to its pull request" : "");
	cJSON_Delete(run);
}

int wsp_tool_call(struct wsp *w, const char *action, const cJSON *params, enum wsp_source source,
                  const char *thread, struct compose_call *call)
{
	struct ga_err err = {{0}};
	int rc;
	if (strcmp(action, "workspace_find") == 0) {
		rc = wsp_find(w, json_string_or(params, "org", NULL), answered, call, &err);
	} else if (strcmp(action, "workspace_create") == 0) {
		rc = wsp_create(w, json_string_or(params, "org", NULL),
		                json_string_or(params, "name", NULL),
		                json_string_or(params, "description", NULL), source, thread,
		                answered, call, &err);
	} else if (strcmp(action, "workspace_watch") == 0) {
		const char *owner = json_string_or(params, "owner", NULL);
		const char *repo = json_string_or(params, "repo", NULL);
		rc = wsp_watch(w, owner, repo, source, thread, &err);
		if (rc >= 0) {
			char text[WSP_REPO_FULL_MAX + 200];
			snprintf(text, sizeof text,
			         "%s %s/%s: its plans are read now, and I claim and work on their "
			         "open "
			         "tasks one at a time (a pull request each). Progress shows in "
			         "status "
			         "and on the dashboard.",
			         rc == 1 ? "Now watching" : "Already watching", owner, repo);
			compose_call_done(call, text, false, false);
			return 1;
		}
	} else if (strcmp(action, "github_merge_pr") == 0) {
		rc = wsp_merge_pr(
		        w, json_string_or(params, "owner", ""), json_string_or(params, "repo", ""),
		        (int64_t)json_int_or(params, "pull_number", 0), answered, call, &err);
	} else if (strcmp(action, "workspace_unwatch") == 0) {
		const char *owner = json_string_or(params, "owner", "");
		const char *repo = json_string_or(params, "repo", "");
		char text[2 * WSP_REPO_FULL_MAX + 200];
		if (wsp_unwatch(w, owner, repo) == 1)
			unwatched_text(w, owner, repo, text, sizeof text);
		else
			snprintf(text, sizeof text,
			         "%.100s/%.100s was not watched: nothing changed.", owner, repo);
		compose_call_done(call, text, false, false);
		return 1;
	} else {
		return 0;
	}
	if (rc != 0)
		answered(call, false, err.msg);
	return 1;
}
