/*
 * ghurl — see ghurl.h. A hand-written matcher rather than a regex: each
 * refusal can then say exactly which part was wrong.
 */
#include "adapters/github/ghurl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool owner_char(char c)
{
	return isalnum((unsigned char)c) || c == '-';
}

static bool repo_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

bool gh_valid_owner(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > GH_OWNER_MAX || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!owner_char(s[i]))
			return false;
	return true;
}

bool gh_valid_repo(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > GH_REPO_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!repo_char(s[i]))
			return false;
	return true;
}

static bool prefix_ci(const char *s, const char *p)
{
	return strncasecmp(s, p, strlen(p)) == 0;
}

/* Copies a segment of allowed characters ending at '/', into out (cap
 * includes the NUL). Returns its length, 0 when empty or too long. */
static size_t segment(const char *s, bool (*ok)(char), char *out, size_t cap)
{
	size_t n = 0;
	while (s[n] && s[n] != '/' && ok(s[n]))
		n++;
	if (n == 0 || n >= cap)
		return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return n;
}

/* Parses "OWNER/REPO/KIND/N" followed by an end character. *end receives the
 * first byte after N. Returns 0 or -1 with err. */
static int parse_path(const char *p, const char *whole, struct gh_ref *out, const char **end,
                      bool api, struct ga_err *err)
{
	struct gh_ref r = {0};
	size_t n = segment(p, owner_char, r.owner, sizeof r.owner);
	if (!n || p[n] != '/' || !gh_valid_owner(r.owner))
		return err_set(err, "'%.200s' does not name a valid GitHub owner after the host",
		               whole);
	p += n + 1;
	n = segment(p, repo_char, r.repo, sizeof r.repo);
	if (!n || !gh_valid_repo(r.repo))
		return err_set(err, "'%.200s' does not name a valid repository after the owner",
		               whole);
	p += n;
	if (*p != '/')
		return err_set(err,
		               "'%.200s' is a repository, not an issue or pull request: expected "
		               ".../%s/%s/issues/N or .../pull/N",
		               whole, r.owner, r.repo);
	p++;
	if (prefix_ci(p, "issues/")) {
		r.kind = GH_REF_ISSUE;
		p += 7;
	} else if (!api && prefix_ci(p, "pull/")) {
		r.kind = GH_REF_PULL;
		p += 5;
	} else if (prefix_ci(p, "pulls/")) {
		r.kind = GH_REF_PULL;
		p += 6;
	} else if (prefix_ci(p, "discussions/")) {
		return err_set(err,
		               "'%.200s' is a discussion: only issue and pull request links are "
		               "supported",
		               whole);
	} else {
		return err_set(err,
		               "'%.200s' is not an issue or pull request link: expected "
		               ".../%s/%s/issues/N or .../pull/N",
		               whole, r.owner, r.repo);
	}
	int64_t num = 0;
	size_t digits = 0;
	while (isdigit((unsigned char)p[digits])) {
		if (num > GH_NUMBER_MAX / 10)
			return err_set(err, "'%.200s' has an issue number too large to be real",
			               whole);
		num = num * 10 + (p[digits] - '0');
		digits++;
	}
	if (digits == 0 || num < 1 || num > GH_NUMBER_MAX)
		return err_set(err,
		               "'%.200s' has no issue or pull request number (a positive integer)",
		               whole);
	p += digits;
	*out = r;
	out->number = num;
	*end = p;
	return 0;
}

static bool url_end(char c, bool in_text)
{
	if (c == '\0' || c == '/' || c == '?' || c == '#')
		return true;
	/* In free text the link is followed by prose: ". ", ")", ",". */
	return in_text && !isalnum((unsigned char)c) && c != '_' && c != '-';
}

/* Skips an optional scheme and "www."; returns the position of "github.com/"
 * or NULL. */
static const char *after_host(const char *p)
{
	if (prefix_ci(p, "https://"))
		p += 8;
	else if (prefix_ci(p, "http://"))
		p += 7;
	if (prefix_ci(p, "www."))
		p += 4;
	if (!prefix_ci(p, "github.com/"))
		return NULL;
	return p + 11;
}

int gh_parse_url(const char *url, struct gh_ref *out, struct ga_err *err)
{
	if (!url)
		return err_set(err, "no GitHub link was given");
	while (isspace((unsigned char)*url))
		url++;
	size_t len = strlen(url);
	while (len && isspace((unsigned char)url[len - 1]))
		len--;
	char buf[GH_URL_MAX];
	if (len == 0)
		return err_set(err, "no GitHub link was given (the text is empty)");
	if (len >= sizeof buf)
		return err_set(err, "the GitHub link is longer than %d bytes", GH_URL_MAX - 1);
	memcpy(buf, url, len);
	buf[len] = '\0';
	const char *p = after_host(buf);
	if (!p)
		return err_set(err,
		               "'%.200s' is not a github.com link: expected "
		               "https://github.com/OWNER/REPO/issues/N or .../pull/N",
		               buf);
	const char *end;
	if (parse_path(p, buf, out, &end, false, err) != 0)
		return -1;
	if (!url_end(*end, false))
		return err_set(err, "'%.200s' has something glued to the issue number", buf);
	return 0;
}

static bool same_ref(const struct gh_ref *a, const struct gh_ref *b)
{
	return a->number == b->number && a->kind == b->kind &&
	       strcasecmp(a->owner, b->owner) == 0 && strcasecmp(a->repo, b->repo) == 0;
}

