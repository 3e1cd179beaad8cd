/*
 * bsky_int — the insides of the Bluesky engine shared by its files; not an
 * API (only modules/bluesky/bsky*.c include it; the contract is bsky.h's).
 *
 *   bsky.c         the outbound port wrapper, the jobs, start / quiesce /
 *                  free / status;
 *   bsky_aware.c   the awareness check: notifications, the batch, the
 *                  cursor, starting and ending notes;
 *   bsky_notes.c   a notification on its walk: the thread, the event, the
 *                  pipeline source's hooks, compose, the self-check,
 *                  pacing, §6.12 promises;
 *   bsky_likes.c   likes through outbound, paced;
 *   bsky_feed.c    feed hygiene: the identity post, pruning, the expression
 *                  schedule from the feed;
 *   bsky_peers.c   peer identity posts, follow, announce once;
 *   bsky_posts.c   proactive posts: expression (with its invitation check)
 *                  and ritual openings;
 *   bsky_thread.c  a reply the agent starts in a thread it knows (a plan
 *                  announced where it was asked for);
 *   bsky_common.c  what they all use: the clock, decisions, the state file,
 *                  local time, SELF.md, JSON access.
 *
 * Calls between the files go one way (the arrows below): a file never
 * calls one that calls it. A note's end reaches the awareness check
 * through b->note_finished.
 *
 * Single-threaded: everything runs on the loop of bsky_config.loop.
 */
#ifndef GA_MODULES_BLUESKY_BSKY_INT_H
#define GA_MODULES_BLUESKY_BSKY_INT_H

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
#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "local-tools/tools.h"
#include "modules/bluesky/port.h"
#include "modules/budget/budget.h"
#include "modules/commitments/commitment.h"
#include "modules/commitments/ledger.h"
#include "modules/compose/compose.h"
#include "modules/identity/self.h"
#include "modules/journal/journal.h"
#include "modules/pipeline/pipeline.h"
#include "modules/reflection/voice.h"
#include "modules/scheduler/sched.h"
#include "modules/skills/skills.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"

#define LOG_COMP "bluesky"

/* Feed pruning submits at most this many deletes per run (bsky_feed.c). */
#define BSKY_PRUNE_PER_RUN 8

struct bsky;

/* The direct replies under a post, reduced (§6.8 steps 2 and 6): ours, and
 * the newest of a known peer. */
struct bsky_seen_replies {
	char own[BSKY_URI_MAX];     /* "" when none */
	char peer[BSKY_HANDLE_MAX]; /* "" when none */
	int64_t peer_ms;            /* its indexedAt */
};

/* One notification on its walk. */
struct bnote {
	struct bsky *b;
	bool used;
	bool ended; /* the record stage was seen */
	bool sent;  /* the reply (or the reaction) was made */
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
		char uri[BSKY_URI_MAX];
		char did[BSKY_DID_MAX];
		char handle[BSKY_HANDLE_MAX + 2];
		char *text;
		bool agent;
	} thread[BSKY_THREAD_MAX];
	size_t nthread;
	struct bsky_seen_replies seen; /* under this post, when the thread was read */
	/* our reply to this post was sent but its fate is unknown (the journal
	 * holds its intent): nothing is said until the platform was asked */
	bool reply_unresolved;
	char ritual[128];
	/* compose */
	struct pipeline_job *job;
	struct compose_run *run;
	struct tools_sink sink;
	struct compose_tool tools[TOOLS_MAX];
	size_t ntools;
	char *reply;
	cJSON *promises; /* [{type, params}]: enqueued once the reply is sent */
	/* what a reaction likes: the post, or the one graceful_exit named */
	char like_uri[BSKY_URI_MAX];
	char like_cid[ATP_CID_MAX];
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

struct like_entry {
	char uri[BSKY_URI_MAX];
	char cid[ATP_CID_MAX];
	char did[BSKY_DID_MAX];
	char conversation[BSKY_URI_MAX + 16];
	char message_id[BSKY_URI_MAX];
	char why[120];
	struct pipeline_job *job; /* the walk this like answers, or NULL */
};

struct attempt {
	char uri[BSKY_URI_MAX];
	int n;
};

/* A reply to a known thread on its way (bsky_thread.c): the post answered
 * is being read. */
#define BSKY_SAYS_MAX 8
struct bsky_say {
	struct bsky *b;
	bool used;
	uint64_t call; /* the getPosts in flight; 0 once answered */
	char key[PIPELINE_ID_MAX];
	char source[32];
	char *text; /* fitted to the post's bound */
	struct bsky_thread_target t;
};

