/* The conversation store: every bound (conversations LRU, messages, text,
 * answered set), duplicates, the derived chain, is_ours, JSON, save/load
 * (also across versions, with NUL bytes and invalid UTF-8, past the state
 * file's size), a corrupt file, and the saving rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "modules/conversation/store.h"
#include "testutil.h"

struct fx {
	char *dir;
	struct state_store st;
	struct conv_store *s;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	f->dir = tu_tempdir();
	assert_int_equal(state_store_init(&f->st, f->dir, "1.0.0", NULL), 0);
	f->s = conv_store_new();
	log_set_level(LOG_LEVEL_OFF);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	conv_store_free(f->s);
	state_store_free(&f->st);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* Adds a message; kind 'h' human, 'o' owner, 's' self, 'p' peer. */
static int add_full(struct conv_store *s, const char *conv, const char *id, char kind,
                    const char *parent, const char *text, size_t text_len, int64_t t)
{
	enum conv_author_kind k = kind == 'h'   ? CONV_AUTHOR_HUMAN
	                          : kind == 'o' ? CONV_AUTHOR_OWNER
	                          : kind == 's' ? CONV_AUTHOR_SELF
	                                        : CONV_AUTHOR_PEER;
	char author[64];
	snprintf(author, sizeof author, "author-%c", kind);
	struct conv_event_src src = {
	        .platform = CONV_PLATFORM_SPACE,
	        .conversation = conv,
	        .message_id = id,
	        .parent_id = parent,
	        .author_id = author,
	        .author_name = author,
	        .author_kind = k,
	        .is_bot = kind == 's' || kind == 'p',
	        .chain = kind == 'p' ? 2 : 0,
	        .text = text,
	        .text_len = text ? (text_len ? text_len : strlen(text)) : 0,
	        .time_ms = t,
	};
	struct conv_event ev;
	conv_event_init(&ev, &src);
	int rc = conv_store_add(s, &ev);
	conv_event_free(&ev);
	return rc;
}

static int add(struct conv_store *s, const char *conv, const char *id, char kind)
{
	return add_full(s, conv, id, kind, NULL, id, 0, 1000);
}

static void test_lru_conversations(void **state)
{
	struct fx *f = *state;
	char key[32], id[32];
	for (int i = 0; i < CONV_STORE_MAX_CONVERSATIONS; i++) {
		snprintf(key, sizeof key, "space:c%d", i);
		snprintf(id, sizeof id, "m%d", i);
		assert_int_equal(add_full(f->s, key, id, 'h', NULL, "x", 0, i), 1);
	}
	assert_int_equal(conv_store_count(f->s), CONV_STORE_MAX_CONVERSATIONS);
	size_t n;
	int64_t last;
	assert_string_equal(conv_store_key_at(f->s, 0, &n, &last), "space:c255");
	assert_int_equal(n, 1);
	assert_int_equal(last, 255);
	assert_string_equal(conv_store_key_at(f->s, CONV_STORE_MAX_CONVERSATIONS - 1, NULL, NULL),
	                    "space:c0");
	assert_null(conv_store_key_at(f->s, CONV_STORE_MAX_CONVERSATIONS, NULL, NULL));

	/* a duplicate changes nothing, not even the order */
	assert_int_equal(add(f->s, "space:c0", "m0", 'h'), 0);
	assert_string_equal(conv_store_key_at(f->s, 0, NULL, NULL), "space:c255");
	/* a new message makes c0 the most recent, so c1 is the one dropped */
	assert_int_equal(add_full(f->s, "space:c0", "m0b", 'h', NULL, "y", 0, 999), 1);
	assert_string_equal(conv_store_key_at(f->s, 0, &n, &last), "space:c0");
	assert_int_equal(n, 2);
	assert_int_equal(last, 999);
	assert_int_equal(add(f->s, "space:new", "m", 'h'), 1);
	assert_int_equal(conv_store_count(f->s), CONV_STORE_MAX_CONVERSATIONS);
	assert_string_equal(conv_store_key_at(f->s, 0, NULL, NULL), "space:new");
	assert_int_equal(conv_store_message_count(f->s, "space:c1"), 0);
	assert_null(conv_store_find(f->s, "space:c1", "m1"));
	assert_non_null(conv_store_find(f->s, "space:c0", "m0"));
	assert_non_null(conv_store_find(f->s, "space:c2", "m2"));
	assert_string_equal(conv_store_key_at(f->s, CONV_STORE_MAX_CONVERSATIONS - 1, NULL, NULL),
	                    "space:c2");
}

