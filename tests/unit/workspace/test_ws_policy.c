/*
 * The work loop's pure rules (modules/workspace/policy.h, watch.h): the
 * designated reviewer (the same for every agent, whatever order it lists
 * the agents in, never the author), the known agents, the keys, the
 * comments with their markers, the report's details, duplicate plans (the
 * one with work is kept, never closed), lapsed claims, the counts; the
 * watch list (bounds, the state file across versions) and discovery of
 * workspace links in text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/watch.h"
#include "testutil.h"

static void test_reviewer(void **state)
{
	(void)state;
	const char *a[] = {"ada-bot", "Bob-Bot", "cal-bot"};
	const char *b[] = {"cal-bot", "ada-bot", "bob-bot", "ADA-BOT"};
	char r1[PLAN_LOGIN_MAX], r2[PLAN_LOGIN_MAX];
	struct decision d;
	for (int pr = 1; pr < 40; pr++) {
		/* the author never reviews; the order of the list never matters */
		assert_int_equal(wsp_designated_reviewer("acme", "web", pr, "ada-bot", a, 3, r1,
		                                         sizeof r1, &d),
		                 0);
		assert_int_equal(wsp_designated_reviewer("acme", "web", pr, "ADA-bot", b, 4, r2,
		                                         sizeof r2, NULL),
		                 0);
		assert_string_equal(r1, r2);
		assert_string_not_equal(r1, "ada-bot");
		/* the smallest hash of the two others */
		char h1[SHA256_HEX_LEN + 1], h2[SHA256_HEX_LEN + 1];
		wsp_reviewer_hash("bob-bot", "acme", "web", pr, h1);
		wsp_reviewer_hash("cal-bot", "acme", "web", pr, h2);
		assert_string_equal(r1, strcmp(h1, h2) < 0 ? "bob-bot" : "cal-bot");
	}
	assert_string_equal(d.rule, "reviewer_designated");
	/* the hash is of "<lower login><owner>/<repo>#<n>" */
	char h[SHA256_HEX_LEN + 1], want[SHA256_HEX_LEN + 1];
	wsp_reviewer_hash("Bob-Bot", "acme", "web", 7, h);
	sha256_hex("bob-botacme/web#7", strlen("bob-botacme/web#7"), want);
	assert_string_equal(h, want);
	/* nobody but the author, or only names that are not logins */
	const char *only[] = {"ada-bot", "not a login", NULL};
	assert_int_equal(
	        wsp_designated_reviewer("acme", "web", 1, "ada-bot", only, 3, r1, sizeof r1, &d),
	        -1);
	assert_string_equal(d.rule, "reviewer_none");
}

static void test_agents_and_keys(void **state)
{
	(void)state;
	struct wsp_agents a = {0};
	wsp_agents_add(&a, "Ada-Bot");
	wsp_agents_add(&a, "ada-bot");
	wsp_agents_add(&a, "-bad-");
	wsp_agents_add(&a, NULL);
	wsp_agents_add(&a, "bob");
	assert_int_equal(a.n, 2);
	assert_true(wsp_agents_has(&a, "ADA-BOT"));
	assert_string_equal(a.login[0], "ada-bot");
	for (int i = 0; i < WSP_MAX_AGENTS + 5; i++) {
		char l[16];
		snprintf(l, sizeof l, "agent-%d", i);
		wsp_agents_add(&a, l);
	}
	assert_int_equal(a.n, WSP_MAX_AGENTS); /* bounded */

	char k1[WSP_KEY_MAX + 1], k2[WSP_KEY_MAX + 1];
	assert_int_equal(wsp_key(k1, sizeof k1, "claim", "Acme", "Web", 12, 3, 2), 0);
	assert_int_equal(wsp_key(k2, sizeof k2, "claim", "acme", "web", 12, 3, 2), 0);
	assert_string_equal(k1, k2); /* GitHub's names are case-insensitive */
	assert_non_null(strstr(k1, "#12/3/a2"));
	assert_int_equal(strncmp(k1, "ws-claim:", 9), 0);
	assert_int_equal(wsp_key(k2, sizeof k2, "claim", "acme", "web2", 12, 3, 2), 0);
	assert_string_not_equal(k1, k2);
	assert_int_equal(wsp_key(k1, sizeof k1, "body", "acme", "web", 12, 0, 0), 0);
	assert_non_null(strstr(k1, "#12"));
	assert_null(strstr(k1, "/"));
	char tiny[8];
	assert_int_equal(wsp_key(tiny, sizeof tiny, "claim", "acme", "web", 12, 3, 2), -1);
	/* the longest owner and repository still fit the journal */
	char owner[40], repo[101];
	memset(owner, 'o', 39);
	owner[39] = '\0';
	memset(repo, 'r', 100);
	repo[100] = '\0';
	assert_int_equal(
	        wsp_key(k1, sizeof k1, "supersede-labels", owner, repo, 2147483647, 9999, 9999), 0);
	assert_true(strlen(k1) <= 128);
}

