/* The work loop's end-to-end world with real binaries: see e2efix.h. */
#include "e2efix.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "common/json.h"
#include "modules/workspace/wsp_int.h"
#include "testutil.h"

const char *const E2E_NAMES[3] = {"Ada", "Bob", "Cal"};
const char *const E2E_LOGINS[3] = {"ada-bot", "bob-bot", "cal-bot"};

static void token_of(int i, char *out, size_t cap)
{
	snprintf(out, cap, "tok-%s-0123456789abcdef", E2E_LOGINS[i]);
}

void e2e_world_init(struct e2e_world *w)
{
	memset(w, 0, sizeof *w);
	char *d = tu_tempdir();
	snprintf(w->dir, sizeof w->dir, "%s", d);
	free(d);
	th_track_dir(w->dir);
	fprintf(stderr, "e2e: the world's files in %s\n", w->dir);
	snprintf(w->cycle_ms, sizeof w->cycle_ms, "2000");
	w->sandbox = !getenv("GA_TEST_NO_SANDBOX") &&
	             system("bwrap --unshare-all --ro-bind / / true >/dev/null 2>&1") == 0;
	if (!w->sandbox)
		fprintf(stderr,
		        "bubblewrap unusable here: the coder runs with CODER_SANDBOX=off\n");
}

void e2e_fakes(struct e2e_world *w, const char *llm_script, const char *coder)
{
	char seed[300], err[4096];
	snprintf(seed, sizeof seed, "%s/seed", w->dir);
	mkdir(seed, 0700);
	tu_write(seed, "README.md", "# Demo\n");
	tu_write(seed, "Makefile", "test:\n\t@echo tests pass\n");
	tu_write(seed, "LIL-INTDEV-AGENTS.md", "# Agents\n");
	tu_write(seed, "SCENARIOS.md", "# Scenarios\n");
	char t[3][80], seedarg[400];
	const char *argv[16];
	int k = 0;
	for (int i = 0; i < 3; i++) {
		char tok[64];
		token_of(i, tok, sizeof tok);
		snprintf(t[i], sizeof t[i], "%s:%s", tok, E2E_LOGINS[i]);
		argv[k++] = "--token";
		argv[k++] = t[i];
	}
	snprintf(seedarg, sizeof seedarg, E2E_OWNER "/" E2E_REPO "=%s", seed);
	argv[k++] = "--org";
	argv[k++] = E2E_OWNER;
	argv[k++] = "--repo";
	argv[k++] = E2E_OWNER "/" E2E_REPO;
	argv[k++] = "--seed";
	argv[k++] = seedarg;
	argv[k] = NULL;
	if (support_fake_start(&w->gh, "tests/fakes/github/ghfake-server", w->dir, argv, err,
	                       sizeof err) != 0)
		fail_msg("%s", err);
	tu_write(w->dir, "llm-script.json", llm_script);
	char script[300];
	snprintf(script, sizeof script, "%s/llm-script.json", w->dir);
	if (support_fake_start(&w->llm, "tests/fakes/llm/llmfake-server", w->dir,
	                       (const char *const[]){"--script", script, NULL}, err,
	                       sizeof err) != 0)
		fail_msg("%s", err);
	char gate[300];
	snprintf(gate, sizeof gate, "%s/gate", w->dir);
	mkdir(gate, 0700);
	size_t cap = strlen(coder) + 400;
	char *text = malloc(cap);
	assert_non_null(text);
	snprintf(text, cap, "GATE='%s'\n%s", gate, coder);
	tu_write(w->dir, "coder.sh", text);
	free(text);
}

void e2e_room(struct e2e_world *w)
{
	const char *room_env[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};
	th_room_start(&w->room, 0, room_env, false);
	w->in_room = true;
	w->obs = th_observe(&w->room, "Obs");
}

