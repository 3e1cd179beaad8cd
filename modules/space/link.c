/*
 * modules/space/link — events, paced chat, state and claims on top of the
 * agent-space client. See link.h.
 */
#include "modules/space/link.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/jsonnul.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/space/identity.h"

#define LOG_COMP "space"

struct say {
	char *text;
	char *thread_id;
	int64_t chain;
	space_send_check_fn check;
	void *check_ud;
	char *claims[SPACE_LINK_SAY_CLAIMS_MAX][2]; /* action, target */
	size_t nclaims;
	space_say_fn done;
	void *ud;
};

struct held {
	char *action;
	char *target;
	int64_t since_ms; /* when first claimed (epoch ms): what renewals carry */
};

/* A peer's latest reflection; a workspace's latest state (link.h). */
struct peer_reflection {
	char *name;
	char *summary;
	int64_t time_ms;
};

struct peer_workspace {
	char *workspace;
	char *reporter;
	int64_t plan, total, completed, blocked, in_progress;
	int64_t time_ms;
};

/* A member's report that it did a piece of work (a successful
 * action_result). */
struct peer_result {
	char *name, *action, *target, *link;
	int64_t time_ms;
};

struct space_link {
	uv_loop_t *loop;
	space_claim_lost_fn watch; /* space_link_watch_claims */
	void *watch_ud;
	struct space_link_config cfg; /* strings below are our copies */
	char *name, *version, *space_url, *identity_json;
	char id[SPACE_ID_BUF];
	struct spc_client *client;
	struct space_link_handlers h;
	void *ud;
	bool joined;

	struct say q[SPACE_LINK_MAX_PENDING];
	size_t qhead, qn;
	bool saying;        /* the head's pause is running */
	uint64_t say_due;   /* uv_now when the head's chat may go */
	uint64_t last_chat; /* uv_now of the last chat sent; 0 = none */
	bool any_chat;

	bool state_set;
	enum space_agent_state state;
	char *detail;

	struct held claims[SPACE_LINK_MAX_CLAIMS];
	size_t nclaims;

	struct peer_reflection refl[SPACE_LINK_MAX_REFLECTIONS]; /* oldest first */
	size_t nrefl;
	struct peer_workspace ws[SPACE_LINK_MAX_WORKSPACES]; /* oldest first */
	size_t nws;
	struct peer_result res[SPACE_LINK_MAX_RESULTS]; /* oldest first */
	size_t nres;

	uv_timer_t say_timer, renew_timer;
	int open_handles;
	bool stopping, closing;
	bool free_when_closed;
	void (*done)(void *);
	void *done_ud;
};

const char *space_author_kind_name(enum space_author_kind k)
{
	switch (k) {
	case SPACE_AUTHOR_SELF:
		return "self";
	case SPACE_AUTHOR_HOST:
		return "host";
	case SPACE_AUTHOR_PEER:
		return "peer";
	}
	return "?";
}

const char *space_agent_state_name(enum space_agent_state s)
{
	static const char *const names[] = {"idle", "thinking", "acting", "blocked"};
	return (unsigned)s < 4 ? names[s] : "idle";
}

const char *space_say_result_name(enum space_say_result r)
{
	switch (r) {
	case SPACE_SAY_SENT:
		return "sent";
	case SPACE_SAY_DISCONNECTED:
		return "disconnected";
	case SPACE_SAY_STOPPED:
		return "stopped";
	case SPACE_SAY_WITHDRAWN:
		return "withdrawn";
	}
	return "?";
}

/* --- configuration ------------------------------------------------------------------- */

void space_link_config_init(struct space_link_config *cfg, const struct ga_config *gc)
{
	memset(cfg, 0, sizeof *cfg);
	spc_tunables_default(&cfg->t);
	cfg->typing_base_ms = 800;
	cfg->typing_per_char_ms = 30;
	cfg->typing_max_ms = 6000;
	/* The room rejects a chat within 3,000 ms of the previous one (§3.4);
	 * a little margin covers the trip there. */
	cfg->chat_interval_ms = 3200;
	cfg->claim_renew_ms = 30000;
	if (!gc)
		return;
	/* config_load() validated the GA_SPACE_* values; below zero = not set. */
	const struct config_space_tunables *c = &gc->space;
	spc_tunables_from_config(&cfg->t, c);
	const int64_t *src[] = {&c->typing_base_ms, &c->typing_per_char_ms, &c->typing_max_ms,
	                        &c->chat_interval_ms, &c->claim_renew_ms};
	uint64_t *dst[] = {&cfg->typing_base_ms, &cfg->typing_per_char_ms, &cfg->typing_max_ms,
	                   &cfg->chat_interval_ms, &cfg->claim_renew_ms};
	for (size_t i = 0; i < sizeof src / sizeof src[0]; i++)
		if (*src[i] >= 0)
			*dst[i] = (uint64_t)*src[i];
	cfg->typing_from_env =
	        c->typing_base_ms >= 0 || c->typing_per_char_ms >= 0 || c->typing_max_ms >= 0;
}

uint64_t space_link_typing_delay(const struct space_link_config *cfg, const char *text)
{
	size_t chars = text ? utf8_graphemes(text, strlen(text)) : 0;
	uint64_t d = cfg->typing_base_ms;
	if (cfg->typing_per_char_ms && chars > (cfg->typing_max_ms / cfg->typing_per_char_ms) + 1)
		d = cfg->typing_max_ms;
	else
		d += cfg->typing_per_char_ms * chars;
	if (d > cfg->typing_max_ms)
		d = cfg->typing_max_ms;
	if (!cfg->typing_from_env && cfg->reply_delay_max_ms) {
		if (d < cfg->reply_delay_min_ms)
			d = cfg->reply_delay_min_ms;
		if (d > cfg->reply_delay_max_ms)
			d = cfg->reply_delay_max_ms;
	}
	return d;
}

