/*
 * modules/space/runtime — the agent-space as the daemon runs it: join the
 * room (link.h) with this agent's name, stable id and identity summary,
 * keep the presence, and plug the room into the message pipeline
 * (modules/pipeline):
 *   - every chat (live or replayed from history) becomes a conv_event on
 *     platform "space" and walks the pipeline: the store records it, the
 *     gate decides (chain length, response-only, budgets, claim); with a
 *     model (llm, skills and sched given) the space source's compose hands
 *     the chat and its walk to the participation engine
 *     (modules/participation/engine.h), whose tick — a scheduler job
 *     "space-participation" every part_jittered_interval_ms(name,
 *     "space-participation", 5000, 40) while joined, one at a time —
 *     answers it on that same walk (or ends it, merged or silent). Without
 *     a model the room's chats end at the pipeline's "no_composer";
 *   - the room is the outbound port of platform "space": what the pipeline
 *     sends is said through space_link_say_with with its chain; the target
 *     key is "space:<host>-<port>" of the room's URL (send permissions name
 *     it). The platform fields of a chat (outbound_send.extra) may carry
 *     "claims" [{action, target}] made in the room right before the chat,
 *     and "replyDelayMs" {min, max} bounding its typing pause; the
 *     submitter's last look (outbound_send.look) is asked when the pause is
 *     over, and a chat it withdraws fails with its reason;
 *
 * The space runs in every mode; --social-only advertises ["social"].
 *
 * Ownership: the configuration is read during space_runtime_start and not
 * kept. space_runtime_stop() leaves the room politely and calls done once
 * every handle is closed; space_runtime_free() accepts NULL and, on a
 * runtime that has not finished stopping, tears it down at once (every
 * handle closing when it returns; memory released as they close).
 */
#ifndef GA_MODULES_SPACE_RUNTIME_H
#define GA_MODULES_SPACE_RUNTIME_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <uv.h>

#include "common/config.h"
#include "common/err.h"
#include "modules/identity/self.h"
#include "modules/space/link.h"
#include "modules/state/state.h"

struct space_runtime_config {
	const struct ga_config *cfg; /* agent_name, space_url */
	const struct state_store *st;
	const char *soul_text;       /* may be NULL */
	const struct self_doc *self; /* may be NULL */
	const char *version;
	bool social_only;
	/* AGENT_GITHUB_USERNAME when GitHub is in use (configured, not
	 * --social-only): said in the identity summary as "githubLogin", so
	 * the room's agents know whom to ask for reviews. NULL: not said. */
	const char *github_login;
	struct pipeline *pipeline; /* may be NULL: chats are only logged */
	struct outbound *outbound; /* may be NULL: the room is not a port */
	/* the participation engine; any of llm, skills, sched NULL: none */
	struct llm_client *llm;
	struct budget *budget; /* may be NULL */
	const struct skills *skills;
	struct ledger *ledger; /* may be NULL */
	struct sched *sched;
	/* voice-phrases.json (voice_path_beside(SELF.md)): the §11 words
	 * come from it; NULL = the built-in texts. Copied. */
	const char *voice_path;
};

struct space_runtime;
struct llm_client;
struct budget;
struct skills;
struct ledger;
struct sched;
struct part_engine;
struct pipeline;
struct outbound;

/* NULL with err when the link cannot be made (an unusable agent name). */
struct space_runtime *space_runtime_start(uv_loop_t *loop, const struct space_runtime_config *rc,
                                          struct ga_err *err);
void space_runtime_stop(struct space_runtime *rt, void (*done)(void *ud), void *ud);
void space_runtime_free(struct space_runtime *rt);
struct space_link *space_runtime_link(struct space_runtime *rt);
/* The room's target key ("space:<host>-<port>"): 0, or -1 when not joined. */
int space_runtime_target(struct space_runtime *rt, char *buf, size_t cap);
/* The participation engine, NULL when the room has none (no model). */
struct part_engine *space_runtime_engine(struct space_runtime *rt);
/* The fulfilment abandoned commitment id of that source: a "space" one made
 * for the host's current request opens it again (§6.3 → false,
 * part_engine_commitment_failed). True when it did; false without an
 * engine, for other sources, or another request's commitment. */
bool space_runtime_commitment_abandoned(struct space_runtime *rt, const char *id,
                                        const char *source);
/* Another member reported action+target done (a successful action_result
 * in the last SPACE_LINK_RESULT_KEEP_MS): true with who and link filled. */
bool space_runtime_peer_done(struct space_runtime *rt, const char *action, const char *target,
                             char *who, size_t who_cap, char *link, size_t link_cap);
/* The other members' GitHub logins (space_link_peer_logins): borrowed
 * until the next call into the room or the next loop turn. 0 when rt is
 * NULL. */
size_t space_runtime_peer_logins(struct space_runtime *rt, const char **out, size_t cap);
/* Broadcasts this agent's `reflection` (1–2 sentences, after a reflection
 * cycle, §7.3) through outbound (permission space:<room>, audit, journal:
 * the same words never twice). 0 when submitted; -1 when there is no
 * outbound, the room is not joined or the summary is empty (logged at
 * warn). What outbound or the room refuse later is logged. */
int space_runtime_send_reflection(struct space_runtime *rt, const char *summary);
/* Broadcasts a `workspace_state` (after plan polling, space-protocol.md)
 * through outbound like the reflection: state is {workspace, plan, total,
 * completed, blocked, inProgress, tasks?} (borrowed; tasks ride along as
 * an extra field for the room's page). 0 when submitted; -1 when there is
 * no outbound, the room is not joined or the workspace is missing. */
int space_runtime_send_workspace_state(struct space_runtime *rt, const cJSON *state);
/* Builds the identity summary again — SOUL.md's text as given at start,
 * SELF.md read again from <home>/SELF.md (the reflection cycle may have
 * changed it; when it cannot be read, the SELF.md given at start) — keeps
 * it for later reconnects and sends it (§7.3: `identity` again after a
 * reflection cycle). 0 when sent; -1 when not joined (the new summary is
 * kept all the same and goes out with the next join). */
int space_runtime_refresh_identity(struct space_runtime *rt);
/* "joined <url> (N members)", "connecting", … for status. */
void space_runtime_describe(struct space_runtime *rt, char *buf, size_t cap);

#endif
