/*
 * dash_host — the dashboard on a real loop with real modules, for the API
 * and browser tests: a decision log and a state store in a memory
 * directory, a pipeline (gate defaults, no composer: a message walks
 * event → gate → compose, and a paused pipeline blocks it at the gate), a
 * commitment ledger with one commitment, send permissions and one audit
 * line.
 *
 *   dash_host --memory DIR --web DIR [--addr HOST:PORT] [--token T]
 *
 * Prints "listening <port> <url>" on stdout once serving (or the error and
 * exits 2). Commands on stdin, one a line, each answered by one line:
 *   event <id> <author name> <text…>   a person's message in space:room
 *                                       → "ok"
 *   burst <n>                           n decisions with long reasons, at
 *                                       once (a slow client's test) → "ok"
 *   secret <value>                      registers a secret → "ok"
 *   state                               → "paused=0|1 jobs=<n>"
 *   quit                                closes everything, exits 0
 */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/fsx.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "modules/budget/budget.h"
#include "modules/commitments/ledger.h"
#include "modules/conversation/event.h"
#include "modules/dashboard/dashboard.h"
#include "modules/decisions/log.h"
#include "modules/outbound/audit.h"
#include "modules/pipeline/control.h"
#include "modules/pipeline/pipeline.h"
#include "modules/state/state.h"

#define LINE_MAX_BYTES 8192

struct host {
	uv_loop_t loop;
	uv_pipe_t in;
	char line[LINE_MAX_BYTES];
	size_t len;
	struct state_store st;
	struct decision_log *dlog;
	struct ledger ledger;
	struct budget budget;
	struct pipeline *pipeline;
	struct dashboard *dash;
	char secret[256];
	int paused_calls;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static cJSON *status_json(void *ud)
{
	struct host *h = ud;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "state", "running");
	cJSON_AddBoolToObject(o, "socialOnly", false);
	cJSON *f = cJSON_AddObjectToObject(o, "features");
	cJSON *sp = cJSON_AddObjectToObject(f, "space");
	cJSON_AddBoolToObject(sp, "enabled", true);
	cJSON_AddStringToObject(sp, "detail", "test room");
	cJSON *gh = cJSON_AddObjectToObject(f, "github");
	cJSON_AddBoolToObject(gh, "enabled", false);
	cJSON_AddStringToObject(gh, "detail", "AGENT_GITHUB_TOKEN not set");
	/* "services" as cmd/services.h puts it: each service's own shape
	 * (GitHub's rateBudget with resetMs, a bucket with an ISO reset, a
	 * service without a status). */
	cJSON *svcs = cJSON_AddObjectToObject(o, "services");
	cJSON *sg = cJSON_AddObjectToObject(svcs, "github");
	cJSON_AddStringToObject(sg, "login", "dashbot-gh");
	cJSON_AddNumberToObject(sg, "polls", 12);
	cJSON *rb = cJSON_AddObjectToObject(sg, "rateBudget");
	cJSON_AddNumberToObject(rb, "limit", 5000);
	cJSON_AddNumberToObject(rb, "remaining", 4321);
	cJSON_AddNumberToObject(rb, "resetMs", (double)(time_now_ms() + 600000));
	cJSON *sb = cJSON_AddObjectToObject(svcs, "bluesky");
	cJSON_AddNumberToObject(sb, "requests", 7);
	cJSON_AddNumberToObject(sb, "rateLimited", 1);
	char reset[TIME_ISO_LEN + 1];
	cJSON *br = cJSON_AddObjectToObject(sb, "rate");
	cJSON_AddNumberToObject(br, "remaining", 250);
	cJSON_AddNumberToObject(br, "limit", 3000);
	cJSON_AddStringToObject(br, "resetAt", time_format_iso(time_now_ms() + 300000, reset));
	cJSON_AddStringToObject(sb, "lastError", "429 from bsky.social");
	/* a bucket deeper down, its reset in epoch seconds */
	cJSON *cr = cJSON_AddObjectToObject(cJSON_AddObjectToObject(sb, "limits"), "createRecord");
	cJSON_AddNumberToObject(cr, "remaining", 40);
	cJSON_AddNumberToObject(cr, "limit", 100);
	cJSON_AddNumberToObject(cr, "reset", (double)(time_now_ms() / 1000 + 3 * 3600 + 30));
	cJSON_AddNullToObject(svcs, "reflection");
	/* the workspace's status (modules/workspace wsp_status) with its pull
	 * requests: one awaiting a review for 38 minutes, one handed to the
	 * owner after two revisions, one merged */
	char ws[2048];
	long long now = (long long)time_now_ms();
	snprintf(ws, sizeof ws,
	         "{\"login\":\"dashbot-gh\",\"taskWork\":true,\"watched\":[],\"plans\":[],"
	         "\"task\":null,\"lastCycle\":{\"atMs\":%lld,\"ms\":40,\"requests\":3,"
	         "\"notModified\":2,\"plans\":1},\"counters\":{\"prs\":3},\"pulls\":["
	         "{\"repo\":\"acme/www-x\",\"number\":12,\"title\":\"Add the page\","
	         "\"url\":\"https://github.com/acme/www-x/pull/12\",\"plan\":7,\"task\":3,"
	         "\"author\":\"dashbot-gh\",\"reviewer\":\"bob\",\"state\":\"awaiting_review\","
	         "\"next\":\"bob\",\"since_ms\":%lld,\"revisions\":0},"
	         "{\"repo\":\"acme/www-x\",\"number\":9,\"title\":\"<img src=x onerror=alert(1)>\","
	         "\"url\":\"javascript:alert(1)\",\"plan\":7,\"task\":2,\"author\":\"carl\","
	         "\"reviewer\":\"dashbot-gh\",\"state\":\"owner\",\"next\":\"olive\","
	         "\"since_ms\":%lld,\"revisions\":2},"
	         "{\"repo\":\"acme/www-x\",\"number\":8,\"plan\":7,\"task\":1,\"author\":\"bob\","
	         "\"state\":\"merged\",\"next\":\"owner\",\"since_ms\":%lld}],\"pullsDropped\":1}",
	         now, now - 38 * 60000, now - 5 * 60000, now - 2 * 60000);
	cJSON_AddItemToObject(svcs, "workspace", cJSON_Parse(ws));
	/* What a careless status writer might include: must reach no page. */
	cJSON_AddStringToObject(o, "debugEcho", h->secret);
	cJSON_AddNumberToObject(o, "pausedCalls", h->paused_calls);
	return o;
}

