/*
 * The intent → done journal (modules/journal): states and their refusals,
 * replay after a restart (pending intents with their payload, torn and
 * invalid lines, a settlement alone), field bounds, the key bound and which
 * key is forgotten, compaction (manual and automatic, the doubling rule) and
 * a failed write that leaves nothing behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/xalloc.h"
#include "modules/journal/journal.h"
#include "testutil.h"

struct fx {
	char *dir;
	struct journal *j;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	f->dir = tu_tempdir();
	assert_non_null(f->dir);
	struct ga_err e = {{0}};
	f->j = journal_open(f->dir, &e);
	assert_non_null(f->j);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	journal_close(f->j);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void reopen(struct fx *f)
{
	journal_close(f->j);
	struct ga_err e = {{0}};
	f->j = journal_open(f->dir, &e);
	assert_non_null(f->j);
}

static int intent(struct fx *f, const char *key, int64_t ms)
{
	struct ga_err e = {{0}};
	return journal_intent(f->j, key, "github", "github:acme:widgets:new-issue", NULL, ms, &e);
}

static int lines_of(struct fx *f)
{
	char *s = tu_read(f->dir, JOURNAL_FILE);
	assert_non_null(s);
	int n = 0;
	for (char *p = s; *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

/* ---- states ------------------------------------------------------------------- */

static void test_intent_done_failed(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	assert_int_equal(journal_state_of(f->j, "k1"), JOURNAL_NONE);
	assert_int_equal(intent(f, "k1", 1000), 0);
	assert_int_equal(journal_state_of(f->j, "k1"), JOURNAL_INTENT);
	assert_null(journal_artifact(f->j, "k1"));
	assert_int_equal(
	        journal_done(f->j, "k1", "https://github.com/acme/widgets/issues/7", 1001, &e), 0);
	assert_int_equal(journal_state_of(f->j, "k1"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, "k1"),
	                    "https://github.com/acme/widgets/issues/7");

	assert_int_equal(intent(f, "k2", 1002), 0);
	assert_int_equal(journal_failed(f->j, "k2", "HTTP 502", 1003, &e), 0);
	assert_int_equal(journal_state_of(f->j, "k2"), JOURNAL_FAILED);
	assert_string_equal(journal_error(f->j, "k2"), "HTTP 502");
	assert_null(journal_artifact(f->j, "k2"));
	assert_null(journal_error(f->j, "k1"));
	assert_int_equal(journal_count(f->j), 2);
	assert_int_equal(lines_of(f), 4);

	/* the records as the header documents them */
	char *s = tu_read(f->dir, JOURNAL_FILE);
	assert_non_null(strstr(s,
	                       "{\"op\":\"intent\",\"key\":\"k1\",\"platform\":\"github\","
	                       "\"target\":\"github:acme:widgets:new-issue\",\"time\":\"1970-01-01T"
	                       "00:00:01.000Z\",\"ms\":1000}\n"));
	assert_non_null(strstr(s, "{\"op\":\"done\",\"key\":\"k1\",\"artifact\":"));
	assert_non_null(strstr(s, "{\"op\":\"failed\",\"key\":\"k2\",\"error\":\"HTTP 502\""));
	free(s);

	assert_string_equal(journal_state_name(JOURNAL_NONE), "none");
	assert_string_equal(journal_state_name(JOURNAL_INTENT), "intent");
	assert_string_equal(journal_state_name(JOURNAL_DONE), "done");
	assert_string_equal(journal_state_name(JOURNAL_FAILED), "failed");
}

