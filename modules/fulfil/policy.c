/* Fulfilment policy: see policy.h. */
#include "modules/fulfil/policy.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

static const char *const type_names[FULFIL_TYPE_COUNT] = {
        "create_issue", "create_plan", "comment_issue", "post_bluesky", "create_workspace"};

int fulfil_type_parse(const char *action)
{
	for (int i = 0; action && i < FULFIL_TYPE_COUNT; i++)
		if (strcmp(action, type_names[i]) == 0)
			return i;
	return -1;
}

const char *fulfil_type_name(enum fulfil_type t)
{
	return (unsigned)t < FULFIL_TYPE_COUNT ? type_names[t] : "?";
}

bool fulfil_type_is_github(enum fulfil_type t)
{
	return t == FULFIL_CREATE_ISSUE || t == FULFIL_CREATE_PLAN || t == FULFIL_COMMENT_ISSUE ||
	       t == FULFIL_CREATE_WORKSPACE;
}

void fulfil_workspace_name(const char *title, char out[FULFIL_WS_NAME_MAX + 1])
{
	size_t n = 0;
	bool dash = false;
	for (const char *c = title ? title : ""; *c && n < FULFIL_WS_NAME_MAX; c++) {
		unsigned char ch = (unsigned char)*c;
		if (isalnum(ch) && ch < 0x80) {
			if (dash && n > 0)
				out[n++] = '-';
			dash = false;
			if (n < FULFIL_WS_NAME_MAX)
				out[n++] = (char)tolower(ch);
		} else {
			dash = true;
		}
	}
	out[n] = '\0';
	/* cut in the middle of a word: back to the last '-' past the half */
	if (title && n == FULFIL_WS_NAME_MAX) {
		char *last = strrchr(out, '-');
		if (last && last - out >= FULFIL_WS_NAME_MAX / 2)
			*last = '\0';
	}
	while (n > 0 && out[n - 1] == '-')
		out[--n] = '\0';
	if (!out[0])
		snprintf(out, FULFIL_WS_NAME_MAX + 1, "%s", FULFIL_WS_NAME_DEFAULT);
}

enum conv_platform fulfil_type_platform(enum fulfil_type t)
{
	return fulfil_type_is_github(t) ? CONV_PLATFORM_GITHUB : CONV_PLATFORM_BLUESKY;
}

/* --- clock rules ---------------------------------------------------------------------------- */

enum fulfil_sweep fulfil_sweep_of(const struct ledger_entry *e, int64_t now_ms, bool active,
                                  int64_t in_progress_timeout_ms, struct decision *d)
{
	if (!ledger_status_open(e->status))
		return FULFIL_SWEEP_NONE;
	if (now_ms - e->created_ms > FULFIL_STALE_MS) {
		decision_set(d, VERDICT_DROP, "stale",
		             "Stale: exceeded 24h threshold (created %" PRId64 " min ago)",
		             (now_ms - e->created_ms) / 60000);
		return FULFIL_SWEEP_STALE;
	}
	if (e->status == LEDGER_IN_PROGRESS && !active &&
	    now_ms - e->updated_ms > in_progress_timeout_ms) {
		decision_set(d, VERDICT_FAIL, "in_progress_timeout",
		             "Timed out: in_progress for >%" PRId64 "m (since %" PRId64 " s ago)",
		             in_progress_timeout_ms / 60000, (now_ms - e->updated_ms) / 1000);
		return FULFIL_SWEEP_TIMEOUT;
	}
	return FULFIL_SWEEP_NONE;
}

enum ledger_status fulfil_after_failure(int attempts_after)
{
	return attempts_after >= FULFIL_MAX_ATTEMPTS ? LEDGER_ABANDONED : LEDGER_FAILED;
}

bool fulfil_is_work(const struct ledger_entry *e, bool active)
{
	switch (e->status) {
	case LEDGER_PENDING:
		return true;
	case LEDGER_FAILED:
		return e->attempts < FULFIL_MAX_ATTEMPTS;
	case LEDGER_IN_PROGRESS:
		return !active;
	default:
		return false;
	}
}

/* --- cooldown -------------------------------------------------------------------------------- */

