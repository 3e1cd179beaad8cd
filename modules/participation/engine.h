/*
 * engine — the participation policy (participation.h) wired to the room,
 * the model and the message pipeline (issue 10, space-validation.md §1,
 * §8, §12, §14): what the agent actually does in the agent-space.
 *
 *   feeding   the space source's compose() hands each gate-passed room
 *             chat here (part_engine_offer) instead of composing per
 *             message; the pipeline then ends that message's job with
 *             "deferred to the participation tick". The chat waits in a
 *             batch (PART_ENGINE_BATCH_MAX; beyond, the oldest is dropped
 *             and logged);
 *   the tick  part_engine_tick() (the runtime's scheduler job, every
 *             part_jittered_interval_ms(name, "space-participation", 5000,
 *             40) while joined; the scheduler's guard keeps it one at a
 *             time) turns the batch into part_events (host → author kind,
 *             the room's addressed list → the addressed flags, history →
 *             from_history), takes the members from the room and runs
 *             part_tick. Its verdict is recorded (stage compose) under the
 *             message that triggered it;
 *   the call  when the tick says call_model: one compose run (compose.h)
 *             with the space_decision tool only and tool_choice forced to
 *             it; system prompt = SOUL + SELF + the space-participation
 *             skill's "System Prompt"; the user message = the skill's "User
 *             Message Template" filled from the tick (repo, ownership,
 *             request, history, own messages, peers' promises, pacing, SELF
 *             excerpt) plus the §14 notes the tick names (mode, role,
 *             escalation, saturation, addressed, follow-up). The tool's
 *             arguments are read with part_decision_from_json (a bad one
 *             goes back to the model as an error, one more round), a text
 *             answer with part_decision_from_text;
 *   the send  a decision that speaks goes out through pipeline_say_ctx
 *             (validator with part_validator_context's facts and the
 *             conversation's echo window → outbound → record) keyed by the
 *             trigger's message id, with the gate's chain_out (the
 *             trigger's chain + 1) and courtesy flag (MAX − 1). Sent:
 *             part_note_sent (cooldown drawn from [cooldown_min_ms,
 *             cooldown_max_ms)), each commitment enqueued in the ledger
 *             with source "space", and part_note_fulfilled when one really
 *             was. A silent decision: part_salvage (§11.1, its commitments
 *             become "On it — …"), else part_note_declined;
 *   Layer 2   before the tick, the host messages Layer 1 finds ambiguous
 *             and the cache does not know (part_intent_unknown, at most
 *             PART_LAYER2_MAX) are put to the model one by one, without
 *             tools: the spec's label prompt, `Message: "<text>"`, 10
 *             tokens, temperature 0; a readable label is learnt
 *             (part_intent_learn), an error or an unreadable reply is not
 *             (§16.15: asked again, after PART_ENGINE_LAYER2_RETRY_MS
 *             with no Layer-2 call, so a failing model is not called on
 *             every tick). The tick's batch is
 *             taken when the tick starts; chats offered meanwhile wait for
 *             the next one.
 *   validation before the send: the candidate meets the validator
 *             (validator_validate, the same context the pipeline's stage
 *             gets) first, with the echo judge (judge.h) as its judge: a
 *             borderline echo (refer) is put to the model (§10.6; verdicts
 *             cached, booked in the budget); YES → rejected as
 *             semantic_echo_judge, recorded at the validator stage and
 *             never sent; NO or a failed judge → sent through the pipeline
 *             with an empty echo window (the judge has settled the echo
 *             checks; every other check runs there again). Anything else
 *             goes to the pipeline as it is, whose validator stage decides
 *             and records (the pipeline's own stage has no judge: it
 *             treats refer as reject, see "hooks" in the report);
 *   ownership (§4, §16.16) before validation: when another agent owns
 *             the open request, the decision's GitHub commitments are
 *             dropped (part_drop_foreign_commitments, recorded at the
 *             validator stage, rule action_owner), whatever the words say;
 *             the words are validated without them. The same holds for
 *             what the extraction finds;
 *   the last look (§9 checks 5–6 after the delays): the room's port asks
 *             part_engine_send_check just before the chat leaves (after
 *             the pipeline's reply delay and the typing pause); when
 *             peers' messages arrived since the words were validated and
 *             the words are now an echo of them (part_late_echo), the chat
 *             is withdrawn, recorded at the outbound stage (rule
 *             echo_late, naming the message), and the tick ends as after
 *             any failed send (no cooldown, nothing enqueued);
 *   recovery  (§11, in order) when the decision is silent, the
 *             validator rejected it, or — for the owner of the open
 *             request — its words were refused after the validator
 *             (outbound dedup, withdrawn by the last look; recorded as
 *             not_said): salvage (part_salvage: valid commitments speak
 *             as "On it — <type> incoming: <title>."; once per tick),
 *             then part_recover_next: the owner retry — one call
 *             with space_decision forced and the commitment-only prompt,
 *             accepted only with a valid commitment
 *             (part_owner_retry_accept), validated like any candidate —
 *             or forced action: the issue body written by one more call
 *             (no tools; the reply replaces part_forced_body's default
 *             when longer than PART_ENGINE_ENRICH_MIN_BYTES), then
 *             part_forced_decision. A tick without new messages whose
 *             verdict is forced_action goes there directly. A
 *             social-only agent never retries nor forces (seed 004).
 *             Salvage, retry and forced words go to the pipeline under
 *             their own ids ("<trigger>#retry1", "#forced1", …: its journal
 *             sends one chat per id); a forced action counts against its
 *             cap whether or not it was said. When nothing is left (no
 *             owner retry or forced action due) and the validator refused
 *             an answer to a host question nobody has answered yet, the
 *             first agent of the ranking over it asks its model once more
 *             (part_discussion_retry_due, rule discussion_retry);
 *   extraction (§8.4, §12.3) after words without structured commitments
 *             were sent, when part_extract_wanted finds a promise in
 *             them (§16.26): one call (no tools, 500 tokens, temperature
 *             0) with the sent words, the repository and the batch's host
 *             messages; what part_extract_parse accepts is enqueued like
 *             structured commitments (and may fulfil the request);
 *   peers     the prompt's {{peerContext}} (part_peers_context) from the
 *             room's peers(): identities, latest reflections, and its
 *             workspaces(); peers' action claims (part_engine_claim, only
 *             the four commitment types) enter the tick as PART_EV_CLAIM:
 *             a claim after the open request means a peer is on it
 *             (§16.5);
 *   claims    (§12.1 step 4 and its 🐞) before a chat with commitments is
 *             handed to the pipeline, one claim per commitment (config
 *             claim; action = type, target = part_claim_target with the
 *             detected repo), ended (unclaim) when the chat is not said,
 *             else PART_ENGINE_CLAIM_HOLD_MS later (checked on the ticks).
 *             The room's live claims are consulted — claim_holder, and the
 *             peers' claims this engine was told of (part_engine_claim,
 *             PART_CLAIM_TTL_MS, a holder no longer present does not
 *             count) — twice: before validation, beside the ownership drop
 *             (part_drop_claimed_commitments: a commitment another member
 *             claimed is dropped, rule claimed_by_peer naming the holder,
 *             and the open request counts as taken by that peer: no owner
 *             retry, no forced action for it), and again right before each
 *             commitment reaches the ledger (a claim that arrived during
 *             the delays). The same two looks drop a commitment our own
 *             ledger already holds (a space commitment of that action,
 *             repository and full title, open or completed within
 *             PART_ENGINE_DONE_RECENT_MS; rule already_committed): the
 *             model promising a fulfilled request again on a later turn;
 *
 * Ownership: the engine copies its configuration's strings; the llm
 * client, budget, skills, ledger and pipeline are borrowed and must
 * outlive it — or it must be freed first. part_engine_free() may be called
 * with a tick in flight: the model call is cancelled, a send already
 * handed to the pipeline finishes without the engine, and the tick's done
 * callback is then never called.
 *
 * One thread, one loop.
 */