static void test_message_bound_and_duplicates(void **state)
{
	struct fx *f = *state;
	char id[32];
	for (int i = 0; i < CONV_STORE_MAX_MESSAGES + 5; i++) {
		snprintf(id, sizeof id, "m%d", i);
		assert_int_equal(add_full(f->s, "space:room", id, 'h', NULL, id, 0, i), 1);
	}
	assert_int_equal(conv_store_message_count(f->s, "space:room"), CONV_STORE_MAX_MESSAGES);
	assert_string_equal(conv_store_message_at(f->s, "space:room", 0)->message_id, "m5");
	assert_string_equal(
	        conv_store_message_at(f->s, "space:room", CONV_STORE_MAX_MESSAGES - 1)->message_id,
	        "m104");
	assert_null(conv_store_message_at(f->s, "space:room", CONV_STORE_MAX_MESSAGES));
	assert_null(conv_store_message_at(f->s, "space:nope", 0));
	/* the same id again: not added, wherever it sits in the history */
	assert_int_equal(add(f->s, "space:room", "m5", 'p'), 0);
	assert_int_equal(add(f->s, "space:room", "m104", 'p'), 0);
	assert_int_equal(conv_store_find(f->s, "space:room", "m5")->author_kind, CONV_AUTHOR_HUMAN);
	/* the same id in another conversation is another message */
	assert_int_equal(add(f->s, "space:other", "m5", 'p'), 1);
	/* an empty id is never a duplicate and never found */
	assert_int_equal(add(f->s, "space:other", "", 'h'), 1);
	assert_int_equal(add(f->s, "space:other", "", 'h'), 1);
	assert_int_equal(conv_store_message_count(f->s, "space:other"), 3);
	assert_null(conv_store_find(f->s, "space:other", ""));
	/* an evicted id is forgotten by the history */
	assert_int_equal(add(f->s, "space:room", "m0", 'h'), 1);
}

static void test_message_fields_and_text_bound(void **state)
{
	struct fx *f = *state;
	size_t len = CONV_STORE_MAX_TEXT_BYTES + 100;
	char *t = malloc(len);
	memset(t, 'a', len);
	memcpy(t + CONV_STORE_MAX_TEXT_BYTES - 2, "\xF0\x9F\x98\x80", 4); /* 😀 straddles */
	assert_int_equal(add_full(f->s, "space:room", "long", 'p', "parent-1", t, len, 77), 1);
	const struct conv_message *m = conv_store_find(f->s, "space:room", "long");
	assert_non_null(m);
	assert_int_equal(m->text_len, CONV_STORE_MAX_TEXT_BYTES - 2);
	assert_memory_equal(m->text, t, m->text_len);
	assert_int_equal(m->text[m->text_len], '\0');
	assert_string_equal(m->parent_id, "parent-1");
	assert_string_equal(m->author_id, "author-p");
	assert_int_equal(m->author_kind, CONV_AUTHOR_PEER);
	assert_true(m->is_bot);
	assert_int_equal(m->chain, 2);
	assert_int_equal(m->time_ms, 77);
	assert_false(m->answered);
	free(t);
	/* NUL bytes inside a text are kept */
	assert_int_equal(add_full(f->s, "space:room", "nul", 'h', NULL, "a\0b", 3, 1), 1);
	m = conv_store_find(f->s, "space:room", "nul");
	assert_int_equal(m->text_len, 3);
	assert_memory_equal(m->text, "a\0b", 4);
	assert_null(m->parent_id);
}

