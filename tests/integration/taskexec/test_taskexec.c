/*
 * modules/taskexec end to end with real git and a scripted coder (in the
 * bubblewrap sandbox where it runs, else with CODER_SANDBOX=off): a task
 * from claim to a pushed, verified branch and its PR text; the coder's
 * blocked answer; no commit; failing tests; a stolen claim and a task
 * completed meanwhile; a retry's attempt suffix; and restarts after kill -9
 * — during the coder (the clone and its commits are reused, one branch in
 * the end) and right after the push (verified and reported again, not
 * pushed twice). The push goes through the port the test provides, with
 * adapters/git, as the daemon's goes through outbound.
 *
 * The kills are real: the test runs itself as a child (--child) that runs
 * the executor, and SIGKILLs it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gitfix.h"
#include "modules/taskexec/taskexec.h"
#include "support_loop.h"
#include "support_wait.h"
#include "testutil.h"

#define PLAN 7

struct tx {
	char tmp[512];
	char remote[600], url[700], cache[600], work_root[600], memory[600], bin[600];
	uv_loop_t loop;
	struct git_ctx g;
	struct state_store st;
	struct skills sk;
	struct coder_config coder;
	/* the ports */
	int pushes;
	char last_key[600];
	enum taskexec_claim_state claim;
	bool die_after_push;
	/* the result */
	bool done;
	enum taskexec_outcome outcome;
	char rule[64], reason[DECISION_REASON_MAX];
	char branch[128], sha[80], tests[32], title[200];
	char *body;
	char phases[600];
	bool resumed;
	size_t commits;
	uint64_t ms_clone, ms_coder, ms_tests, ms_push, ms_total;
};

static bool g_sandbox;

/* ---- the ports --------------------------------------------------------------------------------
 */

struct push_op {
	struct tx *x;
	taskexec_push_done_fn done;
	void *done_ud;
};

static void pushed(void *ud, const struct git_result *r)
{
	struct push_op *op = ud;
	if (op->x->die_after_push && r->ok)
		raise(SIGKILL); /* the push happened; nothing after it did */
	op->done(op->done_ud, r->ok, r->msg);
	free(op);
}

static int port_push(void *ud, const struct taskexec_push *req, taskexec_push_done_fn done,
                     void *done_ud, struct ga_err *err)
{
	struct tx *x = ud;
	x->pushes++;
	gf_path(x->last_key, sizeof x->last_key, "%s", req->key);
	struct push_op *op = calloc(1, sizeof *op);
	*op = (struct push_op){x, done, done_ud};
	if (git_push(&x->g, req->mirror, req->remote_url, req->branch, NULL, pushed, op, err) !=
	    0) {
		free(op);
		return -1;
	}
	return 0;
}

struct claim_op {
	uv_timer_t t;
	enum taskexec_claim_state st;
	taskexec_claim_done_fn done;
	void *done_ud;
};

static void claim_fire(uv_timer_t *t)
{
	struct claim_op *op = t->data;
	op->done(op->done_ud, op->st, op->st == TASKEXEC_CLAIM_STOLEN ? "bob holds it" : NULL);
	uv_close((uv_handle_t *)&op->t, (uv_close_cb)free);
}

static int port_claim(void *ud, const struct taskexec_claim *req, taskexec_claim_done_fn done,
                      void *done_ud, struct ga_err *err)
{
	(void)err;
	struct tx *x = ud;
	assert_int_equal(req->plan_number, PLAN);
	struct claim_op *op = calloc(1, sizeof *op);
	op->st = x->claim;
	op->done = done;
	op->done_ud = done_ud;
	uv_timer_init(&x->loop, &op->t);
	op->t.data = op;
	uv_timer_start(&op->t, claim_fire, 1, 0);
	return 0;
}

static void port_step(void *ud, const struct taskexec_step *s)
{
	struct tx *x = ud;
	size_t n = strlen(x->phases);
	if (n + 40 < sizeof x->phases)
		gf_path(x->phases + n, sizeof x->phases - n, "%s:%s ", s->phase, s->d.rule);
}