static void on_paused(void *ud, bool paused)
{
	struct host *h = ud;
	(void)paused;
	h->paused_calls++;
}

static void feed(struct host *h, const char *id, const char *name, const char *text)
{
	char mid[300], aid[300];
	snprintf(mid, sizeof mid, "space:%s", id);
	snprintf(aid, sizeof aid, "space:%s", name);
	struct conv_event_src src = {.platform = CONV_PLATFORM_SPACE,
	                             .conversation = "space:room",
	                             .message_id = mid,
	                             .author_id = aid,
	                             .author_name = name,
	                             .author_kind = CONV_AUTHOR_HUMAN,
	                             .text = text,
	                             .text_len = strlen(text),
	                             .addressed_me = true,
	                             .time_ms = time_now_ms()};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	pipeline_event(h->pipeline, &ev);
	conv_event_free(&ev);
}

static void command(struct host *h, char *line)
{
	char *rest = strchr(line, ' ');
	if (rest)
		*rest++ = '\0';
	if (strcmp(line, "event") == 0 && rest) {
		char *id = strtok(rest, " ");
		char *name = strtok(NULL, " ");
		char *text = strtok(NULL, "");
		if (!id || !name) {
			say("error: event <id> <name> <text>");
			return;
		}
		feed(h, id, name, text ? text : "");
		say("ok");
	} else if (strcmp(line, "burst") == 0 && rest) {
		long n = strtol(rest, NULL, 10);
		struct decision d;
		for (long i = 0; i < n; i++) {
			decision_set(&d, VERDICT_INFO, "burst", "burst %ld: %0280d", i, 0);
			decision_log_add(h->dlog, time_now_ms(), "space", "space:burst",
			                 "space:burst", STAGE_RECORD, &d);
		}
		say("ok");
	} else if (strcmp(line, "secret") == 0 && rest) {
		snprintf(h->secret, sizeof h->secret, "%s", rest);
		log_add_secret(rest);
		say("ok");
	} else if (strcmp(line, "state") == 0) {
		say("paused=%d jobs=%zu", pipeline_paused(h->pipeline) ? 1 : 0,
		    pipeline_jobs(h->pipeline));
	} else if (strcmp(line, "quit") == 0) {
		/* The order a daemon follows: the dashboard before what it
		 * borrows. */
		dashboard_close(h->dash);
		h->dash = NULL;
		pipeline_free(h->pipeline);
		h->pipeline = NULL;
		uv_read_stop((uv_stream_t *)&h->in);
		uv_close((uv_handle_t *)&h->in, NULL);
	} else {
		say("error: unknown command '%s'", line);
	}
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
	(void)hd;
	static char b[4096];
	(void)suggested;
	*buf = uv_buf_init(b, sizeof b);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct host *h = s->data;
	if (n < 0) {
		/* stdin closed: the test is gone; end like quit. */
		char q[] = "quit";
		command(h, q);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char c = buf->base[i];
		if (c == '\n') {
			h->line[h->len] = '\0';
			h->len = 0;
			command(h, h->line);
			if (!h->dash)
				return;
		} else if (h->len + 1 < sizeof h->line) {
			h->line[h->len++] = c;
		}
	}
}

