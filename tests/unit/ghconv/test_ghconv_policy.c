/*
 * GitHub conversations, the pure policy (modules/ghconv/policy.h): the reply
 * decision of §4.3 as a table of threads, effective peers (§4.4), the chain
 * marker, the stagger (§4.7), duplicate comments (§4.6), the reply's
 * cleaning (seed 004), notifications, the prompt, the seen set and the
 * cursor.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "modules/ghconv/policy.h"

#define SELF "ada-bot"

/* A thread from a compact spec: "author:body" for the issue, then
 * "login:body" per comment (created one minute apart). */
static void thread(struct ghconv_thread *t, bool closed, const char *issue,
                   const char *const *comments)
{
	char author[64];
	const char *colon = strchr(issue, ':');
	snprintf(author, sizeof author, "%.*s", (int)(colon - issue), issue);
	cJSON *is = cJSON_CreateObject();
	cJSON_AddNumberToObject(is, "number", 7);
	cJSON_AddStringToObject(is, "title", "Flaky test");
	cJSON_AddStringToObject(is, "body", colon + 1);
	cJSON_AddStringToObject(is, "state", closed ? "closed" : "open");
	cJSON_AddStringToObject(is, "html_url", "https://github.com/acme/widgets/issues/7");
	cJSON_AddStringToObject(is, "created_at", "2026-11-23T10:00:00Z");
	cJSON *u = cJSON_AddObjectToObject(is, "user");
	cJSON_AddStringToObject(u, "login", author);
	cJSON_AddStringToObject(u, "type", "User");
	cJSON *arr = cJSON_CreateArray();
	for (int i = 0; comments && comments[i]; i++) {
		const char *c = strchr(comments[i], ':');
		char login[64], at[32];
		snprintf(login, sizeof login, "%.*s", (int)(c - comments[i]), comments[i]);
		snprintf(at, sizeof at, "2026-11-23T10:%02d:00Z", i + 1);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", 100 + i);
		cJSON_AddStringToObject(o, "body", c + 1);
		cJSON_AddStringToObject(o, "created_at", at);
		cJSON *cu = cJSON_AddObjectToObject(o, "user");
		cJSON_AddStringToObject(cu, "login", login);
		cJSON_AddStringToObject(cu, "type", strstr(login, "[bot]") ? "Bot" : "User");
		cJSON_AddItemToArray(arr, o);
	}
	struct ga_err err = {{0}};
	assert_int_equal(ghconv_thread_parse("acme", "widgets", 7, is, arr, t, &err), 0);
	cJSON_Delete(is);
	cJSON_Delete(arr);
}

struct decide_case {
	const char *name;
	bool closed;
	const char *issue;
	const char *comments[8];
	const char *registered[4];
	struct ghconv_opts opts;
	bool respond;
	const char *rule;
	enum ghconv_urgency urgency;
	long trigger; /* -1 description, -2 don't care */
};

