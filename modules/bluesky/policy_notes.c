/* The pure rules of notifications and replies. See policy_notes.h. */
#include "modules/bluesky/policy_notes.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/bluesky/policy_text.h"

static const char *const reason_names[] = {"mention", "reply", "quote", "like", "repost", "follow"};

enum bsky_reason bsky_reason_parse(const char *s)
{
	for (size_t i = 0; s && i < sizeof reason_names / sizeof reason_names[0]; i++)
		if (strcmp(s, reason_names[i]) == 0)
			return (enum bsky_reason)i;
	return BSKY_REASON_OTHER;
}

const char *bsky_reason_name(enum bsky_reason r)
{
	size_t i = (size_t)r;
	return i < sizeof reason_names / sizeof reason_names[0] ? reason_names[i] : "other";
}

/* ---- closings (§6.5) ------------------------------------------------------------- */

/* The closing-intent vocabulary: anywhere in the text, word-bounded. */
static const char *const closing_intent[] = {
        "stop here",
        "stopping here",
        "leaving it here",
        "closing on my",
        "closing the loop",
        "closing this",
        "see you on",
        "see you in",
        "let's keep the rest in",
        "lets keep the rest in",
        "don't loop",
        "dont loop",
        "looking forward",
        "can't wait",
        "cant wait",
};
/* Gratitude-only openers: at the start, word-bounded (§11.4). */
static const char *const gratitude_prefix[] = {
        "thanks",     "thank you",     "thx",         "ty",
        "appreciate", "perfect",       "sounds good", "sounds great",
        "great",      "awesome",       "wonderful",   "excellent",
        "amazing",    "totally",       "deal",        "love it",
        "all good",   "makes sense",   "aligned",     "nice",
        "yep",        "agreed",        "absolutely",  "definitely",
        "exactly",    "for sure",      "likewise",    "same here",
        "will do",    "on it",         "right on",    "looking forward",
        "excited to", "excited about",
};

/* "tag … on/in/when", "wait for the … PR", "don't keep loop(ing)". */
static bool closing_patterns(const char *t)
{
	for (const char *p = t; *p; p++) {
		if (p != t && bsky_word_byte((unsigned char)p[-1]))
			continue;
		if (bsky_starts_with_word(p, "tag")) {
			const char *q = p + 3;
			for (int words = 0; *q && words < 6; words++) {
				q = bsky_skip_space(q);
				if (bsky_starts_with_word(q, "on") ||
				    bsky_starts_with_word(q, "in") ||
				    bsky_starts_with_word(q, "when"))
					return true;
				while (*q && !isspace((unsigned char)*q))
					q++;
			}
		}
		if (strncasecmp(p, "wait for the", 12) == 0) {
			const char *q = p + 12;
			const char *end = strchr(q, '\n');
			size_t lim = end ? (size_t)(end - q) : strlen(q);
			if (lim > 80)
				lim = 80;
			for (size_t i = 0; i + 2 <= lim; i++)
				if ((q[i] == 'P' || q[i] == 'p') &&
				    (q[i + 1] == 'R' || q[i + 1] == 'r') &&
				    !bsky_word_byte((unsigned char)q[i + 2]) &&
				    (i == 0 || !bsky_word_byte((unsigned char)q[i - 1])))
					return true;
		}
	}
	return bsky_contains_word_prefix(t, "don't keep loop") ||
	       bsky_contains_word_prefix(t, "dont keep loop");
}

bool bsky_is_low_value_closing(const char *text)
{
	if (!text)
		return false;
	const char *t = bsky_skip_space(text);
	if (!*t || strchr(t, '?') || strstr(t, "```"))
		return false;
	size_t len = strlen(t);
	while (len && isspace((unsigned char)t[len - 1]))
		len--;
	bool intent = closing_patterns(t);
	for (size_t i = 0; !intent && i < sizeof closing_intent / sizeof closing_intent[0]; i++)
		intent = bsky_contains_word(t, closing_intent[i]);
	if (intent)
		return len < BSKY_CLOSING_GRATITUDE_MAX;
	if (len > BSKY_CLOSING_SUBSTANTIVE_BYTES)
		return false;
	for (size_t i = 0; i < sizeof gratitude_prefix / sizeof gratitude_prefix[0]; i++)
		if (bsky_starts_with_word(t, gratitude_prefix[i]))
			return true;
	return false;
}

