/*
 * The participation engine end to end, black-box: the real
 * general-agent, the real agent-space, raw WebSocket members playing peer
 * agents, and the LLM fake as a separate process (its --record file shows
 * every model call).
 *
 *   - the host asks Ada a question by name: on her participation tick the
 *     model is asked with space_decision forced, and the answer reaches the
 *     room through the pipeline with chain 1; the decisions tell the story
 *     (deferred to the tick, the tick's verdict, the model's decision, the
 *     validator, outbound sent, answered);
 *   - a peer addresses Ada at chain MAX_ACL: the gate only lets her react,
 *     the model is never asked, nothing reaches the room; the same peer at
 *     a lower chain is answered (the control);
 *   - a peer at MAX_ACL − 1: the answer carries chain MAX and the courtesy
 *     notice;
 *   - the model restates what a peer just said: the validator rejects it
 *     as an echo and it never reaches the room;
 *   - a peer says the same as the approved words while the agent types:
 *     the last look before the chat leaves withdraws it (echo_late);
 *   - the agent is stopped while its model call hangs: the call is
 *     cancelled and the daemon exits cleanly (0, no sanitizer report);
 *   - Layer 2 (§2.2): a host message Layer 1 cannot settle is put to the
 *     model first (no tools, `Message: "…"`); its ACTION_REQUEST makes
 *     it the open request the decision prompt shows, and the owner's
 *     commitment is enqueued with source space;
 *   - a peer claimed the very issue before the host asked (§12.1 🐞): the
 *     owner's commitment for it is dropped (claimed_by_peer), never
 *     enqueued, and the request counts as taken (no retry, no forced
 *     action);
 *   - three agents, each with a model eager to promise the work: the host
 *     asks for an issue and exactly one of them — the owner SHA-256 ranking
 *     names (§4) — says so in the room and enqueues the commitment (source
 *     space); the others stay out of the room and out of the ledger.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "modules/participation/policy.h"
#include "modules/reflection/voice.h"
#include "support_story.h"
#include "tests/integration/participation/owned_by.h"
#include "tests/integration/space-client/harness.h"
#include "testutil.h"

#define W TH_WAIT_MS
/* a tick is 5 s ± 40 %, then typing and the room's chat spacing */
#define SPEAK_MS 20000

static void dump(struct proc *p)
{
	char *e = proc_stderr(p), *o = proc_stdout(p);
	fprintf(stderr, "---- agent stderr ----\n%s\n---- agent stdout ----\n%s\n", e ? e : "",
	        o ? o : "");
	free(e);
	free(o);
}

static void dump_decisions(const char *home)
{
	char *log = home_read(home, "memory/decisions.jsonl");
	fprintf(stderr, "---- decisions.jsonl ----\n%s\n", log ? log : "(none)");
	free(log);
}

static void start_agent_argv(struct proc *p, const char *home, const char *const *argv,
                             const char *const *env)
{
	if (proc_start(p, home, argv, env) != 0)
		fail_msg("cannot start general-agent in %s", home);
	th_track_pid(p->pid);
	if (!proc_wait_output(p, "ready and listening", W)) {
		dump(p);
		fail_msg("the agent did not start");
	}
	if (!proc_wait_output(p, "joined the room", W)) {
		dump(p);
		fail_msg("the agent did not join the room");
	}
}

static void start_agent(struct proc *p, const char *home, const char *const *env)
{
	start_agent_argv(p, home, (const char *const[]){NULL}, env);
}

static void stop_agent(struct proc *p)
{
	proc_signal(p, SIGTERM);
	int rc = proc_wait(p, W);
	th_untrack_pid(p->pid);
	if (rc != 0) {
		dump(p);
		fail_msg("the agent exited %d", rc);
	}
	proc_cleanup(p);
}

struct fake {
	pid_t pid;
	char env[160];
	char record[300];
};

static void start_fake(const char *home, const char *script, struct fake *f)
{
	home_write(home, "fake-script.json", script);
	char bin[1024], scriptp[1024], portp[1024];
	snprintf(bin, sizeof bin, "%s/tests/fakes/llm/llmfake-server", getenv("GA_BUILD_DIR"));
	snprintf(scriptp, sizeof scriptp, "%s/fake-script.json", home);
	snprintf(portp, sizeof portp, "%s/fake.port", home);
	snprintf(f->record, sizeof f->record, "%s/fake-record.jsonl", home);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		execl(bin, bin, "--script", scriptp, "--port-file", portp, "--record", f->record,
		      (char *)NULL);
		_exit(127);
	}
	th_track_pid(pid);
	f->pid = pid;
	for (int i = 0; i < 1000; i++) {
		char *port = home_read(home, "fake.port");
		if (port && atoi(port) > 0) {
			snprintf(f->env, sizeof f->env, "LLM_BASE_URL=http://127.0.0.1:%d/v1",
			         atoi(port));
			free(port);
			return;
		}
		free(port);
		usleep(10000);
	}
	fail_msg("llmfake-server did not start");
}

static void stop_fake(struct fake *f)
{
	kill(f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	th_untrack_pid(f->pid);
}

/* Ends a test of one agent and an observer in a room. */
static void stop_solo(struct ws_client *obs, struct proc *a, struct fake *f, struct th_room *room)
{
	th_observer_free(obs);
	stop_agent(a);
	stop_fake(f);
	th_room_stop(room, SIGTERM);
}

/* Model calls recorded so far. */
static int fake_calls(const char *home)
{
	char *rec = home_read(home, "fake-record.jsonl");
	int n = 0;
	for (char *c = rec; c && *c; c++)
		n += *c == '\n';
	free(rec);
	return n;
}

static char *fake_request(const char *home, int i)
{
	char *rec = home_read(home, "fake-record.jsonl");
	char *line = rec;
	for (int k = 0; line && k < i; k++) {
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	/* the request's body, as sent */
	char *out = NULL;
	if (line && *line) {
		char *one = strndup(line, strcspn(line, "\n"));
		cJSON *j = cJSON_Parse(one);
		const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(j, "body"));
		if (body)
			out = strdup(body);
		cJSON_Delete(j);
		free(one);
	}
	free(rec);
	return out;
}

static bool pred_chat_from(const cJSON *m, const void *arg)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	return name && strcmp(name, arg) == 0;
}

