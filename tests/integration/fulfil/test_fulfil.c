/*
 * Commitment fulfilment end to end, black-box: the
 * real general-agent binary against ghfake-server as a separate process
 * (its state outlives every kill of the agent). Commitments are written into
 * memory/commitments.jsonl the way the ledger writes them.
 *
 *   - a create_issue becomes exactly one issue carrying the hidden key; a
 *     comment_issue one comment; the owner is told "Done — …: <url>"; a
 *     commitment on a repository GitHub answers 404 fails with GitHub's
 *     message, three times, then is abandoned — and nobody is told "Done";
 *   - in a room, each attempt's claim is released with its outcome (§12.4):
 *     a refusal as action_result success:false with GitHub's error (and no
 *     chat about it), a success as success:true with the issue's link;
 *   - the claim is renewed while an attempt runs longer than the room's
 *     claim TTL: another member claiming the same work meanwhile is told
 *     "Claim conflict" throughout;
 *   - a promise made in the room (the participation engine, the LLM fake
 *     as a process) that GitHub refuses three times is abandoned, and the
 *     host's request it was made for is open again: the decision log says
 *     request_reopened under the commitment and the owner acts on it again
 *     (a second promise; space-validation.md §6.3 → false);
 *   - exactly once across kill -9: 50 create_issue commitments, the daemon
 *     killed with SIGKILL 20 times at random points — before a request,
 *     during one (the fake holds its answer after it made the issue), right
 *     after the answer (before the journal's done) — and restarted; at the
 *     end every commitment is completed and the fake holds exactly 50 issues,
 *     one per key: 0 duplicates, 0 lost.
 *
 * The rounds are random but reproducible: FULFIL_SEED=<n> replays one (the
 * seed is printed).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "common/json.h"
#include "modules/reflection/voice.h"
#include "proc.h"
#include "support_fake.h"
#include "support_wait.h"
#include "tests/integration/participation/owned_by.h"
#include "tests/integration/space-client/harness.h"

#define WAIT_MS   10000
#define TOKEN     "good-token-0123456789"
#define N_COMMITS 50
#define N_KILLS   20

/* --- the fake ----------------------------------------------------------------------------- */

/* ghfake-server (tests/support/support_fake): its state outlives every
 * kill of the agent. The record is <home>/ghfake-server.requests. */
struct fake {
	struct support_fake sf;
	char url_env[128];
};

static void fake_start(struct fake *fk, const char *home)
{
	char err[4096];
	const char *argv[] = {"--token", TOKEN ":ada-bot", "--repo", "acme/widgets", NULL};
	if (support_fake_start(&fk->sf, "tests/fakes/github/ghfake-server", home, argv, err,
	                       sizeof err) != 0)
		fail_msg("%s", err);
	snprintf(fk->url_env, sizeof fk->url_env, "GITHUB_API_URL=%s", fk->sf.url);
}

static void fake_stop(struct fake *fk)
{
	support_fake_stop(&fk->sf);
}

/* One HTTP/1.1 request to the fake (Connection: close); the body of the
 * answer (caller frees), or NULL. */
static char *fake_http(const struct fake *fk, const char *method, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)fk->sf.port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return NULL;
	}
	char req[512];
	int n = snprintf(req, sizeof req,
	                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: "
	                 "close\r\n\r\n",
	                 method, path);
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return NULL;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 4096 > cap)
			buf = realloc(buf, cap *= 2);
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	char *body = strstr(buf, "\r\n\r\n");
	char *out = body ? strdup(body + 4) : NULL;
	free(buf);
	return out;
}

static void fake_control(const struct fake *fk, const char *path)
{
	char *b = fake_http(fk, "POST", path);
	if (!b)
		fail_msg("ghfake control %s failed", path);
	free(b);
}

/* The issues of acme/widgets (a cJSON array the caller frees), or NULL. */
static cJSON *fake_issues(const struct fake *fk)
{
	char *b = fake_http(fk, "GET", "/_ghfake/state");
	cJSON *st = b ? cJSON_Parse(b) : NULL;
	free(b);
	if (!st)
		return NULL;
	cJSON *out = NULL;
	const cJSON *r;
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(st, "repos"))
	{
		const char *full = cJSON_GetStringValue(cJSON_GetObjectItem(r, "full_name"));
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(r, "name"));
		if ((full && strcmp(full, "acme/widgets") == 0) ||
		    (name && strcmp(name, "widgets") == 0))
			out = cJSON_Duplicate(cJSON_GetObjectItem(r, "issues"), 1);
	}
	cJSON_Delete(st);
	return out;
}

static int fake_issue_count(const struct fake *fk)
{
	cJSON *is = fake_issues(fk);
	int n = is ? cJSON_GetArraySize(is) : -1;
	cJSON_Delete(is);
	return n;
}