static void on_done(void *ud, const struct taskexec_result *r)
{
	struct tx *x = ud;
	x->done = true;
	x->outcome = r->outcome;
	gf_path(x->rule, sizeof x->rule, "%s", r->d.rule);
	gf_path(x->reason, sizeof x->reason, "%s", r->d.reason);
	gf_path(x->branch, sizeof x->branch, "%s", r->branch);
	gf_path(x->sha, sizeof x->sha, "%s", r->sha);
	gf_path(x->tests, sizeof x->tests, "%s", r->tests_line);
	gf_path(x->title, sizeof x->title, "%s", r->pr_title ? r->pr_title : "");
	free(x->body);
	x->body = r->pr_body ? strdup(r->pr_body) : NULL;
	x->resumed = r->resumed;
	x->commits = r->commits;
	x->ms_clone = r->ms_clone;
	x->ms_coder = r->ms_coder;
	x->ms_tests = r->ms_tests;
	x->ms_push = r->ms_push;
	x->ms_total = r->ms_total;
}

static bool is_done(void *ctx, const void *arg)
{
	(void)arg;
	return ((struct tx *)ctx)->done;
}

/* ---- the fixture ------------------------------------------------------------------------------
 */

/* The scripted coder: what it does is in the script the test writes. */
static void coder_script(struct tx *x, const char *body)
{
	tu_write(x->bin, "coder.sh", body);
	char env[2000];
	gf_path(env, sizeof env,
	        "CODER_COMMAND=sh %s/coder.sh {prompt_file}\nCODER_RO_PATHS=%s/coder.sh\n%s",
	        x->bin, x->bin, g_sandbox ? "" : "CODER_SANDBOX=off\n");
	struct env_file e;
	struct ga_err err = {{0}};
	assert_int_equal(env_parse(env, strlen(env), &e, &err), 0);
	coder_config_free(&x->coder);
	char home[700];
	gf_path(home, sizeof home, "%s/agent", x->tmp);
	if (coder_config_load(&e, home, x->memory, &x->coder, &err) != 0)
		fail_msg("%s", err.msg);
	env_file_free(&e);
}

static void tx_open(struct tx *x, const char *tmp)
{
	memset(x, 0, sizeof *x);
	gf_path(x->tmp, sizeof x->tmp, "%s", tmp);
	gf_path(x->remote, sizeof x->remote, "%s/remote/web.git", tmp);
	gf_path(x->url, sizeof x->url, "file://%s", x->remote);
	gf_path(x->cache, sizeof x->cache, "%s/agent/cache", tmp);
	gf_path(x->work_root, sizeof x->work_root, "%s/agent/work trees", tmp);
	gf_path(x->memory, sizeof x->memory, "%s/agent/memory", tmp);
	gf_path(x->bin, sizeof x->bin, "%s/bin", tmp);
	gf_mkdirs(x->work_root);
	gf_mkdirs(x->bin);
	uv_loop_init(&x->loop);
	struct ga_err err = {{0}};
	if (access(x->remote, F_OK) != 0) {
		assert_int_equal(gf_remote_new(x->remote, "trunk"), 0);
		assert_int_equal(
		        gf_remote_commit(x->remote, "trunk", "Makefile",
		                         "test:\n\t@test ! -e BROKEN && echo tests pass\n"),
		        0);
	}
	assert_int_equal(git_ctx_init(&x->g, &x->loop, x->cache, &err), 0);
	assert_int_equal(state_store_init(&x->st, x->memory, "0.1.0-test", &err), 0);
	char skills[700];
	gf_path(skills, sizeof skills, "%s/skills", getenv("GA_SOURCE_DIR"));
	const char *dirs[] = {skills};
	if (skills_load(&x->sk, dirs, 1, &err) != 0)
		fail_msg("skills: %s", err.msg);
	x->claim = TASKEXEC_CLAIM_OURS;
}