/* Ada's next chat in the room (failing with what, after her log and
 * decisions, when none comes within SPEAK_MS); its content must be
 * content. */
static void expect_ada_says(struct ws_client *obs, struct proc *a, const char *home,
                            const char *content, const char *what)
{
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", SPEAK_MS);
	if (!m) {
		dump(a);
		dump_decisions(home);
		fail_msg("%s", what);
	}
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")), content);
	cJSON_Delete(m);
}

static bool pred_chat_from_agent(const cJSON *m, const void *arg)
{
	(void)arg;
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	return name && (!strcmp(name, "Ada") || !strcmp(name, "Ben") || !strcmp(name, "Cal"));
}

static void chat(struct ws_client *c, const char *text, int chain)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "{\"type\":\"chat\",\"content\":\"%s\",\"chain\":%d}", text,
	         chain);
	th_send(c, buf);
}

/* Every decision about the message whose event mentions `text`, one per
 * line as "stage verdict rule: reason"; NULL when the event is not there. */
static char *story(const char *home, const char *text)
{
	char *log = home_read(home, "memory/decisions.jsonl");
	if (!log)
		return NULL;
	char id[160] = "";
	size_t cap = 1 << 16, len = 0;
	char *out = calloc(1, cap);
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		if (!j)
			continue;
		const char *stage = cJSON_GetStringValue(cJSON_GetObjectItem(j, "stage"));
		const char *mid = cJSON_GetStringValue(cJSON_GetObjectItem(j, "messageId"));
		const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(j, "reason"));
		const char *rule = cJSON_GetStringValue(cJSON_GetObjectItem(j, "rule"));
		const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(j, "verdict"));
		if (!id[0] && stage && strcmp(stage, "event") == 0 && reason &&
		    strstr(reason, text))
			snprintf(id, sizeof id, "%s", mid ? mid : "");
		if (id[0] && mid && strcmp(mid, id) == 0 && len + 600 < cap)
			len += (size_t)snprintf(out + len, cap - len, "%s %s %s: %.400s\n",
			                        stage ? stage : "?", verdict ? verdict : "?",
			                        rule ? rule : "", reason ? reason : "");
		cJSON_Delete(j);
	}
	free(log);
	if (!id[0]) {
		free(out);
		return NULL;
	}
	return out;
}

/* Waits until the story of `text` holds `needle`. */
static char *wait_story(const char *home, const char *text, const char *needle, int ms)
{
	int64_t end = th_now_ms() + ms;
	char *s = NULL;
	while (th_now_ms() < end) {
		free(s);
		s = story(home, text);
		if (s && strstr(s, needle))
			return s;
		th_msleep(100);
	}
	dump_decisions(home);
	fail_msg("the story of '%s' never held '%s':\n%s", text, needle, s ? s : "(no event)");
	return NULL;
}

static void must_hold(const char *s, const char *needle)
{
	if (!strstr(s, needle))
		fail_msg("'%s' missing from:\n%s", needle, s);
}

#define DECIDE(msg)                                                                                \
	"{\"match\":{\"tool_choice\":\"space_decision\",\"tools\":[\"space_decision\"]},"          \
	"\"tool_calls\":[{\"name\":\"space_decision\",\"arguments\":{\"shouldSpeak\":true,"        \
	"\"reason\":\"asked\",\"message\":\"" msg "\"}}]}"

/* --- the host asks; the agent answers through the pipeline ---------------------------- */

static void test_host_question_answered(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	/* the decision also adjusts the room's runtime config (§13.3) */
	start_fake(
	        home,
	        "[{\"match\":{\"tool_choice\":\"space_decision\",\"tools\":[\"space_decision\"]},"
	        "\"tool_calls\":[{\"name\":\"space_decision\",\"arguments\":{\"shouldSpeak\":true,"
	        "\"reason\":\"asked\",\"message\":\"Paris is the capital of France.\","
	        "\"adjustBehavior\":{\"cooldownMinMs\":15000,\"cooldownMaxMs\":\"soon\"}}}]}]",
	        &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", NULL});
	struct ws_client *obs = th_observe(&room, "Obs");

	th_room_host(&room, "Ada, what is the capital of France?");
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", SPEAK_MS);
	if (!m) {
		dump(&a);
		dump_decisions(home);
		fail_msg("Ada never answered the host");
	}
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")),
	                    "Paris is the capital of France.");
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "chain")), 1);
	cJSON_Delete(m);

	/* the model was asked once, with space_decision forced and the
	 * skill's prompt carrying the host's words */
	assert_int_equal(fake_calls(home), 1);
	char *req = fake_request(home, 0);
	assert_non_null(req);
	must_hold(req, "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"space_"
	               "decision\"}}");
	must_hold(req, "Ada, what is the capital of France?");
	must_hold(req, "Decide now with `space_decision`");
	must_hold(req, "Cooldown after speaking: 10.0s");
	free(req);

	char *s = wait_story(home, "what is the capital of France", "record info answered", W);
	/* one walk: the question's story in stage order, one record */
	char id[160], why[16384];
	assert_int_equal(story_id_of(home, "what is the capital of France", id, sizeof id), 0);
	if (!story_is_one_walk(home, id, "answered", why, sizeof why))
		fail_msg("the answered question's story is not one walk: %s", why);
	must_hold(s, "compose pass decided");
	must_hold(s, "validator approve");
	must_hold(s, "outbound sent");
	must_hold(s, "adjust_behavior");
	free(s);
	/* adjustBehavior landed in memory/space-config.json; the string was
	 * refused, not stored (the reference's NaN cooldowns) */
	char *cfg = home_read(home, "memory/space-config.json");
	assert_non_null(cfg);
	must_hold(cfg, "\"cooldownMinMs\":\t15000");
	must_hold(cfg, "\"cooldownMaxMs\":\t20000");
	must_hold(cfg, "\"lastAdjustedReason\":\t\"asked\"");
	free(cfg);

	stop_solo(obs, &a, &f, &room);
}

/* --- a peer at chain MAX: silence; lower: answered ------------------------------------ */

