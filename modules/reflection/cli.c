/* self CLI — diff and revert SELF.md (cli.h). */
#include "modules/reflection/cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/identity/self.h"
#include "modules/reflection/history.h"

#define EXIT_USAGE 64

struct lines {
	const char **l;
	size_t *len;
	size_t n;
};

static void split(const char *s, struct lines *out)
{
	size_t cap = 16;
	out->l = xcalloc(cap, sizeof *out->l);
	out->len = xcalloc(cap, sizeof *out->len);
	out->n = 0;
	for (const char *p = s; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (out->n == cap) {
			cap *= 2;
			out->l = xreallocarray(out->l, cap, sizeof *out->l);
			out->len = xreallocarray(out->len, cap, sizeof *out->len);
		}
		out->l[out->n] = p;
		out->len[out->n++] = n;
		p += n + (nl ? 1 : 0);
	}
}

static bool same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
	return a->len[i] == b->len[j] && memcmp(a->l[i], b->l[j], a->len[i]) == 0;
}

enum op { OP_KEEP, OP_DEL, OP_ADD };
struct edit {
	enum op op;
	size_t i, j; /* line in a / in b */
};

static void print_line(FILE *out, char mark, const struct lines *x, size_t k)
{
	fprintf(out, "%c%.*s\n", mark, (int)x->len[k], x->l[k]);
}

size_t self_diff(const char *a, const char *b, const char *label_a, const char *label_b, FILE *out)
{
	struct lines A, B;
	split(a, &A);
	split(b, &B);
	struct edit *ed = xcalloc(A.n + B.n + 1, sizeof *ed);
	size_t ne = 0;
	if ((A.n + 1) * (B.n + 1) <= SELF_DIFF_MAX_CELLS) {
		/* LCS lengths of the suffixes, then walk forward */
		uint32_t *t = xcalloc((A.n + 1) * (B.n + 1), sizeof *t);
#define T(i, j) t[(i) * (B.n + 1) + (j)]
		for (size_t i = A.n; i-- > 0;)
			for (size_t j = B.n; j-- > 0;)
				T(i, j) = same(&A, i, &B, j)           ? T(i + 1, j + 1) + 1
				          : T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j)
				                                       : T(i, j + 1);
		size_t i = 0, j = 0;
		while (i < A.n || j < B.n) {
			if (i < A.n && j < B.n && same(&A, i, &B, j))
				ed[ne++] = (struct edit){OP_KEEP, i++, j++};
			else if (i < A.n && (j == B.n || T(i + 1, j) >= T(i, j + 1)))
				ed[ne++] = (struct edit){OP_DEL, i++, j}; /* '-' before '+' */
			else
				ed[ne++] = (struct edit){OP_ADD, i, j++};
		}
#undef T
		free(t);
	} else {
		for (size_t i = 0; i < A.n; i++)
			ed[ne++] = (struct edit){OP_DEL, i, 0};
		for (size_t j = 0; j < B.n; j++)
			ed[ne++] = (struct edit){OP_ADD, A.n, j};
	}
	size_t changed = 0;
	for (size_t k = 0; k < ne; k++)
		changed += ed[k].op != OP_KEEP;
	if (changed)
		fprintf(out, "--- %s\n+++ %s\n", label_a, label_b);
	/* hunks: runs of changes with SELF_DIFF_CONTEXT lines around them,
	 * merged when their contexts touch */
	size_t k = 0;
	while (k < ne) {
		while (k < ne && ed[k].op == OP_KEEP)
			k++;
		if (k == ne)
			break;
		size_t start = k > SELF_DIFF_CONTEXT ? k - SELF_DIFF_CONTEXT : 0;
		size_t end = k;
		for (;;) {
			while (end < ne && ed[end].op != OP_KEEP)
				end++;
			size_t keep = 0;
			while (end + keep < ne && ed[end + keep].op == OP_KEEP)
				keep++;
			if (end + keep < ne && keep <= 2 * SELF_DIFF_CONTEXT) {
				end += keep;
				continue;
			}
			end += keep < SELF_DIFF_CONTEXT ? keep : SELF_DIFF_CONTEXT;
			break;
		}
		size_t a0 = ed[start].i, b0 = ed[start].j, na = 0, nb = 0;
		for (size_t x = start; x < end; x++) {
			na += ed[x].op != OP_ADD;
			nb += ed[x].op != OP_DEL;
		}
		fprintf(out, "@@ -%zu,%zu +%zu,%zu @@\n", na ? a0 + 1 : a0, na, nb ? b0 + 1 : b0,
		        nb);
		for (size_t x = start; x < end; x++) {
			if (ed[x].op == OP_KEEP)
				print_line(out, ' ', &A, ed[x].i);
			else if (ed[x].op == OP_DEL)
				print_line(out, '-', &A, ed[x].i);
			else
				print_line(out, '+', &B, ed[x].j);
		}
		k = end;
	}
	free(ed);
	free(A.l);
	free(A.len);
	free(B.l);
	free(B.len);
	return changed;
}

