/* GitHub conversations: notifications, threads, the pipeline. See ghconv.h. */
#include "modules/ghconv/ghconv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/github/gh_work.h"
#include "adapters/github/github.h"
#include "adapters/llm/llm.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "local-tools/tools.h"
#include "modules/commitments/ledger.h"
#include "modules/compose/compose.h"
#include "modules/conversation/store.h"
#include "modules/ghconv/policy.h"
#include "modules/ghconv/review.h"
#include "modules/github/port.h"
#include "modules/identity/self.h"
#include "modules/outbound/outbound.h"
#include "modules/pipeline/pipeline.h"
#include "modules/skills/skills.h"
#include "modules/state/state.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

#define LOG_COMP          "ghconv"
#define GHCONV_SKILL      "github-reply"
#define GHCONV_REV_SKILL  "github-review"
#define GHCONV_SELF_BYTES 4096
#define CONV_KEY_MAX      (GH_OWNER_MAX + GH_REPO_MAX + 40)
#define MSG_ID_MAX        (CONV_KEY_MAX + 64)

/* Where an item is on its walk (one active at a time). */
enum item_state {
	IT_QUEUED,
	IT_FETCH_ISSUE,
	IT_FETCH_COMMENTS,
	IT_CLEANUP,
	IT_WALK, /* pipeline_event accepted it: its walk (gate, compose, reply or
	            reaction) ends in src_done */
	IT_MARK, /* marking the notification read */
};

struct item {
	struct item *next;
	char key[CONV_KEY_MAX];       /* owner/repo#n */
	char conv[CONV_KEY_MAX + 16]; /* github:owner/repo#n (a review: …#n:review) */
	struct gh_ref ref;
	char notif_id[GHCONV_NOTIF_ID_MAX];
	int64_t notif_updated_ms;
	char reason[GHCONV_REASON_MAX];
	int64_t due_ms;
	enum item_state st;
	cJSON *issue;
	bool have_thread;
	struct ghconv_thread t;
	struct ghconv_peers peers;
	struct ghconv_verdict v;
	char trigger_id[MSG_ID_MAX];
	int64_t trigger_comment;             /* comment id, 0 = the description */
	char trigger_peer[GHCONV_LOGIN_MAX]; /* its author when an agent, else "" */
	struct gate_result g;
	int64_t dups[GHCONV_MAX_DUPLICATES];
	size_t ndups, idup;
	/* the walk's job while the model composes */
	struct pipeline_job *job;
	bool retry; /* the walk ended on a failure worth another poll */
	/* what the model gave */
	char *reply;
	bool exit_like;
	/* a review of the pull request (ghconv_review, a review_requested
	 * notification) instead of a reply */
	bool review;
	struct gh_pull pr;
	bool have_pr;
	struct gh_review *reviews;
	size_t nreviews;
	struct gh_pull_file *files;
	size_t nfiles;
	char rkey[GH_PORT_KEY_MAX + 1]; /* the review's journal key (per head) */
	struct ghconv_review_out rout;  /* the model's review */
	bool have_rout;
	bool reviewed; /* outbound sent it */
	/* an open issue of a watched workspace (ghconv_consider_issue) */
	bool ws_issue;
	int64_t issue_updated_ms; /* updated_at: the scan's, then the walk's read */
};

/* A GitHub call of ours (cancelled on free). */
enum call_kind {
	CALL_LIST,
	CALL_ISSUE,
	CALL_COMMENTS,
	CALL_MARK,
	CALL_PULL,
	CALL_REVIEWS,
	CALL_FILES
};

struct gcall {
	struct ghconv *g;
	enum call_kind kind;
	uint64_t id;
	char notif_id[GHCONV_NOTIF_ID_MAX]; /* CALL_MARK of a seen notification */
	struct gcall *prev, *next;
};

/* Callbacks that cannot be cancelled (compose, outbound) hold a reference;
 * ghconv_free detaches it. */
struct anchor {
	struct ghconv *g;
	int refs;
	/* compose borrows the tools for the whole run, which may end after
	 * ghconv_free: they live here. */
	struct tools_sink sink;
	struct compose_tool tools[TOOLS_MAX];
	size_t ntools;
	struct compose_tool rtools[TOOLS_MAX]; /* a review's */
	size_t nrtools;
};

struct ghconv {
	struct ghconv_config c;
	char *agent_name, *login, *api_url;
	char **peers;
	struct anchor *anchor;
	uv_timer_t *timer;
	bool quiesced;
	/* state */
	int64_t since_ms;
	struct ghconv_seen seen;
	struct ghconv_seen issues; /* decided issue states (ghconv_issue_id) */
	struct item *queue;        /* by due time */
	size_t nqueue;
	struct item *active;
	struct gcall *calls;
	size_t ncalls;
	struct compose_run *run;
	/* the poll in flight */
	void (*poll_done)(void *);
	void *poll_ud;
	struct ghconv_stats stats;
	/* PR heads whose review walk ended without a review: that head is not
	 * asked again before GHCONV_REVIEW_RETRY_MS; a new head is (a ring,
	 * the oldest forgotten) */
	struct {
		char key[CONV_KEY_MAX];
		char head[GH_SHA_LEN + 1];
		int64_t at_ms;
	} tried[GHCONV_REVIEW_TRIED];
	size_t ntried;
};

static void next_item(struct ghconv *g);
static void finish(struct ghconv *g, bool handled);
static void arm(struct ghconv *g, int64_t in_ms);

/* ---- decisions and state --------------------------------------------------------- */

static void note(struct ghconv *g, const struct item *it, const char *msg_id,
                 enum decision_stage stage, const struct decision *d)
{
	pipeline_note(g->c.pipeline, CONV_PLATFORM_GITHUB, it->conv,
	              msg_id              ? msg_id
	              : it->trigger_id[0] ? it->trigger_id
	                                  : it->conv,
	              stage, d);
}

static void save_state(struct ghconv *g)
{
	if (!g->c.st)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "format", 1);
	cJSON_AddNumberToObject(o, "sinceMs", (double)g->since_ms);
	cJSON_AddItemToObject(o, "seen", ghconv_seen_to_json(&g->seen));
	cJSON_AddItemToObject(o, "issues", ghconv_seen_to_json(&g->issues));
	struct ga_err err = {{0}};
	if (state_save(g->c.st, GHCONV_STATE_NAME, o, time_now_ms(), &err) != 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "state not saved", "error", err.msg);
	cJSON_Delete(o);
}

static void load_state(struct ghconv *g)
{
	if (!g->c.st)
		return;
	struct state_load_info info;
	cJSON *o = state_load(g->c.st, GHCONV_STATE_NAME, NULL, NULL, &info);
	if (!o)
		return;
	g->since_ms = json_int_or(o, "sinceMs", 0);
	ghconv_seen_from_json(&g->seen, cJSON_GetObjectItemCaseSensitive(o, "seen"));
	ghconv_seen_from_json(&g->issues, cJSON_GetObjectItemCaseSensitive(o, "issues"));
	cJSON_Delete(o);
}

/* ---- GitHub calls ------------------------------------------------------------------------ */

static struct gcall *call_new(struct ghconv *g, enum call_kind kind)
{
	if (g->ncalls >= GHCONV_MAX_CALLS)
		return NULL;
	struct gcall *c = xcalloc(1, sizeof *c);
	c->g = g;
	c->kind = kind;
	c->next = g->calls;
	if (g->calls)
		g->calls->prev = c;
	g->calls = c;
	g->ncalls++;
	return c;
}

static void call_free(struct gcall *c)
{
	struct ghconv *g = c->g;
	if (c->prev)
		c->prev->next = c->next;
	else
		g->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	g->ncalls--;
	free(c);
}

static void fetch_failed(struct ghconv *g, const struct gh_result *r, const char *what);

/* A call of the active walk that did not start: c is NULL when
 * GHCONV_MAX_CALLS were in flight, else err says why. The walk ends as
 * after a transient failure (it comes back with the next cycle). */
static void call_failed(struct ghconv *g, struct gcall *c, const struct ga_err *err,
                        const char *what)
{
	struct gh_result fake = {.kind = GH_ERR_TRANSIENT};
	snprintf(fake.msg, sizeof fake.msg, "%s", c ? err->msg : "too many GitHub calls in flight");
	if (c)
		call_free(c);
	fetch_failed(g, &fake, what);
}

/* The end of a call about the active thread: the call is forgotten; the
 * active item, or NULL when the call was cancelled or none is active. */
static struct item *call_end(void *ud, const struct gh_result *r, struct ghconv **gp)
{
	struct gcall *c = ud;
	struct ghconv *g = c->g;
	call_free(c);
	*gp = g;
	return r->kind == GH_ERR_CANCELLED ? NULL : g->active;
}

/* ---- the queue ---------------------------------------------------------------------------- */

static void item_free(struct item *it)
{
	if (!it)
		return;
	cJSON_Delete(it->issue);
	ghconv_thread_free(&it->t);
	free(it->reply);
	if (it->have_pr)
		gh_pull_clear(&it->pr);
	gh_reviews_free(it->reviews, it->nreviews);
	gh_pull_files_free(it->files, it->nfiles);
	ghconv_review_out_clear(&it->rout);
	free(it);
}

/* The thread's item (a reply) or the PR's review item, queued or active. */
static struct item *queued(struct ghconv *g, const char *key, bool review)
{
	for (struct item *it = g->queue; it; it = it->next)
		if (it->review == review && strcasecmp(it->key, key) == 0)
			return it;
	if (g->active && g->active->review == review && strcasecmp(g->active->key, key) == 0)
		return g->active;
	return NULL;
}

