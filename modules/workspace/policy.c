/* The work loop's pure rules: see policy.h. */
#include "modules/workspace/policy.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/phrase.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
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

static int login_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	int c = strcasecmp(x, y);
	return c ? c : strcmp(x, y);
}

void wsp_agents_add_sorted(struct wsp_agents *a, const char *const *logins, size_t n)
{
	const char **v = xcalloc(n + 1, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (logins[i] && plan_valid_login(logins[i]))
			v[k++] = logins[i];
	qsort(v, k, sizeof *v, login_cmp);
	for (size_t i = 0; i < k; i++)
		wsp_agents_add(a, v[i]);
	free(v);
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

/* --- recovery and lifecycle -------------------------------------------------------------- */

bool wsp_task_branch(const char *branch, int task, const char *title)
{
	char name[PLAN_BRANCH_MAX + 1];
	if (!branch || plan_branch_task(branch) != task)
		return false;
	if (plan_branch_legacy(task, title, name, sizeof name) == 0 && strcmp(branch, name) == 0)
		return true;
	if (plan_branch_name(task, title, 1, name, sizeof name) != 0)
		return false;
	size_t n = strlen(name);
	if (strncmp(branch, name, n) != 0)
		return false;
	const char *rest = branch + n;
	if (!*rest)
		return true;
	if (rest[0] != '-' || rest[1] != 'a' || !rest[2])
		return false;
	for (const char *p = rest + 2; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

bool wsp_pr_of_task(const char *head_ref, const char *body, int plan, int task)
{
	if (!head_ref || plan_branch_task(head_ref) != task)
		return false;
	const char *part = body ? strstr(body, "Part of #") : NULL;
	if (!part)
		return true;
	for (; part; part = strstr(part + 1, "Part of #")) {
		char *end = NULL;
		long n = strtol(part + 9, &end, 10);
		if (end != part + 9 && n == plan)
			return true;
	}
	return false;
}

char *wsp_recovered_pr_body(int plan, int task, const char *title, const char *branch,
                            const char *login, int attempt)
{
	struct plan_marker m = {
	        .kind = PLAN_MARK_PR, .plan = plan, .task = task, .attempt = attempt};
	snprintf(m.agent, sizeof m.agent, "%s", login);
	snprintf(m.branch, sizeof m.branch, "%s", branch);
	char marker[PLAN_MARKER_MAX + 1];
	if (plan_marker_format(&m, marker, sizeof marker) != 0)
		return NULL;
	struct strbuf sb = {0};
	sb_printf(&sb, "## Task %d from plan #%d\n\n**Task:** %s\n\n", task, plan, title);
	sb_printf(&sb,
	          "Recovered: the branch `%s` was pushed but no pull request was opened for it "
	          "(its agent stopped before that step). @%s opened this one so the work is "
	          "reviewed instead of lost.\n\n---\nPart of #%d\n\n%s\n",
	          branch, login, plan, marker);
	return sb_detach(&sb);
}

static bool has_label(const cJSON *issue, const char *name)
{
	const cJSON *l;
	cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(issue, "labels"))
	{
		const char *s = cJSON_IsString(l) ? l->valuestring : json_string_or(l, "name", "");
		if (strcasecmp(s, name) == 0)
			return true;
	}
	return false;
}

int wsp_issue_brief(const cJSON *issue, struct wsp_issue_brief *out)
{
	memset(out, 0, sizeof *out);
	out->number = (int)json_int_or(issue, "number", 0);
	if (out->number <= 0)
		return -1;
	out->pull = cJSON_GetObjectItemCaseSensitive(issue, "pull_request") != NULL;
	out->plan = has_label(issue, PLAN_LABEL);
	out->finished = has_label(issue, WSP_LABEL_FINISHED);
	out->discussion = has_label(issue, WSP_LABEL_DISCUSSION);
	out->memo = has_label(issue, WSP_LABEL_MEMO);
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(issue, "user");
	snprintf(out->author, sizeof out->author, "%s", json_string_or(user, "login", ""));
	time_parse_iso(json_string_or(issue, "created_at", ""), &out->created_ms);
	time_parse_iso(json_string_or(issue, "updated_at", ""), &out->updated_ms);
	return 0;
}

/* What b is when it is not a plain issue (hygiene and the scan leave
 * it), else NULL. */
static const char *not_plain(const struct wsp_issue_brief *b)
{
	return b->pull         ? "pull request"
	       : b->plan       ? "plan"
	       : b->finished   ? "finished sentinel"
	       : b->discussion ? "discussion"
	                       : NULL;
}

enum wsp_hygiene wsp_issue_hygiene(const struct wsp_issue_brief *b, const char *me, int64_t now_ms,
                                   int64_t handled_ms, int64_t stale_ms, struct decision *d)
{
	const char *kind = not_plain(b);
	if (kind) {
		decision_set(d, VERDICT_INFO, "issue_kept", "#%d is a %s: hygiene leaves it",
		             b->number, kind);
		return WSP_HYG_KEEP;
	}
	int64_t quiet = b->updated_ms > 0 ? now_ms - b->updated_ms : 0;
	int64_t stale = b->memo ? stale_ms * 3 / 7 : stale_ms;
	if (b->updated_ms > 0 && quiet >= stale) {
		decision_set(d, VERDICT_PASS, "issue_stale",
		             "#%d has been quiet for %" PRId64 " h (a%s issue closes after %" PRId64
		             " h)",
		             b->number, quiet / 3600000, b->memo ? " memo" : "n", stale / 3600000);
		return WSP_HYG_STALE;
	}
	if (b->updated_ms > 0 && quiet >= handled_ms && b->last_commenter[0] && me &&
	    strcasecmp(b->last_commenter, me) == 0) {
		decision_set(d, VERDICT_PASS, "issue_handled",
		             "#%d: our comment is the latest and nobody answered in %" PRId64 " h",
		             b->number, quiet / 3600000);
		return WSP_HYG_HANDLED;
	}
	decision_set(d, VERDICT_INFO, "issue_kept", "#%d is active (quiet for %" PRId64 " min)",
	             b->number, quiet / 60000);
	return WSP_HYG_KEEP;
}

bool wsp_engage_candidate(const struct wsp_issue_brief *b, const char *me,
                          const struct wsp_agents *agents, struct decision *d)
{
	struct decision tmp;
	if (!d)
		d = &tmp;
	const char *kind = not_plain(b);
	if (kind) {
		decision_set(d, VERDICT_DROP, "not_an_issue",
		             "#%d is a %s: not answered by the scan", b->number, kind);
		return false;
	}
	if (!b->author[0] || (me && strcasecmp(b->author, me) == 0) ||
	    (agents && wsp_agents_has(agents, b->author))) {
		decision_set(d, VERDICT_DROP, "agent_issue", "#%d was opened by %s", b->number,
		             !b->author[0]                          ? "an unknown author"
		             : me && strcasecmp(b->author, me) == 0 ? "us"
		                                                    : "a known agent");
		return false;
	}
	if (b->last_commenter[0] && me && strcasecmp(b->last_commenter, me) == 0) {
		decision_set(d, VERDICT_DROP, "awaiting_others", "#%d: our comment is the latest",
		             b->number);
		return false;
	}
	decision_set(d, VERDICT_PASS, "workspace_issue", "#%d was opened by %s, a person",
	             b->number, b->author);
	return true;
}

size_t wsp_engage(const struct wsp_issue_brief *b, size_t n, const char *owner, const char *repo,
                  const char *me, const struct wsp_agents *agents, size_t max,
                  wsp_consider_fn consider, void *ud)
{
	if (!consider || max == 0 || n == 0)
		return 0;
	size_t *order = xcalloc(n, sizeof *order), k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!wsp_engage_candidate(&b[i], me, agents, NULL))
			continue;
		size_t j = k++;
		while (j > 0 && b[order[j - 1]].number < b[i].number) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	size_t queued = 0;
	for (size_t i = 0; i < k && queued < max; i++) {
		const struct wsp_issue_brief *x = &b[order[i]];
		enum wsp_consider c = consider(ud, owner, repo, x->number, x->updated_ms);
		if (c == WSP_CONSIDER_LATER)
			break;
		if (c == WSP_CONSIDER_QUEUED)
			queued++;
	}
	free(order);
	return queued;
}

int wsp_sentinel_pick(const struct wsp_issue_brief *b, size_t n)
{
	int best = -1;
	for (size_t i = 0; i < n; i++)
		if (b[i].finished && !b[i].pull && (best < 0 || b[i].number < b[best].number))
			best = (int)i;
	return best;
}

bool wsp_sentinel_reactivated(const struct wsp_issue_brief *b, size_t n, int sentinel,
                              const struct wsp_agents *agents, int *by)
{
	if (sentinel < 0 || (size_t)sentinel >= n)
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct wsp_issue_brief *x = &b[i];
		if (x->pull || x->finished || !x->author[0] || x->number < b[sentinel].number)
			continue;
		if (!x->plan && wsp_agents_has(agents, x->author))
			continue;
		if (by)
			*by = x->number;
		return true;
	}
	return false;
}

bool wsp_plan_covers(const char *body, int n)
{
	if (!body || n <= 0)
		return false;
	char needle[24];
	int len = snprintf(needle, sizeof needle, "#%d", n);
	for (const char *p = strstr(body, needle); p; p = strstr(p + 1, needle)) {
		bool word_before = p > body && ((p[-1] >= 'A' && p[-1] <= 'Z') ||
		                                (p[-1] >= 'a' && p[-1] <= 'z') ||
		                                (p[-1] >= '0' && p[-1] <= '9') || p[-1] == '&');
		char after = p[len];
		if (!word_before && !(after >= '0' && after <= '9'))
			return true;
	}
	return false;
}

char *wsp_synthesis_prompt(const char *owner, const char *repo, const cJSON *issues, int *nums,
                           size_t cap, size_t *n)
{
	*n = 0;
	struct strbuf list = {0};
	size_t left_out = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, issues)
	{
		struct wsp_issue_brief b;
		if (wsp_issue_brief(it, &b) != 0 || b.pull || b.plan || b.finished || b.discussion)
			continue;
		if (*n >= cap || *n >= WSP_SYNTH_MAX_ISSUES) {
			left_out++;
			continue;
		}
		nums[(*n)++] = b.number;
		sb_printf(&list, "### #%d: %s\n", b.number, json_string_or(it, "title", ""));
		const cJSON *l;
		bool first = true;
		cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(it, "labels"))
		{
			sb_printf(&list, "%s%s", first ? "Labels: " : ", ",
			          json_string_or(l, "name", ""));
			first = false;
		}
		const char *body = json_string_or(it, "body", "");
		size_t cut = utf8_cut(body, strlen(body), WSP_SYNTH_BODY_MAX);
		sb_printf(&list, "%s%.*s%s\n\n", first ? "" : "\n", (int)cut, body,
		          cut < strlen(body) ? " […]" : "");
	}
	if (*n == 0) {
		sb_free(&list);
		return NULL;
	}
	struct strbuf sb = {0};
	sb_printf(&sb,
	          "The workspace %s/%s has no open plan, and these issues are open. Roll them up "
	          "into ONE plan with plan_create (owner \"%s\", repo \"%s\"): tasks that produce "
	          "code or documentation, in order, each small enough for one pull request. Name "
	          "every issue a task covers by its number (\"Covers #12\") in that task's "
	          "description: an issue the plan does not name stays open. Leave out an issue "
	          "that asks for no code (a question, a discussion).\n\n",
	          owner, repo, owner, repo);
	sb_append(&sb, list.buf, list.len);
	if (left_out)
		sb_printf(&sb, "(%zu more open issues are left for a later plan.)\n", left_out);
	sb_free(&list);
	return sb_detach(&sb);
}

