/*
 * Black-box conformance: the 51 server cases of space-protocol.md §8.1,
 * run over real sockets against the built agent-space binary.
 *
 * Each test starts its own server in a fresh temporary directory. Where the
 * reference test inspected a mocked persistence or an in-process callback,
 * these read data/chat.jsonl or the server's own output instead (§8 preamble).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/space/harness.h"

#define DEFAULT_JOIN                                                                               \
	"{\"type\":\"join\",\"name\":\"TestAgent\",\"id\":\"agent-001\",\"version\":\"1.0.0\"}"

static int one = 1, two = 2, three = 3;

/* Sends a join and expects the invalid-join error and the 4003 close. */
static void expect_join_rejected(struct space *s, const char *join)
{
	struct ws_client *c = h_connect(s);
	h_send(c, "%s", join);
	h_expect_error(s, c, "Invalid join");
	int code = h_wait_close(c, H_TIMEOUT_MS);
	assert_int_equal(code, 4003);
	assert_string_equal(c->close_reason, "Invalid join message");
}

/* Alice (a1) and Bob (b1) joined; Alice has seen Bob's arrival. */
static void alice_and_bob(struct space *s, struct ws_client **alice, struct ws_client **bob)
{
	*alice = h_join(s, "Alice", "a1");
	*bob = h_join(s, "Bob", "b1");
	h_expect_where(s, *alice, "presence", h_pred_nagents, &two);
}

/* ---- Join lifecycle ------------------------------------------------------ */

/* §8.1 #1: accepts a valid join and returns presence + history */
static void t01_accepts_valid_join(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	h_send(c, DEFAULT_JOIN);
	cJSON *p = h_expect(s, c, "presence");
	cJSON *agents = cJSON_GetObjectItem(p, "agents");
	assert_int_equal(cJSON_GetArraySize(agents), 1);
	cJSON *a = cJSON_GetArrayItem(agents, 0);
	assert_string_equal(h_str(a, "name"), "TestAgent");
	assert_string_equal(h_str(a, "id"), "agent-001");
	assert_string_equal(h_str(a, "version"), "1.0.0");
	h_assert_keys(a, "name,id,version,joinedAt,lastSeen");
	h_assert_timestamp(h_str(a, "joinedAt"));
	h_assert_timestamp(h_str(a, "lastSeen"));
	cJSON *h = h_expect(s, c, "history_response");
	h_assert_keys(h, "type,entries");
	cJSON *entries = cJSON_GetObjectItem(h, "entries");
	/* Real persistence on an empty data dir: only the joiner's own join. */
	assert_int_equal(cJSON_GetArraySize(entries), 1);
	cJSON *e = cJSON_GetArrayItem(entries, 0);
	h_assert_keys(e, "timestamp,agentName,agentId,type,content");
	assert_string_equal(h_str(e, "type"), "join");
	assert_string_equal(h_str(e, "agentName"), "TestAgent");
	assert_string_equal(h_str(e, "agentId"), "agent-001");
	assert_string_equal(h_str(e, "content"), "");
	space_pass(s);
}

/* §8.1 #2: rejects join with empty name */
static void t02_rejects_empty_name(void **state)
{
	struct space *s = space_start(NULL);
	expect_join_rejected(
	        s, "{\"type\":\"join\",\"name\":\"\",\"id\":\"agent-001\",\"version\":\"1.0.0\"}");
	space_pass(s);
}

/* §8.1 #3: rejects join with empty id */
static void t03_rejects_empty_id(void **state)
{
	struct space *s = space_start(NULL);
	expect_join_rejected(
	        s, "{\"type\":\"join\",\"name\":\"TestAgent\",\"id\":\"\",\"version\":\"1.0.0\"}");
	space_pass(s);
}

/* §8.1 #4: rejects join with empty version */
static void t04_rejects_empty_version(void **state)
{
	struct space *s = space_start(NULL);
	expect_join_rejected(
	        s,
	        "{\"type\":\"join\",\"name\":\"TestAgent\",\"id\":\"agent-001\",\"version\":\"\"}");
	space_pass(s);
}