struct bsky {
	struct bsky_config c;
	char *agent_name, *owner_did, *owner_handle, *github, *soul, *self_path;
	struct voice *voice; /* voice-phrases.json; NULL: the built-in phrases */
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
	struct bsky_say says[BSKY_SAYS_MAX];
	/* a note's walk is over (bk_note_finished, set by bsky_new) */
	void (*note_finished)(struct bnote *n);
};

/* ---- bsky_common.c (calls no other engine file) ---- */
/* The clock (time_now_ms). */
int64_t bk_now_ms(void);
/* A decision on the story of a conversation / message (pipeline_note) and
 * the log. */
void bk_note_decision(struct bsky *b, const char *conversation, const char *id,
                      enum decision_stage stage, enum decision_verdict v, const char *rule,
                      const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* Writes the state file (atomically); a failure is logged. */
void bk_save_state(struct bsky *b);
/* Local weekday, hour and "YYYY-MM-DD" of ms (any may be NULL). */
void bk_local_now(int64_t ms, int *wday, int *hour, char date[11]);
/* SELF.md's Social Mechanics, or the defaults. */
const struct self_mechanics *bk_mechanics(const struct bsky *b);
/* SELF.md's text (caller frees), or NULL. */
char *bk_read_self(const struct bsky *b);
/* o[a][b_] as a string, "" when absent. */
const char *bk_str_at(const cJSON *o, const char *a, const char *b_);
/* The note in flight for a post, or NULL. */
struct bnote *bk_note_by_uri(struct bsky *b, const char *uri);
/* Is the post (its author's DID, its record) an agent's: ours, a known
 * peer's, or one carrying the gaChain field? */
bool bk_is_agent_record(const struct bsky *b, const char *did, const cJSON *record);

/* ---- bsky_likes.c (→ common) ---- */
/* A like through outbound (target bluesky:like:<did>), paced (at most
 * BSKY_LIKES_MAX waiting). job (may be NULL): the walk it answers, told
 * with pipeline_reacted once the like is made or not. */
void bk_like(struct bsky *b, const char *uri, const char *cid, const char *did,
             const char *conversation, const char *message_id, const char *why,
             struct pipeline_job *job);

/* ---- bsky_notes.c (→ likes, common) ---- */
/* Notifications on their walk now. */
size_t bk_notes_in_flight(const struct bsky *b);
/* Frees what the note holds; the slot is free again. */
void bk_note_clear(struct bnote *n);
/* The note's walk is over: b->note_finished(n) follows on the loop. */
void bk_note_end(struct bnote *n);
/* getPostThread for the note, then its event. */
void bk_fetch_thread(struct bnote *n);
/* The pipeline source's hooks: gate, compose, react, done, reply_extra,
 * reply_target, sent_id. */
void bk_on_gate(void *ud, const struct conv_event *ev, const struct gate_result *g,
                struct decision *d);
void bk_on_compose(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                   const struct gate_result *g);
void bk_on_react(void *ud, struct pipeline_job *job, const struct conv_event *ev,
                 const struct decision *why);
void bk_on_walk_done(void *ud, const struct conv_event *ev, const struct decision *final,
                     const char *artifact);
int bk_on_reply_extra(void *ud, const struct conv_event *ev, cJSON *extra);
int bk_on_sent_id(void *ud, const struct conv_event *ev, const char *artifact, char *buf,
                  size_t cap);
int bk_reply_target(void *ud, const struct conv_event *ev, char *buf, size_t cap);

/* ---- bsky_peers.c (→ notes, common) ---- */
/* A peer candidate's author feed (getAuthorFeed answer); ud is the note
 * that asked, whose thread is read next. */
void bk_on_author_feed(void *ud, const struct atp_result *res);
void bk_peers_run(void *ud, struct sched_job *job);

/* ---- bsky_aware.c (→ peers, notes, common) ---- */
/* The awareness job. */
void bk_awareness_run(void *ud, struct sched_job *job);
/* b->note_finished: a note's end (bsky_aware.c). */
void bk_note_finished(struct bnote *n);
/* Frees the awareness check's batch. */
void bk_batch_clear(struct bsky *b);

/* ---- bsky_feed.c, bsky_posts.c (→ common) ---- */
void bk_feed_run(void *ud, struct sched_job *job);
void bk_expression_run(void *ud, struct sched_job *job);
void bk_ritual_run(void *ud, struct sched_job *job);

/* ---- bsky_thread.c (→ common) ---- */
/* Cancels the reads in flight of the replies to threads (no callback) and
 * forgets them. */
void bk_says_free(struct bsky *b);

/* bsky.c (the top: → every file) holds no internal function. */

#endif
