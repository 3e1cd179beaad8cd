/*
 * participation — the per-tick policy. See participation.h.
 */
#include "modules/participation/participation.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/utf8.h"
#include "common/xalloc.h"

/* --- small helpers ----------------------------------------------------- */

static struct part_entry *hist_at(struct part_state *st, size_t i)
{
	return &st->hist[(st->hist_start + i) % PART_HISTORY_MAX];
}

const struct part_entry *part_history_at(const struct part_state *st, size_t i)
{
	if (i >= st->hist_n)
		return NULL;
	return &st->hist[(st->hist_start + i) % PART_HISTORY_MAX];
}

static void entry_free(struct part_entry *e)
{
	free(e->text);
	memset(e, 0, sizeof *e);
}

static void history_clear(struct part_state *st)
{
	for (size_t i = 0; i < st->hist_n; i++)
		entry_free(hist_at(st, i));
	st->hist_start = st->hist_n = 0;
}

static void request_clear(struct part_state *st)
{
	free(st->req_content);
	st->req_content = NULL;
	st->req_len = 0;
	st->req_seq = 0;
	st->req_at_ms = 0;
	st->fulfilled = true; /* §6: initially true, so nothing escalates */
	st->fulfilled_by = NULL;
	st->cycles = st->owner_rejections = st->forced_attempts = 0;
	st->defaulted_n = 0;
}

bool part_note_defaulted(struct part_state *st, const char *name)
{
	if (!st->req_content || !name || !name[0] || strlen(name) >= PART_NAME_MAX ||
	    st->defaulted_n == PART_DEFAULTED_MAX)
		return false;
	for (size_t i = 0; i < st->defaulted_n; i++)
		if (strcmp(st->defaulted[i], name) == 0)
			return false;
	snprintf(st->defaulted[st->defaulted_n++], PART_NAME_MAX, "%s", name);
	return true;
}

size_t part_note_claimers_defaulted(struct part_state *st, char *names, size_t cap)
{
	size_t n = 0, used = 0;
	if (cap)
		names[0] = '\0';
	if (!st->req_content)
		return 0;
	for (size_t i = 0; i < PART_DEFAULTED_MAX; i++) {
		const struct part_claimer *c = &st->claimers[i];
		if (!c->seq || c->seq <= st->req_seq || !part_note_defaulted(st, c->name))
			continue;
		n++;
		if (used < cap)
			used += (size_t)snprintf(names + used, cap - used, "%s%s", used ? ", " : "",
			                         c->name);
	}
	return n;
}

static bool defaulted(const struct part_state *st, const char *name)
{
	for (size_t i = 0; name && i < st->defaulted_n; i++)
		if (strcmp(st->defaulted[i], name) == 0)
			return true;
	return false;
}

void part_state_init(struct part_state *st)
{
	memset(st, 0, sizeof *st);
	st->next_seq = 1;
	request_clear(st);
}

void part_state_free(struct part_state *st)
{
	if (!st)
		return;
	history_clear(st);
	request_clear(st);
}

/* §6.4 effects (the pinned repo is not kept: §16.9, a new conversation may
 * be about another repository; the host names it again). */
static void idle_reset(struct part_state *st)
{
	history_clear(st);
	request_clear(st);
	st->fulfilled_by = "idle";
	st->repo[0] = '\0';
	st->cache_n = st->cache_next = 0;
	st->pending_new = false;
	st->boosted_seq = 0;
	st->claim_seq = 0;
	st->decline_until_ms = 0;
}

static bool known_agent(const struct part_state *st, const char *name)
{
	for (size_t i = 0; i < st->known_n; i++)
		if (strcmp(st->known[i], name) == 0)
			return true;
	return false;
}

static void remember_agent(struct part_state *st, const char *name)
{
	if (!name || !name[0] || strlen(name) >= PART_NAME_MAX || known_agent(st, name))
		return;
	snprintf(st->known[st->known_next], PART_NAME_MAX, "%s", name);
	st->known_next = (st->known_next + 1) % PART_MEMBERS_MAX;
	if (st->known_n < PART_MEMBERS_MAX)
		st->known_n++;
}

static bool is_member(const struct part_tick_in *in, const char *name)
{
	for (size_t i = 0; i < in->nmembers; i++)
		if (in->members[i].name && strcmp(in->members[i].name, name) == 0)
			return true;
	return false;
}

/* §2.1 with §16.13: decided once, when the message arrives. */
static bool event_is_host(const struct part_state *st, const struct part_tick_in *in,
                          const struct part_event *ev)
{
	if (ev->author_kind == PART_AUTHOR_HOST)
		return true;
	if (ev->author_kind == PART_AUTHOR_AGENT)
		return false;
	const char *a = ev->author ? ev->author : "";
	if (strcmp(a, in->self) == 0)
		return false;
	return !is_member(in, a) && !known_agent(st, a);
}

