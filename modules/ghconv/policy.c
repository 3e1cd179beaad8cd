/* GitHub conversations: the pure policy. See policy.h. */
#include "modules/ghconv/policy.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

/* --- small helpers ------------------------------------------------------------------ */

static bool login_char(char c)
{
	return isalnum((unsigned char)c) || c == '-';
}

static bool same_login(const char *a, const char *b)
{
	return a && b && *a && strcasecmp(a, b) == 0;
}

/* Does word (case-insensitive) occur in text with no letter or digit
 * glued to either side? */
static bool has_word(const char *text, const char *word)
{
	size_t wl = word ? strlen(word) : 0;
	if (!wl || !text)
		return false;
	for (const char *p = text; *p; p++) {
		if (strncasecmp(p, word, wl) != 0)
			continue;
		bool before = p == text || !isalnum((unsigned char)p[-1]);
		bool after = !isalnum((unsigned char)p[wl]);
		if (before && after)
			return true;
	}
	return false;
}

/* --- notifications ---------------------------------------------------------------------- */

bool ghconv_reason_actionable(const char *reason)
{
	static const char *const ok[] = {"mention", "author", "comment", "review_requested",
	                                 "assign"};
	for (size_t i = 0; reason && i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(reason, ok[i]) == 0)
			return true;
	return false;
}

int ghconv_notif_parse(const cJSON *n, const char *api_base, struct ghconv_notif *out,
                       struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	const cJSON *id = cJSON_IsObject(n) ? cJSON_GetObjectItemCaseSensitive(n, "id") : NULL;
	if (cJSON_IsString(id) && id->valuestring[0] && strlen(id->valuestring) < sizeof out->id &&
	    strspn(id->valuestring, "0123456789") == strlen(id->valuestring))
		snprintf(out->id, sizeof out->id, "%s", id->valuestring);
	else if (cJSON_IsNumber(id) && id->valuedouble >= 1)
		snprintf(out->id, sizeof out->id, "%" PRId64, (int64_t)id->valuedouble);
	else
		return err_set(err, "a notification without a usable id (a string of digits)");
	snprintf(out->reason, sizeof out->reason, "%s", json_string_or(n, "reason", ""));
	out->unread = json_bool_or(n, "unread", true);
	const char *upd = json_string_or(n, "updated_at", NULL);
	if (!upd || time_parse_iso(upd, &out->updated_ms) != 0)
		out->updated_ms = 0;
	if (!ghconv_reason_actionable(out->reason)) {
		snprintf(out->why, sizeof out->why, "reason '%s' is not one the agent answers",
		         out->reason[0] ? out->reason : "(none)");
		return 0;
	}
	const cJSON *subj = cJSON_GetObjectItemCaseSensitive(n, "subject");
	const char *url = json_string_or(subj, "url", NULL);
	struct ga_err e;
	err_clear(&e);
	if (!url || gh_parse_api_url(api_base, url, &out->ref, &e) != 0) {
		snprintf(out->why, sizeof out->why,
		         "the subject is not an issue or pull request%s%.100s",
		         e.msg[0] ? ": " : "", e.msg);
		return 0;
	}
	if (strcmp(json_string_or(subj, "type", ""), "PullRequest") == 0)
		out->ref.kind = GH_REF_PULL;
	out->actionable = true;
	return 0;
}

/* --- the thread --------------------------------------------------------------------------- */

static void comment_from(const cJSON *o, struct ghconv_comment *c)
{
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(o, "user");
	c->id = json_int_or(o, "id", 0);
	c->login = json_string_or(user, "login", "");
	c->bot_account = strcmp(json_string_or(user, "type", ""), "Bot") == 0;
	c->body = json_string_or(o, "body", "");
	const char *at = json_string_or(o, "created_at", NULL);
	if (!at || time_parse_iso(at, &c->created_ms) != 0)
		c->created_ms = 0;
}

void ghconv_thread_key(const char *owner, const char *repo, int64_t number, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s#%" PRId64, owner, repo, number);
}