static void test_texts(void **state)
{
	(void)state;
	struct plan_marker m = {.kind = PLAN_MARK_CLAIM, .plan = 4, .task = 2, .attempt = 1};
	snprintf(m.agent, sizeof m.agent, "ada-bot");
	char *c = wsp_comment("🙋 **Claiming Task 2: Pages**", &m);
	assert_string_equal(c, "🙋 **Claiming Task 2: Pages**\n\n<!-- ga:claim plan=4 task=2 "
	                       "agent=ada-bot attempt=1 -->");
	struct plan_marker back;
	assert_int_equal(plan_marker_parse(c, &back, NULL), 1);
	assert_int_equal(back.task, 2);
	free(c);
	snprintf(m.agent, sizeof m.agent, "not a login!");
	assert_null(wsp_comment("x", &m));

	struct git_file files[40];
	char names[40][16];
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof names[i], "f%d.c", i);
		files[i] = (struct git_file){'M', names[i], NULL};
	}
	char *d = wsp_task_details("https://github.com/acme/web/pull/9",
	                           "2 files changed, 3 insertions(+)", files, 2, 0, "Passed");
	assert_non_null(strstr(d, "Task completed. PR: https://github.com/acme/web/pull/9"));
	assert_non_null(strstr(d, "**Files changed (2):**\n- `f0.c`\n- `f1.c`\n"));
	assert_non_null(strstr(d, "**Tests:** ✅ Passed"));
	free(d);
	d = wsp_task_details(NULL, "", files, 40, 5, NULL);
	assert_non_null(strstr(d, "**Files changed (45):**"));
	assert_non_null(strstr(d, "- … and 15 more"));
	assert_non_null(strstr(d, "**Tests:** None found"));
	assert_null(strstr(d, "f30.c"));
	free(d);
}

static void test_duplicates(void **state)
{
	(void)state;
	char n[64];
	wsp_title_norm("  Add  the Login-Page! ", n, sizeof n);
	assert_string_equal(n, "add the login page");
	struct wsp_plan_brief p[] = {
	        {3, "Login page", false},
	        {5, "login  page!", false},
	        {7, "Other", false},
	        {9, "LOGIN PAGE", false},
	};
	struct wsp_supersede out[8];
	/* untouched: the newest is kept */
	size_t k = wsp_plan_duplicates(p, 4, out, 8);
	assert_int_equal(k, 2);
	assert_int_equal(out[0].number, 3);
	assert_int_equal(out[0].by, 9);
	assert_int_equal(out[1].number, 5);
	/* the one with work is kept, and a plan with work is never closed */
	p[1].touched = true;
	k = wsp_plan_duplicates(p, 4, out, 8);
	assert_int_equal(k, 2);
	assert_int_equal(out[0].number, 3);
	assert_int_equal(out[0].by, 5);
	assert_int_equal(out[1].number, 9);
	assert_int_equal(out[1].by, 5);
	p[3].touched = true;
	k = wsp_plan_duplicates(p, 4, out, 8);
	assert_int_equal(k, 1);
	assert_int_equal(out[0].number, 3);
	/* distinct titles: nothing */
	struct wsp_plan_brief q[] = {{1, "A", false}, {2, "B", false}, {3, "", false}};
	assert_int_equal(wsp_plan_duplicates(q, 3, out, 8), 0);
	/* bounded output */
	assert_int_equal(wsp_plan_duplicates(p, 4, out, 0), 0);
}

static void test_lapsed(void **state)
{
	(void)state;
	struct decision d;
	struct plan_task_state s = {.task = 2,
	                            .status = PLAN_CLAIMED,
	                            .assignee = "bob-bot",
	                            .since_ms = 1000,
	                            .from_markers = true};
	int64_t orphan = 60000;
	assert_false(wsp_claim_lapsed(&s, "ada-bot", 1000 + orphan, orphan, &d));
	assert_string_equal(d.rule, "claim_live");
	assert_true(wsp_claim_lapsed(&s, "ada-bot", 1001 + orphan, orphan, &d));
	assert_string_equal(d.rule, "claim_lapsed");
	/* ours, with a PR, from the body only, or nobody's: never */
	assert_false(wsp_claim_lapsed(&s, "BOB-BOT", 1 << 30, orphan, &d));
	assert_string_equal(d.rule, "claim_ours");
	s.pr = 4;
	assert_false(wsp_claim_lapsed(&s, "ada-bot", 1 << 30, orphan, &d));
	s.pr = 0;
	s.from_markers = false;
	assert_false(wsp_claim_lapsed(&s, "ada-bot", 1 << 30, orphan, &d));
	s.from_markers = true;
	s.status = PLAN_PENDING;
	s.assignee[0] = '\0';
	assert_false(wsp_claim_lapsed(&s, "ada-bot", 1 << 30, orphan, &d));
	s.status = PLAN_IN_PROGRESS;
	snprintf(s.assignee, sizeof s.assignee, "cal-bot");
	assert_true(wsp_claim_lapsed(&s, "ada-bot", 1 << 30, orphan, &d));

	struct plan_task_state st[] = {{.status = PLAN_COMPLETED},
	                               {.status = PLAN_CLAIMED},
	                               {.status = PLAN_IN_PROGRESS},
	                               {.status = PLAN_BLOCKED},
	                               {.status = PLAN_PENDING}};
	struct wsp_counts c;
	wsp_count(st, 5, &c);
	assert_int_equal(c.total, 5);
	assert_int_equal(c.completed, 1);
	assert_int_equal(c.in_progress, 2);
	assert_int_equal(c.blocked, 1);
}