static int cache_lookup(const struct part_state *st, const char *text, size_t len)
{
	unsigned char k[32];
	sha256_raw(text, len, k);
	for (size_t i = 0; i < st->cache_n; i++)
		if (memcmp(st->cache[i].key, k, 32) == 0)
			return st->cache[i].intent;
	return -1;
}

void part_intent_learn(struct part_state *st, const char *text, size_t len, enum part_intent intent)
{
	unsigned char k[32];
	sha256_raw(text, len, k);
	for (size_t i = 0; i < st->cache_n; i++)
		if (memcmp(st->cache[i].key, k, 32) == 0) {
			st->cache[i].intent = (int)intent;
			return;
		}
	struct part_cache_entry *e = &st->cache[st->cache_next];
	memcpy(e->key, k, 32);
	e->intent = (int)intent;
	st->cache_next = (st->cache_next + 1) % PART_INTENT_CACHE_MAX;
	if (st->cache_n < PART_INTENT_CACHE_MAX)
		st->cache_n++;
}

/* A bare "owner/name" that is not a repository: short pairs (I/O, CI/CD,
 * TCP/IP) are refused by length; these by name. */
static const char *const not_repos[] = {
        "and/or",       "read/write",       "client/server",    "input/output", "yes/no",
        "on/off",       "true/false",       "pass/fail",        "open/close",   "start/stop",
        "before/after", "front/back",       "frontend/backend", "he/him",       "she/her",
        "they/them",    "request/response", "push/pull",        "get/set",      "win/loss",
};

