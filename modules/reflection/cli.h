/*
 * self CLI — how an owner watches and undoes what reflection did to
 * SELF.md (docs/growth.md). Reads and writes files only; no daemon needs to
 * run (a running daemon re-reads SELF.md on SIGHUP or its next reflection).
 *
 *   general-agent self diff     what the last change did: the newest saved
 *                               version (<memory>/self-history/) against
 *                               the current SELF.md, unified-diff style
 *   general-agent self revert   restores the newest saved version; the
 *                               current SELF.md is kept in the history first
 *                               (reason "revert"), so a revert can itself be
 *                               reverted
 *   general-agent self history  the saved versions, newest first
 *
 * SELF.md is <cfg->home>/SELF.md, the history is under cfg->memory_dir.
 * argv holds the words after "self". Returns 0; 1 when there is nothing to
 * diff or revert or a file cannot be read or written (message on err);
 * 64 on a usage error.
 */
#ifndef GA_MODULES_REFLECTION_CLI_H
#define GA_MODULES_REFLECTION_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "common/config.h"

#define SELF_DIFF_CONTEXT   3
#define SELF_DIFF_MAX_CELLS ((size_t)16 * 1024 * 1024) /* LCS table bound */

int reflection_cli_self(int argc, char **argv, const struct ga_config *cfg, FILE *out, FILE *err);

/* Writes a unified diff of a → b (line based, SELF_DIFF_CONTEXT lines of
 * context) with the given labels. Texts too large for the LCS table are
 * shown as wholly replaced. Returns the number of changed lines. */
size_t self_diff(const char *a, const char *b, const char *label_a, const char *label_b, FILE *out);

#endif