static void test_watchlist(void **state)
{
	(void)state;
	struct wsp_watchlist l = {0};
	struct ga_err e = {{0}};
	assert_int_equal(
	        wsp_watch_add(&l, "acme", "www-lil-intdev-a", WSP_SOURCE_ROOM, NULL, 5, &e), 1);
	/* the same repository in another case is the same one; a thread is
	 * filled in when it had none */
	assert_int_equal(wsp_watch_add(&l, "ACME", "WWW-LIL-INTDEV-A", WSP_SOURCE_BLUESKY,
	                               "at://did:plc:x/app.bsky.feed.post/1", 6, &e),
	                 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.w[0].thread, "at://did:plc:x/app.bsky.feed.post/1");
	assert_int_equal(l.w[0].source, WSP_SOURCE_ROOM);
	assert_int_equal(wsp_watch_add(&l, "acme", "bad name", WSP_SOURCE_ROOM, NULL, 5, &e), -1);
	assert_non_null(strstr(e.msg, "not a GitHub repository name"));
	int plans[WSP_MAX_PLAN_NUMBERS + 4];
	for (int i = 0; i < WSP_MAX_PLAN_NUMBERS + 4; i++)
		plans[i] = i + 1;
	wsp_watch_set_plans(&l.w[0], plans, WSP_MAX_PLAN_NUMBERS + 4, 99);
	assert_int_equal(l.w[0].n_plans, WSP_MAX_PLAN_NUMBERS);
	assert_int_equal(l.w[0].plans[0], 5); /* the newest kept */
	/* the state file, across an agent version */
	char *dir = tu_tempdir();
	struct state_store st, st2;
	assert_int_equal(state_store_init(&st, dir, "1.0.0", &e), 0);
	assert_int_equal(wsp_watchlist_save(&l, &st, 100, &e), 0);
	assert_int_equal(state_store_init(&st2, dir, "2.0.0", &e), 0);
	struct wsp_watchlist back = {0};
	assert_int_equal(wsp_watchlist_load(&back, &st2, &e), 0);
	assert_int_equal(back.n, 1);
	assert_string_equal(back.w[0].repo, "www-lil-intdev-a");
	assert_int_equal(back.w[0].n_plans, WSP_MAX_PLAN_NUMBERS);
	assert_int_equal(back.w[0].polled_ms, 99);
	char url[200];
	wsp_watch_url(&back.w[0], url, sizeof url);
	assert_string_equal(url, "https://github.com/acme/www-lil-intdev-a");
	wsp_watchlist_free(&back);
	/* bad records are skipped, a bad file is no list */
	cJSON *bad = cJSON_Parse("{\"workspaces\":[{\"owner\":\"a\",\"repo\":\"b\",\"source\":"
	                         "\"room\"},{\"owner\":\"-x\",\"repo\":\"b\",\"source\":\"room\"},"
	                         "{\"owner\":\"a\",\"repo\":\"c\",\"source\":\"nowhere\"},7]}");
	size_t skipped = 0;
	assert_int_equal(wsp_watchlist_from_json(&back, bad, &skipped, &e), 0);
	assert_int_equal(back.n, 1);
	assert_int_equal(skipped, 3);
	cJSON_Delete(bad);
	bad = cJSON_Parse("[1,2]");
	assert_int_equal(wsp_watchlist_from_json(&back, bad, NULL, &e), -1);
	cJSON_Delete(bad);
	wsp_watchlist_free(&back);
	/* the bound */
	for (int i = 0; l.n < WSP_MAX_WATCHED; i++) {
		char r[32];
		snprintf(r, sizeof r, "repo-%d", i);
		assert_int_equal(wsp_watch_add(&l, "acme", r, WSP_SOURCE_OWNER, NULL, 1, &e), 1);
	}
	assert_int_equal(wsp_watch_add(&l, "acme", "one-more", WSP_SOURCE_OWNER, NULL, 1, &e), -1);
	assert_non_null(strstr(e.msg, "unwatch one first"));
	assert_int_equal(wsp_watch_remove(&l, "ACME", "repo-0"), 1);
	assert_int_equal(wsp_watch_remove(&l, "acme", "repo-0"), 0);
	wsp_watchlist_free(&l);
	state_store_free(&st);
	state_store_free(&st2);
	tu_rmrf(dir);
	free(dir);
}

/* The owner's unwatch is remembered (across a restart: the state file)
 * so that discovery does not bring the workspace back; the owner's watch
 * or our own creation does. */
