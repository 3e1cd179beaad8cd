/*
 * ghfake_pulls — pull requests on the real bare repositories: creation with
 * GitHub's refusals (a head that was not pushed, no commits between, one
 * already open), mergeability computed by git merge-tree, the changed files
 * from git diff, reviews with inline comments placed on the diff, requested
 * reviewers, and merges (squash, merge, rebase) that write a real commit on
 * the base branch.
 *
 * A PR is an issue (struct gf_issue with a gf_pull): comments, labels and
 * assignees are the issue's; closing the issue closes the PR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "tests/fakes/github/ghfake_int.h"

#define PATCH_MAX ((size_t)1024 * 1024) /* a file's patch: GitHub leaves larger ones out */

void gf_pull_free(struct gf_pull *p)
{
	cJSON_Delete(p->requested);
	for (size_t i = 0; i < p->n_reviews; i++) {
		free(p->reviews[i].author);
		free(p->reviews[i].body);
	}
	for (size_t i = 0; i < p->n_rcomments; i++) {
		free(p->rcomments[i].author);
		free(p->rcomments[i].body);
		free(p->rcomments[i].path);
		free(p->rcomments[i].diff_hunk);
	}
	free(p->reviews);
	free(p->rcomments);
	free(p);
}

/* --- keeping PRs in step with their branches ---------------------------------- */

static void pull_ref(struct ghfake *f, const struct gf_repo *r, int64_t number, const char *sha)
{
	char ref[64];
	snprintf(ref, sizeof ref, "refs/pull/%lld/head", (long long)number);
	gf_update_ref(f, r, ref, sha, NULL);
}

void gf_pulls_sync(struct ghfake *f, struct gf_repo *r)
{
	if (!r->git)
		return;
	const char *argv[] = {"git", "for-each-ref", "--format=%(objectname) %(refname:lstrip=2)",
	                      "refs/heads/", NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv, .repo = r};
	if (gf_git(f, &run, &o) != 0) {
		gf_out_free(&o);
		return;
	}
	for (size_t i = 0; i < r->n_issues; i++) {
		struct gf_issue *is = r->issues[i];
		struct gf_pull *p = is->pr;
		if (!p || is->closed)
			continue;
		const char *head = NULL, *base = NULL;
		for (const char *l = o.out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "") {
			size_t ll = strcspn(l, "\n");
			if (ll <= GF_SHA_LEN + 1)
				continue;
			const char *name = l + GF_SHA_LEN + 1;
			size_t nl = ll - GF_SHA_LEN - 1;
			if (nl == strlen(p->head) && strncmp(name, p->head, nl) == 0)
				head = l;
			if (nl == strlen(p->base) && strncmp(name, p->base, nl) == 0)
				base = l;
		}
		if (base) {
			memcpy(p->base_sha, base, GF_SHA_LEN);
			p->base_sha[GF_SHA_LEN] = '\0';
		}
		if (head && strncmp(p->head_sha, head, GF_SHA_LEN) != 0) {
			memcpy(p->head_sha, head, GF_SHA_LEN);
			p->head_sha[GF_SHA_LEN] = '\0';
			pull_ref(f, r, is->number, p->head_sha);
			is->updated_ms = gf_now(f);
		}
		/* GitHub closes a PR whose head or base branch is deleted. */
		if (!head || !base) {
			gf_event_add(f, is, !head ? "head_ref_deleted" : "base_ref_deleted",
			             r->owner, NULL);
			gf_close_issue(f, is, true, r->owner);
		}
	}
	gf_out_free(&o);
}

/* --- diffs ------------------------------------------------------------------------ */

struct fdiff {
	char status[16];
	char *path, *prev;
	long add, del;
	char *patch; /* from the first "@@"; NULL for binary or oversized */
};

static void fdiffs_free(struct fdiff *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].prev);
		free(v[i].patch);
	}
	free(v);
}

static const char *status_name(char c)
{
	switch (c) {
	case 'A':
		return "added";
	case 'D':
		return "removed";
	case 'R':
		return "renamed";
	case 'C':
		return "copied";
	case 'T':
		return "changed";
	default:
		return "modified";
	}
}

/* The files changed between from and to, in git's order, with their
 * patches. NULL (and *n 0) when git fails. */
static struct fdiff *diff_files(struct ghfake *f, const struct gf_repo *r, const char *from,
                                const char *to, size_t *n)
{
	*n = 0;
	const char *ns[] = {
	        "git", "diff", "--no-color", "--no-ext-diff", "-M", "--name-status", "-z", from,
	        to,    "--",   NULL};
	const char *num[] = {"git", "diff",      "--no-color", "--no-ext-diff",
	                     "-M",  "--numstat", "-z",         from,
	                     to,    "--",        NULL};
	const char *pat[] = {"git", "diff", "--no-color", "--no-ext-diff", "-M", from,
	                     to,    "--",   NULL};
	struct gf_out a, b, c;
	struct gf_run ra = {.argv = ns, .repo = r}, rb = {.argv = num, .repo = r},
	              rc = {.argv = pat, .repo = r};
	struct fdiff *v = NULL;
	if (gf_git(f, &ra, &a) != 0 || gf_git(f, &rb, &b) != 0 || gf_git(f, &rc, &c) != 0)
		goto done;
	for (const char *p = a.out; p < a.out + a.out_len;) {
		const char *st = p;
		p += strlen(p) + 1;
		if (p >= a.out + a.out_len)
			break;
		v = gf_grow(v, *n + 1, sizeof *v);
		struct fdiff *d = &v[*n];
		memset(d, 0, sizeof *d);
		snprintf(d->status, sizeof d->status, "%s", status_name(st[0]));
		if (st[0] == 'R' || st[0] == 'C') {
			d->prev = gf_dup(p);
			p += strlen(p) + 1;
		}
		d->path = gf_dup(p < a.out + a.out_len ? p : "");
		p += strlen(p) + 1;
		(*n)++;
	}
	/* numstat: "add\tdel\tpath\0" or, for a rename, "add\tdel\t\0old\0new\0";
	 * binary files count "-". */
	size_t i = 0;
	for (const char *p = b.out; p < b.out + b.out_len && i < *n; i++) {
		v[i].add = strtol(p, NULL, 10);
		const char *t = strchr(p, '\t');
		v[i].del = t ? strtol(t + 1, NULL, 10) : 0;
		const char *t2 = t ? strchr(t + 1, '\t') : NULL;
		bool rename = t2 && t2[1] == '\0';
		p += strlen(p) + 1;
		if (rename) {
			p += strlen(p) + 1;
			p += strlen(p) + 1;
		}
	}
	/* The patch: one "diff --git" section per file, in the same order. */
	i = (size_t)-1;
	const char *sect = NULL;
	for (const char *l = c.out;; l = strchr(l, '\n') + 1) {
		bool last = !strchr(l, '\n');
		bool start = strncmp(l, "diff --git ", 11) == 0;
		if ((start || last) && sect && i < *n) {
			const char *end = start ? l : c.out + c.out_len;
			const char *hunk = NULL;
			for (const char *s = sect; s < end; s = strchr(s, '\n') + 1) {
				if (strncmp(s, "@@", 2) == 0) {
					hunk = s;
					break;
				}
				if (!strchr(s, '\n'))
					break;
			}
			size_t hl = hunk ? (size_t)(end - hunk) : 0;
			while (hl && hunk[hl - 1] == '\n')
				hl--;
			if (hunk && hl <= PATCH_MAX) {
				v[i].patch = malloc(hl + 1);
				if (!v[i].patch)
					gf_die("out of memory");
				memcpy(v[i].patch, hunk, hl);
				v[i].patch[hl] = '\0';
			}
		}
		if (last)
			break;
		if (start) {
			i++;
			sect = l;
		}
	}
done:
	gf_out_free(&a);
	gf_out_free(&b);
	gf_out_free(&c);
	return v;
}

