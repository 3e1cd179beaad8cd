/*
 * The agent on a REAL AT Protocol network, black-box: the general-agent
 * binary against dev-env's TestNetwork (PLC + PDS + AppView; atnet.h) —
 * every record it writes is validated by the PDS, every notification and
 * thread it reads comes from the AppView through the PDS — with
 * llmfake-server as its model.
 *
 * dev-env's PDS, AppView and PLC listen on EVERY interface of this machine
 * while the test runs (dev-env has no option to bind loopback only), on
 * ports it picks; PostgreSQL, Redis, the proxy the agents talk to and the
 * network's control API listen on 127.0.0.1. All of it stops when the test
 * ends (and dies with it).
 *
 *   - a mention after multi-byte text is answered once: reply refs to it,
 *     facets at byte offsets that the PDS accepts, the reply read back
 *     through the AppView; a mention that only thanks gets a like (rule
 *     react); `general-agent why` tells one walk for each;
 *   - a thread with SIGKILL at three points — the model composing (the
 *     notification read), the reply's request sent and held by the proxy
 *     (never reaching the PDS), the reply created by the PDS with its
 *     answer held — answers each post exactly once, counts every reply of
 *     ours once however it was learnt, and ends with a like at SELF.md's
 *     4 replies per thread; the like's story is one walk too;
 *   - alone (no room, no Redis) the agent answers a peer agent with local
 *     claims, says so in status and doctor, and counts a reply's chain
 *     along its branch, never a sibling branch;
 *   - two agents sharing Redis stop within MAX_ACL;
 *   - the network's clock moves past the access token's expiry: the agent
 *     refreshes the session (no second login) and answers.
 *
 * Skipped (77, saying why) when the network is not installed or
 * GA_SKIP_PDS=1. Waits poll until true or their timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "atnet.h"
#include "bsky_agent.h"
#include "proc.h"
#include "support_redis.h"

#define W  BSKY_AGENT_WAIT_MS
#define PW "net-pass-1234-abcd"

static struct atnet net;
static int seq; /* fresh handles per test: the network lives for the whole run */

/* ---- the network ----------------------------------------------------------------- */

static cJSON *call(const char *route, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cJSON *call(const char *route, const char *fmt, ...)
{
	char body[4096], why[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	cJSON *j = atnet_call(&net, route, body, why, sizeof why);
	if (!j)
		fail_msg("network %s: %s", route, why);
	return j;
}

struct who {
	char handle[64];
	char did[128];
};

static void account(struct who *w, const char *name)
{
	snprintf(w->handle, sizeof w->handle, "%s%d-%d.test", name, ++seq, (int)getpid() % 10000);
	cJSON *r = call("account", "{\"handle\":\"%s\",\"password\":\"%s\"}", w->handle, PW);
	snprintf(w->did, sizeof w->did, "%s", bsky_jstr(r, "did", NULL, NULL));
	cJSON_Delete(r);
}

struct ref {
	char uri[300];
	char cid[128];
};

/* A post by w (a reply to parent when given; chain >= 0: the gaChain an
 * agent writes), with its facets as the official client makes them. */
static void post(const struct who *w, const char *text, const struct ref *parent, int chain,
                 struct ref *out)
{
	/* a person answers what their app shows: the AppView has the parent
	 * (it indexes repositories in parallel, and a reply indexed before its
	 * parent notifies nobody) */
	if (parent)
		cJSON_Delete(call("process", "{}"));
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "handle", w->handle);
	cJSON_AddStringToObject(b, "password", PW);
	cJSON_AddStringToObject(b, "text", text);
	if (parent) {
		cJSON *p = cJSON_AddObjectToObject(b, "parent");
		cJSON_AddStringToObject(p, "uri", parent->uri);
		cJSON_AddStringToObject(p, "cid", parent->cid);
	}
	if (chain >= 0)
		cJSON_AddNumberToObject(b, "chain", chain);
	char *s = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	cJSON *r = call("post", "%s", s);
	free(s);
	if (out) {
		snprintf(out->uri, sizeof out->uri, "%s", bsky_jstr(r, "uri", NULL, NULL));
		snprintf(out->cid, sizeof out->cid, "%s", bsky_jstr(r, "cid", NULL, NULL));
	}
	cJSON_Delete(r);
}

/* The records of a collection in w's repository, newest first (caller
 * frees the array). */
static cJSON *records(const struct who *w, const char *collection)
{
	cJSON *r = call("records", "{\"repo\":\"%s\",\"collection\":\"%s\"}", w->did, collection);
	cJSON *recs = cJSON_DetachItemFromObject(r, "records");
	cJSON_Delete(r);
	return recs ? recs : cJSON_CreateArray();
}

static size_t replies_of(const struct who *w)
{
	cJSON *recs = records(w, "app.bsky.feed.post");
	size_t n = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, recs) n +=
	        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "value"), "reply") != NULL;
	cJSON_Delete(recs);
	return n;
}

