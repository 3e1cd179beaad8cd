/* The reviewer's prompt and the review the model asks for. See review.h. */
#include "modules/ghconv/review.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/ghconv/policy.h"

#define BODY_SHOWN  4000 /* bytes of the PR's description in the prompt */
#define NAMES_SHOWN 10   /* names of files left out, listed */

/* ---- patches ------------------------------------------------------------------------ */

/* One line of a unified diff as GitHub's files API gives it. */
struct pline {
	const char *s;
	size_t len;
	char kind;     /* '@' hunk header, '+', '-', ' ', '\\' (no newline at end) */
	int64_t newno; /* its line on the new side ('+', ' '); 0 otherwise */
};

/* The next line of the patch at *cur; *next_new carries the new side's
 * numbering from one line to the next. false at the end. */
static bool next_line(const char **cur, int64_t *next_new, struct pline *out)
{
	const char *s = *cur;
	if (!s || !*s)
		return false;
	const char *nl = strchr(s, '\n');
	out->s = s;
	out->len = nl ? (size_t)(nl - s) : strlen(s);
	*cur = nl ? nl + 1 : s + out->len;
	out->kind = *s == '@' || *s == '+' || *s == '-' || *s == '\\' ? *s : ' ';
	out->newno = 0;
	if (out->kind == '@') {
		const char *plus = strstr(s, " +");
		*next_new = plus && plus < s + out->len ? strtoll(plus + 2, NULL, 10) : 0;
	} else if (out->kind == '+' || out->kind == ' ') {
		out->newno = (*next_new)++;
	}
	return true;
}

bool ghconv_review_line_in_diff(const struct gh_pull_file *files, size_t n, const char *path,
                                int64_t line)
{
	if (!path || line < 1)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!files[i].filename || strcmp(files[i].filename, path) != 0)
			continue;
		const char *cur = files[i].patch;
		int64_t next = 0;
		struct pline pl;
		while (next_line(&cur, &next, &pl))
			if (pl.newno == line)
				return true;
		return false;
	}
	return false;
}

/* The patch with the new side's numbers at the left, whole or cut at a
 * line within max bytes. Returns the bytes written; *left the lines not
 * shown. */
static size_t render_patch(struct strbuf *sb, const char *patch, size_t max, size_t *left)
{
	size_t start = sb->len, lines = 0, shown = 0;
	const char *cur = patch;
	int64_t next = 0;
	struct pline pl;
	bool full = false;
	while (next_line(&cur, &next, &pl)) {
		lines++;
		if (full)
			continue;
		char num[24] = "";
		if (pl.kind != '@') {
			if (pl.newno)
				snprintf(num, sizeof num, "%5" PRId64 " ", pl.newno);
			else
				snprintf(num, sizeof num, "      ");
		}
		size_t need = strlen(num) + pl.len + 1;
		if (sb->len - start + need > max) {
			full = true;
			continue;
		}
		sb_puts(sb, num);
		sb_append(sb, pl.s, pl.len);
		sb_putc(sb, '\n');
		shown++;
	}
	*left = lines - shown;
	return sb->len - start;
}

/* The rendered size of a whole patch (numbers included). */
static size_t rendered_size(const char *patch)
{
	size_t n = 0;
	const char *cur = patch;
	int64_t next = 0;
	struct pline pl;
	while (next_line(&cur, &next, &pl))
		n += pl.len + 1 + (pl.kind == '@' ? 0 : 6);
	return n;
}

static int64_t changed_lines(const struct gh_pull_file *f)
{
	int64_t c = f->changes > 0 ? f->changes : f->additions + f->deletions;
	return c > 0 ? c : 0;
}

/* A file in the order it is shown: most changed lines first, then by
 * name (a stable order for one PR). */
struct ord {
	size_t i;
	int64_t changes;
	const char *name;
};