static void lower_copy(char *dst, size_t cap, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < cap; i++)
		dst[i] = (char)tolower((unsigned char)s[i]);
	dst[i] = '\0';
}

size_t fulfil_cooldowns(const struct fulfil_fact *facts, size_t n, int64_t now_ms,
                        struct fulfil_cooldown *out, size_t cap)
{
	/* Groups (type, repo), counted in a table as large as the output plus
	 * room: the first FULFIL_COOLDOWN_MAX * 4 groups are tracked. */
	enum { GROUPS = FULFIL_COOLDOWN_MAX * 4 };
	struct fulfil_cooldown *g = xcalloc(GROUPS, sizeof *g);
	size_t ng = 0;
	for (size_t i = 0; i < n; i++) {
		const struct fulfil_fact *f = &facts[i];
		if (!f->repo || !f->repo[0] || !fulfil_type_is_github(f->type))
			continue;
		if (f->status != LEDGER_FAILED && f->status != LEDGER_ABANDONED)
			continue;
		if (now_ms - f->created_ms > FULFIL_COOLDOWN_WINDOW_MS)
			continue;
		char repo[FULFIL_REPO_MAX];
		lower_copy(repo, sizeof repo, f->repo);
		size_t j = 0;
		while (j < ng && !(g[j].type == f->type && strcmp(g[j].repo, repo) == 0))
			j++;
		if (j == ng) {
			if (ng == GROUPS)
				continue;
			snprintf(g[ng].repo, sizeof g[ng].repo, "%s", repo);
			g[ng].type = f->type;
			ng++;
		}
		g[j].failures++;
		int64_t until = f->updated_ms + FULFIL_COOLDOWN_MS;
		if (until > g[j].until_ms)
			g[j].until_ms = until;
	}
	size_t k = 0;
	for (size_t j = 0; j < ng && k < cap; j++) {
		if (g[j].failures < FULFIL_COOLDOWN_FAILURES || g[j].until_ms <= now_ms)
			continue;
		/* one entry per repo: the longest */
		size_t m = 0;
		while (m < k && strcmp(out[m].repo, g[j].repo) != 0)
			m++;
		if (m < k) {
			if (g[j].until_ms > out[m].until_ms)
				out[m] = g[j];
			continue;
		}
		out[k++] = g[j];
	}
	free(g);
	return k;
}

const struct fulfil_cooldown *fulfil_cooled(const struct fulfil_cooldown *cd, size_t n,
                                            const char *repo)
{
	if (!repo || !repo[0])
		return NULL;
	char r[FULFIL_REPO_MAX];
	lower_copy(r, sizeof r, repo);
	for (size_t i = 0; i < n; i++)
		if (strcmp(cd[i].repo, r) == 0)
			return &cd[i];
	return NULL;
}

/* --- prepare ------------------------------------------------------------------------------------
 */

static const char *str_param(const cJSON *params, const char *name)
{
	const char *s = json_string_or(params, name, NULL);
	return s && s[strspn(s, " \t\r\n")] ? s : NULL;
}

static const char *first_of(const cJSON *params, const char *const *names)
{
	for (; *names; names++) {
		const char *s = str_param(params, *names);
		if (s)
			return s;
	}
	return NULL;
}

int fulfil_repo_of(const cJSON *params, char out[FULFIL_REPO_MAX])
{
	out[0] = '\0';
	const char *owner = str_param(params, "owner");
	const char *repo = str_param(params, "repo");
	if (!repo)
		repo = str_param(params, "repoName");
	if (!repo)
		return -1;
	const char *slash = strchr(repo, '/');
	char o[FULFIL_REPO_MAX]; /* outlives the branch: owner may point here */
	if (slash) {
		/* "owner/repo": the owner from the split only when none was given */
		snprintf(o, sizeof o, "%.*s", (int)(slash - repo), repo);
		if (!owner)
			owner = o;
		repo = slash + 1;
		if (strchr(repo, '/'))
			return -1;
	}
	/* GitHub's bounds: an owner of 39 characters, a name of 100 */
	if (!owner || !owner[0] || !repo[0] || strlen(owner) > 39 || strlen(repo) > 100 ||
	    strchr(owner, '/') || strchr(owner, ':') || strchr(repo, ':'))
		return -1;
	snprintf(out, FULFIL_REPO_MAX, "%.39s/%.100s", owner, repo);
	return 0;
}