static void setup_memory(struct host *h, const char *memory)
{
	struct ga_err err = {{0}};
	/* Send permissions: an allowlist with one pattern each way. */
	char *pp = fsx_join(memory, "send_permissions.json");
	const char *perms = "{\"mode\":\"allowlist\",\"allowlist\":[\"space:room\"],"
	                    "\"denylist\":[\"github:acme:*\"]}";
	fsx_write_atomic(pp, perms, strlen(perms), &err);
	free(pp);
	struct audit_entry a = {.time_ms = time_now_ms(),
	                        .source = "space",
	                        .target = "github:acme:site:issue:7",
	                        .allowed = false,
	                        .pattern = "github:acme:*",
	                        .reason = "denied by github:acme:*"};
	audit_append(memory, &a, &err);
	if (ledger_open(&h->ledger, memory, &err) == 0) {
		cJSON *params = cJSON_CreateObject();
		cJSON_AddStringToObject(params, "repo", "acme/site");
		cJSON_AddStringToObject(params, "title", "Fix the footer");
		cJSON_AddStringToObject(params, "html_url",
		                        "https://github.com/acme/site/issues/7");
		char id[LEDGER_ID_MAX];
		ledger_add(&h->ledger, "create_issue", "space", params, time_now_ms(), id, &err);
		cJSON_Delete(params);
	}
}

int main(int argc, char **argv)
{
	const char *memory = NULL, *web = NULL, *addr = "127.0.0.1:0", *token = NULL;
	static const struct option opts[] = {{"memory", required_argument, NULL, 'm'},
	                                     {"web", required_argument, NULL, 'w'},
	                                     {"addr", required_argument, NULL, 'a'},
	                                     {"token", required_argument, NULL, 't'},
	                                     {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'm')
			memory = optarg;
		else if (c == 'w')
			web = optarg;
		else if (c == 'a')
			addr = optarg;
		else if (c == 't')
			token = optarg;
		else
			return 2;
	}
	if (!memory || !web) {
		fprintf(stderr, "usage: dash_host --memory DIR --web DIR [--addr A] [--token T]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	log_init(LOG_LEVEL_WARN, 0, stderr);
	struct host *h = xcalloc(1, sizeof *h);
	uv_loop_init(&h->loop);
	struct ga_err err = {{0}};
	if (state_store_init(&h->st, memory, "test", &err) != 0) {
		say("error: %s", err.msg);
		return 2;
	}
	h->dlog = decision_log_open(memory, &err);
	setup_memory(h, memory);
	/* a day's model use: 1,200 of 50,000 tokens in 3 calls */
	budget_init(&h->budget, &h->st, 50000);
	for (int i = 0; i < 3; i++)
		budget_record(&h->budget, time_now_ms(), 300, 100, 400, &err);
	struct control_state cs;
	control_load(&h->st, &cs);
	struct pipeline_config pc = {
	        .loop = &h->loop, .st = &h->st, .dlog = h->dlog, .paused = cs.paused};
	gate_config_defaults(&pc.gate);
	pc.gate.self_name = "dashbot";
	h->pipeline = pipeline_new(&pc, &err);
	if (!h->pipeline) {
		say("error: %s", err.msg);
		return 2;
	}
	struct dashboard_config dc = {.loop = &h->loop,
	                              .addr = addr,
	                              .token = token,
	                              .web_dir = web,
	                              .dlog = h->dlog,
	                              .pipeline = h->pipeline,
	                              .st = &h->st,
	                              .ledger = &h->ledger,
	                              .budget = &h->budget,
	                              .memory_dir = memory,
	                              .agent_name = "dashbot",
	                              .started_ms = time_now_ms(),
	                              .status_json = status_json,
	                              .on_paused = on_paused,
	                              .ud = h};
	h->dash = dashboard_new(&dc, &err);
	int rc = 0;
	if (!h->dash) {
		say("error: %s", err.msg);
		rc = 2;
	} else {
		say("listening %d %s", dashboard_port(h->dash), dashboard_url(h->dash));
		uv_pipe_init(&h->loop, &h->in, 0);
		uv_pipe_open(&h->in, 0);
		h->in.data = h;
		uv_read_start((uv_stream_t *)&h->in, on_alloc, on_read);
	}
	uv_run(&h->loop, UV_RUN_DEFAULT);
	dashboard_close(h->dash); /* after a failed start: NULL */
	pipeline_free(h->pipeline);
	ledger_close(&h->ledger);
	decision_log_close(h->dlog);
	uv_run(&h->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&h->loop) != 0)
		fprintf(stderr, "dash_host: a handle was left open\n");
	state_store_free(&h->st);
	free(h);
	log_clear_secrets();
	return rc;
}
