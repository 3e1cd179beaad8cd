/* The GitHub outbound port: see port.h. */
#include "modules/github/port.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/github/gh_work.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define LOG_COMP "github-port"

struct gh_port {
	struct gh_client *gh;
	void (*on_auth)(void *ud, const char *msg);
	void *ud;
	struct gh_port_stats stats;
	/* pushes (gh_port_set_git) */
	struct git_ctx *git;
	char *cred_user, *cred_token; /* NULL: no credential */
	char *api_url;
};

/* One send or one reconcile in flight. */
struct port_call {
	struct gh_port *p;
	struct gh_port_target t;
	char *key;
	/* send */
	outbound_port_done_fn done;
	/* reconcile */
	void (*rdone)(void *done_ud, int exists, const char *artifact);
	void *done_ud;
	bool searched; /* reconcile of a new issue: the search half is over */
	/* a new PR refused because one exists for its head: looked up */
	char head[GH_REF_MAX + 1];
	char sha[GH_SHA_LEN + 1];
	char msg[GA_ERR_MSG_MAX]; /* GitHub's refusal, kept while looking up */
	/* a review: kept for the one retry without inline comments */
	char *body;
	cJSON *review; /* the review's extra (event, commit_id, comments) */
	bool folded;   /* the retry went out */
};

struct gh_port *gh_port_new(struct gh_client *gh, void (*on_auth)(void *ud, const char *msg),
                            void *ud)
{
	struct gh_port *p = xcalloc(1, sizeof *p);
	p->gh = gh;
	p->on_auth = on_auth;
	p->ud = ud;
	return p;
}

void gh_port_free(struct gh_port *p)
{
	if (!p)
		return;
	free(p->cred_user);
	free(p->cred_token);
	free(p->api_url);
	free(p);
}

int gh_port_set_git(struct gh_port *p, struct git_ctx *git, const struct git_cred *cred,
                    const char *api_url, struct ga_err *err)
{
	if (!git || !api_url || !*api_url)
		return err_set(err, "the port's git needs a git context and the API URL");
	p->git = git;
	free(p->cred_user);
	free(p->cred_token);
	free(p->api_url);
	p->cred_user = cred && cred->username ? xstrdup(cred->username) : NULL;
	p->cred_token = cred && cred->token ? xstrdup(cred->token) : NULL;
	p->api_url = xstrdup(api_url);
	return 0;
}

void gh_port_stats(const struct gh_port *p, struct gh_port_stats *out)
{
	*out = p->stats;
}

/* --- pure helpers ---------------------------------------------------------------------- */

static bool copy_seg(char *dst, size_t cap, const char *s, size_t n)
{
	if (n == 0 || n >= cap)
		return false;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return true;
}

int gh_port_parse_target(const char *target, struct gh_port_target *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	const char *bad = "a GitHub target is github:<owner>:<repo>:<new-issue|new-pr|push|"
	                  "create-repo|delete-branch> or "
	                  "github:<owner>:<repo>:<issue|pr|reaction|delete|edit|review|merge>:<n>";
	if (!target || strncmp(target, "github:", 7) != 0)
		return err_set(err, "\"%.200s\": %s", target ? target : "(null)", bad);
	const char *o = target + 7;
	const char *c1 = strchr(o, ':');
	const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c2 || !copy_seg(out->owner, sizeof out->owner, o, (size_t)(c1 - o)) ||
	    !copy_seg(out->repo, sizeof out->repo, c1 + 1, (size_t)(c2 - c1 - 1)))
		return err_set(err, "\"%.200s\": %s", target, bad);
	if (!gh_valid_owner(out->owner) || !gh_valid_repo(out->repo))
		return err_set(err, "\"%.200s\": '%s/%s' is not a valid GitHub repository", target,
		               out->owner, out->repo);
	const char *rest = c2 + 1;
	static const struct {
		const char *word;
		enum gh_port_kind kind;
	} bare[] = {{"new-issue", GH_PORT_NEW_ISSUE},
	            {"new-pr", GH_PORT_NEW_PR},
	            {"push", GH_PORT_PUSH},
	            {"create-repo", GH_PORT_CREATE_REPO},
	            {"delete-branch", GH_PORT_DELETE_BRANCH}};
	for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++)
		if (strcmp(rest, bare[i].word) == 0) {
			out->kind = bare[i].kind;
			return 0;
		}
	static const struct {
		const char *prefix;
		enum gh_port_kind kind;
	} kinds[] = {{"issue:", GH_PORT_COMMENT},     {"pr:", GH_PORT_COMMENT},
	             {"reaction:", GH_PORT_REACTION}, {"delete:", GH_PORT_DELETE},
	             {"edit:", GH_PORT_EDIT},         {"review:", GH_PORT_REVIEW},
	             {"merge:", GH_PORT_MERGE}};
	const char *num = NULL;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !num; i++) {
		size_t n = strlen(kinds[i].prefix);
		if (strncmp(rest, kinds[i].prefix, n) == 0) {
			num = rest + n;
			out->kind = kinds[i].kind;
		}
	}
	if (!num || !*num || strspn(num, "0123456789") != strlen(num) || strlen(num) > 12)
		return err_set(err, "\"%.200s\": %s", target, bad);
	out->number = strtoll(num, NULL, 10);
	if (out->number <= 0)
		return err_set(err, "\"%.200s\": the issue number must be 1 or more", target);
	return 0;
}