static void test_peer_at_max_silent(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home, "[" DECIDE("Bob, each tenant gets its own namespace prefix.") "]", &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", "MAX_ACL=4", NULL});
	struct ws_client *bob = th_observe(&room, "Bob");
	struct ws_client *obs = th_observe(&room, "Obs");

	chat(bob, "Ada, how are the cache keys scoped? (chain four)", 4);
	char *s = wait_story(home, "how are the cache keys scoped", "gate react chain_length", W);
	free(s);
	/* two ticks at least: nothing said, the model never asked */
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", 15000);
	if (m) {
		char *t = cJSON_PrintUnformatted(m);
		fail_msg("Ada spoke at chain MAX: %s", t);
	}
	assert_int_equal(fake_calls(home), 0);

	/* the control: the same question at chain 1 is answered; the reply
	 * carries chain 3 (Bob's two messages since the host: the derived
	 * chain is 2) */
	chat(bob, "Ada, how are the cache keys scoped now? (chain one)", 1);
	m = th_expect(obs, "chat", pred_chat_from, "Ada", SPEAK_MS);
	if (!m) {
		dump(&a);
		dump_decisions(home);
		fail_msg("Ada never answered the peer at chain 1");
	}
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "chain")), 3);
	cJSON_Delete(m);
	assert_int_equal(fake_calls(home), 1);

	th_observer_free(bob);
	stop_solo(obs, &a, &f, &room);
}

/* --- a peer at MAX − 1: the answer carries the courtesy notice ----------------------------- */

static void test_courtesy_at_max_minus_one(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home, "[" DECIDE("Bob, it kicks off at 02:00 UTC from the cron runner.") "]",
	           &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", "MAX_ACL=2", NULL});
	struct ws_client *bob = th_observe(&room, "Bob");
	struct ws_client *obs = th_observe(&room, "Obs");
	chat(bob, "Ada, when does the nightly job start?", 1);
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", SPEAK_MS);
	if (!m) {
		dump(&a);
		dump_decisions(home);
		fail_msg("Ada never answered at MAX - 1");
	}
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(m, "content"));
	if (!text ||
	    strncmp(text, "Bob, it kicks off at 02:00 UTC from the cron runner.", 51) != 0 ||
	    !strstr(text, "Replies to this message will not be processed."))
		fail_msg("no courtesy notice: '%s'", text ? text : "");
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "chain")), 2);
	cJSON_Delete(m);
	th_observer_free(bob);
	stop_solo(obs, &a, &f, &room);
}

/* --- an echo of a peer is rejected and never reaches the room --------------------------- */

static void test_echo_rejected(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home,
	           "[" DECIDE("The deployment failed because the database migration timed out "
	                      "after ten minutes.") "]",
	           &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", NULL});
	struct ws_client *bob = th_observe(&room, "Bob");
	struct ws_client *obs = th_observe(&room, "Obs");

	chat(bob,
	     "Ada, the deployment failed because the database migration timed out after ten "
	     "minutes.",
	     1);
	char *s = wait_story(home, "the deployment failed because", "validator reject", SPEAK_MS);
	if (!strstr(s, "echo"))
		fail_msg("rejected, but not as an echo:\n%s", s);
	must_hold(s, "compose pass decided");
	if (strstr(s, "outbound sent"))
		fail_msg("the echo was sent:\n%s", s);
	free(s);
	assert_int_equal(fake_calls(home), 1);
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", 3000);
	if (m) {
		char *t = cJSON_PrintUnformatted(m);
		fail_msg("the echo reached the room: %s", t);
	}

	th_observer_free(bob);
	stop_solo(obs, &a, &f, &room);
}

/* --- a peer's restatement lands during the typing pause: ours is withdrawn -------------- */

/* Loop-sim finding 3: the validator approved the words; during the typing
 * pause a peer says the same; the last look before the chat leaves sees it
 * and withdraws ours (outbound, echo_late, naming the message). */
static void test_echo_during_typing(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home,
	           "[" DECIDE("Bob, back off exponentially and retry once the rate limit reset "
	                      "header says so.") "]",
	           &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){
	                    "AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                    "LLM_API_KEY=test-key-0123456789", "GA_SPACE_TYPING_BASE_MS=4000",
	                    "GA_SPACE_TYPING_PER_CHAR_MS=0", "GA_SPACE_TYPING_MAX_MS=4000", NULL});
	struct ws_client *bob = th_observe(&room, "Bob");
	struct ws_client *cal = th_observe(&room, "Cal");
	struct ws_client *obs = th_observe(&room, "Obs");

	chat(bob, "Ada, how should we handle retries when GitHub rate limits us?", 1);
	cJSON *t = th_expect(obs, "typing", pred_chat_from, "Ada", SPEAK_MS);
	if (!t) {
		dump(&a);
		dump_decisions(home);
		fail_msg("Ada never started typing");
	}
	cJSON_Delete(t);
	/* validated already (the typing pause follows the validator and the
	 * reply delay); Cal says the same while Ada types */
	chat(cal, "Bob, back off exponentially and retry once the rate limit reset header says so.",
	     1);
	char *s = wait_story(home, "how should we handle retries", "echo_late", SPEAK_MS);
	must_hold(s, "validator approve");
	must_hold(s, "outbound drop echo_late: echo of Cal's \"Bob, back off exponentially");
	if (strstr(s, "outbound sent"))
		fail_msg("the late echo was sent:\n%s", s);
	free(s);
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", 6000);
	if (m) {
		char *txt = cJSON_PrintUnformatted(m);
		fail_msg("the late echo reached the room: %s", txt);
	}

	th_observer_free(bob);
	th_observer_free(cal);
	stop_solo(obs, &a, &f, &room);
}

/* --- stopped while the model thinks ------------------------------------------------------------
 */

static void test_stop_during_model_call(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home, "[{\"match\":{\"tool_choice\":\"space_decision\"},\"action\":\"hang\"}]",
	           &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", NULL});
	th_room_host(&room, "Ada, what would you name the new build farm?");
	int64_t end = th_now_ms() + SPEAK_MS;
	while (fake_calls(home) < 1 && th_now_ms() < end)
		th_msleep(100);
	if (fake_calls(home) < 1) {
		dump(&a);
		dump_decisions(home);
		fail_msg("the model was never asked");
	}
	stop_agent(&a); /* exit 0 within the wait, or it fails */
	char *s = story(home, "name the new build farm");
	assert_non_null(s);
	must_hold(s, "compose info cancelled");
	free(s);
	stop_fake(&f);
	th_room_stop(&room, SIGTERM);
}

