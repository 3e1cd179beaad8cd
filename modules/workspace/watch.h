/*
 * watch — the workspaces an agent watches (spec github-commitments §3.1):
 * the repositories whose plans it reads and whose tasks it may claim, kept
 * in the state file "watched_workspaces" (modules/state: versioned envelope,
 * written atomically; the data carries its own format number so an agent
 * upgrade keeps the list), and where it learnt of each.
 *
 * A workspace is a repository whose name starts with the configured prefix
 * (WORKSPACE_PREFIX, default "www-lil-intdev-"), or any repository the
 * owner named himself. One record per repository (owner and name compared
 * case-insensitively, as GitHub does):
 *   owner, repo, url        https://github.com/<owner>/<repo>
 *   source                  how it came: created, owner, room, bluesky,
 *                           github (WSP_SOURCE_*)
 *   thread                  the conversation it was found in (a Bluesky
 *                           thread URI, "space:room"), "" when none; filled
 *                           in later when first unknown
 *   discovered_ms, polled_ms
 *   plans                   the open plan issues seen at the last poll
 *
 * Discovery (wsp_find_refs): "github.com/<owner>/<repo>" in a text, with or
 * without a scheme, the repository name starting with the prefix (compared
 * case-insensitively); the repository ends at '/', '?', '#', whitespace or
 * sentence punctuation, a trailing ".git" is dropped. Other GitHub pages
 * (github.com/orgs/…, /settings, …) are not repositories. Pure.
 *
 * Bounds: WSP_MAX_WATCHED records (a new one beyond is refused with a
 * sentence: the owner unwatches one first — `general-agent` never drops a
 * workspace it works in on its own), WSP_MAX_PLAN_NUMBERS plan numbers per
 * record (the newest kept), WSP_THREAD_MAX bytes of a thread,
 * WSP_MAX_UNWATCHED unwatched repositories remembered (the oldest
 * forgotten).
 *
 * Ownership: struct wsp_watchlist owns its records (wsp_watchlist_free;
 * a zeroed list is empty). Pointers into it are valid until the next call
 * that adds or removes a record.
 */
#ifndef GA_MODULES_WORKSPACE_WATCH_H
#define GA_MODULES_WORKSPACE_WATCH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/github/ghurl.h"
#include "common/err.h"
#include "modules/state/state.h"

#define WSP_STATE_NAME       "watched_workspaces"
#define WSP_STATE_FORMAT     1
#define WSP_MAX_WATCHED      32
#define WSP_MAX_PLAN_NUMBERS 16
#define WSP_MAX_UNWATCHED    32
#define WSP_THREAD_MAX       300
#define WSP_PREFIX_MAX       64
#define WSP_DEFAULT_PREFIX   "www-lil-intdev-"
#define WSP_REPO_FULL_MAX    (GH_OWNER_MAX + GH_REPO_MAX + 2) /* "owner/repo" */

enum wsp_source {
	WSP_SOURCE_CREATED,
	WSP_SOURCE_OWNER,
	WSP_SOURCE_ROOM,
	WSP_SOURCE_BLUESKY,
	WSP_SOURCE_GITHUB,
	WSP_SOURCE_COUNT,
};
const char *wsp_source_name(enum wsp_source s); /* "created", "owner", ... */
int wsp_source_parse(const char *s);            /* -1 when unknown */

struct wsp_watch {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
	enum wsp_source source;
	char thread[WSP_THREAD_MAX];
	int64_t discovered_ms;
	int64_t polled_ms; /* 0 = never */
	int plans[WSP_MAX_PLAN_NUMBERS];
	size_t n_plans;
};

/* A repository (named in a text, or unwatched). */
struct wsp_ref {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
};

struct wsp_watchlist {
	struct wsp_watch *w;
	size_t n;
	/* Unwatched by the owner, oldest first: discovery does not bring
	 * them back (wsp_watch_unwatched); the owner's own watch and a
	 * workspace we create do. At the bound the oldest is forgotten. */
	struct wsp_ref unwatched[WSP_MAX_UNWATCHED];
	size_t n_unwatched;
};

void wsp_watchlist_free(struct wsp_watchlist *l);

/* The record of owner/repo (any case), or NULL. */
struct wsp_watch *wsp_watch_find(struct wsp_watchlist *l, const char *owner, const char *repo);

/* Watches owner/repo. 1 added; 0 already watched (a thread is filled in
 * when the record had none); -1 with err (a name GitHub would refuse, or
 * WSP_MAX_WATCHED reached). thread may be NULL. The owner's watch and
 * our own (WSP_SOURCE_OWNER, WSP_SOURCE_CREATED) take the repository off
 * the unwatched ones. */
int wsp_watch_add(struct wsp_watchlist *l, const char *owner, const char *repo, enum wsp_source src,
                  const char *thread, int64_t now_ms, struct ga_err *err);
/* Stops watching owner/repo and remembers it as unwatched. 1 removed, 0
 * not watched (nothing remembered). */
int wsp_watch_remove(struct wsp_watchlist *l, const char *owner, const char *repo);
/* True when the owner unwatched owner/repo (and no watch of the owner or
 * of ours came since). */
bool wsp_watch_unwatched(const struct wsp_watchlist *l, const char *owner, const char *repo);
/* Replaces the record's plan numbers (the newest WSP_MAX_PLAN_NUMBERS). */
void wsp_watch_set_plans(struct wsp_watch *w, const int *plans, size_t n, int64_t now_ms);

/* "https://github.com/<owner>/<repo>" into out. */
void wsp_watch_url(const struct wsp_watch *w, char *out, size_t cap);

/* {"format":1,"workspaces":[{owner,repo,source,thread,discoveredMs,
 * polledMs,plans}],"unwatched":[{owner,repo}]}. Caller frees. */
cJSON *wsp_watchlist_to_json(const struct wsp_watchlist *l);
/* Reads what wsp_watchlist_to_json wrote (replacing l's records). Records
 * that do not read (a bad name, a missing field) are skipped and counted
 * in *skipped (may be NULL); "unwatched" may be missing (a file of an
 * older version). -1 with err when data is not that object. */
int wsp_watchlist_from_json(struct wsp_watchlist *l, const cJSON *data, size_t *skipped,
                            struct ga_err *err);

/* The state file: load (a missing file is an empty list; a file from
 * another version is kept, the data has its own format) and save. */
int wsp_watchlist_load(struct wsp_watchlist *l, const struct state_store *st, struct ga_err *err);
int wsp_watchlist_save(const struct wsp_watchlist *l, const struct state_store *st, int64_t now_ms,
                       struct ga_err *err);

/* Finds workspace repositories (name starting with prefix, any case) in
 * text: at most max, without duplicates. Returns the number found. */
size_t wsp_find_refs(const char *text, const char *prefix, struct wsp_ref *out, size_t max);

/* True when repo starts with prefix (ASCII case-insensitive). */
bool wsp_has_prefix(const char *repo, const char *prefix);

#endif
