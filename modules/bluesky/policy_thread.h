/*
 * policy_thread — the pure rules of a reply the agent starts in a thread
 * it already knows (bsky_thread.c; a plan that came from Bluesky announced
 * where it was asked for): which post of the thread it answers, and the
 * text cut to Bluesky's bound.
 *
 * The thread is named the way the rest of the agent names it:
 *   "at://…"           the post that asked (a commitment's sourceThreadUri),
 *                      or the thread's root;
 *   "bluesky:at://…"   the conversation key (bsky_notes.c: "bluesky:" and
 *                      the root's URI; a workspace discovered in a thread).
 * It is looked up in the conversation store (what the notifications put
 * there): a conversation whose root it is, else the conversation holding
 * that post. The person who asked is the author of the named post when it
 * is a reply in the thread (and not ours); when the name is the root or
 * the key (anyone may have opened the thread; the asking came later), the
 * author of the thread's latest post that is not ours. The reply's parent
 * is that person's latest post in the thread (the newest by time; among
 * posts of unknown time, the one stored last), so the answer lands where
 * the person is, not under a post of someone else.
 *
 * Pure functions of their arguments (policy.h's rules).
 */
#ifndef GA_MODULES_BLUESKY_POLICY_THREAD_H
#define GA_MODULES_BLUESKY_POLICY_THREAD_H

#include <stddef.h>

#include "modules/conversation/store.h"
#include "modules/decisions/decision.h"

#define BSKY_THREAD_URI_MAX 512 /* as ATP_URI_MAX */
#define BSKY_THREAD_DID_MAX 256

/* Where a reply in a known thread goes. */
struct bsky_thread_target {
	char conversation[BSKY_THREAD_URI_MAX + 16]; /* "bluesky:<root uri>" */
	char root[BSKY_THREAD_URI_MAX];              /* the thread's root post */
	char parent[BSKY_THREAD_URI_MAX];            /* the post answered */
	char asker[BSKY_THREAD_DID_MAX];             /* its author's DID */
};

/* The reply's place in thread (the forms above) from the store. 0 with t
 * filled and d PASS (rule "thread_known"); -1 with d REJECT and the rule:
 *   "thread_name"     not an at:// URI (nor "bluesky:" and one);
 *   "thread_unknown"  no conversation has it as its root nor holds it
 *                     (never seen, or forgotten at the store's bound);
 *   "thread_no_asker" only our own posts are known in it. */
int bsky_thread_pick(const struct conv_store *s, const char *thread, struct bsky_thread_target *t,
                     struct decision *d);

/* text fitted to max graphemes for a post: unchanged when it fits; else
 * the words before its first link are cut (at a word boundary when one is
 * near, "…" after them) and the links are kept whole — the links and what
 * lies between them when they fit with the cut words, else the first link
 * alone. A text without a link is cut at the end the same way. Caller
 * frees; NULL (d REJECT, rule "text_bound") when not even the first link
 * fits, or the text is empty. d (may be NULL) says what was done. */
char *bsky_thread_fit(const char *text, size_t max, struct decision *d);

#endif
