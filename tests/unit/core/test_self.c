/* SELF.md: sections, bullets, placeholders, Social Mechanics with the
 * reference's defects fixed, rituals, malformed values, first-start template. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "modules/identity/self.h"
#include "testutil.h"

static struct self_doc parse(const char *text)
{
	struct self_doc d;
	struct ga_err err = {{0}};
	if (self_parse(text, strlen(text), &d, &err) != 0)
		fail_msg("parse failed: %s", err.msg);
	return d;
}

static int warned(const struct self_doc *d, const char *needle)
{
	for (int i = 0; i < d->warning_count; i++)
		if (strstr(d->warnings[i], needle))
			return 1;
	return 0;
}

static void test_sections(void **state)
{
	(void)state;
	struct self_doc d = parse("# Ada Lovelace\n"
	                          "\n"
	                          "I'm Ada, a careful\nbuilder.\n"
	                          "\n"
	                          "## Purpose\n"
	                          "\n"
	                          "Help people ship.\nSecond line.\n"
	                          "## values\n"
	                          "- Honesty\n"
	                          "* Care  \n"
	                          "not a bullet\n"
	                          "-nospace\n"
	                          "- *(Added through reflection)*\n"
	                          "## Recent Learnings\n"
	                          "- 2026-01-02: tests first\n"
	                          "- plain learning\n"
	                          "## Relationships\n"
	                          "- Bob\n"
	                          "### Connections\n"
	                          "- Carol\n"
	                          "## Voice\n"
	                          "Warm and direct.\n"
	                          "Short sentences.\n"
	                          "## Current Interests\n"
	                          "- mDNS\n");
	assert_string_equal(d.name, "Ada");
	assert_string_equal(d.identity, "I'm Ada, a careful builder.");
	assert_string_equal(d.purpose, "Help people ship.");
	assert_int_equal(d.values.count, 2);
	assert_string_equal(d.values.items[0], "Honesty");
	assert_string_equal(d.values.items[1], "Care");
	assert_int_equal(d.learnings.count, 2);
	assert_string_equal(d.learnings.items[0], "tests first");
	/* ### subsections belong to their section; the reference's substring
	 * match would have made "### Connections" a section of its own. */
	assert_int_equal(d.relationships.count, 2);
	assert_string_equal(d.voice, "Warm and direct.\nShort sentences.");
	assert_int_equal(d.interests.count, 1);
	assert_int_equal(d.warning_count, 0);
	self_doc_free(&d);
}

static void test_heading_exact(void **state)
{
	(void)state;
	/* "## Voice notes" is not "## Voice"; "### Voice" is not level 2. */
	struct self_doc d = parse("## Voice notes\nno\n### Voice\nno\n## Tone\nyes\n");
	assert_string_equal(d.voice, "yes");
	self_doc_free(&d);
}

static void test_mechanics_template(void **state)
{
	(void)state;
	struct self_doc d = parse("## Social Mechanics\n"
	                          "| Signal | Threshold |\n"
	                          "|---|---|\n"
	                          "| My replies in thread | 6 |\n"
	                          "| Silence from others | 45m |\n"
	                          "| No response to me | 2 hours |\n");
	/* Defect fixed: "replies in thread" sets replies only, not depth. */
	assert_int_equal(d.mechanics.max_replies_before_exit, 6);
	assert_int_equal(d.mechanics.max_thread_depth, SELF_DEFAULT_MAX_DEPTH);
	assert_int_equal(d.mechanics.silence_threshold_ms, 45LL * 60000);
	assert_int_equal(d.mechanics.no_response_timeout_ms, 2LL * 3600000);
	assert_true(d.mechanics.skip_low_value_acks);
	self_doc_free(&d);
}

static void test_mechanics_units_and_bad_values(void **state)
{
	(void)state;
	struct self_doc d = parse("## Social Mechanics\n"
	                          "| Signal | Threshold |\n"
	                          "| Thread depth | 20 |\n"
	                          "| Silence from others | 2 days |\n"
	                          "| No response to me | 90 |\n"
	                          "| Low-value acknowledgments | reply |\n");
	assert_int_equal(d.mechanics.max_thread_depth, 20);
	assert_int_equal(d.mechanics.silence_threshold_ms, 2LL * 86400000); /* not 2 minutes */
	assert_int_equal(d.mechanics.no_response_timeout_ms, 90LL * 60000); /* bare = minutes */
	assert_false(d.mechanics.skip_low_value_acks); /* can now be turned off */
	self_doc_free(&d);

	d = parse("## Social Mechanics\n"
	          "| My replies in thread | four |\n"
	          "| Thread depth | -3 |\n"
	          "| Silence from others | 5 fortnights |\n"
	          "| No response to me | 999999999h |\n"
	          "| Mood | sunny |\n");
	assert_int_equal(d.mechanics.max_replies_before_exit, SELF_DEFAULT_MAX_REPLIES);
	assert_int_equal(d.mechanics.max_thread_depth, SELF_DEFAULT_MAX_DEPTH);
	assert_int_equal(d.mechanics.silence_threshold_ms, SELF_DEFAULT_SILENCE_MS);
	assert_int_equal(d.mechanics.no_response_timeout_ms, SELF_DEFAULT_NO_RESPONSE_MS);
	assert_true(warned(&d, "'My replies in thread' value 'four'"));
	assert_true(warned(&d, "'Thread depth' value '-3'"));
	assert_true(warned(&d, "'Silence from others' value '5 fortnights'"));
	assert_true(warned(&d, "'No response to me'"));
	assert_true(warned(&d, "unknown signal 'Mood'"));
	assert_int_equal(d.warning_count, 5);
	self_doc_free(&d);

	d = parse("## Social Mechanics\n| My replies in thread | 1000 |\n| Thread depth | 0 |\n");
	assert_int_equal(d.mechanics.max_replies_before_exit, SELF_DEFAULT_MAX_REPLIES);
	assert_int_equal(d.mechanics.max_thread_depth, SELF_DEFAULT_MAX_DEPTH);
	assert_int_equal(d.warning_count, 2);
	self_doc_free(&d);
}

