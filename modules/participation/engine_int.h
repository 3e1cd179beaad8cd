/*
 * engine_int — what the engine's files share (engine.h is the contract):
 *   engine.c          feeding, the tick, the send and its outcome, life;
 *   engine_prompt.c   the decision call's user message (§14);
 *   engine_claims.c   the room's claims around a promise (§12.1 step 4)
 *                     and the drops of work already taken;
 *   engine_recover.c  §11 (salvage, the owner retry, forced action) and the
 *                     extraction after commitment-free words (§8.4).
 * Not for use outside modules/participation.
 */
#ifndef GA_MODULES_PARTICIPATION_ENGINE_INT_H
#define GA_MODULES_PARTICIPATION_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "local-tools/tools.h"
#include "modules/commitments/workkey.h"
#include "modules/compose/compose.h"
#include "modules/decisions/decision.h"
#include "modules/participation/engine.h"
#include "modules/participation/reqcommits.h"
#include "modules/participation/saidwork.h"
#include "modules/participation/spacecfg.h"

#define PART_PROMPT_MAX_BYTES (256 * 1024)
#define PART_PIECE_MAX_BYTES  (64 * 1024)
#define PART_ID_MAX           160
#define PART_CONV_MAX         160
#define PART_ENGINE_CTX_IDS   32

struct pipeline_job;
struct strbuf;

/* One chat waiting for the tick (copied), with its walk. */
struct pending {
	char *author;
	char *text;
	size_t len;
	int64_t time_ms;
	enum part_author_kind kind;
	bool addressed_known, addressed_me, addressed_others, from_history;
	char *message_id;
	char *conversation;
	bool claim;   /* a peer's action claim: text = the target */
	bool context; /* observed, not a trigger (no walk) */
	bool noted;   /* a trigger an earlier tick took in as context */
	/* the chat's walk, held at its compose stage until a tick answers it
	 * or ends it; NULL for a claim */
	struct pipeline_job *job;
};

/* What outlives the engine while a model call or a candidate is in flight:
 * the engine pointer is cleared when the engine goes, and the last user
 * frees the anchor. */
struct anchor {
	struct part_engine *e;
	int refs;
};

struct part_engine {
	uv_loop_t *loop;
	char *self;
	/* The skill's prompt and rules and the decision tool's description:
	 * words that must never reach the room (validator check 1c). */
	struct echo_own *own;
	bool social_only;
	struct llm_client *llm;
	struct budget *budget;
	const struct skills *skills;
	struct ledger *ledger;
	struct pipeline *pipeline;
	char *soul;
	char *self_text;
	int64_t cd_min, cd_max;
	bool cd_fixed; /* set by the caller: the file's cooldown is not used */
	char *memory_dir, *version;
	struct space_cfg cfg;  /* memory/space-config.json as last read */
	char cfg_problem[256]; /* the last problem reported, not repeated */
	bool (*joined)(void *);
	size_t (*members)(void *, struct part_member *, size_t);
	int (*target)(void *, char *, size_t);
	size_t (*peers)(void *, struct part_peer_note *, size_t);
	size_t (*workspaces)(void *, struct part_workspace_note *, size_t);
	size_t (*results)(void *, struct part_result_note *, size_t);
	char *(*relationships)(void *, const char *const *, size_t);
	void (*unclaim)(void *, const char *, const char *, bool, const char *);
	const char *(*claim_holder)(void *, const char *, const char *);
	char *(*phrase)(void *, int);
	char *salvage_lead, *forced_lead; /* this tick's §11 words (voice) */
	void *ud;
	struct part_judge *judge;
	/* §12.1 step 4: the peers' claims we were told of, and ours (made by
	 * the room's port with the chat that promised them) */
	struct part_peer_claims peer_claims;
	struct held {
		char action[PART_CLAIM_ACTION_MAX];
		char target[PART_CLAIM_TARGET_MAX];
		int64_t until_ms;
	} held[PART_ENGINE_HELD_MAX];
	size_t nheld;

	struct part_state st;
	struct pending batch[PART_ENGINE_BATCH_MAX];
	size_t nbatch;
	/* the work this agent already said a status line for ("On it —",
	 * "Creating that now."): said at most once per piece of work */
	struct part_said_work said_work;
	/* the ids of the last chats taken in as context (a ring) */
	char ctx_ids[PART_ENGINE_CTX_IDS][PART_ID_MAX];
	size_t ctx_next;
	uint64_t rng;

