/*
 * The Bluesky follow-up of a kept promise end to end (runtime-bluesky.md
 * §6.12, modules/fulfil bluesky_followup), black-box: the real
 * general-agent binary with GitHub and Bluesky configured, against the
 * GitHub fake and the Bluesky fake, both in this process (their state
 * outlives the agent's restart). No model: the follow-up needs none.
 * Commitments are written into memory/commitments.jsonl the way the ledger
 * writes them (source "bluesky", the thread the promise was made in).
 *
 *   - a create_issue promised under bob's reply (a thread: bob's post, bob's
 *     reply to it) becomes one issue on GitHub and then exactly one reply by
 *     the agent (its only post naming the issue; the identity link it posts
 *     at start is not a reply): parent bob's reply, root bob's
 *     post (the commitment's sourceThreadUri/Cid and sourceRootUri/Cid),
 *     its text the voice phrase of <home>/voice-phrases.json with the
 *     issue's URL; it went through outbound (one allowed
 *     bluesky:reply:<bob's DID> in the send audit) under the journal key
 *     say:done:<id>; a restart of the agent posts nothing more and creates
 *     no second issue;
 *   - without a voice file, without sourceRootUri: the default phrase
 *     ("Done — here it is: <url>"), root = parent = the post it was promised
 *     under; a comment_issue promised on Bluesky is made on GitHub but not
 *     followed up there; a create_issue whose post is not recorded neither:
 *     one reply in all, and the decision log says why for the other two.
 *
 * Timing: the fulfilment cycle runs every 0.3 s (GA_FULFIL_INTERVAL_MS),
 * the Bluesky and GitHub spacings are tens of ms; waits poll until true or
 * their timeout.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "modules/reflection/voice.h"
#include "proc.h"
#include "support_wait.h"
#include "tests/fakes/bsky/bskyfake.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/integration/bluesky/bsky_agent.h"

#define W        20000
#define PASSWORD "app-pass-1234-abcd"
#define TOKEN    "good-token-0123456789"

/* ---- the world: both fakes ------------------------------------------------------------ */

struct world {
	struct bskyfake *bs;
	struct ghfake *gh;
	char agent_did[BSKYFAKE_DID_MAX];
	char bob_did[BSKYFAKE_DID_MAX];
	/* bob's post and bob's reply to it */
	char root_uri[BSKYFAKE_URI_MAX], root_cid[BSKYFAKE_CID_MAX];
	char reply_uri[BSKYFAKE_URI_MAX], reply_cid[BSKYFAKE_CID_MAX];
};

static void world_new(struct world *w)
{
	char err[256];
	w->bs = bskyfake_new(err, sizeof err);
	if (!w->bs)
		fail_msg("bskyfake: %s", err);
	w->gh = ghfake_new(err, sizeof err);
	if (!w->gh)
		fail_msg("ghfake: %s", err);
	ghfake_add_token(w->gh, TOKEN, "ada-bot");
	ghfake_add_repo(w->gh, "acme", "widgets", 0);
	bskyfake_add_account(w->bs, "agent.test", PASSWORD, w->agent_did);
	bskyfake_add_account(w->bs, "bob.test", "bob-pass", w->bob_did);
	assert_int_equal(bskyfake_post(w->bs, "bob.test", "The widget parser chokes on tabs.", NULL,
	                               w->root_uri, w->root_cid),
	                 0);
	assert_int_equal(bskyfake_post(w->bs, "bob.test", "And on CRLF line endings too, it seems.",
	                               w->root_uri, w->reply_uri, w->reply_cid),
	                 0);
	/* the fake threads bob's reply under his post: root != parent */
	cJSON *v = bskyfake_record(w->bs, w->reply_uri);
	assert_non_null(v);
	const cJSON *root = cJSON_GetObjectItem(cJSON_GetObjectItem(v, "reply"), "root");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(root, "uri")), w->root_uri);
	cJSON_Delete(v);
	assert_string_not_equal(w->root_uri, w->reply_uri);
}