static size_t likes_of(const struct who *w)
{
	cJSON *recs = records(w, "app.bsky.feed.like");
	size_t n = (size_t)cJSON_GetArraySize(recs);
	cJSON_Delete(recs);
	return n;
}

static bool wait_count(size_t (*count)(const struct who *), const struct who *w, size_t n, int ms)
{
	int64_t end = bsky_mono_ms() + ms;
	while (bsky_mono_ms() < end) {
		if (count(w) >= n)
			return true;
		usleep(100000);
	}
	return count(w) >= n;
}

/* w's reply whose parent is uri (caller frees), or NULL. */
static cJSON *reply_to(const struct who *w, const char *uri, int *how_many)
{
	cJSON *recs = records(w, "app.bsky.feed.post");
	cJSON *out = NULL;
	int n = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, recs)
	{
		const cJSON *parent = cJSON_GetObjectItem(
		        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "value"), "reply"), "parent");
		if (parent && strcmp(bsky_jstr(parent, "uri", NULL, NULL), uri) == 0) {
			n++;
			if (!out)
				out = cJSON_Duplicate(r, true);
		}
	}
	cJSON_Delete(recs);
	if (how_many)
		*how_many = n;
	return out;
}

static int held_now(const char *what)
{
	cJSON *h = call("held", "{}");
	int n = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(h, what));
	cJSON_Delete(h);
	return n;
}

static int proxied(const char *nsid)
{
	cJSON *h = call("held", "{}");
	int n = (int)cJSON_GetNumberValue(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(h, "counts"), nsid));
	cJSON_Delete(h);
	return n;
}

/* The agent's notifications as the AppView lists them (a failure's
 * evidence: what the agent could see). */
static void dump_notifications(const struct who *w)
{
	cJSON *nn = call("notifications", "{\"handle\":\"%s\",\"password\":\"%s\"}", w->handle, PW);
	char *s = cJSON_Print(nn);
	fprintf(stderr, "---- %s's notifications ----\n%s\n", w->handle, s);
	free(s);
	cJSON_Delete(nn);
}

static void wait_held(struct bsky_agent *a, const struct who *w)
{
	int64_t end = bsky_mono_ms() + W;
	while (held_now("held") < 1 && bsky_mono_ms() < end)
		usleep(50000);
	if (held_now("held") < 1) {
		bsky_agent_dump(a);
		dump_notifications(w);
		fail_msg("the agent's reply never reached the proxy");
	}
}

static void new_agent(struct bsky_agent *a, struct who *w, const char *name)
{
	cJSON_Delete(call("release", "{}")); /* no hold left by a failed test */
	memset(a, 0, sizeof *a);
	a->home = home_new();
	account(w, name);
}

/* ---- 1. a mention -------------------------------------------------------------------- */

