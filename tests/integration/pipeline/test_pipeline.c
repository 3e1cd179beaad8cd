/*
 * The message pipeline end to end, black-box: the real
 * general-agent binary, the real agent-space server, raw WebSocket members
 * playing peer agents, the LLM fake as a separate process, and a real
 * redis-server.
 *
 *   - room chats with `chain` fields: a peer at MAX_ACL − 1 passes (with the
 *     courtesy flag), at MAX_ACL is react-only, above is blocked, a peer
 *     that rewrites its chain to 0 is caught by the derived chain, an
 *     unaddressed peer is context; the host's message has chain 0. Read back
 *     with `general-agent decisions --json` and `general-agent why`;
 *   - the owner pauses at the terminal: only /resume and /status are
 *     answered, `status` shows it, a restart stays paused, `general-agent
 *     resume` from another shell resumes the running daemon;
 *   - a denied target: `cross mode denylist` + `cross deny 'space:*'`, the
 *     owner asks the model to say something in the room (space_say): it is
 *     refused with the permission error, audited in send_audit.jsonl, and
 *     never reaches the room; `cross clear` on the running daemon, and the
 *     next one reaches the room with chain 1;
 *   - Redis: two agents in one room addressed by one peer message: exactly
 *     one wins the claim, the other stands down.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "tests/integration/space-client/harness.h"
#include "testutil.h"

#define W TH_WAIT_MS

static void url_env(char *buf, size_t cap, const struct th_room *r)
{
	snprintf(buf, cap, "SPACE_URL=ws://127.0.0.1:%d", r->port);
}

static void dump(struct proc *p)
{
	char *e = proc_stderr(p), *o = proc_stdout(p);
	fprintf(stderr, "---- agent stderr ----\n%s\n---- agent stdout ----\n%s\n", e ? e : "",
	        o ? o : "");
	free(e);
	free(o);
}

static void start_agent(struct proc *p, const char *home, const char *const *env)
{
	if (proc_start(p, home, (const char *const[]){NULL}, env) != 0)
		fail_msg("cannot start general-agent in %s", home);
	th_track_pid(p->pid);
	if (!proc_wait_output(p, "ready and listening", W)) {
		dump(p);
		fail_msg("the agent did not start");
	}
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

static void must_output(struct proc *p, const char *needle)
{
	if (!proc_wait_output(p, needle, W)) {
		dump(p);
		fail_msg("the agent never printed '%s'", needle);
	}
}

/* Runs `general-agent ARGS` in home; returns the exit code, output in *out. */
static int run(const char *home, const char *const *argv, char **out)
{
	char *err = NULL;
	int rc = proc_run(home, argv, (const char *const[]){"SPACE_URL=ws://127.0.0.1:1", NULL},
	                  out, &err);
	if (rc != 0 && rc != 1)
		fprintf(stderr, "general-agent %s exited %d: %s\n", argv[0], rc, err ? err : "");
	free(err);
	return rc;
}

/* --- decisions -------------------------------------------------------------------------- */

struct verdict {
	char id[128];
	char verdict[16];
	char rule[48];
	char reason[400];
	bool claim_seen;
	char claim_verdict[16];
	char claim_reason[400];
};

/* The gate's decision about the message whose event record mentions
 * `text`, read from home/memory/decisions.jsonl; false if not there yet. */
static bool read_gate(const char *home, const char *text, struct verdict *v)
{
	memset(v, 0, sizeof *v);
	char *log = home_read(home, "memory/decisions.jsonl");
	if (!log)
		return false;
	bool found = false, gate = false;
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		if (!j)
			continue;
		const char *stage = cJSON_GetStringValue(cJSON_GetObjectItem(j, "stage"));
		const char *mid = cJSON_GetStringValue(cJSON_GetObjectItem(j, "messageId"));
		const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(j, "reason"));
		const char *rule = cJSON_GetStringValue(cJSON_GetObjectItem(j, "rule"));
		const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(j, "verdict"));
		if (!found && stage && strcmp(stage, "event") == 0 && reason &&
		    strstr(reason, text)) {
			found = true;
			snprintf(v->id, sizeof v->id, "%s", mid ? mid : "");
		} else if (found && mid && strcmp(mid, v->id) == 0 && stage &&
		           strcmp(stage, "gate") == 0) {
			if (!gate) {
				gate = true;
				snprintf(v->verdict, sizeof v->verdict, "%s",
				         verdict ? verdict : "");
				snprintf(v->rule, sizeof v->rule, "%s", rule ? rule : "");
				snprintf(v->reason, sizeof v->reason, "%s", reason ? reason : "");
			} else if (rule && strcmp(rule, "claim") == 0) {
				v->claim_seen = true;
				snprintf(v->claim_verdict, sizeof v->claim_verdict, "%s",
				         verdict ? verdict : "");
				snprintf(v->claim_reason, sizeof v->claim_reason, "%s",
				         reason ? reason : "");
			}
		}
		cJSON_Delete(j);
	}
	free(log);
	return found && gate;
}

