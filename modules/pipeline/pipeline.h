/*
 * pipeline — the one path every message walks:
 *
 *   event → gate → [platform gate] → [claim] → compose → validator → outbound → record
 *
 * the same for every platform, as a small state machine per message on the
 * one loop. A platform plugs in as an event source (it calls
 * pipeline_event() with a struct conv_event) plus a struct pipeline_source
 * (its own gate, how to compose a reply, where a reply goes, how to react)
 * plus an outbound port (modules/outbound). Every stage's decision
 * {verdict, rule, reason} is appended to the decision log
 * (modules/decisions) under the message's id, so `general-agent why ID`
 * tells the whole story of one message, in stage order, with exactly one
 * record decision.
 *
 * Stages:
 *   event      the event is added to the conversation store (which owns the
 *              history); a message id already answered (before a restart,
 *              too: the store is persisted) is BLOCKed, rule "answered";
 *   gate       modules/gate: self, paused, chain length, response-only,
 *              budgets, Social Mechanics (our replies in the conversation
 *              counted from the store, the event's thread depth); the event
 *              is noted in the gate's windows;
 *   platform   the source's gate(), when the shared gate passed: the
 *   gate       platform's own reasons to stay silent (Bluesky's
 *              should-respond and conversation rules, GitHub's reply
 *              decision), recorded at the gate stage. PASS goes on; BLOCK
 *              or CONTEXT ends the walk; REACT goes to the reaction;
 *   claim      for a peer's message the gate asks for: "respond:<id>" for
 *              60 s through the coordination backend (modules/coord). HELD
 *              or UNAVAILABLE → BLOCK rule "claim" (stand down);
 *   compose    the source's compose() owns the job until it answers with
 *              pipeline_reply() (a candidate), pipeline_silent() (nothing
 *              to say, why), or pipeline_react() (a reaction instead);
 *   validator  the owner's terminal is private (APPROVE "owner_private");
 *              every other candidate goes through validator_validate() with
 *              the conversation's recent messages as the echo window (or the
 *              reply's own context): accept → APPROVE, trim → EDIT, refer
 *              (a borderline echo) → the reply's judge is asked on the loop
 *              and the checks resume with its verdict (no judge: reject),
 *              reject → REJECT;
 *   outbound   the owner's answer is handed to the source's deliver(); any
 *              other candidate is outbound_submit()ted with the key
 *              "reply:<message id><key suffix>" (or the reply's own
 *              idem_key), the gate's chain_out and
 *              courtesy flag, the platform fields (reply_extra or the
 *              reply's extra) and, when the reply asks for it, the last look
 *              (below); outbound logs its own steps;
 *   reaction   a REACT from a gate or pipeline_react(): the source's react()
 *              makes it through outbound and answers pipeline_reacted();
 *   record     one decision: "answered" (sent, delivered or reacted: the
 *              message is marked answered, the gate notes our reply — pair
 *              window, the run of agent messages — and the reply joins the
 *              store under the id the source's sent_id() gives) or
 *              "not_answered" with the reason the walk ended; the store is
 *              saved when due (at most every 5 s; forced on close);
 *   done       the source learns how the walk ended: its done() (when set)
 *              is called once, from the loop.
 *
 * A refused candidate (validator REJECT, outbound not SENT) is told to the
 * reply's ended() hook; with revise set the job is the source's again: it
 * answers with another pipeline_reply() (salvage, a retry: at most
 * PIPELINE_MAX_ROUNDS candidates per walk), pipeline_silent() or
 * pipeline_react(), now or later. Otherwise a refusal ends the walk.
 *
 * The last look: a reply with last_look set is checked once more when the
 * port is about to send it (after the room's typing pause): peers' messages
 * that reached the store since the candidate was validated are compared
 * with it (pipeline_late_echo); an echo of one of them is withdrawn (DROP,
 * rule "echo_late", recorded at the outbound stage).
 *
 * pipeline_say*() is the path of a message the agent starts itself (an
 * expression post, an announcement, the owner's space_say, a fulfilled
 * commitment's follow-up): validator → outbound → record, keyed by its own
 * id.
 *
 * Hooks are never called from inside pipeline_event(); done() is always
 * called from the loop, on a later turn (a 0 ms timer), oldest walk first.
 * compose() is called from the loop or from the claim's answer; a reply's
 * ended() may be called from inside pipeline_reply() (an immediate refusal)
 * and may call pipeline_reply() again.
 *
 * Bounds: at most PIPELINE_MAX_JOBS messages in flight; beyond, an event is
 * refused with a BLOCK decision, rule "overload". At most
 * PIPELINE_MAX_ROUNDS candidates per walk. The store, the gate's state and
 * the decision log have their own bounds.
 *
 * Lifetime: pipeline_free() frees jobs still in flight without calling
 * anyone. Close what calls back into the pipeline first — the sources,
 * outbound (its close drops waiting sends, which ends their jobs), the
 * coordination backend — then free the pipeline. Decisions and texts
 * handed to callbacks are borrowed for the call.
 */