/* Bodies (issues and their comments) that carry key's marker. */
static int count_key(const cJSON *issues, const char *key)
{
	char marker[256];
	snprintf(marker, sizeof marker, "key=%s -->", key);
	int n = 0;
	const cJSON *is;
	cJSON_ArrayForEach(is, issues)
	{
		const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(is, "body"));
		if (body && strstr(body, marker))
			n++;
		const cJSON *c;
		cJSON_ArrayForEach(c, cJSON_GetObjectItem(is, "comment_list"))
		{
			const char *cb = cJSON_GetStringValue(cJSON_GetObjectItem(c, "body"));
			if (cb && strstr(cb, marker))
				n++;
		}
	}
	return n;
}

/* --- the ledger ---------------------------------------------------------------------------- */

static void iso_now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

/* A pending commitment line as ledger_add writes it; id out. */
static void commit_line(char *buf, size_t cap, char id[64], int n, const char *action,
                        const char *params)
{
	char iso[32];
	iso_now(iso);
	long long ms = (long long)time(NULL) * 1000 + n;
	snprintf(id, 64, "commitment-%lld-%016x", ms, 0xf00d0000u + (unsigned)n);
	snprintf(buf, cap,
	         "{\"id\":\"%s\",\"createdAt\":\"%s\",\"action\":\"%s\",\"source\":\"owner\","
	         "\"status\":\"pending\",\"params\":%s}\n",
	         id, iso, action, params);
}

struct status {
	char status[16];
	char error[512];
};

/* The current status of id in the ledger file (the last status line
 * wins, as the ledger replays it). */
static bool ledger_status(const char *home, const char *id, struct status *st)
{
	memset(st, 0, sizeof *st);
	char *log = home_read(home, "memory/commitments.jsonl");
	if (!log)
		return false;
	bool found = false;
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		if (!j)
			continue;
		const char *lid = cJSON_GetStringValue(cJSON_GetObjectItem(j, "id"));
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(j, "status"));
		if (lid && s && strcmp(lid, id) == 0) {
			found = true;
			snprintf(st->status, sizeof st->status, "%s", s);
			const char *e = cJSON_GetStringValue(cJSON_GetObjectItem(j, "error"));
			if (e)
				snprintf(st->error, sizeof st->error, "%s", e);
		}
		cJSON_Delete(j);
	}
	free(log);
	return found;
}

static int count_status(const char *home, char ids[][64], int n, const char *status)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		struct status st;
		if (ledger_status(home, ids[i], &st) && strcmp(st.status, status) == 0)
			k++;
	}
	return k;
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

/* --- the agent ----------------------------------------------------------------------------- */

static void dump(struct proc *p)
{
	char *e = proc_stderr(p), *o = proc_stdout(p);
	fprintf(stderr, "---- agent stderr ----\n%s\n---- agent stdout ----\n%s\n", e ? e : "",
	        o ? o : "");
	free(e);
	free(o);
}

static void agent_start(struct proc *p, const char *home, const struct fake *fk)
{
	const char *env[] = {"AGENT_NAME=Ada", fk->url_env, "AGENT_GITHUB_USERNAME=ada-bot",
	                     "AGENT_GITHUB_TOKEN=" TOKEN, "GA_FULFIL_INTERVAL_MS=300",
	                     /* the fake needs no 5 s between writes */
	                     "GA_GITHUB_WRITE_SPACING_MS=100", "GA_GITHUB_SPACING_MS=20", NULL};
	if (proc_start(p, home, (const char *const[]){NULL}, env) != 0)
		fail_msg("cannot start general-agent in %s", home);
}

static void agent_stop(struct proc *p)
{
	/* A SIGTERM before the daemon installed its handlers ends it with the
	 * default action (143): stop only an agent that said it is ready (CI:
	 * the last run of the SIGKILL test found every commitment done at once
	 * and stopped the agent in its first milliseconds). */
	if (!proc_wait_output(p, "ready and listening", WAIT_MS)) {
		dump(p);
		fail_msg("the agent never said it was ready");
	}
	proc_signal(p, SIGTERM);
	int rc = proc_wait(p, WAIT_MS);
	if (rc != 0) {
		dump(p);
		fail_msg("the agent exited %d after SIGTERM", rc);
	}
	proc_cleanup(p);
}

static void setup_home(char **home, struct fake *fk)
{
	*home = home_new();
	char mem[1024];
	snprintf(mem, sizeof mem, "%s/memory", *home);
	mkdir(mem, 0700);
	fake_start(fk, *home);
}

static void setup_room_home(struct th_room *room, char **home, struct fake *fk,
                            const char *const *room_env)
{
	th_room_start(room, 0, room_env, false);
	setup_home(home, fk);
}

/* --- tests ----------------------------------------------------------------------------------- */

