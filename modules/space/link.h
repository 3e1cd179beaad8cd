/*
 * modules/space/link — the agent-space as the engine sees it.
 *
 * A participation engine uses this and nothing below it:
 *
 *   - chat arrives as normalized events (struct space_event, the DESIGN.md
 *     event model): platform "space", a conversation key, a message id, the
 *     thread id, the author (id, name, kind self|host|peer), the chain
 *     length, the text, the names it addresses (and whether that includes
 *     us), the time, and whether it came from the room's history replay
 *     rather than live. Our own chats come back as kind SELF (the room
 *     echoes them): the gate's "never answer yourself" rule needs them;
 *
 *   - space_link_say() sends chat the way a person types: a `typing`
 *     message, a pause that grows with the length of the text (bounded),
 *     `typing` again every few seconds while it lasts, then the `chat`.
 *     Chats are spaced at least chat_interval_ms apart (the room drops a
 *     chat that follows another within 3 s and only tells the sender,
 *     §3.4, §9 item 16). At most SPACE_LINK_MAX_PENDING chats wait;
 *     each finishes with a result callback (sent, or why not). Pending chats
 *     are dropped when the connection ends: what was composed for a
 *     conversation may be stale after a reconnect;
 *
 *   - space_link_set_state() announces idle/thinking/acting/blocked (with a
 *     detail, cut to 1,000 UTF-16 units); the last state is announced again
 *     after every reconnect;
 *
 *   - space_link_claim() claims action+target for this agent and renews
 *     the claim every claim-renew period (30 s) while it is held;
 *     space_link_release() ends it with an action_result. Held claims are
 *     claimed again after a reconnect (the room forgets them, §3.13). When
 *     the room answers "Claim conflict", the claim is dropped and
 *     on_claim_lost names the holder. space_link_claim_holder() tells
 *     whether another member holds a live claim;
 *
 *   - presence: space_link_member_count()/space_link_member_at() (name, id,
 *     version, capabilities, identity, typing, state), on_presence when it
 *     changes; the peers' GitHub logins from their identities
 *     (space_link_peer_logins);
 *
 *   - what peers say about themselves besides chat (§7.4): the latest
 *     `reflection` of each peer (space_link_reflection_at) and the latest
 *     `workspace_state` of each workspace (space_link_workspace_at). Ours
 *     are not kept ("own" is decided by name, as the room does). Bounds:
 *     SPACE_LINK_MAX_REFLECTIONS peers (a new peer's reflection drops the
 *     oldest one), each cut to SPACE_LINK_REFLECTION_KEEP_BYTES at a
 *     character boundary; SPACE_LINK_MAX_WORKSPACES workspaces (the oldest
 *     report is dropped), names cut to SPACE_LINK_WORKSPACE_KEEP_BYTES. A
 *     peer's `leave` forgets its reflection and the workspaces it reported
 *     (the room forgets those too, §3.12); a presence forgets the
 *     reflections of names no longer present; our own disconnect forgets
 *     the workspaces (the room replays its cache after the next join);
 *
 *   - space_link_send_reflection() / space_link_send_workspace_state() tell
 *     the room ours (§2.2; after a reflection cycle and after plan polling,
 *     §7.3).
 *
 * Each chat the room sends — live, or from the history replayed after a
 * join — becomes one event, once (the client keeps a bounded set of recent
 * chat digests for that, adapters/space/roster.h); the link keeps no chat
 * history: the conversation store does (modules/conversation/store.h).
 *
 * Chain (DESIGN.md "The gate", seed 000): a host message has chain 0.
 * Another message has the `chain` field it carries (agent-space relays it;
 * a ts-agent-space room drops it; history entries carry none), with chain_explicit
 * set; 0 when it carries none. The chain derived from history (agent
 * messages in a row since the last person's) is not the link's job: the
 * pipeline adds every event to the conversation store, which derives it
 * (conv_store_derived_chain), and the gate takes the larger of the two.
 * space_link_say() takes the chain to send.
 *
 * Addressed names: a host chat carries the room's list (§3.16). For agent
 * chats the same rule is applied here against the current member names
 * (@name, then the bare name between word boundaries).
 *
 * Ownership: strings in events and member views are borrowed and valid
 * during the callback / until the next call into the link. Everything the
 * link is given is copied. space_link_free() accepts NULL and may be called
 * before the stop finished (it finishes it; the loop must keep running).
 * One thread, one loop.
 */