/* ---- emoji and short acknowledgements (§6.4) ---------------------------------------- */

static bool cp_is_emoji(unsigned cp)
{
	return (cp >= 0x1F000 && cp <= 0x1FAFF) || (cp >= 0x2600 && cp <= 0x27BF) ||
	       (cp >= 0x2B00 && cp <= 0x2BFF) || (cp >= 0x2190 && cp <= 0x21FF) ||
	       (cp >= 0x2300 && cp <= 0x23FF) || cp == 0x00A9 || cp == 0x00AE || cp == 0x203C ||
	       cp == 0x2049 || cp == 0x2122 || cp == 0x3030 || cp == 0x303D;
}

static bool cp_is_emoji_glue(unsigned cp)
{
	return cp == 0x200D || cp == 0xFE0F || cp == 0xFE0E || cp == 0x20E3 ||
	       (cp >= 0xE0020 && cp <= 0xE007F);
}

bool bsky_is_emoji_only(const char *text)
{
	if (!text)
		return false;
	size_t len = strlen(text);
	bool any = false;
	for (size_t i = 0; i < len;) {
		unsigned cp;
		int n = utf8_decode(text + i, len - i, &cp);
		if (n < 0)
			return false;
		i += (size_t)n;
		if (cp < 0x80 && isspace((int)cp))
			continue;
		if (cp_is_emoji_glue(cp))
			continue;
		if (!cp_is_emoji(cp))
			return false;
		any = true;
	}
	return any;
}

/* Tokens a short text may consist of; repeatable ones may repeat
 * ("haha haha", "💯💯"). */
static const struct {
	const char *w;
	bool repeat;
} short_acks[] = {
        {"thanks", false},
        {"thx", false},
        {"ty", false},
        {"thank you", false},
        {"lol", true},
        {"lmao", true},
        {"haha", true},
        {"heh", true},
        {"\xF0\x9F\x98\x82", true},
        {"\xF0\x9F\xA4\xA3", true},
        {"nice", false},
        {"cool", false},
        {"neat", false},
        {"awesome", false},
        {"great", false},
        {"wow", false},
        {"yes", false},
        {"yeah", false},
        {"yep", false},
        {"yup", false},
        {"no", false},
        {"nope", false},
        {"nah", false},
        {"ok", false},
        {"okay", false},
        {"k", false},
        {"sure", false},
        {"right", false},
        {"same", false},
        {"mood", false},
        {"this", false},
        {"facts", false},
        {"real", false},
        {"true", false},
        {"fr", false},
        {"100", true},
        {"\xF0\x9F\x92\xAF", true},
};

bool bsky_is_short_ack(const char *text)
{
	if (!text)
		return false;
	char buf[64];
	const char *t = bsky_skip_space(text);
	size_t len = strlen(t);
	while (len &&
	       (isspace((unsigned char)t[len - 1]) || t[len - 1] == '!' || t[len - 1] == '.'))
		len--;
	if (!len || len >= sizeof buf)
		return false;
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)tolower((unsigned char)t[i]);
	buf[len] = 0;
	for (size_t k = 0; k < sizeof short_acks / sizeof short_acks[0]; k++) {
		size_t wl = strlen(short_acks[k].w);
		if (!short_acks[k].repeat) {
			if (strcmp(buf, short_acks[k].w) == 0)
				return true;
			continue;
		}
		const char *p = buf;
		int reps = 0;
		while (*p && strncmp(p, short_acks[k].w, wl) == 0) {
			p += wl;
			reps++;
			while (*p == ' ')
				p++;
		}
		if (reps > 0 && !*p)
			return true;
	}
	return false;
}

