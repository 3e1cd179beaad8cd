/*
 * echo_cases — loader for the labelled echo set in tests/data/echo/NAME.cases
 * (format in tests/data/echo/README.md), shared by the quality test and
 * bench/echo.
 *
 * Everything is owned by the echo_cases struct; echo_cases_free releases it.
 * Bounds: lines up to ECHO_CASES_LINE_MAX bytes, at most ECHO_CASES_MAX
 * cases and messages in total (the loader fails beyond, naming the file).
 */
#ifndef GA_TEST_ECHO_CASES_H
#define GA_TEST_ECHO_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define ECHO_CASES_LINE_MAX 8192
#define ECHO_CASES_MAX 10000

struct echo_case_msg {
	char *author; /* "" when the line has no "name:" */
	bool agent;   /* '>' lines; '!' lines are host/human context */
	char *text;
};

struct echo_case {
	char id[96];      /* file:line */
	bool echo;        /* label */
	char kind[32];
	char *candidate;
	size_t first;     /* history = msgs[first .. first+nmsg) */
	size_t nmsg;
};

struct echo_cases {
	struct echo_case_msg *msgs;
	size_t nmsgs;
	struct echo_case *cases;
	size_t ncases;
};

struct echo_quality {
	size_t tp, fp, tn, fn;
};

/* Runs every case: each gets a fresh 50-message window holding its history.
 * validator_level = false: the echo ensemble alone (check 5);
 * true: the validator's echo decision (echo opener, check 4, or ensemble,
 * check 5) in discussion mode with no commitments. Misclassified cases are
 * written to misses (may be NULL) with their scores. */
void echo_cases_evaluate(const struct echo_cases *c, bool validator_level, FILE *misses,
			 struct echo_quality *q);
double echo_quality_recall(const struct echo_quality *q);
double echo_quality_precision(const struct echo_quality *q);
double echo_quality_fpr(const struct echo_quality *q);
double echo_quality_f1(const struct echo_quality *q);

/* Loads every *.cases file of dir (sorted by name). Returns 0, or -1 with a
 * message in err. */
int echo_cases_load_dir(const char *dir, struct echo_cases *out, char *err, size_t errlen);
void echo_cases_free(struct echo_cases *c);

#endif
