/* taskexec — a claimed task through clone, coder, gates and push, as a
 * state machine on the loop (see taskexec.h). */
#include "modules/taskexec/taskexec.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/plan/plan.h"
#include "modules/plan/taskstate.h"

/* Record phases, in order. */
enum rec_phase {
	REC_NONE,
	REC_CLONED,
	REC_CODING,
	REC_CODED,
	REC_IMPORTED,
	REC_CHECKED,
	REC_PUSHED,
	REC_PHASE_COUNT,
};

static const char *const rec_names[REC_PHASE_COUNT] = {"none",     "cloned",  "coding", "coded",
                                                       "imported", "checked", "pushed"};

struct record {
	bool have;
	int attempt;
	enum rec_phase phase;
	char base[GIT_REF_MAX + 1];
	char sha[GIT_SHA_MAX + 1];
	char tests_line[32];
	char tests_command[256];
	int coder_pid;
	long long coder_start; /* the pid's start time (clock ticks since boot) */
	int64_t started_ms;
};

struct taskexec {
	struct taskexec_config cfg;
	/* the task, copied */
	struct taskexec_task t;
	char *owner, *repo, *url, *plan_title, *plan_goal, *title, *desc, *deps, *agent, *email;
	char *revision; /* NULL: a first run */
	char **files;
	struct git_cred cred;
	char *cred_user, *cred_token;
	/* where things are */
	char key[TASKEXEC_KEY_MAX];
	char branch[PLAN_BRANCH_MAX + 1];
	char base[GIT_REF_MAX + 1];
	char remote_sha[GIT_SHA_MAX + 1];
	char sha[GIT_SHA_MAX + 1];
	char *mirror, *work, *ctl, *objects;
	struct record rec;
	bool skip_coder;
	bool adopted;       /* the branch was on the remote without a record of ours */
	bool resume_pushed; /* our pushed commit was found on the remote */
	bool coder_ran;
	bool cancelled;
	struct coder_job *job;
	/* results */
	struct taskexec_result res;
	struct git_diff diff;
	char tests_line[32];
	char tests_command[256];
	char tests_tail[CODER_TESTS_TAIL_BYTES + 1];
	char coder_tail[CODER_TESTS_TAIL_BYTES + 1];
	char *pr_title, *pr_body;
	uint64_t t0, t_phase;
	taskexec_done_fn done;
	void *ud;
};

const char *taskexec_outcome_name(enum taskexec_outcome o)
{
	switch (o) {
	case TASKEXEC_PUSHED:
		return "pushed";
	case TASKEXEC_BLOCKED:
		return "blocked";
	case TASKEXEC_FAILED:
		return "failed";
	case TASKEXEC_STOPPED:
		return "stopped";
	default:
		return "cancelled";
	}
}

void taskexec_key(const char *owner, const char *repo, int plan, int task, char *out, size_t cap)
{
	err_fmt(out, cap, "%s/%s#%d/task-%d", owner, repo, plan, task);
}

/* ---- the restart record ---------------------------------------------------------------------- */

static cJSON *records_load(const struct state_store *st)
{
	cJSON *d = state_load(st, TASKEXEC_STATE_NAME, NULL, NULL, NULL);
	if (!cJSON_IsObject(d)) {
		cJSON_Delete(d);
		d = cJSON_CreateObject();
	}
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(d, "tasks"))) {
		cJSON_DeleteItemFromObjectCaseSensitive(d, "tasks");
		cJSON_AddObjectToObject(d, "tasks");
	}
	return d;
}

static void rec_read(struct taskexec *x)
{
	cJSON *d = records_load(x->cfg.state);
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(d, "tasks"), x->key);
	struct record *rec = &x->rec;
	memset(rec, 0, sizeof *rec);
	if (cJSON_IsObject(r)) {
		rec->have = true;
		rec->attempt = (int)json_int_or(r, "attempt", 0);
		const char *ph = json_string_or(r, "phase", "none");
		for (int i = 0; i < REC_PHASE_COUNT; i++)
			if (strcmp(ph, rec_names[i]) == 0)
				rec->phase = (enum rec_phase)i;
		err_fmt(rec->base, sizeof rec->base, "%s", json_string_or(r, "base", ""));
		err_fmt(rec->sha, sizeof rec->sha, "%s", json_string_or(r, "sha", ""));
		err_fmt(rec->tests_line, sizeof rec->tests_line, "%s",
		        json_string_or(r, "testsLine", ""));
		err_fmt(rec->tests_command, sizeof rec->tests_command, "%s",
		        json_string_or(r, "testsCommand", ""));
		rec->coder_pid = (int)json_int_or(r, "coderPid", 0);
		rec->coder_start = (long long)json_int_or(r, "coderStart", 0);
		rec->started_ms = json_int_or(r, "startedAt", 0);
		if (!git_valid_branch(rec->base))
			rec->base[0] = '\0';
	}
	cJSON_Delete(d);
}

/* Writes the record (phase and what is known so far); the oldest records
 * beyond TASKEXEC_MAX_RECORDS are dropped. A failed write is logged in the
 * steps and does not stop the task: it only weakens a later restart. */
