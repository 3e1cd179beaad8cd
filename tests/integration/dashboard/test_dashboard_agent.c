/*
 * The dashboard of the REAL agent in headless Chromium (issue 14 item 6),
 * end to end: a real `agent-space` room, the LLM fake as a process
 * (llmfake-server, scripted with space_decision answers), the real
 * `general-agent` joined to the room with DASHBOARD_ADDR=127.0.0.1:0, its
 * page open in Chromium (cdp.h), and a raw WebSocket observer in the room
 * (tests/integration/space-client/harness.h) that sees what the agent
 * really says — something that is not the code under test.
 *
 *   - the host asks Ada a question by name: the message's decision row is
 *     on the page within a second of the host's line (3 s in a sanitizer
 *     build; the time is printed), and Ada's answer reaches the room;
 *   - Pause clicked on the page: the daemon says it is paused, the next
 *     host question is on the page blocked at the gate with rule "paused",
 *     and no chat from Ada reaches the room until a whole participation
 *     tick (5 s ± 40 %) and more after her cooldown from the first answer
 *     has ended (her room settings make it the shortest, 3 s), and her
 *     model is not asked about it;
 *   - Resume clicked: Ada answers a third question in the room.
 * Screenshots go to <build>/artifacts/dashboard/agent-*.png. Without a
 * Chromium (GA_CHROMIUM or `chromium` on PATH) the test is skipped
 * (exit 77) before anything starts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka needs the three above first */
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cdp.h"
#include "support_fake.h"
#include "tests/integration/space-client/harness.h"
#include "testutil.h"

/* Issue 14: on the page within a second (3 s under ASan+UBSan on a loaded
 * machine), measured from the host's line to the row on the page. */
#ifdef GA_TEST_SANITIZED
#define APPEAR_WITHIN_MS 3000
#else
#define APPEAR_WITHIN_MS 1000
#endif
/* An answer waits for a participation tick (5 s ± 40 %), the typing pause
 * and the room's spacing; generous. */
#define ANSWER_MS 30000
/* Her room settings (memory/space-config.json): the shortest cooldown
 * after speaking the file allows and a short typing pause, so that a pause
 * that did not hold would show as a chat soon after her cooldown (the
 * defaults, 10–20 s, would hide it). */
#define COOLDOWN_MS   3000
#define TYPING_MAX_MS 1000
#define SPACE_CONFIG                                                                               \
	"{\"cooldownMinMs\":3000,\"cooldownMaxMs\":3000,\"replyDelayMinMs\":500,"                  \
	"\"replyDelayMaxMs\":1000}"
/* The longest participation tick (5 s + 40 %), and some slack. */
#define TICK_MAX_MS 7000
#define SLACK_MS    2000

#define Q1 "Ada, what is the capital of France?"
#define A1 "Paris is the capital of France."
#define Q2 "Ada, which river runs through Rome?"
#define A2 "The Tiber runs through Rome."
#define Q3 "Ada, how many legs does a spider have?"
#define A3 "A spider has eight legs."

/* Tried in order; each question's words first appear in the prompt of its
 * own tick (earlier questions stay in the history, so the later ones come
 * first). A2 should never be said: Q2 arrives while she is paused. */
#define DECIDE(key, msg)                                                                           \
	"{\"match\":{\"tool_choice\":\"space_decision\",\"last_user_contains\":\"" key "\"},"      \
	"\"tool_calls\":[{\"name\":\"space_decision\",\"arguments\":{\"shouldSpeak\":true,"        \
	"\"reason\":\"asked\",\"message\":\"" msg "\"}}]}"
#define NOTHING                                                                                    \
	"{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"               \
	"\"space_decision\",\"arguments\":{\"shouldSpeak\":false,\"reason\":\"nothing\"}}]}"
#define FIRST  DECIDE("spider", A3) "," DECIDE("river", A2)
#define SECOND DECIDE("capital of France", A1) "," NOTHING
static const char SCRIPT[] = "[" FIRST "," SECOND "]";

static struct cdp B;
static struct th_room R;
static struct th_agent A;
static struct support_fake F;
static struct ws_client *Obs;
static char artifacts[512];

static bool pred_from_ada(const cJSON *m, const void *arg)
{
	(void)arg;
	const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
	return n && strcmp(n, "Ada") == 0;
}

static void fail_dump(const char *what)
{
	th_fail_dump(&A, &R);
	char *log = home_read(A.home, "memory/decisions.jsonl");
	fprintf(stderr, "---- decisions.jsonl ----\n%s\n", log ? log : "(none)");
	free(log);
	fail_msg("%s", what);
}