bool gh_port_body_has_key(const char *body, const char *key)
{
	if (!body || !key || !*key)
		return false;
	size_t kl = strlen(key);
	for (const char *s = strstr(body, "key="); s; s = strstr(s + 1, "key=")) {
		const char *v = s + 4;
		if (strncmp(v, key, kl) == 0 && strncmp(v + kl, " -->", 4) == 0)
			return true;
	}
	return false;
}

char *gh_port_body(const char *text, size_t len, const char *key)
{
	struct strbuf sb;
	sb_init(&sb, GH_MAX_BODY_BYTES + 512);
	sb_append(&sb, text, len);
	if (!gh_port_body_has_key(sb_cstr(&sb), key)) {
		sb_puts(&sb, "\n\n<!-- ga:key=");
		sb_puts(&sb, key);
		sb_puts(&sb, " -->");
	}
	char *out = sb_detach(&sb);
	sb_free(&sb);
	return out ? out : xstrdup("");
}

int gh_port_push_key(const char *branch, const char *sha, char *out, size_t cap)
{
	if (!branch || !gh_valid_branch(branch) || !sha || strlen(sha) < 7 ||
	    strspn(sha, "0123456789abcdef") != strlen(sha))
		return -1;
	int n = snprintf(out, cap, "push:%s:%s", branch, sha);
	return n < 0 || (size_t)n >= cap || n > GH_PORT_KEY_MAX ? -1 : 0;
}

/* "owner/repo" lower-cased (GitHub's names are case-insensitive) into
 * out; its length. */
static int lower_repo(const char *owner, const char *repo, char *out, size_t cap)
{
	int m = snprintf(out, cap, "%s/%s", owner, repo);
	for (int i = 0; i < m && (size_t)i < cap; i++)
		if (out[i] >= 'A' && out[i] <= 'Z')
			out[i] = (char)(out[i] - 'A' + 'a');
	return m;
}

int gh_port_pr_key(const char *owner, const char *repo, const char *branch, char *out, size_t cap)
{
	if (!owner || !repo || !gh_valid_owner(owner) || !gh_valid_repo(repo) || !branch ||
	    !gh_valid_branch(branch))
		return -1;
	char both[GH_OWNER_MAX + GH_REPO_MAX + 4];
	int m = lower_repo(owner, repo, both, sizeof both);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(both, (size_t)m, hex);
	int n = snprintf(out, cap, "pr:%.12s:%s", hex, branch);
	return n < 0 || (size_t)n >= cap || n > GH_PORT_KEY_MAX ? -1 : 0;
}

int gh_port_review_key(const char *owner, const char *repo, int64_t number, const char *sha,
                       char *out, size_t cap)
{
	if (!owner || !repo || !gh_valid_owner(owner) || !gh_valid_repo(repo) || number <= 0 ||
	    !sha || strlen(sha) != GH_SHA_LEN || strspn(sha, "0123456789abcdef") != GH_SHA_LEN)
		return -1;
	char both[GH_OWNER_MAX + GH_REPO_MAX + 4];
	int m = lower_repo(owner, repo, both, sizeof both);
	int n = snprintf(out, cap, "review:%s#%" PRId64 "@%s", both, number, sha);
	if (n > GH_PORT_KEY_MAX) {
		/* long names: the repository by its hash, as in gh_port_pr_key */
		char hex[SHA256_HEX_LEN + 1];
		sha256_hex(both, (size_t)m, hex);
		n = snprintf(out, cap, "review:%.12s#%" PRId64 "@%s", hex, number, sha);
	}
	return n < 0 || (size_t)n >= cap || n > GH_PORT_KEY_MAX ? -1 : 0;
}

int gh_port_key_parse(const char *key, enum gh_port_kind kind, char *branch, size_t bcap, char *sha,
                      size_t scap)
{
	if (!key)
		return -1;
	const char *b, *end;
	if (kind == GH_PORT_PUSH) {
		if (strncmp(key, "push:", 5) != 0)
			return -1;
		b = key + 5;
		end = strrchr(b, ':');
		if (!end || !sha || strlen(end + 1) >= scap)
			return -1;
		snprintf(sha, scap, "%s", end + 1);
	} else if (kind == GH_PORT_NEW_PR) {
		if (strncmp(key, "pr:", 3) != 0 || strlen(key) < 17 || key[15] != ':')
			return -1;
		b = key + 16;
		end = b + strlen(b);
	} else {
		return -1;
	}
	size_t n = (size_t)(end - b);
	if (n == 0 || n >= bcap)
		return -1;
	memcpy(branch, b, n);
	branch[n] = '\0';
	return gh_valid_branch(branch) ? 0 : -1;
}

int gh_port_clone_url(const char *api_url, const char *owner, const char *repo, char *out,
                      size_t cap)
{
	const char *base = api_url && *api_url ? api_url : "https://api.github.com";
	size_t bl = strlen(base);
	while (bl > 0 && base[bl - 1] == '/')
		bl--;
	int n;
	if (bl == strlen("https://api.github.com") &&
	    strncmp(base, "https://api.github.com", bl) == 0)
		n = snprintf(out, cap, "https://github.com/%s/%s.git", owner, repo);
	else if (bl > 7 && strncmp(base + bl - 7, "/api/v3", 7) == 0)
		n = snprintf(out, cap, "%.*s/%s/%s.git", (int)(bl - 7), base, owner, repo);
	else
		n = snprintf(out, cap, "%.*s/%s/%s.git", (int)bl, base, owner, repo);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* --- send -------------------------------------------------------------------------------- */

static void call_free(struct port_call *pc)
{
	free(pc->key);
	free(pc->body);
	cJSON_Delete(pc->review);
	free(pc);
}

static const char *xstr(const cJSON *o, const char *name)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(o, name));
}

