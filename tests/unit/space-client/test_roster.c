/*
 * Room state as one client sees it (adapters/space/roster): presence
 * rebuilds, join/leave, identities and capabilities with their bounds,
 * typing expiry, member states, claims (TTL, release, leave), and chats
 * handed up once: straight from the parsed message (live and history,
 * host detection, thread, chain, addressed list), a reconnect's replay and
 * a chat relayed twice not handed up again, the digest set's bound (oldest
 * dropped) and that it covers the room's largest history answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* after stdarg, stddef, setjmp */

#include "adapters/space/roster.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

/* A chat as on_chat saw it, copied (the original is gone after the call). */
struct got {
	char *name, *id, *content, *thread;
	bool has_chain, from_history, host;
	int64_t chain, time_ms;
	int naddressed; /* items in the room's list; -1 when none */
};

#define MAX_GOT 2048
static struct got got[MAX_GOT];
static size_t ngot;

static void got_clear(void)
{
	for (size_t i = 0; i < ngot; i++) {
		free(got[i].name);
		free(got[i].id);
		free(got[i].content);
		free(got[i].thread);
	}
	memset(got, 0, sizeof got);
	ngot = 0;
}

static void on_chat(void *ud, const struct spc_chat *c)
{
	(void)ud;
	if (ngot == MAX_GOT)
		fail_msg("more than %d chats handed up", MAX_GOT);
	struct got *g = &got[ngot++];
	g->name = xstrdup(c->name);
	g->id = xstrdup(c->id);
	g->content = xstrdup(c->content);
	g->thread = c->thread_id ? json_print(c->thread_id) : NULL;
	g->has_chain = c->has_chain;
	g->chain = c->chain;
	g->time_ms = c->time_ms;
	g->from_history = c->from_history;
	g->host = c->host;
	g->naddressed = c->addressed ? cJSON_GetArraySize(c->addressed) : -1;
}

