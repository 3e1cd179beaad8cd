/*
 * daemon — the long-running process: identity checks, the loop, signals,
 * the scheduler, graceful shutdown, and the wiring of the message pipeline
 * (modules/pipeline: decision log, journal, outbound, coordination, the
 * owner's console on the terminal adapter, the room). Behaviour lives in
 * modules/ and adapters/; this file only connects them.
 *
 * Start: memory directory → SOUL.md check (78 on failure) → SELF.md
 * (written from the template on first start) → lock on the memory
 * directory (75 if another daemon has it) → report which features are on
 * and why the others are off → jobs → loop.
 *
 * Signals: SIGINT/SIGTERM stop the scheduler, let running jobs finish for
 * at most SHUTDOWN_GRACE_MS, write the status file and exit 0. SIGHUP
 * re-reads .env and SELF.md; a bad .env or configuration is reported and the
 * running configuration kept.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "adapters/github/github.h"
#include "adapters/http/http.h"
#include "adapters/llm/llm.h"
#include "adapters/terminal/terminal.h"
#include "cmd/cli.h"
#include "cmd/datadir.h"
#include "cmd/services.h"
#include "common/fsx.h"
#include "common/log.h"
#include "common/sdnotify.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "local-tools/tools.h"
#include "modules/budget/budget.h"
#include "modules/commitments/ledger.h"
#include "modules/coord/coord.h"
#include "modules/dashboard/dashboard.h"
#include "modules/decisions/log.h"
#include "modules/gate/policy.h"
#include "modules/identity/self.h"
#include "modules/identity/soul.h"
#include "modules/journal/journal.h"
#include "modules/outbound/outbound.h"
#include "modules/owner/console.h"
#include "modules/owner/owner.h"
#include "modules/pipeline/actions.h"
#include "modules/pipeline/control.h"
#include "modules/pipeline/pipeline.h"
#include "modules/scheduler/sched.h"
#include "modules/skills/skills.h"
#include "modules/state/state.h"
#include "modules/status/status.h"

#define SHUTDOWN_GRACE_MS     5000
#define HEARTBEAT_INTERVAL_MS (5 * 60 * 1000)
#define HEARTBEAT_JITTER      0.12
#define STATUS_INTERVAL_MS    15000
/* With the owner at a terminal, log lines go to this file (rotated at
 * DAEMON_LOG_MAX_BYTES, one backup: common/log.h) instead of between the
 * owner's question and the answer, and only warnings and errors reach the
 * terminal, compactly; LOG_LEVEL=debug keeps them all on stderr. */
#define DAEMON_LOG_FILE      "daemon.log"
#define DAEMON_LOG_MAX_BYTES (8 * 1024 * 1024)

struct daemon {
	struct ga_home *home;
	uv_loop_t loop;
	uv_signal_t sig_int, sig_term, sig_hup;
	uv_timer_t grace;
	uv_timer_t stop_soon; /* runs the stop outside whatever callback asked for it */
	struct terminal *term;
	bool log_file; /* the log goes to memory/daemon.log (the owner is at a terminal) */
	struct state_store st;
	struct soul soul;
	struct self_doc self;
	struct sched *sched;
	/* the model and what speaks through it */
	struct http_client *http;
	struct llm_client *llm;
	struct budget budget;
	struct skills skills;
	struct ledger ledger;
	struct owner *owner;
	struct compose_tool tools[TOOLS_MAX];
	size_t n_tools;
	struct tools_sink sink;
	/* the message pipeline */
	struct decision_log *dlog;
	struct journal *journal;
	struct outbound *outbound;
	struct coord *coord;    /* redis or local */
	bool services_draining; /* the services' drains are not done yet */
	bool after_services;    /* the shutdown waits for them */
	struct pipeline *pipeline;
	struct pipeline_actions actions;
	struct wsp *wsp;       /* the workspace service's engine, NULL when it is off */
	struct ghconv *ghconv; /* the github service's conversations, NULL when off */
	struct bsky *bsky;     /* the bluesky service's engine, NULL when off */
	struct console *console;
	struct control_watch *control;
	struct dashboard *dash;      /* NULL when DASHBOARD_ADDR=off or it could not start */
	struct ga_services services; /* the room, GitHub, Bluesky, reflection (cmd/services.h) */
	struct gh_client *github;    /* shared by the services; NULL when off */
	int lock_fd;
	int64_t started_ms;
	bool shutting_down;
	bool finishing;
	bool exit_when_idle;
	int exit_code;
};

/* --- status ------------------------------------------------------------------- */

/* A line for the owner ("Ada: …"), above the prompt when there is one. */
static void say(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct daemon *d, const char *fmt, ...)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	char *line = console_notice(d->home->cfg.agent_name, sb_cstr(&sb));
	terminal_say(d->term, line);
	free(line);
	sb_free(&sb);
}

static void shutdown_begin(struct daemon *d, const char *why);

/* Something the agent cannot go on without (a refused key or token): tell
 * the owner at the terminal and on stderr, redacted, log it, and stop with
 * exit_code. */
static void stop_fatal(struct daemon *d, int exit_code, const char *what, const char *text)
{
	char *safe = log_redact(text);
	say(d, "I have to stop: %s", safe);
	fprintf(stderr, "general-agent: %s\n", safe);
	free(safe);
	log_kv(LOG_LEVEL_ERROR, "daemon", what, "error", text);
	d->exit_code = exit_code;
	shutdown_begin(d, what);
}

/* The room's service, when it runs (cmd/svc_space.c); *svc its object. */
static const struct ga_room *room(struct daemon *d, void **svc)
{
	return ga_services_room(&d->services, svc);
}

/* The backend peers' claims go through now: the room's, else Redis or
 * local. */