#ifndef GA_MODULES_SPACE_LINK_H
#define GA_MODULES_SPACE_LINK_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/space/client.h"
#include "common/err.h"
#include "modules/state/state.h"

#define SPACE_LINK_MAX_PENDING   8
#define SPACE_LINK_MAX_CLAIMS    16
#define SPACE_LINK_MAX_ADDRESSED 16 /* names per event; further ones are dropped */
/* Re-send `typing` this often while a long pause lasts (peers forget a
 * typing mark after 10 s). */
#define SPACE_LINK_TYPING_REFRESH_MS 5000
/* Peers' reflections and workspace states kept (see above). */
#define SPACE_LINK_MAX_REFLECTIONS       32
#define SPACE_LINK_REFLECTION_KEEP_BYTES 1000
#define SPACE_LINK_MAX_WORKSPACES        16
/* Members' reports of work done (successful action_results), kept this
 * long, at most this many. */
#define SPACE_LINK_MAX_RESULTS          64
#define SPACE_LINK_RESULT_KEEP_MS       (30 * 60 * 1000)
#define SPACE_LINK_RESULT_KEEP_BYTES    1000
#define SPACE_LINK_WORKSPACE_KEEP_BYTES 200
/* What we send: the room relays a reflection cut to 5,000 UTF-16 units
 * (§3.10), so a longer one is refused rather than cut by the room; a
 * workspace name is refused past 1,000 units (the room has no limit below
 * 1 MiB; ours keeps presence small). */
#define SPACE_LINK_REFLECTION_MAX_UNITS 5000
#define SPACE_LINK_WORKSPACE_MAX_UNITS  1000
#define SPACE_LINK_WORKSPACE_TASKS_MAX  64 /* tasks carried in a workspace_state */
#define SPACE_LINK_WORKSPACE_PULLS_MAX  32 /* pull requests carried in one */

enum space_author_kind {
	SPACE_AUTHOR_SELF,
	SPACE_AUTHOR_HOST,
	SPACE_AUTHOR_PEER,
};
const char *space_author_kind_name(enum space_author_kind k);

struct space_event {
	const char *platform;     /* "space" */
	const char *conversation; /* "space:<threadId>" or "space:room" */
	const char *message_id;   /* "space:" + 32 hex of sha256(id \n time \n content):
	                             stable for the same chat, also across restarts */
	const char *parent_id;    /* NULL: room chat has no reply structure */
	const char *thread_id;    /* NULL when none */
	const char *author_id;
	const char *author_name;
	enum space_author_kind author_kind;
	int64_t chain;       /* the carried chain; 0 for the host's or when none (above) */
	bool chain_explicit; /* the message carried a chain field */
	const char *text;
	size_t text_len; /* bytes; the text may hold NULs (a chat may carry \u0000) */
	const char *const *addressed;
	size_t naddressed;
	bool addressed_me;
	int64_t time_ms; /* the room's clock; 0 when unknown */
	bool from_history;
};

enum space_agent_state {
	SPACE_STATE_IDLE,
	SPACE_STATE_THINKING,
	SPACE_STATE_ACTING,
	SPACE_STATE_BLOCKED,
};
const char *space_agent_state_name(enum space_agent_state s);

struct space_member_view {
	const char *name;
	const char *id;
	const char *version;
	const char *const *caps;
	size_t ncaps;
	bool has_caps;
	const char *identity_json; /* NULL when none */
	bool typing;
	const char *state; /* "" when unknown */
	const char *state_detail;
	bool self;
};