	/* the tick in flight: its batch (taken from `batch` when it starts,
	 * so chats offered meanwhile wait for the next tick), the Layer-2
	 * texts still to ask (copies) */
	struct pending tb[PART_ENGINE_BATCH_MAX];
	size_t ntb;
	char *l2[PART_LAYER2_MAX];
	size_t nl2, il2;
	int64_t l2_quiet_until_ms; /* after a failed Layer-2 call */
	bool ticking;
	void (*done)(void *);
	void *done_ud;
	struct anchor *anchor;
	struct compose_run *run;
	struct part_tick_out out;
	struct part_decision dec;
	bool have_dec;
	/* The message the tick answers: its walk (held by the engine, or lent
	 * to the pipeline while a candidate is validated and sent), its id and
	 * conversation. A chat taken in during a cooldown is carried to the
	 * next tick (carry) instead of ending unanswered. */
	struct pipeline_job *trig_job;
	bool trig_lent;
	struct pipeline_job *carry;
	char trig_id[PART_ID_MAX];
	char trig_conv[PART_CONV_MAX];
	int64_t trig_chain; /* its gate's chain_out and courtesy flag */
	bool trig_courtesy;
	/* A tick without a walk to answer (forced action on a quiet tick)
	 * says its words as a message of its own: its id. */
	char say_id[PART_ID_MAX + 64];
	struct decision last; /* the tick's last decision: why a walk ends silent */
	char *said;           /* the words handed to the pipeline */
	enum { PH_DECISION, PH_SALVAGE, PH_RETRY, PH_FORCED } phase;
	bool salvaged, retried, forced_now;
	/* the commitments were read from the words (§8.4), not given with
	 * them: they do not exempt the words from the echo checks */
	bool extracted;
	/* the discussion retry (part_discussion_retry_due): made on this
	 * tick; the host message it was made for */
	bool disc_retried;
	uint64_t disc_done_seq;
	char *host_lines;    /* the batch's host messages, for the extraction */
	uint64_t norepo_seq; /* the request whose forced action lacked a repo, told once */
	/* the tool handed to compose (its sink must outlive the run) */
	struct tools_sink sink;
	struct compose_tool tool;
	bool have_tool;
	/* §6.3: the ledger ids enqueued for the open request (reqcommits.h) */
	struct part_req_commits req_commits;
};

/* engine.c */
struct anchor *part_anchor_take(struct part_engine *e);
struct part_engine *part_anchor_drop(struct anchor *a);
void part_record_at(struct part_engine *e, enum decision_stage stage, const struct decision *d);
void part_record(struct part_engine *e, const struct decision *d); /* stage compose */
void part_tick_end(struct part_engine *e);
/* The commitments' checks (and the extraction when the words promise
 * without one), then the words to the pipeline (§12). */
void part_speak(struct part_engine *e);
void part_send(struct part_engine *e);
void part_call_model(struct part_engine *e);
int part_ask_plain(struct part_engine *e, const char *system, char *user, int max_tokens,
                   double temperature, compose_done_fn done, struct ga_err *err);
int part_ask_decision(struct part_engine *e, const char *system, char *user, compose_done_fn done,
                      struct ga_err *err);
/* Enqueues the decision's commitments (what is not taken meanwhile);
 * how many were kept. what (may be NULL) gets a summary. */
size_t part_enqueue_commitments(struct part_engine *e, struct strbuf *what);

/* engine_prompt.c */
char *part_history_text(const struct part_state *st, bool own_only);
char *part_user_message(struct part_engine *e, struct ga_err *err);

/* engine_claims.c */
const char *part_live_holder(void *ud, const char *action, const char *target);
bool part_own_has(struct part_engine *e, const struct cmt_item *c);
void part_drop_taken(struct part_engine *e);
void part_claims_expire(struct part_engine *e);
/* A request a peer's claim took, whose claims lapsed with no work
 * reported done, is open again (on every tick). */
void part_claims_lapsed(struct part_engine *e);
/* The claims the room's port makes with the chat ({"claims":[{action,
 * target}]} in extra), and, once the chat was said, their hold. */
void part_claims_extra(struct part_engine *e, cJSON *extra);
void part_claims_said(struct part_engine *e);

/* engine_recover.c */
void part_recover(struct part_engine *e, bool validator_ran, bool validator_salvage);
void part_forced_action(struct part_engine *e, bool due_now);
/* §8.4: the words promise something without a commitment? One call reads
 * them for commitments; then part_send (also when they do not). */
void part_extract(struct part_engine *e);

#endif