/* The merge base of the PR's diff: at the merge for a merged PR, else of
 * its base and head now. */
static bool pull_range(struct ghfake *f, const struct gf_repo *r, const struct gf_pull *p,
                       char mb[GF_SHA_LEN + 1])
{
	if (p->merged && p->merge_base[0]) {
		memcpy(mb, p->merge_base, GF_SHA_LEN + 1);
		return true;
	}
	const char *argv[] = {"git", "merge-base", p->base_sha, p->head_sha, NULL};
	return p->base_sha[0] && p->head_sha[0] &&
	       gf_git_line(f, r, argv, mb, GF_SHA_LEN + 1) == 0 && strlen(mb) == GF_SHA_LEN;
}

/* Where a diff line is: a position (1 = the line under the first "@@",
 * counting later "@@" lines too, as GitHub does), and the line numbers on
 * each side (0 when the line is not on that side). */
struct dline {
	long position, old_line, new_line;
	const char *text; /* the line in the patch */
};

static size_t diff_lines(const char *patch, struct dline *out, size_t max)
{
	size_t n = 0;
	long pos = 0, o = 0, nw = 0;
	for (const char *l = patch; l && *l && n < max;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, "@@", 2) == 0) {
			long os = 0, ns = 0;
			sscanf(l, "@@ -%ld%*[^+]+%ld", &os, &ns);
			if (pos > 0)
				pos++; /* a later hunk header is a position too */
			o = os;
			nw = ns;
			continue;
		}
		pos++;
		struct dline d = {.position = pos, .text = l};
		if (*l == '+')
			d.new_line = nw++;
		else if (*l == '-')
			d.old_line = o++;
		else if (*l == '\\')
			continue;
		else
			d.old_line = o++, d.new_line = nw++;
		out[n++] = d;
	}
	return n;
}

/* --- rendering ------------------------------------------------------------------- */

static cJSON *ref_side(struct ghfake *f, const struct gf_repo *r, const char *ref, const char *sha)
{
	char buf[GF_REF_MAX + 64];
	cJSON *o = cJSON_CreateObject();
	snprintf(buf, sizeof buf, "%s:%s", r->owner, ref);
	cJSON_AddStringToObject(o, "label", buf);
	cJSON_AddStringToObject(o, "ref", ref);
	cJSON_AddStringToObject(o, "sha", sha);
	cJSON_AddItemToObject(o, "user", gf_user_json(r->owner));
	cJSON_AddItemToObject(o, "repo", gf_repo_json(f, r, NULL));
	return o;
}

cJSON *gf_pull_json(struct ghfake *f, struct gf_repo *r, struct gf_issue *is, bool full)
{
	struct gf_pull *p = is->pr;
	char buf[700], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	const char *base = httpfake_base_url(f->http);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/pulls/%lld", base, r->owner, r->name,
	         (long long)is->number);
	cJSON_AddStringToObject(o, "url", buf);
	cJSON_AddNumberToObject(o, "id", (double)is->id);
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/pull/%lld", r->owner, r->name,
	         (long long)is->number);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/pull/%lld.diff", r->owner, r->name,
	         (long long)is->number);
	cJSON_AddStringToObject(o, "diff_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/issues/%lld", base, r->owner, r->name,
	         (long long)is->number);
	cJSON_AddStringToObject(o, "issue_url", buf);
	cJSON_AddNumberToObject(o, "number", (double)is->number);
	cJSON_AddStringToObject(o, "state", is->closed ? "closed" : "open");
	cJSON_AddBoolToObject(o, "locked", false);
	cJSON_AddStringToObject(o, "title", is->title);
	cJSON_AddItemToObject(o, "user", gf_user_json(is->author));
	cJSON_AddStringToObject(o, "body", is->body);
	cJSON *issue = gf_issue_json(f, r, is);
	cJSON_AddItemToObject(o, "labels", cJSON_DetachItemFromObject(issue, "labels"));
	cJSON_AddItemToObject(o, "assignees", cJSON_DetachItemFromObject(issue, "assignees"));
	cJSON_Delete(issue);
	cJSON *rr = cJSON_AddArrayToObject(o, "requested_reviewers");
	const cJSON *e;
	cJSON_ArrayForEach(e, p->requested) cJSON_AddItemToArray(rr, gf_user_json(e->valuestring));
	cJSON_AddArrayToObject(o, "requested_teams");
	gf_add_times(o, is);
	if (p->merged)
		cJSON_AddStringToObject(o, "merged_at", gf_iso(p->merged_ms, t));
	else
		cJSON_AddNullToObject(o, "merged_at");
	if (p->merge_sha[0])
		cJSON_AddStringToObject(o, "merge_commit_sha", p->merge_sha);
	else
		cJSON_AddNullToObject(o, "merge_commit_sha");
	cJSON_AddItemToObject(o, "head", ref_side(f, r, p->head, p->head_sha));
	cJSON_AddItemToObject(o, "base", ref_side(f, r, p->base, p->base_sha));
	cJSON_AddStringToObject(o, "author_association",
	                        gf_perm_of(f, r, is->author) >= GF_WRITE ? "COLLABORATOR"
	                                                                 : "CONTRIBUTOR");
	cJSON_AddBoolToObject(o, "draft", p->draft);
	if (!full)
		return o;
	cJSON_AddBoolToObject(o, "merged", p->merged);
	/* Mergeability as GitHub reports it once computed: for an open PR a real
	 * merge of base and head by git — clean, or dirty on a conflict. */
	const char *state = "unknown";
	int mergeable = -1;
	if (!is->closed && r->git && p->base_sha[0] && p->head_sha[0]) {
		const char *argv[] = {
		        "git",       "merge-tree", "--write-tree", "--no-messages", p->base_sha,
		        p->head_sha, NULL};
		struct gf_out mo;
		struct gf_run run = {.argv = argv, .repo = r};
		int rc = gf_git(f, &run, &mo);
		gf_out_free(&mo);
		if (rc == 0 || rc == 1) {
			mergeable = rc == 0;
			state = rc != 0 ? "dirty" : p->draft ? "draft" : "clean";
		}
	}
	if (mergeable < 0)
		cJSON_AddNullToObject(o, "mergeable");
	else
		cJSON_AddBoolToObject(o, "mergeable", mergeable == 1);
	cJSON_AddStringToObject(o, "mergeable_state", state);
	if (p->merged)
		cJSON_AddItemToObject(o, "merged_by", gf_user_json(p->merged_by));
	else
		cJSON_AddNullToObject(o, "merged_by");
	cJSON_AddNumberToObject(o, "comments", (double)gf_live_comments(is));
	cJSON_AddNumberToObject(o, "review_comments", (double)p->n_rcomments);
	cJSON_AddBoolToObject(o, "maintainer_can_modify", p->maintainer_can_modify);
	long commits = 0, adds = 0, dels = 0;
	size_t nfiles = 0;
	char mb[GF_SHA_LEN + 1];
	if (r->git && pull_range(f, r, p, mb)) {
		char range[2 * GF_SHA_LEN + 4];
		snprintf(range, sizeof range, "%s..%s", mb, p->head_sha);
		const char *argv[] = {"git", "rev-list", "--count", range, NULL};
		char line[32];
		if (gf_git_line(f, r, argv, line, sizeof line) == 0)
			commits = strtol(line, NULL, 10);
		struct fdiff *v = diff_files(f, r, mb, p->head_sha, &nfiles);
		for (size_t i = 0; i < nfiles; i++) {
			adds += v[i].add;
			dels += v[i].del;
		}
		fdiffs_free(v, nfiles);
	}
	cJSON_AddNumberToObject(o, "commits", (double)commits);
	cJSON_AddNumberToObject(o, "additions", (double)adds);
	cJSON_AddNumberToObject(o, "deletions", (double)dels);
	cJSON_AddNumberToObject(o, "changed_files", (double)nfiles);
	return o;
}

