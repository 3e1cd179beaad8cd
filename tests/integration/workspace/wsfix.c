/* Agents of the work loop in one test process: see wsfix.h. */
#include "wsfix.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapters/http/http.h"
#include "common/env.h"
#include "common/fsx.h"
#include "common/json.h"
#include "modules/plan/plan.h"
#include "support_loop.h"
#include "support_redis.h"
#include "testutil.h"

const char WSFIX_CODER[] = "set -e\n"
                           "n=$(sed -n 's/^### Task \\([0-9]*\\):.*/\\1/p' \"$1\" | head -1)\n"
                           "echo \"task $n by $GIT_AUTHOR_NAME\" > \"task-$n.txt\"\n"
                           "git add \"task-$n.txt\"\n"
                           "git commit -q -m \"task($n): the task's file\"\n";

void wsfix_path(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		fail_msg("a fixture path does not fit in %zu bytes", cap);
}

void wsfix_mkdirs(const char *path)
{
	struct ga_err e = {{0}};
	if (fsx_mkdir_p(path, &e) != 0)
		fail_msg("%s", e.msg);
}

static const char *const NAMES[WSFIX_MAX] = {"ada", "bob", "cal", "dan"};

static void token_of(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "tok-%s-0123456789abcdef", name);
}

static void common_open(struct wsfix *fx)
{
	struct ga_err e = {{0}};
	char skills[700];
	wsfix_path(skills, sizeof skills, "%s/skills", getenv("GA_SOURCE_DIR"));
	const char *dirs[] = {skills};
	if (skills_load(&fx->skills, dirs, 1, &e) != 0)
		fail_msg("skills: %s", e.msg);
	fx->sandbox = !getenv("GA_TEST_NO_SANDBOX") &&
	              system("bwrap --unshare-all --ro-bind / / true >/dev/null 2>&1") == 0;
	if (!fx->sandbox)
		fprintf(stderr,
		        "bubblewrap unusable here: the coder runs with CODER_SANDBOX=off\n");
}

void wsfix_open_child(struct wsfix *fx, const char *dir, const char *base)
{
	memset(fx, 0, sizeof *fx);
	uv_loop_init(&fx->loop);
	fx->child = true;
	fx->dir = strdup(dir);
	wsfix_path(fx->bin, sizeof fx->bin, "%s/bin", fx->dir);
	wsfix_path(fx->base, sizeof fx->base, "%s", base);
	common_open(fx);
}

void wsfix_open(struct wsfix *fx)
{
	memset(fx, 0, sizeof *fx);
	uv_loop_init(&fx->loop);
	fx->dir = tu_tempdir();
	wsfix_path(fx->bin, sizeof fx->bin, "%s/bin", fx->dir);
	wsfix_mkdirs(fx->bin);
	char err[256];
	fx->fake = ghfake_new(err, sizeof err);
	if (!fx->fake)
		fail_msg("ghfake: %s", err);
	wsfix_path(fx->base, sizeof fx->base, "%s", ghfake_base_url(fx->fake));
	ghfake_add_token(fx->fake, "tok-host-0123456789abcdef", "host");
	for (int i = 0; i < WSFIX_MAX; i++) {
		char tok[48], login[32];
		token_of(NAMES[i], tok, sizeof tok);
		snprintf(login, sizeof login, "%s-bot", NAMES[i]);
		ghfake_add_token(fx->fake, tok, login);
	}
	ghfake_add_org(fx->fake, WSFIX_OWNER);
	ghfake_add_repo(fx->fake, WSFIX_OWNER, WSFIX_REPO, 0);
	struct ghfake_file files[] = {
	        {"README.md", "# Demo\n", 0, 0},
	        {"Makefile", "test:\n\t@echo tests pass\n", 0, 0},
	};
	ghfake_commit(fx->fake, WSFIX_OWNER, WSFIX_REPO, "main", files, 2, "Initial commit", "host",
	              NULL);
	struct ga_err e = {{0}};
	fx->host_http = http_client_new(&fx->loop, NULL, &e);
	assert_non_null(fx->host_http);
	struct gh_config cfg;
	gh_config_init(&cfg, fx->base, "tok-host-0123456789abcdef", "host");
	cfg.spacing_ms = cfg.write_spacing_ms = 0;
	cfg.backoff_base_ms = 1;
	cfg.backoff_cap_ms = 10;
	cfg.recheck_ms = 5;
	fx->host = gh_client_new(fx->host_http, &cfg);
	gh_config_free(&cfg);
	common_open(fx);
	tu_write(fx->bin, "coder.sh", WSFIX_CODER);
}

