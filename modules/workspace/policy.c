/* The work loop's pure rules: see policy.h. */
#include "modules/workspace/policy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strbuf.h"
#include "common/xalloc.h"

static void lower_into(char *dst, size_t cap, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < cap; i++)
		dst[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] - 'A' + 'a') : s[i];
	dst[i] = '\0';
}

void wsp_reviewer_hash(const char *login, const char *owner, const char *repo, int64_t pr,
                       char out[SHA256_HEX_LEN + 1])
{
	char who[PLAN_LOGIN_MAX + 8];
	lower_into(who, sizeof who, login);
	char buf[PLAN_LOGIN_MAX + 300];
	int n = snprintf(buf, sizeof buf, "%s%s/%s#%" PRId64, who, owner, repo, pr);
	sha256_hex(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : strlen(buf), out);
}

int wsp_designated_reviewer(const char *owner, const char *repo, int64_t pr, const char *author,
                            const char *const *candidates, size_t n, char *out, size_t cap,
                            struct decision *d)
{
	char best_hex[SHA256_HEX_LEN + 1] = "";
	const char *best = NULL;
	size_t considered = 0;
	for (size_t i = 0; i < n; i++) {
		const char *c = candidates[i];
		if (!c || !plan_valid_login(c) || (author && strcasecmp(c, author) == 0))
			continue;
		considered++;
		char hex[SHA256_HEX_LEN + 1];
		wsp_reviewer_hash(c, owner, repo, pr, hex);
		if (!best || strcmp(hex, best_hex) < 0) {
			best = c;
			memcpy(best_hex, hex, sizeof hex);
		}
	}
	if (!best) {
		if (d)
			decision_set(d, VERDICT_INFO, "reviewer_none",
			             "no known agent but the author (%s) to review %s/%s#%" PRId64,
			             author ? author : "?", owner, repo, pr);
		return -1;
	}
	lower_into(out, cap, best);
	if (d)
		decision_set(
		        d, VERDICT_PASS, "reviewer_designated",
		        "%s has the smallest review hash of %zu known agents for %s/%s#%" PRId64,
		        out, considered, owner, repo, pr);
	return 0;
}

void wsp_agents_add(struct wsp_agents *a, const char *login)
{
	if (!login || !plan_valid_login(login) || wsp_agents_has(a, login) ||
	    a->n >= WSP_MAX_AGENTS)
		return;
	lower_into(a->login[a->n++], PLAN_LOGIN_MAX, login);
}

bool wsp_agents_has(const struct wsp_agents *a, const char *login)
{
	for (size_t i = 0; login && i < a->n; i++)
		if (strcasecmp(a->login[i], login) == 0)
			return true;
	return false;
}

int wsp_key(char *out, size_t cap, const char *kind, const char *owner, const char *repo, int plan,
            int task, int attempt)
{
	char both[300];
	char low[300];
	snprintf(both, sizeof both, "%s/%s", owner, repo);
	lower_into(low, sizeof low, both);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(low, strlen(low), hex);
	int n;
	if (task <= 0)
		n = snprintf(out, cap, "ws-%s:%.12s#%d", kind, hex, plan);
	else if (attempt <= 0)
		n = snprintf(out, cap, "ws-%s:%.12s#%d/%d", kind, hex, plan, task);
	else
		n = snprintf(out, cap, "ws-%s:%.12s#%d/%d/a%d", kind, hex, plan, task, attempt);
	return n < 0 || (size_t)n >= cap || n > WSP_KEY_MAX ? -1 : 0;
}

char *wsp_comment(const char *phrase, const struct plan_marker *m)
{
	char mk[PLAN_MARKER_MAX];
	if (plan_marker_format(m, mk, sizeof mk) != 0)
		return NULL;
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, phrase ? phrase : "");
	sb_puts(&sb, "\n\n");
	sb_puts(&sb, mk);
	return sb_detach(&sb);
}

char *wsp_task_details(const char *pr_url, const char *shortstat, const struct git_file *files,
                       size_t n_files, size_t files_dropped, const char *tests_line)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_printf(&sb, "Task completed. PR: %s\n\n", pr_url && *pr_url ? pr_url : "(unknown)");
	if (shortstat && *shortstat)
		sb_printf(&sb, "**Changes:** %s\n\n", shortstat);
	size_t shown = n_files < WSP_DETAILS_FILES ? n_files : WSP_DETAILS_FILES;
	sb_printf(&sb, "**Files changed (%zu):**\n", n_files + files_dropped);
	for (size_t i = 0; i < shown; i++)
		sb_printf(&sb, "- `%s`\n", files[i].path);
	if (n_files + files_dropped > shown)
		sb_printf(&sb, "- … and %zu more\n", n_files + files_dropped - shown);
	const char *t = tests_line ? tests_line : "None found";
	sb_printf(&sb, "\n**Tests:** %s%s", strcmp(t, "Passed") == 0 ? "✅ " : "", t);
	return sb_detach(&sb);
}