enum bsky_response bsky_should_respond(enum bsky_reason reason, bool from_owner, const char *text,
                                       struct decision *d)
{
	if (from_owner) {
		decision_set(d, VERDICT_PASS, "owner", "the owner wrote: always answered");
		return BSKY_RESPOND;
	}
	if (reason == BSKY_REASON_LIKE || reason == BSKY_REASON_FOLLOW ||
	    reason == BSKY_REASON_REPOST || reason == BSKY_REASON_OTHER) {
		decision_set(d, VERDICT_BLOCK, "acknowledgment_only",
		             "a like, repost or follow: nothing to answer");
		return BSKY_SKIP;
	}
	const char *t = text ? bsky_skip_space(text) : "";
	if (!*t) {
		decision_set(d, VERDICT_BLOCK, "empty", "the post has no text");
		return BSKY_SKIP;
	}
	size_t len = strlen(t);
	if (len < BSKY_SHORT_TEXT_BYTES) {
		if (strchr(t, '?')) {
			decision_set(d, VERDICT_PASS, "question", "a short question");
			return BSKY_RESPOND;
		}
		if (bsky_is_emoji_only(t)) {
			decision_set(d, VERDICT_REACT, "emoji_reaction",
			             "an emoji reaction: liked, not answered");
			return BSKY_LIKE;
		}
		if (bsky_is_short_ack(t)) {
			decision_set(d, VERDICT_REACT, "low_value_ack",
			             "a short acknowledgment (\"%.14s\"): liked, not answered", t);
			return BSKY_LIKE;
		}
	}
	if (bsky_is_low_value_closing(t)) {
		decision_set(d, VERDICT_REACT, "closing",
		             "closing or acknowledgment message: liked, not answered");
		return BSKY_LIKE;
	}
	if (strchr(t, '?')) {
		decision_set(d, VERDICT_PASS, "question", "it asks something");
		return BSKY_RESPOND;
	}
	if (reason == BSKY_REASON_MENTION || reason == BSKY_REASON_REPLY) {
		decision_set(d, VERDICT_PASS, "direct", "direct engagement (%s)",
		             reason == BSKY_REASON_MENTION ? "a mention" : "a reply");
		return BSKY_RESPOND;
	}
	if (reason == BSKY_REASON_QUOTE && len > 30) {
		decision_set(d, VERDICT_PASS, "quote", "a quote with something to say");
		return BSKY_RESPOND;
	}
	if (len > 50) {
		decision_set(d, VERDICT_PASS, "long", "a substantial post");
		return BSKY_RESPOND;
	}
	decision_set(d, VERDICT_PASS, "borderline", "borderline: the model judges");
	return BSKY_RESPOND;
}

int bsky_priority(const struct bsky_prio_facts *f)
{
	int s = 50;
	bool talk = f->reason == BSKY_REASON_REPLY || f->reason == BSKY_REASON_MENTION ||
	            f->reason == BSKY_REASON_QUOTE;
	if (talk && f->to_our_content)
		s += 50;
	if (f->reason == BSKY_REASON_REPLY || f->reason == BSKY_REASON_MENTION)
		s += 30;
	if (f->reason == BSKY_REASON_QUOTE)
		s += 25;
	if (f->from_owner)
		s += 50;
	if (f->known) {
		if (f->positive)
			s += 15;
		if (f->interactions >= 5)
			s += 10;
		if (!f->ever_responded)
			s += 20;
	} else {
		s += 5;
	}
	if (f->unread)
		s += 10;
	return s;
}

const char *bsky_sentiment_name(enum bsky_sentiment s)
{
	switch (s) {
	case BSKY_SENTIMENT_NEUTRAL:
		return "neutral";
	case BSKY_SENTIMENT_POSITIVE:
		return "positive";
	case BSKY_SENTIMENT_UNKNOWN:
		break;
	}
	return "unknown";
}

int bsky_sentiment_parse(const char *s)
{
	if (!s)
		return -1;
	if (strcmp(s, "unknown") == 0)
		return BSKY_SENTIMENT_UNKNOWN;
	if (strcmp(s, "neutral") == 0)
		return BSKY_SENTIMENT_NEUTRAL;
	if (strcmp(s, "positive") == 0)
		return BSKY_SENTIMENT_POSITIVE;
	return -1;
}

enum bsky_sentiment bsky_sentiment_of(const enum bsky_reason *types, size_t n,
                                      enum bsky_sentiment prev)
{
	size_t start = n > 10 ? n - 10 : 0, warm = 0;
	for (size_t i = start; i < n; i++)
		if (types[i] == BSKY_REASON_LIKE || types[i] == BSKY_REASON_REPOST ||
		    types[i] == BSKY_REASON_FOLLOW)
			warm++;
	if (warm >= 3)
		return BSKY_SENTIMENT_POSITIVE;
	if (warm >= 1)
		return BSKY_SENTIMENT_NEUTRAL;
	return prev;
}

bool bsky_rel_expired(int64_t last_ms, bool positive, uint32_t interactions, int64_t now_ms)
{
	int64_t limit = positive || interactions >= 5 ? BSKY_REL_IDLE_LONG_MS : BSKY_REL_IDLE_MS;
	return now_ms - last_ms > limit;
}

