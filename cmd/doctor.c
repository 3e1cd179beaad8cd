/*
 * doctor, status, soul — the commands a person runs to see what the agent
 * would do, is doing, and who it is.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "adapters/github/github.h"
#include "adapters/http/http.h"
#include "adapters/llm/llm.h"
#include "cmd/cli.h"
#include "common/fsx.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "modules/budget/budget.h"
#include "modules/coder/coder.h"
#include "modules/coord/coord.h"
#include "modules/doctor/room.h"
#include "modules/identity/self.h"
#include "modules/identity/soul.h"
#include "modules/pipeline/control.h"
#include "modules/status/status.h"

#define DOCTOR_PROBE_TIMEOUT_MS 15000
/* The room is local (loopback or the LAN): it answers at once or not at all. */
#define DOCTOR_ROOM_TIMEOUT_MS 3000

static void row(const char *what, const char *verdict, const char *detail)
{
	printf("  %-12s %-4s %s\n", what, verdict, detail);
}

static void coder_row(void *ud, const char *what, const char *verdict, const char *detail)
{
	(void)ud;
	row(what, verdict, detail);
}

/* --- one cheap GitHub call (GET /user): the token, the login, the budget -------- */

struct gh_probe {
	uv_loop_t *loop;
	bool done;
	enum gh_error_kind kind;
	char msg[GA_ERR_MSG_MAX];
	char login[128];
};

static void gh_probe_done(void *ud, const struct gh_result *r)
{
	struct gh_probe *p = ud;
	p->done = true;
	p->kind = r->kind;
	snprintf(p->msg, sizeof p->msg, "%s", r->msg);
	snprintf(p->login, sizeof p->login, "%s",
	         r->json ? json_string_or(r->json, "login", "") : "");
	uv_stop(p->loop);
}

static void gh_probe_timeout(uv_timer_t *t)
{
	uv_stop(t->loop);
}

/* 1 ok (buf: the login and the rate budget), 0 a warning, -1 the token is
 * refused (the daemon would exit 69). */
static int github_probe(const struct ga_config *cfg, char *buf, size_t cap)
{
	uv_loop_t loop;
	if (uv_loop_init(&loop) != 0) {
		snprintf(buf, cap, "cannot create an event loop");
		return 0;
	}
	struct ga_err err = {{0}};
	struct gh_config gc;
	struct http_client *http = http_client_new(&loop, NULL, &err);
	if (!http || gh_config_from_ga(cfg, &gc, &err) != 0) {
		snprintf(buf, cap, "%s", err.msg);
		if (http)
			http_client_close(http);
		uv_run(&loop, UV_RUN_DEFAULT);
		uv_loop_close(&loop);
		return 0;
	}
	gc.max_retries = 0;
	gc.timeout_ms = DOCTOR_PROBE_TIMEOUT_MS;
	struct gh_client *c = gh_client_new(http, &gc);
	struct gh_probe p = {.loop = &loop};
	uv_timer_t guard;
	uv_timer_init(&loop, &guard);
	int rc = 0;
	if (gh_user_get(c, gh_probe_done, &p, &err) == 0) {
		snprintf(buf, cap, "%s", err.msg);
	} else {
		uv_timer_start(&guard, gh_probe_timeout, DOCTOR_PROBE_TIMEOUT_MS + 5000, 0);
		uv_run(&loop, UV_RUN_DEFAULT);
		struct gh_bucket b;
		if (!p.done) {
			snprintf(buf, cap, "no answer from %s within %d s", gc.api_url,
			         DOCTOR_PROBE_TIMEOUT_MS / 1000);
		} else if (p.kind == GH_OK) {
			rc = 1;
			char reset[TIME_ISO_LEN + 1] = "?";
			if (gh_rate_snapshot(c, "core", &b) == 0 && b.reset_ms)
				time_format_iso(b.reset_ms, reset);
			if (gh_rate_snapshot(c, "core", &b) == 0 && b.remaining >= 0)
				snprintf(buf, cap,
				         "%s: logged in as %s; %lld of %lld requests left until %s",
				         gc.api_url, p.login[0] ? p.login : "?",
				         (long long)b.remaining, (long long)b.limit, reset);
			else
				snprintf(buf, cap, "%s: logged in as %s", gc.api_url,
				         p.login[0] ? p.login : "?");
			if (cfg->github_username && p.login[0] &&
			    strcasecmp(cfg->github_username, p.login) != 0) {
				size_t n = strlen(buf);
				snprintf(buf + n, cap - n,
				         " — but AGENT_GITHUB_USERNAME is %s: the token is another "
				         "account's",
				         cfg->github_username);
				rc = 0;
			}
		} else {
			rc = gh_error_is_fatal(p.kind) ? -1 : 0;
			snprintf(buf, cap, "%s", p.msg);
		}
	}
	uv_timer_stop(&guard);
	uv_close((uv_handle_t *)&guard, NULL);
	gh_client_free(c);
	http_client_close(http);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	gh_config_free(&gc);
	return rc;
}

