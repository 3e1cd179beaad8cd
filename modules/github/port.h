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
 * A reaction and a deletion are idempotent on GitHub: their reconcile says
 * "not made" (0), so a crash between intent and done lets them run again.
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
 *              404/410 on the issue → 0 (the comment cannot exist).
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

#include "adapters/github/github.h"
#include "common/err.h"
#include "modules/outbound/outbound.h"

#define GH_PORT_RECENT_ISSUES 100
#define GH_PORT_MAX_COMMENTS  1000
#define GH_PORT_TITLE_MAX     256 /* GitHub's own limit on an issue title */
#define GH_PORT_MAX_LABELS    10

struct gh_port;

/* on_auth (may be NULL) is called with the client's message when GitHub
 * answers 401 to a send or a reconcile. */
struct gh_port *gh_port_new(struct gh_client *gh, void (*on_auth)(void *ud, const char *msg),
                            void *ud);
void gh_port_free(struct gh_port *p); /* NULL ok */

/* The outbound_port for CONV_PLATFORM_GITHUB (marker_in_text, no pacing of
 * its own: the client spaces writes). */
void gh_port_describe(struct gh_port *p, struct outbound_port *out);

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

#endif
