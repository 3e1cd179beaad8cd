/*
 * port — the GitHub outbound port (modules/outbound): how a send that
 * walked the outbound stage becomes an issue or a comment on GitHub, and how
 * after a crash (or a write whose outcome is unknown) we find out whether it
 * was made.
 *
 * Targets are the send-permission keys of modules/outbound/perms.h:
 *   github:<owner>:<repo>:new-issue   send = create an issue: the title and
 *                                     labels come from outbound_send.extra
 *                                     {"title": "…", "labels": ["…"]}; the
 *                                     text is the body;
 *   github:<owner>:<repo>:issue:<n>   send = a comment on issue n (and
 *   github:<owner>:<repo>:pr:<n>      pull request n: the same endpoint);
 *   github:<owner>:<repo>:reaction:<n> send = a reaction: extra
 *                                     {"content": "heart", "comment_id": id}
 *                                     (on the comment, or without comment_id
 *                                     on issue / PR n); the text only names
 *                                     it (outbound's dedup and audit);
 *   github:<owner>:<repo>:delete:<n>  send = delete one of our comments on
 *                                     issue / PR n: extra {"comment_id": id};
 *                                     already gone (404) counts as done.
 *   github:<owner>:<repo>:edit:<n>    send = change issue / PR n, one call
 *                                     per send, chosen by extra "op":
 *                                       "issue"     PATCH title, body, state,
 *                                                   state_reason (those of
 *                                                   extra's fields present);
 *                                       "labels"    set the labels (extra
 *                                                   "labels": [..], replaced);
 *                                       "assign" / "unassign"  extra
 *                                                   "logins": [..];
 *                                       "reviewers" request reviews from
 *                                                   extra "logins": [..];
 *                                     the text only describes the change (the
 *                                     audit, the dedup): it is not sent;
 *   github:<owner>:<repo>:new-pr      send = open a pull request: extra
 *                                     {"title", "head", "base", "draft"}; the
 *                                     text is its body. The key is
 *                                     gh_port_pr_key's. GitHub's "a pull
 *                                     request already exists" for that head
 *                                     is answered with the existing PR (it is
 *                                     the artifact: one PR per task branch);
 *   github:<owner>:<repo>:push        send = push a task branch (git, not
 *                                     REST): extra {"branch", "sha"}; the
 *                                     mirror is the one adapters/git keeps
 *                                     for <owner>/<repo> in the port's git
 *                                     cache (gh_port_set_git), pushed from
 *                                     refs/ga/tasks/<branch>, never forced,
 *                                     to the URL gh_port_clone_url makes; the
 *                                     key is gh_port_push_key's;
 *   github:<owner>:<repo>:create-repo send = create the repository <repo>
 *                                     in <owner>: from a template when extra
 *                                     has "template" ("owner/name"), else an
 *                                     empty one; extra "description",
 *                                     "private";
 *   github:<owner>:<repo>:review:<n>  send = a review of pull request n: the
 *                                     text is its body; extra {"event":
 *                                     "APPROVE" | "REQUEST_CHANGES" |
 *                                     "COMMENT", "commit_id": "<head sha>",
 *                                     "comments": [{"path", "line", "side",
 *                                     "body"}]} (inline comments, at most
 *                                     GH_COMMENTS_MAX; side "RIGHT" when
 *                                     absent). The key is gh_port_review_key's
 *                                     (one review per head). GitHub's 422 for
 *                                     an inline comment it cannot place on the
 *                                     diff is answered by one retry without
 *                                     inline comments, their path, line and
 *                                     text folded into the body (not lost);
 *                                     any other refusal (approving one's own
 *                                     PR, a closed PR) is the outcome;
 *   github:<owner>:<repo>:merge:<n>   send = merge pull request n: extra
 *                                     {"method" (default "squash"), "title",
 *                                     "message", "sha" (the head the merge
 *                                     was decided on)}; the artifact is the
 *                                     PR's html_url (the PR is read back).
 *                                     405 (not mergeable) / 409 (the head
 *                                     moved) → 0 with GitHub's message as the
 *                                     reason — except a 405 on a PR that the
 *                                     read-back finds merged (a retried PUT
 *                                     whose first attempt GitHub applied): 1;
 *   github:<owner>:<repo>:delete-branch send = delete a branch: extra
 *                                     {"branch"}; the text only names it. A
 *                                     branch already gone ("Reference does not
 *                                     exist") counts as done.
 * A reaction, a deletion, an edit and a branch deletion are idempotent on
 * GitHub (doing one again leaves the same state): their reconcile says "not
 * made" (0), so a crash between intent and done lets them run again.
 *
 * The idempotency key travels in every body, invisibly, as an HTML comment.
 * Outbound already appends `<!-- ga:chain=N key=K -->` (or `<!-- ga:key=K
 * -->` without a chain) when the port says marker_in_text; the port adds
 * `<!-- ga:key=K -->` only when the text does not carry "key=K -->" yet, so
 * there is exactly one marker.
 *
 * Outcomes given to outbound (outbound.h): 1 with the html_url; 0 when
 * GitHub refused the write (4xx: 404, 410, 422, 403 …; or a failure before
 * anything left: nothing was made, a retry may follow); OUTBOUND_PORT_UNKNOWN
 * when the write may have reached GitHub (gh_result.maybe_applied: a
 * timeout, a 5xx, a cut connection after the POST left). A 401 is also
 * passed to the on_auth callback (the daemon stops naming
 * AGENT_GITHUB_TOKEN).
 *
 * reconcile (does the artifact of key K exist?):
 *   new issue  search issues `"K" repo:o/r in:body` and, because GitHub's
 *              search index can lag a freshly created issue, the repo's
 *              GH_PORT_RECENT_ISSUES most recently created issues (state
 *              all); an issue whose body carries "key=K -->" → 1 with its
 *              html_url;
 *   comment    the issue's comments (up to GH_PORT_MAX_COMMENTS), same test;
 *              404/410 on the issue → 0 (the comment cannot exist);
 *   new PR     the PRs (any state) whose head is <owner>:<branch of the
 *              key> → 1 with the first one's html_url, none → 0;
 *   push       the remote branch (GET git/ref/heads/<branch of the key>)
 *              at the key's sha → 1; absent, or at another commit → 0;
 *   create     GET /repos/<owner>/<repo>: 200 → 1 with its html_url, 404
 *              → 0;
 *   review     the PR's reviews (up to GH_PORT_MAX_COMMENTS): one whose
 *              body carries "key=K -->" → 1 with its html_url, none → 0;
 *   merge      GET the PR: merged → 1 with its html_url, open or closed
 *              unmerged (or 404) → 0.
 *   Any other failure → -1 (unknown: outbound leaves the intent pending).
 *
 * Ownership: the client is borrowed and must outlive the port; free the port
 * after outbound_close (which waits for the port's calls in flight).
 */
