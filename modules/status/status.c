/* status — memory/status.json: built, saved, read back (status.h). */
#include "modules/status/status.h"

#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "modules/commitments/ledger.h"
#include "modules/conversation/event.h"
#include "modules/pipeline/pipeline.h"
#include "modules/scheduler/sched.h"
#include "modules/workspace/workspace.h"
#include "modules/workspace/wsp_view.h"

static void add_pipeline(cJSON *s, const struct pipeline *p)
{
	char iso[TIME_ISO_LEN + 1];
	cJSON_AddBoolToObject(s, "paused", pipeline_paused(p));
	cJSON_AddNumberToObject(s, "jobsInFlight", (double)pipeline_jobs(p));
	int64_t last = pipeline_last_event_ms(p);
	if (last)
		cJSON_AddStringToObject(s, "lastActivity", time_format_iso(last, iso));
	cJSON *per = cJSON_AddObjectToObject(s, "lastActivityBy");
	for (int i = 0; i < CONV_PLATFORM_COUNT; i++) {
		int64_t t = pipeline_last_event_ms_of(p, (enum conv_platform)i);
		if (t)
			cJSON_AddStringToObject(per, conv_platform_name((enum conv_platform)i),
			                        time_format_iso(t, iso));
	}
}

static void add_jobs(cJSON *s, const struct sched *sched)
{
	cJSON *jobs = cJSON_AddArrayToObject(s, "jobs");
	struct sched_job_stats st[SCHED_MAX_JOBS];
	size_t n = sched ? sched_stats(sched, st, SCHED_MAX_JOBS) : 0;
	for (size_t i = 0; i < n; i++) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "name", st[i].name);
		cJSON_AddNumberToObject(j, "intervalMs", (double)st[i].interval_ms);
		cJSON_AddNumberToObject(j, "runs", (double)st[i].runs);
		cJSON_AddNumberToObject(j, "skipped", (double)st[i].skipped);
		cJSON_AddBoolToObject(j, "running", st[i].running);
		cJSON_AddItemToArray(jobs, j);
	}
}

cJSON *status_build(const struct status_inputs *in)
{
	cJSON *s = cJSON_CreateObject();
	char iso[TIME_ISO_LEN + 1];
	cJSON_AddNumberToObject(s, "pid", (double)getpid());
	cJSON_AddStringToObject(s, "state", in->state);
	cJSON_AddStringToObject(s, "agent", in->cfg->agent_name);
	cJSON_AddStringToObject(s, "startedAt", time_format_iso(in->started_ms, iso));
	cJSON_AddBoolToObject(s, "socialOnly", in->social_only);
	struct config_feature f[CONFIG_FEATURE_COUNT];
	config_features(in->cfg, f);
	cJSON *feats = cJSON_AddObjectToObject(s, "features");
	for (int i = 0; i < CONFIG_FEATURE_COUNT; i++) {
		cJSON *o = cJSON_AddObjectToObject(feats, f[i].name);
		cJSON_AddBoolToObject(o, "enabled", f[i].enabled);
		cJSON_AddStringToObject(o, "detail", f[i].detail);
	}
	if (in->pipeline)
		add_pipeline(s, in->pipeline);
	cJSON_AddStringToObject(s, "coordination", in->coordination ? in->coordination : "none");
	cJSON *cm = cJSON_AddObjectToObject(s, "commitments");
	for (int i = LEDGER_PENDING; i <= LEDGER_ABANDONED; i++)
		cJSON_AddNumberToObject(
		        cm, ledger_status_name((enum ledger_status)i),
		        in->ledger ? (double)ledger_count(in->ledger, (enum ledger_status)i) : 0);
	cJSON_AddItemToObject(s, "services", in->services ? in->services : cJSON_CreateObject());
	if (in->space)
		cJSON_AddStringToObject(s, "space", in->space);
	add_jobs(s, in->sched);
	return s;
}

