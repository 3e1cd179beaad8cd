/* The agent's life on Bluesky, wired on the loop. See bsky.h. */
#include "modules/bluesky/bsky.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "adapters/atproto/atproto.h"
#include "adapters/atproto/port.h"
#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "local-tools/tools.h"
#include "modules/budget/budget.h"
#include "modules/commitments/ledger.h"
#include "modules/compose/compose.h"
#include "modules/identity/self.h"
#include "modules/journal/journal.h"
#include "modules/participation/commitment.h"
#include "modules/pipeline/pipeline.h"
#include "modules/scheduler/sched.h"
#include "modules/skills/skills.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

#define LOG_COMP "bluesky"

struct bsky;

/* One notification on its walk. */
struct bnote {
	struct bsky *b;
	bool used;
	bool ended; /* the record stage was seen */
	bool react; /* the gate said REACT */
	bool sent;  /* the reply was created */
	bool send_failed;
	bool composing; /* compose() was called */
	char uri[BSKY_URI_MAX];
	char cid[ATP_CID_MAX];
	char author_did[BSKY_DID_MAX];
	char author_handle[BSKY_HANDLE_MAX];
	enum bsky_reason reason;
	char *text;
	char parent_uri[BSKY_URI_MAX];
	char root_uri[BSKY_URI_MAX];
	char root_cid[ATP_CID_MAX];
	char conversation[BSKY_URI_MAX + 16];
	int64_t indexed_ms;
	int64_t carried;
	bool owner, agent, to_us;
	int depth;
	struct {
		char did[BSKY_DID_MAX];
		char handle[BSKY_HANDLE_MAX + 2];
		char *text;
		bool agent;
	} thread[BSKY_THREAD_MAX];
	size_t nthread;
	char ritual[128];
	/* compose */
	struct pipeline_job *job;
	struct compose_run *run;
	struct tools_sink sink;
	struct compose_tool tools[TOOLS_MAX];
	size_t ntools;
	char *reply;
	int64_t chain_out; /* the gate's, for a reply sent with its commitments */
	bool courtesy;
	bool saying;     /* the reply goes out through pipeline_say_ctx (§6.12) */
	cJSON *promises; /* [{type, params}]: enqueued once the reply is sent */
	bool exit_like;
	char exit_uri[BSKY_URI_MAX];
	char exit_cid[ATP_CID_MAX];
	char exit_reason[160];
	uv_timer_t timer;
};

struct batch_item {
	char uri[BSKY_URI_MAX];
	int64_t indexed_ms;
	bool done;
	bool started;
	int prio;
	bool owner;
	cJSON *n; /* the notification (owned) until started */
};

#define BSKY_KEY_MAX (BSKY_URI_MAX + 8) /* "reply:<uri>"; the journal refuses > 128 */

struct ref_entry {
	char key[BSKY_KEY_MAX];
	cJSON *extra;
};

struct like_entry {
	char uri[BSKY_URI_MAX];
	char cid[ATP_CID_MAX];
	char did[BSKY_DID_MAX];
	char conversation[BSKY_URI_MAX + 16];
	char message_id[BSKY_URI_MAX];
	char why[120];
};

struct attempt {
	char uri[BSKY_URI_MAX];
	int n;
};

struct bsky {
	struct bsky_config c;
	char *agent_name, *owner_did, *owner_handle, *github, *soul, *self_path;
	struct bsky_state *st;
	struct bsky_pacing pacing;
	bool started, quiescing, logged_in;
	char did[BSKY_DID_MAX];
	char handle[BSKY_HANDLE_MAX];
	/* jobs */
	struct sched_job *j_aware, *j_feed, *j_expr, *j_peers, *j_ritual;
	struct sched_job *aware_running;
	struct sched_job *feed_running;
	/* the awareness check */
	struct batch_item *batch;
	size_t nbatch;
	int pages;
	int64_t last_check_ms;
	uint64_t checks;
	struct bnote notes[BSKY_MAX_INFLIGHT];
	/* the port */
	struct outbound_port inner;
	struct ref_entry refs[BSKY_REFS_MAX];
	struct like_entry likes[BSKY_LIKES_MAX];
	size_t nlikes;
	uv_timer_t like_timer;
	struct attempt attempts[BSKY_MAX_INFLIGHT * 2];
	size_t attempt_next;
	/* feed */
	uint64_t pruned;
	bool warmed;
	bool peer_busy;
	/* proactive posts: an expression or a ritual's opening, one at a time */
	bool posting;
	struct compose_run *post_run;
	char *post_text;
	char *post_user;    /* the user message of the first draft (a revision repeats it) */
	bool post_revised;  /* the expression's one revision was asked for (§7.1) */
	char post_kind[16]; /* "expression" / "ritual" */
	char post_ritual[128];
	char post_date[11];
	struct tools_sink post_sink;
	struct compose_tool post_tool;
	char *recent[BSKY_RECENT_POSTS]; /* our recent top-level posts (echo window) */
	size_t nrecent;
	bool warned_skill[2];
	int closing_handles;
};

static int64_t now_ms(void)
{
	return time_now_ms();
}

static void note_decision(struct bsky *b, const char *conversation, const char *id,
                          enum decision_stage stage, enum decision_verdict v, const char *rule,
                          const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void note_decision(struct bsky *b, const char *conversation, const char *id,
                          enum decision_stage stage, enum decision_verdict v, const char *rule,
                          const char *fmt, ...)
{
	struct decision d;
	char buf[DECISION_REASON_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	decision_set(&d, v, rule, "%s", buf);
	pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, conversation ? conversation : "",
	              id ? id : "", stage, &d);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, rule, "id", id ? id : "", "reason", buf);
}

static void save_state(struct bsky *b)
{
	struct ga_err err = {{0}};
	if (bsky_state_save(b->st, b->c.st, now_ms(), &err) < 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "could not save the Bluesky state", "error",
		       err.msg);
}

static void local_now(int64_t ms, int *wday, int *hour, char date[11])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	localtime_r(&t, &tm);
	if (wday)
		*wday = tm.tm_wday;
	if (hour)
		*hour = tm.tm_hour;
	if (date) {
		char buf[32];
		snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		         tm.tm_mday);
		memcpy(date, buf, 10);
		date[10] = 0;
	}
}

static const struct self_mechanics *mechanics(const struct bsky *b)
{
	static const struct self_mechanics def = {SELF_DEFAULT_MAX_REPLIES, SELF_DEFAULT_MAX_DEPTH,
	                                          SELF_DEFAULT_SILENCE_MS,
	                                          SELF_DEFAULT_NO_RESPONSE_MS, true};
	return b->c.self ? &b->c.self->mechanics : &def;
}

/* ---- likes (outbound: target bluesky:like:<did>) ------------------------------------ */

static void on_like_sent(void *ud, const struct decision *final, const char *artifact)
{
	(void)ud;
	log_kv(final->verdict == VERDICT_SENT ? LOG_LEVEL_INFO : LOG_LEVEL_WARN, LOG_COMP, "like",
	       "verdict", decision_verdict_name(final->verdict), "reason", final->reason,
	       "artifact", artifact ? artifact : "");
}

static void submit_like(struct bsky *b, const struct like_entry *l)
{
	char target[BSKY_DID_MAX + 16], key[BSKY_KEY_MAX];
	snprintf(target, sizeof target, "bluesky:like:%s", l->did);
	/* the journal key never holds a second like of the same post (§11.26) */
	if (strlen(l->uri) + 5 <= JOURNAL_KEY_MAX)
		snprintf(key, sizeof key, "like:%s", l->uri);
	else
		outbound_idem_key(CONV_PLATFORM_BLUESKY, target, l->uri, strlen(l->uri), key);
	cJSON *extra = cJSON_CreateObject();
	cJSON *subj = cJSON_AddObjectToObject(extra, "subject");
	cJSON_AddStringToObject(subj, "uri", l->uri);
	cJSON_AddStringToObject(subj, "cid", l->cid);
	struct outbound_msg m = {.platform = CONV_PLATFORM_BLUESKY,
	                         .target = target,
	                         .source = "bluesky",
	                         .conversation = l->conversation,
	                         .message_id = l->message_id,
	                         .text = l->uri,
	                         .text_len = strlen(l->uri),
	                         .chain = -1,
	                         .idem_key = key,
	                         .extra = extra};
	bsky_pacing_note(&b->pacing, BSKY_ACT_LIKE, now_ms());
	outbound_submit(b->c.outbound, &m, on_like_sent, b);
	cJSON_Delete(extra);
}

static void drain_likes(struct bsky *b);

static void on_like_timer(uv_timer_t *t)
{
	drain_likes(t->data);
}

static void drain_likes(struct bsky *b)
{
	while (b->nlikes > 0 && !b->quiescing) {
		int64_t w = bsky_pacing_wait(&b->pacing, BSKY_ACT_LIKE, now_ms());
		if (w > 0) {
			uv_timer_start(&b->like_timer, on_like_timer, (uint64_t)w, 0);
			return;
		}
		struct like_entry l = b->likes[0];
		memmove(b->likes, b->likes + 1, (b->nlikes - 1) * sizeof b->likes[0]);
		b->nlikes--;
		submit_like(b, &l);
	}
}

/* Queues a like of (uri, cid) by did, paced; a second like of a queued post
 * is dropped here, one of a sent post by the journal. */
static void like(struct bsky *b, const char *uri, const char *cid, const char *did,
                 const char *conversation, const char *message_id, const char *why)
{
	if (!uri || !*uri || !cid || !*cid || !did || !*did)
		return;
	for (size_t i = 0; i < b->nlikes; i++)
		if (strcmp(b->likes[i].uri, uri) == 0)
			return;
	if (b->nlikes == BSKY_LIKES_MAX) {
		note_decision(b, conversation, message_id, STAGE_OUTBOUND, VERDICT_DROP,
		              "likes_full",
		              "%d likes are waiting for their pacing: this one is not made",
		              BSKY_LIKES_MAX);
		return;
	}
	struct like_entry *l = &b->likes[b->nlikes++];
	snprintf(l->uri, sizeof l->uri, "%s", uri);
	snprintf(l->cid, sizeof l->cid, "%s", cid);
	snprintf(l->did, sizeof l->did, "%s", did);
	snprintf(l->conversation, sizeof l->conversation, "%s", conversation ? conversation : "");
	snprintf(l->message_id, sizeof l->message_id, "%s", message_id ? message_id : "");
	snprintf(l->why, sizeof l->why, "%s", why ? why : "");
	drain_likes(b);
}

static void like_note(struct bnote *n, const char *rule, const char *why)
{
	note_decision(n->b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_REACT, rule,
	              "%s: a like instead of a reply", why);
	like(n->b, n->uri, n->cid, n->author_did, n->conversation, n->uri, why);
}

/* ---- the port: reply refs the pipeline does not carry -------------------------------- */

static struct ref_entry *ref_find(struct bsky *b, const char *key)
{
	for (size_t i = 0; i < BSKY_REFS_MAX; i++)
		if (b->refs[i].extra && strcmp(b->refs[i].key, key) == 0)
			return &b->refs[i];
	return NULL;
}

static int ref_put(struct bsky *b, const char *key, cJSON *extra)
{
	struct ref_entry *r = ref_find(b, key);
	if (!r)
		for (size_t i = 0; i < BSKY_REFS_MAX && !r; i++)
			if (!b->refs[i].extra)
				r = &b->refs[i];
	if (!r) {
		cJSON_Delete(extra);
		return -1;
	}
	cJSON_Delete(r->extra);
	snprintf(r->key, sizeof r->key, "%s", key);
	r->extra = extra;
	return 0;
}

static void ref_drop(struct bsky *b, const char *key)
{
	struct ref_entry *r = ref_find(b, key);
	if (r) {
		cJSON_Delete(r->extra);
		r->extra = NULL;
		r->key[0] = 0;
	}
}