static int count_in(const char *home, const char *file, const char *needle)
{
	char *t = home_read(home, file);
	int n = 0;
	for (char *c = t; c && (c = strstr(c, needle)); c += strlen(needle))
		n++;
	free(t);
	return n;
}

/* Waits (up to W) until home's ledger holds n commitments with source
 * space, and asserts exactly n. */
static void expect_space_commitments(const char *home, int n)
{
	int64_t end = th_now_ms() + W;
	while (count_in(home, "memory/commitments.jsonl", "\"source\":\"space\"") < n &&
	       th_now_ms() < end)
		th_msleep(100);
	assert_int_equal(count_in(home, "memory/commitments.jsonl", "\"source\":\"space\""), n);
}

/* "<stem> <n>" with the first n that Ada owns among Ada and the observer. */
static void owned_by_ada(const char *stem, char *out, size_t cap)
{
	owned_by("Ada", "Obs", stem, out, cap);
}

/* Ada's model: Layer 2 says ACTION_REQUEST; the decision promises the dark
 * mode toggle issue in acme/web. */
#define DARK_MODE_SCRIPT                                                                           \
	"[{\"match\":{\"no_tools\":true,\"last_user_contains\":\"Message: \"},"                    \
	"\"content\":\"ACTION_REQUEST\"},"                                                         \
	"{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"               \
	"\"space_decision\",\"arguments\":{\"shouldSpeak\":true,\"reason\":\"mine\","              \
	"\"message\":\"I'll file the dark mode toggle in acme/web right away.\","                  \
	"\"commitments\":[{\"type\":\"create_issue\",\"repo\":\"acme/web\","                       \
	"\"title\":\"Dark mode toggle on the login page\",\"description\":\"The host "             \
	"asks for a dark mode toggle on the login page.\"}]}}]}]"

/* --- Layer 2 settles an ambiguous host message -------------------------------------------------
 */

static void test_layer2_intent(void **state)
{
	(void)state;
	/* Ada and the observer are the members: a text Ada owns */
	char request[256];
	owned_by_ada("The login page needs a dark mode toggle", request, sizeof request);
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	/* what Ada remembers of Obs (relationship memory, modules/reflection):
	 * the decision prompt carries it beside what Obs says of itself */
	char memdir[300];
	snprintf(memdir, sizeof memdir, "%s/memory", home);
	mkdir(memdir, 0700);
	home_write(home, "memory/peer_relationships.json",
	           "{\"version\":\"0.0.0-older\",\"savedAt\":\"2026-01-01T00:00:00.000Z\","
	           "\"data\":{\"format\":2,\"peers\":[{\"name\":\"Obs\",\"conversations\":3,"
	           "\"memorableExchanges\":[\"Obs caught the off-by-one in the pager\"]}]}}");
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home, DARK_MODE_SCRIPT, &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", NULL});
	struct ws_client *obs = th_observe(&room, "Obs");
	th_msleep(300);
	th_room_host(&room, request);
	/* Obs keeps typing (a mark lives 10 s) until Ada has asked her model
	 * twice: the decision prompt names who is typing (§14) */
	int64_t typing_end = th_now_ms() + SPEAK_MS;
	while (fake_calls(home) < 2 && th_now_ms() < typing_end) {
		th_send(obs, "{\"type\":\"typing\",\"name\":\"Obs\"}");
		th_msleep(1000);
	}
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", SPEAK_MS);
	if (!m) {
		dump(&a);
		dump_decisions(home);
		fail_msg("Ada never took the request '%s'", request);
	}
	cJSON_Delete(m);
	assert_int_equal(fake_calls(home), 2);
	char *l2 = fake_request(home, 0);
	assert_non_null(l2);
	must_hold(l2, "Message: \\\"The login page needs a dark mode toggle");
	if (strstr(l2, "\"tools\""))
		fail_msg("the Layer-2 call offered tools: %s", l2);
	free(l2);
	char *dec = fake_request(home, 1);
	assert_non_null(dec);
	must_hold(dec, "Host request status: open:");
	must_hold(dec, "YOU own the host's request");
	must_hold(dec, "Obs caught the off-by-one in the pager");
	must_hold(dec, "Currently typing: Obs");
	free(dec);
	expect_space_commitments(home, 1);

	stop_solo(obs, &a, &f, &room);
}

/* --- §12.1 🐞: a peer's live claim on the same action:target -------------------------------- */

/* Obs claims create_issue on the work before the host asks for it; Ada owns
 * the request and her model promises exactly that issue: the commitment is
 * dropped (claimed_by_peer, naming Obs), nothing reaches the ledger, and the
 * request counts as taken — no owner retry, no forced action — and her
 * words, a promise without its commitment now, stay out of the room. */
static void test_peer_claim_drops_commitment(void **state)
{
	(void)state;
	char request[256];
	owned_by_ada("Create an issue in github.com/acme/web for a dark mode toggle", request,
	             sizeof request);
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home, DARK_MODE_SCRIPT, &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", NULL});
	struct ws_client *obs = th_observe(&room, "Obs");
	th_send(obs, "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":"
	             "\"acme/web#Dark mode toggle on the login page\"}");
	th_msleep(300);
	th_room_host(&room, request);
	char *s = wait_story(home, "dark mode toggle", "claimed_by_peer", SPEAK_MS);
	must_hold(s, "validator drop claimed_by_peer: Obs holds a live claim on "
	             "create_issue:acme/web#Dark mode toggle on the login page");
	free(s);
	/* a tick and more later: nothing in the ledger, no retry or forced
	 * action (one decision call), no promise without its commitment in
	 * the room */
	th_msleep(9000);
	assert_int_equal(count_in(home, "memory/commitments.jsonl", "\"source\":\"space\""), 0);
	int calls = fake_calls(home);
	for (int i = 0; i < calls; i++) {
		char *req = fake_request(home, i);
		if (req && (strstr(req, "HOST REQUEST:") || strstr(req, "Write the issue body"))) {
			dump_decisions(home);
			fail_msg("call %d is an owner retry or a forced action: %.300s", i, req);
		}
		free(req);
	}
	assert_true(calls >= 1 && calls <= 2); /* the decision (and maybe Layer 2) */
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", 200);
	if (m) {
		const char *said = cJSON_GetStringValue(cJSON_GetObjectItem(m, "content"));
		fail_msg("Ada said \"%s\" for work Obs had claimed", said ? said : "?");
	}

	stop_solo(obs, &a, &f, &room);
}

