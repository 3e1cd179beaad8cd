/*
 * general-agent — the daemon's entry point: flags, subcommands, exit codes.
 *
 * Everything that talks to the world lives in modules/ and adapters/; this
 * file only parses the command line and hands over to daemon.c or doctor.c.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "common/config.h"
#include "common/log.h"
#include "modules/commitments/cli.h"
#include "modules/decisions/cli.h"
#include "modules/outbound/perms_cli.h"
#include "modules/pipeline/control.h"
#include "modules/reflection/cli.h"
#ifdef GA_HAVE_VALIDATOR
#include "modules/validator/validator_cli.h"
#endif

static const char USAGE[] =
        "usage: general-agent [options] [command]\n"
        "\n"
        "An autonomous social agent: Bluesky, GitHub, the agent-space and its owner's\n"
        "terminal, without loops, echoes or duplicate posts.\n"
        "\n"
        "commands:\n"
        "  (none)            run the daemon in the foreground\n"
        "  doctor            check the configuration, identity and memory, and ask each\n"
        "                    configured service once; exit 0 ready, 2 can start but a\n"
        "                    service did not answer, 1 cannot start\n"
        "  status            what a running daemon is doing (from memory/status.json)\n"
        "  soul [--accept]   show the SOUL.md pin; --accept re-pins an intended edit\n"
        "  validate [...] TEXT  run the post-generation validator on TEXT and print the\n"
        "                    verdict, rule and scores (general-agent validate --help)\n"
        "  decisions [--tail N] [--follow] [--json]\n"
        "                    what the agent decided, stage by stage (memory/decisions.jsonl)\n"
        "  why MESSAGE_ID [--json]\n"
        "                    every decision about one message, in order (a unique prefix\n"
        "                    of the id is enough)\n"
        "  commitments [--json]\n"
        "                    what the agent promised: state, attempts, the artifact link\n"
        "  self diff | revert | history\n"
        "                    what reflection changed in SELF.md; undo it (docs/growth.md)\n"
        "  pause, resume     the kill switch: a paused agent answers nobody, and its owner\n"
        "                    only /resume and /status; a running daemon picks it up within\n"
        "                    2 s, and the pause survives restarts\n"
        "  cross [mode MODE | allow P | deny P | remove P | clear | check TARGET]\n"
        "                    send permissions: where the agent may send (bypass, allowlist or\n"
        "                    denylist over targets such as space:*, bluesky:post,\n"
        "                    github:OWNER:REPO:issue:N); a running daemon picks changes up\n"
        "\n"
        "options:\n"
        "  --home DIR        agent home: SOUL.md, SELF.md, .env, memory/ (default: $AGENT_HOME,\n"
        "                    else the current directory)\n"
        "  --env FILE        read settings from FILE instead of <home>/.env\n"
        "  --memory DIR      state directory (default: $MEMORY_DIR, else <home>/memory)\n"
        "  --social-only     no GitHub work; advertise [\"social\"] in the agent-space\n"
        "  --no-terminal     do not read owner input from stdin\n"
        "  -h, --help        this help\n"
        "  -V, --version     print the version\n"
        "\n"
        "Settings come from the environment, else from .env (the environment wins).\n"
        "See docs/running.md for every variable. Exit codes: 0 ok, 64 usage, 69 service\n"
        "unavailable, 75 another daemon uses this memory directory, 77 no permission\n"
        "(the memory directory or a file in it), 78 configuration (including a missing\n"
        "or altered SOUL.md).\n";

/* Every command, with its usage (`general-agent COMMAND --help` prints it
 * and exits 0). The commands whose module prints a longer help of its own
 * (validate, decisions, why, cross) are handed --help like any argument. */
struct command {
	const char *name;
	const char *usage; /* NULL: the module's own --help */
};

static const struct command COMMANDS[] = {
        {"doctor", "usage: general-agent [--home DIR] [--env FILE] [--memory DIR] doctor\n"
                   "\n"
                   "Checks the configuration, SOUL.md and SELF.md, the skills, the memory\n"
                   "directory, and asks every configured service (the model, GitHub, the\n"
                   "room) once. Exit 0 when everything configured answers, 1 when the daemon\n"
                   "cannot start, 2 when it can start but a configured service is down.\n"},
        {"status", "usage: general-agent [--home DIR] [--memory DIR] status\n"
                   "\n"
                   "What the daemon of this home is doing (memory/status.json), and whether\n"
                   "it is paused. Exit 0 running, 3 not running.\n"},
        {"soul", "usage: general-agent soul [--accept]\n"
                 "\n"
                 "Shows the SOUL.md pin; --accept pins an intended edit of SOUL.md.\n"},
        {"validate", NULL},
        {"decisions", NULL},
        {"why", NULL},
        {"commitments", "usage: general-agent commitments [--json]\n"
                        "\n"
                        "What the agent promised: state, attempts, the artifact's link\n"
                        "(memory/commitments.jsonl).\n"},
        {"self", "usage: general-agent self diff | revert | history\n"
                 "\n"
                 "  diff      what the last reflection changed in SELF.md\n"
                 "  revert    put back the SELF.md from before it\n"
                 "  history   the earlier versions kept in memory/self-history/\n"},
        {"pause", "usage: general-agent pause\n"
                  "\n"
                  "The kill switch: a paused agent answers nobody, and its owner only\n"
                  "/resume and /status. A running daemon picks it up within 2 s; the pause\n"
                  "survives restarts.\n"},
        {"resume", "usage: general-agent resume\n"
                   "\n"
                   "Lifts the kill switch (general-agent pause).\n"},
        {"cross", NULL},
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
		if (strcmp(COMMANDS[i].name, name) == 0)
			return &COMMANDS[i];
	return NULL;
}