/* The issue number of a comment_issue: issue_number / issueNumber /
 * number, else the first "#<digits>" of the title or body. 0 when none. */
static int64_t issue_number_of(const cJSON *params)
{
	static const char *const names[] = {"issue_number", "issueNumber", "number", "issue"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, names[i]);
		if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e12)
			return (int64_t)v->valuedouble;
		if (cJSON_IsString(v) && v->valuestring[0] &&
		    strspn(v->valuestring, "0123456789") == strlen(v->valuestring) &&
		    strlen(v->valuestring) < 12)
			return strtoll(v->valuestring, NULL, 10);
	}
	static const char *const texts[] = {"title", "description", "body"};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		const char *s = str_param(params, texts[i]);
		for (const char *h = s ? strchr(s, '#') : NULL; h; h = strchr(h + 1, '#')) {
			size_t nd = strspn(h + 1, "0123456789");
			if (nd > 0 && nd < 12)
				return strtoll(h + 1, NULL, 10);
		}
	}
	return 0;
}

static void split_repo(const char *repo, char *owner, size_t ocap, char *name, size_t ncap)
{
	const char *slash = strchr(repo, '/');
	snprintf(owner, ocap, "%.*s", slash ? (int)(slash - repo) : 0, repo);
	snprintf(name, ncap, "%s", slash ? slash + 1 : "");
}

static const char *provenance(const char *source)
{
	if (source && strcmp(source, "space") == 0)
		return "_Created from an agent-space conversation._";
	if (source && strcmp(source, "owner") == 0)
		return "_Created at the request of this agent's owner._";
	if (source && strcmp(source, "bluesky") == 0)
		return "_Created from a Bluesky thread commitment._";
	return "_Created from a commitment._";
}

/* The plan of a create_plan commitment as a draft (§3.2): the plan_create
 * tool's arguments when they hold tasks, else the request in words (the
 * room's commitments carry a title and a description: its list items are
 * the tasks, plan_draft_from_request). The provenance line closes the
 * context. 0, or -1 with d. */
static int plan_draft_of(const char *title, const cJSON *params, const char *source,
                         struct plan_draft *out, struct decision *d)
{
	const char *goal = first_of(params, (const char *const[]){"goal", "description", "body",
	                                                          "content", "title", NULL});
	const char *context = str_param(params, "context");
	struct strbuf ctx;
	sb_init(&ctx, 0);
	if (context && *context)
		sb_printf(&ctx, "%s\n\n", context);
	sb_puts(&ctx, provenance(source));
	struct ga_err err = {{0}};
	int rc = -1;
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(params, "tasks");
	if (cJSON_GetArraySize(tasks) > 0) {
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "title", title);
		cJSON_AddStringToObject(a, "goal", goal ? goal : title);
		cJSON_AddStringToObject(a, "context", sb_cstr(&ctx));
		cJSON_AddItemToObject(a, "tasks", cJSON_Duplicate(tasks, 1));
		const cJSON *ver = cJSON_GetObjectItemCaseSensitive(params, "verification");
		if (cJSON_IsArray(ver))
			cJSON_AddItemToObject(a, "verification", cJSON_Duplicate(ver, 1));
		rc = plan_draft_from_json(a, out, &err);
		cJSON_Delete(a);
		if (rc != 0)
			log_kv(LOG_LEVEL_WARN, "fulfil",
			       "the plan's tasks do not read: drafted from "
			       "its words",
			       "error", err.msg);
	}
	/* words that are only the title: the one scoping task */
	static const char scoping[] = "- Define scope and requirements: define what needs to be "
	                              "done, based on the commitment above.";
	if (rc != 0)
		rc = plan_draft_from_request(title,
		                             goal && strcmp(goal, title) != 0 ? goal : scoping,
		                             sb_cstr(&ctx), out, &err);
	if (rc == 0 && (!goal || strcmp(goal, title) == 0)) {
		free(out->goal);
		out->goal = xstrdup(title);
	}
	sb_free(&ctx);
	if (rc != 0)
		decision_set(d, VERDICT_FAIL, "commitment_params", "the plan cannot be drafted: %s",
		             err.msg);
	return rc;
}

