/*
 * fuzz_ghurl — the parsers of outside text in adapters/github: issue and PR
 * links in free text and alone, notification API URLs, the Link header, and
 * the classification of an answer (GitHub's JSON error body or an HTML
 * page). The input is used whole by each; none may read out of bounds, and
 * every result must satisfy the invariants checked below.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/ghurl.h"
#include "adapters/github/github.h"

static const char *no_hdr(void *ud, const char *name)
{
	(void)name;
	return ud;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	struct gh_ref refs[16];
	size_t n = gh_find_urls(s, refs, 16);
	for (size_t i = 0; i < n; i++)
		if (!gh_valid_owner(refs[i].owner) || !gh_valid_repo(refs[i].repo) ||
		    refs[i].number < 1 || refs[i].number > GH_NUMBER_MAX)
			abort();
	struct gh_repo_ref rr;
	if (gh_find_repo(s, &rr) == 1 && (!gh_valid_owner(rr.owner) || !gh_valid_repo(rr.repo)))
		abort();
	struct gh_ref r;
	struct ga_err err = {{0}};
	if (gh_parse_url(s, &r, &err) == 0 && (!gh_valid_owner(r.owner) || !gh_valid_repo(r.repo)))
		abort();
	if (gh_parse_api_url("https://api.github.com", s, &r, &err) == 0 &&
	    (!gh_valid_owner(r.owner) || !gh_valid_repo(r.repo)))
		abort();
	char next[GH_URL_MAX];
	int ln = gh_link_next(s, next, sizeof next);
	if (ln == 1 && strlen(next) >= sizeof next)
		abort();

	bool primary;
	int64_t ra;
	char msg[GA_ERR_MSG_MAX];
	long status = size ? 400 + data[0] % 200 : 500;
	gh_classify(status, size & 1 ? "text/html" : "application/json", s, size, no_hdr,
	            size & 2 ? "0" : NULL, "fuzz", true, 0, &primary, &ra, msg, sizeof msg);
	if (strlen(msg) >= sizeof msg)
		abort();
	free(s);
	return 0;
}