static void world_free(struct world *w)
{
	bskyfake_free(w->bs);
	ghfake_free(w->gh);
}

/* The posts of handle (a cJSON array, newest first; caller frees). */
static cJSON *posts_of(struct world *w, const char *handle)
{
	cJSON *p = bskyfake_records(w->bs, handle, "app.bsky.feed.post");
	if (!p)
		fail_msg("bskyfake: no account %s", handle);
	return p;
}

/* The agent's replies (posts with reply refs), newest first (caller
 * frees). Its top-level posts are not counted: with GitHub and Bluesky
 * both configured it posts its identity link at start. */
static cJSON *agent_replies(struct world *w)
{
	cJSON *all = posts_of(w, "agent.test");
	cJSON *out = cJSON_CreateArray();
	const cJSON *r;
	cJSON_ArrayForEach(r, all)
	{
		if (cJSON_GetObjectItem(cJSON_GetObjectItem(r, "value"), "reply"))
			cJSON_AddItemToArray(out, cJSON_Duplicate(r, true));
	}
	cJSON_Delete(all);
	return out;
}

/* The agent's posts whose text contains s, replies or not. */
static int agent_posts_with(struct world *w, const char *s)
{
	cJSON *all = posts_of(w, "agent.test");
	int n = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, all) n += strstr(bsky_jstr(r, "value", "text", NULL), s) != NULL;
	cJSON_Delete(all);
	return n;
}

/* ---- the ledger ----------------------------------------------------------------------- */

/* A pending commitment line as ledger_add writes it, source "bluesky"; id
 * out. */
static void commit_line(char *buf, size_t cap, char id[64], int n, const char *action,
                        const char *params)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	char iso[32];
	strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	snprintf(id, 64, "commitment-%lld-%016x", (long long)t * 1000 + n,
	         0xb5c00000u + (unsigned)n);
	snprintf(buf, cap,
	         "{\"id\":\"%s\",\"createdAt\":\"%s\",\"action\":\"%s\",\"source\":\"bluesky\","
	         "\"status\":\"pending\",\"params\":%s}\n",
	         id, iso, action, params);
}

/* The current status of id (the last status line wins, as the ledger
 * replays it); "" when the id is not there. */
static void ledger_status(const char *home, const char *id, char out[16])
{
	out[0] = '\0';
	char *log = home_read(home, "memory/commitments.jsonl");
	for (char *line = log ? strtok(log, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		const char *lid = cJSON_GetStringValue(cJSON_GetObjectItem(j, "id"));
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(j, "status"));
		if (lid && s && strcmp(lid, id) == 0)
			snprintf(out, 16, "%s", s);
		cJSON_Delete(j);
	}
	free(log);
}

/* Occurrences of needle in home/name. */
static int count_in(const char *home, const char *name, const char *needle)
{
	int n = 0;
	char *text = home_read(home, name);
	for (char *p = text ? strstr(text, needle) : NULL; p; p = strstr(p + 1, needle))
		n++;
	free(text);
	return n;
}