enum space_say_result {
	SPACE_SAY_SENT,         /* handed to the connection */
	SPACE_SAY_DISCONNECTED, /* the connection ended first */
	SPACE_SAY_STOPPED,      /* the link was stopped */
	SPACE_SAY_WITHDRAWN,    /* the send check said no at the last moment */
};
const char *space_say_result_name(enum space_say_result r);
typedef void (*space_say_fn)(void *ud, enum space_say_result r);

struct space_link_handlers {
	void (*on_chat)(void *ud, const struct space_event *ev);
	void (*on_presence)(void *ud);
	/* joined = true when our join came back; false with why when it ended. */
	void (*on_connection)(void *ud, bool joined, const char *why);
	void (*on_claim_lost)(void *ud, const char *action, const char *target, const char *holder);
	/* Another member's `claim` frame as it arrives (renewals too); ours
	 * are not reported. May be NULL. */
	void (*on_peer_claim)(void *ud, const char *name, const char *action, const char *target);
};

struct space_link_config {
	const char *agent_name;
	const char *version;
	bool social_only;             /* capabilities ["social"]; otherwise social, github, code */
	const char *space_url;        /* SPACE_URL or NULL */
	const char *identity_json;    /* the summary, or NULL */
	const struct state_store *st; /* keeps the agent id; NULL = per process */
	struct spc_tunables t;
	/* the typing pause: base + per_char × characters, at most max */
	uint64_t typing_base_ms;
	uint64_t typing_per_char_ms;
	uint64_t typing_max_ms;
	/* memory/space-config.json's replyDelayMinMs / replyDelayMaxMs
	 * (space_link_set_reply_delay): the typing pause is kept inside them.
	 * 0/0 = no range. Not applied when GA_SPACE_TYPING_* were set in the
	 * environment (typing_from_env: tests and benchmarks pin the pause). */
	uint64_t reply_delay_min_ms, reply_delay_max_ms;
	bool typing_from_env;
	uint64_t chat_interval_ms; /* minimum gap between two chats */
	uint64_t claim_renew_ms;
};

/* Defaults, then the GA_SPACE_* values set in gc's configuration
 * (tunables.h, plus GA_SPACE_TYPING_BASE_MS 800, GA_SPACE_TYPING_PER_CHAR_MS
 * 30, GA_SPACE_TYPING_MAX_MS 6000, GA_SPACE_CHAT_INTERVAL_MS 3200,
 * GA_SPACE_CLAIM_RENEW_MS 30000). gc NULL = the defaults only. */
void space_link_config_init(struct space_link_config *cfg, const struct ga_config *gc);

struct space_link;

struct space_link *space_link_new(uv_loop_t *loop, const struct space_link_config *cfg,
                                  const struct space_link_handlers *h, void *ud,
                                  struct ga_err *err);
void space_link_start(struct space_link *l);
void space_link_stop(struct space_link *l, void (*done)(void *ud), void *ud);
void space_link_free(struct space_link *l);

bool space_link_joined(const struct space_link *l);
const char *space_link_agent_id(const struct space_link *l);
const struct spc_client *space_link_client(const struct space_link *l);

/* Queues a chat. -1 with err when not joined, the text is blank or longer
 * than 100,000 UTF-16 units, or SPACE_LINK_MAX_PENDING are waiting. done
 * (may be NULL) is called exactly once unless -1 is returned. chain < 0 =
 * no chain field. */
int space_link_say(struct space_link *l, const char *text, const char *thread_id, int64_t chain,
                   space_say_fn done, void *ud, struct ga_err *err);
/* A second listener of claims lost to another member (the room's "Claim
 * conflict"), beside the handlers' on_claim_lost: the coordination backend
 * that claims through this link (modules/coord, coord_new_space) watches
 * its own claims this way. fn NULL stops. */
typedef void (*space_claim_lost_fn)(void *ud, const char *action, const char *target,
                                    const char *holder);
void space_link_watch_claims(struct space_link *l, space_claim_lost_fn fn, void *ud);

