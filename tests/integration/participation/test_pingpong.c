/*
 * A room ping-pong stopped by the gate's windows, not by the chain number:
 * the real agent-space, two real general-agents (Ada and Ben) whose models
 * always answer and always name the other agent, and a scripted peer (Bob,
 * a raw WebSocket member, a bot to the agents) who starts it by asking
 * both.
 *
 * MAX_ACL is 20, far above what the exchange reaches, so the chain rule
 * cannot end it; MAX_BOT_CHAIN_LENGTH is 3. Every agent message in the
 * room — Bob's, the other agent's and the agent's own replies — counts in
 * the bot-chain run (an agent's own chats reach the gate's windows through
 * the pipeline's record stage), so the room falls quiet after a handful of
 * chats: the decisions of at least one agent hold a "bot_chain" block, the
 * agents together say at most MAX_BOT_CHAIN_LENGTH + 1 chats, every chain
 * stays far below MAX_ACL, and nothing more is said for a while after.
 *
 * Without the agent's own replies in the run, each agent would see only
 * Bob's message and the other agent's chats (every second message) and the
 * exchange would run twice as long.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "support_fake.h"
#include "tests/integration/space-client/harness.h"
#include "testutil.h"

#define W             TH_WAIT_MS
#define MAX_BOT       3
#define QUIET_MS      25000 /* several participation ticks (5 s ± 40 %) */
#define EXCHANGE_MS   90000
#define MODEL_ANSWERS 8

/* A model script whose every space_decision answers with the next of
 * texts (each once), naming `other`. */
static char *script(const char *const *texts)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < MODEL_ANSWERS; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "times", 1);
		cJSON *m = cJSON_AddObjectToObject(e, "match");
		cJSON_AddStringToObject(m, "tool_choice", "space_decision");
		cJSON *calls = cJSON_AddArrayToObject(e, "tool_calls");
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "name", "space_decision");
		cJSON *args = cJSON_AddObjectToObject(c, "arguments");
		cJSON_AddBoolToObject(args, "shouldSpeak", true);
		cJSON_AddStringToObject(args, "reason", "asked by name");
		cJSON_AddStringToObject(args, "message", texts[i]);
		cJSON_AddItemToArray(calls, c);
		cJSON_AddItemToArray(a, e);
	}
	/* anything else (a judge's question): no */
	cJSON *no = cJSON_CreateObject();
	cJSON_AddStringToObject(no, "content", "NO");
	cJSON_AddItemToArray(a, no);
	char *s = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	return s;
}

static const char *const ADA_TEXTS[MODEL_ANSWERS] = {
        "Ben, least-recently-used eviction keeps the hot keys resident.",
        "Ben, a write-through layer avoids stale reads after deploys.",
        "Ben, sharding by tenant bounds the blast radius of a flush.",
        "Ben, a bloom filter in front saves the misses a round trip.",
        "Ben, compressing values above four kilobytes halves the memory.",
        "Ben, jittered expiry prevents the thundering herd at midnight.",
        "Ben, per-key metrics tell us which entries never get read.",
        "Ben, a warm-up job after restarts fills the top thousand keys.",
};

static const char *const BEN_TEXTS[MODEL_ANSWERS] = {
        "Ada, frequency counting beats recency for our skewed workload.",
        "Ada, invalidation messages on the bus keep replicas honest.",
        "Ada, a second tier on local disk absorbs the cold reads.",
        "Ada, negative caching of absent rows needs a short lifetime.",
        "Ada, pinning the session tokens stops surprise logouts.",
        "Ada, request coalescing collapses duplicate fetches in flight.",
        "Ada, a size cap per namespace keeps one team from crowding out.",
        "Ada, versioned keys make a schema change a non-event.",
};

struct agent {
	struct th_agent a;
	struct support_fake model;
	char home[256];
	char model_env[128];
};