static struct coord *coord_of(void *ud)
{
	return ((struct wsfix_agent *)ud)->coord;
}

static struct conv_store *store_of(void *ud)
{
	return ((struct wsfix_agent *)ud)->store;
}

/* What the room would hear: counted per key (a key said twice is a
 * duplicate the test sees). */
static int room_say(void *ud, const char *text, const char *key)
{
	struct wsfix_agent *a = ud;
	(void)text;
	for (int i = 0; i < a->n_said; i++)
		if (strcmp(a->said[i], key) == 0)
			return 0;
	if (a->n_said < WSFIX_SAID_MAX)
		snprintf(a->said[a->n_said++], sizeof a->said[0], "%s", key);
	return 0;
}

static void review_asked(void *ud, const char *owner, const char *repo, int64_t pr,
                         const char *head)
{
	(void)owner;
	(void)repo;
	(void)head;
	struct wsfix_agent *a = ud;
	a->reviews_asked++;
	a->last_review_pr = pr;
}

static int room_state(void *ud, const cJSON *state)
{
	(void)state;
	((struct wsfix_agent *)ud)->room_states++;
	return 0;
}

static void load_coder(struct wsfix *fx, struct wsfix_agent *a)
{
	char env[2000];
	wsfix_path(env, sizeof env,
	           "CODER_COMMAND=sh %s/coder.sh {prompt_file}\nCODER_RO_PATHS=%s/coder.sh\n%s",
	           fx->bin, fx->bin, fx->sandbox ? "" : "CODER_SANDBOX=off\n");
	struct env_file e;
	struct ga_err err = {{0}};
	assert_int_equal(env_parse(env, strlen(env), &e, &err), 0);
	char memory[600];
	wsfix_path(memory, sizeof memory, "%s/memory", a->dir);
	coder_config_free(&a->coder);
	if (coder_config_load(&e, a->dir, memory, &a->coder, &err) != 0)
		fail_msg("coder: %s", err.msg);
	env_file_free(&e);
}

void wsfix_coder(struct wsfix *fx, const char *script)
{
	tu_write(fx->bin, "coder.sh", script);
}

void wsfix_agent_open(struct wsfix *fx, int i, int64_t claim_ttl_ms, int64_t orphan_ms)
{
	struct wsfix_agent *a = &fx->a[i];
	memset(a, 0, sizeof *a);
	a->fx = fx;
	snprintf(a->name, sizeof a->name, "%s", NAMES[i]);
	snprintf(a->login, sizeof a->login, "%s-bot", NAMES[i]);
	token_of(NAMES[i], a->token, sizeof a->token);
	wsfix_path(a->dir, sizeof a->dir, "%s/%s", fx->dir, a->name);
	char memory[600], cache[700], work[700];
	wsfix_path(memory, sizeof memory, "%s/memory", a->dir);
	wsfix_path(cache, sizeof cache, "%s/git", memory);
	wsfix_path(work, sizeof work, "%s/tasks", memory);
	wsfix_mkdirs(work);
	struct ga_err e = {{0}};
	assert_int_equal(state_store_init(&a->st, memory, "0.1.0-test", &e), 0);
	a->http = http_client_new(&fx->loop, NULL, &e);
	assert_non_null(a->http);
	struct gh_config cfg;
	gh_config_init(&cfg, fx->base, a->token, a->login);
	cfg.spacing_ms = cfg.write_spacing_ms = 0;
	cfg.backoff_base_ms = 1;
	cfg.backoff_cap_ms = 10;
	cfg.recheck_ms = 5;
	cfg.timeout_ms = 20000;
	a->gh = gh_client_new(a->http, &cfg);
	gh_config_free(&cfg);
	a->j = journal_open(memory, &e);
	assert_non_null(a->j);
	struct outbound_config oc = {.memory_dir = memory, .agent_name = a->name, .journal = a->j};
	a->ob = outbound_new(&fx->loop, &oc, &e);
	assert_non_null(a->ob);
	assert_int_equal(git_ctx_init(&a->git, &fx->loop, cache, &e), 0);
	a->port = gh_port_new(a->gh, NULL, NULL);
	struct git_cred cred = {"x-access-token", a->token};
	assert_int_equal(gh_port_set_git(a->port, &a->git, &cred, fx->base, &e), 0);
	struct outbound_port p;
	gh_port_describe(a->port, &p);
	assert_int_equal(outbound_add_port(a->ob, &p, &e), 0);
	outbound_reconcile_pending(a->ob);
	if (fx->redis_url) {
		a->coord = coord_new_redis(&fx->loop, fx->redis_url, a->name, &e);
		if (!a->coord)
			fail_msg("redis: %s", e.msg);
	} else {
		a->coord = coord_new_local(&fx->loop, a->name);
	}
	load_coder(fx, a);
	if (fx->llm_url) {
		struct llm_config lc;
		llm_config_init(&lc, fx->llm_url, "test-key-0123456789", "fake-model");
		lc.backoff_base_ms = 1;
		lc.backoff_cap_ms = 10;
		a->llm = llm_client_new(a->http, &lc);
		llm_config_free(&lc);
		assert_non_null(a->llm);
		assert_int_equal(ledger_open(&a->ledger, memory, &e), 0);
	}
	struct wsp_config c = {.loop = &fx->loop,
	                       .gh = a->gh,
	                       .outbound = a->ob,
	                       .journal = a->j,
	                       .st = &a->st,
	                       .coord = coord_of,
	                       .git = &a->git,
	                       .work_root = work,
	                       .coder = &a->coder,
	                       .skills = &fx->skills,
	                       .login = a->login,
	                       .agent_name = a->name,
	                       .api_url = fx->base,
	                       .token = a->token,
	                       .claim_ttl_ms = claim_ttl_ms,
	                       .orphan_ms = orphan_ms,
	                       .room_state = room_state,
	                       .room_say = room_say,
	                       .review = review_asked,
	                       .review_timeout_ms = fx->review_timeout_ms,
	                       .max_revisions = fx->max_revisions,
	                       .owner_login = fx->owner_login,
	                       .store = store_of,
	                       .llm = a->llm,
	                       .ledger = a->llm ? &a->ledger : NULL,
	                       .ud = a};
	a->ws = wsp_new(&c, &e);
	if (!a->ws)
		fail_msg("wsp_new: %s", e.msg);
	assert_true(wsp_watch(a->ws, WSFIX_OWNER, WSFIX_REPO, WSP_SOURCE_OWNER, NULL, &e) >= 0);
}