#ifndef GA_MODULES_GITHUB_PORT_H
#define GA_MODULES_GITHUB_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/git/git.h"
#include "adapters/github/github.h"
#include "common/err.h"
#include "modules/outbound/outbound.h"

#define GH_PORT_RECENT_ISSUES 100
#define GH_PORT_MAX_COMMENTS  1000
#define GH_PORT_TITLE_MAX     256 /* GitHub's own limit on an issue title */
#define GH_PORT_MAX_LABELS    10
#define GH_PORT_MAX_LOGINS    10  /* assignees / reviewers of one edit */
#define GH_PORT_KEY_MAX       128 /* the journal's bound on a key */
/* The agent's git cache (its mirrors), under the memory directory: the
 * task pipeline fills it, the port pushes from it. */
#define GH_PORT_GIT_DIR "git"

struct gh_port;

/* on_auth (may be NULL) is called with the client's message when GitHub
 * answers 401 to a send or a reconcile. */
struct gh_port *gh_port_new(struct gh_client *gh, void (*on_auth)(void *ud, const char *msg),
                            void *ud);
void gh_port_free(struct gh_port *p); /* NULL ok */

/* The outbound_port for CONV_PLATFORM_GITHUB (marker_in_text, no pacing of
 * its own: the client spaces writes). */
