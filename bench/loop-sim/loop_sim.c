/*
 * loop-sim — does a room of eager, echo-prone agents fall quiet on its own?
 * Real binaries: one `agent-space`, N `general-agent`
 * processes (each its own home and memory), all talking to eager_model.h,
 * a model that always wants to speak, restates the last message, names
 * other agents and promises work. The host (this program, typing on the
 * room's stdin like the person at the server's terminal) says one thing per
 * round; an observer member (WebSocket, capabilities ["social"] so it never
 * owns GitHub work) records everything the room relays.
 *
 * Per round and in total it measures
 *   messages    agent chats after the host message until the room is quiet
 *               (no agent chat, typing or model call for --quiet-ms);
 *   chain       the longest `chain` the room relayed (the agents' own count
 *               of agent hops since the host);
 *   echoes      agent chats that reached the room although the validator
 *               (modules/validator, the same library and thresholds the
 *               agents run) calls them echoes, judged against the room's
 *               last PIPELINE_ECHO_WINDOW messages as relayed: an echo
 *               opener, or the ensemble (its borderline band included: the
 *               agents have no judge, so the band is rejected). As in §9
 *               check 5, a message that carried a commitment is exempt from
 *               the ensemble; those are counted apart ("exempt");
 *   duplicates  commitments for one host request beyond the first, over
 *               every agent's memory/commitments.jsonl (source "space",
 *               grouped by the request their title names) and the room's
 *               claims (distinct claimants of one action target);
 *   quiescence  host message → last agent chat of the round.
 * Targets: every round quiet with the longest chain ≤ MAX_ACL, 0 echoes
 * delivered, 0 duplicate actions; PASS/FAIL for each, exit 1 when one
 * fails (2 when the run itself could not be carried out).
 *
 * --restart-at K stops the room before round K (SIGTERM) and starts a
 * fresh agent-space on the same port and data directory; the agents and the
 * observer reconnect and the rounds go on.
 *
 * Bounds: LOOPSIM_CHATS_MAX chats, LOOPSIM_COMMITS_MAX commitments and
 * LOOPSIM_CLAIMS_MAX claims per run (past them the run stops with an
 * error: a room that produces that much never went quiet); a round lasts
 * at most --round-max-ms.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* First: its X-macro table uses the name VSTOP, which <termios.h> (via
 * pipeline.h → uv.h) defines as a number. */
#include "modules/validator/validator_text.h"

#include "common/fsx.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/pipeline/pipeline.h"
#include "modules/validator/echo.h"
#include "modules/validator/validator.h"
#include "proc.h"
#include "tests/fakes/eager/eager_model.h"
#include "tests/integration/space/wsclient.h"
#include "testutil.h"

#define LOOPSIM_CHATS_MAX       20000
#define LOOPSIM_COMMITS_MAX     5000
#define LOOPSIM_CLAIMS_MAX      5000
#define LOOPSIM_ROUNDS_MAX      1000
#define LOOPSIM_STARTUP_MS      30000 /* an agent or the room coming up */
#define LOOPSIM_REJOIN_MS       60000 /* everyone back after a restart */
#define LOOPSIM_LEDGER_MAX      (16 * 1024 * 1024)
#define LOOPSIM_COMMIT_EARLY_MS 2000 /* a commitment belongs to a chat sent ... */
#define LOOPSIM_COMMIT_LATE_MS  8000 /* ... this long before/after it */
#define OBSERVER_NAME           "loop-sim-observer"
/* --mixed: the member that behaves like a TypeScript reference agent */
#define PEER_NAME     "Tess"
#define PEER_GAP_MS   3300 /* the room drops a member's chat within 3 s */
#define PEER_ACTS_MAX 16

static const char *const agent_names[EAGER_AGENTS_MAX] = {
        "Ada", "Ben", "Cal", "Dee", "Eve", "Fay", "Gus", "Hal",
        "Ivy", "Jon", "Kit", "Lou", "Max", "Ned", "Oli", "Pam",
};

/* The host's lines, one per round in turn: action requests (some naming an
 * agent), discussion questions, an opinion. The round number keeps each
 * one a new request. %1$s: an agent's name, %2$d: the round. */
static const struct host_line {
	const char *fmt;
	bool action;
} host_lines[] = {
        {"Create an issue in acme/widgets for the login timeout bug (round %2$d)", true},
        {"What do you all think about moving the build to CMake presets? (round %2$d)", false},
        {"@%1$s please open an issue about the flaky websocket tests in acme/widgets (round "
         "%2$d)",
         true},
        {"How should we handle retries when GitHub rate limits us? (round %2$d)", false},
        {"File an issue in acme/widgets: the dashboard shows stale counts after a reconnect "
         "(round %2$d)",
         true},
        {"I think the nightly job should run at 02:00 instead of midnight (round %2$d)", false},
        {"Can someone write up a plan for the cache eviction policy in acme/widgets (round "
         "%2$d)",
         true},
        {"%1$s, what would you name the new build farm? (round %2$d)", false},
};
#define HOST_LINES (sizeof host_lines / sizeof host_lines[0])

struct opts {
	int agents, rounds, restart_at, max_acl, seed;
	int64_t quiet_ms, round_max_ms;
	bool keep, verbose, mixed;
};

struct chat {
	int round;
	char author[64];
	bool agent;
	bool peer; /* the --mixed peer's */
	char *text;
	int chain; /* -1: none relayed */
	int64_t t_ms;
	/* the validator's view at delivery */
	bool opener;   /* check 4 */
	bool ensemble; /* check 5 (band included) */
	char why[160];
	char matched[200];
	char matched_by[64];
	int64_t matched_gap_ms; /* the echo's time − the restated message's */
	bool committed;         /* its author enqueued a commitment with it */
};

struct commit {
	int agent;
	char id[64];
	char action[32];
	char title[160];
	int64_t t_ms;
	int round; /* the request its title names, 0 unknown */
};

struct claim {
	int round;
	char name[64], action[32], target[200];
};

struct round_stat {
	bool action, restarted, quiet;
	int msgs, chain, echoes, exempt, commits, dups, claims;
	int64_t quiesce_ms, wall_ms;
	/* --mixed: the peer's claim on the request was the room's first (so
	 * every commitment of ours for it is a duplicate), and ours beyond the
	 * first otherwise */
	bool peer_first;
	int our_dups, peer_msgs, conflicts;
};