/* The agent's variables (as a .env would give them). */
static void agent_env(struct e2e_world *w, int i, char vars[E2E_VARS][E2E_VAR_MAX],
                      const char *env[E2E_VARS + 1])
{
	char tok[64];
	token_of(i, tok, sizeof tok);
	int k = 0;
	snprintf(vars[k++], E2E_VAR_MAX, "AGENT_NAME=%s", E2E_NAMES[i]);
	snprintf(vars[k++], E2E_VAR_MAX, "AGENT_GITHUB_USERNAME=%s", E2E_LOGINS[i]);
	snprintf(vars[k++], E2E_VAR_MAX, "AGENT_GITHUB_TOKEN=%s", tok);
	snprintf(vars[k++], E2E_VAR_MAX, "GITHUB_API_URL=%s", w->gh.url);
	snprintf(vars[k++], E2E_VAR_MAX, "LLM_BASE_URL=%s/v1", w->llm.url);
	snprintf(vars[k++], E2E_VAR_MAX, "LLM_MODEL=fake-model");
	snprintf(vars[k++], E2E_VAR_MAX, "LLM_API_KEY=test-key-0123456789");
	if (!w->no_coder[i])
		snprintf(vars[k++], E2E_VAR_MAX, "CODER_COMMAND=sh %s/coder.sh {prompt_file}",
		         w->dir);
	snprintf(vars[k++], E2E_VAR_MAX, "CODER_RO_PATHS=%s/coder.sh:%s/gate", w->dir, w->dir);
	snprintf(vars[k++], E2E_VAR_MAX, "CODER_SANDBOX=%s", w->sandbox ? "on" : "off");
	snprintf(vars[k++], E2E_VAR_MAX, "GA_WS_CYCLE_MS=%s", w->cycle_ms);
	snprintf(vars[k++], E2E_VAR_MAX, "GA_FULFIL_INTERVAL_MS=1000");
	snprintf(vars[k++], E2E_VAR_MAX, "GA_GITHUB_SPACING_MS=10");
	snprintf(vars[k++], E2E_VAR_MAX, "GA_GITHUB_WRITE_SPACING_MS=50");
	snprintf(vars[k++], E2E_VAR_MAX, "GA_GITHUB_POLL_MS=86400000");
	snprintf(vars[k++], E2E_VAR_MAX, "DASHBOARD_ADDR=off");
	if (w->in_room)
		snprintf(vars[k++], E2E_VAR_MAX, "SPACE_URL=ws://127.0.0.1:%d", w->room.port);
	/* the test's last: a name given twice, the last one counts */
	for (int x = 0; x < E2E_EXTRA && w->extra[x]; x++)
		snprintf(vars[k++], E2E_VAR_MAX, "%s", w->extra[x]);
	for (int j = 0; j < k; j++)
		env[j] = vars[j];
	env[k] = NULL;
}

void e2e_agent_start(struct e2e_world *w, int i, bool terminal)
{
	static char vars[E2E_VARS][E2E_VAR_MAX];
	const char *env[E2E_VARS + 1];
	if (!w->homes[i][0])
		th_home_new(w->homes[i], sizeof w->homes[i]);
	agent_env(w, i, vars, env);
	const char *argv[] = {terminal ? NULL : "--no-terminal", NULL};
	if (proc_start(&w->a[i], w->homes[i], argv, env) != 0)
		fail_msg("cannot start %s", E2E_NAMES[i]);
	w->running[i] = true;
	th_track_pid(w->a[i].pid);
	if (!proc_wait_output(&w->a[i], "ready and listening", E2E_WAIT_MS))
		fail_msg("%s did not start", E2E_NAMES[i]);
	if (w->in_room && !proc_wait_output(&w->a[i], "joined the room", E2E_WAIT_MS))
		fail_msg("%s did not join the room", E2E_NAMES[i]);
}

void e2e_dump(struct e2e_world *w, int i)
{
	char *e = proc_stderr(&w->a[i]);
	fprintf(stderr, "---- %s ----\n%s\n", E2E_NAMES[i], e ? e : "(nothing)");
	free(e);
}

void e2e_dump_all(struct e2e_world *w)
{
	for (int i = 0; i < 3; i++)
		if (w->homes[i][0])
			e2e_dump(w, i);
}

void e2e_agent_kill(struct e2e_world *w, int i)
{
	proc_signal(&w->a[i], SIGKILL);
	assert_int_equal(proc_wait(&w->a[i], E2E_WAIT_MS), 128 + SIGKILL);
	th_untrack_pid(w->a[i].pid);
	proc_cleanup(&w->a[i]);
	w->running[i] = false;
}