static void test_mention_one_reply(void **state)
{
	(void)state;
	struct bsky_agent a;
	struct who ada, human;
	new_agent(&a, &ada, "ada");
	account(&human, "human");
	/* emoji before the facets: byte offsets differ from UTF-16 ones */
	char reply_text[300];
	snprintf(reply_text, sizeof reply_text,
	         "\xF0\x9F\x99\x82 \xE6\x97\xA5\xE6\x9C\xAC @%s the parser keeps the escape; see "
	         "https://example.com/docs for the details",
	         human.handle);
	char *script = bsky_reply_script(reply_text, 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	char text[300];
	snprintf(text, sizeof text,
	         "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD @%s how "
	         "does the parser handle a trailing backslash?",
	         ada.handle);
	struct ref m;
	post(&human, text, NULL, -1, &m);
	bsky_agent_start(&a, net.proxy, "Ada", ada.handle, PW, &llm, NULL);
	if (!wait_count(replies_of, &ada, 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("no reply to the mention");
	}
	/* a few more awareness checks (0.4 s each): still one */
	cJSON_Delete(call("process", "{}"));
	usleep(1500 * 1000);
	assert_int_equal(replies_of(&ada), 1);
	cJSON *r = reply_to(&ada, m.uri, NULL);
	assert_non_null(r);
	const cJSON *v = cJSON_GetObjectItem(r, "value");
	assert_string_equal(bsky_jstr(v, "text", NULL, NULL), reply_text);
	assert_string_equal(bsky_jstr(v, "reply", "root", "uri"), m.uri);
	assert_string_equal(bsky_jstr(v, "reply", "root", "cid"), m.cid);
	assert_string_equal(bsky_jstr(v, "reply", "parent", "cid"), m.cid);
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "gaChain")), 1);
	/* the facets the PDS accepted: the mention (resolved to the human's
	 * DID) and the link, at byte offsets */
	char at[80];
	snprintf(at, sizeof at, "@%s", human.handle);
	bsky_check_facets(v, at, human.did, "https://example.com/docs");
	char uri[300];
	snprintf(uri, sizeof uri, "%s", bsky_jstr(r, "uri", NULL, NULL));
	cJSON_Delete(r);
	/* read back through the AppView: the mention's thread holds the reply */
	cJSON *t = call("thread", "{\"handle\":\"%s\",\"password\":\"%s\",\"uri\":\"%s\"}",
	                human.handle, PW, m.uri);
	const cJSON *rep = cJSON_GetArrayItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(t, "thread"), "replies"), 0);
	assert_string_equal(bsky_jstr(rep, "post", "uri", NULL), uri);
	assert_string_equal(bsky_jstr(rep, "post", "author", "did"), ada.did);
	assert_string_equal(bsky_jstr(rep, "post", "record", "text"), reply_text);
	cJSON_Delete(t);
	/* a mention that only thanks: a like (rule react), one story too */
	snprintf(text, sizeof text, "Thank you, that settles it for me @%s", ada.handle);
	struct ref thanks;
	post(&human, text, NULL, -1, &thanks);
	if (!wait_count(likes_of, &ada, 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("the thank-you mention was not liked");
	}
	cJSON *likes = records(&ada, "app.bsky.feed.like");
	assert_string_equal(bsky_jstr(cJSON_GetArrayItem(likes, 0), "value", "subject", "uri"),
	                    thanks.uri);
	cJSON_Delete(likes);
	assert_int_equal(replies_of(&ada), 1);
	bsky_agent_stop(&a);
	bsky_story_one_walk(&a, "trailing backslash", "answered");
	bsky_story_one_walk(&a, "settles it for me", "answered");
	bsky_llm_stop(&llm);
	home_remove(a.home);
}

/* ---- 2. a thread to SELF.md's limit, killed three times ---------------------------- */

static void wait_reply_to(struct bsky_agent *a, const struct who *w, const struct ref *to,
                          struct ref *got, const char *what)
{
	int64_t end = bsky_mono_ms() + W;
	cJSON *r = NULL;
	while (!(r = reply_to(w, to->uri, NULL)) && bsky_mono_ms() < end)
		usleep(100000);
	if (!r) {
		bsky_agent_dump(a);
		dump_notifications(w);
		fail_msg("no reply to %s", what);
	}
	snprintf(got->uri, sizeof got->uri, "%s", bsky_jstr(r, "uri", NULL, NULL));
	snprintf(got->cid, sizeof got->cid, "%s", bsky_jstr(r, "cid", NULL, NULL));
	cJSON_Delete(r);
}

