/* The outbound stage: the order of the steps is the point; see outbound.h. */
#include "modules/outbound/outbound.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/gate/gate.h"
#include "modules/journal/journal.h"
#include "modules/outbound/audit.h"
#include "modules/outbound/dedup.h"
#include "modules/outbound/perms.h"
#include "modules/validator/validator.h"

#define LOG_COMP     "outbound"
#define COURTESY_SEP "\n\n"

struct ob_item {
	struct outbound *ob;
	struct outbound_msg m; /* every string owned by the item */
	char canon[PERMS_KEY_MAX];
	char key[SHA256_HEX_LEN + 1 + 256];
	outbound_done_fn cb;
	void *ud;
	char *final_text;
	size_t final_len;
	struct ob_item *next;
};

struct ob_platform {
	struct outbound *ob;
	struct outbound_port port;
	bool has_port;
	struct ob_item *head, *tail;
	size_t qlen;
	uv_timer_t timer;
	bool ever_sent;
	uint64_t last_send; /* uv_now of the last port call */
};

struct outbound {
	uv_loop_t *loop;
	char *memory_dir;
	char *agent_name;
	struct journal *journal;
	void (*on_decision)(void *ud, const struct outbound_msg *m, const struct decision *d);
	void *ud;
	struct perms *perms;
	struct dedup dedup;
	struct ob_platform plat[CONV_PLATFORM_COUNT];
	size_t inflight;
	int handles_open;
	bool closing;
	void (*close_cb)(void *ud);
	void *close_ud;
	char *last_denial;
	/* Keys being sent by a port or reconciled right now (at most one
	 * entry per send in flight or question asked: bounded by them). */
	struct ob_busy *busy;
};

struct ob_busy {
	char *key;
	struct ob_busy *next;
};

static void busy_add(struct outbound *ob, const char *key)
{
	struct ob_busy *b = xcalloc(1, sizeof *b);
	b->key = xstrdup(key);
	b->next = ob->busy;
	ob->busy = b;
}

/* Removes one entry for key (a key is in the list at most once: a send
 * needs no intent pending, a reconcile needs the key not busy). */
static void busy_del(struct outbound *ob, const char *key)
{
	for (struct ob_busy **pp = &ob->busy; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->key, key) == 0) {
			struct ob_busy *b = *pp;
			*pp = b->next;
			free(b->key);
			free(b);
			return;
		}
	}
}

