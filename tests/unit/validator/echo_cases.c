/* echo_cases — see echo_cases.h. */
#include "echo_cases.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "modules/validator/validator.h"
#include "modules/validator/validator_text.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 &&
	       (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

/* "name: text" → author name if the prefix is one lowercase word. */
static void split_author(char *s, char **author, char **text)
{
	char *colon = strchr(s, ':');
	*author = "";
	*text = s;
	if (!colon || colon == s || colon - s > 32 || colon[1] != ' ')
		return;
	for (char *p = s; p < colon; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_'))
			return;
	*colon = '\0';
	*author = s;
	*text = trim(colon + 1);
}

static int load_file(const char *dir, const char *name, struct echo_cases *c, size_t *cap_m,
                     size_t *cap_c, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "cannot open %s", path);
		return -1;
	}
	char line[ECHO_CASES_LINE_MAX + 2];
	size_t lineno = 0, thread_first = c->nmsgs;
	int rc = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		size_t ll = strlen(line);
		if (ll > ECHO_CASES_LINE_MAX) {
			snprintf(err, errlen, "%s:%zu: line too long", path, lineno);
			rc = -1;
			break;
		}
		char *s = trim(line);
		if (!*s || (s[0] == '#' && s[1] != '#'))
			continue;
		if (s[0] == '#' && s[1] == '#') {
			thread_first = c->nmsgs;
			continue;
		}
		if (c->nmsgs >= ECHO_CASES_MAX || c->ncases >= ECHO_CASES_MAX) {
			snprintf(err, errlen, "%s:%zu: more than %d records", path, lineno,
			         ECHO_CASES_MAX);
			rc = -1;
			break;
		}
		if (s[0] == '>' || s[0] == '!' || s[0] == '=') {
			char *author, *text;
			split_author(trim(s + 1), &author, &text);
			if (c->nmsgs == *cap_m) {
				*cap_m = *cap_m ? *cap_m * 2 : 256;
				c->msgs = xreallocarray(c->msgs, *cap_m, sizeof *c->msgs);
			}
			c->msgs[c->nmsgs++] = (struct echo_case_msg){xstrdup(author), s[0] != '!',
			                                             s[0] == '=', xstrdup(text)};
			continue;
		}
		if (s[0] == '+' || s[0] == '-') {
			char *bar = strchr(s, '|');
			if (!bar) {
				snprintf(err, errlen, "%s:%zu: case needs 'kind | candidate'", path,
				         lineno);
				rc = -1;
				break;
			}
			*bar = '\0';
			if (c->ncases == *cap_c) {
				*cap_c = *cap_c ? *cap_c * 2 : 256;
				c->cases = xreallocarray(c->cases, *cap_c, sizeof *c->cases);
			}
			struct echo_case *k = &c->cases[c->ncases++];
			memset(k, 0, sizeof *k);
			snprintf(k->id, sizeof k->id, "%s:%zu", name, lineno);
			k->echo = s[0] == '+';
			snprintf(k->kind, sizeof k->kind, "%s", trim(s + 1));
			k->candidate = xstrdup(trim(bar + 1));
			k->first = thread_first;
			k->nmsg = c->nmsgs - thread_first;
			continue;
		}
		snprintf(err, errlen, "%s:%zu: unknown record '%c'", path, lineno, s[0]);
		rc = -1;
		break;
	}
	fclose(f);
	return rc;
}

int echo_cases_load_dir(const char *dir, struct echo_cases *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(err, errlen, "cannot open directory %s", dir);
		return -1;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l > 6 && strcmp(de->d_name + l - 6, ".cases") == 0) {
			names = xreallocarray(names, n + 1, sizeof *names);
			names[n++] = xstrdup(de->d_name);
		}
	}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	size_t cap_m = 0, cap_c = 0;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = load_file(dir, names[i], out, &cap_m, &cap_c, err, errlen);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (rc == 0 && out->ncases == 0) {
		snprintf(err, errlen, "no cases found in %s", dir);
		rc = -1;
	}
	if (rc != 0)
		echo_cases_free(out);
	return rc;
}

