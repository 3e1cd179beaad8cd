/*
 * adapters/space/roster — room state seen by one client. See roster.h.
 */
#include "adapters/space/roster.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

/* --- members ------------------------------------------------------------------ */

static void member_clear(struct spc_member *m)
{
	free(m->name);
	free(m->id);
	free(m->version);
	for (size_t i = 0; i < m->ncaps; i++)
		free(m->caps[i]);
	free(m->identity_json);
	free(m->state_detail);
	memset(m, 0, sizeof *m);
}

static void member_set_caps(struct spc_member *m, const cJSON *caps)
{
	for (size_t i = 0; i < m->ncaps; i++)
		free(m->caps[i]);
	m->ncaps = 0;
	m->has_caps = caps != NULL;
	const cJSON *c;
	cJSON_ArrayForEach(c, caps)
	{
		/* Non-strings are dropped by the server too (§2.2). */
		if (!cJSON_IsString(c) || strlen(c->valuestring) > SPC_CAP_MAX_BYTES)
			continue;
		if (m->ncaps == SPC_MAX_MEMBER_CAPS)
			break;
		m->caps[m->ncaps++] = xstrdup(c->valuestring);
	}
}

static void member_set_identity(struct spc_member *m, const cJSON *summary)
{
	free(m->identity_json);
	m->identity_json = NULL;
	m->github_login[0] = '\0';
	if (!summary)
		return;
	char *j = json_print(summary);
	if (strlen(j) > SPC_IDENTITY_MAX_BYTES) {
		free(j);
		return;
	}
	m->identity_json = j;
	const char *login =
	        cJSON_IsObject(summary) ? json_string_or(summary, "githubLogin", "") : "";
	if (strlen(login) <= SPC_LOGIN_MAX_BYTES)
		memcpy(m->github_login, login, strlen(login) + 1);
}

static int64_t iso_ms(const cJSON *o, const char *k)
{
	const char *s = json_string_or(o, k, NULL);
	int64_t ms = 0;
	if (s && time_parse_iso(s, &ms) != 0)
		ms = 0;
	return ms;
}

static struct spc_member *find_id(struct spc_roster *r, const char *id)
{
	for (size_t i = 0; i < r->nmembers; i++)
		if (strcmp(r->members[i].id, id) == 0)
			return &r->members[i];
	return NULL;
}

const struct spc_member *spc_roster_find_id(const struct spc_roster *r, const char *id)
{
	return id ? find_id((struct spc_roster *)r, id) : NULL;
}

const struct spc_member *spc_roster_find_name(const struct spc_roster *r, const char *name)
{
	for (size_t i = 0; name && i < r->nmembers; i++)
		if (strcmp(r->members[i].name, name) == 0)
			return &r->members[i];
	return NULL;
}

bool spc_member_typing(const struct spc_member *m, int64_t now_ms)
{
	return m->typing_until_ms > now_ms;
}

bool spc_member_has_cap(const struct spc_member *m, const char *cap)
{
	for (size_t i = 0; i < m->ncaps; i++)
		if (strcmp(m->caps[i], cap) == 0)
			return true;
	return false;
}

static void remove_member(struct spc_roster *r, struct spc_member *m)
{
	size_t i = (size_t)(m - r->members);
	member_clear(m);
	memmove(&r->members[i], &r->members[i + 1], (r->nmembers - i - 1) * sizeof *m);
	r->nmembers--;
	memset(&r->members[r->nmembers], 0, sizeof *m);
}

static struct spc_member *add_member(struct spc_roster *r, const char *name, const char *id)
{
	if (r->nmembers == SPC_MAX_MEMBERS) {
		r->dropped_members++;
		return NULL;
	}
	struct spc_member *m = &r->members[r->nmembers++];
	memset(m, 0, sizeof *m);
	m->name = xstrdup(name);
	m->id = xstrdup(id);
	m->version = xstrdup("");
	return m;
}

