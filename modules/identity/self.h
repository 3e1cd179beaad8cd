/*
 * self — SELF.md, the agent's self-description, parsed into sections.
 *
 * Sections are level-2 headings matched exactly at line start, case-
 * insensitively (`## Voice`), against the candidate titles of
 * runtime-bluesky.md §2.3; a section runs to the next level-1 or level-2
 * heading; a `### Connections` subheading is not `## Connections`. Bullets
 * are lines starting with "- " or
 * "* "; bullets that are only an emphasis-wrapped placeholder such as
 * "*(Added through reflection)*" are ignored.
 *
 * `## Social Mechanics` is a table of signal | threshold rows. Each value is
 * validated: not a number, negative, zero, or past the clamp → the default,
 * and a warning naming the key. Durations accept s, m/min/minute(s),
 * h/hr(s)/hour(s), d/day(s); a bare number is minutes; an unknown unit is
 * refused ("2 days" is two days, "2 fortnights" the default). A row sets
 * exactly one knob ("My replies in thread" is the reply count, not the
 * thread depth), and skipLowValueAcknowledgments can be turned off ("no",
 * "false", "off", "don't skip").
 *
 * `## Daily Rituals` entries: `- **Name** [schedule] (workspace)` then
 * `Participants: a, b` / `Role: initiator|participant` / description lines.
 * schedule = daily | weekdays | weekends | comma list of day names.
 *
 * Bounds: SELF_MAX_BYTES per file, SELF_MAX_ITEMS bullets per list,
 * SELF_MAX_RITUALS rituals, SELF_MAX_WARNINGS warnings.
 */
#ifndef GA_MODULES_IDENTITY_SELF_H
#define GA_MODULES_IDENTITY_SELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define SELF_MAX_BYTES        (512 * 1024)
#define SELF_MAX_ITEMS        64
#define SELF_MAX_RITUALS      32
#define SELF_MAX_PARTICIPANTS 32
#define SELF_MAX_WARNINGS     32

/* Social Mechanics defaults and clamps (runtime-bluesky.md §2.3, App. A). */
#define SELF_DEFAULT_MAX_REPLIES    4
#define SELF_DEFAULT_MAX_DEPTH      12
#define SELF_DEFAULT_SILENCE_MS     (30LL * 60 * 1000)
#define SELF_DEFAULT_NO_RESPONSE_MS (60LL * 60 * 1000)
#define SELF_MAX_REPLIES_LIMIT      100
#define SELF_MAX_DEPTH_LIMIT        500
#define SELF_MIN_DURATION_MS        (60LL * 1000)
#define SELF_MAX_DURATION_MS        (7LL * 24 * 60 * 60 * 1000)

struct self_list {
	char **items;
	size_t count;
};

struct self_mechanics {
	int max_replies_before_exit;
	int max_thread_depth;
	int64_t silence_threshold_ms;
	int64_t no_response_timeout_ms;
	bool skip_low_value_acks;
};

enum self_schedule { SELF_DAILY, SELF_WEEKDAYS, SELF_WEEKENDS, SELF_DAYS };

struct self_ritual {
	char *name;
	char *workspace;
	char *schedule_text; /* lower-cased, as written */
	enum self_schedule schedule;
	unsigned days_mask; /* bit 0 = Sunday … bit 6 = Saturday */
	char **participants;
	size_t participant_count;
	bool initiator; /* Role: initiator (default participant) */
	char *description;
};

struct self_doc {
	char *name;     /* the H1's first word, or NULL */
	char *identity; /* first paragraph after the H1 */
	char *purpose;  /* first line of the purpose section */
	struct self_list values, questions, patterns, learnings, explorations, current_focus,
	        relationships, interests, learning;
	char *voice; /* whole Voice section */
	struct self_mechanics mechanics;
	struct self_ritual *rituals;
	size_t ritual_count;

	char *warnings[SELF_MAX_WARNINGS];
	int warning_count;
};

/* Parses SELF.md text. Never fails on content: anything unusable becomes a
 * default plus a warning. Returns -1 only when text is not valid UTF-8 or is
 * larger than SELF_MAX_BYTES (err says which); *out then holds defaults. */
int self_parse(const char *text, size_t len, struct self_doc *out, struct ga_err *err);
void self_doc_free(struct self_doc *d);

/* SELF.md's gist for a prompt: "Name: …" (when with_name), the identity,
 * "Purpose: …", "Voice: …", one per line, at most max bytes (cut on a
 * character boundary). Caller frees; NULL when s is NULL or says nothing. */
char *self_excerpt(const struct self_doc *s, bool with_name, size_t max);

/* Defaults only (no SELF.md). */
void self_defaults(struct self_doc *out);

/* First start: if self_path is missing and template_path exists, writes
 * SELF.md from the template with {{AGENT_NAME}} and {{DATE}} (UTC, from
 * now_ms) replaced. If SELF.md exists but still holds a placeholder, the
 * placeholders are substituted in place. *created (may be NULL) tells
 * whether a file was written. A missing template and missing SELF.md is not
 * an error (SELF is then empty). */
int self_ensure(const char *self_path, const char *template_path, const char *agent_name,
                int64_t now_ms, bool *created, struct ga_err *err);

/* Loads and parses path (missing → defaults, not an error). */
int self_load(const char *path, struct self_doc *out, struct ga_err *err);

/* True if the ritual's schedule includes weekday wday (0 = Sunday). */
bool self_ritual_on(const struct self_ritual *r, int wday);

#endif
