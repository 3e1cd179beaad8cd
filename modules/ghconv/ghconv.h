/*
 * ghconv — GitHub conversations (spec github-commitments §4): the agent reads its GitHub
 * notifications and answers in issue and pull-request threads, through the message pipeline,
 * without loops.
 *
 * One poll (ghconv_poll, every GHCONV_POLL_MS ± 12 % from the scheduler;
 * never in --social-only mode: the service does not exist there):
 *   1. skipped while the agent is paused or the core rate budget is under
 *      GHCONV_MIN_BUDGET (queued threads wait while paused, unread);
 *   2. GET /notifications since the persisted cursor, read ones included
 *      (all=true): GitHub keeps ONE notification thread per issue, so new
 *      activity that arrives while we handle the thread is marked read
 *      together with what we handled; the seen set (thread id, updated_at)
 *      and the cursor, not the unread flag, say what is new. The very first
 *      poll (no cursor yet) lists the unread ones only, so a new agent does
 *      not answer its account's whole history;
 *   3. notifications whose reason is not actionable (§4.1) are left alone
 *      (never marked read); one already handled (its thread id and
 *      updated_at in the seen set) is only marked read again if it still
 *      shows unread; the others
 *      are queued, one entry per thread, due after the thread's stagger
 *      (policy.h ghconv_stagger_ms) so that two agents mentioned together
 *      answer one after the other.
 * One thread at a time, when due:
 *   4. the issue and its comments are fetched; our own duplicate comments
 *      are deleted (§4.6, each deletion logged and recorded as a decision);
 *   5. the reply decision (§4.3, with the effective peers of §4.4); "no" is
 *      recorded with its rule and the thread is handled;
 *   6. the thread's messages go into the pipeline's conversation store (the
 *      gate derives the chain from it; the chain marker a comment carries
 *      counts too), and the message answered goes through pipeline_event:
 *      gate → [claim] → compose. A walk that ends before compose comes back
 *      through the source's done() hook (pipeline.h), once, from the loop,
 *      with the decision that ended it: REACT (chain at MAX_ACL, or
 *      SELF.md's social mechanics) → the agent reacts (heart) to that
 *      comment and writes no comment; BLOCK / CONTEXT (above MAX_ACL, the
 *      budgets, a claim held by another agent or no coordination: fail
 *      closed) → silence, the thread is handled; BLOCK "paused" → not
 *      handled, it comes back. An event the pipeline refuses at once
 *      (overload) is not handled either: it comes back on a later poll;
 *   7. compose (§4.5): the skill github-reply with SOUL and SELF, the thread
 *      as ghconv_prompt writes it, the GitHub tools. One comment on this
 *      thread is taken from github_create_issue_comment (or graceful_exit
 *      with a message); graceful_exit with a like becomes a reaction;
 *      github_create_issue and plan_create go to the commitment ledger.
 *      The comment is cleaned (no signature, no self-mention) and refused
 *      when it still names the agent (seed 004), then sent with
 *      pipeline_say_ctx to github:<owner>:<repo>:issue:<n> with the gate's
 *      chain_out (outbound adds the hidden marker and journals it under
 *      "say:github:<owner>/<repo>#<n>:re:<message>", so a crash never
 *      posts it twice);
 *   8. the thread is handled: the notification goes into the seen set, the
 *      state is saved, and only then is the notification marked read. A
 *      thread that failed on the way (a transient GitHub or model error, a
 *      failed send) is not marked read and comes back on a later poll.
 *
 * Reviews (§3.11): a notification with reason review_requested, or
 * ghconv_review (the workspace cycle, for a PR whose designated reviewer we
 * are), queues a review of the PR instead of a reply. Its walk:
 *   1. GET the PR: closed, merged, a draft or our own → recorded (rules
 *      pull_closed, pull_draft, own_pull), no review;
 *   2. its reviews: one of ours on the current head → recorded
 *      (reviewed_head), no review (one review per head; a revision is a new
 *      head and is reviewed again). These decisions are recorded under the
 *      id "github:<owner>/<repo>#<n>:review";
 *   3. its files (up to GHCONV_REVIEW_MAX_FILES, with their patches), then
 *      one event through the pipeline, in the conversation
 *      "github:<owner>/<repo>#<n>:review" with the id
 *      "github:<owner>/<repo>#<n>:review@<head sha>" (`general-agent why`
 *      that id tells the walk): gate (review_requested) → [claim, when the
 *      author is an agent] → compose: the skill github-review, the prompt
 *      of review.h (the diff, bounded), the one tool github_review_pr →
 *      validator → outbound: github:<owner>:<repo>:review:<n>, the journal
 *      key gh_port_review_key (per head: a crash never reviews one head
 *      twice) → record. No review from the model, or one refused, ends the
 *      walk with its decision; ghconv_review then leaves that head of the
 *      PR for GHCONV_REVIEW_RETRY_MS (a new head is reviewed at once).
 *
 * The open-issue scan (ghconv_consider_issue; the workspace module hands
 * the open issues of a watched workspace that a person opened, a few per
 * cycle): such an issue is queued like a notification's thread (the same
 * stagger, one item per thread: a notification of the same thread joins
 * it) and walked the same way, with the §4.3 option "workspace issue", so
 * an issue nobody mentioned us in is answered (rule workspace_issue, low
 * urgency). Where the decision is no (our comment is the latest, the
 * issue is closed or finished, we said enough) or the issue's author is
 * an agent, an issue that came from the scan alone is not walked: one
 * decision (platform github, id "github:<owner>/<repo>#<n>") says why.
 * A walk that came from the scan records a decision "open_issue_scan"
 * (stage event) under the walked message's id before the pipeline's own,
 * so `general-agent why` tells where it came from. Once a walk of an
 * issue ends (answered, silent, not walked), the issue's updated_at as
 * the walk read it is remembered (ghconv_issue_id, in the state file):
 * the scan's next hand of that unchanged issue is GHCONV_CONSIDER_DECIDED,
 * across restarts too; any change (a comment, ours included, an edit)
 * makes it new. A walk that failed on the way is not remembered: the
 * scan brings the issue back.
 *
 * State: the state file "ghconv" holds the notification cursor, the seen
 * set (GHCONV_SEEN_MAX entries, the oldest forgotten first) and the
 * decided issue states (GHCONV_SEEN_MAX, one per issue, the oldest
 * forgotten first).
 *
 * Bounds: GHCONV_MAX_QUEUE threads queued (more wait, unread, for a later
 * poll); GHCONV_MAX_NOTIFS notifications a poll; GHCONV_MAX_CALLS GitHub
 * calls in flight; the thread bounds of policy.h.
 *
 * A 401 from GitHub (the token refused) calls config.fatal: the daemon
 * tells the owner and exits 69.
 *
 * Lifetime: ghconv_new adds the pipeline's GitHub source (compose,
 * reply_target, done; its ud is the struct ghconv). ghconv_quiesce stops
 * new work (a poll in flight ends at once; a walk's end that comes back
 * then leaves the notification unread). ghconv_free cancels every GitHub
 * call of ours; a model call in flight ends later on its own and finds
 * nothing. The pipeline keeps calling its GitHub source: free the pipeline
 * right after ghconv_free, with no loop turn between them (pipeline_free
 * calls no source; the daemon does so once coordination and outbound are
 * closed). Handles close on the loop: run it afterwards.
 */