struct port_call {
	struct bsky *b;
	outbound_port_done_fn done;
	void *done_ud;
	char key[BSKY_KEY_MAX];
};

static struct bnote *note_by_uri(struct bsky *b, const char *uri)
{
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++)
		if (b->notes[i].used && strcmp(b->notes[i].uri, uri) == 0)
			return &b->notes[i];
	return NULL;
}

static void port_done(void *ud, int ok, const char *artifact, const char *error)
{
	struct port_call *pc = ud;
	struct bsky *b = pc->b;
	if (strncmp(pc->key, "say:", 4) == 0)
		ref_drop(b, pc->key); /* a reply with its commitments (§6.12) */
	pc->done(pc->done_ud, ok, artifact, error);
	free(pc);
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct bsky *b = ud;
	struct outbound_send copy = *s;
	if (!copy.extra && s->idem_key) {
		struct ref_entry *r = ref_find(b, s->idem_key);
		if (r)
			copy.extra = r->extra;
	}
	struct port_call *pc = xcalloc(1, sizeof *pc);
	pc->b = b;
	pc->done = done;
	pc->done_ud = done_ud;
	snprintf(pc->key, sizeof pc->key, "%s", s->idem_key ? s->idem_key : "");
	if (s->text && (strncmp(s->target, "bluesky:post", 12) == 0))
		bsky_pacing_note(&b->pacing, BSKY_ACT_POST, now_ms());
	int r = b->inner.send(b->inner.ud, &copy, port_done, pc);
	if (r != 0)
		free(pc);
	return r;
}

static void port_reconcile(void *ud, const char *idem_key, const char *target,
                           void (*done)(void *done_ud, int exists, const char *artifact),
                           void *done_ud)
{
	struct bsky *b = ud;
	if (b->inner.reconcile)
		b->inner.reconcile(b->inner.ud, idem_key, target, done, done_ud);
	else
		done(done_ud, -1, NULL);
}

void bsky_port_init(struct bsky *b, struct outbound_port *out, const struct outbound_port *inner)
{
	b->inner = *inner;
	*out = *inner;
	out->send = port_send;
	out->reconcile = port_reconcile;
	out->ud = b;
}

/* ---- notes ------------------------------------------------------------------------------ */

static void note_clear(struct bnote *n)
{
	free(n->text);
	free(n->reply);
	cJSON_Delete(n->promises);
	for (size_t i = 0; i < n->nthread; i++)
		free(n->thread[i].text);
	uv_timer_t t = n->timer;
	struct bsky *b = n->b;
	memset(n, 0, sizeof *n);
	n->timer = t;
	n->b = b;
}

static size_t notes_in_flight(const struct bsky *b)
{
	size_t k = 0;
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++)
		k += b->notes[i].used;
	return k;
}

static bool is_agent_record(const struct bsky *b, const char *did, const cJSON *record)
{
	return strcmp(did, b->did) == 0 || atp_record_chain(record) >= 0 ||
	       bsky_state_is_peer(b->st, did);
}

static int attempts_of(struct bsky *b, const char *uri, bool bump)
{
	for (size_t i = 0; i < sizeof b->attempts / sizeof b->attempts[0]; i++)
		if (strcmp(b->attempts[i].uri, uri) == 0)
			return bump ? ++b->attempts[i].n : b->attempts[i].n;
	if (!bump)
		return 0;
	struct attempt *a = &b->attempts[b->attempt_next];
	b->attempt_next = (b->attempt_next + 1) % (sizeof b->attempts / sizeof b->attempts[0]);
	snprintf(a->uri, sizeof a->uri, "%s", uri);
	a->n = 1;
	return 1;
}

static void start_next(struct bsky *b);
static void check_end(struct bsky *b);

/* The cursor: every batch notification indexed at or before it is handled. */
static void advance_cursor(struct bsky *b)
{
	int64_t best = b->st->seen_until_ms;
	/* the batch is sorted oldest first for this walk */
	for (size_t i = 0; i < b->nbatch; i++) {
		if (!b->batch[i].done)
			break;
		if (b->batch[i].indexed_ms > best)
			best = b->batch[i].indexed_ms;
	}
	b->st->seen_until_ms = best;
}

static void batch_done(struct bsky *b, const char *uri)
{
	for (size_t i = 0; i < b->nbatch; i++)
		if (strcmp(b->batch[i].uri, uri) == 0)
			b->batch[i].done = true;
}

static void on_note_finish(uv_timer_t *t)
{
	struct bnote *n = t->data;
	struct bsky *b = n->b;
	if (n->react && !n->sent)
		like_note(n, "react_only", "the gate allows a reaction at most (chain or limits)");
	if (n->sent) {
		struct bsky_conv *c = bsky_state_conv(b->st, n->root_uri, true, now_ms());
		if (c)
			bsky_conv_note_our_reply(c, n->depth + 1, now_ms());
		if (n->ritual[0]) {
			struct bsky_ritual_state *r = bsky_state_ritual(b->st, n->ritual);
			char date[11];
			local_now(now_ms(), NULL, NULL, date);
			if (r)
				bsky_state_ritual_run(r, date, n->root_uri, false);
		}
	}
	bool retry = false;
	if (n->send_failed && !n->sent) {
		int a = attempts_of(b, n->uri, true);
		retry = a < BSKY_MAX_ATTEMPTS;
		note_decision(
		        b, n->conversation, n->uri, STAGE_RECORD, VERDICT_INFO,
		        retry ? "retry" : "given_up",
		        retry ? "the reply could not be sent (attempt %d of %d): asked again at "
		                "the next check"
		              : "the reply could not be sent %d times (of %d): given up",
		        a, BSKY_MAX_ATTEMPTS);
	}
	if (!retry) {
		bsky_state_mark_processed(b->st, n->uri);
		batch_done(b, n->uri);
		advance_cursor(b);
	}
	save_state(b);
	note_clear(n);
	start_next(b);
	check_end(b);
}

/* The pipeline tells how each walk ended (its source done() hook: once per
 * accepted event, from the loop, after the record stage). */
static void on_walk_done(void *ud, const struct conv_event *ev, const struct decision *final,
                         const char *artifact)
{
	(void)artifact;
	struct bsky *b = ud;
	struct bnote *n = ev && ev->message_id ? note_by_uri(b, ev->message_id) : NULL;
	if (!n || n->ended || n->saying)
		return; /* a reply with commitments: its say callback ends it */
	n->react = final && final->verdict == VERDICT_REACT;
	n->sent = final && final->verdict == VERDICT_SENT;
	/* a failure we noted ourselves (no room for the refs) stays one */
	n->send_failed |= final && final->verdict == VERDICT_FAIL;
	n->ended = true;
	uv_timer_start(&n->timer, on_note_finish, 0, 0);
}

/* The reply refs of a reply the pipeline sends (its reply_extra hook):
 * root and parent for the port. */
static void add_reply_refs(const struct bnote *n, cJSON *extra)
{
	cJSON *reply = cJSON_AddObjectToObject(extra, "reply");
	cJSON *root = cJSON_AddObjectToObject(reply, "root");
	cJSON_AddStringToObject(root, "uri", n->root_uri);
	cJSON_AddStringToObject(root, "cid", n->root_cid);
	cJSON *parent = cJSON_AddObjectToObject(reply, "parent");
	cJSON_AddStringToObject(parent, "uri", n->uri);
	cJSON_AddStringToObject(parent, "cid", n->cid);
}

static int on_reply_extra(void *ud, const struct conv_event *ev, cJSON *extra)
{
	struct bsky *b = ud;
	struct bnote *n = ev && ev->message_id ? note_by_uri(b, ev->message_id) : NULL;
	if (!n)
		return -1;
	add_reply_refs(n, extra);
	return 0;
}

/* ---- compose ------------------------------------------------------------------------------- */

static int sink_enqueue(const char *action, const cJSON *params, void *ud, char *result, size_t cap,
                        struct ga_err *err)
{
	struct bnote *n = ud;
	if (strcmp(action, "bluesky_reply") == 0) {
		const char *uri = json_string_or(params, "post_uri", "");
		/* One post per turn: the reply belongs to it whatever post_uri
		 * the model copied (a thread parent, a mistyped URI). Said in
		 * the story, so a wrong reference is visible. */
		if (strcmp(uri, n->uri) != 0)
			note_decision(n->b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO,
			              "post_uri",
			              "the model named %.200s; the reply goes to this "
			              "turn's post",
			              uri);
		if (n->reply) {
			err_set(err, "this post already has its reply: one reply per post");
			return -1;
		}
		n->reply = xstrdup(json_string_or(params, "text", ""));
		snprintf(result, cap,
		         "Queued: the reply goes out after its checks. Do not answer this "
		         "post again.");
		return 0;
	}
	if (strcmp(action, "graceful_exit") == 0) {
		const char *type = json_string_or(params, "closing_type", "like");
		snprintf(n->exit_reason, sizeof n->exit_reason, "%s",
		         json_string_or(params, "reason", "graceful exit"));
		if (strcmp(type, "message") == 0) {
			if (!n->reply)
				n->reply = xstrdup(json_string_or(params, "closing_message", ""));
			snprintf(result, cap,
			         "The closing message is queued; the conversation ends.");
		} else {
			n->exit_like = true;
			snprintf(n->exit_uri, sizeof n->exit_uri, "%s",
			         json_string_or(params, "target_uri", n->uri));
			snprintf(n->exit_cid, sizeof n->exit_cid, "%s",
			         json_string_or(params, "target_cid", n->cid));
			snprintf(result, cap, "Liked; the conversation ends.");
		}
		return 0;
	}
	err_set(err,
	        "%s is not available while answering on Bluesky; answer with bluesky_reply or "
	        "end with graceful_exit",
	        action);
	return -1;
}

static char *read_self(const struct bsky *b)
{
	if (!b->self_path)
		return NULL;
	struct ga_err err = {{0}};
	return fsx_read_file(b->self_path, SELF_MAX_BYTES, NULL, &err);
}

/* The user message: the thread as data, oldest first, and the post to
 * answer. */
static char *user_message(struct bnote *n, enum bsky_ritual_role role)
{
	struct strbuf sb;
	sb_init(&sb, 64 * 1024);
	sb_puts(&sb, "Thread (oldest first):\n");
	for (size_t i = 0; i < n->nthread; i++) {
		bool you = strcmp(n->thread[i].did, n->b->did) == 0;
		sb_printf(&sb, "%s: %s\n", you ? "**[YOU]**" : n->thread[i].handle,
		          n->thread[i].text ? n->thread[i].text : "");
	}
	sb_printf(&sb, "\nAnswer this post by @%s%s:\n%s\nuri: %s\ncid: %s\nthread root: %s\n",
	          n->author_handle, n->owner ? " (your owner)" : "", n->text ? n->text : "", n->uri,
	          n->cid, n->root_uri);
	if (n->ritual[0])
		sb_printf(&sb, "\nThis thread is the ritual \"%s\"; your role in it: %s.\n",
		          n->ritual, bsky_ritual_role_name(role));
	return sb_detach(&sb);
}

static void compose_end(struct bnote *n, const char *text, const char *why)
{
	struct pipeline_job *job = n->job;
	n->job = NULL;
	if (!job)
		return;
	pipeline_composed(job, text, text ? strlen(text) : 0, why);
}

/* ---- commitments from our replies (§6.12) ----------------------------------------------- */

static int put_refs(struct bnote *n, const char *key);
static void send_reply(struct bnote *n);
static void on_note_finish(uv_timer_t *t);

/* The reply went out (or not): its commitments join the ledger only when
 * it did (source bluesky, the thread in the params). */
