/*
 * commitment — reading what the model decided (space-validation.md §8.2–
 * §8.4): the `space_decision` tool's arguments (schema in
 * local-tools/tools_space.c), the same object found in a prose answer,
 * and the commitments it carries — or the ones a second model call
 * extracted from the sent words (§8.4).
 *
 * Commitment normalisation (§8.3), per item, order kept:
 *   1. alias keys → canonical (part_commitment_normalize; the 14-entry map);
 *      first non-empty value wins in key order;
 *   2. schema: type ∈ {create_issue, create_plan, comment_issue,
 *      post_bluesky, create_workspace} (exact case); repo/title/description/
 *      content strings; issue_number a number; at least one of title/
 *      description/content non-empty (not for create_workspace: "a
 *      workspace for acme" names nothing more than its organisation);
 *      unknown keys removed;
 *   3. social-only agents drop every type but post_bluesky.
 * create_workspace (the room asks for the organisation's workspace,
 * github-commitments §3.1): org (aliases owner, organization,
 * organisation) a GitHub organisation name, else the owner of repo, else
 * absent (the agent's default organisation); title (alias name) the
 * workspace's name (optional). org is checked for this type only.
 * Further rules (§16, each tested):
 *   - a JSON null in an optional field is "absent", not a reason to drop
 *     the commitment or the whole decision (§8.2/§8.3);
 *   - issue_number accepts "42" and "#42" and refuses 3.5 or 0 (an issue
 *     number is a positive whole number);
 *   - repo given as a URL ("https://github.com/o/r.git") is cleaned to
 *     "o/r"; anything that is not owner/name drops the commitment with the
 *     value in the reason (§16.9);
 *   - a whitespace-only title/description/content counts as empty;
 *   - a non-object item in `commitments` is dropped with a reason instead of
 *     failing the decision, and so is an item past PART_COMMITMENTS_MAX;
 *   - extracted commitments (§8.4) go through the same schema (§16.6).
 *
 * Bounds: PART_COMMITMENTS_MAX valid items per decision; the first
 * PART_COMMITMENTS_MAX drops are kept with their raw JSON cut at
 * PART_DROPPED_RAW_MAX bytes (later drops are only counted); title ≤
 * PART_TITLE_MAX_BYTES, other fields ≤ PART_FIELD_MAX_BYTES, message ≤
 * PART_MESSAGE_MAX_BYTES, reason ≤ PART_REASON_MAX_BYTES (longer: the item,
 * or for message the decision, is refused with the size in the error);
 * every string must be valid UTF-8 without NUL.
 *
 * Ownership: a part_decision / part_commitments owns its strings and the
 * adjust object; clear them with part_decision_clear / part_commitments_clear
 * (safe on a zeroed or already-cleared value).
 */
#ifndef GA_MODULES_PARTICIPATION_COMMITMENT_H
#define GA_MODULES_PARTICIPATION_COMMITMENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define PART_COMMITMENTS_MAX   8
#define PART_DROPPED_RAW_MAX   512
#define PART_DROP_REASON_MAX   256
#define PART_TITLE_MAX_BYTES   1024
#define PART_FIELD_MAX_BYTES   (64 * 1024)
#define PART_MESSAGE_MAX_BYTES (256 * 1024)
#define PART_REASON_MAX_BYTES  (16 * 1024)

enum part_commit_type {
	PART_COMMIT_CREATE_ISSUE,
	PART_COMMIT_CREATE_PLAN,
	PART_COMMIT_COMMENT_ISSUE,
	PART_COMMIT_POST_BLUESKY,
	PART_COMMIT_CREATE_WORKSPACE,
	PART_COMMIT_TYPE_COUNT,
};

struct part_commitment {
	enum part_commit_type type;
	char *repo;           /* "owner/name" or NULL */
	char *title;          /* NULL when absent */
	char *description;    /* NULL when absent */
	char *content;        /* NULL when absent */
	int64_t issue_number; /* 0 when absent */
	char *org;            /* create_workspace: the organisation, or NULL */
};

