/*
 * ledger — the durable intake of commitments: what the agent promised (or
 * was told by its owner) to do on Bluesky or GitHub, written down before
 * anything is attempted, so a crash or a missing client never loses a
 * promise.
 *
 * Each commitment is one JSON line in <memory>/commitments.jsonl:
 *   {"id":"commitment-<ms>-<16 hex>","createdAt":"…","action":"create_issue",
 *    "source":"owner","status":"pending","params":{…}}
 * The 16 hex digits are the first 16 of SHA-256("<source>:<action>:<params>")
 * with params serialised compactly; an identical commitment enqueued again
 * while the first is still in the ledger's memory (the last
 * LEDGER_RECENT_MAX) is reported as a duplicate and not written twice
 * (runtime-bluesky.md §3.2 "Commitment": the reference's dedup rule).
 *
 * The fulfilment pipeline (a later module) reads this file; until it
 * exists, commitments wait here. The file rotates at LEDGER_MAX_BYTES
 * keeping LEDGER_KEEP backups.
 */
#ifndef GA_MODULES_LEDGER_H
#define GA_MODULES_LEDGER_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/err.h"

#define LEDGER_FILE "commitments.jsonl"
#define LEDGER_MAX_BYTES (10 * 1024 * 1024)
#define LEDGER_KEEP 3
#define LEDGER_RECENT_MAX 256
#define LEDGER_ID_MAX 64

struct ledger {
	char *path;
	char recent[LEDGER_RECENT_MAX][17];
	unsigned n_recent;
	unsigned next;
};

/* Loads the dedup keys of the commitments already in the file. */
int ledger_open(struct ledger *l, const char *memory_dir, struct ga_err *err);
void ledger_close(struct ledger *l);

enum ledger_result { LEDGER_ADDED, LEDGER_DUPLICATE };

/* Appends a pending commitment. id_out (LEDGER_ID_MAX bytes) receives its
 * id (for a duplicate, "commitment-<now>-<key>": the key is the earlier
 * one's, the time is not). Returns LEDGER_ADDED or
 * LEDGER_DUPLICATE, or -1 with err when the file cannot be written. */
int ledger_add(struct ledger *l, const char *action, const char *source, const cJSON *params,
	       int64_t now_ms, char id_out[LEDGER_ID_MAX], struct ga_err *err);

#endif
