/*
 * general-agent with a model, black-box: the real binary against the
 * OpenAI-compatible fake as a separate process (llmfake-server). Owner
 * conversation over a pipe, tool calls written to the commitment ledger,
 * a refused key → exit 69 naming the variable, and doctor's probe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "testutil.h"

#define WAIT_MS 10000

struct fx {
	char *home;
	pid_t fake;
	pid_t room;
	char url[128];
	char env_url[160];
};

/* Starts llmfake-server with the script; fills fx->url. */
static void start_fake(struct fx *fx, const char *script)
{
	home_write(fx->home, "fake-script.json", script);
	char bin[1024], scriptp[1024], portp[1024], recp[1024];
	snprintf(bin, sizeof bin, "%s/tests/fakes/llm/llmfake-server", getenv("GA_BUILD_DIR"));
	snprintf(scriptp, sizeof scriptp, "%s/fake-script.json", fx->home);
	snprintf(portp, sizeof portp, "%s/fake.port", fx->home);
	snprintf(recp, sizeof recp, "%s/fake.record", fx->home);
	fx->fake = fork();
	if (fx->fake == 0) {
		int null = open("/dev/null", 0);
		dup2(null, 0);
		execl(bin, bin, "--script", scriptp, "--port-file", portp, "--record", recp,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		char *port = tu_read(portp, NULL);
		if (port && atoi(port) > 0) {
			snprintf(fx->url, sizeof fx->url, "http://127.0.0.1:%d/v1", atoi(port));
			snprintf(fx->env_url, sizeof fx->env_url, "LLM_BASE_URL=%s", fx->url);
			free(port);
			return;
		}
		free(port);
		usleep(10000);
	}
	fail_msg("llmfake-server did not start");
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	fx->home = home_new();
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	pid_t kids[] = {fx->fake, fx->room};
	for (int i = 0; i < 2; i++) {
		if (kids[i] > 0) {
			kill(kids[i], SIGTERM);
			int st;
			waitpid(kids[i], &st, 0);
		}
	}
	home_remove(fx->home);
	free(fx);
	return 0;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("expected to find '%s' in:\n%s", needle, hay ? hay : "(null)");
}

static void start_agent(struct proc *p, struct fx *fx, const char *extra)
{
	const char *env[] = {"AGENT_NAME=Ada",
	                     fx->env_url,
	                     "LLM_MODEL=fake-model",
	                     "LLM_API_KEY=test-key-0123456789",
	                     "SPACE_URL=ws://127.0.0.1:1",
	                     extra,
	                     NULL};
	assert_int_equal(proc_start(p, fx->home, (const char *const[]){NULL}, env), 0);
	if (!proc_wait_output(p, "ready and listening", WAIT_MS)) {
		char *e = proc_stderr(p);
		proc_cleanup(p);
		fail_msg("daemon did not reach idle:\n%s", e);
	}
}

static void test_owner_conversation(void **state)
{
	struct fx *fx = *state;
	start_fake(fx,
	           "[{\"match\":{\"last_user_contains\":\"hello\"},\"content\":\"Hello, owner.\"},"
	           "{\"match\":{\"call\":1},\"tool_calls\":[{\"name\":"
	           "\"github_create_issue\",\"arguments\":{\"owner\":\"acme\",\"repo\":\"widgets\","
	           "\"title\":\"Flaky test in CI\"}}]},"
	           "{\"match\":{\"call\":2},\"content\":\"Queued the issue for acme/widgets.\"}]");
	struct proc p;
	start_agent(&p, fx, NULL);
	proc_write_stdin(&p, "hello there\n");
	assert_true(proc_wait_output(&p, "Ada: Hello, owner.", WAIT_MS));
	proc_write_stdin(&p, "please open an issue about the flaky test\n");
	assert_true(proc_wait_output(&p, "Ada: Queued the issue for acme/widgets.", WAIT_MS));
	char *ledger = home_read(fx->home, "memory/commitments.jsonl");
	assert_contains(ledger, "\"action\":\"create_issue\"");
	assert_contains(ledger, "Flaky test in CI");
	free(ledger);
	proc_write_stdin(&p, "exit\n");
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	char *e = proc_stderr(&p);
	/* the key never reaches a log line */
	assert_null(strstr(e, "test-key-0123456789"));
	assert_contains(e, "owner turn finished");
	free(e);
	proc_cleanup(&p);

	/* status shows the tokens the conversation used */
	char *out = NULL, *err = NULL;
	const char *env[] = {"AGENT_NAME=Ada", NULL};
	assert_int_equal(proc_run(fx->home, (const char *const[]){"status", NULL}, env, &out, &err),
	                 3);
	assert_contains(out, "tokens");
	assert_contains(out, "calls");
	free(out), free(err);
}

static void test_refused_key_exits_69(void **state)
{
	struct fx *fx = *state;
	start_fake(fx, "[{\"error\":{\"status\":401,\"message\":\"Incorrect API key provided\"}}]");
	struct proc p;
	start_agent(&p, fx, NULL);
	proc_write_stdin(&p, "hello\n");
	assert_int_equal(proc_wait(&p, WAIT_MS), 69);
	char *e = proc_stderr(&p);
	assert_contains(e, "LLM_API_KEY");
	assert_contains(e, "401");
	free(e);
	char *o = proc_stdout(&p);
	assert_contains(o, "Ada: I have to stop:");
	free(o);
	proc_cleanup(&p);
}

static void test_doctor_probe(void **state)
{
	struct fx *fx = *state;
	start_fake(fx,
	           "[{\"match\":{\"call\":1},\"error\":{\"status\":401,\"message\":\"bad key\"}},"
	           "{\"content\":\"ok\"}]");
	const char *env[] = {"AGENT_NAME=Ada", fx->env_url, "LLM_MODEL=fake-model",
	                     "LLM_API_KEY=test-key-0123456789", NULL};
	char *out = NULL, *err = NULL;
	/* 2: only the room (the tests' SPACE_URL, a closed port) is down */
	assert_int_equal(proc_run(fx->home, (const char *const[]){"doctor", NULL}, env, &out, &err),
	                 2);
	assert_contains(out, "verdict: the daemon can start, but the room did not answer");
	assert_contains(out, "model        on");
	assert_contains(out, "model call   ok");
	free(out), free(err);
	/* the second probe is refused: doctor names the variable and fails */
	assert_int_equal(proc_run(fx->home, (const char *const[]){"doctor", NULL}, env, &out, &err),
	                 1);
	assert_contains(out, "model call   FAIL");
	assert_contains(out, "LLM_API_KEY");
	assert_null(strstr(out, "test-key-0123456789"));
	free(out), free(err);
}

/* Starts a real agent-space on an ephemeral port; returns its port. */
static int start_room(struct fx *fx)
{
	char bin[1024], portp[1024], data[1024];
	snprintf(bin, sizeof bin, "%s/agent-space", getenv("GA_BUILD_DIR"));
	snprintf(portp, sizeof portp, "%s/room.port", fx->home);
	snprintf(data, sizeof data, "%s/room-data", fx->home);
	fx->room = fork();
	if (fx->room == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 2);
		setenv("SPACE_PORT", "0", 1);
		setenv("SPACE_BIND", "127.0.0.1", 1);
		setenv("SPACE_DATA_DIR", data, 1);
		execl(bin, bin, "--no-mdns", "--port-file", portp, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		char *port = tu_read(portp, NULL);
		int n = port ? atoi(port) : 0;
		free(port);
		if (n > 0)
			return n;
		usleep(10000);
	}
	fail_msg("agent-space did not start");
	return 0;
}

/* While it works for its owner the agent tells the room it is thinking,
 * and idle afterwards (state as the agent works). */
static void test_state_in_the_room(void **state)
{
	struct fx *fx = *state;
	start_fake(fx, "[{\"content\":\"On it.\",\"delay_ms\":200}]");
	int port = start_room(fx);
	char space_url[64];
	snprintf(space_url, sizeof space_url, "SPACE_URL=ws://127.0.0.1:%d", port);
	const char *env[] = {"AGENT_NAME=Ada", fx->env_url, "LLM_MODEL=fake-model", space_url,
	                     NULL};
	struct proc p;
	assert_int_equal(proc_start(&p, fx->home, (const char *const[]){NULL}, env), 0);
	assert_true(proc_wait_output(&p, "joined the room", WAIT_MS));
	proc_write_stdin(&p, "summarise the week\n");
	assert_true(proc_wait_output(&p, "Ada: On it.", WAIT_MS));
	proc_write_stdin(&p, "exit\n");
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
	/* the room writes its log as it gets the agent's last state, which may
	 * be a moment after the agent exited: read it until "idle" follows
	 * "thinking", for at most WAIT_MS */
	char *log = NULL;
	for (int waited = 0;; waited += 20) {
		log = home_read(fx->home, "room-data/chat.jsonl");
		const char *th = log ? strstr(log, "thinking") : NULL;
		if ((th && strstr(th, "idle")) || waited >= WAIT_MS)
			break;
		free(log);
		usleep(20000);
	}
	assert_non_null(log);
	assert_contains(log, "\"type\":\"state\"");
	assert_contains(log, "talking with my owner");
	char *thinking = strstr(log, "thinking");
	assert_non_null(thinking);
	assert_non_null(strstr(thinking, "idle")); /* idle again after the answer */
	free(log);
}

/* Found in review: each of these aborted the daemon (exit 134) or leaked
 * the key before the fixes. */
static void test_stop_during_a_turn(void **state)
{
	struct fx *fx = *state;
	start_fake(fx, "[{\"action\":\"hang\"}]");
	struct proc p;
	start_agent(&p, fx, NULL);
	proc_write_stdin(&p, "hello\n");
	/* wait until the model request is out (and hanging), then stop the
	 * agent under it */
	bool sent = false;
	for (int i = 0; i < 1000 && !sent; i++) {
		char *rec = home_read(fx->home, "fake.record");
		sent = rec && strstr(rec, "chat/completions");
		free(rec);
		if (!sent)
			usleep(10000);
	}
	assert_true(sent);
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
}

static void test_lines_after_exit_are_ignored(void **state)
{
	struct fx *fx = *state;
	start_fake(fx, "[{\"content\":\"should never be asked\"}]");
	struct proc p;
	start_agent(&p, fx, NULL);
	proc_write_stdin(&p, "exit\nhello\n");
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	char *o = proc_stdout(&p);
	assert_null(strstr(o, "should never be asked"));
	free(o);
	proc_cleanup(&p);
}

static void test_refused_key_with_lines_waiting(void **state)
{
	struct fx *fx = *state;
	/* the provider echoes the key in its error, as some do */
	start_fake(fx, "[{\"error\":{\"status\":401,\"message\":\"Incorrect API key provided: "
	               "test-key-0123456789\"}}]");
	struct proc p;
	start_agent(&p, fx, NULL);
	proc_write_stdin(&p, "hi\nhello\nand more\n");
	assert_int_equal(proc_wait(&p, WAIT_MS), 69);
	char *o = proc_stdout(&p);
	char *e = proc_stderr(&p);
	assert_contains(o, "I have to stop");
	assert_null(strstr(o, "test-key-0123456789"));
	assert_null(strstr(e, "test-key-0123456789"));
	assert_contains(e, "[redacted]");
	free(o);
	free(e);
	proc_cleanup(&p);
}

static void test_overlong_line_is_dropped_whole(void **state)
{
	struct fx *fx = *state;
	start_fake(fx, "[{\"content\":\"ok\"}]");
	struct proc p;
	start_agent(&p, fx, NULL);
	char line[4200];
	memset(line, 'a', 4097);
	strcpy(line + 4097, "exit\n");
	proc_write_stdin(&p, line);
	assert_true(proc_wait_output(&p, "owner line too long", WAIT_MS));
	/* the tail "…exit" was not taken for a command */
	assert_int_equal(proc_wait(&p, 300), -1);
	proc_write_stdin(&p, "exit\n");
	assert_int_equal(proc_wait(&p, WAIT_MS), 0);
	proc_cleanup(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_owner_conversation, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_refused_key_exits_69, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_doctor_probe, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_state_in_the_room, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_stop_during_a_turn, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_lines_after_exit_are_ignored, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_refused_key_with_lines_waiting, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_overlong_line_is_dropped_whole, setup,
	                                        teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