static void on_promise_said(void *ud, const struct decision *final, const char *artifact)
{
	struct bnote *n = ud;
	struct bsky *b = n->b;
	n->saying = false;
	n->sent = final && final->verdict == VERDICT_SENT;
	n->send_failed = final && final->verdict == VERDICT_FAIL;
	size_t np = (size_t)cJSON_GetArraySize(n->promises);
	if (!n->sent) {
		note_decision(
		        b, n->conversation, n->uri, STAGE_RECORD, VERDICT_INFO, "commitment",
		        "the reply did not go out (%s: %s): its %zu commitment(s) are not kept",
		        final ? final->rule : "?", final ? final->reason : "", np);
	}
	const cJSON *it;
	const cJSON *keep = n->sent ? n->promises : NULL;
	cJSON_ArrayForEach(it, keep)
	{
		const char *type = json_string_or(it, "type", "");
		char id[LEDGER_ID_MAX] = "";
		struct ga_err err = {{0}};
		int r = -1;
		if (b->c.ledger)
			r = ledger_add(b->c.ledger, type, "bluesky",
			               cJSON_GetObjectItem(it, "params"), now_ms(), id, &err);
		else
			err_set(&err, "no commitment ledger in this process");
		if (r == LEDGER_ADDED || r == LEDGER_DUPLICATE)
			note_decision(b, n->conversation, n->uri, STAGE_RECORD, VERDICT_INFO,
			              "commitment", "%s %s (source bluesky, reply %s)%s", type, id,
			              artifact ? artifact : "",
			              r == LEDGER_DUPLICATE ? ": already open" : " enqueued");
		else
			note_decision(b, n->conversation, n->uri, STAGE_RECORD, VERDICT_FAIL,
			              "commitment", "%s not enqueued: %s", type, err.msg);
	}
	n->ended = true;
	uv_timer_start(&n->timer, on_note_finish, 0, 0);
}

/* A reply that carries commitments leaves through pipeline_say_ctx, so the
 * validator knows it is backed (its empty_promise check refuses a promise
 * without commitments); the event's walk ends here with nothing to send. */
static void send_promise(struct bnote *n)
{
	struct bsky *b = n->b;
	char key[BSKY_KEY_MAX];
	snprintf(key, sizeof key, "say:%s", n->uri);
	if (put_refs(n, key) < 0)
		return;
	size_t np = (size_t)cJSON_GetArraySize(n->promises);
	char *text = n->reply;
	n->reply = NULL;
	n->saying = true;
	char why[160];
	snprintf(why, sizeof why,
	         "the reply carries %zu commitment(s): it goes out with them (pipeline_say_ctx)",
	         np);
	compose_end(n, NULL, why);
	char target[BSKY_DID_MAX + 16];
	snprintf(target, sizeof target, "bluesky:reply:%s", n->author_did);
	/* the echo window: the thread's posts, agents' compared */
	struct echo_window *w = echo_window_new(BSKY_THREAD_MAX);
	for (size_t i = 0; i < n->nthread; i++)
		echo_window_push(w, n->thread[i].handle, n->thread[i].agent,
		                 n->thread[i].text ? n->thread[i].text : "");
	struct validator_context vc = {.platform = VALIDATOR_PLATFORM_BLUESKY,
	                               .mode = VALIDATOR_MODE_DISCUSSION,
	                               .role = VALIDATOR_ROLE_ACTOR,
	                               .is_action_owner = true,
	                               .window = w,
	                               .connected_agents = 1,
	                               .n_commitments = np};
	pipeline_say_ctx(b->c.pipeline, CONV_PLATFORM_BLUESKY, target, "bluesky", text,
	                 strlen(text), n->chain_out, n->courtesy, n->uri, &vc, on_promise_said, n);
	echo_window_free(w);
	free(text);
}

static void on_promises(const struct compose_result *res, void *ud)
{
	struct bnote *n = ud;
	struct bsky *b = n->b;
	n->run = NULL;
	if (b->quiescing)
		return; /* stopping: the pipeline frees the job */
	struct part_commitments got;
	memset(&got, 0, sizeof got);
	struct ga_err err = {{0}};
	if (res->stop != COMPOSE_STOP_FINAL || !res->content) {
		note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO, "extraction",
		              "no extraction (%s: %s)", res->stop_name ? res->stop_name : "?",
		              res->reason);
	} else if (part_extract_parse(res->content, strlen(res->content), b->c.social_only, &got,
	                              &err) != 0) {
		note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO, "extraction",
		              "the extraction reply was unusable: %s", err.msg);
	} else {
		note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO, "extraction",
		              "%zu commitment(s) in the reply (%zu dropped: low confidence or "
		              "schema)",
		              got.n, got.ndropped_total);
	}
	const struct bsky_promise_source src = {n->uri, n->cid, n->root_uri, n->root_cid};
	cJSON_Delete(n->promises);
	n->promises = cJSON_CreateArray();
	for (size_t i = 0; i < got.n; i++) {
		const struct part_commitment *c = &got.item[i];
		const struct bsky_promise p = {part_commit_type_name(c->type),
		                               c->repo,
		                               c->title,
		                               c->description,
		                               c->content,
		                               c->issue_number};
		struct decision d;
		cJSON *params = bsky_commitment_params(&p, &src, b->c.social_only, &d);
		pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, n->conversation, n->uri,
		              STAGE_COMPOSE, &d);
		if (!params)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", p.type);
		cJSON_AddItemToObject(o, "params", params);
		cJSON_AddItemToArray(n->promises, o);
	}
	part_commitments_clear(&got);
	if (cJSON_GetArraySize(n->promises) > 0)
		send_promise(n);
	else
		send_reply(n); /* the validator judges the promise without backing */
}

/* Our reply promises something (part_extract_wanted)? Then the extraction
 * prompt (no tools, PART_EXTRACT_MAX_TOKENS, temperature 0) reads it before
 * it goes out. True when the call started (it sends the reply). */
static bool promise_check(struct bnote *n)
{
	struct bsky *b = n->b;
	char why[160];
	if (!b->c.llm || !n->reply ||
	    !part_extract_wanted(n->reply, strlen(n->reply), why, sizeof why))
		return false;
	struct strbuf ctx;
	sb_init(&ctx, 4096);
	sb_printf(&ctx, "%s: %.1000s", n->author_handle, n->text ? n->text : "");
	char *context = sb_detach(&ctx);
	char *user = part_extract_prompt(n->reply, NULL, context);
	free(context);
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = user};
	struct compose_opts o = {.loop = b->c.loop,
	                         .llm = b->c.llm,
	                         .budget = b->c.budget,
	                         .system_prompt = part_extract_system(),
	                         .messages = &msg,
	                         .n_messages = 1,
	                         .max_rounds = 1,
	                         .max_tokens = PART_EXTRACT_MAX_TOKENS,
	                         .temperature = 0,
	                         .has_temperature = true,
	                         .done = on_promises,
	                         .ud = n};
	struct ga_err err = {{0}};
	n->run = compose_start(&o, &err);
	free(user);
	if (!n->run) {
		note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO, "extraction",
		              "no extraction call: %s", err.msg);
		return false;
	}
	note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO, "extraction",
	              "%s: asking the model for the reply's commitments before it goes out", why);
	return true;
}

static void on_pace(uv_timer_t *t)
{
	struct bnote *n = t->data;
	struct bsky *b = n->b;
	int64_t w = bsky_pacing_wait(&b->pacing, BSKY_ACT_REPLY, now_ms());
	if (w > 0) {
		uv_timer_start(&n->timer, on_pace, (uint64_t)w, 0);
		return;
	}
	bsky_pacing_note(&b->pacing, BSKY_ACT_REPLY, now_ms());
	if (!promise_check(n))
		send_reply(n);
}

/* The reply refs for the port of a reply sent by pipeline_say_ctx (which
 * carries no platform fields), under its idempotency key. */
static int put_refs(struct bnote *n, const char *key)
{
	cJSON *extra = cJSON_CreateObject();
	add_reply_refs(n, extra);
	if (ref_put(n->b, key, extra) < 0) {
		compose_end(n, NULL, "too many replies waiting for the port: asked again later");
		n->send_failed = true;
		return -1;
	}
	return 0;
}

/* The reply goes on through the event's walk: validator, outbound (its
 * reply refs come from the reply_extra hook). */
static void send_reply(struct bnote *n)
{
	char *text = n->reply;
	n->reply = NULL;
	compose_end(n, text, NULL);
	free(text);
}

static void on_composed(const struct compose_result *res, void *ud)
{
	struct bnote *n = ud;
	struct bsky *b = n->b;
	n->run = NULL;
	if (b->quiescing)
		return; /* stopping: the pipeline frees the job */
	struct bsky_conv *c = bsky_state_conv(b->st, n->root_uri, true, now_ms());
	if (n->exit_like) {
		note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_REACT,
		              "graceful_exit", "the model ends the conversation with a like: %s",
		              n->exit_reason);
		const char *did = n->author_did;
		like(b, n->exit_uri, n->exit_cid, did, n->conversation, n->uri, "graceful exit");
		if (c)
			bsky_conv_conclude(c, NULL, n->exit_reason, now_ms());
		free(n->reply);
		n->reply = NULL;
		compose_end(n, NULL, "graceful exit: a like, no message");
		return;
	}
	if (!n->reply || !*n->reply) {
		char why[300];
		snprintf(why, sizeof why, "the model sent no reply (%s)%s%.200s", res->stop_name,
		         res->content ? ": " : "", res->content ? res->content : res->reason);
		if (res->stop == COMPOSE_STOP_ERROR && res->llm_error == LLM_ERR_TRANSIENT)
			n->send_failed = true; /* asked again at the next check */
		compose_end(n, NULL, why);
		return;
	}
	/* the output self-check (§6.8 step 4): prevention beats pruning */
	if (bsky_self_check_to_like(c, n->reply)) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "Self-check: converting low-value reply to like",
		       "id", n->uri, "text", n->reply);
		like_note(
		        n, "self_check",
		        "Self-check: converting low-value reply to like (we already replied here)");
		if (c)
			bsky_conv_conclude(c, n->author_did, "self-check", now_ms());
		compose_end(n, NULL, "self-check: a low-value closing became a like");
		return;
	}
	int64_t w = bsky_pacing_wait(&b->pacing, BSKY_ACT_REPLY, now_ms());
	if (w > 0)
		note_decision(b, n->conversation, n->uri, STAGE_COMPOSE, VERDICT_INFO, "pacing",
		              "the reply waits %" PRId64 " ms (human pace)", w);
	uv_timer_start(&n->timer, on_pace, (uint64_t)(w > 0 ? w : 0), 0);
}

static void compose_reply(struct bnote *n)
{
	struct bsky *b = n->b;
	struct ga_err err = {{0}};
	if (!b->c.llm || !b->c.skills) {
		compose_end(n, NULL, "no model is configured: nothing is composed");
		return;
	}
	struct skill_var vars[] = {{"blueskyUsername", b->handle},
	                           {"ownerHandle", b->owner_handle ? b->owner_handle : "(none)"}};
	char *skill = skills_render(b->c.skills, BSKY_REPLY_SKILL, NULL, vars, 2, &err);
	if (!skill) {
		compose_end(n, NULL, err.msg[0] ? err.msg : "the bluesky-reply skill is missing");
		return;
	}
	char *self = read_self(b);
	char *system = skills_system_prompt(b->soul, self, skill);
	free(self);
	free(skill);
	enum bsky_ritual_role role = bsky_ritual_role(b->agent_name, n->root_uri);
	char *user = user_message(n, role);
	n->sink = (struct tools_sink){.enqueue = sink_enqueue, .ud = n};
	n->ntools = tools_select(TOOLS_MODE_BLUESKY, tools_agent_caps(b->c.social_only), &n->sink,
	                         n->tools, TOOLS_MAX);
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = user};
	struct compose_opts o = {.loop = b->c.loop,
	                         .llm = b->c.llm,
	                         .budget = b->c.budget,
	                         .owner = n->owner,
	                         .system_prompt = system,
	                         .messages = &msg,
	                         .n_messages = 1,
	                         .tools = n->tools,
	                         .n_tools = n->ntools,
	                         .max_rounds = BSKY_COMPOSE_ROUNDS,
	                         .done = on_composed,
	                         .ud = n};
	n->run = compose_start(&o, &err);
	free(system);
	free(user);
	if (!n->run)
		compose_end(n, NULL, err.msg);
}