static void test_refusals(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	assert_int_equal(intent(f, "k", 1), 0);
	/* pending: not again */
	assert_int_equal(intent(f, "k", 2), -1);
	assert_int_equal(journal_intent(f->j, "k", "github", "t", NULL, 2, &e), -1);
	assert_non_null(strstr(e.msg, "pending intent"));
	assert_int_equal(journal_done(f->j, "k", "a1", 3, &e), 0);
	/* done: never again */
	assert_int_equal(journal_intent(f->j, "k", "github", "t", NULL, 4, &e), -1);
	assert_non_null(strstr(e.msg, "already done"));
	assert_int_equal(journal_state_of(f->j, "k"), JOURNAL_DONE);
	/* done again with the same artifact: a no-op, nothing written */
	size_t bytes = journal_file_bytes(f->j);
	assert_int_equal(journal_done(f->j, "k", "a1", 5, &e), 0);
	assert_int_equal(journal_file_bytes(f->j), bytes);
	/* with another artifact, or failed: refused */
	assert_int_equal(journal_done(f->j, "k", "a2", 5, &e), -1);
	assert_non_null(strstr(e.msg, "a1"));
	assert_int_equal(journal_done(f->j, "k", NULL, 5, &e), -1);
	assert_int_equal(journal_failed(f->j, "k", "x", 5, &e), -1);
	assert_string_equal(journal_artifact(f->j, "k"), "a1");
	/* settling what was never intended */
	assert_int_equal(journal_done(f->j, "never", NULL, 6, &e), -1);
	assert_non_null(strstr(e.msg, "no pending intent"));
	assert_int_equal(journal_failed(f->j, "never", "x", 6, &e), -1);
	assert_int_equal(journal_state_of(f->j, "never"), JOURNAL_NONE);
	/* done with no artifact twice: the second is the no-op */
	assert_int_equal(intent(f, "n", 7), 0);
	assert_int_equal(journal_done(f->j, "n", NULL, 8, &e), 0);
	assert_int_equal(journal_done(f->j, "n", NULL, 9, &e), 0);
	assert_int_equal(journal_done(f->j, "n", "late", 9, &e), -1);
	/* a failed key may be intended again (a retry), then settles normally */
	assert_int_equal(intent(f, "r", 10), 0);
	assert_int_equal(journal_failed(f->j, "r", "timeout", 11, &e), 0);
	assert_int_equal(journal_failed(f->j, "r", "again", 12, &e), -1);
	assert_int_equal(intent(f, "r", 13), 0);
	assert_int_equal(journal_state_of(f->j, "r"), JOURNAL_INTENT);
	assert_null(journal_error(f->j, "r"));
	assert_int_equal(journal_done(f->j, "r", "ok", 14, &e), 0);
	reopen(f);
	assert_int_equal(journal_state_of(f->j, "k"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, "k"), "a1");
	assert_int_equal(journal_state_of(f->j, "n"), JOURNAL_DONE);
	assert_null(journal_artifact(f->j, "n"));
	assert_int_equal(journal_state_of(f->j, "r"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, "r"), "ok");
	assert_int_equal(journal_count(f->j), 3);
}