#ifndef GA_MODULES_PIPELINE_PIPELINE_H
#define GA_MODULES_PIPELINE_PIPELINE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"
#include "modules/conversation/event.h"
#include "modules/conversation/store.h"
#include "modules/decisions/decision.h"
#include "modules/gate/gate.h"
#include "modules/state/state.h"

#define PIPELINE_MAX_JOBS     64
#define PIPELINE_MAX_ROUNDS   6
#define PIPELINE_CLAIM_TTL_MS 60000
#define PIPELINE_ECHO_WINDOW  20
#define PIPELINE_TARGET_MAX   256
#define PIPELINE_ID_MAX       300

struct coord;
struct decision_log;
struct outbound;
struct outbound_msg;
struct pipeline;
struct pipeline_job;
struct strbuf;
struct validator_context;

struct pipeline_source {
	enum conv_platform platform;
	/* The platform's own gate, after the shared gate passed and before
	 * the claim: fill d (PASS, BLOCK, CONTEXT or REACT; recorded at the
	 * gate stage). May be NULL. */
	void (*gate)(void *ud, const struct conv_event *ev, const struct gate_result *g,
	             struct decision *d);
	/* Composes a reply to ev: pipeline_reply / pipeline_silent /
	 * pipeline_react on job, exactly once per round (it may do so before
	 * returning). NULL: the platform composes nothing (recorded, "no_composer"). */
	void (*compose)(void *ud, struct pipeline_job *job, const struct conv_event *ev,
	                const struct gate_result *g);
	/* The outbound target key of a reply to ev ("space:<room>", …):
	 * 0, or -1 when a reply has nowhere to go. */
	int (*reply_target)(void *ud, const struct conv_event *ev, char *buf, size_t cap);
	/* Private delivery (the owner's terminal): when set, the reply is
	 * handed here instead of to outbound. */
	void (*deliver)(void *ud, const struct conv_event *ev, const char *text, size_t len);
	/* A reaction to ev (a like, a heart), decided by a gate or by
	 * pipeline_react: made through outbound, then pipeline_reacted(job,
	 * …) exactly once. NULL: the platform does not react (the room:
	 * silence). */
	void (*react)(void *ud, struct pipeline_job *job, const struct conv_event *ev,
	              const struct decision *why);
	/* How the walk of ev ended: once per accepted event, from the loop,
	 * never from inside pipeline_event(). final is the decision that ended
	 * it; artifact what was made (URL, URI), or NULL. May be NULL. done()
	 * may call pipeline_event and pipeline_note, never pipeline_free. */
	void (*done)(void *ud, const struct conv_event *ev, const struct decision *final,
	             const char *artifact);
	/* The reply's platform fields (Bluesky's reply refs): fill extra (an
	 * empty object); it reaches the port as outbound_send.extra. 0, or -1
	 * when the reply cannot go without them (DROP "reply_extra"). Not
	 * called when the reply brings its own extra. May be NULL. */
	int (*reply_extra)(void *ud, const struct conv_event *ev, cJSON *extra);
	/* The id our sent reply is stored under in the conversation (the
	 * platform's own message id of what the port made, from the
	 * artifact), so the store counts it once, however it is learnt again
	 * (a thread read, a reconcile). -1: not stored here (the room hands
	 * our chat back as an event). May be NULL (not stored). */
	int (*sent_id)(void *ud, const struct conv_event *ev, const char *artifact, char *buf,
	               size_t cap);
	/* The conversation a message the agent starts itself (pipeline_say*)
	 * to target belongs to, when it is not the target key itself (the
	 * room: target "space:<host>-<port>", conversation "space:room"), so
	 * its decisions and its echo window are the conversation's. 0, or -1
	 * to keep the target. May be NULL. */
	int (*say_conversation)(void *ud, const char *target, char *buf, size_t cap);
	void *ud;
	/* The platform's gate decides which messages are triggers from the
	 * whole thread (GitHub's reply decision): the shared gate's
	 * response-only rule is left to it. */
	bool decides_triggers;
};

