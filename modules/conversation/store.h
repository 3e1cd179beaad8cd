/*
 * store — the multi-party conversation store (seed 003's
 * prerequisite): who said what, bot or not, replying to what, in every
 * conversation the agent takes part in, on every platform.
 *
 * The store owns the history. Adapters hand each parsed message up once
 * (through the pipeline, which calls conv_store_add); the gate derives the
 * chain from it (consecutive agent messages since the last person's), the
 * prompts read it, the dashboard shows it.
 *
 * Bounds (and what happens at the limit):
 *   CONV_STORE_MAX_CONVERSATIONS conversations — the least recently used
 *     (by last message added) is dropped whole; a concluded one is dropped
 *     before that (conv_store_conclude: the workspace module concludes the
 *     conversations of the pull requests it sees closed);
 *   CONV_STORE_MAX_MESSAGES messages per conversation — the oldest is
 *     dropped; CONV_STORE_MAX_TEXT_BYTES of text per message are kept
 *     (longer texts are cut on a UTF-8 boundary; text_len says what was kept);
 *   CONV_STORE_MAX_ANSWERED answered-message ids — the oldest is forgotten.
 *
 * Persistence: conv_store_save() writes the whole store atomically as the
 * state file "conversations" (modules/state: versioned envelope); the
 * pipeline calls it after a message is answered and at shutdown, at most
 * every CONV_STORE_SAVE_MIN_INTERVAL_MS otherwise. conv_store_load() reads it
 * back, so a restart does not forget which messages were already answered
 * (an answered id is never answered again) nor the recent history the
 * derived chain needs.
 *
 * Duplicates: a message id already in its conversation is not added twice
 * (conv_store_add returns 0 and changes nothing), which is how a history
 * replay after a reconnect stays harmless. An empty message id (a platform
 * that gave none) is never a duplicate, and never found.
 *
 * Load replaces what the store held. The saved data carries its own format
 * number, so a new agent version keeps it (the state envelope's version is
 * the agent's; without the migration hook an upgrade would forget the
 * answered set).
 *
 * Ownership: the store copies what it is given. Pointers it returns are
 * valid until the next call that changes the store.
 */
#ifndef GA_MODULES_CONVERSATION_STORE_H
#define GA_MODULES_CONVERSATION_STORE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "modules/conversation/event.h"
#include "modules/state/state.h"

#define CONV_STORE_MAX_CONVERSATIONS    256
#define CONV_STORE_MAX_MESSAGES         100
#define CONV_STORE_MAX_TEXT_BYTES       (8 * 1024)
#define CONV_STORE_MAX_ANSWERED         2048
#define CONV_STORE_SAVE_MIN_INTERVAL_MS 5000
#define CONV_STORE_STATE_NAME           "conversations"
/* The saved copy stays under this (state files are refused past
 * STATE_MAX_BYTES; the bound is a worst-case estimate, every byte escaped):
 * the answered set always goes in; then every conversation whose messages
 * without their texts fit, most recent first (the least recent are left
 * out whole); then texts with what is left, most recent conversation first
 * (a message saved without its text loads with text ""). Logged when it
 * happens. */
#define CONV_STORE_SAVE_MAX_BYTES ((size_t)STATE_MAX_BYTES / 2)

/* One message as the store keeps it (a subset of the event). */
struct conv_message {
	char *message_id;
	char *parent_id; /* NULL when none */
	char *author_id;
	char *author_name;
	enum conv_author_kind author_kind;
	bool is_bot;
	int64_t chain;
	char *text;
	size_t text_len;
	int64_t time_ms;
	bool answered; /* we replied (or reacted) to it */
};

struct conv_store;

struct conv_store *conv_store_new(void);
void conv_store_free(struct conv_store *s);

/* Adds ev to its conversation (created when new; the least recently used
 * one is dropped when CONV_STORE_MAX_CONVERSATIONS are held). Returns 1
 * when added, 0 when the message id was already there. */
int conv_store_add(struct conv_store *s, const struct conv_event *ev);

/* The conversation `key` has concluded at concluded_ms (its pull request
 * merged or closed, its issue closed): it is dropped whole when none of its
 * messages is later than that (a later message means it went on: kept). The
 * answered set is separate and stays, so dedup does not depend on it; a
 * thread walked again is read whole from its platform again. Returns true
 * when dropped. */