static void test_unwatched(void **state)
{
	(void)state;
	struct wsp_watchlist l = {0};
	struct ga_err e = {{0}};
	assert_int_equal(
	        wsp_watch_add(&l, "acme", "www-lil-intdev-a", WSP_SOURCE_ROOM, NULL, 1, &e), 1);
	assert_int_equal(
	        wsp_watch_add(&l, "acme", "www-lil-intdev-b", WSP_SOURCE_OWNER, NULL, 1, &e), 1);
	assert_false(wsp_watch_unwatched(&l, "acme", "www-lil-intdev-a"));
	assert_int_equal(wsp_watch_remove(&l, "ACME", "WWW-lil-intdev-a"), 1);
	assert_null(wsp_watch_find(&l, "acme", "www-lil-intdev-a"));
	assert_true(wsp_watch_unwatched(&l, "acme", "www-lil-intdev-a"));
	assert_true(wsp_watch_unwatched(&l, "Acme", "WWW-LIL-INTDEV-A"));
	assert_false(wsp_watch_unwatched(&l, "acme", "www-lil-intdev-b"));
	/* not watched: nothing is remembered */
	assert_int_equal(wsp_watch_remove(&l, "acme", "www-lil-intdev-z"), 0);
	assert_false(wsp_watch_unwatched(&l, "acme", "www-lil-intdev-z"));
	/* kept in the file; a file without the field (an older version) reads */
	cJSON *j = wsp_watchlist_to_json(&l);
	struct wsp_watchlist back = {0};
	size_t skipped = 9;
	assert_int_equal(wsp_watchlist_from_json(&back, j, &skipped, &e), 0);
	cJSON_Delete(j);
	assert_int_equal(skipped, 0);
	assert_int_equal(back.n, 1);
	assert_true(wsp_watch_unwatched(&back, "acme", "www-lil-intdev-a"));
	cJSON *old = cJSON_Parse("{\"format\":1,\"workspaces\":[{\"owner\":\"a\",\"repo\":"
	                         "\"b\",\"source\":\"room\"}]}");
	assert_int_equal(wsp_watchlist_from_json(&back, old, &skipped, &e), 0);
	cJSON_Delete(old);
	assert_int_equal(back.n, 1);
	assert_int_equal(back.n_unwatched, 0);
	/* a bad or a watched record among the unwatched is skipped */
	cJSON *odd = cJSON_Parse("{\"workspaces\":[{\"owner\":\"a\",\"repo\":\"b\",\"source\":"
	                         "\"room\"}],\"unwatched\":[{\"owner\":\"a\",\"repo\":\"b\"},"
	                         "{\"owner\":\"-x\",\"repo\":\"c\"},{\"owner\":\"a\"},"
	                         "{\"owner\":\"a\",\"repo\":\"d\"}]}");
	assert_int_equal(wsp_watchlist_from_json(&back, odd, &skipped, &e), 0);
	cJSON_Delete(odd);
	assert_int_equal(skipped, 3);
	assert_int_equal(back.n_unwatched, 1);
	assert_true(wsp_watch_unwatched(&back, "a", "d"));
	wsp_watchlist_free(&back);
	/* the room's link does not clear it; the owner's watch does */
	assert_int_equal(
	        wsp_watch_add(&l, "acme", "www-lil-intdev-a", WSP_SOURCE_ROOM, NULL, 2, &e), 1);
	assert_true(wsp_watch_unwatched(&l, "acme", "www-lil-intdev-a"));
	assert_int_equal(
	        wsp_watch_add(&l, "acme", "www-lil-intdev-a", WSP_SOURCE_OWNER, NULL, 2, &e), 0);
	assert_false(wsp_watch_unwatched(&l, "acme", "www-lil-intdev-a"));
	assert_int_equal(wsp_watch_remove(&l, "acme", "www-lil-intdev-b"), 1);
	assert_int_equal(
	        wsp_watch_add(&l, "acme", "www-lil-intdev-b", WSP_SOURCE_CREATED, NULL, 3, &e), 1);
	assert_false(wsp_watch_unwatched(&l, "acme", "www-lil-intdev-b"));
	/* the bound: the oldest is forgotten */
	for (int i = 0; i < WSP_MAX_UNWATCHED + 3; i++) {
		char r[32];
		snprintf(r, sizeof r, "repo-%d", i);
		assert_int_equal(wsp_watch_add(&l, "acme", r, WSP_SOURCE_OWNER, NULL, 1, &e), 1);
		assert_int_equal(wsp_watch_remove(&l, "acme", r), 1);
	}
	assert_int_equal(l.n_unwatched, WSP_MAX_UNWATCHED);
	assert_false(wsp_watch_unwatched(&l, "acme", "repo-2"));
	assert_true(wsp_watch_unwatched(&l, "acme", "repo-3"));
	char last[32];
	snprintf(last, sizeof last, "repo-%d", WSP_MAX_UNWATCHED + 2);
	assert_true(wsp_watch_unwatched(&l, "acme", last));
	wsp_watchlist_free(&l);
	assert_int_equal(l.n_unwatched, 0);
}

static void test_discovery(void **state)
{
	(void)state;
	struct wsp_ref r[4];
	const char *p = WSP_DEFAULT_PREFIX;
	size_t n = wsp_find_refs("Work in https://github.com/acme/www-lil-intdev-demo please, and "
	                         "github.com/Acme/WWW-LIL-INTDEV-demo.git/issues/3 too. Also "
	                         "www.github.com/b-org/www-lil-intdev-two.",
	                         p, r, 4);
	assert_int_equal(n, 2);
	assert_string_equal(r[0].owner, "acme");
	assert_string_equal(r[0].repo, "www-lil-intdev-demo");
	assert_string_equal(r[1].owner, "b-org");
	assert_string_equal(r[1].repo, "www-lil-intdev-two");
	/* not workspaces, not GitHub, not repositories */
	assert_int_equal(wsp_find_refs("https://github.com/acme/widgets", p, r, 4), 0);
	assert_int_equal(wsp_find_refs("https://notgithub.com/acme/www-lil-intdev-x", p, r, 4), 0);
	assert_int_equal(wsp_find_refs("github.com/www-lil-intdev-x", p, r, 4), 0);
	assert_int_equal(wsp_find_refs("github.com/-bad/www-lil-intdev-x", p, r, 4), 0);
	assert_int_equal(wsp_find_refs("", p, r, 4), 0);
	assert_int_equal(wsp_find_refs(NULL, p, r, 4), 0);
	/* bounded */
	assert_int_equal(
	        wsp_find_refs("github.com/a/www-lil-intdev-1 github.com/a/www-lil-intdev-2 "
	                      "github.com/a/www-lil-intdev-3",
	                      p, r, 2),
	        2);
	/* another prefix; the prefix alone is no name to stop at */
	assert_int_equal(wsp_find_refs("github.com/acme/www-site", "www-", r, 4), 1);
	assert_true(wsp_has_prefix("WWW-LIL-INTDEV-x", p));
	assert_false(wsp_has_prefix("www-lil", p));
}

/* --- the merge rule ------------------------------------------------------------------------- */

static const char *const AGENTS[] = {"ada-bot", "bob-bot", "cal-bot"};
#define HEAD "1111111111111111111111111111111111111111"
#define OLD  "2222222222222222222222222222222222222222"
#define HOUR (60 * 60 * 1000LL)

