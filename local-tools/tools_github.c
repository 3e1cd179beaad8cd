/*
 * tools_github — issues, comments and plans (github-commitments.md §5.1).
 * They become commitments for the fulfilment pipeline, which does the
 * REST calls with idempotency keys; here only the arguments are checked.
 * A review (github_review_pr) goes to the review in progress (ghconv):
 * here its event and body are checked, there the PR and its lines.
 */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "local-tools/tools_internal.h"

#define OWNER_REPO_PROPS                                                                           \
	"\"owner\":{\"type\":\"string\",\"description\":\"Repository owner (user or "              \
	"organisation).\"},"                                                                       \
	"\"repo\":{\"type\":\"string\",\"description\":\"Repository name, without the owner.\"}"

const char tools_github_create_issue_schema[] =
        "{\"type\":\"object\",\"properties\":{" OWNER_REPO_PROPS ","
        "\"title\":{\"type\":\"string\",\"maxLength\":256},"
        "\"body\":{\"type\":\"string\",\"maxLength\":60000},"
        "\"labels\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":10}},"
        "\"required\":[\"owner\",\"repo\",\"title\"]}";

const char tools_github_comment_schema[] =
        "{\"type\":\"object\",\"properties\":{" OWNER_REPO_PROPS ","
        "\"issue_number\":{\"type\":\"integer\",\"minimum\":1},"
        "\"body\":{\"type\":\"string\",\"maxLength\":60000}},"
        "\"required\":[\"owner\",\"repo\",\"issue_number\",\"body\"]}";

const char tools_github_review_schema[] =
        "{\"type\":\"object\",\"properties\":{" OWNER_REPO_PROPS ","
        "\"pull_number\":{\"type\":\"integer\",\"minimum\":1},"
        "\"event\":{\"type\":\"string\",\"enum\":[\"APPROVE\",\"REQUEST_CHANGES\",\"COMMENT\"]},"
        "\"body\":{\"type\":\"string\",\"maxLength\":60000,\"description\":\"The review: why "
        "you approve, or each change needed and why.\"},"
        "\"comments\":{\"type\":\"array\",\"maxItems\":20,\"description\":\"Inline comments "
        "on lines of the new side of the diff.\",\"items\":{\"type\":\"object\",\"properties\":{"
        "\"path\":{\"type\":\"string\"},\"line\":{\"type\":\"integer\",\"minimum\":1,"
        "\"description\":\"The line number shown at the left of the diff.\"},"
        "\"body\":{\"type\":\"string\"}},\"required\":[\"path\",\"line\",\"body\"]}}},"
        "\"required\":[\"owner\",\"repo\",\"pull_number\",\"event\",\"body\"]}";

const char tools_plan_create_schema[] =
        "{\"type\":\"object\",\"properties\":{" OWNER_REPO_PROPS ","
        "\"title\":{\"type\":\"string\",\"maxLength\":256},"
        "\"goal\":{\"type\":\"string\"},"
        "\"context\":{\"type\":\"string\"},"
        "\"tasks\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":20,\"items\":{\"type\":"
        "\"object\",\"properties\":{\"title\":{\"type\":\"string\"},\"description\":{\"type\":"
        "\"string\"},\"estimate\":{\"type\":\"string\"},\"dependencies\":{\"type\":\"array\"},"
        "\"files\":{\"type\":\"array\"}},\"required\":[\"title\",\"description\"]}},"
        "\"verification\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
        "\"required\":[\"owner\",\"repo\",\"title\",\"goal\",\"context\",\"tasks\"]}";

/* GitHub names: letters, digits, '-', '_', '.'; not "." or "..". */
static bool name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

static bool repo_ok(struct compose_call *call, const cJSON *args)
{
	const char *owner = json_string_or(args, "owner", "");
	const char *repo = json_string_or(args, "repo", "");
	char msg[256];
	if (strchr(repo, '/')) {
		snprintf(msg, sizeof msg,
		         "field 'repo' is '%.100s': give the owner in 'owner' and only the name in "
		         "'repo'",
		         repo);
		tools_refuse(call, msg);
		return false;
	}
	if (!name_ok(owner, 39) || !name_ok(repo, 100)) {
		snprintf(msg, sizeof msg, "'%.60s/%.100s' is not a valid GitHub repository name",
		         owner, repo);
		tools_refuse(call, msg);
		return false;
	}
	return true;
}

void tools_github_create_issue(void *ud, struct compose_call *call, const cJSON *args)
{
	if (!repo_ok(call, args))
		return;
	if (!json_string_or(args, "title", "")[0]) {
		tools_refuse(call, "field 'title' is empty");
		return;
	}
	tools_hand_off(call, ud, "create_issue", args, false);
}

void tools_github_comment(void *ud, struct compose_call *call, const cJSON *args)
{
	if (!repo_ok(call, args))
		return;
	if (!json_string_or(args, "body", "")[0]) {
		tools_refuse(call, "field 'body' is empty");
		return;
	}
	tools_hand_off(call, ud, "comment_issue", args, false);
}

void tools_plan_create(void *ud, struct compose_call *call, const cJSON *args)
{
	if (!repo_ok(call, args))
		return;
	tools_hand_off(call, ud, "create_plan", args, false);
}

void tools_github_review(void *ud, struct compose_call *call, const cJSON *args)
{
	if (!repo_ok(call, args))
		return;
	const char *event = json_string_or(args, "event", "");
	if (strcmp(event, "APPROVE") != 0 && strcmp(event, "REQUEST_CHANGES") != 0 &&
	    strcmp(event, "COMMENT") != 0) {
		tools_refuse(call, "field 'event' must be APPROVE, REQUEST_CHANGES or COMMENT");
		return;
	}
	if (json_int_or(args, "pull_number", 0) < 1) {
		tools_refuse(call, "field 'pull_number' must be the pull request's number");
		return;
	}
	if (!json_string_or(args, "body", "")[0]) {
		tools_refuse(call, "field 'body' is empty: a review says why");
		return;
	}
	tools_hand_off(call, ud, "review_pr", args, false);
}
