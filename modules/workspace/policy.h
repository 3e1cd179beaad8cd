/*
 * workspace policy — the pure rules of the work loop that the workspace
 * engine (workspace.h) applies: no I/O, time enters as data.
 *
 *   reviewer   the designated reviewer of a pull request (spec §3.11): of
 *              the known agents other than the PR's author, the one whose
 *              SHA-256 hex of "<lower-case login><owner>/<repo>#<n>" is the
 *              smallest. Every agent computes the same answer from the
 *              same list, so the one requested is the one who reviews;
 *   agents     the known agents of a workspace: ourselves, the authors of
 *              the valid machine markers in its plans (they are agents by
 *              what they wrote: a person does not write ga: markers) and
 *              the agents of our room that said their GitHub login (an
 *              idle agent has no marker yet and still reviews) — a set
 *              the agents reading the same plans in the same room agree
 *              on;
 *   keys       the idempotency keys of the loop's side effects, short
 *              enough for the journal (at most WSP_KEY_MAX bytes) and the
 *              same across restarts, so a comment, a PR, a push is made
 *              once;
 *   texts      the comments: the agent's phrase (voice-phrases.json) with
 *              the machine marker below it, hidden;
 *   duplicates which open plans duplicate another (same title, ignoring
 *              case, spaces and punctuation): the plan that has work on it
 *              (a marker) is kept over one that has none, else the newest;
 *              a plan with work is never closed;
 *   orphans    a claim whose holder went away: claimed or in progress by
 *              another agent, no PR, the last marker older than the orphan
 *              time — and (the caller's part) the holder's coordination
 *              lock free.
 *   merge      what the creator of a pull request does next (wsp_pr_decide),
 *              from what GitHub holds — the PR, its reviews, its review
 *              requests (the timeline's review_requested events) — so every
 *              agent and every restart computes the same answer. The
 *              reviewers who count are the designated one and those asked
 *              after a timeout; their latest APPROVED / CHANGES_REQUESTED
 *              review on the current head decides. Every outcome leads
 *              somewhere: a merge, a revision, a rebuild, a request to the
 *              next reviewer, or the owner — nothing waits without a clock.
 */
#ifndef GA_MODULES_WORKSPACE_POLICY_H
#define GA_MODULES_WORKSPACE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/git/git.h"
#include "common/hash.h"
#include "modules/decisions/decision.h"
#include "modules/plan/plan.h"
#include "modules/plan/taskstate.h"

#define WSP_KEY_MAX        128
#define WSP_MAX_AGENTS     32 /* known agents of a workspace */
#define WSP_ROOM_AGENTS    64 /* the room's agents' logins read for it, at most */
#define WSP_DETAILS_FILES  30 /* files listed in a report comment (the rest counted) */
#define WSP_MAX_PLANS_SEEN 32 /* open plans of one workspace considered */

/* sha256 hex of "<lower-case login><owner>/<repo>#<n>". */
void wsp_reviewer_hash(const char *login, const char *owner, const char *repo, int64_t pr,
                       char out[SHA256_HEX_LEN + 1]);

/* The designated reviewer of owner/repo#pr among candidates (logins, any
 * case, duplicates fine), the author excluded: 0 with out filled, -1 when
 * nobody is left. d (may be NULL) says who and why. */
int wsp_designated_reviewer(const char *owner, const char *repo, int64_t pr, const char *author,
                            const char *const *candidates, size_t n, char *out, size_t cap,
                            struct decision *d);

/* A set of logins (case-insensitive), bounded at WSP_MAX_AGENTS (more are
 * ignored). */
struct wsp_agents {
	char login[WSP_MAX_AGENTS][PLAN_LOGIN_MAX];
	size_t n;
};
/* Adds login (a valid GitHub login) unless present. */
void wsp_agents_add(struct wsp_agents *a, const char *login);
/* Adds the valid ones of logins (n of them, any order, duplicates fine) in
 * case-insensitive alphabetical order, so which are kept when the set fills
 * up depends on the logins, not on their order. */