void space_link_set_reply_delay(struct space_link *l, uint64_t min_ms, uint64_t max_ms)
{
	if (!l)
		return;
	l->cfg.reply_delay_min_ms = min_ms;
	l->cfg.reply_delay_max_ms = max_ms < min_ms ? min_ms : max_ms;
}

/* --- addressed names ----------------------------------------------------------------- */

static bool word_char(unsigned char c)
{
	return isalnum(c) || c == '_';
}

static void add_name(const char **out, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(out[i], name) == 0)
			return;
	if (*n < SPACE_LINK_MAX_ADDRESSED)
		out[(*n)++] = name;
}

/* The room's rule for host messages (§3.16), applied to agent chats:
 * @word (ASCII word characters) equal to a name ignoring case, then bare
 * names between ASCII word boundaries. Duplicates are dropped. */
static size_t addressed_names(const char *text, const char *const *names, size_t nnames,
                              const char **out)
{
	size_t n = 0;
	for (const char *p = text; *p; p++) {
		if (*p != '@')
			continue;
		const char *w = p + 1, *e = w;
		while (word_char((unsigned char)*e))
			e++;
		size_t wl = (size_t)(e - w);
		for (size_t i = 0; wl && i < nnames; i++)
			if (strlen(names[i]) == wl && strncasecmp(names[i], w, wl) == 0)
				add_name(out, &n, names[i]);
	}
	size_t tl = strlen(text);
	for (size_t i = 0; i < nnames; i++) {
		size_t nl = strlen(names[i]);
		if (!nl || nl > tl)
			continue;
		for (size_t at = 0; at + nl <= tl; at++) {
			if (strncasecmp(text + at, names[i], nl) != 0)
				continue;
			/* JavaScript's \b: a word character on exactly one side. */
			bool lb = at == 0 ? word_char((unsigned char)names[i][0])
			                  : word_char((unsigned char)text[at - 1]) !=
			                            word_char((unsigned char)names[i][0]);
			bool rb = at + nl == tl
			                  ? word_char((unsigned char)names[i][nl - 1])
			                  : word_char((unsigned char)text[at + nl]) !=
			                            word_char((unsigned char)names[i][nl - 1]);
			if (lb && rb) {
				add_name(out, &n, names[i]);
				break;
			}
		}
	}
	return n;
}

/* --- events -------------------------------------------------------------------------- */

/* threadId as text: a string as it is, a number as JavaScript prints it,
 * anything else as its JSON. Caller frees; NULL when there is none. */
static char *thread_text(const cJSON *t)
{
	if (!t)
		return NULL;
	if (cJSON_IsString(t))
		return xstrdup(t->valuestring);
	if (cJSON_IsNumber(t)) {
		char buf[32];
		return xstrdup(json_number_js(t->valuedouble, buf));
	}
	return json_print(t);
}

/* The client hands each chat up once (roster.h); here it becomes the
 * engine's event, straight from the parsed message. */
static void on_client_chat(void *ud, const struct spc_chat *c)
{
	struct space_link *l = ud;
	if (l->stopping)
		return;
	const struct spc_roster *r = spc_client_roster(l->client);
	struct space_event ev;
	memset(&ev, 0, sizeof ev);
	ev.platform = "space";
	char *thread = thread_text(c->thread_id);
	char conv[300];
	snprintf(conv, sizeof conv, "space:%s", thread ? thread : "room");
	ev.conversation = conv;
	/* The message id: stable across restarts (the conversation store
	 * persists which ids were answered), so its input never changes. */
	char digest_in[64];
	snprintf(digest_in, sizeof digest_in, "\n%lld\n", (long long)c->time_ms);
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, c->id);
	sb_puts(&sb, digest_in);
	sb_puts(&sb, c->content);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(sb_cstr(&sb), sb.len, hex);
	sb_free(&sb);
	char mid[48];
	snprintf(mid, sizeof mid, "space:%.32s", hex);
	ev.message_id = mid;
	ev.thread_id = thread;
	ev.author_id = c->id;
	ev.author_name = c->name;
	if (strcmp(c->id, l->id) == 0)
		ev.author_kind = SPACE_AUTHOR_SELF;
	else if (c->host)
		ev.author_kind = SPACE_AUTHOR_HOST;
	else
		ev.author_kind = SPACE_AUTHOR_PEER;
	/* The carried chain only; the chain derived from history is the
	 * conversation store's (see link.h). */
	ev.chain_explicit = c->has_chain;
	ev.chain = ev.author_kind != SPACE_AUTHOR_HOST && c->has_chain ? c->chain : 0;
	/* U+0000 is kept as a marker byte up to here (wire.h); the user gets
	 * the text itself, NULs included, with its length. */
	char *text = spc_text_dup(c->content, &ev.text_len);
	ev.text = text;
	const char *addr[SPACE_LINK_MAX_ADDRESSED];
	size_t naddr = 0;
	const cJSON *a;
	cJSON_ArrayForEach(a, c->addressed)
	{
		if (cJSON_IsString(a))
			add_name(addr, &naddr, a->valuestring);
	}
	if (!naddr && ev.author_kind != SPACE_AUTHOR_HOST) {
		const char *names[SPC_MAX_MEMBERS + 1];
		size_t nn = 0;
		for (size_t i = 0; i < r->nmembers; i++)
			names[nn++] = r->members[i].name;
		if (!spc_roster_find_name(r, l->name))
			names[nn++] = l->name;
		naddr = addressed_names(c->content, names, nn, addr);
	}
	ev.addressed = addr;
	ev.naddressed = naddr;
	for (size_t i = 0; i < naddr; i++)
		if (strcasecmp(addr[i], l->name) == 0)
			ev.addressed_me = true;
	ev.time_ms = c->time_ms;
	ev.from_history = c->from_history;
	if (l->h.on_chat)
		l->h.on_chat(l->ud, &ev);
	free(text);
	free(thread);
}