static const struct decide_case cases[] = {
        {"closed", true, "alice:@ada-bot look", {NULL}, {NULL}, {0}, false, "closed", 0, -2},
        {"latest is ours, even for the owner",
         false,
         "alice:@ada-bot look",
         {"ada-bot:on it", NULL},
         {NULL},
         {.owner_request = true},
         false,
         "awaiting_others",
         0,
         -2},
        {"owner request",
         false,
         "alice:nothing for you",
         {"bob:hm", NULL},
         {NULL},
         {.owner_request = true},
         true,
         "owner_request",
         GHCONV_URGENCY_HIGH,
         0},
        {"only peers after us, no mention: wait for the author",
         false,
         "alice:@ada-bot look",
         {"ada-bot:first", "bea-bot:second <!-- ga:chain=2 key=k -->", NULL},
         {NULL},
         {0},
         false,
         "waiting_for_author",
         0,
         -2},
        {"a peer after us mentions us: follow-up on it",
         false,
         "alice:@ada-bot look",
         {"ada-bot:first", "bea-bot:@ada-bot what about X?", NULL},
         {NULL},
         {0},
         true,
         "follow_up",
         GHCONV_URGENCY_MEDIUM,
         1},
        {"a person after us: follow-up on the person",
         false,
         "alice:@ada-bot look",
         {"ada-bot:first", "carol:thanks, but why?", "bea-bot:agree", NULL},
         {"bea-bot"},
         {0},
         true,
         "follow_up",
         GHCONV_URGENCY_MEDIUM,
         1},
        {"three later comments: high",
         false,
         "alice:@ada-bot look",
         {"ada-bot:first", "alice:a", "alice:b", "alice:c", NULL},
         {"bea-bot"},
         {0},
         true,
         "follow_up",
         GHCONV_URGENCY_HIGH,
         3},
        {"three of ours and nobody asks again",
         false,
         "alice:@ada-bot look",
         {"ada-bot:1", "alice:x", "ada-bot:2", "alice:y", "ada-bot:3", "alice:z", NULL},
         {"bea-bot"},
         {0},
         false,
         "said_enough",
         0,
         -2},
        {"derived peers: the author who commented is a peer, so only a mention brings us "
         "back",
         false,
         "alice:@ada-bot look",
         {"ada-bot:first", "alice:and?", NULL},
         {NULL},
         {0},
         false,
         "waiting_for_author",
         0,
         -2},
        {"three of ours and a person asks again",
         false,
         "alice:@ada-bot look",
         {"ada-bot:1", "alice:x", "ada-bot:2", "alice:y", "ada-bot:3", "alice:@ada-bot z?", NULL},
         {"bea-bot"},
         {0},
         true,
         "follow_up",
         GHCONV_URGENCY_MEDIUM,
         5},
        {"mentioned in a recent comment",
         false,
         "alice:a question",
         {"bob:cc @Ada-Bot please", "carol:+1", NULL},
         {NULL},
         {0},
         true,
         "mentioned",
         GHCONV_URGENCY_HIGH,
         0},
        {"a mention of a longer login is not ours",
         false,
         "alice:ask @ada-bot2",
         {"bob:@ada-botany fans?", NULL},
         {NULL},
         {0},
         false,
         "not_mentioned",
         0,
         -2},
        {"mentioned in the description",
         false,
         "alice:@ada-bot what do you think?",
         {NULL},
         {NULL},
         {0},
         true,
         "mentioned_in_body",
         GHCONV_URGENCY_HIGH,
         -1},
        {"mentioned in the description, two peers answered",
         false,
         "alice:@ada-bot what do you think?",
         {"bea-bot:x", "cy-bot:y", NULL},
         {"bea-bot", "cy-bot"},
         {0},
         true,
         "mentioned_in_body",
         GHCONV_URGENCY_LOW,
         -1},
        {"workspace issue",
         false,
         "alice:todo",
         {NULL},
         {NULL},
         {.workspace_issue = true},
         true,
         "workspace_issue",
         GHCONV_URGENCY_LOW,
         -1},
        {"workspace PR review",
         false,
         "alice:todo",
         {NULL},
         {NULL},
         {.workspace_pr_review = true},
         true,
         "workspace_pr_review",
         GHCONV_URGENCY_LOW,
         -1},
        {"not mentioned",
         false,
         "alice:hello world",
         {"bob:hi", NULL},
         {NULL},
         {0},
         false,
         "not_mentioned",
         0,
         -2},
};

static void test_decide_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct decide_case *c = &cases[i];
		struct ghconv_thread t;
		thread(&t, c->closed, c->issue, c->comments);
		size_t nreg = 0;
		while (nreg < 4 && c->registered[nreg])
			nreg++;
		struct ghconv_peers p;
		ghconv_effective_peers(&t, SELF, c->registered, nreg, &p);
		struct ghconv_verdict v;
		ghconv_decide(&t, SELF, &p, &c->opts, &v);
		if (v.respond != c->respond || strcmp(v.rule, c->rule) != 0 ||
		    (c->respond && v.urgency != c->urgency) ||
		    (c->respond && c->trigger != -2 && v.trigger != c->trigger))
			fail_msg("case '%s': respond %d rule %s urgency %s trigger %ld (%s); "
			         "expected %d %s %s %ld",
			         c->name, v.respond, v.rule, ghconv_urgency_name(v.urgency),
			         v.trigger, v.reason, c->respond, c->rule,
			         ghconv_urgency_name(c->urgency), c->trigger);
		assert_true(v.reason[0] != '\0');
		ghconv_thread_free(&t);
	}
}

