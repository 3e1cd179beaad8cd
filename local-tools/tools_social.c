/*
 * tools_social — Bluesky posting and replying, and ending a conversation
 * (runtime-bluesky.md §6.8, §6.13, Appendix B). The posts themselves go
 * through the daemon's outbound queue (dedup, pacing, permissions); these
 * handlers check what must hold before anything is queued.
 */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/utf8.h"
#include "local-tools/tools_internal.h"

const char tools_bluesky_post_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"text\":{\"type\":\"string\",\"description\":\"The post, at most 300 characters.\"}},"
        "\"required\":[\"text\"]}";

const char tools_bluesky_reply_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"text\":{\"type\":\"string\",\"description\":\"The reply, at most 300 characters.\"},"
        "\"post_uri\":{\"type\":\"string\",\"description\":\"at:// URI of the post to answer.\"},"
        "\"post_cid\":{\"type\":\"string\"},"
        "\"root_uri\":{\"type\":\"string\"},\"root_cid\":{\"type\":\"string\"}},"
        "\"required\":[\"text\",\"post_uri\",\"post_cid\"]}";

const char tools_graceful_exit_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"platform\":{\"type\":\"string\",\"enum\":[\"bluesky\",\"github\"]},"
        "\"identifier\":{\"type\":\"string\",\"description\":\"Bluesky: the thread root URI. "
        "GitHub: owner/repo#number.\"},"
        "\"closing_type\":{\"type\":\"string\",\"enum\":[\"like\",\"message\"],\"description\":"
        "\"A like is preferred.\"},"
        "\"closing_message\":{\"type\":\"string\",\"description\":\"Required for message.\"},"
        "\"target_uri\":{\"type\":\"string\",\"description\":\"Bluesky: the post to like or "
        "answer.\"},"
        "\"target_cid\":{\"type\":\"string\"},"
        "\"reason\":{\"type\":\"string\",\"description\":\"Why the conversation is over. "
        "Only our part ends: the issue or pull request stays open (a peer's work is never "
        "closed this way).\"}},"
        "\"required\":[\"platform\",\"identifier\",\"closing_type\",\"reason\"]}";

/* Empty or over the limit → a refusal that says which. */
static bool post_text_ok(struct compose_call *call, const char *text, const char *field)
{
	char msg[256];
	const char *p = text;
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	if (!*p) {
		snprintf(msg, sizeof msg, "field '%s' is empty", field);
		tools_refuse(call, msg);
		return false;
	}
	size_t g = utf8_graphemes(text, strlen(text));
	if (g > TOOLS_BLUESKY_MAX_GRAPHEMES) {
		snprintf(msg, sizeof msg,
		         "field '%s' is %zu characters; a Bluesky post holds at most %d. Say it in "
		         "fewer words (it is not cut for you).",
		         field, g, TOOLS_BLUESKY_MAX_GRAPHEMES);
		tools_refuse(call, msg);
		return false;
	}
	return true;
}

void tools_bluesky_post(void *ud, struct compose_call *call, const cJSON *args)
{
	if (!post_text_ok(call, json_string_or(args, "text", ""), "text"))
		return;
	tools_hand_off(call, ud, "post_bluesky", args, false);
}

void tools_bluesky_reply(void *ud, struct compose_call *call, const cJSON *args)
{
	if (!post_text_ok(call, json_string_or(args, "text", ""), "text"))
		return;
	if (strncmp(json_string_or(args, "post_uri", ""), "at://", 5) != 0) {
		tools_refuse(call, "field 'post_uri' must be an at:// URI");
		return;
	}
	tools_hand_off(call, ud, "bluesky_reply", args, false);
}

/* owner/repo#number */
static bool github_identifier_ok(const char *s)
{
	const char *slash = strchr(s, '/');
	const char *hash = strchr(s, '#');
	if (!slash || !hash || slash == s || hash < slash + 2 || !hash[1])
		return false;
	for (const char *p = hash + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

void tools_graceful_exit(void *ud, struct compose_call *call, const cJSON *args)
{
	const char *platform = json_string_or(args, "platform", "");
	const char *type = json_string_or(args, "closing_type", "");
	const char *id = json_string_or(args, "identifier", "");
	if (strcmp(type, "message") == 0) {
		const char *m = json_string_or(args, "closing_message", NULL);
		if (!m) {
			tools_refuse(call,
			             "field 'closing_message' is required when closing_type is "
			             "message (or close with a like)");
			return;
		}
		if (strcmp(platform, "bluesky") == 0 && !post_text_ok(call, m, "closing_message"))
			return;
	}
	if (strcmp(platform, "bluesky") == 0) {
		if (!json_string_or(args, "target_uri", NULL) ||
		    !json_string_or(args, "target_cid", NULL)) {
			tools_refuse(call, "fields 'target_uri' and 'target_cid' are required on "
			                   "Bluesky (the post to like or answer)");
			return;
		}
	} else if (!github_identifier_ok(id)) {
		tools_refuse(call, "field 'identifier' must look like owner/repo#number on GitHub");
		return;
	}
	tools_hand_off(call, ud, "graceful_exit", args, true);
}
