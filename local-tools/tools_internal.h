/*
 * tools_internal — what the tool families share (not for use outside
 * local-tools/).
 */
#ifndef GA_LOCAL_TOOLS_TOOLS_INTERNAL_H
#define GA_LOCAL_TOOLS_TOOLS_INTERNAL_H

#include "local-tools/tools.h"

/* Hands args to the sink as `action` and completes the call with the
 * sink's answer (or its error). stop: end the conversation on success. */
void tools_hand_off(struct compose_call *call, struct tools_sink *sink, const char *action,
                    const cJSON *args, bool stop);
/* Hands args to the sink's call hook (an action answered later); refuses
 * the call when the sink has none or no handler for the action. */
void tools_hand_off_later(struct compose_call *call, struct tools_sink *sink, const char *action,
                          const cJSON *args);
/* Completes the call with "Error: <msg>". */
void tools_refuse(struct compose_call *call, const char *msg);

/* Families. */
void tools_space_decision(void *ud, struct compose_call *call, const cJSON *args);
void tools_space_say(void *ud, struct compose_call *call, const cJSON *args);
void tools_bluesky_post(void *ud, struct compose_call *call, const cJSON *args);
void tools_bluesky_reply(void *ud, struct compose_call *call, const cJSON *args);
void tools_graceful_exit(void *ud, struct compose_call *call, const cJSON *args);
void tools_github_create_issue(void *ud, struct compose_call *call, const cJSON *args);
void tools_github_comment(void *ud, struct compose_call *call, const cJSON *args);
void tools_github_review(void *ud, struct compose_call *call, const cJSON *args);
void tools_plan_create(void *ud, struct compose_call *call, const cJSON *args);
void tools_workspace_find(void *ud, struct compose_call *call, const cJSON *args);
void tools_workspace_create(void *ud, struct compose_call *call, const cJSON *args);
void tools_workspace_watch(void *ud, struct compose_call *call, const cJSON *args);
void tools_workspace_unwatch(void *ud, struct compose_call *call, const cJSON *args);
void tools_github_merge_pr(void *ud, struct compose_call *call, const cJSON *args);

extern const char tools_space_decision_schema[];
extern const char tools_space_say_schema[];
extern const char tools_bluesky_post_schema[];
extern const char tools_bluesky_reply_schema[];
extern const char tools_graceful_exit_schema[];
extern const char tools_github_create_issue_schema[];
extern const char tools_github_comment_schema[];
extern const char tools_github_review_schema[];
extern const char tools_plan_create_schema[];
extern const char tools_workspace_find_schema[];
extern const char tools_workspace_create_schema[];
extern const char tools_workspace_watch_schema[];
extern const char tools_github_merge_pr_schema[];

#endif
