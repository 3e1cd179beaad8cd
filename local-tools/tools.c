/*
 * tools — the catalogue and its filter (see tools.h). The tools
 * themselves live one family per file: tools_space.c, tools_social.c,
 * tools_github.c, tools_workspace.c.
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "local-tools/tools_internal.h"

#define ALL_SOCIAL_MODES (TOOLS_MODE_OWNER | TOOLS_MODE_BLUESKY)
#define GITHUB_MODES     (TOOLS_MODE_OWNER | TOOLS_MODE_BLUESKY | TOOLS_MODE_GITHUB)
#define WORKSPACE_MODES  TOOLS_MODE_OWNER

static const struct tools_def catalogue[] = {
        {"space_decision",
         "Decide whether to speak in the agent-space and what to say. Always answer through this "
         "tool. Commitments listed here are carried out by the agent afterwards.",
         tools_space_decision_schema, TOOLS_CAP_SOCIAL, TOOLS_MODE_SPACE, tools_space_decision},
        {"space_say",
         "Say something in the agent-space room now, in your own words, because your owner asked "
         "you to. The message is checked like every other (echoes, send permissions) and may be "
         "refused; you are told either way.",
         tools_space_say_schema, TOOLS_CAP_SOCIAL, TOOLS_MODE_OWNER, tools_space_say},
        {"bluesky_post", "Publish a new top-level Bluesky post (at most 300 characters).",
         tools_bluesky_post_schema, TOOLS_CAP_SOCIAL, ALL_SOCIAL_MODES, tools_bluesky_post},
        {"bluesky_reply", "Reply to one Bluesky post (at most 300 characters). One reply per post.",
         tools_bluesky_reply_schema, TOOLS_CAP_SOCIAL, ALL_SOCIAL_MODES, tools_bluesky_reply},
        {"graceful_exit",
         "End a conversation on Bluesky or GitHub, preferably with a like; a closing message "
         "pulls everyone back into the thread.",
         tools_graceful_exit_schema, TOOLS_CAP_SOCIAL, TOOLS_MODE_BLUESKY | TOOLS_MODE_GITHUB,
         tools_graceful_exit},
        {"github_create_issue",
         "Open a GitHub issue in owner/repo with a title and a body someone else could act on.",
         tools_github_create_issue_schema, TOOLS_CAP_GITHUB, GITHUB_MODES,
         tools_github_create_issue},
        {"github_create_issue_comment", "Comment on an existing GitHub issue or pull request.",
         tools_github_comment_schema, TOOLS_CAP_GITHUB, GITHUB_MODES, tools_github_comment},
        {"github_review_pr",
         "Review the pull request under review: APPROVE, REQUEST_CHANGES (each problem and why) "
         "or COMMENT, with a body and inline comments on lines of the diff. Once per review.",
         tools_github_review_schema, TOOLS_CAP_GITHUB, TOOLS_MODE_REVIEW, tools_github_review},
        {"plan_create",
         "Create a plan issue: a goal, its context and numbered tasks that others can claim.",
         tools_plan_create_schema, TOOLS_CAP_GITHUB, GITHUB_MODES, tools_plan_create},
        {"workspace_find",
         "Find the workspace repository of a GitHub organisation (one per organisation): "
         "{found, name, url}.",
         tools_workspace_find_schema, TOOLS_CAP_GITHUB, WORKSPACE_MODES, tools_workspace_find},
        {"workspace_create",
         "Create the organisation's workspace repository from the template (the name prefix "
         "is added), unless it has one: then that one is the answer. The agents then watch "
         "it and work on its plans.",
         tools_workspace_create_schema, TOOLS_CAP_GITHUB | TOOLS_CAP_CODE, WORKSPACE_MODES,
         tools_workspace_create},
        {"workspace_watch",
         "Work on the plans of a repository: watch it, claim its open tasks one at a time and "
         "open a pull request for each. Use it when your owner asks you to work on a plan.",
         tools_workspace_watch_schema, TOOLS_CAP_GITHUB | TOOLS_CAP_CODE | TOOLS_CAP_OWNER,
         TOOLS_MODE_OWNER, tools_workspace_watch},
        {"workspace_unwatch",
         "Stop working on a repository's plans: no new task of it is claimed (one that runs "
         "goes on to its pull request).",
         tools_workspace_watch_schema, TOOLS_CAP_GITHUB | TOOLS_CAP_OWNER, TOOLS_MODE_OWNER,
         tools_workspace_unwatch},
        {"github_merge_pr",
         "Merge one of your own pull requests in a watched workspace (squash): its task is "
         "then marked done in the plan it belongs to. Only the PR's creator merges.",
         tools_github_merge_pr_schema, TOOLS_CAP_GITHUB | TOOLS_CAP_CODE | TOOLS_CAP_OWNER,
         TOOLS_MODE_OWNER, tools_github_merge_pr},
};

const struct tools_def *tools_catalogue(size_t *n)
{
	*n = sizeof catalogue / sizeof catalogue[0];
	return catalogue;
}

unsigned tools_agent_caps(bool social_only)
{
	return social_only ? TOOLS_CAP_SOCIAL
	                   : TOOLS_CAP_SOCIAL | TOOLS_CAP_GITHUB | TOOLS_CAP_CODE;
}

const char *tools_mode_name(enum tools_mode mode)
{
	switch (mode) {
	case TOOLS_MODE_OWNER:
		return "owner";
	case TOOLS_MODE_SPACE:
		return "space";
	case TOOLS_MODE_BLUESKY:
		return "bluesky";
	case TOOLS_MODE_GITHUB:
		return "github";
	case TOOLS_MODE_REVIEW:
		return "review";
	}
	return "unknown";
}

size_t tools_select(enum tools_mode mode, unsigned caps, struct tools_sink *sink,
                    struct compose_tool *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof catalogue / sizeof catalogue[0] && n < cap; i++) {
		const struct tools_def *d = &catalogue[i];
		if (!(d->modes & mode) || (d->caps & caps) != d->caps)
			continue;
		out[n++] = (struct compose_tool){.name = d->name,
		                                 .description = d->description,
		                                 .schema_json = d->schema,
		                                 .run = d->run,
		                                 .ud = sink};
	}
	return n;
}

void tools_hand_off_later(struct compose_call *call, struct tools_sink *sink, const char *action,
                          const cJSON *args)
{
	if (sink && sink->call && sink->call(sink->ud, action, args, call) == 1)
		return;
	tools_refuse(call, "workspaces are not available in this agent (GitHub is not configured, "
	                   "or it runs --social-only); do not retry it");
}

void tools_refuse(struct compose_call *call, const char *msg)
{
	char buf[TOOLS_RESULT_MAX];
	snprintf(buf, sizeof buf, "Error: %s", msg);
	compose_call_done(call, buf, true, false);
}

void tools_hand_off(struct compose_call *call, struct tools_sink *sink, const char *action,
                    const cJSON *args, bool stop)
{
	if (!sink || !sink->enqueue) {
		tools_refuse(call, "this tool is not available in this process; do not retry it");
		return;
	}
	char result[TOOLS_RESULT_MAX] = "";
	struct ga_err err = {{0}};
	if (sink->enqueue(sink->ud, action, args, result, sizeof result, &err) != 0) {
		log_kv(LOG_LEVEL_INFO, "tools", "action refused", "action", action, "error",
		       err.msg);
		tools_refuse(call, err.msg[0] ? err.msg : "the action was refused");
		return;
	}
	compose_call_done(call, result[0] ? result : "Done.", false, stop);
}