void wsp_agents_add_sorted(struct wsp_agents *a, const char *const *logins, size_t n);
bool wsp_agents_has(const struct wsp_agents *a, const char *login);

/* "ws-<kind>:<12 hex of sha256(lower owner/repo)>#<plan>/<task>/a<attempt>"
 * (task 0: "#<plan>"; attempt 0: without "/a<k>"). 0, or -1 when it does
 * not fit. */
int wsp_key(char *out, size_t cap, const char *kind, const char *owner, const char *repo, int plan,
            int task, int attempt);

/* phrase + "\n\n" + the marker of m. NULL when the marker does not format
 * (plan_marker_format's reasons). Caller frees. */
char *wsp_comment(const char *phrase, const struct plan_marker *m);

/* The {{details}} of the "task complete" phrase (spec §3.10): the PR link,
 * the change's summary, the files (at most WSP_DETAILS_FILES, the rest
 * counted) and the tests line. Caller frees. */
char *wsp_task_details(const char *pr_url, const char *shortstat, const struct git_file *files,
                       size_t n_files, size_t files_dropped, const char *tests_line);

/* One open plan as the duplicate rule sees it. */
struct wsp_plan_brief {
	int number;
	const char *title;
	bool touched; /* a marker applies to one of its tasks */
};
struct wsp_supersede {
	int number; /* to close */
	int by;     /* the plan kept */
};
/* The plans to close as superseded (at most cap; n at most
 * WSP_MAX_PLANS_SEEN considered). Returns how many. */
size_t wsp_plan_duplicates(const struct wsp_plan_brief *p, size_t n, struct wsp_supersede *out,
                           size_t cap);
/* The title as the duplicate rule compares it: lower case, letters and
 * digits, single spaces. */
void wsp_title_norm(const char *title, char *out, size_t cap);

/* Is the claim on st another agent's that lapsed (see above)? d says why
 * either way. */
bool wsp_claim_lapsed(const struct plan_task_state *st, const char *me, int64_t now_ms,
                      int64_t orphan_ms, struct decision *d);

/* Counts of a plan's tasks for the room's workspace_state. */
struct wsp_counts {
	int total, completed, blocked, in_progress; /* in_progress: claimed + in progress */
};
void wsp_count(const struct plan_task_state *st, size_t n, struct wsp_counts *out);

/* --- recovery and lifecycle (wsp_recover.c, wsp_life.c) ------------------------------------- */

#define WSP_LABEL_FINISHED   "finished"
#define WSP_LABEL_DISCUSSION "discussion"
#define WSP_LABEL_MEMO       "memo"

/* Is branch one of task's branches: plan_branch_name(task, title, 1)
 * alone or followed by "-a<k>", or the legacy name? */
bool wsp_task_branch(const char *branch, int task, const char *title);

/* Does a PR (its head ref and body) carry the work of task of plan: a
 * "task-<task>-" head, and a body naming the plan ("Part of #<plan>") or
 * naming no plan at all? */
bool wsp_pr_of_task(const char *head_ref, const char *body, int plan, int task);

/* The body of a PR opened for an orphaned branch (pushed, never given a
 * PR): the task, the note that it was recovered and by whom, "Part of
 * #<plan>" and the pr marker. Caller frees; NULL when the marker does not
 * format. */
char *wsp_recovered_pr_body(int plan, int task, const char *title, const char *branch,
                            const char *login, int attempt);

struct cJSON;

/* One open issue as the lifecycle rules see it. */
struct wsp_issue_brief {
	int number;
	bool pull;                       /* a pull request */
	bool plan, finished, discussion; /* its labels */
	bool memo;
	char author[PLAN_LOGIN_MAX];
	int64_t created_ms, updated_ms;
	/* the author of its latest comment ("" none, or not read) */
	char last_commenter[PLAN_LOGIN_MAX];
};
/* Reads one issue of GitHub's list. -1 when it has no number. */
int wsp_issue_brief(const struct cJSON *issue, struct wsp_issue_brief *out);

