/*
 * pipeline — the one path every message walks (DESIGN.md "The path every
 * message walks"; issue 9 item 3):
 *
 *   event → gate → [claim] → compose → validator → outbound → record
 *
 * the same for every platform, as a small state machine per message on the
 * one loop. A platform plugs in as an event source (it calls
 * pipeline_event() with a struct conv_event) plus a struct pipeline_source
 * (how to compose a reply, where a reply goes) plus an outbound port
 * (modules/outbound). Every stage's decision {verdict, rule, reason} is
 * appended to the decision log (modules/decisions) under the message's id,
 * so `general-agent why ID` tells the whole story.
 *
 * Stages:
 *   event      the event is added to the conversation store (which owns the
 *              history); a message id already answered (before a restart,
 *              too: the store is persisted) is BLOCKed, rule "answered";
 *   gate       modules/gate: self, paused, chain length, response-only,
 *              budgets; then the event is noted in the gate's windows;
 *   claim      for a peer's message the gate asks for: "respond:<id>" for
 *              60 s through the coordination backend (modules/coord). HELD
 *              or UNAVAILABLE → BLOCK rule "claim" (fail closed: stand
 *              down; a person's message never needs a claim);
 *   compose    the source's compose(); a platform that composes nothing yet
 *              (the room until the participation engine lands) ends here
 *              with INFO rule "no_composer", recorded;
 *   validator  the owner's terminal is private (APPROVE "owner_private");
 *              every other candidate goes through validator_validate() with
 *              the conversation's recent messages as the echo window:
 *              accept → APPROVE, trim → EDIT (the trimmed text is sent),
 *              reject/refer → REJECT (nothing is sent; the reason is in the
 *              log — the moderation outcome people can read, seed 001);
 *   outbound   the owner's answer is handed to the source's deliver() (the
 *              terminal); anything else is outbound_submit()ted with the
 *              idempotency key "reply:<message id>", the gate's chain_out
 *              and courtesy flag; outbound logs its own steps;
 *   record     the message is marked answered, the gate notes our reply
 *              (pair budgets count both directions), the store is saved
 *              when due (at most every 5 s; forced on close);
 *   done       the source learns how the walk ended: its done() (when
 *              set) is called once, from the loop (below).
 *
 * The source's two hooks (both optional, NULL = not used):
 *   done         called exactly once for every event pipeline_event()
 *                accepted (returned 0), whatever ended its walk: "answered"
 *                (gate BLOCK / REACT / CONTEXT), a lost or unavailable
 *                claim, no composer, nothing composed, a validator REJECT,
 *                no target, the reply's fields missing, outbound's DROP /
 *                FAIL, or the reply SENT (artifact: the port's, e.g. the
 *                URL or URI made) or delivered to the owner. final is the
 *                decision that ended the walk (a gate REACT: final->verdict
 *                is VERDICT_REACT — a reaction is the source's to make).
 *                It is NEVER called from inside pipeline_event() or
 *                pipeline_composed(): always from the loop, on a later turn
 *                (a 0 ms timer), oldest walk first, after the record stage.
 *                A walk counts in pipeline_jobs() (and against
 *                PIPELINE_MAX_JOBS) until its done() has been called. Not
 *                called for an event refused at once (pipeline_event
 *                returned -1), nor for pipeline_say (its own callback), nor
 *                by pipeline_free (walks in flight and done() calls still
 *                due are dropped silently). ev, final and artifact are
 *                borrowed for the call. done() may call pipeline_event and
 *                pipeline_note, never pipeline_free.
 *   reply_extra  the platform fields of a reply sent through outbound
 *                (Bluesky's reply refs {"reply":{"root":{uri,cid},
 *                "parent":{uri,cid}}}, …): called once per reply, just
 *                before outbound_submit, with an empty object that the
 *                source fills; it reaches the port as outbound_send.extra
 *                (outbound copies it; an object left empty is passed as
 *                NULL). -1: the reply cannot go without them → DROP rule
 *                "reply_extra", the walk ends (done). Not called for the
 *                owner's deliver(), nor for pipeline_say.
 *
 * pipeline_say() is the path of a message the agent starts itself (an
 * owner's space_say instruction): validator → outbound → record, keyed by
 * its own id.
 *
 * Bounds: at most PIPELINE_MAX_JOBS messages in flight; beyond, an event is
 * refused with a BLOCK decision, rule "overload". The store, the gate's
 * state and the decision log have their own bounds.
 *
 * Lifetime: pipeline_free() frees jobs still in flight without calling
 * anyone (no done(), no say callback). Close what calls back into the
 * pipeline first — the sources (owner), outbound (its close drops waiting
 * sends, which ends their jobs), the coordination backend — then free the
 * pipeline. The timer that calls done() is closed on the loop by
 * pipeline_free: run the loop afterwards (it is made only once a source
 * with done() has ended a walk). Decisions and texts handed to callbacks
 * are borrowed for the call.
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
#define PIPELINE_CLAIM_TTL_MS 60000
#define PIPELINE_ECHO_WINDOW  20
#define PIPELINE_TARGET_MAX   256

struct coord;
struct decision_log;
struct outbound;
struct outbound_msg;
struct pipeline;
struct pipeline_job;

struct pipeline_source {
	enum conv_platform platform;
	/* Composes a reply to ev, then calls pipeline_composed(job, …) exactly
	 * once (it may do so before returning). NULL: the platform composes
	 * nothing yet. */
	void (*compose)(void *ud, struct pipeline_job *job, const struct conv_event *ev,
	                const struct gate_result *g);
	/* The outbound target key of a reply to ev ("space:<room>", …):
	 * 0, or -1 when a reply has nowhere to go. */
	int (*reply_target)(void *ud, const struct conv_event *ev, char *buf, size_t cap);
	/* Private delivery (the owner's terminal): when set, the reply is
	 * handed here instead of to outbound. */
	void (*deliver)(void *ud, const struct conv_event *ev, const char *text, size_t len);
	/* How the walk of ev ended (see "The source's two hooks" above):
	 * once per accepted event, from the loop, never from inside
	 * pipeline_event(). May be NULL. */
	void (*done)(void *ud, const struct conv_event *ev, const struct decision *final,
	             const char *artifact);
	/* The reply's platform fields: fill extra (an empty object, owned by
	 * the pipeline); it reaches the port as outbound_send.extra. 0, or -1
	 * when the reply cannot go without them (DROP "reply_extra"). May be
	 * NULL. */
	int (*reply_extra)(void *ud, const struct conv_event *ev, cJSON *extra);
	void *ud;
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

