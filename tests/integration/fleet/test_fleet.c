/*
 * One request, one job, done once — in a mixed fleet, end to end. Real
 * processes: our `agent-space`, three `general-agent`s (Ada, Ben, Cal)
 * whose model is the eager, echo-prone one (tests/fakes/eager), the GitHub
 * fake in process (tests/fakes/github: it counts the issues and who made
 * them), and — optionally — a real redis-server for coordination. Beside
 * them a scripted member that behaves like the TypeScript reference agent
 * (a WebSocket member written here): it never sends `chain`, claims under
 * the reference's two names for the work (`<repo>#<title, 50 UTF-16
 * units>` before its promise, the bare title while working), ignores
 * "Claim conflict", repeats itself and promises eagerly.
 *
 * The host asks a discussion question, then a request phrased as a question
 * ("can someone open an issue in acme/widgets for the login timeout?"),
 * then "did you open the issue? where is the link?". Variants (argv[1]):
 *   peer_first     the peer promises within a second, creates the issue in
 *                  the fake itself and says "Done — here it is: <url>" with
 *                  a successful action_result; then it talks on and on,
 *                  addressing our agents without a chain;
 *   peer_late      the peer promises after our owner did (its claims get
 *                  "Claim conflict", ignored) and creates its own issue
 *                  anyway (its duplicate, not ours); agents started in
 *                  reverse order;
 *   promise_only   the peer promises (twice) and never does the work: once
 *                  its claims lapse the work is ours again; started in
 *                  another order;
 *   redis          peer_first with a near-identical title (its claims and
 *                  result name other work: only GitHub itself tells) and
 *                  our agents coordinating through Redis.
 * Passes when: at most one of our agents claims the work, and it is the
 * owner every agent computes; our agents create no issue when one already
 * exists for the request, and exactly one when none does; the follow-up is
 * answered by one of ours with the issue's link, and `why` tells that
 * answer's story as one walk; no agent of ours says the same line twice;
 * nothing of ours past MAX_ACL while the chain-less peer talks on.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "modules/participation/policy.h"
#include "support_redis.h"
#include "support_story.h"
#include "tests/fakes/eager/eager_model.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/integration/space-client/harness.h"
#include "testutil.h"

#define MAX_ACL     4
#define NAGENTS     3
#define LOG_MAX     4000
#define QUIET_MS    9000   /* no chat, no new issue: settled */
#define SETTLE_MS   120000 /* a phase that never settles fails */
#define LAPSE_MS    200000 /* the promise-only peer's claims lapse (60 s) and ours acts */
#define ANSWER_MS   60000
#define PEER_GAP_MS 3300 /* the room drops a member's chat within 3 s of its last */
#define CHATTER     8

static const char *const OURS[NAGENTS] = {"Ada", "Ben", "Cal"};
static const char *const LOGINS[NAGENTS] = {"ada-bot", "ben-bot", "cal-bot"};
static const char *const PEER_NAMES[] = {"Tess", "Theo", "Tara", "Tomas", "Tilda", "Toby"};
#define PEER_LOGIN "ts-bot"

static const char QUESTION[] = "What is a good way to make our login tests less flaky?";
static const char REQUEST[] = "can someone open an issue in acme/widgets for the login timeout?";
static const char FOLLOW_UP[] = "did you open the issue? where is the link?";

enum variant { V_PEER_FIRST, V_PEER_LATE, V_PROMISE_ONLY, V_REDIS };

struct rec {
	char type[20];
	char name[32];
	char *text; /* chat content, claim target, error message, action_result target */
	char action[32];
	int chain;    /* -1: none */
	bool success; /* an action_result's */
	int64_t t_ms;
};

/* An action of the scripted peer, due at a time. */
struct peer_act {
	int64_t at_ms;
	char *json; /* sent as is; NULL = a chat made from text */
};

struct fleet {
	enum variant v;
	const char *peer;
	char owner[PART_NAME_MAX];
	struct th_room room;
	struct ghfake *gh;
	struct eager_model *model;
	struct support_redis redis;
	bool use_redis;
	struct th_agent a[NAGENTS];
	struct ws_client *ws; /* the peer: it sees everything the room relays */
	struct rec log[LOG_MAX];
	size_t nlog;
	struct peer_act acts[64];
	size_t nacts;
	int64_t peer_last_chat_ms;
	/* what the peer reacts to */
	bool request_seen, owner_promised, peer_promised, peer_did;
	char peer_title[200];
	char peer_url[200];
};