/* --- paced chat -------------------------------------------------------------------------- */

static struct spc_who who(const struct space_link *l)
{
	return (struct spc_who){.name = l->name, .id = l->id};
}

static void say_free(struct say *s)
{
	free(s->text);
	free(s->thread_id);
	for (size_t i = 0; i < s->nclaims; i++) {
		free(s->claims[i][0]);
		free(s->claims[i][1]);
	}
	memset(s, 0, sizeof *s);
}

/* Removes the head and reports r. The callback may queue another chat. */
static void say_finish_head(struct space_link *l, enum space_say_result r)
{
	struct say s = l->q[l->qhead];
	memset(&l->q[l->qhead], 0, sizeof l->q[0]);
	l->qhead = (l->qhead + 1) % SPACE_LINK_MAX_PENDING;
	l->qn--;
	l->saying = false;
	space_say_fn done = s.done;
	void *ud = s.ud;
	say_free(&s);
	if (done)
		done(ud, r);
}

static void fail_all_says(struct space_link *l, enum space_say_result r)
{
	uv_timer_stop(&l->say_timer);
	/* Callbacks may queue again; only drain what was there. */
	size_t n = l->qn;
	while (n-- && l->qn)
		say_finish_head(l, r);
}

static void say_kick(struct space_link *l);

static void on_say_timer(uv_timer_t *t)
{
	struct space_link *l = t->data;
	if (!l->saying || !l->qn || !l->joined)
		return;
	uint64_t now = uv_now(l->loop);
	struct spc_who w = who(l);
	if (now < l->say_due) {
		spc_client_send(l->client, spc_build_typing(&w, time_now_ms()));
		uint64_t left = l->say_due - now;
		uv_timer_start(&l->say_timer, on_say_timer,
		               left < SPACE_LINK_TYPING_REFRESH_MS ? left
		                                                   : SPACE_LINK_TYPING_REFRESH_MS,
		               0);
		return;
	}
	struct say *s = &l->q[l->qhead];
	if (s->check && !s->check(s->check_ud, s->text)) {
		say_finish_head(l, SPACE_SAY_WITHDRAWN);
		say_kick(l);
		return;
	}
	for (size_t i = 0; i < s->nclaims; i++) {
		struct ga_err err;
		err_clear(&err);
		if (space_link_claim(l, s->claims[i][0], s->claims[i][1], 0, &err) != 0)
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "no claim with the chat", "action",
			       s->claims[i][0], "target", s->claims[i][1], "error", err.msg);
	}
	char *json = spc_build_chat(&w, s->text, s->thread_id, s->chain, time_now_ms());
	enum space_say_result r =
	        spc_client_send(l->client, json) == 0 ? SPACE_SAY_SENT : SPACE_SAY_DISCONNECTED;
	l->last_chat = now;
	l->any_chat = true;
	say_finish_head(l, r);
	say_kick(l);
}

static void say_kick(struct space_link *l)
{
	if (l->saying || !l->qn || !l->joined || l->stopping)
		return;
	struct say *s = &l->q[l->qhead];
	uint64_t now = uv_now(l->loop);
	uint64_t due = now + space_link_typing_delay(&l->cfg, s->text);
	if (l->any_chat && l->last_chat + l->cfg.chat_interval_ms > due)
		due = l->last_chat + l->cfg.chat_interval_ms;
	l->saying = true;
	l->say_due = due;
	struct spc_who w = who(l);
	spc_client_send(l->client, spc_build_typing(&w, time_now_ms()));
	uint64_t left = due - now;
	uv_timer_start(&l->say_timer, on_say_timer,
	               left < SPACE_LINK_TYPING_REFRESH_MS ? left : SPACE_LINK_TYPING_REFRESH_MS,
	               0);
}

/* Blank as JavaScript's trim() sees it (space-protocol.md §0): the room
 * rejects such a chat, claim or reflection. */
static bool blank(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	for (size_t i = 0; i < len;) {
		unsigned int cp;
		int n = utf8_decode(s + i, len - i, &cp);
		if (n < 0 || !utf8_js_space(cp))
			return false;
		i += (size_t)n;
	}
	return true;
}

int space_link_say(struct space_link *l, const char *text, const char *thread_id, int64_t chain,
                   space_say_fn done, void *ud, struct ga_err *err)
{
	struct space_say_req r = {
	        .text = text, .thread_id = thread_id, .chain = chain, .done = done, .ud = ud};
	return space_link_say_with(l, &r, err);
}