/* The PR's address when GitHub's answer carries none (a merge answers
 * {merged, sha, message}; a label edit answers the labels). */
static void pull_url(const struct port_call *pc, char *out, size_t cap)
{
	snprintf(out, cap, "https://github.com/%s/%s/pull/%" PRId64, pc->t.owner, pc->t.repo,
	         pc->t.number);
}

static void note_error(struct gh_port *p, const struct gh_result *res)
{
	snprintf(p->stats.last_error, sizeof p->stats.last_error, "%s", res->msg);
	if (res->kind == GH_ERR_AUTH && p->on_auth)
		p->on_auth(p->ud, res->msg);
}

/* The outcome of a send, told to outbound once. */
static void sent_ok(struct port_call *pc, const char *artifact)
{
	pc->p->stats.sent++;
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "sent", "key", pc->key, "url", artifact);
	pc->done(pc->done_ud, 1, artifact, NULL);
	call_free(pc);
}

static void sent_fail(struct port_call *pc, bool unknown, const char *msg, const char *kind)
{
	if (unknown) {
		pc->p->stats.unknown++;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "write may have been applied", "key", pc->key,
		       "error", msg);
	} else {
		pc->p->stats.refused++;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "write refused", "key", pc->key, "error", msg,
		       "kind", kind);
	}
	pc->done(pc->done_ud, unknown ? OUTBOUND_PORT_UNKNOWN : 0, NULL, msg);
	call_free(pc);
}

static void on_sent(void *ud, const struct gh_result *res);

/* After a merge's PUT: the PR read back. Its html_url is the artifact of
 * a merge GitHub accepted; after a 405 it tells whether the PR is merged
 * all the same (an earlier attempt of this call that GitHub applied: the
 * PUT is retried after a transient failure) or GitHub's refusal stands. */
static void on_merge_pr(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	const cJSON *merged = res->kind == GH_OK ? cJSON_GetObjectItem(res->json, "merged") : NULL;
	const char *url = res->kind == GH_OK ? xstr(res->json, "html_url") : NULL;
	char made[GH_URL_MAX];
	if (!url) {
		pull_url(pc, made, sizeof made);
		url = made;
	}
	if (!pc->msg[0] || cJSON_IsTrue(merged)) {
		sent_ok(pc, url);
		return;
	}
	sent_fail(pc, false, pc->msg, "refused");
}

static void merge_check(struct port_call *pc, const struct gh_result *res)
{
	struct ga_err err = {{0}};
	if (res->kind != GH_OK) {
		note_error(pc->p, res);
		snprintf(pc->msg, sizeof pc->msg, "%s", res->msg);
	}
	if (gh_pull_get(pc->p->gh, pc->t.owner, pc->t.repo, pc->t.number, on_merge_pr, pc, &err) !=
	    0)
		return;
	if (res->kind == GH_OK) {
		char made[GH_URL_MAX];
		pull_url(pc, made, sizeof made);
		sent_ok(pc, made);
	} else {
		sent_fail(pc, false, pc->msg, "refused");
	}
}

static uint64_t review_call(struct port_call *pc, bool inline_comments, struct ga_err *err)
{
	const cJSON *x = pc->review;
	struct gh_review_comment c[GH_COMMENTS_MAX];
	size_t n = 0;
	const cJSON *it;
	const cJSON *list = inline_comments ? cJSON_GetObjectItem(x, "comments") : NULL;
	cJSON_ArrayForEach(it, list)
	{
		const cJSON *line = cJSON_GetObjectItem(it, "line");
		if (n == GH_COMMENTS_MAX) {
			err_set(err, "a review carries at most %d inline comments",
			        GH_COMMENTS_MAX);
			return 0;
		}
		if (!xstr(it, "path") || !xstr(it, "body") || !cJSON_IsNumber(line) ||
		    line->valuedouble < 1) {
			err_set(err,
			        "inline comment %zu of the review of %s/%s#%" PRId64
			        " needs a path, a line (1 or more) and a body",
			        n + 1, pc->t.owner, pc->t.repo, pc->t.number);
			return 0;
		}
		c[n++] = (struct gh_review_comment){.path = xstr(it, "path"),
		                                    .line = (int64_t)line->valuedouble,
		                                    .side = xstr(it, "side"),
		                                    .body = xstr(it, "body")};
	}
	const char *event = xstr(x, "event");
	if (!event || (strcmp(event, "APPROVE") && strcmp(event, "REQUEST_CHANGES") &&
	               strcmp(event, "COMMENT"))) {
		err_set(err, "a review needs extra.event APPROVE, REQUEST_CHANGES or COMMENT");
		return 0;
	}
	struct gh_review_new in = {.event = event,
	                           .body = pc->body,
	                           .commit_id = xstr(x, "commit_id"),
	                           .comments = n ? c : NULL,
	                           .n_comments = n};
	return gh_review_create(pc->p->gh, pc->t.owner, pc->t.repo, pc->t.number, &in, on_sent, pc,
	                        err);
}

