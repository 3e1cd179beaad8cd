/*
 * perms — send permissions (seed 002): may this agent send
 * to this target?
 *
 * Targets are keys of ':'-separated segments, one form per kind of send:
 *   space:<room>
 *   bluesky:post
 *   bluesky:reply:<did>                    (a DID holds ':' itself:
 *                                           bluesky:reply:did:plc:abc)
 *   bluesky:like:<did>                     (a like of a post by <did>)
 *   bluesky:follow:<did>                   (following the account <did>)
 *   bluesky:delete                         (deleting one of the agent's own
 *                                           records: feed pruning; the
 *                                           port refuses any other repo)
 *   github:<owner>:<repo>:issue:<n>        a comment on issue n
 *   github:<owner>:<repo>:pr:<n>           a comment on pull request n
 *   github:<owner>:<repo>:reaction:<n>     a reaction on issue / PR n or one
 *                                          of its comments
 *   github:<owner>:<repo>:delete:<n>       deleting one of the agent's own
 *                                          comments on issue / PR n
 *   github:<owner>:<repo>:edit:<n>         changing issue / PR n: body, state,
 *                                          labels, assignees (a plan's tasks)
 *   github:<owner>:<repo>:review:<n>       a review of pull request n
 *   github:<owner>:<repo>:merge:<n>        merging pull request n
 *   github:<owner>:<repo>:new-issue        opening an issue
 *   github:<owner>:<repo>:new-pr           opening a pull request
 *   github:<owner>:<repo>:push             pushing a branch
 *   github:<owner>:<repo>:delete-branch    deleting a branch
 *   github:<owner>:<repo>:create-repo      creating the repository (a
 *                                          workspace from its template)
 * A pattern is such a key in which whole segments may be `*`; one `*`
 * matches ONE OR MORE segments (`github:acme:*` matches every issue, PR and
 * new issue of every acme repository; `space:*` every room).
 *
 * Modes: bypass (default: everything is allowed; the lists are kept but not
 * applied), allowlist (only what an allow pattern matches), denylist
 * (everything except what a deny pattern matches). No target is implicitly
 * allowed: a default install (no file: bypass) follows peers and prunes its
 * own feed as before; in allowlist mode follows and deletes need a pattern
 * like any send ("bluesky:follow:*", "bluesky:delete", or "bluesky:*").
 *
 * Canonical spelling — so that no spelling of a name slips past a rule, both
 * patterns and targets are canonicalised before they are compared, and what
 * cannot be canonicalised is refused (a pattern when it is added, a target
 * when it is checked):
 *   - the fixed words (space, bluesky, github, post, reply, like, follow,
 *     delete, did and the GitHub kinds above) are ASCII case-folded;
 *   - GitHub owner and repository names are ASCII case-folded (GitHub treats
 *     them case-insensitively) and must use only the characters GitHub
 *     allows (owner: A-Z a-z 0-9 '-', 1..39, no leading '-'; repository:
 *     A-Z a-z 0-9 '.' '_' '-', 1..100, not "." or ".."); a trailing ".git" on
 *     a repository is removed (GitHub resolves "x.git" to "x");
 *   - issue and PR numbers are decimal, 1..2147483647; leading zeros are
 *     removed ("03" is "3");
 *   - DIDs: the method and, for did:plc, the identifier are lower-cased; for
 *     did:web the domain is lower-cased;
 *   - anything outside printable ASCII (Unicode look-alikes such as a
 *     Cyrillic 'а' or a full-width letter), whitespace, control characters
 *     and '%' (percent-encoding) are refused, never decoded: a name that needs
 *     them is not a name GitHub, Bluesky or the space would route to us;
 *   - space rooms are compared exactly (the space server does so).
 * Refused when added: empty segments ("a::b", leading or trailing ':'),
 * partial-segment wildcards ("gh*"), unknown platforms, wrong arity for the
 * platform, non-numeric numbers, bad characters; the error names which.
 *
 * Storage: <memory>/send_permissions.json, a plain JSON file
 *   {"mode":"allowlist","allowlist":[...],"denylist":[...]}
 * written atomically (fsx_write_atomic). Not a modules/state envelope on
 * purpose: the state loader resets a file saved by another version to empty,
 * and an empty permissions file is bypass — a version bump must never open
 * what the owner closed. A file that cannot be read or holds an invalid
 * pattern makes the loaded permissions BROKEN: every check is denied (fail
 * closed) with a reason that says how to fix it (`general-agent cross
 * clear` rewrites the file).
 *
 * Bounds: at most PERMS_MAX_PATTERNS per list, PERMS_KEY_MAX bytes and
 * PERMS_MAX_SEGMENTS segments per key or pattern; the file is read up to
 * PERMS_FILE_MAX_BYTES.
 *
 * A running daemon calls perms_refresh() before each check: one stat(2); the
 * file is re-read only when its inode, size or modification time changed.
 *
 * Pure except perms_load/perms_save/perms_refresh/perms_open. Not
 * thread-safe; one struct per loop.
 */
