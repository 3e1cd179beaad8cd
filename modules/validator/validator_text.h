/*
 * validator_text — text normalisation and the phrase matcher behind the
 * validator's checks (spec space-validation.md §9.1, §16.17).
 *
 * Internal to modules/validator (the echo detector and the validator share
 * it); other modules use validator.h.
 *
 * Normalised text is what every phrase list and the echo tokenizer see:
 * invalid UTF-8 bytes become spaces, then NFKC + Unicode case folding
 * (utf8proc), then typographic apostrophes (U+2018 U+2019 U+02BC U+2032) → ',
 * quotes (U+201C U+201D U+00AB U+00BB U+201E U+2033) → ", dashes (U+2010..
 * U+2015, U+2212, U+FE58, U+FE63) → -, and every Unicode space (the JS \s set
 * minus LF) → ' '. So "I’ll" and "I'll" read the same (§0 apostrophes,
 * §16.17).
 */
#ifndef GA_MODULES_VALIDATOR_VALIDATOR_TEXT_H
#define GA_MODULES_VALIDATOR_VALIDATOR_TEXT_H

#include <stdbool.h>
#include <stddef.h>

enum validator_list {
#define VLIST(id, anchored) VALIDATOR_LIST_##id,
#include "modules/validator/validator_phrases.def"
	VALIDATOR_LIST_COUNT
};

/* Normalises s[0..len). Returns a NUL-terminated heap string (caller frees)
 * and its length in *out_len. Never NULL (aborts on OOM like xalloc). */
char *validator_text_normalize(const char *s, size_t len, size_t *out_len);

/* Searches normalised text for any phrase of `list` that is not excused by
 * one of the list's exceptions. Returns true on a hit and, if non-NULL, sets
 * *pattern to the phrase (a static string) and *at to its byte offset. */
bool validator_phrase_find(enum validator_list list, const char *norm, size_t len,
                           const char **pattern, size_t *at);

/* The same, also giving the byte offset just past the hit in *end. */
bool validator_phrase_match(enum validator_list list, const char *norm, size_t len,
                            const char **pattern, size_t *at, size_t *end);

/* Name of a list for messages ("EMPTY_PROMISE"). */
const char *validator_list_name(enum validator_list list);

#endif
