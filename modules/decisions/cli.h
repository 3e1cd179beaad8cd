/*
 * decisions CLI — `general-agent decisions` and `general-agent why`, as
 * functions the dispatcher in cmd/ calls and tests call with tmpfile()
 * streams. Both read <memory>/decisions.jsonl and its backups (log.h); no
 * daemon needs to run.
 *
 *   decisions [--tail N] [--follow] [--json]
 *     the last N decisions (default DECISIONS_CLI_TAIL_DEFAULT; 0 = all; at
 *     most DECISIONS_CLI_TAIL_MAX), oldest first, one per line: time,
 *     platform, stage, verdict, rule, reason, and the whole message id last
 *     so it can be pasted into `why`:
 *       2026-11-23T10:01:02Z  space    gate       block    chain_length
 *         chain 5 > MAX_ACL 4: blocked, not even a reaction  [space:ab12…]
 *     (one line on screen; two here). --json prints the stored JSONL lines
 *     instead. --follow then keeps printing decisions as they are appended
 *     (the file is polled every DECISIONS_CLI_POLL_MS; a rotation is
 *     followed by noticing the inode change or the size shrink; a file
 *     rotated in and out again within one poll is not seen) until
 *     SIGINT/SIGTERM or until `out` is closed (EPIPE), both a clean exit (0).
 *
 *   why MESSAGE_ID [--json]
 *     every decision about one message, in order: a header naming the
 *     message (platform, conversation), then one line per decision
 *       10:01:02.345  gate       block    chain_length          chain 5 > MAX_ACL 4: …
 *     A unique prefix of a message id is accepted (the match is named on
 *     err); an ambiguous one lists the candidates (at most
 *     DECISIONS_CLI_MAX_CANDIDATES) on err.
 *
 * argv holds only the options: what follows `decisions`, or what follows
 * the message id of `why` (no program name, no command word).
 * Text output replaces control characters with '?' so a logged reason
 * cannot drive the terminal.
 *
 * Returns 0 done, 1 nothing found (why) or the log could not be read,
 * 64 usage error (message on err).
 */
#ifndef GA_MODULES_DECISIONS_CLI_H
#define GA_MODULES_DECISIONS_CLI_H

#include <stdio.h>

#define DECISIONS_CLI_TAIL_DEFAULT   20
#define DECISIONS_CLI_TAIL_MAX       1000000
#define DECISIONS_CLI_POLL_MS        200
#define DECISIONS_CLI_MAX_CANDIDATES 20
#define DECISIONS_CLI_EXIT_USAGE     64

int decisions_cli_list(const char *memory_dir, int argc, char **argv, FILE *out, FILE *err);
int decisions_cli_why(const char *memory_dir, const char *message_id, int argc, char **argv,
                      FILE *out, FILE *err);

#endif
