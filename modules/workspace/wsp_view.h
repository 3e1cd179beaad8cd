/*
 * wsp_view — the open pull requests of the watched workspaces as people
 * read them: a line per pull request (its review state, who is expected to
 * act next and since when) and what this agent waits for, for
 * `general-agent status`, and the pulls of one plan as the room's
 * workspace_state carries them.
 *
 * Input is a pull object of wsp_status()["pulls"] (workspace.h):
 *   {"repo": "o/r", "number", "title", "url", "plan", "task", "author",
 *    "reviewer", "state", "next", "since_ms", "revisions"}
 * with "state" one of awaiting_review, changes_requested, revising,
 * approved, merging, conflict, rebuilding, merged, closed, owner. A pull
 * without a "repo" string or a positive "number" is not rendered (the
 * functions return false); missing optional fields are left out of the
 * line; an unknown state is shown by its name.
 *
 * Pure: time enters as now_ms; times are shown in UTC ("14:02 UTC"), a
 * time on another day with its date. Lines are cut to the caller's buffer
 * (always NUL-terminated; a cut line ends in "…").
 */
#ifndef GA_MODULES_WORKSPACE_WSP_VIEW_H
#define GA_MODULES_WORKSPACE_WSP_VIEW_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many pulls of one plan go into the room's workspace_state
 * (the room relays at most SPACE_WORKSPACE_PULLS_MAX; the first ones, in
 * wsp_status order, are kept). */
#define WSP_VIEW_ROOM_PULLS_MAX 16

/* "awaiting review", "changes requested", … for a state; the state's own
 * text when unknown, "?" for NULL. */
const char *wsp_view_state_text(const char *state);

/* "14:02 UTC (38 min)" — when since_ms was and how long ago; "14:02 UTC"
 * alone when since_ms is not before now_ms; "2026-11-27 14:02 UTC (1 d 2 h)"
 * on another day. */
void wsp_view_since(int64_t since_ms, int64_t now_ms, char *out, size_t cap);

/* One line for the list of pull requests:
 *   acme/www-x#12 awaiting review — bob to act, since 14:02 UTC (38 min);
 *   task 3 of plan #7, by alice: "Add the page"
 * False (out "") when the pull cannot be rendered. */
bool wsp_view_pull_line(const cJSON *pull, int64_t now_ms, char *out, size_t cap);

/* What the agent `login` waits for or does on this pull, e.g.
 *   waiting for bob's review of acme/www-x#12 since 14:02 UTC (38 min)
 *   reviewing acme/www-x#12 by alice, requested since 14:02 UTC (38 min)
 *   revising acme/www-x#12 after changes requested (revision 1) since …
 *   merging acme/www-x#12 since …
 *   waiting for the owner carol on acme/www-x#12 since …
 * False when the pull does not concern login (neither author, reviewer nor
 * next to act), is merged or closed, or cannot be rendered. */
bool wsp_view_pull_wait(const cJSON *pull, const char *login, int64_t now_ms, char *out,
                        size_t cap);

/* The pulls of plan `plan` in workspace `repo` ("o/r") from a wsp_status
 * object, as the room's workspace_state carries them: a new array (caller
 * deletes; empty when there are none) of {repo, number, title?, url?,
 * task?, author?, reviewer?, state, next?, since? (ISO), revisions?}, at
 * most WSP_VIEW_ROOM_PULLS_MAX. */
cJSON *wsp_view_plan_pulls(const cJSON *status, const char *repo, int plan);

/* A fingerprint of such an array (what the room was last told), 0 for an
 * empty one or NULL. */
uint64_t wsp_view_pulls_hash(const cJSON *pulls);

#endif
