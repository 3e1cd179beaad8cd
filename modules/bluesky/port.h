/*
 * bluesky port — the outbound port for CONV_PLATFORM_BLUESKY
 * (modules/outbound/outbound.h struct outbound_port) on the AT Protocol
 * client (adapters/atproto): how a send that walked outbound becomes a
 * post, a reply, a like, a follow or a deletion, and how an unresolved
 * intent is reconciled.
 *
 * Targets (the canonical target keys; send permissions name them):
 *   "bluesky:post"            a top-level post. extra may be NULL or
 *                             {"langs": ["en", ...]}.
 *   "bluesky:reply:<did>"     a reply to a post by <did>. extra is REQUIRED:
 *                             {"reply": {"root":   {"uri": "at://…", "cid": "…"},
 *                                        "parent": {"uri": "at://…", "cid": "…"}},
 *                              "langs": ["en"]}            (langs optional)
 *                             "root" may be left out: it is then resolved
 *                             (atp_reply_resolve) before the post is made.
 *                             The parent URI's authority must be <did> (a
 *                             reply permission for one person cannot be used
 *                             to answer another).
 *   "bluesky:like:<did>"      a like of a post by <did> (react-only at
 *                             MAX_ACL, the graceful exit, auto-like). extra
 *                             is REQUIRED: {"subject": {"uri", "cid"}}; the
 *                             text is not posted (pass the subject URI as the
 *                             text, so outbound's dedup drops a second like
 *                             of the same post within its window). A like
 *                             goes through outbound like any send: the
 *                             permission "bluesky:like:<did>" (or a wildcard
 *                             the permissions allow), the journal and pacing.
 *   "bluesky:follow:<did>"    following <did> (peer discovery, §7.4). The
 *                             text MUST be <did> itself (outbound's dedup
 *                             then drops a second follow within its window);
 *                             extra is ignored. The record is
 *                             app.bsky.graph.follow {subject, createdAt,
 *                             gaKey}.
 *   "bluesky:delete"          deleting one of the agent's OWN records (feed
 *                             pruning). The text is the record's at:// URI;
 *                             a URI outside the session's repository (its
 *                             DID) is refused before any request ("… is not
 *                             in the agent's own repository"). Without a
 *                             session yet, the port signs in first and then
 *                             checks. The artifact is the deleted URI.
 * Anything else is refused at once (send returns non-zero naming the target).
 *
 * What is written: posts via atp_post_create (facets with byte offsets,
 * mentions resolved, 300 graphemes checked) with s->chain as ATP_FIELD_CHAIN
 * (when >= 0) and s->idem_key as ATP_FIELD_KEY; likes and follows with
 * ATP_FIELD_KEY.
 * The artifact is the new record's at:// URI. A write whose answer was lost
 * after it may have reached the PDS (a timeout, a 5xx: the client's
 * maybe_applied) ends OUTBOUND_PORT_UNKNOWN: outbound keeps the intent
 * until the reconcile below has asked.
 *
 * reconcile(idem_key, target): lists the agent's own most recent records of
 * the target's collection (ATP_PORT_RECONCILE_RECORDS, newest first) and
 * looks for ATP_FIELD_KEY == idem_key (for a follow also: a follow record
 * whose subject is the target's DID — one follow per account, whoever made
 * it): found → exists 1 with its URI; not found → 0 (the intent never
 * became a record; intents are reconciled at start, long before a hundred
 * newer records exist); the listing failed, or the target is not one of
 * ours → -1.
 * A delete is reconciled by the at:// URI its key ends with ("prune:at://…";
 * a key without one → -1): getRecord of it — RecordNotFound → exists 1 (the
 * record is gone: done, artifact the URI); the record is still there → 0
 * (not deleted: may be retried); any other answer, or a URI outside our
 * repository → -1. Intents journalled by older versions under the target
 * ATP_LEGACY_PRUNE_TARGET ("bluesky:prune", their hand-written prune
 * entries) are reconciled the same way (reconcile only: a send to it is
 * refused).
 *
 * Lifetime: the port borrows the client (port.ud). A send in flight when the
 * client is freed is answered (ok 0, "... cancelled: shutting down"). A send
 * may wait out a rate limit (up to atp_config.max_wait_ms), so at shutdown
 * call outbound_close() first (no new sends reach the port), then
 * atp_client_free() (the sends in flight are answered at once), then run
 * the loop until outbound's done_cb — rather than waiting for outbound to
 * drain before freeing the client.
 */
#ifndef GA_MODULES_BLUESKY_PORT_H
#define GA_MODULES_BLUESKY_PORT_H

#include <stddef.h>
#include <stdint.h>

#include "adapters/atproto/atproto.h"
#include "common/err.h"
#include "modules/outbound/outbound.h"

#define ATP_PORT_RECONCILE_RECORDS 100
#define ATP_LEGACY_PRUNE_TARGET    "bluesky:prune"
#define ATP_PORT_MIN_INTERVAL_MS                                                                   \
	((uint64_t)10 * 1000) /* §6.11: the pause between any two actions */

enum atp_target_kind {
	ATP_TARGET_POST,
	ATP_TARGET_REPLY,
	ATP_TARGET_LIKE,
	ATP_TARGET_FOLLOW,
	ATP_TARGET_DELETE,
};

/* Parses a target key; did (cap ATP_DID_MAX, may be NULL) receives the
 * <did> of reply / like / follow targets ("" for post and delete). -1 with err otherwise. */
int atp_target_parse(const char *target, enum atp_target_kind *kind, char *did, size_t cap,
                     struct ga_err *err);

/* Fills port for c (platform CONV_PLATFORM_BLUESKY, send, reconcile,
 * marker_in_text false). min_interval_ms 0 = ATP_PORT_MIN_INTERVAL_MS. */
void atp_port_init(struct outbound_port *port, struct atp_client *c, uint64_t min_interval_ms);

#endif