static cJSON *review_json(struct ghfake *f, const struct gf_repo *r, const struct gf_issue *is,
                          const struct gf_review *v)
{
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)v->id);
	cJSON_AddItemToObject(o, "user", gf_user_json(v->author));
	cJSON_AddStringToObject(o, "body", v->body);
	cJSON_AddStringToObject(o, "state", v->state);
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/pull/%lld#pullrequestreview-%lld",
	         r->owner, r->name, (long long)is->number, (long long)v->id);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/pulls/%lld", httpfake_base_url(f->http), r->owner,
	         r->name, (long long)is->number);
	cJSON_AddStringToObject(o, "pull_request_url", buf);
	cJSON_AddStringToObject(o, "commit_id", v->commit_id);
	if (v->submitted_ms)
		cJSON_AddStringToObject(o, "submitted_at", gf_iso(v->submitted_ms, t));
	cJSON_AddStringToObject(o, "author_association",
	                        gf_perm_of(f, r, v->author) >= GF_WRITE ? "COLLABORATOR"
	                                                                : "CONTRIBUTOR");
	return o;
}

static cJSON *rcomment_json(struct ghfake *f, const struct gf_repo *r, const struct gf_issue *is,
                            const struct gf_rcomment *c)
{
	char buf[512], t[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)c->id);
	cJSON_AddNumberToObject(o, "pull_request_review_id", (double)c->review_id);
	cJSON_AddStringToObject(o, "path", c->path);
	cJSON_AddNumberToObject(o, "position", (double)c->position);
	cJSON_AddNumberToObject(o, "original_position", (double)c->position);
	cJSON_AddNumberToObject(o, "line", (double)c->line);
	cJSON_AddNumberToObject(o, "original_line", (double)c->line);
	cJSON_AddStringToObject(o, "side", c->side);
	cJSON_AddStringToObject(o, "commit_id", c->commit_id);
	cJSON_AddStringToObject(o, "original_commit_id", c->commit_id);
	cJSON_AddStringToObject(o, "diff_hunk", c->diff_hunk);
	cJSON_AddStringToObject(o, "body", c->body);
	cJSON_AddItemToObject(o, "user", gf_user_json(c->author));
	snprintf(buf, sizeof buf, "https://github.com/%s/%s/pull/%lld#discussion_r%lld", r->owner,
	         r->name, (long long)is->number, (long long)c->id);
	cJSON_AddStringToObject(o, "html_url", buf);
	snprintf(buf, sizeof buf, "%s/repos/%s/%s/pulls/%lld", httpfake_base_url(f->http), r->owner,
	         r->name, (long long)is->number);
	cJSON_AddStringToObject(o, "pull_request_url", buf);
	cJSON_AddStringToObject(o, "created_at", gf_iso(c->created_ms, t));
	cJSON_AddStringToObject(o, "updated_at", gf_iso(c->created_ms, t));
	return o;
}

/* --- creation and listing --------------------------------------------------------- */