/* --- helpers ------------------------------------------------------------------------------ */

static int ours(const char *name)
{
	for (int i = 0; i < NAGENTS; i++)
		if (strcmp(name, OURS[i]) == 0)
			return i;
	return -1;
}

static char *jstr(const cJSON *o, const char *k)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void dump_room(const struct fleet *f)
{
	for (size_t i = 0; i < f->nlog; i++) {
		const struct rec *r = &f->log[i];
		fprintf(stderr, "  [%s] %s%s%s (chain %d): %.300s\n", r->type, r->name,
		        r->action[0] ? " " : "", r->action, r->chain, r->text ? r->text : "");
	}
}

static void dump_all(struct fleet *f)
{
	dump_room(f);
	for (int i = 0; i < NAGENTS; i++) {
		char *d = tu_read(f->a[i].home, "memory/decisions.jsonl");
		fprintf(stderr, "---- %s decisions ----\n%s\n", OURS[i], d ? d : "(none)");
		free(d);
		char *l = th_agent_log(&f->a[i]);
		fprintf(stderr, "---- %s log ----\n%s\n", OURS[i], l ? l : "");
		free(l);
	}
}

static void failf(struct fleet *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(struct fleet *f, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	dump_all(f);
	fail_msg("%s", msg);
}

/* --- the scripted peer ------------------------------------------------------------------- */

static void peer_send(struct fleet *f, const char *json)
{
	th_send(f->ws, json);
}

static void peer_chat_now(struct fleet *f, const char *text)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "chat");
	cJSON_AddStringToObject(o, "content", text);
	char *s = cJSON_PrintUnformatted(o);
	peer_send(f, s);
	free(s);
	cJSON_Delete(o);
	f->peer_last_chat_ms = th_now_ms();
}

/* Queues an action after delay_ms; a chat (json NULL, text given) waits
 * for the room's spacing after the peer's previous chat. */
static void peer_later(struct fleet *f, int64_t delay_ms, const char *json, const char *text)
{
	if (f->nacts == sizeof f->acts / sizeof f->acts[0])
		fail_msg("the peer's script is too long");
	struct peer_act *a = &f->acts[f->nacts++];
	a->at_ms = th_now_ms() + delay_ms;
	if (json) {
		a->json = strdup(json);
	} else {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", "chat");
		cJSON_AddStringToObject(o, "content", text);
		a->json = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
	}
}

static void peer_claim_later(struct fleet *f, int64_t delay_ms, const char *target)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "claim");
	cJSON_AddStringToObject(o, "action", "create_issue");
	cJSON_AddStringToObject(o, "target", target);
	char *s = cJSON_PrintUnformatted(o);
	peer_later(f, delay_ms, s, NULL);
	free(s);
	cJSON_Delete(o);
}

/* The reference's promise: its pre-chat claim ("<repo>#<title, first 50
 * UTF-16 units>"), then the words. */
static void peer_promise(struct fleet *f, int64_t delay_ms)
{
	char *cut = part_utf16_prefix(f->peer_title, strlen(f->peer_title), 50);
	char target[300];
	snprintf(target, sizeof target, "acme/widgets#%s", cut);
	free(cut);
	peer_claim_later(f, delay_ms, target);
	char text[400];
	snprintf(text, sizeof text, "I'll open an issue in acme/widgets for this: %s.",
	         f->peer_title);
	peer_later(f, delay_ms, NULL, text);
}

/* The reference's fulfilment: the claim under the bare title, the issue
 * made, "Done — here it is: <url>", the action_result — done right away
 * here (the GitHub fake is in process), said after delay_ms. */
static void peer_do_work(struct fleet *f, int64_t delay_ms)
{
	peer_claim_later(f, delay_ms, f->peer_title);
	f->peer_did = true;
	/* made when the claim goes out (peer_run makes it then) */
	char text[300];
	snprintf(text, sizeof text, "@@work");
	peer_later(f, delay_ms, NULL, text);
}

static bool is_chat_json(const char *json)
{
	return strstr(json, "\"type\":\"chat\"") != NULL;
}