static struct coord *peer_coord(struct daemon *d)
{
	void *svc;
	const struct ga_room *r = room(d, &svc);
	struct coord *c = r ? r->coord(svc) : NULL;
	return c ? c : d->coord;
}

/* The status object (modules/status): the status file's content and the
 * dashboard's /api/status. Caller deletes. */
static cJSON *status_object(struct daemon *d, const char *state)
{
	char coord[300] = "none", space[300];
	struct coord *c = peer_coord(d);
	if (c)
		coord_describe(c, coord, sizeof coord);
	void *svc;
	const struct ga_room *r = room(d, &svc);
	if (r)
		r->describe(svc, space, sizeof space);
	cJSON *services = cJSON_CreateObject();
	ga_services_status(&d->services, services);
	cJSON *svcs = cJSON_DetachItemFromObject(services, "services");
	cJSON_Delete(services);
	struct status_inputs in = {.state = state,
	                           .cfg = &d->home->cfg,
	                           .social_only = d->home->opts.social_only,
	                           .started_ms = d->started_ms,
	                           .pipeline = d->pipeline,
	                           .coordination = coord,
	                           .ledger = d->ledger.path ? &d->ledger : NULL,
	                           .sched = d->sched,
	                           .space = r ? space : NULL,
	                           .services = svcs};
	return status_build(&in);
}

static void write_status(struct daemon *d, const char *state)
{
	cJSON *s = status_object(d, state);
	struct ga_err err = {{0}};
	if (status_save(&d->st, s, time_now_ms(), &err) != 0)
		log_kv(LOG_LEVEL_WARN, "daemon", "could not write the status file", "error",
		       err.msg);
	cJSON_Delete(s);
}

/* --- shutdown ----------------------------------------------------------------- */

static void close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void walk_now(uv_timer_t *t)
{
	uv_walk(t->loop, close_walk, NULL);
}

/* The last steps of a shutdown, in order: the owner's turn (if any) is
 * cancelled and waited for (its answer ends its pipeline job); outbound
 * drops what waits and waits for sends in flight; the coordination
 * backends answer what is pending and close; then the pipeline (saving the
 * conversations), the journal, the decision log, the model client and HTTP
 * are released, and every handle left is closed so uv_run returns. Closing
 * an HTTP handle under a running tool loop would pull it from under
 * the transport; freeing the pipeline before outbound would leave its callbacks
 * nowhere to go. */
static void after_coord(void *ud)
{
	struct daemon *d = ud;
	if (d->coord) {
		struct coord *c = d->coord;
		d->coord = NULL;
		coord_close(c, after_coord, d);
		return;
	}
	/* The outbound has closed (no port call in flight): the services'
	 * clients go before the HTTP client and the pipeline they borrow. */
	ga_services_free(&d->services);
	gh_client_free(d->github);
	d->github = NULL;
	pipeline_free(d->pipeline);
	d->pipeline = NULL;
	console_free(d->console);
	d->console = NULL;
	journal_close(d->journal);
	d->journal = NULL;
	decision_log_close(d->dlog);
	d->dlog = NULL;
	if (d->llm)
		llm_client_free(d->llm);
	d->llm = NULL;
	if (d->http)
		http_client_close(d->http);
	d->http = NULL;
	terminal_close(d->term);
	d->term = NULL;
	control_watch_close(d->control);
	d->control = NULL;
	/* Not now: this may run inside the tool loop's own timer callback
	 * (the owner's turn ending), and closing that timer under it aborts
	 * libuv. On the next loop turn every module has unwound. */
	uv_timer_start(&d->stop_soon, walk_now, 0, 0);
}

static void after_outbound(void *ud)
{
	struct daemon *d = ud;
	d->outbound = NULL;
	if (d->services_draining) {
		d->after_services = true; /* services_drained goes on */
		return;
	}
	after_coord(d);
}

static void services_drained(void *ud)
{
	struct daemon *d = ud;
	d->services_draining = false;
	if (d->after_services)
		after_coord(d);
}

static void after_owner(void *ud)
{
	struct daemon *d = ud;
	d->owner = NULL;
	if (d->console)
		console_set_owner(d->console, NULL);
	if (d->outbound)
		outbound_close(d->outbound, after_outbound, d);
	else
		after_outbound(d);
}

static void finish(struct daemon *d, const char *why)
{
	if (d->finishing)
		return;
	d->finishing = true;
	uv_timer_stop(&d->grace);
	uv_timer_stop(&d->stop_soon);
	write_status(d, "stopped");
	log_kv(LOG_LEVEL_INFO, "daemon", "agent resting", "reason", why);
	/* First: no pause from the page during the shutdown, and it borrows
	 * the pipeline, the decision log and the ledger freed below. */
	dashboard_close(d->dash);
	d->dash = NULL;
	/* The room among them: it leaves (normally it has already, its job
	 * waited for the polite leave) and its claims are withdrawn before
	 * its link goes; the shutdown waits for that below (after_outbound). */
	d->services_draining = true;
	ga_services_quiesce(&d->services, services_drained, d);
	sched_close(d->sched);
	if (d->owner)
		owner_close(d->owner, after_owner, d);
	else
		after_owner(d);
}

static void on_stopped(void *ud)
{
	finish(ud, "all jobs finished");
}

static void on_grace(uv_timer_t *t)
{
	struct daemon *d = t->data;
	log_kv(LOG_LEVEL_WARN, "daemon", "jobs still running after the grace period; stopping",
	       "grace_ms", LOG_INT(SHUTDOWN_GRACE_MS));
	finish(d, "grace period over");
}

static void stop_now(uv_timer_t *t)
{
	struct daemon *d = t->data;
	sched_stop(d->sched, on_stopped, d);
}