/* A chat with what goes with it:
 *   check   the last look before it leaves: called with the chat's text
 *           once its typing pause and the chat spacing are over, right
 *           before the `chat` frame is written. false withdraws it:
 *           nothing is sent (no claim either), done gets
 *           SPACE_SAY_WITHDRAWN (the check says why to whoever it tells;
 *           the link logs nothing) and the next chat's pause starts. Used
 *           for what may have changed during the pause (a peer said the
 *           same meanwhile). NULL: the chat goes. The check must not call
 *           into the link; check_ud must live until done;
 *   claims  action+target pairs claimed (space_link_claim) right before
 *           the chat, so the room never sees a claim for words that were
 *           not said (a claim that cannot be made is logged; the chat
 *           goes on). At most SPACE_LINK_SAY_CLAIMS_MAX, copied. */
#define SPACE_LINK_SAY_CLAIMS_MAX 8
typedef bool (*space_send_check_fn)(void *ud, const char *text);
struct space_say_claim {
	const char *action;
	const char *target;
};
struct space_say_req {
	const char *text;
	const char *thread_id; /* may be NULL */
	int64_t chain;         /* < 0: no chain field */
	space_send_check_fn check;
	void *check_ud;
	const struct space_say_claim *claims;
	size_t nclaims;
	space_say_fn done;
	void *ud;
};
int space_link_say_with(struct space_link *l, const struct space_say_req *r, struct ga_err *err);
/* The pause before a chat of text (exposed for tests and the dashboard):
 * base + per_char × graphemes, at most max, then kept inside the reply
 * delay range when one is set (space-validation.md §12.1 step 2 sleeps
 * U[replyDelayMinMs, replyDelayMaxMs) whatever the length; ours stays
 * length-proportional within that range). */
uint64_t space_link_typing_delay(const struct space_link_config *cfg, const char *text);
/* Sets the reply delay range (ms; 0/0 clears it; max below min is raised
 * to min). Applies from the next chat. */
void space_link_set_reply_delay(struct space_link *l, uint64_t min_ms, uint64_t max_ms);

/* Another member reported action+target done (a successful action_result)
 * in the last SPACE_LINK_RESULT_KEEP_MS: its name (and *link, when link
 * is given, the link it reported, "" for none), else NULL. Valid until the
 * next call into the link. */
const char *space_link_result_of(const struct space_link *l, const char *action, const char *target,
                                 const char **link);

/* detail may be NULL. Sent now when joined; remembered either way. */
void space_link_set_state(struct space_link *l, enum space_agent_state s, const char *detail);

/* -1 with err when not joined, action/target blank, or
 * SPACE_LINK_MAX_CLAIMS are held. Claiming what we already hold renews.
 * since_ms: when the caller first won this claim (epoch ms), for a claim
 * that renews one it holds; 0 = none (a fresh claim, or the caller does
 * not know). The link keeps, per held claim, the earliest of that and the
 * time it first sent it, and every later claim of it — the renewals every
 * claim-renew period and the claims again after a reconnect — carries it
 * as "since" (spc_build_claim), so a room that lost the claim (it forgets
 * a member's claims when it leaves) shows the claim's own time. The first
 * claim of a pair the link does not hold carries since_ms when given,
 * else nothing. */
int space_link_claim(struct space_link *l, const char *action, const char *target, int64_t since_ms,
                     struct ga_err *err);
/* Ends our claim (if held) and sends the action_result (when joined).
 * link / error may be NULL. -1 when not joined (the claim is dropped
 * locally anyway; the room forgets it within 60 s). */
int space_link_release(struct space_link *l, const char *action, const char *target, bool success,
                       const char *link, const char *error);
/* Stops renewing our claim (if held) without an action_result: the room
 * lets it lapse at its TTL. For a claim whose work goes on under another
 * key (a commitment the fulfilment pipeline claims itself). */
void space_link_forget(struct space_link *l, const char *action, const char *target);
bool space_link_holds(const struct space_link *l, const char *action, const char *target);
/* The name of another member holding a live claim on action+target, else
 * NULL. */
const char *space_link_claim_holder(const struct space_link *l, const char *action,
                                    const char *target);

/* Replaces the identity summary; sent now when joined. */
void space_link_set_identity(struct space_link *l, const char *identity_json);