/* §8.1 #5: rejects join with name exceeding 100 chars */
static void t05_rejects_long_name(void **state)
{
	struct space *s = space_start(NULL);
	char *name = h_repeat("A", 101);
	char join[512];
	snprintf(join, sizeof join,
	         "{\"type\":\"join\",\"name\":\"%s\",\"id\":\"agent-001\",\"version\":\"1.0.0\"}",
	         name);
	free(name);
	expect_join_rejected(s, join);
	space_pass(s);
}

/* §8.1 #6: rejects join with id exceeding 100 chars */
static void t06_rejects_long_id(void **state)
{
	struct space *s = space_start(NULL);
	char *id = h_repeat("x", 101);
	char join[512];
	snprintf(join, sizeof join,
	         "{\"type\":\"join\",\"name\":\"TestAgent\",\"id\":\"%s\",\"version\":\"1.0.0\"}",
	         id);
	free(id);
	expect_join_rejected(s, join);
	space_pass(s);
}

/* §8.1 #7: rejects join with version exceeding 50 chars */
static void t07_rejects_long_version(void **state)
{
	struct space *s = space_start(NULL);
	char *v = h_repeat("9", 51);
	char join[512];
	snprintf(join, sizeof join,
	         "{\"type\":\"join\",\"name\":\"TestAgent\",\"id\":\"agent-001\",\"version\":\"%"
	         "s\"}",
	         v);
	free(v);
	expect_join_rejected(s, join);
	space_pass(s);
}

/* §8.1 #8: includes capabilities in presence when provided */
static void t08_capabilities_in_presence(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	h_send(c, "{\"type\":\"join\",\"name\":\"TestAgent\",\"id\":\"agent-001\",\"version\":\"1."
	          "0.0\","
	          "\"capabilities\":[\"social\",\"github\"]}");
	cJSON *p = h_expect(s, c, "presence");
	cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "agents"), 0);
	h_assert_keys(a, "name,id,version,joinedAt,lastSeen,capabilities");
	const char *caps = h_print(s, cJSON_GetObjectItem(a, "capabilities"));
	assert_string_equal(caps, "[\"social\",\"github\"]");
	space_pass(s);
}

/* §8.1 #9: replaces stale connection when same agent name reconnects */
static void t09_replaces_same_name(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *ws1 = h_join(s, "Agent1", "id-1");
	struct ws_client *ws2 = h_connect(s);
	h_send(ws2,
	       "{\"type\":\"join\",\"name\":\"Agent1\",\"id\":\"id-2\",\"version\":\"1.0.0\"}");
	cJSON *p = h_expect(s, ws2, "presence");
	cJSON *agents = cJSON_GetObjectItem(p, "agents");
	assert_int_equal(cJSON_GetArraySize(agents), 1);
	assert_string_equal(h_str(cJSON_GetArrayItem(agents, 0), "id"), "id-2");
	assert_int_equal(h_wait_close(ws1, H_TIMEOUT_MS), 4002);
	assert_string_equal(ws1->close_reason, "Replaced by new connection");
	space_pass(s);
}

/* §8.1 #10: persists join event */
static void t10_persists_join(void **state)
{
	struct space *s = space_start(NULL);
	h_join(s, "TestAgent", "agent-001");
	cJSON *e = h_wait_log_entry(s, "join", "TestAgent", "");
	assert_string_equal(h_str(e, "agentId"), "agent-001");
	space_pass(s);
}

/* §8.1 #11: fires onJoin callback (black-box: the operator output shows the join) */
static void t11_operator_sees_join(void **state)
{
	struct space *s = space_start(NULL);
	h_join(s, "TestAgentZebra", "agent-001");
	assert_true(space_wait_log(s, "TestAgentZebra", H_TIMEOUT_MS));
	space_pass(s);
}

/* ---- Chat -------------------------------------------------------------------- */

/* §8.1 #12: broadcasts valid chat messages */
static void t12_broadcasts_chat(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	h_send(bob, "{\"type\":\"chat\",\"content\":\"Hello everyone\"}");
	cJSON *m = h_expect(s, alice, "chat");
	assert_string_equal(h_str(m, "name"), "Bob");
	assert_string_equal(h_str(m, "id"), "b1");
	assert_string_equal(h_str(m, "content"), "Hello everyone");
	h_assert_keys(m, "type,name,id,content,timestamp");
	h_assert_timestamp(h_str(m, "timestamp"));
	space_pass(s);
}

