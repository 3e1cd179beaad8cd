/*
 * cli — what the general-agent entry points share: parsed flags and the
 * "prepared home" (environment, configuration, memory, identity paths).
 *
 * Exit codes follow sysexits.h: 64 usage, 69 service unavailable (fatal
 * auth), 75 temporary failure (another daemon holds this memory directory),
 * 77 permission (the memory directory, SOUL.md or the SOUL pin may not be
 * read or written by the user the daemon runs as), 78 configuration
 * (including a missing or altered SOUL.md).
 */
#ifndef GA_CMD_CLI_H
#define GA_CMD_CLI_H

#include <stdbool.h>

#include "common/config.h"
#include "common/env.h"
#include "common/err.h"
#include "modules/skills/skills.h"
#include "modules/state/state.h"

#define EXIT_USAGE       64
#define EXIT_UNAVAILABLE 69
#define EXIT_TEMPFAIL    75
#define EXIT_NOPERM      77
#define EXIT_CONFIG      78

struct ga_opts {
	const char *home;   /* --home, else AGENT_HOME, else "." */
	const char *env;    /* --env, else <home>/.env */
	const char *memory; /* --memory, else MEMORY_DIR, else <home>/memory */
	bool social_only;
	bool no_terminal;
};

struct ga_home {
	struct ga_opts opts;
	char *env_path;
	bool env_missing;
	struct env_file env;
	struct ga_config cfg;
	struct config_problems problems;
	char *soul_path;
	char *self_path;
	char *self_template; /* the template found (home, then data dir), or NULL */
};

/* Loads .env and the configuration. Returns 0, or EXIT_CONFIG after
 * printing each problem to stderr (when report is true). The struct is
 * usable (for doctor) even when problems were found, unless the .env file
 * itself could not be parsed (then -1 + message in env_error). */
int ga_home_load(struct ga_home *h, const struct ga_opts *opts, char *env_error, size_t cap);
void ga_home_free(struct ga_home *h);

/* Loads (again = reloads) the skills from <home>/skills, then the shipped
 * data directory (cmd/datadir.h), in that order of precedence
 * (cmd/skilldirs.c). 0, or -1 with err. */
int ga_skills_load(const struct ga_home *h, struct skills *s, bool again, struct ga_err *err);

int ga_cmd_daemon(struct ga_home *h);

/* SIGINT, SIGTERM and SIGHUP are held pending from the top of main
 * (ga_hold_stop_signals) until the daemon's handlers exist (a stop sent
 * while the daemon loads its memory would otherwise kill it with the
 * default action, exit 143, in the middle of a write).
 * ga_release_stop_signals lets them through: a pending one is delivered at
 * once. Idempotent; every other command calls it before its work.
 * (cmd/signals.c) */
void ga_hold_stop_signals(void);
void ga_release_stop_signals(void);
int ga_cmd_doctor(struct ga_home *h);
int ga_cmd_status(struct ga_home *h);
int ga_cmd_soul(struct ga_home *h, bool accept);

/* The lock that keeps two daemons off one memory directory.
 * Returns an fd (>= 0) held until close, or -1 with *holder_pid set to the
 * running daemon's pid when known (0 otherwise). */
int ga_lock_acquire(const char *memory_dir, int *holder_pid);
/* 1 if a daemon holds the lock (pid in *pid), 0 if not. */
int ga_lock_probe(const char *memory_dir, int *pid);

#endif
