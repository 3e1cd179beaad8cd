/*
 * adapters/space/client — one agent's connection to the agent-space:
 * discovery, a WebSocket client (common/ws framing over libuv TCP, plain
 * ws:// only) on the program's loop, the join handshake, reconnects, and
 * the room state (roster.h) kept current.
 *
 * Chats: each chat the room sends — live, or an entry of the
 * history_response that follows every join — is handed to on_chat once,
 * straight from the parsed message (struct spc_chat, borrowed). The client
 * keeps no chat history (the conversation store does); the roster's set
 * of recent chat digests (SPC_SEEN_CHATS) keeps a reconnect's replay of
 * chats already handed up, and a chat relayed twice, from being handed up
 * again.
 *
 * Life of a client (space-protocol.md §7):
 *   discover (discover.h) → resolve the host (uv_getaddrinfo, so a slow DNS
 *   server never blocks the loop) → connect → on open send `join`, then at
 *   once `identity` (when one was given) → wait for our own `join` to come
 *   back: joined. Connect, upgrade and join must complete within
 *   GA_SPACE_CONNECT_TIMEOUT_MS, so a server that accepts TCP and never
 *   answers is abandoned and retried.
 *
 *   While joined, the client pings every GA_SPACE_PING_MS; when nothing at
 *   all (data, pong) arrived for two periods the connection is taken for
 *   dead and dropped.
 *
 *   After a connection ends — the server restarted, closed, shut down
 *   (its `shutdown` message too: the
 *   client reconnects after it) — the client reconnects to the same URL after
 *   the backoff (5/10/20/60 s plus jitter; the count resets once joined).
 *   While not joined, discovery is re-run every GA_SPACE_DISCOVERY_RETRY_MS
 *   and its URL used from then on. There is only ever one connection and
 *   one pending timer per kind: no orphaned connection can go on
 *   replacing the live one.
 *
 *   Duplicate names: the server replaces a member when another connection
 *   joins with the same name, closing the old one with 4002 (§3.3). Two
 *   agents configured with one name would knock each other out forever.
 *   So after a 4002 the client waits the longest backoff step before
 *   rejoining, and once it has been replaced GA_SPACE_REPLACED_LIMIT times
 *   within GA_SPACE_REPLACED_WINDOW_MS it stops (state SPC_GAVE_UP) and
 *   logs an error naming the name and the other connection's id when the
 *   room's history showed it. Because replacements alternate, the agent
 *   that was replaced first reaches the limit first and the other keeps
 *   the room: the churn ends instead of going on forever.
 *
 * Sending: spc_client_send() queues one message while joined (bounded:
 * SPC_SENDQ_MAX_MSGS messages and SPC_SENDQ_MAX_BYTES; beyond that, or when
 * not joined, the message is refused with -1, never dropped silently, §7.3). Messages leave in
 * order; the next one is handed to the socket once the previous reached the kernel, so a slow room
 * fills this queue rather than an unbounded one below it.
 *
 * Inbound messages above SPC_MAX_INBOUND_BYTES close the connection with
 * 1009 (RFC 6455 §7.4.1; counted in dropped_inbound) and the client
 * reconnects after the backoff. The room's history answer is bounded far
 * below that (space/store.h, 4 MiB by default).
 *
 * A wss:// URL is refused ("wss:// is not supported: the agent-space speaks
 * ws://") and retried like any failed attempt: the room serves plain ws://.
 *
 * Callbacks run on the loop, never re-entrantly from a client call; they
 * may call any client function, including spc_client_stop/spc_client_free.
 *
 * Ownership: spc_client_new copies every string of its configuration.
 * spc_client_stop() closes the connection politely (close 1000 "Client
 * disconnecting", and waits up to
 * GA_SPACE_CLOSE_WAIT_MS for the room's close), closes the socket and every
 * handle, then calls `done`. spc_client_free()
 * accepts NULL; on a client that has not finished stopping it starts the
 * stop and frees the memory once the handles have closed (the loop must
 * keep running until then).
 */