/* Lines of memory/send_audit.jsonl with this target and verdict. */
static int audit_count(const char *home, const char *target, const char *verdict)
{
	char *log = home_read(home, "memory/send_audit.jsonl");
	int n = 0;
	for (char *line = log ? strtok(log, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		cJSON *e = cJSON_Parse(line);
		n += strcmp(bsky_jstr(e, "target", NULL, NULL), target) == 0 &&
		     strcmp(bsky_jstr(e, "verdict", NULL, NULL), verdict) == 0;
		cJSON_Delete(e);
	}
	free(log);
	return n;
}

/* ---- the agent ------------------------------------------------------------------------ */

struct agent {
	struct proc p;
	char *home;
	char bsky_env[200];
	char gh_env[200];
};

static void dump(struct agent *a)
{
	char *e = proc_stderr(&a->p), *o = proc_stdout(&a->p);
	fprintf(stderr, "---- agent stderr ----\n%s\n---- agent stdout ----\n%s\n", e ? e : "",
	        o ? o : "");
	free(e);
	free(o);
	char *log = home_read(a->home, "memory/decisions.jsonl");
	fprintf(stderr, "---- decisions.jsonl ----\n%s\n", log ? log : "(none)");
	free(log);
}

static void agent_start(struct agent *a, struct world *w)
{
	snprintf(a->bsky_env, sizeof a->bsky_env, "BLUESKY_SERVICE=%s", bskyfake_base_url(w->bs));
	snprintf(a->gh_env, sizeof a->gh_env, "GITHUB_API_URL=%s", ghfake_base_url(w->gh));
	const char *env[] = {"AGENT_NAME=Ada", a->bsky_env, "AGENT_BLUESKY_USERNAME=agent.test",
	                     "AGENT_BLUESKY_PASSWORD=" PASSWORD, a->gh_env,
	                     "AGENT_GITHUB_USERNAME=ada-bot", "AGENT_GITHUB_TOKEN=" TOKEN,
	                     "GA_FULFIL_INTERVAL_MS=300", "GA_GITHUB_WRITE_SPACING_MS=100",
	                     "GA_GITHUB_SPACING_MS=20",
	                     /* the engine's own jobs (awareness aside) wait ten
	                      * minutes: no reply but the follow-up */
	                     "GA_BLUESKY_AWARENESS_MS=400", "GA_BLUESKY_FEED_MS=600000",
	                     "GA_BLUESKY_PEERS_MS=600000", "GA_BLUESKY_EXPRESSION_MS=600000",
	                     "GA_BLUESKY_RITUAL_MS=600000", "GA_BLUESKY_PACE_MS=50",
	                     "GA_BLUESKY_MIN_INTERVAL_MS=50", "GA_BLUESKY_SPACING_MS=20",
	                     "DASHBOARD_ADDR=off", NULL};
	if (proc_start(&a->p, a->home, (const char *const[]){"--no-terminal", NULL}, env) != 0)
		fail_msg("cannot start general-agent in %s", a->home);
	if (!proc_wait_output(&a->p, "signed in", W)) {
		dump(a);
		fail_msg("the agent did not sign in to Bluesky");
	}
}

static void agent_stop(struct agent *a)
{
	proc_signal(&a->p, SIGTERM);
	int rc = proc_wait(&a->p, W);
	if (rc != 0) {
		dump(a);
		fail_msg("the agent exited %d after SIGTERM", rc);
	}
	proc_cleanup(&a->p);
}

static void home_setup(struct agent *a)
{
	a->home = home_new();
	char mem[1024];
	snprintf(mem, sizeof mem, "%s/memory", a->home);
	mkdir(mem, 0700);
}

/* Waits until every id is completed in the ledger. */
static void wait_completed(struct agent *a, char ids[][64], int n)
{
	int64_t end = support_now_ms() + 3 * W;
	for (;;) {
		int done = 0;
		char st[16] = "";
		for (int i = 0; i < n; i++) {
			ledger_status(a->home, ids[i], st);
			done += strcmp(st, "completed") == 0;
		}
		if (done == n)
			return;
		if (support_now_ms() > end || !proc_alive(&a->p)) {
			dump(a);
			fail_msg("%d of %d commitments completed", done, n);
		}
		support_sleep_ms(100);
	}
}

/* Waits until the agent has n replies. */
static bool wait_replies(struct world *w, int n, int ms)
{
	int64_t end = support_now_ms() + ms;
	for (;;) {
		cJSON *r = agent_replies(w);
		int have = cJSON_GetArraySize(r);
		cJSON_Delete(r);
		if (have >= n)
			return true;
		if (support_now_ms() > end)
			return false;
		support_sleep_ms(50);
	}
}

/* The issue's html_url on the fake (into out). */
static void issue_url(struct world *w, int64_t number, char *out, size_t cap)
{
	cJSON *is = ghfake_issue(w->gh, "acme", "widgets", number);
	if (!is)
		fail_msg("acme/widgets#%lld is not on the GitHub fake", (long long)number);
	snprintf(out, cap, "%s", bsky_jstr(is, "html_url", NULL, NULL));
	cJSON_Delete(is);
	assert_true(strncmp(out, "https://github.com/acme/widgets/issues/", 39) == 0);
}

/* The fake holds n issues in acme/widgets; else fails listing them. */
static void expect_issues(struct world *w, size_t n)
{
	size_t have = ghfake_issue_count(w->gh, "acme", "widgets");
	if (have == n)
		return;
	for (int64_t i = 1; i <= (int64_t)have; i++) {
		cJSON *is = ghfake_issue(w->gh, "acme", "widgets", i);
		char *j = is ? cJSON_PrintUnformatted(is) : NULL;
		fprintf(stderr, "issue #%lld: %s\n", (long long)i, j ? j : "(none)");
		free(j);
		cJSON_Delete(is);
	}
	fail_msg("%zu issue(s) on the GitHub fake, expected %zu", have, n);
}

/* The agent's posts, printed (for a failure). */
static void print_posts(struct world *w)
{
	cJSON *p = posts_of(w, "agent.test");
	char *j = cJSON_Print(p);
	fprintf(stderr, "---- the agent's posts ----\n%s\n", j ? j : "");
	free(j);
	cJSON_Delete(p);
}

/* The agent's replies (caller frees), failing unless there is exactly
 * one: the follow-up. */
static cJSON *the_followup(struct world *w)
{
	cJSON *posts = agent_replies(w);
	if (cJSON_GetArraySize(posts) != 1) {
		print_posts(w);
		fail_msg("%d replies by the agent, expected the one follow-up",
		         cJSON_GetArraySize(posts));
	}
	return posts;
}

/* ---- 1. an issue promised under bob's reply: one reply, threaded, once ------------------ */

static void test_followup_once_in_thread(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct agent a = {0};
	home_setup(&a);
	/* the agent's voice (what reflection writes), with the link */
	char *vtext = voice_text_with(VOICE_FULFILLMENT_CREATE_ISSUE,
	                              "Filed it, have a look: {{url}}", 0);
	home_write(a.home, "voice-phrases.json", vtext);
	free(vtext);
	char id[1][64], line[2048], params[1536];
	snprintf(params, sizeof params,
	         "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Parser chokes on tabs\","
	         "\"body\":\"Reported on Bluesky: tabs and CRLF break the parser.\","
	         "\"sourceThreadUri\":\"%s\",\"sourceThreadCid\":\"%s\","
	         "\"sourceRootUri\":\"%s\",\"sourceRootCid\":\"%s\"}",
	         w.reply_uri, w.reply_cid, w.root_uri, w.root_cid);
	commit_line(line, sizeof line, id[0], 1, "create_issue", params);
	home_write(a.home, "memory/commitments.jsonl", line);

	agent_start(&a, &w);
	wait_completed(&a, id, 1);
	expect_issues(&w, 1);
	char url[256];
	issue_url(&w, 1, url, sizeof url);
	if (!wait_replies(&w, 1, W)) {
		dump(&a);
		fail_msg("no follow-up post on Bluesky after the issue was made");
	}
	support_sleep_ms(1500); /* a few more cycles: nothing more is posted */
	agent_stop(&a);

	cJSON *posts = the_followup(&w);
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetArrayItem(posts, 0), "value");
	char want[512];
	snprintf(want, sizeof want, "Filed it, have a look: %s", url);
	assert_string_equal(bsky_jstr(v, "text", NULL, NULL), want);
	assert_string_equal(bsky_jstr(v, "reply", "parent", "uri"), w.reply_uri);
	assert_string_equal(bsky_jstr(v, "reply", "parent", "cid"), w.reply_cid);
	assert_string_equal(bsky_jstr(v, "reply", "root", "uri"), w.root_uri);
	assert_string_equal(bsky_jstr(v, "reply", "root", "cid"), w.root_cid);
	cJSON_Delete(posts);
	assert_int_equal(agent_posts_with(&w, url), 1);
	/* bob was not written to otherwise: his two posts only */
	assert_int_equal(bskyfake_record_count(w.bs, "bob.test", "app.bsky.feed.post"), 2);

	/* through outbound: the reply target names bob, the journal's key
	 * names the commitment */
	char target[BSKYFAKE_DID_MAX + 32];
	snprintf(target, sizeof target, "bluesky:reply:%s", w.bob_did);
	assert_int_equal(audit_count(a.home, target, "allow"), 1);
	char key[128];
	snprintf(key, sizeof key, "\"key\":\"say:done:%s\"", id[0]);
	if (count_in(a.home, "memory/journal.jsonl", key) < 1) {
		char *j = home_read(a.home, "memory/journal.jsonl");
		fail_msg("no journal entry %s in:\n%s", key, j ? j : "(no journal)");
	}
	char said[BSKYFAKE_URI_MAX + 64];
	snprintf(said, sizeof said, "followed up on Bluesky under %s", w.reply_uri);
	assert_int_equal(count_in(a.home, "memory/decisions.jsonl", said), 1);

	/* a restart: nothing twice */
	agent_start(&a, &w);
	support_sleep_ms(2500); /* ~8 fulfilment cycles, ~6 awareness checks */
	if (!proc_alive(&a.p)) {
		dump(&a);
		fail_msg("the agent died after its restart");
	}
	agent_stop(&a);
	cJSON *after = agent_replies(&w);
	assert_int_equal(cJSON_GetArraySize(after), 1);
	cJSON_Delete(after);
	assert_int_equal(agent_posts_with(&w, url), 1);
	expect_issues(&w, 1);
	assert_int_equal(audit_count(a.home, target, "allow"), 1);
	assert_int_equal(count_in(a.home, "memory/decisions.jsonl", said), 1);
	home_remove(a.home);
	world_free(&w);
}