/* The pipeline's compose stage: the gate passed. */
static void on_compose(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                       const struct gate_result *g)
{
	struct bsky *b = ud;
	struct bnote *n = note_by_uri(b, ev->message_id);
	if (!n) {
		pipeline_composed(job, NULL, 0, "not a notification this agent is handling now");
		return;
	}
	n->job = job;
	n->chain_out = g ? g->chain_out : -1;
	n->courtesy = g && g->courtesy;
	n->composing = true;
	int64_t now = now_ms();
	struct decision d;
	enum bsky_response r = bsky_should_respond(n->reason, n->owner, n->text, &d);
	pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, n->conversation, n->uri, STAGE_COMPOSE,
	              &d);
	struct bsky_conv *c = bsky_state_conv(b->st, n->root_uri, true, now);
	if (!c) {
		compose_end(n, NULL, "the thread root is not a usable URI");
		return;
	}
	bool low = r == BSKY_LIKE;
	bsky_conv_note_incoming(c, n->author_did, n->depth, low, now);
	if (r == BSKY_SKIP) {
		compose_end(n, NULL, d.reason);
		return;
	}
	if (r == BSKY_LIKE) {
		like(b, n->uri, n->cid, n->author_did, n->conversation, n->uri, d.reason);
		bsky_conv_conclude(c, n->author_did, d.reason, now);
		compose_end(n, NULL, d.reason);
		return;
	}
	if (!bsky_conv_should_respond(c, n->author_did, n->owner, true, mechanics(b), now, &d)) {
		pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, n->conversation, n->uri,
		              STAGE_COMPOSE, &d);
		if (d.verdict == VERDICT_REACT) {
			like(b, n->uri, n->cid, n->author_did, n->conversation, n->uri, d.reason);
			bsky_conv_conclude(c, NULL, d.rule, now);
		}
		compose_end(n, NULL, d.reason);
		return;
	}
	pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, n->conversation, n->uri, STAGE_COMPOSE,
	              &d);
	if (strcmp(d.rule, "reengage") == 0)
		bsky_conv_reengage(c, !n->owner);
	/* circular conversations: a hard block that concludes (§11.27) */
	struct bsky_thread_post posts[BSKY_THREAD_MAX];
	for (size_t i = 0; i < n->nthread; i++)
		posts[i] = (struct bsky_thread_post){n->thread[i].did, n->thread[i].text};
	enum bsky_circular circ = bsky_circular_level(posts, n->nthread);
	if (!n->owner && (circ == BSKY_CIRC_MEDIUM || circ == BSKY_CIRC_HIGH)) {
		char why[120];
		snprintf(why, sizeof why,
		         "circular conversation (%s): the last posts only thank and "
		         "restate",
		         bsky_circular_name(circ));
		like_note(n, "circular", why);
		bsky_conv_conclude(c, NULL, "circular", now);
		compose_end(n, NULL, why);
		return;
	}
	/* ritual threads: recognised by root, or by the workspace named in a
	 * participant ritual (then registered as today's thread) */
	const char *rname = bsky_state_ritual_thread(b->st, n->root_uri);
	if (!rname && b->c.self)
		for (size_t i = 0; i < b->c.self->ritual_count; i++) {
			const struct self_ritual *sr = &b->c.self->rituals[i];
			if (!sr->initiator && sr->workspace && n->text &&
			    strstr(n->text, sr->workspace)) {
				struct bsky_ritual_state *rs = bsky_state_ritual(b->st, sr->name);
				char date[11];
				local_now(now, NULL, NULL, date);
				if (rs)
					bsky_state_ritual_run(rs, date, n->root_uri, false);
				rname = sr->name;
				break;
			}
		}
	if (rname)
		snprintf(n->ritual, sizeof n->ritual, "%s", rname);
	compose_reply(n);
}

static int reply_target(void *ud, const struct conv_event *ev, char *buf, size_t cap)
{
	(void)ud;
	int k = snprintf(buf, cap, "bluesky:reply:%s", ev->author_id);
	return k < 0 || (size_t)k >= cap ? -1 : 0;
}

/* ---- the awareness check ----------------------------------------------------------------- */

static const char *str_at(const cJSON *o, const char *a, const char *b_)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
	return b_                        ? json_string_or(x, b_, "")
	       : cJSON_GetStringValue(x) ? cJSON_GetStringValue(x)
	                                 : "";
}

static void start_event(struct bnote *n)
{
	struct bsky *b = n->b;
	const char *addressed[1] = {b->handle};
	struct conv_event_src es = {.platform = CONV_PLATFORM_BLUESKY,
	                            .conversation = n->conversation,
	                            .message_id = n->uri,
	                            .parent_id = n->parent_uri[0] ? n->parent_uri : NULL,
	                            .thread_id = n->root_uri,
	                            .author_id = n->author_did,
	                            .author_name = n->author_handle,
	                            .author_kind = n->owner   ? CONV_AUTHOR_OWNER
	                                           : n->agent ? CONV_AUTHOR_PEER
	                                                      : CONV_AUTHOR_HUMAN,
	                            .is_bot = n->agent && !n->owner,
	                            .text = n->text ? n->text : "",
	                            .text_len = n->text ? strlen(n->text) : 0,
	                            .addressed = n->to_us ? addressed : NULL,
	                            .naddressed = n->to_us ? 1 : 0,
	                            .addressed_me = n->to_us,
	                            .time_ms = n->indexed_ms};
	bool flags[BSKY_THREAD_MAX];
	for (size_t i = 0; i < n->nthread; i++)
		flags[i] = n->thread[i].agent;
	int64_t derived = n->nthread ? bsky_derived_chain(flags, n->nthread) : -1;
	es.chain = bsky_chain_in(n->agent && !n->owner, n->carried, derived);
	es.chain_explicit = n->carried >= 0;
	struct conv_event ev;
	conv_event_init(&ev, &es);
	int r = pipeline_event(b->c.pipeline, &ev);
	conv_event_free(&ev);
	if (r < 0 && !n->ended) {
		/* overload: not handled; the next check asks again */
		n->send_failed = true;
		n->ended = true;
		uv_timer_start(&n->timer, on_note_finish, 0, 0);
	}
}

/* The parent chain of getPostThread, root first, the post itself last. */
static void parse_thread(struct bnote *n, const cJSON *thread)
{
	const cJSON *chain[BSKY_THREAD_MAX];
	size_t k = 0;
	for (const cJSON *t = thread; t && k < BSKY_THREAD_MAX;
	     t = cJSON_GetObjectItemCaseSensitive(t, "parent")) {
		const cJSON *post = cJSON_GetObjectItemCaseSensitive(t, "post");
		if (!post)
			break;
		chain[k++] = post;
	}
	n->depth = k ? (int)k - 1 : 0;
	for (size_t i = 0; i < k; i++) {
		const cJSON *post = chain[k - 1 - i];
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(post, "record");
		const char *did = str_at(post, "author", "did");
		snprintf(n->thread[i].did, sizeof n->thread[i].did, "%s", did);
		snprintf(n->thread[i].handle, sizeof n->thread[i].handle, "@%s",
		         str_at(post, "author", "handle"));
		n->thread[i].text = xstrdup(json_string_or(rec, "text", ""));
		n->thread[i].agent = is_agent_record(n->b, did, rec);
		if (i == 0 && k > 0 && !n->root_cid[0] &&
		    strcmp(json_string_or(post, "uri", ""), n->root_uri) == 0)
			snprintf(n->root_cid, sizeof n->root_cid, "%s",
			         json_string_or(post, "cid", ""));
		/* the post we replied to is ours: it addresses us */
		if (i + 2 == k && strcmp(did, n->b->did) == 0)
			n->to_us = true;
	}
	n->nthread = k;
}

static void on_thread(const struct atp_result *res, void *ud)
{
	struct bnote *n = ud;
	struct bsky *b = n->b;
	if (res->kind == ATP_OK && res->json) {
		parse_thread(n, cJSON_GetObjectItemCaseSensitive(res->json, "thread"));
	} else if (res->kind == ATP_ERR_NOT_FOUND) {
		note_decision(b, n->conversation, n->uri, STAGE_EVENT, VERDICT_INFO, "deleted",
		              "the post is gone (%s): nothing to answer", res->msg);
		n->ended = true;
		uv_timer_start(&n->timer, on_note_finish, 0, 0);
		return;
	} else if (res->kind == ATP_ERR_CANCELLED) {
		return;
	} else {
		/* no thread (no AppView, a transient failure): the post alone */
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "thread unreadable: answering the post alone",
		       "id", n->uri, "error", res->msg);
	}
	if (n->nthread == 0) {
		snprintf(n->thread[0].did, sizeof n->thread[0].did, "%s", n->author_did);
		snprintf(n->thread[0].handle, sizeof n->thread[0].handle, "@%s", n->author_handle);
		n->thread[0].text = xstrdup(n->text ? n->text : "");
		n->thread[0].agent = n->agent;
		n->nthread = 1;
	}
	if (!n->root_cid[0]) {
		/* the root is the post itself (a top-level mention) */
		if (strcmp(n->root_uri, n->uri) == 0)
			snprintf(n->root_cid, sizeof n->root_cid, "%s", n->cid);
	}
	start_event(n);
}

static void fetch_thread(struct bnote *n)
{
	struct bsky *b = n->b;
	struct ga_err err = {{0}};
	if (atp_get_post_thread(b->c.atp, n->uri, 0, BSKY_THREAD_MAX - 1, on_thread, n, &err) ==
	    0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "thread not asked", "id", n->uri, "error",
		       err.msg);
		n->send_failed = true;
		n->ended = true;
		uv_timer_start(&n->timer, on_note_finish, 0, 0);
	}
}

/* The identity post (🔗—) in an author feed: its GitHub name, or -1. */
static int find_identity(const cJSON *feed, char gh[BSKY_GITHUB_NAME_MAX])
{
	const cJSON *x;
	cJSON_ArrayForEach(x, feed)
	{
		if (cJSON_GetObjectItemCaseSensitive(x, "reason"))
			continue;
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(
		        cJSON_GetObjectItemCaseSensitive(x, "post"), "record");
		const char *text = json_string_or(rec, "text", "");
		if (!cJSON_GetObjectItemCaseSensitive(rec, "reply") && bsky_is_identity_post(text))
			return bsky_identity_github(text, gh);
	}
	return -1;
}

/* Records what an identity scan found about handle/did. */
static void peer_scanned(struct bsky *b, const char *handle, const char *did, const char *via,
                         const struct atp_result *res)
{
	if (res->kind != ATP_OK || !res->json)
		return;
	char gh[BSKY_GITHUB_NAME_MAX];
	bool found = find_identity(cJSON_GetObjectItemCaseSensitive(res->json, "feed"), gh) == 0;
	struct bsky_peer *p = bsky_state_peer(b->st, handle, did);
	if (!p && !found)
		return; /* a person: nothing to remember */
	if (!p)
		p = bsky_state_peer_add(b->st, handle, did, via, now_ms());
	if (!p)
		return;
	/* the feed's author names the DID of a handle-only entry */
	const cJSON *first =
	        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res->json, "feed"), 0);
	const char *fdid =
	        json_string_or(cJSON_GetObjectItemCaseSensitive(
	                               cJSON_GetObjectItemCaseSensitive(first, "post"), "author"),
	                       "did", "");
	if (!p->did[0] && *fdid)
		snprintf(p->did, sizeof p->did, "%s", fdid);
	p->verified_ms = now_ms();
	if (found) {
		if (strcmp(p->github, gh) != 0)
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "peer linked", "handle", p->handle,
			       "github", gh);
		snprintf(p->github, sizeof p->github, "%s", gh);
	} else {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "Peer identity post not found — will retry",
		       "handle", p->handle);
	}
}

