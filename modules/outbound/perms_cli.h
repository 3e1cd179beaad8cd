/*
 * perms_cli — `general-agent cross`, the send-permissions command (seed 002):
 *
 *   general-agent cross                  show mode, patterns, recent attempts
 *   general-agent cross mode MODE        bypass | allowlist | denylist
 *   general-agent cross allow PATTERN    add to the allowlist
 *   general-agent cross deny PATTERN     add to the denylist
 *   general-agent cross remove PATTERN   remove from both lists
 *   general-agent cross clear            back to bypass, no patterns
 *   general-agent cross check TARGET     would a send be allowed, and why
 *
 * argv[0] is "cross". Changes are written to <memory>/send_permissions.json
 * at once (atomically); a running daemon picks them up before its next send
 * (perms_refresh). Results go to out, errors to err.
 *
 * Exit status: 0 done (check: allowed); 1 check: denied; 64 usage error
 * (unknown subcommand, missing or extra argument, unknown mode); 65 a pattern
 * or target refused as malformed (the message names what is wrong), or the
 * permissions file is unreadable (only `cross clear` repairs it); 74 the
 * file could not be written.
 */
#ifndef GA_MODULES_OUTBOUND_PERMS_CLI_H
#define GA_MODULES_OUTBOUND_PERMS_CLI_H

#include <stdio.h>

#define PERMS_CLI_EX_OK      0
#define PERMS_CLI_EX_DENIED  1
#define PERMS_CLI_EX_USAGE   64
#define PERMS_CLI_EX_DATAERR 65
#define PERMS_CLI_EX_IOERR   74
/* How many audit entries `cross` shows. */
#define PERMS_CLI_AUDIT_SHOWN 5

int perms_cli(const char *memory_dir, const char *agent_name, int argc, char **argv, FILE *out,
              FILE *err);

#endif