void ghconv_issue_id(const char *owner, const char *repo, int64_t number,
                     char out[GHCONV_ISSUE_ID_LEN + 1])
{
	char key[GH_OWNER_MAX + GH_REPO_MAX + 32], hex[SHA256_HEX_LEN + 1];
	ghconv_thread_key(owner, repo, number, key, sizeof key);
	for (char *p = key; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	sha256_hex(key, strlen(key), hex);
	snprintf(out, GHCONV_ISSUE_ID_LEN + 1, "i:%.24s", hex);
}

int ghconv_thread_parse(const char *owner, const char *repo, int64_t number, const cJSON *issue,
                        const cJSON *comments, struct ghconv_thread *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (!cJSON_IsObject(issue))
		return err_set(err, "the issue %s/%s#%" PRId64 " is not a JSON object", owner, repo,
		               number);
	snprintf(out->owner, sizeof out->owner, "%s", owner);
	snprintf(out->repo, sizeof out->repo, "%s", repo);
	out->number = number;
	out->json_issue = cJSON_Duplicate(issue, 1);
	out->json_comments = cJSON_IsArray(comments) ? cJSON_Duplicate(comments, 1) : NULL;
	const cJSON *is = out->json_issue;
	out->title = json_string_or(is, "title", "");
	out->html_url = json_string_or(is, "html_url", "");
	out->closed = strcmp(json_string_or(is, "state", "open"), "closed") == 0;
	out->is_pull = cJSON_GetObjectItemCaseSensitive(is, "pull_request") != NULL;
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(is, "labels");
	const cJSON *l;
	cJSON_ArrayForEach(l, labels)
	{
		const char *name =
		        cJSON_IsString(l) ? l->valuestring : json_string_or(l, "name", "");
		if (strcasecmp(name, GHCONV_FINISHED_LABEL) == 0)
			out->finished = true;
	}
	comment_from(is, &out->issue);
	out->issue.id = 0;

	size_t total = out->json_comments ? (size_t)cJSON_GetArraySize(out->json_comments) : 0;
	struct ghconv_comment *all = total ? xcalloc(total, sizeof *all) : NULL;
	size_t k = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, out->json_comments)
	{
		if (cJSON_IsObject(c))
			comment_from(c, &all[k++]);
	}
	/* Stable insertion sort by created_at: GitHub lists in order already;
	 * this only repairs a page boundary that moved under us. */
	for (size_t i = 1; i < k; i++) {
		struct ghconv_comment x = all[i];
		size_t j = i;
		while (j > 0 && all[j - 1].created_ms > x.created_ms) {
			all[j] = all[j - 1];
			j--;
		}
		all[j] = x;
	}
	size_t from = k > GHCONV_MAX_COMMENTS ? k - GHCONV_MAX_COMMENTS : 0;
	out->hidden = from;
	out->n = k - from;
	if (out->n) {
		out->comments = xcalloc(out->n, sizeof *out->comments);
		memcpy(out->comments, all + from, out->n * sizeof *all);
	}
	free(all);
	return 0;
}

void ghconv_thread_free(struct ghconv_thread *t)
{
	if (!t)
		return;
	free(t->comments);
	cJSON_Delete(t->json_issue);
	cJSON_Delete(t->json_comments);
	memset(t, 0, sizeof *t);
}

/* --- peers -------------------------------------------------------------------------------- */

static void peers_add(struct ghconv_peers *p, const char *login)
{
	if (!login || !*login || strlen(login) >= GHCONV_LOGIN_MAX || p->n == GHCONV_MAX_PEERS ||
	    ghconv_peers_has(p, login))
		return;
	char *d = p->login[p->n++];
	for (size_t i = 0; login[i]; i++)
		d[i] = (char)tolower((unsigned char)login[i]);
	d[strlen(login)] = '\0';
}

bool ghconv_peers_has(const struct ghconv_peers *p, const char *login)
{
	for (size_t i = 0; p && login && i < p->n; i++)
		if (strcasecmp(p->login[i], login) == 0)
			return true;
	return false;
}

