/* A reply in a known thread: its place and its text (policy_thread.h). */
#include "modules/bluesky/policy_thread.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

#define CONV_PREFIX "bluesky:"
#define ELLIPSIS    "\xe2\x80\xa6" /* U+2026, one grapheme */

/* ---- the place ------------------------------------------------------------------------------ */

/* The newest message of conversation by time (a later one stored wins a
 * tie: history posts have no time), by author when author is not NULL,
 * else by anyone but us. */
static const struct conv_message *latest(const struct conv_store *s, const char *conversation,
                                         const char *author)
{
	const struct conv_message *best = NULL;
	size_t n = conv_store_message_count(s, conversation);
	for (size_t i = 0; i < n; i++) {
		const struct conv_message *m = conv_store_message_at(s, conversation, i);
		if (!m || !m->message_id || strncmp(m->message_id, "at://", 5) != 0)
			continue;
		if (author ? !m->author_id || strcmp(m->author_id, author) != 0
		           : m->author_kind == CONV_AUTHOR_SELF)
			continue;
		if (!best || m->time_ms >= best->time_ms)
			best = m;
	}
	return best;
}

int bsky_thread_pick(const struct conv_store *s, const char *thread, struct bsky_thread_target *t,
                     struct decision *d)
{
	memset(t, 0, sizeof *t);
	const char *uri = thread;
	if (uri && strncmp(uri, CONV_PREFIX, strlen(CONV_PREFIX)) == 0)
		uri += strlen(CONV_PREFIX);
	if (!uri || strncmp(uri, "at://", 5) != 0 || strlen(uri) >= BSKY_THREAD_URI_MAX ||
	    strpbrk(uri, " \t\r\n")) {
		decision_set(d, VERDICT_REJECT, "thread_name",
		             "\"%.80s\" does not name a Bluesky thread (an at:// URI)",
		             thread ? thread : "");
		return -1;
	}
	char key[sizeof t->conversation];
	snprintf(key, sizeof key, CONV_PREFIX "%s", uri);
	const char *conv = NULL;
	size_t nc = s ? conv_store_count(s) : 0;
	for (size_t i = 0; i < nc && !conv; i++) {
		const char *k = conv_store_key_at(s, i, NULL, NULL);
		if (k && strcmp(k, key) == 0)
			conv = k; /* the thread's root */
	}
	for (size_t i = 0; i < nc && !conv; i++) {
		const char *k = conv_store_key_at(s, i, NULL, NULL);
		if (k && strncmp(k, CONV_PREFIX "at://", strlen(CONV_PREFIX) + 5) == 0 &&
		    conv_store_find(s, k, uri))
			conv = k; /* a post in it */
	}
	if (!conv) {
		decision_set(
		        d, VERDICT_REJECT, "thread_unknown",
		        "the thread of %.200s is not in the conversations (never seen here, or "
		        "forgotten): nothing to answer under",
		        uri);
		return -1;
	}
	snprintf(t->conversation, sizeof t->conversation, "%s", conv);
	snprintf(t->root, sizeof t->root, "%s", conv + strlen(CONV_PREFIX));
	/* a post in the thread names who asked; the root (or the key) does not:
	 * a thread is opened by anyone, the asking comes later */
	const struct conv_message *named =
	        strcmp(uri, t->root) != 0 ? conv_store_find(s, conv, uri) : NULL;
	const char *asker = named && named->author_kind != CONV_AUTHOR_SELF && named->author_id
	                            ? named->author_id
	                            : NULL;
	if (!asker) {
		const struct conv_message *m = latest(s, conv, NULL);
		asker = m ? m->author_id : NULL;
	}
	const struct conv_message *parent = asker ? latest(s, conv, asker) : NULL;
	if (!parent) {
		decision_set(
		        d, VERDICT_REJECT, "thread_no_asker",
		        "only our own posts are known in the thread of %.200s: no one to answer",
		        t->root);
		return -1;
	}
	snprintf(t->asker, sizeof t->asker, "%s", asker);
	snprintf(t->parent, sizeof t->parent, "%s", parent->message_id);
	decision_set(d, VERDICT_PASS, "thread_known",
	             "the answer goes under %.200s (the latest post of %.80s in the thread)",
	             t->parent, t->asker);
	return 0;
}

