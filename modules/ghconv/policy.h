/*
 * ghconv policy — what the agent does with a GitHub issue or pull-request
 * thread (spec github-commitments §4), as pure functions: no I/O, no clock,
 * no globals. The engine (ghconv.h) fetches, decides with these, and acts.
 *
 *   notifications   ghconv_notif_parse: which threads a notification is
 *                   about and whether its reason is actionable (§4.1:
 *                   mention, author, comment, review_requested, assign);
 *   the thread      ghconv_thread_parse: the issue and its comments (as the
 *                   REST API renders them) in one ordered list;
 *   effective peers ghconv_effective_peers (§4.4): the registered GitHub
 *                   logins (names holding '.' are Bluesky handles and are
 *                   left out), or else derived from the thread;
 *   the decision    ghconv_decide (§4.3, "analyzeConversation"): respond or
 *                   not, with the rule that decided, the urgency and the
 *                   comment to answer (the trigger);
 *   the chain       ghconv_marker_chain reads outbound's hidden marker
 *                   `<!-- ga:chain=N key=K -->`; ghconv_is_agent says which
 *                   authors are agents (the chain counts them, seed 000);
 *   staggering      ghconv_stagger_ms (§4.7): a delay from SHA-256 of the
 *                   agent's name and the thread, so two agents mentioned in
 *                   one thread do not answer at the same moment and the
 *                   second reads the first's comment before it decides;
 *   duplicates      ghconv_duplicates (§4.6): our own comments whose
 *                   whole normalised body repeats an older one;
 *   the reply       ghconv_clean_reply (seed 004): no signature, no
 *                   self-mention, never the agent's own name;
 *   the prompt      ghconv_prompt (§4.5 step 4): the thread as the model
 *                   reads it;
 *   the seen set    a bounded ring of notification (thread id, updated_at)
 *                   pairs already handled, persisted by the engine; a
 *                   second one holds the issue states the open-issue scan
 *                   decided (ghconv_issue_id, updated_at).
 *
 * Choices beyond the spec, each for a stated reason:
 *   - "mentions @login" needs a name boundary after the login, so "@ada"
 *     is not a mention of "@ada-bot";
 *   - the agent chain (is_bot) counts only authors that are agents: the
 *     agent itself, comments carrying the ga chain marker, GitHub "Bot"
 *     accounts and registered peers. A person the §4.4 derivation calls a
 *     "peer" still counts for §4.3 (that is what the rule means) but not as
 *     an agent in the chain;
 *   - the stagger is per thread (SHA-256 of name and thread), not one delay
 *     per agent, so no agent always goes last.
 *
 * Ownership: struct ghconv_thread owns copies of the JSON it was parsed
 * from; every const char * in it points into them. Functions returning
 * char * say "caller frees".
 */
#ifndef GA_MODULES_GHCONV_POLICY_H
#define GA_MODULES_GHCONV_POLICY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapters/github/ghurl.h"
#include "common/err.h"

#define GHCONV_LOGIN_MAX        40  /* GitHub logins are at most 39 bytes */
#define GHCONV_MAX_PEERS        32  /* effective peers kept per thread */
#define GHCONV_MAX_COMMENTS     300 /* comments of a thread considered */
#define GHCONV_MENTION_WINDOW   5   /* §4.3 rules 5 and 7: the last 5 comments */
#define GHCONV_MAX_OWN_COMMENTS 3   /* §4.3 rule 5 */
#define GHCONV_FOLLOWUP_HIGH    3   /* §4.3 rule 6: urgency high from 3 later comments */
#define GHCONV_PROMPT_COMMENTS  15  /* §4.5: the last 15 comments are shown */
/* §4.6: bodies are compared whole (GitHub's comment limit): two comments
 * that share a long header but differ after it are not duplicates */
#define GHCONV_NORMALIZED_CHARS 65536
#define GHCONV_SEEN_MAX         256 /* handled notification states remembered */
#define GHCONV_NOTIF_ID_MAX     32
#define GHCONV_REASON_MAX       32
#define GHCONV_SIGNATURE_MAX    80 /* a trailing line longer than this is not a signature */
#define GHCONV_PROMPT_MAX_BYTES (64 * 1024)
#define GHCONV_FINISHED_LABEL   "finished"

/* --- notifications ------------------------------------------------------------ */

struct ghconv_notif {
	char id[GHCONV_NOTIF_ID_MAX];   /* the notification thread id (digits) */
	char reason[GHCONV_REASON_MAX]; /* "mention", ... */
	int64_t updated_ms;             /* updated_at; 0 when missing */
	bool unread;                    /* "unread" (true when missing) */
	struct gh_ref ref;              /* the issue or pull request */
	bool actionable;                /* reason of §4.1 and an issue/PR subject */
	char why[160];                  /* when not actionable: why */
};

