/* event — one platform-neutral message (see event.h). */
#include "modules/conversation/event.h"

#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/xalloc.h"

static const char *const platform_names[CONV_PLATFORM_COUNT] = {
        [CONV_PLATFORM_SPACE] = "space",
        [CONV_PLATFORM_BLUESKY] = "bluesky",
        [CONV_PLATFORM_GITHUB] = "github",
        [CONV_PLATFORM_OWNER] = "owner",
};

static const char *const author_kind_names[CONV_AUTHOR_COUNT] = {
        [CONV_AUTHOR_SELF] = "self",   [CONV_AUTHOR_OWNER] = "owner", [CONV_AUTHOR_HOST] = "host",
        [CONV_AUTHOR_HUMAN] = "human", [CONV_AUTHOR_PEER] = "peer",
};

char *conv_text_dup(const char *s, size_t len, size_t max, size_t *kept)
{
	if (!s)
		len = 0;
	size_t n = utf8_cut(s, len, max);
	char *out = xmalloc(n + 1);
	if (n)
		memcpy(out, s, n);
	out[n] = '\0';
	if (kept)
		*kept = n;
	return out;
}

static char *dup_or_empty(const char *s)
{
	return xstrdup(s ? s : "");
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void conv_event_init(struct conv_event *ev, const struct conv_event_src *src)
{
	memset(ev, 0, sizeof *ev);
	ev->platform = src->platform;
	ev->conversation = dup_or_empty(src->conversation);
	ev->message_id = dup_or_empty(src->message_id);
	ev->parent_id = dup_or_null(src->parent_id);
	ev->thread_id = dup_or_null(src->thread_id);
	ev->author_id = dup_or_empty(src->author_id);
	ev->author_name = dup_or_empty(src->author_name);
	ev->author_kind = src->author_kind;
	ev->is_bot = src->is_bot;
	ev->chain = src->chain;
	ev->chain_explicit = src->chain_explicit;
	ev->text = conv_text_dup(src->text, src->text_len, CONV_TEXT_MAX_BYTES, &ev->text_len);
	size_t na = src->addressed ? src->naddressed : 0;
	if (na > CONV_MAX_ADDRESSED)
		na = CONV_MAX_ADDRESSED;
	for (size_t i = 0; i < na; i++)
		ev->addressed[i] = dup_or_empty(src->addressed[i]);
	ev->naddressed = na;
	ev->addressed_me = src->addressed_me;
	ev->time_ms = src->time_ms;
	ev->from_history = src->from_history;
	ev->thread_depth = src->thread_depth;
}

void conv_event_copy(struct conv_event *dst, const struct conv_event *src)
{
	struct conv_event_src s = {
	        .platform = src->platform,
	        .conversation = src->conversation,
	        .message_id = src->message_id,
	        .parent_id = src->parent_id,
	        .thread_id = src->thread_id,
	        .author_id = src->author_id,
	        .author_name = src->author_name,
	        .author_kind = src->author_kind,
	        .is_bot = src->is_bot,
	        .chain = src->chain,
	        .chain_explicit = src->chain_explicit,
	        .text = src->text,
	        .text_len = src->text_len,
	        .addressed = (const char *const *)src->addressed,
	        .naddressed = src->naddressed,
	        .addressed_me = src->addressed_me,
	        .time_ms = src->time_ms,
	        .from_history = src->from_history,
	        .thread_depth = src->thread_depth,
	};
	conv_event_init(dst, &s);
}

void conv_event_free(struct conv_event *ev)
{
	if (!ev)
		return;
	free(ev->conversation);
	free(ev->message_id);
	free(ev->parent_id);
	free(ev->thread_id);
	free(ev->author_id);
	free(ev->author_name);
	free(ev->text);
	for (size_t i = 0; i < ev->naddressed && i < CONV_MAX_ADDRESSED; i++)
		free(ev->addressed[i]);
	memset(ev, 0, sizeof *ev);
}

const char *conv_platform_name(enum conv_platform p)
{
	if ((int)p < 0 || p >= CONV_PLATFORM_COUNT)
		return "unknown";
	return platform_names[p];
}

int conv_platform_parse(const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < CONV_PLATFORM_COUNT; i++)
		if (strcmp(s, platform_names[i]) == 0)
			return i;
	return -1;
}

const char *conv_author_kind_name(enum conv_author_kind k)
{
	if ((int)k < 0 || k >= CONV_AUTHOR_COUNT)
		return "unknown";
	return author_kind_names[k];
}

int conv_author_kind_parse(const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < CONV_AUTHOR_COUNT; i++)
		if (strcmp(s, author_kind_names[i]) == 0)
			return i;
	return -1;
}

bool conv_author_is_person(enum conv_author_kind k)
{
	return k == CONV_AUTHOR_OWNER || k == CONV_AUTHOR_HOST || k == CONV_AUTHOR_HUMAN;
}
