/*
 * policy_posts — the pure rules of proactive posts (bsky_posts.c; §7.1,
 * §7.3; seed 004 "Daily Rituals"): when a ritual is due, when an expression
 * may go out, whether its invitation is strong enough.
 *
 * Pure functions of their arguments (policy.h's rules): local-calendar
 * facts (weekday, hour, date) are passed in already computed, so one clock
 * decides both the ritual schedule and its dedup key.
 */
#ifndef GA_MODULES_BLUESKY_POLICY_POSTS_H
#define GA_MODULES_BLUESKY_POLICY_POSTS_H

#include <stdbool.h>
#include <stdint.h>

#include "modules/decisions/decision.h"
#include "modules/identity/self.h"

/* Is the initiator ritual due? wday (0 = Sunday), hour and date
 * ("YYYY-MM-DD") are LOCAL; last_date is the persisted date of the last
 * initiation ("" none). earliest_hour: no initiation before it. */
bool bsky_ritual_due(const struct self_ritual *r, int wday, int hour, const char *date,
                     const char *last_date, int earliest_hour, struct decision *d);

/* ---- expression (§7.1) ----------------------------------------------------------- */

#define BSKY_EXPR_MIN_MS      (180LL * 60 * 1000)
#define BSKY_EXPR_MAX_MS      (240LL * 60 * 1000)
#define BSKY_EXPR_DAILY_CAP   12
#define BSKY_QUIET_START_HOUR 23
#define BSKY_QUIET_END_HOUR   7
/* The next expression time: after the later of now and the last own
 * top-level post (0 = none), plus MIN + (MAX - MIN) * frac (frac in
 * [0, 1), the caller's randomness): a restart does not post early. */
int64_t bsky_expression_next(int64_t now_ms, int64_t last_post_ms, double frac);
bool bsky_quiet_hour(int hour);
/* May an expression go out now? (due, not quiet, under the daily cap of
 * expressions — identity and announcement posts do not count, §11.14). */
bool bsky_expression_allowed(int64_t now_ms, int64_t next_ms, int hour, int today_count,
                             struct decision *d);

/* The invitation of an expression post (§7.1, Scenario 1.8). Sentences end
 * at '?', '!', a new line or a '.' before a space; ’ reads as '; phrases
 * are matched case-insensitively as whole words.
 *   STRONG  a question holding a choice word (prefer, choose, pick, rather,
 *           which, between, option a/b/1/2) or "… or X?" (one to
 *           BSKY_INVITE_OR_WORDS words after its last "or"): rule
 *           "choice_question"; a question holding a taste phrase (practical
 *           or, speed or, more or less, rather have, would you want):
 *           "taste_question"; a bounded question (what's one/your/the,
 *           do/have/did/are/would/could you … ?) plus a direct invitation
 *           anywhere (what's yours, how about you, curious what, wondering
 *           if, interested to hear, love to know, anyone else, does this
 *           resonate): "bounded_direct"; a template word (template,
 *           checklist, pattern, recipe, example, here's how, try this,
 *           step(s), tip(s)) plus an http(s) link: "template_link";
 *   WEAK    one of those halves alone, or any other question:
 *           "weak_invitation" (REJECT; the reason names what is missing);
 *   NONE    nothing of the above: "no_invitation" (REJECT).
 * Only the first BSKY_INVITE_MAX_BYTES bytes are read. NULL is NONE. */
#define BSKY_INVITE_MAX_BYTES 2048
#define BSKY_INVITE_OR_WORDS  3
enum bsky_invitation { BSKY_INVITE_NONE, BSKY_INVITE_WEAK, BSKY_INVITE_STRONG };
enum bsky_invitation bsky_invitation_classify(const char *text, struct decision *d);
const char *bsky_invitation_name(enum bsky_invitation i);

#endif