/* ---- chain -------------------------------------------------------------------------- */

int64_t bsky_chain_in(bool is_agent, int64_t carried, int64_t derived)
{
	if (!is_agent)
		return 0;
	int64_t c = 1;
	if (carried > c)
		c = carried;
	if (derived > c)
		c = derived;
	return c;
}

int64_t bsky_derived_chain(const bool *is_agent, size_t n)
{
	int64_t c = 0;
	for (size_t i = n; i > 0 && is_agent[i - 1]; i--)
		c++;
	return c;
}

/* ---- circular (§6.7) -------------------------------------------------------------- */

static const char *const circ_gratitude[] = {
        "thanks",      "thank you",    "thx",   "ty",      "appreciate", "perfect",
        "sounds good", "sounds great", "great", "awesome", "wonderful",  "excellent",
        "amazing",     "cool",         "nice",  "alright", "got it",
};
static const char *const circ_restate[] = {
        "i'll wait",      "i'll stand by",   "i'll pause",      "i'll hold", "once it's up",
        "once it's live", "once it's ready", "when it",         "when you",  "when the",
        "excited to",     "looking forward", "no need to wait", "will do",
};

enum bsky_circular bsky_circular_level(const struct bsky_thread_post *posts, size_t n)
{
	if (n < BSKY_CIRCULAR_WINDOW)
		return BSKY_CIRC_NONE;
	const struct bsky_thread_post *w = posts + (n - BSKY_CIRCULAR_WINDOW);
	int grat = 0, rest = 0;
	bool question = false, alternating = true;
	const char *a = w[0].author ? w[0].author : "", *b = NULL;
	bool two = true;
	for (size_t i = 0; i < BSKY_CIRCULAR_WINDOW; i++) {
		const char *t = w[i].text ? bsky_skip_space(w[i].text) : "";
		const char *au = w[i].author ? w[i].author : "";
		if (strchr(t, '?'))
			question = true;
		for (size_t k = 0; k < sizeof circ_gratitude / sizeof circ_gratitude[0]; k++)
			if (bsky_starts_with_word(t, circ_gratitude[k])) {
				grat++;
				break;
			}
		for (size_t k = 0; k < sizeof circ_restate / sizeof circ_restate[0]; k++)
			if (bsky_contains_word_prefix(t, circ_restate[k])) {
				rest++;
				break;
			}
		if (i > 0 && strcmp(au, w[i - 1].author ? w[i - 1].author : "") == 0)
			alternating = false;
		if (strcmp(au, a) != 0) {
			if (!b)
				b = au;
			else if (strcmp(au, b) != 0)
				two = false;
		}
	}
	if (!b)
		two = false;
	if (question || !two)
		return BSKY_CIRC_NONE;
	if (grat >= 3 && rest >= 2 && alternating)
		return BSKY_CIRC_HIGH;
	if (grat >= 2 && alternating)
		return BSKY_CIRC_MEDIUM;
	if (grat >= 2 || rest >= 3)
		return BSKY_CIRC_LOW;
	return BSKY_CIRC_NONE;
}

const char *bsky_circular_name(enum bsky_circular c)
{
	switch (c) {
	case BSKY_CIRC_LOW:
		return "low";
	case BSKY_CIRC_MEDIUM:
		return "medium";
	case BSKY_CIRC_HIGH:
		return "high";
	default:
		return "none";
	}
}

/* ---- conversations (§6.6) --------------------------------------------------------- */

static const char *const conv_state_names[] = {"new", "active", "awaiting_response", "concluded",
                                               "stale"};

const char *bsky_conv_state_name(enum bsky_conv_state s)
{
	return (unsigned)s <= BSKY_CONV_STALE ? conv_state_names[s] : "?";
}

int bsky_conv_state_parse(const char *s)
{
	for (int i = 0; s && i <= BSKY_CONV_STALE; i++)
		if (strcmp(s, conv_state_names[i]) == 0)
			return i;
	return -1;
}

void bsky_conv_init(struct bsky_conv *c, int64_t now_ms)
{
	memset(c, 0, sizeof *c);
	c->state = BSKY_CONV_NEW;
	c->first_seen_ms = now_ms;
	c->last_activity_ms = now_ms;
}

