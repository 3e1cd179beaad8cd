/*
 * commitment — the commitments a model's answer carries (space-validation.md
 * §8.3–§8.4): the items of the room's `space_decision` (read by
 * modules/participation/decision.h) or of a Bluesky reply, checked against
 * one schema — or the ones a second model call extracted from the sent
 * words (§8.4). Used by the room and by Bluesky; the ledger (ledger.h)
 * keeps what they promise.
 *
 * Commitment normalisation (§8.3), per item, order kept:
 *   1. alias keys → canonical (cmt_normalize; the 14-entry map);
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
 *     failing the decision, and so is an item past CMT_MAX;
 *   - extracted commitments (§8.4) go through the same schema (§16.6).
 *
 * Bounds: CMT_MAX valid items per answer; the first CMT_MAX drops are kept
 * with their raw JSON cut at CMT_DROPPED_RAW_MAX bytes (later drops are
 * only counted); title ≤ CMT_TITLE_MAX_BYTES, other fields ≤
 * CMT_FIELD_MAX_BYTES (longer: the item is refused with the size in the
 * error); every string must be valid UTF-8 without NUL.
 *
 * Ownership: a cmt_list owns its strings; clear it with cmt_list_clear
 * (safe on a zeroed or already-cleared value).
 */
#ifndef GA_MODULES_COMMITMENTS_COMMITMENT_H
#define GA_MODULES_COMMITMENTS_COMMITMENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define CMT_MAX             8
#define CMT_DROPPED_RAW_MAX 512
#define CMT_DROP_REASON_MAX 256
#define CMT_TITLE_MAX_BYTES 1024
#define CMT_FIELD_MAX_BYTES (64 * 1024)

enum cmt_type {
	CMT_CREATE_ISSUE,
	CMT_CREATE_PLAN,
	CMT_COMMENT_ISSUE,
	CMT_POST_BLUESKY,
	CMT_CREATE_WORKSPACE,
	CMT_TYPE_COUNT,
};

struct cmt_item {
	enum cmt_type type;
	char *repo;           /* "owner/name" or NULL */
	char *title;          /* NULL when absent */
	char *description;    /* NULL when absent */
	char *content;        /* NULL when absent */
	int64_t issue_number; /* 0 when absent */
	char *org;            /* create_workspace: the organisation, or NULL */
};

struct cmt_dropped {
	char raw[CMT_DROPPED_RAW_MAX]; /* the item as the model wrote it */
	char reason[CMT_DROP_REASON_MAX];
};

struct cmt_list {
	struct cmt_item item[CMT_MAX];
	size_t n;
	struct cmt_dropped dropped[CMT_MAX];
	size_t ndropped;       /* kept in dropped[] */
	size_t ndropped_total; /* all drops, including those not kept */
};

/* "create_issue", ... and back (-1: not one of the five, exact case). */
const char *cmt_type_name(enum cmt_type t);
int cmt_type_parse(const char *s);

/* §8.3 steps 1–2: a new object with alias keys mapped to canonical ones
 * (values copied; unknown keys kept). item must be an object; NULL
 * otherwise. Caller frees with cJSON_Delete. */
cJSON *cmt_normalize(const cJSON *item);

/* §8.3: every element of `array` (a JSON array; NULL = none) normalised,
 * checked, filtered; valid ones appended to out, the rest to out's drops.
 * out must be zeroed or cleared first. */
void cmt_validate(const cJSON *array, bool social_only, struct cmt_list *out);

/* §8.4: the extraction model's reply (a JSON array, maybe in a ``` or
 * ```json fence) → commitments of confidence high or medium that pass the
 * §8.3 schema (params.title → title, params.repo → repo, description →
 * description, and for post_bluesky also → content; for create_workspace
 * params.name → title, params.org or params.owner → org). -1 with err when the
 * reply is not a JSON array; out then holds nothing. */
int cmt_extract_parse(const char *reply, size_t len, bool social_only, struct cmt_list *out,
                      struct ga_err *err);

/* §8.4 around the call (extract.c):
 *
 * cmt_extract_wanted — whether the sent words promise anything at all, so
 * that an extraction call is worth its cost (§16.26: not one call per
 * commitment-free message). True when the text
 * (’ read as ') holds, as whole words, a first-person future or present-
 * progressive promise: I'll, I will, I'm going to, I am going to, Let me,
 * I can, I'd be happy to, we'll, we will, or I'm / I am + opening,
 * creating, drafting, filing, writing, posting, submitting, putting
 * together, documenting, commenting. why names the phrase, or says none.
 *
 * cmt_extract_prompt — the user message: `Reply 1: "<text>"`, then
 * `Workspace context: <repo>` when one is known, then `Conversation
 * context (recent messages from others):` and context_lines ("name: text"
 * lines; NULL or "" = the section is left out). Caller frees.
 * cmt_extract_system — the system prompt (static). */
#define CMT_EXTRACT_MAX_TOKENS 500
bool cmt_extract_wanted(const char *text, size_t len, char *why, size_t cap);
char *cmt_extract_prompt(const char *text, const char *repo, const char *context_lines);
const char *cmt_extract_system(void);

/* A string field of o: absent or null → *out NULL, 0. Wrong type, bad
 * UTF-8, longer than max → -1 with why (naming the field). *out is the
 * caller's to free. */
int cmt_take_string(const cJSON *o, const char *field, size_t max, char **out, char *why,
                    size_t whylen);

/* Frees one commitment's strings and zeroes it. */
void cmt_item_clear(struct cmt_item *c);
void cmt_list_clear(struct cmt_list *c);

#endif
