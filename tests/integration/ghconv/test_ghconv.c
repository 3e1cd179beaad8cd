/*
 * GitHub conversations end to end (issue 11 item 6), black-box: the real
 * general-agent against the GitHub fake (tests/fakes/github, in this
 * process, on a loopback port; its notifications for participants are
 * GitHub's) and one model fake per agent.
 *
 *   - a person mentions the agent in an issue while it is paused: no poll;
 *     once resumed, exactly one comment comes
 *     back, with outbound's hidden chain marker, without the signature the
 *     model added and without the agent's name; the notification is marked
 *     read; later polls add nothing; the status shows the reply;
 *   - a peer agent's comment at chain MAX_ACL mentions the agent: a
 *     reaction (heart) on that comment, no comment, the model never asked;
 *     the same peer at chain 1 gets no reaction and goes on to the claim
 *     (without a room or Redis the pipeline stands down: fail closed);
 *   - --social-only with GitHub configured: not one request to GitHub (no
 *     notification poll);
 *   - our own comment repeated (§4.6): the later copy is deleted, the
 *     oldest kept, and the person's follow-up still answered;
 *   - stopped while the model has not answered: a clean exit, nothing
 *     posted, the notification left unread for the next start;
 *   - two agents mentioned in one issue: the one whose SHA-256 stagger is
 *     shorter answers first, the other reads that comment (its prompt
 *     quotes it) before answering; the first is then notified of the
 *     second's comment and stays silent (no ping-pong): two comments in
 *     all;
 *   - a review requested of the agent on a person's pull request (real git
 *     behind the fake): the model reads the diff (the prompt carries the
 *     hunks, numbered, and the tests line) and its github_review_pr becomes
 *     one review with an inline comment on the line it named; the review
 *     asked again, before and after a restart, is not made twice for the
 *     same head; a new head (a revision) gets a new review;
 *   - the open-issue scan of a watched workspace: a person's issue that
 *     mentions nobody is answered once (the story of the walk names the
 *     scan), an issue whose latest comment is ours is not walked, and
 *     neither later cycles nor a restart answer again.
 *
 * Timing: the poll is 1 s and the stagger a few seconds (GA_GITHUB_*);
 * the GitHub client keeps its real spacing (1 s, 5 s between writes).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "modules/ghconv/policy.h"
#include "proc.h"
#include "support_story.h"
#include "tests/fakes/github/ghfake.h"
#include "tests/fakes/llm/llmfake.h"

#define WAIT_MS     30000
#define TOK_ADA     "tok-ada-0123456789"
#define TOK_BEA     "tok-bea-0123456789"
#define TOK_ALICE   "tok-alice-0123456789"
#define STAGGER_MIN 300
#define STAGGER_SPN 20000 /* two agents: room for 12 s between them */
#define SHORT_SPAN  1500  /* one agent */

/* The model's answer: one call of tool with args (taken), then a closing
 * text. */
static void script_call(struct llmfake *m, const char *tool, cJSON *args, const char *closing)
{
	cJSON *a = cJSON_CreateArray();
	cJSON *e = cJSON_CreateObject();
	cJSON_AddNumberToObject(e, "times", 1);
	cJSON *match = cJSON_AddObjectToObject(e, "match");
	cJSON *tools = cJSON_AddArrayToObject(match, "tools");
	cJSON_AddItemToArray(tools, cJSON_CreateString(tool));
	cJSON *calls = cJSON_AddArrayToObject(e, "tool_calls");
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", tool);
	cJSON_AddItemToObject(c, "arguments", args);
	cJSON_AddItemToArray(calls, c);
	cJSON_AddItemToArray(a, e);
	cJSON *fin = cJSON_CreateObject();
	cJSON_AddStringToObject(fin, "content", closing);
	cJSON_AddItemToArray(a, fin);
	char *s = cJSON_PrintUnformatted(a);
	llmfake_script(m, s);
	free(s);
	cJSON_Delete(a);
}

/* The model's answer: one comment on the thread (with a signature the
 * agent must remove), then a closing text. */
static void script_comment(struct llmfake *m, int64_t number, const char *body)
{
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "owner", "acme");
	cJSON_AddStringToObject(args, "repo", "widgets");
	cJSON_AddNumberToObject(args, "issue_number", (double)number);
	cJSON_AddStringToObject(args, "body", body);
	script_call(m, "github_create_issue_comment", args, "Done.");
}

struct agent {
	struct proc p;
	char *home;
	struct llmfake *llm;
};

static void dump(struct agent *a)
{
	char *e = proc_stderr(&a->p), *o = proc_stdout(&a->p);
	char *d = home_read(a->home, "memory/decisions.jsonl");
	fprintf(stderr, "---- %s stderr ----\n%s\n---- stdout ----\n%s\n---- decisions ----\n%s\n",
	        a->home, e ? e : "", o ? o : "", d ? d : "(none)");
	free(e);
	free(o);
	free(d);
}

/* span_ms: the stagger's range (GA_GITHUB_STAGGER_SPAN_MS). a->home is
 * made when not set. */
