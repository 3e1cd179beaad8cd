/*
 * Room state as one client sees it (adapters/space/roster): presence
 * rebuilds, join/leave, identities and capabilities with their bounds,
 * typing expiry, member states, claims (TTL, release, leave), and the chat
 * history ring (order, sequence numbers, de-duplication of replayed
 * history, count and byte bounds, host detection).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* after stdarg, stddef, setjmp */

#include "adapters/space/roster.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

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
	unsigned ch = spc_roster_apply(r, &m, now);
	spc_msg_free(&m);
	sb_free(&sb);
	return ch;
}

static int setup(void **state)
{
	struct spc_roster *r = xmalloc(sizeof *r);
	spc_roster_init(r);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	spc_roster_free(*state);
	free(*state);
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
	        "123, null,"
	        "{\"timestamp\":\"2025-05-14T09:00:02.000Z\",\"agentName\":\"Bob\",\"agentId\":"
	        "\"b1\","
	        "\"type\":\"chat\",\"content\":\"hi host\"}]}");
	assert_true(ch & SPC_CHANGED_CHAT);
	assert_int_equal(spc_roster_chat_count(r), 2);
	const struct spc_chat *c0 = spc_roster_chat_at(r, 0);
	assert_string_equal(c0->content, "hello room");
	assert_true(c0->host);
	assert_true(c0->from_history);
	assert_int_equal(c0->seq, 1);
	const struct spc_chat *c1 = spc_roster_chat_at(r, 1);
	assert_false(c1->host);
	assert_int_equal(c1->seq, 2);

	/* live chat: host detection needs the sender to be no member */
	apply(r, 0,
	      "{\"type\":\"chat\",\"name\":\"host\",\"id\":\"host-m4b7q2zk\",\"content\":"
	      "\"@Ada go\",\"timestamp\":\"2025-05-14T09:00:03.000Z\",\"addressed\":"
	      "[\"Ada\",\"Ada\",5]}");
	const struct spc_chat *c2 = spc_roster_chat_at(r, 2);
	assert_true(c2->host);
	assert_false(c2->from_history);
	assert_int_equal(c2->naddressed, 2); /* duplicates are the server's; non-strings dropped */
	/* a member that calls itself "host" is not the host (§9 item 12) */
	apply(r, 0, "{\"type\":\"join\",\"name\":\"host\",\"id\":\"host-fake\",\"version\":\"1\"}");
	apply(r, 0, "{\"type\":\"chat\",\"name\":\"host\",\"id\":\"host-fake\",\"content\":\"x\"}");
	assert_false(spc_roster_chat_at(r, 3)->host);

	/* a reconnect replays the same history: nothing is added twice */
	ch = apply(r, 0,
	           "{\"type\":\"history_response\",\"entries\":["
	           "{\"timestamp\":\"2025-05-14T09:00:01.000Z\",\"agentName\":\"host\",\"agentId\":"
	           "\"host-m4b7q2zk\",\"type\":\"chat\",\"content\":\"hello room\"},"
	           "{\"timestamp\":\"2025-05-14T09:00:03.000Z\",\"agentName\":\"host\",\"agentId\":"
	           "\"host-m4b7q2zk\",\"type\":\"chat\",\"content\":\"@Ada go\"},"
	           "{\"timestamp\":\"2025-05-14T09:00:09.000Z\",\"agentName\":\"Bob\",\"agentId\":"
	           "\"b1\","
	           "\"type\":\"chat\",\"content\":\"missed while away\"}]}");
	assert_int_equal(spc_roster_chat_count(r), 5);
	assert_string_equal(spc_roster_chat_at(r, 4)->content, "missed while away");
	assert_int_equal(spc_roster_chat_at(r, 4)->seq, 5);
	/* history survives a reset (the connection ended), members do not */
	spc_roster_reset(r);
	assert_int_equal(spc_roster_chat_count(r), 5);
}

static void test_history_bounds(void **state)
{
	struct spc_roster *r = *state;
	for (int i = 0; i < SPC_HISTORY_MAX_ENTRIES + 50; i++)
		apply(r, 0, "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":\"m%d\"}",
		      i);
	assert_int_equal(spc_roster_chat_count(r), SPC_HISTORY_MAX_ENTRIES);
	assert_string_equal(spc_roster_chat_at(r, 0)->content, "m50");
	assert_int_equal(spc_roster_chat_at(r, SPC_HISTORY_MAX_ENTRIES - 1)->seq,
	                 SPC_HISTORY_MAX_ENTRIES + 50);
	assert_null(spc_roster_chat_at(r, SPC_HISTORY_MAX_ENTRIES));

	/* the byte bound: large chats push out old ones */
	size_t big_len = SPC_HISTORY_MAX_BYTES / 4;
	char *big = xmalloc(big_len + 1);
	memset(big, 'z', big_len);
	big[big_len] = '\0';
	for (int i = 0; i < 6; i++)
		apply(r, 0, "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":\"%s\"}",
		      big);
	assert_true(r->chat_bytes <= SPC_HISTORY_MAX_BYTES);
	assert_true(spc_roster_chat_count(r) <= 4);
	/* one chat larger than the whole budget is not kept at all */
	free(big);
	big = xmalloc(SPC_HISTORY_MAX_BYTES + 2);
	memset(big, 'q', SPC_HISTORY_MAX_BYTES + 1);
	big[SPC_HISTORY_MAX_BYTES + 1] = '\0';
	size_t before = spc_roster_chat_count(r);
	assert_int_equal(apply(r, 0,
	                       "{\"type\":\"chat\",\"name\":\"B\",\"id\":\"b\",\"content\":"
	                       "\"%s\"}",
	                       big) &
	                         SPC_CHANGED_CHAT,
	                 0);
	assert_int_equal(spc_roster_chat_count(r), before);
	free(big);
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
	        cmocka_unit_test_setup_teardown(test_history_bounds, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_members_bound, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