void e2e_agent_stop(struct e2e_world *w, int i)
{
	if (!w->running[i])
		return;
	proc_signal(&w->a[i], SIGTERM);
	int rc = proc_wait(&w->a[i], E2E_WAIT_MS);
	th_untrack_pid(w->a[i].pid);
	w->running[i] = false;
	if (rc != 0 && rc != 128 + SIGKILL) {
		e2e_dump(w, i);
		fail_msg("%s exited %d", E2E_NAMES[i], rc);
	}
	proc_cleanup(&w->a[i]);
}

void e2e_stop(struct e2e_world *w)
{
	for (int i = 0; i < 3; i++) {
		e2e_agent_stop(w, i);
		if (w->homes[i][0])
			tu_rmrf(w->homes[i]);
	}
	if (w->obs)
		th_observer_free(w->obs);
	support_fake_stop(&w->gh);
	support_fake_stop(&w->llm);
	if (w->in_room)
		th_room_stop(&w->room, SIGTERM);
}

/* --- reading the fake ------------------------------------------------------------------------ */

static cJSON *run_curl(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	size_t r;
	while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (n + 1 >= cap) {
			buf = realloc(buf, cap *= 2);
			assert_non_null(buf);
		}
	}
	pclose(f);
	buf[n] = '\0';
	cJSON *j = cJSON_Parse(buf);
	free(buf);
	return j;
}

cJSON *e2e_get(struct e2e_world *w, const char *fmt, ...)
{
	char path[600], cmd[1024], tok[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	token_of(0, tok, sizeof tok);
	snprintf(cmd, sizeof cmd, "curl -s -m 10 -H 'Authorization: Bearer %s' '%s%s'", tok,
	         w->gh.url, path);
	return run_curl(cmd);
}

cJSON *e2e_post(struct e2e_world *w, int as, const char *path, const char *body)
{
	char cmd[1024], tok[64], file[300];
	token_of(as, tok, sizeof tok);
	tu_write(w->dir, "post.json", body);
	snprintf(file, sizeof file, "%s/post.json", w->dir);
	snprintf(cmd, sizeof cmd,
	         "curl -s -m 10 -H 'Authorization: Bearer %s' -H 'Content-Type: "
	         "application/json' --data @%s '%s%s'",
	         tok, file, w->gh.url, path);
	return run_curl(cmd);
}

int e2e_plan_number(struct e2e_world *w)
{
	cJSON *is = e2e_get(w, "/repos/" E2E_OWNER "/" E2E_REPO "/issues?labels=plan&state=all");
	int n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, is)
	{
		if (strncmp(json_string_or(it, "title", ""), "[PLAN]", 6) == 0)
			n = (int)json_int_or(it, "number", 0);
	}
	cJSON_Delete(is);
	return n;
}

static bool has_label(const cJSON *issue, const char *name)
{
	const cJSON *l;
	cJSON_ArrayForEach(l, cJSON_GetObjectItem(issue, "labels"))
	{
		if (strcmp(json_string_or(l, "name", ""), name) == 0)
			return true;
	}
	return false;
}

bool e2e_read_plan(struct e2e_world *w, int number, struct e2e_plan *ps)
{
	memset(ps, 0, sizeof *ps);
	cJSON *is = e2e_get(w, "/repos/" E2E_OWNER "/" E2E_REPO "/issues/%d", number);
	cJSON *cs = e2e_get(w, "/repos/" E2E_OWNER "/" E2E_REPO "/issues/%d/comments?per_page=100",
	                    number);
	bool ok = is && cJSON_IsArray(cs) &&
	          plan_parse(json_string_or(is, "title", ""), json_string_or(is, "body", ""),
	                     &ps->plan, NULL) == 0;
	if (ok) {
		ps->body = strdup(json_string_or(is, "body", ""));
		ps->closed = strcmp(json_string_or(is, "state", ""), "closed") == 0;
		ps->complete_label = has_label(is, "plan") && has_label(is, "plan:complete");
		struct wsp_events e;
		wsp_events_read(&e, cs);
		plan_state_fold(&ps->plan, number, e.ev, e.n, ps->st, NULL, NULL);
		for (size_t i = 0; i < e.n; i++) {
			int t = e.ev[i].m.task;
			if (t < 1 || t > PLAN_MAX_TASKS)
				continue;
			ps->claims[t] += e.ev[i].m.kind == PLAN_MARK_CLAIM;
			ps->dones[t] += e.ev[i].m.kind == PLAN_MARK_DONE;
		}
		wsp_events_free(&e);
		ps->comments = cs;
		cs = NULL;
	}
	cJSON_Delete(is);
	cJSON_Delete(cs);
	return ok;
}

