/* The pure rules of the agent's life on Bluesky. See policy.h. */
#include "modules/bluesky/policy.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/utf8.h"
#include "common/xalloc.h"

/* ---- small text helpers ------------------------------------------------------- */

static bool is_word_byte(unsigned char c)
{
	return isalnum(c) || c == '_' || c >= 0x80;
}

static const char *skip_space(const char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

/* Case-insensitive: does s start with the ASCII word w, followed by a word
 * boundary (end, or a byte that cannot continue a word)? */
static bool starts_with_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	if (strncasecmp(s, w, n) != 0)
		return false;
	return !is_word_byte((unsigned char)s[n]);
}

/* Case-insensitive word-bounded search of phrase w in s. */
static bool contains_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = s; *p; p++) {
		if (p != s && is_word_byte((unsigned char)p[-1]))
			continue;
		if (strncasecmp(p, w, n) == 0 && !is_word_byte((unsigned char)p[n]))
			return true;
	}
	return false;
}

/* Case-insensitive search without boundary at the end (for prefixes like
 * "loop" in "looping"). */
static bool contains_word_prefix(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = s; *p; p++) {
		if (p != s && is_word_byte((unsigned char)p[-1]))
			continue;
		if (strncasecmp(p, w, n) == 0)
			return true;
	}
	return false;
}

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
		if (p != t && is_word_byte((unsigned char)p[-1]))
			continue;
		if (starts_with_word(p, "tag")) {
			const char *q = p + 3;
			for (int words = 0; *q && words < 6; words++) {
				q = skip_space(q);
				if (starts_with_word(q, "on") || starts_with_word(q, "in") ||
				    starts_with_word(q, "when"))
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
				    !is_word_byte((unsigned char)q[i + 2]) &&
				    (i == 0 || !is_word_byte((unsigned char)q[i - 1])))
					return true;
		}
	}
	return contains_word_prefix(t, "don't keep loop") ||
	       contains_word_prefix(t, "dont keep loop");
}