static void test_thread_kills_and_limit(void **state)
{
	(void)state;
	struct bsky_agent a;
	struct who ada, human;
	new_agent(&a, &ada, "ada");
	account(&human, "human");
	const char *const *answers = bsky_lexer_answers;
	/* kill 1: the notification read, the model composing (it takes 4 s) */
	char *script = bsky_reply_script(answers[0], 4000);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	char text[300];
	struct ref m, h[4], r[4];
	snprintf(text, sizeof text, "@%s does the lexer keep a trailing backslash?", ada.handle);
	post(&human, text, NULL, -1, &m);
	bsky_agent_start(&a, net.proxy, "Ada", ada.handle, PW, &llm, NULL);
	int64_t end = bsky_mono_ms() + W;
	while (bsky_llm_calls(a.home) < 1 && bsky_mono_ms() < end)
		usleep(20000);
	assert_true(bsky_llm_calls(a.home) >= 1);
	bsky_agent_kill(&a);
	bsky_llm_stop(&llm);
	assert_int_equal(replies_of(&ada), 0);
	script = bsky_reply_script_seq(answers, 5, 0);
	bsky_llm_start(a.home, script, &llm);
	free(script);
	bsky_agent_start(&a, net.proxy, "Ada", ada.handle, PW, &llm, NULL);
	wait_reply_to(&a, &ada, &m, &r[0], "the mention after a kill while composing");

	/* kill 2: the reply's request sent, held by the proxy, never at the PDS */
	cJSON_Delete(call("hold",
	                  "{\"mode\":\"request\",\"nsid\":\"com.atproto.repo.createRecord\","
	                  "\"collection\":\"app.bsky.feed.post\"}"));
	post(&human, "And tabs inside strings, are they kept as tabs?", &r[0], -1, &h[0]);
	wait_held(&a, &ada);
	bsky_agent_kill(&a);
	cJSON_Delete(call("release", "{}"));
	assert_int_equal(replies_of(&ada), 1);
	bsky_agent_start(&a, net.proxy, "Ada", ada.handle, PW, &llm, NULL);
	wait_reply_to(&a, &ada, &h[0], &r[1], "a post whose reply request was held");

	/* kill 3: the PDS created the reply, its answer held back */
	cJSON_Delete(call("hold",
	                  "{\"mode\":\"response\",\"nsid\":\"com.atproto.repo.createRecord\","
	                  "\"collection\":\"app.bsky.feed.post\"}"));
	post(&human, "What about unicode escapes like \\u00e9, where are they decoded?", &r[1], -1,
	     &h[1]);
	wait_held(&a, &ada);
	wait_reply_to(&a, &ada, &h[1], &r[2], "the post whose reply's answer was held");
	bsky_agent_kill(&a);
	cJSON_Delete(call("release", "{}"));
	bsky_agent_start(&a, net.proxy, "Ada", ada.handle, PW, &llm, NULL);

	/* the fourth reply: the count knows the three before it */
	post(&human, "And surrogate pairs, are they joined in the same place?", &r[2], -1, &h[2]);
	wait_reply_to(&a, &ada, &h[2], &r[3], "the third question");
	/* the fifth post: SELF.md's 4 replies reached, a like ends it */
	post(&human, "Would a second lexer pass make this simpler, do you think?", &r[3], -1,
	     &h[3]);
	if (!wait_count(likes_of, &ada, 1, W)) {
		bsky_agent_dump(&a);
		fail_msg("the thread did not end with a like at 4 replies");
	}
	/* a few more awareness checks (0.4 s each): nothing more is said */
	cJSON_Delete(call("process", "{}"));
	usleep(2000 * 1000);
	/* each post answered exactly once; four replies, one like, of h[3] */
	const struct ref *asked[] = {&m, &h[0], &h[1], &h[2]};
	for (int i = 0; i < 4; i++) {
		int n = 0;
		cJSON_Delete(reply_to(&ada, asked[i]->uri, &n));
		if (n != 1) {
			bsky_agent_dump(&a);
			fail_msg("post %d has %d replies of ours", i, n);
		}
	}
	int n = 0;
	cJSON_Delete(reply_to(&ada, h[3].uri, &n));
	assert_int_equal(n, 0);
	if (replies_of(&ada) != 4) {
		bsky_agent_dump(&a);
		fail_msg("%zu replies in the thread, SELF.md allows 4", replies_of(&ada));
	}
	cJSON *likes = records(&ada, "app.bsky.feed.like");
	assert_int_equal(cJSON_GetArraySize(likes), 1);
	assert_string_equal(bsky_jstr(cJSON_GetArrayItem(likes, 0), "value", "subject", "uri"),
	                    h[3].uri);
	cJSON_Delete(likes);
	bsky_agent_stop(&a);
	/* the count said so before the fourth reply, and the like's story is one
	 * walk ending with one record */
	char *log = home_read(a.home, "memory/decisions.jsonl");
	if (!log || !strstr(log, "3 of 4 replies")) {
		bsky_agent_dump(&a);
		fail_msg("no decision counted 3 of 4 replies before the fourth");
	}
	free(log);
	bsky_story_one_walk(&a, "second lexer pass", "answered");
	bsky_llm_stop(&llm);
	home_remove(a.home);
}