void ghconv_effective_peers(const struct ghconv_thread *t, const char *self,
                            const char *const *registered, size_t nreg, struct ghconv_peers *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; registered && i < nreg; i++)
		if (registered[i] && !strchr(registered[i], '.') &&
		    !same_login(registered[i], self))
			peers_add(out, registered[i]);
	if (out->n) {
		out->registered = true;
		return;
	}
	const char *author = t->issue.login;
	bool author_commented = false;
	for (size_t i = 0; i < t->n; i++)
		if (same_login(t->comments[i].login, author))
			author_commented = true;
	for (size_t i = 0; i < t->n; i++) {
		const char *l = t->comments[i].login;
		if (same_login(l, self) || (same_login(l, author) && !author_commented))
			continue;
		peers_add(out, l);
	}
}

/* --- the decision ----------------------------------------------------------------------------- */

bool ghconv_mentions(const char *text, const char *login)
{
	size_t ll = login ? strlen(login) : 0;
	if (!text || !ll)
		return false;
	for (const char *p = strchr(text, '@'); p; p = strchr(p + 1, '@'))
		if (strncasecmp(p + 1, login, ll) == 0 && !login_char(p[1 + ll]) &&
		    (p == text || !login_char(p[-1])))
			return true;
	return false;
}

const char *ghconv_urgency_name(enum ghconv_urgency u)
{
	switch (u) {
	case GHCONV_URGENCY_LOW:
		return "low";
	case GHCONV_URGENCY_MEDIUM:
		return "medium";
	case GHCONV_URGENCY_HIGH:
		return "high";
	}
	return "?";
}

static bool is_human(const struct ghconv_comment *c, const char *self,
                     const struct ghconv_peers *peers)
{
	return !same_login(c->login, self) && !ghconv_peers_has(peers, c->login);
}

static void verdict(struct ghconv_verdict *v, bool respond, enum ghconv_urgency u, const char *rule,
                    long trigger, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void verdict(struct ghconv_verdict *v, bool respond, enum ghconv_urgency u, const char *rule,
                    long trigger, const char *fmt, ...)
{
	v->respond = respond;
	v->urgency = u;
	v->rule = rule;
	v->trigger = trigger;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->reason, sizeof v->reason, fmt, ap);
	va_end(ap);
}

void ghconv_decide(const struct ghconv_thread *t, const char *self,
                   const struct ghconv_peers *peers, const struct ghconv_opts *o,
                   struct ghconv_verdict *v)
{
	static const struct ghconv_opts none = {0};
	if (!o)
		o = &none;
	memset(v, 0, sizeof *v);
	long last_own = -1;
	for (size_t i = 0; i < t->n; i++)
		if (same_login(t->comments[i].login, self)) {
			v->own_comments++;
			last_own = (long)i;
		}
	v->after_own = last_own >= 0 ? t->n - (size_t)last_own - 1 : 0;
	size_t recent_from = t->n > GHCONV_MENTION_WINDOW ? t->n - GHCONV_MENTION_WINDOW : 0;
	long last = t->n ? (long)t->n - 1 : -1;

