/*
 * test_bsky_thread — policy_thread.h: which post of a known thread a reply
 * the agent starts answers (the asker's latest, by any name of the
 * thread), and the text cut to the post's bound with its links whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/utf8.h"
#include "modules/bluesky/policy_thread.h"

#define ROOT  "at://did:plc:bob/app.bsky.feed.post/3root"
#define ASK1  "at://did:plc:alice/app.bsky.feed.post/3ask1"
#define ASK2  "at://did:plc:alice/app.bsky.feed.post/3ask2"
#define OURS  "at://did:plc:agent/app.bsky.feed.post/3ours"
#define CAROL "at://did:plc:carol/app.bsky.feed.post/3carol"
#define CONV  "bluesky:" ROOT

static void add(struct conv_store *s, const char *conv, const char *id, const char *parent,
                const char *author, enum conv_author_kind kind, int64_t t)
{
	struct conv_event_src es = {.platform = CONV_PLATFORM_BLUESKY,
	                            .conversation = conv,
	                            .message_id = id,
	                            .parent_id = parent,
	                            .author_id = author,
	                            .author_name = author,
	                            .author_kind = kind,
	                            .text = "x",
	                            .text_len = 1,
	                            .time_ms = t};
	struct conv_event ev;
	conv_event_init(&ev, &es);
	conv_store_add(s, &ev);
	conv_event_free(&ev);
}

/* bob's root (history: no time), alice asks twice, we answered, carol
 * comes by; another thread after it. */
static struct conv_store *thread(void)
{
	struct conv_store *s = conv_store_new();
	add(s, CONV, ROOT, NULL, "did:plc:bob", CONV_AUTHOR_HUMAN, 0);
	add(s, CONV, ASK1, ROOT, "did:plc:alice", CONV_AUTHOR_HUMAN, 1000);
	add(s, CONV, OURS, ASK1, "did:plc:agent", CONV_AUTHOR_SELF, 1500);
	add(s, CONV, ASK2, OURS, "did:plc:alice", CONV_AUTHOR_HUMAN, 2000);
	add(s, CONV, CAROL, ASK2, "did:plc:carol", CONV_AUTHOR_HUMAN, 3000);
	add(s, "bluesky:at://did:plc:x/app.bsky.feed.post/3other",
	    "at://did:plc:x/app.bsky.feed.post/3other", NULL, "did:plc:x", CONV_AUTHOR_HUMAN, 4000);
	return s;
}

static void test_pick_by_the_asking_post(void **state)
{
	(void)state;
	struct conv_store *s = thread();
	struct bsky_thread_target t;
	struct decision d;
	assert_int_equal(bsky_thread_pick(s, ASK1, &t, &d), 0);
	assert_string_equal(d.rule, "thread_known");
	assert_string_equal(t.conversation, CONV);
	assert_string_equal(t.root, ROOT);
	assert_string_equal(t.asker, "did:plc:alice");
	assert_string_equal(t.parent, ASK2); /* her latest, not carol's, not the first ask */
	conv_store_free(s);
}

static void test_pick_by_root_or_key_answers_the_latest_person(void **state)
{
	(void)state;
	struct conv_store *s = thread();
	struct bsky_thread_target t;
	struct decision d;
	/* bob opened the thread; the root does not say who asked: the
	 * latest person in it is answered */
	assert_int_equal(bsky_thread_pick(s, ROOT, &t, &d), 0);
	assert_string_equal(t.asker, "did:plc:carol");
	assert_string_equal(t.parent, CAROL);
	assert_string_equal(t.root, ROOT);
	assert_int_equal(bsky_thread_pick(s, CONV, &t, &d), 0);
	assert_string_equal(t.parent, CAROL);
	assert_string_equal(t.root, ROOT);
	/* a post of ours named: the latest person too */
	assert_int_equal(bsky_thread_pick(s, OURS, &t, &d), 0);
	assert_string_equal(t.parent, CAROL);
	conv_store_free(s);
}

static void test_pick_root_of_ours_answers_the_latest_person(void **state)
{
	(void)state;
	struct conv_store *s = conv_store_new();
	const char *conv = "bluesky:" OURS;
	add(s, conv, OURS, NULL, "did:plc:agent", CONV_AUTHOR_SELF, 100);
	add(s, conv, ASK1, OURS, "did:plc:alice", CONV_AUTHOR_HUMAN, 200);
	add(s, conv, CAROL, ASK1, "did:plc:carol", CONV_AUTHOR_HUMAN, 300);
	add(s, conv, "at://did:plc:agent/app.bsky.feed.post/3late", CAROL, "did:plc:agent",
	    CONV_AUTHOR_SELF, 400);
	struct bsky_thread_target t;
	struct decision d;
	assert_int_equal(bsky_thread_pick(s, OURS, &t, &d), 0);
	assert_string_equal(t.asker, "did:plc:carol");
	assert_string_equal(t.parent, CAROL);
	assert_string_equal(t.root, OURS);
	conv_store_free(s);
}

