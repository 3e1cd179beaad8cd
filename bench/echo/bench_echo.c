/*
 * bench-echo — how good and how fast the echo detector is.
 *
 *   bench-echo [--misses] [--kinds] [--runs N] [--seconds S] [--mrpc FILE]
 *              [--source DIR]
 *
 * Sets, judged as the room judges (the validator's echo decision: opener,
 * ensemble, borderline band; discussion mode, no commitments, host lines as
 * context, no judge):
 *   labelled   the .cases files of tests/data/echo (the first labelled set)
 *   chat-dev   tests/data/echo/chat/dev (the half the detector is tuned on)
 *   chat-test  tests/data/echo/chat/test (reported, never tuned on)
 *   mrpc       --mrpc FILE: a public paraphrase corpus in the MSR Paraphrase
 *              Corpus layout (msr_paraphrase_test.txt), #1 as a peer's
 *              message, #2 as the candidate
 * Each: accuracy, precision, recall, F1, false-positive rate. For the chat
 * halves also the borderline band: how many candidates the validator would
 * put to a judge, and the accuracy when the judge answers YES always (what
 * the daemon does without a judge), NO always, or with the label (a perfect
 * judge: the ceiling; a real model's quality is not measurable here).
 *
 * --misses lists the misclassified cases of labelled and chat-dev — never of
 * chat-test, which stays blind. --kinds prints recall / false positives per
 * kind for the same sets.
 *
 * Throughput: validator_validate() calls per second against a 50-message
 * window on one core, --runs runs (default 5) of --seconds each (default
 * 1), the median and the range.
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
	printf("%-10s n=%-4zu accuracy %.3f  precision %.3f  recall %.3f  F1 %.3f  FPR %.3f  "
	       "(tp %zu fp %zu tn %zu fn %zu)\n",
	       what, q->tp + q->fp + q->tn + q->fn, echo_quality_accuracy(q),
	       echo_quality_precision(q), echo_quality_recall(q), echo_quality_f1(q),
	       echo_quality_fpr(q), q->tp, q->fp, q->tn, q->fn);
}

static void per_kind(const struct echo_cases *all)
{
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
		echo_cases_evaluate_judge(&sub, ECHO_JUDGE_NONE, NULL, &q);
		if (label)
			printf("    %-24s echo      %3zu cases  recall %.3f\n", kinds[k],
			       sub.ncases, echo_quality_recall(&q));
		else
			printf("    %-24s not echo  %3zu cases  false positives %.3f\n", kinds[k],
			       sub.ncases, echo_quality_fpr(&q));
		free(sub.cases);
	}
}

static void band(const char *name, const struct echo_cases *c)
{
	static const struct {
		enum echo_judge_mode mode;
		const char *what;
	} judges[] = {{ECHO_JUDGE_YES, "judge says YES"},
	              {ECHO_JUDGE_NO, "judge says NO"},
	              {ECHO_JUDGE_ORACLE, "perfect judge"}};
	for (size_t j = 0; j < sizeof judges / sizeof judges[0]; j++) {
		struct echo_quality q;
		echo_cases_evaluate_judge(c, judges[j].mode, NULL, &q);
		if (j == 0)
			printf("    %s band: %zu of %zu candidates referred (%zu of them echoes)\n",
			       name, q.band, c->ncases, q.band_echo);
		printf("    %-16s accuracy %.3f  F1 %.3f  FPR %.3f\n", judges[j].what,
		       echo_quality_accuracy(&q), echo_quality_f1(&q), echo_quality_fpr(&q));
	}
}

/* The own-instructions check against every candidate of every set, with
 * the space-participation skill as the instructions: none of these chat
 * messages quotes or restates it, so every hit is a false positive. */
