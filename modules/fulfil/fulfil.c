/* The commitment fulfilment pipeline: see fulfil.h (the I/O half) and
 * policy.h (the rules). */
#include "modules/fulfil/fulfil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/github/gh_work.h"
#include "adapters/github/github.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/commitments/ledger.h"
#include "modules/commitments/workkey.h"
#include "modules/coord/coord.h"
#include "modules/decisions/log.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "modules/pipeline/pipeline.h"
#include "modules/scheduler/sched.h"

#define LOG_COMP      "fulfil"
#define JOB_NAME      "commitments"
#define WAIT_MEMO     256 /* (commitment, wait rule) pairs remembered, so a wait is logged once */
#define CLAIM_KEY_MAX (LEDGER_FIELD_MAX + LEDGER_ID_MAX + 2)
#define ANNOUNCE_MAX  (FULFIL_DESC_MAX + JOURNAL_FIELD_MAX + 32)

struct attempt {
	struct fulfil *f; /* NULL once the fulfil is gone: late answers are dropped */
	int refs;         /* the attempt itself + each request in flight */
	bool done;
	enum fulfil_type type;
	char id[LEDGER_ID_MAX];
	char key[LEDGER_IDEM_KEY_MAX];
	/* the work's claim keys (workkey.h: the promise form, the work form) */
	char claim_keys[2][COMMIT_WORK_KEY_MAX];
	size_t nkeys;
	bool key_won[2];
	size_t ikey; /* the key being claimed */
	struct commit_work work;
	char source[LEDGER_FIELD_MAX];
	char desc[FULFIL_DESC_MAX + 1];
	struct coord *coord; /* the backend the claim went to */
	bool claimed;        /* at least one key is ours */
	struct fulfil_plan plan;
	bool have_plan;
	/* How it ended, for the claim's release (the room's action_result,
	 * §12.4): set by complete / fail_attempt / a deferral. Heap, may be
	 * NULL. */
	bool have_out, ok;
	char *out_link, *out_error;
};

struct wait_memo {
	char id[LEDGER_ID_MAX];
	const char *rule;
};

struct fulfil {
	struct fulfil_config c;
	char *agent_name;
	struct sched_job *job;
	bool running; /* a cycle holds the job */
	bool quiesced;
	bool freeing;
	bool stepping;
	int handles_open;
	uv_timer_t watchdog, renew, recheck;
	/* the cycle's work: ids, oldest first */
	char (*work)[LEDGER_ID_MAX];
	size_t nwork, iwork;
	bool recheck_wanted;
	struct attempt *cur;
	uint64_t gh_call; /* create_plan's dedup read in flight, 0 none */
	struct fulfil_cooldown cd[FULFIL_COOLDOWN_MAX];
	size_t ncd;
	struct wait_memo waits[WAIT_MEMO];
	size_t nwaits;
	/* Room announcements made while the agent was out of the room (a
	 * reconnect, the first seconds after start): sent when it is back,
	 * oldest first, dropped (and logged) after FULFIL_HELD_MS; at most
	 * FULFIL_HELD_MAX, the oldest gives way. In memory only: a restart
	 * while one waits loses it (the link is in the ledger's artifact). */
	struct held_announce {
		char id[LEDGER_ID_MAX];
		enum fulfil_type t;
		int64_t since_ms;
		char *text;
	} held[FULFIL_HELD_MAX];
	size_t nheld;
	struct fulfil_stats stats;
};

static void step(struct fulfil *f);

/* --- notes --------------------------------------------------------------------------------- */

static void note(struct fulfil *f, const char *id, enum fulfil_type t, enum decision_stage st,
                 const struct decision *d)
{
	enum log_level lvl = d->verdict == VERDICT_FAIL ? LOG_LEVEL_WARN : LOG_LEVEL_INFO;
	log_kv(lvl, LOG_COMP, decision_verdict_name(d->verdict), "commitment", id, "rule", d->rule,
	       "reason", d->reason);
	if (d->verdict == VERDICT_FAIL ||
	    (d->verdict == VERDICT_DROP && d->rule && strcmp(d->rule, "wait") != 0))
		snprintf(f->stats.last_error, sizeof f->stats.last_error, "%s: %s", id, d->reason);
	if (!f->c.dlog)
		return;
	char conv[LEDGER_ID_MAX + 16];
	snprintf(conv, sizeof conv, "commitment:%s", id);
	struct decision_record rec = {.time_ms = time_now_ms(),
	                              .platform = conv_platform_name(fulfil_type_platform(t)),
	                              .conversation = conv,
	                              .message_id = id,
	                              .stage = st,
	                              .decision = *d};
	decision_log_append(f->c.dlog, &rec);
}

/* A wait is told once per (commitment, rule), not every 15 s. */
static void note_wait(struct fulfil *f, const struct ledger_entry *e, enum fulfil_type t,
                      const char *rule, const char *reason)
{
	for (size_t i = 0; i < f->nwaits && i < WAIT_MEMO; i++)
		if (f->waits[i].rule == rule && strcmp(f->waits[i].id, e->id) == 0)
			return;
	struct wait_memo *m = &f->waits[f->nwaits++ % WAIT_MEMO];
	snprintf(m->id, sizeof m->id, "%s", e->id);
	m->rule = rule;
	struct decision d;
	decision_set(&d, VERDICT_INFO, rule, "%s", reason);
	note(f, e->id, t, STAGE_GATE, &d);
}

/* --- attempts ------------------------------------------------------------------------------ */

static void attempt_unref(struct attempt *a)
{
	if (--a->refs > 0)
		return;
	fulfil_plan_free(&a->plan);
	free(a->out_link);
	free(a->out_error);
	free(a);
}

static struct attempt *attempt_new(struct fulfil *f, const struct ledger_entry *e,
                                   enum fulfil_type t)
{
	struct attempt *a = xcalloc(1, sizeof *a);
	a->f = f;
	a->refs = 1;
	a->type = t;
	snprintf(a->id, sizeof a->id, "%s", e->id);
	ledger_idem_key(e->id, a->key);
	commit_work_of_params(fulfil_type_name(t), e->params, &a->work);
	commit_work_key(&a->work, true, a->claim_keys[0], sizeof a->claim_keys[0]);
	a->nkeys = 1;
	if (a->work.has_work)
		commit_work_key(&a->work, false, a->claim_keys[a->nkeys++],
		                sizeof a->claim_keys[0]);
	snprintf(a->source, sizeof a->source, "%s", e->source ? e->source : "");
	fulfil_description(e, a->desc, sizeof a->desc);
	f->cur = a;
	return a;
}

/* Records how the attempt on id (if it is the current one) ended: the
 * claim's release tells the room (§12.4). The first outcome stays. */
static void outcome(struct fulfil *f, const char *id, bool ok, const char *link, const char *error)
{
	struct attempt *a = f->cur;
	if (!a || a->done || a->have_out || strcmp(a->id, id) != 0)
		return;
	a->have_out = true;
	a->ok = ok;
	a->out_link = link && *link ? xstrdup(link) : NULL;
	a->out_error = error && *error ? xstrdup(error) : NULL;
	if (!ok && !a->out_error)
		a->out_error = xstrdup("failed");
}