static void test_effective_peers(void **state)
{
	(void)state;
	struct ghconv_thread t;
	struct ghconv_peers p;
	/* derived: commenters but us; the author only when they commented */
	thread(&t, false, "alice:q", (const char *const[]){"bob:a", "ada-bot:b", "Bob:c", NULL});
	ghconv_effective_peers(&t, SELF, NULL, 0, &p);
	assert_false(p.registered);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.login[0], "bob");
	ghconv_thread_free(&t);
	thread(&t, false, "alice:q", (const char *const[]){"bob:a", "alice:b", NULL});
	ghconv_effective_peers(&t, SELF, NULL, 0, &p);
	assert_int_equal(p.n, 2);
	assert_true(ghconv_peers_has(&p, "ALICE"));
	/* registered wins; Bluesky handles (with '.') and ourselves are left out */
	const char *reg[] = {"bea-bot", "ada.bsky.social", "ada-bot"};
	ghconv_effective_peers(&t, SELF, reg, 3, &p);
	assert_true(p.registered);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.login[0], "bea-bot");
	/* only handles registered: derived again */
	const char *handles[] = {"x.bsky.social"};
	ghconv_effective_peers(&t, SELF, handles, 1, &p);
	assert_false(p.registered);
	assert_int_equal(p.n, 2);
	ghconv_thread_free(&t);
}

static void test_marker_and_agents(void **state)
{
	(void)state;
	int64_t ch = -1;
	assert_int_equal(ghconv_marker_chain("hi\n\n<!-- ga:chain=3 key=abc -->", &ch), 1);
	assert_int_equal(ch, 3);
	assert_int_equal(ghconv_marker_chain("<!-- ga:chain=0 key=x -->", &ch), 1);
	assert_int_equal(ch, 0);
	assert_int_equal(ghconv_marker_chain("<!-- ga:key=abc -->", &ch), 0);
	assert_int_equal(ghconv_marker_chain("<!-- ga:chain=x -->", &ch), 0);
	assert_int_equal(ghconv_marker_chain("<!-- ga:chain=99999999999 -->", &ch), 0);
	assert_int_equal(ghconv_marker_chain(NULL, &ch), 0);
	char *s = ghconv_strip_markers("Looks good.\n\n<!-- ga:chain=2 key=k -->");
	assert_string_equal(s, "Looks good.");
	free(s);
	s = ghconv_strip_markers("a <!-- ga:x --> b <!-- other -->");
	assert_string_equal(s, "a  b <!-- other -->");
	free(s);

	struct ghconv_peers reg = {.n = 1, .registered = true};
	snprintf(reg.login[0], sizeof reg.login[0], "bea-bot");
	struct ghconv_comment c = {.login = "bob", .body = "hi"};
	assert_false(ghconv_is_agent(&c, SELF, &reg));
	c.body = "hi <!-- ga:chain=1 key=k -->";
	assert_true(ghconv_is_agent(&c, SELF, &reg));
	c = (struct ghconv_comment){.login = "ADA-BOT", .body = ""};
	assert_true(ghconv_is_agent(&c, SELF, NULL));
	c = (struct ghconv_comment){.login = "dependabot[bot]", .body = "", .bot_account = true};
	assert_true(ghconv_is_agent(&c, SELF, NULL));
	c = (struct ghconv_comment){.login = "bea-bot", .body = "plain"};
	assert_true(ghconv_is_agent(&c, SELF, &reg));
	/* a derived "peer" (a person who commented) is not an agent */
	struct ghconv_peers derived = reg;
	derived.registered = false;
	assert_false(ghconv_is_agent(&c, SELF, &derived));
}

static void test_stagger(void **state)
{
	(void)state;
	int64_t a = ghconv_stagger_ms("Ada", "acme/widgets#7", 15000, 75000);
	assert_true(a >= 15000 && a < 90000);
	assert_int_equal(a, ghconv_stagger_ms("Ada", "acme/widgets#7", 15000, 75000));
	/* another agent, or another thread, gets (almost surely) another delay */
	int differ = 0;
	char key[64];
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof key, "acme/widgets#%d", i);
		differ += ghconv_stagger_ms("Ada", key, 0, 1000000) !=
		          ghconv_stagger_ms("Bea", key, 0, 1000000);
	}
	assert_true(differ >= 19);
	assert_int_equal(ghconv_stagger_ms("Ada", "x", 500, 0), 500);
}

