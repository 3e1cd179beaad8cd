/* The pure rules of peer identity posts. See policy_peers.h. */
#include "modules/bluesky/policy_peers.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "modules/bluesky/policy_text.h"

/* ---- peers ------------------------------------------------------------------------------ */

static bool github_login_ok(const char *s, size_t n)
{
	if (n == 0 || n >= BSKY_GITHUB_NAME_MAX || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

int bsky_identity_text(const char *github, char *out, size_t cap)
{
	if (!github || !github_login_ok(github, strlen(github)))
		return -1;
	int n = snprintf(out, cap,
	                 BSKY_IDENTITY_MARKER "`%s` I am excited to use GitHub to work on projects "
	                                      "with my friends! https://github.com/%s",
	                 github, github);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

bool bsky_is_identity_post(const char *text)
{
	return text && strncmp(bsky_skip_space(text), BSKY_IDENTITY_MARKER,
	                       strlen(BSKY_IDENTITY_MARKER)) == 0;
}

static int take_login(const char *s, size_t n, char out[BSKY_GITHUB_NAME_MAX])
{
	if (!github_login_ok(s, n))
		return -1;
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}

int bsky_identity_github(const char *text, char out[BSKY_GITHUB_NAME_MAX])
{
	if (!text)
		return -1;
	/* `name` (on GitHub, or the identity post's own shape) */
	const char *b = strchr(text, '`');
	if (b) {
		const char *e = strchr(b + 1, '`');
		if (e && take_login(b + 1, (size_t)(e - b - 1), out) == 0)
			return 0;
	}
	/* github.com/<name> with one path segment */
	for (const char *p = text; (p = strcasestr(p, "github.com/")) != NULL; p++) {
		const char *s = p + 11;
		size_t n = 0;
		while (isalnum((unsigned char)s[n]) || s[n] == '-')
			n++;
		char end = s[n];
		if ((end == 0 || isspace((unsigned char)end) || end == ')' || end == ',' ||
		     end == '.') &&
		    take_login(s, n, out) == 0)
			return 0;
	}
	/* I'm / I am <name> on GitHub */
	static const char *lead[] = {"I'm ", "I am "};
	for (size_t k = 0; k < 2; k++) {
		for (const char *p = text; (p = strcasestr(p, lead[k])) != NULL; p++) {
			const char *s = p + strlen(lead[k]);
			size_t n = 0;
			while (isalnum((unsigned char)s[n]) || s[n] == '-')
				n++;
			if (strncasecmp(s + n, " on GitHub", 10) == 0 && take_login(s, n, out) == 0)
				return 0;
		}
	}
	return -1;
}

int bsky_announce_vars(const char *handle, const char *github, char *handle_out, size_t hcap,
                       char *url_out, size_t ucap)
{
	if (!handle || !*handle || !github || !github_login_ok(github, strlen(github)))
		return -1;
	const char *h = handle[0] == '@' ? handle + 1 : handle;
	int a = snprintf(handle_out, hcap, "%s", h);
	int b = snprintf(url_out, ucap, "https://github.com/%s", github);
	return !*h || a < 0 || (size_t)a >= hcap || b < 0 || (size_t)b >= ucap ? -1 : 0;
}