static void test_key_and_field_bounds(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	size_t bytes = journal_file_bytes(f->j);
	const char *bad[] = {"", "has space", "tab\tkey", "del\x7f", "caf\xc3\xa9"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		e.msg[0] = '\0';
		assert_int_equal(journal_intent(f->j, bad[i], "github", "t", NULL, 1, &e), -1);
		assert_true(e.msg[0] != '\0');
	}
	assert_int_equal(journal_intent(f->j, NULL, "github", "t", NULL, 1, &e), -1);
	char key[JOURNAL_KEY_MAX + 2];
	memset(key, 'k', JOURNAL_KEY_MAX + 1);
	key[JOURNAL_KEY_MAX + 1] = '\0';
	assert_int_equal(journal_intent(f->j, key, "github", "t", NULL, 1, &e), -1);
	assert_non_null(strstr(e.msg, "printable ASCII"));
	key[JOURNAL_KEY_MAX] = '\0'; /* exactly the limit */
	assert_int_equal(journal_intent(f->j, key, "github", "t", NULL, 1, &e), 0);
	assert_int_equal(journal_state_of(f->j, key), JOURNAL_INTENT);

	/* platform and target */
	char *big = xmalloc(JOURNAL_FIELD_MAX + 2);
	memset(big, 'x', JOURNAL_FIELD_MAX + 1);
	big[JOURNAL_FIELD_MAX + 1] = '\0';
	assert_int_equal(journal_intent(f->j, "a", "github", big, NULL, 1, &e), -1);
	assert_non_null(strstr(e.msg, "target"));
	assert_int_equal(journal_intent(f->j, "a", big, "t", NULL, 1, &e), -1);
	assert_non_null(strstr(e.msg, "platform"));
	assert_int_equal(journal_intent(f->j, "a", "github", "bad\xff", NULL, 1, &e), -1);
	assert_non_null(strstr(e.msg, "UTF-8"));
	assert_int_equal(journal_intent(f->j, "a", NULL, "t", NULL, 1, &e), -1);
	assert_int_equal(journal_intent(f->j, "a", "", "t", NULL, 1, &e), -1);
	assert_int_equal(journal_intent(f->j, "a", "github", NULL, NULL, 1, &e), -1);

	/* payload */
	cJSON *p = cJSON_CreateObject();
	char *text = xmalloc(JOURNAL_PAYLOAD_MAX + 1);
	memset(text, 'p', JOURNAL_PAYLOAD_MAX);
	text[JOURNAL_PAYLOAD_MAX] = '\0';
	cJSON_AddStringToObject(p, "text", text);
	assert_int_equal(journal_intent(f->j, "a", "github", "t", p, 1, &e), -1);
	assert_non_null(strstr(e.msg, "payload"));
	cJSON_Delete(p);
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "text", "bad \xc3\x28 utf-8");
	assert_int_equal(journal_intent(f->j, "a", "github", "t", p, 1, &e), -1);
	assert_non_null(strstr(e.msg, "UTF-8"));
	cJSON_Delete(p);
	free(text);
	assert_int_equal(journal_state_of(f->j, "a"), JOURNAL_NONE);

	/* artifact over the limit: refused, the intent stays pending */
	assert_int_equal(intent(f, "b", 2), 0);
	assert_int_equal(journal_done(f->j, "b", big, 3, &e), -1);
	assert_non_null(strstr(e.msg, "artifact"));
	assert_int_equal(journal_state_of(f->j, "b"), JOURNAL_INTENT);
	/* an error over the limit is cut (between characters), bad bytes become '?' */
	memcpy(big + JOURNAL_FIELD_MAX - 1, "\xc3\xa9", 3); /* é straddles the limit */
	big[5] = '\xff';
	assert_int_equal(journal_failed(f->j, "b", big, 3, &e), 0);
	const char *err = journal_error(f->j, "b");
	assert_int_equal(strlen(err), JOURNAL_FIELD_MAX - 1);
	assert_int_equal(err[5], '?');
	reopen(f);
	assert_int_equal(journal_state_of(f->j, "b"), JOURNAL_FAILED);
	assert_int_equal(strlen(journal_error(f->j, "b")), JOURNAL_FIELD_MAX - 1);
	free(big);
	/* only the two good intents and one failure were written */
	assert_int_equal(lines_of(f), 3);
	assert_true(journal_file_bytes(f->j) > bytes);
}

/* ---- replay ----------------------------------------------------------------------- */

struct seen {
	int n;
	char keys[16][32];
	char platform[16][16];
	char target[16][64];
	char payload[16][128];
	int64_t ms[16];
	struct journal *settle; /* when set: settle each one as it is seen */
};

static void collect(void *ud, const char *key, const char *platform, const char *target,
                    const cJSON *payload, int64_t intent_ms)
{
	struct seen *s = ud;
	assert_true(s->n < 16);
	snprintf(s->keys[s->n], 32, "%s", key);
	snprintf(s->platform[s->n], 16, "%s", platform);
	snprintf(s->target[s->n], 64, "%s", target);
	if (payload) {
		char *p = cJSON_PrintUnformatted(payload);
		snprintf(s->payload[s->n], 128, "%s", p);
		free(p);
	} else {
		s->payload[s->n][0] = '\0';
	}
	s->ms[s->n] = intent_ms;
	s->n++;
	if (s->settle) {
		struct ga_err e = {{0}};
		assert_int_equal(journal_done(s->settle, key, "found", intent_ms + 1, &e), 0);
	}
}