enum wsp_hygiene { WSP_HYG_KEEP, WSP_HYG_HANDLED, WSP_HYG_STALE };
/* §3.14.5 for one open issue: plans, pull requests, sentinels and
 * discussions are kept; quiet for stale_ms (memo: three sevenths of it)
 * → stale; quiet for handled_ms with our comment the latest → handled.
 * d says which and why. */
enum wsp_hygiene wsp_issue_hygiene(const struct wsp_issue_brief *b, const char *me, int64_t now_ms,
                                   int64_t handled_ms, int64_t stale_ms, struct decision *d);

/* --- open-issue engagement (§3.14.5, plan step 12) ---------------------------------------- */

/* Issues handed to the GitHub conversations per workspace a cycle. */
#define WSP_ENGAGE_PER_CYCLE 3

/* What the GitHub conversations made of an open issue handed to them. */
enum wsp_consider {
	WSP_CONSIDER_QUEUED,  /* queued (or queued already): it counts against the bound */
	WSP_CONSIDER_DECIDED, /* this state of it (its updated_at) was decided: nothing to do */
	WSP_CONSIDER_LATER,   /* no room now: nothing more this cycle */
};
/* Hands owner/repo#number, whose updated_at is updated_ms, to be
 * considered for an answer. */
typedef enum wsp_consider (*wsp_consider_fn)(void *ud, const char *owner, const char *repo,
                                             int64_t number, int64_t updated_ms);

/* May the open-issue scan hand b: an issue (not a pull request) that is
 * not a plan, a finished sentinel or a discussion, opened by a person
 * (neither me nor a known agent), whose latest comment, when known, is not
 * ours? d (may be NULL) says why not. */
bool wsp_engage_candidate(const struct wsp_issue_brief *b, const char *me,
                          const struct wsp_agents *agents, struct decision *d);

/* The open-issue scan of one workspace: the candidates of b (n of them)
 * newest first (by number), each handed to consider until max were
 * queued or consider says LATER. An issue whose state was decided
 * (DECIDED) does not count, so a new issue behind many answered ones is
 * still reached. Returns how many were queued. */
size_t wsp_engage(const struct wsp_issue_brief *b, size_t n, const char *owner, const char *repo,
                  const char *me, const struct wsp_agents *agents, size_t max,
                  wsp_consider_fn consider, void *ud);

/* The finished sentinel rule (§3.14.4, discovered by label so every agent
 * sees the same): of the open issues labelled finished, the oldest is the
 * sentinel (the others are duplicates to close). Returns its index, or -1
 * when there is none. */
int wsp_sentinel_pick(const struct wsp_issue_brief *b, size_t n);

/* Does new work reactivate a finished workspace: an open issue opened
 * after the sentinel (a higher number; not a PR, not a sentinel) that is
 * a plan (someone asked for work), or whose author is not a known agent
 * (a person)? Its number into *by. */
bool wsp_sentinel_reactivated(const struct wsp_issue_brief *b, size_t n, int sentinel,
                              const struct wsp_agents *agents, int *by);

#define WSP_SYNTH_COOLDOWN_MS  (60LL * 60 * 1000)      /* §3.14.2: between synthesis attempts */
#define WSP_HEALTH_COOLDOWN_MS (24LL * 60 * 60 * 1000) /* §3.14.3: between health checks */
#define WSP_SYNTH_MAX_ISSUES   30                      /* issues given to the model */
#define WSP_SYNTH_BODY_MAX     2000                    /* bytes of each issue's body */

/* Does a plan's body name issue n ("#n", not part of a longer number or
 * word)? A synthesized plan closes only the issues it names. */
bool wsp_plan_covers(const char *body, int n);

/* The synthesis request (§3.14.2) for owner/repo: every open issue of the
 * array (GitHub's JSON; pull requests, plans, sentinels and discussions
 * left out; at most WSP_SYNTH_MAX_ISSUES, the rest counted) with its
 * number, title, labels and the first WSP_SYNTH_BODY_MAX bytes of its body
 * (cut on a UTF-8 boundary), and the instruction to make one plan naming
 * each issue it covers by number. The numbers given into nums (at most
 * cap), their count into *n. Caller frees; NULL when no issue is left. */