static void test_answered_set(void **state)
{
	struct fx *f = *state;
	add(f->s, "space:room", "a", 'h');
	assert_false(conv_store_answered(f->s, "a"));
	conv_store_mark_answered(f->s, "a");
	assert_true(conv_store_answered(f->s, "a"));
	assert_true(conv_store_find(f->s, "space:room", "a")->answered);
	/* marked before it is seen (a replay after a restart): flagged on add */
	conv_store_mark_answered(f->s, "later");
	add(f->s, "space:room", "later", 'h');
	assert_true(conv_store_find(f->s, "space:room", "later")->answered);
	conv_store_mark_answered(f->s, "");
	conv_store_mark_answered(f->s, NULL);
	assert_false(conv_store_answered(f->s, ""));
	assert_false(conv_store_answered(f->s, NULL));

	/* the bound: the oldest is forgotten; marking twice takes one place */
	char id[32];
	for (int i = 0; i < CONV_STORE_MAX_ANSWERED - 2; i++) {
		snprintf(id, sizeof id, "id%d", i);
		conv_store_mark_answered(f->s, id);
		conv_store_mark_answered(f->s, id);
	}
	assert_true(conv_store_answered(f->s, "a"));
	conv_store_mark_answered(f->s, "one-more");
	assert_false(conv_store_answered(f->s, "a"));
	assert_true(conv_store_answered(f->s, "later"));
	assert_true(conv_store_answered(f->s, "id0"));
	assert_true(conv_store_answered(f->s, "one-more"));
	/* the message's own flag stays */
	assert_true(conv_store_find(f->s, "space:room", "a")->answered);
}

/* kinds: a string of h/o/s/p, message ids "0", "1", ... */
static const struct {
	const char *kinds;
	const char *upto; /* NULL: the whole conversation */
	int64_t want;
} chains[] = {
        {"", NULL, 0},        {"h", NULL, 0},     {"p", NULL, 1},
        {"hp", NULL, 1},      {"hps", NULL, 2},   {"hpsp", NULL, 3},
        {"pspsp", NULL, 5}, /* no person at all: every agent message counts */
        {"hpsph", NULL, 0}, /* a person resets */
        {"hpsoh", NULL, 0}, /* the owner too */
        {"pphpp", NULL, 2}, /* only the run since the last person */
        {"hpspsh", "3", 3}, /* message_id in the middle */
        {"hpspsh", "1", 1},   {"hpspsh", "0", 0}, {"hpspsh", "5", 0},
        {"hpsps", "nope", 4}, /* unknown id: the whole conversation */
};

static void test_derived_chain(void **state)
{
	struct fx *f = *state;
	assert_int_equal(conv_store_derived_chain(f->s, "space:none", NULL), 0);
	assert_int_equal(conv_store_derived_chain(NULL, "space:none", NULL), 0);
	for (size_t c = 0; c < sizeof chains / sizeof chains[0]; c++) {
		char key[32];
		snprintf(key, sizeof key, "space:chain%zu", c);
		for (size_t i = 0; chains[c].kinds[i]; i++) {
			char id[8];
			snprintf(id, sizeof id, "%zu", i);
			add(f->s, key, id, chains[c].kinds[i]);
		}
		int64_t got = conv_store_derived_chain(f->s, key, chains[c].upto);
		if (got != chains[c].want)
			fail_msg("case %zu (%s up to %s): %lld, want %lld", c, chains[c].kinds,
			         chains[c].upto ? chains[c].upto : "end", (long long)got,
			         (long long)chains[c].want);
	}
}

/* A threaded conversation: the chain runs up the message's branch. */
static void test_derived_chain_branch(void **state)
{
	struct fx *f = *state;
	const char *k = "bluesky:at://root";
	/* root (a person) ← A (peer) ← B (self) ← C (peer): one branch;
	 * root ← X (peer): a sibling branch, added last */
	add_full(f->s, k, "root", 'h', NULL, "q", 0, 1);
	add_full(f->s, k, "A", 'p', "root", "a", 0, 2);
	add_full(f->s, k, "B", 's', "A", "b", 0, 3);
	add_full(f->s, k, "C", 'p', "B", "c", 0, 4);
	add_full(f->s, k, "X", 'p', "root", "x", 0, 5);
	assert_int_equal(conv_store_derived_chain(f->s, k, "X"), 1); /* not 4: siblings */
	assert_int_equal(conv_store_derived_chain(f->s, k, "C"), 3);
	assert_int_equal(conv_store_derived_chain(f->s, k, "B"), 2);
	/* a parent no longer in the history ends the row */
	add_full(f->s, k, "D", 'p', "gone", "d", 0, 6);
	assert_int_equal(conv_store_derived_chain(f->s, k, "D"), 1);
	/* an agent's root ends it too (it has no parent) */
	const char *k2 = "bluesky:at://root2";
	add_full(f->s, k2, "s0", 'p', NULL, "s", 0, 1);
	add_full(f->s, k2, "r0", 'p', NULL, "r", 0, 2);
	add_full(f->s, k2, "r1", 's', "r0", "r1", 0, 3);
	assert_int_equal(conv_store_derived_chain(f->s, k2, "r1"), 2); /* not s0 */
	/* links that loop stop after as many steps as messages */
	const char *k3 = "bluesky:at://loop";
	add_full(f->s, k3, "L1", 'p', "L2", "l1", 0, 1);
	add_full(f->s, k3, "L2", 'p', "L1", "l2", 0, 2);
	assert_int_equal(conv_store_derived_chain(f->s, k3, "L2"), 2);
}

