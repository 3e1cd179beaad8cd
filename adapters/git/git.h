/*
 * git — real git on the libuv loop, for the task work of the agents: a bare
 * repository per remote kept fetched in a cache, a fresh clone per task that
 * borrows its objects, and the reads and writes the task pipeline needs.
 * Every command goes through spawn.h (argv only, bounded output, a timeout
 * that ends the process group).
 *
 * Every git this module starts runs with: a fixed PATH; HOME an empty
 * private directory of the cache and GIT_CONFIG_GLOBAL=/dev/null,
 * GIT_CONFIG_NOSYSTEM=1 (no user or system configuration: no credential
 * store, no url rewrite, no hook of the user's); GIT_TERMINAL_PROMPT=0 (a
 * missing credential fails, it never waits for a terminal);
 * GIT_ALLOW_PROTOCOL=file:http:https; LC_ALL=C (parseable output);
 * core.hooksPath=/dev/null and core.fsmonitor=false (no repository can make
 * a command of ours run its programs). Commit identity, when a command
 * needs one, is given per invocation (-c user.name=… -c user.email=…) and
 * never written to any configuration.
 *
 * Authentication: only commands that talk to the remote get a credential,
 * and only through a credential helper given on their command line: the
 * configured helpers are reset (credential.helper=) and replaced by an
 * inline helper that answers "get" for the remote's own host (host[:port])
 * with a username and the token read from GA_GIT_USERNAME / GA_GIT_TOKEN,
 * variables set in that one git process's environment (git passes them to
 * its helper and transport children, nothing else has them). The token is
 * never in a URL, an argv, a configuration file or a log line, and is
 * replaced by "[redacted]" in the output handed back.
 *
 * The layout (git_mirror_path, git_task_clone):
 *   <cache>/mirrors/<owner>/<repo>.git   bare; remote "origin" = the
 *       remote's URL without credentials; its branches fetched to
 *       refs/remotes/origin/<name> (so "origin/<base>" means what it says);
 *       task branches imported to refs/ga/tasks/<branch>, which fetch
 *       --prune never touches; gc.auto=0 so objects a clone borrows stay.
 *   <work>                               a clone with --shared (objects
 *       borrowed from the mirror through .git/objects/info/alternates),
 *       origin = the remote's URL, the task branch checked out. This is the
 *       tree the coder may change; after it has, the agent runs no git in
 *       it: git_import fetches the branch into the mirror (a fetch from an
 *       untrusted repository runs only git-upload-pack there, with our
 *       command-line configuration overriding the repository's), and every
 *       later read and the push happen in the mirror.
 *
 * Concurrency: one command at a time per mirror (the caller serialises:
 * the task pipeline runs one task at a time). Callbacks run on the loop,
 * never from inside the call that started them; results are borrowed for
 * the callback's duration.
 */
#ifndef GA_ADAPTERS_GIT_GIT_H
#define GA_ADAPTERS_GIT_GIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/git/spawn.h"
#include "common/err.h"

#define GIT_REMOTE_TIMEOUT_MS ((uint64_t)10 * 60 * 1000)
#define GIT_LOCAL_TIMEOUT_MS  ((uint64_t)60 * 1000)
#define GIT_MAX_OUTPUT        ((size_t)1024 * 1024)
#define GIT_MAX_FILES         300 /* files of a diff kept (the rest counted) */
#define GIT_MAX_LOG           50  /* commit lines kept */
#define GIT_SHA_MAX           64  /* sha1 hex 40, sha256 hex 64 */
#define GIT_REF_MAX           256
#define GIT_TASK_REF_PREFIX   "refs/ga/tasks/"
#define GIT_PATH              "/usr/local/bin:/usr/bin:/bin"

struct git_ctx {
	uv_loop_t *loop;
	char *program; /* "git" */
	char *cache;   /* the cache directory (absolute) */
	char *home;    /* <cache>/home: an empty HOME for git */
};

/* Creates <cache> and <cache>/home (0700). 0, or -1 with err. */
int git_ctx_init(struct git_ctx *g, uv_loop_t *loop, const char *cache_dir, struct ga_err *err);
void git_ctx_free(struct git_ctx *g);

struct git_cred {
	const char *username; /* "x-access-token" works for GitHub tokens */
	const char *token;
};

struct git_result {
	bool ok; /* ran and exited 0 */
	int exit_status;
	bool timed_out;
	const char *out; /* stdout (bounded; the token redacted) */
	size_t out_len;
	const char *err; /* stderr (bounded; the token redacted) */
	size_t err_len;
	uint64_t elapsed_ms;
	char msg[GA_ERR_MSG_MAX]; /* on failure: "git push: exit status 1: <last stderr line>" */
};

typedef void (*git_done_fn)(void *ud, const struct git_result *r);

struct git_cmd {
	const char *dir;             /* working directory (the repository) */
	const char *const *args;     /* after "git", NULL-terminated */
	const struct git_cred *cred; /* NULL: no credential (local commands) */
	const char *remote_url;      /* with cred: the URL talked to (its host gets the token) */
	const char *ident_name;      /* NULL: no identity */
	const char *ident_email;
	uint64_t timeout_ms;    /* 0: GIT_LOCAL_TIMEOUT_MS, or GIT_REMOTE_TIMEOUT_MS with cred */
	bool keep_head;         /* keep the head of long output, not the tail */
	const char *stdin_data; /* NULL: /dev/null */
	size_t stdin_len;
};