#ifndef GA_MODULES_PARTICIPATION_ENGINE_H
#define GA_MODULES_PARTICIPATION_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "modules/conversation/event.h"
#include "modules/gate/gate.h"
#include "modules/participation/participation.h"

#define PART_ENGINE_BATCH_MAX      64
#define PART_ENGINE_COOLDOWN_MIN   10000 /* §12.1 step 7 defaults */
#define PART_ENGINE_COOLDOWN_MAX   20000
#define PART_ENGINE_MAX_ROUNDS     2    /* the forced call, and one correction */
#define PART_ENGINE_SELF_MAX_BYTES 4096 /* the SELF excerpt in the prompt */
#define PART_ENGINE_SKILL          "space-participation"
/* After a Layer-2 call fails, no Layer-2 call for this long. */
#define PART_ENGINE_LAYER2_RETRY_MS 60000
/* §11.3 step 4: the model's issue body replaces the default when longer. */
#define PART_ENGINE_ENRICH_MIN_BYTES  50
#define PART_ENGINE_ENRICH_MAX_TOKENS 1500
/* The batch's host messages given to the extraction call, at most. */
#define PART_ENGINE_HOST_LINES_MAX_BYTES 8192
/* Peers and workspaces asked of the room for the prompt, at most. */
#define PART_ENGINE_PEERS_MAX      64
#define PART_ENGINE_WORKSPACES_MAX 16
/* §12.1 step 4: our claims are held this long after the chat that promised
 * them was said (peers record a claim for 60 s), at most this many. */