/* --mixed: an action of the peer, due at a time (a chat waits for the
 * room's spacing after the peer's previous chat). */
struct peer_act {
	int64_t at_ms;
	char *json;
	bool chat;
};

struct sim {
	struct opts o;
	char dir[512];
	struct proc room;
	int port;
	char room_log[600], port_file[600], data_dir[600];
	struct ws_client *obs;
	struct ws_client *peer; /* --mixed */
	struct peer_act acts[PEER_ACTS_MAX];
	size_t nacts;
	int64_t peer_last_chat_ms;
	struct eager_model *model;
	struct proc agent[EAGER_AGENTS_MAX];
	char *home[EAGER_AGENTS_MAX];

	struct chat *chats;
	size_t nchats;
	struct commit *commits;
	size_t ncommits;
	struct claim *claims;
	size_t nclaims;
	char (*lines)[256]; /* the host line of each round */
	struct round_stat *rs;

	int round;
	int64_t last_activity_ms;
	bool saw_host;
	int present; /* agents in the latest presence */
	bool overflow;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static struct sim *g_sim;
static void cleanup(struct sim *s, bool remove_dirs);

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "loop-sim: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	if (g_sim) {
		fprintf(stderr, "loop-sim: kept %s for a look\n", g_sim->dir);
		cleanup(g_sim, false);
	}
	exit(2);
}

static void msleep(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t median_i64(int64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, cmp_i64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int agent_index(const struct sim *s, const char *name)
{
	for (int i = 0; i < s->o.agents; i++)
		if (strcmp(agent_names[i], name) == 0)
			return i;
	return -1;
}

/* ---- the room ------------------------------------------------------------------------------ */

static void room_spawn(struct sim *s)
{
	unlink(s->port_file);
	char port[32], data[640], name[64];
	snprintf(port, sizeof port, "SPACE_PORT=%d", s->port);
	snprintf(data, sizeof data, "SPACE_DATA_DIR=%s", s->data_dir);
	snprintf(name, sizeof name, "SPACE_NAME=loop-sim-%d", (int)getpid());
	const char *env[] = {
	        port, "SPACE_BIND=127.0.0.1", data, "SPACE_SHUTDOWN_GRACE_MS=200", name, NULL};
	const char *argv[] = {"--no-mdns", "--port-file", s->port_file, NULL};
	struct proc_opts po = {.binary = "agent-space",
	                       .cwd = s->dir,
	                       .argv = argv,
	                       .env = env,
	                       .log_path = s->room_log};
	if (proc_start_opts(&s->room, &po) != 0)
		die("cannot start agent-space (GA_BUILD_DIR=%s)", getenv("GA_BUILD_DIR"));
	int64_t end = time_now_ms() + LOOPSIM_STARTUP_MS;
	while (time_now_ms() < end) {
		char *t = fsx_read_file(s->port_file, 64, NULL, NULL);
		if (t && strchr(t, '\n')) {
			s->port = atoi(t);
			free(t);
			return;
		}
		free(t);
		if (!proc_alive(&s->room))
			break;
		msleep(10);
	}
	die("agent-space did not come up; its log is %s", s->room_log);
}

static void room_stop(struct sim *s)
{
	proc_signal(&s->room, SIGTERM);
	if (proc_wait(&s->room, 10000) < 0)
		proc_signal(&s->room, SIGKILL);
	proc_cleanup(&s->room);
}

/* ---- the observer --------------------------------------------------------------------------- */

static void on_message(struct sim *s, const char *data);

static void observer_connect(struct sim *s)
{
	ws_free(s->obs);
	s->obs = ws_connect("127.0.0.1", s->port, 5000);
	if (!s->obs)
		die("the observer cannot connect to the room on port %d", s->port);
	char join[256];
	snprintf(join, sizeof join,
	         "{\"type\":\"join\",\"name\":\"" OBSERVER_NAME "\",\"id\":\"loop-sim-%d\","
	         "\"version\":\"1.0.0\",\"capabilities\":[\"social\"]}",
	         (int)getpid());
	if (ws_send_text(s->obs, join) != 0)
		die("the observer cannot send its join");
}

/* ---- the --mixed peer ------------------------------------------------------------------
 *
 * A member that behaves like the TypeScript reference agent: it never sends
 * `chain`, promises every action request eagerly (its claim under the
 * reference's pre-chat name "<repo>#<title, 50 UTF-16 units>", then the
 * words), ignores "Claim conflict", repeats its promise, on every other
 * request does the work (the claim under the bare title, "Done — here it
 * is: <url>" and a successful action_result; there is no GitHub here, the
 * link is made up), and answers discussion lines by restating them to an
 * agent. Its promise comes 1, 3 or 6 s after the host (rotating): before
 * our owner's, or after it. Its title is the host's line, as the eager
 * model titles our agents' commitments: one piece of work, one name. */

static void peer_connect(struct sim *s)
{
	ws_free(s->peer);
	s->peer = ws_connect("127.0.0.1", s->port, 5000);
	if (!s->peer)
		die("the peer cannot connect to the room on port %d", s->port);
	char join[256];
	snprintf(join, sizeof join,
	         "{\"type\":\"join\",\"name\":\"" PEER_NAME "\",\"id\":\"" PEER_NAME
	         "-%d\",\"version\":\"10.1.0\",\"capabilities\":[\"social\",\"github\",\"code\"]}",
	         (int)getpid());
	if (ws_send_text(s->peer, join) != 0)
		die("the peer cannot send its join");
}

static void peer_queue(struct sim *s, int64_t delay_ms, cJSON *frame)
{
	if (s->nacts == PEER_ACTS_MAX)
		die("the peer's script is too long");
	struct peer_act *a = &s->acts[s->nacts++];
	a->at_ms = time_now_ms() + delay_ms;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(frame, "type"));
	a->chat = type && !strcmp(type, "chat");
	a->json = cJSON_PrintUnformatted(frame);
	cJSON_Delete(frame);
}

static cJSON *peer_frame(const char *type, const char *k1, const char *v1, const char *k2,
                         const char *v2)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", type);
	if (k1)
		cJSON_AddStringToObject(o, k1, v1);
	if (k2)
		cJSON_AddStringToObject(o, k2, v2);
	return o;
}