void e2e_plan_free(struct e2e_plan *ps)
{
	plan_free(&ps->plan);
	free(ps->body);
	cJSON_Delete(ps->comments);
	ps->body = NULL;
	ps->comments = NULL;
}

bool e2e_all_with_pr(struct e2e_world *w, int number)
{
	struct e2e_plan ps;
	if (!e2e_read_plan(w, number, &ps))
		return false;
	bool all = ps.plan.n_tasks > 0;
	for (size_t i = 0; i < ps.plan.n_tasks; i++)
		all = all && ps.st[i].status == PLAN_IN_PROGRESS && ps.st[i].pr > 0;
	e2e_plan_free(&ps);
	return all;
}

int e2e_branches(struct e2e_world *w, const char *prefix)
{
	cJSON *b = e2e_get(w, "/repos/" E2E_OWNER "/" E2E_REPO "/branches?per_page=100");
	int n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, b)
	{
		if (strncmp(json_string_or(it, "name", ""), prefix, strlen(prefix)) == 0)
			n++;
	}
	cJSON_Delete(b);
	return n;
}

int e2e_prs_of_task(struct e2e_world *w, int task, char *head, size_t cap)
{
	cJSON *p = e2e_get(w, "/repos/" E2E_OWNER "/" E2E_REPO "/pulls?state=all&per_page=100");
	int n = 0;
	const cJSON *it;
	char want[16];
	snprintf(want, sizeof want, "task-%d-", task);
	cJSON_ArrayForEach(it, p)
	{
		const char *h = json_string_or(cJSON_GetObjectItem(it, "head"), "ref", "");
		if (strncmp(h, want, strlen(want)) == 0) {
			n++;
			if (head)
				snprintf(head, cap, "%s", h);
		}
	}
	cJSON_Delete(p);
	return n;
}

int e2e_coding_task(struct e2e_world *w, int plan, int task)
{
	char key[200];
	snprintf(key, sizeof key, "\"" E2E_OWNER "/" E2E_REPO "#%d/task-%d\"", plan, task);
	for (int i = 0; i < 3; i++) {
		if (!w->homes[i][0])
			continue;
		char *rec = home_read(w->homes[i], "memory/taskexec.json");
		const char *at = rec ? strstr(rec, key) : NULL;
		const char *ph = at ? strstr(at, "\"phase\"") : NULL;
		bool coding = ph && strncmp(ph, "\"phase\":\"coding\"", 16) == 0;
		free(rec);
		if (coding)
			return i;
	}
	return -1;
}

int e2e_recorded(struct e2e_world *w, const char *method, const char *path_part, const char *suffix)
{
	FILE *f = fopen(w->gh.record, "r");
	if (!f)
		return 0;
	int n = 0;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		cJSON *r = cJSON_Parse(line);
		const char *m = json_string_or(r, "method", "");
		const char *p = json_string_or(r, "path", "");
		size_t pl = strlen(p), sl = suffix ? strlen(suffix) : 0;
		if (strcmp(m, method) == 0 && (!path_part || strstr(p, path_part)) &&
		    (!suffix || (pl >= sl && strcmp(p + pl - sl, suffix) == 0)))
			n++;
		cJSON_Delete(r);
	}
	free(line);
	fclose(f);
	return n;
}

bool e2e_git_has_branch(struct e2e_world *w, const char *branch)
{
	char cmd[1024], tok[64], out[256] = "";
	token_of(0, tok, sizeof tok);
	const char *hostport = strstr(w->gh.url, "://");
	snprintf(cmd, sizeof cmd,
	         "git ls-remote 'http://x-access-token:%s@%s/" E2E_OWNER "/" E2E_REPO
	         ".git' 'refs/heads/%s' 2>/dev/null",
	         tok, hostport ? hostport + 3 : w->gh.url, branch);
	FILE *f = popen(cmd, "r");
	if (!f)
		return true; /* unknown: as if it were there */
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	int rc = pclose(f);
	return rc != 0 || strstr(out, "refs/heads/") != NULL;
}

void e2e_fake_delay(struct e2e_world *w, int ms)
{
	char path[64];
	snprintf(path, sizeof path, "/_ghfake/delay?ms=%d", ms);
	cJSON_Delete(e2e_post(w, 0, path, "{}"));
}