/* Ends the attempt: timers off, claim released with its outcome, the cycle
 * goes on (unless the fulfil is being quiesced or freed). */
static void finish(struct attempt *a)
{
	struct fulfil *f = a->f;
	if (!a->have_out) { /* e.g. the commitment was closed by another path meanwhile */
		a->have_out = true;
		a->out_error = xstrdup("the attempt ended without an outcome");
	}
	a->done = true;
	if (f) {
		uv_timer_stop(&f->watchdog);
		uv_timer_stop(&f->renew);
		if (a->claimed && a->coord && f->c.coord && f->c.coord(f->c.ud) == a->coord)
			for (size_t k = 0; k < a->nkeys; k++)
				if (a->key_won[k])
					coord_release_result(a->coord, a->claim_keys[k], a->ok,
					                     a->out_link, a->out_error);
		if (f->cur == a)
			f->cur = NULL;
	}
	attempt_unref(a);
	if (f)
		step(f);
}

/* Moves the ledger entry to status, passing through in_progress when the
 * table asks for it (pending → completed is not a transition). */
static int set_result(struct fulfil *f, const char *id, enum ledger_status to, const char *error,
                      const char *link, struct ga_err *err)
{
	struct ledger_entry e;
	if (ledger_get(f->c.ledger, id, &e) != 0)
		return err_set(err, "%s is not in the ledger any more", id);
	int64_t now = time_now_ms();
	if ((to == LEDGER_COMPLETED || to == LEDGER_FAILED) && e.status != LEDGER_IN_PROGRESS &&
	    ledger_set_status(f->c.ledger, id, LEDGER_IN_PROGRESS, now, NULL, err) != 0)
		return -1;
	return ledger_set_result(f->c.ledger, id, to, now, error, link, err);
}

static int set_status(struct fulfil *f, const char *id, enum ledger_status to, const char *error,
                      struct ga_err *err)
{
	return set_result(f, id, to, error, NULL, err);
}

/* Says text in the room when the agent is in one: true when handed to
 * the pipeline. chain 1: it follows up the host's request (chain 0). The
 * key say:done:<id> makes a second announcement after a crash a journal
 * drop, not a second chat. */
static bool room_say(struct fulfil *f, const char *id, const char *text)
{
	char target[PIPELINE_TARGET_MAX];
	if (!f->c.pipeline || !f->c.room_target ||
	    f->c.room_target(f->c.ud, target, sizeof target) != 0)
		return false;
	char say_id[LEDGER_ID_MAX + 8];
	snprintf(say_id, sizeof say_id, "done:%s", id);
	pipeline_say(f->c.pipeline, CONV_PLATFORM_SPACE, target, "commitment", text, strlen(text),
	             1, say_id, NULL, NULL);
	return true;
}

static void held_remove(struct fulfil *f, size_t i)
{
	free(f->held[i].text);
	memmove(&f->held[i], &f->held[i + 1], (f->nheld - i - 1) * sizeof f->held[0]);
	f->nheld--;
}

static void hold(struct fulfil *f, const char *id, enum fulfil_type t, const char *text)
{
	if (f->nheld == FULFIL_HELD_MAX) {
		struct decision d;
		decision_set(&d, VERDICT_DROP, "announce",
		             "%d announcements already wait for the room: the oldest is dropped",
		             FULFIL_HELD_MAX);
		note(f, f->held[0].id, f->held[0].t, STAGE_RECORD, &d);
		held_remove(f, 0);
	}
	struct held_announce *h = &f->held[f->nheld++];
	snprintf(h->id, sizeof h->id, "%s", id);
	h->t = t;
	h->since_ms = time_now_ms();
	h->text = xstrdup(text);
}

/* At each cycle: what waited for the room is said once the agent is back
 * in it; what waited too long is dropped, logged. */
static void flush_held(struct fulfil *f, int64_t now)
{
	struct decision d;
	for (size_t i = 0; i < f->nheld;) {
		struct held_announce *h = &f->held[i];
		if (now - h->since_ms > FULFIL_HELD_MS) {
			decision_set(&d, VERDICT_DROP, "announce",
			             "the agent was not back in the room within %d min: the "
			             "announcement is dropped",
			             (int)(FULFIL_HELD_MS / 60000));
			note(f, h->id, h->t, STAGE_RECORD, &d);
			held_remove(f, i);
		} else if (room_say(f, h->id, h->text)) {
			decision_set(&d, VERDICT_INFO, "announce",
			             "announced in the room (held %lld s while out of it)",
			             (long long)((now - h->since_ms) / 1000));
			note(f, h->id, h->t, STAGE_RECORD, &d);
			held_remove(f, i);
		} else {
			return; /* still out of the room: the rest waits too */
		}
	}
}

/* The announcement in the agent's voice (voice-phrases.json, through
 * the phrase hook) replaces text when there is one; else text stays the
 * plain line. */
static void in_voice(struct fulfil *f, enum fulfil_type t, const char *desc, const char *url,
                     char *text, size_t cap)
{
	char *voiced = f->c.phrase ? f->c.phrase(f->c.ud, t, desc, url) : NULL;
	if (voiced && voiced[0])
		snprintf(text, cap, "%s", voiced);
	free(voiced);
}

/* §6.12: a promise made in a Bluesky reply, once it became an issue or a
 * plan, is followed up by a reply under the post we answered (threaded
 * under its root), in the agent's voice, with the link. Through the
 * pipeline (validator, outbound: permission bluesky:reply:<did>, the
 * journal's key say:done:<id>: once, across crashes too). Other types and
 * a missing link or thread: the log only. */
