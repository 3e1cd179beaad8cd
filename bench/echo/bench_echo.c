/*
 * bench-echo — how good and how fast the echo detector is.
 *
 *   bench-echo [--misses] [--seconds S] [DATA_DIR]
 *
 * DATA_DIR defaults to $GA_SOURCE_DIR/tests/data/echo (or the source tree
 * this was built from). Prints, for the ensemble alone and for the
 * validator's echo checks (opener + ensemble): precision, recall, F1 and the
 * false-positive rate on non-echoes, per kind too; then throughput:
 * validator_validate() calls per second against a 50-message window on one
 * core, and window pushes per second. --misses lists misclassified cases.
 * Targets (issue 6): recall ≥ 0.95 at FPR ≤ 0.03; ≥ 20,000 validations/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "echo_cases.h"
#include "modules/validator/validator.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char *what, const struct echo_quality *q)
{
	printf("%-28s precision %.3f  recall %.3f  F1 %.3f  FPR %.3f  (tp %zu fp %zu tn %zu "
	       "fn %zu)\n",
	       what, echo_quality_precision(q), echo_quality_recall(q), echo_quality_f1(q),
	       echo_quality_fpr(q), q->tp, q->fp, q->tn, q->fn);
}

static void per_kind(const struct echo_cases *all)
{
	/* Evaluate each kind's subset on its own. */
	const char *kinds[64];
	size_t nk = 0;
	for (size_t i = 0; i < all->ncases; i++) {
		size_t k = 0;
		while (k < nk && strcmp(kinds[k], all->cases[i].kind) != 0)
			k++;
		if (k == nk && nk < 64)
			kinds[nk++] = all->cases[i].kind;
	}
	for (size_t k = 0; k < nk; k++) {
		struct echo_cases sub = *all;
		sub.cases = calloc(all->ncases, sizeof *sub.cases);
		sub.ncases = 0;
		bool label = false;
		for (size_t i = 0; i < all->ncases; i++)
			if (strcmp(all->cases[i].kind, kinds[k]) == 0) {
				sub.cases[sub.ncases++] = all->cases[i];
				label = all->cases[i].echo;
			}
		struct echo_quality q;
		echo_cases_evaluate(&sub, false, NULL, &q);
		if (label)
			printf("  %-18s %-9s %3zu cases  recall %.3f\n", kinds[k], "echo", sub.ncases,
			       echo_quality_recall(&q));
		else
			printf("  %-18s %-9s %3zu cases  false positives %.3f\n", kinds[k], "not echo",
			       sub.ncases, echo_quality_fpr(&q));
		free(sub.cases);
	}
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	bool misses = false;
	double seconds = 2.0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--misses") == 0)
			misses = true;
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else
			dir = argv[i];
	}
	char def[4096];
	if (!dir) {
		const char *src = getenv("GA_SOURCE_DIR");
		snprintf(def, sizeof def, "%s/tests/data/echo", src ? src : GA_SOURCE_DIR);
		dir = def;
	}
	struct echo_cases cases;
	char err[512];
	if (echo_cases_load_dir(dir, &cases, err, sizeof err) != 0) {
		fprintf(stderr, "bench-echo: %s\n", err);
		return 1;
	}
	size_t echoes = 0;
	for (size_t i = 0; i < cases.ncases; i++)
		echoes += cases.cases[i].echo;
	printf("echo set: %zu cases (%zu echo, %zu not echo), %zu history messages\n",
	       cases.ncases, echoes, cases.ncases - echoes, cases.nmsgs);

	struct echo_quality q;
	echo_cases_evaluate(&cases, false, misses ? stdout : NULL, &q);
	report("ensemble (check 5)", &q);
	per_kind(&cases);
	echo_cases_evaluate(&cases, true, NULL, &q);
	report("validator (checks 4+5)", &q);

	/* Throughput: a 50-message window of agent messages from the set. */
	struct echo_window *w = echo_window_new(50);
	size_t pushed = 0;
	double t0 = now_s();
	for (size_t i = 0; pushed < 5000; i = (i + 1) % cases.nmsgs, pushed++)
		echo_window_push(w, cases.msgs[i].author, true, cases.msgs[i].text);
	double push_rate = (double)pushed / (now_s() - t0);
	struct validator_context ctx = {.window = w, .connected_agents = 3};
	size_t n = 0;
	t0 = now_s();
	double t1 = t0;
	while (t1 - t0 < seconds) {
		for (int b = 0; b < 256; b++, n++) {
			struct validator_decision d;
			validator_validate(cases.cases[n % cases.ncases].candidate, &ctx, &d);
			validator_decision_clear(&d);
		}
		t1 = now_s();
	}
	printf("throughput: %.0f validations/s against a %zu-message window (%zu runs, %.1f s)\n",
	       (double)n / (t1 - t0), echo_window_len(w), n, t1 - t0);
	printf("window: %.0f pushes/s; memory bound %zu bytes for 50 messages\n", push_rate,
	       echo_window_max_bytes(50));
	echo_window_free(w);
	echo_cases_free(&cases);
	echo_shutdown();
	return 0;
}