/* Sends what is due (a chat only when the room's spacing allows it). */
static void peer_run(struct fleet *f)
{
	int64_t now = th_now_ms();
	for (size_t i = 0; i < f->nacts; i++) {
		struct peer_act *a = &f->acts[i];
		if (!a->json || a->at_ms > now)
			continue;
		bool chat = is_chat_json(a->json);
		if (chat && now - f->peer_last_chat_ms < PEER_GAP_MS)
			continue;
		/* an earlier action first: the script keeps its order */
		bool earlier = false;
		for (size_t k = 0; k < i && !earlier; k++)
			earlier = f->acts[k].json != NULL;
		if (earlier)
			continue;
		if (strstr(a->json, "@@work")) {
			int64_t n = ghfake_add_issue(f->gh, "acme", "widgets", PEER_LOGIN,
			                             f->peer_title, "Opened from the agent space.");
			snprintf(f->peer_url, sizeof f->peer_url,
			         "https://github.com/acme/widgets/issues/%lld", (long long)n);
			char text[300];
			snprintf(text, sizeof text, "Done \xe2\x80\x94 here it is: %s",
			         f->peer_url);
			peer_chat_now(f, text);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "type", "action_result");
			cJSON_AddStringToObject(o, "action", "create_issue");
			cJSON_AddStringToObject(o, "target", f->peer_title);
			cJSON_AddBoolToObject(o, "success", true);
			cJSON_AddStringToObject(o, "link", f->peer_url);
			char *s = cJSON_PrintUnformatted(o);
			peer_send(f, s);
			free(s);
			cJSON_Delete(o);
			/* the reference repeats itself */
			peer_later(f, 4000, NULL, text);
		} else if (chat) {
			peer_send(f, a->json);
			f->peer_last_chat_ms = now;
		} else {
			peer_send(f, a->json);
		}
		free(a->json);
		a->json = NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < f->nacts; i++)
		if (f->acts[i].json)
			f->acts[k++] = f->acts[i];
	f->nacts = k;
}

/* What the peer does when the room relays m (its own frames included). */
static void peer_react(struct fleet *f, const struct rec *r)
{
	if (strcmp(r->type, "chat") != 0)
		return;
	if (strcmp(r->name, "host") == 0 && strcmp(r->text, REQUEST) == 0) {
		f->request_seen = true;
		if (f->v != V_PEER_LATE) {
			peer_promise(f, 800);
			if (f->v == V_PROMISE_ONLY)
				peer_promise(f, 6000); /* it repeats itself, and then stops */
			else
				peer_do_work(f, 1500);
			f->peer_promised = true;
		}
		return;
	}
	/* peer_late: it promises once our owner has (its claims then meet ours:
	 * "Claim conflict", which it ignores) and does the work anyway */
	if (f->v == V_PEER_LATE && f->request_seen && !f->peer_promised && ours(r->name) >= 0 &&
	    strcasestr(r->text, "login timeout")) {
		f->peer_promised = true;
		peer_promise(f, 500);
		peer_do_work(f, 2500);
	}
}

/* --- the room, as the peer sees it -------------------------------------------------------- */

static void record(struct fleet *f, const cJSON *m)
{
	const char *type = jstr(m, "type");
	if (!type || f->nlog == LOG_MAX)
		return;
	const char *text = NULL;
	if (!strcmp(type, "chat"))
		text = jstr(m, "content");
	else if (!strcmp(type, "claim") || !strcmp(type, "action_result"))
		text = jstr(m, "target");
	else if (!strcmp(type, "error"))
		text = jstr(m, "message");
	else
		return;
	struct rec *r = &f->log[f->nlog++];
	memset(r, 0, sizeof *r);
	snprintf(r->type, sizeof r->type, "%s", type);
	snprintf(r->name, sizeof r->name, "%s", jstr(m, "name") ? jstr(m, "name") : "");
	snprintf(r->action, sizeof r->action, "%s", jstr(m, "action") ? jstr(m, "action") : "");
	r->text = strdup(text ? text : "");
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(m, "chain");
	r->chain = cJSON_IsNumber(ch) ? (int)ch->valuedouble : -1;
	r->success = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "success"));
	r->t_ms = th_now_ms();
	peer_react(f, r);
}

/* Receives for ms, running the peer's script. */
static void pump(struct fleet *f, int ms)
{
	int64_t end = th_now_ms() + ms;
	for (;;) {
		peer_run(f);
		int64_t left = end - th_now_ms();
		if (left <= 0)
			return;
		struct ws_msg m;
		int rc = ws_recv(f->ws, &m, left > 100 ? 100 : (int)left);
		if (rc == WS_RECV_MSG) {
			cJSON *v = cJSON_ParseWithLength(m.data, m.len);
			free(m.data);
			if (v)
				record(f, v);
			cJSON_Delete(v);
		} else if (rc != WS_RECV_TIMEOUT) {
			failf(f, "the peer lost the room");
		}
	}
}