static void create_pull(struct ghfake *f, struct gf_repo *r, const char *login,
                        const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *title = cJSON_GetObjectItem(b, "title");
	const cJSON *body = cJSON_GetObjectItem(b, "body");
	const cJSON *head = cJSON_GetObjectItem(b, "head");
	const cJSON *base = cJSON_GetObjectItem(b, "base");
	char hname[GF_REF_MAX] = "", msg[2 * GF_REF_MAX + 80];
	if (cJSON_IsString(head)) {
		const char *colon = strchr(head->valuestring, ':');
		bool other = colon && ((size_t)(colon - head->valuestring) != strlen(r->owner) ||
		                       strncasecmp(head->valuestring, r->owner,
		                                   (size_t)(colon - head->valuestring)) != 0);
		snprintf(hname, sizeof hname, "%s",
		         other   ? ""
		         : colon ? colon + 1
		                 : head->valuestring);
	}
	char hsha[GF_SHA_LEN + 1], bsha[GF_SHA_LEN + 1], href[GF_REF_MAX + 16],
	        bref[GF_REF_MAX + 16];
	snprintf(href, sizeof href, "refs/heads/%s", hname);
	snprintf(bref, sizeof bref, "refs/heads/%s", cJSON_IsString(base) ? base->valuestring : "");
	if (!cJSON_IsString(title) || !title->valuestring[0]) {
		gf_invalid(resp, "PullRequest", "title", "missing_field");
	} else if (!cJSON_IsString(base) || !base->valuestring[0]) {
		gf_invalid(resp, "PullRequest", "base", "missing_field");
	} else if (!cJSON_IsString(head) || !head->valuestring[0]) {
		gf_invalid(resp, "PullRequest", "head", "missing_field");
	} else if (body && !cJSON_IsString(body) && !cJSON_IsNull(body)) {
		gf_invalid(resp, "PullRequest", "body", "invalid");
	} else if (!r->git) {
		gf_error(resp, 500, "ghfake: git is not available on this machine");
	} else if (!hname[0] || gf_rev(f, r, href, hsha) != 0) {
		gf_invalid(resp, "PullRequest", "head", "invalid");
	} else if (gf_rev(f, r, bref, bsha) != 0) {
		gf_invalid(resp, "PullRequest", "base", "invalid");
	} else {
		gf_pulls_sync(f, r);
		for (size_t i = 0; i < r->n_issues; i++) {
			struct gf_issue *x = r->issues[i];
			if (x->pr && !x->closed && strcmp(x->pr->head, hname) == 0 &&
			    strcmp(x->pr->base, base->valuestring) == 0) {
				snprintf(msg, sizeof msg,
				         "A pull request already exists for %s:%s.", r->owner,
				         hname);
				gf_invalid_custom(resp, "PullRequest", NULL, msg);
				cJSON_Delete(b);
				return;
			}
		}
		char range[2 * GF_SHA_LEN + 4], count[32] = "0";
		snprintf(range, sizeof range, "%s..%s", bsha, hsha);
		const char *argv[] = {"git", "rev-list", "--count", range, NULL};
		gf_git_line(f, r, argv, count, sizeof count);
		if (strtol(count, NULL, 10) == 0) {
			snprintf(msg, sizeof msg, "No commits between %s and %s", base->valuestring,
			         hname);
			gf_invalid_custom(resp, "PullRequest", NULL, msg);
			cJSON_Delete(b);
			return;
		}
		struct gf_issue *is = gf_issue_new(f, r, login, title->valuestring,
		                                   cJSON_IsString(body) ? body->valuestring : "");
		if (!is) {
			gf_error(resp, 422, "ghfake: too many issues in this repository");
			cJSON_Delete(b);
			return;
		}
		struct gf_pull *p = calloc(1, sizeof *p);
		if (!p)
			gf_die("out of memory");
		is->pr = p;
		snprintf(p->head, sizeof p->head, "%s", hname);
		snprintf(p->base, sizeof p->base, "%s", base->valuestring);
		memcpy(p->head_sha, hsha, sizeof hsha);
		memcpy(p->base_sha, bsha, sizeof bsha);
		p->draft = cJSON_IsTrue(cJSON_GetObjectItem(b, "draft"));
		const cJSON *mcm = cJSON_GetObjectItem(b, "maintainer_can_modify");
		p->maintainer_can_modify = !cJSON_IsFalse(mcm);
		p->requested = cJSON_CreateArray();
		pull_ref(f, r, is->number, hsha);
		gf_notify_participants(f, r, is, login, is->body);
		httpfake_response_cjson(resp, 201, gf_pull_json(f, r, is, true));
	}
	cJSON_Delete(b);
}

static const char *g_sort; /* handlers run one at a time (httpfake) */
static bool g_asc;

static int cmp_pull(const void *a, const void *b)
{
	const struct gf_issue *x = *(struct gf_issue *const *)a, *y = *(struct gf_issue *const *)b;
	int64_t kx, ky;
	if (strcmp(g_sort, "updated") == 0) {
		kx = x->updated_ms, ky = y->updated_ms;
	} else if (strcmp(g_sort, "popularity") == 0) {
		kx = (int64_t)gf_live_comments(x), ky = (int64_t)gf_live_comments(y);
	} else if (strcmp(g_sort, "long-running") == 0) {
		/* open longest and still active: oldest first when descending */
		kx = -x->created_ms, ky = -y->created_ms;
	} else {
		kx = x->created_ms, ky = y->created_ms;
	}
	int c = kx < ky ? -1 : kx > ky ? 1 : x->number < y->number ? -1 : x->number > y->number;
	return g_asc ? c : -c;
}

static void list_pulls(struct ghfake *f, struct gf_repo *r, const char *login,
                       const struct httpfake_request *req, struct httpfake_response *resp)
{
	(void)login;
	gf_pulls_sync(f, r);
	const char *state = gf_param(req, "state"), *head = gf_param(req, "head"),
	           *base = gf_param(req, "base"), *sort = gf_param(req, "sort"),
	           *dir = gf_param(req, "direction");
	g_sort = sort ? sort : "created";
	g_asc = dir && strcmp(dir, "asc") == 0;
	struct gf_issue **v = calloc(r->n_issues ? r->n_issues : 1, sizeof *v);
	if (!v)
		gf_die("out of memory");
	size_t n = 0;
	for (size_t i = 0; i < r->n_issues; i++) {
		struct gf_issue *is = r->issues[i];
		if (!is->pr)
			continue;
		bool want = !state || strcmp(state, "open") == 0 ? !is->closed
		            : strcmp(state, "closed") == 0       ? is->closed
		                                                 : true;
		if (want && head) { /* "owner:branch" (or a bare branch, leniently) */
			const char *colon = strchr(head, ':');
			if (colon)
				want = (size_t)(colon - head) == strlen(r->owner) &&
				       strncasecmp(head, r->owner, strlen(r->owner)) == 0 &&
				       strcmp(colon + 1, is->pr->head) == 0;
			else
				want = strcmp(head, is->pr->head) == 0;
		}
		if (want && base)
			want = strcmp(base, is->pr->base) == 0;
		if (want)
			v[n++] = is;
	}
	qsort(v, n, sizeof *v, cmp_pull);
	cJSON *all = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(all, gf_pull_json(f, r, v[i], false));
	free(v);
	gf_paginate(f, req, resp, all, 30, NULL);
}

