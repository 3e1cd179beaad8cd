/*
 * outbound — the last stage before a side effect (DESIGN.md "The path every
 * message walks"). Every send of every platform goes
 * through outbound_submit(), which walks, in this order:
 *
 *   1. permission  perms_refresh + perms_check (rule "send_permission"); the
 *                  attempt is appended to send_audit.jsonl whether allowed or
 *                  denied;
 *   2. journal     a key already DONE → DROP (rule "journal": already sent);
 *                  a key with an unresolved INTENT → DROP (rule "journal":
 *                  reconcile first, never resend blindly);
 *   3. dedup       same text to the same target within 5 min → DROP ("dedup");
 *   4. pacing      wait until min_interval_ms since the last send on that
 *                  platform; at most OUTBOUND_QUEUE_MAX waiting per platform,
 *                  beyond → DROP ("pacing");
 *   5. limit       the text (plus the GitHub marker) over the platform's
 *                  limit → DROP ("platform_limit"); validator_limits_for()
 *                  and validator_measure() decide the unit;
 *   6. courtesy    the courtesy notice (when asked and when it fits; else
 *                  left out, "the marker alone") and the GitHub chain marker
 *                  `<!-- ga:chain=N key=K -->`: EDIT ("courtesy") when the
 *                  text changed, else PASS;
 *   7. journal     intent (before the side effect);
 *   8. port        the platform's send(); then journal done / failed and the
 *                  final decision SENT ("sent") or FAIL ("port").
 * Every step's decision goes to config.on_decision; the submit callback gets
 * the final one exactly once (DROP, SENT or FAIL), possibly before
 * outbound_submit() returns (an immediate drop).
 *
 * Ownership: outbound_submit copies the message (strings and extra); the
 * caller's buffers may go right after the call. Decisions and artifacts
 * passed to callbacks are valid only during the call.
 *
 * Lifetime: outbound_close() drops every waiting send (DROP "shutting
 * down"), waits for the port calls in flight, closes its timers and then
 * calls done_cb and frees the struct. Submits after close are dropped.
 *
 * Bounds: OUTBOUND_QUEUE_MAX waiting per platform; texts up to
 * OUTBOUND_TEXT_MAX_BYTES; one port per platform.
 */
#ifndef GA_MODULES_OUTBOUND_OUTBOUND_H
#define GA_MODULES_OUTBOUND_OUTBOUND_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"
#include "modules/conversation/event.h"
#include "modules/decisions/decision.h"

#define OUTBOUND_QUEUE_MAX      32
#define OUTBOUND_TEXT_MAX_BYTES (256 * 1024)
/* The owner terminal has no platform limit of its own. */
#define OUTBOUND_OWNER_MAX_CODEPOINTS 65536

struct journal; /* modules/journal/journal.h */
struct outbound;

/* What a port receives (all borrowed for the duration of send()). */
struct outbound_send {
	enum conv_platform platform;
	const char *target; /* the canonical target key */
	const char *text;   /* final: courtesy notice and GitHub marker included */
	size_t text_len;
	int64_t chain;        /* -1 none: the port carries it in its own field */
	const char *idem_key; /* the journal key */
	const cJSON *extra;   /* platform reply refs, passed through (may be NULL) */
	/* The submitter's last look (outbound_msg.look): a port that waits
	 * before the side effect (the room's typing pause) asks it right
	 * before; false = withdrawn (why: one sentence), report ok 0. NULL:
	 * none. */
	bool (*look)(void *ud, const char *text, char *why, size_t cap);
	void *look_ud;
};

/* ok 1 = sent (artifact: the URI/URL/id of what was made, may be NULL);
 * ok 0 = failed and nothing was made (error: one sentence): journal failed,
 *        a retry with the same key is allowed;
 * ok OUTBOUND_PORT_UNKNOWN (-1) = failed after the request may have reached
 *        the platform (a timeout, a connection cut after the write left):
 *        the journal intent is LEFT UNRESOLVED, the final decision is FAIL
 *        rule "port_unknown", and a submit with that key is dropped (rule
 *        "journal") until outbound_reconcile_key (or a restart's
 *        outbound_reconcile_pending) has asked the platform.
 * Strings are borrowed. */
#define OUTBOUND_PORT_UNKNOWN (-1)
typedef void (*outbound_port_done_fn)(void *done_ud, int ok, const char *artifact,
                                      const char *error);