/* GitHub's 422 for an inline comment it cannot place on the diff (a line
 * outside the hunks, a path not in the PR). */
static bool off_the_diff(const char *msg)
{
	return strstr(msg, "part of the diff") || strstr(msg, "could not be resolved") ||
	       strstr(msg, "diff hunk") || strstr(msg, "thread path") || strstr(msg, "thread line");
}

/* body with the inline comments as text, before the key marker. */
static char *fold_comments(const char *body, const char *key, const cJSON *comments)
{
	const char *mark = NULL;
	for (const char *s = strstr(body, "<!-- ga:"); s; s = strstr(s + 1, "<!-- ga:"))
		if (gh_port_body_has_key(s, key))
			mark = s;
	size_t head = mark ? (size_t)(mark - body) : strlen(body);
	while (head > 0 && (body[head - 1] == '\n' || body[head - 1] == ' '))
		head--;
	struct strbuf sb;
	sb_init(&sb, GH_MAX_BODY_BYTES + 512);
	sb_append(&sb, body, head);
	sb_puts(&sb, "\n\nInline comments (GitHub could not place them on the diff):\n");
	const cJSON *it;
	cJSON_ArrayForEach(it, comments)
	{
		const cJSON *line = cJSON_GetObjectItem(it, "line");
		sb_printf(&sb, "- `%s` line %.0f: %s\n", xstr(it, "path") ? xstr(it, "path") : "?",
		          cJSON_IsNumber(line) ? line->valuedouble : 0.0,
		          xstr(it, "body") ? xstr(it, "body") : "");
	}
	if (mark) {
		sb_puts(&sb, "\n");
		sb_puts(&sb, mark);
	}
	char *out = gh_port_body(sb_cstr(&sb), sb.len, key);
	sb_free(&sb);
	return out;
}

/* A review refused for an inline comment off the diff goes out once more
 * without inline comments, their text in the body: true when that retry
 * left (on_sent is then called again with its answer). */
static bool review_refold(struct port_call *pc, const struct gh_result *res)
{
	const cJSON *comments = cJSON_GetObjectItem(pc->review, "comments");
	if (pc->folded || res->kind != GH_ERR_INVALID || res->maybe_applied ||
	    cJSON_GetArraySize(comments) == 0 || !off_the_diff(res->msg))
		return false;
	log_kv(LOG_LEVEL_WARN, LOG_COMP, "inline comments off the diff: folded into the body",
	       "key", pc->key, "error", res->msg);
	pc->folded = true;
	char *body = fold_comments(pc->body, pc->key, comments);
	free(pc->body);
	pc->body = body;
	struct ga_err err = {{0}};
	return review_call(pc, false, &err) != 0;
}

/* A new PR refused because one is open for its head: that one is ours to
 * report (the branch is this task's). */
static void on_pr_existing(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	const cJSON *first = res->kind == GH_OK ? cJSON_GetArrayItem(res->json, 0) : NULL;
	const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(first, "html_url"));
	if (url) {
		sent_ok(pc, url);
		return;
	}
	note_error(pc->p, res);
	sent_fail(pc, false, pc->msg, "invalid");
}

static void on_sent(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	struct gh_port *p = pc->p;
	bool gone = (pc->t.kind == GH_PORT_DELETE && res->kind == GH_ERR_NOT_FOUND) ||
	            (pc->t.kind == GH_PORT_DELETE_BRANCH && gh_result_gone(res));
	if (pc->t.kind == GH_PORT_MERGE && !res->maybe_applied &&
	    (res->kind == GH_OK || res->status == 405)) {
		merge_check(pc, res);
		return;
	}
	if (pc->t.kind == GH_PORT_REVIEW && review_refold(pc, res))
		return;
	if (res->kind == GH_OK || gone) {
		const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(res->json, "html_url"));
		char made[GH_URL_MAX];
		if (!url && pc->t.kind == GH_PORT_REACTION) {
			snprintf(made, sizeof made, "reaction:%.0f",
			         cJSON_GetNumberValue(cJSON_GetObjectItem(res->json, "id")));
			url = made;
		} else if (!url && pc->t.kind == GH_PORT_DELETE) {
			url = gone ? "deleted (it was already gone)" : "deleted";
		} else if (pc->t.kind == GH_PORT_DELETE_BRANCH) {
			snprintf(made, sizeof made, "branch %s deleted%s", pc->head,
			         res->kind == GH_OK ? "" : " (it was already gone)");
			url = made;
		} else if (!url && pc->t.kind == GH_PORT_EDIT) {
			/* labels answer with the label list, not the issue */
			snprintf(made, sizeof made, "https://github.com/%s/%s/issues/%" PRId64,
			         pc->t.owner, pc->t.repo, pc->t.number);
			url = made;
		}
		sent_ok(pc, url);
		return;
	}
	note_error(p, res);
	if (pc->t.kind == GH_PORT_NEW_PR && res->kind == GH_ERR_INVALID && !res->maybe_applied &&
	    strstr(res->msg, "already exists")) {
		char head[sizeof pc->t.owner + sizeof pc->head + 2];
		snprintf(head, sizeof head, "%s:%s", pc->t.owner, pc->head);
		struct gh_pull_query q = {.state = "open", .head = head, .max_items = 1};
		struct ga_err err = {{0}};
		snprintf(pc->msg, sizeof pc->msg, "%s", res->msg);
		if (gh_pulls_list(p->gh, pc->t.owner, pc->t.repo, &q, on_pr_existing, pc, &err) !=
		    0)
			return;
	}
	sent_fail(pc, res->maybe_applied, res->msg, gh_error_kind_name(res->kind));
}