bool outbound_key_busy(const struct outbound *ob, const char *key)
{
	for (const struct ob_busy *b = ob ? ob->busy : NULL; b; b = b->next)
		if (strcmp(b->key, key) == 0)
			return true;
	return false;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void item_free(struct ob_item *it)
{
	if (!it)
		return;
	free((char *)it->m.target);
	free((char *)it->m.source);
	free((char *)it->m.conversation);
	free((char *)it->m.message_id);
	free((char *)it->m.text);
	free((char *)it->m.idem_key);
	cJSON_Delete((cJSON *)it->m.extra);
	free(it->final_text);
	free(it);
}

static void emit(struct ob_item *it, const struct decision *d)
{
	if (it->ob->on_decision)
		it->ob->on_decision(it->ob->ud, &it->m, d);
}

/* The end of an item's walk: the final decision goes to on_decision (once)
 * and to the submitter's cb; the item is freed. */
static void finish(struct ob_item *it, const struct decision *d, const char *artifact)
{
	emit(it, d);
	if (it->cb)
		it->cb(it->ud, d, artifact);
	item_free(it);
}

static void maybe_closed(struct outbound *ob);

void outbound_idem_key(enum conv_platform p, const char *target, const char *text, size_t len,
                       char out[65])
{
	struct strbuf sb;
	sb_init(&sb, STRBUF_DEFAULT_MAX);
	sb_puts(&sb, conv_platform_name(p));
	sb_putc(&sb, '\0');
	sb_puts(&sb, target ? target : "");
	sb_putc(&sb, '\0');
	sb_append(&sb, text ? text : "", text ? len : 0);
	sha256_hex(sb.buf ? sb.buf : "", sb.len, out);
	sb_free(&sb);
}

/* ---- journal (optional) ---------------------------------------------------- */

/* 0 none or failed earlier, 1 intent pending, 2 done. */
static int journal_state(struct outbound *ob, const char *key)
{
	if (!ob->journal)
		return 0;
	switch (journal_state_of(ob->journal, key)) {
	case JOURNAL_INTENT:
		return 1;
	case JOURNAL_DONE:
		return 2;
	default:
		return 0;
	}
}

static int journal_write_intent(struct ob_item *it, struct ga_err *err)
{
	struct outbound *ob = it->ob;
	if (!ob->journal)
		return 0;
	cJSON *payload = cJSON_CreateObject();
	cJSON_AddStringToObject(payload, "source", it->m.source);
	if (it->m.conversation)
		cJSON_AddStringToObject(payload, "conversation", it->m.conversation);
	if (it->m.message_id)
		cJSON_AddStringToObject(payload, "message_id", it->m.message_id);
	if (it->m.chain >= 0)
		cJSON_AddNumberToObject(payload, "chain", (double)it->m.chain);
	int rc = journal_intent(ob->journal, it->key, conv_platform_name(it->m.platform), it->canon,
	                        payload, time_now_ms(), err);
	cJSON_Delete(payload);
	return rc;
}

static void journal_write_end(struct ob_item *it, int ok, const char *artifact, const char *error)
{
	struct outbound *ob = it->ob;
	if (!ob->journal)
		return;
	struct ga_err e;
	err_clear(&e);
	int rc = ok ? journal_done(ob->journal, it->key, artifact, time_now_ms(), &e)
	            : journal_failed(ob->journal, it->key, error ? error : "failed", time_now_ms(),
	                             &e);
	if (rc < 0)
		log_error(LOG_COMP, "journal %s for %s: %s", ok ? "done" : "failed", it->key,
		          e.msg);
}

/* ---- steps 5..8: limit, courtesy, intent, port ---------------------------------- */

static const struct validator_limits owner_limits = {
        .max_len = OUTBOUND_OWNER_MAX_CODEPOINTS,
        .unit = VALIDATOR_UNIT_CODEPOINTS,
};

static const struct validator_limits *limits_for(enum conv_platform p)
{
	switch (p) {
	case CONV_PLATFORM_SPACE:
		return validator_limits_for(VALIDATOR_PLATFORM_SPACE);
	case CONV_PLATFORM_BLUESKY:
		return validator_limits_for(VALIDATOR_PLATFORM_BLUESKY);
	case CONV_PLATFORM_GITHUB:
		return validator_limits_for(VALIDATOR_PLATFORM_GITHUB);
	default:
		return &owner_limits;
	}
}

static const char *unit_name(enum validator_unit u)
{
	switch (u) {
	case VALIDATOR_UNIT_UTF16:
		return "UTF-16 units";
	case VALIDATOR_UNIT_GRAPHEMES:
		return "graphemes";
	default:
		return "characters";
	}
}

static void port_done(void *done_ud, int ok, const char *artifact, const char *error)
{
	struct ob_item *it = done_ud;
	struct outbound *ob = it->ob;
	busy_del(ob, it->key);
	struct decision d;
	if (ok < 0) {
		/* It may exist: the intent stays unresolved, so nothing resends
		 * this key before the platform has been asked. */
		dedup_forget(&ob->dedup, it->canon, it->m.text, it->m.text_len);
		decision_set(&d, VERDICT_FAIL, "port_unknown",
		             "%s may or may not have made it (%s): key %.40s left unresolved until "
		             "reconciled",
		             it->canon, error ? error : "no reason given", it->key);
		finish(it, &d, NULL);
		ob->inflight--;
		maybe_closed(ob);
		return;
	}
	journal_write_end(it, ok, artifact, error);
	if (ok) {
		decision_set(&d, VERDICT_SENT, "sent", "sent to %s%s%s", it->canon,
		             artifact ? ": " : "", artifact ? artifact : "");
	} else {
		dedup_forget(&ob->dedup, it->canon, it->m.text, it->m.text_len);
		decision_set(&d, VERDICT_FAIL, "port", "%s refused the send to %s: %s",
		             conv_platform_name(it->m.platform), it->canon,
		             error ? error : "no reason given");
	}
	finish(it, &d, ok ? artifact : NULL);
	ob->inflight--;
	maybe_closed(ob);
}

static void drop_after_dedup(struct ob_item *it, struct decision *d)
{
	dedup_forget(&it->ob->dedup, it->canon, it->m.text, it->m.text_len);
	finish(it, d, NULL);
}

/* Limit, courtesy and marker, intent, port. The item has left the queue. */
static void process(struct ob_platform *pl, struct ob_item *it)
{
	struct outbound *ob = it->ob;
	struct decision d;
	const struct validator_limits *lim = limits_for(it->m.platform);

	char marker[SHA256_HEX_LEN + 400] = "";
	if (pl->port.marker_in_text) {
		if (it->m.chain >= 0)
			snprintf(marker, sizeof marker, "\n\n<!-- ga:chain=%" PRId64 " key=%s -->",
			         it->m.chain, it->key);
		else
			snprintf(marker, sizeof marker, "\n\n<!-- ga:key=%s -->", it->key);
	}
	struct strbuf base;
	sb_init(&base, STRBUF_DEFAULT_MAX);
	sb_append(&base, it->m.text, it->m.text_len);
	sb_puts(&base, marker);
	size_t base_n = validator_measure(base.buf ? base.buf : "", base.len, lim->unit);
	if (base_n > lim->max_len) {
		sb_free(&base);
		decision_set(&d, VERDICT_DROP, "platform_limit", "%zu %s%s > the %s limit of %zu",
		             base_n, unit_name(lim->unit),
		             marker[0] ? " (with the chain marker)" : "",
		             conv_platform_name(it->m.platform), lim->max_len);
		drop_after_dedup(it, &d);
		return;
	}
	decision_set(&d, VERDICT_PASS, "platform_limit", "%zu of %zu %s", base_n, lim->max_len,
	             unit_name(lim->unit));
	emit(it, &d);

	struct strbuf out;
	sb_init(&out, STRBUF_DEFAULT_MAX);
	sb_append(&out, it->m.text, it->m.text_len);
	bool courtesy_added = false;
	size_t with_n = 0;
	if (it->m.courtesy) {
		sb_puts(&out, COURTESY_SEP GATE_COURTESY_NOTICE);
		sb_puts(&out, marker);
		with_n = validator_measure(out.buf, out.len, lim->unit);
		courtesy_added = with_n <= lim->max_len;
		if (!courtesy_added) {
			sb_reset(&out);
			sb_append(&out, it->m.text, it->m.text_len);
		}
	}
	if (!courtesy_added)
		sb_puts(&out, marker);
	sb_free(&base);
	if (courtesy_added)
		decision_set(&d, VERDICT_EDIT, "courtesy",
		             "courtesy notice appended%s (chain %" PRId64 ")",
		             marker[0] ? " with the chain marker" : "", it->m.chain);
	else if (it->m.courtesy)
		decision_set(
		        &d, marker[0] ? VERDICT_EDIT : VERDICT_PASS, "courtesy",
		        "no room for the courtesy notice (%zu > %zu %s): the chain marker alone",
		        with_n, lim->max_len, unit_name(lim->unit));
	else if (marker[0])
		decision_set(&d, VERDICT_EDIT, "courtesy",
		             "chain marker appended (chain %" PRId64 ")", it->m.chain);
	else
		decision_set(&d, VERDICT_PASS, "courtesy", "text unchanged");
	emit(it, &d);
	it->final_len = out.len;
	it->final_text = sb_detach(&out);
	if (!it->final_text)
		it->final_text = xstrdup("");

	/* A racing twin with the same key may have been sent meanwhile. */
	int js = journal_state(ob, it->key);
	if (js) {
		decision_set(&d, VERDICT_DROP, "journal",
		             js == 2 ? "already sent (journal key %.16s… is done)"
		                     : "an earlier attempt (key %.16s…) is unresolved",
		             it->key);
		drop_after_dedup(it, &d);
		return;
	}
	struct ga_err e;
	err_clear(&e);
	if (journal_write_intent(it, &e) < 0) {
		decision_set(&d, VERDICT_FAIL, "journal",
		             "cannot record the intent, not sending: %s", e.msg);
		drop_after_dedup(it, &d);
		return;
	}
	struct outbound_send s = {
	        .platform = it->m.platform,
	        .target = it->canon,
	        .text = it->final_text,
	        .text_len = it->final_len,
	        .chain = it->m.chain,
	        .idem_key = it->key,
	        .extra = it->m.extra,
	        .look = it->m.look,
	        .look_ud = it->m.look_ud,
	};
	pl->ever_sent = true;
	pl->last_send = uv_now(ob->loop);
	ob->inflight++;
	busy_add(ob, it->key);
	if (pl->port.send(pl->port.ud, &s, port_done, it) != 0) {
		busy_del(ob, it->key);
		ob->inflight--;
		journal_write_end(it, 0, NULL, "the port could not start the send");
		decision_set(&d, VERDICT_FAIL, "port", "%s could not start the send to %s",
		             conv_platform_name(it->m.platform), it->canon);
		drop_after_dedup(it, &d);
	}
}

/* ---- step 4: pacing --------------------------------------------------------------- */

static void pump(struct ob_platform *pl, struct outbound *ob);

static void on_timer(uv_timer_t *t)
{
	struct ob_platform *pl = t->data;
	pump(pl, pl->ob);
}

static void pump(struct ob_platform *pl, struct outbound *ob)
{
	while (pl->head && !ob->closing) {
		uv_update_time(ob->loop);
		uint64_t now = uv_now(ob->loop);
		uint64_t gap = pl->port.min_interval_ms;
		if (pl->ever_sent && now - pl->last_send < gap) {
			uv_timer_start(&pl->timer, on_timer, gap - (now - pl->last_send), 0);
			return;
		}
		struct ob_item *it = pl->head;
		pl->head = it->next;
		if (!pl->head)
			pl->tail = NULL;
		pl->qlen--;
		it->next = NULL;
		struct decision d;
		decision_set(&d, VERDICT_PASS, "pacing",
		             "%s: at least %" PRIu64 " ms since the last send",
		             conv_platform_name(it->m.platform), gap);
		emit(it, &d);
		process(pl, it);
	}
}

/* ---- steps 1..3 ---------------------------------------------------------------------- */

static struct ob_item *item_new(struct outbound *ob, const struct outbound_msg *m,
                                outbound_done_fn cb, void *ud)
{
	struct ob_item *it = xcalloc(1, sizeof *it);
	it->ob = ob;
	it->cb = cb;
	it->ud = ud;
	it->m.platform = m->platform;
	it->m.target = xstrdup(m->target ? m->target : "");
	it->m.source = xstrdup(m->source ? m->source : "");
	it->m.conversation = dup_or_null(m->conversation);
	it->m.message_id = dup_or_null(m->message_id);
	size_t len = m->text ? m->text_len : 0;
	char *text = xmalloc(len + 1);
	if (len)
		memcpy(text, m->text, len);
	text[len] = '\0';
	it->m.text = text;
	it->m.text_len = len;
	it->m.chain = m->chain;
	it->m.courtesy = m->courtesy;
	it->m.idem_key = dup_or_null(m->idem_key);
	it->m.extra = m->extra ? cJSON_Duplicate(m->extra, 1) : NULL;
	it->m.look = m->look;
	it->m.look_ud = m->look_ud;
	return it;
}

const char *outbound_last_denial(const struct outbound *ob)
{
	return ob->last_denial;
}

void outbound_submit(struct outbound *ob, const struct outbound_msg *msg, outbound_done_fn cb,
                     void *ud)
{
	struct ob_item *it = item_new(ob, msg, cb, ud);
	struct decision d;
	if (ob->closing) {
		decision_set(&d, VERDICT_DROP, "shutdown", "shutting down: not sent");
		finish(it, &d, NULL);
		return;
	}

	/* 1. permission: refresh, check, audit every attempt */
	struct ga_err e;
	err_clear(&e);
	if (perms_refresh(ob->perms, &e) < 0)
		log_error(LOG_COMP, "send permissions: %s (every send is refused)", e.msg);
	struct perms_verdict *v = xmalloc(sizeof *v);
	perms_check(ob->perms, it->m.target, v);
	struct audit_entry ae = {
	        .time_ms = time_now_ms(),
	        .source = it->m.source,
	        .target = it->m.target,
	        .allowed = v->allowed,
	        .pattern = v->pattern,
	        .reason = v->d.reason,
	};
	err_clear(&e);
	if (audit_append(ob->memory_dir, &ae, &e) < 0)
		log_error(LOG_COMP, "send audit: %s", e.msg);
	if (!v->allowed) {
		free(ob->last_denial);
		ob->last_denial = perms_denial_text(ob->perms, ob->agent_name, it->m.target, v);
		log_warn(LOG_COMP, "%s", ob->last_denial);
		d = v->d;
		free(v);
		finish(it, &d, NULL);
		return;
	}
	snprintf(it->canon, sizeof it->canon, "%s", v->target);
	emit(it, &v->d);
	free(v);

	struct ob_platform *pl =
	        (unsigned)it->m.platform < CONV_PLATFORM_COUNT ? &ob->plat[it->m.platform] : NULL;
	if (!pl || !pl->has_port) {
		decision_set(&d, VERDICT_FAIL, "port", "no outbound port for %s",
		             conv_platform_name(it->m.platform));
		finish(it, &d, NULL);
		return;
	}
	if (it->m.text_len > OUTBOUND_TEXT_MAX_BYTES) {
		decision_set(&d, VERDICT_DROP, "platform_limit", "%zu bytes > %d bytes",
		             it->m.text_len, OUTBOUND_TEXT_MAX_BYTES);
		finish(it, &d, NULL);
		return;
	}

	/* 2. journal: a key already sent, or unresolved, is not sent again */
	if (it->m.idem_key && it->m.idem_key[0])
		snprintf(it->key, sizeof it->key, "%s", it->m.idem_key);
	else
		outbound_idem_key(it->m.platform, it->canon, it->m.text, it->m.text_len, it->key);
	int js = journal_state(ob, it->key);
	if (js) {
		decision_set(&d, VERDICT_DROP, "journal",
		             js == 2 ? "already sent (journal key %.16s… is done)"
		                     : "an earlier attempt (key %.16s…) is unresolved: reconcile "
		                       "before any retry",
		             it->key);
		finish(it, &d, NULL);
		return;
	}

	/* 3. dedup: check and record in one step */
	int64_t age = 0;
	if (!dedup_admit(&ob->dedup, it->canon, it->m.text, it->m.text_len, time_now_ms(), &age)) {
		decision_set(&d, VERDICT_DROP, "dedup",
		             "the same text went to %s %" PRId64 " s ago (window %d s)", it->canon,
		             age / 1000, OUTBOUND_DEDUP_WINDOW_MS / 1000);
		finish(it, &d, NULL);
		return;
	}
	decision_set(&d, VERDICT_PASS, "dedup", "not sent to %s in the last %d s", it->canon,
	             OUTBOUND_DEDUP_WINDOW_MS / 1000);
	emit(it, &d);

	/* 4. pacing: queue, bounded */
	if (pl->qlen >= OUTBOUND_QUEUE_MAX) {
		decision_set(&d, VERDICT_DROP, "pacing", "%zu sends already wait for %s (limit %d)",
		             pl->qlen, conv_platform_name(it->m.platform), OUTBOUND_QUEUE_MAX);
		drop_after_dedup(it, &d);
		return;
	}
	if (pl->tail)
		pl->tail->next = it;
	else
		pl->head = it;
	pl->tail = it;
	pl->qlen++;
	if (!uv_is_active((uv_handle_t *)&pl->timer))
		pump(pl, ob);
}

/* ---- reconcile ------------------------------------------------------------------------ */

struct rec_ctx {
	struct outbound *ob;
	char *key;
	void (*cb)(void *ud, int exists, const char *artifact);
	void *ud;
};

static void reconcile_done(void *done_ud, int exists, const char *artifact)
{
	struct rec_ctx *rc = done_ud;
	struct outbound *ob = rc->ob;
	if (exists == 1) {
		struct ga_err e;
		err_clear(&e);
		if (journal_done(ob->journal, rc->key, artifact, time_now_ms(), &e) < 0)
			log_error(LOG_COMP, "reconcile %s: %s", rc->key, e.msg);
		else
			log_info(LOG_COMP, "reconcile %s: the artifact exists (%s): done", rc->key,
			         artifact ? artifact : "?");
	} else if (exists == 0) {
		/* Not sent: the intent becomes failed so that the owner of the work
		 * (the ledger, the pipeline) may retry; we never resend ourselves. */
		struct ga_err e;
		err_clear(&e);
		if (journal_failed(
		            ob->journal, rc->key,
		            "reconciled after a restart: the artifact does not exist; not resent",
		            time_now_ms(), &e) < 0)
			log_error(LOG_COMP, "reconcile %s: %s", rc->key, e.msg);
		else
			log_warn(LOG_COMP,
			         "reconcile %s: never sent; marked failed for its owner to retry",
			         rc->key);
	} else {
		log_warn(LOG_COMP,
		         "reconcile %s: the platform cannot tell whether it was sent; left pending "
		         "(retries with this key are dropped rather than risk a double send)",
		         rc->key);
	}
	busy_del(ob, rc->key);
	if (rc->cb)
		rc->cb(rc->ud, exists, exists == 1 ? artifact : NULL);
	ob->inflight--;
	free(rc->key);
	free(rc);
	maybe_closed(ob);
}

struct rec_walk {
	struct outbound *ob;
	int asked;
	const char *only; /* one key (outbound_reconcile_key), or NULL: all */
	bool found;
	void (*cb)(void *ud, int exists, const char *artifact);
	void *ud;
};

static void reconcile_one(void *ud, const char *key, const char *platform, const char *target,
                          const cJSON *payload, int64_t intent_ms)
{
	(void)payload;
	(void)intent_ms;
	struct rec_walk *w = ud;
	struct outbound *ob = w->ob;
	if (w->only && strcmp(w->only, key) != 0)
		return;
	w->found = true;
	int p = conv_platform_parse(platform);
	if (p < 0 || !ob->plat[p].has_port || !ob->plat[p].port.reconcile) {
		log_warn(LOG_COMP, "reconcile %s: no port can check %s; left pending", key,
		         platform ? platform : "?");
		return;
	}
	if (outbound_key_busy(ob, key))
		return;
	struct rec_ctx *rc = xcalloc(1, sizeof *rc);
	rc->ob = ob;
	rc->key = xstrdup(key);
	rc->cb = w->cb;
	rc->ud = w->ud;
	ob->inflight++;
	w->asked++;
	busy_add(ob, key);
	ob->plat[p].port.reconcile(ob->plat[p].port.ud, key, target, reconcile_done, rc);
}

int outbound_reconcile_pending(struct outbound *ob)
{
	if (!ob->journal)
		return 0;
	struct rec_walk w = {.ob = ob};
	journal_pending(ob->journal, reconcile_one, &w);
	return w.asked;
}

int outbound_reconcile_key(struct outbound *ob, const char *key,
                           void (*cb)(void *ud, int exists, const char *artifact), void *ud,
                           struct ga_err *err)
{
	if (!ob || !ob->journal || ob->closing)
		return err_set(err, "no journal to reconcile %.60s against", key ? key : "?");
	if (!key || journal_state_of(ob->journal, key) != JOURNAL_INTENT)
		return err_set(err, "%.60s has no unresolved intent", key ? key : "?");
	if (outbound_key_busy(ob, key))
		return err_set(err, "%.60s is being sent or reconciled right now", key);
	struct rec_walk w = {.ob = ob, .only = key, .cb = cb, .ud = ud};
	journal_pending(ob->journal, reconcile_one, &w);
	if (!w.asked)
		return err_set(err, "no port can check %.60s (its platform has no reconcile)", key);
	return 0;
}

bool outbound_has_port(const struct outbound *ob, enum conv_platform p)
{
	return ob && (unsigned)p < CONV_PLATFORM_COUNT && ob->plat[p].has_port;
}

/* ---- lifetime -------------------------------------------------------------------------- */

struct outbound *outbound_new(uv_loop_t *loop, const struct outbound_config *cfg,
                              struct ga_err *err)
{
	if (!loop || !cfg || !cfg->memory_dir) {
		err_set(err, "outbound needs a loop and a memory directory");
		return NULL;
	}
	struct outbound *ob = xcalloc(1, sizeof *ob);
	ob->loop = loop;
	ob->memory_dir = xstrdup(cfg->memory_dir);
	ob->agent_name = xstrdup(cfg->agent_name ? cfg->agent_name : "");
	ob->journal = cfg->journal;
	ob->on_decision = cfg->on_decision;
	ob->ud = cfg->ud;
	struct ga_err e;
	err_clear(&e);
	ob->perms = perms_open(cfg->memory_dir, &e);
	if (perms_broken(ob->perms))
		log_error(LOG_COMP, "send permissions: %s (every send is refused)", e.msg);
	dedup_init(&ob->dedup);
	for (int i = 0; i < CONV_PLATFORM_COUNT; i++) {
		ob->plat[i].ob = ob;
		ob->plat[i].port.platform = (enum conv_platform)i;
		uv_timer_init(loop, &ob->plat[i].timer);
		ob->plat[i].timer.data = &ob->plat[i];
		ob->handles_open++;
	}
	return ob;
}

int outbound_add_port(struct outbound *ob, const struct outbound_port *port, struct ga_err *err)
{
	if ((unsigned)port->platform >= CONV_PLATFORM_COUNT || !port->send)
		return err_set(err, "an outbound port needs a known platform and a send function");
	struct ob_platform *pl = &ob->plat[port->platform];
	if (pl->has_port)
		return err_set(err, "%s already has an outbound port",
		               conv_platform_name(port->platform));
	pl->port = *port;
	pl->has_port = true;
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	struct ob_platform *pl = h->data;
	struct outbound *ob = pl->ob;
	ob->handles_open--;
	maybe_closed(ob);
}

static void maybe_closed(struct outbound *ob)
{
	if (!ob->closing || ob->inflight || ob->handles_open)
		return;
	void (*cb)(void *) = ob->close_cb;
	void *ud = ob->close_ud;
	while (ob->busy)
		busy_del(ob, ob->busy->key);
	perms_free(ob->perms);
	free(ob->memory_dir);
	free(ob->agent_name);
	free(ob->last_denial);
	free(ob);
	if (cb)
		cb(ud);
}

void outbound_close(struct outbound *ob, void (*done_cb)(void *ud), void *ud)
{
	if (!ob || ob->closing)
		return;
	ob->closing = true;
	ob->close_cb = done_cb;
	ob->close_ud = ud;
	for (int i = 0; i < CONV_PLATFORM_COUNT; i++) {
		struct ob_platform *pl = &ob->plat[i];
		while (pl->head) {
			struct ob_item *it = pl->head;
			pl->head = it->next;
			struct decision d;
			decision_set(&d, VERDICT_DROP, "shutdown", "shutting down: not sent to %s",
			             it->canon);
			drop_after_dedup(it, &d);
		}
		pl->tail = NULL;
		pl->qlen = 0;
		uv_timer_stop(&pl->timer);
		uv_close((uv_handle_t *)&pl->timer, on_closed);
	}
}