/* A new item about owner/repo#number (key: its thread key); review: a
 * review of the pull request rather than a reply. */
static struct item *item_new(const char *key, const char *owner, const char *repo, int64_t number,
                             enum gh_ref_kind kind, bool review, const char *reason)
{
	struct item *it = xcalloc(1, sizeof *it);
	it->review = review;
	snprintf(it->key, sizeof it->key, "%s", key);
	snprintf(it->conv, sizeof it->conv, "github:%s%s", key, review ? ":review" : "");
	snprintf(it->ref.owner, sizeof it->ref.owner, "%s", owner);
	snprintf(it->ref.repo, sizeof it->ref.repo, "%s", repo);
	it->ref.number = number;
	it->ref.kind = kind;
	snprintf(it->reason, sizeof it->reason, "%s", reason);
	return it;
}

static void enqueue(struct ghconv *g, struct item *it)
{
	struct item **pp = &g->queue;
	while (*pp && (*pp)->due_ms <= it->due_ms)
		pp = &(*pp)->next;
	it->next = *pp;
	*pp = it;
	g->nqueue++;
}

static void on_timer(uv_timer_t *t)
{
	next_item(t->data);
}

static void arm(struct ghconv *g, int64_t in_ms)
{
	if (!g->timer || g->quiesced)
		return;
	uv_timer_start(g->timer, on_timer, (uint64_t)(in_ms > 0 ? in_ms : 0), 0);
}

/* ---- thread walk: fetch ------------------------------------------------------------------ */

static void on_comments(void *ud, const struct gh_result *r);
static void after_cleanup(struct ghconv *g);

/* 401: the token is refused — the daemon tells the owner and stops (the
 * same for every GitHub service, naming AGENT_GITHUB_TOKEN). */
static void fatal_if_auth(struct ghconv *g, const struct gh_result *r)
{
	if (gh_error_is_fatal(r->kind) && g->c.fatal)
		g->c.fatal(g->c.ud, 69, r->msg);
}

static void fetch_failed(struct ghconv *g, const struct gh_result *r, const char *what)
{
	struct item *it = g->active;
	struct decision d;
	fatal_if_auth(g, r);
	/* Gone, disabled or forbidden: nothing to answer, ever. Transient or
	 * rate-limited: come back on a later poll (not marked read). */
	bool final = r->kind == GH_ERR_NOT_FOUND || r->kind == GH_ERR_GONE ||
	             r->kind == GH_ERR_FORBIDDEN || r->kind == GH_ERR_INVALID ||
	             r->kind == GH_ERR_REFUSED || r->kind == GH_ERR_MALFORMED;
	decision_set(&d, final ? VERDICT_INFO : VERDICT_FAIL, "thread_fetch",
	             "%s failed (%s): %s%s", what, gh_error_kind_name(r->kind), r->msg,
	             final ? "; nothing to answer" : "; tried again on a later poll");
	note(g, it, it->conv, STAGE_EVENT, &d);
	log_kv(LOG_LEVEL_WARN, LOG_COMP, "thread not fetched", "thread", it->key, "error", r->msg);
	if (final)
		g->stats.silences++;
	finish(g, final);
}

/* A GitHub answer we could not read: what, err's message. */
static void fetch_malformed(struct ghconv *g, const char *msg, const char *what)
{
	struct gh_result bad = {.kind = GH_ERR_MALFORMED};
	snprintf(bad.msg, sizeof bad.msg, "%s", msg);
	fetch_failed(g, &bad, what);
}

static void on_issue(void *ud, const struct gh_result *r)
{
	struct ghconv *g;
	struct item *it = call_end(ud, r, &g);
	if (!it)
		return;
	if (r->kind != GH_OK) {
		fetch_failed(g, r, "fetching the issue");
		return;
	}
	it->issue = cJSON_Duplicate(r->json, 1);
	int64_t up = 0;
	if (time_parse_iso(json_string_or(r->json, "updated_at", ""), &up) == 0 && up > 0)
		it->issue_updated_ms = up; /* the state this walk reads */
	struct gcall *nc = call_new(g, CALL_COMMENTS);
	struct ga_err err = {{0}};
	it->st = IT_FETCH_COMMENTS;
	if (nc)
		nc->id = gh_comments_list(g->c.gh, it->ref.owner, it->ref.repo, it->ref.number,
		                          GHCONV_MAX_COMMENTS, on_comments, nc, &err);
	if (!nc || !nc->id)
		call_failed(g, nc, &err, "listing the comments");
}

static void start_review(struct ghconv *g, struct item *it);

static void start_item(struct ghconv *g, struct item *it)
{
	g->active = it;
	if (it->review) {
		start_review(g, it);
		return;
	}
	it->st = IT_FETCH_ISSUE;
	struct gcall *c = call_new(g, CALL_ISSUE);
	struct ga_err err = {{0}};
	if (c)
		c->id = gh_issue_get(g->c.gh, it->ref.owner, it->ref.repo, it->ref.number, on_issue,
		                     c, &err);
	if (!c || !c->id)
		call_failed(g, c, &err, "fetching the issue");
}

static void next_item(struct ghconv *g)
{
	if (g->active || g->quiesced || !g->queue)
		return;
	int64_t now = time_now_ms();
	if (g->queue->due_ms > now) {
		arm(g, g->queue->due_ms - now);
		return;
	}
	if (pipeline_paused(g->c.pipeline)) {
		/* Held, not dropped: a paused agent answers nobody, and a
		 * thread walked now would be marked read unanswered. */
		arm(g, GHCONV_PAUSED_RECHECK_MS);
		return;
	}
	struct item *it = g->queue;
	g->queue = it->next;
	g->nqueue--;
	it->next = NULL;
	start_item(g, it);
}

/* ---- thread walk: duplicate cleanup (§4.6) --------------------------------------------------- */

static void delete_next(struct ghconv *g);
static struct ghconv *anchor_drop(struct anchor *a);

/* A deletion is a side effect like any other: outbound (permission
 * github:<owner>:<repo>:delete:<n>, audit, journal key
 * "delete:<comment id>"). */
static void on_deleted(void *ud, const struct decision *final, const char *artifact)
{
	(void)artifact;
	struct ghconv *g = anchor_drop(ud);
	struct item *it = g ? g->active : NULL;
	if (!it || it->st != IT_CLEANUP)
		return;
	int64_t id = it->dups[it->idup++];
	char msg_id[MSG_ID_MAX];
	snprintf(msg_id, sizeof msg_id, "%s:c%" PRId64, it->conv, id);
	struct decision d;
	if (final->verdict == VERDICT_SENT)
		decision_set(&d, VERDICT_INFO, "duplicate_comment",
		             "our comment %" PRId64 " repeated an older one of ours: deleted", id);
	else
		decision_set(&d, VERDICT_FAIL, "duplicate_comment",
		             "our duplicate comment %" PRId64 " could not be deleted: %s", id,
		             final->reason);
	note(g, it, msg_id, STAGE_OUTBOUND, &d);
	if (final->verdict == VERDICT_SENT) {
		g->stats.duplicates_deleted++;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "duplicate comment deleted", "thread", it->key,
		       "comment", LOG_INT(id));
	} else {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "duplicate comment not deleted", "thread", it->key,
		       "comment", LOG_INT(id), "reason", final->reason);
	}
	delete_next(g);
}

static void delete_next(struct ghconv *g)
{
	struct item *it = g->active;
	if (it->idup >= it->ndups || !g->c.outbound) {
		after_cleanup(g);
		return;
	}
	int64_t id = it->dups[it->idup];
	char target[PIPELINE_TARGET_MAX], key[64], msg_id[MSG_ID_MAX], text[160];
	snprintf(target, sizeof target, "github:%s:%s:delete:%" PRId64, it->ref.owner, it->ref.repo,
	         it->ref.number);
	snprintf(key, sizeof key, "delete:%" PRId64, id);
	snprintf(msg_id, sizeof msg_id, "%s:c%" PRId64, it->conv, id);
	snprintf(text, sizeof text, "our comment %" PRId64 " repeats an older one of ours", id);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddNumberToObject(extra, "comment_id", (double)id);
	struct outbound_msg m = {.platform = CONV_PLATFORM_GITHUB,
	                         .target = target,
	                         .source = "github",
	                         .conversation = it->conv,
	                         .message_id = msg_id,
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = -1,
	                         .idem_key = key,
	                         .extra = extra};
	g->anchor->refs++;
	outbound_submit(g->c.outbound, &m, on_deleted, g->anchor);
	cJSON_Delete(extra);
}

/* Drops the deleted comments from the thread as we know it. */
static void forget_deleted(struct item *it)
{
	size_t k = 0;
	for (size_t i = 0; i < it->t.n; i++) {
		bool gone = false;
		for (size_t j = 0; j < it->ndups; j++)
			gone |= it->t.comments[i].id == it->dups[j];
		if (!gone)
			it->t.comments[k++] = it->t.comments[i];
	}
	it->t.n = k;
}