static void wait_gate(const char *home, const char *text, struct verdict *v, bool want_claim)
{
	int64_t end = th_now_ms() + W;
	while (th_now_ms() < end) {
		if (read_gate(home, text, v) && (!want_claim || v->claim_seen))
			return;
		th_msleep(50);
	}
	char *log = home_read(home, "memory/decisions.jsonl");
	fprintf(stderr, "---- decisions.jsonl ----\n%s\n", log ? log : "(none)");
	free(log);
	fail_msg("no gate decision about '%s'%s (decisions above)", text,
	         want_claim ? " (with claim)" : "");
}

static void expect_gate(const char *home, const char *text, const char *verdict, const char *rule)
{
	struct verdict v;
	wait_gate(home, text, &v, false);
	if (strcmp(v.verdict, verdict) != 0 || strcmp(v.rule, rule) != 0)
		fail_msg("'%s': gate said %s/%s (%s), expected %s/%s", text, v.verdict, v.rule,
		         v.reason, verdict, rule);
}

static void chat(struct ws_client *c, const char *text, int chain)
{
	char buf[1024];
	if (chain >= 0)
		snprintf(buf, sizeof buf, "{\"type\":\"chat\",\"content\":\"%s\",\"chain\":%d}",
		         text, chain);
	else
		snprintf(buf, sizeof buf, "{\"type\":\"chat\",\"content\":\"%s\"}", text);
	th_send(c, buf);
}

/* --- room chats through the gate ---------------------------------------------------------- */

static void test_room_chains(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128];
	th_home_new(home, sizeof home);
	url_env(url, sizeof url, &room);
	const char *env[] = {"AGENT_NAME=Ada", url, "MAX_ACL=4", NULL};
	struct proc a;
	start_agent(&a, home, env);
	must_output(&a, "joined the room");

	struct ws_client *bob = th_observe(&room, "Bob");
	struct ws_client *cid = th_observe(&room, "Cid");
	struct ws_client *dee = th_observe(&room, "Dee");
	struct ws_client *eve = th_observe(&room, "Eve");
	struct ws_client *fay = th_observe(&room, "Fay");

	/* The host first: a person's message, chain 0 whatever it carries. */
	th_room_host(&room, "Ada, what do you think of the plan?");
	expect_gate(home, "what do you think of the plan", "pass", "pass");

	chat(bob, "Ada, Bob here at chain three", 3); /* MAX - 1: reply + courtesy */
	struct verdict v;
	wait_gate(home, "Bob here at chain three", &v, true);
	assert_string_equal(v.verdict, "pass");
	assert_string_equal(v.claim_verdict, "pass"); /* the room's claim: won */
	chat(cid, "Ada, Cid here at chain four", 4);  /* = MAX: react only */
	expect_gate(home, "Cid here at chain four", "react", "chain_length");
	chat(dee, "Ada, Dee here at chain five", 5); /* > MAX: blocked */
	expect_gate(home, "Dee here at chain five", "block", "chain_length");
	/* Eve rewrites her marker to 0; four agent messages since the host
	 * say otherwise: the derived chain counts. */
	chat(eve, "Ada, Eve here and my chain is zero", 0);
	wait_gate(home, "Eve here and my chain is zero", &v, false);
	assert_string_not_equal(v.verdict, "pass");
	assert_string_equal(v.rule, "chain_length");
	/* a person speaks again: the derived chain starts over */
	th_room_host(&room, "Thanks all, quiet now");
	expect_gate(home, "Thanks all, quiet now", "pass", "pass");
	/* SIGHUP replaces the configuration: the gate keeps its own copy of
	 * our name (a borrowed one would be read after free: ASan). */
	struct ws_client *gil = th_observe(&room, "Gil");
	proc_signal(&a, SIGHUP);
	must_output(&a, "configuration reloaded");
	/* ... and the room hears the identity again (SELF.md may have changed) */
	cJSON *idm = th_expect(gil, "identity", th_pred_name, "Ada", 10000);
	assert_non_null(idm);
	cJSON_Delete(idm);
	th_observer_free(gil);
	th_room_host(&room, "Ada, still with us after the reload?");
	expect_gate(home, "still with us after the reload", "pass", "pass");
	chat(fay, "just thinking out loud about lunch", 1); /* not addressed: context */
	expect_gate(home, "thinking out loud about lunch", "context", "response_only");

	/* decisions --json: stored lines, each with the fields of the issue */
	char *out = NULL;
	assert_int_equal(
	        run(home, (const char *const[]){"decisions", "--json", "--tail", "0", NULL}, &out),
	        0);
	assert_non_null(out);
	int lines = 0;
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"), lines++) {
		cJSON *j = cJSON_Parse(l);
		assert_non_null(j);
		const char *keys[] = {"time",  "platform", "conversation", "messageId",
		                      "stage", "verdict",  "rule",         "reason"};
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (!cJSON_GetObjectItem(j, keys[i]))
				fail_msg("decision without '%s': %s", keys[i], l);
		cJSON_Delete(j);
	}
	assert_true(lines >= 14);
	free(out);

	/* why: every decision about Dee's message, in order */
	wait_gate(home, "Dee here at chain five", &v, false);
	out = NULL;
	assert_int_equal(run(home, (const char *const[]){"why", v.id, NULL}, &out), 0);
	assert_non_null(out);
	char *ev = strstr(out, "event"), *gate = strstr(out, "chain_length");
	if (!ev || !gate || gate < ev || !strstr(out, "block") || !strstr(out, "MAX_ACL"))
		fail_msg("why %s printed:\n%s", v.id, out);
	free(out);
	out = NULL;
	assert_int_equal(
	        run(home, (const char *const[]){"why", "space:nothing-like-this", NULL}, &out), 1);
	free(out);

	th_observer_free(bob);
	th_observer_free(cid);
	th_observer_free(dee);
	th_observer_free(eve);
	th_observer_free(fay);
	stop_agent(&a);

	/* A restart remembers what was answered: the history replay is
	 * context, never answered again. */
	start_agent(&a, home, env);
	must_output(&a, "joined the room");
	th_msleep(500);
	stop_agent(&a);
	th_room_stop(&room, SIGTERM);
}

