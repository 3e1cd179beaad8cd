/* The pure rules of proactive posts. See policy_posts.h. */
#include "modules/bluesky/policy_posts.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "modules/bluesky/policy_text.h"

bool bsky_ritual_due(const struct self_ritual *r, int wday, int hour, const char *date,
                     const char *last_date, int earliest_hour, struct decision *d)
{
	if (!r->initiator) {
		decision_set(d, VERDICT_INFO, "ritual_participant",
		             "%s: we are a participant, not the initiator", r->name);
		return false;
	}
	if (!self_ritual_on(r, wday)) {
		decision_set(d, VERDICT_INFO, "ritual_schedule", "%s: not scheduled today (%s)",
		             r->name, r->schedule_text ? r->schedule_text : "");
		return false;
	}
	if (last_date && date && strcmp(last_date, date) == 0) {
		decision_set(d, VERDICT_INFO, "ritual_done_today", "%s: already initiated on %s",
		             r->name, date);
		return false;
	}
	if (bsky_quiet_hour(hour)) {
		decision_set(d, VERDICT_INFO, "quiet_hours", "%s: quiet hours (%02d:00)", r->name,
		             hour);
		return false;
	}
	if (hour < earliest_hour) {
		decision_set(d, VERDICT_INFO, "ritual_early", "%s: not before %02d:00", r->name,
		             earliest_hour);
		return false;
	}
	decision_set(d, VERDICT_PASS, "ritual_due", "%s: due today (%s)", r->name, date);
	return true;
}

/* ---- expression ------------------------------------------------------------------------------ */

int64_t bsky_expression_next(int64_t now_ms, int64_t last_post_ms, double frac)
{
	if (frac < 0)
		frac = 0;
	if (frac >= 1)
		frac = 0.999999;
	int64_t base = last_post_ms > 0 ? last_post_ms : now_ms;
	int64_t next = base + BSKY_EXPR_MIN_MS +
	               (int64_t)((double)(BSKY_EXPR_MAX_MS - BSKY_EXPR_MIN_MS) * frac);
	/* a post long ago: not at once after a restart either, but soon */
	if (next < now_ms)
		next = now_ms;
	return next;
}

bool bsky_quiet_hour(int hour)
{
	return hour >= BSKY_QUIET_START_HOUR || hour < BSKY_QUIET_END_HOUR;
}

bool bsky_expression_allowed(int64_t now_ms, int64_t next_ms, int hour, int today_count,
                             struct decision *d)
{
	if (now_ms < next_ms) {
		decision_set(d, VERDICT_INFO, "expression_not_due",
		             "next expression in %" PRId64 " min",
		             (next_ms - now_ms + 59999) / 60000);
		return false;
	}
	if (bsky_quiet_hour(hour)) {
		decision_set(d, VERDICT_INFO, "quiet_hours", "quiet hours (%02d:00, 23:00-07:00)",
		             hour);
		return false;
	}
	if (today_count >= BSKY_EXPR_DAILY_CAP) {
		decision_set(d, VERDICT_INFO, "daily_cap", "%d expressions today (cap %d)",
		             today_count, BSKY_EXPR_DAILY_CAP);
		return false;
	}
	decision_set(d, VERDICT_PASS, "expression_due", "an expression is due (%d today)",
	             today_count);
	return true;
}

/* ---- the expression's invitation (§7.1) ------------------------------------------------------ */

const char *bsky_invitation_name(enum bsky_invitation i)
{
	switch (i) {
	case BSKY_INVITE_STRONG:
		return "strong";
	case BSKY_INVITE_WEAK:
		return "weak";
	default:
		return "none";
	}
}

static bool any_word(const char *s, const char *const *words, size_t n, const char **hit)
{
	for (size_t i = 0; i < n; i++)
		if (bsky_contains_word(s, words[i])) {
			if (hit)
				*hit = words[i];
			return true;
		}
	return false;
}

#define NWORDS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const invite_choice[] = {
        "prefer",   "prefers",  "preferred", "preference", "choose", "choosing",
        "chose",    "pick",     "picking",   "rather",     "which",  "between",
        "option a", "option b", "option 1",  "option 2",
};
static const char *const invite_taste[] = {
        "practical or", "speed or", "more or less", "rather have", "would you want",
};
static const char *const invite_bounded[] = {
        "what's one", "what's your", "what's the", "what is one", "what is your", "what is the",
        "do you",     "have you",    "did you",    "are you",     "would you",    "could you",
};
static const char *const invite_direct[] = {
        "what's yours", "what is yours", "how about you",
        "curious what", "wondering if",  "interested to hear",
        "love to know", "anyone else",   "does this resonate",
};
static const char *const invite_template[] = {
        "template", "templates", "checklist", "checklists", "pattern",    "patterns",
        "recipe",   "recipes",   "example",   "examples",   "here's how", "try this",
        "step",     "steps",     "tip",       "tips",
};