/* --- the merge rule ------------------------------------------------------------------------- */

const char *wsp_pr_state_name(enum wsp_pr_state s)
{
	static const char *const names[] = {
	        "awaiting_review", "changes_requested", "revising", "approved", "merging",
	        "conflict",        "rebuilding",        "merged",   "closed",   "owner"};
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

const char *wsp_pr_act_name(enum wsp_pr_act a)
{
	static const char *const names[] = {"wait",    "merge", "revise", "request",
	                                    "rebuild", "owner", "close"};
	return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "?";
}

static bool login_in(const char *login, const char *const *v, size_t n)
{
	for (size_t i = 0; login && i < n; i++)
		if (v[i] && strcasecmp(v[i], login) == 0)
			return true;
	return false;
}

static bool asked(const struct wsp_pr_facts *f, const char *login)
{
	for (size_t i = 0; i < f->n_asks; i++)
		if (f->asks[i].login && strcasecmp(f->asks[i].login, login) == 0)
			return true;
	return false;
}

/* The reviewers who count: the designated one and everyone asked. */
static bool responsible(const struct wsp_pr_facts *f, const char *designated, const char *login)
{
	if (!login || (f->author && strcasecmp(login, f->author) == 0))
		return false;
	return (designated[0] && strcasecmp(login, designated) == 0) || asked(f, login);
}

/* The next reviewer: the smallest hash among the known agents not yet
 * asked, not the one awaited (cur) and not the author. -1 when none is
 * left. An agent designated now but never asked is not passed over: the
 * known agents may have changed since the first request (an agent left
 * the room, another joined). */
static int next_reviewer(const struct wsp_pr_facts *f, const char *cur, char *out, size_t cap)
{
	const char *left[WSP_MAX_AGENTS];
	size_t n = 0;
	for (size_t i = 0; i < f->n_agents && n < WSP_MAX_AGENTS; i++) {
		const char *a = f->agents[i];
		if (!a || strcasecmp(a, cur) == 0 || asked(f, a))
			continue;
		left[n++] = a;
	}
	return wsp_designated_reviewer(f->owner, f->repo, f->number, f->author, left, n, out, cap,
	                               NULL);
}

static bool is_state(const struct wsp_pr_review *r, const char *s)
{
	return r->state && strcmp(r->state, s) == 0;
}

static void verdict(struct wsp_pr_verdict *v, enum wsp_pr_act act, enum wsp_pr_state st,
                    const char *next, enum decision_verdict dv, const char *rule)
{
	v->act = act;
	v->state = st;
	snprintf(v->next, sizeof v->next, "%s", next ? next : "");
	v->d.verdict = dv;
	v->d.rule = rule;
}

#define REASON(v, ...) snprintf((v)->d.reason, sizeof(v)->d.reason, __VA_ARGS__)

void wsp_pr_decide(const struct wsp_pr_facts *f, struct wsp_pr_verdict *v)
{
	memset(v, 0, sizeof *v);
	decision_set(&v->d, VERDICT_INFO, "pr_wait", "-");
	int64_t timeout = f->review_timeout_ms > 0 ? f->review_timeout_ms : WSP_REVIEW_TIMEOUT_MS;
	int max_rev = f->max_revisions >= 0 ? f->max_revisions : WSP_MAX_REVISIONS;
	int max_reb = f->max_rebuilds >= 0 ? f->max_rebuilds : WSP_MAX_REBUILDS;
	const char *head = f->head_sha ? f->head_sha : "";
	v->since_ms = f->created_ms;

	if (f->task_pr > 0 && f->task_pr != f->number) {
		verdict(v, WSP_ACT_CLOSE, WSP_PR_CLOSED, NULL, VERDICT_PASS, "pr_replaced");
		REASON(v, "PR #%" PRId64 " was replaced by the task's PR #%d: closed", f->number,
		       f->task_pr);
		return;
	}
	if (f->running != WSP_RUN_NONE) {
		bool rev = f->running == WSP_RUN_REVISION;
		verdict(v, WSP_ACT_WAIT, rev ? WSP_PR_REVISING : WSP_PR_REBUILDING, f->author,
		        VERDICT_INFO, rev ? "pr_revising" : "pr_rebuilding");
		REASON(v, "PR #%" PRId64 ": the coder %s", f->number,
		       rev ? "revises it on its branch" : "rebuilds it on a fresh branch");
		return;
	}

	char designated[PLAN_LOGIN_MAX] = "";
	wsp_designated_reviewer(f->owner, f->repo, f->number, f->author, f->agents, f->n_agents,
	                        designated, sizeof designated, NULL);

	/* changes requested on distinct heads by the reviewers who count */
	const char *heads[64];
	size_t nheads = 0;
	const struct wsp_pr_review *last = NULL;
	for (size_t i = 0; i < f->n_reviews; i++) {
		const struct wsp_pr_review *r = &f->reviews[i];
		bool counts = responsible(f, designated, r->user) ||
		              (f->handed_over && r->user && f->author &&
		               strcasecmp(r->user, f->author) != 0);
		if (!counts)
			continue;
		if (is_state(r, "CHANGES_REQUESTED") && r->commit_id && nheads < 64) {
			bool seen = false;
			for (size_t k = 0; k < nheads && !seen; k++)
				seen = strcmp(heads[k], r->commit_id) == 0;
			if (!seen)
				heads[nheads++] = r->commit_id;
		}
		if ((is_state(r, "APPROVED") || is_state(r, "CHANGES_REQUESTED")) && r->commit_id &&
		    strcmp(r->commit_id, head) == 0)
			last = r; /* the latest decisive one on this head */
	}
	v->revisions = (int)nheads;

	if (f->mergeable_state && strcmp(f->mergeable_state, "dirty") == 0) {
		v->since_ms = f->now_ms;
		if (f->handed_over) {
			verdict(v, WSP_ACT_WAIT, WSP_PR_OWNER, NULL, VERDICT_INFO, "pr_owner");
			REASON(v, "PR #%" PRId64 " conflicts and is left to the owner", f->number);
		} else if (f->attempt - 1 >= max_reb) {
			verdict(v, WSP_ACT_OWNER, WSP_PR_CONFLICT, NULL, VERDICT_BLOCK,
			        "pr_rebuilds_spent");
			REASON(v,
			       "PR #%" PRId64
			       " conflicts with the default branch after %d rebuilds "
			       "(at most %d): left to the owner",
			       f->number, f->attempt - 1, max_reb);
		} else {
			verdict(v, WSP_ACT_REBUILD, WSP_PR_CONFLICT, f->author, VERDICT_PASS,
			        "pr_conflict");
			REASON(v,
			       "PR #%" PRId64 " conflicts with the default branch (mergeable_state "
			       "dirty): rebuilt on a fresh branch, attempt %d",
			       f->number, f->attempt + 1);
		}
		return;
	}

	if (last) {
		v->decisive = last;
		v->since_ms = last->at_ms;
		snprintf(v->reviewer, sizeof v->reviewer, "%s", last->user);
		if (is_state(last, "APPROVED")) {
			verdict(v, WSP_ACT_MERGE, WSP_PR_APPROVED, f->author, VERDICT_PASS,
			        "pr_approved");
			REASON(v, "@%s approved PR #%" PRId64 " at %.12s: merged by its creator",
			       last->user, f->number, head);
			return;
		}
		if (f->handed_over) {
			verdict(v, WSP_ACT_WAIT, WSP_PR_OWNER, NULL, VERDICT_INFO, "pr_owner");
			REASON(v, "PR #%" PRId64 ": changes requested, left to the owner",
			       f->number);
		} else if (v->revisions > max_rev) {
			verdict(v, WSP_ACT_OWNER, WSP_PR_CHANGES_REQUESTED, NULL, VERDICT_BLOCK,
			        "pr_revisions_spent");
			REASON(v,
			       "@%s requested changes on PR #%" PRId64 " a %d. time (at most %d "
			       "revisions): left to the owner",
			       last->user, f->number, v->revisions, max_rev);
		} else {
			verdict(v, WSP_ACT_REVISE, WSP_PR_CHANGES_REQUESTED, f->author,
			        VERDICT_PASS, "pr_changes_requested");
			REASON(v,
			       "@%s requested changes on PR #%" PRId64
			       ": revision %d of at most %d "
			       "on the same branch",
			       last->user, f->number, v->revisions, max_rev);
		}
		return;
	}

	if (f->handed_over) {
		verdict(v, WSP_ACT_WAIT, WSP_PR_OWNER, NULL, VERDICT_INFO, "pr_owner");
		REASON(v, "PR #%" PRId64 " is left to the owner", f->number);
		return;
	}

	/* the reviewer awaited: the latest asked, else the designated */
	const char *cur = designated[0] ? designated : NULL;
	int64_t asked_at = 0;
	for (size_t i = 0; i < f->n_asks; i++) {
		const char *a = f->asks[i].login;
		if (!a || (f->author && strcasecmp(a, f->author) == 0))
			continue;
		cur = a;
		asked_at = f->asks[i].at_ms;
	}
	if (!cur) {
		verdict(v, WSP_ACT_OWNER, WSP_PR_AWAITING_REVIEW, NULL, VERDICT_BLOCK,
		        "reviewer_none");
		REASON(v,
		       "no agent but its author is known to review PR #%" PRId64
		       ": left to the owner",
		       f->number);
		return;
	}
	snprintf(v->reviewer, sizeof v->reviewer, "%s", cur);
	bool requested = login_in(cur, f->requested, f->n_requested) ||
	                 login_in(cur, f->asked_head, f->n_asked_head);
	if (!requested) {
		/* never asked, or asked before this head (a review takes it off
		 * the requested list; a revision moved the head) */
		snprintf(v->ask, sizeof v->ask, "%s", cur);
		verdict(v, WSP_ACT_REQUEST, WSP_PR_AWAITING_REVIEW, cur, VERDICT_PASS,
		        "reviewer_requested");
		REASON(v, "@%s is asked to review PR #%" PRId64 " at %.12s", cur, f->number, head);
		return;
	}
	/* the reviews of cur after it was asked, on an older head, do not
	 * count: it was asked again for this head */
	int64_t since = asked_at > 0 ? asked_at : f->created_ms;
	v->since_ms = since;
	if (f->now_ms - since <= timeout) {
		verdict(v, WSP_ACT_WAIT, WSP_PR_AWAITING_REVIEW, cur, VERDICT_INFO,
		        "review_awaited");
		REASON(v,
		       "PR #%" PRId64 " waits for @%s's review (asked %" PRId64
		       " s ago, timeout %" PRId64 " s)",
		       f->number, cur, (f->now_ms - since) / 1000, timeout / 1000);
		return;
	}
	char nx[PLAN_LOGIN_MAX];
	if (next_reviewer(f, cur, nx, sizeof nx) == 0) {
		snprintf(v->ask, sizeof v->ask, "%s", nx);
		verdict(v, WSP_ACT_REQUEST, WSP_PR_AWAITING_REVIEW, nx, VERDICT_PASS,
		        "review_timeout");
		REASON(v,
		       "@%s did not review PR #%" PRId64 " within %" PRId64
		       " s: the next reviewer @%s is asked",
		       cur, f->number, timeout / 1000, nx);
		return;
	}
	verdict(v, WSP_ACT_OWNER, WSP_PR_AWAITING_REVIEW, NULL, VERDICT_BLOCK, "review_timeout");
	REASON(v,
	       "@%s did not review PR #%" PRId64 " within %" PRId64
	       " s and no other agent is left to ask: left to the owner",
	       cur, f->number, timeout / 1000);
}

int wsp_pr_plan_of(const char *body)
{
	int plan = 0;
	for (const char *p = body ? strstr(body, "Part of #") : NULL; p;
	     p = strstr(p + 1, "Part of #")) {
		char *end;
		long n = strtol(p + 9, &end, 10);
		if (end != p + 9 && n > 0 && n < 1000000000)
			plan = (int)n;
	}
	return plan;
}

int wsp_pr_task_of_branch(const char *head_ref)
{
	if (!head_ref || strncmp(head_ref, "task-", 5) != 0)
		return 0;
	char *end;
	long n = strtol(head_ref + 5, &end, 10);
	return end != head_ref + 5 && *end == '-' && n > 0 && n < 100000 ? (int)n : 0;
}

int wsp_pr_key(char *out, size_t cap, const char *kind, const char *owner, const char *repo,
               int64_t pr, const char *sha, const char *login)
{
	char base[WSP_KEY_MAX + 1];
	if (wsp_key(base, sizeof base, kind, owner, repo, (int)pr, 0, 0) != 0)
		return -1;
	char who[PLAN_LOGIN_MAX + 2] = "";
	if (login && *login)
		lower_into(who + 1, sizeof who - 1, login), who[0] = ':';
	int n = snprintf(out, cap, "%s%s%.12s%s", base, sha && *sha ? "@" : "", sha ? sha : "",
	                 who);
	return n < 0 || (size_t)n >= cap || n > WSP_KEY_MAX ? -1 : 0;
}

bool wsp_review_substantive(const char *body)
{
	if (!body)
		return false;
	char t[64];
	size_t k = 0;
	const char *p = body;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	const char *mk = strstr(p, "<!--");
	size_t len = mk ? (size_t)(mk - p) : strlen(p);
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\n' ||
	               p[len - 1] == '\r'))
		len--;
	if (len == 0)
		return false;
	if (len >= sizeof t)
		return true;
	for (; k < len; k++)
		t[k] = (p[k] >= 'A' && p[k] <= 'Z') ? (char)(p[k] - 'A' + 'a') : p[k];
	t[k] = '\0';
	return strcmp(t, "lgtm") != 0 && strcmp(t, "lgtm!") != 0 && strcmp(t, "looks good") != 0;
}