/* A failing Layer 2: Layer 1 stands (discussion), the agent still
 * answers, and the failed label is not asked for again on every tick. */
static void test_layer2_failure(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(
	        home,
	        "[{\"match\":{\"no_tools\":true},\"error\":{\"status\":400,\"message\":"
	        "\"down\"}}," DECIDE("Ada here, a darker palette would suit the night shift.") "]",
	        &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", NULL});
	struct ws_client *obs = th_observe(&room, "Obs");
	th_room_host(&room, "The login page needs a dark mode toggle, Ada");
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", SPEAK_MS);
	if (!m) {
		dump(&a);
		dump_decisions(home);
		fail_msg("Ada never answered after Layer 2 failed");
	}
	cJSON_Delete(m);
	th_msleep(12000); /* two ticks more */
	int layer2 = 0, n = fake_calls(home);
	for (int i = 0; i < n; i++) {
		char *r = fake_request(home, i);
		layer2 += r && !strstr(r, "\"tools\"");
		free(r);
	}
	char *dec = fake_request(home, n - 1);
	assert_non_null(dec);
	must_hold(dec, "Host request status: no request");
	free(dec);
	/* the model's errors are retried by the client; one Layer-2 ask */
	if (layer2 < 1 || n - layer2 != 1)
		fail_msg("%d calls, %d for Layer 2", n, layer2);
	char *e = proc_stderr(&a);
	if (!e || strstr(e, "layer 2 gave no label") == NULL ||
	    strstr(strstr(e, "layer 2 gave no label") + 1, "layer 2 gave no label"))
		fail_msg("not exactly one failed Layer-2 ask:\n%s", e ? e : "");
	free(e);
	stop_solo(obs, &a, &f, &room);
}

/* Ada, Ben and Cal in a fresh room, each with its own model running
 * script; Cal runs --social-only when social_cal. */
static const char *const TRIO[] = {"Ada", "Ben", "Cal"};

/* Starts Ada, Ben and Cal (a[i] is TRIO[i]), in that order or, reversed,
 * Cal first: the room's member list (join order) differs. */
static void start_trio_ordered(struct th_room *room, const char *script, bool social_cal,
                               bool reversed, char homes[3][256], struct fake f[3],
                               struct proc a[3])
{
	th_room_start(room, 0, NULL, false);
	char url[128];
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room->port);
	for (int k = 0; k < 3; k++) {
		int i = reversed ? 2 - k : k;
		if (k > 0) /* one joins after the other: the order is the room's */
			th_msleep(300);
		th_home_new(homes[i], 256);
		start_fake(homes[i], script, &f[i]);
		char name[64];
		snprintf(name, sizeof name, "AGENT_NAME=%s", TRIO[i]);
		const char *const env[] = {name,
		                           url,
		                           f[i].env,
		                           "LLM_MODEL=fake-model",
		                           "LLM_API_KEY=test-key-0123456789",
		                           NULL};
		if (i == 2 && social_cal)
			start_agent_argv(&a[i], homes[i],
			                 (const char *const[]){"--social-only", NULL}, env);
		else
			start_agent(&a[i], homes[i], env);
	}
}

static void start_trio(struct th_room *room, const char *script, bool social_cal,
                       char homes[3][256], struct fake f[3], struct proc a[3])
{
	start_trio_ordered(room, script, social_cal, false, homes, f, a);
}

static void stop_trio(struct th_room *room, struct fake f[3], struct proc a[3])
{
	for (int i = 0; i < 3; i++) {
		stop_agent(&a[i]);
		stop_fake(&f[i]);
	}
	th_room_stop(room, SIGTERM);
}

/* --- a silent owner's commitment is kept, in the agent's voice ------------------------------ */

/* §11.1 salvage: Ada owns the request, her model decides not to speak but
 * carries a valid commitment — she says so in her own words
 * (voice-phrases.json space.on_it beside SELF.md, no operational
 * text hard-coded) and the commitment reaches the ledger. */
static void test_salvage_in_voice(void **state)
{
	(void)state;
	char request[256];
	owned_by_ada("Create an issue in acme/widgets: the login spinner never stops", request,
	             sizeof request);
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	char *vtext =
	        voice_text_with(VOICE_SPACE_ON_IT, "Taking this one: a {{type}}, coming up.", 0);
	home_write(home, "voice-phrases.json", vtext);
	free(vtext);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home,
	           "[{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"
	           "\"space_decision\",\"arguments\":{\"shouldSpeak\":false,\"reason\":\"busy\","
	           "\"commitments\":[{\"type\":\"create_issue\",\"repo\":\"acme/widgets\","
	           "\"title\":\"Login spinner never stops\",\"description\":\"The host reports "
	           "that the login spinner never stops.\"}]}}]},"
	           "{\"content\":\"ACTION_REQUEST\"}]",
	           &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", NULL});
	struct ws_client *obs = th_observe(&room, "Obs");
	th_msleep(300);
	th_room_host(&room, request);
	expect_ada_says(obs, &a, home,
	                "Taking this one: a create issue, coming up: Login spinner never stops.",
	                "Ada never kept her silent commitment in words");
	expect_space_commitments(home, 1);
	stop_solo(obs, &a, &f, &room);
}

/* --- three agents, one owner ---------------------------------------------------------------- */

/* §4: every agent computes the same owner, whatever order they joined
 * in (reversed: Cal first, so the member list each one sees is Cal, Ben,
 * Ada, Obs instead of Ada, Ben, Cal, Obs). */