struct pipeline_config {
	uv_loop_t *loop;
	const struct state_store *st; /* the store is loaded from / saved to it; may be NULL */
	struct decision_log *dlog;    /* may be NULL */
	struct outbound *outbound;    /* may be NULL: nothing is sent */
	struct coord *coord;          /* may be NULL: peer claims fail closed */
	struct gate_config gate;      /* copied with its names; the banlist is borrowed */
	bool paused;                  /* the kill switch at start (control.h) */
};

struct pipeline *pipeline_new(const struct pipeline_config *c, struct ga_err *err);
void pipeline_free(struct pipeline *p); /* NULL ok; saves the store */

/* One source per platform (copied). -1 when the platform has one. */
int pipeline_add_source(struct pipeline *p, const struct pipeline_source *src);

/* Walks ev through the stages (ev is copied). 0, or -1 when it was refused
 * at once (overload: a BLOCK decision says so; the source's done() is then
 * not called). After 0 the source's done() (when set) is called exactly
 * once, later, from the loop — never before this returns. */
int pipeline_event(struct pipeline *p, const struct conv_event *ev);

/* How a candidate of pipeline_reply ended (borrowed for the call). */
struct pipeline_outcome {
	bool sent;                 /* outbound SENT (or delivered to the owner) */
	enum decision_stage stage; /* where it ended: validator, outbound */
	const struct decision *final;
	const char *artifact; /* sent: what the port made, may be NULL */
	bool salvage;         /* rejected by a check that leaves commitments usable */
	/* sent: appended to the record decision's reason (what the source
	 * recorded in answer: commitments enqueued, …); else NULL */
	struct strbuf *note;
};

typedef void (*pipeline_ended_fn)(void *ud, struct pipeline_job *job,
                                  const struct pipeline_outcome *o);

/* A message of an echo window the caller brings (copied). */
struct pipeline_msg {
	const char *author;
	const char *text;
	bool agent; /* compared; a person's message is context only */
};

/* A candidate for the compose stage (everything copied during the call). */
struct pipeline_reply {
	const char *text;
	size_t len;
	/* appended to the idempotency key "reply:<message id>" (a second
	 * candidate of one walk, "#salvage1"); NULL: none */
	const char *key_suffix;
	/* the candidate's own idempotency key, in place of "reply:<message
	 * id><key suffix>" (a GitHub review: one per head of the PR, whatever
	 * walk makes it); NULL: the default */
	const char *idem_key;
	/* the validator's facts (mode, role, ownership, counts, judge); the
	 * platform is the job's; its window is not read (below). NULL:
	 * pipeline_say's defaults (discussion, actor, owner of the action).
	 * The judge must outlive the job. */
	const struct validator_context *vctx;
	/* the echo window: these messages (nwindow 0: the conversation's
	 * recent messages in the store) */
	const struct pipeline_msg *window;
	size_t nwindow;
	const cJSON *extra; /* platform fields (copied); NULL: the source's reply_extra */
	bool last_look;     /* check for late echoes when the port sends (above) */
	/* the candidate's outcome: sent (before the record decision: the job
	 * is then over) or refused. May be NULL. */
	pipeline_ended_fn ended;
	void *ud;
	/* a refusal gives the job back to the source (ended() then answers
	 * with pipeline_reply / pipeline_silent / pipeline_react, now or
	 * later); false: a refusal ends the walk after ended() was told */
	bool revise;
};

/* The source's candidate (see "compose"). The job may be over when this
 * returns. More than PIPELINE_MAX_ROUNDS candidates: the walk ends, DROP
 * rule "rounds". */
void pipeline_reply(struct pipeline_job *job, const struct pipeline_reply *r);
/* The source has nothing to say: rule (static) and why end the walk,
 * recorded at the compose stage and in the record's "not_answered". */
void pipeline_silent(struct pipeline_job *job, const char *rule, const char *why);
/* Short for pipeline_reply with text only (no hooks), or, text NULL,
 * pipeline_silent(job, "nothing_to_send", why). */
void pipeline_composed(struct pipeline_job *job, const char *text, size_t len, const char *why);
/* A reaction instead of a reply (rule static, why one sentence): recorded
 * at the compose stage, then the source's react(). */
void pipeline_react(struct pipeline_job *job, const char *rule, const char *why);
/* The source's react() is over: final is outbound's decision (SENT or
 * not), artifact what was made. The walk goes on to the record. */
void pipeline_reacted(struct pipeline_job *job, const struct decision *final, const char *artifact);

/* The event a job is about (borrowed, valid until the job is answered). */
const struct conv_event *pipeline_job_event(const struct pipeline_job *job);
/* The gate's result for the job (chain_out, courtesy). */
const struct gate_result *pipeline_job_gate(const struct pipeline_job *job);