/* presence: rebuild the table from the list (§7.4), keeping what only this
 * client knows (typing, state) for members that stay. */
static void apply_presence(struct spc_roster *r, const cJSON *agents)
{
	struct spc_member old[SPC_MAX_MEMBERS];
	size_t nold = r->nmembers;
	memcpy(old, r->members, nold * sizeof old[0]);
	memset(r->members, 0, sizeof r->members);
	r->nmembers = 0;
	const cJSON *a;
	cJSON_ArrayForEach(a, agents)
	{
		const char *name = json_string_or(a, "name", NULL);
		const char *id = json_string_or(a, "id", NULL);
		if (!name || !id)
			continue;
		struct spc_member *m = add_member(r, name, id);
		if (!m)
			break;
		free(m->version);
		m->version = xstrdup(json_string_or(a, "version", ""));
		m->joined_at_ms = iso_ms(a, "joinedAt");
		m->last_seen_ms = iso_ms(a, "lastSeen");
		const cJSON *caps = cJSON_GetObjectItemCaseSensitive(a, "capabilities");
		member_set_caps(m, cJSON_IsArray(caps) ? caps : NULL);
		const cJSON *idn = cJSON_GetObjectItemCaseSensitive(a, "identity");
		member_set_identity(m, cJSON_IsObject(idn) || cJSON_IsArray(idn) ? idn : NULL);
		for (size_t i = 0; i < nold; i++) {
			if (old[i].id && strcmp(old[i].id, id) == 0) {
				m->typing_until_ms = old[i].typing_until_ms;
				memcpy(m->state, old[i].state, sizeof m->state);
				if (old[i].state_detail)
					m->state_detail = xstrdup(old[i].state_detail);
				break;
			}
		}
	}
	for (size_t i = 0; i < nold; i++)
		member_clear(&old[i]);
}

/* --- claims ------------------------------------------------------------------- */

static void claim_clear(struct spc_claim *c)
{
	free(c->action);
	free(c->target);
	free(c->owner);
	memset(c, 0, sizeof *c);
}

static void claim_remove(struct spc_roster *r, size_t i)
{
	claim_clear(&r->claims[i]);
	memmove(&r->claims[i], &r->claims[i + 1], (r->nclaims - i - 1) * sizeof r->claims[0]);
	r->nclaims--;
	memset(&r->claims[r->nclaims], 0, sizeof r->claims[0]);
}

static long claim_index(const struct spc_roster *r, const char *action, const char *target)
{
	for (size_t i = 0; i < r->nclaims; i++)
		if (strcmp(r->claims[i].action, action) == 0 &&
		    strcmp(r->claims[i].target, target) == 0)
			return (long)i;
	return -1;
}

static void claims_expire(struct spc_roster *r, int64_t now_ms)
{
	for (size_t i = r->nclaims; i-- > 0;)
		if (now_ms - r->claims[i].seen_ms >= SPC_CLAIM_TTL_MS)
			claim_remove(r, i);
}

static void claims_drop_owner(struct spc_roster *r, const char *owner)
{
	for (size_t i = r->nclaims; i-- > 0;)
		if (strcmp(r->claims[i].owner, owner) == 0)
			claim_remove(r, i);
}

const struct spc_claim *spc_roster_claim(const struct spc_roster *r, const char *action,
                                         const char *target, int64_t now_ms)
{
	long i = claim_index(r, action, target);
	if (i < 0 || now_ms - r->claims[i].seen_ms >= SPC_CLAIM_TTL_MS)
		return NULL;
	return &r->claims[i];
}

static void apply_claim(struct spc_roster *r, const struct spc_msg *m, int64_t now_ms)
{
	claims_expire(r, now_ms);
	long i = claim_index(r, m->action, m->target);
	if (i >= 0)
		claim_remove(r, (size_t)i);
	if (r->nclaims == SPC_MAX_CLAIMS)
		claim_remove(r, 0); /* the oldest */
	struct spc_claim *c = &r->claims[r->nclaims++];
	c->action = xstrdup(m->action);
	c->target = xstrdup(m->target);
	c->owner = xstrdup(m->name);
	c->seen_ms = now_ms;
}

