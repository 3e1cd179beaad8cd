/*
 * `general-agent validate` through the validate-cli executable: output,
 * JSON shape, exit codes (0 verdict printed, 64 usage, 65 bad history).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_MAX (64 * 1024)

struct run {
	int status;
	char out[OUT_MAX];
	char err[OUT_MAX];
};

static void drain(int fd, char *buf)
{
	size_t n = 0;
	ssize_t r;
	while (n + 1 < OUT_MAX && (r = read(fd, buf + n, OUT_MAX - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
}

/* Runs validate-cli with argv (NULL-terminated, without argv[0]). */
static void run_cli(struct run *r, const char *const *args)
{
	const char *argv[32] = {VALIDATE_CLI_PATH};
	size_t n = 1;
	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int out[2], err[2];
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(err), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		execv(VALIDATE_CLI_PATH, (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	drain(out[0], r->out); /* outputs are small: no deadlock on stderr */
	drain(err[0], r->err);
	close(out[0]);
	close(err[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char tmpdir[] = "/tmp/validate-cli-XXXXXX";

static const char *write_file(const char *name, const char *content)
{
	static char path[4][256];
	static int k;
	char *p = path[k++ % 4];
	snprintf(p, 256, "%s/%s", tmpdir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
	return p;
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct run r;

static void test_help(void **state)
{
	run_cli(&r, (const char *const[]){"--help", NULL});
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "usage: general-agent validate"));
	assert_non_null(strstr(r.out, "exit status"));
}

static void test_accept_plain(void **state)
{
	run_cli(&r, (const char *const[]){"Caching", "helps", "here.", NULL});
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "verdict: accept"));
	assert_non_null(strstr(r.out, "rule:    ok"));
	assert_non_null(strstr(r.out, "length=19"));
}

static void test_reject_action_rule(void **state)
{
	run_cli(&r, (const char *const[]){"--mode", "action", "--repo", "acme/www",
	                                  "Which repo should I use?", NULL});
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "verdict: reject"));
	assert_non_null(strstr(r.out, "repo_amnesia"));
}

static void test_history_text_and_json(void **state)
{
	const char *plain = write_file(
	        "plain.txt", "Caching the portfolio responses for five minutes would absorb "
	                     "the burst traffic at market open.\n\n"
	                     "The pricing feed refreshes every sixty seconds.\n");
	run_cli(&r,
	        (const char *const[]){"--history", plain, "--json",
	                              "Caching portfolio responses for five minutes absorbs the "
	                              "burst at market open.",
	                              NULL});
	assert_int_equal(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "reject");
	assert_string_equal(cJSON_GetObjectItem(j, "rule")->valuestring, "semantic_echo");
	assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "reason")));
	cJSON *s = cJSON_GetObjectItem(j, "scores");
	assert_true(cJSON_IsObject(s));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s, "echo")));
	assert_true(cJSON_GetObjectItem(s, "novelty")->valuedouble < 0.25);
	assert_int_equal((int)cJSON_GetObjectItem(s, "pool")->valuedouble, 2);
	assert_non_null(strstr(cJSON_GetObjectItem(s, "matched")->valuestring, "Caching the"));
	cJSON_Delete(j);

	const char *jsonl = write_file(
	        "h.jsonl", "{\"text\": \"The pricing feed refreshes every sixty seconds.\", "
	                   "\"author\": \"rebecca\"}\n"
	                   "plain lines mix with JSON lines\n");
	run_cli(&r, (const char *const[]){
	                    "--history", jsonl, "--json",
	                    "Rebecca, the timeouts come from the 09:30 rebalance job.", NULL});
	assert_int_equal(r.status, 0);
	j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "accept");
	s = cJSON_GetObjectItem(j, "scores");
	assert_int_equal((int)cJSON_GetObjectItem(s, "pool")->valuedouble, 2);
	cJSON_Delete(j);
}

static void test_scores_even_when_earlier_check_decides(void **state)
{
	const char *plain = write_file("p2.txt", "We should cache the portfolio responses.\n");
	run_cli(&r, (const char *const[]){"--history", plain, "--",
	                                  "- We should cache the portfolio responses.", NULL});
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "rule:    list"));
	assert_non_null(strstr(r.out, "echo:    yes"));
}

static void test_usage_errors(void **state)
{
	run_cli(&r, (const char *const[]){NULL});
	assert_int_equal(r.status, 64);
	assert_non_null(strstr(r.err, "missing TEXT"));
	run_cli(&r, (const char *const[]){"--bogus", "text", NULL});
	assert_int_equal(r.status, 64);
	assert_non_null(strstr(r.err, "unknown option '--bogus'"));
	run_cli(&r, (const char *const[]){"- a list item", NULL});
	assert_int_equal(r.status, 64);
	assert_non_null(strstr(r.err, "after --"));
	run_cli(&r, (const char *const[]){"--mode", "chat", "text", NULL});
	assert_int_equal(r.status, 64);
	assert_non_null(strstr(r.err, "--mode"));
	run_cli(&r, (const char *const[]){"--agents", "-3", "text", NULL});
	assert_int_equal(r.status, 64);
	run_cli(&r, (const char *const[]){"text", "--history", NULL});
	assert_int_equal(r.status, 0); /* "+": options stop at the first TEXT word */
	run_cli(&r, (const char *const[]){"--history", NULL});
	assert_int_equal(r.status, 64);
	assert_non_null(strstr(r.err, "needs a value"));
}

/* Roles judge as the room does: the host's lines are context, never
 * compared; an agent answering in the host's words is no echo, the same
 * words after a peer said them are. */
