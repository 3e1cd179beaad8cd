/*
 * agent-space — the chatroom server agents and a human host share.
 *
 * Parses flags and the environment (optionally from ./.env; the process
 * environment wins) into a space_server_config and runs the server. Exit
 * codes follow sysexits: 0 after a clean shutdown, 64 usage, 69 cannot
 * listen, 78 configuration.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "common/err.h"
#include "common/log.h"
#include "space/server.h"

#define EX_OK_          0
#define EX_USAGE_       64
#define EX_UNAVAILABLE_ 69
#define EX_CONFIG_      78

static const char usage_text[] =
        "Usage: agent-space [--no-mdns] [--port-file PATH]\n"
        "       agent-space --help | --version\n"
        "\n"
        "The agent-space chatroom: a WebSocket room shared by general-agent and\n"
        "ts-general-agent agents and a human host. Lines typed on stdin (a terminal\n"
        "or a pipe) are sent to the room as the host; \"@Name\" addresses a member.\n"
        "Host commands: /who lists the members; /quit (or exit, quit) shuts down.\n"
        "End of stdin only stops host input; the room keeps serving.\n"
        "\n"
        "Options:\n"
        "  --no-mdns         do not advertise _agent-space._tcp over mDNS\n"
        "  --port-file PATH  once listening, write the port number and a newline to\n"
        "                    PATH (atomically); useful with SPACE_PORT=0\n"
        "  --help            show this help\n"
        "  --version         show the version\n"
        "\n"
        "Environment (also read from ./.env; the environment wins):\n"
        "  SPACE_NAME         room and mDNS instance name (default agent-space)\n"
        "  SPACE_PORT         port, 0..65535; 0 lets the OS pick (default 7777)\n"
        "  SPACE_BIND         address to listen on (default 0.0.0.0 = all, dual-stack\n"
        "                     when IPv6 is available)\n"
        "  SPACE_DATA_DIR     directory of the chat.jsonl log (default data/)\n"
        "  SPACE_MAX_CLIENTS  WebSocket connections, joined or not (default 8192);\n"
        "                     more are refused before the upgrade\n"
        "  SPACE_WEB          on | off: the read-only web page on the room's port\n"
        "                     (default on; docs/space-web.md)\n"
        "  SPACE_WEB_DIR      the page's files (default: found next to the binary,\n"
        "                     then the installed share/general-agent/web/space)\n"
        "  SPACE_SHOW_CHAT    auto | on | off: the room's chats, joins and leaves on\n"
        "                     stdout (default auto: when stdout or stdin is a\n"
        "                     terminal, so `agent-space | tee room.log` shows them)\n"
        "  LOG_LEVEL          debug | info | warn | error (default info); logs go to\n"
        "                     stderr, LOG_FORMAT=json for JSON lines\n"
        "\n"
        "Tunables, mainly for tests (milliseconds unless noted):\n"
        "  SPACE_JOIN_TIMEOUT_MS     join deadline for a new connection (5000)\n"
        "  SPACE_HEARTBEAT_MS        ping period; dropped after a missed round (30000)\n"
        "  SPACE_CLAIM_TTL_MS        claim lifetime (60000)\n"
        "  SPACE_CHAT_INTERVAL_MS    min gap between chats of one connection (3000)\n"
        "  SPACE_SHUTDOWN_GRACE_MS   from the shutdown message to close 1001 (3000)\n"
        "  SPACE_SWEEP_MS            expired claims/workspace sweep period (300000)\n"
        "  SPACE_WORKSPACE_TTL_MS    cached workspace_state lifetime (86400000)\n"
        "  SPACE_LOG_MAX_BYTES       rotate chat.jsonl past this size, bytes\n"
        "                            (52428800); 5 backups chat.1..chat.5.jsonl\n"
        "  SPACE_HISTORY_MAX_BYTES   bound on one history_response, bytes (4194304)\n"
        "  SPACE_SENDQ_MAX_BYTES     per-member unsent bytes before it is dropped\n"
        "                            (8388608)\n"
        "  SPACE_PRESENCE_BYTES_PER_S   presence a large room may send, bytes per\n"
        "                            second summed over its members (1000000000;\n"
        "                            0: a snapshot every loop turn)\n"
        "  SPACE_PRESENCE_MAX_DELAY_MS  the longest a member waits for a newer\n"
        "                            snapshot (5000)\n"
        "\n"
        "HTTP: GET /healthz answers 200 {\"name\",\"agents\",\"uptime\"} (uptime in\n"
        "seconds). GET / from a browser (Accept: text/html) serves the room's\n"
        "read-only page, GET /api/room a snapshot and GET /api/events a live stream\n"
        "(Server-Sent Events); other plain requests for / and unknown paths get 426,\n"
        "hostile ones a 4xx. Any path upgrades to the WebSocket.\n"
        "\n"
        "Exit status: 0 after shutdown (/quit, SIGINT, SIGTERM), 64 usage error,\n"
        "69 cannot listen, 78 configuration error.\n";

/* Strict unsigned parse of a whole string (no sign, no suffix). */
static int parse_u64(const char *v, uint64_t *out)
{
	if (!v || !*v)
		return -1;
	uint64_t x = 0;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*out = x;
	return 0;
}

