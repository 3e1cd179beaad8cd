/*
 * context — data for two §14 prompt pieces, derived from the history.
 * See participation.h (part_points_made, part_peer_commitments).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "modules/participation/participation.h"

static char *detach_or_empty(struct strbuf *sb)
{
	if (!sb->buf)
		return xstrdup("");
	return sb_detach(sb);
}

char *part_points_made(const struct part_state *st)
{
	struct strbuf sb = {0};
	size_t from = st->hist_n > PART_POINTS_MAX ? st->hist_n - PART_POINTS_MAX : 0;
	for (size_t i = from; i < st->hist_n; i++) {
		const struct part_entry *e = part_history_at(st, i);
		sb_printf(&sb, "%s:", e->author);
		/* Keep word characters (and any non-ASCII byte: §16.19, letters
		 * of other scripts are words too), drop punctuation, first
		 * PART_POINT_WORDS pieces. */
		size_t words = 0, j = 0;
		while (j < e->len && words < PART_POINT_WORDS) {
			while (j < e->len && isspace((unsigned char)e->text[j]))
				j++;
			if (j >= e->len)
				break;
			bool any = false;
			while (j < e->len && !isspace((unsigned char)e->text[j])) {
				unsigned char c = (unsigned char)e->text[j];
				if (isalnum(c) || c == '_' || c >= 0x80) {
					if (!any)
						sb_putc(&sb, ' ');
					sb_putc(&sb, (char)c);
					any = true;
				}
				j++;
			}
			words += any;
		}
		sb_putc(&sb, '\n');
	}
	return detach_or_empty(&sb);
}

char *part_peer_commitments(const struct part_state *st)
{
	struct strbuf sb = {0};
	for (size_t i = 0; i < st->hist_n; i++) {
		const struct part_entry *e = part_history_at(st, i);
		/* §16.25: host messages never, not only the current batch's. */
		if (e->self || e->host || !part_text_promises(e->text, e->len))
			continue;
		char *cut = part_utf16_prefix(e->text, e->len, PART_PEER_COMMIT_UNITS);
		sb_printf(&sb, "%s: \"%s\"\n", e->author, cut);
		free(cut);
	}
	return detach_or_empty(&sb);
}
