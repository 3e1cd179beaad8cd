/*
 * policy_peers — the pure rules of peer identity posts (bsky_peers.c,
 * bsky_feed.c; §7.4; seed 004 "Peer Identity"): our identity post's text,
 * recognising a peer's and the GitHub name in it, the announcement's
 * values.
 *
 * Pure functions of their arguments (policy.h's rules).
 */
#ifndef GA_MODULES_BLUESKY_POLICY_PEERS_H
#define GA_MODULES_BLUESKY_POLICY_PEERS_H

#include <stdbool.h>
#include <stddef.h>

/* ---- peers (§7.4) ------------------------------------------------------------ */

#define BSKY_IDENTITY_MARKER "\xF0\x9F\x94\x97\xE2\x80\x94" /* 🔗— */
#define BSKY_GITHUB_NAME_MAX 40
/* The identity post's text for a GitHub username (caller's buffer). -1 if
 * the name is not a GitHub login (1..39 of [A-Za-z0-9-]). */
int bsky_identity_text(const char *github, char *out, size_t cap);
/* True when text starts with the marker. */
bool bsky_is_identity_post(const char *text);
/* The GitHub username in an identity post: `name` followed by "on GitHub",
 * github.com/<name> (one path segment), "I'm/I am <name> on GitHub". 0 and
 * out filled, -1 when none. */
int bsky_identity_github(const char *text, char out[BSKY_GITHUB_NAME_MAX]);
/* The values of the peer announcement (§7.4), whose text is the agent's
 * voice phrase bluesky.peer_announcement (modules/reflection/voice.h:
 * {{handle}}, {{url}}: no operational text is hard-coded): the
 * handle without "@", the GitHub profile URL. 0, or -1 when the handle is
 * empty, the GitHub name not a login, or a buffer too small. */
int bsky_announce_vars(const char *handle, const char *github, char *handle_out, size_t hcap,
                       char *url_out, size_t ucap);

#endif