char *wsp_synthesis_prompt(const char *owner, const char *repo, const struct cJSON *issues,
                           int *nums, size_t cap, size_t *n);

/* --- pull requests: the merge rule ------------------------------------------------------- */

#define WSP_REVIEW_TIMEOUT_MS (2 * 60 * 60 * 1000) /* no review this long after the request */
#define WSP_MAX_REVISIONS     2  /* coder runs on a PR after changes were requested */
#define WSP_MAX_REBUILDS      2  /* fresh branches after a conflict (attempt - 1) */
#define WSP_MAX_PULLS         64 /* PRs in wsp_status()["pulls"] */

/* Where a PR stands (wsp_status()["pulls"][].state). */
enum wsp_pr_state {
	WSP_PR_AWAITING_REVIEW,
	WSP_PR_CHANGES_REQUESTED,
	WSP_PR_REVISING,
	WSP_PR_APPROVED,
	WSP_PR_MERGING,
	WSP_PR_CONFLICT,
	WSP_PR_REBUILDING,
	WSP_PR_MERGED,
	WSP_PR_CLOSED,
	WSP_PR_OWNER,
};
const char *wsp_pr_state_name(enum wsp_pr_state s); /* "awaiting_review", … */

/* What the creator does now. */
enum wsp_pr_act {
	WSP_ACT_WAIT,    /* someone else acts (v->next says who) */
	WSP_ACT_MERGE,   /* squash at the head */
	WSP_ACT_REVISE,  /* the coder again on the same branch, the review as input */
	WSP_ACT_REQUEST, /* ask v->ask for a review of the current head */
	WSP_ACT_REBUILD, /* a fresh branch from the default branch (attempt + 1) */
	WSP_ACT_OWNER,   /* hand the PR to the owner (told once) */
	WSP_ACT_CLOSE,   /* replaced by the task's newer PR: closed, linking it */
};
const char *wsp_pr_act_name(enum wsp_pr_act a);

struct wsp_pr_review {
	const char *user;
	const char *state; /* APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING */
	const char *commit_id;
	int64_t at_ms;
};
/* A review_requested event of the PR's timeline. */
struct wsp_pr_ask {
	const char *login;
	int64_t at_ms;
};
enum wsp_pr_running { WSP_RUN_NONE, WSP_RUN_REVISION, WSP_RUN_REBUILD };

struct wsp_pr_facts {
	const char *owner, *repo;
	int64_t number;
	const char *author, *head_sha;
	const char *mergeable_state; /* "dirty" is a conflict; "" unknown */
	int64_t created_ms;
	const struct wsp_pr_review *reviews; /* oldest first */
	size_t n_reviews;
	const char *const *requested; /* requested_reviewers now */
	size_t n_requested;
	const struct wsp_pr_ask *asks; /* oldest first */
	size_t n_asks;
	/* who we asked for this head already (our journal): asked, even when
	 * GitHub does not list them as requested (a request it dropped) */
	const char *const *asked_head;
	size_t n_asked_head;
	const char *const *agents; /* the workspace's known agents */
	size_t n_agents;
	int attempt;                       /* of the task, from the PR's marker (>= 1) */
	int task_pr;                       /* the task's PR by the plan's markers; 0 unknown */
	bool handed_over;                  /* the owner was told (the journal's key) */
	enum wsp_pr_running running;       /* a run of ours for this PR goes on */
	int64_t now_ms, review_timeout_ms; /* 0: WSP_REVIEW_TIMEOUT_MS */
	int max_revisions;                 /* < 0: WSP_MAX_REVISIONS */
	int max_rebuilds;                  /* < 0: WSP_MAX_REBUILDS */
};