struct outbound_port {
	enum conv_platform platform;
	/* 0 = started: done() is then called exactly once, later. Non-zero =
	 * could not start (done is not called): the send FAILs. */
	int (*send)(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
	            void *done_ud);
	/* Does the artifact of an unresolved intent exist? exists 1 / 0 / -1
	 * unknown. May be NULL. */
	void (*reconcile)(void *ud, const char *idem_key, const char *target,
	                  void (*done)(void *done_ud, int exists, const char *artifact),
	                  void *done_ud);
	uint64_t min_interval_ms; /* pacing between sends on this platform */
	bool marker_in_text;      /* GitHub: the chain travels in the body */
	void *ud;
};

/* What the pipeline submits (borrowed; copied by outbound_submit). */
struct outbound_msg {
	enum conv_platform platform;
	const char *target;
	const char *source;       /* "space", "owner", "bluesky", "github", "commitment" */
	const char *conversation; /* for the decision log; may be NULL */
	const char *message_id;   /* the trigger; may be NULL */
	const char *text;
	size_t text_len;
	int64_t chain;        /* -1 = none */
	bool courtesy;        /* append GATE_COURTESY_NOTICE (modules/gate) where it fits */
	const char *idem_key; /* NULL = sha256(platform, target, text) */
	const cJSON *extra;   /* may be NULL */
	/* passed to the port as outbound_send.look (may be NULL); ud must
	 * live until the submit's callback */
	bool (*look)(void *ud, const char *text, char *why, size_t cap);
	void *look_ud;
};

struct outbound_config {
	const char *memory_dir;  /* send_permissions.json, send_audit.jsonl */
	const char *agent_name;  /* for the refusal text */
	struct journal *journal; /* may be NULL: no journal */
	void (*on_decision)(void *ud, const struct outbound_msg *m, const struct decision *d);
	void *ud;
};

typedef void (*outbound_done_fn)(void *ud, const struct decision *final, const char *artifact);

struct outbound *outbound_new(uv_loop_t *loop, const struct outbound_config *cfg,
                              struct ga_err *err);
/* One port per platform; the port struct is copied. -1 if the platform
 * already has one. */
int outbound_add_port(struct outbound *ob, const struct outbound_port *port, struct ga_err *err);
/* Walks the stages; cb (may be NULL) gets the final decision exactly once. */
void outbound_submit(struct outbound *ob, const struct outbound_msg *msg, outbound_done_fn cb,
                     void *ud);
/* The refusal text of the last permission denial (seed 002 shape), or NULL.
 * Borrowed until the next submit. */
const char *outbound_last_denial(const struct outbound *ob);
/* At start: for every journal intent without done, asks the platform's
 * reconcile (nothing is ever resent from here):
 *   exists 1  → journal_done with the artifact;
 *   exists 0  → journal_failed ("not sent"): the owner of the work (the
 *               ledger, the pipeline) may retry it with the same key;
 *   exists -1, or no reconcile on the port → left as an intent, and a
 *               submit with that key is dropped (rule "journal"): at most
 *               once beats twice. Logged either way.
 * Answers may come later (on the loop); outbound_close waits for them.
 * Returns how many intents were asked about; 0 without a journal. */
int outbound_reconcile_pending(struct outbound *ob);
/* The same for one key while running (after a send ended "port_unknown",
 * or an intent left by a crash): the port's reconcile is asked and the
 * journal settled exactly as above; then cb (may be NULL) gets exists
 * (1 / 0 / -1) and the artifact, once, on the loop. Returns 0 when asked;
 * -1 with err (cb not called) when there is no journal, the key has no
 * unresolved intent, its platform's port has no reconcile, or the key is
 * busy: being sent right now or already being reconciled (one question
 * per key at a time, so a late "does not exist" can never settle a newer
 * intent of the same key). */
int outbound_reconcile_key(struct outbound *ob, const char *key,
                           void (*cb)(void *ud, int exists, const char *artifact), void *ud,
                           struct ga_err *err);
/* True when platform p has a port (what fulfilment waits for). */
bool outbound_has_port(const struct outbound *ob, enum conv_platform p);
/* True while key is being sent by a port or reconciled. */
bool outbound_key_busy(const struct outbound *ob, const char *key);
void outbound_close(struct outbound *ob, void (*done_cb)(void *ud), void *ud);

/* The derived idempotency key: sha256 hex of platform NUL target NUL text. */
void outbound_idem_key(enum conv_platform p, const char *target, const char *text, size_t len,
                       char out[65]);

#endif