static void bluesky_followup(struct fulfil *f, const char *id, const char *desc, const char *url,
                             enum fulfil_type t, struct decision *d)
{
	if (t != FULFIL_CREATE_ISSUE && t != FULFIL_CREATE_PLAN) {
		decision_set(d, VERDICT_INFO, "announce",
		             "a %s promised on Bluesky is not followed up there",
		             fulfil_type_name(t));
		return;
	}
	struct ledger_entry e;
	const cJSON *pr = ledger_get(f->c.ledger, id, &e) == 0 ? e.params : NULL;
	const char *uri =
	        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pr, "sourceThreadUri"));
	const char *cid =
	        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pr, "sourceThreadCid"));
	const char *ruri =
	        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pr, "sourceRootUri"));
	const char *rcid =
	        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pr, "sourceRootCid"));
	/* at://<did>/app.bsky.feed.post/<rkey>: the reply goes to that author */
	const char *did = uri && strncmp(uri, "at://", 5) == 0 ? uri + 5 : NULL;
	const char *slash = did ? strchr(did, '/') : NULL;
	if (!url || !*url || !f->c.pipeline || !cid || !*cid || !slash || slash == did) {
		decision_set(d, VERDICT_INFO, "announce", "no follow-up on Bluesky: %s",
		             !url || !*url    ? "no link to give"
		             : !f->c.pipeline ? "no pipeline here"
		                              : "the post it was promised under is not recorded");
		return;
	}
	char target[PIPELINE_TARGET_MAX];
	snprintf(target, sizeof target, "bluesky:reply:%.*s", (int)(slash - did), did);
	char text[ANNOUNCE_MAX];
	fulfil_announcement(desc, url, text, sizeof text);
	in_voice(f, t, desc, url, text, sizeof text);
	cJSON *extra = cJSON_CreateObject();
	cJSON *reply = cJSON_AddObjectToObject(extra, "reply");
	cJSON *root = cJSON_AddObjectToObject(reply, "root");
	cJSON_AddStringToObject(root, "uri", ruri && *ruri ? ruri : uri);
	cJSON_AddStringToObject(root, "cid", rcid && *rcid ? rcid : cid);
	cJSON *parent = cJSON_AddObjectToObject(reply, "parent");
	cJSON_AddStringToObject(parent, "uri", uri);
	cJSON_AddStringToObject(parent, "cid", cid);
	char say_id[LEDGER_ID_MAX + 8];
	snprintf(say_id, sizeof say_id, "done:%s", id);
	struct pipeline_say_req r = {.platform = CONV_PLATFORM_BLUESKY,
	                             .target = target,
	                             .source = "commitment",
	                             .text = text,
	                             .len = strlen(text),
	                             .chain = -1,
	                             .id = say_id,
	                             .extra = extra};
	pipeline_say_with(f->c.pipeline, &r);
	cJSON_Delete(extra);
	decision_set(d, VERDICT_INFO, "announce", "followed up on Bluesky under %s", uri);
}

/* plain: the line said instead of "Done — <description>: <url>" and
 * never replaced by the voice's phrase (NULL: that line, voiced in the
 * room). */
static void announce_text(struct fulfil *f, const char *id, const char *source, const char *desc,
                          const char *url, enum fulfil_type t, const char *plain)
{
	char text[ANNOUNCE_MAX];
	if (plain)
		snprintf(text, sizeof text, "%s", plain);
	else
		fulfil_announcement(desc, url, text, sizeof text);
	struct decision d;
	if (source && strcmp(source, "space") == 0) {
		/* the room hears it in the agent's voice (§2.8, voice-phrases.json);
		 * the owner gets the plain line naming what was done */
		if (!plain)
			in_voice(f, t, desc, url, text, sizeof text);
		if (!f->c.pipeline || !f->c.room_target) {
			decision_set(&d, VERDICT_INFO, "announce",
			             "no room here: the result is not announced there (%s)",
			             url ? url : "no link");
		} else if (room_say(f, id, text)) {
			decision_set(&d, VERDICT_INFO, "announce", "announced in the room");
		} else {
			hold(f, id, t, text);
			decision_set(&d, VERDICT_INFO, "announce",
			             "not in the room now: held, announced when the agent is back "
			             "(kept %d min) (%s)",
			             (int)(FULFIL_HELD_MS / 60000), url ? url : "no link");
		}
	} else if (source && strcmp(source, "bluesky") == 0) {
		bluesky_followup(f, id, desc, url, t, &d);
	} else if (source && strcmp(source, "owner") == 0) {
		if (f->c.notify_owner)
			f->c.notify_owner(f->c.ud, text);
		decision_set(&d, VERDICT_INFO, "announce", "the owner was told");
	} else {
		decision_set(&d, VERDICT_INFO, "announce",
		             "source '%s' has no announcement path here: logged only",
		             source ? source : "?");
	}
	note(f, id, t, STAGE_RECORD, &d);
}

static void announce(struct fulfil *f, const char *id, const char *source, const char *desc,
                     const char *url, enum fulfil_type t)
{
	announce_text(f, id, source, desc, url, t, NULL);
}

/* Completed: recorded with what was made, and announced unless quiet
 * (the work was done by someone else, or already existed: whoever did it
 * said so). */
static void complete_as(struct fulfil *f, const char *id, enum fulfil_type t, const char *source,
                        const char *desc, const char *url, const char *how, bool quiet)
{
	struct ga_err err = {{0}};
	struct decision d;
	outcome(f, id, true, url, NULL); /* made, whatever the ledger says next */
	if (set_result(f, id, LEDGER_COMPLETED, NULL, url, &err) != 0) {
		decision_set(&d, VERDICT_FAIL, "ledger", "cannot record completed (%s): %s", how,
		             err.msg);
		note(f, id, t, STAGE_RECORD, &d);
		return;
	}
	f->stats.completed++;
	decision_set(&d, VERDICT_SENT, "commitment", "completed (%s): %s", how,
	             url && url[0] ? url : "no link");
	note(f, id, t, STAGE_RECORD, &d);
	if (!quiet)
		announce(f, id, source, desc, url, t);
}

static void complete(struct fulfil *f, const char *id, enum fulfil_type t, const char *source,
                     const char *desc, const char *url, const char *how)
{
	complete_as(f, id, t, source, desc, url, how, false);
}

/* Tells config.abandoned that id is abandoned now (the ledger's entry). */
static void tell_abandoned(struct fulfil *f, const char *id)
{
	struct ledger_entry e;
	if (f->c.abandoned && ledger_get(f->c.ledger, id, &e) == 0 && e.status == LEDGER_ABANDONED)
		f->c.abandoned(f->c.ud, &e);
}

/* A failed attempt: failed, or abandoned at the third. Silent (§2.9): no
 * chat; the owner's terminal hears of an owner's commitment abandoned. */
static void fail_attempt(struct fulfil *f, const char *id, enum fulfil_type t, const char *source,
                         const char *desc, const char *rule, const char *reason)
{
	struct ga_err err = {{0}};
	struct decision d;
	outcome(f, id, false, NULL, reason);
	if (set_status(f, id, LEDGER_FAILED, reason, &err) != 0) {
		decision_set(&d, VERDICT_FAIL, "ledger", "cannot record the failure (%s): %s",
		             reason, err.msg);
		note(f, id, t, STAGE_RECORD, &d);
		return;
	}
	struct ledger_entry e;
	int attempts = ledger_get(f->c.ledger, id, &e) == 0 ? e.attempts : FULFIL_MAX_ATTEMPTS;
	f->stats.failed++;
	decision_set(&d, VERDICT_FAIL, rule, "attempt %d of %d failed: %s", attempts,
	             FULFIL_MAX_ATTEMPTS, reason);
	note(f, id, t, STAGE_RECORD, &d);
	if (fulfil_after_failure(attempts) != LEDGER_ABANDONED)
		return;
	if (ledger_set_status(f->c.ledger, id, LEDGER_ABANDONED, time_now_ms(), reason, &err) !=
	    0) {
		decision_set(&d, VERDICT_FAIL, "ledger", "cannot record abandoned: %s", err.msg);
		note(f, id, t, STAGE_RECORD, &d);
		return;
	}
	f->stats.abandoned++;
	decision_set(&d, VERDICT_DROP, "abandoned",
	             "abandoned after %d failed attempts; nobody is told in the room (silent "
	             "failure): %s",
	             attempts, reason);
	note(f, id, t, STAGE_RECORD, &d);
	tell_abandoned(f, id);
	if (source && strcmp(source, "owner") == 0 && f->c.notify_owner) {
		char msg[ANNOUNCE_MAX];
		snprintf(msg, sizeof msg, "Could not %s (%s) after %d attempts: %s",
		         fulfil_type_name(t), desc, attempts, reason);
		f->c.notify_owner(f->c.ud, msg);
	}
}

