/*
 * space/server — the agent-space server process: a WebSocket server
 * (common/ws.c) on one libuv loop, with the room, the log, host input, mDNS,
 * timers and shutdown.
 *
 * This is the I/O glue around space/room (policy) and space/store (log):
 * WebSocket transport rules (space-protocol.md §1), per-connection bounded
 * send queues flushed once per loop turn, the join timer, heartbeat and
 * sweep timers, the shutdown drain (§3.17), GET /healthz, the read-only
 * web page (space/web.h: GET / from a browser, /api/room, /api/events),
 * the connection limit, and the port file.
 *
 * space_server_run() blocks running the loop until the room has shut down
 * (host "/quit", SIGINT or SIGTERM) and then releases everything.
 */
#ifndef GA_SPACE_SERVER_H
#define GA_SPACE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "space/room.h"

#define SPACE_DEFAULT_NAME        "agent-space"
#define SPACE_DEFAULT_PORT        7777
#define SPACE_DEFAULT_DATA_DIR    "data/"
#define SPACE_DEFAULT_BIND        "0.0.0.0"
#define SPACE_DEFAULT_MAX_CLIENTS 8192

#define SPACE_JOIN_TIMEOUT_MS_DEFAULT   5000
#define SPACE_HEARTBEAT_MS_DEFAULT      30000
#define SPACE_SWEEP_MS_DEFAULT          300000
#define SPACE_SHUTDOWN_GRACE_MS_DEFAULT 3000
/* A member whose unsent messages pass this is disconnected (it stopped
 * reading); nobody else ever waits for it. */
#define SPACE_SENDQ_MAX_BYTES_DEFAULT ((size_t)8 * 1024 * 1024)
/* After the 1001 closes, how long to wait for close handshakes. */
#define SPACE_CLOSE_WAIT_MS 2000

struct space_server_config {
	const char *name; /* SPACE_NAME: mDNS instance, /healthz name */
	int port;         /* 0: the OS picks one */
	const char *bind; /* address to listen on; "0.0.0.0" = all */
	const char *data_dir;
	unsigned max_clients; /* WebSocket connections, joined or not */
	bool mdns;
	bool host_input; /* read host lines from stdin */
	/* The room's events (chats, joins, leaves) on stdout for the host:
	 * SPACE_SHOW_AUTO shows them when stdout or, with host input, stdin is
	 * a terminal (`agent-space | tee log` at a terminal shows them). */
	enum space_show_chat { SPACE_SHOW_AUTO, SPACE_SHOW_ON, SPACE_SHOW_OFF } show_chat;
	const char *port_file; /* NULL or a path */
	/* The read-only web page (space/web.h) on the same port: plain GET /
	 * from a browser, /api/room, /api/events. On by default. */
	bool web;
	const char *web_dir; /* its files; NULL: found next to the binary */

	int64_t join_timeout_ms;
	int64_t heartbeat_ms;
	int64_t claim_ttl_ms;
	int64_t chat_interval_ms;
	int64_t shutdown_grace_ms;
	int64_t sweep_ms;
	int64_t workspace_ttl_ms;
	size_t log_max_bytes;
	size_t history_max_bytes;
	size_t sendq_max_bytes;
	int64_t presence_bytes_per_ms; /* presence pacing (space/room.h) */
	int64_t presence_delay_max_ms;
};

/* Fills the protocol's defaults (§6). */
void space_server_config_init(struct space_server_config *cfg);

enum space_run_result {
	SPACE_RUN_OK = 0,            /* clean shutdown */
	SPACE_RUN_CANNOT_LISTEN = 1, /* bind/listen failed, or the port file */
	SPACE_RUN_BAD_DATA_DIR = 2,  /* SPACE_DATA_DIR cannot be created */
};

/* Runs the server until shutdown; err says why it could not start. */
enum space_run_result space_server_run(const struct space_server_config *cfg, struct ga_err *err);

#endif