static void tx_close(struct tx *x)
{
	git_ctx_free(&x->g);
	state_store_free(&x->st);
	skills_free(&x->sk);
	coder_config_free(&x->coder);
	free(x->body);
	uv_run(&x->loop, UV_RUN_DEFAULT);
	uv_loop_close(&x->loop);
}

static struct taskexec *run_task(struct tx *x, int task, const char *title, int attempt, bool wait)
{
	struct taskexec_config cfg = {.loop = &x->loop,
	                              .git = &x->g,
	                              .work_root = x->work_root,
	                              .coder = &x->coder,
	                              .skills = &x->sk,
	                              .state = &x->st,
	                              .ports = {x, port_push, port_claim, port_step}};
	const char *files[] = {"src/answer.c", NULL};
	struct taskexec_task t = {.owner = "acme",
	                          .repo = "web",
	                          .remote_url = x->url,
	                          .plan_number = PLAN,
	                          .plan_title = "The answer",
	                          .plan_goal = "The program knows the answer.",
	                          .task_number = task,
	                          .task_title = title,
	                          .task_description = "Add answer() returning 42.",
	                          .files = files,
	                          .deps_done = NULL,
	                          .attempt = attempt,
	                          .agent = "ada-bot"};
	x->done = false;
	x->phases[0] = '\0';
	struct ga_err err = {{0}};
	struct taskexec *job = taskexec_start(&cfg, &t, on_done, x, &err);
	if (!job)
		fail_msg("start: %s", err.msg);
	if (wait)
		assert_true(support_run_until(&x->loop, is_done, x, NULL, 120000));
	return job;
}

/* Branches of the remote whose name starts with prefix. */
static int remote_branches(struct tx *x, const char *prefix)
{
	char *out = NULL;
	const char *argv[] = {"git", "for-each-ref", "--format=%(refname:short)", "refs/heads/",
	                      NULL};
	gf_run(x->remote, argv, &out);
	int n = 0;
	for (char *p = out; p && *p;) {
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			n++;
		char *nl = strchr(p, '\n');
		p = nl ? nl + 1 : p + strlen(p);
	}
	free(out);
	return n;
}

static const char GOOD[] = "set -e\n"
                           "grep -q 'Task 1: Add the answer' \"$1\"\n"
                           "grep -q 'task(1): Add the answer' \"$1\"\n"
                           "mkdir -p src && echo 'int answer(void) { return 42; }' > src/answer.c\n"
                           "git add src/answer.c && git commit -q -m 'task(1): Add the answer'\n";

/* ---- the tests ---------------------------------------------------------------------------------
 */