#ifndef GA_MODULES_OUTBOUND_PERMS_H
#define GA_MODULES_OUTBOUND_PERMS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "modules/decisions/decision.h"

#define PERMS_MAX_PATTERNS   256
#define PERMS_KEY_MAX        512
#define PERMS_MAX_SEGMENTS   16
#define PERMS_FILE_MAX_BYTES (256 * 1024)
#define PERMS_FILE_NAME      "send_permissions.json"

enum perms_mode { PERMS_BYPASS, PERMS_ALLOWLIST, PERMS_DENYLIST };
enum perms_list { PERMS_LIST_ALLOW, PERMS_LIST_DENY };

struct perms;

/* Empty permissions in bypass mode, not tied to a file. */
struct perms *perms_new(void);
/* perms_new() + perms_load(<memory_dir>/send_permissions.json). A missing
 * file is bypass. A bad file gives BROKEN permissions (deny everything) and
 * err says why; the struct is still returned (NULL only when out of memory
 * is impossible: xalloc aborts). */
struct perms *perms_open(const char *memory_dir, struct ga_err *err);
void perms_free(struct perms *p);

/* Canonical form of a target (is_pattern false) or pattern (true) into out.
 * 0, or -1 with err naming what is wrong (see the header). */
int perms_canonical(const char *s, bool is_pattern, char *out, size_t cap, struct ga_err *err);

enum perms_mode perms_mode_of(const struct perms *p);
const char *perms_mode_name(enum perms_mode m);
int perms_mode_parse(const char *s); /* -1 when unknown */
void perms_set_mode(struct perms *p, enum perms_mode m);
/* Adds a pattern (canonicalised) to a list. 1 added, 0 already there, -1
 * refused (err names the problem, or the list is full). */
int perms_add(struct perms *p, enum perms_list which, const char *pattern, struct ga_err *err);
/* Removes a pattern (compared canonically) from both lists; returns how
 * many entries were removed (0: not there, or not a valid pattern). */
int perms_remove(struct perms *p, const char *pattern);
/* Back to bypass with no patterns; clears BROKEN. */
void perms_clear(struct perms *p);
size_t perms_count(const struct perms *p, enum perms_list which);
/* The i-th canonical pattern of a list (borrowed), NULL past the end. */
const char *perms_pattern(const struct perms *p, enum perms_list which, size_t i);
/* Non-NULL (borrowed) when the loaded file was bad: why. */
const char *perms_broken(const struct perms *p);

/* Reads path (missing → bypass, no patterns). On a bad file the
 * permissions become BROKEN and -1 is returned with err. */
int perms_load(struct perms *p, const char *path, struct ga_err *err);
/* Writes the permissions atomically to path (creating the directory). */
int perms_save(const struct perms *p, const char *path, struct ga_err *err);
/* When p came from perms_open: re-reads the file if it changed since the
 * last read (inode, size, mtime). 1 re-read, 0 unchanged, -1 re-read and bad
 * (BROKEN; err says why). */
int perms_refresh(struct perms *p, struct ga_err *err);

struct perms_verdict {
	struct decision d; /* rule "send_permission": PASS allow, DROP deny */
	bool allowed;
	char pattern[PERMS_KEY_MAX];    /* the pattern that decided; "" none */
	char target[PERMS_KEY_MAX];     /* the canonical target; "" if malformed */
	char suggestion[PERMS_KEY_MAX]; /* a near-miss allowed target; "" none */
};

/* Pure: is target allowed? A malformed target is denied in every mode. */
void perms_check(const struct perms *p, const char *target, struct perms_verdict *out);

/* The seed's refusal text for a denied verdict (several lines, ending in
 * '\n'). Caller frees. */
char *perms_denial_text(const struct perms *p, const char *agent, const char *target,
                        const struct perms_verdict *v);

#endif