/* "… or X?": the last word "or" of a question is followed by one to
 * BSKY_INVITE_OR_WORDS words. */
static bool or_choice(const char *q)
{
	const char *last = NULL;
	for (const char *p = q; *p; p++)
		if ((p == q || !bsky_word_byte((unsigned char)p[-1])) && strncmp(p, "or", 2) == 0 &&
		    !bsky_word_byte((unsigned char)p[2]))
			last = p + 2;
	if (!last)
		return false;
	int words = 0;
	bool in = false;
	for (const char *p = last; *p; p++) {
		bool w = bsky_word_byte((unsigned char)*p) || *p == '\'' || *p == '-';
		if (w && !in)
			words++;
		in = w;
	}
	return words >= 1 && words <= BSKY_INVITE_OR_WORDS;
}

enum bsky_invitation bsky_invitation_classify(const char *text, struct decision *d)
{
	/* lower-cased ASCII, ’ and ‘ read as ' */
	char buf[BSKY_INVITE_MAX_BYTES + 1];
	size_t n = 0;
	for (const char *s = text ? text : ""; *s && n < BSKY_INVITE_MAX_BYTES; s++) {
		if ((unsigned char)s[0] == 0xE2 && (unsigned char)s[1] == 0x80 &&
		    ((unsigned char)s[2] == 0x98 || (unsigned char)s[2] == 0x99)) {
			buf[n++] = '\'';
			s += 2;
			continue;
		}
		buf[n++] = (char)tolower((unsigned char)*s);
	}
	buf[n] = 0;
	/* links are noted, then blanked: a '?' in a query or "example" in a
	 * host name is not an invitation */
	bool link = false;
	for (char *u = buf; (u = strstr(u, "http")) != NULL;) {
		if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) {
			u += 4;
			continue;
		}
		link = true;
		while (*u && !isspace((unsigned char)*u))
			*u++ = ' ';
	}

	bool choice = false, taste = false, bounded = false, question = false;
	const char *hit = NULL, *choice_hit = NULL, *taste_hit = NULL;
	/* sentences end at '?', '!', a new line, or a '.' before a space or the
	 * end (a dot inside a URL or a number does not end one) */
	char sent[BSKY_INVITE_MAX_BYTES + 1];
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		char c = buf[i];
		bool end = c == 0 || c == '?' || c == '!' || c == '\n' ||
		           (c == '.' && (buf[i + 1] == 0 || isspace((unsigned char)buf[i + 1])));
		if (!end)
			continue;
		if (c == '?') {
			size_t len = i - start;
			memcpy(sent, buf + start, len);
			sent[len] = 0;
			question = true;
			if (!choice && any_word(sent, invite_choice, NWORDS(invite_choice), &hit))
				choice = true, choice_hit = hit;
			if (!choice && or_choice(sent))
				choice = true, choice_hit = "or …?";
			if (!taste && any_word(sent, invite_taste, NWORDS(invite_taste), &hit))
				taste = true, taste_hit = hit;
			if (any_word(sent, invite_bounded, NWORDS(invite_bounded), NULL))
				bounded = true;
		}
		start = i + 1;
	}
	const char *direct_hit = NULL, *template_hit = NULL;
	bool direct = any_word(buf, invite_direct, NWORDS(invite_direct), &direct_hit);
	bool templ = any_word(buf, invite_template, NWORDS(invite_template), &template_hit);

	if (choice) {
		decision_set(d, VERDICT_PASS, "choice_question", "a choice question (\"%s\")",
		             choice_hit);
		return BSKY_INVITE_STRONG;
	}
	if (taste) {
		decision_set(d, VERDICT_PASS, "taste_question", "a taste question (\"%s\")",
		             taste_hit);
		return BSKY_INVITE_STRONG;
	}
	if (bounded && direct) {
		decision_set(d, VERDICT_PASS, "bounded_direct",
		             "a bounded question and a direct invitation (\"%s\")", direct_hit);
		return BSKY_INVITE_STRONG;
	}
	if (templ && link) {
		decision_set(d, VERDICT_PASS, "template_link", "a template (\"%s\") and a link",
		             template_hit);
		return BSKY_INVITE_STRONG;
	}
	const char *weak = bounded    ? "a bounded question without a direct invitation"
	                   : direct   ? "a direct invitation without a bounded question"
	                   : templ    ? "a template without a link"
	                   : link     ? "a link without a template"
	                   : question ? "a question that is neither a choice nor bounded"
	                              : NULL;
	if (weak) {
		decision_set(d, VERDICT_REJECT, "weak_invitation", "weak invitation: %s", weak);
		return BSKY_INVITE_WEAK;
	}
	decision_set(d, VERDICT_REJECT, "no_invitation",
	             "no invitation: no question, invitation phrase, template or link");
	return BSKY_INVITE_NONE;
}