static bool owner_char(char c)
{
	return isalnum((unsigned char)c) || c == '-';
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

/* The word before position i (skipping spaces) is one of the cue words a
 * person puts before a repository: in, to, repo, repository, at, from. */
static bool repo_cue_before(const char *t, size_t i)
{
	static const char *const cues[] = {"in", "to", "repo", "repository", "at", "from"};
	size_t j = i;
	if (j == 0 || t[j - 1] != ' ')
		return false;
	while (j > 0 && t[j - 1] == ' ')
		j--;
	size_t end = j;
	while (j > 0 && isalpha((unsigned char)t[j - 1]))
		j--;
	if (j > 0 && (isalnum((unsigned char)t[j - 1]) || t[j - 1] == '_'))
		return false;
	for (size_t k = 0; k < sizeof cues / sizeof cues[0]; k++)
		if (strlen(cues[k]) == end - j && strncasecmp(t + j, cues[k], end - j) == 0)
			return true;
	return false;
}

/* A bare owner/name at t[i..) after a cue word ("in acme/widgets", "repo
 * acme/site"): GitHub's owner charset (alphanumerics and '-', 1–39, not
 * starting with '-'), a name of [A-Za-z0-9_.-] (a trailing sentence
 * period and ".git" not part of it); neither part of a URL or a path (no
 * '/', ':', '@', '.' or word character right before, no '/' after), both
 * sides not all digits, the pair longer than 5 bytes and not one of
 * not_repos. Returns the end of the match, 0 when there is none. */
static size_t bare_repo_at(const char *t, size_t n, size_t i, size_t *slash, size_t *name_end)
{
	if (i > 0 && (name_char(t[i - 1]) || strchr("/:@", t[i - 1])))
		return 0;
	if (!isalnum((unsigned char)t[i]) || !repo_cue_before(t, i))
		return 0;
	size_t j = i;
	while (j < n && owner_char(t[j]))
		j++;
	if (j >= n || t[j] != '/' || j - i > 39)
		return 0;
	size_t r = j + 1, k = r;
	while (k < n && name_char(t[k]))
		k++;
	if (k < n && t[k] == '/')
		return 0; /* a path */
	size_t ke = k;
	while (ke > r && t[ke - 1] == '.')
		ke--;
	if (ke - r > 4 && strncasecmp(t + ke - 4, ".git", 4) == 0)
		ke -= 4;
	if (ke == r || ke - r > 100 || !isalnum((unsigned char)t[r]) || ke - i <= 5)
		return 0;
	bool od = true, nd = true;
	for (size_t x = i; x < j; x++)
		od = od && isdigit((unsigned char)t[x]);
	for (size_t x = r; x < ke; x++)
		nd = nd && isdigit((unsigned char)t[x]);
	if (od || nd)
		return 0;
	for (size_t x = 0; x < sizeof not_repos / sizeof not_repos[0]; x++)
		if (strlen(not_repos[x]) == ke - i && strncasecmp(t + i, not_repos[x], ke - i) == 0)
			return 0;
	*slash = j;
	*name_end = ke;
	return k;
}

/* §14.1 with §16.9: the latest repository mentioned wins —
 * github.com/owner/name, or a bare owner/name after a cue word ("Create an
 * issue in acme/widgets" gives the owner's forced action its repository);
 * a trailing sentence period and ".git" are not part of the name. */
static void detect_repo(struct part_state *st, const char *t, size_t n)
{
	static const char host[] = "github.com/";
	const size_t hl = sizeof host - 1;
	for (size_t i = 0; i < n; i++) {
		size_t sl = 0, ne = 0;
		if (bare_repo_at(t, n, i, &sl, &ne)) {
			snprintf(st->repo, sizeof st->repo, "%.*s/%.*s", (int)(sl - i), t + i,
			         (int)(ne - sl - 1), t + sl + 1);
			continue;
		}
		if (i + hl > n || strncasecmp(t + i, host, hl) != 0)
			continue;
		size_t o = i + hl, j = o;
		while (j < n && (isalnum((unsigned char)t[j]) || strchr("_.-", t[j])))
			j++;
		if (j == o || j >= n || t[j] != '/')
			continue;
		size_t r = j + 1, k = r;
		while (k < n && (isalnum((unsigned char)t[k]) || strchr("_.-", t[k])))
			k++;
		while (k > r && t[k - 1] == '.')
			k--;
		if (k - r > 4 && strncasecmp(t + k - 4, ".git", 4) == 0)
			k -= 4;
		if (k == r || j - o > 100 || k - r > 100)
			continue;
		snprintf(st->repo, sizeof st->repo, "%.*s/%.*s", (int)(j - o), t + o, (int)(k - r),
		         t + r);
	}
}

static void append_entry(struct part_state *st, const char *author, const char *text, size_t len,
                         int64_t time_ms, bool self, bool host, bool live, bool addr_me,
                         bool addr_others)
{
	if (st->hist_n == PART_HISTORY_MAX) {
		entry_free(hist_at(st, 0));
		st->hist_start = (st->hist_start + 1) % PART_HISTORY_MAX;
		st->hist_n--;
	}
	struct part_entry *e = hist_at(st, st->hist_n++);
	memset(e, 0, sizeof *e);
	snprintf(e->author, sizeof e->author, "%s", author ? author : "");
	size_t n = utf8_cut(text ? text : "", text ? len : 0, PART_TEXT_MAX_BYTES);
	/* Not xstrndup: a chat may hold NUL bytes ("\u0000"), and len counts
	 * past them (found by fuzz_participation). */
	e->text = xmalloc(n + 1);
	if (n)
		memcpy(e->text, text, n);
	e->text[n] = '\0';
	e->len = n;
	e->time_ms = time_ms;
	e->seq = st->next_seq++;
	e->self = self;
	e->host = host;
	e->live = live;
	e->addressed_me = addr_me;
	e->addressed_others = addr_others;
	e->intent = -1;
	detect_repo(st, e->text, e->len);
}

/* The room may echo our own chat back: the latest own entry with the same
 * text is that echo. */
static bool is_own_echo(struct part_state *st, const char *text, size_t len)
{
	size_t n = utf8_cut(text, len, PART_TEXT_MAX_BYTES);
	for (size_t i = st->hist_n; i > 0; i--) {
		const struct part_entry *e = hist_at(st, i - 1);
		if (e->self)
			return e->len == n && memcmp(e->text, text, n) == 0;
	}
	return false;
}

void part_note_sent(struct part_state *st, const char *self, const char *text, size_t len,
                    int64_t now_ms, int64_t cooldown_until_ms)
{
	append_entry(st, self, text, len, now_ms, true, false, true, false, false);
	st->last_activity_ms = now_ms;
	if (cooldown_until_ms > st->cooldown_until_ms)
		st->cooldown_until_ms = cooldown_until_ms;
	st->own_total++;
	st->decline_until_ms = 0; /* spoke: the quiet after a decline is over */
}

void part_note_fulfilled(struct part_state *st, const char *how)
{
	if (!st->req_content)
		return;
	st->fulfilled = true;
	st->fulfilled_by = how ? how : "commitment";
}

void part_note_commitment_failed(struct part_state *st)
{
	if (!st->req_content)
		return;
	st->fulfilled = false;
	st->fulfilled_by = NULL;
}

void part_request_reopen(struct part_state *st)
{
	part_note_commitment_failed(st);
	st->claim_seq = 0;
}

void part_note_declined(struct part_state *st, int64_t now_ms)
{
	st->decline_until_ms = now_ms + PART_DECLINE_QUIET_MS;
	st->decline_seq = st->next_seq;
}

bool part_note_owner_declined(struct part_state *st)
{
	st->owner_rejections++;
	return st->owner_rejections <= PART_OWNER_RETRY_MAX;
}

void part_note_forced(struct part_state *st)
{
	st->forced_attempts++;
}

enum part_recovery part_recover_next(struct part_state *st, const struct part_tick_out *t,
                                     bool retried, struct decision *why)
{
	/* Seed 004, social-only defence levels 2 and 3: no retry with the
	 * GitHub-focused prompt, no forced commitment. */
	if (t->social_only) {
		decision_set(why, VERDICT_INFO, "no_recovery",
		             "social-only: never retries or forces a GitHub action");
		return PART_RECOVER_NONE;
	}
	if (!t->request || !t->request_open || !t->own.is_owner) {
		decision_set(why, VERDICT_INFO, "no_recovery",
		             !t->request || !t->request_open
		                     ? "no open host request: silence stands"
		                     : "another agent owns the request: silence stands");
		return PART_RECOVER_NONE;
	}
	/* §11.2: a silent outcome of a tick with new messages counts. */
	if (t->has_new && !retried && part_note_owner_declined(st)) {
		decision_set(why, VERDICT_INFO, "owner_retry",
		             "I own the open request and said nothing usable: one commitment-only "
		             "retry (decline %u, at most %d retries)",
		             st->owner_rejections, PART_OWNER_RETRY_MAX);
		return PART_RECOVER_RETRY;
	}
	if ((st->cycles >= 2 || st->owner_rejections >= PART_FORCE_REJECTIONS) &&
	    st->forced_attempts < PART_FORCED_MAX) {
		decision_set(why, VERDICT_INFO, "forced_action",
		             "the request is open after %u cycles and %u declines: forced action "
		             "(attempt %u of %d)",
		             st->cycles, st->owner_rejections, st->forced_attempts + 1,
		             PART_FORCED_MAX);
		return PART_RECOVER_FORCE;
	}
	decision_set(why, VERDICT_INFO, "no_recovery",
	             st->forced_attempts >= PART_FORCED_MAX
	                     ? "forced action already used %u times for this request (§16.8 cap)"
	                     : "not yet due: cycle %u, %u declines",
	             st->forced_attempts >= PART_FORCED_MAX ? st->forced_attempts : st->cycles,
	             st->owner_rejections);
	return PART_RECOVER_NONE;
}

/* Intent of a host entry: settled, cached Layer 2, or provisional
 * discussion (*pending = true). */
static int entry_intent(struct part_state *st, struct part_entry *e, bool *pending)
{
	*pending = false;
	if (e->intent >= 0)
		return e->intent;
	struct part_intent_result r;
	part_intent_classify(e->text, e->len, &r);
	if (!r.ambiguous) {
		e->intent = (int)r.intent;
		e->intent_rule = r.rule;
		return e->intent;
	}
	int c = cache_lookup(st, e->text, e->len);
	if (c >= 0) {
		e->intent = c;
		e->intent_rule = "layer2";
		return c;
	}
	*pending = true;
	return PART_INTENT_DISCUSSION;
}

size_t part_intent_unknown(const struct part_state *st, const struct part_tick_in *in,
                           const char **out, size_t max)
{
	size_t k = 0;
	for (size_t i = in->nevents; i > 0 && k < max; i--) {
		const struct part_event *ev = &in->events[i - 1];
		if (ev->kind != PART_EV_CHAT || !ev->text || !event_is_host(st, in, ev))
			continue;
		struct part_intent_result r;
		part_intent_classify(ev->text, ev->len, &r);
		if (r.ambiguous && cache_lookup(st, ev->text, ev->len) < 0)
			out[k++] = ev->text;
	}
	for (size_t i = st->hist_n; i > 0 && k < max; i--) {
		const struct part_entry *e = part_history_at(st, i - 1);
		if (!e->host || e->intent >= 0)
			continue;
		struct part_intent_result r;
		part_intent_classify(e->text, e->len, &r);
		if (r.ambiguous && cache_lookup(st, e->text, e->len) < 0)
			out[k++] = e->text;
	}
	return k;
}

const char *part_context_name(enum part_context bit)
{
	static const char *const names[PART_CTX_COUNT] = {
	        "identity",     "peer_identities", "workspaces",       "history",
	        "own_messages", "points_made",     "peer_commitments", "echo_chain",
	        "commitments",  "config",          "typing",           "mode",
	        "repo",         "ownership",       "escalation",       "role",
	        "saturation",   "addressed",       "follow_up"};
	for (unsigned i = 0; i < PART_CTX_COUNT; i++)
		if ((unsigned)bit == (1u << i))
			return names[i];
	return "?";
}

const char *part_saturation_name(enum part_saturation s)
{
	switch (s) {
	case PART_SAT_WARN:
		return "warn";
	case PART_SAT_CIRCLING:
		return "circling";
	case PART_SAT_SATURATED:
		return "saturated";
	case PART_SAT_NONE:
		break;
	}
	return "none";
}

/* --- the tick ---------------------------------------------------------- */

static void not_evaluated(struct part_tick_out *out, const char *why)
{
	decision_set(&out->why_mode, VERDICT_INFO, "not_evaluated", "%s", why);
	out->why_owner = out->why_role = out->why_escalation = out->why_saturation =
	        out->why_budget = out->why_mode;
}

/* name occurs in t[0..n) as a whole word, ASCII case-insensitively. */
static bool mentions(const char *t, size_t n, const char *name)
{
	size_t k = strlen(name);
	if (k == 0 || k > n)
		return false;
	for (size_t i = 0; i + k <= n; i++) {
		if (strncasecmp(t + i, name, k) != 0)
			continue;
		bool before = i > 0 && (isalnum((unsigned char)t[i - 1]) || t[i - 1] == '_');
		bool after = i + k < n && (isalnum((unsigned char)t[i + k]) || t[i + k] == '_');
		if (!before && !after)
			return true;
	}
	return false;
}

static void ingest(struct part_state *st, const struct part_tick_in *in, bool *has_new)
{
	for (size_t i = 0; i < in->nevents; i++) {
		const struct part_event *ev = &in->events[i];
		const char *author = ev->author ? ev->author : "";
		bool self = strcmp(author, in->self) == 0;
		if (ev->kind == PART_EV_CLAIM) {
			/* A peer acted: whatever it claimed, the request it follows is
			 * not waiting on nobody any more (§16.5). */
			if (!self && !ev->from_history) {
				st->claim_seq = st->next_seq; /* kept across a cooldown */
				struct part_claimer *c = &st->claimers[st->claimers_next];
				st->claimers_next = (st->claimers_next + 1) % PART_DEFAULTED_MAX;
				snprintf(c->name, sizeof c->name, "%s", author);
				c->seq = st->next_seq;
			}
			continue;
		}
		if (!ev->text)
			continue;
		if (self && is_own_echo(st, ev->text, ev->len))
			continue;
		if (ev->noted) {
			*has_new = !self;
			st->last_activity_ms = in->now_ms;
			continue;
		}
		bool host = !self && event_is_host(st, in, ev);
		bool me = ev->addressed_me, others = ev->addressed_others;
		if (host && !ev->addressed_known) {
			me = mentions(ev->text, ev->len, in->self);
			others = false;
			for (size_t m = 0; m < in->nmembers && !me && !others; m++)
				others = in->members[m].name &&
				         strcmp(in->members[m].name, in->self) &&
				         mentions(ev->text, ev->len, in->members[m].name);
		}
		append_entry(st, author, ev->text, ev->len, ev->time_ms, self, host,
		             !ev->from_history, me, others);
		st->last_activity_ms = in->now_ms;
		if (!self && !ev->context)
			*has_new = true;
	}
}

/* A peer claimed an action after the open request was made: someone is
 * on it, stop escalating (§16.5). */
static void apply_peer_claim(struct part_state *st)
{
	if (st->claim_seq && st->req_content && !st->fulfilled && st->claim_seq > st->req_seq) {
		st->fulfilled = true;
		st->fulfilled_by = "peer_claim";
	}
}

void part_tick(struct part_state *st, const struct part_tick_in *in, struct part_tick_out *out)
{
	memset(out, 0, sizeof *out);
	out->mode = PART_MODE_DISCUSSION;
	out->own.role = PART_ROLE_ACTOR;
	out->social_only = in->social_only;
	const int64_t now = in->now_ms;

	/* 1. Idle reset before the batch (§16.1). */
	if (st->last_activity_ms > 0 && now - st->last_activity_ms > PART_IDLE_RESET_MS) {
		int64_t idle_s = (now - st->last_activity_ms) / 1000;
		idle_reset(st);
		out->idle_reset = true;
		decision_set(&out->why_idle, VERDICT_INFO, "idle_reset",
		             "%lld s without a message (> %d s): history, request, repo and intent "
		             "cache cleared before reading the new messages",
		             (long long)idle_s, PART_IDLE_RESET_MS / 1000);
	} else {
		decision_set(&out->why_idle, VERDICT_INFO, "active",
		             "last activity %lld ms ago (reset after %d s)",
		             st->last_activity_ms ? (long long)(now - st->last_activity_ms) : -1LL,
		             PART_IDLE_RESET_MS / 1000);
	}

	/* 2. Presence and the batch. */
	for (size_t i = 0; i < in->nmembers; i++)
		if (in->members[i].name && strcmp(in->members[i].name, in->self) != 0)
			remember_agent(st, in->members[i].name);
	bool has_new = false;
	ingest(st, in, &has_new);
	if (st->pending_new)
		has_new = true;
	out->has_new = has_new;

	/* 3. Cooldown after speaking (§1 step 3, §12.1 step 7). */
	if (now < st->cooldown_until_ms) {
		st->pending_new = has_new;
		decision_set(&out->verdict, VERDICT_BLOCK, "cooldown",
		             "cooling down after speaking for %lld ms more%s",
		             (long long)(st->cooldown_until_ms - now),
		             has_new ? "; the new messages wait for the next tick" : "");
		not_evaluated(out, "cooling down");
		return;
	}
	st->pending_new = false;
	apply_peer_claim(st);

	/* 4. Nothing new and nothing open (§1 step 5). */
	if (!has_new && st->fulfilled) {
		decision_set(&out->verdict, VERDICT_BLOCK, "no_new_messages",
		             "no new messages and no host request waiting");
		not_evaluated(out, "nothing new");
		return;
	}

	/* 5. Classify host messages; the request, the follow-up, the mode. */
	struct part_entry *act = NULL, *fu = NULL, *latest_host = NULL;
	int latest_intent = -1;
	for (size_t i = st->hist_n; i > 0; i--) {
		struct part_entry *e = hist_at(st, i - 1);
		if (!e->host)
			continue;
		bool pending;
		int it = entry_intent(st, e, &pending);
		if (pending && out->nlayer2 < PART_LAYER2_MAX)
			out->layer2[out->nlayer2++] = e->text;
		if (!latest_host) {
			latest_host = e;
			latest_intent = it;
		}
		if (!act && e->live && it == PART_INTENT_ACTION)
			act = e;
		if (!fu && e->live && it == PART_INTENT_FOLLOW_UP)
			fu = e;
	}
	out->mode = (latest_intent == PART_INTENT_ACTION || latest_intent == PART_INTENT_FOLLOW_UP)
	                    ? PART_MODE_ACTION
	                    : PART_MODE_DISCUSSION;
	if (latest_host)
		decision_set(
		        &out->why_mode, VERDICT_INFO,
		        out->mode == PART_MODE_ACTION ? "mode_action" : "mode_discussion",
		        "the host's latest message is %s (%s)%s",
		        part_intent_name((enum part_intent)latest_intent),
		        latest_host->intent_rule ? latest_host->intent_rule : "layer1 ambiguous",
		        latest_host->intent < 0 ? "; Layer 2 not answered yet: discussion" : "");
	else
		decision_set(&out->why_mode, VERDICT_INFO, "mode_discussion",
		             "no host message in the history");
	if (latest_host) {
		out->addressed_me = latest_host->addressed_me;
		out->addressed_others = latest_host->addressed_others;
	}

	/* 7a. Request bookkeeping (§6.1) — before ownership so the key is set. */
	bool boost = false;
	if (act && act->seq > st->req_seq) {
		bool same = st->req_content && st->req_len == act->len &&
		            memcmp(st->req_content, act->text, act->len) == 0;
		if (!same || st->fulfilled) {
			/* A new request, or the same words again after it was done
			 * (§6.1). */
			request_clear(st);
			st->req_content = xmalloc(act->len + 1);
			memcpy(st->req_content, act->text, act->len + 1);
			st->req_len = act->len;
			st->req_seq = act->seq;
			st->req_at_ms = now;
			st->fulfilled = false;
		} else {
			st->req_seq = act->seq; /* repeated while open: a nudge */
			boost = true;
		}
	}
	apply_peer_claim(st); /* a request and its claim in the same batch */
	if (fu && st->req_content && fu->seq > st->req_seq && fu->seq > st->boosted_seq) {
		st->boosted_seq = fu->seq;
		out->follow_up = true;
		boost = !st->fulfilled;
	}
	if (boost && st->cycles < 1)
		st->cycles = 1; /* the increment below makes it critical (§4.2 fixed) */
	if (st->req_content && !st->fulfilled)
		st->cycles++;
	out->request = st->req_content;
	out->request_open = st->req_content && !st->fulfilled;
	out->cycles = st->cycles;
	out->waiting_ms = out->request_open ? now - st->req_at_ms : 0;
	out->repo = st->repo[0] ? st->repo : NULL;

	/* 6. Ownership and role. */
	const char *key = act ? act->text : (out->request_open ? st->req_content : NULL);
	/* A member that took this request with a claim and let it lapse is
	 * not ranked for it again: every agent sees the same lapse, so the
	 * owner they compute over the rest is again one and the same. */
	struct part_member *ranked = xcalloc(in->nmembers ? in->nmembers : 1, sizeof *ranked);
	size_t nranked = 0;
	for (size_t i = 0; i < in->nmembers; i++)
		if (!defaulted(st, in->members[i].name))
			ranked[nranked++] = in->members[i];
	part_ownership_compute(in->self, in->social_only, ranked, nranked, key, out->mode,
	                       &out->own, &out->why_owner);
	free(ranked);
	if (out->own.computed && out->mode == PART_MODE_ACTION)
		decision_set(&out->why_role, VERDICT_INFO,
		             out->own.role == PART_ROLE_ACTOR      ? "role_actor"
		             : out->own.role == PART_ROLE_REVIEWER ? "role_reviewer"
		                                                   : "role_observer",
		             "rank %zu of %zu in the request's digest order: %s (owner acts, next "
		             "reviews, the rest observe)",
		             out->own.rank + 1, out->own.n_agents, part_role_name(out->own.role));
	else
		decision_set(&out->why_role, VERDICT_INFO, "role_actor",
		             "no roles outside action mode with a request and peers: actor");

	/* 7b. Escalation level (§6.2). */
	out->escalation = out->request_open ? part_escalation_level(st->cycles) : PART_ESC_NONE;
	if (out->request_open)
		decision_set(&out->why_escalation, VERDICT_INFO,
		             out->escalation == PART_ESC_CRITICAL ? "escalation_critical"
		                                                  : "escalation_info",
		             "host request open for %lld s, cycle %u%s: %s",
		             (long long)(out->waiting_ms / 1000), st->cycles,
		             out->follow_up ? " (the host followed up)" : "",
		             part_escalation_name(out->escalation));
	else if (st->req_content)
		decision_set(&out->why_escalation, VERDICT_INFO, "request_fulfilled",
		             "the request is fulfilled (%s)%s",
		             st->fulfilled_by ? st->fulfilled_by : "commitment",
		             out->follow_up ? "; the host asks about it: the owner answers" : "");
	else
		decision_set(&out->why_escalation, VERDICT_INFO, "no_request", "no host request");
	out->force_action_due =
	        out->request_open && out->own.is_owner && !in->social_only &&
	        (st->cycles >= 2 || st->owner_rejections >= PART_FORCE_REJECTIONS) &&
	        st->forced_attempts < PART_FORCED_MAX;

	/* 8. Saturation (§7) and budgets (§5.3, §5.4). */
	for (size_t i = st->hist_n; i > 0; i--) {
		const struct part_entry *e = hist_at(st, i - 1);
		if (e->host)
			break;
		out->agent_msgs_since_host++;
		if (e->self)
			out->own_msgs_since_host++;
	}
	out->t_sat = part_saturation_threshold(out->own.n_agents, out->mode, &out->t_warn);
	out->t_obs = part_observer_threshold(out->mode);
	out->budget = part_role_budget(out->own.role, out->mode);
	size_t am = out->agent_msgs_since_host, om = out->own_msgs_since_host;
	out->saturation = am >= out->t_sat    ? PART_SAT_SATURATED
	                  : om >= 2           ? PART_SAT_CIRCLING
	                  : am >= out->t_warn ? PART_SAT_WARN
	                                      : PART_SAT_NONE;
	decision_set(
	        &out->why_saturation, VERDICT_INFO,
	        out->saturation == PART_SAT_NONE ? "not_saturated" : "saturation",
	        "%zu agent messages since the host (warn at %u, saturated at %u for %zu agents "
	        "in %s mode), %zu of them mine: %s",
	        am, out->t_warn, out->t_sat, out->own.n_agents, part_mode_name(out->mode), om,
	        part_saturation_name(out->saturation));
	bool budget_applies = out->own.n_agents > 1;
	bool budget_spent = budget_applies && om >= out->budget;
	decision_set(&out->why_budget, VERDICT_INFO, budget_spent ? "budget_spent" : "budget_left",
	             "%zu own messages this host turn, budget %u (%s, %s mode)%s", om, out->budget,
	             part_role_name(out->own.role), part_mode_name(out->mode),
	             budget_applies ? "" : "; alone: no budget");

	/* 9. The verdict. */
	bool owner_pending = out->request_open && out->own.is_owner && !in->social_only;
	/* The host spoke again since the request, about something else: the
	 * escalation still presses the owner, but it does not mute the others
	 * on the new question (a discussion nobody answered otherwise). */
	bool host_moved_on = latest_host && latest_host->seq > st->req_seq &&
	                     latest_intent == PART_INTENT_DISCUSSION;
	if (!has_new) {
		if (out->force_action_due)
			decision_set(&out->verdict, VERDICT_PASS, "forced_action",
			             "no new messages, I own a request open for %u cycles (%u "
			             "declines): "
			             "force the commitment (§11.3, attempt %u of %d)",
			             st->cycles, st->owner_rejections, st->forced_attempts + 1,
			             PART_FORCED_MAX);
		else
			decision_set(&out->verdict, VERDICT_BLOCK, "escalation_only",
			             "no new messages: escalation bookkeeping only (request cycle "
			             "%u), no "
			             "model call",
			             st->cycles);
	} else if (out->request_open && !out->own.is_owner && out->own.owner[0] &&
	           out->escalation == PART_ESC_CRITICAL && !out->addressed_me && !host_moved_on) {
		/* With no eligible owner nobody is muted by this rule: someone has
		 * to tell the host that nobody here can do it. */
		decision_set(&out->verdict, VERDICT_BLOCK, "escalation_non_owner",
		             "the host has waited %lld s for %s, who owns the request: a non-owner "
		             "stays silent",
		             (long long)(out->waiting_ms / 1000), out->own.owner);
	} else if (out->saturation == PART_SAT_SATURATED && !owner_pending) {
		decision_set(
		        &out->verdict, VERDICT_BLOCK, "saturated",
		        "%zu agent messages since the host ≥ %u: the conversation is saturated, "
		        "anything without a commitment would be rejected",
		        am, out->t_sat);
	} else if (out->own.role == PART_ROLE_OBSERVER && am >= out->t_obs && !owner_pending) {
		decision_set(&out->verdict, VERDICT_BLOCK, "observer_silence",
		             "observer and %zu agent messages since the host ≥ %u: silence", am,
		             out->t_obs);
	} else if (budget_spent && !owner_pending) {
		decision_set(&out->verdict, VERDICT_BLOCK, "role_budget",
		             "%zu own messages since the host reached the %s budget of %u", om,
		             part_role_name(out->own.role), out->budget);
	} else if (now < st->decline_until_ms && !owner_pending &&
	           !(latest_host && latest_host->seq >= st->decline_seq)) {
		st->pending_new = true; /* answered when the quiet ends */
		decision_set(
		        &out->verdict, VERDICT_BLOCK, "declined_recently",
		        "I declined %lld ms ago and only agents spoke since: no new model call "
		        "for %lld ms more (§16.26)",
		        (long long)(now - (st->decline_until_ms - PART_DECLINE_QUIET_MS)),
		        (long long)(st->decline_until_ms - now));
	} else {
		out->call_model = true;
		decision_set(&out->verdict, VERDICT_PASS, "compose",
		             "new messages: ask the model (%s mode, %s, %s%s%s)",
		             part_mode_name(out->mode), part_role_name(out->own.role),
		             owner_pending ? "I own the open request"
		             : out->own.owner[0] && out->request_open
		                     ? "another agent owns the request"
		                     : "no open request",
		             out->escalation ? ", escalation " : "",
		             out->escalation ? part_escalation_name(out->escalation) : "");
	}

	/* §14 pieces the prompt needs. */
	unsigned c = PART_CTX_IDENTITY | PART_CTX_PEER_IDENTITIES | PART_CTX_WORKSPACES |
	             PART_CTX_HISTORY | PART_CTX_OWN_MESSAGES | PART_CTX_POINTS_MADE |
	             PART_CTX_COMMITMENTS | PART_CTX_CONFIG | PART_CTX_TYPING | PART_CTX_MODE;
	if (out->repo)
		c |= PART_CTX_REPO;
	if (out->request && out->own.computed)
		c |= PART_CTX_OWNERSHIP; /* never without a request (§16.3) */
	if (out->escalation != PART_ESC_NONE)
		c |= PART_CTX_ESCALATION;
	if (out->own.role != PART_ROLE_ACTOR)
		c |= PART_CTX_ROLE;
	if (out->saturation != PART_SAT_NONE)
		c |= PART_CTX_SATURATION;
	if (out->addressed_me || out->addressed_others)
		c |= PART_CTX_ADDRESSED;
	if (out->follow_up)
		c |= PART_CTX_FOLLOW_UP;
	if (am > 0 || st->hist_n > 0) {
		for (size_t i = 0; i < st->hist_n; i++)
			if (!hist_at(st, i)->host && !hist_at(st, i)->self) {
				c |= PART_CTX_PEER_COMMITS | PART_CTX_ECHO_CHAIN;
				break;
			}
	}
	out->context = c;
}