static void on_author_feed(const struct atp_result *res, void *ud)
{
	struct bnote *n = ud;
	if (res->kind == ATP_ERR_CANCELLED)
		return;
	peer_scanned(n->b, n->author_handle, n->author_did, "thread", res);
	n->agent = n->agent || bsky_state_is_peer(n->b->st, n->author_did);
	fetch_thread(n);
}

/* @handles in a notification: candidates for peer SOULs (§7.4), scanned
 * by the peers job; only an identity post makes one a peer. */
static void register_mentions(struct bsky *b, const struct bnote *n)
{
	if (strcmp(n->author_did, b->did) == 0 || !n->text)
		return;
	for (const char *t = n->text; (t = strchr(t, '@')) != NULL; t++) {
		if (t != n->text && t[-1] != ' ' && t[-1] != '(' && t[-1] != '\n')
			continue;
		char h[BSKY_HANDLE_MAX];
		size_t k = 0;
		for (const char *q = t + 1; *q && k + 1 < sizeof h &&
		                            (isalnum((unsigned char)*q) || *q == '.' || *q == '-');
		     q++)
			h[k++] = (char)tolower((unsigned char)*q);
		while (k && h[k - 1] == '.')
			k--;
		h[k] = 0;
		if (!strchr(h, '.') || strcasecmp(h, b->handle) == 0 ||
		    (b->owner_handle && strcasecmp(h, b->owner_handle) == 0) ||
		    strcasecmp(h, n->author_handle) == 0)
			continue;
		if (!bsky_state_peer(b->st, h, NULL))
			bsky_state_peer_add(b->st, h, NULL, n->owner ? "owner_mention" : "thread",
			                    now_ms());
	}
}

static void note_start(struct bsky *b, struct batch_item *it)
{
	struct bnote *n = NULL;
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT && !n; i++)
		if (!b->notes[i].used)
			n = &b->notes[i];
	if (!n)
		return;
	const cJSON *x = it->n;
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(x, "record");
	n->used = true;
	snprintf(n->uri, sizeof n->uri, "%s", it->uri);
	snprintf(n->cid, sizeof n->cid, "%s", json_string_or(x, "cid", ""));
	snprintf(n->author_did, sizeof n->author_did, "%s", str_at(x, "author", "did"));
	snprintf(n->author_handle, sizeof n->author_handle, "%s", str_at(x, "author", "handle"));
	n->reason = bsky_reason_parse(json_string_or(x, "reason", ""));
	n->text = xstrdup(json_string_or(rec, "text", ""));
	n->indexed_ms = it->indexed_ms;
	n->carried = atp_record_chain(rec);
	n->owner = b->owner_did && strcmp(n->author_did, b->owner_did) == 0;
	n->agent = is_agent_record(b, n->author_did, rec);
	n->to_us = n->reason == BSKY_REASON_MENTION || n->reason == BSKY_REASON_QUOTE;
	const cJSON *reply = cJSON_GetObjectItemCaseSensitive(rec, "reply");
	const char *root = reply ? str_at(reply, "root", "uri") : "";
	snprintf(n->root_uri, sizeof n->root_uri, "%s", *root ? root : n->uri);
	if (reply) {
		snprintf(n->root_cid, sizeof n->root_cid, "%s", str_at(reply, "root", "cid"));
		snprintf(n->parent_uri, sizeof n->parent_uri, "%s", str_at(reply, "parent", "uri"));
		if (strstr(n->parent_uri, b->did))
			n->to_us = true;
	}
	snprintf(n->conversation, sizeof n->conversation, "bluesky:%s", n->root_uri);
	it->started = true;
	register_mentions(b, n);
	cJSON_Delete(it->n);
	it->n = NULL;
	/* an author we do not know yet (or a handle-only one, rescanned at
	 * most every BSKY_PEER_RESCAN_MS): their identity post decides whether
	 * they are a peer SOUL (an agent) before the chain is derived */
	struct bsky_peer *p = bsky_state_peer(b->st, n->author_handle, n->author_did);
	if (!n->owner && strcmp(n->author_did, b->did) != 0 &&
	    (!p || (!p->github[0] && now_ms() - p->verified_ms > BSKY_PEER_RESCAN_MS))) {
		struct ga_err err = {{0}};
		if (atp_get_author_feed(b->c.atp, n->author_did, "posts_no_replies", NULL,
		                        BSKY_FEED_LIMIT, on_author_feed, n, &err) != 0)
			return;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "identity scan not asked", "actor", n->author_did,
		       "error", err.msg);
	}
	fetch_thread(n);
}

static int cmp_prio(const void *a_, const void *b_)
{
	const struct batch_item *a = a_, *b = b_;
	if (a->owner != b->owner)
		return a->owner ? -1 : 1;
	if (a->prio != b->prio)
		return a->prio > b->prio ? -1 : 1;
	return a->indexed_ms < b->indexed_ms ? -1 : (a->indexed_ms > b->indexed_ms);
}

static int cmp_time(const void *a_, const void *b_)
{
	const struct batch_item *a = a_, *b = b_;
	return a->indexed_ms < b->indexed_ms ? -1 : (a->indexed_ms > b->indexed_ms);
}

/* Starts the highest-priority waiting candidates while there is room. */
static void start_next(struct bsky *b)
{
	if (b->quiescing)
		return;
	while (notes_in_flight(b) < BSKY_MAX_INFLIGHT) {
		struct batch_item *best = NULL;
		for (size_t i = 0; i < b->nbatch; i++) {
			struct batch_item *it = &b->batch[i];
			if (it->done || it->started || !it->n)
				continue;
			if (!best || cmp_prio(it, best) < 0)
				best = it;
		}
		if (!best)
			return;
		note_start(b, best);
	}
}

static void on_seen(const struct atp_result *res, void *ud)
{
	(void)ud;
	if (res->kind != ATP_OK && res->kind != ATP_ERR_CANCELLED)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "updateSeen failed", "error", res->msg);
}

static void batch_clear(struct bsky *b)
{
	for (size_t i = 0; i < b->nbatch; i++)
		cJSON_Delete(b->batch[i].n);
	b->nbatch = 0;
}

static void check_end(struct bsky *b)
{
	if (!b->aware_running || notes_in_flight(b) > 0)
		return;
	for (size_t i = 0; i < b->nbatch; i++)
		if (!b->batch[i].done && b->batch[i].n && !b->quiescing)
			return; /* start_next will take them */
	struct ga_err err = {{0}};
	if (!b->quiescing && b->st->seen_until_ms > 0)
		atp_update_seen(b->c.atp, now_ms(), on_seen, b, &err);
	batch_clear(b);
	save_state(b);
	struct sched_job *j = b->aware_running;
	b->aware_running = NULL;
	if (j)
		sched_job_done(j);
}

/* Handles what needs no walk, orders the rest, starts them. */
static void process_batch(struct bsky *b)
{
	qsort(b->batch, b->nbatch, sizeof b->batch[0], cmp_time);
	for (size_t i = 0; i < b->nbatch; i++) {
		struct batch_item *it = &b->batch[i];
		const cJSON *x = it->n;
		const char *did = str_at(x, "author", "did");
		enum bsky_reason r = bsky_reason_parse(json_string_or(x, "reason", ""));
		bool talk = r == BSKY_REASON_REPLY || r == BSKY_REASON_MENTION ||
		            r == BSKY_REASON_QUOTE;
		if (!talk || strcmp(did, b->did) == 0) {
			/* likes, follows, reposts, our own: nothing to walk */
			bsky_state_mark_processed(b->st, it->uri);
			it->done = true;
			cJSON_Delete(it->n);
			it->n = NULL;
			continue;
		}
		it->owner = b->owner_did && strcmp(did, b->owner_did) == 0;
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(x, "record");
		const cJSON *reply = cJSON_GetObjectItemCaseSensitive(rec, "reply");
		struct bsky_prio_facts f = {
		        .reason = r,
		        .to_our_content = reply && strstr(str_at(reply, "parent", "uri"), b->did),
		        .from_owner = it->owner,
		        .unread = !json_bool_or(x, "isRead", false)};
		it->prio = bsky_priority(&f);
	}
	advance_cursor(b);
	start_next(b);
	check_end(b);
}

static void fetch_page(struct bsky *b, const char *cursor);

static void on_page(const struct atp_result *res, void *ud)
{
	struct bsky *b = ud;
	if (res->kind != ATP_OK || !res->json) {
		if (res->kind != ATP_ERR_CANCELLED)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "notifications unreadable", "error",
			       res->msg);
		if (b->nbatch)
			process_batch(b);
		else
			check_end(b);
		return;
	}
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(res->json, "notifications");
	const cJSON *x;
	int64_t oldest = INT64_MAX;
	size_t got = 0;
	cJSON_ArrayForEach(x, arr)
	{
		got++;
		const char *uri = json_string_or(x, "uri", "");
		int64_t ms = 0;
		if (time_parse_iso(json_string_or(x, "indexedAt", ""), &ms) < 0)
			ms = 0;
		if (ms < oldest)
			oldest = ms;
		if (!*uri || strlen(uri) >= BSKY_URI_MAX || ms <= b->st->seen_until_ms ||
		    bsky_state_processed(b->st, uri) || b->nbatch == BSKY_BATCH_MAX)
			continue;
		bool dup = false;
		for (size_t i = 0; i < b->nbatch && !dup; i++)
			dup = strcmp(b->batch[i].uri, uri) == 0;
		if (dup)
			continue;
		struct batch_item *it = &b->batch[b->nbatch++];
		memset(it, 0, sizeof *it);
		snprintf(it->uri, sizeof it->uri, "%s", uri);
		it->indexed_ms = ms;
		it->n = cJSON_Duplicate(x, true);
	}
	const char *cursor = json_string_or(res->json, "cursor", NULL);
	b->pages++;
	if (cursor && got >= BSKY_PAGE_LIMIT && oldest > b->st->seen_until_ms &&
	    b->pages < BSKY_MAX_PAGES && b->nbatch < BSKY_BATCH_MAX) {
		fetch_page(b, cursor);
		return;
	}
	process_batch(b);
}

static void fetch_page(struct bsky *b, const char *cursor)
{
	struct ga_err err = {{0}};
	if (atp_list_notifications(b->c.atp, cursor, BSKY_PAGE_LIMIT, on_page, b, &err) == 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "notifications not asked", "error", err.msg);
		check_end(b);
	}
}

static void awareness_run(struct sched_job *job, void *ud)
{
	struct bsky *b = ud;
	if (!b->logged_in || b->quiescing) {
		sched_job_done(job);
		return;
	}
	b->aware_running = job;
	b->last_check_ms = now_ms();
	b->checks++;
	b->pages = 0;
	batch_clear(b);
	/* the conversation sweep: silence and no-response end threads
	 * quietly, evaluated here, never against a post that just came */
	for (size_t i = 0; i < b->st->nconvs; i++) {
		struct decision d;
		if (bsky_conv_sweep(&b->st->convs[i].c, mechanics(b), b->last_check_ms, &d)) {
			char conv[BSKY_URI_MAX + 16];
			snprintf(conv, sizeof conv, "bluesky:%s", b->st->convs[i].root);
			pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, conv, "", STAGE_RECORD,
			              &d);
		}
	}
	fetch_page(b, NULL);
}

bool bsky_check_now(struct bsky *b)
{
	return b->j_aware && sched_job_trigger(b->j_aware);
}

/* ---- feed hygiene, identity, expression schedule ------------------------------------------ */

struct prune_call {
	struct bsky *b;
	char key[BSKY_KEY_MAX];
	char uri[BSKY_URI_MAX];
	enum bsky_prune_why why;
};