static void on_comments(void *ud, const struct gh_result *r)
{
	struct ghconv *g;
	struct item *it = call_end(ud, r, &g);
	if (!it)
		return;
	if (r->kind != GH_OK) {
		fetch_failed(g, r, "listing the comments");
		return;
	}
	struct ga_err err = {{0}};
	if (ghconv_thread_parse(it->ref.owner, it->ref.repo, it->ref.number, it->issue, r->json,
	                        &it->t, &err) != 0) {
		fetch_malformed(g, err.msg, "reading the thread");
		return;
	}
	it->have_thread = true;
	it->ndups = ghconv_duplicates(&it->t, g->login, it->dups, GHCONV_MAX_DUPLICATES);
	it->idup = 0;
	if (it->ndups) {
		it->st = IT_CLEANUP;
		delete_next(g);
		return;
	}
	after_cleanup(g);
}

/* ---- thread walk: decide and hand to the pipeline ----------------------------------------------
 */

static void message_id(const struct item *it, const struct ghconv_comment *c, char *buf, size_t cap)
{
	if (c->id)
		snprintf(buf, cap, "%s:c%" PRId64, it->conv, c->id);
	else
		snprintf(buf, cap, "%s:body", it->conv);
}

static void event_of(struct ghconv *g, const struct item *it, const struct ghconv_comment *c,
                     bool trigger, struct conv_event *ev)
{
	char id[MSG_ID_MAX];
	message_id(it, c, id, sizeof id);
	bool self = c->login[0] && strcasecmp(c->login, g->login) == 0;
	bool agent = ghconv_is_agent(c, g->login, &it->peers);
	int64_t chain = 0;
	bool explicit_chain = ghconv_marker_chain(c->body, &chain) == 1;
	char *text = ghconv_strip_markers(c->body);
	bool mentions = ghconv_mentions(c->body, g->login);
	const char *addressed[1] = {g->login};
	struct conv_event_src src = {
	        .platform = CONV_PLATFORM_GITHUB,
	        .conversation = it->conv,
	        .message_id = id,
	        .thread_id = it->key,
	        .author_id = c->login[0] ? c->login : "ghost",
	        .author_name = c->login[0] ? c->login : "ghost",
	        .author_kind = self    ? CONV_AUTHOR_SELF
	                       : agent ? CONV_AUTHOR_PEER
	                               : CONV_AUTHOR_HUMAN,
	        .is_bot = agent,
	        .chain = explicit_chain ? chain : 0,
	        .chain_explicit = explicit_chain,
	        .text = text,
	        .text_len = strlen(text),
	        .addressed = mentions ? addressed : NULL,
	        .naddressed = mentions ? 1 : 0,
	        /* The owner's request answers whoever spoke last. */
	        .addressed_me = mentions || (trigger && strcmp(it->v.rule, "owner_request") == 0),
	        .time_ms = c->created_ms,
	        .from_history = !trigger,
	};
	conv_event_init(ev, &src);
	free(text);
}

static const struct ghconv_comment *trigger_comment(const struct item *it)
{
	return it->v.trigger >= 0 && (size_t)it->v.trigger < it->t.n
	               ? &it->t.comments[it->v.trigger]
	               : &it->t.issue;
}

/* The message the thread's walk is about: the one the reply decision
 * answers, or, when it says no reply, the newest (whose story then tells
 * why not). */
static const struct ghconv_comment *walked_comment(const struct item *it)
{
	if (it->v.respond)
		return trigger_comment(it);
	return it->t.n ? &it->t.comments[it->t.n - 1] : &it->t.issue;
}

/* An issue the open-issue scan alone brought is walked only when the
 * decision answers it and a person opened it: else one decision says why
 * (0), and the thread is handled. */
static int scan_skip(struct ghconv *g, struct item *it)
{
	if (!it->ws_issue || it->notif_id[0])
		return -1;
	struct decision d;
	if (it->v.respond && ghconv_is_agent(&it->t.issue, g->login, &it->peers))
		decision_set(&d, VERDICT_INFO, "agent_issue",
		             "open-issue scan: %s was opened by %s, an agent: the scan answers "
		             "people; not walked",
		             it->key, it->t.issue.login[0] ? it->t.issue.login : "?");
	else if (!it->v.respond)
		decision_set(&d, VERDICT_INFO, it->v.rule,
		             "open-issue scan: no reply to %s: %s; not walked", it->key,
		             it->v.reason);
	else
		return -1;
	note(g, it, it->conv, STAGE_EVENT, &d);
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "scanned issue not walked", "thread", it->key, "rule",
	       d.rule, "reason", d.reason);
	g->stats.silences++;
	finish(g, true);
	return 0;
}

static void after_cleanup(struct ghconv *g)
{
	struct item *it = g->active;
	forget_deleted(it);
	ghconv_effective_peers(&it->t, g->login, (const char *const *)g->peers, g->c.npeers,
	                       &it->peers);
	struct ghconv_opts opts = {.workspace_issue = it->ws_issue};
	ghconv_decide(&it->t, g->login, &it->peers, &opts, &it->v);
	if (scan_skip(g, it) == 0)
		return;
	const struct ghconv_comment *tc = walked_comment(it);
	message_id(it, tc, it->trigger_id, sizeof it->trigger_id);
	it->trigger_comment = tc->id;
	snprintf(it->trigger_peer, sizeof it->trigger_peer, "%s",
	         ghconv_is_agent(tc, g->login, &it->peers) ? tc->login : "");
	if (it->ws_issue) {
		struct decision d;
		char iso[TIME_ISO_LEN + 1];
		decision_set(&d, VERDICT_INFO, "open_issue_scan",
		             "%s is an open issue of the watched workspace %s/%s, from the "
		             "open-issue scan%s (§4.3 option \"workspace issue\"; updated %s)",
		             it->key, it->ref.owner, it->ref.repo,
		             it->notif_id[0] ? " and a notification" : "",
		             it->issue_updated_ms > 0 ? time_format_iso(it->issue_updated_ms, iso)
		                                      : "?");
		note(g, it, NULL, STAGE_EVENT, &d);
	}

	/* The thread into the conversation store, oldest first: the gate's
	 * derived chain and the validator's echo window read it. */
	struct conv_store *store = pipeline_store(g->c.pipeline);
	struct conv_event ev;
	event_of(g, it, &it->t.issue, false, &ev);
	conv_store_add(store, &ev);
	conv_event_free(&ev);
	for (size_t i = 0; i < it->t.n; i++) {
		event_of(g, it, &it->t.comments[i], false, &ev);
		conv_store_add(store, &ev);
		conv_event_free(&ev);
	}
	if (pipeline_paused(g->c.pipeline)) {
		finish(g, false); /* paused meanwhile: the thread comes back later */
		return;
	}
	event_of(g, it, tc, true, &ev);
	it->st = IT_WALK;
	int rc = pipeline_event(g->c.pipeline, &ev);
	conv_event_free(&ev);
	if (rc != 0) {
		/* Refused at once (overload, recorded there): not marked read,
		 * the thread comes back on a later poll. */
		finish(g, false);
		return;
	}
	/* The walk goes on: src_gate, then src_compose or src_react; src_done,
	 * later, however it ended. */
}

/* ---- the review walk (§3.11) -----------------------------------------------------------------
 *
 * The PR, its reviews, its files; then one event through the pipeline: gate → [claim] →
 * compose (the model with the diff and github_review_pr) → validator → outbound (the port's
 * review:<n> target, one journal key per head) → record. */

/* head "" (not known yet) matches any head of key. */
static bool tried_recently(const struct ghconv *g, const char *key, const char *head, int64_t now)
{
	for (size_t i = 0; i < g->ntried && i < GHCONV_REVIEW_TRIED; i++)
		if (strcasecmp(g->tried[i].key, key) == 0 &&
		    (!head[0] || strcmp(g->tried[i].head, head) == 0) &&
		    now - g->tried[i].at_ms < GHCONV_REVIEW_RETRY_MS)
			return true;
	return false;
}

static void tried_add(struct ghconv *g, const char *key, const char *head, int64_t now)
{
	size_t slot = g->ntried % GHCONV_REVIEW_TRIED;
	for (size_t i = 0; i < g->ntried && i < GHCONV_REVIEW_TRIED; i++)
		if (strcasecmp(g->tried[i].key, key) == 0)
			slot = i;
	if (slot == g->ntried % GHCONV_REVIEW_TRIED)
		g->ntried++;
	snprintf(g->tried[slot].key, sizeof g->tried[slot].key, "%s", key);
	snprintf(g->tried[slot].head, sizeof g->tried[slot].head, "%s", head);
	g->tried[slot].at_ms = now;
}

/* The review is not made, for a reason that is the answer (closed, ours,
 * reviewed already): recorded, the item handled. */