/* Strings of extra[name] (an array), at most cap. */
static size_t extra_strings(const cJSON *extra, const char *name, const char **out, size_t cap)
{
	size_t n = 0;
	const cJSON *l;
	cJSON_ArrayForEach(l, cJSON_GetObjectItem(extra, name))
	{
		if (cJSON_IsString(l) && l->valuestring[0] && n < cap)
			out[n++] = l->valuestring;
	}
	return n;
}

static uint64_t send_edit(struct port_call *pc, const cJSON *extra, struct ga_err *err)
{
	struct gh_port *p = pc->p;
	const char *op = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "op"));
	const char *v[GH_LABELS_MAX];
	if (!op) {
		err_set(err, "an edit of %s/%s#%" PRId64 " needs extra.op", pc->t.owner, pc->t.repo,
		        pc->t.number);
		return 0;
	}
	if (strcmp(op, "issue") == 0) {
		struct gh_issue_update u = {
		        .title = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "title")),
		        .body = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "body")),
		        .state = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "state")),
		        .state_reason =
		                cJSON_GetStringValue(cJSON_GetObjectItem(extra, "state_reason"))};
		if (!u.title && !u.body && !u.state) {
			err_set(err, "an issue edit needs a title, a body or a state");
			return 0;
		}
		return gh_issue_update(p->gh, pc->t.owner, pc->t.repo, pc->t.number, &u, on_sent,
		                       pc, err);
	}
	if (strcmp(op, "labels") == 0) {
		size_t n = extra_strings(extra, "labels", v, GH_LABELS_MAX);
		return gh_labels_set(p->gh, pc->t.owner, pc->t.repo, pc->t.number, v, n, on_sent,
		                     pc, err);
	}
	size_t n = extra_strings(extra, "logins", v, GH_PORT_MAX_LOGINS);
	if (strcmp(op, "assign") == 0)
		return gh_assignees_add(p->gh, pc->t.owner, pc->t.repo, pc->t.number, v, n, on_sent,
		                        pc, err);
	if (strcmp(op, "unassign") == 0)
		return gh_assignees_remove(p->gh, pc->t.owner, pc->t.repo, pc->t.number, v, n,
		                           on_sent, pc, err);
	if (strcmp(op, "reviewers") == 0)
		return gh_reviewers_request(p->gh, pc->t.owner, pc->t.repo, pc->t.number, v, n,
		                            on_sent, pc, err);
	err_set(err, "'%.40s' is not an edit (issue, labels, assign, unassign, reviewers)", op);
	return 0;
}

static uint64_t send_pr(struct port_call *pc, const cJSON *extra, const char *body,
                        struct ga_err *err)
{
	struct gh_pull_new in = {.title = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "title")),
	                         .body = body,
	                         .head = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "head")),
	                         .base = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "base")),
	                         .draft = cJSON_IsTrue(cJSON_GetObjectItem(extra, "draft"))};
	if (!in.title || !in.head || !in.base || strlen(in.head) > GH_REF_MAX) {
		err_set(err, "a pull request in %s/%s needs extra.title, extra.head and extra.base",
		        pc->t.owner, pc->t.repo);
		return 0;
	}
	snprintf(pc->head, sizeof pc->head, "%s", in.head);
	return gh_pull_create(pc->p->gh, pc->t.owner, pc->t.repo, &in, on_sent, pc, err);
}

static uint64_t send_repo(struct port_call *pc, const cJSON *extra, struct ga_err *err)
{
	const char *tpl = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "template"));
	const char *desc = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "description"));
	bool priv = cJSON_IsTrue(cJSON_GetObjectItem(extra, "private"));
	if (!tpl) {
		struct gh_repo_new in = {
		        .name = pc->t.repo, .description = desc, .private_repo = priv};
		return gh_org_repo_create(pc->p->gh, pc->t.owner, &in, on_sent, pc, err);
	}
	const char *slash = strchr(tpl, '/');
	char towner[GH_OWNER_MAX + 1];
	if (!slash || (size_t)(slash - tpl) > GH_OWNER_MAX) {
		err_set(err, "extra.template '%.100s' is not owner/name", tpl);
		return 0;
	}
	snprintf(towner, sizeof towner, "%.*s", (int)(slash - tpl), tpl);
	struct gh_generate in = {.owner = pc->t.owner,
	                         .name = pc->t.repo,
	                         .description = desc,
	                         .private_repo = priv};
	return gh_repo_generate(pc->p->gh, towner, slash + 1, &in, on_sent, pc, err);
}

static void on_pushed(void *ud, const struct git_result *r)
{
	struct port_call *pc = ud;
	if (r->ok) {
		char made[GH_REF_MAX + GH_SHA_LEN + 2];
		snprintf(made, sizeof made, "%s@%s", pc->head, pc->sha);
		sent_ok(pc, made);
		return;
	}
	snprintf(pc->p->stats.last_error, sizeof pc->p->stats.last_error, "%s", r->msg);
	/* A push cut by the timeout may have reached the remote; one git
	 * refused (non-fast-forward, 403, a missing ref) made nothing. */
	sent_fail(pc, r->timed_out, r->msg, "git");
}