bool wsp_rebuild_allowed(const struct plan *p, const struct plan_task_state *st, size_t n, int task,
                         const char *login, struct decision *d)
{
	for (size_t i = 0; i < n; i++)
		if (st[i].task == task && login &&
		    (st[i].status == PLAN_IN_PROGRESS || st[i].status == PLAN_CLAIMED) &&
		    strcasecmp(st[i].assignee, login) == 0)
			return true;
	return plan_task_claimable(p, st, n, task, d);
}

/* body without its hidden HTML comments ("<!-- … -->"; an unclosed one
 * runs to the end) into sb. */
static void without_hidden(struct strbuf *sb, const char *body)
{
	const char *p = body ? body : "";
	for (const char *open = strstr(p, "<!--"); open; open = strstr(p, "<!--")) {
		sb_append(sb, p, (size_t)(open - p));
		const char *close = strstr(open + 4, "-->");
		if (!close)
			return;
		p = close + 3;
	}
	sb_puts(sb, p);
}

/* What a review body that asks for something says (phrase.h: whole words,
 * on the lower-cased text). */
static const char review_suggestion[] =
        "{consider|should|could|would|suggest|suggestion|nit|nitpick|todo|later|missing|"
        "instead|but|however|though|maybe|might|follow|needs|need|worth|prefer|perhaps|"
        "recommend}";

