/* The gate: loop prevention before any model call; see gate.h. */
#include "modules/gate/gate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/config.h"
#include "common/hash.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

#define KEY_BYTES       16 /* SHA-256 prefix kept for keys and texts */
#define RING_FIRST_CAP  4
#define TABLE_FIRST_CAP 16
#define NAME_MAX_BYTES  64  /* names quoted in reasons are cut here */
#define KEY_SHOWN_MAX   100 /* keys (claim, conversation) quoted in reasons: whole up to here */

/* A ring of event times, oldest first, growing up to GATE_RATE_SLOTS. */
struct ring {
	int64_t *t;
	uint32_t cap, n, head; /* head: the oldest entry */
};

struct conv_entry {
	unsigned char key[KEY_BYTES];
	uint64_t tick;      /* when it was last noted (LRU) */
	struct ring events; /* incoming events */
	struct ring run;    /* the current run of agent messages (ours included) */
};

struct pair_entry {
	unsigned char key[KEY_BYTES];
	uint64_t tick;
	struct ring events; /* their events and our replies to them */
};

struct dup_entry {
	unsigned char digest[KEY_BYTES];
	int64_t time_ms;
	bool used;
};

struct gate_state {
	struct conv_entry *convs;
	size_t nconvs, capconvs;
	struct pair_entry *pairs;
	size_t npairs, cappairs;
	struct dup_entry dup[GATE_DUP_SLOTS];
	size_t dup_next, ndup;
	uint64_t tick;
};

/* ---- configuration --------------------------------------------------------- */

void gate_config_defaults(struct gate_config *c)
{
	memset(c, 0, sizeof *c);
	c->max_acl = CONFIG_DEFAULT_MAX_ACL;
	c->max_events = CONFIG_DEFAULT_GATE_MAX_EVENTS;
	c->window_ms = CONFIG_DEFAULT_GATE_WINDOW_MS;
	c->cooldown_ms = CONFIG_DEFAULT_GATE_COOLDOWN_MS;
	c->max_bot_chain = CONFIG_DEFAULT_MAX_BOT_CHAIN_LENGTH;
	c->bot_chain_quiet_ms = GATE_BOT_CHAIN_QUIET_MS;
	c->duplicate_window_ms = GATE_DUPLICATE_WINDOW_MS;
}

const char *gate_rule_names(void)
{
	return "self, history, paused, owner_control, chain_length, response_only, banlist, "
	       "duplicate_payload, bot_chain, conversation_budget, pair_budget, social_mechanics, "
	       "claim, pass";
}

/* ---- rings ------------------------------------------------------------------- */

static int64_t ring_at(const struct ring *r, uint32_t i)
{
	return r->t[(r->head + i) % r->cap];
}

static void ring_push(struct ring *r, int64_t v)
{
	if (r->n == r->cap && r->cap < GATE_RATE_SLOTS) {
		uint32_t ncap = r->cap ? r->cap * 2 : RING_FIRST_CAP;
		if (ncap > GATE_RATE_SLOTS)
			ncap = GATE_RATE_SLOTS;
		int64_t *nt = xreallocarray(NULL, ncap, sizeof *nt);
		for (uint32_t i = 0; i < r->n; i++)
			nt[i] = ring_at(r, i);
		free(r->t);
		r->t = nt;
		r->cap = ncap;
		r->head = 0;
	}
	if (r->n == r->cap) {
		r->t[r->head] = v;
		r->head = (r->head + 1) % r->cap;
		return;
	}
	r->t[(r->head + r->n) % r->cap] = v;
	r->n++;
}

static void ring_free(struct ring *r)
{
	free(r->t);
	memset(r, 0, sizeof *r);
}

/* Entries [0, upto) within window of `at` (at - t < window). When older
 * entries were dropped the count may be short (see gate.h "Bounds"). */
static int64_t ring_in_window(const struct ring *r, int64_t at, int64_t window, uint32_t upto)
{
	int64_t n = 0;
	for (uint32_t j = 0; j < upto; j++)
		if (at - ring_at(r, j) < window)
			n++;
	return n;
}

/* ---- keys and tables ------------------------------------------------------- */