static void own_check(const char *src, struct echo_cases *all, size_t nsets)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/skills/space-participation/SKILL.md", src);
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("own instructions: %s not readable, skipped\n", path);
		return;
	}
	static char text[256 * 1024];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	const char *texts[] = {text};
	struct echo_own *own = echo_own_new(texts, 1);
	size_t total = 0, flagged = 0;
	for (size_t s = 0; s < nsets; s++) {
		for (size_t i = 0; i < all[s].ncases; i++) {
			struct validator_context ctx = {.connected_agents = 1, .own = own};
			struct validator_decision d;
			validator_validate(all[s].cases[i].candidate, &ctx, &d);
			total++;
			flagged += d.rule && strcmp(d.rule, "own_instructions") == 0;
			validator_decision_clear(&d);
		}
	}
	printf("own instructions (the space-participation skill): %zu of %zu candidates "
	       "flagged\n",
	       flagged, total);
	echo_own_free(own);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void throughput(const struct echo_cases *cases, int runs, double seconds)
{
	struct echo_window *w = echo_window_new(50);
	size_t pushed = 0;
	double t0 = now_s();
	for (size_t i = 0; pushed < 5000; i = (i + 1) % cases->nmsgs, pushed++)
		echo_window_push(w, cases->msgs[i].author, true, cases->msgs[i].text);
	double push_rate = (double)pushed / (now_s() - t0);
	struct validator_context ctx = {.window = w, .connected_agents = 3};
	double rate[32];
	if (runs < 1)
		runs = 1;
	if (runs > 32)
		runs = 32;
	size_t n = 0;
	for (int r = 0; r < runs; r++) {
		size_t k = 0;
		t0 = now_s();
		double t1 = t0;
		while (t1 - t0 < seconds) {
			for (int b = 0; b < 256; b++, k++, n++) {
				struct validator_decision d;
				validator_validate(cases->cases[n % cases->ncases].candidate, &ctx,
				                   &d);
				validator_decision_clear(&d);
			}
			t1 = now_s();
		}
		rate[r] = (double)k / (t1 - t0);
	}
	qsort(rate, (size_t)runs, sizeof rate[0], cmp_double);
	printf("throughput: median %.0f validations/s against a %zu-message window (%d runs of "
	       "%.1f s, range %.0f-%.0f)\n",
	       rate[runs / 2], echo_window_len(w), runs, seconds, rate[0], rate[runs - 1]);
	printf("window: %.0f pushes/s; memory bound %zu bytes for 50 messages\n", push_rate,
	       echo_window_max_bytes(50));
	echo_window_free(w);
}

int main(int argc, char **argv)
{
	const char *src = getenv("GA_SOURCE_DIR");
	const char *mrpc = NULL;
	bool misses = false, kinds = false;
	double seconds = 1.0;
	int runs = 5;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--misses") == 0)
			misses = true;
		else if (strcmp(argv[i], "--kinds") == 0)
			kinds = true;
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--mrpc") == 0 && i + 1 < argc)
			mrpc = argv[++i];
		else if (strcmp(argv[i], "--source") == 0 && i + 1 < argc)
			src = argv[++i];
		else {
			fprintf(stderr,
			        "usage: bench-echo [--misses] [--kinds] [--runs N] [--seconds S] "
			        "[--mrpc FILE] [--source DIR]\n");
			return 64;
		}
	}
	if (!src)
		src = GA_SOURCE_DIR;
	static const struct {
		const char *name, *dir;
		bool blind;
	} sets[] = {{"labelled", "tests/data/echo", false},
	            {"chat-dev", "tests/data/echo/chat/dev", false},
	            {"chat-test", "tests/data/echo/chat/test", true}};
	struct echo_cases all[4];
	const char *names[4];
	bool blind[4];
	size_t nsets = 0;
	char err[512];
	for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/%s", src, sets[s].dir);
		if (echo_cases_load_dir(dir, &all[nsets], err, sizeof err) != 0) {
			fprintf(stderr, "bench-echo: %s\n", err);
			return 1;
		}
		names[nsets] = sets[s].name;
		blind[nsets++] = sets[s].blind;
	}
	if (mrpc) {
		if (echo_cases_load_mrpc(mrpc, &all[nsets], err, sizeof err) != 0) {
			fprintf(stderr, "bench-echo: %s\n", err);
			return 1;
		}
		names[nsets] = "mrpc";
		blind[nsets++] = true;
	}
	for (size_t s = 0; s < nsets; s++) {
		size_t echoes = 0;
		for (size_t i = 0; i < all[s].ncases; i++)
			echoes += all[s].cases[i].echo;
		struct echo_quality q;
		echo_cases_evaluate_judge(&all[s], ECHO_JUDGE_NONE,
		                          misses && !blind[s] ? stdout : NULL, &q);
		report(names[s], &q);
		printf("    %zu echoes, %zu not\n", echoes, all[s].ncases - echoes);
		if (kinds && !blind[s])
			per_kind(&all[s]);
		if (strncmp(names[s], "chat", 4) == 0)
			band(names[s], &all[s]);
	}
	own_check(src, all, nsets);
	throughput(&all[0], runs, seconds);
	for (size_t s = 0; s < nsets; s++)
		echo_cases_free(&all[s]);
	echo_shutdown();
	return 0;
}