/* True for mention, author, comment, review_requested, assign. */
bool ghconv_reason_actionable(const char *reason);

/* One element of GET /notifications. api_base is GITHUB_API_URL (subject
 * URLs are under it). 0 (out filled; actionable may be false with why), or
 * -1 with err when the element is not a notification (no id). */
int ghconv_notif_parse(const cJSON *n, const char *api_base, struct ghconv_notif *out,
                       struct ga_err *err);

/* --- the thread ----------------------------------------------------------------- */

struct ghconv_comment {
	int64_t id;         /* 0 for the issue's description */
	const char *login;  /* "" when unknown (a deleted user) */
	const char *body;   /* "" when none */
	int64_t created_ms; /* 0 unknown */
	bool bot_account;   /* user.type == "Bot" */
};

struct ghconv_thread {
	char owner[GH_OWNER_MAX + 1];
	char repo[GH_REPO_MAX + 1];
	int64_t number;
	bool is_pull;
	bool closed;
	bool finished; /* carries the label GHCONV_FINISHED_LABEL */
	const char *title;
	const char *html_url;
	struct ghconv_comment issue; /* the description, id 0 */
	struct ghconv_comment
	        *comments; /* oldest first, at most GHCONV_MAX_COMMENTS (the newest) */
	size_t n;
	size_t hidden;                     /* comments left out over the bound */
	cJSON *json_issue, *json_comments; /* owned */
};

/* issue: GET /repos/o/r/issues/n; comments: the merged array of GET
 * …/comments (may be NULL: none). Both are copied. owner/repo/number
 * name the thread (the issue object does not carry the owner in a
 * reliable place). Comments are ordered by created_at (stable). -1 with err
 * when issue is not an object. Free with ghconv_thread_free. */
int ghconv_thread_parse(const char *owner, const char *repo, int64_t number, const cJSON *issue,
                        const cJSON *comments, struct ghconv_thread *out, struct ga_err *err);
void ghconv_thread_free(struct ghconv_thread *t);

/* "owner/repo#n" (the §4 conversation key) into buf. */
void ghconv_thread_key(const char *owner, const char *repo, int64_t number, char *buf, size_t cap);

/* The id an issue's decided state is remembered under in a seen set
 * (the open-issue scan, ghconv.h ghconv_consider_issue): "i:" and 24 hex
 * digits of SHA-256 of the lower-cased "owner/repo#n" (fits
 * GHCONV_NOTIF_ID_MAX, never a notification's all-digit id). */
#define GHCONV_ISSUE_ID_LEN 26
void ghconv_issue_id(const char *owner, const char *repo, int64_t number,
                     char out[GHCONV_ISSUE_ID_LEN + 1]);

/* --- peers ------------------------------------------------------------------------ */

struct ghconv_peers {
	char login[GHCONV_MAX_PEERS][GHCONV_LOGIN_MAX]; /* lower-cased */
	size_t n;
	bool registered; /* from the registry (else derived from the thread) */
};

/* §4.4. registered: logins (NULL-safe, nreg may be 0); those holding '.'
 * are skipped. When none is left: every distinct commenter but self, and
 * the issue author only when the author also commented. */
void ghconv_effective_peers(const struct ghconv_thread *t, const char *self,
                            const char *const *registered, size_t nreg, struct ghconv_peers *out);
bool ghconv_peers_has(const struct ghconv_peers *p, const char *login);

/* --- the decision (§4.3) --------------------------------------------------------- */

enum ghconv_urgency { GHCONV_URGENCY_LOW, GHCONV_URGENCY_MEDIUM, GHCONV_URGENCY_HIGH };

struct ghconv_opts {
	bool owner_request;       /* the owner shared the thread */
	bool workspace_issue;     /* an issue of a watched workspace */
	bool workspace_pr_review; /* a PR of a watched workspace to review */
};

struct ghconv_verdict {
	bool respond;
	enum ghconv_urgency urgency;
	const char *rule; /* static: "closed", "finished", "awaiting_others", "owner_request",
	                     "waiting_for_author", "said_enough", "follow_up", "mentioned",
	                     "mentioned_in_body", "workspace_pr_review", "workspace_issue",
	                     "not_mentioned" */
	char reason[200];
	bool only_missing; /* ≥ 2 peer comments: "only add what's missing" */
	/* facts the rules used */
	size_t own_comments;
	size_t after_own; /* comments after our last one */
	/* The message answered: index into comments, or -1 for the issue's
	 * description. Meaningful when respond. */
	long trigger;
};

