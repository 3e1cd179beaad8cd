/*
 * space/store — the room's JSONL event log, its rotation, and the history
 * replayed to joiners (space-protocol.md §4).
 *
 * Format: <dir>/chat.jsonl, one compact JSON object per line with keys
 * timestamp, agentName, agentId, type, content. After an append that makes
 * the file larger than rotate_bytes, chat.4→5 … chat.1→2, chat→chat.1
 * (at most SPACE_STORE_BACKUPS backups; the oldest is overwritten).
 *
 * History: the newest entries are kept in memory (at most
 * SPACE_HISTORY_MAX_ENTRIES entries and history_max_bytes bytes, oldest
 * dropped first), loaded at open from the tail of chat.jsonl and then
 * chat.1.jsonl, and extended by every append: a join never re-reads the
 * file (§9 items 3, 4, 17). A torn last line is terminated at open so it
 * never swallows the next entry; lines that are not valid JSON objects are skipped and do not count
 * against the limit; a history_response never exceeds history_max_bytes.
 *
 * Write failures (disk full, permissions) are logged and otherwise ignored:
 * the message is still broadcast. One thread only.
 */
#ifndef GA_SPACE_STORE_H
#define GA_SPACE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "space/buf.h"

#define SPACE_STORE_LOG_NAME           "chat.jsonl"
#define SPACE_STORE_BACKUPS            5
#define SPACE_LOG_ROTATE_BYTES_DEFAULT ((size_t)50 * 1024 * 1024)
/* The protocol's history replay bound (HISTORY_REPLAY_MAX). */
#define SPACE_HISTORY_MAX_ENTRIES 1000
/* Bound on one history_response (and on the in-memory history). The Node
 * client accepts 100 MiB; 4 MiB keeps a joiner's first reply well inside
 * the 8 MiB per-connection send queue. */
#define SPACE_HISTORY_MAX_BYTES_DEFAULT ((size_t)4 * 1024 * 1024)
/* Longest log line read back at open; longer ones are skipped as bad. */
#define SPACE_STORE_MAX_LINE ((size_t)4 * 1024 * 1024)

struct space_store;

/* Creates dir (mkdir -p) and loads the history. NULL with err when the
 * directory cannot be created. rotate_bytes 0 → default; history_max_bytes
 * 0 → default. */
struct space_store *space_store_open(const char *dir, size_t rotate_bytes, size_t history_max_bytes,
                                     struct ga_err *err);
void space_store_free(struct space_store *st);

/* Appends one entry. ts is the ISO timestamp also used in the broadcast.
 * content is a string of content_len bytes (JSON-escaped here). */
void space_store_append(struct space_store *st, const char *ts, const char *name, const char *id,
                        const char *type, const char *content, size_t content_len);

/* {"type":"history_response","entries":[...]} with the newest `limit`
 * entries (oldest first), within the byte bound. Caller owns the ref. */
struct space_buf *space_store_history(struct space_store *st, size_t limit);

/* Number of entries currently held for replay (tests). */
size_t space_store_history_count(const struct space_store *st);

/* Path of the active log (borrowed). */
const char *space_store_path(const struct space_store *st);

#endif