typedef void (*pipeline_say_fn)(void *ud, const struct decision *final, const char *artifact);
/* A message the agent starts (an owner's instruction): validator →
 * outbound → record, logged under id (e.g. "say:<hex>", may be NULL: one is
 * made). chain < 0: none. done (may be NULL) gets the final decision once,
 * possibly before this returns. -1 when refused at once (done is called). */
int pipeline_say(struct pipeline *p, enum conv_platform platform, const char *target,
                 const char *source, const char *text, size_t len, int64_t chain, const char *id,
                 pipeline_say_fn done, void *ud);
/* The same with the validator's facts given by the caller. vctx (may be
 * NULL: pipeline_say's defaults) is copied; its platform is replaced by the
 * job's, and the echo window is the conversation's recent messages
 * (pipeline_say_with brings its own). courtesy: the message answers one at MAX_ACL − 1: outbound
 * appends its courtesy notice. */
int pipeline_say_ctx(struct pipeline *p, enum conv_platform platform, const char *target,
                     const char *source, const char *text, size_t len, int64_t chain, bool courtesy,
                     const char *id, const struct validator_context *vctx, pipeline_say_fn done,
                     void *ud);

/* Everything pipeline_say_ctx takes, and the platform fields of the
 * message for the port (outbound_send.extra: Bluesky's reply refs, …;
 * copied; NULL or an empty object: none) — a message the agent starts
 * that answers a post of a threaded platform (a fulfilled commitment's
 * follow-up reply). */
struct pipeline_say_req {
	enum conv_platform platform;
	const char *target;
	const char *source;
	const char *text;
	size_t len;
	int64_t chain; /* < 0: none */
	bool courtesy;
	const char *id;                       /* NULL: one is made */
	const struct validator_context *vctx; /* as pipeline_reply's */
	const struct pipeline_msg *window;    /* as pipeline_reply's */
	size_t nwindow;
	const cJSON *extra;
	pipeline_say_fn done;
	void *ud;
};
int pipeline_say_with(struct pipeline *p, const struct pipeline_say_req *r);

/* The echo checks 5–6 of the validator once more at the last moment before
 * a send (after the room's typing pause), for the messages that arrived
 * since the candidate was validated. now: the conversation's echo window as
 * it is now (agents compared, persons context); fresh: the other agents'
 * messages among them that arrived since the validation (nfresh 0: nothing
 * changed, false). before: the validation's echo result, NULL when the echo
 * checks did not run. A candidate with commitments is exempt (the echo
 * checks need none), the production thresholds. True when the candidate is
 * now an echo — the ensemble says so, or it now falls in the borderline band
 * and did not before (no time is left to ask a judge: silence) — and then
 * why is a DROP, rule "echo_late", naming the message it echoes and the
 * scores; otherwise false and why untouched. Pure. */
struct pipeline_fresh {
	const char *author; /* may be NULL */
	const char *text;
};
struct echo_window;
struct echo_result;
bool pipeline_late_echo(const char *candidate, size_t n_commitments, const struct echo_window *now,
                        const struct echo_result *before, const struct pipeline_fresh *fresh,
                        size_t nfresh, struct decision *why);

/* The kill switch (persisted by control.h, not here). */
void pipeline_set_paused(struct pipeline *p, bool paused);
/* Replaces the gate's configuration (SIGHUP: SELF.md's thresholds, the
 * budgets). self_id and self_name are copied; the banlist stays borrowed. */
void pipeline_set_gate(struct pipeline *p, const struct gate_config *g);
bool pipeline_paused(const struct pipeline *p);
void pipeline_set_coord(struct pipeline *p, struct coord *c);

/* Records a decision (for a stage outside the pipeline's own: outbound's
 * steps, a source's note). */
void pipeline_note(struct pipeline *p, enum conv_platform platform, const char *conversation,
                   const char *message_id, enum decision_stage stage, const struct decision *d);
/* outbound_config.on_decision for an outbound whose ud is the pipeline's
 * decision log (struct decision_log *): every outbound step is recorded. */
void pipeline_outbound_decision(void *dlog, const struct outbound_msg *m, const struct decision *d);

int64_t pipeline_last_event_ms(const struct pipeline *p); /* 0 when none yet */
/* The same for one platform (status: last activity per platform). */
int64_t pipeline_last_event_ms_of(const struct pipeline *p, enum conv_platform platform);
/* Walks in flight, those whose done() is still due included. */
size_t pipeline_jobs(const struct pipeline *p);
struct conv_store *pipeline_store(struct pipeline *p);
/* Saves the conversation store now (shutdown). */
void pipeline_flush(struct pipeline *p);

#endif