/* ---- 2. the default voice, no root recorded; a comment and an unrecorded post: none ----- */

static void test_default_voice_and_not_followed(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	/* issue #1 is there already: the comment_issue goes to it, the new
	 * issue is #2 */
	assert_int_equal(ghfake_add_issue(w.gh, "acme", "widgets", "bob", "Tabs", "Tabs break."),
	                 1);
	struct agent a = {0};
	home_setup(&a);
	char ids[3][64], line[2048], params[1536], all[6144] = "";
	/* no sourceRootUri/Cid: the post it was promised under is the root */
	snprintf(params, sizeof params,
	         "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"CRLF line endings\","
	         "\"body\":\"Reported on Bluesky.\",\"sourceThreadUri\":\"%s\","
	         "\"sourceThreadCid\":\"%s\"}",
	         w.root_uri, w.root_cid);
	commit_line(line, sizeof line, ids[0], 1, "create_issue", params);
	strcat(all, line);
	snprintf(params, sizeof params,
	         "{\"owner\":\"acme\",\"repo\":\"widgets\",\"issue_number\":1,\"body\":\"Seen on "
	         "Bluesky too.\",\"sourceThreadUri\":\"%s\",\"sourceThreadCid\":\"%s\","
	         "\"sourceRootUri\":\"%s\",\"sourceRootCid\":\"%s\"}",
	         w.reply_uri, w.reply_cid, w.root_uri, w.root_cid);
	commit_line(line, sizeof line, ids[1], 2, "comment_issue", params);
	strcat(all, line);
	commit_line(line, sizeof line, ids[2], 3, "create_issue",
	            "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Unicode BOM\","
	            "\"body\":\"No thread recorded.\"}");
	strcat(all, line);
	home_write(a.home, "memory/commitments.jsonl", all);

	agent_start(&a, &w);
	wait_completed(&a, ids, 3);
	if (!wait_replies(&w, 1, W)) {
		dump(&a);
		fail_msg("no follow-up post for the create_issue");
	}
	support_sleep_ms(2000);
	agent_stop(&a);

	/* GitHub: the two issues made, the comment made */
	expect_issues(&w, 3);
	assert_int_equal(ghfake_comment_count(w.gh, "acme", "widgets", 1), 1);
	/* Bluesky: one post, for ids[0], under bob's post (root = parent) */
	cJSON *posts = the_followup(&w);
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetArrayItem(posts, 0), "value");
	const char *text = bsky_jstr(v, "text", NULL, NULL);
	/* which issue ids[0] became: the one titled "CRLF line endings" */
	char url[256] = "";
	for (int64_t n = 2; n <= 3; n++) {
		cJSON *is = ghfake_issue(w.gh, "acme", "widgets", n);
		if (is && strcmp(bsky_jstr(is, "title", NULL, NULL), "CRLF line endings") == 0)
			snprintf(url, sizeof url, "%s", bsky_jstr(is, "html_url", NULL, NULL));
		cJSON_Delete(is);
	}
	assert_true(url[0] != '\0');
	char want[512];
	snprintf(want, sizeof want, "Done \xE2\x80\x94 here it is: %s", url);
	assert_string_equal(text, want);
	assert_string_equal(bsky_jstr(v, "reply", "parent", "uri"), w.root_uri);
	assert_string_equal(bsky_jstr(v, "reply", "parent", "cid"), w.root_cid);
	assert_string_equal(bsky_jstr(v, "reply", "root", "uri"), w.root_uri);
	assert_string_equal(bsky_jstr(v, "reply", "root", "cid"), w.root_cid);
	cJSON_Delete(posts);
	/* no other post names an issue or the comment */
	assert_int_equal(agent_posts_with(&w, "https://github.com/acme/widgets/issues/"), 1);

	/* the other two: said nowhere, and the story says why */
	char key[128];
	for (int i = 1; i < 3; i++) {
		snprintf(key, sizeof key, "say:done:%s", ids[i]);
		assert_int_equal(count_in(a.home, "memory/journal.jsonl", key), 0);
	}
	assert_int_equal(count_in(a.home, "memory/decisions.jsonl",
	                          "a comment_issue promised on Bluesky is not followed up there"),
	                 1);
	assert_int_equal(count_in(a.home, "memory/decisions.jsonl",
	                          "the post it was promised under is not recorded"),
	                 1);
	char target[BSKYFAKE_DID_MAX + 32];
	snprintf(target, sizeof target, "bluesky:reply:%s", w.bob_did);
	assert_int_equal(audit_count(a.home, target, "allow"), 1);
	home_remove(a.home);
	world_free(&w);
}

