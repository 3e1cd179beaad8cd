/* memory/space-config.json (space-validation.md §13.2–§13.3, its defects
 * fixed): defaults, clamps, max ≥ min, wrong types refused with the field
 * named, versions, bounds, atomic update, the prompt's lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "modules/participation/spacecfg.h"
#include "testutil.h"

static void write_cfg(const char *dir, const char *text)
{
	char *p = fsx_join(dir, SPACECFG_FILE);
	assert_int_equal(fsx_write_atomic(p, text, strlen(text), NULL), 0);
	free(p);
}

static void test_defaults_and_clamps(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct space_cfg c;
	struct strbuf p;
	sb_init(&p, 4096);
	assert_int_equal(space_cfg_load(dir, "1.0", &c, &p), 0); /* missing: defaults */
	assert_int_equal(c.cooldown_min_ms, 10000);
	assert_int_equal(c.cooldown_max_ms, 20000);
	assert_int_equal(c.reply_delay_min_ms, 1000);
	assert_int_equal(c.reflection_every_n, 5);
	assert_int_equal(p.len, 0);

	/* rounded, clamped both ways, max raised to min */
	write_cfg(dir, "{\"cooldownMinMs\": 99999.6, \"cooldownMaxMs\": 1,"
	               "\"replyDelayMinMs\": 1, \"reflectionEveryN\": 500,"
	               "\"behaviorNotes\": \"be brief\", \"_memoryVersion\": \"1.0\"}");
	assert_int_equal(space_cfg_load(dir, "1.0", &c, &p), 0);
	assert_int_equal(c.cooldown_min_ms, 100000);
	assert_int_equal(c.cooldown_max_ms, 100000); /* 1 → 3000 → raised to the min */
	assert_int_equal(c.reply_delay_min_ms, 500);
	assert_int_equal(c.reflection_every_n, 50);
	assert_string_equal(c.behavior_notes, "be brief");

	/* the reference stored "30000" as a string (NaN cooldowns): refused */
	write_cfg(dir, "{\"cooldownMinMs\": \"30000\", \"behaviorNotes\": 7}");
	assert_int_equal(space_cfg_load(dir, NULL, &c, &p), 2);
	assert_non_null(strstr(sb_cstr(&p), "cooldownMinMs must be a number"));
	assert_non_null(strstr(sb_cstr(&p), "behaviorNotes must be text"));
	assert_int_equal(c.cooldown_min_ms, 10000);

	/* another version's file, not an object, garbage: defaults, said */
	sb_reset(&p);
	write_cfg(dir, "{\"cooldownMinMs\": 50000, \"_memoryVersion\": \"0.9\"}");
	assert_int_equal(space_cfg_load(dir, "1.0", &c, &p), 1);
	assert_int_equal(c.cooldown_min_ms, 10000);
	assert_non_null(strstr(sb_cstr(&p), "version 0.9"));
	sb_reset(&p);
	write_cfg(dir, "[1,2]");
	assert_int_equal(space_cfg_load(dir, "1.0", &c, &p), 1);
	assert_non_null(strstr(sb_cstr(&p), "not a JSON object"));
	/* too large: refused, not read */
	sb_reset(&p);
	char *big = malloc(SPACECFG_MAX_BYTES + 100);
	memset(big, ' ', SPACECFG_MAX_BYTES + 99);
	big[0] = '{';
	big[SPACECFG_MAX_BYTES + 98] = '}';
	big[SPACECFG_MAX_BYTES + 99] = '\0';
	write_cfg(dir, big);
	free(big);
	assert_int_equal(space_cfg_load(dir, "1.0", &c, &p), 1);
	assert_non_null(strstr(sb_cstr(&p), "unreadable"));
	sb_free(&p);
	tu_rmrf(dir);
	free(dir);
}

static void test_update_and_render(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct strbuf p;
	sb_init(&p, 4096);
	cJSON *adj = cJSON_Parse("{\"cooldownMinMs\": 60000, \"cooldownMaxMs\": 90000,"
	                         "\"replyDelayMaxMs\": \"fast\", \"unknownKey\": 1}");
	assert_int_equal(space_cfg_update(dir, "1.0", adj, "the room is busy", 1795428000000, &p),
	                 1);
	cJSON_Delete(adj);
	assert_non_null(strstr(sb_cstr(&p), "replyDelayMaxMs"));
	struct space_cfg c;
	sb_reset(&p);
	assert_int_equal(space_cfg_load(dir, "1.0", &c, &p), 0);
	assert_int_equal(c.cooldown_min_ms, 60000);
	assert_int_equal(c.cooldown_max_ms, 90000);
	assert_int_equal(c.reply_delay_max_ms, 3000);
	assert_string_equal(c.last_adjusted_reason, "the room is busy");
	assert_string_equal(c.last_adjusted_at, "2026-11-23T10:00:00.000Z");
	char *text = tu_read(dir, SPACECFG_FILE);
	assert_non_null(strstr(text, "\"_memoryVersion\":\t\"1.0\""));
	free(text);
	struct strbuf r;
	sb_init(&r, 4096);
	space_cfg_render(&c, &r);
	assert_non_null(strstr(sb_cstr(&r), "Cooldown after speaking: 1.0m–1.5m"));
	assert_non_null(strstr(sb_cstr(&r), "Reply delay: 1.0s–3.0s"));
	assert_non_null(strstr(sb_cstr(&r), "Reflection every 5 messages"));
	assert_non_null(
	        strstr(sb_cstr(&r), "Last adjusted: 2026-11-23T10:00:00.000Z — the room is busy"));
	sb_free(&r);
	sb_free(&p);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_defaults_and_clamps),
	        cmocka_unit_test(test_update_and_render),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