static void test_pending_replayed_in_order(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	cJSON *p = cJSON_Parse("{\"source\":\"commitment\",\"chain\":2,\"text\":\"line\\none\"}");
	assert_int_equal(journal_intent(f->j, "late", "bluesky", "bluesky:post", p, 300, &e), 0);
	assert_int_equal(intent(f, "early", 100), 0);
	assert_int_equal(intent(f, "tie-a", 200), 0);
	assert_int_equal(intent(f, "settled", 150), 0);
	assert_int_equal(intent(f, "tie-b", 200), 0);
	assert_int_equal(journal_done(f->j, "settled", NULL, 151, &e), 0);
	reopen(f); /* a crash: the intents without done/failed survive */
	struct seen s = {0};
	assert_int_equal(journal_pending(f->j, collect, &s), 4);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.keys[0], "early");
	assert_string_equal(s.keys[1], "tie-a");
	assert_string_equal(s.keys[2], "tie-b");
	assert_string_equal(s.keys[3], "late");
	assert_int_equal(s.ms[3], 300);
	assert_string_equal(s.platform[3], "bluesky");
	assert_string_equal(s.target[3], "bluesky:post");
	char *want = cJSON_PrintUnformatted(p);
	assert_string_equal(s.payload[3], want);
	free(want);
	cJSON_Delete(p);
	assert_string_equal(s.payload[0], "");
	assert_string_equal(s.target[0], "github:acme:widgets:new-issue");
	assert_int_equal(journal_state_of(f->j, "settled"), JOURNAL_DONE);
	/* no callback: just the count */
	assert_int_equal(journal_pending(f->j, NULL, NULL), 4);

	/* settling from inside the walk (a reconcile that answers at once) */
	struct seen s2 = {.settle = f->j};
	assert_int_equal(journal_pending(f->j, collect, &s2), 4);
	assert_int_equal(journal_pending(f->j, NULL, NULL), 0);
	assert_int_equal(journal_state_of(f->j, "tie-b"), JOURNAL_DONE);
	reopen(f);
	assert_int_equal(journal_pending(f->j, NULL, NULL), 0);
	assert_string_equal(journal_artifact(f->j, "late"), "found");
}

static void test_torn_and_invalid_lines(void **state)
{
	struct fx *f = *state;
	journal_close(f->j);
	f->j = NULL;
	tu_write(f->dir, JOURNAL_FILE,
	         "{\"op\":\"intent\",\"key\":\"a\",\"platform\":\"space\",\"target\":\"space:r\","
	         "\"time\":\"2026-11-22T10:00:00.000Z\",\"ms\":5}\n"
	         "not json at all\n"
	         "{\"op\":\"intent\",\"key\":\"has space\",\"platform\":\"x\",\"target\":\"y\"}\n"
	         "{\"op\":\"launch\",\"key\":\"b\"}\n"
	         "{\"op\":\"intent\",\"key\":\"c\",\"platform\":7,\"target\":\"y\"}\n"
	         "{\"op\":\"failed\",\"key\":\"d\"}\n"
	         "[1,2,3]\n"
	         "\n"
	         "{\"op\":\"intent\",\"key\":\"e\",\"platform\":\"space\",\"target\":\"space:r\","
	         "\"time\":\"2026-11-22T10:00:00.000Z\"}\n"
	         "{\"op\":\"done\",\"key\":\"z\",\"artifact\":\"at://x\",\"ms\":9}\n"
	         "{\"op\":\"intent\",\"key\":\"torn\",\"platf");
	struct ga_err e = {{0}};
	f->j = journal_open(f->dir, &e);
	assert_non_null(f->j);
	assert_int_equal(journal_state_of(f->j, "a"), JOURNAL_INTENT);
	assert_int_equal(journal_state_of(f->j, "has space"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "b"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "c"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "d"), JOURNAL_NONE); /* failed needs an error */
	assert_int_equal(journal_state_of(f->j, "torn"), JOURNAL_NONE);
	/* a settlement alone (what compaction writes) is a settled key */
	assert_int_equal(journal_state_of(f->j, "z"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, "z"), "at://x");
	/* without "ms", the time is read from "time" */
	struct seen s = {0};
	assert_int_equal(journal_pending(f->j, collect, &s), 2);
	assert_string_equal(s.keys[0], "a");
	assert_string_equal(s.keys[1], "e");
	assert_int_equal(s.ms[1], 1795341600000LL);
	assert_int_equal(journal_count(f->j), 3);

	/* the next record starts on its own line, so it survives a replay */
	assert_int_equal(intent(f, "after", 10), 0);
	char *text = tu_read(f->dir, JOURNAL_FILE);
	assert_non_null(strstr(text, "\"platf\n{\"op\":\"intent\",\"key\":\"after\""));
	free(text);
	reopen(f);
	assert_int_equal(journal_state_of(f->j, "after"), JOURNAL_INTENT);
	assert_int_equal(journal_state_of(f->j, "torn"), JOURNAL_NONE);
	assert_int_equal(journal_pending(f->j, NULL, NULL), 3);
}