static void start_agent_home(struct agent *a, struct ghfake *gh, const char *name,
                             const char *login, const char *token, bool social_only, int span_ms)
{
	char err[256];
	if (!a->home)
		a->home = home_new();
	if (!a->llm) /* a test may make and script it before the start */
		a->llm = llmfake_new(err, sizeof err);
	if (!a->llm)
		fail_msg("llmfake: %s", err);
	char url[128], llm[128], nm[64], lg[64], tk[64], span[64];
	snprintf(span, sizeof span, "GA_GITHUB_STAGGER_SPAN_MS=%d", span_ms);
	snprintf(url, sizeof url, "GITHUB_API_URL=%s", ghfake_base_url(gh));
	snprintf(llm, sizeof llm, "LLM_BASE_URL=%s", llmfake_base_url(a->llm));
	snprintf(nm, sizeof nm, "AGENT_NAME=%s", name);
	snprintf(lg, sizeof lg, "AGENT_GITHUB_USERNAME=%s", login);
	snprintf(tk, sizeof tk, "AGENT_GITHUB_TOKEN=%s", token);
	const char *env[] = {nm,
	                     url,
	                     lg,
	                     tk,
	                     llm,
	                     "LLM_MODEL=fake-model",
	                     "LLM_API_KEY=test-key-0123456789",
	                     "MAX_ACL=4",
	                     "GA_GITHUB_POLL_MS=1000",
	                     "GA_GITHUB_STAGGER_MIN_MS="
	                     "300",
	                     span,
	                     NULL};
	const char *argv_social[] = {"--social-only", NULL};
	const char *argv_none[] = {NULL};
	if (proc_start(&a->p, a->home, social_only ? argv_social : argv_none, env) != 0)
		fail_msg("cannot start general-agent in %s", a->home);
	if (!proc_wait_output(&a->p, "ready and listening", WAIT_MS)) {
		dump(a);
		fail_msg("%s did not start", name);
	}
}

static void start_agent_span(struct agent *a, struct ghfake *gh, const char *name,
                             const char *login, const char *token, bool social_only, int span_ms)
{
	a->home = NULL;
	start_agent_home(a, gh, name, login, token, social_only, span_ms);
}

static void start_agent(struct agent *a, struct ghfake *gh, const char *name, const char *login,
                        const char *token, bool social_only)
{
	start_agent_span(a, gh, name, login, token, social_only, SHORT_SPAN);
}

/* SIGTERM; a clean exit (0, nothing from a sanitizer). */
static void stop_agent(struct agent *a)
{
	proc_signal(&a->p, SIGTERM);
	int rc = proc_wait(&a->p, WAIT_MS);
	if (rc != 0) {
		dump(a);
		fail_msg("the agent exited %d", rc);
	}
}

static void free_agent(struct agent *a)
{
	proc_cleanup(&a->p);
	llmfake_free(a->llm);
	home_remove(a->home);
}

static struct ghfake *fake(void)
{
	char err[256];
	struct ghfake *f = ghfake_new(err, sizeof err);
	if (!f)
		fail_msg("ghfake: %s", err);
	ghfake_add_token(f, TOK_ADA, "ada-bot");
	ghfake_add_token(f, TOK_BEA, "bea-bot");
	ghfake_add_token(f, TOK_ALICE, "alice");
	ghfake_add_repo(f, "acme", "widgets", 0);
	return f;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Polls cond every 50 ms until true or timeout. */
#define WAIT_UNTIL(cond, ms)                                                                       \
	({                                                                                         \
		bool ok_ = false;                                                                  \
		for (long t_ = 0; t_ < (ms) && !(ok_ = (cond)); t_ += 50)                          \
			sleep_ms(50);                                                              \
		ok_;                                                                               \
	})

static bool read_notif(struct ghfake *f, int64_t n, const char *login)
{
	bool unread = true;
	return ghfake_notification_of(f, "acme", "widgets", n, login, &unread) > 0 && !unread;
}

/* The body the agent posted (the last POST of comments on issue n made
 * with token). Caller frees. */
static char *posted_body(struct ghfake *f, int64_t n, const char *token)
{
	char path[128], auth[128];
	snprintf(path, sizeof path, "/repos/acme/widgets/issues/%lld/comments", (long long)n);
	snprintf(auth, sizeof auth, "Bearer %s", token);
	struct httpfake *h = ghfake_http(f);
	char *out = NULL;
	for (uint64_t i = 0; i < httpfake_request_count(h); i++) {
		struct httpfake_request *r = httpfake_request_get(h, i);
		const char *ra = r ? httpfake_request_header(r, "Authorization") : NULL;
		if (r && strcmp(r->method, "POST") == 0 && strcmp(r->path, path) == 0 && ra &&
		    strcmp(ra, auth) == 0) {
			cJSON *b = cJSON_ParseWithLength(r->body, r->body_len);
			free(out);
			out = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(b, "body")));
			cJSON_Delete(b);
		}
		httpfake_request_free(r);
	}
	return out;
}

/* seq of the first POST of a comment on issue n with token; UINT64_MAX none */
static uint64_t posted_seq(struct ghfake *f, int64_t n, const char *token)
{
	char path[128], auth[128];
	snprintf(path, sizeof path, "/repos/acme/widgets/issues/%lld/comments", (long long)n);
	snprintf(auth, sizeof auth, "Bearer %s", token);
	struct httpfake *h = ghfake_http(f);
	uint64_t seq = UINT64_MAX;
	for (uint64_t i = 0; i < httpfake_request_count(h) && seq == UINT64_MAX; i++) {
		struct httpfake_request *r = httpfake_request_get(h, i);
		const char *ra = r ? httpfake_request_header(r, "Authorization") : NULL;
		if (r && strcmp(r->method, "POST") == 0 && strcmp(r->path, path) == 0 && ra &&
		    strcmp(ra, auth) == 0)
			seq = i;
		httpfake_request_free(r);
	}
	return seq;
}

/* The last user message of model request i. Caller frees. */
static char *user_message(struct llmfake *m, size_t i)
{
	cJSON *req = llmfake_request(m, i);
	const cJSON *msgs = cJSON_GetObjectItem(req, "messages"), *x;
	char *out = NULL;
	cJSON_ArrayForEach(x, msgs)
	{
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(x, "role")), "user") == 0) {
			free(out);
			out = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(x, "content")));
		}
	}
	cJSON_Delete(req);
	return out;
}

