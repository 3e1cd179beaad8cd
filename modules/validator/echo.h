/*
 * echo — semantic echo detection (spec space-validation.md §10).
 *
 * An "echo" is a message that restates what an agent in the conversation
 * already said. The detector is an ensemble of lexical scores with the
 * shape and thresholds of §10, and §16.18–21 applied:
 *
 *   tokens   NFKC + case fold; Unicode-aware words (letters, digits, marks,
 *            '_'); contractions split ("I'll" → i + ll, "don't" → do + not),
 *            hyphens split; stop words, agreement fillers and attribution
 *            ("told", "according to") dropped; the negation kept as the
 *            token "not" ("dont", "isnt" too); URLs kept whole as one token;
 *            names of the window's authors dropped; figures read as one
 *            token ("10k" = "10,000" = "ten thousand" → #10000; "$275m" =
 *            "$275 million", "2bn", "7 per cent" = "7 percent", "one" says
 *            1; "five minutes" = "300 seconds" → dur:300).
 *   stems    British spellings read as American ("prioritise", "colour",
 *            "centre"), Snowball English (libstemmer), then the synonym
 *            table (echo_synonyms.def: word pairs and two-word entries).
 *   scores   LCS Dice over the token lists; TF-IDF cosine (binary TF,
 *            smoothed IDF over [candidate] + pool); pair = 0.4·dice +
 *            0.6·cosine; concept novelty = share of the candidate's unique
 *            stems absent from the pool.
 *   decision (first that applies)
 *            fewer than 3 tokens                 → not echo ("none")
 *            a meaning change: a link or code span no pool message has
 *            ("new-artifact"), a figure no window message gave, host's
 *            included, while one of its kind (a date, or not) they gave
 *            is left out: a changed figure ("new-number"; the same
 *            quantity rounder, hedged or converted is no new figure), a
 *            task given to a member who had none
 *            ("new-owner"), "… too" closing a clause (not "too slow")
 *            with ≥ 30 % new stems ("transfer")
 *                                                → not echo, not band
 *            SimHash distance ≤ 3 to a pairwise message of the same
 *            polarity whose stems cover the candidate's
 *                                                → echo ("simhash")
 *            novelty < Tn, not a question, no new negation
 *                                                → echo ("concept-novelty")
 *            pair ≥ Tp with a message of the same polarity ("not", "stop",
 *            "without" … count) and novelty ≤ 0.5 → echo ("ensemble"); a
 *            question is compared with questions (with a statement only
 *            when pair ≥ 0.80)
 *            a figure nobody gave beside every figure given ("added-
 *            number") is new content for the scores above; otherwise
 *                                                → not echo, not band
 *            otherwise                           → not echo; judge_band set
 *            when ≥ 2 pairwise messages and pair ≥ 0.35 with novelty <
 *            0.40 (the spec's band), pair ≥ 0.40 with novelty ≤ 0.5, or
 *            pair ≥ 0.30 with novelty ≤ 0.6 (calibrated on the chat set's
 *            dev half), or the candidate names a speaker of the window,
 *            gives nobody a task and has novelty ≤ 0.6 (a summary, "Ada
 *            proposes …"); a denial is out of the band (a negation nobody
 *            used or a closest message of the other polarity) unless pair
 *            ≥ 0.40 and it adds more than its judgement. The validator
 *            refers the band to the judge, or without one rejects it.
 *   The constants and why are in echo.c; docs/echo.md has the figures.
 *
 * Memory: an echo_doc owns two arrays of at most ECHO_DOC_MAX_TOKENS ids.
 * An echo_window holds at most `cap` (≤ ECHO_WINDOW_MAX) entries; each keeps
 * its text truncated to ECHO_TEXT_MAX_BYTES and its author to
 * ECHO_AUTHOR_MAX_BYTES; echo_window_max_bytes() states the bound.
 * Pushing beyond cap drops the oldest entry.
 *
 * Single-threaded: the stemmer and the word tables are process globals,
 * created on first use; echo_shutdown() frees them.
 */
#ifndef GA_MODULES_VALIDATOR_ECHO_H
#define GA_MODULES_VALIDATOR_ECHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ECHO_DOC_MAX_TOKENS    512  /* tokens past this are ignored */
#define ECHO_DOC_MAX_ARTIFACTS 8    /* links/code spans remembered per message */
#define ECHO_DOC_MAX_NUMBERS   16   /* numbers and durations remembered per message */
#define ECHO_DOC_MAX_ASSIGNED  8    /* names given a task, remembered per message */
#define ECHO_TEXT_MAX_BYTES    4096 /* stored copy of a window message (judge input) */
#define ECHO_AUTHOR_MAX_BYTES  64
#define ECHO_WINDOW_MAX        64 /* largest window capacity accepted */
#define ECHO_RECENT_ENTRIES    20 /* §9.1: comparison sets come from the last 20 entries */
#define ECHO_PAIRWISE_MAX      10 /* §9.1: recentAgent = last 10 agent entries */

