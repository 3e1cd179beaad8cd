/*
 * §12.1 step 4 and its 🐞 (claims.c): the claim target of a commitment
 * ("<repo>#<first 50 characters>", never splitting a UTF-8 sequence), the
 * peers' live claims (TTL, first claimant, bounds) and the drop of our
 * commitments a peer already claimed (rule claimed_by_peer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/xalloc.h"
#include "modules/participation/participation.h"

static struct cmt_item commit(const char *repo, const char *title, const char *desc)
{
	return (struct cmt_item){.type = CMT_CREATE_ISSUE,
	                         .repo = repo ? xstrdup(repo) : NULL,
	                         .title = title ? xstrdup(title) : NULL,
	                         .description = desc ? xstrdup(desc) : NULL};
}

static void commit_free(struct cmt_item *c)
{
	free(c->repo);
	free(c->title);
	free(c->description);
	free(c->content);
}

static void target_of(const struct cmt_item *c, const char *detected, char *buf)
{
	part_claim_target(c, detected, buf, PART_CLAIM_TARGET_MAX);
}

static void test_target_repo_and_title(void **state)
{
	(void)state;
	char buf[PART_CLAIM_TARGET_MAX];
	struct cmt_item c = commit("acme/widgets", "Login timeout", "A long body");
	target_of(&c, "other/repo", buf);
	assert_string_equal(buf, "acme/widgets#Login timeout");
	commit_free(&c);
	/* no repo on the commitment: the detected one; none: "unknown" */
	c = commit(NULL, "Login timeout", NULL);
	target_of(&c, "acme/site", buf);
	assert_string_equal(buf, "acme/site#Login timeout");
	target_of(&c, NULL, buf);
	assert_string_equal(buf, "unknown#Login timeout");
	target_of(&c, "", buf);
	assert_string_equal(buf, "unknown#Login timeout");
	commit_free(&c);
	/* no title: the description; neither: "" */
	c = commit("a/b", "", "Describe the flaky test");
	target_of(&c, NULL, buf);
	assert_string_equal(buf, "a/b#Describe the flaky test");
	commit_free(&c);
	c = commit("a/b", NULL, NULL);
	target_of(&c, NULL, buf);
	assert_string_equal(buf, "a/b#");
	commit_free(&c);
}

static void test_target_fifty_units(void **state)
{
	(void)state;
	char buf[PART_CLAIM_TARGET_MAX];
	/* 60 ASCII characters: the first 50 (50 UTF-16 units, what a
	 * TypeScript agent's .slice(0, 50) keeps) */
	const char *ascii = "0123456789abcdefghijABCDEFGHIJ0123456789abcdefghijKLMNOPQRST";
	struct cmt_item c = commit("o/r", ascii, NULL);
	assert_int_equal(part_claim_target(&c, NULL, buf, sizeof buf), 4 + 50);
	assert_string_equal(buf, "o/r#0123456789abcdefghijABCDEFGHIJ0123456789abcdefghij");
	commit_free(&c);

	/* 49 ASCII then "é" (2 bytes) as the 50th character, then more: the
	 * é is kept whole, the 51st character goes */
	char t[128];
	memset(t, 'x', 49);
	memcpy(t + 49,
	       "\xC3\xA9"
	       "yz",
	       5);
	c = commit("o/r", t, NULL);
	assert_int_equal(part_claim_target(&c, NULL, buf, sizeof buf), 4 + 49 + 2);
	assert_memory_equal(buf + 4 + 49, "\xC3\xA9", 3); /* é then NUL */
	commit_free(&c);

	/* 51 four-byte characters (U+1F41E, two UTF-16 units each): a
	 * TypeScript peer's .slice(0, 50) keeps 25 of them, and so do we —
	 * 100 bytes, never a partial sequence */
	char bugs[4 * 51 + 1];
	for (int i = 0; i < 51; i++)
		memcpy(bugs + 4 * i, "\xF0\x9F\x90\x9E", 4);
	bugs[4 * 51] = '\0';
	c = commit("o/r", bugs, NULL);
	assert_int_equal(part_claim_target(&c, NULL, buf, sizeof buf), 4 + 100);
	assert_memory_equal(buf + 4, bugs, 100);
	assert_int_equal(buf[104], '\0');
	commit_free(&c);

	/* 49 ASCII then one four-byte character: the 50th unit would split
	 * it, so the title stops at the 49 (a whole code point or none) */
	memset(t, 'x', 49);
	memcpy(t + 49, "\xF0\x9F\x90\x9E", 5);
	c = commit("o/r", t, NULL);
	assert_int_equal(part_claim_target(&c, NULL, buf, sizeof buf), 4 + 49);
	commit_free(&c);

	/* 49 ASCII then a three-byte character: 52 bytes of title */
	memset(t, 'x', 49);
	memcpy(t + 49,
	       "\xE2\x80\x94"
	       "tail",
	       8);
	c = commit("o/r", t, NULL);
	assert_int_equal(part_claim_target(&c, NULL, buf, sizeof buf), 4 + 52);
	assert_memory_equal(buf + 4 + 49, "\xE2\x80\x94", 4);
	commit_free(&c);

	/* a small buffer cuts on a character boundary too */
	c = commit("o/r", "\xC3\xA9\xC3\xA9\xC3\xA9", NULL);
	char small[8];
	assert_int_equal(part_claim_target(&c, NULL, small, sizeof small), 6); /* o/r#é */
	assert_string_equal(small, "o/r#\xC3\xA9");
	commit_free(&c);
}

