/*
 * The agent on Bluesky end to end, black-box: the real general-agent binary
 * against the Bluesky fake (tests/fakes/bsky, in this process: its state
 * outlives the agent's restarts) and llmfake-server (a process; its record
 * shows every model call). The real network runs what it can do on demand
 * (test_bluesky_net.c); the fake stays for what it cannot: a 429 with
 * ratelimit-reset, an answer lost after a write, an AppView that lags.
 *
 *   - a human mentions the agent: exactly one reply, with reply refs to the
 *     mention (root and parent), a mention facet with the human's DID and a
 *     link facet, both at UTF-8 byte offsets, and gaChain 1; it stays one
 *     over later checks, and the notification cursor reaches the server
 *     (updateSeen);
 *   - SIGKILL while the model is composing, restart: the mention is
 *     answered (none lost); SIGKILL right after the reply was created,
 *     restart: still one reply (none answered twice);
 *   - the PDS writes a reply but its answer is lost (a 502 after the
 *     write) while the AppView does not show our posts yet: reconciled,
 *     never sent twice, counted once — the thread ends with a like at
 *     SELF.md's 4 replies;
 *   - the access token expires mid-run (400 ExpiredToken): the agent
 *     refreshes and answers the next mention; createSession was called
 *     once in the whole run;
 *   - a 429 with ratelimit-reset: no request until the reset, then the
 *     agent resumes and answers;
 *   - two agents in one thread, each with a model that always answers and
 *     tags the other: the thread ends within MAX_ACL hops — no agent post
 *     beyond the chain limit, no closing message;
 *   - an expression whose draft only has a bounded question (a weak
 *     invitation, §7.1) is revised once; the revision is posted, never the
 *     draft (Scenario 1.8);
 *   - a reply that promises ("I'll open an issue …") becomes one pending
 *     commitment in the ledger, source bluesky, with the thread it was
 *     promised in (§6.12); a low-confidence extraction is dropped;
 *   - the replies under a post (§6.8 steps 2 and 6): a post with our reply
 *     under it is not answered again and never shown to the model; a post a
 *     known peer answered seconds ago gets a like without the model; a peer
 *     that answers while the model composes turns our reply into a like;
 *   - the model's graceful_exit with closing_type like: a like of the post,
 *     no reply (§6.13);
 *   - an expression that says our own recent post again is refused by the
 *     validator (an echo): nothing posted (§7.1);
 *   - the peer announcement is the agent's voice phrase
 *     (voice-phrases.json bluesky.peer_announcement), the built-in one
 *     without a file;
 *   - `general-agent why` tells one walk for a mention answered with a
 *     reply and for one answered with a like.
 *
 * Timing: the awareness check runs every 0.4 s here (GA_BLUESKY_AWARENESS_MS)
 * and the pacing gaps are 50 ms; waits poll until true or their timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "bsky_agent.h"
#include "modules/reflection/voice.h"
#include "proc.h"
#include "tests/fakes/bsky/bskyfake.h"
#include "testutil.h"

#ifdef GA_TEST_SANITIZED
#define SETTLE_MS 180000
#else
#define SETTLE_MS 90000
#endif

#define W        BSKY_AGENT_WAIT_MS
#define PASSWORD "app-pass-1234-abcd"

/* The agent against the fake, with up to two more variables. */
static void start_agent(struct bsky_agent *a, struct bskyfake *f, const char *name,
                        const char *handle, const struct bsky_llm *llm, const char *extra_env,
                        const char *extra_env2)
{
	const char *extra[] = {extra_env, extra_env2, NULL};
	if (!extra_env) {
		extra[0] = extra_env2;
		extra[1] = NULL;
	}
	bsky_agent_start(a, bskyfake_base_url(f), name, handle, PASSWORD, llm, extra);
}

/* ---- the world ------------------------------------------------------------------------ */

struct world {
	struct bskyfake *f;
	char agent_did[BSKYFAKE_DID_MAX];
	char human_did[BSKYFAKE_DID_MAX];
	char owner_did[BSKYFAKE_DID_MAX];
};

static void world_new(struct world *w)
{
	char err[256];
	w->f = bskyfake_new(err, sizeof err);
	if (!w->f)
		fail_msg("bskyfake: %s", err);
	bskyfake_add_account(w->f, "agent.test", PASSWORD, w->agent_did);
	bskyfake_add_account(w->f, "human.test", "human-pass", w->human_did);
	bskyfake_add_account(w->f, "owner.test", "owner-pass", w->owner_did);
}

/* Our replies (posts with a reply ref) of handle. */
static size_t replies_of(struct bskyfake *f, const char *handle)
{
	cJSON *recs = bskyfake_records(f, handle, "app.bsky.feed.post");
	size_t n = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, recs) n +=
	        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "value"), "reply") != NULL;
	cJSON_Delete(recs);
	return n;
}

static bool wait_replies(struct bskyfake *f, const char *handle, size_t n, int ms)
{
	int64_t end = bsky_mono_ms() + ms;
	while (bsky_mono_ms() < end) {
		if (replies_of(f, handle) >= n)
			return true;
		usleep(50000);
	}
	return replies_of(f, handle) >= n;
}

static void settle(int ms)
{
	/* a few awareness checks (0.4 s each) to see that nothing more happens */
	usleep((useconds_t)ms * 1000);
}

/* The newest reply record of handle (caller frees). */
static cJSON *newest_reply(struct bskyfake *f, const char *handle)
{
	cJSON *recs = bskyfake_records(f, handle, "app.bsky.feed.post");
	cJSON *out = NULL;
	const cJSON *r;
	cJSON_ArrayForEach(r, recs)
	{
		if (cJSON_GetObjectItem(cJSON_GetObjectItem(r, "value"), "reply")) {
			out = cJSON_Duplicate(r, true);
			break;
		}
	}
	cJSON_Delete(recs);
	return out;
}

/* ---- 1. a human mentions the agent -------------------------------------------------- */

static void test_mention_one_reply(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	/* an emoji before the facets: byte offsets differ from UTF-16 ones */
	static const char reply_text[] =
	        "\xF0\x9F\x99\x82 @human.test the parser keeps the escape; "
	        "see https://example.com/docs for the details";
	char *script = bsky_reply_script(reply_text, 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	char uri[BSKYFAKE_URI_MAX], cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test",
	                               "@agent.test how does the parser handle a trailing "
	                               "backslash?",
	                               NULL, uri, cid),
	                 0);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	if (!wait_replies(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("no reply to the mention");
	}
	settle(2000);
	assert_int_equal(replies_of(w.f, "agent.test"), 1);
	assert_int_equal(bsky_llm_calls(a.home), 2); /* the tool call, then the final word */
	/* §6.3 step 6: the prompt says whether we know this person */
	char *rec = bsky_llm_record(a.home);
	if (!rec || !strstr(rec, "You have not interacted with @human.test before."))
		fail_msg("no relationship line in the prompt: %s", rec ? rec : "(none)");
	free(rec);
	cJSON *r = newest_reply(w.f, "agent.test");
	assert_non_null(r);
	const cJSON *v = cJSON_GetObjectItem(r, "value");
	assert_string_equal(bsky_jstr(v, "text", NULL, NULL), reply_text);
	assert_string_equal(bsky_jstr(v, "reply", "parent", "uri"), uri);
	assert_string_equal(bsky_jstr(v, "reply", "parent", "cid"), cid);
	assert_string_equal(bsky_jstr(v, "reply", "root", "uri"), uri);
	assert_string_equal(bsky_jstr(v, "reply", "root", "cid"), cid);
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "gaChain")), 1);
	/* facets: the mention (with the human's DID) and the link, in bytes */
	bsky_check_facets(v, "@human.test", w.human_did, "https://example.com/docs");
	cJSON_Delete(r);
	/* the cursor reached the server */
	assert_true(bskyfake_seen_at(w.f, "agent.test") > 0);
	/* the story: `why` finds the notification's walk */
	char *log = home_read(a.home, "memory/decisions.jsonl");
	assert_non_null(log);
	assert_non_null(strstr(log, uri));
	assert_non_null(strstr(log, "\"answered\""));
	free(log);
	bsky_agent_stop(&a);
	/* status (and the dashboard) show the Bluesky side */
	char *st = home_read(a.home, "memory/status.json");
	cJSON *sj = st ? cJSON_Parse(st) : NULL;
	free(st);
	const cJSON *bs = cJSON_GetObjectItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(sj, "data"), "services"), "bluesky");
	if (!bs)
		fail_msg("no services.bluesky in memory/status.json");
	assert_string_equal(bsky_jstr(bs, "session", NULL, NULL), "active");
	assert_string_equal(bsky_jstr(bs, "handle", NULL, NULL), "agent.test");
	assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(bs, "handled")) >= 1);
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(bs, "logins")), 1);
	assert_non_null(cJSON_GetObjectItem(bs, "lastCheck"));
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(bs, "rate"), "read"));
	cJSON_Delete(sj);
	/* the person who mentioned us has a relationship record (by DID): the
	 * mention, answered */
	st = home_read(a.home, "memory/bluesky.json");
	sj = st ? cJSON_Parse(st) : NULL;
	free(st);
	const cJSON *rel = cJSON_GetArrayItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(sj, "data"), "relationships"), 0);
	if (!rel)
		fail_msg("no relationship record in memory/bluesky.json");
	assert_string_equal(bsky_jstr(rel, "did", NULL, NULL), w.human_did);
	assert_string_equal(bsky_jstr(rel, "handle", NULL, NULL), "human.test");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rel, "responded")));
	const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(rel, "interactions"), 0);
	assert_string_equal(bsky_jstr(first, "type", NULL, NULL), "mention");
	assert_string_equal(bsky_jstr(first, "uri", NULL, NULL), uri);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(first, "responded")));
	cJSON_Delete(sj);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 2. SIGKILL during a reply --------------------------------------------------------- */