/* §8.1 #13: rejects chat before join */
static void t13_chat_before_join(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	h_send(c, "{\"type\":\"chat\",\"content\":\"hi\"}");
	cJSON *e = h_expect_error(s, c, "Must join");
	assert_string_equal(h_str(e, "message"), "Must join before sending chat");
	h_assert_keys(e, "type,message");
	/* The connection stays open: a join still works. */
	h_send(c, DEFAULT_JOIN);
	h_expect(s, c, "history_response");
	space_pass(s);
}

/* §8.1 #14: rejects empty chat content */
static void t14_rejects_empty_chat(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"chat\",\"content\":\"\"}");
	cJSON *e = h_expect_error(s, c, "Invalid chat");
	assert_string_equal(h_str(e, "message"),
	                    "Invalid chat: content must be a non-empty string");
	space_pass(s);
}

/* §8.1 #15: rate limits rapid messages */
static void t15_rate_limits(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"chat\",\"content\":\"msg-1\"}");
	h_expect_where(s, c, "chat", h_pred_content, "msg-1");
	h_send(c, "{\"type\":\"chat\",\"content\":\"msg-2\"}");
	cJSON *e = h_expect_error(s, c, "Rate limited");
	assert_string_equal(h_str(e, "message"),
	                    "Rate limited \xe2\x80\x94 wait before sending another message");
	h_expect_none(s, c, "chat", H_QUIET_MS);
	assert_int_equal(h_count_log_entries(s, "chat", NULL, "msg-2"), 0);
	space_pass(s);
}

/* §8.1 #16: relays threadId transparently */
static void t16_relays_thread_id(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	h_send(bob, "{\"type\":\"chat\",\"content\":\"in a thread\",\"threadId\":\"thread-42\"}");
	cJSON *m = h_expect(s, alice, "chat");
	assert_string_equal(h_str(m, "threadId"), "thread-42");
	h_assert_keys(m, "type,name,id,content,timestamp,threadId");
	space_pass(s);
}

/* §8.1 #17: persists chat messages */
static void t17_persists_chat(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"chat\",\"content\":\"persisted msg\"}");
	cJSON *m = h_expect_where(s, c, "chat", h_pred_content, "persisted msg");
	cJSON *e = h_wait_log_entry(s, "chat", "TestAgent", "persisted msg");
	assert_string_equal(h_str(e, "agentId"), "agent-001");
	/* The entry's timestamp is the broadcast's. */
	assert_string_equal(h_str(e, "timestamp"), h_str(m, "timestamp"));
	space_pass(s);
}

/* ---- Claims ------------------------------------------------------------------ */

/* §8.1 #18: accepts and broadcasts a valid claim */
static void t18_broadcasts_claim(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	h_send(bob,
	       "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"owner/repo#title\"}");
	cJSON *m = h_expect(s, alice, "claim");
	assert_string_equal(h_str(m, "name"), "Bob");
	assert_string_equal(h_str(m, "action"), "create_issue");
	assert_string_equal(h_str(m, "target"), "owner/repo#title");
	h_assert_keys(m, "type,name,id,action,target,timestamp");
	/* The claimant gets its own echo too. */
	h_expect(s, bob, "claim");
	space_pass(s);
}

/* §8.1 #19: rejects claim with empty action */
static void t19_claim_empty_action(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"claim\",\"action\":\"\",\"target\":\"x\"}");
	cJSON *e = h_expect_error(s, c, "Invalid claim");
	assert_string_equal(h_str(e, "message"),
	                    "Invalid claim: action and target must be non-empty strings "
	                    "(got action=\"\", target=\"x\")");
	space_pass(s);
}