static void test_pick_refusals(void **state)
{
	(void)state;
	struct conv_store *s = thread();
	struct bsky_thread_target t;
	struct decision d;
	assert_int_equal(bsky_thread_pick(s, "at://did:plc:z/app.bsky.feed.post/3none", &t, &d),
	                 -1);
	assert_string_equal(d.rule, "thread_unknown");
	assert_int_equal(d.verdict, VERDICT_REJECT);
	assert_int_equal(bsky_thread_pick(s, "space:room", &t, &d), -1);
	assert_string_equal(d.rule, "thread_name");
	assert_int_equal(bsky_thread_pick(s, NULL, &t, &d), -1);
	assert_string_equal(d.rule, "thread_name");
	assert_int_equal(bsky_thread_pick(s, "at://did:plc:a/x y", &t, &d), -1);
	assert_string_equal(d.rule, "thread_name");
	assert_int_equal(bsky_thread_pick(NULL, ASK1, &t, &d), -1);
	assert_string_equal(d.rule, "thread_unknown");
	conv_store_free(s);
	/* only our own posts */
	s = conv_store_new();
	add(s, "bluesky:" OURS, OURS, NULL, "did:plc:agent", CONV_AUTHOR_SELF, 100);
	assert_int_equal(bsky_thread_pick(s, OURS, &t, &d), -1);
	assert_string_equal(d.rule, "thread_no_asker");
	conv_store_free(s);
}

static void test_fit_unchanged(void **state)
{
	(void)state;
	struct decision d;
	char *out = bsky_thread_fit("Plan done. https://x.test/1  \n", 300, &d);
	assert_string_equal(out, "Plan done. https://x.test/1");
	assert_int_equal(d.verdict, VERDICT_PASS);
	free(out);
	assert_null(bsky_thread_fit("  ", 300, &d));
	assert_string_equal(d.rule, "text_bound");
	assert_null(bsky_thread_fit(NULL, 300, &d));
}

static void test_fit_keeps_the_link_whole(void **state)
{
	(void)state;
	struct decision d;
	const char *text =
	        "Plan #3 of acme/garden is complete: the last task's PR #9 (Add the "
	        "footer and the header) is merged. https://github.com/acme/garden/issues/3";
	char *out = bsky_thread_fit(text, 60, &d);
	assert_non_null(out);
	assert_int_equal(d.verdict, VERDICT_EDIT);
	assert_true(utf8_graphemes(out, strlen(out)) <= 60);
	const char *url = "https://github.com/acme/garden/issues/3";
	assert_string_equal(out + strlen(out) - strlen(url), url);
	/* cut at a word boundary, "…" then a space before the link */
	assert_string_equal(out, "Plan #3 of\xe2\x80\xa6 https://github.com/acme/garden/issues/3");
	free(out);
	/* graphemes, not bytes: é and an emoji family count one each */
	out = bsky_thread_fit("\xc3\xa9\xc3\xa9\xc3\xa9 \xc3\xa9\xc3\xa9\xc3\xa9 "
	                      "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d"
	                      "\xf0\x9f\x91\xa7 https://a.test/x",
	                      22, &d);
	assert_non_null(out);
	assert_true(utf8_graphemes(out, strlen(out)) <= 22);
	assert_non_null(strstr(out, "https://a.test/x"));
	free(out);
}

static void test_fit_two_links_or_the_first(void **state)
{
	(void)state;
	struct decision d;
	const char *text =
	        "Done, see the long description here https://a.test/1 and https://b.test/2";
	/* both links and what is between fit with a few words */
	char *out = bsky_thread_fit(text, 50, &d);
	assert_non_null(out);
	assert_true(utf8_graphemes(out, strlen(out)) <= 50);
	assert_non_null(strstr(out, "https://a.test/1 and https://b.test/2"));
	free(out);
	/* not both: the first alone */
	out = bsky_thread_fit(text, 30, &d);
	assert_non_null(out);
	assert_true(utf8_graphemes(out, strlen(out)) <= 30);
	assert_non_null(strstr(out, "https://a.test/1"));
	assert_null(strstr(out, "b.test"));
	free(out);
	/* not even the link */
	assert_null(bsky_thread_fit(text, 10, &d));
	assert_int_equal(d.verdict, VERDICT_REJECT);
}

static void test_fit_without_link(void **state)
{
	(void)state;
	struct decision d;
	char *out = bsky_thread_fit("one two three four five six seven", 16, &d);
	assert_string_equal(out, "one two three\xe2\x80\xa6");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pick_by_the_asking_post),
	        cmocka_unit_test(test_pick_by_root_or_key_answers_the_latest_person),
	        cmocka_unit_test(test_pick_root_of_ours_answers_the_latest_person),
	        cmocka_unit_test(test_pick_refusals),
	        cmocka_unit_test(test_fit_unchanged),
	        cmocka_unit_test(test_fit_keeps_the_link_whole),
	        cmocka_unit_test(test_fit_two_links_or_the_first),
	        cmocka_unit_test(test_fit_without_link),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