	if (t->closed) {
		verdict(v, false, GHCONV_URGENCY_LOW, "closed", -1, "the %s is closed",
		        t->is_pull ? "pull request" : "issue");
		return;
	}
	if (t->finished) {
		verdict(v, false, GHCONV_URGENCY_LOW, "finished", -1, "the thread is labelled '%s'",
		        GHCONV_FINISHED_LABEL);
		return;
	}
	/* 2: even for the owner — we never answer ourselves. */
	if (last >= 0 && same_login(t->comments[last].login, self)) {
		verdict(v, false, GHCONV_URGENCY_LOW, "awaiting_others", -1,
		        "the latest comment is ours: awaiting a response from others");
		return;
	}
	if (o->owner_request) {
		verdict(v, true, GHCONV_URGENCY_HIGH, "owner_request", last,
		        "the owner asked for this thread");
		return;
	}
	/* The comment a follow-up answers: the newest later one by a person
	 * or mentioning us, else the newest. */
	long follow = last;
	for (long i = last; i > last_own && i >= 0; i--) {
		const struct ghconv_comment *c = &t->comments[i];
		if (is_human(c, self, peers) || ghconv_mentions(c->body, self)) {
			follow = i;
			break;
		}
	}
	/* 4 */
	if (v->own_comments && v->after_own && peers->n) {
		bool human_or_mention = false;
		for (size_t i = (size_t)last_own + 1; i < t->n; i++)
			if (is_human(&t->comments[i], self, peers) ||
			    ghconv_mentions(t->comments[i].body, self))
				human_or_mention = true;
		if (!human_or_mention) {
			verdict(v, false, GHCONV_URGENCY_LOW, "waiting_for_author", -1,
			        "only peers spoke after our comment and none addressed us: waiting "
			        "for the issue author");
			return;
		}
	}
	/* 5 */
	if (v->own_comments >= GHCONV_MAX_OWN_COMMENTS) {
		long asked = -1;
		for (size_t i = recent_from; i < t->n; i++)
			if (is_human(&t->comments[i], self, peers) &&
			    ghconv_mentions(t->comments[i].body, self))
				asked = (long)i;
		if (asked < 0) {
			verdict(v, false, GHCONV_URGENCY_LOW, "said_enough", -1,
			        "we have %zu comments here and no person asked us again in the "
			        "last "
			        "%d",
			        v->own_comments, GHCONV_MENTION_WINDOW);
			return;
		}
		follow = asked;
	}
	/* 6 */
	if (v->own_comments && v->after_own) {
		verdict(v, true,
		        v->after_own >= GHCONV_FOLLOWUP_HIGH ? GHCONV_URGENCY_HIGH
		                                             : GHCONV_URGENCY_MEDIUM,
		        "follow_up", follow, "%zu comment(s) since ours", v->after_own);
		return;
	}
	/* 7 */
	for (size_t i = t->n; i-- > recent_from;)
		if (ghconv_mentions(t->comments[i].body, self)) {
			verdict(v, true, GHCONV_URGENCY_HIGH, "mentioned", (long)i,
			        "@%s mentioned in a recent comment by %s", self,
			        t->comments[i].login[0] ? t->comments[i].login : "someone");
			return;
		}
	/* 8 */
	if (!v->own_comments) {
		size_t peer_comments = 0;
		for (size_t i = 0; i < t->n; i++)
			if (ghconv_peers_has(peers, t->comments[i].login))
				peer_comments++;
		bool crowded = peer_comments >= 2;
		if (ghconv_mentions(t->issue.body, self)) {
			v->only_missing = crowded;
			verdict(v, true, crowded ? GHCONV_URGENCY_LOW : GHCONV_URGENCY_HIGH,
			        "mentioned_in_body", -1, "@%s mentioned in the description%s", self,
			        crowded ? "; peers already answered: only add what is missing"
			                : "");
			return;
		}
		if (o->workspace_pr_review || o->workspace_issue) {
			v->only_missing = crowded;
			verdict(v, true, GHCONV_URGENCY_LOW,
			        o->workspace_pr_review ? "workspace_pr_review" : "workspace_issue",
			        -1, "%s of a watched workspace%s",
			        o->workspace_pr_review ? "a pull request to review" : "an issue",
			        crowded ? "; peers already answered" : "");
			return;
		}
		verdict(v, false, GHCONV_URGENCY_LOW, "not_mentioned", -1,
		        "@%s is not mentioned and has not taken part", self);
		return;
	}
	verdict(v, false, GHCONV_URGENCY_LOW, "awaiting_others", -1,
	        "nothing new since our last comment");
}

/* --- the chain ----------------------------------------------------------------------------- */

#define MARKER_OPEN "<!-- ga:"