/* The agent's decision log holds a decision with this rule. */
static bool decided(struct agent *a, const char *rule)
{
	char needle[96];
	snprintf(needle, sizeof needle, "\"rule\":\"%s\"", rule);
	char *d = home_read(a->home, "memory/decisions.jsonl");
	bool yes = d && strstr(d, needle);
	free(d);
	return yes;
}

static void test_mentioned_once(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	int64_t n = ghfake_add_issue(f, "acme", "widgets", "alice", "Flaky build",
	                             "@ada-bot why does the build flake on Mondays?");
	struct agent a = {0};
	/* Started paused (the kill switch persisted): no poll at all. */
	a.home = home_new();
	char mem[1024];
	snprintf(mem, sizeof mem, "%s/memory", a.home);
	mkdir(mem, 0700);
	home_write(a.home, "memory/control.json",
	           "{\"version\":\"0\",\"savedAt\":\"2026-11-23T10:00:00.000Z\",\"data\":"
	           "{\"paused\":true,\"by\":\"owner\"}}");
	start_agent_home(&a, f, "Ada", "ada-bot", TOK_ADA, false, SHORT_SPAN);
	script_comment(a.llm, n, "Retry with backoff fixes the flake.\n\n— Ada");
	sleep_ms(2000); /* two poll intervals */
	assert_int_equal(ghfake_count(f, NULL, "/notifications", 0), 0);
	proc_write_stdin(&a.p, "/resume\n");
	if (!WAIT_UNTIL(ghfake_comment_count(f, "acme", "widgets", n) >= 1, WAIT_MS)) {
		dump(&a);
		fail_msg("no comment");
	}
	char *body = posted_body(f, n, TOK_ADA);
	assert_non_null(body);
	if (!strstr(body, "Retry with backoff fixes the flake.") ||
	    !strstr(body, "<!-- ga:chain=1 key=") || strcasestr(body, "ada"))
		fail_msg("the comment: '%s'", body);
	free(body);
	if (!WAIT_UNTIL(read_notif(f, n, "ada-bot"), WAIT_MS)) {
		dump(&a);
		fail_msg("the notification was not marked read");
	}
	/* The model saw the thread and the GitHub tools. */
	assert_int_equal(llmfake_calls(a.llm), 2);
	char *user = user_message(a.llm, 0);
	assert_non_null(strstr(user, "why does the build flake on Mondays?"));
	assert_non_null(strstr(user, "Issue #1 in acme/widgets: Flaky build"));
	free(user);
	/* Later polls: nothing new, nothing more (the fake notifies nobody
	 * of our own comment; a notification would find the latest is ours). */
	uint64_t lists = ghfake_count(f, "GET", "/notifications", 200);
	WAIT_UNTIL(ghfake_count(f, "GET", "/notifications", 200) >= lists + 2, 10000);
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n), 1);
	assert_int_equal(llmfake_calls(a.llm), 2);
	stop_agent(&a);
	/* The status the daemon wrote on its way out names the reply. */
	char *st = home_read(a.home, "memory/status.json");
	assert_non_null(st);
	cJSON *sj = cJSON_Parse(st);
	const cJSON *gh = cJSON_GetObjectItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(sj, "data"), "services"), "github");
	if (!gh || cJSON_GetNumberValue(cJSON_GetObjectItem(gh, "replies")) != 1 ||
	    !cJSON_IsObject(cJSON_GetObjectItem(gh, "rateBudget")) ||
	    !cJSON_IsString(cJSON_GetObjectItem(gh, "lastPoll")))
		fail_msg("status: %s", st);
	cJSON_Delete(sj);
	free(st);
	/* The mention's story is one walk: event, gate, compose, validator,
	 * outbound, and one record decision, "answered". */
	char id[128], why[4096];
	assert_int_equal(story_id_of(a.home, "why does the build flake on Mondays", id, sizeof id),
	                 0);
	if (!story_is_one_walk(a.home, id, "answered", why, sizeof why))
		fail_msg("%s", why);
	free_agent(&a);
	ghfake_free(f);
}

static void test_max_chain_reacts(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	int64_t n = ghfake_add_issue(f, "acme", "widgets", "alice", "Cache design",
	                             "How should the cache expire?");
	int64_t c = ghfake_add_comment(f, "acme", "widgets", n, "bea-bot",
	                               "@ada-bot over to you.\n\n<!-- ga:chain=4 key=abc123 -->");
	struct agent a = {0};
	start_agent(&a, f, "Ada", "ada-bot", TOK_ADA, false);
	int64_t n2 = n + 1;
	script_comment(a.llm, n2, "Expire on write, with a one-hour ceiling.");
	if (!WAIT_UNTIL(ghfake_reaction_count(f, "acme", "widgets", n, c, "heart") == 1, WAIT_MS)) {
		dump(&a);
		fail_msg("no reaction on the peer's comment at chain MAX_ACL");
	}
	if (!WAIT_UNTIL(read_notif(f, n, "ada-bot"), WAIT_MS)) {
		dump(&a);
		fail_msg("the notification was not marked read");
	}
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n), 1);
	assert_int_equal(llmfake_calls(a.llm), 0);
	/* The control: the same peer below MAX_ACL gets no reaction; its
	 * message walks on to the claim, and with no coordination reachable
	 * (no room, no Redis) the pipeline stands down (fail closed): nothing
	 * is sent, the model is not asked, the thread is handled. */
	assert_int_equal(ghfake_add_issue(f, "acme", "widgets", "alice", "Cache size", "How big?"),
	                 n2);
	int64_t c2 = ghfake_add_comment(f, "acme", "widgets", n2, "bea-bot",
	                                "@ada-bot your call.\n\n<!-- ga:chain=1 key=def456 -->");
	if (!WAIT_UNTIL(decided(&a, "claim") && read_notif(f, n2, "ada-bot"), WAIT_MS)) {
		dump(&a);
		fail_msg("the peer below MAX_ACL did not reach the claim");
	}
	assert_int_equal(ghfake_reaction_count(f, "acme", "widgets", n2, c2, "heart"), 0);
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n2), 1);
	assert_int_equal(llmfake_calls(a.llm), 0);
	assert_int_equal(ghfake_reaction_count(f, "acme", "widgets", n, c, "heart"), 1);
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n), 1);
	char *d = home_read(a.home, "memory/decisions.jsonl");
	assert_non_null(d);
	assert_non_null(strstr(d, "\"rule\":\"chain_length\""));
	assert_non_null(strstr(d, "\"rule\":\"reaction\""));
	free(d);
	stop_agent(&a);
	free_agent(&a);
	ghfake_free(f);
}

