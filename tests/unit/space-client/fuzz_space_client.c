/*
 * Fuzz target for what the agent-space client reads from the network:
 * the message parser (adapters/space/wire) and the room state it feeds
 * (adapters/space/roster), plus the URL parser (SPACE_URL and mDNS
 * answers end up there).
 *
 * The input is a script of records separated by 0xFF bytes; each record is
 * one server message, applied in order to one roster with a clock that
 * moves on by the record's length. After every step the roster's bounds
 * must hold and chat sequence numbers must be strictly increasing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/space/roster.h"
#include "adapters/space/wire.h"
#include "common/log.h"

static void check(const struct spc_roster *r)
{
	if (r->nmembers > SPC_MAX_MEMBERS || r->nclaims > SPC_MAX_CLAIMS ||
	    r->nchats > SPC_HISTORY_MAX_ENTRIES || r->chat_bytes > SPC_HISTORY_MAX_BYTES)
		abort();
	uint64_t prev = 0;
	for (size_t i = 0; i < spc_roster_chat_count(r); i++) {
		const struct spc_chat *c = spc_roster_chat_at(r, i);
		if (c->seq <= prev || !c->name || !c->id || !c->content)
			abort();
		prev = c->seq;
	}
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
	int64_t now = 0;
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != 0xFF)
			continue;
		const char *rec = (const char *)data + start;
		size_t len = i - start;
		struct spc_msg m;
		if (spc_msg_parse(rec, len, &m, NULL) == 0) {
			spc_roster_apply(&r, &m, now);
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
		check(&r);
		now += (int64_t)len * 97;
		start = i + 1;
	}
	spc_roster_free(&r);
	return 0;
}
