/*
 * The send audit (a line per attempt, allowed or denied; rotation; the tail)
 * and dedup (window edges, normalisation, the bounded ring, forget).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "modules/outbound/audit.h"
#include "modules/outbound/dedup.h"
#include "testutil.h"

static void test_audit_lines(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e;
	struct audit_entry ok = {.time_ms = 1763892000000,
	                         .source = "space",
	                         .target = "space:room",
	                         .allowed = true,
	                         .pattern = "space:*",
	                         .reason = "space:room is allowed by pattern space:*"};
	struct audit_entry no = {.time_ms = 1763892000001,
	                         .source = "github",
	                         .target = "github:acme:secret:issue:3",
	                         .allowed = false,
	                         .pattern = NULL,
	                         .reason = "matches none"};
	assert_int_equal(audit_append(dir, &ok, &e), 0);
	assert_int_equal(audit_append(dir, &no, &e), 0);
	char *txt = tu_read(dir, AUDIT_FILE_NAME);
	assert_non_null(txt);
	char *nl = strchr(txt, '\n');
	assert_non_null(nl);
	*nl = '\0';
	cJSON *a = cJSON_Parse(txt), *b = cJSON_Parse(nl + 1);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(cJSON_GetObjectItem(a, "time")->valuestring,
	                    "2025-11-23T10:00:00.000Z");
	assert_string_equal(cJSON_GetObjectItem(a, "source")->valuestring, "space");
	assert_string_equal(cJSON_GetObjectItem(a, "target")->valuestring, "space:room");
	assert_string_equal(cJSON_GetObjectItem(a, "verdict")->valuestring, "allow");
	assert_string_equal(cJSON_GetObjectItem(a, "pattern")->valuestring, "space:*");
	assert_non_null(strstr(cJSON_GetObjectItem(a, "reason")->valuestring, "allowed"));
	assert_string_equal(cJSON_GetObjectItem(b, "verdict")->valuestring, "deny");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(b, "pattern")));
	assert_string_equal(cJSON_GetObjectItem(b, "target")->valuestring,
	                    "github:acme:secret:issue:3");
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(txt);

	cJSON *tail = audit_tail(dir, 1);
	assert_int_equal(cJSON_GetArraySize(tail), 1);
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetArrayItem(tail, 0), "verdict")->valuestring, "deny");
	cJSON_Delete(tail);
	tail = audit_tail(dir, 10);
	assert_int_equal(cJSON_GetArraySize(tail), 2);
	cJSON_Delete(tail);
	tu_rmrf(dir);
	free(dir);
}

static void test_audit_bad_fields_stay_json(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e;
	char reason[3000];
	memset(reason, 'x', sizeof reason - 1);
	reason[sizeof reason - 1] = '\0';
	struct audit_entry en = {.time_ms = 1,
	                         .source = "space",
	                         .target = "space:\xff\xfe",
	                         .allowed = false,
	                         .reason = reason};
	assert_int_equal(audit_append(dir, &en, &e), 0);
	cJSON *tail = audit_tail(dir, 5);
	assert_int_equal(cJSON_GetArraySize(tail), 1);
	cJSON *it = cJSON_GetArrayItem(tail, 0);
	assert_string_equal(cJSON_GetObjectItem(it, "target")->valuestring, "(invalid UTF-8)");
	assert_int_equal(strlen(cJSON_GetObjectItem(it, "reason")->valuestring), AUDIT_FIELD_MAX);
	cJSON_Delete(tail);
	tu_rmrf(dir);
	free(dir);
}

static void test_audit_rotates(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e;
	char reason[AUDIT_FIELD_MAX + 1];
	memset(reason, 'r', AUDIT_FIELD_MAX);
	reason[AUDIT_FIELD_MAX] = '\0';
	struct audit_entry en = {.time_ms = 1,
	                         .source = "space",
	                         .target = "space:room",
	                         .allowed = true,
	                         .pattern = "space:*",
	                         .reason = reason};
	size_t lines = AUDIT_MAX_BYTES / AUDIT_FIELD_MAX + 10;
	for (size_t i = 0; i < lines; i++)
		assert_int_equal(audit_append(dir, &en, &e), 0);
	char *rotated = fsx_join(dir, AUDIT_FILE_NAME ".1");
	assert_true(fsx_exists(rotated));
	free(rotated);
	char *cur = tu_read(dir, AUDIT_FILE_NAME);
	assert_non_null(cur);
	assert_true(strlen(cur) < AUDIT_MAX_BYTES);
	free(cur);
	tu_rmrf(dir);
	free(dir);
}

#define MIN5 OUTBOUND_DEDUP_WINDOW_MS

static void test_dedup_window_edges(void **state)
{
	(void)state;
	struct dedup d;
	dedup_init(&d);
	const char *t = "hello world";
	int64_t age = -1;
	assert_int_equal(dedup_admit(&d, "space:room", t, strlen(t), 1000, &age), 1);
	assert_int_equal(dedup_admit(&d, "space:room", t, strlen(t), 1000, &age), 0);
	assert_int_equal(age, 0);
	assert_int_equal(dedup_admit(&d, "space:room", t, strlen(t), 1000 + MIN5 - 1, &age), 0);
	assert_int_equal(age, MIN5 - 1);
	/* exactly five minutes later: no longer "within" */
	assert_int_equal(dedup_admit(&d, "space:room", t, strlen(t), 1000 + MIN5, &age), 1);
	/* the new record restarts the window */
	assert_int_equal(dedup_admit(&d, "space:room", t, strlen(t), 1000 + MIN5 + 1, &age), 0);
	/* another target is another send */
	assert_int_equal(dedup_admit(&d, "space:other", t, strlen(t), 1000 + MIN5 + 1, &age), 1);
}