struct part_dropped {
	char raw[PART_DROPPED_RAW_MAX]; /* the item as the model wrote it */
	char reason[PART_DROP_REASON_MAX];
};

struct part_commitments {
	struct part_commitment item[PART_COMMITMENTS_MAX];
	size_t n;
	struct part_dropped dropped[PART_COMMITMENTS_MAX];
	size_t ndropped;       /* kept in dropped[] */
	size_t ndropped_total; /* all drops, including those not kept */
};

struct part_decision {
	bool should_speak;
	char *reason;  /* "" when absent; never NULL after a successful parse */
	char *message; /* NULL when absent */
	struct part_commitments commitments;
	cJSON *adjust;  /* adjustBehavior, a copy; NULL when absent */
	bool from_text; /* read from prose (the §8.1 fallback), not the tool */
};

/* "create_issue", ... and back (-1: not one of the five, exact case). */
const char *part_commit_type_name(enum part_commit_type t);
int part_commit_type_parse(const char *s);

/* §8.3 steps 1–2: a new object with alias keys mapped to canonical ones
 * (values copied; unknown keys kept). item must be an object; NULL
 * otherwise. Caller frees with cJSON_Delete. */
cJSON *part_commitment_normalize(const cJSON *item);

/* §8.3: every element of `array` (a JSON array; NULL = none) normalised,
 * checked, filtered; valid ones appended to out, the rest to out's drops.
 * out must be zeroed or cleared first. */
void part_commitments_validate(const cJSON *array, bool social_only, struct part_commitments *out);

/* §8.2: the tool's arguments. 0 on success; -1 with err naming the field
 * when the decision as a whole cannot be read (not an object, shouldSpeak
 * missing or not a boolean, reason/message not a string, message too big
 * or not UTF-8). out is cleared first. */
int part_decision_from_json(const cJSON *args, bool social_only, struct part_decision *out,
                            struct ga_err *err);

/* §8.1 fallback: the model answered in text. Takes the span from the first
 * '{' to the last '}' and reads it as above. -1 with err when there is no
 * such span or it is not JSON. */
int part_decision_from_text(const char *text, size_t len, bool social_only,
                            struct part_decision *out, struct ga_err *err);

/* §8.4: the extraction model's reply (a JSON array, maybe in a ``` or
 * ```json fence) → commitments of confidence high or medium that pass the
 * §8.3 schema (params.title → title, params.repo → repo, description →
 * description, and for post_bluesky also → content; for create_workspace
 * params.name → title, params.org or params.owner → org). -1 with err when the
 * reply is not a JSON array; out then holds nothing. */
int part_extract_parse(const char *reply, size_t len, bool social_only,
                       struct part_commitments *out, struct ga_err *err);

/* §8.4 around the call (extract.c):
 *
 * part_extract_wanted — whether the sent words promise anything at all, so
 * that an extraction call is worth its cost (§16.26: not one call per
 * commitment-free message). True when the text
 * (’ read as ') holds, as whole words, a first-person future or present-
 * progressive promise: I'll, I will, I'm going to, I am going to, Let me,
 * I can, I'd be happy to, we'll, we will, or I'm / I am + opening,
 * creating, drafting, filing, writing, posting, submitting, putting
 * together, documenting, commenting. why names the phrase, or says none.
 *
 * part_extract_prompt — the user message: `Reply 1: "<text>"`, then
 * `Workspace context: <repo>` when one is known, then `Conversation
 * context (recent messages from others):` and context_lines ("name: text"
 * lines; NULL or "" = the section is left out). Caller frees.
 * part_extract_system — the system prompt (static). */
#define PART_EXTRACT_MAX_TOKENS 500
bool part_extract_wanted(const char *text, size_t len, char *why, size_t cap);
char *part_extract_prompt(const char *text, const char *repo, const char *context_lines);
const char *part_extract_system(void);

/* Frees one commitment's strings and zeroes it. */
void part_commitment_clear(struct part_commitment *c);
void part_commitments_clear(struct part_commitments *c);
void part_decision_clear(struct part_decision *d);

#endif