int ghconv_marker_chain(const char *body, int64_t *chain)
{
	const char *p = body ? strstr(body, MARKER_OPEN "chain=") : NULL;
	if (!p)
		return 0;
	p += strlen(MARKER_OPEN "chain=");
	int64_t v = 0;
	size_t digits = 0;
	while (isdigit((unsigned char)*p) && digits < 8) {
		v = v * 10 + (*p++ - '0');
		digits++;
	}
	if (!digits || isdigit((unsigned char)*p) || v > 1000000)
		return 0;
	*chain = v;
	return 1;
}

bool ghconv_is_agent(const struct ghconv_comment *c, const char *self,
                     const struct ghconv_peers *peers)
{
	int64_t ch;
	return same_login(c->login, self) || c->bot_account || ghconv_marker_chain(c->body, &ch) ||
	       (peers && peers->registered && ghconv_peers_has(peers, c->login));
}

char *ghconv_strip_markers(const char *body)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	const char *p = body ? body : "";
	for (;;) {
		const char *m = strstr(p, MARKER_OPEN);
		const char *end = m ? strstr(m, "-->") : NULL;
		if (!m || !end) {
			sb_puts(&sb, p);
			break;
		}
		sb_append(&sb, p, (size_t)(m - p));
		p = end + 3;
	}
	/* the marker is appended after a blank line: no trailing space left */
	while (sb.len && isspace((unsigned char)sb_cstr(&sb)[sb.len - 1]))
		sb.len--;
	char *out = xstrndup(sb_cstr(&sb), sb.len);
	sb_free(&sb);
	return out;
}

/* --- staggering ---------------------------------------------------------------------------- */

int64_t ghconv_stagger_ms(const char *agent_name, const char *thread_key, int64_t min_ms,
                          int64_t span_ms)
{
	if (span_ms <= 0)
		return min_ms;
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_printf(&sb, "%s\n%s", agent_name ? agent_name : "", thread_key ? thread_key : "");
	unsigned char h[32];
	sha256_raw(sb_cstr(&sb), sb.len, h);
	sb_free(&sb);
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | h[i];
	return min_ms + (int64_t)(v % (uint64_t)span_ms);
}

/* --- duplicates ------------------------------------------------------------------------------ */

/* A bare "domain.tld/…" URL: labels of [a-z0-9-] joined by dots, then '/'. */
static bool bare_url(const char *tok, size_t len)
{
	size_t i = 0, dots = 0, label = 0;
	for (; i < len && tok[i] != '/'; i++) {
		char c = tok[i];
		if (c == '.') {
			if (!label)
				return false;
			dots++;
			label = 0;
		} else if (isalnum((unsigned char)c) || c == '-') {
			label++;
		} else {
			return false;
		}
	}
	return i < len && dots > 0 && label > 0;
}

char *ghconv_normalize(const char *body)
{
	char *clean = ghconv_strip_markers(body);
	struct strbuf sb;
	sb_init(&sb, 0);
	const char *p = clean;
	while (*p) {
		while (*p && isspace((unsigned char)*p))
			p++;
		const char *s = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		size_t len = (size_t)(p - s);
		if (!len)
			break;
		if ((len > 7 && strncasecmp(s, "http://", 7) == 0) ||
		    (len > 8 && strncasecmp(s, "https://", 8) == 0) || bare_url(s, len))
			continue;
		struct strbuf tok;
		sb_init(&tok, 0);
		for (size_t i = 0; i < len; i++) {
			if (s[i] == '@' && i + 1 < len && (isalnum((unsigned char)s[i + 1]))) {
				i++;
				while (i + 1 < len && (login_char(s[i + 1]) || s[i + 1] == '_'))
					i++;
				continue;
			}
			sb_putc(&tok, (char)tolower((unsigned char)s[i]));
		}
		if (tok.len) {
			if (sb.len)
				sb_putc(&sb, ' ');
			sb_append(&sb, sb_cstr(&tok), tok.len);
		}
		sb_free(&tok);
	}
	free(clean);
	/* the first GHCONV_NORMALIZED_CHARS code points */
	const char *t = sb_cstr(&sb);
	size_t cps = 0, i = 0;
	for (; i < sb.len; i++) {
		if (((unsigned char)t[i] & 0xC0) != 0x80) {
			if (cps == GHCONV_NORMALIZED_CHARS)
				break;
			cps++;
		}
	}
	char *out = xstrndup(t, i);
	sb_free(&sb);
	return out;
}