static void review_skip(struct ghconv *g, struct item *it, const char *rule, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void review_skip(struct ghconv *g, struct item *it, const char *rule, const char *fmt, ...)
{
	struct decision d;
	char why[DECISION_REASON_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	decision_set(&d, VERDICT_INFO, rule, "%s", why);
	/* under the PR's review conversation, not the head's walk: a head
	 * reviewed once keeps a story of one walk */
	note(g, it, it->conv, STAGE_EVENT, &d);
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "no review", "pull", it->key, "rule", rule, "reason", why);
	finish(g, true);
}

static void review_call(struct ghconv *g, enum call_kind kind, const char *what,
                        uint64_t (*start)(struct ghconv *g, struct item *it, struct gcall *c,
                                          struct ga_err *err))
{
	struct item *it = g->active;
	struct gcall *c = call_new(g, kind);
	struct ga_err err = {{0}};
	if (c)
		c->id = start(g, it, c, &err);
	if (!c || !c->id)
		call_failed(g, c, &err, what);
}

/* The end of a call of the review walk: the active item when GitHub
 * answered, else NULL (cancelled, or the failure recorded). */
static struct item *review_answer(void *ud, const struct gh_result *r, struct ghconv **gp,
                                  const char *what)
{
	struct item *it = call_end(ud, r, gp);
	if (it && r->kind != GH_OK) {
		fetch_failed(*gp, r, what);
		return NULL;
	}
	return it;
}

static void on_review_files(void *ud, const struct gh_result *r);

static uint64_t get_files(struct ghconv *g, struct item *it, struct gcall *c, struct ga_err *err)
{
	return gh_pull_files(g->c.gh, it->ref.owner, it->ref.repo, it->ref.number,
	                     GHCONV_REVIEW_MAX_FILES, on_review_files, c, err);
}

static void on_review_list(void *ud, const struct gh_result *r)
{
	struct ghconv *g;
	struct item *it = review_answer(ud, r, &g, "listing the pull request's reviews");
	if (!it)
		return;
	struct ga_err err = {{0}};
	if (gh_reviews_parse(r->json, &it->reviews, &it->nreviews, &err) != 0) {
		fetch_malformed(g, err.msg, "reading the reviews");
		return;
	}
	for (size_t i = 0; i < it->nreviews; i++) {
		const struct gh_review *v = &it->reviews[i];
		if (strcasecmp(v->user, g->login) == 0 &&
		    strcmp(v->commit_id, it->pr.head_sha) == 0 &&
		    strcmp(v->state, "PENDING") != 0) {
			review_skip(g, it, "reviewed_head",
			            "we already reviewed %s at its head %.7s (review %" PRId64
			            ", %s): one review per head; a revision (a new head) is "
			            "reviewed again",
			            it->key, it->pr.head_sha, v->id, v->state);
			return;
		}
	}
	review_call(g, CALL_FILES, "listing the pull request's files", get_files);
}

static uint64_t get_reviews(struct ghconv *g, struct item *it, struct gcall *c, struct ga_err *err)
{
	return gh_reviews_list(g->c.gh, it->ref.owner, it->ref.repo, it->ref.number,
	                       GHCONV_REVIEW_MAX_REVIEWS, on_review_list, c, err);
}

static void on_review_pull(void *ud, const struct gh_result *r)
{
	struct ghconv *g;
	struct item *it = review_answer(ud, r, &g, "fetching the pull request");
	if (!it)
		return;
	struct ga_err err = {{0}};
	if (gh_pull_parse(r->json, &it->pr, &err) != 0) {
		fetch_malformed(g, err.msg, "reading the pull request");
		return;
	}
	it->have_pr = true;
	/* the walk's id names the head: a new head is a new message */
	snprintf(it->trigger_id, sizeof it->trigger_id, "%s@%s", it->conv, it->pr.head_sha);
	if (!it->pr.open || it->pr.merged) {
		review_skip(g, it, "pull_closed", "%s is %s: nothing to review", it->key,
		            it->pr.merged ? "merged" : "closed");
		return;
	}
	if (it->pr.draft) {
		review_skip(g, it, "pull_draft", "%s is a draft: reviewed once it is ready",
		            it->key);
		return;
	}
	if (strcasecmp(it->pr.user, g->login) == 0) {
		review_skip(g, it, "own_pull",
		            "%s is our own pull request: we never review it (approving or "
		            "requesting changes on one's own PR is refused)",
		            it->key);
		return;
	}
	if (gh_port_review_key(it->ref.owner, it->ref.repo, it->ref.number, it->pr.head_sha,
	                       it->rkey, sizeof it->rkey) != 0) {
		review_skip(g, it, "review_key", "%s has no usable head commit ('%s'): no review",
		            it->key, it->pr.head_sha);
		return;
	}
	review_call(g, CALL_REVIEWS, "listing the pull request's reviews", get_reviews);
}

static uint64_t get_pull(struct ghconv *g, struct item *it, struct gcall *c, struct ga_err *err)
{
	return gh_pull_get(g->c.gh, it->ref.owner, it->ref.repo, it->ref.number, on_review_pull, c,
	                   err);
}

static void start_review(struct ghconv *g, struct item *it)
{
	it->st = IT_FETCH_ISSUE;
	review_call(g, CALL_PULL, "fetching the pull request", get_pull);
}

/* The PR's author as the thread's one voice: an agent when registered (or
 * when the description carries outbound's marker). */
static bool author_is_agent(const struct ghconv *g, const struct item *it)
{
	struct ghconv_comment c = {.login = it->pr.user, .body = it->pr.body ? it->pr.body : ""};
	return ghconv_is_agent(&c, g->login, &it->peers) ||
	       (it->pr.body && strstr(it->pr.body, "<!-- ga:"));
}

static void on_review_files(void *ud, const struct gh_result *r)
{
	struct ghconv *g;
	struct item *it = review_answer(ud, r, &g, "listing the pull request's files");
	if (!it)
		return;
	struct ga_err err = {{0}};
	if (gh_pull_files_parse(r->json, &it->files, &it->nfiles, &err) != 0) {
		fetch_malformed(g, err.msg, "reading the pull request's files");
		return;
	}
	struct ghconv_thread none = {.issue = {.login = it->pr.user}};
	ghconv_effective_peers(&none, g->login, (const char *const *)g->peers, g->c.npeers,
	                       &it->peers);
	bool agent = author_is_agent(g, it);
	char *desc = ghconv_strip_markers(it->pr.body ? it->pr.body : "");
	/* The event's text names the head: a revision keeps the title and the
	 * description, and the gate drops a peer's repeated text in one
	 * conversation (duplicate_payload) — the new head is a new request. */
	char *text = xasprintf("Review of %s at head %s: %s\n\n%s", it->key, it->pr.head_sha,
	                       it->pr.title ? it->pr.title : "", desc);
	free(desc);
	const char *addressed[1] = {g->login};
	struct conv_event_src src = {
	        .platform = CONV_PLATFORM_GITHUB,
	        .conversation = it->conv,
	        .message_id = it->trigger_id,
	        .thread_id = it->key,
	        .author_id = it->pr.user,
	        .author_name = it->pr.user,
	        .author_kind = agent ? CONV_AUTHOR_PEER : CONV_AUTHOR_HUMAN,
	        .is_bot = agent,
	        /* the review request starts its own exchange: the review goes
	         * out with chain 1 */
	        .chain = 0,
	        .chain_explicit = true,
	        .text = text,
	        .text_len = strlen(text),
	        .addressed = addressed,
	        .naddressed = 1,
	        .addressed_me = true,
	        .time_ms = time_now_ms(),
	};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	free(text);
	if (pipeline_paused(g->c.pipeline)) {
		conv_event_free(&ev);
		finish(g, false);
		return;
	}
	it->st = IT_WALK;
	int rc = pipeline_event(g->c.pipeline, &ev);
	conv_event_free(&ev);
	if (rc != 0)
		finish(g, false);
}

void ghconv_review(struct ghconv *g, const char *owner, const char *repo, int64_t pr,
                   const char *head)
{
	if (!g || g->quiesced)
		return;
	if (!owner || !repo || !gh_valid_owner(owner) || !gh_valid_repo(repo) || pr <= 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "review not queued", "error",
		       "not a pull request (owner, repo, number)");
		return;
	}
	char key[CONV_KEY_MAX];
	ghconv_thread_key(owner, repo, pr, key, sizeof key);
	const struct item *q = queued(g, key, true);
	int64_t now = time_now_ms();
	if (q) {
		/* one review walk per PR at a time */
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "review not queued", "pull", key, "why",
		       q == g->active ? "its review is walking" : "its review is queued",
		       "due_in_ms", LOG_INT(q->due_ms - time_now_ms()));
		return;
	}
	if (tried_recently(g, key, head ? head : "", now)) {
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "review not queued", "pull", key, "why",
		       "its last walk ended without a review; asked again later");
		return;
	}
	if (g->nqueue >= GHCONV_MAX_QUEUE) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "queue full: review left for a later request",
		       "pull", key);
		return;
	}
	struct item *it = item_new(key, owner, repo, pr, GH_REF_PULL, true, "review_requested");
	it->due_ms = now;
	enqueue(g, it);
	g->stats.threads_seen++;
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "review queued", "pull", key);
	next_item(g);
}

enum ghconv_consider ghconv_consider_issue(struct ghconv *g, const char *owner, const char *repo,
                                           int64_t number, int64_t updated_ms)
{
	if (!g || g->quiesced)
		return GHCONV_CONSIDER_LATER;
	if (!owner || !repo || !gh_valid_owner(owner) || !gh_valid_repo(repo) || number <= 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "issue not considered", "error",
		       "not an issue (owner, repo, number)");
		return GHCONV_CONSIDER_DECIDED;
	}
	char id[GHCONV_ISSUE_ID_LEN + 1], key[CONV_KEY_MAX];
	ghconv_issue_id(owner, repo, number, id);
	if (ghconv_seen_has(&g->issues, id, updated_ms))
		return GHCONV_CONSIDER_DECIDED;
	ghconv_thread_key(owner, repo, number, key, sizeof key);
	struct item *it = queued(g, key, false);
	if (it) {
		/* one walk per thread: a queued one (a notification's) takes the
		 * option; a walking one read the thread already, and a newer
		 * state comes back on the next scan */
		if (it != g->active) {
			it->ws_issue = true;
			if (updated_ms > it->issue_updated_ms)
				it->issue_updated_ms = updated_ms;
		}
		return GHCONV_CONSIDER_QUEUED;
	}
	if (g->nqueue >= GHCONV_MAX_QUEUE) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "queue full: issue left for a later scan",
		       "thread", key);
		return GHCONV_CONSIDER_LATER;
	}
	it = item_new(key, owner, repo, number, GH_REF_ISSUE, false, "workspace_issue");
	it->ws_issue = true;
	it->issue_updated_ms = updated_ms;
	int64_t delay =
	        ghconv_stagger_ms(g->agent_name, key, g->c.stagger_min_ms, g->c.stagger_span_ms);
	it->due_ms = time_now_ms() + delay;
	enqueue(g, it);
	g->stats.threads_seen++;
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "thread queued", "thread", key, "reason",
	       "workspace_issue", "stagger_ms", LOG_INT(delay));
	next_item(g);
	return GHCONV_CONSIDER_QUEUED;
}