static void test_issue_comment_and_abandoned(void **state)
{
	(void)state;
	char *home;
	struct fake fk;
	setup_home(&home, &fk);
	char ids[3][64], line[1024], all[4096] = "";
	commit_line(line, sizeof line, ids[0], 1, "create_issue",
	            "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Flaky test\",\"body\":"
	            "\"The CI fails one run in ten.\"}");
	strcat(all, line);
	commit_line(line, sizeof line, ids[1], 2, "comment_issue",
	            "{\"owner\":\"acme\",\"repo\":\"widgets\",\"issue_number\":1,\"body\":\"Found "
	            "it: a race in the setup.\"}");
	strcat(all, line);
	commit_line(line, sizeof line, ids[2], 3, "create_issue",
	            "{\"owner\":\"acme\",\"repo\":\"missing\",\"title\":\"Nowhere\"}");
	strcat(all, line);
	home_write(home, "memory/commitments.jsonl", all);

	struct proc p;
	agent_start(&p, home, &fk);
	int64_t end = support_now_ms() + 60000;
	struct status s0, s1, s2;
	for (;;) {
		ledger_status(home, ids[0], &s0);
		ledger_status(home, ids[1], &s1);
		ledger_status(home, ids[2], &s2);
		if (strcmp(s0.status, "completed") == 0 && strcmp(s1.status, "completed") == 0 &&
		    strcmp(s2.status, "abandoned") == 0)
			break;
		if (support_now_ms() > end || !proc_alive(&p)) {
			dump(&p);
			fail_msg("not settled: %s / %s / %s (%s)", s0.status, s1.status, s2.status,
			         s2.error);
		}
		support_sleep_ms(100);
	}
	/* the refusal is named: GitHub's 404 */
	if (!strstr(s2.error, "404") && !strstr(s2.error, "Not Found"))
		fail_msg("the abandoned commitment's error: '%s'", s2.error);
	assert_true(proc_wait_output(
	        &p, "Done — Flaky test: https://github.com/acme/widgets/issues/1", WAIT_MS));
	assert_true(
	        proc_wait_output(&p, "Could not create_issue (Nowhere) after 3 attempts", WAIT_MS));
	char *out = proc_stdout(&p);
	assert_null(strstr(out, "Done — Nowhere"));
	free(out);
	agent_stop(&p);

	cJSON *issues = fake_issues(&fk);
	assert_non_null(issues);
	assert_int_equal(cJSON_GetArraySize(issues), 1);
	char key[128];
	snprintf(key, sizeof key, "commitment:%s", ids[0]);
	assert_int_equal(count_key(issues, key), 1);
	snprintf(key, sizeof key, "commitment:%s", ids[1]);
	assert_int_equal(count_key(issues, key), 1);
	const cJSON *is = cJSON_GetArrayItem(issues, 0);
	const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(is, "body"));
	assert_non_null(strstr(body, "The CI fails one run in ten."));
	/* no signature: the agent's name is not in what it wrote */
	assert_null(strstr(body, "Ada"));
	cJSON_Delete(issues);

	/* the decision log tells the story of the abandoned one */
	char *dec = home_read(home, "memory/decisions.jsonl");
	assert_non_null(dec);
	assert_non_null(strstr(dec, "\"rule\":\"abandoned\""));
	free(dec);

	/* a restart does nothing twice */
	agent_start(&p, home, &fk);
	if (!proc_wait_output(&p, "ready and listening", WAIT_MS)) {
		dump(&p);
		fail_msg("the agent did not start again");
	}
	support_sleep_ms(1000);
	agent_stop(&p);
	assert_int_equal(fake_issue_count(&fk), 1);
	fake_stop(&fk);
	home_remove(home);
}

enum kill_point { KILL_BEFORE, KILL_DURING, KILL_AFTER };

