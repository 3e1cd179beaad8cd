/*
 * wsp_view — pull requests as people read them (wsp_view.h).
 */
#include "modules/workspace/wsp_view.h"

#include <stdio.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"

#define TITLE_MAX_BYTES 120 /* a title in a line, cut on a code point */

static const struct {
	const char *state, *text;
} STATES[] = {
        {"awaiting_review", "awaiting review"},
        {"changes_requested", "changes requested"},
        {"revising", "revising"},
        {"approved", "approved"},
        {"merging", "merging"},
        {"conflict", "merge conflict"},
        {"rebuilding", "rebuilding after a conflict"},
        {"merged", "merged"},
        {"closed", "closed"},
        {"owner", "left to the owner"},
};

const char *wsp_view_state_text(const char *state)
{
	if (!state)
		return "?";
	for (size_t i = 0; i < sizeof STATES / sizeof STATES[0]; i++)
		if (strcmp(STATES[i].state, state) == 0)
			return STATES[i].text;
	return state;
}

static bool is(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* s (non-empty) or NULL */
static const char *str(const cJSON *o, const char *key)
{
	const char *s = json_string_or(o, key, NULL);
	return s && s[0] ? s : NULL;
}

void wsp_view_since(int64_t since_ms, int64_t now_ms, char *out, size_t cap)
{
	char at[TIME_ISO_LEN + 1], today[TIME_ISO_LEN + 1];
	time_format_iso(since_ms, at);
	time_format_iso(now_ms, today);
	char when[32];
	if (memcmp(at, today, 10) == 0)
		snprintf(when, sizeof when, "%.5s UTC", at + 11);
	else
		snprintf(when, sizeof when, "%.10s %.5s UTC", at, at + 11);
	if (since_ms >= now_ms) {
		snprintf(out, cap, "%s", when);
		return;
	}
	int64_t min = (now_ms - since_ms) / 60000;
	if (min < 60)
		snprintf(out, cap, "%s (%lld min)", when, (long long)min);
	else if (min < 24 * 60)
		snprintf(out, cap, "%s (%lld h %lld min)", when, (long long)(min / 60),
		         (long long)(min % 60));
	else
		snprintf(out, cap, "%s (%lld d %lld h)", when, (long long)(min / (24 * 60)),
		         (long long)(min / 60 % 24));
}

/* "o/r#N" of a pull; false when it has no repo or number. */
static bool pull_ref(const cJSON *pull, char *out, size_t cap)
{
	const char *repo = str(pull, "repo");
	int64_t n = json_int_or(pull, "number", 0);
	if (!repo || n <= 0) {
		if (cap)
			out[0] = '\0';
		return false;
	}
	snprintf(out, cap, "%s#%lld", repo, (long long)n);
	return true;
}

/* The text in sb into out, cut on a code point with "…" when it does not fit. */
static void sb_out(const struct strbuf *sb, char *out, size_t cap)
{
	if (!cap)
		return;
	if (sb->len < cap) {
		memcpy(out, sb_cstr(sb), sb->len + 1);
		return;
	}
	static const char ell[] = "\xe2\x80\xa6";
	if (cap < sizeof ell) {
		out[0] = '\0';
		return;
	}
	size_t keep = utf8_cut(sb->buf, sb->len, cap - sizeof ell);
	memcpy(out, sb->buf, keep);
	memcpy(out + keep, ell, sizeof ell);
}

static void put_since(struct strbuf *sb, const char *lead, const cJSON *pull, int64_t now_ms)
{
	int64_t since = json_int_or(pull, "since_ms", 0);
	if (since <= 0)
		return;
	char when[64];
	wsp_view_since(since, now_ms, when, sizeof when);
	sb_printf(sb, "%s%s", lead, when);
}

bool wsp_view_pull_line(const cJSON *pull, int64_t now_ms, char *out, size_t cap)
{
	char ref[300];
	if (!pull_ref(pull, ref, sizeof ref)) {
		if (cap)
			out[0] = '\0';
		return false;
	}
	struct strbuf sb;
	sb_init(&sb, 0);
	const char *state = str(pull, "state");
	sb_printf(&sb, "%s %s", ref, wsp_view_state_text(state));
	/* nobody acts on a merged or closed one, whatever "next" says */
	const char *next = is(state, "merged") || is(state, "closed") ? NULL : str(pull, "next");
	if (next)
		sb_printf(&sb, " \xe2\x80\x94 %s to act", next);
	put_since(&sb, next ? ", since " : " since ", pull, now_ms);
	int64_t rev = json_int_or(pull, "revisions", 0);
	if (rev > 0)
		sb_printf(&sb, ", %lld revision%s", (long long)rev, rev == 1 ? "" : "s");
	int64_t task = json_int_or(pull, "task", 0), plan = json_int_or(pull, "plan", 0);
	const char *author = str(pull, "author");
	const char *sep = "; ";
	if (task > 0 && plan > 0) {
		sb_printf(&sb, "; task %lld of plan #%lld", (long long)task, (long long)plan);
		sep = ", ";
	}
	if (author) {
		sb_printf(&sb, "%sby %s", sep, author);
		sep = ", ";
	}
	const char *title = str(pull, "title");
	if (title) {
		size_t tl = utf8_cut(title, strlen(title), TITLE_MAX_BYTES);
		/* after "task …" or "by …": a colon; else the next clause */
		sb_printf(&sb, "%s\"%.*s%s\"", sep[0] == ',' ? ": " : "; ", (int)tl, title,
		          title[tl] ? "\xe2\x80\xa6" : "");
	}
	sb_out(&sb, out, cap);
	sb_free(&sb);
	return true;
}

bool wsp_view_pull_wait(const cJSON *pull, const char *login, int64_t now_ms, char *out, size_t cap)
{
	char ref[300];
	if (cap)
		out[0] = '\0';
	if (!login || !pull_ref(pull, ref, sizeof ref))
		return false;
	const char *state = str(pull, "state");
	const char *author = str(pull, "author"), *reviewer = str(pull, "reviewer");
	const char *next = str(pull, "next");
	bool mine = is(author, login), me_next = is(next, login);
	if (!state || is(state, "merged") || is(state, "closed"))
		return false;
	if (!mine && !me_next && !is(reviewer, login))
		return false;
	const char *other = next ? next : "?";
	struct strbuf sb;
	sb_init(&sb, 0);
	const char *lead = " since ";
	if (is(state, "owner")) {
		/* next names the owner; "owner" itself when the name is unknown */
		if (next && !is(next, "owner"))
			sb_printf(&sb, "waiting for the owner %s on %s (left to the owner)", next,
			          ref);
		else
			sb_printf(&sb, "waiting for the owner on %s (left to the owner)", ref);
	} else if (is(state, "awaiting_review")) {
		if (me_next) {
			sb_printf(&sb, "reviewing %s by %s", ref, author ? author : "?");
			lead = ", requested since ";
		} else {
			sb_printf(&sb, "waiting for %s's review of %s", other, ref);
		}
	} else if (is(state, "changes_requested") || is(state, "revising")) {
		int64_t rev = json_int_or(pull, "revisions", 0);
		if (me_next)
			sb_printf(&sb, "revising %s after changes requested", ref);
		else
			sb_printf(&sb, "waiting for %s to revise %s after changes requested", other,
			          ref);
		if (rev > 0)
			sb_printf(&sb, " (revision %lld)", (long long)rev);
	} else if (is(state, "approved") || is(state, "merging")) {
		if (me_next)
			sb_printf(&sb, "merging %s", ref);
		else
			sb_printf(&sb, "waiting for %s to merge %s", other, ref);
	} else if (is(state, "conflict") || is(state, "rebuilding")) {
		if (me_next)
			sb_printf(&sb, "rebuilding %s after a merge conflict", ref);
		else
			sb_printf(&sb, "waiting for %s to rebuild %s after a merge conflict", other,
			          ref);
	} else if (me_next) {
		sb_printf(&sb, "to act on %s (%s)", ref, state);
	} else {
		sb_printf(&sb, "waiting for %s on %s (%s)", other, ref, state);
	}
	put_since(&sb, lead, pull, now_ms);
	sb_out(&sb, out, cap);
	sb_free(&sb);
	return true;
}

static void copy_str(cJSON *to, const cJSON *from, const char *key)
{
	const char *s = str(from, key);
	if (s)
		cJSON_AddStringToObject(to, key, s);
}

static void copy_int(cJSON *to, const cJSON *from, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, key);
	if (cJSON_IsNumber(v) && v->valuedouble > 0)
		cJSON_AddNumberToObject(to, key, (double)json_int_or(from, key, 0));
}

