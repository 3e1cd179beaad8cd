/*
 * bench-idle-tokens — how many model tokens an agent spends while nothing
 * happens. Target: 0: idle heartbeats that call a model cost real money.
 *
 * Idle: nobody talks to the agent and it has nothing of its own to say.
 * The agent is configured with a name and a model only — no Bluesky
 * account, so Bluesky's expression posts and ritual openings, which call
 * the model on a schedule to speak on their own (bounded: ≤ 12 expressions
 * and one opening per ritual a day), do not run; no GitHub token; the room
 * at a closed port. README.md says what each scheduled caller spends.
 *
 * 1. 24 simulated hours of the reflection schedule. The daemon's scheduler
 *    runs on libuv timers in real time and has no fake clock, so 24 hours
 *    through the real binary would take 24 hours. Instead the reflection
 *    module (modules/reflection) — the only job that could call the model
 *    on a timer in this configuration — is driven with an injected clock: one reflection_tick per
 *    scheduler interval (REFLECT_CHECK_MS with the scheduler's own jitter,
 *    sched_jitter_interval) across 24 h, with the real model client against
 *    the LLM fake, the real skills, state store and budget. Idle: no
 *    experience → every model request counted must be 0.
 * 2. A control run over the same 24 h in which the owner says one thing at
 *    hour 3: the same harness must see that reflection spend tokens (so a
 *    0 above means "nothing was spent", not "nothing could be seen").
 * 3. The real general-agent daemon, with a model configured (the LLM fake,
 *    in this process, counting every request) and the reflection service
 *    started, left idle for --seconds wall-clock seconds (default 20): the
 *    requests it made. This covers everything else that could call the
 *    model on its own (there is no heartbeat call); it does not reach the
 *    reflection job's first check, which comes 30 minutes after start —
 *    part 1 covers that schedule.
 *
 * Prints one line per part and exits 0 when both idle figures are 0 and the
 * control spent something; 1 otherwise.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "adapters/http/http.h"
#include "adapters/llm/llm.h"
#include "common/fsx.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/budget/budget.h"
#include "modules/reflection/reflection.h"
#include "modules/scheduler/sched.h"
#include "modules/skills/skills.h"
#include "modules/state/state.h"
#include "proc.h"
#include "tests/fakes/llm/llmfake.h"
#include "testutil.h"

#define SIM_HOURS     24
#define SIM_START_MS  1795000000000LL
#define HOUR_MS       (60LL * 60 * 1000)
#define WAIT_GUARD_MS 10000

static int64_t sim_now;

static int64_t sim_clock(void *ud)
{
	(void)ud;
	return sim_now;
}

static void die(const char *what)
{
	fprintf(stderr, "bench-idle-tokens: %s\n", what);
	exit(2);
}

struct tick_wait {
	bool done, ran;
};

static void tick_done(void *ud, enum reflect_outcome outcome, bool ran)
{
	(void)outcome;
	struct tick_wait *w = ud;
	w->done = true;
	w->ran = ran;
}

struct sim_result {
	int ticks, cycles;
	size_t requests;
	int64_t tokens;
};

/* 24 simulated hours; owner_at_hour < 0: nothing happens at all. */
static struct sim_result simulate(int owner_at_hour)
{
	struct sim_result res = {0};
	uv_loop_t loop;
	uv_loop_init(&loop);
	char *home = tu_tempdir();
	char *mem = fsx_join(home, "memory");
	char *soul = fsx_join(IDLE_SOURCE_DIR, "SOUL.md");
	char *soul_text = fsx_read_file(soul, 1 << 20, NULL, &(struct ga_err){{0}});
	free(soul);
	if (!soul_text)
		die("cannot read SOUL.md in the source tree");
	tu_write(home, "SOUL.md", soul_text);
	free(soul_text);
	tu_write(home, "SELF.md", "# Idle\n\nI wait.\n\n## Voice\nQuiet.\n");
	struct ga_err e = {{0}};
	struct state_store st;
	if (state_store_init(&st, mem, "bench", &e) != 0)
		die(e.msg);
	struct budget budget;
	budget_init(&budget, &st, 0);
	struct skills skills;
	char *sk = fsx_join(IDLE_SOURCE_DIR, "skills");
	const char *dirs[] = {sk};
	if (skills_load(&skills, dirs, 1, &e) != 0)
		die(e.msg);
	free(sk);
	char err[256];
	struct llmfake *fake = llmfake_new(err, sizeof err);
	if (!fake)
		die(err);
	/* the control's one reflection: an unchanged SELF.md (no voice call) */
	llmfake_script(fake, "[{\"match\":{\"tool_choice\":\"self_update\"},\"tool_calls\":[{"
	                     "\"name\":\"self_update\",\"arguments\":{\"self_md\":\"# Idle\\n\\nI "
	                     "wait.\\n\\n## Voice\\nQuiet.\\n\",\"summary\":\"Nothing new.\","
	                     "\"consistent_with_soul\":true}}],\"usage\":{\"prompt_tokens\":900,"
	                     "\"completion_tokens\":100}}]");
	struct http_client *http = http_client_new(&loop, NULL, &e);
	struct llm_config cfg;
	llm_config_init(&cfg, llmfake_base_url(fake), "bench-key", "fake-model");
	cfg.max_retries = 0;
	struct llm_client *llm = llm_client_new(http, &cfg);
	char *self_path = fsx_join(home, "SELF.md");
	char *soul_path = fsx_join(home, "SOUL.md");
	sim_now = SIM_START_MS;
	struct reflection_opts o = {.loop = &loop,
	                            .llm = llm,
	                            .budget = &budget,
	                            .skills = &skills,
	                            .st = &st,
	                            .memory_dir = mem,
	                            .self_path = self_path,
	                            .soul_path = soul_path,
	                            .clock = sim_clock};
	struct reflection *r = reflection_new(&o, &e);
	if (!r)
		die(e.msg);
	uint64_t step = sched_jitter_interval("Idle", "reflection", REFLECT_CHECK_MS, 0.12);
	bool said = false;
	for (sim_now = SIM_START_MS; sim_now < SIM_START_MS + SIM_HOURS * HOUR_MS;
	     sim_now += (int64_t)step) {
		if (owner_at_hour >= 0 && !said &&
		    sim_now >= SIM_START_MS + owner_at_hour * HOUR_MS) {
			struct exp_in in = {.type = EXP_OWNER_GUIDANCE,
			                    .what = "Owner said (terminal): \"how are you?\"",
			                    .who = "owner",
			                    .where = "owner:terminal"};
			reflection_add_experience(r, &in, &e);
			said = true;
		}
		struct tick_wait w = {0};
		reflection_tick(r, tick_done, &w);
		uint64_t guard = uv_now(&loop) + WAIT_GUARD_MS;
		while (!w.done && uv_now(&loop) < guard)
			uv_run(&loop, UV_RUN_ONCE);
		if (!w.done)
			die("a reflection cycle did not end within 10 s");
		res.ticks++;
		res.cycles += w.ran;
	}
	cJSON *status = reflection_status(r);
	res.tokens = (int64_t)cJSON_GetObjectItem(status, "tokensSpent")->valuedouble;
	cJSON_Delete(status);
	res.requests = llmfake_calls(fake);
	reflection_free(r);
	llm_client_free(llm);
	llm_config_free(&cfg);
	http_client_close(http);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	llmfake_free(fake);
	skills_free(&skills);
	state_store_free(&st);
	free(self_path);
	free(soul_path);
	free(mem);
	tu_rmrf(home);
	free(home);
	return res;
}