static void test_pushed(void **state)
{
	struct tx *x = *state;
	coder_script(x, GOOD);
	run_task(x, 1, "Add the answer", 1, true);
	if (x->outcome != TASKEXEC_PUSHED)
		fail_msg("%s: %s (%s)", x->rule, x->reason, x->phases);
	assert_string_equal(x->branch, "task-1-add-the-answer");
	char *remote_sha = gf_rev(x->remote, "refs/heads/task-1-add-the-answer");
	assert_string_equal(remote_sha, x->sha);
	free(remote_sha);
	assert_int_equal(x->pushes, 1);
	char key[300];
	gf_path(key, sizeof key, "push:acme/web:task-1-add-the-answer:%s", x->sha);
	assert_string_equal(x->last_key, key);
	assert_string_equal(x->tests, "Passed");
	assert_int_equal(x->commits, 1);
	assert_string_equal(x->title, "task(1): Add the answer");
	assert_non_null(strstr(x->body, "## Task 1 from plan #7"));
	assert_non_null(strstr(x->body, "**Goal:** The program knows the answer."));
	assert_non_null(strstr(x->body, "1 file changed, 1 insertion(+)"));
	assert_non_null(strstr(x->body, "**Files changed (1):**\n- `src/answer.c`"));
	assert_non_null(strstr(x->body, "**Tests:** Passed"));
	assert_non_null(strstr(x->body, "Part of #7"));
	assert_non_null(strstr(x->body, "<!-- ga:pr plan=7 task=1 agent=ada-bot attempt=1 "
	                                "branch=task-1-add-the-answer -->"));
	/* Every gate, in order. */
	const char *order[] = {"clone:clone_done",
	                       "coder:coder_started",
	                       "coder:coder_done",
	                       "pre-gate:",
	                       "import:",
	                       "gate1:gate1_commits",
	                       "gate2:tests_passed",
	                       "gate3:gate3_push",
	                       "gate4:gate4_remote",
	                       "gate5:gate5_claim",
	                       "pr:pr_ready",
	                       NULL};
	const char *at = x->phases;
	for (int i = 0; order[i]; i++) {
		const char *p = strstr(at, order[i]);
		if (!p)
			fail_msg("'%s' missing or out of order in %s", order[i], x->phases);
		at = p;
	}
	assert_false(x->resumed);
	/* The coder's settings stayed out of the commit. */
	char *files = NULL;
	const char *show[] = {"git", "show", "--name-only", "--format=", x->sha, NULL};
	gf_run(x->remote, show, &files);
	assert_string_equal(files, "src/answer.c");
	free(files);
	if (getenv("GA_TEST_VERBOSE"))
		fprintf(stderr,
		        "pushed in %llu ms: clone %llu, coder %llu, tests %llu, push %llu\n",
		        (unsigned long long)x->ms_total, (unsigned long long)x->ms_clone,
		        (unsigned long long)x->ms_coder, (unsigned long long)x->ms_tests,
		        (unsigned long long)x->ms_push);
	/* A retry (attempt 2) makes its own branch; attempt 1's stays. */
	coder_script(x, "set -e\necho v2 > V2.md\ngit add V2.md\ngit commit -qm 'task(1): v2'\n");
	run_task(x, 1, "Add the answer", 2, true);
	assert_int_equal(x->outcome, TASKEXEC_PUSHED);
	assert_string_equal(x->branch, "task-1-add-the-answer-a2");
	assert_int_equal(remote_branches(x, "task-1-"), 2);
}

