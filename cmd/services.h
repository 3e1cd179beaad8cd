/*
 * services — how a platform's behaviour (GitHub commitment fulfilment,
 * GitHub conversations, Bluesky, reflection) plugs into the daemon without
 * another half-path off cmd/daemon.c.
 *
 * A service is wiring only: a cmd/svc_<name>.c file defines one
 * `const struct ga_service svc_<name>` whose functions build the module's
 * objects from the shared ones in struct ga_svc_ctx (the loop, the
 * pipeline, the outbound, the journal, the ledger, the scheduler, the HTTP
 * client, the model) and tear them down. The behaviour lives in modules/,
 * the wire protocols in adapters/.
 *
 * The table (services.c) names every known service through a weak
 * reference: a build without a service's file simply has none.
 *
 * The room (agent-space) is a service too (svc_space.c); what the daemon
 * and the other services ask of it goes through struct ga_room, which the
 * table finds with ga_services_room.
 *
 * Life of a service, in the daemon's order:
 *   start    after the pipeline, the outbound (its ports are added here)
 *            and the model, before the loop runs. NULL with err.msg empty
 *            = not configured (logged as off); NULL with a message = could
 *            not start (logged as an error; the daemon goes on).
 *   reload   SIGHUP (SELF.md and skills re-read), may be NULL.
 *   status   an object for the status file and the dashboard ("services":
 *            {name: …}); may be NULL. The caller owns the result.
 *   quiesce  the daemon is stopping: stop timers and take no new work.
 *            Calls in flight may finish. May be NULL.
 *   drain    after quiesce: work that must end on the loop before the
 *            outbound and the services are freed (the room's coordination
 *            withdrawing its claims through the link); done(ud) is called
 *            once, possibly at once. May be NULL.
 *   free     after the outbound has closed (it waits for port calls in
 *            flight, so a send is never cut between intent and done by our
 *            own shutdown) and before the HTTP client closes. Handles close
 *            on the loop, which is run afterwards.
 */
#ifndef GA_CMD_SERVICES_H
#define GA_CMD_SERVICES_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <uv.h>

#include "common/config.h"
#include "common/err.h"

struct bsky;
struct budget;
struct compose_call;
struct coord;
struct env_file;
struct gh_client;
struct decision_log;
struct http_client;
struct journal;
struct ledger;
struct llm_client;
struct outbound;
struct pipeline;
struct sched;
struct self_doc;
struct skills;
struct state_store;
struct wsp;
struct ghconv;

struct ga_svc_ctx {
	uv_loop_t *loop;
	const struct ga_config *cfg;
	bool social_only;
	struct state_store *st;
	struct sched *sched;
	/* NULL when none of the model, GitHub and Bluesky is configured (or
	 * the client could not be made): then only the services marked
	 * without_http start. */
	struct http_client *http;
	struct llm_client *llm; /* NULL without a model */
	/* One GitHub client (adapters/github) shared by every service, so one
	 * rate limiter sees every request on the token. NULL when GitHub is not
	 * configured, or in --social-only mode. */
	struct gh_client *github;
	struct budget *budget;
	struct skills *skills;
	struct ledger *ledger;       /* NULL when unreadable */
	struct journal *journal;     /* NULL when unusable */
	struct outbound *outbound;   /* NULL when unusable */
	struct pipeline *pipeline;   /* NULL when unusable */
	struct decision_log *dlog;   /* NULL when unusable */
	const struct self_doc *self; /* re-read on SIGHUP: the pointer stays */
	const char *soul_text;
	const char *self_path;
	const char *soul_path;
	const char *version;
	/* The room's target for pipeline_say (space_runtime_target): 0 and buf
	 * filled, or -1 when not in a room. */
	int (*room_target)(void *ud, char *buf, size_t cap);
	/* The coordination backend peers' claims go through now (the room's
	 * once joined, else Redis or local); NULL when none. */
	struct coord *(*coord)(void *ud);
	/* The room (agent-space): a `reflection` message with this 1–2
	 * sentence summary, and the identity summary re-sent. -1 when not in
	 * a room (nothing is queued). May be NULL in a build without the room. */
	int (*room_reflection)(void *ud, const char *summary);
	int (*room_identity)(void *ud);
	/* The room: a `workspace_state` after plan polling ({workspace, plan,
	 * total, completed, blocked, inProgress, tasks?}, borrowed;
	 * space_runtime_send_workspace_state). -1 when not in a room. May be
	 * NULL. */
	int (*room_workspace_state)(void *ud, const cJSON *state);
	/* The owner's tool calls that a service answers later (the workspace
	 * tools read GitHub): the service gives the daemon its route; 1 when
	 * the route took the call, 0 when the action is not its. May be NULL. */
	void (*route_actions)(void *ud,
	                      int (*route)(void *route_ud, const char *action, const cJSON *params,
	                                   struct compose_call *call),
	                      void *route_ud);
	/* The workspace engine of this agent: the workspace service offers it
	 * when it starts and takes it back (NULL) when it is freed; the
	 * commitments' create_workspace goes to it (workspaces answers NULL
	 * while there is none). May be NULL. */
	void (*offer_workspaces)(void *ud, struct wsp *ws);
	struct wsp *(*workspaces)(void *ud);
	/* The GitHub conversations of this agent, offered the same way by the
	 * github service: the workspace cycle asks them for the reviews it is
	 * requested for (ghconv_review). May be NULL. */
	void (*offer_ghconv)(void *ud, struct ghconv *g);
	struct ghconv *(*ghconv)(void *ud);
	/* The Bluesky engine of this agent, offered the same way by the bluesky
	 * service: the workspace says a completed plan in the thread it came
	 * from (bsky_thread_say). May be NULL. */
	void (*offer_bsky)(void *ud, struct bsky *b);
	struct bsky *(*bsky)(void *ud);
	/* The agent's .env as read at start (coder_config_load needs it for
	 * CODER_ENV's values). May be NULL. */
	const struct env_file *env_file;
	/* The fulfilment abandoned a commitment (id, its source): the room's
	 * participation engine opens the host's request again when it was made
	 * for it (space_runtime_commitment_abandoned). May be NULL. */
	void (*commitment_abandoned)(void *ud, const char *id, const char *source);
	/* Another member of the room reported action+target done
	 * (space_runtime_peer_done). May be NULL. */
	bool (*peer_done)(void *ud, const char *action, const char *target, char *who,
	                  size_t who_cap, char *link, size_t link_cap);
	/* The GitHub logins the room's other agents said in their identities
	 * (space_runtime_peer_logins): into out, borrowed until the next call
	 * into the room; how many. 0 when not in a room. May be NULL. */
	size_t (*room_logins)(void *ud, const char **out, size_t cap);
	/* SELF.md changed on disk (a reflection rewrote it): the daemon reads
	 * it again — identity, the gate's Social Mechanics, the owner's prompt.
	 * The room's identity is not re-sent here (room_identity does that). */
	void (*reload_self)(void *ud);
	/* A variable as the configuration sees it: the process environment,
	 * else <home>/.env; NULL when unset. Borrowed. Use ga_svc_env_ms. */
	const char *(*env)(void *ud, const char *name);
	/* Tell the owner (terminal and log). */
	void (*notify_owner)(void *ud, const char *text);
	/* A fatal condition (401 on the GitHub token): the owner is told, the
	 * daemon stops with this exit code. */
	void (*fatal)(void *ud, int exit_code, const char *text);
	void *ud;
};

