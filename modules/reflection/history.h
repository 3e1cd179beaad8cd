/*
 * history — the previous versions of SELF.md, kept so an owner can see and
 * undo what a reflection changed (`general-agent self diff`, `self revert`).
 *
 * Before SELF.md is replaced (by a reflection, or by `self revert`), the
 * version being replaced is written to
 *   <memory>/self-history/<YYYYMMDDTHHMMSSmmmZ>-<reason>.md
 * atomically (reason: "reflection", "revert"). Names sort by time, so the
 * newest file is the version SELF.md had before its last change. At most
 * SELF_HISTORY_KEEP files are kept (the oldest are deleted).
 *
 * selfhist_replace() is the one way SELF.md is written by this module:
 * history first, then the atomic write of SELF.md; if the history cannot be
 * written, SELF.md is not touched.
 */
#ifndef GA_MODULES_REFLECTION_HISTORY_H
#define GA_MODULES_REFLECTION_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define SELF_HISTORY_DIR      "self-history"
#define SELF_HISTORY_KEEP     20
#define SELF_HISTORY_NAME_MAX 64

/* Writes old (len bytes) to the history, prunes. *saved (may be NULL)
 * receives the path (caller frees). */
int selfhist_save(const char *memory_dir, const char *old, size_t len, const char *reason,
                  int64_t now_ms, char **saved, struct ga_err *err);

/* History then SELF.md (see above). old: the current text (NULL: read from
 * self_path; a missing SELF.md saves an empty version). */
int selfhist_replace(const char *memory_dir, const char *self_path, const char *new_text,
                     size_t new_len, const char *reason, int64_t now_ms, struct ga_err *err);

/* The names in the history, newest first (at most cap; caller frees each
 * and the array). Returns the count (0 when none or no directory). */
size_t selfhist_list(const char *memory_dir, char ***names_out);

/* The newest saved version: its text (caller frees) and name (into name,
 * cap bytes). NULL when the history is empty (err says so) or unreadable. */
char *selfhist_latest(const char *memory_dir, char *name, size_t cap, size_t *len,
                      struct ga_err *err);

#endif