/* --- chats ------------------------------------------------------------------------ */

void spc_chat_digest(const char *id, int64_t time_ms, const char *content,
                     unsigned char out[SPC_SEEN_DIGEST_BYTES])
{
	/* The message id's input (modules/space/link.c): id \n time \n
	 * content, U+0000 as its marker byte. */
	char t[32];
	snprintf(t, sizeof t, "\n%lld\n", (long long)time_ms);
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, id);
	sb_puts(&sb, t);
	sb_puts(&sb, content);
	unsigned char full[32];
	sha256_raw(sb_cstr(&sb), sb.len, full);
	sb_free(&sb);
	memcpy(out, full, SPC_SEEN_DIGEST_BYTES);
}

bool spc_roster_chat_seen(const struct spc_roster *r,
                          const unsigned char digest[SPC_SEEN_DIGEST_BYTES])
{
	/* A linear scan: at most SPC_SEEN_CHATS × 16 bytes, a few
	 * microseconds; a full history replay costs about a millisecond. */
	for (size_t i = 0; i < r->nseen; i++)
		if (memcmp(r->seen[i], digest, SPC_SEEN_DIGEST_BYTES) == 0)
			return true;
	return false;
}

/* Records the digest; when the set is full the oldest one goes. */
static void seen_add(struct spc_roster *r, const unsigned char digest[SPC_SEEN_DIGEST_BYTES])
{
	size_t at;
	if (r->nseen < SPC_SEEN_CHATS) {
		at = r->nseen++;
	} else {
		at = r->seen_head;
		r->seen_head = (r->seen_head + 1) % SPC_SEEN_CHATS;
	}
	memcpy(r->seen[at], digest, SPC_SEEN_DIGEST_BYTES);
}

static bool looks_like_host(const char *name, const char *id)
{
	return strcmp(name, "host") == 0 && strncmp(id, "host-", 5) == 0;
}

/* Hands c up unless it was handed up before. Returns whether it was. */
static bool chat_once(struct spc_roster *r, const struct spc_chat *c, spc_chat_fn on_chat, void *ud)
{
	unsigned char d[SPC_SEEN_DIGEST_BYTES];
	spc_chat_digest(c->id, c->time_ms, c->content, d);
	if (spc_roster_chat_seen(r, d)) {
		r->repeated_chats++;
		return false;
	}
	seen_add(r, d);
	r->handed_chats++;
	if (on_chat)
		on_chat(ud, c);
	return true;
}

static bool apply_chat(struct spc_roster *r, const struct spc_msg *m, spc_chat_fn on_chat, void *ud)
{
	struct spc_member *sender = find_id(r, m->id);
	struct spc_chat c = {
	        .name = m->name,
	        .id = m->id,
	        .content = m->content,
	        .thread_id = m->thread_id,
	        .has_chain = m->has_chain,
	        .chain = m->chain,
	        .addressed = m->addressed,
	        .time_ms = m->time_ms,
	        .host = !sender && looks_like_host(m->name, m->id),
	};
	if (sender)
		sender->typing_until_ms = 0;
	return chat_once(r, &c, on_chat, ud);
}

/* history_response: the log entries; only chats matter to a client
 * (§7.4). The room's log keeps no thread and no chain. */