size_t gh_find_urls(const char *text, struct gh_ref *out, size_t max)
{
	size_t n = 0;
	if (!text)
		return 0;
	for (const char *s = text; *s && n < max; s++) {
		/* A candidate starts at a scheme, "www." or "github.com" that is
		 * not the tail of a longer word or host. */
		if (s > text && (isalnum((unsigned char)s[-1]) || s[-1] == '.' || s[-1] == '-' ||
		                 s[-1] == '/' || s[-1] == '_'))
			continue;
		const char *p = after_host(s);
		if (!p)
			continue;
		struct gh_ref r;
		const char *end;
		if (parse_path(p, "", &r, &end, false, NULL) != 0 || !url_end(*end, true))
			continue;
		bool dup = false;
		for (size_t i = 0; i < n && !dup; i++)
			dup = same_ref(&out[i], &r);
		if (!dup)
			out[n++] = r;
		s = end - 1;
	}
	return n;
}

/* First path segments of github.com that are GitHub's pages, not owners. */
static const char *const reserved_owners[] = {
        "about",       "apps",   "collections",   "enterprise", "explore", "features", "login",
        "marketplace", "new",    "notifications", "orgs",       "pricing", "search",   "settings",
        "sponsors",    "topics", "trending",      "users",      NULL};

int gh_find_repo(const char *text, struct gh_repo_ref *out)
{
	if (!text)
		return 0;
	for (const char *s = text; *s; s++) {
		if (s > text && (isalnum((unsigned char)s[-1]) || s[-1] == '.' || s[-1] == '-' ||
		                 s[-1] == '/' || s[-1] == '_'))
			continue;
		const char *p = after_host(s);
		if (!p)
			continue;
		struct gh_repo_ref r;
		memset(&r, 0, sizeof r);
		size_t n = segment(p, owner_char, r.owner, sizeof r.owner);
		if (!n || p[n] != '/' || !gh_valid_owner(r.owner))
			continue;
		bool reserved = false;
		for (size_t i = 0; reserved_owners[i] && !reserved; i++)
			reserved = strcasecmp(r.owner, reserved_owners[i]) == 0;
		if (reserved)
			continue;
		p += n + 1;
		n = segment(p, repo_char, r.repo, sizeof r.repo);
		if (!n)
			continue;
		while (n > 0 && r.repo[n - 1] == '.') /* "see github.com/o/r." */
			r.repo[--n] = '\0';
		if (n > 4 && strcasecmp(r.repo + n - 4, ".git") == 0)
			r.repo[n -= 4] = '\0';
		if (!gh_valid_repo(r.repo))
			continue;
		*out = r;
		return 1;
	}
	return 0;
}

int gh_parse_api_url(const char *api_base, const char *url, struct gh_ref *out, struct ga_err *err)
{
	if (!url || !api_base)
		return err_set(err, "no API URL was given");
	size_t bl = strlen(api_base);
	while (bl && api_base[bl - 1] == '/')
		bl--;
	if (strncmp(url, api_base, bl) != 0 || strncmp(url + bl, "/repos/", 7) != 0)
		return err_set(err, "'%.200s' is not an API URL under %.*s/repos/", url, (int)bl,
		               api_base);
	const char *end;
	if (parse_path(url + bl + 7, url, out, &end, true, err) != 0)
		return -1;
	if (*end != '\0')
		return err_set(err, "'%.200s' points below an issue, not at one", url);
	return 0;
}

int gh_link_next(const char *link, char *out, size_t cap)
{
	if (!link)
		return 0;
	const char *p = link;
	/* Link: <url>; rel="next", <url>; rel="last" */
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			break;
		if (*p != '<')
			return -1;
		const char *u = ++p;
		const char *ue = strchr(u, '>');
		if (!ue)
			return -1;
		p = ue + 1;
		bool next = false;
		/* parameters up to the next ',' that is outside quotes */
		while (*p && *p != ',') {
			while (*p == ' ' || *p == '\t' || *p == ';')
				p++;
			if (prefix_ci(p, "rel=")) {
				p += 4;
				const char *v = p;
				size_t vl;
				if (*p == '"') {
					v = ++p;
					const char *q = strchr(p, '"');
					if (!q)
						return -1;
					vl = (size_t)(q - v);
					p = q + 1;
				} else {
					while (*p && *p != ';' && *p != ',' && *p != ' ')
						p++;
					vl = (size_t)(p - v);
				}
				/* rel may hold several space-separated values */
				for (const char *t = v; t < v + vl;) {
					const char *te = t;
					while (te < v + vl && *te != ' ')
						te++;
					if (te - t == 4 && strncasecmp(t, "next", 4) == 0)
						next = true;
					t = te + 1;
				}
			} else {
				while (*p && *p != ';' && *p != ',')
					p++;
			}
		}
		if (next) {
			size_t ul = (size_t)(ue - u);
			if (ul == 0 || ul >= cap)
				return -1;
			memcpy(out, u, ul);
			out[ul] = '\0';
			return 1;
		}
	}
	return 0;
}

void gh_ref_html_url(const struct gh_ref *ref, char *out, size_t cap)
{
	snprintf(out, cap, "https://github.com/%s/%s/%s/%lld", ref->owner, ref->repo,
	         ref->kind == GH_REF_PULL ? "pull" : "issues", (long long)ref->number);
}