/* Round r's script, queued when the host's line was typed. */
static void peer_script(struct sim *s, int r, bool action)
{
	const char *line = s->lines[r];
	static const int64_t delays[] = {1000, 3000, 6000};
	int64_t d = delays[(size_t)(r - 1) % 3];
	char text[512];
	if (!action) {
		snprintf(text, sizeof text, "%s, %s", agent_names[(r - 1) % s->o.agents], line);
		peer_queue(s, 2000, peer_frame("chat", "content", text, NULL, NULL));
		return;
	}
	char title[101];
	snprintf(title, sizeof title, "%.100s", line);
	char target[200];
	snprintf(target, sizeof target, "%s#%.*s", EAGER_REPO,
	         (int)utf8_utf16_prefix(title, strlen(title), 50), title);
	snprintf(text, sizeof text, "I'll open an issue for this: %s.", title);
	peer_queue(s, d, peer_frame("claim", "action", "create_issue", "target", target));
	peer_queue(s, d, peer_frame("chat", "content", text, NULL, NULL));
	peer_queue(s, d + 4000, peer_frame("claim", "action", "create_issue", "target", target));
	peer_queue(s, d + 4000, peer_frame("chat", "content", text, NULL, NULL));
	if ((r / 2) % 2 == 1) { /* every other request (they come every other round) */
		char url[96];
		snprintf(url, sizeof url, "https://github.com/%s/issues/%d", EAGER_REPO, 1000 + r);
		peer_queue(s, d + 5000,
		           peer_frame("claim", "action", "create_issue", "target", title));
		snprintf(text, sizeof text, "Done \xe2\x80\x94 here it is: %s", url);
		peer_queue(s, d + 5000, peer_frame("chat", "content", text, NULL, NULL));
		cJSON *res = peer_frame("action_result", "action", "create_issue", "target", title);
		cJSON_AddBoolToObject(res, "success", true);
		cJSON_AddStringToObject(res, "link", url);
		peer_queue(s, d + 5000, res);
	}
}

/* Sends what is due, in order (a chat waits for the room's spacing), and
 * reads what the room sends the peer: a "Claim conflict" is counted and
 * ignored. */
static void peer_run(struct sim *s)
{
	if (!s->peer)
		return;
	struct ws_msg m;
	while (ws_recv(s->peer, &m, 0) == WS_RECV_MSG) {
		if (strstr(m.data, "Claim conflict"))
			s->rs[s->round].conflicts++;
		free(m.data);
	}
	int64_t now = time_now_ms();
	while (s->nacts && s->acts[0].at_ms <= now &&
	       (!s->acts[0].chat || now - s->peer_last_chat_ms >= PEER_GAP_MS)) {
		if (ws_send_text(s->peer, s->acts[0].json) != 0)
			die("the peer lost the room");
		if (s->acts[0].chat) {
			s->peer_last_chat_ms = now;
			s->rs[s->round].peer_msgs++;
			s->last_activity_ms = now;
		}
		free(s->acts[0].json);
		memmove(&s->acts[0], &s->acts[1], --s->nacts * sizeof s->acts[0]);
	}
}

/* Receives and records what the room relays for ms (and runs the --mixed
 * peer). false when the connection ended. */
static bool pump(struct sim *s, int ms)
{
	int64_t end = time_now_ms() + ms;
	for (;;) {
		peer_run(s);
		int64_t left = end - time_now_ms();
		if (left <= 0)
			return true;
		struct ws_msg m;
		int r = ws_recv(s->obs, &m, left > 100 ? 100 : (int)left);
		if (r == WS_RECV_MSG) {
			on_message(s, m.data);
			free(m.data);
		} else if (r != WS_RECV_TIMEOUT) {
			return false;
		}
	}
}

static void wait_members(struct sim *s, int64_t timeout_ms)
{
	int64_t end = time_now_ms() + timeout_ms;
	while (s->present < s->o.agents) {
		if (time_now_ms() > end)
			die("only %d of %d agents in the room after %lld ms", s->present,
			    s->o.agents, (long long)timeout_ms);
		if (!pump(s, 200))
			die("the observer lost the room while waiting for the agents");
	}
}

/* The validator's echo checks (4 and 5) on an agent chat, against the
 * room's last PIPELINE_ECHO_WINDOW messages before it. */
static void judge_echo(struct sim *s, struct chat *c)
{
	struct echo_window *w = echo_window_new(PIPELINE_ECHO_WINDOW);
	size_t from = s->nchats > PIPELINE_ECHO_WINDOW ? s->nchats - PIPELINE_ECHO_WINDOW : 0;
	for (size_t i = from; i < s->nchats; i++)
		echo_window_push(w, s->chats[i].author, s->chats[i].agent || s->chats[i].peer,
		                 s->chats[i].text);
	size_t nlen;
	char *norm = validator_text_normalize(c->text, strlen(c->text), &nlen);
	const char *pat = NULL;
	if (validator_phrase_find(VALIDATOR_LIST_ECHO_OPENER, norm, nlen, &pat, NULL)) {
		c->opener = true;
		snprintf(c->why, sizeof c->why, "echo opener \"%s\"", pat);
	}
	struct echo_params p = echo_params_default();
	struct echo_result r;
	echo_window_evaluate(w, norm, nlen, &p, &r);
	if (r.echo || r.judge_band) {
		c->ensemble = true;
		if (!c->opener)
			snprintf(c->why, sizeof c->why, "%s%s, pair %.2f, novelty %.2f",
			         r.echo ? r.strategy_text : "borderline band (no judge)",
			         r.attributed ? ", a summary of a speaker" : "", r.pair, r.novelty);
		const char *texts[ECHO_PAIRWISE_MAX];
		size_t n = echo_window_recent_texts(w, texts, ECHO_PAIRWISE_MAX);
		if (r.matched >= 0 && (size_t)r.matched < n) {
			snprintf(c->matched, sizeof c->matched, "%s", texts[r.matched]);
			for (size_t i = s->nchats; i-- > from;)
				if (!strcmp(s->chats[i].text, texts[r.matched])) {
					snprintf(c->matched_by, sizeof c->matched_by, "%s",
					         s->chats[i].author);
					c->matched_gap_ms = c->t_ms - s->chats[i].t_ms;
					break;
				}
		}
	}
	free(norm);
	echo_window_free(w);
}