bool bsky_is_low_value_closing(const char *text)
{
	if (!text)
		return false;
	const char *t = skip_space(text);
	if (!*t || strchr(t, '?') || strstr(t, "```"))
		return false;
	size_t len = strlen(t);
	while (len && isspace((unsigned char)t[len - 1]))
		len--;
	bool intent = closing_patterns(t);
	for (size_t i = 0; !intent && i < sizeof closing_intent / sizeof closing_intent[0]; i++)
		intent = contains_word(t, closing_intent[i]);
	if (intent)
		return len < BSKY_CLOSING_GRATITUDE_MAX;
	if (len > BSKY_CLOSING_SUBSTANTIVE_BYTES)
		return false;
	for (size_t i = 0; i < sizeof gratitude_prefix / sizeof gratitude_prefix[0]; i++)
		if (starts_with_word(t, gratitude_prefix[i]))
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
	const char *t = skip_space(text);
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
	const char *t = text ? skip_space(text) : "";
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
		const char *t = w[i].text ? skip_space(w[i].text) : "";
		const char *au = w[i].author ? w[i].author : "";
		if (strchr(t, '?'))
			question = true;
		for (size_t k = 0; k < sizeof circ_gratitude / sizeof circ_gratitude[0]; k++)
			if (starts_with_word(t, circ_gratitude[k])) {
				grat++;
				break;
			}
		for (size_t k = 0; k < sizeof circ_restate / sizeof circ_restate[0]; k++)
			if (contains_word_prefix(t, circ_restate[k])) {
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

/* ---- pacing ------------------------------------------------------------------------------ */

void bsky_pacing_init(struct bsky_pacing *p)
{
	memset(p, 0, sizeof *p);
	p->gap_ms[BSKY_ACT_POST] = BSKY_PACE_POST_MS;
	p->gap_ms[BSKY_ACT_REPLY] = BSKY_PACE_REPLY_MS;
	p->gap_ms[BSKY_ACT_LIKE] = BSKY_PACE_LIKE_MS;
	p->gap_ms[BSKY_ACT_FOLLOW] = BSKY_PACE_FOLLOW_MS;
	p->any_gap_ms = BSKY_PACE_ANY_MS;
}

int64_t bsky_pacing_wait(const struct bsky_pacing *p, enum bsky_action a, int64_t now_ms)
{
	int64_t w = 0;
	if ((unsigned)a >= BSKY_ACT_COUNT)
		return 0;
	if (p->last_ms[a] && p->last_ms[a] + p->gap_ms[a] > now_ms)
		w = p->last_ms[a] + p->gap_ms[a] - now_ms;
	if (p->last_any_ms && p->last_any_ms + p->any_gap_ms > now_ms &&
	    p->last_any_ms + p->any_gap_ms - now_ms > w)
		w = p->last_any_ms + p->any_gap_ms - now_ms;
	return w;
}

void bsky_pacing_note(struct bsky_pacing *p, enum bsky_action a, int64_t now_ms)
{
	if ((unsigned)a >= BSKY_ACT_COUNT)
		return;
	p->last_ms[a] = now_ms;
	p->last_any_ms = now_ms;
}

const char *bsky_action_name(enum bsky_action a)
{
	static const char *n[] = {"post", "reply", "like", "follow"};
	return (unsigned)a < BSKY_ACT_COUNT ? n[a] : "?";
}

/* ---- feed hygiene -------------------------------------------------------------------------- */

static bool bare_url_at(const char *p)
{
	/* domain.tld/path: letters/digits/-/. then a dot-label, then '/' */
	const char *q = p;
	bool dot = false;
	while (*q && (isalnum((unsigned char)*q) || *q == '-' || *q == '.')) {
		if (*q == '.')
			dot = true;
		q++;
	}
	return dot && *q == '/' && q > p;
}

size_t bsky_normalize(const char *text, char *out)
{
	size_t o = 0;
	bool space = true; /* collapse leading whitespace */
	const char *p = text ? text : "";
	while (*p && o < BSKY_NORM_MAX_BYTES) {
		unsigned char c = (unsigned char)*p;
		bool at_start = p == text || isspace((unsigned char)p[-1]) || p[-1] == '(';
		if (c == '@' && (isalnum((unsigned char)p[1]) || p[1] == '_')) {
			p++;
			while (*p &&
			       (isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == '-'))
				p++;
			continue;
		}
		if ((strncasecmp(p, "http://", 7) == 0 || strncasecmp(p, "https://", 8) == 0) ||
		    (at_start && bare_url_at(p))) {
			while (*p && !isspace((unsigned char)*p))
				p++;
			continue;
		}
		if (isspace(c)) {
			if (!space) {
				out[o++] = ' ';
				space = true;
			}
			p++;
			continue;
		}
		out[o++] = (char)tolower(c);
		space = false;
		p++;
	}
	while (o && out[o - 1] == ' ')
		o--;
	/* do not end inside a UTF-8 sequence (nor on a stray lead byte of
	 * invalid input): drop the last sequence until it is whole */
	for (;;) {
		size_t k = o;
		while (k && ((unsigned char)out[k - 1] & 0xC0) == 0x80)
			k--;
		if (k == 0)
			break;
		unsigned char lead = (unsigned char)out[k - 1];
		if (lead < 0x80)
			break;
		size_t need = lead >= 0xF8   ? 99
		              : lead >= 0xF0 ? 4
		              : lead >= 0xE0 ? 3
		              : lead >= 0xC0 ? 2
		                             : 99;
		if (o - (k - 1) >= need)
			break;
		o = k - 1;
	}
	out[o] = 0;
	return o;
}

static int cmp_created(const struct bsky_feed_item *items, size_t a, size_t b)
{
	if (items[a].created_ms != items[b].created_ms)
		return items[a].created_ms < items[b].created_ms ? -1 : 1;
	return a < b ? -1 : (a > b);
}

static bool same_scope(const struct bsky_feed_item *x, const struct bsky_feed_item *y)
{
	if (!x->root_uri || !y->root_uri)
		return !x->root_uri && !y->root_uri;
	return strcmp(x->root_uri, y->root_uri) == 0;
}

size_t bsky_prune_plan(const struct bsky_feed_item *items, size_t n, enum bsky_prune_why *why)
{
	size_t lim = n < BSKY_PRUNE_MAX_ITEMS ? n : BSKY_PRUNE_MAX_ITEMS;
	char(*norm)[BSKY_NORM_MAX_BYTES + 1] = xcalloc(lim ? lim : 1, sizeof *norm);
	for (size_t i = 0; i < n; i++)
		why[i] = BSKY_PRUNE_KEEP;
	for (size_t i = 0; i < lim; i++)
		bsky_normalize(items[i].text, norm[i]);
	size_t del = 0;
	/* pass 1: exact duplicates, keep the oldest of each group */
	for (size_t i = 0; i < lim; i++) {
		if (items[i].is_repost || !norm[i][0])
			continue;
		for (size_t j = 0; j < lim; j++) {
			if (j == i || items[j].is_repost || !same_scope(&items[i], &items[j]) ||
			    strcmp(norm[i], norm[j]) != 0)
				continue;
			if (cmp_created(items, j, i) < 0) { /* an older copy exists */
				why[i] = BSKY_PRUNE_DUPLICATE;
				del++;
				break;
			}
		}
	}
	/* pass 2: thank-you chains per root, keep the first closing */
	for (size_t i = 0; i < lim; i++) {
		if (why[i] != BSKY_PRUNE_KEEP || items[i].is_repost || !items[i].root_uri ||
		    !bsky_is_low_value_closing(items[i].text))
			continue;
		for (size_t j = 0; j < lim; j++) {
			if (j == i || items[j].is_repost || !items[j].root_uri ||
			    why[j] == BSKY_PRUNE_DUPLICATE || !same_scope(&items[i], &items[j]) ||
			    !bsky_is_low_value_closing(items[j].text))
				continue;
			if (cmp_created(items, j, i) < 0) {
				why[i] = BSKY_PRUNE_THANKS_CHAIN;
				del++;
				break;
			}
		}
	}
	free(norm);
	return del;
}

const char *bsky_prune_why_name(enum bsky_prune_why w)
{
	switch (w) {
	case BSKY_PRUNE_DUPLICATE:
		return "duplicate";
	case BSKY_PRUNE_THANKS_CHAIN:
		return "thank-you-chain";
	default:
		return "keep";
	}
}

/* ---- peers ------------------------------------------------------------------------------ */

static bool github_login_ok(const char *s, size_t n)
{
	if (n == 0 || n >= BSKY_GITHUB_NAME_MAX || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

int bsky_identity_text(const char *github, char *out, size_t cap)
{
	if (!github || !github_login_ok(github, strlen(github)))
		return -1;
	int n = snprintf(out, cap,
	                 BSKY_IDENTITY_MARKER "`%s` I am excited to use GitHub to work on projects "
	                                      "with my friends! https://github.com/%s",
	                 github, github);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

bool bsky_is_identity_post(const char *text)
{
	return text &&
	       strncmp(skip_space(text), BSKY_IDENTITY_MARKER, strlen(BSKY_IDENTITY_MARKER)) == 0;
}

static int take_login(const char *s, size_t n, char out[BSKY_GITHUB_NAME_MAX])
{
	if (!github_login_ok(s, n))
		return -1;
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}

int bsky_identity_github(const char *text, char out[BSKY_GITHUB_NAME_MAX])
{
	if (!text)
		return -1;
	/* `name` (on GitHub, or the identity post's own shape) */
	const char *b = strchr(text, '`');
	if (b) {
		const char *e = strchr(b + 1, '`');
		if (e && take_login(b + 1, (size_t)(e - b - 1), out) == 0)
			return 0;
	}
	/* github.com/<name> with one path segment */
	for (const char *p = text; (p = strcasestr(p, "github.com/")) != NULL; p++) {
		const char *s = p + 11;
		size_t n = 0;
		while (isalnum((unsigned char)s[n]) || s[n] == '-')
			n++;
		char end = s[n];
		if ((end == 0 || isspace((unsigned char)end) || end == ')' || end == ',' ||
		     end == '.') &&
		    take_login(s, n, out) == 0)
			return 0;
	}
	/* I'm / I am <name> on GitHub */
	static const char *lead[] = {"I'm ", "I am "};
	for (size_t k = 0; k < 2; k++) {
		for (const char *p = text; (p = strcasestr(p, lead[k])) != NULL; p++) {
			const char *s = p + strlen(lead[k]);
			size_t n = 0;
			while (isalnum((unsigned char)s[n]) || s[n] == '-')
				n++;
			if (strncasecmp(s + n, " on GitHub", 10) == 0 && take_login(s, n, out) == 0)
				return 0;
		}
	}
	return -1;
}

int bsky_announce_vars(const char *handle, const char *github, char *handle_out, size_t hcap,
                       char *url_out, size_t ucap)
{
	if (!handle || !*handle || !github || !github_login_ok(github, strlen(github)))
		return -1;
	const char *h = handle[0] == '@' ? handle + 1 : handle;
	int a = snprintf(handle_out, hcap, "%s", h);
	int b = snprintf(url_out, ucap, "https://github.com/%s", github);
	return !*h || a < 0 || (size_t)a >= hcap || b < 0 || (size_t)b >= ucap ? -1 : 0;
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
		if (contains_word(s, words[i])) {
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
		if ((p == q || !is_word_byte((unsigned char)p[-1])) && strncmp(p, "or", 2) == 0 &&
		    !is_word_byte((unsigned char)p[2]))
			last = p + 2;
	if (!last)
		return false;
	int words = 0;
	bool in = false;
	for (const char *p = last; *p; p++) {
		bool w = is_word_byte((unsigned char)*p) || *p == '\'' || *p == '-';
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

/* ---- commitments from our replies (§6.12) ------------------------------------------------------
 */

static bool blank_str(const char *s)
{
	return !s || !*skip_space(s);
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