static void test_exactly_once_across_sigkill(void **state)
{
	(void)state;
	const char *seed_env = getenv("FULFIL_SEED");
	unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10) : (unsigned)time(NULL);
	fprintf(stderr, "exactly-once test: FULFIL_SEED=%u\n", seed);
	srand(seed);

	char *home;
	struct fake fk;
	setup_home(&home, &fk);
	static char ids[N_COMMITS][64];
	size_t cap = (size_t)N_COMMITS * 512;
	char *all = calloc(1, cap);
	for (int i = 0; i < N_COMMITS; i++) {
		char line[512], params[256];
		snprintf(params, sizeof params,
		         "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Task %d\",\"body\":"
		         "\"Promise number %d.\"}",
		         i, i);
		commit_line(line, sizeof line, ids[i], 100 + i, "create_issue", params);
		strcat(all, line);
	}
	home_write(home, "memory/commitments.jsonl", all);
	free(all);

	int kills[3] = {0};
	for (int round = 0; round < N_KILLS; round++) {
		enum kill_point kp = (enum kill_point)(rand() % 3);
		struct proc p;
		int before = fake_issue_count(&fk);
		if (kp == KILL_DURING)
			fake_control(&fk, "/_ghfake/delay?ms=1500");
		agent_start(&p, home, &fk);
		if (kp == KILL_BEFORE) {
			/* somewhere from start-up to the first request */
			support_sleep_ms(50 + rand() % 700);
		} else {
			/* the fake makes the issue when the request arrives, then (DURING)
			 * holds the answer 1.5 s; AFTER: the answer went out at once
			 * and the journal's done is a few ms away */
			int64_t end = support_now_ms() + 20000;
			while (fake_issue_count(&fk) <= before && support_now_ms() < end &&
			       proc_alive(&p))
				support_sleep_ms(5);
			if (kp == KILL_DURING)
				support_sleep_ms(rand() % 800);
			else
				support_sleep_ms(rand() % 4);
		}
		if (!proc_alive(&p)) {
			dump(&p);
			fail_msg("round %d: the agent died by itself", round);
		}
		proc_signal(&p, SIGKILL);
		int rc = proc_wait(&p, WAIT_MS);
		assert_int_equal(rc, 128 + SIGKILL);
		proc_cleanup(&p);
		if (kp == KILL_DURING)
			fake_control(&fk, "/_ghfake/delay?ms=0");
		kills[kp]++;
		fprintf(stderr, "round %2d: killed %s, %d issue(s) on the fake\n", round,
		        kp == KILL_BEFORE   ? "before a request "
		        : kp == KILL_DURING ? "during a request "
		                            : "after an answer  ",
		        fake_issue_count(&fk));
		/* never a duplicate, at any point */
		cJSON *issues = fake_issues(&fk);
		for (int i = 0; i < N_COMMITS; i++) {
			char key[128];
			snprintf(key, sizeof key, "commitment:%.63s", ids[i]);
			if (count_key(issues, key) > 1)
				fail_msg("round %d: %s made twice", round, key);
		}
		cJSON_Delete(issues);
	}

	/* the last run finishes the work */
	struct proc p;
	agent_start(&p, home, &fk);
	int64_t end = support_now_ms() + 400000;
	int done = 0;
	while ((done = count_status(home, ids, N_COMMITS, "completed")) < N_COMMITS) {
		if (support_now_ms() > end || !proc_alive(&p)) {
			dump(&p);
			fail_msg("%d of %d completed", done, N_COMMITS);
		}
		support_sleep_ms(250);
	}
	agent_stop(&p);

	cJSON *issues = fake_issues(&fk);
	assert_non_null(issues);
	int dup = 0, lost = 0;
	for (int i = 0; i < N_COMMITS; i++) {
		char key[128];
		snprintf(key, sizeof key, "commitment:%.63s", ids[i]);
		int n = count_key(issues, key);
		dup += n > 1 ? n - 1 : 0;
		lost += n == 0;
	}
	fprintf(stderr,
	        "exactly-once: %d kills (%d before, %d during, %d after), %d issues, %d "
	        "duplicates, "
	        "%d lost\n",
	        N_KILLS, kills[KILL_BEFORE], kills[KILL_DURING], kills[KILL_AFTER],
	        cJSON_GetArraySize(issues), dup, lost);
	assert_int_equal(dup, 0);
	assert_int_equal(lost, 0);
	assert_int_equal(cJSON_GetArraySize(issues), N_COMMITS);
	cJSON_Delete(issues);
	assert_int_equal(count_status(home, ids, N_COMMITS, "completed"), N_COMMITS);
	/* A kill during a request leaves an issue made and an intent without
	 * done: GitHub was searched for its key (the start-up reconcile or the
	 * cycle's) before anything else, never sent again (0 duplicates). The
	 * fake's request record shows the searches; the decision log cannot
	 * (what it had not written out died with each SIGKILL). */
	int searches = count_in(home, "ghfake-server.requests", "/search/issues");
	int creates = count_in(home, "ghfake-server.requests", "\"POST\"");
	fprintf(stderr, "reconcile searches: %d, POST requests: %d\n", searches, creates);
	if (searches < kills[KILL_DURING])
		fail_msg("%d searches for a key, fewer than the %d kills during a request",
		         searches, kills[KILL_DURING]);
	fake_stop(&fk);
	home_remove(home);
}

/* A commitment line as the participation engine records it: a promise
 * made in the room (source "space"). */
static void space_line(char *line, size_t cap, char id[64], int n, const char *params)
{
	commit_line(line, cap, id, n, "create_issue", params);
	char *src = strstr(line, "\"source\":\"owner\"");
	assert_non_null(src);
	memcpy(src, "\"source\":\"space\"", strlen("\"source\":\"space\""));
}

/* A promise made in the room (source "space") is announced in the room, in
 * the agent's voice: <home>/voice-phrases.json (written by reflection; here
 * by the test), with the link (§2.8). */
static bool chat_from_ada(const cJSON *m, const void *arg)
{
	(void)arg;
	const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	return n && strcmp(n, "Ada") == 0;
}