static struct bsky_participant *participant(struct bsky_conv *c, const char *did, bool add)
{
	for (size_t i = 0; i < c->nwho; i++)
		if (strcmp(c->who[i].did, did) == 0)
			return &c->who[i];
	if (!add)
		return NULL;
	size_t slot = c->nwho;
	if (c->nwho == BSKY_CONV_MAX_PARTICIPANTS) {
		slot = 0; /* replace the least recently active */
		for (size_t i = 1; i < c->nwho; i++)
			if (c->who[i].last_ms < c->who[slot].last_ms)
				slot = i;
	} else {
		c->nwho++;
	}
	memset(&c->who[slot], 0, sizeof c->who[slot]);
	snprintf(c->who[slot].did, sizeof c->who[slot].did, "%s", did);
	return &c->who[slot];
}

void bsky_conv_note_incoming(struct bsky_conv *c, const char *author, int depth, bool low_value,
                             int64_t now_ms)
{
	struct bsky_participant *p = participant(c, author ? author : "", true);
	p->replies++;
	p->last_ms = now_ms;
	if (depth > c->depth)
		c->depth = depth;
	c->last_activity_ms = now_ms;
	if (low_value && c->our_replies > 0 && now_ms - c->our_last_reply_ms < BSKY_QUICK_ACK_MS)
		c->quick_acks++;
	else if (!low_value)
		c->quick_acks = 0;
	if (c->state == BSKY_CONV_NEW || c->state == BSKY_CONV_AWAITING)
		c->state = BSKY_CONV_ACTIVE;
}

void bsky_conv_note_our_reply(struct bsky_conv *c, int depth, int64_t now_ms)
{
	c->our_replies++;
	c->our_last_reply_ms = now_ms;
	c->last_activity_ms = now_ms;
	if (depth > c->depth)
		c->depth = depth;
	if (c->state != BSKY_CONV_CONCLUDED)
		c->state = BSKY_CONV_AWAITING;
}

void bsky_conv_sync_replies(struct bsky_conv *c, int stored)
{
	c->stored = stored;
	if (c->replies_base > stored)
		c->replies_base = stored; /* the store forgot some (its bounds) */
	int ours = stored - c->replies_base;
	if (ours > c->our_replies)
		c->our_replies = ours;
}

void bsky_conv_conclude(struct bsky_conv *c, const char *author, const char *reason, int64_t now_ms)
{
	if (author && *author) {
		struct bsky_participant *p = participant(c, author, true);
		p->concluded = true;
		/* §11.28: others still talking to us keep the thread open. */
		for (size_t i = 0; i < c->nwho; i++)
			if (!c->who[i].concluded && strcmp(c->who[i].did, author) != 0 &&
			    now_ms - c->who[i].last_ms < BSKY_QUICK_ACK_MS)
				return;
	}
	c->state = BSKY_CONV_CONCLUDED;
	c->concluded_ms = now_ms;
	c->concluded_by_timeout = false;
	snprintf(c->concluded_reason, sizeof c->concluded_reason, "%s", reason ? reason : "");
}

void bsky_conv_mechanics(const struct bsky_conv *c, const struct self_mechanics *self,
                         struct self_mechanics *out)
{
	if (c->project) {
		out->max_replies_before_exit = BSKY_PROJECT_MAX_REPLIES;
		out->max_thread_depth = BSKY_PROJECT_MAX_DEPTH;
		out->silence_threshold_ms = BSKY_PROJECT_SILENCE_MS;
		out->no_response_timeout_ms = BSKY_PROJECT_NO_RESPONSE_MS;
		out->skip_low_value_acks = true;
		return;
	}
	*out = *self;
	if (out->max_replies_before_exit <= 0)
		out->max_replies_before_exit = SELF_DEFAULT_MAX_REPLIES;
	if (out->max_thread_depth <= 0)
		out->max_thread_depth = SELF_DEFAULT_MAX_DEPTH;
	if (out->silence_threshold_ms <= 0)
		out->silence_threshold_ms = SELF_DEFAULT_SILENCE_MS;
	if (out->no_response_timeout_ms <= 0)
		out->no_response_timeout_ms = SELF_DEFAULT_NO_RESPONSE_MS;
}