/* A post_bluesky commitment is fulfilled once the Bluesky client exists — one top-level post with
 * its text (through outbound: bluesky:post), completed in the ledger; a restart posts nothing more
 * (the journal's commitment:<id>). */
static void test_post_bluesky_fulfilled(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct agent a = {0};
	home_setup(&a);
	static const char text[] = "Shipping notes: the parser now keeps escaped quotes intact.";
	char ids[1][64], line[2048];
	commit_line(line, sizeof line, ids[0], 1, "post_bluesky",
	            "{\"content\":\"Shipping notes: the parser now keeps escaped quotes "
	            "intact.\"}");
	home_write(a.home, "memory/commitments.jsonl", line);
	agent_start(&a, &w);
	wait_completed(&a, ids, 1);
	agent_stop(&a);
	agent_start(&a, &w);
	support_sleep_ms(2000); /* several fulfilment cycles: nothing more */
	agent_stop(&a);
	cJSON *all = posts_of(&w, "agent.test");
	int n = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, all)
	{
		const cJSON *v = cJSON_GetObjectItem(r, "value");
		if (strcmp(bsky_jstr(v, "text", NULL, NULL), text) != 0)
			continue;
		n++;
		assert_null(cJSON_GetObjectItem(v, "reply")); /* a post of its own */
	}
	cJSON_Delete(all);
	if (n != 1) {
		print_posts(&w);
		fail_msg("%d posts of the commitment's text (want 1)", n);
	}
	assert_int_equal(audit_count(a.home, "bluesky:post", "allow") >= 1, 1);
	home_remove(a.home);
	world_free(&w);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_followup_once_in_thread),
	        cmocka_unit_test(test_default_voice_and_not_followed),
	        cmocka_unit_test(test_post_bluesky_fulfilled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