static void test_open_errors(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	assert_null(journal_open("", &e));
	assert_non_null(strstr(e.msg, "memory directory"));
	/* the journal's name taken by a directory */
	char *sub = xasprintf("%s/sub", f->dir);
	char *jdir = xasprintf("%s/sub/%s", f->dir, JOURNAL_FILE);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(mkdir(jdir, 0700), 0);
	e.msg[0] = '\0';
	assert_null(journal_open(sub, &e));
	assert_non_null(strstr(e.msg, "not a regular file"));
	/* the memory directory cannot be created: a file is in the way */
	char *file = xasprintf("%s/plain", f->dir);
	tu_write(f->dir, "plain", "x");
	char *under = xasprintf("%s/inside", file);
	assert_null(journal_open(under, &e));
	free(sub);
	free(jdir);
	free(file);
	free(under);
	/* a new directory is created, and the file only at the first record */
	char *fresh = xasprintf("%s/a/b", f->dir);
	struct journal *j = journal_open(fresh, &e);
	assert_non_null(j);
	char *path = xasprintf("%s/%s", fresh, JOURNAL_FILE);
	struct stat st;
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(journal_intent(j, "k", "space", "space:r", NULL, 1, &e), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(journal_file_bytes(j), (size_t)st.st_size);
	journal_close(j);
	journal_close(NULL);
	free(path);
	free(fresh);
}

/* ---- bounds and compaction ------------------------------------------------------------- */

static void test_key_bound_forgets_oldest_settled(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	char key[32];
	for (int i = 0; i < JOURNAL_MAX_KEYS; i++) {
		snprintf(key, sizeof key, "p%d", i);
		assert_int_equal(intent(f, key, i), 0);
	}
	assert_int_equal(journal_count(f->j), JOURNAL_MAX_KEYS);
	/* every key a pending intent: a new one is refused, nothing written */
	size_t bytes = journal_file_bytes(f->j);
	assert_int_equal(journal_intent(f->j, "new", "github", "t", NULL, 1, &e), -1);
	assert_non_null(strstr(e.msg, "pending"));
	assert_int_equal(journal_file_bytes(f->j), bytes);
	/* settle two (p7 first, then p3): a new key forgets p7, the oldest settled */
	assert_int_equal(journal_done(f->j, "p7", "a7", 10000, &e), 0);
	assert_int_equal(journal_failed(f->j, "p3", "no", 10001, &e), 0);
	assert_int_equal(intent(f, "new", 10002), 0);
	assert_int_equal(journal_state_of(f->j, "p7"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "p3"), JOURNAL_FAILED);
	assert_int_equal(journal_count(f->j), JOURNAL_MAX_KEYS);
	assert_int_equal(intent(f, "new2", 10003), 0);
	assert_int_equal(journal_state_of(f->j, "p3"), JOURNAL_NONE);
	assert_int_equal(journal_intent(f->j, "new3", "github", "t", NULL, 1, &e), -1);
	/* a replay makes the same choices */
	reopen(f);
	assert_int_equal(journal_count(f->j), JOURNAL_MAX_KEYS);
	assert_int_equal(journal_state_of(f->j, "p7"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "p3"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "new2"), JOURNAL_INTENT);
	assert_int_equal(journal_pending(f->j, NULL, NULL), JOURNAL_MAX_KEYS);
}

static void test_compact_keeps_pending_and_newest_settled(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	char key[32];
	int settled = JOURNAL_KEEP_SETTLED + 100;
	for (int i = 0; i < settled; i++) {
		snprintf(key, sizeof key, "s%d", i);
		assert_int_equal(intent(f, key, i), 0);
		assert_int_equal(journal_done(f->j, key, key, i, &e), 0);
		if (i % 100 == 0) {
			snprintf(key, sizeof key, "p%d", i);
			assert_int_equal(intent(f, key, i), 0);
		}
	}
	size_t pending = journal_pending(f->j, NULL, NULL);
	assert_int_equal(pending, 12);
	size_t before = journal_file_bytes(f->j);
	assert_int_equal(journal_compact(f->j, &e), 0);
	assert_true(journal_file_bytes(f->j) < before);
	assert_int_equal(journal_count(f->j), JOURNAL_KEEP_SETTLED + pending);
	/* the oldest settled are gone, the newest stay, every pending stays */
	assert_int_equal(journal_state_of(f->j, "s0"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "s99"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "s100"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, "s100"), "s100"); /* read back */
	assert_int_equal(journal_state_of(f->j, "p0"), JOURNAL_INTENT);
	assert_int_equal(lines_of(f), (int)(JOURNAL_KEEP_SETTLED + pending));
	struct stat st;
	char *path = xasprintf("%s/%s", f->dir, JOURNAL_FILE);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(journal_file_bytes(f->j), (size_t)st.st_size);
	/* writes go to the new file */
	assert_int_equal(intent(f, "after", 5000), 0);
	reopen(f);
	assert_int_equal(journal_count(f->j), JOURNAL_KEEP_SETTLED + pending + 1);
	assert_string_equal(journal_artifact(f->j, "s1123"), "s1123");
	assert_int_equal(journal_state_of(f->j, "s99"), JOURNAL_NONE);
	struct seen s = {0};
	assert_int_equal(journal_pending(f->j, collect, &s), pending + 1);
	assert_string_equal(s.keys[0], "p0");
	assert_int_equal(s.ms[0], 0);
	assert_string_equal(s.keys[pending], "after");
	free(path);
}

/* Bytes the allocator hands out (0 under a sanitizer, whose allocator
 * mallinfo2 does not see: the memory checks are then skipped). */
static size_t heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return 0;
#else
	return mallinfo2().uordblks;
#endif
}