static void test_normalize_and_duplicates(void **state)
{
	(void)state;
	char *n = ghconv_normalize("  Hello @bea-bot,   see https://x.io/a and docs.example.com/p "
	                           "NOW\n\n<!-- ga:chain=1 key=abc -->");
	assert_string_equal(n, "hello , see and now");
	free(n);
	char long_body[600];
	memset(long_body, 'a', sizeof long_body - 1);
	long_body[sizeof long_body - 1] = '\0';
	n = ghconv_normalize(long_body);
	assert_int_equal(strlen(n), sizeof long_body - 1);
	/* a common 500-character header does not make two comments the same */
	long_body[550] = 'b';
	char *n2 = ghconv_normalize(long_body);
	assert_string_not_equal(n, n2);
	free(n2);
	free(n);
	struct ghconv_thread t;
	thread(&t, false, "alice:@ada-bot ?",
	       (const char *const[]){"ada-bot:Same answer @alice <!-- ga:chain=1 key=a -->",
	                             "bob:hm", "ada-bot:same   ANSWER <!-- ga:chain=1 key=b -->",
	                             "ada-bot:different", "bea-bot:Same answer",
	                             "ada-bot:same answer https://example.com", NULL});
	int64_t ids[8];
	size_t k = ghconv_duplicates(&t, SELF, ids, 8);
	assert_int_equal(k, 2);
	assert_int_equal(ids[0], 102);
	assert_int_equal(ids[1], 105);
	assert_int_equal(ghconv_duplicates(&t, SELF, ids, 1), 1);
	ghconv_thread_free(&t);
	thread(&t, false, "alice:x", (const char *const[]){"ada-bot:one", NULL});
	assert_int_equal(ghconv_duplicates(&t, SELF, ids, 8), 0);
	ghconv_thread_free(&t);
}

static void test_clean_reply(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
		bool names_self;
	} t[] = {
	        {"The fix is in #12.\n\n— Ada", "The fix is in #12.", false},
	        {"The fix is in #12.\n-- ada-bot", "The fix is in #12.", false},
	        {"The fix is in #12.\n\nCheers,\nAda", "The fix is in #12.", false},
	        {"The fix is in #12.\n\nBest regards, Ada (an agent)", "The fix is in #12.", false},
	        {"@ada-bot here: the fix is in #12.", "here: the fix is in #12.", false},
	        {"Hi, I'm Ada. The fix is in #12.", "Hi, I'm Ada. The fix is in #12.", true},
	        {"As ada-bot I think so.", "As ada-bot I think so.", true},
	        {"Adaptive retries fix it.", "Adaptive retries fix it.", false},
	        {"— Ada", NULL, false},
	        {"  \n ", NULL, false},
	        {"Thanks @alice, merged.", "Thanks @alice, merged.", false},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		bool ns = false;
		char *o = ghconv_clean_reply(t[i].in, "Ada", SELF, &ns);
		if ((!o) != (!t[i].out) || (o && strcmp(o, t[i].out) != 0) || ns != t[i].names_self)
			fail_msg("clean_reply('%s') = '%s' names_self %d; expected '%s' %d",
			         t[i].in, o ? o : "(null)", ns, t[i].out ? t[i].out : "(null)",
			         t[i].names_self);
		free(o);
	}
}