static void key_of(const char *s, unsigned char out[KEY_BYTES])
{
	unsigned char h[32];
	if (!s)
		s = "";
	sha256_raw(s, strlen(s), h);
	memcpy(out, h, KEY_BYTES);
}

static const char *author_key(const struct conv_event *ev)
{
	if (ev->author_id && *ev->author_id)
		return ev->author_id;
	return ev->author_name ? ev->author_name : "";
}

static const struct conv_entry *conv_find(const struct gate_state *st, const unsigned char *key)
{
	if (!st)
		return NULL;
	for (size_t i = 0; i < st->nconvs; i++)
		if (memcmp(st->convs[i].key, key, KEY_BYTES) == 0)
			return &st->convs[i];
	return NULL;
}

static const struct pair_entry *pair_find(const struct gate_state *st, const unsigned char *key)
{
	if (!st)
		return NULL;
	for (size_t i = 0; i < st->npairs; i++)
		if (memcmp(st->pairs[i].key, key, KEY_BYTES) == 0)
			return &st->pairs[i];
	return NULL;
}

/* The entry for key, created when missing; at GATE_MAX_CONVERSATIONS the one
 * noted least recently is dropped for it. */
static struct conv_entry *conv_get(struct gate_state *st, const char *conversation)
{
	unsigned char key[KEY_BYTES];
	key_of(conversation, key);
	struct conv_entry *e = (struct conv_entry *)conv_find(st, key);
	if (!e) {
		if (st->nconvs < GATE_MAX_CONVERSATIONS) {
			if (st->nconvs == st->capconvs) {
				size_t ncap = st->capconvs ? st->capconvs * 2 : TABLE_FIRST_CAP;
				if (ncap > GATE_MAX_CONVERSATIONS)
					ncap = GATE_MAX_CONVERSATIONS;
				st->convs = xreallocarray(st->convs, ncap, sizeof *st->convs);
				st->capconvs = ncap;
			}
			e = &st->convs[st->nconvs++];
		} else {
			e = &st->convs[0];
			for (size_t i = 1; i < st->nconvs; i++)
				if (st->convs[i].tick < e->tick)
					e = &st->convs[i];
			ring_free(&e->events);
			ring_free(&e->run);
		}
		memset(e, 0, sizeof *e);
		memcpy(e->key, key, KEY_BYTES);
	}
	e->tick = ++st->tick;
	return e;
}

static struct pair_entry *pair_get(struct gate_state *st, const char *peer)
{
	unsigned char key[KEY_BYTES];
	key_of(peer, key);
	struct pair_entry *e = (struct pair_entry *)pair_find(st, key);
	if (!e) {
		if (st->npairs < GATE_MAX_PAIRS) {
			if (st->npairs == st->cappairs) {
				size_t ncap = st->cappairs ? st->cappairs * 2 : TABLE_FIRST_CAP;
				if (ncap > GATE_MAX_PAIRS)
					ncap = GATE_MAX_PAIRS;
				st->pairs = xreallocarray(st->pairs, ncap, sizeof *st->pairs);
				st->cappairs = ncap;
			}
			e = &st->pairs[st->npairs++];
		} else {
			e = &st->pairs[0];
			for (size_t i = 1; i < st->npairs; i++)
				if (st->pairs[i].tick < e->tick)
					e = &st->pairs[i];
			ring_free(&e->events);
		}
		memset(e, 0, sizeof *e);
		memcpy(e->key, key, KEY_BYTES);
	}
	e->tick = ++st->tick;
	return e;
}

struct gate_state *gate_state_new(void)
{
	return xcalloc(1, sizeof(struct gate_state));
}

void gate_state_free(struct gate_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nconvs; i++) {
		ring_free(&s->convs[i].events);
		ring_free(&s->convs[i].run);
	}
	for (size_t i = 0; i < s->npairs; i++)
		ring_free(&s->pairs[i].events);
	free(s->convs);
	free(s->pairs);
	free(s);
}

