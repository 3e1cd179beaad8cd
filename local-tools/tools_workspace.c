/*
 * tools_workspace — the workspaces (github-commitments.md §3.1, §5.1):
 * find an organisation's workspace, create it, (the owner's) work on a
 * repository's plans or stop, and merge one of the agent's own pull
 * requests there (github_merge_pr: the work loop's merge path, so the task
 * is completed in its plan too). They read GitHub, so they are answered later, by the
 * sink's call hook (the workspace engine, modules/workspace); here only
 * the arguments are checked.
 */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "local-tools/tools_internal.h"

#define ORG_PROP                                                                                   \
	"\"org\":{\"type\":\"string\",\"description\":\"The GitHub organisation (default: the "    \
	"agent's).\"}"

const char tools_workspace_find_schema[] = "{\"type\":\"object\",\"properties\":{" ORG_PROP "}}";

const char tools_workspace_create_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"name\":{\"type\":\"string\",\"maxLength\":80,\"description\":\"The workspace's name; "
        "the prefix is added.\"},"
        "\"description\":{\"type\":\"string\",\"maxLength\":300}," ORG_PROP "},"
        "\"required\":[\"name\"]}";

const char tools_workspace_watch_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"owner\":{\"type\":\"string\",\"description\":\"Repository owner (user or "
        "organisation).\"},"
        "\"repo\":{\"type\":\"string\",\"description\":\"Repository name, without the owner.\"}},"
        "\"required\":[\"owner\",\"repo\"]}";

/* Letters, digits, '-', '_', '.'; the engine checks GitHub's exact rules. */
static bool plain_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

void tools_workspace_find(void *ud, struct compose_call *call, const cJSON *args)
{
	const char *org = json_string_or(args, "org", NULL);
	if (org && *org && !plain_name(org)) {
		tools_refuse(call, "'org' is not an organisation name");
		return;
	}
	tools_hand_off_later(call, ud, "workspace_find", args);
}

void tools_workspace_create(void *ud, struct compose_call *call, const cJSON *args)
{
	const char *name = json_string_or(args, "name", "");
	const char *org = json_string_or(args, "org", NULL);
	if (!plain_name(name)) {
		tools_refuse(call,
		             "'name' must be a repository name: letters, digits, '-', '_', '.'");
		return;
	}
	if (org && *org && !plain_name(org)) {
		tools_refuse(call, "'org' is not an organisation name");
		return;
	}
	tools_hand_off_later(call, ud, "workspace_create", args);
}

/* owner and repo of a repository: 0, or -1 after refusing the call. */
static int repo_args(struct compose_call *call, const cJSON *args)
{
	const char *owner = json_string_or(args, "owner", "");
	const char *repo = json_string_or(args, "repo", "");
	if (strchr(repo, '/')) {
		tools_refuse(call, "give the owner in 'owner' and only the name in 'repo'");
		return -1;
	}
	if (!plain_name(owner) || !plain_name(repo)) {
		tools_refuse(call, "'owner' and 'repo' must name a GitHub repository");
		return -1;
	}
	return 0;
}

void tools_workspace_watch(void *ud, struct compose_call *call, const cJSON *args)
{
	if (repo_args(call, args) == 0)
		tools_hand_off_later(call, ud, "workspace_watch", args);
}

void tools_workspace_unwatch(void *ud, struct compose_call *call, const cJSON *args)
{
	if (repo_args(call, args) == 0)
		tools_hand_off_later(call, ud, "workspace_unwatch", args);
}

const char tools_github_merge_pr_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"owner\":{\"type\":\"string\",\"description\":\"Repository owner.\"},"
        "\"repo\":{\"type\":\"string\",\"description\":\"Repository name, without the owner.\"},"
        "\"pull_number\":{\"type\":\"integer\",\"minimum\":1}},"
        "\"required\":[\"owner\",\"repo\",\"pull_number\"]}";

void tools_github_merge_pr(void *ud, struct compose_call *call, const cJSON *args)
{
	if (repo_args(call, args) != 0)
		return;
	if (json_int_or(args, "pull_number", 0) < 1) {
		tools_refuse(call, "'pull_number' must be the pull request's number (1 or more)");
		return;
	}
	tools_hand_off_later(call, ud, "github_merge_pr", args);
}
