/*
 * journal — the intent → done journal of external side effects (DESIGN.md
 * "State"). Before a post, a comment or an issue is sent, its
 * idempotency key is written as an *intent*; after, as *done* (with the
 * artifact: a URI, an issue URL) or *failed*. After a crash, an intent
 * without done/failed is what journal_pending lists: the platform's port is
 * asked whether the artifact exists before anything is retried (at most once
 * beats twice).
 *
 * File: <memory>/journal.jsonl, one JSON line per record:
 *   {"op":"intent","key":"…","platform":"…","target":"…","payload":{…},"time":"<ISO>","ms":<ms>}
 *   {"op":"done","key":"…","artifact":"…","time":"…","ms":…}
 *   {"op":"failed","key":"…","error":"…","time":"…","ms":…}
 * Every record is written in one write(2) and fsync'ed before the call
 * returns (the file's directory too, when the file is new): when
 * journal_intent returns 0 the intent survives a crash or power loss. Opening
 * replays the file; a torn or invalid line is skipped with a warning, and a
 * last line without '\n' is terminated so the next record starts clean.
 *
 * Rules of use:
 * - Check journal_state_of first. journal_intent refuses a key that is
 *   already DONE ("already done": the side effect happened; do not repeat it)
 *   or has a pending INTENT (reconcile it first). A FAILED key may be
 *   intended again (a retry with the same key).
 * - journal_done / journal_failed settle a pending intent. Settling a key
 *   with no pending intent is refused, except that journal_done on a key
 *   already DONE with the same artifact is a no-op returning 0.
 * - Keys: 1..JOURNAL_KEY_MAX bytes of printable ASCII (0x21..0x7e), refused
 *   otherwise; platform and target: at most JOURNAL_FIELD_MAX bytes; a
 *   serialised payload at most JOURNAL_PAYLOAD_MAX bytes; artifact and error
 *   at most JOURNAL_FIELD_MAX bytes (an error is cut, an artifact refused).
 *
 * Bounds: the in-memory index holds at most JOURNAL_MAX_KEYS keys. A new key
 * when full forgets the oldest settled key (it reads JOURNAL_NONE from then
 * on); when every key is a pending intent, journal_intent is refused.
 * Memory: pending intents and the JOURNAL_RECENT_SETTLED most recently
 * settled keys are held whole (key, fields, artifact or error); an older
 * settled key is held as 128 bits of its key's SHA-256 and its state, in a
 * table preallocated at open (24 bytes a key): its state reads as before,
 * and its artifact or error is read back from the file when asked for (a
 * read of the file on the caller's thread; rare: a side effect asked for
 * again after JOURNAL_RECENT_SETTLED others were settled). So the index's
 * heap does not grow with the keys it holds. When
 * the file passes JOURNAL_MAX_BYTES (and has doubled since the last
 * compaction) it is COMPACTED: rewritten atomically (fsx_write_atomic) with
 * every pending intent and the JOURNAL_KEEP_SETTLED most recently settled
 * keys; older settled keys are dropped. A pending intent is never dropped.
 *
 * Ownership: struct journal is opaque, owned by the caller of journal_open,
 * single-threaded. Strings returned are borrowed until the next call that
 * writes to the journal or reads an artifact or error (copy one before
 * asking for another).
 */
#ifndef GA_MODULES_JOURNAL_JOURNAL_H
#define GA_MODULES_JOURNAL_JOURNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define JOURNAL_FILE         "journal.jsonl"
#define JOURNAL_MAX_KEYS     4096
#define JOURNAL_KEEP_SETTLED 1024
/* Settled keys held whole (<= JOURNAL_KEEP_SETTLED); older ones compactly. */
#define JOURNAL_RECENT_SETTLED 64
#define JOURNAL_MAX_BYTES      (4 * 1024 * 1024)
#define JOURNAL_KEY_MAX        128
#define JOURNAL_FIELD_MAX      2048
#define JOURNAL_PAYLOAD_MAX    (64 * 1024)

struct journal;

enum journal_state { JOURNAL_NONE, JOURNAL_INTENT, JOURNAL_DONE, JOURNAL_FAILED };

/* Opens (creating the directory if needed) and replays <memory>/journal.jsonl.
 * NULL with err when the directory or file cannot be read. */
struct journal *journal_open(const char *memory_dir, struct ga_err *err);
void journal_close(struct journal *j); /* NULL ok */

/* Durable before it returns 0. -1 with err: bad key or field, "already done",
 * already pending, index full of pending intents, or the write/fsync failed
 * (then nothing is recorded in memory and the side effect must not happen). */
int journal_intent(struct journal *j, const char *key, const char *platform, const char *target,
                   const cJSON *payload /* may be NULL */, int64_t now_ms, struct ga_err *err);
int journal_done(struct journal *j, const char *key, const char *artifact /* may be NULL */,
                 int64_t now_ms, struct ga_err *err);
int journal_failed(struct journal *j, const char *key, const char *error, int64_t now_ms,
                   struct ga_err *err);

enum journal_state journal_state_of(const struct journal *j, const char *key);
const char *journal_artifact(const struct journal *j, const char *key); /* NULL when none */
const char *journal_error(const struct journal *j, const char *key);    /* NULL when none */

/* Calls fn for every intent without done/failed, oldest intent first (ties in
 * the order written). payload is NULL when none was given. Returns the count. */
size_t journal_pending(const struct journal *j,
                       void (*fn)(void *ud, const char *key, const char *platform,
                                  const char *target, const cJSON *payload, int64_t intent_ms),
                       void *ud);

/* Keys held in memory (pending + settled), and the file's size in bytes. */
size_t journal_count(const struct journal *j);
/* Keys held whole in memory: the pending ones and at most
 * JOURNAL_RECENT_SETTLED settled ones (the others are held compactly). */
size_t journal_whole_count(const struct journal *j);
size_t journal_file_bytes(const struct journal *j);

/* Rewrites the file now (as the automatic compaction does). For tests and an
 * operator command; 0 or -1 with err (the old file is then intact). */
int journal_compact(struct journal *j, struct ga_err *err);

/* Name of a state ("none", "intent", "done", "failed"). */
const char *journal_state_name(enum journal_state s);

#endif