static void test_dedup_normalises(void **state)
{
	(void)state;
	struct dedup d;
	dedup_init(&d);
	const char *a = "Hello   World", *b = "  hello world\n", *c = "HELLO\tWORLD",
	           *x = "hello worlds";
	const char *fw = "\xef\xbc\xa8"
	                 "ello world"; /* full-width H: NFKC folds it */
	assert_int_equal(dedup_admit(&d, "t", a, strlen(a), 0, NULL), 1);
	assert_int_equal(dedup_admit(&d, "t", b, strlen(b), 1, NULL), 0);
	assert_int_equal(dedup_admit(&d, "t", c, strlen(c), 2, NULL), 0);
	assert_int_equal(dedup_admit(&d, "t", fw, strlen(fw), 3, NULL), 0);
	assert_int_equal(dedup_admit(&d, "t", x, strlen(x), 4, NULL), 1);
	/* invalid UTF-8 is compared byte for byte, still deduplicated */
	const char *bad = "\xff\xfe  z";
	assert_int_equal(dedup_admit(&d, "t", bad, strlen(bad), 5, NULL), 1);
	assert_int_equal(dedup_admit(&d, "t", "\xff\xfe z", 4, 6, NULL), 0);
	/* NUL bytes count: the length, not strlen */
	assert_int_equal(dedup_admit(&d, "t", "a\0b", 3, 7, NULL), 1);
	assert_int_equal(dedup_admit(&d, "t", "a\0c", 3, 8, NULL), 1);
}

static void test_dedup_ring_evicts_oldest(void **state)
{
	(void)state;
	struct dedup d;
	dedup_init(&d);
	char text[32];
	for (int i = 0; i < OUTBOUND_DEDUP_MAX + 1; i++) {
		snprintf(text, sizeof text, "message %d", i);
		assert_int_equal(dedup_admit(&d, "t", text, strlen(text), i, NULL), 1);
	}
	/* the 51st evicted message 0; message 1 is still remembered */
	assert_int_equal(dedup_admit(&d, "t", "message 1", 9, 100, NULL), 0);
	assert_int_equal(dedup_admit(&d, "t", "message 0", 9, 100, NULL), 1);
	/* and re-admitting message 0 evicted message 1 */
	assert_int_equal(dedup_admit(&d, "t", "message 1", 9, 101, NULL), 1);
}

static void test_dedup_forget(void **state)
{
	(void)state;
	struct dedup d;
	dedup_init(&d);
	assert_int_equal(dedup_admit(&d, "t", "hi", 2, 0, NULL), 1);
	dedup_forget(&d, "t", "HI ", 3);
	assert_int_equal(dedup_admit(&d, "t", "hi", 2, 1, NULL), 1);
	dedup_forget(&d, "t", "other", 5); /* not there: nothing happens */
	assert_int_equal(dedup_admit(&d, "t", "hi", 2, 2, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_audit_lines),
	        cmocka_unit_test(test_audit_bad_fields_stay_json),
	        cmocka_unit_test(test_audit_rotates),
	        cmocka_unit_test(test_dedup_window_edges),
	        cmocka_unit_test(test_dedup_normalises),
	        cmocka_unit_test(test_dedup_ring_evicts_oldest),
	        cmocka_unit_test(test_dedup_forget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