int status_save(const struct state_store *st, const cJSON *s, int64_t now_ms, struct ga_err *err)
{
	return state_save(st, STATUS_STATE_NAME, s, now_ms, err);
}

cJSON *status_load(const struct state_store *st)
{
	return state_load(st, STATUS_STATE_NAME, NULL, NULL, NULL);
}

static void report_paused(FILE *out, const struct control_state *cs)
{
	if (!cs->paused) {
		fprintf(out, "  paused       no\n");
		return;
	}
	char since[TIME_ISO_LEN + 1] = "?";
	if (cs->since_ms)
		time_format_iso(cs->since_ms, since);
	fprintf(out,
	        "  paused       yes, since %s (by %s): answers only /resume and /status; "
	        "'general-agent resume' resumes\n",
	        since, cs->by[0] ? cs->by : "?");
}

/* A job's rhythm: "every 15s", "long-running" or "once". */
static const char *job_when(const cJSON *job, char *buf, size_t cap)
{
	int64_t every = json_int_or(job, "intervalMs", 0);
	if (every > 0)
		snprintf(buf, cap, "every %llds", (long long)(every / 1000));
	else
		snprintf(buf, cap, "%s",
		         json_bool_or(job, "running", false) ? "long-running" : "once");
	return buf;
}

static void report_jobs(FILE *out, const cJSON *jobs)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, jobs)
	{
		char when[48];
		job_when(it, when, sizeof when);
		fprintf(out, "  job %-16s %-12s runs %lld skipped %lld%s\n",
		        json_string_or(it, "name", "?"), when,
		        (long long)json_int_or(it, "runs", 0),
		        (long long)json_int_or(it, "skipped", 0),
		        json_bool_or(it, "running", false) ? " (running)" : "");
	}
}

/* What the agent waits for on each pull request ("now"), then the pull
 * requests themselves, one line each (the list is bounded by the
 * workspace: WSP_MAX_PULLS, the rest counted in pullsDropped). */
static void report_pulls(FILE *out, const cJSON *ws, int64_t now_ms)
{
	const cJSON *pulls = cJSON_GetObjectItemCaseSensitive(ws, "pulls");
	const char *login = json_string_or(ws, "login", NULL);
	char line[600];
	const cJSON *p;
	int open = 0, done = 0;
	cJSON_ArrayForEach(p, pulls)
	{
		const char *st = json_string_or(p, "state", "");
		if (strcmp(st, "merged") == 0 || strcmp(st, "closed") == 0)
			done++;
		else
			open++;
		if (wsp_view_pull_wait(p, login, now_ms, line, sizeof line))
			fprintf(out, "  now          %s\n", line);
	}
	long long dropped = (long long)json_int_or(ws, "pullsDropped", 0);
	if (!open && !done && !dropped)
		return;
	fprintf(out, "  pulls        %d open, %d merged or closed in the last hour", open, done);
	if (dropped)
		fprintf(out, ", %lld more not listed", dropped);
	fputc('\n', out);
	cJSON_ArrayForEach(p, pulls)
	{
		if (wsp_view_pull_line(p, now_ms, line, sizeof line))
			fprintf(out, "    %s\n", line);
	}
}