/* The configuration variables a feature row speaks for: a problem with one
 * of them makes that row FAIL too, instead of describing the feature as if
 * the variable were unset or fine. */
static bool feature_owns(int feature, const char *var, const char *detail)
{
	static const char *const prefixes[CONFIG_FEATURE_COUNT][4] = {
	        [CONFIG_FEATURE_MODEL] = {"LLM_", "AI_GATEWAY", NULL},
	        [CONFIG_FEATURE_BLUESKY] = {"AGENT_BLUESKY", "BLUESKY", NULL},
	        [CONFIG_FEATURE_GITHUB] = {"AGENT_GITHUB", "GITHUB", NULL},
	        [CONFIG_FEATURE_SPACE] = {"SPACE_", "GA_SPACE_", NULL},
	        [CONFIG_FEATURE_OWNER] = {"OWNER_", NULL},
	};
	if (!var[0])
		return false;
	if (strstr(detail, var))
		return true;
	for (int i = 0; prefixes[feature][i]; i++)
		if (strncmp(var, prefixes[feature][i], strlen(prefixes[feature][i])) == 0)
			return true;
	return false;
}

/* A configured service that did not answer: named in the verdict. */
static void note_down(char *down, size_t cap, const char *what)
{
	size_t n = strlen(down);
	snprintf(down + n, cap - n, "%s%s", n ? ", " : "", what);
}