/* ---- compose (§4.5) ---------------------------------------------------------------------------
 */

static struct ghconv *anchor_drop(struct anchor *a)
{
	struct ghconv *g = a->g;
	if (--a->refs == 0 && !g)
		free(a);
	return g;
}

static bool same_thread(const struct item *it, const cJSON *params)
{
	const char *o = json_string_or(params, "owner", "");
	const char *r = json_string_or(params, "repo", "");
	int64_t n = json_int_or(params, "issue_number", -1);
	return strcasecmp(o, it->ref.owner) == 0 && strcasecmp(r, it->ref.repo) == 0 &&
	       n == it->ref.number;
}

/* The review tool's call, in a review walk (the only tool it has). */
static int review_sink(struct ghconv *g, struct item *it, const char *action, const cJSON *params,
                       char *result, size_t cap, struct ga_err *err)
{
	if (strcmp(action, "review_pr") != 0)
		return err_set(err, "%s is not available while reviewing %s", action, it->key);
	if (it->have_rout)
		return err_set(err, "one review per turn: the first one is kept");
	const char *event = json_string_or(params, "event", "");
	if (strcmp(event, "COMMENT") != 0 && strcasecmp(it->pr.user, g->login) == 0) {
		struct decision d;
		decision_set(&d, VERDICT_DROP, "own_pull",
		             "the model asked to %s our own pull request %s: refused (GitHub "
		             "refuses it too)",
		             strcmp(event, "APPROVE") == 0 ? "approve" : "request changes on",
		             it->key);
		note(g, it, NULL, STAGE_COMPOSE, &d);
		return err_set(err, "%s is your own pull request: you cannot %s it", it->key,
		               strcmp(event, "APPROVE") == 0 ? "approve" : "request changes on");
	}
	if (ghconv_review_parse(params, it->ref.owner, it->ref.repo, it->ref.number,
	                        it->pr.head_sha, it->files, it->nfiles, &it->rout, err) != 0)
		return -1;
	it->have_rout = true;
	snprintf(result, cap,
	         "Review accepted (%s, %zu inline comment%s%s): it is checked and submitted on "
	         "%s. Do not submit another.",
	         it->rout.event, it->rout.inline_n, it->rout.inline_n == 1 ? "" : "s",
	         it->rout.folded_n ? "; comments on lines outside the diff are in the body" : "",
	         it->key);
	return 0;
}

static int sink(void *ud, const char *action, const cJSON *params, char *result, size_t cap,
                struct ga_err *err)
{
	struct anchor *a = ud;
	struct ghconv *g = a->g;
	struct item *it = g ? g->active : NULL;
	if (!it || !it->job)
		return err_set(err, "this conversation is over");
	if (it->review)
		return review_sink(g, it, action, params, result, cap, err);
	if (strcmp(action, "comment_issue") == 0) {
		if (!same_thread(it, params))
			return err_set(
			        err,
			        "only this thread (%s) can be answered now; a comment elsewhere "
			        "is refused",
			        it->key);
		if (it->reply)
			return err_set(err, "one comment per turn: the first one is kept");
		it->reply = xstrdup(json_string_or(params, "body", ""));
		snprintf(result, cap,
		         "Comment accepted: it is checked and posted on %s. Do not post another.",
		         it->key);
		return 0;
	}
	if (strcmp(action, "graceful_exit") == 0) {
		const char *id = json_string_or(params, "identifier", "");
		if (strcasecmp(id, it->key) != 0)
			return err_set(err, "graceful_exit: identifier must be %s", it->key);
		if (strcmp(json_string_or(params, "closing_type", ""), "message") == 0) {
			if (!it->reply)
				it->reply = xstrdup(json_string_or(params, "closing_message", ""));
		} else {
			it->exit_like = true;
		}
		snprintf(result, cap, "The conversation on %s ends here.", it->key);
		return 0;
	}
	if (strcmp(action, "create_issue") == 0 || strcmp(action, "create_plan") == 0) {
		if (!g->c.ledger)
			return err_set(err, "commitments cannot be recorded in this process");
		char id[LEDGER_ID_MAX];
		int rc = ledger_add(g->c.ledger, action, "github", params, time_now_ms(), id, err);
		if (rc < 0)
			return -1;
		snprintf(result, cap, "%s as %s; it is carried out by the commitment pipeline.",
		         rc == LEDGER_DUPLICATE ? "Already promised" : "Promised", id);
		return 0;
	}
	return err_set(err, "%s is not available in a GitHub conversation", action);
}

/* The reply's outcome (the pipeline then records it; src_done finishes
 * the thread). */
static void on_reply_ended(void *ud, struct pipeline_job *job, const struct pipeline_outcome *o)
{
	(void)job;
	struct ghconv *g = anchor_drop(ud);
	struct item *it = g ? g->active : NULL;
	if (!it)
		return;
	if (o->sent) {
		it->reviewed = it->review;
		if (it->review)
			g->stats.reviews++;
		else
			g->stats.replies++;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, it->review ? "reviewed" : "replied", "thread",
		       it->key, "url", o->artifact ? o->artifact : "");
		return;
	}
	log_kv(LOG_LEVEL_INFO, LOG_COMP, "reply not sent", "thread", it->key, "rule",
	       o->final->rule ? o->final->rule : "", "reason", o->final->reason);
	g->stats.silences++;
	/* A failed send (the port or GitHub said no) comes back on a later
	 * poll; a drop or a rejection was a decision. */
	it->retry = o->final->verdict == VERDICT_FAIL;
}

static struct pipeline_job *take_job(struct item *it)
{
	struct pipeline_job *job = it->job;
	it->job = NULL;
	return job;
}

/* The walk ends here without a reply: rule, why; retry: the notification
 * stays unread (a later poll brings the thread back). */
static void silent(struct ghconv *g, struct item *it, const char *rule, const char *why, bool retry)
{
	struct pipeline_job *job = take_job(it);
	it->retry = retry;
	if (!retry)
		g->stats.silences++;
	if (job)
		pipeline_silent(job, rule, why);
}

static void send_reply(struct ghconv *g, struct item *it)
{
	bool names_self = false;
	char *clean = ghconv_clean_reply(it->reply, g->agent_name, g->login, &names_self);
	if (!clean || names_self) {
		silent(g, it, clean ? "self_name" : "empty",
		       clean ? "the reply names the agent itself (seed 004: GitHub shows the "
		               "author; "
		               "no signature, no introduction): not sent"
		             : "the reply is empty once its signature is removed",
		       false);
		free(clean);
		return;
	}
	size_t agents_since_person = 0;
	size_t from = it->t.n > PIPELINE_ECHO_WINDOW ? it->t.n - PIPELINE_ECHO_WINDOW : 0;
	for (size_t i = from; i < it->t.n; i++)
		agents_since_person = ghconv_is_agent(&it->t.comments[i], g->login, &it->peers)
		                              ? agents_since_person + 1
		                              : 0;
	/* The echo window is the thread (in the conversation store). */
	struct validator_context vctx = {
	        .platform = VALIDATOR_PLATFORM_GITHUB,
	        .mode = VALIDATOR_MODE_DISCUSSION,
	        .role = VALIDATOR_ROLE_ACTOR,
	        .is_action_owner = true,
	        .connected_agents = 1 + it->peers.n,
	        .agent_msgs_since_host = agents_since_person,
	};
	struct pipeline_job *job = take_job(it);
	g->anchor->refs++;
	struct pipeline_reply r = {.text = clean,
	                           .len = strlen(clean),
	                           .vctx = &vctx,
	                           .ended = on_reply_ended,
	                           .ud = g->anchor};
	pipeline_reply(job, &r);
	free(clean);
}

/* The model's review into the pipeline: validator (its echo window: the
 * other reviewers' reviews, the description as context) → outbound, the
 * port's review:<n> target under the head's key. */