/* Model calls so far: lines of the fake's record. */
static int model_calls(void)
{
	char *rec = tu_read(F.record, NULL);
	int n = 0;
	for (const char *c = rec; c && *c; c++)
		n += *c == '\n';
	free(rec);
	return n;
}

static int64_t answered_at; /* when the last answer reached the observer */

/* The next chat from Ada in the room, which must say `want`. */
static void expect_answer(const char *want)
{
	cJSON *m = th_expect(Obs, "chat", pred_from_ada, NULL, ANSWER_MS);
	if (!m)
		fail_dump("Ada never answered in the room");
	const char *got = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "content"));
	if (!got || strcmp(got, want) != 0)
		fail_msg("Ada said '%s', expected '%s'", got ? got : "(nothing)", want);
	cJSON_Delete(m);
	answered_at = th_now_ms();
}

/* Waits until the page has a decision row about the host's message whose
 * text holds `words` with this stage, verdict and rule (NULL: any), on
 * platform space; the milliseconds it took. The message is found by its
 * event row: the reason begins with the author's kind ("host host (chain
 * 0…): <text>"; Ada's own answer, which may repeat the words, is an event
 * by "self Ada"). */
static long wait_row(const char *words, const char *stage, const char *verdict, const char *rule,
                     int timeout_ms)
{
	char js[2048];
	snprintf(js, sizeof js,
	         "(() => { const rows = [...document.querySelectorAll('#decisions tbody tr')];"
	         " const t = (r, i) => r.cells[i].textContent;"
	         " const e = rows.find(r => t(r, 4) === 'event' && t(r, 7).startsWith('host ') &&"
	         " t(r, 7).includes('%s'));"
	         " if (!e || !e.dataset.messageId) return false;"
	         " return rows.some(r => r.dataset.messageId === e.dataset.messageId &&"
	         " t(r, 1) === 'space' && %s%s%s && %s%s%s && %s%s%s); })()",
	         words, stage ? "t(r, 4) === '" : "true", stage ? stage : "", stage ? "'" : "",
	         verdict ? "t(r, 5) === '" : "true", verdict ? verdict : "", verdict ? "'" : "",
	         rule ? "t(r, 6) === '" : "true", rule ? rule : "", rule ? "'" : "");
	return cdp_wait_true(&B, js, timeout_ms);
}

static int teardown(void **state)
{
	(void)state;
	cdp_stop(&B);
	if (Obs)
		th_observer_free(Obs);
	Obs = NULL;
	support_fake_stop(&F);
	th_cleanup_all(); /* the agent and the room if still running, the home */
	return 0;
}