static void shutdown_begin(struct daemon *d, const char *why)
{
	if (d->shutting_down)
		return;
	d->shutting_down = true;
	sdnotify_stopping();
	log_kv(LOG_LEVEL_INFO, "daemon", "shutting down", "reason", why);
	terminal_stop(d->term);
	uv_timer_start(&d->grace, on_grace, SHUTDOWN_GRACE_MS, 0);
	/* A shutdown may be asked for from deep inside a callback (the owner
	 * turn that met a refused key is still unwinding); stopping on the
	 * next loop turn keeps every module out of its own teardown. */
	uv_timer_start(&d->stop_soon, stop_now, 0, 0);
}

/* --- reload ------------------------------------------------------------------- */

static void log_self(struct daemon *d, const char *what)
{
	const struct self_mechanics *m = &d->self.mechanics;
	log_kv(LOG_LEVEL_INFO, "identity", what, "name", d->self.name ? d->self.name : "",
	       "max_replies", LOG_INT(m->max_replies_before_exit), "max_depth",
	       LOG_INT(m->max_thread_depth), "silence_ms", LOG_INT(m->silence_threshold_ms),
	       "no_response_ms", LOG_INT(m->no_response_timeout_ms), "skip_low_value",
	       LOG_BOOL(m->skip_low_value_acks), "rituals", LOG_INT(d->self.ritual_count));
	for (int i = 0; i < d->self.warning_count; i++)
		log_kv(LOG_LEVEL_WARN, "identity", "SELF.md", "problem", d->self.warnings[i]);
}

static int load_self(struct daemon *d, struct self_doc *out)
{
	struct ga_err err = {{0}};
	if (self_load(d->home->self_path, out, &err) != 0) {
		log_kv(LOG_LEVEL_ERROR, "identity", "SELF.md unusable; using defaults", "error",
		       err.msg);
		return -1;
	}
	return 0;
}

static void owner_say(void *ud, const char *text);
static void owner_fatal(void *ud, const char *msg);

/* Skills: the agent's own (<home>/skills) override the installed ones;
 * the source tree's come last so a build can run where it was built. */
static int load_skills(struct daemon *d, bool again)
{
	struct ga_err err = {{0}};
	int rc = ga_skills_load(d->home, &d->skills, again, &err);
	if (rc != 0)
		log_kv(LOG_LEVEL_ERROR, "skills",
		       again ? "skills unusable; keeping the loaded ones" : "skills unusable",
		       "error", err.msg);
	else
		log_kv(LOG_LEVEL_INFO, "skills", again ? "skills reloaded" : "skills loaded",
		       "count", LOG_INT(d->skills.n));
	return rc;
}

/* The owner's prompts carry SOUL.md and SELF.md as written. */
static void owner_identity(struct daemon *d)
{
	if (!d->owner)
		return;
	struct ga_err err = {{0}};
	char *self = fsx_read_file(d->home->self_path, SELF_MAX_BYTES, NULL, &err);
	owner_set_identity(d->owner, d->soul.text, self ? self : "");
	free(self);
}

/* The model, when one is configured: an HTTP client on the loop, the
 * OpenAI-compatible client, and the owner conversation on top. */
static void start_model(struct daemon *d)
{
	struct ga_config *cfg = &d->home->cfg;
	struct config_feature f[CONFIG_FEATURE_COUNT];
	config_features(cfg, f);
	if (!f[CONFIG_FEATURE_MODEL].enabled)
		return;
	struct ga_err err = {{0}};
	struct llm_config lc;
	if (llm_config_from_ga(cfg, &lc, &err) != 0) {
		log_kv(LOG_LEVEL_ERROR, "llm", "model not usable", "error", err.msg);
		return;
	}
	if (!d->http) {
		log_kv(LOG_LEVEL_ERROR, "llm", "no HTTP client", "model", "off");
		llm_config_free(&lc);
		return;
	}
	d->llm = llm_client_new(d->http, &lc);
	llm_config_free(&lc);
	struct owner_opts o = {
	        .loop = &d->loop,
	        .llm = d->llm,
	        .budget = &d->budget,
	        .skills = &d->skills,
	        .tools = d->tools,
	        .n_tools = d->n_tools,
	        .bluesky_username = cfg->bsky_username,
	        .owner_handle = cfg->owner_handle,
	        .say = owner_say,
	        .fatal = owner_fatal,
	        .ud = d,
	};
	d->owner = owner_new(&o);
	if (d->console)
		console_set_owner(d->console, d->owner);
	owner_identity(d);
}

/* SELF.md read again: the identity, the gate's Social Mechanics, the
 * owner's prompt. (A reflection that rewrote it calls this through the
 * services' reload_self; SIGHUP does it with the rest.) */
static void reload_self(struct daemon *d)
{
	struct self_doc next;
	if (load_self(d, &next) == 0) {
		self_doc_free(&d->self);
		d->self = next;
		log_self(d, "SELF.md reloaded");
	} else {
		self_doc_free(&next);
	}
	if (d->pipeline) {
		struct gate_config g;
		gate_policy_config(&g, &d->home->cfg, &d->self.mechanics);
		pipeline_set_gate(d->pipeline, &g);
	}
	owner_identity(d);
}

static void svc_reload_self(void *ud)
{
	reload_self(ud);
}