bool wsp_review_suggests(const char *body)
{
	if (!body)
		return false;
	struct strbuf sb;
	sb_init(&sb, 0);
	without_hidden(&sb, body);
	bool yes = false;
	if (sb.len) {
		for (size_t i = 0; i < sb.len; i++)
			sb.buf[i] = (char)tolower((unsigned char)sb.buf[i]);
		yes = memchr(sb.buf, '?', sb.len) ||
		      phrase_find(review_suggestion, sb.buf, sb.len, false);
	}
	sb_free(&sb);
	return yes;
}

bool wsp_review_followup(const char *state, const char *body, bool approved_later)
{
	if (!wsp_review_substantive(body))
		return false;
	if (state && strcmp(state, "CHANGES_REQUESTED") == 0)
		return !approved_later;
	if (state && strcmp(state, "APPROVED") == 0)
		return wsp_review_suggests(body);
	return true;
}

/* --- the finished sentinel verified (§3.14.4) ------------------------------------------------ */

/* The phrases that are agreement, as wsp_agreement compares them. */
static const char *const agreement_phrases[] = {
        "agreed",
        "agree",
        "yes",
        "yep",
        "yeah",
        "confirmed",
        "looks good",
        "lgtm",
        "+1",
        "all done",
        "done",
        "complete",
        "completed",
        "finished",
        "looks complete",
        "looks finished",
        "ship it",
        "sounds good",
        "all good",
        "nothing else",
        "no more work",
        "no additional work",
        "looks great",
        "nice work",
        "well done",
        "good job",
        "all set",
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Characters (UTF-8 code points) of s[0..len). */
static size_t code_points(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

bool wsp_agreement(const char *body)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	without_hidden(&sb, body);
	const char *p = sb_cstr(&sb);
	while (is_space(*p))
		p++;
	size_t len = strlen(p);
	while (len && is_space(p[len - 1]))
		len--;
	while (len && (p[len - 1] == '.' || p[len - 1] == '!' || p[len - 1] == '?'))
		len--;
	bool yes = false;
	if (len > 0 && code_points(p, len) <= WSP_AGREE_MAX_CHARS) {
		char t[WSP_AGREE_MAX_CHARS * 4 + 1];
		size_t k = len < sizeof t ? len : sizeof t - 1;
		for (size_t i = 0; i < k; i++)
			t[i] = (p[i] >= 'A' && p[i] <= 'Z') ? (char)(p[i] - 'A' + 'a') : p[i];
		t[k] = '\0';
		for (size_t i = 0; !yes && i < sizeof agreement_phrases / sizeof *agreement_phrases;
		     i++)
			yes = strcmp(t, agreement_phrases[i]) == 0;
	}
	sb_free(&sb);
	return yes;
}

/* Does a comment of the sentinel speak about the work: not its
 * creator's, not a known agent's bookkeeping? */
static bool speaks(const struct wsp_sentinel_comment *c, const char *creator,
                   const struct wsp_agents *agents)
{
	if (!c->login || !c->login[0] || (creator && strcasecmp(c->login, creator) == 0))
		return false;
	return !(agents && wsp_agents_has(agents, c->login) && c->body &&
	         strstr(c->body, WSP_LIFE_MARK));
}

enum wsp_sentinel_act wsp_sentinel_judge(const struct wsp_sentinel_comment *c, size_t n,
                                         bool truncated, const char *creator,
                                         const struct wsp_agents *agents, size_t *feedback,
                                         struct decision *d)
{
	if (n > WSP_SENTINEL_COMMENTS) {
		n = WSP_SENTINEL_COMMENTS;
		truncated = true;
	}
	size_t spoke = 0, fb = 0, first_fb = n;
	for (size_t i = 0; i < n; i++) {
		if (!speaks(&c[i], creator, agents))
			continue;
		spoke++;
		if (!wsp_agreement(c[i].body)) {
			if (fb++ == 0)
				first_fb = i;
		}
	}
	if (feedback)
		*feedback = fb;
	char bound[64] = "";
	if (truncated)
		snprintf(bound, sizeof bound, " (only the first %d comments were read)",
		         WSP_SENTINEL_COMMENTS);
	if (spoke == 0) {
		decision_set(d, VERDICT_INFO, "sentinel_quiet",
		             "nobody but its creator commented on the sentinel%s: activity on the "
		             "open issues decides",
		             bound);
		return WSP_SENTINEL_SCAN;
	}
	if (fb == 0) {
		decision_set(d, VERDICT_INFO, "sentinel_agreed",
		             "all %zu comments by others on the sentinel are agreement%s: the "
		             "workspace stays finished",
		             spoke, bound);
		return WSP_SENTINEL_KEEP;
	}
	decision_set(d, VERDICT_PASS, "sentinel_feedback",
	             "%zu of %zu comments by others on the sentinel name remaining work (the first "
	             "by @%s)%s: a Feedback issue, and the workspace is active again",
	             fb, spoke, c[first_fb].login, bound);
	return WSP_SENTINEL_FEEDBACK;
}

char *wsp_feedback_body(int sentinel, const struct wsp_sentinel_comment *c, size_t n,
                        const char *creator, const struct wsp_agents *agents, size_t max)
{
	if (n > WSP_SENTINEL_COMMENTS)
		n = WSP_SENTINEL_COMMENTS;
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_printf(&sb,
	          "Comments on the finished sentinel #%d say that work remains. Each is quoted "
	          "below; the workspace is active again.\n",
	          sentinel);
	size_t used = 0, left_out = 0;
	struct strbuf one;
	sb_init(&one, 0);
	for (size_t i = 0; i < n; i++) {
		if (!speaks(&c[i], creator, agents) || wsp_agreement(c[i].body))
			continue;
		if (left_out > 0) {
			left_out++;
			continue;
		}
		sb_reset(&one);
		sb_printf(&one, "\n---\n\n**@%s:**\n\n", c[i].login);
		without_hidden(&one, c[i].body);
		sb_putc(&one, '\n');
		/* room for the closing line */
		size_t room = max > sb.len + 120 ? max - sb.len - 120 : 0;
		if (one.len > room) {
			if (used == 0 && room > 0) {
				/* the first comment alone is too long: its start */
				size_t cut = utf8_cut(sb_cstr(&one), one.len, room);
				sb_append(&sb, sb_cstr(&one), cut);
				sb_puts(&sb, "\n[…]\n");
				used++;
			} else {
				left_out++;
			}
			continue;
		}
		sb_append(&sb, sb_cstr(&one), one.len);
		used++;
	}
	sb_free(&one);
	if (used == 0 && left_out == 0) {
		sb_free(&sb);
		return NULL;
	}
	if (left_out > 0)
		sb_printf(&sb,
		          "\n---\n\n%zu more comment%s left out (too long): read them on #%d.\n",
		          left_out, left_out == 1 ? "" : "s", sentinel);
	return sb_detach(&sb);
}

size_t wsp_activity_issues(const struct wsp_issue_brief *b, size_t n, int sentinel, int *out,
                           size_t cap)
{
	if (sentinel < 0 || (size_t)sentinel >= n)
		return 0;
	if (cap > WSP_SCAN_ISSUES)
		cap = WSP_SCAN_ISSUES;
	int64_t since = b[sentinel].created_ms;
	size_t k = 0;
	/* most recently updated first, whatever order b is in */
	while (k < cap) {
		int best = -1;
		for (size_t i = 0; i < n; i++) {
			const struct wsp_issue_brief *x = &b[i];
			if ((int)i == sentinel || x->pull || x->finished || x->updated_ms < since)
				continue;
			bool taken = false;
			for (size_t j = 0; j < k && !taken; j++)
				taken = out[j] == (int)i;
			if (!taken && (best < 0 || x->updated_ms > b[best].updated_ms))
				best = (int)i;
		}
		if (best < 0)
			break;
		out[k++] = best;
	}
	return k;
}

int wsp_human_activity(const struct wsp_sentinel_comment *c, size_t n, const char *me,
                       const struct wsp_agents *agents, int64_t since_ms, struct decision *d)
{
	if (n > WSP_SENTINEL_COMMENTS)
		n = WSP_SENTINEL_COMMENTS;
	for (size_t i = 0; i < n; i++) {
		if (!c[i].login || !c[i].login[0] || c[i].at_ms < since_ms)
			continue;
		if ((me && strcasecmp(c[i].login, me) == 0) ||
		    (agents && wsp_agents_has(agents, c[i].login)))
			continue;
		decision_set(d, VERDICT_PASS, "sentinel_activity",
		             "@%s, neither us nor a known agent, commented after the workspace was "
		             "declared finished",
		             c[i].login);
		return (int)i;
	}
	decision_set(d, VERDICT_INFO, "sentinel_activity",
	             "no comment by a person since the workspace was declared finished");
	return -1;
}

enum wsp_closed_act wsp_sentinel_closed(const struct wsp_closed_sentinel *s, const char *me,
                                        struct decision *d)
{
	const char *creator = s->creator ? s->creator : "";
	const char *closer = s->closer && s->closer[0] ? s->closer : NULL;
	bool mine = me && strcasecmp(creator, me) == 0;
	bool by_creator = (closer && strcasecmp(closer, creator) == 0) || (mine && s->closed_by_us);
	if (s->open_work) {
		decision_set(d, VERDICT_INFO, "sentinel_closed",
		             "sentinel #%d is closed and work is open: the workspace is active",
		             s->number);
		return WSP_CLOSED_ACTIVE;
	}
	if (by_creator) {
		decision_set(
		        d, VERDICT_INFO, "sentinel_closed",
		        "sentinel #%d was closed by its creator @%s and its work is done: a new "
		        "one may say so",
		        s->number, creator);
		return WSP_CLOSED_NEW;
	}
	if (!mine) {
		decision_set(
		        d, VERDICT_DROP, "sentinel_closed",
		        "sentinel #%d (@%s's) was closed by %s%s and nothing is open: its creator "
		        "judges it",
		        s->number, creator, closer ? "@" : "", closer ? closer : "someone");
		return WSP_CLOSED_LEAVE;
	}
	if (s->reopened) {
		decision_set(
		        d, VERDICT_DROP, "sentinel_closed",
		        "our sentinel #%d was closed by %s%s again after we reopened it once: it "
		        "stays closed",
		        s->number, closer ? "@" : "", closer ? closer : "someone");
		return WSP_CLOSED_LEAVE;
	}
	decision_set(d, VERDICT_PASS, "sentinel_reopened",
	             "our sentinel #%d was closed by %s%s and nothing is open: reopened (once), "
	             "the workspace stays finished",
	             s->number, closer ? "@" : "", closer ? closer : "someone");
	return WSP_CLOSED_REOPEN;
}
