/*
 * decision log — every decision of every stage, on disk and in process
 * (docs/pipeline.md).
 *
 * Each decision_log_append() does four things:
 *   - appends one JSON object per line to <memory>/decisions.jsonl:
 *       {"time":"2026-11-23T10:01:02.345Z","platform":"space",
 *        "conversation":"space:room","messageId":"space:ab12…","stage":"gate",
 *        "verdict":"block","rule":"chain_length","reason":"chain 5 > MAX_ACL 4: …"}
 *     The file is rotated by size before a line would take it past
 *     DECISION_LOG_MAX_BYTES (decisions.jsonl.1 .. .DECISION_LOG_KEEP, the
 *     oldest dropped). A write failure is never fatal: it is logged as a
 *     warning at most once per DECISION_LOG_WARN_INTERVAL_MS (with the count
 *     of failures in between) and the decision still reaches subscribers and
 *     the ring;
 *   - logs the decision at DEBUG;
 *   - keeps an owned copy in a ring of the last DECISION_LOG_RECENT records
 *     (the oldest is dropped) for a subscriber that arrives late (the
 *     dashboard's backlog);
 *   - calls every subscriber (at most DECISION_LOG_MAX_SUBSCRIBERS).
 *
 * Strings are written as valid UTF-8 (an invalid byte becomes U+FFFD) and
 * each of platform, conversation, message id and rule is cut at
 * DECISION_LOG_FIELD_MAX_BYTES, so every line the log writes can be read
 * back (DECISION_LOG_LINE_MAX_BYTES).
 *
 * Reading (the CLI; no daemon needed): decision_log_read() walks the
 * backups oldest first, then the current file; torn or invalid lines and
 * lines that are not a decision record are skipped.
 *
 * Subscribers run synchronously inside decision_log_append(), on the one
 * loop thread. A subscriber may unsubscribe itself or another subscriber,
 * subscribe a new one (called from the next decision on), append another
 * decision, or close the log (freed once the outermost append returns).
 *
 * Ownership: everything passed to append is borrowed; records handed to
 * callbacks are borrowed for the duration of the call.
 */
#ifndef GA_MODULES_DECISIONS_LOG_H
#define GA_MODULES_DECISIONS_LOG_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "modules/decisions/decision.h"

#define DECISION_LOG_FILE             "decisions.jsonl"
#define DECISION_LOG_MAX_BYTES        ((size_t)8 * 1024 * 1024)
#define DECISION_LOG_KEEP             3
#define DECISION_LOG_RECENT           256
#define DECISION_LOG_MAX_SUBSCRIBERS  8
#define DECISION_LOG_WARN_INTERVAL_MS 60000
#define DECISION_LOG_FIELD_MAX_BYTES  1024
#define DECISION_LOG_LINE_MAX_BYTES   (64 * 1024)

/* One decision about one message at one stage. */
struct decision_record {
	int64_t time_ms;          /* epoch ms */
	const char *platform;     /* "space", "bluesky", "github", "owner" */
	const char *conversation; /* "space:room", ... ("" when none) */
	const char *message_id;   /* "space:<hex>", ... ("" when none) */
	enum decision_stage stage;
	struct decision decision; /* decision.rule may be NULL: written as "" */
};

typedef void (*decision_log_fn)(void *ud, const struct decision_record *rec);
/* For decision_log_read(): return 0 to go on, non-zero to stop. */
typedef int (*decision_read_fn)(void *ud, const struct decision_record *rec);

struct decision_log;

/* Opens (creating the directory if needed) <memory_dir>/decisions.jsonl for
 * appending. NULL with err when the directory cannot be created. */
struct decision_log *decision_log_open(const char *memory_dir, struct ga_err *err);
/* The same with another rotation size (tests; a small device). */
struct decision_log *decision_log_open_sized(const char *memory_dir, size_t max_bytes,
                                             struct ga_err *err);
/* NULL accepted. Inside a subscriber's callback the log is freed when the
 * outermost append returns. */
void decision_log_close(struct decision_log *log);

/* Records one decision (see above). A NULL log does nothing. Returns 0, or
 * -1 when the line could not be written (already logged; subscribers and
 * the ring had it anyway). */
int decision_log_append(struct decision_log *log, const struct decision_record *rec);

/* Convenience: builds the record from its parts. */
int decision_log_add(struct decision_log *log, int64_t time_ms, const char *platform,
                     const char *conversation, const char *message_id, enum decision_stage stage,
                     const struct decision *d);

/* Returns a subscription id (>= 1), or -1 when DECISION_LOG_MAX_SUBSCRIBERS
 * are subscribed already (or fn/log is NULL). */
int decision_log_subscribe(struct decision_log *log, decision_log_fn fn, void *ud);
/* Unknown ids are ignored. Safe from inside any subscriber's callback. */
void decision_log_unsubscribe(struct decision_log *log, int id);

/* Calls fn for the last min(max, held) records of the ring, oldest first
 * (max 0: all held, at most DECISION_LOG_RECENT). Returns how many. */
size_t decision_log_recent(const struct decision_log *log, size_t max, decision_log_fn fn,
                           void *ud);

/* Path of the current file (caller frees) and of backup n >= 1. */
char *decision_log_path(const char *memory_dir);
char *decision_log_backup_path(const char *memory_dir, int n);

/* Reads <memory_dir>/decisions.jsonl.DECISION_LOG_KEEP .. .1, then the
 * current file, calling fn for each record (only those about message_id when
 * it is not NULL). Missing files are empty. -1 with err on an I/O error. */
int decision_log_read(const char *memory_dir, const char *message_id, decision_read_fn fn, void *ud,
                      struct ga_err *err);

/* The stored form of a record: a JSON object (caller cJSON_Deletes) and the
 * line exactly as written (no '\n'; caller frees). */
cJSON *decision_record_to_json(const struct decision_record *rec);
char *decision_record_to_line(const struct decision_record *rec);
/* Parses a stored object; strings in out are borrowed from v. -1 when v is
 * not a decision record (a field missing or mistyped, an unknown stage or
 * verdict, a time that is not ISO-8601). */
int decision_record_from_json(const cJSON *v, struct decision_record *out);

#endif