static void settle_key(struct fx *f, int i, int64_t ms)
{
	struct ga_err e = {{0}};
	char key[32], text[48];
	snprintf(key, sizeof key, "k%d", i);
	assert_int_equal(intent(f, key, ms), 0);
	if (i % 3 == 2) {
		snprintf(text, sizeof text, "error of k%d", i);
		assert_int_equal(journal_failed(f->j, key, text, ms, &e), 0);
	} else {
		snprintf(text, sizeof text, "https://github.com/acme/widgets/issues/%d", i);
		assert_int_equal(journal_done(f->j, key, text, ms, &e), 0);
	}
}

static void test_old_settled_keys_held_compactly(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	int n = JOURNAL_RECENT_SETTLED + 60;
	for (int i = 0; i < n; i++)
		settle_key(f, i, i);
	assert_int_equal(journal_count(f->j), n);
	assert_int_equal(journal_whole_count(f->j), JOURNAL_RECENT_SETTLED);
	/* an old key reads as before: its state, its artifact or error from the file */
	assert_int_equal(journal_state_of(f->j, "k0"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, "k0"),
	                    "https://github.com/acme/widgets/issues/0");
	assert_null(journal_error(f->j, "k0"));
	assert_int_equal(journal_state_of(f->j, "k2"), JOURNAL_FAILED);
	assert_string_equal(journal_error(f->j, "k2"), "error of k2");
	assert_null(journal_artifact(f->j, "k2"));
	assert_int_equal(journal_state_of(f->j, "never"), JOURNAL_NONE);
	/* exactly once: an old done key is refused, nothing written */
	size_t bytes = journal_file_bytes(f->j);
	assert_int_equal(intent(f, "k0", 9000), -1);
	assert_int_equal(journal_file_bytes(f->j), bytes);
	assert_int_equal(
	        journal_done(f->j, "k0", "https://github.com/acme/widgets/issues/0", 9000, &e), 0);
	assert_int_equal(journal_done(f->j, "k0", "https://elsewhere", 9000, &e), -1);
	assert_non_null(strstr(e.msg, "already done"));
	assert_int_equal(journal_failed(f->j, "k1", "x", 9000, &e), -1);
	assert_int_equal(journal_file_bytes(f->j), bytes);
	/* an old failed key may be tried again: whole again while pending */
	assert_int_equal(intent(f, "k5", 9001), 0);
	assert_int_equal(journal_state_of(f->j, "k5"), JOURNAL_INTENT);
	assert_int_equal(journal_count(f->j), n);
	assert_int_equal(journal_whole_count(f->j), JOURNAL_RECENT_SETTLED + 1);
	assert_int_equal(journal_done(f->j, "k5", "retried", 9002, &e), 0);
	assert_string_equal(journal_artifact(f->j, "k5"), "retried");
	/* a replay holds the same keys the same way */
	reopen(f);
	assert_int_equal(journal_count(f->j), n);
	assert_int_equal(journal_whole_count(f->j), JOURNAL_RECENT_SETTLED);
	assert_int_equal(journal_state_of(f->j, "k5"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, "k5"), "retried");
	assert_string_equal(journal_error(f->j, "k8"), "error of k8");
	assert_int_equal(intent(f, "k3", 9003), -1);
}

