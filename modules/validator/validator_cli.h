/*
 * validator_cli — `general-agent validate`, the tuning tool for the
 * validator and the echo detector.
 *
 *   general-agent validate [--mode action|discussion] [--history FILE]
 *                          [--json] [more context flags] TEXT
 *
 * Prints the verdict, the rule, the reason and every score (the echo scores
 * are computed against the history even when an earlier check decided).
 * argv[0] is "validate". Writes to stdout (results) and stderr (errors).
 *
 * Exit status: 0 whenever a verdict was printed (accept, reject, trim or
 * refer alike — read the verdict, not the status), 64 on a usage error
 * (unknown flag, missing TEXT, bad value), 65 when the history file cannot
 * be read or holds a bad line.
 */
#ifndef GA_MODULES_VALIDATOR_VALIDATOR_CLI_H
#define GA_MODULES_VALIDATOR_VALIDATOR_CLI_H

#define VALIDATOR_CLI_EX_OK      0
#define VALIDATOR_CLI_EX_USAGE   64
#define VALIDATOR_CLI_EX_DATAERR 65

/* History file bounds: larger files or lines are a data error. */
#define VALIDATOR_CLI_HISTORY_MAX_BYTES (16 * 1024 * 1024)
#define VALIDATOR_CLI_LINE_MAX_BYTES    (256 * 1024)
/* Messages of the history kept (older ones are dropped, as in a live room). */
#define VALIDATOR_CLI_WINDOW 50

int validator_cli_main(int argc, char **argv);

#endif