/* A denylist that names GitHub reactions: the reaction the chain rule
 * chose is refused by outbound, audited with the pattern, and never reaches
 * GitHub; the thread is still handled (nothing comes back next poll). */
static void test_reaction_denied(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	int64_t n = ghfake_add_issue(f, "acme", "widgets", "alice", "Cache design",
	                             "How should the cache expire?");
	int64_t c = ghfake_add_comment(f, "acme", "widgets", n, "bea-bot",
	                               "@ada-bot over to you.\n\n<!-- ga:chain=4 key=abc123 -->");
	struct agent a = {0};
	a.home = home_new();
	char mem[1024];
	snprintf(mem, sizeof mem, "%s/memory", a.home);
	mkdir(mem, 0700);
	home_write(a.home, "memory/send_permissions.json",
	           "{\"mode\":\"denylist\",\"allowlist\":[],"
	           "\"denylist\":[\"github:acme:widgets:reaction:*\"]}");
	start_agent_home(&a, f, "Ada", "ada-bot", TOK_ADA, false, SHORT_SPAN);
	if (!WAIT_UNTIL(read_notif(f, n, "ada-bot"), WAIT_MS)) {
		dump(&a);
		fail_msg("the notification was not handled");
	}
	char *audit = NULL;
	if (!WAIT_UNTIL((free(audit), audit = home_read(a.home, "memory/send_audit.jsonl"),
	                 audit && strstr(audit, "\"verdict\":\"deny\"")),
	                WAIT_MS)) {
		dump(&a);
		fail_msg("no denied send in the audit: %s", audit ? audit : "(none)");
	}
	if (!strstr(audit, "\"pattern\":\"github:acme:widgets:reaction:*\"") ||
	    !strstr(audit, "github:acme:widgets:reaction:1"))
		fail_msg("the audit: %s", audit);
	free(audit);
	assert_true(decided(&a, "reaction"));
	assert_true(decided(&a, "send_permission"));
	uint64_t lists = ghfake_count(f, "GET", "/notifications", 200);
	WAIT_UNTIL(ghfake_count(f, "GET", "/notifications", 200) >= lists + 2, 10000);
	assert_int_equal(ghfake_reaction_count(f, "acme", "widgets", n, c, "heart"), 0);
	assert_int_equal(ghfake_count(f, "POST", NULL, 0), 0);
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n), 1);
	assert_int_equal(llmfake_calls(a.llm), 0);
	stop_agent(&a);
	free_agent(&a);
	ghfake_free(f);
}

static void test_social_only_never_polls(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	ghfake_add_issue(f, "acme", "widgets", "alice", "Hello", "@ada-bot hi");
	struct agent a = {0};
	start_agent(&a, f, "Ada", "ada-bot", TOK_ADA, true);
	if (!proc_wait_output(&a.p, "social-only mode", WAIT_MS)) {
		dump(&a);
		fail_msg("not in social-only mode");
	}
	/* Two poll intervals of the other tests. */
	sleep_ms(2000);
	assert_int_equal(ghfake_count(f, NULL, "/notifications", 0), 0);
	assert_int_equal(ghfake_requests(f), 0);
	stop_agent(&a);
	free_agent(&a);
	ghfake_free(f);
}

static void test_duplicates_deleted(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	int64_t n = ghfake_add_issue(f, "acme", "widgets", "alice", "Docs", "Where are the docs?");
	int64_t keep = ghfake_add_comment(f, "acme", "widgets", n, "ada-bot",
	                                  "See docs/index.md.\n\n<!-- ga:chain=1 key=a1 -->");
	int64_t dup = ghfake_add_comment(f, "acme", "widgets", n, "ada-bot",
	                                 "see   docs/index.md.\n\n<!-- ga:chain=1 key=b2 -->");
	ghfake_add_comment(f, "acme", "widgets", n, "alice", "@ada-bot and the API reference?");
	struct agent a = {0};
	start_agent(&a, f, "Ada", "ada-bot", TOK_ADA, false);
	script_comment(a.llm, n, "The API reference is in docs/api.md.");
	char path[128];
	snprintf(path, sizeof path, "/repos/acme/widgets/issues/comments/%lld", (long long)dup);
	if (!WAIT_UNTIL(ghfake_count(f, "DELETE", path, 204) == 1, WAIT_MS) ||
	    !WAIT_UNTIL(ghfake_comment_count(f, "acme", "widgets", n) == 3 &&
	                        ghfake_count_body(f, "docs/api.md") == 1,
	                WAIT_MS)) {
		dump(&a);
		fail_msg("the duplicate was not deleted, or no reply");
	}
	snprintf(path, sizeof path, "/repos/acme/widgets/issues/comments/%lld", (long long)keep);
	assert_int_equal(ghfake_count(f, "DELETE", path, 0), 0); /* the oldest stays */
	assert_true(decided(&a, "duplicate_comment"));
	stop_agent(&a);
	free_agent(&a);
	ghfake_free(f);
}