/* The text of a drafted plan (§3.2 exactly, modules/plan). */
static int plan_text(struct fulfil_plan *out, struct decision *d)
{
	struct ga_err err = {{0}};
	char *text = plan_draft_format(&out->draft, &err);
	if (!text) {
		decision_set(d, VERDICT_FAIL, "commitment_params", "the plan cannot be written: %s",
		             err.msg);
		return -1;
	}
	free(out->text);
	out->text = text;
	return 0;
}

int fulfil_plan_docs(struct fulfil_plan *p, bool has_agents, bool has_scenarios, struct decision *d)
{
	if (!p->has_draft)
		return 0;
	const char *slash = strchr(p->repo, '/');
	struct ga_err err = {{0}};
	int n = plan_draft_add_docs(&p->draft, slash ? slash + 1 : p->repo, has_agents,
	                            has_scenarios, &err);
	if (n < 0) {
		decision_set(d, VERDICT_FAIL, "plan_docs", "the documentation tasks: %s", err.msg);
		return -1;
	}
	if (n == 0)
		return 0;
	if (plan_text(p, d) != 0)
		return -1;
	decision_set(d, VERDICT_EDIT, "plan_docs",
	             "%d documentation task%s prepended (the repository lacks %s%s%s)", n,
	             n == 1 ? "" : "s", has_agents ? "" : PLAN_DOC_AGENTS,
	             !has_agents && !has_scenarios ? " and " : "",
	             has_scenarios ? "" : PLAN_DOC_SCENARIOS);
	return n;
}

