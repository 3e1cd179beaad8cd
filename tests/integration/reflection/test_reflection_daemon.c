/*
 * The reflection service in the real daemon (cmd/svc_reflection.c): with a
 * model configured it starts; what the owner types at the terminal reaches
 * the decision log, and from there memory/experiences.jsonl as an
 * owner_guidance experience with the owner's words; the service's status
 * (experiences pending, no reflection yet, no tokens spent) is in the
 * status file; the daemon stops cleanly (exit 0) with the service running.
 * Without a model the service is off.
 *
 * The reflection itself is not reached here: its first check comes 30
 * minutes after start (test_reflection_e2e.c runs the cycle in process).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "tests/fakes/llm/llmfake.h"
#include "testutil.h"

#define W 15000

static void dump(struct proc *p)
{
	char *e = proc_stderr(p), *o = proc_stdout(p);
	fprintf(stderr, "---- agent stderr ----\n%s\n---- agent stdout ----\n%s\n", e ? e : "",
	        o ? o : "");
	free(e);
	free(o);
}

static void must_output(struct proc *p, const char *needle)
{
	if (!proc_wait_output(p, needle, W)) {
		dump(p);
		fail_msg("the agent never printed '%s'", needle);
	}
}

static void test_owner_line_becomes_experience(void **state)
{
	(void)state;
	char err[256];
	struct llmfake *fake = llmfake_new(err, sizeof err);
	assert_non_null(fake);
	llmfake_script(fake, "[{\"content\":\"Noted: short answers from now on.\"}]");
	char *home = home_new();
	char llm[200];
	snprintf(llm, sizeof llm, "LLM_BASE_URL=%s", llmfake_base_url(fake));
	const char *env[] = {"AGENT_NAME=Ada", llm, "LLM_MODEL=fake-model",
	                     "LLM_API_KEY=reflection-test-key-0123456789", NULL};
	struct proc p;
	assert_int_equal(proc_start(&p, home, (const char *const[]){NULL}, env), 0);
	must_output(&p, "ready and listening");
	must_output(&p, "service started service=reflection");
	proc_write_stdin(&p, "Please keep your answers short.\n");
	must_output(&p, "Noted: short answers from now on.");
	proc_signal(&p, SIGTERM);
	int rc = proc_wait(&p, W);
	if (rc != 0)
		dump(&p);
	assert_int_equal(rc, 0);

	char *exps = home_read(home, "memory/experiences.jsonl");
	assert_non_null(exps);
	assert_non_null(strstr(exps, "\"type\":\"owner_guidance\""));
	assert_non_null(
	        strstr(exps, "Owner said (terminal): \\\"Please keep your answers short.\\\""));
	/* one owner line, one experience: the rest of the turn is not another */
	assert_null(strstr(strstr(exps, "owner_guidance") + 1, "owner_guidance"));
	free(exps);
	char *status = home_read(home, "memory/status.json");
	assert_non_null(status);
	cJSON *st = cJSON_Parse(status);
	cJSON *refl = cJSON_GetObjectItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(st, "data"), "services"), "reflection");
	if (!refl)
		fail_msg("no services.reflection in the status file:\n%s", status);
	assert_int_equal(cJSON_GetObjectItem(refl, "experiencesPending")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(refl, "tokensSpent")->valueint, 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(refl, "lastReflection")));
	cJSON_Delete(st);
	free(status);
	/* the only model call was the owner's turn */
	assert_int_equal(llmfake_calls(fake), 1);
	proc_cleanup(&p);
	home_remove(home);
	llmfake_free(fake);
}

static void test_off_without_model(void **state)
{
	(void)state;
	char *home = home_new();
	const char *env[] = {"AGENT_NAME=Ada", "LLM_BASE_URL", "LLM_MODEL", "AI_GATEWAY_API_KEY",
	                     NULL};
	struct proc p;
	assert_int_equal(proc_start(&p, home, (const char *const[]){NULL}, env), 0);
	/* services start before the daemon says it is ready */
	must_output(&p, "ready and listening");
	proc_signal(&p, SIGTERM);
	assert_int_equal(proc_wait(&p, W), 0);
	char *e = proc_stderr(&p);
	assert_non_null(e);
	if (strstr(e, "service started service=reflection"))
		fail_msg("the reflection service started without a model:\n%s", e);
	free(e);
	char *exps = home_read(home, "memory/experiences.jsonl");
	assert_null(exps);
	proc_cleanup(&p);
	home_remove(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_owner_line_becomes_experience),
	        cmocka_unit_test(test_off_without_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
