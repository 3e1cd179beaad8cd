/*
 * fuzz_gh_parse — the work loop's parsers of GitHub JSON (gh_work.h) on
 * any input: whatever parses as JSON is handed, whole and part by part, to
 * every parser; none may read out of bounds or leak, and what they accept
 * must hold the invariants checked below (NUL-terminated fixed fields,
 * shas of 40 hex digits or empty, counts within their arrays).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"

static void check_sha(const char *s)
{
	size_t n = strlen(s);
	if (n != 0 && (n != GH_SHA_LEN || strspn(s, "0123456789abcdef") != n))
		abort();
}

static void all_parsers(const cJSON *v)
{
	struct ga_err err = {{0}};
	struct gh_pull p;
	if (gh_pull_parse(v, &p, &err) == 0) {
		if (p.number < 1 || !p.head_ref[0] || !p.base_ref[0] || !p.title || !p.body ||
		    p.n_requested > GH_REVIEWERS_MAX)
			abort();
		check_sha(p.head_sha);
		check_sha(p.base_sha);
		check_sha(p.merge_commit_sha);
	}
	gh_pull_clear(&p);
	struct gh_repo_info ri;
	if (gh_repo_parse(v, &ri, &err) == 0 && (!ri.name[0] || !ri.owner[0]))
		abort();
	struct gh_branch_info b;
	if (gh_branch_parse(v, &b, &err) == 0) {
		if (!b.name[0] || strlen(b.sha) != GH_SHA_LEN)
			abort();
	}
	struct gh_content ct;
	if (gh_content_parse(v, &ct, &err) == 0) {
		if (!ct.path || (ct.data && ct.data[ct.len] != '\0'))
			abort();
		for (size_t i = 0; i < ct.n_entries; i++)
			if (!ct.entries[i].name || !ct.entries[i].path)
				abort();
	}
	gh_content_clear(&ct);
	struct gh_merge_result m;
	if (gh_merge_parse(v, &m, &err) == 0 && m.merged && strlen(m.sha) != GH_SHA_LEN)
		abort();
	size_t n;
	struct gh_pull_file *f;
	if (gh_pull_files_parse(v, &f, &n, &err) == 0)
		for (size_t i = 0; i < n; i++)
			if (!f[i].filename || !f[i].filename[0])
				abort();
	gh_pull_files_free(f, n);
	struct gh_review *r;
	if (gh_reviews_parse(v, &r, &n, &err) == 0)
		for (size_t i = 0; i < n; i++) {
			if (!r[i].body || !r[i].state[0])
				abort();
			check_sha(r[i].commit_id);
		}
	gh_reviews_free(r, n);
	struct gh_review_comment_info *c;
	if (gh_review_comments_parse(v, &c, &n, &err) == 0)
		for (size_t i = 0; i < n; i++)
			if (!c[i].path || !c[i].body)
				abort();
	gh_review_comments_free(c, n);
	struct gh_issue_event *e;
	if (gh_issue_events_parse(v, &e, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++)
			if (!e[i].event[0])
				abort();
		free(e);
	}
	struct gh_collaborator *cv;
	if (gh_collaborators_parse(v, &cv, &n, &err) == 0)
		free(cv);
	if (strlen(err.msg) >= sizeof err.msg)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	cJSON *root = cJSON_ParseWithLength((const char *)data, size);
	all_parsers(root); /* NULL too: what an HTML page becomes */
	const cJSON *x;
	cJSON_ArrayForEach(x, root) all_parsers(x);
	cJSON_Delete(root);
	return 0;
}
