/* The GitHub outbound port: see port.h. */
#include "modules/github/port.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define LOG_COMP "github-port"

struct gh_port {
	struct gh_client *gh;
	void (*on_auth)(void *ud, const char *msg);
	void *ud;
	struct gh_port_stats stats;
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
	free(p);
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
	const char *bad = "a GitHub target is github:<owner>:<repo>:new-issue or "
	                  "github:<owner>:<repo>:<issue|pr|reaction|delete>:<n>";
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
	if (strcmp(rest, "new-issue") == 0) {
		out->kind = GH_PORT_NEW_ISSUE;
		return 0;
	}
	static const struct {
		const char *prefix;
		enum gh_port_kind kind;
	} kinds[] = {{"issue:", GH_PORT_COMMENT},
	             {"pr:", GH_PORT_COMMENT},
	             {"reaction:", GH_PORT_REACTION},
	             {"delete:", GH_PORT_DELETE}};
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

/* --- send -------------------------------------------------------------------------------- */

static void call_free(struct port_call *pc)
{
	free(pc->key);
	free(pc);
}

static void note_error(struct gh_port *p, const struct gh_result *res)
{
	snprintf(p->stats.last_error, sizeof p->stats.last_error, "%s", res->msg);
	if (res->kind == GH_ERR_AUTH && p->on_auth)
		p->on_auth(p->ud, res->msg);
}

static void on_sent(void *ud, const struct gh_result *res)
{
	struct port_call *pc = ud;
	struct gh_port *p = pc->p;
	bool gone = pc->t.kind == GH_PORT_DELETE && res->kind == GH_ERR_NOT_FOUND;
	if (res->kind == GH_OK || gone) {
		const char *url = cJSON_GetStringValue(cJSON_GetObjectItem(res->json, "html_url"));
		char made[64];
		if (!url && pc->t.kind == GH_PORT_REACTION) {
			snprintf(made, sizeof made, "reaction:%.0f",
			         cJSON_GetNumberValue(cJSON_GetObjectItem(res->json, "id")));
			url = made;
		} else if (!url && pc->t.kind == GH_PORT_DELETE) {
			url = gone ? "deleted (it was already gone)" : "deleted";
		}
		p->stats.sent++;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "sent", "key", pc->key, "url", url);
		pc->done(pc->done_ud, 1, url, NULL);
	} else if (res->maybe_applied) {
		p->stats.unknown++;
		note_error(p, res);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "write may have been applied", "key", pc->key,
		       "error", res->msg);
		pc->done(pc->done_ud, OUTBOUND_PORT_UNKNOWN, NULL, res->msg);
	} else {
		p->stats.refused++;
		note_error(p, res);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "write refused", "key", pc->key, "error", res->msg,
		       "kind", gh_error_kind_name(res->kind));
		pc->done(pc->done_ud, 0, NULL, res->msg);
	}
	call_free(pc);
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
	if (pc->t.kind == GH_PORT_REACTION) {
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
		const cJSON *labels = cJSON_GetObjectItem(s->extra, "labels");
		const char *lab[GH_PORT_MAX_LABELS];
		size_t nl = 0;
		const cJSON *l;
		cJSON_ArrayForEach(l, labels)
		{
			if (cJSON_IsString(l) && l->valuestring[0] && nl < GH_PORT_MAX_LABELS)
				lab[nl++] = l->valuestring;
		}
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
	if (pc->t.kind == GH_PORT_REACTION || pc->t.kind == GH_PORT_DELETE) {
		/* idempotent on GitHub: doing it again is the answer */
		rec_answer(pc, 0, NULL);
		return;
	}
	uint64_t id;
	if (pc->t.kind == GH_PORT_NEW_ISSUE) {
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