static void on_pruned(const struct atp_result *res, void *ud)
{
	struct prune_call *pc = ud;
	struct bsky *b = pc->b;
	struct ga_err err = {{0}};
	if (res->kind == ATP_OK) {
		journal_done(b->c.journal, pc->key, pc->uri, now_ms(), &err);
		b->pruned++;
		note_decision(b, "bluesky:feed", pc->uri, STAGE_OUTBOUND, VERDICT_INFO, "pruned",
		              "pruned/%s: deleted our own %s", bsky_prune_why_name(pc->why),
		              pc->why == BSKY_PRUNE_DUPLICATE ? "duplicate post"
		                                              : "thank-you reply");
	} else if (res->kind != ATP_ERR_CANCELLED) {
		journal_failed(b->c.journal, pc->key, res->msg, now_ms(), &err);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "prune failed", "uri", pc->uri, "error", res->msg);
	}
	free(pc);
}

static void prune(struct bsky *b, const struct bsky_feed_item *items, const cJSON **recs, size_t n)
{
	enum bsky_prune_why why[BSKY_PRUNE_MAX_ITEMS];
	if (n > BSKY_PRUNE_MAX_ITEMS)
		n = BSKY_PRUNE_MAX_ITEMS;
	if (!bsky_prune_plan(items, n, why) || !b->c.journal)
		return;
	for (size_t i = 0; i < n; i++) {
		if (why[i] == BSKY_PRUNE_KEEP || strcmp(items[i].uri, b->st->identity_uri) == 0)
			continue;
		/* a record whose send is not settled yet is the journal's to
		 * reconcile, not ours to delete */
		const char *k = atp_record_key(recs[i]);
		if (k && journal_state_of(b->c.journal, k) == JOURNAL_INTENT)
			continue;
		struct prune_call *pc = xcalloc(1, sizeof *pc);
		pc->b = b;
		pc->why = why[i];
		snprintf(pc->uri, sizeof pc->uri, "%s", items[i].uri);
		if (strlen(items[i].uri) + 6 <= JOURNAL_KEY_MAX)
			snprintf(pc->key, sizeof pc->key, "prune:%s", items[i].uri);
		else
			outbound_idem_key(CONV_PLATFORM_BLUESKY, "prune", items[i].uri,
			                  strlen(items[i].uri), pc->key);
		struct ga_err err = {{0}};
		enum journal_state js = journal_state_of(b->c.journal, pc->key);
		if (js == JOURNAL_DONE || js == JOURNAL_INTENT ||
		    journal_intent(b->c.journal, pc->key, "bluesky", "bluesky:prune", NULL,
		                   now_ms(), &err) < 0) {
			free(pc);
			continue;
		}
		if (atp_delete_uri(b->c.atp, pc->uri, on_pruned, pc, &err) == 0) {
			journal_failed(b->c.journal, pc->key, err.msg, now_ms(), &err);
			free(pc);
		}
	}
}

static void on_identity_posted(void *ud, const struct decision *final, const char *artifact)
{
	struct bsky *b = ud;
	if (final->verdict == VERDICT_SENT && artifact) {
		snprintf(b->st->identity_uri, sizeof b->st->identity_uri, "%s", artifact);
		save_state(b);
	}
}

static void identity_check(struct bsky *b, const cJSON *feed)
{
	char text[400];
	if (!b->github || bsky_identity_text(b->github, text, sizeof text) < 0)
		return;
	const cJSON *x;
	cJSON_ArrayForEach(x, feed)
	{
		if (cJSON_GetObjectItemCaseSensitive(x, "reason"))
			continue;
		const cJSON *post = cJSON_GetObjectItemCaseSensitive(x, "post");
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(post, "record");
		if (cJSON_GetObjectItemCaseSensitive(rec, "reply"))
			continue;
		if (bsky_is_identity_post(json_string_or(rec, "text", ""))) {
			snprintf(b->st->identity_uri, sizeof b->st->identity_uri, "%s",
			         json_string_or(post, "uri", ""));
			return;
		}
	}
	/* remembered by URI: not re-posted because it scrolled out (§11.11) */
	if (b->st->identity_uri[0])
		return;
	char id[64];
	snprintf(id, sizeof id, "identity:%.40s", b->github);
	pipeline_say(b->c.pipeline, CONV_PLATFORM_BLUESKY, "bluesky:post", "bluesky", text,
	             strlen(text), -1, id, on_identity_posted, b);
}

static void on_feed(const struct atp_result *res, void *ud)
{
	struct bsky *b = ud;
	struct sched_job *j = b->feed_running;
	b->feed_running = NULL;
	if (res->kind != ATP_OK || !res->json) {
		/* never post an identity or prune on a failed read (§11.11) */
		if (res->kind != ATP_ERR_CANCELLED)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "own feed unreadable", "error", res->msg);
		if (j)
			sched_job_done(j);
		return;
	}
	const cJSON *feed = cJSON_GetObjectItemCaseSensitive(res->json, "feed");
	struct bsky_feed_item items[BSKY_PRUNE_MAX_ITEMS];
	const cJSON *recs[BSKY_PRUNE_MAX_ITEMS];
	size_t n = 0;
	int64_t last_top = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, feed)
	{
		if (n == BSKY_PRUNE_MAX_ITEMS)
			break;
		const cJSON *post = cJSON_GetObjectItemCaseSensitive(x, "post");
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(post, "record");
		if (strcmp(str_at(post, "author", "did"), b->did) != 0)
			continue;
		const cJSON *reply = cJSON_GetObjectItemCaseSensitive(rec, "reply");
		int64_t ms = 0;
		time_parse_iso(json_string_or(rec, "createdAt", ""), &ms);
		bool repost = cJSON_GetObjectItemCaseSensitive(x, "reason") != NULL;
		if (!reply && !repost && ms > last_top)
			last_top = ms;
		if (!b->warmed && !reply && !repost && b->nrecent < BSKY_RECENT_POSTS)
			b->recent[b->nrecent++] = xstrdup(json_string_or(rec, "text", ""));
		recs[n] = rec;
		items[n++] = (struct bsky_feed_item){
		        .uri = json_string_or(post, "uri", ""),
		        .text = json_string_or(rec, "text", ""),
		        .created_ms = ms,
		        .root_uri = reply ? str_at(reply, "root", "uri") : NULL,
		        .is_repost = repost};
	}
	if (!b->warmed) {
		b->warmed = true;
		identity_check(b, feed);
		if (last_top > b->st->last_post_ms)
			b->st->last_post_ms = last_top;
		if (!b->st->next_expression_ms)
			b->st->next_expression_ms =
			        bsky_expression_next(now_ms(), b->st->last_post_ms,
			                             (double)(random_below(1000000)) / 1e6);
	}
	prune(b, items, recs, n);
	save_state(b);
	if (j)
		sched_job_done(j);
}

static void feed_run(struct sched_job *job, void *ud)
{
	struct bsky *b = ud;
	if (!b->logged_in || b->quiescing) {
		sched_job_done(job);
		return;
	}
	b->feed_running = job;
	struct ga_err err = {{0}};
	if (atp_get_author_feed(b->c.atp, b->did, NULL, NULL, BSKY_FEED_LIMIT, on_feed, b, &err) ==
	    0) {
		b->feed_running = NULL;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "own feed not asked", "error", err.msg);
		sched_job_done(job);
	}
}

/* ---- peers: follow, announce once (§7.4) ----------------------------------------------- */

struct peer_call {
	struct bsky *b;
	char did[BSKY_DID_MAX];
	char handle[BSKY_HANDLE_MAX];
};

static void on_followed(const struct atp_result *res, void *ud)
{
	struct peer_call *pc = ud;
	struct bsky *b = pc->b;
	b->peer_busy = false;
	if (res->kind != ATP_ERR_CANCELLED) {
		struct bsky_peer *p = bsky_state_peer(b->st, NULL, pc->did);
		if (res->kind == ATP_OK && p) {
			p->followed = true;
			note_decision(b, "bluesky:peers", pc->did, STAGE_OUTBOUND, VERDICT_SENT,
			              "follow", "followed the peer @%s", pc->handle);
			save_state(b);
		} else if (res->kind != ATP_OK) {
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "follow failed", "did", pc->did, "error",
			       res->msg);
		}
	}
	free(pc);
}

static void on_announced(void *ud, const struct decision *final, const char *artifact)
{
	struct peer_call *pc = ud;
	struct bsky *b = pc->b;
	b->peer_busy = false;
	struct bsky_peer *p = bsky_state_peer(b->st, NULL, pc->did);
	/* a dropped duplicate (the journal knows it was sent) counts as done */
	if (p &&
	    (final->verdict == VERDICT_SENT || (final->verdict == VERDICT_DROP && final->rule &&
	                                        strcmp(final->rule, "journal") == 0))) {
		p->announced = true;
		save_state(b);
	}
	(void)artifact;
	free(pc);
}

static void on_peer_rescan(const struct atp_result *res, void *ud)
{
	struct peer_call *pc = ud;
	struct bsky *b = pc->b;
	b->peer_busy = false;
	if (res->kind != ATP_ERR_CANCELLED) {
		struct bsky_peer *p =
		        bsky_state_peer(b->st, pc->handle, pc->did[0] ? pc->did : NULL);
		if (p)
			p->verified_ms = now_ms(); /* asked, found or not */
		peer_scanned(b, pc->handle, pc->did[0] ? pc->did : NULL, "thread", res);
		save_state(b);
	}
	free(pc);
}

static void peers_run(struct sched_job *job, void *ud)
{
	struct bsky *b = ud;
	sched_job_done(job); /* each step below is one call, guarded by peer_busy */
	if (!b->logged_in || b->quiescing || b->peer_busy)
		return;
	int64_t now = now_ms();
	struct ga_err err = {{0}};
	for (size_t i = 0; i < b->st->npeers; i++) {
		struct bsky_peer *p = &b->st->peers[i];
		struct peer_call *pc = xcalloc(1, sizeof *pc);
		pc->b = b;
		snprintf(pc->did, sizeof pc->did, "%s", p->did);
		snprintf(pc->handle, sizeof pc->handle, "%s", p->handle);
		if (!p->github[0] && p->handle[0] && now - p->verified_ms > BSKY_PEER_RESCAN_MS) {
			b->peer_busy = true;
			if (atp_get_author_feed(b->c.atp, p->handle, "posts_no_replies", NULL,
			                        BSKY_FEED_LIMIT, on_peer_rescan, pc, &err) == 0) {
				b->peer_busy = false;
				free(pc);
			}
			return;
		}
		if (p->github[0] && p->did[0] && !p->followed) {
			if (bsky_pacing_wait(&b->pacing, BSKY_ACT_FOLLOW, now) > 0) {
				free(pc);
				continue;
			}
			bsky_pacing_note(&b->pacing, BSKY_ACT_FOLLOW, now);
			b->peer_busy = true;
			if (atp_follow(b->c.atp, p->did, on_followed, pc, &err) == 0) {
				b->peer_busy = false;
				free(pc);
			}
			return;
		}
		if (p->github[0] && p->followed && !p->announced && p->handle[0]) {
			char text[400], id[BSKY_DID_MAX + 16];
			if (bsky_announce_text(p->handle, p->github, text, sizeof text) < 0) {
				p->announced = true; /* nothing sayable: never again */
				free(pc);
				continue;
			}
			snprintf(id, sizeof id, "announce:%s", p->did);
			b->peer_busy = true;
			pipeline_say(b->c.pipeline, CONV_PLATFORM_BLUESKY, "bluesky:post",
			             "bluesky", text, strlen(text), -1, id, on_announced, pc);
			return;
		}
		free(pc);
	}
}

/* ---- proactive posts: expression (§7.1) and ritual openings (§7.3) ------------------------- */

