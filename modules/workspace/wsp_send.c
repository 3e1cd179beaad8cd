/* The workspace engine's shared parts: the anchor, plans read and folded,
 * the decision log, one send that ends once. See wsp_int.h. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/decisions/log.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "modules/workspace/wsp_int.h"

/* --- the anchor ------------------------------------------------------------------------- */

struct wsp_anchor *wsp_hold(struct wsp *w)
{
	w->anchor->refs++;
	return w->anchor;
}

struct wsp *wsp_drop(struct wsp_anchor *a)
{
	struct wsp *w = a->w;
	a->refs--;
	if (!w && a->refs <= 0)
		free(a);
	return w;
}

/* --- notes -------------------------------------------------------------------------------- */

void wsp_note(struct wsp *w, const char *owner, const char *repo, int plan, int task,
              enum decision_stage stage, const struct decision *d)
{
	char conv[WSP_REPO_FULL_MAX + 40];
	char id[32];
	if (plan > 0)
		snprintf(conv, sizeof conv, "plan:%s/%s#%d", owner, repo, plan);
	else
		snprintf(conv, sizeof conv, "workspace:%s/%s", owner, repo);
	if (task > 0)
		snprintf(id, sizeof id, "task-%d", task);
	else
		snprintf(id, sizeof id, "plan");
	decision_log_add(w->c.dlog, time_now_ms(), "github", conv, id, stage, d);
	log_kv(d->verdict == VERDICT_FAIL ? LOG_LEVEL_WARN : LOG_LEVEL_INFO, LOG_COMP, d->reason,
	       "rule", d->rule, "verdict", decision_verdict_name(d->verdict), "plan", conv, "id",
	       id);
	if (d->verdict == VERDICT_FAIL)
		snprintf(w->last_error, sizeof w->last_error, "%s", d->reason);
}

void wsp_notef(struct wsp *w, const char *owner, const char *repo, int plan, int task,
               enum decision_stage stage, enum decision_verdict v, const char *rule,
               const char *fmt, ...)
{
	struct decision d = {.verdict = v, .rule = rule};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d.reason, sizeof d.reason, fmt, ap);
	va_end(ap);
	wsp_note(w, owner, repo, plan, task, stage, &d);
}

void wsp_error(struct wsp *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->last_error, sizeof w->last_error, fmt, ap);
	va_end(ap);
	log_write(LOG_LEVEL_WARN, LOG_COMP, w->last_error, NULL);
}

void wsp_tell_owner(struct wsp *w, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	log_write(LOG_LEVEL_INFO, LOG_COMP, text, NULL);
	if (w->c.notify_owner)
		w->c.notify_owner(w->c.ud, text);
}

/* --- plans read and folded ---------------------------------------------------------------- */

void wsp_plan_free(struct wsp_plan *p)
{
	if (!p)
		return;
	free(p->title);
	free(p->url);
	free(p->body);
	plan_free(&p->plan);
	free(p->st);
	free(p);
}

void wsp_events_read(struct wsp_events *e, const cJSON *comments)
{
	memset(e, 0, sizeof e[0]);
	size_t cap = (size_t)cJSON_GetArraySize(comments);
	if (cap > PLAN_MAX_EVENTS)
		cap = PLAN_MAX_EVENTS;
	if (cap == 0)
		return;
	e->ev = xcalloc(cap, sizeof *e->ev);
	e->author = xcalloc(cap, sizeof *e->author);
	const cJSON *c;
	cJSON_ArrayForEach(c, comments)
	{
		if (e->n >= cap)
			break;
		const char *body = json_string_or(c, "body", NULL);
		const cJSON *user = cJSON_GetObjectItemCaseSensitive(c, "user");
		const char *login = json_string_or(user, "login", NULL);
		int64_t id = json_int_or(c, "id", 0);
		if (!body || !login || id <= 0 || strlen(login) >= PLAN_LOGIN_MAX)
			continue;
		struct plan_marker m;
		struct ga_err err = {{0}};
		int rc = plan_marker_parse(body, &m, &err);
		if (rc < 0)
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "a malformed marker is ignored", "comment",
			       LOG_INT(id), "error", err.msg);
		if (rc != 1)
			continue;
		int64_t at = 0;
		time_parse_iso(json_string_or(c, "created_at", ""), &at);
		snprintf(e->author[e->n], PLAN_LOGIN_MAX, "%s", login);
		e->ev[e->n] = (struct plan_event){
		        .comment_id = id, .author = e->author[e->n], .at_ms = at, .m = m};
		e->n++;
	}
}