/* Production thresholds (§9.1). */
#define ECHO_PAIR_THRESHOLD    0.52
#define ECHO_NOVELTY_THRESHOLD 0.25
#define ECHO_JUDGE_SCORE_MIN   0.35
#define ECHO_JUDGE_NOVELTY_MAX 0.40
#define ECHO_BAND2_SCORE_MIN   0.40 /* second band rectangle, novelty ≤ 0.5 */

struct echo_params {
	double pair_threshold;    /* Tp */
	double novelty_threshold; /* Tn */
};

/* echo_doc.num_info bits */
#define ECHO_NUM_DURATION 0x01u /* a "dur:" figure */
#define ECHO_NUM_HEDGED   0x02u /* "about", "around", "nearly", "~" stands before it */
#define ECHO_NUM_MEASURE  0x04u /* money, a percentage, a measured amount ("14.7 pounds") */
#define ECHO_NUM_FINE     0x08u /* written with two decimals or more ("1.25") */
#define ECHO_NUM_DATE     0x10u /* a year (four digits, 1900-2099) or a day after its month */
#define ECHO_NUM_MASS     0x20u /* a mass: num_val, num_unit in kilograms */
#define ECHO_NUM_LENGTH   0x40u /* a length: num_val, num_unit in metres */
#define ECHO_NUM_IMPERIAL 0x80u /* a mass or length written in pounds, miles, feet */

/* A tokenised message. */
struct echo_doc {
	uint64_t *tok; /* stem ids in text order */
	size_t ntok;
	uint64_t *uniq; /* sorted unique stem ids */
	size_t nuniq;
	uint64_t art[ECHO_DOC_MAX_ARTIFACTS]; /* link / code-span ids */
	size_t nart;
	uint64_t simhash;
	uint64_t num[ECHO_DOC_MAX_NUMBERS]; /* number / duration ids ("#40000", "dur:300") */
	size_t nnum;
	uint64_t num_bare[ECHO_DOC_MAX_NUMBERS]; /* a duration's figure without its unit, else 0 */
	uint32_t num_said; /* bit i: num[i] only counts as said (a duration's bare
	                    * figure, a small count, a unit without a figure),
	                    * it is no figure the message gives */
	/* The figure num[i] as a quantity, to tell the same one written
	 * rounder ("about 1,200" / "1,187", "$3.2 billion" / "$3.17 billion"). */
	double num_val[ECHO_DOC_MAX_NUMBERS];     /* its value (seconds for a duration) */
	double num_unit[ECHO_DOC_MAX_NUMBERS];    /* the step it is written to: 0.01 for
	                                           * "3.17", 100 for "about 1,200", 1 for
	                                           * a plain "1,200" (an exact count) */
	uint8_t num_info[ECHO_DOC_MAX_NUMBERS];   /* ECHO_NUM_* bits */
	float num_round[ECHO_DOC_MAX_NUMBERS];    /* a mass or length: the step its
	                                           * trailing zeros round it to, in
	                                           * base units ("260 pounds": 10 lb) */
	uint64_t assigned[ECHO_DOC_MAX_ASSIGNED]; /* names given a task ("Bob takes …") */
	size_t nassigned;
	bool self_assign; /* first person taking something on ("I'll", "I can", "mine") */
	bool additive;    /* "too", "as well", "either", "likewise": the point moved elsewhere */
	bool question;    /* ends with '?' */
	bool negated;     /* has the negation token ("not", "no", "n't", …) */
	bool negative;    /* says what must not happen ("stop", "prevent", "avoid", "without") */
	size_t mentions;  /* words dropped because they name a window author */
};

enum echo_strategy {
	ECHO_STRATEGY_NONE,
	ECHO_STRATEGY_NEW_ARTIFACT,
	ECHO_STRATEGY_SIMHASH,
	ECHO_STRATEGY_CONCEPT_NOVELTY,
	ECHO_STRATEGY_ENSEMBLE,
};