static void test_kill_and_restart(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	/* the model takes 3 s: the agent is killed while it composes */
	char *script =
	        bsky_reply_script("The escape is kept as written, nothing is dropped.", 3000);
	struct bsky_llm slow;
	bsky_llm_start(a.home, script, &slow);
	free(script);
	assert_int_equal(bskyfake_post(w.f, "human.test", "@agent.test is the escape kept?", NULL,
	                               NULL, NULL),
	                 0);
	start_agent(&a, w.f, "Ada", "agent.test", &slow, NULL, NULL);
	int64_t end = bsky_mono_ms() + W;
	while (bsky_llm_calls(a.home) < 1 && bsky_mono_ms() < end)
		usleep(20000);
	assert_true(bsky_llm_calls(a.home) >= 1);
	bsky_agent_kill(&a);
	bsky_llm_stop(&slow);
	assert_int_equal(replies_of(w.f, "agent.test"), 0);
	/* restart: the notification was not lost */
	script = bsky_reply_script("The escape is kept as written, nothing is dropped.", 0);
	struct bsky_llm fast;
	bsky_llm_start(a.home, script, &fast);
	free(script);
	start_agent(&a, w.f, "Ada", "agent.test", &fast, NULL, NULL);
	if (!wait_replies(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("the notification was lost across the crash");
	}
	/* killed right after the reply exists: no second reply after restart */
	bsky_agent_kill(&a);
	start_agent(&a, w.f, "Ada", "agent.test", &fast, NULL, NULL);
	settle(3000);
	assert_int_equal(replies_of(w.f, "agent.test"), 1);
	/* and a new mention is still answered */
	assert_int_equal(bskyfake_post(w.f, "human.test", "@agent.test and the tab character?",
	                               NULL, NULL, NULL),
	                 0);
	if (!wait_replies(w.f, "agent.test", 2, W)) {
		bsky_agent_dump(&a);
		fail_msg("a new mention after the restarts was not answered");
	}
	settle(1500);
	assert_int_equal(replies_of(w.f, "agent.test"), 2);
	bsky_agent_stop(&a);
	bsky_llm_stop(&fast);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 2b. a reply whose answer was lost, learnt from the journal ---------------------- */

/* The PDS writes our reply but its answer is lost (a 502 after the write),
 * and the AppView has not indexed our posts yet (the thread never shows
 * them): the reply is found by the reconcile, never sent twice, and counts
 * as one of ours — a thread of four more mentions ends with a like at
 * SELF.md's 4 replies, not a fifth reply. */
static void test_lost_answer_counted(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	char *script = bsky_reply_script_seq(bsky_lexer_answers, 5, 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	bskyfake_hide_in_threads(w.f, "agent.test", true);
	bskyfake_lose_answers(w.f, 1);
	char root[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test",
	                               "@agent.test does the lexer keep a trailing backslash?",
	                               NULL, root, NULL),
	                 0);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	/* the reply exists after the lost answer; the journal learns it from
	 * the reconcile, the post is not answered again */
	if (!wait_replies(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("no reply to the mention");
	}
	int64_t end = bsky_mono_ms() + W;
	char *log = NULL;
	while (bsky_mono_ms() < end) {
		free(log);
		log = home_read(a.home, "memory/decisions.jsonl");
		if (log && strstr(log, "\"already_replied\""))
			break;
		usleep(100000);
	}
	if (!log || !strstr(log, "\"reply_unresolved\"") || !strstr(log, "\"already_replied\"")) {
		bsky_agent_dump(&a);
		fail_msg("the lost answer was not reconciled into 'already replied'");
	}
	free(log);
	assert_int_equal(replies_of(w.f, "agent.test"), 1);
	/* four more questions on sibling branches (our reply is in none of
	 * them, and no thread shows it): three replies, then a like */
	static const char *const more[] = {
	        "@agent.test and tabs inside strings?",
	        "@agent.test where are unicode escapes decoded?",
	        "@agent.test are surrogate pairs joined in the same place?",
	        "@agent.test would a second lexer pass make it simpler?",
	};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(bskyfake_post(w.f, "human.test", more[i], root, NULL, NULL), 0);
		if (!wait_replies(w.f, "agent.test", 2 + i, W)) {
			bsky_agent_dump(&a);
			fail_msg("no reply to question %zu", i + 2);
		}
	}
	char last[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test", more[3], root, last, NULL), 0);
	end = bsky_mono_ms() + W;
	while (bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like") < 1 &&
	       bsky_mono_ms() < end)
		usleep(50000);
	settle(1500);
	if (replies_of(w.f, "agent.test") != 4 ||
	    bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like") != 1) {
		bsky_agent_dump(&a);
		fail_msg("%zu replies and %zu likes: SELF.md allows 4 replies, then a like",
		         replies_of(w.f, "agent.test"),
		         bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like"));
	}
	cJSON *likes = bskyfake_records(w.f, "agent.test", "app.bsky.feed.like");
	assert_string_equal(bsky_jstr(cJSON_GetArrayItem(likes, 0), "value", "subject", "uri"),
	                    last);
	cJSON_Delete(likes);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 3. an expired access token mid-run ------------------------------------------------- */

static void test_expired_token(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	char *script = bsky_reply_script("Tabs are kept too; only the line end is trimmed.", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	/* a few checks with the first token */
	assert_int_equal(bskyfake_wait_requests(w.f, bskyfake_requests(w.f) + 4, W), 0);
	bskyfake_expire_tokens(w.f, "agent.test");
	assert_int_equal(
	        bskyfake_post(w.f, "human.test", "@agent.test what about tabs?", NULL, NULL, NULL),
	        0);
	if (!wait_replies(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("no reply after the token expired");
	}
	assert_true(bskyfake_count(w.f, "com.atproto.server.refreshSession", 200) >= 1);
	assert_int_equal(bskyfake_count(w.f, "com.atproto.server.createSession", 0), 1);
	assert_true(bskyfake_count(w.f, NULL, 400) >= 1); /* the ExpiredToken answer */
	bsky_agent_stop(&a);
	/* a restart reuses the persisted session: still one login */
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	settle(1500);
	assert_int_equal(bskyfake_count(w.f, "com.atproto.server.createSession", 0), 1);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 4. a 429 with ratelimit-reset -------------------------------------------------------- */

static void test_rate_limited(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	char *script = bsky_reply_script("Yes, the limit resets and I carry on.", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	assert_int_equal(bskyfake_wait_requests(w.f, bskyfake_requests(w.f) + 3, W), 0);
	const int reset_ms = 3000;
	bskyfake_force_429(w.f, 1, reset_ms);
	int64_t t429 = bsky_mono_ms();
	/* the next request gets the 429 */
	uint64_t before = bskyfake_requests(w.f);
	assert_int_equal(bskyfake_wait_requests(w.f, before + 1, W), 0);
	uint64_t after_429 = bskyfake_requests(w.f);
	assert_int_equal(
	        bskyfake_post(w.f, "human.test", "@agent.test still there?", NULL, NULL, NULL), 0);
	/* paused: nothing is asked until the reset (with a margin for the
	 * reset's whole-second rounding) */
	while (bsky_mono_ms() < t429 + reset_ms - 1200)
		usleep(50000);
	assert_int_equal(bskyfake_requests(w.f), after_429);
	/* resumed */
	if (!wait_replies(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("the agent did not resume after the rate limit's reset");
	}
	assert_true(bsky_mono_ms() >= t429 + reset_ms - 1200);
	assert_int_equal(bskyfake_count(w.f, NULL, 429), 1);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t n = sizeof a;
	if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
	    getsockname(s, (struct sockaddr *)&a, &n) != 0)
		fail_msg("no free port: %s", strerror(errno));
	close(s);
	return ntohs(a.sin_port);
}

/* Peers' messages need a claim (the gate's rule 6): two agents outside a
 * room coordinate through Redis. */
static pid_t start_redis(int port)
{
	char p[16];
	snprintf(p, sizeof p, "%d", port);
	pid_t pid = fork();
	if (pid == 0) {
		/* dies with the test, even when a failed assertion skips the stop */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", p, "--save",
		       "", "--appendonly", "no", "--daemonize", "no", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_port = htons((uint16_t)port),
		                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		int ok = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
		close(s);
		if (ok)
			return pid;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("redis-server did not start on port %d", port);
	return -1;
}

/* ---- 5. two agents in one thread ------------------------------------------------------------ */

static void test_two_agents(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	char bdid[BSKYFAKE_DID_MAX];
	bskyfake_add_account(w.f, "bob.test", PASSWORD, bdid);
	struct bsky_agent a = {.home = home_new()}, b = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	snprintf(b.owner, sizeof b.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	/* each model always answers, substantively and differently, and tags
	 * the other */
	static const char *const ta[] = {
	        "@bob.test I think the tokenizer should own escapes; the parser only sees tokens.",
	        "@bob.test Then keep the raw span on the token itself, the parser reads it there.",
	        "@bob.test A span per token costs eight bytes; cheap next to a second lexer pass.",
	        "@bob.test Error recovery would also want the span, so it pays for itself twice.",
	        "@bob.test One more angle: fuzzing finds span bugs fast, add a target for it.",
	};
	static const char *const tb[] = {
	        "@agent.test Agreed in part: the parser still needs the raw span for errors.",
	        "@agent.test Spans on tokens work if the lexer never rewrites the text under them.",
	        "@agent.test Fair, but multi-line strings break naive spans; track line starts "
	        "too.",
	        "@agent.test Line tables are cheap as well; I would store them once per file.",
	        "@agent.test And the fuzz target should compare spans against a slow reference "
	        "lexer.",
	};
	char *sa = bsky_reply_script_seq(ta, 5, 0);
	char *sb = bsky_reply_script_seq(tb, 5, 0);
	struct bsky_llm la, lb;
	bsky_llm_start(a.home, sa, &la);
	bsky_llm_start(b.home, sb, &lb);
	free(sa);
	free(sb);
	int port = free_port();
	pid_t redis = start_redis(port);
	char rurl[64];
	snprintf(rurl, sizeof rurl, "REDIS_URL=redis://127.0.0.1:%d", port);
	/* the agent chain decides (MAX_ACL 4), not the bot-chain budget */
	/* what Ada remembers of Bob from the room (relationship memory, by
	 * name): her Bluesky prompt carries it when bob.test is in the thread */
	char memdir[512];
	snprintf(memdir, sizeof memdir, "%s/memory", a.home);
	mkdir(memdir, 0700);
	home_write(a.home, "memory/peer_relationships.json",
	           "{\"version\":\"0.0.0-older\",\"savedAt\":\"2026-01-01T00:00:00.000Z\","
	           "\"data\":{\"format\":2,\"peers\":[{\"name\":\"Bob\",\"conversations\":2,"
	           "\"memorableExchanges\":[\"Bob found the lexer's span bug\"]}]}}");
	start_agent(&a, w.f, "Ada", "agent.test", &la, rurl, "MAX_BOT_CHAIN_LENGTH=20");
	start_agent(&b, w.f, "Bob", "bob.test", &lb, rurl, "MAX_BOT_CHAIN_LENGTH=20");
	assert_int_equal(bskyfake_post(w.f, "human.test",
	                               "@agent.test @bob.test who should own escape handling?",
	                               NULL, NULL, NULL),
	                 0);
	/* the exchange runs until the chain limit (MAX_ACL 4 by default);
	 * then it stops: nothing new for a while */
	/* Settled: a reply and the closing like seen, then nothing new for
	 * 5 s (a slow agent under ASan on a loaded machine must not end the
	 * wait before its like). */
	size_t last = 0;
	/* 90 s; twice that under the sanitizers on a loaded machine */
	int64_t quiet_since = bsky_mono_ms(), end = bsky_mono_ms() + SETTLE_MS;
	while (bsky_mono_ms() < end) {
		size_t n = replies_of(w.f, "agent.test") + replies_of(w.f, "bob.test");
		size_t nl = bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like") +
		            bskyfake_record_count(w.f, "bob.test", "app.bsky.feed.like");
		if (n + nl != last) {
			last = n + nl;
			quiet_since = bsky_mono_ms();
		}
		if (n > 0 && nl > 0 && bsky_mono_ms() - quiet_since > 5000)
			break;
		usleep(100000);
	}
	size_t na = replies_of(w.f, "agent.test"), nb = replies_of(w.f, "bob.test");
	if (na + nb == 0 || bsky_mono_ms() >= end) {
		bsky_agent_dump(&a);
		bsky_agent_dump(&b);
		fail_msg("the thread did not settle (%zu + %zu replies)", na, nb);
	}
	if (getenv("GA_TEST_VERBOSE")) {
		fprintf(stderr, "replies: %zu + %zu, likes %zu + %zu\n", na, nb,
		        bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like"),
		        bskyfake_record_count(w.f, "bob.test", "app.bsky.feed.like"));
		bsky_agent_dump(&a);
		bsky_agent_dump(&b);
	}
	/* every agent post carries its chain, none beyond MAX_ACL (4); each
	 * agent stays within SELF.md's replies per thread (4); every post is
	 * one of the model's substantive answers — no closing message */
	const char *handles[] = {"agent.test", "bob.test"};
	const char *const *texts[] = {ta, tb};
	for (int h = 0; h < 2; h++) {
		cJSON *recs = bskyfake_records(w.f, handles[h], "app.bsky.feed.post");
		const cJSON *r;
		size_t mine = 0;
		cJSON_ArrayForEach(r, recs)
		{
			const cJSON *v = cJSON_GetObjectItem(r, "value");
			if (!cJSON_GetObjectItem(v, "reply"))
				continue;
			mine++;
			int chain = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "gaChain"));
			assert_true(chain >= 1 && chain <= 4);
			const char *t = bsky_jstr(v, "text", NULL, NULL);
			bool scripted = false;
			for (int k = 0; k < 5; k++)
				scripted |= strncmp(t, texts[h][k], strlen(texts[h][k])) == 0;
			if (!scripted)
				fail_msg("%s posted something else: %s", handles[h], t);
			/* the reply at MAX_ACL carries the courtesy notice */
			if (chain == 4)
				assert_non_null(
				        strstr(t, "Replies to this message will not be processed"));
		}
		assert_true(mine >= 1 && mine <= 4);
		cJSON_Delete(recs);
	}
	/* it ended with likes: each the answer to an agent's post, at MAX_ACL
	 * or past SELF.md's replies per thread (whichever came first) */
	size_t likes = 0;
	for (int h = 0; h < 2; h++) {
		cJSON *ls = bskyfake_records(w.f, handles[h], "app.bsky.feed.like");
		const cJSON *l;
		cJSON_ArrayForEach(l, ls)
		{
			likes++;
			cJSON *liked =
			        bskyfake_record(w.f, bsky_jstr(l, "value", "subject", "uri"));
			assert_non_null(liked);
			int chain =
			        (int)cJSON_GetNumberValue(cJSON_GetObjectItem(liked, "gaChain"));
			if (chain < 1 || chain > 4) {
				bsky_agent_dump(&a);
				bsky_agent_dump(&b);
				fail_msg("%s liked a post with chain %d", handles[h], chain);
			}
			cJSON_Delete(liked);
		}
		cJSON_Delete(ls);
	}
	assert_true(likes >= 1);
	/* Ada's prompts: what she remembers of Bob, and from her third
	 * answer on, her history with him */
	char *ra = bsky_llm_record(a.home);
	if (!ra || !strstr(ra, "What you remember of the agents in this thread:") ||
	    !strstr(ra, "Bob found the lexer's span bug"))
		fail_msg("no peer memory in Ada's prompts: %s", ra ? ra : "(none)");
	if (na >= 3 && !strstr(ra, "Your history with @bob.test: "))
		fail_msg("no history with Bob in Ada's later prompts: %s", ra);
	free(ra);
	/* and the story names the rule */
	char *la_log = home_read(a.home, "memory/decisions.jsonl");
	char *lb_log = home_read(b.home, "memory/decisions.jsonl");
	bool named = false;
	static const char *const rules[] = {"\"react_only\"", "\"replies_per_thread\"",
	                                    "\"back_and_forth\"", "\"social_mechanics\""};
	for (size_t k = 0; k < 4; k++)
		named |= (la_log && strstr(la_log, rules[k])) ||
		         (lb_log && strstr(lb_log, rules[k]));
	assert_true(named);
	free(la_log);
	free(lb_log);
	bsky_agent_stop(&a);
	bsky_agent_stop(&b);
	bsky_llm_stop(&la);
	bsky_llm_stop(&lb);
	kill(redis, SIGTERM);
	waitpid(redis, NULL, 0);
	home_remove(a.home);
	home_remove(b.home);
	bskyfake_free(w.f);
}

/* ---- 6. a closing gets a like, not a reply ------------------------------------------- */

static void test_thanks_liked(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	char *script =
	        bsky_reply_script("The tokenizer keeps the escape; the parser sees one token.", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	char uri[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test", "@agent.test who keeps the escape?", NULL,
	                               uri, NULL),
	                 0);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	if (!wait_replies(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("no reply to the mention");
	}
	cJSON *r = newest_reply(w.f, "agent.test");
	char ours[BSKYFAKE_URI_MAX];
	snprintf(ours, sizeof ours, "%s", bsky_jstr(r, "uri", NULL, NULL));
	cJSON_Delete(r);
	char thanks[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test", "Thanks!", ours, thanks, NULL), 0);
	int64_t end = bsky_mono_ms() + W;
	while (bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like") < 1 &&
	       bsky_mono_ms() < end)
		usleep(50000);
	if (bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like") != 1) {
		bsky_agent_dump(&a);
		fail_msg("the thank-you was not liked");
	}
	cJSON *likes = bskyfake_records(w.f, "agent.test", "app.bsky.feed.like");
	assert_string_equal(bsky_jstr(cJSON_GetArrayItem(likes, 0), "value", "subject", "uri"),
	                    thanks);
	cJSON_Delete(likes);
	/* a mention that only thanks: a like too (rule react) */
	char thanks2[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test",
	                               "Thank you, that settles it for me @agent.test", NULL,
	                               thanks2, NULL),
	                 0);
	end = bsky_mono_ms() + W;
	while (bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like") < 2 &&
	       bsky_mono_ms() < end)
		usleep(50000);
	if (bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like") != 2) {
		bsky_agent_dump(&a);
		fail_msg("the thank-you mention was not liked");
	}
	settle(1500);
	assert_int_equal(replies_of(w.f, "agent.test"), 1); /* no reply to a thank-you */
	assert_int_equal(bsky_llm_calls(a.home), 2);        /* never shown to the model */
	bsky_agent_stop(&a);
	/* `general-agent why`: each one walk, one record decision */
	bsky_story_one_walk(&a, "who keeps the escape", "answered");
	bsky_story_one_walk(&a, "settles it for me", "answered");
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 7. identity, expression and a ritual's opening ------------------------------------ */

/* Top-level posts of handle whose text starts with prefix. */
static size_t top_posts(struct bskyfake *f, const char *handle, const char *prefix)
{
	cJSON *recs = bskyfake_records(f, handle, "app.bsky.feed.post");
	size_t n = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, recs)
	{
		const cJSON *v = cJSON_GetObjectItem(r, "value");
		if (!cJSON_GetObjectItem(v, "reply") &&
		    strncmp(bsky_jstr(v, "text", NULL, NULL), prefix, strlen(prefix)) == 0)
			n++;
	}
	cJSON_Delete(recs);
	return n;
}

static bool wait_top(struct bskyfake *f, const char *handle, const char *prefix, size_t n, int ms)
{
	int64_t end = bsky_mono_ms() + ms;
	while (bsky_mono_ms() < end && top_posts(f, handle, prefix) < n)
		usleep(50000);
	return top_posts(f, handle, prefix) >= n;
}

/* A home where an expression is due (the schedule says so) and the
 * expression and ritual-initiation skills are installed (the lead ships
 * them in skills/; here the agent's own), with this SELF.md. */
static void expression_home(const char *home, const char *self_md)
{
	char dir[1024];
	static const char *const dirs[] = {"skills", "skills/expression",
	                                   "skills/ritual-initiation", "memory"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(dir, sizeof dir, "%s/%s", home, dirs[i]);
		mkdir(dir, 0700);
	}
	home_write(home, "skills/expression/SKILL.md",
	           "# Expression\n\n## System Prompt\n\nWrite one post as @{{blueskyUsername}}.\n");
	home_write(home, "skills/ritual-initiation/SKILL.md",
	           "# Ritual\n\n## System Prompt\n\nOpen today's ritual as {{agentName}}.\n");
	home_write(home, "SELF.md", self_md);
	home_write(home, "memory/bluesky.json",
	           "{\"version\":\"0.0.0\",\"savedAt\":\"2026-01-01T00:00:00.000Z\","
	           "\"data\":{\"nextExpressionMs\":1}}");
}

/* "TZ=…" that makes the agent's local time midday, whatever the clock: no
 * quiet hours. */
static void midday_tz(char tz[32])
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	snprintf(tz, 32, "TZ=LOC%+d", tm.tm_hour - 12);
}

static void test_proactive_posts(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	expression_home(a.home,
	                "# Ada\n\nI'm Ada.\n\n## Values\n\n- Small sturdy tools\n\n"
	                "## Daily Rituals\n\n- **Standup** [daily] (www-lil-intdev-standup)\n"
	                "  Participants: @human.test\n  Role: initiator\n  What did we learn?\n");
	static const char script[] =
	        "[{\"match\":{\"tool_choice\":\"bluesky_post\",\"last_user_contains\":"
	        "\"Ritual: Standup\"},\"tool_calls\":[{\"name\":\"bluesky_post\",\"arguments\":"
	        "{\"text\":\"Standup: @human.test what is one thing you learned yesterday?\"}}]},"
	        /* the revision (§7.1): asked once, because the draft below only
	         * has a bounded question — a weak invitation */
	        "{\"match\":{\"tool_choice\":\"bluesky_post\",\"last_user_contains\":"
	        "\"stronger invitation\"},\"tool_calls\":[{\"name\":\"bluesky_post\","
	        "\"arguments\":{\"text\":\"Small tools last longest. Which one do you still "
	        "use daily?\"}}]},"
	        "{\"match\":{\"tool_choice\":\"bluesky_post\",\"last_user_contains\":"
	        "\"Small sturdy tools\"},\"tool_calls\":[{\"name\":\"bluesky_post\",\"arguments\":"
	        "{\"text\":\"Small tools last longest. What's one you still use daily?\"}}]},"
	        "{\"content\":\"Posted.\"}]";
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	char tz[32];
	midday_tz(tz);
	const char *extra = tz;
	snprintf(a.user, sizeof a.user, "AGENT_BLUESKY_USERNAME=%s", "agent.test");
	snprintf(a.service, sizeof a.service, "BLUESKY_SERVICE=%s", bskyfake_base_url(w.f));
	const char *env[] = {"AGENT_NAME=Ada",
	                     a.service,
	                     a.user,
	                     "AGENT_BLUESKY_PASSWORD=" PASSWORD,
	                     "OWNER_BLUESKY_SOCIAL_HANDLE=owner.test",
	                     a.owner,
	                     "AGENT_GITHUB_USERNAME=ada-bot",
	                     llm.env,
	                     "LLM_MODEL=fake-model",
	                     "LLM_API_KEY=test-key-0123456789",
	                     "GA_BLUESKY_AWARENESS_MS=400",
	                     "GA_BLUESKY_EXPRESSION_MS=500",
	                     "GA_BLUESKY_RITUAL_MS=700",
	                     "GA_BLUESKY_PACE_MS=50",
	                     "GA_BLUESKY_MIN_INTERVAL_MS=50",
	                     "GA_BLUESKY_SPACING_MS=20",
	                     "DASHBOARD_ADDR=off",
	                     extra,
	                     NULL};
	for (int round = 0; round < 2; round++) {
		if (proc_start(&a.p, a.home, (const char *const[]){NULL}, env) != 0)
			fail_msg("cannot start general-agent");
		if (!wait_top(w.f, "agent.test", "Standup:", 1, W) ||
		    !wait_top(w.f, "agent.test", "Small tools", 1, W) ||
		    !wait_top(w.f, "agent.test", "\xF0\x9F\x94\x97\xE2\x80\x94", 1, W)) {
			bsky_agent_dump(&a);
			fail_msg("round %d: a proactive post is missing", round);
		}
		settle(2500);
		/* once each, also after the restart (the ritual's day, the
		 * expression's schedule, the identity post's URI) */
		assert_int_equal(top_posts(w.f, "agent.test", "Standup:"), 1);
		assert_int_equal(top_posts(w.f, "agent.test", "Small tools"), 1);
		/* the revision went out, never the weak draft (Scenario 1.8) */
		assert_int_equal(top_posts(w.f, "agent.test", "Small tools last longest. Which"),
		                 1);
		assert_int_equal(top_posts(w.f, "agent.test", "\xF0\x9F\x94\x97\xE2\x80\x94"), 1);
		bsky_agent_stop(&a);
	}
	/* exactly one revision request, in the decision log */
	char *dl = home_read(a.home, "memory/decisions.jsonl");
	int revisions = 0;
	for (const char *p = dl; p && (p = strstr(p, "\"invitation_revise\"")); p++)
		revisions++;
	free(dl);
	assert_int_equal(revisions, 1);
	char *st = home_read(a.home, "memory/bluesky.json");
	assert_non_null(st);
	cJSON *sj = cJSON_Parse(st);
	free(st);
	const cJSON *rit = cJSON_GetArrayItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(sj, "data"), "rituals"), 0);
	assert_string_equal(bsky_jstr(rit, "name", NULL, NULL), "Standup");
	assert_int_equal(strlen(bsky_jstr(rit, "lastInitiatedDate", NULL, NULL)), 10);
	assert_int_equal(strncmp(bsky_jstr(rit, "todayThreadUri", NULL, NULL), "at://", 5), 0);
	cJSON_Delete(sj);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* Lines of home's JSON-lines file name (each parsed) that pred holds for. */
static int jsonl_count(const char *home, const char *name,
                       bool (*pred)(const cJSON *e, const void *ud), const void *ud)
{
	char *log = home_read(home, name);
	int n = 0;
	for (char *line = log, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		cJSON *e = cJSON_Parse(line);
		n += e && pred(e, ud);
		cJSON_Delete(e);
		if (!next)
			break;
	}
	free(log);
	return n;
}

struct audit_want {
	const char *target_prefix, *verdict;
};

static bool audit_is(const cJSON *e, const void *ud)
{
	const struct audit_want *w = ud;
	const char *t = bsky_jstr(e, "target", NULL, NULL);
	return strncmp(t, w->target_prefix, strlen(w->target_prefix)) == 0 &&
	       strcmp(bsky_jstr(e, "verdict", NULL, NULL), w->verdict) == 0;
}

/* Lines of outbound's audit (memory/send_audit.jsonl) whose target starts
 * with target_prefix and whose verdict is verdict ("allow" / "deny"). */
static int audit_count(const char *home, const char *target_prefix, const char *verdict)
{
	const struct audit_want w = {target_prefix, verdict};
	return jsonl_count(home, "memory/send_audit.jsonl", audit_is, &w);
}

/* ---- 8. startup cleanup (Scenario 1.5) ------------------------------------------------- */

static void test_pruning(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	/* the feed before the start: three identical posts, and a thread with
	 * three closings of ours */
	char first[BSKYFAKE_URI_MAX], root[BSKYFAKE_URI_MAX], keep_closing[BSKYFAKE_URI_MAX];
	assert_int_equal(
	        bskyfake_post(w.f, "agent.test", "Small tools last longest.", NULL, first, NULL),
	        0);
	usleep(20000);
	assert_int_equal(
	        bskyfake_post(w.f, "agent.test", "Small tools last longest.", NULL, NULL, NULL), 0);
	usleep(20000);
	assert_int_equal(bskyfake_post(w.f, "agent.test", "small tools  last longest. @human.test",
	                               NULL, NULL, NULL),
	                 0);
	assert_int_equal(bskyfake_post(w.f, "human.test", "What lasts longest?", NULL, root, NULL),
	                 0);
	usleep(20000);
	assert_int_equal(bskyfake_post(w.f, "agent.test", "Thanks!", root, keep_closing, NULL), 0);
	usleep(20000);
	assert_int_equal(bskyfake_post(w.f, "agent.test", "Appreciate it!", root, NULL, NULL), 0);
	usleep(20000);
	assert_int_equal(bskyfake_post(w.f, "agent.test", "Likewise!", root, NULL, NULL), 0);
	assert_int_equal(bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.post"), 6);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	char *script = bsky_reply_script("unused", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	int64_t end = bsky_mono_ms() + W;
	while (bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.post") > 2 &&
	       bsky_mono_ms() < end)
		usleep(50000);
	settle(1500);
	cJSON *recs = bskyfake_records(w.f, "agent.test", "app.bsky.feed.post");
	if (cJSON_GetArraySize(recs) != 2) {
		bsky_agent_dump(&a);
		fail_msg("%d posts left, want the oldest duplicate and the first closing",
		         cJSON_GetArraySize(recs));
	}
	bool kept_first = false, kept_closing = false;
	const cJSON *r;
	cJSON_ArrayForEach(r, recs)
	{
		kept_first |= strcmp(bsky_jstr(r, "uri", NULL, NULL), first) == 0;
		kept_closing |= strcmp(bsky_jstr(r, "uri", NULL, NULL), keep_closing) == 0;
	}
	cJSON_Delete(recs);
	assert_true(kept_first);
	assert_true(kept_closing);
	/* each deletion journalled and in the story */
	char *j = home_read(a.home, "memory/journal.jsonl");
	int n = 0;
	for (const char *q = j; q && (q = strstr(q, "\"op\":\"done\",\"key\":\"prune:")); q++)
		n++;
	free(j);
	assert_int_equal(n, 4);
	/* each deletion went through outbound: permission-checked and audited */
	assert_int_equal(audit_count(a.home, "bluesky:delete", "allow"), 4);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 9. peers: discovered, followed and announced once ----------------------------------- */

/* A world with a peer agent (peer.test, GitHub peer-a): its identity
 * post, then it mentions us; and our agent's home (*a, not started). */
static void peer_world(struct world *w, char peer_did[BSKYFAKE_DID_MAX], struct bsky_agent *a)
{
	world_new(w);
	*a = (struct bsky_agent){.home = home_new()};
	snprintf(a->owner, sizeof a->owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w->owner_did);
	bskyfake_add_account(w->f, "peer.test", "peer-pass", peer_did);
	assert_int_equal(bskyfake_post(w->f, "peer.test",
	                               "\xF0\x9F\x94\x97\xE2\x80\x94`peer-a` I am excited to use "
	                               "GitHub to work on projects with my friends! "
	                               "https://github.com/peer-a",
	                               NULL, NULL, NULL),
	                 0);
	assert_int_equal(bskyfake_post(w->f, "peer.test", "@agent.test shall we pair on the lexer?",
	                               NULL, NULL, NULL),
	                 0);
}

static void test_peers(void **state)
{
	(void)state;
	struct world w;
	char peer_did[BSKYFAKE_DID_MAX];
	struct bsky_agent a;
	peer_world(&w, peer_did, &a);
	/* the owner mentions a person who has none */
	assert_int_equal(bskyfake_post(w.f, "owner.test", "@agent.test say hi to @human.test", NULL,
	                               NULL, NULL),
	                 0);
	char *script = bsky_reply_script("Hi! Happy to meet you both here.", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	for (int round = 0; round < 2; round++) {
		start_agent(&a, w.f, "Ada", "agent.test", &llm, "GA_BLUESKY_PEERS_MS=300", NULL);
		if (!wait_top(w.f, "agent.test", "Working with @peer.test", 1, W)) {
			bsky_agent_dump(&a);
			fail_msg("the peer was not announced");
		}
		settle(2500);
		assert_int_equal(top_posts(w.f, "agent.test", "Working with"), 1);
		cJSON *follows = bskyfake_records(w.f, "agent.test", "app.bsky.graph.follow");
		assert_int_equal(cJSON_GetArraySize(follows), 1);
		assert_string_equal(
		        bsky_jstr(cJSON_GetArrayItem(follows, 0), "value", "subject", NULL),
		        peer_did);
		cJSON_Delete(follows);
		bsky_agent_stop(&a);
	}
	cJSON *ann = bskyfake_records(w.f, "agent.test", "app.bsky.feed.post");
	const cJSON *r;
	cJSON_ArrayForEach(r, ann)
	{
		const char *t = bsky_jstr(r, "value", "text", NULL);
		if (strncmp(t, "Working with", 12) == 0)
			assert_string_equal(t,
			                    "Working with @peer.test (https://github.com/peer-a) "
			                    "\xE2\x80\x94 looking forward to building together.");
	}
	cJSON_Delete(ann);
	char *peers = home_read(a.home, "memory/discovered_peers.json");
	assert_non_null(peers);
	assert_non_null(strstr(peers, "peer-a"));
	free(peers);
	/* the follow went through outbound once (permission, audit, journal) */
	char follow_target[BSKYFAKE_DID_MAX + 24];
	snprintf(follow_target, sizeof follow_target, "bluesky:follow:%s", peer_did);
	assert_int_equal(audit_count(a.home, follow_target, "allow"), 1);
	char *j = home_read(a.home, "memory/journal.jsonl");
	char done[BSKYFAKE_DID_MAX + 40];
	snprintf(done, sizeof done, "\"op\":\"done\",\"key\":\"follow:%s\"", peer_did);
	assert_non_null(j);
	assert_non_null(strstr(j, done));
	free(j);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* The announcement is the agent's voice phrase (voice-phrases.json
 * bluesky.peer_announcement beside SELF.md), not a text in the code. */
static void test_peer_announcement_in_voice(void **state)
{
	(void)state;
	struct world w;
	char peer_did[BSKYFAKE_DID_MAX];
	struct bsky_agent a;
	peer_world(&w, peer_did, &a);
	char *vtext = voice_text_with(VOICE_PEER_ANNOUNCEMENT,
	                              "Pairing up with @{{handle}} now: {{url}}", 0);
	home_write(a.home, "voice-phrases.json", vtext);
	free(vtext);
	char *script = bsky_reply_script("Hi! Happy to meet you here.", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, "GA_BLUESKY_PEERS_MS=300", NULL);
	if (!wait_top(w.f, "agent.test", "Pairing up with", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("the peer was not announced in the agent's voice");
	}
	settle(1500);
	assert_int_equal(top_posts(w.f, "agent.test", "Pairing up with"), 1);
	assert_int_equal(top_posts(w.f, "agent.test", "Working with"), 0);
	cJSON *recs = bskyfake_records(w.f, "agent.test", "app.bsky.feed.post");
	const cJSON *r;
	cJSON_ArrayForEach(r, recs)
	{
		const char *t = bsky_jstr(r, "value", "text", NULL);
		if (strncmp(t, "Pairing up with", 15) == 0)
			assert_string_equal(
			        t, "Pairing up with @peer.test now: https://github.com/peer-a");
	}
	cJSON_Delete(recs);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* `general-agent cross deny 'bluesky:follow:*'`: the peer is discovered but
 * not followed (nor announced); the refusal is a decision with its rule and
 * reason on the peers' story, and a denied line in the audit. */
static void test_follow_denied(void **state)
{
	(void)state;
	struct world w;
	char peer_did[BSKYFAKE_DID_MAX];
	struct bsky_agent a;
	peer_world(&w, peer_did, &a);
	char *out = NULL, *err = NULL;
	const char *const env[] = {"SPACE_URL=ws://127.0.0.1:1", NULL};
	assert_int_equal(proc_run(a.home, (const char *const[]){"cross", "mode", "denylist", NULL},
	                          env, &out, &err),
	                 0);
	free(out);
	free(err);
	assert_int_equal(proc_run(a.home,
	                          (const char *const[]){"cross", "deny", "bluesky:follow:*", NULL},
	                          env, &out, &err),
	                 0);
	free(out);
	free(err);
	char *script = bsky_reply_script("Hi! Happy to meet you here.", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, "GA_BLUESKY_PEERS_MS=300", NULL);
	char follow_target[BSKYFAKE_DID_MAX + 24];
	snprintf(follow_target, sizeof follow_target, "bluesky:follow:%s", peer_did);
	int64_t end = bsky_mono_ms() + W;
	while (audit_count(a.home, follow_target, "deny") < 2 && bsky_mono_ms() < end)
		usleep(50000);
	if (audit_count(a.home, follow_target, "deny") < 2) {
		bsky_agent_dump(&a);
		fail_msg("no refused follow in the audit");
	}
	settle(500);
	bsky_agent_stop(&a);
	/* nothing followed, nothing announced, nothing allowed */
	assert_int_equal(bskyfake_record_count(w.f, "agent.test", "app.bsky.graph.follow"), 0);
	assert_int_equal(top_posts(w.f, "agent.test", "Working with"), 0);
	assert_int_equal(audit_count(a.home, "bluesky:follow:", "allow"), 0);
	/* the refusal is on the story, with outbound's rule and reason */
	char *log = home_read(a.home, "memory/decisions.jsonl");
	assert_non_null(log);
	bool found = false;
	for (char *line = log, *next; line && *line && !found; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		found = strstr(line, "\"send_permission\"") && strstr(line, peer_did) &&
		        strstr(line, "was not made") && strstr(line, "bluesky:follow:*");
		if (!next)
			break;
	}
	if (!found) {
		bsky_agent_dump(&a);
		fail_msg("no decision says the follow was refused by the send permissions");
	}
	free(log);
	/* peers state: discovered, not followed */
	char *peers = home_read(a.home, "memory/discovered_peers.json");
	assert_non_null(peers);
	assert_non_null(strstr(peers, "peer-a"));
	free(peers);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 10. Social Mechanics and the owner; the output self-check --------------------------- */

static bool wait_likes(struct bskyfake *f, const char *handle, size_t n, int ms)
{
	int64_t end = bsky_mono_ms() + ms;
	while (bsky_mono_ms() < end && bskyfake_record_count(f, handle, "app.bsky.feed.like") < n)
		usleep(50000);
	return bskyfake_record_count(f, handle, "app.bsky.feed.like") >= n;
}

static void test_limits_and_owner(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	/* one reply per thread, says SELF.md */
	home_write(a.home, "SELF.md",
	           "# Ada\n\nI'm Ada.\n\n## Social Mechanics\n\n| Signal | Threshold |\n"
	           "|---|---|\n| My replies in thread | 1 |\n| Thread depth | 12 |\n");
	static const char *const texts[] = {
	        "The lexer owns escapes; the parser only sees tokens and their spans.",
	        "For the owner: the release notes are drafted in the wiki, ready to review.",
	        "And yes, the changelog links each fix to its issue.",
	        "Absolutely, looking forward to it!",
	};
	char *script = bsky_reply_script_seq(texts, 4, 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	char h1[BSKYFAKE_URI_MAX];
	assert_int_equal(
	        bskyfake_post(w.f, "human.test", "@agent.test who owns escapes?", NULL, h1, NULL),
	        0);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	if (!wait_replies(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("no first reply");
	}
	cJSON *r = newest_reply(w.f, "agent.test");
	char ours[BSKYFAKE_URI_MAX];
	snprintf(ours, sizeof ours, "%s", bsky_jstr(r, "uri", NULL, NULL));
	cJSON_Delete(r);
	/* the human asks again in the same thread: the limit is reached —
	 * a like, not a second reply, and the model is not asked */
	char h2[BSKYFAKE_URI_MAX];
	assert_int_equal(
	        bskyfake_post(w.f, "human.test", "And who owns the spans then?", ours, h2, NULL),
	        0);
	if (!wait_likes(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("the reply limit did not end with a like");
	}
	cJSON *ls = bskyfake_records(w.f, "agent.test", "app.bsky.feed.like");
	assert_string_equal(bsky_jstr(cJSON_GetArrayItem(ls, 0), "value", "subject", "uri"), h2);
	cJSON_Delete(ls);
	assert_int_equal(replies_of(w.f, "agent.test"), 1);
	assert_int_equal(bsky_llm_calls(a.home), 2);
	/* the owner: answered, and answered again in the same thread */
	char o1[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "owner.test", "@agent.test are the notes ready?", NULL,
	                               o1, NULL),
	                 0);
	if (!wait_replies(w.f, "agent.test", 2, W)) {
		bsky_agent_dump(&a);
		fail_msg("the owner was not answered");
	}
	r = newest_reply(w.f, "agent.test");
	snprintf(ours, sizeof ours, "%s", bsky_jstr(r, "uri", NULL, NULL));
	cJSON_Delete(r);
	assert_int_equal(bskyfake_post(w.f, "owner.test", "And the changelog?", ours, NULL, NULL),
	                 0);
	if (!wait_replies(w.f, "agent.test", 3, W)) {
		bsky_agent_dump(&a);
		fail_msg("the owner was stopped by the reply limit");
	}
	/* the output self-check: after a reply in the thread, a low-value
	 * closing from the model becomes a like (Scenario 1.11) */
	r = newest_reply(w.f, "agent.test");
	snprintf(ours, sizeof ours, "%s", bsky_jstr(r, "uri", NULL, NULL));
	cJSON_Delete(r);
	char o3[BSKYFAKE_URI_MAX];
	assert_int_equal(
	        bskyfake_post(w.f, "owner.test", "Great, ship it tomorrow then.", ours, o3, NULL),
	        0);
	if (!wait_likes(w.f, "agent.test", 2, W)) {
		bsky_agent_dump(&a);
		fail_msg("the self-check did not turn the closing into a like");
	}
	settle(1500);
	assert_int_equal(replies_of(w.f, "agent.test"), 3);
	char *e = proc_stderr(&a.p);
	assert_non_null(e);
	assert_non_null(strstr(e, "Self-check: converting low-value reply to like"));
	free(e);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 11. a circular thread is never shown to the model (Scenario 1.12) ------------------- */

static void test_circular_thread(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	/* our post, then an alternating exchange of thanks and restatements */
	char p0[BSKYFAKE_URI_MAX], p1[BSKYFAKE_URI_MAX], p2[BSKYFAKE_URI_MAX], p3[BSKYFAKE_URI_MAX],
	        p4[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "agent.test", "The lexer rewrite is planned for May.",
	                               NULL, p0, NULL),
	                 0);
	assert_int_equal(bskyfake_post(w.f, "human.test", "Thanks, great plan, I'll wait for it.",
	                               p0, p1, NULL),
	                 0);
	assert_int_equal(bskyfake_post(w.f, "agent.test", "Great, once it's up I will say so here.",
	                               p1, p2, NULL),
	                 0);
	assert_int_equal(bskyfake_post(w.f, "human.test", "Awesome, looking forward to it a lot.",
	                               p2, p3, NULL),
	                 0);
	(void)p3;
	/* the last one is long enough not to be a closing by itself */
	assert_int_equal(
	        bskyfake_post(w.f, "human.test",
	                      "Thank you again, really: once it's live I will read every line of "
	                      "it, and when the release is out I will tell everyone about it here.",
	                      p2, p4, NULL),
	        0);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	char *script = bsky_reply_script("This should never be written.", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	if (!wait_likes(w.f, "agent.test", 2, W)) {
		bsky_agent_dump(&a);
		fail_msg("the circular thread did not end with likes");
	}
	settle(1500);
	assert_int_equal(bsky_llm_calls(a.home), 0);
	char *log = home_read(a.home, "memory/decisions.jsonl");
	assert_non_null(log);
	assert_non_null(strstr(log, "\"circular\""));
	free(log);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 12. a promise in a reply becomes a commitment (§6.12) ------------------------------ */

static void test_reply_promise(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	/* the reply promises; the extraction call (no tools, "Reply 1:") finds
	 * one create_issue and one low-confidence post that is dropped */
	char *base =
	        bsky_reply_script("Good catch. I'll open an issue for this in ada-bot/tools.", 0);
	cJSON *arr = cJSON_Parse(base);
	free(base);
	cJSON *ex = cJSON_CreateObject();
	cJSON_AddStringToObject(cJSON_AddObjectToObject(ex, "match"), "last_user_contains",
	                        "Reply 1:");
	cJSON_AddStringToObject(
	        ex, "content",
	        "[{\"description\":\"The parser drops a trailing backslash\",\"type\":"
	        "\"create_issue\",\"params\":{\"title\":\"Trailing backslash dropped\",\"repo\":"
	        "\"ada-bot/tools\"},\"confidence\":\"high\"},{\"description\":\"maybe a post\","
	        "\"type\":\"post_bluesky\",\"params\":{},\"confidence\":\"low\"}]");
	cJSON_InsertItemInArray(arr, 0, ex);
	char *script = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	char uri[BSKYFAKE_URI_MAX], cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test",
	                               "@agent.test the parser drops a trailing backslash", NULL,
	                               uri, cid),
	                 0);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	if (!wait_replies(w.f, "agent.test", 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("no reply to the mention");
	}
	char *ledger = NULL;
	int64_t end = bsky_mono_ms() + W;
	while (bsky_mono_ms() < end) {
		free(ledger);
		ledger = home_read(a.home, "memory/commitments.jsonl");
		if (ledger && strstr(ledger, "\"create_issue\""))
			break;
		usleep(50000);
	}
	if (!ledger || !strstr(ledger, "\"create_issue\"")) {
		bsky_agent_dump(&a);
		fail_msg("the promise did not reach the ledger");
	}
	cJSON *c = cJSON_Parse(ledger);
	free(ledger);
	assert_non_null(c);
	assert_string_equal(bsky_jstr(c, "source", NULL, NULL), "bluesky");
	assert_string_equal(bsky_jstr(c, "status", NULL, NULL), "pending");
	assert_string_equal(bsky_jstr(c, "params", "sourceThreadUri", NULL), uri);
	assert_string_equal(bsky_jstr(c, "params", "sourceThreadCid", NULL), cid);
	assert_string_equal(bsky_jstr(c, "params", "owner", NULL), "ada-bot");
	assert_string_equal(bsky_jstr(c, "params", "repo", NULL), "tools");
	assert_string_equal(bsky_jstr(c, "params", "title", NULL), "Trailing backslash dropped");
	cJSON_Delete(c);
	settle(500);
	/* one commitment only: the low-confidence post was dropped */
	char *again = home_read(a.home, "memory/commitments.jsonl");
	assert_null(strstr(again, "post_bluesky"));
	free(again);
	assert_int_equal(replies_of(w.f, "agent.test"), 1);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 13. the replies already under a post (§6.8 steps 2 and 6, §6.14) ------------------ */

/* A decision in memory/decisions.jsonl: its message id (a prefix when
 * id_prefix), stage, verdict and rule (NULL: any; rule may be a part of
 * the rule's name when rule_part). */
struct decision_want {
	const char *id;
	bool id_prefix;
	const char *stage, *verdict, *rule;
	bool rule_part;
};

static bool decision_is(const cJSON *e, const void *ud)
{
	const struct decision_want *w = ud;
	const char *id = bsky_jstr(e, "messageId", NULL, NULL);
	const char *rule = bsky_jstr(e, "rule", NULL, NULL);
	return (w->id_prefix ? strncmp(id, w->id, strlen(w->id)) == 0 : strcmp(id, w->id) == 0) &&
	       (!w->stage || strcmp(bsky_jstr(e, "stage", NULL, NULL), w->stage) == 0) &&
	       (!w->verdict || strcmp(bsky_jstr(e, "verdict", NULL, NULL), w->verdict) == 0) &&
	       (!w->rule ||
	        (w->rule_part ? strstr(rule, w->rule) != NULL : strcmp(rule, w->rule) == 0));
}

static bool has_decision(const char *home, const char *id, const char *rule, const char *verdict)
{
	const struct decision_want w = {.id = id, .verdict = verdict, .rule = rule};
	return jsonl_count(home, "memory/decisions.jsonl", decision_is, &w) > 0;
}

static bool wait_decision(const char *home, const char *id, const char *rule, const char *verdict,
                          int ms)
{
	int64_t end = bsky_mono_ms() + ms;
	while (bsky_mono_ms() < end && !has_decision(home, id, rule, verdict))
		usleep(50000);
	return has_decision(home, id, rule, verdict);
}

/* Whether handle liked uri. */
static bool liked(struct bskyfake *f, const char *handle, const char *uri)
{
	cJSON *ls = bskyfake_records(f, handle, "app.bsky.feed.like");
	bool yes = false;
	const cJSON *l;
	cJSON_ArrayForEach(l, ls) yes |= strcmp(bsky_jstr(l, "value", "subject", "uri"), uri) == 0;
	cJSON_Delete(ls);
	return yes;
}

static bool wait_liked(struct bskyfake *f, const char *handle, const char *uri, int ms)
{
	int64_t end = bsky_mono_ms() + ms;
	while (bsky_mono_ms() < end && !liked(f, handle, uri))
		usleep(50000);
	return liked(f, handle, uri);
}

/* Our replies whose parent is uri. */
static size_t replies_under(struct bskyfake *f, const char *handle, const char *uri)
{
	cJSON *recs = bskyfake_records(f, handle, "app.bsky.feed.post");
	size_t n = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, recs) n +=
	        strcmp(bsky_jstr(cJSON_GetObjectItem(r, "value"), "reply", "parent", "uri"), uri) ==
	        0;
	cJSON_Delete(recs);
	return n;
}

static bool llm_saw(const char *home, const char *text)
{
	char *rec = bsky_llm_record(home);
	bool yes = rec && strstr(rec, text);
	free(rec);
	return yes;
}

/*   - a mention we already answered (our reply is under it: another client,
 *     a lost state file) is not answered again, and the model is not asked
 *     (decision already_replied);
 *   - a mention a known peer answered seconds ago gets a like, the model is
 *     not asked (decision peer_replied);
 *   - a peer that answers while the model composes: the refresh before
 *     sending turns our reply into a like. */
static void test_thread_replies(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	char peer_did[BSKYFAKE_DID_MAX];
	bskyfake_add_account(w.f, "peer.test", "peer-pass", peer_did);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	/* peer.test is a known peer SOUL (its identity post was found before) */
	char memdir[512];
	snprintf(memdir, sizeof memdir, "%s/memory", a.home);
	mkdir(memdir, 0700);
	char peers[1024];
	snprintf(peers, sizeof peers,
	         "{\"version\":\"0.0.0\",\"savedAt\":\"2026-01-01T00:00:00.000Z\",\"data\":{"
	         "\"peers\":{\"peer-a\":{\"githubUsername\":\"peer-a\",\"blueskyHandle\":"
	         "\"peer.test\",\"did\":\"%s\",\"discoveredVia\":\"thread\",\"discoveredAtMs\":1,"
	         "\"lastVerifiedAtMs\":%lld,\"followedOnBluesky\":true,"
	         "\"announcedOnBluesky\":true}}}}",
	         peer_did, (long long)time(NULL) * 1000);
	home_write(a.home, "memory/discovered_peers.json", peers);
	/* the model: the third mention is answered slowly; anything else it
	 * is asked gets a text the test refuses to see */
	static const char script[] =
	        "[{\"match\":{\"tools\":[\"bluesky_reply\"],\"last_user_contains\":"
	        "\"who owns the spans now\"},\"delay_ms\":2500,\"times\":1,\"tool_calls\":[{"
	        "\"name\":\"bluesky_reply\",\"arguments\":{\"text\":\"The lexer owns the spans "
	        "now; the parser only reads them.\",\"post_uri\":\"at://x\",\"post_cid\":\"b\"}}]},"
	        "{\"match\":{\"last_user_contains\":\"Answer this post\"},\"tool_calls\":[{"
	        "\"name\":\"bluesky_reply\",\"arguments\":{\"text\":\"This should never be "
	        "written.\",\"post_uri\":\"at://x\",\"post_cid\":\"b\"}}]}]";
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	/* h1: answered already (our reply is there) */
	char h1[BSKYFAKE_URI_MAX], ours[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test", "@agent.test is the lexer rewrite done?",
	                               NULL, h1, NULL),
	                 0);
	assert_int_equal(bskyfake_post(w.f, "agent.test", "Not yet: the spans come next week.", h1,
	                               ours, NULL),
	                 0);
	/* h2: the peer answered it a moment ago */
	char h2[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test",
	                               "@agent.test @peer.test which lexer keeps the spans?", NULL,
	                               h2, NULL),
	                 0);
	assert_int_equal(bskyfake_post(w.f, "peer.test", "The new one keeps a span per token.", h2,
	                               NULL, NULL),
	                 0);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	if (!wait_decision(a.home, h1, "already_replied", "block", W) ||
	    !wait_liked(w.f, "agent.test", h2, W)) {
		bsky_agent_dump(&a);
		fail_msg("h1 not recognised as answered, or h2 not liked");
	}
	assert_true(has_decision(a.home, h2, "peer_replied", "react"));
	/* h3: the peer answers while our model is composing */
	char h3[BSKYFAKE_URI_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test", "@agent.test who owns the spans now?",
	                               NULL, h3, NULL),
	                 0);
	int64_t end = bsky_mono_ms() + W;
	while (bsky_mono_ms() < end && !llm_saw(a.home, "who owns the spans now"))
		usleep(20000);
	if (!llm_saw(a.home, "who owns the spans now")) {
		bsky_agent_dump(&a);
		fail_msg("the model was not asked about h3");
	}
	assert_int_equal(bskyfake_post(w.f, "peer.test", "The lexer does, since the rewrite.", h3,
	                               NULL, NULL),
	                 0);
	if (!wait_liked(w.f, "agent.test", h3, W)) {
		bsky_agent_dump(&a);
		fail_msg("the reply composed while the peer answered did not become a like");
	}
	assert_true(has_decision(a.home, h3, "peer_replied", "react"));
	settle(1500);
	/* our only reply is the one that was there; the model never saw h1
	 * nor h2 */
	assert_int_equal(replies_of(w.f, "agent.test"), 1);
	assert_int_equal(replies_under(w.f, "agent.test", h1), 1);
	assert_int_equal(replies_under(w.f, "agent.test", h3), 0);
	if (getenv("GA_TEST_VERBOSE"))
		bsky_agent_dump(&a);
	assert_false(llm_saw(a.home, "is the lexer rewrite done"));
	assert_false(llm_saw(a.home, "which lexer keeps the spans"));
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 14. the model ends a conversation with graceful_exit(like) (§6.13) ------------------- */

static void test_graceful_exit_like(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	char uri[BSKYFAKE_URI_MAX], cid[BSKYFAKE_CID_MAX];
	assert_int_equal(bskyfake_post(w.f, "human.test",
	                               "@agent.test anything left to add on the lexer, or are we "
	                               "done for today?",
	                               NULL, uri, cid),
	                 0);
	/* the model closes with a like of this post, then its final word */
	cJSON *arr = cJSON_CreateArray();
	cJSON *e = cJSON_CreateObject();
	cJSON *m = cJSON_AddObjectToObject(e, "match");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "tools"),
	                     cJSON_CreateString("graceful_exit"));
	cJSON_AddNumberToObject(e, "times", 1);
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", "graceful_exit");
	cJSON *args = cJSON_AddObjectToObject(c, "arguments");
	cJSON_AddStringToObject(args, "platform", "bluesky");
	cJSON_AddStringToObject(args, "identifier", uri);
	cJSON_AddStringToObject(args, "closing_type", "like");
	cJSON_AddStringToObject(args, "target_uri", uri);
	cJSON_AddStringToObject(args, "target_cid", cid);
	cJSON_AddStringToObject(args, "reason", "we said what there was to say");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(e, "tool_calls"), c);
	cJSON_AddItemToArray(arr, e);
	cJSON *fin = cJSON_CreateObject();
	cJSON_AddStringToObject(fin, "content", "Done.");
	cJSON_AddItemToArray(arr, fin);
	char *script = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, NULL, NULL);
	if (!wait_liked(w.f, "agent.test", uri, W)) {
		bsky_agent_dump(&a);
		fail_msg("graceful_exit(like) did not like the post");
	}
	settle(1500);
	/* a like, no message; the story says the model ended it */
	assert_int_equal(bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.like"), 1);
	assert_int_equal(replies_of(w.f, "agent.test"), 0);
	assert_true(llm_saw(a.home, "graceful_exit"));
	assert_true(has_decision(a.home, uri, "graceful_exit", "react"));
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

/* ---- 15. an expression that echoes our own recent post is not posted (§7.1) --------------- */

static void test_expression_echo(void **state)
{
	(void)state;
	struct world w;
	world_new(&w);
	/* our earlier post, in the feed before the start */
	static const char earlier[] = "Here is my checklist for picking small sturdy tools that "
	                              "outlast every framework: https://example.com/tools";
	assert_int_equal(bskyfake_post(w.f, "agent.test", earlier, NULL, NULL, NULL), 0);
	struct bsky_agent a = {.home = home_new()};
	snprintf(a.owner, sizeof a.owner, "OWNER_BLUESKY_SOCIAL_HANDLE_DID=%s", w.owner_did);
	expression_home(a.home, "# Ada\n\nI'm Ada.\n\n## Values\n\n- Small sturdy tools\n");
	/* the draft says the earlier post again in other words (a strong
	 * invitation: a template and its link, so only the echo can stop it) */
	static const char script[] =
	        "[{\"match\":{\"tool_choice\":\"bluesky_post\"},\"tool_calls\":[{\"name\":"
	        "\"bluesky_post\",\"arguments\":{\"text\":\"Here is a checklist for picking small, "
	        "sturdy tools that outlast any framework: https://example.com/tools\"}}]},"
	        "{\"content\":\"Posted.\"}]";
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	char tz[32];
	midday_tz(tz);
	start_agent(&a, w.f, "Ada", "agent.test", &llm, "GA_BLUESKY_EXPRESSION_MS=300", tz);
	/* the validator refuses it: an echo of our own post */
	const struct decision_want echo = {.id = "expression:",
	                                   .id_prefix = true,
	                                   .stage = "validator",
	                                   .verdict = "reject",
	                                   .rule = "echo",
	                                   .rule_part = true};
	int64_t end = bsky_mono_ms() + W;
	while (bsky_mono_ms() < end &&
	       jsonl_count(a.home, "memory/decisions.jsonl", decision_is, &echo) == 0)
		usleep(50000);
	if (jsonl_count(a.home, "memory/decisions.jsonl", decision_is, &echo) == 0) {
		bsky_agent_dump(&a);
		fail_msg("the echoing expression was not refused by the validator");
	}
	settle(1000);
	/* our feed holds the earlier post only */
	assert_int_equal(bskyfake_record_count(w.f, "agent.test", "app.bsky.feed.post"), 1);
	assert_int_equal(top_posts(w.f, "agent.test", "Here is a checklist"), 0);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
	bskyfake_free(w.f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_mention_one_reply),
	        cmocka_unit_test(test_kill_and_restart),
	        cmocka_unit_test(test_lost_answer_counted),
	        cmocka_unit_test(test_expired_token),
	        cmocka_unit_test(test_rate_limited),
	        cmocka_unit_test(test_two_agents),
	        cmocka_unit_test(test_thanks_liked),
	        cmocka_unit_test(test_proactive_posts),
	        cmocka_unit_test(test_pruning),
	        cmocka_unit_test(test_peers),
	        cmocka_unit_test(test_peer_announcement_in_voice),
	        cmocka_unit_test(test_follow_denied),
	        cmocka_unit_test(test_limits_and_owner),
	        cmocka_unit_test(test_circular_thread),
	        cmocka_unit_test(test_reply_promise),
	        cmocka_unit_test(test_thread_replies),
	        cmocka_unit_test(test_graceful_exit_like),
	        cmocka_unit_test(test_expression_echo),
	};
	/* BSKY_TEST=test_thread_replies runs one (cmocka's glob) */
	if (getenv("BSKY_TEST"))
		cmocka_set_test_filter(getenv("BSKY_TEST"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
