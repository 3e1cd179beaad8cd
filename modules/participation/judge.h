/*
 * judge — the LLM-as-judge of the echo check (space-validation.md §10.6,
 * §9.1 check 6): the validator's borderline band (the ensemble is unsure
 * whether a candidate restates the room) is put to the model, which answers
 * YES (an echo: the same point as one of the agents' recent messages, even
 * in other words) or NO (a distinct perspective or information).
 *
 * It is a struct validator_judge (modules/validator/validator.h): hand
 * part_judge_validator() to the validator's context, and validator_refer /
 * validator_resume do the rest.
 *
 *   the call   no tools; the spec's system prompt; the user message
 *              `Candidate: "<text>"`, a blank line, `Existing messages:`,
 *              one `<i>. "<text>"` line for each of the first
 *              PART_JUDGE_PEERS_MAX messages of the window in their order,
 *              a blank line and the question; 10 tokens, temperature 0, one
 *              round. Its tokens are booked in the daily budget (compose
 *              does that); a budget that refuses the call is an error;
 *   the answer the trimmed reply starts with YES (any case) → echo; any
 *              other reply → not echo. An error (the model failed, the
 *              budget refused, a second ask while one is in flight) →
 *              verdict -1: the validator fails open (not an echo), and the
 *              verdict is not cached;
 *   the cache  verdicts are kept by SHA-256 of the candidate and the window
 *              texts sorted (a 32-bit hash could give one pair's verdict
 *              to another, §16.22), at most
 *              PART_JUDGE_CACHE_MAX (the oldest dropped, FIFO);
 *              part_judge_clear() empties it (the room's idle reset). A
 *              cached verdict answers at once, without a call.
 *
 * One ask at a time (the participation tick is one at a time).
 * Ownership: the llm client and the budget are borrowed and must outlive
 * the judge. part_judge_free() with an ask in flight cancels the model
 * call, and that ask's done is then never called (its owner is going away
 * with the judge). One thread, one loop.
 */
#ifndef GA_MODULES_PARTICIPATION_JUDGE_H
#define GA_MODULES_PARTICIPATION_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "modules/validator/validator.h"

#define PART_JUDGE_CACHE_MAX  500
#define PART_JUDGE_PEERS_MAX  10
#define PART_JUDGE_MAX_TOKENS 10
/* Texts in the prompt are cut here (the window keeps 4 KiB per message). */
#define PART_JUDGE_TEXT_MAX_BYTES 4096

struct llm_client;
struct budget;

/* The cache alone (pure; exposed for tests). */
struct part_judge_cache_entry {
	unsigned char key[32];
	signed char verdict; /* 1 echo, 0 not */
};
struct part_judge_cache {
	struct part_judge_cache_entry e[PART_JUDGE_CACHE_MAX];
	size_t n, next; /* next: the slot written next once full (the oldest) */
};
void part_judge_cache_clear(struct part_judge_cache *c);
/* 1 / 0, or -1 when key is not cached. */
int part_judge_cache_get(const struct part_judge_cache *c, const unsigned char key[32]);
/* Stores (or replaces) key's verdict; when full, the oldest entry goes. */
void part_judge_cache_put(struct part_judge_cache *c, const unsigned char key[32], int verdict);

/* SHA-256 of candidate, then each window text sorted bytewise, each
 * preceded by a 0 byte (so ("ab","c") and ("a","bc") differ). */
void part_judge_key(const char *candidate, const char *const *window, size_t n,
                    unsigned char out[32]);
/* The user message (caller frees). */
char *part_judge_prompt(const char *candidate, const char *const *window, size_t n);
/* The system prompt. */
const char *part_judge_system(void);
/* 1 when the trimmed reply starts with YES (any case), else 0. */
int part_judge_read(const char *reply);

struct part_judge;

/* NULL when loop or llm is NULL. budget may be NULL. */
struct part_judge *part_judge_new(uv_loop_t *loop, struct llm_client *llm, struct budget *budget);
void part_judge_free(struct part_judge *j);
/* The hook for struct validator_context.judge (valid as long as j). */
const struct validator_judge *part_judge_validator(struct part_judge *j);
void part_judge_clear(struct part_judge *j);
size_t part_judge_cached(const struct part_judge *j);
/* Model calls made so far (cache hits are not calls). */
uint64_t part_judge_calls(const struct part_judge *j);

#endif