/* --- the send -------------------------------------------------------------------------------- */

/* An asynchronous answer for attempt a gives its reference back: the
 * fulfil to go on with, or NULL when the fulfil is gone or the attempt is
 * over (the answer is then dropped). */
static struct fulfil *answered(struct attempt *a)
{
	struct fulfil *f = a->done ? NULL : a->f;
	attempt_unref(a);
	return f;
}

/* A link found rather than made is journalled under the commitment's key,
 * so `commitments` shows it and a restart completes it without asking. */
static void journal_link(struct fulfil *f, const struct attempt *a, const char *url)
{
	struct ga_err err = {{0}};
	if (journal_intent(f->c.journal, a->key, "github", a->plan.target, NULL, time_now_ms(),
	                   &err) == 0)
		journal_done(f->c.journal, a->key, url, time_now_ms(), &err);
}

static void on_final(void *ud, const struct decision *final, const char *artifact)
{
	struct attempt *a = ud;
	struct fulfil *f = a->f;
	if (!f || a->done) {
		attempt_unref(a);
		return;
	}
	attempt_unref(a); /* the submit's ref; the attempt's own is still held */
	switch (fulfil_outcome_of(final)) {
	case FULFIL_OUT_SENT:
		complete(f, a->id, a->type, a->source, a->desc, artifact, "sent");
		break;
	case FULFIL_OUT_ALREADY:
		complete(f, a->id, a->type, a->source, a->desc,
		         journal_artifact(f->c.journal, a->key), "already made (journal)");
		break;
	case FULFIL_OUT_UNKNOWN:
		fail_attempt(f, a->id, a->type, a->source, a->desc, "port_unknown", final->reason);
		f->recheck_wanted = true;
		break;
	case FULFIL_OUT_DEFER: {
		struct decision d;
		decision_set(&d, VERDICT_INFO, "deferred", "not attempted now: %s", final->reason);
		outcome(f, a->id, false, NULL, d.reason);
		f->stats.deferred++;
		note(f, a->id, a->type, STAGE_OUTBOUND, &d);
		break;
	}
	case FULFIL_OUT_FAILED:
		fail_attempt(f, a->id, a->type, a->source, a->desc,
		             final->rule ? final->rule : "port", final->reason);
		break;
	}
	finish(a);
}

static void submit(struct attempt *a)
{
	struct fulfil *f = a->f;
	char conv[LEDGER_ID_MAX + 16];
	snprintf(conv, sizeof conv, "commitment:%s", a->id);
	struct outbound_msg m = {.platform = a->plan.platform,
	                         .target = a->plan.target,
	                         .source = "commitment",
	                         .conversation = conv,
	                         .message_id = a->id,
	                         .text = a->plan.text,
	                         .text_len = strlen(a->plan.text),
	                         .chain = -1,
	                         .idem_key = a->key,
	                         .extra = a->plan.extra};
	a->refs++;
	outbound_submit(f->c.outbound, &m, on_final, a);
}

/* The root of a workspace repository read: the plan gets the
 * documentation tasks for the files it lacks (§3.5; a listing that fails
 * counts as both missing), then goes. */
static void on_root(void *ud, const struct gh_result *res)
{
	struct attempt *a = ud;
	struct fulfil *f = a->f;
	if (f)
		f->gh_call = 0;
	if (!f || a->done) {
		attempt_unref(a);
		return;
	}
	attempt_unref(a);
	bool agents = false, scenarios = false;
	struct gh_content c;
	struct ga_err err = {{0}};
	if (res->kind == GH_OK && gh_content_parse(res->json, &c, &err) == 0) {
		for (size_t i = 0; i < c.n_entries; i++) {
			agents = agents || strcmp(c.entries[i].name, PLAN_DOC_AGENTS) == 0;
			scenarios = scenarios || strcmp(c.entries[i].name, PLAN_DOC_SCENARIOS) == 0;
		}
		gh_content_clear(&c);
	}
	struct decision d;
	if (fulfil_plan_docs(&a->plan, agents, scenarios, &d) != 0)
		note(f, a->id, a->type, STAGE_OUTBOUND, &d);
	submit(a);
}

static void docs_then_submit(struct attempt *a)
{
	struct fulfil *f = a->f;
	const char *slash = strchr(a->plan.repo, '/');
	if (a->type != FULFIL_CREATE_PLAN || !f->c.github || !slash ||
	    strncasecmp(slash + 1, PLAN_DOCS_REPO_PREFIX, strlen(PLAN_DOCS_REPO_PREFIX)) != 0) {
		submit(a);
		return;
	}
	char owner[FULFIL_REPO_MAX];
	snprintf(owner, sizeof owner, "%.*s", (int)(slash - a->plan.repo), a->plan.repo);
	struct ga_err err = {{0}};
	a->refs++;
	f->gh_call = gh_contents_get(f->c.github, owner, slash + 1, "", NULL, on_root, a, &err);
	if (f->gh_call == 0) {
		a->refs--;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "the workspace's root not read", "error", err.msg);
		struct decision d;
		if (fulfil_plan_docs(&a->plan, false, false, &d) != 0)
			note(f, a->id, a->type, STAGE_OUTBOUND, &d);
		submit(a);
	}
}

/* create_plan: an open plan with the same title is the plan (no second
 * one; an exact title match only). create_issue: an open issue created in
 * the last FULFIL_SAME_RECENT_MS with the same or a near-identical title
 * (fulfil_same_title) is the issue — another agent, or an earlier promise
 * of ours, opened it: linked, not opened again, nothing said. */