void wsp_events_free(struct wsp_events *e)
{
	free(e->ev);
	free(e->author);
	memset(e, 0, sizeof *e);
}

int64_t wsp_events_claim_of(const struct wsp_events *e, const char *login, int task, int attempt)
{
	for (size_t i = 0; i < e->n; i++) {
		const struct plan_event *v = &e->ev[i];
		if (v->m.kind == PLAN_MARK_CLAIM && v->m.task == task &&
		    (attempt <= 0 || v->m.attempt == attempt) && strcasecmp(v->author, login) == 0)
			return v->comment_id;
	}
	return 0;
}

struct fold_notes {
	int64_t ignored[64];
	size_t n;
	size_t more;
};

static void on_ignored(void *ud, const struct plan_event *ev, const struct decision *d)
{
	struct fold_notes *f = ud;
	if (f->n < sizeof f->ignored / sizeof f->ignored[0])
		f->ignored[f->n++] = ev->comment_id;
	else
		f->more++;
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "marker not applied", "comment", LOG_INT(ev->comment_id),
	       "why", d->reason);
}

void wsp_plan_fold(struct wsp_plan *p, const struct wsp_events *e)
{
	free(p->st);
	p->st = xcalloc(p->plan.n_tasks ? p->plan.n_tasks : 1, sizeof *p->st);
	struct fold_notes notes;
	memset(&notes, 0, sizeof notes);
	size_t applied =
	        plan_state_fold(&p->plan, p->number, e->ev, e->n, p->st, on_ignored, &notes);
	p->touched = applied > 0;
	wsp_count(p->st, p->plan.n_tasks, &p->counts);
	memset(&p->agents, 0, sizeof p->agents);
	p->last_author[0] = '\0';
	int64_t last_id = 0;
	for (size_t i = 0; i < e->n; i++) {
		const struct plan_event *v = &e->ev[i];
		if (v->m.plan != p->number || strcasecmp(v->author, v->m.agent) != 0)
			continue;
		wsp_agents_add(&p->agents, v->author);
		bool ign = false;
		for (size_t k = 0; k < notes.n && !ign; k++)
			ign = notes.ignored[k] == v->comment_id;
		if (!ign && v->comment_id > last_id) {
			last_id = v->comment_id;
			snprintf(p->last_author, sizeof p->last_author, "%s", v->author);
		}
	}
}

struct wsp_plan *wsp_plan_new(const char *owner, const char *repo, const cJSON *issue,
                              const struct wsp_events *e, int64_t now_ms, struct decision *d)
{
	const char *title = json_string_or(issue, "title", "");
	const char *body = json_string_or(issue, "body", NULL);
	int number = (int)json_int_or(issue, "number", 0);
	if (!plan_is_plan(title, body) || number <= 0) {
		decision_set(d, VERDICT_INFO, "not_a_plan", "#%d is labelled plan but is not one",
		             number);
		return NULL;
	}
	struct wsp_plan *p = xcalloc(1, sizeof *p);
	snprintf(p->owner, sizeof p->owner, "%s", owner);
	snprintf(p->repo, sizeof p->repo, "%s", repo);
	p->number = number;
	struct ga_err err = {{0}};
	if (plan_parse(title, body, &p->plan, &err) != 0) {
		decision_set(d, VERDICT_FAIL, "plan_unreadable", "plan #%d does not read: %s",
		             number, err.msg);
		wsp_plan_free(p);
		return NULL;
	}
	p->title = xstrdup(title);
	p->body = xstrdup(body);
	p->url = xstrdup(json_string_or(issue, "html_url", ""));
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(issue, "user");
	snprintf(p->author, sizeof p->author, "%s", json_string_or(user, "login", ""));
	p->polled_ms = now_ms;
	wsp_plan_fold(p, e);
	decision_set(d, VERDICT_INFO, "plan_read",
	             "plan #%d: %d tasks, %d completed, %d in progress, %d blocked, %zu markers",
	             number, p->counts.total, p->counts.completed, p->counts.in_progress,
	             p->counts.blocked, e->n);
	return p;
}