int ga_cmd_doctor(struct ga_home *h)
{
	int can_start = 1;
	char down[200] = ""; /* configured, but not answering */
	char buf[1200];
	printf("general-agent %s doctor\n", GA_VERSION);
	printf("  home         %s\n", h->cfg.home);

	if (h->problems.count == 0) {
		snprintf(buf, sizeof buf, "%s%s", h->env_path,
		         h->env_missing ? " (not found; environment only)" : "");
		row("config", "ok", buf);
	} else {
		can_start = 0;
		for (int i = 0; i < h->problems.count; i++)
			row("config", "FAIL", h->problems.items[i].msg);
	}
	for (int i = 0; i < h->problems.nwarnings; i++)
		row("config", "warn", h->problems.warnings[i].msg);

	/* The memory directory as the daemon will use it: readable, writable,
	 * enterable by this user (state_store_init checks; errno says whether
	 * it is a matter of permission, exit 77 for the daemon). */
	struct state_store st = {0};
	struct ga_err err = {{0}};
	int have_store = state_store_init(&st, h->cfg.memory_dir, GA_VERSION, &err) == 0;
	char *lock = fsx_join(h->cfg.memory_dir, "daemon.lock");
	bool lock_denied = have_store && fsx_exists(lock) && access(lock, R_OK | W_OK) != 0;
	if (have_store && !lock_denied) {
		row("memory", "ok", h->cfg.memory_dir);
	} else {
		can_start = 0;
		if (lock_denied)
			snprintf(err.msg, sizeof err.msg,
			         "%s: %s (this process runs as uid %ld; the daemon would exit 77)",
			         lock, strerror(errno), (long)geteuid());
		row("memory", "FAIL", err.msg);
	}
	free(lock);

	struct soul_check sc;
	if (!have_store) {
		/* SOUL.md alone, without claims about a pin nobody can read. */
		if (soul_check(h->soul_path, NULL, time_now_ms(), SOUL_CHECK_READONLY, NULL, &sc) ==
		    0) {
			snprintf(buf, sizeof buf,
			         "%s is readable; its pin cannot be checked until the memory "
			         "directory is usable",
			         h->soul_path);
			row("SOUL.md", "?", buf);
		} else {
			row("SOUL.md", "FAIL", sc.message);
		}
	} else if (soul_check(h->soul_path, &st, time_now_ms(), SOUL_CHECK_READONLY, NULL, &sc) ==
	           0) {
		if (sc.pinned_sha256[0])
			snprintf(buf, sizeof buf, "%s, pinned %s (sha256 %.12s…)", h->soul_path,
			         sc.pinned_at, sc.pinned_sha256);
		else
			snprintf(buf, sizeof buf, "%s, not pinned yet (pinned at first start)",
			         h->soul_path);
		row("SOUL.md", "ok", buf);
	} else {
		can_start = 0;
		row("SOUL.md", "FAIL", sc.message);
	}

	struct self_doc self;
	if (!fsx_exists(h->self_path)) {
		snprintf(buf, sizeof buf, "%s missing; %s", h->self_path,
		         h->self_template ? "it will be written from the template at first start"
		                          : "no SELF.md.template either: the agent runs with an "
		                            "empty self-description");
		row("SELF.md", "note", buf);
	} else if (self_load(h->self_path, &self, &err) != 0) {
		snprintf(buf, sizeof buf, "%s: %s (defaults will be used)", h->self_path, err.msg);
		row("SELF.md", "warn", buf);
		self_doc_free(&self);
	} else {
		snprintf(buf, sizeof buf,
		         "%s: %zu values, %zu rituals, replies/thread %d, depth %d, %d warning(s)",
		         h->self_path, self.values.count, self.ritual_count,
		         self.mechanics.max_replies_before_exit, self.mechanics.max_thread_depth,
		         self.warning_count);
		row("SELF.md", self.warning_count ? "warn" : "ok", buf);
		for (int i = 0; i < self.warning_count; i++)
			row("", "", self.warnings[i]);
		self_doc_free(&self);
	}

	/* The skills the daemon will load: a broken SKILL.md shows here, not
	 * at the first conversation. */
	struct skills sk;
	if (ga_skills_load(h, &sk, false, &err) == 0) {
		snprintf(buf, sizeof buf, "%zu loaded (<home>/skills, then the shipped ones)",
		         sk.n);
		row("skills", sk.n ? "ok" : "warn", buf);
		skills_free(&sk);
	} else {
		row("skills", "FAIL", err.msg);
		can_start = 0;
	}

	struct config_feature f[CONFIG_FEATURE_COUNT];
	config_features(&h->cfg, f);
	for (int i = 0; i < CONFIG_FEATURE_COUNT; i++) {
		const char *bad = NULL;
		for (int k = 0; k < h->problems.count && !bad; k++)
			if (feature_owns(i, h->problems.items[k].var, f[i].detail))
				bad = h->problems.items[k].var;
		if (bad) {
			snprintf(buf, sizeof buf, "%s is invalid (see config FAIL above)", bad);
			row(f[i].name, "FAIL", buf);
		} else {
			row(f[i].name, f[i].enabled ? "on" : "off", f[i].detail);
		}
	}
	if (h->opts.social_only)
		row("mode", "", "--social-only: GitHub work is off");
	/* Where peers' claims go (modules/coord: the choice and its words). */
	if (coord_choose(h->cfg.redis_url, h->cfg.space_url, buf, sizeof buf) == COORD_CHOICE_ALONE)
		row("coordination", "note", buf);
	else
		row("coordination", "ok", buf);

	/* One cheap request to the model endpoint: a wrong key, URL or model
	 * name shows up here instead of at the first conversation. */
	if (f[CONFIG_FEATURE_MODEL].enabled && h->problems.count == 0) {
		struct llm_config lc;
		struct llm_probe_result pr;
		if (llm_config_from_ga(&h->cfg, &lc, &err) != 0) {
			row("model call", "FAIL", err.msg);
			can_start = 0;
		} else {
			if (llm_probe(&lc, DOCTOR_PROBE_TIMEOUT_MS, &pr) == 0) {
				snprintf(buf, sizeof buf, "%s answered in %llu ms (model %s)",
				         lc.base_url, (unsigned long long)pr.elapsed_ms,
				         pr.model[0] ? pr.model : lc.model);
				row("model call", "ok", buf);
			} else if (pr.error.kind == LLM_ERR_FATAL) {
				/* The daemon would exit 69 at its first model call. */
				row("model call", "FAIL", pr.error.msg);
				can_start = 0;
			} else {
				row("model call", "warn", pr.error.msg);
				note_down(down, sizeof down, "the model");
			}
			llm_config_free(&lc);
		}
	}
	/* The GitHub token, the same way: a refused token shows here. */
	if (f[CONFIG_FEATURE_GITHUB].enabled && h->problems.count == 0 && !h->opts.social_only) {
		int g = github_probe(&h->cfg, buf, sizeof buf);
		row("github call", g > 0 ? "ok" : g < 0 ? "FAIL" : "warn", buf);
		if (g < 0)
			can_start = 0;
		else if (g == 0)
			note_down(down, sizeof down, "GitHub");
	}
	/* The room, found as the daemon finds it. A SPACE_URL that does not
	 * answer is a service down; without one, a room not found yet is the
	 * daemon's to keep looking for. */
	if (h->problems.count == 0) {
		bool named = h->cfg.space_url && *h->cfg.space_url;
		enum log_level lvl = log_get_level();
		log_set_level(LOG_LEVEL_WARN); /* the discovery's steps are the row's detail */
		int up = doctor_room_probe(&h->cfg, DOCTOR_ROOM_TIMEOUT_MS, buf, sizeof buf);
		log_set_level(lvl);
		if (up) {
			row("room", "ok", buf);
		} else if (named) {
			row("room", "warn", buf);
			note_down(down, sizeof down, "the room");
		} else {
			row("room", "note", buf);
		}
	}
	/* The coder and its sandbox (a coder that cannot run stops task work,
	 * not the daemon). */
	if (!h->opts.social_only)
		coder_doctor(&h->env, h->cfg.home, h->cfg.memory_dir, coder_row, NULL);
	if (have_store) {
		budget_status_from_store(&st, h->cfg.llm_daily_token_budget, time_now_ms(), buf,
		                         sizeof buf);
		row("tokens", "", buf);
	}

	/* A running daemon is not a reason the daemon "cannot start": it has
	 * started. Say so, with what it reports, and judge the rest. */
	int pid = 0;
	bool running = have_store && !lock_denied && ga_lock_probe(h->cfg.memory_dir, &pid);
	if (!have_store || lock_denied) {
		/* Whether a daemon runs is in the lock, which this user cannot
		 * read: say so, never "not running". */
		row("daemon", "?",
		    "cannot tell whether a daemon runs: its lock in the memory directory cannot "
		    "be read by this user");
	} else if (running) {
		cJSON *s = status_load(&st);
		const char *space = s ? json_string_or(s, "space", NULL) : NULL;
		snprintf(buf, sizeof buf, "running, pid %d, since %s%s%s%s", pid,
		         s ? json_string_or(s, "startedAt", "?") : "?",
		         s && json_bool_or(s, "paused", false) ? ", PAUSED" : "",
		         space ? "; space: " : "", space ? space : "");
		row("daemon", "ok", buf);
		cJSON_Delete(s);
	} else {
		row("daemon", "ok", "not running");
	}
	state_store_free(&st);

	/* 0 ready, 1 cannot start, 2 can start but something configured is
	 * down (the daemon would run without it and retry). */
	if (!can_start)
		printf("%s\n", running ? "verdict: the daemon is running, but a restart would fail "
		                         "(see FAIL above)"
		                       : "verdict: the daemon cannot start (see FAIL above)");
	else if (down[0])
		printf("verdict: the daemon %s, but %s did not answer (see warn above)\n",
		       running ? "is running" : "can start", down);
	else
		printf("%s\n", running ? "verdict: the daemon is running and everything configured "
		                         "answers"
		                       : "verdict: the daemon can start and everything configured "
		                         "answers (ready)");
	return !can_start ? 1 : down[0] ? 2 : 0;
}