/* ---- 3. alone: a peer answered with local claims, chains along the branch ----------- */

static void test_alone_peer_branch(void **state)
{
	(void)state;
	struct bsky_agent a;
	struct who ada, human, bo;
	new_agent(&a, &ada, "ada");
	account(&human, "human");
	account(&bo, "bo");
	static const char *const answers[] = {
	        "I would keep escapes in the lexer so the parser only ever sees tokens.",
	        "Spans matter for errors, so the lexer can carry the raw span on each token.",
	        "Unicode escapes belong with the string builder, after the lexer's pass.",
	};
	char *script = bsky_reply_script_seq(answers, 3, 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	/* no room (SPACE_URL removed; discovery finds none) and no Redis */
	const char *const extra[] = {"SPACE_URL", NULL};
	bsky_agent_start(&a, net.proxy, "Ada", ada.handle, PW, &llm, extra);
	char text[400];
	struct ref root, a0, p1, a1, q1, a2;
	snprintf(text, sizeof text, "@%s @%s who should own escape handling?", ada.handle,
	         bo.handle);
	post(&human, text, NULL, -1, &root);
	wait_reply_to(&a, &ada, &root, &a0, "the person's question");
	/* the peer answers our reply (chain 2, as an agent writes it) */
	snprintf(text, sizeof text,
	         "@%s the parser still needs the raw span to report errors well, I think.",
	         ada.handle);
	post(&bo, text, &a0, 2, &p1);
	wait_reply_to(&a, &ada, &p1, &a1, "the peer's reply (alone: local claims)");
	cJSON *r = reply_to(&ada, p1.uri, NULL);
	const cJSON *v = cJSON_GetObjectItem(r, "value");
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "gaChain")), 3);
	cJSON_Delete(r);
	/* a sibling branch: the peer's chain-1 post under the person's root.
	 * Its branch is root → it: chain 1, our reply 2 — counted over the
	 * whole thread (it, A1, P1, A0) it would be 4, MAX_ACL: a like */
	snprintf(text, sizeof text, "@%s separately: where would unicode escapes be decoded?",
	         ada.handle);
	post(&bo, text, &root, 1, &q1);
	wait_reply_to(&a, &ada, &q1, &a2, "the peer's post on a sibling branch");
	r = reply_to(&ada, q1.uri, NULL);
	v = cJSON_GetObjectItem(r, "value");
	if ((int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "gaChain")) != 2) {
		bsky_agent_dump(&a);
		fail_msg("the reply on the sibling branch carries chain %d, not 2",
		         (int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "gaChain")));
	}
	cJSON_Delete(r);
	bsky_agent_stop(&a);
	/* the claims were local (status and doctor say so) */
	char *log = home_read(a.home, "memory/decisions.jsonl");
	assert_non_null(log);
	/* the claim key is shown whole in the gate's reason */
	char key[400];
	snprintf(key, sizeof key, "claim respond:%s for", p1.uri);
	if (!strstr(log, key))
		fail_msg("the claim key is not whole in the decisions: %s", key);
	free(log);
	char *out = NULL, *err = NULL;
	const char *senv[] = {"SPACE_URL", NULL};
	proc_run(a.home, (const char *const[]){"status", NULL}, senv, &out, &err);
	if (!out || !strstr(out, "coordination local (no shared backend"))
		fail_msg("status does not say the claims are local: %s", out ? out : "");
	free(out);
	free(err);
	out = err = NULL;
	proc_run(a.home, (const char *const[]){"doctor", NULL}, senv, &out, &err);
	if (!out || !strstr(out, "no shared backend (no REDIS_URL, no SPACE_URL)"))
		fail_msg("doctor does not say there is no shared backend: %s", out ? out : "");
	free(out);
	free(err);
	bsky_llm_stop(&llm);
	home_remove(a.home);
}

