/*
 * echo_cases — loader for the labelled echo set in tests/data/echo/NAME.cases
 * (format in tests/data/echo/README.md), shared by the quality test and
 * bench/echo.
 *
 * Everything is owned by the echo_cases struct; echo_cases_free releases it.
 * Bounds: lines up to ECHO_CASES_LINE_MAX bytes, at most ECHO_CASES_MAX
 * cases and messages in total (the loader fails beyond, naming the file).
 */
#ifndef GA_TESTS_UNIT_VALIDATOR_ECHO_CASES_H
#define GA_TESTS_UNIT_VALIDATOR_ECHO_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define ECHO_CASES_LINE_MAX 8192
#define ECHO_CASES_MAX      10000

struct echo_case_msg {
	char *author; /* "" when the line has no "name:" */
	bool agent;   /* '>' and '=' lines; '!' lines are host/human context */
	bool self;    /* '=' lines: the agent whose candidate is judged */
	char *text;
};

struct echo_case {
	char id[96]; /* file:line */
	bool echo;   /* label */
	char kind[32];
	char *candidate;
	size_t first; /* history = msgs[first .. first+nmsg) */
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
	size_t band;      /* candidates the validator referred to the judge */
	size_t band_echo; /* of those, labelled echo */
};

/* Who answers the validator's borderline band (§9.1 check 6). NONE: no
 * judge is configured, the validator decides the band itself (the daemon
 * without a model judge). YES / NO: a judge that always answers so (YES is
 * an echo-prone model). ORACLE: a judge that answers with the label — the
 * ceiling a perfect model could reach; only the plumbing is real. */
enum echo_judge_mode { ECHO_JUDGE_NONE, ECHO_JUDGE_YES, ECHO_JUDGE_NO, ECHO_JUDGE_ORACLE };

/* Runs every case: each gets a fresh 50-message window holding its history.
 * validator_level = false: the echo ensemble alone (check 5);
 * true: the validator's echo decision (echo opener, check 4, or ensemble,
 * check 5) in discussion mode with no commitments. Misclassified cases are
 * written to misses (may be NULL) with their scores. */
void echo_cases_evaluate(const struct echo_cases *c, bool validator_level, FILE *misses,
                         struct echo_quality *q);
/* The validator's echo decision (checks 4–6, discussion mode, no
 * commitments, host lines as context) with the band put to `judge`. */
void echo_cases_evaluate_judge(const struct echo_cases *c, enum echo_judge_mode judge, FILE *misses,
                               struct echo_quality *q);
/* Whether a validator decision is an echo verdict (opener, ensemble, judge). */
bool echo_cases_is_echo_rule(const char *rule);
double echo_quality_accuracy(const struct echo_quality *q);
double echo_quality_recall(const struct echo_quality *q);
double echo_quality_precision(const struct echo_quality *q);
double echo_quality_fpr(const struct echo_quality *q);
double echo_quality_f1(const struct echo_quality *q);

/* Loads every *.cases file of dir (sorted by name). Returns 0, or -1 with a
 * message in err. */
int echo_cases_load_dir(const char *dir, struct echo_cases *out, char *err, size_t errlen);
/* Loads a paraphrase corpus in the MSR Paraphrase Corpus layout (a header
 * line, then "Quality<TAB>#1 ID<TAB>#2 ID<TAB>#1 String<TAB>#2 String"):
 * each pair is one case whose history is #1 String said by a peer agent and
 * whose candidate is #2 String, labelled echo when Quality is 1. Returns 0,
 * or -1 with a message in err. */
int echo_cases_load_mrpc(const char *path, struct echo_cases *out, char *err, size_t errlen);
void echo_cases_free(struct echo_cases *c);

#endif