/* One git command. 0, or -1 with err when it cannot be started at all
 * (bad arguments, a credential for a URL without a host). */
int git_run(struct git_ctx *g, const struct git_cmd *c, git_done_fn done, void *ud,
            struct ga_err *err);

/* "<cache>/mirrors/<owner>/<repo>.git" (caller frees), or NULL when owner or
 * repo is not a plain name ([A-Za-z0-9._-], not "." or "..", at most 100). */
char *git_mirror_path(const struct git_ctx *g, const char *owner, const char *repo);

/* Creates the mirror (when <dir>/HEAD is missing) and fetches the remote's
 * branches into refs/remotes/origin/<name> (--prune). url: the remote without
 * credentials. */
int git_mirror_sync(struct git_ctx *g, const char *mirror, const char *url,
                    const struct git_cred *cred, git_done_fn done, void *ud, struct ga_err *err);

/* The remote's default branch: `ls-remote --symref origin HEAD` in the
 * mirror; parse r->out with git_parse_symref. */
int git_default_branch(struct git_ctx *g, const char *mirror, const char *url,
                       const struct git_cred *cred, git_done_fn done, void *ud, struct ga_err *err);

/* `ls-remote --heads origin refs/heads/<branch>` in the mirror; parse with
 * git_parse_ls_remote (an empty answer: no such branch). */
int git_ls_remote_branch(struct git_ctx *g, const char *mirror, const char *url, const char *branch,
                         const struct git_cred *cred, git_done_fn done, void *ud,
                         struct ga_err *err);

/* A fresh clone of the mirror at work (which must not exist) with branch
 * checked out, created from origin/<start> (start = the base branch, or the
 * task branch itself when it already exists on the remote); origin's URL is
 * set to url; refs/remotes/origin/HEAD points at origin/<base>. */
int git_task_clone(struct git_ctx *g, const char *mirror, const char *work, const char *url,
                   const char *base, const char *start, const char *branch, git_done_fn done,
                   void *ud, struct ga_err *err);

/* In the mirror: fetch refs/heads/<branch> of the work clone into
 * refs/ga/tasks/<branch> (forced: it is ours). */
int git_import(struct git_ctx *g, const char *mirror, const char *work, const char *branch,
               git_done_fn done, void *ud, struct ga_err *err);

/* In the mirror: push refs/ga/tasks/<branch> to the remote's
 * refs/heads/<branch>, never forced (--porcelain output). */
int git_push(struct git_ctx *g, const char *mirror, const char *url, const char *branch,
             const struct git_cred *cred, git_done_fn done, void *ud, struct ga_err *err);

struct git_file {
	char status; /* 'A', 'M', 'D', 'R', 'C', 'T', ... */
	char *path;
	char *old_path; /* renames and copies, else NULL */
};

struct git_diff {
	size_t commits;         /* base..head */
	char *log[GIT_MAX_LOG]; /* "<short sha> <subject>", newest first */
	size_t n_log;
	char shortstat[256]; /* "3 files changed, 10 insertions(+), 2 deletions(-)" or "" */
	int files_changed;
	int insertions;
	int deletions;
	struct git_file *files; /* base...head (since the merge base) */
	size_t n_files;
	size_t files_dropped;
};

typedef void (*git_diff_fn)(void *ud, const struct git_result *r, const struct git_diff *d);

/* In a repository (the mirror): the commits of base..head and the files of
 * base...head (changes since the merge base, never the working tree). d is
 * NULL when a command failed (r says which). */
int git_diff_summary(struct git_ctx *g, const char *repo, const char *base, const char *head,
                     git_diff_fn done, void *ud, struct ga_err *err);
void git_diff_free(struct git_diff *d);

/* Removes a directory tree of ours (a clone, a control directory), never
 * following a symlink out of it. A missing path is fine. */
void git_remove_tree(const char *path);

/* Appends a pattern line to <work>/.git/info/exclude unless it is there. */
int git_exclude_add(const char *work, const char *pattern, struct ga_err *err);

/* The branch <work>/.git/HEAD names ("ref: refs/heads/<b>"), read as a file
 * without following symlinks (the tree may be hostile): 0 with out filled,
 * or -1 with err (detached, a symlink, not a regular file, unreadable). */
int git_head_branch(const char *work, char *out, size_t cap, struct ga_err *err);

/* ---- parsers of git's output (pure) ---- */

/* "ref: refs/heads/main\tHEAD" → "main". 0, or -1. */
int git_parse_symref(const char *out, char *branch, size_t cap);
/* The sha of refs/heads/<branch> in ls-remote output: 1 found, 0 not. */
int git_parse_ls_remote(const char *out, const char *branch, char sha[GIT_SHA_MAX + 1]);
/* "--shortstat" line into d. */
void git_parse_shortstat(const char *out, struct git_diff *d);
/* "--name-status -z" output (len bytes) into d->files (bounded). */
void git_parse_name_status(const char *out, size_t len, struct git_diff *d);
/* A branch name git and GitHub accept and our argv cannot mistake for an
 * option: [A-Za-z0-9._/-], not starting with '-' or '/', no "..", "//",
 * "@{", no ".lock" ending, at most GIT_REF_MAX bytes. */
bool git_valid_branch(const char *b);
/* host[:port] of an http(s) URL (userinfo refused). 0, or -1. */
int git_url_host(const char *url, char *host, size_t cap);

#endif