/* ---- 4. two agents with Redis -------------------------------------------------------- */

static void test_two_agents_redis(void **state)
{
	(void)state;
	struct bsky_agent a, b;
	struct who ada, bob, human;
	new_agent(&a, &ada, "ada");
	new_agent(&b, &bob, "bob");
	account(&human, "human");
	char ta[5][200], tb[5][200];
	static const char *const la[] = {
	        "I think the tokenizer should own escapes; the parser only sees tokens.",
	        "Then keep the raw span on the token itself, the parser reads it there.",
	        "A span per token costs eight bytes; cheap next to a second lexer pass.",
	        "Error recovery would also want the span, so it pays for itself twice.",
	        "One more angle: fuzzing finds span bugs fast, add a target for it.",
	};
	static const char *const lb[] = {
	        "Agreed in part: the parser still needs the raw span for errors.",
	        "Spans on tokens work if the lexer never rewrites the text under them.",
	        "Fair, but multi-line strings break naive spans; track line starts too.",
	        "Line tables are cheap as well; I would store them once per file.",
	        "And the fuzz target should compare spans against a slow reference lexer.",
	};
	const char *pa[5], *pb[5];
	for (int i = 0; i < 5; i++) {
		snprintf(ta[i], sizeof ta[i], "@%s %s", bob.handle, la[i]);
		snprintf(tb[i], sizeof tb[i], "@%s %s", ada.handle, lb[i]);
		pa[i] = ta[i];
		pb[i] = tb[i];
	}
	char *sa = bsky_reply_script_seq(pa, 5, 0), *sb = bsky_reply_script_seq(pb, 5, 0);
	struct bsky_llm lla, llb;
	bsky_llm_start(a.home, sa, &lla);
	bsky_llm_start(b.home, sb, &llb);
	free(sa);
	free(sb);
	struct support_redis redis = {0};
	char rerr[256];
	if (support_redis_start(&redis, NULL, rerr, sizeof rerr) != 0)
		fail_msg("redis: %s", rerr);
	char rurl[64];
	snprintf(rurl, sizeof rurl, "REDIS_URL=redis://127.0.0.1:%d", redis.port);
	const char *const extra[] = {rurl, "MAX_BOT_CHAIN_LENGTH=20", NULL};
	bsky_agent_start(&a, net.proxy, "Ada", ada.handle, PW, &lla, extra);
	bsky_agent_start(&b, net.proxy, "Bob", bob.handle, PW, &llb, extra);
	char text[300];
	snprintf(text, sizeof text, "@%s @%s who should own escape handling?", ada.handle,
	         bob.handle);
	post(&human, text, NULL, -1, NULL);
	/* settled: replies and a closing like, then nothing new for 6 s */
	size_t last = 0;
	int64_t quiet = bsky_mono_ms(), end = bsky_mono_ms() + 150000;
	while (bsky_mono_ms() < end) {
		size_t n = replies_of(&ada) + replies_of(&bob);
		size_t nl = likes_of(&ada) + likes_of(&bob);
		if (n + nl != last) {
			last = n + nl;
			quiet = bsky_mono_ms();
		}
		if (n > 0 && nl > 0 && bsky_mono_ms() - quiet > 6000)
			break;
		usleep(200000);
	}
	if (bsky_mono_ms() >= end) {
		bsky_agent_dump(&a);
		bsky_agent_dump(&b);
		fail_msg("the thread did not settle");
	}
	/* every agent post within MAX_ACL (4), each agent within SELF.md's 4
	 * replies, never two replies of one agent to one post */
	const struct who *agents[] = {&ada, &bob};
	for (int k = 0; k < 2; k++) {
		cJSON *recs = records(agents[k], "app.bsky.feed.post");
		const cJSON *r;
		int mine = 0;
		cJSON_ArrayForEach(r, recs)
		{
			const cJSON *v = cJSON_GetObjectItem(r, "value");
			if (!cJSON_GetObjectItem(v, "reply"))
				continue;
			mine++;
			int chain = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "gaChain"));
			if (chain < 1 || chain > 4)
				fail_msg("%s posted chain %d", agents[k]->handle, chain);
			int same = 0;
			cJSON_Delete(
			        reply_to(agents[k], bsky_jstr(v, "reply", "parent", "uri"), &same));
			assert_int_equal(same, 1);
		}
		assert_true(mine >= 1 && mine <= 4);
		cJSON_Delete(recs);
	}
	assert_true(likes_of(&ada) + likes_of(&bob) >= 1);
	bsky_agent_stop(&a);
	bsky_agent_stop(&b);
	bsky_llm_stop(&lla);
	bsky_llm_stop(&llb);
	support_redis_free(&redis);
	home_remove(a.home);
	home_remove(b.home);
}