void status_report(FILE *out, bool running, int pid, const char *memory_dir, const cJSON *s,
                   const char *tokens, const struct control_state *cs, int64_t now_ms)
{
	if (!running)
		fprintf(out, "general-agent: not running (memory %s)\n", memory_dir);
	else
		fprintf(out, "general-agent: running, pid %d (memory %s)\n", pid, memory_dir);
	if (!s) {
		fprintf(out,
		        "  no status recorded yet (the daemon has not run with this memory)\n");
		if (tokens)
			fprintf(out, "  tokens       %s\n", tokens);
		/* The kill switch is its own file: set before the first start,
		 * it holds at that start. */
		report_paused(out, cs);
		return;
	}
	fprintf(out, "  agent %s, started %s, last state %s%s\n", json_string_or(s, "agent", "?"),
	        json_string_or(s, "startedAt", "?"), json_string_or(s, "state", "?"),
	        json_bool_or(s, "socialOnly", false) ? ", social-only" : "");
	if (tokens)
		fprintf(out, "  tokens       %s\n", tokens);
	/* Read from its own file: it holds even when the status file is older
	 * than the last pause. */
	report_paused(out, cs);
	const char *space = json_string_or(s, "space", NULL);
	if (space)
		fprintf(out, "  space        %s\n", space);
	const char *coord = json_string_or(s, "coordination", NULL);
	if (coord)
		fprintf(out, "  coordination %s\n", coord);
	const char *last = json_string_or(s, "lastActivity", NULL);
	fprintf(out, "  last message %s, %lld in flight\n", last ? last : "none yet",
	        (long long)json_int_or(s, "jobsInFlight", 0));
	const cJSON *cm = cJSON_GetObjectItemCaseSensitive(s, "commitments");
	if (cm)
		fprintf(out,
		        "  commitments  %lld pending, %lld in progress, %lld failed, %lld "
		        "completed "
		        "(general-agent commitments lists them)\n",
		        (long long)json_int_or(cm, "pending", 0),
		        (long long)json_int_or(cm, "in_progress", 0),
		        (long long)json_int_or(cm, "failed", 0),
		        (long long)json_int_or(cm, "completed", 0));
	const cJSON *ws = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(s, "services"), "workspace");
	if (ws) {
		char line[600];
		wsp_status_summary(ws, line, sizeof line);
		fprintf(out, "  workspaces   %s\n", line);
		if (wsp_status_task_line(ws, line, sizeof line))
			fprintf(out, "  task         %s\n", line);
		report_pulls(out, ws, now_ms);
	}
	const cJSON *pl;
	cJSON_ArrayForEach(pl, cJSON_GetObjectItemCaseSensitive(s, "lastActivityBy"))
	{
		if (cJSON_IsString(pl))
			fprintf(out, "    %-10s %s\n", pl->string, pl->valuestring);
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(s, "features"))
	{
		fprintf(out, "  %-12s %-4s %s\n", it->string,
		        json_bool_or(it, "enabled", false) ? "on" : "off",
		        json_string_or(it, "detail", ""));
	}
	report_jobs(out, cJSON_GetObjectItemCaseSensitive(s, "jobs"));
}

void status_console(struct strbuf *out, const cJSON *s, int64_t now_ms)
{
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(s, "jobs");
	sb_printf(out, "%s, %d job(s)", json_bool_or(s, "paused", false) ? "PAUSED" : "running",
	          cJSON_GetArraySize(jobs));
	const cJSON *it;
	cJSON_ArrayForEach(it, jobs)
	{
		bool running = json_bool_or(it, "running", false);
		char when[48];
		job_when(it, when, sizeof when);
		sb_printf(out, "\n  %-14s %-12s runs %lld  skipped %lld%s",
		          json_string_or(it, "name", "?"), when,
		          (long long)json_int_or(it, "runs", 0),
		          (long long)json_int_or(it, "skipped", 0), running ? "  (running)" : "");
	}
	const char *space = json_string_or(s, "space", NULL);
	if (space)
		sb_printf(out, "\n  room           %s", space);
	sb_printf(out, "\n  coordination   %s", json_string_or(s, "coordination", "none"));
	sb_printf(out, "\n  in flight      %lld message(s)",
	          (long long)json_int_or(s, "jobsInFlight", 0));
	const cJSON *ws = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(s, "services"), "workspace");
	const char *login = json_string_or(ws, "login", NULL);
	const cJSON *p;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(ws, "pulls"))
	{
		char line[600];
		if (wsp_view_pull_wait(p, login, now_ms, line, sizeof line))
			sb_printf(out, "\n  now            %s", line);
	}
}