static void test_is_ours(void **state)
{
	struct fx *f = *state;
	add(f->s, "space:room", "mine", 's');
	add(f->s, "space:room", "theirs", 'p');
	add(f->s, "space:room", "human", 'h');
	assert_true(conv_store_is_ours(f->s, "space:room", "mine"));
	assert_false(conv_store_is_ours(f->s, "space:room", "theirs"));
	assert_false(conv_store_is_ours(f->s, "space:room", "human"));
	assert_false(conv_store_is_ours(f->s, "space:room", "unknown"));
	assert_false(conv_store_is_ours(f->s, "space:other", "mine"));
	assert_false(conv_store_is_ours(f->s, "space:room", NULL));
}

static void test_json(void **state)
{
	struct fx *f = *state;
	add_full(f->s, "space:a", "m1", 'h', NULL, "hello", 0, 10);
	add_full(f->s, "space:a", "m2", 'p', "m1", "a\0b", 3, 20);
	add_full(f->s, "space:b", "m3", 's', NULL, "bad \xFF utf8", 0, 30);
	conv_store_mark_answered(f->s, "m1");
	cJSON *j = conv_store_to_json(f->s, NULL);
	char *s = cJSON_PrintUnformatted(j);
	assert_string_equal(
	        s,
	        "{\"format\":1,\"answered\":[\"m1\"],\"conversations\":["
	        "{\"key\":\"space:b\",\"lastMs\":30,\"messages\":[{\"id\":\"m3\",\"authorId\":"
	        "\"author-s\",\"authorName\":\"author-s\",\"authorKind\":\"self\",\"isBot\":true,"
	        "\"chain\":0,\"textHex\":\"62616420ff2075746638\",\"timeMs\":30,\"answered\":false}"
	        "]},"
	        "{\"key\":\"space:a\",\"lastMs\":20,\"messages\":[{\"id\":\"m1\",\"authorId\":"
	        "\"author-h\",\"authorName\":\"author-h\",\"authorKind\":\"human\",\"isBot\":false,"
	        "\"chain\":0,\"text\":\"hello\",\"timeMs\":10,\"answered\":true},{\"id\":\"m2\","
	        "\"parentId\":\"m1\",\"authorId\":\"author-p\",\"authorName\":\"author-p\","
	        "\"authorKind\":\"peer\",\"isBot\":true,\"chain\":2,\"textHex\":\"610062\","
	        "\"timeMs\":20,\"answered\":false}]}]}");
	free(s);
	cJSON_Delete(j);
	j = conv_store_to_json(f->s, "space:b");
	assert_string_equal(cJSON_GetObjectItem(j, "key")->valuestring, "space:b");
	cJSON_Delete(j);
	assert_null(conv_store_to_json(f->s, "space:none"));
	assert_null(conv_store_to_json(NULL, NULL));
}