static void three_agents_one_owner(bool reversed)
{
	const char *const *names = TRIO;
	/* The room's members as every agent sees them (the observer too:
	 * it sent no capabilities, so it counts). Pick a request an agent
	 * owns. */
	struct part_member mem[] = {
	        {.name = "Ada"}, {.name = "Ben"}, {.name = "Cal"}, {.name = "Obs"}};
	char request[256] = "";
	char owner[PART_NAME_MAX] = "";
	for (int v = 0; v < 50 && !owner[0]; v++) {
		snprintf(request, sizeof request,
		         "Create an issue in acme/widgets for the login timeout bug %d",
		         v + (reversed ? 50 : 0));
		struct part_ownership o;
		struct decision why;
		part_ownership_compute("Ada", false, mem, 4, request, PART_MODE_ACTION, &o, &why);
		if (strcmp(o.owner, "Obs") != 0)
			snprintf(owner, sizeof owner, "%s", o.owner);
	}
	assert_true(owner[0]);

	struct th_room room;
	char homes[3][256];
	struct fake f[3];
	struct proc a[3];
	const char *script =
	        "[{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"
	        "\"space_decision\",\"arguments\":{\"shouldSpeak\":true,\"reason\":\"mine\","
	        "\"message\":\"I'll open the issue in acme/widgets for the login timeout now.\","
	        "\"commitments\":[{\"type\":\"create_issue\",\"repo\":\"acme/widgets\","
	        "\"title\":\"Login times out\",\"description\":\"The host reports that the login "
	        "page times out.\"}]}}]}]";
	start_trio_ordered(&room, script, false, reversed, homes, f, a);
	struct ws_client *obs = th_observe(&room, "Obs");
	th_msleep(500); /* every agent sees the four members */

	th_room_host(&room, request);
	/* §12.1 step 4: before the chat that promises it, the owner claims the
	 * work in the room: action = the type, target = repo#title. */
	cJSON *cl = th_expect(obs, "claim", pred_chat_from_agent, NULL, SPEAK_MS);
	if (!cl) {
		for (int i = 0; i < 3; i++)
			dump_decisions(homes[i]);
		fail_msg("no claim before the owner's promise");
	}
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cl, "name")), owner);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cl, "action")),
	                    "create_issue");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cl, "target")),
	                    "acme/widgets#Login times out");
	cJSON_Delete(cl);
	/* The first agent to speak is the owner; for two more ticks each,
	 * no other agent speaks. */
	cJSON *m = th_expect(obs, "chat", pred_chat_from_agent, NULL, SPEAK_MS);
	if (!m) {
		for (int i = 0; i < 3; i++) {
			dump(&a[i]);
			dump_decisions(homes[i]);
		}
		fail_msg("the owner %s never spoke about '%s'", owner, request);
	}
	const char *who = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	if (strcmp(who, owner) != 0)
		fail_msg("%s spoke first, but %s owns '%s'", who, owner, request);
	cJSON_Delete(m);
	while ((m = th_expect(obs, "chat", pred_chat_from_agent, NULL, 12000)) != NULL) {
		who = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
		if (strcmp(who, owner) != 0) {
			char *t = cJSON_PrintUnformatted(m);
			for (int i = 0; i < 3; i++)
				dump_decisions(homes[i]);
			fail_msg("%s is not the owner (%s is) but spoke: %s", who, owner, t);
		}
		cJSON_Delete(m);
	}
	for (int i = 0; i < 3; i++) {
		int n = count_in(homes[i], "memory/commitments.jsonl", "\"source\":\"space\"");
		bool is_owner = strcmp(names[i], owner) == 0;
		if (n != (is_owner ? 1 : 0))
			fail_msg("%s (%s) has %d space commitments in its ledger", names[i],
			         is_owner ? "the owner" : "not the owner", n);
	}

	th_observer_free(obs);
	stop_trio(&room, f, a);
}

static void test_three_agents_one_owner(void **state)
{
	(void)state;
	three_agents_one_owner(false);
}

static void test_three_agents_one_owner_reversed(void **state)
{
	(void)state;
	three_agents_one_owner(true);
}

/* --- the borderline echo goes to the judge ------------------------------------------------ */

/* Three peers talk about the spacing grid; Ada's model paraphrases the
 * first of them — the validator's borderline band (§9.1 check 6). The judge
 * (her own model, asked without tools) says YES: rejected, never in the
 * room. A fourth message changes the window; the same words are judged
 * again, NO this time, and they are said. */
static void test_judge_borderline(void **state)
{
	(void)state;
	struct th_room room;
	/* no chat interval: Dee's two chats must both reach the room, whatever
	 * the phase of Ada's tick */
	const char *const room_env[] = {"SPACE_CHAT_INTERVAL_MS=0", NULL};
	th_room_start(&room, 0, room_env, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(
	        home,
	        "[{\"match\":{\"no_tools\":true,\"last_user_contains\":\"Candidate:\"},"
	        "\"content\":\"YES\",\"times\":1},"
	        "{\"match\":{\"no_tools\":true,\"last_user_contains\":\"Candidate:\"},"
	        "\"content\":\"NO\"},"
	        "{\"match\":{\"tool_choice\":\"space_decision\",\"last_user_contains\":"
	        "\"layout decisions get easier\"},\"tool_calls\":[{\"name\":\"space_decision\","
	        "\"arguments\":{\"shouldSpeak\":true,\"reason\":\"grid\",\"message\":\"The spacing "
	        "grid locks gaps between components which removes layout guesswork\"}}]},"
	        "{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"
	        "\"space_decision\",\"arguments\":{\"shouldSpeak\":false,\"reason\":\"wait\"}}]}]",
	        &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", "MAX_ACL=10",
	                                  NULL}); /* four agents in a row */
	struct ws_client *bob = th_observe(&room, "Bob");
	struct ws_client *cal = th_observe(&room, "Cal");
	struct ws_client *dee = th_observe(&room, "Dee");
	struct ws_client *obs = th_observe(&room, "Obs");
	chat(bob, "Locking the gaps between components is what makes the spacing grid valuable", 1);
	chat(cal, "Dark mode color tokens still confuse me when switching themes", 1);
	/* a peer's words reach the model only when they name us (the gate) */
	chat(dee, "Ada, layout decisions get easier with fixed component gaps", 1);

	char *s = wait_story(home, "layout decisions get easier", "semantic_echo_judge",
	                     SPEAK_MS + 10000);
	must_hold(s, "validator info echo_judge: borderline echo");
	must_hold(s, "validator reject semantic_echo_judge");
	if (strstr(s, "outbound sent"))
		fail_msg("the echo was sent:\n%s", s);
	free(s);
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", 2000);
	if (m)
		fail_msg("the judged echo reached the room");
	/* the judge's call: no tools, the candidate and the three messages */
	bool judged = false;
	for (int i = 0; i < fake_calls(home) && !judged; i++) {
		char *req = fake_request(home, i);
		if (req && strstr(req, "Candidate: \\\"The spacing grid locks gaps")) {
			judged = true;
			must_hold(req, "Existing messages:");
			must_hold(req, "\"max_tokens\":10");
			if (strstr(req, "\"tools\""))
				fail_msg("the judge was offered tools: %s", req);
		}
		free(req);
	}
	assert_true(judged);

	/* a new message: the window changed, the judge is asked again */
	chat(dee, "Ada, the release train leaves on Thursday morning", 1);
	m = th_expect(obs, "chat", pred_chat_from, "Ada", SPEAK_MS);
	if (!m) {
		dump(&a);
		dump_decisions(home);
		fail_msg("the words the judge found new were never said");
	}
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")),
	                    "The spacing grid locks gaps between components which removes layout "
	                    "guesswork");
	cJSON_Delete(m);
	s = wait_story(home, "release train leaves", "outbound sent", W);
	must_hold(s, "validator info echo_judge: the model judged it new");
	must_hold(s, "validator approve");
	free(s);
	assert_int_equal(count_in(home, "fake-record.jsonl", "Candidate:"), 2);

	th_observer_free(bob);
	th_observer_free(cal);
	th_observer_free(dee);
	stop_solo(obs, &a, &f, &room);
}