static int64_t iso_ms(const cJSON *o, const char *key)
{
	int64_t ms = 0;
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
	if (!t || time_parse_iso(t, &ms) != 0)
		return time_now_ms();
	return ms;
}

static bool commitment_action(const char *a)
{
	return a && (!strcmp(a, "create_issue") || !strcmp(a, "create_plan") ||
	             !strcmp(a, "comment_issue") || !strcmp(a, "post_bluesky"));
}

static void on_message(struct sim *s, const char *data)
{
	cJSON *m = cJSON_Parse(data);
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "type"));
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
	if (!type) {
		cJSON_Delete(m);
		return;
	}
	if (!strcmp(type, "presence")) {
		int n = 0;
		const cJSON *a;
		cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(m, "agents"))
		{
			const char *an =
			        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "name"));
			n += an && agent_index(s, an) >= 0;
		}
		s->present = n;
	} else if (!strcmp(type, "chat") && name && strcmp(name, OBSERVER_NAME) != 0) {
		const char *text =
		        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "content"));
		bool agent = agent_index(s, name) >= 0;
		if (s->nchats >= LOOPSIM_CHATS_MAX) {
			s->overflow = true;
		} else if (text) {
			struct chat c = {.round = s->round,
			                 .agent = agent,
			                 .chain = -1,
			                 .peer = !strcmp(name, PEER_NAME),
			                 .t_ms = iso_ms(m, "timestamp")};
			snprintf(c.author, sizeof c.author, "%s", name);
			c.text = xstrdup(text);
			const cJSON *ch = cJSON_GetObjectItemCaseSensitive(m, "chain");
			if (cJSON_IsNumber(ch))
				c.chain = (int)ch->valuedouble;
			if (agent)
				judge_echo(s, &c);
			s->chats[s->nchats++] = c;
			if (s->o.verbose)
				fprintf(stderr, "  [r%d] %s (chain %d): %s\n", s->round, name,
				        c.chain, text);
		}
		if (agent)
			s->last_activity_ms = time_now_ms();
		else if (!strcmp(name, "host"))
			s->saw_host = true;
	} else if (!strcmp(type, "typing") && name && agent_index(s, name) >= 0) {
		s->last_activity_ms = time_now_ms();
	} else if (!strcmp(type, "claim") && name) {
		const char *action =
		        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "action"));
		const char *target =
		        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "target"));
		if (commitment_action(action) && target) {
			if (s->nclaims >= LOOPSIM_CLAIMS_MAX) {
				s->overflow = true;
			} else {
				struct claim *c = &s->claims[s->nclaims++];
				c->round = s->round;
				snprintf(c->name, sizeof c->name, "%s", name);
				snprintf(c->action, sizeof c->action, "%s", action);
				snprintf(c->target, sizeof c->target, "%s", target);
			}
		}
	}
	cJSON_Delete(m);
}

/* ---- the agents ---------------------------------------------------------------------------- */

static void agent_start(struct sim *s, int i)
{
	char err[256];
	s->home[i] = eager_model_home(err, sizeof err);
	if (!s->home[i])
		die("%s", err);
	char name[64], url[64], llm[160], acl[32];
	snprintf(name, sizeof name, "AGENT_NAME=%s", agent_names[i]);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", s->port);
	snprintf(llm, sizeof llm, "LLM_BASE_URL=%s", eager_model_base_url(s->model, (size_t)i));
	snprintf(acl, sizeof acl, "MAX_ACL=%d", s->o.max_acl);
	const char *env[] = {name,
	                     url,
	                     llm,
	                     "LLM_MODEL=eager-model",
	                     "LLM_API_KEY=loop-sim-key-0123456789",
	                     acl,
	                     EAGER_AGENT_TIMING_ENV,
	                     NULL};
	if (proc_start(&s->agent[i], s->home[i], (const char *const[]){NULL}, env) != 0)
		die("cannot start general-agent %s", agent_names[i]);
}

static void agent_wait_joined(struct sim *s, int i)
{
	if (!proc_wait_output(&s->agent[i], "joined the room", LOOPSIM_STARTUP_MS)) {
		char *e = proc_stderr(&s->agent[i]);
		fprintf(stderr, "---- %s ----\n%s\n", agent_names[i], e ? e : "");
		free(e);
		die("%s did not join the room", agent_names[i]);
	}
}

struct ledger_read {
	struct sim *s;
	int agent;
};

static bool commit_known(const struct sim *s, const char *id)
{
	for (size_t i = 0; i < s->ncommits; i++)
		if (!strcmp(s->commits[i].id, id))
			return true;
	return false;
}

/* The round whose host line the commitment's title names (the eager model
 * titles its commitments with the request; forced action with its first
 * 120 units), 0 when none does. */
static int round_of_title(const struct sim *s, const char *title)
{
	size_t tl = strlen(title);
	if (tl < 20)
		return 0;
	for (int r = s->round; r >= 1; r--) {
		size_t hl = strlen(s->lines[r]);
		size_t n = tl < hl ? tl : hl;
		if (strncmp(title, s->lines[r], n) == 0)
			return r;
	}
	return 0;
}

static int on_ledger_line(void *ud, const cJSON *v, size_t lineno)
{
	(void)lineno;
	struct ledger_read *lr = ud;
	struct sim *s = lr->s;
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "id"));
	const char *src = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "source"));
	const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "action"));
	if (!id || !src || !action || strcmp(src, "space") != 0 || commit_known(s, id))
		return 0;
	if (s->ncommits >= LOOPSIM_COMMITS_MAX) {
		s->overflow = true;
		return 0;
	}
	struct commit *c = &s->commits[s->ncommits++];
	memset(c, 0, sizeof *c);
	c->agent = lr->agent;
	snprintf(c->id, sizeof c->id, "%s", id);
	snprintf(c->action, sizeof c->action, "%s", action);
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(v, "params");
	const char *title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "title"));
	snprintf(c->title, sizeof c->title, "%s", title ? title : "");
	c->t_ms = iso_ms(v, "createdAt");
	c->round = round_of_title(s, c->title);
	return 0;
}