#ifndef GA_ADAPTERS_SPACE_CLIENT_H
#define GA_ADAPTERS_SPACE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/space/discover.h"
#include "adapters/space/roster.h"
#include "adapters/space/tunables.h"
#include "adapters/space/wire.h"
#include "common/err.h"

#define SPC_SENDQ_MAX_MSGS    64
#define SPC_SENDQ_MAX_BYTES   ((size_t)2 * 1024 * 1024)
#define SPC_MAX_INBOUND_BYTES ((size_t)16 * 1024 * 1024)
#define SPC_MAX_CAPS          16
/* How many replacement times are remembered (>= any sane limit). */
#define SPC_REPLACED_MEMORY 32

enum spc_state {
	SPC_IDLE,        /* created, not started */
	SPC_DISCOVERING, /* looking for the room */
	SPC_CONNECTING,  /* resolving, connecting, upgrading, joining */
	SPC_JOINED,      /* a member of the room */
	SPC_WAITING,     /* backing off before the next attempt */
	SPC_GAVE_UP,     /* replaced too often by a same-name agent; stopped */
	SPC_STOPPING,
	SPC_STOPPED,
};

const char *spc_state_name(enum spc_state s);

struct spc_client_config {
	const char *name;    /* AGENT_NAME: 1..100 UTF-16 units */
	const char *id;      /* the stable agent id: 1..100 units */
	const char *version; /* 1..50 units */
	/* capabilities: NULL = the join carries no "capabilities" key. At most
	 * SPC_MAX_CAPS. */
	const char *const *caps;
	size_t ncaps;
	const char *space_url;     /* SPACE_URL, or NULL for discovery */
	const char *identity_json; /* the summary object, or NULL */
	struct spc_tunables t;
};

struct spc_client_events {
	/* A chat not handed up before (see above), while the roster folds in
	 * the message that carries it, before on_message for that message.
	 * The chat and its strings are valid during the call only. */
	void (*on_chat)(void *ud, const struct spc_chat *chat);
	/* Every valid server message, after the roster folded it in;
	 * changed = SPC_CHANGED_* bits. The message is freed after the call. */
	void (*on_message)(void *ud, const struct spc_msg *m, unsigned changed);
	/* Our join came back: the room is usable (sends are accepted). */
	void (*on_joined)(void *ud);
	/* A joined connection ended; why is a sentence. */
	void (*on_left)(void *ud, const char *why);
};

struct spc_client;

/* NULL with err when the configuration breaks a protocol limit (an empty
 * or over-long name, id or version; too many capabilities). */
struct spc_client *spc_client_new(uv_loop_t *loop, const struct spc_client_config *cfg,
                                  const struct spc_client_events *ev, void *ud, struct ga_err *err);
/* Starts discovery. Once. */
void spc_client_start(struct spc_client *c);
/* Queues one JSON text (ownership taken in every case). 0 when queued; -1
 * when not joined or the queue is full (the text is freed). */
int spc_client_send(struct spc_client *c, char *json);
/* Replaces the identity summary (copied) and, when joined, sends it. */
void spc_client_set_identity(struct spc_client *c, const char *identity_json);
void spc_client_stop(struct spc_client *c, void (*done)(void *ud), void *ud);
void spc_client_free(struct spc_client *c);

enum spc_state spc_client_state(const struct spc_client *c);
/* The URL in use or last tried ("" before discovery finished). */
const char *spc_client_url(const struct spc_client *c);
/* Why the last attempt failed or the last connection ended ("" when none
 * has yet). */
const char *spc_client_last_error(const struct spc_client *c);
const struct spc_roster *spc_client_roster(const struct spc_client *c);
const char *spc_client_name(const struct spc_client *c);
const char *spc_client_id(const struct spc_client *c);

struct spc_client_stats {
	unsigned attempts;    /* connection attempts started */
	unsigned joins;       /* successful joins */
	unsigned replaced;    /* 4002 closes received */
	unsigned discoveries; /* discovery runs */
	unsigned dropped_sends;
	unsigned dropped_inbound;
};
void spc_client_stats(const struct spc_client *c, struct spc_client_stats *out);

#endif
