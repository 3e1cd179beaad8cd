/*
 * spacecfg — the room's runtime configuration, memory/space-config.json
 * (space-validation.md §13.2–§13.3): cooldown after speaking, reply delay,
 * reflection cadence, behaviour notes, and when and why they were last
 * adjusted. The model adjusts them through the decision's adjustBehavior;
 * a person may edit the file; the engine re-reads it every tick (hot
 * reload, no restart).
 *
 * Values are checked (§13.3): a value of the wrong type is refused with a
 * message naming the field (the string "30000" is not the number 30000);
 * numbers are rounded and clamped to the spec's ranges; max below min is
 * raised to min; the file is bounded (SPACECFG_MAX_BYTES) and written
 * atomically; checkIntervalMs and reconnectIntervalMs are read and kept
 * (files of ts-general-agent agents carry them) but drive nothing (the
 * tick's interval is jittered per agent, reconnects follow
 * GA_SPACE_BACKOFF_MS). A file of another `_memoryVersion` is read as
 * defaults (the spec's rule), with a note.
 *
 * Pure except load/save (files only). Strings are bounded: behaviorNotes
 * SPACECFG_NOTES_MAX bytes, lastAdjustedReason SPACECFG_REASON_MAX.
 */
#ifndef GA_MODULES_PARTICIPATION_SPACECFG_H
#define GA_MODULES_PARTICIPATION_SPACECFG_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define SPACECFG_FILE       "space-config.json"
#define SPACECFG_MAX_BYTES  (64 * 1024)
#define SPACECFG_NOTES_MAX  2048
#define SPACECFG_REASON_MAX 512

struct space_cfg {
	int64_t check_interval_ms;     /* 5000, 2000–30000 (not used) */
	int64_t reconnect_interval_ms; /* 300000, 30000–1800000 (not used) */
	int64_t cooldown_min_ms;       /* 10000, 3000–120000 */
	int64_t cooldown_max_ms;       /* 20000, 3000–300000 */
	int64_t reply_delay_min_ms;    /* 1000, 500–10000 */
	int64_t reply_delay_max_ms;    /* 3000, 500–30000 */
	int64_t reflection_every_n;    /* 5, 1–50 */
	char behavior_notes[SPACECFG_NOTES_MAX];
	char last_adjusted_at[32]; /* ISO time, "" never */
	char last_adjusted_reason[SPACECFG_REASON_MAX];
};

void space_cfg_defaults(struct space_cfg *c);

/* Copies the known fields of obj into c (unknown keys are ignored, a field
 * of the wrong type is refused). Appends one sentence per refusal to
 * problems (may be NULL). Returns the number of refusals. Enforces the
 * clamps and max >= min. */
int space_cfg_apply(struct space_cfg *c, const cJSON *obj, struct strbuf *problems);

/* Reads <memory_dir>/space-config.json into c: missing → defaults (0);
 * unreadable, too large, not a JSON object, or of another _memoryVersion →
 * defaults, with a sentence in problems; fields refused as in apply.
 * Returns the number of problems. */
int space_cfg_load(const char *memory_dir, const char *version, struct space_cfg *c,
                   struct strbuf *problems);

/* adjustBehavior: load, apply adjust, stamp lastAdjustedAt (now) and
 * lastAdjustedReason (reason, cut), save atomically with _memoryVersion.
 * Returns the number of refused fields, or -1 when the file could not be
 * written (problems says why). */
int space_cfg_update(const char *memory_dir, const char *version, const cJSON *adjust,
                     const char *reason, int64_t now_ms, struct strbuf *problems);

/* The file's JSON (caller deletes). */
cJSON *space_cfg_to_json(const struct space_cfg *c, const char *version);

/* The prompt's lines (§13.3): "Cooldown after speaking: 10.0s–20.0s", "Reply
 * delay: …", "Reflection every N messages", notes, "Last adjusted: …". */
void space_cfg_render(const struct space_cfg *c, struct strbuf *out);

#endif