/* New space commitments in every agent's ledger since the last read. */
static size_t read_ledgers(struct sim *s)
{
	size_t before = s->ncommits;
	for (int i = 0; i < s->o.agents; i++) {
		char path[700];
		snprintf(path, sizeof path, "%s/memory/commitments.jsonl", s->home[i]);
		if (!fsx_exists(path))
			continue;
		struct ledger_read lr = {s, i};
		struct ga_err err = {{0}};
		if (fsx_jsonl_read(path, LOOPSIM_LEDGER_MAX, on_ledger_line, &lr, NULL, &err) != 0)
			fprintf(stderr, "loop-sim: %s: %s\n", path, err.msg);
	}
	return s->ncommits - before;
}

/* Why an agent committed: the participation tick's verdict (stage compose,
 * rule compose: mode, role, ownership, escalation) for the message whose
 * story records the commitment, from its memory/decisions.jsonl. */
#define TRAIL_RING 64

struct trail {
	const char *commit_id;
	char mid[TRAIL_RING][96];
	char why[TRAIL_RING][240];
	size_t next;
	char out[240];
};

static int on_decision_line(void *ud, const cJSON *v, size_t lineno)
{
	(void)lineno;
	struct trail *t = ud;
	const char *mid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "messageId"));
	const char *stage = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "stage"));
	const char *rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"));
	const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "reason"));
	if (!mid || !stage || !rule || !reason)
		return 0;
	if (!strcmp(stage, "compose") && !strcmp(rule, "compose")) {
		size_t i = t->next++ % TRAIL_RING;
		snprintf(t->mid[i], sizeof t->mid[i], "%s", mid);
		snprintf(t->why[i], sizeof t->why[i], "%s", reason);
	} else if (!t->out[0] && !strcmp(rule, "commitment") && strstr(reason, t->commit_id)) {
		for (size_t k = 0; k < TRAIL_RING && k < t->next; k++) {
			size_t i = (t->next - 1 - k) % TRAIL_RING;
			if (!strcmp(t->mid[i], mid)) {
				snprintf(t->out, sizeof t->out, "%s", t->why[i]);
				break;
			}
		}
	}
	return 0;
}

static void commit_trail(const struct sim *s, const struct commit *c, char *out, size_t cap)
{
	static struct trail t;
	memset(&t, 0, sizeof t);
	t.commit_id = c->id;
	char path[700];
	snprintf(path, sizeof path, "%s/memory/decisions.jsonl", s->home[c->agent]);
	struct ga_err err = {{0}};
	if (fsx_jsonl_read(path, LOOPSIM_LEDGER_MAX, on_decision_line, &t, NULL, &err) != 0)
		snprintf(t.out, sizeof t.out, "(decisions unreadable: %.200s)", err.msg);
	snprintf(out, cap, "%s", t.out[0] ? t.out : "(no tick verdict found)");
}

/* ---- one round ----------------------------------------------------------------------------- */

static void restart_room(struct sim *s)
{
	printf("-- restarting agent-space on port %d before round %d\n", s->port, s->round);
	fflush(stdout);
	room_stop(s);
	ws_free(s->obs);
	s->obs = NULL;
	s->present = 0;
	room_spawn(s);
	observer_connect(s);
	if (s->o.mixed)
		peer_connect(s);
	wait_members(s, LOOPSIM_REJOIN_MS);
	/* the replayed history and presences settle */
	pump(s, 1000);
}

static void run_round(struct sim *s, int r)
{
	struct round_stat *rs = &s->rs[r];
	s->round = r;
	if (s->o.restart_at == r) {
		restart_room(s);
		rs->restarted = true;
	}
	const struct host_line *hl = &host_lines[(size_t)(r - 1) % HOST_LINES];
	rs->action = hl->action;
	/* the agent a line names: another one every time */
	const char *named = agent_names[(r - 1) % s->o.agents];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(s->lines[r], sizeof s->lines[r], hl->fmt, named, r);
#pragma GCC diagnostic pop
	size_t first_chat = s->nchats;
	int64_t t0 = time_now_ms();
	s->saw_host = false;
	s->last_activity_ms = t0;
	char line[300];
	snprintf(line, sizeof line, "%s\n", s->lines[r]);
	if (proc_write_stdin(&s->room, line) != 0)
		die("the room stopped reading its stdin");
	if (s->o.mixed)
		peer_script(s, r, hl->action);
	for (;;) {
		if (!pump(s, 200))
			die("the observer lost the room in round %d", r);
		if (s->overflow)
			die("more than the run's bounds (%d chats, %d commitments, %d claims): the "
			    "room never went quiet",
			    LOOPSIM_CHATS_MAX, LOOPSIM_COMMITS_MAX, LOOPSIM_CLAIMS_MAX);
		int64_t now = time_now_ms();
		int64_t last = s->last_activity_ms;
		int64_t lm = eager_model_last_call_ms(s->model);
		if (lm > last)
			last = lm;
		if (s->saw_host && now - last >= s->o.quiet_ms && s->nacts == 0) {
			rs->quiet = true;
			break;
		}
		if (now - t0 >= s->o.round_max_ms)
			break;
	}
	rs->wall_ms = time_now_ms() - t0;
	read_ledgers(s);

	for (size_t i = first_chat; i < s->nchats; i++) {
		struct chat *c = &s->chats[i];
		if (!c->agent)
			continue;
		rs->msgs++;
		if (c->chain > rs->chain)
			rs->chain = c->chain;
		if (c->t_ms - t0 > rs->quiesce_ms)
			rs->quiesce_ms = c->t_ms - t0;
		/* Did it carry a commitment (§9 check 5 then does not run)? The
		 * model knows what it answered; the engine's salvage words are
		 * "On it — <type> incoming."; else a commitment of its author
		 * in the ledger right around it. */
		int said = eager_model_committed(s->model, c->text);
		if (said >= 0)
			c->committed = said == 1;
		else if (strncmp(c->text, "On it \xe2\x80\x94 ", 9) == 0)
			c->committed = true;
		int a = agent_index(s, c->author);
		for (size_t k = 0; said < 0 && k < s->ncommits; k++)
			if (s->commits[k].agent == a &&
			    s->commits[k].t_ms >= c->t_ms - LOOPSIM_COMMIT_EARLY_MS &&
			    s->commits[k].t_ms <= c->t_ms + LOOPSIM_COMMIT_LATE_MS)
				c->committed = true;
		if (c->opener || (c->ensemble && !c->committed))
			rs->echoes++;
		else if (c->ensemble)
			rs->exempt++;
	}
}