/* --- words that promise, without a commitment: extraction ------------------------------------ */

/* The host shares news; Ada's model answers "I can post about it on
 * Bluesky." with no structured commitment. The words pass the validator
 * (a capability is not an empty promise), are said, and — because they
 * promise — one extraction call (no tools, "Reply 1:") finds the Bluesky
 * post, which is enqueued with source space (§8.4, §12.3). */
static void test_extraction(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	struct fake f;
	start_fake(home,
	           "[{\"match\":{\"no_tools\":true,\"last_user_contains\":\"Reply 1:\"},"
	           "\"content\":\"```json\\n[{\\\"description\\\":\\\"Post about the launch on "
	           "Bluesky\\\",\\\"type\\\":\\\"post_bluesky\\\",\\\"params\\\":{\\\"title\\\":"
	           "\\\"Launch\\\"},\\\"confidence\\\":\\\"high\\\"}]\\n```\"},"
	           "{\"match\":{\"no_tools\":true,\"last_user_contains\":\"Message:\"},"
	           "\"content\":\"DISCUSSION\"}," DECIDE("I can post about it on Bluesky.") "]",
	           &f);
	struct proc a;
	start_agent(&a, home,
	            (const char *const[]){"AGENT_NAME=Ada", url, f.env, "LLM_MODEL=fake-model",
	                                  "LLM_API_KEY=test-key-0123456789", NULL});
	struct ws_client *obs = th_observe(&room, "Obs");
	th_room_host(&room, "Ada, the launch went well today.");
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", SPEAK_MS);
	if (!m) {
		dump(&a);
		dump_decisions(home);
		fail_msg("Ada never answered");
	}
	cJSON_Delete(m);
	char *s = wait_story(home, "the launch went well", "1 commitment(s) extracted", W);
	must_hold(s, "compose info extraction: the words promise (\"i can\")");
	free(s);
	expect_space_commitments(home, 1);
	char *ledger = home_read(home, "memory/commitments.jsonl");
	must_hold(ledger, "post_bluesky");
	free(ledger);
	assert_int_equal(count_in(home, "fake-record.jsonl", "Reply 1:"), 1);

	stop_solo(obs, &a, &f, &room);
}

/* --- follow-up, a social-only agent, the host's exit ----------------------------------------- */

/* Waits until every request in home's fake record that holds `marker` also
 * holds `needle`; returns how many held the marker. */
static int requests_with(const char *home, const char *marker, const char *needle,
                         const char *forbidden)
{
	int n = 0;
	for (int i = 0; i < fake_calls(home); i++) {
		char *req = fake_request(home, i);
		if (req && strstr(req, marker)) {
			n++;
			if (needle && !strstr(req, needle))
				fail_msg("a request with '%s' lacks '%s': %.3000s", marker, needle,
				         req);
			if (forbidden && strstr(req, forbidden))
				fail_msg("a request with '%s' holds '%s': %.3000s", marker,
				         forbidden, req);
		}
		free(req);
	}
	return n;
}

/* Ada, Ben and Cal (--social-only) with models that hold back; the host
 * asks for an issue that Cal would own if it could (the SHA-256 ranking
 * with Cal eligible puts Cal first): the owner is another agent, it is
 * retried (§11.2) and still says nothing; the host asks "Did you do it?":
 * the owner's next prompt is at critical escalation, still names it the
 * owner and the original request, and it commits. Cal never owns, never
 * retries, never commits. Then the host types exit: the room shuts down,
 * the agents notice, ask their models nothing more and exit cleanly. */