static int64_t last_activity(struct fleet *f)
{
	int64_t t = 0;
	for (size_t i = 0; i < f->nlog; i++)
		if (!strcmp(f->log[i].type, "chat") && f->log[i].t_ms > t)
			t = f->log[i].t_ms;
	return t;
}

/* Pumps until nothing was said and no issue was made for QUIET_MS, and
 * need (may be NULL) holds; fails after max_ms. */
static void settle(struct fleet *f, bool (*need)(struct fleet *), int64_t max_ms, const char *what)
{
	int64_t start = th_now_ms(), end = start + max_ms;
	size_t issues = ghfake_issue_count(f->gh, "acme", "widgets");
	int64_t changed = start;
	for (;;) {
		pump(f, 250);
		size_t n = ghfake_issue_count(f->gh, "acme", "widgets");
		int64_t now = th_now_ms();
		if (n != issues) {
			issues = n;
			changed = now;
		}
		int64_t last = last_activity(f);
		if (last > changed)
			changed = last;
		if (now - changed >= QUIET_MS && f->nacts == 0 && (!need || need(f)))
			return;
		if (now > end)
			failf(f, "%s: not settled after %lld ms", what, (long long)max_ms);
	}
}

/* --- the GitHub fake ------------------------------------------------------------------------ */

struct issue {
	int64_t number;
	char login[64];
	char url[200];
	char title[200];
};

static size_t issues_of(struct fleet *f, struct issue *out, size_t cap)
{
	/* numbered from 1, no pull requests here */
	int64_t n = (int64_t)ghfake_issue_count(f->gh, "acme", "widgets");
	size_t k = 0;
	for (int64_t i = 1; k < cap && i <= n; i++) {
		cJSON *it = ghfake_issue(f->gh, "acme", "widgets", i);
		if (!it)
			continue;
		out[k].number = i;
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(it, "user");
		snprintf(out[k].login, sizeof out[k].login, "%s",
		         jstr(u, "login") ? jstr(u, "login") : "");
		snprintf(out[k].url, sizeof out[k].url, "%s",
		         jstr(it, "html_url") ? jstr(it, "html_url") : "");
		snprintf(out[k].title, sizeof out[k].title, "%s",
		         jstr(it, "title") ? jstr(it, "title") : "");
		/* the request's issues (an eager model may file others while
		 * the room discusses) */
		if (!cJSON_GetObjectItemCaseSensitive(it, "pull_request") &&
		    strcasestr(out[k].title, "login timeout"))
			k++;
		cJSON_Delete(it);
	}
	return k;
}

static bool ours_login(const char *login)
{
	for (int i = 0; i < NAGENTS; i++)
		if (strcmp(login, LOGINS[i]) == 0)
			return true;
	return false;
}

static bool has_our_issue(struct fleet *f)
{
	struct issue is[32];
	size_t n = issues_of(f, is, 32);
	for (size_t i = 0; i < n; i++)
		if (ours_login(is[i].login))
			return true;
	return false;
}

static bool has_issue(struct fleet *f)
{
	struct issue is[32];
	return issues_of(f, is, 32) > 0;
}

/* --- setup -------------------------------------------------------------------------------- */

/* The peer's name: one the owner ranking (§4, every agent computes the
 * same) does not make the owner of the request — the test is about our
 * agents' one owner beside a peer that ignores the ranking. */
static void pick_names(struct fleet *f)
{
	for (size_t p = 0; p < sizeof PEER_NAMES / sizeof PEER_NAMES[0]; p++) {
		struct part_member mem[] = {{.name = OURS[0]},
		                            {.name = OURS[1]},
		                            {.name = OURS[2]},
		                            {.name = PEER_NAMES[p]}};
		struct part_ownership o;
		struct decision why;
		part_ownership_compute(OURS[0], false, mem, 4, REQUEST, PART_MODE_ACTION, &o, &why);
		if (ours(o.owner) >= 0) {
			f->peer = PEER_NAMES[p];
			snprintf(f->owner, sizeof f->owner, "%s", o.owner);
			return;
		}
	}
	fail_msg("every peer name owns the request");
}