#define PART_ENGINE_CLAIM_HOLD_MS PART_CLAIM_TTL_MS
#define PART_ENGINE_HELD_MAX      16
/* A commitment of ours completed this recently still covers its work (§6.1
 * step 3's 30 minutes): the same action, repository and title again is
 * dropped. */
#define PART_ENGINE_DONE_RECENT_MS (30 * 60 * 1000)

struct llm_client;
struct budget;
struct skills;
struct ledger;
struct pipeline;

struct part_engine_config {
	uv_loop_t *loop;
	const char *self_name; /* copied */
	bool social_only;
	struct llm_client *llm; /* required */
	struct budget *budget;  /* may be NULL */
	const struct skills *skills;
	struct ledger *ledger; /* may be NULL: commitments are logged, not kept */
	struct pipeline *pipeline;
	const char *soul_text; /* copied; may be NULL */
	const char *self_text; /* copied (cut at PART_ENGINE_SELF_MAX_BYTES); may be NULL */
	int64_t cooldown_min_ms, cooldown_max_ms; /* 0: memory/space-config.json's (spacecfg.h) */
	/* memory/space-config.json (spacecfg.h): re-read every tick, updated by
	 * the decision's adjustBehavior. NULL: the defaults, never written. */
	const char *memory_dir; /* copied */
	const char *version;    /* copied; the file's _memoryVersion */
	/* The room, as the runtime sees it. members fills at most cap entries
	 * whose strings stay valid until the next call into the room. */
	bool (*joined)(void *ud);
	size_t (*members)(void *ud, struct part_member *out, size_t cap);
	int (*target)(void *ud, char *buf, size_t cap);
	/* May be NULL: the prompt says nothing of peers / workspaces. Strings
	 * valid until the next call into the room. */
	size_t (*peers)(void *ud, struct part_peer_note *out, size_t cap);
	size_t (*workspaces)(void *ud, struct part_workspace_note *out, size_t cap);
	/* May be NULL: what this agent remembers of these peers (relationship
	 * memory, modules/reflection/peers.h), a paragraph the caller frees,
	 * "" when nothing is known. Appended to {{peerContext}}. */
	char *(*relationships)(void *ud, const char *const *names, size_t n);
	/* §12.1 step 4, each may be NULL. claim: announce this agent's claim
	 * of action+target in the room (the runtime: space_link_claim); 0, or
	 * -1 with err (logged, the chat goes on). unclaim: end a claim made
	 * with claim — failed: the chat that promised it was not said (the
	 * runtime: space_link_release(link, action, target, false, NULL, why),
	 * peers see the action_result); not failed: PART_ENGINE_CLAIM_HOLD_MS
	 * after it was said (the commitment is in the ledger, whose fulfilment
	 * claims its own key) or the table is full (the runtime:
	 * space_link_forget: no longer renewed, no result). claim_holder: the room's
	 * claim table (space_link_claim_holder): the name of another member
	 * holding a live claim on action+target, else NULL (valid until the
	 * next call into the room). Without it, the peers' claims the engine
	 * is told of (part_engine_claim) are its table. */
	int (*claim)(void *ud, const char *action, const char *target, struct ga_err *err);
	void (*unclaim)(void *ud, const char *action, const char *target, bool failed,
	                const char *why);
	const char *(*claim_holder)(void *ud, const char *action, const char *target);
	/* §11's words in the agent's voice, read at every tick: which = 0 the
	 * salvage lead (with {{type}}), 1 the forced action's; a string the
	 * engine frees, or NULL for the built-in text. May be NULL. */
	char *(*phrase)(void *ud, int which);
	void *ud;
};

