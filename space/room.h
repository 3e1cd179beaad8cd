/*
 * space/room — the agent-space room: members, join flow, broadcasts,
 * claims, rate limits, workspace cache, heartbeat and shutdown rules
 * (space-protocol.md §3).
 *
 * Pure policy: no sockets and no clock. Time enters as `now` (epoch ms) on
 * every call; effects leave through struct space_room_ops (queue a message
 * on a connection, close it with a code, drop it, ping it), and events are
 * appended to the space_store. server.c implements the ops with
 * its own WebSocket transport (common/ws.c); the unit tests and the fuzzer
 * implement them with arrays.
 *
 * Observer (optional, space_room_set_observer): one party — the read-only
 * web page — is told every room event exactly once, as it happens, whether
 * or not any member receives it: each broadcast (the buffer members get,
 * also when it reaches nobody: the last member's leave, the host talking to
 * an empty room) and what members never see (a silent claim renewal). It is
 * not told the unicasts (errors, history, the joiner's presence and
 * workspace replays). The observer is called from inside room calls and,
 * like the ops, must not call back into the room.
 *
 * Lifetime: the I/O layer calls space_room_conn_new() for every accepted
 * WebSocket and space_room_conn_closed() exactly once when it is gone
 * (which frees the conn). Ops callbacks must not call back into the room
 * (queue work instead); the room may call ops while iterating members.
 *
 * Bounds: claims SPACE_CLAIMS_MAX (new claims beyond it get an error),
 * workspace cache SPACE_WORKSPACES_MAX (oldest evicted), members are
 * bounded by the server's connection limit.
 */
#ifndef GA_SPACE_ROOM_H
#define GA_SPACE_ROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "space/buf.h"
#include "space/store.h"

#define SPACE_CLAIMS_MAX     16384
#define SPACE_WORKSPACES_MAX 1024
/* A workspace_state's "tasks" (our extra field) relayed: at most this many,
 * this much JSON. */
#define SPACE_WORKSPACE_TASKS_MAX       64
#define SPACE_WORKSPACE_TASKS_MAX_BYTES (16 * 1024)
/* Its "pulls" (the plan's pull requests, our extra field) relayed: at most
 * this many, this much JSON; entries that are not pulls are left out and
 * logged (space_put_pulls). */
#define SPACE_WORKSPACE_PULLS_MAX       32
#define SPACE_WORKSPACE_PULLS_MAX_BYTES (16 * 1024)
#define SPACE_WORKSPACE_TTL_MS_DEFAULT  86400000
#define SPACE_CLAIM_TTL_MS_DEFAULT      60000
#define SPACE_CHAT_INTERVAL_MS_DEFAULT  3000
/* A new claim's optional "since" (our field: when the claimant first took
 * it, ISO-8601 — a claim the room lost while its owner was away, sent
 * again after a rejoin) is kept when it is at most this old; a since later
 * than now (the claimant's clock runs ahead) is taken as now, and one that
 * is older, or not an ISO-8601 string, is ignored (the claim's time is
 * now), never an error. It is shown, never trusted: the claim's expiry
 * counts from the claim or its last renewal. */
#define SPACE_CLAIM_SINCE_MAX_AGE_MS 86400000
/* Presence pacing (space_room_flush): the presence bytes the room may
 * queue per millisecond, summed over recipients, and the longest a member
 * waits for a newer snapshot. At 1 GB/s a 1,000-member snapshot (~150 KB
 * to each of 1,000) waits 0.15 s, a 5,000-member one (~750 KB to each of
 * 5,000: 3.75 GB) 3.75 s; ten members, nothing. */
#define SPACE_PRESENCE_BYTES_PER_MS_DEFAULT 1000000
#define SPACE_PRESENCE_DELAY_MAX_MS_DEFAULT 5000

/* WebSocket close codes used by the room (§3.21). */
#define SPACE_CLOSE_GOING_AWAY   1001
#define SPACE_CLOSE_JOIN_TIMEOUT 4001
#define SPACE_CLOSE_REPLACED     4002
#define SPACE_CLOSE_BAD_JOIN     4003

struct space_conn {
	void *io;       /* the I/O layer's state for this connection */
	bool member;    /* registered by a valid join */
	bool join_seen; /* any "join" arrived: the join timer is moot */
	bool closing;   /* the room asked for a close: ignore input */
	/* member fields (valid while member) */
	char *name, *id, *version;
	char *caps_json;     /* normalised capabilities array, or NULL */
	char *identity_json; /* JSON.stringify(summary), or NULL */
	int64_t joined_at, last_seen;
	int64_t last_chat; /* last accepted chat, or INT64_MIN */
	bool alive;
	/* This member's entry in presence, cached: a presence of 1000 members
	 * is then a concatenation, not 2000 timestamp renderings. */
	char *presence_json;
	size_t presence_len;
	struct space_conn *prev, *next; /* member order */
};

struct space_room_ops {
	/* Queue msg (the callee takes its own reference). */
	void (*send)(void *ud, struct space_conn *c, struct space_buf *msg);
	/* Close with code/reason after what is already queued. */
	void (*close)(void *ud, struct space_conn *c, int code, const char *reason);
	/* Drop now, without a close frame (heartbeat, §3.14). */
	void (*drop)(void *ud, struct space_conn *c);
	/* Send an empty ping. */
	void (*ping)(void *ud, struct space_conn *c);
	/* Optional: a line for the host's terminal ("Ada joined"). */
	void (*show)(void *ud, const char *line);
};

