/*
 * tools_space — the agent-space tools: the participation decision
 * (space-validation.md §8.2) and space_say, the owner's "tell the room …".
 *
 * Participation forces this tool (tool_choice names it). Its arguments are
 * the decision; the sink (the participation module) takes them, and the
 * loop stops: there is nothing more for the model to do this tick. The
 * schema is space-validation.md §8.2's; alias keys inside
 * commitments ("action", "repository", ...) are normalised later by the
 * participation module, so only the canonical "type" is required here.
 */
#include "local-tools/tools_internal.h"

const char tools_space_decision_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"shouldSpeak\":{\"type\":\"boolean\",\"description\":\"Whether to say something now.\"},"
        "\"reason\":{\"type\":\"string\",\"description\":\"Brief private reasoning; never sent.\"},"
        "\"message\":{\"type\":\"string\",\"description\":\"The words to send to the room.\"},"
        "\"commitments\":{\"type\":\"array\",\"description\":\"Concrete actions you promise in the "
        "message; they are carried out after it is sent.\",\"items\":{\"type\":\"object\","
        "\"properties\":{"
        "\"type\":{\"type\":\"string\",\"enum\":[\"create_issue\",\"create_plan\",\"comment_"
        "issue\","
        "\"post_bluesky\",\"create_workspace\"]},"
        "\"repo\":{\"type\":\"string\",\"description\":\"GitHub owner/repo\"},"
        "\"org\":{\"type\":\"string\",\"description\":\"For create_workspace: the GitHub "
        "organisation (default: the agent's).\"},"
        "\"title\":{\"type\":\"string\",\"description\":\"For create_workspace: the "
        "workspace's name (the prefix is added).\"},"
        "\"description\":{\"type\":\"string\",\"description\":\"For create_issue this is the issue "
        "body.\"},"
        "\"content\":{\"type\":\"string\",\"description\":\"Text of a Bluesky post.\"},"
        "\"issue_number\":{\"type\":\"number\",\"description\":\"Needed for comment_issue.\"}},"
        "\"required\":[\"type\"]}},"
        "\"adjustBehavior\":{\"type\":\"object\",\"description\":\"Optional pacing changes.\"}},"
        "\"required\":[\"shouldSpeak\",\"reason\"]}";

void tools_space_decision(void *ud, struct compose_call *call, const cJSON *args)
{
	const cJSON *speak = cJSON_GetObjectItemCaseSensitive(args, "shouldSpeak");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(args, "message");
	if (cJSON_IsTrue(speak) && (!cJSON_IsString(msg) || !msg->valuestring[0])) {
		tools_refuse(call, "shouldSpeak is true but 'message' is empty: give the words to "
		                   "send, or set shouldSpeak to false");
		return;
	}
	tools_hand_off(call, ud, "space_decision", args, true);
}

/* The owner asked the agent to say something in the room. The text goes
 * through the message pipeline (validator, send permissions, dedup) like
 * any other message; the sink answers once it is queued, and the outcome
 * reaches the owner when it is known. */
const char tools_space_say_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"text\":{\"type\":\"string\",\"description\":\"The words to say in the room.\"}},"
        "\"required\":[\"text\"]}";

void tools_space_say(void *ud, struct compose_call *call, const cJSON *args)
{
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(args, "text");
	if (!cJSON_IsString(text) || !text->valuestring[0]) {
		tools_refuse(call, "'text' is empty: give the words to say in the room");
		return;
	}
	tools_hand_off(call, ud, "space_say", args, false);
}