static void patch_pull(struct ghfake *f, struct gf_repo *r, struct gf_issue *is, const char *login,
                       const struct httpfake_request *req, struct httpfake_response *resp)
{
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	struct gf_pull *p = is->pr;
	const cJSON *v = cJSON_GetObjectItem(b, "state");
	const cJSON *base = cJSON_GetObjectItem(b, "base");
	if (v && (!cJSON_IsString(v) ||
	          (strcmp(v->valuestring, "open") && strcmp(v->valuestring, "closed")))) {
		gf_invalid(resp, "PullRequest", "state", "invalid");
	} else if (v && strcmp(v->valuestring, "open") == 0 && is->closed &&
	           (p->merged || !gf_branch_exists(f, r, p->head))) {
		gf_unprocessable(resp, p->merged ? "Cannot reopen a merged pull request"
		                                 : "state cannot be changed. The head branch was "
		                                   "deleted.");
	} else if (base && (!cJSON_IsString(base) || !gf_branch_exists(f, r, base->valuestring))) {
		gf_invalid(resp, "PullRequest", "base", "invalid");
	} else {
		if ((v = cJSON_GetObjectItem(b, "title")) && cJSON_IsString(v) &&
		    v->valuestring[0]) {
			free(is->title);
			is->title = gf_dup(v->valuestring);
		}
		if ((v = cJSON_GetObjectItem(b, "body")) && cJSON_IsString(v)) {
			free(is->body);
			is->body = gf_dup(v->valuestring);
		}
		if (base)
			snprintf(p->base, sizeof p->base, "%s", base->valuestring);
		if ((v = cJSON_GetObjectItem(b, "state")))
			gf_close_issue(f, is, strcmp(v->valuestring, "closed") == 0, login);
		is->updated_ms = gf_now(f);
		gf_pulls_sync(f, r);
		httpfake_response_cjson(resp, 200, gf_pull_json(f, r, is, true));
	}
	cJSON_Delete(b);
}

static void files(struct ghfake *f, struct gf_repo *r, struct gf_issue *is,
                  const struct httpfake_request *req, struct httpfake_response *resp)
{
	char mb[GF_SHA_LEN + 1];
	cJSON *all = cJSON_CreateArray();
	if (r->git && pull_range(f, r, is->pr, mb)) {
		size_t n;
		struct fdiff *v = diff_files(f, r, mb, is->pr->head_sha, &n);
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "filename", v[i].path);
			cJSON_AddStringToObject(o, "status", v[i].status);
			cJSON_AddNumberToObject(o, "additions", (double)v[i].add);
			cJSON_AddNumberToObject(o, "deletions", (double)v[i].del);
			cJSON_AddNumberToObject(o, "changes", (double)(v[i].add + v[i].del));
			if (v[i].patch)
				cJSON_AddStringToObject(o, "patch", v[i].patch);
			if (v[i].prev)
				cJSON_AddStringToObject(o, "previous_filename", v[i].prev);
			char buf[1200];
			snprintf(buf, sizeof buf, "https://github.com/%s/%s/blob/%s/%s", r->owner,
			         r->name, is->pr->head_sha, v[i].path);
			cJSON_AddStringToObject(o, "blob_url", buf);
			cJSON_AddItemToArray(all, o);
		}
		fdiffs_free(v, n);
	}
	gf_paginate(f, req, resp, all, 30, NULL);
}

/* --- reviews ------------------------------------------------------------------------ */

struct placed {
	char *path;
	char *diff_hunk;
	long line, position;
	const char *side;
};

/* Places one inline comment on the diff: by position, or by line and side
 * (RIGHT by default). A sentence naming the problem into why when it is
 * not on the diff. */
static int place(const struct fdiff *v, size_t n, const cJSON *c, struct placed *out, char *why,
                 size_t cap)
{
	const cJSON *path = cJSON_GetObjectItem(c, "path"), *line = cJSON_GetObjectItem(c, "line"),
	            *pos = cJSON_GetObjectItem(c, "position"),
	            *side = cJSON_GetObjectItem(c, "side"), *body = cJSON_GetObjectItem(c, "body");
	if (!cJSON_IsString(body) || !body->valuestring[0]) {
		snprintf(why, cap, "Pull request review thread body can't be blank");
		return -1;
	}
	const struct fdiff *d = NULL;
	for (size_t i = 0; cJSON_IsString(path) && i < n && !d; i++)
		if (strcmp(v[i].path, path->valuestring) == 0)
			d = &v[i];
	if (!d || !d->patch) {
		snprintf(why, cap, "Path could not be resolved");
		return -1;
	}
	bool left = cJSON_IsString(side) && strcmp(side->valuestring, "LEFT") == 0;
	struct dline *lines = calloc(strlen(d->patch) + 1, sizeof *lines);
	if (!lines)
		gf_die("out of memory");
	size_t nl = diff_lines(d->patch, lines, strlen(d->patch) + 1);
	const struct dline *hit = NULL;
	for (size_t i = 0; i < nl && !hit; i++) {
		if (cJSON_IsNumber(pos) && !cJSON_IsNumber(line))
			hit = lines[i].position == (long)pos->valuedouble ? &lines[i] : NULL;
		else if (cJSON_IsNumber(line))
			hit = (left ? lines[i].old_line : lines[i].new_line) ==
			                      (long)line->valuedouble
			              ? &lines[i]
			              : NULL;
	}
	if (!hit) {
		free(lines);
		snprintf(why, cap,
		         cJSON_IsNumber(line) || cJSON_IsNumber(pos)
		                 ? "Pull request review thread line must be part of the diff"
		                 : "Pull request review thread diff hunk can't be blank");
		return -1;
	}
	out->path = gf_dup(d->path);
	out->position = hit->position;
	left = left || (!hit->new_line && hit->old_line);
	out->side = left ? "LEFT" : "RIGHT";
	out->line = left ? hit->old_line : hit->new_line;
	/* GitHub's diff_hunk: the hunk header through the commented line. */
	const char *hdr = d->patch;
	for (const char *s = d->patch; s && s <= hit->text;
	     s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL)
		if (strncmp(s, "@@", 2) == 0)
			hdr = s;
	const char *end = strchr(hit->text, '\n');
	size_t hl = end ? (size_t)(end - hdr) : strlen(hdr);
	out->diff_hunk = malloc(hl + 1);
	if (!out->diff_hunk)
		gf_die("out of memory");
	memcpy(out->diff_hunk, hdr, hl);
	out->diff_hunk[hl] = '\0';
	free(lines);
	return 0;
}