static void send_review(struct ghconv *g, struct item *it)
{
	struct decision d;
	decision_set(&d, VERDICT_PASS, "composed",
	             "a review (%s) of %zu bytes on %s at %.7s: %zu inline comment%s%s",
	             it->rout.event, strlen(it->rout.text), it->key, it->pr.head_sha,
	             it->rout.inline_n, it->rout.inline_n == 1 ? "" : "s",
	             it->rout.folded_n ? ", more on lines outside the diff folded into the body"
	                               : "");
	note(g, it, NULL, STAGE_COMPOSE, &d);
	struct pipeline_msg win[GHCONV_REVIEW_EARLIER + 1];
	size_t nw = 0;
	win[nw++] =
	        (struct pipeline_msg){.author = it->pr.user, .text = it->pr.body, .agent = false};
	size_t from =
	        it->nreviews > GHCONV_REVIEW_EARLIER ? it->nreviews - GHCONV_REVIEW_EARLIER : 0;
	for (size_t i = from; i < it->nreviews; i++)
		if (strcasecmp(it->reviews[i].user, g->login) != 0 && it->reviews[i].body[0])
			win[nw++] = (struct pipeline_msg){.author = it->reviews[i].user,
			                                  .text = it->reviews[i].body,
			                                  .agent = true};
	struct validator_context vctx = {
	        .platform = VALIDATOR_PLATFORM_GITHUB,
	        .mode = VALIDATOR_MODE_DISCUSSION,
	        .role = VALIDATOR_ROLE_ACTOR,
	        .is_action_owner = true,
	        .connected_agents = 1 + it->peers.n,
	};
	struct pipeline_job *job = take_job(it);
	g->anchor->refs++;
	struct pipeline_reply r = {.text = it->rout.text,
	                           .len = strlen(it->rout.text),
	                           .idem_key = it->rkey,
	                           .vctx = &vctx,
	                           .window = win,
	                           .nwindow = nw,
	                           .extra = it->rout.extra,
	                           .ended = on_reply_ended,
	                           .ud = g->anchor};
	pipeline_reply(job, &r);
}

static void on_composed(void *ud, const struct compose_result *res)
{
	struct ghconv *g = anchor_drop(ud);
	if (!g)
		return;
	g->run = NULL;
	struct item *it = g->active;
	if (!it || !it->job)
		return;
	struct decision d;
	if (res->stop == COMPOSE_STOP_CANCELLED) {
		silent(g, it, "cancelled", "the model call was cancelled", true);
		return;
	}
	if (res->stop == COMPOSE_STOP_ERROR && !it->reply && !it->exit_like && !it->have_rout) {
		char why[DECISION_REASON_MAX];
		snprintf(why, sizeof why, "the model call failed: %.280s", res->reason);
		if (res->llm_error == LLM_ERR_FATAL && g->c.fatal)
			g->c.fatal(g->c.ud, 69, res->reason);
		silent(g, it, "model", why, true);
		return;
	}
	if (it->review) {
		if (it->have_rout) {
			send_review(g, it);
			return;
		}
		char why[DECISION_REASON_MAX];
		snprintf(why, sizeof why, "the model made no review (%s)%s%.200s",
		         res->stop_name ? res->stop_name : "?", res->content ? ": " : "",
		         res->content ? res->content : "");
		silent(g, it, "no_review", why, false);
		return;
	}
	if (it->reply) {
		decision_set(&d, VERDICT_PASS, "composed", "a comment of %zu bytes (%s)",
		             strlen(it->reply), res->stop_name ? res->stop_name : "?");
		note(g, it, NULL, STAGE_COMPOSE, &d);
		send_reply(g, it);
		return;
	}
	if (it->exit_like) {
		it->trigger_comment = 0; /* the like is on the issue (§4.5 graceful_exit) */
		struct pipeline_job *job = take_job(it);
		pipeline_react(job, "graceful_exit",
		               "the model ends its part with a like, no comment");
		return;
	}
	char why[DECISION_REASON_MAX];
	snprintf(why, sizeof why, "the model wrote no comment (%s)%s%.200s",
	         res->stop_name ? res->stop_name : "?", res->content ? ": " : "",
	         res->content ? res->content : "");
	silent(g, it, "declined", why, false);
}

/* The review's user message: the PR, its earlier reviews, its diff. */
static char *review_prompt(const struct item *it)
{
	struct ghconv_review_prior prior[GHCONV_REVIEW_MAX_REVIEWS];
	size_t np = 0;
	for (size_t i = 0; i < it->nreviews && np < GHCONV_REVIEW_MAX_REVIEWS; i++)
		if (strcmp(it->reviews[i].state, "PENDING") != 0)
			prior[np++] =
			        (struct ghconv_review_prior){.user = it->reviews[i].user,
			                                     .state = it->reviews[i].state,
			                                     .body = it->reviews[i].body,
			                                     .commit_id = it->reviews[i].commit_id};
	size_t listed = it->nfiles;
	struct ghconv_review_in in = {
	        .owner = it->ref.owner,
	        .repo = it->ref.repo,
	        .pr = &it->pr,
	        .files = it->files,
	        .nfiles = it->nfiles,
	        .files_unlisted = it->pr.changed_files > (int64_t)listed
	                                  ? (size_t)(it->pr.changed_files - (int64_t)listed)
	                                  : 0,
	        .prior = prior,
	        .nprior = np,
	        .source = "your review is requested",
	};
	return ghconv_review_prompt(&in);
}

static void start_model(struct ghconv *g, struct item *it)
{
	struct ga_err err = {{0}};
	const char *skill_name = it->review ? GHCONV_REV_SKILL : GHCONV_SKILL;
	char *skill =
	        g->c.skills ? skills_render(g->c.skills, skill_name, NULL, NULL, 0, &err) : NULL;
	if (!skill && g->c.skills)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "no skill text", "skill", skill_name, "error",
		       err.msg);
	char *self = self_excerpt(g->c.self, false, GHCONV_SELF_BYTES);
	char *system = skills_system_prompt(g->c.soul_text, self, skill);
	free(skill);
	free(self);
	char source[GH_OWNER_MAX + GH_REPO_MAX + 200];
	if (it->ws_issue && !it->notif_id[0])
		snprintf(source, sizeof source,
		         "an open issue of %s/%s, a workspace you watch; nobody asked you by "
		         "name: answer when you can help the person who opened it",
		         it->ref.owner, it->ref.repo);
	else
		snprintf(source, sizeof source, "a GitHub notification (reason: %s)",
		         it->reason[0] ? it->reason : "?");
	char *user = it->review ? review_prompt(it)
	                        : ghconv_prompt(&it->t, g->login, &it->peers, &it->v, source);
	struct llm_message msg = {.role = LLM_ROLE_USER, .content = user};
	struct compose_opts o = {
	        .loop = g->c.loop,
	        .llm = g->c.llm,
	        .budget = g->c.budget,
	        .system_prompt = system,
	        .messages = &msg,
	        .n_messages = 1,
	        .tools = it->review ? g->anchor->rtools : g->anchor->tools,
	        .n_tools = it->review ? g->anchor->nrtools : g->anchor->ntools,
	        .tool_choice = LLM_TOOL_CHOICE_AUTO,
	        .max_rounds = GHCONV_MAX_ROUNDS,
	        .done = on_composed,
	        .ud = g->anchor,
	};
	g->anchor->refs++;
	g->run = compose_start(&o, &err);
	free(system);
	free(user);
	if (!g->run) {
		g->anchor->refs--;
		char why[DECISION_REASON_MAX];
		snprintf(why, sizeof why, "the model could not be asked: %.280s", err.msg);
		silent(g, it, "model", why, true);
	}
}

/* ---- the pipeline's GitHub source --------------------------------------------------------------
 */

/* The walked message is the active thread's. */
static struct item *walking(struct ghconv *g, const struct conv_event *ev)
{
	struct item *it = g->active;
	return it && it->st == IT_WALK && strcmp(ev->message_id, it->trigger_id) == 0 ? it : NULL;
}

/* GitHub's own gate: the reply decision of §4.3 (made on the whole thread
 * when it was read; the walked message is the one it answers, or the newest
 * when it says no reply). */
static void src_gate(void *ud, const struct conv_event *ev, const struct gate_result *gr,
                     struct decision *d)
{
	(void)gr;
	struct ghconv *g = ud;
	struct item *it = walking(g, ev);
	if (!it) {
		decision_set(d, VERDICT_BLOCK, "no_thread",
		             "no GitHub thread is waiting for this message");
		return;
	}
	if (it->review) {
		decision_set(d, VERDICT_PASS, "review_requested",
		             "a review of %s at its head %.7s is asked of us (%s; %zu files)",
		             it->key, it->pr.head_sha, it->reason, it->nfiles);
		return;
	}
	if (!it->v.respond) {
		decision_set(d, VERDICT_BLOCK, it->v.rule, "no reply: %s", it->v.reason);
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "silence", "thread", it->key, "rule", it->v.rule,
		       "reason", it->v.reason);
		return;
	}
	decision_set(d, VERDICT_PASS, it->v.rule, "reply considered (%s urgency): %s",
	             ghconv_urgency_name(it->v.urgency), it->v.reason);
}

/* Both gates (and a peer's claim) passed: the reply is composed with the
 * whole thread and goes out on this walk. */
static void src_compose(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                        const struct gate_result *gr)
{
	struct ghconv *g = ud;
	struct item *it = walking(g, ev);
	if (!it || g->quiesced) {
		pipeline_silent(job, g->quiesced ? "stopping" : "no_thread",
		                g->quiesced ? "the agent is stopping"
		                            : "no GitHub thread is waiting for this message");
		return;
	}
	it->g = *gr;
	it->job = job;
	start_model(g, it);
}

struct react_call {
	struct anchor *a;
	struct pipeline_job *job;
};

