/*
 * audit — the send audit (seed 002 phase 3): EVERY send
 * attempt, allowed or denied, is one line of <memory>/send_audit.jsonl:
 *   {"time":"<ISO-8601>","time_ms":N,"source":"space","target":"...",
 *    "verdict":"allow"|"deny","pattern":"..."|null,"reason":"..."}
 * The outbound stage writes it at the permission step, before dedup, so a
 * send later dropped as a duplicate is still on record as an attempt.
 *
 * Bounds: before each append the file is rotated when it reaches
 * AUDIT_MAX_BYTES (send_audit.jsonl.1 .. .AUDIT_KEEP, oldest dropped);
 * fields are cut at AUDIT_FIELD_MAX bytes. audit_tail() keeps at most
 * AUDIT_TAIL_MAX entries.
 */
#ifndef GA_MODULES_OUTBOUND_AUDIT_H
#define GA_MODULES_OUTBOUND_AUDIT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define AUDIT_FILE_NAME "send_audit.jsonl"
#define AUDIT_MAX_BYTES ((size_t)4 * 1024 * 1024)
#define AUDIT_KEEP      3
#define AUDIT_FIELD_MAX 1024
#define AUDIT_TAIL_MAX  1000

struct audit_entry {
	int64_t time_ms;
	const char *source; /* "space", "owner", "bluesky", "github", "commitment", ... */
	const char *target; /* as asked (not canonicalised) */
	bool allowed;
	const char *pattern; /* the pattern that decided, NULL/"" none */
	const char *reason;
};

/* Appends one line to <memory_dir>/send_audit.jsonl (rotating first). */
int audit_append(const char *memory_dir, const struct audit_entry *e, struct ga_err *err);

/* The last n (<= AUDIT_TAIL_MAX) entries of the current file, oldest first,
 * as a JSON array (caller frees with cJSON_Delete). Never NULL: a missing or
 * unreadable file gives an empty array. */
cJSON *audit_tail(const char *memory_dir, int n);

#endif