static void test_old_settled_keys_bounded_without_heap_growth(void **state)
{
	struct fx *f = *state;
	int i = 0;
	for (; i < JOURNAL_RECENT_SETTLED + 50; i++)
		settle_key(f, i, i);
	size_t before = heap_in_use();
	for (; i < JOURNAL_MAX_KEYS + 10; i++)
		settle_key(f, i, i);
	size_t after = heap_in_use();
	/* held whole, these ~4,000 keys took ~250 bytes each (1 MB); held in
	 * the table preallocated at open, nothing */
	if (before)
		assert_true(after < before + 16 * 1024);
	assert_int_equal(journal_count(f->j), JOURNAL_MAX_KEYS);
	assert_int_equal(journal_whole_count(f->j), JOURNAL_RECENT_SETTLED);
	/* the oldest settled keys are the ones forgotten */
	for (int k = 0; k < 10; k++) {
		char key[32];
		snprintf(key, sizeof key, "k%d", k);
		assert_int_equal(journal_state_of(f->j, key), JOURNAL_NONE);
	}
	assert_int_equal(journal_state_of(f->j, "k10"), JOURNAL_DONE);
	assert_string_equal(journal_artifact(f->j, "k10"),
	                    "https://github.com/acme/widgets/issues/10");
	reopen(f);
	assert_int_equal(journal_count(f->j), JOURNAL_MAX_KEYS);
	assert_int_equal(journal_state_of(f->j, "k9"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "k11"), JOURNAL_FAILED);
}

static ino_t inode_of(struct fx *f)
{
	char *path = xasprintf("%s/%s", f->dir, JOURNAL_FILE);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	free(path);
	return st.st_ino;
}