int space_link_say_with(struct space_link *l, const struct space_say_req *r, struct ga_err *err)
{
	const char *text = r->text, *thread_id = r->thread_id;
	if (!l->joined || l->stopping || !l->client)
		return err_set(err, "not in the agent-space room (state %s)",
		               l->client && !l->stopping
		                       ? spc_state_name(spc_client_state(l->client))
		                       : "stopped");
	if (!text || blank(text))
		return err_set(err, "a chat message must not be blank");
	size_t units = spc_js_length(text, strlen(text));
	if (units > SPC_CHAT_MAX_UNITS)
		return err_set(err,
		               "a chat message of %zu UTF-16 units is over the room's limit "
		               "of %d",
		               units, SPC_CHAT_MAX_UNITS);
	if (l->qn == SPACE_LINK_MAX_PENDING)
		return err_set(err, "%d chat messages are already waiting to be sent",
		               SPACE_LINK_MAX_PENDING);
	struct say *s = &l->q[(l->qhead + l->qn) % SPACE_LINK_MAX_PENDING];
	s->text = xstrdup(text);
	s->thread_id = thread_id && *thread_id ? xstrdup(thread_id) : NULL;
	s->chain = r->chain;
	s->check = r->check;
	s->check_ud = r->check_ud;
	s->nclaims = 0;
	for (size_t i = 0; i < r->nclaims && s->nclaims < SPACE_LINK_SAY_CLAIMS_MAX; i++) {
		if (!r->claims[i].action || !r->claims[i].target)
			continue;
		s->claims[s->nclaims][0] = xstrdup(r->claims[i].action);
		s->claims[s->nclaims][1] = xstrdup(r->claims[i].target);
		s->nclaims++;
	}
	s->done = r->done;
	s->ud = r->ud;
	l->qn++;
	say_kick(l);
	return 0;
}

/* --- state and claims ---------------------------------------------------------------------- */

static void send_state(struct space_link *l)
{
	struct spc_who w = who(l);
	spc_client_send(l->client, spc_build_state(&w, space_agent_state_name(l->state), l->detail,
	                                           time_now_ms()));
}

void space_link_set_state(struct space_link *l, enum space_agent_state s, const char *detail)
{
	l->state_set = true;
	l->state = s;
	free(l->detail);
	l->detail = NULL;
	if (detail) {
		size_t cut = spc_js_prefix(detail, strlen(detail), SPC_DETAIL_MAX_UNITS);
		l->detail = xstrndup(detail, cut);
	}
	if (l->joined)
		send_state(l);
}

static long held_index(const struct space_link *l, const char *action, const char *target)
{
	for (size_t i = 0; i < l->nclaims; i++)
		if (strcmp(l->claims[i].action, action) == 0 &&
		    strcmp(l->claims[i].target, target) == 0)
			return (long)i;
	return -1;
}

static void held_remove(struct space_link *l, size_t i)
{
	free(l->claims[i].action);
	free(l->claims[i].target);
	memmove(&l->claims[i], &l->claims[i + 1], (l->nclaims - i - 1) * sizeof l->claims[0]);
	l->nclaims--;
	if (!l->nclaims)
		uv_timer_stop(&l->renew_timer);
}

/* A held pair's claim; since_ms 0 = none (its first, fresh claim). */
static void send_held(struct space_link *l, const struct held *h, int64_t since_ms)
{
	struct spc_who w = who(l);
	spc_client_send(l->client,
	                spc_build_claim(&w, h->action, h->target, since_ms, time_now_ms()));
}

/* Renewals, and the claims again after a reconnect: each says since when
 * it is held. */
static void send_claims(struct space_link *l)
{
	for (size_t i = 0; i < l->nclaims; i++)
		send_held(l, &l->claims[i], l->claims[i].since_ms);
}

static void on_renew(uv_timer_t *t)
{
	struct space_link *l = t->data;
	if (l->joined)
		send_claims(l);
}

static void arm_renew(struct space_link *l)
{
	if (l->nclaims && !uv_is_active((uv_handle_t *)&l->renew_timer))
		uv_timer_start(&l->renew_timer, on_renew, l->cfg.claim_renew_ms,
		               l->cfg.claim_renew_ms);
}

int space_link_claim(struct space_link *l, const char *action, const char *target, int64_t since_ms,
                     struct ga_err *err)
{
	if (!l->joined || l->stopping)
		return err_set(err, "not in the agent-space room: cannot claim %s:%s",
		               action ? action : "", target ? target : "");
	if (!action || blank(action) || !target || blank(target))
		return err_set(err, "a claim needs a non-blank action and target");
	long i = held_index(l, action, target);
	if (i < 0) {
		if (l->nclaims == SPACE_LINK_MAX_CLAIMS)
			return err_set(err, "already holding %d claims; release one first",
			               SPACE_LINK_MAX_CLAIMS);
		int64_t now = time_now_ms();
		l->claims[l->nclaims] =
		        (struct held){.action = xstrdup(action),
		                      .target = xstrdup(target),
		                      .since_ms = since_ms > 0 && since_ms < now ? since_ms : now};
		const struct held *h = &l->claims[l->nclaims++];
		send_held(l, h, since_ms > 0 ? h->since_ms : 0);
	} else {
		struct held *h = &l->claims[i];
		if (since_ms > 0 && since_ms < h->since_ms)
			h->since_ms = since_ms;
		send_held(l, h, h->since_ms);
	}
	arm_renew(l);
	return 0;
}

int space_link_release(struct space_link *l, const char *action, const char *target, bool success,
                       const char *link, const char *error)
{
	long i = held_index(l, action, target);
	if (i >= 0)
		held_remove(l, (size_t)i);
	if (!l->joined)
		return -1;
	struct spc_who w = who(l);
	return spc_client_send(l->client, spc_build_action_result(&w, action, target, success, link,
	                                                          error, time_now_ms()));
}

void space_link_forget(struct space_link *l, const char *action, const char *target)
{
	long i = held_index(l, action, target);
	if (i >= 0)
		held_remove(l, (size_t)i);
}

bool space_link_holds(const struct space_link *l, const char *action, const char *target)
{
	return held_index(l, action, target) >= 0;
}

const char *space_link_claim_holder(const struct space_link *l, const char *action,
                                    const char *target)
{
	if (!l->client)
		return NULL;
	const struct spc_claim *c =
	        spc_roster_claim(spc_client_roster(l->client), action, target, time_now_ms());
	if (!c || strcmp(c->owner, l->name) == 0)
		return NULL;
	return c->owner;
}