static void test_not_pushed(void **state)
{
	struct tx *x = *state;
	int pushes = x->pushes;
	static const struct {
		const char *script;
		enum taskexec_outcome outcome;
		const char *rule;
	} cases[] = {
	        {"echo 'blocked: the schema of Task 1 is missing' >&2\nexit 1\n", TASKEXEC_BLOCKED,
	         "coder_blocked"},
	        {"echo thinking; exit 0\n", TASKEXEC_FAILED, "gate1_no_commits"},
	        {"echo 'x' > BROKEN; git add BROKEN; git commit -qm 'task(2): break'\n",
	         TASKEXEC_FAILED, "tests_failed"},
	        {"git checkout -q -b elsewhere; echo y > Y; git add Y; git commit -qm y\n",
	         TASKEXEC_FAILED, "pregate_branch"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		coder_script(x, cases[i].script);
		run_task(x, 2, "Use the answer", 1, true);
		assert_int_equal(x->outcome, cases[i].outcome);
		assert_string_equal(x->rule, cases[i].rule);
	}
	assert_int_equal(x->pushes, pushes);
	assert_int_equal(remote_branches(x, "task-2-"), 0);
	/* Stolen: pushed, then reported failed, the branch kept. */
	coder_script(x, "echo ok > OK.md; git add OK.md; git commit -qm 'task(2): ok'\n");
	x->claim = TASKEXEC_CLAIM_STOLEN;
	run_task(x, 2, "Use the answer", 1, true);
	assert_int_equal(x->outcome, TASKEXEC_FAILED);
	assert_string_equal(x->rule, "gate5_claim_stolen");
	assert_non_null(strstr(x->reason, "bob holds it"));
	assert_int_equal(remote_branches(x, "task-2-"), 1);
	/* Completed meanwhile: stop without a report. */
	x->claim = TASKEXEC_CLAIM_COMPLETED;
	coder_script(x, "echo c > C.md; git add C.md; git commit -qm 'task(4): c'\n");
	run_task(x, 4, "Something else", 1, true);
	assert_int_equal(x->outcome, TASKEXEC_STOPPED);
	x->claim = TASKEXEC_CLAIM_OURS;
}

static void test_cancel(void **state)
{
	struct tx *x = *state;
	coder_script(x, "sleep 60\n");
	struct taskexec *job = run_task(x, 5, "Slow", 1, false);
	/* Wait for the coder to be running, then cancel. */
	int64_t end = support_now_ms() + 30000;
	while (!strstr(x->phases, "clone:") && support_now_ms() < end)
		uv_run(&x->loop, UV_RUN_ONCE);
	taskexec_cancel(job);
	assert_true(support_run_until(&x->loop, is_done, x, NULL, 30000));
	assert_int_equal(x->outcome, TASKEXEC_CANCELLED);
}

/* ---- restarts after kill -9 ---------------------------------------------------------------------
 */

static const char KILLABLE[] =
        "set -e\n"
        "if [ ! -e PART1.md ]; then\n"
        "  echo one > PART1.md; git add PART1.md; git commit -qm 'task(3): part one'\n"
        "  touch .git/ga-started; sleep 60\n"
        "fi\n"
        "echo two > PART2.md; git add PART2.md; git commit -qm 'task(3): part two'\n";

static char g_self[600];

/* Runs the executor in a child process; kill_when: "coder" (SIGKILL once
 * the coder started), "push" (the child kills itself right after its
 * push). Returns when the child is dead. */
static void child_run(struct tx *x, const char *mode, int task, const char *title)
{
	char tnum[16];
	gf_path(tnum, sizeof tnum, "%d", task);
	pid_t pid = fork();
	if (pid == 0) {
		execl(g_self, g_self, "--child", x->tmp, mode, tnum, title, g_sandbox ? "1" : "0",
		      (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	if (strcmp(mode, "coder") == 0) {
		char started[900];
		gf_path(started, sizeof started, "%s/acme-web-plan%d-task%d-a1/.git/ga-started",
		        x->work_root, PLAN, task);
		int64_t end = support_now_ms() + 60000;
		while (access(started, F_OK) != 0 && support_now_ms() < end)
			support_sleep_ms(20);
		assert_int_equal(access(started, F_OK), 0);
		kill(pid, SIGKILL);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static int child_main(int argc, char **argv)
{
	if (argc < 7)
		return 64;
	g_sandbox = strcmp(argv[6], "1") == 0;
	struct tx x;
	tx_open(&x, argv[2]);
	coder_script(&x, KILLABLE);
	x.die_after_push = strcmp(argv[3], "push") == 0;
	if (x.die_after_push) /* the coder finishes at once this time */
		coder_script(&x, "echo p > P.md; git add P.md; git commit -qm 'task(6): p'\n");
	run_task(&x, atoi(argv[4]), argv[5], 1, true);
	return 3; /* never reached: the parent kills it, or it kills itself */
}

static void test_restart_after_kill_in_coder(void **state)
{
	struct tx *x = *state;
	char tmp[600];
	gf_path(tmp, sizeof tmp, "%s", x->tmp);
	child_run(x, "coder", 3, "Two parts");
	/* One clone with the first commit, no branch on the remote yet. */
	assert_int_equal(remote_branches(x, "task-3-"), 0);
	char *rec = tu_read(x->memory, "taskexec.json");
	assert_non_null(rec);
	assert_non_null(strstr(rec, "\"phase\":\"coding\""));
	free(rec);
	int pushes = x->pushes;
	coder_script(x, KILLABLE);
	run_task(x, 3, "Two parts", 1, true);
	if (x->outcome != TASKEXEC_PUSHED)
		fail_msg("%s: %s (%s)", x->rule, x->reason, x->phases);
	assert_true(x->resumed);
	if (getenv("GA_TEST_VERBOSE"))
		fprintf(stderr, "restart after kill in coder: %s\n", x->phases);
	assert_non_null(strstr(x->phases, "clone:clone_reused"));
	assert_int_equal(x->commits, 2); /* part one survived the kill */
	assert_int_equal(remote_branches(x, "task-3-"), 1);
	assert_int_equal(x->pushes, pushes + 1);
	(void)tmp;
}

static void test_restart_after_kill_after_push(void **state)
{
	struct tx *x = *state;
	child_run(x, "push", 6, "Pushed then killed");
	assert_int_equal(remote_branches(x, "task-6-"), 1);
	char *sha = gf_rev(x->remote, "refs/heads/task-6-pushed-then-killed");
	int pushes = x->pushes;
	coder_script(x, "echo SHOULD-NOT-RUN; exit 9\n");
	run_task(x, 6, "Pushed then killed", 1, true);
	if (x->outcome != TASKEXEC_PUSHED)
		fail_msg("%s: %s (%s)", x->rule, x->reason, x->phases);
	assert_true(x->resumed);
	assert_non_null(strstr(x->phases, "clone:resume_pushed"));
	assert_null(strstr(x->phases, "coder:"));
	assert_int_equal(x->pushes, pushes); /* not pushed again */
	assert_string_equal(x->sha, sha);
	assert_non_null(strstr(x->body, "Part of #7"));
	assert_int_equal(remote_branches(x, "task-6-"), 1);
	free(sha);
	/* Done with it: the record goes. */
	char key[TASKEXEC_KEY_MAX];
	taskexec_key("acme", "web", PLAN, 6, key, sizeof key);
	assert_string_equal(key, "acme/web#7/task-6");
	struct ga_err err = {{0}};
	assert_int_equal(taskexec_forget(&x->st, key, 1, &err), 0);
	char *rec = tu_read(x->memory, "taskexec.json");
	assert_null(strstr(rec, "task-6"));
	free(rec);
}

/* A branch on the remote with no record of ours (say, the memory was
 * lost) is adopted, never replaced by a second one. */
static void test_adopt_remote_branch(void **state)
{
	struct tx *x = *state;
	assert_int_equal(gf_remote_commit(x->remote, "task-8-adopted", "ADOPTED.md", "a\n"), 0);
	coder_script(x, "echo SHOULD-NOT-RUN; exit 9\n");
	run_task(x, 8, "Adopted", 1, true);
	if (x->outcome != TASKEXEC_PUSHED)
		fail_msg("%s: %s (%s)", x->rule, x->reason, x->phases);
	assert_true(x->resumed);
	assert_non_null(strstr(x->phases, "coder:coder_skipped"));
	assert_int_equal(remote_branches(x, "task-8-"), 1);
}

static int setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	struct tx *x = calloc(1, sizeof *x);
	char *tmp = tu_tempdir();
	tx_open(x, tmp);
	free(tmp);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct tx *x = *state;
	char tmp[512];
	gf_path(tmp, sizeof tmp, "%s", x->tmp);
	tx_close(x);
	tu_rmrf(tmp);
	free(x);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return child_main(argc, argv);
	gf_path(g_self, sizeof g_self, "%s", argv[0]);
	if (argv[0][0] != '/') {
		char cwd[400];
		if (getcwd(cwd, sizeof cwd))
			gf_path(g_self, sizeof g_self, "%s/%s", cwd, argv[0]);
	}
	const char *probe[] = {"bwrap", "--unshare-all", "--ro-bind", "/", "/", "true", NULL};
	/* GA_TEST_NO_SANDBOX=1 runs the same tests with CODER_SANDBOX=off. */
	g_sandbox = !getenv("GA_TEST_NO_SANDBOX") && gf_run(NULL, probe, NULL) == 0;
	if (!g_sandbox)
		fprintf(stderr,
		        "bubblewrap unusable here: the coder runs with CODER_SANDBOX=off\n");
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pushed),
	        cmocka_unit_test(test_not_pushed),
	        cmocka_unit_test(test_cancel),
	        cmocka_unit_test(test_restart_after_kill_in_coder),
	        cmocka_unit_test(test_restart_after_kill_after_push),
	        cmocka_unit_test(test_adopt_remote_branch),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
