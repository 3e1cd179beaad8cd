/*
 * ledger — the durable intake of commitments: what the agent promised (or
 * was told by its owner) to do on Bluesky or GitHub, written down before
 * anything is attempted, so a crash or a missing client never loses a
 * promise.
 *
 * <memory>/commitments.jsonl is append-only; each line is fsync'ed before
 * the call returns. Two kinds of line:
 *   a commitment   {"id":"commitment-<ms>-<16 hex>","createdAt":"…",
 *                   "action":"create_issue","source":"owner","status":"pending",
 *                   "params":{…}}   (a compacted file adds "attemptCount",
 *                   "updatedAt" and "error" to carry the current state)
 *   a status       {"id":"…","status":"in_progress","updatedAt":"…","ms":…,
 *                   "error":"…"}
 * On open the file is replayed; the last status of an id wins. A torn or
 * invalid line is skipped with a warning.
 *
 * Statuses and transitions (specs/github-commitments.md §2.5):
 *   pending → in_progress; failed → in_progress (a retry);
 *   in_progress → completed | failed (attemptCount + 1);
 *   pending | in_progress | failed → abandoned (+1 only from in_progress).
 * completed and abandoned are final. Any other change is refused; setting
 * the status an entry already has is a no-op returning 0.
 *
 * Duplicates: the 16 hex digits of an id are the first 16 of
 * SHA-256("<source>:<action>:<params>") with params serialised compactly. A
 * commitment whose key matches an *open* one (pending, in_progress, failed)
 * is a duplicate and is not written (§2.4: only completed or abandoned ones
 * let the same commitment be queued again).
 *
 * The journal: each commitment has a stable idempotency key,
 * "commitment:<id>" (ledger_idem_key), which its fulfilment passes as the
 * outbound message's idem_key, so the intent → done journal
 * (modules/journal) answers "was this already done?" after a crash.
 *
 * Bounds: at most LEDGER_MAX_OPEN open commitments (ledger_add refuses
 * beyond, naming the limit) and the LEDGER_KEEP_CLOSED most recently closed
 * ones in memory (the one closed longest ago is forgotten first). When the file
 * passes LEDGER_MAX_BYTES (and has doubled since the last compaction) it is
 * COMPACTED: rewritten atomically with one line per commitment in memory. An
 * open commitment is never dropped; nothing is rotated away.
 *
 * Ownership: struct ledger is the caller's (by value); single-threaded.
 */
#ifndef GA_MODULES_COMMITMENTS_LEDGER_H
#define GA_MODULES_COMMITMENTS_LEDGER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define LEDGER_FILE         "commitments.jsonl"
#define LEDGER_MAX_BYTES    (10 * 1024 * 1024)
#define LEDGER_MAX_OPEN     1024
#define LEDGER_KEEP_CLOSED  256
#define LEDGER_ID_MAX       64
#define LEDGER_FIELD_MAX    128         /* action, source */
#define LEDGER_PARAMS_MAX   (64 * 1024) /* serialised params */
#define LEDGER_ERROR_MAX    1024        /* an error text is cut here */
#define LEDGER_IDEM_PREFIX  "commitment:"
#define LEDGER_IDEM_KEY_MAX (sizeof LEDGER_IDEM_PREFIX + LEDGER_ID_MAX)

enum ledger_status {
	LEDGER_PENDING,
	LEDGER_IN_PROGRESS,
	LEDGER_COMPLETED,
	LEDGER_FAILED,
	LEDGER_ABANDONED,
};
#define LEDGER_STATUS_COUNT 5

struct ledger_item;

struct ledger {
	char *path;                 /* NULL when the ledger could not be opened */
	struct ledger_item **items; /* creation order, oldest first */
	size_t n;
	size_t cap;
	size_t n_open;
	size_t file_bytes;
	size_t compacted_bytes;
};

/* One commitment as iteration and lookup show it. Every pointer is borrowed
 * until the next call that writes to the ledger. */
struct ledger_entry {
	const char *id;
	const char *action;
	const char *source;
	const cJSON *params;
	enum ledger_status status;
	int64_t created_ms;
	int64_t updated_ms; /* the last status change (created_ms at first) */
	int attempts;       /* finished attempts */
	const char *error;  /* the last error, or NULL */
	const char *link;   /* what was made (the URL, …), or NULL */
};

/* Replays the file. -1 with err when the directory or the file cannot be
 * read; ledger_add and ledger_set_status then refuse, naming the reason. */
int ledger_open(struct ledger *l, const char *memory_dir, struct ga_err *err);
void ledger_close(struct ledger *l); /* NULL ok */

enum ledger_result { LEDGER_ADDED, LEDGER_DUPLICATE };

/* Appends a pending commitment. id_out (LEDGER_ID_MAX bytes) receives its
 * id; for a duplicate, the id of the open commitment it duplicates. Returns
 * LEDGER_ADDED or LEDGER_DUPLICATE, or -1 with err: the ledger is not open,
 * action/source empty, over LEDGER_FIELD_MAX or not UTF-8, params over
 * LEDGER_PARAMS_MAX or not UTF-8, LEDGER_MAX_OPEN already open, or the write
 * or fsync failed (then nothing is recorded). */
int ledger_add(struct ledger *l, const char *action, const char *source, const cJSON *params,
               int64_t now_ms, char id_out[LEDGER_ID_MAX], struct ga_err *err);

/* Durable before it returns 0. error (may be NULL; cut at LEDGER_ERROR_MAX
 * bytes) is kept as the entry's last error when given. -1 with err: unknown
 * id, a transition the table above refuses, or the write failed. */
int ledger_set_status(struct ledger *l, const char *id, enum ledger_status status, int64_t now_ms,
                      const char *error, struct ga_err *err);

/* ledger_set_status that also records what was made (link, may be NULL:
 * kept as it was). */
int ledger_set_result(struct ledger *l, const char *id, enum ledger_status status, int64_t now_ms,
                      const char *error, const char *link, struct ga_err *err);

/* 0 and *out filled, or -1 when the id is not in memory. */
int ledger_get(const struct ledger *l, const char *id, struct ledger_entry *out);

/* Calls fn for every commitment in memory, oldest first; returns the count.
 * fn must not write to the ledger. */
size_t ledger_each(const struct ledger *l, void (*fn)(void *ud, const struct ledger_entry *e),
                   void *ud);

/* Commitments in memory with that status. */
size_t ledger_count(const struct ledger *l, enum ledger_status status);
/* The file's size in bytes. */
size_t ledger_file_bytes(const struct ledger *l);

/* Rewrites the file now, as the automatic compaction does. 0, or -1 with
 * err (the old file is then intact). */
int ledger_compact(struct ledger *l, struct ga_err *err);

/* "commitment:<id>": the journal key of this commitment's side effect. */
void ledger_idem_key(const char *id, char out[LEDGER_IDEM_KEY_MAX]);

/* "pending", "in_progress", "completed", "failed", "abandoned". */
const char *ledger_status_name(enum ledger_status s);
/* The status of a name, or -1 for an unknown one. */
int ledger_status_parse(const char *name);
/* pending, in_progress and failed are open; completed and abandoned are not. */
bool ledger_status_open(enum ledger_status s);

#endif