bool conv_store_conclude(struct conv_store *s, const char *key, int64_t concluded_ms);

/* Marks a message answered (it need not be in the history any more: the
 * answered set is separate and bounded). */
void conv_store_mark_answered(struct conv_store *s, const char *message_id);
bool conv_store_answered(const struct conv_store *s, const char *message_id);

/* The chain derived from history (seed 000): the number of agent messages
 * (is_bot) in a row ending with message_id when it is in the history (with
 * the conversation's last message when message_id is NULL or not found),
 * since the last person's message. When that message answers another (it
 * has a parent_id: a threaded platform), the row runs up its branch — its
 * parent, the parent's parent, … — and ends at a person's message, at the
 * branch's root (no parent) or at a parent no longer in the history, so a
 * sibling branch never counts; otherwise the row is the conversation's
 * messages in order. 0 for an unknown conversation. */
int64_t conv_store_derived_chain(const struct conv_store *s, const char *conversation,
                                 const char *message_id);

/* The message, or NULL. */
const struct conv_message *conv_store_find(const struct conv_store *s, const char *conversation,
                                           const char *message_id);
/* Was message_id (in conversation) written by us? (For "replies to our
 * message" in gate rule 4.) */
bool conv_store_is_ours(const struct conv_store *s, const char *conversation,
                        const char *message_id);

/* Conversations, most recently active first: i in [0, count). */
/* Our own messages (author kind SELF) in conversation: every reply of ours
 * counted once, by its message id, however it was learnt. */
size_t conv_store_count_ours(const struct conv_store *s, const char *conversation);
size_t conv_store_count(const struct conv_store *s);
/* The key of the i-th conversation and its message count; NULL when out of range. */
const char *conv_store_key_at(const struct conv_store *s, size_t i, size_t *nmessages,
                              int64_t *last_ms);
/* Messages of a conversation, oldest first; NULL when out of range. */
size_t conv_store_message_count(const struct conv_store *s, const char *conversation);
const struct conv_message *conv_store_message_at(const struct conv_store *s,
                                                 const char *conversation, size_t i);

/* The whole store as JSON, for the dashboard and tests:
 *   {"format":1,"answered":[ids, oldest first],
 *    "conversations":[{"key","lastMs","messages":[{"id","parentId"?,
 *      "authorId","authorName","authorKind","isBot","chain","text","timeMs",
 *      "answered"}]}]}   (conversations most recent first)
 * or, when key is not NULL, that one conversation's object (NULL when
 * unknown). A text that holds NUL bytes or invalid UTF-8 appears as
 * "textHex" (its bytes in hex) instead of "text"; other strings that are not
 * valid UTF-8 get U+FFFD for each bad byte. Caller frees with cJSON_Delete. */
cJSON *conv_store_to_json(const struct conv_store *s, const char *key);

/* Persistence through the state store (see above). load: a missing, reset
 * or corrupt file leaves the store empty and returns 0 (modules/state/state.h reports
 * it); -1 with err only when the directory cannot be read at all. */
int conv_store_load(struct conv_store *s, const struct state_store *st, struct ga_err *err);
int conv_store_save(const struct conv_store *s, const struct state_store *st, int64_t now_ms,
                    struct ga_err *err);
/* What conv_store_load does with the data it read (also for tests and
 * fuzzing): replaces the store's content with data (the form
 * conv_store_to_json gives), enforcing every bound; malformed entries are
 * skipped. -1 (store left empty) when data is not that form at all. */
int conv_store_load_json(struct conv_store *s, const cJSON *data);
/* The pipeline's saving rule: saves when something changed since the last
 * save through this function (or load) and either force is set (a message
 * was answered; shutdown) or CONV_STORE_SAVE_MIN_INTERVAL_MS have passed.
 * Returns 1 saved, 0 nothing to do yet, -1 with err. */
int conv_store_save_if_due(struct conv_store *s, const struct state_store *st, int64_t now_ms,
                           bool force, struct ga_err *err);
bool conv_store_dirty(const struct conv_store *s);

#endif