/* --- one send that ends once -------------------------------------------------------------- */

struct send_op {
	struct wsp_anchor *a;
	wsp_sent_fn cb;
	void *ud;
	char *target, *text, *key, *conv, *msgid;
	cJSON *extra;
	bool resent;
};

static void send_op_free(struct send_op *op)
{
	free(op->target);
	free(op->text);
	free(op->key);
	free(op->conv);
	free(op->msgid);
	cJSON_Delete(op->extra);
	free(op);
}

static void send_end(struct send_op *op, bool ok, const char *artifact, const char *why)
{
	struct wsp *w = wsp_drop(op->a);
	if (w && op->cb)
		op->cb(op->ud, ok, artifact, why);
	send_op_free(op);
}

static void submit_op(struct wsp *w, struct send_op *op);

static void on_reconciled(void *ud, int exists, const char *artifact)
{
	struct send_op *op = ud;
	struct wsp *w = op->a->w;
	if (!w) {
		send_end(op, false, NULL, "stopping");
		return;
	}
	if (exists == 1) {
		send_end(op, true, artifact, NULL);
	} else if (exists == 0 && !op->resent) {
		op->resent = true;
		wsp_drop(op->a);
		submit_op(w, op);
	} else {
		send_end(op, false, NULL,
		         exists == 0 ? "not made, and the second send did not go either"
		                     : "cannot tell whether it was made: left for a later cycle");
	}
}

static void reconcile_op(struct wsp *w, struct send_op *op)
{
	struct ga_err err = {{0}};
	if (outbound_reconcile_key(w->c.outbound, op->key, on_reconciled, op, &err) != 0)
		send_end(op, false, NULL, err.msg);
}

static void on_final(void *ud, const struct decision *final, const char *artifact)
{
	struct send_op *op = ud;
	struct wsp *w = op->a->w;
	if (final->verdict == VERDICT_SENT) {
		send_end(op, true, artifact, NULL);
		return;
	}
	bool journal = final->rule && strcmp(final->rule, "journal") == 0;
	bool unknown = final->rule && strcmp(final->rule, "port_unknown") == 0;
	if (w && journal) {
		enum journal_state js = journal_state_of(w->c.journal, op->key);
		if (js == JOURNAL_DONE) {
			send_end(op, true, journal_artifact(w->c.journal, op->key), NULL);
			return;
		}
		if (js == JOURNAL_INTENT) {
			reconcile_op(w, op);
			return;
		}
	}
	if (w && unknown) {
		reconcile_op(w, op);
		return;
	}
	char why[DECISION_REASON_MAX + 40];
	snprintf(why, sizeof why, "%s: %s", final->rule ? final->rule : "?", final->reason);
	send_end(op, false, NULL, why);
}

static void submit_op(struct wsp *w, struct send_op *op)
{
	op->a = wsp_hold(w);
	struct outbound_msg m = {.platform = CONV_PLATFORM_GITHUB,
	                         .target = op->target,
	                         .source = "workspace",
	                         .conversation = op->conv,
	                         .message_id = op->msgid,
	                         .text = op->text,
	                         .text_len = strlen(op->text),
	                         .chain = -1,
	                         .idem_key = op->key,
	                         .extra = op->extra};
	outbound_submit(w->c.outbound, &m, on_final, op);
}