static void on_plans(void *ud, const struct gh_result *res)
{
	struct attempt *a = ud;
	struct fulfil *f = a->f;
	if (f)
		f->gh_call = 0;
	if (!f || a->done) {
		attempt_unref(a);
		return;
	}
	attempt_unref(a);
	const char *found = NULL;
	bool plan = a->type == FULFIL_CREATE_PLAN;
	int64_t now = time_now_ms();
	if (res->kind == GH_OK) {
		const cJSON *it;
		cJSON_ArrayForEach(it, res->json)
		{
			const char *title = cJSON_GetStringValue(cJSON_GetObjectItem(it, "title"));
			int64_t created = 0;
			const char *at =
			        cJSON_GetStringValue(cJSON_GetObjectItem(it, "created_at"));
			if (!title || cJSON_GetObjectItem(it, "pull_request"))
				continue;
			bool same = plan ? strcasecmp(title, a->plan.title) == 0
			                 : fulfil_same_title(title, a->plan.title) && at &&
			                            time_parse_iso(at, &created) == 0 &&
			                            now - created < FULFIL_SAME_RECENT_MS;
			if (same) {
				found = cJSON_GetStringValue(cJSON_GetObjectItem(it, "html_url"));
				break;
			}
		}
	} else {
		const char *rule = plan ? "plan_dedup" : "issue_dedup";
		struct decision d;
		decision_set(&d, VERDICT_FAIL, rule, "cannot list the open %s: %s",
		             plan ? "plans" : "issues", res->msg);
		note(f, a->id, a->type, STAGE_OUTBOUND, &d);
		/* a repository we cannot read is one we cannot write to either;
		 * a refused token (401) goes on to the send, whose port tells the
		 * owner and stops the daemon — one path for a refused token */
		if (res->kind == GH_ERR_NOT_FOUND || res->kind == GH_ERR_GONE ||
		    res->kind == GH_ERR_FORBIDDEN) {
			fail_attempt(f, a->id, a->type, a->source, a->desc, rule, res->msg);
			finish(a);
			return;
		}
		/* transient: the journal still guards the key; create it */
	}
	if (found) {
		journal_link(f, a, found);
		if (plan)
			complete(f, a->id, a->type, a->source, a->desc, found,
			         "deduplicated: an open plan has this title");
		else
			complete_as(f, a->id, a->type, a->source, a->desc, found,
			            "deduplicated: a recent open issue has this title", true);
		finish(a);
		return;
	}
	docs_then_submit(a);
}

/* The workspace module's answer to a create_workspace: the link is the
 * artifact (journalled under the commitment's key, so `commitments` shows
 * it and a restart completes it without asking again). Created → the
 * usual announcement; found → not created, and the room is told that it
 * exists, with the link. */
static void on_workspace(void *ud, bool ok, const char *text)
{
	struct attempt *a = ud;
	struct fulfil *f = answered(a);
	if (!f)
		return;
	if (!ok) {
		fail_attempt(f, a->id, a->type, a->source, a->desc, "workspace_create",
		             text && *text ? text : "the workspace module refused");
		finish(a);
		return;
	}
	cJSON *j = cJSON_Parse(text ? text : "");
	const char *url = json_string_or(j, "url", NULL);
	const char *full = json_string_or(j, "fullName", NULL);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "found")) || !url || !full) {
		char why[FULFIL_TARGET_MAX];
		snprintf(why, sizeof why,
		         "the workspace module answered without a workspace: %.160s",
		         text ? text : "");
		cJSON_Delete(j);
		fail_attempt(f, a->id, a->type, a->source, a->desc, "workspace_create", why);
		finish(a);
		return;
	}
	journal_link(f, a, url);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "created"))) {
		complete(f, a->id, a->type, a->source, a->desc, url, "created from the template");
	} else {
		char how[FULFIL_REPO_MAX + 64], line[ANNOUNCE_MAX];
		snprintf(how, sizeof how, "%s exists already: found, not created", full);
		complete_as(f, a->id, a->type, a->source, a->desc, url, how, true);
		fulfil_workspace_exists(full, url, line, sizeof line);
		announce_text(f, a->id, a->source, a->desc, url, a->type, line);
	}
	cJSON_Delete(j);
	finish(a);
}

/* create_workspace: the workspace module's create (find first, under its
 * lock; watched). A Bluesky promise's thread goes with the watch. */
static void go_workspace(struct attempt *a, const struct ledger_entry *e)
{
	struct fulfil *f = a->f;
	struct ga_err err = {{0}};
	const char *thread = json_string_or(e->params, "sourceThreadUri", NULL);
	a->refs++;
	if (!f->c.create_workspace) {
		err_set(&err, "the workspace module is not wired in this agent");
	} else if (f->c.create_workspace(f->c.ud, a->plan.repo, a->plan.title, a->plan.text, thread,
	                                 on_workspace, a, &err) == 0) {
		return;
	}
	a->refs--;
	fail_attempt(f, a->id, a->type, a->source, a->desc, "workspace_create", err.msg);
	finish(a);
}

static void on_watchdog(uv_timer_t *t)
{
	struct fulfil *f = t->data;
	struct attempt *a = f->cur;
	if (!a || a->done)
		return;
	char reason[128];
	snprintf(reason, sizeof reason, "Timed out: in_progress for >%" PRId64 "m",
	         f->c.in_progress_timeout_ms / 60000);
	fail_attempt(f, a->id, a->type, a->source, a->desc, "in_progress_timeout", reason);
	finish(a);
}

static void go_send(struct attempt *a)
{
	struct fulfil *f = a->f;
	struct ga_err err = {{0}};
	struct decision d;
	struct ledger_entry e;
	if (ledger_get(f->c.ledger, a->id, &e) != 0 || !ledger_status_open(e.status)) {
		finish(a);
		return;
	}
	if (e.status != LEDGER_IN_PROGRESS &&
	    ledger_set_status(f->c.ledger, a->id, LEDGER_IN_PROGRESS, time_now_ms(), NULL, &err) !=
	            0) {
		decision_set(&d, VERDICT_FAIL, "ledger", "cannot record in_progress: %s", err.msg);
		note(f, a->id, a->type, STAGE_RECORD, &d);
		finish(a);
		return;
	}
	decision_set(&d, VERDICT_PASS, "commitment", "fulfilling %s → %s (attempt %d of %d)",
	             fulfil_type_name(a->type), a->plan.target, e.attempts + 1,
	             FULFIL_MAX_ATTEMPTS);
	note(f, a->id, a->type, STAGE_OUTBOUND, &d);
	uv_timer_start(&f->watchdog, on_watchdog, (uint64_t)f->c.in_progress_timeout_ms, 0);
	if (a->type == FULFIL_CREATE_WORKSPACE) {
		go_workspace(a, &e);
		return;
	}
	if ((a->type == FULFIL_CREATE_PLAN || a->type == FULFIL_CREATE_ISSUE) && f->c.github) {
		char owner[FULFIL_REPO_MAX], name[FULFIL_REPO_MAX];
		const char *slash = strchr(a->plan.repo, '/');
		snprintf(owner, sizeof owner, "%.*s", (int)(slash - a->plan.repo), a->plan.repo);
		snprintf(name, sizeof name, "%s", slash + 1);
		struct gh_issue_query q = {.state = "open", .labels = "plan", .max_items = 100};
		if (a->type == FULFIL_CREATE_ISSUE)
			q = (struct gh_issue_query){.state = "open",
			                            .sort = "created",
			                            .direction = "desc",
			                            .max_items = 50};
		a->refs++;
		f->gh_call = gh_issues_list(f->c.github, owner, name, &q, on_plans, a, &err);
		if (f->gh_call == 0) {
			a->refs--;
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "plan dedup read not queued", "error",
			       err.msg);
			submit(a);
		}
		return;
	}
	submit(a);
}

/* --- the claim ----------------------------------------------------------------------------- */