static void create_review(struct ghfake *f, struct gf_repo *r, struct gf_issue *is,
                          const char *login, const struct httpfake_request *req,
                          struct httpfake_response *resp)
{
	struct gf_pull *p = is->pr;
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *ev = cJSON_GetObjectItem(b, "event"), *body = cJSON_GetObjectItem(b, "body"),
	            *cid = cJSON_GetObjectItem(b, "commit_id"),
	            *comments = cJSON_GetObjectItem(b, "comments");
	const char *event = cJSON_IsString(ev) ? ev->valuestring : NULL;
	bool has_body = cJSON_IsString(body) && body->valuestring[0];
	size_t n_comments = cJSON_IsArray(comments) ? (size_t)cJSON_GetArraySize(comments) : 0;
	bool own = strcasecmp(is->author, login) == 0;
	gf_pulls_sync(f, r);
	struct placed *pl = NULL;
	size_t n_pl = 0;
	char why[160] = "";
	if (event && strcmp(event, "APPROVE") && strcmp(event, "REQUEST_CHANGES") &&
	    strcmp(event, "COMMENT")) {
		gf_invalid(resp, "PullRequestReview", "event", "invalid");
		goto out;
	}
	if (comments && !cJSON_IsArray(comments)) {
		gf_invalid(resp, "PullRequestReview", "comments", "invalid");
		goto out;
	}
	if (own && event && strcmp(event, "COMMENT") != 0) {
		gf_unprocessable(resp,
		                 strcmp(event, "APPROVE") == 0
		                         ? "Can not approve your own pull request"
		                         : "Can not request changes on your own pull request");
		goto out;
	}
	if (event && strcmp(event, "APPROVE") != 0 && !has_body && n_comments == 0) {
		gf_unprocessable(resp, "Review body is required for REQUEST_CHANGES and COMMENT");
		goto out;
	}
	if (p->merged || is->closed) {
		if (event && strcmp(event, "COMMENT") != 0) {
			gf_unprocessable(resp, "Can not review a closed pull request");
			goto out;
		}
	}
	char commit[GF_SHA_LEN + 1];
	memcpy(commit, p->head_sha, sizeof commit);
	if (cid && (!cJSON_IsString(cid) || gf_rev(f, r, cid->valuestring, commit) != 0)) {
		gf_unprocessable(resp, "commit_id is not part of the pull request");
		goto out;
	}
	if (p->n_reviews >= GHFAKE_REVIEWS_MAX ||
	    p->n_rcomments + n_comments > GHFAKE_REVIEWS_MAX) {
		gf_error(resp, 422, "ghfake: too many reviews on this pull request");
		goto out;
	}
	if (n_comments) {
		char mb[GF_SHA_LEN + 1];
		size_t nf = 0;
		struct fdiff *v = r->git && pull_range(f, r, p, mb)
		                          ? diff_files(f, r, mb, p->head_sha, &nf)
		                          : NULL;
		pl = calloc(n_comments, sizeof *pl);
		if (!pl)
			gf_die("out of memory");
		const cJSON *c;
		cJSON_ArrayForEach(c, comments)
		{
			if (place(v, nf, c, &pl[n_pl], why, sizeof why) != 0)
				break;
			n_pl++;
		}
		fdiffs_free(v, nf);
		if (why[0]) {
			gf_unprocessable(resp, why);
			goto out;
		}
	}
	p->reviews = gf_grow(p->reviews, p->n_reviews + 1, sizeof *p->reviews);
	struct gf_review *rv = &p->reviews[p->n_reviews++];
	memset(rv, 0, sizeof *rv);
	rv->id = ++f->next_id;
	rv->author = gf_dup(login);
	rv->body = gf_dup(has_body ? body->valuestring : "");
	snprintf(rv->state, sizeof rv->state, "%s",
	         !event                                  ? "PENDING"
	         : strcmp(event, "APPROVE") == 0         ? "APPROVED"
	         : strcmp(event, "REQUEST_CHANGES") == 0 ? "CHANGES_REQUESTED"
	                                                 : "COMMENTED");
	memcpy(rv->commit_id, commit, sizeof commit);
	rv->submitted_ms = event ? gf_now(f) : 0;
	const cJSON *c = comments ? comments->child : NULL;
	for (size_t i = 0; i < n_pl; i++, c = c->next) {
		p->rcomments = gf_grow(p->rcomments, p->n_rcomments + 1, sizeof *p->rcomments);
		struct gf_rcomment *rc = &p->rcomments[p->n_rcomments++];
		memset(rc, 0, sizeof *rc);
		rc->id = ++f->next_id;
		rc->review_id = rv->id;
		rc->author = gf_dup(login);
		rc->body = gf_dup(cJSON_GetObjectItem(c, "body")->valuestring);
		rc->path = pl[i].path;
		rc->diff_hunk = pl[i].diff_hunk;
		pl[i].path = pl[i].diff_hunk = NULL;
		rc->line = pl[i].line;
		rc->position = pl[i].position;
		snprintf(rc->side, sizeof rc->side, "%s", pl[i].side);
		memcpy(rc->commit_id, commit, sizeof commit);
		rc->created_ms = gf_now(f);
	}
	if (event) {
		/* A submitted review answers the request made of its author. */
		int i = 0;
		const cJSON *e;
		cJSON_ArrayForEach(e, p->requested)
		{
			if (strcasecmp(e->valuestring, login) == 0) {
				cJSON_DeleteItemFromArray(p->requested, i);
				break;
			}
			i++;
		}
		is->updated_ms = gf_now(f);
		gf_notify_participants(f, r, is, login, rv->body);
	}
	httpfake_response_cjson(resp, 200, review_json(f, r, is, rv));
out:
	for (size_t i = 0; pl && i < n_comments; i++) {
		free(pl[i].path);
		free(pl[i].diff_hunk);
	}
	free(pl);
	cJSON_Delete(b);
}