struct wsp_pr_verdict {
	enum wsp_pr_act act;
	enum wsp_pr_state state;
	char reviewer[PLAN_LOGIN_MAX]; /* the one whose review is awaited or decided; "" none */
	char ask[PLAN_LOGIN_MAX];      /* WSP_ACT_REQUEST: whom */
	char next[PLAN_LOGIN_MAX];     /* who is expected to act; "" the owner */
	int revisions;                 /* changes requested on distinct heads so far */
	int64_t since_ms;              /* when the state began, as GitHub dates it */
	const struct wsp_pr_review *decisive; /* the review that decided, or NULL */
	struct decision d;
};

/* The merge rule (policy.h "merge"), in this order: a PR the task replaced
 * → close; a run of ours on it → wait; a conflict → rebuild (past
 * max_rebuilds: the owner); the responsible reviewers' latest decisive
 * review on the head: approved → merge, changes requested → revise (past
 * max_revisions: the owner); handed over → wait for the owner; no
 * reviewer asked → the designated one (none known: the owner); the
 * reviewer asked before this head → asked again; asked longer than the
 * timeout → the next by the same hash order (none left: the owner); else
 * wait for the reviewer. */
void wsp_pr_decide(const struct wsp_pr_facts *f, struct wsp_pr_verdict *v);

/* The plan a PR body names ("Part of #N", the last one), or 0. */
int wsp_pr_plan_of(const char *body);
/* The task of a head branch "task-<n>-…", or 0. */
int wsp_pr_task_of_branch(const char *head_ref);

/* A key of a PR's side effect: "ws-<kind>:<12 hex>#<pr>[@<12 of sha>][:<login>]"
 * (sha, login may be NULL). 0, or -1 when it does not fit. */
int wsp_pr_key(char *out, size_t cap, const char *kind, const char *owner, const char *repo,
               int64_t pr, const char *sha, const char *login);

/* A review's body worth a follow-up issue: not empty, not only "lgtm",
 * "lgtm!" or "looks good" (any case, trimmed; our own markers ignored). */
bool wsp_review_substantive(const char *body);

/* Whether the author `login` of a conflicting PR for `task` rebuilds it
 * from the default branch: yes when the task is its own (claimed or in
 * progress by login: the in-progress marker may not be read yet when the
 * conflict is), or when the task could be claimed again; no (d says why:
 * failed too often, abandoned, someone else's) and the PR is the owner's. */
bool wsp_rebuild_allowed(const struct plan *p, const struct plan_task_state *st, size_t n, int task,
                         const char *login, struct decision *d);

/* Whether a review of a merged PR belongs in its follow-up issue: feedback
 * left for later, not feedback the PR already answered.
 * - Not substantive (above): no.
 * - CHANGES_REQUESTED followed by an APPROVED review by the same reviewer
 *   (`approved_later`): no, the revision that earned the approval made
 *   those changes.
 * - APPROVED: only when the body suggests something (wsp_review_suggests):
 *   an approval that describes or praises the change leaves nothing to do.
 * - Anything else substantive (COMMENTED, an unanswered change request): yes. */
bool wsp_review_followup(const char *state, const char *body, bool approved_later);

/* A review body that asks for something: a question, or a word such as
 * "consider", "should", "could", "suggest", "nit", "todo", "later",
 * "missing", "instead", "but", "however" (whole words, any case). */
bool wsp_review_suggests(const char *body);

/* --- the finished sentinel verified (spec §3.14.4) ------------------------------------------ */

#define WSP_AGREE_MAX_CHARS   120 /* a longer comment is never mere agreement */
#define WSP_SENTINEL_COMMENTS 100 /* comments of the sentinel (and of each scanned issue) read */
#define WSP_SCAN_ISSUES       10  /* open issues whose comments the activity scan reads */
#define WSP_FEEDBACK_BODY_MAX (60 * 1024) /* bytes of a Feedback issue's body */
/* Hidden in the lifecycle's own comments (a duplicate closed, a workspace
 * reactivated): an agent's comment carrying it is bookkeeping, not a word
 * about the work. */
#define WSP_LIFE_MARK "<!-- ga:life -->"