/* --- the kill switch ---------------------------------------------------------------------- */

static void test_owner_pause_resume(void **state)
{
	(void)state;
	char home[256];
	th_home_new(home, sizeof home);
	const char *env[] = {"AGENT_NAME=Ada", "SPACE_URL=ws://127.0.0.1:1", NULL};
	struct proc a;
	start_agent(&a, home, env);
	proc_write_stdin(&a, "/pause\n");
	must_output(&a, "Ada: paused: I answer nobody now");
	proc_write_stdin(&a, "hello, are you there?\n");
	must_output(&a, "Ada: (paused: I answer only /resume and /status)");
	proc_write_stdin(&a, "/status\n");
	must_output(&a, "Ada: PAUSED");
	/* the room's state, and why it is not joined (nothing listens on
	 * port 1): connecting, or backing off with the reason */
	must_output(&a, "  room           ");
	char *so = proc_stdout(&a);
	if (!strstr(so, "connecting to ws://127.0.0.1:1") && !strstr(so, "not joined: "))
		fail_msg("/status does not say why the room is not joined:\n%s", so);
	free(so);

	char *out = NULL;
	run(home, (const char *const[]){"status", NULL}, &out);
	if (!out || !strstr(out, "paused       yes"))
		fail_msg("status does not show the pause:\n%s", out ? out : "");
	free(out);

	/* the gate said so, and why explains the blocked line */
	struct verdict v;
	wait_gate(home, "hello, are you there?", &v, false);
	assert_string_equal(v.verdict, "block");
	assert_string_equal(v.rule, "paused");

	/* a restart stays paused */
	stop_agent(&a);
	start_agent(&a, home, env);
	proc_write_stdin(&a, "still there?\n");
	must_output(&a, "Ada: (paused: I answer only /resume and /status)");
	proc_write_stdin(&a, "/resume\n");
	must_output(&a, "Ada: resumed");
	proc_write_stdin(&a, "/status\n");
	must_output(&a, "Ada: running");

	/* from another shell: the running daemon picks it up */
	out = NULL;
	assert_int_equal(run(home, (const char *const[]){"pause", NULL}, &out), 0);
	assert_non_null(strstr(out, "paused"));
	free(out);
	must_output(&a, "Ada: paused from outside");
	out = NULL;
	assert_int_equal(run(home, (const char *const[]){"resume", NULL}, &out), 0);
	free(out);
	must_output(&a, "Ada: resumed from outside");
	stop_agent(&a);
}

/* --- send permissions on the pipeline -------------------------------------------------------- */