/* Commitments (ledger) and action claims (room) for round r's request,
 * and the duplicates among them: commitments beyond the first, or
 * claimants of one target beyond the first, whichever is more. A
 * commitment belongs to the request its title names, whenever it was made
 * (a late one for an old request is still a duplicate of it). */
static void count_round(struct sim *s, int r)
{
	struct round_stat *rs = &s->rs[r];
	int n = 0;
	for (size_t k = 0; k < s->ncommits; k++)
		n += s->commits[k].round == r;
	int droom = 0, claims = 0;
	for (size_t i = 0; i < s->nclaims; i++) {
		if (s->claims[i].round != r || !strcmp(s->claims[i].name, PEER_NAME))
			continue;
		bool target_seen = false, claimant_seen = false;
		for (size_t j = 0; j < i; j++) {
			if (s->claims[j].round != r ||
			    strcmp(s->claims[j].target, s->claims[i].target) ||
			    !strcmp(s->claims[j].name, PEER_NAME))
				continue;
			target_seen = true;
			claimant_seen |= !strcmp(s->claims[j].name, s->claims[i].name);
		}
		if (!claimant_seen) {
			claims++;
			droom += target_seen;
		}
	}
	rs->commits = n;
	rs->claims = claims;
	int d = n > 1 ? n - 1 : 0;
	rs->dups = d > droom ? d : droom;
	if (!s->o.mixed || !rs->action)
		return;
	/* Whose claim on the request did the room take first? (A later
	 * claimant's is refused, so the first one relayed is the first.) */
	char title[101], target[200];
	snprintf(title, sizeof title, "%.100s", s->lines[r]);
	snprintf(target, sizeof target, "%s#%.*s", EAGER_REPO,
	         (int)utf8_utf16_prefix(title, strlen(title), 50), title);
	rs->peer_first = false;
	for (size_t i = 0; i < s->nclaims; i++)
		if (s->claims[i].round == r &&
		    (!strcmp(s->claims[i].target, target) || !strcmp(s->claims[i].target, title))) {
			rs->peer_first = !strcmp(s->claims[i].name, PEER_NAME);
			break;
		}
	rs->our_dups = n == 0 ? 0 : rs->peer_first ? n : n - 1;
}

/* ---- report -------------------------------------------------------------------------------- */

static void print_round(const struct sim *s, int r)
{
	const struct round_stat *rs = &s->rs[r];
	printf("round %3d/%d %-10s msgs=%-3d chain=%-2d echoes=%d (exempt %d) commitments=%d "
	       "dups=%d quiescence_ms=%-6lld %s%s\n",
	       r, s->o.rounds, rs->action ? "action" : "discussion", rs->msgs, rs->chain,
	       rs->echoes, rs->exempt, rs->commits, rs->dups, (long long)rs->quiesce_ms,
	       rs->quiet ? "quiet" : "NOT QUIET", rs->restarted ? " [after restart]" : "");
	if (s->o.mixed && rs->action)
		printf("          peer: first=%s msgs=%d conflicts-ignored=%d our_dups=%d\n",
		       rs->peer_first ? "yes" : "no", rs->peer_msgs, rs->conflicts, rs->our_dups);
	fflush(stdout);
}