static void test_notifications(void **state)
{
	(void)state;
	const char *base = "http://127.0.0.1:9";
	cJSON *n = cJSON_Parse(
	        "{\"id\":\"42\",\"reason\":\"mention\",\"updated_at\":\"2026-11-23T10:00:00Z\","
	        "\"subject\":{\"url\":\"http://127.0.0.1:9/repos/acme/widgets/issues/7\","
	        "\"type\":\"Issue\"}}");
	struct ghconv_notif nf;
	struct ga_err err = {{0}};
	assert_int_equal(ghconv_notif_parse(n, base, &nf, &err), 0);
	assert_true(nf.actionable);
	assert_string_equal(nf.id, "42");
	assert_true(nf.unread);
	assert_string_equal(nf.ref.owner, "acme");
	assert_int_equal(nf.ref.number, 7);
	assert_true(nf.updated_ms > 0);
	cJSON_Delete(n);
	n = cJSON_Parse("{\"id\":\"43\",\"reason\":\"subscribed\",\"subject\":{\"url\":"
	                "\"http://127.0.0.1:9/repos/acme/widgets/issues/7\"}}");
	assert_int_equal(ghconv_notif_parse(n, base, &nf, &err), 0);
	assert_false(nf.actionable);
	assert_non_null(strstr(nf.why, "subscribed"));
	cJSON_Delete(n);
	n = cJSON_Parse(
	        "{\"id\":\"44\",\"reason\":\"comment\",\"unread\":false,\"subject\":{\"url\":"
	        "\"http://127.0.0.1:9/repos/acme/widgets/pulls/8\",\"type\":"
	        "\"PullRequest\"}}");
	assert_int_equal(ghconv_notif_parse(n, base, &nf, &err), 0);
	assert_true(nf.actionable);
	assert_int_equal(nf.ref.kind, GH_REF_PULL);
	assert_false(nf.unread);
	cJSON_Delete(n);
	n = cJSON_Parse("{\"id\":\"45\",\"reason\":\"mention\",\"subject\":{\"url\":"
	                "\"http://127.0.0.1:9/repos/acme/widgets/commits/abc\"}}");
	assert_int_equal(ghconv_notif_parse(n, base, &nf, &err), 0);
	assert_false(nf.actionable);
	cJSON_Delete(n);
	n = cJSON_Parse("{\"id\":\"4x5\",\"reason\":\"mention\"}");
	assert_int_equal(ghconv_notif_parse(n, base, &nf, &err), -1);
	assert_non_null(strstr(err.msg, "id"));
	cJSON_Delete(n);
	assert_int_equal(ghconv_notif_parse(NULL, base, &nf, &err), -1);
	const char *ok[] = {"mention", "author", "comment", "review_requested", "assign"};
	for (size_t i = 0; i < 5; i++)
		assert_true(ghconv_reason_actionable(ok[i]));
	assert_false(ghconv_reason_actionable("state_change"));
	assert_false(ghconv_reason_actionable(NULL));
}

static void test_prompt(void **state)
{
	(void)state;
	struct ghconv_thread t;
	thread(&t, false, "alice:@ada-bot why does it flake?",
	       (const char *const[]){"bea-bot:timing <!-- ga:chain=1 key=k -->", "carol:+1", NULL});
	struct ghconv_peers p;
	const char *reg[] = {"bea-bot"};
	ghconv_effective_peers(&t, SELF, reg, 1, &p);
	struct ghconv_verdict v;
	ghconv_decide(&t, SELF, &p, NULL, &v);
	char *s = ghconv_prompt(&t, SELF, &p, &v, "a GitHub notification (reason: mention)");
	assert_non_null(strstr(s, "Issue #7 in acme/widgets: Flaky test"));
	assert_non_null(strstr(s, "why does it flake?"));
	assert_non_null(strstr(s, "Peer contributions already in this thread"));
	assert_non_null(strstr(s, "- bea-bot: timing\n"));
	assert_null(strstr(s, "ga:chain"));
	assert_non_null(strstr(s, "never sign"));
	free(s);
	ghconv_thread_free(&t);
	/* more than 15 comments: the earlier ones are counted, not shown */
	const char *many[21];
	char bodies[20][32];
	for (int i = 0; i < 20; i++) {
		snprintf(bodies[i], sizeof bodies[i], "bob:comment number %d", i);
		many[i] = bodies[i];
	}
	many[20] = NULL;
	thread(&t, false, "alice:x", many);
	ghconv_effective_peers(&t, SELF, NULL, 0, &p);
	ghconv_decide(&t, SELF, &p, NULL, &v);
	s = ghconv_prompt(&t, SELF, &p, &v, NULL);
	assert_non_null(strstr(s, "5 earlier comment(s) not shown"));
	assert_null(strstr(s, "[5] bob"));
	assert_non_null(strstr(s, "[6] bob"));
	assert_non_null(strstr(s, "[20] bob"));
	free(s);
	ghconv_thread_free(&t);
}

static void test_thread_parse_bad_input(void **state)
{
	(void)state;
	struct ghconv_thread t;
	struct ga_err err = {{0}};
	cJSON *arr = cJSON_CreateArray();
	assert_int_equal(ghconv_thread_parse("o", "r", 1, arr, NULL, &t, &err), -1);
	assert_non_null(strstr(err.msg, "o/r#1"));
	/* wrong types inside are tolerated: missing fields read as empty */
	cJSON *is =
	        cJSON_Parse("{\"title\":3,\"user\":\"x\",\"labels\":[{\"name\":\"Finished\"}]}");
	cJSON *cs = cJSON_Parse("[1, {\"body\":null}, {\"user\":{\"login\":\"bob\"},"
	                        "\"body\":\"hi\"}]");
	assert_int_equal(ghconv_thread_parse("o", "r", 1, is, cs, &t, &err), 0);
	assert_true(t.finished);
	assert_string_equal(t.title, "");
	assert_int_equal(t.n, 2);
	assert_string_equal(t.comments[1].login, "bob");
	struct ghconv_peers p;
	ghconv_effective_peers(&t, SELF, NULL, 0, &p);
	struct ghconv_verdict v;
	ghconv_decide(&t, SELF, &p, NULL, &v);
	assert_false(v.respond);
	assert_string_equal(v.rule, "finished");
	ghconv_thread_free(&t);
	cJSON_Delete(is);
	cJSON_Delete(cs);
	cJSON_Delete(arr);
}