/* "Mentioned": text holds "@login" (case-insensitive) not followed by a
 * login character ([A-Za-z0-9-]). */
bool ghconv_mentions(const char *text, const char *login);

void ghconv_decide(const struct ghconv_thread *t, const char *self,
                   const struct ghconv_peers *peers, const struct ghconv_opts *o,
                   struct ghconv_verdict *out);

const char *ghconv_urgency_name(enum ghconv_urgency u);

/* --- the chain ---------------------------------------------------------------------- */

/* The chain N of the first `<!-- ga:chain=N` marker in body: 1 and *chain,
 * or 0 when there is none (or N is not a number in 0..1000000). */
int ghconv_marker_chain(const char *body, int64_t *chain);

/* Is the author of c an agent (the chain counts it)? Self, a comment with
 * the chain marker, a GitHub Bot account, or a registered peer. */
bool ghconv_is_agent(const struct ghconv_comment *c, const char *self,
                     const struct ghconv_peers *peers);

/* The body without outbound's hidden markers (`<!-- ga:… -->`). Caller frees. */
char *ghconv_strip_markers(const char *body);

/* --- staggering (§4.7) --------------------------------------------------------------- */

/* min_ms + (the first 8 bytes of SHA-256(agent_name "\n" thread_key), big
 * endian) mod span_ms. span_ms <= 0: min_ms. */
int64_t ghconv_stagger_ms(const char *agent_name, const char *thread_key, int64_t min_ms,
                          int64_t span_ms);

/* --- duplicate comments (§4.6) -------------------------------------------------------- */

/* Lower-cased, markers, @mentions, http(s) URLs and bare domain.tld/… URLs
 * removed, white space collapsed and trimmed, cut to
 * GHCONV_NORMALIZED_CHARS code points. Caller frees. */
char *ghconv_normalize(const char *body);

/* Our own comments that repeat an older one of ours (same normalised
 * body): their ids into out (at most cap), oldest kept. Returns the count. */
size_t ghconv_duplicates(const struct ghconv_thread *t, const char *self, int64_t *out, size_t cap);

/* --- the reply (seed 004) -------------------------------------------------------------- */

/* text without a trailing signature naming the agent (lines such as
 * "— Ada", "-- ada-bot", "Cheers, Ada") and without "@login" self-mentions,
 * trimmed. *names_self: the agent's name or login still appears as a word
 * (a self-introduction: the reply must not be sent). Caller frees; NULL
 * when nothing is left. */
char *ghconv_clean_reply(const char *text, const char *agent_name, const char *login,
                         bool *names_self);

/* --- the prompt (§4.5 step 4) ------------------------------------------------------------ */

/* The user message: where the thread came from, why the agent answers, the
 * issue header, its description, the last GHCONV_PROMPT_COMMENTS comments
 * (a note says how many are hidden) and the peers' contributions. Markers
 * are removed. Caller frees. */
char *ghconv_prompt(const struct ghconv_thread *t, const char *self,
                    const struct ghconv_peers *peers, const struct ghconv_verdict *v,
                    const char *source);

/* --- the seen set -------------------------------------------------------------------------- */

struct ghconv_seen {
	struct {
		char id[GHCONV_NOTIF_ID_MAX];
		int64_t updated_ms;
	} e[GHCONV_SEEN_MAX];
	size_t n;    /* entries in use */
	size_t next; /* the slot written next (the oldest when full) */
};

bool ghconv_seen_has(const struct ghconv_seen *s, const char *id, int64_t updated_ms);
/* Adds (or refreshes) the pair; when full the oldest entry is overwritten. */
void ghconv_seen_add(struct ghconv_seen *s, const char *id, int64_t updated_ms);
/* Keeps one state per id: an entry of id takes updated_ms in place; else
 * as ghconv_seen_add. */
void ghconv_seen_put(struct ghconv_seen *s, const char *id, int64_t updated_ms);
/* [{"id","updated"}], oldest first. Caller frees. */
cJSON *ghconv_seen_to_json(const struct ghconv_seen *s);
/* Replaces s with what a (ghconv_seen_to_json form) holds; malformed
 * entries are skipped, at most GHCONV_SEEN_MAX (the newest) kept. */
void ghconv_seen_from_json(struct ghconv_seen *s, const cJSON *a);

/* The `since` for the next notification poll: the oldest updated_at of a
 * notification left unhandled (so it is listed again), else the newest
 * updated_at seen, else prev. */
int64_t ghconv_next_since(int64_t prev, const int64_t *updated, const bool *handled, size_t n);

#endif