static void test_rituals(void **state)
{
	(void)state;
	struct self_doc d = parse("## Daily Rituals\n"
	                          "*(None yet)*\n"
	                          "- **Morning review** [Weekdays] (owner/notes)\n"
	                          "  Participants: @a.bsky.social, b ,, c\n"
	                          "  Role: Initiator of things\n"
	                          "  Look at open threads.\n"
	                          "  Pick one.\n"
	                          "- **Picks** [monday, thursday] (org/picks) trailing\n"
	                          "- **Bad** [fortnightly] (x/y)\n"
	                          "- **Weekend** [weekends] (x/z)\n"
	                          "  Role: dancer\n"
	                          "- **NoWorkspace** [daily]\n");
	assert_int_equal(d.ritual_count, 3);
	struct self_ritual *r = &d.rituals[0];
	assert_string_equal(r->name, "Morning review");
	assert_string_equal(r->workspace, "owner/notes");
	assert_int_equal(r->schedule, SELF_WEEKDAYS);
	assert_true(r->initiator);
	assert_int_equal(r->participant_count, 3);
	assert_string_equal(r->participants[0], "@a.bsky.social");
	assert_string_equal(r->participants[2], "c");
	assert_string_equal(r->description, "Look at open threads.\nPick one.");
	assert_true(self_ritual_on(r, 1));
	assert_false(self_ritual_on(r, 0));
	r = &d.rituals[1];
	assert_int_equal(r->schedule, SELF_DAYS);
	assert_true(self_ritual_on(r, 1));
	assert_true(self_ritual_on(r, 4));
	assert_false(self_ritual_on(r, 2));
	assert_false(r->initiator);
	r = &d.rituals[2];
	assert_true(self_ritual_on(r, 0) && self_ritual_on(r, 6) && !self_ritual_on(r, 3));
	assert_true(warned(&d, "'Bad' has an unknown schedule 'fortnightly'"));
	assert_true(warned(&d, "unknown role 'dancer'"));
	self_doc_free(&d);
}

static void test_invalid_input(void **state)
{
	(void)state;
	struct self_doc d;
	struct ga_err err = {{0}};
	const char bad[] = "## Voice\n\xff\xfe\n";
	assert_int_equal(self_parse(bad, sizeof bad - 1, &d, &err), -1);
	assert_non_null(strstr(err.msg, "UTF-8"));
	assert_int_equal(d.mechanics.max_replies_before_exit, SELF_DEFAULT_MAX_REPLIES);
	self_doc_free(&d);

	/* Truncated table rows and headers do not crash and do not invent values. */
	d = parse("## Social Mechanics\n|\n| |\n| Thread depth\n|| 5 |\n## Daily Rituals\n- **\n- "
	          "**X** [\n");
	assert_int_equal(d.mechanics.max_thread_depth, SELF_DEFAULT_MAX_DEPTH);
	assert_int_equal(d.ritual_count, 0);
	self_doc_free(&d);

	/* Too many bullets: bounded, warned. */
	char *big = malloc(100000);
	strcpy(big, "## Values\n");
	for (int i = 0; i < SELF_MAX_ITEMS + 10; i++)
		strcat(big, "- v\n");
	d = parse(big);
	assert_int_equal(d.values.count, SELF_MAX_ITEMS);
	assert_true(warned(&d, "more than"));
	self_doc_free(&d);
	free(big);
}

static void test_ensure_from_template(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_OFF);
	char *dir = tu_tempdir();
	char self[600], tpl[600];
	snprintf(self, sizeof self, "%s/SELF.md", dir);
	snprintf(tpl, sizeof tpl, "%s/SELF.md.template", dir);
	struct ga_err err = {{0}};
	bool created = true;
	/* Neither file: nothing created, not an error. */
	assert_int_equal(self_ensure(self, tpl, "Ada", 0, &created, &err), 0);
	assert_false(created);

	tu_write(dir, "SELF.md.template",
	         "# {{AGENT_NAME}}\n\nI'm {{AGENT_NAME}} since {{DATE}}.\n");
	assert_int_equal(self_ensure(self, tpl, "Ada", 1767225600000LL, &created, &err), 0);
	assert_true(created);
	char *got = tu_read(dir, "SELF.md");
	assert_string_equal(got, "# Ada\n\nI'm Ada since 2026-01-01.\n");
	free(got);

	/* Existing SELF.md with a leftover placeholder is filled in place;
	 * the template is not used again. */
	tu_write(dir, "SELF.md", "# Me\nhello {{AGENT_NAME}}\n");
	assert_int_equal(self_ensure(self, tpl, "Bo", 0, &created, &err), 0);
	assert_false(created);
	got = tu_read(dir, "SELF.md");
	assert_string_equal(got, "# Me\nhello Bo\n");
	free(got);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sections),
	        cmocka_unit_test(test_heading_exact),
	        cmocka_unit_test(test_mechanics_template),
	        cmocka_unit_test(test_mechanics_units_and_bad_values),
	        cmocka_unit_test(test_rituals),
	        cmocka_unit_test(test_invalid_input),
	        cmocka_unit_test(test_ensure_from_template),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