/* ---- the text ------------------------------------------------------------------------------- */

static bool space_at(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The end of a link that starts at i (after the start or a space / an
 * opening bracket), or 0. A link runs to the next space. */
static size_t link_end(const char *s, size_t len, size_t i)
{
	if (i > 0 && !space_at(s[i - 1]) && s[i - 1] != '(' && s[i - 1] != '<')
		return 0;
	if (strncmp(s + i, "https://", 8) != 0 && strncmp(s + i, "http://", 7) != 0)
		return 0;
	size_t e = i;
	while (e < len && !space_at(s[e]))
		e++;
	return e;
}

/* The bytes of the first n graphemes of s[0..len), ended at a word
 * boundary when one lies in the second half, without trailing spaces or
 * joining punctuation. */
static size_t cut_words(const char *s, size_t len, size_t n)
{
	size_t b = utf8_truncate_graphemes(s, len, n);
	if (b < len && !space_at(s[b])) {
		size_t w = b;
		while (w > 0 && !space_at(s[w - 1]))
			w--;
		if (w > b / 2)
			b = w;
	}
	while (b > 0 && (space_at(s[b - 1]) || strchr(",;:-(", s[b - 1])))
		b--;
	return b;
}

char *bsky_thread_fit(const char *text, size_t max, struct decision *d)
{
	size_t len = text ? strlen(text) : 0;
	while (len && space_at(text[len - 1]))
		len--;
	size_t g = len ? utf8_graphemes(text, len) : 0;
	if (!g || !max) {
		decision_set(d, VERDICT_REJECT, "text_bound", "nothing to say: the text is empty");
		return NULL;
	}
	if (g <= max) {
		decision_set(d, VERDICT_PASS, "text_bound", "%zu graphemes fit (at most %zu)", g,
		             max);
		return xstrndup(text, len);
	}
	/* the links: the first one, and the last one's end */
	size_t first = len, first_end = 0, last_end = 0;
	for (size_t i = 0; i < len; i++) {
		size_t e = link_end(text, len, i);
		if (!e)
			continue;
		if (first == len) {
			first = i;
			first_end = e;
		}
		last_end = e;
		i = e;
	}
	const char *links = text + first;
	size_t nlinks = 0;
	if (first < len) {
		nlinks = last_end - first;
		if (utf8_graphemes(links, nlinks) + 2 > max)
			nlinks = first_end - first; /* the first link alone */
		if (utf8_graphemes(links, nlinks) > max) {
			decision_set(d, VERDICT_REJECT, "text_bound",
			             "the link alone is more than %zu graphemes: not said", max);
			return NULL;
		}
	}
	size_t gl = nlinks ? utf8_graphemes(links, nlinks) : 0;
	struct strbuf sb;
	sb_init(&sb, len + 16);
	/* the words before the links, with "…" and a space before the links */
	size_t head = first < len ? first : len;
	size_t room = max >= gl + (nlinks ? 2 : 1) ? max - gl - (nlinks ? 2 : 1) : 0;
	size_t kept = room ? cut_words(text, head, room) : 0;
	if (kept) {
		sb_append(&sb, text, kept);
		sb_puts(&sb, ELLIPSIS);
		if (nlinks)
			sb_puts(&sb, " ");
	}
	sb_append(&sb, links, nlinks);
	if (!sb.len) {
		sb_free(&sb);
		decision_set(d, VERDICT_REJECT, "text_bound",
		             "nothing of the text fits in %zu graphemes", max);
		return NULL;
	}
	char *out = sb_detach(&sb);
	decision_set(d, VERDICT_EDIT, "text_bound",
	             "cut from %zu to %zu graphemes (at most %zu), the link%s kept whole", g,
	             utf8_graphemes(out, strlen(out)), max, nlinks ? "" : " (none)");
	return out;
}