static void start(struct agent *g, struct th_room *room, const char *name, const char *const *texts)
{
	char err[1024];
	th_home_new(g->home, sizeof g->home);
	char *s = script(texts);
	char sp[400];
	snprintf(sp, sizeof sp, "%s/model-script.json", g->home);
	FILE *fp = fopen(sp, "w");
	assert_non_null(fp);
	fputs(s, fp);
	fclose(fp);
	free(s);
	if (support_fake_start(&g->model, "tests/fakes/llm/llmfake-server", g->home,
	                       (const char *const[]){"--script", sp, NULL}, err, sizeof err) != 0)
		fail_msg("%s", err);
	th_track_pid(g->model.proc.pid);
	snprintf(g->model_env, sizeof g->model_env, "LLM_BASE_URL=%s/v1", g->model.url);
	char nm[64], url[96];
	snprintf(nm, sizeof nm, "AGENT_NAME=%s", name);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room->port);
	th_agent_start(&g->a, g->home, NULL,
	               (const char *const[]){nm, url, g->model_env, "LLM_MODEL=fake-model",
	                                     "LLM_API_KEY=test-key-0123456789", "MAX_ACL=20",
	                                     "MAX_BOT_CHAIN_LENGTH=3", NULL});
	if (!th_agent_wait_log(&g->a, "joined the room", W)) {
		th_fail_dump(&g->a, room);
		fail_msg("%s did not join the room", name);
	}
}

static void stop(struct agent *g, struct th_room *room)
{
	th_agent_signal(&g->a, SIGTERM);
	int rc = th_agent_wait_exit(&g->a, W);
	if (rc != 0) {
		th_fail_dump(&g->a, room);
		fail_msg("the agent in %s exited %d", g->home, rc);
	}
	assert_int_equal(support_fake_stop(&g->model), 0);
	th_untrack_pid(g->model.proc.pid);
}

static bool pred_agent_chat(const cJSON *m, const void *arg)
{
	(void)arg;
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	return name && (!strcmp(name, "Ada") || !strcmp(name, "Ben"));
}

static bool decided_bot_chain(const char *home)
{
	char *d = home_read(home, "memory/decisions.jsonl");
	bool yes = d && strstr(d, "\"rule\":\"bot_chain\"");
	free(d);
	return yes;
}

static void dump_decisions(const char *home)
{
	char *d = home_read(home, "memory/decisions.jsonl");
	fprintf(stderr, "---- %s decisions ----\n%s\n", home, d ? d : "(none)");
	free(d);
}

static void test_pingpong_stopped_by_windows(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	struct agent ada = {0}, ben = {0};
	start(&ada, &room, "Ada", ADA_TEXTS);
	start(&ben, &room, "Ben", BEN_TEXTS);
	struct ws_client *obs = th_observe(&room, "Obs");
	struct ws_client *bob = th_observe(&room, "Bob");
	th_send(bob, "{\"type\":\"chat\",\"content\":\"Ada, Ben: how should we cache the "
	             "tenant settings?\",\"chain\":1}");

	/* The exchange: every agent chat until the room has been quiet for
	 * QUIET_MS (or EXCHANGE_MS in all). */
	int said = 0, max_chain = 0;
	int64_t end = th_now_ms() + EXCHANGE_MS;
	while (th_now_ms() < end) {
		cJSON *m = th_expect(obs, "chat", pred_agent_chat, NULL, QUIET_MS);
		if (!m)
			break;
		said++;
		int chain = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "chain"));
		if (chain > max_chain)
			max_chain = chain;
		cJSON_Delete(m);
	}
	if (said == 0) {
		th_fail_dump(&ada.a, &room);
		th_fail_dump(&ben.a, &room);
		fail_msg("neither agent answered Bob");
	}
	if (th_now_ms() >= end || said > MAX_BOT + 1 || max_chain >= 20 ||
	    !(decided_bot_chain(ada.home) || decided_bot_chain(ben.home))) {
		dump_decisions(ada.home);
		dump_decisions(ben.home);
		fail_msg("the ping-pong was not stopped by the bot-chain window: %d chats, "
		         "highest chain %d",
		         said, max_chain);
	}
	fprintf(stderr, "ping-pong: %d agent chats, highest chain %d\n", said, max_chain);
	th_observer_free(bob);
	th_observer_free(obs);
	stop(&ada, &room);
	stop(&ben, &room);
	th_room_stop(&room, SIGTERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_pingpong_stopped_by_windows, th_teardown),
	};
	return cmocka_run_group_tests_name("room ping-pong", tests, NULL, NULL);
}