static void test_agent_dashboard_in_chromium(void **state)
{
	(void)state;
	cdp_artifacts_dir("dashboard", artifacts, sizeof artifacts);

	th_room_start(&R, 0, NULL, false);
	char home[256], url[128], llm[128], err[4096];
	th_home_new(home, sizeof home);
	home_write(home, "fake-script.json", SCRIPT);
	char memory[300];
	snprintf(memory, sizeof memory, "%s/memory", home);
	if (mkdir(memory, 0700) != 0)
		fail_msg("mkdir %s: %s", memory, strerror(errno));
	tu_write(memory, "space-config.json", SPACE_CONFIG);
	char script[400];
	snprintf(script, sizeof script, "%s/fake-script.json", home);
	if (support_fake_start(&F, "tests/fakes/llm/llmfake-server", home,
	                       (const char *const[]){"--script", script, NULL}, err,
	                       sizeof err) != 0)
		fail_msg("%s", err);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", R.port);
	snprintf(llm, sizeof llm, "LLM_BASE_URL=%s/v1", F.url);
	th_agent_start(&A, home, NULL,
	               (const char *const[]){"AGENT_NAME=Ada", url, llm, "LLM_MODEL=fake-model",
	                                     "LLM_API_KEY=test-key-0123456789",
	                                     "DASHBOARD_ADDR=127.0.0.1:0", NULL});
	if (!th_agent_wait_log(&A, "dashboard listening", TH_WAIT_MS))
		fail_dump("the agent's dashboard did not start");
	if (!th_agent_wait_log(&A, "joined the room", TH_WAIT_MS))
		fail_dump("the agent did not join the room");
	char *log = th_agent_log(&A);
	const char *u = strstr(log, "url=http://127.0.0.1:");
	int port = u ? atoi(u + strlen("url=http://127.0.0.1:")) : 0;
	free(log);
	if (port <= 0)
		fail_dump("the log does not say the dashboard's port");
	Obs = th_observe(&R, "Obs");

	if (cdp_start(&B) != 0)
		fail_msg("cannot start chromium");
	char page[96];
	snprintf(page, sizeof page, "http://127.0.0.1:%d/", port);
	cdp_open_page(&B, page);
	cdp_wait_true(&B,
	              "document.getElementById('live-state').textContent === 'live' && "
	              "document.getElementById('agent-name').textContent === 'Ada'",
	              CDP_WAIT_MS);

	/* 1. the host asks; the decision is on the page within a second */
	long t0 = cdp_mono_ms();
	th_room_host(&R, Q1);
	long polled = wait_row("what is the capital of France", "event", "pass", NULL, 10000);
	long took = cdp_mono_ms() - t0;
	printf("the host's message on the page %ld ms after the host's line (polled %ld ms)\n",
	       took, polled);
	if (took > APPEAR_WITHIN_MS)
		fail_msg("the decision took %ld ms to appear (issue 14: within %d ms)", took,
		         APPEAR_WITHIN_MS);
	cdp_screenshot(&B, artifacts, "agent-decision.png");
	/* the answer reaches the room, and the page shows it leaving */
	expect_answer(A1);
	wait_row("what is the capital of France", "outbound", "sent", "sent", 10000);
	cdp_screenshot(&B, artifacts, "agent-answered.png");

	/* 2. Pause from the page: the next question is stopped at the gate,
	 * and nothing from Ada reaches the room */
	cdp_wait_true(&B,
	              "document.getElementById('pause-btn').textContent === 'Pause' && "
	              "!document.getElementById('pause-btn').disabled",
	              10000);
	cdp_click(&B, "#pause-btn");
	if (!th_agent_wait_log(&A, "Ada: paused from the dashboard", TH_WAIT_MS))
		fail_dump("the Pause button did not pause the agent");
	cdp_wait_true(&B,
	              "document.getElementById('run-state').textContent === 'PAUSED' && "
	              "document.getElementById('pause-btn').textContent === 'Resume'",
	              10000);
	int calls = model_calls();
	int64_t asked = th_now_ms();
	th_room_host(&R, Q2);
	wait_row("which river runs through Rome", "gate", "block", "paused", 10000);
	cdp_screenshot(&B, artifacts, "agent-paused.png");
	/* silent past the end of her cooldown, a whole tick and the typing */
	int64_t from = answered_at + COOLDOWN_MS > asked ? answered_at + COOLDOWN_MS : asked;
	int64_t left = from + TICK_MAX_MS + TYPING_MAX_MS + SLACK_MS - th_now_ms();
	cJSON *m = th_expect(Obs, "chat", pred_from_ada, NULL, left > 0 ? (int)left : 0);
	if (m) {
		char *t = cJSON_PrintUnformatted(m);
		fprintf(stderr, "a paused agent spoke: %s\n", t);
		free(t);
		cJSON_Delete(m);
		fail_dump("Ada spoke in the room while paused from the dashboard");
	}
	printf("no chat from Ada for %lld ms after the question while paused\n",
	       (long long)(th_now_ms() - asked));
	/* stopped at the gate: the question never reached her model either */
	if (model_calls() != calls)
		fail_dump("a paused agent asked its model about the question");

	/* 3. Resume from the page: Ada answers again */
	cdp_click(&B, "#pause-btn");
	if (!th_agent_wait_log(&A, "Ada: resumed from the dashboard", TH_WAIT_MS))
		fail_dump("the Resume button did not resume the agent");
	cdp_wait_true(&B, "document.getElementById('run-state').textContent === 'running'", 10000);
	th_room_host(&R, Q3);
	wait_row("how many legs does a spider have", "event", "pass", NULL, 10000);
	expect_answer(A3);
	cdp_screenshot(&B, artifacts, "agent-resumed.png");

	/* every child stops cleanly */
	th_agent_signal(&A, SIGTERM);
	int rc = th_agent_wait_exit(&A, TH_WAIT_MS);
	if (rc != 0)
		fail_dump("the agent did not exit cleanly");
	assert_int_equal(support_fake_stop(&F), 0);
	assert_int_equal(th_room_stop(&R, SIGTERM), 0);
}

int main(void)
{
	if (!cdp_chromium_present())
		return 77;
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_agent_dashboard_in_chromium, teardown),
	};
	return cmocka_run_group_tests_name("the agent's dashboard in chromium", tests, NULL, NULL);
}