static void test_room_announcement_in_voice(void **state)
{
	(void)state;
	struct th_room room;
	char *home;
	struct fake fk;
	setup_room_home(&room, &home, &fk, NULL);
	char *vtext = voice_text_with(VOICE_FULFILLMENT_CREATE_ISSUE,
	                              "Filed it, have a look: {{url}}", 0);
	home_write(home, "voice-phrases.json", vtext);
	free(vtext);
	char id[64], line[1024];
	space_line(line, sizeof line, id, 7,
	           "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Dark mode\","
	           "\"body\":\"The host asked for a dark mode toggle.\"}");
	home_write(home, "memory/commitments.jsonl", line);
	char url[64];
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", room.port);
	const char *env[] = {"AGENT_NAME=Ada",
	                     fk.url_env,
	                     url,
	                     "AGENT_GITHUB_USERNAME=ada-bot",
	                     "AGENT_GITHUB_TOKEN=" TOKEN,
	                     "GA_FULFIL_INTERVAL_MS=300",
	                     "GA_GITHUB_WRITE_SPACING_MS=100",
	                     "GA_GITHUB_SPACING_MS=20",
	                     NULL};
	struct ws_client *obs = th_observe(&room, "Obs");
	struct proc p;
	if (proc_start(&p, home, (const char *const[]){"--no-terminal", NULL}, env) != 0)
		fail_msg("cannot start general-agent in %s", home);
	cJSON *m = th_expect(obs, "chat", chat_from_ada, NULL, 30000);
	if (!m) {
		dump(&p);
		fail_msg("no announcement in the room");
	}
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(m, "content"));
	if (!text ||
	    !strstr(text, "Filed it, have a look: https://github.com/acme/widgets/issues/1"))
		fail_msg("the room heard: %s", text ? text : "(no text)");
	cJSON_Delete(m);
	/* once: a restart does not announce it again */
	agent_stop(&p);
	if (proc_start(&p, home, (const char *const[]){"--no-terminal", NULL}, env) != 0)
		fail_msg("cannot start general-agent again");
	m = th_expect(obs, "chat", chat_from_ada, NULL, 3000);
	if (m) {
		char *j = cJSON_PrintUnformatted(m);
		fail_msg("announced twice: %s", j);
	}
	agent_stop(&p);
	assert_int_equal(fake_issue_count(&fk), 1);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
	fake_stop(&fk);
	home_remove(home);
}

/* Completed while the agent is out of the room (the room is down at its
 * start): the announcement is held, not lost, and said once the agent is
 * in the room again. */
static void test_room_announcement_held_until_back(void **state)
{
	(void)state;
	struct th_room room;
	th_room_start(&room, 0, NULL, false);
	int port = room.port;
	th_room_stop(&room, SIGTERM);
	char *home;
	struct fake fk;
	setup_home(&home, &fk);
	char id[64], line[1024];
	space_line(line, sizeof line, id, 8,
	           "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Keyboard shortcuts\","
	           "\"body\":\"The host asked for keyboard shortcuts.\"}");
	home_write(home, "memory/commitments.jsonl", line);
	char url[64];
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", port);
	const char *env[] = {"AGENT_NAME=Ada",
	                     fk.url_env,
	                     url,
	                     "AGENT_GITHUB_USERNAME=ada-bot",
	                     "AGENT_GITHUB_TOKEN=" TOKEN,
	                     "GA_FULFIL_INTERVAL_MS=300",
	                     "GA_GITHUB_WRITE_SPACING_MS=100",
	                     "GA_GITHUB_SPACING_MS=20",
	                     "GA_SPACE_BACKOFF_MS=300",
	                     "GA_SPACE_DISCOVERY_RETRY_MS=300",
	                     "GA_SPACE_MDNS=0",
	                     NULL};
	struct proc p;
	if (proc_start(&p, home, (const char *const[]){"--no-terminal", NULL}, env) != 0)
		fail_msg("cannot start general-agent in %s", home);
	/* completed with the room down: held */
	if (!proc_wait_output(&p, "held, announced when the agent is back", 3 * WAIT_MS)) {
		dump(&p);
		fail_msg("the announcement was not held with the room down");
	}
	struct status st;
	assert_true(ledger_status(home, id, &st));
	assert_string_equal(st.status, "completed");
	/* the room comes back on its port: the agent rejoins and says it */
	char err[1024];
	if (support_room_restart(&room.sr, err, sizeof err) != 0)
		fail_msg("the room did not come back: %s", err);
	struct ws_client *obs = th_observe(&room, "Obs");
	cJSON *m = th_expect(obs, "chat", chat_from_ada, NULL, 30000);
	if (!m) {
		dump(&p);
		fail_msg("the held announcement never reached the room");
	}
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(m, "content"));
	if (!text || !strstr(text, "https://github.com/acme/widgets/issues/1"))
		fail_msg("the room heard: %s", text ? text : "(no text)");
	cJSON_Delete(m);
	/* said once */
	m = th_expect(obs, "chat", chat_from_ada, NULL, 2000);
	if (m) {
		char *j = cJSON_PrintUnformatted(m);
		fail_msg("announced twice: %s", j);
	}
	assert_true(proc_wait_output(&p, "announced in the room (held", WAIT_MS));
	agent_stop(&p);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
	fake_stop(&fk);
	home_remove(home);
}