int ga_cmd_status(struct ga_home *h)
{
	struct state_store st;
	struct ga_err err = {{0}};
	if (state_store_init(&st, h->cfg.memory_dir, GA_VERSION, &err) != 0) {
		fprintf(stderr, "general-agent status: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	int pid = 0;
	int running = ga_lock_probe(h->cfg.memory_dir, &pid);
	cJSON *s = status_load(&st);
	char tokens[300];
	budget_status_from_store(&st, h->cfg.llm_daily_token_budget, time_now_ms(), tokens,
	                         sizeof tokens);
	struct control_state cs;
	control_load(&st, &cs);
	state_store_free(&st);
	status_report(stdout, running, pid, h->cfg.memory_dir, s, tokens, &cs, time_now_ms());
	cJSON_Delete(s);
	/* LSB: 3 = program is not running. */
	return running ? 0 : 3;
}

int ga_cmd_soul(struct ga_home *h, bool accept)
{
	struct state_store st;
	struct ga_err err = {{0}};
	if (state_store_init(&st, h->cfg.memory_dir, GA_VERSION, &err) != 0) {
		fprintf(stderr, "general-agent soul: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	struct soul_check sc;
	struct soul s = {0};
	int rc = soul_check(h->soul_path, &st, time_now_ms(),
	                    accept ? SOUL_CHECK_ACCEPT : SOUL_CHECK_READONLY, &s, &sc);
	state_store_free(&st);
	if (rc != 0) {
		fprintf(stderr, "general-agent soul: %s\n", sc.message);
		return EXIT_CONFIG;
	}
	char essence[600];
	soul_essence(s.text, 3, essence, sizeof essence);
	if (accept)
		printf("SOUL.md pinned: sha256 %s\n", s.sha256);
	else if (sc.pinned_sha256[0])
		printf("SOUL.md matches its pin from %s: sha256 %s\n", sc.pinned_at, s.sha256);
	else
		printf("SOUL.md is not pinned yet (the daemon pins it at first start): sha256 %s\n",
		       s.sha256);
	printf("essence: %s\n", essence);
	soul_free(&s);
	return 0;
}