static int by_size(const void *a, const void *b)
{
	const struct ord *x = a, *y = b;
	if (x->changes != y->changes)
		return x->changes > y->changes ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* ---- the prompt ------------------------------------------------------------------------- */

void ghconv_review_tests_line(const char *body, char *out, size_t cap)
{
	out[0] = '\0';
	if (!body)
		return;
	static const char *const labels[] = {"**Tests:**", "Tests:"};
	for (size_t k = 0; k < sizeof labels / sizeof labels[0]; k++) {
		for (const char *s = strstr(body, labels[k]); s; s = strstr(s + 1, labels[k])) {
			if (s != body && s[-1] != '\n')
				continue; /* the label opens a line */
			const char *v = s + strlen(labels[k]);
			while (*v == ' ' || *v == '\t')
				v++;
			size_t len = strcspn(v, "\r\n");
			if (len == 0)
				continue;
			size_t keep = len < cap - 1 ? len : cap - 1;
			keep = utf8_cut(v, len, keep);
			memcpy(out, v, keep);
			out[keep] = '\0';
			return;
		}
	}
}

static void put_bounded(struct strbuf *sb, const char *s, size_t max)
{
	size_t len = strlen(s);
	size_t keep = utf8_cut(s, len, len < max ? len : max);
	sb_append(sb, s, keep);
	if (keep < len)
		sb_printf(sb, " […%zu more bytes]", len - keep);
}

static void put_files(struct strbuf *sb, const struct ghconv_review_in *in)
{
	size_t n = in->nfiles;
	struct ord *order = xcalloc(n + 1, sizeof *order);
	int64_t add = 0, del = 0;
	for (size_t i = 0; i < n; i++) {
		order[i] = (struct ord){i, changed_lines(&in->files[i]),
		                        in->files[i].filename ? in->files[i].filename : ""};
		add += in->files[i].additions;
		del += in->files[i].deletions;
	}
	qsort(order, n, sizeof *order, by_size);
	sb_printf(sb, "\n## Changed files (%zu, +%" PRId64 " -%" PRId64 ")\n",
	          n + in->files_unlisted, add, del);
	sb_puts(sb, "Each line of the new side is numbered at the left: an inline comment names "
	            "that number.\n");
	size_t budget = GHCONV_REVIEW_PATCH_BYTES;
	size_t not_shown = in->files_unlisted;
	int64_t not_shown_lines = 0;
	size_t cut_files = 0;
	const char *names[NAMES_SHOWN];
	size_t nnames = 0;
	for (size_t k = 0; k < n; k++) {
		const struct gh_pull_file *f = &in->files[order[k].i];
		const char *name = f->filename ? f->filename : "?";
		if (!f->patch) {
			sb_printf(sb,
			          "\n### %s (%s, +%" PRId64 " -%" PRId64 ", no text diff: binary "
			          "or too large for GitHub)\n",
			          name, f->status, f->additions, f->deletions);
			continue;
		}
		size_t size = rendered_size(f->patch);
		if (size > budget && budget < GHCONV_REVIEW_MIN_CUT) {
			not_shown++;
			not_shown_lines += changed_lines(f);
			if (nnames < NAMES_SHOWN)
				names[nnames++] = name;
			continue;
		}
		sb_printf(sb, "\n### %s (%s, +%" PRId64 " -%" PRId64 ")\n```diff\n", name,
		          f->status, f->additions, f->deletions);
		size_t left = 0;
		budget -= render_patch(sb, f->patch, budget, &left);
		sb_puts(sb, "```\n");
		if (left) {
			cut_files++;
			sb_printf(sb, "(cut here: %zu more lines of this file's diff not shown)\n",
			          left);
		}
	}
	free(order);
	if (not_shown) {
		sb_printf(sb, "\nAnd %zu more file%s, %" PRId64 " changed lines, not shown",
		          not_shown, not_shown == 1 ? "" : "s", not_shown_lines);
		if (nnames) {
			sb_puts(sb, " (");
			for (size_t i = 0; i < nnames; i++)
				sb_printf(sb, "%s%s", i ? ", " : "", names[i]);
			if (not_shown > nnames)
				sb_puts(sb, ", …");
			sb_puts(sb, ")");
		}
		sb_puts(sb, ".\n");
	}
	if (cut_files || not_shown)
		sb_printf(sb,
		          "(The diff shown is bounded to %d KB of patch text, largest files "
		          "first.)\n",
		          GHCONV_REVIEW_PATCH_BYTES / 1024);
}

char *ghconv_review_prompt(const struct ghconv_review_in *in)
{
	const struct gh_pull *pr = in->pr;
	struct strbuf sb;
	sb_init(&sb, GHCONV_PROMPT_MAX_BYTES + GHCONV_REVIEW_PATCH_BYTES);
	sb_printf(&sb, "Review pull request #%" PRId64 " in %s/%s: %s\n", pr->number, in->owner,
	          in->repo, pr->title ? pr->title : "");
	sb_printf(&sb, "Author: %s. Branches: %s → %s. Head commit: %s.\n", pr->user, pr->head_ref,
	          pr->base_ref, pr->head_sha);
	if (in->source)
		sb_printf(&sb, "Why you review it: %s.\n", in->source);
	char *body = ghconv_strip_markers(pr->body ? pr->body : "");
	sb_puts(&sb, "\n## Description\n");
	put_bounded(&sb, body[0] ? body : "(empty)", BODY_SHOWN);
	sb_puts(&sb, "\n");
	char tests[400];
	ghconv_review_tests_line(body, tests, sizeof tests);
	free(body);
	sb_printf(&sb, "\nTests, as the description reports them: %s\n",
	          tests[0] ? tests : "the description names no tests");
	if (in->nprior) {
		size_t from =
		        in->nprior > GHCONV_REVIEW_EARLIER ? in->nprior - GHCONV_REVIEW_EARLIER : 0;
		sb_printf(&sb, "\n## Earlier reviews (%zu", in->nprior);
		if (from)
			sb_printf(&sb, ", the newest %d shown", GHCONV_REVIEW_EARLIER);
		sb_puts(&sb, ")\n");
		for (size_t i = from; i < in->nprior; i++) {
			const struct ghconv_review_prior *r = &in->prior[i];
			char *rb = ghconv_strip_markers(r->body ? r->body : "");
			sb_printf(&sb, "- %s, %s, on commit %.7s: ", r->user, r->state,
			          r->commit_id ? r->commit_id : "?");
			put_bounded(&sb, rb[0] ? rb : "(no text)", GHCONV_REVIEW_EARLIER_BYTES);
			sb_puts(&sb, "\n");
			free(rb);
		}
	}
	put_files(&sb, in);
	sb_puts(&sb, "\n## What to do\n"
	             "Read the changes against what the description says the task is. Then call "
	             "github_review_pr once for this pull request (pull_number ");
	sb_printf(&sb, "%" PRId64 "):\n", pr->number);
	sb_puts(&sb, "- APPROVE when the change does what it says and nothing in it is wrong; say "
	             "briefly why;\n"
	             "- REQUEST_CHANGES when something must change before it is merged: name each "
	             "problem and why, put it on its line with an inline comment {path, line, "
	             "body} (line = the number at the left of the diff);\n"
	             "- COMMENT for remarks that need no change.\n"
	             "Do not merge: the author merges once approved.\n");
	char *out = sb_detach(&sb);
	sb_free(&sb);
	return out ? out : xstrdup("");
}

/* ---- the review ------------------------------------------------------------------------- */

void ghconv_review_out_clear(struct ghconv_review_out *out)
{
	if (!out)
		return;
	free(out->text);
	cJSON_Delete(out->extra);
	memset(out, 0, sizeof *out);
}

int ghconv_review_parse(const cJSON *args, const char *owner, const char *repo, int64_t number,
                        const char *head_sha, const struct gh_pull_file *files, size_t nfiles,
                        struct ghconv_review_out *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	const char *o = json_string_or(args, "owner", "");
	const char *r = json_string_or(args, "repo", "");
	int64_t n = json_int_or(args, "pull_number", -1);
	if (strcasecmp(o, owner) != 0 || strcasecmp(r, repo) != 0 || n != number)
		return err_set(err,
		               "this review is of %s/%s#%" PRId64
		               " only (owner, repo, pull_number); "
		               "%.60s/%.100s#%" PRId64 " is not under review now",
		               owner, repo, number, o, r, n);
	const char *event = json_string_or(args, "event", "");
	if (strcmp(event, "APPROVE") != 0 && strcmp(event, "REQUEST_CHANGES") != 0 &&
	    strcmp(event, "COMMENT") != 0)
		return err_set(err, "event '%.40s' is not APPROVE, REQUEST_CHANGES or COMMENT",
		               event);
	const char *body = json_string_or(args, "body", "");
	size_t blen = strspn(body, " \t\r\n") == strlen(body) ? 0 : strlen(body);
	if (blen == 0)
		return err_set(err, "field 'body' is empty: say why you %s",
		               strcmp(event, "APPROVE") == 0           ? "approve"
		               : strcmp(event, "REQUEST_CHANGES") == 0 ? "request changes"
		                                                       : "comment");
	const cJSON *comments = cJSON_GetObjectItem(args, "comments");
	if (comments && !cJSON_IsArray(comments) && !cJSON_IsNull(comments))
		return err_set(err, "field 'comments' must be an array of {path, line, body}");
	int nc = cJSON_IsArray(comments) ? cJSON_GetArraySize(comments) : 0;
	if (nc > GHCONV_REVIEW_MAX_COMMENTS)
		return err_set(err, "%d inline comments: at most %d in one review", nc,
		               GHCONV_REVIEW_MAX_COMMENTS);
	int i = 0;
	const cJSON *c;
	const cJSON *list = cJSON_IsArray(comments) ? comments : NULL;
	cJSON_ArrayForEach(c, list)
	{
		i++;
		const cJSON *line = cJSON_GetObjectItem(c, "line");
		if (!json_string_or(c, "path", "")[0] || !json_string_or(c, "body", "")[0] ||
		    !cJSON_IsNumber(line) || line->valuedouble < 1 ||
		    line->valuedouble != (double)(int64_t)line->valuedouble)
			return err_set(
			        err,
			        "inline comment %d needs a path, a line (a whole number, 1 or "
			        "more: the number at the left of the diff) and a body",
			        i);
	}
	struct strbuf sb;
	sb_init(&sb, GHCONV_REVIEW_BODY_MAX);
	sb_append(&sb, body, blen);
	out->extra = cJSON_CreateObject();
	cJSON_AddStringToObject(out->extra, "event", event);
	if (head_sha && *head_sha)
		cJSON_AddStringToObject(out->extra, "commit_id", head_sha);
	cJSON *arr = cJSON_AddArrayToObject(out->extra, "comments");
	cJSON_ArrayForEach(c, list)
	{
		const char *path = json_string_or(c, "path", "");
		int64_t line = json_int_or(c, "line", 0);
		const char *text = json_string_or(c, "body", "");
		if (ghconv_review_line_in_diff(files, nfiles, path, line)) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "path", path);
			cJSON_AddNumberToObject(x, "line", (double)line);
			cJSON_AddStringToObject(x, "side", "RIGHT");
			cJSON_AddStringToObject(x, "body", text);
			cJSON_AddItemToArray(arr, x);
			out->inline_n++;
			continue;
		}
		if (out->folded_n++ == 0)
			sb_puts(&sb, "\n\nOn lines outside the diff:\n");
		if (sb_printf(&sb, "- `%s` line %" PRId64 ": %s\n", path, line, text) != 0) {
			sb_free(&sb);
			ghconv_review_out_clear(out);
			return err_set(err, "the review is longer than %d bytes with its comments",
			               GHCONV_REVIEW_BODY_MAX);
		}
	}
	if (sb.len >= GHCONV_REVIEW_BODY_MAX - 200) {
		sb_free(&sb);
		ghconv_review_out_clear(out);
		return err_set(err, "the review is longer than %d bytes",
		               GHCONV_REVIEW_BODY_MAX - 200);
	}
	snprintf(out->event, sizeof out->event, "%s", event);
	out->text = sb_detach(&sb);
	sb_free(&sb);
	if (!out->text)
		out->text = xstrdup(body);
	return 0;
}