size_t space_link_member_count(const struct space_link *l);
/* false when i is out of range. */
bool space_link_member_at(const struct space_link *l, size_t i, struct space_member_view *out);
/* Whether member `name` advertises capability cap (false when absent or
 * when it sent no list). */
bool space_link_member_has_cap(const struct space_link *l, const char *name, const char *cap);

/* The GitHub logins the other members said in their identity summaries
 * ("githubLogin", an extra key only our agents send), in member order,
 * into out (borrowed until the next call into the link or the next loop
 * turn); returns how many, at most cap. Left out: ourselves, members
 * without a login, and members whose capability list lacks "github" (the
 * social-only ones, ["social"], do no GitHub work, so no code review). A
 * member that leaves, or is missing from a presence, is forgotten with
 * its identity (adapters/space/roster.h). */
size_t space_link_peer_logins(const struct space_link *l, const char **out, size_t cap);

/* Sends our `reflection` (1–2 sentences after a reflection cycle). -1 with
 * err when not joined, summary is NULL or blank, longer than
 * SPACE_LINK_REFLECTION_MAX_UNITS, or the send queue refused it. */
int space_link_send_reflection(struct space_link *l, const char *summary, struct ga_err *err);
/* Sends a `workspace_state` (one per plan, after plan polling): workspace,
 * planNumber, totalTasks, completedTasks, blockedTasks, inProgressTasks.
 * -1 with err when not joined, workspace is NULL, blank or longer than
 * SPACE_LINK_WORKSPACE_MAX_UNITS, a number is negative, or the send queue
 * refused it. */
int space_link_send_workspace_state(struct space_link *l, const char *workspace, int64_t plan,
                                    int64_t total, int64_t completed, int64_t blocked,
                                    int64_t in_progress, struct ga_err *err);
/* The same with the plan's tasks ([{number, title, status, assignee?, pr?,
 * prUrl?}], the first SPACE_LINK_WORKSPACE_TASKS_MAX objects) as the extra
 * field "tasks" and its pull requests ([{repo, number, title, url, task,
 * author, reviewer, state, next, since, revisions}], wsp_view.h; the first
 * SPACE_LINK_WORKSPACE_PULLS_MAX objects) as the extra field "pulls": for
 * the room's page; a room that does not know them drops them, peers ignore
 * them. tasks and pulls may be NULL. */
int space_link_send_workspace_tasks(struct space_link *l, const char *workspace, int64_t plan,
                                    int64_t total, int64_t completed, int64_t blocked,
                                    int64_t in_progress, const cJSON *tasks, const cJSON *pulls,
                                    struct ga_err *err);

/* A peer's latest reflection (borrowed until the next call into the link
 * or the next loop turn). time_ms: the room's clock, 0 when unknown. */
struct space_reflection_view {
	const char *name;
	const char *summary;
	int64_t time_ms;
};
size_t space_link_reflection_count(const struct space_link *l);
/* Oldest first; false when i is out of range. */
bool space_link_reflection_at(const struct space_link *l, size_t i,
                              struct space_reflection_view *out);

/* The latest workspace_state of a workspace (borrowed like the above).
 * Numbers the room relayed as fractions are truncated, out-of-range ones
 * clamped to ±2^53. */
struct space_workspace_view {
	const char *workspace;
	const char *reporter;
	int64_t plan, total, completed, blocked, in_progress;
	int64_t time_ms;
};
size_t space_link_workspace_count(const struct space_link *l);
bool space_link_workspace_at(const struct space_link *l, size_t i,
                             struct space_workspace_view *out);

/* Members' reports of work done (successful action_results) kept
 * (SPACE_LINK_RESULT_KEEP_MS, at most SPACE_LINK_MAX_RESULTS), oldest
 * first; link "" when none was reported. Strings valid until the next call
 * into the link. */
struct space_result_view {
	const char *name, *action, *target, *link;
	int64_t time_ms; /* when it arrived */
};
size_t space_link_result_count(const struct space_link *l);
bool space_link_result_at(const struct space_link *l, size_t i, struct space_result_view *out);

#endif