/* §8.1 #20: rejects claim with empty target */
static void t20_claim_empty_target(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"\"}");
	h_expect_error(s, c, "Invalid claim");
	/* Missing and non-string fields are rendered like JavaScript would. */
	h_send(c, "{\"type\":\"claim\",\"action\":5}");
	cJSON *e = h_expect_error(s, c, "Invalid claim");
	assert_string_equal(h_str(e, "message"),
	                    "Invalid claim: action and target must be non-empty strings "
	                    "(got action=5, target=undefined)");
	space_pass(s);
}

/* §8.1 #21: allows same agent to renew claim silently (TTL refresh) */
static void t21_claim_renewal_silent(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "Alice", "a1");
	const char *claim =
	        "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"owner/repo#1\"}";
	h_send(c, "%s", claim);
	h_expect(s, c, "claim");
	h_send(c, "%s", claim);
	h_expect_none(s, c, NULL, H_QUIET_MS);
	assert_int_equal(h_count_log_entries(s, "claim", "Alice", NULL), 1);
	space_pass(s);
}

/* §8.1 #22: detects claim conflict from different agent */
static void t22_claim_conflict(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	const char *claim =
	        "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"owner/repo#1\"}";
	h_send(alice, "%s", claim);
	h_expect(s, bob, "claim");
	h_expect(s, alice, "claim"); /* her own echo */
	h_send(bob, "%s", claim);
	cJSON *e = h_expect_error(s, bob, "Claim conflict");
	assert_non_null(strstr(h_str(e, "message"), "Alice"));
	assert_string_equal(h_str(e, "message"),
	                    "Claim conflict \xe2\x80\x94 Alice and Bob both claimed owner/repo#1. "
	                    "Alice claimed first.");
	/* Nothing is broadcast for a conflict. */
	h_expect_none(s, alice, "claim", H_QUIET_MS);
	space_pass(s);
}

/* §8.1 #23: persists claim events */
static void t23_persists_claim(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c,
	       "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"owner/repo#test\"}");
	h_expect(s, c, "claim");
	h_wait_log_entry(s, "claim", "TestAgent", "create_issue:owner/repo#test");
	space_pass(s);
}

/* ---- Action results ------------------------------------------------------------ */

/* §8.1 #24: broadcasts action result and cleans up claim */
static void t24_action_result_releases(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	h_send(alice,
	       "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"owner/repo#1\"}");
	h_expect(s, bob, "claim");
	h_send(alice, "{\"type\":\"action_result\",\"action\":\"create_issue\",\"target\":\"owner/"
	              "repo#1\","
	              "\"success\":true,\"link\":\"https://github.com/owner/repo/issues/1\"}");
	cJSON *r = h_expect(s, bob, "action_result");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "success")));
	assert_string_equal(h_str(r, "link"), "https://github.com/owner/repo/issues/1");
	assert_string_equal(h_str(r, "name"), "Alice");
	h_assert_keys(r, "type,name,id,action,target,success,link,timestamp");
	h_send(bob, "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"owner/repo#1\"}");
	cJSON *c = h_expect_where(s, alice, "claim", h_pred_name, "Bob");
	assert_string_equal(h_str(c, "target"), "owner/repo#1");
	h_expect_none(s, bob, "error", H_QUIET_MS); /* no conflict */
	space_pass(s);
}

/* ---- Identity ------------------------------------------------------------------ */

/* §8.1 #25: stores identity and includes in presence */
static void t25_identity_in_presence(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	const char *summary =
	        "{\"coreValues\":[\"curiosity\",\"care\"],\"currentInterests\":"
	        "[\"design systems\"],\"voice\":\"Thoughtful and direct\",\"expertise\":"
	        "[\"TypeScript\"],\"recentWork\":\"Space server tests\"}";
	h_send(c, "{\"type\":\"identity\",\"summary\":%s}", summary);
	cJSON *idm = h_expect(s, c, "identity");
	h_assert_keys(idm, "type,name,id,summary,timestamp");
	cJSON *p = h_expect(s, c, "presence");
	cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "agents"), 0);
	assert_string_equal(h_str(a, "name"), "TestAgent");
	h_assert_keys(a, "name,id,version,joinedAt,lastSeen,identity");
	cJSON *want = h_parse(s, summary);
	assert_true(cJSON_Compare(cJSON_GetObjectItem(a, "identity"), want, 1));
	space_pass(s);
}