static int send_push(struct port_call *pc, const cJSON *extra, struct ga_err *err)
{
	struct gh_port *p = pc->p;
	const char *branch = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "branch"));
	const char *sha = cJSON_GetStringValue(cJSON_GetObjectItem(extra, "sha"));
	if (!p->git)
		return err_set(err, "this agent does not push (no git configured for the port)");
	if (!branch || !gh_valid_branch(branch) || !sha || strlen(sha) > GH_SHA_LEN)
		return err_set(err, "a push to %s/%s needs extra.branch and extra.sha", pc->t.owner,
		               pc->t.repo);
	snprintf(pc->head, sizeof pc->head, "%s", branch);
	snprintf(pc->sha, sizeof pc->sha, "%s", sha);
	char *mirror = git_mirror_path(p->git, pc->t.owner, pc->t.repo);
	char url[GH_URL_MAX];
	if (!mirror || gh_port_clone_url(p->api_url, pc->t.owner, pc->t.repo, url, sizeof url)) {
		free(mirror);
		return err_set(err, "no mirror for %s/%s", pc->t.owner, pc->t.repo);
	}
	struct git_cred cred = {p->cred_user ? p->cred_user : "x-access-token", p->cred_token};
	int rc = git_push(p->git, mirror, url, branch, p->cred_token ? &cred : NULL, on_pushed, pc,
	                  err);
	free(mirror);
	return rc;
}

static uint64_t send_merge(struct port_call *pc, const cJSON *extra, struct ga_err *err)
{
	const char *method = xstr(extra, "method");
	struct gh_merge in = {.method = method ? method : "squash",
	                      .commit_title = xstr(extra, "title"),
	                      .commit_message = xstr(extra, "message"),
	                      .sha = xstr(extra, "sha")};
	return gh_pull_merge(pc->p->gh, pc->t.owner, pc->t.repo, pc->t.number, &in, on_sent, pc,
	                     err);
}

static uint64_t send_branch_delete(struct port_call *pc, const cJSON *extra, struct ga_err *err)
{
	const char *branch = xstr(extra, "branch");
	if (!branch || !gh_valid_branch(branch)) {
		err_set(err, "deleting a branch of %s/%s needs extra.branch (a valid branch name)",
		        pc->t.owner, pc->t.repo);
		return 0;
	}
	snprintf(pc->head, sizeof pc->head, "%s", branch);
	return gh_ref_delete(pc->p->gh, pc->t.owner, pc->t.repo, branch, on_sent, pc, err);
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct gh_port *p = ud;
	struct ga_err err = {{0}};
	struct port_call *pc = xcalloc(1, sizeof *pc);
	pc->p = p;
	pc->done = done;
	pc->done_ud = done_ud;
	pc->key = xstrdup(s->idem_key ? s->idem_key : "");
	if (gh_port_parse_target(s->target, &pc->t, &err) != 0) {
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "cannot send", "error", err.msg);
		snprintf(p->stats.last_error, sizeof p->stats.last_error, "%s", err.msg);
		call_free(pc);
		return -1;
	}
	char *body = gh_port_body(s->text, s->text_len, pc->key);
	uint64_t id = 0;
	int64_t comment_id =
	        (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(s->extra, "comment_id"));
	if (pc->t.kind == GH_PORT_PUSH) {
		if (send_push(pc, s->extra, &err) == 0)
			id = 1;
	} else if (pc->t.kind == GH_PORT_EDIT) {
		id = send_edit(pc, s->extra, &err);
	} else if (pc->t.kind == GH_PORT_NEW_PR) {
		id = send_pr(pc, s->extra, body, &err);
	} else if (pc->t.kind == GH_PORT_CREATE_REPO) {
		id = send_repo(pc, s->extra, &err);
	} else if (pc->t.kind == GH_PORT_REVIEW) {
		pc->body = xstrdup(body);
		pc->review = cJSON_Duplicate(s->extra, true);
		id = review_call(pc, true, &err);
	} else if (pc->t.kind == GH_PORT_MERGE) {
		id = send_merge(pc, s->extra, &err);
	} else if (pc->t.kind == GH_PORT_DELETE_BRANCH) {
		id = send_branch_delete(pc, s->extra, &err);
	} else if (pc->t.kind == GH_PORT_REACTION) {
		const char *content =
		        cJSON_GetStringValue(cJSON_GetObjectItem(s->extra, "content"));
		id = gh_reaction_create(p->gh, pc->t.owner, pc->t.repo, pc->t.number,
		                        comment_id > 0 ? comment_id : 0,
		                        content && *content ? content : "heart", on_sent, pc, &err);
	} else if (pc->t.kind == GH_PORT_DELETE) {
		if (comment_id <= 0) {
			err_set(&err, "deleting a comment in %s/%s needs extra.comment_id",
			        pc->t.owner, pc->t.repo);
		} else {
			char path[sizeof pc->t.owner + sizeof pc->t.repo + 80];
			char what[sizeof pc->t.owner + sizeof pc->t.repo + 80];
			snprintf(path, sizeof path, "/repos/%s/%s/issues/comments/%" PRId64,
			         pc->t.owner, pc->t.repo, comment_id);
			snprintf(what, sizeof what, "delete our comment %" PRId64 " in %s/%s",
			         comment_id, pc->t.owner, pc->t.repo);
			struct gh_req req = {
			        .method = "DELETE", .path = path, .what = what, .idempotent = true};
			id = gh_call(p->gh, &req, on_sent, pc, &err);
		}
	} else if (pc->t.kind == GH_PORT_NEW_ISSUE) {
		const char *title = cJSON_GetStringValue(cJSON_GetObjectItem(s->extra, "title"));
		const char *lab[GH_PORT_MAX_LABELS];
		size_t nl = extra_strings(s->extra, "labels", lab, GH_PORT_MAX_LABELS);
		if (!title || !title[0] || strlen(title) > GH_PORT_TITLE_MAX) {
			err_set(&err, "a new issue in %s/%s needs extra.title (1..%d bytes)",
			        pc->t.owner, pc->t.repo, GH_PORT_TITLE_MAX);
		} else {
			struct gh_issue_new in = {.title = title,
			                          .body = body,
			                          .labels = nl ? lab : NULL,
			                          .n_labels = nl};
			id = gh_issue_create(p->gh, pc->t.owner, pc->t.repo, &in, on_sent, pc,
			                     &err);
		}
	} else {
		id = gh_issue_comment(p->gh, pc->t.owner, pc->t.repo, pc->t.number, body, on_sent,
		                      pc, &err);
	}
	free(body);
	if (id == 0) {
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "cannot send", "target", s->target, "error",
		       err.msg);
		snprintf(p->stats.last_error, sizeof p->stats.last_error, "%s", err.msg);
		call_free(pc);
		return -1;
	}
	p->stats.sends++;
	return 0;
}