/* Starts Ada on the room at port (1.5 s between cycles: she is in the
 * room — a local join takes milliseconds — before the second attempt) and
 * waits until obs sees her there. extra: up to 4 more variables
 * (NULL-terminated), or NULL. */
static void start_ada_in_room(struct proc *p, const char *home, const struct fake *fk, int port,
                              struct ws_client *obs, const char *const *extra)
{
	char url[64];
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", port);
	const char *env[] = {"AGENT_NAME=Ada",
	                     fk->url_env,
	                     url,
	                     "AGENT_GITHUB_USERNAME=ada-bot",
	                     "AGENT_GITHUB_TOKEN=" TOKEN,
	                     "GA_FULFIL_INTERVAL_MS=1500",
	                     "GA_GITHUB_WRITE_SPACING_MS=100",
	                     "GA_GITHUB_SPACING_MS=20",
	                     NULL,
	                     NULL,
	                     NULL,
	                     NULL,
	                     NULL};
	for (size_t i = 0, at = 8; extra && extra[i] && i < 4; i++)
		env[at + i] = extra[i];
	if (proc_start(p, home, (const char *const[]){"--no-terminal", NULL}, env) != 0)
		fail_msg("cannot start general-agent in %s", home);
	cJSON *m = th_expect(obs, "presence", th_pred_has_agent, "Ada", 30000);
	if (!m) {
		dump(p);
		fail_msg("Ada never joined the room");
	}
	cJSON_Delete(m);
}

/* §12.4: worked on in the room, a commitment's claims — the work's two
 * names, "acme/later#Later" and the bare title "Later" a TypeScript agent
 * claims — are released with the attempt's outcome (watched here under the
 * bare title). Attempts made before the agent joined claim nothing
 * (no room to coordinate with), so the success is made to come after the
 * join: "acme/later" answers 404 until the test creates it, once it has
 * seen a refusal there reach the room. */
static void test_room_action_results(void **state)
{
	(void)state;
	struct th_room room;
	char *home;
	struct fake fk;
	setup_room_home(&room, &home, &fk, NULL);
	char later[64], never[64], line[1024], all[2048] = "";
	space_line(line, sizeof line, later, 11,
	           "{\"owner\":\"acme\",\"repo\":\"later\",\"title\":\"Later\"}");
	strcat(all, line);
	space_line(line, sizeof line, never, 12,
	           "{\"owner\":\"acme\",\"repo\":\"missing\",\"title\":\"Nowhere\"}");
	strcat(all, line);
	home_write(home, "memory/commitments.jsonl", all);
	struct ws_client *obs = th_observe(&room, "Obs");
	struct proc p;
	start_ada_in_room(&p, home, &fk, room.port, obs, NULL);
	cJSON *m;
	int never_refused = 0, later_refused = 0;
	bool later_done = false, announced = false;
	struct status st;
	memset(&st, 0, sizeof st);
	int64_t end = support_now_ms() + 60000;
	while (!later_done || !announced || never_refused == 0 ||
	       strcmp(st.status, "abandoned") != 0) {
		if (support_now_ms() > end || !proc_alive(&p)) {
			dump(&p);
			fail_msg("not settled: later refused %d done %d announced %d; missing "
			         "refused "
			         "%d, %s",
			         later_refused, later_done, announced, never_refused, st.status);
		}
		ledger_status(home, never, &st);
		m = th_expect(obs, NULL, th_pred_name, "Ada", 300);
		if (!m)
			continue;
		const char *type = json_string_or(m, "type", "");
		const char *target = cJSON_GetStringValue(cJSON_GetObjectItem(m, "target"));
		const char *error = cJSON_GetStringValue(cJSON_GetObjectItem(m, "error"));
		const char *link = cJSON_GetStringValue(cJSON_GetObjectItem(m, "link"));
		bool success = cJSON_IsTrue(cJSON_GetObjectItem(m, "success"));
		if (strcmp(type, "chat") == 0) {
			const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(m, "content"));
			/* a failure is silent in chat */
			if (!text || strstr(text, "Nowhere") || strstr(text, "404"))
				fail_msg("the room heard: %s", text ? text : "(no text)");
			if (strstr(text, "https://github.com/acme/later/issues/1"))
				announced = true;
		} else if (strcmp(type, "action_result") == 0 && target &&
		           (strcmp(target, "Nowhere") == 0 || strcmp(target, "Later") == 0)) {
			assert_string_equal(json_string_or(m, "action", ""), "create_issue");
			if (!success) {
				if (success || !error ||
				    (!strstr(error, "404") && !strstr(error, "Not Found")) || link)
					fail_msg("a refusal released as: %s",
					         cJSON_PrintUnformatted(m));
				if (strcmp(target, "Nowhere") == 0) {
					never_refused++;
				} else if (later_refused++ == 0) {
					fake_control(&fk, "/_ghfake/repo?owner=acme&name=later");
				}
			} else {
				/* a success: only "later" can have one */
				if (strcmp(target, "Later") != 0 || !link ||
				    strcmp(link, "https://github.com/acme/later/issues/1") != 0 ||
				    error)
					fail_msg("a success released as: %s",
					         cJSON_PrintUnformatted(m));
				later_done = true;
			}
		}
		cJSON_Delete(m);
	}
	assert_true(later_refused >= 1);
	assert_true(never_refused <= 3);
	ledger_status(home, later, &st);
	assert_string_equal(st.status, "completed");
	agent_stop(&p);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
	fake_stop(&fk);
	home_remove(home);
}