/* "Claim conflict — <owner> and <claimant> both claimed <target>. <owner>
 * claimed first." (§3.20): the claim is the owner's; drop ours. */
static void claim_conflict(struct space_link *l, const char *msg)
{
	static const char prefix[] = "Claim conflict \xe2\x80\x94 ";
	if (strncmp(msg, prefix, sizeof prefix - 1) != 0)
		return;
	const char *rest = msg + sizeof prefix - 1;
	char mid[300];
	snprintf(mid, sizeof mid, " and %s both claimed ", l->name);
	const char *m = strstr(rest, mid);
	if (!m)
		return;
	char owner[256];
	size_t ol = (size_t)(m - rest);
	if (ol >= sizeof owner)
		return;
	memcpy(owner, rest, ol);
	owner[ol] = '\0';
	const char *tstart = m + strlen(mid);
	char suffix[300];
	snprintf(suffix, sizeof suffix, ". %s claimed first.", owner);
	size_t tl = strlen(tstart), sl = strlen(suffix);
	if (tl < sl || strcmp(tstart + tl - sl, suffix) != 0)
		return;
	char *target = xstrndup(tstart, tl - sl);
	for (size_t i = l->nclaims; i-- > 0;) {
		if (strcmp(l->claims[i].target, target) != 0)
			continue;
		char *action = xstrdup(l->claims[i].action);
		held_remove(l, i);
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "claim lost to another agent", "action", action,
		       "target", target, "holder", owner);
		if (l->h.on_claim_lost)
			l->h.on_claim_lost(l->ud, action, target, owner);
		if (l->watch)
			l->watch(l->watch_ud, action, target, owner);
		free(action);
	}
	free(target);
}

void space_link_watch_claims(struct space_link *l, space_claim_lost_fn fn, void *ud)
{
	l->watch = fn;
	l->watch_ud = ud;
}

void space_link_set_identity(struct space_link *l, const char *identity_json)
{
	free(l->identity_json);
	l->identity_json = identity_json ? xstrdup(identity_json) : NULL;
	if (l->client)
		spc_client_set_identity(l->client, identity_json);
}

/* --- peers' reflections and workspace states ------------------------------------------------ */

/* A copy of a relayed string for the prompt: at most cap bytes, cut at a
 * character boundary, U+0000 (JSON_NUL_MARK) and other controls as spaces. */
static char *note_text(const char *s, size_t cap)
{
	char *t = xstrndup(s, utf8_cut(s, strlen(s), cap));
	for (char *c = t; *c; c++)
		if (*c == JSON_NUL_MARK || ((unsigned char)*c < 0x20 && *c != '\n'))
			*c = ' ';
	return t;
}

static void refl_remove(struct space_link *l, size_t i)
{
	free(l->refl[i].name);
	free(l->refl[i].summary);
	memmove(&l->refl[i], &l->refl[i + 1], (l->nrefl - i - 1) * sizeof l->refl[0]);
	l->nrefl--;
}

static void ws_remove(struct space_link *l, size_t i)
{
	free(l->ws[i].workspace);
	free(l->ws[i].reporter);
	memmove(&l->ws[i], &l->ws[i + 1], (l->nws - i - 1) * sizeof l->ws[0]);
	l->nws--;
}

static void res_remove(struct space_link *l, size_t i)
{
	free(l->res[i].name);
	free(l->res[i].action);
	free(l->res[i].target);
	free(l->res[i].link);
	memmove(&l->res[i], &l->res[i + 1], (l->nres - i - 1) * sizeof l->res[0]);
	l->nres--;
}

static void notes_clear(struct space_link *l)
{
	while (l->nrefl)
		refl_remove(l, l->nrefl - 1);
	while (l->nws)
		ws_remove(l, l->nws - 1);
	while (l->nres)
		res_remove(l, l->nres - 1);
}

/* A member reported work done: kept SPACE_LINK_RESULT_KEEP_MS, the oldest
 * giving way (a member leaving does not undo what it did). */
static void note_result(struct space_link *l, const struct spc_msg *m)
{
	if (!m->success || !m->action || !m->target || blank(m->action) || blank(m->target))
		return;
	if (l->nres == SPACE_LINK_MAX_RESULTS)
		res_remove(l, 0);
	l->res[l->nres++] = (struct peer_result){
	        .name = xstrdup(m->name),
	        .action = note_text(m->action, SPACE_LINK_RESULT_KEEP_BYTES),
	        .target = xstrdup(m->target),
	        .link = note_text(m->link ? m->link : "", SPACE_LINK_RESULT_KEEP_BYTES),
	        .time_ms = time_now_ms()};
}

const char *space_link_result_of(const struct space_link *l, const char *action, const char *target,
                                 const char **link)
{
	int64_t now = time_now_ms();
	for (size_t i = l->nres; action && target && i-- > 0;) {
		const struct peer_result *r = &l->res[i];
		if (now - r->time_ms > SPACE_LINK_RESULT_KEEP_MS)
			break; /* oldest first: the rest are older */
		if (strcmp(r->action, action) == 0 && strcmp(r->target, target) == 0) {
			if (link)
				*link = r->link;
			return r->name;
		}
	}
	return NULL;
}

/* The room relays any JSON number (§3.12): fractions truncated, the rest
 * clamped so that the prompt never prints nonsense. */
static int64_t note_number(const cJSON *root, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, field);
	if (!cJSON_IsNumber(v))
		return 0;
	double d = v->valuedouble;
	const double lim = 9007199254740992.0; /* 2^53 */
	if (d != d)
		return 0;
	if (d > lim)
		d = lim;
	if (d < -lim)
		d = -lim;
	return (int64_t)d;
}

