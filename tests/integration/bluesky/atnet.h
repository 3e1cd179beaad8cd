/*
 * atnet — a whole AT Protocol network for a test: dev-env's TestNetwork
 * (a PLC directory, a PDS and an AppView; scripts/pds/network.mjs) on a
 * private PostgreSQL cluster and a redis-server, all started here and
 * stopped by atnet_stop (and with the test process: every child dies with
 * it).
 *
 *   PostgreSQL  Debian's server binaries (/usr/lib/postgresql/<v>/bin):
 *               initdb into a temporary directory, then postgres on
 *               127.0.0.1 and a free port, its socket in that directory;
 *               as the user nobody when the test runs as root (PostgreSQL
 *               refuses root), fsync off (the data is thrown away);
 *   Redis       support_redis (127.0.0.1, a free port, no persistence);
 *   the network node (the Node 22 of scripts/pds/install.sh) running
 *               network.mjs: its proxy (127.0.0.1) is what an agent under
 *               test is pointed at (BLUESKY_SERVICE), its control API
 *               (127.0.0.1) is what atnet_call speaks. dev-env's own
 *               servers (PDS, AppView, PLC) listen on every interface on
 *               ports it picks: it has no option to bind loopback only.
 *
 * atnet_start answers 77 (the test is then skipped, and why says so) when
 * GA_SKIP_PDS=1, when the network is not installed (GA_PDS_CACHE, default
 * ~/.cache/general-agent/pds, has no "net-installed"), or when PostgreSQL's
 * server or redis-server is missing; -1 with why when something that is
 * there does not start; 0 when the network answers.
 *
 * atnet_call posts a JSON body to one of the control routes (network.mjs
 * lists them) and returns the answer (caller frees) or NULL with why.
 */
#ifndef GA_TESTS_INTEGRATION_BLUESKY_ATNET_H
#define GA_TESTS_INTEGRATION_BLUESKY_ATNET_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "proc.h"
#include "support_redis.h"

#define ATNET_START_MS 180000 /* a loaded machine's first start migrates three schemas */

struct atnet {
	char *dir; /* everything of this run: the cluster, the outputs */
	struct proc pg, node;
	bool pg_running, node_running;
	int pg_port;
	struct support_redis redis;
	char proxy[128];   /* BLUESKY_SERVICE for the agents */
	char control[128]; /* the control API */
};

int atnet_start(struct atnet *n, char *why, size_t cap);
void atnet_stop(struct atnet *n);

/* POST control/route with the body (a JSON text); the answer (caller
 * frees), or NULL with why (an HTTP error says the network's words). */
cJSON *atnet_call(struct atnet *n, const char *route, const char *body, char *why, size_t cap);

#endif
