/*
 * fuzz_ws — what the work loop reads from others: workspace links in any
 * text (Bluesky posts, room chats), and the watch list's state file. Every
 * link found names a valid GitHub repository with the prefix, without
 * duplicates; a list read back saves and reads back the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "modules/workspace/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	struct wsp_ref r[8];
	size_t n = wsp_find_refs(s, WSP_DEFAULT_PREFIX, r, 8);
	if (n > 8)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (!gh_valid_owner(r[i].owner) || !gh_valid_repo(r[i].repo) ||
		    !wsp_has_prefix(r[i].repo, WSP_DEFAULT_PREFIX))
			abort();
		for (size_t j = 0; j < i; j++)
			if (strcasecmp(r[i].owner, r[j].owner) == 0 &&
			    strcasecmp(r[i].repo, r[j].repo) == 0)
				abort();
	}
	cJSON *j = cJSON_Parse(s);
	struct wsp_watchlist l = {0};
	if (j && wsp_watchlist_from_json(&l, j, NULL, NULL) == 0) {
		if (l.n > WSP_MAX_WATCHED)
			abort();
		cJSON *out = wsp_watchlist_to_json(&l);
		struct wsp_watchlist b = {0};
		if (wsp_watchlist_from_json(&b, out, NULL, NULL) != 0 || b.n != l.n)
			abort();
		wsp_watchlist_free(&b);
		cJSON_Delete(out);
	}
	wsp_watchlist_free(&l);
	cJSON_Delete(j);
	free(s);
	return 0;
}