/* The fulfilment renews its claim while an attempt takes longer than the
 * room keeps a claim unrenewed (SPACE_CLAIM_TTL_MS 4 s; renewed every 2 s,
 * GA_FULFIL_CLAIM_RENEW_MS; GitHub holds its answer 9 s): Bob, claiming the
 * same work past the TTL, is told "Claim conflict" each time — without the
 * renewal the room would have let the claim lapse and given it to him. As
 * in test_room_action_results, the long attempt comes after the join: the
 * repository exists (and GitHub is slow) only once Ada is in the room. */
static bool claim_on(const cJSON *m, const void *arg)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(m, "target"));
	return th_pred_name(m, "Ada") && t && strcmp(t, (const char *)arg) == 0;
}

static void test_claim_renewed_during_a_long_attempt(void **state)
{
	(void)state;
	struct th_room room;
	char *home;
	struct fake fk;
	const char *room_env[] = {"SPACE_CLAIM_TTL_MS=4000", NULL};
	setup_room_home(&room, &home, &fk, room_env);
	char id[64], line[1024];
	space_line(line, sizeof line, id, 13,
	           "{\"owner\":\"acme\",\"repo\":\"later\",\"title\":\"Slow\"}");
	home_write(home, "memory/commitments.jsonl", line);
	struct ws_client *obs = th_observe(&room, "Obs");
	struct ws_client *bob = th_observe(&room, "Bob");
	struct proc p;
	start_ada_in_room(&p, home, &fk, room.port, obs,
	                  (const char *const[]){"GA_FULFIL_CLAIM_RENEW_MS=2000", NULL});
	cJSON *m;
	/* slow first (control requests never wait), then the repository */
	fake_control(&fk, "/_ghfake/delay?ms=9000");
	fake_control(&fk, "/_ghfake/repo?owner=acme&name=later");
	/* Bob claims the work as a TypeScript agent does: its bare title */
	char probe[256];
	snprintf(probe, sizeof probe,
	         "{\"type\":\"claim\",\"action\":\"create_issue\",\"target\":\"%s\"}", "Slow");
	int64_t claimed_at = 0, end = support_now_ms() + 60000;
	int conflicts_past_ttl = 0;
	bool done = false;
	while (!done) {
		if (support_now_ms() > end || !proc_alive(&p)) {
			dump(&p);
			fail_msg("not completed (%d conflicts past the TTL)", conflicts_past_ttl);
		}
		m = th_expect(obs, NULL, claim_on, "Slow", 200);
		const char *type = m ? json_string_or(m, "type", "") : "";
		if (strcmp(type, "claim") == 0) {
			claimed_at = support_now_ms();
		} else if (strcmp(type, "action_result") == 0) {
			done = cJSON_IsTrue(cJSON_GetObjectItem(m, "success"));
			claimed_at = 0; /* a 404 attempt before the repository: its end */
		}
		cJSON_Delete(m);
		/* past the room's TTL since the claim: only a renewal keeps it */
		if (!done && claimed_at && support_now_ms() - claimed_at > 5000) {
			th_send(bob, probe);
			cJSON *e = th_expect(bob, "error", NULL, NULL, 1500);
			const char *msg = e ? json_string_or(e, "message", "") : "(no answer)";
			if (!strstr(msg, "Claim conflict"))
				fail_msg("Bob's claim %.0f s after Ada's was not refused: %s",
				         (double)(support_now_ms() - claimed_at) / 1000, msg);
			conflicts_past_ttl++;
			cJSON_Delete(e);
		}
	}
	/* the attempt outlived the TTL and the claim held throughout */
	assert_true(conflicts_past_ttl >= 2);
	assert_true(proc_wait_output(&p, "renewed every 2 s", WAIT_MS));
	agent_stop(&p);
	struct status st;
	assert_true(ledger_status(home, id, &st));
	assert_string_equal(st.status, "completed");
	th_observer_free(bob);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
	fake_stop(&fk);
	home_remove(home);
}

/* Ada's model: Layer 2 says ACTION_REQUEST; the decision promises an issue
 * in acme/settings, a repository the GitHub fake does not have (404); the
 * forced action's issue body (§11.3) is a short markdown text. */
