/*
 * ghurl — GitHub URLs: issue and pull request links people paste, the API
 * URLs notifications carry, and the Link header of paginated answers
 * (spec github-commitments §1.5). Pure functions, no allocation.
 *
 * Accepted as an issue/PR link (case-insensitive scheme, host and kind):
 *   [http[s]://][www.]github.com/OWNER/REPO/issues/N
 *   [http[s]://][www.]github.com/OWNER/REPO/pull/N     (also /pulls/N)
 * optionally followed by '/', '?' or '#' and anything (…/pull/5/files,
 * …/issues/5#issuecomment-1). OWNER is 1–39 letters, digits or '-' (not
 * first); REPO 1–100 letters, digits, '.', '_' or '-' (not "." or "..");
 * N is 1..GH_NUMBER_MAX. Discussions, commits, releases, repository pages
 * and other hosts are refused with a sentence saying what was expected.
 */
#ifndef GA_ADAPTERS_GITHUB_GHURL_H
#define GA_ADAPTERS_GITHUB_GHURL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define GH_OWNER_MAX  39
#define GH_REPO_MAX   100
#define GH_NUMBER_MAX ((int64_t)2147483647)
#define GH_URL_MAX    2048 /* longest Link target followed */

enum gh_ref_kind { GH_REF_ISSUE = 0, GH_REF_PULL };

struct gh_ref {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
	int64_t number;
	enum gh_ref_kind kind;
};

bool gh_valid_owner(const char *s);
bool gh_valid_repo(const char *s);

/* Parses one issue or PR URL (surrounding white space allowed). Returns 0,
 * or -1 with err saying why it is not one. */
int gh_parse_url(const char *url, struct gh_ref *out, struct ga_err *err);

/* Every issue/PR URL in free text, in order of appearance, without
 * duplicates (same owner/repo/kind/number, owner and repo compared
 * case-insensitively), at most max. A match must not be glued to a longer
 * host name ("notgithub.com/…" is not one). Returns the number found. */
size_t gh_find_urls(const char *text, struct gh_ref *out, size_t max);

struct gh_repo_ref {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
};

/* The first repository named in free text as [http[s]://][www.]github.com/
 * OWNER/REPO (an issue or PR link names its repository too), for "the repo
 * of this conversation" (spec §2.1). A trailing ".git" and sentence
 * punctuation are dropped; GitHub's own pages (github.com/orgs/…,
 * /settings/…, /topics/…, …) are not repositories and are skipped. Returns
 * 1 and fills out, or 0 when the text names none. */
int gh_find_repo(const char *text, struct gh_repo_ref *out);

/* An API URL as notifications carry it in subject.url:
 * <api_base>/repos/OWNER/REPO/issues/N or …/pulls/N. api_base is the
 * configured API URL (GITHUB_API_URL) without the trailing '/'. -1 with err
 * for anything else (commits, releases, discussions, another host). */
int gh_parse_api_url(const char *api_base, const char *url, struct gh_ref *out, struct ga_err *err);

/* The rel="next" target of a Link header into out. Returns 1 when found,
 * 0 when the header has no next link, -1 when it is malformed or the target
 * is longer than cap - 1. */
int gh_link_next(const char *link, char *out, size_t cap);

/* "https://github.com/OWNER/REPO/issues/N" (or /pull/N) into out. */
void gh_ref_html_url(const struct gh_ref *ref, char *out, size_t cap);

#endif