static void test_save_load_round_trip(void **state)
{
	struct fx *f = *state;
	add_full(f->s, "space:a", "m1", 'h', NULL, "hello", 0, 10);
	add_full(f->s, "space:a", "m2", 'p', "m1", "a\0b", 3, 20);
	add_full(f->s, "space:b", "m3", 's', NULL, "bad \xFF utf8", 0, 30);
	add_full(f->s, "space:b", "m4\xFE", 'h', NULL, "", 0, 40); /* invalid UTF-8 in an id */
	conv_store_mark_answered(f->s, "m1");
	conv_store_mark_answered(f->s, "gone-from-history");
	struct ga_err err = {{0}};
	assert_int_equal(conv_store_save(f->s, &f->st, 1000, &err), 0);

	struct conv_store *b = conv_store_new();
	assert_int_equal(conv_store_load(b, &f->st, &err), 0);
	assert_int_equal(conv_store_count(b), 2);
	size_t n;
	int64_t last;
	assert_string_equal(conv_store_key_at(b, 0, &n, &last), "space:b");
	assert_int_equal(n, 2);
	assert_int_equal(last, 40);
	assert_string_equal(conv_store_key_at(b, 1, &n, &last), "space:a");
	assert_int_equal(last, 20);
	const struct conv_message *m = conv_store_message_at(b, "space:a", 1);
	assert_string_equal(m->message_id, "m2");
	assert_string_equal(m->parent_id, "m1");
	assert_int_equal(m->text_len, 3);
	assert_memory_equal(m->text, "a\0b", 4);
	assert_true(m->is_bot);
	assert_int_equal(m->chain, 2);
	assert_int_equal(m->author_kind, CONV_AUTHOR_PEER);
	m = conv_store_message_at(b, "space:a", 0);
	assert_null(m->parent_id);
	assert_true(m->answered);
	assert_string_equal(m->text, "hello");
	m = conv_store_find(b, "space:b", "m3");
	assert_string_equal(m->text, "bad \xFF utf8"); /* bytes kept exactly */
	assert_true(conv_store_is_ours(b, "space:b", "m3"));
	/* an id that was not UTF-8 comes back with U+FFFD (the file stays JSON) */
	assert_non_null(conv_store_find(b, "space:b", "m4\xEF\xBF\xBD"));
	assert_true(conv_store_answered(b, "m1"));
	assert_true(conv_store_answered(b, "gone-from-history"));
	assert_int_equal(conv_store_derived_chain(b, "space:a", NULL), 1);

	/* load replaces what was there */
	add(b, "space:zzz", "x", 'h');
	assert_int_equal(conv_store_load(b, &f->st, &err), 0);
	assert_int_equal(conv_store_count(b), 2);
	assert_int_equal(conv_store_message_count(b, "space:zzz"), 0);
	conv_store_free(b);

	/* another agent version keeps it (the data carries its own format) */
	struct state_store st2;
	assert_int_equal(state_store_init(&st2, f->dir, "2.0.0", NULL), 0);
	b = conv_store_new();
	assert_int_equal(conv_store_load(b, &st2, &err), 0);
	assert_true(conv_store_answered(b, "gone-from-history"));
	assert_int_equal(conv_store_count(b), 2);
	conv_store_free(b);
	state_store_free(&st2);
}