static struct wsp_pr_facts facts(void)
{
	return (struct wsp_pr_facts){.owner = "acme",
	                             .repo = "web",
	                             .number = 7,
	                             .author = "ada-bot",
	                             .head_sha = HEAD,
	                             .mergeable_state = "clean",
	                             .created_ms = 1000,
	                             .agents = AGENTS,
	                             .n_agents = 3,
	                             .attempt = 1,
	                             .now_ms = 1000 + HOUR,
	                             .review_timeout_ms = 2 * HOUR,
	                             .max_revisions = -1,
	                             .max_rebuilds = -1};
}

static void designated_of(char *out, size_t cap)
{
	assert_int_equal(
	        wsp_designated_reviewer("acme", "web", 7, "ada-bot", AGENTS, 3, out, cap, NULL), 0);
}

static void test_pr_first_request(void **state)
{
	(void)state;
	char des[PLAN_LOGIN_MAX];
	designated_of(des, sizeof des);
	struct wsp_pr_facts f = facts();
	struct wsp_pr_verdict v;
	/* nobody asked: the designated reviewer, and only that one */
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REQUEST);
	assert_string_equal(v.ask, des);
	assert_string_equal(v.next, des);
	assert_string_equal(v.d.rule, "reviewer_requested");
	assert_string_equal(wsp_pr_state_name(v.state), "awaiting_review");
	/* nobody but the author known: the owner, never a wait */
	const char *alone[] = {"ada-bot"};
	f.agents = alone;
	f.n_agents = 1;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_OWNER);
	assert_string_equal(v.d.rule, "reviewer_none");
	assert_string_equal(v.next, "");
}

static void test_pr_wait_and_timeout(void **state)
{
	(void)state;
	char des[PLAN_LOGIN_MAX];
	designated_of(des, sizeof des);
	const char *other = strcmp(des, "bob-bot") == 0 ? "cal-bot" : "bob-bot";
	struct wsp_pr_facts f = facts();
	const char *req[] = {des};
	struct wsp_pr_ask asks[] = {{des, 2000}, {other, 0}};
	f.requested = req;
	f.n_requested = 1;
	f.asks = asks;
	f.n_asks = 1;
	struct wsp_pr_verdict v;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_WAIT);
	assert_string_equal(v.d.rule, "review_awaited");
	assert_string_equal(v.next, des);
	assert_int_equal(v.since_ms, 2000);
	/* past the timeout, dated by the request event: the next by hash */
	f.now_ms = 2000 + 2 * HOUR + 1;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REQUEST);
	assert_string_equal(v.ask, other);
	assert_string_equal(v.d.rule, "review_timeout");
	/* the second asked too and silent: nobody left, the owner */
	asks[1].at_ms = f.now_ms;
	f.n_asks = 2;
	const char *req2[] = {des, other};
	f.requested = req2;
	f.n_requested = 2;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_WAIT);
	assert_string_equal(v.next, other);
	f.now_ms += 2 * HOUR + 1;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_OWNER);
	assert_string_equal(v.d.rule, "review_timeout");
	/* handed over: the owner's, nothing more is done */
	f.handed_over = true;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_WAIT);
	assert_int_equal(v.state, WSP_PR_OWNER);
	assert_string_equal(v.next, "");
	/* a request GitHub dropped (not listed, no event) still times out:
	 * dated from the PR's creation */
	f = facts();
	const char *mine[] = {des};
	f.asked_head = mine;
	f.n_asked_head = 1;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_WAIT);
	f.now_ms = f.created_ms + 2 * HOUR + 1;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REQUEST);
	assert_string_equal(v.ask, other);
}

/* The candidates as the engine builds them (wsp_int.h
 * wsp_workspace_agents): us, the marker authors (ada-bot, bob-bot), the
 * room's agents; into f (ag holds the pointers). */
static const char *const MARKERS[] = {"ada-bot", "bob-bot"};
static void candidates(struct wsp_pr_facts *f, struct wsp_agents *a, const char **ag,
                       const char *const *room, size_t nr)
{
	memset(a, 0, sizeof *a);
	wsp_agents_add(a, "ada-bot");
	for (size_t i = 0; i < 2; i++)
		wsp_agents_add(a, MARKERS[i]);
	wsp_agents_add_sorted(a, room, nr);
	for (size_t i = 0; i < a->n; i++)
		ag[i] = a->login[i];
	f->agents = ag;
	f->n_agents = a->n;
}

/* ada-bot's PR whose designated reviewer among bob-bot and cal-bot is
 * who. */
static struct wsp_pr_facts pr_designating(const char *who)
{
	const char *two[] = {"bob-bot", "cal-bot"};
	struct wsp_pr_facts f = facts();
	char des[PLAN_LOGIN_MAX] = "";
	for (f.number = 1; f.number < 100 && strcmp(des, who) != 0; f.number++)
		assert_int_equal(wsp_designated_reviewer("acme", "web", f.number, "ada-bot", two, 2,
		                                         des, sizeof des, NULL),
		                 0);
	f.number--;
	assert_string_equal(des, who);
	return f;
}

/* Asks the reviewer, then lets the timeout pass. */
static void ask_and_wait(struct wsp_pr_facts *f, struct wsp_pr_ask *asks, const char **req,
                         const char *who)
{
	asks[f->n_asks] = (struct wsp_pr_ask){who, f->now_ms};
	req[f->n_requested] = who;
	f->n_asks++;
	f->n_requested++;
	f->asks = asks;
	f->requested = req;
	f->now_ms += f->review_timeout_ms + 1;
}

/* The verdict asks who. */
static void expect_ask(const struct wsp_pr_facts *f, const char *who)
{
	struct wsp_pr_verdict v;
	wsp_pr_decide(f, &v);
	assert_int_equal(v.act, WSP_ACT_REQUEST);
	assert_string_equal(v.ask, who);
}