/* The source's answer to compose: text (len bytes) to validate and send,
 * or text NULL with why (one sentence) when there is nothing to send. The
 * job may be over when this returns; the source's done() comes later. */
void pipeline_composed(struct pipeline_job *job, const char *text, size_t len, const char *why);

/* The event a job is about (borrowed, valid until pipeline_composed). */
const struct conv_event *pipeline_job_event(const struct pipeline_job *job);

typedef void (*pipeline_say_fn)(void *ud, const struct decision *final, const char *artifact);
/* A message the agent starts (an owner's instruction): validator →
 * outbound → record, logged under id (e.g. "say:<hex>", may be NULL: one is
 * made). chain < 0: none. done (may be NULL) gets the final decision once,
 * possibly before this returns. -1 when refused at once (done is called). */
int pipeline_say(struct pipeline *p, enum conv_platform platform, const char *target,
                 const char *source, const char *text, size_t len, int64_t chain,
                 const char *id, pipeline_say_fn done, void *ud);
/* The same with the validator's facts given by the caller (the
 * participation engine: mode, role, ownership, the open request, counts;
 * part_validator_context). vctx (may be NULL: pipeline_say's defaults) is
 * borrowed for the call only; its platform is replaced by the job's, and
 * its echo window, when NULL, by the conversation's recent messages.
 * courtesy: the message answers one at MAX_ACL − 1 (the gate's courtesy
 * flag): outbound appends its courtesy notice. */
struct validator_context;
int pipeline_say_ctx(struct pipeline *p, enum conv_platform platform, const char *target,
                     const char *source, const char *text, size_t len, int64_t chain,
                     bool courtesy, const char *id, const struct validator_context *vctx,
                     pipeline_say_fn done, void *ud);

/* A reply a source sent itself with pipeline_say/_ctx in answer to a
 * message of conversation (ghconv and Bluesky compose with the whole thread
 * and send that way): the gate counts it as the record stage counts a
 * walk's reply — our replies in the conversation (SELF.md's Social
 * Mechanics: max replies per conversation), the pair window towards
 * peer_id (NULL: a person) and the run of agent messages. Call it once
 * per reply, when its send ended SENT. */
void pipeline_note_reply(struct pipeline *p, const char *conversation, const char *peer_id);

/* Everything pipeline_say_ctx takes, and the platform fields of the
 * message for the port (outbound_send.extra: Bluesky's reply refs, …;
 * copied; NULL or an empty object: none) — a message the agent starts
 * that answers a post of a threaded platform (a fulfilled commitment's
 * follow-up reply, a reply carrying commitments). */
struct pipeline_say_req {
	enum conv_platform platform;
	const char *target;
	const char *source;
	const char *text;
	size_t len;
	int64_t chain; /* < 0: none */
	bool courtesy;
	const char *id; /* NULL: one is made */
	const struct validator_context *vctx;
	const cJSON *extra;
	pipeline_say_fn done;
	void *ud;
};
int pipeline_say_with(struct pipeline *p, const struct pipeline_say_req *r);

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
void pipeline_outbound_decision(void *dlog, const struct outbound_msg *m,
                                const struct decision *d);

int64_t pipeline_last_event_ms(const struct pipeline *p); /* 0 when none yet */
/* The same for one platform (status: last activity per platform). */
int64_t pipeline_last_event_ms_of(const struct pipeline *p, enum conv_platform platform);
/* Walks in flight, those whose done() is still due included. */
size_t pipeline_jobs(const struct pipeline *p);
struct conv_store *pipeline_store(struct pipeline *p);
/* Saves the conversation store now (shutdown). */
void pipeline_flush(struct pipeline *p);

#endif