static void on_renew(void *ud, enum coord_result r, const char *holder, const char *why)
{
	struct attempt *a = ud;
	if (a->f && !a->done && r != COORD_WON)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "claim not renewed", "commitment", a->id, "result",
		       coord_result_name(r), "holder", holder, "why", why);
	attempt_unref(a);
}

static void on_renew_timer(uv_timer_t *t)
{
	struct fulfil *f = t->data;
	struct attempt *a = f->cur;
	if (!a || a->done || !a->claimed || !f->c.coord || f->c.coord(f->c.ud) != a->coord)
		return;
	for (size_t k = 0; k < a->nkeys; k++) {
		if (!a->key_won[k])
			continue;
		a->refs++;
		if (coord_renew(a->coord, a->claim_keys[k], FULFIL_CLAIM_TTL_MS, on_renew, a) != 0)
			a->refs--;
	}
}

static void claim_next(struct attempt *a);

static void on_claim(void *ud, enum coord_result r, const char *holder, const char *why)
{
	struct attempt *a = ud;
	struct fulfil *f = a->f;
	if (!f || a->done) {
		attempt_unref(a);
		return;
	}
	attempt_unref(a);
	struct decision d;
	const char *key = a->claim_keys[a->ikey];
	if (r == COORD_HELD && holder && strcmp(holder, f->agent_name) != 0) {
		/* Another agent has the work: it is theirs while they hold it
		 * (a room's "Claim conflict" included). Nothing is said; a
		 * later cycle finds it done by them, or free again. */
		decision_set(&d, VERDICT_INFO, "claim",
		             "%s holds the claim %s: the work is theirs for now, nothing said",
		             holder, key);
		note(f, a->id, a->type, STAGE_GATE, &d);
		f->stats.deferred++;
		if (!a->have_out) { /* releases what we hold with no result said */
			a->have_out = true;
			a->out_error = xstrdup("the work is another agent's");
		}
		finish(a);
		return;
	}
	if (r == COORD_WON || r == COORD_HELD) {
		a->claimed = true;
		a->key_won[a->ikey] = true;
		decision_set(&d, VERDICT_PASS, "claim", "claimed %s (renewed every %" PRIu64 " s)",
		             key, f->c.claim_renew_ms / 1000);
	} else {
		/* Nobody to coordinate with (not in a room, no Redis): the
		 * commitment is ours alone. */
		decision_set(&d, VERDICT_PASS, "claim", "no claim on %s (%s): going on", key,
		             why ? why : "unavailable");
	}
	note(f, a->id, a->type, STAGE_GATE, &d);
	a->ikey++;
	claim_next(a);
}

/* Claims the work's keys one after the other, then sends. */
static void claim_next(struct attempt *a)
{
	struct fulfil *f = a->f;
	if (a->ikey < a->nkeys && a->coord) {
		a->refs++;
		if (coord_claim(a->coord, a->claim_keys[a->ikey], FULFIL_CLAIM_TTL_MS, on_claim,
		                a) == 0)
			return;
		a->refs--;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "claim not asked", "key", a->claim_keys[a->ikey]);
	}
	if (a->claimed)
		uv_timer_start(&f->renew, on_renew_timer, f->c.claim_renew_ms, f->c.claim_renew_ms);
	go_send(a);
}

/* Another member reported this work done (the room's action_result under
 * either of its names): completed with their link, nothing said. */
static bool done_by_peer(struct attempt *a)
{
	struct fulfil *f = a->f;
	if (!f->c.peer_done)
		return false;
	char link[JOURNAL_FIELD_MAX] = "";
	for (size_t k = 0; k < a->nkeys; k++) {
		const char *colon = strchr(a->claim_keys[k], ':');
		char who[128];
		if (!colon || !f->c.peer_done(f->c.ud, a->work.action, colon + 1, who, sizeof who,
		                              link, sizeof link))
			continue;
		char how[256];
		snprintf(how, sizeof how, "done by %s, who reported it in the room", who);
		complete_as(f, a->id, a->type, a->source, a->desc, link[0] ? link : NULL, how,
		            true);
		return true;
	}
	return false;
}

static void go_claim(struct attempt *a)
{
	struct fulfil *f = a->f;
	if (done_by_peer(a)) {
		finish(a);
		return;
	}
	a->coord = f->c.coord ? f->c.coord(f->c.ud) : NULL;
	a->ikey = 0;
	claim_next(a);
}

/* --- reconcile ----------------------------------------------------------------------------- */

static void on_reconciled(void *ud, int exists, const char *artifact)
{
	struct attempt *a = ud;
	struct fulfil *f = answered(a);
	if (!f)
		return;
	f->stats.reconciled++;
	struct decision d;
	if (exists == 1) {
		complete(f, a->id, a->type, a->source, a->desc, artifact,
		         "reconciled: found on the platform by its key");
		finish(a);
	} else if (exists == 0) {
		decision_set(&d, VERDICT_INFO, "reconcile",
		             "the earlier attempt made nothing (no artifact carries %s): sending",
		             a->key);
		note(f, a->id, a->type, STAGE_OUTBOUND, &d);
		go_claim(a);
	} else {
		decision_set(&d, VERDICT_INFO, "reconcile",
		             "cannot tell whether the earlier attempt made it: left unresolved, "
		             "asked again on a later cycle");
		note(f, a->id, a->type, STAGE_OUTBOUND, &d);
		f->stats.deferred++;
		finish(a);
	}
}

/* --- the cycle ------------------------------------------------------------------------------- */

/* One commitment. True when it went asynchronous (step is called again
 * when it is over). */