static void test_peer_claims_table(void **state)
{
	(void)state;
	struct part_peer_claims t;
	memset(&t, 0, sizeof t);
	assert_true(part_peer_claims_note(&t, "Ben", "create_issue", "a/b#X", 1000));
	assert_string_equal(part_peer_claims_holder(&t, "create_issue", "a/b#X", 2000), "Ben");
	assert_null(part_peer_claims_holder(&t, "create_plan", "a/b#X", 2000));
	assert_null(part_peer_claims_holder(&t, "create_issue", "a/b#Y", 2000));
	/* the first claimant keeps it; a later one does not take it over */
	assert_true(part_peer_claims_note(&t, "Cal", "create_issue", "a/b#X", 3000));
	assert_string_equal(part_peer_claims_holder(&t, "create_issue", "a/b#X", 3000), "Ben");
	/* live for PART_CLAIM_TTL_MS after it was last seen; renewals extend */
	assert_null(part_peer_claims_holder(&t, "create_issue", "a/b#X", 1000 + PART_CLAIM_TTL_MS));
	assert_true(part_peer_claims_note(&t, "Ben", "create_issue", "a/b#X", 50000));
	assert_string_equal(
	        part_peer_claims_holder(&t, "create_issue", "a/b#X", 1000 + PART_CLAIM_TTL_MS),
	        "Ben");
	/* released, or the holder left */
	part_peer_claims_release(&t, "create_issue", "a/b#X");
	assert_null(part_peer_claims_holder(&t, "create_issue", "a/b#X", 50001));
	assert_true(part_peer_claims_note(&t, "Cal", "create_issue", "a/b#X", 60000));
	part_peer_claims_forget(&t, "Cal");
	assert_null(part_peer_claims_holder(&t, "create_issue", "a/b#X", 60001));
	/* refused: blank fields, a target longer than ours can ever be */
	assert_false(part_peer_claims_note(&t, "", "create_issue", "a/b#X", 1));
	assert_false(part_peer_claims_note(&t, "Ben", "create_issue", "", 1));
	char *huge = xcalloc(1, PART_CLAIM_TARGET_MAX + 1);
	memset(huge, 'x', PART_CLAIM_TARGET_MAX);
	assert_false(part_peer_claims_note(&t, "Ben", "create_issue", huge, 1));
	free(huge);
	/* bounded: the oldest goes */
	memset(&t, 0, sizeof t);
	char target[32];
	for (int i = 0; i < PART_PEER_CLAIMS_MAX + 3; i++) {
		snprintf(target, sizeof target, "a/b#%d", i);
		assert_true(part_peer_claims_note(&t, "Ben", "create_issue", target, 100 + i));
	}
	assert_int_equal(t.n, PART_PEER_CLAIMS_MAX);
	assert_null(part_peer_claims_holder(&t, "create_issue", "a/b#0", 200));
	assert_null(part_peer_claims_holder(&t, "create_issue", "a/b#2", 200));
	snprintf(target, sizeof target, "a/b#%d", PART_PEER_CLAIMS_MAX + 2);
	assert_string_equal(part_peer_claims_holder(&t, "create_issue", target, 200), "Ben");
}