/* Two agents took every task (their markers); the third sits idle in the
 * room with no marker. Its login from the room makes it a candidate: when
 * the designated reviewer is silent, the idle agent is asked, not the
 * owner. Without it the PR goes to the owner. */
static void test_pr_idle_room_agent(void **state)
{
	(void)state;
	const char *room[] = {"cal-bot", "Bob-Bot", "not a login!", NULL};
	struct wsp_agents known;
	const char *ag[WSP_MAX_AGENTS];
	struct wsp_pr_ask asks[4];
	const char *req[4];
	struct wsp_pr_verdict v;
	/* a PR whose designated reviewer is the marker author */
	struct wsp_pr_facts f = pr_designating("bob-bot");
	candidates(&f, &known, ag, room, 4);
	assert_int_equal(known.n, 3);
	assert_true(wsp_agents_has(&known, "cal-bot"));
	expect_ask(&f, "bob-bot");
	ask_and_wait(&f, asks, req, "bob-bot");
	expect_ask(&f, "cal-bot");
	wsp_pr_decide(&f, &v);
	assert_string_equal(v.d.rule, "review_timeout");
	/* the markers alone: nobody is left after the silent one */
	candidates(&f, &known, ag, NULL, 0);
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_OWNER);

	/* the idle agent designated and asked, then gone from the room (a
	 * frozen process is dropped by the room's heartbeat): the marker
	 * author, designated now and never asked, is the next — not the
	 * owner */
	f = pr_designating("cal-bot");
	candidates(&f, &known, ag, room, 4);
	expect_ask(&f, "cal-bot");
	ask_and_wait(&f, asks, req, "cal-bot");
	candidates(&f, &known, ag, NULL, 0); /* cal-bot left */
	expect_ask(&f, "bob-bot");
	/* bob-bot silent too: the owner */
	ask_and_wait(&f, asks, req, "bob-bot");
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_OWNER);
}

/* The room's part of the set is sorted before it is added: the same
 * logins in any order give the same set, also when it fills up. */
static void test_agents_sorted(void **state)
{
	(void)state;
	const char *fwd[WSP_MAX_AGENTS + 10], *rev[WSP_MAX_AGENTS + 10];
	char names[WSP_MAX_AGENTS + 10][16];
	size_t n = WSP_MAX_AGENTS + 10;
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof names[i], "peer-%02zu", i);
		fwd[i] = names[i];
		rev[n - 1 - i] = names[i];
	}
	struct wsp_agents a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	wsp_agents_add(&a, "me-bot");
	wsp_agents_add(&b, "me-bot");
	wsp_agents_add_sorted(&a, fwd, n);
	wsp_agents_add_sorted(&b, rev, n);
	assert_int_equal(a.n, WSP_MAX_AGENTS);
	assert_int_equal(b.n, WSP_MAX_AGENTS);
	for (size_t i = 0; i < a.n; i++)
		assert_string_equal(a.login[i], b.login[i]);
	assert_string_equal(a.login[1], "peer-00");
	assert_false(wsp_agents_has(&a, "peer-41"));
	/* invalid and NULL entries are skipped, nothing else happens */
	const char *bad[] = {NULL, "", "-x-", "a b"};
	memset(&a, 0, sizeof a);
	wsp_agents_add_sorted(&a, bad, 4);
	assert_int_equal(a.n, 0);
	wsp_agents_add_sorted(&a, NULL, 0);
	assert_int_equal(a.n, 0);
}

/* Whatever the reviewers do not do, the rule reaches the owner in a
 * bounded number of steps: never pending forever. */
static void test_pr_never_pending_forever(void **state)
{
	(void)state;
	const char *many[] = {"ada-bot", "bob-bot", "cal-bot", "dan-bot", "eve-bot"};
	for (size_t n = 1; n <= 5; n++) {
		struct wsp_pr_facts f = facts();
		f.agents = many;
		f.n_agents = n;
		struct wsp_pr_ask asks[8];
		const char *req[8];
		char names[8][PLAN_LOGIN_MAX];
		size_t na = 0;
		struct wsp_pr_verdict v;
		int steps = 0;
		for (;; steps++) {
			assert_true(steps < 20);
			wsp_pr_decide(&f, &v);
			if (v.act == WSP_ACT_OWNER)
				break;
			if (v.act == WSP_ACT_REQUEST) {
				snprintf(names[na], sizeof names[na], "%s", v.ask);
				asks[na] = (struct wsp_pr_ask){names[na], f.now_ms};
				req[na] = names[na];
				na++;
				f.asks = asks;
				f.n_asks = na;
				f.requested = req;
				f.n_requested = na;
				continue;
			}
			assert_int_equal(v.act, WSP_ACT_WAIT);
			f.now_ms += f.review_timeout_ms + 1; /* nobody answers */
		}
		/* every other agent was asked once, in hash order, then the owner */
		assert_int_equal(na, n - 1);
		for (size_t i = 0; i < na; i++)
			for (size_t k = i + 1; k < na; k++)
				assert_string_not_equal(names[i], names[k]);
	}
}