static pid_t start_fake(const char *home, const char *script, char *env_url, size_t cap)
{
	home_write(home, "fake-script.json", script);
	char bin[1024], scriptp[1024], portp[1024];
	snprintf(bin, sizeof bin, "%s/tests/fakes/llm/llmfake-server", getenv("GA_BUILD_DIR"));
	snprintf(scriptp, sizeof scriptp, "%s/fake-script.json", home);
	snprintf(portp, sizeof portp, "%s/fake.port", home);
	pid_t pid = fork();
	if (pid == 0) {
		/* dies with the test, even when a failed assertion skips the stop */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		execl(bin, bin, "--script", scriptp, "--port-file", portp, (char *)NULL);
		_exit(127);
	}
	th_track_pid(pid);
	for (int i = 0; i < 1000; i++) {
		char *port = home_read(home, "fake.port");
		if (port && atoi(port) > 0) {
			snprintf(env_url, cap, "LLM_BASE_URL=http://127.0.0.1:%d/v1", atoi(port));
			free(port);
			return pid;
		}
		free(port);
		usleep(10000);
	}
	fail_msg("llmfake-server did not start");
	return -1;
}

static bool pred_chat_from(const cJSON *m, const void *arg)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	return name && strcmp(name, arg) == 0;
}

static void test_denied_target(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char home[256], url[128], llm[160];
	th_home_new(home, sizeof home);
	url_env(url, sizeof url, &room);
	pid_t fake = start_fake(
	        home,
	        "[{\"match\":{\"call\":0},\"tool_calls\":[{\"name\":\"space_say\","
	        "\"arguments\":{\"text\":\"Hello room, my owner says hi.\"}}]},"
	        "{\"match\":{\"call\":1},\"content\":\"I tried.\"},"
	        "{\"match\":{\"call\":2},\"tool_calls\":[{\"name\":\"space_say\","
	        "\"arguments\":{\"text\":\"Hello again, the owner sends regards.\"}}]},"
	        "{\"match\":{\"call\":3},\"content\":\"Said.\"},"
	        "{\"match\":{\"call\":4},\"tool_calls\":[{\"name\":\"space_say\","
	        "\"arguments\":{\"text\":\"I'll create an issue for that right away.\"}}]},"
	        "{\"content\":\"Done.\"}]",
	        llm, sizeof llm);

	char *out = NULL;
	assert_int_equal(run(home, (const char *const[]){"cross", "mode", "denylist", NULL}, &out),
	                 0);
	free(out);
	out = NULL;
	assert_int_equal(run(home, (const char *const[]){"cross", "deny", "space:*", NULL}, &out),
	                 0);
	free(out);

	const char *env[] = {"AGENT_NAME=Ada",
	                     url,
	                     llm,
	                     "LLM_MODEL=fake-model",
	                     "LLM_API_KEY=test-key-0123456789",
	                     NULL};
	struct proc a;
	start_agent(&a, home, env);
	must_output(&a, "joined the room");
	struct ws_client *obs = th_observe(&room, "Obs");

	proc_write_stdin(&a, "tell the room hello, first try\n");
	must_output(&a, "Ada: not said in the room");
	char *o = proc_stdout(&a);
	if (!o || !strstr(o, "denylist") || !strstr(o, "space:*"))
		fail_msg("the refusal does not name the mode and pattern:\n%s", o ? o : "");
	free(o);
	char *audit = home_read(home, "memory/send_audit.jsonl");
	if (!audit || !strstr(audit, "\"source\":\"owner\"") || !strstr(audit, "space:127.0.0.1-"))
		fail_msg("send_audit.jsonl:\n%s", audit ? audit : "(missing)");
	if (!strstr(audit, "\"verdict\":\"deny\"") || strstr(audit, "\"verdict\":\"allow\""))
		fail_msg("not one denied attempt in send_audit.jsonl:\n%s", audit);
	free(audit);
	/* nothing reached the room */
	cJSON *m = th_expect(obs, "chat", pred_chat_from, "Ada", 1500);
	assert_null(m);

	/* the owner lifts the rule on the running daemon */
	out = NULL;
	assert_int_equal(run(home, (const char *const[]){"cross", "clear", NULL}, &out), 0);
	free(out);
	proc_write_stdin(&a, "tell the room hello, second try\n");
	m = th_expect(obs, "chat", pred_chat_from, "Ada", W);
	if (!m) {
		dump(&a);
		fail_msg("the chat never reached the room");
	}
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")),
	                    "Hello again, the owner sends regards.");
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "chain")), 1);
	cJSON_Delete(m);
	must_output(&a, "Ada: said in the room");
	audit = home_read(home, "memory/send_audit.jsonl");
	if (!strstr(audit, "\"verdict\":\"allow\""))
		fail_msg("the allowed attempt is not audited:\n%s", audit);
	free(audit);

	/* Moderation (seed 001): a promise with no commitment behind it is
	 * rejected by the validator, never reaches the room, and `why` says
	 * so. */
	proc_write_stdin(&a, "tell the room you will do it, third try\n");
	must_output(&a, "Ada: not said in the room (empty_promise)");
	m = th_expect(obs, "chat", pred_chat_from, "Ada", 1500);
	assert_null(m);
	char *log = home_read(home, "memory/decisions.jsonl");
	char *rej = log ? strstr(log, "\"rule\":\"empty_promise\"") : NULL;
	assert_non_null(rej);
	char *line = rej;
	while (line > log && line[-1] != '\n')
		line--;
	char *idp = strstr(line, "\"messageId\":\"");
	assert_non_null(idp);
	idp += strlen("\"messageId\":\"");
	char id[64];
	snprintf(id, sizeof id, "%.*s", (int)strcspn(idp, "\""), idp);
	free(log);
	out = NULL;
	assert_int_equal(run(home, (const char *const[]){"why", id, NULL}, &out), 0);
	if (!out || !strstr(out, "validator") || !strstr(out, "reject") ||
	    !strstr(out, "empty_promise"))
		fail_msg("why %s printed:\n%s", id, out ? out : "");
	free(out);

	th_observer_free(obs);
	stop_agent(&a);
	kill(fake, SIGTERM);
	waitpid(fake, NULL, 0);
	th_untrack_pid(fake);
	th_room_stop(&room, SIGTERM);
}

