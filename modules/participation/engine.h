/*
 * engine — the participation policy (participation.h) wired to the room,
 * the model and the message pipeline (space-validation.md §1, §8, §12,
 * §14): what the agent actually does in the agent-space.
 *
 *   feeding   the space source's compose() hands each gate-passed room
 *             chat here with its walk (part_engine_offer): the walk waits at
 *             its compose stage in a batch (PART_ENGINE_BATCH_MAX; beyond,
 *             the oldest ends, rule batch_full) until a tick answers it;
 *   the tick  part_engine_tick() (the runtime's scheduler job, every
 *             part_jittered_interval_ms(name, "space-participation", 5000,
 *             40) while joined; one at a time) turns the batch into
 *             part_events and runs part_tick. The walks of the batch settle:
 *             the message the tick answers (the host's before an agent's,
 *             addressed to us before not, newest last) stays with the tick;
 *             the others end "merged" into it; a tick that does not call
 *             the model ends them with its verdict (a cooldown carries the
 *             best one to the next tick instead). Chats offered meanwhile
 *             wait for the next tick;
 *   the call  when the tick says call_model: one compose run with the
 *             space_decision tool only, tool_choice forced to it; system
 *             prompt = SOUL + SELF + the space-participation skill; the user
 *             message = the skill's template filled from the tick plus the
 *             §14 notes (engine_prompt.c). The tool's arguments are read with
 *             part_decision_from_json (a bad one goes back to the model, one
 *             more round), a text answer with part_decision_from_text;
 *   the words a decision that speaks goes back to the walk it answers as
 *             its candidate (pipeline_reply): the pipeline's validator with
 *             part_validator_context's facts and the echo judge (judge.h: a
 *             borderline echo is put to the model), outbound with the gate's
 *             chain_out and courtesy flag, the claims the room's port makes
 *             with the chat, the typing pause's range, and the last look
 *             (pipeline_late_echo: words that became an echo of a peer's
 *             message during the typing pause are withdrawn, rule
 *             echo_late). Sent: part_note_sent (cooldown), the claims held
 *             PART_ENGINE_CLAIM_HOLD_MS, each commitment enqueued in the
 *             ledger with source "space" (its decision in the story
 *             "commitment:<id>", a summary in the record), part_note_fulfilled
 *             when one really was. A tick without a walk to answer (a
 *             forced action on a quiet tick) says its words with
 *             pipeline_say under "<last trigger>#forced<n>";
 *   Layer 2   before the tick, the host messages Layer 1 finds ambiguous
 *             and the cache does not know are put to the model one by one
 *             (no tools, the spec's label prompt, 10 tokens, temperature 0);
 *             a readable label is learnt, an error is not (asked again after
 *             PART_ENGINE_LAYER2_RETRY_MS);
 *   ownership (§4, §16.16) before the words go: when another agent owns
 *             the open request, the decision's GitHub commitments are
 *             dropped (rule action_owner); so are commitments a member
 *             claimed (claimed_by_peer) or our ledger already holds
 *             (already_committed: the same action, repository and full
 *             title, open or completed within PART_ENGINE_DONE_RECENT_MS) —
 *             looked at again right before each reaches the ledger;
 *   recovery  (§11, engine_recover.c) when the decision is silent, the
 *             validator refused its words, or — for the owner of the open
 *             request — they were refused after the validator (outbound
 *             dedup, the last look; rule not_said): salvage (valid
 *             commitments speak as "On it — <type> incoming: <title>."),
 *             then part_recover_next: the owner retry (space_decision forced,
 *             the commitment-only prompt) or forced action (the issue body
 *             written by one more call). Each is another candidate of the
 *             same walk with its own idempotency key ("#salvage1",
 *             "#retry1", "#forced1"). A social-only agent never retries nor
 *             forces. When nothing is left and the validator refused an
 *             answer to a host question nobody has answered, the first agent
 *             of a ranking over it asks its model once more;
 *   extraction (§8.4) words without structured commitments that promise
 *             something are read for them before they go: one call (no
 *             tools, 500 tokens, temperature 0); what it finds goes with
 *             the words like structured commitments (claimed with the chat,
 *             enqueued once it was said, counted by the validator);
 *   peers     the prompt's {{peerContext}} from the room's peers():
 *             identities, latest reflections, workspaces, and what this
 *             agent remembers of them; peers' action claims
 *             (part_engine_claim) enter the tick as PART_EV_CLAIM.
 *
 * Ownership: the engine copies its configuration's strings; the llm
 * client, budget, skills, ledger and pipeline are borrowed and must
 * outlive it. part_engine_free() may be called with a tick in flight: the
 * model call is cancelled, the walks it holds end ("stopping"), a
 * candidate already with the pipeline finishes there, and the tick's done
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
/* Members' reports of work done asked of the room for the prompt, at most. */
#define PART_ENGINE_RESULTS_MAX 16
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

/* A member's report that it did a piece of work (a successful
 * action_result): who, the action and target it named, the link ("" none),
 * when it arrived. */
struct part_result_note {
	const char *who, *action, *target, *link;
	int64_t time_ms;
};

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
	/* May be NULL: the members' recent reports of work done, oldest first
	 * (those that arrived since the host's request opened are the
	 * request's work done by others, in the prompt beside this agent's
	 * own). Strings valid until the next call into the room. */
	size_t (*results)(void *ud, struct part_result_note *out, size_t cap);
	/* May be NULL: what this agent remembers of these peers (relationship
	 * memory, modules/reflection/peers.h), a paragraph the caller frees,
	 * "" when nothing is known. Appended to {{peerContext}}. */
	char *(*relationships)(void *ud, const char *const *names, size_t n);
	/* §12.1 step 4, each may be NULL. The room's port claims the
	 * commitments of a chat with the chat (outbound_send.extra "claims").
	 * unclaim: end such a claim PART_ENGINE_CLAIM_HOLD_MS after the chat
	 * was said (the commitment is in the ledger, whose fulfilment claims
	 * its own key) or when the table is full (the runtime:
	 * space_link_forget: no longer renewed, no result); failed is false.
	 * claim_holder: the room's claim table (space_link_claim_holder): the
	 * name of another member holding a live claim on action+target, else
	 * NULL (valid until the next call into the room). Without it, the
	 * peers' claims the engine is told of (part_engine_claim) are its
	 * table. */
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

/* A gate-passed room chat and its walk, held at the compose stage until a
 * tick answers it or ends it (ev and g borrowed for the call). e NULL: the
 * walk ends at once. */
struct pipeline_job;
void part_engine_offer(struct part_engine *e, struct pipeline_job *job, const struct conv_event *ev,
                       const struct gate_result *g);

/* Every live chat of the room another member said, whatever the gate
 * decides about answering it: the room's whole recent conversation is
 * context for the tick (the history, the prompt, what was already
 * promised or done), and only what the gate made a trigger is a reason to
 * speak. Call it before the chat walks the pipeline (part_engine_offer
 * then finds it). ev borrowed. */
void part_engine_observe(struct part_engine *e, const struct conv_event *ev);

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