static void test_follow_up_social_only_exit(void **state)
{
	(void)state;
	const char *const *names = TRIO;
	static const char *const social[] = {"social"};
	char request[256] = "";
	char owner[PART_NAME_MAX] = "";
	for (int v = 0; v < 200 && !owner[0]; v++) {
		snprintf(request, sizeof request, "Create an issue for the login timeout bug %d",
		         v);
		struct part_member all[] = {
		        {.name = "Ada"}, {.name = "Ben"}, {.name = "Cal"}, {.name = "Obs"}};
		struct part_member real[] = {
		        {.name = "Ada"},
		        {.name = "Ben"},
		        {.name = "Cal", .caps = social, .ncaps = 1, .has_caps = true},
		        {.name = "Obs"}};
		struct part_ownership o1, o2;
		struct decision why;
		part_ownership_compute("Ada", false, all, 4, request, PART_MODE_ACTION, &o1, &why);
		part_ownership_compute("Ada", false, real, 4, request, PART_MODE_ACTION, &o2, &why);
		if (strcmp(o1.owner, "Cal") == 0 &&
		    (strcmp(o2.owner, "Ada") == 0 || strcmp(o2.owner, "Ben") == 0))
			snprintf(owner, sizeof owner, "%s", o2.owner);
	}
	assert_true(owner[0]);

	struct th_room room;
	char homes[3][256];
	struct fake f[3];
	struct proc a[3];
	/* Hold back; the retry gives no commitment; after the follow-up, commit. */
	const char *script =
	        "[{\"match\":{\"tool_choice\":\"space_decision\",\"last_user_contains\":\"HOST "
	        "REQUEST\"},\"tool_calls\":[{\"name\":\"space_decision\",\"arguments\":{"
	        "\"shouldSpeak\":false,\"reason\":\"not sure what to file\"}}]},"
	        "{\"match\":{\"tool_choice\":\"space_decision\",\"last_user_contains\":\"following "
	        "up\"},\"tool_calls\":[{\"name\":\"space_decision\",\"arguments\":{\"shouldSpeak\":"
	        "true,\"reason\":\"the host is waiting\",\"message\":\"Filing it in acme/widgets "
	        "now.\",\"commitments\":[{\"type\":\"create_issue\",\"repo\":\"acme/widgets\","
	        "\"title\":\"Login times out\",\"description\":\"The host reports that the login "
	        "page times out.\"}]}}]},"
	        "{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"
	        "\"space_decision\",\"arguments\":{\"shouldSpeak\":false,\"reason\":\"later\"}}]},"
	        "{\"content\":\"NO\"}]";
	start_trio(&room, script, true, homes, f, a);
	int oi = strcmp(owner, "Ada") == 0 ? 0 : 1;
	struct ws_client *obs = th_observe(&room, "Obs");
	th_msleep(500); /* every agent sees the four members */

	th_room_host(&room, request);
	/* the owner declines, is retried with the commitment-only prompt, and
	 * still says nothing */
	int64_t end = th_now_ms() + SPEAK_MS;
	while (count_in(homes[oi], "fake-record.jsonl", "HOST REQUEST") < 1 && th_now_ms() < end)
		th_msleep(100);
	if (count_in(homes[oi], "fake-record.jsonl", "HOST REQUEST") < 1) {
		dump(&a[oi]);
		dump_decisions(homes[oi]);
		fail_msg("the owner %s was never retried", owner);
	}
	char *st = story(homes[oi], request);
	must_hold(st, "compose info owner_retry");
	free(st);
	cJSON *m = th_expect(obs, "chat", pred_chat_from_agent, NULL, 1000);
	if (m)
		fail_msg("an agent spoke before the follow-up");

	th_room_host(&room, "Did you do it?");
	m = th_expect(obs, "chat", pred_chat_from_agent, NULL, SPEAK_MS);
	if (!m) {
		for (int i = 0; i < 3; i++) {
			dump(&a[i]);
			dump_decisions(homes[i]);
		}
		fail_msg("the owner %s never answered the follow-up", owner);
	}
	const char *who = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	if (strcmp(who, owner) != 0)
		fail_msg("%s answered, but %s owns the request", who, owner);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")),
	                    "Filing it in acme/widgets now.");
	cJSON_Delete(m);
	/* the owner's prompt after the follow-up: critical, still its request,
	 * the original words */
	char own_line[160], req_line[400];
	snprintf(req_line, sizeof req_line, "open: \\\"%s\\\"", request);
	assert_int_equal(
	        requests_with(homes[oi], "The host is following up", "Escalation: critical", NULL),
	        1);
	requests_with(homes[oi], "The host is following up", "YOU own the host's request", NULL);
	requests_with(homes[oi], "The host is following up", req_line, NULL);
	/* every other prompt names the same owner, never a new one */
	snprintf(own_line, sizeof own_line, "%s owns the host's request", owner);
	for (int i = 0; i < 3; i++) {
		if (i == oi)
			continue;
		requests_with(homes[i], "owns the host's request", own_line, "YOU own");
		/* no retry for a non-owner, nor for the social-only agent */
		assert_int_equal(count_in(homes[i], "fake-record.jsonl", "HOST REQUEST"), 0);
	}
	assert_true(requests_with(homes[2], "owns the host's request", own_line, "YOU own") >= 1);
	end = th_now_ms() + W;
	while (count_in(homes[oi], "memory/commitments.jsonl", "\"source\":\"space\"") < 1 &&
	       th_now_ms() < end)
		th_msleep(100);
	for (int i = 0; i < 3; i++) {
		int n = count_in(homes[i], "memory/commitments.jsonl", "\"source\":\"space\"");
		if (n != (i == oi ? 1 : 0))
			fail_msg("%s has %d space commitments", names[i], n);
	}

	/* the host's exit: the room shuts down and the agents notice */
	th_room_host(&room, "exit");
	end = th_now_ms() + W;
	while (th_room_alive(&room) && th_now_ms() < end)
		th_msleep(50);
	assert_false(th_room_alive(&room));
	for (int i = 0; i < 3; i++) {
		if (!proc_wait_output(&a[i], "the room is shutting down", W) ||
		    !proc_wait_output(&a[i], "left the room", W)) {
			dump(&a[i]);
			fail_msg("%s did not notice the room's end", names[i]);
		}
	}
	int calls[3];
	for (int i = 0; i < 3; i++)
		calls[i] = fake_calls(homes[i]);
	th_msleep(7500); /* longer than a tick: nothing more is asked */
	for (int i = 0; i < 3; i++) {
		assert_true(proc_alive(&a[i]));
		assert_int_equal(fake_calls(homes[i]), calls[i]);
	}
	th_observer_free(obs);
	stop_trio(&room, f, a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_host_question_answered, th_teardown),
	        cmocka_unit_test_teardown(test_peer_at_max_silent, th_teardown),
	        cmocka_unit_test_teardown(test_courtesy_at_max_minus_one, th_teardown),
	        cmocka_unit_test_teardown(test_echo_rejected, th_teardown),
	        cmocka_unit_test_teardown(test_echo_during_typing, th_teardown),
	        cmocka_unit_test_teardown(test_stop_during_model_call, th_teardown),
	        cmocka_unit_test_teardown(test_layer2_intent, th_teardown),
	        cmocka_unit_test_teardown(test_layer2_failure, th_teardown),
	        cmocka_unit_test_teardown(test_peer_claim_drops_commitment, th_teardown),
	        cmocka_unit_test_teardown(test_salvage_in_voice, th_teardown),
	        cmocka_unit_test_teardown(test_three_agents_one_owner, th_teardown),
	        cmocka_unit_test_teardown(test_three_agents_one_owner_reversed, th_teardown),
	        cmocka_unit_test_teardown(test_judge_borderline, th_teardown),
	        cmocka_unit_test_teardown(test_extraction, th_teardown),
	        cmocka_unit_test_teardown(test_follow_up_social_only_exit, th_teardown),
	};
	const char *filter = getenv("PART_TEST_FILTER");
	if (filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