/* ---- State ----------------------------------------------------------------------- */

/* §8.1 #26: broadcasts state changes */
static void t26_broadcasts_state(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	h_send(bob, "{\"type\":\"state\",\"state\":\"thinking\",\"detail\":\"processing claim\"}");
	cJSON *m = h_expect(s, alice, "state");
	assert_string_equal(h_str(m, "name"), "Bob");
	assert_string_equal(h_str(m, "state"), "thinking");
	assert_string_equal(h_str(m, "detail"), "processing claim");
	h_assert_keys(m, "type,name,id,state,detail,timestamp");
	space_pass(s);
}

/* ---- Reflection ------------------------------------------------------------------ */

/* §8.1 #27: broadcasts reflection messages */
static void t27_broadcasts_reflection(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	h_send(bob, "{\"type\":\"reflection\",\"summary\":\"Learned about design systems today\"}");
	cJSON *m = h_expect(s, alice, "reflection");
	assert_string_equal(h_str(m, "name"), "Bob");
	assert_string_equal(h_str(m, "summary"), "Learned about design systems today");
	h_assert_keys(m, "type,name,id,summary,timestamp");
	space_pass(s);
}

/* §8.1 #28: persists reflection events */
static void t28_persists_reflection(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"reflection\",\"summary\":\"Growth reflection\"}");
	h_expect(s, c, "reflection");
	h_wait_log_entry(s, "reflection", "TestAgent", "Growth reflection");
	space_pass(s);
}

/* ---- Workspace state --------------------------------------------------------------- */

/* §8.1 #29: broadcasts workspace state messages */
static void t29_broadcasts_workspace_state(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	h_send(bob,
	       "{\"type\":\"workspace_state\",\"workspace\":\"owner/repo\",\"planNumber\":1,"
	       "\"totalTasks\":5,\"completedTasks\":2,\"blockedTasks\":0,\"inProgressTasks\":1}");
	cJSON *m = h_expect(s, alice, "workspace_state");
	assert_string_equal(h_str(m, "workspace"), "owner/repo");
	assert_int_equal(cJSON_GetObjectItem(m, "totalTasks")->valueint, 5);
	assert_int_equal(cJSON_GetObjectItem(m, "completedTasks")->valueint, 2);
	h_assert_keys(m, "type,name,id,workspace,planNumber,totalTasks,completedTasks,blockedTasks,"
	                 "inProgressTasks,timestamp");
	space_pass(s);
}

/* ---- Disconnect cleanup -------------------------------------------------------------- */

/* §8.1 #30: broadcasts leave and updates presence on disconnect */
static void t30_leave_and_presence(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *alice, *bob;
	alice_and_bob(s, &alice, &bob);
	h_close(s, bob);
	cJSON *l = h_expect(s, alice, "leave");
	assert_string_equal(h_str(l, "name"), "Bob");
	assert_string_equal(h_str(l, "id"), "b1");
	h_assert_keys(l, "type,name,id,timestamp");
	cJSON *p = h_expect(s, alice, "presence");
	cJSON *agents = cJSON_GetObjectItem(p, "agents");
	assert_int_equal(cJSON_GetArraySize(agents), 1);
	assert_string_equal(h_str(cJSON_GetArrayItem(agents, 0), "name"), "Alice");
	space_pass(s);
}

/* §8.1 #31: persists leave event */
static void t31_persists_leave(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_close(s, c);
	h_wait_log_entry(s, "leave", "TestAgent", "");
	space_pass(s);
}

/* §8.1 #32: fires onLeave callback (black-box: operator output shows the leave) */
static void t32_operator_sees_leave(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgentOkapi", "agent-001");
	assert_true(space_wait_log(s, "TestAgentOkapi", H_TIMEOUT_MS));
	size_t before = space_log_size(s);
	h_close(s, c);
	h_wait_log_entry(s, "leave", "TestAgentOkapi", "");
	/* New operator output naming the agent appears after the close. */
	assert_true(space_wait_log_from(s, before, "TestAgentOkapi", H_TIMEOUT_MS));
	space_pass(s);
}