/* ---- 5. the access token expires mid-run -------------------------------------------- */

static void test_expired_token(void **state)
{
	(void)state;
	struct bsky_agent a;
	struct who ada, human;
	new_agent(&a, &ada, "ada");
	account(&human, "human");
	char *script = bsky_reply_script("Tabs are kept too; only the line end is trimmed.", 0);
	struct bsky_llm llm;
	bsky_llm_start(a.home, script, &llm);
	free(script);
	int logins = proxied("com.atproto.server.createSession");
	int refreshes = proxied("com.atproto.server.refreshSession");
	bsky_agent_start(&a, net.proxy, "Ada", ada.handle, PW, &llm, NULL);
	assert_int_equal(proxied("com.atproto.server.createSession"), logins + 1);
	/* the network's clock past the access token's 120 minutes */
	cJSON_Delete(call("clock", "{\"offsetMs\":%d}", 121 * 60 * 1000));
	char text[200];
	snprintf(text, sizeof text, "@%s and what about tabs?", ada.handle);
	post(&human, text, NULL, -1, NULL);
	bool ok = wait_count(replies_of, &ada, 1, W);
	cJSON_Delete(call("clock", "{\"offsetMs\":0}"));
	if (!ok) {
		bsky_agent_dump(&a);
		fail_msg("no reply after the access token expired");
	}
	assert_true(proxied("com.atproto.server.refreshSession") > refreshes);
	assert_int_equal(proxied("com.atproto.server.createSession"), logins + 1);
	bsky_agent_stop(&a);
	bsky_llm_stop(&llm);
	home_remove(a.home);
}

int main(void)
{
	char why[2048];
	int rc = atnet_start(&net, why, sizeof why);
	if (rc == 77) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	if (rc != 0) {
		fprintf(stderr, "the AT Protocol network did not start: %s\n", why);
		atnet_stop(&net);
		return 1;
	}
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_mention_one_reply),
	        cmocka_unit_test(test_thread_kills_and_limit),
	        cmocka_unit_test(test_alone_peer_branch),
	        cmocka_unit_test(test_two_agents_redis),
	        cmocka_unit_test(test_expired_token),
	};
	/* BSKY_TEST=test_expired_token runs one (cmocka's glob) */
	if (getenv("BSKY_TEST"))
		cmocka_set_test_filter(getenv("BSKY_TEST"));
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	atnet_stop(&net);
	return rc;
}
