/*
 * experience — what happened to the agent that is worth growing from
 * (seed 004 "How the SOUL Develops"; runtime-bluesky.md §7.2).
 *
 * An experience is a sentence about one interaction — what happened, with
 * whom, where, why it mattered — never a counter ("answered Ada's question
 * about OAuth edge cases in space:room", not "5 replies sent").
 *
 * The rule for "meaningful" (exp_from_decision, pure). The store is fed
 * from two places:
 *   1. the decision log (every stage of every message; the service
 *      subscribes and calls exp_from_decision on each record). Meaningful:
 *        - the owner said something (stage event, rule "event", live not
 *          history; at the terminal — platform "owner" — or anywhere else
 *          as author kind owner: a Bluesky post, the room)  → owner_guidance
 *          (every owner conversation, without exception; the rest of the
 *          owner's walk is the same conversation, not another experience);
 *        - the agent answered a person (host or human: stage record, rule
 *          "answered")                                    → helped_someone
 *        - the agent answered a peer agent                → connection_formed
 *        - the agent took on a commitment in the room (stage record, rule
 *          "commitment", verdict info)                    → helped_someone
 *        - the agent carried a commitment out (stage record, rule
 *          "commitment", verdict sent: modules/fulfil)    → helped_someone
 *        - the validator rejected the agent's own draft (stage validator,
 *          verdict reject: moderation said no)            → was_challenged
 *        - the agent decided to stay silent when addressed directly (stage
 *          compose, rule "declined", on a message addressed to it)
 *                                                         → chose_silence
 *      Everything else — gate blocks, pacing, dedup, sends, claims, history
 *      replays — is mechanics, not experience, and is not recorded.
 *   2. explicit calls (exp_store_add, reflection_add_experience) for a
 *      module that knows more than the decision log says. No module makes
 *      one today: Bluesky and the room reach the store through (1) only
 *      (a Bluesky reply is "answered" like a room reply; the owner's post
 *      is owner_guidance), and a ritual's opening or an expression post is
 *      a send of our own, not an experience (§7.2's ritual
 *      learned_something is not implemented). bench/idle-tokens calls it.
 *
 * Dedup: the same type with the same first EXP_DEDUP_PREFIX characters of
 * `what` (case-insensitive) within EXP_DEDUP_WINDOW_MS is skipped.
 *
 * Store: <memory>/experiences.jsonl, one JSON object per line: an
 * experience {"id","type","time","what","who","where","why"} or an
 * integration mark {"integrated":[ids],"time"}. Loading replays the lines.
 * Bounds: at most EXP_MAX_PENDING unintegrated experiences are held (the
 * oldest pending one is dropped, logged); integrated ones are kept
 * EXP_KEEP_INTEGRATED_MS and at most EXP_MAX_HELD in all. When the file
 * passes EXP_FILE_MAX_BYTES it is rotated (experiences.jsonl.1 ..
 * .EXP_FILE_KEEP) and the held experiences are written to a fresh file, so
 * nothing pending is lost. Strings are cut at EXP_TEXT_MAX bytes on a UTF-8
 * boundary.
 *
 * Ownership: the store copies what it is given; pointers it returns are
 * valid until the next call that changes it.
 */
#ifndef GA_MODULES_REFLECTION_EXPERIENCE_H
#define GA_MODULES_REFLECTION_EXPERIENCE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "modules/decisions/log.h"

#define EXP_FILE               "experiences.jsonl"
#define EXP_FILE_MAX_BYTES     ((size_t)1024 * 1024)
#define EXP_FILE_KEEP          2
#define EXP_MAX_PENDING        50
#define EXP_MAX_HELD           200
#define EXP_KEEP_INTEGRATED_MS (30LL * 24 * 60 * 60 * 1000)
#define EXP_DEDUP_WINDOW_MS    (24LL * 60 * 60 * 1000)
#define EXP_DEDUP_PREFIX       50
#define EXP_TEXT_MAX           1000
#define EXP_LINE_MAX           (16 * 1024)

enum exp_type {
	EXP_OWNER_GUIDANCE,
	EXP_LEARNED_SOMETHING,
	EXP_HELPED_SOMEONE,
	EXP_WAS_CHALLENGED,
	EXP_IDEA_RESONATED,
	EXP_QUESTION_EMERGED,
	EXP_CONNECTION_FORMED,
	EXP_SAW_PERSPECTIVE,
	EXP_CHOSE_SILENCE,
	EXP_TYPE_COUNT,
};

/* What a caller gives (all borrowed; who/where/why may be NULL). */
struct exp_in {
	enum exp_type type;
	const char *what;  /* required, non-blank */
	const char *who;   /* the person or peer ("" when none) */
	const char *where; /* the conversation ("space:room", "owner:terminal") */
	const char *why;   /* why it mattered */
};

struct experience {
	char id[40]; /* "exp_<ms>_<6 hex>" */
	enum exp_type type;
	int64_t time_ms;
	char *what, *who, *where, *why;
	bool integrated;
};

struct exp_store;

/* Opens <memory_dir>/experiences.jsonl (creating the directory) and
 * replays it. NULL with err when the directory cannot be used. */
struct exp_store *exp_store_open(const char *memory_dir, struct ga_err *err);
void exp_store_free(struct exp_store *s);

/* Records an experience. Returns 1 added, 0 skipped (a duplicate, see
 * above), -1 with err (blank `what`, unknown type, the file could not be
 * written — the experience is still held in memory then). */
int exp_store_add(struct exp_store *s, const struct exp_in *in, int64_t now_ms, struct ga_err *err);

/* Marks these ids integrated (unknown ids ignored), drops integrated ones
 * older than EXP_KEEP_INTEGRATED_MS, appends the mark. */
int exp_store_mark_integrated(struct exp_store *s, const char *const *ids, size_t n, int64_t now_ms,
                              struct ga_err *err);

size_t exp_store_count(const struct exp_store *s);
size_t exp_store_pending(const struct exp_store *s);
/* Held experiences, oldest first; NULL when out of range. */
const struct experience *exp_store_at(const struct exp_store *s, size_t i);

/* "owner_guidance", ... and back (-1 when unknown). */
const char *exp_type_name(enum exp_type t);
int exp_type_parse(const char *s);
/* The heading reflection groups this type under ("Owner guidance", ...). */
const char *exp_type_label(enum exp_type t);

/* The "meaningful" rule above (pure). rec is the decision; text/author are
 * what the conversation store knows about the message (text and author may
 * be NULL: the decision's reason is used); author_kind is a
 * conv_author_kind or -1 when unknown; addressed_me whether the message
 * was addressed to the agent. Fills out (its strings point into buf of
 * cap bytes) and returns true when the decision is an experience. */
struct exp_source {
	const struct decision_record *rec;
	const char *text;
	const char *author;
	int author_kind;
	bool addressed_me;
	bool from_history;
};
bool exp_from_decision(const struct exp_source *src, struct exp_in *out, char *buf, size_t cap);

/* Experiences as a JSON object (id, type, time, what, who, where, why,
 * integrated); caller frees. */
cJSON *exp_to_json(const struct experience *e);

#endif