/* §8.1 #33: removes agent from connected agents list after disconnect */
static void t33_removed_after_disconnect(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *obs = h_join(s, "Observer", "o1");
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_expect_where(s, obs, "presence", h_pred_nagents, &two);
	h_drop(s, c); /* abrupt TCP close */
	cJSON *p = h_expect_where(s, obs, "presence", h_pred_nagents, &one);
	char names[256];
	assert_string_equal(h_presence_names(p, names, sizeof names), "Observer");
	space_pass(s);
}

/* ---- Host messages ------------------------------------------------------------------ */

/* §8.1 #34: broadcasts host messages to all agents */
static void t34_host_broadcast(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = h_join(s, "Alice", "a1");
	struct ws_client *b = h_join(s, "Bob", "b1");
	space_host(s, "Hello from the host");
	for (int i = 0; i < 2; i++) {
		cJSON *m = h_expect(s, i ? b : a, "chat");
		assert_string_equal(h_str(m, "name"), "host");
		assert_string_equal(h_str(m, "content"), "Hello from the host");
		assert_true(strncmp(h_str(m, "id"), "host-", 5) == 0);
		assert_null(cJSON_GetObjectItem(m, "addressed"));
		h_assert_keys(m, "type,name,id,content,timestamp");
	}
	space_pass(s);
}

static bool contains_string(const cJSON *arr, const char *want)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		if (cJSON_IsString(it) && strcmp(it->valuestring, want) == 0)
			return true;
	}
	return false;
}

/* §8.1 #35: parses @mentions in host messages */
static void t35_host_mentions(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "Marvin", "m1");
	space_host(s, "@Marvin what do you think?");
	cJSON *m = h_expect(s, c, "chat");
	assert_true(contains_string(cJSON_GetObjectItem(m, "addressed"), "Marvin"));
	h_assert_keys(m, "type,name,id,content,timestamp,addressed");
	space_pass(s);
}

/* §8.1 #36: bare name matching uses word boundaries (no false positives) */
static void t36_host_word_boundary(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "Bob", "b1");
	space_host(s, "I went bobsledding yesterday");
	cJSON *m = h_expect(s, c, "chat");
	cJSON *addr = cJSON_GetObjectItem(m, "addressed");
	assert_true(addr == NULL || !contains_string(addr, "Bob"));
	space_pass(s);
}

/* §8.1 #37: bare name matching finds whole-word agent names */
static void t37_host_bare_name(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "Marvin", "m1");
	space_host(s, "Hey Marvin, what do you think?");
	cJSON *m = h_expect(s, c, "chat");
	assert_true(contains_string(cJSON_GetObjectItem(m, "addressed"), "Marvin"));
	space_pass(s);
}

/* §8.1 #38: persists host messages */
static void t38_persists_host(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	space_host(s, "host message");
	cJSON *m = h_expect(s, c, "chat");
	cJSON *e = h_wait_log_entry(s, "chat", "host", "host message");
	assert_string_equal(h_str(e, "agentId"), h_str(m, "id"));
	space_pass(s);
}

/* ---- Multiple agents ---------------------------------------------------------------- */

/* §8.1 #39: tracks multiple connected agents */
static void t39_tracks_multiple(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = h_join(s, "Alice", "a1");
	h_join(s, "Bob", "b1");
	h_join(s, "Charlie", "c1");
	cJSON *p = h_expect_where(s, a, "presence", h_pred_nagents, &three);
	char names[256];
	assert_string_equal(h_presence_names(p, names, sizeof names), "Alice,Bob,Charlie");
	space_pass(s);
}

/* §8.1 #40: broadcasts presence updates to all agents on join */
static void t40_presence_on_join(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *a = h_join(s, "Alice", "a1");
	h_join(s, "Bob", "b1");
	cJSON *j = h_expect(s, a, "join");
	assert_string_equal(h_str(j, "name"), "Bob");
	cJSON *p = h_expect(s, a, "presence");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "agents")), 2);
	space_pass(s);
}

/* ---- Message validation ---------------------------------------------------------------- */

/* §8.1 #41: rejects identity with non-object summary */
static void t41_identity_non_object(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"identity\",\"summary\":\"not-an-object\"}");
	cJSON *e = h_expect_error(s, c, "Invalid identity");
	assert_string_equal(h_str(e, "message"), "Invalid identity: summary must be an object");
	space_pass(s);
}