static void on_reacted(void *ud, const struct decision *final, const char *artifact)
{
	struct react_call *rc = ud;
	struct pipeline_job *job = rc->job;
	struct ghconv *g = anchor_drop(rc->a);
	free(rc);
	struct item *it = g ? g->active : NULL;
	if (it) {
		struct decision d;
		if (final->verdict == VERDICT_SENT)
			decision_set(&d, VERDICT_SENT, "reaction", "reacted %s to %s %s",
			             GHCONV_REACTION,
			             it->trigger_comment ? "the comment" : "the issue",
			             it->trigger_id);
		else
			decision_set(&d, final->verdict, "reaction",
			             "the reaction was not made: %s", final->reason);
		note(g, it, NULL, STAGE_OUTBOUND, &d);
	}
	if (g && final->verdict == VERDICT_SENT) {
		g->stats.reactions++;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "reacted", "content", GHCONV_REACTION);
	}
	pipeline_reacted(job, final, artifact);
}

/* A reaction (a gate's REACT at MAX_ACL or the Social Mechanics, or
 * graceful_exit): a heart on the walked comment, or on the issue, through
 * outbound (github:<owner>:<repo>:reaction:<n>, key "react:<message id>"). */
static void src_react(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                      const struct decision *why)
{
	struct ghconv *g = ud;
	struct item *it = walking(g, ev);
	struct decision d;
	if (it && it->review) {
		decision_set(&d, VERDICT_DROP, "no_review",
		             "a review is not a reaction: none is made (%s)",
		             why && why->reason[0] ? why->reason
		                                   : "the gate allows a reaction at most");
		pipeline_reacted(job, &d, NULL);
		return;
	}
	if (!it || !g->c.outbound) {
		decision_set(&d, VERDICT_DROP, "no_reaction",
		             !it ? "no GitHub thread is waiting for this message"
		                 : "nothing can be sent from this process");
		pipeline_reacted(job, &d, NULL);
		return;
	}
	char target[PIPELINE_TARGET_MAX], key[MSG_ID_MAX + 8], text[96];
	snprintf(target, sizeof target, "github:%s:%s:reaction:%" PRId64, it->ref.owner,
	         it->ref.repo, it->ref.number);
	if (it->trigger_comment)
		snprintf(text, sizeof text, "%s on comment %" PRId64, GHCONV_REACTION,
		         it->trigger_comment);
	else
		snprintf(text, sizeof text, "%s on #%" PRId64, GHCONV_REACTION, it->ref.number);
	snprintf(key, sizeof key, "react:%s", ev->message_id);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "content", GHCONV_REACTION);
	if (it->trigger_comment)
		cJSON_AddNumberToObject(extra, "comment_id", (double)it->trigger_comment);
	struct outbound_msg m = {.platform = CONV_PLATFORM_GITHUB,
	                         .target = target,
	                         .source = "github",
	                         .conversation = it->conv,
	                         .message_id = ev->message_id,
	                         .text = text,
	                         .text_len = strlen(text),
	                         .chain = -1,
	                         .idem_key = key,
	                         .extra = extra};
	struct react_call *rc = xcalloc(1, sizeof *rc);
	rc->a = g->anchor;
	rc->job = job;
	g->anchor->refs++;
	outbound_submit(g->c.outbound, &m, on_reacted, rc);
	cJSON_Delete(extra);
}

/* How the walk ended (once, from the loop): the thread is handled — the
 * notification marked read — unless it ended on a failure worth another
 * poll (the model, GitHub, a pause, a stop). */
static void src_done(void *ud, const struct conv_event *ev, const struct decision *final,
                     const char *artifact)
{
	(void)artifact;
	struct ghconv *g = ud;
	struct item *it = walking(g, ev);
	if (!it)
		return;
	if (g->quiesced) {
		finish(g, false); /* stopping: the notification stays unread */
		return;
	}
	bool paused = final->verdict == VERDICT_BLOCK && final->rule &&
	              strcmp(final->rule, "paused") == 0;
	if (final->verdict == VERDICT_BLOCK || final->verdict == VERDICT_CONTEXT)
		g->stats.silences++;
	if (it->review && !it->reviewed)
		tried_add(g, it->key, it->pr.head_sha, time_now_ms());
	finish(g, !paused && !it->retry);
}

static int src_target(void *ud, const struct conv_event *ev, char *buf, size_t cap)
{
	struct ghconv *g = ud;
	struct item *it = walking(g, ev);
	if (!it)
		return -1;
	int k = snprintf(buf, cap, "github:%s:%s:%s:%" PRId64, it->ref.owner, it->ref.repo,
	                 it->review ? "review" : "issue", it->ref.number);
	return k > 0 && (size_t)k < cap ? 0 : -1;
}

/* Our comment is stored under the id its thread read gives it
 * ("github:<owner>/<repo>#<n>:c<id>", from the html_url's
 * "#issuecomment-<id>"). */
static int src_sent_id(void *ud, const struct conv_event *ev, const char *artifact, char *buf,
                       size_t cap)
{
	(void)ud;
	const char *h = artifact ? strstr(artifact, "#issuecomment-") : NULL;
	const char *rv = artifact ? strstr(artifact, "#pullrequestreview-") : NULL;
	if ((!h && !rv) || !ev->conversation)
		return -1;
	char *end;
	long long id = h ? strtoll(h + 14, &end, 10) : strtoll(rv + 19, &end, 10);
	if (id <= 0 || *end)
		return -1;
	int k = snprintf(buf, cap, "%s:%s%lld", ev->conversation, h ? "c" : "r", id);
	return k > 0 && (size_t)k < cap ? 0 : -1;
}

/* ---- handled: seen, saved, then marked read ----------------------------------------------------
 */

static void on_marked(void *ud, const struct gh_result *r)
{
	struct gcall *c = ud;
	struct ghconv *g = c->g;
	bool of_active = c->kind == CALL_MARK && !c->notif_id[0];
	char id[GHCONV_NOTIF_ID_MAX];
	snprintf(id, sizeof id, "%s", c->notif_id);
	call_free(c);
	if (r->kind == GH_ERR_CANCELLED)
		return;
	if (r->kind != GH_OK)
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "notification not marked read", "error", r->msg);
	if (!of_active)
		return;
	struct item *it = g->active;
	g->active = NULL;
	if (it)
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "thread done", "thread", it->key);
	item_free(it);
	next_item(g);
}

static void mark_read(struct ghconv *g, const char *notif_id, bool of_active)
{
	struct gcall *c = call_new(g, CALL_MARK);
	struct ga_err err = {{0}};
	if (c) {
		if (!of_active)
			snprintf(c->notif_id, sizeof c->notif_id, "%s", notif_id);
		c->id = gh_notification_mark_read(g->c.gh, notif_id, on_marked, c, &err);
	}
	if (c && c->id)
		return;
	if (c)
		call_free(c);
	/* Not marked: it is listed again, found in the seen set, marked then. */
	log_kv(LOG_LEVEL_WARN, LOG_COMP, "notification not marked read", "error",
	       c ? err.msg : "too many GitHub calls in flight");
	if (of_active) {
		item_free(g->active);
		g->active = NULL;
		next_item(g);
	}
}

static void finish(struct ghconv *g, bool handled)
{
	struct item *it = g->active;
	if (!it)
		return;
	uv_timer_stop(g->timer);
	if (handled && !g->quiesced && !it->review && it->have_thread && it->issue_updated_ms > 0) {
		/* this state of the issue is decided: the scan does not bring
		 * it back until it changes */
		char id[GHCONV_ISSUE_ID_LEN + 1];
		ghconv_issue_id(it->ref.owner, it->ref.repo, it->ref.number, id);
		ghconv_seen_put(&g->issues, id, it->issue_updated_ms);
		if (!it->notif_id[0]) {
			g->stats.handled++;
			save_state(g);
		}
	}
	if (!handled || !it->notif_id[0] || g->quiesced) {
		g->active = NULL;
		item_free(it);
		next_item(g);
		return;
	}
	g->stats.handled++;
	ghconv_seen_add(&g->seen, it->notif_id, it->notif_updated_ms);
	save_state(g);
	it->st = IT_MARK;
	mark_read(g, it->notif_id, true);
}

/* ---- the poll (§4.2) ----------------------------------------------------------------------------
 */

static void poll_end(struct ghconv *g)
{
	void (*done)(void *) = g->poll_done;
	void *ud = g->poll_ud;
	g->poll_done = NULL;
	g->poll_ud = NULL;
	if (done)
		done(ud);
}