void gh_port_describe(struct gh_port *p, struct outbound_port *out);

/* Lets the port push: git is borrowed (it must outlive the port; its cache
 * holds the mirrors the task pipeline fills), cred is copied (NULL: none),
 * api_url names the host pushes go to (gh_port_clone_url). Without it a
 * push is refused (0, "this agent does not push"). */
int gh_port_set_git(struct gh_port *p, struct git_ctx *git, const struct git_cred *cred,
                    const char *api_url, struct ga_err *err);

/* Sends started, and how they ended (for status). */
struct gh_port_stats {
	uint64_t sends, sent, refused, unknown, reconciles;
	char last_error[GA_ERR_MSG_MAX];
};
void gh_port_stats(const struct gh_port *p, struct gh_port_stats *out);

/* --- pure helpers (exposed for tests) ------------------------------------ */

enum gh_port_kind {
	GH_PORT_NEW_ISSUE,
	GH_PORT_COMMENT, /* issue:<n>, pr:<n> */
	GH_PORT_REACTION,
	GH_PORT_DELETE,
	GH_PORT_EDIT, /* edit:<n> */
	GH_PORT_NEW_PR,
	GH_PORT_PUSH,
	GH_PORT_CREATE_REPO,
	GH_PORT_REVIEW,        /* review:<n> */
	GH_PORT_MERGE,         /* merge:<n> */
	GH_PORT_DELETE_BRANCH, /* delete-branch */
};

struct gh_port_target {
	enum gh_port_kind kind;
	char owner[64];
	char repo[128];
	int64_t number; /* 0 for a new issue */
};
/* 0, or -1 with err naming the target when it is not one of the forms
 * above (or owner/repo are not valid GitHub names). */
int gh_port_parse_target(const char *target, struct gh_port_target *out, struct ga_err *err);
/* Does body carry key K's marker ("key=K -->")? */
bool gh_port_body_has_key(const char *body, const char *key);
/* text plus "\n\n<!-- ga:key=K -->" unless it already carries K's marker.
 * Caller frees. */
char *gh_port_body(const char *text, size_t len, const char *key);

/* The keys of the kinds whose reconcile reads them back (at most
 * GH_PORT_KEY_MAX bytes; 0, or -1 when a part is invalid or too long):
 *   push    "push:<branch>:<sha>"
 *   new PR  "pr:<12 hex of sha256(lower-case owner/repo)>:<branch>" (the
 *           same branch name in two repositories is two keys) */
int gh_port_push_key(const char *branch, const char *sha, char *out, size_t cap);
int gh_port_pr_key(const char *owner, const char *repo, const char *branch, char *out, size_t cap);
/*   review  "review:<owner>/<repo>#<n>@<sha>" (owner/repo lower-cased;
 *           when that passes GH_PORT_KEY_MAX, "review:<12 hex of
 *           sha256(owner/repo)>#<n>@<sha>"): one review per head of the PR,
 *           sha the full 40 hex of the head reviewed. */
int gh_port_review_key(const char *owner, const char *repo, int64_t number, const char *sha,
                       char *out, size_t cap);
/* The branch (and sha) a key of the push / new PR forms names: 0, or -1. */
int gh_port_key_parse(const char *key, enum gh_port_kind kind, char *branch, size_t bcap, char *sha,
                      size_t scap);
/* The URL git clones and pushes <owner>/<repo> at, from the REST base:
 * https://api.github.com → https://github.com/<o>/<r>.git; a GitHub
 * Enterprise ".../api/v3" → the host's root; any other base (a test's
 * fake) → <base>/<o>/<r>.git. 0, or -1 when out is too small. */
int gh_port_clone_url(const char *api_url, const char *owner, const char *repo, char *out,
                      size_t cap);

#endif
