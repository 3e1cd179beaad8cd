/*
 * wsfix — agents of the work loop in one test process: each has its own
 * memory, HTTP and GitHub clients (its own token), journal, outbound with
 * the real GitHub port (git pushes included), state store, git cache,
 * coordination backend and workspace engine (modules/workspace), all on
 * one uv loop, against the in-process GitHub fake with real git, and a
 * scripted coder in the bubblewrap sandbox where it works (else
 * CODER_SANDBOX=off).
 *
 * The workspace: acme/www-lil-intdev-demo, seeded with a README and a
 * Makefile whose test target passes; wsfix_plan adds a plan issue with n
 * tasks (labels plan, plan:active) as the host.
 *
 * The coder (WSFIX_CODER): writes task-<n>.txt naming the task and its
 * author and commits it. A test may replace the script (wsfix_coder).
 */
#ifndef GA_TESTS_INTEGRATION_WORKSPACE_WSFIX_H
#define GA_TESTS_INTEGRATION_WORKSPACE_WSFIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "adapters/git/git.h"
#include "adapters/github/github.h"
#include "adapters/llm/llm.h"
#include "modules/coder/coder.h"
#include "modules/commitments/ledger.h"
#include "modules/coord/coord.h"
#include "modules/github/port.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "modules/skills/skills.h"
#include "modules/state/state.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/workspace.h"
#include "tests/fakes/github/ghfake.h"

#define WSFIX_OWNER        "acme"
#define WSFIX_REPO         "www-lil-intdev-demo"
#define WSFIX_MAX          4
#define WSFIX_CYCLE_GAP_MS 150
#define WSFIX_SAID_MAX     16

struct wsfix_agent {
	char name[16], login[32], token[48];
	char dir[512];
	struct http_client *http;
	struct gh_client *gh;
	struct journal *j;
	struct outbound *ob;
	struct gh_port *port;
	struct git_ctx git;
	struct state_store st;
	struct coord *coord;
	struct coder_config coder;
	struct wsp *ws;
	struct llm_client *llm; /* fx->llm_url set: the model, and a ledger */
	struct ledger ledger;
	bool cycling;
	int cycles;
	uint64_t last_cycle_ms;
	int room_states; /* workspace_state broadcasts asked */
	/* room_say keys (each once) and review callbacks */
	char said[WSFIX_SAID_MAX][WSP_KEY_MAX + 1];
	int n_said;
	int reviews_asked;
	int64_t last_review_pr;
	/* What discovery reads (NULL: none); the test's, set before a cycle. */
	struct conv_store *store;
	struct wsfix *fx;
};

struct wsfix {
	uv_loop_t loop;
	char *dir;
	char bin[600];
	char base[128]; /* the fake's URL */
	bool child;     /* wsfix_open_child: no fake of our own */
	struct ghfake *fake;
	struct http_client *host_http;
	struct gh_client *host;
	struct skills skills;
	bool sandbox;
	struct wsfix_agent a[WSFIX_MAX];
	int n;
	const char *redis_url; /* NULL: local coordination */
	const char *llm_url;   /* NULL: no model (no plan synthesis, no health check) */
	/* the engine's review timeout and revision bound (0: the defaults) */
	int64_t review_timeout_ms;
	int max_revisions;
	const char *owner_login; /* OWNER_GITHUB_USERNAME; NULL: unknown */
};

/* A redis-server of the test's (stopped by support_redis_free) and its URL
 * for fx->redis_url; skips the test when redis-server is not installed. */
struct support_redis;
void wsfix_redis(struct support_redis *r, char *url, size_t cap);

/* The fake, the workspace repository, the skills. Aborts on failure. */
void wsfix_open(struct wsfix *fx);
/* For a child process of the test: the parent's fake at base, its
 * directory dir (kept: the parent removes it). */
void wsfix_open_child(struct wsfix *fx, const char *dir, const char *base);
/* n agents "ada", "bob", "cal", "dan" (logins <name>-bot). */
void wsfix_agents(struct wsfix *fx, int n, int64_t claim_ttl_ms, int64_t orphan_ms);
/* One agent (agents[i]) set up again on the same memory (a restart). */
void wsfix_agent_open(struct wsfix *fx, int i, int64_t claim_ttl_ms, int64_t orphan_ms);
void wsfix_agent_close(struct wsfix *fx, int i);
void wsfix_close(struct wsfix *fx);
/* The scripted coder of every agent (sh script text). */
void wsfix_coder(struct wsfix *fx, const char *script);
/* A plan issue with ntasks tasks; returns its number. */
int wsfix_plan(struct wsfix *fx, const char *title, int ntasks);
/* Starts a cycle of agent i unless one runs. */
void wsfix_cycle(struct wsfix *fx, int i);
/* Runs cycles (agents in the order given, each again as soon as its
 * previous cycle ended) until cond holds or timeout_ms passes. */
bool wsfix_run(struct wsfix *fx, const int *order, int n, bool (*cond)(struct wsfix *fx),
               int timeout_ms);
/* Runs the loop until every agent is idle (no cycle, no task). */
bool wsfix_settle(struct wsfix *fx, int timeout_ms);
/* The comments of issue n as GitHub's JSON (caller frees). */
struct cJSON *wsfix_comments(struct wsfix *fx, int n);

/* snprintf that fails the test when the text does not fit; mkdir -p. */
void wsfix_path(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void wsfix_mkdirs(const char *path);

extern const char WSFIX_CODER[];

#endif