static void test_automatic_compaction(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	char *text = xmalloc(60001);
	memset(text, 'w', 60000);
	text[60000] = '\0';
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "text", text);
	free(text);
	char key[32];
	/* all pending: compaction at the limit keeps them all, and the
	 * doubling rule keeps it from rewriting on every later record */
	assert_int_equal(intent(f, "first", 0), 0);
	ino_t ino = inode_of(f);
	int i = 0;
	while (journal_file_bytes(f->j) <= JOURNAL_MAX_BYTES) {
		snprintf(key, sizeof key, "big%d", i++);
		assert_int_equal(journal_intent(f->j, key, "bluesky", "bluesky:post", p, i, &e), 0);
	}
	ino_t after = inode_of(f);
	assert_true(after != ino);
	size_t compacted = journal_file_bytes(f->j);
	assert_true(compacted > JOURNAL_MAX_BYTES);
	snprintf(key, sizeof key, "big%d", i++);
	assert_int_equal(journal_intent(f->j, key, "bluesky", "bluesky:post", p, i, &e), 0);
	assert_int_equal(inode_of(f), after);
	assert_true(journal_file_bytes(f->j) > compacted);
	/* settle them all; once the file has doubled, compaction drops the
	 * payloads (settled keys are one short line each) */
	int n = i;
	for (int k = 0; k < n; k++) {
		snprintf(key, sizeof key, "big%d", k);
		assert_int_equal(journal_done(f->j, key, NULL, 100000 + k, &e), 0);
	}
	while (journal_file_bytes(f->j) < 2 * compacted) {
		snprintf(key, sizeof key, "big%d", i++);
		assert_int_equal(journal_intent(f->j, key, "bluesky", "bluesky:post", p, i, &e), 0);
		assert_int_equal(journal_done(f->j, key, NULL, 100000 + i, &e), 0);
		if (inode_of(f) != after)
			break;
	}
	assert_true(inode_of(f) != after);
	assert_true(journal_file_bytes(f->j) < JOURNAL_MAX_BYTES);
	assert_int_equal(journal_state_of(f->j, "first"), JOURNAL_INTENT);
	cJSON_Delete(p);
	reopen(f);
	assert_int_equal(journal_state_of(f->j, "first"), JOURNAL_INTENT);
	assert_int_equal(journal_state_of(f->j, "big0"), JOURNAL_DONE);
	assert_int_equal(journal_pending(f->j, NULL, NULL), 1);
}

/* A write that fails leaves nothing in memory, and the next record is not
 * glued to whatever part of it reached the file. RLIMIT_FSIZE makes write(2)
 * fail with EFBIG, even for root. */
static void test_failed_write(void **state)
{
	struct fx *f = *state;
	struct ga_err e = {{0}};
	assert_int_equal(intent(f, "before", 1), 0);
	size_t bytes = journal_file_bytes(f->j);
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = bytes + 20; /* room for part of the next record */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int rc = intent(f, "lost", 2);
	int rc2 = journal_intent(f->j, "lost2", "github", "t", NULL, 3, &e);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, -1);
	assert_int_equal(rc2, -1);
	assert_non_null(strstr(e.msg, JOURNAL_FILE));
	assert_int_equal(journal_state_of(f->j, "lost"), JOURNAL_NONE);
	assert_int_equal(journal_state_of(f->j, "lost2"), JOURNAL_NONE);
	assert_int_equal(journal_done(f->j, "before", "ok", 4, &e), 0);
	assert_int_equal(intent(f, "next", 5), 0);
	reopen(f);
	assert_int_equal(journal_state_of(f->j, "before"), JOURNAL_DONE);
	assert_int_equal(journal_state_of(f->j, "next"), JOURNAL_INTENT);
	assert_int_equal(journal_state_of(f->j, "lost"), JOURNAL_NONE);
	assert_int_equal(journal_count(f->j), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_intent_done_failed, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_key_and_field_bounds, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pending_replayed_in_order, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_torn_and_invalid_lines, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_key_bound_forgets_oldest_settled, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_compact_keeps_pending_and_newest_settled,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_automatic_compaction, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_old_settled_keys_held_compactly, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_old_settled_keys_bounded_without_heap_growth,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_failed_write, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