/* --- reconcile ------------------------------------------------------------------------- */

/* The html_url of the first item of an array whose body carries the key. */
static const char *find_key(const cJSON *items, const char *key)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, items)
	{
		const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(it, "body"));
		if (gh_port_body_has_key(body, key)) {
			const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(it, "html_url"));
			return url ? url : "";
		}
	}
	return NULL;
}

static void rec_answer(struct port_call *pc, int exists, const char *url)
{
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "reconciled", "key", pc->key, "exists",
	       exists == 1   ? "yes"
	       : exists == 0 ? "no"
	                     : "unknown",
	       "url", url);
	pc->rdone(pc->done_ud, exists, url);
	call_free(pc);
}

static void on_rec_list(void *ud, const struct gh_result *res);

static void on_rec_search(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	if (res->kind != GH_OK) {
		note_error(pc->p, res);
		rec_answer(pc, -1, NULL);
		return;
	}
	const char *url = find_key(res->json, pc->key);
	if (url) {
		rec_answer(pc, 1, url);
		return;
	}
	/* The search index may not have the issue yet: read the newest ones. */
	pc->searched = true;
	struct gh_issue_query q = {.state = "all",
	                           .sort = "created",
	                           .direction = "desc",
	                           .max_items = GH_PORT_RECENT_ISSUES};
	struct ga_err err = {{0}};
	if (gh_issues_list(pc->p->gh, pc->t.owner, pc->t.repo, &q, on_rec_list, pc, &err) == 0) {
		snprintf(pc->p->stats.last_error, sizeof pc->p->stats.last_error, "%s", err.msg);
		rec_answer(pc, -1, NULL);
	}
}

static void on_rec_list(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	if (res->kind == GH_OK) {
		const char *url = find_key(res->json, pc->key);
		rec_answer(pc, url ? 1 : 0, url);
		return;
	}
	/* The comments of an issue that is not there (or has issues turned
	 * off) cannot hold ours. */
	if (pc->t.number > 0 && (res->kind == GH_ERR_NOT_FOUND || res->kind == GH_ERR_GONE)) {
		rec_answer(pc, 0, NULL);
		return;
	}
	note_error(pc->p, res);
	rec_answer(pc, -1, NULL);
}

/* push: the remote branch at the key's commit is the artifact. */
static void on_rec_ref(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	if (res->kind == GH_ERR_NOT_FOUND) {
		rec_answer(pc, 0, NULL);
		return;
	}
	struct gh_branch_info b;
	struct ga_err err = {{0}};
	if (res->kind != GH_OK || gh_branch_parse(res->json, &b, &err) != 0) {
		note_error(pc->p, res);
		rec_answer(pc, -1, NULL);
		return;
	}
	if (strcmp(b.sha, pc->sha) != 0) {
		/* another commit: ours did not land (a push never rewrites) */
		rec_answer(pc, 0, NULL);
		return;
	}
	char made[GH_REF_MAX + GH_SHA_LEN + 2];
	snprintf(made, sizeof made, "%s@%s", pc->head, pc->sha);
	rec_answer(pc, 1, made);
}

/* new PR: any PR of that head (one branch per task attempt). */
static void on_rec_pr(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	if (res->kind != GH_OK) {
		note_error(pc->p, res);
		rec_answer(pc, -1, NULL);
		return;
	}
	const cJSON *first = cJSON_GetArrayItem(res->json, 0);
	const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(first, "html_url"));
	rec_answer(pc, url ? 1 : 0, url);
}