size_t ghconv_duplicates(const struct ghconv_thread *t, const char *self, int64_t *out, size_t cap)
{
	size_t own = 0, n = 0;
	for (size_t i = 0; i < t->n; i++)
		own += same_login(t->comments[i].login, self);
	if (own < 2)
		return 0;
	struct {
		char *norm;
		int64_t id;
		int64_t at;
	} *mine = xcalloc(own, sizeof *mine);
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		if (same_login(t->comments[i].login, self)) {
			mine[k].norm = ghconv_normalize(t->comments[i].body);
			mine[k].id = t->comments[i].id;
			mine[k].at = t->comments[i].created_ms;
			k++;
		}
	/* Keep the oldest of each group: a comment goes when an older one
	 * (by created_at, then id) has the same normalised body. */
	for (size_t i = 0; i < k; i++) {
		bool dup = false;
		for (size_t j = 0; j < k && !dup; j++) {
			if (j == i || strcmp(mine[i].norm, mine[j].norm) != 0)
				continue;
			if (mine[j].at < mine[i].at ||
			    (mine[j].at == mine[i].at && mine[j].id < mine[i].id))
				dup = true;
		}
		if (dup && n < cap && mine[i].id > 0)
			out[n++] = mine[i].id;
	}
	for (size_t i = 0; i < k; i++)
		free(mine[i].norm);
	free(mine);
	return n;
}

/* --- the reply ------------------------------------------------------------------------------ */

static const char *const signoffs[] = {"best regards", "kind regards", "regards",  "cheers",
                                       "thanks",       "thank you",    "best",     "sincerely",
                                       "signed",       "yours",        "cordially"};

/* s (len bytes, trimmed) without leading dashes, tildes, quotes, bullets
 * and emphasis, and a sign-off word with its comma. */
static const char *past_lead(const char *s, const char *end)
{
	for (;;) {
		if (s < end && strchr("-~*_> \t,", *s)) {
			s++;
			continue;
		}
		/* em dash and en dash (U+2014, U+2013) */
		if (end - s >= 3 && (unsigned char)s[0] == 0xE2 && (unsigned char)s[1] == 0x80 &&
		    ((unsigned char)s[2] == 0x94 || (unsigned char)s[2] == 0x93)) {
			s += 3;
			continue;
		}
		break;
	}
	return s;
}

static bool signoff_only(const char *s, const char *end)
{
	s = past_lead(s, end);
	while (end > s && strchr(",.!:; \t", end[-1]))
		end--;
	for (size_t i = 0; i < sizeof signoffs / sizeof signoffs[0]; i++)
		if ((size_t)(end - s) == strlen(signoffs[i]) &&
		    strncasecmp(s, signoffs[i], strlen(signoffs[i])) == 0)
			return true;
	return false;
}

/* A line that signs the comment with the agent's name or login: short,
 * names it, and starts with a dash or a sign-off, or is the name alone. */
static bool signature_line(const char *s, const char *end, const char *name, const char *login)
{
	if ((size_t)(end - s) > GHCONV_SIGNATURE_MAX)
		return false;
	char *line = xstrndup(s, (size_t)(end - s));
	bool names = has_word(line, name) || has_word(line, login);
	bool ok = false;
	if (names) {
		const char *body = past_lead(line, line + strlen(line));
		bool lead = body != line;
		bool signoff = false;
		for (size_t i = 0; i < sizeof signoffs / sizeof signoffs[0]; i++)
			if (strncasecmp(body, signoffs[i], strlen(signoffs[i])) == 0)
				signoff = true;
		const char *who = body;
		while (*who == '@')
			who++;
		size_t wl = strcspn(who, ",.!:;( \t");
		bool alone = (name && wl == strlen(name) && strncasecmp(who, name, wl) == 0) ||
		             (login && wl == strlen(login) && strncasecmp(who, login, wl) == 0);
		ok = lead || signoff || alone;
	}
	free(line);
	return ok;
}

