/* Duplicate suppression over the last sends; see dedup.h. */
#include "modules/outbound/dedup.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/strbuf.h"
#include "common/utf8.h"

void dedup_init(struct dedup *d)
{
	memset(d, 0, sizeof *d);
}

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Appends the normalised chunk (no NUL inside) to sb; *pending_space
 * carries a whitespace run across chunks. */
static void put_normalised(struct strbuf *sb, size_t start, const char *chunk, size_t len,
                           bool *pending_space)
{
	char *folded = utf8_nfkc_casefold(chunk, len);
	const char *src = folded ? folded : chunk;
	size_t slen = folded ? strlen(folded) : len;
	for (size_t i = 0; i < slen; i++) {
		unsigned char c = (unsigned char)src[i];
		if (is_ws(c)) {
			*pending_space = sb->len > start;
			continue;
		}
		if (*pending_space)
			sb_putc(sb, ' ');
		*pending_space = false;
		sb_putc(sb, (char)c);
	}
	free(folded);
}

static void digest(const char *target, const char *text, size_t len, unsigned char out[32])
{
	if (!text) {
		text = "";
		len = 0;
	}
	struct strbuf sb;
	sb_init(&sb, STRBUF_DEFAULT_MAX);
	sb_puts(&sb, target ? target : "");
	sb_putc(&sb, '\0');
	size_t start = sb.len;
	bool pending_space = false;
	/* The folder works on C strings: fold between NUL bytes, keep the NULs. */
	size_t i = 0;
	for (;;) {
		const char *nul = memchr(text + i, '\0', len - i);
		size_t n = nul ? (size_t)(nul - (text + i)) : len - i;
		put_normalised(&sb, start, text + i, n, &pending_space);
		if (!nul)
			break;
		sb_putc(&sb, '\0');
		pending_space = false;
		i += n + 1;
	}
	sha256_raw(sb.buf ? sb.buf : "", sb.len, out);
	sb_free(&sb);
}

int dedup_admit(struct dedup *d, const char *target, const char *text, size_t len, int64_t now_ms,
                int64_t *age_ms)
{
	unsigned char h[32];
	digest(target, text, len, h);
	for (size_t i = 0; i < OUTBOUND_DEDUP_MAX; i++) {
		const struct dedup_entry *e = &d->ring[i];
		if (e->used && memcmp(e->digest, h, 32) == 0 &&
		    now_ms - e->time_ms < OUTBOUND_DEDUP_WINDOW_MS) {
			if (age_ms)
				*age_ms = now_ms - e->time_ms;
			return 0;
		}
	}
	struct dedup_entry *e = &d->ring[d->next];
	memcpy(e->digest, h, 32);
	e->time_ms = now_ms;
	e->used = true;
	d->next = (d->next + 1) % OUTBOUND_DEDUP_MAX;
	return 1;
}

void dedup_forget(struct dedup *d, const char *target, const char *text, size_t len)
{
	unsigned char h[32];
	digest(target, text, len, h);
	/* newest first: walk back from next */
	for (size_t k = 1; k <= OUTBOUND_DEDUP_MAX; k++) {
		struct dedup_entry *e =
		        &d->ring[(d->next + OUTBOUND_DEDUP_MAX - k) % OUTBOUND_DEDUP_MAX];
		if (e->used && memcmp(e->digest, h, 32) == 0) {
			e->used = false;
			return;
		}
	}
}