/* An unknown command: say so, with the closest known one when it is near. */
static int unknown_command(const char *cmd)
{
	fprintf(stderr, "general-agent: unknown command '%s'", cmd);
	const char *best = NULL;
	int bestd = 3;
	for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++) {
		int d = config_edit_distance(cmd, COMMANDS[i].name, 3);
		if (d < bestd) {
			bestd = d;
			best = COMMANDS[i].name;
		}
	}
	if (best)
		fprintf(stderr, " (did you mean '%s'?)", best);
	fputs("\nrun 'general-agent --help' for usage\n", stderr);
	return EXIT_USAGE;
}

/* -h or --help among a command's arguments (before a "--"). */
static bool asks_help(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return false;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	}
	return false;
}

enum { OPT_HOME = 256, OPT_ENV, OPT_MEMORY, OPT_SOCIAL, OPT_NOTERM, OPT_ACCEPT };

static const struct option LONGOPTS[] = {
        {"home", required_argument, NULL, OPT_HOME},
        {"env", required_argument, NULL, OPT_ENV},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"social-only", no_argument, NULL, OPT_SOCIAL},
        {"no-terminal", no_argument, NULL, OPT_NOTERM},
        {"accept", no_argument, NULL, OPT_ACCEPT},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
};

/* Parses options from argv[optind] up to the first non-option ("+" in the
 * optstring), so a subcommand's own flags (`validate --json`) are never
 * taken for ours. Returns -1 to go on, else the exit code. `cmd` names the
 * subcommand in error messages (NULL before it). */
static int parse_opts(int argc, char **argv, const char *cmd, struct ga_opts *opts, bool *accept)
{
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hV", LONGOPTS, NULL)) != -1) {
		switch (c) {
		case OPT_HOME:
			opts->home = optarg;
			break;
		case OPT_ENV:
			opts->env = optarg;
			break;
		case OPT_MEMORY:
			opts->memory = optarg;
			break;
		case OPT_SOCIAL:
			opts->social_only = true;
			break;
		case OPT_NOTERM:
			opts->no_terminal = true;
			break;
		case OPT_ACCEPT:
			*accept = true;
			break;
		case 'h': {
			const struct command *k = cmd ? find_command(cmd) : NULL;
			fputs(k && k->usage ? k->usage : USAGE, stdout);
			return 0;
		}
		case 'V':
			printf("general-agent %s\n", GA_VERSION);
			return 0;
		default:
			fprintf(stderr,
			        "general-agent%s%s: unknown option or missing value: '%s'\n",
			        cmd ? " " : "", cmd ? cmd : "", argv[optind - 1]);
			fputs("run 'general-agent --help' for usage\n", stderr);
			return EXIT_USAGE;
		}
	}
	return -1;
}

/* The commands that take arguments of their own (decisions, why, cross,
 * pause, resume): --home/--env/--memory may still appear among them and are
 * taken out; the rest is the command's. Returns -1 to go on, else an exit
 * code. */
static int take_home_opts(int argc, char **argv, const char *cmd, struct ga_opts *opts, int *nrest,
                          char **rest)
{
	*nrest = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = strcmp(a, "--home") == 0     ? &opts->home
		                    : strcmp(a, "--env") == 0    ? &opts->env
		                    : strcmp(a, "--memory") == 0 ? &opts->memory
		                                                 : NULL;
		if (slot) {
			if (i + 1 >= argc) {
				fprintf(stderr, "general-agent %s: %s needs a value\n", cmd, a);
				return EXIT_USAGE;
			}
			*slot = argv[++i];
			continue;
		}
		if (strncmp(a, "--home=", 7) == 0) {
			opts->home = a + 7;
			continue;
		}
		if (strncmp(a, "--memory=", 9) == 0) {
			opts->memory = a + 9;
			continue;
		}
		if (strncmp(a, "--env=", 6) == 0) {
			opts->env = a + 6;
			continue;
		}
		rest[(*nrest)++] = argv[i];
	}
	return -1;
}

static bool is_arg_command(const char *cmd)
{
	return strcmp(cmd, "decisions") == 0 || strcmp(cmd, "why") == 0 ||
	       strcmp(cmd, "commitments") == 0 || strcmp(cmd, "self") == 0 ||
	       strcmp(cmd, "cross") == 0 || strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0;
}