/* Stopped while the model has not answered: the call is dropped, the
 * daemon exits 0 (clean under the sanitizers), nothing is posted. */
static void test_stop_while_composing(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	int64_t n = ghfake_add_issue(f, "acme", "widgets", "alice", "Slow", "@ada-bot ping");
	struct agent a = {0};
	start_agent(&a, f, "Ada", "ada-bot", TOK_ADA, false);
	llmfake_script(a.llm, "[{\"action\":\"hang\"}]");
	if (llmfake_wait_calls(a.llm, 1, WAIT_MS) != 0) {
		dump(&a);
		fail_msg("the model was never asked");
	}
	stop_agent(&a);
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n), 0);
	bool unread = false;
	assert_true(ghfake_notification_of(f, "acme", "widgets", n, "ada-bot", &unread) > 0);
	assert_true(unread); /* not handled: it comes back after a restart */
	free_agent(&a);
	ghfake_free(f);
}

static void test_two_agents_staggered(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	/* An issue number whose staggers are far enough apart that the first
	 * comment exists before the second agent reads the thread (fetch,
	 * model and a write take about 3 s here; several times that under a
	 * sanitizer on a loaded machine, hence 12 s: issue 3, 2.2 s and 18 s). */
	int64_t n = 0;
	for (int64_t k = 1; k < 50 && !n; k++) {
		char key[64];
		ghconv_thread_key("acme", "widgets", k, key, sizeof key);
		int64_t da = ghconv_stagger_ms("Ada", key, STAGGER_MIN, STAGGER_SPN);
		int64_t db = ghconv_stagger_ms("Bea", key, STAGGER_MIN, STAGGER_SPN);
		if (llabs(da - db) >= 12000)
			n = k;
	}
	assert_true(n > 0);
	for (int64_t k = 1; k < n; k++)
		ghfake_add_issue(f, "acme", "widgets", "alice", "filler", "nothing");
	char key[64];
	ghconv_thread_key("acme", "widgets", n, key, sizeof key);
	bool ada_first = ghconv_stagger_ms("Ada", key, STAGGER_MIN, STAGGER_SPN) <
	                 ghconv_stagger_ms("Bea", key, STAGGER_MIN, STAGGER_SPN);
	struct agent a = {0}, b = {0};
	start_agent_span(&a, f, "Ada", "ada-bot", TOK_ADA, false, STAGGER_SPN);
	start_agent_span(&b, f, "Bea", "bea-bot", TOK_BEA, false, STAGGER_SPN);
	script_comment(a.llm, n, "Retry with backoff fixes the flake.");
	script_comment(b.llm, n, "Pinning the runner image removes the Monday drift.");
	assert_int_equal(ghfake_add_issue(f, "acme", "widgets", "alice", "Flaky build",
	                                  "@ada-bot @bea-bot which fix do you prefer?"),
	                 n);
	if (!WAIT_UNTIL(ghfake_comment_count(f, "acme", "widgets", n) >= 2, WAIT_MS)) {
		dump(&a);
		dump(&b);
		fail_msg("not two comments");
	}
	struct agent *first = ada_first ? &a : &b, *second = ada_first ? &b : &a;
	const char *first_tok = ada_first ? TOK_ADA : TOK_BEA;
	const char *second_tok = ada_first ? TOK_BEA : TOK_ADA;
	const char *first_login = ada_first ? "ada-bot" : "bea-bot";
	assert_true(posted_seq(f, n, first_tok) < posted_seq(f, n, second_tok));
	/* The second read the first's comment before it answered. */
	char *user = user_message(second->llm, 0);
	const char *first_text = ada_first ? "Retry with backoff" : "Pinning the runner image";
	if (!user || !strstr(user, first_text) || !strstr(user, "Peer contributions"))
		fail_msg("the second agent's prompt does not quote the first's comment:\n%s",
		         user ? user : "(none)");
	free(user);
	/* The first is notified of the second's comment, reads the thread
	 * again and stays silent: only a peer spoke after it, not to it. */
	if (!WAIT_UNTIL(decided(first, "waiting_for_author"), WAIT_MS)) {
		dump(first);
		fail_msg("the first agent never decided on the second's comment");
	}
	uint64_t lists = ghfake_count(f, "GET", "/notifications", 200);
	WAIT_UNTIL(ghfake_count(f, "GET", "/notifications", 200) >= lists + 3, 10000);
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n), 2);
	assert_int_equal(llmfake_calls(first->llm), 2);
	assert_int_equal(llmfake_calls(second->llm), 2);
	assert_true(read_notif(f, n, first_login));
	stop_agent(&a);
	stop_agent(&b);
	free_agent(&a);
	free_agent(&b);
	ghfake_free(f);
}

/* A request to the fake as a person (token): the answer's JSON, or NULL.
 * Caller frees. */
static cJSON *api(struct ghfake *f, const char *method, const char *path, const char *token,
                  const char *body)
{
	int port = 0;
	sscanf(ghfake_base_url(f), "http://127.0.0.1:%d", &port);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		fail_msg("cannot reach the GitHub fake on port %d", port);
	char head[1024];
	int n = snprintf(head, sizeof head,
	                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
	                 "Accept: application/vnd.github+json\r\nContent-Type: application/json\r\n"
	                 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	                 method, path, token, body ? strlen(body) : 0);
	assert_true(write(fd, head, (size_t)n) == n);
	if (body)
		assert_true(write(fd, body, strlen(body)) == (ssize_t)strlen(body));
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap + 1);
	for (ssize_t r; len < cap && (r = read(fd, buf + len, cap - len)) > 0;)
		len += (size_t)r;
	close(fd);
	buf[len] = '\0';
	char *b = strstr(buf, "\r\n\r\n");
	cJSON *j = b ? cJSON_Parse(b + 4) : NULL;
	free(buf);
	return j;
}