void wsfix_redis(struct support_redis *r, char *url, size_t cap)
{
	if (!support_redis_binary()) {
		fprintf(stderr, "redis-server is not installed: the Redis variant is skipped\n");
		skip();
	}
	memset(r, 0, sizeof *r);
	char err[512];
	if (support_redis_start(r, NULL, err, sizeof err) != 0)
		fail_msg("%s", err);
	snprintf(url, cap, "redis://127.0.0.1:%d", r->port);
}

void wsfix_agents(struct wsfix *fx, int n, int64_t claim_ttl_ms, int64_t orphan_ms)
{
	fx->n = n;
	for (int i = 0; i < n; i++)
		wsfix_agent_open(fx, i, claim_ttl_ms, orphan_ms);
}

static bool flag_set(void *ctx, const void *arg)
{
	(void)arg;
	return *(bool *)ctx;
}

static void set_flag(void *ud)
{
	*(bool *)ud = true;
}

void wsfix_agent_close(struct wsfix *fx, int i)
{
	struct wsfix_agent *a = &fx->a[i];
	if (!a->ws)
		return;
	wsp_quiesce(a->ws);
	support_run_until(&fx->loop, NULL, NULL, NULL, 50);
	bool closed = false;
	outbound_close(a->ob, set_flag, &closed);
	assert_true(support_run_until(&fx->loop, flag_set, &closed, NULL, 20000));
	wsp_free(a->ws);
	a->ws = NULL;
	closed = false;
	coord_close(a->coord, set_flag, &closed);
	assert_true(support_run_until(&fx->loop, flag_set, &closed, NULL, 20000));
	gh_port_free(a->port);
	gh_client_free(a->gh);
	if (a->llm) {
		llm_client_free(a->llm);
		ledger_close(&a->ledger);
	}
	http_client_close(a->http);
	support_run_until(&fx->loop, NULL, NULL, NULL, 50);
	journal_close(a->j);
	git_ctx_free(&a->git);
	state_store_free(&a->st);
	coder_config_free(&a->coder);
}

void wsfix_close(struct wsfix *fx)
{
	for (int i = 0; i < fx->n; i++)
		wsfix_agent_close(fx, i);
	gh_client_free(fx->host);
	if (fx->host_http)
		http_client_close(fx->host_http);
	support_run_until(&fx->loop, NULL, NULL, NULL, 100);
	uv_run(&fx->loop, UV_RUN_NOWAIT);
	skills_free(&fx->skills);
	if (fx->fake)
		ghfake_free(fx->fake);
	uv_loop_close(&fx->loop);
	if (!fx->child)
		tu_rmrf(fx->dir);
	free(fx->dir);
}

struct created {
	bool done;
	int number;
	char msg[GA_ERR_MSG_MAX];
};