static void note_reflection(struct space_link *l, const struct spc_msg *m)
{
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(m->root, "summary");
	if (!cJSON_IsString(sv) || !sv->valuestring || blank(sv->valuestring))
		return;
	size_t i = 0;
	while (i < l->nrefl && strcmp(l->refl[i].name, m->name) != 0)
		i++;
	if (i < l->nrefl)
		refl_remove(l, i); /* the latest goes to the end */
	else if (l->nrefl == SPACE_LINK_MAX_REFLECTIONS)
		refl_remove(l, 0);
	l->refl[l->nrefl++] = (struct peer_reflection){
	        .name = xstrdup(m->name),
	        .summary = note_text(sv->valuestring, SPACE_LINK_REFLECTION_KEEP_BYTES),
	        .time_ms = m->time_ms};
}

static void note_workspace(struct space_link *l, const struct spc_msg *m)
{
	const cJSON *wv = cJSON_GetObjectItemCaseSensitive(m->root, "workspace");
	if (!cJSON_IsString(wv) || !wv->valuestring || blank(wv->valuestring))
		return;
	char *name = note_text(wv->valuestring, SPACE_LINK_WORKSPACE_KEEP_BYTES);
	size_t i = 0;
	while (i < l->nws && strcmp(l->ws[i].workspace, name) != 0)
		i++;
	if (i < l->nws)
		ws_remove(l, i);
	else if (l->nws == SPACE_LINK_MAX_WORKSPACES)
		ws_remove(l, 0);
	l->ws[l->nws++] =
	        (struct peer_workspace){.workspace = name,
	                                .reporter = xstrdup(m->name),
	                                .plan = note_number(m->root, "planNumber"),
	                                .total = note_number(m->root, "totalTasks"),
	                                .completed = note_number(m->root, "completedTasks"),
	                                .blocked = note_number(m->root, "blockedTasks"),
	                                .in_progress = note_number(m->root, "inProgressTasks"),
	                                .time_ms = m->time_ms};
}

static void note_leave(struct space_link *l, const char *name)
{
	for (size_t i = l->nrefl; i-- > 0;)
		if (strcmp(l->refl[i].name, name) == 0)
			refl_remove(l, i);
	for (size_t i = l->nws; i-- > 0;)
		if (strcmp(l->ws[i].reporter, name) == 0)
			ws_remove(l, i);
}

static void peer_notes_apply(struct space_link *l, const struct spc_msg *m)
{
	if (m->type == SPC_T_PRESENCE && l->client) {
		/* A peer that left while we were away sent no leave we saw. */
		const struct spc_roster *r = spc_client_roster(l->client);
		for (size_t i = l->nrefl; i-- > 0;)
			if (!spc_roster_find_name(r, l->refl[i].name))
				refl_remove(l, i);
		return;
	}
	if (!m->name || strcmp(m->name, l->name) == 0)
		return;
	switch (m->type) {
	case SPC_T_REFLECTION:
		note_reflection(l, m);
		break;
	case SPC_T_WORKSPACE_STATE:
		note_workspace(l, m);
		break;
	case SPC_T_ACTION_RESULT:
		note_result(l, m);
		break;
	case SPC_T_LEAVE:
		note_leave(l, m->name);
		break;
	default:
		break;
	}
}

int space_link_send_reflection(struct space_link *l, const char *summary, struct ga_err *err)
{
	if (!l->joined)
		return err_set(err, "the reflection was not sent: not joined to the room");
	if (!summary || blank(summary))
		return err_set(err, "the reflection was not sent: the summary is blank");
	size_t units = spc_js_length(summary, strlen(summary));
	if (units > SPACE_LINK_REFLECTION_MAX_UNITS)
		return err_set(err,
		               "the reflection was not sent: %zu UTF-16 units, the room relays at "
		               "most %d",
		               units, SPACE_LINK_REFLECTION_MAX_UNITS);
	struct spc_who w = who(l);
	char *json = spc_build_reflection(&w, summary, time_now_ms());
	if (!json || spc_client_send(l->client, json) != 0)
		return err_set(err, "the reflection was not sent: the room's send queue is full "
		                    "or the connection ended");
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "reflection sent", "summary", summary);
	return 0;
}

int space_link_send_workspace_state(struct space_link *l, const char *workspace, int64_t plan,
                                    int64_t total, int64_t completed, int64_t blocked,
                                    int64_t in_progress, struct ga_err *err)
{
	return space_link_send_workspace_tasks(l, workspace, plan, total, completed, blocked,
	                                       in_progress, NULL, NULL, err);
}

/* The first max objects of arr (an array, or nothing) as o[key]. */
static void add_objects(cJSON *o, const char *key, const cJSON *arr, int max)
{
	if (!cJSON_IsArray(arr))
		return;
	cJSON *to = cJSON_AddArrayToObject(o, key);
	const cJSON *t;
	int n = 0;
	cJSON_ArrayForEach(t, arr)
	{
		if (cJSON_IsObject(t) && n++ < max)
			cJSON_AddItemToArray(to, cJSON_Duplicate(t, 1));
	}
}

