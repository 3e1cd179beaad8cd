/*
 * extract — the NLP fallback extraction around the model call (§8.4): when
 * it is worth a call, and the call's prompts. The reply is read by
 * cmt_extract_parse (commitment.c). See commitment.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "modules/commitments/commitment.h"

/* Promises in the first person; matched case-insensitively as whole words
 * after ’ (U+2019) and ‘ (U+2018) became '. One table, so the gate is easy
 * to read and to extend. */
static const char *const PROMISES[] = {
        "i'll",
        "i will",
        "i'm going to",
        "i am going to",
        "let me",
        "i can",
        "i'd be happy to",
        "we'll",
        "we will",
        "i'm opening",
        "i'm creating",
        "i'm drafting",
        "i'm filing",
        "i'm writing",
        "i'm posting",
        "i'm submitting",
        "i'm putting together",
        "i'm documenting",
        "i'm commenting",
        "i am opening",
        "i am creating",
        "i am drafting",
        "i am filing",
        "i am writing",
        "i am posting",
};

static bool word_byte(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '\'' || c >= 0x80;
}

/* A lower-case copy with typographic apostrophes folded to ' and white
 * space runs as one space. */
static char *fold(const char *text, size_t len)
{
	char *out = xmalloc(len + 1);
	size_t k = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == 0xE2 && i + 2 < len && (unsigned char)text[i + 1] == 0x80 &&
		    ((unsigned char)text[i + 2] == 0x98 || (unsigned char)text[i + 2] == 0x99)) {
			out[k++] = '\'';
			i += 2;
			continue;
		}
		if (isspace(c) || c == '\0') {
			if (k && out[k - 1] != ' ')
				out[k++] = ' ';
			continue;
		}
		out[k++] = (char)tolower(c);
	}
	out[k] = '\0';
	return out;
}

bool cmt_extract_wanted(const char *text, size_t len, char *why, size_t cap)
{
	if (!text || !len) {
		snprintf(why, cap, "nothing was said");
		return false;
	}
	char *f = fold(text, len);
	size_t fl = strlen(f);
	for (size_t p = 0; p < sizeof PROMISES / sizeof PROMISES[0]; p++) {
		size_t pl = strlen(PROMISES[p]);
		for (const char *at = strstr(f, PROMISES[p]); at;
		     at = strstr(at + 1, PROMISES[p])) {
			size_t off = (size_t)(at - f);
			bool before = off == 0 || !word_byte((unsigned char)f[off - 1]);
			bool after = off + pl >= fl || !word_byte((unsigned char)f[off + pl]);
			if (before && after) {
				snprintf(why, cap, "the words promise (\"%s\")", PROMISES[p]);
				free(f);
				return true;
			}
		}
	}
	free(f);
	snprintf(why, cap, "no first-person promise in the words: no extraction call");
	return false;
}

char *cmt_extract_prompt(const char *text, const char *repo, const char *context_lines)
{
	struct strbuf sb = {0};
	sb_puts(&sb, "Reply 1: \"");
	sb_puts(&sb, text ? text : "");
	sb_puts(&sb, "\"\n");
	if (repo && *repo)
		sb_printf(&sb, "\nWorkspace context: %s\n", repo);
	if (context_lines && *context_lines) {
		sb_puts(&sb, "\nConversation context (recent messages from others):\n");
		sb_puts(&sb, context_lines);
		if (context_lines[strlen(context_lines) - 1] != '\n')
			sb_putc(&sb, '\n');
	}
	return sb_detach(&sb);
}

const char *cmt_extract_system(void)
{
	return "You extract commitments from an agent's chat replies: promises by the author to "
	       "do something specific. Each is one of create_issue, create_plan, comment_issue, "
	       "post_bluesky, create_workspace. Opinions, past-tense actions, suggestions to "
	       "others "
	       "and general "
	       "statements are not commitments.\n"
	       "Examples: \"I'll open 3 issues\", \"I'll write up my findings\", \"let me document "
	       "this in an issue\", \"I'll summarise the discussion\", \"I'll create a memo\" -> "
	       "create_issue; \"I'll put together a plan\" -> create_plan; \"I'll comment on that "
	       "issue\" -> comment_issue; \"I'll post about it on Bluesky\", \"I'll share this on "
	       "social media\", \"I'll write a post\" -> post_bluesky; \"I'll set up a workspace "
	       "for acme\", \"I'll create the org's workspace repo\" -> create_workspace "
	       "(params.org: "
	       "the GitHub organisation, params.name: the workspace's name, both when said).\n"
	       "Answer with a JSON array only, of objects {\"description\": string, \"type\": "
	       "string, \"params\": {\"title\": string, \"count\": number, \"repo\": string, "
	       "\"org\": string, \"name\": string}, "
	       "\"confidence\": \"high\" | \"medium\" | \"low\"}; [] when there is none. Include "
	       "only high and medium confidence commitments.";
}