enum space_room_event_kind {
	/* msg: a broadcast, exactly as members receive it; who: the member
	 * whose input or departure caused it (the sender, the joiner, the
	 * leaver — still readable during the call), NULL for the host's
	 * chat, the shutdown notice and presence snapshots. */
	SPACE_ROOM_EV_BROADCAST,
	/* who renewed its claim on action/target: the room says nothing. */
	SPACE_ROOM_EV_CLAIM_RENEWED,
};

struct space_room_event {
	enum space_room_event_kind kind;
	struct space_buf *msg;        /* BROADCAST; borrowed (ref it to keep it) */
	const struct space_conn *who; /* see above */
	const char *action, *target;  /* CLAIM_RENEWED; borrowed */
	int64_t now;
};

typedef void (*space_room_observer_fn)(void *ud, const struct space_room_event *ev);

struct space_room_config {
	int64_t claim_ttl_ms;          /* §3.7 */
	int64_t chat_interval_ms;      /* §3.4 step 4; 0 disables the limit */
	int64_t workspace_ttl_ms;      /* §3.15 */
	int64_t join_timeout_ms;       /* the timer lives in the I/O layer; this
	                                * only words the timeout error */
	int64_t presence_bytes_per_ms; /* pacing; 0: none (every turn) */
	int64_t presence_delay_max_ms; /* pacing: the longest wait */
};

struct space_room;

/* The reference's values (space-protocol.md §6.2). */
void space_room_config_init(struct space_room_config *cfg);

/* cfg NULL → defaults. store is borrowed and must outlive the room. started_ms fixes the host id
 * ("host-<base36 started_ms>", §3.16). */
struct space_room *space_room_new(const struct space_room_config *cfg, struct space_store *store,
                                  const struct space_room_ops *ops, void *ud, int64_t started_ms);
/* Registers the observer (fn NULL: none). One at a time; a later call
 * replaces the earlier one. */
void space_room_set_observer(struct space_room *r, space_room_observer_fn fn, void *ud);
/* Frees every connection still known (without any callbacks). */
void space_room_free(struct space_room *r);

struct space_conn *space_room_conn_new(struct space_room *r, void *io);
/* The connection is gone: runs the leave procedure for a member (§3.13),
 * then frees c. */
void space_room_conn_closed(struct space_room *r, struct space_conn *c, int64_t now);

/* One complete inbound message (valid UTF-8). */
void space_room_input(struct space_room *r, struct space_conn *c, const char *buf, size_t len,
                      int64_t now);
/* A pong arrived (any pong counts, §3.10). */
void space_room_pong(struct space_room *r, struct space_conn *c, int64_t now);
/* The per-connection join timer fired (§3.2). */
void space_room_join_timeout(struct space_room *r, struct space_conn *c, int64_t now);

/* End of an I/O turn (the server calls it once per event-loop iteration,
 * before writing). Presence is a full snapshot, and a client rebuilds its
 * member list from each one (§7.4), so a member that receives only the
 * newest loses nothing; a join storm, on the other hand, would send every
 * member one snapshot of up to N members per join — O(N²) messages of O(N)
 * bytes. Two rules keep that bounded:
 *   - per turn: the first presence broadcast of a turn goes out at once;
 *     later ones in the same turn become one snapshot sent here;
 *   - pacing: after a snapshot of L bytes to M members, the next waits
 *     L × M / presence_bytes_per_ms ms (at most presence_delay_max_ms);
 *     what falls in the wait becomes one fresh snapshot, sent here once
 *     the wait is over. In a room of tens of members the wait rounds to
 *     nothing, so every test and any quiet room sees the protocol's exact
 *     sequence.
 * Join, leave and every other message are never delayed or reordered; only
 * the snapshot that follows them may come later, built when it is sent, so
 * it always describes the room as of its place in each member's stream.
 * A newcomer still gets its own snapshot right after its join (the member
 * list before any chat from them); its second one is the paced broadcast. */
void space_room_flush(struct space_room *r, int64_t now);
/* When the owed snapshot may go (epoch ms; call space_room_flush then), or
 * -1 when none is owed. */
int64_t space_room_presence_due(const struct space_room *r);

/* Heartbeat tick: ping live members, drop those that missed a round. */
void space_room_heartbeat(struct space_room *r, int64_t now);
/* Periodic sweep of expired claims and stale workspace states (§3.15). */
void space_room_sweep(struct space_room *r, int64_t now);

/* A line typed by the host (already trimmed by the caller or not: it is
 * broadcast as given, cut to 100,000 units). text is valid UTF-8; a NUL
 * byte in it is U+0000 and goes out as "\u0000". */
void space_room_host_chat(struct space_room *r, const char *text, size_t len, int64_t now);

/* Shutdown step 1: broadcast the shutdown message (§3.17). */
void space_room_shutdown_notice(struct space_room *r, int64_t now);
/* Shutdown step 2: close every member with 1001 and forget them without
 * leave entries or broadcasts. */
void space_room_shutdown_close(struct space_room *r);

size_t space_room_member_count(const struct space_room *r);
/* Members in order (for /who); NULL-terminated iteration via ->next. */
const struct space_conn *space_room_first_member(const struct space_room *r);
size_t space_room_claim_count(const struct space_room *r);

#endif