static void test_pr_reviews(void **state)
{
	(void)state;
	char des[PLAN_LOGIN_MAX];
	designated_of(des, sizeof des);
	const char *other = strcmp(des, "bob-bot") == 0 ? "cal-bot" : "bob-bot";
	struct wsp_pr_facts f = facts();
	struct wsp_pr_ask asks[] = {{des, 2000}};
	f.asks = asks;
	f.n_asks = 1;
	struct wsp_pr_review r[] = {{des, "COMMENTED", HEAD, 3000},
	                            {other, "APPROVED", HEAD, 3500},
	                            {des, "APPROVED", OLD, 4000}};
	f.reviews = r;
	f.n_reviews = 3;
	struct wsp_pr_verdict v;
	/* a comment, a peer who was not asked, an approval of an older head:
	 * none of them decides; the reviewer is asked again for this head */
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REQUEST);
	assert_string_equal(v.ask, des);
	/* approved on the head: merged */
	r[2].commit_id = HEAD;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_MERGE);
	assert_string_equal(v.d.rule, "pr_approved");
	assert_ptr_equal(v.decisive, &r[2]);
	assert_string_equal(wsp_pr_state_name(v.state), "approved");
	/* the latest decisive one counts: changes requested after */
	struct wsp_pr_review r2[] = {{des, "APPROVED", HEAD, 3000},
	                             {des, "CHANGES_REQUESTED", HEAD, 4000},
	                             {des, "DISMISSED", HEAD, 5000}};
	f.reviews = r2;
	f.n_reviews = 3;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REVISE);
	assert_int_equal(v.revisions, 1);
	assert_string_equal(v.next, "ada-bot");
	/* a second reviewer asked after a timeout counts as well */
	struct wsp_pr_ask asks2[] = {{des, 2000}, {other, 9000}};
	struct wsp_pr_review r3[] = {{other, "APPROVED", HEAD, 9500}};
	f.asks = asks2;
	f.n_asks = 2;
	f.reviews = r3;
	f.n_reviews = 1;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_MERGE);
	/* handed over: an approval by anyone but the author merges (the
	 * owner's own) */
	struct wsp_pr_review r4[] = {{"the-owner", "APPROVED", HEAD, 9500},
	                             {"ada-bot", "APPROVED", HEAD, 9600}};
	f.reviews = r4;
	f.n_reviews = 2;
	wsp_pr_decide(&f, &v);
	assert_int_not_equal(v.act, WSP_ACT_MERGE);
	f.handed_over = true;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_MERGE);
	assert_string_equal(v.reviewer, "the-owner");
}

static void test_pr_revisions_bound(void **state)
{
	(void)state;
	char des[PLAN_LOGIN_MAX];
	designated_of(des, sizeof des);
	struct wsp_pr_facts f = facts();
	struct wsp_pr_ask asks[] = {{des, 2000}};
	f.asks = asks;
	f.n_asks = 1;
	struct wsp_pr_review r[] = {{des, "CHANGES_REQUESTED", "a1", 3000},
	                            {des, "CHANGES_REQUESTED", "a1", 3100},
	                            {des, "CHANGES_REQUESTED", "b2", 4000},
	                            {des, "CHANGES_REQUESTED", HEAD, 5000}};
	f.reviews = r;
	f.n_reviews = 2;
	f.head_sha = "a1";
	struct wsp_pr_verdict v;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REVISE);
	assert_int_equal(v.revisions, 1); /* two reviews of one head: one revision */
	f.n_reviews = 3;
	f.head_sha = "b2";
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REVISE);
	assert_int_equal(v.revisions, 2);
	/* a third head with changes requested: past WSP_MAX_REVISIONS */
	f.n_reviews = 4;
	f.head_sha = HEAD;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_OWNER);
	assert_string_equal(v.d.rule, "pr_revisions_spent");
	f.handed_over = true;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_WAIT);
	assert_int_equal(v.state, WSP_PR_OWNER);
	/* the bound is the caller's (GA_MAX_REVISIONS) */
	f.handed_over = false;
	f.max_revisions = 5;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REVISE);
	f.max_revisions = 0;
	f.n_reviews = 1;
	f.head_sha = "a1";
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_OWNER);
}

static void test_pr_conflict_and_replaced(void **state)
{
	(void)state;
	char des[PLAN_LOGIN_MAX];
	designated_of(des, sizeof des);
	struct wsp_pr_facts f = facts();
	struct wsp_pr_review r[] = {{des, "APPROVED", HEAD, 3000}};
	f.reviews = r;
	f.n_reviews = 1;
	f.mergeable_state = "dirty";
	struct wsp_pr_verdict v;
	/* a conflict wins over an approval: a merge would be refused */
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_REBUILD);
	assert_string_equal(v.d.rule, "pr_conflict");
	assert_string_equal(wsp_pr_state_name(v.state), "conflict");
	f.attempt = 1 + WSP_MAX_REBUILDS;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_OWNER);
	assert_string_equal(v.d.rule, "pr_rebuilds_spent");
	/* while our run goes on: wait, whatever the PR says */
	f.running = WSP_RUN_REBUILD;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_WAIT);
	assert_string_equal(wsp_pr_state_name(v.state), "rebuilding");
	f.running = WSP_RUN_REVISION;
	wsp_pr_decide(&f, &v);
	assert_string_equal(wsp_pr_state_name(v.state), "revising");
	/* the task has a newer PR: this one is closed */
	f.task_pr = 9;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_CLOSE);
	assert_string_equal(v.d.rule, "pr_replaced");
	f.task_pr = 7;
	f.running = WSP_RUN_NONE;
	f.mergeable_state = "unknown";
	f.attempt = 1;
	wsp_pr_decide(&f, &v);
	assert_int_equal(v.act, WSP_ACT_MERGE);
}