bool bsky_conv_should_respond(const struct bsky_conv *c, const char *author, bool from_owner,
                              bool genuine, const struct self_mechanics *self, int64_t now_ms,
                              struct decision *d)
{
	(void)now_ms;
	struct self_mechanics m;
	bsky_conv_mechanics(c, self, &m);
	const char *limit = NULL;
	char why[160] = "";
	if (c->our_replies >= m.max_replies_before_exit) {
		limit = "replies_per_thread";
		snprintf(why, sizeof why,
		         "%d replies of ours in this thread (Social Mechanics: %d)", c->our_replies,
		         m.max_replies_before_exit);
	} else if (c->depth >= m.max_thread_depth) {
		limit = "thread_depth";
		snprintf(why, sizeof why, "thread depth %d (Social Mechanics: %d)", c->depth,
		         m.max_thread_depth);
	} else if (m.skip_low_value_acks && c->quick_acks >= BSKY_QUICK_ACKS_TO_CONCLUDE) {
		limit = "back_and_forth";
		snprintf(why, sizeof why,
		         "%d quick acknowledgments in a row after our replies: a thank-you chain",
		         c->quick_acks);
	}
	if (from_owner) {
		decision_set(d, VERDICT_PASS, "owner", "the owner: answered%s%s",
		             limit ? " although " : "", limit ? why : "");
		return true;
	}
	const struct bsky_participant *p = NULL;
	for (size_t i = 0; author && i < c->nwho; i++)
		if (strcmp(c->who[i].did, author) == 0)
			p = &c->who[i];
	bool concluded = c->state == BSKY_CONV_CONCLUDED || (p && p->concluded);
	if (concluded) {
		if (!genuine) {
			decision_set(d, VERDICT_BLOCK, "concluded",
			             "the conversation is concluded (%s)",
			             c->concluded_reason[0] ? c->concluded_reason : "ended");
			return false;
		}
		if (limit) {
			decision_set(d, VERDICT_BLOCK, "concluded",
			             "concluded (%s) and %s: not reopened",
			             c->concluded_reason[0] ? c->concluded_reason : "ended", why);
			return false;
		}
		if (c->concluded_by_timeout || c->project ||
		    c->reengagements < BSKY_CASUAL_REENGAGEMENTS) {
			decision_set(d, VERDICT_PASS, "reengage",
			             "concluded (%s), but a genuine new post reopens it (%s)",
			             c->concluded_reason[0] ? c->concluded_reason : "ended",
			             c->concluded_by_timeout ? "they answered late"
			             : c->project            ? "project thread"
			                                     : "once in a casual thread");
			return true;
		}
		decision_set(
		        d, VERDICT_BLOCK, "concluded",
		        "concluded (%s) and already re-engaged %d time(s) in this casual thread",
		        c->concluded_reason[0] ? c->concluded_reason : "ended", c->reengagements);
		return false;
	}
	if (limit) {
		decision_set(d, VERDICT_REACT, limit, "%s: ending with a like", why);
		return false;
	}
	decision_set(d, VERDICT_PASS, "conversation", "%d of %d replies, depth %d of %d",
	             c->our_replies, m.max_replies_before_exit, c->depth, m.max_thread_depth);
	return true;
}

void bsky_conv_reengage(struct bsky_conv *c, bool counted)
{
	if (counted && !c->concluded_by_timeout)
		c->reengagements++;
	c->state = BSKY_CONV_ACTIVE;
	c->concluded_by_timeout = false;
	c->concluded_reason[0] = 0;
	/* a new round: the limits count from here */
	c->replies_base = c->stored > c->replies_base + c->our_replies
	                          ? c->stored
	                          : c->replies_base + c->our_replies;
	c->our_replies = 0;
	c->quick_acks = 0;
	for (size_t i = 0; i < c->nwho; i++)
		c->who[i].concluded = false;
}

