/* `general-agent decisions` and `general-agent why` through their functions:
 * --tail, --json, the text columns, why (found, prefix, ambiguous, not
 * found), usage errors, and --follow in a child process (new lines, a
 * rotation, SIGTERM and a closed pipe both end it cleanly). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "modules/decisions/cli.h"
#include "modules/decisions/log.h"
#include "testutil.h"

#define T0 1795428062345LL /* 2026-11-23T10:01:02.345Z */

struct fx {
	char *dir;
	FILE *out, *err;
	char *out_text, *err_text;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	f->dir = tu_tempdir();
	f->out = tmpfile();
	f->err = tmpfile();
	log_set_level(LOG_LEVEL_OFF);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fclose(f->out);
	fclose(f->err);
	free(f->out_text);
	free(f->err_text);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static char *slurp(FILE *fp)
{
	fflush(fp);
	long n = ftell(fp);
	char *s = calloc(1, (size_t)n + 1);
	rewind(fp);
	assert_int_equal(fread(s, 1, (size_t)n, fp), (size_t)n);
	/* empty the stream for the next call */
	assert_int_equal(ftruncate(fileno(fp), 0), 0);
	rewind(fp);
	return s;
}

static void grab(struct fx *f)
{
	free(f->out_text);
	free(f->err_text);
	f->out_text = slurp(f->out);
	f->err_text = slurp(f->err);
}

static int list(struct fx *f, int argc, char **argv)
{
	int rc = decisions_cli_list(f->dir, argc, argv, f->out, f->err);
	grab(f);
	return rc;
}

static int why(struct fx *f, const char *id, int argc, char **argv)
{
	int rc = decisions_cli_why(f->dir, id, argc, argv, f->out, f->err);
	grab(f);
	return rc;
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void add(struct decision_log *log, int64_t t, const char *mid, enum decision_stage st,
                enum decision_verdict v, const char *rule, const char *reason)
{
	struct decision d;
	decision_set(&d, v, rule, "%s", reason);
	assert_int_equal(decision_log_add(log, t, "space", "space:room", mid, st, &d), 0);
}

/* n decisions "decision <i>" about space:m<i>. */
static void fill(struct fx *f, int n)
{
	struct decision_log *log = decision_log_open(f->dir, NULL);
	assert_non_null(log);
	for (int i = 0; i < n; i++) {
		char mid[32], reason[32];
		snprintf(mid, sizeof mid, "space:m%d", i);
		snprintf(reason, sizeof reason, "decision %d", i);
		add(log, T0 + i * 1000, mid, STAGE_GATE, VERDICT_PASS, "seq", reason);
	}
	decision_log_close(log);
}

static void test_text_line_format(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = decision_log_open(f->dir, NULL);
	add(log, T0, "space:ab12cd34ef", STAGE_GATE, VERDICT_BLOCK, "chain_length",
	    "chain 5 > MAX_ACL 4: blocked, not even a reaction");
	add(log, T0 + 1, "space:x", STAGE_VALIDATOR, VERDICT_APPROVE, "ok",
	    "\x1b[31mred\x7f\xc2\x9b");
	add(log, T0 + 2, "space:y", STAGE_OUTBOUND, VERDICT_DROP, "a_rule_longer_than_the_column",
	    "dup");
	decision_log_close(log);
	assert_int_equal(list(f, 0, NULL), 0);
	assert_string_equal(
	        f->out_text,
	        "2026-11-23T10:01:02Z  space    gate       block    chain_length          "
	        "chain 5 > MAX_ACL 4: blocked, not even a reaction  [space:ab12cd34ef]\n"
	        "2026-11-23T10:01:02Z  space    validator  approve  ok                    "
	        "?[31mred??  [space:x]\n"
	        "2026-11-23T10:01:02Z  space    outbound   drop     "
	        "a_rule_longer_than_the_column  dup  [space:y]\n");
	assert_string_equal(f->err_text, "");
}

static void test_tail(void **state)
{
	struct fx *f = *state;
	assert_int_equal(list(f, 0, NULL), 0); /* no log yet: nothing, not an error */
	assert_string_equal(f->out_text, "");
	assert_non_null(strstr(f->err_text, "No decision recorded yet in "));
	fill(f, 25);
	assert_int_equal(list(f, 0, NULL), 0);
	assert_int_equal(count_lines(f->out_text), DECISIONS_CLI_TAIL_DEFAULT);
	assert_non_null(strstr(f->out_text, "decision 5  [space:m5]\n"));
	assert_null(strstr(f->out_text, "decision 4 "));
	assert_non_null(strstr(f->out_text, "decision 24  [space:m24]\n"));
	assert_true(strstr(f->out_text, "decision 5 ") < strstr(f->out_text, "decision 24"));

	char *a[] = {"--tail", "2"};
	assert_int_equal(list(f, 2, a), 0);
	assert_int_equal(count_lines(f->out_text), 2);
	assert_non_null(strstr(f->out_text, "decision 23 "));
	assert_non_null(strstr(f->out_text, "decision 24 "));

	char *b[] = {"--tail=0"};
	assert_int_equal(list(f, 1, b), 0);
	assert_int_equal(count_lines(f->out_text), 25);

	char *c[] = {"--tail", "100"};
	assert_int_equal(list(f, 2, c), 0);
	assert_int_equal(count_lines(f->out_text), 25);

	char *d[] = {"--tail", "1"};
	assert_int_equal(list(f, 2, d), 0);
	assert_int_equal(count_lines(f->out_text), 1);
	assert_non_null(strstr(f->out_text, "decision 24 "));
}

static void test_json_is_the_stored_lines(void **state)
{
	struct fx *f = *state;
	fill(f, 5);
	char *a[] = {"--json", "--tail", "0"};
	assert_int_equal(list(f, 3, a), 0);
	char *stored = tu_read(f->dir, "decisions.jsonl");
	assert_string_equal(f->out_text, stored);
	free(stored);
	char *b[] = {"--tail", "1", "--json"};
	assert_int_equal(list(f, 3, b), 0);
	assert_int_equal(count_lines(f->out_text), 1);
	assert_non_null(strstr(f->out_text, "\"messageId\":\"space:m4\""));
}

static void test_reads_backups_in_order(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = decision_log_open_sized(f->dir, 800, NULL);
	for (int i = 0; i < 12; i++) {
		char reason[32];
		snprintf(reason, sizeof reason, "decision %d", i);
		add(log, T0 + i, "space:m", STAGE_GATE, VERDICT_PASS, "seq", reason);
	}
	decision_log_close(log);
	assert_true(tu_count_prefix(f->dir, "decisions.jsonl.") >= 2);
	char *a[] = {"--tail", "0"};
	assert_int_equal(list(f, 2, a), 0);
	int n = count_lines(f->out_text);
	assert_true(n >= 8 && n <= 12);
	const char *p = f->out_text;
	for (int i = 12 - n; i < 12; i++) {
		char want[32];
		snprintf(want, sizeof want, "decision %d ", i);
		const char *q = strstr(p, want);
		assert_non_null(q);
		p = q;
	}
}

static void test_usage_errors(void **state)
{
	struct fx *f = *state;
	static const struct {
		int argc;
		char *argv[3];
		const char *err;
	} cases[] = {
	        {1, {"--bogus"}, "unknown option '--bogus'"},
	        {1, {"--tail"}, "--tail needs a number"},
	        {2, {"--tail", "abc"}, "not 'abc'"},
	        {2, {"--tail", "-1"}, "not '-1'"},
	        {2, {"--tail", "5x"}, "not '5x'"},
	        {2, {"--tail", ""}, "--tail needs a number"},
	        {1, {"--tail=99999999999"}, "--tail needs a number"},
	        {2, {"--json", "tail"}, "unknown option 'tail'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(list(f, cases[i].argc, (char **)cases[i].argv), 64);
		if (!strstr(f->err_text, cases[i].err))
			fail_msg("case %zu: err '%s' lacks '%s'", i, f->err_text, cases[i].err);
		assert_non_null(strstr(f->err_text, "usage: general-agent decisions"));
		assert_string_equal(f->out_text, "");
	}
	char *h[] = {"--help"};
	assert_int_equal(list(f, 1, h), 0);
	assert_non_null(strstr(f->out_text, "usage:"));

	char *w[] = {"--yaml"};
	assert_int_equal(why(f, "space:m1", 1, w), 64);
	assert_non_null(strstr(f->err_text, "unknown option '--yaml'"));
	assert_int_equal(why(f, NULL, 0, NULL), 64);
	assert_int_equal(why(f, "", 0, NULL), 64);
	assert_int_equal(why(f, "--json", 0, NULL), 64);
	assert_non_null(strstr(f->err_text, "which message?"));
}

/* Two messages with similar ids, their decisions interleaved. */
static void story(struct fx *f)
{
	struct decision_log *log = decision_log_open(f->dir, NULL);
	add(log, T0, "space:aaaa1111", STAGE_EVENT, VERDICT_INFO, "received", "from Bob (peer)");
	add(log, T0 + 5, "space:aaaa2222", STAGE_EVENT, VERDICT_INFO, "received",
	    "from Ann (human)");
	add(log, T0 + 10, "space:aaaa1111", STAGE_GATE, VERDICT_BLOCK, "chain_length",
	    "chain 5 > MAX_ACL 4: blocked, not even a reaction");
	add(log, T0 + 20, "space:aaaa2222", STAGE_GATE, VERDICT_PASS, "trigger",
	    "addressed by a person");
	decision_log_close(log);
}

static void test_why_found(void **state)
{
	struct fx *f = *state;
	story(f);
	assert_int_equal(why(f, "space:aaaa1111", 0, NULL), 0);
	assert_string_equal(
	        f->out_text,
	        "Message space:aaaa1111 (space, conversation space:room), first decision "
	        "2026-11-23:\n"
	        "  10:01:02.345  event      info     received              from Bob (peer)\n"
	        "  10:01:02.355  gate       block    chain_length          chain 5 > "
	        "MAX_ACL 4: blocked, not even a reaction\n");
	assert_string_equal(f->err_text, "");

	char *j[] = {"--json"};
	assert_int_equal(why(f, "space:aaaa2222", 1, j), 0);
	assert_int_equal(count_lines(f->out_text), 2);
	assert_non_null(
	        strstr(f->out_text, "\"messageId\":\"space:aaaa2222\",\"stage\":\"event\""));
	char *stored = tu_read(f->dir, "decisions.jsonl");
	char *first_line = strstr(stored, "{\"time\":\"2026-11-23T10:01:02.350Z\"");
	assert_non_null(first_line);
	*strchr(first_line, '\n') = '\0';
	assert_memory_equal(f->out_text, first_line, strlen(first_line));
	free(stored);
}

static void test_why_prefix(void **state)
{
	struct fx *f = *state;
	story(f);
	assert_int_equal(why(f, "space:aaaa2", 0, NULL), 0);
	assert_non_null(strstr(f->err_text, "'space:aaaa2' matches message space:aaaa2222"));
	assert_non_null(strstr(f->out_text, "Message space:aaaa2222 "));
	assert_int_equal(count_lines(f->out_text), 3);

	/* ambiguous: both listed, nothing printed on out */
	assert_int_equal(why(f, "space:aaaa", 0, NULL), 1);
	assert_string_equal(f->out_text, "");
	assert_non_null(strstr(f->err_text, "'space:aaaa' matches 2 messages"));
	assert_non_null(strstr(f->err_text, "  space:aaaa1111  (space, space:room)\n"));
	assert_non_null(strstr(f->err_text, "  space:aaaa2222  (space, space:room)\n"));

	/* without the platform's prefix */
	assert_int_equal(why(f, "aaaa2", 0, NULL), 0);
	assert_non_null(strstr(f->err_text, "'aaaa2' matches message space:aaaa2222"));
	assert_non_null(strstr(f->out_text, "Message space:aaaa2222 "));
	assert_int_equal(why(f, "aaaa", 0, NULL), 1);
	assert_non_null(strstr(f->err_text, "'aaaa' matches 2 messages"));
	/* a prefix that names a platform is compared whole */
	assert_int_equal(why(f, "owner:aaaa2", 0, NULL), 1);
}

static void test_why_exact_beats_prefix(void **state)
{
	struct fx *f = *state;
	struct decision_log *log = decision_log_open(f->dir, NULL);
	add(log, T0, "owner:1", STAGE_EVENT, VERDICT_INFO, "received", "one");
	add(log, T0, "owner:12", STAGE_EVENT, VERDICT_INFO, "received", "twelve");
	decision_log_close(log);
	assert_int_equal(why(f, "owner:1", 0, NULL), 0);
	assert_non_null(strstr(f->out_text, " one\n"));
	assert_null(strstr(f->out_text, "twelve"));
	assert_string_equal(f->err_text, "");
}

static void test_why_many_candidates(void **state)
{
	struct fx *f = *state;
	fill(f, DECISIONS_CLI_MAX_CANDIDATES + 5);
	assert_int_equal(why(f, "space:m", 0, NULL), 1);
	char want[64];
	snprintf(want, sizeof want, "matches more than %d messages", DECISIONS_CLI_MAX_CANDIDATES);
	assert_non_null(strstr(f->err_text, want));
	assert_int_equal(count_lines(f->err_text), 1 + DECISIONS_CLI_MAX_CANDIDATES + 1);
}

static void test_why_not_found(void **state)
{
	struct fx *f = *state;
	assert_int_equal(why(f, "space:nothing", 0, NULL), 1); /* no log at all */
	assert_non_null(
	        strstr(f->err_text, "No decision about message 'space:nothing' was recorded"));
	story(f);
	assert_int_equal(why(f, "space:b", 0, NULL), 1);
	assert_string_equal(f->out_text, "");
	assert_non_null(strstr(f->err_text, "No decision about message 'space:b'"));
}

/* ---- --follow in a child ---- */

struct child {
	pid_t pid;
	int rfd;
	char buf[65536];
	size_t len;
};

static void start_follow(struct child *c, const char *dir, bool json)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	c->len = 0;
	c->buf[0] = '\0';
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		close(p[0]);
		FILE *out = fdopen(p[1], "w");
		FILE *err = fopen("/dev/null", "w");
		char *argv[] = {"--follow", "--tail", "0", json ? "--json" : "--follow"};
		int rc = decisions_cli_list(dir, 4, argv, out, err);
		_exit(rc);
	}
	close(p[1]);
	c->rfd = p[0];
}

/* Reads until `want` has been seen (true) or 10 s passed (false). */
static bool wait_for(struct child *c, const char *want)
{
	uint64_t deadline = time_mono_ms() + 10000;
	while (!strstr(c->buf, want)) {
		uint64_t now = time_mono_ms();
		if (now >= deadline)
			return false;
		struct pollfd pf = {.fd = c->rfd, .events = POLLIN};
		int r = poll(&pf, 1, (int)(deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		ssize_t n = read(c->rfd, c->buf + c->len, sizeof c->buf - 1 - c->len);
		if (n <= 0)
			return false;
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
	}
	return true;
}

/* Waits for the child to exit (10 s at most); its exit status, or -1. */
static int reap(struct child *c)
{
	uint64_t deadline = time_mono_ms() + 10000;
	for (;;) {
		int st;
		pid_t r = waitpid(c->pid, &st, WNOHANG);
		if (r == c->pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (time_mono_ms() >= deadline) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &st, 0);
			return -1;
		}
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

static void test_follow_new_lines_rotation_and_sigterm(void **state)
{
	struct fx *f = *state;
	/* One decision first: seeing it means the child is inside its loop with
	 * its signal handlers in place (the first flush comes after them). */
	struct decision_log *log = decision_log_open_sized(f->dir, 1000, NULL);
	add(log, T0, "space:first", STAGE_GATE, VERDICT_PASS, "seq", "decision first");
	struct child c;
	start_follow(&c, f->dir, false);
	assert_true(wait_for(&c, "decision first  [space:first]\n"));

	add(log, T0 + 1, "space:second", STAGE_GATE, VERDICT_PASS, "seq", "decision second");
	assert_true(wait_for(&c, "decision second  [space:second]\n"));

	/* enough to rotate the file (max 1000 bytes) several times */
	for (int i = 0; i < 12; i++) {
		char reason[32], mid[32];
		snprintf(reason, sizeof reason, "decision r%d", i);
		snprintf(mid, sizeof mid, "space:r%d", i);
		add(log, T0 + 2 + i, mid, STAGE_GATE, VERDICT_PASS, "seq", reason);
		if (i % 4 == 3) /* let the follower see some rotations one at a time */
			assert_true(wait_for(&c, reason));
	}
	assert_true(tu_count_prefix(f->dir, "decisions.jsonl.") >= 1);
	assert_true(wait_for(&c, "decision r11  [space:r11]\n"));
	/* each printed exactly once, in order */
	const char *p = c.buf;
	for (int i = 0; i < 12; i++) {
		char want[32];
		snprintf(want, sizeof want, "decision r%d ", i);
		const char *q = strstr(p, want);
		assert_non_null(q);
		assert_null(strstr(q + 1, want));
		p = q;
	}
	assert_int_equal(count_lines(c.buf), 14);

	kill(c.pid, SIGTERM);
	assert_int_equal(reap(&c), 0);
	close(c.rfd);
	decision_log_close(log);
}

static void test_follow_ends_when_out_is_closed(void **state)
{
	struct fx *f = *state;
	fill(f, 1);
	struct child c;
	start_follow(&c, f->dir, true);
	assert_true(wait_for(&c, "\"messageId\":\"space:m0\""));
	close(c.rfd); /* the reader goes away (like `| head -1`) */
	assert_int_equal(reap(&c), 0);
}

static void test_follow_waits_for_the_file(void **state)
{
	struct fx *f = *state;
	struct child c;
	start_follow(&c, f->dir, false);
	/* no file yet: the child polls until it appears */
	fill(f, 1);
	assert_true(wait_for(&c, "decision 0  [space:m0]\n"));
	kill(c.pid, SIGINT);
	assert_int_equal(reap(&c), 0);
	close(c.rfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_text_line_format, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_tail, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_json_is_the_stored_lines, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_reads_backups_in_order, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_why_found, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_why_prefix, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_why_exact_beats_prefix, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_why_many_candidates, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_why_not_found, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_follow_new_lines_rotation_and_sigterm, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_follow_ends_when_out_is_closed, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_follow_waits_for_the_file, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
