/*
 * ghconv review — what the reviewer of a pull request reads and what its
 * review becomes (spec github-commitments §3.11), as pure functions: no
 * I/O, no clock. The engine (ghconv.h, ghconv_review) fetches the PR, its
 * reviews and its files, asks the model with ghconv_review_prompt, and
 * turns the model's github_review_pr call into one review with
 * ghconv_review_parse.
 *
 *   the prompt   the PR's number, title, author, head → base, its body's
 *                tests line, the earlier reviews, and the changed files
 *                with their hunks, every line of the new side numbered (the
 *                line an inline comment names). Bounded: at most
 *                GHCONV_REVIEW_PATCH_BYTES of patch text, files largest
 *                first (by changed lines); a file that does not fit whole
 *                is cut at a line when at least GHCONV_REVIEW_MIN_CUT bytes
 *                are left, else left out; what is left out is counted ("and
 *                3 more files, 410 lines, not shown"). Binary files (no
 *                patch) are named with their figures;
 *   the review   the tool's arguments checked (the PR under review, the
 *                event, a body, at most GHCONV_REVIEW_MAX_COMMENTS inline
 *                comments with a path, a line and a body); an inline
 *                comment whose line is not on the new side of a hunk of
 *                that file is folded into the body (path, line, text) so
 *                nothing the model said is lost; the result is the text
 *                and the port's extra (modules/github/port.h, review:<n>).
 *
 * Ownership: functions returning char * or cJSON * say "caller frees".
 */
#ifndef GA_MODULES_GHCONV_REVIEW_H
#define GA_MODULES_GHCONV_REVIEW_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/github/gh_work.h"
#include "common/err.h"

#define GHCONV_REVIEW_PATCH_BYTES   (24 * 1024) /* patch text in one prompt */
#define GHCONV_REVIEW_MIN_CUT       1024        /* a cut file shows at least this much */
#define GHCONV_REVIEW_MAX_FILES     300         /* files read of one PR (GitHub lists 3,000) */
#define GHCONV_REVIEW_MAX_COMMENTS  20          /* inline comments of one review */
#define GHCONV_REVIEW_EARLIER       5           /* earlier reviews shown, the newest */
#define GHCONV_REVIEW_EARLIER_BYTES 1500        /* of each earlier review's body */
#define GHCONV_REVIEW_BODY_MAX      60000       /* the review's body, folded comments included */

/* An earlier review, as the prompt shows it. */
struct ghconv_review_prior {
	const char *user, *state, *body, *commit_id;
};

struct ghconv_review_in {
	const char *owner, *repo;
	const struct gh_pull *pr;
	const struct gh_pull_file *files;
	size_t nfiles;
	size_t files_unlisted; /* files GitHub has beyond those read */
	const struct ghconv_review_prior *prior;
	size_t nprior;
	const char *source; /* why the review is made ("review requested of you") */
};

/* The "**Tests:** …" line of a PR body (the text after the label, up to
 * the end of the line) into out; "" when the body names none. */
void ghconv_review_tests_line(const char *body, char *out, size_t cap);

/* The user message of a review (above). Caller frees. */
char *ghconv_review_prompt(const struct ghconv_review_in *in);

/* Is line (the new side's numbering) part of a hunk of path's patch? */
bool ghconv_review_line_in_diff(const struct gh_pull_file *files, size_t n, const char *path,
                                int64_t line);

struct ghconv_review_out {
	char event[16]; /* APPROVE, REQUEST_CHANGES, COMMENT */
	char *text;     /* the body, with the folded comments; caller frees */
	cJSON *extra;   /* {event, commit_id, comments[{path, line, side, body}]}; caller frees */
	size_t inline_n, folded_n;
};

/* The model's github_review_pr arguments (args) for pull request
 * owner/repo#number at head_sha, the PR's files (for the diff test): 0 and
 * out filled, or -1 with err naming what is wrong (sent back to the model).
 * Free out with ghconv_review_out_clear. */
int ghconv_review_parse(const cJSON *args, const char *owner, const char *repo, int64_t number,
                        const char *head_sha, const struct gh_pull_file *files, size_t nfiles,
                        struct ghconv_review_out *out, struct ga_err *err);
void ghconv_review_out_clear(struct ghconv_review_out *out);

#endif