#define PROMISE_SCRIPT                                                                             \
	"[{\"match\":{\"no_tools\":true,\"last_user_contains\":\"Message: \"},"                    \
	"\"content\":\"ACTION_REQUEST\"},"                                                         \
	"{\"match\":{\"no_tools\":true,\"last_user_contains\":\"The request:\"},"                  \
	"\"content\":\"## Font size slider\\n\\nA slider for the font size on the settings "       \
	"page.\\n\\n- [ ] the slider changes the size at once\"},"                                 \
	"{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"               \
	"\"space_decision\",\"arguments\":{\"shouldSpeak\":true,\"reason\":\"the request is "      \
	"mine\","                                                                                  \
	"\"message\":\"On it: an issue for the font size slider in acme/settings.\","              \
	"\"commitments\":[{\"type\":\"create_issue\",\"repo\":\"acme/settings\","                  \
	"\"title\":\"Font size slider on the settings page\"}]}}]}]"

static void test_abandoned_space_commitment_reopens_request(void **state)
{
	(void)state;
	char request[256];
	owned_by("Ada", "Obs", "The settings page needs a font size slider", request,
	         sizeof request);
	struct th_room room;
	char *home;
	struct fake fk;
	setup_room_home(&room, &home, &fk, NULL);
	home_write(home, "fake-script.json", PROMISE_SCRIPT);
	char script[1024], err[4096], llm[160];
	snprintf(script, sizeof script, "%s/fake-script.json", home);
	struct support_fake lf;
	if (support_fake_start(&lf, "tests/fakes/llm/llmfake-server", home,
	                       (const char *const[]){"--script", script, NULL}, err,
	                       sizeof err) != 0)
		fail_msg("%s", err);
	snprintf(llm, sizeof llm, "LLM_BASE_URL=%s/v1", lf.url);
	struct ws_client *obs = th_observe(&room, "Obs");
	struct proc p;
	start_ada_in_room(&p, home, &fk, room.port, obs,
	                  (const char *const[]){llm, "LLM_MODEL=fake-model",
	                                        "LLM_API_KEY=test-key-0123456789", NULL});
	th_room_host(&room, request);
	cJSON *m = th_expect(obs, "chat", th_pred_name, "Ada", 30000);
	if (!m) {
		dump(&p);
		fail_msg("Ada never took the request '%s'", request);
	}
	cJSON_Delete(m);
	/* the promise: refused three times, abandoned, the request reopened */
	int64_t end = support_now_ms() + 60000;
	while (count_in(home, "memory/decisions.jsonl", "\"rule\":\"request_reopened\"") < 1) {
		if (support_now_ms() > end || !proc_alive(&p)) {
			dump(&p);
			fail_msg("the abandoned promise did not reopen the request");
		}
		support_sleep_ms(100);
	}
	char *dec = home_read(home, "memory/decisions.jsonl");
	const char *at = strstr(dec, "\"rule\":\"request_reopened\"");
	const char *line = at;
	while (line > dec && line[-1] != '\n')
		line--;
	char *one = strndup(line, strcspn(line, "\n"));
	if (!strstr(one, "\"conversation\":\"commitment:commitment-") || !strstr(one, "open again"))
		fail_msg("the reopening: %s", one);
	free(one);
	free(dec);
	char *ledger = home_read(home, "memory/commitments.jsonl");
	assert_non_null(strstr(ledger, "\"source\":\"space\""));
	assert_non_null(strstr(ledger, "\"status\":\"abandoned\""));
	free(ledger);
	/* escalation resumes: the owner acts on the open request again (its
	 * forced action, §11.3: cycles went on), a second promise enqueued */
	const char *added = "\"source\":\"space\",\"status\":\"pending\"";
	assert_int_equal(count_in(home, "memory/commitments.jsonl", added), 1);
	end = support_now_ms() + 30000;
	while (count_in(home, "memory/commitments.jsonl", added) < 2) {
		if (support_now_ms() > end || !proc_alive(&p)) {
			dump(&p);
			fail_msg("the owner did not act on the reopened request");
		}
		support_sleep_ms(100);
	}
	agent_stop(&p);
	support_fake_stop(&lf);
	th_observer_free(obs);
	th_room_stop(&room, SIGTERM);
	fake_stop(&fk);
	home_remove(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_issue_comment_and_abandoned),
	        cmocka_unit_test(test_room_announcement_in_voice),
	        cmocka_unit_test(test_room_announcement_held_until_back),
	        cmocka_unit_test(test_room_action_results),
	        cmocka_unit_test(test_claim_renewed_during_a_long_attempt),
	        cmocka_unit_test(test_abandoned_space_commitment_reopens_request),
	        cmocka_unit_test(test_exactly_once_across_sigkill),
	};
	/* FULFIL_ONLY=<pattern>: run the matching tests only */
	if (getenv("FULFIL_ONLY"))
		cmocka_set_test_filter(getenv("FULFIL_ONLY"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