static void on_created(void *ud, const struct gh_result *r)
{
	struct created *c = ud;
	c->done = true;
	c->number = r->kind == GH_OK ? (int)json_int_or(r->json, "number", 0) : 0;
	snprintf(c->msg, sizeof c->msg, "%s", r->msg);
}

int wsfix_plan(struct wsfix *fx, const char *title, int ntasks)
{
	static const char *const titles[] = {"Add the greeting", "Add the farewell",
	                                     "Add the schedule", "Add the map"};
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "title", title);
	cJSON_AddStringToObject(args, "goal", "The site greets, says goodbye and shows the day.");
	cJSON_AddStringToObject(args, "context", "A small demo site.");
	cJSON *tasks = cJSON_AddArrayToObject(args, "tasks");
	for (int i = 0; i < ntasks && i < 4; i++) {
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "title", titles[i]);
		cJSON_AddStringToObject(t, "description", "Write the task's file.");
		cJSON_AddItemToArray(tasks, t);
	}
	struct plan_draft d;
	struct ga_err e = {{0}};
	assert_int_equal(plan_draft_from_json(args, &d, &e), 0);
	cJSON_Delete(args);
	char *body = plan_draft_format(&d, &e);
	char *ptitle = plan_format_title(d.title);
	assert_non_null(body);
	const char *labels[] = {PLAN_LABEL, PLAN_LABEL_ACTIVE};
	struct gh_issue_new in = {.title = ptitle, .body = body, .labels = labels, .n_labels = 2};
	struct created c = {0};
	assert_true(gh_issue_create(fx->host, WSFIX_OWNER, WSFIX_REPO, &in, on_created, &c, &e) >
	            0);
	assert_true(support_run_until(&fx->loop, flag_set, &c.done, NULL, 10000));
	if (c.number <= 0)
		fail_msg("plan not created: %s", c.msg);
	free(body);
	free(ptitle);
	plan_draft_free(&d);
	return c.number;
}

static void on_cycle(void *ud)
{
	struct wsfix_agent *a = ud;
	a->cycling = false;
	a->cycles++;
}

void wsfix_cycle(struct wsfix *fx, int i)
{
	struct wsfix_agent *a = &fx->a[i];
	if (a->cycling || !a->ws)
		return;
	a->cycling = true;
	a->last_cycle_ms = uv_now(&fx->loop);
	wsp_cycle(a->ws, on_cycle, a);
}

struct run_ctx {
	struct wsfix *fx;
	const int *order;
	int n;
	bool (*cond)(struct wsfix *fx);
};

static bool run_tick(void *ctx, const void *arg)
{
	(void)arg;
	struct run_ctx *r = ctx;
	if (r->cond(r->fx))
		return true;
	/* each agent again soon after its last cycle: a busy machine is not
	 * made busier by agents polling back to back */
	for (int k = 0; k < r->n; k++) {
		struct wsfix_agent *a = &r->fx->a[r->order[k]];
		if (!a->cycles || uv_now(&r->fx->loop) - a->last_cycle_ms >= WSFIX_CYCLE_GAP_MS)
			wsfix_cycle(r->fx, r->order[k]);
	}
	return false;
}

bool wsfix_run(struct wsfix *fx, const int *order, int n, bool (*cond)(struct wsfix *fx),
               int timeout_ms)
{
	struct run_ctx r = {fx, order, n, cond};
	return support_run_until(&fx->loop, run_tick, &r, NULL, timeout_ms);
}

static bool all_idle(void *ctx, const void *arg)
{
	(void)arg;
	struct wsfix *fx = ctx;
	for (int i = 0; i < fx->n; i++)
		if (fx->a[i].ws && (fx->a[i].cycling || wsp_busy(fx->a[i].ws)))
			return false;
	return true;
}

bool wsfix_settle(struct wsfix *fx, int timeout_ms)
{
	return support_run_until(&fx->loop, all_idle, fx, NULL, timeout_ms);
}

struct listed {
	bool done;
	cJSON *json;
};

static void on_listed(void *ud, const struct gh_result *r)
{
	struct listed *l = ud;
	l->done = true;
	l->json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

cJSON *wsfix_comments(struct wsfix *fx, int n)
{
	struct listed l = {0};
	struct ga_err e = {{0}};
	assert_true(gh_comments_list(fx->host, WSFIX_OWNER, WSFIX_REPO, n, 1000, on_listed, &l,
	                             &e) > 0);
	assert_true(support_run_until(&fx->loop, flag_set, &l.done, NULL, 10000));
	assert_non_null(l.json);
	return l.json;
}