/* The claim table of the drop tests: Ben holds create_issue on the login
 * timeout issue of acme/widgets. */
static const char *holder_fn(void *ud, const char *action, const char *target)
{
	const struct part_peer_claims *t = ud;
	return part_peer_claims_holder(t, action, target, 5000);
}

static void test_drop_claimed(void **state)
{
	(void)state;
	struct part_peer_claims t;
	memset(&t, 0, sizeof t);
	part_peer_claims_note(&t, "Ben", "create_issue", "acme/widgets#Login timeout", 1000);

	struct cmt_list c;
	memset(&c, 0, sizeof c);
	c.item[0] = commit(NULL, "Login timeout", "the body"); /* repo detected */
	c.item[1] = commit("acme/widgets", "Dark mode", NULL);
	c.item[2] = commit("acme/widgets", "Login timeout", NULL);
	c.item[2].type = CMT_CREATE_PLAN; /* another action: not claimed */
	c.n = 3;
	struct decision why;
	memset(&why, 0, sizeof why);
	assert_int_equal(part_drop_claimed_commitments(&c, "acme/widgets", holder_fn, &t, &why), 1);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.item[0].title, "Dark mode");
	assert_int_equal(c.item[1].type, CMT_CREATE_PLAN);
	assert_null(c.item[2].title); /* the slot left behind is clear */
	assert_int_equal(why.verdict, VERDICT_DROP);
	assert_string_equal(why.rule, "claimed_by_peer");
	assert_non_null(strstr(why.reason, "Ben holds a live claim on "
	                                   "create_issue:acme/widgets#Login timeout"));
	assert_non_null(strstr(why.reason, "1 of 3"));
	cmt_list_clear(&c);

	/* another detected repo: another target, nothing dropped, why untouched */
	memset(&c, 0, sizeof c);
	c.item[0] = commit(NULL, "Login timeout", NULL);
	c.n = 1;
	memset(&why, 0, sizeof why);
	assert_int_equal(part_drop_claimed_commitments(&c, "acme/site", holder_fn, &t, &why), 0);
	assert_int_equal(c.n, 1);
	assert_null(why.rule);
	/* the claim expired: kept */
	memset(&t, 0, sizeof t);
	part_peer_claims_note(&t, "Ben", "create_issue", "acme/site#Login timeout",
	                      5000 - PART_CLAIM_TTL_MS);
	assert_int_equal(part_drop_claimed_commitments(&c, "acme/site", holder_fn, &t, &why), 0);
	/* no table: nothing to consult */
	assert_int_equal(part_drop_claimed_commitments(&c, "acme/site", NULL, NULL, &why), 0);
	assert_int_equal(c.n, 1);
	cmt_list_clear(&c);

	/* the target is cut at 50 characters on both sides: a title that
	 * differs only after them is the same claim */
	memset(&t, 0, sizeof t);
	const char *long_title = "Flaky websocket tests in the reconnect suite fail on CI";
	char tgt[PART_CLAIM_TARGET_MAX];
	struct cmt_item peer = commit("acme/widgets", long_title, NULL);
	target_of(&peer, NULL, tgt);
	commit_free(&peer);
	part_peer_claims_note(&t, "Cal", "create_issue", tgt, 4000);
	memset(&c, 0, sizeof c);
	c.item[0] = commit("acme/widgets",
	                   "Flaky websocket tests in the reconnect suite fail on CI runners", NULL);
	c.n = 1;
	assert_int_equal(part_drop_claimed_commitments(&c, NULL, holder_fn, &t, &why), 1);
	assert_int_equal(c.n, 0);
	assert_non_null(strstr(why.reason, "Cal holds"));
	cmt_list_clear(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_target_repo_and_title),
	        cmocka_unit_test(test_target_fifty_units),
	        cmocka_unit_test(test_peer_claims_table),
	        cmocka_unit_test(test_drop_claimed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
