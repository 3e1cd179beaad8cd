/* The event: deep copies, NULL handling, text with NUL bytes and its cut on
 * a UTF-8 boundary, the addressed bound, names both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "modules/conversation/event.h"

static void test_init_copies(void **state)
{
	char conv[] = "space:room", mid[] = "space:0123", author[] = "peer-1", name[] = "Bob";
	char text[] = "hi\0there";
	char a0[] = "Ann", a1[] = "Me";
	const char *addressed[] = {a0, a1};
	struct conv_event_src src = {
	        .platform = CONV_PLATFORM_SPACE,
	        .conversation = conv,
	        .message_id = mid,
	        .parent_id = "space:parent",
	        .thread_id = NULL,
	        .author_id = author,
	        .author_name = name,
	        .author_kind = CONV_AUTHOR_PEER,
	        .is_bot = true,
	        .chain = 3,
	        .chain_explicit = true,
	        .text = text,
	        .text_len = 8,
	        .addressed = addressed,
	        .naddressed = 2,
	        .addressed_me = true,
	        .time_ms = 42,
	        .from_history = true,
	};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	conv[0] = mid[0] = author[0] = name[0] = text[0] = a0[0] = 'X';
	assert_string_equal(ev.conversation, "space:room");
	assert_string_equal(ev.message_id, "space:0123");
	assert_string_equal(ev.parent_id, "space:parent");
	assert_null(ev.thread_id);
	assert_string_equal(ev.author_id, "peer-1");
	assert_string_equal(ev.author_name, "Bob");
	assert_int_equal(ev.author_kind, CONV_AUTHOR_PEER);
	assert_true(ev.is_bot && ev.chain_explicit && ev.addressed_me && ev.from_history);
	assert_int_equal(ev.chain, 3);
	assert_int_equal(ev.text_len, 8);
	assert_memory_equal(ev.text, "hi\0there", 9); /* NUL inside, and after */
	assert_int_equal(ev.naddressed, 2);
	assert_string_equal(ev.addressed[0], "Ann");
	assert_string_equal(ev.addressed[1], "Me");
	assert_int_equal(ev.time_ms, 42);

	struct conv_event cp;
	conv_event_copy(&cp, &ev);
	conv_event_free(&ev);
	assert_string_equal(cp.conversation, "space:room");
	assert_memory_equal(cp.text, "hi\0there", 9);
	assert_string_equal(cp.addressed[1], "Me");
	assert_string_equal(cp.parent_id, "space:parent");
	conv_event_free(&cp);
	conv_event_free(&cp); /* freed events are empty: a second free is harmless */
	conv_event_free(NULL);
}

static void test_init_nulls(void **state)
{
	struct conv_event_src src = {.platform = CONV_PLATFORM_OWNER, .naddressed = 3};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	assert_string_equal(ev.conversation, "");
	assert_string_equal(ev.message_id, "");
	assert_string_equal(ev.author_id, "");
	assert_string_equal(ev.author_name, "");
	assert_null(ev.parent_id);
	assert_null(ev.thread_id);
	assert_string_equal(ev.text, "");
	assert_int_equal(ev.text_len, 0);
	assert_int_equal(ev.naddressed, 0); /* no array: nothing addressed */
	conv_event_free(&ev);

	const char *many[CONV_MAX_ADDRESSED + 4];
	for (size_t i = 0; i < CONV_MAX_ADDRESSED + 4; i++)
		many[i] = i == 1 ? NULL : "n";
	src.addressed = many;
	src.naddressed = CONV_MAX_ADDRESSED + 4;
	conv_event_init(&ev, &src);
	assert_int_equal(ev.naddressed, CONV_MAX_ADDRESSED);
	assert_string_equal(ev.addressed[1], "");
	conv_event_free(&ev);
}

static void test_long_text_cut_on_boundary(void **state)
{
	size_t len = CONV_TEXT_MAX_BYTES + 10;
	char *t = malloc(len);
	memset(t, 'a', len);
	memcpy(t + CONV_TEXT_MAX_BYTES - 1, "\xE2\x82\xAC", 3); /* € straddles the limit */
	struct conv_event_src src = {.text = t, .text_len = len};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	assert_int_equal(ev.text_len, CONV_TEXT_MAX_BYTES - 1);
	assert_int_equal(ev.text[ev.text_len], '\0');
	conv_event_free(&ev);
	free(t);
}

static void test_text_dup_null(void **state)
{
	(void)state;
	size_t kept = 99;
	char *d = conv_text_dup(NULL, 5, 10, &kept);
	assert_string_equal(d, "");
	assert_int_equal(kept, 0);
	free(d);
}

static void test_names(void **state)
{
	for (int p = 0; p < CONV_PLATFORM_COUNT; p++)
		assert_int_equal(conv_platform_parse(conv_platform_name((enum conv_platform)p)), p);
	assert_string_equal(conv_platform_name(CONV_PLATFORM_BLUESKY), "bluesky");
	assert_string_equal(conv_platform_name(CONV_PLATFORM_COUNT), "unknown");
	assert_int_equal(conv_platform_parse("Space"), -1);
	assert_int_equal(conv_platform_parse(NULL), -1);
	for (int k = 0; k < CONV_AUTHOR_COUNT; k++)
		assert_int_equal(
		        conv_author_kind_parse(conv_author_kind_name((enum conv_author_kind)k)), k);
	assert_string_equal(conv_author_kind_name(CONV_AUTHOR_HOST), "host");
	assert_string_equal(conv_author_kind_name(CONV_AUTHOR_COUNT), "unknown");
	assert_int_equal(conv_author_kind_parse("bot"), -1);
	static const bool person[CONV_AUTHOR_COUNT] = {
	        [CONV_AUTHOR_OWNER] = true, [CONV_AUTHOR_HOST] = true, [CONV_AUTHOR_HUMAN] = true};
	for (int k = 0; k < CONV_AUTHOR_COUNT; k++)
		assert_int_equal(conv_author_is_person((enum conv_author_kind)k), person[k]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_init_copies),
	        cmocka_unit_test(test_init_nulls),
	        cmocka_unit_test(test_long_text_cut_on_boundary),
	        cmocka_unit_test(test_text_dup_null),
	        cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