/* §8.1 #42: rejects state with invalid state value */
static void t42_state_invalid(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"state\",\"state\":\"flying\"}");
	cJSON *e = h_expect_error(s, c, "Invalid state");
	assert_string_equal(
	        h_str(e, "message"),
	        "Invalid state: must be one of idle, thinking, acting, blocked (got \"flying\")");
	h_send(c, "{\"type\":\"state\"}");
	e = h_expect_error(s, c, "Invalid state");
	assert_string_equal(
	        h_str(e, "message"),
	        "Invalid state: must be one of idle, thinking, acting, blocked (got undefined)");
	space_pass(s);
}

/* §8.1 #43: accepts valid state message */
static void t43_state_valid(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *t = h_join(s, "TestAgent", "agent-001");
	struct ws_client *a2 = h_join(s, "Agent2", "agent-002");
	h_send(t, "{\"type\":\"state\",\"state\":\"thinking\"}");
	cJSON *m = h_expect(s, a2, "state");
	assert_string_equal(h_str(m, "state"), "thinking");
	assert_null(cJSON_GetObjectItem(m, "detail"));
	h_assert_keys(m, "type,name,id,state,timestamp");
	space_pass(s);
}

/* §8.1 #44: rejects action_result with missing fields */
static void t44_action_result_invalid(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c,
	       "{\"type\":\"action_result\",\"action\":\"\",\"target\":\"repo\",\"success\":true}");
	cJSON *e = h_expect_error(s, c, "Invalid action_result");
	assert_string_equal(h_str(e, "message"),
	                    "Invalid action_result: action, target (non-empty strings) and success "
	                    "(boolean) are required");
	h_send(c, "{\"type\":\"action_result\",\"action\":\"a\",\"target\":\"repo\",\"success\":"
	          "\"yes\"}");
	h_expect_error(s, c, "Invalid action_result");
	space_pass(s);
}

/* §8.1 #45: rejects reflection with empty summary */
static void t45_reflection_empty(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"reflection\",\"summary\":\"\"}");
	cJSON *e = h_expect_error(s, c, "Invalid reflection");
	assert_string_equal(h_str(e, "message"),
	                    "Invalid reflection: summary must be a non-empty string");
	space_pass(s);
}

/* §8.1 #46: rejects workspace_state with missing workspace */
static void t46_workspace_state_invalid(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"workspace_state\",\"workspace\":\"\",\"totalTasks\":5,"
	          "\"completedTasks\":2}");
	cJSON *e = h_expect_error(s, c, "Invalid workspace_state");
	assert_string_equal(h_str(e, "message"),
	                    "Invalid workspace_state: workspace (non-empty string), totalTasks and "
	                    "completedTasks (numbers) are required");
	space_pass(s);
}

/* ---- Shutdown ---------------------------------------------------------------------------- */

/* §8.1 #47: sends shutdown message without closing connections */
static void t47_shutdown_message(void **state)
{
	const char *env[] = {"SPACE_SHUTDOWN_GRACE_MS=2000", NULL};
	struct space *s = space_start(env);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	kill(s->pid, SIGTERM);
	cJSON *m = h_expect(s, c, "shutdown");
	assert_string_equal(h_str(m, "reason"), "Server shutting down");
	h_assert_keys(m, "type,reason,timestamp");
	h_assert_timestamp(h_str(m, "timestamp"));
	/* Still open and usable during the drain. */
	h_send(c, "{\"type\":\"chat\",\"content\":\"still here\"}");
	h_expect_where(s, c, "chat", h_pred_content, "still here");
	space_pass(s);
}

/* ---- Error handling ------------------------------------------------------------------------ */

/* §8.1 #48: returns error for invalid JSON */
static void t48_invalid_json(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_connect(s);
	h_send(c, "not-valid-json{{{");
	cJSON *e = h_expect_error(s, c, "Invalid JSON");
	assert_string_equal(h_str(e, "message"), "Invalid JSON");
	/* Stays open. */
	h_send(c, DEFAULT_JOIN);
	h_expect(s, c, "history_response");
	space_pass(s);
}