void gate_state_stats(const struct gate_state *s, struct gate_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!s)
		return;
	out->conversations = s->nconvs;
	out->pairs = s->npairs;
	out->duplicates = s->ndup;
	out->bytes = sizeof *s + s->capconvs * sizeof *s->convs + s->cappairs * sizeof *s->pairs;
	for (size_t i = 0; i < s->nconvs; i++)
		out->bytes +=
		        ((size_t)s->convs[i].events.cap + s->convs[i].run.cap) * sizeof(int64_t);
	for (size_t i = 0; i < s->npairs; i++)
		out->bytes += (size_t)s->pairs[i].events.cap * sizeof(int64_t);
}

/* ---- who is who -------------------------------------------------------------- */

/* An agent: a peer, or anyone but the owner whose platform marks them a bot. */
static bool is_agent(const struct conv_event *ev)
{
	return ev->author_kind == CONV_AUTHOR_PEER ||
	       (ev->is_bot && ev->author_kind != CONV_AUTHOR_OWNER);
}

static const char *skip_at(const char *s)
{
	return (s && *s == '@') ? s + 1 : s;
}

static bool names_us(const char *name, const struct gate_config *cfg)
{
	name = skip_at(name);
	if (!name || !*name)
		return false;
	const char *me = skip_at(cfg->self_name);
	if (me && *me && strcasecmp(name, me) == 0)
		return true;
	me = skip_at(cfg->self_id);
	return me && *me && strcasecmp(name, me) == 0;
}

static bool addresses_us(const struct conv_event *ev, const struct gate_input *in,
                         const struct gate_config *cfg)
{
	if (ev->addressed_me || in->replies_to_us)
		return true;
	for (size_t i = 0; i < ev->naddressed && i < CONV_MAX_ADDRESSED; i++)
		if (names_us(ev->addressed[i], cfg))
			return true;
	return false;
}

/* The banlist entry that matches the author, or NULL. */
static const char *banned(const struct conv_event *ev, const struct gate_config *cfg)
{
	if (!cfg->banlist)
		return NULL;
	for (const char *const *b = cfg->banlist; *b; b++) {
		if (!**b)
			continue;
		if ((ev->author_id && strcasecmp(ev->author_id, *b) == 0) ||
		    (ev->author_name && strcasecmp(ev->author_name, *b) == 0))
			return *b;
	}
	return NULL;
}

/* ---- texts ------------------------------------------------------------------- */

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* SHA-256 prefix of (conversation, author, text): the text NFKC case-folded
 * when it is valid UTF-8 without NUL bytes, whitespace runs made one space,
 * the ends trimmed. */
static void payload_digest(const struct conv_event *ev, unsigned char out[KEY_BYTES])
{
	const char *text = ev->text ? ev->text : "";
	size_t len = ev->text ? ev->text_len : 0;
	char *folded = NULL;
	if (!memchr(text, '\0', len) && utf8_valid(text, len))
		folded = utf8_nfkc_casefold(text, len);
	const char *src = folded ? folded : text;
	size_t slen = folded ? strlen(folded) : len;
	const char *conv = ev->conversation ? ev->conversation : "";
	const char *who = author_key(ev);
	size_t clen = strlen(conv), wlen = strlen(who);
	char *buf = xmalloc(clen + wlen + 2 + slen + 1);
	memcpy(buf, conv, clen + 1);
	memcpy(buf + clen + 1, who, wlen + 1);
	size_t start = clen + wlen + 2, n = start;
	bool space = false;
	for (size_t i = 0; i < slen; i++) {
		unsigned char c = (unsigned char)src[i];
		if (is_ws(c)) {
			space = n > start;
			continue;
		}
		if (space)
			buf[n++] = ' ';
		space = false;
		buf[n++] = (char)c;
	}
	unsigned char h[32];
	sha256_raw(buf, n, h);
	memcpy(out, h, KEY_BYTES);
	free(buf);
	free(folded);
}

bool gate_is_owner_control(const char *text, size_t len)
{
	if (!text)
		return false;
	while (len > 0 && is_ws((unsigned char)text[0])) {
		text++;
		len--;
	}
	while (len > 0 && is_ws((unsigned char)text[len - 1]))
		len--;
	static const char *const commands[] = {"/resume", "/status"};
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (len == strlen(commands[i]) && strncasecmp(text, commands[i], len) == 0)
			return true;
	return false;
}

/* ---- reasons ----------------------------------------------------------------- */

