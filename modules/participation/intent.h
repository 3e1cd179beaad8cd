/*
 * intent — what the host wants from one message (space-validation.md §2.2):
 * an action request (make or change something), discussion, or a follow-up
 * on an earlier request.
 *
 * Layer 1 (part_intent_classify) is structural and pure: the spec's rules
 * F, D1–D10, A0–A3 in the spec's order, over the lists of
 * intent_phrases.def, on the trimmed text after NFKC + case folding with
 * typographic apostrophes read as ' (§16.17).
 * It answers with high confidence or "ambiguous"; only ambiguous messages
 * need Layer 2, a model asked for one label. part_intent_parse_reply reads
 * that label: the first label of the reply, as a word, counts ("DISCUSSION
 * (not ACTION_REQUEST)" is discussion), and an unreadable reply is an error
 * the caller must not cache (§16.15).
 *
 * Beyond the spec's rules (§16.17), each tested:
 *   - "status" / "ETA" are follow-ups unless the text is an anchored
 *     command (A0–A2): "Create an issue about the status page" is a request;
 *   - A0 does not fire on a hyphenated compound ("Post-mortem: …") nor on
 *     "Open question…" / "Test coverage…".
 * The pinned outcomes stay: "Can you fix the bug?" is discussion (D1),
 * "Can someone fix the bug" an action request (A2), "Let's make sure we
 * handle errors properly" an action request (A1).
 *
 * Texts longer than INTENT_MAX_BYTES are classified on their first
 * INTENT_MAX_BYTES bytes (cut on a UTF-8 boundary): a bound on the work.
 */
#ifndef GA_MODULES_PARTICIPATION_INTENT_H
#define GA_MODULES_PARTICIPATION_INTENT_H

#include <stdbool.h>
#include <stddef.h>

#define INTENT_MAX_BYTES (16 * 1024)

enum part_intent {
	PART_INTENT_DISCUSSION,
	PART_INTENT_ACTION,    /* action_request */
	PART_INTENT_FOLLOW_UP, /* follow_up */
};

struct part_intent_result {
	enum part_intent intent;
	bool ambiguous;      /* Layer 1 found nothing: ask Layer 2 */
	const char *rule;    /* static: "F", "D1".."D10", "A0".."A3", "none" */
	const char *pattern; /* static: the phrase that fired, "" for D9/D10/none */
};

/* Layer 1 on text[0..len) (need not be NUL-terminated; invalid UTF-8 is
 * read byte by byte). */
void part_intent_classify(const char *text, size_t len, struct part_intent_result *out);

/* Layer 2: the model's one-word answer. Returns 0 and sets *out for the
 * first label in the reply (ACTION_REQUEST, DISCUSSION, FOLLOW_UP; case,
 * '_' / ' ' / '-' between the words do not matter), -1 when there is none. */
int part_intent_parse_reply(const char *reply, enum part_intent *out);

/* §14.4: the text promises work ("I'll", "Let me", "opening", "filing",
 * ...; the list PROMISE of intent_phrases.def). */
bool part_text_promises(const char *text, size_t len);

/* "action_request", "discussion", "follow_up". */
const char *part_intent_name(enum part_intent i);

/* Normalised copy of s[0..len) for phrase matching (case folded, ’ → ',
 * Unicode spaces → ' '), cut at INTENT_MAX_BYTES. Caller frees. Never NULL. */
char *part_text_normalize(const char *s, size_t len, size_t *out_len);

/* The matcher behind the lists (common/phrase.h), for the other
 * participation sources: true when `pattern` (language of
 * intent_phrases.def) matches normalised text t[0..n) starting at byte i,
 * with word boundaries. */
bool part_pattern_match_at(const char *pattern, const char *t, size_t n, size_t i);
/* Anywhere in t (anchored = only at the first non-space byte). */
bool part_pattern_find(const char *pattern, const char *t, size_t n, bool anchored);

#endif
