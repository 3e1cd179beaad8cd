/* Unit tests for space/store: the persistence cases of space-protocol.md
 * §8.2 plus the defect fixes of §9 items 3, 4 and 17. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "common/jsonnul.h"
#include "common/log.h"
#include "space/store.h"

static char dir[64];

static int setup(void **state)
{
	log_init(LOG_LEVEL_ERROR, 0, NULL);
	snprintf(dir, sizeof dir, "/tmp/space-store-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

static void write_file(const char *name, const char *text)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void append(struct space_store *st, const char *content)
{
	space_store_append(st, "2025-01-01T00:00:00.000Z", "test-agent", "agent-001", "chat",
	                   content, strlen(content));
}

/* Parses the history_response and returns its entries array (caller frees
 * the returned root via *root). */
static const cJSON *history(struct space_store *st, size_t limit, cJSON **root)
{
	struct space_buf *b = space_store_history(st, limit);
	*root = json_parse(space_buf_data(b), b->len, NULL);
	space_buf_unref(b);
	assert_non_null(*root);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(*root, "entries");
	assert_true(cJSON_IsArray(e));
	return e;
}

static const char *content_at(const cJSON *entries, int i)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(entries, i), "content")
	        ->valuestring;
}

static void test_creates_dir_and_appends_jsonl(void **state)
{
	char sub[128];
	snprintf(sub, sizeof sub, "%s/data", dir);
	struct space_store *st = space_store_open(sub, 0, 0, NULL);
	assert_non_null(st);
	struct stat sb;
	assert_int_equal(stat(sub, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	append(st, "first message");
	space_store_free(st);

	char path[160];
	snprintf(path, sizeof path, "%s/chat.jsonl", sub);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[512];
	assert_non_null(fgets(line, sizeof line, f));
	assert_string_equal(line, "{\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"agentName\":"
	                          "\"test-agent\",\"agentId\":\"agent-001\",\"type\":\"chat\","
	                          "\"content\":\"first message\"}\n");
	assert_null(fgets(line, sizeof line, f));
	fclose(f);
}

static void test_empty_and_missing(void **state)
{
	cJSON *root;
	struct space_store *st = space_store_open(dir, 0, 0, NULL);
	assert_int_equal(cJSON_GetArraySize(history(st, 200, &root)), 0);
	cJSON_Delete(root);
	space_store_free(st);
	write_file("chat.jsonl", "");
	st = space_store_open(dir, 0, 0, NULL);
	assert_int_equal(cJSON_GetArraySize(history(st, 200, &root)), 0);
	cJSON_Delete(root);
	space_store_free(st);
}

static void test_last_n_and_reload(void **state)
{
	struct space_store *st = space_store_open(dir, 0, 0, NULL);
	char buf[32];
	for (int i = 0; i < 150; i++) {
		snprintf(buf, sizeof buf, "message-%03d", i);
		append(st, buf);
	}
	cJSON *root;
	const cJSON *e = history(st, 10, &root);
	assert_int_equal(cJSON_GetArraySize(e), 10);
	assert_string_equal(content_at(e, 0), "message-140");
	assert_string_equal(content_at(e, 9), "message-149");
	cJSON_Delete(root);
	space_store_free(st);

	/* Reopened from disk: the same tail. */
	st = space_store_open(dir, 0, 0, NULL);
	e = history(st, 3, &root);
	assert_int_equal(cJSON_GetArraySize(e), 3);
	assert_string_equal(content_at(e, 0), "message-147");
	assert_string_equal(content_at(e, 2), "message-149");
	cJSON_Delete(root);
	e = history(st, 1000, &root);
	assert_int_equal(cJSON_GetArraySize(e), 150);
	cJSON_Delete(root);
	space_store_free(st);
}

static void test_utf8_chunk_boundaries(void **state)
{
	/* Enough entries to cross several 64 KiB read chunks at open. */
	struct space_store *st = space_store_open(dir, 0, 0, NULL);
	char buf[256];
	for (int i = 0; i < 1000; i++) {
		snprintf(buf, sizeof buf,
		         "emoji-test-%d-\xF0\x9F\x8E\xA8\xF0\x9F\x94\xA7\xF0\x9F\x92\xA1-"
		         "caf\xC3\xA9-"
		         "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E-%0100d",
		         i, i);
		append(st, buf);
	}
	space_store_free(st);
	st = space_store_open(dir, 0, 0, NULL);
	cJSON *root;
	const cJSON *e = history(st, 1000, &root);
	assert_int_equal(cJSON_GetArraySize(e), 1000);
	for (int i = 0; i < 1000; i++) {
		const char *c = content_at(e, i);
		assert_null(strstr(c, "\xEF\xBF\xBD"));
		assert_non_null(strstr(c, "\xF0\x9F\x8E\xA8\xF0\x9F\x94\xA7\xF0\x9F\x92\xA1"));
	}
	cJSON_Delete(root);
	space_store_free(st);
}

/* U+0000 in a log line (as the room writes it, and as a hand-made line):
 * kept through the live ring, a reload and the history_response. */
static void test_nul_round_trip(void **state)
{
	write_file("chat.jsonl", "{\"type\":\"chat\",\"content\":\"old\\u0000line\"}\n");
	struct space_store *st = space_store_open(dir, 0, 0, NULL);
	space_store_append(st, "2025-01-01T00:00:00.000Z", "n\xFF", "agent-001", "chat",
	                   "a\xFF"
	                   "b\x01",
	                   4);
	for (int round = 0; round < 2; round++) {
		struct space_buf *b = space_store_history(st, 10);
		const char *h = space_buf_data(b);
		assert_non_null(strstr(h, "\"content\":\"old\\u0000line\""));
		assert_non_null(strstr(h, "\"agentName\":\"n\\u0000\""));
		assert_non_null(strstr(h, "\"content\":\"a\\u0000b\\u0001\""));
		assert_null(memchr(h, 0xFF, b->len));
		space_buf_unref(b);
		space_store_free(st);
		st = space_store_open(dir, 0, 0, NULL);
	}
	space_store_free(st);
	/* The file holds the escape, never a raw NUL or marker. */
	char path[128];
	snprintf(path, sizeof path, "%s/chat.jsonl", dir);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char buf[512];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_int_equal(strlen(buf), n);
	assert_null(strchr(buf, JSON_NUL_MARK));
	assert_non_null(strstr(buf, "\"content\":\"a\\u0000b\\u0001\""));
}

static void test_bad_lines_skipped_not_counted(void **state)
{
	write_file("chat.jsonl", "{\"type\":\"chat\",\"content\":\"valid-1\"}\n"
	                         "{ this is not valid json\n"
	                         "\n"
	                         "123\n"
	                         "null\n"
	                         "[1]\n"
	                         "{\"type\":\"chat\",\"content\":\"valid-2\"}\n"
	                         "another broken line {{{\n");
	struct space_store *st = space_store_open(dir, 0, 0, NULL);
	cJSON *root;
	/* Limit 2: both valid entries, although 6 bad lines are newer. */
	const cJSON *e = history(st, 2, &root);
	assert_int_equal(cJSON_GetArraySize(e), 2);
	assert_string_equal(content_at(e, 0), "valid-1");
	assert_string_equal(content_at(e, 1), "valid-2");
	cJSON_Delete(root);
	space_store_free(st);
}

static void test_torn_tail_does_not_swallow_next(void **state)
{
	write_file("chat.jsonl", "{\"type\":\"chat\",\"content\":\"a\"}\n{\"type\":\"chat\",\"con");
	struct space_store *st = space_store_open(dir, 0, 0, NULL);
	append(st, "after-crash");
	space_store_free(st);
	st = space_store_open(dir, 0, 0, NULL);
	cJSON *root;
	const cJSON *e = history(st, 10, &root);
	assert_int_equal(cJSON_GetArraySize(e), 2);
	assert_string_equal(content_at(e, 0), "a");
	assert_string_equal(content_at(e, 1), "after-crash");
	cJSON_Delete(root);
	space_store_free(st);
}

static void test_rotation_keeps_five(void **state)
{
	/* Each line is ~120 bytes; rotate past 300 bytes: every 3rd append. */
	struct space_store *st = space_store_open(dir, 300, 0, NULL);
	char buf[32];
	for (int i = 0; i < 30; i++) {
		snprintf(buf, sizeof buf, "r-%02d", i);
		append(st, buf);
	}
	space_store_free(st);
	char path[160];
	for (int n = 1; n <= 5; n++) {
		snprintf(path, sizeof path, "%s/chat.%d.jsonl", dir, n);
		assert_int_equal(access(path, F_OK), 0);
	}
	snprintf(path, sizeof path, "%s/chat.6.jsonl", dir);
	assert_int_not_equal(access(path, F_OK), 0);
	/* Replay after restart reads chat.jsonl then chat.1.jsonl only. */
	st = space_store_open(dir, 300, 0, NULL);
	cJSON *root;
	const cJSON *e = history(st, 1000, &root);
	int n = cJSON_GetArraySize(e);
	assert_true(n >= 3 && n <= 6);
	assert_string_equal(content_at(e, n - 1), "r-29");
	cJSON_Delete(root);
	space_store_free(st);
}

static void test_history_byte_budget(void **state)
{
	/* 64 KiB budget, 10 KiB entries: never more than the budget. */
	struct space_store *st = space_store_open(dir, 0, 64 * 1024, NULL);
	char *big = malloc(10 * 1024 + 1);
	memset(big, 'x', 10 * 1024);
	big[10 * 1024] = '\0';
	for (int i = 0; i < 20; i++)
		append(st, big);
	free(big);
	struct space_buf *b = space_store_history(st, 1000);
	assert_true(b->len <= 64 * 1024 + 64);
	assert_true(space_store_history_count(st) >= 5);
	space_buf_unref(b);
	space_store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_creates_dir_and_appends_jsonl, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_empty_and_missing, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_nul_round_trip, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_last_n_and_reload, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_utf8_chunk_boundaries, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bad_lines_skipped_not_counted, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_torn_tail_does_not_swallow_next, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_rotation_keeps_five, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_history_byte_budget, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