bool bsky_conv_sweep(struct bsky_conv *c, const struct self_mechanics *self, int64_t now_ms,
                     struct decision *d)
{
	struct self_mechanics m;
	bsky_conv_mechanics(c, self, &m);
	if (c->state == BSKY_CONV_STALE)
		return false;
	if (c->state != BSKY_CONV_CONCLUDED && now_ms - c->last_activity_ms > BSKY_STALE_AFTER_MS) {
		c->state = BSKY_CONV_STALE;
		decision_set(d, VERDICT_INFO, "stale", "no activity for 7 days: stale");
		return true;
	}
	if (c->state == BSKY_CONV_AWAITING &&
	    now_ms - c->our_last_reply_ms > m.no_response_timeout_ms) {
		c->state = BSKY_CONV_CONCLUDED;
		c->concluded_ms = now_ms;
		c->concluded_by_timeout = true;
		snprintf(c->concluded_reason, sizeof c->concluded_reason, "no response");
		decision_set(d, VERDICT_INFO, "no_response",
		             "no answer for %" PRId64
		             " min after our reply: concluded quietly (a late "
		             "answer reopens it)",
		             (now_ms - c->our_last_reply_ms) / 60000);
		return true;
	}
	if (c->state == BSKY_CONV_ACTIVE && c->nwho > 0) {
		for (size_t i = 0; i < c->nwho; i++)
			if (now_ms - c->who[i].last_ms <= m.silence_threshold_ms)
				return false;
		c->state = BSKY_CONV_CONCLUDED;
		c->concluded_ms = now_ms;
		c->concluded_by_timeout = true;
		snprintf(c->concluded_reason, sizeof c->concluded_reason, "silence");
		decision_set(d, VERDICT_INFO, "silence",
		             "everyone else silent longer than %" PRId64 " min: concluded quietly",
		             m.silence_threshold_ms / 60000);
		return true;
	}
	return false;
}

bool bsky_self_check_to_like(const struct bsky_conv *c, const char *text)
{
	return c && c->our_replies >= 1 && bsky_is_low_value_closing(text);
}

/* ---- the replies already under a post ---------------------------------------------------- */

enum bsky_reply_check bsky_reply_check(const struct bsky_reply_facts *f, bool from_owner,
                                       int64_t now_ms, struct decision *d)
{
	if (f->own_reply_uri && *f->own_reply_uri) {
		decision_set(
		        d, VERDICT_BLOCK, "already_replied",
		        "BLOCKED: already replied — our reply %s is under this post: not again",
		        f->own_reply_uri);
		return BSKY_REPLY_ALREADY;
	}
	int64_t age = now_ms - f->peer_reply_ms;
	if (f->peer_handle && *f->peer_handle && age <= BSKY_PEER_REPLY_WINDOW_MS &&
	    age >= -BSKY_PEER_REPLY_WINDOW_MS) {
		if (!from_owner) {
			decision_set(d, VERDICT_REACT, "peer_replied",
			             "CONVERTED TO LIKE: peer @%s replied to this post %" PRId64
			             " s ago (within %lld s): a like, not a second voice",
			             f->peer_handle[0] == '@' ? f->peer_handle + 1 : f->peer_handle,
			             (age > 0 ? age : 0) / 1000, BSKY_PEER_REPLY_WINDOW_MS / 1000);
			return BSKY_REPLY_PEER_LIKE;
		}
		decision_set(d, VERDICT_PASS, "thread_replies",
		             "peer @%s replied %" PRId64 " s ago, but the owner asked us: answered",
		             f->peer_handle[0] == '@' ? f->peer_handle + 1 : f->peer_handle,
		             (age > 0 ? age : 0) / 1000);
		return BSKY_REPLY_GO;
	}
	decision_set(d, VERDICT_PASS, "thread_replies",
	             "no reply of ours under this post, no known peer's in the last %lld s",
	             BSKY_PEER_REPLY_WINDOW_MS / 1000);
	return BSKY_REPLY_GO;
}

/* ---- rituals ------------------------------------------------------------------------------ */

enum bsky_ritual_role bsky_ritual_role(const char *agent_name, const char *thread_uri)
{
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "%s%s", agent_name ? agent_name : "",
	                 thread_uri ? thread_uri : "");
	size_t len = n < 0 ? 0 : (size_t)n >= sizeof buf ? sizeof buf - 1 : (size_t)n;
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(buf, len, hex);
	char first[9];
	memcpy(first, hex, 8);
	first[8] = 0;
	unsigned long v = strtoul(first, NULL, 16);
	return (enum bsky_ritual_role)(v % 3);
}

const char *bsky_ritual_role_name(enum bsky_ritual_role r)
{
	switch (r) {
	case BSKY_ROLE_ANALYST:
		return "analyst";
	case BSKY_ROLE_CRITIC:
		return "critic";
	default:
		return "observer";
	}
}

/* ---- commitments from our replies (§6.12) ------------------------------------------------------
 */

static bool blank_str(const char *s)
{
	return !s || !*bsky_skip_space(s);
}

