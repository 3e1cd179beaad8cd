/*
 * Fuzz target for what the agent-space client reads from the network:
 * the message parser (adapters/space/wire) and the room state it feeds
 * (adapters/space/roster), plus the URL parser (SPACE_URL and mDNS
 * answers end up there).
 *
 * The input is a script of records separated by 0xFF bytes; each record is
 * one server message, applied in order to one roster with a clock that
 * moves on by the record's length. After every step the roster's bounds
 * must hold. Every chat handed up is checked against a model kept here,
 * independently of the roster's digests: a chat (sender id, time, content)
 * is never handed up again while it is among the last SPC_SEEN_CHATS
 * handed up, the roster knows it when it is handed up, and the roster's
 * counters agree with the model's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/space/roster.h"
#include "adapters/space/wire.h"
#include "common/log.h"
#include "common/xalloc.h"

struct model {
	const struct spc_roster *r;
	char *keys[SPC_SEEN_CHATS]; /* the last chats handed up, a ring */
	size_t head, n;
	uint64_t handed;
};

static char *chat_key(const struct spc_chat *c)
{
	size_t len = strlen(c->id) + strlen(c->content) + 32;
	char *k = xmalloc(len);
	snprintf(k, len, "%s\n%lld\n%s", c->id, (long long)c->time_ms, c->content);
	return k;
}

static void on_chat(void *ud, const struct spc_chat *c)
{
	struct model *mo = ud;
	if (!c->name || !c->id || !c->content ||
	    (c->from_history && (c->thread_id || c->has_chain)))
		abort();
	unsigned char d[SPC_SEEN_DIGEST_BYTES];
	spc_chat_digest(c->id, c->time_ms, c->content, d);
	if (!spc_roster_chat_seen(mo->r, d))
		abort();
	char *k = chat_key(c);
	for (size_t i = 0; i < mo->n; i++)
		if (strcmp(mo->keys[i], k) == 0)
			abort(); /* handed up twice */
	if (mo->n < SPC_SEEN_CHATS) {
		mo->keys[mo->n++] = k;
	} else {
		free(mo->keys[mo->head]);
		mo->keys[mo->head] = k;
		mo->head = (mo->head + 1) % SPC_SEEN_CHATS;
	}
	mo->handed++;
}

static void check(const struct spc_roster *r, const struct model *mo)
{
	if (r->nmembers > SPC_MAX_MEMBERS || r->nclaims > SPC_MAX_CLAIMS ||
	    r->nseen > SPC_SEEN_CHATS || r->seen_head >= SPC_SEEN_CHATS ||
	    r->handed_chats != mo->handed || r->nseen != mo->n)
		abort();
	for (size_t i = 0; i < r->nmembers; i++)
		if (!r->members[i].name || !r->members[i].id ||
		    r->members[i].ncaps > SPC_MAX_MEMBER_CAPS)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	if (!quiet) {
		log_set_level(LOG_LEVEL_OFF);
		quiet = 1;
	}
	struct spc_roster r;
	spc_roster_init(&r);
	struct model *mo = xcalloc(1, sizeof *mo);
	mo->r = &r;
	int64_t now = 0;
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != 0xFF)
			continue;
		const char *rec = (const char *)data + start;
		size_t len = i - start;
		struct spc_msg m;
		if (spc_msg_parse(rec, len, &m, NULL) == 0) {
			spc_roster_apply(&r, &m, now, on_chat, mo);
			/* applied again, nothing of it is handed up twice */
			spc_roster_apply(&r, &m, now, on_chat, mo);
			spc_msg_free(&m);
		}
		/* the same bytes as a URL and as text to measure */
		if (len < 1024) {
			char url[1024];
			memcpy(url, rec, len);
			url[len] = '\0';
			struct spc_url u;
			if (spc_url_parse(url, &u, NULL) == 0 && (u.port < 1 || u.port > 65535))
				abort();
		}
		size_t units = spc_js_length(rec, len);
		if (spc_js_prefix(rec, len, units) != len)
			abort();
		check(&r, mo);
		now += (int64_t)len * 97;
		start = i + 1;
	}
	spc_roster_free(&r);
	for (size_t i = 0; i < mo->n; i++)
		free(mo->keys[i]);
	free(mo);
	return 0;
}