static void test_history_roles(void **state)
{
	const char *cand =
	        "Cache the dashboard summary per team for five minutes, the numbers only "
	        "change after the nightly job.";
	const char *hosted = write_file(
	        "host.jsonl",
	        "{\"author\": \"sam\", \"role\": \"host\", \"text\": \"Should we cache the "
	        "dashboard summary per team for five minutes? The numbers only change after the "
	        "nightly job.\"}\n"
	        "{\"author\": \"bea\", \"role\": \"peer\", \"text\": \"The export job holds a "
	        "table lock for forty seconds at nine.\"}\n");
	run_cli(&r, (const char *const[]){"--history", hosted, "--json", cand, NULL});
	assert_int_equal(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "accept");
	cJSON *s = cJSON_GetObjectItem(j, "scores");
	assert_int_equal((int)cJSON_GetObjectItem(s, "pool")->valuedouble, 1);
	cJSON_Delete(j);

	/* The same lines without roles all count as agents': an echo. */
	const char *unroled = write_file(
	        "noroles.jsonl",
	        "{\"author\": \"sam\", \"text\": \"Should we cache the dashboard summary per team "
	        "for five minutes? The numbers only change after the nightly job.\"}\n");
	run_cli(&r, (const char *const[]){"--history", unroled, "--json", cand, NULL});
	j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "reject");
	cJSON_Delete(j);

	/* Own lines count for the role budget as in the room: six own
	 * messages since the host spoke exhaust an actor's discussion budget
	 * with a peer present. */
	char buf[4096];
	size_t n = (size_t)snprintf(buf, sizeof buf,
	                            "{\"author\": \"sam\", \"role\": \"host\", \"text\": "
	                            "\"Plans for the release?\"}\n"
	                            "{\"author\": \"bea\", \"role\": \"peer\", \"text\": "
	                            "\"Thursday works for the billing change.\"}\n");
	static const char *const own[] = {"migrations first",         "flags off at launch",
	                                  "a canary at five percent", "rollback by script",
	                                  "alerts on refunds",        "the invoice test fixed"};
	for (size_t i = 0; i < 6; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n,
		                      "{\"author\": \"lin\", \"role\": \"self\", \"text\": "
		                      "\"My point %zu: %s.\"}\n",
		                      i, own[i]);
	const char *busy = write_file("self.jsonl", buf);
	run_cli(&r, (const char *const[]){"--history", busy, "--json",
	                                  "Support should get a macro for the new invoice layout.",
	                                  NULL});
	j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "rule")->valuestring, "role_budget");
	cJSON_Delete(j);
	/* … unless the flags say otherwise. */
	run_cli(&r, (const char *const[]){"--history", busy, "--json", "--own", "0",
	                                  "Support should get a macro for the new invoice layout.",
	                                  NULL});
	j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "accept");
	cJSON_Delete(j);

	/* A member who has not spoken: known through --members. */
	const char *mig = write_file(
	        "mig.jsonl", "{\"author\": \"sam\", \"role\": \"host\", \"text\": \"The users "
	                     "table migration needs an owner.\"}\n"
	                     "{\"author\": \"ada\", \"role\": \"peer\", \"text\": \"I'll take the "
	                     "users table migration and run it tonight in batches.\"}\n");
	const char *bob = "Bob takes the users table migration tonight, in batches.";
	run_cli(&r, (const char *const[]){"--history", mig, "--json", bob, NULL});
	j = cJSON_Parse(r.out);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "reject");
	cJSON_Delete(j);
	run_cli(&r, (const char *const[]){"--history", mig, "--json", "--members", "ada,bob", bob,
	                                  NULL});
	j = cJSON_Parse(r.out);
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "accept");
	assert_true(
	        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "scores"), "new_owner")));
	cJSON_Delete(j);

	const char *badrole =
	        write_file("badrole.jsonl", "{\"text\": \"hi there all\", \"role\": \"bot\"}\n");
	run_cli(&r, (const char *const[]){"--history", badrole, "text", NULL});
	assert_int_equal(r.status, 65);
	assert_non_null(strstr(r.err, "role must be host, peer or self"));
}

static void test_bad_history(void **state)
{
	char missing[300];
	snprintf(missing, sizeof missing, "%s/nope.txt", tmpdir);
	run_cli(&r, (const char *const[]){"--history", missing, "text", NULL});
	assert_int_equal(r.status, 65);
	assert_non_null(strstr(r.err, "cannot read history file"));
	const char *badjson = write_file("bad.jsonl", "{\"text\": \"ok\"}\n{\"text\": 42}\n");
	run_cli(&r, (const char *const[]){"--history", badjson, "text", NULL});
	assert_int_equal(r.status, 65);
	assert_non_null(strstr(r.err, ":2:"));
	const char *trunc = write_file("trunc.jsonl", "{\"text\": \"unterminated\n");
	run_cli(&r, (const char *const[]){"--history", trunc, "text", NULL});
	assert_int_equal(r.status, 65);
	const char *badutf = write_file("bad.txt", "fine line\nbroken \xff line\n");
	run_cli(&r, (const char *const[]){"--history", badutf, "text", NULL});
	assert_int_equal(r.status, 65);
	assert_non_null(strstr(r.err, "UTF-8"));
	run_cli(&r, (const char *const[]){"--history", tmpdir, "text", NULL}); /* a directory */
	assert_int_equal(r.status, 65);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_help),
	        cmocka_unit_test(test_accept_plain),
	        cmocka_unit_test(test_reject_action_rule),
	        cmocka_unit_test(test_history_text_and_json),
	        cmocka_unit_test(test_scores_even_when_earlier_check_decides),
	        cmocka_unit_test(test_usage_errors),
	        cmocka_unit_test(test_history_roles),
	        cmocka_unit_test(test_bad_history),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