static bool apply_history(struct spc_roster *r, const cJSON *entries, spc_chat_fn on_chat, void *ud)
{
	bool any = false;
	const cJSON *e;
	cJSON_ArrayForEach(e, entries)
	{
		if (!cJSON_IsObject(e))
			continue;
		const char *type = json_string_or(e, "type", NULL);
		const char *name = json_string_or(e, "agentName", NULL);
		const char *id = json_string_or(e, "agentId", NULL);
		const char *content = json_string_or(e, "content", NULL);
		if (!type || strcmp(type, "chat") != 0 || !name || !id || !content)
			continue;
		struct spc_chat c = {
		        .name = name,
		        .id = id,
		        .content = content,
		        .time_ms = iso_ms(e, "timestamp"),
		        .from_history = true,
		        .host = looks_like_host(name, id),
		};
		any |= chat_once(r, &c, on_chat, ud);
	}
	return any;
}

/* --- apply ------------------------------------------------------------------------- */

unsigned spc_roster_apply(struct spc_roster *r, const struct spc_msg *m, int64_t now_ms,
                          spc_chat_fn on_chat, void *ud)
{
	struct spc_member *mem;
	switch (m->type) {
	case SPC_T_JOIN:
		mem = find_id(r, m->id);
		if (!mem)
			mem = add_member(r, m->name, m->id);
		if (!mem)
			return 0;
		free(mem->version);
		mem->version = xstrdup(m->version ? m->version : "");
		member_set_caps(mem, m->capabilities);
		return SPC_CHANGED_MEMBERS;
	case SPC_T_LEAVE:
		claims_drop_owner(r, m->name);
		mem = find_id(r, m->id);
		if (mem)
			remove_member(r, mem);
		return SPC_CHANGED_MEMBERS | SPC_CHANGED_CLAIMS;
	case SPC_T_PRESENCE:
		apply_presence(r, m->agents);
		return SPC_CHANGED_MEMBERS;
	case SPC_T_HISTORY:
		return apply_history(r, m->entries, on_chat, ud) ? SPC_CHANGED_CHAT : 0;
	case SPC_T_CHAT:
		return apply_chat(r, m, on_chat, ud) ? SPC_CHANGED_CHAT | SPC_CHANGED_TYPING : 0;
	case SPC_T_TYPING:
		mem = find_id(r, m->id);
		if (!mem)
			return 0;
		mem->typing_until_ms = now_ms + SPC_TYPING_TTL_MS;
		return SPC_CHANGED_TYPING;
	case SPC_T_IDENTITY:
		mem = find_id(r, m->id);
		if (!mem)
			return 0;
		member_set_identity(mem, m->summary);
		return SPC_CHANGED_MEMBERS;
	case SPC_T_CLAIM:
		apply_claim(r, m, now_ms);
		return SPC_CHANGED_CLAIMS;
	case SPC_T_ACTION_RESULT: {
		long i = claim_index(r, m->action, m->target);
		if (i < 0)
			return 0;
		claim_remove(r, (size_t)i);
		return SPC_CHANGED_CLAIMS;
	}
	case SPC_T_STATE:
		mem = find_id(r, m->id);
		if (!mem)
			return 0;
		snprintf(mem->state, sizeof mem->state, "%s", m->state);
		free(mem->state_detail);
		mem->state_detail = NULL;
		if (cJSON_IsString(m->detail))
			mem->state_detail = xstrdup(m->detail->valuestring);
		else if (m->detail && !cJSON_IsNull(m->detail))
			mem->state_detail = json_print(m->detail);
		return SPC_CHANGED_STATE;
	default:
		return 0;
	}
}

void spc_roster_init(struct spc_roster *r)
{
	memset(r, 0, offsetof(struct spc_roster, seen));
}

void spc_roster_reset(struct spc_roster *r)
{
	for (size_t i = 0; i < r->nmembers; i++)
		member_clear(&r->members[i]);
	r->nmembers = 0;
	r->dropped_members = 0;
	while (r->nclaims)
		claim_remove(r, r->nclaims - 1);
}

void spc_roster_free(struct spc_roster *r)
{
	if (!r)
		return;
	spc_roster_reset(r);
	r->nseen = r->seen_head = 0;
}
