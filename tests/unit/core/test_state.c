/* Versioned state files: round trip, version reset, migration, corruption,
 * and a crash between the temp write and the rename. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/json.h"
#include "common/log.h"
#include "modules/state/state.h"
#include "testutil.h"

struct fx {
	char *dir;
	struct state_store st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	f->dir = tu_tempdir();
	struct ga_err err = {{0}};
	char sub[600];
	snprintf(sub, sizeof sub, "%s/mem/nested", f->dir);
	assert_int_equal(state_store_init(&f->st, sub, "1.2.0", &err), 0);
	log_set_level(LOG_LEVEL_OFF);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	state_store_free(&f->st);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static cJSON *sample(int n)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "n", n);
	cJSON_AddStringToObject(d, "s", "héllo \"quoted\"");
	return d;
}

static void test_missing_then_roundtrip(void **state)
{
	struct fx *f = *state;
	struct state_load_info info;
	assert_null(state_load(&f->st, "peers", NULL, NULL, &info));
	assert_int_equal(info.status, STATE_MISSING);

	cJSON *d = sample(7);
	struct ga_err err = {{0}};
	assert_int_equal(state_save(&f->st, "peers", d, 1700000000000LL, &err), 0);
	cJSON_Delete(d);

	cJSON *got = state_load(&f->st, "peers", NULL, NULL, &info);
	assert_int_equal(info.status, STATE_LOADED);
	assert_int_equal(json_int_or(got, "n", -1), 7);
	assert_string_equal(json_string_or(got, "s", ""), "héllo \"quoted\"");
	cJSON_Delete(got);

	/* The envelope on disk names the version and the time. */
	char *raw = tu_read(f->st.dir, "peers.json");
	assert_non_null(strstr(raw, "\"version\":\"1.2.0\""));
	assert_non_null(strstr(raw, "\"savedAt\":\"2023-11-14T22:13:20.000Z\""));
	free(raw);
}

static void test_version_reset(void **state)
{
	struct fx *f = *state;
	tu_write(f->st.dir, "conv.json",
	         "{\"version\":\"0.9.0\",\"savedAt\":\"2025-01-01T00:00:00.000Z\",\"data\":{\"x\":"
	         "1}}");
	struct state_load_info info;
	assert_null(state_load(&f->st, "conv", NULL, NULL, &info));
	assert_int_equal(info.status, STATE_RESET);
	assert_string_equal(info.from_version, "0.9.0");
	/* Reset is not corruption: nothing is moved aside. */
	assert_int_equal(tu_count_prefix(f->st.dir, "conv.json.corrupt-"), 0);
}

static int migrate_peers(void *ud, cJSON *data, const char *from)
{
	int *calls = ud;
	(*calls)++;
	if (strcmp(from, "0.9.0") != 0)
		return -1;
	cJSON_AddBoolToObject(data, "migrated", 1);
	return 0;
}

static void test_migration(void **state)
{
	struct fx *f = *state;
	tu_write(f->st.dir, "discovered_peers.json",
	         "{\"version\":\"0.9.0\",\"savedAt\":\"2025-01-01T00:00:00.000Z\",\"data\":{"
	         "\"peers\":{\"bob\":{}}}}");
	int calls = 0;
	struct state_load_info info;
	cJSON *got = state_load(&f->st, "discovered_peers", migrate_peers, &calls, &info);
	assert_int_equal(calls, 1);
	assert_int_equal(info.status, STATE_MIGRATED);
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(got, "peers"), "bob"));
	assert_true(json_bool_or(got, "migrated", false));
	cJSON_Delete(got);
	/* Re-saved with the current version: the next load is a plain load. */
	got = state_load(&f->st, "discovered_peers", migrate_peers, &calls, &info);
	assert_int_equal(info.status, STATE_LOADED);
	assert_int_equal(calls, 1);
	cJSON_Delete(got);

	/* A hook that refuses → reset. */
	tu_write(f->st.dir, "discovered_peers.json",
	         "{\"version\":\"0.1.0\",\"savedAt\":\"x\",\"data\":{}}");
	assert_null(state_load(&f->st, "discovered_peers", migrate_peers, &calls, &info));
	assert_int_equal(info.status, STATE_RESET);
}