static void rec_write(struct taskexec *x, enum rec_phase phase)
{
	x->rec.phase = phase;
	if (!x->cfg.state)
		return;
	cJSON *d = records_load(x->cfg.state);
	cJSON *tasks = cJSON_GetObjectItemCaseSensitive(d, "tasks");
	int64_t now = time_now_ms();
	cJSON *r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "attempt", x->t.attempt);
	cJSON_AddStringToObject(r, "branch", x->branch);
	cJSON_AddStringToObject(r, "base", x->base);
	cJSON_AddStringToObject(r, "work", x->work);
	cJSON_AddStringToObject(r, "phase", rec_names[phase]);
	cJSON_AddStringToObject(r, "sha", x->sha);
	cJSON_AddStringToObject(r, "testsLine", x->tests_line);
	cJSON_AddStringToObject(r, "testsCommand", x->tests_command);
	cJSON_AddNumberToObject(r, "coderPid", x->rec.coder_pid);
	cJSON_AddNumberToObject(r, "coderStart", (double)x->rec.coder_start);
	cJSON_AddNumberToObject(r, "startedAt",
	                        (double)(x->rec.started_ms ? x->rec.started_ms : now));
	cJSON_AddNumberToObject(r, "updatedAt", (double)now);
	cJSON_DeleteItemFromObjectCaseSensitive(tasks, x->key);
	cJSON_AddItemToObject(tasks, x->key, r);
	while (cJSON_GetArraySize(tasks) > TASKEXEC_MAX_RECORDS) {
		cJSON *oldest = NULL, *it;
		cJSON_ArrayForEach(it, tasks)
		{
			if (!oldest ||
			    json_int_or(it, "updatedAt", 0) < json_int_or(oldest, "updatedAt", 0))
				oldest = it;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(tasks, oldest->string);
	}
	struct ga_err err = {{0}};
	if (state_save(x->cfg.state, TASKEXEC_STATE_NAME, d, now, &err) != 0) {
		struct taskexec_step s = {"record", {0}};
		decision_set(&s.d, VERDICT_INFO, "record_write",
		             "the restart record could not be written (%s)", err.msg);
		if (x->res.n_steps < TASKEXEC_MAX_STEPS)
			x->res.steps[x->res.n_steps++] = s;
	}
	cJSON_Delete(d);
}

/* A clone path as this module names them ("...-plan<N>-task<n>-a<k>"):
 * nothing else is ever removed on the word of a state file. */
static bool our_clone_path(const char *p)
{
	const char *s = strrchr(p, '/');
	const char *m = s ? strstr(s, "-plan") : NULL;
	int a, b, c, n = 0;
	return m && sscanf(m, "-plan%d-task%d-a%d%n", &a, &b, &c, &n) == 3 && m[n] == '\0';
}

int taskexec_forget(const struct state_store *st, const char *key, int64_t now_ms,
                    struct ga_err *err)
{
	cJSON *d = records_load(st);
	const char *work = json_string_or(
	        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "tasks"), key),
	        "work", NULL);
	if (work && work[0] == '/' && our_clone_path(work)) {
		char *ctl = xasprintf("%s.ctl", work);
		git_remove_tree(work);
		git_remove_tree(ctl);
		free(ctl);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "tasks"), key);
	int rc = state_save(st, TASKEXEC_STATE_NAME, d, now_ms, err);
	cJSON_Delete(d);
	return rc;
}

/* The start time of a process (field 22 of /proc/<pid>/stat), -1 when it
 * does not exist: with the pid it names one process across pid reuse. */
static long long proc_start(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	long long v = -1;
	int field = 2;
	for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
		if (++field == 22) {
			v = atoll(tok);
			break;
		}
	}
	return v;
}

/* ---- steps and the end -------------------------------------------------------------------------
 */