static void test_seen_and_since(void **state)
{
	(void)state;
	struct ghconv_seen *s = calloc(1, sizeof *s);
	ghconv_seen_add(s, "1", 100);
	ghconv_seen_add(s, "1", 100);
	assert_int_equal(s->n, 1);
	assert_true(ghconv_seen_has(s, "1", 100));
	assert_false(ghconv_seen_has(s, "1", 200)); /* updated since: not handled */
	for (int i = 0; i < GHCONV_SEEN_MAX + 10; i++) {
		char id[16];
		snprintf(id, sizeof id, "%d", 1000 + i);
		ghconv_seen_add(s, id, i);
	}
	assert_int_equal(s->n, GHCONV_SEEN_MAX);
	assert_false(ghconv_seen_has(s, "1", 100)); /* the oldest went first */
	assert_false(ghconv_seen_has(s, "1009", 9));
	assert_true(ghconv_seen_has(s, "1010", 10));
	cJSON *j = ghconv_seen_to_json(s);
	assert_int_equal(cJSON_GetArraySize(j), GHCONV_SEEN_MAX);
	struct ghconv_seen *r = calloc(1, sizeof *r);
	cJSON_AddItemToArray(j, cJSON_CreateString("junk"));
	ghconv_seen_from_json(r, j);
	assert_int_equal(r->n, GHCONV_SEEN_MAX);
	assert_true(ghconv_seen_has(r, "1010", 10));
	assert_true(ghconv_seen_has(r, "1265", 265));
	cJSON_Delete(j);
	free(s);
	free(r);

	/* the decided issue states: one per issue, any case of its name */
	char i1[GHCONV_ISSUE_ID_LEN + 1], i2[GHCONV_ISSUE_ID_LEN + 1], i3[GHCONV_ISSUE_ID_LEN + 1];
	ghconv_issue_id("acme", "widgets", 1, i1);
	ghconv_issue_id("ACME", "Widgets", 1, i2);
	ghconv_issue_id("acme", "widgets", 11, i3);
	assert_int_equal(strlen(i1), GHCONV_ISSUE_ID_LEN);
	assert_true(strlen(i1) < GHCONV_NOTIF_ID_MAX);
	assert_string_equal(i1, i2);
	assert_string_not_equal(i1, i3);
	assert_true(strncmp(i1, "i:", 2) == 0);
	struct ghconv_seen *is = calloc(1, sizeof *is);
	ghconv_seen_put(is, i1, 100);
	ghconv_seen_put(is, i3, 100);
	ghconv_seen_put(is, i1, 200); /* changed: the new state replaces the old */
	assert_int_equal(is->n, 2);
	assert_true(ghconv_seen_has(is, i1, 200));
	assert_false(ghconv_seen_has(is, i1, 100));
	assert_true(ghconv_seen_has(is, i3, 100));
	free(is);

	int64_t up[] = {300, 100, 200, 0};
	bool h1[] = {true, true, true, true};
	assert_int_equal(ghconv_next_since(50, up, h1, 4), 300);
	bool h2[] = {true, false, true, true};
	assert_int_equal(ghconv_next_since(50, up, h2, 4), 100);
	assert_int_equal(ghconv_next_since(500, up, h1, 4), 500);
	assert_int_equal(ghconv_next_since(7, NULL, NULL, 0), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_decide_table),
	        cmocka_unit_test(test_effective_peers),
	        cmocka_unit_test(test_marker_and_agents),
	        cmocka_unit_test(test_stagger),
	        cmocka_unit_test(test_normalize_and_duplicates),
	        cmocka_unit_test(test_clean_reply),
	        cmocka_unit_test(test_notifications),
	        cmocka_unit_test(test_prompt),
	        cmocka_unit_test(test_thread_parse_bad_input),
	        cmocka_unit_test(test_seen_and_since),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