char *ghconv_clean_reply(const char *text, const char *agent_name, const char *login,
                         bool *names_self)
{
	*names_self = false;
	if (!text)
		return NULL;
	/* "@login" self-mentions out (with one space of theirs) */
	struct strbuf sb;
	sb_init(&sb, 0);
	size_t ll = login ? strlen(login) : 0;
	for (const char *p = text; *p;) {
		if (ll && *p == '@' && strncasecmp(p + 1, login, ll) == 0 &&
		    !login_char(p[1 + ll]) && (p == text || !login_char(p[-1]))) {
			p += 1 + ll;
			if (*p == ' ' && (sb.len == 0 || sb_cstr(&sb)[sb.len - 1] == ' ' ||
			                  sb_cstr(&sb)[sb.len - 1] == '\n'))
				p++;
			continue;
		}
		sb_putc(&sb, *p++);
	}
	/* trailing signature lines out */
	char *s = sb_detach(&sb);
	sb_free(&sb);
	size_t len = strlen(s);
	for (;;) {
		while (len && isspace((unsigned char)s[len - 1]))
			len--;
		size_t start = len;
		while (start && s[start - 1] != '\n')
			start--;
		if (start == len)
			break;
		if (signature_line(s + start, s + len, agent_name, login)) {
			len = start;
			/* a bare "Cheers," just above goes with it */
			while (len && isspace((unsigned char)s[len - 1]))
				len--;
			size_t st2 = len;
			while (st2 && s[st2 - 1] != '\n')
				st2--;
			if (st2 > 0 && st2 < len && signoff_only(s + st2, s + len))
				len = st2;
			continue;
		}
		break;
	}
	size_t from = 0;
	while (from < len && isspace((unsigned char)s[from]))
		from++;
	char *out = len > from ? xstrndup(s + from, len - from) : NULL;
	free(s);
	if (out)
		*names_self = has_word(out, agent_name) || has_word(out, login);
	return out;
}

/* --- the prompt ---------------------------------------------------------------------------- */

static void quote_body(struct strbuf *sb, const char *body)
{
	char *b = ghconv_strip_markers(body);
	sb_puts(sb, b[0] ? b : "(empty)");
	sb_putc(sb, '\n');
	free(b);
}

static void when(struct strbuf *sb, int64_t ms)
{
	char iso[TIME_ISO_LEN + 1];
	if (ms > 0)
		sb_printf(sb, " (%s)", time_format_iso(ms, iso));
}

char *ghconv_prompt(const struct ghconv_thread *t, const char *self,
                    const struct ghconv_peers *peers, const struct ghconv_verdict *v,
                    const char *source)
{
	struct strbuf sb;
	sb_init(&sb, GHCONV_PROMPT_MAX_BYTES);
	sb_printf(&sb, "Source: %s.\n", source && *source ? source : "a GitHub notification");
	sb_printf(&sb, "Why you may answer: %s (urgency %s).\n", v->reason,
	          ghconv_urgency_name(v->urgency));
	if (v->only_missing)
		sb_puts(&sb, "Peers have already answered: only add what is missing.\n");
	sb_printf(&sb,
	          "Your GitHub account is %s: never mention it, never sign your comment, never "
	          "introduce yourself (GitHub shows the author).\n\n",
	          self);
	sb_printf(&sb, "%s #%" PRId64 " in %s/%s: %s\nState: %s. Opened by %s.\nURL: %s\n\n",
	          t->is_pull ? "Pull request" : "Issue", t->number, t->owner, t->repo, t->title,
	          t->closed ? "closed" : "open", t->issue.login[0] ? t->issue.login : "someone",
	          t->html_url);
	sb_puts(&sb, "Description:\n");
	quote_body(&sb, t->issue.body);
	size_t from = t->n > GHCONV_PROMPT_COMMENTS ? t->n - GHCONV_PROMPT_COMMENTS : 0;
	size_t hidden = from + t->hidden;
	if (t->n) {
		sb_puts(&sb, "\nComments");
		if (hidden)
			sb_printf(&sb, " (%zu earlier comment(s) not shown)", hidden);
		sb_puts(&sb, ":\n");
	} else {
		sb_puts(&sb, "\nNo comments yet.\n");
	}
	for (size_t i = from; i < t->n; i++) {
		const struct ghconv_comment *c = &t->comments[i];
		sb_printf(&sb, "\n[%zu] %s", i + 1 + t->hidden,
		          same_login(c->login, self) ? "you"
		                                     : (c->login[0] ? c->login : "someone"));
		when(&sb, c->created_ms);
		if (v->respond && (long)i == v->trigger)
			sb_puts(&sb, " ← the comment you answer");
		sb_puts(&sb, ":\n");
		quote_body(&sb, c->body);
	}
	bool header = false;
	for (size_t i = 0; i < t->n; i++) {
		const struct ghconv_comment *c = &t->comments[i];
		if (!ghconv_peers_has(peers, c->login))
			continue;
		if (!header) {
			sb_puts(&sb, "\nPeer contributions already in this thread (do not restate "
			             "them):\n");
			header = true;
		}
		char *b = ghconv_strip_markers(c->body);
		sb_printf(&sb, "- %s: %s\n", c->login, b);
		free(b);
	}
	char *out = xstrndup(sb_cstr(&sb), sb.len);
	sb_free(&sb);
	return out;
}