/* A name for reasons: cut at NAME_MAX_BYTES on a UTF-8 boundary. */
static const char *shown(const char *s, char buf[NAME_MAX_BYTES + 1])
{
	if (!s || !*s)
		return "someone";
	size_t n = utf8_cut(s, strlen(s), NAME_MAX_BYTES);
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

/* A key (a claim's, a conversation's) for a reason: whole when it has at
 * most KEY_SHOWN_MAX bytes; otherwise its start and its end (where message
 * ids differ) around "…", each cut on a UTF-8 boundary. */
static const char *key_shown(const char *k, char buf[KEY_SHOWN_MAX + 1])
{
	size_t n = strlen(k);
	if (n <= KEY_SHOWN_MAX)
		return k;
	size_t head = utf8_cut(k, n, KEY_SHOWN_MAX / 2);
	size_t from = n - (KEY_SHOWN_MAX - KEY_SHOWN_MAX / 2 - 3);
	while (from < n && ((unsigned char)k[from] & 0xC0) == 0x80)
		from++;
	snprintf(buf, KEY_SHOWN_MAX + 1, "%.*s\xE2\x80\xA6%s", (int)head, k, k + from);
	return buf;
}

static const char *author_shown(const struct conv_event *ev, char buf[NAME_MAX_BYTES + 1])
{
	if (ev->author_name && *ev->author_name)
		return shown(ev->author_name, buf);
	return shown(ev->author_id, buf);
}

/* "60 s", "1.5 s", "250 ms", "5 min". */
static const char *dur(int64_t ms, char buf[32])
{
	if (ms < 0)
		ms = 0;
	if (ms >= 120000 && ms % 60000 == 0)
		snprintf(buf, 32, "%lld min", (long long)(ms / 60000));
	else if (ms % 1000 == 0)
		snprintf(buf, 32, "%lld s", (long long)(ms / 1000));
	else if (ms < 1000)
		snprintf(buf, 32, "%lld ms", (long long)ms);
	else
		snprintf(buf, 32, "%.1f s", (double)ms / 1000.0);
	return buf;
}

/* ---- budgets ----------------------------------------------------------------- */

struct budget_verdict {
	bool over;        /* this event is over the budget, or a cooldown runs */
	bool now_over;    /* this event itself exceeds the window */
	int64_t count;    /* events in the window that exceeded */
	int64_t until_ms; /* the cooldown ends */
	int64_t at_ms;    /* when the window was exceeded */
};

/* The sliding window over r plus this event at now, and the cooldown after
 * the last noted event that exceeded it. */
static void budget_judge(const struct ring *r, int64_t now, const struct gate_config *cfg,
                         struct budget_verdict *v)
{
	memset(v, 0, sizeof *v);
	if (cfg->max_events <= 0 || cfg->window_ms <= 0)
		return;
	int64_t max = cfg->max_events < GATE_RATE_SLOTS ? cfg->max_events : GATE_RATE_SLOTS;
	int64_t cooldown = cfg->cooldown_ms > 0 ? cfg->cooldown_ms : 0;
	int64_t n = r ? ring_in_window(r, now, cfg->window_ms, r->n) + 1 : 1;
	if (n > max) {
		v->over = v->now_over = true;
		v->count = n;
		v->at_ms = now;
		v->until_ms = now + cooldown;
		return;
	}
	if (!r || cooldown == 0)
		return;
	for (uint32_t i = r->n; i-- > 0;) {
		int64_t ti = ring_at(r, i);
		if (now - ti >= cooldown)
			continue;
		int64_t c = ring_in_window(r, ti, cfg->window_ms, i) + 1;
		if (c > max && ti + cooldown > v->until_ms) {
			v->over = true;
			v->count = c;
			v->at_ms = ti;
			v->until_ms = ti + cooldown;
		}
	}
}

/* Agent messages in a row before now: walk back while no gap reaches quiet. */
static int64_t run_length(const struct ring *r, int64_t now, int64_t quiet)
{
	if (!r)
		return 0;
	int64_t prev = now, k = 0;
	for (uint32_t i = r->n; i-- > 0;) {
		int64_t t = ring_at(r, i);
		if (quiet > 0 && prev - t >= quiet)
			return k;
		k++;
		prev = t;
	}
	return k;
}

static bool duplicate_seen(const struct gate_state *st, const unsigned char *digest, int64_t now,
                           int64_t window, int64_t *age)
{
	if (!st)
		return false;
	bool found = false;
	for (size_t i = 0; i < GATE_DUP_SLOTS; i++) {
		const struct dup_entry *e = &st->dup[i];
		if (e->used && memcmp(e->digest, digest, KEY_BYTES) == 0 &&
		    now - e->time_ms < window) {
			if (!found || now - e->time_ms < *age)
				*age = now - e->time_ms;
			found = true;
		}
	}
	return found;
}

/* ---- the check --------------------------------------------------------------- */

static void set_claim_key(struct gate_result *out, const struct conv_event *ev)
{
	const char *id = ev->message_id ? ev->message_id : "";
	size_t len = strlen(id);
	if (len > 0 && len + sizeof "respond:" <= sizeof out->claim_key) {
		snprintf(out->claim_key, sizeof out->claim_key, "respond:%s", id);
		return;
	}
	/* Too long, or no id: a digest every agent computes alike. */
	char hex[SHA256_HEX_LEN + 1];
	if (len > 0) {
		sha256_hex(id, len, hex);
	} else {
		unsigned char d[KEY_BYTES];
		payload_digest(ev, d);
		sha256_hex(d, sizeof d, hex);
	}
	snprintf(out->claim_key, sizeof out->claim_key, "respond:sha256:%s", hex);
}

void gate_check(const struct gate_state *st, const struct gate_input *in, int64_t now,
                const struct gate_config *cfg, struct gate_result *out)
{
	struct gate_config defaults;
	if (!cfg) {
		gate_config_defaults(&defaults);
		cfg = &defaults;
	}
	memset(out, 0, sizeof *out);
	out->chain_out = 1;
	if (!in || !in->ev) {
		decision_set(&out->d, VERDICT_BLOCK, "invalid",
		             "the gate was given no event to check");
		return;
	}
	const struct conv_event *ev = in->ev;
	char nb[NAME_MAX_BYTES + 1], cb[KEY_SHOWN_MAX + 1], d1[32], d2[32];
	const char *who = author_shown(ev, nb);
	const char *conv = key_shown(ev->conversation ? ev->conversation : "", cb);

	/* 1 */
	if (ev->author_kind == CONV_AUTHOR_SELF ||
	    (cfg->self_id && *cfg->self_id && ev->author_id &&
	     strcasecmp(ev->author_id, cfg->self_id) == 0)) {
		decision_set(&out->d, VERDICT_BLOCK, "self",
		             "the message is our own (%s): never answer yourself", who);
		return;
	}
	if (ev->from_history) {
		decision_set(&out->d, VERDICT_CONTEXT, "history",
		             "replayed history from %s: context, not a trigger", who);
		return;
	}
	/* 2 */
	bool owner = ev->author_kind == CONV_AUTHOR_OWNER;
	if (in->paused) {
		if (owner && gate_is_owner_control(ev->text, ev->text_len)) {
			decision_set(&out->d, VERDICT_PASS, "owner_control",
			             "paused, but the owner's control command is answered");
			return;
		}
		decision_set(&out->d, VERDICT_BLOCK, "paused",
		             "paused by the owner (kill switch): only the owner's /resume and "
		             "/status are answered");
		return;
	}

	/* 3 */
	bool agent = is_agent(ev);
	int64_t chain = 0;
	if (agent) {
		chain = 1;
		if (ev->chain > chain)
			chain = ev->chain;
		if (in->derived_chain > chain)
			chain = in->derived_chain;
	}
	out->chain_in = chain;
	out->chain_out = chain < INT64_MAX ? chain + 1 : INT64_MAX;
	int max_acl = cfg->max_acl;
	char chain_src[96] = "a person's message";
	if (agent) {
		char m[40], h[32];
		if (ev->chain_explicit)
			snprintf(m, sizeof m, "marker %lld", (long long)ev->chain);
		else if (ev->chain > 0)
			snprintf(m, sizeof m, "no marker, carried %lld", (long long)ev->chain);
		else
			snprintf(m, sizeof m, "no marker");
		if (in->derived_chain >= 0)
			snprintf(h, sizeof h, "history %lld", (long long)in->derived_chain);
		else
			snprintf(h, sizeof h, "history unknown");
		snprintf(chain_src, sizeof chain_src, "%s, %s", m, h);
	}
	bool react = false;
	if (!owner && chain > max_acl) {
		decision_set(&out->d, VERDICT_BLOCK, "chain_length",
		             "chain %lld > MAX_ACL %d: blocked, not even a reaction (%s)",
		             (long long)chain, max_acl, chain_src);
		return;
	}
	if (!owner && chain == max_acl)
		react = true;
	else
		out->courtesy = chain == (int64_t)max_acl - 1;
	const char *courtesy_note = out->courtesy ? ", with the courtesy notice" : "";

	if (owner) {
		decision_set(&out->d, VERDICT_PASS, "pass",
		             "the owner's message (chain 0): answered with chain 1%s; the owner "
		             "bypasses response-only, budgets and the claim",
		             courtesy_note);
		return;
	}

	/* 4 */
	if (agent && !in->platform_decides && !addresses_us(ev, in, cfg)) {
		decision_set(&out->d, VERDICT_CONTEXT, "response_only",
		             "%s is an agent and neither named us nor replied to us: context, not "
		             "a trigger",
		             who);
		return;
	}

	/* 5 */
	const char *ban = banned(ev, cfg);
	if (ban) {
		char bb[NAME_MAX_BYTES + 1];
		decision_set(&out->d, VERDICT_BLOCK, "banlist",
		             "%s is on the banlist (entry \"%s\")", who, shown(ban, bb));
		return;
	}
	if (agent && cfg->duplicate_window_ms > 0) {
		unsigned char dg[KEY_BYTES];
		int64_t age = 0;
		payload_digest(ev, dg);
		if (duplicate_seen(st, dg, now, cfg->duplicate_window_ms, &age)) {
			decision_set(&out->d, VERDICT_BLOCK, "duplicate_payload",
			             "%s sent the same text in %s %s ago (a repeat within %s is "
			             "dropped)",
			             who, conv, dur(age, d1), dur(cfg->duplicate_window_ms, d2));
			return;
		}
	}
	unsigned char ck[KEY_BYTES];
	key_of(ev->conversation, ck);
	const struct conv_entry *ce = conv_find(st, ck);
	if (agent && cfg->max_bot_chain > 0) {
		int64_t run = run_length(ce ? &ce->run : NULL, now, cfg->bot_chain_quiet_ms);
		/* the run ring holds GATE_RATE_SLOTS times: a larger limit is judged there */
		int64_t limit =
		        cfg->max_bot_chain < GATE_RATE_SLOTS ? cfg->max_bot_chain : GATE_RATE_SLOTS;
		if (run >= limit) {
			decision_set(&out->d, VERDICT_BLOCK, "bot_chain",
			             "%lld agent messages in a row in %s with no person and no %s "
			             "of quiet (MAX_BOT_CHAIN_LENGTH %d): blocked",
			             (long long)run, conv, dur(cfg->bot_chain_quiet_ms, d1),
			             cfg->max_bot_chain);
			return;
		}
	}
	struct budget_verdict bv;
	char iso[TIME_ISO_LEN + 1];
	budget_judge(ce ? &ce->events : NULL, now, cfg, &bv);
	if (bv.over) {
		if (bv.now_over)
			decision_set(&out->d, VERDICT_BLOCK, "conversation_budget",
			             "%s had %lld events in %s (limit %d): cooling down until %s",
			             conv, (long long)bv.count, dur(cfg->window_ms, d1),
			             cfg->max_events, time_format_iso(bv.until_ms, iso));
		else
			decision_set(&out->d, VERDICT_BLOCK, "conversation_budget",
			             "%s had %lld events in %s (limit %d) %s ago: cooling down "
			             "until %s",
			             conv, (long long)bv.count, dur(cfg->window_ms, d1),
			             cfg->max_events, dur(now - bv.at_ms, d2),
			             time_format_iso(bv.until_ms, iso));
		return;
	}
	unsigned char pk[KEY_BYTES];
	key_of(author_key(ev), pk);
	const struct pair_entry *pe = pair_find(st, pk);
	budget_judge(pe ? &pe->events : NULL, now, cfg, &bv);
	if (bv.over) {
		if (bv.now_over)
			decision_set(&out->d, VERDICT_BLOCK, "pair_budget",
			             "%s and we exchanged %lld events in %s (limit %d, both "
			             "directions): cooling down until %s",
			             who, (long long)bv.count, dur(cfg->window_ms, d1),
			             cfg->max_events, time_format_iso(bv.until_ms, iso));
		else
			decision_set(&out->d, VERDICT_BLOCK, "pair_budget",
			             "%s and we exchanged %lld events in %s (limit %d, both "
			             "directions) %s ago: cooling down until %s",
			             who, (long long)bv.count, dur(cfg->window_ms, d1),
			             cfg->max_events, dur(now - bv.at_ms, d2),
			             time_format_iso(bv.until_ms, iso));
		return;
	}
	if (react) {
		out->courtesy = false;
		decision_set(&out->d, VERDICT_REACT, "chain_length",
		             "chain %lld = MAX_ACL %d: a reaction at most, no reply (%s)",
		             (long long)chain, max_acl, chain_src);
		return;
	}
	bool mechanics = cfg->mechanics_platforms == 0 ||
	                 (cfg->mechanics_platforms & (1u << (unsigned)in->ev->platform)) != 0;
	if (mechanics && cfg->max_replies_per_conversation > 0 &&
	    in->our_replies >= cfg->max_replies_per_conversation) {
		out->courtesy = false;
		decision_set(&out->d, VERDICT_REACT, "social_mechanics",
		             "we already replied %lld times in %s (SELF.md: at most %d): a "
		             "reaction at most",
		             (long long)in->our_replies, conv, cfg->max_replies_per_conversation);
		return;
	}
	if (mechanics && cfg->max_thread_depth > 0 && in->thread_depth > cfg->max_thread_depth) {
		out->courtesy = false;
		decision_set(&out->d, VERDICT_REACT, "social_mechanics",
		             "thread depth %d > %d (SELF.md): a reaction at most", in->thread_depth,
		             cfg->max_thread_depth);
		return;
	}

	/* 6 */
	if (agent) {
		out->claim_needed = true;
		out->claim_ttl_ms = GATE_CLAIM_TTL_MS;
		set_claim_key(out, ev);
		char kb[KEY_SHOWN_MAX + 1];
		decision_set(&out->d, VERDICT_PASS, "claim",
		             "%s addressed us (chain %lld: %s): claim %s for %s before answering; "
		             "the reply carries chain %lld%s",
		             who, (long long)chain, chain_src, key_shown(out->claim_key, kb),
		             dur(GATE_CLAIM_TTL_MS, d1), (long long)out->chain_out, courtesy_note);
		return;
	}
	decision_set(&out->d, VERDICT_PASS, "pass",
	             "%s is a person (chain 0): the reply carries chain 1%s", who, courtesy_note);
}

/* ---- noting ------------------------------------------------------------------ */

void gate_note_incoming(struct gate_state *st, const struct conv_event *ev, int64_t now)
{
	if (!st || !ev || ev->from_history || ev->author_kind == CONV_AUTHOR_SELF)
		return;
	struct conv_entry *ce = conv_get(st, ev->conversation);
	ring_push(&ce->events, now);
	if (is_agent(ev)) {
		ring_push(&ce->run, now);
		struct dup_entry *d = &st->dup[st->dup_next];
		payload_digest(ev, d->digest);
		d->time_ms = now;
		if (!d->used)
			st->ndup++;
		d->used = true;
		st->dup_next = (st->dup_next + 1) % GATE_DUP_SLOTS;
	} else {
		ring_free(&ce->run); /* a person spoke: the run of agents ends */
	}
	struct pair_entry *pe = pair_get(st, author_key(ev));
	ring_push(&pe->events, now);
}

void gate_note_reply(struct gate_state *st, const char *conversation, const char *peer_id,
                     int64_t now)
{
	if (!st)
		return;
	struct conv_entry *ce = conv_get(st, conversation);
	ring_push(&ce->run, now);
	if (peer_id && *peer_id) {
		struct pair_entry *pe = pair_get(st, peer_id);
		ring_push(&pe->events, now);
	}
}
