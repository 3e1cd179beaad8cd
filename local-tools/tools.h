/*
 * tools — the tools the model may call: a catalogue, filtered by mode and
 * by the agent's capabilities.
 *
 * Each tool has a name, a description the model reads, a JSON Schema for
 * its arguments, the capabilities it needs (social, github, code, owner),
 * the modes it is offered in, and a handler. tools_select() returns the
 * compose_tool entries for one conversation: a tool is offered when the
 * mode is one of its modes AND the agent has every capability it needs.
 * `--social-only` is simply an agent without TOOLS_CAP_GITHUB / CODE, so
 * no GitHub tool reaches any prompt.
 *
 * Handlers do not act on the outside world themselves: after checking
 * what the schema cannot (300 graphemes for a Bluesky post, an
 * "owner/repo" that looks like one, a closing message when closing with a
 * message), they hand an action to the sink — the daemon's commitment
 * pipeline or outbound queue — which answers with a short result for the
 * model. A tool that ends a conversation (space_decision, graceful_exit)
 * asks the loop to stop.
 *
 * Actions given to the sink (params = the validated arguments, borrowed):
 *   space_decision   the space_decision object (shouldSpeak, reason, ...)
 *   post_bluesky     {text}
 *   bluesky_reply    {text, post_uri, post_cid, root_uri?, root_cid?}
 *   graceful_exit    {platform, identifier, closing_type, ...}
 *   create_issue     {owner, repo, title, body?, labels?}
 *   comment_issue    {owner, repo, issue_number, body}
 *   create_plan      {owner, repo, title, goal, context, tasks[]}
 *   review_pr        {owner, repo, pull_number, event, body, comments?}
 * and to the sink's call hook, which answers later (a GitHub read):
 *   workspace_find   {org?}
 *   workspace_create {name, description?, org?}
 *   workspace_watch  {owner, repo}
 *   workspace_unwatch {owner, repo}
 *   github_merge_pr  {owner, repo, pull_number}
 */
#ifndef GA_LOCAL_TOOLS_TOOLS_H
#define GA_LOCAL_TOOLS_TOOLS_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/err.h"
#include "modules/compose/compose.h"

#define TOOLS_MAX                   32
#define TOOLS_RESULT_MAX            1024
#define TOOLS_BLUESKY_MAX_GRAPHEMES 300

enum tools_cap {
	TOOLS_CAP_SOCIAL = 1u << 0,
	TOOLS_CAP_GITHUB = 1u << 1,
	TOOLS_CAP_CODE = 1u << 2,
	TOOLS_CAP_OWNER = 1u << 3,
};

enum tools_mode {
	TOOLS_MODE_OWNER = 1u << 0,   /* owner at the terminal */
	TOOLS_MODE_SPACE = 1u << 1,   /* agent-space participation */
	TOOLS_MODE_BLUESKY = 1u << 2, /* answering on Bluesky */
	TOOLS_MODE_GITHUB = 1u << 3,  /* answering on GitHub */
	TOOLS_MODE_REVIEW = 1u << 4,  /* reviewing a pull request */
};

/* The daemon's side. Returns 0 and writes a short result for the model
 * into result (e.g. "queued as commitment-…"), or -1 with err (sent back
 * to the model as "Error: …"). */
typedef int (*tools_enqueue_fn)(void *ud, const char *action, const cJSON *params, char *result,
                                size_t cap, struct ga_err *err);

/* An action the sink answers later: 1 when it took the call (it calls
 * compose_call_done exactly once, now or later), 0 when it has no
 * handler for the action. */
typedef int (*tools_call_fn)(void *ud, const char *action, const cJSON *params,
                             struct compose_call *call);

struct tools_sink {
	tools_enqueue_fn enqueue;
	void *ud;
	tools_call_fn call; /* may be NULL */
};

struct tools_def {
	const char *name;
	const char *description;
	const char *schema;
	unsigned caps;  /* enum tools_cap bits needed */
	unsigned modes; /* enum tools_mode bits */
	compose_tool_fn run;
};

/* The whole catalogue (static). */
const struct tools_def *tools_catalogue(size_t *n);

/* Capabilities of an agent: social always; github and code unless
 * social_only. (Owner is added by the caller for owner conversations.) */
unsigned tools_agent_caps(bool social_only);

/* Fills out (at most cap entries) with the tools for mode and caps, wired
 * to sink (borrowed; must outlive the conversation). Returns the count. */
size_t tools_select(enum tools_mode mode, unsigned caps, struct tools_sink *sink,
                    struct compose_tool *out, size_t cap);

const char *tools_mode_name(enum tools_mode mode);

#endif
