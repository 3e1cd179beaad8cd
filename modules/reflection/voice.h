/*
 * voice — voice-phrases.json: every piece of operational text the agent
 * writes (fulfilment replies, task claims, GitHub comments) in its own
 * voice, regenerated from SELF.md's `## Voice` at each reflection
 * (runtime-bluesky.md §2.4; seed 004 "voice-phrases.json": no operational
 * text is hard-coded).
 *
 * Schema (all strings required):
 *   {"version": 1, "generatedAt": ISO,
 *    "fulfillment": {"create_issue", "create_plan", "default"}   {{url}}
 *    "task_claim"                                                 {{number}} {{title}}
 *    "github": {"task_claim"                                      {{number}} {{title}}
 *               "task_complete", "task_blocked", "task_failed"    {{number}} {{title}} {{details}}
 *               "plan_complete"                                   non-empty
 *               "workspace_finished"}}                            {{summary}}
 * and optional keys, extensions of that schema: a file without one keeps
 * the default for that key only —
 *    "bluesky": {"peer_announcement"}                            {{handle}} {{url}}
 *    "space": {"on_it"                                           {{type}}
 *              "creating"}                                       (none)
 *
 * Loading (voice_get): the file is read when first needed and again when
 * its modification time changes (hot reload). Missing, unparsable,
 * version != 1, or a field missing or not a string → the defaults (the
 * table in voice.c), with a warning once per file version. Presence only
 * is checked on load.
 *
 * Generation (voice_parse_generated): the model's answer may start with a
 * markdown fence (stripped); it must parse, hold every field, and every
 * field must keep its placeholders; version and generatedAt are then
 * forced. Anything else is refused with a sentence naming the field, and
 * the previous file stays.
 *
 * Interpolation: literal replace-all of {{name}}; an unknown placeholder in
 * the text stays as written.
 *
 * Bounds: the file is read up to VOICE_FILE_MAX_BYTES; each phrase up to
 * VOICE_PHRASE_MAX_BYTES (longer → refused / default).
 */
#ifndef GA_MODULES_REFLECTION_VOICE_H
#define GA_MODULES_REFLECTION_VOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define VOICE_FILE             "voice-phrases.json"
#define VOICE_FILE_MAX_BYTES   (256 * 1024)
#define VOICE_PHRASE_MAX_BYTES (16 * 1024)
#define VOICE_VERSION          1

enum voice_key {
	VOICE_FULFILLMENT_CREATE_ISSUE,
	VOICE_FULFILLMENT_CREATE_PLAN,
	VOICE_FULFILLMENT_DEFAULT,
	VOICE_TASK_CLAIM,
	VOICE_GH_TASK_CLAIM,
	VOICE_GH_TASK_COMPLETE,
	VOICE_GH_TASK_BLOCKED,
	VOICE_GH_TASK_FAILED,
	VOICE_GH_PLAN_COMPLETE,
	VOICE_GH_WORKSPACE_FINISHED,
	VOICE_PEER_ANNOUNCEMENT, /* optional (an extension of §2.4) */
	/* the room's §11 words (space-validation.md §11; optional, ours):
	 * a silent owner's commitments kept, and the forced action */
	VOICE_SPACE_ON_IT,
	VOICE_SPACE_CREATING,
	VOICE_KEY_COUNT,
};

struct voice_phrases {
	char *text[VOICE_KEY_COUNT]; /* owned */
};

/* "fulfillment.create_issue", "github.task_failed", ... */
const char *voice_key_name(enum voice_key k);
/* The default text of a key (static). */
const char *voice_default(enum voice_key k);
void voice_phrases_defaults(struct voice_phrases *p);
void voice_phrases_free(struct voice_phrases *p);

/* Parses a voice-phrases.json text. generated: the model's answer (a
 * leading fence is stripped, placeholders are checked, version is not
 * required). 0, or -1 with err naming what is wrong (*out then empty). */
int voice_parse(const char *text, size_t len, bool generated, struct voice_phrases *out,
                struct ga_err *err);

/* The file's text (pretty-printed, trailing newline, version 1,
 * generatedAt = now_ms). Caller frees. */
char *voice_to_text(const struct voice_phrases *p, int64_t now_ms);
/* The file text of the built-in phrases with phrase k replaced by text
 * (one's own voice-phrases.json started from the defaults; the tests').
 * Caller frees. */
char *voice_text_with(enum voice_key k, const char *text, int64_t now_ms);

/* {{name}} → value for each pair, literally, every occurrence. Caller frees. */
char *voice_interpolate(const char *tmpl, const char *const *names, const char *const *values,
                        size_t n);

/* The file as the running agent uses it. */
struct voice;
struct voice *voice_open(const char *path); /* path copied; never fails */
/* The file's path beside SELF.md (where reflection writes it): the
 * directory of self_path + VOICE_FILE. Caller frees. */
char *voice_path_beside(const char *self_path);
void voice_free(struct voice *v);
/* The phrase (reloaded first if the file changed). Borrowed until the next
 * voice_* call on v. Never NULL. */
const char *voice_get(struct voice *v, enum voice_key k);
/* voice_get + voice_interpolate. Caller frees. */
char *voice_render(struct voice *v, enum voice_key k, const char *const *names,
                   const char *const *values, size_t n);
/* True when the phrases come from the file (false: the defaults). */
bool voice_from_file(struct voice *v);
const char *voice_path(const struct voice *v);

#endif