static void start_agent(struct fleet *f, int i)
{
	char home[256];
	th_home_new(home, sizeof home);
	char mem[300];
	snprintf(mem, sizeof mem, "%s/memory", home);
	if (mkdir(mem, 0700) != 0)
		fail_msg("mkdir %s failed", mem);
	/* the shortest pacing the runtime config allows (loop-sim's) */
	tu_write(home, "memory/space-config.json",
	         "{\"cooldownMinMs\":3000,\"cooldownMaxMs\":4000,\"replyDelayMinMs\":500,"
	         "\"replyDelayMaxMs\":800}\n");
	char name[64], url[64], llm[160], gh[160], user[64], tok[64], acl[32], redis[64];
	snprintf(name, sizeof name, "AGENT_NAME=%s", OURS[i]);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", f->room.port);
	snprintf(llm, sizeof llm, "LLM_BASE_URL=%s", eager_model_base_url(f->model, (size_t)i));
	snprintf(gh, sizeof gh, "GITHUB_API_URL=%s", ghfake_base_url(f->gh));
	snprintf(user, sizeof user, "AGENT_GITHUB_USERNAME=%s", LOGINS[i]);
	snprintf(tok, sizeof tok, "AGENT_GITHUB_TOKEN=token-%s-0123456789", LOGINS[i]);
	snprintf(acl, sizeof acl, "MAX_ACL=%d", MAX_ACL);
	snprintf(redis, sizeof redis, "REDIS_URL=redis://127.0.0.1:%d", f->redis.port);
	const char *env[] = {name,
	                     url,
	                     llm,
	                     "LLM_MODEL=eager-model",
	                     "LLM_API_KEY=fleet-key-0123456789",
	                     acl,
	                     gh,
	                     user,
	                     tok,
	                     "GA_FULFIL_INTERVAL_MS=1000",
	                     "GA_GITHUB_WRITE_SPACING_MS=100",
	                     "GA_GITHUB_SPACING_MS=20",
	                     "GA_SPACE_BACKOFF_MS=300,600,1200",
	                     "GA_SPACE_MDNS=0",
	                     "GA_SPACE_TYPING_BASE_MS=200",
	                     "GA_SPACE_TYPING_PER_CHAR_MS=2",
	                     "GA_SPACE_TYPING_MAX_MS=800",
	                     "DASHBOARD_ADDR=off",
	                     f->use_redis ? redis : NULL,
	                     NULL};
	th_agent_start(&f->a[i], home, (const char *const[]){NULL}, env);
	if (!th_agent_wait_log(&f->a[i], "joined the room", 30000))
		failf(f, "%s did not join the room", OURS[i]);
}

static void peer_join(struct fleet *f)
{
	f->ws = ws_connect("127.0.0.1", f->room.port, TH_WAIT_MS);
	if (!f->ws)
		fail_msg("the peer cannot connect to the room");
	char join[300];
	snprintf(join, sizeof join,
	         "{\"type\":\"join\",\"name\":\"%s\",\"id\":\"%s-mk2x9q1a\",\"version\":\"10.1.0\","
	         "\"capabilities\":[\"social\",\"github\",\"code\"]}",
	         f->peer, f->peer);
	th_send(f->ws, join);
	cJSON *j = th_expect(f->ws, "join", th_pred_name, f->peer, TH_WAIT_MS);
	if (!j)
		fail_msg("the peer was not let in");
	cJSON_Delete(j);
	th_send(f->ws, "{\"type\":\"identity\",\"summary\":{\"coreValues\":[\"ship it\"],"
	               "\"interests\":[\"testing\"],\"voice\":\"brisk\",\"expertise\":[\"CI\"],"
	               "\"recentWork\":\"No recent completed work\"}}");
}