static void test_load_missing_corrupt_or_foreign(void **state)
{
	struct fx *f = *state;
	struct ga_err err = {{0}};
	add(f->s, "space:a", "m", 'h');
	assert_int_equal(conv_store_load(f->s, &f->st, &err), 0); /* missing */
	assert_int_equal(conv_store_count(f->s), 0);

	static const char *const bad[] = {
	        "{not json",
	        "{\"version\":\"1.0.0\",\"savedAt\":\"x\",\"data\":[]}",
	        "{\"version\":\"1.0.0\",\"savedAt\":\"x\",\"data\":{\"format\":2,\"answered\":[],"
	        "\"conversations\":[]}}",
	        "{\"version\":\"1.0.0\",\"savedAt\":\"x\",\"data\":{\"format\":1,\"answered\":{},"
	        "\"conversations\":[]}}",
	        "{\"version\":\"0.9.0\",\"savedAt\":\"x\",\"data\":{\"answered\":[\"a\"]}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		add(f->s, "space:a", "m", 'h');
		conv_store_mark_answered(f->s, "m");
		tu_write(f->dir, "conversations.json", bad[i]);
		assert_int_equal(conv_store_load(f->s, &f->st, &err), 0);
		assert_int_equal(conv_store_count(f->s), 0);
		assert_false(conv_store_answered(f->s, "m"));
	}
	assert_true(tu_count_prefix(f->dir, "conversations.json.corrupt-") >= 1);

	/* malformed entries are skipped, the rest is kept */
	tu_write(f->dir, "conversations.json",
	         "{\"version\":\"1.0.0\",\"savedAt\":\"x\",\"data\":{\"format\":1,"
	         "\"answered\":[\"ok\",7,\"\"],\"conversations\":["
	         "{\"key\":\"space:a\",\"lastMs\":5,\"messages\":["
	         "{\"id\":\"m1\",\"authorId\":\"u\",\"authorName\":\"U\",\"authorKind\":\"human\","
	         "\"isBot\":false,\"chain\":0,\"text\":\"hi\",\"timeMs\":1},"
	         "{\"id\":\"m2\",\"authorId\":\"u\",\"authorName\":\"U\",\"authorKind\":\"robot\","
	         "\"isBot\":true,\"chain\":0,\"text\":\"x\",\"timeMs\":2},"
	         "{\"id\":\"m3\",\"authorId\":\"u\",\"authorName\":\"U\",\"authorKind\":\"peer\","
	         "\"isBot\":true,\"chain\":1,\"textHex\":\"6\",\"timeMs\":3},"
	         "{\"id\":\"m1\",\"authorId\":\"u\",\"authorName\":\"U\",\"authorKind\":\"peer\","
	         "\"isBot\":true,\"chain\":1,\"text\":\"dup\",\"timeMs\":3},"
	         "{\"id\":\"m4\",\"authorId\":\"u\",\"authorName\":\"U\",\"authorKind\":\"peer\","
	         "\"isBot\":\"yes\",\"chain\":1,\"text\":\"x\",\"timeMs\":3}]},"
	         "{\"messages\":[]},{\"key\":\"space:b\"}]}}");
	assert_int_equal(conv_store_load(f->s, &f->st, &err), 0);
	assert_int_equal(conv_store_count(f->s), 1);
	assert_int_equal(conv_store_message_count(f->s, "space:a"), 1);
	assert_string_equal(conv_store_find(f->s, "space:a", "m1")->text, "hi");
	assert_true(conv_store_answered(f->s, "ok"));
}

static void test_load_enforces_bounds(void **state)
{
	struct fx *f = *state;
	/* a file written by hand (or an older build) with more than the bounds */
	cJSON *data = cJSON_CreateObject();
	cJSON_AddNumberToObject(data, "format", 1);
	cJSON *ans = cJSON_AddArrayToObject(data, "answered");
	char id[32];
	for (int i = 0; i < CONV_STORE_MAX_ANSWERED + 3; i++) {
		snprintf(id, sizeof id, "a%d", i);
		cJSON_AddItemToArray(ans, cJSON_CreateString(id));
	}
	cJSON *convs = cJSON_AddArrayToObject(data, "conversations");
	for (int c = 0; c < CONV_STORE_MAX_CONVERSATIONS + 2; c++) {
		cJSON *o = cJSON_CreateObject();
		snprintf(id, sizeof id, "space:c%d", c);
		cJSON_AddStringToObject(o, "key", id);
		cJSON *msgs = cJSON_AddArrayToObject(o, "messages");
		int nm = c == 0 ? CONV_STORE_MAX_MESSAGES + 4 : 1;
		for (int i = 0; i < nm; i++) {
			cJSON *m = cJSON_CreateObject();
			snprintf(id, sizeof id, "m%d", i);
			cJSON_AddStringToObject(m, "id", id);
			cJSON_AddStringToObject(m, "authorId", "u");
			cJSON_AddStringToObject(m, "authorName", "U");
			cJSON_AddStringToObject(m, "authorKind", "peer");
			cJSON_AddBoolToObject(m, "isBot", 1);
			cJSON_AddNumberToObject(m, "chain", 0);
			cJSON_AddStringToObject(m, "text", "t");
			cJSON_AddNumberToObject(m, "timeMs", i);
			cJSON_AddItemToArray(msgs, m);
		}
		cJSON_AddItemToArray(convs, o);
	}
	assert_int_equal(state_save(&f->st, "conversations", data, 1, NULL), 0);
	cJSON_Delete(data);
	assert_int_equal(conv_store_load(f->s, &f->st, NULL), 0);
	assert_int_equal(conv_store_count(f->s), CONV_STORE_MAX_CONVERSATIONS);
	assert_string_equal(conv_store_key_at(f->s, 0, NULL, NULL), "space:c0");
	assert_int_equal(conv_store_message_count(f->s, "space:c0"), CONV_STORE_MAX_MESSAGES);
	assert_string_equal(conv_store_message_at(f->s, "space:c0", 0)->message_id, "m4");
	assert_int_equal(conv_store_derived_chain(f->s, "space:c0", NULL), CONV_STORE_MAX_MESSAGES);
	assert_false(conv_store_answered(f->s, "a2"));
	assert_true(conv_store_answered(f->s, "a3"));
}

