/*
 * One workspace per organisation (modules/workspace wsp_create, spec
 * §3.1), against the GitHub fake with the template repository and, for the
 * race, a redis-server of the test's own as the shared coordination
 * backend:
 *   - two agents asked at the same moment for a workspace of one
 *     organisation (different names): one repository is generated from the
 *     template, both answers name it, exactly one says created, both watch
 *     it;
 *   - asked again (another name): found first, not created — no second
 *     generate request — and the answer says it existed.
 * Without redis-server the test is skipped (77): the local backend of two
 * agents in one process is not shared, so it cannot show the race.
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

#include "common/json.h"
#include "support_loop.h"
#include "support_redis.h"
#include "wsfix.h"

#define ORG      "neworg"
#define GENERATE "/repos/internet-development/www-sacred/generate"

struct answer {
	bool done, ok;
	cJSON *j;
	char text[600];
};

static void answered(void *ud, bool ok, const char *text)
{
	struct answer *a = ud;
	a->done = true;
	a->ok = ok;
	snprintf(a->text, sizeof a->text, "%s", text ? text : "");
	a->j = ok ? cJSON_Parse(text) : NULL;
}

struct both {
	struct answer *a, *b;
};

static bool both_done(void *ctx, const void *arg)
{
	(void)arg;
	struct both *w = ctx;
	return w->a->done && (!w->b || w->b->done);
}

static bool watches(struct wsfix_agent *a, const char *full)
{
	cJSON *st = wsp_status(a->ws);
	bool found = false;
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "watched"))
	{
		char *p = cJSON_PrintUnformatted(it);
		found = found || (p && strstr(p, full));
		free(p);
	}
	cJSON_Delete(st);
	return found;
}

static void test_one_per_org(void **state)
{
	(void)state;
	struct support_redis r;
	char err[256], url[64];
	if (support_redis_start(&r, NULL, err, sizeof err) != 0)
		fail_msg("redis-server: %s", err);
	snprintf(url, sizeof url, "redis://127.0.0.1:%d", r.port);
	struct wsfix fx;
	wsfix_open(&fx);
	ghfake_add_org(fx.fake, ORG);
	ghfake_add_org(fx.fake, "internet-development");
	ghfake_add_repo(fx.fake, "internet-development", "www-sacred", GHFAKE_REPO_TEMPLATE);
	struct ghfake_file tf[] = {{"index.html", "<h1>sacred</h1>\n", 0, 0}};
	ghfake_commit(fx.fake, "internet-development", "www-sacred", "main", tf, 1, "template",
	              "host", NULL);
	fx.redis_url = url;
	wsfix_agents(&fx, 2, 0, 0);

	/* the race: both at once, each with its own name */
	struct answer a = {0}, b = {0};
	struct ga_err e = {{0}};
	assert_int_equal(
	        wsp_create(fx.a[0].ws, ORG, "site", NULL, WSP_SOURCE_ROOM, NULL, answered, &a, &e),
	        0);
	assert_int_equal(
	        wsp_create(fx.a[1].ws, ORG, "other", NULL, WSP_SOURCE_ROOM, NULL, answered, &b, &e),
	        0);
	struct both w = {&a, &b};
	assert_true(support_run_until(&fx.loop, both_done, &w, NULL, 90000));
	if (!a.ok || !b.ok)
		fail_msg("answers: %s | %s", a.text, b.text);
	assert_int_equal(ghfake_count(fx.fake, "POST", GENERATE, 0), 1);
	const char *fa = json_string_or(a.j, "fullName", "?");
	const char *fb = json_string_or(b.j, "fullName", "!");
	assert_string_equal(fa, fb);
	assert_true(strncmp(fa, ORG "/www-lil-intdev-", strlen(ORG "/www-lil-intdev-")) == 0);
	int created = cJSON_IsTrue(cJSON_GetObjectItem(a.j, "created")) +
	              cJSON_IsTrue(cJSON_GetObjectItem(b.j, "created"));
	assert_int_equal(created, 1);
	assert_true(watches(&fx.a[0], fa));
	assert_true(watches(&fx.a[1], fa));

	/* asked again: found first, nothing generated */
	struct answer c = {0};
	assert_int_equal(
	        wsp_create(fx.a[0].ws, ORG, "third", NULL, WSP_SOURCE_ROOM, NULL, answered, &c, &e),
	        0);
	struct both w2 = {&c, NULL};
	assert_true(support_run_until(&fx.loop, both_done, &w2, NULL, 30000));
	assert_true(c.ok);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(c.j, "created")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c.j, "found")));
	assert_string_equal(json_string_or(c.j, "fullName", "?"), fa);
	assert_int_equal(ghfake_count(fx.fake, "POST", GENERATE, 0), 1);

	cJSON_Delete(a.j);
	cJSON_Delete(b.j);
	cJSON_Delete(c.j);
	wsfix_close(&fx);
	support_redis_free(&r);
}

int main(void)
{
	if (ghfake_git_missing("test_ws_create"))
		return 77;
	if (!support_redis_binary()) {
		fprintf(stderr, "redis-server is not installed: test_ws_create is skipped\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_one_per_org)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