int echo_cases_load_mrpc(const char *path, struct echo_cases *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "cannot open %s", path);
		return -1;
	}
	char line[ECHO_CASES_LINE_MAX + 2];
	size_t lineno = 0, cap = 0;
	int rc = 0;
	while (rc == 0 && fgets(line, sizeof line, f)) {
		lineno++;
		char *s = trim(line);
		if (lineno == 1 || !*s)
			continue; /* the header */
		char *field[5];
		size_t nf = 0;
		for (char *p = s; nf < 5; nf++) {
			field[nf] = p;
			char *tab = strchr(p, '\t');
			if (!tab) {
				nf++;
				break;
			}
			*tab = '\0';
			p = tab + 1;
		}
		if (nf != 5 || (field[0][0] != '0' && field[0][0] != '1') || field[0][1]) {
			snprintf(
			        err, errlen,
			        "%s:%zu: expected Quality (0/1), two ids and two strings separated "
			        "by tabs",
			        path, lineno);
			rc = -1;
			break;
		}
		if (out->ncases >= ECHO_CASES_MAX) {
			snprintf(err, errlen, "%s:%zu: more than %d pairs", path, lineno,
			         ECHO_CASES_MAX);
			rc = -1;
			break;
		}
		if (out->ncases == cap) {
			cap = cap ? cap * 2 : 1024;
			out->cases = xreallocarray(out->cases, cap, sizeof *out->cases);
			out->msgs = xreallocarray(out->msgs, cap, sizeof *out->msgs);
		}
		out->msgs[out->nmsgs] =
		        (struct echo_case_msg){xstrdup("peer"), true, false, xstrdup(field[3])};
		struct echo_case *k = &out->cases[out->ncases++];
		memset(k, 0, sizeof *k);
		snprintf(k->id, sizeof k->id, "mrpc:%zu", lineno);
		k->echo = field[0][0] == '1';
		snprintf(k->kind, sizeof k->kind, "%s", k->echo ? "paraphrase" : "different");
		k->candidate = xstrdup(field[4]);
		k->first = out->nmsgs++;
		k->nmsg = 1;
	}
	fclose(f);
	if (rc == 0 && out->ncases == 0) {
		snprintf(err, errlen, "no pairs in %s", path);
		rc = -1;
	}
	if (rc != 0)
		echo_cases_free(out);
	return rc;
}

void echo_cases_free(struct echo_cases *c)
{
	for (size_t i = 0; i < c->nmsgs; i++) {
		free(c->msgs[i].author);
		free(c->msgs[i].text);
	}
	for (size_t i = 0; i < c->ncases; i++)
		free(c->cases[i].candidate);
	free(c->msgs);
	free(c->cases);
	memset(c, 0, sizeof *c);
}

bool echo_cases_is_echo_rule(const char *rule)
{
	return rule && (strcmp(rule, "semantic_echo") == 0 || strcmp(rule, "echo_opener") == 0 ||
	                strcmp(rule, "semantic_echo_judge") == 0);
}

struct judge_state {
	enum echo_judge_mode mode;
	bool label;
	bool asked;
};

static void judge_ask(void *ud, const char *candidate, const char *const *window, size_t n,
                      void (*done)(void *done_ud, int verdict, const char *reason), void *done_ud)
{
	(void)candidate;
	(void)window;
	(void)n;
	struct judge_state *j = ud;
	j->asked = true;
	int v = j->mode == ECHO_JUDGE_YES ? 1 : j->mode == ECHO_JUDGE_NO ? 0 : j->label;
	done(done_ud, v, "bench judge");
}

static void judge_done(void *ud, int verdict, const char *reason)
{
	(void)reason;
	*(int *)ud = verdict;
}

static void tally(struct echo_quality *q, bool said, bool label)
{
	if (said && label)
		q->tp++;
	else if (said)
		q->fp++;
	else if (label)
		q->fn++;
	else
		q->tn++;
}