static void test_pr_helpers(void **state)
{
	(void)state;
	assert_int_equal(wsp_pr_plan_of("## Task 2 from plan #4\n---\nPart of #12\n<!-- -->"), 12);
	assert_int_equal(wsp_pr_plan_of("Part of #3 and then Part of #5"), 5);
	assert_int_equal(wsp_pr_plan_of("part of #3"), 0);
	assert_int_equal(wsp_pr_plan_of("Part of #x"), 0);
	assert_int_equal(wsp_pr_plan_of(NULL), 0);
	assert_int_equal(wsp_pr_task_of_branch("task-3-add-page-a2"), 3);
	assert_int_equal(wsp_pr_task_of_branch("task-3"), 0);
	assert_int_equal(wsp_pr_task_of_branch("main"), 0);
	char k1[WSP_KEY_MAX + 1], k2[WSP_KEY_MAX + 1];
	assert_int_equal(wsp_pr_key(k1, sizeof k1, "rq", "Acme", "Web", 7, HEAD, "Bob-Bot"), 0);
	assert_int_equal(wsp_pr_key(k2, sizeof k2, "rq", "acme", "web", 7, HEAD, "bob-bot"), 0);
	assert_string_equal(k1, k2);
	assert_non_null(strstr(k1, "#7@111111111111:bob-bot"));
	assert_int_equal(wsp_pr_key(k2, sizeof k2, "merge", "acme", "web", 7, NULL, NULL), 0);
	assert_null(strchr(k2, '@'));
	assert_int_equal(wsp_pr_key(k2, 20, "merge", "acme", "web", 7, HEAD, NULL), -1);
	assert_false(wsp_review_substantive(" LGTM! \n"));
	assert_false(wsp_review_substantive("Looks good"));
	assert_false(wsp_review_substantive("lgtm\n\n<!-- ga:key=x -->"));
	assert_false(wsp_review_substantive(""));
	assert_true(wsp_review_substantive("lgtm, but the title needs a test"));
	/* A conflicting PR is rebuilt by its author while the task is its
	 * own, also when only the claim has been read so far. */
	static const char *two =
	        "# [PLAN] Two\n\n## Goal\nTwo.\n\n## Tasks\n\n"
	        "### Task 1: One\n**Status:** pending\n**Assignee:** (empty if unclaimed)\n"
	        "**Dependencies:** none\n\n**Description:**\nOne.\n\n---\n\n"
	        "### Task 2: Two\n**Status:** pending\n**Assignee:** (empty if unclaimed)\n"
	        "**Dependencies:** none\n\n**Description:**\nTwo.\n";
	struct plan pl = {0};
	struct ga_err pe = {{0}};
	assert_int_equal(plan_parse(NULL, two, &pl, &pe), 0);
	struct plan_task_state ts[2] = {{.task = 1, .status = PLAN_CLAIMED},
	                                {.task = 2, .status = PLAN_IN_PROGRESS}};
	snprintf(ts[0].assignee, sizeof ts[0].assignee, "ada-bot");
	snprintf(ts[1].assignee, sizeof ts[1].assignee, "bob-bot");
	struct decision rd;
	assert_true(wsp_rebuild_allowed(&pl, ts, 2, 1, "Ada-Bot", &rd));
	assert_false(wsp_rebuild_allowed(&pl, ts, 2, 2, "ada-bot", &rd)); /* bob's */
	assert_true(wsp_rebuild_allowed(&pl, ts, 2, 2, "bob-bot", &rd));
	ts[1].status = PLAN_PENDING;
	ts[1].assignee[0] = '\0';
	assert_true(wsp_rebuild_allowed(&pl, ts, 2, 2, "ada-bot", &rd)); /* claimable again */
	ts[1].failures = 3;
	assert_false(wsp_rebuild_allowed(&pl, ts, 2, 2, "ada-bot", &rd)); /* failed too often */
	plan_free(&pl);
	/* What a follow-up issue takes: work left for later. */
	assert_false(wsp_review_followup("APPROVED", "Clean change; the page renders as planned.",
	                                 false));
	assert_true(wsp_review_followup("APPROVED", "Approved. Consider a test for the empty file.",
	                                false));
	assert_true(wsp_review_followup("APPROVED", "Fine. Does the link work on mobile?", false));
	assert_false(wsp_review_followup("APPROVED", "LGTM", false));
	assert_false(wsp_review_followup("CHANGES_REQUESTED", "The file needs a heading.", true));
	assert_true(wsp_review_followup("CHANGES_REQUESTED", "The file needs a heading.", false));
	assert_true(wsp_review_followup("COMMENTED", "The layout breaks below 400px.", false));
	assert_false(wsp_review_followup("COMMENTED", " looks good ", false));
	assert_false(wsp_review_suggests("Butterfly section reads well")); /* whole words */
	assert_false(wsp_review_suggests("Good <!-- ga:key=x? -->"));
	assert_true(wsp_review_suggests("Good, though the title could be shorter"));
	assert_string_equal(wsp_pr_act_name(WSP_ACT_REBUILD), "rebuild");
	assert_string_equal(wsp_pr_state_name(WSP_PR_OWNER), "owner");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pr_first_request),
	        cmocka_unit_test(test_pr_wait_and_timeout),
	        cmocka_unit_test(test_pr_never_pending_forever),
	        cmocka_unit_test(test_pr_idle_room_agent),
	        cmocka_unit_test(test_agents_sorted),
	        cmocka_unit_test(test_pr_reviews),
	        cmocka_unit_test(test_pr_revisions_bound),
	        cmocka_unit_test(test_pr_conflict_and_replaced),
	        cmocka_unit_test(test_pr_helpers),
	        cmocka_unit_test(test_reviewer),
	        cmocka_unit_test(test_agents_and_keys),
	        cmocka_unit_test(test_texts),
	        cmocka_unit_test(test_duplicates),
	        cmocka_unit_test(test_lapsed),
	        cmocka_unit_test(test_watchlist),
	        cmocka_unit_test(test_discovery),
	        cmocka_unit_test(test_unwatched),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
