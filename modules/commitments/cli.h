/*
 * commitments CLI — `general-agent commitments [--json] [--all]`: what the
 * agent promised and where each promise stands (modules/commitments/
 * ledger.h), with the artifact (issue URL, …) the journal recorded for it
 * when it was carried out (modules/journal). Reads the files; no daemon
 * needs to run.
 *
 *   commitments          the open ones (pending, in progress, failed) and the
 *                        last closed ones, one per line: id, status, action,
 *                        source, attempts, age, artifact or last error
 *   commitments --json   one JSON object per line
 *
 * argv holds only the options. Returns 0, 1 when the ledger cannot be read,
 * 64 on a usage error (message on err).
 */
#ifndef GA_MODULES_COMMITMENTS_CLI_H
#define GA_MODULES_COMMITMENTS_CLI_H

#include <stdio.h>

int commitments_cli(const char *memory_dir, int argc, char **argv, FILE *out, FILE *err);

#endif
