/*
 * workkey — the names one piece of promised work goes by in claims, so that
 * every agent that promises or does it claims the same thing, whatever
 * implementation it runs.
 *
 * A commitment (an action such as create_issue, the repository it is in,
 * what it names: the title, else the description, else the content) has two
 * claim keys, action:target:
 *   promise  "<action>:<owner/repo or unknown>#<what, first 50 UTF-16
 *            units>" — what an agent claims in the room with the words that
 *            promise the work (TypeScript agents too: .slice(0, 50) counts
 *            UTF-16 units);
 *   work     "<action>:<what>" — what a TypeScript agent claims while it
 *            carries the work out (the commitment's bare title).
 * An agent holds both from the promise to the result and releases both
 * with the outcome; another agent's claim on either means the work is
 * taken.
 *
 * The keys hold spaces and any printable text (the room's claim table and
 * Redis accept them); a key longer than COMMIT_WORK_KEY_MAX is cut on a
 * character boundary. Pure.
 */
#ifndef GA_MODULES_COMMITMENTS_WORKKEY_H
#define GA_MODULES_COMMITMENTS_WORKKEY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#define COMMIT_WORK_TARGET_UNITS 50
#define COMMIT_WORK_ACTION_MAX   32
#define COMMIT_WORK_TARGET_MAX   320
#define COMMIT_WORK_KEY_MAX      (COMMIT_WORK_ACTION_MAX + 1 + COMMIT_WORK_TARGET_MAX)

struct commit_work {
	char action[COMMIT_WORK_ACTION_MAX];
	char promise_target[COMMIT_WORK_TARGET_MAX]; /* "<repo>#<what cut>" */
	char work_target[COMMIT_WORK_TARGET_MAX];    /* "<what>" */
	bool has_work;                               /* false when the commitment names nothing */
};

/* From the parts of a commitment. repo: "owner/repo" or NULL (then
 * "unknown"); what: title, else description, else content (any may be
 * NULL or empty). */
void commit_work_of(const char *action, const char *repo, const char *title,
                    const char *description, const char *content, struct commit_work *out);

/* create_workspace is one piece of work per organisation, whatever name a
 * promise gives it: its one key (has_work false) is
 * "create_workspace:<org, lower-cased>", "<default>" when no organisation
 * is named (the agent's configured one). */
#define COMMIT_WORKSPACE_ACTION  "create_workspace"
#define COMMIT_WORKSPACE_DEFAULT "<default>"
void commit_work_of_workspace(const char *org, struct commit_work *out);

/* From a ledger entry's action and params ({owner, repo, title, body, text,
 * goal}, the tools' argument shapes; create_workspace: {owner}). */
void commit_work_of_params(const char *action, const cJSON *params, struct commit_work *out);

/* "action:target" of either form (buf ≥ COMMIT_WORK_KEY_MAX bytes). */
void commit_work_key(const struct commit_work *w, bool promise, char *buf, size_t cap);

/* One of the two keys names this action and target. */
bool commit_work_is(const struct commit_work *w, const char *action, const char *target);

#endif