int fulfil_prepare(const struct ledger_entry *e, struct fulfil_plan *out, struct decision *d)
{
	memset(out, 0, sizeof *out);
	int t = fulfil_type_parse(e->action);
	if (t < 0) {
		decision_set(d, VERDICT_FAIL, "commitment_params",
		             "'%.60s' is not a commitment type (create_issue, create_plan, "
		             "comment_issue, post_bluesky, create_workspace)",
		             e->action ? e->action : "");
		return -1;
	}
	out->type = (enum fulfil_type)t;
	out->platform = fulfil_type_platform(out->type);
	const cJSON *p = e->params;
	char owner[48], name[112];
	struct strbuf sb;
	sb_init(&sb, FULFIL_TEXT_MAX + 4096);

	if (out->type == FULFIL_POST_BLUESKY) {
		/* text first, then content (fix 14: the room's commitments carry
		 * content), then the description */
		const char *text = first_of(
		        p, (const char *const[]){"text", "content", "description", "title", NULL});
		if (!text) {
			decision_set(
			        d, VERDICT_FAIL, "commitment_params",
			        "post_bluesky has no text (params text, content or description)");
			sb_free(&sb);
			return -1;
		}
		snprintf(out->target, sizeof out->target, "bluesky:post");
		out->text = xstrdup(text);
		sb_free(&sb);
		return 0;
	}

	if (out->type == FULFIL_CREATE_WORKSPACE) {
		/* the organisation was checked when the commitment was read; a
		 * ledger written by hand is checked again by the workspace module */
		const char *org = json_string_or(p, "owner", "");
		utf8_copy(out->repo, sizeof out->repo, org);
		fulfil_workspace_name(first_of(p, (const char *const[]){"name", "title", NULL}),
		                      out->title);
		snprintf(out->target, sizeof out->target, "workspace:%.100s/%.*s",
		         out->repo[0] ? out->repo : "<default>", FULFIL_WS_NAME_MAX, out->title);
		const char *desc = first_of(p, (const char *const[]){"description", NULL});
		out->text = desc ? xstrdup(desc) : NULL;
		sb_free(&sb);
		return 0;
	}

	if (fulfil_repo_of(p, out->repo) != 0) {
		decision_set(
		        d, VERDICT_FAIL, "commitment_params",
		        "%s names no repository: params owner (%.40s) and repo (%.60s) are both "
		        "needed",
		        fulfil_type_name(out->type), json_string_or(p, "owner", "missing"),
		        json_string_or(p, "repo", "missing"));
		sb_free(&sb);
		return -1;
	}
	split_repo(out->repo, owner, sizeof owner, name, sizeof name);

	if (out->type == FULFIL_COMMENT_ISSUE) {
		int64_t n = issue_number_of(p);
		const char *body =
		        first_of(p, (const char *const[]){"body", "description", "content", "text",
		                                          "title", NULL});
		if (n <= 0 || !body) {
			decision_set(d, VERDICT_FAIL, "commitment_params",
			             "comment_issue in %s: missing %s", out->repo,
			             n <= 0 ? "issue_number (no number, no #N in the text)"
			                    : "body (params body or description)");
			sb_free(&sb);
			return -1;
		}
		snprintf(out->target, sizeof out->target, "github:%s:%s:issue:%" PRId64, owner,
		         name, n);
		out->text = xstrdup(body);
		sb_free(&sb);
		return 0;
	}

	const char *title =
	        first_of(p, (const char *const[]){"title", "description", "body", "content", NULL});
	if (!title) {
		decision_set(d, VERDICT_FAIL, "commitment_params",
		             "%s in %s has neither a title nor a description",
		             fulfil_type_name(out->type), out->repo);
		sb_free(&sb);
		return -1;
	}
	char t1[FULFIL_TARGET_MAX - 16];
	utf8_copy(t1, sizeof t1, title);
	/* a title is one line */
	for (char *c = t1; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	snprintf(out->target, sizeof out->target, "github:%s:%s:new-issue", owner, name);
	out->extra = cJSON_CreateObject();
	cJSON *labels = cJSON_CreateArray();
	if (out->type == FULFIL_CREATE_PLAN) {
		snprintf(out->title, sizeof out->title, "[PLAN] %s", t1);
		if (plan_draft_of(t1, p, e->source, &out->draft, d) != 0) {
			sb_free(&sb);
			cJSON_Delete(labels);
			fulfil_plan_free(out);
			return -1;
		}
		out->has_draft = true;
		if (plan_text(out, d) != 0) {
			sb_free(&sb);
			cJSON_Delete(labels);
			fulfil_plan_free(out);
			return -1;
		}
		sb_puts(&sb, out->text);
		/* the body below is the text; this copy is not kept */
		free(out->text);
		out->text = NULL;
		cJSON_AddItemToArray(labels, cJSON_CreateString(PLAN_LABEL));
		cJSON_AddItemToArray(labels, cJSON_CreateString(PLAN_LABEL_ACTIVE));
	} else {
		snprintf(out->title, sizeof out->title, "%s", t1);
		const char *body = first_of(
		        p, (const char *const[]){"body", "description", "content", "title", NULL});
		sb_printf(&sb, "%s\n\n---\n\n%s", body, provenance(e->source));
		const cJSON *given = cJSON_GetObjectItemCaseSensitive(p, "labels");
		const cJSON *l;
		cJSON_ArrayForEach(l, given)
		{
			if (cJSON_IsString(l) && l->valuestring[0] &&
			    cJSON_GetArraySize(labels) < 10)
				cJSON_AddItemToArray(labels, cJSON_CreateString(l->valuestring));
		}
		if (cJSON_GetArraySize(labels) == 0)
			cJSON_AddItemToArray(labels, cJSON_CreateString("memo"));
	}
	cJSON_AddStringToObject(out->extra, "title", out->title);
	cJSON_AddItemToObject(out->extra, "labels", labels);
	if (sb.len > FULFIL_TEXT_MAX) {
		decision_set(d, VERDICT_FAIL, "commitment_params",
		             "the body of %s in %s is %zu bytes, over %d",
		             fulfil_type_name(out->type), out->repo, sb.len, FULFIL_TEXT_MAX);
		sb_free(&sb);
		fulfil_plan_free(out);
		return -1;
	}
	out->text = sb_detach(&sb);
	sb_free(&sb);
	if (!out->text) {
		decision_set(d, VERDICT_FAIL, "commitment_params",
		             "the body of %s could not be built", fulfil_type_name(out->type));
		fulfil_plan_free(out);
		return -1;
	}
	return 0;
}

void fulfil_plan_free(struct fulfil_plan *p)
{
	if (!p)
		return;
	free(p->text);
	cJSON_Delete(p->extra);
	p->text = NULL;
	p->extra = NULL;
	if (p->has_draft)
		plan_draft_free(&p->draft);
	p->has_draft = false;
}

void fulfil_description(const struct ledger_entry *e, char *out, size_t cap)
{
	const char *s = first_of(e->params, (const char *const[]){"title", "description", "body",
	                                                          "text", "content", NULL});
	char buf[FULFIL_DESC_MAX + 1];
	char ws[FULFIL_DESC_MAX + 1];
	if (!s && fulfil_type_parse(e->action) == FULFIL_CREATE_WORKSPACE) {
		snprintf(ws, sizeof ws, "the workspace of %.60s",
		         json_string_or(e->params, "owner", "the organisation"));
		s = ws;
	}
	utf8_copy(buf, sizeof buf,
	          s ? s : fulfil_type_name((enum fulfil_type)fulfil_type_parse(e->action)));
	for (char *c = buf; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	snprintf(out, cap, "%s", buf);
}

void fulfil_announcement(const char *description, const char *url, char *out, size_t cap)
{
	if (url && url[0])
		snprintf(out, cap, "Done — %s: %s", description, url);
	else
		snprintf(out, cap, "Done — %s", description);
}

void fulfil_workspace_exists(const char *full_name, const char *url, char *out, size_t cap)
{
	snprintf(out, cap, "The workspace %s already exists: %s", full_name, url);
}

enum fulfil_outcome fulfil_outcome_of(const struct decision *final)
{
	if (!final)
		return FULFIL_OUT_DEFER;
	const char *rule = final->rule ? final->rule : "";
	switch (final->verdict) {
	case VERDICT_SENT:
		return FULFIL_OUT_SENT;
	case VERDICT_FAIL:
		if (strcmp(rule, "port_unknown") == 0)
			return FULFIL_OUT_UNKNOWN;
		return FULFIL_OUT_FAILED;
	case VERDICT_DROP:
		if (strcmp(rule, "journal") == 0)
			return strstr(final->reason, "already sent") ? FULFIL_OUT_ALREADY
			                                             : FULFIL_OUT_DEFER;
		if (strcmp(rule, "shutdown") == 0)
			return FULFIL_OUT_DEFER;
		return FULFIL_OUT_FAILED;
	default:
		/* a permission denial is BLOCK; anything but a send is a failure */
		return FULFIL_OUT_FAILED;
	}
}

/* The words of a title, lower case, letters and digits only; at most max
 * words of at most 63 bytes (the rest of a long word is dropped). */
static size_t title_words(const char *t, char (*w)[64], size_t max)
{
	size_t n = 0, k = 0;
	for (const char *p = t ? t : "";; p++) {
		unsigned char c = (unsigned char)*p;
		bool word = isalnum(c) || c >= 0x80;
		if (word && k < 63 && n < max) {
			w[n][k++] = (char)tolower(c);
			continue;
		}
		if (!word && k) {
			w[n][k] = '\0';
			n++;
			k = 0;
		}
		if (!c)
			break;
	}
	return n;
}

bool fulfil_same_title(const char *a, const char *b)
{
	enum { MAXW = 48 };
	char wa[MAXW][64], wb[MAXW][64];
	size_t na = title_words(a, wa, MAXW), nb = title_words(b, wb, MAXW);
	if (!na || !nb)
		return false;
	bool equal = na == nb;
	for (size_t i = 0; equal && i < na; i++)
		equal = strcmp(wa[i], wb[i]) == 0;
	if (equal)
		return true;
	if (na < FULFIL_SAME_MIN_WORDS || nb < FULFIL_SAME_MIN_WORDS)
		return false;
	/* |A ∩ B| / |A ∪ B| over distinct words */
	size_t inter = 0, ua = 0, ub = 0;
	for (size_t i = 0; i < na; i++) {
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = strcmp(wa[i], wa[j]) == 0;
		if (dup)
			continue;
		ua++;
		for (size_t j = 0; j < nb; j++)
			if (strcmp(wa[i], wb[j]) == 0) {
				inter++;
				break;
			}
	}
	for (size_t i = 0; i < nb; i++) {
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = strcmp(wb[i], wb[j]) == 0;
		ub += !dup;
	}
	size_t uni = ua + ub - inter;
	return uni && inter * 100 >= (size_t)FULFIL_SAME_WORDS_PCT * uni;
}