#ifndef GA_MODULES_GHCONV_GHCONV_H
#define GA_MODULES_GHCONV_GHCONV_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"

#define GHCONV_POLL_MS            120000 /* §4.2 */
#define GHCONV_POLL_JITTER        0.12   /* §4.7 timer jitter */
#define GHCONV_MIN_BUDGET         200    /* §4.2: skip the poll below this many core requests */
#define GHCONV_STAGGER_MIN_MS     15000  /* §4.7: the response delay's range */
#define GHCONV_STAGGER_SPAN_MS    75000
#define GHCONV_MAX_QUEUE          32
#define GHCONV_MAX_NOTIFS         100
#define GHCONV_MAX_CALLS          64
#define GHCONV_MAX_DUPLICATES     16   /* deleted per thread visit */
#define GHCONV_PAUSED_RECHECK_MS  5000 /* a paused agent's queue is looked at again */
#define GHCONV_MAX_ROUNDS         4    /* model calls per reply */
#define GHCONV_REACTION           "heart"
#define GHCONV_STATE_NAME         "ghconv"
#define GHCONV_REVIEW_MAX_REVIEWS 100    /* reviews of one PR read */
#define GHCONV_REVIEW_TRIED       32     /* PRs remembered as tried without a review */
#define GHCONV_REVIEW_RETRY_MS    600000 /* such a PR is not walked again before this */