static const char *first_str(const char *a, const char *b_, const char *c)
{
	return !blank_str(a) ? a : !blank_str(b_) ? b_ : !blank_str(c) ? c : NULL;
}

cJSON *bsky_commitment_params(const struct bsky_promise *p, const struct bsky_promise_source *src,
                              bool social_only, struct decision *d)
{
	static const char *const types[] = {"create_issue", "create_plan", "comment_issue",
	                                    "post_bluesky"};
	int t = -1;
	for (int i = 0; i < 4; i++)
		if (p->type && strcmp(p->type, types[i]) == 0)
			t = i;
	if (!src || !src->uri || strncmp(src->uri, "at://", 5) != 0 || blank_str(src->cid)) {
		decision_set(d, VERDICT_REJECT, "commitment_source",
		             "the post we replied to has no at:// URI and CID: the promise cannot "
		             "be traced to its thread");
		return NULL;
	}
	if (t < 0) {
		decision_set(d, VERDICT_REJECT, "commitment_type",
		             "'%.60s' is not a commitment type (create_issue, create_plan, "
		             "comment_issue, post_bluesky)",
		             p->type ? p->type : "");
		return NULL;
	}
	bool github = t != 3;
	if (github && social_only) {
		decision_set(d, VERDICT_REJECT, "social_only",
		             "%s: a social-only agent takes no GitHub commitments from Bluesky",
		             types[t]);
		return NULL;
	}
	const char *slash = p->repo ? strchr(p->repo, '/') : NULL;
	if (github && (!slash || slash == p->repo || !slash[1] || strchr(slash + 1, '/'))) {
		decision_set(
		        d, VERDICT_REJECT, "commitment_no_repo",
		        "%s names no repository (owner/name, got \"%.80s\"): it could never be "
		        "fulfilled",
		        types[t], p->repo ? p->repo : "");
		return NULL;
	}
	if (t == 2 && p->issue_number <= 0) {
		decision_set(d, VERDICT_REJECT, "commitment_no_issue",
		             "comment_issue in %s names no issue number", p->repo);
		return NULL;
	}
	const char *body = first_str(p->description, p->content, p->title);
	const char *title = first_str(p->title, p->description, p->content);
	const char *text = first_str(p->content, p->description, p->title);
	if (!body) {
		decision_set(d, VERDICT_REJECT, "commitment_empty",
		             "%s says nothing (no title, description or content)", types[t]);
		return NULL;
	}
	if (t == 3) {
		size_t g = utf8_graphemes(text, strlen(text));
		if (g > BSKY_POST_MAX_GRAPHEMES) {
			decision_set(d, VERDICT_REJECT, "commitment_too_long",
			             "post_bluesky text has %zu graphemes (Bluesky takes %d)", g,
			             BSKY_POST_MAX_GRAPHEMES);
			return NULL;
		}
	}
	cJSON *o = cJSON_CreateObject();
	if (github) {
		char owner[128];
		snprintf(owner, sizeof owner, "%.*s", (int)(slash - p->repo), p->repo);
		cJSON_AddStringToObject(o, "owner", owner);
		cJSON_AddStringToObject(o, "repo", slash + 1);
	}
	switch (t) {
	case 0:
		cJSON_AddStringToObject(o, "title", title);
		cJSON_AddStringToObject(o, "body", body);
		break;
	case 1:
		cJSON_AddStringToObject(o, "title", title);
		cJSON_AddStringToObject(o, "goal", body);
		cJSON_AddStringToObject(o, "context", "promised in a Bluesky thread");
		cJSON_AddItemToObject(o, "tasks", cJSON_CreateArray());
		break;
	case 2:
		cJSON_AddNumberToObject(o, "issue_number", (double)p->issue_number);
		cJSON_AddStringToObject(o, "body", body);
		break;
	default:
		cJSON_AddStringToObject(o, "text", text);
		break;
	}
	cJSON_AddStringToObject(o, "sourceThreadUri", src->uri);
	cJSON_AddStringToObject(o, "sourceThreadCid", src->cid);
	cJSON_AddStringToObject(o, "sourceRootUri",
	                        src->root_uri && *src->root_uri ? src->root_uri : src->uri);
	cJSON_AddStringToObject(o, "sourceRootCid",
	                        src->root_cid && *src->root_cid ? src->root_cid : src->cid);
	decision_set(d, VERDICT_PASS, "commitment", "%s promised in %s", types[t], src->uri);
	return o;
}