static void print_case(FILE *misses, const struct echo_case *k, bool said, const char *rule,
                       const struct echo_result *r)
{
	if (!misses || (said == k->echo && !getenv("ECHO_CASES_ALL")))
		return;
	fprintf(misses,
	        "%s %s %-22s %-18s %-30s pair=%.3f dice=%.3f cos=%.3f nov=%.3f band=%d | %s\n",
	        said == k->echo ? (said ? "TP" : "TN")
	        : said          ? "FP"
	                        : "FN",
	        k->id, k->kind, rule ? rule : "-", r->strategy_text, r->pair, r->dice, r->cosine,
	        r->novelty, r->judge_band, k->candidate);
}

static void window_of(const struct echo_cases *c, const struct echo_case *k, struct echo_window *w)
{
	echo_window_clear(w);
	for (size_t m = k->first; m < k->first + k->nmsg; m++)
		echo_window_push(w, c->msgs[m].author, c->msgs[m].agent, c->msgs[m].text);
}

void echo_cases_evaluate_judge(const struct echo_cases *c, enum echo_judge_mode judge, FILE *misses,
                               struct echo_quality *q)
{
	memset(q, 0, sizeof *q);
	struct echo_window *w = echo_window_new(50);
	for (size_t i = 0; i < c->ncases; i++) {
		const struct echo_case *k = &c->cases[i];
		window_of(c, k, w);
		struct judge_state js = {judge, k->echo, false};
		struct validator_judge vj = {judge_ask, &js};
		struct validator_context ctx = {
		        .window = w, .connected_agents = 1, .is_action_owner = true};
		if (judge != ECHO_JUDGE_NONE)
			ctx.judge = &vj;
		struct validator_decision d;
		if (validator_validate(k->candidate, &ctx, &d) == VALIDATOR_REFER) {
			q->band++;
			q->band_echo += k->echo;
			int verdict = -1;
			validator_refer(&ctx, k->candidate, judge_done, &verdict);
			validator_resume(k->candidate, &ctx, verdict, "bench judge", &d);
		}
		bool said = d.verdict == VALIDATOR_REJECT && echo_cases_is_echo_rule(d.rule);
		tally(q, said, k->echo);
		print_case(misses, k, said, d.rule, &d.echo);
		validator_decision_clear(&d);
	}
	echo_window_free(w);
}

void echo_cases_evaluate(const struct echo_cases *c, bool validator_level, FILE *misses,
                         struct echo_quality *q)
{
	if (validator_level) {
		echo_cases_evaluate_judge(c, ECHO_JUDGE_NONE, misses, q);
		return;
	}
	memset(q, 0, sizeof *q);
	struct echo_window *w = echo_window_new(50);
	for (size_t i = 0; i < c->ncases; i++) {
		const struct echo_case *k = &c->cases[i];
		window_of(c, k, w);
		struct echo_result r;
		size_t n;
		char *norm = validator_text_normalize(k->candidate, strlen(k->candidate), &n);
		echo_window_evaluate(w, norm, n, NULL, &r);
		free(norm);
		/* No judge here: the validator rejects the band too. */
		bool said = r.echo || r.judge_band;
		tally(q, said, k->echo);
		print_case(misses, k, said, NULL, &r);
	}
	echo_window_free(w);
}

double echo_quality_accuracy(const struct echo_quality *q)
{
	size_t n = q->tp + q->fp + q->tn + q->fn;
	return n ? (double)(q->tp + q->tn) / (double)n : 0;
}

double echo_quality_recall(const struct echo_quality *q)
{
	return q->tp + q->fn ? (double)q->tp / (double)(q->tp + q->fn) : 0;
}

double echo_quality_precision(const struct echo_quality *q)
{
	return q->tp + q->fp ? (double)q->tp / (double)(q->tp + q->fp) : 0;
}

double echo_quality_fpr(const struct echo_quality *q)
{
	return q->fp + q->tn ? (double)q->fp / (double)(q->fp + q->tn) : 0;
}

double echo_quality_f1(const struct echo_quality *q)
{
	double p = echo_quality_precision(q), r = echo_quality_recall(q);
	return p + r > 0 ? 2 * p * r / (p + r) : 0;
}