/* The real daemon, idle for `seconds`; returns the model requests it made. */
static size_t real_daemon(int seconds, bool *service_started)
{
	char err[256];
	struct llmfake *fake = llmfake_new(err, sizeof err);
	if (!fake)
		die(err);
	char *home = home_new();
	char llm[200];
	snprintf(llm, sizeof llm, "LLM_BASE_URL=%s", llmfake_base_url(fake));
	const char *env[] = {"AGENT_NAME=Idle", llm, "LLM_MODEL=fake-model",
	                     "LLM_API_KEY=idle-bench-key-0123456789", NULL};
	struct proc p;
	if (proc_start(&p, home, (const char *const[]){NULL}, env) != 0)
		die("cannot start general-agent (GA_BUILD_DIR?)");
	*service_started = proc_wait_output(&p, "service started service=reflection", 15000);
	if (*service_started)
		sleep((unsigned)seconds);
	size_t calls = llmfake_calls(fake);
	proc_signal(&p, SIGTERM);
	int rc = proc_wait(&p, 10000);
	if (rc != 0 || !*service_started) {
		char *e = proc_stderr(&p);
		fprintf(stderr, "---- general-agent (exit %d) ----\n%s\n", rc, e ? e : "");
		free(e);
	}
	proc_cleanup(&p);
	home_remove(home);
	llmfake_free(fake);
	return calls;
}

int main(int argc, char **argv)
{
	int seconds = 20;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
			seconds = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: bench-idle-tokens [--seconds N]\n");
			return 64;
		}
	}
	if (!getenv("GA_BUILD_DIR"))
		setenv("GA_BUILD_DIR", IDLE_BUILD_DIR, 1);
	if (!getenv("GA_SOURCE_DIR"))
		setenv("GA_SOURCE_DIR", IDLE_SOURCE_DIR, 1);
	log_init(LOG_LEVEL_ERROR, 0, stderr);

	struct sim_result idle = simulate(-1);
	printf("simulated 24 h (injected clock through the reflection module's schedule, not the "
	       "real binary): %d checks, %d reflection(s), %zu model requests, %lld tokens "
	       "(target 0)\n",
	       idle.ticks, idle.cycles, idle.requests, (long long)idle.tokens);
	struct sim_result control = simulate(3);
	printf("control, same 24 h with one owner line at hour 3: %d reflection(s), %zu model "
	       "requests, %lld tokens (must be > 0)\n",
	       control.cycles, control.requests, (long long)control.tokens);
	bool started = false;
	size_t real = real_daemon(seconds, &started);
	printf("real general-agent daemon, model configured, idle %d wall-clock s (reflection "
	       "service %s): %zu model requests (target 0)\n",
	       seconds, started ? "started" : "NOT started", real);
	bool ok = idle.requests == 0 && idle.tokens == 0 && control.requests > 0 &&
	          control.tokens > 0 && started && real == 0;
	printf("%s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