static void test_save_stays_under_the_state_limit(void **state)
{
	struct fx *f = *state;
	/* 3 conversations of full 8 KiB texts: more than the save budget
	 * allows for texts, so the least recent lose some, never the chain */
	char *t = malloc(CONV_STORE_MAX_TEXT_BYTES);
	memset(t, 'x', CONV_STORE_MAX_TEXT_BYTES);
	char key[32], id[32];
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < CONV_STORE_MAX_MESSAGES; i++) {
			snprintf(key, sizeof key, "space:c%d", c);
			snprintf(id, sizeof id, "m%d", i);
			add_full(f->s, key, id, 'p', NULL, t, CONV_STORE_MAX_TEXT_BYTES,
			         c * 1000 + i);
		}
	free(t);
	assert_int_equal(conv_store_save(f->s, &f->st, 1, NULL), 0);
	char p[1024];
	snprintf(p, sizeof p, "%s/conversations.json", f->dir);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_true((size_t)st.st_size <= CONV_STORE_SAVE_MAX_BYTES);
	struct conv_store *b = conv_store_new();
	assert_int_equal(conv_store_load(b, &f->st, NULL), 0);
	assert_int_equal(conv_store_count(b), 3);
	size_t with_text = 0, total = 0;
	for (int c = 0; c < 3; c++) {
		snprintf(key, sizeof key, "space:c%d", c);
		assert_int_equal(conv_store_message_count(b, key), CONV_STORE_MAX_MESSAGES);
		assert_int_equal(conv_store_derived_chain(b, key, NULL), CONV_STORE_MAX_MESSAGES);
		for (size_t i = 0; i < CONV_STORE_MAX_MESSAGES; i++) {
			total++;
			with_text += conv_store_message_at(b, key, i)->text_len > 0;
		}
	}
	assert_true(with_text > 0 && with_text < total);
	/* the most recent conversation keeps its texts */
	assert_int_equal(conv_store_message_at(b, "space:c2", 0)->text_len,
	                 CONV_STORE_MAX_TEXT_BYTES);
	conv_store_free(b);
}

static void test_save_drops_least_recent_conversations_past_the_limit(void **state)
{
	struct fx *f = *state;
	/* long author names: the metadata alone is more than the budget */
	char name[1024];
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	char key[32], id[32];
	for (int c = 0; c < 40; c++)
		for (int i = 0; i < CONV_STORE_MAX_MESSAGES; i++) {
			snprintf(key, sizeof key, "space:c%d", c);
			snprintf(id, sizeof id, "m%d", i);
			struct conv_event_src src = {.conversation = key,
			                             .message_id = id,
			                             .author_id = name,
			                             .author_name = name,
			                             .author_kind = CONV_AUTHOR_HUMAN};
			struct conv_event ev;
			conv_event_init(&ev, &src);
			conv_store_add(f->s, &ev);
			conv_event_free(&ev);
		}
	conv_store_mark_answered(f->s, "kept");
	assert_int_equal(conv_store_save(f->s, &f->st, 1, NULL), 0);
	struct conv_store *b = conv_store_new();
	assert_int_equal(conv_store_load(b, &f->st, NULL), 0);
	size_t n = conv_store_count(b);
	assert_true(n > 0 && n < 40);
	assert_string_equal(conv_store_key_at(b, 0, NULL, NULL), "space:c39"); /* most recent */
	assert_true(conv_store_answered(b, "kept"));
	conv_store_free(b);
}