static void reviewers(struct ghfake *f, struct gf_repo *r, struct gf_issue *is, const char *login,
                      const struct httpfake_request *req, struct httpfake_response *resp)
{
	struct gf_pull *p = is->pr;
	bool add = strcmp(req->method, "POST") == 0;
	if (!gf_may(f, r, login, GF_TRIAGE, resp))
		return;
	cJSON *b = gf_parse_body(req, resp);
	if (!b)
		return;
	const cJSON *list = cJSON_GetObjectItem(b, "reviewers"), *e;
	if (!cJSON_IsArray(list)) {
		gf_invalid(resp, "PullRequest", "reviewers", "missing_field");
		cJSON_Delete(b);
		return;
	}
	const char *collab[GHFAKE_COLLABS_MAX + GHFAKE_TOKENS_MAX];
	size_t nc = gf_collaborators(f, r, collab, sizeof collab / sizeof collab[0]);
	cJSON_ArrayForEach(e, list)
	{
		if (!cJSON_IsString(e)) {
			gf_invalid(resp, "PullRequest", "reviewers", "invalid");
			cJSON_Delete(b);
			return;
		}
		if (!add)
			continue;
		if (strcasecmp(e->valuestring, is->author) == 0) {
			gf_unprocessable(resp,
			                 "Review cannot be requested from pull request author.");
			cJSON_Delete(b);
			return;
		}
		bool ok = f->n_tokens == 0;
		for (size_t i = 0; i < nc && !ok; i++)
			ok = strcasecmp(collab[i], e->valuestring) == 0;
		if (!ok) {
			char msg[300];
			snprintf(msg, sizeof msg,
			         "Reviews may only be requested from collaborators. One or more of "
			         "the "
			         "users or teams you specified is not a collaborator of the %s/%s "
			         "repository.",
			         r->owner, r->name);
			gf_unprocessable(resp, msg);
			cJSON_Delete(b);
			return;
		}
	}
	cJSON_ArrayForEach(e, list)
	{
		int at = -1, i = 0;
		const cJSON *x;
		cJSON_ArrayForEach(x, p->requested)
		{
			if (strcasecmp(x->valuestring, e->valuestring) == 0)
				at = i;
			i++;
		}
		if (add && at < 0) {
			if (cJSON_GetArraySize(p->requested) >= 15)
				break;
			cJSON_AddItemToArray(p->requested, cJSON_CreateString(e->valuestring));
			gf_event_add(f, is, "review_requested", login, e->valuestring);
			gf_notif_upsert(f, r, is->number, e->valuestring, "review_requested");
		} else if (!add && at >= 0) {
			cJSON_DeleteItemFromArray(p->requested, at);
			gf_event_add(f, is, "review_request_removed", login, e->valuestring);
		}
	}
	is->updated_ms = gf_now(f);
	cJSON_Delete(b);
	httpfake_response_cjson(resp, add ? 201 : 200, gf_pull_json(f, r, is, false));
}

/* --- merging --------------------------------------------------------------------------- */

/* The commits of the PR, oldest first: "sha subject" lines. Caller frees. */
static char *pr_commits(struct ghfake *f, const struct gf_repo *r, const char *mb, const char *head)
{
	char range[2 * GF_SHA_LEN + 4];
	snprintf(range, sizeof range, "%s..%s", mb, head);
	const char *argv[] = {"git", "log", "--reverse", "--no-merges", "--format=%H %s",
	                      range, NULL};
	struct gf_out o;
	struct gf_run run = {.argv = argv, .repo = r};
	gf_git(f, &run, &o);
	free(o.err);
	return o.out;
}

/* Replays the PR's commits on base in a temporary worktree (what GitHub's
 * rebase merge does). 0 and the new tip. */
static int rebase(struct ghfake *f, struct gf_repo *r, const char *mb, const char *head,
                  const char *base, char out[GF_SHA_LEN + 1])
{
	char wt[700];
	snprintf(wt, sizeof wt, "%s/tmp/wt-%u", f->dir, ++f->tmp_seq);
	const char *add[] = {"git", "worktree", "add", "--quiet", "--detach", wt, base, NULL};
	if (gf_git_line(f, r, add, NULL, 0) != 0)
		return -1;
	char *list = pr_commits(f, r, mb, head);
	int rc = 0;
	char cd[64];
	long long s = (long long)(gf_now(f) / 1000);
	snprintf(cd, sizeof cd, "GIT_COMMITTER_DATE=@%lld +0000", s);
	const char *env[] = {"GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com",
	                     cd, NULL};
	for (char *save, *l = strtok_r(list, "\n", &save); l && rc == 0;
	     l = strtok_r(NULL, "\n", &save)) {
		l[GF_SHA_LEN] = '\0';
		const char *pick[] = {
		        "git", "cherry-pick", "--allow-empty", "--keep-redundant-commits", l, NULL};
		struct gf_out o;
		struct gf_run run = {.argv = pick, .env = env, .cwd = wt};
		rc = gf_git(f, &run, &o) == 0 ? 0 : -1;
		gf_out_free(&o);
	}
	free(list);
	const char *head_argv[] = {"git", "rev-parse", "HEAD", NULL};
	struct gf_out o = {0};
	struct gf_run run = {.argv = head_argv, .cwd = wt};
	if (rc == 0 && gf_git(f, &run, &o) == 0 && o.out_len >= GF_SHA_LEN) {
		memcpy(out, o.out, GF_SHA_LEN);
		out[GF_SHA_LEN] = '\0';
	} else {
		rc = -1;
	}
	if (o.out)
		gf_out_free(&o);
	const char *rm[] = {"git", "worktree", "remove", "--force", wt, NULL};
	gf_git_line(f, r, rm, NULL, 0);
	const char *prune[] = {"git", "worktree", "prune", NULL};
	gf_git_line(f, r, prune, NULL, 0);
	return rc;
}