static void fleet_start(struct fleet *f, enum variant v, const int order[NAGENTS])
{
	memset(f, 0, sizeof *f);
	f->v = v;
	pick_names(f);
	snprintf(f->peer_title, sizeof f->peer_title, "%s",
	         v == V_REDIS ? "Can someone open an issue in acme/widgets for the login timeout"
	                      : REQUEST);
	char err[512];
	f->gh = ghfake_new(err, sizeof err);
	if (!f->gh)
		fail_msg("ghfake: %s", err);
	ghfake_add_repo(f->gh, "acme", "widgets", 0);
	for (int i = 0; i < NAGENTS; i++) {
		char tok[64];
		snprintf(tok, sizeof tok, "token-%s-0123456789", LOGINS[i]);
		ghfake_add_token(f->gh, tok, LOGINS[i]);
	}
	ghfake_add_token(f->gh, "token-" PEER_LOGIN "-0123456789", PEER_LOGIN);
	const char *names[] = {OURS[0], OURS[1], OURS[2], f->peer};
	f->model = eager_model_new(names, 4, (unsigned)v, err, sizeof err);
	if (!f->model)
		fail_msg("eager model: %s", err);
	if (v == V_REDIS) {
		if (support_redis_start(&f->redis, NULL, err, sizeof err) != 0)
			fail_msg("redis-server: %s", err);
		f->use_redis = true;
	}
	th_room_start(&f->room, 0, NULL, false);
	peer_join(f);
	for (int k = 0; k < NAGENTS; k++) {
		start_agent(f, order[k]);
		pump(f, 300); /* one joins after the other: the order is the room's */
	}
	pump(f, 1500); /* every agent sees every member */
}

static void fleet_stop(struct fleet *f)
{
	if (getenv("FLEET_VERBOSE"))
		dump_room(f);
	for (int i = 0; i < NAGENTS; i++)
		th_agent_signal(&f->a[i], SIGTERM);
	for (int i = 0; i < NAGENTS; i++) {
		int rc = th_agent_wait_exit(&f->a[i], 15000);
		if (rc != 0)
			failf(f, "%s exited %d", OURS[i], rc);
	}
	ws_free(f->ws);
	th_room_stop(&f->room, SIGTERM);
	eager_model_free(f->model);
	ghfake_free(f->gh);
	if (f->use_redis)
		support_redis_free(&f->redis);
	for (size_t i = 0; i < f->nlog; i++)
		free(f->log[i].text);
	for (size_t i = 0; i < f->nacts; i++)
		free(f->acts[i].json);
}

/* --- the checks --------------------------------------------------------------------------- */

/* At most one of ours claims the work, and it is the owner. */
static void check_claims(struct fleet *f)
{
	for (size_t i = 0; i < f->nlog; i++) {
		const struct rec *r = &f->log[i];
		if (strcmp(r->type, "claim") || strcmp(r->action, "create_issue") ||
		    ours(r->name) < 0 || !strcasestr(r->text, "login timeout"))
			continue;
		if (strcmp(r->name, f->owner) != 0)
			failf(f, "%s claimed %s, but %s owns the request", r->name, r->text,
			      f->owner);
	}
}

/* No claim churn: each of our claims on the work is made once (the room
 * relays a claim only when it is new: renewals are silent), and ended at
 * most once with an action_result; through the room (no Redis), every one
 * of them ends with one, successful. */
static void check_claim_churn(struct fleet *f)
{
	for (size_t i = 0; i < f->nlog; i++) {
		const struct rec *c = &f->log[i];
		if (strcmp(c->type, "claim") || strcmp(c->action, "create_issue") ||
		    ours(c->name) < 0)
			continue;
		int claims = 0, results = 0, ok = 0;
		for (size_t k = 0; k < f->nlog; k++) {
			const struct rec *r = &f->log[k];
			if (strcmp(r->name, c->name) || strcmp(r->action, c->action) ||
			    strcmp(r->text, c->text))
				continue;
			claims += !strcmp(r->type, "claim");
			if (!strcmp(r->type, "action_result")) {
				results++;
				ok += r->success;
			}
		}
		if (claims > 1)
			failf(f, "%s claimed %s %d times", c->name, c->text, claims);
		if (results > 1)
			failf(f, "%s ended its claim on %s %d times", c->name, c->text, results);
		if (!f->use_redis && strcasestr(c->text, "login timeout") && ok != 1)
			failf(f,
			      "%s's claim on %s did not end with its work's result (%d results, %d "
			      "successful)",
			      c->name, c->text, results, ok);
	}
}

/* Our agents' issues: none when another existed before, exactly one when
 * the peer made none. */
static void check_issues(struct fleet *f)
{
	struct issue is[32];
	size_t n = issues_of(f, is, 32);
	int mine = 0;
	bool other_before = false;
	for (size_t i = 0; i < n; i++) {
		if (!ours_login(is[i].login)) {
			other_before = true;
			continue;
		}
		mine++;
		if (other_before)
			failf(f, "%s made issue #%lld \"%s\" after #%lld existed", is[i].login,
			      (long long)is[i].number, is[i].title, (long long)is[0].number);
		if (strcmp(is[i].login, LOGINS[ours(f->owner)]) != 0)
			failf(f, "%s made the issue, but %s owns the request", is[i].login,
			      f->owner);
	}
	if (mine > 1)
		failf(f, "our agents made %d issues for one request", mine);
	if (!f->peer_did && mine != 1)
		failf(f, "nobody else made the issue and ours made %d", mine);
}