int space_link_send_workspace_tasks(struct space_link *l, const char *workspace, int64_t plan,
                                    int64_t total, int64_t completed, int64_t blocked,
                                    int64_t in_progress, const cJSON *tasks, const cJSON *pulls,
                                    struct ga_err *err)
{
	if (!l->joined)
		return err_set(err, "the workspace state was not sent: not joined to the room");
	if (!workspace || blank(workspace))
		return err_set(err, "the workspace state was not sent: the workspace is blank");
	size_t units = spc_js_length(workspace, strlen(workspace));
	if (units > SPACE_LINK_WORKSPACE_MAX_UNITS)
		return err_set(err,
		               "the workspace state was not sent: the workspace name is %zu UTF-16 "
		               "units, at most %d",
		               units, SPACE_LINK_WORKSPACE_MAX_UNITS);
	const char *names[] = {"planNumber", "totalTasks", "completedTasks", "blockedTasks",
	                       "inProgressTasks"};
	const int64_t vals[] = {plan, total, completed, blocked, in_progress};
	for (size_t i = 0; i < 5; i++)
		if (vals[i] < 0)
			return err_set(err,
			               "the workspace state was not sent: %s is %lld (negative)",
			               names[i], (long long)vals[i]);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "workspace_state");
	cJSON_AddStringToObject(o, "name", l->name);
	cJSON_AddStringToObject(o, "id", l->id);
	cJSON_AddStringToObject(o, "workspace", workspace);
	for (size_t i = 0; i < 5; i++)
		cJSON_AddNumberToObject(o, names[i], (double)vals[i]);
	add_objects(o, "tasks", tasks, SPACE_LINK_WORKSPACE_TASKS_MAX);
	add_objects(o, "pulls", pulls, SPACE_LINK_WORKSPACE_PULLS_MAX);
	char iso[TIME_ISO_LEN + 1];
	cJSON_AddStringToObject(o, "timestamp", time_format_iso(time_now_ms(), iso));
	char *json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!json || spc_client_send(l->client, json) != 0)
		return err_set(err, "the workspace state was not sent: the room's send queue is "
		                    "full or the connection ended");
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "workspace state sent", "workspace", workspace, "plan",
	       LOG_INT(plan), "total", LOG_INT(total), "completed", LOG_INT(completed));
	return 0;
}

size_t space_link_reflection_count(const struct space_link *l)
{
	return l->nrefl;
}

bool space_link_reflection_at(const struct space_link *l, size_t i,
                              struct space_reflection_view *out)
{
	if (i >= l->nrefl)
		return false;
	*out = (struct space_reflection_view){.name = l->refl[i].name,
	                                      .summary = l->refl[i].summary,
	                                      .time_ms = l->refl[i].time_ms};
	return true;
}

size_t space_link_workspace_count(const struct space_link *l)
{
	return l->nws;
}

size_t space_link_result_count(const struct space_link *l)
{
	return l->nres;
}

bool space_link_result_at(const struct space_link *l, size_t i, struct space_result_view *out)
{
	if (i >= l->nres)
		return false;
	const struct peer_result *r = &l->res[i];
	*out = (struct space_result_view){.name = r->name,
	                                  .action = r->action,
	                                  .target = r->target,
	                                  .link = r->link,
	                                  .time_ms = r->time_ms};
	return true;
}

bool space_link_workspace_at(const struct space_link *l, size_t i, struct space_workspace_view *out)
{
	if (i >= l->nws)
		return false;
	const struct peer_workspace *w = &l->ws[i];
	*out = (struct space_workspace_view){.workspace = w->workspace,
	                                     .reporter = w->reporter,
	                                     .plan = w->plan,
	                                     .total = w->total,
	                                     .completed = w->completed,
	                                     .blocked = w->blocked,
	                                     .in_progress = w->in_progress,
	                                     .time_ms = w->time_ms};
	return true;
}

/* --- client events -------------------------------------------------------------------------- */

static void on_message(void *ud, const struct spc_msg *m, unsigned changed)
{
	struct space_link *l = ud;
	if (m->type == SPC_T_ERROR && m->message)
		claim_conflict(l, m->message);
	peer_notes_apply(l, m);
	if (m->type == SPC_T_CLAIM && m->name && m->action && m->target &&
	    strcmp(m->name, l->name) != 0 && l->h.on_peer_claim && !l->stopping)
		l->h.on_peer_claim(l->ud, m->name, m->action, m->target);
	if ((changed & SPC_CHANGED_MEMBERS) && l->h.on_presence && !l->stopping)
		l->h.on_presence(l->ud);
}

static void on_joined(void *ud)
{
	struct space_link *l = ud;
	l->joined = true;
	/* The room forgot our state and claims with the old connection. */
	if (l->state_set)
		send_state(l);
	send_claims(l);
	arm_renew(l);
	if (l->h.on_connection)
		l->h.on_connection(l->ud, true, NULL);
	say_kick(l);
}

static void on_left(void *ud, const char *why)
{
	struct space_link *l = ud;
	l->joined = false;
	uv_timer_stop(&l->renew_timer);
	fail_all_says(l, SPACE_SAY_DISCONNECTED);
	/* The room replays its workspace cache after the next join. */
	while (l->nws)
		ws_remove(l, l->nws - 1);
	if (l->h.on_connection)
		l->h.on_connection(l->ud, false, why);
	/* The member list went with the connection. */
	if (l->h.on_presence && !l->stopping)
		l->h.on_presence(l->ud);
}

/* --- life cycle ------------------------------------------------------------------------------ */