static void step(struct taskexec *x, const char *phase, enum decision_verdict v, const char *rule,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void step(struct taskexec *x, const char *phase, enum decision_verdict v, const char *rule,
                 const char *fmt, ...)
{
	struct taskexec_step s = {.phase = phase};
	char reason[DECISION_REASON_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	decision_set(&s.d, v, rule, "%s", reason);
	if (x->res.n_steps < TASKEXEC_MAX_STEPS)
		x->res.steps[x->res.n_steps++] = s;
	x->res.d = s.d;
	if (x->cfg.ports.step)
		x->cfg.ports.step(x->cfg.ports.ud, &s);
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void job_free(struct taskexec *x)
{
	git_diff_free(&x->diff);
	free(x->owner);
	free(x->repo);
	free(x->url);
	free(x->plan_title);
	free(x->plan_goal);
	free(x->title);
	free(x->desc);
	free(x->deps);
	free(x->revision);
	free(x->agent);
	free(x->email);
	strv_free(x->files);
	free(x->cred_user);
	if (x->cred_token) {
		explicit_bzero(x->cred_token, strlen(x->cred_token));
		free(x->cred_token);
	}
	free(x->mirror);
	free(x->work);
	free(x->ctl);
	free(x->objects);
	free(x->pr_title);
	free(x->pr_body);
	free(x);
}

/* The end of an attempt's work here: a failed, blocked or stopped attempt
 * is over (a retry is a new attempt with its own branch), so its record
 * and clone go; a pushed one keeps its record (a restart before the PR is
 * opened verifies it again) but not its clone (the mirror holds the
 * branch). A cancelled one keeps both, to be resumed. */
static void settle(struct taskexec *x, enum taskexec_outcome o)
{
	if (o == TASKEXEC_CANCELLED)
		return;
	if (o != TASKEXEC_PUSHED && x->cfg.state) {
		struct ga_err err = {{0}};
		taskexec_forget(x->cfg.state, x->key, time_now_ms(), &err);
	}
	git_remove_tree(x->work);
	git_remove_tree(x->ctl);
}

static void finish(struct taskexec *x, enum taskexec_outcome o)
{
	struct taskexec_result *r = &x->res;
	settle(x, o);
	r->outcome = o;
	r->branch = x->branch;
	r->base = x->base;
	r->sha = x->sha;
	r->work = x->work;
	r->commits = x->diff.commits;
	r->shortstat = x->diff.shortstat;
	r->files = x->diff.files;
	r->n_files = x->diff.n_files;
	r->files_dropped = x->diff.files_dropped;
	r->tests_line = x->tests_line[0] ? x->tests_line : "None found";
	r->tests_command = x->tests_command;
	r->tests_tail = x->tests_tail;
	r->coder_tail = x->coder_tail;
	r->ms_total = time_mono_ms() - x->t0;
	r->pr_title = x->pr_title;
	r->pr_body = x->pr_body;
	x->done(x->ud, r);
	job_free(x);
}

static void fail(struct taskexec *x, const char *phase, const char *rule, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void fail(struct taskexec *x, const char *phase, const char *rule, const char *fmt, ...)
{
	char reason[DECISION_REASON_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	step(x, phase, VERDICT_FAIL, rule, "%s", reason);
	finish(x, TASKEXEC_FAILED);
}

/* True (and the job ended) when taskexec_cancel was called. */
static bool stopped(struct taskexec *x, const char *phase)
{
	if (!x->cancelled)
		return false;
	step(x, phase, VERDICT_INFO, "cancelled", "cancelled before %s", phase);
	finish(x, TASKEXEC_CANCELLED);
	return true;
}

static uint64_t lap(struct taskexec *x)
{
	uint64_t now = time_mono_ms(), d = now - x->t_phase;
	x->t_phase = now;
	return d;
}

/* ---- the phases ---------------------------------------------------------------------------------
 */

static void do_default_branch(struct taskexec *x);
static void do_remote_branch(struct taskexec *x);
static void do_clone(struct taskexec *x);
static void do_coder(struct taskexec *x);
static void do_pregate(struct taskexec *x);
static void do_import(struct taskexec *x);
static void do_gate1(struct taskexec *x);
static void do_gate2(struct taskexec *x);
static void do_gate3(struct taskexec *x);
static void do_gate4(struct taskexec *x);
static void do_gate5(struct taskexec *x);
static void do_pr(struct taskexec *x);

static const struct git_cred *cred(struct taskexec *x)
{
	return x->cred_token ? &x->cred : NULL;
}

static void on_mirror(void *ud, const struct git_result *r)
{
	struct taskexec *x = ud;
	if (stopped(x, "clone"))
		return;
	if (!r->ok)
		return fail(x, "clone", "clone_failed", "fetching %s/%s failed: %s", x->owner,
		            x->repo, r->msg);
	do_default_branch(x);
}

static void on_default(void *ud, const struct git_result *r)
{
	struct taskexec *x = ud;
	if (stopped(x, "clone"))
		return;
	char b[GIT_REF_MAX + 1];
	if (!r->ok || git_parse_symref(r->out, b, sizeof b) != 0)
		return fail(x, "clone", "default_branch",
		            "the default branch of %s/%s could not be read: %s", x->owner, x->repo,
		            r->ok ? "no HEAD on the remote" : r->msg);
	/* A resumed attempt keeps the base it started from. */
	err_fmt(x->base, sizeof x->base, "%s", x->rec.have && x->rec.base[0] ? x->rec.base : b);
	do_remote_branch(x);
}

static void do_default_branch(struct taskexec *x)
{
	struct ga_err err = {{0}};
	if (git_default_branch(x->cfg.git, x->mirror, x->url, cred(x), on_default, x, &err) != 0)
		fail(x, "clone", "default_branch", "%s", err.msg);
}

static void on_remote(void *ud, const struct git_result *r)
{
	struct taskexec *x = ud;
	if (stopped(x, "clone"))
		return;
	if (!r->ok)
		return fail(x, "clone", "remote_branch", "ls-remote failed: %s", r->msg);
	git_parse_ls_remote(r->out, x->branch, x->remote_sha);
	do_clone(x);
}

static void do_remote_branch(struct taskexec *x)
{
	struct ga_err err = {{0}};
	if (git_ls_remote_branch(x->cfg.git, x->mirror, x->url, x->branch, cred(x), on_remote, x,
	                         &err) != 0)
		fail(x, "clone", "remote_branch", "%s", err.msg);
}

/* After a clone: the coder's settings kept out of git, the record. */
static void cloned(struct taskexec *x, bool resumed_tree)
{
	struct ga_err err = {{0}};
	if (coder_prepare_work(x->work, &err) != 0)
		return fail(x, "clone", "clone_prepare", "%s", err.msg);
	x->res.ms_clone = lap(x);
	step(x, "clone", VERDICT_PASS, resumed_tree ? "clone_reused" : "clone_done",
	     "%s on branch %s from origin/%s%s", x->work, x->branch,
	     x->remote_sha[0] ? x->branch : x->base,
	     resumed_tree ? " (the tree of the interrupted run, its commits kept)" : "");
	if (x->rec.phase < REC_CLONED || !resumed_tree)
		rec_write(x, REC_CLONED);
	if (x->skip_coder) {
		step(x, "coder", VERDICT_INFO, "coder_skipped", "%s",
		     x->remote_sha[0]
		             ? "the branch was already pushed for this attempt: adopted, the "
		               "coder does not run again"
		             : "the coder had finished before the restart");
		do_pregate(x);
		return;
	}
	do_coder(x);
}

static void on_clone(void *ud, const struct git_result *r)
{
	struct taskexec *x = ud;
	if (stopped(x, "clone"))
		return;
	if (!r->ok)
		return fail(x, "clone", "clone_failed", "%s", r->msg);
	cloned(x, false);
}

static void do_clone(struct taskexec *x)
{
	struct record *rec = &x->rec;
	char head[GIT_REF_MAX + 1];
	struct ga_err err = {{0}};
	bool tree_ok = fsx_exists(x->work) &&
	               git_head_branch(x->work, head, sizeof head, &err) == 0 &&
	               strcmp(head, x->branch) == 0;
	if (x->remote_sha[0] && rec->have && rec->phase >= REC_IMPORTED &&
	    strcmp(rec->sha, x->remote_sha) == 0) {
		/* Pushed before the interruption: verify and report again. */
		x->res.resumed = true;
		x->resume_pushed = true;
		err_fmt(x->sha, sizeof x->sha, "%s", rec->sha);
		err_fmt(x->tests_line, sizeof x->tests_line, "%s", rec->tests_line);
		err_fmt(x->tests_command, sizeof x->tests_command, "%s", rec->tests_command);
		x->res.ms_clone = lap(x);
		step(x, "clone", VERDICT_INFO, "resume_pushed",
		     "%s is already on the remote at %.12s from the interrupted run: verified, not "
		     "rebuilt",
		     x->branch, x->sha);
		do_gate1(x);
		return;
	}
	if (x->remote_sha[0]) {
		/* On the remote but not ours on record: never replaced, adopted. */
		x->res.resumed = true;
		x->adopted = true;
		/* unless the branch holds nothing (see on_gate1), or this run
		 * revises the branch after a review */
		x->skip_coder = !x->revision;
		git_remove_tree(x->work);
	} else if (rec->have && rec->phase >= REC_CLONED && tree_ok) {
		x->res.resumed = true;
		x->skip_coder = rec->phase >= REC_CODED;
		if (rec->phase == REC_CODING && rec->coder_pid > 0 &&
		    proc_start(rec->coder_pid) == rec->coder_start) {
			/* A coder the crash left running (only without the sandbox,
			 * which dies with the agent) would race the new one. */
			kill(-rec->coder_pid, SIGKILL);
		}
		cloned(x, true);
		return;
	} else if (fsx_exists(x->work)) {
		git_remove_tree(x->work);
	}
	const char *start = x->remote_sha[0] ? x->branch : x->base;
	if (git_task_clone(x->cfg.git, x->mirror, x->work, x->url, x->base, start, x->branch,
	                   on_clone, x, &err) != 0)
		fail(x, "clone", "clone_failed", "%s", err.msg);
}

static char *files_section(struct taskexec *x)
{
	if (!x->files || !x->files[0])
		return xstrdup("(none listed: determine them from the description)");
	struct strbuf sb = {0};
	for (size_t i = 0; x->files[i]; i++)
		sb_printf(&sb, "%s- `%s`", i ? "\n" : "", x->files[i]);
	return sb_detach(&sb);
}

static void on_coder(void *ud, const struct coder_result *r)
{
	struct taskexec *x = ud;
	x->job = NULL;
	x->res.ms_coder = lap(x);
	const char *tail = r->err && r->err[0] ? r->err : r->out ? r->out : "";
	size_t n = strlen(tail);
	err_fmt(x->coder_tail, sizeof x->coder_tail, "%s",
	        tail + (n > CODER_TESTS_TAIL_BYTES ? n - CODER_TESTS_TAIL_BYTES : 0));
	if (stopped(x, "coder"))
		return;
	switch (r->outcome) {
	case CODER_DONE:
		step(x, "coder", r->d.verdict, r->d.rule, "%s", r->d.reason);
		rec_write(x, REC_CODED);
		do_pregate(x);
		return;
	case CODER_BLOCKED:
		step(x, "coder", VERDICT_BLOCK, r->d.rule, "%s", r->d.reason);
		finish(x, TASKEXEC_BLOCKED);
		return;
	default:
		fail(x, "coder", r->d.rule, "%s", r->d.reason);
		return;
	}
}

static void do_coder(struct taskexec *x)
{
	char num[16], attempt[16];
	snprintf(num, sizeof num, "%d", x->t.task_number);
	snprintf(attempt, sizeof attempt, "%d", x->t.attempt);
	char *files = files_section(x);
	char repo[300];
	snprintf(repo, sizeof repo, "%s/%s", x->owner, x->repo);
	struct skill_var vars[] = {
	        {"repo", repo},          {"planTitle", x->plan_title}, {"planGoal", x->plan_goal},
	        {"taskNumber", num},     {"taskTitle", x->title},      {"description", x->desc},
	        {"files", files},        {"dependencies", x->deps},    {"branch", x->branch},
	        {"baseBranch", x->base}, {"attempt", attempt},
	};
	struct ga_err err = {{0}};
	char *prompt = skills_render(x->cfg.skills, TASKEXEC_SKILL, NULL, vars,
	                             sizeof vars / sizeof vars[0], &err);
	free(files);
	if (!prompt)
		return fail(x, "coder", "prompt", "%s", err.msg);
	if (x->revision) {
		char *p =
		        xasprintf("%s\n\n## Review to address\n\nThis run revises the work already "
		                  "on %s after a review. Keep what is right, change what the "
		                  "review asks, and commit on the same branch.\n\n%s\n",
		                  prompt, x->branch, x->revision);
		free(prompt);
		prompt = p;
	}
	const char *ro[] = {x->objects, NULL};
	struct coder_run_opts o = {.work = x->work,
	                           .ctl = x->ctl,
	                           .prompt = prompt,
	                           .ro_extra = ro,
	                           .git_name = x->agent,
	                           .git_email = x->email};
	x->t_phase = time_mono_ms();
	x->coder_ran = true;
	x->job = coder_run(x->cfg.loop, x->cfg.coder, &o, on_coder, x, &err);
	free(prompt);
	if (!x->job)
		return fail(x, "coder", "coder_config", "%s", err.msg);
	x->rec.coder_pid = coder_pid(x->job);
	x->rec.coder_start = x->rec.coder_pid ? proc_start(x->rec.coder_pid) : 0;
	rec_write(x, REC_CODING);
	/* the phase a status shows while the coder works (its end is the
	 * coder step's outcome) */
	step(x, "coder", VERDICT_INFO, "coder_started", "the coder runs in %s (pid %d)", x->work,
	     x->rec.coder_pid);
}

static void do_pregate(struct taskexec *x)
{
	if (stopped(x, "pre-gate"))
		return;
	char head[GIT_REF_MAX + 1];
	struct ga_err err = {{0}};
	if (git_head_branch(x->work, head, sizeof head, &err) != 0)
		return fail(x, "pre-gate", "pregate_branch", "%s", err.msg);
	if (strcmp(head, x->branch) != 0)
		return fail(x, "pre-gate", "pregate_branch",
		            "the coder left the clone on '%s', not on the task branch %s", head,
		            x->branch);
	step(x, "pre-gate", VERDICT_PASS, "pregate_branch", "the clone is on %s", x->branch);
	do_import(x);
}

static void on_rev(void *ud, const struct git_result *r)
{
	struct taskexec *x = ud;
	if (stopped(x, "import"))
		return;
	size_t n = r->ok ? strcspn(r->out, "\n") : 0;
	if (n < 40 || n > GIT_SHA_MAX)
		return fail(x, "import", "import_failed", "the imported branch has no commit: %s",
		            r->msg);
	memcpy(x->sha, r->out, n);
	x->sha[n] = '\0';
	/* A changed commit invalidates the test result on record. */
	if (!x->rec.have || strcmp(x->rec.sha, x->sha) != 0)
		x->tests_line[0] = x->tests_command[0] = '\0';
	rec_write(x, REC_IMPORTED);
	step(x, "import", VERDICT_PASS, "import_done", "%s imported into the mirror at %.12s",
	     x->branch, x->sha);
	do_gate1(x);
}

static void on_import(void *ud, const struct git_result *r)
{
	struct taskexec *x = ud;
	if (stopped(x, "import"))
		return;
	if (!r->ok)
		return fail(x, "import", "import_failed", "%s", r->msg);
	char ref[GIT_REF_MAX + 32];
	snprintf(ref, sizeof ref, GIT_TASK_REF_PREFIX "%s", x->branch);
	const char *args[] = {"rev-parse", "--verify", ref, NULL};
	struct git_cmd c = {.dir = x->mirror, .args = args};
	struct ga_err err = {{0}};
	if (git_run(x->cfg.git, &c, on_rev, x, &err) != 0)
		fail(x, "import", "import_failed", "%s", err.msg);
}

static void do_import(struct taskexec *x)
{
	struct ga_err err = {{0}};
	if (git_import(x->cfg.git, x->mirror, x->work, x->branch, on_import, x, &err) != 0)
		fail(x, "import", "import_failed", "%s", err.msg);
}

static void copy_diff(struct git_diff *to, const struct git_diff *d)
{
	git_diff_free(to);
	to->commits = d->commits;
	to->files_changed = d->files_changed;
	to->insertions = d->insertions;
	to->deletions = d->deletions;
	memcpy(to->shortstat, d->shortstat, sizeof to->shortstat);
	to->files = xcalloc(d->n_files ? d->n_files : 1, sizeof *to->files);
	for (size_t i = 0; i < d->n_files; i++) {
		to->files[i].status = d->files[i].status;
		to->files[i].path = xstrdup(d->files[i].path);
		to->files[i].old_path = d->files[i].old_path ? xstrdup(d->files[i].old_path) : NULL;
	}
	to->n_files = d->n_files;
	to->files_dropped = d->files_dropped;
	for (size_t i = 0; i < d->n_log; i++)
		to->log[i] = xstrdup(d->log[i]);
	to->n_log = d->n_log;
}

static void on_gate1(void *ud, const struct git_result *r, const struct git_diff *d)
{
	struct taskexec *x = ud;
	if (stopped(x, "gate1"))
		return;
	if (!d)
		return fail(x, "gate1", "gate1_diff", "the diff against origin/%s failed: %s",
		            x->base, r->msg);
	copy_diff(&x->diff, d);
	if (d->commits == 0 && x->adopted && !x->coder_ran) {
		step(x, "gate1", VERDICT_INFO, "adopted_empty",
		     "the adopted branch %s holds no commit beyond origin/%s: the coder runs",
		     x->branch, x->base);
		do_coder(x);
		return;
	}
	if (d->commits == 0)
		return fail(x, "gate1", "gate1_no_commits",
		            "no commits on %s beyond origin/%s: the coder committed nothing",
		            x->branch, x->base);
	if (d->n_files == 0)
		return fail(x, "gate1", "gate1_no_files",
		            "%zu commit(s) on %s but no file differs from origin/%s", d->commits,
		            x->branch, x->base);
	step(x, "gate1", VERDICT_PASS, "gate1_commits", "%zu commit(s), %s against origin/%s",
	     d->commits, d->shortstat, x->base);
	if (x->resume_pushed) {
		/* Pushed (so tested) before the interruption. */
		if (!x->tests_line[0])
			err_fmt(x->tests_line, sizeof x->tests_line, "%s", "No tests ran");
		x->t_phase = time_mono_ms();
		return do_gate4(x);
	}
	do_gate2(x);
}

static void do_gate1(struct taskexec *x)
{
	char base[GIT_REF_MAX + 32], head[GIT_REF_MAX + 32];
	snprintf(base, sizeof base, "refs/remotes/origin/%s", x->base);
	/* A branch found pushed is read as the remote has it (just fetched). */
	if (x->resume_pushed)
		snprintf(head, sizeof head, "refs/remotes/origin/%s", x->branch);
	else
		snprintf(head, sizeof head, GIT_TASK_REF_PREFIX "%s", x->branch);
	struct ga_err err = {{0}};
	if (git_diff_summary(x->cfg.git, x->mirror, base, head, on_gate1, x, &err) != 0)
		fail(x, "gate1", "gate1_diff", "%s", err.msg);
}

static void on_tests(void *ud, const struct coder_tests_result *r)
{
	struct taskexec *x = ud;
	x->job = NULL;
	x->res.ms_tests = lap(x);
	err_fmt(x->tests_line, sizeof x->tests_line, "%s", r->line);
	err_fmt(x->tests_command, sizeof x->tests_command, "%s", r->command);
	err_fmt(x->tests_tail, sizeof x->tests_tail, "%s", r->tail);
	if (stopped(x, "gate2"))
		return;
	if (r->found && r->ran && !r->passed)
		return fail(x, "gate2", r->d.rule, "%s", r->d.reason);
	step(x, "gate2", r->passed ? VERDICT_PASS : VERDICT_INFO, r->d.rule, "%s", r->d.reason);
	rec_write(x, REC_CHECKED);
	do_gate3(x);
}

static void do_gate2(struct taskexec *x)
{
	if (x->rec.have && x->rec.phase >= REC_CHECKED && strcmp(x->rec.sha, x->sha) == 0 &&
	    x->rec.tests_line[0]) {
		err_fmt(x->tests_line, sizeof x->tests_line, "%s", x->rec.tests_line);
		err_fmt(x->tests_command, sizeof x->tests_command, "%s", x->rec.tests_command);
		step(x, "gate2", VERDICT_INFO, "tests_on_record",
		     "the tests of %.12s already ran before the restart: %s", x->sha,
		     x->tests_line);
		return do_gate3(x);
	}
	struct coder_tests t;
	coder_detect_tests(x->cfg.coder, x->work, &t);
	const char *ro[] = {x->objects, NULL};
	struct coder_run_opts o = {.work = x->work,
	                           .ctl = x->ctl,
	                           .prompt = "",
	                           .ro_extra = ro,
	                           .git_name = x->agent,
	                           .git_email = x->email};
	struct ga_err err = {{0}};
	x->t_phase = time_mono_ms();
	x->job = coder_run_tests(x->cfg.loop, x->cfg.coder, &o, &t, on_tests, x, &err);
	coder_tests_free(&t);
	if (!x->job)
		fail(x, "gate2", "tests_config", "%s", err.msg);
}

static void on_pushed(void *ud, bool ok, const char *reason)
{
	struct taskexec *x = ud;
	if (stopped(x, "gate3"))
		return;
	if (!ok)
		return fail(x, "gate3", "gate3_push", "the push of %s was refused: %s", x->branch,
		            reason ? reason : "no reason given");
	rec_write(x, REC_PUSHED);
	step(x, "gate3", VERDICT_SENT, "gate3_push", "%s pushed at %.12s", x->branch, x->sha);
	do_gate4(x);
}

static void do_gate3(struct taskexec *x)
{
	x->t_phase = time_mono_ms();
	if (x->revision && !x->resume_pushed && x->remote_sha[0] &&
	    strcmp(x->remote_sha, x->sha) == 0)
		return fail(x, "gate3", "revision_no_change",
		            "the revision left %s at %.12s: nothing answers the review", x->branch,
		            x->sha);
	if (x->remote_sha[0] && strcmp(x->remote_sha, x->sha) == 0) {
		step(x, "gate3", VERDICT_INFO, "gate3_already",
		     "%s is already on the remote at %.12s: nothing to push", x->branch, x->sha);
		rec_write(x, REC_PUSHED);
		return do_gate4(x);
	}
	if (!x->cfg.ports.push)
		return fail(x, "gate3", "gate3_push",
		            "no push port: the caller must push through "
		            "outbound");
	char key[TASKEXEC_KEY_MAX + GIT_SHA_MAX + 64];
	snprintf(key, sizeof key, "push:%s/%s:%s:%s", x->owner, x->repo, x->branch, x->sha);
	struct taskexec_push req = {.key = key,
	                            .owner = x->owner,
	                            .repo = x->repo,
	                            .mirror = x->mirror,
	                            .remote_url = x->url,
	                            .branch = x->branch,
	                            .sha = x->sha};
	struct ga_err err = {{0}};
	if (x->cfg.ports.push(x->cfg.ports.ud, &req, on_pushed, x, &err) != 0)
		fail(x, "gate3", "gate3_push", "the push was refused: %s", err.msg);
}

static void on_gate4(void *ud, const struct git_result *r)
{
	struct taskexec *x = ud;
	x->res.ms_push += lap(x);
	if (stopped(x, "gate4"))
		return;
	char sha[GIT_SHA_MAX + 1];
	if (!r->ok)
		return fail(x, "gate4", "gate4_ls_remote", "ls-remote failed: %s", r->msg);
	if (!git_parse_ls_remote(r->out, x->branch, sha))
		return fail(x, "gate4", "gate4_missing", "%s is not on the remote after the push",
		            x->branch);
	if (strcmp(sha, x->sha) != 0)
		return fail(x, "gate4", "gate4_mismatch",
		            "the remote's %s is at %.12s, not at the pushed %.12s", x->branch, sha,
		            x->sha);
	step(x, "gate4", VERDICT_PASS, "gate4_remote", "the remote has %s at %.12s", x->branch,
	     x->sha);
	do_gate5(x);
}

static void do_gate4(struct taskexec *x)
{
	struct ga_err err = {{0}};
	if (git_ls_remote_branch(x->cfg.git, x->mirror, x->url, x->branch, cred(x), on_gate4, x,
	                         &err) != 0)
		fail(x, "gate4", "gate4_ls_remote", "%s", err.msg);
}

static void on_claim(void *ud, enum taskexec_claim_state st, const char *detail)
{
	struct taskexec *x = ud;
	if (stopped(x, "gate5"))
		return;
	switch (st) {
	case TASKEXEC_CLAIM_STOLEN:
		return fail(x, "gate5", "gate5_claim_stolen",
		            "Task %d is no longer ours (%s); the branch %s is kept",
		            x->t.task_number, detail ? detail : "someone else holds it", x->branch);
	case TASKEXEC_CLAIM_COMPLETED:
		step(x, "gate5", VERDICT_INFO, "gate5_completed",
		     "Task %d was completed meanwhile: stopping without a report",
		     x->t.task_number);
		return finish(x, TASKEXEC_STOPPED);
	case TASKEXEC_CLAIM_UNKNOWN:
		step(x, "gate5", VERDICT_PASS, "gate5_unknown",
		     "the plan could not be read (%s): the gate passes", detail ? detail : "?");
		return do_pr(x);
	default:
		step(x, "gate5", VERDICT_PASS, "gate5_claim", "Task %d is still held by %s",
		     x->t.task_number, x->agent);
		return do_pr(x);
	}
}

static void do_gate5(struct taskexec *x)
{
	if (!x->cfg.ports.claim_check) {
		step(x, "gate5", VERDICT_PASS, "gate5_unchecked", "no plan re-read configured");
		return do_pr(x);
	}
	struct taskexec_claim req = {.owner = x->owner,
	                             .repo = x->repo,
	                             .plan_number = x->t.plan_number,
	                             .task_number = x->t.task_number,
	                             .attempt = x->t.attempt,
	                             .agent = x->agent};
	struct ga_err err = {{0}};
	if (x->cfg.ports.claim_check(x->cfg.ports.ud, &req, on_claim, x, &err) != 0)
		on_claim(x, TASKEXEC_CLAIM_UNKNOWN, err.msg);
}

static void do_pr(struct taskexec *x)
{
	x->pr_title = taskexec_pr_title(x->t.task_number, x->title);
	x->pr_body = taskexec_pr_body(&x->t, x->branch, x->diff.shortstat, x->diff.files,
	                              x->diff.n_files, x->diff.files_dropped,
	                              x->tests_line[0] ? x->tests_line : "None found");
	step(x, "pr", VERDICT_PASS, "pr_ready", "%s → %s: \"%s\"", x->branch, x->base, x->pr_title);
	finish(x, TASKEXEC_PUSHED);
}

/* ---- start -------------------------------------------------------------------------------------
 */

static char *dup_or(const char *s, const char *def)
{
	return xstrdup(s && *s ? s : def);
}

static char **dup_files(const char *const *files)
{
	size_t n = 0;
	while (files && files[n])
		n++;
	char **v = xcalloc(n + 1, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = xstrdup(files[i]);
	return v;
}

struct taskexec *taskexec_start(const struct taskexec_config *cfg, const struct taskexec_task *t,
                                taskexec_done_fn done, void *ud, struct ga_err *err)
{
	if (!cfg || !cfg->loop || !cfg->git || !cfg->coder || !cfg->skills || !t || !done) {
		err_set(err, "taskexec: missing configuration");
		return NULL;
	}
	if (!cfg->work_root || cfg->work_root[0] != '/') {
		err_set(err, "taskexec: the work root must be an absolute path");
		return NULL;
	}
	if (!skills_find(cfg->skills, TASKEXEC_SKILL)) {
		err_set(err, "taskexec: the skill '%s' is not loaded", TASKEXEC_SKILL);
		return NULL;
	}
	if (!t->agent || !plan_valid_login(t->agent)) {
		err_set(err, "taskexec: '%s' is not a GitHub login", t->agent ? t->agent : "");
		return NULL;
	}
	if (t->plan_number < 1 || t->task_number < 1 || t->task_number > PLAN_TASK_NUMBER_MAX ||
	    t->attempt < 1 || t->attempt > PLAN_TASK_NUMBER_MAX || !t->task_title ||
	    !t->remote_url) {
		err_set(err,
		        "taskexec: plan %d, task %d, attempt %d: a number is out of range or the "
		        "title or remote is missing",
		        t->plan_number, t->task_number, t->attempt);
		return NULL;
	}
	struct taskexec *x = xcalloc(1, sizeof *x);
	x->mirror = git_mirror_path(cfg->git, t->owner, t->repo);
	if (!x->mirror || plan_branch_name(t->task_number, t->task_title, t->attempt, x->branch,
	                                   sizeof x->branch)) {
		err_set(err, "taskexec: '%s/%s' is not a repository name this agent uses",
		        t->owner ? t->owner : "", t->repo ? t->repo : "");
		free(x->mirror);
		free(x);
		return NULL;
	}
	x->cfg = *cfg;
	x->done = done;
	x->ud = ud;
	x->t0 = x->t_phase = time_mono_ms();
	x->owner = xstrdup(t->owner);
	x->repo = xstrdup(t->repo);
	x->url = xstrdup(t->remote_url);
	x->plan_title = dup_or(t->plan_title, "(untitled plan)");
	x->plan_goal = dup_or(t->plan_goal, "(no goal given)");
	x->title = xstrdup(t->task_title);
	x->desc = dup_or(t->task_description, "(no description)");
	x->deps = dup_or(t->deps_done, "none");
	x->revision = t->revision && *t->revision ? xstrdup(t->revision) : NULL;
	x->agent = xstrdup(t->agent);
	x->email =
	        t->email ? xstrdup(t->email) : xasprintf("%s@users.noreply.github.com", t->agent);
	x->files = dup_files(t->files);
	if (t->cred && t->cred->token) {
		x->cred_user = xstrdup(t->cred->username ? t->cred->username : "x-access-token");
		x->cred_token = xstrdup(t->cred->token);
		x->cred = (struct git_cred){x->cred_user, x->cred_token};
	}
	x->t = *t;
	x->t.owner = x->owner;
	x->t.repo = x->repo;
	x->t.remote_url = x->url;
	x->t.plan_title = x->plan_title;
	x->t.plan_goal = x->plan_goal;
	x->t.task_title = x->title;
	x->t.task_description = x->desc;
	x->t.deps_done = x->deps;
	x->t.revision = x->revision;
	x->t.agent = x->agent;
	x->t.email = x->email;
	x->t.files = (const char *const *)x->files;
	x->t.cred = NULL;
	taskexec_key(t->owner, t->repo, t->plan_number, t->task_number, x->key, sizeof x->key);
	x->work = xasprintf("%s/%s-%s-plan%d-task%d-a%d", cfg->work_root, t->owner, t->repo,
	                    t->plan_number, t->task_number, t->attempt);
	x->ctl = xasprintf("%s.ctl", x->work);
	x->objects = xasprintf("%s/objects", x->mirror);
	if (cfg->state) {
		rec_read(x);
		if (x->rec.have && x->rec.attempt != t->attempt)
			memset(&x->rec, 0,
			       sizeof x->rec); /* an older attempt: its branch is not ours */
	}
	if (!x->rec.have)
		x->rec.started_ms = time_now_ms();
	if (git_mirror_sync(cfg->git, x->mirror, x->url, cred(x), on_mirror, x, err) != 0) {
		job_free(x);
		return NULL;
	}
	return x;
}

void taskexec_cancel(struct taskexec *x)
{
	if (!x)
		return;
	x->cancelled = true;
	if (x->job)
		coder_cancel(x->job);
}

/* ---- the pull request
 * ---------------------------------------------------------------------------- */

char *taskexec_pr_title(int task, const char *title)
{
	return xasprintf("task(%d): %s", task, title);
}

char *taskexec_pr_body(const struct taskexec_task *t, const char *branch, const char *shortstat,
                       const struct git_file *files, size_t n_files, size_t files_dropped,
                       const char *tests_line)
{
	struct strbuf sb = {0};
	sb_printf(&sb, "## Task %d from plan #%d\n\n", t->task_number, t->plan_number);
	sb_printf(&sb, "**Plan:** %s\n", t->plan_title ? t->plan_title : "");
	sb_printf(&sb, "**Goal:** %s\n\n", t->plan_goal ? t->plan_goal : "");
	sb_printf(&sb, "### Changes\n%s\n\n", shortstat && *shortstat ? shortstat : "(no summary)");
	sb_printf(&sb, "**Files changed (%zu):**\n", n_files + files_dropped);
	size_t shown = n_files < TASKEXEC_MAX_PR_FILES ? n_files : TASKEXEC_MAX_PR_FILES;
	for (size_t i = 0; i < shown; i++)
		sb_printf(&sb, "- `%s`\n", files[i].path);
	if (n_files + files_dropped > shown)
		sb_printf(&sb, "- … and %zu more\n", n_files + files_dropped - shown);
	sb_printf(&sb, "\n**Tests:** %s\n\n---\nPart of #%d\n",
	          tests_line ? tests_line : "None found", t->plan_number);
	struct plan_marker m = {.kind = PLAN_MARK_PR,
	                        .plan = t->plan_number,
	                        .task = t->task_number,
	                        .attempt = t->attempt};
	snprintf(m.agent, sizeof m.agent, "%s", t->agent ? t->agent : "");
	snprintf(m.branch, sizeof m.branch, "%s", branch ? branch : "");
	char marker[PLAN_MARKER_MAX + 1];
	if (plan_marker_format(&m, marker, sizeof marker) == 0)
		sb_printf(&sb, "\n%s\n", marker);
	return sb_detach(&sb);
}