static bool consider(struct fulfil *f, const char *id)
{
	struct ledger_entry e;
	if (ledger_get(f->c.ledger, id, &e) != 0 || !fulfil_is_work(&e, false))
		return false;
	int ti = fulfil_type_parse(e.action);
	if (ti < 0)
		return false;
	enum fulfil_type t = (enum fulfil_type)ti;
	char why[FULFIL_REPO_MAX + 128];
	if (fulfil_type_is_github(t) && f->c.social_only) {
		snprintf(why, sizeof why,
		         "a social-only agent never fulfils GitHub commitments (%s): left pending",
		         fulfil_type_name(t));
		note_wait(f, &e, t, "social_only", why);
		return false;
	}
	if (!outbound_has_port(f->c.outbound, fulfil_type_platform(t))) {
		enum conv_platform pf = fulfil_type_platform(t);
		snprintf(why, sizeof why,
		         "%s is off in this agent (%s): left pending until it is on",
		         pf == CONV_PLATFORM_GITHUB    ? "GitHub"
		         : pf == CONV_PLATFORM_BLUESKY ? "Bluesky"
		                                       : conv_platform_name(pf),
		         pf == CONV_PLATFORM_GITHUB
		                 ? "AGENT_GITHUB_TOKEN is not set, or its client "
		                   "could not start"
		         : pf == CONV_PLATFORM_BLUESKY ? "AGENT_BLUESKY_USERNAME and "
		                                         "AGENT_BLUESKY_PASSWORD are not set, or "
		                                         "its client could not start"
		                                       : "it could not start");
		note_wait(f, &e, t, "no_port", why);
		return false;
	}
	if (t == FULFIL_CREATE_WORKSPACE && !(f->c.workspaces_on && f->c.workspaces_on(f->c.ud))) {
		note_wait(f, &e, t, "no_workspaces",
		          "workspaces are off in this agent (AGENT_GITHUB_USERNAME is not set, or "
		          "the workspace service could not start): left pending until they are on");
		return false;
	}
	char repo[FULFIL_REPO_MAX];
	if (fulfil_type_is_github(t) && fulfil_repo_of(e.params, repo) == 0) {
		const struct fulfil_cooldown *cd = fulfil_cooled(f->cd, f->ncd, repo);
		if (cd) {
			snprintf(why, sizeof why,
			         "repo on cooldown: %s (%d failed %s in 7 days); deferred, no "
			         "attempt "
			         "used",
			         cd->repo, cd->failures, fulfil_type_name(cd->type));
			note_wait(f, &e, t, "repo_cooldown", why);
			return false;
		}
	}
	struct attempt *a = attempt_new(f, &e, t);
	struct decision d;
	if (fulfil_prepare(&e, &a->plan, &d) != 0) {
		fail_attempt(f, a->id, t, a->source, a->desc, "commitment_params", d.reason);
		a->done = true;
		f->cur = NULL;
		attempt_unref(a);
		return false;
	}
	a->have_plan = true;
	switch (journal_state_of(f->c.journal, a->key)) {
	case JOURNAL_DONE:
		complete(f, a->id, t, a->source, a->desc, journal_artifact(f->c.journal, a->key),
		         "already made (journal done)");
		a->done = true;
		f->cur = NULL;
		attempt_unref(a);
		return false;
	case JOURNAL_INTENT: {
		struct ga_err err = {{0}};
		a->refs++;
		if (outbound_reconcile_key(f->c.outbound, a->key, on_reconciled, a, &err) == 0)
			return true;
		a->refs--;
		snprintf(why, sizeof why, "an earlier attempt is unresolved (%.200s): waiting",
		         err.msg);
		note_wait(f, &e, t, "reconcile_wait", why);
		f->stats.deferred++;
		if (outbound_key_busy(f->c.outbound, a->key))
			f->recheck_wanted = true;
		a->done = true;
		f->cur = NULL;
		attempt_unref(a);
		return false;
	}
	default:
		go_claim(a);
		return true;
	}
}

static void on_recheck(uv_timer_t *t)
{
	struct fulfil *f = t->data;
	if (!f->quiesced && f->job)
		sched_job_trigger(f->job);
}

static void cycle_end(struct fulfil *f)
{
	free(f->work);
	f->work = NULL;
	f->nwork = f->iwork = 0;
	if (f->running) {
		f->running = false;
		sched_job_done(f->job);
	}
	if (f->recheck_wanted && !f->quiesced)
		uv_timer_start(&f->recheck, on_recheck, FULFIL_RECHECK_MS, 0);
	f->recheck_wanted = false;
}

/* Goes through the work until an attempt goes asynchronous. Re-entered
 * from an attempt that ended at once (an immediate drop), it returns and
 * the outer loop goes on: no recursion as deep as the work list. */
static void step(struct fulfil *f)
{
	if (f->freeing || f->stepping)
		return;
	f->stepping = true;
	while (!f->quiesced && !f->cur && f->iwork < f->nwork) {
		const char *id = f->work[f->iwork++];
		consider(f, id);
	}
	f->stepping = false;
	if (!f->cur)
		cycle_end(f);
}

struct collect {
	struct fulfil *f;
	int64_t now;
	/* sweep */
	char (*ids)[LEDGER_ID_MAX];
	enum fulfil_sweep *what;
	struct decision *why;
	size_t nsweep;
	/* facts and work */
	struct fulfil_fact *facts;
	char (*repos)[FULFIL_REPO_MAX];
	size_t nfacts;
	char (*work)[LEDGER_ID_MAX];
	size_t nwork;
	size_t cap;
};

static void collect_sweep(void *ud, const struct ledger_entry *e)
{
	struct collect *c = ud;
	if (c->nsweep >= c->cap || fulfil_type_parse(e->action) < 0)
		return;
	struct decision d;
	enum fulfil_sweep s = fulfil_sweep_of(e, c->now, false, c->f->c.in_progress_timeout_ms, &d);
	if (s == FULFIL_SWEEP_NONE)
		return;
	snprintf(c->ids[c->nsweep], LEDGER_ID_MAX, "%s", e->id);
	c->what[c->nsweep] = s;
	c->why[c->nsweep] = d;
	c->nsweep++;
}

static void collect_work(void *ud, const struct ledger_entry *e)
{
	struct collect *c = ud;
	int t = fulfil_type_parse(e->action);
	if (t < 0 || c->nfacts >= c->cap)
		return;
	struct fulfil_fact *fa = &c->facts[c->nfacts];
	fa->type = (enum fulfil_type)t;
	fa->repo = fulfil_repo_of(e->params, c->repos[c->nfacts]) == 0 ? c->repos[c->nfacts] : NULL;
	fa->status = e->status;
	fa->created_ms = e->created_ms;
	fa->updated_ms = e->updated_ms;
	c->nfacts++;
	if (fulfil_is_work(e, false))
		snprintf(c->work[c->nwork++], LEDGER_ID_MAX, "%s", e->id);
}

static void sweep(struct fulfil *f, int64_t now)
{
	size_t cap = f->c.ledger->n + 1;
	struct collect c = {.f = f, .now = now, .cap = cap};
	c.ids = xcalloc(cap, sizeof *c.ids);
	c.what = xcalloc(cap, sizeof *c.what);
	c.why = xcalloc(cap, sizeof *c.why);
	ledger_each(f->c.ledger, collect_sweep, &c);
	for (size_t i = 0; i < c.nsweep; i++) {
		struct ledger_entry e;
		if (ledger_get(f->c.ledger, c.ids[i], &e) != 0)
			continue;
		enum fulfil_type t = (enum fulfil_type)fulfil_type_parse(e.action);
		char key[LEDGER_IDEM_KEY_MAX], desc[FULFIL_DESC_MAX + 1], source[LEDGER_FIELD_MAX];
		ledger_idem_key(e.id, key);
		fulfil_description(&e, desc, sizeof desc);
		snprintf(source, sizeof source, "%s", e.source ? e.source : "");
		if (journal_state_of(f->c.journal, key) == JOURNAL_DONE) {
			/* it was made: completed, whatever the clock says */
			complete(f, c.ids[i], t, source, desc, journal_artifact(f->c.journal, key),
			         "already made (journal done)");
			continue;
		}
		if (c.what[i] == FULFIL_SWEEP_STALE) {
			struct ga_err err = {{0}};
			bool gone = ledger_set_status(f->c.ledger, c.ids[i], LEDGER_ABANDONED, now,
			                              "Stale: exceeded 24h threshold", &err) == 0;
			if (gone)
				f->stats.abandoned++;
			else
				decision_set(&c.why[i], VERDICT_FAIL, "ledger",
				             "cannot abandon a stale commitment: %s", err.msg);
			note(f, c.ids[i], t, STAGE_RECORD, &c.why[i]);
			if (gone)
				tell_abandoned(f, c.ids[i]);
		} else {
			fail_attempt(f, c.ids[i], t, source, desc, "in_progress_timeout",
			             c.why[i].reason);
		}
	}
	free(c.ids);
	free(c.what);
	free(c.why);
}