struct space_link *space_link_new(uv_loop_t *loop, const struct space_link_config *cfg,
                                  const struct space_link_handlers *h, void *ud, struct ga_err *err)
{
	struct space_link *l = xcalloc(1, sizeof *l);
	l->loop = loop;
	l->cfg = *cfg;
	l->name = xstrdup(cfg->agent_name ? cfg->agent_name : "");
	l->version = xstrdup(cfg->version ? cfg->version : "");
	l->space_url = cfg->space_url ? xstrdup(cfg->space_url) : NULL;
	l->identity_json = cfg->identity_json ? xstrdup(cfg->identity_json) : NULL;
	l->cfg.agent_name = l->name;
	l->cfg.version = l->version;
	l->cfg.space_url = l->space_url;
	l->cfg.identity_json = l->identity_json;
	l->cfg.st = NULL; /* only needed here */
	space_identity_agent_id(cfg->st, l->name, time_now_ms(), l->id);
	if (h)
		l->h = *h;
	l->ud = ud;

	/* space-protocol.md §7.2: current agents always send their
	 * capabilities — ["social"] for --social-only, else all three. */
	static const char *const social[] = {"social"};
	static const char *const full[] = {"social", "github", "code"};
	struct spc_client_config cc = {
	        .name = l->name,
	        .id = l->id,
	        .version = l->version,
	        .caps = cfg->social_only ? social : full,
	        .ncaps = cfg->social_only ? 1 : 3,
	        .space_url = l->space_url,
	        .identity_json = l->identity_json,
	        .t = cfg->t,
	};
	struct spc_client_events ev = {.on_chat = on_client_chat,
	                               .on_message = on_message,
	                               .on_joined = on_joined,
	                               .on_left = on_left};
	l->client = spc_client_new(loop, &cc, &ev, l, err);
	if (!l->client) {
		free(l->name);
		free(l->version);
		free(l->space_url);
		free(l->identity_json);
		free(l);
		return NULL;
	}
	uv_timer_init(loop, &l->say_timer);
	uv_timer_init(loop, &l->renew_timer);
	l->say_timer.data = l->renew_timer.data = l;
	l->open_handles = 2;
	return l;
}

void space_link_start(struct space_link *l)
{
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "joining the agent-space", "name", l->name, "id", l->id,
	       "capabilities",
	       l->cfg.social_only ? "[\"social\"]" : "[\"social\",\"github\",\"code\"]");
	spc_client_start(l->client);
}

static void free_now(struct space_link *l)
{
	for (size_t i = 0; i < l->nclaims; i++) {
		free(l->claims[i].action);
		free(l->claims[i].target);
	}
	notes_clear(l);
	free(l->detail);
	free(l->name);
	free(l->version);
	free(l->space_url);
	free(l->identity_json);
	free(l);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct space_link *l = h->data;
	if (--l->open_handles > 0)
		return;
	void (*done)(void *) = l->done;
	void *done_ud = l->done_ud;
	bool free_it = l->free_when_closed;
	l->done = NULL;
	if (done)
		done(done_ud);
	if (free_it)
		free_now(l);
}

static void close_handles(struct space_link *l)
{
	if (l->closing)
		return;
	l->closing = true;
	uv_timer_stop(&l->say_timer);
	uv_timer_stop(&l->renew_timer);
	uv_close((uv_handle_t *)&l->say_timer, on_handle_closed);
	uv_close((uv_handle_t *)&l->renew_timer, on_handle_closed);
}

static void on_client_stopped(void *ud)
{
	struct space_link *l = ud;
	spc_client_free(l->client);
	l->client = NULL;
	close_handles(l);
}

void space_link_stop(struct space_link *l, void (*done)(void *ud), void *ud)
{
	if (!l || l->stopping)
		return;
	l->stopping = true;
	l->joined = false;
	l->done = done;
	l->done_ud = ud;
	fail_all_says(l, SPACE_SAY_STOPPED);
	uv_timer_stop(&l->renew_timer);
	spc_client_stop(l->client, on_client_stopped, l);
}

void space_link_free(struct space_link *l)
{
	if (!l)
		return;
	if (l->closing && l->open_handles == 0) {
		free_now(l);
		return;
	}
	/* Not finished stopping: tear down now (see spc_client_free). */
	l->free_when_closed = true;
	l->done = NULL;
	if (!l->stopping) {
		l->stopping = true;
		l->joined = false;
		fail_all_says(l, SPACE_SAY_STOPPED);
	}
	if (l->client) {
		spc_client_free(l->client);
		l->client = NULL;
	}
	close_handles(l);
}

/* --- queries ---------------------------------------------------------------------------------- */

bool space_link_joined(const struct space_link *l)
{
	return l->joined;
}

const char *space_link_agent_id(const struct space_link *l)
{
	return l->id;
}

const struct spc_client *space_link_client(const struct space_link *l)
{
	return l->client;
}

size_t space_link_member_count(const struct space_link *l)
{
	return l->client ? spc_client_roster(l->client)->nmembers : 0;
}

bool space_link_member_at(const struct space_link *l, size_t i, struct space_member_view *out)
{
	if (!l->client)
		return false;
	const struct spc_roster *r = spc_client_roster(l->client);
	if (i >= r->nmembers)
		return false;
	const struct spc_member *m = &r->members[i];
	out->name = m->name;
	out->id = m->id;
	out->version = m->version;
	out->caps = (const char *const *)m->caps;
	out->ncaps = m->ncaps;
	out->has_caps = m->has_caps;
	out->identity_json = m->identity_json;
	out->typing = spc_member_typing(m, time_now_ms());
	out->state = m->state;
	out->state_detail = m->state_detail;
	out->self = strcmp(m->id, l->id) == 0;
	return true;
}

bool space_link_member_has_cap(const struct space_link *l, const char *name, const char *cap)
{
	if (!l->client)
		return false;
	const struct spc_member *m = spc_roster_find_name(spc_client_roster(l->client), name);
	return m && spc_member_has_cap(m, cap);
}

size_t space_link_peer_logins(const struct space_link *l, const char **out, size_t cap)
{
	if (!l->client)
		return 0;
	const struct spc_roster *r = spc_client_roster(l->client);
	size_t n = 0;
	for (size_t i = 0; i < r->nmembers && n < cap; i++) {
		const struct spc_member *m = &r->members[i];
		if (!m->github_login[0] || strcmp(m->id, l->id) == 0 ||
		    (m->has_caps && !spc_member_has_cap(m, "github")))
			continue;
		out[n++] = m->github_login;
	}
	return n;
}