static char *read_self(const char *path, FILE *err, bool *ok)
{
	struct ga_err e = {{0}};
	size_t len;
	errno = 0;
	char *s = fsx_read_file(path, SELF_MAX_BYTES, &len, &e);
	*ok = s || errno == ENOENT;
	if (!s && errno != ENOENT)
		fprintf(err, "general-agent self: %s\n", e.msg);
	return s ? s : xstrdup("");
}

int reflection_cli_self(int argc, char **argv, const struct ga_config *cfg, FILE *out, FILE *err)
{
	if (argc != 1 ||
	    (strcmp(argv[0], "diff") && strcmp(argv[0], "revert") && strcmp(argv[0], "history"))) {
		fputs("usage: general-agent self diff | revert | history\n", err);
		return EXIT_USAGE;
	}
	char *self_path = fsx_join(cfg->home, "SELF.md");
	char *hist_dir = fsx_join(cfg->memory_dir, SELF_HISTORY_DIR);
	int rc = 1;
	if (strcmp(argv[0], "history") == 0) {
		char **names;
		size_t n = selfhist_list(cfg->memory_dir, &names);
		if (n == 0)
			fprintf(out, "no previous SELF.md in %s\n", hist_dir);
		for (size_t i = 0; i < n; i++) {
			fprintf(out, "%s/%s\n", hist_dir, names[i]);
			free(names[i]);
		}
		free(names);
		rc = 0;
		goto done;
	}
	char name[SELF_HISTORY_NAME_MAX];
	size_t plen = 0;
	struct ga_err e = {{0}};
	char *prev = selfhist_latest(cfg->memory_dir, name, sizeof name, &plen, &e);
	if (!prev) {
		fprintf(err, "general-agent self %s: %s\n", argv[0], e.msg);
		goto done;
	}
	bool ok;
	char *cur = read_self(self_path, err, &ok);
	if (!ok) {
		free(prev);
		free(cur);
		goto done;
	}
	if (strcmp(argv[0], "diff") == 0) {
		char label[SELF_HISTORY_NAME_MAX + 32];
		snprintf(label, sizeof label, "%s/%s", SELF_HISTORY_DIR, name);
		if (self_diff(prev, cur, label, "SELF.md", out) == 0)
			fprintf(out, "SELF.md is the same as %s/%s\n", hist_dir, name);
		rc = 0;
	} else if (strcmp(prev, cur) == 0) {
		fprintf(out, "SELF.md is already the same as %s/%s: nothing to revert\n", hist_dir,
		        name);
		rc = 0;
	} else if (selfhist_replace(cfg->memory_dir, self_path, prev, plen, "revert", time_now_ms(),
	                            &e) != 0) {
		fprintf(err, "general-agent self revert: %s\n", e.msg);
	} else {
		fprintf(out,
		        "SELF.md restored from %s/%s; the version it replaced is kept in %s (run "
		        "'general-agent self revert' again to undo). A running agent reads it on "
		        "SIGHUP or at its next reflection.\n",
		        hist_dir, name, hist_dir);
		rc = 0;
	}
	free(prev);
	free(cur);
done:
	free(self_path);
	free(hist_dir);
	return rc;
}