static unsigned apply(struct spc_roster *r, int64_t now, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static unsigned apply(struct spc_roster *r, int64_t now, const char *fmt, ...)
{
	struct strbuf sb;
	sb_init(&sb, 0);
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	struct spc_msg m;
	struct ga_err err = {{0}};
	if (spc_msg_parse(sb_cstr(&sb), sb.len, &m, &err) != 0)
		fail_msg("bad test message %s: %s", sb_cstr(&sb), err.msg);
	unsigned ch = spc_roster_apply(r, &m, now, on_chat, NULL);
	spc_msg_free(&m);
	sb_free(&sb);
	return ch;
}

static int setup(void **state)
{
	/* xmalloc, not calloc: init must not rely on zeroed memory */
	struct spc_roster *r = xmalloc(sizeof *r);
	memset(r, 0xA5, sizeof *r);
	spc_roster_init(r);
	got_clear();
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	spc_roster_free(*state);
	free(*state);
	got_clear();
	return 0;
}

static void test_presence_rebuild(void **state)
{
	struct spc_roster *r = *state;
	unsigned ch =
	        apply(r, 0,
	              "{\"type\":\"presence\",\"agents\":["
	              "{\"name\":\"Ada\",\"id\":\"a1\",\"version\":\"1\",\"joinedAt\":"
	              "\"2025-05-14T09:03:19.804Z\",\"lastSeen\":\"2025-05-14T09:03:20.011Z\","
	              "\"identity\":{\"voice\":\"warm\"},\"capabilities\":[\"social\",5,\"code\"]},"
	              "{\"name\":\"Bob\",\"id\":\"b1\",\"version\":\"2\"},"
	              "{\"name\":\"NoId\"}]}");
	assert_true(ch & SPC_CHANGED_MEMBERS);
	assert_int_equal(r->nmembers, 2); /* the entry without an id is skipped */
	const struct spc_member *a = spc_roster_find_name(r, "Ada");
	assert_non_null(a);
	assert_string_equal(a->id, "a1");
	assert_int_equal(a->joined_at_ms, 1747213399804LL);
	assert_true(a->has_caps);
	assert_int_equal(a->ncaps, 2); /* non-strings dropped, as the server does */
	assert_true(spc_member_has_cap(a, "code"));
	assert_false(spc_member_has_cap(a, "github"));
	assert_string_equal(a->identity_json, "{\"voice\":\"warm\"}");
	const struct spc_member *b = spc_roster_find_id(r, "b1");
	assert_false(b->has_caps);
	assert_null(b->identity_json);

	/* typing and state survive a rebuild; a member that is gone goes */
	apply(r, 1000, "{\"type\":\"typing\",\"name\":\"Bob\",\"id\":\"b1\"}");
	apply(r, 1000,
	      "{\"type\":\"state\",\"name\":\"Bob\",\"id\":\"b1\",\"state\":\"thinking\","
	      "\"detail\":\"pondering\"}");
	apply(r, 1000,
	      "{\"type\":\"presence\",\"agents\":[{\"name\":\"Bob\",\"id\":\"b1\","
	      "\"version\":\"2\"}]}");
	assert_int_equal(r->nmembers, 1);
	b = spc_roster_find_id(r, "b1");
	assert_true(spc_member_typing(b, 5000));
	assert_string_equal(b->state, "thinking");
	assert_string_equal(b->state_detail, "pondering");
	assert_null(spc_roster_find_name(r, "Ada"));
}

static void test_join_leave_identity(void **state)
{
	struct spc_roster *r = *state;
	assert_true(apply(r, 0,
	                  "{\"type\":\"join\",\"name\":\"Ada\",\"id\":\"a1\",\"version\":\"1\","
	                  "\"capabilities\":[\"social\"]}") &
	            SPC_CHANGED_MEMBERS);
	apply(r, 0, "{\"type\":\"join\",\"name\":\"Bob\",\"id\":\"b1\",\"version\":\"1\"}");
	assert_int_equal(r->nmembers, 2);
	/* identity: stored; an oversized one is not kept */
	apply(r, 0, "{\"type\":\"identity\",\"name\":\"Ada\",\"id\":\"a1\",\"summary\":{\"a\":1}}");
	assert_string_equal(spc_roster_find_id(r, "a1")->identity_json, "{\"a\":1}");
	char *big = xmalloc(SPC_IDENTITY_MAX_BYTES + 100);
	memset(big, 'v', SPC_IDENTITY_MAX_BYTES + 10);
	big[SPC_IDENTITY_MAX_BYTES + 10] = '\0';
	apply(r, 0,
	      "{\"type\":\"identity\",\"name\":\"Ada\",\"id\":\"a1\",\"summary\":{\"v\":\"%s\"}}",
	      big);
	free(big);
	assert_null(spc_roster_find_id(r, "a1")->identity_json);
	/* identity of a stranger changes nothing */
	assert_int_equal(apply(r, 0,
	                       "{\"type\":\"identity\",\"name\":\"Zed\",\"id\":\"z\","
	                       "\"summary\":{}}"),
	                 0);
	/* leave by id; the name may be reused by a newer connection */
	apply(r, 0,
	      "{\"type\":\"leave\",\"name\":\"Ada\",\"id\":\"a1\",\"timestamp\":"
	      "\"2025-05-14T09:03:19.804Z\"}");
	assert_int_equal(r->nmembers, 1);
	assert_null(spc_roster_find_id(r, "a1"));
	spc_roster_reset(r);
	assert_int_equal(r->nmembers, 0);
}

static void test_typing_expires(void **state)
{
	struct spc_roster *r = *state;
	apply(r, 0, "{\"type\":\"join\",\"name\":\"Bob\",\"id\":\"b1\",\"version\":\"1\"}");
	assert_true(apply(r, 100, "{\"type\":\"typing\",\"name\":\"Bob\",\"id\":\"b1\"}") &
	            SPC_CHANGED_TYPING);
	const struct spc_member *b = spc_roster_find_id(r, "b1");
	assert_true(spc_member_typing(b, 100 + SPC_TYPING_TTL_MS - 1));
	assert_false(spc_member_typing(b, 100 + SPC_TYPING_TTL_MS));
	/* a chat from the typist clears the mark */
	apply(r, 200, "{\"type\":\"typing\",\"name\":\"Bob\",\"id\":\"b1\"}");
	apply(r, 300, "{\"type\":\"chat\",\"name\":\"Bob\",\"id\":\"b1\",\"content\":\"hi\"}");
	assert_false(spc_member_typing(spc_roster_find_id(r, "b1"), 301));
	/* typing of a non-member is ignored */
	assert_int_equal(apply(r, 0, "{\"type\":\"typing\",\"name\":\"X\",\"id\":\"x\"}"), 0);
}

static void test_claims(void **state)
{
	struct spc_roster *r = *state;
	apply(r, 0,
	      "{\"type\":\"claim\",\"name\":\"Bob\",\"id\":\"b1\",\"action\":\"create_issue\","
	      "\"target\":\"o/r#1\"}");
	const struct spc_claim *c = spc_roster_claim(r, "create_issue", "o/r#1", 1000);
	assert_non_null(c);
	assert_string_equal(c->owner, "Bob");
	assert_null(spc_roster_claim(r, "create_issue", "o/r#2", 1000));
	/* expires at exactly the server's TTL (>=, §9 item 10) */
	assert_non_null(spc_roster_claim(r, "create_issue", "o/r#1", SPC_CLAIM_TTL_MS - 1));
	assert_null(spc_roster_claim(r, "create_issue", "o/r#1", SPC_CLAIM_TTL_MS));
	/* a renewal seen later refreshes it */
	apply(r, 50000,
	      "{\"type\":\"claim\",\"name\":\"Bob\",\"id\":\"b1\",\"action\":"
	      "\"create_issue\",\"target\":\"o/r#1\"}");
	assert_non_null(spc_roster_claim(r, "create_issue", "o/r#1", 100000));
	/* released by an action_result from anyone (§3.7) */
	assert_true(apply(r, 0,
	                  "{\"type\":\"action_result\",\"name\":\"Ada\",\"id\":\"a1\","
	                  "\"action\":\"create_issue\",\"target\":\"o/r#1\",\"success\":true}") &
	            SPC_CHANGED_CLAIMS);
	assert_null(spc_roster_claim(r, "create_issue", "o/r#1", 50001));
	/* a leave forgets the leaver's claims (the reference client did not) */
	apply(r, 0,
	      "{\"type\":\"claim\",\"name\":\"Bob\",\"id\":\"b1\",\"action\":\"a\",\"target\":"
	      "\"t\"}");
	apply(r, 0,
	      "{\"type\":\"claim\",\"name\":\"Cy\",\"id\":\"c1\",\"action\":\"a\",\"target\":"
	      "\"u\"}");
	apply(r, 0, "{\"type\":\"leave\",\"name\":\"Bob\",\"id\":\"b1\"}");
	assert_null(spc_roster_claim(r, "a", "t", 1));
	assert_non_null(spc_roster_claim(r, "a", "u", 1));
	/* bounded: the oldest is dropped */
	for (int i = 0; i < SPC_MAX_CLAIMS + 5; i++)
		apply(r, 10 + i,
		      "{\"type\":\"claim\",\"name\":\"D\",\"id\":\"d\",\"action\":\"x\","
		      "\"target\":\"t%d\"}",
		      i);
	assert_int_equal(r->nclaims, SPC_MAX_CLAIMS);
	assert_null(spc_roster_claim(r, "x", "t0", 20));
	assert_null(spc_roster_claim(r, "x", "t300", 20));
	assert_non_null(spc_roster_claim(r, "x", "t260", 300));
}

static void test_history_and_live_chat(void **state)
{
	struct spc_roster *r = *state;
	apply(r, 0,
	      "{\"type\":\"presence\",\"agents\":[{\"name\":\"Ada\",\"id\":\"a1\","
	      "\"version\":\"1\"}]}");
	unsigned ch = apply(
	        r, 0,
	        "{\"type\":\"history_response\",\"entries\":["
	        "{\"timestamp\":\"2025-05-14T09:00:00.000Z\",\"agentName\":\"Ada\",\"agentId\":"
	        "\"a1\","
	        "\"type\":\"join\",\"content\":\"\"},"
	        "{\"timestamp\":\"2025-05-14T09:00:01.000Z\",\"agentName\":\"host\",\"agentId\":"
	        "\"host-m4b7q2zk\",\"type\":\"chat\",\"content\":\"hello room\"},"
	        "123, null, {\"type\":\"chat\",\"agentName\":\"NoContent\",\"agentId\":\"n\"},"
	        "{\"timestamp\":\"2025-05-14T09:00:02.000Z\",\"agentName\":\"Bob\",\"agentId\":"
	        "\"b1\","
	        "\"type\":\"chat\",\"content\":\"hi host\"}]}");
	assert_true(ch & SPC_CHANGED_CHAT);
	assert_int_equal(ngot, 2); /* in order; the join and the malformed entries skipped */
	assert_string_equal(got[0].content, "hello room");
	assert_string_equal(got[0].name, "host");
	assert_true(got[0].host);
	assert_true(got[0].from_history);
	assert_int_equal(got[0].time_ms, 1747213201000LL);
	assert_null(got[0].thread); /* the room's log keeps no thread and no chain */
	assert_false(got[0].has_chain);
	assert_int_equal(got[0].naddressed, -1);
	assert_false(got[1].host);
	assert_string_equal(got[1].id, "b1");

	/* live chat: host detection needs the sender to be no member; the
	 * room's addressed list is passed as it came (duplicates, non-strings:
	 * the link sorts them out) */
	ch = apply(r, 0,
	           "{\"type\":\"chat\",\"name\":\"host\",\"id\":\"host-m4b7q2zk\",\"content\":"
	           "\"@Ada go\",\"timestamp\":\"2025-05-14T09:00:03.000Z\",\"addressed\":"
	           "[\"Ada\",\"Ada\",5]}");
	assert_int_equal(ch, SPC_CHANGED_CHAT | SPC_CHANGED_TYPING);
	assert_int_equal(ngot, 3);
	assert_true(got[2].host);
	assert_false(got[2].from_history);
	assert_int_equal(got[2].naddressed, 3);
	/* a member that calls itself "host" is not the host (§9 item 12) */
	apply(r, 0, "{\"type\":\"join\",\"name\":\"host\",\"id\":\"host-fake\",\"version\":\"1\"}");
	apply(r, 0, "{\"type\":\"chat\",\"name\":\"host\",\"id\":\"host-fake\",\"content\":\"x\"}");
	assert_int_equal(ngot, 4);
	assert_false(got[3].host);
	/* thread and chain come through as they were sent */
	apply(r, 0,
	      "{\"type\":\"chat\",\"name\":\"Ada\",\"id\":\"a1\",\"content\":\"deep\","
	      "\"threadId\":42,\"chain\":3,\"timestamp\":\"2025-05-14T09:00:04.000Z\"}");
	assert_int_equal(ngot, 5);
	assert_string_equal(got[4].thread, "42");
	assert_true(got[4].has_chain);
	assert_int_equal(got[4].chain, 3);
	assert_false(got[4].host);

	/* a live chat relayed twice is handed up once */
	uint64_t rep = r->repeated_chats;
	assert_int_equal(apply(r, 0,
	                       "{\"type\":\"chat\",\"name\":\"Ada\",\"id\":\"a1\",\"content\":"
	                       "\"deep\",\"threadId\":42,\"chain\":3,\"timestamp\":"
	                       "\"2025-05-14T09:00:04.000Z\"}") &
	                         SPC_CHANGED_CHAT,
	                 0);
	assert_int_equal(ngot, 5);
	assert_int_equal(r->repeated_chats, rep + 1);

	/* a reconnect replays the same history: only what was missed is
	 * handed up (history entries match live chats by sender id, time and
	 * content; the log has no thread or chain) */
	ch = apply(r, 0,
	           "{\"type\":\"history_response\",\"entries\":["
	           "{\"timestamp\":\"2025-05-14T09:00:01.000Z\",\"agentName\":\"host\",\"agentId\":"
	           "\"host-m4b7q2zk\",\"type\":\"chat\",\"content\":\"hello room\"},"
	           "{\"timestamp\":\"2025-05-14T09:00:03.000Z\",\"agentName\":\"host\",\"agentId\":"
	           "\"host-m4b7q2zk\",\"type\":\"chat\",\"content\":\"@Ada go\"},"
	           "{\"timestamp\":\"2025-05-14T09:00:04.000Z\",\"agentName\":\"Ada\",\"agentId\":"
	           "\"a1\",\"type\":\"chat\",\"content\":\"deep\"},"
	           "{\"timestamp\":\"2025-05-14T09:00:09.000Z\",\"agentName\":\"Bob\",\"agentId\":"
	           "\"b1\","
	           "\"type\":\"chat\",\"content\":\"missed while away\"}]}");
	assert_true(ch & SPC_CHANGED_CHAT);
	assert_int_equal(ngot, 6);
	assert_string_equal(got[5].content, "missed while away");
	assert_true(got[5].from_history);
	assert_int_equal(r->repeated_chats, rep + 4);
	/* the set survives a reset (the connection ended), members do not */
	spc_roster_reset(r);
	assert_int_equal(r->nmembers, 0);
	assert_int_equal(apply(r, 0,
	                       "{\"type\":\"history_response\",\"entries\":["
	                       "{\"timestamp\":\"2025-05-14T09:00:09.000Z\",\"agentName\":"
	                       "\"Bob\",\"agentId\":\"b1\",\"type\":\"chat\",\"content\":"
	                       "\"missed while away\"}]}"),
	                 0);
	assert_int_equal(ngot, 6);
	assert_int_equal(r->handed_chats, 6);

	/* the same text at another time, or from another sender, is another chat */
	apply(r, 0,
	      "{\"type\":\"chat\",\"name\":\"Bob\",\"id\":\"b1\",\"content\":\"missed while "
	      "away\",\"timestamp\":\"2025-05-14T09:00:10.000Z\"}");
	apply(r, 0,
	      "{\"type\":\"chat\",\"name\":\"Bob\",\"id\":\"b2\",\"content\":\"missed while "
	      "away\",\"timestamp\":\"2025-05-14T09:00:09.000Z\"}");
	assert_int_equal(ngot, 8);

	/* no sink: recorded all the same */
	struct spc_msg m;
	const char *txt = "{\"type\":\"chat\",\"name\":\"Bob\",\"id\":\"b1\",\"content\":\"q\"}";
	assert_int_equal(spc_msg_parse(txt, strlen(txt), &m, NULL), 0);
	assert_true(spc_roster_apply(r, &m, 0, NULL, NULL) & SPC_CHANGED_CHAT);
	assert_int_equal(spc_roster_apply(r, &m, 0, NULL, NULL) & SPC_CHANGED_CHAT, 0);
	unsigned char d[SPC_SEEN_DIGEST_BYTES];
	spc_chat_digest("b1", 0, "q", d);
	assert_true(spc_roster_chat_seen(r, d));
	spc_msg_free(&m);
	assert_int_equal(ngot, 8);
}

static void chat_at(struct spc_roster *r, int i)
{
	apply(r, 0, "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":\"m%d\"}", i);
}

static void test_seen_bound(void **state)
{
	struct spc_roster *r = *state;
	const int n = SPC_SEEN_CHATS + 10;
	for (int i = 0; i < n; i++)
		chat_at(r, i);
	assert_int_equal(ngot, n);
	assert_int_equal(r->nseen, SPC_SEEN_CHATS);
	/* the oldest ten were dropped: m9 is new again (and pushes out m10);
	 * m11 and the newest are still known */
	chat_at(r, 9);
	assert_int_equal(ngot, n + 1);
	chat_at(r, 11);
	chat_at(r, n - 1);
	assert_int_equal(ngot, n + 1);
	chat_at(r, 10);
	assert_int_equal(ngot, n + 2);
	assert_int_equal(r->nseen, SPC_SEEN_CHATS);
	assert_int_equal(r->handed_chats, (uint64_t)n + 2);
	assert_int_equal(r->repeated_chats, 2);
}

/* The room answers a join with at most 1,000 log entries
 * (space/proto.c space_history_limit). After a client saw that many chats
 * live, the whole replay is recognised; only what came after is new. */
#define ROOM_HISTORY_MAX 1000
static void test_full_replay_recognised(void **state)
{
	struct spc_roster *r = *state;
	assert_true(SPC_SEEN_CHATS >= ROOM_HISTORY_MAX);
	/* earlier chats first, so the set is full and wraps */
	for (int i = 0; i < 300; i++)
		apply(r, 0,
		      "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":\"old %d\","
		      "\"timestamp\":\"2025-05-14T08:00:00.000Z\"}",
		      i);
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"type\":\"history_response\",\"entries\":[");
	for (int i = 0; i < ROOM_HISTORY_MAX; i++) {
		apply(r, 0,
		      "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":\"live %d\","
		      "\"timestamp\":\"2025-05-14T09:%02d:%02d.000Z\"}",
		      i, i / 60, i % 60);
		if (i >= 3) /* the first three are older than the replay */
			sb_printf(&sb,
			          "%s{\"timestamp\":\"2025-05-14T09:%02d:%02d.000Z\",\"agentName\":"
			          "\"B\",\"agentId\":\"b\",\"type\":\"chat\",\"content\":"
			          "\"live %d\"}",
			          i > 3 ? "," : "", i / 60, i % 60, i);
	}
	for (int i = 0; i < 3; i++)
		sb_printf(&sb,
		          ",{\"timestamp\":\"2025-05-14T10:00:0%d.000Z\",\"agentName\":\"B\","
		          "\"agentId\":\"b\",\"type\":\"chat\",\"content\":\"new %d\"}",
		          i, i);
	sb_puts(&sb, "]}");
	size_t before = ngot;
	assert_true(apply(r, 0, "%s", sb_cstr(&sb)) & SPC_CHANGED_CHAT);
	sb_free(&sb);
	assert_int_equal(ngot, before + 3);
	assert_string_equal(got[before].content, "new 0");
	assert_string_equal(got[before + 2].content, "new 2");
}

static void test_members_bound(void **state)
{
	struct spc_roster *r = *state;
	struct strbuf sb;
	sb_init(&sb, 0);
	sb_puts(&sb, "{\"type\":\"presence\",\"agents\":[");
	for (int i = 0; i < SPC_MAX_MEMBERS + 10; i++)
		sb_printf(&sb, "%s{\"name\":\"n%d\",\"id\":\"i%d\",\"version\":\"1\"}",
		          i ? "," : "", i, i);
	sb_puts(&sb, "]}");
	apply(r, 0, "%s", sb_cstr(&sb));
	sb_free(&sb);
	assert_int_equal(r->nmembers, SPC_MAX_MEMBERS);
	assert_true(r->dropped_members > 0);
	/* a join beyond the bound is dropped too */
	assert_int_equal(apply(r, 0,
	                       "{\"type\":\"join\",\"name\":\"late\",\"id\":\"late\","
	                       "\"version\":\"1\"}"),
	                 0);
	assert_null(spc_roster_find_id(r, "late"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_presence_rebuild, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_join_leave_identity, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_typing_expires, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_claims, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_history_and_live_chat, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_seen_bound, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_full_replay_recognised, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_members_bound, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