/* --- Redis: one claim among agents ---------------------------------------------------------- */

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
	th_track_pid(pid);
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
	fail_msg("redis-server did not start on port %d", port);
	return -1;
}

static void test_redis_one_claim(void **state)
{
	(void)state;
	int port = free_port();
	pid_t redis = start_redis(port);
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	char url[128], rurl[64];
	url_env(url, sizeof url, &room);
	snprintf(rurl, sizeof rurl, "REDIS_URL=redis://127.0.0.1:%d", port);
	char h1[256], h2[256];
	th_home_new(h1, sizeof h1);
	th_home_new(h2, sizeof h2);
	struct proc a, b;
	start_agent(&a, h1, (const char *const[]){"AGENT_NAME=Ada", url, rurl, NULL});
	start_agent(&b, h2, (const char *const[]){"AGENT_NAME=Ben", url, rurl, NULL});
	must_output(&a, "joined the room");
	must_output(&b, "joined the room");
	struct ws_client *obs = th_observe(&room, "Obs");
	chat(obs, "Ada and Ben, who takes this one?", 1);
	struct verdict va, vb;
	wait_gate(h1, "who takes this one", &va, true);
	wait_gate(h2, "who takes this one", &vb, true);
	assert_string_equal(va.id, vb.id); /* one message, one key */
	int won = (strcmp(va.claim_verdict, "pass") == 0) + (strcmp(vb.claim_verdict, "pass") == 0);
	if (won != 1)
		fail_msg("claims: Ada %s (%s), Ben %s (%s)", va.claim_verdict, va.claim_reason,
		         vb.claim_verdict, vb.claim_reason);
	struct verdict *lost = strcmp(va.claim_verdict, "pass") == 0 ? &vb : &va;
	assert_string_equal(lost->claim_verdict, "block");
	assert_non_null(strstr(lost->claim_reason, "held by"));

	/* Redis gone: peer messages fail closed; the host is still heard. */
	kill(redis, SIGKILL);
	waitpid(redis, NULL, 0);
	th_untrack_pid(redis);
	th_msleep(3200); /* the room drops a member's second chat within 3 s */
	chat(obs, "Ada, are you still with us?", 1);
	wait_gate(h1, "are you still with us", &va, true);
	assert_string_equal(va.claim_verdict, "block");
	assert_non_null(strstr(va.claim_reason, "unavailable"));
	th_room_host(&room, "Ada, the host asks too");
	expect_gate(h1, "the host asks too", "pass", "pass");

	th_observer_free(obs);
	stop_agent(&a);
	stop_agent(&b);
	th_room_stop(&room, SIGTERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_room_chains, th_teardown),
	        cmocka_unit_test_teardown(test_owner_pause_resume, th_teardown),
	        cmocka_unit_test_teardown(test_denied_target, th_teardown),
	        cmocka_unit_test_teardown(test_redis_one_claim, th_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