/* §8.1 #49: ignores unknown message types */
static void t49_unknown_type(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	h_send(c, "{\"type\":\"unknown_type\",\"data\":\"test\"}");
	h_expect_none(s, c, NULL, H_QUIET_MS);
	space_pass(s);
}

/* ---- Server lifecycle ------------------------------------------------------------------------ */

/* §8.1 #50: getConnectedAgents returns empty array before any joins
 * (black-box: the first joiner's presence lists only itself) */
static void t50_empty_before_joins(void **state)
{
	struct space *s = space_start(NULL);
	struct ws_client *pending = h_connect(s); /* connected, never joins */
	(void)pending;
	struct ws_client *c = h_connect(s);
	h_send(c, DEFAULT_JOIN);
	cJSON *p = h_expect(s, c, "presence");
	char names[256];
	assert_string_equal(h_presence_names(p, names, sizeof names), "TestAgent");
	space_pass(s);
}

/* §8.1 #51: stop clears all agents (black-box: after the drain the client is
 * closed with 1001 and the server exits 0) */
static void t51_stop_closes_1001(void **state)
{
	const char *env[] = {"SPACE_SHUTDOWN_GRACE_MS=300", NULL};
	struct space *s = space_start(env);
	struct ws_client *c = h_join(s, "TestAgent", "agent-001");
	kill(s->pid, SIGTERM);
	h_expect(s, c, "shutdown");
	assert_int_equal(h_wait_close(c, H_TIMEOUT_MS), 1001);
	assert_string_equal(c->close_reason, "Server shutting down");
	assert_int_equal(space_wait_exit(s, H_TIMEOUT_MS), 0);
	assert_int_equal(s->exit_status, 0);
	space_pass(s);
}

#define T(f) cmocka_unit_test_teardown(f, space_teardown)

int main(void)
{
	space_test_filter_from_env();
	const struct CMUnitTest tests[] = {
	        T(t01_accepts_valid_join),
	        T(t02_rejects_empty_name),
	        T(t03_rejects_empty_id),
	        T(t04_rejects_empty_version),
	        T(t05_rejects_long_name),
	        T(t06_rejects_long_id),
	        T(t07_rejects_long_version),
	        T(t08_capabilities_in_presence),
	        T(t09_replaces_same_name),
	        T(t10_persists_join),
	        T(t11_operator_sees_join),
	        T(t12_broadcasts_chat),
	        T(t13_chat_before_join),
	        T(t14_rejects_empty_chat),
	        T(t15_rate_limits),
	        T(t16_relays_thread_id),
	        T(t17_persists_chat),
	        T(t18_broadcasts_claim),
	        T(t19_claim_empty_action),
	        T(t20_claim_empty_target),
	        T(t21_claim_renewal_silent),
	        T(t22_claim_conflict),
	        T(t23_persists_claim),
	        T(t24_action_result_releases),
	        T(t25_identity_in_presence),
	        T(t26_broadcasts_state),
	        T(t27_broadcasts_reflection),
	        T(t28_persists_reflection),
	        T(t29_broadcasts_workspace_state),
	        T(t30_leave_and_presence),
	        T(t31_persists_leave),
	        T(t32_operator_sees_leave),
	        T(t33_removed_after_disconnect),
	        T(t34_host_broadcast),
	        T(t35_host_mentions),
	        T(t36_host_word_boundary),
	        T(t37_host_bare_name),
	        T(t38_persists_host),
	        T(t39_tracks_multiple),
	        T(t40_presence_on_join),
	        T(t41_identity_non_object),
	        T(t42_state_invalid),
	        T(t43_state_valid),
	        T(t44_action_result_invalid),
	        T(t45_reflection_empty),
	        T(t46_workspace_state_invalid),
	        T(t47_shutdown_message),
	        T(t48_invalid_json),
	        T(t49_unknown_type),
	        T(t50_empty_before_joins),
	        T(t51_stop_closes_1001),
	};
	return cmocka_run_group_tests_name("space conformance: server (spec 8.1)", tests, NULL,
	                                   NULL);
}