struct budget;
struct gh_client;
struct ledger;
struct llm_client;
struct pipeline;
struct self_doc;
struct skills;
struct state_store;

struct ghconv_config {
	uv_loop_t *loop;
	struct gh_client *gh;         /* required */
	struct pipeline *pipeline;    /* required */
	struct outbound *outbound;    /* reactions, deletions; may be NULL: none are made */
	struct llm_client *llm;       /* required */
	struct budget *budget;        /* may be NULL */
	const struct skills *skills;  /* may be NULL: the prompt has no skill text */
	struct ledger *ledger;        /* may be NULL: commitments are refused */
	const struct state_store *st; /* may be NULL: nothing persisted */
	const char *agent_name;       /* AGENT_NAME: the stagger's seed, never in a comment */
	const char *login;            /* AGENT_GITHUB_USERNAME: required */
	const char *api_url;          /* GITHUB_API_URL (notification subjects are under it) */
	const char *soul_text;        /* borrowed; may be NULL */
	const struct self_doc *self;  /* borrowed (re-read in place on SIGHUP); may be NULL */
	const char *const *peers;     /* registered peer logins (§4.4); may be NULL */
	size_t npeers;
	int64_t stagger_min_ms, stagger_span_ms;
	/* A fatal model error (LLM_ERR_FATAL): the daemon tells the owner and
	 * stops. May be NULL. */
	void (*fatal)(void *ud, int exit_code, const char *text);
	void *ud;
};

struct ghconv;

/* NULL with err when a required part is missing or the pipeline already
 * has a GitHub source. */
struct ghconv *ghconv_new(const struct ghconv_config *c, struct ga_err *err);
void ghconv_free(struct ghconv *g); /* NULL ok */
void ghconv_quiesce(struct ghconv *g);

/* One poll; done(ud) once the notification list is dealt with (threads
 * go on, on their own timers). done may run before this returns. */
void ghconv_poll(struct ghconv *g, void (*done)(void *ud), void *ud);

/* Queues a review of pull request owner/repo#pr (the workspace cycle's
 * designated reviewer; see "Reviews" above). Nothing when that PR's review
 * is queued or walking already, when its last walk ended without a review
 * less than GHCONV_REVIEW_RETRY_MS ago, or when the queue is full (the
 * caller asks again on its next cycle). */
void ghconv_review(struct ghconv *g, const char *owner, const char *repo, int64_t pr,
                   const char *head);

/* What ghconv_consider_issue made of an issue. */
enum ghconv_consider {
	GHCONV_CONSIDER_QUEUED,  /* queued now, or queued or walking already */
	GHCONV_CONSIDER_DECIDED, /* this state of the issue was decided (or it is not one) */
	GHCONV_CONSIDER_LATER,   /* the queue is full or the engine stops: ask again later */
};

/* An open issue of a watched workspace, from the workspace's open-issue
 * scan (§3.14.5, §4.1 "workspace issue"): nobody needs to have mentioned
 * the agent. updated_ms is the issue's updated_at as the scan listed it.
 * See "The open-issue scan" above. */
enum ghconv_consider ghconv_consider_issue(struct ghconv *g, const char *owner, const char *repo,
                                           int64_t number, int64_t updated_ms);

struct ghconv_stats {
	uint64_t polls;         /* notification lists fetched */
	uint64_t skipped_polls; /* paused or low budget */
	int64_t last_poll_ms;   /* 0 never */
	char last_poll_error[GA_ERR_MSG_MAX];
	uint64_t threads_seen; /* threads queued */
	uint64_t handled;
	uint64_t replies;   /* comments sent */
	uint64_t reviews;   /* reviews submitted */
	uint64_t reactions; /* reactions made */
	uint64_t silences;  /* threads decided without a comment */
	uint64_t duplicates_deleted;
	size_t queued;
};
void ghconv_stats(const struct ghconv *g, struct ghconv_stats *out);
/* The stats as JSON (status file, dashboard). Caller frees. */
cJSON *ghconv_status(const struct ghconv *g);

#endif