/* The fake's reviews of PR n, as the API lists them. Caller frees. */
static cJSON *reviews_of(struct ghfake *f, int64_t n)
{
	char path[128];
	snprintf(path, sizeof path, "/repos/acme/widgets/pulls/%lld/reviews", (long long)n);
	cJSON *j = api(f, "GET", path, TOK_ALICE, NULL);
	assert_true(cJSON_IsArray(j));
	return j;
}

static int review_count(struct ghfake *f, int64_t n)
{
	cJSON *j = reviews_of(f, n);
	int k = cJSON_GetArraySize(j);
	cJSON_Delete(j);
	return k;
}

/* The author asks ada-bot for a review (again: a request still standing
 * is withdrawn first, so GitHub notifies anew). */
static void request_review(struct ghfake *f, int64_t n)
{
	char path[128];
	snprintf(path, sizeof path, "/repos/acme/widgets/pulls/%lld/requested_reviewers",
	         (long long)n);
	cJSON_Delete(api(f, "DELETE", path, TOK_ALICE, "{\"reviewers\":[\"ada-bot\"]}"));
	cJSON_Delete(api(f, "POST", path, TOK_ALICE, "{\"reviewers\":[\"ada-bot\"]}"));
}

/* The model's review: github_review_pr with event, body and one inline
 * comment (path, line; none when path is NULL), then a closing text. */
static void script_review(struct llmfake *m, int64_t number, const char *event, const char *body,
                          const char *path, int line, const char *comment)
{
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "owner", "acme");
	cJSON_AddStringToObject(args, "repo", "widgets");
	cJSON_AddNumberToObject(args, "pull_number", (double)number);
	cJSON_AddStringToObject(args, "event", event);
	cJSON_AddStringToObject(args, "body", body);
	if (path) {
		cJSON *cs = cJSON_AddArrayToObject(args, "comments");
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", path);
		cJSON_AddNumberToObject(x, "line", line);
		cJSON_AddStringToObject(x, "body", comment);
		cJSON_AddItemToArray(cs, x);
	}
	script_call(m, "github_review_pr", args, "Reviewed.");
}

/* How many decisions with this rule the agent's log holds. */
static int decided_count(struct agent *a, const char *rule)
{
	char needle[96];
	snprintf(needle, sizeof needle, "\"rule\":\"%s\"", rule);
	char *d = home_read(a->home, "memory/decisions.jsonl");
	int n = 0;
	for (const char *s = d; s && (s = strstr(s, needle)); s++)
		n++;
	free(d);
	return n;
}

static void test_review_requested(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	struct ghfake_file v0[] = {{"greet.txt", "hello\n", 0, 0}};
	ghfake_commit(f, "acme", "widgets", "main", v0, 1, "start", "alice", NULL);
	struct ghfake_file v1[] = {{"greet.txt", "hello\nworld\n", 0, 0}};
	char sha1[41], sha2[41];
	ghfake_commit(f, "acme", "widgets", "greet", v1, 1, "world", "alice", sha1);
	cJSON *pr =
	        api(f, "POST", "/repos/acme/widgets/pulls", TOK_ALICE,
	            "{\"title\":\"Greet the world\",\"head\":\"greet\",\"base\":\"main\","
	            "\"body\":\"Says hello to the world.\\n\\n**Tests:** Passed (2 tests)\\n\"}");
	int64_t n = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(pr, "number"));
	cJSON_Delete(pr);
	assert_true(n > 0);
	struct agent a = {0};
	start_agent(&a, f, "Ada", "ada-bot", TOK_ADA, false);
	script_review(a.llm, n, "REQUEST_CHANGES", "The greeting should be capitalised.",
	              "greet.txt", 2, "Capitalise: World");
	request_review(f, n);
	if (!WAIT_UNTIL(review_count(f, n) == 1 && read_notif(f, n, "ada-bot"), WAIT_MS)) {
		dump(&a);
		fail_msg("no review");
	}
	/* a review is asked of one reviewer: no stagger before it */
	char queued_line[160];
	snprintf(queued_line, sizeof queued_line,
	         "thread queued thread=acme/widgets#%lld reason=review_requested stagger_ms=0",
	         (long long)n);
	if (!proc_wait_output(&a.p, queued_line, 1000)) {
		dump(&a);
		fail_msg("the review request waited for a stagger");
	}
	cJSON *rv = reviews_of(f, n);
	const cJSON *r0 = cJSON_GetArrayItem(rv, 0);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(r0, "state")),
	                    "CHANGES_REQUESTED");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(r0, "commit_id")), sha1);
	const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(r0, "body"));
	if (!strstr(body, "The greeting should be capitalised.") || !strstr(body, "key=review:"))
		fail_msg("the review: %s", body);
	cJSON_Delete(rv);
	char path[128];
	snprintf(path, sizeof path, "/repos/acme/widgets/pulls/%lld/comments", (long long)n);
	cJSON *ic = api(f, "GET", path, TOK_ALICE, NULL);
	assert_int_equal(cJSON_GetArraySize(ic), 1);
	const cJSON *c0 = cJSON_GetArrayItem(ic, 0);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(c0, "path")), "greet.txt");
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(c0, "line")), 2);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(c0, "body")),
	                    "Capitalise: World");
	cJSON_Delete(ic);
	/* the model read the diff: the hunk, numbered, and the tests line */
	char *user = user_message(a.llm, 0);
	if (!user || !strstr(user, "### greet.txt (modified, +1 -0)") ||
	    !strstr(user, "    2 +world") ||
	    !strstr(user, "Tests, as the description reports them: Passed (2 tests)"))
		fail_msg("the review prompt:\n%s", user ? user : "(none)");
	free(user);
	/* the review's story, `why` told: one walk, answered */
	char id[160], why[4096];
	snprintf(id, sizeof id, "github:acme/widgets#%lld:review@%s", (long long)n, sha1);
	if (!story_is_one_walk(a.home, id, "answered", why, sizeof why))
		fail_msg("%s", why);
	/* asked again for the same head: no second review */
	request_review(f, n);
	if (!WAIT_UNTIL(decided_count(&a, "reviewed_head") >= 1, WAIT_MS)) {
		dump(&a);
		fail_msg("the repeated request was not decided");
	}
	/* and after a restart */
	stop_agent(&a);
	proc_cleanup(&a.p);
	llmfake_free(a.llm);
	a.llm = NULL;
	start_agent_home(&a, f, "Ada", "ada-bot", TOK_ADA, false, SHORT_SPAN);
	request_review(f, n);
	if (!WAIT_UNTIL(decided_count(&a, "reviewed_head") >= 2, WAIT_MS)) {
		dump(&a);
		fail_msg("the request after the restart was not decided");
	}
	assert_int_equal(review_count(f, n), 1);
	assert_int_equal(llmfake_calls(a.llm), 0);
	/* a revision: a new head, reviewed again */
	struct ghfake_file v2[] = {{"greet.txt", "hello\nWorld\n", 0, 0}};
	ghfake_commit(f, "acme", "widgets", "greet", v2, 1, "capitalised", "alice", sha2);
	script_review(a.llm, n, "APPROVE", "Capitalised now; the tests cover it.", NULL, 0, NULL);
	request_review(f, n);
	if (!WAIT_UNTIL(review_count(f, n) == 2, WAIT_MS)) {
		dump(&a);
		fail_msg("the new head was not reviewed");
	}
	rv = reviews_of(f, n);
	const cJSON *r1 = cJSON_GetArrayItem(rv, 1);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(r1, "state")), "APPROVED");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(r1, "commit_id")), sha2);
	cJSON_Delete(rv);
	/* the earlier review was in the prompt of the new one */
	user = user_message(a.llm, 0);
	if (!user || !strstr(user, "ada-bot, CHANGES_REQUESTED") || !strstr(user, "    2 +World"))
		fail_msg("the second review prompt:\n%s", user ? user : "(none)");
	free(user);
	stop_agent(&a);
	free_agent(&a);
	ghfake_free(f);
}