static int env_u64(const struct env_file *f, const char *key, uint64_t lo, uint64_t hi,
                   uint64_t *out)
{
	const char *v = env_lookup(f, key);
	if (!v || !*v)
		return 0; /* unset or empty: keep the default */
	uint64_t x;
	if (parse_u64(v, &x) < 0 || x < lo || x > hi) {
		fprintf(stderr,
		        "agent-space: %s=\"%s\" is invalid: expected a whole number from %" PRIu64
		        " to %" PRIu64 "\n",
		        key, v, lo, hi);
		return -1;
	}
	*out = x;
	return 0;
}

static const char *env_str(const struct env_file *f, const char *key, const char *def)
{
	const char *v = env_lookup(f, key);
	return v && *v ? v : def;
}

int main(int argc, char **argv)
{
	struct space_server_config cfg;
	space_server_config_init(&cfg);

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage_text, stdout);
			return EX_OK_;
		} else if (strcmp(a, "--version") == 0) {
			printf("agent-space %s\n", GA_VERSION);
			return EX_OK_;
		} else if (strcmp(a, "--no-mdns") == 0) {
			cfg.mdns = false;
		} else if (strcmp(a, "--port-file") == 0 && i + 1 < argc) {
			cfg.port_file = argv[++i];
		} else if (strncmp(a, "--port-file=", 12) == 0 && a[12]) {
			cfg.port_file = a + 12;
		} else {
			fprintf(stderr, "agent-space: unknown or incomplete option '%s'\n\n", a);
			fputs(usage_text, stderr);
			return EX_USAGE_;
		}
	}

	log_init(LOG_LEVEL_INFO, -1, NULL);
	struct ga_err err = {{0}};
	struct env_file envf = {0};
	if (env_load_file(".env", &envf, NULL, &err) < 0) {
		fprintf(stderr, "agent-space: .env: %s\n", err.msg);
		return EX_CONFIG_;
	}
	const char *lvl = env_lookup(&envf, "LOG_LEVEL");
	if (lvl && *lvl) {
		enum log_level l;
		if (log_level_parse(lvl, &l) < 0) {
			fprintf(stderr,
			        "agent-space: LOG_LEVEL=\"%s\" is invalid: expected debug, "
			        "info, warn or error\n",
			        lvl);
			env_file_free(&envf);
			return EX_CONFIG_;
		}
		log_set_level(l);
	}

	uint64_t port = (uint64_t)cfg.port, maxc = cfg.max_clients;
	uint64_t join = (uint64_t)cfg.join_timeout_ms, hb = (uint64_t)cfg.heartbeat_ms;
	uint64_t ttl = (uint64_t)cfg.claim_ttl_ms, chat = (uint64_t)cfg.chat_interval_ms;
	uint64_t grace = (uint64_t)cfg.shutdown_grace_ms, sweep = (uint64_t)cfg.sweep_ms;
	uint64_t wsttl = (uint64_t)cfg.workspace_ttl_ms, logmax = cfg.log_max_bytes;
	uint64_t histmax = cfg.history_max_bytes, sendq = cfg.sendq_max_bytes;
	uint64_t prate = (uint64_t)cfg.presence_bytes_per_ms * 1000;
	uint64_t pdelay = (uint64_t)cfg.presence_delay_max_ms;
	const uint64_t day = 86400000ull * 365;
	int bad = 0;
	bad |= env_u64(&envf, "SPACE_PORT", 0, 65535, &port);
	bad |= env_u64(&envf, "SPACE_MAX_CLIENTS", 1, 1000000, &maxc);
	bad |= env_u64(&envf, "SPACE_JOIN_TIMEOUT_MS", 1, day, &join);
	bad |= env_u64(&envf, "SPACE_HEARTBEAT_MS", 1, day, &hb);
	bad |= env_u64(&envf, "SPACE_CLAIM_TTL_MS", 1, day, &ttl);
	bad |= env_u64(&envf, "SPACE_CHAT_INTERVAL_MS", 0, day, &chat);
	bad |= env_u64(&envf, "SPACE_SHUTDOWN_GRACE_MS", 0, day, &grace);
	bad |= env_u64(&envf, "SPACE_SWEEP_MS", 1, day, &sweep);
	bad |= env_u64(&envf, "SPACE_WORKSPACE_TTL_MS", 1, day, &wsttl);
	bad |= env_u64(&envf, "SPACE_LOG_MAX_BYTES", 1, UINT64_C(1) << 40, &logmax);
	bad |= env_u64(&envf, "SPACE_HISTORY_MAX_BYTES", 1024, UINT64_C(1) << 30, &histmax);
	bad |= env_u64(&envf, "SPACE_SENDQ_MAX_BYTES", 65536, UINT64_C(1) << 32, &sendq);
	bad |= env_u64(&envf, "SPACE_PRESENCE_BYTES_PER_S", 0, UINT64_C(1) << 40, &prate);
	bad |= env_u64(&envf, "SPACE_PRESENCE_MAX_DELAY_MS", 0, 60000, &pdelay);
	if (bad) {
		env_file_free(&envf);
		return EX_CONFIG_;
	}
	cfg.port = (int)port;
	cfg.max_clients = (unsigned)maxc;
	cfg.join_timeout_ms = (int64_t)join;
	cfg.heartbeat_ms = (int64_t)hb;
	cfg.claim_ttl_ms = (int64_t)ttl;
	cfg.chat_interval_ms = (int64_t)chat;
	cfg.shutdown_grace_ms = (int64_t)grace;
	cfg.sweep_ms = (int64_t)sweep;
	cfg.workspace_ttl_ms = (int64_t)wsttl;
	cfg.log_max_bytes = (size_t)logmax;
	cfg.history_max_bytes = (size_t)histmax;
	cfg.sendq_max_bytes = (size_t)sendq;
	cfg.presence_bytes_per_ms = prate ? (int64_t)(prate < 1000 ? 1 : prate / 1000) : 0;
	cfg.presence_delay_max_ms = (int64_t)pdelay;
	cfg.name = env_str(&envf, "SPACE_NAME", SPACE_DEFAULT_NAME);
	cfg.bind = env_str(&envf, "SPACE_BIND", SPACE_DEFAULT_BIND);
	cfg.data_dir = env_str(&envf, "SPACE_DATA_DIR", SPACE_DEFAULT_DATA_DIR);
	const char *web = env_lookup(&envf, "SPACE_WEB");
	if (web && *web) {
		if (strcmp(web, "on") == 0) {
			cfg.web = true;
		} else if (strcmp(web, "off") == 0) {
			cfg.web = false;
		} else {
			fprintf(stderr,
			        "agent-space: SPACE_WEB=\"%s\" is invalid: expected on or off\n",
			        web);
			env_file_free(&envf);
			return EX_CONFIG_;
		}
	}
	const char *show = env_lookup(&envf, "SPACE_SHOW_CHAT");
	if (show && *show) {
		if (strcmp(show, "auto") == 0) {
			cfg.show_chat = SPACE_SHOW_AUTO;
		} else if (strcmp(show, "on") == 0) {
			cfg.show_chat = SPACE_SHOW_ON;
		} else if (strcmp(show, "off") == 0) {
			cfg.show_chat = SPACE_SHOW_OFF;
		} else {
			fprintf(stderr,
			        "agent-space: SPACE_SHOW_CHAT=\"%s\" is invalid: expected auto, on "
			        "or off\n",
			        show);
			env_file_free(&envf);
			return EX_CONFIG_;
		}
	}
	const char *wd = env_lookup(&envf, "SPACE_WEB_DIR");
	if (wd && *wd)
		cfg.web_dir = wd;

	enum space_run_result rc = space_server_run(&cfg, &err);
	env_file_free(&envf);
	switch (rc) {
	case SPACE_RUN_OK:
		return EX_OK_;
	case SPACE_RUN_BAD_DATA_DIR:
		fprintf(stderr, "agent-space: %s\n", err.msg);
		return EX_CONFIG_;
	default:
		fprintf(stderr, "agent-space: %s\n", err.msg);
		return EX_UNAVAILABLE_;
	}
}
