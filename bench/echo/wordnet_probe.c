/*
 * wordnet_probe — does WordNet pay for itself as the echo detector's synonym
 * source? A measurement, not part of any binary: build it by hand where
 * Debian's wordnet-dev and wordnet-base are installed:
 *
 *   cc -O2 -o /tmp/wordnet_probe bench/echo/wordnet_probe.c -lwordnet
 *   /tmp/wordnet_probe modules/validator/echo_synonyms.def < words.txt > wordnet.def
 *
 * It prints to stderr:
 *   - the cost of opening WordNet (wninit) and of one lookup (the library
 *     binary-searches the index files on disk for every word), time and RSS;
 *   - the cost of the alternative, loading every lemma's first sense into
 *     memory once (what lookups at 20,000 validations/s would need);
 *   - how many of the curated table's pairs (VSYN lines of the .def given)
 *     WordNet knows as synonyms (sharing a synset), and how many a
 *     first-sense mapping would merge.
 * and writes to stdout a VSYN table for the words read on stdin (one per
 * line): each word mapped to the first lemma of its most frequent sense, the
 * table a WordNet-backed detector would use on that vocabulary. docs/echo.md
 * has the figures and what was decided.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wn.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

/* First sense's first lemma of word in pos, or NULL. Caller frees. */
static char *first_lemma(const char *word, int pos)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", word);
	char *base = morphstr(buf, pos);
	IndexPtr idx = getindex(base ? base : buf, pos);
	if (!idx || idx->off_cnt == 0) {
		if (idx)
			free_index(idx);
		return NULL;
	}
	SynsetPtr s = read_synset(pos, idx->offset[0], "");
	char *out = s && s->wcount > 0 ? strdup(s->words[0]) : NULL;
	if (s)
		free_synset(s);
	free_index(idx);
	return out;
}

/* Whether a and b share a synset in any part of speech. */
static int share_synset(const char *a, const char *b)
{
	for (int pos = 1; pos <= NUMPARTS; pos++) {
		char ba[256], bb[256];
		snprintf(ba, sizeof ba, "%s", a);
		snprintf(bb, sizeof bb, "%s", b);
		char *ma = morphstr(ba, pos);
		IndexPtr ia = getindex(ma ? ma : ba, pos);
		char *mb = morphstr(bb, pos);
		IndexPtr ib = getindex(mb ? mb : bb, pos);
		int hit = 0;
		for (int i = 0; ia && ib && i < ia->off_cnt && !hit; i++)
			for (int j = 0; j < ib->off_cnt && !hit; j++)
				hit = ia->offset[i] == ib->offset[j];
		if (ia)
			free_index(ia);
		if (ib)
			free_index(ib);
		if (hit)
			return 1;
	}
	return 0;
}

/* Every lemma of every index file into memory with its first sense: the
 * in-memory form a fast detector would need. Returns the entries read. */
static void **held;

static long load_all(void)
{
	static const char *const files[] = {"index.noun", "index.verb", "index.adj", "index.adv"};
	long n = 0;
	for (size_t f = 0; f < 4; f++) {
		char path[512];
		snprintf(path, sizeof path, "%s/%s",
		         getenv("WNSEARCHDIR") ? getenv("WNSEARCHDIR") : "/usr/share/wordnet",
		         files[f]);
		FILE *fp = fopen(path, "r");
		char line[8192];
		while (fp && fgets(line, sizeof line, fp)) {
			if (line[0] == ' ')
				continue; /* license header */
			char *sp = strchr(line, ' ');
			if (!sp)
				continue;
			/* lemma and first synset offset: the map a detector
			 * would hold (never freed: measured as held) */
			struct entry {
				char *lemma;
				long first;
			} *e = malloc(sizeof *e);
			e->lemma = strndup(line, (size_t)(sp - line));
			char *off = strrchr(line, ' ');
			e->first = off ? atol(off) : 0;
			held = realloc(held, (size_t)(n + 1) * sizeof *held);
			held[n++] = e;
		}
		if (fp)
			fclose(fp);
	}
	return n;
}

int main(int argc, char **argv)
{
	long r0 = rss_kb();
	double t0 = now_ms();
	if (wninit() != 0) {
		fprintf(stderr, "wordnet_probe: wninit failed (is wordnet-base installed?)\n");
		return 1;
	}
	double t1 = now_ms();
	long r1 = rss_kb();
	fprintf(stderr, "wninit: %.2f ms, RSS %+ld kB\n", t1 - t0, r1 - r0);

	/* Lookup cost: first senses of a few common words, cold then warm. */
	static const char *const probe[] = {"deploy", "cache",   "login",  "throttle",  "limit",
	                                    "ship",   "release", "minute", "migration", "review"};
	t0 = now_ms();
	int rounds = 200;
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
			free(first_lemma(probe[i], NOUN));
			free(first_lemma(probe[i], VERB));
		}
	t1 = now_ms();
	fprintf(stderr, "lookup (morph + index + synset, noun and verb): %.1f us per word\n",
	        (t1 - t0) * 1e3 / (rounds * (double)(sizeof probe / sizeof probe[0])));
	long r2 = rss_kb();
	t0 = now_ms();
	long entries = load_all();
	t1 = now_ms();
	fprintf(stderr, "all lemmas in memory: %ld entries, %.1f ms, RSS %+ld kB\n", entries,
	        t1 - t0, rss_kb() - r2);

	/* Coverage of the curated pairs. */
	if (argc > 1) {
		FILE *f = fopen(argv[1], "r");
		char line[1024];
		int pairs = 0, known = 0, merged = 0;
		while (f && fgets(line, sizeof line, f)) {
			for (char *p = line; (p = strstr(p, "VSYN(\"")); p++) {
				char a[128], b[128];
				if (sscanf(p, "VSYN(\"%127[^\"]\", \"%127[^\"]\")", a, b) != 2)
					continue;
				if (isdigit((unsigned char)b[0]))
					continue;
				pairs++;
				known += share_synset(a, b);
				char *la = first_lemma(a, NOUN), *lb = first_lemma(b, NOUN);
				char *va = first_lemma(a, VERB), *vb = first_lemma(b, VERB);
				merged += (la && lb && strcmp(la, lb) == 0) ||
				          (va && vb && strcmp(va, vb) == 0);
				free(la);
				free(lb);
				free(va);
				free(vb);
			}
		}
		if (f)
			fclose(f);
		fprintf(stderr,
		        "curated pairs: %d; WordNet synonyms (a shared synset): %d; merged by a "
		        "first-sense mapping: %d\n",
		        pairs, known, merged);
	}

	/* The table for the vocabulary on stdin. */
	char w[256];
	int mapped = 0, words = 0;
	while (scanf("%255s", w) == 1) {
		words++;
		for (int pos = NOUN; pos <= VERB; pos++) {
			char *l = first_lemma(w, pos);
			if (l && strcmp(l, w) != 0 && !strchr(l, '_')) {
				printf("VSYN(\"%s\", \"%s\")\n", w, l);
				mapped++;
				free(l);
				break;
			}
			free(l);
		}
	}
	fprintf(stderr, "vocabulary: %d words, %d mapped to another lemma\n", words, mapped);
	return 0;
}