/* Did model request i offer the comment tool (a reply's rounds do; plan
 * synthesis and the health check do not)? */
static bool offers_comment(struct llmfake *m, size_t i)
{
	cJSON *req = llmfake_request(m, i);
	const cJSON *t;
	bool yes = false;
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(req, "tools"))
	{
		const char *name = cJSON_GetStringValue(
		        cJSON_GetObjectItem(cJSON_GetObjectItem(t, "function"), "name"));
		yes = yes || (name && strcmp(name, "github_create_issue_comment") == 0);
	}
	cJSON_Delete(req);
	return yes;
}

static size_t comment_rounds(struct llmfake *m)
{
	size_t k = 0;
	for (size_t i = 0; i < llmfake_calls(m); i++)
		k += offers_comment(m, i);
	return k;
}

/* The user message of the first reply round. Caller frees. */
static char *reply_prompt(struct llmfake *m)
{
	for (size_t i = 0; i < llmfake_calls(m); i++)
		if (offers_comment(m, i))
			return user_message(m, i);
	return NULL;
}

/* Waits until the agent made k more reads of acme/widgets's issues (a
 * workspace cycle makes two or more: the plans, the open issues; about
 * 7 s a cycle with the GitHub client's spacing). */
static bool wait_reads(struct ghfake *f, size_t k)
{
	size_t reads = ghfake_count(f, "GET", "/repos/acme/widgets/issues", 0);
	return WAIT_UNTIL(ghfake_count(f, "GET", "/repos/acme/widgets/issues", 0) >= reads + k,
	                  WAIT_MS);
}

/* The open-issue scan (§3.14.5): acme/widgets is a watched workspace; a
 * person opens an issue there and mentions nobody: no notification
 * reaches the agent, the workspace cycle hands the issue to the GitHub
 * conversations, and the agent comments once (the walk's story says it
 * came from the scan). An issue whose latest comment is ours is not
 * walked. Later cycles and a restart add nothing. (That a changed issue is
 * handed again is test_ws_life_policy's test_engage.) */