static void on_list(void *ud, const struct gh_result *r)
{
	struct gcall *c = ud;
	struct ghconv *g = c->g;
	call_free(c);
	if (r->kind == GH_ERR_CANCELLED)
		return;
	g->stats.last_poll_ms = time_now_ms();
	if (r->kind != GH_OK) {
		snprintf(g->stats.last_poll_error, sizeof g->stats.last_poll_error, "%s", r->msg);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "notifications not read", "error", r->msg);
		fatal_if_auth(g, r);
		poll_end(g);
		return;
	}
	g->stats.polls++;
	g->stats.last_poll_error[0] = '\0';
	size_t n = (size_t)cJSON_GetArraySize(r->json);
	int64_t *updated = xcalloc(n + 1, sizeof *updated);
	bool *handled = xcalloc(n + 1, sizeof *handled);
	size_t k = 0, queued_now = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, r->json)
	{
		struct ghconv_notif nf;
		struct ga_err err = {{0}};
		size_t i = k++;
		if (ghconv_notif_parse(e, g->api_url, &nf, &err) != 0) {
			handled[i] = true;
			log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "notification skipped", "error", err.msg);
			continue;
		}
		updated[i] = nf.updated_ms;
		if (!nf.actionable) {
			handled[i] = true; /* left unread for the person; never ours */
			log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "notification ignored", "id", nf.id,
			       "why", nf.why);
			continue;
		}
		if (ghconv_seen_has(&g->seen, nf.id, nf.updated_ms)) {
			handled[i] = true;
			if (nf.unread) /* handled, but the mark did not reach GitHub */
				mark_read(g, nf.id, false);
			continue;
		}
		char key[CONV_KEY_MAX];
		ghconv_thread_key(nf.ref.owner, nf.ref.repo, nf.ref.number, key, sizeof key);
		/* A review asked of us is answered with a review (§3.11), not a
		 * comment. */
		bool review = strcmp(nf.reason, "review_requested") == 0;
		struct item *it = queued(g, key, review);
		if (it) {
			/* One walk per thread; it reads the thread as it is then. */
			if (it != g->active && nf.updated_ms >= it->notif_updated_ms) {
				snprintf(it->notif_id, sizeof it->notif_id, "%s", nf.id);
				it->notif_updated_ms = nf.updated_ms;
				snprintf(it->reason, sizeof it->reason, "%s", nf.reason);
			}
			continue;
		}
		if (g->nqueue >= GHCONV_MAX_QUEUE) {
			log_kv(LOG_LEVEL_INFO, LOG_COMP, "queue full: thread left for a later poll",
			       "thread", key);
			continue;
		}
		it = item_new(key, nf.ref.owner, nf.ref.repo, nf.ref.number, nf.ref.kind, review,
		              nf.reason);
		snprintf(it->notif_id, sizeof it->notif_id, "%s", nf.id);
		it->notif_updated_ms = nf.updated_ms;
		/* The stagger orders agents answering one thread; a review is
		 * asked of one reviewer, so it has nobody to wait for. */
		int64_t delay = review ? 0
		                       : ghconv_stagger_ms(g->agent_name, key, g->c.stagger_min_ms,
		                                           g->c.stagger_span_ms);
		it->due_ms = time_now_ms() + delay;
		enqueue(g, it);
		queued_now++;
		g->stats.threads_seen++;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "thread queued", "thread", key, "reason",
		       nf.reason, "stagger_ms", LOG_INT(delay));
	}
	int64_t since = ghconv_next_since(g->since_ms, updated, handled, k);
	free(updated);
	free(handled);
	if (since != g->since_ms) {
		g->since_ms = since;
		save_state(g);
	}
	log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "notifications read", "count", LOG_INT(n), "queued",
	       LOG_INT(queued_now));
	poll_end(g);
	next_item(g);
}

void ghconv_poll(struct ghconv *g, void (*done)(void *ud), void *ud)
{
	if (g->quiesced || g->poll_done) {
		if (done)
			done(ud);
		return;
	}
	struct gh_bucket b;
	bool low = gh_rate_snapshot(g->c.gh, "core", &b) == 0 && b.remaining >= 0 &&
	           b.remaining < GHCONV_MIN_BUDGET;
	if (pipeline_paused(g->c.pipeline) || low) {
		g->stats.skipped_polls++;
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "poll skipped", "why",
		       low ? "the core rate budget is low" : "paused");
		if (done)
			done(ud);
		return;
	}
	g->poll_done = done;
	g->poll_ud = ud;
	struct gcall *c = call_new(g, CALL_LIST);
	struct ga_err err = {{0}};
	if (c)
		c->id = gh_notifications_list(g->c.gh, g->since_ms, g->since_ms > 0,
		                              GHCONV_MAX_NOTIFS, on_list, c, &err);
	if (!c || !c->id) {
		if (c)
			call_free(c);
		snprintf(g->stats.last_poll_error, sizeof g->stats.last_poll_error, "%s",
		         c ? err.msg : "too many GitHub calls in flight");
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "notifications not read", "error",
		       g->stats.last_poll_error);
		poll_end(g);
	}
}

/* ---- life --------------------------------------------------------------------------------------
 */

struct ghconv *ghconv_new(const struct ghconv_config *c, struct ga_err *err)
{
	if (!c || !c->loop || !c->gh || !c->pipeline || !c->llm) {
		err_set(err,
		        "GitHub conversations need the loop, the GitHub client, the pipeline and "
		        "a model");
		return NULL;
	}
	if (!c->login || !*c->login) {
		err_set(err, "GitHub conversations need AGENT_GITHUB_USERNAME (the agent's login, "
		             "to recognise its own comments and its mentions)");
		return NULL;
	}
	struct ghconv *g = xcalloc(1, sizeof *g);
	g->c = *c;
	g->agent_name = xstrdup(c->agent_name ? c->agent_name : c->login);
	g->login = xstrdup(c->login);
	g->api_url = xstrdup(c->api_url && *c->api_url ? c->api_url : "https://api.github.com");
	g->peers = xcalloc(c->npeers + 1, sizeof *g->peers);
	for (size_t i = 0; i < c->npeers; i++)
		g->peers[i] = xstrdup(c->peers[i] ? c->peers[i] : "");
	g->c.agent_name = g->c.login = g->c.api_url = NULL;
	g->c.peers = NULL;
	struct pipeline_source src = {.platform = CONV_PLATFORM_GITHUB,
	                              .gate = src_gate,
	                              .compose = src_compose,
	                              .reply_target = src_target,
	                              .react = src_react,
	                              .done = src_done,
	                              .sent_id = src_sent_id,
	                              .ud = g,
	                              .decides_triggers = true};
	if (pipeline_add_source(c->pipeline, &src) != 0) {
		err_set(err, "the pipeline already has a GitHub source");
		for (size_t i = 0; i < c->npeers; i++)
			free(g->peers[i]);
		free(g->peers);
		free(g->agent_name);
		free(g->login);
		free(g->api_url);
		free(g);
		return NULL;
	}
	g->anchor = xcalloc(1, sizeof *g->anchor);
	g->anchor->g = g;
	g->anchor->refs = 1;
	g->anchor->sink.enqueue = sink;
	g->anchor->sink.ud = g->anchor;
	g->anchor->ntools = tools_select(TOOLS_MODE_GITHUB, tools_agent_caps(false),
	                                 &g->anchor->sink, g->anchor->tools, TOOLS_MAX);
	g->anchor->nrtools = tools_select(TOOLS_MODE_REVIEW, tools_agent_caps(false),
	                                  &g->anchor->sink, g->anchor->rtools, TOOLS_MAX);
	g->timer = xcalloc(1, sizeof *g->timer);
	uv_timer_init(c->loop, g->timer);
	g->timer->data = g;
	load_state(g);
	return g;
}

void ghconv_quiesce(struct ghconv *g)
{
	if (!g || g->quiesced)
		return;
	g->quiesced = true;
	uv_timer_stop(g->timer);
	for (struct gcall *c = g->calls; c; c = c->next)
		if (c->kind == CALL_LIST) {
			gh_cancel(g->c.gh, c->id);
			call_free(c);
			break;
		}
	poll_end(g);
	if (g->run)
		compose_cancel(g->run);
}

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

void ghconv_free(struct ghconv *g)
{
	if (!g)
		return;
	g->quiesced = true;
	while (g->calls) {
		gh_cancel(g->c.gh, g->calls->id);
		call_free(g->calls);
	}
	if (g->run)
		compose_cancel(g->run);
	poll_end(g);
	g->anchor->g = NULL;
	if (--g->anchor->refs == 0)
		free(g->anchor);
	uv_close((uv_handle_t *)g->timer, timer_closed);
	item_free(g->active);
	while (g->queue) {
		struct item *it = g->queue;
		g->queue = it->next;
		item_free(it);
	}
	for (size_t i = 0; i < g->c.npeers; i++)
		free(g->peers[i]);
	free(g->peers);
	free(g->agent_name);
	free(g->login);
	free(g->api_url);
	free(g);
}

void ghconv_stats(const struct ghconv *g, struct ghconv_stats *out)
{
	*out = g->stats;
	out->queued = g->nqueue + (g->active ? 1 : 0);
}

cJSON *ghconv_status(const struct ghconv *g)
{
	struct ghconv_stats s;
	ghconv_stats(g, &s);
	cJSON *o = cJSON_CreateObject();
	char iso[TIME_ISO_LEN + 1];
	if (s.last_poll_ms)
		cJSON_AddStringToObject(o, "lastPoll", time_format_iso(s.last_poll_ms, iso));
	else
		cJSON_AddNullToObject(o, "lastPoll");
	if (s.last_poll_error[0])
		cJSON_AddStringToObject(o, "lastPollError", s.last_poll_error);
	cJSON_AddNumberToObject(o, "polls", (double)s.polls);
	cJSON_AddNumberToObject(o, "skippedPolls", (double)s.skipped_polls);
	cJSON_AddNumberToObject(o, "threadsSeen", (double)s.threads_seen);
	cJSON_AddNumberToObject(o, "handled", (double)s.handled);
	cJSON_AddNumberToObject(o, "replies", (double)s.replies);
	cJSON_AddNumberToObject(o, "reviews", (double)s.reviews);
	cJSON_AddNumberToObject(o, "reactions", (double)s.reactions);
	cJSON_AddNumberToObject(o, "silences", (double)s.silences);
	cJSON_AddNumberToObject(o, "duplicatesDeleted", (double)s.duplicates_deleted);
	cJSON_AddNumberToObject(o, "queued", (double)s.queued);
	return o;
}
