/*
 * The Bluesky policy's parsers of outside input, fuzzed: every text a
 * stranger can post (closings, acknowledgements, emoji, normalisation,
 * identity posts, circular detection, the pruning plan) and the model's
 * expression drafts (the invitation classifier) and the state files
 * read back from disk (bstate.h). The first byte picks the target; the
 * rest is the input. Invariants checked: normalised text is bounded and
 * never ends inside a UTF-8 sequence; a found GitHub name is a valid login;
 * a state read back and written again reads back the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "modules/bluesky/bstate.h"
#include "modules/bluesky/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 64 * 1024)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	switch (data[0] % 4) {
	case 0: {
		struct decision d;
		(void)bsky_is_low_value_closing(s);
		(void)bsky_is_emoji_only(s);
		(void)bsky_is_short_ack(s);
		(void)bsky_should_respond(BSKY_REASON_REPLY, false, s, &d);
		(void)bsky_invitation_classify(s, &d);
		char out[BSKY_NORM_MAX_BYTES + 1];
		size_t n = bsky_normalize(s, out);
		if (n > BSKY_NORM_MAX_BYTES || strlen(out) != n)
			abort();
		if (n && ((unsigned char)out[n - 1] & 0xC0) == 0xC0)
			abort(); /* a lead byte at the end: cut inside a sequence */
		break;
	}
	case 1: {
		char gh[BSKY_GITHUB_NAME_MAX];
		if (bsky_identity_github(s, gh) == 0) {
			size_t n = strlen(gh);
			if (n == 0 || n >= BSKY_GITHUB_NAME_MAX || gh[0] == '-')
				abort();
			char text[400];
			if (bsky_identity_text(gh, text, sizeof text) != 0)
				abort();
		}
		break;
	}
	case 2: {
		/* lines "author|text" → a thread and a feed */
		struct bsky_thread_post posts[16];
		struct bsky_feed_item items[16];
		enum bsky_prune_why why[16];
		size_t n = 0;
		for (char *line = strtok(s, "\n"); line && n < 16; line = strtok(NULL, "\n")) {
			char *bar = strchr(line, '|');
			if (bar)
				*bar = 0;
			posts[n] = (struct bsky_thread_post){line, bar ? bar + 1 : ""};
			items[n] =
			        (struct bsky_feed_item){line, bar ? bar + 1 : "", (int64_t)n,
			                                (n % 3) ? "at://root" : NULL, n % 5 == 4};
			n++;
		}
		(void)bsky_circular_level(posts, n);
		size_t del = bsky_prune_plan(items, n, why);
		if (del > n)
			abort();
		break;
	}
	default: {
		struct ga_err err = {{0}};
		cJSON *j = json_parse(s, size - 1, &err);
		if (!j)
			break;
		struct bsky_state *st = bsky_state_new();
		if (bsky_state_from_json(st, j, &err) == 0) {
			cJSON *back = bsky_state_to_json(st);
			struct bsky_state *st2 = bsky_state_new();
			if (bsky_state_from_json(st2, back, &err) != 0 ||
			    st2->nconvs != st->nconvs || st2->nprocessed != st->nprocessed ||
			    st2->seen_until_ms != st->seen_until_ms)
				abort();
			bsky_state_free(st2);
			cJSON_Delete(back);
		}
		(void)bsky_peers_from_json(st, j, &err);
		cJSON *pj = bsky_peers_to_json(st);
		cJSON_Delete(pj);
		bsky_state_free(st);
		cJSON_Delete(j);
		break;
	}
	}
	free(s);
	return 0;
}