static void reload(struct daemon *d)
{
	log_kv(LOG_LEVEL_INFO, "daemon", "reload requested (SIGHUP)", "env", d->home->env_path);
	struct ga_home fresh;
	char env_error[512];
	int rc = ga_home_load(&fresh, &d->home->opts, env_error, sizeof env_error);
	if (rc < 0) {
		log_kv(LOG_LEVEL_ERROR, "daemon",
		       "reload: .env unreadable; keeping the running "
		       "configuration",
		       "error", env_error);
		ga_home_free(&fresh);
	} else if (rc != 0) {
		for (int i = 0; i < fresh.problems.count; i++)
			log_kv(LOG_LEVEL_ERROR, "config", "reload: invalid setting", "var",
			       fresh.problems.items[i].var, "problem", fresh.problems.items[i].msg);
		log_kv(LOG_LEVEL_ERROR, "daemon",
		       "reload: configuration invalid; keeping the running configuration",
		       "problems", LOG_INT(fresh.problems.count));
		ga_home_free(&fresh);
	} else {
		/* The memory directory and the agent's name are fixed for the
		 * life of the process: the lock and the scheduler's jitter hang
		 * on them. LOG_LEVEL and the token budget take effect now; see
		 * the end of this function for what waits for a restart. */
		if (strcmp(fresh.cfg.memory_dir, d->home->cfg.memory_dir) != 0 ||
		    strcmp(fresh.cfg.agent_name, d->home->cfg.agent_name) != 0)
			log_kv(LOG_LEVEL_WARN, "daemon",
			       "reload: MEMORY_DIR and AGENT_NAME changes need a restart",
			       "running", d->home->cfg.agent_name);
		struct ga_config keep = d->home->cfg;
		char *name = xstrdup(keep.agent_name), *mem = xstrdup(keep.memory_dir);
		d->home->cfg = fresh.cfg;
		free(d->home->cfg.agent_name);
		free(d->home->cfg.memory_dir);
		d->home->cfg.agent_name = name;
		d->home->cfg.memory_dir = mem;
		memset(&fresh.cfg, 0, sizeof fresh.cfg);
		config_free(&keep);
		env_file_free(&d->home->env);
		d->home->env = fresh.env;
		memset(&fresh.env, 0, sizeof fresh.env);
		log_set_level(d->home->cfg.log_level);
		ga_home_free(&fresh);
		log_kv(LOG_LEVEL_INFO, "daemon", "configuration reloaded", "env",
		       d->home->env_path);
	}
	load_skills(d, true);
	reload_self(d);
	/* the room among them: it hears who we are now */
	ga_services_reload(&d->services);
	d->budget.daily_limit = d->home->cfg.llm_daily_token_budget;
	/* The model client, the owner's handles and the room keep the
	 * endpoint, key and names they started with: LLM_*, AI_GATEWAY_*,
	 * AGENT_BLUESKY_USERNAME, OWNER_BLUESKY_SOCIAL_HANDLE, SPACE_URL and
	 * LOG_FORMAT take effect at the next start. */
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct daemon *d = s->data;
	if (signum == SIGHUP)
		reload(d);
	else
		shutdown_begin(d, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* --- owner input ---------------------------------------------------------------- */

/* Tells the room what the agent is doing (thinking while it works for its
 * owner, idle after), so peers and the host can see it is busy. */
static void space_state(struct daemon *d, bool busy, const char *detail)
{
	void *svc;
	const struct ga_room *r = room(d, &svc);
	if (r)
		r->set_busy(svc, busy, detail);
}

/* The console's hooks (modules/owner/console.h). */
static void console_print(void *ud, const char *text)
{
	struct daemon *d = ud;
	terminal_say(d->term, text);
}

static void console_status(void *ud, struct strbuf *out)
{
	struct daemon *d = ud;
	cJSON *s = status_object(d, "running");
	struct ga_err err = {{0}};
	if (status_save(&d->st, s, time_now_ms(), &err) != 0)
		log_kv(LOG_LEVEL_WARN, "daemon", "could not write the status file", "error",
		       err.msg);
	status_console(out, s, time_now_ms());
	cJSON_Delete(s);
}

static int console_set_paused(void *ud, bool paused, struct ga_err *err)
{
	struct daemon *d = ud;
	if (control_save(&d->st, paused, "owner", time_now_ms(), err) != 0)
		return -1;
	control_watch_seen(d->control, paused);
	pipeline_set_paused(d->pipeline, paused);
	dashboard_paused_changed(d->dash, paused);
	return 0;
}

static void console_shutdown(void *ud, const char *why)
{
	shutdown_begin(ud, why);
}

static void console_busy(void *ud, bool busy)
{
	space_state(ud, busy, busy ? "talking with my owner" : NULL);
}

static void on_terminal_line(void *ud, const char *line)
{
	struct daemon *d = ud;
	/* Lines that arrived in the same read as "exit" (or after a signal)
	 * are not acted on: nothing new starts during a shutdown. */
	if (d->shutting_down || !d->console)
		return;
	console_line(d->console, line);
	terminal_prompt(d->term);
}

static void owner_say(void *ud, const char *text)
{
	say(ud, "%s", text);
}

/* The model refused the credentials (401/402/403): nothing the agent does
 * will work until the owner fixes the key, so say which variable and stop
 * with 69 (EX_UNAVAILABLE) instead of retrying forever. Providers echo the
 * refused key in their error text: stop_fatal never prints it unredacted. */
static void owner_fatal(void *ud, const char *msg)
{
	stop_fatal(ud, EXIT_UNAVAILABLE, "the model refused the credentials", msg);
}

/* The owner at a terminal: log lines to memory/daemon.log so they do not
 * land between a question and its answer; warnings and errors are still
 * shown on the terminal (stderr), compactly (LOG_LEVEL=debug: all on
 * stderr). */
static void logs_to_file(struct daemon *d)
{
	const struct ga_config *cfg = &d->home->cfg;
	if (cfg->log_level == LOG_LEVEL_DEBUG)
		return;
	char *path = fsx_join(cfg->memory_dir, DAEMON_LOG_FILE);
	struct ga_err err = {{0}};
	if (log_to_file(path, DAEMON_LOG_MAX_BYTES, &err) == 0) {
		d->log_file = true;
		log_set_echo(stderr, LOG_LEVEL_WARN);
		printf("%s: my log is %s; warnings and errors also show here "
		       "(LOG_LEVEL=debug puts every line here). Type /help.\n",
		       cfg->agent_name, path);
		fflush(stdout);
	} else {
		fprintf(stderr, "general-agent: %s; the log stays on the terminal\n", err.msg);
	}
	free(path);
}

static void logs_restore(struct daemon *d)
{
	if (!d->log_file)
		return;
	log_set_echo(NULL, LOG_LEVEL_WARN);
	log_close_file();
	d->log_file = false;
}

static void start_terminal(struct daemon *d)
{
	if (d->home->opts.no_terminal)
		return;
	struct terminal_handlers h = {.on_line = on_terminal_line, .ud = d};
	d->term = terminal_start(&d->loop, &h);
	if (d->term)
		terminal_prompt(d->term);
}

/* --- the message pipeline ---------------------------------------------------------- */

static void action_notify(void *ud, const char *text)
{
	owner_say(ud, text);
}

static int room_target(void *ud, char *buf, size_t cap)
{
	void *svc;
	const struct ga_room *r = room(ud, &svc);
	return r ? r->target(svc, buf, cap) : -1;
}

static void on_control(void *ud, bool paused)
{
	struct daemon *d = ud;
	pipeline_set_paused(d->pipeline, paused);
	dashboard_paused_changed(d->dash, paused);
	say(d, "%s from outside (general-agent %s)", paused ? "paused" : "resumed",
	    paused ? "pause" : "resume");
	write_status(d, "running");
}

/* The dashboard's status: the status file's object, live. */
static cJSON *dash_status(void *ud)
{
	return status_object(ud, "running");
}

/* A pause or resume from the page (already saved and applied). */
static void dash_paused(void *ud, bool paused)
{
	struct daemon *d = ud;
	control_watch_seen(d->control, paused);
	say(d, "%s from the dashboard", paused ? "paused" : "resumed");
	write_status(d, "running");
}

static void start_dashboard(struct daemon *d)
{
	struct ga_config *cfg = &d->home->cfg;
	if (strcmp(cfg->dashboard_addr, "off") == 0 || !d->pipeline)
		return;
	const char *data = ga_data_dir();
	char *web = fsx_join(data ? data : ".", "web/dashboard");
	struct dashboard_config dc = {.loop = &d->loop,
	                              .addr = cfg->dashboard_addr,
	                              .token = cfg->dashboard_token,
	                              .web_dir = web,
	                              .dlog = d->dlog,
	                              .pipeline = d->pipeline,
	                              .st = &d->st,
	                              .ledger = &d->ledger,
	                              .budget = &d->budget,
	                              .memory_dir = cfg->memory_dir,
	                              .agent_name = cfg->agent_name,
	                              .started_ms = d->started_ms,
	                              .status_json = dash_status,
	                              .on_paused = dash_paused,
	                              .ud = d};
	struct ga_err err = {{0}};
	d->dash = dashboard_new(&dc, &err);
	free(web);
	/* Said to the owner as well as logged: with the default port taken
	 * (another agent on this machine), the page at that address is the
	 * other agent's. */
	if (!d->dash) {
		log_kv(LOG_LEVEL_ERROR, "dashboard", "no dashboard", "error", err.msg);
		say(d,
		    "no dashboard: %s (DASHBOARD_ADDR sets another address, e.g. 127.0.0.1:0 "
		    "for any free port)",
		    err.msg);
	} else {
		log_kv(LOG_LEVEL_INFO, "dashboard", "dashboard on", "url", dashboard_url(d->dash));
		say(d, "my dashboard is %s", dashboard_url(d->dash));
	}
}

/* Decision log, journal, outbound, coordination, pipeline, console. A
 * part that cannot open is logged and left out; the agent still runs (a
 * decision log that cannot be written is not a reason to go silent, a
 * journal that cannot be written means nothing is sent: outbound without
 * a journal is refused below). */
static void start_pipeline(struct daemon *d)
{
	struct ga_config *cfg = &d->home->cfg;
	struct ga_err err = {{0}};
	d->dlog = decision_log_open(cfg->memory_dir, &err);
	if (!d->dlog)
		log_kv(LOG_LEVEL_ERROR, "decisions", "decision log unusable", "error", err.msg);
	err_clear(&err);
	d->journal = journal_open(cfg->memory_dir, &err);
	if (!d->journal)
		log_kv(LOG_LEVEL_ERROR, "journal", "journal unusable: nothing will be sent",
		       "error", err.msg);
	if (d->journal) {
		struct outbound_config oc = {.memory_dir = cfg->memory_dir,
		                             .agent_name = cfg->agent_name,
		                             .journal = d->journal,
		                             .on_decision = pipeline_outbound_decision,
		                             .ud = d->dlog};
		err_clear(&err);
		d->outbound = outbound_new(&d->loop, &oc, &err);
		if (!d->outbound)
			log_kv(LOG_LEVEL_ERROR, "outbound",
			       "outbound unusable: nothing will be sent", "error", err.msg);
	}
	if (cfg->redis_url) {
		err_clear(&err);
		d->coord = coord_new_redis(&d->loop, cfg->redis_url, cfg->agent_name, &err);
		if (!d->coord)
			log_kv(LOG_LEVEL_ERROR, "coord",
			       "REDIS_URL unusable: peer messages will not be answered (fail "
			       "closed)",
			       "error", err.msg);
	} else {
		d->coord = coord_new_local(&d->loop, cfg->agent_name);
	}
	struct control_state cs;
	control_load(&d->st, &cs);
	if (cs.paused)
		log_kv(LOG_LEVEL_WARN, "control",
		       "starting paused: answering only /resume and /status", "by", cs.by);
	struct pipeline_config pc = {.loop = &d->loop,
	                             .st = &d->st,
	                             .dlog = d->dlog,
	                             .outbound = d->outbound,
	                             .coord = cfg->redis_url ? d->coord : NULL,
	                             .paused = cs.paused};
	gate_policy_config(&pc.gate, cfg, &d->self.mechanics);
	err_clear(&err);
	d->pipeline = pipeline_new(&pc, &err);
	if (!d->pipeline) {
		log_kv(LOG_LEVEL_ERROR, "pipeline", "no message pipeline", "error", err.msg);
		return;
	}
	/* Without REDIS_URL, agents sharing a room coordinate through its
	 * claims (set when the room starts); alone, in-process. */
	if (!cfg->redis_url)
		pipeline_set_coord(d->pipeline, d->coord);
	d->control = control_watch_start(&d->loop, &d->st, cs.paused, on_control, d);
	start_dashboard(d);
	d->actions = (struct pipeline_actions){.pipeline = d->pipeline,
	                                       .ledger = &d->ledger,
	                                       .outbound = d->outbound,
	                                       .room_target = room_target,
	                                       .notify = action_notify,
	                                       .ud = d};
	d->sink = (struct tools_sink){.enqueue = pipeline_actions_enqueue,
	                              .ud = &d->actions,
	                              .call = pipeline_actions_call};
	unsigned caps = tools_agent_caps(d->home->opts.social_only) | TOOLS_CAP_OWNER;
	d->n_tools = tools_select(TOOLS_MODE_OWNER, caps, &d->sink, d->tools, TOOLS_MAX);
	struct console_opts co = {.pipeline = d->pipeline,
	                          .agent_name = cfg->agent_name,
	                          .print = console_print,
	                          .status = console_status,
	                          .set_paused = console_set_paused,
	                          .shutdown = console_shutdown,
	                          .busy = console_busy,
	                          .ud = d};
	err_clear(&err);
	d->console = console_new(&co, &err);
	if (!d->console)
		log_kv(LOG_LEVEL_ERROR, "owner", "no owner console", "error", err.msg);
}

/* --- platform services (cmd/services.h) ---------------------------------------- */

static void svc_notify(void *ud, const char *text)
{
	owner_say(ud, text);
}

static void svc_fatal(void *ud, int exit_code, const char *text)
{
	stop_fatal(ud, exit_code, "a service cannot go on", text);
}

static int svc_room_reflection(void *ud, const char *summary)
{
	void *svc;
	const struct ga_room *r = room(ud, &svc);
	return r ? r->reflection(svc, summary) : -1;
}

static int svc_room_workspace_state(void *ud, const cJSON *state)
{
	void *svc;
	const struct ga_room *r = room(ud, &svc);
	return r ? r->workspace_state(svc, state) : -1;
}

static int svc_room_identity(void *ud)
{
	void *svc;
	const struct ga_room *r = room(ud, &svc);
	return r ? r->identity(svc) : -1;
}

static void svc_commitment_abandoned(void *ud, const char *id, const char *source)
{
	void *svc;
	const struct ga_room *r = room(ud, &svc);
	if (r)
		r->commitment_abandoned(svc, id, source);
}

static bool svc_peer_done(void *ud, const char *action, const char *target, char *who,
                          size_t who_cap, char *link, size_t link_cap)
{
	void *svc;
	const struct ga_room *r = room(ud, &svc);
	return r && r->peer_done(svc, action, target, who, who_cap, link, link_cap);
}

static size_t svc_room_logins(void *ud, const char **out, size_t cap)
{
	void *svc;
	const struct ga_room *r = room(ud, &svc);
	return r ? r->peer_logins(svc, out, cap) : 0;
}

static const char *svc_env(void *ud, const char *name)
{
	struct daemon *d = ud;
	return env_lookup(&d->home->env, name);
}

static void svc_route_actions(void *ud,
                              int (*route)(void *route_ud, const char *action, const cJSON *params,
                                           struct compose_call *call),
                              void *route_ud)
{
	struct daemon *d = ud;
	d->actions.route = route;
	d->actions.route_ud = route_ud;
}

static void svc_offer_workspaces(void *ud, struct wsp *ws)
{
	struct daemon *d = ud;
	d->wsp = ws;
}

static struct wsp *svc_workspaces(void *ud)
{
	struct daemon *d = ud;
	return d->wsp;
}

static void svc_offer_ghconv(void *ud, struct ghconv *g)
{
	struct daemon *d = ud;
	d->ghconv = g;
}

static struct ghconv *svc_ghconv(void *ud)
{
	struct daemon *d = ud;
	return d->ghconv;
}

static void svc_offer_bsky(void *ud, struct bsky *b)
{
	struct daemon *d = ud;
	d->bsky = b;
}

static struct bsky *svc_bsky(void *ud)
{
	struct daemon *d = ud;
	return d->bsky;
}

static struct coord *svc_coord(void *ud)
{
	return peer_coord(ud);
}

static void start_services(struct daemon *d)
{
	struct config_feature f[CONFIG_FEATURE_COUNT];
	config_features(&d->home->cfg, f);
	if (f[CONFIG_FEATURE_GITHUB].enabled && !d->home->opts.social_only && d->http) {
		struct gh_config gc;
		struct ga_err err = {{0}};
		if (gh_config_from_ga(&d->home->cfg, &gc, &err) == 0) {
			d->github = gh_client_new(d->http, &gc);
			gh_config_free(&gc);
		} else {
			log_kv(LOG_LEVEL_ERROR, "github", "GitHub not usable", "error", err.msg);
		}
	}
	struct ga_svc_ctx ctx = {.loop = &d->loop,
	                         .cfg = &d->home->cfg,
	                         .social_only = d->home->opts.social_only,
	                         .st = &d->st,
	                         .sched = d->sched,
	                         .http = d->http,
	                         .llm = d->llm,
	                         .github = d->github,
	                         .budget = &d->budget,
	                         .skills = &d->skills,
	                         .ledger = d->ledger.path ? &d->ledger : NULL,
	                         .journal = d->journal,
	                         .outbound = d->outbound,
	                         .pipeline = d->pipeline,
	                         .dlog = d->dlog,
	                         .self = &d->self,
	                         .soul_text = d->soul.text,
	                         .self_path = d->home->self_path,
	                         .soul_path = d->home->soul_path,
	                         .version = GA_VERSION,
	                         .room_target = room_target,
	                         .coord = svc_coord,
	                         .reload_self = svc_reload_self,
	                         .env = svc_env,
	                         .env_file = &d->home->env,
	                         .route_actions = svc_route_actions,
	                         .offer_workspaces = svc_offer_workspaces,
	                         .workspaces = svc_workspaces,
	                         .offer_ghconv = svc_offer_ghconv,
	                         .ghconv = svc_ghconv,
	                         .offer_bsky = svc_offer_bsky,
	                         .bsky = svc_bsky,
	                         .room_reflection = svc_room_reflection,
	                         .room_workspace_state = svc_room_workspace_state,
	                         .room_identity = svc_room_identity,
	                         .commitment_abandoned = svc_commitment_abandoned,
	                         .peer_done = svc_peer_done,
	                         .room_logins = svc_room_logins,
	                         .notify_owner = svc_notify,
	                         .fatal = svc_fatal,
	                         .ud = d};
	ga_services_start(&d->services, &ctx);
}

/* --- jobs --------------------------------------------------------------------- */

static void heartbeat(void *ud, struct sched_job *job)
{
	struct daemon *d = ud;
	log_kv(LOG_LEVEL_INFO, "daemon", "ready and listening", "agent", d->home->cfg.agent_name);
	/* systemd Type=notify: ready once the loop runs (repeated each
	 * heartbeat: harmless). */
	sdnotify_ready();
	write_status(d, "running");
	sched_job_done(job);
}

static void status_job(void *ud, struct sched_job *job)
{
	write_status(ud, "running");
	sched_job_done(job);
}

static void exit_when_idle(void *ud, struct sched_job *job)
{
	sched_job_done(job);
	shutdown_begin(ud, "GA_EXIT_WHEN_IDLE");
}

/* --- start -------------------------------------------------------------------- */

static void report_features(struct daemon *d)
{
	struct config_feature f[CONFIG_FEATURE_COUNT];
	config_features(&d->home->cfg, f);
	/* A feature not configured is a choice, not a warning (the owner's
	 * terminal shows warnings). */
	for (int i = 0; i < CONFIG_FEATURE_COUNT; i++)
		log_kv(LOG_LEVEL_INFO, "daemon", f[i].enabled ? "feature on" : "feature off",
		       "feature", f[i].name, "detail", f[i].detail);
	/* What doctor calls warnings (an unknown .env variable, with the name
	 * it probably meant) is said at every start too. */
	for (int i = 0; i < d->home->problems.nwarnings; i++)
		log_kv(LOG_LEVEL_WARN, "config", d->home->problems.warnings[i].msg, "var",
		       d->home->problems.warnings[i].var);
	if (d->home->opts.social_only)
		log_kv(LOG_LEVEL_INFO, "daemon", "social-only mode", "github", "off by flag");
	if (d->home->env_missing)
		log_kv(LOG_LEVEL_INFO, "daemon", "no .env file; using the environment only",
		       "looked_for", d->home->env_path);
	char why[300];
	enum coord_choice ch =
	        coord_choose(d->home->cfg.redis_url, d->home->cfg.space_url, why, sizeof why);
	log_kv(ch == COORD_CHOICE_ALONE ? LOG_LEVEL_WARN : LOG_LEVEL_INFO, "daemon", "coordination",
	       "backend", why, "url", d->home->cfg.redis_url ? d->home->cfg.redis_url : "");
}

int ga_cmd_daemon(struct ga_home *h)
{
	struct daemon d = {0};
	d.home = h;
	d.lock_fd = -1;
	d.started_ms = time_now_ms();
	const char *ewi = getenv("GA_EXIT_WHEN_IDLE");
	d.exit_when_idle = ewi && strcmp(ewi, "1") == 0;

	if (h->problems.count) {
		for (int i = 0; i < h->problems.count; i++) {
			char *safe = log_redact(h->problems.items[i].msg);
			fprintf(stderr, "general-agent: %s\n", safe);
			free(safe);
		}
		return EXIT_CONFIG;
	}
	/* No SOUL.md and no memory yet: refused before anything is written
	 * (no memory/ made in a directory that is not an agent's home yet).
	 * With a memory, soul_check below also says whether one was pinned. */
	if (!fsx_exists(h->soul_path) && !fsx_exists(h->cfg.memory_dir)) {
		struct soul_check sc;
		soul_check(h->soul_path, NULL, d.started_ms, SOUL_CHECK_READONLY, NULL, &sc);
		fprintf(stderr, "general-agent: %s\n", sc.message);
		const char *data = ga_data_dir();
		if (data)
			fprintf(stderr, "general-agent: an example to start from: %s/SOUL.md\n",
			        data);
		return EXIT_CONFIG;
	}
	struct ga_err err = {{0}};
	if (state_store_init(&d.st, h->cfg.memory_dir, GA_VERSION, &err) != 0) {
		/* Not allowed is not broken: 77, so a service manager does not
		 * take it for a configuration typo or a rival daemon. */
		if (state_errno_denied(errno)) {
			fprintf(stderr, "general-agent: %s\n", err.msg);
			return EXIT_NOPERM;
		}
		fprintf(stderr, "general-agent: memory directory unusable: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	int holder = 0;
	errno = 0;
	d.lock_fd = ga_lock_acquire(h->cfg.memory_dir, &holder);
	if (d.lock_fd < 0) {
		int e = errno;
		int rc = EXIT_TEMPFAIL;
		if (holder) {
			fprintf(stderr,
			        "general-agent: another general-agent (pid %d) is running with the "
			        "memory directory %s; two daemons on one memory would post twice\n",
			        holder, h->cfg.memory_dir);
		} else if (state_errno_denied(e)) {
			fprintf(stderr,
			        "general-agent: cannot open the lock %s/daemon.lock: %s (this "
			        "process runs as uid %ld; the memory directory and its files must "
			        "be readable and writable by it)\n",
			        h->cfg.memory_dir, strerror(e), (long)geteuid());
			rc = EXIT_NOPERM;
		} else {
			fprintf(stderr, "general-agent: cannot lock %s/daemon.lock: %s\n",
			        h->cfg.memory_dir, strerror(e));
		}
		state_store_free(&d.st);
		return rc;
	}

	/* Before the first log line: the owner at a terminal reads answers,
	 * not logs. */
	if (!h->opts.no_terminal && uv_guess_handle(0) == UV_TTY)
		logs_to_file(&d);

	struct soul_check sc;
	if (soul_check(h->soul_path, &d.st, d.started_ms, SOUL_CHECK_PIN_FIRST, &d.soul, &sc) !=
	    0) {
		fprintf(stderr, "general-agent: %s\n", sc.message);
		logs_restore(&d);
		close(d.lock_fd);
		state_store_free(&d.st);
		return sc.status == SOUL_DENIED ? EXIT_NOPERM : EXIT_CONFIG;
	}
	bool created = false;
	if (self_ensure(h->self_path, h->self_template, h->cfg.agent_name, d.started_ms, &created,
	                &err) != 0)
		log_kv(LOG_LEVEL_WARN, "identity", "could not write SELF.md", "error", err.msg);
	load_self(&d, &d.self);
	load_skills(&d, false);
	if (ledger_open(&d.ledger, h->cfg.memory_dir, &err) != 0)
		log_kv(LOG_LEVEL_ERROR, "commitments", "commitment ledger unreadable", "error",
		       err.msg);
	budget_init(&d.budget, &d.st, h->cfg.llm_daily_token_budget);

	uv_loop_init(&d.loop);
	d.sched = sched_new(&d.loop, h->cfg.agent_name);
	uv_timer_init(&d.loop, &d.grace);
	d.grace.data = &d;
	uv_timer_init(&d.loop, &d.stop_soon);
	d.stop_soon.data = &d;
	uv_signal_t *sigs[] = {&d.sig_int, &d.sig_term, &d.sig_hup};
	int nums[] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++) {
		uv_signal_init(&d.loop, sigs[i]);
		sigs[i]->data = &d;
		uv_signal_start(sigs[i], on_signal, nums[i]);
	}
	/* A stop that arrived while the memory was loaded is handled by the
	 * loop's first turn (on_signal), so it is a clean stop, not exit 143. */
	ga_release_stop_signals();
	signal(SIGPIPE, SIG_IGN);

	log_kv(LOG_LEVEL_INFO, "daemon", "starting", "agent", h->cfg.agent_name, "version",
	       GA_VERSION, "home", h->cfg.home, "memory", h->cfg.memory_dir, "soul",
	       soul_status_name(sc.status));
	log_self(&d, created ? "SELF.md created" : "SELF.md loaded");
	report_features(&d);

	sched_add(d.sched, &(struct sched_job_opts){.name = "heartbeat",
	                                            .interval_ms = HEARTBEAT_INTERVAL_MS,
	                                            .jitter_pct = HEARTBEAT_JITTER,
	                                            .first_delay_ms = 0,
	                                            .run = heartbeat,
	                                            .ud = &d});
	sched_add(d.sched, &(struct sched_job_opts){.name = "status",
	                                            .interval_ms = STATUS_INTERVAL_MS,
	                                            .first_delay_ms = STATUS_INTERVAL_MS,
	                                            .run = status_job,
	                                            .ud = &d});
	if (d.exit_when_idle)
		sched_add(d.sched, &(struct sched_job_opts){.name = "exit-when-idle",
		                                            .first_delay_ms = 0,
		                                            .run = exit_when_idle,
		                                            .ud = &d});
	/* One HTTP client for the model, GitHub and Bluesky; none (and no
	 * TLS library initialised) when none of them is configured. */
	struct config_feature feat[CONFIG_FEATURE_COUNT];
	config_features(&h->cfg, feat);
	if (feat[CONFIG_FEATURE_MODEL].enabled || feat[CONFIG_FEATURE_GITHUB].enabled ||
	    feat[CONFIG_FEATURE_BLUESKY].enabled) {
		d.http = http_client_new(&d.loop, NULL, &err);
		if (!d.http)
			log_kv(LOG_LEVEL_ERROR, "daemon",
			       "no HTTP client: no model, GitHub or Bluesky", "error", err.msg);
	}
	start_pipeline(&d);
	start_model(&d);
	start_services(&d);
	/* After the services added their ports: an intent left by a crash is
	 * asked about on the platform that owns it. */
	if (d.outbound)
		outbound_reconcile_pending(d.outbound);
	start_terminal(&d);

	uv_run(&d.loop, UV_RUN_DEFAULT);
	int rc = uv_loop_close(&d.loop);
	if (rc != 0)
		log_kv(LOG_LEVEL_WARN, "daemon", "loop closed with handles open", "error",
		       uv_strerror(rc));
	sched_free(d.sched);
	soul_free(&d.soul);
	self_doc_free(&d.self);
	skills_free(&d.skills);
	ledger_close(&d.ledger);
	state_store_free(&d.st);
	close(d.lock_fd);
	logs_restore(&d);
	return d.exit_code;
}