static bool report(struct sim *s)
{
	int R = s->o.rounds;
	for (int r = 1; r <= R; r++)
		count_round(s, r);
	printf("\nper round (commitments and duplicates counted per request, at the end):\n");
	int total_msgs = 0, longest = 0, echoes = 0, exempt = 0, dups = 0, not_quiet = 0,
	    over_acl = 0, max_msgs = 0, our_dups = 0, peer_first = 0, conflicts = 0, requests = 0;
	int64_t *q = xcalloc((size_t)R, sizeof *q), *mm = xcalloc((size_t)R, sizeof *mm);
	int64_t qmax = 0;
	for (int r = 1; r <= R; r++) {
		const struct round_stat *rs = &s->rs[r];
		print_round(s, r);
		total_msgs += rs->msgs;
		if (rs->msgs > max_msgs)
			max_msgs = rs->msgs;
		if (rs->chain > longest)
			longest = rs->chain;
		echoes += rs->echoes;
		exempt += rs->exempt;
		dups += rs->dups;
		our_dups += rs->our_dups;
		peer_first += rs->peer_first;
		conflicts += rs->conflicts;
		requests += rs->action;
		not_quiet += !rs->quiet;
		over_acl += rs->chain > s->o.max_acl;
		q[r - 1] = rs->quiesce_ms;
		mm[r - 1] = rs->msgs;
		if (rs->quiesce_ms > qmax)
			qmax = rs->quiesce_ms;
	}
	int64_t qmed = median_i64(q, (size_t)R), mmed = median_i64(mm, (size_t)R);
	free(q);
	free(mm);

	/* the evidence behind the counts */
	for (size_t i = 0; i < s->nchats; i++) {
		const struct chat *c = &s->chats[i];
		if (c->agent && (c->opener || (c->ensemble && !c->committed)))
			printf("ECHO round %d: %s (chain %d) \"%.160s\" — %s%s%s%s%.160s%s\n",
			       c->round, c->author, c->chain, c->text, c->why,
			       c->matched[0] ? "; restates " : "", c->matched_by,
			       c->matched[0] ? " \"" : "", c->matched, c->matched[0] ? "\"" : "");
		if (c->agent && (c->opener || (c->ensemble && !c->committed)) && c->matched_by[0])
			printf("  (%s's message reached the room %lld ms before it)\n",
			       c->matched_by, (long long)c->matched_gap_ms);
		if (c->agent && c->chain > s->o.max_acl)
			printf("CHAIN round %d: %s sent chain %d > MAX_ACL %d: \"%.160s\"\n",
			       c->round, c->author, c->chain, s->o.max_acl, c->text);
	}
	for (int r = 1; r <= R; r++) {
		if (s->rs[r].commits < 2 && s->rs[r].dups == 0)
			continue;
		printf("DUP round %d (\"%.100s\"):\n", r, s->lines[r]);
		for (size_t k = 0; k < s->ncommits; k++) {
			const struct commit *c = &s->commits[k];
			if (c->round != r)
				continue;
			char iso[TIME_ISO_LEN + 1], why[240];
			commit_trail(s, c, why, sizeof why);
			printf("  %s %s %s at %s — its tick: %s\n", agent_names[c->agent],
			       c->action, c->id, time_format_iso(c->t_ms, iso), why);
		}
		for (size_t i = 0; i < s->nclaims; i++)
			if (s->claims[i].round == r)
				printf("  claim by %s of %s:%.80s\n", s->claims[i].name,
				       s->claims[i].action, s->claims[i].target);
	}
	int unanswered = 0, untaken = 0;
	for (int r = 1; r <= R; r++) {
		unanswered += s->rs[r].msgs == 0;
		untaken += s->rs[r].action && s->rs[r].commits == 0;
	}
	size_t orphan = 0;
	for (size_t k = 0; k < s->ncommits; k++)
		orphan += s->commits[k].round == 0;

	printf("\nloop-sim: %d agents, %d rounds, MAX_ACL %d, quiet after %lld ms%s\n", s->o.agents,
	       R, s->o.max_acl, (long long)s->o.quiet_ms,
	       s->o.restart_at ? " (room restarted)" : "");
	printf("total messages: %d (median %lld per round, max %d)\n", total_msgs, (long long)mmed,
	       max_msgs);
	printf("longest chain: %d\n", longest);
	printf("echoes delivered: %d (exempt as carrying a commitment: %d)\n", echoes, exempt);
	printf("duplicate actions: %d (space commitments: %zu, naming no request: %zu; action "
	       "claims: %zu)\n",
	       dups, s->ncommits, orphan, s->nclaims);
	if (s->o.mixed)
		printf("mixed: duplicate actions by our agents: %d (goal 0); the peer's claim came "
		       "first on %d of %d requests; Claim conflicts it ignored: %d\n",
		       our_dups, peer_first, requests, conflicts);
	printf("time to quiescence: median %lld ms, max %lld ms\n", (long long)qmed,
	       (long long)qmax);
	printf("rounds the host got no answer: %d; action requests nobody committed to: %d\n",
	       unanswered, untaken);
	uint64_t calls, decisions;
	eager_model_counts(s->model, &calls, &decisions);
	printf("model calls: %llu (decisions %llu)\n", (unsigned long long)calls,
	       (unsigned long long)decisions);
	bool t1 = not_quiet == 0 && over_acl == 0;
	bool t2 = echoes == 0, t3 = s->o.mixed ? our_dups == 0 : dups == 0;
	printf("TARGET quiet within MAX_ACL hops: %s (%d rounds not quiet, %d over MAX_ACL %d)\n",
	       t1 ? "PASS" : "FAIL", not_quiet, over_acl, s->o.max_acl);
	printf("TARGET 0 echoes delivered: %s (%d)\n", t2 ? "PASS" : "FAIL", echoes);
	if (s->o.mixed)
		printf("TARGET 0 duplicate actions by our agents: %s (%d)\n", t3 ? "PASS" : "FAIL",
		       our_dups);
	else
		printf("TARGET 0 duplicate actions: %s (%d)\n", t3 ? "PASS" : "FAIL", dups);
	printf("RESULT: %s\n", t1 && t2 && t3 ? "PASS" : "FAIL");
	return t1 && t2 && t3;
}

/* ---- setup and teardown ---------------------------------------------------------------------- */

static void cleanup(struct sim *s, bool remove_dirs)
{
	/* all at once: each takes a moment to leave the room */
	for (int i = 0; i < s->o.agents; i++)
		if (s->home[i] && s->agent[i].pid > 0)
			proc_signal(&s->agent[i], SIGTERM);
	for (int i = 0; i < s->o.agents; i++) {
		if (!s->home[i])
			continue;
		if (s->agent[i].pid > 0) {
			if (proc_wait(&s->agent[i], 10000) < 0)
				proc_signal(&s->agent[i], SIGKILL);
			proc_cleanup(&s->agent[i]);
			s->agent[i].pid = 0;
		}
		if (remove_dirs)
			tu_rmrf(s->home[i]);
		else
			fprintf(stderr, "loop-sim: %s's home: %s\n", agent_names[i], s->home[i]);
		free(s->home[i]);
		s->home[i] = NULL;
	}
	if (s->room.pid > 0) {
		room_stop(s);
		s->room.pid = 0;
	}
	ws_free(s->obs);
	s->obs = NULL;
	ws_free(s->peer);
	s->peer = NULL;
	for (size_t i = 0; i < s->nacts; i++)
		free(s->acts[i].json);
	s->nacts = 0;
	eager_model_free(s->model);
	s->model = NULL;
	if (remove_dirs && s->dir[0])
		tu_rmrf(s->dir);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: loop-sim [-n AGENTS] [-r ROUNDS] [--restart-at K] [--quiet-ms MS]\n"
	        "                [--max-acl N] [--round-max-ms MS] [--seed N] [--mixed] [--keep]\n"
	        "                [-v]\n"
	        "  -n AGENTS         general-agent processes in the room (1-%d, default 5)\n"
	        "  -r ROUNDS         host messages, one per round (1-%d, default 50)\n"
	        "  --restart-at K    restart agent-space (same port) before round K\n"
	        "  --quiet-ms MS     no agent chat, typing or model call for this long = quiet\n"
	        "                    (default 20000: a tick is up to 7 s, and an agent may hold\n"
	        "                    a peer's message for 10 s after declining)\n"
	        "  --max-acl N       MAX_ACL given to the agents and checked (default 4)\n"
	        "  --round-max-ms MS a round that is not quiet by then fails (default 180000)\n"
	        "  --seed N          shifts the eager model's styles (default 0)\n"
	        "  --mixed           one more member behaving like a TypeScript agent: no chain,\n"
	        "                    eager promises, Claim conflicts ignored; the duplicate\n"
	        "                    target counts our agents' duplicates only\n"
	        "  --keep            keep the homes and the room's directory\n"
	        "  -v                print every chat as it is relayed\n"
	        "Binaries come from $GA_BUILD_DIR (default: this build). Exit 0: every target\n"
	        "passed; 1: a target failed; 2: the run could not be carried out.\n",
	        EAGER_AGENTS_MAX, LOOPSIM_ROUNDS_MAX);
}