/* No agent of ours says a line twice (a status line, an announcement, an
 * answer). */
static void check_repeats(struct fleet *f)
{
	for (size_t i = 0; i < f->nlog; i++) {
		const struct rec *a = &f->log[i];
		if (strcmp(a->type, "chat") || ours(a->name) < 0)
			continue;
		for (size_t k = i + 1; k < f->nlog; k++) {
			const struct rec *b = &f->log[k];
			if (!strcmp(b->type, "chat") && !strcmp(a->name, b->name) &&
			    !strcmp(a->text, b->text))
				failf(f, "%s said twice: %s", a->name, a->text);
		}
	}
}

/* Whether a line of the room is about the request's work: it names it or
 * links one of its issues. */
static bool about_work(const char *text, const struct issue *is, size_t n)
{
	if (strcasestr(text, "login timeout"))
		return true;
	for (size_t i = 0; i < n; i++)
		if (strstr(text, is[i].url))
			return true;
	return false;
}

/* A status line about the work ("On it —", "Creating that now:", "Done —")
 * at most once per agent, whatever its words. */
static void check_status_lines(struct fleet *f)
{
	static const char *const kinds[] = {"On it", "Creating that now", "Done"};
	struct issue is[32];
	size_t nis = issues_of(f, is, 32);
	for (int a = 0; a < NAGENTS; a++)
		for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
			int n = 0;
			for (size_t i = 0; i < f->nlog; i++) {
				const struct rec *r = &f->log[i];
				n += !strcmp(r->type, "chat") && !strcmp(r->name, OURS[a]) &&
				     !strncmp(r->text, kinds[k], strlen(kinds[k])) &&
				     about_work(r->text, is, nis);
			}
			if (n > 1)
				failf(f, "%s said \"%s …\" %d times about the work", OURS[a],
				      kinds[k], n);
		}
}

/* Every chat of ours carries a chain ≤ MAX_ACL and none comes later than
 * MAX_ACL agent messages after the host's latest (the chain derived from
 * the room's history: the peer carries none). */
static void check_chains(struct fleet *f, size_t from)
{
	int run = 0;
	for (size_t i = 0; i < f->nlog; i++) {
		const struct rec *r = &f->log[i];
		if (strcmp(r->type, "chat"))
			continue;
		if (!strcmp(r->name, "host")) {
			run = 0;
			continue;
		}
		run++;
		if (ours(r->name) < 0)
			continue;
		if (r->chain > MAX_ACL)
			failf(f, "%s sent chain %d > MAX_ACL: %s", r->name, r->chain, r->text);
		if (i >= from && run > MAX_ACL)
			failf(f, "%s spoke as agent message %d since the host (MAX_ACL %d): %s",
			      r->name, run, MAX_ACL, r->text);
	}
}

/* The follow-up answered by one of ours with an issue's link, and that
 * answer's story one walk. */
static void check_follow_up(struct fleet *f, size_t from)
{
	struct issue is[32];
	size_t n = issues_of(f, is, 32);
	if (!n)
		failf(f, "no issue at all");
	const char *who = NULL;
	for (size_t i = from; i < f->nlog && !who; i++) {
		const struct rec *r = &f->log[i];
		if (strcmp(r->type, "chat") || ours(r->name) < 0 ||
		    strncmp(r->text, "Done", 4) == 0)
			continue;
		for (size_t k = 0; k < n && !who; k++)
			if (strstr(r->text, is[k].url))
				who = r->name;
	}
	if (!who)
		failf(f, "the follow-up was not answered with the link (%s)", is[0].url);
	const char *home = f->a[ours(who)].home;
	char id[160], why[16384];
	if (story_id_of(home, FOLLOW_UP, id, sizeof id) != 0)
		failf(f, "%s has no story of the follow-up", who);
	if (!story_is_one_walk(home, id, "answered", why, sizeof why))
		failf(f, "%s's story of the follow-up is not one walk: %s", who, why);
}