static void test_workspace_issue(void **state)
{
	(void)state;
	struct ghfake *f = fake();
	int64_t answered = ghfake_add_issue(f, "acme", "widgets", "bob", "Old question",
	                                    "Which license is this under?");
	ghfake_add_comment(f, "acme", "widgets", answered, "ada-bot",
	                   "MIT, see LICENSE.\n\n<!-- ga:chain=1 key=lic1 -->");
	int64_t n = ghfake_add_issue(f, "acme", "widgets", "alice", "Dark mode",
	                             "Could the site have a dark mode?");
	struct agent a = {0};
	a.home = home_new();
	char mem[1024], err[256];
	snprintf(mem, sizeof mem, "%s/memory", a.home);
	mkdir(mem, 0700);
	home_write(a.home, "memory/watched_workspaces.json",
	           "{\"version\":\"0\",\"savedAt\":\"2026-11-23T10:00:00.000Z\",\"data\":"
	           "{\"format\":1,\"workspaces\":[{\"owner\":\"acme\",\"repo\":\"widgets\","
	           "\"source\":\"owner\",\"thread\":\"\",\"discoveredMs\":1,"
	           "\"polledMs\":0,\"plans\":[]}],\"unwatched\":[]}}");
	home_write(a.home, ".env", "GA_WS_CYCLE_MS=1000\n");
	a.llm = llmfake_new(err, sizeof err);
	assert_non_null(a.llm);
	script_comment(a.llm, n, "A dark theme fits: the colours are CSS variables already.");
	start_agent_home(&a, f, "Ada", "ada-bot", TOK_ADA, false, SHORT_SPAN);
	if (!WAIT_UNTIL(ghfake_comment_count(f, "acme", "widgets", n) >= 1, WAIT_MS)) {
		dump(&a);
		fail_msg("no comment on the workspace issue");
	}
	char *body = posted_body(f, n, TOK_ADA);
	if (!body || !strstr(body, "A dark theme fits") || !strstr(body, "<!-- ga:chain=1 key="))
		fail_msg("the comment: '%s'", body ? body : "(none)");
	free(body);
	/* the model was told where the issue came from */
	char *user = reply_prompt(a.llm);
	if (!user || !strstr(user, "a workspace you watch") ||
	    !strstr(user, "Could the site have a dark mode?"))
		fail_msg("the prompt:\n%s", user ? user : "(none)");
	free(user);
	/* our comment changed the issue: the next cycle reads it again and
	 * finds ours the latest, without a walk */
	if (!WAIT_UNTIL(decided_count(&a, "awaiting_others") >= 2, WAIT_MS)) {
		dump(&a);
		fail_msg("the issues whose latest comment is ours were not decided");
	}
	wait_reads(f, 4);
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n), 1);
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", answered), 1);
	assert_int_equal(comment_rounds(a.llm), 2); /* one reply: the call, then "Done." */
	/* each decided once: an unchanged issue is not walked again */
	assert_int_equal(decided_count(&a, "awaiting_others"), 2);
	assert_int_equal(decided_count(&a, "open_issue_scan"), 1);
	char *d = home_read(a.home, "memory/decisions.jsonl");
	assert_non_null(d);
	char line[96];
	snprintf(line, sizeof line, "open-issue scan: no reply to acme/widgets#%lld: the latest",
	         (long long)n);
	assert_non_null(strstr(d, line));
	assert_null(strstr(d, "Which license is this under?")); /* the answered one: no walk */
	free(d);
	/* `why` tells the walk: the scan, then one walk answered */
	char id[128], why[4096];
	assert_int_equal(story_id_of(a.home, "Could the site have a dark mode", id, sizeof id), 0);
	if (!story_is_one_walk(a.home, id, "answered", why, sizeof why))
		fail_msg("%s", why);
	char *out = NULL, *errs = NULL;
	assert_int_equal(
	        proc_run(a.home, (const char *const[]){"why", id, NULL}, NULL, &out, &errs), 0);
	if (!out || !strstr(out, "open-issue scan"))
		fail_msg("`why %s` does not name the open-issue scan:\n%s", id, out ? out : "");
	free(out);
	free(errs);
	/* a restart: the issues' decided states are remembered */
	stop_agent(&a);
	proc_cleanup(&a.p);
	llmfake_free(a.llm);
	a.llm = llmfake_new(err, sizeof err);
	script_comment(a.llm, n, "A second answer that must not be posted.");
	start_agent_home(&a, f, "Ada", "ada-bot", TOK_ADA, false, SHORT_SPAN);
	if (!wait_reads(f, 4)) {
		dump(&a);
		fail_msg("no workspace cycles after the restart");
	}
	assert_int_equal(ghfake_comment_count(f, "acme", "widgets", n), 1);
	assert_int_equal(comment_rounds(a.llm), 0);
	assert_int_equal(decided_count(&a, "awaiting_others"), 2);
	stop_agent(&a);
	free_agent(&a);
	ghfake_free(f);
}

/* Two executables (GHCONV_PART 1 and 2) so that ctest runs the halves side
 * by side: each waits mostly on GitHub's write spacing. */
#ifndef GHCONV_PART
#define GHCONV_PART 0
#endif

int main(void)
{
	const struct CMUnitTest part1[] = {
	        cmocka_unit_test(test_mentioned_once),
	        cmocka_unit_test(test_max_chain_reacts),
	        cmocka_unit_test(test_social_only_never_polls),
	};
	const struct CMUnitTest part2[] = {
	        cmocka_unit_test(test_duplicates_deleted),
	        cmocka_unit_test(test_stop_while_composing),
	        cmocka_unit_test(test_reaction_denied),
	        cmocka_unit_test(test_two_agents_staggered),
	};
	const struct CMUnitTest part3[] = {
	        cmocka_unit_test(test_review_requested),
	};
	const struct CMUnitTest part4[] = {
	        cmocka_unit_test(test_workspace_issue),
	};
	int rc = 0;
	if (GHCONV_PART == 0 || GHCONV_PART == 1)
		rc |= cmocka_run_group_tests_name("ghconv part 1", part1, NULL, NULL);
	if (GHCONV_PART == 0 || GHCONV_PART == 2)
		rc |= cmocka_run_group_tests_name("ghconv part 2", part2, NULL, NULL);
	if (GHCONV_PART == 0 || GHCONV_PART == 3) {
		if (ghfake_git_missing("ghconv part 3"))
			return GHCONV_PART == 3 ? 77 : rc;
		rc |= cmocka_run_group_tests_name("ghconv part 3", part3, NULL, NULL);
	}
	if (GHCONV_PART == 0 || GHCONV_PART == 4)
		rc |= cmocka_run_group_tests_name("ghconv part 4", part4, NULL, NULL);
	return rc;
}