void wsp_send(struct wsp *w, const struct wsp_send *s, wsp_sent_fn cb, void *ud)
{
	struct send_op *op = xcalloc(1, sizeof *op);
	op->cb = cb;
	op->ud = ud;
	op->target = xstrdup(s->target);
	op->text = xstrdup(s->text);
	op->key = xstrdup(s->key);
	op->conv = xstrdup(s->conversation ? s->conversation : "workspace");
	op->msgid = xstrdup(s->message_id ? s->message_id : s->key);
	op->extra = s->extra ? cJSON_Duplicate(s->extra, 1) : NULL;
	submit_op(w, op);
}

void wsp_send_comment(struct wsp *w, const char *owner, const char *repo, int plan,
                      enum voice_key k, const char *phrase_override, const char *title,
                      const char *details, const struct plan_marker *m, const char *key,
                      wsp_sent_fn cb, void *ud)
{
	char num[16];
	snprintf(num, sizeof num, "%d", m->task);
	const char *names[] = {"number", "title", "details"};
	const char *values[] = {num, title ? title : "", details ? details : ""};
	char *phrase;
	if (phrase_override)
		phrase = xstrdup(phrase_override);
	else if (w->c.voice)
		phrase = voice_render(w->c.voice, k, names, values, 3);
	else
		phrase = voice_interpolate(voice_default(k), names, values, 3);
	char *text = wsp_comment(phrase, m);
	free(phrase);
	if (!text) {
		if (cb)
			cb(ud, false, NULL, "the marker does not format");
		return;
	}
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:issue:%d", owner, repo, plan);
	char conv[WSP_REPO_FULL_MAX + 40];
	snprintf(conv, sizeof conv, "plan:%s/%s#%d", owner, repo, plan);
	char id[32];
	snprintf(id, sizeof id, "task-%d", m->task);
	struct wsp_send s = {
	        .target = target, .text = text, .key = key, .conversation = conv, .message_id = id};
	wsp_send(w, &s, cb, ud);
	free(text);
}

/* --- the body as a view of the markers ---------------------------------------------------- */

static void on_body_sent(void *ud, bool ok, const char *artifact, const char *why)
{
	(void)artifact;
	struct wsp_anchor *a = ud;
	struct wsp *w = wsp_drop(a);
	if (w && ok)
		w->n.body_syncs++;
	else if (w)
		wsp_error(w, "a plan body was not updated: %s", why ? why : "?");
}

void wsp_sync_body(struct wsp *w, const struct wsp_plan *p, bool force)
{
	bool mine = p->last_author[0] ? strcasecmp(p->last_author, w->login) == 0
	                              : strcasecmp(p->author, w->login) == 0;
	if (!force && !mine)
		return;
	bool changed = false;
	struct ga_err err = {{0}};
	char *body = plan_state_sync_body(p->body, p->st, p->plan.n_tasks, &changed, &err);
	if (!body) {
		wsp_error(w, "plan #%d of %s/%s: the body cannot show the state: %s", p->number,
		          p->owner, p->repo, err.msg);
		return;
	}
	if (!changed) {
		free(body);
		return;
	}
	/* The key names the body before and after: the same change is made
	 * once, a change back after someone else's edit is a new one. */
	struct strbuf both;
	sb_init(&both, 0);
	sb_puts(&both, p->body);
	sb_putc(&both, '\0');
	sb_puts(&both, body);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(both.buf, both.len, hex);
	sb_free(&both);
	char key[WSP_KEY_MAX + 1];
	char base[WSP_KEY_MAX + 1];
	wsp_key(base, sizeof base, "body", p->owner, p->repo, p->number, 0, 0);
	snprintf(key, sizeof key, "%.90s:%.16s", base, hex);
	char target[WSP_REPO_FULL_MAX + 40];
	snprintf(target, sizeof target, "github:%s:%s:edit:%d", p->owner, p->repo, p->number);
	char text[128];
	snprintf(text, sizeof text, "plan #%d: the task list made to show the markers (%.12s)",
	         p->number, hex);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "op", "issue");
	cJSON_AddStringToObject(extra, "body", body);
	struct wsp_send s = {.target = target, .text = text, .key = key, .extra = extra};
	wsp_send(w, &s, on_body_sent, wsp_hold(w));
	cJSON_Delete(extra);
	free(body);
}