/* --- the seen set ------------------------------------------------------------------------------
 */

bool ghconv_seen_has(const struct ghconv_seen *s, const char *id, int64_t updated_ms)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->e[i].id, id) == 0 && s->e[i].updated_ms == updated_ms)
			return true;
	return false;
}

void ghconv_seen_add(struct ghconv_seen *s, const char *id, int64_t updated_ms)
{
	if (!id || !*id || strlen(id) >= GHCONV_NOTIF_ID_MAX || ghconv_seen_has(s, id, updated_ms))
		return;
	size_t slot = s->next;
	snprintf(s->e[slot].id, sizeof s->e[slot].id, "%s", id);
	s->e[slot].updated_ms = updated_ms;
	s->next = (slot + 1) % GHCONV_SEEN_MAX;
	if (s->n < GHCONV_SEEN_MAX)
		s->n++;
}

void ghconv_seen_put(struct ghconv_seen *s, const char *id, int64_t updated_ms)
{
	for (size_t i = 0; id && i < s->n; i++)
		if (strcmp(s->e[i].id, id) == 0) {
			s->e[i].updated_ms = updated_ms;
			return;
		}
	ghconv_seen_add(s, id, updated_ms);
}

cJSON *ghconv_seen_to_json(const struct ghconv_seen *s)
{
	cJSON *a = cJSON_CreateArray();
	size_t start = s->n < GHCONV_SEEN_MAX ? 0 : s->next;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = (start + k) % GHCONV_SEEN_MAX;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", s->e[i].id);
		cJSON_AddNumberToObject(o, "updated", (double)s->e[i].updated_ms);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

void ghconv_seen_from_json(struct ghconv_seen *s, const cJSON *a)
{
	memset(s, 0, sizeof *s);
	const cJSON *o;
	cJSON_ArrayForEach(o, a)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
		const cJSON *up = cJSON_GetObjectItemCaseSensitive(o, "updated");
		if (!cJSON_IsString(id) || !cJSON_IsNumber(up))
			continue;
		ghconv_seen_add(s, id->valuestring, (int64_t)up->valuedouble);
	}
}

int64_t ghconv_next_since(int64_t prev, const int64_t *updated, const bool *handled, size_t n)
{
	int64_t oldest_open = 0, newest = 0;
	for (size_t i = 0; i < n; i++) {
		if (updated[i] <= 0)
			continue;
		if (updated[i] > newest)
			newest = updated[i];
		if (!handled[i] && (!oldest_open || updated[i] < oldest_open))
			oldest_open = updated[i];
	}
	if (oldest_open)
		return oldest_open;
	return newest > prev ? newest : prev;
}