static void run(void *ud, struct sched_job *job)
{
	struct fulfil *f = ud;
	(void)job;
	if (f->quiesced || f->freeing) {
		sched_job_done(job);
		return;
	}
	f->running = true;
	f->stats.cycles++;
	uv_timer_stop(&f->recheck);
	int64_t now = time_now_ms();
	/* 1. stale and timed out; what waited for the room */
	sweep(f, now);
	flush_held(f, now);
	/* 2. cooldowns and the work, oldest first */
	size_t cap = f->c.ledger->n + 1;
	struct collect c = {.f = f, .now = now, .cap = cap};
	c.facts = xcalloc(cap, sizeof *c.facts);
	c.repos = xcalloc(cap, sizeof *c.repos);
	c.work = xcalloc(cap, sizeof *c.work);
	ledger_each(f->c.ledger, collect_work, &c);
	f->ncd = fulfil_cooldowns(c.facts, c.nfacts, now, f->cd, FULFIL_COOLDOWN_MAX);
	free(c.facts);
	free(c.repos);
	free(f->work);
	f->work = c.work;
	f->nwork = c.nwork;
	f->iwork = 0;
	step(f);
}

static void on_stop(void *ud, struct sched_job *job)
{
	(void)job;
	fulfil_quiesce(ud);
}

/* --- lifetime ----------------------------------------------------------------------------------
 */

struct fulfil *fulfil_new(const struct fulfil_config *c, struct ga_err *err)
{
	if (!c || !c->loop || !c->sched || !c->ledger || !c->journal || !c->outbound) {
		err_set(err, "the fulfilment pipeline needs the loop, the scheduler, the ledger, "
		             "the journal and outbound");
		return NULL;
	}
	struct fulfil *f = xcalloc(1, sizeof *f);
	f->c = *c;
	if (!f->c.interval_ms)
		f->c.interval_ms = FULFIL_INTERVAL_MS;
	if (f->c.in_progress_timeout_ms <= 0)
		f->c.in_progress_timeout_ms = FULFIL_IN_PROGRESS_TIMEOUT_MS;
	if (!f->c.claim_renew_ms)
		f->c.claim_renew_ms = FULFIL_CLAIM_RENEW_MS;
	f->agent_name = xstrdup(c->agent_name ? c->agent_name : "");
	uv_timer_init(c->loop, &f->watchdog);
	uv_timer_init(c->loop, &f->renew);
	uv_timer_init(c->loop, &f->recheck);
	f->watchdog.data = f->renew.data = f->recheck.data = f;
	f->handles_open = 3;
	struct sched_job_opts o = {.name = JOB_NAME,
	                           .interval_ms = f->c.interval_ms,
	                           .jitter_pct = FULFIL_JITTER_PCT,
	                           .first_delay_ms = 0,
	                           .run = run,
	                           .on_stop = on_stop,
	                           .ud = f};
	f->job = sched_add(c->sched, &o);
	if (!f->job) {
		err_set(err, "cannot add the '%s' job to the scheduler (name taken or %d jobs)",
		        JOB_NAME, SCHED_MAX_JOBS);
		fulfil_free(f);
		return NULL;
	}
	return f;
}

void fulfil_quiesce(struct fulfil *f)
{
	if (!f || f->quiesced)
		return;
	f->quiesced = true;
	uv_timer_stop(&f->recheck);
	uv_timer_stop(&f->renew);
	/* The scheduler's stop must not wait for a GitHub answer: the attempt
	 * in flight finishes through outbound's callback (outbound_close
	 * answers it) without holding the job. */
	if (f->running) {
		f->running = false;
		sched_job_done(f->job);
	}
}

static void on_handle_closed(uv_handle_t *h)
{
	struct fulfil *f = h->data;
	if (--f->handles_open == 0) {
		free(f->agent_name);
		free(f->work);
		free(f);
	}
}

void fulfil_free(struct fulfil *f)
{
	if (!f)
		return;
	fulfil_quiesce(f);
	f->freeing = true;
	while (f->nheld)
		held_remove(f, f->nheld - 1);
	if (f->gh_call && f->c.github) {
		/* dropped without a call back: give its reference back */
		if (gh_cancel(f->c.github, f->gh_call) == 0 && f->cur)
			attempt_unref(f->cur);
		f->gh_call = 0;
	}
	if (f->cur) {
		struct attempt *a = f->cur;
		f->cur = NULL;
		a->f = NULL;
		a->done = true;
		attempt_unref(a);
	}
	uv_close((uv_handle_t *)&f->watchdog, on_handle_closed);
	uv_close((uv_handle_t *)&f->renew, on_handle_closed);
	uv_close((uv_handle_t *)&f->recheck, on_handle_closed);
}

void fulfil_stats(const struct fulfil *f, struct fulfil_stats *out)
{
	*out = f->stats;
}

cJSON *fulfil_status(const struct fulfil *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *by = cJSON_AddObjectToObject(o, "commitments");
	for (int s = 0; s < LEDGER_STATUS_COUNT; s++)
		cJSON_AddNumberToObject(by, ledger_status_name((enum ledger_status)s),
		                        (double)ledger_count(f->c.ledger, (enum ledger_status)s));
	cJSON_AddNumberToObject(o, "cycles", (double)f->stats.cycles);
	cJSON_AddNumberToObject(o, "completed", (double)f->stats.completed);
	cJSON_AddNumberToObject(o, "failed", (double)f->stats.failed);
	cJSON_AddNumberToObject(o, "abandoned", (double)f->stats.abandoned);
	cJSON_AddNumberToObject(o, "reconciled", (double)f->stats.reconciled);
	cJSON_AddNumberToObject(o, "deferred", (double)f->stats.deferred);
	cJSON_AddBoolToObject(o, "fulfilling", f->cur != NULL);
	cJSON_AddNumberToObject(o, "announcementsWaitingForRoom", (double)f->nheld);
	cJSON *cd = cJSON_AddArrayToObject(o, "repoCooldowns");
	for (size_t i = 0; i < f->ncd; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "repo", f->cd[i].repo);
		cJSON_AddNumberToObject(c, "failures", f->cd[i].failures);
		cJSON_AddNumberToObject(c, "untilMs", (double)f->cd[i].until_ms);
		cJSON_AddItemToArray(cd, c);
	}
	if (f->stats.last_error[0])
		cJSON_AddStringToObject(o, "lastError", f->stats.last_error);
	else
		cJSON_AddNullToObject(o, "lastError");
	return o;
}
