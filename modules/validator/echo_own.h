/*
 * echo_own — does a candidate repeat the agent's own instructions?
 *
 * A model that paraphrases whatever it was shown last can put its decision
 * prompt into the room ("Right, so to restate: a commitment; no echo
 * openers; no deference when the action is yours; …"). The validator's
 * own_instructions check rejects such a candidate; this module prepares the
 * instruction texts (the skill's prompt and rules, tool descriptions) once
 * and matches candidates against them.
 *
 * A candidate matches when it
 *   - quotes them: a run of ECHO_OWN_QUOTE_WORDS words, stop words included,
 *     that the instructions contain word for word; or
 *   - restates them clause by clause: at least ECHO_OWN_MIN_CLAUSES of its
 *     clauses (split at . ; : ! ? and line ends), and at least half of the
 *     clauses that have ECHO_OWN_CLAUSE_MIN_STEMS content stems, each have
 *     ECHO_OWN_CONTAINMENT of their stems in one instruction clause.
 * A message that talks about the same subjects in its own sentences shares
 * words with a clause here and there, not clause after clause.
 *
 * Memory: bounded by ECHO_OWN_MAX_BYTES of instruction text (the rest is
 * ignored), ECHO_OWN_MAX_CLAUSES clauses of at most ECHO_DOC_MAX_TOKENS
 * stems, and one 64-bit hash per word. echo_own_free(NULL) is fine.
 * Single-threaded like echo.h.
 */
#ifndef GA_MODULES_VALIDATOR_ECHO_OWN_H
#define GA_MODULES_VALIDATOR_ECHO_OWN_H

#include <stdbool.h>
#include <stddef.h>

#define ECHO_OWN_MAX_BYTES        (256 * 1024) /* instruction text read, all texts together */
#define ECHO_OWN_MAX_CLAUSES      4096
#define ECHO_OWN_QUOTE_WORDS      7    /* a run this long, word for word, is a quote */
#define ECHO_OWN_CLAUSE_MIN_STEMS 2    /* shorter clauses ("a commitment") are not judged */
#define ECHO_OWN_CONTAINMENT      0.75 /* share of a clause's stems found in one instruction clause */
#define ECHO_OWN_MIN_CLAUSES      2    /* restated clauses needed */
#define ECHO_OWN_EXAMPLE_BYTES    80   /* of an instruction clause, for the reason */

struct echo_own;

struct echo_own_hit {
	size_t quote_words; /* longest run found word for word (0 if shorter than the bound) */
	size_t clauses;     /* candidate clauses judged */
	size_t matched;     /* of them, restating an instruction clause */
	char example[ECHO_OWN_EXAMPLE_BYTES + 1]; /* the first instruction clause restated */
};

/* Prepares texts[0..n) (NULL entries skipped; any bytes, invalid UTF-8
 * tolerated). Returns NULL when nothing in them can be matched. Caller
 * frees with echo_own_free. */
struct echo_own *echo_own_new(const char *const *texts, size_t n);
void echo_own_free(struct echo_own *o);

/* Matches text (normalised with validator_text_normalize) against o.
 * Returns true on a quote or a clause-by-clause restatement; fills hit
 * (may be NULL) either way. */
bool echo_own_match(const struct echo_own *o, const char *norm, size_t len,
                    struct echo_own_hit *hit);

#endif