static long parse_num(const char *what, const char *v, long lo, long hi)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < lo || n > hi) {
		fprintf(stderr, "loop-sim: %s must be a number from %ld to %ld, not '%s'\n", what,
		        lo, hi, v);
		exit(2);
	}
	return n;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){
	        .agents = 5, .rounds = 50, .max_acl = 4, .quiet_ms = 20000, .round_max_ms = 180000};
	static const struct option longs[] = {
	        {"restart-at", required_argument, NULL, 'k'},
	        {"quiet-ms", required_argument, NULL, 'q'},
	        {"max-acl", required_argument, NULL, 'm'},
	        {"round-max-ms", required_argument, NULL, 'x'},
	        {"seed", required_argument, NULL, 's'},
	        {"keep", no_argument, NULL, 'K'},
	        {"mixed", no_argument, NULL, 'M'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "n:r:vh", longs, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->agents = (int)parse_num("-n", optarg, 1, EAGER_AGENTS_MAX);
			break;
		case 'r':
			o->rounds = (int)parse_num("-r", optarg, 1, LOOPSIM_ROUNDS_MAX);
			break;
		case 'k':
			o->restart_at =
			        (int)parse_num("--restart-at", optarg, 1, LOOPSIM_ROUNDS_MAX);
			break;
		case 'q':
			o->quiet_ms = parse_num("--quiet-ms", optarg, 500, 600000);
			break;
		case 'm':
			o->max_acl = (int)parse_num("--max-acl", optarg, 0, 100);
			break;
		case 'x':
			o->round_max_ms = parse_num("--round-max-ms", optarg, 1000, 3600000);
			break;
		case 's':
			o->seed = (int)parse_num("--seed", optarg, 0, 1000000);
			break;
		case 'K':
			o->keep = true;
			break;
		case 'M':
			o->mixed = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "loop-sim: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		exit(2);
	}
	if (o->mixed && o->agents >= EAGER_AGENTS_MAX) {
		fprintf(stderr,
		        "loop-sim: --mixed takes at most %d agents (the peer is one more)\n",
		        EAGER_AGENTS_MAX - 1);
		exit(2);
	}
	if (o->restart_at > o->rounds) {
		fprintf(stderr, "loop-sim: --restart-at %d is past the last round (%d)\n",
		        o->restart_at, o->rounds);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static struct sim sim;
	struct sim *s = &sim;
	parse_opts(argc, argv, &s->o);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!getenv("GA_BUILD_DIR"))
		setenv("GA_BUILD_DIR", LOOPSIM_BUILD_DIR, 1);
	if (!getenv("GA_SOURCE_DIR"))
		setenv("GA_SOURCE_DIR", GA_SOURCE_DIR, 1);

	const char *tmp = getenv("TMPDIR");
	snprintf(s->dir, sizeof s->dir, "%.400s/loop-sim-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->dir))
		die("mkdtemp %s: %s", s->dir, strerror(errno));
	g_sim = s;
	snprintf(s->room_log, sizeof s->room_log, "%.500s/server.log", s->dir);
	snprintf(s->port_file, sizeof s->port_file, "%.500s/port", s->dir);
	snprintf(s->data_dir, sizeof s->data_dir, "%.500s/data", s->dir);
	s->chats = xcalloc(LOOPSIM_CHATS_MAX, sizeof *s->chats);
	s->commits = xcalloc(LOOPSIM_COMMITS_MAX, sizeof *s->commits);
	s->claims = xcalloc(LOOPSIM_CLAIMS_MAX, sizeof *s->claims);
	s->lines = xcalloc((size_t)s->o.rounds + 1, sizeof *s->lines);
	s->rs = xcalloc((size_t)s->o.rounds + 1, sizeof *s->rs);

	char err[256];
	/* the model knows the peer's name too: its lines are an agent's */
	const char *names[EAGER_AGENTS_MAX];
	size_t nn = 0;
	for (int i = 0; i < s->o.agents; i++)
		names[nn++] = agent_names[i];
	if (s->o.mixed)
		names[nn++] = PEER_NAME;
	s->model = eager_model_new(names, nn, (unsigned)s->o.seed, err, sizeof err);
	if (!s->model)
		die("%s", err);
	room_spawn(s);
	observer_connect(s);
	if (s->o.mixed)
		peer_connect(s);
	for (int i = 0; i < s->o.agents; i++)
		agent_start(s, i);
	for (int i = 0; i < s->o.agents; i++)
		agent_wait_joined(s, i);
	wait_members(s, LOOPSIM_STARTUP_MS);
	pump(s, 1000); /* identities and presences settle */
	printf("loop-sim: room on port %d, agents %d, rounds %d, MAX_ACL %d, quiet-ms %lld%s\n",
	       s->port, s->o.agents, s->o.rounds, s->o.max_acl, (long long)s->o.quiet_ms,
	       s->o.mixed ? ", mixed (+ " PEER_NAME ", a chain-less claim-ignoring peer)" : "");
	if (s->o.restart_at)
		printf("loop-sim: the room restarts before round %d\n", s->o.restart_at);

	for (int r = 1; r <= s->o.rounds; r++) {
		run_round(s, r);
		count_round(s, r);
		print_round(s, r);
	}
	bool ok = report(s);
	bool keep = s->o.keep || !ok;
	if (keep)
		fprintf(stderr, "loop-sim: kept %s (room) and the homes below\n", s->dir);
	cleanup(s, !keep);
	for (size_t i = 0; i < s->nchats; i++)
		free(s->chats[i].text);
	free(s->chats);
	free(s->commits);
	free(s->claims);
	free(s->lines);
	free(s->rs);
	echo_shutdown();
	return ok ? 0 : 1;
}