static int post_sink(const char *action, const cJSON *params, void *ud, char *result, size_t cap,
                     struct ga_err *err)
{
	struct bsky *b = ud;
	if (strcmp(action, "post_bluesky") != 0) {
		err_set(err, "only bluesky_post is available for this post");
		return -1;
	}
	if (b->post_text) {
		err_set(err, "one post per turn: it is already written");
		return -1;
	}
	b->post_text = xstrdup(json_string_or(params, "text", ""));
	snprintf(result, cap, "Queued: the post goes out after its checks.");
	return 0;
}

static void post_end(struct bsky *b)
{
	b->posting = false;
	free(b->post_text);
	b->post_text = NULL;
	free(b->post_user);
	b->post_user = NULL;
	b->post_revised = false;
	b->post_run = NULL;
}

static void post_compose_msgs(struct bsky *b, const char *skill_name, int warn_slot,
                              const struct llm_message *msgs, size_t n);

/* §7.1: the draft's invitation is weak or missing — the model is asked once
 * for a revision with a stronger one, with a choice, a bounded and a direct
 * example picked at random. */
static void expression_revise(struct bsky *b, const struct decision *inv)
{
	static const char *const choice[] = {"Prefer practical or inspirational?",
	                                     "Speed or accuracy here?", "More of this or less?",
	                                     "Verbose or concise?"};
	static const char *const bounded[] = {"What's one thing you'd add?",
	                                      "What's your version of this?",
	                                      "What's one example from your work?"};
	static const char *const direct[] = {"What's yours?", "Does this resonate?",
	                                     "Anyone else notice this?", "How about you?"};
	note_decision(b, "bluesky:post", "expression", STAGE_VALIDATOR, VERDICT_INFO,
	              "invitation_revise", "Revising post — adding stronger invitation (%s)",
	              inv->reason);
	char *draft = b->post_text;
	b->post_text = NULL;
	b->post_revised = true;
	struct strbuf sb;
	sb_init(&sb, 16 * 1024);
	sb_printf(&sb,
	          "Your draft does not invite an answer (%s). Revise it once with a stronger "
	          "invitation, so anyone can answer in one sentence: end with a choice question "
	          "(like \"%s\"), or a bounded question with a direct invitation (like \"%s "
	          "%s\"), or give a tiny template with its link. Keep the thought; publish the "
	          "revision with bluesky_post.\n\nYour draft:\n%s\n",
	          inv->reason, choice[random_below(4)], bounded[random_below(3)],
	          direct[random_below(4)], draft);
	char *revise = sb_detach(&sb);
	struct llm_message msgs[] = {{.role = LLM_ROLE_USER, .content = b->post_user},
	                             {.role = LLM_ROLE_ASSISTANT, .content = draft},
	                             {.role = LLM_ROLE_USER, .content = revise}};
	post_compose_msgs(b, BSKY_EXPRESSION_SKILL, 0, msgs, 3);
	free(revise);
	free(draft);
}

static void on_post_sent(void *ud, const struct decision *final, const char *artifact)
{
	struct bsky *b = ud;
	int64_t now = now_ms();
	bool sent = final->verdict == VERDICT_SENT;
	if (strcmp(b->post_kind, "expression") == 0) {
		if (sent) {
			b->st->expr_today++;
			b->st->last_post_ms = now;
			if (b->nrecent < BSKY_RECENT_POSTS && b->post_text)
				b->recent[b->nrecent++] = xstrdup(b->post_text);
		}
		/* sent: 3–4 h from now; refused: try again in an hour */
		b->st->next_expression_ms =
		        sent ? bsky_expression_next(now, now, (double)random_below(1000000) / 1e6)
		             : now + 60LL * 60 * 1000;
	} else if (sent && artifact) {
		struct bsky_ritual_state *r = bsky_state_ritual(b->st, b->post_ritual);
		if (r)
			bsky_state_ritual_run(r, b->post_date, artifact, true);
		b->st->last_post_ms = now;
	}
	save_state(b);
	post_end(b);
}

static void on_post_composed(const struct compose_result *res, void *ud)
{
	struct bsky *b = ud;
	b->post_run = NULL;
	if (b->quiescing) {
		post_end(b);
		return;
	}
	if (!b->post_text || !*b->post_text) {
		note_decision(b, "bluesky:post", b->post_kind, STAGE_COMPOSE, VERDICT_INFO,
		              "no_post", "the model wrote no %s post (%s): %.200s", b->post_kind,
		              res->stop_name, res->content ? res->content : res->reason);
		if (strcmp(b->post_kind, "expression") == 0) {
			b->st->next_expression_ms = now_ms() + 60LL * 60 * 1000;
			save_state(b);
		}
		post_end(b);
		return;
	}
	if (strcmp(b->post_kind, "expression") == 0) {
		/* §7.1, Scenario 1.8: every expression ends with an open door */
		struct decision inv;
		enum bsky_invitation cls = bsky_invitation_classify(b->post_text, &inv);
		if (cls != BSKY_INVITE_STRONG && !b->post_revised) {
			expression_revise(b, &inv);
			return;
		}
		if (cls != BSKY_INVITE_STRONG) {
			note_decision(b, "bluesky:post", "expression", STAGE_VALIDATOR,
			              VERDICT_REJECT, "invitation",
			              "the revised expression still has a %s invitation (%s): not "
			              "posted: %.200s",
			              bsky_invitation_name(cls), inv.reason, b->post_text);
			b->st->next_expression_ms = now_ms() + 60LL * 60 * 1000;
			save_state(b);
			post_end(b);
			return;
		}
		note_decision(b, "bluesky:post", "expression", STAGE_VALIDATOR, VERDICT_PASS,
		              inv.rule, "%s%s", inv.reason,
		              b->post_revised ? " (after one revision)" : "");
	}
	/* the validator compares with our own recent posts: no echo of
	 * ourselves (§7.1) */
	struct echo_window *w = echo_window_new(BSKY_RECENT_POSTS);
	for (size_t i = 0; i < b->nrecent; i++)
		echo_window_push(w, b->handle, true, b->recent[i]);
	struct validator_context vc = {.platform = VALIDATOR_PLATFORM_BLUESKY,
	                               .mode = VALIDATOR_MODE_DISCUSSION,
	                               .role = VALIDATOR_ROLE_ACTOR,
	                               .is_action_owner = true,
	                               .window = w,
	                               .connected_agents = 1};
	char id[200];
	if (strcmp(b->post_kind, "ritual") == 0)
		/* the journal key holds one opening per ritual and day, across
		 * restarts even if the state file were lost */
		snprintf(id, sizeof id, "ritual:%.100s:%s", b->post_ritual, b->post_date);
	else
		snprintf(id, sizeof id, "expression:%" PRId64, now_ms());
	for (char *c = id; *c; c++)
		if (*c <= ' ' || *c > '~')
			*c = '_';
	pipeline_say_ctx(b->c.pipeline, CONV_PLATFORM_BLUESKY, "bluesky:post", "bluesky",
	                 b->post_text, strlen(b->post_text), -1, false, id, &vc, on_post_sent, b);
	echo_window_free(w);
}

/* Starts the model on a proactive post with skill and the messages. */
static void post_compose_msgs(struct bsky *b, const char *skill_name, int warn_slot,
                              const struct llm_message *msgs, size_t nmsgs)
{
	struct ga_err err = {{0}};
	if (!b->c.llm || !b->c.skills || !skills_find(b->c.skills, skill_name)) {
		if (!b->warned_skill[warn_slot])
			note_decision(
			        b, "bluesky:post", b->post_kind, STAGE_COMPOSE, VERDICT_INFO,
			        "no_skill", "no %s post: %s", b->post_kind,
			        !b->c.llm ? "no model is configured"
			                  : "the skill is not installed (skills/<name>/SKILL.md)");
		b->warned_skill[warn_slot] = true;
		post_end(b);
		return;
	}
	struct skill_var vars[] = {{"blueskyUsername", b->handle},
	                           {"ownerHandle", b->owner_handle ? b->owner_handle : "(none)"},
	                           {"agentName", b->agent_name}};
	char *skill = skills_render(b->c.skills, skill_name, NULL, vars, 3, &err);
	if (!skill) {
		note_decision(b, "bluesky:post", b->post_kind, STAGE_COMPOSE, VERDICT_FAIL,
		              "prompt", "%s", err.msg);
		post_end(b);
		return;
	}
	char *self = read_self(b);
	char *system = skills_system_prompt(b->soul, self, skill);
	free(self);
	free(skill);
	size_t n = 0;
	const struct tools_def *cat = tools_catalogue(&n);
	b->post_sink = (struct tools_sink){.enqueue = post_sink, .ud = b};
	struct compose_tool all[TOOLS_MAX];
	size_t k =
	        tools_select(TOOLS_MODE_BLUESKY, TOOLS_CAP_SOCIAL, &b->post_sink, all, TOOLS_MAX);
	(void)cat;
	bool have = false;
	for (size_t i = 0; i < k; i++)
		if (strcmp(all[i].name, "bluesky_post") == 0) {
			b->post_tool = all[i];
			have = true;
		}
	if (!have) {
		free(system);
		post_end(b);
		return;
	}
	struct compose_opts o = {.loop = b->c.loop,
	                         .llm = b->c.llm,
	                         .budget = b->c.budget,
	                         .system_prompt = system,
	                         .messages = msgs,
	                         .n_messages = nmsgs,
	                         .tools = &b->post_tool,
	                         .n_tools = 1,
	                         .tool_choice = LLM_TOOL_CHOICE_NAMED,
	                         .tool_choice_name = "bluesky_post",
	                         .max_rounds = BSKY_COMPOSE_ROUNDS,
	                         .done = on_post_composed,
	                         .ud = b};
	b->post_run = compose_start(&o, &err);
	free(system);
	if (!b->post_run) {
		note_decision(b, "bluesky:post", b->post_kind, STAGE_COMPOSE, VERDICT_FAIL,
		              "prompt", "%s", err.msg);
		post_end(b);
	}
}

/* Starts the model on a proactive post with skill and one user message
 * (kept for a revision). */
static void post_compose(struct bsky *b, const char *skill_name, int warn_slot, const char *user)
{
	free(b->post_user);
	b->post_user = xstrdup(user);
	b->post_revised = false;
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = b->post_user};
	post_compose_msgs(b, skill_name, warn_slot, &msg, 1);
}

/* A seed from SELF.md for the expression (the reference's prompt
 * generators pick one section's item). */
static void expression_seed(const struct bsky *b, struct strbuf *sb)
{
	const struct self_doc *d = b->c.self;
	if (!d)
		return;
	const struct {
		const char *name;
		const struct self_list *l;
	} lists[] = {{"values", &d->values},
	             {"questions", &d->questions},
	             {"patterns", &d->patterns},
	             {"learnings", &d->learnings},
	             {"explorations", &d->explorations},
	             {"current focus", &d->current_focus}};
	size_t total = 0;
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
		total += lists[i].l->count;
	if (total == 0) {
		if (d->purpose)
			sb_printf(sb, "From SELF.md (purpose): %s\n", d->purpose);
		return;
	}
	uint64_t pick = random_below(total);
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		if (pick < lists[i].l->count) {
			sb_printf(sb, "From SELF.md (%s): %s\n", lists[i].name,
			          lists[i].l->items[pick]);
			return;
		}
		pick -= lists[i].l->count;
	}
}