/* The room as the daemon and the other services see it; svc is the room
 * service's object. Every call is safe while the agent is not (or no longer)
 * in the room: target, reflection, workspace_state and identity return -1
 * then. */
struct ga_room {
	/* The room's target for pipeline_say ("space:<host>-<port>"). */
	int (*target)(void *svc, char *buf, size_t cap);
	/* A `reflection` message with this summary (through outbound). */
	int (*reflection)(void *svc, const char *summary);
	/* A `workspace_state` after plan polling (through outbound;
	 * space_runtime_send_workspace_state). */
	int (*workspace_state)(void *svc, const cJSON *state);
	/* The identity summary built again (SELF.md re-read) and re-sent. */
	int (*identity)(void *svc);
	/* The fulfilment abandoned commitment id of that source. */
	void (*commitment_abandoned)(void *svc, const char *id, const char *source);
	/* Another member reported action+target done (space_runtime_peer_done). */
	bool (*peer_done)(void *svc, const char *action, const char *target, char *who,
	                  size_t who_cap, char *link, size_t link_cap);
	/* The other agents' GitHub logins (space_runtime_peer_logins). */
	size_t (*peer_logins)(void *svc, const char **out, size_t cap);
	/* What the agent is doing, for the others in the room. */
	void (*set_busy)(void *svc, bool busy, const char *detail);
	/* The room's claims backend, NULL when none (REDIS_URL, not joined). */
	struct coord *(*coord)(void *svc);
	/* "joined ws://… (3 members)", "connecting", … */
	void (*describe)(void *svc, char *buf, size_t cap);
};

struct ga_service {
	const char *name;
	void *(*start)(const struct ga_svc_ctx *ctx, struct ga_err *err);
	void (*reload)(void *svc);
	cJSON *(*status)(void *svc);
	void (*quiesce)(void *svc);
	void (*drain)(void *svc, void (*done)(void *ud), void *ud);
	void (*free)(void *svc);
	const struct ga_room *room; /* the room service only */
	bool without_http;          /* starts when the process has no HTTP client */
};

#define GA_SERVICES_MAX 8

/* A service's tunable in milliseconds (GA_GITHUB_POLL_MS, ...), read
 * through ctx->env (so .env works too): unset or empty → def; a whole
 * number in lo..hi → it; anything else → -1 with err naming the variable,
 * the value and the range (the service then refuses to start). Every name
 * read this way is listed in common/config.c, so it is a known variable. */
int ga_svc_env_ms(const struct ga_svc_ctx *ctx, const char *name, int64_t lo, int64_t hi,
                  int64_t def, int64_t *out, struct ga_err *err);

/* The running services (for the daemon). */
struct ga_services {
	const struct ga_service *svc[GA_SERVICES_MAX];
	void *obj[GA_SERVICES_MAX];
	int n;
	int draining; /* drains not done yet */
	void (*drained)(void *ud);
	void *drained_ud;
};

void ga_services_start(struct ga_services *s, const struct ga_svc_ctx *ctx);
void ga_services_reload(struct ga_services *s);
/* Adds "services": {name: status} to obj. */
void ga_services_status(struct ga_services *s, cJSON *obj);
/* quiesce, then every drain; done(ud) once all drains are done (at once
 * when none has one). */
void ga_services_quiesce(struct ga_services *s, void (*done)(void *ud), void *ud);
/* The room's service: its ops, *svc its object; NULL when not running. */
const struct ga_room *ga_services_room(const struct ga_services *s, void **svc);
void ga_services_free(struct ga_services *s);

#endif