void wsp_title_norm(const char *title, char *out, size_t cap)
{
	size_t k = 0;
	bool space = false;
	for (const char *p = title ? title : ""; *p && k + 2 < cap; p++) {
		unsigned char c = (unsigned char)*p;
		bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80;
		if (c >= 'A' && c <= 'Z') {
			c = (unsigned char)(c - 'A' + 'a');
			word = true;
		}
		if (!word) {
			space = k > 0;
			continue;
		}
		if (space)
			out[k++] = ' ';
		space = false;
		out[k++] = (char)c;
	}
	out[k] = '\0';
}

size_t wsp_plan_duplicates(const struct wsp_plan_brief *p, size_t n, struct wsp_supersede *out,
                           size_t cap)
{
	if (n > WSP_MAX_PLANS_SEEN)
		n = WSP_MAX_PLANS_SEEN;
	char norm[WSP_MAX_PLANS_SEEN][PLAN_TITLE_MAX];
	for (size_t i = 0; i < n; i++)
		wsp_title_norm(p[i].title, norm[i], sizeof norm[i]);
	size_t k = 0;
	for (size_t i = 0; i < n && k < cap; i++) {
		if (!norm[i][0])
			continue;
		/* the keeper of i's group: touched first, then the newest */
		size_t keep = i;
		for (size_t j = 0; j < n; j++) {
			if (strcmp(norm[j], norm[i]) != 0)
				continue;
			bool better =
			        (p[j].touched && !p[keep].touched) ||
			        (p[j].touched == p[keep].touched && p[j].number > p[keep].number);
			if (better)
				keep = j;
		}
		if (keep != i && !p[i].touched)
			out[k++] =
			        (struct wsp_supersede){.number = p[i].number, .by = p[keep].number};
	}
	return k;
}

bool wsp_claim_lapsed(const struct plan_task_state *st, const char *me, int64_t now_ms,
                      int64_t orphan_ms, struct decision *d)
{
	if ((st->status != PLAN_CLAIMED && st->status != PLAN_IN_PROGRESS) || !st->assignee[0]) {
		decision_set(d, VERDICT_INFO, "claim_live", "task %d is %s, nobody's claim",
		             st->task, plan_status_name(st->status));
		return false;
	}
	if (me && strcasecmp(st->assignee, me) == 0) {
		decision_set(d, VERDICT_INFO, "claim_ours", "task %d is ours", st->task);
		return false;
	}
	if (st->pr > 0) {
		decision_set(d, VERDICT_INFO, "claim_live",
		             "task %d has PR #%d: its review decides, not the claim", st->task,
		             st->pr);
		return false;
	}
	if (!st->from_markers || st->since_ms <= 0) {
		decision_set(d, VERDICT_INFO, "claim_live",
		             "task %d is %s by @%s in the body only: no marker tells when",
		             st->task, plan_status_name(st->status), st->assignee);
		return false;
	}
	int64_t age = now_ms - st->since_ms;
	if (age <= orphan_ms) {
		decision_set(d, VERDICT_INFO, "claim_live",
		             "task %d was claimed by @%s %" PRId64 " s ago (lapses after %" PRId64
		             " s without progress)",
		             st->task, st->assignee, age / 1000, orphan_ms / 1000);
		return false;
	}
	decision_set(d, VERDICT_PASS, "claim_lapsed",
	             "task %d: @%s's claim is %" PRId64 " s old with no PR (limit %" PRId64 " s)",
	             st->task, st->assignee, age / 1000, orphan_ms / 1000);
	return true;
}

void wsp_count(const struct plan_task_state *st, size_t n, struct wsp_counts *out)
{
	memset(out, 0, sizeof *out);
	out->total = (int)n;
	for (size_t i = 0; i < n; i++) {
		if (st[i].status == PLAN_COMPLETED)
			out->completed++;
		else if (st[i].status == PLAN_BLOCKED)
			out->blocked++;
		else if (st[i].status == PLAN_CLAIMED || st[i].status == PLAN_IN_PROGRESS)
			out->in_progress++;
	}
}