static void on_rec_repo(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	if (res->kind == GH_OK) {
		const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(res->json, "html_url"));
		rec_answer(pc, 1, url ? url : "");
	} else if (res->kind == GH_ERR_NOT_FOUND) {
		rec_answer(pc, 0, NULL);
	} else {
		note_error(pc->p, res);
		rec_answer(pc, -1, NULL);
	}
}

/* merge: the PR merged is the artifact (whoever's PUT did it). */
static void on_rec_merge(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	if (res->kind == GH_ERR_NOT_FOUND) {
		rec_answer(pc, 0, NULL);
		return;
	}
	if (res->kind != GH_OK) {
		note_error(pc->p, res);
		rec_answer(pc, -1, NULL);
		return;
	}
	bool merged = cJSON_IsTrue(cJSON_GetObjectItem(res->json, "merged"));
	rec_answer(pc, merged ? 1 : 0, merged ? xstr(res->json, "html_url") : NULL);
}

static void port_reconcile(void *ud, const char *idem_key, const char *target,
                           void (*done)(void *done_ud, int exists, const char *artifact),
                           void *done_ud)
{
	struct gh_port *p = ud;
	struct port_call *pc = xcalloc(1, sizeof *pc);
	pc->p = p;
	pc->rdone = done;
	pc->done_ud = done_ud;
	pc->key = xstrdup(idem_key);
	p->stats.reconciles++;
	struct ga_err err = {{0}};
	if (gh_port_parse_target(target, &pc->t, &err) != 0) {
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "cannot reconcile", "key", idem_key, "error",
		       err.msg);
		rec_answer(pc, -1, NULL);
		return;
	}
	if (pc->t.kind == GH_PORT_REACTION || pc->t.kind == GH_PORT_DELETE ||
	    pc->t.kind == GH_PORT_EDIT || pc->t.kind == GH_PORT_DELETE_BRANCH) {
		/* idempotent on GitHub: doing it again is the answer */
		rec_answer(pc, 0, NULL);
		return;
	}
	uint64_t id;
	if (pc->t.kind == GH_PORT_NEW_PR || pc->t.kind == GH_PORT_PUSH) {
		if (gh_port_key_parse(idem_key, pc->t.kind, pc->head, sizeof pc->head, pc->sha,
		                      sizeof pc->sha) != 0) {
			log_kv(LOG_LEVEL_ERROR, LOG_COMP, "cannot reconcile", "key", idem_key,
			       "error", "the key names no branch");
			rec_answer(pc, -1, NULL);
			return;
		}
		if (pc->t.kind == GH_PORT_PUSH) {
			id = gh_ref_get(p->gh, pc->t.owner, pc->t.repo, pc->head, on_rec_ref, pc,
			                &err);
		} else {
			char head[sizeof pc->t.owner + sizeof pc->head + 2];
			snprintf(head, sizeof head, "%s:%s", pc->t.owner, pc->head);
			struct gh_pull_query q = {.state = "all", .head = head, .max_items = 1};
			id = gh_pulls_list(p->gh, pc->t.owner, pc->t.repo, &q, on_rec_pr, pc, &err);
		}
	} else if (pc->t.kind == GH_PORT_CREATE_REPO) {
		id = gh_repo_get(p->gh, pc->t.owner, pc->t.repo, on_rec_repo, pc, &err);
	} else if (pc->t.kind == GH_PORT_REVIEW) {
		id = gh_reviews_list(p->gh, pc->t.owner, pc->t.repo, pc->t.number,
		                     GH_PORT_MAX_COMMENTS, on_rec_list, pc, &err);
	} else if (pc->t.kind == GH_PORT_MERGE) {
		id = gh_pull_get(p->gh, pc->t.owner, pc->t.repo, pc->t.number, on_rec_merge, pc,
		                 &err);
	} else if (pc->t.kind == GH_PORT_NEW_ISSUE) {
		char q[256];
		int n = snprintf(q, sizeof q, "\"%s\" repo:%s/%s in:body", idem_key, pc->t.owner,
		                 pc->t.repo);
		if (n < 0 || (size_t)n >= sizeof q) {
			/* Too long for a search: the newest issues alone decide. */
			pc->searched = true;
			struct gh_issue_query qq = {.state = "all",
			                            .sort = "created",
			                            .direction = "desc",
			                            .max_items = GH_PORT_RECENT_ISSUES};
			id = gh_issues_list(p->gh, pc->t.owner, pc->t.repo, &qq, on_rec_list, pc,
			                    &err);
		} else {
			id = gh_search_issues(p->gh, q, 100, on_rec_search, pc, &err);
		}
	} else {
		id = gh_comments_list(p->gh, pc->t.owner, pc->t.repo, pc->t.number,
		                      GH_PORT_MAX_COMMENTS, on_rec_list, pc, &err);
	}
	if (id == 0) {
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "cannot reconcile", "key", idem_key, "error",
		       err.msg);
		rec_answer(pc, -1, NULL);
	}
}

void gh_port_describe(struct gh_port *p, struct outbound_port *out)
{
	memset(out, 0, sizeof *out);
	out->platform = CONV_PLATFORM_GITHUB;
	out->send = port_send;
	out->reconcile = port_reconcile;
	out->min_interval_ms = 0;
	out->marker_in_text = true;
	out->ud = p;
}