static void test_save_if_due(void **state)
{
	struct fx *f = *state;
	struct ga_err err = {{0}};
	assert_false(conv_store_dirty(f->s));
	assert_int_equal(conv_store_save_if_due(f->s, &f->st, 1000, false, &err), 0);
	add(f->s, "space:a", "m1", 'h');
	assert_true(conv_store_dirty(f->s));
	assert_int_equal(conv_store_save_if_due(f->s, &f->st, 1000, false, &err), 1);
	assert_false(conv_store_dirty(f->s));
	add(f->s, "space:a", "m1", 'h'); /* a duplicate changes nothing */
	assert_false(conv_store_dirty(f->s));
	add(f->s, "space:a", "m2", 'h');
	assert_int_equal(conv_store_save_if_due(f->s, &f->st,
	                                        1000 + CONV_STORE_SAVE_MIN_INTERVAL_MS - 1, false,
	                                        &err),
	                 0);
	assert_int_equal(conv_store_save_if_due(
	                         f->s, &f->st, 1000 + CONV_STORE_SAVE_MIN_INTERVAL_MS, false, &err),
	                 1);
	conv_store_mark_answered(f->s, "m2");
	assert_int_equal(conv_store_save_if_due(f->s, &f->st,
	                                        1000 + CONV_STORE_SAVE_MIN_INTERVAL_MS, true, &err),
	                 1);
	struct conv_store *b = conv_store_new();
	conv_store_load(b, &f->st, &err);
	assert_true(conv_store_answered(b, "m2"));
	assert_int_equal(conv_store_message_count(b, "space:a"), 2);
	conv_store_free(b);

	/* a directory that cannot be written: -1 with a sentence, still dirty */
	add(f->s, "space:a", "m3", 'h');
	struct state_store bad = {.dir = "/proc/nonexistent", .version = "1.0.0"};
	assert_int_equal(conv_store_save_if_due(f->s, &bad, 99999999, true, &err), -1);
	assert_true(err.msg[0] != '\0');
	assert_true(conv_store_dirty(f->s));
}

/* A concluded conversation is dropped whole unless it went on after the
 * conclusion; the answered set (dedup) does not depend on it. */
static void test_conclude(void **state)
{
	struct fx *f = *state;
	struct conv_store *s = f->s;
	assert_int_equal(add_full(s, "github:o/r#5:review", "m1", 'p', NULL, "Review of", 0, 100),
	                 1);
	assert_int_equal(add_full(s, "github:o/r#5:review", "m2", 's', NULL, "Approved", 0, 200),
	                 1);
	assert_int_equal(add_full(s, "github:o/r#6", "n1", 'h', NULL, "hi", 0, 300), 1);
	conv_store_mark_answered(s, "m1");
	assert_int_equal(conv_store_count(s), 2);
	/* a message after the conclusion: kept */
	assert_false(conv_store_conclude(s, "github:o/r#5:review", 150));
	assert_int_equal(conv_store_count(s), 2);
	assert_false(conv_store_conclude(s, "github:o/r#7", 1000)); /* unknown */
	assert_false(conv_store_conclude(NULL, "github:o/r#5:review", 1000));
	struct ga_err e = {{0}};
	assert_int_equal(conv_store_save_if_due(s, &f->st, 0, true, &e), 1);
	assert_false(conv_store_dirty(s));
	assert_true(conv_store_conclude(s, "github:o/r#5:review", 200));
	assert_true(conv_store_dirty(s));
	assert_int_equal(conv_store_count(s), 1);
	assert_string_equal(conv_store_key_at(s, 0, NULL, NULL), "github:o/r#6");
	assert_null(conv_store_find(s, "github:o/r#5:review", "m2"));
	assert_true(conv_store_answered(s, "m1"));
	/* the conversation can start again */
	assert_int_equal(add_full(s, "github:o/r#5:review", "m2", 's', NULL, "Approved", 0, 200),
	                 1);
	assert_int_equal(conv_store_count(s), 2);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_lru_conversations),
	        T(test_message_bound_and_duplicates),
	        T(test_message_fields_and_text_bound),
	        T(test_answered_set),
	        T(test_derived_chain),
	        T(test_derived_chain_branch),
	        T(test_is_ours),
	        T(test_json),
	        T(test_save_load_round_trip),
	        T(test_load_missing_corrupt_or_foreign),
	        T(test_load_enforces_bounds),
	        T(test_save_stays_under_the_state_limit),
	        T(test_save_drops_least_recent_conversations_past_the_limit),
	        T(test_save_if_due),
	        T(test_conclude),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