static void merge(struct ghfake *f, struct gf_repo *r, struct gf_issue *is, const char *login,
                  const struct httpfake_request *req, struct httpfake_response *resp)
{
	struct gf_pull *p = is->pr;
	if (!gf_may(f, r, login, GF_WRITE, resp))
		return;
	cJSON *b = req->body_len ? gf_parse_body(req, resp) : cJSON_CreateObject();
	if (!b)
		return;
	const cJSON *method = cJSON_GetObjectItem(b, "merge_method"),
	            *title = cJSON_GetObjectItem(b, "commit_title"),
	            *message = cJSON_GetObjectItem(b, "commit_message"),
	            *sha = cJSON_GetObjectItem(b, "sha");
	const char *how = cJSON_IsString(method) ? method->valuestring : "merge";
	gf_pulls_sync(f, r);
	char tree[GF_SHA_LEN + 8], mb[GF_SHA_LEN + 1], tip[GF_SHA_LEN + 1] = "", buf[1024];
	if (strcmp(how, "merge") && strcmp(how, "squash") && strcmp(how, "rebase")) {
		gf_invalid(resp, "PullRequest", "merge_method", "invalid");
		goto out;
	}
	if (p->merged || is->closed) {
		gf_error(resp, 405, "Pull Request is not mergeable");
		goto out;
	}
	if (p->draft) {
		gf_error(resp, 405, "Pull Request is still a draft");
		goto out;
	}
	if (sha && (!cJSON_IsString(sha) || strcmp(sha->valuestring, p->head_sha) != 0)) {
		gf_error(resp, 409, "Head branch was modified. Review and try the merge again.");
		goto out;
	}
	const char *mt[] = {"git",       "merge-tree", "--write-tree", "--no-messages", p->base_sha,
	                    p->head_sha, NULL};
	struct gf_out o;
	struct gf_run run = {.argv = mt, .repo = r};
	int rc = gf_git(f, &run, &o);
	snprintf(tree, sizeof tree, "%.40s", o.out);
	gf_out_free(&o);
	if (rc != 0 || strlen(tree) != GF_SHA_LEN || !pull_range(f, r, p, mb)) {
		gf_error(resp, 405, "Pull Request is not mergeable");
		goto out;
	}
	char *msg = NULL;
	if (strcmp(how, "rebase") == 0) {
		if (rebase(f, r, mb, p->head_sha, p->base_sha, tip) != 0) {
			gf_error(resp, 405, "This branch can't be rebased");
			goto out;
		}
	} else {
		bool squash = strcmp(how, "squash") == 0;
		if (cJSON_IsString(title) && title->valuestring[0])
			snprintf(buf, sizeof buf, "%s", title->valuestring);
		else if (squash)
			snprintf(buf, sizeof buf, "%s (#%lld)", is->title, (long long)is->number);
		else
			snprintf(buf, sizeof buf, "Merge pull request #%lld from %s/%s",
			         (long long)is->number, r->owner, p->head);
		const char *extra = NULL;
		char *list = NULL;
		if (cJSON_IsString(message)) {
			extra = message->valuestring;
		} else if (squash) { /* GitHub lists the squashed commits */
			list = pr_commits(f, r, mb, p->head_sha);
			size_t ll = strlen(list), w = 0;
			char *fmt = malloc(ll * 2 + 4);
			if (!fmt)
				gf_die("out of memory");
			for (char *save, *l = strtok_r(list, "\n", &save); l;
			     l = strtok_r(NULL, "\n", &save))
				if (strlen(l) > GF_SHA_LEN + 1)
					w += (size_t)sprintf(fmt + w, "* %s\n", l + GF_SHA_LEN + 1);
			fmt[w] = '\0';
			free(list);
			list = fmt;
			extra = list;
		} else {
			extra = is->title;
		}
		if (asprintf(&msg, "%s%s%s\n", buf, extra && *extra ? "\n\n" : "",
		             extra ? extra : "") < 0)
			gf_die("out of memory");
		free(list);
		const char *parents[] = {p->base_sha, p->head_sha};
		rc = gf_commit_tree(f, r, tree, parents, squash ? 1 : 2, msg,
		                    squash ? is->author : login, tip);
		free(msg);
		if (rc != 0) {
			gf_error(resp, 500, "ghfake: the merge commit could not be written");
			goto out;
		}
	}
	if (gf_update_ref(f, r, p->base, tip, p->base_sha) != 0) {
		gf_error(resp, 409, "Base branch was modified. Review and try the merge again.");
		goto out;
	}
	p->merged = true;
	p->merged_ms = gf_now(f);
	snprintf(p->merged_by, sizeof p->merged_by, "%s", login);
	memcpy(p->merge_sha, tip, sizeof tip);
	memcpy(p->merge_base, mb, sizeof mb);
	r->pushed_ms = r->updated_ms = gf_now(f);
	gf_event_add(f, is, "merged", login, tip);
	gf_close_issue(f, is, true, login);
	gf_pulls_sync(f, r);
	cJSON *ok = cJSON_CreateObject();
	cJSON_AddStringToObject(ok, "sha", tip);
	cJSON_AddBoolToObject(ok, "merged", true);
	cJSON_AddStringToObject(ok, "message", "Pull Request successfully merged");
	httpfake_response_cjson(resp, 200, ok);
out:
	cJSON_Delete(b);
}

/* --- the route ---------------------------------------------------------------------------- */

void gf_route_pulls(struct ghfake *f, struct gf_repo *r, const char *login, const char *p,
                    const struct httpfake_request *req, struct httpfake_response *resp)
{
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0;
	if (!*p) {
		gf_collection(f, r, login, req, resp, list_pulls, create_pull);
		return;
	}
	const char *e;
	int64_t n = *p == '/' ? gf_num(p + 1, &e) : -1;
	struct gf_issue *is = n > 0 ? gf_find_issue(r, n) : NULL;
	if (!is || !is->pr) {
		gf_error(resp, 404, "Not Found");
		return;
	}
	if (!*e && get) {
		gf_pulls_sync(f, r);
		httpfake_response_cjson(resp, 200, gf_pull_json(f, r, is, true));
	} else if (!*e && strcmp(m, "PATCH") == 0) {
		patch_pull(f, r, is, login, req, resp);
	} else if (strcmp(e, "/files") == 0 && get) {
		gf_pulls_sync(f, r);
		files(f, r, is, req, resp);
	} else if (strcmp(e, "/merge") == 0 && strcmp(m, "PUT") == 0) {
		merge(f, r, is, login, req, resp);
	} else if (strcmp(e, "/merge") == 0 && get) {
		if (is->pr->merged)
			resp->status = 204;
		else
			gf_error(resp, 404, "Not Found");
	} else if (strcmp(e, "/reviews") == 0 && get) {
		cJSON *all = cJSON_CreateArray();
		for (size_t i = 0; i < is->pr->n_reviews; i++) {
			const struct gf_review *v = &is->pr->reviews[i];
			if (strcmp(v->state, "PENDING") != 0 || strcasecmp(v->author, login) == 0)
				cJSON_AddItemToArray(all, review_json(f, r, is, v));
		}
		gf_paginate(f, req, resp, all, 30, NULL);
	} else if (strcmp(e, "/reviews") == 0 && strcmp(m, "POST") == 0) {
		create_review(f, r, is, login, req, resp);
	} else if (strncmp(e, "/reviews/", 9) == 0 && get) {
		const char *e2;
		int64_t id = gf_num(e + 9, &e2);
		for (size_t i = 0; i < is->pr->n_reviews; i++)
			if (is->pr->reviews[i].id == id && !*e2) {
				httpfake_response_cjson(resp, 200,
				                        review_json(f, r, is, &is->pr->reviews[i]));
				return;
			}
		gf_error(resp, 404, "Not Found");
	} else if (strcmp(e, "/comments") == 0 && get) {
		cJSON *all = cJSON_CreateArray();
		for (size_t i = 0; i < is->pr->n_rcomments; i++)
			cJSON_AddItemToArray(all, rcomment_json(f, r, is, &is->pr->rcomments[i]));
		gf_paginate(f, req, resp, all, 30, NULL);
	} else if (strcmp(e, "/requested_reviewers") == 0 &&
	           (strcmp(m, "POST") == 0 || strcmp(m, "DELETE") == 0)) {
		reviewers(f, r, is, login, req, resp);
	} else if (strcmp(e, "/requested_reviewers") == 0 && get) {
		cJSON *o = cJSON_CreateObject();
		cJSON *users = cJSON_AddArrayToObject(o, "users");
		const cJSON *x;
		cJSON_ArrayForEach(x, is->pr->requested)
		        cJSON_AddItemToArray(users, gf_user_json(x->valuestring));
		cJSON_AddArrayToObject(o, "teams");
		httpfake_response_cjson(resp, 200, o);
	} else {
		gf_error(resp, 404, "Not Found");
	}
}