static bool answered_with_link(struct fleet *f)
{
	struct issue is[32];
	size_t n = issues_of(f, is, 32);
	for (size_t i = 0; i < f->nlog; i++) {
		const struct rec *r = &f->log[i];
		if (strcmp(r->type, "chat") || ours(r->name) < 0 ||
		    strncmp(r->text, "Done", 4) == 0)
			continue;
		for (size_t k = 0; k < n; k++)
			if (strstr(r->text, is[k].url) && r->t_ms > 0)
				return true;
	}
	return false;
}

/* --- the scenario ----------------------------------------------------------------------- */

static void scenario(enum variant v, const int order[NAGENTS], bool chatter)
{
	static struct fleet fl;
	struct fleet *f = &fl;
	fleet_start(f, v, order);

	/* a discussion question */
	th_room_host(&f->room, QUESTION);
	peer_later(f, 1000, NULL, "Retries with a fake clock, and no sleeps in the tests.");
	settle(f, NULL, SETTLE_MS, "the discussion");

	/* the request, phrased as a question */
	th_room_host(&f->room, REQUEST);
	if (v == V_PROMISE_ONLY)
		settle(f, has_our_issue, LAPSE_MS, "the request (the peer only promised)");
	else
		settle(f, has_issue, SETTLE_MS, "the request");
	check_issues(f);
	check_claims(f);

	/* the follow-up */
	size_t follow_from = f->nlog;
	th_room_host(&f->room, FOLLOW_UP);
	int64_t end = th_now_ms() + ANSWER_MS;
	while (!answered_with_link(f)) {
		if (th_now_ms() > end)
			check_follow_up(f, follow_from); /* fails, saying why */
		pump(f, 250);
	}
	settle(f, NULL, SETTLE_MS, "the follow-up");
	check_follow_up(f, follow_from);

	/* the chain-less peer talks on, addressing our agents */
	size_t chatter_from = f->nlog;
	if (chatter) {
		static const char *const topics[CHATTER] = {
		        "should the login tests mock the clock or use real time",
		        "is a 30 second timeout too long for CI",
		        "would you split the login suite into smaller files",
		        "do we retry flaky tests or quarantine them",
		        "should the session cookie be refreshed in the fixture",
		        "is the staging database shared between jobs",
		        "can the login page be tested without a browser",
		        "who reviews the CI config changes"};
		for (int i = 0; i < CHATTER; i++) {
			char text[300];
			snprintf(text, sizeof text, "%s, %s? (%d)", OURS[i % NAGENTS], topics[i],
			         i + 1);
			peer_later(f, 0, NULL, text);
		}
		settle(f, NULL, SETTLE_MS, "the peer's chatter");
	}

	check_issues(f);
	check_claims(f);
	check_claim_churn(f);
	check_repeats(f);
	check_status_lines(f);
	check_chains(f, chatter ? chatter_from : f->nlog);
	fleet_stop(f);
}

static void test_peer_first(void **state)
{
	(void)state;
	scenario(V_PEER_FIRST, (const int[]){0, 1, 2}, true);
}

static void test_peer_late(void **state)
{
	(void)state;
	scenario(V_PEER_LATE, (const int[]){2, 1, 0}, false);
}

static void test_promise_only(void **state)
{
	(void)state;
	scenario(V_PROMISE_ONLY, (const int[]){1, 2, 0}, false);
}

static void test_redis(void **state)
{
	(void)state;
	scenario(V_REDIS, (const int[]){2, 0, 1}, true);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	if (only && !strcmp(only, "redis") && !support_redis_binary()) {
		printf("fleet redis: skipped: redis-server is not installed (scripts/bootstrap.sh "
		       "installs it)\n");
		return 77;
	}
	const struct CMUnitTest all[] = {
	        cmocka_unit_test_teardown(test_peer_first, th_teardown),
	        cmocka_unit_test_teardown(test_peer_late, th_teardown),
	        cmocka_unit_test_teardown(test_promise_only, th_teardown),
	        cmocka_unit_test_teardown(test_redis, th_teardown),
	};
	static const char *const names[] = {"peer_first", "peer_late", "promise_only", "redis"};
	for (size_t i = 0; only && i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(only, names[i]))
			return _cmocka_run_group_tests(names[i], &all[i], 1, NULL, NULL);
	if (only) {
		fprintf(stderr,
		        "test_fleet: no variant '%s' (peer_first, peer_late, promise_only, "
		        "redis)\n",
		        only);
		return 64;
	}
	return cmocka_run_group_tests(all, NULL, NULL);
}