cJSON *wsp_view_plan_pulls(const cJSON *status, const char *repo, int plan)
{
	cJSON *arr = cJSON_CreateArray();
	int n = 0;
	const cJSON *p;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(status, "pulls"))
	{
		if (n >= WSP_VIEW_ROOM_PULLS_MAX)
			break;
		char ref[300];
		if (!pull_ref(p, ref, sizeof ref) || !is(str(p, "repo"), repo) ||
		    json_int_or(p, "plan", 0) != plan || !str(p, "state"))
			continue;
		cJSON *o = cJSON_CreateObject();
		copy_str(o, p, "repo");
		cJSON_AddNumberToObject(o, "number", (double)json_int_or(p, "number", 0));
		copy_str(o, p, "title");
		copy_str(o, p, "url");
		copy_int(o, p, "task");
		copy_str(o, p, "author");
		copy_str(o, p, "reviewer");
		copy_str(o, p, "state");
		copy_str(o, p, "next");
		int64_t since = json_int_or(p, "since_ms", 0);
		if (since > 0) {
			char iso[TIME_ISO_LEN + 1];
			cJSON_AddStringToObject(o, "since", time_format_iso(since, iso));
		}
		copy_int(o, p, "revisions");
		cJSON_AddItemToArray(arr, o);
		n++;
	}
	return arr;
}

uint64_t wsp_view_pulls_hash(const cJSON *pulls)
{
	if (!cJSON_GetArraySize(pulls))
		return 0;
	char *text = cJSON_PrintUnformatted(pulls);
	if (!text)
		return 0;
	unsigned char h[32];
	sha256_raw(text, strlen(text), h);
	cJSON_free(text);
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | h[i];
	return v ? v : 1;
}
