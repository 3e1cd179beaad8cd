/*
 * gitfix — real git for the tests of adapters/git, modules/coder and
 * modules/taskexec: synchronous git commands for setting up fixtures, a
 * bare "remote" repository with a first commit on a default branch the test
 * chooses, and git's own `git http-backend` behind a small HTTP server on
 * 127.0.0.1 that demands Basic authentication with one token, as GitHub
 * does for a private repository.
 *
 * The server runs in libmicrohttpd's own thread (so a test can drive its
 * libuv loop while git talks to it); each request runs the CGI to
 * completion. Request bodies are bounded at GITFIX_MAX_BODY bytes (a larger
 * push is refused with 413). Every request's Authorization header is
 * recorded (the count of refused ones, whether any carried the token in
 * the URL) so a test can check how the client authenticated.
 */
#ifndef GA_TESTS_INTEGRATION_GIT_GITFIX_H
#define GA_TESTS_INTEGRATION_GIT_GITFIX_H

#include <stdbool.h>
#include <stddef.h>

#define GITFIX_MAX_BODY (32 * 1024 * 1024)

/* Runs argv (argv[0] looked up in PATH) in cwd with a fixed identity
 * (GIT_AUTHOR_* / GIT_COMMITTER_* = "Fixture") and no user configuration.
 * Returns the exit status (-1 when it could not run); *out (may be NULL)
 * receives stdout, trimmed (caller frees). */
int gf_run(const char *cwd, const char *const *argv, char **out);

/* A bare repository at dir (created) whose default branch (HEAD) is
 * `branch` and holds one commit adding README.md. 0, or -1. */
int gf_remote_new(const char *dir, const char *branch);

/* Adds a commit to `branch` of the bare repository at dir (through a
 * temporary clone) writing `content` to `file`. 0, or -1. */
int gf_remote_commit(const char *dir, const char *branch, const char *file, const char *content);

/* The sha of refs/heads/<branch> in the repository at dir, or "" (caller
 * frees). */
char *gf_rev(const char *dir, const char *ref);

/* mkdir -p (0700). */
void gf_mkdirs(const char *path);

/* snprintf that aborts when the text does not fit: a fixture path cut
 * short would make a test pass or fail for the wrong reason. */
void gf_path(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

struct gf_http;

/* Serves the repositories under root at http://127.0.0.1:<port>/<name>,
 * every request authenticated by Basic user:token (any user, that token).
 * NULL on failure. */
struct gf_http *gf_http_start(const char *root, const char *token);
int gf_http_port(const struct gf_http *h);
int gf_http_requests(const struct gf_http *h);   /* requests answered */
int gf_http_refused(const struct gf_http *h);    /* 401s sent */
int gf_http_authorized(const struct gf_http *h); /* requests that carried the token */
void gf_http_stop(struct gf_http *h);

#endif