struct echo_result {
	bool echo;
	enum echo_strategy strategy;
	char strategy_text[64]; /* "ensemble(lcs=0.80,tfidf=0.67)", "concept-novelty(20% new)" */
	double score; /* the echo score (1 − novelty for concept novelty, else best pair) */
	double pair;  /* best pair score */
	double dice, cosine; /* of the best pair */
	double novelty;
	int matched;          /* index into the pairwise set, -1 if none */
	int simhash_distance; /* smallest distance to a pairwise message, 64 if none */
	bool question;
	bool new_artifact;
	bool judge_band;   /* borderline: a model judge may decide */
	bool attributed;   /* names a window author and adds little: a summary */
	bool new_number;   /* a figure nobody in the window said, in place of one said */
	bool added_number; /* a figure nobody said, beside every figure said: new
	                    * content for the scores, out of the band */
	bool new_owner;    /* gives a task to a member who had none */
	bool transfer;     /* "… too": the same point about something new */
	bool polarity;     /* the closest message says the opposite (one negates) */
	size_t candidate_tokens;
	size_t pairwise_n, pool_n;
};

struct echo_params echo_params_default(void);
const char *echo_strategy_name(enum echo_strategy s);

/* Tokenises text (any bytes; invalid UTF-8 is tolerated). exclude: surface
 * word ids to drop (author names, echo_word_id()), may be NULL. */
void echo_doc_init(struct echo_doc *d, const char *text, size_t len, const uint64_t *exclude,
                   size_t nexclude);
/* Same, for text already passed through validator_text_normalize(). */
void echo_doc_init_normalized(struct echo_doc *d, const char *norm, size_t len,
                              const uint64_t *exclude, size_t nexclude);
/* Same, keeping the agreement words ("agree", "point", "echo") that the
 * echo comparison drops: for matching instructions, where they are content. */
void echo_doc_init_content(struct echo_doc *d, const char *norm, size_t len);
void echo_doc_clear(struct echo_doc *d);

/* Id of a lowercase surface word (for exclusion lists). */
uint64_t echo_word_id(const char *word, size_t len);

/* Debug/tests: the stems of text, space-separated, in order; caller frees. */
char *echo_stems_string(const char *text);

/* The ensemble over prepared documents. pairwise and pool are arrays of
 * pointers; pool supplies IDF and novelty, pairwise the pair scores. */
void echo_evaluate(const struct echo_doc *cand, const struct echo_doc *const *pairwise,
                   size_t npairwise, const struct echo_doc *const *pool, size_t npool,
                   const struct echo_params *params, struct echo_result *out);

/* Convenience over texts (tests, CLI). params NULL → production. */
void echo_evaluate_texts(const char *cand, const char *const *pairwise, size_t npairwise,
                         const char *const *pool, size_t npool, const struct echo_params *params,
                         struct echo_result *out);

/* --- conversation window ------------------------------------------------ */

struct echo_window;

/* cap: entries kept (1..ECHO_WINDOW_MAX; out-of-range is clamped). */
struct echo_window *echo_window_new(size_t cap);
void echo_window_free(struct echo_window *w);
void echo_window_clear(struct echo_window *w);
/* Appends a message (agent = authored by an agent, peer or self; host and
 * human messages are context only and never compared, §9.1). author may be
 * NULL. Drops the oldest entry when full. */
void echo_window_push(struct echo_window *w, const char *author, bool agent, const char *text);
size_t echo_window_len(const struct echo_window *w);
/* Upper bound of the heap memory a window of capacity cap can hold. */
size_t echo_window_max_bytes(size_t cap);

/* Evaluates a normalised candidate against the window (pairwise = the last
 * 10 agent entries among the last 20, pool = all agent entries among them). */
void echo_window_evaluate(const struct echo_window *w, const char *norm, size_t len,
                          const struct echo_params *params, struct echo_result *out);

/* Same, knowing the room's members besides the window's authors (names,
 * at most ECHO_MEMBERS_MAX; NULL/0 for none): "Bob takes the migration"
 * gives a task to Bob only when Bob is known as a member. */
#define ECHO_MEMBERS_MAX 64
void echo_window_evaluate_members(const struct echo_window *w, const char *norm, size_t len,
                                  const char *const *members, size_t nmembers,
                                  const struct echo_params *params, struct echo_result *out);

/* Same, against every recent entry, the host's and other people's too
 * (context the plain evaluation never compares with): what follows an
 * echo opener is judged against everything said, since agreeing and then
 * repeating the host's question adds nothing either. */
void echo_window_evaluate_context(const struct echo_window *w, const char *norm, size_t len,
                                  const char *const *members, size_t nmembers,
                                  const struct echo_params *params, struct echo_result *out);

/* The pairwise set's texts, oldest first (borrowed; valid until the next
 * push/clear). Returns the count (≤ max). */
size_t echo_window_recent_texts(const struct echo_window *w, const char **out, size_t max);

/* Frees the stemmer and tables (tests, shutdown). Safe to call twice. */
void echo_shutdown(void);

#endif
