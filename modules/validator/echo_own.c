/*
 * echo_own — a candidate against the agent's own instructions. Contract in
 * echo_own.h.
 */
#include "modules/validator/echo_own.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/phrase.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator_text.h"

struct own_clause {
	uint64_t *stems; /* sorted, unique */
	size_t n;
	char example[ECHO_OWN_EXAMPLE_BYTES + 1];
};

struct echo_own {
	struct own_clause *clauses;
	size_t nclauses;
	uint64_t *grams; /* sorted hashes of every run of ECHO_OWN_QUOTE_WORDS words */
	size_t ngrams;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static bool is_clause_end(char c)
{
	return c == '.' || c == ';' || c == ':' || c == '!' || c == '?' || c == '\n' || c == '(' ||
	       c == ')' || c == '"' || c == '`';
}

/* Word characters for quotes: ASCII letters and digits, the apostrophe
 * inside words, and every non-ASCII byte (the text is normalised). */
static bool is_word_byte(unsigned char c)
{
	return phrase_is_word_byte(c) || c >= 0x80 || c == '\'';
}

/* Calls fn(ud, start, len) for every clause of norm. */
static void each_clause(const char *norm, size_t len, void (*fn)(void *ud, const char *s, size_t n),
                        void *ud)
{
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && !is_clause_end(norm[i]))
			continue;
		if (i > start)
			fn(ud, norm + start, i - start);
		start = i + 1;
	}
}

/* Hashes of the words of norm, in order, into *out (grown; *n, *cap). */
static void word_hashes(const char *norm, size_t len, uint64_t **out, size_t *n, size_t *cap)
{
	size_t i = 0;
	while (i < len) {
		while (i < len && !is_word_byte((unsigned char)norm[i]))
			i++;
		size_t s = i;
		while (i < len && is_word_byte((unsigned char)norm[i]))
			i++;
		if (i == s)
			continue;
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 256;
			*out = xreallocarray(*out, *cap, sizeof **out);
		}
		(*out)[(*n)++] = echo_word_id(norm + s, i - s);
	}
}

static uint64_t gram_hash(const uint64_t *w)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (size_t k = 0; k < ECHO_OWN_QUOTE_WORDS; k++)
		h = (h ^ w[k]) * 0x100000001b3ull;
	return h;
}

struct build {
	struct echo_own *o;
	size_t cap;
};

static void add_clause(void *ud, const char *s, size_t n)
{
	struct build *b = ud;
	struct echo_own *o = b->o;
	if (o->nclauses >= ECHO_OWN_MAX_CLAUSES)
		return;
	struct echo_doc d;
	echo_doc_init_content(&d, s, n);
	if (d.nuniq >= ECHO_OWN_CLAUSE_MIN_STEMS) {
		if (o->nclauses == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 64;
			o->clauses = xreallocarray(o->clauses, b->cap, sizeof *o->clauses);
		}
		struct own_clause *c = &o->clauses[o->nclauses++];
		c->stems = xcalloc(d.nuniq, sizeof *c->stems);
		memcpy(c->stems, d.uniq, d.nuniq * sizeof *c->stems);
		c->n = d.nuniq;
		while (n > 0 && (*s == ' ' || *s == '-' || *s == ','))
			s++, n--;
		size_t k = utf8_cut(s, n, ECHO_OWN_EXAMPLE_BYTES);
		memcpy(c->example, s, k);
		c->example[k] = '\0';
	}
	echo_doc_clear(&d);
}

struct echo_own *echo_own_new(const char *const *texts, size_t n)
{
	struct echo_own *o = xcalloc(1, sizeof *o);
	struct build b = {o, 0};
	uint64_t *words = NULL;
	size_t nwords = 0, capw = 0, budget = ECHO_OWN_MAX_BYTES;
	for (size_t t = 0; t < n && budget > 0; t++) {
		if (!texts[t])
			continue;
		size_t len = strlen(texts[t]);
		if (len > budget)
			len = budget;
		budget -= len;
		size_t nlen;
		char *norm = validator_text_normalize(texts[t], len, &nlen);
		each_clause(norm, nlen, add_clause, &b);
		/* Quotes never span two texts. The grams overwrite the word
		 * hashes in place: gram k is written at index ≤ k, behind the
		 * words still to be read. */
		size_t first = nwords;
		word_hashes(norm, nlen, &words, &nwords, &capw);
		for (size_t i = first; i + ECHO_OWN_QUOTE_WORDS <= nwords; i++)
			words[o->ngrams++] = gram_hash(words + i);
		nwords = o->ngrams;
		free(norm);
	}
	o->grams = words;
	if (o->ngrams)
		qsort(o->grams, o->ngrams, sizeof *o->grams, cmp_u64);
	if (o->nclauses == 0 && o->ngrams == 0) {
		echo_own_free(o);
		return NULL;
	}
	return o;
}

void echo_own_free(struct echo_own *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nclauses; i++)
		free(o->clauses[i].stems);
	free(o->clauses);
	free(o->grams);
	free(o);
}

static size_t shared(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	size_t i = 0, j = 0, k = 0;
	while (i < na && j < nb) {
		if (a[i] < b[j])
			i++;
		else if (a[i] > b[j])
			j++;
		else
			k++, i++, j++;
	}
	return k;
}

struct match {
	const struct echo_own *o;
	struct echo_own_hit *hit;
};

static void match_clause(void *ud, const char *s, size_t n)
{
	struct match *m = ud;
	struct echo_doc d;
	echo_doc_init_content(&d, s, n);
	if (d.nuniq >= ECHO_OWN_CLAUSE_MIN_STEMS) {
		m->hit->clauses++;
		for (size_t i = 0; i < m->o->nclauses; i++) {
			const struct own_clause *c = &m->o->clauses[i];
			size_t k = shared(d.uniq, d.nuniq, c->stems, c->n);
			if ((double)k >= ECHO_OWN_CONTAINMENT * (double)d.nuniq) {
				if (m->hit->matched++ == 0)
					snprintf(m->hit->example, sizeof m->hit->example, "%s",
					         c->example);
				break;
			}
		}
	}
	echo_doc_clear(&d);
}

bool echo_own_match(const struct echo_own *o, const char *norm, size_t len,
                    struct echo_own_hit *hit)
{
	struct echo_own_hit local;
	if (!hit)
		hit = &local;
	memset(hit, 0, sizeof *hit);
	if (!o || !norm)
		return false;
	uint64_t *words = NULL;
	size_t nwords = 0, cap = 0, run = 0;
	word_hashes(norm, len, &words, &nwords, &cap);
	for (size_t i = 0; i + ECHO_OWN_QUOTE_WORDS <= nwords; i++) {
		uint64_t g = gram_hash(words + i);
		if (o->ngrams && bsearch(&g, o->grams, o->ngrams, sizeof g, cmp_u64)) {
			run = run ? run + 1 : ECHO_OWN_QUOTE_WORDS;
			if (run > hit->quote_words)
				hit->quote_words = run;
		} else {
			run = 0;
		}
	}
	free(words);
	struct match m = {o, hit};
	each_clause(norm, len, match_clause, &m);
	return hit->quote_words > 0 ||
	       (hit->matched >= ECHO_OWN_MIN_CLAUSES && 2 * hit->matched >= hit->clauses);
}