/* Is a comment's body mere agreement: its hidden HTML comments (an
 * agent's chain marker) removed, trimmed, lower-cased (ASCII), trailing
 * '.', '!' and '?' stripped, at most WSP_AGREE_MAX_CHARS characters and
 * exactly one of the phrases of §3.14.4 ("lgtm", "done", "+1", …)? */
bool wsp_agreement(const char *body);

/* One comment as the sentinel rules read it (borrowed strings). */
struct wsp_sentinel_comment {
	const char *login;
	const char *body;
	int64_t at_ms; /* created_at; 0 unknown */
};

enum wsp_sentinel_act {
	WSP_SENTINEL_KEEP,     /* every word on it is agreement: stays finished */
	WSP_SENTINEL_FEEDBACK, /* someone named remaining work: a Feedback issue, closed */
	WSP_SENTINEL_SCAN,     /* nobody but its creator spoke: look for activity elsewhere */
};
/* The creator's verification of its open sentinel from its comments
 * (oldest first, at most WSP_SENTINEL_COMMENTS judged; truncated: more
 * exist than were read, said in the reason). The creator's own comments
 * are left out; a known agent's comment counts like a person's (agreement
 * or remaining work, by its words) unless it carries WSP_LIFE_MARK. The
 * count of comments that are feedback into *feedback (may be NULL). */
enum wsp_sentinel_act wsp_sentinel_judge(const struct wsp_sentinel_comment *c, size_t n,
                                         bool truncated, const char *creator,
                                         const struct wsp_agents *agents, size_t *feedback,
                                         struct decision *d);

/* The Feedback issue's body: every feedback comment of c (as judged by
 * wsp_sentinel_judge) as "**@login:**" and its words (hidden HTML comments
 * removed), separated by "---" rules, at most max bytes (cut on a UTF-8
 * boundary; comments that do not fit are counted in a closing line).
 * Caller frees; NULL when no comment is feedback. */
char *wsp_feedback_body(int sentinel, const struct wsp_sentinel_comment *c, size_t n,
                        const char *creator, const struct wsp_agents *agents, size_t max);

/* The open issues the activity scan reads (at most cap, at most
 * WSP_SCAN_ISSUES): not a PR, not a sentinel, updated since the
 * sentinel b[sentinel] was created (GitHub's times are in seconds: the
 * same second counts) (older activity was judged when it was
 * made), the most recently updated first. Their indexes into out; returns
 * how many. */
size_t wsp_activity_issues(const struct wsp_issue_brief *b, size_t n, int sentinel, int *out,
                           size_t cap);

/* Human activity on an open issue: the index of its first comment made
 * at or after since_ms by someone who is neither me nor a known agent, or -1.
 * d says who, or that nobody did. */
int wsp_human_activity(const struct wsp_sentinel_comment *c, size_t n, const char *me,
                       const struct wsp_agents *agents, int64_t since_ms, struct decision *d);

/* The latest closed sentinel as its judge sees it. */
struct wsp_closed_sentinel {
	int number;
	const char *creator;
	const char *closer; /* GitHub's closed_by; NULL or "" unknown */
	bool closed_by_us;  /* our journal holds our close of it */
	bool open_work;     /* an open issue that is neither a PR nor a sentinel */
	bool reopened;      /* we reopened it once already (our journal) */
};
enum wsp_closed_act {
	WSP_CLOSED_NEW, /* closed by its creator: the stretch ended; a new sentinel may be made */
	WSP_CLOSED_ACTIVE, /* work is open: the workspace is active */
	WSP_CLOSED_REOPEN, /* ours, closed by someone else, nothing open: reopened, once */
	WSP_CLOSED_LEAVE,  /* closed again after our reopen, or another agent's to judge: as is */
};
/* What the agent me does about the latest closed sentinel when no
 * sentinel is open: only its creator acts on it. */
enum wsp_closed_act wsp_sentinel_closed(const struct wsp_closed_sentinel *s, const char *me,
                                        struct decision *d);

#endif