static void expect_corrupt(struct fx *f, const char *content, const char *why)
{
	int before = tu_count_prefix(f->st.dir, "bad.json.corrupt-");
	tu_write(f->st.dir, "bad.json", content);
	struct state_load_info info;
	assert_null(state_load(&f->st, "bad", NULL, NULL, &info));
	if (info.status != STATE_CORRUPT)
		fail_msg("%s: status %s", why, state_status_name(info.status));
	assert_int_equal(tu_count_prefix(f->st.dir, "bad.json.corrupt-"), before + 1);
	assert_non_null(strstr(info.detail, "moved to"));
	char *left = tu_read(f->st.dir, "bad.json");
	assert_null(left); /* moved aside, so the next start is clean */
	/* and a save afterwards works */
	cJSON *d = sample(1);
	struct ga_err err = {{0}};
	assert_int_equal(state_save(&f->st, "bad", d, 0, &err), 0);
	cJSON_Delete(d);
	cJSON *again = state_load(&f->st, "bad", NULL, NULL, &info);
	assert_non_null(again);
	assert_int_equal(info.status, STATE_LOADED);
	cJSON_Delete(again);
	char p[1024];
	snprintf(p, sizeof p, "%s/bad.json", f->st.dir);
	unlink(p);
}

static void test_corrupt_files(void **state)
{
	struct fx *f = *state;
	expect_corrupt(f, "{\"version\":\"1.2.0\",\"data\":{\"trunc", "truncated");
	expect_corrupt(f, "not json at all", "garbage");
	expect_corrupt(f, "[1,2,3]", "array");
	expect_corrupt(f, "{\"data\":{}}", "no version");
	expect_corrupt(f, "{\"version\":12,\"data\":{}}", "version not a string");
	expect_corrupt(f, "{\"version\":\"1.2.0\"}", "no data");
	expect_corrupt(f, "", "empty");
	expect_corrupt(f, "{\"version\":\"1.2.0\",\"data\":\"\xff\xfe\"}", "invalid utf-8");
}

static void test_crash_between_write_and_rename(void **state)
{
	struct fx *f = *state;
	cJSON *d = sample(1);
	struct ga_err err = {{0}};
	assert_int_equal(state_save(&f->st, "ledger", d, 0, &err), 0);
	cJSON_Delete(d);
	/* A crash after writing the temp file but before the rename leaves a
	 * half-written temp file behind. */
	char tmpname[128];
	snprintf(tmpname, sizeof tmpname, "ledger.json.tmp.%d", 99999);
	tu_write(f->st.dir, tmpname, "{\"version\":\"1.2.0\",\"data\":{\"n\":2");
	struct state_load_info info;
	cJSON *got = state_load(&f->st, "ledger", NULL, NULL, &info);
	assert_int_equal(info.status, STATE_LOADED);
	assert_int_equal(json_int_or(got, "n", -1), 1); /* the old content, whole */
	cJSON_Delete(got);
	/* And the next save still works and wins. */
	d = sample(3);
	assert_int_equal(state_save(&f->st, "ledger", d, 0, &err), 0);
	cJSON_Delete(d);
	got = state_load(&f->st, "ledger", NULL, NULL, &info);
	assert_int_equal(json_int_or(got, "n", -1), 3);
	cJSON_Delete(got);
}

static void test_bad_names(void **state)
{
	struct fx *f = *state;
	cJSON *d = sample(1);
	struct ga_err err = {{0}};
	assert_int_equal(state_save(&f->st, "../escape", d, 0, &err), -1);
	assert_non_null(strstr(err.msg, "invalid state name"));
	assert_int_equal(state_save(&f->st, "", d, 0, &err), -1);
	cJSON_Delete(d);
	struct state_load_info info;
	assert_null(state_load(&f->st, "a/b", NULL, NULL, &info));
	assert_non_null(strstr(info.detail, "invalid state name"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_missing_then_roundtrip, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_version_reset, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_migration, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_corrupt_files, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_crash_between_write_and_rename, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