static int run_arg_command(const char *cmd, struct ga_opts *opts, int argc, char **argv)
{
	char **rest = calloc((size_t)argc + 2, sizeof *rest);
	if (!rest)
		return 1;
	int n = 0;
	int rc = take_home_opts(argc, argv, cmd, opts, &n, rest);
	if (rc >= 0) {
		free(rest);
		return rc;
	}
	log_init(LOG_LEVEL_WARN, -1, stderr);
	struct ga_home home;
	char env_error[512];
	if (ga_home_load(&home, opts, env_error, sizeof env_error) < 0) {
		fprintf(stderr, "general-agent %s: %s\n", cmd, env_error);
		ga_home_free(&home);
		free(rest);
		return EXIT_CONFIG;
	}
	const char *mem = home.cfg.memory_dir;
	if (strcmp(cmd, "decisions") == 0) {
		rc = decisions_cli_list(mem, n, rest, stdout, stderr);
	} else if (strcmp(cmd, "commitments") == 0) {
		rc = commitments_cli(mem, n, rest, stdout, stderr);
	} else if (strcmp(cmd, "self") == 0) {
		rc = reflection_cli_self(n, rest, &home.cfg, stdout, stderr);
	} else if (strcmp(cmd, "why") == 0) {
		/* the id first; without one, the module says what is missing
		 * (or prints its help) */
		bool id = n >= 1 && rest[0][0] != '-';
		rc = decisions_cli_why(mem, id ? rest[0] : NULL, id ? n - 1 : n,
		                       id ? rest + 1 : rest, stdout, stderr);
	} else if (strcmp(cmd, "cross") == 0) {
		/* perms_cli takes the command word as argv[0] */
		memmove(rest + 1, rest, (size_t)n * sizeof *rest);
		rest[0] = (char *)"cross";
		rc = perms_cli(mem, home.cfg.agent_name, n + 1, rest, stdout, stderr);
	} else {
		bool pause = strcmp(cmd, "pause") == 0;
		if (n) {
			fprintf(stderr, "general-agent %s: unexpected argument '%s'\n", cmd,
			        rest[0]);
			rc = EXIT_USAGE;
		} else {
			rc = control_cli(mem, GA_VERSION, pause, stdout, stderr);
		}
	}
	ga_home_free(&home);
	log_clear_secrets();
	free(rest);
	return rc;
}

int main(int argc, char **argv)
{
	/* Before anything else: see ga_release_stop_signals (cmd/cli.h). */
	ga_hold_stop_signals();
	struct ga_opts opts = {0};
	bool accept = false;
	int rc = parse_opts(argc, argv, NULL, &opts, &accept);
	if (rc >= 0)
		return rc;
	const char *cmd = optind < argc ? argv[optind] : NULL;
	/* Only the daemon (no command) installs handlers of its own. */
	if (cmd)
		ga_release_stop_signals();
	const struct command *known = cmd ? find_command(cmd) : NULL;
	if (cmd && !known)
		return unknown_command(cmd);
	if (known && asks_help(argc - optind - 1, argv + optind + 1)) {
		if (known->usage) {
			fputs(known->usage, stdout);
			return 0;
		}
		/* the module's own help: its arguments become just --help */
		argv[optind + 1] = (char *)"--help";
		argc = optind + 2;
	}
	/* validate is a pure tool with flags of its own: it needs no home. */
	if (cmd && strcmp(cmd, "validate") == 0) {
#ifdef GA_HAVE_VALIDATOR
		log_init(LOG_LEVEL_WARN, -1, stderr);
		return validator_cli_main(argc - optind, argv + optind);
#else
		fputs("general-agent: this build has no validator\n", stderr);
		return EXIT_USAGE;
#endif
	}
	if (cmd && is_arg_command(cmd))
		return run_arg_command(cmd, &opts, argc - optind - 1, argv + optind + 1);
	/* Options may also follow the subcommand: `general-agent soul --accept`. */
	if (cmd) {
		optind++;
		rc = parse_opts(argc, argv, cmd, &opts, &accept);
		if (rc >= 0)
			return rc;
		if (optind < argc) {
			fprintf(stderr, "general-agent %s: unexpected argument '%s'\n", cmd,
			        argv[optind]);
			return EXIT_USAGE;
		}
	}
	if (accept && (!cmd || strcmp(cmd, "soul") != 0)) {
		fputs("general-agent: --accept goes with the soul command\n", stderr);
		return EXIT_USAGE;
	}

	log_init(LOG_LEVEL_INFO, -1, stderr);
	struct ga_home home;
	char env_error[512];
	rc = ga_home_load(&home, &opts, env_error, sizeof env_error);
	if (rc < 0) {
		fprintf(stderr, "general-agent: %s\n", env_error);
		ga_home_free(&home);
		return EXIT_CONFIG;
	}
	log_init(home.cfg.log_level, home.cfg.log_json ? 1 : -1, stderr);

	if (!cmd)
		rc = ga_cmd_daemon(&home);
	else if (strcmp(cmd, "doctor") == 0)
		rc = ga_cmd_doctor(&home);
	else if (strcmp(cmd, "status") == 0)
		rc = ga_cmd_status(&home);
	else
		rc = ga_cmd_soul(&home, accept);
	ga_home_free(&home);
	log_clear_secrets();
	return rc;
}
