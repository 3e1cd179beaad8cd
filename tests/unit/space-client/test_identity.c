/*
 * What the agent tells the room about itself (modules/space/identity): the
 * identity summary built from SOUL.md and SELF.md the reference's way, and
 * the stable agent id kept in the state file "space_identity".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* after stdarg, stddef, setjmp */

#include "common/log.h"
#include "modules/space/identity.h"
#include "testutil.h"

static const char SOUL[] =
        "# Soul\n\nYou are a maker's companion: curious, kind and honest, here to help people "
        "build things that\nmatter. You speak when you have something worth adding and stay quiet "
        "when you do not. You never\npretend to be human, never claim work you did not do, and "
        "never repeat what someone just said as if it were your own idea. You keep your promises, "
        "and when you cannot, you say so plainly.\n";

static const char SELF[] =
        "# Ada\n\nI'm Ada.\n\n## Current Interests\n\n- Tools that make collaboration calmer\n"
        "- one\n- two\n- three\n- four\n- five (the sixth is not sent)\n\n"
        "## What I'm Learning\n\n- *(Added through reflection)*\n- C11 atomics\n\n"
        "## Voice\n\n\nWarm, direct, specific. Short sentences.\nSecond line is not the voice.\n";

static void test_summary_from_soul_and_self(void **state)
{
	(void)state;
	struct self_doc self;
	struct ga_err err = {{0}};
	assert_int_equal(self_parse(SELF, strlen(SELF), &self, &err), 0);
	struct spc_identity id;
	space_identity_build(SOUL, &self, NULL, &id);
	char *json = spc_identity_json(&id);
	assert_string_equal(
	        json,
	        "{\"coreValues\":[\"You are a maker's companion: curious\",\"kind and honest\","
	        "\"You never pretend to be human\",\"never claim work you did not do\","
	        "\"You keep your promises\"],"
	        "\"currentInterests\":[\"Tools that make collaboration calmer\",\"one\",\"two\","
	        "\"three\",\"four\"],"
	        "\"voice\":\"Warm, direct, specific. Short sentences.\","
	        "\"expertise\":[\"C11 atomics\"],"
	        "\"recentWork\":\"No recent completed work\","
	        "\"soulEssence\":\"You are a maker's companion: curious, kind and honest, here to "
	        "help people build things that matter. You speak when you have something worth "
	        "adding and stay quiet when you do not. You never pretend to be human, never claim "
	        "work you did not do, and never repeat what someone just said as if it were your "
	        "own "
	        "idea.\"}");
	free(json);
	spc_identity_free(&id);
	self_doc_free(&self);
}

static void test_summary_bounds_and_defaults(void **state)
{
	(void)state;
	struct spc_identity id;
	/* nothing known: defaults, no essence */
	space_identity_build(NULL, NULL, NULL, &id);
	char *json = spc_identity_json(&id);
	assert_string_equal(json, "{\"coreValues\":[],\"currentInterests\":[],\"voice\":"
	                          "\"unique voice\",\"expertise\":[],\"recentWork\":"
	                          "\"No recent completed work\"}");
	free(json);
	spc_identity_free(&id);

	/* a long voice line is cut at 120 bytes, never inside a character */
	char self_text[2048];
	char voice[400] = "";
	for (int i = 0; i < 60; i++)
		strcat(voice, "\xc3\xa9"); /* 120 bytes of é */
	strcat(voice, "tail");
	char item[300];
	memset(item, 'i', 250);
	item[250] = '\0';
	snprintf(self_text, sizeof self_text,
	         "# X\n\n## Current Interests\n\n- %s\n\n## Voice\n\nx%s\n", item, voice);
	struct self_doc self;
	struct ga_err err = {{0}};
	assert_int_equal(self_parse(self_text, strlen(self_text), &self, &err), 0);
	char work[300];
	memset(work, 'w', 200);
	work[200] = '\0';
	space_identity_build("Short. ", &self, work, &id);
	assert_int_equal(strlen(id.voice), 119); /* "x" + 59 é: the 60th would pass 120 */
	assert_int_equal(strlen(id.interests[0]), SPACE_IDENTITY_ITEM_MAX);
	assert_int_equal(strlen(id.recent_work), SPC_RECENT_WORK_MAX_BYTES);
	assert_int_equal(id.n_core_values, 1); /* "Short" is 5 characters */
	assert_string_equal(id.core_values[0], "Short");
	assert_string_equal(id.soul_essence, "Short.");
	spc_identity_free(&id);
	self_doc_free(&self);
}

static void test_make_id(void **state)
{
	(void)state;
	char buf[SPACE_ID_BUF];
	/* the reference: "<name>-<Date.now() base 36>" (§7.2) */
	assert_string_equal(space_identity_make_id("Ada", 1747213407000LL, buf, sizeof buf),
	                    "Ada-manpr120");
	assert_string_equal(space_identity_make_id("B", 0, buf, sizeof buf), "B-0");
	assert_string_equal(space_identity_make_id("B", 35, buf, sizeof buf), "B-z");
}

static void test_agent_id_is_kept(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_OFF);
	char *dir = tu_tempdir();
	struct state_store st;
	struct ga_err err = {{0}};
	assert_int_equal(state_store_init(&st, dir, "0.1.0", &err), 0);
	char a[SPACE_ID_BUF], b[SPACE_ID_BUF], c[SPACE_ID_BUF];
	space_identity_agent_id(&st, "Ada", 1000, a);
	assert_string_equal(a, "Ada-rs");
	/* a restart, later: the same id */
	space_identity_agent_id(&st, "Ada", 999999999, b);
	assert_string_equal(b, a);
	char *saved = tu_read(dir, "space_identity.json");
	assert_non_null(strstr(saved, "\"id\":\"Ada-rs\""));
	free(saved);
	/* a new name: a new id, saved */
	space_identity_agent_id(&st, "Bob", 36 * 36, c);
	assert_string_equal(c, "Bob-100");
	space_identity_agent_id(&st, "Bob", 5, c);
	assert_string_equal(c, "Bob-100");
	/* a corrupt file is moved aside by the state store; a fresh id */
	tu_write(dir, "space_identity.json", "{not json");
	space_identity_agent_id(&st, "Bob", 35, c);
	assert_string_equal(c, "Bob-z");
	/* no store: a fresh id each time, nothing written */
	space_identity_agent_id(NULL, "Cy", 35, c);
	assert_string_equal(c, "Cy-z");
	/* a name near the limit still gives an id the room accepts */
	char longname[120];
	memset(longname, 'n', 99);
	longname[99] = '\0';
	space_identity_agent_id(&st, longname, 1747213407000LL, c);
	assert_true(strlen(c) <= SPC_ID_MAX_UNITS);
	assert_non_null(strstr(c, "-manpr120"));
	state_store_free(&st);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_summary_from_soul_and_self),
	        cmocka_unit_test(test_summary_bounds_and_defaults),
	        cmocka_unit_test(test_make_id),
	        cmocka_unit_test(test_agent_id_is_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