struct part_engine;

/* NULL with err when the configuration is unusable (no loop, llm,
 * pipeline, skills, self_name or callbacks). */
struct part_engine *part_engine_new(const struct part_engine_config *c, struct ga_err *err);
/* NULL ok. See "Ownership" above. */
void part_engine_free(struct part_engine *e);

/* A gate-passed room chat (ev and g borrowed for the call). */
void part_engine_offer(struct part_engine *e, const struct conv_event *ev,
                       const struct gate_result *g);

/* A peer claimed action+target in the room (the claim frame). Only the
 * commitment types count (create_issue, create_plan, comment_issue,
 * post_bluesky: the coordination backend's "respond" claims are not
 * actions); they wait in the batch like chats. */
void part_engine_claim(struct part_engine *e, const char *peer, const char *action,
                       const char *target);

/* The echo judge (NULL before part_engine_new succeeded). */
struct part_judge *part_engine_judge(struct part_engine *e);

/* One tick. done(ud) is called exactly once when it is over — the model
 * answered and what it said was sent or refused — possibly before this
 * returns. */
void part_engine_tick(struct part_engine *e, void (*done)(void *ud), void *ud);
/* Ends a tick in flight as soon as possible (shutdown): the model call is
 * cancelled; done is still called. */
void part_engine_cancel(struct part_engine *e);

/* The last look before the room hears text (see "the last look"): true
 * to send it. Text that is not the words of the engine's send in flight
 * (another sender's chat, a trimmed form aside: compared on the first
 * PART_ENGINE_SEND_MATCH_BYTES) and e NULL: true. false: the words are now
 * an echo of a message that arrived during the delays; why (cap bytes,
 * may be 0) says which, and the decision is recorded. */
#define PART_ENGINE_SEND_MATCH_BYTES 24
#define PART_ENGINE_SEND_WHY_MAX     400
bool part_engine_send_check(struct part_engine *e, const char *text, char *why, size_t cap);

/* Chats waiting for the next tick; the policy's state (read only). */
size_t part_engine_pending(const struct part_engine *e);
const struct part_state *part_engine_state(const struct part_engine *e);
/* memory/space-config.json's replyDelayMinMs / replyDelayMaxMs as last
 * read (the defaults before the first tick); 0/0 for a NULL engine. */
void part_engine_reply_delay(const struct part_engine *e, int64_t *min_ms, int64_t *max_ms);

/* The fulfilment abandoned the commitment id (a space-sourced one: its
 * third failed attempt, or stale). True when it was made for the host's
 * request that is still the current one, which is then open again
 * (§6.3 → false; escalation resumes, the forced-action cap of §16.8
 * stays); the rule is in modules/participation/reqcommits.h. The decision
 * is logged and recorded under "commitment:<id>". */
bool part_engine_commitment_failed(struct part_engine *e, const char *id);

#endif