static void expression_run(struct sched_job *job, void *ud)
{
	struct bsky *b = ud;
	sched_job_done(job);
	if (!b->logged_in || b->quiescing || b->posting || !b->warmed)
		return;
	int64_t now = now_ms();
	int hour;
	char date[11];
	local_now(now, NULL, &hour, date);
	if (strcmp(date, b->st->expr_date) != 0) {
		snprintf(b->st->expr_date, sizeof b->st->expr_date, "%s", date);
		b->st->expr_today = 0;
	}
	if (!b->st->next_expression_ms)
		b->st->next_expression_ms = bsky_expression_next(
		        now, b->st->last_post_ms, (double)random_below(1000000) / 1e6);
	struct decision d;
	if (!bsky_expression_allowed(now, b->st->next_expression_ms, hour, b->st->expr_today, &d))
		return;
	b->posting = true;
	snprintf(b->post_kind, sizeof b->post_kind, "expression");
	struct strbuf sb;
	sb_init(&sb, 64 * 1024);
	sb_printf(&sb, "Today is %s. Expressions today: %d of %d.\n", date, b->st->expr_today,
	          BSKY_EXPR_DAILY_CAP);
	expression_seed(b, &sb);
	if (b->nrecent) {
		sb_puts(&sb, "Your recent posts (say something new):\n");
		for (size_t i = 0; i < b->nrecent; i++)
			sb_printf(&sb, "- %s\n", b->recent[i]);
	}
	char *user = sb_detach(&sb);
	post_compose(b, BSKY_EXPRESSION_SKILL, 0, user);
	free(user);
}

static void ritual_run(struct sched_job *job, void *ud)
{
	struct bsky *b = ud;
	sched_job_done(job);
	if (!b->logged_in || b->quiescing || b->posting || !b->c.self)
		return;
	int64_t now = now_ms();
	int wday, hour;
	char date[11];
	local_now(now, &wday, &hour, date);
	static const char *days[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
	                             "Thursday", "Friday", "Saturday"};
	for (size_t i = 0; i < b->c.self->ritual_count; i++) {
		const struct self_ritual *r = &b->c.self->rituals[i];
		struct bsky_ritual_state *rs = bsky_state_ritual(b->st, r->name);
		struct decision d;
		if (!rs || !bsky_ritual_due(r, wday, hour, date, rs->last_initiated,
		                            BSKY_RITUAL_EARLIEST_H, &d))
			continue;
		pipeline_note(b->c.pipeline, CONV_PLATFORM_BLUESKY, "bluesky:post", r->name,
		              STAGE_EVENT, &d);
		b->posting = true;
		snprintf(b->post_kind, sizeof b->post_kind, "ritual");
		snprintf(b->post_ritual, sizeof b->post_ritual, "%s", r->name);
		snprintf(b->post_date, sizeof b->post_date, "%s", date);
		struct strbuf sb;
		sb_init(&sb, 64 * 1024);
		sb_printf(&sb, "Ritual: %s\nDate: %s (%s)\nWorkspace: %s\nParticipants:", r->name,
		          date, days[wday % 7], r->workspace ? r->workspace : "");
		for (size_t k = 0; k < r->participant_count; k++)
			sb_printf(&sb, " %s", r->participants[k]);
		sb_printf(&sb, "\nDescription: %s\nHistory:\n",
		          r->description ? r->description : "");
		if (!rs->nruns)
			sb_puts(&sb, "No previous history — first time\n");
		for (size_t k = rs->nruns > 5 ? rs->nruns - 5 : 0; k < rs->nruns; k++)
			sb_printf(&sb, "- %s: %s\n", rs->runs[k].date, rs->runs[k].thread_uri);
		char *user = sb_detach(&sb);
		post_compose(b, BSKY_RITUAL_SKILL, 1, user);
		free(user);
		return;
	}
}

/* ---- start ----------------------------------------------------------------------------------- */

static void add_jobs(struct bsky *b)
{
	if (!b->c.sched)
		return;
	struct sched_job_opts o = {.name = "bluesky-awareness",
	                           .interval_ms = b->c.awareness_ms ? b->c.awareness_ms
	                                                            : BSKY_AWARENESS_MS,
	                           .jitter_pct = 0.12,
	                           .run = awareness_run,
	                           .ud = b};
	b->j_aware = sched_add(b->c.sched, &o);
	o = (struct sched_job_opts){.name = "bluesky-feed",
	                            .interval_ms = b->c.feed_ms ? b->c.feed_ms : BSKY_FEED_MS,
	                            .jitter_pct = 0.12,
	                            .run = feed_run,
	                            .ud = b};
	b->j_feed = sched_add(b->c.sched, &o);
	o = (struct sched_job_opts){.name = "bluesky-peers",
	                            .interval_ms = b->c.peers_ms ? b->c.peers_ms : BSKY_PEERS_MS,
	                            .jitter_pct = 0.12,
	                            .first_delay_ms = 1000,
	                            .run = peers_run,
	                            .ud = b};
	b->j_peers = sched_add(b->c.sched, &o);
	o = (struct sched_job_opts){.name = "bluesky-expression",
	                            .interval_ms = b->c.expression_ms ? b->c.expression_ms
	                                                              : BSKY_EXPRESSION_MS,
	                            .jitter_pct = 0.12,
	                            .first_delay_ms = 5000,
	                            .run = expression_run,
	                            .ud = b};
	b->j_expr = sched_add(b->c.sched, &o);
	o = (struct sched_job_opts){.name = "bluesky-rituals",
	                            .interval_ms = b->c.ritual_ms ? b->c.ritual_ms : BSKY_RITUAL_MS,
	                            .jitter_pct = 0.12,
	                            .first_delay_ms =
	                                    b->c.ritual_ms ? b->c.ritual_ms : BSKY_RITUAL_FIRST_MS,
	                            .run = ritual_run,
	                            .ud = b};
	b->j_ritual = sched_add(b->c.sched, &o);
}

static void on_login(const struct atp_result *res, void *ud)
{
	struct bsky *b = ud;
	if (res->kind != ATP_OK || !res->json) {
		if (res->kind == ATP_ERR_CANCELLED)
			return;
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "Bluesky login failed: nothing is read or posted",
		       "error", res->msg);
		return;
	}
	snprintf(b->did, sizeof b->did, "%s", json_string_or(res->json, "did", ""));
	snprintf(b->handle, sizeof b->handle, "%s", json_string_or(res->json, "handle", ""));
	b->logged_in = true;
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "signed in", "did", b->did, "handle", b->handle);
	add_jobs(b);
}

struct bsky *bsky_new(const struct bsky_config *c, struct ga_err *err)
{
	if (!c || !c->loop || !c->atp || !c->pipeline || !c->outbound) {
		err_set(err,
		        "Bluesky needs the loop, the AT Protocol client, the pipeline and outbound "
		        "(one of them is missing)");
		return NULL;
	}
	struct bsky *b = xcalloc(1, sizeof *b);
	b->c = *c;
	b->agent_name = xstrdup(c->agent_name ? c->agent_name : "agent");
	b->owner_did = c->owner_did && *c->owner_did ? xstrdup(c->owner_did) : NULL;
	b->owner_handle = c->owner_handle ? xstrdup(c->owner_handle) : NULL;
	b->github = c->github_username && *c->github_username ? xstrdup(c->github_username) : NULL;
	b->soul = c->soul_text ? xstrdup(c->soul_text) : NULL;
	b->self_path = c->self_path ? xstrdup(c->self_path) : NULL;
	b->c.agent_name = b->agent_name;
	b->st = bsky_state_new();
	b->batch = xcalloc(BSKY_BATCH_MAX, sizeof *b->batch);
	bsky_pacing_init(&b->pacing);
	if (c->pace_ms > 0) {
		for (int i = 0; i < BSKY_ACT_COUNT; i++)
			b->pacing.gap_ms[i] = c->pace_ms;
		b->pacing.any_gap_ms = c->pace_ms;
	}
	uv_timer_init(c->loop, &b->like_timer);
	b->like_timer.data = b;
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++) {
		b->notes[i].b = b;
		uv_timer_init(c->loop, &b->notes[i].timer);
		b->notes[i].timer.data = &b->notes[i];
	}
	return b;
}

int bsky_start(struct bsky *b, struct ga_err *err)
{
	if (b->c.st)
		bsky_state_load(b->st, b->c.st, NULL, NULL);
	struct pipeline_source src = {.platform = CONV_PLATFORM_BLUESKY,
	                              .compose = on_compose,
	                              .reply_target = reply_target,
	                              .done = on_walk_done,
	                              .reply_extra = on_reply_extra,
	                              .ud = b};
	if (pipeline_add_source(b->c.pipeline, &src) < 0) {
		err_set(err, "the pipeline already has a Bluesky source");
		return -1;
	}
	if (atp_login(b->c.atp, on_login, b, err) == 0)
		return -1;
	b->started = true;
	return 0;
}

void bsky_quiesce(struct bsky *b)
{
	if (!b)
		return;
	b->quiescing = true;
	uv_timer_stop(&b->like_timer);
	if (b->post_run)
		compose_cancel(b->post_run);
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++) {
		struct bnote *n = &b->notes[i];
		if (n->run) {
			compose_cancel(n->run);
		}
	}
}

static void on_closed(uv_handle_t *h)
{
	struct bsky *b = h->data;
	if (--b->closing_handles == 0) {
		free(b->batch);
		free(b);
	}
}

void bsky_free(struct bsky *b)
{
	if (!b)
		return;
	b->quiescing = true;
	batch_clear(b);
	save_state(b);
	for (size_t i = 0; i < BSKY_REFS_MAX; i++)
		cJSON_Delete(b->refs[i].extra);
	bsky_state_free(b->st);
	free(b->agent_name);
	free(b->owner_did);
	free(b->owner_handle);
	free(b->github);
	free(b->soul);
	free(b->self_path);
	free(b->post_text);
	free(b->post_user);
	for (size_t i = 0; i < b->nrecent; i++)
		free(b->recent[i]);
	b->closing_handles = 1 + BSKY_MAX_INFLIGHT;
	for (size_t i = 0; i < BSKY_MAX_INFLIGHT; i++) {
		struct bnote *n = &b->notes[i];
		free(n->text);
		free(n->reply);
		for (size_t k = 0; k < n->nthread; k++)
			free(n->thread[k].text);
		n->timer.data = b;
		uv_close((uv_handle_t *)&n->timer, on_closed);
	}
	b->like_timer.data = b;
	uv_close((uv_handle_t *)&b->like_timer, on_closed);
}

cJSON *bsky_status(struct bsky *b)
{
	cJSON *o = cJSON_CreateObject();
	struct atp_session_info si;
	atp_session_get(b->c.atp, &si);
	cJSON_AddStringToObject(o, "session", si.active ? "active" : "none");
	cJSON_AddStringToObject(o, "did", b->did);
	cJSON_AddStringToObject(o, "handle", b->handle);
	if (b->last_check_ms) {
		char iso[TIME_ISO_LEN + 1];
		cJSON_AddStringToObject(o, "lastCheck", time_format_iso(b->last_check_ms, iso));
	} else {
		cJSON_AddNullToObject(o, "lastCheck");
	}
	cJSON_AddNumberToObject(o, "checks", (double)b->checks);
	cJSON_AddNumberToObject(o, "handled", (double)b->st->handled_total);
	cJSON_AddNumberToObject(o, "inFlight", (double)notes_in_flight(b));
	cJSON_AddNumberToObject(o, "cursorMs", (double)b->st->seen_until_ms);
	cJSON_AddNumberToObject(o, "conversations", (double)b->st->nconvs);
	cJSON_AddNumberToObject(o, "peers", (double)b->st->npeers);
	cJSON_AddNumberToObject(o, "pruned", (double)b->pruned);
	cJSON *rate = cJSON_AddObjectToObject(o, "rate");
	static const char *names[] = {"read", "write", "session"};
	for (int k = 0; k < ATP_RL_COUNT; k++) {
		struct atp_budget bud;
		if (atp_rate_snapshot(b->c.atp, (enum atp_rate_class)k, &bud) < 0 || !bud.known)
			continue;
		cJSON *x = cJSON_AddObjectToObject(rate, names[k]);
		cJSON_AddNumberToObject(x, "limit", (double)bud.limit);
		cJSON_AddNumberToObject(x, "remaining", (double)bud.remaining);
		cJSON_AddNumberToObject(x, "resetMs", (double)bud.reset_ms);
	}
	return o;
}
